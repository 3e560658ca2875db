/* Registrations (bootstrap = mm, common/boot_wire.h): the node daemons
 * connect to mm_address, prove the cluster key, and hand in their fabric
 * addresses; the MM keeps the table, answers each with all of it and
 * pushes each change to the others. It never waits for a node: one that
 * has not registered is unreachable, and DOWN to membership (nodes.c). */
#include "mm.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <sodium.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_wire.h"
#include "frame.h"

enum stage { ST_HELLO, ST_REGISTER, ST_REGISTERED };

struct bconn {
	struct bconn *next;
	struct mm *mm;
	int fd;
	enum stage stage;
	int node;                /* index in conf.nodes, once named */
	char peer[64];           /* ip:port, for the log */
	uint8_t node_nonce[BOOT_NONCE_LEN], mm_nonce[BOOT_NONCE_LEN];
	struct ctl_session sess;
	struct frame_rx rx;
	uint8_t *out;
	size_t out_len, out_cap;
	bool closing;            /* close once out is sent */
};

struct mm_boot {
	int listen_fd;
	struct bconn *conns;
	struct boot_entry *table; /* by fabric id; nrails 0: not known */
};

static void bconn_close(struct mm *mm, struct bconn *c)
{
	if (c->fd < 0)
		return;
	ev_io_del(mm->loop, c->fd);
	close(c->fd);
	c->fd = -1;
	frame_rx_reset(&c->rx);
	ctl_session_clear(&c->sess);
	free(c->out);
	c->out = NULL;
	c->out_len = c->out_cap = 0;
	/* freed by boot_reap: this loop turn may still hold events for it */
}

static void boot_reap(struct mm_boot *b)
{
	for (struct bconn **pp = &b->conns; *pp;) {
		struct bconn *c = *pp;
		if (c->fd >= 0) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		free(c);
	}
}

static void bflush(struct mm *mm, struct bconn *c)
{
	while (c->out_len) {
		ssize_t n = send(c->fd, c->out, c->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN)
				bconn_close(mm, c);
			break;
		}
		memmove(c->out, c->out + n, c->out_len - (size_t)n);
		c->out_len -= (size_t)n;
	}
	if (c->fd < 0)
		return;
	if (!c->out_len && c->closing)
		bconn_close(mm, c);
	else
		ev_io_mod(mm->loop, c->fd, EPOLLIN | (c->out_len ? EPOLLOUT : 0));
}

/* Queues one framed envelope (taken: freed here). */
static void bsend_env(struct mm *mm, struct bconn *c, uint8_t *env, size_t len)
{
	if (!env || c->fd < 0) {
		free(env);
		if (c->fd >= 0)
			bconn_close(mm, c);
		return;
	}
	int qrc = frame_queue(&c->out, &c->out_len, &c->out_cap, env, len);
	free(env);
	if (qrc < 0) {
		bconn_close(mm, c);
		return;
	}
	bflush(mm, c);
}

/* Refuses: one line in the log, the reason to the daemon, then the end. */
__attribute__((format(printf, 3, 4))) static void refuse(struct mm *mm, struct bconn *c,
							 const char *fmt, ...)
{
	char text[BOOT_TEXT_MAX + 1];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	slog("refused a node daemon's registration from %s: %s", c->peer, text);
	uint8_t body[BOOT_TEXT_MAX + 8];
	int n = boot_enc_error(body, sizeof(body), text);
	size_t len = 0;
	uint8_t *env = n > 0 ? boot_plain(body, (size_t)n, &len) : NULL;
	if (env)
		bsend_env(mm, c, env, len);
	if (c->fd >= 0) {
		c->closing = true;
		bflush(mm, c);
	}
}

/* Sends a tagged TABLE of the given entries. */
static void send_table(struct mm *mm, struct bconn *c, const struct boot_entry *const *e,
		       uint32_t n)
{
	size_t cap = boot_table_max(n);
	uint8_t *body = malloc(cap);
	int len = body ? boot_enc_table(body, cap, e, n) : -ENOMEM;
	uint8_t *env = NULL;
	size_t elen = 0;
	char err[256];
	if (len < 0 || ctl_auth_wrap(&c->sess, body, (size_t)len, &env, &elen, err, sizeof(err))) {
		free(body);
		slog("node %s: cannot send the address table", mm->conf.nodes[c->node]);
		bconn_close(mm, c);
		return;
	}
	free(body);
	bsend_env(mm, c, env, elen);
}

static void send_whole_table(struct mm *mm, struct bconn *c)
{
	struct mm_boot *b = mm->boot;
	uint32_t n = (uint32_t)mm->conf.nnodes + 1, k = 0;
	const struct boot_entry **e = malloc(n * sizeof(*e));
	if (!e) {
		bconn_close(mm, c);
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		if (b->table[i].nrails)
			e[k++] = &b->table[i];
	send_table(mm, c, e, k);
	free(e);
}

/* A second connection for a node is refused while the first lives; one
 * whose daemon is gone (a restart: the kernel closed it, and this loop has
 * not read the end yet) makes way. */
static bool conn_alive(struct bconn *c)
{
	char ch;
	ssize_t n = recv(c->fd, &ch, 1, MSG_PEEK | MSG_DONTWAIT);
	return n > 0 || (n < 0 && (errno == EAGAIN || errno == EINTR));
}

static void on_register(struct mm *mm, struct bconn *c, const struct boot_msg *m)
{
	struct mm_boot *b = mm->boot;
	const char *name = mm->conf.nodes[c->node];
	for (struct bconn *o = b->conns; o; o = o->next) {
		if (o == c || o->fd < 0 || o->stage != ST_REGISTERED || o->node != c->node)
			continue;
		if (conn_alive(o)) {
			refuse(mm, c, "node %s is already registered from %s: two daemons claim it",
			       name, o->peer);
			return;
		}
		bconn_close(mm, o);
	}
	int nrails = sn_rail_count(mm->sn);
	if (m->self.nrails != nrails) {
		refuse(mm, c, "node %s has %d fabric rail(s), the cluster %d (provider and "
		       "sys_provider must match storm.conf)", name, m->self.nrails, nrails);
		return;
	}
	uint32_t id = fabric_id((uint32_t)c->node);
	for (int r = 0; r < nrails; r++)
		if (sn_peer_addr(mm->sn, r, id, m->self.addr[r], m->self.len[r]) < 0) {
			refuse(mm, c, "node %s: %s", name, sn_strerror(mm->sn));
			return;
		}
	struct boot_entry *e = &b->table[id];
	bool changed = e->nrails != m->self.nrails ||
		       memcmp(e->len, m->self.len, sizeof(e->len)) ||
		       memcmp(e->addr, m->self.addr, sizeof(e->addr));
	*e = m->self;
	e->id = id;
	c->stage = ST_REGISTERED;
	slog("node %s registered from %s%s", name, c->peer, changed ? "" : " (address unchanged)");
	/* at once, not on its first report: a job placed there meanwhile
	 * would go to a daemon that knows nothing of the old one's */
	node_incarnation(mm, c->node, m->incarnation);
	send_whole_table(mm, c);
	if (!changed)
		return;
	const struct boot_entry *one = e;
	for (struct bconn *o = b->conns; o; o = o->next)
		if (o != c && o->fd >= 0 && o->stage == ST_REGISTERED)
			send_table(mm, o, &one, 1);
}

static void on_frame(struct mm *mm, struct bconn *c)
{
	const char *why = "";
	struct boot_msg *m = malloc(sizeof(*m));
	if (!m) {
		bconn_close(mm, c);
		return;
	}
	if (c->stage == ST_HELLO) {
		struct ctl_env e;
		char err[256] = "";
		if (ctl_env_parse(c->rx.buf, c->rx.len, &e, err, sizeof(err)) == 0 &&
		    e.kind != CTL_ENV_PLAIN)
			snprintf(err, sizeof(err), "a tagged frame before the session");
		else if (e.kind == CTL_ENV_PLAIN && !boot_decode(e.body, e.body_len, m, &why) &&
			 m->type != BOOT_HELLO)
			snprintf(err, sizeof(err), "message %d where HELLO was expected", m->type);
		else if (e.kind == CTL_ENV_PLAIN && !*why)
			err[0] = '\0';
		else if (*why)
			snprintf(err, sizeof(err), "%s", why);
		if (err[0]) {
			refuse(mm, c, "not a registration: %s", err);
			goto out;
		}
		int idx = conf_node_index(&mm->conf, m->name);
		if (idx < 0) {
			refuse(mm, c, "unknown node name '%s' (not in [nodes] of %s)", m->name,
			       mm->conf.path);
			goto out;
		}
		c->node = idx;
		memcpy(c->node_nonce, m->nonce, BOOT_NONCE_LEN);
		randombytes_buf(c->mm_nonce, BOOT_NONCE_LEN);
		uint8_t body[64];
		size_t len = 0;
		int n = boot_enc_challenge(body, sizeof(body), c->mm_nonce);
		uint8_t *env = boot_plain(body, (size_t)n, &len);
		bsend_env(mm, c, env, len);
		/* every later frame is tagged with the session key */
		ctl_session_init(&c->sess, true, NULL, 0);
		boot_session_key(mm->key, m->name, c->node_nonce, c->mm_nonce, c->sess.key);
		c->sess.keyed = true;
		c->stage = ST_REGISTER;
		goto out;
	}
	const uint8_t *body;
	size_t blen;
	bool plain;
	char err[256];
	enum ctl_auth_fail f =
		ctl_auth_unwrap(&c->sess, c->rx.buf, c->rx.len, &body, &blen, &plain, err, sizeof(err));
	if (f == CTL_AUTH_BAD_TAG && c->stage == ST_REGISTER) {
		/* the session key comes from the cluster key: theirs is not ours */
		refuse(mm, c, "node %s: wrong cluster key (its registration's tag does not "
		       "verify with %s)", mm->conf.nodes[c->node], mm->conf.key_file);
		goto out;
	}
	if (f != CTL_AUTH_OK) {
		refuse(mm, c, "node %s: %s", mm->conf.nodes[c->node], err);
		goto out;
	}
	if (boot_decode(body, blen, m, &why) || m->type != BOOT_REGISTER) {
		refuse(mm, c, "node %s: not a registration (%s)", mm->conf.nodes[c->node],
		       *why ? why : "expected REGISTER");
		goto out;
	}
	on_register(mm, c, m);
out:
	free(m);
}

static void on_conn_io(void *arg, uint32_t events)
{
	struct bconn *c = arg;
	struct mm *mm = c->mm;
	if (c->fd < 0)
		return;
	if (events & EPOLLOUT)
		bflush(mm, c);
	while (c->fd >= 0 && !c->closing && (events & (EPOLLIN | EPOLLHUP | EPOLLERR))) {
		int rc = frame_rx_read(c->fd, &c->rx);
		if (rc == 0)
			return;
		if (rc < 0) {
			if (c->stage == ST_REGISTERED)
				slog("node %s: registration connection closed",
				     mm->conf.nodes[c->node]);
			bconn_close(mm, c);
			return;
		}
		on_frame(mm, c);
		if (c->fd >= 0)
			frame_rx_reset(&c->rx);
	}
	if (c->fd >= 0 && c->closing && (events & (EPOLLHUP | EPOLLERR)))
		bconn_close(mm, c);
}

static void on_accept(void *arg, uint32_t events)
{
	struct mm *mm = arg;
	struct mm_boot *b = mm->boot;
	(void)events;
	boot_reap(b);
	for (;;) {
		struct sockaddr_storage sa;
		socklen_t salen = sizeof(sa);
		int fd = accept4(b->listen_fd, (struct sockaddr *)&sa, &salen,
				 SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		struct bconn *c = calloc(1, sizeof(*c));
		if (!c) {
			close(fd);
			continue;
		}
		c->mm = mm;
		c->fd = fd;
		c->node = -1;
		/* numeric: an IPv6 address and a port fit in 64 */
		char host[INET6_ADDRSTRLEN] = "?", serv[8] = "?";
		getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		snprintf(c->peer, sizeof(c->peer), "%s:%s", host, serv);
		if (ev_io_add(mm->loop, fd, EPOLLIN, on_conn_io, c) < 0) {
			close(fd);
			free(c);
			continue;
		}
		c->next = b->conns;
		b->conns = c;
	}
}

int boot_listen(struct mm *mm)
{
	struct mm_boot *b = calloc(1, sizeof(*b));
	uint32_t n = (uint32_t)mm->conf.nnodes + 1;
	if (!b || !(b->table = calloc(n, sizeof(*b->table)))) {
		free(b);
		slog("error: out of memory");
		return -1;
	}
	b->listen_fd = -1;
	mm->boot = b;
	char err[400];
	b->listen_fd = tcp_listen(mm->conf.mm_address, err, sizeof(err));
	if (b->listen_fd < 0) {
		slog("error: cannot take registrations: %s", err);
		return -1;
	}
	return 0;
}

int boot_start(struct mm *mm)
{
	struct mm_boot *b = mm->boot;
	/* our own entry, first in every table */
	struct boot_entry *self = &b->table[MM_FABRIC_ID];
	self->nrails = (uint8_t)sn_rail_count(mm->sn);
	for (int r = 0; r < self->nrails; r++) {
		size_t len = BOOT_ADDR_MAX;
		if (sn_local_addr(mm->sn, r, self->addr[r], &len) < 0) {
			slog("error: our fabric address on rail %d does not fit", r);
			return -1;
		}
		self->len[r] = (uint16_t)len;
	}
	if (ev_io_add(mm->loop, b->listen_fd, EPOLLIN, on_accept, mm) < 0) {
		slog("error: event loop: %s", strerror(errno));
		return -1;
	}
	slog("taking node registrations on %s", mm->conf.mm_address);
	return 0;
}

void boot_stop(struct mm *mm)
{
	struct mm_boot *b = mm->boot;
	if (!b)
		return;
	for (struct bconn *c = b->conns; c; c = c->next)
		bconn_close(mm, c);
	boot_reap(b);
	if (b->listen_fd >= 0) {
		if (mm->loop) /* none when the fabric failed to open */
			ev_io_del(mm->loop, b->listen_fd);
		close(b->listen_fd);
	}
	free(b->table);
	free(b);
	mm->boot = NULL;
}
