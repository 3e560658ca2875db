/* The MM's SQLite database (db.h). */
#include "db.h"

#include <errno.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

struct mm_db {
	sqlite3 *h;
	char err[512];
};

/* 2: checkpoints.data, checkpoint_images; 3: accounting's array_job,
 * array_task, max_rss_kb, cpu_us; 4: accounting.script; 5: bcs_records,
 * bcs_streams; 6: accounting.time_limit */
#define SCHEMA_VERSION 6

static const char schema[] =
	"CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value);"
	/* a job from its acceptance on; spec is the request as accepted */
	"CREATE TABLE IF NOT EXISTS jobs("
	" id INTEGER PRIMARY KEY, name TEXT, user TEXT, uid INTEGER, gid INTEGER,"
	" nnodes INTEGER, nranks INTEGER, spec BLOB NOT NULL, output_path TEXT,"
	" state TEXT NOT NULL, slot INTEGER, nodelist TEXT,"
	" submit_time REAL, start_time REAL, launch_time REAL, end_time REAL,"
	" exit_status INTEGER, reason TEXT, rank_status BLOB, node_done BLOB);"
	"CREATE INDEX IF NOT EXISTS jobs_state ON jobs(state);"
	/* the nodes (matrix columns) of a started job; gone when it ends */
	"CREATE TABLE IF NOT EXISTS allocations("
	" job INTEGER NOT NULL, node INTEGER NOT NULL, PRIMARY KEY(job, node));"
	"CREATE TABLE IF NOT EXISTS checkpoints("
	" id INTEGER PRIMARY KEY, job INTEGER NOT NULL, epoch INTEGER NOT NULL,"
	" nodes TEXT, size INTEGER, complete INTEGER NOT NULL DEFAULT 0, created REAL,"
	" data BLOB);"
	"CREATE INDEX IF NOT EXISTS checkpoints_job ON checkpoints(job);"
	/* where each rank's image of a checkpoint is, and its buddy copy */
	"CREATE TABLE IF NOT EXISTS checkpoint_images("
	" ckpt INTEGER NOT NULL, rank INTEGER NOT NULL, node TEXT, copy TEXT,"
	" PRIMARY KEY(ckpt, rank));"
	/* one line per ended job, as `storm acct` shows it */
	"CREATE TABLE IF NOT EXISTS accounting("
	" job INTEGER PRIMARY KEY, name TEXT, user TEXT, uid INTEGER, nnodes INTEGER,"
	" nranks INTEGER, nodelist TEXT, submit_time REAL, start_time REAL, end_time REAL,"
	" elapsed REAL, state TEXT, exit_status INTEGER, reason TEXT,"
	" array_job INTEGER NOT NULL DEFAULT 0, array_task INTEGER NOT NULL DEFAULT 0,"
	" max_rss_kb INTEGER NOT NULL DEFAULT 0, cpu_us INTEGER NOT NULL DEFAULT 0,"
	" script INTEGER NOT NULL DEFAULT 0, time_limit INTEGER NOT NULL DEFAULT 0);"
	"CREATE INDEX IF NOT EXISTS accounting_end ON accounting(end_time);"
	/* storm trace: packed storm.trace.Chunk per job, from a node (its
	 * index) or the MM (node -1) */
	"CREATE TABLE IF NOT EXISTS traces(job INTEGER NOT NULL, node INTEGER NOT NULL,"
	" data BLOB NOT NULL);"
	"CREATE INDEX IF NOT EXISTS traces_job ON traces(job);"
	/* storm run --record: a job's BCS-MPI record (argv: NUL-terminated
	 * strings), and each rank's stream events, appended as they come */
	"CREATE TABLE IF NOT EXISTS bcs_records(job INTEGER PRIMARY KEY, user TEXT,"
	" uid INTEGER, name TEXT, nodes INTEGER, ranks INTEGER, argv BLOB, created REAL);"
	"CREATE TABLE IF NOT EXISTS bcs_streams(job INTEGER NOT NULL, rank INTEGER NOT NULL,"
	" data BLOB NOT NULL, PRIMARY KEY(job, rank));";

static int sqlfail(struct mm_db *db, const char *what)
{
	snprintf(db->err, sizeof(db->err), "%s: %s", what, sqlite3_errmsg(db->h));
	return -1;
}

int64_t db_memory_used(void)
{
	return sqlite3_memory_used();
}

const char *db_error(struct mm_db *db)
{
	return db ? db->err : "no database";
}

static int exec(struct mm_db *db, const char *sql)
{
	char *msg = NULL;
	if (sqlite3_exec(db->h, sql, NULL, NULL, &msg) != SQLITE_OK) {
		snprintf(db->err, sizeof(db->err), "%s", msg ? msg : sqlite3_errmsg(db->h));
		sqlite3_free(msg);
		return -1;
	}
	return 0;
}

/* An older schema's table: the columns that probe reads are added by
 * alter when probe does not compile (they are missing). */
static int add_columns(struct mm_db *db, const char *probe, const char *alter)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->h, probe, -1, &st, NULL) == SQLITE_OK) {
		sqlite3_finalize(st);
		return 0;
	}
	return exec(db, alter);
}

int db_open(const char *path, bool full_sync, struct mm_db **out, char *err, size_t errlen)
{
	struct mm_db *db = calloc(1, sizeof(*db));
	*out = NULL;
	if (!db) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* the database holds users' environments: owner only */
	mode_t old = umask(077);
	int rc = sqlite3_open_v2(path, &db->h,
				 SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_FULLMUTEX,
				 NULL);
	umask(old);
	if (rc != SQLITE_OK) {
		snprintf(err, errlen, "cannot open the database %s: %s", path,
			 db->h ? sqlite3_errmsg(db->h) : sqlite3_errstr(rc));
		sqlite3_close(db->h);
		free(db);
		return -1;
	}
	sqlite3_busy_timeout(db->h, 5000);
	char pragmas[256];
	/* WAL: a commit appends to the log, no rewrite of the database, and
	 * readers (sqlite3 on the file) never block the MM. NORMAL syncs the
	 * log only at checkpoints: a commit survives the MM's death (kill -9)
	 * at once, and a machine crash loses at most the commits since the
	 * last checkpoint; FULL syncs every commit (docs/storm.conf.md). */
	snprintf(pragmas, sizeof(pragmas),
		 "PRAGMA journal_mode=WAL; PRAGMA synchronous=%s; PRAGMA foreign_keys=ON;",
		 full_sync ? "FULL" : "NORMAL");
	if (exec(db, pragmas) < 0 || exec(db, schema) < 0) {
		snprintf(err, errlen, "cannot set up the database %s: %s", path, db->err);
		sqlite3_close(db->h);
		free(db);
		return -1;
	}
	/* a version 1 database: its checkpoints had no relaunch data; before
	 * version 3 no array tasks in the accounting; before version 4 nothing
	 * tells a batch script's job (its JOB.batch line) from another: its
	 * older jobs show none; before version 6 no time limits: its older
	 * jobs show none (UNLIMITED) */
	if (add_columns(db, "SELECT data FROM checkpoints",
			"ALTER TABLE checkpoints ADD COLUMN data BLOB;") < 0 ||
	    add_columns(db, "SELECT array_job FROM accounting",
			"ALTER TABLE accounting ADD COLUMN array_job INTEGER NOT NULL DEFAULT 0;"
			"ALTER TABLE accounting ADD COLUMN array_task INTEGER NOT NULL DEFAULT 0;"
			"ALTER TABLE accounting ADD COLUMN max_rss_kb INTEGER NOT NULL DEFAULT 0;"
			"ALTER TABLE accounting ADD COLUMN cpu_us INTEGER NOT NULL DEFAULT 0;") < 0 ||
	    add_columns(db, "SELECT script FROM accounting",
			"ALTER TABLE accounting ADD COLUMN script INTEGER NOT NULL DEFAULT 0;") < 0 ||
	    add_columns(db, "SELECT time_limit FROM accounting",
			"ALTER TABLE accounting ADD COLUMN time_limit INTEGER NOT NULL DEFAULT 0;") < 0) {
		snprintf(err, errlen, "cannot upgrade the database %s: %s", path, db->err);
		sqlite3_close(db->h);
		free(db);
		return -1;
	}
	char v[160];
	snprintf(v, sizeof(v), "INSERT OR IGNORE INTO meta VALUES('schema', %d);"
		 "UPDATE meta SET value = %d WHERE key = 'schema';", SCHEMA_VERSION, SCHEMA_VERSION);
	if (exec(db, v) < 0) {
		snprintf(err, errlen, "cannot set up the database %s: %s", path, db->err);
		sqlite3_close(db->h);
		free(db);
		return -1;
	}
	*out = db;
	return 0;
}

void db_close(struct mm_db *db)
{
	if (!db)
		return;
	sqlite3_close(db->h);
	free(db);
}

static sqlite3_stmt *prep(struct mm_db *db, const char *sql)
{
	sqlite3_stmt *st = NULL;
	if (sqlite3_prepare_v2(db->h, sql, -1, &st, NULL) != SQLITE_OK) {
		sqlfail(db, "prepare");
		return NULL;
	}
	return st;
}

static int step_done(struct mm_db *db, sqlite3_stmt *st, const char *what)
{
	int rc = sqlite3_step(st);
	sqlite3_finalize(st);
	if (rc != SQLITE_DONE)
		return sqlfail(db, what);
	return 0;
}

static void bind_text(sqlite3_stmt *st, int i, const char *s)
{
	if (s)
		sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

static void bind_blob(sqlite3_stmt *st, int i, const void *p, size_t len)
{
	if (p)
		sqlite3_bind_blob64(st, i, p, len, SQLITE_TRANSIENT);
	else
		sqlite3_bind_null(st, i);
}

/* node_done as bytes: bool is one byte in this ABI, but say so */
static uint8_t *done_bytes(const struct db_job *j)
{
	if (!j->node_done)
		return NULL;
	uint8_t *b = malloc(j->nnodes ? j->nnodes : 1);
	for (uint32_t k = 0; b && k < j->nnodes; k++)
		b[k] = j->node_done[k];
	return b;
}

static int bind_dynamic(sqlite3_stmt *st, const struct db_job *j, int first)
{
	uint8_t *done = done_bytes(j);
	if (j->node_done && !done)
		return -ENOMEM;
	bind_text(st, first, j->state);
	if (j->slot >= 0)
		sqlite3_bind_int(st, first + 1, j->slot);
	else
		sqlite3_bind_null(st, first + 1);
	bind_text(st, first + 2, j->nodelist);
	sqlite3_bind_double(st, first + 3, j->t_submit);
	sqlite3_bind_double(st, first + 4, j->t_start);
	sqlite3_bind_double(st, first + 5, j->t_launched);
	sqlite3_bind_double(st, first + 6, j->t_end);
	sqlite3_bind_int(st, first + 7, j->exit_status);
	bind_text(st, first + 8, j->reason);
	bind_blob(st, first + 9, j->rank_status, sizeof(int32_t) * j->nranks);
	bind_blob(st, first + 10, done, j->nnodes);
	free(done);
	return 0;
}

int db_job_insert(struct mm_db *db, const struct db_job *j)
{
	sqlite3_stmt *st = prep(db,
		"INSERT INTO jobs(id, name, user, uid, gid, nnodes, nranks, spec, output_path,"
		" state, slot, nodelist, submit_time, start_time, launch_time, end_time,"
		" exit_status, reason, rank_status, node_done)"
		" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16,"
		" ?17, ?18, ?19, ?20)");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
	bind_text(st, 2, j->name);
	bind_text(st, 3, j->user);
	sqlite3_bind_int64(st, 4, j->uid);
	sqlite3_bind_int64(st, 5, j->gid);
	sqlite3_bind_int64(st, 6, j->nnodes);
	sqlite3_bind_int64(st, 7, j->nranks);
	sqlite3_bind_blob64(st, 8, j->spec ? j->spec : "", j->spec_len, SQLITE_TRANSIENT);
	bind_text(st, 9, j->output_path);
	if (bind_dynamic(st, j, 10) < 0) {
		sqlite3_finalize(st);
		snprintf(db->err, sizeof(db->err), "out of memory");
		return -1;
	}
	return step_done(db, st, "recording the job");
}

static int update(struct mm_db *db, const struct db_job *j)
{
	sqlite3_stmt *st = prep(db,
		"UPDATE jobs SET state = ?1, slot = ?2, nodelist = ?3, submit_time = ?4,"
		" start_time = ?5, launch_time = ?6, end_time = ?7, exit_status = ?8, reason = ?9,"
		" rank_status = ?10, node_done = ?11, output_path = ?12 WHERE id = ?13");
	if (!st)
		return -1;
	if (bind_dynamic(st, j, 1) < 0) {
		sqlite3_finalize(st);
		snprintf(db->err, sizeof(db->err), "out of memory");
		return -1;
	}
	bind_text(st, 12, j->output_path);
	sqlite3_bind_int64(st, 13, (sqlite3_int64)j->id);
	if (step_done(db, st, "updating the job") < 0)
		return -1;
	if (sqlite3_changes(db->h) != 1) {
		snprintf(db->err, sizeof(db->err), "job %llu is not in the database",
			 (unsigned long long)j->id);
		return -1;
	}
	return 0;
}

/* The allocation follows the job's nodes: written once when it starts. */
static int put_alloc(struct mm_db *db, const struct db_job *j)
{
	sqlite3_stmt *st = prep(db, "DELETE FROM allocations WHERE job = ?1");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
	if (step_done(db, st, "releasing the allocation") < 0)
		return -1;
	for (uint32_t k = 0; j->nodes && k < j->nnodes; k++) {
		st = prep(db, "INSERT INTO allocations(job, node) VALUES(?1, ?2)");
		if (!st)
			return -1;
		sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
		sqlite3_bind_int(st, 2, j->nodes[k]);
		if (step_done(db, st, "recording the allocation") < 0)
			return -1;
	}
	return 0;
}

static int txn_end(struct mm_db *db, int rc)
{
	if (rc == 0 && exec(db, "COMMIT") == 0)
		return 0;
	char keep[sizeof(db->err)];
	memcpy(keep, db->err, sizeof(keep));
	exec(db, "ROLLBACK");
	memcpy(db->err, keep, sizeof(keep));
	return -1;
}

int db_job_update(struct mm_db *db, const struct db_job *j)
{
	if (exec(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	int rc = update(db, j);
	if (rc == 0)
		rc = put_alloc(db, j);
	return txn_end(db, rc);
}

int db_job_end(struct mm_db *db, const struct db_job *j)
{
	if (exec(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	int rc = update(db, j);
	sqlite3_stmt *st = NULL;
	if (rc == 0 && (st = prep(db, "DELETE FROM allocations WHERE job = ?1"))) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
		rc = step_done(db, st, "releasing the allocation");
	} else {
		rc = -1;
	}
	if (rc == 0 && (st = prep(db,
		"INSERT OR REPLACE INTO accounting(job, name, user, uid, nnodes, nranks, nodelist,"
		" submit_time, start_time, end_time, elapsed, state, exit_status, reason,"
		" array_job, array_task, max_rss_kb, cpu_us, script, time_limit)"
		" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,"
		" ?18, ?19, ?20)"))) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)j->id);
		bind_text(st, 2, j->name);
		bind_text(st, 3, j->user);
		sqlite3_bind_int64(st, 4, j->uid);
		sqlite3_bind_int64(st, 5, j->nnodes);
		sqlite3_bind_int64(st, 6, j->nranks);
		bind_text(st, 7, j->nodelist);
		sqlite3_bind_double(st, 8, j->t_submit);
		sqlite3_bind_double(st, 9, j->t_start);
		sqlite3_bind_double(st, 10, j->t_end);
		/* a job that never started ran for no time */
		sqlite3_bind_double(st, 11, j->t_start > 0 ? j->t_end - j->t_start : 0);
		bind_text(st, 12, j->state);
		sqlite3_bind_int(st, 13, j->exit_status);
		bind_text(st, 14, j->reason);
		sqlite3_bind_int64(st, 15, (sqlite3_int64)j->array_job);
		sqlite3_bind_int64(st, 16, j->array_task);
		sqlite3_bind_int64(st, 17, (sqlite3_int64)j->max_rss_kb);
		sqlite3_bind_int64(st, 18, (sqlite3_int64)j->cpu_us);
		sqlite3_bind_int(st, 19, j->script);
		sqlite3_bind_int64(st, 20, j->time_limit);
		rc = step_done(db, st, "recording the accounting");
	} else if (rc == 0) {
		rc = -1;
	}
	return txn_end(db, rc);
}

static const char *col_text(sqlite3_stmt *st, int i)
{
	return (const char *)sqlite3_column_text(st, i);
}

int db_jobs_active(struct mm_db *db, int (*cb)(void *arg, const struct db_job *j), void *arg)
{
	sqlite3_stmt *st = prep(db,
		"SELECT id, name, user, uid, gid, nnodes, nranks, spec, output_path, state, slot,"
		" nodelist, submit_time, start_time, launch_time, end_time, exit_status, reason,"
		" rank_status, node_done FROM jobs"
		" WHERE state IN ('QUEUED', 'LAUNCHING', 'RUNNING') ORDER BY id");
	if (!st)
		return -1;
	int rc = 0, s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_job j = {0};
		j.id = (uint64_t)sqlite3_column_int64(st, 0);
		j.name = col_text(st, 1);
		j.user = col_text(st, 2);
		j.uid = (uint32_t)sqlite3_column_int64(st, 3);
		j.gid = (uint32_t)sqlite3_column_int64(st, 4);
		j.nnodes = (uint32_t)sqlite3_column_int64(st, 5);
		j.nranks = (uint32_t)sqlite3_column_int64(st, 6);
		j.spec = sqlite3_column_blob(st, 7);
		j.spec_len = (size_t)sqlite3_column_bytes(st, 7);
		j.output_path = col_text(st, 8);
		j.state = col_text(st, 9);
		j.slot = sqlite3_column_type(st, 10) == SQLITE_NULL ? -1 : sqlite3_column_int(st, 10);
		j.nodelist = col_text(st, 11);
		j.t_submit = sqlite3_column_double(st, 12);
		j.t_start = sqlite3_column_double(st, 13);
		j.t_launched = sqlite3_column_double(st, 14);
		j.t_end = sqlite3_column_double(st, 15);
		j.exit_status = sqlite3_column_int(st, 16);
		j.reason = col_text(st, 17);
		int32_t *ranks = NULL;
		bool *done = NULL;
		int *nodes = NULL;
		size_t rb = (size_t)sqlite3_column_bytes(st, 18);
		if (rb == sizeof(int32_t) * j.nranks && rb &&
		    (ranks = malloc(rb)))
			memcpy(ranks, sqlite3_column_blob(st, 18), rb);
		size_t db_ = (size_t)sqlite3_column_bytes(st, 19);
		if (db_ == j.nnodes && db_ && (done = calloc(j.nnodes, sizeof(bool)))) {
			const uint8_t *b = sqlite3_column_blob(st, 19);
			for (uint32_t k = 0; k < j.nnodes; k++)
				done[k] = b[k] != 0;
		}
		/* the allocation's nodes, ascending, if it has one */
		sqlite3_stmt *a = prep(db, "SELECT node FROM allocations WHERE job = ?1 ORDER BY node");
		if (a) {
			sqlite3_bind_int64(a, 1, (sqlite3_int64)j.id);
			uint32_t n = 0;
			nodes = calloc(j.nnodes ? j.nnodes : 1, sizeof(int));
			while (nodes && sqlite3_step(a) == SQLITE_ROW && n < j.nnodes)
				nodes[n++] = sqlite3_column_int(a, 0);
			sqlite3_finalize(a);
			if (n != j.nnodes) {
				free(nodes);
				nodes = NULL;
			}
		}
		j.rank_status = ranks;
		j.node_done = done;
		j.nodes = nodes;
		rc = cb(arg, &j);
		free(ranks);
		free(done);
		free(nodes);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = sqlfail(db, "reading the jobs");
	sqlite3_finalize(st);
	return rc;
}

uint64_t db_last_job_id(struct mm_db *db)
{
	/* a step's id has its allocation's in the low 32 bits (jobid.h) */
	sqlite3_stmt *st = prep(db, "SELECT max(id & 4294967295) FROM jobs");
	uint64_t id = 0;
	if (st && sqlite3_step(st) == SQLITE_ROW)
		id = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	return id;
}

uint64_t db_job_last_step(struct mm_db *db, uint64_t alloc)
{
	sqlite3_stmt *st = prep(db, "SELECT max(id) FROM jobs WHERE id > 4294967295 AND "
				    "(id & 4294967295) = ?");
	uint64_t id = 0;
	if (st) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)alloc);
		if (sqlite3_step(st) == SQLITE_ROW)
			id = (uint64_t)sqlite3_column_int64(st, 0);
	}
	sqlite3_finalize(st);
	return id;
}

uint64_t db_next_epoch(struct mm_db *db, uint64_t floor)
{
	sqlite3_stmt *st = prep(db, "SELECT value FROM meta WHERE key = 'epoch'");
	uint64_t last = 0;
	if (st && sqlite3_step(st) == SQLITE_ROW)
		last = (uint64_t)sqlite3_column_int64(st, 0);
	sqlite3_finalize(st);
	uint64_t e = floor > last ? floor : last + 1;
	/* stored as a signed 64-bit integer: stay below 2^63 */
	e &= INT64_MAX;
	st = prep(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('epoch', ?1)");
	if (!st)
		return 0;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)e);
	return step_done(db, st, "recording the epoch") < 0 ? 0 : e;
}

int db_acct_list(struct mm_db *db, const struct db_acct_filter *f,
		 int (*cb)(void *arg, const struct db_acct *a), void *arg)
{
	sqlite3_stmt *st = prep(db,
		"SELECT job, name, user, uid, nnodes, nranks, nodelist, submit_time, start_time,"
		" end_time, state, exit_status, reason, array_job, array_task, max_rss_kb, cpu_us,"
		" script, time_limit FROM accounting"
		" WHERE (?1 IS NULL OR user = ?1) AND (?2 < 0 OR uid = ?2)"
		" AND (?3 = 0 OR job = ?3 OR (?5 AND job & 4294967295 = ?3))"
		" AND end_time >= ?4 ORDER BY job & 4294967295, job"); /* steps after their allocation */
	if (!st)
		return -1;
	bind_text(st, 1, f->user);
	sqlite3_bind_int64(st, 2, f->uid);
	sqlite3_bind_int64(st, 3, (sqlite3_int64)f->job);
	sqlite3_bind_double(st, 4, f->since);
	sqlite3_bind_int(st, 5, f->steps);
	int rc = 0, s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_acct a = {0};
		a.id = (uint64_t)sqlite3_column_int64(st, 0);
		a.name = col_text(st, 1);
		a.user = col_text(st, 2);
		a.uid = (uint32_t)sqlite3_column_int64(st, 3);
		a.nnodes = (uint32_t)sqlite3_column_int64(st, 4);
		a.nranks = (uint32_t)sqlite3_column_int64(st, 5);
		a.nodelist = col_text(st, 6);
		a.t_submit = sqlite3_column_double(st, 7);
		a.t_start = sqlite3_column_double(st, 8);
		a.t_end = sqlite3_column_double(st, 9);
		a.state = col_text(st, 10);
		a.exit_status = sqlite3_column_int(st, 11);
		a.reason = col_text(st, 12);
		a.array_job = (uint64_t)sqlite3_column_int64(st, 13);
		a.array_task = (uint32_t)sqlite3_column_int64(st, 14);
		a.max_rss_kb = (uint64_t)sqlite3_column_int64(st, 15);
		a.cpu_us = (uint64_t)sqlite3_column_int64(st, 16);
		a.script = sqlite3_column_int(st, 17) != 0;
		a.time_limit = (uint32_t)sqlite3_column_int64(st, 18);
		rc = cb(arg, &a);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = sqlfail(db, "reading the accounting");
	sqlite3_finalize(st);
	return rc;
}

int db_trace_add(struct mm_db *db, uint64_t job, int node, const void *data, size_t len)
{
	sqlite3_stmt *st = prep(db, "INSERT INTO traces(job, node, data) VALUES(?1, ?2, ?3)");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
	sqlite3_bind_int(st, 2, node);
	sqlite3_bind_blob(st, 3, data, (int)len, SQLITE_TRANSIENT);
	return step_done(db, st, "recording a trace");
}

int db_trace_list(struct mm_db *db, uint64_t job,
		  int (*cb)(void *arg, int node, const void *data, size_t len), void *arg)
{
	sqlite3_stmt *st = prep(db, "SELECT node, data FROM traces WHERE job = ?1 ORDER BY rowid");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
	int rc = 0, s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW)
		rc = cb(arg, sqlite3_column_int(st, 0), sqlite3_column_blob(st, 1),
			(size_t)sqlite3_column_bytes(st, 1));
	if (rc == 0 && s != SQLITE_DONE)
		rc = sqlfail(db, "reading a trace");
	sqlite3_finalize(st);
	return rc;
}

int db_ckpt_add(struct mm_db *db, uint64_t job, uint64_t epoch, const char *nodes, uint64_t size,
		bool complete, int64_t *id)
{
	sqlite3_stmt *st = prep(db,
		"INSERT INTO checkpoints(job, epoch, nodes, size, complete, created)"
		" VALUES(?1, ?2, ?3, ?4, ?5, ?6)");
	if (!st)
		return -1;
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
	sqlite3_bind_int64(st, 2, (sqlite3_int64)epoch);
	bind_text(st, 3, nodes);
	sqlite3_bind_int64(st, 4, (sqlite3_int64)size);
	sqlite3_bind_int(st, 5, complete);
	sqlite3_bind_double(st, 6, (double)ts.tv_sec + ts.tv_nsec / 1e9);
	if (step_done(db, st, "recording the checkpoint") < 0)
		return -1;
	if (id)
		*id = sqlite3_last_insert_rowid(db->h);
	return 0;
}

int db_ckpt_complete(struct mm_db *db, int64_t id, uint64_t size)
{
	sqlite3_stmt *st = prep(db, "UPDATE checkpoints SET complete = 1, size = ?1 WHERE id = ?2");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)size);
	sqlite3_bind_int64(st, 2, id);
	if (step_done(db, st, "completing the checkpoint") < 0)
		return -1;
	if (sqlite3_changes(db->h) != 1) {
		snprintf(db->err, sizeof(db->err), "no checkpoint %lld", (long long)id);
		return -1;
	}
	return 0;
}

int db_ckpt_delete(struct mm_db *db, int64_t id)
{
	if (exec(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	int rc = -1;
	sqlite3_stmt *st = prep(db, "DELETE FROM checkpoints WHERE id = ?1");
	if (st) {
		sqlite3_bind_int64(st, 1, id);
		rc = step_done(db, st, "deleting the checkpoint");
	}
	if (rc == 0 && (st = prep(db, "DELETE FROM checkpoint_images WHERE ckpt = ?1"))) {
		sqlite3_bind_int64(st, 1, id);
		rc = step_done(db, st, "deleting the checkpoint's images");
	} else if (rc == 0) {
		rc = -1;
	}
	return txn_end(db, rc);
}

int db_ckpt_save(struct mm_db *db, const struct db_ckpt *c, const struct db_ckpt_image *img,
		 uint32_t nimg, int64_t *id)
{
	if (exec(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	int rc = -1;
	sqlite3_stmt *st = prep(db, *id ?
		"UPDATE checkpoints SET job = ?1, epoch = ?2, nodes = ?3, size = ?4, complete = ?5,"
		" data = ?6 WHERE id = ?7" :
		"INSERT INTO checkpoints(job, epoch, nodes, size, complete, data, created)"
		" VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7)");
	if (st) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)c->job);
		sqlite3_bind_int64(st, 2, (sqlite3_int64)c->epoch);
		bind_text(st, 3, c->nodes);
		sqlite3_bind_int64(st, 4, (sqlite3_int64)c->size);
		sqlite3_bind_int(st, 5, c->complete);
		bind_blob(st, 6, c->data, c->data_len);
		if (*id) {
			sqlite3_bind_int64(st, 7, *id);
		} else {
			struct timespec ts;
			clock_gettime(CLOCK_REALTIME, &ts);
			sqlite3_bind_double(st, 7, (double)ts.tv_sec + ts.tv_nsec / 1e9);
		}
		rc = step_done(db, st, "recording the checkpoint");
	}
	if (rc == 0 && *id && sqlite3_changes(db->h) != 1) {
		snprintf(db->err, sizeof(db->err), "no checkpoint %lld", (long long)*id);
		rc = -1;
	}
	int64_t row = rc == 0 && !*id ? sqlite3_last_insert_rowid(db->h) : *id;
	if (rc == 0 && (st = prep(db, "DELETE FROM checkpoint_images WHERE ckpt = ?1"))) {
		sqlite3_bind_int64(st, 1, row);
		rc = step_done(db, st, "recording the checkpoint's images");
	} else if (rc == 0) {
		rc = -1;
	}
	for (uint32_t k = 0; rc == 0 && k < nimg; k++) {
		if (!(st = prep(db, "INSERT INTO checkpoint_images(ckpt, rank, node, copy)"
				    " VALUES(?1, ?2, ?3, ?4)"))) {
			rc = -1;
			break;
		}
		sqlite3_bind_int64(st, 1, row);
		sqlite3_bind_int64(st, 2, img[k].rank);
		bind_text(st, 3, img[k].node);
		bind_text(st, 4, img[k].copy);
		rc = step_done(db, st, "recording the checkpoint's images");
	}
	if (txn_end(db, rc) < 0)
		return -1;
	*id = row;
	return 0;
}

int db_ckpt_images(struct mm_db *db, int64_t id,
		   int (*cb)(void *arg, const struct db_ckpt_image *i), void *arg)
{
	sqlite3_stmt *st = prep(db, "SELECT rank, node, copy FROM checkpoint_images WHERE ckpt = ?1"
				    " ORDER BY rank");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, id);
	int rc = 0, s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_ckpt_image i = {0};
		i.rank = (uint32_t)sqlite3_column_int64(st, 0);
		i.node = col_text(st, 1);
		i.copy = col_text(st, 2);
		rc = cb(arg, &i);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = sqlfail(db, "reading the checkpoint's images");
	sqlite3_finalize(st);
	return rc;
}

int db_ckpt_list(struct mm_db *db, uint64_t job, int (*cb)(void *arg, const struct db_ckpt *c),
		 void *arg)
{
	sqlite3_stmt *st = prep(db,
		"SELECT id, job, epoch, nodes, size, complete, created, data FROM checkpoints"
		" WHERE ?1 = 0 OR job = ?1 ORDER BY id");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
	int rc = 0, s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_ckpt c = {0};
		c.id = sqlite3_column_int64(st, 0);
		c.job = (uint64_t)sqlite3_column_int64(st, 1);
		c.epoch = (uint64_t)sqlite3_column_int64(st, 2);
		c.nodes = col_text(st, 3);
		c.size = (uint64_t)sqlite3_column_int64(st, 4);
		c.complete = sqlite3_column_int(st, 5) != 0;
		c.created = sqlite3_column_double(st, 6);
		c.data = sqlite3_column_blob(st, 7);
		c.data_len = (size_t)sqlite3_column_bytes(st, 7);
		rc = cb(arg, &c);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = sqlfail(db, "reading the checkpoints");
	sqlite3_finalize(st);
	return rc;
}

int db_bcs_record(struct mm_db *db, const struct db_bcs *r)
{
	sqlite3_stmt *st = prep(db, "INSERT OR IGNORE INTO bcs_records(job, user, uid, name,"
				" nodes, ranks, argv, created) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)r->job);
	bind_text(st, 2, r->user);
	sqlite3_bind_int64(st, 3, r->uid);
	bind_text(st, 4, r->name);
	sqlite3_bind_int64(st, 5, r->nodes);
	sqlite3_bind_int64(st, 6, r->ranks);
	sqlite3_bind_blob(st, 7, r->argv, (int)r->argv_len, SQLITE_TRANSIENT);
	sqlite3_bind_double(st, 8, r->created);
	return step_done(db, st, "recording a BCS-MPI record");
}

int db_bcs_append(struct mm_db *db, uint64_t job, uint32_t rank, const void *data, size_t len)
{
	sqlite3_stmt *st = prep(db, "INSERT INTO bcs_streams(job, rank, data) VALUES(?1, ?2, ?3)"
				" ON CONFLICT(job, rank) DO UPDATE SET data = data || excluded.data");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
	sqlite3_bind_int64(st, 2, rank);
	sqlite3_bind_blob(st, 3, data, (int)len, SQLITE_TRANSIENT);
	return step_done(db, st, "appending to a BCS-MPI record");
}

static void bcs_row(sqlite3_stmt *st, struct db_bcs *r)
{
	memset(r, 0, sizeof(*r));
	r->job = (uint64_t)sqlite3_column_int64(st, 0);
	r->user = col_text(st, 1);
	r->uid = (uint32_t)sqlite3_column_int64(st, 2);
	r->name = col_text(st, 3);
	r->nodes = (uint32_t)sqlite3_column_int64(st, 4);
	r->ranks = (uint32_t)sqlite3_column_int64(st, 5);
	r->argv = sqlite3_column_blob(st, 6);
	r->argv_len = (size_t)sqlite3_column_bytes(st, 6);
	r->created = sqlite3_column_double(st, 7);
	r->bytes = (uint64_t)sqlite3_column_int64(st, 8);
}

int db_bcs_list(struct mm_db *db, uint64_t job, int (*cb)(void *arg, const struct db_bcs *r),
		void *arg)
{
	sqlite3_stmt *st = prep(db, "SELECT r.job, user, uid, name, nodes, ranks, argv, created,"
				" (SELECT COALESCE(SUM(length(data)), 0) FROM bcs_streams s"
				" WHERE s.job = r.job) FROM bcs_records r WHERE ?1 = 0 OR r.job = ?1"
				" ORDER BY r.job");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
	int rc = 0, s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW) {
		struct db_bcs r;
		bcs_row(st, &r);
		rc = cb(arg, &r);
	}
	if (rc == 0 && s != SQLITE_DONE)
		rc = sqlfail(db, "reading the BCS-MPI records");
	sqlite3_finalize(st);
	return rc;
}

int db_bcs_streams(struct mm_db *db, uint64_t job,
		   int (*cb)(void *arg, uint32_t rank, const void *data, size_t len), void *arg)
{
	sqlite3_stmt *st = prep(db, "SELECT rank, data FROM bcs_streams WHERE job = ?1 ORDER BY rank");
	if (!st)
		return -1;
	sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
	int rc = 0, s;
	while (rc == 0 && (s = sqlite3_step(st)) == SQLITE_ROW)
		rc = cb(arg, (uint32_t)sqlite3_column_int64(st, 0), sqlite3_column_blob(st, 1),
			(size_t)sqlite3_column_bytes(st, 1));
	if (rc == 0 && s != SQLITE_DONE)
		rc = sqlfail(db, "reading a BCS-MPI record");
	sqlite3_finalize(st);
	return rc;
}

int db_bcs_delete(struct mm_db *db, uint64_t job)
{
	if (exec(db, "BEGIN IMMEDIATE") < 0)
		return -1;
	sqlite3_stmt *st = prep(db, "DELETE FROM bcs_records WHERE job = ?1");
	int rc = -1;
	if (st) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
		rc = step_done(db, st, "deleting a BCS-MPI record");
	}
	if (rc == 0 && (st = prep(db, "DELETE FROM bcs_streams WHERE job = ?1"))) {
		sqlite3_bind_int64(st, 1, (sqlite3_int64)job);
		rc = step_done(db, st, "deleting a BCS-MPI record");
	}
	exec(db, rc == 0 ? "COMMIT" : "ROLLBACK");
	return rc;
}
