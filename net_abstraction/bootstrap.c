/* Fabric address exchange through a directory (bootstrap.h). */
#include "bootstrap.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

static void addr_path(char *buf, size_t len, const char *dir, int rail, uint32_t node)
{
	if (snprintf(buf, len, "%s/addr.r%d.n%u", dir, rail, node) >= (int)len)
		buf[0] = '\0'; /* too long: opening "" fails cleanly */
}

int sn_boot_mkdir(const char *dir)
{
	char p[PATH_MAX];
	if (snprintf(p, sizeof(p), "%s", dir) >= (int)sizeof(p))
		return -ENAMETOOLONG;
	/* every missing component, parents first; 0755: peers of other users read it */
	for (char *s = p + 1;; s++) {
		if (*s != '/' && *s != '\0')
			continue;
		char c = *s;
		*s = '\0';
		if (mkdir(p, 0755) < 0 && errno != EEXIST)
			return -errno;
		*s = c;
		if (c == '\0')
			return 0;
	}
}

int sn_boot_publish(const char *dir, int rail, uint32_t node, const void *addr,
		    size_t len)
{
	char tmp[PATH_MAX + 16], path[PATH_MAX];
	addr_path(path, sizeof(path), dir, rail, node);
	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return -errno;
	ssize_t w = write(fd, addr, len);
	int err = w == (ssize_t)len ? 0 : (w < 0 ? -errno : -EIO);
	if (close(fd) && !err)
		err = -errno;
	/* rename makes the file appear whole to readers */
	if (!err && rename(tmp, path))
		err = -errno;
	if (err)
		unlink(tmp);
	return err;
}

int sn_boot_read(const char *dir, int rail, uint32_t node, uint8_t *out, size_t *len)
{
	char path[PATH_MAX];
	addr_path(path, sizeof(path), dir, rail, node);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	ssize_t r = read(fd, out, SN_ADDR_MAX);
	close(fd);
	if (r <= 0)
		return -EIO;
	*len = (size_t)r;
	return 0;
}

int sn_boot_parse_name(const char *name, int *rail, uint32_t *node)
{
	if (strncmp(name, "addr.r", 6))
		return -1;
	char *end;
	long r = strtol(name + 6, &end, 10);
	if (end == name + 6 || strncmp(end, ".n", 2))
		return -1;
	const char *n = end + 2;
	unsigned long v = strtoul(n, &end, 10);
	if (end == n || *end || r < 0 || r > 1 || v > UINT32_MAX)
		return -1; /* "addr.r0.n3.tmp123" and the like */
	*rail = (int)r;
	*node = (uint32_t)v;
	return 0;
}
