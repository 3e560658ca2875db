/* The ABI of storm's gang-switch module: /dev/storm, its ioctls, and the two
 * areas it maps (the switch-record ring and the slice page).
 *
 * One opener at a time holds the device read-write (the controller, stormnd,
 * with CAP_SYS_ADMIN): it registers jobs and hands over the schedule ahead.
 * Anyone may open it read-only to map the slice page or query.
 *
 * A job is a process group (every thread of every process in it is the job's
 * task set) and, optionally, a cgroup v2 cgroup.freeze file opened for writing:
 * with one the switch freezes/thaws the cgroup, without one it sends
 * SIGSTOP/SIGCONT to the group. The task set is the process group either way,
 * so that the module can tell when every outgoing task is off the CPU.
 * A registration is named by its own id (unique: a step of an allocation has
 * its own) and runs when an entry names its run_id (the allocation's): one
 * run_id may name several registrations, which stop and continue together.
 *
 * A schedule entry says: at deadline_ns (CLOCK_MONOTONIC, absolute) the job
 * job_id runs (row names its matrix row; job 0 = idle, nothing runs). At the
 * deadline an hrtimer stops every registered job that is not job_id; once each
 * of their tasks is off the CPU (or the bound has passed) the incoming job is
 * continued and the switch is recorded. Deadlines strictly increase.
 *
 * Fixed-size types only; structures have no implicit padding. */
#ifndef _UAPI_LINUX_STORM_H
#define _UAPI_LINUX_STORM_H

#include <linux/ioctl.h>
#include <linux/types.h>

#define STORM_ABI_VERSION 2
#define STORM_DEVICE "/dev/storm"

/* entries the module holds ahead; jobs it holds */
#define STORM_QUEUE_MAX 256
#define STORM_JOBS_MAX 32

struct storm_job_reg {
	__u64 job_id;    /* nonzero, unique among the registered: the key */
	__s32 pgid;      /* the job's process group, in the caller's pid namespace */
	__s32 freeze_fd; /* an fd on the job's cgroup.freeze open for writing, or -1 */
	__u64 run_id;    /* the id entries name it by (its allocation's); 0: job_id */
};

struct storm_entry {
	__u64 deadline_ns; /* CLOCK_MONOTONIC, absolute */
	__u64 job_id;      /* the run_id to run from then on; 0 = idle */
	__u32 row;         /* the matrix row it belongs to (shown on the slice page) */
	__u32 flags;       /* 0 */
};

#define STORM_PUSH_REPLACE 0x1 /* drop the entries still queued first */

struct storm_push {
	__u64 entries; /* user pointer to count struct storm_entry */
	__u32 count;
	__u32 flags; /* STORM_PUSH_* */
};

struct storm_info {
	__u32 abi_version;   /* STORM_ABI_VERSION */
	__u32 ring_records;  /* records in the ring, a power of two */
	__u32 ring_bytes;    /* size of the ring's mapping */
	__u32 record_bytes;  /* sizeof(struct storm_record) */
	__u32 jobs;          /* registered */
	__u32 queued;        /* schedule entries not yet due */
	__u64 running_job;   /* the job the last switch continued (0: none) */
	__u64 switches;      /* switches recorded (the ring's head) */
	__u64 dropped;       /* entries superseded while a switch was still going */
	__u64 bound_ns;      /* how long a switch waits for its outgoing tasks */
};

/* ioctls: all return 0 or -1 with errno */
#define STORM_IOC_MAGIC 0xB5
#define STORM_IOC_QUERY      _IOR(STORM_IOC_MAGIC, 0, struct storm_info)
#define STORM_IOC_REGISTER   _IOW(STORM_IOC_MAGIC, 1, struct storm_job_reg)
#define STORM_IOC_UNREGISTER _IOW(STORM_IOC_MAGIC, 2, __u64) /* leaves the job as it is */
#define STORM_IOC_PUSH       _IOW(STORM_IOC_MAGIC, 3, struct storm_push)
/* A held job (by its job_id) is left as it is by every switch: neither
 * stopped nor continued, until released; the controller stops it itself
 * (a checkpoint dumps it meanwhile). HOLD returns once no switch can still
 * act on the job, so what the caller does to it next comes after the
 * module's last action on it. RELEASE hands it back stopped: the next
 * entry that names its run_id continues it. */
#define STORM_IOC_HOLD       _IOW(STORM_IOC_MAGIC, 4, __u64)
#define STORM_IOC_RELEASE    _IOW(STORM_IOC_MAGIC, 5, __u64)

/* mmap offsets (bytes); both mappings are read-only */
#define STORM_MMAP_RING  0x0ULL      /* struct storm_ring_hdr, then the records */
#define STORM_MMAP_SLICE 0x1000000ULL /* one page: struct storm_slice_page */

/* record flags */
#define STORM_REC_DONE    0x1 /* every outgoing task was seen off the CPU */
#define STORM_REC_TIMEOUT 0x2 /* the bound passed first; the incoming ran anyway */
#define STORM_REC_LATE    0x4 /* started after the previous switch, past its deadline */
#define STORM_REC_HELD    0x8 /* a job of the incoming run_id was held: left stopped */

/* One switch. Times are CLOCK_MONOTONIC ns. cpu times are the sums of the
 * tasks' scheduler run time (se.sum_exec_runtime), which does not move while a
 * task is off the CPU. */
struct storm_record {
	__u64 seq;         /* 0, 1, 2, ...: written last; a reader checks it */
	__u64 slice;       /* the slice number this switch starts (seq + 1) */
	__u64 deadline_ns;
	__u64 start_ns;    /* the hrtimer ran and the outgoing jobs were told to stop */
	__u64 off_ns;      /* every outgoing task was off the CPU (or the bound passed) */
	__u64 cont_ns;     /* the incoming job was told to continue */
	__u64 out_job;     /* the run_id the previous switch continued (0: none) */
	__u64 in_job;      /* the entry's run_id */
	__u64 out_cpu_ns;  /* outgoing tasks' run time, at off_ns */
	__u64 in_cpu_ns;   /* incoming tasks' run time, just before their continue */
	__u32 out_tasks;   /* threads stopped */
	__u32 in_tasks;    /* threads continued (a held job's are not) */
	__u32 row;
	__u32 flags;       /* STORM_REC_* */
};

/* The ring: record n lives at rec_off + (n % records) * record_bytes; head is
 * the count written, published after the record. A reader keeps its own tail;
 * head - tail > records means it lost the oldest. */
struct storm_ring_hdr {
	__u32 abi_version;
	__u32 records;
	__u32 record_bytes;
	__u32 rec_off;
	__u64 head;
};

/* The slice page: seq is odd while the module updates it (a reader retries). */
struct storm_slice_page {
	__u32 abi_version;
	__u32 seq;
	__u64 slice;       /* switches done so far */
	__u64 job_id;      /* running now; 0 = idle */
	__u64 start_ns;    /* when this slice's job was continued */
	__u64 deadline_ns; /* the deadline this slice was scheduled for */
	__u64 next_ns;     /* the next queued deadline, 0 if none */
	__u32 row;
	__u32 pad;
};

#endif /* _UAPI_LINUX_STORM_H */
