/* SPDX-License-Identifier: MIT */
/*
 * Test shim, loaded with LD_PRELOAD: records that arrive in the shared
 * directory between a reader's listing and its reads (many nodes starting
 * at once), made to happen at one exact moment:
 *
 *   HPCINIT_LATE_SHIM=NAME:FROM:TO
 *
 * Before the first openat() of a file whose last path component is NAME,
 * every file in directory FROM is renamed into directory TO (one file
 * system).  So a reader that listed TO before that open does not see them,
 * and the record NAME it then reads is the newest.  Once per process.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int fired;

static void maybe_fire(const char *path)
{
	const char *conf = getenv("HPCINIT_LATE_SHIM"), *base = strrchr(path, '/');
	char name[256], from[PATH_MAX], to[PATH_MAX];
	const char *a, *b;
	DIR *d;
	struct dirent *e;

	base = base ? base + 1 : path;
	if (!conf || __atomic_load_n(&fired, __ATOMIC_ACQUIRE))
		return;
	a = strchr(conf, ':');
	b = a ? strchr(a + 1, ':') : NULL;
	if (!a || !b || (size_t)(a - conf) >= sizeof(name) || (size_t)(b - a - 1) >= sizeof(from) ||
	    strlen(b + 1) >= sizeof(to))
		return;
	memcpy(name, conf, (size_t)(a - conf));
	name[a - conf] = '\0';
	memcpy(from, a + 1, (size_t)(b - a - 1));
	from[b - a - 1] = '\0';
	strcpy(to, b + 1);
	if (strcmp(base, name) != 0 || __atomic_exchange_n(&fired, 1, __ATOMIC_ACQ_REL))
		return;
	d = opendir(from);
	while (d && (e = readdir(d))) {
		char src[PATH_MAX * 2], dst[PATH_MAX * 2];

		if (e->d_name[0] == '.')
			continue;
		snprintf(src, sizeof(src), "%s/%s", from, e->d_name);
		snprintf(dst, sizeof(dst), "%s/%s", to, e->d_name);
		if (rename(src, dst) != 0)
			perror("late_shim: rename");
	}
	if (d)
		closedir(d);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	static int (*real)(int, const char *, int, ...);
	mode_t mode = 0;
	va_list ap;

	if (!real)
		*(void **)&real = dlsym(RTLD_NEXT, "openat");
	if (flags & (O_CREAT | O_TMPFILE)) {
		va_start(ap, flags);
		mode = (mode_t)va_arg(ap, int);
		va_end(ap);
	}
	maybe_fire(path);
	return real(dirfd, path, flags, mode);
}
