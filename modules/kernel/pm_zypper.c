/* SPDX-License-Identifier: MIT */
/*
 * kernel step, SLES/openSUSE (zypper): a package lock for the running
 * kernel's flavour package in /etc/zypp/locks, inside a managed block.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "kernel.h"

#define ZYPP_LOCKS_PATH "/etc/zypp/locks"

/* SUSE names kernel packages by flavour: 5.14.21-150500.55.39-azure -> kernel-azure. */
static void suse_kernel_pkg(const char *rel, char *buf, size_t n)
{
	const char *dash = strrchr(rel, '-');
	bool alpha = dash && dash[1];

	for (const char *p = dash ? dash + 1 : ""; *p && alpha; p++)
		alpha = isalpha((unsigned char)*p) != 0;
	snprintf(buf, n, "kernel-%s", alpha ? dash + 1 : "default");
}

/* Does /etc/zypp/locks already lock pkg (by exact name or a glob that matches it)? */
static bool zypp_locked(const char *text, const char *pkg)
{
	bool locked = false;
	bool is_pkg = true, glob = true;
	char name[256] = "";
	const char *p = text;

	for (;;) {
		const char *nl = p ? strchr(p, '\n') : NULL;
		size_t ll = p ? (nl ? (size_t)(nl - p) : strlen(p)) : 0;
		bool end = !p || !*p;

		if (!end && p[0] == '#') {
			/* comments do not end an entry (libzypp PoolQuery::recover) */
		} else if (end || ll == 0 || memchr(p, ':', ll) == NULL) {
			if (name[0] && is_pkg &&
			    (glob ? fnmatch(name, pkg, 0) == 0 : strcmp(name, pkg) == 0))
				locked = true;
			name[0] = '\0';
			is_pkg = true;
			glob = true;
			if (end)
				break;
		} else {
			char key[64], val[256];
			const char *colon = memchr(p, ':', ll);
			size_t kl = (size_t)(colon - p), vl;
			const char *v = colon + 1;

			while (*v == ' ' && v < p + ll)
				v++;
			vl = ll - (size_t)(v - p);
			snprintf(key, sizeof(key), "%.*s", (int)(kl < 63 ? kl : 63), p);
			snprintf(val, sizeof(val), "%.*s", (int)(vl < 255 ? vl : 255), v);
			val[strcspn(val, " \t\r")] = '\0';
			if (strcmp(key, "solvable_name") == 0)
				snprintf(name, sizeof(name), "%s", val);
			else if (strcmp(key, "type") == 0)
				is_pkg = strcmp(val, "package") == 0;
			else if (strcmp(key, "match_type") == 0)
				glob = strcmp(val, "exact") != 0;
			else if (strcmp(key, "match_exact") == 0)
				glob = strcmp(val, "1") != 0 && strcmp(val, "true") != 0;
		}
		p = nl ? nl + 1 : NULL;
	}
	return locked;
}

static int hold_suse(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	char pkg[160], *old = NULL, *body, *new_, *zconf = NULL;
	int ret = fs_read(c, ZYPP_LOCKS_PATH, &old, NULL);

	suse_kernel_pkg(rel, pkg, sizeof(pkg));
	if (ret < 0 && ret != -ENOENT) {
		report_finding(r, ST_FAILED, "kernel.hold.unreadable",
			       "cannot read %s: %s", ZYPP_LOCKS_PATH, strerror(-ret));
		return 0;
	}
	if (!old)
		old = xstrdup("");
	/*
	 * Multiversion kernels: zypper update, dup and install keep the lock, but
	 * install --force installs a new kernel beside it (tests/system/
	 * kernel-hold-zypper.sh, zypper 1.14); openSUSE bug 1177262 is the caveat.
	 */
	if (fs_read(c, "/etc/zypp/zypp.conf", &zconf, NULL) == 0) {
		for (char *l = zconf; l && *l;) {
			char *nl = strchr(l, '\n');

			if (nl)
				*nl = '\0';
			if (strncmp(l, "multiversion", 12) == 0 && strstr(l, "multiversion(kernel)"))
				report_finding(r, ST_OK, "kernel.hold.warning",
					       "warning: /etc/zypp/zypp.conf installs kernels as multiversion: "
					       "zypper install --force puts a new %s beside the locked one "
					       "(update and dup keep the lock; openSUSE bug 1177262)", pkg);
			l = nl ? nl + 1 : NULL;
		}
		free(zconf);
	}
	if (zypp_locked(old, pkg)) {
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: %s locks %s", ZYPP_LOCKS_PATH, pkg);
		free(old);
		return 0;
	}
	/* Blank lines around the entry: zypp ends a lock at the first blank line. */
	body = xasprintf("\ntype: package\nmatch_type: exact\ncase_sensitive: on\nsolvable_name: %s\n\n", pkg);
	new_ = managed_block_apply(old, c->spec->cluster.name, body);
	ret = fs_mkdir_p(c, r, "/etc/zypp", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, ZYPP_LOCKS_PATH, new_, strlen(new_), 0644, FS_KEEP_OWNER, FS_KEEP_OWNER);
	if (ret > 0 && !ctx_may_write(c))
		report_finding(r, ST_CHANGED, "kernel.hold.missing",
			       "kernel not held: no lock for %s in %s", pkg, ZYPP_LOCKS_PATH);
	else if (ret > 0)
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: lock for %s added to %s", pkg, ZYPP_LOCKS_PATH);
	free(body);
	free(new_);
	free(old);
	return ret < 0 ? ret : 0;
}

static int release_suse(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	char pkg[160], *old = NULL, *ours;
	int ret = fs_read(c, ZYPP_LOCKS_PATH, &old, NULL);

	suse_kernel_pkg(rel, pkg, sizeof(pkg));
	if (ret < 0)
		return ret == -ENOENT ? 0 : ret;
	ours = managed_block_get(old, c->spec->cluster.name);
	if (ours) {
		char *rest = managed_block_apply(old, c->spec->cluster.name, "");

		ret = fs_managed_block(c, r, ZYPP_LOCKS_PATH, c->spec->cluster.name, "", 0644,
				       FS_KEEP_OWNER, FS_KEEP_OWNER);
		if (ret >= 0)
			kernel_released(c, r, "hpcinit's lock block in %s", ZYPP_LOCKS_PATH);
		if (zypp_locked(rest, pkg))
			report_finding(r, ST_OK, "kernel.hold.foreign",
				       "left alone: another lock in %s still locks %s (not hpcinit's)",
				       ZYPP_LOCKS_PATH, pkg);
		free(rest);
		free(ours);
	} else if (zypp_locked(old, pkg)) {
		report_finding(r, ST_OK, "kernel.hold.foreign",
			       "left alone: %s locks %s (not hpcinit's)", ZYPP_LOCKS_PATH, pkg);
	}
	free(old);
	return ret < 0 ? ret : 0;
}

const struct kernel_pm kernel_pm_zypper = {
	.release = release_suse,
	.family = DISTRO_SUSE,
	.name = "zypper",
	.db_open = kernel_pm_no_db,
	.db_close = kernel_pm_no_db_close,
	.installed = kernel_pm_no_installed,
	.hold = hold_suse,
};
