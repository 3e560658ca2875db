/* Spanning trees over node sets (tree.h). Pure. */
#include "tree.h"

#include <errno.h>

/* Member at tree index i: index 0 is the root, then set \ {root} ascending. */
static uint32_t member_at(uint32_t root, const struct sn_nodeset *set, uint32_t i)
{
	if (i == 0)
		return root;
	uint32_t n = sn_set_next(set, 0);
	for (uint32_t k = 1;; n = sn_set_next(set, n + 1)) {
		if (n == UINT32_MAX)
			return UINT32_MAX;
		if (n == root)
			continue;
		if (k++ == i)
			return n;
	}
}

static uint32_t member_count(uint32_t root, const struct sn_nodeset *set)
{
	return sn_set_count(set) + (sn_set_has(set, root) ? 0 : 1);
}

static int index_of(uint32_t root, const struct sn_nodeset *set, uint32_t node,
		    uint32_t *index)
{
	if (node == root) {
		*index = 0;
		return 0;
	}
	if (!sn_set_has(set, node))
		return -ENOENT;
	/* members below node, excluding the root, then +1 for the root slot */
	uint32_t below = 0;
	for (uint32_t w = 0; w < node / 64; w++)
		if (set->w[w])
			below += (uint32_t)__builtin_popcountll(set->w[w]);
	if (node % 64)
		below += (uint32_t)__builtin_popcountll(set->w[node / 64] &
							((1ull << (node % 64)) - 1));
	if (root < node && sn_set_has(set, root))
		below--;
	*index = below + 1;
	return 0;
}

int sn_tree_position(uint32_t root, const struct sn_nodeset *set, unsigned fanout,
		     uint32_t self, struct sn_tree_pos *pos)
{
	if (fanout == 0 || fanout > SN_MAX_FANOUT)
		return -EINVAL;
	uint32_t idx;
	int rc = index_of(root, set, self, &idx);
	if (rc)
		return rc;
	uint32_t members = member_count(root, set);
	pos->index = idx;
	pos->parent = idx == 0 ? UINT32_MAX : member_at(root, set, (idx - 1) / fanout);
	pos->nchildren = 0;
	uint64_t first = (uint64_t)idx * fanout + 1;
	for (uint64_t c = first; c < first + fanout && c < members; c++)
		pos->children[pos->nchildren++] = member_at(root, set, (uint32_t)c);
	return 0;
}

static void add_subtree(uint32_t root, const struct sn_nodeset *set, unsigned fanout,
			uint32_t members, uint32_t idx, struct sn_nodeset *out)
{
	sn_set_add(out, member_at(root, set, idx));
	uint64_t first = (uint64_t)idx * fanout + 1;
	for (uint64_t c = first; c < first + fanout && c < members; c++)
		add_subtree(root, set, fanout, members, (uint32_t)c, out);
}

int sn_tree_subtree(uint32_t root, const struct sn_nodeset *set, unsigned fanout,
		    uint32_t node, struct sn_nodeset *out)
{
	if (fanout == 0 || fanout > SN_MAX_FANOUT)
		return -EINVAL;
	uint32_t idx;
	int rc = index_of(root, set, node, &idx);
	if (rc)
		return rc;
	add_subtree(root, set, fanout, member_count(root, set), idx, out);
	return 0;
}

unsigned sn_tree_depth(uint32_t members, unsigned fanout)
{
	unsigned depth = 0;
	uint64_t reach = 1, level = 1;
	if (fanout == 0)
		return 0;
	while (reach < members) {
		level *= fanout;
		reach += level;
		depth++;
	}
	return depth;
}
