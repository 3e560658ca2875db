/* The machine manager's Prometheus metrics: counters and histograms kept
 * as things happen, gauges read from the job and node tables, served in the
 * text exposition format over HTTP by libmicrohttpd on the MM's own event
 * loop (its epoll descriptor registered there; no thread touches the MM's
 * state). Off unless storm.conf's [metrics] port is set. */
#include "mm.h"

#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>

#define NB 11 /* buckets of a histogram, +Inf last */

struct histogram {
	const double *le; /* NB - 1 bounds, seconds */
	uint64_t count[NB];
	double sum;
	uint64_t n;
};

static const double switch_le[NB - 1] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
					  0.005,  0.01,    0.025,  0.05,  0.1 };
static const double launch_le[NB - 1] = { 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10 };
static const double ckpt_le[NB - 1] = { 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60 };

/* the switches of the last few row changes, by switch count, until every
 * node that switched has reported: the spread of their delays is the skew */
#define SKEW_KEPT 64
#define SKEW_WAIT 32 /* switches after which one is taken as fully reported */
struct skew_slot {
	uint64_t switches;
	uint32_t min_us, max_us, n;
};

struct mm_metrics {
	struct MHD_Daemon *httpd;
	int epoll_fd;
	uint64_t submitted, ended[8]; /* by JobState */
	struct histogram switch_delay, switch_skew, launch, ckpt;
	struct skew_slot skew[SKEW_KEPT];
	uint64_t *missed, *bcs_bytes; /* per node, as its last report said */
	int64_t *clock_off;           /* per node: the MM's clock minus its, ns */
	uint64_t *clock_rtt;          /* and that estimate's round trip (0: none yet) */
	uint64_t requests;
	uint64_t last_switch;
	uint64_t reports; /* consumed: each one a receipt, a decode, a share of a
			   * commit and an acknowledgement of the MM's */
	uint64_t job_reports; /* of them, those with a record of a job: an exit,
			       * a note, output or recorded outcomes (a trace
			       * chunk alone rides a heartbeat: a quiet end's) */
};

static void observe(struct histogram *h, double v)
{
	int b = 0;
	while (b < NB - 1 && v > h->le[b])
		b++;
	h->count[b]++;
	h->sum += v;
	h->n++;
}

void metrics_job_submitted(struct mm *mm)
{
	if (mm->metrics)
		mm->metrics->submitted++;
}

void metrics_job_ended(struct mm *mm, const struct job *j)
{
	if (mm->metrics && (unsigned)j->state < 8)
		mm->metrics->ended[j->state]++;
}

void metrics_job_launched(struct mm *mm, const struct job *j)
{
	if (mm->metrics && j->t_start > 0)
		observe(&mm->metrics->launch, j->t_launched - j->t_start);
}

void metrics_checkpoint(struct mm *mm, double seconds)
{
	if (mm->metrics)
		observe(&mm->metrics->ckpt, seconds);
}

static void skew_close(struct mm_metrics *m, struct skew_slot *s)
{
	if (s->n >= 2)
		observe(&m->switch_skew, (double)(s->max_us - s->min_us) / 1e6);
	memset(s, 0, sizeof(*s));
}

void metrics_on_report(struct mm *mm, int node, const Storm__Cl__Report *r)
{
	struct mm_metrics *m = mm->metrics;
	if (!m)
		return;
	m->reports++;
	if (r->n_exits || r->n_notes || r->n_output || r->n_bcs)
		m->job_reports++;
	m->missed[node] = r->missed_strobes;
	m->clock_off[node] = r->clock_offset_ns;
	m->clock_rtt[node] = r->clock_rtt_ns;
	m->bcs_bytes[node] = r->bcs_bytes;
	for (size_t i = 0; i < r->n_switches; i++) {
		const Storm__Cl__SwitchDelay *d = r->switches[i];
		observe(&m->switch_delay, d->delay_us / 1e6);
		struct skew_slot *s = &m->skew[d->switches % SKEW_KEPT];
		if (s->switches != d->switches) {
			if (d->switches < s->switches)
				continue; /* older than what the slot holds now */
			skew_close(m, s);
			s->switches = d->switches;
			s->min_us = s->max_us = d->delay_us;
		}
		s->min_us = d->delay_us < s->min_us ? d->delay_us : s->min_us;
		s->max_us = d->delay_us > s->max_us ? d->delay_us : s->max_us;
		s->n++;
		if (d->switches > m->last_switch)
			m->last_switch = d->switches;
	}
	/* a switch every node has had time to report (each reports at least
	 * every report_every strobes, and a switch takes at least one) */
	for (int i = 0; r->n_switches && i < SKEW_KEPT; i++)
		if (m->skew[i].n && m->skew[i].switches + SKEW_WAIT <= m->last_switch)
			skew_close(m, &m->skew[i]);
}

/* ---- the exposition */

struct out {
	char *buf;
	size_t len, cap;
	bool failed;
};

static void put(struct out *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(struct out *o, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(o->buf + o->len, o->cap - o->len, fmt, ap);
		va_end(ap);
		if (n < 0) {
			o->failed = true;
			return;
		}
		if ((size_t)n < o->cap - o->len) {
			o->len += (size_t)n;
			return;
		}
		size_t cap = (o->cap + (size_t)n + 1) * 2;
		char *nb = realloc(o->buf, cap);
		if (!nb) {
			o->failed = true;
			return;
		}
		o->buf = nb;
		o->cap = cap;
	}
}

static void put_histogram(struct out *o, const char *name, const char *help,
			  const struct histogram *h)
{
	put(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	uint64_t cum = 0;
	for (int b = 0; b < NB; b++) {
		cum += h->count[b];
		if (b < NB - 1)
			put(o, "%s_bucket{le=\"%g\"} %llu\n", name, h->le[b], (unsigned long long)cum);
		else
			put(o, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
	}
	put(o, "%s_sum %.9g\n%s_count %llu\n", name, h->sum, name, (unsigned long long)h->n);
}

static const char *lower_state(int s, char *buf, size_t len)
{
	const ProtobufCEnumValue *v =
		protobuf_c_enum_descriptor_get_value(&storm__ctl__job_state__descriptor, s);
	size_t i = 0;
	for (const char *p = v ? v->name : "unknown"; *p && i + 1 < len; p++)
		buf[i++] = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
	buf[i] = '\0';
	return buf;
}

static void render(struct mm *mm, struct out *o)
{
	struct mm_metrics *m = mm->metrics;
	int up = 0, down = 0, unknown = 0;
	for (int i = 0; i < mm->conf.nnodes; i++) {
		Storm__Ctl__NodeState s = mm->nodes[i].state;
		up += s == STORM__CTL__NODE_STATE__UP;
		down += s == STORM__CTL__NODE_STATE__DOWN;
		unknown += s == STORM__CTL__NODE_STATE__UNKNOWN;
	}
	put(o, "# HELP storm_nodes Nodes by state.\n# TYPE storm_nodes gauge\n"
	       "storm_nodes{state=\"up\"} %d\nstorm_nodes{state=\"down\"} %d\n"
	       "storm_nodes{state=\"unknown\"} %d\n", up, down, unknown);
	int by[8] = { 0 };
	for (struct job *j = mm->jobs; j; j = j->next)
		if (job_active(j)) {
			int s = j->state;
			if (s == STORM__CTL__JOB_STATE__RUNNING && !gang_runs_now(mm, j))
				s = STORM__CTL__JOB_STATE__SUSPENDED;
			by[s]++;
		}
	put(o, "# HELP storm_jobs Jobs in the machine manager by state (steps count as jobs).\n"
	       "# TYPE storm_jobs gauge\n");
	static const int active[] = { STORM__CTL__JOB_STATE__QUEUED, STORM__CTL__JOB_STATE__LAUNCHING,
				      STORM__CTL__JOB_STATE__RUNNING,
				      STORM__CTL__JOB_STATE__SUSPENDED };
	char nm[32];
	for (size_t i = 0; i < sizeof(active) / sizeof(active[0]); i++)
		put(o, "storm_jobs{state=\"%s\"} %d\n", lower_state(active[i], nm, sizeof(nm)),
		    by[active[i]]);
	put(o, "# HELP storm_jobs_submitted_total Jobs accepted since the machine manager started.\n"
	       "# TYPE storm_jobs_submitted_total counter\nstorm_jobs_submitted_total %llu\n",
	    (unsigned long long)m->submitted);
	put(o, "# HELP storm_jobs_ended_total Jobs ended since the machine manager started, by "
	       "state.\n# TYPE storm_jobs_ended_total counter\n");
	static const int ends[] = { STORM__CTL__JOB_STATE__COMPLETED, STORM__CTL__JOB_STATE__FAILED,
				    STORM__CTL__JOB_STATE__CANCELLED, STORM__CTL__JOB_STATE__TIMEOUT };
	for (size_t i = 0; i < sizeof(ends) / sizeof(ends[0]); i++)
		put(o, "storm_jobs_ended_total{state=\"%s\"} %llu\n",
		    lower_state(ends[i], nm, sizeof(nm)), (unsigned long long)m->ended[ends[i]]);
	put(o, "# HELP storm_slices_total Timeslices (strobes) since the machine manager started.\n"
	       "# TYPE storm_slices_total counter\nstorm_slices_total %llu\n"
	       "# HELP storm_row_switches_total Changes of the running matrix row.\n"
	       "# TYPE storm_row_switches_total counter\nstorm_row_switches_total %llu\n"
	       "# HELP storm_timeslice_seconds The configured timeslice.\n"
	       "# TYPE storm_timeslice_seconds gauge\nstorm_timeslice_seconds %g\n"
	       "# HELP storm_slice_seconds The current slice's length: the running row's, "
	       "shorter than the configured timeslice while a job there asks for it.\n"
	       "# TYPE storm_slice_seconds gauge\nstorm_slice_seconds %g\n"
	       "# HELP storm_matrix_rows Rows of the gang-scheduling matrix (MPL).\n"
	       "# TYPE storm_matrix_rows gauge\nstorm_matrix_rows %u\n",
	    (unsigned long long)mm->slice, (unsigned long long)mm->switches,
	    mm->conf.timeslice_us / 1e6, mm->slice_us / 1e6, mm->conf.mpl);
	put(o, "# HELP storm_reports_total Node reports the machine manager consumed.\n"
	       "# TYPE storm_reports_total counter\nstorm_reports_total %llu\n",
	    (unsigned long long)m->reports);
	put(o, "# HELP storm_job_reports_total Node reports with a record of a job (an exit, a "
	       "note, output, recorded outcomes).\n"
	       "# TYPE storm_job_reports_total counter\nstorm_job_reports_total %llu\n",
	    (unsigned long long)m->job_reports);
	put(o, "# HELP storm_node_missed_strobes_total Strobes a node never saw, as it last "
	       "reported.\n# TYPE storm_node_missed_strobes_total counter\n");
	for (int i = 0; i < mm->conf.nnodes; i++)
		put(o, "storm_node_missed_strobes_total{node=\"%s\"} %llu\n", mm->conf.nodes[i],
		    (unsigned long long)m->missed[i]);
	put(o, "# HELP storm_node_clock_offset_seconds The MM's clock minus a node's, as the node "
	       "estimates it to switch at the schedule's instants.\n"
	       "# TYPE storm_node_clock_offset_seconds gauge\n");
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (m->clock_rtt[i])
			put(o, "storm_node_clock_offset_seconds{node=\"%s\"} %g\n", mm->conf.nodes[i],
			    (double)m->clock_off[i] / 1e9);
	put(o, "# HELP storm_node_clock_error_seconds The most that estimate can be off: half "
	       "the round trip it came from.\n# TYPE storm_node_clock_error_seconds gauge\n");
	for (int i = 0; i < mm->conf.nnodes; i++)
		if (m->clock_rtt[i])
			put(o, "storm_node_clock_error_seconds{node=\"%s\"} %g\n", mm->conf.nodes[i],
			    (double)m->clock_rtt[i] / 2e9);
	put(o, "# HELP storm_bcs_mpi_sent_bytes_total BCS-MPI bytes a node sent to others, as "
	       "it last reported.\n# TYPE storm_bcs_mpi_sent_bytes_total counter\n");
	for (int i = 0; i < mm->conf.nnodes; i++)
		put(o, "storm_bcs_mpi_sent_bytes_total{node=\"%s\"} %llu\n", mm->conf.nodes[i],
		    (unsigned long long)m->bcs_bytes[i]);
	put_histogram(o, "storm_switch_delay_seconds",
		      "From the strobe's send to a node's switch done, per node and switch.",
		      &m->switch_delay);
	put_histogram(o, "storm_switch_skew_seconds",
		      "Spread of one switch's delays across the nodes that switched.",
		      &m->switch_skew);
	put_histogram(o, "storm_job_launch_seconds",
		      "From a job's start (nodes allocated) to its launch command (program sent).",
		      &m->launch);
	put_histogram(o, "storm_checkpoint_seconds",
		      "A checkpoint from its freeze to every node's confirmation.", &m->ckpt);
}

static enum MHD_Result on_http(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_len, void **con_cls)
{
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)con_cls;
	struct mm *mm = cls;
	struct MHD_Response *resp;
	unsigned status = MHD_HTTP_OK;
	mm->metrics->requests++;
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		static const char msg[] = "only GET\n";
		resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
						       MHD_RESPMEM_PERSISTENT);
		status = MHD_HTTP_METHOD_NOT_ALLOWED;
	} else if (!strcmp(url, "/metrics")) {
		struct out o = { 0 };
		render(mm, &o);
		if (o.failed) {
			free(o.buf);
			return MHD_NO;
		}
		resp = MHD_create_response_from_buffer(o.len, o.buf, MHD_RESPMEM_MUST_FREE);
		if (resp)
			MHD_add_response_header(resp, "Content-Type",
						"text/plain; version=0.0.4; charset=utf-8");
	} else {
		static const char msg[] = "storm machine manager: metrics at /metrics\n";
		resp = MHD_create_response_from_buffer(sizeof(msg) - 1, (void *)msg,
						       MHD_RESPMEM_PERSISTENT);
		status = strcmp(url, "/") ? MHD_HTTP_NOT_FOUND : MHD_HTTP_OK;
	}
	if (!resp)
		return MHD_NO;
	enum MHD_Result rc = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

static void on_httpd(void *arg, uint32_t events)
{
	(void)events;
	struct mm *mm = arg;
	MHD_run(mm->metrics->httpd);
}

static int64_t httpd_limit(void *arg)
{
	struct mm *mm = arg;
	MHD_UNSIGNED_LONG_LONG ms;
	if (MHD_get_timeout(mm->metrics->httpd, &ms) != MHD_YES)
		return -1;
	return ev_ms(ms > 1000 ? 1000 : (int)ms);
}

static void httpd_turn(void *arg)
{
	struct mm *mm = arg;
	MHD_run(mm->metrics->httpd); /* responses queued this turn go out */
}

int metrics_start(struct mm *mm)
{
	struct mm_metrics *m = calloc(1, sizeof(*m));
	if (!m)
		return -1;
	m->switch_delay.le = switch_le;
	m->switch_skew.le = switch_le;
	m->launch.le = launch_le;
	m->ckpt.le = ckpt_le;
	m->missed = calloc((size_t)mm->conf.nnodes, sizeof(uint64_t));
	m->bcs_bytes = calloc((size_t)mm->conf.nnodes, sizeof(uint64_t));
	m->clock_off = calloc((size_t)mm->conf.nnodes, sizeof(int64_t));
	m->clock_rtt = calloc((size_t)mm->conf.nnodes, sizeof(uint64_t));
	mm->metrics = m;
	if (!m->missed || !m->bcs_bytes || !m->clock_off || !m->clock_rtt)
		return -1;
	if (!mm->conf.metrics_port)
		return 0; /* counted, not served */
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)mm->conf.metrics_port) };
	if (inet_pton(AF_INET, mm->conf.metrics_address, &sa.sin_addr) != 1) {
		slog("error: [metrics] address %s is not an IPv4 address", mm->conf.metrics_address);
		return -1;
	}
	m->httpd = MHD_start_daemon(MHD_USE_EPOLL | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_http, mm,
				    MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
				    MHD_OPTION_CONNECTION_LIMIT, (unsigned)64,
				    MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)10, MHD_OPTION_END);
	if (!m->httpd) {
		slog("error: cannot serve metrics on %s:%u: %s", mm->conf.metrics_address,
		     mm->conf.metrics_port, strerror(errno));
		return -1;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(m->httpd, MHD_DAEMON_INFO_EPOLL_FD);
	m->epoll_fd = di ? di->epoll_fd : -1;
	if (m->epoll_fd < 0 || ev_io_add(mm->loop, m->epoll_fd, EPOLLIN, on_httpd, mm) < 0 ||
	    ev_limit_add(mm->loop, httpd_limit, mm) < 0 || ev_turn_add(mm->loop, httpd_turn, mm) < 0) {
		slog("error: cannot serve metrics: event loop: %s", strerror(errno));
		return -1;
	}
	slog("metrics: http://%s:%u/metrics", mm->conf.metrics_address, mm->conf.metrics_port);
	return 0;
}

void metrics_stop(struct mm *mm)
{
	struct mm_metrics *m = mm->metrics;
	if (!m)
		return;
	if (m->httpd) {
		if (m->epoll_fd >= 0)
			ev_io_del(mm->loop, m->epoll_fd);
		MHD_stop_daemon(m->httpd);
	}
	free(m->missed);
	free(m->clock_off);
	free(m->clock_rtt);
	free(m->bcs_bytes);
	free(m);
	mm->metrics = NULL;
}
