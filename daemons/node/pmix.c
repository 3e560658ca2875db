/* A PMIx server for Open MPI's ranks, on OpenPMIx's server library: the
 * library speaks the protocol to the ranks and keeps their data; this file
 * tells it about each job (its namespace, sizes, where its ranks are) and
 * does what it asks of a host: fences go through the job's exchange across
 * its nodes (pmi_xchg.c), aborts end the job everywhere.
 *
 * The library runs its own progress thread and calls this file's module
 * (the upcalls) on it; the daemon is single-threaded. So an upcall only
 * copies its arguments into a message on a mutex-protected queue and wakes
 * the daemon's loop through an eventfd; the loop does the work and calls
 * the library's callbacks, which the library hands back to its own thread.
 * The daemon's calls into the library that block (registering a job or a
 * rank) wait for that thread, which never waits for the daemon's.
 *
 * The server starts with the first job that needs it, so a daemon that
 * never runs Open MPI has no second thread. */
#include <errno.h>
#include <ftw.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <pmix.h>
#include <pmix_server.h>

#include "pmi.h"
#include "rtguard.h"

struct server_init {
	pmix_server_module_t *module;
	pmix_data_array_t *info;
};

static int server_init(void *arg)
{
	struct server_init *si = arg;
	return PMIx_server_init(si->module, si->info->array, si->info->size);
}

enum px_kind { PX_CONNECTED, PX_FINALIZED, PX_ABORT, PX_FENCE };

/* One upcall, as the library's thread copied it for the daemon's loop. */
struct pxmsg {
	enum px_kind kind;
	pmix_proc_t proc;          /* the caller; a fence: its first participant */
	size_t nprocs;             /* a fence's participants */
	int status;                /* an abort's exit code */
	char *text;                /* an abort's message */
	char *data;                /* a fence's contribution from this node */
	size_t ndata;
	pmix_op_cbfunc_t opcb;
	pmix_modex_cbfunc_t mdxcb;
	void *cbdata;
	struct pxmsg *next;
};

enum px_hold { HOLD_NONE, HOLD_ASKED, HOLD_ON, HOLD_OFF };

struct nd_pmix {
	pthread_mutex_t mu;        /* guards the queue, hold and pxop: the shared state */
	pthread_cond_t cv;         /* hold changed, or a pxop is done */
	struct pxmsg *head, *tail;
	enum px_hold hold;         /* test hook pmix_late_eof */
	int efd;                   /* eventfd: the queue has messages */
	char dir[PATH_MAX + 8];    /* the library's rendezvous and session files */
};

/* the job's process manager here (job->pmi) */
struct pxjob {
	struct nd *nd;
	struct nd_job *job;
	pmix_nspace_t nspace;
	uint32_t size, first, nlocal, uid, gid;
	bool registered;           /* its namespace, with the library */
	bool *client;              /* per local rank: registered with the library */
	char ***env;               /* per local rank: its entries, NULL-ended */
	uint32_t user_env;         /* bit i: the job's env sets ompi_fixed[i] */
	/* what the library told of its ranks so far (the state dump) */
	uint32_t connected, finalized, fences;
};

/* a fence out on the job's exchange */
struct pxfence {
	pmix_modex_cbfunc_t cb;
	void *cbdata;
};

#define NSPACE_PREFIX "storm."

/* the library's module: only the queue is touched from its thread */
static struct nd_pmix *g_px;

static pmix_status_t post(struct pxmsg *m)
{
	struct nd_pmix *px = g_px;
	if (!px) {
		free(m->text);
		free(m->data);
		free(m);
		return PMIX_ERR_INIT;
	}
	pthread_mutex_lock(&px->mu);
	if (px->tail)
		px->tail->next = m;
	else
		px->head = m;
	px->tail = m;
	pthread_mutex_unlock(&px->mu);
	uint64_t one = 1;
	ssize_t w = write(px->efd, &one, sizeof(one));
	(void)w; /* only fails when the counter is full: the loop is woken already */
	return PMIX_SUCCESS;
}

static struct pxmsg *msg_new(enum px_kind kind, const pmix_proc_t *proc)
{
	struct pxmsg *m = calloc(1, sizeof(*m));
	if (m) {
		m->kind = kind;
		if (proc)
			m->proc = *proc;
	}
	return m;
}

static pmix_status_t up_connected(const pmix_proc_t *proc, void *server_object,
				  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	(void)server_object;
	struct pxmsg *m = msg_new(PX_CONNECTED, proc);
	if (!m)
		return PMIX_ERR_NOMEM;
	m->opcb = cbfunc;
	m->cbdata = cbdata;
	return post(m);
}

static pmix_status_t up_finalized(const pmix_proc_t *proc, void *server_object,
				  pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	(void)server_object;
	struct pxmsg *m = msg_new(PX_FINALIZED, proc);
	if (!m)
		return PMIX_ERR_NOMEM;
	m->opcb = cbfunc;
	m->cbdata = cbdata;
	return post(m);
}

static pmix_status_t up_abort(const pmix_proc_t *proc, void *server_object, int status,
			      const char msg[], pmix_proc_t procs[], size_t nprocs,
			      pmix_op_cbfunc_t cbfunc, void *cbdata)
{
	(void)server_object;
	(void)procs;
	(void)nprocs; /* whichever ranks it names, storm ends the whole job */
	struct pxmsg *m = msg_new(PX_ABORT, proc);
	if (!m)
		return PMIX_ERR_NOMEM;
	m->status = status;
	m->text = msg ? strndup(msg, 200) : NULL;
	m->opcb = cbfunc;
	m->cbdata = cbdata;
	return post(m);
}

static pmix_status_t up_fence(const pmix_proc_t procs[], size_t nprocs, const pmix_info_t info[],
			      size_t ninfo, char *data, size_t ndata, pmix_modex_cbfunc_t cbfunc,
			      void *cbdata)
{
	(void)info;
	(void)ninfo; /* the data the library hands over is collected or not by itself */
	struct pxmsg *m = msg_new(PX_FENCE, nprocs ? &procs[0] : NULL);
	if (!m)
		return PMIX_ERR_NOMEM;
	m->nprocs = nprocs;
	/* the library's buffer is its own once we return */
	if (ndata && !(m->data = malloc(ndata))) {
		free(m);
		return PMIX_ERR_NOMEM;
	}
	if (ndata)
		memcpy(m->data, data, ndata);
	m->ndata = ndata;
	m->mdxcb = cbfunc;
	m->cbdata = cbdata;
	return post(m);
}

/* Every fence collects every node's data (Open MPI 4.1's default: its
 * modex fence in MPI_Init asks for it), so the library already has all a
 * rank can get: what it lacks, nobody put. */
static pmix_status_t up_dmodex(const pmix_proc_t *proc, const pmix_info_t info[], size_t ninfo,
			       pmix_modex_cbfunc_t cbfunc, void *cbdata)
{
	(void)proc;
	(void)info;
	(void)ninfo;
	(void)cbfunc;
	(void)cbdata;
	return PMIX_ERR_NOT_FOUND;
}

static pmix_server_module_t module = {
	.client_connected = up_connected,
	.client_finalized = up_finalized,
	.abort = up_abort,
	.fence_nb = up_fence,
	.direct_modex = up_dmodex,
};

/* ---- the daemon's loop */

static struct nd_job *find_job(struct nd *nd, const pmix_proc_t *proc)
{
	size_t n = strlen(NSPACE_PREFIX);
	if (strncmp(proc->nspace, NSPACE_PREFIX, n))
		return NULL;
	char *end;
	errno = 0;
	uint64_t id = strtoull(proc->nspace + n, &end, 10);
	if (errno || *end)
		return NULL;
	for (struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->id == id && j->mpi == STORM__JOB__MPI__MPI_PMIX && j->pmi)
			return j;
	return NULL;
}

static void fenced(struct nd *nd, uint64_t job, int err, const uint8_t *recs, size_t len,
		   void *arg)
{
	(void)nd;
	struct pxfence *f = arg;
	if (err) {
		if (err != -ECANCELED)
			slog("job %" PRIu64 ": its PMIx fence failed: %s", job, strerror(-err));
		f->cb(PMIX_ERROR, NULL, 0, f->cbdata, NULL, NULL);
		free(f);
		return;
	}
	/* every node's blob, one after the other: the library unpacks them
	 * in turn, as from any other host's collective */
	size_t total = 0, off = 0;
	uint32_t pos, dl;
	const uint8_t *d;
	while (pmi_xrec_next(recs, len, &off, &pos, &d, &dl) == 1)
		total += dl;
	char *all = malloc(total ? total : 1);
	if (!all) {
		f->cb(PMIX_ERR_NOMEM, NULL, 0, f->cbdata, NULL, NULL);
		free(f);
		return;
	}
	size_t at = 0;
	off = 0;
	while (pmi_xrec_next(recs, len, &off, &pos, &d, &dl) == 1) {
		memcpy(all + at, d, dl);
		at += dl;
	}
	/* the library frees it (free is thread-safe) once it has stored it */
	f->cb(PMIX_SUCCESS, all, total, f->cbdata, free, all);
	free(f);
}

static void do_fence(struct nd *nd, struct nd_job *job, struct pxmsg *m)
{
	struct pxjob *pj = job->pmi;
	/* the k-th exchange of a job is the same on every node: only fences
	 * of the whole job keep that true */
	if (m->nprocs != 1 || m->proc.rank != PMIX_RANK_WILDCARD ||
	    !PMIX_CHECK_NSPACE(m->proc.nspace, pj->nspace)) {
		slog("job %" PRIu64 ": a PMIx fence over part of the job, which storm does not "
		     "serve", job->id);
		m->mdxcb(PMIX_ERR_NOT_SUPPORTED, NULL, 0, m->cbdata, NULL, NULL);
		return;
	}
	struct pxfence *f = malloc(sizeof(*f));
	if (!f) {
		m->mdxcb(PMIX_ERR_NOMEM, NULL, 0, m->cbdata, NULL, NULL);
		return;
	}
	f->cb = m->mdxcb;
	f->cbdata = m->cbdata;
	int rc = xchg_start(nd, job->id, m->data ? m->data : "", m->ndata, fenced, f);
	if (rc < 0) {
		slog("job %" PRIu64 ": cannot start its PMIx fence: %s", job->id, strerror(-rc));
		m->mdxcb(PMIX_ERROR, NULL, 0, m->cbdata, NULL, NULL);
		free(f);
	}
}

static void do_abort(struct nd *nd, struct nd_job *job, struct pxmsg *m)
{
	nd_queue_abort(nd, job->id, m->proc.rank, m->status);
	xchg_abort(nd, job->id, m->proc.rank, m->status);
	/* released, the rank exits with its code; the MM ends the rest */
	if (m->opcb)
		m->opcb(PMIX_SUCCESS, m->cbdata);
}

static void dispatch(struct nd *nd, struct pxmsg *m)
{
	struct nd_job *job = find_job(nd, &m->proc);
	if (!job) {
		/* a job that ended here while its message waited */
		if (m->kind == PX_FENCE) {
			slog("a PMIx fence for namespace '%.*s', no job here; refused",
			     (int)sizeof(m->proc.nspace), m->proc.nspace);
			m->mdxcb(PMIX_ERR_NOT_FOUND, NULL, 0, m->cbdata, NULL, NULL);
		} else if (m->opcb) {
			m->opcb(m->kind == PX_ABORT ? PMIX_ERR_NOT_FOUND : PMIX_SUCCESS, m->cbdata);
		}
		return;
	}
	struct pxjob *pj = job->pmi;
	pj->connected += m->kind == PX_CONNECTED;
	pj->finalized += m->kind == PX_FINALIZED;
	pj->fences += m->kind == PX_FENCE;
	switch (m->kind) {
	case PX_CONNECTED:
	case PX_FINALIZED:
		if (m->opcb)
			m->opcb(PMIX_SUCCESS, m->cbdata);
		break;
	case PX_ABORT:
		do_abort(nd, job, m);
		break;
	case PX_FENCE:
		do_fence(nd, job, m);
		break;
	}
}

static void on_queue(void *arg, uint32_t events)
{
	struct nd *nd = arg;
	struct nd_pmix *px = nd->pmix;
	(void)events;
	uint64_t n;
	ssize_t r = read(px->efd, &n, sizeof(n));
	(void)r; /* nonblocking: nothing to read means another turn took it */
	pthread_mutex_lock(&px->mu);
	struct pxmsg *m = px->head;
	px->head = px->tail = NULL;
	pthread_mutex_unlock(&px->mu);
	while (m) {
		struct pxmsg *next = m->next;
		dispatch(nd, m);
		free(m->text);
		free(m->data);
		free(m);
		m = next;
	}
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	if (ftw->level > 0)
		remove(path);
	return 0;
}

/* The library's server, started on the first job that needs it. */
static int server_up(struct nd *nd)
{
	if (nd->pmix)
		return 0;
	struct nd_pmix *px = calloc(1, sizeof(*px));
	if (!px)
		return -ENOMEM;
	pthread_mutex_init(&px->mu, NULL);
	pthread_cond_init(&px->cv, NULL);
	/* this daemon's own directory: daemons sharing a host (the virtual
	 * cluster) share its host name, which the library's file names carry */
	snprintf(px->dir, sizeof(px->dir), "%s/pmix", nd->state_dir);
	if (mkdir(px->dir, 0755) < 0 && errno != EEXIST) {
		int e = errno;
		slog("cannot create the PMIx server's directory %s: %s", px->dir, strerror(e));
		free(px);
		return -e;
	}
	chmod(px->dir, 0755); /* ranks of every user read the library's files here */
	nftw(px->dir, remove_entry, 16, FTW_DEPTH | FTW_PHYS); /* a previous run's */
	px->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (px->efd < 0 || ev_io_add(nd->loop, px->efd, EPOLLIN, on_queue, nd) < 0) {
		int e = errno;
		if (px->efd >= 0)
			close(px->efd);
		free(px);
		return -e;
	}
	nd->pmix = px;
	g_px = px;

	void *l = PMIx_Info_list_start();
	bool no = false;
	pmix_rank_t me = nd->index;
	PMIx_Info_list_add(l, PMIX_SERVER_TMPDIR, px->dir, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_SYSTEM_TMPDIR, px->dir, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_SERVER_TOOL_SUPPORT, &no, PMIX_BOOL);
	PMIx_Info_list_add(l, PMIX_SERVER_SYSTEM_SUPPORT, &no, PMIX_BOOL);
	PMIx_Info_list_add(l, PMIX_SERVER_RANK, &me, PMIX_PROC_RANK);
	/* the node's name in storm.conf, as the node maps below name it */
	PMIx_Info_list_add(l, PMIX_HOSTNAME, nd->name, PMIX_STRING);
	pmix_data_array_t da = PMIX_DATA_ARRAY_STATIC_INIT;
	pmix_status_t rc = PMIx_Info_list_convert(l, &da);
	PMIx_Info_list_release(l);
	if (rc == PMIX_SUCCESS) {
		/* its progress thread serves every fence and job end the
		 * daemon waits for: favoured as the daemon is */
		struct server_init si = {&module, &da};
		rc = rt_threads_favoured(server_init, &si);
	}
	PMIx_Data_array_destruct(&da);
	if (rc != PMIX_SUCCESS) {
		slog("cannot start the PMIx server: %s", PMIx_Error_string(rc));
		g_px = NULL;
		nd->pmix = NULL;
		ev_io_del(nd->loop, px->efd);
		close(px->efd);
		free(px);
		return -EIO;
	}
	slog("PMIx server up (%s), files in %s", PMIx_Get_version(), px->dir);
	return 0;
}

/* A request to the library the daemon waits for, answered on its thread. */
struct pxop {
	struct nd_pmix *px;
	bool done;
};

static void op_done(pmix_status_t status, void *arg)
{
	struct pxop *op = arg;
	(void)status;
	pthread_mutex_lock(&op->px->mu);
	op->done = true;
	pthread_cond_broadcast(&op->px->cv);
	pthread_mutex_unlock(&op->px->mu);
}

static void op_wait(struct pxop *op)
{
	pthread_mutex_lock(&op->px->mu);
	while (!op->done)
		pthread_cond_wait(&op->px->cv, &op->px->mu);
	pthread_mutex_unlock(&op->px->mu);
}

/* test hook pmix_late_eof: on the library's thread, which stays here until
 * hold_release */
static void hold_here(pmix_status_t status, void *arg)
{
	struct nd_pmix *px = arg;
	(void)status;
	pthread_mutex_lock(&px->mu);
	px->hold = HOLD_ON;
	pthread_cond_broadcast(&px->cv);
	while (px->hold == HOLD_ON)
		pthread_cond_wait(&px->cv, &px->mu);
	px->hold = HOLD_NONE;
	pthread_mutex_unlock(&px->mu);
}

static void hold_release(struct nd_pmix *px)
{
	pthread_mutex_lock(&px->mu);
	if (px->hold == HOLD_ON) {
		px->hold = HOLD_OFF;
		pthread_cond_broadcast(&px->cv);
	}
	pthread_mutex_unlock(&px->mu);
}

/* Test hook pmix_late_eof: from the signal to a job's ranks until the
 * daemon has asked the library to forget the job (pmix_job_end), the
 * library's thread stands still, so it reads the ranks' dropped
 * connections only after the daemon's requests: the order a loaded machine
 * gives at times, made certain. The daemon must call nothing that waits for
 * that thread meanwhile (no job may start here). */
void pmix_test_hold(struct nd *nd, struct nd_job *job)
{
	struct nd_pmix *px = nd->pmix;
	if (!px || !job->pmi || !fault_value(&nd->fault, "pmix_late_eof"))
		return;
	pthread_mutex_lock(&px->mu);
	if (px->hold != HOLD_NONE) {
		pthread_mutex_unlock(&px->mu);
		return;
	}
	px->hold = HOLD_ASKED;
	pthread_mutex_unlock(&px->mu);
	/* any request the library answers on its thread will do: a rank it
	 * never knew costs it nothing */
	pmix_proc_t nobody;
	PMIX_LOAD_PROCID(&nobody, NSPACE_PREFIX "hold", 0);
	PMIx_server_deregister_client(&nobody, hold_here, px);
	pthread_mutex_lock(&px->mu);
	while (px->hold == HOLD_ASKED)
		pthread_cond_wait(&px->cv, &px->mu);
	pthread_mutex_unlock(&px->mu);
	slog("test hook pmix_late_eof: job %" PRIu64 ": the PMIx library's thread held until "
	     "the job's end here", job->id);
}

void pmix_dump(const struct nd *nd)
{
	struct nd_pmix *px = nd->pmix;
	if (!px)
		return;
	unsigned queued = 0;
	pthread_mutex_lock(&px->mu);
	for (const struct pxmsg *m = px->head; m; m = m->next)
		queued++;
	pthread_mutex_unlock(&px->mu);
	slog("  PMIx server: %u requests queued for the loop", queued);
	for (const struct nd_job *j = nd->jobs; j; j = j->next) {
		const struct pxjob *pj = j->mpi == STORM__JOB__MPI__MPI_PMIX ? j->pmi : NULL;
		if (pj)
			slog("    job %" PRIu64 ": %u local ranks, %u connected, %u finalized, %u "
			     "fences asked for", j->id, pj->nlocal, pj->connected, pj->finalized,
			     pj->fences);
	}
}

int pmix_init(struct nd *nd)
{
	nd->pmix = NULL; /* server_up, with the first job */
	return 0;
}

void pmix_close(struct nd *nd)
{
	struct nd_pmix *px = nd->pmix;
	if (!px)
		return;
	hold_release(px);
	PMIx_server_finalize(); /* joins its thread: no upcall after this */
	g_px = NULL;
	ev_io_del(nd->loop, px->efd);
	close(px->efd);
	while (px->head) {
		struct pxmsg *m = px->head;
		px->head = m->next;
		free(m->text);
		free(m->data);
		free(m);
	}
	pthread_cond_destroy(&px->cv);
	pthread_mutex_destroy(&px->mu);
	free(px);
	nd->pmix = NULL;
}

/* ---- jobs */

/* What Open MPI 4.1 needs besides PMIx's own entries. Its launch-
 * environment check (schizo) knows only the launchers it names (Slurm,
 * Flux...) and takes any other process for a singleton: without its orte
 * component and with ess = pmi, it starts from this server instead.
 * Storm places and gang-schedules the ranks: Open MPI binds none of them
 * (as under Flux). Ranks on other nodes are reached over TCP (pml ob1, btl
 * tcp): UCX, which Open MPI prefers when present, would take two nodes of
 * one host (the virtual cluster's network namespaces) for one and try
 * shared memory or loopback between them. The shared-memory btl (vader)
 * names its segments in /dev/shm after the host name, the same on such
 * nodes: the job directory, private to the node, holds them instead.
 * An OMPI_MCA_ setting in the job's own environment wins. */
static const char *const ompi_fixed[][2] = {
	{"OMPI_MCA_ess", "pmi"},
	{"OMPI_MCA_schizo", "^orte"},
	{"OMPI_MCA_hwloc_base_binding_policy", "none"},
	{"OMPI_MCA_orte_externally_bound", "1"},
	{"OMPI_MCA_pml", "ob1"},
	{"OMPI_MCA_btl", "self,vader,tcp"},
	{"OMPI_MCA_btl_vader_backing_directory", NULL}, /* the job directory */
};
#define OMPI_NENV (sizeof(ompi_fixed) / sizeof(ompi_fixed[0]))

static int ompi_env(const struct pxjob *pj, char **out)
{
	size_t n = 0;
	for (size_t i = 0; i < OMPI_NENV; i++) {
		if (pj->user_env & (1u << i))
			continue;
		const char *v = ompi_fixed[i][1] ? ompi_fixed[i][1] : pj->job->dir;
		size_t l = strlen(ompi_fixed[i][0]) + strlen(v) + 2;
		char *s = malloc(l);
		if (!s) {
			while (n)
				free(out[--n]);
			return -1;
		}
		snprintf(s, l, "%s=%s", ompi_fixed[i][0], v);
		out[n++] = s;
	}
	return (int)n;
}

static bool env_has(const Storm__Cl__Command *cmd, const char *name)
{
	const Storm__Job__Spec *s = cmd->launch->spec;
	size_t n = strlen(name);
	for (size_t i = 0; i < s->n_env; i++)
		if (!strncmp(s->env[i], name, n) && s->env[i][n] == '=')
			return true;
	return false;
}

/* The names joined by sep, or NULL. */
static char *join(char **parts, size_t n, char sep)
{
	size_t len = 1;
	for (size_t i = 0; i < n; i++)
		len += strlen(parts[i]) + 1;
	char *s = malloc(len), *p = s;
	if (!s)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		size_t l = strlen(parts[i]);
		memcpy(p, parts[i], l);
		p += l;
		if (i + 1 < n)
			*p++ = sep;
	}
	*p = '\0';
	return s;
}

/* "a,b,...": ranks first..first+count-1 */
static int rank_list(char **out, uint32_t first, uint32_t count)
{
	size_t cap = (size_t)count * 11 + 1;
	char *s = malloc(cap);
	if (!s)
		return -1;
	size_t at = 0;
	s[0] = '\0';
	for (uint32_t r = 0; r < count; r++)
		at += (size_t)snprintf(s + at, cap - at, r ? ",%u" : "%u", first + r);
	*out = s;
	return 0;
}

/* What Open MPI 4.1 reads when a foreign PMIx server launched it (its ess
 * pmi component: sizes, local and node ranks, local peers, session
 * directories), as Slurm's PMIx plugin gives it. */
static int job_info(struct nd *nd, struct pxjob *pj, const Storm__Cl__Command *cmd, size_t k,
		    void *l)
{
	const Storm__Cl__Launch *L = cmd->launch;
	size_t nn = cmd->n_nodes;
	char **names = calloc(nn ? nn : 1, sizeof(*names));
	char **ppn = calloc(nn ? nn : 1, sizeof(*ppn));
	char *nodes = NULL, *ranks = NULL, *node_map = NULL, *proc_map = NULL, *peers = NULL;
	int rc = -ENOMEM;
	if (!names || !ppn)
		goto out;
	for (size_t i = 0; i < nn; i++) {
		if (cmd->nodes[i] >= (uint32_t)nd->conf.nnodes || i >= L->n_rank_count ||
		    i >= L->n_first_rank) {
			rc = -EINVAL;
			goto out;
		}
		names[i] = nd->conf.nodes[cmd->nodes[i]];
		if (rank_list(&ppn[i], L->first_rank[i], L->rank_count[i]) < 0)
			goto out;
	}
	if (!(nodes = join(names, nn, ',')) || !(ranks = join(ppn, nn, ';')))
		goto out;
	if (PMIx_generate_regex(nodes, &node_map) != PMIX_SUCCESS ||
	    PMIx_generate_ppn(ranks, &proc_map) != PMIX_SUCCESS) {
		rc = -EINVAL;
		goto out;
	}
	if (rank_list(&peers, pj->first, pj->nlocal) < 0)
		goto out;

	char jobid[32];
	jobid_format(L->job, L->spec->array_job, L->spec->array_task, jobid, sizeof(jobid));
	uint32_t u, zero = 0, one = 1, nodeid = (uint32_t)k, nnodes = (uint32_t)nn;
	bool yes = true, no = false;
	pmix_rank_t ldr = pj->first;
	PMIx_Info_list_add(l, PMIX_JOBID, jobid, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_UNIV_SIZE, &pj->size, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_JOB_SIZE, &pj->size, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_MAX_PROCS, &pj->size, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_JOB_NUM_APPS, &one, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_APPNUM, &zero, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_NUM_NODES, &nnodes, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_NODEID, &nodeid, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_LOCAL_SIZE, &pj->nlocal, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_NODE_SIZE, &pj->nlocal, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_LOCAL_PEERS, peers, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_LOCALLDR, &ldr, PMIX_PROC_RANK);
	PMIx_Info_list_add(l, PMIX_NODE_MAP, node_map, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_PROC_MAP, proc_map, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_SPAWNED, &no, PMIX_BOOL);
	/* the job directory: private to the job and this node, removed by
	 * the daemon at the job's end (so Open MPI need not clean it) */
	PMIx_Info_list_add(l, PMIX_TMPDIR, pj->job->dir, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_NSDIR, pj->job->dir, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_PROCDIR, pj->job->dir, PMIX_STRING);
	PMIx_Info_list_add(l, PMIX_TDIR_RMCLEAN, &yes, PMIX_BOOL);
	PMIx_Info_list_add(l, PMIX_USERID, &pj->uid, PMIX_UINT32);
	PMIx_Info_list_add(l, PMIX_GRPID, &pj->gid, PMIX_UINT32);

	/* per rank: where it is and its place there (ranks go in blocks) */
	for (size_t i = 0; i < nn; i++)
		for (uint32_t r = 0; r < L->rank_count[i]; r++) {
			void *pl = PMIx_Info_list_start();
			pmix_rank_t rank = L->first_rank[i] + r;
			uint16_t lr = (uint16_t)r;
			u = (uint32_t)i;
			PMIx_Info_list_add(pl, PMIX_RANK, &rank, PMIX_PROC_RANK);
			PMIx_Info_list_add(pl, PMIX_LOCAL_RANK, &lr, PMIX_UINT16);
			PMIx_Info_list_add(pl, PMIX_NODE_RANK, &lr, PMIX_UINT16);
			PMIx_Info_list_add(pl, PMIX_NODEID, &u, PMIX_UINT32);
			PMIx_Info_list_add(pl, PMIX_HOSTNAME, names[i], PMIX_STRING);
			PMIx_Info_list_add(pl, PMIX_APPNUM, &zero, PMIX_UINT32);
			PMIx_Info_list_add(pl, PMIX_GLOBAL_RANK, &rank, PMIX_PROC_RANK);
			PMIx_Info_list_add(pl, PMIX_APP_RANK, &rank, PMIX_PROC_RANK);
			pmix_data_array_t da = PMIX_DATA_ARRAY_STATIC_INIT;
			pmix_status_t s = PMIx_Info_list_convert(pl, &da);
			PMIx_Info_list_release(pl);
			if (s == PMIX_SUCCESS)
				s = PMIx_Info_list_add(l, PMIX_PROC_INFO_ARRAY, &da, PMIX_DATA_ARRAY);
			PMIx_Data_array_destruct(&da);
			if (s != PMIX_SUCCESS)
				goto out;
		}
	rc = 0;
out:
	if (ppn)
		for (size_t i = 0; i < nn; i++)
			free(ppn[i]);
	free(ppn);
	free(names);
	free(nodes);
	free(ranks);
	free(node_map);
	free(proc_map);
	free(peers);
	return rc;
}

static void job_free(struct pxjob *pj)
{
	if (pj->env)
		for (uint32_t i = 0; i < pj->nlocal; i++) {
			for (char **e = pj->env[i]; e && *e; e++)
				free(*e);
			free(pj->env[i]);
		}
	free(pj->env);
	free(pj->client);
	free(pj);
}

int pmix_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k)
{
	const Storm__Cl__Launch *L = cmd->launch;
	int rc = server_up(nd);
	if (rc < 0)
		return rc;
	struct pxjob *pj = calloc(1, sizeof(*pj));
	if (!pj)
		return -ENOMEM;
	pj->nd = nd;
	pj->job = job;
	pj->size = L->ranks;
	pj->first = L->first_rank[k];
	pj->nlocal = job->nranks;
	pj->uid = L->spec->uid;
	pj->gid = L->spec->gid;
	for (size_t i = 0; i < OMPI_NENV; i++)
		if (env_has(cmd, ompi_fixed[i][0]))
			pj->user_env |= 1u << i;
	snprintf(pj->nspace, sizeof(pj->nspace), NSPACE_PREFIX "%" PRIu64, job->id);
	pj->client = calloc(pj->nlocal ? pj->nlocal : 1, sizeof(*pj->client));
	pj->env = calloc(pj->nlocal ? pj->nlocal : 1, sizeof(*pj->env));
	if (!pj->client || !pj->env) {
		job_free(pj);
		return -ENOMEM;
	}
	job->pmi = pj;
	rc = xchg_job_launch(nd, job->id, cmd);
	if (rc < 0)
		return rc;

	void *l = PMIx_Info_list_start();
	rc = job_info(nd, pj, cmd, k, l);
	pmix_data_array_t da = PMIX_DATA_ARRAY_STATIC_INIT;
	if (rc == 0 && PMIx_Info_list_convert(l, &da) != PMIX_SUCCESS)
		rc = -ENOMEM;
	PMIx_Info_list_release(l);
	if (rc < 0) {
		PMIx_Data_array_destruct(&da);
		return rc;
	}
	/* blocks until the library's thread has it */
	pmix_status_t s = PMIx_server_register_nspace(pj->nspace, (int)pj->nlocal, da.array,
						      da.size, NULL, NULL);
	PMIx_Data_array_destruct(&da);
	if (s != PMIX_SUCCESS && s != PMIX_OPERATION_SUCCEEDED) {
		slog("job %" PRIu64 ": the PMIx server refuses its namespace: %s", job->id,
		     PMIx_Error_string(s));
		return -EINVAL;
	}
	pj->registered = true;
	return 0;
}

int pmix_rank_env(struct nd *nd, struct nd_job *job, uint32_t lr, char **env, size_t max,
		  int *fd)
{
	(void)nd;
	struct pxjob *pj = job->pmi;
	*fd = -1;
	if (!pj || !pj->registered || lr >= pj->nlocal)
		return -EINVAL;
	pmix_proc_t proc;
	PMIX_LOAD_PROCID(&proc, pj->nspace, pj->first + lr);
	if (!pj->client[lr]) {
		pmix_status_t s = PMIx_server_register_client(&proc, pj->uid, pj->gid, NULL, NULL,
							      NULL);
		if (s != PMIX_SUCCESS && s != PMIX_OPERATION_SUCCEEDED) {
			slog("job %" PRIu64 ": the PMIx server refuses rank %u: %s", job->id,
			     proc.rank, PMIx_Error_string(s));
			return -EINVAL;
		}
		pj->client[lr] = true;
	}
	char **pe = NULL;
	pmix_status_t s = PMIx_server_setup_fork(&proc, &pe);
	if (s != PMIX_SUCCESS) {
		slog("job %" PRIu64 ": no PMIx environment for rank %u: %s", job->id, proc.rank,
		     PMIx_Error_string(s));
		for (char **e = pe; e && *e; e++)
			free(*e);
		free(pe);
		return -EINVAL;
	}
	size_t n = 0;
	while (pe && pe[n])
		n++;
	/* the library's array is ours: kept, with Open MPI's entries, until
	 * the job ends */
	char **mine = calloc(n + OMPI_NENV + 1, sizeof(*mine));
	if (!mine) {
		for (size_t i = 0; i < n; i++)
			free(pe[i]);
		free(pe);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		mine[i] = pe[i];
	free(pe);
	int no = ompi_env(pj, mine + n);
	if (no < 0) {
		for (size_t i = 0; i < n; i++)
			free(mine[i]);
		free(mine);
		return -ENOMEM;
	}
	n += (size_t)no;
	for (char **e = pj->env[lr]; e && *e; e++) /* a second call replaces the first */
		free(*e);
	free(pj->env[lr]);
	pj->env[lr] = mine;
	if (n > max) {
		slog("job %" PRIu64 ": rank %u's PMIx environment has %zu entries, more than %zu",
		     job->id, proc.rank, n, max);
		return -E2BIG;
	}
	for (size_t i = 0; i < n; i++)
		env[i] = mine[i];
	return (int)n;
}

void pmix_job_end(struct nd *nd, struct nd_job *job)
{
	struct pxjob *pj = job->pmi;
	/* a fence still out hears it is cancelled: the library's callback is
	 * called before its namespace goes */
	xchg_job_end(nd, job->id);
	if (!pj)
		return;
	/* Only the namespace is deregistered, not its ranks: OpenPMIx 4.2
	 * closes a deregistered rank's socket but leaves the socket's read
	 * event registered with libevent, unless its own thread has already
	 * read the connection drop (the rank is gone by now, but on a loaded
	 * machine that thread may not have run since). epoll forgets the
	 * closed descriptor, libevent still counts it as watched, and the
	 * next rank accepted on the same number is never added to epoll: its
	 * first request after connecting goes unread and it waits in
	 * PMIx_Init for ever, on that descriptor number for the daemon's
	 * lifetime. Left alone, the library closes each socket itself, and
	 * deletes its event, when it reads the drop. `make pmix-repro` shows
	 * both with the library alone (tests/pmix/deregister_repro.c). */
	struct nd_pmix *px = nd->pmix;
	struct pxop op = {px, !pj->registered};
	if (pj->registered)
		PMIx_server_deregister_nspace(pj->nspace, op_done, &op);
	hold_release(px); /* after the request: its thread takes it first */
	op_wait(&op);
	job_free(pj);
	job->pmi = NULL;
}
