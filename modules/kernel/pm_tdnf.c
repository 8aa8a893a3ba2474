/* SPDX-License-Identifier: MIT */
/*
 * kernel step, Azure Linux (tdnf): /etc/tdnf/locks.d/hpcinit-kernel.conf
 * locks "kernel".  tdnf locks take exact names, no wildcards, so a glob in
 * another lock file is reported as locking nothing.
 */
#include "config.h"

#include <dirent.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "kernel.h"

#define TDNF_LOCK_PATH "/etc/tdnf/locks.d/hpcinit-kernel.conf"

/*
 * Every line of the other lock files in /etc/tdnf/locks.d (not ours), with
 * the file it is in; fn returns true to count the line.  The count.
 */
static unsigned each_foreign_lock(struct ctx *c, struct report *r,
				  bool (*fn)(struct report *r, const char *file, const char *line))
{
	char *dir = ctx_path(c, "/etc/tdnf/locks.d");
	DIR *d = opendir(dir);
	struct dirent *e;
	unsigned n = 0;

	while (d && (e = readdir(d))) {
		char *tp, *text = NULL;

		if (fnmatch("*.conf", e->d_name, 0) != 0 || strcmp(e->d_name, "hpcinit-kernel.conf") == 0)
			continue;
		tp = xasprintf("/etc/tdnf/locks.d/%s", e->d_name);
		if (fs_read(c, tp, &text, NULL) == 0) {
			for (char *l = text; l && *l;) {
				char *nl = strchr(l, '\n');

				if (nl)
					*nl = '\0';
				n += fn(r, tp, l);
				l = nl ? nl + 1 : NULL;
			}
		}
		free(text);
		free(tp);
	}
	if (d)
		closedir(d);
	free(dir);
	return n;
}

/* tdnf takes exact names only, so a glob in another lock file locks nothing. */
static bool locks_kernel_or_warn(struct report *r, const char *file, const char *l)
{
	if (strcmp(l, "kernel") == 0)
		return true;
	if (strpbrk(l, "*?["))
		report_finding(r, ST_OK, "kernel.hold.warning",
			       "warning: %s: '%s' locks nothing: tdnf locks.d takes "
			       "exact package names, no wildcards", file, l);
	return false;
}

/* Other lock files that lock kernel: not ours, named and left alone. */
static bool name_foreign(struct report *r, const char *file, const char *l)
{
	if (strcmp(l, "kernel") != 0 && strncmp(l, "kernel-", 7) != 0)
		return false;
	report_finding(r, ST_OK, "kernel.hold.foreign", "left alone: %s locks %s (not hpcinit's)", file, l);
	return true;
}

static int hold_azl(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	int ret;

	if (each_foreign_lock(c, r, locks_kernel_or_warn)) {
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: another file in /etc/tdnf/locks.d locks kernel");
		return 0;
	}
	ret = fs_mkdir_p(c, r, "/etc/tdnf/locks.d", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, TDNF_LOCK_PATH, "kernel\n", 7, 0644, 0, 0);
	if (ret > 0 && !ctx_may_write(c))
		report_finding(r, ST_CHANGED, "kernel.hold.missing",
			       "kernel not held: no tdnf lock for kernel (%s)", TDNF_LOCK_PATH);
	else if (ret >= 0)
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: %s locks kernel", TDNF_LOCK_PATH);
	return ret < 0 ? ret : 0;
}

static int release_azl(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	int ret = fs_exists(c, TDNF_LOCK_PATH) ? fs_remove(c, r, TDNF_LOCK_PATH) : 0;

	if (ret > 0)
		kernel_released(c, r, "%s (it locked kernel)", TDNF_LOCK_PATH);
	(void)each_foreign_lock(c, r, name_foreign);
	return ret < 0 ? ret : 0;
}

const struct kernel_pm kernel_pm_tdnf = {
	.release = release_azl,
	.family = DISTRO_AZL,
	.name = "tdnf",
	.db_open = kernel_pm_no_db,
	.db_close = kernel_pm_no_db_close,
	.installed = kernel_pm_no_installed,
	.hold = hold_azl,
};
