/* Checkpoint files moved node to node, so that a checkpoint survives the
 * loss of a node and restarts where its images are not.
 *
 * The MM lists the copies in a Checkpoint command (CkptCopy: from, to, name
 * relative to the state directory). Two uses:
 *  - buddy copies: after its dump, a node sends its images to its buddy (the
 *    next node of the job); it stores the checkpoint id in GM_VAR_CKPT and
 *    reports CHECKPOINTED only once the buddy has them on disk, so a
 *    complete checkpoint has two copies of every image;
 *  - a restart's staging (Checkpoint.send): a node holding images (or the
 *    job's files) sends them to the nodes of the restart that lack them, and
 *    reports CHECKPOINT_COPIED; the MM launches once every sender did.
 * Transport: the BCS-MPI mailboxes (bcs.c), the node-to-node channel of
 * XFER-AND-SIGNAL messages, numbered, flow-controlled by acknowledgements
 * and tagged with the cluster key bound to the sender's index. A file goes
 * as a run of M_COPY_DATA messages (header + up to a mailbox message of
 * data), written by the receiver at their offsets into NAME.part; the last
 * one is fsynced and renamed to NAME, and the receiver answers M_COPY_ACK.
 * The sender never queues more than one mailbox window per peer, so a copy
 * of gigabytes holds no more than that in memory, and BCS-MPI messages wait
 * behind a window at most. Reading and writing happen in the daemon's loop,
 * a mailbox message (64 KiB) at a time. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "nd.h"

/* its message types in the mailboxes (BCS-MPI has 1-5) */
enum { M_COPY_DATA = 16, M_COPY_ACK = 17 };

#define COPY_NAME_MAX ND_COPY_NAME_MAX
#define COPY_STALL_NS (60ull * 1000000000ull) /* no progress: the copy fails */
#define COPY_ACK_NS (30ull * 1000000000ull)   /* all sent, no answer: sent again */
#define COPY_TRIES 3

struct copy_ack { /* M_COPY_ACK body */
	uint64_t xid;
	int32_t err;      /* 0, or the errno of the receiver's failure */
	uint32_t pad;
	char why[128];
};

struct copy_file {
	struct copy_file *next;
	uint64_t xid;
	uint32_t to;
	char name[COPY_NAME_MAX];
	int fd;
	uint64_t size, off;
	uint32_t mode;
	unsigned tries;   /* sends from offset 0 so far */
	uint64_t sent_ns; /* when its last part went */
};

struct copy_task {
	struct copy_task *next;
	uint64_t job, id;
	uint32_t slot;
	bool send_only;   /* a restart's staging; else the buddy copies of a dump */
	bool started;
	uint64_t dump_bytes, bytes;
	struct copy_file *todo;    /* not fully sent, in order */
	struct copy_file *waiting; /* sent, not yet acknowledged */
	uint64_t progress_ns;
	size_t nent;
	Storm__Cl__CkptCopy *ent;  /* this node's entries (names owned) */
};

/* a received file being synced by a child */
struct copy_sync {
	struct copy_sync *next;
	int fd;           /* the child's result: an errno, 0 */
	uint32_t from;
	uint64_t job, xid;
	char name[COPY_NAME_MAX];
};

/* a file the receiver refused: its later messages are dropped */
struct copy_bad {
	uint32_t from;
	uint64_t xid;
};

struct nd_copies {
	struct copy_task *tasks;
	uint64_t next_xid;
	uint8_t *buf;
	struct copy_bad bad[16];
	unsigned nbad;
	uint64_t rx_ns;   /* the last copy data received */
	struct copy_sync *syncing;
};

static struct nd_copies *state(struct nd *nd)
{
	if (!nd->copies) {
		nd->copies = calloc(1, sizeof(*nd->copies));
		if (nd->copies && !(nd->copies->buf = malloc(nd_mb_body_max(nd)))) {
			free(nd->copies);
			nd->copies = NULL;
		}
	}
	return nd->copies;
}

static void file_free(struct copy_file *f)
{
	if (f->fd >= 0)
		close(f->fd);
	free(f);
}

static void task_free(struct copy_task *t)
{
	for (struct copy_file *f = t->todo, *n; f; f = n) {
		n = f->next;
		file_free(f);
	}
	for (struct copy_file *f = t->waiting, *n; f; f = n) {
		n = f->next;
		file_free(f);
	}
	for (size_t i = 0; i < t->nent; i++)
		free(t->ent[i].name);
	free(t->ent);
	free(t);
}

static void task_unlink(struct nd *nd, struct copy_task *t)
{
	for (struct copy_task **pp = &nd->copies->tasks; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			return;
		}
}

static void task_end(struct nd *nd, struct copy_task *t, const char *why)
{
	task_unlink(nd, t);
	if (why) {
		nd_queue_note(nd, t->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED, UINT32_MAX,
			      "%" PRIu64 " %s: %s", t->id, nd->name, why);
		slog("job %" PRIu64 ": checkpoint %" PRIu64 " copies failed: %s", t->job,
		       t->id, why);
	} else if (t->send_only) {
		nd_queue_note(nd, t->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_COPIED, UINT32_MAX,
			      "%" PRIu64 " %" PRIu64, t->id, t->bytes);
		slog("job %" PRIu64 ": checkpoint %" PRIu64 " staged, %" PRIu64 " bytes sent",
		       t->job, t->id, t->bytes);
	} else {
		sn_var_store(nd->sn, GM_VAR_CKPT(t->slot), t->id);
		nd_queue_note(nd, t->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINTED, UINT32_MAX,
			      "%" PRIu64 " %" PRIu64, t->id, t->dump_bytes);
		slog("job %" PRIu64 ": checkpoint %" PRIu64 " written, %" PRIu64
			   " bytes, and copied to its buddy (%" PRIu64 " bytes)",
		       t->job, t->id, t->dump_bytes, t->bytes);
	}
	task_free(t);
}

static int add_file(struct nd *nd, struct copy_task *t, uint32_t to, const char *name,
		    char *why, size_t len)
{
	char path[PATH_MAX + COPY_NAME_MAX];
	snprintf(path, sizeof(path), "%s/%s", nd->state_dir, name);
	struct copy_file *f = calloc(1, sizeof(*f));
	if (!f) {
		snprintf(why, len, "out of memory");
		return -1;
	}
	struct stat st;
	f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (f->fd < 0 || fstat(f->fd, &st) < 0) {
		snprintf(why, len, "cannot open %s: %s", name, strerror(errno));
		file_free(f);
		return -1;
	}
	f->xid = ++nd->copies->next_xid;
	f->to = to;
	snprintf(f->name, sizeof(f->name), "%s", name);
	f->size = (uint64_t)st.st_size;
	f->mode = st.st_mode & 0777;
	struct copy_file **tail = &t->todo;
	while (*tail)
		tail = &(*tail)->next;
	*tail = f;
	return 0;
}

/* The entries become files to send; a directory ("ckpt/JOB/files") gives
 * each of its regular files. */
static int task_start(struct nd *nd, struct copy_task *t, char *why, size_t len)
{
	t->started = true;
	t->progress_ns = clock_mono_ns();
	for (size_t i = 0; i < t->nent; i++) {
		const char *name = t->ent[i].name;
		uint32_t to = t->ent[i].to;
		char path[PATH_MAX + COPY_NAME_MAX];
		snprintf(path, sizeof(path), "%s/%s", nd->state_dir, name);
		struct stat st;
		if (lstat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
			DIR *d = opendir(path);
			struct dirent *e;
			while (d && (e = readdir(d))) {
				char sub[COPY_NAME_MAX * 2];
				snprintf(sub, sizeof(sub), "%s/%s", name, e->d_name);
				struct stat fs;
				char full[PATH_MAX + COPY_NAME_MAX * 2];
				snprintf(full, sizeof(full), "%s/%s", nd->state_dir, sub);
				if (e->d_name[0] == '.' || lstat(full, &fs) < 0 || !S_ISREG(fs.st_mode) ||
				    strstr(e->d_name, ".part"))
					continue;
				if (!nd_valid_ckpt_file(sub)) {
					snprintf(why, len, "cannot copy %s: bad name", sub);
					closedir(d);
					return -1;
				}
				if (add_file(nd, t, to, sub, why, len) < 0) {
					closedir(d);
					return -1;
				}
			}
			if (d)
				closedir(d);
			else {
				snprintf(why, len, "cannot open %s: %s", name, strerror(errno));
				return -1;
			}
		} else if (add_file(nd, t, to, name, why, len) < 0) {
			return -1;
		}
	}
	return 0;
}

static const struct nd_job *job_here(const struct nd *nd, uint64_t id)
{
	for (const struct nd_job *j = nd->jobs; j; j = j->next)
		if (j->id == id)
			return j;
	return NULL;
}

/* An entry without a name stands for this node's images of the checkpoint:
 * DIR/rank<R>.img for each of its ranks of the job. */
void nd_copy_plan(struct nd *nd, const Storm__Cl__Checkpoint *c)
{
	const struct nd_job *job = c->send ? NULL : job_here(nd, c->job);
	size_t mine = 0;
	for (size_t i = 0; i < c->n_copies; i++)
		if (c->copies[i]->from == nd->index)
			mine += c->copies[i]->name[0] ? 1 : job ? job->nranks : 0;
	if (!mine) {
		if (c->send) /* nothing of ours is needed: done at once */
			nd_queue_note(nd, c->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_COPIED,
				      UINT32_MAX, "%" PRIu64 " 0", c->id);
		return;
	}
	char why[512] = "out of memory";
	struct copy_task *t = state(nd) ? calloc(1, sizeof(*t)) : NULL;
	if (t)
		t->ent = calloc(mine, sizeof(*t->ent));
	if (!t || !t->ent) {
		free(t);
		goto fail;
	}
	t->job = c->job;
	t->id = c->id;
	t->slot = c->slot;
	t->send_only = c->send;
	for (size_t i = 0; i < c->n_copies; i++) {
		const Storm__Cl__CkptCopy *e = c->copies[i];
		if (e->from != nd->index)
			continue;
		for (uint32_t k = 0; k < (e->name[0] ? 1 : job ? job->nranks : 0); k++) {
			char name[COPY_NAME_MAX];
			if (!e->name[0] && job->ranks[k].pid <= 0)
				continue; /* ended: the dump has no image of it either */
			if (e->name[0])
				snprintf(name, sizeof(name), "%s", e->name);
			else
				snprintf(name, sizeof(name), "%.100s/rank%u.img", c->dir,
					 job->ranks[k].rank);
			if (!nd_valid_ckpt_file(name) || e->to >= (uint32_t)nd->conf.nnodes ||
			    e->to == nd->index) {
				snprintf(why, sizeof(why), "bad copy '%.60s' to node %u", name, e->to);
				task_free(t);
				goto fail;
			}
			storm__cl__ckpt_copy__init(&t->ent[t->nent]);
			t->ent[t->nent].to = e->to;
			if (!(t->ent[t->nent].name = strdup(name))) {
				task_free(t);
				goto fail;
			}
			t->nent++;
		}
	}
	t->next = nd->copies->tasks;
	nd->copies->tasks = t;
	if (c->send) {
		if (task_start(nd, t, why, sizeof(why)) < 0) {
			task_end(nd, t, why);
			return;
		}
		slog("job %" PRIu64 ": sending %zu entries of checkpoint %" PRIu64
			   " for a restart", t->job, t->nent, t->id);
		nd_copy_pump(nd);
	}
	return;
fail:
	/* a dump goes on, but the checkpoint must not count as copied */
	nd_queue_note(nd, c->job, STORM__CL__JOB_NOTE__KIND__CHECKPOINT_FAILED, UINT32_MAX,
		      "%" PRIu64 " %s: %s", c->id, nd->name, why);
}

static struct copy_task *task_find(struct nd *nd, uint64_t id, bool send_only)
{
	for (struct copy_task *t = nd->copies ? nd->copies->tasks : NULL; t; t = t->next)
		if (t->id == id && t->send_only == send_only)
			return t;
	return NULL;
}

bool nd_copy_after_dump(struct nd *nd, uint64_t id, uint32_t slot, uint64_t bytes)
{
	struct copy_task *t = task_find(nd, id, false);
	if (!t)
		return false;
	t->slot = slot;
	t->dump_bytes = bytes;
	char why[512];
	if (task_start(nd, t, why, sizeof(why)) < 0) {
		task_end(nd, t, why);
		return true;
	}
	nd_copy_pump(nd);
	return true;
}

void nd_copy_forget(struct nd *nd, uint64_t id)
{
	struct copy_task *t = task_find(nd, id, false);
	if (t) {
		task_unlink(nd, t);
		task_free(t);
	}
}

/* Sends file f (in t's waiting or todo list) again from its start, under a
 * new number. The mailboxes lose the first messages of a stream when they
 * land after later ones at a receiver that never heard from us (bcs.c,
 * resync): the receiver then finds no NAME.part (ENOENT), or nothing comes
 * back at all. -1: it was tried enough. */
static int requeue(struct nd *nd, struct copy_task *t, struct copy_file *f)
{
	if (f->tries >= COPY_TRIES)
		return -1;
	for (struct copy_file **pp = &t->waiting; *pp; pp = &(*pp)->next)
		if (*pp == f) {
			*pp = f->next;
			f->next = t->todo;
			t->todo = f;
			break;
		}
	if (f->fd < 0) {
		char path[PATH_MAX + COPY_NAME_MAX];
		snprintf(path, sizeof(path), "%s/%s", nd->state_dir, f->name);
		if ((f->fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) < 0)
			return -1;
	}
	f->xid = ++nd->copies->next_xid;
	f->off = 0;
	slog("checkpoint %" PRIu64 ": %s sent to node %s again (try %u)", t->id, f->name,
	       nd->conf.nodes[f->to], f->tries + 1);
	return 0;
}

static void send_ack(struct nd *nd, uint32_t to, uint64_t job, uint64_t xid, int err,
		     const char *why);

void nd_copy_pump(struct nd *nd)
{
	struct nd_copies *s = nd->copies;
	if (!s)
		return;
	uint64_t now = clock_mono_ns();
	for (struct copy_sync **pp = &s->syncing; *pp;) {
		struct copy_sync *cs = *pp;
		int rc = 0;
		ssize_t n = read(cs->fd, &rc, sizeof(rc));
		if (n < 0 && errno == EAGAIN) {
			pp = &cs->next;
			continue;
		}
		if (n != sizeof(rc))
			rc = EIO; /* the child died */
		char why[128] = "";
		if (rc) {
			snprintf(why, sizeof(why), "cannot sync %.60s on %s: %s", cs->name, nd->name,
				 strerror(rc));
			slog("checkpoint copy from node %s: %s", nd->conf.nodes[cs->from], why);
		}
		send_ack(nd, cs->from, cs->job, cs->xid, rc, rc ? why : NULL);
		close(cs->fd);
		*pp = cs->next;
		free(cs);
	}
	size_t room = nd_mb_body_max(nd) - sizeof(struct nd_copy_hdr);
	for (struct copy_task *t = s->tasks, *next; t; t = next) {
		next = t->next;
		if (!t->started)
			continue;
		while (t->todo && nd_mb_backlog(nd, t->todo->to) < GM_BCS_SLOTS) {
			struct copy_file *f = t->todo;
			uint64_t n = f->size - f->off < room ? f->size - f->off : room;
			ssize_t got = n ? pread(f->fd, s->buf, n, (off_t)f->off) : 0;
			if (got < 0 || (uint64_t)got != n) {
				char why[300];
				snprintf(why, sizeof(why), "cannot read %s: %s", f->name,
					 got < 0 ? strerror(errno) : "it shrank");
				task_end(nd, t, why);
				goto next_task;
			}
			if (f->off == 0)
				f->tries++;
			struct nd_copy_hdr h = {.xid = f->xid, .size = f->size, .offset = f->off,
					     .mode = f->mode, .len = (uint32_t)n};
			snprintf(h.name, sizeof(h.name), "%s", f->name);
			struct iovec parts[2] = {{&h, sizeof(h)}, {s->buf, n}};
			nd_mb_send(nd, f->to, M_COPY_DATA, t->job, f->xid, parts, 2);
			f->off += n;
			t->progress_ns = now;
			if (f->off == f->size) { /* all sent: wait for its ack */
				f->sent_ns = now;
				t->todo = f->next;
				close(f->fd);
				f->fd = -1;
				f->next = t->waiting;
				t->waiting = f;
			}
		}
		if (!t->todo && !t->waiting) {
			task_end(nd, t, NULL);
			continue;
		}
		for (struct copy_file *f = t->waiting, *fn; f; f = fn) {
			fn = f->next;
			if (now - f->sent_ns <= COPY_ACK_NS)
				continue;
			if (requeue(nd, t, f) < 0) {
				char why[300];
				snprintf(why, sizeof(why), "node %s did not confirm %s (%u tries)",
					 nd->conf.nodes[f->to], f->name, f->tries);
				task_end(nd, t, why);
				goto next_task;
			}
			t->progress_ns = now;
		}
		if (now - t->progress_ns > COPY_STALL_NS) {
			char why[300];
			struct copy_file *f = t->todo ? t->todo : t->waiting;
			snprintf(why, sizeof(why), "node %s took no part of %s for 60 s",
				 nd->conf.nodes[f->to], f->name);
			task_end(nd, t, why);
		}
next_task:;
	}
}

/* While copies move, the loop runs every ms rather than every 5 (the
 * network layer's longest sleep): each mailbox message is a rendezvous
 * that both sides' progress must drive, and a window is only 16 of them
 * (a 515 MiB job's checkpoint: 5-16 s, against 8-17 s with 5 ms sleeps, on
 * this machine under varying load). */
int nd_copy_timer_ms(const struct nd *nd)
{
	const struct nd_copies *s = nd->copies;
	if (!s)
		return -1;
	for (const struct copy_task *t = s->tasks; t; t = t->next)
		if (t->started)
			return 1;
	if (s->syncing)
		return 1;
	return s->rx_ns && clock_mono_ns() - s->rx_ns < 100000000u ? 1 : -1; /* receiving */
}

/* ---- receiving */

static int mkdirs(char *path)
{
	for (char *p = path + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		int rc = mkdir(path, 0700) < 0 && errno != EEXIST ? -errno : 0;
		*p = '/';
		if (rc)
			return rc;
	}
	return 0;
}

static void send_ack(struct nd *nd, uint32_t to, uint64_t job, uint64_t xid, int err,
		     const char *why)
{
	struct copy_ack a = {.xid = xid, .err = err};
	snprintf(a.why, sizeof(a.why), "%s", why ? why : "");
	struct iovec part = {&a, sizeof(a)};
	nd_mb_send(nd, to, M_COPY_ACK, job, xid, &part, 1);
}

static void on_data(struct nd *nd, uint32_t from, uint64_t job, const struct nd_copy_hdr *h,
		    const uint8_t *data)
{
	struct nd_copies *s = nd->copies;
	for (unsigned i = 0; i < s->nbad && i < 16; i++)
		if (s->bad[i].from == from && s->bad[i].xid == h->xid)
			return;
	char name[COPY_NAME_MAX];
	snprintf(name, sizeof(name), "%.*s", (int)strnlen(h->name, sizeof(h->name)), h->name);
	char path[PATH_MAX + COPY_NAME_MAX], part[PATH_MAX + COPY_NAME_MAX + 8];
	snprintf(path, sizeof(path), "%s/%s", nd->state_dir, name);
	snprintf(part, sizeof(part), "%s.part", path);
	const char *what = "write";
	int err = 0, fd = -1;
	if (h->offset == 0 && (err = -mkdirs(part)) != 0) {
		what = "create the directory of";
		goto failed;
	}
	fd = open(part, O_WRONLY | O_CLOEXEC | O_NOFOLLOW | (h->offset == 0 ? O_CREAT | O_TRUNC : 0),
		  0600);
	if (fd < 0) {
		err = errno;
		what = "open";
		goto failed;
	}
	for (uint64_t done = 0; done < h->len;) {
		ssize_t n = pwrite(fd, data + done, h->len - done, (off_t)(h->offset + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			err = n < 0 ? errno : EIO;
			goto failed;
		}
		done += (uint64_t)n;
	}
	if (h->offset + h->len < h->size) {
		close(fd);
		return;
	}
	/* the last part: on disk before the sender hears so. fsync of a big
	 * file can take long on a busy disk, and the loop must follow strobes:
	 * a child syncs and renames it, and says so through a pipe that
	 * nd_copy_pump reads (the reaper takes the child as an unknown pid) */
	if (fchmod(fd, h->mode & 0777) < 0) {
		err = errno;
		goto failed;
	}
	struct copy_sync *cs = calloc(1, sizeof(*cs));
	int pfd[2] = {-1, -1};
	pid_t pid = -1;
	if (cs && pipe2(pfd, O_CLOEXEC | O_NONBLOCK) == 0) {
		/* listed before the fork: the child's memory stays reachable */
		*cs = (struct copy_sync){.fd = pfd[0], .from = from, .job = job, .xid = h->xid,
					 .next = s->syncing};
		snprintf(cs->name, sizeof(cs->name), "%s", name);
		s->syncing = cs;
		pid = fork();
	}
	if (pid == 0) {
		close(pfd[0]);
		int rc = fsync(fd) < 0 || rename(part, path) < 0 ? errno : 0;
		char dir[PATH_MAX + COPY_NAME_MAX];
		snprintf(dir, sizeof(dir), "%s", path);
		*strrchr(dir, '/') = '\0';
		int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dfd >= 0) {
			fsync(dfd);
			close(dfd);
		}
		if (write(pfd[1], &rc, sizeof(rc)) < 0)
			_exit(1);
		_exit(0);
	}
	if (pid < 0) {
		err = errno ? errno : ENOMEM;
		if (pfd[0] >= 0) {
			s->syncing = cs->next;
			close(pfd[0]);
			close(pfd[1]);
		}
		free(cs);
		goto failed;
	}
	close(pfd[1]);
	close(fd);
	return;
failed:
	if (fd >= 0)
		close(fd);
	unlink(part);
	s->bad[s->nbad++ % 16] = (struct copy_bad){.from = from, .xid = h->xid};
	char why[128];
	snprintf(why, sizeof(why), "cannot %s %.60s on %s: %s", what, name, nd->name,
		 strerror(err));
	slog("checkpoint copy from node %s: %s", nd->conf.nodes[from], why);
	send_ack(nd, from, job, h->xid, err, why);
}

static void on_ack(struct nd *nd, const struct copy_ack *a)
{
	for (struct copy_task *t = nd->copies->tasks; t; t = t->next)
		for (struct copy_file **pp = &t->waiting; *pp; pp = &(*pp)->next) {
			struct copy_file *f = *pp;
			if (f->xid != a->xid)
				continue;
			if (a->err == ENOENT && requeue(nd, t, f) == 0) {
				nd_copy_pump(nd);
				return;
			}
			if (a->err) {
				char why[160];
				snprintf(why, sizeof(why), "%.*s",
					 (int)strnlen(a->why, sizeof(a->why)), a->why);
				task_end(nd, t, why);
				return;
			}
			*pp = f->next;
			t->bytes += f->size;
			t->progress_ns = clock_mono_ns();
			file_free(f);
			if (!t->todo && !t->waiting)
				task_end(nd, t, NULL);
			return;
		}
	/* an error on a file still being sent also ends its task, but for a
	 * start that was lost: it starts over */
	for (struct copy_task *t = nd->copies->tasks; t; t = t->next)
		for (struct copy_file *f = t->todo; f; f = f->next)
			if (f->xid == a->xid && a->err) {
				if (a->err == ENOENT && requeue(nd, t, f) == 0)
					return;
				char why[160];
				snprintf(why, sizeof(why), "%.*s",
					 (int)strnlen(a->why, sizeof(a->why)), a->why);
				task_end(nd, t, why);
				return;
			}
}

static void on_message(struct nd *nd, uint32_t from, uint32_t type, uint64_t job, uint64_t arg,
		       const uint8_t *body, size_t len)
{
	(void)arg;
	if (!state(nd))
		return;
	if (type == M_COPY_DATA && len >= sizeof(struct nd_copy_hdr)) {
		nd->copies->rx_ns = clock_mono_ns();
		struct nd_copy_hdr h;
		memcpy(&h, body, sizeof(h));
		const char *bad = nd_copy_problem(&h, len);
		if (!bad) {
			on_data(nd, from, job, &h, body + sizeof(h));
		} else {
			/* the sender's own bug (it is authenticated): its copy fails */
			slog("checkpoint copy from node %s refused: %s", nd->conf.nodes[from],
			       bad);
			char why[128];
			snprintf(why, sizeof(why), "node %s refused a copy: %s", nd->name, bad);
			send_ack(nd, from, job, h.xid, EINVAL, why);
		}
	} else if (type == M_COPY_ACK && len >= sizeof(struct copy_ack)) {
		struct copy_ack a;
		memcpy(&a, body, sizeof(a));
		on_ack(nd, &a);
	}
}

void nd_copy_init(struct nd *nd)
{
	nd_mb_register(nd, M_COPY_DATA, on_message);
	nd_mb_register(nd, M_COPY_ACK, on_message);
}

void nd_copy_close(struct nd *nd)
{
	if (!nd->copies)
		return;
	while (nd->copies->tasks) {
		struct copy_task *t = nd->copies->tasks;
		nd->copies->tasks = t->next;
		task_free(t);
	}
	while (nd->copies->syncing) {
		struct copy_sync *cs = nd->copies->syncing;
		nd->copies->syncing = cs->next;
		close(cs->fd);
		free(cs);
	}
	free(nd->copies->buf);
	free(nd->copies);
	nd->copies = NULL;
}
