/* Finding the cluster and the request/reply plumbing to the MM. */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "ctl_auth.h"
#include "frame.h"

/* ---- authentication (common/ctl_auth.h): one session per connection,
 * found by its descriptor (a new connection on a reused fd starts anew) */

static char munge_socket[PATH_MAX];
static char auth_error[320]; /* why the last reply or request failed it */

struct conn_session {
	int fd;
	int remote; /* TCP */
	struct ctl_session s;
	struct conn_session *next;
};
static struct conn_session *sessions;

void ctl_set_munge_socket(const char *path)
{
	snprintf(munge_socket, sizeof(munge_socket), "%s", path ? path : "");
}

static struct conn_session *conn_of(int fd);

static struct ctl_session *session_of(int fd)
{
	struct conn_session *cs = conn_of(fd);
	return cs ? &cs->s : NULL;
}

static struct conn_session *conn_of(int fd)
{
	for (struct conn_session *cs = sessions; cs; cs = cs->next)
		if (cs->fd == fd)
			return cs;
	return NULL;
}

/* A fresh session for a new connection to the MM, whose uid is the only
 * one allowed to read our credential: from the socket when local; over TCP
 * there is no peer uid, so the caller's (storm.conf's owner). */
static int session_new(int fd, int remote, uid_t mm_uid)
{
	if (!remote) {
		struct ucred cr;
		socklen_t crlen = sizeof(cr);
		if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &crlen) != 0)
			return -errno;
		mm_uid = cr.uid;
	}
	struct conn_session *cs = conn_of(fd);
	if (!cs) {
		cs = calloc(1, sizeof(*cs));
		if (!cs)
			return -ENOMEM;
		cs->fd = fd;
		cs->next = sessions;
		sessions = cs;
	}
	cs->remote = remote;
	ctl_session_init(&cs->s, false, munge_socket, mm_uid);
	return 0;
}

int ctl_is_remote(int fd)
{
	struct conn_session *cs = conn_of(fd);
	return cs && cs->remote;
}

double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* A storm.conf found by the default search in a shared directory (/tmp) is
 * only trusted when its directory and the file belong to the expected user
 * and nobody else may write them: anyone can create /tmp/storm-0 first and
 * would otherwise receive every user's environment and programs. */
static int trusted(const char *dir, const char *file, uid_t owner, char *why, size_t len)
{
	struct stat d, f;
	if (lstat(dir, &d) != 0 || lstat(file, &f) != 0)
		return 0;
	if (!S_ISDIR(d.st_mode) || d.st_uid != owner || (d.st_mode & 022)) {
		snprintf(why, len, "%s is not a directory owned by uid %u and writable only by it",
			 dir, (unsigned)owner);
		return -1;
	}
	if (!S_ISREG(f.st_mode) || (f.st_uid != owner && f.st_uid != 0) || (f.st_mode & 022)) {
		snprintf(why, len, "%s is not a file owned by uid %u and writable only by it", file,
			 (unsigned)owner);
		return -1;
	}
	return 1;
}

/* The storm.conf of the install this storm is part of, as `make install`
 * lays it out: PREFIX/etc/storm/storm.conf for PREFIX/bin/storm, except
 * /etc/storm (the last place searched anyway) for /usr/bin/storm. "" when
 * storm does not run from a bin directory. */
static void install_conf(char *out, size_t len)
{
	char self[PATH_MAX];
	out[0] = '\0';
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (n <= 0)
		return;
	self[n] = '\0';
	char *bin = dirname(self);
	char *slash = strrchr(bin, '/');
	if (!slash || strcmp(slash, "/bin") != 0 || slash == bin)
		return;
	*slash = '\0';
	if (strcmp(bin, "/usr") != 0 && (size_t)snprintf(out, len, "%s/etc/storm/storm.conf", bin) >= len)
		out[0] = '\0';
}

/* Inside a Slurm allocation, the storm.conf `storm cluster up --slurm` made
 * for it, on any of its nodes: 0 with out set, or -1. */
static int slurm_conf(char *out, size_t len)
{
	const char *job = getenv("SLURM_JOB_ID");
	char dir[64], file[96], why[256];
	if (!job || !*job || strlen(job) >= 20 || strspn(job, "0123456789") != strlen(job))
		return -1;
	snprintf(dir, sizeof(dir), "/tmp/storm-slurm-%.19s", job);
	snprintf(file, sizeof(file), "%s/storm.conf", dir);
	if (trusted(dir, file, getuid(), why, sizeof(why)) <= 0)
		return -1;
	snprintf(out, len, "%s", file);
	return 0;
}

int cli_find_conf(struct cli *c, char *err, size_t errlen)
{
	const char *explicit = c->conf_opt ? c->conf_opt : getenv("STORM_CONF");
	if (explicit && *explicit) {
		if (explicit != c->conf_path)
			snprintf(c->conf_path, sizeof(c->conf_path), "%s", explicit);
		return 0;
	}
	if (slurm_conf(c->conf_path, sizeof(c->conf_path)) == 0)
		return 0;
	char dirs[2][64], files[2][80];
	uid_t owners[2] = { getuid(), 0 };
	for (int i = 0; i < 2; i++) {
		snprintf(dirs[i], sizeof(dirs[i]), "/tmp/storm-%u", (unsigned)owners[i]);
		snprintf(files[i], sizeof(files[i]), "%.63s/storm.conf", dirs[i]);
		if (i == 1 && owners[0] == 0)
			break;
		char why[256];
		int t = trusted(dirs[i], files[i], owners[i], why, sizeof(why));
		if (t < 0) {
			snprintf(err, errlen, "refusing %s: %s", files[i], why);
			return -1;
		}
		if (t > 0) {
			snprintf(c->conf_path, sizeof(c->conf_path), "%s", files[i]);
			return 0;
		}
	}
	char inst[PATH_MAX];
	install_conf(inst, sizeof(inst));
	const char *sys[] = { inst, "/etc/storm/storm.conf" };
	for (int i = 0; i < 2; i++) {
		if (sys[i][0] && access(sys[i], F_OK) == 0) {
			snprintf(c->conf_path, sizeof(c->conf_path), "%s", sys[i]);
			return 0;
		}
	}
	/* the directories searched, for the error */
	if (inst[0])
		*strrchr(inst, '/') = '\0';
	snprintf(err, errlen, "no storm.conf in %s%s/tmp/storm-0%s%s or /etc/storm",
		 owners[0] == 0 ? "" : dirs[0], owners[0] == 0 ? "" : ", ", inst[0] ? ", " : "",
		 inst);
	return -1;
}

int cli_load_conf(struct cli *c)
{
	if (c->have_conf)
		return 0;
	char err[512];
	if (cli_find_conf(c, err, sizeof(err)) != 0) {
		fprintf(stderr,
			"storm: error: no cluster is up (%s); start one with 'storm cluster up "
			"--nodes N'\n",
			err);
		return -1;
	}
	if (conf_load(c->conf_path, &c->conf, err, sizeof(err)) != 0) {
		if (access(c->conf_path, F_OK) != 0) /* named but absent: nothing is up */
			fprintf(stderr,
				"storm: error: no cluster is up (%s); start one with 'storm cluster "
				"up --nodes N'\n",
				err);
		else
			fprintf(stderr, "storm: error: %s\n", err);
		return -1;
	}
	struct stat st;
	c->conf_uid = stat(c->conf_path, &st) == 0 ? st.st_uid : 0;
	c->have_conf = 1;
	ctl_set_munge_socket(c->conf.munge_socket);
	return 0;
}

int ctl_connect(const char *path, int timeout_ms)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	strcpy(sa.sun_path, path);
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Non-blocking: a full listen backlog gives EAGAIN instead of a hang;
	 * retry it until the deadline. */
	double deadline = now_s() + timeout_ms / 1000.0;
	for (;;) {
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0) {
			int e = session_new(fd, 0, 0);
			if (e < 0) {
				close(fd);
				return e;
			}
			return fd;
		}
		int e = errno;
		if (e == EINTR)
			continue;
		if (e != EAGAIN || now_s() > deadline) {
			close(fd);
			return e == EAGAIN ? -ETIMEDOUT : -e;
		}
		usleep(10000);
	}
}

/* One address of the list, non-blocking: fd, or -errno. */
static int connect_one(const struct addrinfo *a, double deadline)
{
	int fd = socket(a->ai_family, a->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	int e = 0;
	if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
		e = errno;
		while (e == EINPROGRESS || e == EINTR) {
			int left = (int)((deadline - now_s()) * 1000);
			struct pollfd p = { .fd = fd, .events = POLLOUT };
			int n = left > 0 ? poll(&p, 1, left) : 0;
			if (n < 0 && errno == EINTR)
				continue;
			socklen_t len = sizeof(e);
			if (n == 0)
				e = ETIMEDOUT;
			else if (n < 0)
				e = errno;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &len) != 0)
				e = errno;
		}
	}
	if (e) {
		close(fd);
		return -e;
	}
	int one = 1; /* a Cancel or a line of stdin goes out at once */
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	return fd;
}

int ctl_connect_tcp(const char *address, uid_t mm_uid, int timeout_ms, char *err,
		    size_t errlen)
{
	char host[256], port[16];
	if (conf_address(address, host, sizeof(host), port, sizeof(port)) < 0) {
		snprintf(err, errlen, "'%s' is not HOST:PORT", address);
		return -EINVAL;
	}
	struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai;
	int rc = getaddrinfo(host, port, &hints, &ai);
	if (rc) {
		snprintf(err, errlen, "%s: %s", host, gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	double deadline = now_s() + timeout_ms / 1000.0;
	int fd = -EADDRNOTAVAIL;
	for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next)
		fd = connect_one(a, deadline);
	freeaddrinfo(ai);
	if (fd < 0) {
		snprintf(err, errlen, "%s", strerror(-fd));
		return fd;
	}
	int e = session_new(fd, 1, mm_uid);
	if (e < 0) {
		close(fd);
		snprintf(err, errlen, "%s", strerror(-e));
		return e;
	}
	return fd;
}

const char *cli_remote(const struct cli *c)
{
	if (c->mm_opt)
		return c->mm_opt;
	const char *env = getenv("STORM_MM");
	if (env && *env)
		return env;
	return cli_conf_remote(&c->conf);
}

const char *cli_conf_remote(const struct storm_conf *conf)
{
	/* a socket that is there but dead is a local MM that died, not a
	 * reason to go elsewhere */
	if (conf->ctl_address[0] && access(conf->socket, F_OK) != 0 &&
	    (errno == ENOENT || errno == ENOTDIR))
		return conf->ctl_address;
	return NULL;
}

int cli_dial(struct cli *c, int timeout_ms, char *err, size_t errlen)
{
	if (cli_load_conf(c) != 0) {
		snprintf(err, errlen, "no configuration");
		return -1;
	}
	const char *remote = cli_remote(c);
	if (remote) {
		char why[300];
		int fd = ctl_connect_tcp(remote, c->conf_uid, timeout_ms, why, sizeof(why));
		if (fd < 0)
			snprintf(err, errlen, "cannot reach the machine manager at %s: %s", remote,
				 why);
		return fd < 0 ? -1 : fd;
	}
	int fd = ctl_connect(c->conf.socket, timeout_ms);
	if (fd < 0)
		snprintf(err, errlen,
			 "no cluster is up (cannot connect to %s: %s); start one with 'storm "
			 "cluster up --nodes N'", c->conf.socket, strerror(-fd));
	return fd < 0 ? -1 : fd;
}

int cli_connect(struct cli *c)
{
	if (cli_load_conf(c) != 0) /* printed */
		return -1;
	char err[PATH_MAX + 400];
	int fd = cli_dial(c, 5000, err, sizeof(err));
	if (fd < 0)
		fprintf(stderr, "storm: error: %s\n", err);
	return fd;
}

int ctl_send(int fd, Storm__Ctl__Request *req, const int *fds, int nfds)
{
	struct ctl_session *s = session_of(fd);
	if (!s)
		return -ENOTCONN;
	if (nfds > 0 && ctl_is_remote(fd)) /* TCP would drop them silently */
		return -EOPNOTSUPP;
	req->version = CTL_VERSION;
	size_t len = storm__ctl__request__get_packed_size(req), elen;
	uint8_t *buf = malloc(len ? len : 1), *env;
	if (!buf)
		return -ENOMEM;
	storm__ctl__request__pack(req, buf);
	int rc = ctl_auth_wrap(s, buf, len, &env, &elen, auth_error, sizeof(auth_error));
	free(buf);
	if (rc < 0)
		return rc == -ENOMEM || rc == -EMSGSIZE ? rc : -EKEYREJECTED;
	rc = frame_send(fd, env, elen, fds, nfds);
	free(env);
	return rc;
}

int ctl_decode_reply(int fd, const uint8_t *buf, size_t len, Storm__Ctl__Reply **rep)
{
	struct ctl_session *s = session_of(fd);
	const uint8_t *body;
	size_t blen;
	bool plain;
	*rep = NULL;
	if (!s)
		return -ENOTCONN;
	if (ctl_auth_unwrap(s, buf, len, &body, &blen, &plain, auth_error, sizeof(auth_error)) !=
	    CTL_AUTH_OK)
		return -EBADMSG;
	*rep = storm__ctl__reply__unpack(NULL, blen, body);
	if (!*rep)
		return -EPROTO;
	if (plain && (*rep)->body_case != STORM__CTL__REPLY__BODY_ERROR) {
		/* an MM that could not authenticate us can only refuse */
		snprintf(auth_error, sizeof(auth_error), "an untagged reply that is not an error");
		ctl_reply_free(*rep);
		*rep = NULL;
		return -EBADMSG;
	}
	if ((*rep)->version != CTL_VERSION) {
		fprintf(stderr,
			"storm: error: the machine manager speaks control protocol version "
			"%u, this storm speaks %u\n",
			(*rep)->version, CTL_VERSION);
		ctl_reply_free(*rep);
		*rep = NULL;
		return -EPROTONOSUPPORT;
	}
	return 0;
}

int ctl_recv(int fd, int timeout_ms, Storm__Ctl__Reply **rep)
{
	struct frame_rx rx = { 0 };
	double deadline = now_s() + timeout_ms / 1000.0;
	int rc;
	for (;;) {
		rc = frame_rx_read(fd, &rx);
		if (rc != 0)
			break;
		int wait = -1;
		if (timeout_ms >= 0) {
			double left = deadline - now_s();
			if (left <= 0) {
				rc = -ETIMEDOUT;
				break;
			}
			wait = (int)(left * 1000) + 1;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, wait) < 0 && errno != EINTR) {
			rc = -errno;
			break;
		}
	}
	if (rc == 1)
		rc = ctl_decode_reply(fd, rx.buf, rx.len, rep);
	frame_rx_reset(&rx);
	return rc;
}

void ctl_reply_free(Storm__Ctl__Reply *rep)
{
	if (rep)
		storm__ctl__reply__free_unpacked(rep, NULL);
}

void ctl_report(int err)
{
	switch (err) {
	case -EPIPE:
	case -ECONNRESET:
		fprintf(stderr, "storm: error: lost connection to the machine manager\n");
		break;
	case -ETIMEDOUT:
		fprintf(stderr, "storm: error: the machine manager did not answer in time\n");
		break;
	case -EPROTO:
		fprintf(stderr, "storm: error: undecodable reply from the machine manager\n");
		break;
	case -EPROTONOSUPPORT: /* already said which versions */
		break;
	case -EOPNOTSUPP:
		fprintf(stderr, "storm: error: descriptors cannot travel to the machine manager over "
				"TCP\n");
		break;
	case -EKEYREJECTED:
		fprintf(stderr, "storm: error: %s\n", auth_error);
		break;
	case -EBADMSG:
		fprintf(stderr, "storm: error: reply from the machine manager not authenticated: %s\n",
			auth_error);
		break;
	default:
		fprintf(stderr, "storm: error: talking to the machine manager: %s\n",
			strerror(-err));
	}
}

Storm__Ctl__Reply *cli_call(struct cli *c, Storm__Ctl__Request *req, int timeout_ms, int *rc)
{
	*rc = EXIT_STORM;
	int fd = cli_connect(c);
	if (fd < 0)
		return NULL;
	Storm__Ctl__Reply *rep = NULL;
	int e = ctl_send(fd, req, NULL, 0);
	if (e == 0)
		e = ctl_recv(fd, timeout_ms, &rep);
	close(fd);
	if (e != 0) {
		ctl_report(e);
		return NULL;
	}
	if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR) {
		cli_print_error(rep->error, NULL);
		ctl_reply_free(rep);
		return NULL;
	}
	*rc = EXIT_OK;
	return rep;
}

int cli_print_error(const Storm__Ctl__Error *e, const char *what)
{
	const char *msg = e && e->message && e->message[0] ? e->message : "request refused";
	if (what)
		fprintf(stderr, "storm: error: %s: %s\n", what, msg);
	else
		fprintf(stderr, "storm: error: %s\n", msg);
	return EXIT_STORM;
}

Storm__Ctl__Reply *cli_call_for(struct cli *c, Storm__Ctl__Request *req, int timeout_ms,
			      Storm__Ctl__Reply__BodyCase want, int *rc)
{
	Storm__Ctl__Reply *rep = cli_call(c, req, timeout_ms, rc);
	if (!rep || rep->body_case == want)
		return rep;
	const ProtobufCFieldDescriptor *f =
		protobuf_c_message_descriptor_get_field(&storm__ctl__reply__descriptor, (unsigned)want);
	const ProtobufCMessageDescriptor *m = f ? f->descriptor : NULL;
	*rc = cli_unexpected(rep, m ? m->short_name : "another reply");
	ctl_reply_free(rep);
	return NULL;
}

int cli_unexpected(const Storm__Ctl__Reply *rep, const char *wanted)
{
	fprintf(stderr,
		"storm: error: the machine manager answered with reply %d where %s was expected\n",
		(int)rep->body_case, wanted);
	return EXIT_STORM;
}
