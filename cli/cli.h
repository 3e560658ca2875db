/* The storm CLI's internals: finding the cluster, talking to the machine
 * manager (proto/control.proto over common/frame.h), and the commands. */
#ifndef STORM_CLI_H
#define STORM_CLI_H

#include <limits.h>
#include <stdio.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config.h"
#include "control.pb-c.h"

#define CTL_VERSION 1
#define CTL_TIMEOUT_MS 10000 /* a reply to a query; the MM answers at slice boundaries */

struct sbatch_opts;

/* Exit codes (docs/storm.1.md): storm run exits with the job's status. */
enum { EXIT_OK = 0, EXIT_STORM = 1, EXIT_USAGE = 2 };

struct cli {
	const char *conf_opt; /* --conf FILE, or NULL */
	const char *mm_opt;   /* --mm HOST:PORT, or NULL */
	char conf_path[PATH_MAX];
	struct storm_conf conf;
	uid_t conf_uid;       /* storm.conf's owner: the MM's uid over TCP */
	int have_conf;
	/* Slurm's commands on storm (slurm/): this name in run/submit's
	 * messages, sbatch's "Submitted batch job N" and slurm-%j.out */
	const char *slurm_cmd;
	/* sbatch: its command line's options, taken over the script's */
	const struct sbatch_opts *sbatch;
};

/* Finds storm.conf (--conf, $STORM_CONF, /tmp/storm-$UID, /tmp/storm-0,
 * PREFIX/etc/storm of an install, /etc/storm) and loads it. Returns 0, or prints why and returns -1. */
int cli_load_conf(struct cli *c);
/* Where the search would look; the directory of a virtual cluster. */
int cli_find_conf(struct cli *c, char *err, size_t errlen);

/* Connects to the MM's socket within timeout_ms; fd or -errno. */
int ctl_connect(const char *path, int timeout_ms);
/* Connects to the MM's ctl_address (HOST:PORT, "[v6]:PORT") within
 * timeout_ms; our credentials are sealed for mm_uid. fd, or -errno with
 * why in err. */
int ctl_connect_tcp(const char *address, uid_t mm_uid, int timeout_ms, char *err,
		    size_t errlen);
/* The MM's TCP address this command uses: --mm, $STORM_MM, or storm.conf's
 * ctl_address when the local socket is absent; NULL: the local socket.
 * Needs the configuration loaded. */
const char *cli_remote(const struct cli *c);
/* storm.conf's ctl_address when its local socket is absent, else NULL. */
const char *cli_conf_remote(const struct storm_conf *conf);
/* cli_load_conf, then the local socket or TCP (cli_remote) within
 * timeout_ms: fd, or -1 with the one-line reason in err. */
int cli_dial(struct cli *c, int timeout_ms, char *err, size_t errlen);
/* cli_dial within 5 s; on failure prints the reason and returns -1. */
int cli_connect(struct cli *c);
/* fd is a connection over TCP (no descriptors travel on it). */
int ctl_is_remote(int fd);
/* Sends one Request (version set here) with descriptors. 0 or -errno. */
int ctl_send(int fd, Storm__Ctl__Request *req, const int *fds, int nfds);
/* Receives one Reply within timeout_ms (-1: no limit). 0, -ETIMEDOUT, -EPIPE
 * (closed), -EPROTO (undecodable or another protocol version), -EBADMSG (not
 * authenticated), -errno. */
int ctl_recv(int fd, int timeout_ms, Storm__Ctl__Reply **rep);
void ctl_reply_free(Storm__Ctl__Reply *rep);
/* Checks a received frame's tag (common/ctl_auth.h) and decodes the Reply:
 * 0, -EBADMSG (not authenticated), -EPROTO, -EPROTONOSUPPORT (printed). */
int ctl_decode_reply(int fd, const uint8_t *buf, size_t len, Storm__Ctl__Reply **rep);
/* The munged socket requests are signed with ("" or NULL: MUNGE's default);
 * cli_load_conf sets it from storm.conf. */
void ctl_set_munge_socket(const char *path);
/* Prints why a ctl_send/ctl_recv failed, as one "storm: error:" line. */
void ctl_report(int err);

/* Connect, send, receive one reply. NULL after printing the failure (an
 * Error reply included); the exit code then goes to *rc. */
Storm__Ctl__Reply *cli_call(struct cli *c, Storm__Ctl__Request *req, int timeout_ms, int *rc);
/* Prints "storm: error: [what: ]MESSAGE" for an Error reply; returns 1. */
int cli_print_error(const Storm__Ctl__Error *e, const char *what);
/* cli_call for a reply of kind want: any other kind is printed, freed,
 * and NULL returned with the exit code in *rc. */
Storm__Ctl__Reply *cli_call_for(struct cli *c, Storm__Ctl__Request *req, int timeout_ms,
			      Storm__Ctl__Reply__BodyCase want, int *rc);
/* A reply of an unexpected kind: prints it and returns 1. */
int cli_unexpected(const Storm__Ctl__Reply *rep, const char *wanted);

/* Monotonic seconds. */
double now_s(void);

int cmd_run(struct cli *c, int argc, char **argv);
int cmd_submit(struct cli *c, int argc, char **argv);
int cmd_jobs(struct cli *c, int argc, char **argv);
int cmd_nodes(struct cli *c, int argc, char **argv);
int cmd_cancel(struct cli *c, int argc, char **argv);
int cmd_matrix(struct cli *c, int argc, char **argv);
int cmd_checkpoint(struct cli *c, int argc, char **argv);
int cmd_restart(struct cli *c, int argc, char **argv);
int cmd_checkpoints(struct cli *c, int argc, char **argv);
/* ckpt.c: sends a restart request and streams the restored job (storm restart,
 * storm replay --from); its exit code. trace_fd: the trace a replay --from
 * sends along (as a run sends a --file), or -1 */
int cli_restart(struct cli *c, Storm__Ctl__Restart *rs, const char *cmd, int label,
		int trace_fd);
/* run.c: the file at fd as a request over TCP carries it (proto/control.proto's
 * FileData), its bytes in *data (malloc'd, the caller frees it, also on
 * failure); *total counts the bytes of the request's files so far. 0, -1
 * (printed), or -EFBIG: they exceed what one request carries (the caller
 * says what to do instead). */
int cli_file_inline(int fd, const char *what, size_t *total, Storm__Ctl__FileData *msg,
		    uint8_t **data);
/* run.c: streams a submitted job on fd like storm run; its exit code */
int cli_stream(struct cli *c, int fd, const char *cmd, int label);
int cmd_replay(struct cli *c, int argc, char **argv);
int cmd_acct(struct cli *c, int argc, char **argv);
int cmd_alloc(struct cli *c, int argc, char **argv);
/* `storm matrix` without --json: the header line, the grid, the jobs. */
void matrix_draw(const Storm__Ctl__Matrix *m, FILE *f);
/* `storm matrix --json`'s object (jansson's json_t; NULL when out of memory) */
struct json_t;
struct json_t *matrix_json(const Storm__Ctl__Matrix *m);
int cmd_web(struct cli *c, int argc, char **argv);
int cmd_trace(struct cli *c, int argc, char **argv);
int cmd_traces(struct cli *c, int argc, char **argv);

#endif
