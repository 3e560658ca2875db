/* Program and file multicast: chunks go into two file buffers in
 * the global memory of the job's nodes by XFER-AND-SIGNAL; a buffer is
 * reused only after COMPARE-AND-WRITE finds that every node wrote out the
 * chunk it held (layout.h). One transfer at a time. */
#include "mm.h"

#include <stddef.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct transfer {
	struct job *job;
	int file;              /* index into job->fds */
	uint64_t off;          /* in that file */
	uint64_t first_seq, last_seq;
	bool busy[2];          /* XFER of the chunk in buffer i not yet confirmed */
	bool all_sent;
	/* flow control: the last chunk of each buffer every node wrote out, and
	 * the COMPARE-AND-WRITE that asks about one (its answer: written_answer) */
	uint64_t written[2];
	bool asking;
	uint64_t asked;
	uint64_t done, total;
	double last_progress;
	uint8_t *stage[2];
	bool held; /* by the test point transfer_hold, said once */
};

int transfer_start(struct mm *mm, struct job *j)
{
	struct transfer *x = calloc(1, sizeof(*x));
	if (!x)
		return -1;
	for (int b = 0; b < 2; b++)
		if (!(x->stage[b] = malloc(GM_FILE_BUF_SIZE))) {
			free(x->stage[0]);
			free(x);
			return -1;
		}
	x->job = j;
	x->first_seq = mm->file_seq + 1;
	for (int i = 0; i < j->nfds; i++)
		x->total += j->fsizes[i];
	x->last_progress = clock_wall_s();
	mm->xfer = x;
	mm->transfer_hooks->progress(mm, j, 0, x->total);
	transfer_step(mm);
	return 0;
}

/* Ends the transfer. A chunk still in flight reads its stage buffer, and
 * its event and the nodes' file buffers are the next transfer's too: unless
 * wait (the MM stopping), the transfer stays, without its job, until the
 * fabric is done with them (transfer_step), rather than hold the loop (and
 * the strobe) for as long as a dead node takes to time out. */
static void transfer_free(struct mm *mm, bool wait)
{
	struct transfer *x = mm->xfer;
	if (!x)
		return;
	x->job = NULL;
	x->asking = false; /* its answer is ignored */
	for (int b = 0; b < 2; b++)
		if (x->busy[b]) {
			if (!wait)
				return;
			sn_test_event(mm->sn, EV_FILE_SENT0 + (unsigned)b, -1, NULL);
			x->busy[b] = false;
		}
	free(x->stage[0]);
	free(x->stage[1]);
	free(x);
	mm->xfer = NULL;
}

struct job *transfer_job(const struct mm *mm) { return mm->xfer ? mm->xfer->job : NULL; }

void transfer_abort(struct mm *mm, struct job *j)
{
	if (mm->xfer && (!j || mm->xfer->job == j))
		transfer_free(mm, !j);
}

static void fail(struct mm *mm, const char *what, const struct sn_nodeset *failed)
{
	struct job *j = mm->xfer->job;
	char names[512] = "";
	size_t w = 0;
	if (failed)
		for (uint32_t f = sn_set_next(failed, 0); f != UINT32_MAX && w + 70 < sizeof(names);
		     f = sn_set_next(failed, f + 1))
			if (f >= 1 && (int)f <= mm->conf.nnodes)
				w += (size_t)snprintf(names + w, sizeof(names) - w, "%s%s", w ? "," : "",
						      mm->conf.nodes[f - 1]);
	char why[1024];
	if (names[0])
		snprintf(why, sizeof(why), "%s: node%s %s did not confirm (%s)", what,
			 strchr(names, ',') ? "s" : "", names, sn_strerror(mm->sn));
	else
		snprintf(why, sizeof(why), "%s: %s", what, sn_strerror(mm->sn));
	transfer_free(mm, false);
	mm->transfer_hooks->failed(mm, j, why);
}

static void written_answer(struct mm *mm, uint64_t first_seq, uint64_t seq,
			   const struct sn_caw_result *res)
{
	struct transfer *x = mm->xfer;
	if (!x || !x->job || x->first_seq != first_seq || !x->asking || x->asked != seq)
		return; /* a transfer that ended */
	x->asking = false;
	if (res->status < 0) {
		fail(mm, "program transfer", &res->failed);
		return;
	}
	if (res->status == 1 && x->written[seq % 2] < seq)
		x->written[seq % 2] = seq;
	/* a no is asked again by the next transfer_step */
}

/* 1: every node of the job has written chunk seq; 0: not known yet (a
 * COMPARE-AND-WRITE asks, and transfer_step runs again once it answered);
 * -1: failed */
static int written(struct mm *mm, uint64_t seq)
{
	struct transfer *x = mm->xfer;
	if (x->written[seq % 2] >= seq)
		return 1;
	if (x->asking)
		return 0;
	if (mm_query(mm, &x->job->set, GM_VAR_FILE_DONE(seq % 2), SN_GE, seq, written_answer,
		     x->first_seq, seq) < 0) {
		fail(mm, "program transfer", NULL);
		return -1;
	}
	x->asking = true;
	x->asked = seq;
	return 0;
}

static int send_chunk(struct mm *mm)
{
	struct transfer *x = mm->xfer;
	struct job *j = x->job;
	uint64_t seq = mm->file_seq + 1;
	int b = (int)(seq % 2);
	if (x->busy[b])
		return 0;
	/* test point transfer_hold=K: K chunks go out, the rest never do, so a
	 * test can kill the MM while a transfer is surely under way */
	uint64_t hold = fault_value(&mm->fault, "transfer_hold");
	if (hold && seq >= x->first_seq + hold) {
		if (!x->held)
			slog("test hook: job %llu's transfer held after %llu chunks",
			     (unsigned long long)j->id, (unsigned long long)hold);
		x->held = true;
		return 0;
	}
	if (seq >= x->first_seq + 2) {
		int w = written(mm, seq - 2);
		if (w <= 0)
			return w;
	}
	uint64_t size = j->fsizes[x->file];
	uint64_t len = size - x->off;
	if (len > GM_FILE_DATA_MAX)
		len = GM_FILE_DATA_MAX;
	struct file_chunk *h = (struct file_chunk *)x->stage[b];
	memset(h, 0, sizeof(*h));
	h->job = j->id;
	h->seq = seq;
	h->offset = x->off;
	h->file = (uint32_t)x->file;
	h->len = (uint32_t)len;
	h->size = size;
	h->mode = j->fmodes[x->file];
	h->uid = j->spec->uid;
	h->gid = j->spec->gid;
	snprintf(h->name, sizeof(h->name), "%s", j->fnames[x->file]);
	uint8_t *data = x->stage[b] + sizeof(*h);
	for (uint64_t got = 0; got < len;) {
		ssize_t n = pread(j->fds[x->file], data + got, len - got, (off_t)(x->off + got));
		if (n <= 0) {
			char what[300];
			snprintf(what, sizeof(what), "cannot read %s (%s)", j->fnames[x->file],
				 n == 0 ? "it shrank after submission" : strerror(errno));
			fail(mm, what, NULL);
			return -1;
		}
		got += (uint64_t)n;
	}
	x->off += len;
	if (x->off == size)
		h->flags |= FILE_LAST;
	/* a node runs what lands here as the user: it must come from us */
	memcpy(h->nonce, mm->file_nonce, sizeof(h->nonce));
	gm_file_tag(mm->key, h->nonce, seq, h, offsetof(struct file_chunk, tag), data, len, h->tag);
	int rc = sn_xfer(mm->sn, &j->set, GM_FILE_BUF_AT(b), x->stage[b], sizeof(*h) + len,
			 EV_FILE_SENT0 + (unsigned)b, EV_FILE(b), 0);
	if (rc < 0) {
		fail(mm, "program transfer", NULL);
		return -1;
	}
	x->busy[b] = true;
	mm->file_seq = seq;
	x->done += len;
	if (x->off == size) {
		x->file++;
		x->off = 0;
		if (x->file == j->nfds) {
			x->all_sent = true;
			x->last_seq = seq;
		}
	}
	return 1;
}

void transfer_step(struct mm *mm)
{
	struct transfer *x = mm->xfer;
	if (!x)
		return;
	for (int b = 0; b < 2; b++) {
		if (!x->busy[b])
			continue;
		struct sn_nodeset failed;
		int rc = sn_event_take(mm->sn, EV_FILE_SENT0 + (unsigned)b, &failed);
		if (rc != 0)
			x->busy[b] = false;
		if (rc < 0 && x->job) {
			fail(mm, "program transfer", &failed);
			return;
		}
	}
	if (!x->job) { /* ended, and its chunks were in flight */
		if (!x->busy[0] && !x->busy[1]) {
			transfer_free(mm, true);
			mm->transfer_hooks->drained(mm);
		}
		return;
	}
	while (!x->all_sent) {
		int rc = send_chunk(mm);
		if (rc < 0)
			return; /* x is gone */
		if (rc == 0)
			break;
	}
	double now = clock_wall_s();
	if (now - x->last_progress >= 0.25) {
		x->last_progress = now;
		mm->transfer_hooks->progress(mm, x->job, x->done, x->total);
	}
	if (!x->all_sent || x->busy[0] || x->busy[1])
		return;
	int w = written(mm, x->last_seq);
	if (w > 0 && x->last_seq > x->first_seq) /* the other buffer's last chunk */
		w = written(mm, x->last_seq - 1);
	if (w <= 0)
		return;
	struct job *j = x->job;
	if (now - j->t_start >= 1.0)
		mm->transfer_hooks->progress(mm, j, x->total, x->total);
	transfer_free(mm, true); /* nothing in flight */
	mm->transfer_hooks->done(mm, j);
}
