/* SIGCHLD's disposition for a daemon that reads it from a signalfd. */
#ifndef STORM_SIGCHLD_H
#define STORM_SIGCHLD_H
#include <stdbool.h>

/* SIGCHLD's disposition in a daemon that keeps it blocked and reads it from
 * a signalfd: reported for children that end, and also for those that stop
 * when stops is true. Changing it never discards a SIGCHLD already pending
 * (setting SIG_DFL would: its default action is to ignore the signal). */
void sigchld_notify(bool stops);

#endif
