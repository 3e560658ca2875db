/* Checkpoints: the records, the coordinated protocol, restart
 * and recovery from a lost node.
 *
 * Protocol: the MM takes the job out of the strobes' run list (it is
 * stopped at the next slice boundary, as for a row that does not run) and
 * sends a Checkpoint command to its nodes; each node daemon saves its ranks
 * into its own state directory (ckpt/JOB/EPOCH/rank<R>.img) in a helper
 * process, stores the checkpoint id in GM_VAR_CKPT(slot) and reports
 * CHECKPOINTED. When every node did, one COMPARE-AND-WRITE (EQ id over the
 * job's nodes) confirms it; the record is complete and the job is back in
 * the run list. A node that fails or dies leaves the record incomplete, and
 * an incomplete checkpoint is never restarted.
 *
 * With checkpoint_copies, each node's images also go to its buddy (the next
 * node of the job), node to node (daemons/node/ckpt_copy.c); a node reports
 * CHECKPOINTED only once its copies are on disk. A restart first has every
 * new node receive, from an up node that holds them, the images and files
 * it lacks (staging), then launches; the MM never reads an image.
 *
 * Records live in a list behind ckpt_rec_*; each is also written through to
 * the database (ckpt_persist: the checkpoints row with the relaunch data, a
 * packed storm.rec.Checkpoint, and checkpoint_images: where each rank's
 * image and copy are), and read back when the MM starts (ckpt_load), so the
 * checkpoints of an earlier MM restart too. */
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

/* ---- records */

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
	free(r);
}

struct mm_ckpt *ckpt_rec_find(struct mm *mm, uint64_t id)
{
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
		if (r->id == id)
			return r;
	return NULL;
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
static uint32_t pos_of_rank(uint32_t nranks, uint32_t nnodes, uint32_t rank)
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

static struct mm_ckpt *rec_new(struct mm *mm, const struct job *j)
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
		r->rank_node[k] = j->nodes[pos_of_rank(j->nranks, j->nnodes, k)];
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

/* ---- the database: each record with what a restart needs (packed
 * storm.rec.Checkpoint) and where its images are, so a restarted MM can
 * restart it */

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
		r->rank_node[k] = r->nodes[pos_of_rank(r->nranks, r->nnodes, k)];
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
static void fill_info(struct mm *mm, const struct mm_ckpt *r, Storm__Ctl__CheckpointInfo *i,
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
}

static void reply_info(struct mm *mm, struct client *c, const struct mm_ckpt *r)
{
	Storm__Ctl__CheckpointInfo info;
	char **where = calloc(2 * (size_t)r->nranks + 1, sizeof(char *));
	fill_info(mm, r, &info, where);
	reply_send(mm, c, STORM__CTL__REPLY__BODY_CHECKPOINTED, &info);
	free(where);
}

/* ---- the protocol */

static void rel_dir(char *buf, size_t len, uint64_t job, uint32_t epoch)
{
	if (epoch)
		snprintf(buf, len, "ckpt/%" PRIu64 "/%u", job, epoch);
	else
		snprintf(buf, len, "ckpt/%" PRIu64 "/files", job);
}

int ckpt_begin(struct mm *mm, struct job *j, struct client *c, char *why, size_t len)
{
	if (j->state != STORM__CTL__JOB_STATE__RUNNING) {
		snprintf(why, len, "job %" PRIu64 " is not running (%s)", j->id,
			 protobuf_c_enum_descriptor_get_value(&storm__ctl__job_state__descriptor,
							      j->state)->name);
		return -1;
	}
	if (j->ckpt) {
		snprintf(why, len, "a checkpoint of job %" PRIu64 " is under way", j->id);
		return -1;
	}
	for (uint32_t k = 0; k < j->nnodes; k++)
		if (mm->nodes[j->nodes[k]].state != STORM__CTL__NODE_STATE__UP) {
			snprintf(why, len, "node %s of job %" PRIu64 " is down",
				 mm->conf.nodes[j->nodes[k]], j->id);
			return -1;
		}
	struct mm_ckpt *r = rec_new(mm, j);
	if (!r) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	r->epoch = ++j->ckpt_epoch;
	char dir[96];
	rel_dir(dir, sizeof(dir), j->id, r->epoch);
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = j->id;
	ck.id = r->id;
	ck.slot = j->slot;
	ck.dir = dir;
	/* buddy copies: each node's images also go to the next node of the
	 * job, so that the checkpoint survives the loss of one node */
	bool copies = mm->conf.checkpoint_copies && j->nnodes >= 2;
	Storm__Cl__CkptCopy *cps = copies ? calloc(j->nnodes, sizeof(*cps)) : NULL;
	Storm__Cl__CkptCopy **cpp = copies ? calloc(j->nnodes, sizeof(*cpp)) : NULL;
	if (copies && (!cps || !cpp)) {
		free(cps);
		free(cpp);
		snprintf(why, len, "out of memory");
		ckpt_rec_delete(mm, r);
		j->ckpt_epoch--;
		return -1;
	}
	for (uint32_t k = 0; copies && k < j->nnodes; k++) {
		storm__cl__ckpt_copy__init(&cps[k]);
		cps[k].from = (uint32_t)j->nodes[k];
		cps[k].to = (uint32_t)j->nodes[(k + 1) % j->nnodes];
		cps[k].name = ""; /* its images */
		cpp[k] = &cps[k];
	}
	for (uint32_t k = 0; copies && k < r->nranks; k++)
		r->rank_copy[k] = j->nodes[(pos_of_rank(r->nranks, r->nnodes, k) + 1) % j->nnodes];
	ck.copies = cpp;
	ck.n_copies = copies ? j->nnodes : 0;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	int rc = cmd_queue(mm, &cmd, j->nodes, j->nnodes);
	free(cps);
	free(cpp);
	if (rc < 0) {
		snprintf(why, len, "cannot queue the checkpoint command: %s", strerror(-rc));
		ckpt_rec_delete(mm, r);
		j->ckpt_epoch--;
		return -1;
	}
	/* out of the run list from the next strobe on: the nodes stop it */
	r->periodic = !c;
	j->ckpt = r;
	ckpt_persist(mm, r);
	j->ckpt_client = c;
	slog("job %" PRIu64 ": checkpoint %" PRIu64 " (epoch %u) started", j->id, r->id,
	       r->epoch);
	return 0;
}

#define KEEP_PERIODIC 2 /* complete periodic checkpoints kept per job */

static void remove_images(struct mm *mm, const struct mm_ckpt *r)
{
	char dir[96];
	rel_dir(dir, sizeof(dir), r->job, r->epoch);
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = r->job;
	ck.id = r->id;
	ck.dir = dir;
	ck.remove = true;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	cmd_queue(mm, &cmd, r->nodes, r->nnodes);
	if (r->nextra) /* what restarts staged elsewhere */
		cmd_queue(mm, &cmd, r->extra, r->nextra);
}

/* Gone for good (deleted, pruned): out of the list and the database. */
static void rec_forget(struct mm *mm, struct mm_ckpt *r)
{
	if (mm->db && r->db_id && db_ckpt_delete(mm->db, r->db_id) < 0)
		slog("checkpoint %" PRIu64 ": cannot delete it from the database: %s", r->id,
		       db_error(mm->db));
	ckpt_rec_delete(mm, r);
}

/* Periodic checkpoints would fill the nodes' disks: once one completes,
 * the job's older periodic ones go, but for the last KEEP_PERIODIC complete.
 * Those taken by storm checkpoint stay until deleted. */
static void prune(struct mm *mm, uint64_t job)
{
	for (;;) {
		struct mm_ckpt *victim = NULL, *newest = NULL;
		for (struct mm_ckpt *r = mm->ckpts; r; r = r->next)
			if (r->job == job && r->periodic)
				newest = r;
		for (struct mm_ckpt *r = newest ? mm->ckpts : NULL; r; r = r->next) {
			if (r->job != job || !r->periodic)
				continue;
			unsigned newer = 0;
			for (struct mm_ckpt *q = r->next; q; q = q->next)
				newer += q->job == job && q->periodic && q->complete;
			if (newer >= KEEP_PERIODIC) {
				victim = r;
				break;
			}
		}
		if (!victim)
			return;
		slog("job %" PRIu64 ": checkpoint %" PRIu64 " (epoch %u) pruned", job, victim->id,
		       victim->epoch);
		remove_images(mm, victim);
		rec_forget(mm, victim);
	}
}

static void ckpt_finish(struct mm *mm, struct job *j, bool ok, const char *why)
{
	struct mm_ckpt *r = j->ckpt;
	r->complete = ok;
	r->seconds = clock_wall_s() - r->t_start;
	if (!r->thawed) {
		r->thawed = true;
		r->frozen = r->seconds;
	}
	if (!ok && !r->reason[0])
		snprintf(r->reason, sizeof(r->reason), "%s", why);
	j->ckpt = NULL;
	if (j->spec->checkpoint_interval)
		j->ckpt_next = clock_wall_s() + j->spec->checkpoint_interval;
	slog("job %" PRIu64 ": %s checkpoint %" PRIu64 " (epoch %u): %" PRIu64 " bytes in %.3f s, "
	       "frozen %.3f s%s%s",
	       j->id, ok ? "complete" : "INCOMPLETE", r->id, r->epoch, r->bytes, r->seconds,
	       r->frozen, ok ? "" : ": ", ok ? "" : r->reason);
	ckpt_persist(mm, r);
	if (ok && r->periodic)
		prune(mm, j->id);
	struct client *c = j->ckpt_client;
	j->ckpt_client = NULL;
	if (!c)
		return;
	if (ok)
		reply_info(mm, c, r);
	else
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
			    "checkpoint %" PRIu64 " of job %" PRIu64 " is incomplete: %s", r->id,
			    j->id, r->reason);
	client_finish(mm, c);
}

static void ckpt_on_note(struct mm *mm, int node, const Storm__Cl__JobNote *n)
{
	struct job *j = job_find(mm, n->job);
	struct mm_ckpt *r = j ? j->ckpt : NULL;
	char *rest = NULL;
	uint64_t id = strtoull(n->message, &rest, 10);
	if (!r || r->id != id)
		return; /* a checkpoint that already ended */
	while (rest && *rest == ' ')
		rest++;
	int k = -1;
	for (uint32_t i = 0; i < r->nnodes; i++)
		if (r->nodes[i] == node)
			k = (int)i;
	if (k < 0)
		return;
	if (n->kind == STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED) {
		snprintf(r->reason, sizeof(r->reason), "%s", rest ? rest : "a node failed");
		ckpt_finish(mm, j, false, r->reason);
		return;
	}
	/* captured (CHECKPOINTED implies it): when every node's ranks are in
	 * their images the job runs on while the nodes fsync them */
	if (!r->node_captured[k]) {
		r->node_captured[k] = true;
		if (++r->nodes_captured == r->nnodes && !r->thawed) {
			r->thawed = true;
			r->frozen = clock_wall_s() - r->t_start;
			slog("job %" PRIu64 ": checkpoint %" PRIu64 " captured on every node; "
			       "frozen %.3f s",
			       j->id, r->id, r->frozen);
		}
	}
	if (n->kind == STORM__CL__JOB_NOTE__KIND__CHECKPOINT_CAPTURED)
		return;
	if (!r->node_done[k]) {
		r->node_done[k] = true;
		r->nodes_done++;
		r->bytes += strtoull(rest ? rest : "0", NULL, 10);
	}
	if (r->nodes_done < r->nnodes)
		return;
	/* every node said so: one COMPARE-AND-WRITE checks they all hold it */
	struct sn_nodeset failed;
	int rc = sn_caw(mm->sn, &j->set, GM_VAR_CKPT(j->slot), SN_EQ, r->id, false, 0, 0, &failed);
	if (rc == 1)
		ckpt_finish(mm, j, true, NULL);
	else
		ckpt_finish(mm, j, false,
			    rc == 0 ? "the confirmation found a node without it"
				    : "the confirmation did not reach every node");
}

static void stage_check(struct mm *mm);

void ckpt_tick(struct mm *mm)
{
	double now = clock_wall_s();
	stage_check(mm);
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (!j->spec->checkpoint_interval || j->ckpt || j->state != STORM__CTL__JOB_STATE__RUNNING ||
		    now < j->ckpt_next)
			continue;
		char why[256];
		if (ckpt_begin(mm, j, NULL, why, sizeof(why)) < 0) {
			slog("job %" PRIu64 ": periodic checkpoint not taken: %s", j->id, why);
			j->ckpt_next = now + j->spec->checkpoint_interval;
		}
	}
}

static void ckpt_job_ended(struct mm *mm, struct job *j)
{
	free(j->stage); /* ended while its images moved: late notes are ignored */
	j->stage = NULL;
	if (j->ckpt)
		ckpt_finish(mm, j, false, "the job ended before every node saved it");
}

/* ---- restart */

/* A new job that restarts checkpoint r on `nodes` nodes (0: as many as it
 * had); c, when given, gets its output and end like a storm run. */
static struct job *restart_job(struct mm *mm, struct mm_ckpt *r, uint32_t nodes, bool interactive,
			       char *why, size_t len)
{
	if (!nodes)
		nodes = r->nnodes;
	if ((int)nodes > mm->conf.nnodes || nodes > r->nranks) {
		snprintf(why, len, "%u nodes for %u ranks on a cluster of %d nodes", nodes, r->nranks,
			 mm->conf.nnodes);
		return NULL;
	}
	struct job *j = calloc(1, sizeof(*j));
	if (!j) {
		snprintf(why, len, "out of memory");
		return NULL;
	}
	j->out_fd = -1;
	j->id = mm->next_job_id;
	j->spec = jobspec_dup(r->spec);
	j->nnodes = nodes;
	j->nranks = r->nranks;
	j->nodes = calloc(nodes, sizeof(int));
	j->rank_status = malloc(sizeof(int32_t) * r->nranks);
	j->node_done = calloc(nodes, sizeof(bool));
	if (!j->spec || !j->nodes || !j->rank_status || !j->node_done) {
		job_destroy(j);
		snprintf(why, len, "out of memory");
		return NULL;
	}
	/* the job as it was, as a restart: in the database as a job (its id
	 * is never given again) that a restarted MM starts as the same restart */
	j->spec->restore_checkpoint = r->id;
	j->spec->nodes = nodes;
	j->spec->ranks = r->nranks;
	j->spec->interactive = interactive;
	j->spec->overcommit = true;
	for (uint32_t k = 0; k < r->nranks; k++)
		j->rank_status[k] = INT32_MIN;
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	j->t_submit = clock_wall_s();
	if (persist_job_new(mm, j) < 0)
		slog("job %" PRIu64 ": a restarted MM will not know it", j->id);
	mm->next_job_id++;
	struct job **tail = &mm->jobs;
	while (*tail)
		tail = &(*tail)->next;
	*tail = j;
	slog("job %" PRIu64 " restarts checkpoint %" PRIu64 " of job %" PRIu64 " on %u nodes",
	       j->id, r->id, r->job, nodes);
	return j;
}

static void send_submitted(struct mm *mm, struct client *c, struct job *j, const char *reason)
{
	Storm__Ctl__Submitted sub = STORM__CTL__SUBMITTED__INIT;
	sub.job = j->id;
	sub.state = j->state == STORM__CTL__JOB_STATE__QUEUED ? "QUEUED" : "LAUNCHING";
	sub.reason = (char *)reason;
	sub.output = j->output_path ? j->output_path : "";
	reply_send(mm, c, STORM__CTL__REPLY__BODY_SUBMITTED, &sub);
}

static uint64_t ckpt_node_lost(struct mm *mm, struct job *j, int node)
{
	char why[256];
	if (j->ckpt) {
		snprintf(why, sizeof(why), "node %s stopped responding", mm->conf.nodes[node]);
		ckpt_finish(mm, j, false, why);
	}
	if (!j->spec->restart_on_failure)
		return 0;
	struct mm_ckpt *r = ckpt_rec_latest_complete(mm, j->id);
	if (!r && j->spec->restore_checkpoint) /* none of its own yet: the one it came from */
		r = ckpt_rec_find(mm, j->spec->restore_checkpoint);
	if (!r || !r->complete) {
		slog("job %" PRIu64 ": no complete checkpoint to restart from", j->id);
		return 0;
	}
	struct job *n = restart_job(mm, r, r->nnodes, j->client != NULL, why, sizeof(why));
	if (!n) {
		slog("job %" PRIu64 ": cannot restart checkpoint %" PRIu64 ": %s", j->id, r->id, why);
		return 0;
	}
	/* the new job speaks to the old one's storm run, or writes its output file */
	if (j->client) {
		n->client = j->client;
		n->client->job = n;
		j->client = NULL;
		snprintf(why, sizeof(why),
			 "node %s stopped responding; job %" PRIu64 " restarts from checkpoint %" PRIu64,
			 mm->conf.nodes[node], j->id, r->id);
		send_submitted(mm, n->client, n, why);
	}
	if (j->out_fd >= 0) {
		n->out_fd = j->out_fd;
		j->out_fd = -1;
		n->output_path = j->output_path ? strdup(j->output_path) : NULL;
	}
	return n->id;
}

/* ---- a restart's staging: images and files to the nodes that lack them */

/* a sender that restarted (and lost its copies) without being declared
 * DOWN would leave the restart waiting forever */
#define STAGE_MAX_S 600.0

struct ckpt_stage {
	double t_start;
	uint32_t n, left;
	struct {
		int node;
		bool done;
	} from[];
};

static bool node_up(const struct mm *mm, int node)
{
	return node >= 0 && mm->nodes[node].state == STORM__CTL__NODE_STATE__UP;
}

static bool in_list(const int *v, uint32_t n, int node)
{
	for (uint32_t i = 0; i < n; i++)
		if (v[i] == node)
			return true;
	return false;
}

/* Adds a staging entry; `from` joins the senders. -1: out of memory. */
static int stage_add(Storm__Cl__CkptCopy ***v, size_t *n, size_t *cap, int from, int to,
		     const char *name)
{
	if (*n == *cap) {
		size_t c = *cap ? *cap * 2 : 16;
		Storm__Cl__CkptCopy **nv = realloc(*v, c * sizeof(*nv));
		if (!nv)
			return -1;
		*v = nv;
		*cap = c;
	}
	Storm__Cl__CkptCopy *e = malloc(sizeof(*e));
	if (e)
		storm__cl__ckpt_copy__init(e);
	if (!e || !(e->name = strdup(name))) {
		free(e);
		return -1;
	}
	e->from = (uint32_t)from;
	e->to = (uint32_t)to;
	(*v)[(*n)++] = e;
	return 0;
}

static void stage_free(Storm__Cl__CkptCopy **v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(v[i]->name);
		free(v[i]);
	}
	free(v);
}

/* Before a restart launches, every node of it must hold the images of its
 * ranks and the job's files (ckpt/JOB/files): a rank's image is on the node
 * that wrote it and on its buddy; what a node lacks is sent to it, node to
 * node, by an up node that holds it (ckpt_copy.c on the nodes). The MM never
 * reads the images itself. 1: everything is in place; 2: staging started,
 * the launch waits for it; -1: the job failed, saying why. */
static int ckpt_restart_prepare(struct mm *mm, struct job *j)
{
	struct mm_ckpt *r = ckpt_rec_find(mm, j->spec->restore_checkpoint);
	if (!r) {
		job_fail(mm, j, "checkpoint %" PRIu64 " was deleted", j->spec->restore_checkpoint);
		return -1;
	}
	Storm__Cl__CkptCopy **v = NULL;
	size_t n = 0, cap = 0;
	char name[128], dir[96];
	rel_dir(dir, sizeof(dir), r->job, r->epoch);
	for (uint32_t rank = 0; rank < r->nranks; rank++) {
		int to = j->nodes[pos_of_rank(j->nranks, j->nnodes, rank)];
		int a = r->rank_node[rank], b = r->rank_copy[rank];
		if (to == a || to == b)
			continue;
		int from = node_up(mm, a) ? a : node_up(mm, b) ? b : -1;
		if (from < 0) {
			job_fail(mm, j, "checkpoint %" PRIu64 ": no node holding the image of rank %u "
					"is up (%s%s%s)", r->id, rank, mm->conf.nodes[a],
				 b >= 0 ? ", its copy on " : "; no copy was made",
				 b >= 0 ? mm->conf.nodes[b] : "");
			stage_free(v, n);
			return -1;
		}
		snprintf(name, sizeof(name), "%s/rank%u.img", dir, rank);
		if (stage_add(&v, &n, &cap, from, to, name) < 0)
			goto oom;
	}
	for (uint32_t k = 0; !r->spec->no_bcast && k < j->nnodes; k++) {
		int to = j->nodes[k], from = -1;
		if (in_list(r->nodes, r->nnodes, to))
			continue; /* each node of the job copied its files at its dump */
		for (uint32_t i = 0; i < r->nnodes && from < 0; i++)
			if (node_up(mm, r->nodes[i]))
				from = r->nodes[i];
		if (from < 0) {
			job_fail(mm, j, "checkpoint %" PRIu64 ": no node holding the job's files is up",
				 r->id);
			stage_free(v, n);
			return -1;
		}
		rel_dir(name, sizeof(name), r->job, 0);
		if (stage_add(&v, &n, &cap, from, to, name) < 0)
			goto oom;
	}
	if (!n)
		return 1;
	int *senders = malloc(sizeof(int) * n);
	uint32_t ns = 0;
	if (!senders)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		if (!in_list(senders, ns, (int)v[i]->from))
			senders[ns++] = (int)v[i]->from;
		if (!in_list(r->extra, r->nextra, (int)v[i]->to) &&
		    !in_list(r->nodes, r->nnodes, (int)v[i]->to)) {
			int *e = realloc(r->extra, sizeof(int) * (r->nextra + 1));
			if (!e) {
				free(senders);
				goto oom;
			}
			r->extra = e;
			r->extra[r->nextra++] = (int)v[i]->to;
		}
	}
	j->stage = calloc(1, sizeof(*j->stage) + ns * sizeof(j->stage->from[0]));
	if (!j->stage) {
		free(senders);
		goto oom;
	}
	j->stage->n = j->stage->left = ns;
	j->stage->t_start = clock_wall_s();
	for (uint32_t i = 0; i < ns; i++)
		j->stage->from[i].node = senders[i];
	Storm__Cl__Checkpoint ck = STORM__CL__CHECKPOINT__INIT;
	ck.job = j->id; /* the notes are the restart's */
	ck.id = r->id;
	ck.dir = dir;
	ck.send = true;
	ck.copies = v;
	ck.n_copies = n;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.body_case = STORM__CL__COMMAND__BODY_CHECKPOINT;
	cmd.checkpoint = &ck;
	int rc = cmd_queue(mm, &cmd, senders, ns);
	free(senders);
	stage_free(v, n);
	if (rc < 0) {
		job_fail(mm, j, "cannot queue the staging of checkpoint %" PRIu64 ": %s", r->id,
			 strerror(-rc));
		return -1;
	}
	ckpt_persist(mm, r); /* its new holders */
	slog("job %" PRIu64 ": %zu files of checkpoint %" PRIu64 " move to its nodes from %u "
	       "nodes", j->id, n, r->id, ns);
	return 2;
oom:
	stage_free(v, n);
	job_fail(mm, j, "out of memory");
	return -1;
}

static bool ckpt_stage_note(struct mm *mm, struct job *j, int node, const Storm__Cl__JobNote *n)
{
	if (n->kind != STORM__CL__JOB_NOTE__KIND__CHECKPOINT_COPIED &&
	    n->kind != STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED)
		return false;
	char *rest = NULL;
	if (strtoull(n->message, &rest, 10) != j->spec->restore_checkpoint)
		return false;
	if (j->state != STORM__CTL__JOB_STATE__LAUNCHING)
		return true; /* it ended meanwhile */
	while (rest && *rest == ' ')
		rest++;
	struct ckpt_stage *st = j->stage;
	if (n->kind == STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED) {
		free(j->stage);
		j->stage = NULL;
		job_fail(mm, j, "checkpoint %" PRIu64 ": its images could not be moved: %s",
			 j->spec->restore_checkpoint, rest ? rest : "a node failed");
		return true;
	}
	for (uint32_t i = 0; i < st->n; i++)
		if (st->from[i].node == node && !st->from[i].done) {
			st->from[i].done = true;
			st->left--;
		}
	if (st->left)
		return true;
	free(j->stage);
	j->stage = NULL;
	slog("job %" PRIu64 ": the images of checkpoint %" PRIu64 " are on its nodes", j->id,
	       j->spec->restore_checkpoint);
	job_transferred(mm, j);
	return true;
}

/* Every slice: a sender that went down fails the restart it was staging. */
static void stage_check(struct mm *mm)
{
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (!j->stage || !job_active(j))
			continue;
		if (clock_wall_s() - j->stage->t_start > STAGE_MAX_S) {
			free(j->stage);
			j->stage = NULL;
			job_fail(mm, j, "the images of checkpoint %" PRIu64 " did not reach its nodes "
					"in %.0f s", j->spec->restore_checkpoint, STAGE_MAX_S);
			continue;
		}
		for (uint32_t i = 0; i < j->stage->n; i++) {
			int node = j->stage->from[i].node;
			if (j->stage->from[i].done || node_up(mm, node))
				continue;
			free(j->stage);
			j->stage = NULL;
			job_fail(mm, j, "node %s went down while it moved the images of checkpoint "
					"%" PRIu64, mm->conf.nodes[node], j->spec->restore_checkpoint);
			break;
		}
	}
}

static void ckpt_fill_launch(struct mm *mm, struct job *j, Storm__Cl__Launch *l, char **old_dirs)
{
	static char restore_dir[96], files_dir[96];
	struct mm_ckpt *r = ckpt_rec_find(mm, j->spec->restore_checkpoint);
	if (!r)
		return;
	l->restore = true;
	/* staged or not, every node has its ranks' images and the files there */
	rel_dir(restore_dir, sizeof(restore_dir), r->job, r->epoch);
	rel_dir(files_dir, sizeof(files_dir), r->job, 0);
	l->restore_dir = restore_dir;
	l->files_dir = r->spec->no_bcast ? "" : files_dir;
	size_t n = r->nnodes < 64 ? r->nnodes : 64;
	for (size_t k = 0; k < n; k++) {
		char d[PATH_MAX + 512];
		snprintf(d, sizeof(d), "%s/%s/jobs/%" PRIu64, mm->conf.state_dir,
			 mm->conf.nodes[r->nodes[k]], r->job);
		old_dirs[k] = strdup(d);
	}
	l->old_dirs = old_dirs;
	l->n_old_dirs = n;
}

/* ---- requests */

static void handle_restart(struct mm *mm, struct client *c, const Storm__Ctl__Restart *rq)
{
	char why[512];
	struct mm_ckpt *r = ckpt_rec_find(mm, rq->checkpoint);
	if (!r) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no checkpoint %llu",
			    (unsigned long long)rq->checkpoint);
		return;
	}
	if (!mm_may_touch_ckpt(c, r, "restart", why, sizeof(why))) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	if (!r->complete) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
			    "checkpoint %llu is incomplete (%s); only a complete checkpoint "
			    "restarts",
			    (unsigned long long)r->id,
			    r->reason[0] ? r->reason : "still being taken");
		return;
	}
	if (mm->shutting_down) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
			    "the cluster is shutting down");
		return;
	}
	struct job *j = restart_job(mm, r, rq->nodes, true, why, sizeof(why));
	if (!j) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", why);
		return;
	}
	j->client = c;
	c->job = j;
	/* as a Submit: the reply says whether it starts now, then it does */
	bool first = true;
	for (struct job *q = mm->jobs; q && q != j; q = q->next)
		first &= q->state != STORM__CTL__JOB_STATE__QUEUED;
	if (first && (int)j->nnodes <= matrix_room(&mm->matrix) && !mm->xfer)
		j->state = STORM__CTL__JOB_STATE__LAUNCHING;
	send_submitted(mm, c, j, "");
	j->state = STORM__CTL__JOB_STATE__QUEUED;
	jobs_schedule(mm);
}

static void handle_delete(struct mm *mm, struct client *c, uint64_t id)
{
	struct mm_ckpt *r = ckpt_rec_find(mm, id);
	if (!r) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no checkpoint %llu",
			    (unsigned long long)id);
		return;
	}
	char why[256];
	if (!mm_may_touch_ckpt(c, r, "delete", why, sizeof(why))) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->ckpt == r) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
				    "checkpoint %llu is being taken", (unsigned long long)id);
			return;
		}
	remove_images(mm, r);
	reply_info(mm, c, r);
	slog("checkpoint %llu deleted by uid %u", (unsigned long long)id, (unsigned)c->uid);
	rec_forget(mm, r);
}

static void reply_list(struct mm *mm, struct client *c)
{
	size_t n = 0, ranks = 0;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next, n++)
		ranks += r->nranks;
	char **where = calloc(2 * ranks + 1, sizeof(char *));
	Storm__Ctl__CheckpointInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	Storm__Ctl__CheckpointInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!infos || !ptrs || !where) {
		free(infos);
		free(ptrs);
		free(where);
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	size_t k = 0;
	char **w = where;
	for (struct mm_ckpt *r = mm->ckpts; r; r = r->next, k++) {
		fill_info(mm, r, &infos[k], w);
		w += 2 * (size_t)r->nranks;
		ptrs[k] = &infos[k];
	}
	Storm__Ctl__CheckpointList cl = STORM__CTL__CHECKPOINT_LIST__INIT;
	cl.checkpoints = ptrs;
	cl.n_checkpoints = n;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_CHECKPOINTS, &cl);
	free(infos);
	free(ptrs);
	free(where);
}

void ckpt_handle_request(struct mm *mm, struct client *c, const Storm__Ctl__Request *req)
{
	char why[512];
	switch (req->body_case) {
	case STORM__CTL__REQUEST__BODY_CHECKPOINT: {
		struct job *j = job_find(mm, req->checkpoint->job);
		if (!j) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no job %llu",
				    (unsigned long long)req->checkpoint->job);
		} else if (!mm_may_touch(c, j, "checkpoint", why, sizeof(why))) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		} else if (ckpt_begin(mm, j, c, why, sizeof(why)) < 0) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", why);
		}
		break;
	}
	case STORM__CTL__REQUEST__BODY_RESTART:
		handle_restart(mm, c, req->restart);
		break;
	case STORM__CTL__REQUEST__BODY_CHECKPOINTS:
		reply_list(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_DELETE_CHECKPOINT:
		handle_delete(mm, c, req->delete_checkpoint->checkpoint);
		break;
	default:
		break;
	}
}

static const struct job_ckpt_hooks hooks = {
	.restart_prepare = ckpt_restart_prepare,
	.fill_launch = ckpt_fill_launch,
	.node_lost = ckpt_node_lost,
	.on_note = ckpt_on_note,
	.stage_note = ckpt_stage_note,
	.ending = ckpt_job_ended,
};

void ckpt_init(struct mm *mm)
{
	mm->ckpt_hooks = &hooks;
}
