/* What storm needs of the Slurm allocation it runs inside (storm cluster up
 * --slurm): its nodes and where to reach the first, read through Slurm's own
 * commands, and the job steps that start the daemons. */
#ifndef STORM_VCLUSTER_SLURM_H
#define STORM_VCLUSTER_SLURM_H

#include <stddef.h>
#include <sys/types.h>

#include "config.h"

struct slurm_alloc {
	char job_id[32];
	int nnodes;
	char (*nodes)[HOSTNAME_MAX]; /* Slurm's node names, in SLURM_JOB_NODELIST order */
	char first_addr[256];        /* the first node's NodeAddr: where the MM listens */
	unsigned cpus;               /* the fewest CPUs the allocation has on a node; 0: unknown */
	char munge_socket[256];      /* AuthInfo's socket=, or "" for munged's default */
};

/* Reads the allocation from the environment (SLURM_JOB_ID,
 * SLURM_JOB_NODELIST, SLURM_JOB_CPUS_PER_NODE) and scontrol. 0, or -1 with
 * a one-line reason in err. */
int slurm_alloc_read(struct slurm_alloc *a, char *err, size_t errlen);
void slurm_alloc_free(struct slurm_alloc *a);

/* Starts `srun --overlap` running task_argv: on the first node alone
 * (first_only), else once on every node. Its stdout goes to out_fd (-1:
 * /dev/null), its stderr stays ours; env_add ("NAME=VALUE", NULL-ended) is
 * added to its environment only. pid, or -errno. */
pid_t slurm_srun(const struct slurm_alloc *a, int first_only, char *const task_argv[],
		 char *const env_add[], int out_fd);

#endif
