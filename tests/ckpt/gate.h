/* Gates for the test programs: "hold K,K,..." on a program's command line
 * makes it wait after step K until the file gate.K exists in its working
 * directory. A test that must find the program still running at a check (a
 * checkpoint taken at step K) lets it go by creating the file once the
 * check is done, however slow the machine; a restart from an image taken
 * while it waited finds the file there and goes on. The output does not
 * change. Polled every 10 ms: cheap, and a nanosleep cut short by a
 * checkpoint's stop (EINTR) only polls sooner. */
#ifndef TEST_GATE_H
#define TEST_GATE_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* gate_listed: STEP is one of the comma-separated LIST (NULL: none) */
static int gate_listed(const char *list, long step)
{
	while (list && *list) {
		char *end;
		long k = strtol(list, &end, 10);
		if (end == list)
			return 0;
		if (k == step)
			return 1;
		list = *end == ',' ? end + 1 : end;
	}
	return 0;
}

/* gate_hold: after STEP, waits for gate.STEP if LIST names STEP */
static void gate_hold(const char *list, long step)
{
	char path[32];
	if (!gate_listed(list, step))
		return;
	snprintf(path, sizeof(path), "gate.%ld", step);
	while (access(path, F_OK) != 0) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
}

/* gate_arg: takes "hold LIST" out of ARGV at position I if it is there;
 * returns LIST (NULL if absent) and shifts the rest down over it */
static const char *gate_arg(int *argc, char **argv, int i)
{
	if (i + 1 >= *argc || argv[i][0] != 'h' || strcmp(argv[i], "hold"))
		return NULL;
	const char *list = argv[i + 1];
	for (int k = i; k + 2 <= *argc; k++)
		argv[k] = argv[k + 2];
	*argc -= 2;
	return list;
}
#endif
