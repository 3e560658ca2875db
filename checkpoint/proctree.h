/* The pure parts of an image of a process tree (section tree): what process
 * arrangement can be made again, and the checks of a decoded tree before it
 * is restored. No I/O: unit-tested and fuzzed. */
#ifndef STORM_CKPT_PROCTREE_H
#define STORM_CKPT_PROCTREE_H

#include <stddef.h>
#include <sys/types.h>

#include "ckpt.pb-c.h"

/* Why a descendant (pid, in group pgid and session sid, whose parent is in
 * group parent_pgid) cannot be made again as it was, or NULL if it can: it
 * must be in the session of the tree's first process (root_sid), and in its
 * parent's group (it is forked into it) or lead its own (setpgid(0, 0)). */
const char *ckpt_tree_refusal(pid_t pid, pid_t pgid, pid_t sid, pid_t parent_pgid, pid_t root_sid);

/* Checks a decoded tree: 1 to CKPT_MAX_PROCS processes, process 0 without a
 * parent, every other after its parent, pids positive and distinct, each
 * descendant's group and session restorable. Returns 0 or -EINVAL with a
 * reason ("section tree: ..."). */
int ckpt_tree_check(const Storm__Ckpt__Tree *t, char *err, size_t errlen);

#endif
