/* SIGCHLD for a signalfd reader: a pending one survives every change of
 * disposition, and stopped children are reported only when asked. */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdbool.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>
#include <poll.h>

#include "sigchld.h"
#include "suites.h"

/* true once the signalfd holds a SIGCHLD (read off), false after ms */
static bool chld_within(int fd, int ms)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct signalfd_siginfo si;
	return poll(&p, 1, ms) == 1 && read(fd, &si, sizeof(si)) == sizeof(si) &&
	       si.ssi_signo == SIGCHLD;
}

/* SIGCHLD blocked and read from the signalfd it returns, as in the node
 * daemon; chld_close puts the disposition and the mask back */
struct chld_fd {
	int fd;
	sigset_t old;
	struct sigaction was;
};

static void chld_open(struct chld_fd *c)
{
	sigset_t set;
	sigaction(SIGCHLD, NULL, &c->was);
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	sigprocmask(SIG_BLOCK, &set, &c->old);
	c->fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
}

static void chld_close(struct chld_fd *c)
{
	close(c->fd);
	sigaction(SIGCHLD, &c->was, NULL);
	sigprocmask(SIG_SETMASK, &c->old, NULL);
}

static void test_pending_survives(void)
{
	struct chld_fd c;
	chld_open(&c);
	int fd = c.fd;
	CU_ASSERT_FATAL(fd >= 0);
	sigchld_notify(false);
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	CU_ASSERT_FATAL(pid > 0);
	/* the child has ended once it can be waited for (WNOWAIT keeps it) */
	siginfo_t info;
	CU_ASSERT_EQUAL(waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT), 0);
	/* a switch asks for stop reports and then stops asking, as the node
	 * daemon does around a strict wait */
	sigchld_notify(true);
	sigchld_notify(false);
	sigset_t pending;
	sigpending(&pending);
	CU_ASSERT_TRUE(sigismember(&pending, SIGCHLD));
	CU_ASSERT_TRUE(chld_within(fd, 0));
	CU_ASSERT_EQUAL(waitpid(pid, NULL, 0), pid);
	chld_close(&c);
}

static void test_stops_reported_on_request(void)
{
	struct chld_fd c;
	chld_open(&c);
	int fd = c.fd;
	CU_ASSERT_FATAL(fd >= 0);
	pid_t pid = fork();
	if (pid == 0) {
		for (;;)
			pause();
	}
	CU_ASSERT_FATAL(pid > 0);
	siginfo_t info;
	sigchld_notify(false);
	kill(pid, SIGSTOP);
	CU_ASSERT_EQUAL(waitid(P_PID, (id_t)pid, &info, WSTOPPED | WNOWAIT), 0);
	CU_ASSERT_FALSE(chld_within(fd, 50));
	waitid(P_PID, (id_t)pid, &info, WSTOPPED); /* consume the stop */
	kill(pid, SIGCONT);
	CU_ASSERT_EQUAL(waitid(P_PID, (id_t)pid, &info, WCONTINUED), 0);
	while (chld_within(fd, 0)) /* a continue is reported either way */
		;
	sigchld_notify(true);
	kill(pid, SIGSTOP);
	CU_ASSERT_TRUE(chld_within(fd, 5000));
	sigchld_notify(false);
	kill(pid, SIGKILL);
	CU_ASSERT_EQUAL(waitpid(pid, NULL, 0), pid);
	while (chld_within(fd, 0))
		;
	chld_close(&c);
}

void add_sigchld_suite(void)
{
	CU_pSuite s = CU_add_suite("sigchld", NULL, NULL);
	CU_add_test(s, "a pending SIGCHLD survives a change of disposition", test_pending_survives);
	CU_add_test(s, "stopped children reported only on request", test_stops_reported_on_request);
}
