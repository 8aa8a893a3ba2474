/* SPDX-License-Identifier: MIT */
/* fstab lines, mountinfo and option text for the nfs step. */
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

/* Undo \NNN escapes (mountinfo, fstab). */
char *field_unescape(const char *s, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 3 < n &&
		    s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			char ch = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));

			sb_appendn(&sb, &ch, 1);
			i += 3;
		} else {
			sb_appendn(&sb, s + i, 1);
		}
	}
	if (!sb.buf)
		return xstrdup("");
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

/* ---- mountinfo ------------------------------------------------------------ */

void mountinfo_free(struct mountinfo *mi)
{
	for (size_t i = 0; i < mi->n; i++) {
		free(mi->v[i].mountpoint);
		free(mi->v[i].fstype);
		free(mi->v[i].source);
		free(mi->v[i].mntopts);
		free(mi->v[i].superopts);
	}
	free(mi->v);
	mi->v = NULL;
	mi->n = 0;
}

/*
 * proc(5): "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
 * Lines that do not parse are skipped.
 */
static void mountinfo_parse(const char *text, struct mountinfo *mi)
{
	memset(mi, 0, sizeof(*mi));
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *f[6];
		size_t fl[6];
		int nf = 0;
		const char *p = line, *end = line + len, *sep;

		/* id parent dev root mountpoint options */
		while (nf < 6 && p < end) {
			const char *s = p;

			while (p < end && *p != ' ')
				p++;
			f[nf] = s;
			fl[nf] = (size_t)(p - s);
			nf++;
			while (p < end && *p == ' ')
				p++;
		}
		sep = nf == 6 ? p : NULL;
		/* optional fields until " - " (a lone "-") */
		while (sep && sep < end) {
			if (sep[0] == '-' && (sep + 1 == end || sep[1] == ' '))
				break;
			sep = memchr(sep, ' ', (size_t)(end - sep));
			if (sep)
				sep++;
		}
		if (sep && sep < end) {
			const char *g[3];
			size_t gl[3];
			int ng = 0;

			p = sep + 1;
			while (p < end && *p == ' ')
				p++;
			while (ng < 3 && p < end) {
				const char *s = p;

				while (p < end && *p != ' ')
					p++;
				g[ng] = s;
				gl[ng] = (size_t)(p - s);
				ng++;
				while (p < end && *p == ' ')
					p++;
			}
			if (ng >= 2) {
				struct mi_entry *e;

				mi->v = xrealloc(mi->v, (mi->n + 1) * sizeof(*mi->v));
				e = &mi->v[mi->n++];
				e->mountpoint = field_unescape(f[4], fl[4]);
				e->mntopts = xstrndup(f[5], fl[5]);
				e->fstype = xstrndup(g[0], gl[0]);
				e->source = field_unescape(g[1], gl[1]);
				e->superopts = ng == 3 ? xstrndup(g[2], gl[2]) : xstrdup("");
			}
		}
		line = nl ? nl + 1 : NULL;
	}
}

/* The mount on top at path (the last one listed), or NULL. */
const struct mi_entry *mountinfo_find(const struct mountinfo *mi, const char *path)
{
	for (size_t i = mi->n; i-- > 0;)
		if (strcmp(mi->v[i].mountpoint, path) == 0)
			return &mi->v[i];
	return NULL;
}

bool nfs_is_nfs_type(const char *fstype)
{
	return strcmp(fstype, "nfs") == 0 || strcmp(fstype, "nfs4") == 0;
}

/* "host:/export" equal up to trailing slashes of the export. */
bool nfs_source_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	while (la > 1 && a[la - 1] == '/' && a[la - 2] != ':')
		la--;
	while (lb > 1 && b[lb - 1] == '/' && b[lb - 2] != ':')
		lb--;
	return la == lb && strncmp(a, b, la) == 0;
}

/*
 * Read the mount table the module should look at.  Real root: the kernel's.
 * Fake root: <root>/proc/self/mountinfo when it exists (a fixture, paths as
 * on the target); otherwise the kernel's entries below the root, with the
 * root taken off (a test that really mounts under --root sees its mounts).
 */
void mountinfo_load(const struct ctx *c, struct mountinfo *mi)
{
	char *text = NULL;
	bool fake = !ctx_real_root(c);

	memset(mi, 0, sizeof(*mi));
	if (fake && fs_read(c, "/proc/self/mountinfo", &text, NULL) == 0) {
		mountinfo_parse(text, mi);
		mi->fixture = true;
		free(text);
		return;
	}
	if (fs_read_host("/proc/self/mountinfo", FS_MAX_READ, &text, NULL) < 0)
		return;
	mountinfo_parse(text, mi);
	free(text);
	if (fake) {
		char *rootdir = fs_rooted(c->root, "/");
		size_t rl = strlen(rootdir), kept = 0;

		while (rl > 1 && rootdir[rl - 1] == '/')
			rl--;
		for (size_t i = 0; i < mi->n; i++) {
			struct mi_entry *e = &mi->v[i];

			if (strncmp(e->mountpoint, rootdir, rl) == 0 && e->mountpoint[rl] == '/') {
				char *p = xstrdup(e->mountpoint + rl);

				free(e->mountpoint);
				e->mountpoint = p;
				mi->v[kept++] = *e;
			} else {
				free(e->mountpoint);
				free(e->fstype);
				free(e->source);
				free(e->mntopts);
				free(e->superopts);
			}
		}
		mi->n = kept;
		free(rootdir);
	}
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

