/* storm-ckpt: the checkpointer on its own, for tests and by hand.
 *   storm-ckpt dump PID IMAGE [--kill] [--fsync] [--snapshot]
 *   storm-ckpt restore IMAGE [--stopped] [--user UID:GID]
 *                                          (waits for it; exits with its status)
 *   storm-ckpt verify IMAGE */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ckpt.h"

static void usage(FILE *f)
{
	fprintf(f, "usage: storm-ckpt dump PID IMAGE [--kill] [--fsync] [--snapshot]\n"
		   "       storm-ckpt restore IMAGE [--stopped] [--user UID:GID]\n"
		   "       storm-ckpt verify IMAGE\n"
		   "Checkpoints a process (every thread) into IMAGE, or restores one as a child\n"
		   "of this command (which waits for it and exits with its status).\n");
}

/* What a restore did that the image does not say (a file cut back or left
 * grown, a priority not set): a line each on stderr. */
static void say(void *arg, const char *line)
{
	(void)arg;
	fprintf(stderr, "storm-ckpt: restore: %s\n", line);
}

int main(int argc, char **argv)
{
	char err[1024];
	struct ckpt_stats st = { 0 };

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		usage(stdout);
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "dump")) {
		char *end;
		long pid = strtol(argv[2], &end, 10);
		unsigned flags = 0;
		if (*end || pid <= 0) {
			fprintf(stderr, "storm-ckpt: bad pid '%s'\n", argv[2]);
			return 2;
		}
		for (int i = 4; i < argc; i++) {
			if (!strcmp(argv[i], "--kill"))
				flags |= CKPT_DUMP_KILL;
			else if (!strcmp(argv[i], "--fsync"))
				flags |= CKPT_DUMP_FSYNC;
			else if (!strcmp(argv[i], "--snapshot"))
				flags |= CKPT_DUMP_SNAPSHOT | CKPT_DUMP_WRITEBACK;
			else {
				fprintf(stderr, "storm-ckpt: unknown option '%s'\n", argv[i]);
				return 2;
			}
		}
		struct ckpt_dump_opts o = { .flags = flags };
		if (ckpt_dump(pid, argv[3], &o, &st, err, sizeof(err)) < 0) {
			fprintf(stderr, "storm-ckpt: %s\n", err);
			return 1;
		}
		fprintf(stderr, "storm-ckpt: dumped pid %ld to %s: %llu bytes, %llu pages, %.3f s "
				"(stopped %.3f s%s)\n",
			pid, argv[3], (unsigned long long)st.bytes, (unsigned long long)st.pages,
			st.seconds, st.t_frozen, st.snapshot ? ", memory read from a snapshot" : "");
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "restore")) {
		struct ckpt_restore_opts o = { .external_fd = -1, .log = say };
		for (int i = 3; i < argc; i++) {
			unsigned uid, gid;
			char end;
			if (!strcmp(argv[i], "--stopped")) {
				o.stopped = 1;
			} else if (!strcmp(argv[i], "--user") && i + 1 < argc &&
				   sscanf(argv[i + 1], "%u:%u%c", &uid, &gid, &end) == 2) {
				/* as storm restores a job's ranks: files opened as that user */
				o.uid = uid;
				o.gid = gid;
				o.drop_creds = 1;
				i++;
			} else {
				fprintf(stderr, "storm-ckpt: unknown option '%s'\n", argv[i]);
				return 2;
			}
		}
		pid_t pid;
		if (ckpt_restore(argv[2], &o, &pid, &st, err, sizeof(err)) < 0) {
			fprintf(stderr, "storm-ckpt: %s\n", err);
			return 1;
		}
		fprintf(stderr, "storm-ckpt: restored %s as pid %d: %llu pages, %.3f s\n", argv[2],
			pid, (unsigned long long)st.pages, st.seconds);
		int ws;
		while (waitpid(pid, &ws, 0) < 0)
			if (errno != EINTR)
				return 1;
		if (WIFSIGNALED(ws))
			return 128 + WTERMSIG(ws);
		return WEXITSTATUS(ws);
	}
	if (argc == 3 && !strcmp(argv[1], "verify")) {
		uint64_t size;
		if (ckpt_verify_file(argv[2], &size, err, sizeof(err)) < 0) {
			fprintf(stderr, "storm-ckpt: %s\n", err);
			return 1;
		}
		printf("%s: ok, %llu bytes\n", argv[2], (unsigned long long)size);
		return 0;
	}
	usage(stderr);
	return 2;
}
