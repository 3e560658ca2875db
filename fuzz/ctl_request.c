/* A control request as the MM takes it (daemons/mm/request.c): unpack,
 * version and body, then the checks of a Submit or a Cancel against one of
 * several configurations. Input: one byte (bits 0-4: descriptors that came
 * with the frame, bits 5-7: the configuration), then the frame's payload.
 * Properties: a refusal has a code and a one-line reason; an accepted Submit
 * asks for 1..nnodes nodes and at least a rank per node, within the CPUs
 * unless overcommitted and within what a node will start, came with exactly
 * its descriptors, and the Launch the MM will build for it fits a command
 * slot; a decoded request packs back to the same bytes (fuzz/pb.h). */
#include <stdint.h>
#include <string.h>

#include "frame.h"
#include "fuzz.h"
#include "pb.h"
#include "layout.h"
#include "request.h"

static struct storm_conf confs[8];

static void load_confs(void)
{
	static int done;
	if (done)
		return;
	static const struct { const char *names; unsigned cpus; } shapes[8] = {
		{"n1", 1},          {"node[00-07]", 4}, {"node[000-999]", 4096}, {"a,b,c", 2},
		{"node[00-63]", 1}, {"x[1-2]", 4096},   {"node[000-999]", 1},    {"solo", 64},
	};
	for (int i = 0; i < 8; i++) {
		char text[256], err[512];
		snprintf(text, sizeof(text), "[nodes]\nnames = %s\ncpus = %u\n", shapes[i].names,
			 shapes[i].cpus);
		FUZZ_ASSERT(conf_load_string(text, "fuzz.conf", &confs[i], err, sizeof(err)) == 0,
			    "%s", err);
	}
	done = 1;
}

/* The packed size of the Launch command job.c would build for s, with the
 * largest values the MM can put in the fields it fills itself. */
static size_t launch_size(const struct storm_conf *conf, const Storm__Job__Spec *s,
			  const struct submit_plan *plan)
{
	size_t n = plan->nodes, nfiles = s->n_files + !s->no_bcast;
	uint32_t *nodes = malloc(n * sizeof(uint32_t)), *first = malloc(n * sizeof(uint32_t)),
		 *count = malloc(n * sizeof(uint32_t));
	Storm__Cl__JobFile files[FRAME_MAX_FDS + 1], *fp[FRAME_MAX_FDS + 1];
	char user[64], names[FRAME_MAX_FDS + 1][64];
	FUZZ_ASSERT(nodes && first && count, "out of memory");
	for (size_t k = 0; k < n; k++) {
		nodes[k] = (uint32_t)conf->nnodes - 1 - (uint32_t)k; /* the widest indices */
		first[k] = plan->ranks;
		count[k] = plan->ranks - plan->ranks / (uint32_t)n + 1;
	}
	memset(user, 'u', 63);
	user[63] = '\0';
	for (size_t i = 0; i < nfiles && i <= FRAME_MAX_FDS; i++) {
		storm__cl__job_file__init(&files[i]);
		const char *nm = (!s->no_bcast && i == 0) ? mm_base_name(s->program)
							  : mm_base_name(s->files[i - !s->no_bcast]);
		snprintf(names[i], sizeof(names[i]), "%s", mm_plain_name(nm) ? nm : "program");
		files[i].name = names[i];
		files[i].size = UINT64_MAX;
		files[i].mode = 07777;
		fp[i] = &files[i];
	}
	Storm__Cl__Launch l = STORM__CL__LAUNCH__INIT;
	l.job = UINT64_MAX;
	l.slot = GM_JOB_SLOTS - 1;
	l.ranks = plan->ranks;
	l.first_rank = first;
	l.n_first_rank = n;
	l.rank_count = count;
	l.n_rank_count = n;
	/* the description as the MM completes it: the longest user and name */
	Storm__Job__Spec sp = *s;
	char name[64];
	snprintf(name, sizeof(name), "%s", s->name);
	sp.user = user;
	sp.name = name;
	sp.uid = sp.gid = UINT32_MAX;
	sp.restore_checkpoint = UINT64_MAX;
	l.spec = &sp;
	l.exec_path = s->no_bcast ? s->program : "";
	l.files = fp;
	l.n_files = nfiles;
	Storm__Cl__Command cmd = STORM__CL__COMMAND__INIT;
	cmd.seq = UINT32_MAX;
	cmd.nodes = nodes;
	cmd.n_nodes = n;
	cmd.body_case = STORM__CL__COMMAND__BODY_LAUNCH;
	cmd.launch = &l;
	size_t size = storm__cl__command__get_packed_size(&cmd);
	free(nodes);
	free(first);
	free(count);
	return size;
}

static void check_submit(const struct storm_conf *conf, const Storm__Ctl__Submit *sub, int nfds)
{
	if (!sub->spec)
		return; /* the MM refuses it before any check */
	const Storm__Job__Spec *s = sub->spec;
	struct submit_plan plan;
	char why[512] = "";
	Storm__Ctl__ErrorCode code = mm_req_check_submit(conf, s, nfds, &plan, why, sizeof(why));
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE) {
		FUZZ_ONE_LINE(why);
		return;
	}
	FUZZ_ASSERT(plan.nodes >= 1 && plan.nodes <= (uint32_t)conf->nnodes,
		    "accepted %u nodes on a cluster of %d", plan.nodes, conf->nnodes);
	FUZZ_ASSERT(plan.ranks >= plan.nodes, "accepted %u ranks on %u nodes", plan.ranks,
		    plan.nodes);
	FUZZ_ASSERT(s->overcommit || (uint64_t)plan.ranks <= (uint64_t)plan.nodes * conf->cpus,
		    "accepted %u ranks on %u nodes of %u CPUs without overcommit", plan.ranks,
		    plan.nodes, conf->cpus);
	FUZZ_ASSERT((plan.ranks + (uint64_t)plan.nodes - 1) / plan.nodes <= STORM_MAX_LOCAL_RANKS,
		    "accepted %u ranks on %u nodes: more than a node starts (%d)", plan.ranks,
		    plan.nodes, STORM_MAX_LOCAL_RANKS);
	FUZZ_ASSERT(s->nodes == 0 || plan.nodes == s->nodes, "asked %u nodes, planned %u",
		    s->nodes, plan.nodes);
	FUZZ_ASSERT(s->ranks == 0 || plan.ranks == s->ranks, "asked %u ranks, planned %u",
		    s->ranks, plan.ranks);
	FUZZ_ASSERT((size_t)nfds == s->n_files + !s->no_bcast, "accepted with %d descriptors", nfds);
	FUZZ_ASSERT(s->n_argv > 0 && s->argv[0][0] && s->cwd[0] == '/', "no program or cwd");
	size_t size = launch_size(conf, s, &plan);
	FUZZ_ASSERT(4 + size <= GM_CMD_SLOT_SIZE,
		    "accepted a job whose launch command takes %zu bytes (slot %llu)", 4 + size,
		    (unsigned long long)GM_CMD_SLOT_SIZE);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	load_confs();
	if (size < 1)
		return 0;
	int nfds = data[0] & 31;
	const struct storm_conf *conf = &confs[data[0] >> 5];
	Storm__Ctl__Request *req;
	char why[512] = "";
	Storm__Ctl__ErrorCode code = mm_req_decode(data + 1, size - 1, &req, why, sizeof(why));
	if (code != STORM__CTL__ERROR_CODE__ERR_NONE) {
		FUZZ_ASSERT(req == NULL, "a refused request was returned");
		FUZZ_ONE_LINE(why);
		return 0;
	}
	FUZZ_ASSERT(req && req->version == PROTO_VERSION, "accepted version %u", req->version);

	pb_round_trip(&req->base);

	switch (req->body_case) {
	case STORM__CTL__REQUEST__BODY_SUBMIT:
		check_submit(conf, req->submit, nfds);
		break;
	case STORM__CTL__REQUEST__BODY_CANCEL:
		if (mm_req_check_cancel(req->cancel, why, sizeof(why)) ==
		    STORM__CTL__ERROR_CODE__ERR_NONE)
			FUZZ_ASSERT(req->cancel->signal >= 0 && req->cancel->signal <= 64,
				    "accepted signal %d", req->cancel->signal);
		else
			FUZZ_ONE_LINE(why);
		break;
	default:
		break;
	}
	storm__ctl__request__free_unpacked(req, NULL);
	return 0;
}
