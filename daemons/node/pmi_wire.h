/* PMI-1's simple wire protocol, the pure part: reading a request line's
 * fields, the process mapping MPICH reads to learn which ranks share a
 * node, and the key-value records a node contributes to a job's exchange.
 * No library serves this protocol (OpenPMIx carries only its client side),
 * so the daemons speak it; fuzzed and unit-tested. */
#ifndef STORM_PMI_WIRE_H
#define STORM_PMI_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define PMI_KVSNAME_MAX 64
#define PMI_KEY_MAX 64
#define PMI_VAL_MAX 1024
#define PMI_LINE_MAX (PMI_KEY_MAX + PMI_VAL_MAX + PMI_KVSNAME_MAX + 64)

/* Field `name` of a request line ("cmd=put kvsname=k key=a value=b c\n"):
 * fields are space-separated name=value words, except `value`, which runs
 * to the end of the line (values may hold spaces). 0 and the text in out;
 * -1 absent; -2 longer than max - 1 bytes. */
int pmi_wire_field(const char *line, const char *name, char *out, size_t max);
/* cmd=NAME is the line's command (or mcmd=NAME) */
int pmi_wire_is(const char *line, const char *cmd);

/* MPICH's PMI_process_mapping for ranks placed in blocks, count[i] on node
 * i: "(vector,(0,2,4),(2,1,3))" runs of nodes with equal counts. Returns
 * the length, or -1 when it does not fit in max. */
int pmi_wire_mapping(const uint32_t *count, size_t nnodes, char *out, size_t max);

/* A node's contribution: records "key\0value\0" in put order. */
/* Appends one; 0, or -1 when the buffer cannot grow. */
int pmi_kv_append(uint8_t **buf, size_t *len, size_t *cap, const char *key, const char *val);
/* Steps through records: returns 1 with *key and *val pointing into buf
 * and *off advanced, 0 at the end, -1 on a malformed record. */
int pmi_kv_next(const uint8_t *buf, size_t len, size_t *off, const char **key,
		const char **val);

/* An exchange's result: per node position, the bytes it contributed, as
 * records [u32 pos][u32 len][bytes] in position order. */
int pmi_xrec_next(const uint8_t *buf, size_t len, size_t *off, uint32_t *pos,
		  const uint8_t **data, uint32_t *dlen);

#endif
