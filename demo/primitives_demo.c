/* storm primitives demo: N local node processes do, with the three
 * primitives only, what STORM's machine manager does: multicast a 12 MiB
 * "binary" with XFER-AND-SIGNAL, run a train of strobes, and detect that every
 * node is done with COMPARE-AND-WRITE. Node 0 plays the machine manager. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/lib/spawn.h"
#include "sn.h"

enum { VAR_STROBE = 4096, VAR_DONE = 4104, VAR_ACKED = 4112, BINARY = 8192 };
enum { EV_BINARY = 1, EV_SENT = 2, EV_STROBE = 3 };
#define BINARY_SIZE (12u << 20)

struct opts {
	const char *provider;
	unsigned strobes;
	unsigned slice_us;
};

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int die(struct sn_ctx *ctx, const char *what)
{
	fprintf(stderr, "node %u: %s: %s\n", sn_node_id(ctx), what, sn_strerror(ctx));
	return 1;
}

static int node_main(const struct spawn_node *nd)
{
	const struct opts *o = nd->arg;
	struct sn_config c;
	struct sn_ctx *ctx;
	spawn_sn_config(nd, &c);
	c.provider = o->provider;
	c.gmem_size = BINARY + BINARY_SIZE;
	if (sn_open(&c, &ctx)) {
		fprintf(stderr, "node %u: %s\n", nd->id, sn_open_error());
		return 1;
	}
	if (sn_wait_peers(ctx, 60000)) {
		fprintf(stderr, "node %u: %s\n", nd->id, sn_strerror(ctx));
		sn_close(ctx);
		return 1;
	}
	struct sn_nodeset nodes;
	sn_set_clear(&nodes);
	sn_set_range(&nodes, 1, nd->n - 1);

	if (nd->id != 0) {
		/* a node daemon: receive the binary, follow strobes, report done */
		if (sn_test_event(ctx, EV_BINARY, 30000, NULL) != 1)
			return die(ctx, "binary never arrived");
		const uint8_t *bin = (uint8_t *)sn_gmem(ctx) + BINARY;
		for (size_t i = 0; i < BINARY_SIZE; i += 4099)
			if (bin[i] != (uint8_t)(i * 131))
				return die(ctx, "binary arrived corrupted");
		for (unsigned s = 0; s < o->strobes; s++)
			if (sn_test_event(ctx, EV_STROBE, 30000, NULL) != 1)
				return die(ctx, "strobe missed");
		sn_var_store(ctx, VAR_ACKED, sn_var_load(ctx, VAR_STROBE));
		sn_var_store(ctx, VAR_DONE, 1);
		/* stay reachable until the MM has seen everyone done */
		sn_test_event(ctx, EV_BINARY, 30000, NULL);
		sn_close(ctx);
		return 0;
	}

	printf("storm primitives demo: %u node processes on provider %s\n", nd->n,
	       sn_provider_name(ctx, 0));
	uint8_t *bin = malloc(BINARY_SIZE);
	for (size_t i = 0; i < BINARY_SIZE; i++)
		bin[i] = (uint8_t)(i * 131);
	double t0 = now_ms();
	if (sn_xfer(ctx, &nodes, BINARY, bin, BINARY_SIZE, EV_SENT, EV_BINARY, 0) ||
	    sn_test_event(ctx, EV_SENT, 60000, NULL) != 1)
		return die(ctx, "multicast");
	double t1 = now_ms();
	printf("  XFER-AND-SIGNAL  12 MiB to %u nodes: %.1f ms (%.0f MB/s per node)\n", nd->n - 1,
	       t1 - t0, BINARY_SIZE / 1e3 / (t1 - t0));

	double worst = 0;
	for (uint64_t s = 1; s <= o->strobes; s++) {
		double ts = now_ms();
		if (sn_xfer(ctx, &nodes, VAR_STROBE, &s, 8, EV_SENT, EV_STROBE, SN_XFER_SYS) ||
		    sn_test_event(ctx, EV_SENT, 5000, NULL) != 1)
			return die(ctx, "strobe");
		double d = now_ms() - ts;
		worst = d > worst ? d : worst;
		while (now_ms() - ts < o->slice_us / 1e3)
			;
	}
	double t2 = now_ms();
	printf("  strobes          %u at %u us: %.1f ms in all, slowest delivery %.3f ms\n",
	       o->strobes, o->slice_us, t2 - t1, worst);

	int rc;
	unsigned polls = 0;
	while ((rc = sn_caw(ctx, &nodes, VAR_DONE, SN_EQ, 1, false, 0, 0, NULL)) == 0)
		polls++;
	if (rc < 0)
		return die(ctx, "termination detection");
	double t3 = now_ms();
	rc = sn_caw(ctx, &nodes, VAR_ACKED, SN_EQ, o->strobes, true, VAR_DONE, 2, NULL);
	printf("  COMPARE-AND-WRITE all %u nodes done after %u polls, %.3f ms; every node saw "
	       "strobe %u: %s\n",
	       nd->n - 1, polls, now_ms() - t3, o->strobes, rc == 1 ? "yes" : "NO");
	uint64_t bye = 0;
	sn_xfer(ctx, &nodes, VAR_STROBE, &bye, 8, EV_SENT, EV_BINARY, 0);
	sn_test_event(ctx, EV_SENT, 5000, NULL);
	free(bin);
	sn_close(ctx);
	return rc == 1 ? 0 : 1;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: primitives_demo [--nodes N] [--provider PROV] [--strobes K] "
		   "[--slice-us US]\n"
		   "Runs N local node processes (default 8) and exercises XFER-AND-SIGNAL,\n"
		   "TEST-EVENT and COMPARE-AND-WRITE the way storm's machine manager does.\n"
		   "PROV is a libfabric provider: tcp;ofi_rxm (default), shm, sockets, "
		   "udp;ofi_rxd.\n");
}

int main(int argc, char **argv)
{
	struct opts o = {.provider = "tcp;ofi_rxm", .strobes = 1000, .slice_us = 1000};
	unsigned nodes = 8;
	static const struct option lo[] = {{"nodes", 1, 0, 'n'},   {"provider", 1, 0, 'p'},
					   {"strobes", 1, 0, 's'}, {"slice-us", 1, 0, 't'},
					   {"help", 0, 0, 'h'},    {0, 0, 0, 0}};
	int ch;
	while ((ch = getopt_long(argc, argv, "n:p:s:t:h", lo, NULL)) != -1) {
		switch (ch) {
		case 'n': nodes = (unsigned)atoi(optarg); break;
		case 'p': o.provider = optarg; break;
		case 's': o.strobes = (unsigned)atoi(optarg); break;
		case 't': o.slice_us = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (optind != argc || nodes < 2 || nodes > 256 || o.strobes < 1) {
		fprintf(stderr, "primitives_demo: need 2..256 nodes and at least one strobe\n");
		usage(stderr);
		return 2;
	}
	int *st = calloc(nodes, sizeof(int));
	int rc = spawn_run(nodes, node_main, &o, 120000, st);
	if (rc == 0)
		rc = spawn_check(nodes, st, -1);
	free(st);
	return rc ? 1 : 0;
}
