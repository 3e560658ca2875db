/* Pieces shared by the files_*.c files, which save and remake a process's
 * descriptors (their entry points are in internal.h). */
#ifndef STORM_CKPT_FILES_H
#define STORM_CKPT_FILES_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "ckpt.pb-c.h"
#include "fdinfo.h"

/* ---- dump */

struct ckpt_fdump {
	pid_t pid;
	const pid_t *tree;  /* the image's other processes */
	size_t ntree;
	Storm__Ckpt__FileTable *ft;
	int *memfd_fd;     /* ours, per ft->memfds: its content is read through it */
	char *err;
	size_t errlen;
};

/* One descriptor while it is judged (files_judge.c). */
struct ckpt_fent {
	int fd;
	char target[PATH_MAX];
	struct stat st;
	bool st_ok;
	struct ckpt_fdinfo fi;
	char *info;
	Storm__Ckpt__File *f;
};

/* *arrp, an array of n elements of size bytes, made one longer; 0 or -ENOMEM. */
int ckpt_files_grow(void *arrp, size_t n, size_t size);

/* e is a memfd ("/memfd:NAME (deleted)", a regular file). */
bool ckpt_files_is_memfd(const struct ckpt_fent *e);

/* A memfd of the image, from our descriptor of it (fd, taken over) whose
 * /proc name is target ("/memfd:NAME (deleted)"): its name, size, seals
 * and the pages that hold data (SEEK_DATA: a sparse memfd saves its holes
 * as nothing). */
int ckpt_files_memfd_add(struct ckpt_fdump *s, int fd, const char *target, const char *where);

/* The bytes buffered in pipe (or FIFO) id, copied with tee() from a
 * descriptor of it opened through /proc (so not taken out), packet by
 * packet for a pipe in packet mode. */
int ckpt_files_pipe_save(struct ckpt_fdump *s, const struct ckpt_fent *e, bool packets);

/* ---- restore */

/* The bytes pipe p had, written back into it through w (packet by packet
 * in packet mode). 0, or -1 with errno. */
int ckpt_files_pipe_fill(int w, const Storm__Ckpt__Pipe *p);

#endif
