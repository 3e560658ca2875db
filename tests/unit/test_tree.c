#include <CUnit/CUnit.h>
#include <errno.h>

#include "suites.h"
#include "tree.h"

/* Every member but the root has exactly one parent, which lists it as a
 * child; walking parents reaches the root within depth steps. */
static void check_tree(uint32_t root, const struct sn_nodeset *set, unsigned fanout)
{
	struct sn_nodeset members = *set, seen_children;
	sn_set_add(&members, root);
	sn_set_clear(&seen_children);
	uint32_t count = sn_set_count(&members);
	unsigned depth = sn_tree_depth(count, fanout);
	for (uint32_t m = sn_set_next(&members, 0); m != UINT32_MAX;
	     m = sn_set_next(&members, m + 1)) {
		struct sn_tree_pos pos;
		CU_ASSERT_EQUAL_FATAL(sn_tree_position(root, set, fanout, m, &pos), 0);
		CU_ASSERT(pos.nchildren <= fanout);
		for (uint32_t i = 0; i < pos.nchildren; i++) {
			CU_ASSERT(sn_set_has(&members, pos.children[i]));
			CU_ASSERT_FALSE(sn_set_has(&seen_children, pos.children[i]));
			sn_set_add(&seen_children, pos.children[i]);
			struct sn_tree_pos cp;
			sn_tree_position(root, set, fanout, pos.children[i], &cp);
			CU_ASSERT_EQUAL(cp.parent, m);
		}
		if (m == root) {
			CU_ASSERT_EQUAL(pos.parent, UINT32_MAX);
			CU_ASSERT_EQUAL(pos.index, 0);
		}
		uint32_t hops = 0, at = m;
		while (at != root && hops <= depth) {
			struct sn_tree_pos p;
			sn_tree_position(root, set, fanout, at, &p);
			at = p.parent;
			hops++;
		}
		CU_ASSERT(at == root && hops <= depth);
	}
	/* every member except the root is somebody's child */
	struct sn_nodeset rest = members;
	sn_set_del(&rest, root);
	CU_ASSERT(sn_set_equal(&rest, &seen_children));
	struct sn_nodeset all;
	sn_set_clear(&all);
	CU_ASSERT_EQUAL(sn_tree_subtree(root, set, fanout, root, &all), 0);
	CU_ASSERT(sn_set_equal(&all, &members));
}

static void test_shapes(void)
{
	unsigned fanouts[] = {1, 2, 3, 4, 8, 64};
	for (size_t f = 0; f < sizeof(fanouts) / sizeof(*fanouts); f++) {
		struct sn_nodeset s;
		sn_set_clear(&s);
		sn_set_range(&s, 0, 63);
		check_tree(0, &s, fanouts[f]);
		check_tree(17, &s, fanouts[f]);
		check_tree(100, &s, fanouts[f]); /* root outside the set */
		sn_set_clear(&s);
		for (uint32_t i = 3; i < 1000; i += 37)
			sn_set_add(&s, i);
		check_tree(3, &s, fanouts[f]);
		check_tree(999, &s, fanouts[f]);
		sn_set_clear(&s);
		check_tree(5, &s, fanouts[f]); /* lone root */
	}
}

static void test_known_layout(void)
{
	/* root 0, members 1..6, fan-out 2: 0->{1,2}, 1->{3,4}, 2->{5,6} */
	struct sn_nodeset s;
	struct sn_tree_pos p;
	sn_set_clear(&s);
	sn_set_range(&s, 0, 6);
	sn_tree_position(0, &s, 2, 0, &p);
	CU_ASSERT(p.nchildren == 2 && p.children[0] == 1 && p.children[1] == 2);
	sn_tree_position(0, &s, 2, 2, &p);
	CU_ASSERT(p.parent == 0 && p.nchildren == 2 && p.children[0] == 5 && p.children[1] == 6);
	/* root 4 moves to the front; the others keep their order: 4,0,1,2,3,5,6 */
	sn_tree_position(4, &s, 2, 4, &p);
	CU_ASSERT(p.children[0] == 0 && p.children[1] == 1);
	sn_tree_position(4, &s, 2, 6, &p);
	CU_ASSERT_EQUAL(p.parent, 1);
	struct sn_nodeset sub;
	sn_set_clear(&sub);
	sn_tree_subtree(0, &s, 2, 1, &sub);
	CU_ASSERT_EQUAL(sn_set_count(&sub), 3);
	CU_ASSERT(sn_set_has(&sub, 1) && sn_set_has(&sub, 3) && sn_set_has(&sub, 4));
}

static void test_errors(void)
{
	struct sn_nodeset s;
	struct sn_tree_pos p;
	sn_set_clear(&s);
	sn_set_add(&s, 1);
	CU_ASSERT_EQUAL(sn_tree_position(0, &s, 2, 7, &p), -ENOENT);
	CU_ASSERT_EQUAL(sn_tree_position(0, &s, 0, 1, &p), -EINVAL);
	CU_ASSERT_EQUAL(sn_tree_position(0, &s, SN_MAX_FANOUT + 1, 1, &p), -EINVAL);
	CU_ASSERT_EQUAL(sn_tree_depth(1, 4), 0);
	CU_ASSERT_EQUAL(sn_tree_depth(5, 4), 1);
	CU_ASSERT_EQUAL(sn_tree_depth(6, 4), 2);
	CU_ASSERT_EQUAL(sn_tree_depth(32, 2), 5);
}

void add_tree_suite(void)
{
	CU_pSuite s = CU_add_suite("tree", NULL, NULL);
	CU_add_test(s, "every shape is a spanning tree", test_shapes);
	CU_add_test(s, "known layout", test_known_layout);
	CU_add_test(s, "errors and depth", test_errors);
}
