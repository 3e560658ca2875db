// SPDX-License-Identifier: GPL-2.0
/* storm.ko: the gang switch in the kernel. stormnd hands the schedule ahead
 * (which job runs from which CLOCK_MONOTONIC deadline); an hrtimer applies
 * each switch at its deadline, a work item waits until every outgoing task is
 * off the CPU before the incoming job is continued (strict: two jobs never run
 * at once), and each switch is recorded in a ring stormnd maps. The slice page
 * shows ranks which slice and job are current. ABI: uapi/linux/storm.h. */
#include <linux/capability.h>
#include <linux/delay.h>
#include <linux/file.h>
#include <linux/fs.h>
#include <linux/hrtimer.h>
#include <linux/ktime.h>
#include <linux/miscdevice.h>
#include <linux/mm.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/pid.h>
#include <linux/sched.h>
#include <linux/sched/signal.h>
#include <linux/slab.h>
#include <linux/spinlock.h>
#include <linux/uaccess.h>
#include <linux/version.h>
#include <linux/vmalloc.h>
#include <linux/workqueue.h>

#include "storm_sched.h"

static unsigned int bound_us = 5000;
module_param(bound_us, uint, 0644);
MODULE_PARM_DESC(bound_us, "how long a switch waits for its outgoing tasks to leave the CPU (us)");

#define RING_RECORDS 512 /* a power of two: 5 s of 10 ms slices */

struct storm_job {
	u64 id;              /* the key: a step's own id */
	u64 run_id;          /* what entries name it by: its allocation's */
	struct pid *pgrp;
	struct file *freeze; /* cgroup.freeze, or NULL: signals */
	bool running;        /* not stopped by the module (a new job runs) */
	bool held;           /* STORM_IOC_HOLD: no switch touches it */
};

struct storm_switch {
	struct storm_entry e;
	u64 start_ns;
	u32 flags;
};

/* The jobs a switch acts on: references taken under the lock, so that the
 * waits and the freezes run without it. */
struct storm_set {
	int n;
	struct pid *pgrp[STORM_JOBS_MAX];
	struct file *fz[STORM_JOBS_MAX];
	u64 id[STORM_JOBS_MAX];
};

static struct {
	spinlock_t lock; /* everything below but ctl_lock's; taken in the hrtimer */
	struct storm_queue queue;
	struct storm_job jobs[STORM_JOBS_MAX];
	u32 njobs;
	u64 running_job;
	bool busy; /* a switch is between its start and its record */
	bool pending_valid;
	struct storm_switch cur, pending;
	u64 dropped;
	struct hrtimer timer;
	struct work_struct work;
	struct storm_ring_hdr *ring;
	size_t ring_bytes;
	struct storm_slice_page *slice;
	/* Taken around every stop and continue a switch's work makes (they
	 * may sleep: cgroup.freeze) and by STORM_IOC_HOLD: a hold that returns
	 * has either seen the work's last action on the job, or the work sees
	 * the hold before acting. The spinlock alone cannot do it, as the work
	 * picks its jobs under it, then waits, then acts. */
	struct mutex act_lock;
	struct storm_set in_set, out_set; /* the work's (one runs at a time) */
	bool closing; /* the controller is going: a switch stops waiting */
	struct mutex ctl_lock; /* the controller's open and release */
	struct file *controller;
} st;

static struct storm_record *ring_rec(u64 seq)
{
	return (struct storm_record *)((char *)st.ring + st.ring->rec_off) +
	       storm_ring_slot(seq, RING_RECORDS);
}

static struct storm_job *job_find(u64 id)
{
	for (u32 i = 0; i < st.njobs; i++)
		if (st.jobs[i].id == id)
			return &st.jobs[i];
	return NULL;
}

/* Off the CPU: not runnable, not being woken, not on a runqueue nor a CPU. */
static bool task_off_cpu(struct task_struct *t)
{
	unsigned int state = READ_ONCE(t->__state);
	return state != TASK_RUNNING && state != TASK_WAKING && !READ_ONCE(t->on_rq) &&
	       !READ_ONCE(t->on_cpu);
}

/* Walks a process group's threads: how many, their run time, all off CPU? */
static bool pgrp_scan(struct pid *pgrp, u32 *tasks, u64 *cpu_ns)
{
	struct task_struct *p, *t;
	bool off = true;

	rcu_read_lock();
	do_each_pid_task(pgrp, PIDTYPE_PGID, p) {
		for_each_thread(p, t) {
			(*tasks)++;
			*cpu_ns += READ_ONCE(t->se.sum_exec_runtime);
			if (!task_off_cpu(t))
				off = false;
		}
	} while_each_pid_task(pgrp, PIDTYPE_PGID, p);
	rcu_read_unlock();
	return off;
}

static void write_freeze(struct file *f, bool freeze, u64 job)
{
	loff_t pos = 0;
	ssize_t n = kernel_write(f, freeze ? "1" : "0", 1, &pos);

	if (n != 1)
		pr_warn_ratelimited("storm: job %llu: cannot %s its cgroup: error %zd\n", job,
				    freeze ? "freeze" : "thaw", n);
}

/* In the hrtimer (or at the end of the previous switch): process groups are
 * told to stop at once; cgroups are frozen from the work, which may sleep. */
static void switch_begin_locked(const struct storm_switch *sw)
{
	for (u32 i = 0; i < st.njobs; i++) {
		struct storm_job *j = &st.jobs[i];
		if (j->run_id != sw->e.job_id && j->running && !j->freeze && !j->held)
			kill_pgrp(j->pgrp, SIGSTOP, 1);
	}
}

/* Under act_lock: is the job picked (by key, with pgrp) still registered and
 * not held? An unregistered job is left as it is, a held one to its holder. */
static bool job_actable(u64 id, struct pid *pgrp)
{
	struct storm_job *j;
	unsigned long fl;
	bool ok;

	spin_lock_irqsave(&st.lock, fl);
	j = job_find(id);
	ok = j && j->pgrp == pgrp && !j->held;
	spin_unlock_irqrestore(&st.lock, fl);
	return ok;
}

static void job_act(struct pid *pgrp, struct file *fz, u64 id, bool stop)
{
	if (fz)
		write_freeze(fz, stop, id);
	else
		kill_pgrp(pgrp, stop ? SIGSTOP : SIGCONT, 1);
}

static void slice_publish_locked(const struct storm_switch *sw, u64 slice, u64 cont_ns)
{
	const struct storm_entry *next = storm_queue_peek(&st.queue);
	struct storm_slice_page *s = st.slice;

	WRITE_ONCE(s->seq, s->seq + 1);
	smp_wmb();
	s->slice = slice;
	s->job_id = sw->e.job_id;
	s->row = sw->e.row;
	s->start_ns = cont_ns;
	s->deadline_ns = sw->e.deadline_ns;
	s->next_ns = next ? next->deadline_ns : 0;
	smp_wmb();
	WRITE_ONCE(s->seq, s->seq + 1);
}

static void set_add(struct storm_set *s, const struct storm_job *j)
{
	s->pgrp[s->n] = get_pid(j->pgrp);
	s->fz[s->n] = j->freeze ? get_file(j->freeze) : NULL;
	s->id[s->n++] = j->id;
}

static void set_put(struct storm_set *s)
{
	for (int k = 0; k < s->n; k++) {
		put_pid(s->pgrp[k]);
		if (s->fz[k])
			fput(s->fz[k]);
	}
	s->n = 0;
}

/* Every outgoing task off the CPU, or the bound passed (or the controller
 * is closing): sets off_ns, out_tasks, out_cpu and DONE or TIMEOUT. */
static void wait_off(const struct storm_set *out, struct storm_switch *sw, u64 *off_ns,
		     u32 *out_tasks, u64 *out_cpu)
{
	u64 limit = sw->start_ns + (u64)READ_ONCE(bound_us) * NSEC_PER_USEC;

	for (;;) {
		bool off = true;
		*out_tasks = 0;
		*out_cpu = 0;
		for (int k = 0; k < out->n; k++)
			off &= pgrp_scan(out->pgrp[k], out_tasks, out_cpu);
		*off_ns = ktime_get_ns();
		if (off) {
			sw->flags |= STORM_REC_DONE;
			return;
		}
		if (*off_ns >= limit || READ_ONCE(st.closing)) {
			sw->flags |= STORM_REC_TIMEOUT;
			return;
		}
		usleep_range(20, 50);
	}
}

static void storm_work_fn(struct work_struct *w)
{
	struct storm_set *in = &st.in_set, *out = &st.out_set;
	struct storm_switch sw;
	struct storm_record *rec;
	unsigned long fl;
	u64 out_job, head, off_ns, cont_ns, out_cpu, in_cpu;
	u32 out_tasks, in_tasks;
	int k;

again:
	spin_lock_irqsave(&st.lock, fl);
	sw = st.cur;
	out_job = st.running_job;
	for (u32 i = 0; i < st.njobs; i++) {
		struct storm_job *j = &st.jobs[i];
		if (j->held) {
			if (j->run_id == sw.e.job_id)
				sw.flags |= STORM_REC_HELD;
		} else if (j->run_id == sw.e.job_id) {
			set_add(in, j);
		} else if (j->running) {
			set_add(out, j);
			j->running = false;
		}
	}
	spin_unlock_irqrestore(&st.lock, fl);

	/* a job registered since the hrtimer ran is stopped here too (twice is
	 * harmless); one held since it was picked is its holder's */
	mutex_lock(&st.act_lock);
	for (k = 0; k < out->n; k++)
		if (job_actable(out->id[k], out->pgrp[k]))
			job_act(out->pgrp[k], out->fz[k], out->id[k], true);
	mutex_unlock(&st.act_lock);

	wait_off(out, &sw, &off_ns, &out_tasks, &out_cpu);

	/* a hold that came during the wait keeps its job stopped: checked
	 * under act_lock right before each continue */
	in_tasks = 0;
	in_cpu = 0;
	mutex_lock(&st.act_lock);
	for (k = 0; k < in->n; k++) {
		if (!job_actable(in->id[k], in->pgrp[k])) {
			sw.flags |= STORM_REC_HELD;
			continue;
		}
		pgrp_scan(in->pgrp[k], &in_tasks, &in_cpu);
		job_act(in->pgrp[k], in->fz[k], in->id[k], false);
		spin_lock_irqsave(&st.lock, fl);
		struct storm_job *ij = job_find(in->id[k]);
		if (ij)
			ij->running = true;
		spin_unlock_irqrestore(&st.lock, fl);
	}
	mutex_unlock(&st.act_lock);
	cont_ns = ktime_get_ns();
	set_put(out);
	set_put(in);

	spin_lock_irqsave(&st.lock, fl);
	st.running_job = sw.e.job_id;
	head = st.ring->head;
	rec = ring_rec(head);
	rec->slice = head + 1;
	rec->deadline_ns = sw.e.deadline_ns;
	rec->start_ns = sw.start_ns;
	rec->off_ns = off_ns;
	rec->cont_ns = cont_ns;
	rec->out_job = out_job;
	rec->in_job = sw.e.job_id;
	rec->out_cpu_ns = out_cpu;
	rec->in_cpu_ns = in_cpu;
	rec->out_tasks = out_tasks;
	rec->in_tasks = in_tasks;
	rec->row = sw.e.row;
	rec->flags = sw.flags;
	smp_wmb();
	WRITE_ONCE(rec->seq, head);
	smp_store_release(&st.ring->head, head + 1);
	slice_publish_locked(&sw, head + 1, cont_ns);
	if (st.pending_valid) {
		st.cur = st.pending;
		st.cur.start_ns = ktime_get_ns();
		st.cur.flags |= STORM_REC_LATE;
		st.pending_valid = false;
		switch_begin_locked(&st.cur);
		spin_unlock_irqrestore(&st.lock, fl);
		goto again;
	}
	st.busy = false;
	spin_unlock_irqrestore(&st.lock, fl);
}

static enum hrtimer_restart storm_timer_fn(struct hrtimer *t)
{
	enum hrtimer_restart ret = HRTIMER_NORESTART;
	const struct storm_entry *next;
	u64 now = ktime_get_ns();
	struct storm_switch sw = { 0 };
	unsigned long fl;

	spin_lock_irqsave(&st.lock, fl);
	while ((next = storm_queue_peek(&st.queue)) && next->deadline_ns <= now) {
		storm_queue_pop(&st.queue, &sw.e);
		sw.start_ns = now;
		if (!st.busy) {
			st.busy = true;
			st.cur = sw;
			switch_begin_locked(&sw);
			queue_work(system_highpri_wq, &st.work);
		} else {
			/* the previous switch is still waiting: this one follows it, and
			 * supersedes one already waiting */
			if (st.pending_valid)
				st.dropped++;
			st.pending = sw;
			st.pending_valid = true;
		}
	}
	if (next) {
		hrtimer_set_expires(t, ns_to_ktime(next->deadline_ns));
		ret = HRTIMER_RESTART;
	}
	spin_unlock_irqrestore(&st.lock, fl);
	return ret;
}

static long ioc_register(void __user *arg)
{
	struct storm_job_reg reg;
	struct pid *pgrp;
	struct file *fz = NULL;
	unsigned long fl;
	long rc = 0;

	if (copy_from_user(&reg, arg, sizeof(reg)))
		return -EFAULT;
	if (!reg.job_id || reg.pgid <= 0)
		return -EINVAL;
	if (!reg.run_id)
		reg.run_id = reg.job_id;
	pgrp = find_get_pid(reg.pgid);
	if (!pgrp)
		return -ESRCH;
	rcu_read_lock();
	if (!pid_task(pgrp, PIDTYPE_PGID))
		rc = -ESRCH; /* a pid, but no process group leads by it */
	rcu_read_unlock();
	if (!rc && reg.freeze_fd >= 0) {
		fz = fget(reg.freeze_fd);
		if (!fz || !(fz->f_mode & FMODE_WRITE))
			rc = -EBADF;
	}
	if (!rc) {
		spin_lock_irqsave(&st.lock, fl);
		if (job_find(reg.job_id)) {
			rc = -EEXIST;
		} else if (st.njobs == STORM_JOBS_MAX) {
			rc = -ENOSPC;
		} else {
			st.jobs[st.njobs++] = (struct storm_job){ .id = reg.job_id,
								  .run_id = reg.run_id,
								  .pgrp = pgrp,
								  .freeze = fz,
								  .running = true };
			pgrp = NULL;
			fz = NULL;
		}
		spin_unlock_irqrestore(&st.lock, fl);
	}
	put_pid(pgrp);
	if (fz)
		fput(fz);
	return rc;
}

static long ioc_unregister(void __user *arg)
{
	struct storm_job gone = { 0 };
	unsigned long fl;
	struct storm_job *j;
	u64 id;

	if (copy_from_user(&id, arg, sizeof(id)))
		return -EFAULT;
	spin_lock_irqsave(&st.lock, fl);
	j = job_find(id);
	if (j) {
		gone = *j;
		*j = st.jobs[--st.njobs];
	}
	spin_unlock_irqrestore(&st.lock, fl);
	if (!j)
		return -ENOENT;
	put_pid(gone.pgrp);
	if (gone.freeze)
		fput(gone.freeze);
	return 0;
}

/* Hold: under act_lock, so that a switch's work that picked the job either
 * acted on it before (and the caller's own stop comes after) or sees the
 * hold. The job counts as stopped from then on: its holder stops it, and a
 * release hands it back so (the next entry naming it continues it). */
static long ioc_hold(void __user *arg, bool hold)
{
	struct storm_job *j;
	unsigned long fl;
	u64 id;

	if (copy_from_user(&id, arg, sizeof(id)))
		return -EFAULT;
	if (hold)
		mutex_lock(&st.act_lock);
	spin_lock_irqsave(&st.lock, fl);
	j = job_find(id);
	if (j) {
		j->held = hold;
		j->running = false;
	}
	spin_unlock_irqrestore(&st.lock, fl);
	if (hold)
		mutex_unlock(&st.act_lock);
	return j ? 0 : -ENOENT;
}

static long ioc_push(void __user *arg)
{
	struct storm_push p;
	struct storm_entry *e;
	unsigned long fl;
	u64 first = 0;
	long rc;

	if (copy_from_user(&p, arg, sizeof(p)))
		return -EFAULT;
	if (p.flags & ~STORM_PUSH_REPLACE || p.count > STORM_QUEUE_MAX)
		return -EINVAL;
	e = kvmalloc_array(p.count ? p.count : 1, sizeof(*e), GFP_KERNEL);
	if (!e)
		return -ENOMEM;
	if (copy_from_user(e, u64_to_user_ptr(p.entries), (size_t)p.count * sizeof(*e))) {
		kvfree(e);
		return -EFAULT;
	}
	spin_lock_irqsave(&st.lock, fl);
	if (p.flags & STORM_PUSH_REPLACE)
		storm_queue_init(&st.queue);
	rc = storm_queue_push(&st.queue, e, p.count);
	if (storm_queue_peek(&st.queue))
		first = storm_queue_peek(&st.queue)->deadline_ns;
	spin_unlock_irqrestore(&st.lock, fl);
	kvfree(e);
	/* an early expiry finds nothing due and re-arms for the head */
	if (first)
		hrtimer_start(&st.timer, ns_to_ktime(first), HRTIMER_MODE_ABS);
	return rc;
}

static long ioc_query(void __user *arg)
{
	struct storm_info in = { .abi_version = STORM_ABI_VERSION,
				 .ring_records = RING_RECORDS,
				 .ring_bytes = (u32)st.ring_bytes,
				 .record_bytes = sizeof(struct storm_record) };
	unsigned long fl;

	spin_lock_irqsave(&st.lock, fl);
	in.jobs = st.njobs;
	in.queued = st.queue.count;
	in.running_job = st.running_job;
	in.switches = st.ring->head;
	in.dropped = st.dropped;
	spin_unlock_irqrestore(&st.lock, fl);
	in.bound_ns = (u64)READ_ONCE(bound_us) * NSEC_PER_USEC;
	return copy_to_user(arg, &in, sizeof(in)) ? -EFAULT : 0;
}

static long storm_ioctl(struct file *f, unsigned int cmd, unsigned long arg)
{
	void __user *p = (void __user *)arg;

	if (cmd == STORM_IOC_QUERY)
		return ioc_query(p);
	if (f != READ_ONCE(st.controller))
		return -EPERM;
	switch (cmd) {
	case STORM_IOC_REGISTER:
		return ioc_register(p);
	case STORM_IOC_UNREGISTER:
		return ioc_unregister(p);
	case STORM_IOC_PUSH:
		return ioc_push(p);
	case STORM_IOC_HOLD:
		return ioc_hold(p, true);
	case STORM_IOC_RELEASE:
		return ioc_hold(p, false);
	}
	return -ENOTTY;
}

static int storm_open(struct inode *ino, struct file *f)
{
	int rc = 0;

	if (!(f->f_mode & FMODE_WRITE))
		return 0;
	if (!capable(CAP_SYS_ADMIN))
		return -EPERM;
	mutex_lock(&st.ctl_lock);
	if (st.controller)
		rc = -EBUSY;
	else
		WRITE_ONCE(st.controller, f);
	mutex_unlock(&st.ctl_lock);
	return rc;
}

/* The controller is gone: the schedule stops, and every job it left stopped
 * is continued (a forgotten frozen job could never be recovered). */
static int storm_release(struct inode *ino, struct file *f)
{
	struct storm_job jobs[STORM_JOBS_MAX];
	unsigned long fl;
	u32 n;

	if (f != st.controller)
		return 0;
	mutex_lock(&st.ctl_lock);
	spin_lock_irqsave(&st.lock, fl);
	storm_queue_init(&st.queue);
	st.pending_valid = false;
	WRITE_ONCE(st.closing, true); /* a switch waiting for its bound ends now */
	spin_unlock_irqrestore(&st.lock, fl);
	hrtimer_cancel(&st.timer);
	flush_work(&st.work);
	spin_lock_irqsave(&st.lock, fl);
	st.closing = false;
	n = st.njobs;
	memcpy(jobs, st.jobs, n * sizeof(jobs[0]));
	st.njobs = 0;
	st.running_job = 0;
	spin_unlock_irqrestore(&st.lock, fl);
	for (u32 i = 0; i < n; i++) {
		if (!jobs[i].running) {
			if (jobs[i].freeze)
				write_freeze(jobs[i].freeze, false, jobs[i].id);
			/* a held job was stopped by its holder: by signal */
			if (!jobs[i].freeze || jobs[i].held)
				kill_pgrp(jobs[i].pgrp, SIGCONT, 1);
		}
		put_pid(jobs[i].pgrp);
		if (jobs[i].freeze)
			fput(jobs[i].freeze);
	}
	WRITE_ONCE(st.controller, NULL);
	mutex_unlock(&st.ctl_lock);
	return 0;
}

static int storm_mmap(struct file *f, struct vm_area_struct *vma)
{
	u64 off = (u64)vma->vm_pgoff << PAGE_SHIFT;
	unsigned long len = vma->vm_end - vma->vm_start;

	if (vma->vm_flags & VM_WRITE)
		return -EPERM;
#if LINUX_VERSION_CODE >= KERNEL_VERSION(6, 3, 0)
	vm_flags_clear(vma, VM_MAYWRITE);
#else
	vma->vm_flags &= ~VM_MAYWRITE;
#endif
	if (off == STORM_MMAP_RING && len <= st.ring_bytes)
		return remap_vmalloc_range(vma, st.ring, 0);
	if (off == STORM_MMAP_SLICE && len <= PAGE_SIZE)
		return remap_vmalloc_range(vma, st.slice, 0);
	return -EINVAL;
}

static const struct file_operations storm_fops = {
	.owner = THIS_MODULE,
	.open = storm_open,
	.release = storm_release,
	.unlocked_ioctl = storm_ioctl,
	.compat_ioctl = compat_ptr_ioctl,
	.mmap = storm_mmap,
};

static struct miscdevice storm_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "storm",
	.fops = &storm_fops,
	.mode = 0644, /* ranks map the slice page read-only */
};

static int __init storm_init(void)
{
	size_t rec_off = ALIGN(sizeof(struct storm_ring_hdr), 64);
	int rc;

	BUILD_BUG_ON(RING_RECORDS & (RING_RECORDS - 1));
	BUILD_BUG_ON(sizeof(struct storm_slice_page) > PAGE_SIZE);
	spin_lock_init(&st.lock);
	mutex_init(&st.ctl_lock);
	mutex_init(&st.act_lock);
	storm_queue_init(&st.queue);
	INIT_WORK(&st.work, storm_work_fn);
	hrtimer_init(&st.timer, CLOCK_MONOTONIC, HRTIMER_MODE_ABS);
	st.timer.function = storm_timer_fn;
	st.ring_bytes = PAGE_ALIGN(rec_off + RING_RECORDS * sizeof(struct storm_record));
	st.ring = vmalloc_user(st.ring_bytes);
	st.slice = vmalloc_user(PAGE_SIZE);
	if (!st.ring || !st.slice) {
		rc = -ENOMEM;
		goto fail;
	}
	st.ring->abi_version = STORM_ABI_VERSION;
	st.ring->records = RING_RECORDS;
	st.ring->record_bytes = sizeof(struct storm_record);
	st.ring->rec_off = rec_off;
	st.slice->abi_version = STORM_ABI_VERSION;
	rc = misc_register(&storm_misc);
	if (rc)
		goto fail;
	pr_info("storm: /dev/storm ready (ABI %d, %d records, bound %u us)\n", STORM_ABI_VERSION,
		RING_RECORDS, bound_us);
	return 0;
fail:
	vfree(st.ring);
	vfree(st.slice);
	return rc;
}

static void __exit storm_exit(void)
{
	misc_deregister(&storm_misc);
	hrtimer_cancel(&st.timer);
	cancel_work_sync(&st.work);
	vfree(st.ring);
	vfree(st.slice);
}

module_init(storm_init);
module_exit(storm_exit);
MODULE_LICENSE("GPL");
MODULE_DESCRIPTION("storm: time-triggered strict gang switch");
