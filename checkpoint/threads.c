/* The threads of a process: stopped together at one point, saved one by one,
 * made again in the restored process.
 *
 * Dump: every task of /proc/PID/task is seized with PTRACE_O_TRACECLONE (a
 * thread made while we stop the others is auto-attached) and interrupted,
 * round after round until a round finds no new task; then every thread is in
 * its ptrace stop and none can make another. Each one's registers, signal
 * mask, rseq and robust list come from ptrace and get_robust_list, its
 * clear_child_tid and sigaltstack from calls injected into it.
 *
 * Restore: the main thread, whose memory is back, runs clone3 from the
 * gadget for each other thread with glibc's flags and the saved
 * clear_child_tid as child_tid (CLONE_CHILD_SETTID writes the new tid into
 * glibc's struct pthread, CLONE_CHILD_CLEARTID lets pthread_join see its
 * end). The new thread is auto-attached and stops before it runs; it is
 * given its robust list, sigaltstack, name, rseq, pending signals, then its
 * registers. */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "threads.h"

#ifndef PTRACE_GET_RSEQ_CONFIGURATION
#define PTRACE_GET_RSEQ_CONFIGURATION 0x420f
#endif
struct rseq_conf {
	uint64_t rseq_abi_pointer;
	uint32_t rseq_abi_size;
	uint32_t signature;
	uint32_t flags;
	uint32_t pad;
};

/* struct clone_args of clone3 (linux/sched.h, which clashes with sched.h) */
struct clone3_args {
	uint64_t flags, pidfd, child_tid, parent_tid, exit_signal, stack, stack_size, tls,
		set_tid, set_tid_size, cgroup;
};

/* what glibc's pthread_create passes, but the TLS (set with the registers) */
#define THREAD_FLAGS                                                                  \
	(CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM)

#define ROBUST_HEAD_LEN 24 /* struct robust_list_head */

/* Signals saved as pending: not job control (the restorer decides whether the
 * process runs), nor SIGTRAP and SIGSEGV (the injected calls' own traps). */
static int keep_pending(int sig)
{
	return sig >= 1 && sig <= 64 && sig != SIGKILL && sig != SIGSTOP && sig != SIGTSTP &&
	       sig != SIGTTIN && sig != SIGTTOU && sig != SIGTRAP && sig != SIGSEGV;
}

static struct ckpt_thread *thread_add(struct ckpt_threads *ts, pid_t tid)
{
	struct ckpt_thread *nv = realloc(ts->v, (ts->n + 1) * sizeof(*nv));
	if (!nv)
		return NULL;
	ts->v = nv;
	struct ckpt_thread *t = &nv[ts->n++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	storm__ckpt__thread__init(&t->pb);
	return t;
}

static int thread_known(const struct ckpt_threads *ts, pid_t tid)
{
	for (size_t i = 0; i < ts->n; i++)
		if (ts->v[i].tid == tid)
			return 1;
	return 0;
}

static void thread_release(struct ckpt_thread *t)
{
	free(t->xbuf);
	for (size_t k = 0; k < t->pb.n_pending; k++)
		free(t->pb.pending[k].data);
	free(t->pb.pending);
}

static void thread_drop(struct ckpt_threads *ts, size_t i)
{
	thread_release(&ts->v[i]);
	memmove(&ts->v[i], &ts->v[i + 1], (ts->n - i - 1) * sizeof(*ts->v));
	ts->n--;
}

void ckpt_threads_free(struct ckpt_threads *ts)
{
	for (size_t i = 0; i < ts->n; i++)
		thread_release(&ts->v[i]);
	for (size_t k = 0; k < ts->nshared; k++)
		free(ts->shared[k].data);
	free(ts->shared);
	free(ts->pbs);
	free(ts->v);
	memset(ts, 0, sizeof(*ts));
}

static int cmp_tid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
	return (x > y) - (x < y);
}

/* The tids of /proc/PID/task, ascending. */
static int task_list(pid_t pid, pid_t **out, size_t *n)
{
	char dir[64];
	snprintf(dir, sizeof(dir), "/proc/%d/task", pid);
	DIR *dp = opendir(dir);
	if (!dp)
		return -errno;
	size_t cap = 16;
	pid_t *v = malloc(cap * sizeof(*v));
	*n = 0;
	struct dirent *de;
	while (v && (de = readdir(dp))) {
		if (de->d_name[0] < '1' || de->d_name[0] > '9')
			continue;
		if (*n == cap) {
			pid_t *nv = realloc(v, (cap *= 2) * sizeof(*v));
			if (!nv) {
				free(v);
				v = NULL;
				break;
			}
			v = nv;
		}
		v[(*n)++] = (pid_t)atoi(de->d_name);
	}
	closedir(dp);
	if (!v)
		return -ENOMEM;
	qsort(v, *n, sizeof(*v), cmp_tid);
	*out = v;
	return 0;
}

/* A value of /proc/PID/task/TID/status (base 10), -1 if absent. */
static long task_status(pid_t pid, pid_t tid, const char *key)
{
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", pid, tid);
	char *s = ckpt_read_all(path, NULL);
	long v = ckpt_status_num(s, key, 10);
	free(s);
	return v;
}

/* The main thread is a zombie (it called pthread_exit) while others run. */
static int main_exited(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	char *s = ckpt_read_all(path, NULL);
	const char *p = s ? strrchr(s, ')') : NULL;
	int z = p && p[1] == ' ' && p[2] == 'Z';
	free(s);
	return z;
}

/* Waits until thread i is in its interrupt stop. A signal that comes first
 * is kept (a second one is delivered: the thread runs its handler and is
 * interrupted again); a thread it clones is ours already and added. Returns
 * 0, 1 if it exited, or -errno. */
static int wait_stop(struct ckpt_threads *ts, size_t i)
{
	for (;;) {
		pid_t tid = ts->v[i].tid;
		int ws, pass = 0;
		struct ckpt_tracee w = { .pid = tid, .others = i == 0 && ts->n > 1 };
		if (ckpt_wait(&w, &ws) < 0)
			return -errno;
		if (WIFEXITED(ws) || WIFSIGNALED(ws))
			return 1;
		int ev = ws >> 16;
		if (ev == PTRACE_EVENT_STOP) {
			ts->v[i].stopped = 1;
			return 0;
		}
		if (ev == PTRACE_EVENT_CLONE) {
			unsigned long msg = 0;
			char path[64];
			if (ptrace(PTRACE_GETEVENTMSG, tid, 0, &msg) == 0 && msg &&
			    !thread_known(ts, (pid_t)msg)) {
				snprintf(path, sizeof(path), "/proc/%d/task/%lu", ts->v[0].tid, msg);
				if (access(path, F_OK) < 0) {
					/* a process of its own (clone without
					 * CLONE_THREAD), auto-attached all the same:
					 * not ours to hold */
					int cs;
					if (waitpid((pid_t)msg, &cs, __WALL) == (pid_t)msg && WIFSTOPPED(cs))
						ptrace(PTRACE_DETACH, (pid_t)msg, 0, 0);
				} else if (!thread_add(ts, (pid_t)msg)) {
					return -ENOMEM;
				}
			}
		} else if (ev == 0 && !ts->v[i].sig) {
			ts->v[i].sig = WSTOPSIG(ws);
			if (ptrace(PTRACE_GETSIGINFO, tid, 0, &ts->v[i].si) < 0)
				ts->v[i].si.si_signo = 0;
		} else if (ev == 0) {
			pass = WSTOPSIG(ws);
		}
		if (ptrace(PTRACE_CONT, tid, 0, pass) < 0 || ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0)
			return -errno;
	}
}

/* Waits for every thread not stopped yet, the main one last: the end of a
 * process that exits meanwhile is reported for its main thread only once
 * the other threads' are reaped. An exited thread is dropped. Returns 0, 1
 * if the main thread exited, or -errno with *bad the thread (with all, one
 * that cannot be waited for is marked and the others still are). */
static int wait_all(struct ckpt_threads *ts, int all, pid_t *bad)
{
	for (;;) {
		size_t i = 0;
		for (size_t k = ts->n; k-- > 1 && !i;)
			if (!ts->v[k].stopped)
				i = k;
		if (!i && (!ts->n || ts->v[0].stopped))
			return 0;
		int r = wait_stop(ts, i);
		if (r == 1 && i == 0)
			return 1;
		if (r == 1) {
			thread_drop(ts, i);
		} else if (r < 0) {
			ts->v[i].stopped = -1;
			if (!all) {
				*bad = ts->v[i].tid;
				return r;
			}
		}
	}
}

int ckpt_threads_stop(struct ckpt_threads *ts, pid_t pid, char *err, size_t errlen)
{
	for (unsigned round = 0;; round++) {
		pid_t *tids = NULL;
		size_t nt = 0, added = 0;
		int rc = task_list(pid, &tids, &nt);
		if (rc)
			return ckpt_fail(err, errlen, -ESRCH, "pid %d: %s", pid,
					 round ? "exited while being stopped" : "no such process");
		/* the main thread first: it is v[0] */
		for (size_t k = 0; k <= nt && !rc; k++) {
			pid_t tid = k ? tids[k - 1] : pid;
			if ((k && tid == pid) || thread_known(ts, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, 0, PTRACE_O_TRACECLONE) < 0) {
				int e = errno;
				if (tid == pid) {
					rc = e == EPERM && main_exited(pid)
						     ? ckpt_fail(err, errlen, -ENOTSUP,
								 "pid %d: its main thread has exited "
								 "(not supported)",
								 pid)
						     : ckpt_fail(err, errlen, -e, "pid %d: ptrace seize: %s",
								 pid, strerror(e));
					break;
				}
				if (e == ESRCH)
					continue; /* it ended meanwhile */
				/* auto-attached already: made by a thread of ours
				 * whose clone we have not waited for yet */
				if (e != EPERM || task_status(pid, tid, "TracerPid:\t") != getpid()) {
					rc = ckpt_fail(err, errlen, -e, "pid %d: thread %d: ptrace seize: %s",
						       pid, tid, strerror(e));
					break;
				}
			} else if (ptrace(PTRACE_INTERRUPT, tid, 0, 0) < 0) {
				rc = ckpt_fail(err, errlen, -errno, "pid %d: thread %d: ptrace interrupt: %s",
					       pid, tid, strerror(errno));
			}
			if (!thread_add(ts, tid))
				rc = -ENOMEM;
			added++;
		}
		free(tids);
		if (rc)
			return rc;
		if (round && !added)
			return 0; /* all stopped, and none can make another */
		pid_t bad = 0;
		int r = wait_all(ts, 0, &bad);
		if (r == 1)
			return ckpt_fail(err, errlen, -ESRCH, "pid %d: exited while being stopped", pid);
		if (r < 0)
			return ckpt_fail(err, errlen, r, "pid %d: thread %d: waiting for its stop: %s",
					 pid, bad, strerror(-r));
	}
}

/* The signals pending for tid (flags 0) or its process
 * (PTRACE_PEEKSIGINFO_SHARED), appended to *out as siginfo_t bytes. */
static int peek_pending(pid_t tid, unsigned flags, ProtobufCBinaryData **out, size_t *n)
{
	siginfo_t si[16];
	memset(si, 0, sizeof(si)); /* for valgrind, which does not know PEEKSIGINFO */
	for (uint64_t off = 0;;) {
		struct __ptrace_peeksiginfo_args a = { .off = off, .flags = flags, .nr = 16 };
		long k = ptrace(PTRACE_PEEKSIGINFO, tid, &a, si);
		if (k < 0)
			return -errno;
		if (k == 0)
			return 0;
		for (long j = 0; j < k; j++) {
			if (!keep_pending(si[j].si_signo))
				continue;
			ProtobufCBinaryData *nv = realloc(*out, (*n + 1) * sizeof(*nv));
			if (!nv)
				return -ENOMEM;
			*out = nv;
			nv[*n].data = malloc(sizeof(siginfo_t));
			if (!nv[*n].data)
				return -ENOMEM;
			memcpy(nv[*n].data, &si[j], sizeof(siginfo_t));
			nv[(*n)++].len = sizeof(siginfo_t);
		}
		off += k;
	}
}

void ckpt_cpus_list(const unsigned char *mask, size_t len, char *buf, size_t blen)
{
	size_t at = 0;
	buf[0] = 0;
	for (size_t c = 0; c < len * 8 && at < blen; c++) {
		if (!(mask[c / 8] >> (c % 8) & 1) || (c && mask[(c - 1) / 8] >> ((c - 1) % 8) & 1))
			continue;
		size_t e = c;
		while (e + 1 < len * 8 && mask[(e + 1) / 8] >> ((e + 1) % 8) & 1)
			e++;
		int n = e == c ? snprintf(buf + at, blen - at, "%s%zu", at ? "," : "", c)
			       : snprintf(buf + at, blen - at, "%s%zu-%zu", at ? "," : "", c, e);
		at += n > 0 ? (size_t)n : 0;
	}
}

/* Its CPU affinity (kept only where narrower or other than the dumper's
 * own: a mask that is just the machine's would pin a restart on a larger
 * node to this one's CPUs), policy, real-time priority and nice. */
static int read_sched(struct ckpt_thread *t, pid_t pid, char *err, size_t errlen)
{
	Storm__Ckpt__Thread *pb = &t->pb;
	unsigned char own[sizeof(t->cpus)];
	long n = syscall(SYS_sched_getaffinity, t->tid, sizeof(t->cpus), t->cpus);
	long m = syscall(SYS_sched_getaffinity, 0, sizeof(own), own);
	int policy = sched_getscheduler(t->tid);
	struct sched_param sp;
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, (id_t)t->tid);
	if (n <= 0 || m <= 0 || policy < 0 || (nice == -1 && errno) ||
	    sched_getparam(t->tid, &sp) < 0)
		return ckpt_fail(err, errlen, -errno, "pid %d: thread %d: reading its scheduling: %s",
				 pid, t->tid, strerror(errno));
	if ((policy & ~SCHED_RESET_ON_FORK) == 6 /* SCHED_DEADLINE */)
		return ckpt_fail(err, errlen, -ENOTSUP, "pid %d: thread %d runs under SCHED_DEADLINE: "
				 "its runtime, deadline and period are not restored", pid, t->tid);
	if (n != m || memcmp(t->cpus, own, (size_t)n)) {
		pb->cpus.data = t->cpus;
		pb->cpus.len = (size_t)n;
	}
	pb->sched = 1;
	pb->policy = (uint32_t)policy;
	pb->rt_priority = (uint32_t)sp.sched_priority;
	pb->nice = nice;
	return 0;
}

static int read_thread(struct ckpt_thread *t, pid_t pid, char *err, size_t errlen)
{
	pid_t tid = t->tid;
	Storm__Ckpt__Thread *pb = &t->pb;
	if (ptrace(PTRACE_GETREGS, tid, 0, &t->regs) < 0 ||
	    ptrace(PTRACE_GETSIGMASK, tid, sizeof(t->sigmask), &t->sigmask) < 0)
		return ckpt_fail(err, errlen, -errno, "pid %d: thread %d: reading registers: %s", pid,
				 tid, strerror(errno));
	pb->tid = tid;
	pb->regs.data = (uint8_t *)&t->regs;
	pb->regs.len = sizeof(t->regs);
	pb->sigmask = t->sigmask;
	t->xbuf = malloc(65536);
	if (!t->xbuf)
		return -ENOMEM;
	struct iovec iov = { t->xbuf, 65536 };
	if (ptrace(PTRACE_GETREGSET, tid, NT_X86_XSTATE, &iov) == 0) {
		pb->xstate.data = t->xbuf;
		pb->xstate.len = iov.iov_len;
	} else {
		iov.iov_len = sizeof(struct user_fpregs_struct);
		if (ptrace(PTRACE_GETREGSET, tid, NT_PRFPREG, &iov) < 0)
			return ckpt_fail(err, errlen, -errno,
					 "pid %d: thread %d: reading FP registers: %s", pid, tid,
					 strerror(errno));
		pb->fpregs.data = t->xbuf;
		pb->fpregs.len = iov.iov_len;
	}
	struct rseq_conf rc_conf = { 0 };
	if (ptrace(PTRACE_GET_RSEQ_CONFIGURATION, tid, sizeof(rc_conf), &rc_conf) > 0 &&
	    rc_conf.rseq_abi_pointer) {
		pb->rseq_addr = rc_conf.rseq_abi_pointer;
		pb->rseq_len = rc_conf.rseq_abi_size;
		pb->rseq_sig = rc_conf.signature;
	}
	void *head = NULL;
	size_t len = 0;
	if (syscall(SYS_get_robust_list, tid, &head, &len) == 0 && head) {
		pb->robust_list = (uintptr_t)head;
		pb->robust_len = len;
	}
	char path[96];
	snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", pid, tid);
	char *comm = ckpt_read_all(path, NULL);
	if (comm) {
		snprintf(t->comm, sizeof(t->comm), "%.*s", (int)strcspn(comm, "\n"), comm);
		free(comm);
	}
	pb->comm = t->comm;
	int rc = read_sched(t, pid, err, errlen);
	if (rc)
		return rc;
	rc = peek_pending(tid, 0, &pb->pending, &pb->n_pending);
	if (!rc && t->sig && t->si.si_signo == t->sig && keep_pending(t->sig)) {
		/* taken while we stopped it: pending still, for the image */
		ProtobufCBinaryData *nv = realloc(pb->pending, (pb->n_pending + 1) * sizeof(*nv));
		if (!nv || !(nv[pb->n_pending].data = malloc(sizeof(siginfo_t))))
			rc = -ENOMEM;
		if (nv)
			pb->pending = nv;
		if (!rc) {
			memcpy(nv[pb->n_pending].data, &t->si, sizeof(siginfo_t));
			nv[pb->n_pending++].len = sizeof(siginfo_t);
		}
	}
	if (rc)
		return ckpt_fail(err, errlen, rc, "pid %d: thread %d: pending signals: %s", pid, tid,
				 strerror(-rc));
	return 0;
}

int ckpt_threads_read(struct ckpt_threads *ts, Storm__Ckpt__Meta *meta, char *err, size_t errlen)
{
	pid_t pid = ts->v[0].tid;
	ts->pbs = calloc(ts->n, sizeof(*ts->pbs));
	if (!ts->pbs)
		return -ENOMEM;
	for (size_t i = 0; i < ts->n; i++) {
		int rc = read_thread(&ts->v[i], pid, err, errlen);
		if (rc)
			return rc;
		ts->pbs[i] = &ts->v[i].pb;
	}
	int rc = peek_pending(pid, PTRACE_PEEKSIGINFO_SHARED, &ts->shared, &ts->nshared);
	if (rc)
		return ckpt_fail(err, errlen, rc, "pid %d: pending signals: %s", pid, strerror(-rc));
	meta->threads = ts->pbs;
	meta->n_threads = ts->n;
	meta->pending = ts->shared;
	meta->n_pending = ts->nshared;
	return 0;
}

/* Without PR_GET_TID_ADDRESS (a kernel built without checkpoint/restore):
 * glibc's struct pthread is at the TLS pointer, and every thread's
 * clear_child_tid is its tid field, at one offset. That offset is taken if
 * the first KiB of each thread's holds its tid once, at the same place;
 * otherwise none is saved. */
static void guess_clear_tid(struct ckpt_threads *ts, struct ckpt_tracee *main)
{
	long off = -1;
	for (size_t i = 0; i < ts->n; i++) {
		unsigned char tcb[1024];
		long o = ckpt_mem_read(main, ts->v[i].regs.fs_base, tcb, sizeof(tcb)) == 0
				 ? ckpt_tid_offset(tcb, sizeof(tcb), ts->v[i].tid)
				 : -1;
		if (o < 0 || (i && o != off))
			return;
		off = o;
	}
	for (size_t i = 0; i < ts->n; i++)
		ts->v[i].pb.clear_tid = ts->v[i].regs.fs_base + off;
}

int ckpt_threads_query(struct ckpt_threads *ts, struct ckpt_tracee *main, uint64_t scratch,
		       char *err, size_t errlen)
{
	uint64_t mask = ckpt_inject_mask();
	int no_prctl = 0;
	for (size_t i = 0; i < ts->n; i++) {
		struct ckpt_thread *th = &ts->v[i];
		struct ckpt_tracee tmp = { .pid = th->tid, .memfd = main->memfd, .gadget = main->gadget };
		struct ckpt_tracee *t = i ? &tmp : main;
		long r = 0;
		int rc = 0;
		if (i && ptrace(PTRACE_SETSIGMASK, th->tid, sizeof(mask), &mask) < 0)
			rc = -errno;
		uint64_t addr = 0;
		if (!rc)
			rc = ckpt_inject(t, &th->regs, SYS_prctl, &r, 0, 2, (long)PR_GET_TID_ADDRESS,
					 (long)scratch);
		if (!rc && r == 0)
			rc = ckpt_mem_read(t, scratch, &addr, sizeof(addr));
		else if (!rc)
			no_prctl = 1;
		stack_t ss = { .ss_flags = SS_DISABLE };
		if (!rc)
			rc = ckpt_inject(t, &th->regs, SYS_sigaltstack, &r, 0, 2, 0L, (long)scratch + 64);
		if (!rc && r == 0)
			rc = ckpt_mem_read(t, scratch + 64, &ss, sizeof(ss));
		if (i) {
			ptrace(PTRACE_SETREGS, th->tid, 0, &th->regs);
			ptrace(PTRACE_SETSIGMASK, th->tid, sizeof(th->sigmask), &th->sigmask);
			if (!th->sig)
				th->sig = tmp.pending_sig;
		}
		if (rc)
			return ckpt_fail(err, errlen, rc, "pid %d: thread %d: injected queries: %s",
					 ts->v[0].tid, th->tid, strerror(-rc));
		th->pb.clear_tid = addr;
		if (!(ss.ss_flags & SS_DISABLE)) {
			th->pb.altstack_sp = (uintptr_t)ss.ss_sp;
			th->pb.altstack_size = ss.ss_size;
			th->pb.altstack_flags = (uint32_t)ss.ss_flags;
		}
	}
	if (no_prctl)
		guess_clear_tid(ts, main);
	return 0;
}

void ckpt_threads_detach(struct ckpt_threads *ts)
{
	/* seized but not stopped yet (a failed dump): it is interrupted, and
	 * only a stopped tracee can be let go */
	pid_t bad;
	wait_all(ts, 1, &bad);
	for (size_t i = 1; i < ts->n; i++)
		if (ts->v[i].stopped == 1)
			ptrace(PTRACE_DETACH, ts->v[i].tid, 0, ts->v[i].sig);
}

void ckpt_threads_reap(struct ckpt_threads *ts)
{
	for (size_t i = 1; i < ts->n; i++) {
		int ws;
		while (waitpid(ts->v[i].tid, &ws, __WALL) == ts->v[i].tid && !WIFEXITED(ws) &&
		       !WIFSIGNALED(ws))
			;
	}
}

/* ---- the image */

size_t ckpt_meta_nthreads(const Storm__Ckpt__Meta *m)
{
	return m->n_threads ? m->n_threads : 1;
}

const Storm__Ckpt__Thread *ckpt_meta_thread(const Storm__Ckpt__Meta *m, size_t i,
					    Storm__Ckpt__Thread *view)
{
	if (m->n_threads)
		return i < m->n_threads ? m->threads[i] : NULL;
	if (i)
		return NULL;
	storm__ckpt__thread__init(view);
	view->tid = m->pid;
	view->regs = m->regs;
	view->xstate = m->xstate;
	view->fpregs = m->fpregs;
	view->sigmask = m->sigmask;
	view->rseq_addr = m->rseq_addr;
	view->rseq_len = m->rseq_len;
	view->rseq_sig = m->rseq_sig;
	view->comm = m->comm;
	return view;
}

int ckpt_threads_check(const Storm__Ckpt__Meta *m, const char *path, char *err, size_t errlen)
{
	Storm__Ckpt__Thread view;
	if (m->n_threads && m->threads[0]->tid != m->pid)
		return ckpt_fail(err, errlen, -EINVAL,
				 "%s: section meta: the first thread is %d, not the main one (%d)",
				 path, m->threads[0]->tid, m->pid);
	for (size_t i = 0; i < ckpt_meta_nthreads(m); i++) {
		const Storm__Ckpt__Thread *t = ckpt_meta_thread(m, i, &view);
		if (t->regs.len != sizeof(struct user_regs_struct))
			return ckpt_fail(err, errlen, -EINVAL,
					 "%s: section meta: thread %zu: registers are %zu bytes", path,
					 i, t->regs.len);
		if (t->tid <= 0 || strlen(t->comm) >= 16 ||
		    t->cpus.len > sizeof(((struct ckpt_thread *)0)->cpus))
			return ckpt_fail(err, errlen, -EINVAL, "%s: section meta: thread %zu is malformed",
					 path, i);
		for (size_t k = 0; k < t->n_pending; k++)
			if (t->pending[k].len != sizeof(siginfo_t))
				return ckpt_fail(err, errlen, -EINVAL,
						 "%s: section meta: thread %zu: pending signal %zu is "
						 "%zu bytes",
						 path, i, k, t->pending[k].len);
	}
	for (size_t k = 0; k < m->n_pending; k++)
		if (m->pending[k].len != sizeof(siginfo_t))
			return ckpt_fail(err, errlen, -EINVAL,
					 "%s: section meta: pending signal %zu is %zu bytes", path, k,
					 m->pending[k].len);
	return 0;
}

/* ---- restore */

pid_t ckpt_fork_pid(pid_t want)
{
	char *st = want > 0 ? ckpt_read_all("/proc/self/status", NULL) : NULL;
	int single = ckpt_status_num(st, "\nThreads:\t", 10) == 1;
	free(st);
	if (single) {
		pid_t tids[1] = { want };
		struct clone3_args ca = { .exit_signal = SIGCHLD, .set_tid = (uintptr_t)tids,
					  .set_tid_size = 1 };
		/* the child's glibc learns its tid as after fork() */
		uint64_t self = 0;
		if (prctl(PR_GET_TID_ADDRESS, &self) == 0 && self) {
			ca.flags = CLONE_CHILD_SETTID;
			ca.child_tid = self;
		}
		long r = syscall(SYS_clone3, &ca, sizeof(ca));
		if (r >= 0)
			return (pid_t)r;
	}
	return fork();
}

/* Has the next pid of our namespace be want, for a clone by a process that
 * may not choose its tid (not privileged) where we may: ns_last_pid, under
 * the lock other restorers (CRIU) take too. Returns the descriptor holding
 * the lock (close it once the clone is done), or -1. */
static int last_pid_lock(pid_t want)
{
	int fd = open("/proc/sys/kernel/ns_last_pid", O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return -1;
	char b[16];
	int n = snprintf(b, sizeof(b), "%d", want - 1);
	if (flock(fd, LOCK_EX) < 0 || pwrite(fd, b, n, 0) != n) {
		close(fd);
		return -1;
	}
	return fd;
}

struct rctx {
	struct ckpt_tracee *main;
	const struct user_regs_struct *base;
	uint64_t scratch;
	pid_t pid;
	const struct ckpt_restore_opts *o;
	const char *path;
	char *err;
	size_t errlen;
};

/* Runs a call in thread t (stopped; registers base) and fails on an error. */
static int tcall(struct rctx *c, struct ckpt_tracee *t, const struct user_regs_struct *base,
		 const char *what, long nr, long *ret, int nargs, long a0, long a1, long a2, long a3)
{
	long r;
	int rc = ckpt_inject(t, base, nr, &r, 0, nargs, a0, a1, a2, a3);
	if (!rc && (unsigned long)r > -4096ul)
		rc = (int)r;
	if (rc)
		return ckpt_fail(c->err, c->errlen, rc, "%s: restoring thread %d: %s: %s", c->path,
				 t->pid, what, strerror(-rc));
	if (ret)
		*ret = r;
	return 0;
}

/* The new thread for th: with its old tid where that is free (clone3
 * set_tid; ns_last_pid where the process may not choose), another one
 * otherwise. *tid gets it; it is stopped, not run yet. */
static int make_thread(struct rctx *c, const Storm__Ckpt__Thread *th, pid_t *tid)
{
	struct ckpt_tracee *m = c->main;
	struct clone3_args ca = { .flags = THREAD_FLAGS };
	if (th->clear_tid) {
		ca.flags |= CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID;
		ca.child_tid = th->clear_tid;
	}
	int32_t want = th->tid;
	long r = -EINVAL;
	int rc = 0;
	for (int pass = 0; pass < 2 && !rc; pass++) {
		int lock = -1;
		ca.set_tid = pass ? 0 : c->scratch + 512;
		ca.set_tid_size = !pass;
		if (pass && r == -EPERM)
			lock = last_pid_lock(want);
		if (pass && r == -ENOSYS) /* before clone3 */
			rc = ckpt_inject(m, c->base, SYS_clone, &r, 0, 5, (long)ca.flags, 0L, 0L,
					 (long)ca.child_tid, 0L);
		else if (!(rc = ckpt_mem_write(m, c->scratch + 512, &want, sizeof(want))) &&
			 !(rc = ckpt_mem_write(m, c->scratch, &ca, sizeof(ca))))
			rc = ckpt_inject(m, c->base, SYS_clone3, &r, 0, 2, (long)c->scratch,
					 (long)sizeof(ca));
		if (lock >= 0)
			close(lock);
		if (!rc && r > 0)
			break;
	}
	if (!rc && r <= 0)
		rc = (int)r;
	if (rc)
		return ckpt_fail(c->err, c->errlen, rc, "%s: restoring thread %d: clone3: %s",
				 c->path, th->tid, strerror(-rc));
	*tid = (pid_t)r;
	int ws;
	if (waitpid(*tid, &ws, __WALL) != *tid || !WIFSTOPPED(ws))
		return ckpt_fail(c->err, c->errlen, -ESRCH,
				 "%s: restoring thread %d: the new thread %d did not stop", c->path,
				 th->tid, *tid);
	return 0;
}

/* A call of the thread's own (the kernel checks its user's rights: an image
 * cannot raise a priority its user could not); what it refuses is said,
 * not fatal: the rank runs as well, only placed or weighted otherwise. */
static int sched_call(struct rctx *c, struct ckpt_tracee *t, const struct user_regs_struct *base,
		      const Storm__Ckpt__Thread *th, const char *what, long nr, int nargs,
		      long a0, long a1, long a2)
{
	long r;
	int rc = ckpt_inject(t, base, nr, &r, 0, nargs, a0, a1, a2);
	if (rc)
		return ckpt_fail(c->err, c->errlen, rc, "%s: restoring thread %d: %s: %s", c->path,
				 t->pid, what, strerror(-rc));
	if ((unsigned long)r > -4096ul)
		ckpt_log(c->o, "%s: pid %d: thread %d: %s not restored: %s; left as the restorer's",
			 c->path, c->pid, th->tid, what, strerror((int)-r));
	return 0;
}

/* Its CPU affinity, policy with real-time priority, and nice, where they
 * differ from what the new thread inherited. */
static int setup_sched(struct rctx *c, struct ckpt_tracee *t, const struct user_regs_struct *base,
		       const Storm__Ckpt__Thread *th)
{
	char what[256], list[192];
	unsigned char now[512];
	int rc = 0;
	if (!th->sched)
		return 0; /* an older image */
	long n = syscall(SYS_sched_getaffinity, t->pid, sizeof(now), now);
	size_t len = th->cpus.len < sizeof(now) ? th->cpus.len : sizeof(now);
	if (len && (n != (long)len || memcmp(now, th->cpus.data, len))) {
		ckpt_cpus_list(th->cpus.data, len, list, sizeof(list));
		snprintf(what, sizeof(what), "CPU affinity %s", list);
		if ((rc = ckpt_mem_write(t, c->scratch + 2048, th->cpus.data, len)) ||
		    (rc = sched_call(c, t, base, th, what, SYS_sched_setaffinity, 3, 0, (long)len,
				     (long)(c->scratch + 2048))))
			return rc;
	}
	struct sched_param sp;
	int policy = sched_getscheduler(t->pid);
	if (policy < 0 || sched_getparam(t->pid, &sp) < 0)
		return ckpt_fail(c->err, c->errlen, -errno, "%s: restoring thread %d: reading its "
				 "scheduling: %s", c->path, t->pid, strerror(errno));
	if ((uint32_t)policy != th->policy || (uint32_t)sp.sched_priority != th->rt_priority) {
		int32_t prio = (int32_t)th->rt_priority;
		snprintf(what, sizeof(what), "scheduling policy %u priority %u", th->policy,
			 th->rt_priority);
		if ((rc = ckpt_mem_write(t, c->scratch + 2600, &prio, sizeof(prio))) ||
		    (rc = sched_call(c, t, base, th, what, SYS_sched_setscheduler, 3, 0,
				     (long)th->policy, (long)(c->scratch + 2600))))
			return rc;
	}
	errno = 0;
	int nice = getpriority(PRIO_PROCESS, (id_t)t->pid);
	if (!(nice == -1 && errno) && nice != th->nice) {
		snprintf(what, sizeof(what), "nice %d", th->nice);
		rc = sched_call(c, t, base, th, what, SYS_setpriority, 3, PRIO_PROCESS, 0,
				(long)th->nice);
	}
	return rc;
}

/* What a thread's registers do not hold: its clear_child_tid (the main
 * thread's: the clone3 of the others set theirs), robust futex list,
 * sigaltstack, name and rseq area. */
static int setup_thread(struct rctx *c, struct ckpt_tracee *t, const struct user_regs_struct *base,
			const Storm__Ckpt__Thread *th, int main)
{
	long r;
	int rc;
	if (main) {
		if ((rc = tcall(c, t, base, "set_tid_address", SYS_set_tid_address, &r, 1,
				(long)th->clear_tid, 0, 0, 0)))
			return rc;
		/* glibc's cached tid, where the pid changed */
		int32_t now = (int32_t)r;
		if (th->clear_tid && now != th->tid &&
		    (rc = ckpt_mem_write(t, th->clear_tid, &now, sizeof(now))))
			return ckpt_fail(c->err, c->errlen, rc, "%s: restoring: writing the tid at %#llx: %s",
					 c->path, (unsigned long long)th->clear_tid, strerror(-rc));
	}
	/* none saved: the one the restorer's fork left goes */
	if ((rc = tcall(c, t, base, "set_robust_list", SYS_set_robust_list, NULL, 2,
			(long)th->robust_list, (long)(th->robust_len ? th->robust_len : ROBUST_HEAD_LEN),
			0, 0)))
		return rc;
	if (th->altstack_size) {
		stack_t ss = { .ss_sp = (void *)(uintptr_t)th->altstack_sp,
			       .ss_flags = (int)(th->altstack_flags & ~SS_ONSTACK),
			       .ss_size = th->altstack_size };
		/* refused to a thread running on its alternate stack: ours is not */
		struct user_regs_struct b = *base;
		b.rsp = 0;
		if ((rc = ckpt_mem_write(t, c->scratch + 64, &ss, sizeof(ss))) ||
		    (rc = tcall(c, t, &b, "sigaltstack", SYS_sigaltstack, NULL, 2,
				(long)(c->scratch + 64), 0, 0, 0)))
			return rc;
	}
	if (th->comm[0] && ((rc = ckpt_mem_write(t, c->scratch + 128, th->comm, strlen(th->comm) + 1)) ||
			    (rc = tcall(c, t, base, "prctl(PR_SET_NAME)", SYS_prctl, NULL, 2,
					(long)PR_SET_NAME, (long)(c->scratch + 128), 0, 0))))
		return rc;
	if (th->rseq_addr && (rc = tcall(c, t, base, "rseq", SYS_rseq, NULL, 4, (long)th->rseq_addr,
					 (long)th->rseq_len, 0L, (long)th->rseq_sig)))
		return rc;
	return setup_sched(c, t, base, th);
}

/* Queues saved signals again: to thread t (rt_tgsigqueueinfo) or, shared,
 * to the process (rt_sigqueueinfo). Sent from the thread itself, since only
 * a process may queue itself a siginfo it did not send. Its mask blocks
 * them until its own is set. */
static int queue_pending(struct rctx *c, struct ckpt_tracee *t, const struct user_regs_struct *base,
			 const ProtobufCBinaryData *p, size_t n, int shared)
{
	for (size_t k = 0; k < n; k++) {
		siginfo_t si;
		memcpy(&si, p[k].data, sizeof(si));
		if (!keep_pending(si.si_signo))
			continue;
		int rc = ckpt_mem_write(t, c->scratch + 256, &si, sizeof(si));
		if (!rc && shared)
			rc = tcall(c, t, base, "rt_sigqueueinfo", SYS_rt_sigqueueinfo, NULL, 3, c->pid,
				   si.si_signo, (long)(c->scratch + 256), 0);
		else if (!rc)
			rc = tcall(c, t, base, "rt_tgsigqueueinfo", SYS_rt_tgsigqueueinfo, NULL, 4,
				   c->pid, t->pid, si.si_signo, (long)(c->scratch + 256));
		if (rc)
			return rc;
	}
	return 0;
}

int ckpt_thread_set_state(pid_t tid, const Storm__Ckpt__Thread *t)
{
	struct user_regs_struct regs;
	memcpy(&regs, t->regs.data, sizeof(regs));
	ckpt_restart_fixup(&regs);
	struct iovec xs = { t->xstate.data, t->xstate.len }, fp = { t->fpregs.data, t->fpregs.len };
	if (ptrace(PTRACE_SETREGS, tid, 0, &regs) < 0 ||
	    (t->xstate.len && ptrace(PTRACE_SETREGSET, tid, NT_X86_XSTATE, &xs) < 0) ||
	    (!t->xstate.len && t->fpregs.len && ptrace(PTRACE_SETREGSET, tid, NT_PRFPREG, &fp) < 0) ||
	    ptrace(PTRACE_SETSIGMASK, tid, sizeof(t->sigmask), &t->sigmask) < 0)
		return -errno;
	return 0;
}

int ckpt_threads_restore(struct ckpt_threads *ts, struct ckpt_tracee *main,
			 const struct user_regs_struct *base, const Storm__Ckpt__Meta *m,
			 uint64_t scratch, const struct ckpt_restore_opts *o, const char *path,
			 char *err, size_t errlen)
{
	struct rctx c = { main, base, scratch, main->pid, o, path, err, errlen };
	size_t n = ckpt_meta_nthreads(m);
	Storm__Ckpt__Thread view;
	const Storm__Ckpt__Thread *mt = ckpt_meta_thread(m, 0, &view);
	/* room for all: a thread made is recorded before anything can fail */
	ts->v = calloc(n, sizeof(*ts->v));
	if (!ts->v)
		return -ENOMEM;
	ts->v[ts->n++] = (struct ckpt_thread){ .tid = main->pid, .stopped = 1 };
	int rc = setup_thread(&c, main, base, mt, 1);
	if (!rc && n > 1 && ptrace(PTRACE_SETOPTIONS, main->pid, 0, PTRACE_O_TRACECLONE) < 0)
		rc = ckpt_fail(err, errlen, -errno, "%s: restoring: ptrace options: %s", path,
			       strerror(errno));
	for (size_t i = 1; i < n && !rc; i++) {
		const Storm__Ckpt__Thread *th = m->threads[i];
		pid_t tid = 0;
		if ((rc = make_thread(&c, th, &tid)))
			break;
		struct ckpt_thread *ct = &ts->v[ts->n++];
		*ct = (struct ckpt_thread){ .tid = tid, .stopped = 1 };
		main->others = 1;
		struct ckpt_tracee t = { .pid = tid, .memfd = main->memfd, .gadget = main->gadget };
		struct user_regs_struct tb;
		if (ptrace(PTRACE_GETREGS, tid, 0, &tb) < 0)
			rc = -errno;
		if (!rc && !(rc = setup_thread(&c, &t, &tb, th, 0)) &&
		    !(rc = queue_pending(&c, &t, &tb, th->pending, th->n_pending, 0)) &&
		    (rc = ckpt_thread_set_state(tid, th)))
			rc = ckpt_fail(err, errlen, rc, "%s: restoring thread %d: registers: %s", path,
				       th->tid, strerror(-rc));
		ct->sig = t.pending_sig;
	}
	if (!rc)
		rc = queue_pending(&c, main, base, mt->pending, mt->n_pending, 0);
	if (!rc)
		rc = queue_pending(&c, main, base, m->pending, m->n_pending, 1);
	return rc;
}
