/* Doorbells: a ring makes the owner's descriptor readable until drained, a
 * drain leaves it quiet, rings pile up into one pending wake-up, and a bell
 * nobody opened is reported, not waited for. */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
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
	CU_ASSERT_EQUAL(bell_drain(fb), 1);
	CU_ASSERT_FALSE(readable(fb));
	/* more rings than the socket queues: still rung, one drain clears all */
	for (int i = 0; i < 1000; i++)
		CU_ASSERT_EQUAL_FATAL(bell_ring(fa, b, blen), 0);
	CU_ASSERT_TRUE(readable(fb));
	CU_ASSERT_TRUE(bell_drain(fb) >= 1);
	CU_ASSERT_FALSE(readable(fb));
	/* the address's bytes after its NUL (shm's RMA trailer) do not matter */
	char longer[80];
	memcpy(longer, b, blen);
	memcpy(longer + blen, "trailer", 8);
	CU_ASSERT_EQUAL(bell_ring(fa, longer, blen + 8), 0);
	CU_ASSERT_EQUAL(bell_drain(fb), 1);
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

void add_bell_suite(void)
{
	CU_pSuite s = CU_add_suite("bell", NULL, NULL);
	CU_add_test(s, "ring, drain, pile-up", test_ring_and_drain);
	CU_add_test(s, "a bell nobody opened", test_no_such_bell);
}
