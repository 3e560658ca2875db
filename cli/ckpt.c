/* storm checkpoint, storm restart, storm checkpoints: coordinated
 * checkpoints of whole jobs (daemons/mm/ckpt.c). */
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "frame.h"
#include "jobid.h"
#include "fmt.h"
#include "opts.h"

enum { K_JSON = 1, K_NODES, K_LABEL, K_DELETE, K_CONF, K_HELP };

static const char checkpoint_help[] =
	"Usage: storm checkpoint [--json] JOBID\n"
	"\n"
	"Checkpoints a running job: at the next timeslice boundary the job is\n"
	"frozen, every node saves its ranks (memory, registers, signals, open\n"
	"files) into its state directory, and the job goes on; a job of two nodes\n"
	"or more also gets a copy of each node's images on another of its nodes\n"
	"(checkpoint_copies in storm.conf). Prints the checkpoint's id once every\n"
	"node has confirmed; 'storm restart ID' starts\n"
	"the job again from it. Only the job's owner or root may checkpoint it.\n"
	"\n"
	"      --json      print the checkpoint as JSON\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help      this help\n";

static const char restart_help[] =
	"Usage: storm restart [-N NODES] [-l] CHECKPOINT\n"
	"\n"
	"Starts a new job from a complete checkpoint (see storm checkpoints) and\n"
	"streams its output like storm run; exits with the job's status. A node\n"
	"that holds a rank's image (or its copy) restores it from there; other\n"
	"nodes receive it over the fabric from one that holds it. Incomplete\n"
	"checkpoints are refused.\n"
	"\n"
	"  -N, --nodes N   nodes to run on (default: as many as the job had)\n"
	"  -l, --label     prefix every output line with 'RANK: '\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help      this help\n";

static const char checkpoints_help[] =
	"Usage: storm checkpoints [--json] [--delete ID]\n"
	"\n"
	"Lists the checkpoints the machine manager knows: id, job, epoch (the\n"
	"job's n-th checkpoint), user, nodes, size, whether it is complete (only\n"
	"complete ones restart) and when it was taken. --delete removes one and\n"
	"its images on the nodes (owner or root).\n"
	"\n"
	"      --json      print {\"checkpoints\": [...]} for scripts\n"
	"      --delete ID delete checkpoint ID\n"
	"      --conf FILE the cluster's storm.conf\n"
	"  -h, --help      this help\n";

static int print_json(json_t *root)
{
	int rc = json_dumpf(root, stdout, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
	json_decref(root);
	if (rc != 0 || fputc('\n', stdout) == EOF) {
		fprintf(stderr, "storm: error: cannot write JSON: %s\n", strerror(errno));
		return EXIT_STORM;
	}
	return 0;
}

static json_t *ckpt_json(const Storm__Ctl__CheckpointInfo *k)
{
	/* where each rank's image is, and its buddy copy (null: none) */
	json_t *images = json_array();
	for (size_t r = 0; images && r < k->n_image_nodes; r++)
		json_array_append_new(images, json_pack("{s:i, s:s, s:s?}", "rank", (int)r, "node",
							k->image_nodes[r], "copy",
							r < k->n_copy_nodes && k->copy_nodes[r][0]
								? k->copy_nodes[r] : NULL));
	json_t *o = json_pack("{s:I, s:I, s:i, s:s, s:s, s:i, s:s, s:i, s:i, s:I, s:b, s:f, s:f, s:f, s:s, s:o}",
			 "id", (json_int_t)k->id, "job", (json_int_t)k->job, "epoch", (int)k->epoch,
			 "name", k->name, "user", k->user, "uid", (int)k->uid, "nodelist",
			 k->nodelist, "nodes", (int)k->nodes, "ranks", (int)k->ranks, "bytes",
			 (json_int_t)k->bytes, "complete", (int)k->complete, "time", k->time,
			 "seconds", k->seconds, "frozen", k->frozen, "reason", k->reason, "images",
			 images ? images : json_array());
	/* a recorded job's: its mark in the trace, 4 counts per rank */
	if (o && k->n_bcs_marks) {
		json_t *m = json_array();
		for (size_t i = 0; i < k->n_bcs_marks; i++)
			json_array_append_new(m, json_integer((json_int_t)k->bcs_marks[i]));
		json_object_set_new(o, "bcs_marks", m);
	}
	return o;
}

static int one_id(const char *cmd, struct cli_optparse *p, const char *s, uint64_t *id)
{
	(void)p;
	if (parse_uint(s, 1, UINT64_MAX >> 1, id) != 0)
		return usage_error(cmd, "'%s' is not an id (a whole number from 1)", s);
	return -1;
}

int cmd_checkpoint(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "json", 0, 0, K_JSON }, { "conf", 0, 1, K_CONF }, { "help", 'h', 0, K_HELP },
		{ NULL, 0, 0, 0 },
	};
	int json = 0, id, rc;
	uint64_t job = 0;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case K_JSON: json = 1; break;
		case K_CONF: c->conf_opt = p.arg; break;
		case K_HELP: fputs(checkpoint_help, stdout); return EXIT_OK;
		case OPT_OPERAND:
			if (job)
				return usage_error("storm checkpoint", "one job at a time");
		{
			struct jobref ref;
			if (jobid_parse(p.arg, &ref) < 0 || ref.task_given)
				return usage_error("storm checkpoint", "'%s' is not a job id (JOBID "
						   "or JOBID.STEP; an array task by its own id)", p.arg);
			job = ref.id;
			break;
		}
		default: return usage_error("storm checkpoint", "%s", p.err);
		}
	}
	if (!job)
		return usage_error("storm checkpoint", "no job given");
	Storm__Ctl__Checkpoint ck = STORM__CTL__CHECKPOINT__INIT;
	ck.job = job;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_CHECKPOINT;
	req.checkpoint = &ck;
	/* as long as the nodes take to write the images */
	Storm__Ctl__Reply *rep = cli_call_for(c, &req, -1, STORM__CTL__REPLY__BODY_CHECKPOINTED, &rc);
	if (!rep)
		return rc;
	const Storm__Ctl__CheckpointInfo *k = rep->checkpointed;
	if (json) {
		rc = print_json(ckpt_json(k));
	} else {
		char size[32], shown[48];
		fmt_bytes(k->bytes, size, sizeof(size));
		jobid_format(k->job, 0, 0, shown, sizeof(shown));
		printf("checkpoint %llu of job %s (epoch %u): %s on %s, %.3f s (job frozen %.3f s)\n",
		       (unsigned long long)k->id, shown, k->epoch, size,
		       k->nodelist, k->seconds, k->frozen);
	}
	ctl_reply_free(rep);
	return rc;
}

int cmd_restart(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "nodes", 'N', 1, K_NODES }, { "label", 'l', 0, K_LABEL },
		{ "conf", 0, 1, K_CONF },     { "help", 'h', 0, K_HELP },
		{ NULL, 0, 0, 0 },
	};
	int id, rc, label = 0;
	uint64_t ckpt = 0, nodes = 0;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case K_NODES:
			if (parse_uint(p.arg, 1, 1u << 20, &nodes) != 0)
				return usage_error("storm restart",
						   "-N/--nodes wants a whole number from 1, not '%s'",
						   p.arg);
			break;
		case K_LABEL: label = 1; break;
		case K_CONF: c->conf_opt = p.arg; break;
		case K_HELP: fputs(restart_help, stdout); return EXIT_OK;
		case OPT_OPERAND:
			if (ckpt)
				return usage_error("storm restart", "one checkpoint at a time");
			if ((rc = one_id("storm restart", &p, p.arg, &ckpt)) >= 0)
				return rc;
			break;
		default: return usage_error("storm restart", "%s", p.err);
		}
	}
	if (!ckpt)
		return usage_error("storm restart", "no checkpoint given");
	Storm__Ctl__Restart rs = STORM__CTL__RESTART__INIT;
	rs.checkpoint = ckpt;
	rs.nodes = (uint32_t)nodes;
	return cli_restart(c, &rs, "storm restart", label, -1);
}

/* Sends a restart (storm restart, storm replay --from) and streams the
 * restored job's output as storm run does. A replay's trace goes with the
 * request as storm run's --file does (a descriptor, its bytes over TCP),
 * so no node needs to see the path it was read from. */
int cli_restart(struct cli *c, Storm__Ctl__Restart *rs, const char *cmd, int label,
		int trace_fd)
{
	int fd = cli_connect(c);
	if (fd < 0)
		return EXIT_STORM;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_RESTART;
	req.restart = rs;
	Storm__Ctl__FileData msg, *ptr = &msg;
	uint8_t *data = NULL;
	size_t total = 0;
	int remote = ctl_is_remote(fd), e = 0;
	rs->replay = trace_fd >= 0;
	if (rs->replay && remote) {
		e = cli_file_inline(trace_fd, "the trace", &total, &msg, &data);
		if (e == -EFBIG)
			fprintf(stderr, "%s: error: the trace exceeds the %u MiB a request over TCP "
				"carries\n", cmd, FRAME_MAX >> 20);
		rs->files = &ptr;
		rs->n_files = 1;
	}
	if (!e)
		e = ctl_send(fd, &req, trace_fd >= 0 && !remote ? &trace_fd : NULL,
			     trace_fd >= 0 && !remote);
	free(data);
	rs->files = NULL;
	rs->n_files = 0;
	if (e != 0) {
		if (e != -1 && e != -EFBIG)
			ctl_report(e);
		close(fd);
		return EXIT_STORM;
	}
	int rc = cli_stream(c, fd, cmd, label);
	close(fd);
	return rc;
}

int cmd_checkpoints(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "json", 0, 0, K_JSON }, { "delete", 0, 1, K_DELETE }, { "conf", 0, 1, K_CONF },
		{ "help", 'h', 0, K_HELP }, { NULL, 0, 0, 0 },
	};
	int json = 0, id, rc;
	uint64_t del = 0;
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case K_JSON: json = 1; break;
		case K_DELETE:
			if ((rc = one_id("storm checkpoints", &p, p.arg, &del)) >= 0)
				return rc;
			break;
		case K_CONF: c->conf_opt = p.arg; break;
		case K_HELP: fputs(checkpoints_help, stdout); return EXIT_OK;
		case OPT_OPERAND:
			return usage_error("storm checkpoints", "unexpected argument '%s'", p.arg);
		default: return usage_error("storm checkpoints", "%s", p.err);
		}
	}
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	Storm__Ctl__ListCheckpoints lc = STORM__CTL__LIST_CHECKPOINTS__INIT;
	Storm__Ctl__DeleteCheckpoint dc = STORM__CTL__DELETE_CHECKPOINT__INIT;
	if (del) {
		dc.checkpoint = del;
		req.body_case = STORM__CTL__REQUEST__BODY_DELETE_CHECKPOINT;
		req.delete_checkpoint = &dc;
	} else {
		req.body_case = STORM__CTL__REQUEST__BODY_CHECKPOINTS;
		req.checkpoints = &lc;
	}
	Storm__Ctl__Reply *rep = cli_call(c, &req, CTL_TIMEOUT_MS, &rc);
	if (!rep)
		return rc;
	if (del) {
		if (rep->body_case != STORM__CTL__REPLY__BODY_CHECKPOINTED)
			rc = cli_unexpected(rep, "CheckpointInfo");
		else if (json)
			rc = print_json(ckpt_json(rep->checkpointed));
		else
			printf("deleted checkpoint %llu of job %llu\n", (unsigned long long)del,
			       (unsigned long long)rep->checkpointed->job);
		ctl_reply_free(rep);
		return rc;
	}
	if (rep->body_case != STORM__CTL__REPLY__BODY_CHECKPOINTS) {
		rc = cli_unexpected(rep, "CheckpointList");
		ctl_reply_free(rep);
		return rc;
	}
	const Storm__Ctl__CheckpointList *l = rep->checkpoints;
	if (json) {
		json_t *arr = json_array();
		for (size_t i = 0; i < l->n_checkpoints; i++)
			json_array_append_new(arr, ckpt_json(l->checkpoints[i]));
		rc = print_json(json_pack("{s:o}", "checkpoints", arr));
		ctl_reply_free(rep);
		return rc;
	}
	printf("%-6s %-6s %-5s %-12s %-10s %-10s %-10s %-8s %s\n", "ID", "JOB", "EPOCH", "NAME",
	       "USER", "SIZE", "STATE", "SECONDS", "NODELIST(REASON)");
	for (size_t i = 0; i < l->n_checkpoints; i++) {
		const Storm__Ctl__CheckpointInfo *k = l->checkpoints[i];
		char size[32];
		fmt_bytes(k->bytes, size, sizeof(size));
		printf("%-6llu %-6llu %-5u %-12.12s %-10.10s %-10s %-10s %-8.3f %s%s%s%s\n",
		       (unsigned long long)k->id, (unsigned long long)k->job, k->epoch, k->name,
		       k->user, size, k->complete ? "COMPLETE" : "INCOMPLETE", k->seconds,
		       k->nodelist, k->reason[0] ? " (" : "", k->reason, k->reason[0] ? ")" : "");
	}
	ctl_reply_free(rep);
	return 0;
}
