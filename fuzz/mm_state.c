/* The machine manager as a whole, over a stand-in fabric (fuzz/stub_sn.c):
 * its real control-socket, job, gang, transfer, command-ring and report code
 * (daemons/mm/) driven by a sequence of events the input encodes. Each
 * input starts a fresh MM and ends with mm_stop, so a leak is a failure.
 *
 * Input: one byte choosing the configuration, then records, each an op byte
 * and its arguments:
 *   0 REQUEST  client(1) nfds(1) len(2) bytes  a request from CLI client 0..3
 *              in a MAC envelope of its (already keyed) session,
 *              with nfds descriptors (a small executable, then files)
 *   1 REPORT   node(1) len(2) bytes            raw bytes into node's report slot,
 *              tagged with the cluster key unless node's high bit is set
 *   2 TICK                                     one timeslice
 *   3 POLL     how(1)                          local events fire; COMPARE-AND-
 *              WRITE answers true, false or fails; events may carry an error
 *   4 HANGUP   client(1)                       the client disconnects
 *   5 TICKS    n(1)                            n timeslices (nodes go DOWN)
 *   6 NODE     node(1) job(1) what(1) rank(1) status(1)
 *              a well-formed report from node: next seq, acting on every
 *              command, running job #job, with an exit, a note, output
 * Properties, after every record: each reply the MM sent decodes, speaks
 * version 1, and an Error has a code and a one-line message; every job in the
 * gang matrix is an active job of the table and is placed on distinct nodes
 * of the cluster; counts of ended ranks and done nodes stay within the job. */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ctl_auth.h"
#include "fuzz.h"
#include "gm_auth.h"
#include "mm.h"
#include "stub_sn.h"

#define CLIENTS 4

static struct mm mm;
static struct {
	struct client *c;
	int peer;
	struct frame_rx rx;
	struct ctl_session sess; /* the CLI's side of the connection */
} cl[CLIENTS];

/* Clients come already authenticated (the MUNGE exchange needs munged, and
 * what it vouches for is the peer's uid): both sides hold this session key,
 * so requests reach the MM's decoder in MAC envelopes (common/ctl_auth.h). */
static const uint8_t session_key[CTL_KEY_LEN] = "fuzz-session-key-fuzz-session-k";

static const char *const confs[2] = {
	"[cluster]\ndown_after_ms = 60\nreport_every = 2\n[scheduler]\nmpl = 2\n"
	"[nodes]\nnames = n[0-3]\ncpus = 2\n",
	"[cluster]\ndown_after_ms = 40\nreport_every = 1\n[scheduler]\npolicy = fcfs\n"
	"[nodes]\nnames = a,b,c\ncpus = 1\n",
};

static void setup(int which)
{
	memset(&mm, 0, sizeof(mm));
	mm_wire(&mm);
	char err[512];
	FUZZ_ASSERT(conf_load_string(confs[which], "fuzz.conf", &mm.conf, err, sizeof(err)) == 0,
		    "%s", err);
	int nn = mm.conf.nnodes;
	mm.nodes = calloc((size_t)nn, sizeof(*mm.nodes));
	mm.strobe_buf = calloc(1, GM_STROBE_MAX);
	FUZZ_ASSERT(mm.nodes && mm.strobe_buf && matrix_init(&mm.matrix, nn, (int)mm.conf.mpl) == 0,
		    "out of memory");
	for (int i = 0; i < nn; i++)
		matrix_set_down(&mm.matrix, i, true);
	mm.row = -1;
	mm.next_job_id = 1;
	mm.cmd_tail = &mm.cmd_queue;
	mm.listen_fd = mm.signal_fd = mm.sn_fd = -1;
	mm.loop = ev_loop_new();
	FUZZ_ASSERT(mm.loop, "out of memory");
	stub_sn_reset(layout_gmem_size((uint32_t)nn));
	struct sn_config sc;
	sn_config_defaults(&sc);
	sn_open(&sc, &mm.sn);
	memset(cl, 0, sizeof(cl));
	for (int i = 0; i < CLIENTS; i++)
		cl[i].peer = -1;
}

static bool client_alive(struct client *c)
{
	for (struct client *x = mm.clients; x; x = x->next)
		if (x == c)
			return x->fd >= 0;
	return false;
}

static void drop_client(int i)
{
	if (cl[i].peer >= 0)
		close(cl[i].peer);
	frame_rx_reset(&cl[i].rx);
	ctl_session_clear(&cl[i].sess);
	cl[i].peer = -1;
	cl[i].c = NULL;
}

static struct client *get_client(int i)
{
	if (cl[i].c && client_alive(cl[i].c))
		return cl[i].c;
	drop_client(i);
	int sv[2];
	FUZZ_ASSERT(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0,
		    "socketpair");
	struct client *c = calloc(1, sizeof(*c));
	FUZZ_ASSERT(c, "out of memory");
	c->fd = sv[0];
	c->uid = geteuid();
	c->gid = getegid();
	c->pid = getpid();
	ctl_session_init(&c->sess, true, NULL, 0);
	c->sess.keyed = true;
	memcpy(c->sess.key, session_key, CTL_KEY_LEN);
	c->sess.uid = c->uid;
	c->sess.gid = c->gid;
	ctl_session_init(&cl[i].sess, false, NULL, c->uid);
	cl[i].sess.keyed = true;
	memcpy(cl[i].sess.key, session_key, CTL_KEY_LEN);
	c->mm = &mm; /* driven by client_on_io here, never by the loop */
	c->next = mm.clients;
	mm.clients = c;
	cl[i].c = c;
	cl[i].peer = sv[1];
	return c;
}

/* What the MM wrote to client i: whole replies, checked. */
static void drain(int i)
{
	if (cl[i].peer < 0)
		return;
	for (;;) {
		int rc = frame_rx_read(cl[i].peer, &cl[i].rx);
		if (rc <= 0)
			break;
		const uint8_t *body;
		size_t blen;
		bool plain;
		char err[256];
		enum ctl_auth_fail f = ctl_auth_unwrap(&cl[i].sess, cl[i].rx.buf, cl[i].rx.len, &body,
						       &blen, &plain, err, sizeof(err));
		FUZZ_ASSERT(f == CTL_AUTH_OK, "a reply the client cannot authenticate: %s", err);
		Storm__Ctl__Reply *r = storm__ctl__reply__unpack(NULL, blen, body);
		FUZZ_ASSERT(r, "the MM sent %zu bytes that are not a Reply", blen);
		FUZZ_ASSERT(!plain || r->body_case == STORM__CTL__REPLY__BODY_ERROR,
			    "a plain reply that is not an Error");
		FUZZ_ASSERT(r->version == PROTO_VERSION, "reply version %u", r->version);
		if (r->body_case == STORM__CTL__REPLY__BODY_ERROR) {
			FUZZ_ASSERT(r->error->code != STORM__CTL__ERROR_CODE__ERR_NONE, "error code 0");
			FUZZ_ONE_LINE(r->error->message);
		}
		storm__ctl__reply__free_unpacked(r, NULL);
		frame_rx_reset(&cl[i].rx);
	}
}

static int memfd_with(size_t size, unsigned mode)
{
	int fd = memfd_create("fuzz", MFD_CLOEXEC);
	FUZZ_ASSERT(fd >= 0, "memfd_create");
	static const uint8_t bytes[4096];
	FUZZ_ASSERT(write(fd, bytes, size) == (ssize_t)size && fchmod(fd, mode) == 0, "memfd");
	return fd;
}

static void request(int i, int nfds, const uint8_t *data, size_t len)
{
	struct client *c = get_client(i);
	int fds[4];
	for (int k = 0; k < nfds; k++)
		fds[k] = memfd_with(k == 0 ? 100 : 4096, k == 0 ? 0755 : 0644);
	uint8_t *env;
	size_t envlen;
	char err[256];
	FUZZ_ASSERT(ctl_auth_wrap(&cl[i].sess, data, len, &env, &envlen, err, sizeof(err)) == 0,
		    "wrap: %s", err);
	int rc = frame_send(cl[i].peer, env, envlen, fds, nfds);
	free(env);
	for (int k = 0; k < nfds; k++)
		close(fds[k]);
	FUZZ_ASSERT(rc == 0, "frame_send: %d", rc);
	client_on_io(&mm, c, EPOLLIN);
}

static void hangup(int i)
{
	if (!cl[i].c || !client_alive(cl[i].c)) {
		drop_client(i);
		return;
	}
	struct client *c = cl[i].c;
	close(cl[i].peer);
	cl[i].peer = -1;
	client_on_io(&mm, c, EPOLLIN | EPOLLHUP);
	drop_client(i);
}

/* Raw bytes as a node's report; tagged with the cluster key as the node
 * would (a genuine but malformed report) unless forge. */
static void raw_report(int node, bool forge, const uint8_t *data, size_t len)
{
	uint8_t *slot = stub.gmem + GM_REPORT_SLOT(node);
	if (len > GM_REPORT_SLOT_SIZE)
		len = GM_REPORT_SLOT_SIZE;
	memcpy(slot, data, len);
	uint32_t rlen;
	memcpy(&rlen, slot, 4);
	if (!forge && len >= 4 && rlen <= GM_REPORT_SLOT_SIZE - 4 - GM_TAG_LEN)
		gm_mac(mm.key, GM_MAC_REPORT, (uint32_t)node, slot, 4 + rlen, slot + 4 + rlen);
	report_on_event(&mm);
}

static void node_report(int node, const uint8_t *a)
{
	uint64_t job = 0;
	int k = 0;
	for (struct job *j = mm.jobs; j; j = j->next, k++)
		if (k == a[0] % 8)
			job = j->id;
	Storm__Cl__Report r = STORM__CL__REPORT__INIT;
	r.seq = mm.nodes[node].report_seq + 1;
	r.slice = mm.slice;
	r.cmd_done = mm.cmd_seq;
	Storm__Cl__Output o = STORM__CL__OUTPUT__INIT, *op = &o;
	Storm__Cl__RankExit x = STORM__CL__RANK_EXIT__INIT, *xp = &x;
	Storm__Cl__JobNote n = STORM__CL__JOB_NOTE__INIT, *np = &n;
	uint64_t running = job;
	if (a[1] & 1) {
		o.job = job;
		o.rank = a[2];
		o.stream = 1 + (a[1] >> 5 & 1);
		o.data.data = (uint8_t *)"out\n";
		o.data.len = 4;
		r.output = &op;
		r.n_output = 1;
	}
	if (a[1] & 2) {
		x.job = job;
		x.rank = a[2];
		x.wait_status = a[3];
		r.exits = &xp;
		r.n_exits = 1;
	}
	if (a[1] & 4) {
		n.job = job;
		n.kind = (Storm__Cl__JobNote__Kind)(a[1] >> 3 & 3);
		n.message = "why";
		r.notes = &np;
		r.n_notes = 1;
	}
	if (a[1] & 0x40 && job) {
		r.running = &running;
		r.n_running = 1;
	}
	uint8_t *slot = stub.gmem + GM_REPORT_SLOT(node);
	uint32_t len = (uint32_t)storm__cl__report__get_packed_size(&r);
	memcpy(slot, &len, 4);
	storm__cl__report__pack(&r, slot + 4);
	gm_mac(mm.key, GM_MAC_REPORT, (uint32_t)node, slot, 4 + len, slot + 4 + len);
	report_on_event(&mm);
}

static void check_state(void)
{
	int nn = mm.conf.nnodes;
	for (unsigned r = 0; r < mm.conf.mpl; r++)
		for (int p = 0; p < nn; p++) {
			uint64_t id = matrix_at(&mm.matrix, (int)r, p);
			if (!id)
				continue;
			struct job *j = job_find(&mm, id);
			FUZZ_ASSERT(j && job_active(j), "matrix cell (%u, %d) holds job %llu, %s", r, p,
				    (unsigned long long)id, j ? "which has ended" : "which is unknown");
		}
	for (struct job *j = mm.jobs; j; j = j->next) {
		FUZZ_ASSERT(j->nodes_done <= j->nnodes && j->ranks_ended <= j->nranks,
			    "job %llu: %u of %u nodes done, %u of %u ranks ended",
			    (unsigned long long)j->id, j->nodes_done, j->nnodes, j->ranks_ended,
			    j->nranks);
		if (!j->t_start || !job_active(j))
			continue;
		for (uint32_t k = 0; k < j->nnodes; k++) {
			FUZZ_ASSERT(j->nodes[k] >= 0 && j->nodes[k] < nn, "job node %d", j->nodes[k]);
			for (uint32_t q = 0; q < k; q++)
				FUZZ_ASSERT(j->nodes[k] != j->nodes[q], "job on node %d twice", j->nodes[k]);
		}
	}
	FUZZ_ASSERT(mm.cmd_seq <= mm.cmd_queued_seq, "command %u sent, %u queued", mm.cmd_seq,
		    mm.cmd_queued_seq);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	/* the MM's log is too loud at thousands of runs a second; FUZZ_MM_LOG=1
	 * shows it, to see what an input does */
	log_set_output(getenv("FUZZ_MM_LOG") ? 2 : -1);
	setup(data[0] & 1);
	size_t i = 1;
#define NEED(n)                 \
	if (i + (n) > size)     \
		goto out;
	for (int steps = 0; i < size && steps < 256; steps++) {
		uint8_t op = data[i++] % 7;
		switch (op) {
		case 0: {
			NEED(4);
			int c = data[i] % CLIENTS, nfds = data[i + 1] % 4;
			size_t len = (size_t)data[i + 2] << 8 | data[i + 3];
			i += 4;
			if (len > size - i)
				len = size - i;
			request(c, nfds, data + i, len);
			i += len;
			break;
		}
		case 1: {
			NEED(3);
			int node = (data[i] & 0x7f) % mm.conf.nnodes;
			bool forge = data[i] & 0x80;
			size_t len = (size_t)data[i + 1] << 8 | data[i + 2];
			i += 3;
			if (len > size - i)
				len = size - i;
			raw_report(node, forge, data + i, len);
			i += len;
			break;
		}
		case 2:
			slice_tick(&mm);
			break;
		case 3: {
			NEED(1);
			static const int caw[3] = {1, 0, -ETIMEDOUT};
			stub.caw_result = caw[data[i] % 3];
			stub.fail_events = data[i] >> 2 & 1;
			i++;
			sn_progress(mm.sn); /* the answers to the COMPARE-AND-WRITEs out */
			cmd_on_sent_event(&mm);
			transfer_step(&mm);
			cmd_pump(&mm);
			break;
		}
		case 4:
			NEED(1);
			hangup(data[i++] % CLIENTS);
			break;
		case 5:
			NEED(1);
			for (int t = data[i++] % 64; t > 0; t--)
				slice_tick(&mm);
			break;
		case 6:
			NEED(5);
			node_report(data[i] % mm.conf.nnodes, data + i + 1);
			i += 5;
			break;
		}
		for (int k = 0; k < CLIENTS; k++) {
			if (cl[k].c && !client_alive(cl[k].c))
				drop_client(k);
			drain(k);
		}
		check_state();
	}
out:
	sn_progress(mm.sn); /* no COMPARE-AND-WRITE left unanswered */
	mm_stop(&mm);
	for (int k = 0; k < CLIENTS; k++)
		drop_client(k);
	return 0;
}
