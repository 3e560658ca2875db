/* The pure parts of saving descriptors (checkpoint/fdinfo.c): fdinfo
 * parsers, socket names, the file table's checks and the epoll order. */
#include <CUnit/CUnit.h>
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/un.h>
#include <time.h>

#include "ckpt.h"
#include "fdinfo.h"
#include "suites.h"

static void test_common(void)
{
	struct ckpt_fdinfo fi;
	CU_ASSERT_EQUAL(ckpt_fdinfo_common("pos:\t97\nflags:\t02102001\nmnt_id:\t27\nino:\t10953382\n",
					   &fi), 0);
	CU_ASSERT_EQUAL(fi.pos, 97);
	CU_ASSERT_EQUAL(fi.flags, O_CLOEXEC | O_APPEND | O_WRONLY | 0100000);
	CU_ASSERT_EQUAL(fi.ino, 10953382);
	CU_ASSERT_STRING_EQUAL(fi.lock, "");
	CU_ASSERT_EQUAL(ckpt_fdinfo_common("pos:\t0\nflags:\t02\nino:\t5\n"
					   "lock:\t1: POSIX  ADVISORY  WRITE 1234 00:05:123 0 EOF\n",
					   &fi), 0);
	CU_ASSERT_STRING_EQUAL(fi.lock, "POSIX ADVISORY WRITE");
	CU_ASSERT_EQUAL(ckpt_fdinfo_common("flags:\t02\n", &fi), -EINVAL);
	CU_ASSERT_EQUAL(ckpt_fdinfo_common("pos:\t-1\nflags:\t02\n", &fi), -EINVAL);
	CU_ASSERT_EQUAL(ckpt_fdinfo_common("pos:\t0\nflags:\t09\n", &fi), -EINVAL); /* octal */
}

static void test_eventfd(void)
{
	uint64_t count;
	int sem;
	const char *six = "pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\n"
			  "eventfd-count:                1f\neventfd-id: 1\neventfd-semaphore: 1\n";
	CU_ASSERT_EQUAL(ckpt_fdinfo_eventfd(six, &count, &sem), 0);
	CU_ASSERT_EQUAL(count, 31); /* hexadecimal */
	CU_ASSERT_EQUAL(sem, 1);
	/* before 6.6: no semaphore line */
	CU_ASSERT_EQUAL(ckpt_fdinfo_eventfd("pos:\t0\neventfd-count:         fffffffffffffffe\n",
					    &count, &sem), 0);
	CU_ASSERT_EQUAL(count, 0xfffffffffffffffeull);
	CU_ASSERT_EQUAL(sem, 0);
	CU_ASSERT_EQUAL(ckpt_fdinfo_eventfd("pos:\t0\n", &count, &sem), -EINVAL);
	CU_ASSERT_EQUAL(ckpt_fdinfo_eventfd("eventfd-count: 5\neventfd-semaphore: x\n", &count, &sem),
			-EINVAL);
}

static void test_timerfd(void)
{
	struct ckpt_timerfd t;
	CU_ASSERT_EQUAL(ckpt_fdinfo_timerfd("pos:\t0\nflags:\t04002\nclockid: 1\nticks: 3\n"
					    "settime flags: 01\nit_value: (3, 468498681)\n"
					    "it_interval: (1, 0)\n", &t), 0);
	CU_ASSERT_EQUAL(t.clockid, CLOCK_MONOTONIC);
	CU_ASSERT_EQUAL(t.ticks, 3);
	CU_ASSERT_EQUAL(t.settime_flags, 1);
	CU_ASSERT_EQUAL(t.value_ns, 3468498681ull);
	CU_ASSERT_EQUAL(t.interval_ns, 1000000000ull);
	CU_ASSERT_EQUAL(ckpt_fdinfo_timerfd("clockid: 1\nticks: 0\nsettime flags: 00\n"
					    "it_value: (0, 0)\n", &t), -EINVAL); /* no interval */
	CU_ASSERT_EQUAL(ckpt_fdinfo_timerfd("clockid: 1\nticks: 0\nsettime flags: 00\n"
					    "it_value: (0, 1000000000)\nit_interval: (0, 0)\n", &t),
			-EINVAL);
}

static void test_signalfd(void)
{
	uint64_t m;
	CU_ASSERT_EQUAL(ckpt_fdinfo_signalfd("pos:\t0\nflags:\t04002\nsigmask:\t0000000000004200\n", &m),
			0);
	CU_ASSERT_EQUAL(m, (1ull << 9) | (1ull << 14)); /* SIGUSR1, SIGTERM */
	CU_ASSERT_EQUAL(ckpt_fdinfo_signalfd("pos:\t0\n", &m), -EINVAL);
}

static void test_epoll(void)
{
	struct ckpt_epoll_item *it;
	const char *two = "pos:\t0\nflags:\t02\nmnt_id:\t17\nino:\t1038\n"
			  "tfd:        5 events: 80000019 data:             1234  pos:0 ino:40e sdev:10\n"
			  "tfd:       12 events:       19 data:               4d  pos:0 ino:40e sdev:10\n";
	CU_ASSERT_EQUAL(ckpt_fdinfo_epoll(two, &it), 2);
	CU_ASSERT_EQUAL(it[0].tfd, 5);
	CU_ASSERT_EQUAL(it[0].events, EPOLLET | EPOLLIN | EPOLLERR | EPOLLHUP);
	CU_ASSERT_EQUAL(it[0].data, 0x1234);
	CU_ASSERT_EQUAL(it[1].tfd, 12);
	CU_ASSERT_EQUAL(it[1].data, 0x4d);
	free(it);
	CU_ASSERT_EQUAL(ckpt_fdinfo_epoll("pos:\t0\nflags:\t02\n", &it), 0);
	CU_ASSERT_PTR_NULL(it);
	CU_ASSERT_EQUAL(ckpt_fdinfo_epoll("tfd: 5 events: zz data: 1\n", &it), -EINVAL);
	CU_ASSERT_EQUAL(ckpt_fdinfo_epoll("tfd: -3 events: 1 data: 1\n", &it), -EINVAL);
}

static void test_socket_names(void)
{
	char b[256];
	struct sockaddr_in l = { .sin_family = AF_INET, .sin_port = htons(4000) };
	struct sockaddr_in p = { .sin_family = AF_INET, .sin_port = htons(5000) };
	inet_pton(AF_INET, "127.0.0.1", &l.sin_addr);
	inet_pton(AF_INET, "127.0.0.1", &p.sin_addr);
	ckpt_describe_socket(AF_INET, SOCK_STREAM, 0, (struct sockaddr *)&l, sizeof(l),
			     (struct sockaddr *)&p, sizeof(p), b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a TCP socket (127.0.0.1:4000 -> 127.0.0.1:5000)");
	ckpt_describe_socket(AF_INET, SOCK_STREAM, 1, (struct sockaddr *)&l, sizeof(l), NULL, 0, b,
			     sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a TCP socket (listening on 127.0.0.1:4000)");
	struct sockaddr_in6 s6 = { .sin6_family = AF_INET6, .sin6_port = htons(53),
				   .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	ckpt_describe_socket(AF_INET6, SOCK_DGRAM | SOCK_CLOEXEC, 0, (struct sockaddr *)&s6,
			     sizeof(s6), NULL, 0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a UDP socket (bound to [::1]:53)");
	struct sockaddr_in any = { .sin_family = AF_INET };
	ckpt_describe_socket(AF_INET, SOCK_DGRAM, 0, (struct sockaddr *)&any, sizeof(any), NULL, 0,
			     b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a UDP socket (unnamed)");
	struct sockaddr_un u = { .sun_family = AF_UNIX, .sun_path = "/run/x.sock" };
	ckpt_describe_socket(AF_UNIX, SOCK_STREAM, 0, (struct sockaddr *)&u,
			     offsetof(struct sockaddr_un, sun_path) + 12, NULL, 0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a Unix stream socket (bound to /run/x.sock)");
	struct sockaddr_un ab = { .sun_family = AF_UNIX };
	memcpy(ab.sun_path, "\0bus", 4);
	ckpt_describe_socket(AF_UNIX, SOCK_SEQPACKET, 0, NULL, 0, (struct sockaddr *)&ab,
			     offsetof(struct sockaddr_un, sun_path) + 4, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a Unix seqpacket socket (unnamed -> @bus)");
	ckpt_describe_socket(AF_UNIX, SOCK_STREAM, 0, (struct sockaddr *)&u, sizeof(sa_family_t),
			     NULL, 0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a Unix stream socket (unnamed)");
	ckpt_describe_socket(AF_NETLINK, SOCK_RAW, 0, NULL, 0, NULL, 0, b, sizeof(b));
	CU_ASSERT_STRING_EQUAL(b, "a netlink socket");
}

/* A table to check, built by hand (no protobuf-c calls: zeroed messages). */
struct table {
	Storm__Ckpt__FileTable ft;
	Storm__Ckpt__File f[8], *fp[8];
	Storm__Ckpt__EpollItem it[8], *itp[8];
	Storm__Ckpt__Pipe p, *pp;
	Storm__Ckpt__Memfd m, *mp;
	Storm__Ckpt__Run run, *runp;
};

/* fd 0 /dev/null, 1 inherited, 3 a pipe's read end, 4 its write end,
 * 5 a dup of 4, 6 an eventfd, 7 an epoll on 3 and 6, 8 an epoll on 7, 9 a
 * memfd of two pages with one saved in page section 0. */
static void table(struct table *t)
{
	memset(t, 0, sizeof(*t));
	int fds[] = { 0, 1, 3, 4, 5, 6, 7, 8 };
	unsigned kinds[] = { CKPT_FILE_DEVICE, CKPT_FILE_INHERITED, CKPT_FILE_PIPE, CKPT_FILE_PIPE,
			     CKPT_FILE_PIPE, CKPT_FILE_EVENTFD, CKPT_FILE_EPOLL, CKPT_FILE_EPOLL };
	for (int i = 0; i < 8; i++) {
		t->f[i].fd = fds[i];
		t->f[i].kind = kinds[i];
		t->f[i].path = (char *)(i == 0 ? "/dev/null" : "x");
		t->fp[i] = &t->f[i];
		t->itp[i] = &t->it[i];
	}
	t->f[2].object = t->f[3].object = t->f[4].object = 77;
	t->f[4].dup = 1;
	t->f[4].dup_of = 4;
	t->it[0].tfd = 3;
	t->it[1].tfd = 6;
	t->f[6].items = &t->itp[0];
	t->f[6].n_items = 2;
	t->it[2].tfd = 7;
	t->f[7].items = &t->itp[2];
	t->f[7].n_items = 1;
	t->p.id = 77;
	t->p.size = 65536;
	t->pp = &t->p;
	t->ft.files = t->fp;
	t->ft.n_files = 8;
	t->ft.pipes = &t->pp;
	t->ft.n_pipes = 1;
	t->m.id = 99;
	t->m.name = (char *)"m";
	t->m.size = 8192;
	t->run.page = 1;
	t->run.count = 1;
	t->runp = &t->run;
	t->m.runs = &t->runp;
	t->m.n_runs = 1;
	t->m.pages_section = 0;
	t->mp = &t->m;
	t->ft.memfds = &t->mp;
	t->ft.n_memfds = 1;
}

static void test_check(void)
{
	struct table t;
	char err[256];
	struct ckpt_sec secs[1] = { { CKPT_SEC_PAGES, 0, 4096, 4096, 0 } };
	struct ckpt_header h = { .nsec = 1, .secs = secs };
	table(&t);
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), 0);
	/* the memfd's section is missing or of another length */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, NULL, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "memfd 0"));
	secs[0].length = 8192;
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	secs[0].length = 4096;
	t.run.count = 2; /* past its size */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.f[3].fd = 3;
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "fd 3 twice"));
	table(&t);
	t.f[4].dup_of = 6; /* not a pipe */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.f[4].dup_of = 8; /* not below it */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.f[2].object = 78; /* no such pipe */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.p.data.len = 70000; /* more than it holds */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.it[1].tfd = 20; /* watches a fd the table lacks */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.it[1].tfd = 8; /* 7 watches 8 watches 7 */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "loop"));
	table(&t);
	t.f[1].kind = CKPT_FILE_KINDS;
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.f[0].path = (char *)"dev/null"; /* by path: an absolute one */
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	table(&t);
	t.f[7].fd = 70000;
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, NULL, &h, err, sizeof(err)), -EINVAL);
	/* an area mapping a memfd the table has, and one it has not */
	table(&t);
	Storm__Ckpt__Vma v;
	memset(&v, 0, sizeof(v));
	v.kind = CKPT_VMA_MEMFD;
	v.shm_id = 99;
	Storm__Ckpt__Vma *vp = &v;
	Storm__Ckpt__VmaTable vt;
	memset(&vt, 0, sizeof(vt));
	vt.vmas = &vp;
	vt.n_vmas = 1;
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, &vt, &h, err, sizeof(err)), 0);
	v.shm_id = 98;
	CU_ASSERT_EQUAL(ckpt_files_check(&t.ft, &vt, &h, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "section vmas"));
}

static void test_epoll_order(void)
{
	struct table t;
	size_t order[8];
	table(&t);
	/* 8 watches 7: 7 is filled first whatever the table's order */
	Storm__Ckpt__File *tmp = t.fp[6];
	t.fp[6] = t.fp[7];
	t.fp[7] = tmp;
	CU_ASSERT_EQUAL(ckpt_epoll_order(&t.ft, order), 2);
	CU_ASSERT_EQUAL(t.ft.files[order[0]]->fd, 7);
	CU_ASSERT_EQUAL(t.ft.files[order[1]]->fd, 8);
	/* through a dup of 7 at 5 */
	table(&t);
	t.f[4].kind = CKPT_FILE_EPOLL;
	t.f[4].fd = 9;
	t.f[4].dup_of = 7;
	t.it[2].tfd = 9;
	CU_ASSERT_EQUAL(ckpt_epoll_order(&t.ft, order), 2);
	CU_ASSERT_EQUAL(t.ft.files[order[0]]->fd, 7);
	table(&t);
	t.it[0].tfd = 8;
	CU_ASSERT_EQUAL(ckpt_epoll_order(&t.ft, order), -ELOOP);
}

/* What a restore does to a regular file changed since the checkpoint, and
 * what it says of it. */
static void test_fsize(void)
{
	uint64_t pos;
	char line[512];
	/* unchanged: nothing done, nothing said */
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_WRONLY, 1000, 1000, 1000, &pos), CKPT_FSIZE_SAME);
	CU_ASSERT_EQUAL(pos, 1000);
	ckpt_fsize_say("out.f", O_WRONLY, 1000, 1000, CKPT_FSIZE_SAME, NULL, line, sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "");
	/* written since, not O_APPEND: cut back, the offset as it was */
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_WRONLY, 1000, 1000, 1234, &pos), CKPT_FSIZE_CUT);
	CU_ASSERT_EQUAL(pos, 1000);
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_RDWR, 1000, 10, 1234, &pos), CKPT_FSIZE_CUT);
	CU_ASSERT_EQUAL(pos, 10);
	ckpt_fsize_say("out.f", O_WRONLY, 1000, 1234, CKPT_FSIZE_CUT, "out.f.storm-cut-X", line,
		       sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "out.f: cut back from 1234 to 1000 bytes (the size at the "
			       "checkpoint); the 234 bytes cut are kept in out.f.storm-cut-X");
	/* O_APPEND: never cut; an offset at the end follows it */
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_WRONLY | O_APPEND, 1000, 1000, 1234, &pos), CKPT_FSIZE_LEFT);
	CU_ASSERT_EQUAL(pos, 1234);
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_RDWR | O_APPEND, 1000, 200, 1234, &pos), CKPT_FSIZE_LEFT);
	CU_ASSERT_EQUAL(pos, 200);
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_WRONLY | O_APPEND, 1000, 1000, 900, &pos), CKPT_FSIZE_LEFT);
	CU_ASSERT_EQUAL(pos, 900);
	ckpt_fsize_say("log.txt", O_WRONLY | O_APPEND, 1000, 1234, CKPT_FSIZE_LEFT, NULL, line,
		       sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "log.txt: opened O_APPEND; left as it is (1234 bytes, 1000 at "
			       "the checkpoint)");
	/* read-only, or shorter: left as it is, said */
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_RDONLY, 1000, 5, 1234, &pos), CKPT_FSIZE_LEFT);
	CU_ASSERT_EQUAL(pos, 5);
	ckpt_fsize_say("in", O_RDONLY, 1000, 1234, CKPT_FSIZE_LEFT, NULL, line, sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "in: opened read-only; left as it is (1234 bytes, 1000 at the "
			       "checkpoint)");
	CU_ASSERT_EQUAL(ckpt_fsize_plan(O_WRONLY, 1000, 1000, 10, &pos), CKPT_FSIZE_LEFT);
	CU_ASSERT_EQUAL(pos, 1000);
	ckpt_fsize_say("out.f", O_WRONLY, 1000, 10, CKPT_FSIZE_LEFT, NULL, line, sizeof(line));
	CU_ASSERT_STRING_EQUAL(line, "out.f: shorter than at the checkpoint; left as it is (10 "
			       "bytes, 1000 at the checkpoint)");
}

/* /proc/PID/timers and the seccomp lines of /proc/PID/status. */
static void test_unsaved_state(void)
{
	int clock, mode, filters;
	CU_ASSERT_EQUAL(ckpt_proc_timers("", &clock), 0);
	CU_ASSERT_EQUAL(clock, -1);
	CU_ASSERT_EQUAL(ckpt_proc_timers("ID: 0\nsignal: 12/0000000000000000\nnotify: signal/pid.7\n"
					 "ClockID: 1\nID: 1\nsignal: 14/0000000000000000\n"
					 "notify: signal/pid.7\nClockID: 0\n", &clock), 2);
	CU_ASSERT_EQUAL(clock, 1);
	ckpt_status_seccomp("Name:\tx\nNoNewPrivs:\t1\nSeccomp:\t2\nSeccomp_filters:\t3\n",
			    &mode, &filters);
	CU_ASSERT_EQUAL(mode, 2);
	CU_ASSERT_EQUAL(filters, 3);
	ckpt_status_seccomp("Name:\tx\nSeccomp:\t0\n", &mode, &filters);
	CU_ASSERT_EQUAL(mode, 0);
	CU_ASSERT_EQUAL(filters, 0);
	ckpt_status_seccomp("Name:\tx\n", &mode, &filters); /* a kernel without it */
	CU_ASSERT_EQUAL(mode, 0);
}

void add_ckpt_files_suite(void)
{
	CU_pSuite s = CU_add_suite("ckpt_files", NULL, NULL);
	CU_add_test(s, "fdinfo: pos, flags, locks", test_common);
	CU_add_test(s, "fdinfo: eventfd", test_eventfd);
	CU_add_test(s, "fdinfo: timerfd", test_timerfd);
	CU_add_test(s, "fdinfo: signalfd", test_signalfd);
	CU_add_test(s, "fdinfo: epoll", test_epoll);
	CU_add_test(s, "socket names", test_socket_names);
	CU_add_test(s, "file table checks", test_check);
	CU_add_test(s, "epoll fill order", test_epoll_order);
	CU_add_test(s, "restore: a file changed since the checkpoint", test_fsize);
	CU_add_test(s, "POSIX timers and seccomp read", test_unsaved_state);
}
