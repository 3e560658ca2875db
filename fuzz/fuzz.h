/* Shared by the harnesses: a property check that fails loudly. A failed
 * property aborts, which libFuzzer records as a crash with its input. */
#ifndef STORM_FUZZ_H
#define STORM_FUZZ_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_ASSERT(cond, ...)                                                          \
	do {                                                                            \
		if (!(cond)) {                                                          \
			fprintf(stderr, "%s:%d: property failed: %s: ", __FILE__, __LINE__,  \
				#cond);                                                 \
			fprintf(stderr, __VA_ARGS__);                                   \
			fputc('\n', stderr);                                            \
			abort();                                                        \
		}                                                                       \
	} while (0)

/* A one-line reason: not empty, no newline. */
static inline int fuzz_one_line(const char *s)
{
	return s && s[0] && !strchr(s, '\n');
}
static inline const char *fuzz_show(const char *s)
{
	return s ? s : "(null)";
}
#define FUZZ_ONE_LINE(s) \
	FUZZ_ASSERT(fuzz_one_line(s), "reason is not one line: %s", fuzz_show(s))

#endif
