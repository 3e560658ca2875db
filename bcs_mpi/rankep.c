/* A rank's own endpoint, for BCS-MPI messages between nodes: the bytes go
 * from the sending rank's endpoint into the receiving rank's pool, while
 * descriptors, matching and grants stay between the daemons (chan.h,
 * "Across nodes, rank to rank"; docs/design/bcs-mpi.md). Below mpi.c: it
 * calls nothing else of the library, only the network layer's small
 * object (net_abstraction/sn_ep.h), the one place that calls libfabric.
 *
 * The providers storm runs on place a write into a process only while
 * that process drives its endpoint, so a rank with an expectation or a
 * write under way polls its endpoint where it would sleep on its futex
 * (bcs_ep_busy, bcs_ep_nap); the daemon grants this path only to a
 * receiver that waits in MPI. */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "bcs.h"
#include "chan.h"
#include "sn_ep.h"

/* the endpoint's functions, from libbcsmpi_ep.so (loaded only when the
 * cluster has rank writes on: libfabric's dependencies, libpsm2 and
 * libinfinipath, take SIGSEGV over in their constructors) */
static struct {
	int (*open)(const char *, const char *, size_t, struct sn_ep **, char *, size_t);
	void (*close)(struct sn_ep *);
	void *(*pool)(const struct sn_ep *);
	size_t (*pool_size)(const struct sn_ep *);
	size_t (*addr)(const struct sn_ep *, void *);
	int (*write)(struct sn_ep *, const void *, size_t, const void *, size_t, uint64_t,
		     uint64_t, void *);
	int (*poll)(struct sn_ep *, struct sn_ep_event *, int);
	int (*wait_fd)(const struct sn_ep *);
	unsigned (*outstanding)(const struct sn_ep *);
} f;

#define SYM(field, name) (*(void **)&f.field = dlsym(h, name))

/* links the network layer's fopen (kallsyms.c) into a program that links
 * this library statically too: libfabric, loaded with the endpoint, scans
 * /proc/kallsyms without it */
__attribute__((used)) static unsigned *const kallsyms_linked = &sn_kallsyms_refused;

/* The program's signal handlers are kept across loading libfabric:
 * its dependencies (libinfinipath, libpsm2) install their own for SIGSEGV,
 * SIGTERM and more in their constructors, which print a backtrace and exit
 * 1, so a rank that crashed or was stopped by a time limit would end with
 * another status than the one its signal gives */
static struct sigaction signals_were[NSIG];

static void signals_save(void)
{
	for (int sig = 1; sig < NSIG; sig++)
		sigaction(sig, NULL, &signals_were[sig]);
}

static void signals_restore(void)
{
	for (int sig = 1; sig < NSIG; sig++) {
		struct sigaction now;
		if (sigaction(sig, NULL, &now) == 0 &&
		    now.sa_handler != signals_were[sig].sa_handler)
			sigaction(sig, &signals_were[sig], NULL);
	}
}

static void *dlopen_keeping_signals(const char *path)
{
	signals_save();
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	signals_restore();
	return h;
}

/* libbcsmpi_ep.so beside this library (or on the loader's path) */
static bool load(char *why, size_t len)
{
	if (f.open)
		return true;
	Dl_info di;
	char path[PATH_MAX];
	void *h = NULL;
	if (dladdr((void *)bcs_ep_init, &di) && di.dli_fname && strrchr(di.dli_fname, '/')) {
		int n = (int)(strrchr(di.dli_fname, '/') - di.dli_fname);
		snprintf(path, sizeof(path), "%.*s/libbcsmpi_ep.so", n, di.dli_fname);
		h = dlopen_keeping_signals(path);
	}
	if (!h)
		h = dlopen_keeping_signals("libbcsmpi_ep.so");
	if (!h || !SYM(open, "sn_ep_open") || !SYM(close, "sn_ep_close") ||
	    !SYM(pool, "sn_ep_pool") || !SYM(pool_size, "sn_ep_pool_size") ||
	    !SYM(addr, "sn_ep_addr") || !SYM(write, "sn_ep_write") || !SYM(poll, "sn_ep_poll") ||
	    !SYM(wait_fd, "sn_ep_wait_fd") || !SYM(outstanding, "sn_ep_outstanding")) {
		snprintf(why, len, "libbcsmpi_ep.so: %s", dlerror());
		f.open = NULL;
		return false;
	}
	return true;
}

static struct {
	struct bcs_area *a;
	int rank;
	char prov[64];
	char src[48];    /* the address to open at: our daemon's */
	size_t pool;
	struct sn_ep *ep;
	uint32_t seen;   /* ep_posted as last looked at */
	unsigned taken;  /* expectations taken, not done */
	/* a write order the provider could not take yet (its queue full, or
	 * the connection to the peer still being made, which only driving
	 * the endpoint moves on): tried again at every look, polling */
	bool retry;
	bool failed;     /* opening failed: said once, the daemons move the data */
	bool opened;     /* opened once (bcs_ep_want): opened again after a checkpoint */
	/* the endpoint is the program's thread's inside MPI calls and the
	 * closer's when a checkpoint asks for it: a rank that computes
	 * outside MPI then makes no call that could close it */
	pthread_mutex_t lock;
	bool closer;     /* the closer thread runs */
} e = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void publish(void)
{
	struct bcs_area *a = e.a;
	a->ep_blen = (uint32_t)f.addr(e.ep, a->ep_blob);
	a->ep_pool = f.pool_size(e.ep);
	__atomic_store_n(&a->ep_state, BCS_EP_OPEN, __ATOMIC_RELEASE);
}

static void ep_open(void)
{
	char why[200] = "";
	bool opened = false;
	if (!e.failed && load(why, sizeof(why))) {
		uint32_t was = __atomic_load_n(&e.a->ep_state, __ATOMIC_ACQUIRE);
		__atomic_store_n(&e.a->ep_state, BCS_EP_OPENING, __ATOMIC_RELEASE);
		/* libfabric loads its providers, and their libraries, here */
		signals_save();
		opened = f.open(e.prov, e.src, e.pool, &e.ep, why, sizeof(why)) == 0;
		signals_restore();
		/* test hook: the first endpoint stays half open (its sockets
		 * made, OPEN not said) until the file named exists, for a
		 * checkpoint to land there */
		const char *hold = getenv("STORM_TEST_EP_OPEN_HOLD");
		if (hold && opened && !e.opened) {
			fprintf(stderr, "BCS-MPI rank %d: test hook: endpoint half open until %s\n",
				e.rank, hold);
			struct timespec ts = {0, 10000000};
			while (access(hold, F_OK) != 0)
				nanosleep(&ts, NULL);
		}
		if (!opened)
			__atomic_store_n(&e.a->ep_state, was, __ATOMIC_RELEASE);
	}
	if (e.failed || opened) {
		if (e.ep)
			publish();
		return;
	}
	e.failed = true;
	fprintf(stderr, "BCS-MPI rank %d: no endpoint of its own (%s): its node's daemon moves "
		"its messages between nodes\n", e.rank, why);
}

static void close_or_reopen(void);
static void events(void);

/* The closer: sleeps on ep_close, and once a checkpoint asks, closes the
 * endpoint when nothing of it is in flight, whatever the program's thread
 * is doing (the daemon has stopped the job and continues this rank alone
 * until its endpoint is closed). Opening again is the program's thread's,
 * at its next MPI call, which is the first to need it. */
static void *closer(void *arg)
{
	(void)arg;
	uint32_t *word = &e.a->ep_close;
	for (;;) {
		uint32_t want = __atomic_load_n(word, __ATOMIC_ACQUIRE);
		if (want) {
			pthread_mutex_lock(&e.lock);
			if (e.ep)
				events(); /* completions still to take */
			close_or_reopen();
			bool open = e.ep != NULL;
			pthread_mutex_unlock(&e.lock);
			if (open) {
				/* writes still under way: look again shortly */
				struct timespec ts = {0, 200000};
				nanosleep(&ts, NULL);
				continue;
			}
		}
		syscall(SYS_futex, word, FUTEX_WAIT, want, NULL, NULL, 0);
	}
	return NULL;
}

static void start_closer(void)
{
	sigset_t all, was;
	sigfillset(&all);
	/* signals are the program's thread's */
	pthread_sigmask(SIG_BLOCK, &all, &was);
	pthread_t t;
	e.closer = pthread_create(&t, NULL, closer, NULL) == 0;
	if (e.closer)
		pthread_detach(t);
	pthread_sigmask(SIG_SETMASK, &was, NULL);
	if (!e.closer)
		fprintf(stderr, "BCS-MPI rank %d: no thread to close its endpoint for a "
			"checkpoint; it closes at its next MPI call\n", e.rank);
}

void bcs_ep_init(const struct bcs_chan_hdr *h, struct bcs_area *a, int rank)
{
	e.a = a;
	e.rank = rank;
	e.seen = 0;
	e.taken = 0;
	if (!h->rank_prov[0] || !h->rank_pool)
		return;
	snprintf(e.prov, sizeof(e.prov), "%.*s", (int)sizeof(h->rank_prov), h->rank_prov);
	e.pool = h->rank_pool;
	snprintf(e.src, sizeof(e.src), "%.*s", (int)sizeof(h->rank_src), h->rank_src);
}

void bcs_ep_want(void)
{
	if (!e.prov[0] || e.opened || e.failed)
		return;
	pthread_mutex_lock(&e.lock);
	if (!e.ep && !e.opened && !__atomic_load_n(&e.a->ep_close, __ATOMIC_ACQUIRE)) {
		ep_open();
		e.opened = e.ep != NULL;
	}
	pthread_mutex_unlock(&e.lock);
	if (e.ep && !e.closer)
		start_closer();
}

/* A write order: the piece from our buffer into the receiver's pool. */
static void take_write(struct bcs_wr *w)
{
	uint32_t s = BCS_COPY_POSTED;
	if (!__atomic_compare_exchange_n(&w->state, &s, BCS_COPY_TAKEN, false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	int rc = f.write(e.ep, w->blob, w->blen, (const void *)(uintptr_t)w->src, w->len,
			     w->off, w->imm, w);
	if (rc == -EAGAIN) {
		__atomic_store_n(&w->state, BCS_COPY_POSTED, __ATOMIC_RELEASE);
		e.retry = true;
		return;
	}
	if (rc) {
		w->err = -rc;
		__atomic_store_n(&w->state, BCS_COPY_REFUSED, __ATOMIC_RELEASE);
	}
}

/* A peer's write arrived: the expectation it names takes it. */
static void arrived(uint64_t imm)
{
	uint32_t k = (uint32_t)(imm & 0xff);
	struct bcs_rx *r = k < BCS_RX_SLOTS ? &e.a->rx[k] : NULL;
	uint32_t s = r ? __atomic_load_n(&r->state, __ATOMIC_ACQUIRE) : 0;
	if (!r || r->imm != imm || (s != BCS_COPY_POSTED && s != BCS_COPY_TAKEN)) {
		fprintf(stderr, "BCS-MPI rank %d: a write no grant announced (%#llx); ignored\n",
			e.rank, (unsigned long long)imm);
		return;
	}
	size_t slot = e.pool / BCS_RX_SLOTS;
	if (r->len > slot) {
		r->err = EINVAL;
		__atomic_store_n(&r->state, BCS_COPY_REFUSED, __ATOMIC_RELEASE);
	} else {
		memcpy((void *)(uintptr_t)r->dst, (uint8_t *)f.pool(e.ep) + k * slot, r->len);
		__atomic_store_n(&r->state, BCS_COPY_DONE, __ATOMIC_RELEASE);
	}
	if (s == BCS_COPY_TAKEN && e.taken)
		e.taken--;
}

static void events(void)
{
	struct sn_ep_event ev[32];
	int n;
	while ((n = f.poll(e.ep, ev, 32)) > 0)
		for (int i = 0; i < n; i++) {
			if (ev[i].kind == SN_EP_ARRIVED) {
				arrived(ev[i].imm);
				continue;
			}
			struct bcs_wr *w = ev[i].ctx;
			if (!w)
				continue;
			w->err = -ev[i].err;
			__atomic_store_n(&w->state, ev[i].err ? BCS_COPY_REFUSED : BCS_COPY_DONE,
					 __ATOMIC_RELEASE);
		}
}

/* The checkpoint's drain asks us to close, and once it is over to open
 * again: a new endpoint, a new blob, which the next grants carry. */
static void close_or_reopen(void)
{
	struct bcs_area *a = e.a;
	bool want_closed = __atomic_load_n(&a->ep_close, __ATOMIC_ACQUIRE);
	if (want_closed && e.ep && !f.outstanding(e.ep) && !e.taken) {
		/* said once every descriptor is gone: the daemon stops this
		 * rank for the capture as soon as it reads it */
		f.close(e.ep);
		e.ep = NULL;
		__atomic_store_n(&a->ep_state, BCS_EP_CLOSED, __ATOMIC_RELEASE);
	} else if (!want_closed && !e.ep && e.prov[0] && e.opened) {
		ep_open(); /* after a checkpoint, or in the process a restore made */
	}
}

static void drain_locked(void);

void bcs_ep_drain(void)
{
	if (!e.prov[0])
		return;
	pthread_mutex_lock(&e.lock);
	drain_locked();
	pthread_mutex_unlock(&e.lock);
}

static void drain_locked(void)
{
	close_or_reopen();
	if (!e.ep)
		return;
	struct bcs_area *a = e.a;
	uint32_t posted = __atomic_load_n(&a->ep_posted, __ATOMIC_ACQUIRE);
	if (posted != e.seen || e.retry) {
		e.seen = posted;
		e.retry = false;
		for (unsigned k = 0; k < BCS_RX_SLOTS; k++) {
			uint32_t s = BCS_COPY_POSTED;
			if (__atomic_compare_exchange_n(&a->rx[k].state, &s, BCS_COPY_TAKEN, false,
							__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
				e.taken++;
		}
		for (unsigned k = 0; k < BCS_WR_SLOTS; k++)
			if (__atomic_load_n(&a->wr[k].state, __ATOMIC_ACQUIRE) == BCS_COPY_POSTED)
				take_write(&a->wr[k]);
	}
	events();
	close_or_reopen();
}

void bcs_ep_fini(void)
{
	pthread_mutex_lock(&e.lock);
	if (e.ep) {
		while (f.outstanding(e.ep) || e.taken)
			events(); /* what we write or expect ends before we go */
		f.close(e.ep);
		e.ep = NULL;
		__atomic_store_n(&e.a->ep_state, BCS_EP_CLOSED, __ATOMIC_RELEASE);
	}
	e.prov[0] = '\0'; /* the closer has nothing more to do */
	pthread_mutex_unlock(&e.lock);
}

bool bcs_ep_busy(void)
{
	pthread_mutex_lock(&e.lock);
	bool busy = e.ep && (e.taken || e.retry || f.outstanding(e.ep));
	pthread_mutex_unlock(&e.lock);
	return busy;
}

/* Instead of the futex: the endpoint's descriptor, or a short sleep, at
 * most a millisecond, so a wake-up from the daemon waits that long at
 * worst. (Should the closer close it meanwhile, the poll ends within that
 * millisecond all the same.) */
void bcs_ep_nap(void)
{
	pthread_mutex_lock(&e.lock);
	int fd = e.ep ? f.wait_fd(e.ep) : -1;
	pthread_mutex_unlock(&e.lock);
	if (fd >= 0) {
		struct pollfd p = {.fd = fd, .events = POLLIN};
		poll(&p, 1, 1);
		return;
	}
	struct timespec ts = {0, 50000};
	nanosleep(&ts, NULL);
}
