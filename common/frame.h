/* Length-prefixed frames over a stream socket: a 4-byte big-endian length,
 * then the bytes; file descriptors may ride along (SCM_RIGHTS) with a frame's
 * first byte. Used for the control protocol (proto/control.proto). */
#ifndef STORM_FRAME_H
#define STORM_FRAME_H

#include <stddef.h>
#include <stdint.h>

#define FRAME_MAX (16u << 20) /* larger frames are a protocol error */
#define FRAME_MAX_FDS 16

/* Blocking send of one frame (retries on EINTR and short writes). 0 or -errno. */
int frame_send(int fd, const void *buf, size_t len, const int *fds, int nfds);

/* Incremental receive for non-blocking sockets. */
struct frame_rx {
	uint8_t hdr[4];
	size_t hdr_have;
	uint8_t *buf;
	size_t len, have;
	int fds[FRAME_MAX_FDS];
	int nfds;
};
/* Reads what is available. Returns 1 when a whole frame is in rx->buf/len
 * (take it, then frame_rx_reset), 0 if more is needed, -EPIPE at a clean end
 * between frames, -EMSGSIZE for an oversize frame, another -errno else. */
int frame_rx_read(int fd, struct frame_rx *rx);
/* Frees the frame and closes descriptors not taken (set to -1 when taken). */
void frame_rx_reset(struct frame_rx *rx);

/* Blocking receive of one frame into a malloc'd buffer; fds as above. */
int frame_recv(int fd, uint8_t **buf, size_t *len, int *fds, int *nfds);

#endif
