/* Control-socket framing (common/frame.c) as the MM reads it: the input is
 * the byte stream a client writes, fed through a real socket pair.
 * Properties: every frame frame_rx_read returns is exactly the length its
 * header says and holds exactly the bytes that followed it; a header above
 * FRAME_MAX gives -EMSGSIZE and nothing else; a frame_send of any payload
 * comes back unchanged. */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "frame.h"
#include "fuzz.h"

static void pair(int sv[2])
{
	FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == 0, "socketpair");
	fcntl(sv[0], F_SETFL, O_NONBLOCK);
	fcntl(sv[1], F_SETFL, O_NONBLOCK);
	int sz = 1 << 18;
	setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &sz, sizeof(sz));
	setsockopt(sv[1], SOL_SOCKET, SO_RCVBUF, &sz, sizeof(sz));
}

/* The stream as the MM would see it, compared with a reference parse. */
static void stream(const uint8_t *data, size_t size)
{
	int sv[2];
	pair(sv);
	size_t sent = 0;
	while (sent < size) {
		ssize_t n = write(sv[0], data + sent, size - sent);
		if (n <= 0)
			break; /* the socket is full: the rest never arrives */
		sent += (size_t)n;
	}
	close(sv[0]); /* the client is gone after its bytes */
	struct frame_rx rx = {0};
	size_t pos = 0;
	for (;;) {
		int rc = frame_rx_read(sv[1], &rx);
		if (rc == 1) {
			FUZZ_ASSERT(pos + 4 <= sent, "a frame without a whole header");
			size_t want = (size_t)data[pos] << 24 | (size_t)data[pos + 1] << 16 |
				      (size_t)data[pos + 2] << 8 | data[pos + 3];
			FUZZ_ASSERT(rx.len == want, "frame of %zu bytes, header says %zu", rx.len, want);
			FUZZ_ASSERT(pos + 4 + want <= sent, "frame longer than the stream");
			FUZZ_ASSERT(!want || !memcmp(rx.buf, data + pos + 4, want), "frame bytes differ");
			pos += 4 + want;
			frame_rx_reset(&rx);
			continue;
		}
		FUZZ_ASSERT(rc != 0, "need more data on a closed socket");
		if (rc == -EMSGSIZE) {
			size_t want = (size_t)data[pos] << 24 | (size_t)data[pos + 1] << 16 |
				      (size_t)data[pos + 2] << 8 | data[pos + 3];
			FUZZ_ASSERT(want > FRAME_MAX, "-EMSGSIZE for %zu bytes", want);
		} else if (rc == -EPIPE) {
			FUZZ_ASSERT(pos == sent, "clean end with %zu bytes unread", sent - pos);
		} else {
			FUZZ_ASSERT(rc == -ECONNRESET, "unexpected %d", rc);
			FUZZ_ASSERT(pos < sent, "reset at a frame boundary");
		}
		break;
	}
	frame_rx_reset(&rx);
	close(sv[1]);
}

/* The input as one payload: frame_send then frame_recv give it back. */
static void round_trip(const uint8_t *data, size_t size)
{
	int sv[2];
	pair(sv);
	FUZZ_ASSERT(frame_send(sv[0], data, size, NULL, 0) == 0, "frame_send of %zu bytes", size);
	uint8_t *buf = NULL;
	size_t len = 0;
	int fds[FRAME_MAX_FDS], nfds = 0;
	FUZZ_ASSERT(frame_recv(sv[1], &buf, &len, fds, &nfds) == 0, "frame_recv");
	FUZZ_ASSERT(len == size && (!size || !memcmp(buf, data, size)) && nfds == 0,
		    "round trip changed the payload");
	free(buf);
	close(sv[0]);
	close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	stream(data, size);
	if (size <= 65536)
		round_trip(data, size);
	return 0;
}
