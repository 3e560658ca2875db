/* ctl_forge: sends the machine manager control frames a forger would, for
 * tests/cluster/test_users.sh and test_cluster.sh, and prints what came back.
 *
 *   ctl_forge --conf storm.conf [--tcp HOST:PORT] CASE
 *
 * --tcp: to the MM's ctl_address instead of its socket (the credential is
 * sealed for the uid that owns storm.conf, as storm does over TCP).
 * CASE:
 *   nocred     a bare storm.ctl.Request, no envelope (an old or foreign client)
 *   badcred    an envelope whose MUNGE credential is made up
 *   foreign=S  a credential from the munged at socket S (another key)
 *   altered    a genuine credential, the request changed after signing
 *   replay     one genuine first frame sent on two connections
 *   badtag     a genuine first frame, then a second with a wrong tag
 *   seqreplay  genuine first and second frames, then the second again
 *   garbage    a genuine envelope around bytes that are not a Request
 *   version=N  a genuine envelope around a Request of protocol version N
 *   mint=FILE  write a genuine first frame to FILE (for another user to send)
 *   send=FILE  send FILE as a connection's first frame
 * Each reply prints one line, "reply: ok KIND" or "reply: error: MESSAGE", and
 * "closed" when the MM closed the connection. Exit 0 unless it could not run. */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "config.h"
#include "control.pb-c.h"
#include "ctl_auth.h"
#include "frame.h"

static struct storm_conf conf;
static const char *tcp; /* --tcp HOST:PORT */

static int dial_tcp(struct ctl_session *s)
{
	char host[256], port[16];
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
	if (conf_address(tcp, host, sizeof(host), port, sizeof(port)) != 0 ||
	    getaddrinfo(host, port, &hints, &ai) != 0) {
		fprintf(stderr, "ctl_forge: bad --tcp %s\n", tcp);
		exit(1);
	}
	int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
		fprintf(stderr, "ctl_forge: cannot connect to %s: %s\n", tcp, strerror(errno));
		exit(1);
	}
	freeaddrinfo(ai);
	struct stat st;
	ctl_session_init(s, false, conf.munge_socket, stat(conf.path, &st) == 0 ? st.st_uid : 0);
	return fd;
}

static int dial(struct ctl_session *s)
{
	if (tcp)
		return dial_tcp(s);
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(conf.socket) >= sizeof(sa.sun_path)) {
		fprintf(stderr, "ctl_forge: %s is too long\n", conf.socket);
		exit(1);
	}
	memcpy(sa.sun_path, conf.socket, strlen(conf.socket) + 1);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
		fprintf(stderr, "ctl_forge: cannot connect to %s: %s\n", conf.socket, strerror(errno));
		exit(1);
	}
	struct ucred cr;
	socklen_t len = sizeof(cr);
	getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len);
	ctl_session_init(s, false, conf.munge_socket, cr.uid);
	return fd;
}

/* A packed Jobs request (or a Status with the given version). */
static uint8_t *request(uint32_t version, size_t *len)
{
	Storm__Ctl__ListJobs lj = STORM__CTL__LIST_JOBS__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.version = version;
	req.body_case = STORM__CTL__REQUEST__BODY_JOBS;
	req.jobs = &lj;
	*len = storm__ctl__request__get_packed_size(&req);
	uint8_t *buf = malloc(*len + 1);
	storm__ctl__request__pack(&req, buf);
	return buf;
}

static uint8_t *wrap(struct ctl_session *s, const uint8_t *body, size_t len, size_t *out_len)
{
	uint8_t *out;
	char err[256];
	if (ctl_auth_wrap(s, body, len, &out, out_len, err, sizeof(err)) != 0) {
		fprintf(stderr, "ctl_forge: %s\n", err);
		exit(1);
	}
	return out;
}

/* Reads one reply (or the close) and prints it. */
static void show(int fd, struct ctl_session *s)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	if (poll(&p, 1, 10000) != 1) {
		printf("no reply\n");
		return;
	}
	uint8_t *buf;
	size_t len;
	if (frame_recv(fd, &buf, &len, NULL, NULL) != 0) {
		printf("closed\n");
		return;
	}
	const uint8_t *body;
	size_t blen;
	bool plain;
	char err[256];
	if (ctl_auth_unwrap(s, buf, len, &body, &blen, &plain, err, sizeof(err)) != CTL_AUTH_OK) {
		printf("reply not authenticated: %s\n", err);
	} else {
		Storm__Ctl__Reply *r = storm__ctl__reply__unpack(NULL, blen, body);
		if (!r)
			printf("reply undecodable\n");
		else if (r->body_case == STORM__CTL__REPLY__BODY_ERROR)
			printf("reply: error: %s\n", r->error->message);
		else
			printf("reply: ok %d\n", (int)r->body_case);
		if (r)
			storm__ctl__reply__free_unpacked(r, NULL);
	}
	free(buf);
	/* an error closes the connection: see that it does */
	if (poll(&p, 1, 200) == 1) {
		char c;
		if (recv(fd, &c, 1, MSG_PEEK) == 0)
			printf("closed\n");
	}
}

static void send_frame(int fd, const uint8_t *buf, size_t len)
{
	if (frame_send(fd, buf, len, NULL, 0) != 0) {
		fprintf(stderr, "ctl_forge: send: %s\n", strerror(errno));
		exit(1);
	}
}

int main(int argc, char **argv)
{
	if (argc == 6 && !strcmp(argv[3], "--tcp")) {
		tcp = argv[4];
		argv[3] = argv[5];
		argc = 4;
	}
	if (argc != 4 || strcmp(argv[1], "--conf") != 0) {
		fprintf(stderr, "usage: ctl_forge --conf storm.conf [--tcp HOST:PORT] CASE (see "
				"the source)\n");
		return 2;
	}
	char err[512];
	if (conf_load(argv[2], &conf, err, sizeof(err)) != 0) {
		fprintf(stderr, "ctl_forge: %s\n", err);
		return 1;
	}
	const char *c = argv[3];
	struct ctl_session s;
	size_t blen, flen;
	uint8_t *body = request(1, &blen), *f;
	int fd = dial(&s);
	if (!strcmp(c, "nocred")) {
		send_frame(fd, body, blen);
		show(fd, &s);
	} else if (!strcmp(c, "badcred")) {
		const char *cred = "MUNGE:AwQFAAB4madeupcredentialthatnomungedeverissued=:";
		size_t cl = strlen(cred);
		f = malloc(3 + cl + blen);
		f[0] = CTL_ENV_MUNGE;
		f[1] = (uint8_t)(cl >> 8);
		f[2] = (uint8_t)cl;
		memcpy(f + 3, cred, cl);
		memcpy(f + 3 + cl, body, blen);
		send_frame(fd, f, 3 + cl + blen);
		show(fd, &s);
	} else if (!strncmp(c, "foreign=", 8)) {
		s.munge_socket = c + 8;
		f = wrap(&s, body, blen, &flen);
		send_frame(fd, f, flen);
		show(fd, &s);
	} else if (!strcmp(c, "altered")) {
		f = wrap(&s, body, blen, &flen);
		f[flen - 1] ^= 1; /* the last byte of the request */
		send_frame(fd, f, flen);
		show(fd, &s);
	} else if (!strcmp(c, "replay")) {
		f = wrap(&s, body, blen, &flen);
		send_frame(fd, f, flen);
		show(fd, &s);
		close(fd);
		fd = dial(&s);
		send_frame(fd, f, flen);
		show(fd, &s);
	} else if (!strcmp(c, "badtag") || !strcmp(c, "seqreplay")) {
		f = wrap(&s, body, blen, &flen);
		send_frame(fd, f, flen);
		show(fd, &s);
		uint8_t *g = wrap(&s, body, blen, &flen);
		if (!strcmp(c, "badtag")) {
			g[9] ^= 0x80; /* the tag's first byte */
			send_frame(fd, g, flen);
			show(fd, &s);
		} else {
			send_frame(fd, g, flen);
			show(fd, &s);
			send_frame(fd, g, flen);
			show(fd, &s);
		}
	} else if (!strcmp(c, "garbage")) {
		uint8_t junk[5] = { 0xff, 0xff, 0xff, 0xff, 0xff };
		f = wrap(&s, junk, sizeof(junk), &flen);
		send_frame(fd, f, flen);
		show(fd, &s);
	} else if (!strncmp(c, "version=", 8)) {
		free(body);
		body = request((uint32_t)atoi(c + 8), &blen);
		f = wrap(&s, body, blen, &flen);
		send_frame(fd, f, flen);
		show(fd, &s);
	} else if (!strncmp(c, "mint=", 5)) {
		f = wrap(&s, body, blen, &flen);
		FILE *out = fopen(c + 5, "w");
		if (!out || fwrite(f, 1, flen, out) != flen || fclose(out) != 0) {
			fprintf(stderr, "ctl_forge: cannot write %s\n", c + 5);
			return 1;
		}
	} else if (!strncmp(c, "send=", 5)) {
		static uint8_t buf[65536];
		FILE *in = fopen(c + 5, "r");
		size_t n = in ? fread(buf, 1, sizeof(buf), in) : 0;
		if (in)
			fclose(in);
		if (!n) {
			fprintf(stderr, "ctl_forge: cannot read %s\n", c + 5);
			return 1;
		}
		send_frame(fd, buf, n);
		show(fd, &s);
	} else {
		fprintf(stderr, "ctl_forge: unknown case '%s'\n", c);
		return 2;
	}
	close(fd);
	conf_free(&conf);
	return 0;
}
