/* An equivalent of OSU's osu_bibw (our own code): osu_bw.c with both
 * ranks streaming windows to each other at once. */
#define BIBW
#include "osu_bw.c"
