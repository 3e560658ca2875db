/* The checkpoint image container (checkpoint/image.h) and the maps parser:
 * round trip, every truncation, a bit flip in every section, malformed tables;
 * the threads of the meta section (threads.h) and their registers' fix-ups;
 * the sections and tree of an image of several processes (proctree.h). */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/user.h>

#include "ckpt.h"
#include "image.h"
#include "internal.h"
#include "suites.h"
#include "threads.h"
#include "proctree.h"

/* An image with meta, vmas, files and two page sections of distinct bytes. */
static unsigned char *build(size_t *len, struct ckpt_sec *secs)
{
	const uint32_t types[5] = { CKPT_SEC_PAGES, CKPT_SEC_PAGES, CKPT_SEC_META, CKPT_SEC_VMAS,
				    CKPT_SEC_FILES };
	const size_t lens[5] = { 4096, 8192, 100, 37, 1 };
	struct ckpt_header h = { .nsec = 5, .secs = secs };
	size_t off = ckpt_header_size(5);
	for (int i = 0; i < 5; i++) {
		secs[i] = (struct ckpt_sec){ .type = types[i], .index = i < 2 ? i : 0,
					     .offset = off, .length = lens[i] };
		off += lens[i];
	}
	h.file_size = off;
	unsigned char *buf = malloc(off);
	for (int i = 0; i < 5; i++) {
		for (size_t b = 0; b < lens[i]; b++)
			buf[secs[i].offset + b] = (unsigned char)(b * 7 + i);
		secs[i].hash = ckpt_hash(buf + secs[i].offset, lens[i]);
	}
	CU_ASSERT_EQUAL(ckpt_image_write_header(&h, buf), ckpt_header_size(5));
	*len = off;
	return buf;
}

static void test_roundtrip(void)
{
	struct ckpt_sec secs[5];
	size_t len;
	unsigned char *img = build(&len, secs);
	struct ckpt_header h;
	char err[256];
	CU_ASSERT_EQUAL_FATAL(ckpt_image_verify(img, len, &h, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(h.nsec, 5);
	CU_ASSERT_EQUAL(h.file_size, len);
	CU_ASSERT_EQUAL(h.version, CKPT_VERSION);
	for (int i = 0; i < 5; i++) {
		CU_ASSERT_EQUAL(h.secs[i].type, secs[i].type);
		CU_ASSERT_EQUAL(h.secs[i].index, secs[i].index);
		CU_ASSERT_EQUAL(h.secs[i].offset, secs[i].offset);
		CU_ASSERT_EQUAL(h.secs[i].length, secs[i].length);
		CU_ASSERT_EQUAL(h.secs[i].hash, secs[i].hash);
	}
	ckpt_header_free(&h);
	free(img);
}

static void test_every_truncation(void)
{
	struct ckpt_sec secs[5];
	size_t len;
	unsigned char *img = build(&len, secs);
	char err[256];
	for (size_t l = 0; l < len; l++) {
		struct ckpt_header h;
		unsigned char *copy = malloc(l ? l : 1); /* ASan sees reads past l */
		memcpy(copy, img, l);
		int rc = ckpt_image_verify(copy, l, &h, err, sizeof(err));
		CU_ASSERT_EQUAL(rc, -ENODATA);
		if (l >= ckpt_header_size(5))
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "truncated in section"));
		if (l == secs[1].offset + 10)
			CU_ASSERT_PTR_NOT_NULL(strstr(err, "pages[1]"));
		free(copy);
	}
	free(img);
}

static void test_bit_flip_per_section(void)
{
	struct ckpt_sec secs[5];
	size_t len;
	unsigned char *img = build(&len, secs);
	const char *names[5] = { "pages[0]", "pages[1]", "meta", "vmas", "files" };
	char err[256];
	struct ckpt_header h;
	for (int i = 0; i < 5; i++) {
		for (uint64_t at = 0; at < secs[i].length; at += secs[i].length / 3 + 1) {
			for (int bit = 0; bit < 8; bit += 3) {
				img[secs[i].offset + at] ^= 1 << bit;
				CU_ASSERT_EQUAL(ckpt_image_verify(img, len, &h, err, sizeof(err)),
						-EINVAL);
				CU_ASSERT_PTR_NOT_NULL(strstr(err, names[i]));
				CU_ASSERT_PTR_NOT_NULL(strstr(err, "checksum"));
				img[secs[i].offset + at] ^= 1 << bit;
			}
		}
	}
	/* every bit of the header and the table */
	for (size_t b = 0; b < ckpt_header_size(5) * 8; b++) {
		img[b / 8] ^= 1 << (b % 8);
		int rc = ckpt_image_verify(img, len, &h, err, sizeof(err));
		CU_ASSERT(rc == -EINVAL || rc == -ENODATA);
		if (rc == 0)
			ckpt_header_free(&h);
		img[b / 8] ^= 1 << (b % 8);
	}
	CU_ASSERT_EQUAL(ckpt_image_verify(img, len, &h, err, sizeof(err)), 0);
	ckpt_header_free(&h);
	free(img);
}

/* A well-formed header (checksums right) whose table lies: every rule. */
static void test_bad_tables(void)
{
	struct ckpt_sec secs[5];
	size_t len;
	unsigned char *img = build(&len, secs);
	char err[256];
	struct ckpt_header h = { .nsec = 5, .secs = secs, .file_size = len }, out;

	secs[3].offset -= 1; /* overlaps meta */
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, len, &out, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "vmas"));
	secs[3].offset += 1;
	secs[4].length = 1ull << 62; /* past the end, and no overflow */
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, len, &out, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "files"));
	secs[4].length = 1;
	secs[4].type = CKPT_SEC_META; /* meta twice, no files */
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, len, &out, err, sizeof(err)), -EINVAL);
	secs[4].type = 9;
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, len, &out, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "unknown"));
	secs[4].type = CKPT_SEC_FILES;
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, len, &out, err, sizeof(err)), 0);
	ckpt_header_free(&out);
	memcpy(img, "NOTSTORM", 8);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, len, &out, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "magic"));
	free(img);
}

static void test_maps_line(void)
{
	struct ckpt_map m;
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("560ddd35e000-560ddd363000 r-xp 00002000 fe:00 247134"
					     "                     /usr/bin/cat\n", &m), 0);
	CU_ASSERT_EQUAL(m.start, 0x560ddd35e000ull);
	CU_ASSERT_EQUAL(m.end, 0x560ddd363000ull);
	CU_ASSERT_EQUAL(m.offset, 0x2000);
	CU_ASSERT_EQUAL(m.prot, PROT_READ | PROT_EXEC);
	CU_ASSERT_EQUAL(m.kind, CKPT_VMA_FILE);
	CU_ASSERT_STRING_EQUAL(m.path, "/usr/bin/cat");
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("7fe134351000-7fe134355000 r--p 00000000 00:00 0    "
					     "   [vvar]", &m), 0);
	CU_ASSERT_EQUAL(m.kind, CKPT_VMA_VVAR);
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("7fe1-7fe2000 rw-p 0 00:00 0", &m), -EINVAL);
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("7fe134337000-7fe134344000 rw-p 00000000 00:00 0 ",
					     &m), 0);
	CU_ASSERT_EQUAL(m.kind, CKPT_VMA_ANON);
	CU_ASSERT_EQUAL(m.prot, PROT_READ | PROT_WRITE);
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("7f0000000000-7f0000001000 rw-s 00000000 00:01 5 "
					     "/dev/zero (deleted)", &m), 0);
	CU_ASSERT_EQUAL(m.kind, CKPT_VMA_ANON);
	CU_ASSERT(m.shared && m.deleted);
	/* a piece of a shared anonymous object: its place in it and its inode */
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("7f0000000000-7f0000001000 r--s 00002000 00:01 26 "
					     "/dev/zero (deleted)", &m), 0);
	CU_ASSERT_EQUAL(m.offset, 0x2000);
	CU_ASSERT_EQUAL(m.ino, 26);
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("7f0000000000-7f0000001000 rw-p 7f0000000 00:00 0 ",
					     &m), 0);
	CU_ASSERT_EQUAL(m.offset, 0); /* a private one's is only its address */
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("7ffec0efc000-7ffec0f1d000 rw-p 00000000 00:00 0 "
					     "[stack]", &m), 0);
	CU_ASSERT_EQUAL(m.kind, CKPT_VMA_STACK);
	CU_ASSERT_EQUAL(ckpt_parse_maps_line("garbage", &m), -EINVAL);
}

/* A stopped call that cannot restart in a new process returns EINTR; the
 * others restart as the kernel does them. */
static void test_restart_fixup(void)
{
	struct user_regs_struct r = { .orig_rax = 35 /* nanosleep */ };
	r.rax = (unsigned long long)-516; /* ERESTART_RESTARTBLOCK */
	ckpt_restart_fixup(&r);
	CU_ASSERT_EQUAL((long)r.rax, -EINTR);
	CU_ASSERT_EQUAL(r.orig_rax, 35);
	r.orig_rax = 202; /* futex */
	r.rax = (unsigned long long)-512; /* ERESTARTSYS */
	ckpt_restart_fixup(&r);
	CU_ASSERT_EQUAL((long)r.rax, -512);
	r.rax = (unsigned long long)-516; /* not in a call: a value like any other */
	r.orig_rax = (unsigned long long)-1;
	ckpt_restart_fixup(&r);
	CU_ASSERT_EQUAL((long)r.rax, -516);
}

static void test_tid_offset(void)
{
	int32_t tcb[256] = { 0 };
	tcb[0x2d0 / 4] = 4242;
	CU_ASSERT_EQUAL(ckpt_tid_offset(tcb, sizeof(tcb), 4242), 0x2d0);
	CU_ASSERT_EQUAL(ckpt_tid_offset(tcb, sizeof(tcb), 4243), -1);
	tcb[3] = 4242; /* twice: which one is the field is unknown */
	CU_ASSERT_EQUAL(ckpt_tid_offset(tcb, sizeof(tcb), 4242), -1);
	tcb[3] = 0;
	char odd[16] = { 0 }; /* only aligned words count */
	int32_t v = 4242;
	memcpy(odd + 2, &v, 4);
	CU_ASSERT_EQUAL(ckpt_tid_offset(odd, sizeof(odd), 4242), -1);
	CU_ASSERT_EQUAL(ckpt_tid_offset(tcb, 3, 0), -1);
}

/* The threads of a meta section: an image written before threads were saved
 * has its one thread in Meta's own fields; one with threads round-trips
 * through protobuf; a malformed thread is refused naming the section. */
static void test_meta_threads(void)
{
	struct user_regs_struct regs = { .rip = 0x401000, .fs_base = 0x7f0000001000 };
	Storm__Ckpt__Meta m = STORM__CKPT__META__INIT;
	m.pid = 100;
	m.comm = "prog";
	m.regs.data = (uint8_t *)&regs;
	m.regs.len = sizeof(regs);
	m.sigmask = 0x5;
	m.rseq_addr = 0x7f0000002000;
	char err[256];
	Storm__Ckpt__Thread view;
	CU_ASSERT_EQUAL(ckpt_meta_nthreads(&m), 1);
	const Storm__Ckpt__Thread *t = ckpt_meta_thread(&m, 0, &view);
	CU_ASSERT_EQUAL(t->tid, 100);
	CU_ASSERT_EQUAL(t->sigmask, 0x5);
	CU_ASSERT_EQUAL(t->rseq_addr, 0x7f0000002000ull);
	CU_ASSERT_STRING_EQUAL(t->comm, "prog");
	CU_ASSERT(!t->sched); /* an old image: its scheduling left as the restorer's */
	CU_ASSERT_PTR_NULL(ckpt_meta_thread(&m, 1, &view));
	CU_ASSERT_EQUAL(ckpt_threads_check(&m, "x.img", err, sizeof(err)), 0);

	/* two threads, the second with a pending signal; the process one too */
	Storm__Ckpt__Thread th[2] = { STORM__CKPT__THREAD__INIT, STORM__CKPT__THREAD__INIT };
	Storm__Ckpt__Thread *tp[2] = { &th[0], &th[1] };
	siginfo_t si = { .si_signo = SIGUSR1, .si_code = SI_TKILL };
	ProtobufCBinaryData pend = { sizeof(si), (uint8_t *)&si };
	for (int i = 0; i < 2; i++) {
		th[i].tid = 100 + 7 * i;
		th[i].regs = m.regs;
		th[i].clear_tid = 0x7f00000012d0ull + i * 0x100000;
		th[i].robust_list = 0x7f00000012e0ull + i * 0x100000;
		th[i].robust_len = 24;
		th[i].comm = i ? "worker" : "prog";
	}
	th[1].pending = &pend;
	th[1].n_pending = 1;
	uint8_t cpus[8] = { 0x2 };
	th[1].cpus.data = cpus;
	th[1].cpus.len = sizeof(cpus);
	th[1].sched = 1;
	th[1].policy = 3; /* SCHED_BATCH */
	th[1].nice = -4;
	Storm__Ckpt__Meta n = m;
	n.regs.len = 0;
	n.regs.data = NULL;
	n.threads = tp;
	n.n_threads = 2;
	n.pending = &pend;
	n.n_pending = 1;
	size_t len = storm__ckpt__meta__get_packed_size(&n);
	uint8_t *buf = malloc(len);
	storm__ckpt__meta__pack(&n, buf);
	Storm__Ckpt__Meta *u = storm__ckpt__meta__unpack(NULL, len, buf);
	CU_ASSERT_PTR_NOT_NULL_FATAL(u);
	CU_ASSERT_EQUAL(ckpt_meta_nthreads(u), 2);
	CU_ASSERT_EQUAL(ckpt_threads_check(u, "x.img", err, sizeof(err)), 0);
	t = ckpt_meta_thread(u, 1, &view);
	CU_ASSERT_EQUAL(t->tid, 107);
	CU_ASSERT_EQUAL(t->clear_tid, 0x7f00001012d0ull);
	CU_ASSERT_EQUAL(t->robust_len, 24);
	CU_ASSERT_STRING_EQUAL(t->comm, "worker");
	CU_ASSERT_EQUAL_FATAL(t->n_pending, 1);
	CU_ASSERT_EQUAL(((siginfo_t *)t->pending[0].data)->si_signo, SIGUSR1);
	CU_ASSERT_EQUAL(u->n_pending, 1);
	CU_ASSERT_EQUAL(memcmp(u->threads[0]->regs.data, &regs, sizeof(regs)), 0);
	/* its affinity and scheduling; the main one's not narrowed (none saved) */
	CU_ASSERT(t->sched);
	CU_ASSERT_EQUAL(t->policy, 3);
	CU_ASSERT_EQUAL(t->nice, -4);
	CU_ASSERT_EQUAL(t->cpus.len, 8);
	CU_ASSERT_EQUAL(t->cpus.data[0], 0x2);
	CU_ASSERT_EQUAL(u->threads[0]->cpus.len, 0);
	char list[64];
	ckpt_cpus_list(t->cpus.data, t->cpus.len, list, sizeof(list));
	CU_ASSERT_STRING_EQUAL(list, "1");
	uint8_t many[3] = { 0xf7, 0x01, 0x80 };
	ckpt_cpus_list(many, sizeof(many), list, sizeof(list));
	CU_ASSERT_STRING_EQUAL(list, "0-2,4-8,23");
	u->threads[1]->cpus.len = 4096;
	CU_ASSERT_EQUAL(ckpt_threads_check(u, "x.img", err, sizeof(err)), -EINVAL);
	u->threads[1]->cpus.len = 8;

	/* malformed: each refused with the section named */
	u->threads[0]->tid = 101;
	CU_ASSERT_EQUAL(ckpt_threads_check(u, "x.img", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "x.img: section meta: the first thread is 101"));
	u->threads[0]->tid = 100;
	u->threads[1]->regs.len = 8;
	CU_ASSERT_EQUAL(ckpt_threads_check(u, "x.img", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "thread 1: registers are 8 bytes"));
	u->threads[1]->regs.len = sizeof(regs);
	u->threads[1]->pending[0].len = 12;
	CU_ASSERT_EQUAL(ckpt_threads_check(u, "x.img", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "pending signal 0 is 12 bytes"));
	u->threads[1]->pending[0].len = sizeof(si);
	u->pending[0].len = 0;
	CU_ASSERT_EQUAL(ckpt_threads_check(u, "x.img", err, sizeof(err)), -EINVAL);
	u->pending[0].len = sizeof(si);
	u->threads[1]->tid = -3;
	CU_ASSERT_EQUAL(ckpt_threads_check(u, "x.img", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "thread 1 is malformed"));
	storm__ckpt__meta__free_unpacked(u, NULL);
	free(buf);
	/* an old image's registers, wrong: refused as before */
	m.regs.len = 100;
	CU_ASSERT_EQUAL(ckpt_threads_check(&m, "x.img", err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "thread 0: registers are 100 bytes"));
}

/* Section indexes of a tree: names, duplicates per process, every process
 * complete. */
static void test_tree_sections(void)
{
	char name[48], err[256];
	struct ckpt_sec s = { .type = CKPT_SEC_PAGES, .index = ckpt_sec_index(2, 5) };
	CU_ASSERT_STRING_EQUAL(ckpt_sec_name(&s, name, sizeof(name)), "process 2 pages[5]");
	s.index = 5;
	CU_ASSERT_STRING_EQUAL(ckpt_sec_name(&s, name, sizeof(name)), "pages[5]");
	s = (struct ckpt_sec){ .type = CKPT_SEC_FILES, .index = ckpt_sec_index(1, 0) };
	CU_ASSERT_STRING_EQUAL(ckpt_sec_name(&s, name, sizeof(name)), "process 1 files");
	s = (struct ckpt_sec){ .type = CKPT_SEC_TREE };
	CU_ASSERT_STRING_EQUAL(ckpt_sec_name(&s, name, sizeof(name)), "tree");
	struct ckpt_header h = { .tree = 1 };
	s = (struct ckpt_sec){ .type = CKPT_SEC_PAGES, .index = ckpt_sec_index(3, 7) };
	CU_ASSERT_EQUAL(ckpt_sec_local(&h, &s), 7u);
	CU_ASSERT_EQUAL(ckpt_sec_proc(s.index), 3u);

	/* two processes, each with its metadata; the tree last */
	struct ckpt_sec secs[8];
	const uint32_t types[8] = { CKPT_SEC_PAGES, CKPT_SEC_PAGES, CKPT_SEC_META, CKPT_SEC_VMAS,
				    CKPT_SEC_FILES, CKPT_SEC_META, CKPT_SEC_VMAS, CKPT_SEC_FILES };
	const uint32_t procs[8] = { 0, 1, 0, 0, 0, 1, 1, 1 };
	size_t off = ckpt_header_size(8);
	unsigned char *img = calloc(1, off + 8 * 16);
	for (int i = 0; i < 8; i++) {
		secs[i] = (struct ckpt_sec){ .type = types[i], .index = ckpt_sec_index(procs[i], 0),
					     .offset = off, .length = 16 };
		secs[i].hash = ckpt_hash(img + off, 16);
		off += 16;
	}
	h = (struct ckpt_header){ .nsec = 8, .secs = secs, .file_size = off };
	struct ckpt_header out;
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, off, &out, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(ckpt_image_procs_check(&out, 2, err, sizeof(err)), 0);
	/* one process: process 1's metadata is out of place */
	CU_ASSERT_EQUAL(ckpt_image_procs_check(&out, 1, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "process 1 meta"));
	/* three: process 2 has nothing */
	CU_ASSERT_EQUAL(ckpt_image_procs_check(&out, 3, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "process 2 lacks"));
	ckpt_header_free(&out);
	secs[7].type = CKPT_SEC_VMAS; /* process 1's vmas twice */
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, off, &out, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "process 1 vmas appears twice"));
	secs[7].type = CKPT_SEC_FILES;
	secs[7].index = ckpt_sec_index(1, 3); /* metadata with a page number */
	ckpt_image_write_header(&h, img);
	CU_ASSERT_EQUAL(ckpt_image_read_header(img, off, &out, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "has index"));
	free(img);
}

static void test_tree_table(void)
{
	Storm__Ckpt__Process p[3];
	Storm__Ckpt__Process *pp[3] = { &p[0], &p[1], &p[2] };
	Storm__Ckpt__Tree t = STORM__CKPT__TREE__INIT;
	char err[256];
	for (int i = 0; i < 3; i++)
		storm__ckpt__process__init(&p[i]);
	p[0] = (Storm__Ckpt__Process){ p[0].base, 100, -1, 90, 80 };
	p[1] = (Storm__Ckpt__Process){ p[1].base, 101, 0, 90, 80 };
	p[2] = (Storm__Ckpt__Process){ p[2].base, 102, 1, 102, 80 }; /* leads its own group */
	t.procs = pp;
	t.n_procs = 3;
	CU_ASSERT_EQUAL(ckpt_tree_check(&t, err, sizeof(err)), 0);
	p[2].parent = 2; /* not before it */
	CU_ASSERT_EQUAL(ckpt_tree_check(&t, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "process 2 (pid 102)"));
	p[2].parent = 1;
	p[2].pgid = 50; /* another process's group */
	CU_ASSERT_EQUAL(ckpt_tree_check(&t, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "process group"));
	p[2].pgid = 90;
	p[2].sid = 81;
	CU_ASSERT_EQUAL(ckpt_tree_check(&t, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "session"));
	p[2].sid = 80;
	p[2].pid = 101;
	CU_ASSERT_EQUAL(ckpt_tree_check(&t, err, sizeof(err)), -EINVAL);
	p[2].pid = 102;
	p[0].parent = 0;
	CU_ASSERT_EQUAL(ckpt_tree_check(&t, err, sizeof(err)), -EINVAL);
	p[0].parent = -1;
	t.n_procs = 0;
	CU_ASSERT_EQUAL(ckpt_tree_check(&t, err, sizeof(err)), -EINVAL);
	CU_ASSERT_PTR_NULL(ckpt_tree_refusal(5, 5, 1, 4, 1));
	CU_ASSERT_PTR_NULL(ckpt_tree_refusal(5, 4, 1, 4, 1));
	CU_ASSERT_PTR_NOT_NULL(ckpt_tree_refusal(5, 3, 1, 4, 1));
}


void add_ckpt_image_suite(void)
{
	CU_pSuite s = CU_add_suite("ckpt_image", NULL, NULL);
	CU_add_test(s, "round trip", test_roundtrip);
	CU_add_test(s, "every truncation", test_every_truncation);
	CU_add_test(s, "bit flip per section", test_bit_flip_per_section);
	CU_add_test(s, "malformed tables", test_bad_tables);
	CU_add_test(s, "maps lines", test_maps_line);
	CU_add_test(s, "syscall restart fix-up", test_restart_fixup);
	CU_add_test(s, "glibc tid field", test_tid_offset);
	CU_add_test(s, "meta threads", test_meta_threads);
	CU_add_test(s, "tree sections", test_tree_sections);
	CU_add_test(s, "tree table", test_tree_table);
}
