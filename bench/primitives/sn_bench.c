/* Micro-benchmarks of the three primitives, run as N local node processes.
 *
 *   sn_bench --provider P --nodes N --test lat|mcast|caw|caw_write [--size BYTES]
 *            [--iters K] [--warmup W] [--spin US] [--budget-s S]
 *            [--op-timeout-ms MS] [--pin 0|1] [--local-ev 0|1]
 *
 * One JSON line per result on stdout (printed by node 0):
 *   lat    2 nodes ping-pong: node 0 XFERs size bytes to node 1 with a remote
 *          event, node 1 waits for it with TEST-EVENT and XFERs the same size
 *          back. Half the round trip, for 8 B, 64 KiB and 1 MiB (or --size).
 *          Busy-polls by default (spin_us = 1 s), like fi_pingpong. By
 *          default the XFERs ask for no local event, as a daemon answering a
 *          request does: the reply is the confirmation, as in fi_pingpong.
 *          --local-ev 1 asks for one on every XFER (and waits for it before
 *          the next, inside the timed round trip), which costs each transfer
 *          an ACK from its destination.
 *          Reports the median and the mean (fi_pingpong reports a mean).
 *   mcast  node 0 XFERs --size bytes (default 12 MiB) to nodes 1..N-1 and waits
 *          for its local event (every destination holds the data); a barrier
 *          between iterations. Reports time and bandwidth (payload / time).
 *   caw    node 0 runs a read-only COMPARE-AND-WRITE (var >= 0) over all N
 *          nodes, back to back; the others sit in TEST-EVENT on a "done" event
 *          that node 0's final XFER signals.
 *   caw_write  the same with a write: var >= 0, then another variable := the
 *          iteration, on all N (prepare, then commit: two tree round trips
 *          before the answer, where a read answers after one).
 * Medians over K iterations after W warm-up ones, with p10 and p90, and
 * node 0's mean CPU time per operation (node0_cpu_us, all its threads). A
 * measurement stops early, after at least 5 iterations, once it has spent
 * --budget-s seconds (default 20). --op-timeout-ms sets sn_config.timeout_ms
 * (default 20000). --spin sets sn_config.spin_us (default 0
 * for mcast and caw, 1000000 for lat); the JSON says "spin":true when set.
 * --pin 1 puts node i on the i-th CPU the process may use (modulo their
 * number), as `taskset` does for the two fi_pingpong processes: left to
 * itself the scheduler sometimes stacks both busy-polling processes on one
 * CPU, and each message then waits for a time slice.
 * The whole run is bounded by spawn_run's timeout. */
#include <errno.h>
#include <sched.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../../tests/lib/spawn.h"
#include "sn.h"

enum { VAR_A = 4096, VAR_BAR = 4104, VAR_GO = 4112, VAR_STOP = 4120, VAR_B = 4128, DATA = 8192 };
enum { EV_DATA = 1, EV_LOCAL = 2, EV_GO = 3, EV_PONG = 4, EV_DONE = 5, EV_BLOCAL = 6 };
#define MAX_SIZE (12u << 20)
#define GMEM ((size_t)DATA + MAX_SIZE + (64u << 10))
#define MIN_ITERS 5

struct opts {
	const char *provider;
	const char *test;
	uint32_t nodes;
	long size; /* -1: the test's default sizes */
	int iters, warmup;
	long spin_us; /* -1: the test's default */
	double budget_s;
	unsigned op_timeout_ms;
	bool pin; /* node i runs on the i-th allowed CPU (modulo their number) */
	bool local_ev; /* lat: ask for (and wait on) a local event per XFER */
};

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of this process, all threads: node 0's CPU per operation says
 * what a message and a byte cost apart from the wait for the others */
static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* node 0's CPU over the timed operations, reported as a mean per operation */
static double node0_cpu_us;

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double pct(const double *sorted, int n, double p)
{
	double pos = p * (n - 1);
	int i = (int)pos;
	if (i >= n - 1)
		return sorted[n - 1];
	return sorted[i] + (sorted[i + 1] - sorted[i]) * (pos - i);
}

static void json_escape(const char *s, char *out, size_t len)
{
	size_t j = 0;
	for (; *s && j + 2 < len; s++) {
		if (*s == '"' || *s == '\\')
			out[j++] = '\\';
		out[j++] = *s;
	}
	out[j] = '\0';
}

/* The host's copy bandwidth for the same size, measured in the same run: the
 * yardstick for a transfer that costs one copy per node (best of 5). */
static double memcpy_mbps(size_t size)
{
	uint8_t *a = malloc(size), *b = malloc(size);
	double best = 0;
	if (!a || !b) {
		free(a);
		free(b);
		return 0;
	}
	memset(a, 1, size);
	memset(b, 2, size);
	for (int i = 0; i < 5; i++) {
		double t0 = (double)now_ns() / 1e3;
		memcpy(b, a, size);
		double t = (double)now_ns() / 1e3 - t0;
		__asm__ volatile("" : : "r"(b) : "memory");
		if (t > 0 && (best == 0 || size / t > best))
			best = size / t;
	}
	free(a);
	free(b);
	return best;
}

static void report(const struct opts *o, const char *bench, long size, double *us, int n,
		   bool bw, bool spin, const struct sn_ctx *ctx)
{
	char prov[128];
	struct sn_stats st;
	sn_get_stats(ctx, &st);
	json_escape(o->provider, prov, sizeof(prov));
	qsort(us, (size_t)n, sizeof(double), cmp_double);
	double med = pct(us, n, 0.5), sum = 0;
	for (int i = 0; i < n; i++)
		sum += us[i];
	printf("{\"bench\":\"%s\",\"provider\":\"%s\",\"nodes\":%u", bench, prov, o->nodes);
	if (size >= 0)
		printf(",\"size\":%ld", size);
	printf(",\"median_us\":%.3f,\"mean_us\":%.3f,\"p10_us\":%.3f,\"p90_us\":%.3f,"
	       "\"iters\":%d", med, n ? sum / n : 0, pct(us, n, 0.1), pct(us, n, 0.9), n);
	if (!strcmp(bench, "xfer_lat"))
		printf(",\"local_ev\":%s", o->local_ev ? "true" : "false");
	if (bw && size > 0)
		printf(",\"mbps\":%.1f,\"memcpy_mbps\":%.1f", (double)size / med,
		       memcpy_mbps((size_t)size));
	printf(",\"node0_cpu_us\":%.3f", n ? node0_cpu_us / n : 0);
	printf(",\"rma\":%s", sn_rail_rma(ctx, 0) ? "true" : "false");
	printf(",\"spin\":%s,\"pinned\":%s,\"fanout\":%s,\"node0_msgs_sent\":%llu,"
	       "\"node0_msgs_recv\":%llu}\n",
	       spin ? "true" : "false", o->pin ? "true" : "false",
	       getenv("SN_FANOUT") ? getenv("SN_FANOUT") : "4", (unsigned long long)st.msgs_sent,
	       (unsigned long long)st.msgs_recv);
	fflush(stdout);
}

#define CHECK(cond, ...)                                                        \
	do {                                                                    \
		if (!(cond)) {                                                  \
			fprintf(stderr, "sn_bench node %u: %s:%d: %s: ", self, __FILE__, \
				__LINE__, #cond);                               \
			fprintf(stderr, __VA_ARGS__);                           \
			fputc('\n', stderr);                                    \
			fflush(NULL);                                           \
			return 1;                                               \
		}                                                               \
	} while (0)

static void pin_cpu(uint32_t id)
{
	cpu_set_t allowed, one;
	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		return;
	int count = CPU_COUNT(&allowed), k = (int)(id % (uint32_t)(count ? count : 1));
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++)
		if (CPU_ISSET(cpu, &allowed) && k-- == 0) {
			CPU_ZERO(&one);
			CPU_SET(cpu, &one);
			sched_setaffinity(0, sizeof(one), &one);
			return;
		}
}

static struct sn_ctx *open_node(const struct spawn_node *nd, bool spin)
{
	const struct opts *o = nd->arg;
	if (o->pin)
		pin_cpu(nd->id);
	struct sn_config c;
	struct sn_ctx *ctx;
	spawn_sn_config(nd, &c);
	c.provider = o->provider;
	c.gmem_size = GMEM;
	c.timeout_ms = o->op_timeout_ms;
	c.spin_us = spin ? (unsigned)(o->spin_us < 0 ? 1000000 : o->spin_us) : 0;
	if (sn_open(&c, &ctx)) {
		fprintf(stderr, "sn_bench node %u: sn_open: %s\n", nd->id, sn_open_error());
		return NULL;
	}
	if (sn_wait_peers(ctx, 60000)) {
		fprintf(stderr, "sn_bench node %u: %s\n", nd->id, sn_strerror(ctx));
		sn_close(ctx);
		return NULL;
	}
	return ctx;
}

/* Barrier over all nodes (as in tests/net/sn_mptest.c): everyone publishes
 * the epoch, node 0 polls COMPARE-AND-WRITE until all have, then XFERs "go". */
static int barrier(struct sn_ctx *ctx, uint64_t epoch, unsigned timeout_ms)
{
	uint32_t self = sn_node_id(ctx), n = sn_node_count(ctx);
	struct sn_nodeset all, others;
	sn_set_clear(&all);
	sn_set_range(&all, 0, n - 1);
	others = all;
	sn_set_del(&others, 0);
	sn_var_store(ctx, VAR_BAR, epoch);
	if (n == 1)
		return 0;
	if (self != 0)
		return sn_test_event(ctx, EV_GO, (int)timeout_ms * 4, NULL) == 1 ? 0 : -1;
	int rc;
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 4000000ull;
	while ((rc = sn_caw(ctx, &all, VAR_BAR, SN_GE, epoch, false, 0, 0, NULL)) == 0)
		if (now_ns() > deadline)
			return -ETIMEDOUT;
	if (rc < 0)
		return rc;
	if (sn_xfer(ctx, &others, VAR_GO, &epoch, 8, EV_BLOCAL, EV_GO, 0))
		return -1;
	return sn_test_event(ctx, EV_BLOCAL, (int)timeout_ms * 4, NULL) == 1 ? 0 : -1;
}

/* Node 0 decides whether to go on (budget) and tells node 1 in the next
 * message's first word: nothing else is exchanged between iterations. */
static int run_lat(const struct spawn_node *nd)
{
	const struct opts *o = nd->arg;
	uint32_t self = nd->id;
	bool spin = o->spin_us != 0;
	struct sn_ctx *ctx = open_node(nd, spin);
	if (!ctx)
		return 2;
	long sizes[3] = {8, 65536, 1048576};
	int nsizes = 3;
	if (o->size >= 0) {
		sizes[0] = o->size;
		nsizes = 1;
	}
	unsigned tmo = o->op_timeout_ms;
	struct sn_nodeset peer;
	sn_set_clear(&peer);
	sn_set_add(&peer, self ^ 1);
	uint8_t *buf = calloc(1, 1u << 20 > (size_t)sizes[0] ? 1u << 20 : (size_t)sizes[0]);
	double *us = calloc((size_t)o->iters, sizeof(double));
	CHECK(buf && us, "out of memory");
	CHECK(barrier(ctx, 1, tmo) == 0, "barrier: %s", sn_strerror(ctx));
	uint8_t *gm = sn_gmem(ctx);
	unsigned lev = o->local_ev ? EV_LOCAL : SN_NO_EVENT;
	for (int si = 0; si < nsizes; si++) {
		size_t size = (size_t)sizes[si];
		int iters = o->iters, done = 0;
		if (size >= (1u << 20) && iters > 100)
			iters = 100;
		double spent = 0;
		bool more = true;
		bool pending_local = false;
		/* one clock read per round trip: each iteration starts where the
		 * previous one ended, as fi_pingpong times its whole loop */
		uint64_t t0 = now_ns();
		for (int it = -o->warmup; more; it++) {
			if (self == 0) {
				/* the early stop travels in the data: not below 8 bytes */
				bool last = it + 1 >= iters ||
					    (size >= 8 && done >= MIN_ITERS &&
					     spent > o->budget_s * 1e6);
				uint64_t flag = last ? 0 : 1;
				if (size >= 8)
					memcpy(buf, &flag, 8);
				if (pending_local) {
					CHECK(sn_test_event(ctx, EV_LOCAL, (int)tmo * 2, NULL) == 1,
					      "local event: %s", sn_strerror(ctx));
				}
				CHECK(sn_xfer(ctx, &peer, DATA, buf, size, lev, EV_DATA, 0) == 0,
				      "xfer: %s", sn_strerror(ctx));
				pending_local = o->local_ev;
				CHECK(sn_test_event(ctx, EV_PONG, (int)tmo * 2, NULL) == 1,
				      "pong of iteration %d (%zu B): %s", it, size, sn_strerror(ctx));
				uint64_t t1 = now_ns();
				double dt = (double)(t1 - t0) / 2000.0;
				t0 = t1;
				if (it >= 0) {
					us[done++] = dt;
					spent += 2 * dt;
				}
				more = !last;
			} else {
				CHECK(sn_test_event(ctx, EV_DATA, (int)tmo * 2, NULL) == 1,
				      "ping (%zu B): %s", size, sn_strerror(ctx));
				uint64_t flag = 0;
				if (size >= 8)
					memcpy(&flag, gm + DATA, 8);
				else
					flag = it + 1 < iters;
				if (pending_local) {
					CHECK(sn_test_event(ctx, EV_LOCAL, (int)tmo * 2, NULL) == 1,
					      "local event: %s", sn_strerror(ctx));
				}
				CHECK(sn_xfer(ctx, &peer, DATA, buf, size, lev, EV_PONG, 0) == 0,
				      "xfer: %s", sn_strerror(ctx));
				pending_local = o->local_ev;
				more = flag != 0;
			}
		}
		if (pending_local)
			CHECK(sn_test_event(ctx, EV_LOCAL, (int)tmo * 2, NULL) == 1, "local event: %s",
			      sn_strerror(ctx));
		if (self == 0)
			report(o, "xfer_lat", (long)size, us, done, false, spin, ctx);
		CHECK(barrier(ctx, 2 + (uint64_t)si, tmo) == 0, "barrier: %s", sn_strerror(ctx));
	}
	free(buf);
	free(us);
	sn_close(ctx);
	return 0;
}

static int run_mcast(const struct spawn_node *nd)
{
	const struct opts *o = nd->arg;
	uint32_t self = nd->id, n = nd->n;
	bool spin = o->spin_us > 0;
	struct sn_ctx *ctx = open_node(nd, spin);
	if (!ctx)
		return 2;
	size_t size = o->size >= 0 ? (size_t)o->size : MAX_SIZE;
	unsigned tmo = o->op_timeout_ms;
	struct sn_nodeset others;
	sn_set_clear(&others);
	sn_set_range(&others, 1, n - 1);
	uint8_t *buf = malloc(size ? size : 1);
	double *us = calloc((size_t)o->iters, sizeof(double));
	CHECK(buf && us, "out of memory");
	memset(buf, 0x5a, size);
	CHECK(barrier(ctx, 1, tmo) == 0, "barrier: %s", sn_strerror(ctx));
	int done = 0;
	double spent = 0;
	uint64_t epoch = 2;
	for (int it = -o->warmup;; it++) {
		/* node 0 decides; the others learn it from VAR_STOP, which node 0
		 * sets before the XFER (the remote event orders it) */
		if (self == 0) {
			bool last = it + 1 >= o->iters ||
				    (done >= MIN_ITERS && spent > o->budget_s * 1e6);
			uint64_t t0 = now_ns(), c0 = cpu_ns();
			CHECK(sn_xfer(ctx, &others, DATA, buf, size, EV_LOCAL, EV_DATA, 0) == 0, "xfer: %s",
			      sn_strerror(ctx));
			int rc = sn_test_event(ctx, EV_LOCAL, -1, NULL);
			CHECK(rc == 1, "local event of iteration %d: %d %s", it, rc, sn_strerror(ctx));
			double dt = (double)(now_ns() - t0) / 1000.0;
			if (it >= 0) {
				us[done++] = dt;
				spent += dt;
				node0_cpu_us += (double)(cpu_ns() - c0) / 1000.0;
			}
			/* tell the others whether another round follows */
			uint64_t more = last ? 0 : 1;
			CHECK(sn_xfer(ctx, &others, VAR_STOP, &more, 8, EV_BLOCAL, EV_DONE, 0) == 0,
			      "xfer: %s", sn_strerror(ctx));
			CHECK(sn_test_event(ctx, EV_BLOCAL, (int)tmo * 4, NULL) == 1, "flag: %s",
			      sn_strerror(ctx));
			CHECK(barrier(ctx, epoch++, tmo) == 0, "barrier: %s", sn_strerror(ctx));
			if (last)
				break;
		} else {
			/* node 0 gives up after its operation budget (timeout plus
			 * 25 MB/s per destination); wait a little longer than that */
			int wait_ms = (int)(2 * tmo + size / 25000 * n + 10000);
			int rc = sn_test_event(ctx, EV_DATA, wait_ms, NULL);
			CHECK(rc == 1, "data of iteration %d: %d %s", it, rc, sn_strerror(ctx));
			CHECK(sn_test_event(ctx, EV_DONE, (int)tmo * 4, NULL) == 1, "flag: %s",
			      sn_strerror(ctx));
			uint64_t more = sn_var_load(ctx, VAR_STOP);
			CHECK(barrier(ctx, epoch++, tmo) == 0, "barrier: %s", sn_strerror(ctx));
			if (!more)
				break;
		}
	}
	if (self == 0)
		report(o, "xfer_mcast", (long)size, us, done, true, spin, ctx);
	free(buf);
	free(us);
	sn_close(ctx);
	return 0;
}

static int run_caw(const struct spawn_node *nd)
{
	const struct opts *o = nd->arg;
	bool write = !strcmp(o->test, "caw_write");
	uint32_t self = nd->id, n = nd->n;
	bool spin = o->spin_us > 0;
	struct sn_ctx *ctx = open_node(nd, spin);
	if (!ctx)
		return 2;
	unsigned tmo = o->op_timeout_ms;
	struct sn_nodeset all, others;
	sn_set_clear(&all);
	sn_set_range(&all, 0, n - 1);
	others = all;
	sn_set_del(&others, 0);
	double *us = calloc((size_t)o->iters, sizeof(double));
	CHECK(us, "out of memory");
	sn_var_store(ctx, VAR_A, self + 1);
	CHECK(barrier(ctx, 1, tmo) == 0, "barrier: %s", sn_strerror(ctx));
	if (self == 0) {
		int done = 0;
		double spent = 0;
		for (int it = -o->warmup; it < o->iters; it++) {
			uint64_t t0 = now_ns(), c0 = cpu_ns();
			int rc = sn_caw(ctx, &all, VAR_A, SN_GE, 0, write, VAR_B,
					(uint64_t)(it + o->warmup + 1), NULL);
			double dt = (double)(now_ns() - t0) / 1000.0;
			CHECK(rc == 1, "CAW of iteration %d: %d %s", it, rc, sn_strerror(ctx));
			if (it < 0)
				continue;
			node0_cpu_us += (double)(cpu_ns() - c0) / 1000.0;
			us[done++] = dt;
			spent += dt;
			if (done >= MIN_ITERS && spent > o->budget_s * 1e6)
				break;
		}
		uint64_t one = 1;
		if (n > 1) {
			CHECK(sn_xfer(ctx, &others, VAR_STOP, &one, 8, EV_LOCAL, EV_DONE, 0) == 0,
			      "xfer: %s", sn_strerror(ctx));
			CHECK(sn_test_event(ctx, EV_LOCAL, (int)tmo * 4, NULL) == 1, "done: %s",
			      sn_strerror(ctx));
		}
		report(o, write ? "caw_write" : "caw", -1, us, done, false, spin, ctx);
	} else {
		/* serve the CAWs (their tree traffic is forwarded from in here) */
		int rc = sn_test_event(ctx, EV_DONE, (int)(o->budget_s * 1000) * 3 + (int)tmo * 8, NULL);
		CHECK(rc == 1, "done event: %d %s", rc, sn_strerror(ctx));
	}
	free(us);
	sn_close(ctx);
	return 0;
}

static void usage(void)
{
	fprintf(stderr,
		"usage: sn_bench --provider P --nodes N --test lat|mcast|caw|caw_write [--size BYTES]\n"
		"                [--iters K] [--warmup W] [--spin US] [--budget-s S]\n"
		"                [--op-timeout-ms MS] [--pin 0|1] [--local-ev 0|1]\n");
	exit(2);
}

int main(int argc, char **argv)
{
	struct opts o = {.provider = NULL, .test = NULL, .nodes = 2, .size = -1, .iters = 0,
			 .warmup = -1, .spin_us = -1, .budget_s = 20, .op_timeout_ms = 20000};
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			usage();
		if (!strcmp(a, "--provider"))
			o.provider = v;
		else if (!strcmp(a, "--nodes"))
			o.nodes = (uint32_t)strtoul(v, NULL, 10);
		else if (!strcmp(a, "--test"))
			o.test = v;
		else if (!strcmp(a, "--size"))
			o.size = strtol(v, NULL, 0);
		else if (!strcmp(a, "--iters"))
			o.iters = atoi(v);
		else if (!strcmp(a, "--warmup"))
			o.warmup = atoi(v);
		else if (!strcmp(a, "--spin"))
			o.spin_us = strtol(v, NULL, 10);
		else if (!strcmp(a, "--budget-s"))
			o.budget_s = atof(v);
		else if (!strcmp(a, "--pin"))
			o.pin = atoi(v) != 0;
		else if (!strcmp(a, "--local-ev"))
			o.local_ev = atoi(v) != 0;
		else if (!strcmp(a, "--op-timeout-ms"))
			o.op_timeout_ms = (unsigned)strtoul(v, NULL, 10);
		else
			usage();
		i++;
	}
	if (!o.provider || !o.test || o.nodes < 1 || o.nodes > SN_MAX_NODES)
		usage();
	int (*fn)(const struct spawn_node *);
	if (!strcmp(o.test, "lat")) {
		fn = run_lat;
		if (o.nodes != 2) {
			fprintf(stderr, "sn_bench: the lat test runs on exactly 2 nodes\n");
			return 2;
		}
		if (!o.iters)
			o.iters = 1000;
		if (o.warmup < 0)
			o.warmup = 20;
	} else if (!strcmp(o.test, "mcast")) {
		fn = run_mcast;
		if (o.nodes < 2) {
			fprintf(stderr, "sn_bench: mcast needs at least 2 nodes\n");
			return 2;
		}
		if (!o.iters)
			o.iters = 20;
		if (o.warmup < 0)
			o.warmup = 2;
	} else if (!strcmp(o.test, "caw") || !strcmp(o.test, "caw_write")) {
		fn = run_caw;
		if (!o.iters)
			o.iters = 200;
		if (o.warmup < 0)
			o.warmup = 10;
	} else {
		usage();
	}
	if (o.size > (long)MAX_SIZE) {
		fprintf(stderr, "sn_bench: --size is at most %u\n", MAX_SIZE);
		return 2;
	}
	if (o.iters < 1 || o.warmup < 0)
		usage();
	/* bounded: the budget per measurement plus generous room for start-up,
	 * warm-up and the slowest iteration */
	double sizes = !strcmp(o.test, "lat") && o.size < 0 ? 3 : 1;
	unsigned run_ms = (unsigned)(sizes * (o.budget_s * 1000 + 6.0 * o.op_timeout_ms) + 60000);
	int *st = calloc(o.nodes, sizeof(int));
	if (!st)
		return 1;
	int rc = spawn_run(o.nodes, fn, &o, run_ms, st);
	if (rc == 0)
		rc = spawn_check(o.nodes, st, -1);
	else
		spawn_check(o.nodes, st, -1);
	free(st);
	if (rc)
		fprintf(stderr, "sn_bench: %s on %s with %u nodes failed\n", o.test, o.provider,
			o.nodes);
	return rc ? 1 : 0;
}
