/* The in-guest test of storm.ko (make kernel-check boots it as part of the
 * initramfs). Three modes:
 *   storm_guest            the module on its own: an allocation with two
 *                          steps (two registrations, one run id) and a job,
 *                          each step and the job two spinning processes,
 *                          alternating 10 ms slices from a schedule this
 *                          program pushes; then one step's end (the other
 *                          stays switched) and a hold (a step under
 *                          checkpoint, never continued by entries pushed
 *                          before it, until released);
 *   storm_guest spin TAG   a rank of a storm job: spins (TAG names its job);
 *   storm_guest spin TAG GATE
 *                          a rank that computes a chain of steps, spins until
 *                          the file GATE exists, computes as many again and
 *                          prints the chain's value (restarted from a
 *                          checkpoint taken anywhere in it, the same);
 *   storm_guest sum        prints that value, computed here at once;
 *   storm_guest observe ID_A TAG_A ID_B TAG_B SWITCHES [REGISTRATIONS]
 *                          two storm jobs that stormnd gang-schedules through
 *                          /dev/storm, watched read-only from outside until
 *                          the module has made SWITCHES switches (job A may
 *                          be an allocation whose steps each run ranks of
 *                          TAG_A: REGISTRATIONS, default 2, counts each);
 *   storm_guest ckptwatch TAG
 *                          runs `storm checkpoint` on the job whose ranks are
 *                          TAG while stormnd gang-schedules it beside another,
 *                          watching its ranks and the module's ring;
 *   storm_guest ranks TAG  prints how many ranks of TAG run (exit 1 if any).
 * The checks read the module's ring: every switch completed (the outgoing
 * tasks off the CPU before the incoming job continued), the right jobs, a
 * stopped job gained no CPU time until it was continued; and from 1 ms
 * samples of each process's run time (/proc/PID/schedstat), the two jobs
 * gained CPU time in the same interval only around a switch. Prints
 * PASS/FAIL lines and a total. Every wait is for an event (the ring's head,
 * a task's state) under a generous deadline that only keeps a broken module
 * from hanging the guest: an emulated CPU on a loaded host is slow, and no
 * verdict depends on how slow. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <stdarg.h>
#include <stdbool.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <time.h>
#include <dirent.h>
#include <unistd.h>

#include "storm_sched.h"

#define SLICE_NS 10000000ULL
#define SLICES 200
#define PER_JOB 2
/* Emulated CPUs (TCG) on a shared host: a vCPU thread the host does not run
 * stalls the guest for tens of ms or more, so lateness is printed, not
 * judged; run_vm.sh loads the module with a bound of minutes, a deadline
 * only, so each switch waits for its event (every outgoing task off the
 * CPU) and strictness is judged on its own. */
#define DEADLINE_NS 300000000000ULL /* any one wait: a hang, not slowness */
#define CPU_TOL_NS 0ULL          /* a stopped job's run time does not move */
#define MAX_SAMPLES 20000
/* the module test's registrations: allocation 1's steps 1.0 and 1.1 (ids as
 * storm makes them: the step number plus one above the allocation's), job 2 */
#define ALLOC 1ULL
#define STEP(n) (ALLOC | ((uint64_t)(n) + 1) << 32)
#define JOB2 2ULL

static int passed, failed;

static void verdict(int ok, const char *what, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void verdict(int ok, const char *what, const char *fmt, ...)
{
	va_list ap;
	printf("%s: %s: ", ok ? "PASS" : "FAIL", what);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	ok ? passed++ : failed++;
}

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static void spin(void)
{
	volatile uint64_t x = 0;
	for (;;)
		x++;
}

/* The gated rank's work: each step depends on the last (no shortcut), so
 * its value after a restart says the registers and memory came back. */
#define CHAIN_STEPS (1ULL << 22)
static uint64_t chain(uint64_t x, uint64_t from, uint64_t steps)
{
	for (uint64_t i = from; i < from + steps; i++) {
		x = x * 6364136223846793005ULL + i;
		x ^= x >> 29;
	}
	return x;
}

static int spin_gated(const char *gate)
{
	uint64_t x = chain(1, 0, CHAIN_STEPS);
	volatile uint64_t idle = 0;
	/* spinning, with a look at the gate now and then */
	while (access(gate, F_OK) != 0)
		for (int k = 0; k < (1 << 20); k++)
			idle++;
	x = chain(x, CHAIN_STEPS, CHAIN_STEPS);
	printf("sum %016llx\n", (unsigned long long)x);
	return 0;
}

/* A job: a process group of PER_JOB spinners; pids[0] leads it. */
static pid_t start_job(pid_t *pids)
{
	for (int i = 0; i < PER_JOB; i++) {
		pid_t p = fork();
		if (p < 0) {
			perror("fork");
			exit(2);
		}
		if (p == 0) {
			setpgid(0, i ? pids[0] : 0);
			spin();
		}
		setpgid(p, i ? pids[0] : p); /* both sides: no race with the child */
		pids[i] = p;
	}
	return pids[0];
}

static uint64_t run_ns(pid_t pid)
{
	char path[64], buf[128];
	snprintf(path, sizeof(path), "/proc/%d/schedstat", (int)pid);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	return strtoull(buf, NULL, 10);
}

struct sample {
	uint64_t t0, t1; /* before and after reading */
	uint64_t cpu[2];
};
static struct sample samples[MAX_SAMPLES];

static int cmp_s64(const void *a, const void *b)
{
	long long x = *(const long long *)a, y = *(const long long *)b;
	return (x > y) - (x < y);
}

/* The processes of two jobs, sampled together. */
#define MAXP 16
struct jobset {
	int n[2];
	pid_t pid[2][MAXP];
};

/* Switches made or superseded so far (the module's counters), or ~0. */
static uint64_t switches_done(int fd)
{
	struct storm_info info;
	if (ioctl(fd, STORM_IOC_QUERY, &info) < 0)
		return ~0ULL;
	return info.switches + info.dropped;
}

/* Samples both jobs' run time every 1 ms until the module has made (or
 * superseded) target switches, or the deadline; returns the samples (at
 * most MAX_SAMPLES: past them it only waits). */
/* sleeps to the next millisecond of a sampler's clock (absolute: a late
 * sample does not shift the ones after it) */
static void tick_1ms(struct timespec *next)
{
	next->tv_nsec += 1000000;
	if (next->tv_nsec >= 1000000000) {
		next->tv_nsec -= 1000000000;
		next->tv_sec++;
	}
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, next, NULL);
}

static int sample_until(const struct jobset *js, int fd, uint64_t target)
{
	uint64_t end = now_ns() + DEADLINE_NS;
	/* the sampler must not wait behind the spinners */
	struct sched_param sp = { .sched_priority = 50 };
	if (sched_setscheduler(0, SCHED_FIFO, &sp) < 0)
		printf("note: SCHED_FIFO: %s\n", strerror(errno));
	int ns = 0;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (now_ns() < end && switches_done(fd) < target) {
		if (ns < MAX_SAMPLES) {
			struct sample *s = &samples[ns++];
			s->t0 = now_ns();
			for (int j = 0; j < 2; j++) {
				s->cpu[j] = 0;
				for (int k = 0; k < js->n[j]; k++)
					s->cpu[j] += run_ns(js->pid[j][k]);
			}
			s->t1 = now_ns();
		}
		tick_1ms(&next);
	}
	struct sched_param normal = { 0 };
	sched_setscheduler(0, SCHED_OTHER, &normal);
	return ns;
}

static const struct storm_record *ring_rec(const struct storm_ring_hdr *ring, uint64_t seq)
{
	const struct storm_record *rec = (const void *)((const char *)ring + ring->rec_off);
	return &rec[storm_ring_slot(seq, ring->records)];
}

/* Sample intervals, between the switches from..head-1, in which both jobs
 * gained CPU time; returns how many of them no switch's window (its start to
 * its continue) overlaps: those would be the two jobs running at once. */
static int overlaps(const struct storm_ring_hdr *ring, uint64_t from, uint64_t head, int ns,
		    int *both, int alone[2])
{
	const struct storm_record *r0 = ring_rec(ring, from), *rl = ring_rec(ring, head - 1);
	int unexplained = 0;
	*both = alone[0] = alone[1] = 0;
	for (int i = 0; i + 1 < ns; i++) {
		const struct sample *a = &samples[i], *b = &samples[i + 1];
		if (a->t0 < r0->cont_ns || b->t1 > rl->start_ns)
			continue; /* only between the first switch and the last */
		bool ran0 = b->cpu[0] != a->cpu[0], ran1 = b->cpu[1] != a->cpu[1];
		/* each job seen running on its own: the sampler saw the turns */
		alone[0] += ran0 && !ran1;
		alone[1] += ran1 && !ran0;
		if (!ran0 || !ran1)
			continue;
		(*both)++;
		int explained = 0;
		for (uint64_t s = from; s < head && !explained; s++) {
			const struct storm_record *r = ring_rec(ring, s);
			explained = r->start_ns <= b->t1 && r->cont_ns >= a->t0;
		}
		unexplained += !explained;
	}
	return unexplained;
}

/* The device's two read-only areas; false (printed) when either fails. */
static bool map_areas(int fd, const struct storm_info *info, const struct storm_ring_hdr **ring,
		      const struct storm_slice_page **slice)
{
	*ring = mmap(NULL, info->ring_bytes, PROT_READ, MAP_SHARED, fd, STORM_MMAP_RING);
	*slice = mmap(NULL, 4096, PROT_READ, MAP_SHARED, fd, STORM_MMAP_SLICE);
	if (*ring == MAP_FAILED || *slice == MAP_FAILED) {
		printf("FAIL: mmap: %s\n", strerror(errno));
		return false;
	}
	return true;
}

/* Threads the module stops and continues for an entry naming run id id. */
static __u32 tasks_of(uint64_t id)
{
	return id == ALLOC ? 2 * PER_JOB : id == JOB2 ? PER_JOB : 0;
}

static uint64_t group_run_ns(const pid_t *pids)
{
	uint64_t sum = 0;
	for (int k = 0; k < PER_JOB; k++)
		sum += run_ns(pids[k]);
	return sum;
}

/* Every process of the group in state T (stopped). */
static bool group_stopped(const pid_t *pids)
{
	for (int k = 0; k < PER_JOB; k++) {
		char path[64], buf[256];
		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pids[k]);
		int f = open(path, O_RDONLY);
		ssize_t n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
		if (f >= 0)
			close(f);
		if (n <= 0)
			return false;
		buf[n] = '\0';
		const char *p = strrchr(buf, ')');
		if (!p || p[1] != ' ' || p[2] != 'T')
			return false;
	}
	return true;
}

/* Polls (1 ms) until done(arg) or the deadline; false on the deadline. */
static bool wait_until(bool (*done)(int, const pid_t *, uint64_t), int fd, const pid_t *pids,
		       uint64_t v)
{
	uint64_t end = now_ns() + DEADLINE_NS;
	while (!done(fd, pids, v)) {
		if (now_ns() > end)
			return false;
		usleep(1000);
	}
	return true;
}

static bool is_stopped(int fd, const pid_t *pids, uint64_t v)
{
	(void)fd, (void)v;
	return group_stopped(pids);
}

static bool switched(int fd, const pid_t *pids, uint64_t target)
{
	(void)pids;
	return switches_done(fd) >= target;
}

static bool ran_since(int fd, const pid_t *pids, uint64_t cpu)
{
	(void)fd;
	return group_run_ns(pids) > cpu;
}

/* Pushes entries for ids at 10 ms steps from now + lead; false (printed)
 * when the module refuses them. */
static bool push_ids(int fd, const uint64_t *ids, int n, uint64_t lead_ns)
{
	struct storm_entry e[64];
	uint64_t t = now_ns() + lead_ns;
	for (int i = 0; i < n && i < 64; i++)
		e[i] = (struct storm_entry){ .deadline_ns = t + (uint64_t)i * SLICE_NS,
					     .job_id = ids[i], .row = ids[i] == JOB2 };
	struct storm_push p = { .entries = (uintptr_t)e, .count = (__u32)n };
	if (ioctl(fd, STORM_IOC_PUSH, &p) < 0) {
		printf("FAIL: push: %s\n", strerror(errno));
		return false;
	}
	return true;
}

#define HELD_SLICES 40

/* A step under checkpoint, as stormnd treats it: entries that name its
 * allocation are pushed first, then it is held and stopped (its dump would
 * run now). However those entries fall, against the hold, it stays stopped
 * and gains no CPU while job 2 keeps its turns; released, the next entry
 * naming its allocation continues it. */
static void held_test(int fd, const struct storm_ring_hdr *ring, const pid_t *step,
		      const pid_t *job2)
{
	/* pushing and holding at once: not behind the spinners */
	struct sched_param sp = { .sched_priority = 50 }, normal = { 0 };
	sched_setscheduler(0, SCHED_FIFO, &sp);
	uint64_t ids[HELD_SLICES + 1];
	for (int i = 0; i < HELD_SLICES; i++)
		ids[i] = i % 2 ? JOB2 : ALLOC;
	ids[HELD_SLICES] = 0;
	uint64_t from = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	uint64_t target = switches_done(fd) + HELD_SLICES + 1;
	/* the first deadlines close: a switch may be under way at the hold */
	if (!push_ids(fd, ids, HELD_SLICES + 1, 2000000))
		return;
	uint64_t id = STEP(1);
	int rc = ioctl(fd, STORM_IOC_HOLD, &id);
	uint64_t t_hold = now_ns();
	kill(-step[0], SIGSTOP);
	sched_setscheduler(0, SCHED_OTHER, &normal);
	bool stopped = wait_until(is_stopped, fd, step, 0);
	uint64_t cpu0 = group_run_ns(step);
	bool done = wait_until(switched, fd, step, target);
	uint64_t cpu1 = group_run_ns(step);
	bool still = group_stopped(step);
	uint64_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	int held = 0, as_alloc = 0, wrong = 0, job2_in = 0;
	for (uint64_t s = from; s < head; s++) {
		const struct storm_record *r = ring_rec(ring, s);
		/* one that started before the hold returned may have continued it */
		if (r->in_job == ALLOC && r->start_ns > t_hold) {
			as_alloc++;
			held += (r->flags & STORM_REC_HELD) && !r->in_tasks;
		} else if (r->in_job == JOB2) {
			job2_in++;
			wrong += r->in_tasks != PER_JOB || (r->flags & STORM_REC_HELD);
		}
	}
	verdict(!rc && stopped && done && still && cpu1 == cpu0 && held == as_alloc && held > 0,
		"a held step is never continued",
		"hold %s; %d of %d switches to its allocation after the hold left it held, its run "
		"time moved "
		"%llu ns, %s", rc ? strerror(errno) : "ok", held, as_alloc,
		(unsigned long long)(cpu1 - cpu0), still ? "stopped" : "NOT stopped");
	verdict(!wrong && job2_in > 0, "job 2 switched beside the held step",
		"%d switches to it, %d wrong", job2_in, wrong);

	/* released: back to the module, stopped; the allocation's next entry
	 * continues it */
	rc = ioctl(fd, STORM_IOC_RELEASE, &id);
	from = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	uint64_t run = ALLOC;
	if (!push_ids(fd, &run, 1, 1000000))
		return;
	bool ran = wait_until(ran_since, fd, step, cpu1);
	const struct storm_record *r = ring_rec(ring, from);
	bool rec_ok = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE) > from &&
		      r->in_job == ALLOC && r->in_tasks == PER_JOB && !(r->flags & STORM_REC_HELD);
	verdict(!rc && ran && rec_ok, "a released step runs at its allocation's next entry",
		"release %s; %s, %u tasks continued", rc ? strerror(errno) : "ok",
		ran ? "it ran" : "it did NOT run", rec_ok ? r->in_tasks : 0);
	run = 0;
	target = switches_done(fd) + 1;
	if (push_ids(fd, &run, 1, 1000000))
		wait_until(switched, fd, step, target);
	(void)job2;
}

static int module_test(void)
{
	int fd = open(STORM_DEVICE, O_RDWR);
	if (fd < 0) {
		printf("FAIL: open %s: %s\n", STORM_DEVICE, strerror(errno));
		return 1;
	}
	struct storm_info info;
	if (ioctl(fd, STORM_IOC_QUERY, &info) < 0 || info.abi_version != STORM_ABI_VERSION) {
		printf("FAIL: query: %s (ABI %u)\n", strerror(errno), info.abi_version);
		return 1;
	}
	verdict(info.record_bytes == sizeof(struct storm_record), "record size", "%u",
		info.record_bytes);
	verdict(open(STORM_DEVICE, O_RDWR) < 0 && errno == EBUSY, "one controller",
		"a second read-write open fails with EBUSY");

	const struct storm_ring_hdr *ring;
	const struct storm_slice_page *slice;
	if (!map_areas(fd, &info, &ring, &slice))
		return 1;
	verdict(mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, STORM_MMAP_SLICE) ==
			MAP_FAILED,
		"slice page read-only", "a writable mapping is refused");

	/* allocation 1's two steps and job 2, each a process group of its own */
	pid_t pids[3][PER_JOB];
	const uint64_t key[3] = { STEP(0), STEP(1), JOB2 };
	for (int j = 0; j < 3; j++) {
		struct storm_job_reg reg = { .job_id = key[j],
					     .pgid = start_job(pids[j]),
					     .freeze_fd = -1,
					     .run_id = j < 2 ? ALLOC : 0 };
		if (ioctl(fd, STORM_IOC_REGISTER, &reg) < 0) {
			printf("FAIL: register %#llx (pgid %d): %s\n", (unsigned long long)key[j],
			       reg.pgid, strerror(errno));
			return 1;
		}
	}
	struct storm_job_reg twice = { .job_id = STEP(1), .pgid = pids[1][0], .freeze_fd = -1,
				       .run_id = ALLOC };
	verdict(ioctl(fd, STORM_IOC_REGISTER, &twice) < 0 && errno == EEXIST, "steps registered",
		"steps 1.0 and 1.1 of one allocation both registered; 1.1 again: EEXIST");

	static struct storm_entry e[SLICES + 1];
	uint64_t t0 = now_ns() + 50000000ULL;
	for (int i = 0; i <= SLICES; i++) {
		e[i].deadline_ns = t0 + (uint64_t)i * SLICE_NS;
		/* the allocation and job 2 in turn, idle at the end */
		e[i].job_id = i == SLICES ? 0 : i % 2 ? JOB2 : ALLOC;
		e[i].row = (uint32_t)(i % 2);
	}
	/* in two batches: the second appends behind the first */
	struct storm_push push = { .entries = (uintptr_t)e, .count = SLICES / 2 };
	struct storm_entry back = e[0];
	struct storm_push bad = { .entries = (uintptr_t)&back, .count = 1 };
	if (ioctl(fd, STORM_IOC_PUSH, &push) < 0) {
		printf("FAIL: push: %s\n", strerror(errno));
		return 1;
	}
	verdict(ioctl(fd, STORM_IOC_PUSH, &bad) < 0 && errno == EINVAL, "deadlines increase",
		"an entry before the queue's last is refused");
	push.entries = (uintptr_t)&e[SLICES / 2];
	push.count = SLICES + 1 - SLICES / 2;
	if (ioctl(fd, STORM_IOC_PUSH, &push) < 0) {
		printf("FAIL: push: %s\n", strerror(errno));
		return 1;
	}

	/* the allocation's side is both steps' processes */
	struct jobset js = { .n = { 2 * PER_JOB, PER_JOB } };
	for (int k = 0; k < PER_JOB; k++) {
		js.pid[0][k] = pids[0][k];
		js.pid[0][PER_JOB + k] = pids[1][k];
		js.pid[1][k] = pids[2][k];
	}
	/* every entry ends switched, or superseded by one due while two
	 * switches waited (a loaded host): until then, however long */
	int ns = sample_until(&js, fd, SLICES + 1);
	if (ioctl(fd, STORM_IOC_QUERY, &info) < 0)
		info.dropped = ~0ULL;

	/* ---- the ring */
	__u64 head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE), tail = 0;
	verdict(storm_ring_catch_up(head, &tail, ring->records) == 0 &&
			head + info.dropped == SLICES + 1,
		"every entry switched or superseded", "%llu records, %llu superseded, %d entries",
		(unsigned long long)head, (unsigned long long)info.dropped, SLICES + 1);
	static long long late[SLICES + 1], offt[SLICES + 1];
	int n = 0, bad_seq = 0, not_done = 0, early = 0, cpu_moved = 0, wrong_jobs = 0;
	uint64_t prev_in = 0;
	uint64_t stopped_cpu[3] = { 0 };
	int was_stopped[3] = { 0 };
	for (uint64_t s = 0; s < head && n <= SLICES; s++, n++) {
		const struct storm_record *r = ring_rec(ring, s);
		bad_seq += r->seq != s;
		not_done += !(r->flags & STORM_REC_DONE);
		late[n] = storm_lateness_ns(r->deadline_ns, r->start_ns);
		offt[n] = (long long)(r->off_ns - r->start_ns);
		early += late[n] < 0;
		/* the entry this record applied: by its deadline */
		uint64_t k = (r->deadline_ns - t0) / SLICE_NS;
		int same = r->out_job == r->in_job;
		/* both steps stop and continue with their allocation */
		wrong_jobs += k > SLICES || r->deadline_ns != e[k].deadline_ns ||
			      r->in_job != e[k].job_id || r->out_job != prev_in ||
			      r->out_tasks != (!n ? 3 * PER_JOB - tasks_of(r->in_job)
						  : same ? 0 : tasks_of(r->out_job)) ||
			      r->in_tasks != tasks_of(r->in_job) || r->cont_ns < r->off_ns ||
			      (r->flags & STORM_REC_HELD);
		prev_in = r->in_job;
		/* a job's run time when stopped equals its run time when continued */
		if (n && !same && r->out_job && r->out_job <= 2) {
			stopped_cpu[r->out_job] = r->out_cpu_ns; /* only out_job's tasks */
			was_stopped[r->out_job] = 1;
		}
		if (r->in_job && !same && was_stopped[r->in_job] &&
		    r->in_cpu_ns > stopped_cpu[r->in_job] + CPU_TOL_NS)
			cpu_moved++;
	}
	verdict(!bad_seq, "record sequence", "%d out of place", bad_seq);
	verdict(!not_done, "switches complete", "%d of %d not seen off the CPU in the bound",
		not_done, n);
	verdict(!wrong_jobs, "outgoing/incoming jobs",
		"%d records name the wrong jobs or tasks (the allocation: both steps)", wrong_jobs);
	qsort(late, (size_t)n, sizeof(late[0]), cmp_s64);
	qsort(offt, (size_t)n, sizeof(offt[0]), cmp_s64);
	/* how late depends on the host, not on the module: printed; an hrtimer
	 * that fired early would be the module's */
	verdict(!early, "no switch before its deadline", "%d early", early);
	printf("note: start after deadline: median %lld us, p99 %lld us, max %lld us; outgoing "
	       "off CPU after start: median %lld us, p99 %lld us, max %lld us (emulated CPU)\n",
	       late[n / 2] / 1000, late[n * 99 / 100] / 1000, late[n - 1] / 1000,
	       offt[n / 2] / 1000, offt[n * 99 / 100] / 1000, offt[n - 1] / 1000);
	verdict(!cpu_moved, "stopped job gains no CPU",
		"%d times a job's run time moved between its stop and its continue", cpu_moved);

	/* ---- the samples: both jobs gain CPU in one interval only around a switch */
	int both, alone[2], unexplained = overlaps(ring, 0, head, ns, &both, alone);
	verdict(alone[0] && alone[1] && !unexplained, "jobs never run at once",
		"%d samples, %d/%d intervals where one ran alone, %d where both gained CPU, %d of "
		"them away from any switch",
		ns, alone[0], alone[1], both, unexplained);

	unsigned seq = __atomic_load_n(&slice->seq, __ATOMIC_ACQUIRE);
	verdict(!(seq & 1) && slice->slice == head && slice->job_id == 0, "slice page",
		"slice %llu job %llu after %llu switches", (unsigned long long)slice->slice,
		(unsigned long long)slice->job_id, (unsigned long long)head);

	/* ---- step 1.0 ends: its unregistration leaves step 1.1's */
	kill(-pids[0][0], SIGKILL);
	for (int k = 0; k < PER_JOB; k++)
		waitpid(pids[0][k], NULL, 0);
	uint64_t id = STEP(0);
	int rc = ioctl(fd, STORM_IOC_UNREGISTER, &id);
	if (ioctl(fd, STORM_IOC_QUERY, &info) < 0)
		info.jobs = 0;
	verdict(rc == 0 && info.jobs == 2, "a step's end leaves the other step",
		"%u registered after 1.0's end", info.jobs);

	held_test(fd, ring, pids[1], pids[2]);

	for (int j = 1; j < 3; j++)
		kill(-pids[j][0], SIGKILL);
	while (wait(NULL) > 0)
		;
	id = STEP(1);
	rc = ioctl(fd, STORM_IOC_UNREGISTER, &id);
	id = JOB2;
	verdict(rc == 0 && ioctl(fd, STORM_IOC_UNREGISTER, &id) == 0, "unregister",
		"step 1.1 and job 2");
	close(fd);
	printf("kernel-check: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* The pids whose command line is "... spin TAG", at most MAXP. */
static int find_ranks(const char *tag, pid_t *out)
{
	int n = 0;
	DIR *d = opendir("/proc");
	struct dirent *de;
	while (d && (de = readdir(d)) && n < MAXP) {
		char path[300], buf[256];
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
		int fd = open(path, O_RDONLY);
		if (fd < 0)
			continue;
		ssize_t len = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (len <= 0)
			continue;
		buf[len] = '\0';
		/* argv: PROGRAM, "spin", TAG */
		const char *a1 = buf + strlen(buf) + 1;
		if (a1 - buf >= len || strcmp(a1, "spin"))
			continue;
		const char *a2 = a1 + strlen(a1) + 1;
		if (a2 - buf < len && !strcmp(a2, tag))
			out[n++] = (pid_t)atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return n;
}

/* Threads of the processes pids[0..n-1]. */
static unsigned threads_of(const pid_t *pids, int n)
{
	unsigned t = 0;
	for (int k = 0; k < n; k++) {
		char path[64];
		snprintf(path, sizeof(path), "/proc/%d/task", (int)pids[k]);
		DIR *d = opendir(path);
		struct dirent *de;
		while (d && (de = readdir(d)))
			t += de->d_name[0] != '.';
		if (d)
			closedir(d);
	}
	return t;
}

/* Two storm jobs, gang-scheduled by stormnd through the module: watched
 * from outside with a read-only open (as any rank may), until the module has
 * made `switches` more switches. Job A may be an allocation whose steps run
 * its ranks: the module then holds regs registrations in all, one a step. */
static int observe(uint64_t ida, const char *taga, uint64_t idb, const char *tagb, int switches,
		   unsigned regs)
{
	int fd = open(STORM_DEVICE, O_RDONLY);
	struct storm_info info;
	if (fd < 0 || ioctl(fd, STORM_IOC_QUERY, &info) < 0) {
		printf("FAIL: open/query %s read-only: %s\n", STORM_DEVICE, strerror(errno));
		return 1;
	}
	const struct storm_ring_hdr *ring;
	const struct storm_slice_page *slice;
	if (!map_areas(fd, &info, &ring, &slice))
		return 1;
	/* the jobs were just submitted: wait (bounded) for both jobs' ranks and
	 * for stormnd to have registered them */
	struct jobset js;
	uint64_t give_up = now_ns() + 120000000000ULL;
	do {
		js.n[0] = find_ranks(taga, js.pid[0]);
		js.n[1] = find_ranks(tagb, js.pid[1]);
		if (ioctl(fd, STORM_IOC_QUERY, &info) < 0)
			info.jobs = 0;
		if (js.n[0] == PER_JOB && js.n[1] == PER_JOB && info.jobs >= regs)
			break;
		usleep(20000);
	} while (now_ns() < give_up);
	verdict(js.n[0] == PER_JOB && js.n[1] == PER_JOB, "ranks found",
		"%d of job %llu, %d of job %llu", js.n[0], (unsigned long long)ida, js.n[1],
		(unsigned long long)idb);
	verdict(info.jobs >= regs, "stormnd registered the jobs", "%u of %u registered, running %llu",
		info.jobs, regs, (unsigned long long)info.running_job);
	/* short of a step's registration, what that does to the turns is
	 * judged too */
	if (js.n[0] != PER_JOB || js.n[1] != PER_JOB || info.jobs < 2)
		return 1;
	unsigned threads[2] = { threads_of(js.pid[0], js.n[0]), threads_of(js.pid[1], js.n[1]) };
	uint64_t t_regs = now_ns(); /* a switch started before may predate a registration */

	uint64_t head0 = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	uint64_t target = switches_done(fd) + (uint64_t)switches;
	int ns = sample_until(&js, fd, target);
	uint64_t done = switches_done(fd);
	uint64_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	if (head - head0 > ring->records)
		head0 = head - ring->records;
	uint64_t n = head - head0;
	/* entries superseded while a switch waited count toward the target */
	verdict(done != ~0ULL && done >= target && n >= 4, "stormnd drives the module's switches",
		"%llu switches recorded, %d made or superseded waited for", (unsigned long long)n,
		switches);
	if (n < 4)
		return 1;

	int not_done = 0, wrong = 0, cpu_moved = 0, turned = 0, partial = 0;
	uint64_t prev_in = ring_rec(ring, head0)->out_job, stopped_cpu[2] = { 0 };
	int was_stopped[2] = { 0 };
	for (uint64_t s = head0; s < head; s++) {
		const struct storm_record *r = ring_rec(ring, s);
		int in = r->in_job == ida ? 0 : r->in_job == idb ? 1 : -1;
		int out = r->out_job == ida ? 0 : r->out_job == idb ? 1 : -1;
		not_done += !(r->flags & STORM_REC_DONE);
		/* the two jobs take turns (a slot that keeps the running job is a
		 * switch that stops nothing, but for the first: a job registered
		 * while the other ran is registered running, and the next switch,
		 * whichever, stops it) */
		int same = r->in_job == r->out_job;
		int bad = r->seq != s || r->out_job != prev_in || r->cont_ns < r->off_ns ||
			  (in < 0 && r->in_job != 0) || (same && r->out_tasks && turned);
		turned |= !same;
		if (bad && wrong < 5)
			printf("note: record %llu: job %llu -> %llu, tasks %u -> %u, flags %#x\n",
			       (unsigned long long)s, (unsigned long long)r->out_job,
			       (unsigned long long)r->in_job, r->out_tasks, r->in_tasks, r->flags);
		wrong += bad;
		prev_in = r->in_job;
		if (same)
			continue;
		/* the incoming job's every rank (an allocation: each step's) */
		if (in >= 0 && r->start_ns > t_regs && r->in_tasks != threads[in]) {
			if (partial < 3)
				printf("note: record %llu: %u of job %llu's %u threads continued\n",
				       (unsigned long long)s, r->in_tasks,
				       (unsigned long long)r->in_job, threads[in]);
			partial++;
		}
		if (out >= 0) {
			stopped_cpu[out] = r->out_cpu_ns;
			was_stopped[out] = 1;
		}
		if (in >= 0 && was_stopped[in] && r->in_cpu_ns > stopped_cpu[in] + CPU_TOL_NS)
			cpu_moved++;
	}
	verdict(!not_done, "switches complete", "%d of %llu not seen off the CPU in the bound",
		not_done, (unsigned long long)n);
	static long long late[512], took[512];
	int m = 0;
	for (uint64_t s = head0; s < head && m < 512; s++) {
		const struct storm_record *r = ring_rec(ring, s);
		if (r->in_job == r->out_job)
			continue;
		late[m] = storm_lateness_ns(r->deadline_ns, r->start_ns);
		took[m++] = (long long)(r->cont_ns - r->start_ns);
	}
	if (m) {
		qsort(late, (size_t)m, sizeof(late[0]), cmp_s64);
		qsort(took, (size_t)m, sizeof(took[0]), cmp_s64);
		printf("note: %d switches by stormnd's schedule: start after deadline median %lld us, "
		       "p99 %lld us; start to continue (outgoing off the CPU) median %lld us, p99 %lld "
		       "us (emulated CPU)\n",
		       m, late[m / 2] / 1000, late[m * 99 / 100] / 1000, took[m / 2] / 1000,
		       took[m * 99 / 100] / 1000);
	}
	verdict(!wrong, "the jobs take turns", "%d of %llu records out of turn", wrong,
		(unsigned long long)n);
	verdict(!partial, "each switch continues all of the incoming job",
		"%d of %llu records continued part of it (job %llu: %u ranks' threads, job %llu: %u)",
		partial, (unsigned long long)n, (unsigned long long)ida, threads[0],
		(unsigned long long)idb, threads[1]);
	verdict(!cpu_moved, "stopped job gains no CPU",
		"%d times a job's run time moved between its stop and its continue", cpu_moved);
	int both, alone[2], unexplained = overlaps(ring, head0, head, ns, &both, alone);
	verdict(alone[0] && alone[1] && !unexplained, "jobs never run at once",
		"%d samples, %d/%d intervals where one ran alone, %d where both gained CPU, %d of "
		"them away from any switch",
		ns, alone[0], alone[1], both, unexplained);
	unsigned seq = __atomic_load_n(&slice->seq, __ATOMIC_ACQUIRE);
	verdict(!(seq & 1) && (slice->job_id == ida || slice->job_id == idb) &&
			slice->slice >= head,
		"slice page", "slice %llu, job %llu running", (unsigned long long)slice->slice,
		(unsigned long long)slice->job_id);
	/* once whatever ran before has ended: exactly these (a registration
	 * refused, a step's by its allocation's id, would be missing) */
	if (ioctl(fd, STORM_IOC_QUERY, &info) < 0)
		info.jobs = 0;
	verdict(info.jobs == regs, "every job and step registered on its own",
		"%u registered, want %u", info.jobs, regs);
	close(fd);
	printf("kernel-check: storm cluster: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

/* A rank's state letter in /proc/PID/stat ('?' if it is gone) and whether a
 * tracer holds it (the checkpoint's dump seizes it with ptrace). */
static char rank_state(pid_t pid, bool *traced)
{
	char path[64], buf[1024];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	int f = open(path, O_RDONLY);
	ssize_t n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
	if (f >= 0)
		close(f);
	if (n <= 0)
		return '?';
	buf[n] = '\0';
	const char *p = strrchr(buf, ')');
	char st = p && p[1] == ' ' ? p[2] : '?';
	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	f = open(path, O_RDONLY);
	n = f < 0 ? -1 : read(f, buf, sizeof(buf) - 1);
	if (f >= 0)
		close(f);
	buf[n > 0 ? n : 0] = '\0';
	const char *t = strstr(buf, "TracerPid:");
	*traced = t && atoi(t + 10) != 0;
	return st;
}

/* The job id in a rank's environment (STORM_JOBID), 0 if none. */
static uint64_t rank_job(pid_t pid)
{
	char path[64];
	static char env[16384];
	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	int f = open(path, O_RDONLY);
	ssize_t n = f < 0 ? -1 : read(f, env, sizeof(env) - 1);
	if (f >= 0)
		close(f);
	if (n <= 0)
		return 0;
	env[n] = '\0';
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(env + i) + 1) {
		if (!strncmp(env + i, "STORM_JOBID=", 12))
			return strtoull(env + i + 12, NULL, 10);
	}
	return 0;
}

struct csample {
	uint64_t t0, t1, cpu; /* before and after reading; the ranks' run time */
	bool stopped;         /* every rank in state T or t */
	bool traced;          /* a rank held by a tracer: the dump */
};
static struct csample csamples[MAX_SAMPLES];

/* Switches by stormnd through the module that continued job id since
 * ring record from. */
static int continued(const struct storm_ring_hdr *ring, uint64_t from, uint64_t id)
{
	int n = 0;
	uint64_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	for (uint64_t s = from; s < head; s++)
		n += ring_rec(ring, s)->in_job == id && ring_rec(ring, s)->in_tasks;
	return n;
}

/* Runs `storm checkpoint job` and samples the n ranks pids (state, tracer,
 * run time) every 1 ms until it ends; returns the samples (at most
 * MAX_SAMPLES: past them it only waits), -1 (printed) if it failed. */
static int ckpt_sample(uint64_t job, const pid_t *pids, int n)
{
	char id[32];
	snprintf(id, sizeof(id), "%llu", (unsigned long long)job);
	fflush(stdout);
	pid_t cmd = fork();
	if (cmd == 0) {
		execlp("storm", "storm", "checkpoint", id, (char *)NULL);
		_exit(127);
	}
	/* the sampler must not wait behind the ranks and the daemons */
	struct sched_param sp = { .sched_priority = 50 }, normal = { 0 };
	sched_setscheduler(0, SCHED_FIFO, &sp);
	int ns = 0, status = -1;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (uint64_t end = now_ns() + DEADLINE_NS; now_ns() < end;) {
		if (waitpid(cmd, &status, WNOHANG) == cmd)
			break;
		if (ns < MAX_SAMPLES) {
			struct csample *c = &csamples[ns++];
			c->t0 = now_ns();
			c->cpu = 0;
			c->stopped = true;
			c->traced = false;
			for (int k = 0; k < n; k++) {
				bool tr = false;
				char st = rank_state(pids[k], &tr);
				c->stopped &= st == 'T' || st == 't';
				c->traced |= tr;
				c->cpu += run_ns(pids[k]);
			}
			c->t1 = now_ns();
		}
		tick_1ms(&next);
	}
	sched_setscheduler(0, SCHED_OTHER, &normal);
	if (!WIFEXITED(status) || WEXITSTATUS(status)) {
		printf("FAIL: checkpoint: storm checkpoint %s: status %#x\n", id, status);
		return -1;
	}
	return ns;
}

/* What one checkpoint showed: the job's slots in the stretch its ranks
 * stayed stopped before the dump seized them, and how many were held. */
struct ckpt_seen {
	int slots, held;
	uint64_t stopped_ms;
};

/* The ns samples against the ring's records from..head-1 of run id id: the
 * dump's seize is the first sample with a tracer on a rank; before it, the
 * run of samples in which the ranks stayed stopped holds the job's slots
 * that came while it was held. false (printed) when no seize was seen. */
static bool ckpt_judge(const struct storm_ring_hdr *ring, uint64_t from, uint64_t head,
		       uint64_t id, int ns, struct ckpt_seen *seen)
{
	int seize = 0;
	while (seize < ns && !csamples[seize].traced)
		seize++;
	if (seize == ns) {
		verdict(false, "checkpoint dumps the job", "no sample saw its ranks seized (%d)", ns);
		return false;
	}
	/* (the seize itself moves their run time: a stopped task is woken
	 * to trap into its ptrace stop) */
	int last = seize - 1, s0 = last;
	while (s0 > 0 && csamples[s0 - 1].stopped && csamples[s0 - 1].cpu == csamples[s0].cpu)
		s0--;
	bool stretch = last >= 0 && csamples[last].stopped;
	uint64_t t_from = stretch ? csamples[s0].t1 : 0, t_to = stretch ? csamples[last].t1 : 0;
	/* The stretch may begin at a gang switch's stop, before the hold: a
	 * slot of the job that continued its ranks before the checkpoint held
	 * and stopped them, with no core for them in between (the daemon takes
	 * the hold and stops the job at once, at a real-time priority), falls
	 * inside it and is no fault. The job's time held starts after the
	 * last such continue. A continue after the hold would let the ranks
	 * run (their run time moves), which ends the stretch instead. */
	for (uint64_t s = from; stretch && s < head; s++) {
		const struct storm_record *r = ring_rec(ring, s);
		if (r->in_job == id && r->in_tasks && r->cont_ns >= t_from && r->cont_ns <= t_to)
			t_from = r->cont_ns + 1;
	}
	*seen = (struct ckpt_seen){ .stopped_ms = (t_to - t_from) / 1000000 };
	for (uint64_t s = from; s < head; s++) {
		const struct storm_record *r = ring_rec(ring, s);
		bool in = stretch && r->in_job == id && r->start_ns >= t_from && r->cont_ns <= t_to;
		seen->slots += in;
		seen->held += in && (r->flags & STORM_REC_HELD) && !r->in_tasks;
	}
	/* unless all is well, its slots from a second before that stop to the
	 * seize */
	for (uint64_t s = from; s < head && (!seen->slots || seen->held != seen->slots); s++) {
		const struct storm_record *r = ring_rec(ring, s);
		if (r->in_job == id && r->cont_ns + 1000000000ULL >= t_from &&
		    r->start_ns <= csamples[seize].t0)
			printf("note: checkpoint: switch %llu to job %llu at %+lld ms from the stop: "
			       "%u tasks continued, flags %#x\n",
			       (unsigned long long)s, (unsigned long long)id,
			       ((long long)r->start_ns - (long long)t_from) / 1000000, r->in_tasks,
			       r->flags);
	}
	return true;
}

/* Waits (bounded) until the job whose ranks are tag runs them, and the
 * module has continued it twice since ring record *from (registered, and
 * taking turns); its id, 0 (printed) if not. *from moves to the head. */
static uint64_t ckpt_running(const struct storm_ring_hdr *ring, const char *tag, pid_t *pids,
			     int *n, uint64_t *from)
{
	uint64_t id = 0, give_up = now_ns() + 120000000000ULL;
	do {
		*n = find_ranks(tag, pids);
		if (*n == PER_JOB && !id)
			id = rank_job(pids[0]);
		if (*n == PER_JOB && id && continued(ring, *from, id) >= 2)
			break;
		usleep(20000);
	} while (now_ns() < give_up);
	if (*n != PER_JOB || !id || continued(ring, *from, id) < 2) {
		printf("FAIL: checkpoint: %d ranks of %s, job %llu, %d switches to it\n", *n, tag,
		       (unsigned long long)id, id ? continued(ring, *from, id) : 0);
		return 0;
	}
	*from = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	return id;
}

/* `storm checkpoint` of the job whose ranks are tag (a plain job: its id is
 * the run id the module's entries name), stormnd gang-scheduling it beside
 * another through the module; run with stormnd's test hook ckpt_deaf_for,
 * so the module plays the entries pushed before the command while the job
 * is held. The job's ranks must stay stopped through the slots of its run
 * id that come then, up to the dump's seize. A checkpoint through whose
 * hold none of its slots came (the entries left were the other job's)
 * proves nothing: another is taken, up to 3. The commands' output is
 * printed. */
static int ckpt_watch(const char *tag)
{
	int fd = open(STORM_DEVICE, O_RDONLY);
	struct storm_info info;
	const struct storm_ring_hdr *ring;
	const struct storm_slice_page *slice;
	if (fd < 0 || ioctl(fd, STORM_IOC_QUERY, &info) < 0) {
		printf("FAIL: open/query %s read-only: %s\n", STORM_DEVICE, strerror(errno));
		return 1;
	}
	if (!map_areas(fd, &info, &ring, &slice))
		return 1;
	pid_t pids[MAXP];
	int n = 0, tries = 0;
	uint64_t id, from = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
	struct ckpt_seen seen = { 0 };
	do {
		if (!(id = ckpt_running(ring, tag, pids, &n, &from)))
			return 1;
		int ns = ckpt_sample(id, pids, n);
		if (ns < 0)
			return 1;
		uint64_t head = __atomic_load_n(&ring->head, __ATOMIC_ACQUIRE);
		if (head - from > ring->records)
			from = head - ring->records;
		if (!ckpt_judge(ring, from, head, id, ns, &seen))
			return 1;
		from = head;
	} while (++tries < 3 && !seen.slots);
	verdict(seen.slots > 0 && seen.held == seen.slots,
		"checkpointed job stays stopped while held",
		"%d of its slots came in the %llu ms its ranks stayed stopped before the dump "
		"seized them, %d of them held (checkpoints taken: %d of at most 3; want at least 1, all held)",
		seen.slots, (unsigned long long)seen.stopped_ms, seen.held, tries);
	close(fd);
	return failed ? 1 : 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "spin"))
		spin();
	if (argc == 4 && !strcmp(argv[1], "spin"))
		return spin_gated(argv[3]);
	if (argc == 2 && !strcmp(argv[1], "sum")) {
		printf("sum %016llx\n",
		       (unsigned long long)chain(chain(1, 0, CHAIN_STEPS), CHAIN_STEPS, CHAIN_STEPS));
		return 0;
	}
	if ((argc == 7 || argc == 8) && !strcmp(argv[1], "observe"))
		return observe(strtoull(argv[2], NULL, 10), argv[3], strtoull(argv[4], NULL, 10),
			       argv[5], atoi(argv[6]), argc == 8 ? (unsigned)atoi(argv[7]) : 2);
	if (argc == 3 && !strcmp(argv[1], "ckptwatch"))
		return ckpt_watch(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "ranks")) {
		pid_t p[MAXP];
		int n = find_ranks(argv[2], p);
		printf("%d\n", n);
		return n ? 1 : 0;
	}
	if (argc != 1) {
		fprintf(stderr, "usage: storm_guest [spin TAG [GATE] | sum | observe ID_A TAG_A ID_B "
				"TAG_B SWITCHES [REGISTRATIONS] | ckptwatch TAG | ranks TAG]\n");
		return 2;
	}
	return module_test();
}
