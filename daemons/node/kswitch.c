/* /dev/storm (kernel/storm.ko, kernel/uapi/linux/storm.h): when the device
 * is there, the module makes the switches at the schedule's deadlines, from
 * an hrtimer, strictly (it continues the incoming job once every outgoing
 * task is off the CPU); stormnd registers each job (its process group, and
 * its cgroup.freeze with switch = freezer), pushes the schedule it holds at
 * each strobe, and reads the ring of switch records for its trace and the
 * MM's metrics. A job is registered by its own id (a step's full id, so
 * that the allocation's script and each of its steps have one each) and
 * runs when an entry names its allocation's, which is what strobes name. A
 * job being checkpointed is held (STORM_IOC_HOLD) before the checkpoint
 * stops it, and released once its images are written: entries pushed
 * before the checkpoint began would otherwise continue it mid-dump. The
 * hold, not dropping its entries, is what is race-free: a switch already
 * past its deadline, waiting for the outgoing tasks, has picked the job to
 * continue before any push could take the entry back, and the module
 * checks the hold right before each continue, under the lock the hold
 * takes. Without the device timed.c and gang.c do the same in user
 * space: the jobs see no difference. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include "kswitch_map.h"
#include "nd.h"

struct nd_kswitch {
	int fd;
	const uint8_t *ring;
	size_t ring_len;
	uint64_t tail;          /* records read */
	uint64_t running;       /* the job the last record continued */
	bool released;          /* a job was released: it waits for an entry */
};

void nd_kswitch_open(struct nd *nd)
{
	nd->ks = NULL;
	int fd = open(STORM_DEVICE, O_RDWR | O_CLOEXEC);
	if (fd < 0) {
		if (errno != ENOENT && errno != ENODEV && errno != ENXIO)
			slog("%s: %s; switching in user space", STORM_DEVICE, strerror(errno));
		return;
	}
	struct storm_info info;
	if (ioctl(fd, STORM_IOC_QUERY, &info) < 0 || info.abi_version != STORM_ABI_VERSION) {
		slog("%s: ABI %u, stormnd speaks %d; switching in user space", STORM_DEVICE,
		     info.abi_version, STORM_ABI_VERSION);
		close(fd);
		return;
	}
	void *ring = mmap(NULL, info.ring_bytes, PROT_READ, MAP_SHARED, fd, STORM_MMAP_RING);
	struct nd_kswitch *ks = calloc(1, sizeof(*ks));
	if (ring == MAP_FAILED || !ks) {
		slog("%s: cannot map its ring (%s); switching in user space", STORM_DEVICE,
		     strerror(errno));
		if (ring != MAP_FAILED)
			munmap(ring, info.ring_bytes);
		free(ks);
		close(fd);
		return;
	}
	ks->fd = fd;
	ks->ring = ring;
	ks->ring_len = info.ring_bytes;
	ks->tail = info.switches;
	ks->running = info.running_job;
	nd->ks = ks;
	slog("switching through %s (storm.ko, %u records)", STORM_DEVICE, info.ring_records);
}

void nd_kswitch_close(struct nd *nd)
{
	struct nd_kswitch *ks = nd->ks;
	if (!ks)
		return;
	munmap((void *)ks->ring, ks->ring_len);
	close(ks->fd);
	free(ks);
	nd->ks = NULL;
}

static void register_jobs(struct nd *nd)
{
	for (struct nd_job *j = nd->jobs; j; j = j->next) {
		/* one under checkpoint is registered once it is released: the
		 * module must not touch it meanwhile */
		if (j->kregistered || j->pgid <= 0 || j->ckpt_busy)
			continue;
		/* its own id, unique here; it runs when an entry names its
		 * allocation (a strobe names the allocation a step runs in) */
		struct storm_job_reg reg = { .job_id = j->id,
					     .pgid = j->pgid,
					     .freeze_fd = j->freeze_fd,
					     .run_id = jobid_alloc(j->id) };
		if (ioctl(nd->ks->fd, STORM_IOC_REGISTER, &reg) < 0)
			slog("job %" PRIu64 ": %s cannot register pgid %d: %s", j->id,
			     STORM_DEVICE, (int)j->pgid, strerror(errno));
		else
			j->kregistered = true;
	}
}

void nd_kswitch_job_end(struct nd *nd, struct nd_job *job)
{
	if (!nd->ks || !job->kregistered)
		return;
	__u64 id = job->id; /* its own: another step of its allocation stays */
	if (ioctl(nd->ks->fd, STORM_IOC_UNREGISTER, &id) < 0)
		slog("job %" PRIu64 ": %s cannot unregister it: %s", job->id, STORM_DEVICE,
		     strerror(errno));
	job->kregistered = false;
}

void nd_kswitch_hold(struct nd *nd, struct nd_job *job, bool hold)
{
	if (!nd->ks || !job->kregistered)
		return;
	__u64 id = job->id;
	if (ioctl(nd->ks->fd, hold ? STORM_IOC_HOLD : STORM_IOC_RELEASE, &id) < 0)
		slog("job %" PRIu64 ": %s cannot %s it: %s", job->id, STORM_DEVICE,
		     hold ? "hold" : "release", strerror(errno));
	if (!hold)
		nd->ks->released = true;
}

/* The module's records since the last look: the node's trace lines and
 * switch delays, and which job runs now. */
static void drain_ring(struct nd *nd)
{
	struct nd_kswitch *ks = nd->ks;
	const struct storm_ring_hdr *h = (const void *)ks->ring;
	uint64_t head = __atomic_load_n(&h->head, __ATOMIC_ACQUIRE);
	if (head - ks->tail > h->records)
		ks->tail = head - h->records; /* lost the oldest */
	for (; ks->tail < head; ks->tail++) {
		struct storm_record r;
		memcpy(&r, ks->ring + h->rec_off + (ks->tail % h->records) * h->record_bytes,
		       sizeof(r));
		if (r.seq != ks->tail)
			continue; /* overwritten while we read */
		ks->running = r.in_job;
		struct nd_gang_sw sw = { .off_ns = r.off_ns - r.start_ns,
					 .waited = r.out_tasks > 0,
					 .timeout = (r.flags & STORM_REC_TIMEOUT) != 0 };
		if (nd->nsw == ND_SW_KEPT) {
			memmove(nd->sw, nd->sw + 1, sizeof(nd->sw[0]) * (ND_SW_KEPT - 1));
			nd->nsw--;
		}
		nd->sw[nd->nsw].switches = nd->switches;
		nd->sw[nd->nsw].delay_us = (uint32_t)((r.cont_ns - r.deadline_ns) / 1000);
		nd->sw[nd->nsw].off_us = (uint32_t)(sw.off_ns / 1000);
		nd->sw[nd->nsw++].timeout = sw.timeout;
		if (nd->trace)
			fprintf(nd->trace,
				"switch %" PRIu64 " %" PRIu64 " %" PRIu64 " %" PRIu64 " 1 %" PRIu64
				" %d\n",
				nd->switches, (uint64_t)r.deadline_ns, (uint64_t)r.start_ns,
				(uint64_t)r.cont_ns, sw.off_ns, sw.timeout);
	}
	nd_gang_mark(nd, ks->running);
}

void nd_kswitch_push(struct nd *nd)
{
	struct nd_kswitch *ks = nd->ks;
	register_jobs(nd);
	drain_ring(nd);
	struct storm_entry e[STROBE_AHEAD_MAX + 1];
	/* a released job is stopped though its allocation may be the one
	 * running: the entry due now is pushed again, to continue it */
	unsigned n = kswitch_entries(&nd->ahead, clock_mono_ns(), ks->released ? 0 : ks->running,
				     e, STROBE_AHEAD_MAX + 1);
	ks->released = false;
	struct storm_push p = { .entries = (uintptr_t)e, .count = n, .flags = STORM_PUSH_REPLACE };
	if (ioctl(ks->fd, STORM_IOC_PUSH, &p) < 0)
		slog("%s: pushing %u entries: %s", STORM_DEVICE, n, strerror(errno));
}
