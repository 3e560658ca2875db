/* The MM's database (daemons/mm/db.c) on a scratch file: a job's life,
 * what a restart reads back, accounting filters, checkpoints, and that
 * every commit is there for a second connection at once (WAL). */
#include <CUnit/CUnit.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../daemons/mm/db.h"
#include "suites.h"

static char dir[64], path[128];

/* A database at path in a new dir, made first by the sqlite3 shell from
 * sql (an older schema) unless sql is NULL, then opened by db_open. */
static struct mm_db *opened(const char *sql)
{
	snprintf(dir, sizeof(dir), "/tmp/storm-dbtest.XXXXXX");
	CU_ASSERT_PTR_NOT_NULL_FATAL(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/mm.db", dir);
	if (sql) {
		char cmd[1024];
		snprintf(cmd, sizeof(cmd), "sqlite3 %s \"%s\"", path, sql);
		CU_ASSERT_EQUAL_FATAL(system(cmd), 0); /* sqlite3: scripts/install-deps.sh */
	}
	struct mm_db *db = NULL;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(db_open(path, false, &db, err, sizeof(err)), 0);
	return db;
}

static struct mm_db *fresh(void) { return opened(NULL); }

static void gone(struct mm_db *db)
{
	db_close(db);
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CU_ASSERT_EQUAL(system(cmd), 0);
}

struct seen {
	int n;
	uint64_t ids[16];
	char states[16][16];
	int nodes0[16];
	int32_t rank1[16];
	bool done1[16];
	uint32_t limit[16];
};

static int collect(void *arg, const struct db_job *j)
{
	struct seen *s = arg;
	s->ids[s->n] = j->id;
	snprintf(s->states[s->n], 16, "%s", j->state);
	s->nodes0[s->n] = j->nodes ? j->nodes[0] : -1;
	s->rank1[s->n] = j->rank_status ? j->rank_status[1] : -7;
	s->done1[s->n] = j->node_done ? j->node_done[1] : false;
	CU_ASSERT_EQUAL(j->spec_len, 5);
	s->n++;
	return 0;
}

static struct db_job job(uint64_t id, const char *state)
{
	struct db_job j = { .id = id, .name = "sh", .user = "alice", .uid = 1000, .gid = 1000,
			    .nnodes = 2, .nranks = 2, .spec = "spec!", .spec_len = 5,
			    .state = state, .slot = -1, .t_submit = 100.0 + (double)id };
	return j;
}

static void test_life(void)
{
	struct mm_db *db = fresh();
	CU_ASSERT_EQUAL(db_last_job_id(db), 0);
	struct db_job a = job(1, "QUEUED"), b = job(2, "QUEUED"), c = job(3, "QUEUED");
	CU_ASSERT_EQUAL(db_job_insert(db, &a), 0);
	CU_ASSERT_EQUAL(db_job_insert(db, &b), 0);
	CU_ASSERT_EQUAL(db_job_insert(db, &c), 0);
	CU_ASSERT_NOT_EQUAL(db_job_insert(db, &a), 0); /* an id is given once */
	/* job 1 runs on nodes 4 and 5, rank 1 ended, node 5 done */
	int nodes[2] = { 4, 5 };
	int32_t ranks[2] = { INT32_MIN, 256 };
	bool done[2] = { false, true };
	a.state = "RUNNING";
	a.slot = 7;
	a.nodes = nodes;
	a.rank_status = ranks;
	a.node_done = done;
	a.t_start = 200;
	CU_ASSERT_EQUAL(db_job_update(db, &a), 0);
	/* job 2 ends */
	b.state = "COMPLETED";
	b.t_start = 150;
	b.t_end = 160;
	CU_ASSERT_EQUAL(db_job_end(db, &b), 0);
	CU_ASSERT_EQUAL(db_last_job_id(db), 3);

	/* a second connection (the restarted MM) sees every commit */
	struct mm_db *db2 = NULL;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(db_open(path, true, &db2, err, sizeof(err)), 0);
	struct seen s = { 0 };
	CU_ASSERT_EQUAL(db_jobs_active(db2, collect, &s), 0);
	CU_ASSERT_EQUAL(s.n, 2);
	CU_ASSERT_EQUAL(s.ids[0], 1);
	CU_ASSERT_STRING_EQUAL(s.states[0], "RUNNING");
	CU_ASSERT_EQUAL(s.nodes0[0], 4);
	CU_ASSERT_EQUAL(s.rank1[0], 256);
	CU_ASSERT(s.done1[0]);
	CU_ASSERT_EQUAL(s.ids[1], 3);
	CU_ASSERT_EQUAL(s.nodes0[1], -1); /* queued: no allocation */
	db_close(db2);

	/* epochs only grow, whatever the clock says */
	uint64_t e1 = db_next_epoch(db, 1000), e2 = db_next_epoch(db, 10), e3 = db_next_epoch(db, 5000);
	CU_ASSERT_EQUAL(e1, 1000);
	CU_ASSERT_EQUAL(e2, 1001);
	CU_ASSERT_EQUAL(e3, 5000);

	struct db_job missing = job(99, "RUNNING");
	CU_ASSERT_NOT_EQUAL(db_job_update(db, &missing), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(db_error(db), "99"));
	gone(db);
}

static int count_acct(void *arg, const struct db_acct *a)
{
	int *n = arg;
	CU_ASSERT(a->t_end >= a->t_start);
	(*n)++;
	return 0;
}

static int acct_n(struct mm_db *db, const char *user, uint64_t id, double since)
{
	struct db_acct_filter f = { .user = user, .uid = -1, .job = id, .since = since };
	int n = 0;
	CU_ASSERT_EQUAL(db_acct_list(db, &f, count_acct, &n), 0);
	return n;
}

static void test_acct(void)
{
	struct mm_db *db = fresh();
	for (uint64_t i = 1; i <= 4; i++) {
		struct db_job j = job(i, "QUEUED");
		if (i == 4)
			j.user = "bob";
		CU_ASSERT_EQUAL(db_job_insert(db, &j), 0);
		j.state = i == 3 ? "FAILED" : "COMPLETED";
		j.t_start = 1000 * (double)i;
		j.t_end = 1000 * (double)i + 5;
		j.exit_status = i == 3 ? 2 : 0;
		CU_ASSERT_EQUAL(db_job_end(db, &j), 0);
	}
	CU_ASSERT_EQUAL(acct_n(db, NULL, 0, 0), 4);
	CU_ASSERT_EQUAL(acct_n(db, "alice", 0, 0), 3);
	CU_ASSERT_EQUAL(acct_n(db, "bob", 0, 0), 1);
	CU_ASSERT_EQUAL(acct_n(db, "carol", 0, 0), 0);
	CU_ASSERT_EQUAL(acct_n(db, NULL, 3, 0), 1);
	CU_ASSERT_EQUAL(acct_n(db, NULL, 0, 2500), 2);
	CU_ASSERT_EQUAL(acct_n(db, "alice", 0, 2500), 1);
	struct seen s = { 0 };
	CU_ASSERT_EQUAL(db_jobs_active(db, collect, &s), 0);
	CU_ASSERT_EQUAL(s.n, 0);
	gone(db);
}

static int collect_acct(void *arg, const struct db_acct *a)
{
	struct seen *s = arg;
	s->ids[s->n] = a->id;
	s->done1[s->n] = a->script;
	s->limit[s->n] = a->time_limit;
	s->n++;
	return 0;
}

/* A batch script's job (flagged) and its steps: -j JOB lists the job and its
 * steps in order, a step alone, never another job's. */
static void test_acct_steps(void)
{
	struct mm_db *db = fresh();
	const uint64_t step0 = 2 | 1ull << 32, step1 = 2 | 2ull << 32; /* jobid.h: 2.0, 2.1 */
	uint64_t ids[] = { 2, step1, 3, step0, 1 };
	for (int i = 0; i < 5; i++) {
		struct db_job j = job(ids[i], "QUEUED");
		CU_ASSERT_EQUAL(db_job_insert(db, &j), 0);
		j.state = "COMPLETED";
		j.t_start = 10;
		j.t_end = 20;
		j.script = ids[i] == 2;
		CU_ASSERT_EQUAL(db_job_end(db, &j), 0);
	}
	struct db_acct_filter f = { .uid = -1, .job = 2, .steps = true };
	struct seen s = { 0 };
	CU_ASSERT_EQUAL(db_acct_list(db, &f, collect_acct, &s), 0);
	CU_ASSERT_EQUAL_FATAL(s.n, 3);
	CU_ASSERT(s.ids[0] == 2 && s.ids[1] == step0 && s.ids[2] == step1);
	CU_ASSERT(s.done1[0] && !s.done1[1] && !s.done1[2]);
	memset(&s, 0, sizeof(s));
	f.steps = false; /* a dependency or a trace: that job only */
	CU_ASSERT_EQUAL(db_acct_list(db, &f, collect_acct, &s), 0);
	CU_ASSERT(s.n == 1 && s.ids[0] == 2);
	memset(&s, 0, sizeof(s));
	f.job = step1;
	f.steps = true;
	CU_ASSERT_EQUAL(db_acct_list(db, &f, collect_acct, &s), 0);
	CU_ASSERT(s.n == 1 && s.ids[0] == step1);
	gone(db);
}

static int count_ckpt(void *arg, const struct db_ckpt *c)
{
	int *n = arg;
	if (c->complete)
		n[1]++;
	n[0]++;
	return 0;
}

static void test_ckpt(void)
{
	struct mm_db *db = fresh();
	int64_t id = 0, id2 = 0;
	CU_ASSERT_EQUAL(db_ckpt_add(db, 5, 1, "node[00-03]", 0, false, &id), 0);
	CU_ASSERT_EQUAL(db_ckpt_add(db, 6, 1, "node00", 10, true, &id2), 0);
	CU_ASSERT(id > 0 && id2 > id);
	int n[2] = { 0, 0 };
	CU_ASSERT_EQUAL(db_ckpt_list(db, 5, count_ckpt, n), 0);
	CU_ASSERT(n[0] == 1 && n[1] == 0);
	CU_ASSERT_EQUAL(db_ckpt_complete(db, id, 4096), 0);
	n[0] = n[1] = 0;
	CU_ASSERT_EQUAL(db_ckpt_list(db, 0, count_ckpt, n), 0);
	CU_ASSERT(n[0] == 2 && n[1] == 2);
	CU_ASSERT_NOT_EQUAL(db_ckpt_complete(db, 12345, 1), 0);
	CU_ASSERT_EQUAL(db_ckpt_delete(db, id), 0);
	n[0] = n[1] = 0;
	CU_ASSERT_EQUAL(db_ckpt_list(db, 0, count_ckpt, n), 0);
	CU_ASSERT(n[0] == 1 && n[1] == 1);
	n[0] = n[1] = 0;
	CU_ASSERT_EQUAL(db_ckpt_list(db, 5, count_ckpt, n), 0);
	CU_ASSERT_EQUAL(n[0], 0);
	gone(db);
}

struct imgs {
	int n;
	char seen[256];
};

static int collect_img(void *arg, const struct db_ckpt_image *i)
{
	struct imgs *m = arg;
	size_t w = strlen(m->seen);
	snprintf(m->seen + w, sizeof(m->seen) - w, "%u:%s:%s ", i->rank, i->node,
		 i->copy ? i->copy : "-");
	m->n++;
	return 0;
}

struct blob {
	char data[64];
	bool complete;
};

static int find_blob(void *arg, const struct db_ckpt *c)
{
	struct blob *b = arg;
	snprintf(b->data, sizeof(b->data), "%.*s", (int)c->data_len, (const char *)c->data);
	b->complete = c->complete;
	return 0;
}

/* A record with its relaunch data and image locations: saved, rewritten
 * (completion, a staged node), read back, deleted with its images. */
static void test_ckpt_save(void)
{
	struct mm_db *db = fresh();
	struct db_ckpt c = {.job = 7, .epoch = 2, .nodes = "node[00-01]", .data = "relaunch-v1",
			    .data_len = 11};
	struct db_ckpt_image img[2] = {{0, "node00", "node01"}, {1, "node01", "node00"}};
	int64_t id = 0;
	CU_ASSERT_EQUAL(db_ckpt_save(db, &c, img, 2, &id), 0);
	CU_ASSERT(id > 0);
	struct imgs m = {0};
	CU_ASSERT_EQUAL(db_ckpt_images(db, id, collect_img, &m), 0);
	CU_ASSERT_STRING_EQUAL(m.seen, "0:node00:node01 1:node01:node00 ");
	int64_t same = id;
	c.complete = true;
	c.data = "relaunch-v2";
	img[1].copy = NULL; /* rewritten, not added */
	CU_ASSERT_EQUAL(db_ckpt_save(db, &c, img, 2, &same), 0);
	CU_ASSERT_EQUAL(same, id);
	memset(&m, 0, sizeof(m));
	CU_ASSERT_EQUAL(db_ckpt_images(db, id, collect_img, &m), 0);
	CU_ASSERT_STRING_EQUAL(m.seen, "0:node00:node01 1:node01:- ");
	struct blob b = {0};
	CU_ASSERT_EQUAL(db_ckpt_list(db, 7, find_blob, &b), 0);
	CU_ASSERT_STRING_EQUAL(b.data, "relaunch-v2");
	CU_ASSERT(b.complete);
	int64_t missing = id + 100;
	CU_ASSERT_NOT_EQUAL(db_ckpt_save(db, &c, img, 2, &missing), 0);
	CU_ASSERT_EQUAL(db_ckpt_delete(db, id), 0);
	memset(&m, 0, sizeof(m));
	CU_ASSERT_EQUAL(db_ckpt_images(db, id, collect_img, &m), 0);
	CU_ASSERT_EQUAL(m.n, 0);
	gone(db);
}

/* A database of schema 1 (checkpoints without data) opens, upgraded. */
static void test_upgrade(void)
{
	struct mm_db *db = opened("CREATE TABLE checkpoints(id INTEGER PRIMARY KEY,"
		" job INTEGER NOT NULL, epoch INTEGER NOT NULL, nodes TEXT, size INTEGER,"
		" complete INTEGER NOT NULL DEFAULT 0, created REAL);"
		" INSERT INTO checkpoints(job, epoch, complete) VALUES(3, 1, 1);");
	struct blob b = {.data = "x"};
	CU_ASSERT_EQUAL(db_ckpt_list(db, 3, find_blob, &b), 0);
	CU_ASSERT_STRING_EQUAL(b.data, ""); /* history only: no relaunch data */
	gone(db);
}

/* A database of schema 3 (no accounting.script): its jobs are listed, none
 * a batch script's, and a new end records the flag. */
static void test_upgrade_script(void)
{
	struct mm_db *db = opened("CREATE TABLE accounting("
		" job INTEGER PRIMARY KEY, name TEXT, user TEXT, uid INTEGER, nnodes INTEGER,"
		" nranks INTEGER, nodelist TEXT, submit_time REAL, start_time REAL, end_time REAL,"
		" elapsed REAL, state TEXT, exit_status INTEGER, reason TEXT,"
		" array_job INTEGER NOT NULL DEFAULT 0, array_task INTEGER NOT NULL DEFAULT 0,"
		" max_rss_kb INTEGER NOT NULL DEFAULT 0, cpu_us INTEGER NOT NULL DEFAULT 0);"
		" INSERT INTO accounting(job, name, state, end_time) VALUES(5, 'old', 'COMPLETED', 9);");
	struct db_job j = job(6, "QUEUED");
	CU_ASSERT_EQUAL(db_job_insert(db, &j), 0);
	j.state = "COMPLETED";
	j.t_end = 10;
	j.script = true;
	CU_ASSERT_EQUAL(db_job_end(db, &j), 0);
	struct db_acct_filter f = { .uid = -1 };
	struct seen s = { 0 };
	CU_ASSERT_EQUAL(db_acct_list(db, &f, collect_acct, &s), 0);
	CU_ASSERT_EQUAL_FATAL(s.n, 2);
	CU_ASSERT(s.ids[0] == 5 && !s.done1[0] && s.limit[0] == 0);
	CU_ASSERT(s.ids[1] == 6 && s.done1[1]);
	gone(db);
}

/* A database of schema 5 (no accounting.time_limit): its older jobs show
 * no limit, and a new end records the job's. */
static void test_upgrade_time_limit(void)
{
	struct mm_db *db = opened("CREATE TABLE accounting("
		" job INTEGER PRIMARY KEY, name TEXT, user TEXT, uid INTEGER, nnodes INTEGER,"
		" nranks INTEGER, nodelist TEXT, submit_time REAL, start_time REAL, end_time REAL,"
		" elapsed REAL, state TEXT, exit_status INTEGER, reason TEXT,"
		" array_job INTEGER NOT NULL DEFAULT 0, array_task INTEGER NOT NULL DEFAULT 0,"
		" max_rss_kb INTEGER NOT NULL DEFAULT 0, cpu_us INTEGER NOT NULL DEFAULT 0,"
		" script INTEGER NOT NULL DEFAULT 0);"
		" CREATE TABLE meta(key TEXT PRIMARY KEY, value);"
		" INSERT INTO meta VALUES('schema', 5);"
		" INSERT INTO accounting(job, name, state, end_time, script)"
		" VALUES(5, 'old', 'COMPLETED', 9, 1);");
	struct db_job j = job(6, "QUEUED");
	CU_ASSERT_EQUAL(db_job_insert(db, &j), 0);
	j.state = "TIMEOUT";
	j.t_end = 10;
	j.time_limit = 300;
	CU_ASSERT_EQUAL(db_job_end(db, &j), 0);
	struct db_acct_filter f = { .uid = -1 };
	struct seen s = { 0 };
	CU_ASSERT_EQUAL(db_acct_list(db, &f, collect_acct, &s), 0);
	CU_ASSERT_EQUAL_FATAL(s.n, 2);
	CU_ASSERT(s.ids[0] == 5 && s.done1[0] && s.limit[0] == 0);
	CU_ASSERT(s.ids[1] == 6 && s.limit[1] == 300);
	db_close(db);
	/* and it opens again as it now is */
	char err[256];
	CU_ASSERT_EQUAL_FATAL(db_open(path, false, &db, err, sizeof(err)), 0);
	memset(&s, 0, sizeof(s));
	CU_ASSERT_EQUAL(db_acct_list(db, &f, collect_acct, &s), 0);
	CU_ASSERT(s.n == 2 && s.limit[1] == 300);
	gone(db);
}

static void test_open_errors(void)
{
	struct mm_db *db = NULL;
	char err[256] = "";
	CU_ASSERT_NOT_EQUAL(db_open("/nonexistent-dir/x/mm.db", false, &db, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NULL(db);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "/nonexistent-dir/x/mm.db"));
	/* a file that is not a database */
	db = fresh();
	db_close(db);
	FILE *f = fopen(path, "w");
	fputs("this is not an SQLite database, but it is long enough to have a header\n", f);
	fclose(f);
	unlink(strcat(strcpy(err, path), "-wal"));
	db = NULL;
	CU_ASSERT_NOT_EQUAL(db_open(path, false, &db, err, sizeof(err)), 0);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, path));
	char cmd[160];
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	CU_ASSERT_EQUAL(system(cmd), 0);
	/* owner-only: it holds users' environments */
	db = fresh();
	struct stat st;
	CU_ASSERT_EQUAL(stat(path, &st), 0);
	CU_ASSERT_EQUAL(st.st_mode & 077, 0);
	gone(db);
}

void add_db_suite(void)
{
	CU_pSuite s = CU_add_suite("mm database", NULL, NULL);
	CU_add_test(s, "a job's life and what a restart reads back", test_life);
	CU_add_test(s, "accounting filters", test_acct);
	CU_add_test(s, "accounting: a job with its steps, a batch script's flag", test_acct_steps);
	CU_add_test(s, "checkpoints", test_ckpt);
	CU_add_test(s, "checkpoints with relaunch data and image locations", test_ckpt_save);
	CU_add_test(s, "a schema 1 database is upgraded", test_upgrade);
	CU_add_test(s, "a schema 3 database gains accounting.script", test_upgrade_script);
	CU_add_test(s, "a schema 5 database gains accounting.time_limit", test_upgrade_time_limit);
	CU_add_test(s, "bad files are refused with the path", test_open_errors);
}
