/* The storm CLI's option parsing (cli/opts.c) and the raw strings it turns
 * into numbers (parse_uint) and signals (cli/fmt.c parse_signal). Input:
 * NUL-separated arguments; the first byte's low bit says whether options
 * stop at the first operand (run/submit). Properties: the parser never
 * indexes past argc, an option that takes a value returns one, an error
 * has a one-line reason; parse_uint accepts only decimal digits within
 * [min, max] and returns their value; parse_signal gives -1 or 1..SIGRTMAX. */
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "fmt.h"
#include "fuzz.h"
#include "opts.h"

enum { O_NODES = 1, O_NTASKS, O_LABEL, O_FILE, O_OVER, O_HELP };
static const struct cli_opt opts[] = {
	{"nodes", 'N', 1, O_NODES}, {"ntasks", 'n', 1, O_NTASKS}, {"label", 'l', 0, O_LABEL},
	{"file", 0, 1, O_FILE},     {"overcommit", 'O', 0, O_OVER}, {"help", 'h', 0, O_HELP},
	{NULL, 0, 0, 0},
};

static void check_uint(const char *s, uint64_t min, uint64_t max)
{
	uint64_t v = 12345;
	if (parse_uint(s, min, max, &v) != 0)
		return;
	FUZZ_ASSERT(v >= min && v <= max, "'%s' gave %llu outside [%llu, %llu]", s,
		    (unsigned long long)v, (unsigned long long)min, (unsigned long long)max);
	FUZZ_ASSERT(s[0] && strspn(s, "0123456789") == strlen(s), "'%s' accepted", s);
	uint64_t ref = 0;
	for (const char *p = s; *p; p++)
		ref = ref * 10 + (uint64_t)(*p - '0'); /* no overflow: v <= max fits */
	FUZZ_ASSERT(ref == v, "'%s' gave %llu", s, (unsigned long long)v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	int stop = data[0] & 1;
	char *buf = malloc(size);
	memcpy(buf, data + 1, size - 1);
	buf[size - 1] = '\0';
	char *argv[34];
	int argc = 0;
	argv[argc++] = "storm";
	for (char *p = buf; argc < 33 && p < buf + size - 1; p += strlen(p) + 1)
		argv[argc++] = p;
	argv[argc] = NULL;

	struct cli_optparse p;
	cli_opt_init(&p, argc, argv, 1, stop);
	for (int guard = 0; guard < 1000; guard++) {
		int id = cli_opt_next(&p, opts);
		FUZZ_ASSERT(p.ind <= argc, "index %d of %d arguments", p.ind, argc);
		if (id == OPT_DONE)
			break;
		if (id == OPT_ERROR) {
			FUZZ_ONE_LINE(p.err);
			break;
		}
		if (id == OPT_OPERAND) {
			FUZZ_ASSERT(!stop && p.arg, "operand");
			continue;
		}
		FUZZ_ASSERT(id >= O_NODES && id <= O_HELP, "id %d", id);
		if (id == O_NODES || id == O_NTASKS || id == O_FILE)
			FUZZ_ASSERT(p.arg != NULL, "option %d without its value", id);
		FUZZ_ASSERT(guard < 999, "the parser does not advance");
	}
	for (int i = 1; i < argc; i++) {
		check_uint(argv[i], 1, 1u << 20);
		check_uint(argv[i], 0, UINT64_MAX);
		int sig = parse_signal(argv[i]);
		FUZZ_ASSERT(sig == -1 || (sig >= 1 && sig <= SIGRTMAX), "'%s' gave signal %d",
			    argv[i], sig);
	}
	free(buf);
	return 0;
}
