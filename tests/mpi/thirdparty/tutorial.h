/* What the mpitutorial.com example equivalents share (our own code): the
 * seed of rand(). The originals seed with time(NULL); ours take an optional
 * seed argument instead, so that two builds and two runs draw the same
 * numbers and their outputs can be compared. */
#ifndef THIRDPARTY_TUTORIAL_H
#define THIRDPARTY_TUTORIAL_H

#include <stdlib.h>
#include <time.h>

/* argv[i] when present, else the time, as the originals */
static inline unsigned tutorial_seed(int argc, char **argv, int i)
{
	return i < argc ? (unsigned)strtoul(argv[i], NULL, 10) : (unsigned)time(NULL);
}

#endif
