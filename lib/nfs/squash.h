/* SPDX-License-Identifier: MIT */
/*
 * What the head's own exports do to root (lib/nfs/squash.c), for the
 * steps that write inside an exported directory (discovery's rendezvous
 * tree): with root_squash (the NFS default) or all_squash, root on every
 * client writes as the export's anonymous uid, so what this node writes
 * there must be owned by that uid too.
 */
#ifndef HPCINIT_NFS_SQUASH_H
#define HPCINIT_NFS_SQUASH_H

#include <stdbool.h>
#include <sys/types.h>

#include "hpcinit.h"

#define NFS_ANON_ID_DEFAULT 65534u      /* exports(5): anonuid/anongid when not given */

struct nfs_squash {
	const char *export;     /* the export holding the path (the spec's string) */
	bool at_export;         /* the path is the export's directory itself */
	bool squashed;          /* root_squash or all_squash (else no_root_squash) */
	bool all;               /* all_squash (else root_squash) */
	uid_t anonuid;
	gid_t anongid;
};

/*
 * Does this node (cluster.role head) export a directory holding path with
 * root squashed?  The innermost export holding it decides; its options are
 * read as exportfs reads them (root_squash unless no_root_squash,
 * all_squash, anonuid=/anongid=, the last of each wins).  false on a
 * compute, outside every export, for a path with "." or ".." components,
 * and under the spec's own NFS mounts (then this node is a client like any
 * other).
 */
bool nfs_export_squash(const struct spec *s, const char *path, struct nfs_squash *ret);

/*
 * Does this node export a directory holding path at all (same rules as
 * above)?  ret->squashed tells whether root is squashed there; anonuid and
 * anongid are what squashing uses (or would use) either way.
 */
bool nfs_export_lookup(const struct spec *s, const char *path, struct nfs_squash *ret);

#endif
