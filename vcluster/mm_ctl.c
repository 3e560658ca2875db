/* Which virtual cluster a command means (its storm.conf), and talking to
 * its machine manager: status, nodes and shutdown requests, over its
 * socket or its ctl_address. */
#include <limits.h>
#include <stdio.h>
#include <unistd.h>

#include "cluster.h"
#include "fmt.h"

/* --dir DIR means DIR/storm.conf; else the usual search. 0 or -1 when there
 * is no configuration at all (err says where it looked). */
int vc_locate(struct cli *c, const char *dir, char *err, size_t errlen)
{
	if (dir) {
		char cwd[PATH_MAX], abs[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)) || absolute_path(cwd, dir, abs, sizeof(abs)) ||
		    vc_path_join(c->conf_path, sizeof(c->conf_path), abs, "storm.conf")) {
			snprintf(err, errlen, "cannot make %s absolute", dir);
			return -1;
		}
		c->conf_opt = c->conf_path;
		return 0;
	}
	return cli_find_conf(c, err, errlen);
}

/* The MM where a command reaches it: its socket, or its ctl_address when
 * that socket is not here (cli_conf_remote: --hosts, whose MM has it in its
 * own host, or a Slurm allocation's MM on another node). */
const char *vc_mm_where(const struct storm_conf *conf)
{
	const char *remote = cli_conf_remote(conf);
	return remote ? remote : conf->socket;
}

/* where: the MM's socket (a path) or its ctl_address (HOST:PORT). */
static Storm__Ctl__Reply *ask(const char *where, Storm__Ctl__Request *req, int timeout_ms,
			      int *err)
{
	Storm__Ctl__Reply *rep = NULL;
	char why[300];
	int fd = where[0] == '/' ? ctl_connect(where, 1000)
				 : ctl_connect_tcp(where, getuid(), 1000, why, sizeof(why));
	if (fd < 0) {
		*err = fd;
		return NULL;
	}
	*err = ctl_send(fd, req, NULL, 0);
	if (*err == 0)
		*err = ctl_recv(fd, timeout_ms, &rep);
	close(fd);
	return rep;
}

Storm__Ctl__Reply *vc_ask_status(const char *sock, unsigned wait_ms, int *err)
{
	Storm__Ctl__ClusterStatus cs = STORM__CTL__CLUSTER_STATUS__INIT;
	cs.wait_ms = wait_ms;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_STATUS;
	req.status = &cs;
	return ask(sock, &req, (int)wait_ms + 5000, err);
}

Storm__Ctl__Reply *vc_ask_nodes(const char *sock, int *err)
{
	Storm__Ctl__ListNodes ln = STORM__CTL__LIST_NODES__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_NODES;
	req.nodes = &ln;
	return ask(sock, &req, CTL_TIMEOUT_MS, err);
}

int vc_send_shutdown(const char *sock, int *err)
{
	Storm__Ctl__Shutdown sd = STORM__CTL__SHUTDOWN__INIT;
	Storm__Ctl__Request req = STORM__CTL__REQUEST__INIT;
	req.body_case = STORM__CTL__REQUEST__BODY_SHUTDOWN;
	req.shutdown = &sd;
	Storm__Ctl__Reply *rep = ask(sock, &req, CTL_TIMEOUT_MS, err);
	if (!rep)
		return -1;
	int rc = 0;
	if (rep->body_case == STORM__CTL__REPLY__BODY_ERROR)
		rc = cli_print_error(rep->error, "shutdown");
	else if (rep->body_case != STORM__CTL__REPLY__BODY_SHUTTING_DOWN)
		rc = cli_unexpected(rep, "ShuttingDown");
	ctl_reply_free(rep);
	return rc ? 1 : 0;
}
