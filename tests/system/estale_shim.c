/* SPDX-License-Identifier: MIT */
/*
 * Test shim, loaded with LD_PRELOAD: a stand-in for what an NFS client
 * answers when another client replaces a file by rename while this one
 * reads it (the server deletes the old inode; this client's handle goes
 * stale).  The host kernel here has no NFS client, so the errno is made up:
 *
 *   HPCINIT_ESTALE_SHIM=NAME:OPENS:READS[:ERRNO]
 *
 * The first OPENS open() or openat() calls of a file whose last path
 * component is NAME fail with ESTALE; after that, the first READS read()
 * calls on a descriptor opened for NAME fail with ESTALE.  Counts are per
 * process.  ERRNO (a number, or ECONNABORTED or ENOTCONN) fails them with
 * that instead: what a FUSE client answers when its daemon goes
 * (discovery-unreachable.sh).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char shim_name[256];
static long opens_left, reads_left;
static int shim_errno = ESTALE;
static int configured;
static int watched[64];
static int nwatched;

static void configure(void)
{
	const char *v = getenv("HPCINIT_ESTALE_SHIM");
	char e[32] = "";

	configured = 1;
	if (!v || sscanf(v, "%255[^:]:%ld:%ld:%31s", shim_name, &opens_left, &reads_left, e) < 3)
		shim_name[0] = '\0';
	if (strcmp(e, "ECONNABORTED") == 0)
		shim_errno = ECONNABORTED;
	else if (strcmp(e, "ENOTCONN") == 0)
		shim_errno = ENOTCONN;
	else if (e[0])
		shim_errno = atoi(e);
}

static int is_watched(int fd)
{
	for (int i = 0; i < nwatched; i++)
		if (watched[i] == fd)
			return 1;
	return 0;
}

int openat(int dfd, const char *path, int flags, ...);
int openat(int dfd, const char *path, int flags, ...)
{
	static int (*real)(int, const char *, int, ...);
	const char *base = strrchr(path, '/');
	mode_t mode = 0;
	int fd;

	if (!real)
		real = (int (*)(int, const char *, int, ...))dlsym(RTLD_NEXT, "openat");
	if (!configured)
		configure();
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	base = base ? base + 1 : path;
	if (shim_name[0] && strcmp(base, shim_name) == 0 && opens_left > 0) {
		opens_left--;
		errno = shim_errno;
		return -1;
	}
	fd = real(dfd, path, flags, mode);
	if (fd >= 0 && shim_name[0] && strcmp(base, shim_name) == 0 && !is_watched(fd) &&
	    nwatched < (int)(sizeof(watched) / sizeof(watched[0])))
		watched[nwatched++] = fd;
	return fd;
}

int open(const char *path, int flags, ...);
int open(const char *path, int flags, ...)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | O_TMPFILE)) {
		va_list ap;

		va_start(ap, flags);
		mode = va_arg(ap, mode_t);
		va_end(ap);
	}
	return openat(AT_FDCWD, path, flags, mode);
}

ssize_t read(int fd, void *buf, size_t n);
ssize_t read(int fd, void *buf, size_t n)
{
	static ssize_t (*real)(int, void *, size_t);

	if (!real)
		real = (ssize_t (*)(int, void *, size_t))dlsym(RTLD_NEXT, "read");
	if (reads_left > 0 && is_watched(fd)) {
		reads_left--;
		errno = shim_errno;
		return -1;
	}
	return real(fd, buf, n);
}

int close(int fd);
int close(int fd)
{
	static int (*real)(int);

	if (!real)
		real = (int (*)(int))dlsym(RTLD_NEXT, "close");
	for (int i = 0; i < nwatched; i++)
		if (watched[i] == fd)
			watched[i] = watched[--nwatched];
	return real(fd);
}
