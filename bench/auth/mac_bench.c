/* The cost of authentication on the hot paths (docs/BENCHMARKS.md,
 * "Authentication"): the cluster-key tag of a strobe (the MM computes it once
 * per timeslice, each node checks it once per strobe) for 8, 64 and 1000
 * nodes, of a 64 KiB report, of a 4 MiB file chunk, and, given a munged socket, one MUNGE credential
 * (encode + decode: what each control connection pays once).
 *   mac_bench [MUNGE_SOCKET]      (make bench-auth) */
#include <munge.h>
#include <sodium.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "gm_auth.h"
#include "layout.h"

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Median over 21 runs of `iters` verifications of len bytes: ns each. */
static double time_mac(const uint8_t *key, uint8_t *buf, size_t len, int iters)
{
	double runs[21];
	volatile int ok = 0;
	gm_mac(key, GM_MAC_STROBE, GM_MAC_ANY_NODE, buf, len, buf + len);
	for (int r = 0; r < 21; r++) {
		double t0 = now_ns();
		for (int i = 0; i < iters; i++)
			ok += gm_mac_ok(key, GM_MAC_STROBE, GM_MAC_ANY_NODE, buf, len, buf + len);
		runs[r] = (now_ns() - t0) / iters;
	}
	qsort(runs, 21, sizeof(double), cmp);
	return ok ? runs[10] : -1;
}

int main(int argc, char **argv)
{
	if (sodium_init() < 0)
		return 1;
	uint8_t key[GM_KEY_LEN];
	randombytes_buf(key, sizeof(key));
	static uint8_t buf[GM_REPORT_SLOT_SIZE + GM_TAG_LEN];
	randombytes_buf(buf, sizeof(buf));
	printf("what,bytes,ns\n");
	const uint32_t nodes[] = { 8, 64, 1000 };
	for (int k = 0; k < 3; k++) {
		size_t len = strobe_signed_size(nodes[k], 0);
		printf("strobe %u nodes,%zu,%.0f\n", nodes[k], len, time_mac(key, buf, len, 20000));
	}
	printf("report slot,%zu,%.0f\n", (size_t)GM_REPORT_SLOT_SIZE - GM_TAG_LEN,
	       time_mac(key, buf, GM_REPORT_SLOT_SIZE - GM_TAG_LEN, 200));
	/* a file chunk: every node checks every byte of a program */
	size_t fl = GM_FILE_BUF_SIZE - sizeof(struct file_chunk);
	uint8_t *file = malloc(fl), nonce[16] = { 0 }, tag[GM_TAG_LEN];
	randombytes_buf(file, fl);
	double runs[21];
	for (int r = 0; r < 21; r++) {
		double t0 = now_ns();
		gm_file_tag(key, nonce, (uint64_t)r + 1, buf, 64, file, fl, tag);
		runs[r] = now_ns() - t0;
	}
	qsort(runs, 21, sizeof(double), cmp);
	printf("file chunk (Poly1305),%zu,%.0f\n", fl, runs[10]);
	for (int r = 0; r < 21; r++) {
		double t0 = now_ns();
		gm_mac(key, GM_MAC_STROBE, 0, file, fl, tag);
		runs[r] = now_ns() - t0;
	}
	qsort(runs, 21, sizeof(double), cmp);
	printf("file chunk (BLAKE2b; not used),%zu,%.0f\n", fl, runs[10]);
	free(file);
	if (argc > 1) {
		munge_ctx_t ctx = munge_ctx_create();
		munge_ctx_set(ctx, MUNGE_OPT_SOCKET, argv[1]);
		double runs[21];
		for (int r = 0; r < 21; r++) {
			double t0 = now_ns();
			char *cred;
			void *p;
			int plen;
			if (munge_encode(&cred, ctx, buf, 72) != EMUNGE_SUCCESS ||
			    munge_decode(cred, ctx, &p, &plen, NULL, NULL) != EMUNGE_SUCCESS) {
				fprintf(stderr, "mac_bench: munge: %s\n", munge_ctx_strerror(ctx));
				return 1;
			}
			runs[r] = now_ns() - t0;
			free(cred);
			free(p);
		}
		qsort(runs, 21, sizeof(double), cmp);
		printf("munge encode+decode,72,%.0f\n", runs[10]);
		munge_ctx_destroy(ctx);
	}
	return 0;
}
