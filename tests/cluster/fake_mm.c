/* fake_mm: plays the machine manager against real stormnd processes, by the
 * protocol of common/layout.h, and checks what the node daemons report.
 *
 *   fake_mm --stormnd build/bin/stormnd [--nodes 3] [--valgrind] [--keep]
 *
 * It writes a storm.conf in a fresh temporary directory, starts one stormnd
 * per node (optionally under valgrind, which must then find no errors or
 * leaks), opens the fabric as node 0, and runs: heartbeat, /bin/echo on two
 * nodes, a transferred script with a 9 MiB data file run as another user,
 * large output, a signal, a signal with SIGKILL after a grace time, bad
 * input (malformed command, bad file chunk, missing file, missing program,
 * missing cwd), forged, altered and replayed strobes, commands and acks
 * (refused and logged, the daemons go on), a node that misses strobes and
 * commands, one that hears the strobes but never gets their commands, and a
 * shutdown while a job runs.
 * Exit 0 when all hold. Each daemon's log: DIR/<node>.log. */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <getopt.h>
#include <inttypes.h>
#include <poll.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cluster.pb-c.h"
#include "config.h"
#include "gm_auth.h"
#include "layout.h"
#include "sn.h"

#define MAXN 16
#define MAXJOB 18
#define MAXRANK 64

struct rank_out {
	char *text[3]; /* by stream */
	size_t len[3];
	bool exited;
	int status;
};

struct job {
	uint32_t nranks;
	struct rank_out r[MAXRANK];
	int started[MAXN], failed[MAXN], done[MAXN];
	char fail_msg[512];
};

static struct {
	struct storm_conf conf;
	struct sn_ctx *sn;
	uint32_t n;
	uint64_t slice, ack[MAXN], reports[MAXN];
	uint32_t cmd_seq, cmd_done[MAXN];
	uint64_t file_seq;
	uint64_t next_strobe_ns;
	struct job jobs[MAXJOB];
	int failures;
	char dir[256];
	pid_t pids[MAXN];
	bool down[MAXN]; /* left out of strobes and commands */
	bool cut[MAXN];  /* strobed, but sent no command (as if each were dropped) */
	uint64_t run[MAXN]; /* the job each node runs: the last launched there */
	uint8_t key[GM_KEY_LEN];
	uint8_t last_strobe[GM_STROBE_MAX]; /* for the replay test */
} mm;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fake_mm: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
}

#define CHECK(cond, ...)                                                       \
	do {                                                                   \
		if (!(cond)) {                                                 \
			mm.failures++;                                         \
			say("FAIL %s:%d: %s", __FILE__, __LINE__, #cond);      \
			say(__VA_ARGS__);                                      \
		}                                                              \
	} while (0)

static void fatal(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "fake_mm: error: ");
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\n");
	va_end(ap);
	/* SIGTERM, so the daemons take their ranks with them */
	for (uint32_t i = 0; i < mm.n; i++)
		if (mm.pids[i] > 0)
			kill(mm.pids[i], SIGTERM);
	for (uint32_t i = 0; i < mm.n; i++)
		if (mm.pids[i] > 0)
			waitpid(mm.pids[i], NULL, 0);
	fprintf(stderr, "fake_mm: files kept in %s\n", mm.dir);
	exit(1);
}

static struct sn_nodeset nodes_set(const uint32_t *idx, size_t n)
{
	struct sn_nodeset s;
	sn_set_clear(&s);
	for (size_t i = 0; i < n; i++)
		sn_set_add(&s, fabric_id(idx[i]));
	return s;
}

static struct sn_nodeset all_nodes(void)
{
	struct sn_nodeset s;
	sn_set_clear(&s);
	for (uint32_t i = 0; i < mm.n; i++)
		if (!mm.down[i])
			sn_set_add(&s, fabric_id(i));
	return s;
}

/* ---- reports */

static void take_report(uint32_t i, const Storm__Cl__Report *r)
{
	mm.ack[i] = r->seq;
	mm.reports[i]++;
	mm.cmd_done[i] = r->cmd_done;
	for (size_t k = 0; k < r->n_output; k++) {
		const Storm__Cl__Output *o = r->output[k];
		if (o->job >= MAXJOB || o->rank >= MAXRANK || o->stream < 1 || o->stream > 2) {
			CHECK(0, "node %u: output for job %" PRIu64 " rank %u stream %u", i, o->job,
			      o->rank, o->stream);
			continue;
		}
		struct rank_out *ro = &mm.jobs[o->job].r[o->rank];
		CHECK(!ro->exited, "node %u: output of job %" PRIu64 " rank %u after its exit", i,
		      o->job, o->rank);
		ro->text[o->stream] = realloc(ro->text[o->stream], ro->len[o->stream] + o->data.len + 1);
		memcpy(ro->text[o->stream] + ro->len[o->stream], o->data.data, o->data.len);
		ro->len[o->stream] += o->data.len;
		ro->text[o->stream][ro->len[o->stream]] = '\0';
	}
	for (size_t k = 0; k < r->n_exits; k++) {
		const Storm__Cl__RankExit *e = r->exits[k];
		if (e->job >= MAXJOB || e->rank >= MAXRANK) {
			CHECK(0, "node %u: exit for job %" PRIu64 " rank %u", i, e->job, e->rank);
			continue;
		}
		struct rank_out *ro = &mm.jobs[e->job].r[e->rank];
		CHECK(!ro->exited, "job %" PRIu64 " rank %u exited twice", e->job, e->rank);
		ro->exited = true;
		ro->status = e->wait_status;
	}
	for (size_t k = 0; k < r->n_notes; k++) {
		const Storm__Cl__JobNote *m = r->notes[k];
		if (m->job >= MAXJOB)
			continue;
		struct job *j = &mm.jobs[m->job];
		if (m->kind == STORM__CL__JOB_NOTE__KIND__STARTED)
			j->started[i]++;
		else if (m->kind == STORM__CL__JOB_NOTE__KIND__FAILED) {
			j->failed[i]++;
			snprintf(j->fail_msg, sizeof(j->fail_msg), "%s", m->message);
			say("node %u: job %" PRIu64 " FAILED: %s", i, m->job, m->message);
		} else if (m->kind == STORM__CL__JOB_NOTE__KIND__DONE) {
			j->done[i]++;
		}
	}
}

static void read_reports(void)
{
	uint8_t *g = sn_gmem(mm.sn);
	for (uint32_t i = 0; i < mm.n; i++) {
		uint32_t len;
		memcpy(&len, g + GM_REPORT_SLOT(i), 4);
		if (len == 0 || len > GM_REPORT_SLOT_SIZE - 4 - GM_TAG_LEN)
			continue;
		uint8_t *slot = g + GM_REPORT_SLOT(i);
		if (!gm_mac_ok(mm.key, GM_MAC_REPORT, i, slot, 4 + len, slot + 4 + len)) {
			CHECK(0, "node %u: report with a bad tag", i);
			continue;
		}
		Storm__Cl__Report *r = storm__cl__report__unpack(NULL, len, g + GM_REPORT_SLOT(i) + 4);
		if (!r) {
			CHECK(0, "node %u: report does not unpack", i);
			continue;
		}
		if (r->seq == mm.ack[i] + 1)
			take_report(i, r);
		else
			CHECK(r->seq <= mm.ack[i], "node %u: report %" PRIu64 " after %" PRIu64, i,
			      r->seq, mm.ack[i]);
		storm__cl__report__free_unpacked(r, NULL);
	}
}

static void strobe(void)
{
	uint8_t buf[GM_STROBE_MAX];
	struct strobe *s = (struct strobe *)buf;
	s->slice = ++mm.slice;
	s->cmd_seq = mm.cmd_seq;
	s->row = 0;
	s->nnodes = mm.n;
	s->flags = 0;
	s->switches = 0;
	s->epoch = 1; /* one MM incarnation throughout: a new epoch means a restart */
	memcpy(buf + sizeof(*s), mm.ack, 8 * mm.n);
	memcpy(strobe_run(s), mm.run, 8 * mm.n);
	gm_mac(mm.key, GM_MAC_STROBE, GM_MAC_ANY_NODE, buf, strobe_signed_size(mm.n, 0),
	       buf + strobe_signed_size(mm.n, 0));
	memcpy(mm.last_strobe, buf, strobe_size(mm.n, 0));
	struct sn_nodeset all = all_nodes();
	if (sn_xfer(mm.sn, &all, GM_STROBE_AT(s->slice % 2), buf, strobe_size(mm.n, 0),
		    SN_NO_EVENT, EV_STROBE_AT(s->slice % 2), SN_XFER_SYS) < 0)
		fatal("strobe: %s", sn_strerror(mm.sn));
}

/* Runs the MM's loop (strobes, reports) until cond() holds or timeout. */
static bool pump_until(bool (*cond)(void *), void *arg, unsigned timeout_ms)
{
	uint64_t deadline = now_ns() + (uint64_t)timeout_ms * 1000000u;
	uint64_t period = (uint64_t)mm.conf.timeslice_us * 1000u;
	for (;;) {
		sn_progress(mm.sn);
		while (sn_test_event(mm.sn, EV_REPORT, 0, NULL) == 1)
			read_reports();
		if (cond && cond(arg))
			return true;
		uint64_t t = now_ns();
		if (t >= deadline)
			return false;
		if (t >= mm.next_strobe_ns) {
			strobe();
			mm.next_strobe_ns = t + period;
			continue;
		}
		uint64_t until = mm.next_strobe_ns < deadline ? mm.next_strobe_ns : deadline;
		int ms = (int)((until - t) / 1000000u);
		int fd = sn_wait_fd(mm.sn);
		if (fd >= 0 && sn_prepare_wait(mm.sn) == 0) {
			struct pollfd p = {.fd = fd, .events = POLLIN};
			poll(&p, 1, ms);
		} else {
			poll(NULL, 0, ms > 1 ? 1 : ms);
		}
	}
}

static void pump_ms(unsigned ms)
{
	pump_until(NULL, NULL, ms);
}

/* ---- commands */

static void send_raw(uint32_t seq, const void *buf, size_t len)
{
	struct sn_nodeset all = all_nodes();
	for (uint32_t i = 0; i < mm.n; i++)
		if (mm.cut[i])
			sn_set_del(&all, fabric_id(i));
	/* the slot is free once every node took its command */
	uint64_t deadline = now_ns() + 4ull * mm.conf.op_timeout_ms * 1000000u;
	for (uint32_t i = 0; i < mm.n; i++)
		while (!mm.down[i] && mm.cmd_done[i] < GM_CMD_REUSE_DONE(seq)) {
			if (now_ns() > deadline)
				fatal("command %u: node %u never took command %u (it took %u)", seq,
				      i, GM_CMD_REUSE_DONE(seq), mm.cmd_done[i]);
			pump_ms(1);
		}
	if (sn_xfer(mm.sn, &all, GM_CMD_SLOT(seq), buf, len, EV_CMD_SENT, EV_CMD, 0) < 0)
		fatal("command %u: %s", seq, sn_strerror(mm.sn));
	if (sn_test_event(mm.sn, EV_CMD_SENT, (int)mm.conf.op_timeout_ms, NULL) != 1)
		fatal("command %u not confirmed: %s", seq, sn_strerror(mm.sn));
}

/* [u32 len][payload][tag], as the MM fills a ring slot; a wrong key forges */
static void send_sealed(uint32_t seq, const void *payload, size_t len, bool forged)
{
	uint8_t *buf = malloc(4 + len + GM_TAG_LEN);
	uint32_t l32 = (uint32_t)len;
	memcpy(buf, &l32, 4);
	memcpy(buf + 4, payload, len);
	uint8_t key[GM_KEY_LEN];
	memcpy(key, mm.key, sizeof(key));
	key[0] ^= forged;
	gm_mac(key, GM_MAC_CMD, GM_MAC_ANY_NODE, buf, 4 + len, buf + 4 + len);
	send_raw(seq, buf, 4 + len + GM_TAG_LEN);
	free(buf);
}

/* forged: a bad tag; stale: a good tag but an earlier MM's epoch. Either
 * takes the next number without using it up. */
static void send_cmd_full(Storm__Cl__Command *c, bool forged, bool stale)
{
	c->seq = forged || stale ? mm.cmd_seq + 1 : ++mm.cmd_seq;
	c->epoch = stale ? 0 : 1; /* its strobes' are 1 */
	size_t len = storm__cl__command__get_packed_size(c);
	uint8_t *buf = malloc(len ? len : 1);
	storm__cl__command__pack(c, buf);
	send_sealed(c->seq, buf, len, forged);
	free(buf);
}

static void send_cmd_as(Storm__Cl__Command *c, bool forged) { send_cmd_full(c, forged, false); }
static void send_cmd(Storm__Cl__Command *c) { send_cmd_as(c, false); }

struct launch_spec {
	uint64_t job;
	const uint32_t *nodes;
	size_t nnodes;
	uint32_t per_node;
	uid_t uid;
	gid_t gid;
	const char *user, *cwd, *exec_path;
	const char *const *argv;
	size_t argc;
	Storm__Cl__JobFile **files;
	size_t nfiles;
};

static void launch_in(const struct launch_spec *ls, bool runs);
static void launch(const struct launch_spec *ls) { launch_in(ls, true); }

/* runs: the strobes name it on its nodes (it runs from its launch); else
 * it is launched into a row that is not running */
static void launch_in(const struct launch_spec *ls, bool runs)
{
	Storm__Cl__Command c = STORM__CL__COMMAND__INIT;
	Storm__Cl__Launch l = STORM__CL__LAUNCH__INIT;
	Storm__Job__Spec sp = STORM__JOB__SPEC__INIT;
	l.spec = &sp;
	uint32_t first[MAXN], count[MAXN];
	for (size_t k = 0; k < ls->nnodes; k++) {
		first[k] = (uint32_t)k * ls->per_node;
		count[k] = ls->per_node;
	}
	char *env[] = {"PATH=/usr/bin:/bin", "STORM_RANK=bogus", "LANG=C"};
	l.job = ls->job;
	l.slot = (uint32_t)ls->job; /* one slot per job id in this test */
	l.ranks = (uint32_t)ls->nnodes * ls->per_node;
	l.n_first_rank = l.n_rank_count = ls->nnodes;
	l.first_rank = first;
	l.rank_count = count;
	sp.uid = ls->uid;
	sp.gid = ls->gid;
	sp.user = (char *)ls->user;
	sp.cwd = (char *)ls->cwd;
	sp.n_argv = ls->argc;
	sp.argv = (char **)ls->argv;
	sp.n_env = 3;
	sp.env = env;
	l.exec_path = (char *)(ls->exec_path ? ls->exec_path : "");
	l.n_files = ls->nfiles;
	l.files = ls->files;
	c.n_nodes = ls->nnodes;
	c.nodes = (uint32_t *)ls->nodes;
	c.body_case = STORM__CL__COMMAND__BODY_LAUNCH;
	c.launch = &l;
	mm.jobs[ls->job].nranks = l.ranks;
	/* runs from its launch: the strobes name it before the command lands */
	for (size_t k = 0; runs && k < ls->nnodes; k++)
		mm.run[ls->nodes[k]] = ls->job;
	strobe();
	send_cmd(&c);
}

static void signal_job(uint64_t job, const uint32_t *nodes, size_t n, int sig, uint32_t after)
{
	Storm__Cl__Command c = STORM__CL__COMMAND__INIT;
	Storm__Cl__Signal s = STORM__CL__SIGNAL__INIT;
	s.job = job;
	s.signal = sig;
	s.kill_after_ms = after;
	c.n_nodes = n;
	c.nodes = (uint32_t *)nodes;
	c.body_case = STORM__CL__COMMAND__BODY_SIGNAL;
	c.signal = &s;
	send_cmd(&c);
}

/* ---- files */

static void caw_file_done(const struct sn_nodeset *set, uint64_t at_least)
{
	uint64_t deadline = now_ns() + 60000000000ull;
	for (;;) {
		int rc = sn_caw(mm.sn, set, GM_VAR_FILE_DONE(at_least % 2), SN_GE, at_least, false, 0, 0, NULL);
		if (rc == 1)
			return;
		if (rc < 0)
			fatal("file flow control: %s", sn_strerror(mm.sn));
		if (now_ns() > deadline)
			fatal("nodes never consumed file chunk %" PRIu64, at_least);
		pump_ms(1);
	}
}

static void send_chunk(const struct sn_nodeset *set, struct file_chunk *h, const void *data)
{
	h->seq = ++mm.file_seq;
	if (h->seq > 2)
		caw_file_done(set, h->seq - 2);
	memset(h->nonce, 0x17, sizeof(h->nonce));
	gm_file_tag(mm.key, h->nonce, h->seq, h, offsetof(struct file_chunk, tag), data, h->len,
		    h->tag);
	size_t len = sizeof(*h) + h->len;
	uint8_t *buf = malloc(len);
	memcpy(buf, h, sizeof(*h));
	memcpy(buf + sizeof(*h), data, h->len);
	if (sn_xfer(mm.sn, set, GM_FILE_BUF_AT(h->seq % 2), buf, len, SN_NO_EVENT, EV_FILE(h->seq % 2), 0) < 0)
		fatal("file chunk %" PRIu64 ": %s", h->seq, sn_strerror(mm.sn));
	free(buf);
}

static void send_file(uint64_t job, const struct sn_nodeset *set, uint32_t index,
		      const char *name, const uint8_t *data, size_t size, uint32_t mode, uid_t uid,
		      gid_t gid)
{
	size_t off = 0;
	do {
		struct file_chunk h = {0};
		h.job = job;
		h.offset = off;
		h.file = index;
		h.len = (uint32_t)(size - off > GM_FILE_DATA_MAX ? GM_FILE_DATA_MAX : size - off);
		h.size = size;
		h.mode = mode;
		h.flags = off + h.len == size ? FILE_LAST : 0;
		h.uid = uid;
		h.gid = gid;
		snprintf(h.name, sizeof(h.name), "%s", name);
		send_chunk(set, &h, data + off);
		off += h.len;
	} while (off < size);
}

/* ---- conditions */

struct wait_job {
	uint64_t job;
	const uint32_t *nodes;
	size_t n;
};

static bool all_reported(void *arg)
{
	uint64_t want = *(uint64_t *)arg;
	for (uint32_t i = 0; i < mm.n; i++)
		if (mm.reports[i] < want)
			return false;
	return true;
}

static bool job_done(void *arg)
{
	struct wait_job *w = arg;
	for (size_t k = 0; k < w->n; k++)
		if (!mm.jobs[w->job].done[w->nodes[k]])
			return false;
	return true;
}

static bool job_started(void *arg)
{
	struct wait_job *w = arg;
	for (size_t k = 0; k < w->n; k++)
		if (!mm.jobs[w->job].started[w->nodes[k]])
			return false;
	return true;
}

static bool all_said(void *arg)
{
	struct wait_job *w = arg;
	for (uint32_t r = 0; r < mm.jobs[w->job].nranks; r++)
		if (!mm.jobs[w->job].r[r].len[1])
			return false;
	return true;
}

static void wait_done(uint64_t job, const uint32_t *nodes, size_t n)
{
	struct wait_job w = {job, nodes, n};
	if (!pump_until(job_done, &w, 60000))
		fatal("job %" PRIu64 " never reported DONE on every node", job);
	/* every node set its done variable: confirm and free the slot */
	struct sn_nodeset set = nodes_set(nodes, n);
	int rc = sn_caw(mm.sn, &set, GM_VAR_DONE(job), SN_EQ, job, true, GM_VAR_DONE(job), 0,
			NULL);
	CHECK(rc == 1, "job %" PRIu64 ": done variable not set everywhere (rc %d)", job, rc);
}

static void check_dir_gone(uint64_t job, uint32_t node)
{
	char path[512];
	struct stat st;
	snprintf(path, sizeof(path), "%s/state/%s/jobs/%" PRIu64, mm.dir, mm.conf.nodes[node], job);
	CHECK(stat(path, &st) < 0 && errno == ENOENT, "job directory %s was left behind", path);
}

/* ---- scenarios */

static const uint32_t first_two[] = {0, 1};
static uint32_t every[MAXN];

static void test_echo(uid_t uid, gid_t gid, const char *user)
{
	say("echo: /bin/echo hi, 2 ranks on each of 2 nodes");
	const char *argv[] = {"echo", "hi"};
	struct launch_spec ls = {.job = 1, .nodes = first_two, .nnodes = 2, .per_node = 2,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/bin/echo", .argv = argv, .argc = 2};
	launch(&ls);
	wait_done(1, first_two, 2);
	for (uint32_t r = 0; r < 4; r++) {
		struct rank_out *ro = &mm.jobs[1].r[r];
		CHECK(ro->exited && ro->status == 0, "rank %u: exited %d status %d", r, ro->exited,
		      ro->status);
		CHECK(ro->text[1] && !strcmp(ro->text[1], "hi\n"), "rank %u said '%s'", r,
		      ro->text[1] ? ro->text[1] : "");
	}
	CHECK(mm.jobs[1].started[0] == 1 && mm.jobs[1].started[1] == 1, "STARTED notes");
	CHECK(!mm.jobs[1].done[2], "node 2 was not in job 1");
}

static uint8_t *make_data(size_t size)
{
	uint8_t *d = malloc(size);
	uint64_t x = 88172645463325252ull;
	for (size_t i = 0; i < size; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		d[i] = (uint8_t)x;
	}
	return d;
}

static void test_script(void)
{
	say("script: a transferred script and a 9 MiB file on %u nodes, as nobody", mm.n);
	static const char script[] =
		"#!/bin/sh\n"
		"echo \"rank $STORM_RANK/$STORM_SIZE local $STORM_LOCAL_RANK node $STORM_NODEID "
		"$STORM_NODENAME of $STORM_NNODES uid $(id -u) job $STORM_JOBID in $(pwd)\"\n"
		"cksum < \"$STORM_JOB_DIR/data.bin\"\n"
		"echo oops >&2\n"
		"exit 3\n";
	size_t dsize = 9u << 20;
	uint8_t *data = make_data(dsize);
	char path[300], cmd[400], sum[128] = "";
	snprintf(path, sizeof(path), "%s/data.bin", mm.dir);
	FILE *f = fopen(path, "w");
	fwrite(data, 1, dsize, f);
	fclose(f);
	snprintf(cmd, sizeof(cmd), "cksum < %s", path);
	FILE *p = popen(cmd, "r");
	if (!p || !fgets(sum, sizeof(sum), p))
		fatal("cannot compute the expected checksum");
	pclose(p);

	uid_t uid = geteuid() == 0 ? 65534 : geteuid();
	gid_t gid = geteuid() == 0 ? 65534 : getegid();
	struct sn_nodeset set = nodes_set(every, mm.n);
	send_file(2, &set, 0, "run.sh", (const uint8_t *)script, strlen(script), 0755, uid, gid);
	send_file(2, &set, 1, "data.bin", data, dsize, 0644, uid, gid);
	/* a bad chunk is consumed (flow control goes on) but writes nothing */
	struct file_chunk bad = {.job = 2, .len = 4, .size = 4, .mode = 0644, .flags = FILE_LAST,
				 .uid = uid, .gid = gid};
	snprintf(bad.name, sizeof(bad.name), "../evil");
	send_chunk(&set, &bad, "evil");
	caw_file_done(&set, mm.file_seq);
	free(data);

	Storm__Cl__JobFile f0 = STORM__CL__JOB_FILE__INIT, f1 = STORM__CL__JOB_FILE__INIT;
	f0.name = "run.sh";
	f0.size = strlen(script);
	f0.mode = 0755;
	f1.name = "data.bin";
	f1.size = dsize;
	f1.mode = 0644;
	Storm__Cl__JobFile *files[] = {&f0, &f1};
	const char *argv[] = {"run.sh"};
	struct launch_spec ls = {.job = 2, .nodes = every, .nnodes = mm.n, .per_node = 1,
				 .uid = uid, .gid = gid, .user = "nobody", .cwd = "/",
				 .argv = argv, .argc = 1, .files = files, .nfiles = 2};
	launch(&ls);
	wait_done(2, every, mm.n);
	for (uint32_t r = 0; r < mm.n; r++) {
		struct rank_out *ro = &mm.jobs[2].r[r];
		char want[1024];
		snprintf(want, sizeof(want),
			 "rank %u/%u local 0 node %u %s of %u uid %u job 2 in /\n%s", r, mm.n, r,
			 mm.conf.nodes[r], mm.n, (unsigned)uid, sum);
		CHECK(ro->text[1] && !strcmp(ro->text[1], want), "rank %u said '%s', not '%s'", r,
		      ro->text[1] ? ro->text[1] : "", want);
		CHECK(ro->text[2] && !strcmp(ro->text[2], "oops\n"), "rank %u stderr '%s'", r,
		      ro->text[2] ? ro->text[2] : "");
		CHECK(ro->exited && WIFEXITED(ro->status) && WEXITSTATUS(ro->status) == 3,
		      "rank %u status %d", r, ro->status);
		check_dir_gone(2, r);
	}
}

static void test_big_output(uid_t uid, gid_t gid, const char *user)
{
	say("output: 'seq 1 100000' (589 KB) on one node, in order and complete");
	const char *argv[] = {"seq", "1", "100000"};
	uint32_t node2[] = {mm.n - 1};
	struct launch_spec ls = {.job = 3, .nodes = node2, .nnodes = 1, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/usr/bin/seq", .argv = argv, .argc = 3};
	launch(&ls);
	wait_done(3, node2, 1);
	size_t cap = 1 << 20, len = 0;
	char *want = malloc(cap);
	for (int i = 1; i <= 100000; i++)
		len += (size_t)snprintf(want + len, cap - len, "%d\n", i);
	struct rank_out *ro = &mm.jobs[3].r[0];
	CHECK(ro->len[1] == len && !memcmp(ro->text[1], want, len),
	      "output of %zu bytes differs from the expected %zu", ro->len[1], len);
	CHECK(ro->exited && ro->status == 0, "status %d", ro->status);
	free(want);
}

struct flood {
	uint64_t job;
	uint32_t lines;
};

static bool flood_done(void *arg)
{
	struct flood *f = arg;
	return mm.jobs[f->job].r[0].exited;
}

static void test_flood(uid_t uid, gid_t gid, const char *user, uint32_t lines)
{
	say("backpressure: 'seq 1 %u' outruns the reports; nothing may be lost", lines);
	char last[16];
	snprintf(last, sizeof(last), "%u", lines);
	const char *argv[] = {"seq", "1", last};
	uint32_t node0[] = {0};
	struct launch_spec ls = {.job = 10, .nodes = node0, .nnodes = 1, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/usr/bin/seq", .argv = argv, .argc = 3};
	launch(&ls);
	struct flood f = {10, lines};
	if (!pump_until(flood_done, &f, 300000))
		fatal("job 10 never ended");
	wait_done(10, node0, 1);
	struct rank_out *ro = &mm.jobs[10].r[0];
	char *p = ro->text[1], line[16];
	bool ok = p != NULL;
	for (uint32_t i = 1; ok && i <= lines; i++) {
		int n = snprintf(line, sizeof(line), "%u\n", i);
		ok = !strncmp(p, line, (size_t)n);
		p += n;
	}
	CHECK(ok && (size_t)(p - ro->text[1]) == ro->len[1], "flood output of %zu bytes is wrong",
	      ro->len[1]);
	free(ro->text[1]);
	ro->text[1] = NULL;
}

static void test_signals(uid_t uid, gid_t gid, const char *user)
{
	say("signal: SIGTERM to sleep on 2 nodes");
	/* signalled once each rank said it runs: a rank signalled between fork
	 * and exec dies the same way natively, but not under valgrind */
	const char *argv[] = {"sh", "-c", "echo up; exec sleep 100"};
	struct launch_spec ls = {.job = 4, .nodes = first_two, .nnodes = 2, .per_node = 2,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/bin/sh", .argv = argv, .argc = 3};
	launch(&ls);
	struct wait_job w = {4, first_two, 2};
	if (!pump_until(job_started, &w, 30000) || !pump_until(all_said, &w, 30000))
		fatal("job 4 never started");
	signal_job(4, first_two, 2, SIGTERM, 0);
	wait_done(4, first_two, 2);
	for (uint32_t r = 0; r < 4; r++) {
		struct rank_out *ro = &mm.jobs[4].r[r];
		CHECK(WIFSIGNALED(ro->status) && WTERMSIG(ro->status) == SIGTERM,
		      "rank %u status %d", r, ro->status);
	}

	say("signal: SIGTERM ignored, SIGKILL after 300 ms");
	const char *argv2[] = {"sh", "-c", "trap '' TERM; echo ready; sleep 100; echo survived"};
	struct launch_spec l2 = {.job = 5, .nodes = first_two, .nnodes = 2, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/bin/sh", .argv = argv2, .argc = 3};
	launch(&l2);
	w.job = 5;
	if (!pump_until(all_said, &w, 30000))
		fatal("job 5 never said ready");
	signal_job(5, first_two, 2, SIGTERM, 300);
	uint64_t t0 = now_ns();
	wait_done(5, first_two, 2);
	uint64_t ms = (now_ns() - t0) / 1000000u;
	for (uint32_t r = 0; r < 2; r++) {
		struct rank_out *ro = &mm.jobs[5].r[r];
		CHECK(WIFSIGNALED(ro->status) && WTERMSIG(ro->status) == SIGKILL,
		      "rank %u status %d", r, ro->status);
		CHECK(!strcmp(ro->text[1], "ready\n"), "rank %u said '%s'", r, ro->text[1]);
	}
	CHECK(ms >= 300, "SIGKILL came after %" PRIu64 " ms, before the grace time", ms);
}

/* The state letter of /proc/PID/stat ('R', 'S', 'T', ...), '?' if gone. */
static char proc_state(pid_t pid)
{
	char path[64], buf[512];
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	FILE *f = fopen(path, "r");
	if (!f)
		return '?';
	size_t n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *rp = strrchr(buf, ')');
	return rp && rp[1] == ' ' ? rp[2] : '?';
}

static bool said_pid(void *arg)
{
	struct wait_job *w = arg;
	return mm.jobs[w->job].r[0].len[1] > 0;
}

static void test_gang(uid_t uid, gid_t gid, const char *user)
{
	say("gang: a job launched outside the running row does not run until named");
	/* the rank prints its pid at once: no output while it must be stopped */
	const char *argv[] = {"sh", "-c", "echo $$; exec sleep 100"};
	uint32_t node0[] = {0};
	struct launch_spec ls = {.job = 13, .nodes = node0, .nnodes = 1, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/bin/sh", .argv = argv, .argc = 3};
	mm.run[0] = 0;
	launch_in(&ls, false);
	struct wait_job w = {13, node0, 1};
	if (!pump_until(job_started, &w, 30000))
		fatal("job 13 never started");
	/* started (forked) but held at its exec: nothing may come out */
	CHECK(!pump_until(said_pid, &w, 500), "job 13 ran outside its row: it printed '%s'",
	      mm.jobs[13].r[0].text[1] ? mm.jobs[13].r[0].text[1] : "");
	mm.run[0] = 13;
	if (!pump_until(said_pid, &w, 30000))
		fatal("job 13 never ran once its row came");
	pid_t pid = (pid_t)atoi(mm.jobs[13].r[0].text[1]);
	CHECK(pid > 0 && proc_state(pid) != 'T', "job 13 (pid %d) is %c while running", (int)pid,
	      proc_state(pid));
	/* out of its row again: stopped, on the next strobe */
	mm.run[0] = 0;
	uint64_t deadline = now_ns() + 5000000000ull;
	while (proc_state(pid) != 'T' && now_ns() < deadline)
		pump_ms(20);
	CHECK(proc_state(pid) == 'T', "job 13 (pid %d) is %c out of its row", (int)pid,
	      proc_state(pid));
	/* a stopped job still ends on SIGKILL */
	signal_job(13, node0, 1, SIGKILL, 0);
	wait_done(13, node0, 1);
	CHECK(WIFSIGNALED(mm.jobs[13].r[0].status), "job 13 status %d", mm.jobs[13].r[0].status);
}

static void test_bad_input(uid_t uid, gid_t gid, const char *user)
{
	say("bad input: malformed command, missing program, missing file, missing cwd");
	uint8_t junk[60]; /* tagged (an MM's bug, not a forgery): skipped */
	memset(junk, 0xff, sizeof(junk));
	send_sealed(++mm.cmd_seq, junk, sizeof(junk), false);

	const char *argv[] = {"nothing"};
	struct launch_spec ls = {.job = 6, .nodes = first_two, .nnodes = 2, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/nonexistent/prog", .argv = argv, .argc = 1};
	launch(&ls);
	wait_done(6, first_two, 2);
	for (uint32_t r = 0; r < 2; r++) {
		struct rank_out *ro = &mm.jobs[6].r[r];
		CHECK(WIFEXITED(ro->status) && WEXITSTATUS(ro->status) == 127, "rank %u status %d",
		      r, ro->status);
		CHECK(ro->text[2] && strstr(ro->text[2], "cannot execute '/nonexistent/prog': No such file"),
		      "rank %u stderr '%s'", r, ro->text[2] ? ro->text[2] : "");
	}

	Storm__Cl__JobFile f0 = STORM__CL__JOB_FILE__INIT;
	f0.name = "never-sent";
	f0.size = 10;
	f0.mode = 0755;
	Storm__Cl__JobFile *files[] = {&f0};
	struct launch_spec l2 = {.job = 7, .nodes = first_two, .nnodes = 2, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .argv = argv, .argc = 1, .files = files, .nfiles = 1};
	launch(&l2);
	wait_done(7, first_two, 2);
	CHECK(mm.jobs[7].failed[0] == 1 && mm.jobs[7].failed[1] == 1, "job 7 FAILED notes");
	CHECK(strstr(mm.jobs[7].fail_msg, "never-sent"), "FAILED message '%s'",
	      mm.jobs[7].fail_msg);
	CHECK(!mm.jobs[7].r[0].exited, "no rank of job 7 ran");

	if (geteuid() != 0) {
		/* an unprivileged daemon refuses to run a job as someone else */
		struct launch_spec l4 = {.job = 11, .nodes = first_two, .nnodes = 2,
					 .per_node = 1, .uid = uid + 1, .gid = gid, .user = "",
					 .cwd = "/tmp", .exec_path = "/bin/true", .argv = argv,
					 .argc = 1};
		launch(&l4);
		wait_done(11, first_two, 2);
		CHECK(mm.jobs[11].failed[0] == 1 && strstr(mm.jobs[11].fail_msg, "not root"),
		      "job 11 FAILED message '%s'", mm.jobs[11].fail_msg);
	}

	const char *argv3[] = {"pwd"};
	uint32_t node0[] = {0};
	struct launch_spec l3 = {.job = 8, .nodes = node0, .nnodes = 1, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/no/such/dir",
				 .exec_path = "/bin/pwd", .argv = argv3, .argc = 1};
	launch(&l3);
	wait_done(8, node0, 1);
	struct rank_out *ro = &mm.jobs[8].r[0];
	CHECK(ro->text[1] && !strcmp(ro->text[1], "/tmp\n"), "pwd said '%s'",
	      ro->text[1] ? ro->text[1] : "");
	CHECK(ro->text[2] && strstr(ro->text[2], "cannot chdir to '/no/such/dir'"),
	      "stderr '%s'", ro->text[2] ? ro->text[2] : "");
}

/* Lines of node i's log that contain text. */
static int log_count(uint32_t i, const char *text)
{
	char path[400], line[2048];
	snprintf(path, sizeof(path), "%s/%s.log", mm.dir, mm.conf.nodes[i]);
	FILE *f = fopen(path, "r");
	int n = 0;
	while (f && fgets(line, sizeof(line), f))
		n += strstr(line, text) != NULL;
	if (f)
		fclose(f);
	return n;
}

static bool logged(void *arg)
{
	const char *text = arg;
	for (uint32_t i = 0; i < mm.n; i++)
		if (log_count(i, text) == 0)
			return false;
	return true;
}

/* every node sent at least 3 reports since the counts in arg */
static bool reported_since(void *arg)
{
	const uint64_t *before = arg;
	for (uint32_t i = 0; i < mm.n; i++)
		if (mm.reports[i] < before[i] + 3)
			return false;
	return true;
}

/* An acknowledgement ahead of what each node sent (the MM's count for an
 * earlier daemon of the node): the node renumbers its last report to follow
 * it and sends it again, and goes on reporting from there. */
static void test_resync(void)
{
	say("resync: acknowledgements 1000 ahead of what the nodes sent");
	uint64_t before[MAXN];
	for (uint32_t i = 0; i < mm.n; i++)
		mm.ack[i] += 1000;
	memcpy(before, mm.reports, sizeof(before));
	CHECK(pump_until(logged, "; resynchronising", 30000),
	      "every node logs that the MM acknowledges more than it sent");
	CHECK(pump_until(reported_since, before, 30000),
	      "every node reports on from the MM's count (3 reports taken from each)");
}

/* Sends a bad strobe until every node logs `text`: a genuine strobe landing
 * before a node looked would hide it (a node reads the latest only). */
static bool inject_strobe(const uint8_t *buf, const char *text)
{
	struct sn_nodeset all = all_nodes();
	for (int k = 0; k < 100; k++) {
		uint64_t slice = ((const struct strobe *)buf)->slice;
		sn_xfer(mm.sn, &all, GM_STROBE_AT(slice % 2), buf, strobe_size(mm.n, 0), SN_NO_EVENT,
			EV_STROBE_AT(slice % 2), SN_XFER_SYS);
		mm.next_strobe_ns = now_ns() + (uint64_t)mm.conf.timeslice_us * 1000u;
		if (pump_until(logged, (void *)text, 20))
			return true;
	}
	return false;
}

static bool slice_reached(void *arg)
{
	return mm.slice >= *(const uint64_t *)arg;
}

/* Forged, altered and replayed messages: refused, logged, and the daemons
 * keep following the genuine ones. */
static void test_forgery(uid_t uid, gid_t gid, const char *user)
{
	say("forgery: altered strobe, replayed strobe, forged command, forged report ack");
	struct sn_nodeset all = all_nodes();
	uint8_t old[GM_STROBE_MAX];
	memcpy(old, mm.last_strobe, sizeof(old));

	/* an altered strobe far in the future: accepted, it would make every
	 * genuine strobe after it look old, and the heartbeats would stop */
	uint8_t buf[GM_STROBE_MAX];
	memcpy(buf, mm.last_strobe, sizeof(buf));
	((struct strobe *)buf)->slice += 1000000;
	CHECK(inject_strobe(buf, "has a bad tag (forged or altered); refused"),
	      "every node logs the altered strobe");
	uint64_t before[MAXN];
	memcpy(before, mm.reports, sizeof(before));
	CHECK(pump_until(reported_since, before, 5000), "nodes follow genuine strobes after it");

	/* a genuine strobe from 20 slices ago, sent again */
	uint64_t old_by = ((const struct strobe *)old)->slice + 20;
	CHECK(pump_until(slice_reached, &old_by, 5000), "the slices go on");
	CHECK(inject_strobe(old, "): replayed; refused"), "every node logs the replay");

	/* a forged launch in the next ring slot: never run, and the genuine
	 * command of that number is still taken */
	const char *argv[] = {"/bin/echo", "genuine"};
	struct launch_spec ls = {.job = 14, .nodes = first_two, .nnodes = 2, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/bin/echo", .argv = argv, .argc = 2};
	Storm__Cl__Launch l = STORM__CL__LAUNCH__INIT;
	Storm__Job__Spec sp = STORM__JOB__SPEC__INIT;
	l.spec = &sp;
	uint32_t firsts[] = {0, 1}, counts[] = {1, 1};
	l.job = 14;
	l.slot = 14;
	l.ranks = 2;
	l.first_rank = firsts;
	l.n_first_rank = 2;
	l.rank_count = counts;
	l.n_rank_count = 2;
	sp.uid = uid;
	sp.gid = gid;
	sp.user = (char *)user;
	sp.cwd = "/tmp";
	sp.argv = (char **)argv;
	sp.n_argv = 2;
	l.exec_path = "/bin/echo";
	Storm__Cl__Command c = STORM__CL__COMMAND__INIT;
	c.nodes = (uint32_t *)first_two;
	c.n_nodes = 2;
	c.body_case = STORM__CL__COMMAND__BODY_LAUNCH;
	c.launch = &l;
	send_cmd_as(&c, true);
	CHECK(pump_until(logged, "with a bad tag (forged or altered); refused", 5000),
	      "every node logs the forged command");
	pump_ms(50);
	CHECK(mm.jobs[14].started[0] == 0 && !mm.jobs[14].r[0].exited, "the forged launch ran");
	launch(&ls);
	wait_done(14, first_two, 2);
	CHECK(mm.jobs[14].r[0].text[1] && !strcmp(mm.jobs[14].r[0].text[1], "genuine\n"),
	      "the genuine launch after a forged one printed '%s'",
	      mm.jobs[14].r[0].text[1] ? mm.jobs[14].r[0].text[1] : "");

	/* a dead MM's launch landing late in the next ring slot (its tag is
	 * good, its epoch an earlier one): never run, and the genuine command
	 * of that number is still taken */
	l.job = 16;
	l.slot = 15;
	send_cmd_full(&c, false, true);
	CHECK(pump_until(logged, "of an earlier machine manager; cleared", 5000),
	      "every node logs the earlier MM's command");
	pump_ms(50);
	CHECK(mm.jobs[16].started[0] == 0 && !mm.jobs[16].r[0].exited,
	      "the earlier MM's launch ran");
	struct launch_spec l16 = ls;
	l16.job = 16;
	launch(&l16);
	wait_done(16, first_two, 2);
	CHECK(mm.jobs[16].r[0].text[1] && !strcmp(mm.jobs[16].r[0].text[1], "genuine\n"),
	      "the genuine launch after an earlier MM's printed '%s'",
	      mm.jobs[16].r[0].text[1] ? mm.jobs[16].r[0].text[1] : "");

	/* a forged file chunk: a program swapped on its way; nothing written */
	struct file_chunk fc = {.job = 15, .seq = mm.file_seq + 1, .len = 5, .size = 5,
				.mode = 0755, .flags = FILE_LAST, .uid = uid, .gid = gid};
	snprintf(fc.name, sizeof(fc.name), "evil.sh");
	memset(fc.tag, 0x33, sizeof(fc.tag));
	uint8_t cbuf[sizeof(fc) + 5];
	memcpy(cbuf, &fc, sizeof(fc));
	memcpy(cbuf + sizeof(fc), "evil\n", 5);
	sn_xfer(mm.sn, &all, GM_FILE_BUF_AT(fc.seq % 2), cbuf, sizeof(cbuf), SN_NO_EVENT,
		EV_FILE(fc.seq % 2), 0);
	char fwant[128];
	snprintf(fwant, sizeof(fwant), "file chunk %" PRIu64 " in buffer %d has a bad tag", fc.seq,
		 (int)(fc.seq % 2));
	CHECK(pump_until(logged, fwant, 5000), "every node logs the forged file chunk");
	check_dir_gone(15, 0);

	/* a forged direct ack: would let a node overwrite an unread report */
	uint8_t ack[GM_REPORT_ACK_SIZE];
	struct report_ack forged = { .seq = 1u << 30 };
	memcpy(ack, &forged, sizeof(forged));
	memset(ack + sizeof(forged), 0x5a, GM_TAG_LEN);
	sn_xfer(mm.sn, &all, GM_VAR_REPORT_ACK, ack, sizeof(ack), SN_NO_EVENT, EV_REPORT_ACK, 0);
	CHECK(pump_until(logged, "report ack 1073741824 has a bad tag", 5000),
	      "every node logs the forged ack");
	memcpy(before, mm.reports, sizeof(before));
	CHECK(pump_until(reported_since, before, 5000), "nodes go on reporting");
}

/* Job `job`: /bin/echo WORD on node `at`, which must say it. */
static void echo_on(uint32_t at, uint64_t job, const char *word, uid_t uid, gid_t gid,
		    const char *user)
{
	const char *argv[] = {"echo", word};
	uint32_t node[] = {at};
	struct launch_spec ls = {.job = job, .nodes = node, .nnodes = 1, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/bin/echo", .argv = argv, .argc = 2};
	launch(&ls);
	wait_done(job, node, 1);
	const char *said = mm.jobs[job].r[0].text[1];
	CHECK(said && !strncmp(said, word, strlen(word)) && !strcmp(said + strlen(word), "\n"),
	      "rank said '%s'", said ? said : "");
}

static void test_rejoin(uid_t uid, gid_t gid, const char *user)
{
	uint32_t last = mm.n - 1;
	say("rejoin: node %u misses %u strobes and 3 commands, then runs a job", last,
	    conf_down_slices(&mm.conf) + 5);
	mm.down[last] = true;
	for (int i = 0; i < 3; i++)
		signal_job(99, every, last, SIGTERM, 0); /* to the UP nodes; no such job */
	pump_ms((conf_down_slices(&mm.conf) + 5) * mm.conf.timeslice_us / 1000);
	mm.down[last] = false;
	echo_on(last, 12, "back", uid, gid, user);
}

/* Commands sent to a node while it was cut off can be dropped (the network
 * layer gives up a send after the operation timeout), the MM's resend too.
 * The strobes say they were sent: after three operation timeouts the node
 * gives them up, and the MM, which waits for it to take the slot's command
 * before reusing it, can go on. */
static void test_lost(uid_t uid, gid_t gid, const char *user)
{
	uint32_t last = mm.n - 1;
	say("lost: node %u hears the strobes but none of %u commands, then runs a job", last,
	    GM_CMD_SLOTS + 1);
	mm.cut[last] = true;
	for (uint32_t i = 0; i < GM_CMD_SLOTS + 1; i++)
		signal_job(99, every, last, SIGTERM, 0); /* no such job */
	mm.cut[last] = false;
	echo_on(last, 17, "found", uid, gid, user);
}

static void test_shutdown(uid_t uid, gid_t gid, const char *user)
{
	say("shutdown: while a job runs; its ranks must die with the daemons");
	const char *argv[] = {"sh", "-c", "echo $$; exec sleep 100"};
	struct launch_spec ls = {.job = 9, .nodes = every, .nnodes = mm.n, .per_node = 1,
				 .uid = uid, .gid = gid, .user = user, .cwd = "/tmp",
				 .exec_path = "/bin/sh", .argv = argv, .argc = 3};
	launch(&ls);
	struct wait_job w = {9, every, mm.n};
	if (!pump_until(all_said, &w, 30000))
		fatal("job 9 never printed its pids");
	Storm__Cl__Command c = STORM__CL__COMMAND__INIT;
	Storm__Cl__Shutdown s = STORM__CL__SHUTDOWN__INIT;
	/* the last node is not addressed; it gets SIGTERM instead */
	c.n_nodes = mm.n - 1;
	c.nodes = every;
	c.body_case = STORM__CL__COMMAND__BODY_SHUTDOWN;
	c.shutdown = &s;
	send_cmd(&c);
	kill(mm.pids[mm.n - 1], SIGTERM);
	/* keep strobing while the daemons leave: one may still need them */
	uint64_t deadline = now_ns() + 60000000000ull;
	uint32_t left = mm.n;
	while (left && now_ns() < deadline) {
		pump_ms(5);
		for (uint32_t i = 0; i < mm.n; i++) {
			int st;
			if (mm.pids[i] > 0 && waitpid(mm.pids[i], &st, WNOHANG) == mm.pids[i]) {
				CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0,
				      "stormnd %u ended with status %d", i, st);
				mm.pids[i] = 0;
				left--;
			}
		}
	}
	CHECK(left == 0, "%u daemons did not exit after Shutdown", left);
	for (uint32_t r = 0; r < mm.n; r++) {
		pid_t pid = (pid_t)atoi(mm.jobs[9].r[r].text[1]);
		CHECK(pid > 0 && kill(pid, 0) < 0 && errno == ESRCH, "rank %u (pid %d) survived", r,
		      (int)pid);
		check_dir_gone(9, r);
	}
}

/* ---- set-up */

static void start_daemons(const char *stormnd, const char *conf, bool valgrind, bool realtime)
{
	for (uint32_t i = 0; i < mm.n; i++) {
		pid_t pid = fork();
		if (pid < 0)
			fatal("fork: %s", strerror(errno));
		if (pid == 0) {
			/* a driver that dies must not leave daemons behind */
			prctl(PR_SET_PDEATHSIG, SIGTERM);
			const char *argv[16];
			int a = 0;
			if (valgrind) {
				argv[a++] = "valgrind";
				argv[a++] = "-q";
				argv[a++] = "--leak-check=full";
				argv[a++] = "--show-leak-kinds=definite,indirect";
				argv[a++] = "--errors-for-leak-kinds=definite,indirect";
				argv[a++] = "--error-exitcode=99";
				argv[a++] = "--child-silent-after-fork=yes";
			}
			char log[400];
			snprintf(log, sizeof(log), "%s/%s.log", mm.dir, mm.conf.nodes[i]);
			int lfd = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
			if (lfd >= 0)
				dup2(lfd, 2);
			argv[a++] = stormnd;
			argv[a++] = "-c";
			argv[a++] = conf;
			argv[a++] = "-n";
			argv[a++] = mm.conf.nodes[i];
			if (!realtime)
				argv[a++] = "--no-realtime";
			argv[a] = NULL;
			execvp(argv[0], (char **)argv);
			fprintf(stderr, "fake_mm: cannot execute %s: %s\n", argv[0], strerror(errno));
			_exit(127);
		}
		mm.pids[i] = pid;
	}
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"stormnd", required_argument, NULL, 's'}, {"nodes", required_argument, NULL, 'n'},
		{"valgrind", no_argument, NULL, 'V'},      {"keep", no_argument, NULL, 'k'},
		{"realtime", no_argument, NULL, 'R'},      {NULL, 0, NULL, 0}};
	const char *stormnd = "build/bin/stormnd";
	bool valgrind = false, keep = false, realtime = false;
	mm.n = 3;
	int c;
	while ((c = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
		switch (c) {
		case 's': stormnd = optarg; break;
		case 'n': mm.n = (uint32_t)atoi(optarg); break;
		case 'V': valgrind = true; break;
		case 'k': keep = true; break;
		case 'R': realtime = true; break;
		default:
			fprintf(stderr, "usage: fake_mm [--stormnd PATH] [--nodes 2..%d] [--valgrind] "
					"[--realtime] [--keep]\n", MAXN);
			return 2;
		}
	}
	if (mm.n < 2 || mm.n > MAXN) {
		fprintf(stderr, "fake_mm: error: --nodes must be 2..%d\n", MAXN);
		return 2;
	}
	for (uint32_t i = 0; i < mm.n; i++)
		every[i] = i;
	snprintf(mm.dir, sizeof(mm.dir), "/tmp/fake_mm.XXXXXX");
	if (!mkdtemp(mm.dir))
		fatal("mkdtemp: %s", strerror(errno));
	chmod(mm.dir, 0755); /* ranks run as nobody under it */
	char conf[300], text[2048], err[512];
	const char *prov = getenv("SN_PROVIDER") ? getenv("SN_PROVIDER") : "tcp;ofi_rxm";
	snprintf(conf, sizeof(conf), "%s/storm.conf", mm.dir);
	snprintf(text, sizeof(text),
		 "[cluster]\nprovider = %s\ntimeslice_us = 5000\ndown_after_ms = 100\nreport_every = 2\nop_timeout_ms = %u\n"
		 /* this MM takes each node's end from its DONE: it runs no
		  * read of quiet ends */
		 "job_end_combined = 0\n"
		 "state_dir = %s/state\nbootstrap = dir:%s/fabric\nsocket = %s/mm.sock\n"
		 "key_file = %s/cluster.key\n[nodes]\nnames = n[1-%u]\n",
		 prov, valgrind ? 20000 : 5000, mm.dir, mm.dir, mm.dir, mm.dir, mm.n);
	FILE *f = fopen(conf, "w");
	if (!f || fputs(text, f) < 0 || fclose(f))
		fatal("cannot write %s", conf);
	char fab[300];
	snprintf(fab, sizeof(fab), "%s/fabric", mm.dir);
	mkdir(fab, 0700);
	if (conf_load(conf, &mm.conf, err, sizeof(err)) < 0)
		fatal("%s", err);
	int krc = gm_key_create(mm.conf.key_file);
	if (krc < 0 || gm_key_load(mm.conf.key_file, mm.key, err, sizeof(err)) < 0)
		fatal("cluster key %s: %s", mm.conf.key_file, krc < 0 ? strerror(-krc) : err);

	/* fork before libfabric is touched */
	start_daemons(stormnd, conf, valgrind, realtime);
	struct sn_config sc;
	sn_config_defaults(&sc);
	sc.provider = mm.conf.provider;
	sc.node_id = MM_FABRIC_ID;
	sc.node_count = mm.n + 1;
	sc.gmem_size = layout_gmem_size(mm.n);
	sc.bootstrap = mm.conf.bootstrap;
	sc.fanout = mm.conf.fanout;
	sc.timeout_ms = mm.conf.op_timeout_ms;
	if (sn_open(&sc, &mm.sn) < 0)
		fatal("cannot open the network: %s", sn_open_error());

	uint64_t two = 2;
	if (!pump_until(all_reported, &two, 60000))
		fatal("not every node daemon sent a heartbeat");
	say("heartbeat: every node reports");

	struct passwd *pw = getpwuid(geteuid());
	uid_t uid = geteuid();
	gid_t gid = getegid();
	const char *user = pw ? pw->pw_name : "";
	test_echo(uid, gid, user);
	test_script();
	test_big_output(uid, gid, user);
	test_flood(uid, gid, user, valgrind ? 1500000 : 3000000);
	test_signals(uid, gid, user);
	test_gang(uid, gid, user);
	test_bad_input(uid, gid, user);
	test_forgery(uid, gid, user);
	/* every daemon goes on reporting after the forgeries: a few more
	 * heartbeats from each (about 10 in 100 ms unloaded; how many come in a
	 * given time depends on the machine's load, so wait for them) */
	uint64_t before[MAXN];
	memcpy(before, mm.reports, sizeof(before));
	pump_until(reported_since, before, 30000);
	for (uint32_t i = 0; i < mm.n; i++)
		CHECK(mm.reports[i] >= before[i] + 3, "node %u sent %" PRIu64 " reports in 30 s", i,
		      mm.reports[i] - before[i]);
	test_resync();
	test_rejoin(uid, gid, user);
	test_lost(uid, gid, user);
	test_shutdown(uid, gid, user);

	sn_close(mm.sn);
	for (uint32_t i = 0; i < MAXJOB; i++)
		for (uint32_t r = 0; r < MAXRANK; r++)
			for (int s = 0; s < 3; s++)
				free(mm.jobs[i].r[r].text[s]);
	conf_free(&mm.conf);
	if (!keep) {
		char cmd[400];
		snprintf(cmd, sizeof(cmd), "rm -rf %s", mm.dir);
		if (system(cmd) != 0)
			say("could not remove %s", mm.dir);
	}
	if (mm.failures) {
		say("%d checks failed (daemon logs: %s/*.log; --keep keeps them)", mm.failures,
		    mm.dir);
		return 1;
	}
	say("all checks passed");
	return 0;
}
