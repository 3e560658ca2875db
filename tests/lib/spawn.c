#include "spawn.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void spawn_sn_config(const struct spawn_node *nd, struct sn_config *c)
{
	sn_config_defaults(c);
	c->node_id = nd->id;
	c->node_count = nd->n;
	c->bootstrap = nd->bootstrap;
}

static int pidfd_open_(pid_t pid) { return (int)syscall(SYS_pidfd_open, pid, 0); }

static void rm_dir(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	char path[PATH_MAX];
	while ((e = readdir(d)))
		if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..") &&
		    snprintf(path, sizeof(path), "%s/%s", dir, e->d_name) < (int)sizeof(path))
			unlink(path);
	closedir(d);
	rmdir(dir);
}

static uint64_t now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int spawn_run(uint32_t n, int (*fn)(const struct spawn_node *), void *arg,
	      unsigned timeout_ms, int *status)
{
	char boot[] = "dir:/tmp/storm-spawn-XXXXXX", *dir = boot + 4;
	if (!mkdtemp(dir))
		return -errno;
	pid_t *pids = calloc(n, sizeof(pid_t));
	struct pollfd *pfd = calloc(n, sizeof(struct pollfd));
	if (!pids || !pfd) {
		free(pids);
		free(pfd);
		return -ENOMEM;
	}
	fflush(NULL);
	/* loopback, as `storm cluster up` does: another interface (a test's
	 * bridge) may vanish mid-run and take the connections with it */
	setenv("FI_TCP_IFACE", "lo", 0);
	setenv("FI_SOCKETS_IFACE", "lo", 0);
	setenv("FI_UDP_IFACE", "lo", 0);
	for (uint32_t i = 0; i < n; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			struct spawn_node node = {.id = i, .n = n, .bootstrap = boot, .arg = arg};
			int rc = fn(&node);
			fflush(NULL);
			_exit(rc);
		}
		pids[i] = pid;
		pfd[i].fd = pid > 0 ? pidfd_open_(pid) : -1;
		pfd[i].events = POLLIN;
		status[i] = -1;
	}
	uint64_t deadline = now_ms() + timeout_ms;
	uint32_t left = n;
	while (left) {
		uint64_t t = now_ms();
		if (t >= deadline)
			break;
		if (poll(pfd, n, (int)(deadline - t)) <= 0)
			continue;
		for (uint32_t i = 0; i < n; i++) {
			if (pfd[i].fd < 0 || !(pfd[i].revents & POLLIN))
				continue;
			waitpid(pids[i], &status[i], 0);
			close(pfd[i].fd);
			pfd[i].fd = -1;
			left--;
		}
	}
	for (uint32_t i = 0; i < n; i++) {
		if (pfd[i].fd < 0)
			continue;
		fprintf(stderr, "spawn: node %u still running after %u ms, killing it\n", i,
			timeout_ms);
		kill(pids[i], SIGKILL);
		waitpid(pids[i], &status[i], 0);
		close(pfd[i].fd);
	}
	rm_dir(dir);
	free(pids);
	free(pfd);
	return left ? -ETIMEDOUT : 0;
}

int spawn_check(uint32_t n, const int *status, int expect_killed)
{
	int bad = 0;
	for (uint32_t i = 0; i < n; i++) {
		int st = status[i];
		if ((int)i == expect_killed) {
			if (!(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL)) {
				fprintf(stderr, "node %u: expected to die of SIGKILL (status %#x)\n",
					i, st);
				bad = 1;
			}
		} else if (!(WIFEXITED(st) && WEXITSTATUS(st) == 0)) {
			if (WIFSIGNALED(st))
				fprintf(stderr, "node %u: killed by signal %d\n", i, WTERMSIG(st));
			else
				fprintf(stderr, "node %u: exit status %d\n", i, WEXITSTATUS(st));
			bad = 1;
		}
	}
	return bad ? -1 : 0;
}
