/* A command ring slot as the node daemon decodes it (daemons/node/check.c:
 * nd_command_decode, nd_launch_problem; main.c and ranks.c act on it).
 * Input: the slot's bytes (u32 length word, packed storm.cl.Command), in a
 * buffer of exactly GM_CMD_SLOT_SIZE bytes. Properties: nothing is read
 * beyond the slot; a Launch the node accepts for one of its addressees has
 * a job id, a done slot in range, one rank list entry per addressee, at most
 * STORM_MAX_LOCAL_RANKS local ranks numbered within the job's size, a program
 * and only plain file names; a refusal says why in one line. */
#include <stdint.h>
#include <string.h>

#include "fuzz.h"
#include "nd.h"
#include "pb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t *slot;
	if (!slot)
		slot = malloc(GM_CMD_SLOT_SIZE);
	if (size > GM_CMD_SLOT_SIZE || size < 4)
		return 0;
	memset(slot, 0, GM_CMD_SLOT_SIZE);
	memcpy(slot, data, size);
	uint32_t len;
	Storm__Cl__Command *cmd = nd_command_decode(slot, &len);
	if (!cmd)
		return 0;
	FUZZ_ASSERT(len > 0 && len <= GM_CMD_SLOT_SIZE - 4, "decoded %u bytes", len);
	pb_round_trip(&cmd->base);
	if (cmd->body_case == STORM__CL__COMMAND__BODY_LAUNCH) {
		const Storm__Cl__Launch *L = cmd->launch;
		/* the node acts only where it is addressed: each position k */
		size_t upto = cmd->n_nodes < 64 ? cmd->n_nodes : 64;
		for (size_t k = 0; k < upto; k++) {
			char why[512] = "";
			const char *bad = nd_launch_problem(cmd, k, why, sizeof(why));
			if (bad) {
				FUZZ_ONE_LINE(bad);
				continue;
			}
			FUZZ_ASSERT(L->job != 0 && L->slot < GM_JOB_SLOTS, "job %llu slot %u",
				    (unsigned long long)L->job, L->slot);
			FUZZ_ASSERT(L->n_first_rank == cmd->n_nodes && L->n_rank_count == cmd->n_nodes,
				    "rank lists of %zu and %zu for %zu nodes", L->n_first_rank,
				    L->n_rank_count, cmd->n_nodes);
			uint32_t count = L->rank_count[k], first = L->first_rank[k];
			FUZZ_ASSERT(count <= STORM_MAX_LOCAL_RANKS, "%u local ranks", count);
			FUZZ_ASSERT((uint64_t)first + count <= L->ranks,
				    "ranks %u..%u of a job of %u ranks", first, first + count - 1,
				    L->ranks);
			/* a restart's ranks come from their images, not a program */
			FUZZ_ASSERT(L->restore || L->exec_path[0] || L->n_files > 0, "no program");
			FUZZ_ASSERT(!L->restore || ((!L->restore_dir[0] ||
						     nd_valid_ckpt_dir(L->restore_dir)) &&
						    (!L->files_dir[0] || nd_valid_ckpt_dir(L->files_dir))),
				    "checkpoint directories '%s' '%s'", L->restore_dir, L->files_dir);
			for (size_t i = 0; i < L->n_files; i++)
				FUZZ_ASSERT(nd_valid_basename(L->files[i]->name) &&
						    !strchr(L->files[i]->name, '/'),
					    "file name '%s'", L->files[i]->name);
			/* a replay's trace is read from the job directory: one of its files */
			bool listed = !L->spec->replay_trace[0];
			for (size_t i = 0; i < L->n_files && !listed; i++)
				listed = !strcmp(L->files[i]->name, L->spec->replay_trace);
			FUZZ_ASSERT(listed, "replay trace '%s' is not among the job's files",
				    L->spec->replay_trace);
		}
	}
	storm__cl__command__free_unpacked(cmd, NULL);
	return 0;
}
