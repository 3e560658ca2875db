/* The control socket's connections: one per CLI invocation, frames
 * authenticated in, replies out (reply_send, the one way the MM answers a
 * request: a Reply of this protocol version whose body is one message of
 * its oneof), never blocking the loop on a slow or hostile client. What a request asks is ctl.c's, reached through the
 * handler it registers (mm->on_request). */
#include "mm.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pwd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

/* how long a finished connection waits for its peer to close first */
#define CLIENT_LINGER_S 5.0

static void update_epoll(struct mm *mm, struct client *c)
{
	ev_io_mod(mm->loop, c->fd, EPOLLIN | (c->out_len ? EPOLLOUT : 0));
}

static void on_io(void *arg, uint32_t events)
{
	struct client *c = arg;
	client_on_io(c->mm, c, events);
}

int tcp_listen(const char *address, char *err, size_t errlen)
{
	char host[256], port[16];
	if (conf_address(address, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(err, errlen, "'%s' is not HOST:PORT", address);
		return -1;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "%s: %s", address, gai_strerror(rc));
		return -1;
	}
	int fd = -1, e = 0;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int one = 1;
		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(fd, a->ai_addr, a->ai_addrlen) != 0 || listen(fd, 128) != 0) {
			e = errno;
			close(fd);
			fd = -1;
		}
	}
	freeaddrinfo(ai);
	if (fd < 0)
		snprintf(err, errlen, "cannot listen on %s: %s", address,
			 strerror(e ? e : EADDRNOTAVAIL));
	return fd;
}

int client_accept(struct mm *mm, int listen_fd, bool tcp)
{
	struct sockaddr_storage sa;
	socklen_t salen = sizeof(sa);
	int fd = accept4(listen_fd, (struct sockaddr *)&sa, &salen, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd < 0)
		return 0;
	struct ucred cr = { .pid = 0, .uid = (uid_t)-1, .gid = (gid_t)-1 };
	socklen_t crlen = sizeof(cr);
	struct client *c = calloc(1, sizeof(*c));
	if (!c || (!tcp && getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) < 0)) {
		free(c);
		close(fd);
		return 1;
	}
	if (tcp) {
		/* no peer uid here: who it is comes from its MUNGE credential */
		char host[INET6_ADDRSTRLEN] = "?", serv[8] = "?";
		getnameinfo((struct sockaddr *)&sa, salen, host, sizeof(host), serv, sizeof(serv),
			    NI_NUMERICHOST | NI_NUMERICSERV);
		snprintf(c->peer, sizeof(c->peer), "%s:%s", host, serv);
		int one = 1; /* output lines go out as they come */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	c->mm = mm;
	c->fd = fd;
	c->tcp = tcp;
	ctl_session_init(&c->sess, true, mm->conf.munge_socket, 0);
	c->uid = cr.uid;
	c->gid = cr.gid;
	c->pid = cr.pid;
	if (ev_io_add(mm->loop, fd, EPOLLIN, on_io, c) < 0) {
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
	if (!c->out_len && c->closing && !c->close_by) {
		/* half-close, and close once the peer has: closing with its
		 * frames still unread resets the connection, and the peer can
		 * then lose the last replies waiting in its receive queue */
		shutdown(c->fd, SHUT_WR);
		c->close_by = clock_wall_s() + CLIENT_LINGER_S;
	}
	update_epoll(mm, c);
}

/* Appends env to an output buffer as one frame (4-byte big-endian length,
 * then the bytes), growing it as needed. Returns 0 or -ENOMEM. */
int frame_queue(uint8_t **out, size_t *out_len, size_t *out_cap, const uint8_t *env, size_t len)
{
	if (*out_len + 4 + len > *out_cap) {
		size_t cap = *out_cap ? *out_cap : 4096;
		while (cap < *out_len + 4 + len)
			cap *= 2;
		uint8_t *nb = realloc(*out, cap);
		if (!nb)
			return -ENOMEM;
		*out = nb;
		*out_cap = cap;
	}
	uint8_t *p = *out + *out_len;
	p[0] = (uint8_t)(len >> 24);
	p[1] = (uint8_t)(len >> 16);
	p[2] = (uint8_t)(len >> 8);
	p[3] = (uint8_t)len;
	memcpy(p + 4, env, len);
	*out_len += 4 + len;
	return 0;
}

/* Sends one packed reply, sealed for this connection's session. */
void client_send(struct mm *mm, struct client *c, const uint8_t *packed, size_t plen)
{
	if (c->fd < 0)
		return;
	uint8_t *env = NULL;
	size_t len = 0;
	char err[256];
	int rc = ctl_auth_wrap(&c->sess, packed, plen, &env, &len, err, sizeof(err));
	if (rc < 0) {
		slog("reply to uid %u: %s", (unsigned)c->uid, err);
		client_close(mm, c);
		return;
	}
	int qrc = frame_queue(&c->out, &c->out_len, &c->out_cap, env, len);
	free(env);
	if (qrc < 0) {
		client_close(mm, c);
		return;
	}
	flush(mm, c);
}

void client_finish(struct mm *mm, struct client *c)
{
	c->closing = true;
	flush(mm, c);
}

void client_close(struct mm *mm, struct client *c)
{
	if (c->fd >= 0) {
		ev_io_del(mm->loop, c->fd);
		close(c->fd);
		c->fd = -1;
	}
	if (mm->on_client_gone)
		mm->on_client_gone(mm, c);
	frame_rx_reset(&c->rx);
	ctl_session_clear(&c->sess);
	/* freed by clients_reap: this loop turn may still hold events for it */
}

void clients_reap(struct mm *mm)
{
	double now = clock_wall_s();
	for (struct client **pp = &mm->clients; *pp;) {
		struct client *c = *pp;
		if (c->fd >= 0 && c->close_by && now >= c->close_by)
			client_close(mm, c); /* a peer that never closed its end */
		if (c->fd >= 0) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		free(c->out);
		free(c);
	}
}

/* Checks the frame's credential or tag (common/ctl_auth.h) and points at the
 * request inside. false: refused, logged, answered, connection closing. */
static bool authenticate(struct mm *mm, struct client *c, const uint8_t **body, size_t *len)
{
	char err[256];
	bool plain, first = !c->sess.keyed;
	enum ctl_auth_fail f =
		ctl_auth_unwrap(&c->sess, c->rx.buf, c->rx.len, body, len, &plain, err, sizeof(err));
	if (f == CTL_AUTH_OK && first && c->tcp) {
		c->uid = c->sess.uid; /* MUNGE's word alone: TCP has no peer uid */
	} else if (f == CTL_AUTH_OK && first && c->sess.uid != c->uid) {
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
	if (c->tcp)
		slog_limited(&mm->rl_ctl, "refused a request from %s (TCP): %s", c->peer, err);
	else
		slog_limited(&mm->rl_ctl, "refused a request from uid %u pid %d: %s",
			     (unsigned)c->uid, (int)c->pid, err);
	reply_error(mm, c,
		    f == CTL_AUTH_UNAVAILABLE ? STORM__CTL__ERROR_CODE__ERR_INTERNAL
		    : STORM__CTL__ERROR_CODE__ERR_PERMISSION,
		    "request not authenticated: %s", err);
	client_finish(mm, c);
	return false;
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
				reply_error(mm, c, STORM__CTL__ERROR_CODE__ERR_PROTOCOL,
					    "request larger than %u bytes", FRAME_MAX);
				client_finish(mm, c);
				return;
			}
			client_close(mm, c);
			return;
		}
		const uint8_t *body;
		size_t blen;
		if (authenticate(mm, c, &body, &blen))
			mm->on_request(mm, c, body, blen);
		frame_rx_reset(&c->rx);
		if (c->fd < 0)
			return;
	}
}

/* ---- replies */

void reply_send(struct mm *mm, struct client *c, Storm__Ctl__Reply__BodyCase kind,
		const void *body)
{
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(&storm__ctl__reply__descriptor, (unsigned)kind);
	if (!f || f->type != PROTOBUF_C_TYPE_MESSAGE) {
		slog("internal error: no reply body numbered %d", (int)kind);
		client_close(mm, c);
		return;
	}
	r.version = PROTO_VERSION;
	r.body_case = kind;
	/* the body's slot in the oneof, found as protobuf-c's own code does */
	memcpy((char *)&r + f->offset, &body, sizeof(body));
	size_t len = storm__ctl__reply__get_packed_size(&r);
	uint8_t *packed = malloc(len ? len : 1);
	if (!packed) {
		client_close(mm, c);
		return;
	}
	storm__ctl__reply__pack(&r, packed);
	client_send(mm, c, packed, len);
	free(packed);
}

void reply_error(struct mm *mm, struct client *c, Storm__Ctl__ErrorCode code, const char *fmt,
		 ...)
{
	char msg[512];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	Storm__Ctl__Error e = STORM__CTL__ERROR__INIT;
	e.code = code;
	e.message = msg;
	reply_send(mm, c, STORM__CTL__REPLY__BODY_ERROR, &e);
}
