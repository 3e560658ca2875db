/* Fabric address exchange through a directory: each node publishes its
 * endpoint name as a file and reads everyone else's. The virtual cluster and
 * the tests give every process the same directory; on a real cluster every
 * host must see the same one (a shared file system). Nobody waits for the
 * files: rail.c reads what is there at start and the rest as it arrives. */
#ifndef STORM_BOOTSTRAP_H
#define STORM_BOOTSTRAP_H

#include <stddef.h>
#include <stdint.h>

#ifndef SN_ADDR_MAX
#define SN_ADDR_MAX 256
#endif

/* Makes the directory and its missing parents (a fresh host has none of
 * them), mode 0755. 0 or -errno. */
int sn_boot_mkdir(const char *dir);
int sn_boot_publish(const char *dir, int rail, uint32_t node, const void *addr,
		    size_t len);
/* Reads one published address (out: SN_ADDR_MAX bytes). 0 or -errno. */
int sn_boot_read(const char *dir, int rail, uint32_t node, uint8_t *out, size_t *len);
/* Parses a published file name "addr.r<rail>.n<node>"; 0 or -1. */
int sn_boot_parse_name(const char *name, int *rail, uint32_t *node);

#endif
