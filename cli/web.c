/* storm web: one live page of the cluster (the gang matrix, node states,
 * the jobs), served by libmicrohttpd. The page polls /matrix.json, the
 * same JSON `storm matrix --json` prints, which this command fetches from
 * the machine manager as the user running it. */
#include <arpa/inet.h>
#include <errno.h>
#include <jansson.h>
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"

static const char web_help[] =
	"Usage: storm web [--port P] [--address A]\n"
	"\n"
	"Serves a live page of the cluster at http://A:P/: the gang-scheduling\n"
	"matrix (the running row marked), the nodes and their states, and the jobs,\n"
	"updated twice a second. /matrix.json is what 'storm matrix --json' prints.\n"
	"Runs until Ctrl-C.\n"
	"\n"
	"  -p, --port P      port to listen on (default 8080; 0: any free one)\n"
	"      --address A   IPv4 address to listen on (default 127.0.0.1)\n"
	"      --conf FILE   the cluster's storm.conf\n"
	"  -h, --help        this help\n"
	"\n"
	"Exit status: 0 after Ctrl-C, 1 when the port cannot be had, 2 on bad usage.\n";

static const char page[] =
	"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>storm</title>\n"
	"<style>\n"
	"body{font-family:sans-serif;margin:1.5em;background:#fafafa;color:#222}\n"
	"h1{font-size:1.3em;margin:0 0 .3em}#status{color:#555;margin-bottom:1em}\n"
	"table{border-collapse:collapse;margin-bottom:1.5em}\n"
	"th,td{border:1px solid #bbb;padding:.3em .6em;text-align:center;min-width:3em}\n"
	"th.UP{background:#c8e6c9}th.DOWN{background:#ffcdd2}th.UNKNOWN{background:#eee}\n"
	"tr.running td{border-top:2px solid #1565c0;border-bottom:2px solid #1565c0}\n"
	"td.cell.busy{font-weight:bold}tr.running td.cell.busy{background:#bbdefb}\n"
	"#jobs td{text-align:left}\n"
	"</style></head><body>\n"
	"<h1>storm: the gang matrix, live</h1><div id=\"status\">connecting...</div>\n"
	"<table id=\"matrix\"></table>\n<table id=\"jobs\"></table>\n"
	"<script>\n"
	"function esc(s){return String(s).replace(/[&<>\"]/g,c=>({'&':'&amp;','<':'&lt;',"
	"'>':'&gt;','\"':'&quot;'}[c]));}\n"
	"function show(m){\n"
	" const ids={};for(const j of m.jobs)ids[j.job]=j.jobid;\n"
	" let h='<tr><th>row</th>'+m.nodes.map(n=>'<th class=\"'+esc(n.state)+'\">'+esc(n.name)"
	"+'</th>').join('')+'</tr>';\n"
	" m.rows.forEach((r,i)=>{h+='<tr class=\"'+(i==m.row?'running':'')+'\" data-row=\"'+i+"
	"'\"><td>'+(i==m.row?'&#9654; ':'')+i+'</td>'+r.map(c=>c?'<td class=\"cell busy\" "
	"data-job=\"'+esc(ids[c]||c)+'\">'+esc(ids[c]||c)+'</td>':'<td class=\"cell\"></td>')"
	".join('')+'</tr>';});\n"
	" document.getElementById('matrix').innerHTML=h;\n"
	" let t='<tr><th>JobID</th><th>Name</th><th>User</th><th>State</th><th>Row</th>"
	"<th>Nodes</th><th>NodeList</th></tr>';\n"
	" for(const j of m.jobs)t+='<tr class=\"job\" data-job=\"'+esc(j.jobid)+'\"><td>'+"
	"esc(j.jobid)+'</td><td>'+esc(j.name)+'</td><td>'+esc(j.user)+'</td><td>'+esc(j.state)"
	"+'</td><td>'+(j.row>=0?j.row:'')+'</td><td>'+j.nodes+'</td><td>'+esc(j.nodelist)+"
	"'</td></tr>';\n"
	" document.getElementById('jobs').innerHTML=t;\n"
	" document.getElementById('status').textContent='slice '+m.slice+', '+m.switches+"
	"' row switches, timeslice '+m.timeslice_us/1000+' ms, MPL '+m.mpl+', '+m.policy;\n"
	"}\n"
	"async function poll(){try{const r=await fetch('/matrix.json',{cache:'no-store'});"
	"if(r.ok)show(await r.json());else document.getElementById('status').textContent="
	"'machine manager: '+(await r.text());}catch(e){document.getElementById('status')"
	".textContent='no answer: '+e;}setTimeout(poll,500);}\n"
	"poll();\n"
	"</script></body></html>\n";

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned status, const char *type,
			     char *body, size_t len, enum MHD_ResponseMemoryMode mode)
{
	struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, mode);
	if (!resp)
		return MHD_NO;
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	enum MHD_Result rc = MHD_queue_response(conn, status, resp);
	MHD_destroy_response(resp);
	return rc;
}

/* Runs in libmicrohttpd's thread, the only one that touches c after start. */
static enum MHD_Result on_http(void *cls, struct MHD_Connection *conn, const char *url,
			       const char *method, const char *version, const char *upload,
			       size_t *upload_len, void **con_cls)
{
	(void)version;
	(void)upload;
	(void)upload_len;
	(void)con_cls;
	struct cli *c = cls;
	if (strcmp(method, "GET"))
		return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "text/plain", "only GET\n", 9,
			     MHD_RESPMEM_PERSISTENT);
	if (!strcmp(url, "/"))
		return reply(conn, MHD_HTTP_OK, "text/html; charset=utf-8", (char *)page,
			     sizeof(page) - 1, MHD_RESPMEM_PERSISTENT);
	if (strcmp(url, "/matrix.json"))
		return reply(conn, MHD_HTTP_NOT_FOUND, "text/plain", "not found\n", 10,
			     MHD_RESPMEM_PERSISTENT);
	Storm__Ctl__ShowMatrix sm = STORM__CTL__SHOW_MATRIX__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_MATRIX;
	req.matrix = &sm;
	int rc;
	Storm__Ctl__Reply *rep = cli_call(c, &req, CTL_TIMEOUT_MS, &rc);
	if (!rep || rep->body_case != STORM__CTL__REPLY__BODY_MATRIX) {
		ctl_reply_free(rep);
		static const char msg[] = "no answer from the machine manager (see storm web's stderr)\n";
		return reply(conn, MHD_HTTP_BAD_GATEWAY, "text/plain", (char *)msg, sizeof(msg) - 1,
			     MHD_RESPMEM_PERSISTENT);
	}
	json_t *root = matrix_json(rep->matrix);
	ctl_reply_free(rep);
	char *text = root ? json_dumps(root, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
	json_decref(root);
	if (!text)
		return MHD_NO;
	return reply(conn, MHD_HTTP_OK, "application/json", text, strlen(text),
		     MHD_RESPMEM_MUST_FREE);
}

enum { W_PORT = 1, W_ADDRESS, W_CONF, W_HELP };

int cmd_web(struct cli *c, int argc, char **argv)
{
	static const struct cli_opt opts[] = {
		{ "port", 'p', 1, W_PORT }, { "address", 0, 1, W_ADDRESS },
		{ "conf", 0, 1, W_CONF },   { "help", 'h', 0, W_HELP },
		{ NULL, 0, 0, 0 },
	};
	uint64_t port = 8080;
	const char *address = "127.0.0.1";
	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, 0);
	int id;
	while ((id = cli_opt_next(&p, opts)) != OPT_DONE) {
		switch (id) {
		case W_PORT:
			if (parse_uint(p.arg, 0, 65535, &port) != 0)
				return usage_error("storm web", "--port wants 0 to 65535, not '%s'", p.arg);
			break;
		case W_ADDRESS: address = p.arg; break;
		case W_CONF: c->conf_opt = p.arg; break;
		case W_HELP: fputs(web_help, stdout); return EXIT_OK;
		case OPT_OPERAND: return usage_error("storm web", "unexpected argument '%s'", p.arg);
		default: return usage_error("storm web", "%s", p.err);
		}
	}
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = htons((uint16_t)port) };
	if (inet_pton(AF_INET, address, &sa.sin_addr) != 1)
		return usage_error("storm web", "--address wants an IPv4 address, not '%s'", address);
	if (cli_load_conf(c) != 0)
		return EXIT_STORM;
	struct sigaction act = { .sa_handler = on_signal };
	sigaction(SIGINT, &act, NULL);
	sigaction(SIGTERM, &act, NULL);
	signal(SIGPIPE, SIG_IGN);
	/* one thread answers, one request at a time: the page polls gently */
	struct MHD_Daemon *d = MHD_start_daemon(
		MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG, 0, NULL, NULL, on_http, c,
		MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa, MHD_OPTION_CONNECTION_LIMIT,
		(unsigned)32, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)30, MHD_OPTION_END);
	if (!d) {
		fprintf(stderr, "storm web: error: cannot listen on %s:%llu: %s\n", address,
			(unsigned long long)port, strerror(errno));
		return EXIT_STORM;
	}
	const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
	printf("storm web: http://%s:%u/\n", address, di ? di->port : (unsigned)port);
	fflush(stdout);
	while (!stop)
		pause();
	MHD_stop_daemon(d);
	return EXIT_OK;
}
