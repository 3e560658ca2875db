/* Checkpoint records: what `storm checkpoints` lists and a restart needs.
 * They live in a list behind ckpt_rec_*; each is also written through to
 * the database (ckpt_persist: the checkpoints row with the relaunch data, a
 * packed storm.rec.Checkpoint holding the job's spec, and
 * checkpoint_images: where each rank's image and copy are), and read back
 * when the MM starts (ckpt_load), so the checkpoints of an earlier MM
 * restart too. */
#include "ckptrec.pb-c.h"
#include "db.h"
#include "mm.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void rec_free(struct mm_ckpt *r)
{
	jobspec_free(r->spec);
	for (int i = 0; i < r->nfiles; i++)
		free(r->fnames[i]);
	free(r->nodes);
	free(r->node_done);
	free(r->node_captured);
	free(r->rank_node);
	free(r->rank_copy);
	free(r->extra);
	free(r->marks);
	free(r);
}

struct mm_ckpt *ckpt_rec_find(struct mm *mm, uint64_t id)
{
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
}

void ckpt_rec_mark(struct mm *mm, const Storm__Cl__BcsStream *b)
{
	struct mm_ckpt *r = ckpt_rec_find(mm, b->checkpoint);
	if (!r || r->job != b->job || b->rank >= r->nranks || b->n_mark != CKPT_MARK_N)
		return;
	if (!r->marks && !(r->marks = calloc((size_t)r->nranks * CKPT_MARK_N, sizeof(uint64_t))))
		return;
	memcpy(r->marks + (size_t)b->rank * CKPT_MARK_N, b->mark, CKPT_MARK_N * sizeof(uint64_t));
	if (r->complete || r->failed)
		ckpt_persist(mm, r);
}

struct mm_ckpt *ckpt_rec_latest_complete(struct mm *mm, uint64_t job)
{
	struct mm_ckpt *best = NULL;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
		if (r->job == job && r->complete && (!best || r->epoch > best->epoch))
			best = r;
	return best;
}

void ckpt_rec_delete(struct mm *mm, struct mm_ckpt *r)
{
	for (struct mm_ckpt **pp = &mm->ckpts; *pp; pp = &(*pp)->next)
		if (*pp == r) {
			*pp = r->next;
			rec_free(r);
			return;
		}
}

/* Slurm's block distribution, as the Launch: the node position of a rank. */
uint32_t ckpt_pos_of_rank(uint32_t nranks, uint32_t nnodes, uint32_t rank)
{
	uint32_t base = nranks / nnodes, extra = nranks % nnodes, first = 0;
	for (uint32_t k = 0; k < nnodes; k++) {
		uint32_t count = base + (k < extra);
		if (rank < first + count)
			return k;
		first += count;
	}
	return nnodes - 1;
}

struct mm_ckpt *ckpt_rec_new(struct mm *mm, const struct job *j)
{
	struct mm_ckpt *r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->id = ++mm->next_ckpt_id;
	r->job = j->id;
	r->spec = jobspec_dup(j->spec);
	snprintf(r->nodelist, sizeof(r->nodelist), "%s", j->nodelist);
	r->nnodes = j->nnodes;
	r->nranks = j->nranks;
	r->nodes = malloc(sizeof(int) * j->nnodes);
	r->node_done = calloc(j->nnodes, sizeof(bool));
	r->node_captured = calloc(j->nnodes, sizeof(bool));
	r->rank_node = malloc(sizeof(int) * (j->nranks ? j->nranks : 1));
	r->rank_copy = malloc(sizeof(int) * (j->nranks ? j->nranks : 1));
	r->nfiles = j->spec->restore_checkpoint ? 0 : j->nfds;
	if (j->spec->restore_checkpoint) { /* a restart's files are those of what it restarted */
		const struct mm_ckpt *o = ckpt_rec_find(mm, j->spec->restore_checkpoint);
		for (int i = 0; o && i < o->nfiles; i++) {
			r->fnames[i] = strdup(o->fnames[i]);
			r->fsizes[i] = o->fsizes[i];
			r->fmodes[i] = o->fmodes[i];
			r->nfiles = i + 1;
		}
	} else {
		for (int i = 0; i < j->nfds; i++) {
			r->fnames[i] = strdup(j->fnames[i]);
			r->fsizes[i] = j->fsizes[i];
			r->fmodes[i] = j->fmodes[i];
		}
	}
	if (!r->nodes || !r->node_done || !r->node_captured || !r->spec || !r->rank_node ||
	    !r->rank_copy) {
		rec_free(r);
		return NULL;
	}
	memcpy(r->nodes, j->nodes, sizeof(int) * j->nnodes);
	for (uint32_t k = 0; k < j->nranks; k++) {
		r->rank_node[k] = j->nodes[ckpt_pos_of_rank(j->nranks, j->nnodes, k)];
		r->rank_copy[k] = -1;
	}
	r->time = clock_wall_s();
	r->t_start = r->time;
	struct mm_ckpt **tail = &mm->ckpts;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	return r;
}

void ckpt_persist(struct mm *mm, struct mm_ckpt *r)
{
	if (!mm->db)
		return;
	Storm__Rec__Checkpoint c = STORM__REC__CHECKPOINT__INIT;
	c.id = r->id;
	c.job = r->job;
	c.epoch = r->epoch;
	c.spec = r->spec;
	c.nranks = r->nranks;
	uint32_t nodes[r->nnodes ? r->nnodes : 1], extra[r->nextra ? r->nextra : 1];
	for (uint32_t k = 0; k < r->nnodes; k++)
		nodes[k] = (uint32_t)r->nodes[k];
	for (uint32_t k = 0; k < r->nextra; k++)
		extra[k] = (uint32_t)r->extra[k];
	c.nodes = nodes;
	c.n_nodes = r->nnodes;
	c.extra = extra;
	c.n_extra = r->nextra;
	c.nodelist = r->nodelist;
	c.bytes = r->bytes;
	c.time = r->time;
	c.seconds = r->seconds;
	c.frozen = r->frozen;
	c.reason = r->reason;
	c.periodic = r->periodic;
	c.bcs_marks = r->marks;
	c.n_bcs_marks = r->marks ? (size_t)r->nranks * CKPT_MARK_N : 0;
	Storm__Rec__RecFile files[FRAME_MAX_FDS], *fp[FRAME_MAX_FDS];
	for (int i = 0; i < r->nfiles; i++) {
		storm__rec__rec_file__init(&files[i]);
		files[i].name = r->fnames[i];
		files[i].size = r->fsizes[i];
		files[i].mode = r->fmodes[i];
		fp[i] = &files[i];
	}
	c.files = fp;
	c.n_files = (size_t)r->nfiles;
	size_t len = storm__rec__checkpoint__get_packed_size(&c);
	uint8_t *buf = malloc(len ? len : 1);
	struct db_ckpt_image *img = calloc(r->nranks ? r->nranks : 1, sizeof(*img));
	if (!buf || !img) {
		slog("checkpoint %" PRIu64 ": cannot record it in the database: out of memory",
		       r->id);
		free(buf);
		free(img);
		return;
	}
	storm__rec__checkpoint__pack(&c, buf);
	for (uint32_t k = 0; k < r->nranks; k++) {
		img[k].rank = k;
		img[k].node = mm->conf.nodes[r->rank_node[k]];
		img[k].copy = r->rank_copy[k] >= 0 ? mm->conf.nodes[r->rank_copy[k]] : NULL;
	}
	struct db_ckpt d = {.job = r->job, .epoch = r->epoch, .nodes = r->nodelist,
			    .size = r->bytes, .complete = r->complete, .data = buf, .data_len = len};
	if (db_ckpt_save(mm->db, &d, img, r->nranks, &r->db_id) < 0)
		slog("checkpoint %" PRIu64 ": cannot record it in the database: %s", r->id,
		       db_error(mm->db));
	free(buf);
	free(img);
}

struct load {
	struct mm *mm;
	struct mm_ckpt *r;
	int loaded, skipped;
};

static int load_image(void *arg, const struct db_ckpt_image *i)
{
	struct load *ld = arg;
	struct mm_ckpt *r = ld->r;
	if (i->rank >= r->nranks)
		return 0;
	int a = i->node ? conf_node_index(&ld->mm->conf, i->node) : -1;
	int b = i->copy ? conf_node_index(&ld->mm->conf, i->copy) : -1;
	if (a >= 0)
		r->rank_node[i->rank] = a;
	r->rank_copy[i->rank] = b;
	return 0;
}

static int load_one(void *arg, const struct db_ckpt *d)
{
	struct load *ld = arg;
	struct mm *mm = ld->mm;
	Storm__Rec__Checkpoint *c =
		d->data ? storm__rec__checkpoint__unpack(NULL, d->data_len, d->data) : NULL;
	bool fits = c && c->spec && c->n_nodes > 0 && c->nranks >= c->n_nodes &&
		    (int)c->n_files <= FRAME_MAX_FDS;
	for (size_t k = 0; fits && k < c->n_nodes; k++)
		fits = (int)c->nodes[k] < mm->conf.nnodes;
	for (size_t k = 0; fits && k < c->n_extra; k++)
		fits = (int)c->extra[k] < mm->conf.nnodes;
	if (!fits) { /* an older MM's row, or nodes this configuration lacks */
		if (c)
			storm__rec__checkpoint__free_unpacked(c, NULL);
		ld->skipped++;
		return 0;
	}
	struct mm_ckpt *r = calloc(1, sizeof(*r));
	if (!r)
		goto oom;
	r->id = c->id;
	r->db_id = d->id;
	r->job = c->job;
	r->epoch = c->epoch;
	r->spec = jobspec_dup(c->spec);
	snprintf(r->nodelist, sizeof(r->nodelist), "%s", c->nodelist);
	snprintf(r->reason, sizeof(r->reason), "%s", c->reason);
	r->nnodes = (uint32_t)c->n_nodes;
	r->nranks = c->nranks;
	r->bytes = c->bytes;
	r->complete = d->complete;
	r->time = c->time;
	r->seconds = c->seconds;
	r->frozen = c->frozen;
	r->thawed = true;
	r->periodic = c->periodic;
	r->nodes = malloc(sizeof(int) * r->nnodes);
	r->node_done = calloc(r->nnodes, sizeof(bool));
	r->node_captured = calloc(r->nnodes, sizeof(bool));
	r->rank_node = malloc(sizeof(int) * r->nranks);
	r->rank_copy = malloc(sizeof(int) * r->nranks);
	r->extra = malloc(sizeof(int) * (c->n_extra ? c->n_extra : 1));
	if (!r->spec || !r->nodes || !r->node_done || !r->node_captured || !r->rank_node ||
	    !r->rank_copy || !r->extra) {
		rec_free(r);
		goto oom;
	}
	for (uint32_t k = 0; k < r->nnodes; k++)
		r->nodes[k] = (int)c->nodes[k];
	if (c->n_bcs_marks == (size_t)r->nranks * CKPT_MARK_N && c->n_bcs_marks &&
	    (r->marks = malloc(c->n_bcs_marks * sizeof(uint64_t))))
		memcpy(r->marks, c->bcs_marks, c->n_bcs_marks * sizeof(uint64_t));
	r->nextra = (uint32_t)c->n_extra;
	for (uint32_t k = 0; k < r->nextra; k++)
		r->extra[k] = (int)c->extra[k];
	for (size_t i = 0; i < c->n_files; i++) {
		if (!(r->fnames[i] = strdup(c->files[i]->name))) {
			rec_free(r);
			goto oom;
		}
		r->fsizes[i] = c->files[i]->size;
		r->fmodes[i] = c->files[i]->mode;
		r->nfiles = (int)i + 1;
	}
	for (uint32_t k = 0; k < r->nranks; k++) {
		r->rank_node[k] = r->nodes[ckpt_pos_of_rank(r->nranks, r->nnodes, k)];
		r->rank_copy[k] = -1;
	}
	ld->r = r;
	if (db_ckpt_images(mm->db, d->id, load_image, ld) < 0)
		slog("checkpoint %" PRIu64 ": cannot read where its images are: %s", r->id,
		       db_error(mm->db));
	if (!r->complete && !r->reason[0])
		snprintf(r->reason, sizeof(r->reason), "the machine manager restarted during it");
	storm__rec__checkpoint__free_unpacked(c, NULL);
	struct mm_ckpt **tail = &mm->ckpts;
	while (*tail)
		tail = &(*tail)->next;
	*tail = r;
	if (r->id > mm->next_ckpt_id)
		mm->next_ckpt_id = r->id;
	/* a job restored running takes its next checkpoints after these */
	struct job *j = job_find(mm, r->job);
	if (j && j->ckpt_epoch < r->epoch)
		j->ckpt_epoch = r->epoch;
	ld->loaded++;
	return 0;
oom:
	storm__rec__checkpoint__free_unpacked(c, NULL);
	return -ENOMEM;
}

int ckpt_load(struct mm *mm)
{
	struct load ld = {.mm = mm};
	int rc = db_ckpt_list(mm->db, 0, load_one, &ld);
	if (rc < 0) {
		slog("error: cannot read the checkpoints: %s",
		       rc == -1 ? db_error(mm->db) : strerror(-rc));
		return -1;
	}
	if (ld.loaded || ld.skipped)
		slog("%d checkpoints restored from the database%s", ld.loaded,
		       ld.skipped ? " (older ones without relaunch data are history only)" : "");
	return 0;
}

/* where: 2 * r->nranks pointers for the image locations (NULL: left out) */
void ckpt_rec_info(struct mm *mm, const struct mm_ckpt *r, Storm__Ctl__CheckpointInfo *i,
		      char **where)
{
	storm__ctl__checkpoint_info__init(i);
	for (uint32_t k = 0; where && k < r->nranks; k++) {
		where[k] = mm->conf.nodes[r->rank_node[k]];
		where[r->nranks + k] = r->rank_copy[k] >= 0 ? mm->conf.nodes[r->rank_copy[k]] : "";
	}
	if (where) {
		i->image_nodes = where;
		i->n_image_nodes = r->nranks;
		i->copy_nodes = where + r->nranks;
		i->n_copy_nodes = r->nranks;
	}
	i->id = r->id;
	i->job = r->job;
	i->epoch = r->epoch;
	i->name = r->spec->name;
	i->user = r->spec->user;
	i->uid = r->spec->uid;
	i->nodelist = (char *)r->nodelist;
	i->nodes = r->nnodes;
	i->ranks = r->nranks;
	i->bytes = r->bytes;
	i->complete = r->complete;
	i->time = r->time;
	i->seconds = r->seconds;
	i->reason = (char *)r->reason;
	i->frozen = r->frozen;
	i->bcs_marks = r->marks;
	i->n_bcs_marks = r->marks ? (size_t)r->nranks * CKPT_MARK_N : 0;
}

void ckpt_reply_info(struct mm *mm, struct client *c, const struct mm_ckpt *r)
{
	Storm__Ctl__CheckpointInfo info;
	char **where = calloc(2 * (size_t)r->nranks + 1, sizeof(char *));
	ckpt_rec_info(mm, r, &info, where);
	reply_send(mm, c, STORM__CTL__REPLY__BODY_CHECKPOINTED, &info);
	free(where);
}

void ckpt_rec_dir(char *buf, size_t len, uint64_t job, uint32_t epoch)
{
	if (epoch)
		snprintf(buf, len, "ckpt/%" PRIu64 "/%u", job, epoch);
	else
		snprintf(buf, len, "ckpt/%" PRIu64 "/files", job);
}
