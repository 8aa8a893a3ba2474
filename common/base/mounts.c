/* SPDX-License-Identifier: MIT */
/*
 * The root's mounts and the spec's: one reader of /proc/self/mountinfo (the
 * nfs step verifies its mounts with it), and the one rule every step that
 * writes under a path follows -- a path on a mount the spec names is not
 * written while that mount is absent (mounts_require).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "mounts.h"

char *mounts_unescape(const char *s, size_t n)
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

/* Up to max space-separated fields of [p, end) into f/fl; the count, *pp past them. */
static int split_fields(const char **pp, const char *end, const char **f, size_t *fl, int max)
{
	const char *p = *pp;
	int n = 0;

	while (n < max && p < end) {
		const char *s = p;

		while (p < end && *p != ' ')
			p++;
		f[n] = s;
		fl[n] = (size_t)(p - s);
		n++;
		while (p < end && *p == ' ')
			p++;
	}
	*pp = p;
	return n;
}

/*
 * proc(5): "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
 * Lines that do not parse are skipped.
 */
void mountinfo_parse(const char *text, struct mountinfo *mi)
{
	memset(mi, 0, sizeof(*mi));
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *f[6], *g[3];
		size_t fl[6], gl[3];
		const char *p = line, *end = line + len, *sep;
		int ng;

		/* id parent dev root mountpoint options */
		sep = split_fields(&p, end, f, fl, 6) == 6 ? p : NULL;
		/* optional fields until " - " (a lone "-") */
		while (sep && sep < end) {
			if (sep[0] == '-' && (sep + 1 == end || sep[1] == ' '))
				break;
			sep = memchr(sep, ' ', (size_t)(end - sep));
			if (sep)
				sep++;
		}
		if (sep && sep < end) {
			p = sep + 1;
			while (p < end && *p == ' ')
				p++;
			ng = split_fields(&p, end, g, gl, 3);
			if (ng >= 2) {
				struct mi_entry *e;

				mi->v = xrealloc(mi->v, (mi->n + 1) * sizeof(*mi->v));
				e = &mi->v[mi->n++];
				e->mountpoint = mounts_unescape(f[4], fl[4]);
				e->mntopts = xstrndup(f[5], fl[5]);
				e->fstype = xstrndup(g[0], gl[0]);
				e->source = mounts_unescape(g[1], gl[1]);
				e->superopts = ng == 3 ? xstrndup(g[2], gl[2]) : xstrdup("");
			}
		}
		line = nl ? nl + 1 : NULL;
	}
}

const struct mi_entry *mountinfo_find(const struct mountinfo *mi, const char *path)
{
	for (size_t i = mi->n; i-- > 0;)
		if (strcmp(mi->v[i].mountpoint, path) == 0)
			return &mi->v[i];
	return NULL;
}

/* Keep the mounts inside the fake root, their mount points relative to it. */
static void keep_under_root(const struct ctx *c, struct mountinfo *mi)
{
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
	if (fake)
		keep_under_root(c, mi);
}

/* ---- the spec's mounts ------------------------------------------------------ */

bool mounts_nfs_type(const char *fstype)
{
	return strcmp(fstype, "nfs") == 0 || strcmp(fstype, "nfs4") == 0;
}

bool mounts_source_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	while (la > 1 && a[la - 1] == '/' && a[la - 2] != ':')
		la--;
	while (lb > 1 && b[lb - 1] == '/' && b[lb - 2] != ':')
		lb--;
	return la == lb && memcmp(a, b, la) == 0;
}

char *mounts_source(const struct spec_nfs_mount *m)
{
	/* an IPv6 server is written [addr]:/export, as mount(8) and mountinfo do */
	return strchr(m->host, ':') ? xasprintf("[%s]:%s", m->host, m->export)
		: xasprintf("%s:%s", m->host, m->export);
}

const struct mi_entry *mountinfo_spec_mount(const struct mountinfo *mi, const struct spec_nfs_mount *m)
{
	const struct mi_entry *e = mountinfo_find(mi, m->path);
	char *src;
	bool same;

	if (!e || !mounts_nfs_type(e->fstype))
		return NULL;
	src = mounts_source(m);
	same = mounts_source_eq(e->source, src);
	free(src);
	return same ? e : NULL;
}

bool mounts_path_under(const char *path, const char *dir)
{
	size_t l = strlen(dir);

	while (l > 1 && dir[l - 1] == '/')
		l--;
	if (l == 1 && dir[0] == '/')
		return path[0] == '/';
	return strncmp(path, dir, l) == 0 && (path[l] == '\0' || path[l] == '/');
}

const struct spec_nfs_mount *mounts_absent(const struct ctx *c, const char *path)
{
	const struct spec_nfs *nfs = &c->spec->nfs;
	const struct spec_nfs_mount *absent = NULL;
	struct mountinfo mi;
	bool loaded = false;

	if (!path || !nfs->present)
		return NULL;
	for (size_t i = 0; i < nfs->n_mounts; i++) {
		const struct spec_nfs_mount *m = &nfs->mounts[i];

		if (!mounts_path_under(path, m->path))
			continue;
		/* outermost first: an inner mount on the local disk is no better */
		if (absent && strlen(absent->path) < strlen(m->path))
			continue;
		if (!loaded) {
			mountinfo_load(c, &mi);
			loaded = true;
		}
		if (!mountinfo_spec_mount(&mi, m))
			absent = m;
	}
	if (loaded)
		mountinfo_free(&mi);
	return absent;
}

int mounts_require(const struct ctx *c, struct report *rep, const char *what, const char *path)
{
	const struct spec_nfs_mount *m = mounts_absent(c, path);
	char *tag, *src;

	if (!m)
		return 0;
	tag = xasprintf("%s.mount.absent", c->module ? c->module : "hpcinit");
	src = mounts_source(m);
	report_finding(rep, ST_FAILED, tag, "%s %s is on the NFS mount %s (%s), which is not mounted; "
		       "nothing is written there", what, path, m->path, src);
	free(src);
	free(tag);
	return -ENOMEDIUM;
}
