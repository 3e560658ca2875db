/* A process tree for the checkpointer: the parent asks its child over a
 * pipe, keeping two requests ahead (bytes stay buffered in the pipe); the
 * child passes each to its own child (the grandchild) over a second pair of
 * pipes, adds a counter in MAP_SHARED|MAP_ANONYMOUS memory made before the
 * forks, and answers. At the end each waits for its child and the parent
 * prints the exit statuses and the counter. Only the parent writes stdout,
 * so the output depends on nothing but STEPS. With "reaper" first, a child
 * subreaper runs the tree below it and reaps what ends there (as storm's
 * node daemon does), so the pids of a tree killed at its dump are free
 * again. With "epoll", the parent paces itself with a periodic timerfd
 * instead of nanosleep and waits for each answer on an epoll set watching
 * the timerfd, the answer pipe and an eventfd it posts every step (the
 * output is the same). With "hold K,...", the parent waits after step K
 * until the file gate.K exists (gate.h).
 * usage: tree_prog [reaper] [epoll] [hold K,...] STEPS */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"

static void rd(int fd, void *b, size_t n)
{
	for (size_t got = 0; got < n;) {
		ssize_t r = read(fd, (char *)b + got, n - got);
		if (r <= 0)
			_exit(90);
		got += (size_t)r;
	}
}

static void wr(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		_exit(91);
}

int main(int argc, char **argv)
{
	if (argc > 2 && !strcmp(argv[1], "reaper")) {
		prctl(PR_SET_CHILD_SUBREAPER, 1);
		pid_t root = fork();
		if (root == 0) {
			argv[1] = argv[0];
			execv("/proc/self/exe", argv + 1);
			_exit(127);
		}
		fprintf(stderr, "root %d\n", (int)root);
		int ws, rs = 0;
		pid_t w;
		while ((w = wait(&ws)) > 0)
			if (w == root)
				rs = ws;
		return WIFEXITED(rs) ? WEXITSTATUS(rs) : 128 + WTERMSIG(rs);
	}
	bool ep = argc > 2 && !strcmp(argv[1], "epoll");
	const char *hold = gate_arg(&argc, argv, ep ? 2 : 1);
	long steps = argc > 1 ? atol(argv[argc - 1]) : 100;
	long *counter = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	int req[2], ans[2], req2[2], ans2[2];
	if (counter == MAP_FAILED || pipe(req) || pipe(ans) || pipe(req2) || pipe(ans2))
		return 1;
	pid_t child = fork();
	if (child == 0) {
		close(req[1]);
		close(ans[0]);
		pid_t gc = fork();
		if (gc == 0) { /* the grandchild: squares */
			close(req[0]);
			close(ans[1]);
			close(req2[1]);
			close(ans2[0]);
			for (;;) {
				long k;
				rd(req2[0], &k, sizeof(k));
				if (k < 0)
					_exit(7);
				k *= k;
				wr(ans2[1], &k, sizeof(k));
			}
		}
		close(req2[0]);
		close(ans2[1]);
		for (;;) {
			long k, sq;
			rd(req[0], &k, sizeof(k));
			wr(req2[1], &k, sizeof(k));
			if (k < 0)
				break;
			rd(ans2[0], &sq, sizeof(sq));
			(*counter)++;
			sq += *counter;
			wr(ans[1], &sq, sizeof(sq));
		}
		int ws;
		waitpid(gc, &ws, 0);
		_exit(WIFEXITED(ws) ? WEXITSTATUS(ws) + 1 : 99);
	}
	close(req[0]);
	close(ans[1]);
	close(req2[0]);
	close(req2[1]);
	close(ans2[0]);
	close(ans2[1]);
	int efd = -1, tfd = -1, epfd = -1;
	if (ep) {
		struct itimerspec its = { { 0, 20 * 1000 * 1000 }, { 0, 20 * 1000 * 1000 } };
		efd = eventfd(0, EFD_SEMAPHORE);
		tfd = timerfd_create(CLOCK_MONOTONIC, 0);
		epfd = epoll_create1(0);
		if (efd < 0 || tfd < 0 || epfd < 0 || timerfd_settime(tfd, 0, &its, NULL))
			return 1;
		int watch[] = { efd, tfd, ans[0] };
		for (int k = 0; k < 3; k++) {
			struct epoll_event e = { .events = EPOLLIN, .data.fd = watch[k] };
			if (epoll_ctl(epfd, EPOLL_CTL_ADD, watch[k], &e))
				return 1;
		}
	}
	long next = 0;
	for (; next < 2 && next < steps; next++)
		wr(req[1], &next, sizeof(next));
	for (long i = 0; i < steps; i++) {
		long a;
		if (ep) { /* the eventfd, a timer tick and the answer, all seen */
			uint64_t one = 1, v;
			wr(efd, &one, sizeof(one));
			for (int seen = 0; seen != 7;) {
				struct epoll_event e[3];
				int n = epoll_wait(epfd, e, 3, 5000);
				/* a stop (the dumper's, as SIGSTOP's) ends the wait early */
				if (n < 0 && errno == EINTR)
					continue;
				if (n <= 0) {
					printf("stuck at step %ld\n", i);
					return 1;
				}
				for (int k = 0; k < n; k++) {
					int bit = e[k].data.fd == efd ? 1 : e[k].data.fd == tfd ? 2 : 4;
					if (seen & bit)
						continue;
					if (bit == 4)
						rd(ans[0], &a, sizeof(a));
					else
						rd(e[k].data.fd, &v, sizeof(v));
					if (bit == 1 && v != 1)
						_exit(92);
					seen |= bit;
				}
			}
		} else {
			rd(ans[0], &a, sizeof(a));
		}
		/* The child counts answer i before sending it and may already be
		 * counting i + 1 (sent ahead): the shared counter reads i + 1 or
		 * i + 2 here, which one depends on scheduling, so only the range is
		 * printed. A counter no longer shared after a restore falls out
		 * of it. */
		long c = *counter;
		if (c == i + 1 || c == i + 2)
			printf("step %ld answer %ld counter in step\n", i, a);
		else
			printf("step %ld answer %ld counter %ld out of step\n", i, a, c);
		fflush(stdout);
		gate_hold(hold, i);
		if (next < steps) {
			wr(req[1], &next, sizeof(next));
			next++;
		}
		if (!ep) {
			struct timespec ts = { 0, 20 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	long end = -1;
	wr(req[1], &end, sizeof(end));
	int ws;
	waitpid(child, &ws, 0);
	printf("child exited %d, counter %ld\n", WIFEXITED(ws) ? WEXITSTATUS(ws) : -1, *counter);
	return 0;
}
