/* Restore: the objects of a tree image that several of its processes hold
 * (a pipe, a FIFO, a memfd, shared anonymous memory), made once by the
 * first process before it forks the others; a pipe's saved bytes written
 * back into it (its own pipes' too). */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>

#include "fdinfo.h"
#include "internal.h"
#include "files.h"

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* The bytes it had, written back (packet by packet in packet mode). */
int ckpt_files_pipe_fill(int w, const Storm__Ckpt__Pipe *p)
{
	if (p->size && fcntl(w, F_GETPIPE_SZ) != (int)p->size &&
	    fcntl(w, F_SETPIPE_SZ, (int)p->size) < 0)
		return -1;
	size_t at = 0;
	for (size_t k = 0; k < p->n_packets; k++) {
		if (write_all(w, p->data.data + at, p->packets[k]))
			return -1;
		at += p->packets[k];
	}
	return write_all(w, p->data.data + at, p->data.len - at);
}

const struct ckpt_shobj *ckpt_files_shared(const struct ckpt_shared *sh, int kind, uint64_t id)
{
	for (size_t i = 0; sh && id && i < sh->n; i++)
		if (sh->v[i].kind == kind && sh->v[i].id == id)
			return &sh->v[i];
	return NULL;
}

static int share_add(struct ckpt_shared *sh, int kind, uint64_t id, struct ckpt_shobj **out)
{
	struct ckpt_shobj *o = (struct ckpt_shobj *)ckpt_files_shared(sh, kind, id);
	if (!o) {
		if (ckpt_files_grow(&sh->v, sh->n, sizeof(*sh->v)))
			return -ENOMEM;
		o = &sh->v[sh->n++];
		memset(o, 0, sizeof(*o));
		o->kind = kind;
		o->id = id;
		o->fd[0] = o->fd[1] = -1;
	}
	*out = o;
	return 0;
}

int ckpt_files_share_plan(Storm__Ckpt__FileTable *const *fts, Storm__Ckpt__VmaTable *const *vts,
			  size_t n, struct ckpt_shared *sh)
{
	struct ckpt_shobj *o;
	for (size_t p = 0; p < n; p++) {
		const Storm__Ckpt__FileTable *ft = fts[p];
		for (size_t i = 0; i < ft->n_pipes; i++) {
			const Storm__Ckpt__Pipe *pp = ft->pipes[i];
			bool other = false; /* another process holds it too */
			for (size_t q = 0; q < n && !other; q++)
				for (size_t j = 0; q != p && j < fts[q]->n_pipes && !other; j++)
					other = fts[q]->pipes[j]->id == pp->id;
			const Storm__Ckpt__File *fifo = NULL;
			for (size_t j = 0; j < ft->n_files && !fifo; j++)
				if (ft->files[j]->kind == CKPT_FILE_FIFO && ft->files[j]->object == pp->id)
					fifo = ft->files[j];
			if (!other || ckpt_files_shared(sh, fifo ? CKPT_SH_FIFO : CKPT_SH_PIPE, pp->id))
				continue;
			if (share_add(sh, fifo ? CKPT_SH_FIFO : CKPT_SH_PIPE, pp->id, &o))
				return -ENOMEM;
			o->pipe = pp;
			o->path = fifo ? fifo->path : NULL;
		}
		for (size_t i = 0; i < ft->n_memfds; i++) {
			bool other = false;
			for (size_t q = 0; q < n && !other; q++)
				for (size_t j = 0; q != p && j < fts[q]->n_memfds && !other; j++)
					other = fts[q]->memfds[j]->id == ft->memfds[i]->id;
			if (!other || ckpt_files_shared(sh, CKPT_SH_MEMFD, ft->memfds[i]->id))
				continue;
			if (share_add(sh, CKPT_SH_MEMFD, ft->memfds[i]->id, &o))
				return -ENOMEM;
			o->memfd = ft->memfds[i];
		}
		for (size_t i = 0; i < vts[p]->n_vmas; i++) {
			const Storm__Ckpt__Vma *v = vts[p]->vmas[i];
			if (v->kind != CKPT_VMA_ANON || !v->shared || !v->shm_id)
				continue;
			bool other = false;
			for (size_t q = 0; q < n && !other; q++)
				for (size_t j = 0; q != p && j < vts[q]->n_vmas && !other; j++)
					other = vts[q]->vmas[j]->shm_id == v->shm_id &&
						vts[q]->vmas[j]->kind == CKPT_VMA_ANON && vts[q]->vmas[j]->shared;
			if (!other)
				continue;
			if (share_add(sh, CKPT_SH_ANON, v->shm_id, &o))
				return -ENOMEM;
			/* the object is as big as the furthest any process maps of it */
			if (v->offset + (v->end - v->start) > o->size)
				o->size = v->offset + (v->end - v->start);
		}
	}
	return 0;
}

int ckpt_files_share_make(struct ckpt_shared *sh, const struct ckpt_restore_opts *o, int base,
			  char *why, size_t wl)
{
	for (size_t i = 0; i < sh->n; i++) {
		struct ckpt_shobj *so = &sh->v[i];
		int fds[2] = { -1, -1 };
		const char *what = "";
		switch (so->kind) {
		case CKPT_SH_PIPE:
			what = "pipe";
			if (pipe2(fds, O_CLOEXEC | (so->pipe->n_packets ? O_DIRECT : 0)) < 0 ||
			    ckpt_files_pipe_fill(fds[1], so->pipe) < 0)
				goto fail;
			break;
		case CKPT_SH_FIFO: {
			/* held open read-write, so its bytes stay while the
			 * processes open it by path */
			what = so->path;
			char *path = ckpt_remap_path(o, so->path);
			fds[0] = open(path ? path : so->path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
			free(path);
			if (fds[0] < 0 || ckpt_files_pipe_fill(fds[0], so->pipe) < 0)
				goto fail;
			break;
		}
		case CKPT_SH_MEMFD:
			what = so->memfd->name;
			fds[0] = memfd_create(so->memfd->name, MFD_ALLOW_SEALING | MFD_CLOEXEC);
			if (fds[0] < 0 || ftruncate(fds[0], (off_t)so->memfd->size) < 0)
				goto fail;
			break;
		case CKPT_SH_ANON:
			what = "shared memory";
			if (mmap((void *)(uintptr_t)so->addr, so->size, PROT_READ | PROT_WRITE,
				 MAP_SHARED | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1,
				 0) != (void *)(uintptr_t)so->addr)
				goto fail;
			continue;
		}
		for (int e = 0; e < 2; e++) {
			if (fds[e] < 0)
				continue;
			so->fd[e] = fcntl(fds[e], F_DUPFD_CLOEXEC, base);
			close(fds[e]);
			if (so->fd[e] < 0)
				goto fail;
		}
		continue;
fail:
		snprintf(why, wl, "section files: making the %s the processes share: %s", what,
			 strerror(errno));
		return -1;
	}
	return 0;
}

void ckpt_files_share_free(struct ckpt_shared *sh)
{
	free(sh->v);
	free(sh->filled);
	memset(sh, 0, sizeof(*sh));
}
