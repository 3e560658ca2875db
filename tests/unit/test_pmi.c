/* PMI-1's wire protocol (the node daemon's pure part): request fields,
 * MPICH's process mapping, the records of a job's exchange; and the MPI a
 * program is linked with. */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../cli/mpidetect.h"
#include "../../daemons/node/pmi_wire.h"
#include "mpikind.h"
#include "suites.h"

static void test_fields(void)
{
	char v[32];
	const char *put = "cmd=put kvsname=storm_7 key=P0-businesscard value=port#1 x=y\n";
	CU_ASSERT(pmi_wire_is(put, "put"));
	CU_ASSERT(!pmi_wire_is(put, "pu"));
	CU_ASSERT(!pmi_wire_is(put, "get"));
	CU_ASSERT_EQUAL(pmi_wire_field(put, "kvsname", v, sizeof(v)), 0);
	CU_ASSERT_STRING_EQUAL(v, "storm_7");
	CU_ASSERT_EQUAL(pmi_wire_field(put, "key", v, sizeof(v)), 0);
	CU_ASSERT_STRING_EQUAL(v, "P0-businesscard");
	/* value runs to the end of the line, spaces and '=' included */
	CU_ASSERT_EQUAL(pmi_wire_field(put, "value", v, sizeof(v)), 0);
	CU_ASSERT_STRING_EQUAL(v, "port#1 x=y");
	/* a field named inside the value is not a field */
	CU_ASSERT_EQUAL(pmi_wire_field(put, "x", v, sizeof(v)), -1);
	CU_ASSERT_EQUAL(pmi_wire_field(put, "missing", v, sizeof(v)), -1);
	/* "key" does not match "kvsname"'s tail or a longer name */
	CU_ASSERT_EQUAL(pmi_wire_field("cmd=get mykey=a\n", "key", v, sizeof(v)), -1);
	CU_ASSERT_EQUAL(pmi_wire_field(put, "kvsname", v, 4), -2);
	CU_ASSERT(pmi_wire_is("cmd=barrier_in\n", "barrier_in"));
	CU_ASSERT(pmi_wire_is("mcmd=spawn\n", "spawn"));
	CU_ASSERT(!pmi_wire_is("xcmd=init\n", "init"));
	CU_ASSERT_EQUAL(pmi_wire_field("cmd=init pmi_version=1 pmi_subversion=1\n", "pmi_subversion",
				       v, sizeof(v)), 0);
	CU_ASSERT_STRING_EQUAL(v, "1");
}

static void test_mapping(void)
{
	char m[128];
	uint32_t even[] = {2, 2, 2, 2};
	CU_ASSERT(pmi_wire_mapping(even, 4, m, sizeof(m)) > 0);
	CU_ASSERT_STRING_EQUAL(m, "(vector,(0,4,2))");
	uint32_t uneven[] = {3, 2, 2};
	CU_ASSERT(pmi_wire_mapping(uneven, 3, m, sizeof(m)) > 0);
	CU_ASSERT_STRING_EQUAL(m, "(vector,(0,1,3),(1,2,2))");
	uint32_t mixed[] = {1, 2, 1};
	CU_ASSERT(pmi_wire_mapping(mixed, 3, m, sizeof(m)) > 0);
	CU_ASSERT_STRING_EQUAL(m, "(vector,(0,1,1),(1,1,2),(2,1,1))");
	CU_ASSERT_EQUAL(pmi_wire_mapping(mixed, 3, m, 12), -1);
}

static void test_records(void)
{
	uint8_t *b = NULL;
	size_t len = 0, cap = 0, off = 0;
	CU_ASSERT_EQUAL(pmi_kv_append(&b, &len, &cap, "a", "1"), 0);
	CU_ASSERT_EQUAL(pmi_kv_append(&b, &len, &cap, "bb", ""), 0);
	const char *k, *v;
	CU_ASSERT_EQUAL(pmi_kv_next(b, len, &off, &k, &v), 1);
	CU_ASSERT(!strcmp(k, "a") && !strcmp(v, "1"));
	CU_ASSERT_EQUAL(pmi_kv_next(b, len, &off, &k, &v), 1);
	CU_ASSERT(!strcmp(k, "bb") && !strcmp(v, ""));
	CU_ASSERT_EQUAL(pmi_kv_next(b, len, &off, &k, &v), 0);
	/* cut short: no terminator, and an empty key */
	off = 0;
	CU_ASSERT_EQUAL(pmi_kv_next(b, 3, &off, &k, &v), -1);
	off = 0;
	CU_ASSERT_EQUAL(pmi_kv_next((const uint8_t *)"\0x\0", 3, &off, &k, &v), -1);
	free(b);

	uint8_t r[32];
	uint32_t h[2] = {3, 2};
	memcpy(r, h, 8);
	memcpy(r + 8, "hi", 2);
	size_t o = 0;
	uint32_t pos, dl;
	const uint8_t *d;
	CU_ASSERT_EQUAL(pmi_xrec_next(r, 10, &o, &pos, &d, &dl), 1);
	CU_ASSERT(pos == 3 && dl == 2 && !memcmp(d, "hi", 2) && o == 10);
	CU_ASSERT_EQUAL(pmi_xrec_next(r, 10, &o, &pos, &d, &dl), 0);
	o = 0;
	CU_ASSERT_EQUAL(pmi_xrec_next(r, 9, &o, &pos, &d, &dl), -1); /* its length overruns */
	o = 0;
	CU_ASSERT_EQUAL(pmi_xrec_next(r, 5, &o, &pos, &d, &dl), -1); /* a header cut short */
}

static void test_kinds(void)
{
	CU_ASSERT_EQUAL(mpi_kind_parse("pmi1"), MPI_KIND_PMI1);
	CU_ASSERT_EQUAL(mpi_kind_parse("auto"), -1);
	CU_ASSERT_STRING_EQUAL(mpi_kind_name(MPI_KIND_PMIX), "pmix");
	CU_ASSERT_PTR_NULL(mpi_kind_no_checkpoint(MPI_KIND_BCS));
	CU_ASSERT_PTR_NULL(mpi_kind_no_checkpoint(MPI_KIND_NONE));
	CU_ASSERT_PTR_NOT_NULL(mpi_kind_no_checkpoint(MPI_KIND_PMI1));
	char lib[64];
	/* a program with no MPI, and what is not ELF at all */
	CU_ASSERT_EQUAL(mpi_detect("/bin/sh", lib, sizeof(lib)), MPI_FOUND_NONE);
	CU_ASSERT_STRING_EQUAL(lib, "");
	CU_ASSERT_EQUAL(mpi_detect("/etc/passwd", lib, sizeof(lib)), MPI_FOUND_NONE);
	CU_ASSERT_EQUAL(mpi_detect("/nonexistent", lib, sizeof(lib)), MPI_FOUND_NONE);
	CU_ASSERT_EQUAL(mpi_found_kind(MPI_FOUND_MPICH), MPI_KIND_PMI1);
	CU_ASSERT_EQUAL(mpi_found_kind(MPI_FOUND_OPENMPI), MPI_KIND_PMIX);
}

void add_pmi_suite(void)
{
	CU_pSuite s = CU_add_suite("pmi", NULL, NULL);
	CU_add_test(s, "request fields", test_fields);
	CU_add_test(s, "process mapping", test_mapping);
	CU_add_test(s, "exchange records", test_records);
	CU_add_test(s, "mpi kinds and detection", test_kinds);
}
