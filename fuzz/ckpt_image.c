/* The header and section table of a checkpoint image (checkpoint/image.c),
 * as ckpt_restore reads them from a file that may be damaged or forged, and
 * its file table (checkpoint/fdinfo.c).
 * Input: the image's first bytes (or all of it). Properties: a refusal is
 * -EINVAL or -ENODATA with a one-line reason; an accepted header has 3 to
 * CKPT_MAX_SECTIONS sections, each inside file_size, in offset order and
 * apart, after the table, one meta, vmas and files each; writing it again
 * gives the same bytes (the codec round-trips); a whole-image check accepts
 * only what the header accepts. The files section of an accepted image, and
 * the input itself taken as a files section, are checked (ckpt_files_check):
 * accepted or refused with a one-line reason, and an accepted table has an
 * epoll order. The input taken as /proc fdinfo text goes through every
 * parser: 0 or -EINVAL, never more epoll items than "tfd:" lines. */
#include <errno.h>
#include <stdint.h>
#include <string.h>

#include "fdinfo.h"
#include "fuzz.h"
#include "image.h"
#include "proctree.h"

static void check_table(const uint8_t *data, size_t len, const struct ckpt_header *h)
{
	Storm__Ckpt__FileTable *ft = storm__ckpt__file_table__unpack(NULL, len, data);
	if (!ft)
		return;
	char err[256];
	int rc = ckpt_files_check(ft, NULL, h, err, sizeof(err));
	if (rc) {
		FUZZ_ASSERT(rc == -EINVAL, "check returned %d", rc);
		FUZZ_ONE_LINE(err);
	} else {
		size_t *order = malloc((ft->n_files + 1) * sizeof(*order));
		int n = ckpt_epoll_order(ft, order);
		FUZZ_ASSERT(n >= 0 && (size_t)n <= ft->n_files, "epoll order %d", n);
		free(order);
	}
	storm__ckpt__file_table__free_unpacked(ft, NULL);
}

static void check_tree(const uint8_t *data, size_t len, const struct ckpt_header *h)
{
	Storm__Ckpt__Tree *t = storm__ckpt__tree__unpack(NULL, len, data);
	if (!t)
		return;
	char err[256];
	int rc = ckpt_tree_check(t, err, sizeof(err));
	if (rc) {
		FUZZ_ASSERT(rc == -EINVAL, "tree check returned %d", rc);
		FUZZ_ONE_LINE(err);
	} else {
		FUZZ_ASSERT(t->n_procs >= 1 && t->n_procs <= CKPT_MAX_PROCS, "%zu processes", t->n_procs);
		FUZZ_ASSERT(t->procs[0]->parent == -1, "root's parent");
		if (h) {
			rc = ckpt_image_procs_check(h, (uint32_t)t->n_procs, err, sizeof(err));
			FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "procs check returned %d", rc);
			if (rc)
				FUZZ_ONE_LINE(err);
		}
	}
	storm__ckpt__tree__free_unpacked(t, NULL);
}

static void parse_fdinfo(const uint8_t *data, size_t size)
{
	char *t = malloc(size + 1);
	memcpy(t, data, size);
	t[size] = 0;
	struct ckpt_fdinfo fi;
	struct ckpt_timerfd tf;
	uint64_t v;
	int sem, rc;
	rc = ckpt_fdinfo_common(t, &fi);
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "common %d", rc);
	FUZZ_ASSERT(strlen(fi.lock) < sizeof(fi.lock), "lock");
	rc = ckpt_fdinfo_eventfd(t, &v, &sem);
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "eventfd %d", rc);
	rc = ckpt_fdinfo_timerfd(t, &tf);
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "timerfd %d", rc);
	rc = ckpt_fdinfo_signalfd(t, &v);
	FUZZ_ASSERT(rc == 0 || rc == -EINVAL, "signalfd %d", rc);
	struct ckpt_epoll_item *it;
	int n = ckpt_fdinfo_epoll(t, &it);
	FUZZ_ASSERT(n >= 0 || n == -EINVAL || n == -ENOMEM, "epoll %d", n);
	int lines = 0;
	for (const char *p = t; (p = strstr(p, "tfd:")); p++)
		lines++;
	FUZZ_ASSERT(n <= lines, "%d items from %d tfd: lines", n, lines);
	for (int i = 0; i < n; i++)
		FUZZ_ASSERT(it[i].tfd >= 0, "tfd %d", it[i].tfd);
	free(it);
	free(t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *buf = malloc(size ? size : 1); /* exact: no read beyond it */
	memcpy(buf, data, size);
	check_table(buf, size, NULL);
	check_tree(buf, size, NULL);
	parse_fdinfo(buf, size);
	struct ckpt_header h;
	char err[256];
	int rc = ckpt_image_read_header(buf, size, &h, err, sizeof(err));
	if (rc) {
		FUZZ_ASSERT(rc == -EINVAL || rc == -ENODATA || rc == -ENOMEM, "returned %d", rc);
		FUZZ_ONE_LINE(err);
		struct ckpt_header v;
		FUZZ_ASSERT(ckpt_image_verify(buf, size, &v, err, sizeof(err)) != 0,
			    "verify accepted what the header refused");
		free(buf);
		return 0;
	}
	size_t hsize = ckpt_header_size(h.nsec);
	FUZZ_ASSERT(h.nsec >= 3 && h.nsec <= CKPT_MAX_SECTIONS, "%u sections", h.nsec);
	FUZZ_ASSERT(hsize <= size && hsize <= h.file_size, "table of %zu bytes", hsize);
	uint64_t next = hsize;
	unsigned seen[CKPT_SEC_TREE + 1] = { 0 };
	for (uint32_t i = 0; i < h.nsec; i++) {
		const struct ckpt_sec *s = &h.secs[i];
		FUZZ_ASSERT(s->type >= CKPT_SEC_META && s->type <= CKPT_SEC_TREE, "type %u", s->type);
		FUZZ_ASSERT(s->offset >= next && s->length <= h.file_size &&
				    s->offset <= h.file_size - s->length,
			    "section %u at %llu+%llu", i, (unsigned long long)s->offset,
			    (unsigned long long)s->length);
		next = s->offset + s->length;
		if (s->type == CKPT_SEC_PAGES || ckpt_sec_proc(s->index) == 0)
			seen[s->type]++; /* process 0's */
	}
	FUZZ_ASSERT(seen[CKPT_SEC_META] == 1 && seen[CKPT_SEC_VMAS] == 1 &&
			    seen[CKPT_SEC_FILES] == 1 && seen[CKPT_SEC_TREE] <= 1,
		    "metadata sections");
	uint8_t *again = malloc(hsize);
	FUZZ_ASSERT(ckpt_image_write_header(&h, again) == hsize, "written size");
	FUZZ_ASSERT(memcmp(again, buf, hsize) == 0, "round trip");
	free(again);
	for (uint32_t i = 0; i < h.nsec; i++) {
		const struct ckpt_sec *s = &h.secs[i];
		if (s->type == CKPT_SEC_FILES && s->offset + s->length <= size &&
		    ckpt_sec_check(s, buf + s->offset, err, sizeof(err)) == 0)
			check_table(buf + s->offset, s->length, &h);
		if (s->type == CKPT_SEC_TREE && s->offset + s->length <= size &&
		    ckpt_sec_check(s, buf + s->offset, err, sizeof(err)) == 0)
			check_tree(buf + s->offset, s->length, &h);
	}
	struct ckpt_header v;
	if (ckpt_image_verify(buf, size, &v, err, sizeof(err)) == 0) {
		FUZZ_ASSERT(v.file_size == size && v.nsec == h.nsec, "verify");
		ckpt_header_free(&v);
	} else {
		FUZZ_ONE_LINE(err);
	}
	ckpt_header_free(&h);
	free(buf);
	return 0;
}
