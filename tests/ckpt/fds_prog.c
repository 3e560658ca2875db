/* A test program for the checkpointer's descriptors (tests/ckpt/test_ckpt.sh).
 *
 *   fds_prog objects STEPS   a pipe with both ends (and a dup of its write
 *       end), an eventfd (semaphore), a timerfd, a signalfd, an epoll set
 *       watching the eventfd, timerfd and pipe, watched by a second epoll, a
 *       memfd (mapped shared, a second open file of it, a seal), a memfd only
 *       mapped, a MAP_SHARED|MAP_ANONYMOUS area mapped twice (mremap), a
 *       FIFO, a directory, /dev/null and /dev/urandom. Each step waits on
 *       the outer epoll until the timer, the eventfd and the pipe were all
 *       seen, and prints what it read: one line a step that depends only on
 *       the step, so a run checkpointed, killed and restored prints what an
 *       uninterrupted one does; a broken object prints something else or
 *       "stuck" (exit 1). With "hold K,..." after STEPS, it waits after
 *       step K until the file gate.K exists (gate.h).
 *   fds_prog tcp|unix|sysv|ptimer|seccomp|tick   holds a connected TCP
 *       socket, a Unix socket, a SysV shared memory segment, a POSIX timer
 *       (timer_create), a seccomp filter (one that allows every call) or
 *       nothing more (but whatever descriptors it was given) and prints
 *       "tick N" every 20 ms until killed. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "gate.h"

#define REC 16 /* one record in the pipe and the FIFO */
#define MEMSZ 65536

static void die(const char *what)
{
	printf("error %s: %s\n", what, strerror(errno));
	exit(1);
}

static void ticker(void)
{
	for (long n = 0;; n++) {
		printf("tick %ld\n", n);
		fflush(stdout);
		struct timespec ts = { 0, 20000000 };
		nanosleep(&ts, NULL);
	}
}

static int holds(const char *kind)
{
	if (!strcmp(kind, "tcp")) {
		/* the connected socket first, so it is the lowest fd refused */
		int c = socket(AF_INET, SOCK_STREAM, 0), l = socket(AF_INET, SOCK_STREAM, 0);
		struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t al = sizeof(a);
		if (c < 0 || l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(l, 1) < 0 ||
		    getsockname(l, (struct sockaddr *)&a, &al) < 0 ||
		    connect(c, (struct sockaddr *)&a, sizeof(a)) < 0 || accept(l, NULL, NULL) < 0)
			die("tcp");
	} else if (!strcmp(kind, "unix")) {
		int s = socket(AF_UNIX, SOCK_DGRAM, 0);
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		snprintf(a.sun_path, sizeof(a.sun_path), "fds.sock");
		unlink(a.sun_path);
		if (s < 0 || bind(s, (struct sockaddr *)&a, sizeof(a)) < 0)
			die("unix");
	} else if (!strcmp(kind, "sysv")) {
		int id = shmget(IPC_PRIVATE, 8192, IPC_CREAT | 0600);
		char *p = id < 0 ? (char *)-1 : shmat(id, NULL, 0);
		if (p == (char *)-1)
			die("shm");
		shmctl(id, IPC_RMID, NULL); /* gone once we are */
		p[0] = 1;
	} else if (!strcmp(kind, "ptimer")) {
		/* armed far ahead: held, never firing during the test */
		struct sigevent sev = { .sigev_notify = SIGEV_SIGNAL, .sigev_signo = SIGUSR2 };
		struct itimerspec its = { { 0, 0 }, { 3600, 0 } };
		timer_t t;
		signal(SIGUSR2, SIG_IGN);
		if (timer_create(CLOCK_MONOTONIC, &sev, &t) < 0 || timer_settime(t, 0, &its, NULL) < 0)
			die("timer_create");
	} else if (!strcmp(kind, "seccomp")) {
		struct sock_filter allow = BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
		struct sock_fprog prog = { 1, &allow };
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
		    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
			die("seccomp");
	} else if (strcmp(kind, "tick")) {
		return 2;
	}
	ticker();
	return 0;
}

/* The step's record: "rec NNNNNNNNNNN\n". */
static void record(char *r, long n)
{
	snprintf(r, REC + 1, "rec %010ld\n", n % 10000000000l);
}

static uint64_t sum(const unsigned char *p, size_t n)
{
	uint64_t h = 1469598103934665603ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	return h;
}

enum { T_TIMER = 1, T_EVENT, T_PIPE, T_INNER };

int main(int argc, char **argv)
{
	if (argc == 2)
		return holds(argv[1]);
	const char *hold = gate_arg(&argc, argv, 3);
	if (argc != 3 || strcmp(argv[1], "objects")) {
		fprintf(stderr, "usage: fds_prog objects STEPS [hold K,...] | tcp | unix | sysv | ptimer | seccomp | tick\n");
		return 2;
	}
	long steps = atol(argv[2]);
	char r[REC + 1];
	int p[2];
	if (pipe2(p, O_CLOEXEC) < 0 || fcntl(p[0], F_SETFL, O_NONBLOCK) < 0)
		die("pipe");
	int pw2 = dup(p[1]); /* one open file, two numbers */
	for (long n = 0; n < 3; n++) { /* three records always buffered */
		record(r, n);
		if (write(p[1], r, REC) != REC)
			die("pipe write");
	}
	int ev = eventfd(0, EFD_SEMAPHORE | EFD_NONBLOCK);
	int tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	struct itimerspec its = { { 0, 4000000 }, { 0, 4000000 } };
	if (ev < 0 || tfd < 0 || timerfd_settime(tfd, 0, &its, NULL) < 0)
		die("eventfd/timerfd");
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	sigprocmask(SIG_BLOCK, &usr1, NULL);
	int sfd = signalfd(-1, &usr1, SFD_CLOEXEC);
	int ep = epoll_create1(0), outer = epoll_create1(EPOLL_CLOEXEC);
	struct epoll_event e = { .events = EPOLLIN };
	e.data.u64 = T_TIMER;
	if (sfd < 0 || ep < 0 || outer < 0 || epoll_ctl(ep, EPOLL_CTL_ADD, tfd, &e) < 0)
		die("epoll");
	e.data.u64 = T_EVENT;
	epoll_ctl(ep, EPOLL_CTL_ADD, ev, &e);
	e.data.u64 = T_PIPE;
	epoll_ctl(ep, EPOLL_CTL_ADD, p[0], &e);
	e.data.u64 = T_INNER;
	if (epoll_ctl(outer, EPOLL_CTL_ADD, ep, &e) < 0)
		die("nested epoll");
	/* a memfd: mapped shared, and a read-only open file of its own */
	int mfd = memfd_create("fds-test", MFD_ALLOW_SEALING | MFD_CLOEXEC);
	if (mfd < 0 || ftruncate(mfd, MEMSZ) < 0 || fcntl(mfd, F_ADD_SEALS, F_SEAL_SHRINK) < 0)
		die("memfd");
	unsigned char *mm = mmap(NULL, MEMSZ, PROT_READ | PROT_WRITE, MAP_SHARED, mfd, 0);
	char self[64];
	snprintf(self, sizeof(self), "/proc/self/fd/%d", mfd);
	int mro = open(self, O_RDONLY);
	/* a memfd whose descriptor is gone: only its mapping holds it */
	int gone = memfd_create("fds-mapped", 0);
	if (gone < 0 || ftruncate(gone, 8192) < 0)
		die("memfd 2");
	unsigned char *gm = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, gone, 0);
	close(gone);
	/* shared anonymous memory, its second page mapped again elsewhere
	 * and its third read-only at the first mapping */
	unsigned char *sh = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
				 -1, 0);
	unsigned char *alias = sh == MAP_FAILED ? MAP_FAILED
						 : mremap(sh + 4096, 0, 2 * 4096, MREMAP_MAYMOVE);
	if (mm == MAP_FAILED || mro < 0 || gm == MAP_FAILED || alias == MAP_FAILED ||
	    mprotect(sh + 2 * 4096, 4096, PROT_READ) < 0)
		die("mappings");
	/* a FIFO with both ends here, one record always in it */
	unlink("fds.fifo");
	if (mkfifo("fds.fifo", 0600) < 0)
		die("mkfifo");
	int fr = open("fds.fifo", O_RDONLY | O_NONBLOCK), fw = open("fds.fifo", O_WRONLY);
	record(r, 1000);
	if (fr < 0 || fw < 0 || write(fw, r, REC) != REC)
		die("fifo");
	int dir = open(".", O_DIRECTORY | O_RDONLY), null = open("/dev/null", O_WRONLY);
	int rnd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (dir < 0 || null < 0 || rnd < 0)
		die("dir/devices");

	uint64_t ticks = 0;
	for (long s = 0; s < steps; s++) {
		uint64_t two = 2;
		if (write(ev, &two, 8) != 8)
			die("eventfd write");
		int seen = 0, waits = 0;
		while (seen != 7) {
			struct epoll_event o[4], in[8];
			int n = epoll_wait(outer, o, 4, 5000);
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0 || o[0].data.u64 != T_INNER || ++waits > 100000) {
				printf("step %ld stuck (seen %d)\n", s, seen);
				return 1;
			}
			int m = epoll_wait(ep, in, 8, 0);
			for (int i = 0; i < m; i++) {
				uint64_t v;
				if (in[i].data.u64 == T_TIMER && read(tfd, &v, 8) == 8) {
					ticks += v;
					seen |= 1;
				} else if (in[i].data.u64 == T_EVENT && !(seen & 2) &&
					   read(ev, &v, 8) == 8 && v == 1) { /* once a step */
					seen |= 2;
				} else if (in[i].data.u64 == T_PIPE) {
					seen |= 4;
				}
			}
		}
		/* the record written three steps ago */
		char got[REC + 1] = "";
		if (read(p[0], got, REC) != REC)
			die("pipe read");
		record(r, s + 3);
		if (write(s % 2 ? pw2 : p[1], r, REC) != REC)
			die("pipe write");
		/* the FIFO's: written a step ago (the first at the start) */
		char fgot[REC + 1] = "";
		if (read(fr, fgot, REC) != REC)
			die("fifo read");
		record(r, 1001 + s);
		if (write(fw, r, REC) != REC)
			die("fifo write");
		/* the eventfd's count: one more each step, counted every 10 */
		long drained = -1;
		if (s % 10 == 9) {
			uint64_t v;
			drained = 0;
			while (read(ev, &v, 8) == 8)
				drained++;
		}
		int sig = 0;
		if (s % 5 == 0) {
			struct signalfd_siginfo si;
			raise(SIGUSR1);
			if (read(sfd, &si, sizeof(si)) == sizeof(si))
				sig = (int)si.ssi_signo;
		}
		/* the memfd through its mapping, its descriptor and its second open file */
		mm[(s * 97) % MEMSZ] = (unsigned char)s;
		unsigned char b = (unsigned char)(s * 3);
		if (pwrite(mfd, &b, 1, (s * 131 + 7) % MEMSZ) != 1)
			die("memfd write");
		unsigned char c;
		if (read(mro, &c, 1) != 1) /* its offset moves a byte a step */
			die("memfd read");
		gm[(s * 13) % 8192] ^= (unsigned char)(s + 1);
		alias[(s * 7) % 8192] = (unsigned char)(s + 5); /* the first's pages 2 and 3 */
		unsigned char shv = sh[4096 + (s * 7) % 8192];
		struct stat st;
		char nb[8];
		int flags_ok = (fcntl(p[0], F_GETFL) & O_NONBLOCK) && !(fcntl(p[1], F_GETFL) & O_NONBLOCK) &&
			       (fcntl(p[0], F_GETFD) & FD_CLOEXEC) && !(fcntl(pw2, F_GETFD) & FD_CLOEXEC) &&
			       (fcntl(tfd, F_GETFL) & O_NONBLOCK) && (fcntl(rnd, F_GETFD) & FD_CLOEXEC) &&
			       (fcntl(fr, F_GETFL) & O_NONBLOCK) && !(fcntl(fw, F_GETFL) & O_NONBLOCK) &&
			       fcntl(mfd, F_GET_SEALS) == F_SEAL_SHRINK && (fcntl(mro, F_GETFL) & O_ACCMODE) == O_RDONLY;
		int misc_ok = write(null, "x", 1) == 1 && read(rnd, nb, 8) == 8 &&
			      fstatat(dir, "fds.marker", &st, 0) == 0;
		printf("step %ld pipe %.14s fifo %.14s ev %ld sig %d mem %016llx/%u/%016llx "
		       "shm %u flags %s misc %s\n",
		       s, got, fgot, drained, sig, (unsigned long long)sum(mm, MEMSZ), c,
		       (unsigned long long)sum(gm, 8192), shv, flags_ok ? "ok" : "BAD",
		       misc_ok ? "ok" : "BAD");
		fflush(stdout);
		gate_hold(hold, s);
	}
	printf("done %s\n", ticks >= (uint64_t)steps ? "timer ok" : "timer slow");
	return 0;
}
