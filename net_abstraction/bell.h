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
 * nothing: a stray one costs a wake-up, never a message.
 *
 * The bell also carries the one request that needs a peer on the same host:
 * "give me your global memory". The answer passes the memory's descriptor
 * (SCM_RIGHTS), so that the asker writes into it with a plain copy instead
 * of the kernel's cross-process copy. The kernel stamps every datagram with
 * its sender's credentials and its bound name, which nobody else can hold
 * while the owner lives: the receiver knows who asks and who answers. */
#ifndef STORM_BELL_H
#define STORM_BELL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

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

/* What a bell's datagram was, besides a wake-up. */
enum bell_kind {
	BELL_RING = 1,
	BELL_ASK_MAP = 2,  /* the sender asks for our global memory */
	BELL_GIVE_MAP = 3, /* the sender's global memory: fd */
};

/* Called by bell_drain for each request or answer: from is the sender's
 * address (up to its NUL), uid the user it runs as (the kernel's word), fd
 * the descriptor it passed (BELL_GIVE_MAP; -1 otherwise), which the
 * callee owns from then on. */
typedef void (*bell_fn)(void *arg, enum bell_kind kind, const char *from, uid_t uid, int fd);

/* Takes every pending datagram, so that the descriptor is readable again
 * only for rings that come after. Call before looking at the queue the rings
 * are about: a ring that came before the look is then never lost. Requests
 * and answers go to fn (NULL: dropped, their descriptors closed). Returns
 * the number taken. */
int bell_drain(int fd, bell_fn fn, void *arg);

/* Asks the owner of the bell at addr for its global memory (BELL_ASK_MAP).
 * 0 or -errno, as bell_ring. */
int bell_ask_map(int fd, const void *addr, size_t alen);

/* Answers such a request: passes mem_fd to the bell named from. 0 or -errno. */
int bell_give_map(int fd, const char *from, int mem_fd);

#endif
