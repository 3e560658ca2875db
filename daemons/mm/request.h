/* Decoding and checking a control request apart from the socket and the job
 * table, and decoding a node's report: pure, so the fuzz harnesses
 * (fuzz/ctl_request.c, fuzz/mm_report.c) drive exactly what the MM runs on
 * what a CLI or a node sends. */
#ifndef STORM_MM_REQUEST_H
#define STORM_MM_REQUEST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cluster.pb-c.h"
#include "config.h"
#include "control.pb-c.h"

#define PROTO_VERSION 1

/* Unpacks one Request frame. ERR_NONE with *out (free it with
 * storm__ctl__request__free_unpacked), or ERR_PROTOCOL with a one-line
 * reason in why: undecodable, another version, no known body. */
Storm__Ctl__ErrorCode mm_req_decode(const uint8_t *buf, size_t len, Storm__Ctl__Request **out,
				    char *why, size_t whylen);

/* What a valid job description asks for, counts filled in. */
struct submit_plan {
	uint32_t nodes, ranks;
};

/* The checks of a Submit that need neither the job table nor the files:
 * counts against the configuration, the room argv and environment take in
 * a launch command, paths and file names; nfds descriptors came with it.
 * ERR_NONE and *plan, or the error code and a one-line reason. */
Storm__Ctl__ErrorCode mm_req_check_submit(const struct storm_conf *conf,
					  const Storm__Job__Spec *s, int nfds,
					  struct submit_plan *plan, char *why, size_t whylen);
/* The signal of a Cancel; ERR_NONE or ERR_INVALID with why. */
Storm__Ctl__ErrorCode mm_req_check_cancel(const Storm__Ctl__Cancel *cn, char *why,
					  size_t whylen);

/* Unpacks the report of length len (the slot's length word) that follows
 * that word in a report slot of GM_REPORT_SLOT_SIZE bytes; NULL with a
 * reason in *why when it overflows the slot or does not decode. */
Storm__Cl__Report *mm_report_decode(const uint8_t *slot, uint32_t len, const char **why);

/* s as it may appear inside a one-line error message: control characters
 * (a newline in a file name) become '?', and at most len - 1 bytes. */
const char *mm_printable(const char *s, char *buf, size_t len);

/* The last component of a path (the string itself without a '/'). */
const char *mm_base_name(const char *p);
/* A name a node may create in a job directory. */
bool mm_plain_name(const char *s);

#endif
