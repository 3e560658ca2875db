/* Rank 0's standard input, as `storm run` forwards it: the Stdin commands'
 * bytes are written into the pipe that is rank 0's fd 0 (with --pty, into
 * the pseudo-terminal that is its fds 0, 1 and 2), in order, without
 * blocking the daemon (the rest waits for the pipe to take it), and each
 * write is acknowledged to the MM (STDIN_ACK with the total so far) so the
 * CLI sends no more than the pipe has taken plus its window. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "nd.h"

#define STDIN_BUF_MAX (1u << 20) /* far above the CLI's window: a bound, not a limit */

static void stdin_close(struct nd *nd, struct nd_job *job)
{
	if (job->stdin_w >= 0 && job->stdin_pty && job->stdin_eof) {
		/* a terminal's end of input is its EOF character, not a close */
		char eof = 4; /* ^D, VEOF of a fresh terminal */
		ssize_t n = write(job->stdin_w, &eof, 1);
		(void)n; /* rank 0 gone: nothing to tell */
	}
	if (job->stdin_w >= 0) {
		if (job->stdin_polled)
			ev_io_del(nd->loop, job->stdin_w);
		close(job->stdin_w);
	}
	job->stdin_w = -1;
	job->stdin_polled = false;
	free(job->stdin_buf);
	job->stdin_buf = NULL;
	job->stdin_len = job->stdin_off = 0;
}

static void on_writable(void *arg, uint32_t events);

/* Writes what the pipe takes; waits for EPOLLOUT for the rest. */
static void stdin_pump(struct nd *nd, struct nd_job *job)
{
	uint64_t before = job->stdin_written;
	while (job->stdin_w >= 0 && job->stdin_off < job->stdin_len) {
		ssize_t n = write(job->stdin_w, job->stdin_buf + job->stdin_off,
				  job->stdin_len - job->stdin_off);
		if (n > 0) {
			job->stdin_off += (size_t)n;
			job->stdin_written += (uint64_t)n;
		} else if (n < 0 && errno == EINTR) {
			continue;
		} else if (n < 0 && errno == EAGAIN) {
			break;
		} else {
			/* rank 0 closed its stdin or ended: the rest has no reader */
			stdin_close(nd, job);
			break;
		}
	}
	if (job->stdin_w >= 0 && job->stdin_off == job->stdin_len) {
		job->stdin_off = job->stdin_len = 0;
		if (job->stdin_eof)
			stdin_close(nd, job);
	}
	bool want = job->stdin_w >= 0 && job->stdin_len > 0;
	if (want && !job->stdin_polled)
		job->stdin_polled = ev_io_add(nd->loop, job->stdin_w, EPOLLOUT, on_writable, job) == 0;
	else if (!want && job->stdin_polled && job->stdin_w >= 0) {
		ev_io_del(nd->loop, job->stdin_w);
		job->stdin_polled = false;
	}
	if (job->stdin_written != before)
		nd_queue_value(nd, job->id, STORM__CL__JOB_NOTE__KIND__STDIN_ACK, job->stdin_written);
}

static void on_writable(void *arg, uint32_t events)
{
	(void)events;
	struct nd_job *job = arg;
	stdin_pump(job->daemon, job);
}

void nd_stdin(struct nd *nd, const Storm__Cl__Stdin *s)
{
	struct nd_job *job = nd->jobs;
	while (job && job->id != s->job)
		job = job->next;
	if (!job || job->stdin_w < 0)
		return; /* not rank 0's node, or rank 0's stdin is closed: nothing to feed */
	if (s->data.len) {
		if (job->stdin_len + s->data.len > STDIN_BUF_MAX) {
			slog("job %" PRIu64 ": more stdin waiting than %u bytes; rank 0's stdin closed",
			     job->id, STDIN_BUF_MAX);
			stdin_close(nd, job);
			return;
		}
		uint8_t *nb = realloc(job->stdin_buf, job->stdin_len + s->data.len);
		if (!nb) {
			stdin_close(nd, job);
			return;
		}
		memcpy(nb + job->stdin_len, s->data.data, s->data.len);
		job->stdin_buf = nb;
		job->stdin_len += s->data.len;
	}
	job->stdin_eof |= s->eof;
	stdin_pump(nd, job);
}

int nd_stdin_open(struct nd_job *job, int *read_end)
{
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	fcntl(p[1], F_SETFL, fcntl(p[1], F_GETFL) | O_NONBLOCK);
	job->stdin_w = p[1];
	*read_end = p[0];
	return 0;
}

int nd_pty_open(struct nd_job *job, uint32_t rows, uint32_t cols, int *master, int *slave)
{
	int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	char name[64];
	if (m < 0)
		return -errno;
	if (grantpt(m) < 0 || unlockpt(m) < 0 || ptsname_r(m, name, sizeof(name)) != 0) {
		int err = errno;
		close(m);
		return -err;
	}
	int s = open(name, O_RDWR | O_NOCTTY | O_CLOEXEC);
	if (s < 0) {
		int err = errno;
		close(m);
		return -err;
	}
	struct winsize ws = { .ws_row = (unsigned short)(rows ? rows : 24),
			      .ws_col = (unsigned short)(cols ? cols : 80) };
	ioctl(m, TIOCSWINSZ, &ws);
	int w = fcntl(m, F_DUPFD_CLOEXEC, 3);
	if (w < 0) {
		int err = errno;
		close(m);
		close(s);
		return -err;
	}
	fcntl(m, F_SETFL, fcntl(m, F_GETFL) | O_NONBLOCK); /* w shares it */
	job->stdin_w = w;
	job->stdin_pty = true;
	*master = m;
	*slave = s;
	return 0;
}

void nd_stdin_end(struct nd *nd, struct nd_job *job)
{
	stdin_close(nd, job);
}
