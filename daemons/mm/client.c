/* The control socket: one connection per CLI invocation, requests in,
 * replies out, never blocking the loop on a slow or hostile client. */
#include "mm.h"

#include <errno.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

static void update_epoll(struct mm *mm, struct client *c)
{
	struct epoll_event ev = { .events = EPOLLIN | (c->out_len ? EPOLLOUT : 0),
				  .data.u64 = (uint64_t)(uintptr_t)c };
	epoll_ctl(mm->epfd, EPOLL_CTL_MOD, c->fd, &ev);
}

int client_accept(struct mm *mm)
{
	int fd = accept4(mm->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return 0;
	struct ucred cr;
	socklen_t crlen = sizeof(cr);
	struct client *c = calloc(1, sizeof(*c));
	if (!c || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0) {
		free(c);
		close(fd);
		return 1;
	}
	c->fd = fd;
	ctl_session_init(&c->sess, true, mm->conf.munge_socket, 0);
	c->uid = cr.uid;
	c->gid = cr.gid;
	c->pid = cr.pid;
	struct epoll_event ev = { .events = EPOLLIN, .data.u64 = (uint64_t)(uintptr_t)c };
	if (epoll_ctl(mm->epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		free(c);
		close(fd);
		return 1;
	}
	c->next = mm->clients;
	mm->clients = c;
	return 1;
}

static void flush(struct mm *mm, struct client *c)
{
	while (c->out_len) {
		ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				client_close(mm, c);
			break;
		}
		memmove(c->out, c->out + n, c->out_len - (size_t)n);
		c->out_len -= (size_t)n;
	}
	if (c->fd < 0)
		return;
	if (!c->out_len && c->closing)
		client_close(mm, c);
	else
		update_epoll(mm, c);
}

void client_send(struct mm *mm, struct client *c, const Storm__Ctl__Reply *r)
{
	if (c->fd < 0)
		return;
	size_t plen = storm__ctl__reply__get_packed_size(r);
	uint8_t *packed = malloc(plen ? plen : 1), *env = NULL;
	size_t len = 0;
	char err[256];
	if (!packed) {
		client_close(mm, c);
		return;
	}
	storm__ctl__reply__pack(r, packed);
	int rc = ctl_auth_wrap(&c->sess, packed, plen, &env, &len, err, sizeof(err));
	free(packed);
	if (rc < 0) {
		slog("reply to uid %u: %s", (unsigned)c->uid, err);
		client_close(mm, c);
		return;
	}
	if (c->out_len + 4 + len > c->out_cap) {
		size_t cap = c->out_cap ? c->out_cap : 4096;
		while (cap < c->out_len + 4 + len)
			cap *= 2;
		uint8_t *nb = realloc(c->out, cap);
		if (!nb) {
			free(env);
			client_close(mm, c);
			return;
		}
		c->out = nb;
		c->out_cap = cap;
	}
	uint8_t *p = c->out + c->out_len;
	p[0] = (uint8_t)(len >> 24);
	p[1] = (uint8_t)(len >> 16);
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	memcpy(p + 4, env, len);
	free(env);
	c->out_len += 4 + len;
	flush(mm, c);
}

void client_send_error(struct mm *mm, struct client *c, Storm__Ctl__ErrorCode code,
		       const char *fmt, ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	Storm__Ctl__Error e = STORM__CTL__ERROR__INIT;
	e.code = code;
	e.message = msg;
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	r.version = PROTO_VERSION;
	r.body_case = STORM__CTL__REPLY__BODY_ERROR;
	r.error = &e;
	client_send(mm, c, &r);
}

void client_finish(struct mm *mm, struct client *c)
{
	c->closing = true;
	flush(mm, c);
}

void client_close(struct mm *mm, struct client *c)
{
	if (c->fd >= 0) {
		epoll_ctl(mm->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
	}
	if (c->job) {
		struct job *j = c->job;
		c->job = NULL;
		j->client = NULL;
		job_client_gone(mm, j);
	}
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->ckpt_client == c)
			j->ckpt_client = NULL;
	frame_rx_reset(&c->rx);
	ctl_session_clear(&c->sess);
	/* freed by clients_reap: this loop turn may still hold events for it */
}

void clients_reap(struct mm *mm)
{
	for (struct client **pp = &mm->clients; *pp;) {
		struct client *c = *pp;
		if (c->fd >= 0) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		free(c->out);
		free(c);
	}
}

static void reply_status(struct mm *mm, struct client *c)
{
	Storm__Ctl__Status st = STORM__CTL__STATUS__INIT;
	st.cluster = mm->conf.name;
	st.nodes_total = (uint32_t)mm->conf.nnodes;
	st.nodes_up = (uint32_t)nodes_up(mm);
	st.slice = mm->slice;
	st.timeslice_us = mm->conf.timeslice_us;
	st.provider = (char *)sn_provider_name(mm->sn, 0);
	st.mm_pid = (uint32_t)getpid();
	st.mpl = mm->conf.mpl;
	st.quantum = mm->conf.quantum;
	st.policy = (char *)storm_policy_names[mm->conf.policy];
	for (struct job *j = mm->jobs; j; j = j->next) {
		bool launched = j->state == STORM__CTL__JOB_STATE__RUNNING;
		st.jobs_running += (launched && gang_runs_now(mm, j)) ||
				   j->state == STORM__CTL__JOB_STATE__LAUNCHING;
		st.jobs_suspended += launched && !gang_runs_now(mm, j);
		st.jobs_queued += j->state == STORM__CTL__JOB_STATE__QUEUED;
	}
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	r.version = PROTO_VERSION;
	r.body_case = STORM__CTL__REPLY__BODY_STATUS;
	r.status = &st;
	client_send(mm, c, &r);
}

void status_waiters_answer(struct mm *mm)
{
	bool all_up = nodes_up(mm) == mm->conf.nnodes;
	double now = clock_wall_s();
	for (struct client *c = mm->clients; c; c = c->next)
		if (c->fd >= 0 && c->status_deadline > 0 && (all_up || now >= c->status_deadline)) {
			c->status_deadline = 0;
			reply_status(mm, c);
		}
}

void clients_tick(struct mm *mm)
{
	status_waiters_answer(mm);
	clients_reap(mm);
}

static void reply_jobs(struct mm *mm, struct client *c, bool all)
{
	size_t n = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		n += all || job_active(j);
	Storm__Ctl__JobInfo *infos = calloc(n ? n : 1, sizeof(*infos));
	Storm__Ctl__JobInfo **ptrs = calloc(n ? n : 1, sizeof(*ptrs));
	if (!infos || !ptrs) {
		free(infos);
		free(ptrs);
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	size_t k = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		if (all || job_active(j)) {
			job_fill_info(mm, j, &infos[k]);
			ptrs[k] = &infos[k];
			k++;
		}
	Storm__Ctl__JobList jl = STORM__CTL__JOB_LIST__INIT;
	jl.jobs = ptrs;
	jl.n_jobs = n;
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	r.version = PROTO_VERSION;
	r.body_case = STORM__CTL__REPLY__BODY_JOBS;
	r.jobs = &jl;
	client_send(mm, c, &r);
	free(infos);
	free(ptrs);
}

int nodes_up(const struct mm *mm)
{
	int up = 0;
	for (int i = 0; i < mm->conf.nnodes; i++)
		up += mm->nodes[i].state == STORM__CTL__NODE_STATE__UP;
	return up;
}

static void reply_matrix(struct mm *mm, struct client *c)
{
	size_t nn = (size_t)mm->conf.nnodes, mpl = mm->conf.mpl, nj = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		nj += job_active(j);
	uint64_t *cells = calloc(nn * mpl, sizeof(*cells));
	Storm__Ctl__NodeState *states = calloc(nn, sizeof(*states));
	Storm__Ctl__JobInfo *infos = calloc(nj ? nj : 1, sizeof(*infos));
	Storm__Ctl__JobInfo **ptrs = calloc(nj ? nj : 1, sizeof(*ptrs));
	char **names = calloc(nn, sizeof(*names));
	if (!cells || !states || !infos || !ptrs || !names) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		goto out;
	}
	for (size_t r = 0; r < mpl; r++)
		for (size_t p = 0; p < nn; p++)
			cells[r * nn + p] = matrix_at(&mm->matrix, (int)r, (int)p);
	for (size_t p = 0; p < nn; p++) {
		states[p] = mm->nodes[p].state;
		names[p] = mm->conf.nodes[p];
	}
	size_t k = 0;
	for (struct job *j = mm->jobs; j; j = j->next)
		if (job_active(j)) {
			job_fill_info(mm, j, &infos[k]);
			ptrs[k] = &infos[k];
			k++;
		}
	Storm__Ctl__Matrix m = STORM__CTL__MATRIX__INIT;
	m.mpl = (uint32_t)mpl;
	m.nodes = names;
	m.n_nodes = nn;
	m.cells = cells;
	m.n_cells = nn * mpl;
	m.node_states = states;
	m.n_node_states = nn;
	m.row = mm->row;
	m.slice = mm->slice;
	m.timeslice_us = mm->conf.timeslice_us;
	m.quantum = mm->conf.quantum;
	m.policy = (char *)storm_policy_names[mm->conf.policy];
	m.switches = mm->switches;
	m.jobs = ptrs;
	m.n_jobs = k;
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	r.version = PROTO_VERSION;
	r.body_case = STORM__CTL__REPLY__BODY_MATRIX;
	r.matrix = &m;
	client_send(mm, c, &r);
out:
	free(names);
	free(cells);
	free(states);
	free(infos);
	free(ptrs);
}

static void reply_nodes(struct mm *mm, struct client *c)
{
	size_t n = (size_t)mm->conf.nnodes;
	Storm__Ctl__NodeInfo *infos = calloc(n, sizeof(*infos));
	Storm__Ctl__NodeInfo **ptrs = calloc(n, sizeof(*ptrs));
	uint64_t *jobs = calloc(n * mm->conf.mpl, sizeof(*jobs));
	if (!infos || !ptrs || !jobs) {
		free(infos);
		free(ptrs);
		free(jobs);
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INTERNAL, "out of memory");
		return;
	}
	double now = clock_wall_s();
	for (size_t i = 0; i < n; i++) {
		struct mm_node *nd = &mm->nodes[i];
		storm__ctl__node_info__init(&infos[i]);
		infos[i].name = mm->conf.nodes[i];
		infos[i].state = nd->state;
		infos[i].cpus = mm->conf.cpus;
		/* one job per row at most; an alternate copy is the same job */
		uint64_t *mine = &jobs[i * mm->conf.mpl];
		for (unsigned r = 0; r < mm->conf.mpl; r++) {
			uint64_t id = matrix_at(&mm->matrix, (int)r, (int)i);
			bool seen = false;
			for (size_t k = 0; k < infos[i].n_jobs; k++)
				seen |= mine[k] == id;
			if (id && !seen)
				mine[infos[i].n_jobs++] = id;
		}
		infos[i].jobs = mine;
		infos[i].last_heard = nd->heard_time > 0 ? now - nd->heard_time : -1;
		ptrs[i] = &infos[i];
	}
	Storm__Ctl__NodeList nl = STORM__CTL__NODE_LIST__INIT;
	nl.nodes = ptrs;
	nl.n_nodes = n;
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	r.version = PROTO_VERSION;
	r.body_case = STORM__CTL__REPLY__BODY_NODES;
	r.nodes = &nl;
	client_send(mm, c, &r);
	free(infos);
	free(ptrs);
	free(jobs);
}

static void handle_cancel(struct mm *mm, struct client *c, const Storm__Ctl__Cancel *cn)
{
	struct job *j = job_find(mm, cn->job);
	if (!j) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_NOT_FOUND, "no job %llu",
				  (unsigned long long)cn->job);
		return;
	}
	char why[256];
	if (!mm_may_touch(c, j, "cancel", why, sizeof(why))) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION, "%s", why);
		return;
	}
	if (!job_active(j)) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
				  "job %llu has already ended", (unsigned long long)j->id);
		return;
	}
	char who[96];
	if (mm_req_check_cancel(cn, who, sizeof(who)) != STORM__CTL__ERROR_CODE__ERR_NONE) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID, "%s", who);
		return;
	}
	struct passwd *pw = getpwuid(c->uid);
	snprintf(who, sizeof(who), "%s", pw ? pw->pw_name : "?");
	job_cancel(mm, j, cn->signal, who);
	Storm__Ctl__Cancelled ca = STORM__CTL__CANCELLED__INIT;
	ca.job = cn->job;
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	r.version = PROTO_VERSION;
	r.body_case = STORM__CTL__REPLY__BODY_CANCELLED;
	r.cancelled = &ca;
	client_send(mm, c, &r);
}

static void handle_shutdown(struct mm *mm, struct client *c)
{
	if (c->uid != 0 && c->uid != geteuid()) {
		client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PERMISSION,
				  "only root or the cluster's owner may shut it down");
		return;
	}
	slog("shutdown requested by uid %u", (unsigned)c->uid);
	mm_shutdown(mm, "the cluster was shut down");
	Storm__Ctl__ShuttingDown s = STORM__CTL__SHUTTING_DOWN__INIT;
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	r.version = PROTO_VERSION;
	r.body_case = STORM__CTL__REPLY__BODY_SHUTTING_DOWN;
	r.shutting_down = &s;
	client_send(mm, c, &r);
}

/* Checks the frame's credential or tag (common/ctl_auth.h) and points at the
 * request inside. false: refused, logged, answered, connection closing. */
static bool authenticate(struct mm *mm, struct client *c, const uint8_t **body, size_t *len)
{
	char err[256];
	bool plain, first = !c->sess.keyed;
	enum ctl_auth_fail f =
		ctl_auth_unwrap(&c->sess, c->rx.buf, c->rx.len, body, len, &plain, err, sizeof(err));
	if (f == CTL_AUTH_OK && first && c->sess.uid != c->uid) {
		/* a credential relayed by another local user: MUNGE vouches for
		 * who made it, the socket for who sent it, and they differ */
		snprintf(err, sizeof(err), "credential of uid %u sent by uid %u",
			 (unsigned)c->sess.uid, (unsigned)c->uid);
		f = CTL_AUTH_BAD_CRED;
		ctl_session_clear(&c->sess);
	}
	if (f == CTL_AUTH_OK) {
		c->gid = c->sess.gid; /* MUNGE's word, as the uid */
		return true;
	}
	slog_limited(&mm->rl_ctl, "refused a request from uid %u pid %d: %s", (unsigned)c->uid,
		       (int)c->pid, err);
	client_send_error(mm, c,
			  f == CTL_AUTH_UNAVAILABLE ? STORM__CTL__ERROR_CODE__ERR_INTERNAL
						    : STORM__CTL__ERROR_CODE__ERR_PERMISSION,
			  "request not authenticated: %s", err);
	client_finish(mm, c);
	return false;
}

static void handle(struct mm *mm, struct client *c)
{
	const uint8_t *body;
	size_t blen;
	if (!authenticate(mm, c, &body, &blen))
		return;
	Storm__Ctl__Request *req;
	char why[512];
	Storm__Ctl__ErrorCode code = mm_req_decode(body, blen, &req, why, sizeof(why));
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE) {
		client_send_error(mm, c, code, "%s", why);
		client_finish(mm, c);
		return;
	}
	switch (req->body_case) {
	case STORM__CTL__REQUEST__BODY_SUBMIT:
		if (mm->shutting_down) {
			client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_INVALID,
					  "the cluster is shutting down");
			break;
		}
		if (c->job) {
			/* the connection belongs to that job's end: a second one
			 * would leave the first pointing at a freed client */
			client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
					  "this connection already follows job %llu; one job per connection",
					  (unsigned long long)c->job->id);
			break;
		}
		job_submit(mm, c, req->submit, c->rx.fds, c->rx.nfds);
		break;
	case STORM__CTL__REQUEST__BODY_JOBS:
		reply_jobs(mm, c, req->jobs->all);
		break;
	case STORM__CTL__REQUEST__BODY_NODES:
		reply_nodes(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_CANCEL:
		handle_cancel(mm, c, req->cancel);
		break;
	case STORM__CTL__REQUEST__BODY_STATUS:
		if (req->status->wait_ms && nodes_up(mm) < mm->conf.nnodes)
			c->status_deadline = clock_wall_s() + req->status->wait_ms / 1000.0;
		else
			reply_status(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_MATRIX:
		reply_matrix(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_SHUTDOWN:
		handle_shutdown(mm, c);
		break;
	case STORM__CTL__REQUEST__BODY_CHECKPOINT:
	case STORM__CTL__REQUEST__BODY_RESTART:
	case STORM__CTL__REQUEST__BODY_CHECKPOINTS:
	case STORM__CTL__REQUEST__BODY_DELETE_CHECKPOINT:
		ckpt_handle_request(mm, c, req);
		break;
	case STORM__CTL__REQUEST__BODY_ACCT:
		persist_acct(mm, c, req->acct);
		break;
	default: /* mm_req_decode let no other body through */
		break;
	}
	storm__ctl__request__free_unpacked(req, NULL);
}

void client_on_io(struct mm *mm, struct client *c, uint32_t events)
{
	if (c->fd < 0)
		return;
	if (events & EPOLLOUT)
		flush(mm, c);
	if (c->fd < 0 || !(events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		return;
	for (;;) {
		if (c->closing) { /* ignore what follows a fatal error */
			char sink[4096];
			ssize_t n = recv(c->fd, sink, sizeof(sink), MSG_DONTWAIT);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				client_close(mm, c);
			return;
		}
		int rc = frame_rx_read(c->fd, &c->rx);
		if (rc == 0)
			return;
		if (rc < 0) {
			if (rc == -EMSGSIZE) {
				client_send_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
						  "request larger than %u bytes", FRAME_MAX);
				client_finish(mm, c);
				return;
			}
			client_close(mm, c);
			return;
		}
		handle(mm, c);
		frame_rx_reset(&c->rx);
		if (c->fd < 0)
			return;
	}
}
