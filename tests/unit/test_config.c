/* Host lists and storm.conf parsing. */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "hostlist.h"
#include "suites.h"

static char names[2000][HOSTNAME_MAX];
static char err[512];

/* c written to path and read back into d */
static void reread(const struct storm_conf *c, const char *path, struct storm_conf *d)
{
	char err[512];
	CU_ASSERT_EQUAL(conf_write(c, path), 0);
	CU_ASSERT_EQUAL_FATAL(conf_load(path, d, err, sizeof(err)), 0);
}

static void test_expand(void)
{
	CU_ASSERT_EQUAL(hostlist_expand("node[00-03],login,gpu[1,3-4]x", names, 2000, err,
					sizeof(err)), 8);
	const char *want[] = { "node00", "node01", "node02", "node03",
			       "login",  "gpu1x",  "gpu3x",  "gpu4x" };
	for (int i = 0; i < 8; i++)
		CU_ASSERT_STRING_EQUAL(names[i], want[i]);
	CU_ASSERT_EQUAL(hostlist_expand(" a , b ", names, 2000, err, sizeof(err)), 2);
	CU_ASSERT_STRING_EQUAL(names[1], "b");
	CU_ASSERT_EQUAL(hostlist_expand("n[8-11]", names, 2000, err, sizeof(err)), 4);
	CU_ASSERT_STRING_EQUAL(names[3], "n11");
	CU_ASSERT_EQUAL(hostlist_expand("n[0-999]", names, 2000, err, sizeof(err)), 1000);
	/* several ranges in one name, as Slurm expands them (found by fuzz/hostlist) */
	CU_ASSERT_EQUAL(hostlist_expand("r[1-2]n[01-03]", names, 2000, err, sizeof(err)), 6);
	CU_ASSERT_STRING_EQUAL(names[0], "r1n01");
	CU_ASSERT_STRING_EQUAL(names[5], "r2n03");
	/* the largest number: one name, not a wrap to 0, 1, ... */
	CU_ASSERT_EQUAL(hostlist_expand("x[18446744073709551615]", names, 2000, err, sizeof(err)), 1);
	CU_ASSERT_STRING_EQUAL(names[0], "x18446744073709551615");
	CU_ASSERT_EQUAL(hostlist_expand("x[18446744073709551616]", names, 2000, err, sizeof(err)), -1);
}

static void test_expand_bad(void)
{
	const char *bad[] = { "n[0-3",   "n[3-1]",  "n[a]",  "n[1-]", "a,,b",
			      "n[1,1]",  "a,a",     "n[0-5000]", "",
			      "a]",      "n[1-2]x]", "n[]",    "n[1]m[]" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		err[0] = '\0';
		CU_ASSERT_EQUAL(hostlist_expand(bad[i], names, 2000, err, sizeof(err)), -1);
		CU_ASSERT(err[0] != '\0');
	}
	/* limit respected */
	CU_ASSERT_EQUAL(hostlist_expand("n[0-9]", names, 5, err, sizeof(err)), -1);
}

static void roundtrip(const char *spec, const char *want)
{
	int n = hostlist_expand(spec, names, 2000, err, sizeof(err));
	CU_ASSERT_FATAL(n > 0);
	const char *ptrs[2000];
	for (int i = 0; i < n; i++)
		ptrs[i] = names[i];
	char out[256];
	hostlist_compress(ptrs, n, out, sizeof(out));
	CU_ASSERT_STRING_EQUAL(out, want);
}

static void test_compress(void)
{
	roundtrip("node[00-03]", "node[00-03]");
	roundtrip("node00,node01,node02,node05,node06", "node[00-02,05-06]");
	roundtrip("login,n[1-2],x", "login,n[1-2],x");
	roundtrip("n1", "n1");
	roundtrip("n9,n10", "n9,n10"); /* different widths are different runs */
	/* truncation keeps a terminated string */
	const char *p[] = { "aaaaaaaa", "bbbbbbbb" };
	char small[6];
	size_t w = hostlist_compress(p, 2, small, sizeof(small));
	CU_ASSERT_EQUAL(w, 17);
	CU_ASSERT_EQUAL(strlen(small), 5);
}

static void test_conf_good(void)
{
	struct storm_conf c;
	CU_ASSERT_EQUAL_FATAL(
		conf_load_string("[cluster]\nname = v\ntimeslice_us = 2000 ; 2 ms\n"
				 "provider = shm\n[scheduler]\nmpl = 3\nquantum = 4\n"
				 "min_timeslice_us = 500\nswitch = freezer\n[nodes]\nnames = n[0-7]\ncpus = 2\n"
				 "[metrics]\nport = 9100\naddress = 0.0.0.0\n",
				 "t.conf", &c, err, sizeof(err)),
		0);
	CU_ASSERT_STRING_EQUAL(c.name, "v");
	CU_ASSERT_STRING_EQUAL(c.provider, "shm");
	CU_ASSERT_EQUAL(c.timeslice_us, 2000);
	CU_ASSERT_EQUAL(c.cpus, 2);
	CU_ASSERT_EQUAL(c.nnodes, 8);
	CU_ASSERT_EQUAL(conf_node_index(&c, "n7"), 7);
	CU_ASSERT_EQUAL(conf_node_index(&c, "n8"), -1);
	CU_ASSERT_EQUAL(c.down_after_ms, 5000); /* default kept */
	CU_ASSERT_EQUAL(c.mpl, 3);
	CU_ASSERT_EQUAL(c.quantum, 4);
	CU_ASSERT_EQUAL(c.min_timeslice_us, 500);
	CU_ASSERT_EQUAL(c.policy, POLICY_GANG);
	CU_ASSERT_EQUAL(c.switch_mode, SWITCH_FREEZER);

	/* written and read back to the same values */
	char path[] = "/tmp/storm-conf-test-XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	CU_ASSERT_EQUAL(conf_write(&c, path), 0);
	struct storm_conf d;
	CU_ASSERT_EQUAL_FATAL(conf_load(path, &d, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(d.provider, c.provider);
	CU_ASSERT_EQUAL(d.timeslice_us, c.timeslice_us);
	CU_ASSERT_EQUAL(d.nnodes, c.nnodes);
	CU_ASSERT_EQUAL(d.mpl, 3);
	CU_ASSERT_EQUAL(d.quantum, 4);
	CU_ASSERT_EQUAL(d.min_timeslice_us, 500);
	CU_ASSERT_EQUAL(d.switch_mode, SWITCH_FREEZER);
	CU_ASSERT_STRING_EQUAL(d.nodes[5], "n5");
	CU_ASSERT_EQUAL(d.metrics_port, 9100);
	CU_ASSERT_STRING_EQUAL(d.metrics_address, "0.0.0.0");
	CU_ASSERT_STRING_EQUAL(d.database, ""); /* default: <state_dir>/mm.db */
	CU_ASSERT_EQUAL(d.database_sync, DB_SYNC_NORMAL);
	conf_free(&d);
	/* the MM's database settings read back too */
	snprintf(c.database, sizeof(c.database), "/var/lib/storm/x.db");
	c.database_sync = DB_SYNC_FULL;
	CU_ASSERT_EQUAL(conf_write(&c, path), 0);
	CU_ASSERT_EQUAL_FATAL(conf_load(path, &d, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(d.database, "/var/lib/storm/x.db");
	CU_ASSERT_EQUAL(d.database_sync, DB_SYNC_FULL);
	CU_ASSERT_EQUAL(d.checkpoint_copies, 1); /* the default */
	CU_ASSERT_EQUAL(d.bcs_data_tags, 1);
	CU_ASSERT_EQUAL(d.bcs_rank_writes, 1); /* the default */
	CU_ASSERT_EQUAL(d.job_end_combined, 1); /* the default */
	conf_free(&d);
	/* buddy copies of checkpoints turned off reads back off, untagged
	 * BCS-MPI data untagged, each on its own */
	c.checkpoint_copies = 0;
	reread(&c, path, &d);
	CU_ASSERT_EQUAL(d.checkpoint_copies, 0);
	CU_ASSERT_EQUAL(d.bcs_data_tags, 1);
	conf_free(&d);
	c.checkpoint_copies = 1;
	c.bcs_data_tags = 0;
	reread(&c, path, &d);
	CU_ASSERT_EQUAL(d.checkpoint_copies, 1);
	CU_ASSERT_EQUAL(d.bcs_data_tags, 0);
	CU_ASSERT_EQUAL(d.bcs_rank_writes, 1);
	conf_free(&d);
	/* the daemons' path for every byte, the one that tags it all, reads back */
	c.bcs_rank_writes = 0;
	reread(&c, path, &d);
	CU_ASSERT_EQUAL(d.bcs_rank_writes, 0);
	CU_ASSERT_EQUAL(d.bcs_data_tags, 0);
	conf_free(&d);
	/* each node's end reported, as before the combined end, reads back */
	c.job_end_combined = 0;
	reread(&c, path, &d);
	CU_ASSERT_EQUAL(d.job_end_combined, 0);
	unlink(path);
	conf_free(&c);
	conf_free(&d);
}

static void expect_bad(const char *text, const char *fragment);

static void test_database_keys(void)
{
	expect_bad("[cluster]\ndatabase_sync = sometimes\n[nodes]\nnames = a\n", "database_sync");
	expect_bad("[cluster]\ncheckpoint_copies = 2\n[nodes]\nnames = a\n", "checkpoint_copies");
	expect_bad("[cluster]\nbcs_data_tags = yes\n[nodes]\nnames = a\n", "bcs_data_tags");
	expect_bad("[cluster]\nbcs_rank_writes = 2\n[nodes]\nnames = a\n", "bcs_rank_writes");
}

static void expect_bad(const char *text, const char *fragment)
{
	struct storm_conf c;
	err[0] = '\0';
	CU_ASSERT_EQUAL(conf_load_string(text, "bad.conf", &c, err, sizeof(err)), -1);
	if (!strstr(err, fragment))
		fprintf(stderr, "\n  error '%s' lacks '%s'\n", err, fragment);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, fragment));
}

/* bootstrap defaults to mm once mm_address names the MM, else to dir: */
static void test_bootstrap_default(void)
{
	struct storm_conf c;
	char err[512], host[256], port[16];
	CU_ASSERT_EQUAL_FATAL(conf_load_string("[nodes]\nnames=a\n", "t", &c, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.bootstrap, "dir:/run/storm/fabric");
	conf_free(&c);
	CU_ASSERT_EQUAL_FATAL(conf_load_string("[cluster]\nmm_address = [::1]:7001\n[nodes]\n"
					       "names=a\n", "t", &c, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.bootstrap, "mm");
	CU_ASSERT_EQUAL(conf_address(c.mm_address, host, sizeof(host), port, sizeof(port)), 0);
	CU_ASSERT_STRING_EQUAL(host, "::1");
	CU_ASSERT_STRING_EQUAL(port, "7001");
	conf_free(&c);
	CU_ASSERT_EQUAL_FATAL(conf_load_string("[cluster]\nmm_address = mm.example:7001\n"
					       "bootstrap = dir:/x\n[nodes]\nnames=a\n", "t", &c,
					       err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.bootstrap, "dir:/x");
	CU_ASSERT_EQUAL(conf_address(c.mm_address, host, sizeof(host), port, sizeof(port)), 0);
	CU_ASSERT_STRING_EQUAL(host, "mm.example");
	conf_free(&c);
}

/* HOST:PORT as mm_address, ctl_address and STORM_MM take it */
static void test_address(void)
{
	char host[256], port[16];
	CU_ASSERT_EQUAL(conf_address("127.0.0.1:7010", host, sizeof(host), port, sizeof(port)), 0);
	CU_ASSERT_STRING_EQUAL(host, "127.0.0.1");
	CU_ASSERT_STRING_EQUAL(port, "7010");
	CU_ASSERT_EQUAL(conf_address("[fe80::1%eth0]:65535", host, sizeof(host), port,
				     sizeof(port)), 0);
	CU_ASSERT_STRING_EQUAL(host, "fe80::1%eth0");
	CU_ASSERT_STRING_EQUAL(port, "65535");
	CU_ASSERT_EQUAL(conf_address("mm.example.org:1", host, sizeof(host), port, sizeof(port)), 0);
	CU_ASSERT_STRING_EQUAL(host, "mm.example.org");
	const char *bad[] = { "",	 "mm",	      ":7000",	  "mm:",      "mm:0",	  "mm:65536",
			      "mm:7x",	 "mm:-1",     "::1:7000", "[::1]7000", "[::1",	  "[]:7000",
			      "a:b:7000" };
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (conf_address(bad[i], host, sizeof(host), port, sizeof(port)) != -1)
			CU_FAIL(bad[i]);
	/* a host too long for the caller's buffer is refused, not cut */
	CU_ASSERT_EQUAL(conf_address("abcdefgh:1", host, 8, port, sizeof(port)), -1);
	/* ctl_address reads and writes back */
	struct storm_conf c, d;
	CU_ASSERT_EQUAL_FATAL(conf_load_string("[cluster]\nctl_address = [::1]:7011\n"
					       "mm_address = [::1]:7010\n[nodes]\nnames=a\n", "t",
					       &c, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(c.ctl_address, "[::1]:7011");
	char path[] = "/tmp/storm-conf-test-XXXXXX";
	int fd = mkstemp(path);
	CU_ASSERT_FATAL(fd >= 0);
	close(fd);
	CU_ASSERT_EQUAL(conf_write(&c, path), 0);
	CU_ASSERT_EQUAL_FATAL(conf_load(path, &d, err, sizeof(err)), 0);
	CU_ASSERT_STRING_EQUAL(d.ctl_address, "[::1]:7011");
	unlink(path);
	conf_free(&c);
	conf_free(&d);
}

static void test_down_after(void)
{
	struct storm_conf c = { .timeslice_us = 1000, .down_after_ms = 5000 };
	CU_ASSERT_EQUAL(conf_down_slices(&c), 5000); /* 1 ms slices */
	c.timeslice_us = 10000;
	CU_ASSERT_EQUAL(conf_down_slices(&c), 500);
	c.timeslice_us = 3000; /* rounded up: never fewer slices than the time */
	c.down_after_ms = 10;
	CU_ASSERT_EQUAL(conf_down_slices(&c), 4);
	c.timeslice_us = 10000000; /* a slice longer than the bound: one */
	CU_ASSERT_EQUAL(conf_down_slices(&c), 1);
	c.timeslice_us = 100; /* the extremes do not overflow */
	c.down_after_ms = 3600000;
	CU_ASSERT_EQUAL(conf_down_slices(&c), 36000000);
	c.down_after_ms = UINT_MAX; /* converted from a large deprecated count */
	CU_ASSERT_EQUAL(conf_down_slices(&c), UINT_MAX);
	CU_ASSERT_EQUAL(conf_slices_to_ms(200, 10000), 2000);
	CU_ASSERT_EQUAL(conf_slices_to_ms(200, 1000), 200);
	CU_ASSERT_EQUAL(conf_slices_to_ms(3, 333), 1); /* 0.999 ms rounds up */
	CU_ASSERT_EQUAL(conf_slices_to_ms(1000000, 10000000), UINT_MAX);

	/* the deprecated key means what it meant at the file's timeslice,
	 * whichever comes first; it reads back as down_after_ms */
	char err[512];
	struct storm_conf d;
	const char *old = "[cluster]\ndown_after = 300\ntimeslice_us = 2000\n[nodes]\nnames=a\n";
	CU_ASSERT_EQUAL_FATAL(conf_load_string(old, "t.conf", &d, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(d.down_after_ms, 600);
	CU_ASSERT_EQUAL(d.down_after, 0);
	CU_ASSERT_EQUAL(conf_down_slices(&d), 300);
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);
	CU_ASSERT_EQUAL(conf_print(&d, f), 0);
	fclose(f);
	CU_ASSERT_PTR_NOT_NULL(strstr(text, "down_after_ms = 600\n"));
	CU_ASSERT_PTR_NULL(strstr(text, "down_after ="));
	free(text);
	conf_free(&d);
}

static void test_conf_bad(void)
{
	expect_bad("[cluster]\nctl_address = mm\n[nodes]\nnames=a\n",
		   "ctl_address must be HOST:PORT, not 'mm'");
	expect_bad("[cluster]\nctl_address = h:7\nmm_address = h:7\n[nodes]\nnames=a\n",
		   "ctl_address and mm_address are both 'h:7'");
	expect_bad("[cluster]\ntimeslice_us = 5\n[nodes]\nnames=a\n", "bad.conf:2: timeslice_us = 5 is out of range");
	expect_bad("[cluster]\nfanout = four\n[nodes]\nnames=a\n", "fanout must be a whole number");
	expect_bad("[cluster]\nfanout = -4\n[nodes]\nnames=a\n", "whole number");
	expect_bad("[cluster]\ncolour = red\n", "bad.conf:2: unknown key 'colour' in [cluster]");
	expect_bad("x = 1\n", "outside any section");
	expect_bad("[cluster]\nname = a\n", "no nodes");
	expect_bad("[nodes]\nnames = n[1-\n", "unclosed");
	expect_bad("[cluster]\nbootstrap = file:/x\n[nodes]\nnames=a\n",
		   "bootstrap must be mm, static:PORT or dir:PATH");
	expect_bad("[cluster]\nbootstrap = mm\n[nodes]\nnames=a\n", "needs mm_address");
	expect_bad("[cluster]\nmm_address = mm\n[nodes]\nnames=a\n", "must be HOST:PORT");
	expect_bad("[cluster]\nmm_address = h:0\n[nodes]\nnames=a\n", "must be HOST:PORT");
	expect_bad("[cluster]\nbootstrap = static:x\nmm_address = h:1\n[nodes]\nnames=a\n",
		   "needs a port");
	expect_bad("[cluster]\nbootstrap = static:7000\n[nodes]\nnames=a\n", "needs mm_address");
	expect_bad("[cluster\n", "syntax error");
	expect_bad("[cluster]\ndown_after = 10\nreport_every = 6\n[nodes]\nnames=a\n",
		   "report_every (6 timeslices of 10000 us) must be at most half of "
		   "down_after_ms (100)");
	expect_bad("[cluster]\ndown_after_ms = 50\n[nodes]\nnames=a\n",
		   "report_every (10 timeslices of 10000 us) must be at most half of "
		   "down_after_ms (50)");
	expect_bad("[cluster]\ndown_after = 10\ndown_after_ms = 900\n[nodes]\nnames=a\n",
		   "both down_after_ms and the deprecated down_after");
	expect_bad("[cluster]\ndown_after_ms = 0\n[nodes]\nnames=a\n",
		   "down_after_ms = 0 is out of range");
	expect_bad("[scheduler]\nmpl = 0\n[nodes]\nnames=a\n", "bad.conf:2: mpl = 0 is out of range [1, 16]");
	expect_bad("[scheduler]\nmpl = 17\n[nodes]\nnames=a\n", "mpl = 17 is out of range");
	expect_bad("[scheduler]\nquantum = 0\n[nodes]\nnames=a\n", "quantum = 0 is out of range");
	expect_bad("[scheduler]\nmin_timeslice_us = 99\n[nodes]\nnames=a\n",
		   "min_timeslice_us = 99 is out of range");
	expect_bad("[scheduler]\npolicy = lottery\n[nodes]\nnames=a\n",
		   "policy must be one of gang, fcfs, not 'lottery'");
	expect_bad("[scheduler]\nswitch = magic\n[nodes]\nnames=a\n",
		   "switch must be one of signals, freezer");
	expect_bad("[scheduler]\npolicy = fcfs\nmpl = 2\n[nodes]\nnames=a\n",
		   "policy = fcfs runs one job per node, so mpl must be 1");
	struct storm_conf c;
	CU_ASSERT_EQUAL_FATAL(conf_load_string("[scheduler]\npolicy = fcfs\n[nodes]\nnames=a\n",
					       "f.conf", &c, err, sizeof(err)), 0);
	CU_ASSERT_EQUAL(c.mpl, 1);
	conf_free(&c);
	CU_ASSERT_EQUAL(conf_load("/nonexistent/storm.conf", &c, err, sizeof(err)), -1);
	CU_ASSERT_PTR_NOT_NULL(strstr(err, "No such file"));
}

void add_config_suite(void)
{
	CU_pSuite s = CU_add_suite("hostlist+config", NULL, NULL);
	CU_add_test(s, "hostlist expand", test_expand);
	CU_add_test(s, "hostlist refuses malformed lists", test_expand_bad);
	CU_add_test(s, "hostlist compress", test_compress);
	CU_add_test(s, "config parses and round-trips", test_conf_good);
	CU_add_test(s, "config refuses bad input with file:line", test_conf_bad);
	CU_add_test(s, "down_after_ms in timeslices; the deprecated count converted",
		    test_down_after);
	CU_add_test(s, "database keys", test_database_keys);
	CU_add_test(s, "bootstrap default and mm_address", test_bootstrap_default);
	CU_add_test(s, "HOST:PORT addresses and ctl_address", test_address);
}
