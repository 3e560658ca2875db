/* Doorbells for an endpoint whose provider gives no wait descriptor (shm).
 *
 * shm's completions appear only when its owner polls, so a daemon would have
 * to wake every millisecond just to look: a hop of the data path then costs
 * up to a millisecond, and on a host with fewer cores than daemons the
 * polling takes the CPU from the ranks the daemons serve. Instead each such
 * endpoint has a bell: a datagram socket in the abstract namespace, named
 * after the endpoint's fabric address, which a peer rings after it puts
 * something in the endpoint's queue. The owner sleeps on the bell like on a
 * wait descriptor.
 *
 * shm's peers are on one host by definition and the abstract namespace is
 * the network namespace's, so every shm peer reaches the bell. A ring carries
 * nothing: a stray one costs a wake-up, never a message. */
#ifndef STORM_BELL_H
#define STORM_BELL_H

#include <stddef.h>
#include <stdint.h>

/* Opens the bell of the endpoint whose fabric address is addr (its bytes up
 * to the first NUL or alen). Returns a non-blocking descriptor that is
 * readable while a ring is pending, or -errno (-EADDRINUSE: another
 * endpoint has that address). */
int bell_open(const void *addr, size_t alen);

/* Rings the bell of the endpoint at addr from our bell fd. 0, or -errno:
 * -ECONNREFUSED or -ENOENT when no such bell is open (the peer is gone, or
 * in another network namespace). A bell that already holds its fill of
 * rings (-EAGAIN) counts as rung: its owner has a wake-up pending. (So does
 * our own send buffer full of rings that peers have not read yet, which
 * takes a couple of hundred pending rings; that peer then wakes at its next
 * timed look.) */
int bell_ring(int fd, const void *addr, size_t alen);

/* Takes every pending ring, so that the descriptor is readable again only
 * for rings that come after. Call before looking at the queue the rings are
 * about: a ring that came before the look is then never lost. Returns the
 * number taken. */
int bell_drain(int fd);

#endif
