/* stormnd: the node daemon. One single-threaded event loop (main.c) drives
 * the network context, the ranks' pipes and signals; ranks.c forks, reaps and
 * signals the ranks of jobs, files.c materialises transferred files in job
 * directories, report.c queues what happened and sends it to the MM as the
 * node's heartbeat; check.c holds the pure checks of what the MM wrote.
 * Memory map and protocol: common/layout.h. */
#ifndef STORM_ND_H
#define STORM_ND_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include <sys/uio.h>

#include "ahead.h"
#include "cluster.pb-c.h"
#include "config.h"
#include "evloop.h"
#include "jobid.h"
#include "fault.h"
#include "gm_auth.h"
#include "layout.h"
#include "log.h"
#include "sn.h"

#define ND_READ_CHUNK (16 * 1024)        /* bytes per pipe read */
#define ND_OUTPUT_CAP (8u * 1024 * 1024) /* stop reading pipes above this */
#define ND_EXIT_DRAIN_MAX (1u << 20)     /* per pipe when its rank exits */
#define ND_MAX_LOCAL_RANKS STORM_MAX_LOCAL_RANKS
#define ND_RESEND_AFTER 8                /* strobes without an ack before resending */
#define ND_CG_PENDING_MAX 64             /* job cgroups waiting to be removed */

struct nd_job;
struct nd_rank;
struct nd_bcs;
struct nd_mb;

struct nd_pipe {
	int fd;                 /* -1 once closed */
	uint32_t stream;        /* 1 stdout, 2 stderr */
	bool in_epoll;          /* registered with the event loop */
	struct nd *nd;
	struct nd_job *job;
	struct nd_rank *rank;
};

struct nd_rank {
	pid_t pid;              /* 0 before the fork, -1 once reaped */
	uint32_t rank;
	struct nd_pipe pipes[2];
	/* job_end_combined: an exit 0 kept here, not queued (its job may end
	 * quietly); queued at the job's end if the job does not */
	bool kept;
	int kept_status;
	uint64_t kept_rss_kb, kept_cpu_us;
	/* strict switch: its threads' run counts when the wait last looked
	 * (gang.c), 0: not looked since the stop */
	uint64_t run_mark;
};

struct nd_job {
	uint64_t id;
	uint32_t slot;          /* GM_VAR_DONE index */
	pid_t pgid;
	uint32_t nranks, nalive;
	struct nd_rank *ranks;
	uint64_t kill_at_ns;    /* pending SIGKILL after a Signal, 0: none */
	bool stopped;           /* its row is not running: stopped or frozen */
	bool ckpt_busy;         /* a checkpoint helper is saving it: stays stopped */
	bool ckpt_frozen;       /* its BCS-MPI traffic is frozen for a checkpoint
				 * (nd_bcs_freeze) until it runs again */
	int freeze_fd, procs_fd; /* switch = freezer: its cgroup's files, else -1 */
	int events_fd;          /* switch = freezer: its cgroup.events, else -1 */
	bool leaving;           /* stopped by the switch going on (gang.c) */
	bool kregistered;       /* registered with /dev/storm (kswitch.c) */
	struct nd_trace *trace; /* trace.c: its events here, NULL until the first */
	int mpi;                /* Storm__Job__Mpi: how its ranks wire up */
	bool first_node;        /* this node is the job's first (the Launch's node 0) */
	/* job_end_combined: the job may still end quietly here (report.c,
	 * nd_quiet_end): every rank that ended exited 0, nothing failed or
	 * aborted, nothing recorded (--record), it is not a restore, and this
	 * is not the job's first node */
	bool may_be_quiet;
	void *pmi;              /* pmi1.c or pmix.c: its process manager here */
	struct nd *daemon;      /* for its event callbacks */
	/* stdin.c: rank 0's stdin when storm run forwards it, else -1 */
	int stdin_w;
	uint8_t *stdin_buf;     /* bytes not yet written, from stdin_off */
	size_t stdin_len, stdin_off;
	bool stdin_eof, stdin_polled, stdin_pty;
	uint64_t stdin_written;
	char dir[PATH_MAX];
	struct nd_job *next;
};

enum nd_rec_kind { REC_OUTPUT, REC_EXIT, REC_NOTE, REC_TRACE, REC_BCS };

/* One thing that happened, in the order it happened. */
struct nd_rec {
	enum nd_rec_kind kind;
	uint64_t job;
	uint32_t rank, stream;
	int32_t wait_status;
	uint64_t max_rss_kb, cpu_us; /* EXIT: from the rank's rusage */
	uint64_t value;         /* NOTE: STDIN_ACK's count; BCS: a mark's checkpoint */
	uint64_t at_ns;         /* NOTE ABORTED: when heard, on the MM's clock */
	uint64_t mark[4];       /* BCS: the mark's counts per stream */
	int note;               /* Storm__Cl__JobNote__Kind */
	char *message;
	uint32_t done_slot;     /* DONE: GM_VAR_DONE slot to set once sent */
	bool done_at_send;      /* DONE: set as it is sent, not once acknowledged */
	uint8_t *data;
	size_t len, off;        /* output bytes and how many already went out */
	struct nd_rec *next;
};

struct nd {
	struct storm_conf conf;
	const char *name;
	uint32_t index;
	/* this daemon's start (CLOCK_REALTIME, ns), named in its registration,
	 * reports and mailbox messages: another one means it restarted */
	uint64_t incarnation;
	bool root;              /* may switch users and chown */
	struct sn_ctx *sn;
	uint8_t *gmem;
	struct ev_loop *loop;   /* common/evloop.h: descriptors, limits, turns */
	int sigfd;
	bool signalled;         /* the signalfd fired this turn */
	bool fabric_busy;       /* the last progress did work: poll, do not sleep */
	char state_dir[PATH_MAX], jobs_dir[PATH_MAX];
	bool stop;

	/* strobes and commands */
	bool seen_strobe;
	uint64_t slice;
	uint64_t strobe_ns;     /* CLOCK_MONOTONIC when the last strobe came */
	uint64_t strobe_mm_ns;  /* its sent_ns: its slice's start on the MM's clock */
	unsigned slice_us;      /* the current slice's length as its strobe said
				 * (nd_slice_us), 0: none yet */
	uint32_t cmd_done;
	uint32_t strobe_cmd_seq; /* the last command the current strobe's MM had queued */
	uint64_t mm_epoch;      /* the MM's incarnation, from its strobes */
	uint32_t cmd_refused_seq; /* a slot with a bad tag already logged */
	uint32_t cmd_gap_want;  /* the command missing while later ones were sent, */
	uint64_t cmd_gap_ns;    /* since when (CLOCK_MONOTONIC) */

	struct nd_boot *boot;   /* boot.c: registration with the MM (bootstrap = mm) */
	bool boot_refused;      /* the MM refused it: stop, exit 1 */

	/* authentication (common/gm_auth.h) */
	uint8_t key[GM_KEY_LEN];
	struct gm_ratelimit rl_auth; /* refused strobes, commands, acks */
	struct gm_copy verify;  /* what is verified, then used (gm_copy) */
	size_t strobe_len;      /* the most a strobe for this cluster holds */
	uint64_t refused;       /* messages refused so far */
	/* tests only: points "report" (that report goes out altered) and
	 * "replay" (report 2 goes out again in its place) */
	struct fault fault;
	uint8_t *tamper_saved;  /* report 2, kept for the replay */
	uint64_t deaf_until;    /* points "deaf" (with "deaf_for" N) and
				 * "ckpt_deaf_for": strobes up to this slice are
				 * ignored, as if never received */
	uint64_t signalled_job; /* point "abort_hold_code": the last job the
				 * MM signalled, run here or not */
	size_t tamper_saved_len;
	uint64_t dones_out;     /* DONE notes sent */
	bool share_logged;      /* rtguard.h: went over its share once */
	/* per GM_VAR_DONE slot: the job launched in it last, and the job whose
	 * end this node wrote into it last (report.c) */
	uint64_t slot_job[GM_JOB_SLOTS];
	uint64_t slot_done[GM_JOB_SLOTS];
	/* job_end_combined: jobs ended quietly here whose words wait for
	 * every record of theirs to be acknowledged (report.c) */
	struct nd_quiet_end {
		uint64_t job, cpu_us, max_rss_kb;
		uint32_t slot;
	} quiet_ends[GM_JOB_SLOTS];
	unsigned nquiet_ends;
	/* job_end_combined: DONEs sent whose done words wait for their
	 * report's acknowledgement (report.c, acked_dones_write) */
	struct nd_sent_done {
		uint64_t job, seq;
		uint32_t slot;
	} sent_dones[GM_JOB_SLOTS];
	unsigned nsent_dones;
	/* job_end_combined: a quiet end's trace, held for the next report
	 * that goes anyway (report.c, later_splice): it costs the MM no
	 * report of its own */
	struct nd_rec *later_head, *later_tail;
	unsigned nlater;
	uint64_t silent_report; /* point "silent" (K, with "silent_ms" T): the
				 * report carrying the K-th DONE; once the MM
				 * has it the daemon hangs for T ms */

	/* gang scheduling (gang.c) */
	uint64_t run_job;       /* the job the last strobe says runs here, 0: none */
	uint64_t switches;      /* the MM's row changes as of the last strobe */
	uint64_t missed_strobes;
	uint64_t torn_strobes;   /* copied while the next one landed, and read again */
	/* a drought: no strobe taken for a while (strobe.c, nd_strobe_watch) */
	bool strobe_drought;
	uint64_t strobe_events;  /* strobe arrivals, taken or not */
	uint64_t strobes_old;    /* arrived, and not newer than the last taken */
	uint64_t events_at_take, old_at_take; /* the two when the last was taken */
	/* row switches done since the last report, for the MM's metrics: the
	 * newest ND_SW_KEPT (they ride on reports, never cause one) */
#define ND_SW_KEPT 16
	struct { uint64_t switches; uint32_t delay_us, off_us; bool timeout; } sw[ND_SW_KEPT];
	/* the schedule ahead (timed.c): what the last strobe said, the timer
	 * that switches at its slots, the MM's clock against ours */
	struct ahead_sched ahead;
	int ahead_fd;
	uint64_t ahead_armed_ns; /* the deadline ahead_fd is set to, 0: none */
	struct clk_est clk;
	bool clk_logged;        /* the estimate was logged, as clk_logged_ns */
	int64_t clk_logged_ns;  /* (a change of over 1 ms is logged again) */
	uint64_t clock_skew_ns; /* test hook "clock_skew_us": this node's clock reads
				 * that much ahead of the host's */
	uint64_t report_sent_ns; /* sent_ns of the last report (echoed in its ack) */
	struct nd_kswitch *ks;  /* /dev/storm when it is there (kswitch.c), else NULL */
	unsigned nsw;
	uint64_t mb_sent_bytes[32]; /* per mailbox type (ND_MB_TYPES <= 32), since start */
	uint64_t strobe_switches, strobe_sent_us; /* the strobe being acted on (traces) */
	int32_t strobe_row;
	char cg_base[PATH_MAX]; /* switch = freezer: this daemon's cgroup subtree */
	char *cg_remove[ND_CG_PENDING_MAX];
	int cg_pending;
	FILE *trace;            /* STORM_TRACE: strobe and switch times */

	/* files */
	unsigned quiet_strobes; /* acknowledged strobes since the last report */
	uint64_t file_seq[2];   /* per file buffer: last chunk processed */
	int file_fd;            /* file being written, or -1 */
	uint64_t file_job;
	uint32_t file_index;
	/* the last file that could not be written (disk full...): the launch
	 * names the cause, and its later chunks are not written */
	uint64_t file_err_job;
	uint32_t file_err_index;
	char file_err[160];

	struct nd_job *jobs;
	struct nd_helper *helpers; /* checkpoint and restore helpers (ckpt.c) */
	uint64_t leftovers_kill_ns; /* leftovers.c: SIGKILL for what SIGTERM left, 0: none */
	uint64_t leftovers_look_ns; /* leftovers.c: another sweep, for a child unread, 0: none */
	unsigned leftovers_looks;   /* leftovers.c: such sweeps since one read every child */
	uint64_t leftovers_unread_faked; /* leftovers.c: reads the test point emptied */
	/* registered by ckpt.c at start-up, so that ranks.c, below it, hands
	 * over what is checkpointing's without calling up: a child that is
	 * not a rank (true: it was a helper), and a launch that restores */
	bool (*child_reaped)(struct nd *nd, pid_t pid, int status);
	void (*restore_ranks)(struct nd *nd, const Storm__Cl__Command *cmd, struct nd_job *job,
			      uint32_t first);
	struct nd_mb *mb;       /* node-to-node mailboxes (mailbox.c) */
	struct nd_bcs *bcs;     /* BCS-MPI state (bcs.c) */
	struct nd_copies *copies; /* checkpoint copies (ckpt_copy.c) */
	struct nd_xchg *xchg;   /* the PMI servers' exchanges (pmi_xchg.c) */
	struct nd_pmix *pmix;   /* the PMIx server (pmix.c), NULL until a job needs it */

	/* records and reports */
	struct nd_rec *q_head, *q_tail;
	size_t q_bytes;         /* output bytes buffered */
	bool pipes_paused;
	uint64_t report_seq;    /* last report sent, 0: none yet */
	uint64_t acked;         /* highest report the MM acknowledged */
	uint8_t *report_buf;    /* its bytes, for a resend */
	size_t report_len;
	unsigned unacked_strobes;
	/* the MM's liveness lease (layout.h): GM_VAR_QUIET as last read and
	 * the strobes it still runs (0: report at the heartbeat's pace), and
	 * what the last report said that a quiet node must not leave unsaid */
	uint64_t lease_val;
	unsigned lease_left;
	uint32_t rep_cmd_done;
	uint64_t rep_epoch;
};

/* A refused (forged, altered, replayed) message: counted, and logged
 * rate-limited so a flood cannot fill the disk. */
#define nd_log_refused(nd, ...) ((nd)->refused++, slog_limited(&(nd)->rl_auth, __VA_ARGS__))

/* check.c: pure, fuzzed (fuzz/nd_*.c) */
bool nd_valid_basename(const char *name);
/* a checkpoint directory named by the MM: "ckpt/...", relative, no ".." */
bool nd_valid_ckpt_dir(const char *d);
/* a checkpoint file named by the MM or a peer: a valid ckpt dir whose last
 * part is a plain name, short enough for its ".part" twin */
bool nd_valid_ckpt_file(const char *name);
/* A checkpoint copy message (ckpt_copy.c, M_COPY_DATA): this header, then
 * `len` bytes of the file `name` at `offset`. */
#define ND_COPY_NAME_MAX 160
struct nd_copy_hdr {
	uint64_t xid;     /* the sender's number for this file */
	uint64_t size;    /* of the whole file */
	uint64_t offset;  /* of this data */
	uint32_t mode;
	uint32_t len;     /* data bytes after the header */
	char name[ND_COPY_NAME_MAX]; /* relative to the state directory */
};
/* strobe.c: a strobe landed in the areas of bitmask areas (EV_STROBE_AT):
 * checked, then its commands, the gang switch, BCS-MPI's turn and this
 * node's report. */
void nd_on_strobe(struct nd *nd, unsigned areas);
/* A drought of strobes said in the log (once each); when the next look is due
 * (0: none) */
void nd_strobe_watch(struct nd *nd);
uint64_t nd_strobe_watch_at(const struct nd *nd);
/* A command landed in the ring (EV_CMD): those due are acted on in order.
 * True when the next one's slot holds one with a bad tag (forged). */
bool nd_on_commands(struct nd *nd);
/* Why a copy message whose body is body_len bytes cannot be written, or NULL. */
const char *nd_copy_problem(const struct nd_copy_hdr *h, size_t body_len);
/* Copies the strobe header out of the len bytes at area and this node's
 * ack and run entries (0 when the strobe does not list it); with a schedule
 * ahead (K = strobe_ahead(s) > 0) its K + 1 slots into slots and this
 * node's job of slots 1..K into run_ahead (STROBE_AHEAD_MAX + 1 and
 * STROBE_AHEAD_MAX entries). -1 when the header or the slots are malformed
 * or the strobe (tag included) is longer than len. */
int nd_strobe_read(const uint8_t *area, size_t len, uint32_t index, struct strobe *s,
		   uint64_t *ack, uint64_t *run, struct strobe_slot *slots, uint64_t *run_ahead);
/* Unpacks the command in a ring slot (GM_CMD_SLOT_SIZE bytes); NULL when
 * the slot is empty (*len 0) or malformed. */
Storm__Cl__Command *nd_command_decode(const uint8_t *slot, uint32_t *len);
/* Why the Launch in cmd cannot start on the node at position k of
 * cmd->nodes, or NULL. why may receive the text. */
const char *nd_launch_problem(const Storm__Cl__Command *cmd, size_t k, char *why, size_t len);
/* Why a file chunk header cannot be used, or NULL. */
const char *nd_chunk_problem(const struct file_chunk *c);

/* files.c */
int nd_job_dir_create(struct nd *nd, uint64_t job, uint32_t uid, uint32_t gid, char *path,
		      size_t len);
void nd_job_dir_remove(struct nd *nd, uint64_t job);
void nd_jobs_dir_clean(struct nd *nd);
/* Handles `count` EV_FILE(b) signals: writes the chunk of buffer b. */
void nd_files_arrived(struct nd *nd, int b, int count);
void nd_files_close(struct nd *nd);

/* ranks.c */
void nd_launch(struct nd *nd, const Storm__Cl__Command *cmd, size_t k);
void nd_signal_job(struct nd *nd, const Storm__Cl__Signal *sig);
void nd_reap(struct nd *nd);
void nd_pipe_readable(struct nd *nd, struct nd_pipe *p);
void nd_timers(struct nd *nd);
int nd_timer_ms(const struct nd *nd); /* ms to the next timer, -1: none */
void nd_pipes_pause(struct nd *nd, bool pause);
void nd_kill_all(struct nd *nd);

/* leftovers.c: processes of a job that ended here which left its process
 * group (their own session), ended once they are this daemon's children:
 * SIGTERM at the sweep, SIGKILL from the timer kill_wait_ms later */
void nd_leftovers_sweep(struct nd *nd);
void nd_leftovers_timer(struct nd *nd);

/* orphans.c: the ranks of each job, listed in the state directory, so a
 * restarted daemon kills those it can no longer serve */
void nd_ranks_save(struct nd *nd, const struct nd_job *job);
void nd_ranks_forget(struct nd *nd, uint64_t job);
void nd_ranks_recover(struct nd *nd);
uint64_t nd_proc_start_time(pid_t pid);
/* /proc/PID/stat read into buf: the fields after the command name (field
 * 3 on), the name itself into comm (may be NULL); NULL if it is gone */
char *nd_proc_stat(pid_t pid, char *buf, size_t len, char *comm, size_t comm_len);

/* gang.c */
int nd_gang_init(struct nd *nd);
void nd_gang_close(struct nd *nd);
/* Sets the job's initial state from the last strobe (and makes its cgroup). */
int nd_gang_job_start(struct nd *nd, struct nd_job *job);
void nd_gang_adopt(struct nd_job *job, pid_t pid, bool traced);
int nd_gang_release_signal(const struct nd_job *job);
void nd_gang_job_end(struct nd *nd, struct nd_job *job);
/* A switch's strict wait: how long the outgoing ranks took to leave the CPU */
struct nd_gang_sw {
	uint64_t off_ns;
	bool waited;            /* there was a wait (an outgoing and an incoming job) */
	bool timeout;           /* the bound passed first */
};
/* Runs job `run` (0: none) and stops the others, strictly (gang.c); returns
 * the jobs switched. */
int nd_gang_apply(struct nd *nd, uint64_t run, struct nd_gang_sw *sw);
/* The same bookkeeping for a switch /dev/storm made: nothing is signalled. */
void nd_gang_mark(struct nd *nd, uint64_t run);
uint64_t nd_gang_wait_bound_ns(const struct nd *nd);
void nd_gang_timers(struct nd *nd);
void nd_cg_remove_later(struct nd *nd, const char *path);

/* timed.c: the schedule ahead and the switch timer */
int nd_timed_init(struct nd *nd);
void nd_timed_close(struct nd *nd);
/* A strobe's run entry and schedule (slots and run_ahead as nd_strobe_read
 * gives them): held, and the switch due now made; returns the jobs switched. */
int nd_timed_strobe(struct nd *nd, const struct strobe *s, uint64_t run,
		    const struct strobe_slot *slots, const uint64_t *run_ahead);
/* This node's clock: CLOCK_MONOTONIC (plus the test hook's skew). */
uint64_t nd_clock_ns(const struct nd *nd);
/* the same moment on the MM's clock, as far as this node knows it */
uint64_t nd_mm_clock_ns(const struct nd *nd);
/* A report's ack as the MM wrote it: one exchange for the clock offset. */
void nd_timed_clock_sample(struct nd *nd, const struct report_ack *a);

/* kswitch.c: /dev/storm, when it is there (nd->ks set) */
void nd_kswitch_open(struct nd *nd);
void nd_kswitch_close(struct nd *nd);
/* Registers the jobs not yet registered, reads the module's switch
 * records, and pushes the held schedule in place of the module's. */
void nd_kswitch_push(struct nd *nd);
void nd_kswitch_job_end(struct nd *nd, struct nd_job *job);
/* A checkpoint's hold on the job (before it stops it) and its release
 * (once it has put it back stopped): the module leaves it alone between. */
void nd_kswitch_hold(struct nd *nd, struct nd_job *job, bool hold);

/* ckpt.c: checkpoint and restore helpers (forked; the daemon's loop goes on) */
struct nd_helper;
int nd_ckpt_init(struct nd *nd);
void nd_checkpoint(struct nd *nd, const Storm__Cl__Checkpoint *c);
/* Every strobe: a helper whose images are written lets its job run on. */
void nd_ckpt_poll(struct nd *nd);
/* The job is in this strobe's run list while a checkpoint holds it. */
void nd_ckpt_running(struct nd *nd, struct nd_job *job);
void nd_ckpt_close(struct nd *nd);

/* ranks.c, for ckpt.c */
void nd_rank_pipes_watch(struct nd *nd, struct nd_job *job, struct nd_rank *r, int out_r,
			 int err_r);
void nd_job_started(struct nd *nd, struct nd_job *job);
void nd_job_start_failed(struct nd *nd, struct nd_job *job, const char *why);
/* bcs.c: BCS-MPI, the daemon's side */
int nd_bcs_init(struct nd *nd); /* after nd_mb_init */
uint64_t nd_bcs_bytes_sent(const struct nd *nd); /* BCS-MPI mailbox bytes, since start */
void nd_bcs_close(struct nd *nd);
/* Creates the job's channel; returns its memfd (the ranks inherit it) or -1. */
int nd_bcs_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k);
void nd_bcs_job_end(struct nd *nd, struct nd_job *job);
/* local rank lr of job ended with status: its last recorded outcomes and
 * its end go out before its exit (bcs_trace.c) */
void nd_bcs_trace_rank_end(struct nd *nd, struct nd_job *job, uint32_t lr, int status);
/* every job's recording ranks' new outcomes, at the strobe, before
 * nd_bcs_strobe publishes (which wakes a rank waiting for ring room) */
/* A checkpoint's mark in the trace of each recording rank of job here (its
 * ranks stopped at the checkpoint's quiescent point): its outcome counts,
 * into its stream and to the checkpoint's record (bcs_trace.c) */
void nd_bcs_trace_mark(struct nd *nd, struct nd_job *job, uint64_t ckpt);
void nd_bcs_trace_strobe(struct nd *nd);
/* At each strobe, after the gang switch: the micro-phases. */
void nd_bcs_strobe(struct nd *nd);
/* The slice in force: the last strobe's length (a row's jobs may ask for a
 * shorter one than the cluster's timeslice_us), the cluster's before any. */
static inline unsigned nd_slice_us(const struct nd *nd)
{
	return nd->slice_us ? nd->slice_us : nd->conf.timeslice_us;
}

/* The exchange a fraction into the slice: ms until due (-1: none), and run it. */
int64_t nd_bcs_timer_us(const struct nd *nd);
/* checkpoints: drain the job (no descriptor collected, every transfer
 * finished on every node), then its ranks' pending operations are sealed
 * for their images; thaw once it runs again */
void nd_bcs_freeze(struct nd *nd, struct nd_job *job, uint64_t ckpt_id);
/* 1 sealed (or no channel), 0 not yet, -1 failed (why) */
int nd_bcs_sealed(struct nd *nd, struct nd_job *job, char *why, size_t len);
void nd_bcs_thaw(struct nd *nd, struct nd_job *job);
/* In the dump helper: local rank lr's state for its image (chan_ckpt.h),
 * malloc'd; *len 0 when the job has none. */
int nd_bcs_rank_state(struct nd *nd, struct nd_job *job, uint32_t lr, void **buf, size_t *len);
/* In the restore helper (ckpt_restore_opts.external): rebuilds local rank
 * lr's area of the new channel from its image's state and says where the
 * rank maps it. */
struct ckpt_ext_piece;
int nd_bcs_restore_rank(struct nd *nd, struct nd_job *job, uint32_t lr, const void *app,
			size_t app_len, uint64_t start, uint64_t end, uint64_t offset,
			struct ckpt_ext_piece *p, size_t max, char *err, size_t errlen);
int nd_bcs_fd(struct nd *nd, struct nd_job *job); /* the job's channel, -1: none */
void nd_bcs_restored(struct nd *nd, struct nd_job *job); /* its ranks are back: collect */
void nd_bcs_timers(struct nd *nd);
/* EV_BCS_BULK0 + k fired: that bulk transfer is held at its peer, or failed */
void nd_bcs_bulk_sent(struct nd *nd, unsigned k, bool failed);

/* pmi.c: PMI-1 and PMIx for MPI libraries other than BCS-MPI (pmi.h) */
#define ND_PMI_ENV_MAX 48 /* environment entries a rank may get */
int nd_pmi_init(struct nd *nd); /* after nd_mb_init */
void nd_pmi_close(struct nd *nd);
/* the job's process manager here, before its ranks start; 0 or -errno */
int nd_pmi_job_start(struct nd *nd, struct nd_job *job, const Storm__Cl__Command *cmd, size_t k);
/* Local rank lr's environment entries (at most max, valid until the job
 * ends) and the descriptor it gets as fd 3 (*fd, -1: none); returns how
 * many entries, or -errno. */
int nd_pmi_rank_env(struct nd *nd, struct nd_job *job, uint32_t lr, char **env, size_t max,
		    int *fd);
void nd_pmi_rank_forked(struct nd *nd, struct nd_job *job, uint32_t lr);
void nd_pmi_job_end(struct nd *nd, struct nd_job *job);
void nd_pmi_job_signalled(struct nd *nd, struct nd_job *job); /* a test hook's start */
void nd_pmi_dump(const struct nd *nd); /* its exchanges, in the log */

/* mailbox.c: the node-to-node mailboxes. Clients register a handler per
 * message type (BCS-MPI: bcs.c; checkpoint copies: ckpt_copy.c); job and
 * arg travel in the mailbox's header for them. */
#define ND_MB_TYPES 32u /* also the size of struct nd.mb_sent_bytes */
typedef void (*nd_mb_handler)(struct nd *nd, uint32_t from, uint32_t type, uint64_t job,
			      uint64_t arg, const uint8_t *body, size_t len);
int nd_mb_init(struct nd *nd, size_t chunk_size);
void nd_mb_close(struct nd *nd);
void nd_mb_register(struct nd *nd, uint32_t type, nd_mb_handler h);
/* Queues one message whose body is the parts in order; sent as the
 * peer's window allows. Its body is at most nd_mb_body_max bytes. */
void nd_mb_send(struct nd *nd, uint32_t to, uint32_t type, uint64_t job, uint64_t arg,
		const struct iovec *parts, int nparts);
/* messages to `to` queued or not yet acknowledged */
uint32_t nd_mb_backlog(const struct nd *nd, uint32_t to);
size_t nd_mb_body_max(const struct nd *nd);
/* EV_BCS: messages landed (each goes to its handler), or acks freed room */
void nd_mb_arrived(struct nd *nd);
/* at each strobe: acknowledge what was consumed since the last one */
void nd_mb_strobe(struct nd *nd);
/* every turn: acks that are due, windows whose ack is late sent again */
void nd_mb_timers(struct nd *nd);
/* ms until nd_mb_timers has something to do (-1: nothing pending) */
int nd_mb_timer_ms(const struct nd *nd);
void nd_mb_dump(const struct nd *nd); /* each stream's numbers, in the log */
void nd_bcs_dump(const struct nd *nd); /* each BCS-MPI job's matching state, in the log */
/* ckpt_copy.c: checkpoint files moved node to node (buddy copies, a
 * restart's staging) */
/* The command's copies this node sends; after_dump: once its dump is done. */
void nd_copy_plan(struct nd *nd, const Storm__Cl__Checkpoint *c);
/* The dump of checkpoint id is written (bytes): true when copies follow,
 * which then store GM_VAR_CKPT and report CHECKPOINTED themselves. */
bool nd_copy_after_dump(struct nd *nd, uint64_t id, uint32_t slot, uint64_t bytes);
void nd_copy_forget(struct nd *nd, uint64_t id);
/* registers its message types with the mailboxes */
void nd_copy_init(struct nd *nd);
/* Sends what the mailboxes' windows take; fails copies that stalled. */
void nd_copy_pump(struct nd *nd);
/* ms to wait at most while copies move (-1: none) */
int nd_copy_timer_ms(const struct nd *nd);
void nd_copy_close(struct nd *nd);
/* report.c */
void nd_queue_output(struct nd *nd, struct nd_job *job, uint32_t rank, uint32_t stream,
		     const void *data, size_t len);
/* stdin.c: rank 0's standard input (storm run forwards its own) */
void nd_stdin(struct nd *nd, const Storm__Cl__Stdin *s);
int nd_stdin_open(struct nd_job *job, int *read_end); /* the pipe; 0 or -errno */
/* --pty: a pseudo-terminal of rows x cols; rank 0's fds 0-2 are *slave, its
 * output is read from *master, its input written to a duplicate of it */
int nd_pty_open(struct nd_job *job, uint32_t rows, uint32_t cols, int *master, int *slave);
void nd_stdin_end(struct nd *nd, struct nd_job *job);
/* ABORTED: rank called MPI_Abort with code, the job's exit code */
void nd_queue_abort(struct nd *nd, uint64_t job, uint32_t rank, int code);
/* a note with a count and no message (STDIN_ACK) */
void nd_queue_value(struct nd *nd, uint64_t job, int kind, uint64_t value);

/* trace.c: a job's events here, for storm trace */
uint64_t nd_wall_us(void);
void nd_trace(struct nd_job *job, int kind, uint64_t t_us, uint64_t dur_us, uint64_t a,
	      uint64_t b);
/* the job starts or stops running here (a RUN event at the stop) */
void nd_trace_run(struct nd *nd, struct nd_job *job, bool running);
/* its events, packed, to queue (nd_queue_trace: before its DONE), and forgotten */
void nd_trace_flush(struct nd *nd, struct nd_job *job,
		    void (*queue)(struct nd *, uint64_t, uint8_t *, size_t));
void nd_trace_free(struct nd_job *job);
/* Whether job's trace here holds nothing but its ranks' starts and ends:
 * no turn given up to another row, no BCS-MPI phase, no checkpoint */
bool nd_trace_plain(const struct nd_job *job);
/* a packed storm.trace.Chunk, taken over */
void nd_queue_trace(struct nd *nd, uint64_t job, uint8_t *chunk, size_t len);
/* the same, held until a report goes anyway (a quiet end's trace) */
void nd_queue_trace_later(struct nd *nd, uint64_t job, uint8_t *chunk, size_t len);
/* a recording rank's stream events (bcs_trace.c), copied */
void nd_queue_bcs(struct nd *nd, uint64_t job, uint32_t rank, const uint8_t *d, size_t len);
/* the same for checkpoint ckpt's mark event, with its four counts for the
 * checkpoint's record */
void nd_queue_bcs_mark(struct nd *nd, uint64_t job, uint32_t rank, const uint8_t *d, size_t len,
		       uint64_t ckpt, const uint64_t *counts);

struct rusage;
void nd_queue_exit(struct nd *nd, uint64_t job, uint32_t rank, int status,
		   const struct rusage *ru);
void nd_queue_note(struct nd *nd, uint64_t job, int kind, uint32_t done_slot,
		   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* a note with a value (JobNote.value), no done slot */
void nd_queue_note_value(struct nd *nd, uint64_t job, int kind, uint64_t value,
			 const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* After a strobe: send the next report if the last one was acknowledged. */
void nd_report(struct nd *nd, uint64_t ack);
/* job_end_combined: job ends quietly here (every rank exited 0): its
 * accounting pair and done word are written once every record of it is
 * acknowledged, and nothing is sent */
void nd_quiet_end(struct nd *nd, uint64_t job, uint32_t slot, uint64_t cpu_us,
		  uint64_t max_rss_kb);
/* job_end_combined: the command count in global memory, for the MM's read */
void nd_cmd_done_store(struct nd *nd);
/* Sends the queued records now if the last report was acknowledged. */
void nd_report_flush(struct nd *nd);
void nd_queue_free(struct nd *nd);
/* Appends the report's tag: buf holds [u32 len][packed] and GM_TAG_LEN more. */
void nd_report_seal(struct nd *nd, uint8_t *buf, size_t len);

/* boot.c: registers this node's fabric addresses with the MM and takes
 * everyone's (bootstrap = mm). -1 when refused at once (printed). */
int nd_boot_start(struct nd *nd);
void nd_boot_close(struct nd *nd);

#endif
