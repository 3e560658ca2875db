/* Restore, in the restorer driving the new process: it fills the memfds
 * through /proc/PID/fd, maps memfd and shared anonymous areas with
 * injected calls (ckpt_files_map_area) and seals the memfds. */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <xxhash.h>

#include "fdinfo.h"
#include "internal.h"
#include "files.h"

#ifndef F_SEAL_FUTURE_WRITE
#define F_SEAL_FUTURE_WRITE 0x0010
#endif

bool ckpt_files_maps_area(const Storm__Ckpt__Vma *v)
{
	return v->kind == CKPT_VMA_MEMFD || (v->kind == CKPT_VMA_ANON && v->shared);
}

static int inj(struct ckpt_frestore *r, const char *what, long *ret, long nr, int nargs, long a0,
	       long a1, long a2, long a3, long a4, long a5)
{
	long x;
	int rc = ckpt_inject(r->t, r->base, nr, &x, 0, nargs, a0, a1, a2, a3, a4, a5);
	if (!rc && (unsigned long)x > -4096ul)
		rc = (int)x;
	if (rc)
		return ckpt_fail(r->err, r->errlen, rc, "%s: restoring: %s: %s", r->image, what,
				 strerror(-rc));
	if (ret)
		*ret = x;
	return 0;
}

static size_t memfd_index(const Storm__Ckpt__FileTable *ft, uint64_t id)
{
	size_t k = 0;
	while (k < ft->n_memfds && ft->memfds[k]->id != id)
		k++;
	return k;
}

int ckpt_files_restore_start(struct ckpt_frestore *r)
{
	const Storm__Ckpt__FileTable *ft = r->ft;
	r->memfd = calloc(ft->n_memfds + 1, sizeof(*r->memfd));
	if (!r->memfd)
		return -ENOMEM;
	for (size_t k = 0; k < ft->n_memfds; k++)
		r->memfd[k] = -1;
	const size_t BUF = 1 << 20;
	char *buf = NULL, name[32];
	XXH3_state_t *xs = XXH3_createState();
	int rc = xs ? 0 : -ENOMEM;
	for (size_t k = 0; !rc && k < ft->n_memfds; k++) {
		const Storm__Ckpt__Memfd *m = ft->memfds[k];
		char p[64];
		snprintf(p, sizeof(p), "/proc/%d/fd/%d", r->t->pid, r->maxfd + 3 + (int)k);
		r->memfd[k] = open(p, O_RDWR | O_CLOEXEC);
		if (r->memfd[k] < 0) {
			rc = ckpt_fail(r->err, r->errlen, -errno, "%s: restoring memfd %s: %s", r->image,
				       m->name, strerror(errno));
			break;
		}
		/* a memfd of the tree that another process's restore filled */
		bool done = false;
		for (size_t i = 0; r->sh && i < r->sh->nfilled; i++)
			done |= r->sh->filled[i] == m->id;
		if (done)
			continue;
		if (r->sh && ckpt_files_shared(r->sh, CKPT_SH_MEMFD, m->id)) {
			uint64_t *nf = realloc(r->sh->filled, (r->sh->nfilled + 1) * sizeof(*nf));
			if (!nf) {
				rc = -ENOMEM;
				break;
			}
			r->sh->filled = nf;
			nf[r->sh->nfilled++] = m->id;
		}
		const struct ckpt_sec *s = NULL;
		for (uint32_t i = 0; m->pages_section >= 0 && i < r->h->nsec; i++)
			if (r->h->secs[i].type == CKPT_SEC_PAGES &&
			    ckpt_sec_local(r->h, &r->h->secs[i]) == (uint32_t)m->pages_section)
				s = &r->h->secs[i];
		if (s && !buf && !(buf = malloc(BUF)))
			rc = -ENOMEM;
		XXH3_64bits_reset(xs);
		uint64_t off = s ? s->offset : 0;
		for (size_t i = 0; s && !rc && i < m->n_runs; i++) {
			uint64_t at = m->runs[i]->page * CKPT_PAGE;
			for (uint64_t left = m->runs[i]->count * CKPT_PAGE; left && !rc;) {
				size_t n = left < BUF ? left : BUF;
				ssize_t got = pread(r->imgfd, buf, n, (off_t)off);
				if (got != (ssize_t)n) {
					rc = ckpt_fail(r->err, r->errlen, -EIO, "%s: section %s: %s",
						       r->image, ckpt_sec_name(s, name, sizeof(name)),
						       got < 0 ? strerror(errno) : "short read");
					break;
				}
				XXH3_64bits_update(xs, buf, n);
				/* not past its size: the last page is only partly the memfd's */
				size_t w = at >= m->size ? 0 : m->size - at < n ? m->size - at : n;
				if (w && pwrite(r->memfd[k], buf, w, (off_t)at) != (ssize_t)w)
					rc = ckpt_fail(r->err, r->errlen, -errno,
						       "%s: restoring memfd %s: %s", r->image, m->name,
						       strerror(errno));
				off += n;
				at += n;
				left -= n;
			}
		}
		if (!rc && s && XXH3_64bits_digest(xs) != s->hash)
			rc = ckpt_fail(r->err, r->errlen, -EINVAL,
				       "%s: section %s: checksum mismatch (corrupted)", r->image,
				       ckpt_sec_name(s, name, sizeof(name)));
		/* before its areas are mapped (a write seal makes a read-only
		 * shared mapping of it one that may never write, as it was);
		 * a future-write seal after them, which would refuse a writable
		 * one made before it */
		unsigned late = m->seals & F_SEAL_FUTURE_WRITE ? F_SEAL_FUTURE_WRITE | F_SEAL_SEAL : 0;
		unsigned early = m->seals & ~late;
		if (!rc && early && fcntl(r->memfd[k], F_ADD_SEALS, early) < 0)
			rc = ckpt_fail(r->err, r->errlen, -errno, "%s: sealing memfd %s: %s", r->image,
				       m->name, strerror(errno));
	}
	XXH3_freeState(xs);
	free(buf);
	return rc;
}

/* A range of len bytes free in the image and in the new process now. */
static uint64_t free_range(struct ckpt_frestore *r, uint64_t len)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", r->t->pid);
	char *maps = ckpt_read_all(path, NULL);
	if (!maps)
		return 0;
	uint64_t found = 0;
	for (uint64_t a = 0x10000000ull; !found && a + len < 0x7f0000000000ull; a += 0x1000000ull) {
		bool ok = true;
		for (size_t i = 0; ok && i < r->vt->n_vmas; i++)
			ok = !(a < r->vt->vmas[i]->end && r->vt->vmas[i]->start < a + len);
		for (char *l = maps; ok && *l;) {
			unsigned long long s, e;
			if (sscanf(l, "%llx-%llx", &s, &e) == 2)
				ok = !(a < e && s < a + len);
			char *nl = strchr(l, '\n');
			l = nl ? nl + 1 : l + strlen(l);
		}
		if (ok)
			found = a;
	}
	free(maps);
	return found;
}

int ckpt_files_map_area(struct ckpt_frestore *r, size_t vi)
{
	const Storm__Ckpt__VmaTable *vt = r->vt;
	const Storm__Ckpt__Vma *v = vt->vmas[vi];
	long got;
	if (v->kind == CKPT_VMA_MEMFD) {
		size_t k = memfd_index(r->ft, v->shm_id);
		int rc = inj(r, "mmap of a memfd", &got, SYS_mmap, 6, (long)v->start,
			     (long)(v->end - v->start), (long)v->prot,
			     MAP_FIXED | (v->shared ? MAP_SHARED : MAP_PRIVATE),
			     r->maxfd + 3 + (long)k, (long)v->offset);
		return rc;
	}
	/* shared anonymous: one object for the areas of one id, each area at its
	 * place in it (mremap of size 0 maps the same pages again); writable
	 * until its pages are written, ckpt_files_areas_done sets the rest */
	for (size_t j = 0; v->shm_id && j < vi; j++)
		if (vt->vmas[j]->shm_id == v->shm_id && ckpt_files_maps_area(vt->vmas[j]))
			return 0; /* mapped with the first */
	/* the tree's: the first process mapped it before the fork, and every
	 * one has it at so->addr (unmapped by the caller once all is placed) */
	const struct ckpt_shobj *so = v->shm_id ? ckpt_files_shared(r->sh, CKPT_SH_ANON, v->shm_id)
					      : NULL;
	uint64_t size = 0;
	for (size_t j = vi; j < vt->n_vmas; j++) {
		const Storm__Ckpt__Vma *w = vt->vmas[j];
		if (j == vi || (v->shm_id && w->shm_id == v->shm_id && w->kind == v->kind && w->shared))
			if (w->offset + (w->end - w->start) > size)
				size = w->offset + (w->end - w->start);
	}
	uint64_t tmp = so ? so->addr : free_range(r, size);
	if (!tmp)
		return ckpt_fail(r->err, r->errlen, -ENOMEM, "%s: restoring: no free range of %llu bytes",
				 r->image, (unsigned long long)size);
	int rc = so ? 0 : inj(r, "mmap of shared memory", &got, SYS_mmap, 6, (long)tmp, (long)size,
			      PROT_READ | PROT_WRITE, MAP_FIXED | MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	for (size_t j = vi; !rc && j < vt->n_vmas; j++) {
		const Storm__Ckpt__Vma *w = vt->vmas[j];
		if (j != vi && !(v->shm_id && w->shm_id == v->shm_id && w->kind == v->kind && w->shared))
			continue;
		rc = inj(r, "mremap of shared memory", &got, SYS_mremap, 5, (long)(tmp + w->offset), 0,
			 (long)(w->end - w->start), MREMAP_MAYMOVE | MREMAP_FIXED, (long)w->start, 0);
	}
	if (!rc && !so)
		rc = inj(r, "munmap", NULL, SYS_munmap, 2, (long)tmp, (long)size, 0, 0, 0, 0);
	return rc;
}

int ckpt_files_areas_done(struct ckpt_frestore *r)
{
	int rc = 0;
	for (size_t i = 0; !rc && i < r->vt->n_vmas; i++) {
		const Storm__Ckpt__Vma *v = r->vt->vmas[i];
		if (v->kind == CKPT_VMA_ANON && v->shared && v->prot != (PROT_READ | PROT_WRITE))
			rc = inj(r, "mprotect", NULL, SYS_mprotect, 3, (long)v->start,
				 (long)(v->end - v->start), (long)v->prot, 0, 0, 0);
	}
	for (size_t k = 0; !rc && k < r->ft->n_memfds; k++)
		rc = inj(r, "close", NULL, SYS_close, 1, r->maxfd + 3 + (long)k, 0, 0, 0, 0, 0);
	return rc;
}

int ckpt_files_restore_finish(struct ckpt_frestore *r)
{
	for (size_t k = 0; k < r->ft->n_memfds; k++) {
		unsigned seals = r->ft->memfds[k]->seals;
		int have = fcntl(r->memfd[k], F_GET_SEALS);
		if ((seals & F_SEAL_FUTURE_WRITE) && !(have > 0 && (have & F_SEAL_FUTURE_WRITE)) &&
		    fcntl(r->memfd[k], F_ADD_SEALS, seals & (F_SEAL_FUTURE_WRITE | F_SEAL_SEAL)) < 0)
			return ckpt_fail(r->err, r->errlen, -errno, "%s: sealing memfd %s: %s", r->image,
					 r->ft->memfds[k]->name, strerror(errno));
	}
	return 0;
}

void ckpt_files_restore_end(struct ckpt_frestore *r)
{
	for (size_t k = 0; r->memfd && k < r->ft->n_memfds; k++)
		if (r->memfd[k] >= 0)
			close(r->memfd[k]);
	free(r->memfd);
	r->memfd = NULL;
}
