/* SIGCHLD for a signalfd reader (sigchld.h). */
#include "sigchld.h"

#include <signal.h>
#include <stddef.h>

/* Never runs while SIGCHLD is blocked; it exists so that the disposition
 * is "caught", which the kernel does not flush pending signals for. */
static void on_sigchld(int sig)
{
	(void)sig;
}

void sigchld_notify(bool stops)
{
	struct sigaction chld = { .sa_handler = on_sigchld, .sa_flags = stops ? 0 : SA_NOCLDSTOP };
	sigemptyset(&chld.sa_mask);
	sigaction(SIGCHLD, &chld, NULL);
}
