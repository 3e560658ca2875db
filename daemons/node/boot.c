/* Registration with the machine manager (bootstrap = mm, common/boot_wire.h):
 * this node's fabric addresses in, everyone's out, and later changes as the
 * MM pushes them. The node serves from the start: until the table arrives
 * its peers are unreachable, and while the MM cannot be reached it tries
 * again every BOOT_RETRY_US. A refusal (unknown name, wrong key, another
 * daemon for this node) stops the daemon with the MM's reason. */
#include "nd.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sodium.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "boot_wire.h"
#include "frame.h"

#define BOOT_RETRY_US 500000

struct nd_boot {
	int fd;
	int timer;               /* the retry timer while not connected, or -1 */
	bool warned;             /* "cannot reach" said once per outage */
	struct ctl_session sess;
	struct frame_rx rx;
};

static void refused(struct nd *nd, const char *why)
{
	fprintf(stderr, "stormnd: error: the machine manager at %s refused node %s: %s\n",
		nd->conf.mm_address, nd->name, why);
	nd->boot_refused = true;
	ev_stop(nd->loop);
}

static void apply_table(struct nd *nd, const struct boot_msg *m)
{
	struct boot_entry e;
	size_t pos = 0;
	int rails = sn_rail_count(nd->sn), rc;
	while ((rc = boot_table_next(m, &pos, &e)) > 0) {
		if (e.id >= sn_node_count(nd->sn))
			continue;
		for (int r = 0; r < rails && r < e.nrails; r++)
			if (sn_peer_addr(nd->sn, r, e.id, e.addr[r], e.len[r]) < 0)
				slog("fabric id %u: %s", e.id, sn_strerror(nd->sn));
	}
}

static void boot_disconnect(struct nd *nd);

/* One frame from the MM: a table (update) or its refusal. */
static void on_frame(struct nd *nd, const uint8_t *buf, size_t len)
{
	struct nd_boot *b = nd->boot;
	const uint8_t *body;
	size_t blen;
	bool plain;
	char err[256];
	const char *why = "";
	struct boot_msg *m = malloc(sizeof(*m));
	if (!m)
		return;
	enum ctl_auth_fail f =
		ctl_auth_unwrap(&b->sess, buf, len, &body, &blen, &plain, err, sizeof(err));
	if (f != CTL_AUTH_OK) {
		/* its tag is made with the cluster key: an MM with another key */
		refused(nd, f == CTL_AUTH_BAD_TAG ? "its answer does not verify with our cluster "
						    "key: the keys differ" : err);
	} else if (boot_decode(body, blen, m, &why)) {
		slog("malformed message from the machine manager (%s): registering again", why);
		boot_disconnect(nd);
	} else if (m->type == BOOT_ERROR && plain) {
		refused(nd, m->text);
	} else if (m->type == BOOT_TABLE && !plain) {
		apply_table(nd, m);
	} else {
		slog("unexpected message %d from the machine manager: registering again", m->type);
		boot_disconnect(nd);
	}
	free(m);
}

static void on_io(void *arg, uint32_t events)
{
	struct nd *nd = arg;
	struct nd_boot *b = nd->boot;
	(void)events;
	while (b->fd >= 0 && !nd->boot_refused) {
		int rc = frame_rx_read(b->fd, &b->rx);
		if (rc == 0)
			return;
		if (rc < 0) {
			slog("lost the registration connection to the machine manager at %s: "
			     "registering again", nd->conf.mm_address);
			boot_disconnect(nd);
			return;
		}
		on_frame(nd, b->rx.buf, b->rx.len);
		frame_rx_reset(&b->rx);
	}
}

static int send_env(int fd, uint8_t *env, size_t len)
{
	int rc = env ? frame_send(fd, env, len, NULL, 0) : -ENOMEM;
	free(env);
	return rc;
}

/* Receive of one frame, bounded by op_timeout_ms. */
static int recv_frame(struct nd *nd, int fd, uint8_t **buf, size_t *len)
{
	struct frame_rx rx = {0};
	for (;;) {
		int rc = frame_rx_read(fd, &rx);
		if (rc == 1)
			break;
		struct pollfd p = {.fd = fd, .events = POLLIN};
		if (rc < 0 || poll(&p, 1, (int)nd->conf.op_timeout_ms) <= 0) {
			frame_rx_reset(&rx);
			return rc < 0 ? rc : -ETIMEDOUT;
		}
	}
	*buf = rx.buf;
	*len = rx.len;
	rx.buf = NULL;
	frame_rx_reset(&rx);
	return 0;
}

/* HELLO, CHALLENGE, REGISTER on a connected socket; the TABLE comes
 * through on_io. 0, or -1 after refused(), or 1: try again later. */
static int handshake(struct nd *nd, int fd)
{
	struct nd_boot *b = nd->boot;
	uint8_t nonce[BOOT_NONCE_LEN], body[BOOT_NAME_MAX + 64];
	randombytes_buf(nonce, sizeof(nonce));
	int n = boot_enc_hello(body, sizeof(body), nd->name, nonce);
	size_t len = 0;
	uint8_t *hello = n < 0 ? NULL : boot_plain(body, (size_t)n, &len);
	if (!hello || send_env(fd, hello, len) < 0)
		return 1;
	uint8_t *in = NULL;
	size_t inlen = 0;
	if (recv_frame(nd, fd, &in, &inlen) < 0)
		return 1;
	struct ctl_env e;
	char err[256];
	const char *why = "";
	struct boot_msg *m = malloc(sizeof(*m));
	int rc = 1;
	if (!m || ctl_env_parse(in, inlen, &e, err, sizeof(err)) || e.kind != CTL_ENV_PLAIN ||
	    boot_decode(e.body, e.body_len, m, &why)) {
		slog("malformed answer from the machine manager at %s", nd->conf.mm_address);
	} else if (m->type == BOOT_ERROR) {
		refused(nd, m->text);
		rc = -1;
	} else if (m->type == BOOT_CHALLENGE) {
		ctl_session_clear(&b->sess);
		ctl_session_init(&b->sess, false, NULL, 0);
		boot_session_key(nd->key, nd->name, nonce, m->nonce, b->sess.key);
		b->sess.keyed = true;
		struct boot_entry self = {.nrails = (uint8_t)sn_rail_count(nd->sn)};
		for (int r = 0; r < self.nrails; r++) {
			size_t alen = BOOT_ADDR_MAX;
			sn_local_addr(nd->sn, r, self.addr[r], &alen);
			self.len[r] = (uint16_t)alen;
		}
		uint8_t reg[16 + BOOT_RAILS * (2 + BOOT_ADDR_MAX)], *env = NULL;
		int rl = boot_enc_register(reg, sizeof(reg), &self, nd->incarnation);
		if (rl > 0 &&
		    ctl_auth_wrap(&b->sess, reg, (size_t)rl, &env, &len, err, sizeof(err)) == 0 &&
		    send_env(fd, env, len) == 0)
			rc = 0;
	}
	free(m);
	free(in);
	return rc;
}

static void on_retry(void *arg);

/* Connects and registers. 0 registered (the table follows), 1 the MM is not
 * there (retried by the timer), -1 refused. */
static int boot_connect(struct nd *nd)
{
	struct nd_boot *b = nd->boot;
	char host[256], port[16];
	conf_address(nd->conf.mm_address, host, sizeof(host), port, sizeof(port));
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	int rc = getaddrinfo(host, port, &hints, &ai), err = 0;
	int fd = -1;
	for (struct addrinfo *a = rc ? NULL : ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			continue;
		/* bounded: a half-dead MM must not hold this loop */
		struct timeval tv = {.tv_sec = nd->conf.op_timeout_ms / 1000,
				     .tv_usec = (nd->conf.op_timeout_ms % 1000) * 1000};
		setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
		if (connect(fd, a->ai_addr, a->ai_addrlen) < 0) {
			err = errno;
			close(fd);
			fd = -1;
		}
	}
	if (ai)
		freeaddrinfo(ai);
	if (fd < 0) {
		if (!b->warned)
			slog("cannot reach the machine manager at %s (%s): trying again every "
			     "%d ms", nd->conf.mm_address, rc ? gai_strerror(rc) : strerror(err),
			     BOOT_RETRY_US / 1000);
		b->warned = true;
		return 1;
	}
	if ((rc = handshake(nd, fd)) != 0) {
		close(fd);
		return rc;
	}
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (ev_io_add(nd->loop, fd, EPOLLIN, on_io, nd) < 0) {
		close(fd);
		return 1;
	}
	b->fd = fd;
	b->warned = false;
	slog("registered with the machine manager at %s", nd->conf.mm_address);
	return 0;
}

static void on_retry(void *arg)
{
	struct nd *nd = arg;
	struct nd_boot *b = nd->boot;
	if (b->fd >= 0 || nd->boot_refused)
		return;
	if (boot_connect(nd) <= 0 && b->timer >= 0) {
		ev_timer_del(nd->loop, b->timer);
		b->timer = -1;
	}
}

static void boot_disconnect(struct nd *nd)
{
	struct nd_boot *b = nd->boot;
	if (b->fd >= 0) {
		ev_io_del(nd->loop, b->fd);
		close(b->fd);
		b->fd = -1;
	}
	frame_rx_reset(&b->rx);
	ctl_session_clear(&b->sess);
	if (b->timer < 0 && !nd->boot_refused)
		b->timer = ev_timer_add(nd->loop, BOOT_RETRY_US, BOOT_RETRY_US, on_retry, nd);
}

int nd_boot_start(struct nd *nd)
{
	struct nd_boot *b = calloc(1, sizeof(*b));
	if (!b)
		return -1;
	b->fd = -1;
	b->timer = -1;
	nd->boot = b;
	int rc = boot_connect(nd);
	if (rc < 0)
		return -1;
	if (rc > 0)
		boot_disconnect(nd); /* arms the retry */
	return 0;
}

void nd_boot_close(struct nd *nd)
{
	struct nd_boot *b = nd->boot;
	if (!b)
		return;
	if (b->fd >= 0)
		close(b->fd);
	frame_rx_reset(&b->rx);
	ctl_session_clear(&b->sess);
	free(b);
	nd->boot = NULL;
}
