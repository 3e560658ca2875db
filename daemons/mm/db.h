/* The machine manager's persistent state: one SQLite database (WAL) holding
 * jobs (queued, running, ended), their allocations, checkpoints and the
 * accounting of ended jobs. Every call is synchronous: when it returns 0 the
 * change is committed, so the MM acknowledges a submission only after its
 * job is on disk, and acknowledges a node's report only after what it changed
 * is. Knows nothing of the MM's structures (unit-tested alone); schema and
 * choices: docs/design/persistence.md. */
#ifndef STORM_MM_DB_H
#define STORM_MM_DB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mm_db;

/* A job as stored. Pointers are borrowed: on load they are valid only
 * during the callback. */
struct db_job {
	uint64_t id;
	const char *name, *user;
	uint32_t uid, gid;
	uint32_t nnodes, nranks;
	const void *spec;        /* the accepted request (packed storm.ctl.Submit) */
	size_t spec_len;
	const char *output_path; /* batch output file, NULL: none */
	const char *state;       /* "QUEUED", "LAUNCHING", "RUNNING", "COMPLETED", ... */
	int slot;                /* done variable, -1: none yet */
	const int *nodes;        /* nnodes node indices once started, else NULL */
	const char *nodelist;
	double t_submit, t_start, t_launched, t_end;
	int32_t exit_status;
	const char *reason;
	const int32_t *rank_status; /* nranks wait statuses (INT32_MIN: unknown), or NULL */
	const bool *node_done;   /* nnodes flags, or NULL */
	uint64_t array_job;      /* a task of this array, 0: none */
	uint32_t array_task;
	uint64_t max_rss_kb;     /* the largest of its ranks' peak RSS */
	uint64_t cpu_us;         /* its ranks' CPU time, summed */
	bool script;             /* a batch script's allocation (storm submit job.sh) */
	uint32_t time_limit;     /* seconds it may run (-t), 0: none */
};

/* One line of `storm acct`. */
struct db_acct {
	uint64_t id;
	const char *name, *user, *state, *nodelist, *reason;
	uint32_t uid, nnodes, nranks;
	double t_submit, t_start, t_end;
	int32_t exit_status;
	uint64_t array_job;      /* a task of this array, 0: none */
	uint32_t array_task;
	uint64_t max_rss_kb, cpu_us;
	bool script;             /* a batch script's: its shell is JOB.batch */
	uint32_t time_limit;     /* seconds it might run (-t), 0: none */
};

struct db_acct_filter {
	const char *user;        /* NULL: everyone */
	int64_t uid;             /* -1: any */
	uint64_t job;            /* 0: any */
	bool steps;              /* with job: its steps too (sacct -j) */
	double since;            /* ended at or after (epoch seconds), 0: any */
};

struct db_ckpt {
	int64_t id;
	uint64_t job, epoch, size;
	const char *nodes;
	bool complete;
	double created;
	const void *data;        /* what a restart needs (ckpt.c packs it), NULL: none */
	size_t data_len;
};

/* Where rank `rank`'s image of a checkpoint is: the node that wrote it and
 * the node holding its copy (NULL: none). */
struct db_ckpt_image {
	uint32_t rank;
	const char *node, *copy;
};

/* Opens (creating) the database at path: WAL, synchronous FULL when
 * `full_sync`, else NORMAL. Returns 0, or -1 with the reason in err. */
int db_open(const char *path, bool full_sync, struct mm_db **out, char *err, size_t errlen);
void db_close(struct mm_db *db);
/* Bytes SQLite holds (page cache and the rest), for the memory dump. */
int64_t db_memory_used(void);
/* The last error, for logs. */
const char *db_error(struct mm_db *db);

/* Jobs. insert stores everything including the spec; update rewrites the
 * changing fields (state, slot, nodes, times, statuses, reason). */
int db_job_insert(struct mm_db *db, const struct db_job *j);
int db_job_update(struct mm_db *db, const struct db_job *j);
/* The job ended: its final fields, its accounting line and the release of
 * its allocation, in one transaction. */
int db_job_end(struct mm_db *db, const struct db_job *j);
/* Jobs not ended (QUEUED, LAUNCHING, RUNNING), oldest first. A callback
 * returning non-zero stops the walk and is returned. */
int db_jobs_active(struct mm_db *db, int (*cb)(void *arg, const struct db_job *j), void *arg);
/* The highest job id ever given, 0 for none. */
uint64_t db_last_job_id(struct mm_db *db);
/* storm trace: a packed storm.trace.Chunk of job from node (-1: the MM) */
int db_trace_add(struct mm_db *db, uint64_t job, int node, const void *data, size_t len);
/* each of job's, in the order they were added; a non-zero return stops */
int db_trace_list(struct mm_db *db, uint64_t job,
		  int (*cb)(void *arg, int node, const void *data, size_t len), void *arg);
/* storm run --record: a job's BCS-MPI record and its ranks' stream events */
struct db_bcs {
	uint64_t job;
	const char *user, *name;
	uint32_t uid, nodes, ranks;
	const void *argv;        /* NUL-terminated strings, one after the other */
	size_t argv_len;
	double created;
	uint64_t bytes;          /* list: its streams' bytes */
};
/* The record's header, once (a second one for the job is ignored). */
int db_bcs_record(struct mm_db *db, const struct db_bcs *r);
/* Appends rank's events to what the job's record holds of it. */
int db_bcs_append(struct mm_db *db, uint64_t job, uint32_t rank, const void *data, size_t len);
/* The records (job 0: every one), oldest job first. */
int db_bcs_list(struct mm_db *db, uint64_t job, int (*cb)(void *arg, const struct db_bcs *r),
		void *arg);
/* job's ranks' events, by rank */
int db_bcs_streams(struct mm_db *db, uint64_t job,
		   int (*cb)(void *arg, uint32_t rank, const void *data, size_t len), void *arg);
int db_bcs_delete(struct mm_db *db, uint64_t job);
/* the highest step id of allocation `alloc`, 0: none */
uint64_t db_job_last_step(struct mm_db *db, uint64_t alloc);

/* This MM's incarnation: above every earlier one recorded here and at least
 * `floor` (the clock), so nodes can refuse an older MM's strobes. 0 on error. */
uint64_t db_next_epoch(struct mm_db *db, uint64_t floor);

/* Accounting of ended jobs matching f, oldest first. */
int db_acct_list(struct mm_db *db, const struct db_acct_filter *f,
		 int (*cb)(void *arg, const struct db_acct *a), void *arg);

/* Checkpoints (filled by the checkpoint code): add returns the new row's id
 * in *id; complete marks it whole with its final size. */
int db_ckpt_add(struct mm_db *db, uint64_t job, uint64_t epoch, const char *nodes, uint64_t size,
		bool complete, int64_t *id);
int db_ckpt_complete(struct mm_db *db, int64_t id, uint64_t size);
/* Deleted or pruned: its images are gone. */
int db_ckpt_delete(struct mm_db *db, int64_t id);
/* Inserts (*id 0: the new row's id goes to *id) or rewrites checkpoint *id
 * with c's fields and data, and its images, in one transaction. */
int db_ckpt_save(struct mm_db *db, const struct db_ckpt *c, const struct db_ckpt_image *img,
		 uint32_t nimg, int64_t *id);
int db_ckpt_images(struct mm_db *db, int64_t id,
		   int (*cb)(void *arg, const struct db_ckpt_image *i), void *arg);
int db_ckpt_list(struct mm_db *db, uint64_t job, int (*cb)(void *arg, const struct db_ckpt *c),
		 void *arg);

#endif
