/* PMI-1's simple wire protocol, served to each rank on its own socket
 * (PMI_FD): what MPICH and the MPIs derived from it call to learn their
 * rank and size and to swap their business cards. A job's key-value space
 * lives in every node of the job: a rank's put is stored here at once, and
 * at a barrier (every local rank in it) this node's puts since the last
 * one go to every node through the job's exchange (pmi_xchg.c). */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "pmi.h"

struct p1kv {
	char *key, *val;
};

struct p1client {
	int fd, child_fd;      /* ours and the rank's end until its fork */
	bool in_barrier, closed;
	uint32_t lr;
	struct p1job *pj;
	char env[3][48];
	char buf[PMI_LINE_MAX + 1];
	size_t len;
};

struct p1job {
	struct nd *nd;
	struct nd_job *job;
	uint32_t size, first, nlocal, in_barrier;
	bool fencing;
	char kvsname[PMI_KVSNAME_MAX];
	struct p1kv *kv;
	size_t nkv, capkv;
	uint8_t *puts;         /* this node's puts since the last barrier */
	size_t puts_len, puts_cap;
	struct p1client *c;    /* per local rank */
};

static const char *kv_get(const struct p1job *pj, const char *key)
{
	for (size_t i = 0; i < pj->nkv; i++)
		if (!strcmp(pj->kv[i].key, key))
			return pj->kv[i].val;
	return NULL;
}

/* A later put of a key replaces it, as in MPICH's own process manager. */
static int kv_set(struct p1job *pj, const char *key, const char *val)
{
	for (size_t i = 0; i < pj->nkv; i++)
		if (!strcmp(pj->kv[i].key, key)) {
			char *v = strdup(val);
			if (!v)
				return -1;
			free(pj->kv[i].val);
			pj->kv[i].val = v;
			return 0;
		}
	if (pj->nkv == pj->capkv) {
		size_t c = pj->capkv ? pj->capkv * 2 : 64;
		struct p1kv *k = realloc(pj->kv, c * sizeof(*k));
		if (!k)
			return -1;
		pj->kv = k;
		pj->capkv = c;
	}
	char *k = strdup(key), *v = strdup(val);
	if (!k || !v) {
		free(k);
		free(v);
		return -1;
	}
	pj->kv[pj->nkv++] = (struct p1kv){k, v};
	return 0;
}

static void client_close(struct p1client *c)
{
	if (c->fd >= 0) {
		ev_io_del(c->pj->nd->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	c->closed = true;
}

/* Responses are a line each and the rank waits for each before its next
 * request, so the socket's buffer always has room: a short write means the
 * rank broke the protocol. */
static void reply(struct p1client *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reply(struct p1client *c, const char *fmt, ...)
{
	char line[PMI_LINE_MAX + 64];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n >= sizeof(line) || c->fd < 0)
		return;
	ssize_t w = send(c->fd, line, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
	if (w != n) {
		slog("job %" PRIu64 ": rank %u's PMI socket takes no reply; closed", c->pj->job->id,
		     c->pj->first + c->lr);
		client_close(c);
	}
}

static void fenced(struct nd *nd, uint64_t job, int err, const uint8_t *recs, size_t len,
		   void *arg)
{
	(void)nd;
	struct p1job *pj = arg;
	pj->fencing = false;
	if (err) {
		if (err != -ECANCELED)
			for (uint32_t lr = 0; lr < pj->nlocal; lr++)
				if (pj->c[lr].in_barrier)
					reply(&pj->c[lr], "cmd=barrier_out rc=-1\n");
		return;
	}
	size_t off = 0;
	uint32_t pos, dl;
	const uint8_t *d;
	int rc = 0;
	while (pmi_xrec_next(recs, len, &off, &pos, &d, &dl) == 1) {
		size_t o = 0;
		const char *k, *v;
		int r;
		while ((r = pmi_kv_next(d, dl, &o, &k, &v)) == 1)
			if (kv_set(pj, k, v) < 0)
				rc = -1;
		if (r < 0) {
			slog("job %" PRIu64 ": node %u's PMI puts are malformed", job, pos);
			rc = -1;
		}
	}
	pj->puts_len = 0;
	pj->in_barrier = 0;
	for (uint32_t lr = 0; lr < pj->nlocal; lr++)
		if (pj->c[lr].in_barrier) {
			pj->c[lr].in_barrier = false;
			reply(&pj->c[lr], "cmd=barrier_out rc=%d\n", rc);
		}
}

static void barrier_in(struct p1client *c)
{
	struct p1job *pj = c->pj;
	if (c->in_barrier)
		return;
	c->in_barrier = true;
	if (++pj->in_barrier < pj->nlocal)
		return;
	pj->fencing = true;
	int rc = xchg_start(pj->nd, pj->job->id, pj->puts, pj->puts_len, fenced, pj);
	if (rc < 0) {
		slog("job %" PRIu64 ": cannot start its PMI exchange: %s", pj->job->id,
		     strerror(-rc));
		fenced(pj->nd, pj->job->id, rc, NULL, 0, pj);
	}
}

static void request(struct p1client *c, const char *line)
{
	struct p1job *pj = c->pj;
	uint32_t rank = pj->first + c->lr;
	char key[PMI_KEY_MAX], val[PMI_VAL_MAX], name[PMI_KVSNAME_MAX];
	if (getenv("STORM_PMI_TRACE"))
		slog("job %" PRIu64 ": rank %u: PMI %.*s", pj->job->id, rank, (int)strcspn(line, "\n"),
		     line);
	if (pmi_wire_is(line, "init")) {
		char v[16], s[16];
		if (pmi_wire_field(line, "pmi_version", v, sizeof(v)) < 0 ||
		    pmi_wire_field(line, "pmi_subversion", s, sizeof(s)) < 0 || atoi(v) != 1)
			reply(c, "cmd=response_to_init rc=-1 pmi_version=1 pmi_subversion=1\n");
		else
			reply(c, "cmd=response_to_init rc=0 pmi_version=1 pmi_subversion=1\n");
	} else if (pmi_wire_is(line, "get_maxes")) {
		reply(c, "cmd=maxes rc=0 kvsname_max=%d keylen_max=%d vallen_max=%d\n",
		      PMI_KVSNAME_MAX, PMI_KEY_MAX, PMI_VAL_MAX);
	} else if (pmi_wire_is(line, "get_appnum")) {
		reply(c, "cmd=appnum rc=0 appnum=0\n");
	} else if (pmi_wire_is(line, "get_universe_size")) {
		reply(c, "cmd=universe_size rc=0 size=%u\n", pj->size);
	} else if (pmi_wire_is(line, "get_my_kvsname")) {
		reply(c, "cmd=my_kvsname rc=0 kvsname=%s\n", pj->kvsname);
	} else if (pmi_wire_is(line, "put")) {
		int r = pmi_wire_field(line, "kvsname", name, sizeof(name));
		if (r == 0)
			r = pmi_wire_field(line, "key", key, sizeof(key));
		if (r == 0)
			r = pmi_wire_field(line, "value", val, sizeof(val));
		if (r == 0 && strcmp(name, pj->kvsname))
			reply(c, "cmd=put_result rc=-1 msg=unknown_kvsname\n");
		else if (r == -2)
			reply(c, "cmd=put_result rc=-1 msg=too_long\n");
		else if (r < 0)
			reply(c, "cmd=put_result rc=-1 msg=missing_field\n");
		else if (kv_set(pj, key, val) < 0 ||
			 pmi_kv_append(&pj->puts, &pj->puts_len, &pj->puts_cap, key, val) < 0)
			reply(c, "cmd=put_result rc=-1 msg=out_of_memory\n");
		else
			reply(c, "cmd=put_result rc=0 msg=success\n");
	} else if (pmi_wire_is(line, "get")) {
		const char *v = NULL;
		if (pmi_wire_field(line, "key", key, sizeof(key)) == 0)
			v = kv_get(pj, key);
		if (v)
			reply(c, "cmd=get_result rc=0 msg=success value=%s\n", v);
		else
			reply(c, "cmd=get_result rc=-1 msg=key_not_found\n");
	} else if (pmi_wire_is(line, "barrier_in")) {
		barrier_in(c);
	} else if (pmi_wire_is(line, "finalize")) {
		reply(c, "cmd=finalize_ack rc=0\n");
	} else if (pmi_wire_is(line, "abort")) {
		char code[16] = "1";
		pmi_wire_field(line, "exitcode", code, sizeof(code));
		nd_queue_abort(pj->nd, pj->job->id, rank, atoi(code));
		xchg_abort(pj->nd, pj->job->id, rank, atoi(code));
	} else {
		/* spawn, publish and lookup are not served: say so, do not hang */
		char cmd[32] = "?";
		if (pmi_wire_field(line, "cmd", cmd, sizeof(cmd)) < 0)
			pmi_wire_field(line, "mcmd", cmd, sizeof(cmd));
		slog("job %" PRIu64 ": rank %u asked PMI for '%s', which storm does not serve",
		     pj->job->id, rank, cmd);
		reply(c, "cmd=%s_result rc=-1 msg=not_supported\n", cmd);
	}
}

static void on_readable(void *arg, uint32_t events)
{
	struct p1client *c = arg;
	(void)events;
	for (;;) {
		ssize_t n = read(c->fd, c->buf + c->len, sizeof(c->buf) - 1 - c->len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (n <= 0) {
			client_close(c); /* the rank exited or closed its end */
			return;
		}
		c->len += (size_t)n;
		c->buf[c->len] = '\0';
		char *nl;
		while (c->fd >= 0 && (nl = memchr(c->buf, '\n', c->len))) {
			size_t l = (size_t)(nl - c->buf) + 1;
			char line[PMI_LINE_MAX + 1];
			memcpy(line, c->buf, l);
			line[l] = '\0';
			memmove(c->buf, c->buf + l, c->len - l);
			c->len -= l;
			request(c, line);
		}
		if (c->fd >= 0 && c->len == sizeof(c->buf) - 1) {
			slog("job %" PRIu64 ": rank %u sent a PMI line over %d bytes; closed",
			     c->pj->job->id, c->pj->first + c->lr, PMI_LINE_MAX);
			client_close(c);
			return;
		}
	}
}

int pmi1_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k)
{
	const Storm__Cl__Launch *L = cmd->launch;
	struct p1job *pj = calloc(1, sizeof(*pj));
	if (!pj || !(pj->c = calloc(job->nranks ? job->nranks : 1, sizeof(*pj->c)))) {
		free(pj);
		return -ENOMEM;
	}
	pj->nd = nd;
	pj->job = job;
	pj->size = L->ranks;
	pj->first = L->first_rank[k];
	pj->nlocal = job->nranks;
	snprintf(pj->kvsname, sizeof(pj->kvsname), "storm_%" PRIu64, job->id);
	for (uint32_t i = 0; i < pj->nlocal; i++)
		pj->c[i] = (struct p1client){.fd = -1, .child_fd = -1, .lr = i, .pj = pj};
	job->pmi = pj;
	/* ranks are placed in blocks, node after node: MPICH learns from this
	 * which of them share memory */
	char map[PMI_VAL_MAX];
	int rc = 0;
	if (pmi_wire_mapping(L->rank_count, L->n_rank_count, map, sizeof(map)) >= 0)
		rc = kv_set(pj, "PMI_process_mapping", map);
	if (rc < 0)
		return -ENOMEM;
	return xchg_job_launch(nd, job->id, cmd);
}

int pmi1_rank_env(struct nd *nd, struct nd_job *job, uint32_t lr, char **env, size_t max,
		  int *fd)
{
	struct p1job *pj = job->pmi;
	if (!pj || lr >= pj->nlocal || max < 3)
		return -EINVAL;
	struct p1client *c = &pj->c[lr];
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, sv) < 0)
		return -errno;
	/* the rank's end blocks: PMI clients read their replies with read(2) */
	fcntl(sv[1], F_SETFL, fcntl(sv[1], F_GETFL) & ~O_NONBLOCK);
	if (ev_io_add(nd->loop, sv[0], EPOLLIN, on_readable, c) < 0) {
		int e = errno;
		close(sv[0]);
		close(sv[1]);
		return -e;
	}
	c->fd = sv[0];
	c->child_fd = sv[1];
	snprintf(c->env[0], sizeof(c->env[0]), "PMI_FD=3");
	snprintf(c->env[1], sizeof(c->env[1]), "PMI_RANK=%u", pj->first + lr);
	snprintf(c->env[2], sizeof(c->env[2]), "PMI_SIZE=%u", pj->size);
	for (int i = 0; i < 3; i++)
		env[i] = c->env[i];
	*fd = sv[1];
	return 3;
}

void pmi1_rank_forked(struct nd *nd, struct nd_job *job, uint32_t lr)
{
	(void)nd;
	struct p1job *pj = job->pmi;
	if (pj && lr < pj->nlocal && pj->c[lr].child_fd >= 0) {
		close(pj->c[lr].child_fd);
		pj->c[lr].child_fd = -1;
	}
}

void pmi1_job_end(struct nd *nd, struct nd_job *job)
{
	struct p1job *pj = job->pmi;
	xchg_job_end(nd, job->id); /* a fence still out hears it is cancelled */
	if (!pj)
		return;
	for (uint32_t i = 0; i < pj->nlocal; i++) {
		client_close(&pj->c[i]);
		if (pj->c[i].child_fd >= 0)
			close(pj->c[i].child_fd);
	}
	for (size_t i = 0; i < pj->nkv; i++) {
		free(pj->kv[i].key);
		free(pj->kv[i].val);
	}
	free(pj->kv);
	free(pj->puts);
	free(pj->c);
	free(pj);
	job->pmi = NULL;
}
