/* A BCS-MPI program for checkpoint/restart tests (test_ckpt_mpi.sh): each
 * step computes over a large heap, passes a slice of it round the ring
 * (Isend/Irecv/Waitall), sends every 4th step a large message from rank 0
 * to the last rank (it takes many slices at the rate test_ckpt_mpi.sh sets
 * for the daemons), gathers a value on rank 0 with MPI_ANY_SOURCE
 * receives (folded in arrival order, so a nondeterministic match would
 * show), and ends with an Allreduce and a Barrier. A non-blocking
 * Iallreduce of the previous step's value spans each step; on big-message
 * steps the last rank starts it only after the big message, so a
 * checkpoint then finds it half done (the others' parts unmatched). Its results depend on
 * nothing but its arguments: at the end rank 0 writes every step's global
 * sum and each rank's heap checksum to RESULT, which a run checkpointed and
 * restarted must write byte for byte like an uninterrupted one. With
 * PAUSE_STEP, rank 0 waits at that step, before its wildcard receives,
 * until the file RESULT.go exists (saying so first): a checkpoint then
 * finds every other rank's wildcard send posted and unmatched. With "end"
 * after it (PAUSE_STEP -1: no pause), rank 0 waits after the last step
 * until the file RESULT.end exists: the job runs on until the test has
 * taken the checkpoints it needs, however slow the machine.
 * usage: ckptapp STEPS HEAP_MIB BIG_MIB STEP_MS RESULT [PAUSE_STEP [end]] */
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define RING (64 * 1024) /* bytes passed round the ring per step */

static uint64_t mix(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return x;
}

int main(int argc, char **argv)
{
	if ((argc < 6 || argc > 8) || (argc == 8 && strcmp(argv[7], "end"))) {
		fprintf(stderr, "usage: ckptapp STEPS HEAP_MIB BIG_MIB STEP_MS RESULT [PAUSE_STEP [end]]\n");
		return 2;
	}
	int steps = atoi(argv[1]), step_ms = atoi(argv[4]);
	int pause_step = argc >= 7 ? atoi(argv[6]) : -1, hold_end = argc == 8;
	size_t heap_n = (size_t)atoi(argv[2]) << 17; /* uint64 words */
	size_t big_n = (size_t)atoi(argv[3]) << 17;
	int rank, size;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	uint64_t *heap = malloc(heap_n * 8), *big = malloc(big_n * 8);
	uint64_t *in = malloc(RING), *sums = calloc((size_t)steps, 8);
	if (!heap || !big || !in || !sums) {
		fprintf(stderr, "ckptapp: out of memory\n");
		MPI_Abort(MPI_COMM_WORLD, 2);
	}
	for (size_t i = 0; i < heap_n; i++)
		heap[i] = mix(i * 131 + (uint64_t)rank);
	int right = (rank + 1) % size, left = (rank + size - 1) % size;
	uint64_t prev = 0;
	for (int s = 0; s < steps; s++) {
		uint64_t nbin = prev, nbout = 0;
		MPI_Request nb = MPI_REQUEST_NULL;
		int late = rank == size - 1 && size > 1 && s % 4 == 1;
		if (!late)
			MPI_Iallreduce(&nbin, &nbout, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD, &nb);
		/* computation: a quarter of the heap each step */
		size_t q = heap_n / 4, from = (size_t)(s % 4) * q;
		for (size_t i = from; i < from + q; i++)
			heap[i] = mix(heap[i] + (uint64_t)s);
		/* the ring */
		MPI_Request rq[2];
		size_t at = ((size_t)s * 4099) % (heap_n - RING / 8);
		MPI_Irecv(in, RING / 8, MPI_UINT64_T, left, 1, MPI_COMM_WORLD, &rq[0]);
		MPI_Isend(heap + at, RING / 8, MPI_UINT64_T, right, 1, MPI_COMM_WORLD, &rq[1]);
		MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
		for (size_t i = 0; i < RING / 8; i++)
			heap[at + i] ^= mix(in[i]);
		/* a message of many slices */
		if (s % 4 == 1 && size > 1) {
			if (rank == 0) {
				for (size_t i = 0; i < big_n; i++)
					big[i] = heap[i % heap_n] + (uint64_t)s;
				printf("step %d big message\n", s);
				fflush(stdout);
				MPI_Send(big, (int)big_n, MPI_UINT64_T, size - 1, 2, MPI_COMM_WORLD);
			} else if (rank == size - 1) {
				MPI_Recv(big, (int)big_n, MPI_UINT64_T, 0, 2, MPI_COMM_WORLD,
					 MPI_STATUS_IGNORE);
				uint64_t h = 0;
				for (size_t i = 0; i < big_n; i++)
					h = mix(h ^ big[i]);
				heap[s % heap_n] ^= h;
			}
		}
		if (late)
			MPI_Iallreduce(&nbin, &nbout, 1, MPI_UINT64_T, MPI_BXOR, MPI_COMM_WORLD, &nb);
		MPI_Wait(&nb, MPI_STATUS_IGNORE);
		heap[1 % heap_n] ^= mix(nbout);
		/* wildcard receives, folded in the order they match */
		uint64_t mine = 0;
		for (size_t i = 0; i < heap_n; i += 4097)
			mine = mix(mine ^ heap[i]);
		if (rank == 0) {
			if (s == pause_step) {
				char go[4096];
				snprintf(go, sizeof(go), "%s.go", argv[5]);
				printf("step %d: rank 0 waits for %s\n", s, go);
				fflush(stdout);
				struct timespec ts = {0, 10000000};
				while (access(go, F_OK) != 0)
					nanosleep(&ts, NULL);
			}
			uint64_t acc = mine;
			for (int k = 1; k < size; k++) {
				uint64_t v;
				MPI_Status st;
				MPI_Recv(&v, 1, MPI_UINT64_T, MPI_ANY_SOURCE, 3, MPI_COMM_WORLD, &st);
				acc = mix(acc * 31 + (v ^ (uint64_t)st.MPI_SOURCE));
			}
			heap[0] ^= acc;
		} else {
			MPI_Send(&mine, 1, MPI_UINT64_T, 0, 3, MPI_COMM_WORLD);
		}
		uint64_t sum;
		MPI_Allreduce(&mine, &sum, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD);
		sums[s] = sum;
		prev = mine;
		MPI_Barrier(MPI_COMM_WORLD);
		if (rank == 0 && s % 10 == 0) {
			printf("step %d\n", s);
			fflush(stdout);
		}
		if (step_ms > 0) {
			struct timespec ts = {step_ms / 1000, (long)(step_ms % 1000) * 1000000};
			nanosleep(&ts, NULL);
		}
	}
	if (rank == 0 && hold_end) {
		char end[4096];
		snprintf(end, sizeof(end), "%s.end", argv[5]);
		struct timespec ts = {0, 10000000};
		while (access(end, F_OK) != 0)
			nanosleep(&ts, NULL); /* EINTR (a checkpoint's stop): polls again */
	}
	uint64_t mine = 0;
	for (size_t i = 0; i < heap_n; i++)
		mine = mix(mine ^ heap[i]);
	uint64_t *all = malloc((size_t)size * 8);
	MPI_Gather(&mine, 1, MPI_UINT64_T, all, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
	if (rank == 0) {
		FILE *f = fopen(argv[5], "w");
		if (!f) {
			perror(argv[5]);
			MPI_Abort(MPI_COMM_WORLD, 1);
		}
		for (int s = 0; s < steps; s++)
			fprintf(f, "step %d sum %016llx\n", s, (unsigned long long)sums[s]);
		for (int r = 0; r < size; r++)
			fprintf(f, "rank %d heap %016llx\n", r, (unsigned long long)all[r]);
		fclose(f);
		printf("done\n");
	}
	MPI_Finalize();
	return 0;
}
