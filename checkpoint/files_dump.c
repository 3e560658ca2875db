/* What a dump keeps of the descriptors beside the file table: the bytes
 * buffered in a pipe, copied with tee() from a descriptor of it opened
 * through /proc (not taken out of it); a memfd's content, read through
 * such a descriptor while the process is stopped, written as page sections. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <linux/magic.h>
#include <sys/ioctl.h>
#include <sys/vfs.h>
#include <xxhash.h>

#include "fdinfo.h"
#include "internal.h"
#include "files.h"

static Storm__Ckpt__Pipe *pipe_find(Storm__Ckpt__FileTable *ft, uint64_t id)
{
	for (size_t i = 0; i < ft->n_pipes; i++)
		if (ft->pipes[i]->id == id)
			return ft->pipes[i];
	return NULL;
}

int ckpt_files_grow(void *arrp, size_t n, size_t size)
{
	void **arr = arrp;
	void *na = realloc(*arr, (n + 1) * size);
	if (!na)
		return -ENOMEM;
	*arr = na;
	return 0;
}

/* The bytes buffered in pipe (or FIFO) id, copied with tee() from a
 * descriptor of it opened through /proc (so not taken out), packet by
 * packet for a pipe in packet mode. */
int ckpt_files_pipe_save(struct ckpt_fdump *s, const struct ckpt_fent *e, bool packets)
{
	Storm__Ckpt__FileTable *ft = s->ft;
	if (pipe_find(ft, e->st.st_ino))
		return 0;
	Storm__Ckpt__Pipe *p = malloc(sizeof(*p));
	if (!p || ckpt_files_grow(&ft->pipes, ft->n_pipes, sizeof(*ft->pipes))) {
		free(p);
		return -ENOMEM;
	}
	storm__ckpt__pipe__init(p);
	p->id = e->st.st_ino;
	ft->pipes[ft->n_pipes++] = p;
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/fd/%d", s->pid, e->fd);
	int rd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC), sp[2] = { -1, -1 }, avail = 0;
	int size = rd >= 0 ? fcntl(rd, F_GETPIPE_SZ) : -1;
	int rc = 0;
	if (rd < 0 || size < 0 || ioctl(rd, FIONREAD, &avail) < 0) {
		rc = -errno;
		goto out;
	}
	p->size = (uint32_t)size;
	if (!avail)
		goto out;
	p->data.data = malloc(avail);
	if (!p->data.data) {
		rc = -ENOMEM;
		goto out;
	}
	if (pipe2(sp, O_CLOEXEC) < 0 || fcntl(sp[1], F_SETPIPE_SZ, size) < 0) {
		rc = -errno;
		goto out;
	}
	ssize_t t = tee(rd, sp[1], (size_t)avail, SPLICE_F_NONBLOCK);
	if (t != avail) {
		rc = t < 0 ? -errno : -EAGAIN;
		goto out;
	}
	close(sp[1]);
	sp[1] = -1;
	while (p->data.len < (size_t)avail) {
		ssize_t r = read(sp[0], p->data.data + p->data.len, (size_t)avail - p->data.len);
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			goto out;
		}
		/* a pipe in packet mode gives one packet a read */
		if (packets) {
			if (ckpt_files_grow(&p->packets, p->n_packets, sizeof(*p->packets))) {
				rc = -ENOMEM;
				goto out;
			}
			p->packets[p->n_packets++] = (uint32_t)r;
		}
		p->data.len += r;
	}
out:
	if (rd >= 0)
		close(rd);
	for (int i = 0; i < 2; i++)
		if (sp[i] >= 0)
			close(sp[i]);
	if (rc)
		return ckpt_fail(s->err, s->errlen, rc, "pid %d: fd %d: reading what is buffered in %s: %s",
				 s->pid, e->fd, e->target, strerror(-rc));
	return 0;
}

bool ckpt_files_is_memfd(const struct ckpt_fent *e)
{
	size_t l = strlen(e->target);
	return e->st_ok && S_ISREG(e->st.st_mode) && !strncmp(e->target, "/memfd:", 7) &&
	       l >= 17 && !strcmp(e->target + l - 10, " (deleted)");
}

/* A memfd of the image, from our descriptor of it (fd, taken over) whose
 * /proc name is target ("/memfd:NAME (deleted)"): its name, size, seals
 * and the pages that hold data (SEEK_DATA: a sparse memfd saves its holes
 * as nothing). */
int ckpt_files_memfd_add(struct ckpt_fdump *s, int fd, const char *target, const char *where)
{
	Storm__Ckpt__FileTable *ft = s->ft;
	struct stat sb;
	struct statfs sf;
	if (fstat(fd, &sb) < 0 || fstatfs(fd, &sf) < 0) {
		close(fd);
		return ckpt_fail(s->err, s->errlen, -errno, "pid %d: %s: %s", s->pid, where,
				 strerror(errno));
	}
	for (size_t i = 0; i < ft->n_memfds; i++)
		if (ft->memfds[i]->id == sb.st_ino) {
			close(fd);
			return 0;
		}
	if (sf.f_type == HUGETLBFS_MAGIC) {
		close(fd);
		return ckpt_fail(s->err, s->errlen, -ENOTSUP,
				 "pid %d: %s is a memfd of huge pages (%s): not supported", s->pid,
				 where, target);
	}
	Storm__Ckpt__Memfd *m = malloc(sizeof(*m));
	if (!m || ckpt_files_grow(&ft->memfds, ft->n_memfds, sizeof(*ft->memfds)) ||
	    ckpt_files_grow(&s->memfd_fd, ft->n_memfds, sizeof(*s->memfd_fd))) {
		free(m);
		close(fd);
		return -ENOMEM;
	}
	storm__ckpt__memfd__init(m);
	m->id = sb.st_ino;
	m->pages_section = -1;
	m->name = strndup(target + 7, strlen(target) - 17);
	m->size = sb.st_size;
	int seals = fcntl(fd, F_GET_SEALS);
	m->seals = seals > 0 ? (uint32_t)seals : 0;
	s->memfd_fd[ft->n_memfds] = fd;
	ft->memfds[ft->n_memfds++] = m;
	if (!m->name)
		return -ENOMEM;
	for (off_t at = 0; at < (off_t)m->size;) {
		off_t data = lseek(fd, at, SEEK_DATA);
		if (data < 0)
			break; /* ENXIO: only a hole is left */
		off_t hole = lseek(fd, data, SEEK_HOLE);
		if (hole < 0)
			hole = (off_t)m->size;
		uint64_t first = (uint64_t)data / CKPT_PAGE;
		uint64_t end = ((uint64_t)hole + CKPT_PAGE - 1) / CKPT_PAGE;
		if (m->n_runs && m->runs[m->n_runs - 1]->page + m->runs[m->n_runs - 1]->count >= first) {
			Storm__Ckpt__Run *last = m->runs[m->n_runs - 1];
			if (end > last->page + last->count)
				last->count = end - last->page;
		} else {
			Storm__Ckpt__Run *r = malloc(sizeof(*r));
			if (!r || ckpt_files_grow(&m->runs, m->n_runs, sizeof(*m->runs))) {
				free(r);
				return -ENOMEM;
			}
			storm__ckpt__run__init(r);
			r->page = first;
			r->count = end - first;
			m->runs[m->n_runs++] = r;
		}
		at = hole;
	}
	return 0;
}

int ckpt_files_area(struct ckpt_fdump *s, struct ckpt_map *m)
{
	Storm__Ckpt__FileTable *ft = s->ft;
	if (m->kind != CKPT_VMA_MEMFD && m->kind != CKPT_VMA_EXTERNAL)
		return 0;
	for (size_t i = 0; i < ft->n_memfds; i++)
		if (ft->memfds[i]->id == m->ino) {
			m->kind = CKPT_VMA_MEMFD; /* the process's own, saved with it */
			return 0;
		}
	if (m->kind == CKPT_VMA_EXTERNAL)
		return 0;
	/* a memfd only mapped: its descriptor was closed */
	char p[96], what[96];
	snprintf(p, sizeof(p), "/proc/%d/map_files/%llx-%llx", s->pid, (unsigned long long)m->start,
		 (unsigned long long)m->end);
	snprintf(what, sizeof(what), "area %#llx-%#llx", (unsigned long long)m->start,
		 (unsigned long long)m->end);
	int fd = open(p, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ckpt_fail(s->err, s->errlen, -errno,
				 "pid %d: %s maps the memfd %s, which no descriptor holds (reading it "
				 "through %s: %s)", s->pid, what, m->path, p, strerror(errno));
	char target[PATH_MAX + 16];
	snprintf(target, sizeof(target), "%s (deleted)", m->path);
	return ckpt_files_memfd_add(s, fd, target, what);
}

void ckpt_files_plan_data(struct ckpt_fdump *s, uint32_t *npsec)
{
	for (size_t i = 0; s && i < s->ft->n_memfds; i++)
		if (s->ft->memfds[i]->n_runs)
			s->ft->memfds[i]->pages_section = (int32_t)(*npsec)++;
}

bool ckpt_files_need_stop(const struct ckpt_fdump *s)
{
	for (size_t i = 0; s && i < s->ft->n_memfds; i++)
		if (s->ft->memfds[i]->n_runs)
			return true;
	return false;
}

int ckpt_files_write_data(struct ckpt_fdump *s, int out, struct ckpt_sec *secs, uint64_t *off,
			  const char *path)
{
	const size_t BUF = 1 << 20;
	unsigned char *buf = NULL;
	XXH3_state_t *xs = NULL;
	int rc = 0;
	for (size_t i = 0; s && !rc && i < s->ft->n_memfds; i++) {
		Storm__Ckpt__Memfd *m = s->ft->memfds[i];
		if (m->pages_section < 0)
			continue;
		if (!buf && (!(buf = malloc(BUF)) || !(xs = XXH3_createState()))) {
			rc = -ENOMEM;
			break;
		}
		struct ckpt_sec *sec = &secs[m->pages_section];
		sec->type = CKPT_SEC_PAGES;
		sec->index = (uint32_t)m->pages_section;
		sec->offset = *off;
		XXH3_64bits_reset(xs);
		for (size_t r = 0; !rc && r < m->n_runs; r++) {
			uint64_t at = m->runs[r]->page * CKPT_PAGE;
			for (uint64_t left = m->runs[r]->count * CKPT_PAGE; left && !rc;) {
				size_t want = left < BUF ? left : BUF;
				ssize_t got = pread(s->memfd_fd[i], buf, want, (off_t)at);
				if (got < 0) {
					rc = ckpt_fail(s->err, s->errlen, -errno, "pid %d: memfd %s: %s",
						       s->pid, m->name, strerror(errno));
					break;
				}
				/* the last page past its size: zeros */
				memset(buf + got, 0, want - (size_t)got);
				XXH3_64bits_update(xs, buf, want);
				for (size_t w = 0; w < want && !rc;) {
					ssize_t k = write(out, buf + w, want - w);
					if (k < 0 && errno != EINTR)
						rc = ckpt_fail(s->err, s->errlen, -errno, "%s: %s", path,
							       strerror(errno));
					else if (k > 0)
						w += (size_t)k;
				}
				at += want;
				left -= want;
				*off += want;
			}
		}
		sec->length = *off - sec->offset;
		sec->hash = XXH3_64bits_digest(xs);
	}
	if (xs)
		XXH3_freeState(xs);
	free(buf);
	return rc;
}

void ckpt_files_dump_free(struct ckpt_fdump *s, Storm__Ckpt__FileTable *ft)
{
	for (size_t i = 0; i < ft->n_files; i++) {
		Storm__Ckpt__File *f = ft->files[i];
		for (size_t k = 0; k < f->n_items; k++)
			free(f->items[k]);
		free(f->items);
		free(f->path);
		free(f);
	}
	free(ft->files);
	for (size_t i = 0; i < ft->n_pipes; i++) {
		free(ft->pipes[i]->data.data);
		free(ft->pipes[i]->packets);
		free(ft->pipes[i]);
	}
	free(ft->pipes);
	for (size_t i = 0; i < ft->n_memfds; i++) {
		for (size_t r = 0; r < ft->memfds[i]->n_runs; r++)
			free(ft->memfds[i]->runs[r]);
		free(ft->memfds[i]->runs);
		free(ft->memfds[i]->name);
		free(ft->memfds[i]);
		if (s)
			close(s->memfd_fd[i]);
	}
	free(ft->memfds);
	if (s)
		free(s->memfd_fd);
	free(s);
}
