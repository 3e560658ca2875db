/* The virtual cluster's own munged (MUNGE credentials for control requests,
 * common/ctl_auth.h): its key, socket, pid and seed live in DIR/munge, its
 * log in DIR/log/munged.log. */
#ifndef STORM_CLI_MUNGED_H
#define STORM_CLI_MUNGED_H

#include <stddef.h>

/* DIR/munge/munge.socket */
int munged_socket_path(const char *dir, char *out, size_t len);
/* Makes DIR/munge and a fresh key, starts munged and waits until it issues
 * credentials. 0, or -1 with the reason in err (then nothing is left
 * running). */
int munged_start(const char *dir, char *err, size_t errlen);
/* Stops the munged of DIR (if its pid file names one that serves DIR's
 * socket) and removes DIR/munge. Returns 1 if something was there. */
int munged_stop(const char *dir);

#endif
