/* The checkpoint image container: a fixed header, a table of sections and the
 * sections, each with an XXH3-64 checksum. Pure code (no I/O), unit-tested and
 * fuzzed; checkpoint/dump.c writes images and checkpoint/restore.c reads them.
 *
 * Layout (little-endian, x86-64 only):
 *   0  char     magic[8]  "STORMCKP"
 *   8  uint32   version   CKPT_VERSION
 *  12  uint32   nsec      number of sections
 *  16  uint64   file_size total image size in bytes
 *  24  uint64   toc_hash  XXH3-64 of the section table
 *  32  uint64   hdr_hash  XXH3-64 of bytes 0..31
 *  40  section table: nsec entries of {uint32 type, uint32 index,
 *      uint64 offset, uint64 length, uint64 hash} (32 bytes each)
 * Sections follow in offset order, without overlap, within file_size. */
#ifndef STORM_CKPT_IMAGE_H
#define STORM_CKPT_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#define CKPT_MAGIC "STORMCKP"
#define CKPT_VERSION 1u
#define CKPT_HDR_FIXED 40u
#define CKPT_TOC_ENTRY 32u
#define CKPT_MAX_SECTIONS 65536u

enum ckpt_sec_type {
	CKPT_SEC_META = 1,  /* proto storm.ckpt.Meta */
	CKPT_SEC_VMAS = 2,  /* proto storm.ckpt.VmaTable */
	CKPT_SEC_FILES = 3, /* proto storm.ckpt.FileTable */
	CKPT_SEC_PAGES = 4, /* raw page data of one memory area */
	CKPT_SEC_TREE = 5,  /* proto storm.ckpt.Tree: an image of several processes */
};

/* A section's index: its process (0: the one dumped; others only in an
 * image with a tree section) in the high 16 bits, and for page sections the
 * number within the process in the low 16. An image of one process keeps
 * every section at process 0 (its page numbers may use all 32 bits). */
#define CKPT_MAX_PROCS 256u
static inline uint32_t ckpt_sec_index(uint32_t proc, uint32_t local)
{
	return proc << 16 | local;
}
static inline uint32_t ckpt_sec_proc(uint32_t index)
{
	return index >> 16;
}

struct ckpt_sec {
	uint32_t type;
	uint32_t index; /* PAGES: the area's number; 0 for the others */
	uint64_t offset;
	uint64_t length;
	uint64_t hash;
};

struct ckpt_header {
	uint32_t version;
	uint32_t nsec;
	uint64_t file_size;
	struct ckpt_sec *secs; /* nsec entries, malloc'd by ckpt_image_read_header */
	/* a restorer's view of one process of a tree: page sections are
	 * numbered by their low 16 bits (ckpt_sec_local) */
	int tree;
};

/* The number a process's tables give section s (Vma.pages_section). */
static inline uint32_t ckpt_sec_local(const struct ckpt_header *h, const struct ckpt_sec *s)
{
	return h->tree ? s->index & 0xffffu : s->index;
}

/* Bytes taken by the header and a table of nsec sections. */
static inline size_t ckpt_header_size(uint32_t nsec)
{
	return CKPT_HDR_FIXED + (size_t)nsec * CKPT_TOC_ENTRY;
}

/* Decodes and validates the header and section table at the start of an
 * image from untrusted bytes. buf holds the first len bytes of the image (len
 * may be less than the whole image; the table must fit). Returns 0 and fills
 * *h (free with ckpt_header_free), -ENODATA if buf is too short to hold the
 * header and table (truncated), or -EINVAL if they are malformed; err gets a
 * one-line reason naming the part ("header", "section table", a section). */
int ckpt_image_read_header(const void *buf, size_t len, struct ckpt_header *h,
			   char *err, size_t errlen);
void ckpt_header_free(struct ckpt_header *h);

/* Encodes h (hashes of sections already set) into buf, which must hold
 * ckpt_header_size(h->nsec) bytes. Returns the bytes written. */
size_t ckpt_image_write_header(const struct ckpt_header *h, void *buf);

/* "meta", "vmas", "files", "pages[N]", "tree"; a section of process P > 0
 * of a tree: "process P meta", "process P pages[N]". */
const char *ckpt_sec_name(const struct ckpt_sec *s, char *buf, size_t len);

/* Checks a section's bytes against its checksum; err names the section. */
int ckpt_sec_check(const struct ckpt_sec *s, const void *data, char *err, size_t errlen);

/* Validates a whole image held in memory: header, table, size, every
 * section's checksum. Returns 0, -ENODATA (truncated: err names the section
 * where the data stops) or -EINVAL. */
int ckpt_image_verify(const void *buf, size_t len, struct ckpt_header *h, char *err,
		      size_t errlen);

/* An image of nprocs processes (1 without a tree section): every section's
 * process below nprocs, each process with one meta, vmas and files section.
 * Returns 0 or -EINVAL with a reason naming the process. */
int ckpt_image_procs_check(const struct ckpt_header *h, uint32_t nprocs, char *err,
			   size_t errlen);

/* Names the section holding byte offset off (for truncation messages). */
const char *ckpt_section_at(const struct ckpt_header *h, uint64_t off, char *buf, size_t len);

uint64_t ckpt_hash(const void *data, size_t len);

#endif
