/* Spanning trees over node sets, for multicast and combining. Pure.
 *
 * The tree of (root, set, fanout) orders its members as root first, then the
 * other members of set ascending by id; member i has parent (i-1)/fanout and
 * children i*fanout+1 .. i*fanout+fanout. Every node computes the same tree
 * from the same arguments, so only root and set travel in a message. */
#ifndef STORM_TREE_H
#define STORM_TREE_H

#include "nodeset.h"

#define SN_MAX_FANOUT 64

struct sn_tree_pos {
	uint32_t index;     /* position in the tree order, 0 = root */
	uint32_t parent;    /* node id of the parent, UINT32_MAX at the root */
	uint32_t nchildren;
	uint32_t children[SN_MAX_FANOUT]; /* node ids */
};

/* Members: root plus set. Fills pos for node self; -ENOENT if self is not a
 * member, -EINVAL for fanout 0 or > SN_MAX_FANOUT. */
int sn_tree_position(uint32_t root, const struct sn_nodeset *set, unsigned fanout,
		     uint32_t self, struct sn_tree_pos *pos);
/* Adds to out every member of the subtree rooted at node (node included). */
int sn_tree_subtree(uint32_t root, const struct sn_nodeset *set, unsigned fanout,
		    uint32_t node, struct sn_nodeset *out);
/* Depth of the tree (0 for a lone root). */
unsigned sn_tree_depth(uint32_t members, unsigned fanout);

#endif
