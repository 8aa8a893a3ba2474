/* SPDX-License-Identifier: MIT */
/*
 * What this node's own NFS exports do to root (lib/nfs/squash.h): read from
 * the spec's nfs.exports as exportfs reads them.  A library below the steps:
 * the nfs step writes the exports, the rendezvous (lib/rendezvous/dir.c)
 * owns its tree by these rules.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "hpcinit.h"
#include "squash.h"
#include "number.h"

/* Does path have a "." or ".." component?  Then where it ends is not told by its text. */
static bool dot_component(const char *path)
{
	for (const char *p = path; (p = strchr(p, '/')); p++) {
		size_t k = p[1] == '.' ? (p[2] == '.' ? 3 : 2) : 0;

		if (k && (p[k] == '/' || p[k] == '\0'))
			return true;
	}
	return false;
}

/*
 * Is path the directory dir or inside it?  The length of dir without its
 * trailing slashes, 0 when not.  A path with "." or ".." in it is in none.
 */
static size_t path_within(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	while (n > 1 && dir[n - 1] == '/')
		n--;
	if (dot_component(path) || strncmp(path, dir, n) != 0 || (path[n] != '\0' && path[n] != '/'))
		return 0;
	return n;
}

static bool parse_id(const char *v, unsigned *ret)
{
	unsigned long long u;

	if (!num_ull(v, 10, 0xfffffffeUL, &u))
		return false;
	*ret = (unsigned)u;
	return true;
}

bool nfs_export_lookup(const struct spec *s, const char *path, struct nfs_squash *ret)
{
	const struct spec_nfs_export *x = NULL;
	size_t best = 0;
	bool root = true, all = false;
	unsigned uid = NFS_ANON_ID_DEFAULT, gid = NFS_ANON_ID_DEFAULT;

	if (s->cluster.role != ROLE_HEAD || !path)
		return false;
	for (size_t i = 0; i < s->nfs.n_mounts; i++)
		if (s->nfs.mounts[i].path && path_within(path, s->nfs.mounts[i].path))
			return false;   /* a client of that server, like every other node */
	for (size_t i = 0; i < s->nfs.n_exports; i++) {
		size_t n = s->nfs.exports[i].path ? path_within(path, s->nfs.exports[i].path) : 0;

		if (n > best) {
			best = n;
			x = &s->nfs.exports[i];
		}
	}
	if (!x)
		return false;
	/* As exportfs reads them (the loader made it one option per entry): the last word wins. */
	for (size_t i = 0; i < x->options.n; i++) {
		const char *o = x->options.v[i];

		if (strcmp(o, "root_squash") == 0)
			root = true;
		else if (strcmp(o, "no_root_squash") == 0)
			root = false;
		else if (strcmp(o, "all_squash") == 0)
			all = true;
		else if (strcmp(o, "no_all_squash") == 0)
			all = false;
		else if (strncmp(o, "anonuid=", 8) == 0)
			(void)parse_id(o + 8, &uid);
		else if (strncmp(o, "anongid=", 8) == 0)
			(void)parse_id(o + 8, &gid);
	}
	ret->export = x->path;
	ret->at_export = path[best + strspn(path + best, "/")] == '\0';
	ret->squashed = root || all;
	ret->all = all;
	ret->anonuid = (uid_t)uid;
	ret->anongid = (gid_t)gid;
	return true;
}

bool nfs_export_squash(const struct spec *s, const char *path, struct nfs_squash *ret)
{
	struct nfs_squash sq;

	if (!nfs_export_lookup(s, path, &sq) || !sq.squashed)
		return false;
	*ret = sq;
	return true;
}
