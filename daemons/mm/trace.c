/* storm trace: a job's events. The machine manager keeps its own (when the
 * job's row ran as it saw it, its checkpoints) in a bounded ring per job and
 * adds its queueing, transfer, launch and end at the job's end; the nodes
 * send theirs before the job's DONE. Everything goes to the database, so a
 * trace outlives the job and a restart of the MM. */
#include "db.h"
#include "mm.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MM_TRACE_MAX 4096

struct tr_ev {
	uint8_t kind;
	uint64_t t_us, dur_us, a, b;
};

struct mm_trace {
	struct tr_ev ev[MM_TRACE_MAX];
	uint32_t head, n;
	bool running; /* its row runs since run_t, as row run_row */
	uint64_t run_t;
	int run_row;
};

static uint64_t now_us(void)
{
	return (uint64_t)(clock_wall_s() * 1e6);
}

static void add(struct job *j, int kind, uint64_t t_us, uint64_t dur, uint64_t a, uint64_t b)
{
	if (!j->trace && !(j->trace = calloc(1, sizeof(*j->trace))))
		return;
	struct mm_trace *t = j->trace;
	uint32_t at = (t->head + t->n) % MM_TRACE_MAX;
	if (t->n == MM_TRACE_MAX)
		t->head = (t->head + 1) % MM_TRACE_MAX;
	else
		t->n++;
	t->ev[at] = (struct tr_ev){ (uint8_t)kind, t_us, dur, a, b };
}

static void run_stop(struct job *j, uint64_t now)
{
	if (j->trace && j->trace->running) {
		j->trace->running = false;
		add(j, STORM__TRACE__EVENT__KIND__ROW, j->trace->run_t, now - j->trace->run_t,
		    (uint64_t)j->trace->run_row, 0);
	}
}

void trace_rows(struct mm *mm, int old_row, int new_row)
{
	(void)old_row;
	uint64_t now = now_us();
	for (struct job *j = mm->jobs; j; j = j->next) {
		if (j->state != STORM__CTL__JOB_STATE__RUNNING)
			continue;
		bool runs = new_row >= 0 && matrix_runs_in(&mm->matrix, jobid_alloc(j->id), new_row);
		bool ran = j->trace && j->trace->running;
		if (ran && (!runs || j->trace->run_row != new_row))
			run_stop(j, now);
		if (runs && !(j->trace && j->trace->running)) {
			if (!j->trace && !(j->trace = calloc(1, sizeof(*j->trace))))
				continue;
			j->trace->running = true;
			j->trace->run_t = now;
			j->trace->run_row = new_row;
		}
	}
}

void trace_checkpoint(struct mm *mm, struct job *j, const struct mm_ckpt *r)
{
	(void)mm;
	add(j, STORM__TRACE__EVENT__KIND__CHECKPOINT, (uint64_t)(r->t_start * 1e6),
	    (uint64_t)(r->seconds * 1e6), r->id, (uint64_t)(r->frozen * 1e6));
}

/* The events the job's fields tell: queued, transfer, launch, end. */
static size_t field_events(const struct job *j, struct tr_ev *ev)
{
	size_t n = 0;
	uint64_t sub = (uint64_t)(j->t_submit * 1e6), start = (uint64_t)(j->t_start * 1e6);
	uint64_t xfer = (uint64_t)(j->t_transferred * 1e6), launch = (uint64_t)(j->t_launched * 1e6);
	uint64_t end = (uint64_t)(j->t_end * 1e6);
	if (sub)
		ev[n++] = (struct tr_ev){ STORM__TRACE__EVENT__KIND__QUEUED, sub,
					  (start ? start : end ? end : now_us()) - sub, 0, 0 };
	if (start && xfer >= start)
		ev[n++] = (struct tr_ev){ STORM__TRACE__EVENT__KIND__TRANSFER, start, xfer - start, 0, 0 };
	if (launch)
		ev[n++] = (struct tr_ev){ STORM__TRACE__EVENT__KIND__LAUNCH, launch, 0, 0, 0 };
	if (end)
		ev[n++] = (struct tr_ev){ STORM__TRACE__EVENT__KIND__END, end, 0, (uint64_t)j->state,
					  (uint64_t)(uint32_t)j->exit_status };
	return n;
}

/* ev[0..n) as storm.trace.Events in out (pointers into store) */
static void to_proto(const struct tr_ev *ev, size_t n, Storm__Trace__Event *store,
		     Storm__Trace__Event **out)
{
	for (size_t i = 0; i < n; i++) {
		storm__trace__event__init(&store[i]);
		store[i].kind = (Storm__Trace__Event__Kind)ev[i].kind;
		store[i].t_us = ev[i].t_us;
		store[i].dur_us = ev[i].dur_us;
		store[i].a = ev[i].a;
		store[i].b = ev[i].b;
		out[i] = &store[i];
	}
}

/* The MM's events of j: its ring, then what its fields tell. malloc'd. */
static struct tr_ev *mm_events(const struct job *j, size_t *n)
{
	size_t ring = j->trace ? j->trace->n : 0;
	struct tr_ev *ev = calloc(ring + 5, sizeof(*ev));
	if (!ev) {
		*n = 0;
		return NULL;
	}
	for (size_t i = 0; i < ring; i++)
		ev[i] = j->trace->ev[(j->trace->head + i) % MM_TRACE_MAX];
	size_t k = ring;
	if (j->trace && j->trace->running) /* a turn under way */
		ev[k++] = (struct tr_ev){ STORM__TRACE__EVENT__KIND__ROW, j->trace->run_t,
					  now_us() - j->trace->run_t, (uint64_t)j->trace->run_row, 0 };
	*n = k + field_events(j, ev + k);
	return ev;
}

void trace_job_end(struct mm *mm, struct job *j)
{
	run_stop(j, now_us());
	size_t n;
	struct tr_ev *ev = mm_events(j, &n);
	Storm__Trace__Event *store = calloc(n ? n : 1, sizeof(*store));
	Storm__Trace__Event **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (ev && store && ptrs && mm->db) {
		to_proto(ev, n, store, ptrs);
		Storm__Trace__Chunk c = STORM__TRACE__CHUNK__INIT;
		c.job = j->id;
		c.events = ptrs;
		c.n_events = n;
		size_t len = storm__trace__chunk__get_packed_size(&c);
		uint8_t *buf = malloc(len);
		if (buf) {
			storm__trace__chunk__pack(&c, buf);
			if (db_trace_add(mm->db, j->id, -1, buf, len) < 0)
				slog("job %llu: cannot store its trace: %s", (unsigned long long)j->id,
				     db_error(mm->db));
		}
		free(buf);
	}
	free(ev);
	free(store);
	free(ptrs);
	trace_free(j);
}

void trace_free(struct job *j)
{
	free(j->trace);
	j->trace = NULL;
}

void trace_on_chunk(struct mm *mm, int node, const Storm__Trace__Chunk *c)
{
	/* only a node of the job, while the job is on; after its end, a node
	 * that ended it quietly, whose trace follows its end */
	struct job *j = job_find(mm, c->job);
	bool ours = false;
	int pos = -1;
	for (uint32_t k = 0; j && k < j->nnodes && pos < 0; k++)
		if (j->nodes[k] == node)
			pos = (int)k;
	if (pos >= 0)
		ours = job_active(j) || (j->trace_state && j->trace_state[pos] == TRACE_OWED);
	if (!mm->db || !ours || c->n_events > 4096)
		return;
	if (c->last && !j->trace_state)
		j->trace_state = calloc(j->nnodes, 1);
	if (c->last && j->trace_state)
		j->trace_state[pos] = TRACE_WHOLE;
	if (!c->n_events)
		return;
	size_t len = storm__trace__chunk__get_packed_size(c);
	uint8_t *buf = malloc(len);
	if (!buf)
		return;
	storm__trace__chunk__pack(c, buf);
	if (db_trace_add(mm->db, c->job, node, buf, len) < 0)
		slog("job %llu: cannot store node %s's trace: %s", (unsigned long long)c->job,
		     mm->conf.nodes[node], db_error(mm->db));
	free(buf);
}

/* ---- the reply */

struct collected {
	struct mm *mm;
	Storm__Trace__Chunk **chunks; /* unpacked, per database row */
	int *nodes;
	size_t n, cap;
};

static int collect(void *arg, int node, const void *data, size_t len)
{
	struct collected *k = arg;
	if (node < -1 || node >= k->mm->conf.nnodes)
		return 0;
	Storm__Trace__Chunk *c = storm__trace__chunk__unpack(NULL, len, data);
	if (!c)
		return 0; /* a damaged row: the rest of the trace still shows */
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		Storm__Trace__Chunk **nc = realloc(k->chunks, cap * sizeof(*nc));
		int *nn = realloc(k->nodes, cap * sizeof(*nn));
		if (nc)
			k->chunks = nc;
		if (nn)
			k->nodes = nn;
		if (!nc || !nn) {
			storm__trace__chunk__free_unpacked(c, NULL);
			return -1;
		}
		k->cap = cap;
	}
	k->chunks[k->n] = c;
	k->nodes[k->n++] = node;
	return 0;
}

struct owner {
	uint32_t uid;
	char user[64];
	Storm__Ctl__JobInfo info;
	char name[128], nodelist[512];
	bool found;
};

static int owner_of(void *arg, const struct db_acct *a)
{
	struct owner *o = arg;
	o->found = true;
	o->uid = a->uid;
	snprintf(o->user, sizeof(o->user), "%s", a->user ? a->user : "?");
	snprintf(o->name, sizeof(o->name), "%s", a->name ? a->name : "");
	snprintf(o->nodelist, sizeof(o->nodelist), "%s", a->nodelist ? a->nodelist : "");
	storm__ctl__job_info__init(&o->info);
	o->info.job = a->id;
	o->info.name = o->name;
	o->info.user = o->user;
	o->info.uid = a->uid;
	o->info.state = persist_state_value(a->state);
	o->info.nodes = a->nnodes;
	o->info.ranks = a->nranks;
	o->info.nodelist = o->nodelist;
	o->info.submit_time = a->t_submit;
	o->info.start_time = a->t_start;
	o->info.end_time = a->t_end;
	o->info.exit_status = a->exit_status;
	o->info.array_job = a->array_job;
	o->info.array_task = a->array_task;
	o->info.row = -1;
	return 0;
}

/* The UP nodes that ended j quietly and whose trace has not come whole
 * (storm trace waits for them), at most PENDING_NAMED. */
#define PENDING_NAMED 64
static size_t trace_pending(struct mm *mm, const struct job *j, char **names)
{
	size_t n = 0;
	for (uint32_t k = 0; j && j->trace_state && k < j->nnodes && n < PENDING_NAMED; k++)
		if (j->trace_state[k] == TRACE_OWED &&
		    mm->nodes[j->nodes[k]].state == STORM__CTL__NODE_STATE__UP)
			names[n++] = mm->conf.nodes[j->nodes[k]];
	return n;
}

void trace_reply(struct mm *mm, struct client *c, const Storm__Ctl__GetTrace *g,
		 const Storm__Ctl__JobInfo *info)
{
	char why[256];
	struct job *j = job_find(mm, g->job);
	struct owner o = { 0 };
	Storm__Ctl__Trace tr = STORM__CTL__TRACE__INIT;
	if (j) {
		if (!mm_may_touch(c, j, "trace", why, sizeof(why))) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
			return;
		}
		tr.job = (Storm__Ctl__JobInfo *)info;
	} else {
		struct db_acct_filter f = { .uid = -1, .job = g->job };
		if (mm->db)
			db_acct_list(mm->db, &f, owner_of, &o);
		if (!o.found) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no job %llu",
				    (unsigned long long)g->job);
			return;
		}
		if (!mm_may_touch_owned(c, g->job, o.uid, o.user, "trace", why, sizeof(why))) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
			return;
		}
		tr.job = &o.info;
	}
	struct collected k = { .mm = mm };
	if (mm->db && db_trace_list(mm->db, g->job, collect, &k) < 0)
		slog("job %llu: cannot read its trace: %s", (unsigned long long)g->job,
		     db_error(mm->db));
	/* the MM's: stored at the end, or live while the job is in memory */
	size_t nlive = 0;
	struct tr_ev *live = j && job_active(j) ? mm_events(j, &nlive) : NULL;
	Storm__Trace__Event *lstore = calloc(nlive + 1, sizeof(*lstore));
	Storm__Trace__Event **lptr = calloc(nlive + 1, sizeof(*lptr));
	size_t nmm = nlive;
	for (size_t i = 0; i < k.n; i++)
		if (k.nodes[i] == -1)
			nmm += k.chunks[i]->n_events;
	Storm__Trace__Event **mmev = calloc(nmm + 1, sizeof(*mmev));
	Storm__Ctl__NodeTrace *nt = calloc((size_t)mm->conf.nnodes, sizeof(*nt));
	Storm__Ctl__NodeTrace **ntp = calloc((size_t)mm->conf.nnodes + 1, sizeof(*ntp));
	size_t *count = calloc((size_t)mm->conf.nnodes + 1, sizeof(*count));
	if (!lstore || !lptr || !mmev || !nt || !ntp || !count) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		goto out;
	}
	if (live)
		to_proto(live, nlive, lstore, lptr);
	size_t m = 0;
	for (size_t i = 0; i < nlive; i++)
		mmev[m++] = lptr[i];
	for (size_t i = 0; i < k.n; i++) {
		if (k.nodes[i] == -1)
			for (size_t e = 0; e < k.chunks[i]->n_events; e++)
				mmev[m++] = k.chunks[i]->events[e];
		else
			count[k.nodes[i]] += k.chunks[i]->n_events;
	}
	tr.mm = mmev;
	tr.n_mm = m;
	size_t nn = 0;
	for (int n = 0; n < mm->conf.nnodes; n++) {
		if (!count[n])
			continue;
		storm__ctl__node_trace__init(&nt[nn]);
		nt[nn].node = mm->conf.nodes[n];
		nt[nn].events = calloc(count[n], sizeof(Storm__Trace__Event *));
		if (!nt[nn].events)
			continue;
		for (size_t i = 0; i < k.n; i++)
			if (k.nodes[i] == n)
				for (size_t e = 0; e < k.chunks[i]->n_events; e++)
					nt[nn].events[nt[nn].n_events++] = k.chunks[i]->events[e];
		ntp[nn] = &nt[nn];
		nn++;
	}
	tr.nodes = ntp;
	tr.n_nodes = nn;
	char *pending[PENDING_NAMED];
	tr.n_pending = trace_pending(mm, j, pending);
	tr.pending = pending;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_TRACE, &tr);
	for (size_t i = 0; i < nn; i++)
		free(nt[i].events);
out:
	for (size_t i = 0; i < k.n; i++)
		storm__trace__chunk__free_unpacked(k.chunks[i], NULL);
	free(k.chunks);
	free(k.nodes);
	free(live);
	free(lstore);
	free(lptr);
	free(mmev);
	free(nt);
	free(ntp);
	free(count);
}

/* ---- storm run --record: the job's BCS-MPI record */

/* The one stream event the MM writes: "this rank's node was lost" (the
 * event codes are bcs_mpi/abi/trace_codec.h's, BCS_EV_LOST, a single byte) */
#define MM_BCS_EV_LOST 8

struct bcs_owner {
	struct db_bcs r; /* r.bytes: 1 found */
	char user[64];
};

/* The record's header, from the job: once per job and MM (a second insert
 * is ignored by the database). */
static void bcs_header(struct mm *mm, struct job *j)
{
	if (j->bcs_recorded)
		return;
	size_t len = 0;
	for (size_t i = 0; i < j->spec->n_argv; i++)
		len += strlen(j->spec->argv[i]) + 1;
	char *argv = malloc(len ? len : 1), *p = argv;
	if (!argv)
		return;
	for (size_t i = 0; i < j->spec->n_argv; i++)
		p = stpcpy(p, j->spec->argv[i]) + 1;
	struct db_bcs r = { .job = j->id, .user = j->spec->user, .uid = j->spec->uid,
			    .name = j->spec->name, .nodes = j->spec->nodes, .ranks = j->nranks,
			    .argv = argv, .argv_len = len, .created = clock_wall_s() };
	if (db_bcs_record(mm->db, &r) == 0)
		j->bcs_recorded = true;
	else
		slog("job %llu: cannot store its BCS-MPI record: %s", (unsigned long long)j->id,
		     db_error(mm->db));
	free(argv);
}

/* The ranks node idx runs of j: [*first, *first + *count) (block
 * distribution, as the launch gave them). false: none. */
static bool ranks_of(const struct job *j, int idx, uint32_t *first, uint32_t *count)
{
	uint32_t ln = job_launch_nodes(j);
	uint32_t base = ln ? j->nranks / ln : 0, extra = ln ? j->nranks % ln : 0, r = 0;
	for (uint32_t k = 0; k < ln && k < j->nnodes; k++) {
		uint32_t c = base + (k < extra);
		if (j->nodes[k] == idx) {
			*first = r;
			*count = c;
			return c > 0;
		}
		r += c;
	}
	return false;
}

bool trace_on_bcs(struct mm *mm, int node, const Storm__Cl__BcsStream *b)
{
	/* only a node of the job, while the job is on, about a rank it runs */
	struct job *j = job_find(mm, b->job);
	uint32_t first, count;
	if (!j || !job_active(j) || !ranks_of(j, node, &first, &count) ||
	    b->rank < first || b->rank >= first + count || !b->data.len)
		return false;
	if (!mm->db)
		return true;
	bcs_header(mm, j);
	if (db_bcs_append(mm->db, j->id, b->rank, b->data.data, b->data.len) < 0)
		slog("job %llu: cannot store rank %u's BCS-MPI record: %s",
		     (unsigned long long)j->id, b->rank, db_error(mm->db));
	return true;
}

void trace_bcs_node_lost(struct mm *mm, struct job *j, int node)
{
	uint32_t first, count;
	if (!mm->db || !j->bcs_recorded || !ranks_of(j, node, &first, &count))
		return;
	/* what its ranks did after their node's last report is not known:
	 * the record says so, rank by rank */
	const uint8_t ev = MM_BCS_EV_LOST;
	for (uint32_t r = first; r < first + count; r++)
		if (db_bcs_append(mm->db, j->id, r, &ev, 1) < 0)
			slog("job %llu: cannot record the loss of rank %u: %s",
			     (unsigned long long)j->id, r, db_error(mm->db));
}

static int bcs_found(void *arg, const struct db_bcs *r)
{
	struct bcs_owner *o = arg;
	o->r = *r;
	/* borrowed pointers die with the row: the user is copied */
	snprintf(o->user, sizeof(o->user), "%s", r->user ? r->user : "?");
	o->r.user = o->r.name = NULL;
	o->r.argv = NULL;
	o->r.bytes = 1;
	return 1;
}

struct bcs_reply {
	Storm__Ctl__BcsRecord rec;
	Storm__Ctl__BcsRank *ranks;
	size_t cap;
	char *argv_copy;
	bool oom;
};

static int bcs_header_in(void *arg, const struct db_bcs *r)
{
	struct bcs_reply *k = arg;
	k->rec.nodes = r->nodes;
	k->rec.ranks = r->ranks;
	k->rec.created = r->created;
	const char *a = r->argv;
	size_t n = 0;
	for (size_t off = 0; off < r->argv_len; off += strlen(a + off) + 1)
		n++;
	k->argv_copy = malloc(r->argv_len + 1);
	k->rec.argv = calloc(n + 1, sizeof(char *));
	if (!k->argv_copy || !k->rec.argv) {
		k->oom = true;
		return 1;
	}
	memcpy(k->argv_copy, a, r->argv_len);
	k->argv_copy[r->argv_len] = '\0';
	for (size_t off = 0; off < r->argv_len; off += strlen(k->argv_copy + off) + 1)
		k->rec.argv[k->rec.n_argv++] = k->argv_copy + off;
	return 1;
}

static int bcs_stream_in(void *arg, uint32_t rank, const void *data, size_t len)
{
	struct bcs_reply *k = arg;
	if (k->rec.n_streams == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		Storm__Ctl__BcsRank *q = realloc(k->ranks, cap * sizeof(*q));
		if (!q) {
			k->oom = true;
			return 1;
		}
		k->ranks = q;
		k->cap = cap;
	}
	Storm__Ctl__BcsRank *r = &k->ranks[k->rec.n_streams++];
	storm__ctl__bcs_rank__init(r);
	r->rank = rank;
	r->data.data = malloc(len ? len : 1);
	r->data.len = len;
	if (!r->data.data) {
		k->rec.n_streams--;
		k->oom = true;
		return 1;
	}
	memcpy(r->data.data, data, len);
	return 0;
}

/* storm trace --bcs JOB: the job's record, for its owner or root */
static void bcs_reply(struct mm *mm, struct client *c, uint64_t job)
{
	char why[256];
	struct bcs_owner found = { 0 };
	if (mm->db)
		db_bcs_list(mm->db, job, bcs_found, &found);
	if (!found.r.bytes) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND,
			    "job %llu has no BCS-MPI record (it was not run with --record, or its "
			    "record was deleted)", (unsigned long long)job);
		return;
	}
	if (!mm_may_touch_owned(c, job, found.r.uid, found.user, "read the record of", why,
				sizeof(why))) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	struct bcs_reply k = { 0 };
	storm__ctl__bcs_record__init(&k.rec);
	if (db_bcs_list(mm->db, job, bcs_header_in, &k) < 0 ||
	    db_bcs_streams(mm->db, job, bcs_stream_in, &k) < 0 || k.oom) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
			    "cannot read the record of job %llu", (unsigned long long)job);
		goto out;
	}
	Storm__Ctl__BcsRank **pr = calloc(k.rec.n_streams + 1, sizeof(*pr));
	if (!pr) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < k.rec.n_streams; i++)
		pr[i] = &k.ranks[i];
	k.rec.streams = pr;
	Storm__Ctl__Trace tr = STORM__CTL__TRACE__INIT;
	tr.bcs = &k.rec;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_TRACE, &tr);
	free(pr);
out:
	for (size_t i = 0; i < k.rec.n_streams; i++)
		free(k.ranks[i].data.data);
	free(k.ranks);
	free(k.rec.argv);
	free(k.argv_copy);
}

struct bcs_listing {
	const struct client *c;
	Storm__Ctl__TraceInfo *v;
	size_t n, cap;
	char *strings; /* user and name of each, 2 x 128 bytes */
	bool oom;
};

static int bcs_list_in(void *arg, const struct db_bcs *r)
{
	struct bcs_listing *k = arg;
	char why[256];
	if (!mm_may_touch_owned(k->c, r->job, r->uid, "", "list", why, sizeof(why)))
		return 0;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 16;
		Storm__Ctl__TraceInfo *q = realloc(k->v, cap * sizeof(*q));
		char *s = realloc(k->strings, cap * 256);
		if (q)
			k->v = q;
		if (s)
			k->strings = s;
		if (!q || !s) {
			k->oom = true;
			return 1;
		}
		k->cap = cap;
	}
	Storm__Ctl__TraceInfo *t = &k->v[k->n];
	storm__ctl__trace_info__init(t);
	char *s = k->strings + k->n * 256;
	snprintf(s, 128, "%s", r->user ? r->user : "");
	snprintf(s + 128, 128, "%s", r->name ? r->name : "");
	t->job = r->job;
	t->uid = r->uid;
	t->ranks = r->ranks;
	t->bytes = r->bytes;
	t->created = r->created;
	k->n++;
	return 0;
}

/* storm traces [--delete JOB]: the caller's records (root: everyone's) */
static void bcs_list_reply(struct mm *mm, struct client *c, const Storm__Ctl__ListTraces *l)
{
	char why[256];
	if (l->delete_) {
		struct bcs_owner found = { 0 };
		if (mm->db)
			db_bcs_list(mm->db, l->delete_, bcs_found, &found);
		if (!found.r.bytes) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND,
				    "job %llu has no BCS-MPI record", (unsigned long long)l->delete_);
			return;
		}
		if (!mm_may_touch_owned(c, l->delete_, found.r.uid, found.user,
					"delete the record of", why, sizeof(why))) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
			return;
		}
		if (db_bcs_delete(mm->db, l->delete_) < 0) {
			reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL,
				    "cannot delete the record of job %llu: %s",
				    (unsigned long long)l->delete_, db_error(mm->db));
			return;
		}
		slog("job %llu: its BCS-MPI record was deleted", (unsigned long long)l->delete_);
	}
	struct bcs_listing k = { .c = c };
	if (mm->db)
		db_bcs_list(mm->db, 0, bcs_list_in, &k);
	Storm__Ctl__TraceInfo **p = calloc(k.n + 1, sizeof(*p));
	if (k.oom || !p) {
		reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
	} else {
		for (size_t i = 0; i < k.n; i++) {
			k.v[i].user = k.strings + i * 256;
			k.v[i].name = k.strings + i * 256 + 128;
			p[i] = &k.v[i];
		}
		Storm__Ctl__TraceList tl = STORM__CTL__TRACE_LIST__INIT;
		tl.traces = p;
		tl.n_traces = k.n;
		reply_send(mm, c, STORM__CTL__REPLY__BODY_TRACES, &tl);
	}
	free(p);
	free(k.v);
	free(k.strings);
}

void trace_bcs_request(struct mm *mm, struct client *c, const Storm__Ctl__Request *req)
{
	if (req->body_case == STORM__CTL__REQUEST__BODY_TRACES)
		bcs_list_reply(mm, c, req->traces);
	else
		bcs_reply(mm, c, req->trace->job);
}
