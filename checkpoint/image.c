/* The checkpoint image container (image.h): header, section table, checksums. */
#include "image.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

uint64_t ckpt_hash(const void *data, size_t len)
{
	return XXH3_64bits(data, len);
}

static uint32_t get32(const unsigned char *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static uint64_t get64(const unsigned char *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static void put32(unsigned char *p, uint32_t v)
{
	memcpy(p, &v, 4);
}

static void put64(unsigned char *p, uint64_t v)
{
	memcpy(p, &v, 8);
}

const char *ckpt_sec_name(const struct ckpt_sec *s, char *buf, size_t len)
{
	static const char *const names[] = { [CKPT_SEC_META] = "meta", [CKPT_SEC_VMAS] = "vmas",
					      [CKPT_SEC_FILES] = "files", [CKPT_SEC_TREE] = "tree" };
	uint32_t proc = ckpt_sec_proc(s->index);
	char pre[24] = "";
	/* a page section of process 0 is named by its whole index: an image of
	 * one process numbers them with all 32 bits */
	if (proc && !(s->type == CKPT_SEC_PAGES && proc >= CKPT_MAX_PROCS))
		snprintf(pre, sizeof(pre), "process %u ", proc);
	else
		proc = 0;
	if (s->type == CKPT_SEC_PAGES)
		snprintf(buf, len, "%spages[%u]", pre, proc ? s->index & 0xffffu : s->index);
	else if (s->type >= CKPT_SEC_META && s->type <= CKPT_SEC_TREE && names[s->type])
		snprintf(buf, len, "%s%s", pre, names[s->type]);
	else
		snprintf(buf, len, "section type %u", s->type);
	return buf;
}

void ckpt_header_free(struct ckpt_header *h)
{
	free(h->secs);
	h->secs = NULL;
	h->nsec = 0;
}

/* whole: the header's checks in the order of its bytes, each a test and its error */
int ckpt_image_read_header(const void *buf, size_t len, struct ckpt_header *h,
			   char *err, size_t errlen)
{
	const unsigned char *p = buf;
	char name[32];

	memset(h, 0, sizeof(*h));
	if (len < CKPT_HDR_FIXED) {
		snprintf(err, errlen, "header: truncated (%zu of %u bytes)", len, CKPT_HDR_FIXED);
		return -ENODATA;
	}
	if (memcmp(p, CKPT_MAGIC, 8) != 0) {
		snprintf(err, errlen, "header: bad magic (not a storm checkpoint image)");
		return -EINVAL;
	}
	if (get64(p + 32) != ckpt_hash(p, 32)) {
		snprintf(err, errlen, "header: checksum mismatch (corrupted)");
		return -EINVAL;
	}
	uint32_t version = get32(p + 8), nsec = get32(p + 12);
	uint64_t file_size = get64(p + 16);
	if (version != CKPT_VERSION) {
		snprintf(err, errlen, "header: version %u not supported (this build reads %u)",
			 version, CKPT_VERSION);
		return -EINVAL;
	}
	if (nsec < 3 || nsec > CKPT_MAX_SECTIONS) {
		snprintf(err, errlen, "header: %u sections (want 3 to %u)", nsec, CKPT_MAX_SECTIONS);
		return -EINVAL;
	}
	size_t hsize = ckpt_header_size(nsec);
	if (file_size < hsize) {
		snprintf(err, errlen, "header: image size %llu smaller than its section table",
			 (unsigned long long)file_size);
		return -EINVAL;
	}
	if (len < hsize) {
		snprintf(err, errlen, "section table: truncated (%zu of %zu bytes)", len, hsize);
		return -ENODATA;
	}
	if (get64(p + 24) != ckpt_hash(p + CKPT_HDR_FIXED, hsize - CKPT_HDR_FIXED)) {
		snprintf(err, errlen, "section table: checksum mismatch (corrupted)");
		return -EINVAL;
	}
	struct ckpt_sec *secs = calloc(nsec, sizeof(*secs));
	if (!secs) {
		snprintf(err, errlen, "section table: out of memory");
		return -ENOMEM;
	}
	uint64_t next = hsize;
	/* which metadata sections each process has: one of each at most */
	static const unsigned NT = CKPT_SEC_TREE + 1;
	unsigned char *seen = calloc((size_t)NT * CKPT_MAX_PROCS, 1);
	if (!seen) {
		free(secs);
		snprintf(err, errlen, "section table: out of memory");
		return -ENOMEM;
	}
	for (uint32_t i = 0; i < nsec; i++) {
		const unsigned char *e = p + CKPT_HDR_FIXED + (size_t)i * CKPT_TOC_ENTRY;
		struct ckpt_sec *s = &secs[i];
		s->type = get32(e);
		s->index = get32(e + 4);
		s->offset = get64(e + 8);
		s->length = get64(e + 16);
		s->hash = get64(e + 24);
		ckpt_sec_name(s, name, sizeof(name));
		if (s->type < CKPT_SEC_META || s->type > CKPT_SEC_TREE) {
			snprintf(err, errlen, "section table: entry %u has unknown %s", i, name);
			goto bad;
		}
		uint32_t proc = ckpt_sec_proc(s->index);
		if (s->type != CKPT_SEC_PAGES &&
		    ((s->index & 0xffffu) || proc >= CKPT_MAX_PROCS ||
		     (s->type == CKPT_SEC_TREE && s->index))) {
			snprintf(err, errlen, "section table: %s has index %u", name, s->index);
			goto bad;
		}
		if (s->type != CKPT_SEC_PAGES && seen[(size_t)proc * NT + s->type]++) {
			snprintf(err, errlen, "section table: %s appears twice", name);
			goto bad;
		}
		if (s->offset < next || s->length > file_size || s->offset > file_size - s->length) {
			snprintf(err, errlen,
				 "section table: %s at offset %llu length %llu overlaps another "
				 "or ends past the image (%llu bytes)",
				 name, (unsigned long long)s->offset,
				 (unsigned long long)s->length, (unsigned long long)file_size);
			goto bad;
		}
		next = s->offset + s->length;
	}
	for (unsigned t = CKPT_SEC_META; t <= CKPT_SEC_FILES; t++) {
		if (!seen[t]) { /* process 0's */
			struct ckpt_sec s = { .type = t };
			snprintf(err, errlen, "section table: no %s section",
				 ckpt_sec_name(&s, name, sizeof(name)));
			goto bad;
		}
	}
	h->version = version;
	h->nsec = nsec;
	h->file_size = file_size;
	h->secs = secs;
	free(seen);
	return 0;
bad:
	free(seen);
	free(secs);
	return -EINVAL;
}

int ckpt_image_procs_check(const struct ckpt_header *h, uint32_t nprocs, char *err,
			   size_t errlen)
{
	char name[48];
	if (nprocs < 1 || nprocs > CKPT_MAX_PROCS) {
		snprintf(err, errlen, "section tree: %u processes (want 1 to %u)", nprocs,
			 CKPT_MAX_PROCS);
		return -EINVAL;
	}
	unsigned char *have = calloc(nprocs, 1);
	if (!have) {
		snprintf(err, errlen, "section table: out of memory");
		return -ENOMEM;
	}
	int rc = 0;
	for (uint32_t i = 0; !rc && i < h->nsec; i++) {
		const struct ckpt_sec *s = &h->secs[i];
		uint32_t proc = ckpt_sec_proc(s->index);
		if (nprocs == 1 && s->type == CKPT_SEC_PAGES)
			continue; /* numbered with all 32 bits */
		if (proc >= nprocs) {
			snprintf(err, errlen, "section table: %s, but the image has %u process%s",
				 ckpt_sec_name(s, name, sizeof(name)), nprocs, nprocs == 1 ? "" : "es");
			rc = -EINVAL;
		} else if (s->type >= CKPT_SEC_META && s->type <= CKPT_SEC_FILES) {
			have[proc] |= 1u << s->type;
		}
	}
	for (uint32_t p = 0; !rc && p < nprocs; p++)
		if (have[p] != ((1u << CKPT_SEC_META) | (1u << CKPT_SEC_VMAS) | (1u << CKPT_SEC_FILES))) {
			snprintf(err, errlen, "section table: process %u lacks a meta, vmas or files section", p);
			rc = -EINVAL;
		}
	free(have);
	return rc;
}

size_t ckpt_image_write_header(const struct ckpt_header *h, void *buf)
{
	unsigned char *p = buf;
	size_t hsize = ckpt_header_size(h->nsec);

	memset(p, 0, hsize);
	memcpy(p, CKPT_MAGIC, 8);
	put32(p + 8, CKPT_VERSION);
	put32(p + 12, h->nsec);
	put64(p + 16, h->file_size);
	for (uint32_t i = 0; i < h->nsec; i++) {
		unsigned char *e = p + CKPT_HDR_FIXED + (size_t)i * CKPT_TOC_ENTRY;
		put32(e, h->secs[i].type);
		put32(e + 4, h->secs[i].index);
		put64(e + 8, h->secs[i].offset);
		put64(e + 16, h->secs[i].length);
		put64(e + 24, h->secs[i].hash);
	}
	put64(p + 24, ckpt_hash(p + CKPT_HDR_FIXED, hsize - CKPT_HDR_FIXED));
	put64(p + 32, ckpt_hash(p, 32));
	return hsize;
}

int ckpt_sec_check(const struct ckpt_sec *s, const void *data, char *err, size_t errlen)
{
	char name[32];

	if (ckpt_hash(data, s->length) != s->hash) {
		snprintf(err, errlen, "section %s: checksum mismatch (corrupted)",
			 ckpt_sec_name(s, name, sizeof(name)));
		return -EINVAL;
	}
	return 0;
}

const char *ckpt_section_at(const struct ckpt_header *h, uint64_t off, char *buf, size_t len)
{
	if (off < ckpt_header_size(h->nsec)) {
		snprintf(buf, len, "section table");
		return buf;
	}
	for (uint32_t i = 0; i < h->nsec; i++)
		if (off < h->secs[i].offset + h->secs[i].length)
			return ckpt_sec_name(&h->secs[i], buf, len);
	snprintf(buf, len, "end of image");
	return buf;
}

int ckpt_image_verify(const void *buf, size_t len, struct ckpt_header *h, char *err,
		      size_t errlen)
{
	char name[32];
	int rc = ckpt_image_read_header(buf, len, h, err, errlen);
	if (rc)
		return rc;
	if (len < h->file_size) {
		snprintf(err, errlen, "truncated in section %s (image is %zu bytes, header says %llu)",
			 ckpt_section_at(h, len, name, sizeof(name)), len,
			 (unsigned long long)h->file_size);
		ckpt_header_free(h);
		return -ENODATA;
	}
	if (len > h->file_size) {
		snprintf(err, errlen, "image is %zu bytes, header says %llu (trailing data)", len,
			 (unsigned long long)h->file_size);
		ckpt_header_free(h);
		return -EINVAL;
	}
	for (uint32_t i = 0; i < h->nsec; i++) {
		rc = ckpt_sec_check(&h->secs[i], (const char *)buf + h->secs[i].offset, err, errlen);
		if (rc) {
			ckpt_header_free(h);
			return rc;
		}
	}
	return 0;
}
