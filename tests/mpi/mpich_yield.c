/* LD_PRELOAD for MPICH ranks in run.sh: Debian's MPICH 4.0.2 (ch4:ucx) polls
 * without ever yielding the CPU and has no setting to make it (the ch3
 * MPIR_CVAR_POLLS_BEFORE_YIELD is not read by ch4). With more ranks than
 * cores every blocking call then waits for the scheduler's tick. This makes
 * an idle poll of UCX's progress engine yield: what MPICH computes is
 * unchanged, only how it waits. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sched.h>

typedef struct ucp_worker *ucp_worker_h;

unsigned ucp_worker_progress(ucp_worker_h worker)
{
	static unsigned (*real)(ucp_worker_h);
	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "ucp_worker_progress");
	unsigned events = real(worker);
	if (events == 0)
		sched_yield();
	return events;
}
