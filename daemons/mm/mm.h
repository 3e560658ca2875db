/* stormmm, the machine manager: one single-threaded event loop that owns the
 * timeslice timer, the control socket, the job table and fabric node 0.
 * main.c     options, start-up, the event loop
 * slice.c    the timeslice: strobes, membership, the command ring, reports
 * conn.c     the control socket's connections: frames, authentication, replies out
 * ctl.c      control requests: decoding, dispatch, cluster-wide replies
 * job.c      job life: validation, allocation, launch, output, end
 * transfer.c program and file multicast with COMPARE-AND-WRITE flow control
 * gang.c     the gang-scheduling matrix: placing jobs, picking the row
 * request.c  decoding and checking control requests (pure, fuzzed)
 * access.c   who may touch a job (mm_may_touch) or a checkpoint
 * ckpt.c     checkpoints: records, the coordinated protocol, restart, recovery
 * persist.c  the job table in SQLite (db.c), recovery after a restart, acct */
#ifndef STORM_MM_H
#define STORM_MM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "cluster.pb-c.h"
#include "config.h"
#include "control.pb-c.h"
#include "trace.pb-c.h"
#include "ctl_auth.h"
#include "evloop.h"
#include "fault.h"
#include "frame.h"
#include "gm_auth.h"
#include "jobid.h"
#include "layout.h"
#include "log.h"
#include "matrix.h"
#include "request.h"
#include "sn.h"

struct job;

struct client {
	struct mm *mm;
	int fd;
	/* a local client: SO_PEERCRED's, checked against MUNGE's; over TCP
	 * (ctl_address) MUNGE's alone, -1 until its credential is decoded */
	uid_t uid;
	gid_t gid;
	pid_t pid;               /* 0 over TCP */
	bool tcp;
	char peer[64];           /* TCP: the peer's address and port, for the log */
	struct ctl_session sess; /* MUNGE, then tags (common/ctl_auth.h) */
	struct frame_rx rx;
	uint8_t *out;            /* replies not yet written */
	size_t out_len, out_cap;
	bool closing;            /* close once out is flushed */
	double close_by;         /* >0: half-closed, closed by then at the latest */
	struct job *job;         /* interactive job streaming here */
	double status_deadline;  /* >0: a ClusterStatus waiting for all nodes UP */
	struct client *next;
};

struct mm_node {
	Storm__Ctl__NodeState state;
	uint64_t incarnation;    /* its daemon's, from its registration or reports; 0: unknown */
	uint64_t report_seq;     /* last report consumed, acknowledged in strobes */
	uint64_t heard_slice;    /* slice of the last report */
	uint64_t heard_us;       /* elapsed_us then: liveness counts time, not slices */
	double heard_time;
	uint32_t cmd_done;
	/* lagging: a command's send failed to reach it. Until it holds the
	 * last command sent, it is left out of the multicasts and gets each
	 * command it lacks on its own, in order, as its reports come: a later
	 * command before the lost one would make it skip that one as never
	 * sent to it (strobe.c) */
	bool cmd_lagging;
	uint32_t cmd_resent_upto; /* sent to it on its own up to this one */
	uint64_t cmd_resent_ns;   /* when all it lacked was last sent again */
	uint64_t orphan_killed;  /* last stray job told to die here, and when */
	uint64_t orphan_slice;
	unsigned idle_reports;   /* reports without records since the MM started */
	/* a report consumed this turn, acknowledged after the commit (report.c),
	 * with its clock exchange's first two times */
	bool ack_due;
	uint64_t ack_t1, ack_t2;
};

enum { TRACE_UNKNOWN, TRACE_OWED, TRACE_WHOLE };

struct job {
	uint64_t id;
	/* what the user asked for, completed by the MM (user, name, restart):
	 * the job's one description, owned (jobspec.c) */
	Storm__Job__Spec *spec;
	Storm__Ctl__JobState state;
	uint32_t nnodes, nranks;
	int *nodes;              /* node indices, ascending */
	char nodelist[512];
	struct sn_nodeset set;   /* fabric ids of the nodes */
	int nfds;                /* program (unless no_bcast), then files */
	int fds[FRAME_MAX_FDS];
	char *fnames[FRAME_MAX_FDS];
	uint64_t fsizes[FRAME_MAX_FDS];
	uint32_t fmodes[FRAME_MAX_FDS];
	struct client *client;   /* interactive: where output and the end go */
	char *output_path;       /* batch */
	int out_fd;
	uint32_t slot;           /* done variable */
	double t_submit, t_start, t_transferred, t_launched, t_end;
	int32_t *rank_status;    /* wait status per rank, INT32_MIN until known */
	uint32_t ranks_ended;
	bool *node_done;         /* per job node: DONE note (or dead) */
	uint32_t nodes_done;
	struct sn_nodeset lost;  /* nodes (MM indexes) it was failed for, once each */
	bool failed, cancelled, timed_out;
	/* its end: the COMPARE-AND-WRITE on the nodes' done variables is out;
	 * or it answered no, and is asked again next slice, until end_asked + the
	 * time a silent node takes to be declared DOWN */
	bool confirm_pending, confirm_again;
	/* its end's check waits for this turn's acknowledgements (report.c):
	 * a node writes its done word only once its DONE is acknowledged */
	bool check_due;
	unsigned quiet_answers; /* reads of quiet ends answered (test point drop_done_from) */
	double end_asked;
	/* job_end_combined: the read of the quiet nodes' ends asks again at
	 * quiet_next (a slice), quiet_wait slices after its last false answer */
	uint64_t quiet_next;
	unsigned quiet_wait;
	struct sn_nodeset quiet_set; /* the nodes that read asked */
	/* per job node: a read found its end quiet and counted its
	 * accounting pair, which a later read must not count again */
	bool *quiet_read;
	/* per launch node, its trace of the job: TRACE_OWED once it ended the
	 * job quietly (its trace comes with a later report), TRACE_WHOLE once
	 * its last chunk came (which may be before the MM's read saw the end) */
	uint8_t *trace_state;
	int abort_code;         /* a rank's MPI_Abort code + 1, the job's exit code; 0: none */
	uint64_t abort_at_ns;   /* when that abort was heard (JobNote.at_ns) */
	bool abort_named;       /* the job's reason is that abort's */
	bool released;           /* storm alloc's client is done with it */
	int stop_sig;            /* the signal that stops it (failed/cancelled), 0 */
	unsigned stop_kill_after_ms;
	bool ran;                /* its row has had a turn since the launch */
	bool bcs_recorded;       /* trace.c: its BCS-MPI record's header is stored */
	uint32_t nsteps;         /* an allocation: steps it has had */
	uint64_t max_rss_kb;     /* the largest peak RSS of its ranks that ended */
	uint64_t cpu_us;         /* their CPU time, summed */
	struct mm_trace *trace;  /* trace.c: the MM's events of it, NULL: none yet */
	/* storm run's stdin for rank 0: what came before the launch, held */
	uint8_t *stdin_held;
	size_t stdin_held_len;
	bool stdin_held_eof, stdin_eof;
	bool recovered, dirty;   /* restored from the database; changed, unsaved */
	int32_t exit_status;
	char reason[512];
	/* checkpoint/restart (ckpt.c) */
	double ckpt_next;        /* next periodic checkpoint (monotonic-ish now_s) */
	uint32_t ckpt_epoch;     /* checkpoints taken of this job so far */
	struct mm_ckpt *ckpt;    /* the one under way: the job is frozen meanwhile */
	struct client *ckpt_client; /* storm checkpoint waiting for it */
	struct ckpt_stage *stage; /* a restart's images moving to its nodes (ckpt.c) */
	char ckpt_failed[384];   /* its last checkpoint's failure, "" once one completes */
	bool ckpt_warned;        /* told it is not protected by --restart-on-failure */
	struct job *next;
};

/* A checkpoint record (ckpt.c): what `storm checkpoints` lists and what a
 * restart needs. Kept in memory behind ckpt_rec_* so a database can hold
 * them instead. */
#define CKPT_MARK_N 4 /* a mark's counts (bcs_mpi/abi/trace_codec.h, enum bcs_stream) */

struct mm_ckpt {
	uint64_t id, job;
	uint32_t epoch;
	Storm__Job__Spec *spec;  /* the job, as a restart relaunches it (owned) */
	uint32_t nnodes, nranks;
	int *nodes;              /* where the images are, in the job's node order */
	char nodelist[512];
	bool *node_done;
	uint32_t nodes_done;
	bool *node_captured;     /* its ranks' memory is in its images */
	uint32_t nodes_captured;
	bool thawed;             /* every node captured: the job runs on */
	double frozen;           /* seconds the job was stopped for it */
	uint64_t bytes;
	bool complete, failed;
	bool confirming;         /* the COMPARE-AND-WRITE that confirms it is out */
	bool periodic;           /* taken by --checkpoint-interval: pruned (ckpt.c) */
	bool unrestorable;       /* failed: a rank holds what cannot be restored */
	char reason[256];
	double time, t_start, seconds;
	int nfiles;
	char *fnames[FRAME_MAX_FDS];
	uint64_t fsizes[FRAME_MAX_FDS];
	uint32_t fmodes[FRAME_MAX_FDS];
	int64_t db_id;           /* its row in the database's checkpoints table, 0: none */
	/* where the images are: per rank, the node that wrote it and the node
	 * holding its buddy copy (-1: none); extra: nodes a restart staged
	 * images or files to (they are removed there too) */
	int *rank_node, *rank_copy;
	int *extra;
	uint32_t nextra;
	/* storm run --record: per rank its outcome counts at this checkpoint
	 * (CKPT_MARK_N per rank: wildcards, tests, waitany, waitsome), the
	 * mark it left in the job's trace; NULL: the job did not record */
	uint64_t *marks;
	struct mm_ckpt *next;
};

struct mm {
	struct storm_conf conf;
	struct sn_ctx *sn;
	struct ev_loop *loop;    /* common/evloop.h: every descriptor and timer */
	int listen_fd, signal_fd, sn_fd;
	int ctl_tcp_fd;          /* ctl_address's listener, or -1 */
	int probe_timer;         /* 0, or when 4 timeslices exceed PROBE_US its timer */
	bool tick_due;           /* the slice timer fired this turn */
	bool acks_due;           /* reports consumed this turn, not yet acknowledged */
	bool fabric_busy;        /* the last progress did work: poll, do not sleep */
	uint64_t slice;
	double slice_start;
	/* the slice timer's grid (CLOCK_MONOTONIC): slice 1 starts at
	 * slice_origin_ns, each next one when the one before has run its
	 * length; slice_grid_ns is the current one's start, the time the
	 * schedule ahead counts from */
	uint64_t slice_origin_ns, slice_grid_ns;
	unsigned slice_us;       /* the current slice's length: its row's (gang_slice_us) */
	int slice_timer;         /* the slice timer's id, and the period it runs at */
	unsigned timer_us;
	uint64_t elapsed_us;     /* the lengths of the slices stepped, one per tick */
	bool recover_checked;    /* recover_tick looked once down_after_ms passed */
	bool recover_ended;      /* recover_tick ended the restored jobs already done */
	int fault_stop_in;       /* test point end_check: strobes until the MM stops */
	struct mm_node *nodes;
	struct matrix matrix;
	int row;                 /* the matrix row running now, -1: none */
	unsigned quantum_left;   /* slices before the next row boundary */
	uint64_t switches;       /* row changes so far */
	FILE *trace;             /* STORM_TRACE: strobe send times, for bench/gang */
	struct client *clients;
	/* registered by ctl.c: an authenticated request's bytes, and a
	 * connection closing (conn.c calls them, never ctl.c directly) */
	void (*on_request)(struct mm *mm, struct client *c, const uint8_t *body, size_t len);
	void (*on_client_gone)(struct mm *mm, struct client *c);
	struct job *jobs;        /* submission order */
	uint64_t next_job_id;
	size_t fd_room;          /* descriptors queued jobs may hold (an array's) */
	bool jobs_waiting;       /* a queued job waits on a dependency or array limit */
	struct mm_metrics *metrics; /* metrics.c */
	bool slot_used[GM_JOB_SLOTS];
	/* command ring */
	uint32_t cmd_seq;        /* last sent */
	uint32_t cmd_queued_seq; /* last queued (numbers are given at queueing) */
	struct pending_cmd *cmd_queue, **cmd_tail;
	bool cmd_inflight;
	/* job_end_combined: the read of the nodes' GM_VAR_CMD_DONE is out, and
	 * the slice the last one started in (cmd.c) */
	bool cmd_read_pending;
	uint64_t cmd_read_slice;
	struct sn_nodeset cmd_read_set;
	/* the commands the nodes' rings hold, by slot: the last sent is in
	 * flight until every UP node confirmed it; any of them goes again
	 * to a node that reports it missing long after it was sent */
	struct sent_cmd {
		uint32_t seq;
		uint8_t *buf;
		size_t len;
		uint64_t sent_ns;
	} cmd_ring[GM_CMD_SLOTS];
	struct sn_nodeset cmd_set;
	/* the last command sent reached every node of the cluster (each UP,
	 * none lagging): once it is the shutdown, no node waits on the MM */
	bool cmd_reached_all;
	bool shutting_down;
	double shutdown_deadline;
	uint64_t file_seq;       /* last file chunk sent */
	struct transfer *xfer;   /* the one transfer under way, if any */
	uint8_t *strobe_buf;
	struct mm_ckpt *ckpts;   /* checkpoint records, oldest first */
	const struct job_ckpt_hooks *ckpt_hooks; /* ckpt.c's, registered at start */
	const struct transfer_hooks *transfer_hooks; /* job.c's, registered at start */
	uint64_t next_ckpt_id;
	struct mm_db *db;        /* persist.c */
	uint64_t epoch;          /* this MM's incarnation, in every strobe */
	uint8_t key[GM_KEY_LEN]; /* cluster key: tags MM <-> node messages */
	uint8_t file_nonce[16];  /* random per start: file chunk keys (gm_file_tag) */
	struct gm_ratelimit rl_ctl, rl_report; /* refusals in the log */
	struct gm_copy verify;   /* a report is verified, then used, here (gm_copy) */
	struct fault fault;      /* tests only: point "strobe", that strobe goes out altered */
	struct mm_boot *boot;    /* boot.c: registrations (bootstrap = mm), or NULL */
	/* slice.c: liveness combined up the tree (layout.h): the round in
	 * flight (0: none), the nodes it asks and the last lease number */
	uint64_t live_round;
	struct sn_nodeset live_set;
	uint64_t live_lease;
	double live_time;
	uint64_t live_us;
};

/* Checkpointing's part in a job's life: ckpt.c registers it (mm_wire), and
 * job.c calls it at those points, never ckpt.c's functions by name. */
struct job_ckpt_hooks {
	/* start(): a restart job's images are on its nodes (1), are being
	 * moved there node to node (2: job_transferred follows), or cannot be
	 * had (-1, job failed) */
	int (*restart_prepare)(struct mm *mm, struct job *j);
	/* a restart's launch: its images and the directories of the old job */
	void (*fill_launch)(struct mm *mm, struct job *j, Storm__Cl__Launch *l, char **old_dirs);
	/* the job lost a node, for why (which names it and the cause: silence,
	 * a restarted daemon): its checkpoint under way fails; with
	 * --restart-on-failure a restart job takes over its client: its id, else 0 */
	uint64_t (*node_lost)(struct mm *mm, struct job *j, const char *why);
	/* a node's CHECKPOINTED, CHECKPOINT_FAILED or CHECKPOINT_CAPTURED note */
	void (*on_note)(struct mm *mm, int node, const Storm__Cl__JobNote *n);
	/* a restart's staging note from a sender: true when it was one */
	bool (*stage_note)(struct mm *mm, struct job *j, int node, const Storm__Cl__JobNote *n);
	/* the job is ending: a checkpoint under way fails, periodic ones stop */
	void (*ending)(struct mm *mm, struct job *j);
};

struct pending_cmd {
	uint8_t *buf;            /* [u32 len][packed Command] */
	size_t len;
	struct pending_cmd *next;
};

/* Ends every job, tells every node to stop, and lets the loop finish. */
void mm_shutdown(struct mm *mm, const char *why);
/* Registers each part's handlers with the parts below it (requests with
 * the connections, checkpointing and persistence with the job life...):
 * the one place that knows them all. */
void mm_wire(struct mm *mm);
/* Closes and frees everything the MM holds (at exit; fuzz/mm_state per input). */
void mm_stop(struct mm *mm);
/* access.c */
/* May the client cancel, checkpoint, restart or attach to (`verb`) the job?
 * Its owner and root may; anyone else gets false and a one-line reason.
 * Every request that touches a job asks this, and nothing else decides. */
/* the same, for a job known only by its owner (an ended one in the database) */
bool mm_may_touch_owned(const struct client *c, uint64_t job, uint32_t uid, const char *user,
			const char *verb, char *why, size_t len);
bool mm_may_touch(const struct client *c, const struct job *j, const char *verb, char *why,
		  size_t len);

/* slice.c */
void slice_tick(struct mm *mm);
void probe_tick(struct mm *mm);
/* how often nodes not UP get the strobe that brings them (back) UP */
#define PROBE_US 100000u
/* report.c: a report landed somewhere (EV_REPORT): every slot is read */
void report_on_event(struct mm *mm);
/* cmd.c: the command ring's MM end. Queues a command for every UP node; nodes outside `targets` (all nodes
 * when targets is NULL) skip it. */
int cmd_queue(struct mm *mm, Storm__Cl__Command *cmd, const int *targets, size_t ntargets);
void cmd_pump(struct mm *mm);
/* job_end_combined: reads GM_VAR_CMD_DONE >= upto on the UP nodes whose
 * reported count is below it, and takes a true answer as their count */
void cmd_read_done(struct mm *mm, uint32_t upto);
void cmd_on_sent_event(struct mm *mm);
void cmd_on_report(struct mm *mm, int idx);
/* nodes.c: membership */
void mark_node(struct mm *mm, int idx, Storm__Ctl__NodeState st, const char *why);
/* A node daemon's registration or report names its incarnation: another one
 * than before marks the node DOWN (its daemon restarted). */
void node_incarnation(struct mm *mm, int idx, uint64_t incarnation);
/* Nodes UP silent for down_after_ms (in slices) are DOWN. */
void nodes_check(struct mm *mm);

/* jobspec.c: the one place a job's description is copied and freed. A
 * copy owns everything it points to; NULL when memory runs out. */
Storm__Job__Spec *jobspec_dup(const Storm__Job__Spec *s);
void jobspec_free(Storm__Job__Spec *s);
/* its packed form (the database row); free() it */
uint8_t *jobspec_pack(const Storm__Job__Spec *s, size_t *len);
Storm__Job__Spec *jobspec_unpack(const uint8_t *buf, size_t len);

/* reply.c: every control reply. body is the message for the oneof case kind. */
void reply_send(struct mm *mm, struct client *c, Storm__Ctl__Reply__BodyCase kind,
		const void *body);
void reply_error(struct mm *mm, struct client *c, Storm__Ctl__ErrorCode code, const char *fmt,
		 ...) __attribute__((format(printf, 4, 5)));

/* conn.c: the control socket's connections */
/* accepts one connection on listen_fd (the control socket or, tcp,
 * ctl_address's): 1, or 0 when none is waiting */
int client_accept(struct mm *mm, int listen_fd, bool tcp);
/* A listening TCP socket on address (HOST:PORT), non-blocking: fd, or -1
 * with why in err. */
int tcp_listen(const char *address, char *err, size_t errlen);
int frame_queue(uint8_t **out, size_t *out_len, size_t *out_cap, const uint8_t *env, size_t len);
void client_on_io(struct mm *mm, struct client *c, uint32_t events);
/* one packed reply, sealed and queued (reply.c builds them) */
void client_send(struct mm *mm, struct client *c, const uint8_t *packed, size_t len);
void client_close(struct mm *mm, struct client *c);
/* Closes the connection once what was sent is flushed. */
void client_finish(struct mm *mm, struct client *c);
void clients_reap(struct mm *mm);

/* ctl.c: control requests, registered with conn.c */
void ctl_init(struct mm *mm);
/* answers `cluster status --wait` once every node is UP or its wait ran out */
void status_waiters_answer(struct mm *mm);
void clients_tick(struct mm *mm);

/* jobtab.c: the job table */
struct job *job_find(struct mm *mm, uint64_t id);
/* queued, launching or running */
bool job_active(const struct job *j);

/* alloc.c: allocations (batch scripts, storm alloc) and their steps */
/* nodes a job's ranks run on: a script's first, none for storm alloc */
uint32_t job_launch_nodes(const struct job *j);
/* a step's allocation, NULL for any other job */
struct job *alloc_of(struct mm *mm, const struct job *j);
/* the ids of an allocation's active steps */
size_t alloc_steps(struct mm *mm, const struct job *a, uint64_t *ids, size_t max);
/* the allocation, or a step of it, is stopped for a checkpoint */
bool alloc_frozen(struct mm *mm, const struct job *a);
/* A step's submission (spec->allocation set): checks it against its
 * allocation, fills in its node count and picks its id. */
Storm__Ctl__ErrorCode alloc_step_check(struct mm *mm, const struct client *c,
				       Storm__Job__Spec *s, struct job **alloc, uint64_t *id,
				       char *why, size_t len);

/* metrics.c: Prometheus metrics, served when storm.conf says [metrics] port */
int metrics_start(struct mm *mm); /* after the loop exists; -1 logged */
void metrics_stop(struct mm *mm);
void metrics_job_submitted(struct mm *mm);
void metrics_job_launched(struct mm *mm, const struct job *j);
void metrics_job_ended(struct mm *mm, const struct job *j);
void metrics_checkpoint(struct mm *mm, double seconds);
void metrics_on_report(struct mm *mm, int node, const Storm__Cl__Report *r);

/* trace.c: storm trace (the MM's events of a job; the nodes' come in reports) */
void trace_rows(struct mm *mm, int old_row, int new_row);
void trace_checkpoint(struct mm *mm, struct job *j, const struct mm_ckpt *r);
void trace_job_end(struct mm *mm, struct job *j); /* into the database; forgotten */
void trace_on_chunk(struct mm *mm, int node, const Storm__Trace__Chunk *c);
/* info: the job's, when it is in memory (job_fill_info), else NULL */
void trace_reply(struct mm *mm, struct client *c, const Storm__Ctl__GetTrace *g,
		 const Storm__Ctl__JobInfo *info);
void trace_free(struct job *j);
/* storm run --record: a rank's stream events from a node's report, into the
 * job's record; the loss of a node said in it; storm trace --bcs and storm
 * traces */
bool trace_on_bcs(struct mm *mm, int node, const Storm__Cl__BcsStream *b);
void trace_bcs_node_lost(struct mm *mm, struct job *j, int node);
void trace_bcs_request(struct mm *mm, struct client *c, const Storm__Ctl__Request *req);

/* depend.c: whether a queued job may start (dependencies, array limits) */
enum eligible { ELIGIBLE, WAIT, NEVER };
/* every job the dependencies name is known; false with why */
bool depend_known(struct mm *mm, const Storm__Job__Spec *s, char *why, size_t len);
enum eligible job_eligible(struct mm *mm, const struct job *j, char *why, size_t len);

/* job.c */
void job_submit(struct mm *mm, struct client *c, const Storm__Ctl__Submit *sub, int *fds,
		int nfds);
void job_init(struct mm *mm); /* registers its transfer hooks */
void jobs_schedule(struct mm *mm);
void job_cancel(struct mm *mm, struct job *j, int sig, const char *who);
void job_transferred(struct mm *mm, struct job *j);
void job_fail(struct mm *mm, struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void job_on_output(struct mm *mm, int node, const Storm__Cl__Output *o);
/* one line of storm's own on the job's stderr: storm run's, or the batch
 * output file */
void job_warn(struct mm *mm, struct job *j, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
void job_on_exit(struct mm *mm, int node, const Storm__Cl__RankExit *e);
void job_on_note(struct mm *mm, int node, const Storm__Cl__JobNote *n);
/* A node's report after a restart of the MM does not list job j, which
 * waits on it: with job_end_combined it may have ended the job quietly,
 * which its done word says (read first); else it never received the
 * launch, and the job fails there (why) */
void job_node_unlisted(struct mm *mm, struct job *j, int node, const char *why);
void job_node_lost(struct mm *mm, struct job *j, int node);
/* Node `node` is done with the job, which fails for `why` (naming it). */
void job_node_failed(struct mm *mm, struct job *j, int node, const char *why);
void job_fill_info(struct mm *mm, const struct job *j, Storm__Ctl__JobInfo *info);
void job_client_gone(struct mm *mm, struct job *j);
/* storm run's stdin bytes for rank 0, on the job's connection */
void job_stdin(struct mm *mm, struct client *c, const Storm__Ctl__StdinData *d);
void job_destroy(struct job *j);
/* The job is active and runs on node idx. */
bool job_runs_on(struct mm *mm, uint64_t id, int idx);
/* ... and node idx has not said it is done with it. */
bool job_waits_on(struct mm *mm, uint64_t id, int idx);
/* Tells node idx to SIGKILL a job it runs that the MM does not run there. */
void job_kill_stray(struct mm *mm, uint64_t id, int idx);
/* Node idx came UP: it gets the stop signal of each stopping job it was not
 * reachable for (a node not yet heard from after an MM restart). */
void jobs_node_up(struct mm *mm, int idx);
void jobs_end_all(struct mm *mm, const char *why);
/* Jobs that ran past their time limit (-t) are stopped: TIMEOUT. */
void jobs_check_time(struct mm *mm);
/* the end checks held while reports were consumed (check_due), once their
 * acknowledgements are out */
void jobs_check_due(struct mm *mm);

/* gang.c */
void gang_tick(struct mm *mm);
/* The slice row runs at (-1: none): the shortest its jobs ask for
 * (storm run --timeslice-us), else the cluster's timeslice_us. */
unsigned gang_slice_us(struct mm *mm, int row);
void gang_fill_strobe(struct mm *mm, struct strobe *s);
/* Places the job in the matrix and fills j->nodes; -1 when no row has room. */
int gang_place(struct mm *mm, struct job *j);
void gang_remove(struct mm *mm, struct job *j);
bool gang_runs_now(struct mm *mm, const struct job *j);
int gang_home(struct mm *mm, const struct job *j);
const char *gang_waiting_reason(struct mm *mm, const struct job *j, char *buf, size_t len);

/* ckpt_rec.c: the records */
struct mm_ckpt *ckpt_rec_new(struct mm *mm, const struct job *j);
struct mm_ckpt *ckpt_rec_find(struct mm *mm, uint64_t id);
/* a rank's mark in its job's BCS-MPI trace (storm run --record) for the
 * checkpoint b names, kept with the record; anything else is ignored */
void ckpt_rec_mark(struct mm *mm, const Storm__Cl__BcsStream *b);
struct mm_ckpt *ckpt_rec_latest_complete(struct mm *mm, uint64_t job);
void ckpt_rec_delete(struct mm *mm, struct mm_ckpt *r);
/* Writes the record, with its relaunch data and image locations, to the
 * database; ckpt_load reads them back when the MM starts. */
void ckpt_persist(struct mm *mm, struct mm_ckpt *r);
int ckpt_load(struct mm *mm);
/* Slurm's block distribution, as the Launch: the node position of a rank. */
uint32_t ckpt_pos_of_rank(uint32_t nranks, uint32_t nnodes, uint32_t rank);
/* A checkpoint's directory under a node's state directory (epoch 0: the
 * job's files, shared by its checkpoints). */
void ckpt_rec_dir(char *buf, size_t len, uint64_t job, uint32_t epoch);
/* What storm checkpoints shows of r; where (2 * nranks + 1 entries) holds
 * the node names it points into. */
void ckpt_rec_info(struct mm *mm, const struct mm_ckpt *r, Storm__Ctl__CheckpointInfo *i,
		   char **where);
void ckpt_reply_info(struct mm *mm, struct client *c, const struct mm_ckpt *r);

/* ckpt_restart.c: a new job from checkpoint r on `nodes` nodes (0: as many
 * as it had), queued; with a trace (storm replay --from: *trace_fd >= 0,
 * taken and set to -1), the trace goes to its nodes as a job's file and its
 * ranks replay it from r's mark; NULL with why */
struct job *ckpt_restart_job(struct mm *mm, struct mm_ckpt *r, uint32_t nodes, bool interactive,
			     int *trace_fd, char *why, size_t len);
/* the name a replay's trace has in the job directory on each node: a dot
 * name, which no file of the job restored beside it has (a checkpoint keeps
 * none of those) */
#define CKPT_REPLAY_NAME ".storm-replay.bcs"
void ckpt_send_submitted(struct mm *mm, struct client *c, struct job *j, const char *reason);
/* the job_ckpt_hooks a restart answers (their meaning: struct job_ckpt_hooks) */
int ckpt_restart_prepare(struct mm *mm, struct job *j);
bool ckpt_stage_note(struct mm *mm, struct job *j, int node, const Storm__Cl__JobNote *n);
void ckpt_fill_launch(struct mm *mm, struct job *j, Storm__Cl__Launch *l, char **old_dirs);
/* Restarts whose staging stalled fail (from ckpt_tick). */
void ckpt_stage_check(struct mm *mm);

/* ckpt.c: the protocol and the requests */
void ckpt_init(struct mm *mm);
/* Starts a checkpoint of a running job; c (may be NULL) gets the answer.
 * 0, or -1 with why filled. */
int ckpt_begin(struct mm *mm, struct job *j, struct client *c, char *why, size_t len);
void ckpt_tick(struct mm *mm);
void ckpt_handle_request(struct mm *mm, struct client *c, const Storm__Ctl__Request *req);
/* gang.c: a job is out of the run list while a checkpoint captures it */
static inline bool ckpt_freezes(const struct job *j)
{
	return j->ckpt && !j->ckpt->thawed;
}
bool mm_may_touch_ckpt(const struct client *c, const struct mm_ckpt *r, const char *verb,
		       char *why, size_t len);
/* persist.c: every accepted job is in the database before it is
 * acknowledged; its changes are saved as they happen */
int persist_open(struct mm *mm);
void persist_close(struct mm *mm);
/* Records a new job; -1 (logged) when the database refuses it. */
int persist_job_new(struct mm *mm, struct job *j);
void persist_job(struct mm *mm, struct job *j);
/* The job's end; its kept files (persist_files_keep) go */
void persist_job_end(struct mm *mm, struct job *j);
/* A job whose files came over TCP: copies of them kept until it ends, for
 * a restarted MM (logged when they cannot be) */
void persist_files_keep(struct mm *mm, struct job *j);
/* Where its file i is kept; 0 or -1 */
int persist_files_path(const struct mm *mm, uint64_t job, int i, char *out, size_t len);
/* Saves the jobs marked dirty (rank exits, node notes). */
void persist_flush(struct mm *mm);
/* a job state as stored (its protobuf name), and back */
const char *persist_state_name(Storm__Ctl__JobState s);
Storm__Ctl__JobState persist_state_value(const char *name);
/* recover.c: the jobs of an earlier run of this MM back from the database */
int recover_jobs(struct mm *mm);
/* After a node's report: jobs restored from the database that the node
 * never received (the MM died mid-launch) fail. */
void recover_node_report(struct mm *mm, int idx, const Storm__Cl__Report *r);
/* Nodes holding restored jobs that have not reported by now are DOWN. */
void recover_tick(struct mm *mm);
/* Ends j if every node it launched on is done with it (the end is
 * confirmed as for any job); otherwise nothing. */
void job_end_if_done(struct mm *mm, struct job *j);
/* acct.c: `storm acct` */
void acct_reply(struct mm *mm, struct client *c, const Storm__Ctl__Acct *a);

/* transfer.c. What a transfer tells the job it carries: job.c registers
 * these (job_init), so transfer.c needs nothing of job.c by name. */
struct transfer_hooks {
	void (*progress)(struct mm *mm, struct job *j, uint64_t done, uint64_t total);
	void (*failed)(struct mm *mm, struct job *j, const char *why);
	void (*done)(struct mm *mm, struct job *j); /* every node holds every file */
	void (*drained)(struct mm *mm); /* an ended one's chunks left the fabric */
};
int transfer_start(struct mm *mm, struct job *j);
void transfer_step(struct mm *mm);
/* Ends j's transfer; NULL: any, waiting for its chunks in flight (the MM
 * stopping). */
void transfer_abort(struct mm *mm, struct job *j);
struct job *transfer_job(const struct mm *mm);

/* query.c: a read-only COMPARE-AND-WRITE (var OP value on every node of
 * set) whose answer comes to fn(mm, id, id2, result) on a later turn of the
 * loop; 0, or -1 with sn_strerror saying why it did not start. */
typedef void (*mm_answer_fn)(struct mm *mm, uint64_t id, uint64_t id2,
			     const struct sn_caw_result *res);
int mm_query(struct mm *mm, const struct sn_nodeset *set, uint64_t var, enum sn_cmp op,
	     uint64_t value, mm_answer_fn fn, uint64_t id, uint64_t id2);
/* The same, and if it holds everywhere write_val to write_off on every node */
/* A read that also sums the u64 at pair and maxes the one at pair + 8 over
 * set (sn_caw_gather_start): res->sum and res->max with status 1. */
int mm_query_gather(struct mm *mm, const struct sn_nodeset *set, uint64_t var, enum sn_cmp op,
		    uint64_t value, uint64_t pair, mm_answer_fn fn, uint64_t id, uint64_t id2);
int mm_query_write(struct mm *mm, const struct sn_nodeset *set, uint64_t var, enum sn_cmp op,
		   uint64_t value, bool do_write, uint64_t write_off, uint64_t write_val,
		   mm_answer_fn fn, uint64_t id, uint64_t id2);

/* boot.c: node registrations on mm_address (bootstrap = mm). */
/* The registration port is bound before the fabric opens: a port given
 * in mm_address may be in the ephemeral range, and the fabric's own
 * endpoints, bound to port 0, could be handed it first. */
int boot_listen(struct mm *mm);
int boot_start(struct mm *mm);
void boot_stop(struct mm *mm);

#endif
