/* The virtual cluster's own munged (munged.h). */
#include "munged.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <munge.h>
#include <poll.h>
#include <signal.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/pidfd.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MUNGE_KEY_BYTES 128 /* what mungekey makes by default (1024 bits) */

int munged_socket_path(const char *dir, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/munge/munge.socket", dir);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

static int find_munged(char *out, size_t len)
{
	const char *path = getenv("PATH");
	char all[4096];
	snprintf(all, sizeof(all), "%s:/usr/sbin:/sbin", path ? path : "");
	for (char *save = NULL, *d = strtok_r(all, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
		int n = snprintf(out, len, "%s/munged", d);
		if (*d && n > 0 && (size_t)n < len && access(out, X_OK) == 0)
			return 0;
	}
	return -1;
}

static int write_key(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	uint8_t key[MUNGE_KEY_BYTES];
	randombytes_buf(key, sizeof(key));
	ssize_t n = write(fd, key, sizeof(key));
	sodium_memzero(key, sizeof(key));
	int e = n == (ssize_t)sizeof(key) ? 0 : (n < 0 ? errno : EIO);
	close(fd);
	return -e;
}

/* Can munged at sock issue a credential? */
static int answers(const char *sock)
{
	munge_ctx_t ctx = munge_ctx_create();
	if (!ctx)
		return 0;
	char *cred = NULL;
	int ok = munge_ctx_set(ctx, MUNGE_OPT_SOCKET, sock) == EMUNGE_SUCCESS &&
		 munge_encode(&cred, ctx, NULL, 0) == EMUNGE_SUCCESS;
	free(cred);
	munge_ctx_destroy(ctx);
	return ok;
}

static double mono(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

int munged_start(const struct munged_at *at, char *err, size_t errlen)
{
	const char *dir = at->dir, *seen = at->seen ? at->seen : at->dir;
	char bin[PATH_MAX], mdir[PATH_MAX], key[PATH_MAX + 16], sock[PATH_MAX], pid[PATH_MAX + 16],
		seed[PATH_MAX + 16], log[PATH_MAX + 16], here[PATH_MAX];
	if (find_munged(bin, sizeof(bin)) != 0) {
		snprintf(err, errlen, "cannot find munged (Debian package munge; "
				      "scripts/install-deps.sh installs it)");
		return -1;
	}
	if (munged_socket_path(dir, sock, sizeof(sock)) != 0 || strlen(sock) >= 108 ||
	    munged_socket_path(seen, here, sizeof(here)) != 0 || strlen(here) >= 108) {
		snprintf(err, errlen, "%s/munge/munge.socket is too long for a socket address", seen);
		return -1;
	}
	/* 0755: every user of the cluster must reach the socket */
	snprintf(mdir, sizeof(mdir), "%s/munge", seen);
	if (mkdir(mdir, 0755) != 0 && errno != EEXIST) {
		snprintf(err, errlen, "cannot create %s: %s", mdir, strerror(errno));
		return -1;
	}
	/* the key is written here; munged's own paths are as it sees them */
	snprintf(key, sizeof(key), "%s/munge.key", mdir);
	snprintf(log, sizeof(log), "%s/log/munged.log", seen);
	int e = at->have_key ? 0 : write_key(key);
	if (e < 0) {
		snprintf(err, errlen, "cannot write the MUNGE key %s: %s", key, strerror(-e));
		return -1;
	}
	snprintf(key, sizeof(key), "%s/munge/munge.key", dir);
	snprintf(pid, sizeof(pid), "%s/munge/munged.pid", dir);
	snprintf(seed, sizeof(seed), "%s/munge/munged.seed", dir);
	char a_sock[PATH_MAX + 16], a_key[PATH_MAX + 32], a_pid[PATH_MAX + 32],
		a_seed[PATH_MAX + 32];
	snprintf(a_sock, sizeof(a_sock), "--socket=%s", sock);
	snprintf(a_key, sizeof(a_key), "--key-file=%s", key);
	snprintf(a_pid, sizeof(a_pid), "--pid-file=%s", pid);
	snprintf(a_seed, sizeof(a_seed), "--seed-file=%s", seed);
	/* --force: as root, and in a directory under /tmp, munged would
	 * otherwise refuse; --foreground: its pid is ours to watch */
	char *argv[] = { bin, "--foreground", "--force", a_sock, a_key, a_pid, a_seed, NULL };
	pid_t child = fork();
	if (child < 0) {
		snprintf(err, errlen, "fork: %s", strerror(errno));
		return -1;
	}
	if (child == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* in the foreground munged logs to stderr, not to --log-file */
		int in = open("/dev/null", O_RDWR);
		int out = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (setsid() < 0 || in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 ||
		    dup2(out, 2) < 0)
			_exit(127);
		if (at->enter && (e = at->enter(at->arg)) < 0) {
			dprintf(2, "storm: cannot enter the host's namespaces: %s\n", strerror(-e));
			_exit(126);
		}
		close_range(3, ~0u, 0);
		execv(bin, argv);
		_exit(127);
	}
	double deadline = mono() + 10.0;
	for (;;) {
		int status;
		if (waitpid(child, &status, WNOHANG) == child) {
			snprintf(err, errlen, "munged exited during start-up (status %d); see %s",
				 WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), log);
			munged_stop(at);
			return -1;
		}
		/* a socket's path reaches it from any network namespace */
		if (answers(here))
			return child;
		if (mono() > deadline) {
			snprintf(err, errlen, "munged did not answer on %s within 10 s; see %s", here,
				 log);
			kill(child, SIGKILL);
			waitpid(child, NULL, 0);
			munged_stop(at);
			return -1;
		}
		struct timespec ts = { 0, 20 * 1000000L };
		nanosleep(&ts, NULL);
	}
}

int munged_pid(const struct munged_at *at)
{
	const char *dir = at->dir, *seen = at->seen ? at->seen : at->dir;
	char path[PATH_MAX + 32], want[PATH_MAX + 32], buf[8192];
	snprintf(path, sizeof(path), "%s/munge/munged.pid", seen);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	int pid = 0;
	if (fscanf(f, "%d", &pid) != 1)
		pid = 0;
	fclose(f);
	if (pid <= 1)
		return 0;
	/* pids are reused: only a process serving DIR's socket is ours */
	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	char sock[PATH_MAX];
	munged_socket_path(dir, sock, sizeof(sock));
	snprintf(want, sizeof(want), "--socket=%s", sock);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	for (char *a = buf; a < buf + n; a += strlen(a) + 1)
		if (!strcmp(a, want))
			return pid;
	return 0;
}

static int rm_dir_files(const char *mdir)
{
	static const char *names[] = { "munge.key", "munge.socket", "munge.socket.lock",
				       "munged.pid", "munged.seed" };
	int removed = 0;
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char p[PATH_MAX + 32];
		snprintf(p, sizeof(p), "%s/%s", mdir, names[i]);
		removed += unlink(p) == 0;
	}
	removed += rmdir(mdir) == 0;
	return removed;
}

int munged_stop(const struct munged_at *at)
{
	pid_t pid = munged_pid(at);
	int found = pid > 0;
	if (pid > 0) {
		int pfd = pidfd_open(pid, 0);
		if (pfd >= 0) {
			pidfd_send_signal(pfd, SIGTERM, NULL, 0);
			struct pollfd p = { .fd = pfd, .events = POLLIN };
			if (poll(&p, 1, 3000) != 1) {
				pidfd_send_signal(pfd, SIGKILL, NULL, 0);
				poll(&p, 1, 2000);
			}
			close(pfd);
			waitpid(pid, NULL, WNOHANG); /* reap if it is our child */
		}
	}
	char mdir[PATH_MAX];
	snprintf(mdir, sizeof(mdir), "%s/munge", at->seen ? at->seen : at->dir);
	return rm_dir_files(mdir) > 0 || found;
}
