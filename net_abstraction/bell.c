/* Doorbells: abstract-namespace datagram sockets named after fabric
 * addresses (see bell.h). */
#include "bell.h"

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#define BELL_PREFIX "storm-bell:"

static int bell_name(const void *addr, size_t alen, struct sockaddr_un *sa, socklen_t *len)
{
	size_t n = strnlen(addr, alen);
	size_t room = sizeof(sa->sun_path) - 1 - strlen(BELL_PREFIX);
	if (!n || n > room)
		return -ENAMETOOLONG;
	memset(sa, 0, sizeof(*sa));
	sa->sun_family = AF_UNIX;
	/* sun_path[0] stays 0: the abstract namespace, nothing on disk */
	memcpy(sa->sun_path + 1, BELL_PREFIX, strlen(BELL_PREFIX));
	memcpy(sa->sun_path + 1 + strlen(BELL_PREFIX), addr, n);
	*len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(BELL_PREFIX) + n);
	return 0;
}

int bell_open(const void *addr, size_t alen)
{
	struct sockaddr_un sa;
	socklen_t len;
	int rc = bell_name(addr, alen, &sa, &len);
	if (rc)
		return rc;
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* the kernel then stamps each datagram with its sender's credentials */
	static const int on = 1;
	if (setsockopt(fd, SOL_SOCKET, SO_PASSCRED, &on, sizeof(on)) ||
	    bind(fd, (struct sockaddr *)&sa, len)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

static int send_kind(int fd, const void *addr, size_t alen, enum bell_kind kind, int pass_fd)
{
	struct sockaddr_un sa;
	socklen_t len;
	int rc = bell_name(addr, alen, &sa, &len);
	if (rc)
		return rc;
	char k = (char)kind;
	struct iovec iov = {.iov_base = &k, .iov_len = 1};
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	struct msghdr m = {.msg_name = &sa, .msg_namelen = len, .msg_iov = &iov, .msg_iovlen = 1};
	if (pass_fd >= 0) {
		memset(&ctl, 0, sizeof(ctl));
		m.msg_control = ctl.buf;
		m.msg_controllen = sizeof(ctl.buf);
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &pass_fd, sizeof(int));
	}
	if (sendmsg(fd, &m, MSG_DONTWAIT | MSG_NOSIGNAL) == 1)
		return 0;
	/* a ring into a full bell has done its work: a wake-up is pending */
	return kind == BELL_RING && (errno == EAGAIN || errno == EWOULDBLOCK) ? 0 : -errno;
}

int bell_ring(int fd, const void *addr, size_t alen)
{
	return send_kind(fd, addr, alen, BELL_RING, -1);
}

int bell_ask_map(int fd, const void *addr, size_t alen)
{
	return send_kind(fd, addr, alen, BELL_ASK_MAP, -1);
}

int bell_give_map(int fd, const char *from, int mem_fd)
{
	return send_kind(fd, from, strlen(from) + 1, BELL_GIVE_MAP, mem_fd);
}

int bell_drain(int fd, bell_fn fn, void *arg)
{
	int n = 0;
	for (;;) {
		char k = 0;
		struct sockaddr_un sa;
		struct iovec iov = {.iov_base = &k, .iov_len = 1};
		union {
			struct cmsghdr h;
			char buf[CMSG_SPACE(sizeof(struct ucred)) + CMSG_SPACE(4 * sizeof(int))];
		} ctl;
		struct msghdr m = {.msg_name = &sa, .msg_namelen = sizeof(sa), .msg_iov = &iov,
				   .msg_iovlen = 1, .msg_control = ctl.buf,
				   .msg_controllen = sizeof(ctl.buf)};
		if (recvmsg(fd, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC) < 0)
			return n;
		n++;
		int got = -1;
		bool cred = false;
		struct ucred uc = {0};
		for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
			if (c->cmsg_level != SOL_SOCKET)
				continue;
			if (c->cmsg_type == SCM_CREDENTIALS &&
			    c->cmsg_len >= CMSG_LEN(sizeof(uc))) {
				memcpy(&uc, CMSG_DATA(c), sizeof(uc));
				cred = true;
			} else if (c->cmsg_type == SCM_RIGHTS) {
				/* keep the first; nobody sends more, so close the rest */
				size_t nfd = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
				for (size_t i = 0; i < nfd; i++) {
					int f;
					memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
					if (got < 0)
						got = f;
					else
						close(f);
				}
			}
		}
		/* the sender's bound name: the prefix, then its address */
		char from[sizeof(sa.sun_path)] = "";
		size_t pre = offsetof(struct sockaddr_un, sun_path) + 1 + strlen(BELL_PREFIX);
		if (m.msg_namelen > pre && sa.sun_path[0] == 0 &&
		    !memcmp(sa.sun_path + 1, BELL_PREFIX, strlen(BELL_PREFIX))) {
			size_t l = m.msg_namelen - pre;
			memcpy(from, sa.sun_path + 1 + strlen(BELL_PREFIX), l);
			from[l] = 0;
		}
		bool wanted = fn && cred && from[0] &&
			      ((k == BELL_ASK_MAP && got < 0) || (k == BELL_GIVE_MAP && got >= 0));
		if (wanted) {
			fn(arg, (enum bell_kind)k, from, uc.uid, got);
		} else if (got >= 0) {
			close(got);
		}
	}
}
