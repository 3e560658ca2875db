/* The job table in the database (db.c): what of a job is stored and when.
 * Only storing and loading; what a stored job becomes after a restart is
 * recover.c's, `storm acct` is acct.c's.
 *
 * Saved: a job before its submission is acknowledged (with the request as
 * accepted), when it starts (nodes, slot), when its launch is queued, as its
 * nodes report rank exits and ends (before the report is acknowledged), and
 * when it ends (with its accounting line). The files of a job submitted over
 * TCP are kept beside the database until it ends: a restarted MM cannot
 * open them again by path, which names the submitter's host. Without a
 * database (fuzz/mm_state drives the MM without one) nothing is saved. */
#include "db.h"
#include "mm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hostlist.h"

const char *persist_state_name(Storm__Ctl__JobState s)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&storm__ctl__job_state__descriptor, (int)s);
	return v ? v->name : "FAILED";
}

Storm__Ctl__JobState persist_state_value(const char *name)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value_by_name(&storm__ctl__job_state__descriptor,
							     name ? name : "");
	return v ? (Storm__Ctl__JobState)v->value : STORM__CTL__JOB_STATE__FAILED;
}

static void to_db(const struct job *j, struct db_job *d)
{
	memset(d, 0, sizeof(*d));
	bool started = j->t_start > 0;
	d->id = j->id;
	d->name = j->spec->name;
	d->user = j->spec->user;
	d->uid = j->spec->uid;
	d->gid = j->spec->gid;
	d->nnodes = j->nnodes;
	d->nranks = j->nranks;
	d->output_path = j->output_path;
	d->state = persist_state_name(j->state);
	d->slot = started ? (int)j->slot : -1;
	d->nodes = started ? j->nodes : NULL;
	d->nodelist = j->nodelist;
	d->t_submit = j->t_submit;
	d->t_start = j->t_start;
	d->t_launched = j->t_launched;
	d->t_end = j->t_end;
	d->exit_status = j->exit_status;
	d->reason = j->reason;
	d->rank_status = started ? j->rank_status : NULL;
	d->node_done = started ? j->node_done : NULL;
	d->array_job = j->spec->array_job;
	d->array_task = j->spec->array_task;
	d->max_rss_kb = j->max_rss_kb;
	d->cpu_us = j->cpu_us;
	d->script = j->spec->script;
	d->time_limit = j->spec->time_limit;
}

int persist_job_new(struct mm *mm, struct job *j)
{
	if (!mm->db)
		return 0;
	size_t len;
	uint8_t *spec = jobspec_pack(j->spec, &len);
	if (!spec) {
		slog("job %llu: out of memory recording it", (unsigned long long)j->id);
		return -1;
	}
	struct db_job d;
	to_db(j, &d);
	d.spec = spec;
	d.spec_len = len;
	int rc = db_job_insert(mm->db, &d);
	free(spec);
	if (rc < 0)
		slog("job %llu: cannot record it: %s", (unsigned long long)j->id, db_error(mm->db));
	return rc;
}

void persist_job(struct mm *mm, struct job *j)
{
	j->dirty = false;
	if (!mm->db)
		return;
	struct db_job d;
	to_db(j, &d);
	if (db_job_update(mm->db, &d) < 0)
		slog("job %llu: cannot save its state: %s", (unsigned long long)j->id,
		       db_error(mm->db));
	j->dirty = false;
}

int persist_files_path(const struct mm *mm, uint64_t job, int i, char *out, size_t len)
{
	int n = snprintf(out, len, "%s/files/%llu.%d", mm->conf.state_dir, (unsigned long long)job,
			 i);
	return n < 0 || (size_t)n >= len ? -1 : 0;
}

/* Copies all of fd (from its start) to a new file at path with mode. */
static int keep_copy(int fd, const char *path, mode_t mode)
{
	int out = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (out < 0)
		return -errno;
	char buf[65536];
	off_t off = 0;
	ssize_t n;
	int e = 0;
	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		for (ssize_t w = 0, k; w < n; w += k)
			if ((k = write(out, buf + w, (size_t)(n - w))) <= 0) {
				e = k < 0 ? errno : EIO;
				break;
			}
		if (e)
			break;
		off += n;
	}
	if (n < 0 && !e)
		e = errno;
	if (!e && fchmod(out, mode & 0777) < 0)
		e = errno;
	if (close(out) < 0 && !e)
		e = errno;
	if (e)
		unlink(path);
	return -e;
}

void persist_files_keep(struct mm *mm, struct job *j)
{
	if (!mm->db || !j->nfds)
		return;
	char path[PATH_MAX + 64];
	snprintf(path, sizeof(path), "%s/files", mm->conf.state_dir);
	if (mkdir(path, 0700) < 0 && errno != EEXIST) {
		slog("job %llu: cannot keep its files for a restart: %s: %s",
		     (unsigned long long)j->id, path, strerror(errno));
		return;
	}
	for (int i = 0; i < j->nfds; i++) {
		int e = persist_files_path(mm, j->id, i, path, sizeof(path)) < 0
				? -ENAMETOOLONG
				: keep_copy(j->fds[i], path, j->fmodes[i]);
		if (e < 0) {
			slog("job %llu: cannot keep its files for a restart: %s: %s",
			     (unsigned long long)j->id, path, strerror(-e));
			return;
		}
	}
}

void persist_job_end(struct mm *mm, struct job *j)
{
	j->dirty = false;
	if (!mm->db)
		return;
	for (int i = 0; i < FRAME_MAX_FDS; i++) {
		char path[PATH_MAX + 64];
		if (persist_files_path(mm, j->id, i, path, sizeof(path)) < 0 || unlink(path) < 0)
			break;
	}
	struct db_job d;
	to_db(j, &d);
	if (db_job_end(mm->db, &d) < 0)
		slog("job %llu: cannot record its end: %s", (unsigned long long)j->id,
		       db_error(mm->db));
	j->dirty = false;
}

void persist_flush(struct mm *mm)
{
	for (struct job *j = mm->jobs; j; j = j->next)
		if (j->dirty)
			persist_job(mm, j);
}

int persist_open(struct mm *mm)
{
	const struct storm_conf *c = &mm->conf;
	char path[PATH_MAX + 16], err[768];
	if (c->database[0]) {
		snprintf(path, sizeof(path), "%s", c->database);
	} else {
		if (mkdir(c->state_dir, 0755) < 0 && errno != EEXIST) {
			slog("error: cannot create the state directory %s: %s", c->state_dir,
			       strerror(errno));
			return -1;
		}
		snprintf(path, sizeof(path), "%s/mm.db", c->state_dir);
	}
	if (db_open(path, c->database_sync == DB_SYNC_FULL, &mm->db, err, sizeof(err)) < 0) {
		slog("error: %s", err);
		return -1;
	}
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	mm->epoch = db_next_epoch(mm->db, (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec);
	if (!mm->epoch) {
		slog("error: cannot record this start in %s: %s", path, db_error(mm->db));
		return -1;
	}
	mm->next_job_id = db_last_job_id(mm->db) + 1;
	slog("database %s: next job %llu", path, (unsigned long long)mm->next_job_id);
	return 0;
}

void persist_close(struct mm *mm)
{
	db_close(mm->db);
	mm->db = NULL;
}

