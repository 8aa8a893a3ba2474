/* SPDX-License-Identifier: MIT */
/*
 * Fake-root helpers for unit tests that #include a module: make files under a
 * temporary root, read them back, remove the root.  Needs fsutil and proc.
 */
#ifndef HPCINIT_TESTFS_H
#define HPCINIT_TESTFS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "proc.h"
#include "strbuf.h"

/* Write text to root+rel, creating the parent directories (0755). */
static inline void test_put(const char *root, const char *rel, const char *text)
{
	char *p = fs_rooted(root, rel);
	char *dir = xstrdup(p);
	FILE *f;

	*strrchr(dir, '/') = '\0';
	for (char *q = dir + strlen(root) + 1; *q; q++)
		if (*q == '/') {
			*q = '\0';
			mkdir(dir, 0755);
			*q = '/';
		}
	mkdir(dir, 0755);
	f = fopen(p, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	free(dir);
	free(p);
}

/* The content of root+rel (malloc'd), or NULL. */
static inline char *test_get(const char *root, const char *rel)
{
	char *p = fs_rooted(root, rel), *text = NULL;

	if (fs_read_host(p, FS_MAX_READ, &text, NULL) < 0)
		text = NULL;
	free(p);
	return text;
}

static inline void test_rm_rf(const char *root)
{
	const char *const argv[] = { "rm", "-rf", root, NULL };
	struct proc_result pr;

	if (proc_run(argv, NULL, NULL, 30000, &pr) == 0)
		proc_result_free(&pr);
}

#endif
