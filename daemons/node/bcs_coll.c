/* BCS-MPI collectives the node daemons run on MPI_COMM_WORLD: barriers
 * (counted in every DESC) and small allreduces (each node folds its ranks'
 * values and sends the partial to every node of the job). */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/futex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include "chan.h"
#include "chan_ckpt.h"
#include "dtype.h"
#include "match.h"
#include "ckpt.h"
#include "layout.h"
#include "nd.h"
#include "bcs_int.h"

/* Barrier k of MPI_COMM_WORLD ends once every node of the job reported k. */
void bcs_barriers(struct bjob *j, uint32_t self)
{
	if (!j->job || !j->map || !j->nnodes_job)
		return;
	j->bar_seen[self] = bcs_bar_local(j);
	uint32_t all = UINT32_MAX;
	for (uint32_t k = 0; k < j->nnodes_job; k++)
		if (j->bar_seen[j->nodes[k]] < all)
			all = j->bar_seen[j->nodes[k]];
	for (; j->bar_done < all && j->bar_done < bcs_bar_local(j); j->bar_done++)
		for (uint32_t lr = 0; lr < j->nlocal; lr++)
			bcs_complete(j, lr, j->bar_req[lr], -1, -1, 0, 0);
}

static uint32_t red_local(const struct bjob *j)
{
	uint32_t m = UINT32_MAX;
	for (uint32_t lr = 0; lr < j->nlocal; lr++)
		if (j->red_posted[lr] < m)
			m = j->red_posted[lr];
	return m;
}

uint8_t *bcs_red_slot(struct bjob *j, int pos, uint32_t seq)
{
	return j->red_part + ((size_t)pos * 2 + seq % 2) * BCS_RED_MAX;
}

/* Allreduce number red_done+1: this node's partial out once every local
 * rank entered it, the result in once every node's partial is here. */
void bcs_reduces(struct nd *nd, struct bjob *j)
{
	if (!j->job || !j->map || !j->nnodes_job || !j->red_part)
		return;
	uint32_t k = j->red_done + 1;
	int self = bcs_node_pos(j, nd->bcs->self);
	if (self < 0 || red_local(j) < k)
		return;
	if (j->red_part_seq[self * 2 + k % 2] != k) {
		/* fold the local values in rank order: x0 op (x1 op ...) */
		uint8_t *acc = bcs_red_slot(j, self, k);
		memcpy(acc, j->red_val + (j->nlocal - 1) * BCS_RED_MAX, j->red_len);
		for (int lr = (int)j->nlocal - 2; lr >= 0; lr--)
			bcs_op_apply(j->red_op, j->red_basic, j->red_val + (size_t)lr * BCS_RED_MAX,
				     acc, j->red_count);
		j->red_part_seq[self * 2 + k % 2] = k;
		j->red_part_len[self * 2 + k % 2] = j->red_len;
		for (uint32_t n = 0; n < j->nnodes_job; n++)
			if ((int)n != self)
				bcs_send(nd, j->nodes[n], M_RED, j->id, k, j->red_len, acc, j->red_len,
					 NULL, 0);
	}
	for (uint32_t n = 0; n < j->nnodes_job; n++)
		if (j->red_part_seq[n * 2 + k % 2] != k)
			return; /* a node's partial is still on its way */
	uint8_t res[BCS_RED_MAX];
	int err = 0;
	memcpy(res, bcs_red_slot(j, (int)j->nnodes_job - 1, k), j->red_len);
	for (int n = (int)j->nnodes_job - 2; n >= 0; n--) {
		if (j->red_part_len[n * 2 + k % 2] != j->red_len)
			err = BCS_EFAULT; /* the ranks disagree on the count or type */
		bcs_op_apply(j->red_op, j->red_basic, bcs_red_slot(j, n, k), res, j->red_count);
	}
	for (uint32_t lr = 0; lr < j->nlocal; lr++) {
		int e = err ? err : bcs_copy_to(bcs_pid_of(j, lr), j->red_addr[lr], res, j->red_len) < 0
					    ? BCS_EFAULT : 0;
		bcs_complete(j, lr, j->red_req[lr], -1, -1, e, j->red_len);
	}
	j->red_done = k;
}

/* Into its slot; the job has been launched here. */
static void store_partial(struct bjob *j, uint32_t from, uint32_t seq, const uint8_t *val,
			  uint32_t len)
{
	int pos = bcs_node_pos(j, from);
	if (pos < 0)
		return;
	memcpy(bcs_red_slot(j, pos, seq), val, len);
	j->red_part_seq[pos * 2 + seq % 2] = seq;
	j->red_part_len[pos * 2 + seq % 2] = len;
}

void bcs_red_partial(struct nd *nd, struct bjob *j, uint32_t from, uint32_t seq,
		     const uint8_t *val, uint32_t len)
{
	if (!j->red_part) {
		struct early_red *e = malloc(sizeof(*e));
		if (!e)
			abort(); /* a lost partial would hang the job's allreduce */
		*e = (struct early_red){.next = j->early_red, .from = from, .seq = seq, .len = len};
		memcpy(e->val, val, len);
		j->early_red = e;
		return;
	}
	store_partial(j, from, seq, val, len);
	bcs_reduces(nd, j);
}

void bcs_red_take_early(struct bjob *j)
{
	/* oldest first: the list holds the newest at its head */
	struct early_red *rev = NULL;
	while (j->early_red) {
		struct early_red *e = j->early_red;
		j->early_red = e->next;
		e->next = rev;
		rev = e;
	}
	while (rev) {
		struct early_red *e = rev;
		rev = e->next;
		store_partial(j, e->from, e->seq, e->val, e->len);
		free(e);
	}
}

void bcs_red_free_early(struct bjob *j)
{
	while (j->early_red) {
		struct early_red *e = j->early_red;
		j->early_red = e->next;
		free(e);
	}
}
