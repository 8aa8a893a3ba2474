/* SPDX-License-Identifier: MIT */
/*
 * kernel step, RHEL family (dnf, yum): hpcinit's own exclude line in [main]
 * of dnf.conf (yum.conf), inside a managed block; a line hpcinit does not own
 * is never edited.
 *
 * How dnf 4 (libdnf's ConfigParser) reads [main], checked with the real dnf
 * (tests/system/kernel-hold-dnf.sh): keys are case-insensitive and a key
 * given twice keeps only its LAST value, so a second exclude= line would drop
 * the image's pins (AlmaLinux HPC images write exclude=nvidia-fabricmanager
 * ... gdrcopy); but exclude and excludepkgs are two keys of one option whose
 * values add up, in the order each key first appears, and an empty value
 * clears what came before.  dnf 4 has no drop-in for [main] (a [main] in a
 * .repo file or in dnf.conf.d/ counts for nothing), so the line must be in
 * dnf.conf itself.  So hpcinit writes the name the file does not use
 * yet (exclude, else excludepkgs): the image's line stays as it is and keeps
 * working, and a release takes exactly hpcinit's block out.  yum (yum.conf
 * alone) knows only exclude.
 */
#include "config.h"

#include <errno.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "kernel.h"

enum { EX_EXCLUDE, EX_EXCLUDEPKGS, EX_N };
static const char *const ex_key[EX_N] = { "exclude", "excludepkgs" };

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

/* Is every word of value also a word of in? */
static bool words_kept(const char *value, const char *in)
{
	char *v = xstrdup(value), *save = NULL;
	bool ok = true;

	for (char *t = strtok_r(v, " ,\t", &save); t && ok; t = strtok_r(NULL, " ,\t", &save)) {
		char *w = xstrdup(in), *s2 = NULL;

		ok = false;
		for (char *u = strtok_r(w, " ,\t", &s2); u && !ok; u = strtok_r(NULL, " ,\t", &s2))
			ok = strcmp(t, u) == 0;
		free(w);
	}
	free(v);
	return ok;
}

struct ini_main {
	bool has_main;
	size_t end;                     /* offset where [main] ends (next section or EOF) */
	bool used[EX_N];                /* exclude= / excludepkgs= lines outside our block */
	char *excludes;                 /* what dnf excludes from [main], words; NULL: nothing */
};

/* Which exclude key a [main] line sets ("exclude = x": EX_EXCLUDE), its value at *ret_v. */
static int exclude_key(const char *s, size_t len, const char **ret_v)
{
	for (int k = EX_EXCLUDEPKGS; k >= 0; k--) {
		size_t kl = strlen(ex_key[k]);
		const char *v = s + kl;

		if (len < kl || strncasecmp(s, ex_key[k], kl) != 0)
			continue;
		while (v < s + len && (*v == ' ' || *v == '\t'))
			v++;
		if (v < s + len && *v == '=') {
			*ret_v = v + 1;
			return k;
		}
	}
	return -1;
}

/* The words dnf excludes: each key's last value, keys in order of first use, "" clears. */
static char *excludes_effective(char *const val[EX_N], const int order[EX_N], int n)
{
	struct strbuf sb = STRBUF_INIT;
	bool any = false;

	for (int i = 0; i < n; i++) {
		const char *v = val[order[i]];

		any = true;
		if (strspn(v, " \t,") == strlen(v))
			sb_reset(&sb);
		else
			sb_printf(&sb, "%s%s", sb.len ? " " : "", v);
	}
	if (!any) {
		sb_free(&sb);
		return NULL;
	}
	return sb_steal(&sb);
}

/*
 * Look at [main] of an INI file: where it ends, which exclude keys the lines
 * outside our block use, and what dnf would exclude (with our block's lines
 * when ours, without them otherwise).  Indented lines continue a value.
 */
static void ini_scan_main(const char *text, const char *tag, bool ours, struct ini_main *ret)
{
	char *begin = xasprintf("# BEGIN hpcinit %s", tag), *endm = xasprintf("# END hpcinit %s", tag);
	bool in_main = false, in_block = false, past_main = false;
	char *val[EX_N] = { NULL, NULL };
	int order[EX_N], n = 0, cur = -1;
	const char *p = text;

	memset(ret, 0, sizeof(*ret));
	ret->end = strlen(text);
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		const char *s = p, *v = NULL;
		int k;

		while (s < p + ll && (*s == ' ' || *s == '\t'))
			s++;
		if (ll == strlen(begin) && strncmp(p, begin, ll) == 0) {
			in_block = true;
			cur = -1;
		} else if (ll == strlen(endm) && strncmp(p, endm, ll) == 0) {
			in_block = false;
			cur = -1;
		} else if (in_block && !ours) {
			/* not read */
		} else if (*s == '[') {
			if (in_main && !in_block && !past_main) {
				ret->end = (size_t)(p - text);
				past_main = true;
			}
			in_main = strncmp(s, "[main]", 6) == 0;
			ret->has_main |= in_main && !in_block;
			cur = -1;
		} else if (in_main && s > p && s < p + ll && cur >= 0 && *s != '#' && *s != ';') {
			char *t = xasprintf("%s %.*s", val[cur], (int)(p + ll - s), s);

			free(val[cur]);
			val[cur] = t;
		} else if (in_main && (k = exclude_key(s, (size_t)(p + ll - s), &v)) >= 0) {
			while (*v == ' ' || *v == '\t')
				v++;
			if (!val[k])
				order[n++] = k;
			free(val[k]);
			val[k] = xstrndup(v, (size_t)(p + ll - v));
			ret->used[k] |= !in_block;
			cur = k;
		} else {
			cur = -1;
		}
		p = nl ? nl + 1 : NULL;
	}
	ret->excludes = excludes_effective(val, order, n);
	for (int k = 0; k < EX_N; k++)
		free(val[k]);
	free(begin);
	free(endm);
}

/* New dnf.conf text with our block (body: "<key>=kernel*") at the end of [main]. */
static char *dnf_conf_apply(const char *old, const char *tag, const char *key)
{
	struct ini_main im;
	char *body, *blk, *cur;
	struct strbuf sb = STRBUF_INIT;

	ini_scan_main(old, tag, false, &im);
	free(im.excludes);
	body = xasprintf("%s%s=kernel*\n", im.has_main ? "" : "[main]\n", key);
	cur = managed_block_get(old, tag);
	if (cur) {
		char *t = managed_block_apply(old, tag, body);

		free(cur);
		free(body);
		return t;
	}
	blk = managed_block_apply("", tag, body);
	free(body);
	/* At the end of [main], before the next section (or at the end: a new [main]). */
	sb_appendn(&sb, old, im.has_main ? im.end : strlen(old));
	if (sb.len && sb.buf[sb.len - 1] != '\n')
		sb_append(&sb, "\n");
	sb_append(&sb, blk);
	if (im.has_main)
		sb_append(&sb, old + im.end);
	free(blk);
	return sb_steal(&sb);
}

/*
 * The key our line uses: one no line outside our block uses (exclude first,
 * what hpcinit always wrote; yum knows no other).  NULL when none is free.
 */
static const char *dnf_free_key(const struct ini_main *im, bool yum)
{
	if (!im->used[EX_EXCLUDE])
		return ex_key[EX_EXCLUDE];
	if (!yum && !im->used[EX_EXCLUDEPKGS])
		return ex_key[EX_EXCLUDEPKGS];
	return NULL;
}

/* The new text, or NULL with a finding saying why the file is left alone. */
static char *dnf_hold_text(struct report *r, const char *path, const char *old, const char *tag,
			   const struct ini_main *foreign)
{
	bool yum = strcmp(path, "/etc/yum.conf") == 0;
	const char *key = dnf_free_key(foreign, yum);
	struct ini_main after;
	char *new_;

	if (!key) {
		report_finding(r, ST_FAILED, "kernel.hold.foreign-exclude",
			       "%s: [main] already sets %s without kernel*, and %s keeps only the "
			       "last value of a key: add kernel* to %s (hpcinit does not edit "
			       "lines it does not own)", path, yum ? "exclude=" : "both exclude= and excludepkgs=",
			       yum ? "yum" : "dnf", yum ? "that line" : "one of them");
		return NULL;
	}
	new_ = dnf_conf_apply(old, tag, key);
	ini_scan_main(new_, tag, true, &after);
	/* What dnf will read: kernel* and every pin the image made. */
	if (!after.excludes || !exclude_covers_kernel(after.excludes) ||
	    (foreign->excludes && !words_kept(foreign->excludes, after.excludes))) {
		report_finding(r, ST_FAILED, "kernel.hold.foreign-exclude",
			       "%s: with hpcinit's %s=kernel* dnf would exclude '%s', not kernel* and "
			       "the file's '%s' (an empty exclude= after it clears it): fix [main] by "
			       "hand; nothing changed", path, key, after.excludes ? after.excludes : "",
			       foreign->excludes ? foreign->excludes : "");
		free(new_);
		new_ = NULL;
	}
	free(after.excludes);
	return new_;
}

static const char *dnf_conf_path(struct ctx *c)
{
	return fs_exists(c, "/etc/dnf/dnf.conf") ? "/etc/dnf/dnf.conf" :
	       fs_exists(c, "/etc/yum.conf") ? "/etc/yum.conf" : "/etc/dnf/dnf.conf";
}

static int hold_rhel(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	const char *path = dnf_conf_path(c), *tag = c->spec->cluster.name;
	struct ini_main im;
	char *old = NULL, *new_, *kept;
	int ret = fs_read(c, path, &old, NULL);

	if (ret < 0 && ret != -ENOENT) {
		report_finding(r, ST_FAILED, "kernel.hold.unreadable",
			       "cannot read %s: %s", path, strerror(-ret));
		return 0;
	}
	if (!old)
		old = xstrdup("");
	ini_scan_main(old, tag, false, &im);
	if (im.excludes && exclude_covers_kernel(im.excludes)) {
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: %s [main] excludes %s", path, im.excludes);
		free(im.excludes);
		free(old);
		return 0;
	}
	new_ = dnf_hold_text(r, path, old, tag, &im);
	kept = im.excludes ? xasprintf("; the file's own excludes (%s) kept", im.excludes) : xstrdup("");
	free(im.excludes);
	if (!new_) {
		ret = 0;
	} else if (strcmp(new_, old) == 0) {
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held: %s [main] excludes kernel* (hpcinit block)%s", path, kept);
	} else {
		char *dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));

		ret = fs_mkdir_p(c, r, dir, 0755, 0, 0);
		free(dir);
		if (ret >= 0)
			ret = fs_write(c, r, path, new_, strlen(new_), 0644, FS_KEEP_OWNER, FS_KEEP_OWNER);
		if (ret > 0 && !ctx_may_write(c))
			report_finding(r, ST_CHANGED, "kernel.hold.missing",
				       "kernel not held: %s [main] excludes no kernel*", path);
		else if (ret > 0)
			report_finding(r, ST_OK, "kernel.hold.ok",
				       "held: kernel* excluded in hpcinit's block in [main] of %s%s", path, kept);
	}
	free(kept);
	free(new_);
	free(old);
	return ret < 0 ? ret : 0;
}

/* A symlink (EL8 and EL9: /etc/yum.conf -> dnf/dnf.conf, the same file as dnf.conf)? */
static bool is_link(const struct ctx *c, const char *path)
{
	char *p = ctx_path(c, path);
	struct stat st;
	bool link = lstat(p, &st) == 0 && S_ISLNK(st.st_mode);

	free(p);
	return link;
}

static int release_rhel(struct ctx *c, struct report *r, const char *rel, const void *db)
{
	static const char *const paths[] = { "/etc/dnf/dnf.conf", "/etc/yum.conf" };
	const char *tag = c->spec->cluster.name;
	int ret = 0;

	for (size_t i = 0; i < 2 && ret >= 0; i++) {
		char *old = NULL, *ours;
		struct ini_main im;

		if (is_link(c, paths[i]) || fs_read(c, paths[i], &old, NULL) < 0)
			continue;
		ours = managed_block_get(old, tag);
		if (ours) {
			ret = fs_managed_block(c, r, paths[i], tag, "", 0644, FS_KEEP_OWNER, FS_KEEP_OWNER);
			if (ret >= 0)
				kernel_released(c, r, "hpcinit's kernel* exclude block in %s", paths[i]);
			free(ours);
		}
		ini_scan_main(old, tag, false, &im);
		if (im.excludes && exclude_covers_kernel(im.excludes))
			report_finding(r, ST_OK, "kernel.hold.foreign",
				       "left alone: %s [main] excludes %s (not hpcinit's)", paths[i],
				       im.excludes);
		free(im.excludes);
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
