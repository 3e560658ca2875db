/* Doorbells: a ring makes the owner's descriptor readable until drained, a
 * drain leaves it quiet, rings pile up into one pending wake-up, and a bell
 * nobody opened is reported, not waited for. A request for memory reaches
 * the owner with the asker's name and user, the answer carries a working
 * descriptor, and a descriptor that comes with anything else is closed. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bell.h"
#include "suites.h"

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};
	return poll(&p, 1, 0) == 1 && (p.revents & POLLIN);
}

/* a name no other run of the suite uses; the NUL is part of it, as shm's
 * fabric addresses carry theirs */
static size_t name(char *buf, size_t len, const char *who)
{
	snprintf(buf, len, "test-bell.%ld.%s", (long)getpid(), who);
	return strlen(buf) + 1;
}

static void test_ring_and_drain(void)
{
	char a[64], b[64];
	size_t alen = name(a, sizeof(a), "a"), blen = name(b, sizeof(b), "b");
	int fa = bell_open(a, alen), fb = bell_open(b, blen);
	CU_ASSERT_FATAL(fa >= 0 && fb >= 0);
	CU_ASSERT_FALSE(readable(fb));
	CU_ASSERT_EQUAL(bell_ring(fa, b, blen), 0);
	CU_ASSERT_TRUE(readable(fb));
	CU_ASSERT_FALSE(readable(fa));
	CU_ASSERT_EQUAL(bell_drain(fb, NULL, NULL), 1);
	CU_ASSERT_FALSE(readable(fb));
	/* more rings than the socket queues: still rung, one drain clears all */
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL_FATAL(bell_ring(fa, b, blen), 0);
	CU_ASSERT_TRUE(readable(fb));
	CU_ASSERT_TRUE(bell_drain(fb, NULL, NULL) >= 1);
	CU_ASSERT_FALSE(readable(fb));
	/* the address's bytes after its NUL (shm's RMA trailer) do not matter */
	char longer[80];
	memcpy(longer, b, blen);
	memcpy(longer + blen, "trailer", 8);
	CU_ASSERT_EQUAL(bell_ring(fa, longer, blen + 8), 0);
	CU_ASSERT_EQUAL(bell_drain(fb, NULL, NULL), 1);
	close(fa);
	close(fb);
}

static void test_no_such_bell(void)
{
	char a[64], b[64];
	size_t alen = name(a, sizeof(a), "c"), blen = name(b, sizeof(b), "nobody");
	int fa = bell_open(a, alen);
	CU_ASSERT_FATAL(fa >= 0);
	int rc = bell_ring(fa, b, blen);
	CU_ASSERT_TRUE(rc == -ECONNREFUSED || rc == -ENOENT);
	/* one address, one bell: a second endpoint by that name is refused */
	CU_ASSERT_EQUAL(bell_open(a, alen), -EADDRINUSE);
	close(fa);
	/* and once the first closes, the name is free again */
	fa = bell_open(a, alen);
	CU_ASSERT(fa >= 0);
	close(fa);
	CU_ASSERT_EQUAL(bell_open("", 1), -ENAMETOOLONG);
}

struct seen {
	int n;
	enum bell_kind kind;
	char from[64];
	uid_t uid;
	int fd;
};

static void record(void *arg, enum bell_kind kind, const char *from, uid_t uid, int fd)
{
	struct seen *s = arg;
	s->n++;
	s->kind = kind;
	snprintf(s->from, sizeof(s->from), "%s", from);
	s->uid = uid;
	s->fd = fd;
}

static int open_fds(void)
{
	int n = 0;
	for (int fd = 0; fd < 1024; fd++)
		n += fcntl(fd, F_GETFD) >= 0;
	return n;
}

static void test_map_request(void)
{
	char a[64], b[64];
	size_t alen = name(a, sizeof(a), "asker"), blen = name(b, sizeof(b), "owner");
	int fa = bell_open(a, alen), fb = bell_open(b, blen);
	CU_ASSERT_FATAL(fa >= 0 && fb >= 0);
	int mem = memfd_create("test-bell", MFD_CLOEXEC);
	CU_ASSERT_FATAL(mem >= 0 && ftruncate(mem, 4096) == 0);
	uint8_t *own = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mem, 0);
	CU_ASSERT_FATAL(own != MAP_FAILED);

	/* the owner learns who asks, as the kernel says */
	struct seen s = {.fd = -2};
	CU_ASSERT_EQUAL(bell_ask_map(fa, b, blen), 0);
	CU_ASSERT_TRUE(readable(fb));
	CU_ASSERT_EQUAL(bell_drain(fb, record, &s), 1);
	CU_ASSERT_EQUAL(s.n, 1);
	CU_ASSERT_EQUAL(s.kind, BELL_ASK_MAP);
	CU_ASSERT_STRING_EQUAL(s.from, a);
	CU_ASSERT_EQUAL(s.uid, geteuid());
	CU_ASSERT_EQUAL(s.fd, -1);

	/* the answer's descriptor is the owner's memory */
	CU_ASSERT_EQUAL(bell_give_map(fb, s.from, mem), 0);
	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL(bell_drain(fa, record, &s), 1);
	CU_ASSERT_EQUAL(s.kind, BELL_GIVE_MAP);
	CU_ASSERT_STRING_EQUAL(s.from, b);
	CU_ASSERT_FATAL(s.fd >= 0);
	uint8_t *peer = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, s.fd, 0);
	CU_ASSERT_FATAL(peer != MAP_FAILED);
	peer[100] = 0xab;
	CU_ASSERT_EQUAL(own[100], 0xab);
	munmap(peer, 4096);
	close(s.fd);

	/* a descriptor sent with a plain ring, or without a callback, is
	 * closed: nobody can fill the owner's table */
	int before = open_fds();
	CU_ASSERT_EQUAL(bell_give_map(fb, a, mem), 0);
	CU_ASSERT_EQUAL(bell_drain(fa, NULL, NULL), 1);
	CU_ASSERT_EQUAL(open_fds(), before);

	/* a request from another user carries that user */
	if (geteuid() == 0) {
		pid_t pid = fork();
		if (pid == 0) {
			char c[64];
			size_t clen = name(c, sizeof(c), "nobody-asks");
			if (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534))
				_exit(2);
			int fc = bell_open(c, clen);
			_exit(fc >= 0 && bell_ask_map(fc, b, blen) == 0 ? 0 : 3);
		}
		int st = -1;
		waitpid(pid, &st, 0);
		CU_ASSERT_EQUAL(st, 0);
		memset(&s, 0, sizeof(s));
		CU_ASSERT_EQUAL(bell_drain(fb, record, &s), 1);
		CU_ASSERT_EQUAL(s.kind, BELL_ASK_MAP);
		CU_ASSERT_EQUAL(s.uid, 65534);
	}
	munmap(own, 4096);
	close(mem);
	close(fa);
	close(fb);
}

void add_bell_suite(void)
{
	CU_pSuite s = CU_add_suite("bell", NULL, NULL);
	CU_add_test(s, "ring, drain, pile-up", test_ring_and_drain);
	CU_add_test(s, "a bell nobody opened", test_no_such_bell);
	CU_add_test(s, "memory asked for and given", test_map_request);
}
