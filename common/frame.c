/* Length-prefixed frames with descriptors over a stream socket (frame.h). */
#include "frame.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int frame_send(int fd, const void *buf, size_t len, const int *fds, int nfds)
{
	if (len > FRAME_MAX || nfds > FRAME_MAX_FDS)
		return -EMSGSIZE;
	uint8_t hdr[4] = { (uint8_t)(len >> 24), (uint8_t)(len >> 16), (uint8_t)(len >> 8),
			   (uint8_t)len };
	struct iovec iov[2] = { { hdr, 4 }, { (void *)buf, len } };
	union {
		char buf[CMSG_SPACE(sizeof(int) * FRAME_MAX_FDS)];
		struct cmsghdr align;
	} u;
	struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
	if (nfds > 0) {
		mh.msg_control = u.buf;
		mh.msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)nfds);
		struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
		cm->cmsg_level = SOL_SOCKET;
		cm->cmsg_type = SCM_RIGHTS;
		cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)nfds);
		memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)nfds);
	}
	size_t total = 4 + len, sent = 0;
	while (sent < total) {
		ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) { /* a non-blocking peer socket: wait for room */
				struct pollfd p = { .fd = fd, .events = POLLOUT };
				if (poll(&p, 1, 5000) <= 0)
					return -ETIMEDOUT;
				continue;
			}
			return -errno;
		}
		sent += (size_t)n;
		mh.msg_control = NULL; /* descriptors go with the first bytes only */
		mh.msg_controllen = 0;
		while (n > 0 && mh.msg_iovlen > 0) {
			if ((size_t)n >= mh.msg_iov[0].iov_len) {
				n -= (ssize_t)mh.msg_iov[0].iov_len;
				mh.msg_iov++;
				mh.msg_iovlen--;
			} else {
				mh.msg_iov[0].iov_base = (char *)mh.msg_iov[0].iov_base + n;
				mh.msg_iov[0].iov_len -= (size_t)n;
				n = 0;
			}
		}
	}
	return 0;
}

static void take_fds(struct frame_rx *rx, struct msghdr *mh)
{
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(mh); cm; cm = CMSG_NXTHDR(mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		int n = (int)((cm->cmsg_len - CMSG_LEN(0)) / sizeof(int));
		int *in = (int *)CMSG_DATA(cm);
		for (int i = 0; i < n; i++) {
			if (rx->nfds < FRAME_MAX_FDS)
				rx->fds[rx->nfds++] = in[i];
			else
				close(in[i]);
		}
	}
}

int frame_rx_read(int fd, struct frame_rx *rx)
{
	for (;;) {
		uint8_t *dst;
		size_t want;
		if (rx->hdr_have < 4) {
			dst = rx->hdr + rx->hdr_have;
			want = 4 - rx->hdr_have;
		} else {
			dst = rx->buf + rx->have;
			want = rx->len - rx->have;
			if (want == 0)
				return 1;
		}
		union {
			char buf[CMSG_SPACE(sizeof(int) * FRAME_MAX_FDS)];
			struct cmsghdr align;
		} u;
		struct iovec iov = { dst, want };
		struct msghdr mh = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
				     .msg_controllen = sizeof(u.buf) };
		ssize_t n = recvmsg(fd, &mh, MSG_CMSG_CLOEXEC);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno == EAGAIN ? 0 : -errno;
		}
		take_fds(rx, &mh);
		if (n == 0)
			return rx->hdr_have == 0 ? -EPIPE : -ECONNRESET;
		if (rx->hdr_have < 4) {
			rx->hdr_have += (size_t)n;
			if (rx->hdr_have == 4) {
				rx->len = (size_t)rx->hdr[0] << 24 | (size_t)rx->hdr[1] << 16 |
					  (size_t)rx->hdr[2] << 8 | rx->hdr[3];
				if (rx->len > FRAME_MAX)
					return -EMSGSIZE;
				rx->buf = malloc(rx->len ? rx->len : 1);
				if (!rx->buf)
					return -ENOMEM;
				rx->have = 0;
			}
		} else {
			rx->have += (size_t)n;
		}
	}
}

void frame_rx_reset(struct frame_rx *rx)
{
	free(rx->buf);
	for (int i = 0; i < rx->nfds; i++)
		if (rx->fds[i] >= 0)
			close(rx->fds[i]);
	memset(rx, 0, sizeof(*rx));
}

int frame_recv(int fd, uint8_t **buf, size_t *len, int *fds, int *nfds)
{
	struct frame_rx rx = { 0 };
	for (;;) {
		int rc = frame_rx_read(fd, &rx);
		if (rc == 1)
			break;
		if (rc < 0) {
			frame_rx_reset(&rx);
			return rc;
		}
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, -1) < 0 && errno != EINTR) {
			frame_rx_reset(&rx);
			return -errno;
		}
	}
	*buf = rx.buf;
	*len = rx.len;
	rx.buf = NULL;
	if (nfds) {
		*nfds = rx.nfds;
		memcpy(fds, rx.fds, sizeof(int) * (size_t)rx.nfds);
		rx.nfds = 0;
	}
	frame_rx_reset(&rx);
	return 0;
}
