/* storm.conf as every daemon and the CLI load it (common/config.c, inih).
 * Input: the file's text. Properties: it either loads or fails with one
 * line naming the file ("fuzz.conf:" and, for an error at a line, a line
 * number inside the text); a loaded configuration has every value in its
 * documented range and 1..1000 distinct nodes; writing it (conf_print) and
 * loading that gives the same configuration back, unless conf_print refuses
 * a value too long for a line (-ENAMETOOLONG). */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "fuzz.h"

static void same(const struct storm_conf *a, const struct storm_conf *b)
{
	FUZZ_ASSERT(!strcmp(a->name, b->name) && !strcmp(a->provider, b->provider) &&
			    !strcmp(a->sys_provider, b->sys_provider) &&
			    !strcmp(a->state_dir, b->state_dir) && !strcmp(a->socket, b->socket) &&
			    !strcmp(a->bootstrap, b->bootstrap),
		    "a string changed in the round trip ('%s' '%s' '%s' '%s' '%s' '%s')", a->name,
		    a->provider, a->sys_provider, a->state_dir, a->socket, a->bootstrap);
	FUZZ_ASSERT(a->timeslice_us == b->timeslice_us && a->down_after_ms == b->down_after_ms &&
			    a->report_every == b->report_every && a->fanout == b->fanout &&
			    a->op_timeout_ms == b->op_timeout_ms && a->kill_wait_ms == b->kill_wait_ms &&
			    a->cpus == b->cpus && a->quantum == b->quantum && a->mpl == b->mpl &&
			    a->policy == b->policy && a->switch_mode == b->switch_mode,
		    "a number changed in the round trip");
	FUZZ_ASSERT(a->nnodes == b->nnodes, "%d nodes became %d", a->nnodes, b->nnodes);
	for (int i = 0; i < a->nnodes; i++)
		FUZZ_ASSERT(!strcmp(a->nodes[i], b->nodes[i]), "node %d '%s' became '%s'", i,
			    a->nodes[i], b->nodes[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *text = malloc(size + 1);
	memcpy(text, data, size);
	text[size] = '\0';
	int lines = 1;
	for (size_t i = 0; i < size; i++)
		lines += text[i] == '\n' || text[i] == '\r';
	struct storm_conf c, d;
	char err[1024] = "";
	if (conf_load_string(text, "fuzz.conf", &c, err, sizeof(err)) < 0) {
		FUZZ_ONE_LINE(err);
		FUZZ_ASSERT(!strncmp(err, "fuzz.conf:", 10), "error '%s' does not name the file", err);
		char *end;
		long line = strtol(err + 10, &end, 10);
		if (end != err + 10 && *end == ':')
			FUZZ_ASSERT(line >= 1 && line <= lines, "error at line %ld of %d: %s", line,
				    lines, err);
		FUZZ_ASSERT(c.nodes == NULL, "a failed load kept its node list");
		free(text);
		return 0;
	}
	FUZZ_ASSERT(c.nnodes >= 1 && c.nnodes <= STORM_CONF_MAX_NODES, "%d nodes", c.nnodes);
	for (int i = 0; i < c.nnodes; i++) {
		size_t n = strnlen(c.nodes[i], HOSTNAME_MAX);
		FUZZ_ASSERT(n > 0 && n < HOSTNAME_MAX, "node name of %zu bytes", n);
		for (int j = 0; j < i; j++)
			FUZZ_ASSERT(strcmp(c.nodes[i], c.nodes[j]), "node '%s' twice", c.nodes[i]);
	}
	FUZZ_ASSERT(c.mpl >= 1 && c.mpl <= STORM_MAX_MPL && c.cpus >= 1 && c.fanout >= 2 &&
			    (uint64_t)c.report_every * c.timeslice_us * 2 <= (uint64_t)c.down_after_ms * 1000 &&
			    c.down_after == 0 && c.timeslice_us >= 100 &&
			    (c.policy != POLICY_FCFS || c.mpl == 1) && !strncmp(c.bootstrap, "dir:", 4),
		    "a value out of range was accepted");
	FUZZ_ASSERT(c.policy >= 0 && c.policy <= 1 && c.switch_mode >= 0 && c.switch_mode <= 1,
		    "enum out of range");

	char *out = NULL;
	size_t outlen = 0;
	FILE *f = open_memstream(&out, &outlen);
	FUZZ_ASSERT(f, "open_memstream");
	int rc = conf_print(&c, f);
	fclose(f);
	if (rc == -ENAMETOOLONG) { /* a value too long for a line: refused, not cut */
		conf_free(&c);
		free(out);
		free(text);
		return 0;
	}
	FUZZ_ASSERT(rc == 0, "conf_print: %d", rc);
	FUZZ_ASSERT(conf_load_string(out, "fuzz.conf", &d, err, sizeof(err)) == 0,
		    "what conf_print wrote does not load: %s\n--- written:\n%s--- from:\n%s", err,
		    out, text);
	same(&c, &d);
	conf_free(&d);
	conf_free(&c);
	free(out);
	free(text);
	return 0;
}
