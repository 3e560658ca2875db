/* Decoding and checking control requests (request.h). */
#include "request.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "layout.h"

#define LAUNCH_ROOM (GM_CMD_SLOT_SIZE - 4096) /* argv + env must fit a command */

static Storm__Ctl__ErrorCode refuse(Storm__Ctl__ErrorCode code, char *why, size_t whylen,
				    const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static Storm__Ctl__ErrorCode refuse(Storm__Ctl__ErrorCode code, char *why, size_t whylen,
				    const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(why, whylen, fmt, ap);
	va_end(ap);
	return code;
}

Storm__Ctl__ErrorCode mm_req_decode(const uint8_t *buf, size_t len, Storm__Ctl__Request **out,
				    char *why, size_t whylen)
{
	*out = NULL;
	Storm__Ctl__Request *req = storm__ctl__request__unpack(NULL, len, buf);
	if (!req)
		return refuse(STORM__CTL__ERROR_CODE__ERR_PROTOCOL, why, whylen,
			      "malformed request (%zu bytes that are not a storm.ctl.Request)", len);
	if (req->version != PROTO_VERSION) {
		refuse(STORM__CTL__ERROR_CODE__ERR_PROTOCOL, why, whylen,
		       "protocol version %u is not supported (this manager speaks %u)",
		       req->version, PROTO_VERSION);
		storm__ctl__request__free_unpacked(req, NULL);
		return STORM__CTL__ERROR_CODE__ERR_PROTOCOL;
	}
	switch (req->body_case) {
	case STORM__CTL__REQUEST__BODY_SUBMIT:
	case STORM__CTL__REQUEST__BODY_JOBS:
	case STORM__CTL__REQUEST__BODY_NODES:
	case STORM__CTL__REQUEST__BODY_CANCEL:
	case STORM__CTL__REQUEST__BODY_STATUS:
	case STORM__CTL__REQUEST__BODY_MATRIX:
	case STORM__CTL__REQUEST__BODY_SHUTDOWN:
	case STORM__CTL__REQUEST__BODY_CHECKPOINT:
	case STORM__CTL__REQUEST__BODY_RESTART:
	case STORM__CTL__REQUEST__BODY_CHECKPOINTS:
	case STORM__CTL__REQUEST__BODY_DELETE_CHECKPOINT:
	case STORM__CTL__REQUEST__BODY_ACCT:
	case STORM__CTL__REQUEST__BODY_TRACE:
	case STORM__CTL__REQUEST__BODY_TRACES:
	case STORM__CTL__REQUEST__BODY_STDIN:
		*out = req;
		return STORM__CTL__ERROR_CODE__ERR_NONE;
	default:
		storm__ctl__request__free_unpacked(req, NULL);
		return refuse(STORM__CTL__ERROR_CODE__ERR_PROTOCOL, why, whylen,
			      "empty or unknown request");
	}
}

Storm__Cl__Report *mm_report_decode(const uint8_t *slot, uint32_t len, const char **why)
{
	if (len > GM_REPORT_SLOT_SIZE - 4) {
		*why = "report length exceeds its slot";
		return NULL;
	}
	Storm__Cl__Report *r = storm__cl__report__unpack(NULL, len, slot + 4);
	if (!r)
		*why = "undecodable report";
	return r;
}

const char *mm_printable(const char *s, char *buf, size_t len)
{
	size_t i = 0;
	for (; s[i] && i + 1 < len; i++)
		buf[i] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
	buf[i] = '\0';
	return buf;
}

const char *mm_base_name(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

bool mm_plain_name(const char *s)
{
	return s[0] && strlen(s) < sizeof(((struct file_chunk *)0)->name) && !strchr(s, '/') &&
	       strcmp(s, ".") && strcmp(s, "..");
}

Storm__Ctl__ErrorCode mm_req_check_submit(const struct storm_conf *conf,
					  const Storm__Job__Spec *s, int nfds,
					  struct submit_plan *plan, char *why, size_t whylen)
{
	uint32_t cpus = conf->cpus, total = (uint32_t)conf->nnodes;
	uint32_t nodes = s->nodes, ranks = s->ranks;
#define REFUSE(code, ...) return refuse(STORM__CTL__ERROR_CODE__##code, why, whylen, __VA_ARGS__)
	if (s->n_argv == 0 || !s->argv[0][0])
		REFUSE(ERR_INVALID, "no program to run");
	if (!s->cwd[0] || s->cwd[0] != '/')
		REFUSE(ERR_INVALID, "the working directory must be an absolute path");
	if (nodes == 0 && ranks == 0)
		nodes = ranks = 1;
	else if (nodes == 0) /* in 64 bits: ranks near 2^32 wrapped to 0 nodes */
		nodes = (uint32_t)(((uint64_t)ranks + cpus - 1) / cpus);
	else if (ranks == 0)
		ranks = nodes;
	if (nodes > total && s->nodes == 0)
		REFUSE(ERR_INVALID,
		       "%u ranks need %u nodes of %u CPUs but the cluster has %u nodes (%u CPUs); use --overcommit",
		       ranks, nodes, cpus, total, total * cpus);
	if (nodes > total)
		REFUSE(ERR_INVALID, "%u nodes requested but the cluster has %u", nodes, total);
	if (ranks < nodes)
		REFUSE(ERR_INVALID, "%u ranks cannot occupy %u nodes (at least one rank per node)",
		       ranks, nodes);
	if (!s->overcommit && ranks > nodes * cpus) {
		if (s->nodes == 0)
			REFUSE(ERR_INVALID,
			       "%u ranks need %u CPUs but the cluster holds %u (%u nodes of %u CPUs); use --overcommit",
			       ranks, ranks, total * cpus, total, cpus);
		REFUSE(ERR_INVALID,
		       "%u ranks on %u nodes exceed their %u CPUs (%u per node); use more nodes or --overcommit",
		       ranks, nodes, nodes * cpus, cpus);
	}
	/* a node starts at most STORM_MAX_LOCAL_RANKS of a job: with
	 * --overcommit more would be accepted here and fail on every node */
	if ((ranks + (uint64_t)nodes - 1) / nodes > STORM_MAX_LOCAL_RANKS)
		REFUSE(ERR_INVALID,
		       "%u ranks on %u nodes put more than %d on a node, the most a node starts",
		       ranks, nodes, STORM_MAX_LOCAL_RANKS);
	if (s->timeslice_us && s->allocation)
		REFUSE(ERR_INVALID, "a step runs in its allocation's slices: --timeslice-us is for "
				    "a job of its own (storm run or storm submit outside one)");
	if (s->timeslice_us &&
	    (s->timeslice_us < conf->min_timeslice_us || s->timeslice_us > conf->timeslice_us))
		REFUSE(ERR_INVALID,
		       "--timeslice-us %u is outside this cluster's %u-%u us (min_timeslice_us to "
		       "timeslice_us)",
		       s->timeslice_us, conf->min_timeslice_us, conf->timeslice_us);
	size_t need_fds = s->n_files + (s->no_bcast ? 0 : 1);
	if ((size_t)nfds != need_fds)
		REFUSE(ERR_PROTOCOL, "%zu file descriptors expected with the request, %d came",
		       need_fds, nfds);
	size_t room = 0;
	for (size_t i = 0; i < s->n_argv; i++)
		room += strlen(s->argv[i]) + 4;
	for (size_t i = 0; i < s->n_env; i++)
		room += strlen(s->env[i]) + 4;
	/* the Launch also lists per node its index, first rank and rank count
	 * (up to 16 bytes as varints) and per file a name, size and mode */
	/* ... and the rest of the job description: its paths, names (the MM
	 * keeps 63 bytes of the job's), user and ids */
	for (size_t i = 0; i < s->n_files; i++)
		room += strlen(s->files[i]) + 4;
	size_t name = strlen(s->name);
	room += strlen(s->cwd) + strlen(s->program) + strlen(s->output) + (name < 63 ? name : 63) +
		128 + 96 * need_fds + 16 * (size_t)nodes;
	if (room > LAUNCH_ROOM)
		REFUSE(ERR_INVALID,
		       "arguments and environment take %zu bytes with the rank lists of %u nodes; "
		       "at most %llu fit a launch command",
		       room, nodes, (unsigned long long)LAUNCH_ROOM);
	if (s->no_bcast && s->program[0] != '/')
		REFUSE(ERR_INVALID, "with --no-bcast the program needs an absolute path");
	char shown[256];
	for (size_t i = 0; i < s->n_files; i++)
		if (!mm_plain_name(mm_base_name(s->files[i])))
			REFUSE(ERR_INVALID, "bad file name '%s'",
			       mm_printable(s->files[i], shown, sizeof(shown)));
#undef REFUSE
	plan->nodes = nodes;
	plan->ranks = ranks;
	return STORM__CTL__ERROR_CODE__ERR_NONE;
}

Storm__Ctl__ErrorCode mm_req_check_cancel(const Storm__Ctl__Cancel *cn, char *why, size_t whylen)
{
	if (cn->signal < 0 || cn->signal > 64)
		return refuse(STORM__CTL__ERROR_CODE__ERR_INVALID, why, whylen, "bad signal %d",
			      cn->signal);
	return STORM__CTL__ERROR_CODE__ERR_NONE;
}
