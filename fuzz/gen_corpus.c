/* Writes the seed corpora of the fuzz harnesses (tests/fuzz/corpus/T/):
 * valid messages and files of each format, built with the real encoders, so
 * fuzzing starts from inputs that get past the decoders. Run by
 * `make fuzz-corpus`; the output is checked in. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt.pb-c.h"
#include "cluster.pb-c.h"
#include "config.h"
#include "control.pb-c.h"
#include "layout.h"
#include "wire.h"

static const char *root;

static void put(const char *target, const char *name, const void *data, size_t len)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", root, target);
	if (mkdir(path, 0755) < 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", root, target, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		perror(path);
		exit(1);
	}
}

static void put_str(const char *target, const char *name, const char *s)
{
	put(target, name, s, strlen(s));
}

/* ctl_request seeds: one byte (descriptors, configuration), the Request */
static void request(const char *name, Storm__Ctl__Request *r, int nfds, int conf,
		    uint8_t *frame_out, size_t *frame_len)
{
	r->version = 1;
	size_t len = storm__ctl__request__get_packed_size(r);
	uint8_t *buf = malloc(len + 4);
	buf[0] = (uint8_t)(nfds | conf << 5);
	storm__ctl__request__pack(r, buf + 1);
	put("ctl_request", name, buf, len + 1);
	if (frame_out) { /* the same request as a frame on the socket */
		uint8_t *p = frame_out + *frame_len;
		p[0] = (uint8_t)(len >> 24);
		p[1] = (uint8_t)(len >> 16);
		p[2] = (uint8_t)(len >> 8);
		p[3] = (uint8_t)len;
		storm__ctl__request__pack(r, p + 4);
		*frame_len += len + 4;
	}
	free(buf);
}

static void requests(void)
{
	static uint8_t stream[65536];
	size_t slen = 0;
	char *argv[] = {"./app", "--size", "1024"}, *env[] = {"PATH=/usr/bin", "HOME=/home/u"};
	char *files[] = {"input.dat"};
	Storm__Ctl__Submit s = STORM__CTL__SUBMIT__INIT;
	Storm__Job__Spec sp = STORM__JOB__SPEC__INIT;
	s.spec = &sp;
	sp.argv = argv;
	sp.n_argv = 3;
	sp.program = "/home/u/app";
	sp.nodes = 2;
	sp.ranks = 8;
	sp.interactive = 1;
	sp.cwd = "/home/u";
	sp.env = env;
	sp.n_env = 2;
	sp.files = files;
	sp.n_files = 1;
	Storm__Ctl__Request r = STORM__CTL__REQUEST__INIT;
	r.body_case = STORM__CTL__REQUEST__BODY_SUBMIT;
	r.submit = &s;
	request("submit-run", &r, 2, 1, stream, &slen);
	sp.nodes = 0;
	sp.ranks = 0;
	sp.interactive = 0;
	sp.no_bcast = 1;
	sp.n_files = 0;
	sp.output = "out-%j.txt";
	sp.name = "batch";
	s.wait = 1;
	request("submit-batch-nobcast", &r, 0, 2, NULL, NULL);
	sp.ranks = 5000;
	sp.overcommit = 1;
	request("submit-overcommit", &r, 0, 0, NULL, NULL);

	/* at the limits: the most ranks a count can say, and an environment that
	 * just fits the room check on the largest cluster */
	sp.nodes = 0;
	sp.ranks = UINT32_MAX;
	request("submit-most-ranks", &r, 0, 1, NULL, NULL);
	sp.nodes = 1;
	sp.ranks = 5000;
	request("submit-5000-ranks-one-node", &r, 0, 1, NULL, NULL);
	static char big[61][1001];
	char *bigenv[61];
	for (int i = 0; i < 61; i++) {
		snprintf(big[i], sizeof(big[i]), "V%02d=", i);
		memset(big[i] + 4, 'x', 996);
		big[i][1000] = '\0';
		bigenv[i] = big[i];
	}
	sp.env = bigenv;
	sp.n_env = 61;
	sp.nodes = 1000;
	sp.ranks = 1000;
	sp.overcommit = 0;
	request("submit-big-env-1000-nodes", &r, 0, 2, NULL, NULL);

	Storm__Ctl__ListJobs lj = STORM__CTL__LIST_JOBS__INIT;
	lj.all = 1;
	r.body_case = STORM__CTL__REQUEST__BODY_JOBS;
	r.jobs = &lj;
	request("jobs", &r, 0, 1, stream, &slen);
	Storm__Ctl__ListNodes ln = STORM__CTL__LIST_NODES__INIT;
	r.body_case = STORM__CTL__REQUEST__BODY_NODES;
	r.nodes = &ln;
	request("nodes", &r, 0, 1, NULL, NULL);
	Storm__Ctl__Cancel cn = STORM__CTL__CANCEL__INIT;
	cn.job = 7;
	cn.signal = 9;
	r.body_case = STORM__CTL__REQUEST__BODY_CANCEL;
	r.cancel = &cn;
	request("cancel", &r, 0, 1, stream, &slen);
	Storm__Ctl__ClusterStatus cs = STORM__CTL__CLUSTER_STATUS__INIT;
	cs.wait_ms = 5000;
	r.body_case = STORM__CTL__REQUEST__BODY_STATUS;
	r.status = &cs;
	request("status", &r, 0, 1, NULL, NULL);
	Storm__Ctl__Shutdown sd = STORM__CTL__SHUTDOWN__INIT;
	r.body_case = STORM__CTL__REQUEST__BODY_SHUTDOWN;
	r.shutdown = &sd;
	request("shutdown", &r, 0, 1, NULL, NULL);
	Storm__Ctl__ShowMatrix sm = STORM__CTL__SHOW_MATRIX__INIT;
	r.body_case = STORM__CTL__REQUEST__BODY_MATRIX;
	r.matrix = &sm;
	request("matrix", &r, 0, 1, NULL, NULL);
	put("frame", "three-requests", stream, slen);
	put("frame", "empty-frame", "\0\0\0\0", 4);
	put("frame", "truncated", "\0\0\0\x10" "abc", 7);
	put("frame", "oversize", "\x01\0\0\x01", 4);
}

static void reply(const char *name, Storm__Ctl__Reply *r)
{
	r->version = 1;
	size_t len = storm__ctl__reply__get_packed_size(r);
	uint8_t *buf = malloc(len ? len : 1);
	storm__ctl__reply__pack(r, buf);
	put("ctl_reply", name, buf, len);
	free(buf);
}

static void replies(void)
{
	Storm__Ctl__Reply r = STORM__CTL__REPLY__INIT;
	Storm__Ctl__Error e = STORM__CTL__ERROR__INIT;
	e.code = STORM__CTL__ERROR_CODE__ERR_INVALID;
	e.message = "9 nodes requested but the cluster has 8";
	r.body_case = STORM__CTL__REPLY__BODY_ERROR;
	r.error = &e;
	reply("error", &r);
	Storm__Ctl__Output o = STORM__CTL__OUTPUT__INIT;
	o.job = 1;
	o.rank = 3;
	o.stream = STORM__CTL__STREAM__STDOUT;
	o.data.data = (uint8_t *)"hello\nworld\npartial";
	o.data.len = 19;
	r.body_case = STORM__CTL__REPLY__BODY_OUTPUT;
	r.output = &o;
	reply("output", &r);
	o.stream = STORM__CTL__STREAM__STDERR;
	o.rank = 0;
	reply("output-stderr", &r);
	Storm__Ctl__JobInfo ji = STORM__CTL__JOB_INFO__INIT, *jp[1] = {&ji};
	ji.job = 4;
	ji.name = "app";
	ji.user = "u";
	ji.state = STORM__CTL__JOB_STATE__RUNNING;
	ji.nodes = 2;
	ji.ranks = 8;
	ji.nodelist = "node[00-01]";
	ji.row = 1;
	char *nodes[] = {"node00", "node01", "node02"};
	uint64_t cells[] = {0, 4, 4, 5, 0, 0};
	Storm__Ctl__NodeState st[] = {STORM__CTL__NODE_STATE__UP, STORM__CTL__NODE_STATE__DOWN,
				      STORM__CTL__NODE_STATE__UP};
	Storm__Ctl__Matrix m = STORM__CTL__MATRIX__INIT;
	m.mpl = 2;
	m.nodes = nodes;
	m.n_nodes = 3;
	m.cells = cells;
	m.n_cells = 6;
	m.row = 1;
	m.slice = 100;
	m.timeslice_us = 10000;
	m.quantum = 2;
	m.policy = "gang";
	m.jobs = jp;
	m.n_jobs = 1;
	m.node_states = st;
	m.n_node_states = 3;
	r.body_case = STORM__CTL__REPLY__BODY_MATRIX;
	r.matrix = &m;
	reply("matrix", &r);
	Storm__Ctl__JobList jl = STORM__CTL__JOB_LIST__INIT;
	jl.jobs = jp;
	jl.n_jobs = 1;
	r.body_case = STORM__CTL__REPLY__BODY_JOBS;
	r.jobs = &jl;
	reply("jobs", &r);
	Storm__Ctl__RankEnd re = STORM__CTL__RANK_END__INIT, *rp[1] = {&re};
	re.rank = 2;
	re.wait_status = 256;
	Storm__Ctl__JobEnd end = STORM__CTL__JOB_END__INIT;
	end.job = 4;
	end.state = STORM__CTL__JOB_STATE__FAILED;
	end.exit_status = 1;
	end.reason = "rank 2 exited with status 1";
	end.ranks = rp;
	end.n_ranks = 1;
	r.body_case = STORM__CTL__REPLY__BODY_END;
	r.end = &end;
	reply("end", &r);
}

static void reports(void)
{
	Storm__Cl__Output o = STORM__CL__OUTPUT__INIT, *op[1] = {&o};
	o.job = 3;
	o.rank = 1;
	o.stream = 1;
	o.data.data = (uint8_t *)"out\n";
	o.data.len = 4;
	Storm__Cl__RankExit x = STORM__CL__RANK_EXIT__INIT, *xp[1] = {&x};
	x.job = 3;
	x.rank = 1;
	Storm__Cl__JobNote n = STORM__CL__JOB_NOTE__INIT, *np[1] = {&n};
	n.job = 3;
	n.kind = STORM__CL__JOB_NOTE__KIND__DONE;
	n.message = "";
	uint64_t running[] = {3, 5};
	Storm__Cl__Report r = STORM__CL__REPORT__INIT;
	r.seq = 12;
	r.slice = 400;
	r.cmd_done = 5;
	r.output = op;
	r.n_output = 1;
	r.exits = xp;
	r.n_exits = 1;
	r.notes = np;
	r.n_notes = 1;
	r.running = running;
	r.n_running = 2;
	uint32_t len = (uint32_t)storm__cl__report__get_packed_size(&r);
	uint8_t *buf = malloc(len + 4);
	memcpy(buf, &len, 4);
	storm__cl__report__pack(&r, buf + 4);
	put("mm_report", "report", buf, len + 4);
	free(buf);
}

static void command(const char *name, Storm__Cl__Command *c)
{
	uint32_t len = (uint32_t)storm__cl__command__get_packed_size(c);
	uint8_t *buf = malloc(len + 4);
	memcpy(buf, &len, 4);
	storm__cl__command__pack(c, buf + 4);
	put("nd_command", name, buf, len + 4);
	free(buf);
}

static void commands(void)
{
	uint32_t nodes[] = {0, 1}, first[] = {0, 4}, count[] = {4, 4};
	char *argv[] = {"./app"}, *env[] = {"PATH=/usr/bin"};
	Storm__Cl__JobFile f0 = STORM__CL__JOB_FILE__INIT, f1 = STORM__CL__JOB_FILE__INIT;
	Storm__Cl__JobFile *fp[] = {&f0, &f1};
	f0.name = "app";
	f0.size = 12345;
	f0.mode = 0755;
	f1.name = "input.dat";
	f1.size = 10;
	f1.mode = 0644;
	Storm__Cl__Launch l = STORM__CL__LAUNCH__INIT;
	Storm__Job__Spec sp = STORM__JOB__SPEC__INIT;
	l.spec = &sp;
	l.job = 9;
	l.slot = 3;
	l.ranks = 8;
	l.first_rank = first;
	l.n_first_rank = 2;
	l.rank_count = count;
	l.n_rank_count = 2;
	sp.uid = 1000;
	sp.gid = 1000;
	sp.user = "u";
	sp.cwd = "/home/u";
	sp.argv = argv;
	sp.n_argv = 1;
	sp.env = env;
	sp.n_env = 1;
	l.exec_path = "";
	l.files = fp;
	l.n_files = 2;
	Storm__Cl__Command c = STORM__CL__COMMAND__INIT;
	c.seq = 4;
	c.nodes = nodes;
	c.n_nodes = 2;
	c.body_case = STORM__CL__COMMAND__BODY_LAUNCH;
	c.launch = &l;
	command("launch", &c);
	l.n_files = 0;
	l.exec_path = "/bin/true";
	command("launch-nobcast", &c);
	Storm__Cl__Signal sg = STORM__CL__SIGNAL__INIT;
	sg.job = 9;
	sg.signal = 15;
	sg.kill_after_ms = 5000;
	c.body_case = STORM__CL__COMMAND__BODY_SIGNAL;
	c.signal = &sg;
	command("signal", &c);
	Storm__Cl__Shutdown sd = STORM__CL__SHUTDOWN__INIT;
	c.body_case = STORM__CL__COMMAND__BODY_SHUTDOWN;
	c.shutdown = &sd;
	command("shutdown", &c);
}

static void strobes_chunks(void)
{
	uint8_t buf[2 + sizeof(struct strobe) + 16 * 4];
	memset(buf, 0, sizeof(buf));
	buf[0] = 1; /* node index 1 */
	struct strobe *s = (struct strobe *)(buf + 2);
	s->slice = 77;
	s->cmd_seq = 4;
	s->row = 0;
	s->nnodes = 4;
	s->switches = 3;
	for (int i = 0; i < 4; i++) {
		s->ack[i] = 10 + (uint64_t)i;
		strobe_run(s)[i] = i == 1 ? 9 : 0;
	}
	put("nd_strobe", "strobe-4", buf, sizeof(buf));
	/* the same with two slices ahead */
	uint8_t buf2[2 + sizeof(struct strobe) + 16 * 4 + 3 * sizeof(struct strobe_slot) + 8 * 2 * 4];
	memset(buf2, 0, sizeof(buf2));
	memcpy(buf2, buf, sizeof(buf));
	s = (struct strobe *)(buf2 + 2);
	s->flags = 2;
	for (unsigned i = 0; i <= 2; i++) {
		strobe_slots(s)[i].start_ns = 1000000000 + 10000000 * (uint64_t)i;
		strobe_slots(s)[i].switches = 3 + i;
		strobe_slots(s)[i].row = (int32_t)(i % 2);
	}
	for (unsigned i = 1; i <= 2; i++)
		strobe_run_ahead(s, i)[1] = i == 1 ? 0 : 9;
	put("nd_strobe", "strobe-4-ahead", buf2, sizeof(buf2));
	struct file_chunk c;
	memset(&c, 0, sizeof(c));
	c.job = 9;
	c.seq = 1;
	c.offset = 0;
	c.len = 4096;
	c.size = 12345;
	c.mode = 0755;
	c.flags = 0;
	strcpy(c.name, "app");
	put("nd_chunk", "first", &c, sizeof(c));
	c.offset = 8192;
	c.len = 12345 - 8192;
	c.flags = FILE_LAST;
	put("nd_chunk", "last", &c, sizeof(c));
}

static void wire_msg(const char *name, struct sn_msg *m, uint32_t nbits, const void *payload,
		     size_t plen)
{
	uint8_t buf[2 + SN_WIRE_HDR_MAX + 256];
	buf[0] = (uint8_t)((nbits - 1) & 0xff);
	buf[1] = (uint8_t)((nbits - 1) >> 8);
	m->nbits = nbits;
	size_t n = sn_wire_encode(m, buf + 2);
	memcpy(buf + 2 + n, payload, plen);
	put("wire", name, buf, 2 + n + plen);
}

static void wires(void)
{
	struct sn_msg m;
	memset(&m, 0, sizeof(m));
	m.type = SN_MSG_XFER;
	m.flags = SN_F_ACK;
	m.origin = 0;
	m.opid = 5;
	m.sender = 1;
	m.fanout = 4;
	m.budget_ms = 1000;
	m.event = 1;
	m.chunk_len = 16;
	m.off = 4096;
	m.total = 64;
	m.chunk_off = 16;
	sn_set_range(&m.set, 0, 8);
	wire_msg("xfer", &m, 9, "0123456789abcdef", 16);
	m.type = SN_MSG_ACK;
	m.chunk_len = 0;
	m.status = 1;
	sn_set_add(&m.set2, 3);
	wire_msg("ack", &m, 9, "", 0);
	m.type = SN_MSG_EVAL;
	m.cmp = 2;
	m.value = 7;
	wire_msg("eval", &m, 9, "", 0);
	m.flags = SN_F_ACK | SN_F_WRITE;
	m.off2 = 32768;
	m.value2 = 9;
	wire_msg("caw-prepare", &m, 1000, "", 0);
	m.type = SN_MSG_WRITE;
	m.flags = SN_F_ACK | SN_F_COMMIT;
	wire_msg("caw-commit", &m, 9, "", 0);
	put_str("nodeset", "list", "\x0f\x00" "0-3,7,9-10");
	put_str("nodeset", "one", "\xff\x03" "1023");
}

static void texts(void)
{
	put_str("config", "minimal", "[nodes]\nnames = node[00-07]\n");
	put_str("config", "full",
		"# storm cluster configuration\n[cluster]\nname = test\nprovider = tcp;ofi_rxm\n"
		"sys_provider = udp;ofi_rxd\ntimeslice_us = 1000\ndown_after = 100\n"
		"report_every = 10\nfanout = 4\nop_timeout_ms = 2000\nkill_wait_ms = 500\n"
		"state_dir = /tmp/storm/state\nsocket = /tmp/storm/mm.sock\n"
		"bootstrap = dir:/tmp/storm/fabric\n\n[scheduler]\npolicy = gang\nmpl = 4\n"
		"quantum = 2\nswitch = freezer\n\n[nodes]\nnames = node[00-63],login\ncpus = 16\n");
	put_str("config", "fcfs", "[scheduler]\npolicy = fcfs\n[nodes]\nnames = a,b\ncpus = 1\n");
	put_str("config", "bad-number", "[cluster]\ntimeslice_us = 10x\n[nodes]\nnames = a\n");
	put_str("hostlist", "mixed", "node[00-07],login,gpu[1,3-4]");
	put_str("hostlist", "wide", "rack[1-3]-n[001-010]");
	put_str("hostlist", "plain", "a, b ,c");
	static const char run[] = "\0-N\0" "2\0-n8\0--label\0--file=input.dat\0./app\0--size\0" "1024";
	put("cli_opts", "run", run, sizeof(run) - 1);
	static const char sig[] = "\1SIGTERM\0" "9\0kill\0--nodes\0" "18446744073709551615";
	put("cli_opts", "signals", sig, sizeof(sig) - 1);
}

/* ckpt_image seeds beside its images: a files section with every kind of
 * descriptor, and the fdinfo texts the dump parses */
static void ckpt_files(void)
{
	Storm__Ckpt__File f[8];
	Storm__Ckpt__File *fp[8];
	static const unsigned kinds[8] = { 5, 1, 6, 6, 8, 9, 10, 11 };
	for (int i = 0; i < 8; i++) {
		storm__ckpt__file__init(&f[i]);
		f[i].fd = i;
		f[i].kind = kinds[i];
		f[i].path = (char *)(i ? "pipe:[77]" : "/dev/null");
		fp[i] = &f[i];
	}
	f[0].rdev = 0x103;
	f[2].object = f[3].object = 77;
	f[3].flags = 1;
	f[4].count = 5;
	f[4].semaphore = 1;
	f[5].clockid = 1;
	f[5].value_ns = 4000000;
	f[5].interval_ns = 4000000;
	f[6].sigmask = 1 << 9;
	Storm__Ckpt__EpollItem it[2], *itp[2];
	for (int i = 0; i < 2; i++) {
		storm__ckpt__epoll_item__init(&it[i]);
		it[i].tfd = 4 + i;
		it[i].events = 1;
		it[i].data = (uint64_t)i;
		itp[i] = &it[i];
	}
	f[7].items = itp;
	f[7].n_items = 2;
	Storm__Ckpt__Pipe p = STORM__CKPT__PIPE__INIT, *pp = &p;
	p.id = 77;
	p.size = 65536;
	p.data.data = (uint8_t *)"rec 0000000001\n";
	p.data.len = 15;
	Storm__Ckpt__Memfd m = STORM__CKPT__MEMFD__INIT, *mp = &m;
	m.id = 99;
	m.name = (char *)"seed";
	m.size = 4096;
	m.pages_section = -1;
	Storm__Ckpt__FileTable ft = STORM__CKPT__FILE_TABLE__INIT;
	ft.files = fp;
	ft.n_files = 8;
	ft.pipes = &pp;
	ft.n_pipes = 1;
	ft.memfds = &mp;
	ft.n_memfds = 1;
	uint8_t buf[1024];
	put("ckpt_image", "files", buf, storm__ckpt__file_table__pack(&ft, buf));
	put_str("ckpt_image", "fdinfo-epoll",
		"pos:\t0\nflags:\t02\nmnt_id:\t17\nino:\t1038\n"
		"tfd:        5 events: 80000019 data:             1234  pos:0 ino:40e sdev:10\n"
		"tfd:        6 events:       19 data:               4d  pos:0 ino:40e sdev:10\n");
	put_str("ckpt_image", "fdinfo-timerfd",
		"pos:\t0\nflags:\t04002\nmnt_id:\t17\nino:\t1038\nclockid: 1\nticks: 0\n"
		"settime flags: 00\nit_value: (3, 468498681)\nit_interval: (1, 0)\n");
	put_str("ckpt_image", "fdinfo-eventfd",
		"pos:\t0\nflags:\t02000002\nmnt_id:\t17\nino:\t1038\n"
		"eventfd-count:                5\neventfd-id: 1\neventfd-semaphore: 1\n"
		"lock:\t1: POSIX  ADVISORY  WRITE 1234 00:05:123 0 EOF\n");
	put_str("ckpt_image", "fdinfo-signalfd",
		"pos:\t0\nflags:\t04002\nmnt_id:\t17\nino:\t1038\nsigmask:\t0000000000004200\n");
}

/* mm_state seeds: a session of events (fuzz/mm_state.c) */
static uint8_t sess[65536];
static size_t slen_;

static void op(const uint8_t *b, size_t n)
{
	memcpy(sess + slen_, b, n);
	slen_ += n;
}

static void op_request(int client, int nfds, Storm__Ctl__Request *r)
{
	r->version = 1;
	size_t len = storm__ctl__request__get_packed_size(r);
	uint8_t h[5] = {0, (uint8_t)client, (uint8_t)nfds, (uint8_t)(len >> 8), (uint8_t)len};
	op(h, 5);
	storm__ctl__request__pack(r, sess + slen_);
	slen_ += len;
}

static void op_node(int node, int job, int what, int rank, int status)
{
	uint8_t h[6] = {6, (uint8_t)node, (uint8_t)job, (uint8_t)what, (uint8_t)rank,
			(uint8_t)status};
	op(h, 6);
}

static void op_simple(uint8_t code, int arg)
{
	uint8_t h[2] = {code, (uint8_t)arg};
	op(h, code == 2 ? 1 : 2);
}

/* notes in op_node's what byte: 4 | kind << 3 */
#define W_OUT 1
#define W_EXIT 2
#define W_NOTE(k) (4 | (k) << 3)
#define W_RUNNING 0x40

static void sessions(void)
{
	char *argv[] = {"/bin/true"};
	Storm__Ctl__Submit s = STORM__CTL__SUBMIT__INIT;
	Storm__Job__Spec sp = STORM__JOB__SPEC__INIT;
	s.spec = &sp;
	sp.argv = argv;
	sp.n_argv = 1;
	sp.program = "/bin/true";
	sp.cwd = "/tmp";
	sp.nodes = 2;
	sp.ranks = 4;
	sp.interactive = 1;
	sp.no_bcast = 1;
	Storm__Ctl__Request r = STORM__CTL__REQUEST__INIT;
	r.body_case = STORM__CTL__REQUEST__BODY_SUBMIT;
	r.submit = &s;

	/* a job run to its end: nodes UP, submit, launch, output, exits, DONE */
	slen_ = 0;
	op((const uint8_t[]){0}, 1);
	for (int n = 0; n < 4; n++)
		op_node(n, 0, 0, 0, 0);
	op_request(0, 0, &r);
	op_simple(3, 0);
	op_simple(2, 0);
	for (int n = 0; n < 2; n++) {
		op_node(n, 0, W_NOTE(1) | W_RUNNING, 0, 0);
		op_node(n, 0, W_OUT | W_EXIT | W_RUNNING, (uint8_t)(2 * n), 0);
		op_node(n, 0, W_EXIT, (uint8_t)(2 * n + 1), 0);
		op_node(n, 0, W_NOTE(3), 0, 0);
	}
	op_simple(3, 0);
	op_simple(2, 0);
	put("mm_state", "run-to-end", sess, slen_);

	/* a program transfer (one descriptor), two jobs gang-scheduled, a node lost */
	slen_ = 0;
	op((const uint8_t[]){0}, 1);
	for (int n = 0; n < 4; n++)
		op_node(n, 0, 0, 0, 0);
	sp.no_bcast = 0;
	sp.program = "/tmp/app";
	sp.nodes = 4;
	sp.ranks = 8;
	op_request(0, 1, &r);
	for (int k = 0; k < 6; k++)
		op_simple(3, 0);
	op_request(1, 1, &r);
	for (int k = 0; k < 6; k++)
		op_simple(3, 0);
	op_simple(5, 3);
	op_node(0, 0, W_NOTE(2), 0, 0);
	op_node(1, 1, W_OUT | W_EXIT, 1, 9);
	op_simple(5, 20);
	put("mm_state", "transfer-gang-node-down", sess, slen_);

	/* queries, a batch job, a cancel, a hang-up, shutdown (fcfs cluster) */
	slen_ = 0;
	op((const uint8_t[]){1}, 1);
	for (int n = 0; n < 3; n++)
		op_node(n, 0, 0, 0, 0);
	sp.no_bcast = 1;
	sp.interactive = 0;
	s.wait = 1;
	sp.nodes = 1;
	sp.ranks = 1;
	sp.output = "/dev/null";
	op_request(2, 0, &r);
	Storm__Ctl__ListJobs lj = STORM__CTL__LIST_JOBS__INIT;
	lj.all = 1;
	Storm__Ctl__Request q = STORM__CTL__REQUEST__INIT;
	q.body_case = STORM__CTL__REQUEST__BODY_JOBS;
	q.jobs = &lj;
	op_request(3, 0, &q);
	Storm__Ctl__ShowMatrix sm = STORM__CTL__SHOW_MATRIX__INIT;
	q.body_case = STORM__CTL__REQUEST__BODY_MATRIX;
	q.matrix = &sm;
	op_request(3, 0, &q);
	Storm__Ctl__ListNodes ln = STORM__CTL__LIST_NODES__INIT;
	q.body_case = STORM__CTL__REQUEST__BODY_NODES;
	q.nodes = &ln;
	op_request(3, 0, &q);
	Storm__Ctl__ClusterStatus cs = STORM__CTL__CLUSTER_STATUS__INIT;
	cs.wait_ms = 100;
	q.body_case = STORM__CTL__REQUEST__BODY_STATUS;
	q.status = &cs;
	op_request(1, 0, &q);
	Storm__Ctl__Cancel cn = STORM__CTL__CANCEL__INIT;
	cn.job = 1;
	q.body_case = STORM__CTL__REQUEST__BODY_CANCEL;
	q.cancel = &cn;
	op_request(3, 0, &q);
	op_simple(4, 2);
	op_simple(3, 0);
	op_node(0, 0, W_NOTE(3), 0, 0);
	Storm__Ctl__Shutdown sd = STORM__CTL__SHUTDOWN__INIT;
	q.body_case = STORM__CTL__REQUEST__BODY_SHUTDOWN;
	q.shutdown = &sd;
	op_request(0, 0, &q);
	op_simple(3, 0);
	op_simple(2, 0);
	put("mm_state", "queries-batch-cancel-shutdown", sess, slen_);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: gen_corpus DIR\n");
		return 2;
	}
	root = argv[1];
	mkdir(root, 0755);
	requests();
	replies();
	reports();
	commands();
	strobes_chunks();
	wires();
	texts();
	ckpt_files();
	sessions();
	return 0;
}
