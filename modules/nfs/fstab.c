/* SPDX-License-Identifier: MIT */
/* fstab lines and option text for the nfs step (the mount table: common/base/mounts.c). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "nfs.h"
#include "proc.h"

/* ---- small text helpers ------------------------------------------------ */

void nfs_fmt_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms < 60000)
		snprintf(buf, len, "%llu.%llus", (unsigned long long)(ms / 1000),
			 (unsigned long long)(ms % 1000 / 100));
	else
		snprintf(buf, len, "%llum%llus", (unsigned long long)(ms / 60000),
			 (unsigned long long)(ms % 60000 / 1000));
}

/* fstab(5) and exports(5) fields: whitespace and backslash as octal escapes. */
char *field_escape(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
			sb_printf(&sb, "\\%03o", (unsigned)(unsigned char)*s);
		else
			sb_appendn(&sb, s, 1);
	}
	return sb_steal(&sb);
}

/* The key of "key=value" (or the whole word), compared up to '='. */
static bool opt_key_eq(const char *opt, const char *key)
{
	size_t kl = strlen(key);

	return strncmp(opt, key, kl) == 0 && (opt[kl] == '\0' || opt[kl] == '=');
}

const char *nfs_opt_find(const struct strlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (opt_key_eq(l->v[i], key))
			return l->v[i];
	return NULL;
}

/* Value of key= in a comma-separated option string, malloc'd, or NULL. */
static char *optstr_get(const char *optstr, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = optstr; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n >= kl && strncmp(p, key, kl) == 0 && (n == kl || p[kl] == '='))
			return n == kl ? xstrdup("") : xstrndup(p + kl + 1, n - kl - 1);
		p = comma ? comma + 1 : NULL;
	}
	return NULL;
}

char *nfs_strlist_join(const struct strlist *l, const char *sep)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < l->n; i++) {
		if (i)
			sb_append(&sb, sep);
		sb_append(&sb, l->v[i]);
	}
	if (!sb.buf)
		return xstrdup("");
	return sb_steal(&sb);
}

/* Options for mount -o: exactly the spec's (or the defaults). */
char *mount_optstr(const struct nfs_target *t)
{
	return nfs_strlist_join(&t->opts, ",");
}

/*
 * Options for fstab: the spec's plus _netdev (order after the network),
 * nofail (a dead server does not fail the boot) and a systemd mount timeout
 * equal to the wait, so a hard mount on a dead server cannot hang the boot.
 * A key the user already gave is not added again.
 */
#define FSTAB_MIN_TIMEOUT_S 1ull

static char *fstab_optstr(const struct nfs_target *t)
{
	struct strlist l = { 0 };
	char *ret;

	for (size_t i = 0; i < t->opts.n; i++)
		strlist_push(&l, t->opts.v[i]);
	if (!nfs_opt_find(&l, "_netdev"))
		strlist_push(&l, "_netdev");
	if (!nfs_opt_find(&l, "nofail"))
		strlist_push(&l, "nofail");
	if (!nfs_opt_find(&l, "x-systemd.mount-timeout")) {
		/* systemd reads 0 as "no timeout": `wait: 0s` (one probe) must not
		 * become a boot that waits for ever; the floor is FSTAB_MIN_TIMEOUT_S. */
		unsigned long long s = (t->wait_ms + 999) / 1000;
		char *o = xasprintf("x-systemd.mount-timeout=%llus",
				    s < FSTAB_MIN_TIMEOUT_S ? FSTAB_MIN_TIMEOUT_S : s);

		strlist_push(&l, o);
		free(o);
	}
	ret = nfs_strlist_join(&l, ",");
	strlist_free(&l);
	return ret;
}

char *fstab_line(const struct nfs_target *t)
{
	char *src = field_escape(t->source), *path = field_escape(t->path), *opts = fstab_optstr(t);
	char *line = xasprintf("%s %s nfs %s 0 0\n", src, path, opts);

	free(src);
	free(path);
	free(opts);
	return line;
}

/*
 * Compare the options that decide behaviour with what the kernel reports.
 * rsize/wsize are left out: the server may negotiate them down.  Appends
 * "want X, mounted Y" findings to out; returns the number of findings.
 */
int options_diff(const struct nfs_target *t, const struct mi_entry *e, struct strbuf *out)
{
	static const char *const keys[] = { "proto", "nconnect", "sec", "timeo", "retrans", "port" };
	int n = 0;
	bool mounted_ro = opt_key_eq(e->mntopts, "ro") || strncmp(e->mntopts, "ro,", 3) == 0;
	const char *v;
	char *have;

	if (t->ro != mounted_ro) {
		sb_printf(out, "%swant %s, mounted %s", n++ ? "; " : "", t->ro ? "ro" : "rw",
			  mounted_ro ? "ro" : "rw");
	}
	v = nfs_opt_find(&t->opts, "vers");
	if (!v)
		v = nfs_opt_find(&t->opts, "nfsvers");
	if (v && (v = strchr(v, '='))) {
		v++;
		have = optstr_get(e->superopts, "vers");
		/* "4" matches 4.x; "4.1" must match exactly */
		if (have && !(strcmp(have, v) == 0 ||
			      (!strchr(v, '.') && strncmp(have, v, strlen(v)) == 0 && have[strlen(v)] == '.')))
			sb_printf(out, "%swant vers=%s, mounted vers=%s", n++ ? "; " : "", v, have);
		free(have);
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		v = nfs_opt_find(&t->opts, keys[k]);
		if (!v || !strchr(v, '='))
			continue;
		v = strchr(v, '=') + 1;
		have = optstr_get(e->superopts, keys[k]);
		if (have && strcmp(have, v) != 0)
			sb_printf(out, "%swant %s=%s, mounted %s=%s", n++ ? "; " : "", keys[k], v,
				  keys[k], have);
		free(have);
	}
	for (size_t k = 0; k < 2; k++) {
		const char *want = k == 0 ? "soft" : "hard", *other = k == 0 ? "hard" : "soft";
		char *o;

		if (!nfs_opt_find(&t->opts, want))
			continue;
		o = optstr_get(e->superopts, other);
		if (o)
			sb_printf(out, "%swant %s, mounted %s", n++ ? "; " : "", want, other);
		free(o);
	}
	if (nfs_opt_find(&t->opts, "nolock") && (have = optstr_get(e->superopts, "local_lock"))) {
		if (strcmp(have, "all") != 0)
			sb_printf(out, "%swant nolock, mounted local_lock=%s", n++ ? "; " : "", have);
		free(have);
	}
	return n;
}

