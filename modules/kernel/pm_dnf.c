/* SPDX-License-Identifier: MIT */
/*
 * kernel step, RHEL family (dnf, yum): exclude=kernel* in [main] of dnf.conf
 * (yum.conf), inside a managed block; an exclude= line hpcinit does not own is
 * never edited.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "kernel.h"

/* Is a dnf/yum exclude value covering every kernel package? */
static bool exclude_covers_kernel(const char *value)
{
	char *v = xstrdup(value), *save = NULL;
	bool ok = false;

	for (char *t = strtok_r(v, " ,\t", &save); t && !ok; t = strtok_r(NULL, " ,\t", &save))
		ok = fnmatch(t, "kernel", 0) == 0 && fnmatch(t, "kernel-core", 0) == 0 &&
		     fnmatch(t, "kernel-modules", 0) == 0;
	free(v);
	return ok;
}

struct ini_main {
	bool has_main;
	size_t end;             /* offset where [main] ends (next section or EOF) */
	char *foreign_exclude;  /* an exclude= line of [main] outside our block */
};

/* Look at [main] of an INI file, ignoring the text of our managed block. */
static void ini_scan_main(const char *text, const char *tag, struct ini_main *ret)
{
	char *begin = xasprintf("# BEGIN hpcinit %s", tag), *endm = xasprintf("# END hpcinit %s", tag);
	bool in_main = false, in_block = false;
	const char *p = text;

	memset(ret, 0, sizeof(*ret));
	ret->end = strlen(text);
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		const char *s = p;

		while (s < p + ll && (*s == ' ' || *s == '\t'))
			s++;
		if (ll == strlen(begin) && strncmp(p, begin, ll) == 0) {
			in_block = true;
		} else if (ll == strlen(endm) && strncmp(p, endm, ll) == 0) {
			in_block = false;
		} else if (!in_block && *s == '[') {
			if (in_main) {
				ret->end = (size_t)(p - text);
				break;
			}
			in_main = strncmp(s, "[main]", 6) == 0;
			ret->has_main |= in_main;
		} else if (!in_block && in_main &&
			   (strncmp(s, "exclude", 7) == 0 || strncmp(s, "excludepkgs", 11) == 0)) {
			const char *k = s + (strncmp(s, "excludepkgs", 11) == 0 ? 11 : 7);

			while (*k == ' ' || *k == '\t')
				k++;
			if (*k == '=' && !ret->foreign_exclude) {
				k++;
				while (*k == ' ' || *k == '\t')
					k++;
				ret->foreign_exclude = xstrndup(k, ll - (size_t)(k - p));
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	free(begin);
	free(endm);
}

/* New dnf.conf text with our block inside [main]; NULL when a foreign exclude= forbids it. */
static char *dnf_conf_apply(const char *old, const char *tag, struct ini_main *im)
{
	const char *body = "exclude=kernel*\n";
	char *blk, *cur;
	struct strbuf sb = STRBUF_INIT;

	ini_scan_main(old, tag, im);
	cur = managed_block_get(old, tag);
	if (cur) {
		free(cur);
		return managed_block_apply(old, tag, im->has_main ? body : "[main]\nexclude=kernel*\n");
	}
	blk = managed_block_apply("", tag, im->has_main ? body : "[main]\nexclude=kernel*\n");
	if (!im->has_main) {
		sb_append(&sb, old);
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			sb_append(&sb, "\n");
		sb_append(&sb, blk);
	} else {
		/* At the end of [main], before the next section. */
		size_t cut = im->end;

		sb_appendn(&sb, old, cut);
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			sb_append(&sb, "\n");
		sb_append(&sb, blk);
		sb_append(&sb, old + cut);
	}
	free(blk);
	return sb_steal(&sb);
}

static int hold_rhel(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	const char *path = fs_exists(c, "/etc/dnf/dnf.conf") ? "/etc/dnf/dnf.conf" :
			   fs_exists(c, "/etc/yum.conf") ? "/etc/yum.conf" : "/etc/dnf/dnf.conf";
	const char *tag = c->spec->cluster.name;
	struct ini_main im;
	char *old = NULL, *new_;
	int ret = fs_read(c, path, &old, NULL);

	if (ret < 0 && ret != -ENOENT) {
		report_finding(r, ST_FAILED, "kernel.hold.unreadable",
			       "cannot read %s: %s", path, strerror(-ret));
		return 0;
	}
	if (!old)
		old = xstrdup("");
	ini_scan_main(old, tag, &im);
	if (im.foreign_exclude && exclude_covers_kernel(im.foreign_exclude)) {
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: %s [main] has exclude=%s", path, im.foreign_exclude);
		free(im.foreign_exclude);
		free(old);
		return 0;
	}
	if (im.foreign_exclude) {
		/* dnf keeps only one exclude= per section: a second line would drop the user's. */
		report_finding(r, ST_FAILED, "kernel.hold.foreign-exclude",
			       "%s: [main] already has exclude=%s without kernel*; add kernel* to "
			       "that line (hpcinit does not edit lines it does not own)", path, im.foreign_exclude);
		free(im.foreign_exclude);
		free(old);
		return 0;
	}
	new_ = dnf_conf_apply(old, tag, &im);
	free(im.foreign_exclude);
	if (strcmp(new_, old) == 0) {
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: %s [main] excludes kernel* (hpcinit block)", path);
		ret = 0;
	} else {
		char *dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));

		ret = fs_mkdir_p(c, r, dir, 0755, 0, 0);
		free(dir);
		if (ret >= 0)
			ret = fs_write(c, r, path, new_, strlen(new_), 0644, FS_KEEP_OWNER, FS_KEEP_OWNER);
		if (ret > 0 && !ctx_may_write(c))
			report_finding(r, ST_CHANGED, "kernel.hold.missing",
				       "kernel not held: %s has no exclude=kernel* in [main]", path);
		else if (ret > 0)
			report_finding(r, ST_OK, "kernel.hold.ok",
				       "held: exclude=kernel* added to [main] of %s", path);
	}
	free(new_);
	free(old);
	return ret < 0 ? ret : 0;
}

static int release_rhel(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	static const char *const paths[] = { "/etc/dnf/dnf.conf", "/etc/yum.conf" };
	const char *tag = c->spec->cluster.name;
	int ret = 0;

	for (size_t i = 0; i < 2 && ret >= 0; i++) {
		char *old = NULL, *ours;
		struct ini_main im;

		if (fs_read(c, paths[i], &old, NULL) < 0)
			continue;
		ours = managed_block_get(old, tag);
		if (ours) {
			ret = fs_managed_block(c, r, paths[i], tag, "", 0644, FS_KEEP_OWNER, FS_KEEP_OWNER);
			if (ret >= 0)
				kernel_released(c, r, "hpcinit's exclude=kernel* block in %s", paths[i]);
			free(ours);
		}
		ini_scan_main(old, tag, &im);
		if (im.foreign_exclude && exclude_covers_kernel(im.foreign_exclude))
			report_finding(r, ST_OK, "kernel.hold.foreign",
				       "left alone: %s [main] has exclude=%s (not hpcinit's)", paths[i],
				       im.foreign_exclude);
		free(im.foreign_exclude);
		free(old);
	}
	return ret < 0 ? ret : 0;
}

const struct kernel_pm kernel_pm_dnf = {
	.release = release_rhel,
	.family = DISTRO_RHEL,
	.name = "dnf/yum",
	.db_open = kernel_pm_no_db,
	.db_close = kernel_pm_no_db_close,
	.installed = kernel_pm_no_installed,
	.hold = hold_rhel,
};
