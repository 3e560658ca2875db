/* Job directories and the files transferred into them through the two file
 * buffers of global memory (layout.h, "file"). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <inttypes.h>
#include <sodium.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "layout.h"
#include "nd.h"

/* The state directory was checked to leave room at start-up. */
static void job_dir_path(const struct nd *nd, uint64_t job, char *path, size_t len)
{
	if ((size_t)snprintf(path, len, "%s/%" PRIu64, nd->jobs_dir, job) >= len)
		path[0] = '\0';
}

/* Creates the job directory (0700, owned by the job's user when we are
 * root) unless it exists. Returns 0 or -errno; path receives it. */
int nd_job_dir_create(struct nd *nd, uint64_t job, uint32_t uid, uint32_t gid, char *path,
		      size_t len)
{
	job_dir_path(nd, job, path, len);
	if (mkdir(path, 0700) < 0) {
		if (errno != EEXIST)
			return -errno;
		return 0;
	}
	if (nd->root && chown(path, uid, gid) < 0) {
		int err = -errno;
		rmdir(path);
		return err;
	}
	return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
	(void)st;
	(void)type;
	(void)ftw;
	remove(path);
	return 0;
}

void nd_job_dir_remove(struct nd *nd, uint64_t job)
{
	char path[PATH_MAX];
	if (nd->file_fd >= 0 && nd->file_job == job)
		nd_files_close(nd);
	job_dir_path(nd, job, path, sizeof(path));
	/* FTW_PHYS: a rank may leave symlinks; remove them, never follow */
	if (nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS) < 0 && errno != ENOENT)
		slog("job %" PRIu64 ": cannot remove %s: %s", job, path, strerror(errno));
}

/* Job directories left by an earlier daemon on this node belong to jobs that
 * died with it. */
void nd_jobs_dir_clean(struct nd *nd)
{
	DIR *d = opendir(nd->jobs_dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		char *end;
		uint64_t job = strtoull(e->d_name, &end, 10);
		if (e->d_name[0] == '.' || *end || job == 0)
			continue;
		slog("removing job directory %s left by an earlier stormnd", e->d_name);
		nd_job_dir_remove(nd, job);
	}
	closedir(d);
}

void nd_files_close(struct nd *nd)
{
	if (nd->file_fd >= 0)
		close(nd->file_fd);
	nd->file_fd = -1;
}

static int write_all(int fd, const uint8_t *p, size_t len, uint64_t off)
{
	while (len > 0) {
		ssize_t n = pwrite(fd, p, len, (off_t)off);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
		off += (uint64_t)n;
	}
	return 0;
}

static void file_failed(struct nd *nd, const struct file_chunk *c, const char *what, int err)
{
	nd->file_err_job = c->job;
	nd->file_err_index = c->file;
	snprintf(nd->file_err, sizeof(nd->file_err), "cannot %s transferred file '%.60s' in "
		 "node-local storage: %s", what, c->name, strerror(err));
}

static void write_chunk(struct nd *nd, const struct file_chunk *c, const uint8_t *data)
{
	const char *bad = nd_chunk_problem(c);
	if (bad) {
		slog("file chunk %" PRIu64 " skipped: %s", c->seq, bad);
		return;
	}
	char dir[PATH_MAX], path[PATH_MAX + 80];
	if (nd->file_err_job == c->job && nd->file_err_index == c->file)
		return; /* that file failed already: nothing half-written stays */
	int rc = nd_job_dir_create(nd, c->job, c->uid, c->gid, dir, sizeof(dir));
	if (rc < 0) {
		slog("job %" PRIu64 ": cannot create %s: %s", c->job, dir, strerror(-rc));
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, c->name);
	if (nd->file_fd < 0 || nd->file_job != c->job || nd->file_index != c->file) {
		nd_files_close(nd);
		/* O_NOFOLLOW: the directory belongs to the user, we may be root */
		/* no O_TRUNC: a later chunk of this file may have come first;
		 * the job directory is new, and FILE_LAST sets the size */
		int fd = open(path, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd < 0) {
			slog("job %" PRIu64 ": cannot create %s: %s", c->job, path,
			       strerror(errno));
			file_failed(nd, c, "create", errno);
			return;
		}
		/* set-id bits from the network are not honoured */
		if ((nd->root && fchown(fd, c->uid, c->gid) < 0) || fchmod(fd, c->mode & 0777) < 0) {
			slog("job %" PRIu64 ": cannot set owner or mode of %s: %s", c->job,
			       path, strerror(errno));
			close(fd);
			unlink(path);
			return;
		}
		nd->file_fd = fd;
		nd->file_job = c->job;
		nd->file_index = c->file;
	}
	rc = write_all(nd->file_fd, data, c->len, c->offset);
	if (rc == 0 && (c->flags & FILE_LAST) && ftruncate(nd->file_fd, (off_t)c->size) < 0)
		rc = -errno;
	if (rc < 0) {
		/* the Launch's size check then fails the job with a reason */
		slog("job %" PRIu64 ": cannot write %s: %s", c->job, path, strerror(-rc));
		nd_files_close(nd);
		unlink(path);
		file_failed(nd, c, "write", -rc);
		return;
	}
	/* closed after every chunk: the chunks of a file may come in any order
	 * (layout.h), and a descriptor left open for writing would make the
	 * exec fail with ETXTBSY */
	nd_files_close(nd);
}

/* Each EV_FILE(b) means buffer b was filled completely. The two buffers'
 * transfers are independent, so chunks may be handled out of order; each
 * is written at its own offset. */
void nd_files_arrived(struct nd *nd, int b, int count)
{
	for (int i = 0; i < count; i++) {
		struct file_chunk hdr;
		memcpy(&hdr, nd->gmem + GM_FILE_BUF_AT(b), sizeof(hdr));
		if (hdr.seq <= nd->file_seq[b]) {
			slog("file event on buffer %d without a new chunk (last %" PRIu64 "); ignored",
			       b, nd->file_seq[b]);
			continue;
		}
		/* verified and written from a private copy (gm_copy) */
		const uint8_t *data = NULL;
		if (hdr.len <= GM_FILE_DATA_MAX &&
		    !(data = gm_copy(&nd->verify,
				     nd->gmem + GM_FILE_BUF_AT(b) + sizeof(struct file_chunk), hdr.len))) {
			slog("file chunk %" PRIu64 ": no memory to check it; ignored", hdr.seq);
			continue;
		}
		uint8_t want[GM_TAG_LEN];
		if (data)
			gm_file_tag(nd->key, hdr.nonce, hdr.seq, &hdr, offsetof(struct file_chunk, tag),
				    data, hdr.len, want);
		if (hdr.len > GM_FILE_DATA_MAX || sodium_memcmp(want, hdr.tag, GM_TAG_LEN) != 0) {
			/* forged or altered: nothing written, not counted as
			 * consumed (the genuine chunk of that number may follow;
			 * if it was overwritten, the transfer fails by timeout) */
			nd_log_refused(nd, "file chunk %" PRIu64 " in buffer %d has a bad tag (forged "
					   "or altered); refused", hdr.seq, b);
			continue;
		}
		write_chunk(nd, &hdr, data);
		/* a skipped chunk counts as consumed too, or the MM's flow
		 * control would wait for it until its timeout */
		nd->file_seq[b] = hdr.seq;
		sn_var_store(nd->sn, GM_VAR_FILE_DONE(b), hdr.seq);
	}
}
