/* SPDX-License-Identifier: MIT */
/*
 * discovery method "shared": its tree opened (lib/rendezvous's dir backend
 * makes <dir>/<cluster>/nodes and decides whom to trust), and what the
 * admin is told about that trust: a share that squashes root, or one where
 * root elsewhere writes as root, without a cluster secret (shared.c opens
 * through disc_tree_open).
 */
#include "config.h"

#include <stdlib.h>
#include <sys/vfs.h>

#include "discovery.h"
#include "fsutil.h"
#include "nfs/squash.h"
#include "rendezvous/rendezvous.h"

/*
 * Tell the admin, as a finding, that a squashed share needs the secret:
 * there any client process that runs as the anonymous uid can write a
 * record, and a record names host keys and authorized user keys.
 */
static void squash_note(const struct ctx *c, struct report *rep, const struct rendezvous *rv)
{
	if (c->spec->cluster.secret_file || !rv->tree.squashed)
		return;
	report_finding(rep, ST_DEGRADED, "discovery.squash.no-secret",
		       "%s: root is squashed to uid %u on this share and there is no cluster.secret_file: "
		       "any process that writes as uid %u on any client of the share can plant a record "
		       "(host keys, users' keys); set cluster.secret_file on every node (docs/cluster.md)",
		       rv->tree.levels[2], (unsigned)rv->tree.trusted, (unsigned)rv->tree.trusted);
}

/* File systems many machines mount (f_type of statfs(2)), by name. */
static const struct {
	long type;
	const char *name;
} shared_fs[] = {
	{ 0x6969, "NFS" },
	{ (long)0xff534d42, "CIFS" },
	{ (long)0xfe534d42, "SMB" },
	{ 0x0bd00bd0, "Lustre" },
	{ 0x47504653, "GPFS" },
	{ 0x19830326, "BeeGFS" },
};

/*
 * A root-owned rendezvous without a cluster secret, where root elsewhere
 * writes as root too: on the head, an export that does not squash root
 * (known from the spec); on a client, a file system other machines mount
 * (statfs) where this node's root was not squashed.  Root on any machine
 * that mounts it then writes records every member believes.  What cannot
 * be seen from here (which machines the server lets mount) is not claimed.
 */
static void unsquashed_note(const struct ctx *c, struct report *rep, const struct rendezvous *rv,
			    const struct nfs_squash *sq)
{
	const char *fs = NULL;
	struct statfs sf;
	char *hp;

	if (c->spec->cluster.secret_file)
		return;
	if (sq) {
		report_finding(rep, ST_DEGRADED, "discovery.rendezvous.no-secret",
			       "%s: this node exports %s with no_root_squash and there is no "
			       "cluster.secret_file: root on any machine that may mount the export writes "
			       "records as root, and every member trusts their host keys and users' keys; "
			       "export it with root_squash and set cluster.secret_file on every node "
			       "(docs/cluster.md)", rv->tree.levels[2], sq->export);
		return;
	}
	hp = ctx_path(c, rv->tree.levels[2]);
	if (statfs(hp, &sf) == 0)
		for (size_t i = 0; i < sizeof(shared_fs) / sizeof(shared_fs[0]); i++)
			if ((long)sf.f_type == shared_fs[i].type)
				fs = shared_fs[i].name;
	free(hp);
	if (fs)
		report_finding(rep, ST_DEGRADED, "discovery.rendezvous.no-secret",
			       "%s: on %s, root on this node writes as root (the share does not squash "
			       "root) and there is no cluster.secret_file: root on any machine that mounts "
			       "the share writes records every member trusts (host keys, users' keys); set "
			       "cluster.secret_file on every node, and squash root on the server "
			       "(docs/cluster.md)", rv->tree.levels[2], fs);
}

/*
 * Make <dir>/<cluster>/nodes exist and decide whom to trust (the library's
 * dir backend: levels, owner, this node's own export squashing root).
 */
int disc_tree_open(struct ctx *c, struct report *rep, const struct peer *self, struct rendezvous *rv)
{
	struct rv_opts o = {
		.collection = "nodes",
		.self = self->hostname,
		.max_bytes = RECORD_MAX_BYTES,
		.create = true,
		.puts_differ = true,    /* a record carries its time (write_record, shared.c) */
	};
	int r;

	r = rv_open(c, rep, &o, rv);
	if (r == 0)
		squash_note(c, rep, rv);
	if (r == 0 && !rv->tree.head_squash && rv->tree.trusted == 0) {
		struct nfs_squash sq;
		bool exported = nfs_export_lookup(c->spec, c->spec->discovery.dir, &sq);

		unsquashed_note(c, rep, rv, exported ? &sq : NULL);
	}
	return r;
}
