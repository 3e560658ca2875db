/* ckpt_restore: rebuild a process from an image, as a child of the caller.
 *
 * The child is a fork of the caller that prepares what it can do itself
 * (credentials, files, cwd, umask, signal handlers, a "syscall; int3" gadget
 * page at an address free in the image) and stops under ptrace. The parent
 * then drives it with injected system calls: munmap of everything but the
 * vDSO/vvar and the gadget, mremap of the vDSO/vvar to the image's addresses
 * (the vDSO of the same kernel is identical: checked byte for byte), mmap of
 * every area at its address, the saved pages written through /proc/PID/mem,
 * prctl(PR_SET_MM_MAP) for brk and friends, interval timers, then each
 * thread's own state and the other threads made again (threads.c); finally
 * the gadget goes, the registers and signal mask are set and it is let go. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/prctl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/rseq.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <grp.h>
#include <xxhash.h>

#include "ckpt.pb-c.h"
#include "fdinfo.h"
#include "image.h"
#include "internal.h"
#include "threads.h"
#include "proctree.h"

#define USER_TOP 0x800000000000ull

struct image {
	const char *path;
	int fd;
	uint64_t size;
	struct ckpt_header h;
	Storm__Ckpt__Meta *meta;
	Storm__Ckpt__VmaTable *vt;
	Storm__Ckpt__FileTable *ft;
	const struct ckpt_sec **psec; /* page section of each area index */
	Storm__Ckpt__Tree *tree;      /* an image of a tree (NULL: of one process) */
	uint32_t nprocs, proc;        /* its processes; which one this is */
	struct ckpt_sec *all;         /* the whole table (h: this process's sections) */
	uint32_t nall;
};

struct kernel_sigaction {
	uint64_t handler, flags, restorer, mask;
};

static void image_close(struct image *im)
{
	if (im->meta)
		storm__ckpt__meta__free_unpacked(im->meta, NULL);
	if (im->vt)
		storm__ckpt__vma_table__free_unpacked(im->vt, NULL);
	if (im->ft)
		storm__ckpt__file_table__free_unpacked(im->ft, NULL);
	if (im->tree)
		storm__ckpt__tree__free_unpacked(im->tree, NULL);
	free(im->psec);
	free(im->all);
	im->all = NULL;
	ckpt_header_free(&im->h);
	if (im->fd >= 0)
		close(im->fd);
	im->fd = -1;
}

static int pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;
	while (done < len) {
		ssize_t r = pread(fd, (char *)buf + done, len - done, off + done);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ENODATA;
		done += r;
	}
	return 0;
}

/* The areas must be page-aligned, ordered, apart, below the user limit; their
 * runs inside them and their page sections the right length. */
static int check_tables(struct image *im, char *err, size_t errlen)
{
	Storm__Ckpt__Meta *m = im->meta;
	int rc = ckpt_threads_check(m, im->path, err, errlen);
	if (rc)
		return rc;
	if (!m->mm)
		return ckpt_fail(err, errlen, -EINVAL, "%s: section meta: no mm fields", im->path);
	uint32_t npsec = 0;
	for (uint32_t i = 0; i < im->h.nsec; i++)
		if (im->h.secs[i].type == CKPT_SEC_PAGES)
			npsec++;
	im->psec = calloc(im->vt->n_vmas + 1, sizeof(*im->psec));
	uint64_t prev = 0;
	for (size_t i = 0; i < im->vt->n_vmas; i++) {
		Storm__Ckpt__Vma *v = im->vt->vmas[i];
		if (v->start < prev || v->end <= v->start || (v->start | v->end) & (CKPT_PAGE - 1) ||
		    (v->end > USER_TOP && v->kind != CKPT_VMA_VSYSCALL) ||
		    v->kind > CKPT_VMA_MEMFD || (v->kind == CKPT_VMA_EXTERNAL && v->n_runs))
			return ckpt_fail(err, errlen, -EINVAL,
					 "%s: section vmas: area %zu (%#llx-%#llx) is malformed",
					 im->path, i, (unsigned long long)v->start,
					 (unsigned long long)v->end);
		prev = v->end;
		if (v->pages_section < 0) {
			if (v->n_runs)
				goto bad_runs;
			continue;
		}
		uint64_t npages = (v->end - v->start) / CKPT_PAGE, next = 0, total = 0;
		for (size_t r = 0; r < v->n_runs; r++) {
			Storm__Ckpt__Run *run = v->runs[r];
			if (run->page < next || run->count == 0 || run->count > npages ||
			    run->page > npages - run->count)
				goto bad_runs;
			next = run->page + run->count;
			total += run->count;
		}
		for (uint32_t s = 0; s < im->h.nsec; s++)
			if (im->h.secs[s].type == CKPT_SEC_PAGES &&
			    ckpt_sec_local(&im->h, &im->h.secs[s]) == (uint32_t)v->pages_section)
				im->psec[i] = &im->h.secs[s];
		if (!im->psec[i] || im->psec[i]->length != total * CKPT_PAGE)
			goto bad_runs;
		continue;
bad_runs:
		return ckpt_fail(err, errlen, -EINVAL,
				 "%s: section vmas: saved pages of area %zu do not match section "
				 "pages[%d]",
				 im->path, i, v->pages_section);
	}
	char why[256];
	if (ckpt_files_check(im->ft, im->vt, &im->h, why, sizeof(why)))
		return ckpt_fail(err, errlen, -EINVAL, "%s: %s", im->path, why);
	return 0;
}

/* Reads and checks a metadata section of the image (b: malloc'd, its bytes). */
static int read_section(struct image *im, const struct ckpt_sec *s, uint8_t **b, char *err,
			size_t errlen)
{
	char why[256], name[48];
	int rc;
	if (s->length > (64u << 20))
		return ckpt_fail(err, errlen, -EINVAL, "%s: section %s: %llu bytes is too big",
				 im->path, ckpt_sec_name(s, name, sizeof(name)),
				 (unsigned long long)s->length);
	*b = malloc(s->length ? s->length : 1);
	if (!*b)
		return -ENOMEM;
	if ((rc = pread_all(im->fd, *b, s->length, s->offset)) ||
	    (rc = ckpt_sec_check(s, *b, why, sizeof(why)))) {
		free(*b);
		*b = NULL;
		return ckpt_fail(err, errlen, rc, "%s: %s", im->path, why);
	}
	return 0;
}

/* An image of several processes: its tree, and the table cut down to the
 * sections of process proc (page sections then numbered by ckpt_sec_local). */
static int tree_view(struct image *im, uint32_t proc, char *err, size_t errlen)
{
	char why[256];
	uint8_t *b = NULL;
	int rc = 0;
	for (uint32_t i = 0; !rc && i < im->h.nsec; i++)
		if (im->h.secs[i].type == CKPT_SEC_TREE &&
		    !(rc = read_section(im, &im->h.secs[i], &b, err, errlen))) {
			im->tree = storm__ckpt__tree__unpack(NULL, im->h.secs[i].length, b);
			free(b);
			if (!im->tree)
				return ckpt_fail(err, errlen, -EINVAL, "%s: section tree: malformed",
						 im->path);
			if ((rc = ckpt_tree_check(im->tree, why, sizeof(why))))
				return ckpt_fail(err, errlen, rc, "%s: %s", im->path, why);
		}
	if (rc)
		return rc;
	im->nprocs = im->tree ? (uint32_t)im->tree->n_procs : 1;
	if ((rc = ckpt_image_procs_check(&im->h, im->nprocs, why, sizeof(why))))
		return ckpt_fail(err, errlen, rc, "%s: %s", im->path, why);
	if (proc >= im->nprocs)
		return ckpt_fail(err, errlen, -EINVAL, "%s: no process %u", im->path, proc);
	im->proc = proc;
	im->all = malloc(im->h.nsec * sizeof(*im->all));
	if (!im->all)
		return -ENOMEM;
	memcpy(im->all, im->h.secs, im->h.nsec * sizeof(*im->all));
	im->nall = im->h.nsec;
	uint32_t k = 0;
	for (uint32_t i = 0; i < im->h.nsec; i++) {
		const struct ckpt_sec *s = &im->h.secs[i];
		if (s->type == CKPT_SEC_TREE || (im->tree && ckpt_sec_proc(s->index) != proc))
			continue;
		im->h.secs[k++] = *s;
	}
	im->h.nsec = k;
	im->h.tree = im->tree != NULL;
	return 0;
}

static int image_open(const char *path, uint32_t proc, struct image *im, char *err, size_t errlen)
{
	char why[256], name[32];
	int rc;

	memset(im, 0, sizeof(*im));
	im->path = path;
	im->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (im->fd < 0)
		return ckpt_fail(err, errlen, -errno, "%s: %s", path, strerror(errno));
	struct stat sb;
	fstat(im->fd, &sb);
	im->size = sb.st_size;
	unsigned char fixed[CKPT_HDR_FIXED];
	size_t got = im->size < CKPT_HDR_FIXED ? im->size : CKPT_HDR_FIXED;
	if ((rc = pread_all(im->fd, fixed, got, 0)))
		return ckpt_fail(err, errlen, rc, "%s: header: %s", path, strerror(-rc));
	uint32_t nsec = 0;
	if (got == CKPT_HDR_FIXED)
		memcpy(&nsec, fixed + 12, 4);
	size_t hsize = ckpt_header_size(nsec > CKPT_MAX_SECTIONS ? 0 : nsec);
	if (hsize > im->size)
		hsize = im->size;
	unsigned char *hb = malloc(hsize > got ? hsize : got);
	memcpy(hb, fixed, got);
	if (hsize > got && (rc = pread_all(im->fd, hb + got, hsize - got, got))) {
		free(hb);
		return ckpt_fail(err, errlen, rc, "%s: section table: %s", path, strerror(-rc));
	}
	rc = ckpt_image_read_header(hb, hsize > got ? hsize : got, &im->h, why, sizeof(why));
	free(hb);
	if (rc)
		return ckpt_fail(err, errlen, rc, "%s: %s", path, why);
	if (im->size < im->h.file_size)
		return ckpt_fail(err, errlen, -ENODATA,
				 "%s: truncated in section %s (image is %llu bytes, header says %llu)",
				 path, ckpt_section_at(&im->h, im->size, name, sizeof(name)),
				 (unsigned long long)im->size, (unsigned long long)im->h.file_size);
	if (im->size > im->h.file_size)
		return ckpt_fail(err, errlen, -EINVAL,
				 "%s: image is %llu bytes, header says %llu (trailing data)", path,
				 (unsigned long long)im->size, (unsigned long long)im->h.file_size);
	if ((rc = tree_view(im, proc, err, errlen)))
		return rc;
	for (uint32_t i = 0; i < im->h.nsec; i++) {
		const struct ckpt_sec *s = &im->h.secs[i];
		if (s->type == CKPT_SEC_PAGES)
			continue;
		uint8_t *b = NULL;
		if ((rc = read_section(im, s, &b, err, errlen)))
			return rc;
		ProtobufCMessage *msg = NULL;
		if (s->type == CKPT_SEC_META)
			msg = &(im->meta = storm__ckpt__meta__unpack(NULL, s->length, b))->base;
		else if (s->type == CKPT_SEC_VMAS)
			msg = &(im->vt = storm__ckpt__vma_table__unpack(NULL, s->length, b))->base;
		else
			msg = &(im->ft = storm__ckpt__file_table__unpack(NULL, s->length, b))->base;
		free(b);
		if (!msg)
			return ckpt_fail(err, errlen, -EINVAL, "%s: section %s: malformed", path,
					 ckpt_sec_name(s, name, sizeof(name)));
	}
	if ((rc = check_tables(im, why, sizeof(why))))
		return ckpt_fail(err, errlen, rc, "%s", why);
	return 0;
}

int ckpt_verify_file(const char *path, uint64_t *size, char *err, size_t errlen)
{
	struct image im;
	int rc = image_open(path, 0, &im, err, errlen);
	for (uint32_t p = 1; !rc && p < im.nprocs; p++) {
		struct image other;
		rc = image_open(path, p, &other, err, errlen);
		image_close(&other);
	}

	const size_t BUF = 8 << 20;
	char *buf = malloc(BUF), name[32];
	XXH3_state_t *xs = XXH3_createState();
	for (uint32_t i = 0; !rc && i < im.nall; i++) {
		const struct ckpt_sec *s = &im.all[i];
		if (s->type != CKPT_SEC_PAGES)
			continue;
		XXH3_64bits_reset(xs);
		for (uint64_t o = 0; o < s->length && !rc;) {
			size_t n = s->length - o < BUF ? s->length - o : BUF;
			rc = pread_all(im.fd, buf, n, s->offset + o);
			XXH3_64bits_update(xs, buf, n);
			o += n;
		}
		if (!rc && XXH3_64bits_digest(xs) != s->hash)
			rc = ckpt_fail(err, errlen, -EINVAL,
				       "%s: section %s: checksum mismatch (corrupted)", path,
				       ckpt_sec_name(s, name, sizeof(name)));
		else if (rc)
			rc = ckpt_fail(err, errlen, rc, "%s: section %s: %s", path,
				       ckpt_sec_name(s, name, sizeof(name)), strerror(-rc));
	}
	if (!rc && size)
		*size = im.size;
	XXH3_freeState(xs);
	free(buf);
	image_close(&im);
	return rc;
}

/* ---- the special mappings (vvar, vvar_vclock, vdso) */

struct special {
	uint64_t start[3], len[3]; /* by kind - CKPT_VMA_VDSO */
	uint64_t lo, hi;
	int have;
};

static void special_add(struct special *s, unsigned kind, uint64_t start, uint64_t end)
{
	int k = kind - CKPT_VMA_VDSO;
	s->start[k] = start;
	s->len[k] = end - start;
	if (!s->have || start < s->lo)
		s->lo = start;
	if (!s->have || end > s->hi)
		s->hi = end;
	s->have |= 1 << k;
}

static int own_maps(struct ckpt_map **out, size_t *n, pid_t pid)
{
	char path[64];
	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	char *maps = ckpt_read_all(path, NULL);
	if (!maps)
		return -errno;
	size_t cap = 64;
	*out = malloc(cap * sizeof(**out));
	*n = 0;
	for (char *line = strtok(maps, "\n"); line && *out; line = strtok(NULL, "\n")) {
		if (*n == cap) {
			void *more = realloc(*out, (cap *= 2) * sizeof(**out));
			if (!more) {
				free(*out);
				*out = NULL;
				break;
			}
			*out = more;
		}
		if (ckpt_parse_maps_line(line, &(*out)[*n]) == 0)
			(*n)++;
	}
	free(maps);
	if (!*out) {
		errno = ENOMEM;
		return -ENOMEM;
	}
	return 0;
}

static int range_free(uint64_t a, uint64_t len, const struct image *ims, size_t nim,
		      const struct ckpt_map *m, size_t nm)
{
	for (size_t k = 0; k < nim; k++)
		for (size_t i = 0; i < ims[k].vt->n_vmas; i++)
			if (a < ims[k].vt->vmas[i]->end && ims[k].vt->vmas[i]->start < a + len)
				return 0;
	for (size_t i = 0; i < nm; i++)
		if (a < m[i].end && m[i].start < a + len)
			return 0;
	return 1;
}

/* An address range of len bytes free in every process of the image and in
 * our own layout, apart from the navoid ranges (start, length pairs). */
static uint64_t find_free(uint64_t len, const struct image *ims, size_t nim,
			  const struct ckpt_map *m, size_t nm, const uint64_t *avoid, size_t navoid)
{
	for (uint64_t a = 0x10000000ull; a + len < USER_TOP; a += 0x1000000ull) {
		bool clash = false;
		for (size_t k = 0; k < navoid; k++)
			clash |= a < avoid[2 * k] + avoid[2 * k + 1] && avoid[2 * k] < a + len;
		if (!clash && range_free(a, len, ims, nim, m, nm))
			return a;
	}
	return 0;
}

/* ---- the child */

/* The highest descriptor the image has (at least 2); the external fd goes
 * right above it in the new process. */
static int image_maxfd(const struct image *im)
{
	return ckpt_files_maxfd(im->ft);
}

struct child_ctx {
	const struct image *ims;      /* every process of the image */
	size_t n;
	const struct ckpt_restore_opts *o;
	uint64_t gadget;
	int errw;                     /* reports: struct report records */
	const struct ckpt_shared *sh; /* a tree's shared objects */
	int logfd;                    /* lines for o->log, read once it is over */
	const char *tag;              /* the checkpoint's time: FILE.storm-cut-TAG */
};

/* What a new process tells the restorer: that it waits to be driven (its
 * pid), or why it failed. One write each (atomic: under PIPE_BUF). */
struct report {
	int32_t proc;
	int32_t pid;                  /* 0: failed, why says why */
	char why[504];
};

__attribute__((noreturn)) static void child_fail(int errw, const char *fmt, ...)
{
	struct report r = { 0 };
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(r.why, sizeof(r.why), fmt, ap);
	va_end(ap);
	if (write(errw, &r, sizeof(r)) < 0)
		_exit(126);
	_exit(126);
}

/* The highest descriptor open here. */
static int highest_fd(void)
{
	int top = 2;
	DIR *dp = opendir("/proc/self/fd");
	struct dirent *de;
	while (dp && (de = readdir(dp)))
		if (atoi(de->d_name) > top)
			top = atoi(de->d_name);
	if (dp)
		closedir(dp);
	return top;
}

/* Process self of the image, from here on: its children forked first (with
 * their old pids where free; they inherit the tree's shared objects and
 * what child_setup made), then its own state, then it waits for the
 * restorer: process 0 stopped under PTRACE_TRACEME (the restorer is its
 * parent), the others paused until the restorer seizes them. */
__attribute__((noreturn)) static void become(struct child_ctx *c, size_t self)
{
	const struct image *im = &c->ims[self];
	const struct ckpt_restore_opts *o = c->o;
	Storm__Ckpt__FileTable *ft = im->ft;
	const Storm__Ckpt__Tree *tree = c->ims[0].tree;
	for (size_t q = self + 1; tree && q < c->n; q++) {
		if ((size_t)tree->procs[q]->parent != self)
			continue;
		pid_t pid = ckpt_fork_pid(tree->procs[q]->pid);
		if (pid < 0)
			child_fail(c->errw, "%s: process %zu: fork: %s", im->path, q, strerror(errno));
		if (pid == 0) {
			/* not left waiting if the restore fails (cleared once driven) */
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			become(c, q);
		}
	}
	if (self && tree->procs[self]->pgid == tree->procs[self]->pid && setpgid(0, 0) < 0)
		child_fail(c->errw, "%s: process %zu: setpgid: %s", im->path, self, strerror(errno));
	if (o->drop_creds) {
		if (setgroups(1, &o->gid) < 0 || setresgid(o->gid, o->gid, o->gid) < 0 ||
		    setresuid(o->uid, o->uid, o->uid) < 0)
			child_fail(c->errw, "cannot become uid %u gid %u: %s", o->uid, o->gid,
				   strerror(errno));
		prctl(PR_SET_DUMPABLE, 1);
	}
	/* descriptors: the image's at their numbers (files_child.c) */
	int errw = c->errw, logfd = c->logfd;
	char why[400];
	if (ckpt_files_child(ft, o, c->n > 1 ? c->sh : NULL, &errw, &logfd, c->tag, why,
			     sizeof(why)))
		child_fail(errw, "%s: %s", im->path, why);
	if (logfd >= 0)
		close(logfd);
	if (chdir(im->meta->cwd) < 0)
		child_fail(errw, "%s: cwd %s: %s", im->path, im->meta->cwd, strerror(errno));
	umask(im->meta->umask);
	/* glibc registered rseq for this thread at our TLS: forget it */
	if (__rseq_size) {
		void *area = (char *)__builtin_thread_pointer() + __rseq_offset;
		if (syscall(SYS_rseq, area, 32, RSEQ_FLAG_UNREGISTER, RSEQ_SIG) < 0)
			syscall(SYS_rseq, area, __rseq_size, RSEQ_FLAG_UNREGISTER, RSEQ_SIG);
	}
	void *g = mmap((void *)c->gadget, 2 * CKPT_PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	if (g != (void *)c->gadget)
		child_fail(errw, "gadget page at %#llx: %s", (unsigned long long)c->gadget,
			   strerror(errno));
	memcpy(g, "\x0f\x05\xcc\xcc", 4);
	mprotect(g, CKPT_PAGE, PROT_READ | PROT_EXEC);
	for (size_t i = 0; i < im->meta->n_sigactions; i++) {
		Storm__Ckpt__SigAction *s = im->meta->sigactions[i];
		struct kernel_sigaction ka = { s->handler, s->flags, s->restorer, s->mask };
		if (s->sig >= 1 && s->sig <= 64 && s->sig != SIGKILL && s->sig != SIGSTOP &&
		    syscall(SYS_rt_sigaction, s->sig, &ka, NULL, 8) < 0)
			child_fail(errw, "%s: section meta: rt_sigaction(%u): %s", im->path, s->sig,
				   strerror(errno));
	}
	if (self) {
		struct report r = { .proc = (int32_t)self, .pid = getpid() };
		if (write(errw, &r, sizeof(r)) != sizeof(r))
			_exit(125);
		close(errw);
		for (;;)
			pause(); /* every signal blocked: until the restorer interrupts it */
	}
	close(errw);
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
		_exit(125);
	kill(getpid(), SIGSTOP);
	_exit(124);
}

__attribute__((noreturn)) static void child_main(struct child_ctx *c)
{
	const struct ckpt_restore_opts *o = c->o;
	sigset_t all;

	sigfillset(&all);
	sigdelset(&all, SIGTRAP);
	sigdelset(&all, SIGSEGV);
	sigprocmask(SIG_SETMASK, &all, NULL);
	for (int sig = 1; sig <= 64; sig++) {
		struct kernel_sigaction ka = { 0 };
		if (sig != SIGKILL && sig != SIGSTOP)
			syscall(SYS_rt_sigaction, sig, &ka, NULL, 8);
	}
	if (o->child_setup && o->child_setup(o->child_arg) != 0)
		child_fail(c->errw, "setting up the new process failed");
	if (c->n > 1) {
		/* the shared objects above every descriptor any process will
		 * make or be handed, so no one's table lands on them */
		int base = highest_fd() + 1;
		for (size_t p = 0; p < c->n; p++) {
			int top = ckpt_files_maxfd(c->ims[p].ft) + 3 + (int)c->ims[p].ft->n_memfds;
			if (top > base)
				base = top;
		}
		char why[400];
		if (ckpt_files_share_make((struct ckpt_shared *)c->sh, o, base, why, sizeof(why)))
			child_fail(c->errw, "%s: %s", c->ims[0].path, why);
	}
	become(c, 0);
}

/* ---- the parent */

struct drive {
	struct ckpt_tracee t;            /* the main thread */
	struct ckpt_threads *th;         /* every thread, once made */
	struct user_regs_struct base;
	const struct image *im;
	struct ckpt_frestore *fr;  /* its descriptors' side (files_restore.c) */
	const struct ckpt_shared *sh; /* a tree's shared objects (NULL: none) */
	char *err;
	size_t errlen;
};

static int sys(struct drive *d, const char *what, long nr, long *ret, int nargs, long a0, long a1,
	       long a2, long a3, long a4, long a5)
{
	long r;
	int rc = ckpt_inject(&d->t, &d->base, nr, &r, 0, nargs, a0, a1, a2, a3, a4, a5);
	if (rc)
		return ckpt_fail(d->err, d->errlen, rc, "%s: restoring: %s: %s", d->im->path, what,
				 strerror(-rc));
	if ((unsigned long)r > -4096ul)
		return ckpt_fail(d->err, d->errlen, (int)r, "%s: restoring: %s: %s", d->im->path,
				 what, strerror((int)-r));
	if (ret)
		*ret = r;
	return 0;
}

#define SYS(d, what, nr, ret, ...) sys(d, what, nr, ret, __VA_ARGS__)

static int restore_pages(struct drive *d, size_t vi, char *buf, size_t bufsz, uint64_t *pages)
{
	const struct image *im = d->im;
	Storm__Ckpt__Vma *v = im->vt->vmas[vi];
	const struct ckpt_sec *s = im->psec[vi];
	char name[32];
	XXH3_state_t *xs = XXH3_createState();
	XXH3_64bits_reset(xs);
	uint64_t off = s->offset;
	int rc = 0;
	for (size_t r = 0; r < v->n_runs && !rc; r++) {
		uint64_t a = v->start + v->runs[r]->page * CKPT_PAGE;
		uint64_t left = v->runs[r]->count * CKPT_PAGE;
		*pages += v->runs[r]->count;
		while (left && !rc) {
			size_t n = left < bufsz ? left : bufsz;
			rc = pread_all(im->fd, buf, n, off);
			if (rc) {
				ckpt_fail(d->err, d->errlen, rc, "%s: section %s: %s", im->path,
					  ckpt_sec_name(s, name, sizeof(name)), strerror(-rc));
				break;
			}
			XXH3_64bits_update(xs, buf, n);
			rc = ckpt_mem_write(&d->t, a, buf, n);
			if (rc)
				ckpt_fail(d->err, d->errlen, rc, "%s: restoring: writing %#llx: %s",
					  im->path, (unsigned long long)a, strerror(-rc));
			off += n;
			a += n;
			left -= n;
		}
	}
	if (!rc && XXH3_64bits_digest(xs) != s->hash)
		rc = ckpt_fail(d->err, d->errlen, -EINVAL,
			       "%s: section %s: checksum mismatch (corrupted)", im->path,
			       ckpt_sec_name(s, name, sizeof(name)));
	XXH3_freeState(xs);
	return rc;
}

/* An external area: anonymous, then the caller's pieces of its fd over it. */
static int map_external(struct drive *d, const Storm__Ckpt__Vma *v,
			const struct ckpt_restore_opts *o)
{
	const struct image *im = d->im;
	struct ckpt_ext_piece p[16];
	char why[512] = "";
	int n = o->external(o->external_arg, im->meta->app.data, im->meta->app.len, v->start,
			    v->end, v->offset, p, 16, why, sizeof(why));
	if (n < 0)
		return ckpt_fail(d->err, d->errlen, n, "%s: area %#llx (%s): %s", im->path,
				 (unsigned long long)v->start, v->path, why);
	long r;
	int rc = SYS(d, "mmap", SYS_mmap, &r, 6, v->start, v->end - v->start, v->prot,
		     MAP_FIXED | MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	long fd = image_maxfd(im) + 1;
	for (int k = 0; !rc && k < n && k < 16; k++) {
		if (p[k].addr < v->start || p[k].len > v->end - p[k].addr || !p[k].len ||
		    (p[k].addr | p[k].len | p[k].off) & (CKPT_PAGE - 1))
			return ckpt_fail(d->err, d->errlen, -EINVAL,
					 "%s: area %#llx: piece %d out of the area", im->path,
					 (unsigned long long)v->start, k);
		rc = SYS(d, "mmap of an external area", SYS_mmap, &r, 6, p[k].addr, p[k].len,
			 v->prot, MAP_FIXED | MAP_SHARED, fd, p[k].off);
	}
	return rc;
}

/* Unmaps everything of the new process but the gadget, and moves its vDSO
 * and data pages to the image's addresses (through tmp, where they may
 * overlap). */
static int clear_and_move_vdso(struct drive *d, uint64_t gadget, uint64_t tmp,
			       const struct special *img_sp)
{
	struct ckpt_map *cm = NULL;
	size_t ncm = 0;
	int rc = 0;
	if (own_maps(&cm, &ncm, d->t.pid) < 0)
		return ckpt_fail(d->err, d->errlen, -errno, "restoring: cannot read the new maps");
	struct special csp = { 0 };
	for (size_t i = 0; i < ncm && !rc; i++) {
		struct ckpt_map *x = &cm[i];
		if (x->kind == CKPT_VMA_VSYSCALL || (x->start >= gadget && x->end <= gadget + 2 * CKPT_PAGE))
			continue;
		bool shared = false; /* the tree's shared memory, mapped from later */
		for (size_t k = 0; d->sh && k < d->sh->n; k++)
			shared |= d->sh->v[k].kind == CKPT_SH_ANON && x->start >= d->sh->v[k].addr &&
				  x->end <= d->sh->v[k].addr + d->sh->v[k].size;
		if (shared)
			continue;
		if (x->kind >= CKPT_VMA_VDSO && x->kind <= CKPT_VMA_VVAR_VCLOCK) {
			special_add(&csp, x->kind, x->start, x->end);
			continue;
		}
		rc = SYS(d, "munmap", SYS_munmap, NULL, 2, x->start, x->end - x->start, 0, 0, 0, 0);
	}
	free(cm);
	if (rc || !img_sp->have || csp.lo == img_sp->lo)
		return rc;
	for (int pass = 0; pass < 2; pass++)
		for (int k = 0; k < 3; k++) {
			if (!(csp.have >> k & 1))
				continue;
			uint64_t from = pass == 0 ? csp.start[k] : tmp + csp.start[k] - csp.lo;
			uint64_t to = pass == 0 ? tmp + csp.start[k] - csp.lo : img_sp->start[k];
			if ((rc = SYS(d, "mremap of the vDSO", SYS_mremap, NULL, 5, from, csp.len[k],
				      csp.len[k], MREMAP_MAYMOVE | MREMAP_FIXED, to, 0)))
				return rc;
		}
	return 0;
}

/* One area of the image, mapped where it was (its file opened through the
 * scratch page). */
static int map_area(struct drive *d, Storm__Ckpt__Vma *v, const struct ckpt_restore_opts *o,
		    uint64_t scratch)
{
	long flags = MAP_FIXED | (v->shared ? MAP_SHARED : MAP_PRIVATE), fd = -1, r;
	int rc;
	if (v->kind == CKPT_VMA_FILE) {
		char *path = ckpt_remap_path(o, v->path);
		size_t l = strlen(path) + 1;
		if (l > CKPT_PAGE)
			l = CKPT_PAGE;
		path[l - 1] = 0;
		rc = ckpt_mem_write(&d->t, scratch, path, l);
		free(path);
		int mode = v->shared && (v->prot & PROT_WRITE) ? O_RDWR : O_RDONLY;
		if (rc || (rc = SYS(d, v->path, SYS_open, &fd, 2, scratch, mode, 0, 0, 0, 0)))
			return rc;
	} else {
		flags |= MAP_ANONYMOUS;
		if (v->kind == CKPT_VMA_STACK)
			flags |= MAP_GROWSDOWN;
	}
	rc = SYS(d, "mmap", SYS_mmap, &r, 6, v->start, v->end - v->start, v->prot, flags, fd,
		 v->offset);
	if (fd >= 0)
		SYS(d, "close", SYS_close, NULL, 1, fd, 0, 0, 0, 0, 0);
	if (rc)
		return rc;
	if ((uint64_t)r != v->start)
		return ckpt_fail(d->err, d->errlen, -EFAULT,
				 "%s: restoring: area %#llx landed at %#lx", d->im->path,
				 (unsigned long long)v->start, r);
	return 0;
}

/* Every area mapped, then the saved pages written into them. */
static int restore_areas(struct drive *d, const struct ckpt_restore_opts *o, uint64_t scratch,
			 uint64_t *pages)
{
	const struct image *im = d->im;
	int rc = 0;
	for (size_t i = 0; i < im->vt->n_vmas && !rc; i++) {
		Storm__Ckpt__Vma *v = im->vt->vmas[i];
		if (v->kind == CKPT_VMA_EXTERNAL)
			rc = map_external(d, v, o);
		else if (ckpt_files_maps_area(v))
			rc = ckpt_files_map_area(d->fr, i);
		else if (v->kind < CKPT_VMA_VDSO)
			rc = map_area(d, v, o, scratch);
	}
	for (size_t k = 0; !rc && d->sh && k < d->sh->n; k++)
		if (d->sh->v[k].kind == CKPT_SH_ANON)
			rc = SYS(d, "munmap", SYS_munmap, NULL, 2, d->sh->v[k].addr, d->sh->v[k].size, 0,
				 0, 0, 0);
	if (rc)
		return rc;
	if (o->external)
		SYS(d, "close", SYS_close, NULL, 1, image_maxfd(im) + 1, 0, 0, 0, 0, 0);
	const size_t BUF = 8 << 20;
	char *buf = malloc(BUF);
	if (!buf)
		return -ENOMEM;
	for (size_t i = 0; i < im->vt->n_vmas && !rc; i++)
		if (im->psec[i])
			rc = restore_pages(d, i, buf, BUF, pages);
	free(buf);
	return rc ? rc : ckpt_files_areas_done(d->fr);
}

/* brk, argument and environment bounds, auxv and exe by PR_SET_MM_MAP. */
static int restore_mm_fields(struct drive *d, const struct ckpt_restore_opts *o, uint64_t scratch)
{
	Storm__Ckpt__Meta *m = d->im->meta;
	struct prctl_mm_map mm = {
		.start_code = m->mm->start_code, .end_code = m->mm->end_code,
		.start_data = m->mm->start_data, .end_data = m->mm->end_data,
		.start_brk = m->mm->start_brk, .brk = m->mm->brk,
		.start_stack = m->mm->start_stack, .arg_start = m->mm->arg_start,
		.arg_end = m->mm->arg_end, .env_start = m->mm->env_start, .env_end = m->mm->env_end,
		.exe_fd = (uint32_t)-1,
	};
	size_t auxlen = m->mm->auxv.len & ~7ul;
	if (auxlen > 2048)
		auxlen = 2048;
	if (auxlen) {
		mm.auxv = (__u64 *)(uintptr_t)(scratch + 1024);
		mm.auxv_size = auxlen;
		ckpt_mem_write(&d->t, scratch + 1024, m->mm->auxv.data, auxlen);
	}
	long exefd = -1, r;
	if (m->exe[0]) {
		char *path = ckpt_remap_path(o, m->exe);
		if (strlen(path) < 1000 && ckpt_mem_write(&d->t, scratch + 3072, path, strlen(path) + 1) == 0 &&
		    ckpt_inject(&d->t, &d->base, SYS_open, &exefd, 0, 2, (long)(scratch + 3072),
				(long)O_RDONLY) == 0 && exefd >= 0)
			mm.exe_fd = exefd;
		free(path);
	}
	ckpt_mem_write(&d->t, scratch, &mm, sizeof(mm));
	int rc = ckpt_inject(&d->t, &d->base, SYS_prctl, &r, 0, 4, (long)PR_SET_MM,
			     (long)PR_SET_MM_MAP, (long)scratch, (long)sizeof(mm));
	if (!rc && r < 0 && exefd >= 0) { /* not allowed to set the exe link: the rest then */
		mm.exe_fd = (uint32_t)-1;
		ckpt_mem_write(&d->t, scratch, &mm, sizeof(mm));
		rc = ckpt_inject(&d->t, &d->base, SYS_prctl, &r, 0, 4, (long)PR_SET_MM,
				 (long)PR_SET_MM_MAP, (long)scratch, (long)sizeof(mm));
	}
	if (exefd >= 0)
		SYS(d, "close", SYS_close, NULL, 1, exefd, 0, 0, 0, 0, 0);
	if (!rc && r < 0)
		rc = ckpt_fail(d->err, d->errlen, (int)r, "%s: restoring: prctl(PR_SET_MM_MAP): %s",
			       d->im->path, strerror((int)-r));
	return rc;
}

static int restore_itimers(struct drive *d, uint64_t scratch)
{
	Storm__Ckpt__Meta *m = d->im->meta;
	int rc;
	for (size_t i = 0; i < m->n_itimers; i++) {
		struct itimerval it = {
			{ m->itimers[i]->interval_us / 1000000, m->itimers[i]->interval_us % 1000000 },
			{ m->itimers[i]->value_us / 1000000, m->itimers[i]->value_us % 1000000 },
		};
		ckpt_mem_write(&d->t, scratch, &it, sizeof(it));
		if ((rc = SYS(d, "setitimer", SYS_setitimer, NULL, 3, m->itimers[i]->which, scratch, 0,
			      0, 0, 0)))
			return rc;
	}
	return 0;
}

/* Last: the gadget goes (returning into the unmapped page traps), then the
 * main thread's saved registers and signal mask. */
static int restore_registers(struct drive *d, uint64_t gadget)
{
	Storm__Ckpt__Thread view;
	const Storm__Ckpt__Thread *mt = ckpt_meta_thread(d->im->meta, 0, &view);
	long r;
	int rc = ckpt_inject(&d->t, &d->base, SYS_munmap, &r, 1, 2, (long)gadget,
			     (long)(2 * CKPT_PAGE));
	if (rc)
		return ckpt_fail(d->err, d->errlen, rc, "%s: restoring: removing the gadget: %s",
				 d->im->path, strerror(-rc));
	if ((rc = ckpt_thread_set_state(d->t.pid, mt)))
		return ckpt_fail(d->err, d->errlen, rc, "%s: restoring registers: %s", d->im->path,
				 strerror(-rc));
	return 0;
}

/* Turns the stopped new process into the image's, step by step. */
static int drive(struct drive *d, uint64_t gadget, uint64_t tmp, const struct special *img_sp,
		 const struct ckpt_restore_opts *o, uint64_t *pages)
{
	uint64_t scratch = gadget + CKPT_PAGE;
	int rc;
	/* a descendant's death signal was the restore's own */
	if (d->im->proc && (rc = SYS(d, "prctl", SYS_prctl, NULL, 2, PR_SET_PDEATHSIG, 0, 0, 0, 0, 0)))
		return rc;
	if ((rc = clear_and_move_vdso(d, gadget, tmp, img_sp)) ||
	    (rc = restore_areas(d, o, scratch, pages)) ||
	    (rc = restore_mm_fields(d, o, scratch)) || (rc = restore_itimers(d, scratch)) ||
	    (rc = ckpt_threads_restore(d->th, &d->t, &d->base, d->im->meta, scratch, o,
				       d->im->path, d->err, d->errlen)))
		return rc;
	return restore_registers(d, gadget);
}

/* Can this host restore the image? Its vDSO must be ours (isp, msp: the
 * image's and our special areas), an external area needs the daemon's
 * callback, and every mapped file must be the checkpoint's. */
static int check_restorable(const struct image *imp, const struct ckpt_restore_opts *o,
			    const struct ckpt_map *mine, size_t nmine, struct special *isp,
			    struct special *msp, char *err, size_t errlen)
{
	const char *path = imp->path;
	Storm__Ckpt__Meta *m = imp->meta;
	int rc;
	for (size_t i = 0; i < imp->vt->n_vmas; i++) {
		Storm__Ckpt__Vma *v = imp->vt->vmas[i];
		if (v->kind >= CKPT_VMA_VDSO && v->kind <= CKPT_VMA_VVAR_VCLOCK)
			special_add(isp, v->kind, v->start, v->end);
	}
	for (size_t i = 0; i < nmine; i++)
		if (mine[i].kind >= CKPT_VMA_VDSO && mine[i].kind <= CKPT_VMA_VVAR_VCLOCK)
			special_add(msp, mine[i].kind, mine[i].start, mine[i].end);
	int same = isp->have == msp->have;
	for (int k = 0; k < 3 && same; k++)
		same = !(isp->have >> k & 1) ||
		       (isp->len[k] == msp->len[k] &&
			isp->start[k] - isp->lo == msp->start[k] - msp->lo);
	void *vdso = (void *)getauxval(AT_SYSINFO_EHDR);
	if (!same || !vdso || m->vdso.len != msp->len[0] || memcmp(vdso, m->vdso.data, m->vdso.len))
		return ckpt_fail(err, errlen, -ENOEXEC,
				 "%s: section meta: the vDSO differs from this kernel's "
				 "(restore on a node running the same kernel)",
				 path);
	for (size_t i = 0; i < imp->vt->n_vmas; i++)
		if (imp->vt->vmas[i]->kind == CKPT_VMA_EXTERNAL && (!o->external || o->external_fd < 0))
			return ckpt_fail(err, errlen, -ENOTSUP,
					 "%s: area %#llx maps %s, which only the checkpointing "
					 "daemon can supply",
					 path, (unsigned long long)imp->vt->vmas[i]->start,
					 imp->vt->vmas[i]->path);
	for (size_t i = 0; i < imp->vt->n_vmas; i++) {
		Storm__Ckpt__Vma *v = imp->vt->vmas[i];
		if (v->kind != CKPT_VMA_FILE)
			continue;
		char *fp = ckpt_remap_path(o, v->path);
		uint64_t size, hash;
		rc = ckpt_file_range_hash(fp, v->offset, v->end - v->start, &size, &hash);
		if (rc || size != v->file_size || hash != v->file_hash) {
			rc = ckpt_fail(err, errlen, rc ? rc : -ESTALE,
				       "%s: mapped file %s %s since the checkpoint", path, fp,
				       rc ? "is gone" : "changed");
			free(fp);
			return rc;
		}
		free(fp);
	}
	return 0;
}

/* One process of the image while it is restored. */
struct rproc {
	struct image im;
	pid_t pid;
	int traced;                /* under our ptrace (to kill and reap on failure) */
	struct drive d;
	struct ckpt_frestore fr;
	struct ckpt_threads th;
};

/* The reports of processes 1.. (their pids), or the first failure. */
static int read_reports(int rfd, struct rproc *rp, size_t n, char *err, size_t errlen)
{
	for (size_t got = 1; got < n;) {
		struct report r;
		ssize_t k = read(rfd, &r, sizeof(r));
		if (k != sizeof(r))
			return ckpt_fail(err, errlen, -EIO, "%s: a new process died before it was ready",
					 rp[0].im.path);
		r.why[sizeof(r.why) - 1] = 0;
		if (r.pid <= 0 || r.proc <= 0 || (size_t)r.proc >= n)
			return ckpt_fail(err, errlen, -EIO, "%s", r.why[0] ? r.why : "the new process died");
		rp[r.proc].pid = r.pid;
		got++;
	}
	return 0;
}

/* What the new processes wrote for o->log, a line each. */
static void say_log(const struct ckpt_restore_opts *o, int logfd)
{
	char buf[8192];
	size_t have = 0;
	off_t at = 0;
	for (;;) {
		ssize_t r = pread(logfd, buf + have, sizeof(buf) - 1 - have, at);
		if (r <= 0)
			break;
		at += r;
		have += (size_t)r;
		buf[have] = 0;
		char *l = buf, *nl;
		while ((nl = strchr(l, '\n'))) {
			*nl = 0;
			ckpt_log(o, "%s", l);
			l = nl + 1;
		}
		have = strlen(l);
		memmove(buf, l, have);
		if (have == sizeof(buf) - 1) { /* a line too long: said in parts */
			ckpt_log(o, "%s", buf);
			have = 0;
		}
	}
	if (have) {
		buf[have] = 0;
		ckpt_log(o, "%s", buf);
	}
}

/* What the steps of one restore share; restore_end frees it. */
struct restoring {
	const char *path;
	const struct ckpt_restore_opts *o;
	char *err;
	size_t errlen;
	struct rproc *rp;             /* the image's processes, n of them */
	size_t n;
	struct ckpt_map *mine;        /* our own layout */
	size_t nmine;
	struct image *ims;            /* rp's images side by side, and their tables */
	Storm__Ckpt__FileTable **fts;
	Storm__Ckpt__VmaTable **vts;
	struct special isp, msp;      /* process 0's image's and ours */
	struct ckpt_shared sh;
	uint64_t gadget, tmp;
	int pfd[2];                   /* the new processes' reports */
	int logfd;
	uint64_t pages;
};

/* Every process's image open, rp grown to hold them. */
static int restore_open_images(struct restoring *s)
{
	int rc;
	if ((rc = image_open(s->path, 0, &s->rp[0].im, s->err, s->errlen)))
		return rc;
	size_t n = s->rp[0].im.nprocs;
	struct rproc *nrp = realloc(s->rp, n * sizeof(*nrp));
	if (!nrp)
		return -ENOMEM; /* s->n still counts the one rp holds: the end frees that */
	s->rp = nrp;
	s->n = n;
	memset(nrp + 1, 0, (n - 1) * sizeof(*nrp));
	for (size_t p = 1; p < n; p++)
		nrp[p].im.fd = -1;
	for (size_t p = 1; p < n && !rc; p++)
		rc = image_open(s->path, (uint32_t)p, &nrp[p].im, s->err, s->errlen);
	return rc;
}

/* Each image checked restorable here, next to our own layout. */
static int restore_check_images(struct restoring *s)
{
	int rc = 0;
	if (own_maps(&s->mine, &s->nmine, getpid()) < 0)
		return ckpt_fail(s->err, s->errlen, -errno, "cannot read /proc/self/maps");
	/* the images side by side (child_main reads them, find_free checks them) */
	s->ims = calloc(s->n, sizeof(*s->ims));
	s->fts = calloc(s->n, sizeof(*s->fts));
	s->vts = calloc(s->n, sizeof(*s->vts));
	if (!s->ims || !s->fts || !s->vts)
		return -ENOMEM;
	for (size_t p = 0; p < s->n && !rc; p++) {
		struct special pisp = { 0 }, pmsp = { 0 };
		struct image *im = &s->rp[p].im;
		if (!(rc = check_restorable(im, s->o, s->mine, s->nmine, &pisp, &pmsp, s->err,
					    s->errlen)))
			rc = ckpt_files_restorable(s->path, im->ft, s->o, s->err, s->errlen);
		if (p == 0) {
			s->isp = pisp;
			s->msp = pmsp;
		}
		s->ims[p] = *im;
		s->fts[p] = im->ft;
		s->vts[p] = im->vt;
	}
	return rc;
}

/* The address ranges free in every process and here: the gadget's, the
 * vDSO's on its way, and the shared anonymous memory of a tree. */
static int restore_plan_addresses(struct restoring *s)
{
	const struct image *ims = s->ims;
	size_t n = s->n;
	/* a vDSO at another place in a descendant: not supported (it is the
	 * same kernel's, and a fork keeps its place) */
	uint64_t avoid[2 * 3 + 2 * 64] = { 0 };
	size_t navoid = 0;
	s->gadget = find_free(2 * CKPT_PAGE, ims, n, s->mine, s->nmine, avoid, 0);
	avoid[2 * navoid] = s->gadget;
	avoid[2 * navoid++ + 1] = 2 * CKPT_PAGE;
	s->tmp = find_free(s->msp.hi - s->msp.lo, ims, n, s->mine, s->nmine, avoid, navoid);
	avoid[2 * navoid] = s->tmp;
	avoid[2 * navoid++ + 1] = s->msp.hi - s->msp.lo;
	if (!s->gadget || !s->tmp)
		return ckpt_fail(s->err, s->errlen, -ENOMEM,
				 "%s: no free address range to work from", s->path);
	if (n > 1 && ckpt_files_share_plan(s->fts, s->vts, n, &s->sh) < 0)
		return -ENOMEM;
	for (size_t k = 0; k < s->sh.n; k++) {
		struct ckpt_shobj *so = &s->sh.v[k];
		if (so->kind != CKPT_SH_ANON)
			continue;
		so->addr = navoid < 64
			   ? find_free(so->size, ims, n, s->mine, s->nmine, avoid, navoid) : 0;
		if (!so->addr)
			return ckpt_fail(s->err, s->errlen, -ENOMEM,
					 "%s: no free address range for the shared "
					 "memory of its processes", s->path);
		avoid[2 * navoid] = so->addr;
		avoid[2 * navoid++ + 1] = so->size;
	}
	return 0;
}

/* The first new process forked (it forks the others) and stopped under
 * PTRACE_TRACEME; the others' reports wait on pfd[0]. */
static int restore_fork(struct restoring *s)
{
	struct rproc *rp = s->rp;
	if (pipe2(s->pfd, O_CLOEXEC) < 0)
		return ckpt_fail(s->err, s->errlen, -errno, "pipe: %s", strerror(errno));
	/* a file, not a pipe: the new processes write all they have to say
	 * before the restorer reads any of it */
	s->logfd = memfd_create("storm-ckpt-log", MFD_CLOEXEC);
	if (s->logfd < 0 || fcntl(s->logfd, F_SETFL, O_APPEND) < 0)
		return ckpt_fail(s->err, s->errlen, -errno, "memfd_create: %s", strerror(errno));
	char tag[32];
	time_t when = (time_t)(rp[0].im.meta->time_ns / 1000000000ll);
	struct tm tm;
	gmtime_r(&when, &tm);
	strftime(tag, sizeof(tag), "%Y%m%dT%H%M%SZ", &tm);
	/* its old pid where free: what glibc and the program cached stays true */
	rp[0].pid = ckpt_fork_pid(rp[0].im.meta->pid);
	if (rp[0].pid < 0)
		return ckpt_fail(s->err, s->errlen, -errno, "fork: %s", strerror(errno));
	if (rp[0].pid == 0) {
		close(s->pfd[0]);
		struct child_ctx c = { s->ims, s->n, s->o, s->gadget, s->pfd[1], &s->sh,
				       s->logfd, tag };
		child_main(&c);
	}
	rp[0].traced = 1;
	close(s->pfd[1]);
	s->pfd[1] = -1;
	int ws;
	if (waitpid(rp[0].pid, &ws, __WALL) < 0 || !WIFSTOPPED(ws)) {
		struct report r = { 0 };
		while (read(s->pfd[0], &r, sizeof(r)) == sizeof(r) && r.pid > 0)
			;
		r.why[sizeof(r.why) - 1] = 0;
		int rc = ckpt_fail(s->err, s->errlen, -EIO, "%s",
				   r.pid <= 0 && r.why[0] ? r.why : "the new process died");
		rp[0].pid = -1;
		return rc;
	}
	return 0;
}

/* The other new processes, once they report ready, under our ptrace too. */
static int restore_seize(struct restoring *s)
{
	struct rproc *rp = s->rp;
	int ws, rc;
	if ((rc = read_reports(s->pfd[0], rp, s->n, s->err, s->errlen)))
		return rc;
	/* the others wait in pause(): seized and interrupted (their parent is
	 * the first process, so PTRACE_TRACEME would not make them ours) */
	for (size_t p = 1; p < s->n; p++) {
		if (ptrace(PTRACE_SEIZE, rp[p].pid, 0, PTRACE_O_EXITKILL) < 0 ||
		    ptrace(PTRACE_INTERRUPT, rp[p].pid, 0, 0) < 0 ||
		    waitpid(rp[p].pid, &ws, __WALL) != rp[p].pid || !WIFSTOPPED(ws))
			return ckpt_fail(s->err, s->errlen, -errno ? -errno : -EIO,
					 "%s: process %zu (pid %d): seizing it: %s", s->path, p,
					 rp[p].pid, strerror(errno));
		rp[p].traced = 1;
	}
	return 0;
}

/* Each stopped new process made its image's, descriptors and all. */
static int restore_drive_all(struct restoring *s)
{
	struct ckpt_shared *sh = s->n > 1 ? &s->sh : NULL;
	int rc = 0;
	for (size_t p = 0; p < s->n && !rc; p++) {
		struct rproc *r = &s->rp[p];
		struct image *im = &r->im;
		r->d = (struct drive){ .t = { .pid = r->pid, .gadget = s->gadget }, .th = &r->th,
				       .im = im, .fr = &r->fr, .sh = sh, .err = s->err,
				       .errlen = s->errlen };
		r->fr = (struct ckpt_frestore){ .t = &r->d.t, .base = &r->d.base, .image = s->path,
						.imgfd = im->fd, .h = &im->h, .ft = im->ft,
						.vt = im->vt, .maxfd = image_maxfd(im), .sh = sh,
						.err = s->err, .errlen = s->errlen };
		char mp[64];
		snprintf(mp, sizeof(mp), "/proc/%d/mem", r->pid);
		r->d.t.memfd = open(mp, O_RDWR | O_CLOEXEC);
		if (r->d.t.memfd < 0 || ptrace(PTRACE_GETREGS, r->pid, 0, &r->d.base) < 0) {
			rc = ckpt_fail(s->err, s->errlen, -errno, "%s: %s", mp, strerror(errno));
			break;
		}
		if (!(rc = ckpt_files_restore_start(&r->fr)))
			rc = drive(&r->d, s->gadget, s->tmp, &s->isp, s->o, &s->pages);
	}
	/* the seals that wait for the mappings: once every process has its own */
	for (size_t p = 0; p < s->n && !rc; p++)
		rc = ckpt_files_restore_finish(&s->rp[p].fr);
	for (size_t p = 0; p < s->n; p++)
		if (s->rp[p].d.t.memfd > 0)
			close(s->rp[p].d.t.memfd);
	return rc;
}

/* Every process let go together, the first last. Stopped: a SIGSTOP for
 * each, taken by the first thread let go, stops them all before any runs
 * (a group stop, which SIGCONT ends). */
static int restore_let_go(struct restoring *s)
{
	for (size_t p = s->n; p-- > 0;) {
		struct rproc *r = &s->rp[p];
		if (s->o->stopped)
			kill(r->pid, SIGSTOP);
		ckpt_threads_detach(&r->th);
		if (ptrace(PTRACE_DETACH, r->pid, 0, r->d.t.pending_sig) < 0)
			return ckpt_fail(s->err, s->errlen, -errno, "detach of pid %d: %s", r->pid,
					 strerror(errno));
		r->traced = 0;
	}
	return 0;
}

/* Frees what s holds; after a failure (rc), the new processes killed and
 * reaped. Returns rc. */
static int restore_end(struct restoring *s, int rc)
{
	struct rproc *rp = s->rp;
	for (size_t p = s->n; p-- > 0;) {
		ckpt_files_restore_end(&rp[p].fr);
		if (rc && rp[p].pid > 0) {
			kill(rp[p].pid, SIGKILL);
			if (rp[p].traced) {
				ckpt_threads_reap(&rp[p].th); /* the main thread's end waits for theirs */
				waitpid(rp[p].pid, NULL, __WALL);
			}
		}
		ckpt_threads_free(&rp[p].th);
	}
	if (s->pfd[0] >= 0)
		close(s->pfd[0]);
	if (s->pfd[1] >= 0)
		close(s->pfd[1]);
	if (s->logfd >= 0) {
		say_log(s->o, s->logfd);
		close(s->logfd);
	}
	free(s->mine);
	for (size_t p = 0; p < s->n; p++)
		image_close(&rp[p].im);
	ckpt_files_share_free(&s->sh);
	free(s->ims);
	free(s->fts);
	free(s->vts);
	free(rp);
	return rc;
}

int ckpt_restore(const char *path, const struct ckpt_restore_opts *opts, pid_t *pidp,
		 struct ckpt_stats *st, char *err, size_t errlen)
{
	static const struct ckpt_restore_opts none;
	struct restoring s = { .path = path, .o = opts ? opts : &none, .err = err, .errlen = errlen,
			       .n = 1, .pfd = { -1, -1 }, .logfd = -1 };
	double t0 = ckpt_now();
	int rc;
	s.rp = calloc(1, sizeof(*s.rp));
	if (!s.rp)
		return -ENOMEM;
	s.rp[0].im.fd = -1;
	if ((rc = restore_open_images(&s)) || (rc = restore_check_images(&s)) ||
	    (rc = restore_plan_addresses(&s)) || (rc = restore_fork(&s)) ||
	    (rc = restore_seize(&s)) || (rc = restore_drive_all(&s)) || (rc = restore_let_go(&s)))
		return restore_end(&s, rc);
	*pidp = s.rp[0].pid;
	if (st) {
		st->bytes = s.rp[0].im.size;
		st->pages = s.pages;
		st->seconds = ckpt_now() - t0;
	}
	return restore_end(&s, 0);
}
