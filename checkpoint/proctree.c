/* The pure parts of an image of a process tree (proctree.h). */
#include "proctree.h"

#include <errno.h>
#include <stdio.h>

#include "image.h"

const char *ckpt_tree_refusal(pid_t pid, pid_t pgid, pid_t sid, pid_t parent_pgid, pid_t root_sid)
{
	if (sid != root_sid)
		return "it is in another session, which cannot be made again";
	if (pgid != parent_pgid && pgid != pid)
		return "it is in a process group that is neither its parent's nor its own, which "
		       "cannot be made again";
	return NULL;
}

int ckpt_tree_check(const Storm__Ckpt__Tree *t, char *err, size_t errlen)
{
	if (t->n_procs < 1 || t->n_procs > CKPT_MAX_PROCS) {
		snprintf(err, errlen, "section tree: %zu processes (want 1 to %u)", t->n_procs,
			 CKPT_MAX_PROCS);
		return -EINVAL;
	}
	for (size_t i = 0; i < t->n_procs; i++) {
		const Storm__Ckpt__Process *p = t->procs[i];
		const char *why = NULL;
		if (p->pid <= 0)
			why = "its pid is not positive";
		else if (i == 0 ? p->parent != -1 : p->parent < 0 || (size_t)p->parent >= i)
			why = i == 0 ? "the first process has a parent" : "its parent does not come before it";
		for (size_t j = 0; !why && j < i; j++)
			if (t->procs[j]->pid == p->pid)
				why = "its pid is another process's too";
		if (!why && i > 0)
			why = ckpt_tree_refusal(p->pid, p->pgid, p->sid, t->procs[p->parent]->pgid,
						t->procs[0]->sid);
		if (why) {
			snprintf(err, errlen, "section tree: process %zu (pid %d): %s", i, (int)p->pid, why);
			return -EINVAL;
		}
	}
	return 0;
}
