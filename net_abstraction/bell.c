/* Doorbells: abstract-namespace datagram sockets named after fabric
 * addresses (see bell.h). */
#include "bell.h"

#include <errno.h>
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
	if (bind(fd, (struct sockaddr *)&sa, len)) {
		rc = -errno;
		close(fd);
		return rc;
	}
	return fd;
}

int bell_ring(int fd, const void *addr, size_t alen)
{
	struct sockaddr_un sa;
	socklen_t len;
	int rc = bell_name(addr, alen, &sa, &len);
	if (rc)
		return rc;
	static const char ring = 1;
	if (sendto(fd, &ring, 1, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&sa, len) == 1)
		return 0;
	return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
}

int bell_drain(int fd)
{
	char buf[16];
	int n = 0;
	while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
		n++;
	return n;
}
