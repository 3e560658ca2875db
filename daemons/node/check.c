/* What the node daemon decodes from global memory, checked apart from the
 * daemon's state: pure, so the fuzz harnesses (fuzz/nd_*.c) drive exactly
 * the checks stormnd runs on strobes, command slots, launches and file
 * chunks the MM wrote. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"
#include "nd.h"

bool nd_valid_basename(const char *name)
{
	return name[0] && strcmp(name, ".") && strcmp(name, "..") && !strchr(name, '/');
}

bool nd_valid_ckpt_dir(const char *d)
{
	/* relative to the state directory, under ckpt/, never climbing out */
	size_t n = strlen(d);
	return !strncmp(d, "ckpt/", 5) && !strstr(d, "..") && d[n - 1] != '/' && !strstr(d, "//");
}

bool nd_valid_ckpt_file(const char *name)
{
	const char *base = strrchr(name, '/');
	return strlen(name) < ND_COPY_NAME_MAX - 8 && nd_valid_ckpt_dir(name) && base &&
	       nd_valid_basename(base + 1);
}

const char *nd_copy_problem(const struct nd_copy_hdr *h, size_t body_len)
{
	if (body_len < sizeof(*h) || h->len != body_len - sizeof(*h))
		return "its length does not match its data";
	if (strnlen(h->name, sizeof(h->name)) == sizeof(h->name))
		return "its name is not terminated";
	if (!nd_valid_ckpt_file(h->name))
		return "its name is not a checkpoint file";
	if (h->offset > h->size || h->len > h->size - h->offset)
		return "its data lies outside the file";
	return NULL;
}

int nd_strobe_read(const uint8_t *area, size_t len, uint32_t index, struct strobe *s,
		   uint64_t *ack, uint64_t *run, struct strobe_slot *slots, uint64_t *run_ahead)
{
	*ack = *run = 0;
	memset(s, 0, sizeof(*s));
	if (len < sizeof(*s))
		return -1;
	memcpy(s, area, sizeof(*s));
	unsigned k = strobe_ahead(s);
	if (s->nnodes > STORM_MAX_NODES || k > STROBE_AHEAD_MAX || strobe_size(s->nnodes, k) > len)
		return -1;
	if (index < s->nnodes) {
		memcpy(ack, area + sizeof(*s) + 8 * (uint64_t)index, 8);
		memcpy(run, area + sizeof(*s) + 8 * ((uint64_t)s->nnodes + index), 8);
	}
	if (!k)
		return 0;
	const uint8_t *sl = area + sizeof(*s) + 16 * (size_t)s->nnodes;
	memcpy(slots, sl, sizeof(*slots) * (k + 1));
	/* the slots follow each other: a node arms its timer on them in order */
	for (unsigned i = 1; i <= k; i++)
		if (slots[i].start_ns <= slots[i - 1].start_ns)
			return -1;
	const uint8_t *ra = sl + sizeof(*slots) * (k + 1);
	for (unsigned i = 0; i < k; i++) {
		run_ahead[i] = 0;
		if (index < s->nnodes)
			memcpy(&run_ahead[i], ra + 8 * ((size_t)i * s->nnodes + index), 8);
	}
	return 0;
}

Storm__Cl__Command *nd_command_decode(const uint8_t *slot, uint32_t *len)
{
	memcpy(len, slot, 4);
	if (*len == 0 || *len > GM_CMD_SLOT_SIZE - 4)
		return NULL;
	return storm__cl__command__unpack(NULL, *len, slot + 4);
}

const char *nd_launch_problem(const Storm__Cl__Command *cmd, size_t k, char *why, size_t len)
{
	const Storm__Cl__Launch *L = cmd->launch;
	if (L->job == 0 || L->slot >= GM_JOB_SLOTS || L->n_first_rank != cmd->n_nodes ||
	    L->n_rank_count != cmd->n_nodes || k >= cmd->n_nodes)
		return "malformed launch (job id, slot or per-node rank lists)";
	if (!L->spec)
		return "launch without a job description";
	uint32_t count = L->rank_count[k], first = L->first_rank[k];
	if (count > ND_MAX_LOCAL_RANKS) {
		snprintf(why, len, "%u ranks on one node (at most %d)", count, ND_MAX_LOCAL_RANKS);
		return why;
	}
	/* STORM_RANK must stay below STORM_SIZE, and a rank's exit must name one
	 * the MM knows */
	if ((uint64_t)first + count > L->ranks) {
		snprintf(why, len, "ranks %u..%llu on this node, but the job has %u", first,
			 (unsigned long long)first + count - 1, L->ranks);
		return why;
	}
	if (!L->restore && !L->exec_path[0] && L->n_files == 0)
		return "no program: neither exec_path nor files";
	if (L->restore && ((L->restore_dir[0] && !nd_valid_ckpt_dir(L->restore_dir)) ||
			   (L->files_dir[0] && !nd_valid_ckpt_dir(L->files_dir))))
		return "bad checkpoint directory in a restart";
	for (size_t i = 0; i < L->n_files; i++)
		if (!nd_valid_basename(L->files[i]->name)) {
			/* the reason goes to the user in one line: no control characters */
			snprintf(why, len, "file name '%.64s' is not a plain basename",
				 L->files[i]->name);
			for (char *c = why; *c; c++)
				if ((unsigned char)*c < 0x20 || *c == 0x7f)
					*c = '?';
			return why;
		}
	/* a replay's trace is read from the job directory: it must be one of
	 * the files sent there, whose arrival the launch checks */
	bool listed = !L->spec->replay_trace[0];
	for (size_t i = 0; i < L->n_files && !listed; i++)
		listed = !strcmp(L->files[i]->name, L->spec->replay_trace);
	if (!listed)
		return "the trace to replay is not among the job's files";
	return NULL;
}

const char *nd_chunk_problem(const struct file_chunk *c)
{
	if (!memchr(c->name, '\0', sizeof(c->name)))
		return "file name is not terminated";
	if (!nd_valid_basename(c->name))
		return "file name is not a plain basename";
	if (c->job == 0)
		return "job id 0";
	if (c->len > GM_FILE_DATA_MAX)
		return "length exceeds the file buffer";
	if (c->offset > c->size || c->len > c->size - c->offset)
		return "data beyond the announced file size";
	return NULL;
}
