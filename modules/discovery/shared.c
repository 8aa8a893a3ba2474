/* SPDX-License-Identifier: MIT */
/*
 * discovery method "shared": each node keeps one record in
 * <dir>/<cluster>/nodes/<host>.rec on the shared filesystem and reads
 * everyone else's: one readdir and one read per node, O(N) per node, no
 * connection to any peer.  Records are trusted by the directory's owner
 * (root, or the uid root is squashed to) and, with cluster.secret_file, by
 * their HMAC.  A head that exports the share with root squashed makes the
 * tree and its own record the export's anonymous uid's, so that every
 * record has the owner the clients' root writes as.
 *
 * Time: the cluster clock is the shared directory's, seen in the file time
 * of this node's record just after writing it.  A node whose own clock is
 * off by more than DISC_CLOCK_SKEW_S stamps its record and judges leases by
 * that clock instead, so a node that is behind is not pruned by its peers
 * and a node that is ahead prunes no one; a record dated further than the
 * skew ahead of the cluster clock is rejected (it would otherwise never
 * expire and win every address conflict).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>
#include <unistd.h>

#include "discovery.h"
#include "fsutil.h"
#include "log.h"
#include "../nfs/squash.h"

#define SECRET_MIN 16
#define SECRET_MAX 4096
#define REJECT_LOG_MAX 10               /* rejections logged (syslog) per run */
#define RECORD_STALE_TRIES 5            /* opens of one record that may go stale (NFS, replaced) */

struct secret {
	char *key;                      /* NULL: no cluster secret */
	size_t len;
};

static void secret_free(struct secret *s)
{
	if (s->key) {
		explicit_bzero(s->key, s->len);
		free(s->key);
	}
	s->key = NULL;
	s->len = 0;
}

/* ---- cluster secret ---- */

/*
 * The secret must be root's alone: a regular file (not a symlink), owned by
 * root, not readable or writable by group or others.  It is checked and read
 * through one O_NOFOLLOW descriptor, so what was checked is what is read.
 */
static int load_secret(const struct ctx *c, struct report *rep, struct secret *ret)
{
	const char *path = c->spec->cluster.secret_file;
	char *hp, *text;
	struct stat st = { 0 };
	size_t n = 0;
	int fd, r;

	if (!path)
		return 0;
	hp = ctx_path(c, path);
	fd = open(hp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	free(hp);
	if (fd < 0) {
		r = -errno;
		if (errno == ELOOP)
			report_detail(rep, "cluster.secret_file %s: is a symbolic link; refused (make it a "
				      "regular file, mode 0600, owned by root)", path);
		else
			report_detail(rep, "cluster.secret_file %s: %s; create it on every node "
				      "(the same random bytes, mode 0600)", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		report_detail(rep, "cluster.secret_file %s: must be a regular file not readable by "
			      "group or others (mode %04o); chmod 600 it",
			      path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	if (st.st_uid != 0) {
		report_detail(rep, "cluster.secret_file %s: owned by uid %u, not root: that user could "
			      "read it and forge records; refused (chown root %s)", path,
			      (unsigned)st.st_uid, path);
		close(fd);
		return -EPERM;
	}
	text = xmalloc(SECRET_MAX + 2);
	for (;;) {
		ssize_t k = read(fd, text + n, SECRET_MAX + 2 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : 0;
			break;
		}
		n += (size_t)k;
		if (n >= SECRET_MAX + 2) {
			r = 0;
			break;
		}
	}
	close(fd);
	if (r < 0) {
		report_detail(rep, "cluster.secret_file %s: %s", path, strerror(-r));
		explicit_bzero(text, n);
		free(text);
		return r;
	}
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	if (n < SECRET_MIN || n > SECRET_MAX) {
		report_detail(rep, "cluster.secret_file %s: needs %d to %d bytes (try: "
			      "openssl rand -hex 32 > %s)", path, SECRET_MIN, SECRET_MAX, path);
		explicit_bzero(text, SECRET_MAX + 2);
		free(text);
		return -EINVAL;
	}
	ret->key = text;
	ret->len = n;
	return 0;
}

/* ---- shared: the rendezvous directory ---- */

struct rendezvous {
	char *levels[3];                /* dir, dir/cluster, dir/cluster/nodes (target paths) */
	const char *nodes;              /* == levels[2] */
	uid_t trusted;                  /* uid that writes records: 0, or root squashed */
	gid_t trusted_gid;
	bool squashed;
	bool head_squash;               /* this node exports the share, root squashed */
};

static void rendezvous_free(struct rendezvous *rv)
{
	for (int i = 0; i < 3; i++)
		free(rv->levels[i]);
}

/* The method's state, from open to close. */
struct shared {
	struct secret sec;
	struct rendezvous rv;
	int64_t written;                /* when this node's record was last written (own clock) */
	int64_t offset;                 /* cluster clock - own clock; 0 within the skew */
	size_t rejected, expired, pruned;       /* rejected, expired: of the last pass */
	struct strlist rejects;         /* the first REJECT_LOG_MAX reasons, for the log */
};

/* Return the owner of dir if it passes the mode check; -ENOENT when missing. */
static int check_dir(const struct ctx *c, struct report *rep, const char *path, struct stat *st)
{
	char *hp = ctx_path(c, path);
	int r = 0;

	if (lstat(hp, st) < 0) {
		r = -errno;
		if (r != -ENOENT)
			report_detail(rep, "rendezvous directory %s: %s", path, strerror(errno));
	} else if (!S_ISDIR(st->st_mode)) {
		report_detail(rep, "rendezvous directory %s: not a directory (a symlink is refused too)",
			      path);
		r = -ENOTDIR;
	} else if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		report_detail(rep, "rendezvous directory %s is writable by group or others (mode %04o): "
			      "anyone could plant a peer record; refusing it (chmod go-w %s)",
			      path, (unsigned)(st->st_mode & 07777), path);
		r = -EPERM;
	}
	free(hp);
	return r;
}

/*
 * Learn which uid this node's root writes as on the share: create a probe
 * file and look at its owner.  Root on a root_squash export comes out as
 * the anonymous uid.  Only called when the directory is not owned by root.
 */
static int probe_owner(const struct ctx *c, const char *nodes, const char *host,
		       uid_t *ret_uid, gid_t *ret_gid)
{
	char *rel = xasprintf("%s/.hpcinit-probe.%s.%ld", nodes, host, (long)getpid());
	char *hp = ctx_path(c, rel);
	struct stat st;
	int fd, r = 0;

	fd = open(hp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
	} else {
		if (fstat(fd, &st) < 0)
			r = -errno;
		close(fd);
		(void)unlink(hp);
	}
	if (r == 0) {
		*ret_uid = st.st_uid;
		*ret_gid = st.st_gid;
	}
	free(rel);
	free(hp);
	return r;
}

/*
 * This node is the NFS server of the share and exports it with root (or
 * all) squashed: root on every client writes as the export's anonymous uid,
 * while root here writes as itself.  So the head makes each level of the
 * tree that uid's -- creating it 0755, or re-owning what an earlier run (or
 * a no_root_squash export) made as root -- and its record is written as
 * that uid (write_record): every level and every record then has the one
 * owner the clients' probe finds.  Walked with openat and O_NOFOLLOW from
 * the directory above the tree, owner and mode set on the descriptor, so a
 * link swapped in is never followed.  A level that is a link, not a
 * directory, writable by group or others or owned by someone else is left
 * alone for check_dir and the owner rule to refuse with the reason.  The
 * export's own directory is never re-owned: discovery.dir must lie inside it.
 */
static int head_tree(struct ctx *c, struct report *rep, const struct rendezvous *rv,
		     const struct nfs_squash *sq)
{
	char *top = xstrdup(rv->levels[0]), *slash, *parent, *hp;
	size_t tl = strlen(top);
	const char *names[3];
	int dfd, r = 0;

	while (tl > 1 && top[tl - 1] == '/')
		top[--tl] = '\0';
	slash = strrchr(top, '/');
	if (sq->at_export || !slash || slash[1] == '\0') {
		report_detail(rep, "discovery.dir %s is the export %s itself: root on the clients (squashed "
			      "to uid %u) cannot create records in a directory root owns there, and hpcinit "
			      "does not hand the export to that uid; use a directory inside it "
			      "(e.g. %s/.hpcinit)", rv->levels[0], sq->export, (unsigned)sq->anonuid,
			      sq->export);
		free(top);
		return -EPERM;
	}
	names[0] = slash + 1;
	names[1] = c->spec->cluster.name;
	names[2] = "nodes";
	parent = slash == top ? xstrdup("/") : xstrndup(top, (size_t)(slash - top));
	hp = ctx_path(c, parent);
	dfd = open(hp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(hp);
	free(parent);
	if (dfd < 0) {
		free(top);
		return 0;       /* rendezvous_open says why it cannot make the tree */
	}
	for (int i = 0; i < 3 && r == 0; i++) {
		const int oflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
		int nfd = openat(dfd, names[i], oflags);
		struct stat st;

		if (nfd < 0 && errno == ENOENT && ctx_may_write(c)) {
			if (mkdirat(dfd, names[i], 0700) < 0 && errno != EEXIST) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot create: %s", rv->levels[i],
					      strerror(errno));
				break;
			}
			nfd = openat(dfd, names[i], oflags);
			if (nfd < 0 || fstat(nfd, &st) < 0 ||
			    ((st.st_uid != sq->anonuid || st.st_gid != sq->anongid) &&
			     fchown(nfd, sq->anonuid, sq->anongid) < 0) || fchmod(nfd, 0755) < 0) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot give it to uid %u: %s",
					      rv->levels[i], (unsigned)sq->anonuid, strerror(errno));
			} else {
				report_changed(rep, rv->levels[i]);
				report_raise(rep, ST_CHANGED);
				report_detail(rep, "%s: created, owned by uid %u", rv->levels[i],
					      (unsigned)sq->anonuid);
			}
		} else if (nfd >= 0 && fstat(nfd, &st) == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
			   (st.st_uid == 0 || st.st_uid == sq->anonuid) &&
			   (st.st_uid != sq->anonuid || st.st_gid != sq->anongid)) {
			/* Made as root earlier (an upgrade, or the export squashed root later). */
			report_changed(rep, rv->levels[i]);
			report_raise(rep, ST_CHANGED);
			if (!ctx_may_write(c)) {
				report_detail(rep, "%s: owned by %u:%u; apply gives it to %u:%u (the export's "
					      "anonymous uid)", rv->levels[i], (unsigned)st.st_uid,
					      (unsigned)st.st_gid, (unsigned)sq->anonuid, (unsigned)sq->anongid);
			} else if (fchown(nfd, sq->anonuid, sq->anongid) < 0) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot give it to uid %u: %s",
					      rv->levels[i], (unsigned)sq->anonuid, strerror(errno));
			} else {
				report_detail(rep, "%s: re-owned from %u:%u to %u:%u (the export's anonymous uid)",
					      rv->levels[i], (unsigned)st.st_uid, (unsigned)st.st_gid,
					      (unsigned)sq->anonuid, (unsigned)sq->anongid);
			}
		}
		close(dfd);
		dfd = nfd;
		if (dfd < 0)
			break;  /* missing in check/plan, a link, ...: check_dir says what */
	}
	if (dfd >= 0)
		close(dfd);
	free(top);
	return r;
}

/*
 * The way back: this node exports the share with no_root_squash now, but an
 * earlier run (root squashed then) gave the tree to the export's anonymous
 * uid.  Root on every node writes as root again, so each level that
 * anonymous uid owns goes back to 0:0 -- walked as head_tree walks, with
 * openat and O_NOFOLLOW, owned on the descriptor.  Only the uid the squash
 * rules would have used is re-owned: a level owned by anyone else, a link
 * or a level writable by group or others is left for check_dir and the
 * owner rule to refuse.  Missing levels are rendezvous_open's to create,
 * and the export's own directory is never re-owned.
 */
static int head_untree(struct ctx *c, struct report *rep, const struct rendezvous *rv,
		       const struct nfs_squash *sq)
{
	char *top, *slash, *parent, *hp;
	const char *names[3];
	int dfd, r = 0;

	if (sq->at_export)
		return 0;
	top = xstrdup(rv->levels[0]);
	slash = strrchr(top, '/');
	if (!slash || slash[1] == '\0') {
		free(top);
		return 0;
	}
	names[0] = slash + 1;
	names[1] = c->spec->cluster.name;
	names[2] = "nodes";
	parent = slash == top ? xstrdup("/") : xstrndup(top, (size_t)(slash - top));
	hp = ctx_path(c, parent);
	dfd = open(hp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(hp);
	free(parent);
	for (int i = 0; i < 3 && dfd >= 0 && r == 0; i++) {
		int nfd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		struct stat st;

		if (nfd >= 0 && fstat(nfd, &st) == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
		    st.st_uid == sq->anonuid && sq->anonuid != 0) {
			report_changed(rep, rv->levels[i]);
			report_raise(rep, ST_CHANGED);
			if (!ctx_may_write(c)) {
				report_detail(rep, "%s: owned by %u:%u (the export's anonymous uid, from when it "
					      "squashed root); apply gives it back to 0:0", rv->levels[i],
					      (unsigned)st.st_uid, (unsigned)st.st_gid);
			} else if (fchown(nfd, 0, 0) < 0) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot give it back to root: %s",
					      rv->levels[i], strerror(errno));
			} else {
				report_detail(rep, "%s: re-owned from %u:%u to 0:0 (this node exports %s with "
					      "no_root_squash now)", rv->levels[i], (unsigned)st.st_uid,
					      (unsigned)st.st_gid, sq->export);
			}
		}
		close(dfd);
		dfd = nfd;
	}
	if (dfd >= 0)
		close(dfd);
	free(top);
	return r;
}

/*
 * Tell the admin, as a finding, that a squashed share needs the secret:
 * there any client process that runs as the anonymous uid can write a
 * record, and a record names host keys and authorized user keys.
 */
static void squash_note(const struct ctx *c, struct report *rep, const struct rendezvous *rv)
{
	if (c->spec->cluster.secret_file)
		return;
	report_finding(rep, ST_DEGRADED, "discovery.squash.no-secret",
		       "%s: root is squashed to uid %u on this share and there is no cluster.secret_file: "
		       "any process that writes as uid %u on any client of the share can plant a record "
		       "(host keys, users' keys); set cluster.secret_file on every node (docs/cluster.md)",
		       rv->nodes, (unsigned)rv->trusted, (unsigned)rv->trusted);
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
			       "(docs/cluster.md)", rv->nodes, sq->export);
		return;
	}
	hp = ctx_path(c, rv->nodes);
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
			       "(docs/cluster.md)", rv->nodes, fs);
}

/*
 * Make <dir>/<cluster>/nodes exist and decide whom to trust.  Missing levels
 * are created 0755 (plain mkdir: on a squashed share chown to root fails).
 * Existing levels must not be writable by group or others and must be owned
 * by root -- or, on a root_squash share, by the uid root is mapped to, which
 * a probe file shows.  Anything else is refused with the reason.
 */
static int rendezvous_open(struct ctx *c, struct report *rep, const struct peer *self,
			   struct rendezvous *rv)
{
	const struct spec *spec = c->spec;
	uid_t owner = 0;
	bool have_owner = false;
	struct nfs_squash sq;
	bool exported;
	struct stat st;
	int r;

	memset(rv, 0, sizeof(*rv));
	rv->levels[0] = xstrdup(spec->discovery.dir);
	rv->levels[1] = xasprintf("%s/%s", spec->discovery.dir, spec->cluster.name);
	rv->levels[2] = xasprintf("%s/nodes", rv->levels[1]);
	rv->nodes = rv->levels[2];
	exported = nfs_export_lookup(spec, spec->discovery.dir, &sq);
	rv->head_squash = exported && sq.squashed;
	if (rv->head_squash && (r = head_tree(c, rep, rv, &sq)) < 0)
		return r;
	if (exported && !sq.squashed && (r = head_untree(c, rep, rv, &sq)) < 0)
		return r;
	for (int i = 0; i < 3; i++) {
		r = check_dir(c, rep, rv->levels[i], &st);
		if (r == -ENOENT) {
			char *hp;

			if (!ctx_may_write(c)) {
				report_changed(rep, rv->levels[i]);
				report_raise(rep, ST_CHANGED);
				report_detail(rep, "%s: directory missing; apply creates it", rv->levels[i]);
				return -ENOENT;
			}
			hp = ctx_path(c, rv->levels[i]);
			if (mkdir(hp, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot create: %s%s",
					      rv->levels[i], strerror(errno),
					      i == 0 ? " (is the shared filesystem mounted?)" : "");
				free(hp);
				return r;
			}
			free(hp);
			report_changed(rep, rv->levels[i]);
			report_raise(rep, ST_CHANGED);
			r = check_dir(c, rep, rv->levels[i], &st);
		}
		if (r < 0)
			return r;
		if (!have_owner) {
			owner = st.st_uid;
			rv->trusted_gid = st.st_gid;
			have_owner = true;
		} else if (st.st_uid != owner) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u but %s by uid %u; "
				      "refusing a tree with mixed owners", rv->levels[i],
				      (unsigned)st.st_uid, rv->levels[0], (unsigned)owner);
			return -EPERM;
		}
	}
	rv->trusted = owner;
	if (rv->head_squash) {
		/*
		 * Known from this node's own export, not probed: root here writes
		 * as itself, its clients' root as the anonymous uid.  A tree still
		 * root's is read as it is in check and plan (apply re-owns it).
		 */
		if (owner != sq.anonuid && (owner != 0 || ctx_may_write(c))) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, but this node exports "
				      "%s with %s (anonymous uid %u), so its clients' root writes as uid %u; "
				      "refusing it (chown -R %u:%u %s)", rv->nodes, (unsigned)owner, sq.export,
				      sq.all ? "all_squash" : "root_squash", (unsigned)sq.anonuid,
				      (unsigned)sq.anonuid, (unsigned)sq.anonuid, (unsigned)sq.anongid,
				      rv->levels[0]);
			return -EPERM;
		}
		rv->trusted = sq.anonuid;
		rv->trusted_gid = sq.anongid;
		rv->squashed = true;
		report_detail(rep, "%s: this node exports %s with %s: root on its clients writes as uid %u "
			      "(the anonymous uid), so the tree and this node's record are owned by uid %u "
			      "and records owned by uid %u are accepted%s", rv->nodes, sq.export,
			      sq.all ? "all_squash" : "root_squash", (unsigned)sq.anonuid,
			      (unsigned)sq.anonuid, (unsigned)sq.anonuid,
			      spec->cluster.secret_file ? " and authenticated by the cluster secret" : "");
		squash_note(c, rep, rv);
		return 0;
	}
	if (owner == 0) {
		unsquashed_note(c, rep, rv, exported ? &sq : NULL);
		return 0;
	}
	if (exported && owner == sq.anonuid && !ctx_may_write(c)) {
		/* Still the anonymous uid's from when the export squashed root: apply re-owns it. */
		rv->trusted = owner;
		rv->squashed = true;
		return 0;
	}

	/* Not root-owned: trusted only if it is who root writes as on this share. */
	if (ctx_may_write(c)) {
		uid_t u = 0;
		gid_t g = 0;

		r = probe_owner(c, rv->nodes, self->hostname, &u, &g);
		if (r < 0) {
			report_detail(rep, "rendezvous directory %s: cannot create a file: %s",
				      rv->nodes, strerror(-r));
			return r;
		}
		if (u != owner) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, not root (and root "
				      "writes as uid %u here, so it is not a root_squash share); "
				      "refusing it (chown root %s)", rv->nodes, (unsigned)owner,
				      (unsigned)u, rv->nodes);
			return -EPERM;
		}
		rv->trusted_gid = g;
	} else {
		char *rel = xasprintf("%s/%s.rec", rv->nodes, self->hostname);
		char *hp = ctx_path(c, rel);
		bool ok = lstat(hp, &st) == 0 && st.st_uid == owner;

		free(rel);
		free(hp);
		if (!ok) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, not root; only apply "
				      "can tell whether that is root_squash", rv->nodes, (unsigned)owner);
			return -EPERM;
		}
	}
	rv->squashed = true;
	report_detail(rep, "%s: root is squashed to uid %u on this share; records owned by uid %u "
		      "are accepted%s", rv->nodes, (unsigned)owner, (unsigned)owner,
		      spec->cluster.secret_file ? " and authenticated by the cluster secret" : "");
	squash_note(c, rep, rv);
	return 0;
}

static int64_t lease_s(const struct spec *spec)
{
	int64_t s = (int64_t)(spec->discovery.lease_ms / 1000);

	return s > 0 ? s : 1;
}

/* The cluster clock: this node's, corrected by what the shared directory showed. */
static int64_t shared_now(const struct shared *sh)
{
	return disc_now() + sh->offset;
}

static bool suffix(const char *s, size_t n, const char *suf)
{
	size_t l = strlen(suf);

	return n >= l && memcmp(s + n - l, suf, l) == 0;
}

/*
 * Read the file into buf.  Records are replaced by rename, never written in
 * place, so the inode holds st_size bytes: stop there instead of paying a
 * second read for EOF.  -EFBIG past max.
 */
static ssize_t read_record(int fd, char *buf, size_t size, size_t max)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = read(fd, buf + got, max + 1 - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max)
			return -EFBIG;
	}
	return (ssize_t)got;
}

/*
 * A record not taken: say why in the report, and keep the reason for the
 * log (syslog on a real system) so that a planted or tampered record leaves
 * a trace even when nobody reads the run's output.
 */
static void reject(struct disc_run *run, const char *why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void reject(struct disc_run *run, const char *why, const char *fmt, ...)
{
	struct shared *sh = run->priv;
	struct strbuf sb = STRBUF_INIT;
	char *tag;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	tag = xasprintf("discovery.record.%s", why);
	report_finding(&run->notes, ST_DEGRADED, tag, "%s", sb_str(&sb));
	free(tag);
	if (sh->rejects.n < REJECT_LOG_MAX)
		strlist_push(&sh->rejects, sb_str(&sb));
	sh->rejected++;
	sb_free(&sb);
}

/* Prunings go to the step's report: they outlive the pass. */
static void prune(struct disc_run *run, const char *name, const char *why)
{
	struct shared *sh = run->priv;
	char *rel = xasprintf("%s/%s", sh->rv.nodes, name);

	if (fs_remove(run->c, run->rep, rel) > 0) {
		sh->pruned++;
		report_detail(run->rep, "record %s: %s; removed", name, why);
	}
	free(rel);
}

/*
 * One pass over the nodes directory: every fresh, trusted, well-formed
 * record becomes a peer; each rejected one gets a line saying why.  With
 * do_prune (apply), records past their lease are removed as they are met.
 */
static int read_records(struct disc_run *run, bool do_prune)
{
	struct ctx *c = run->c;
	struct shared *sh = run->priv;
	const struct rendezvous *rv = &sh->rv;
	const struct secret *sec = &sh->sec;
	const struct peer *self = &run->self;
	const struct spec *spec = c->spec;
	static char buf[RECORD_MAX_BYTES + 1];
	int64_t now = shared_now(sh), lease = lease_s(spec);
	char *hp = ctx_path(c, rv->nodes);
	DIR *d;
	struct dirent *de;
	int dfd;

	d = opendir(hp);
	free(hp);
	if (!d) {
		int r = -errno;

		report_finding(&run->notes, ST_FAILED, "discovery.dir.unreadable",
			       "rendezvous directory %s: %s", rv->nodes, strerror(errno));
		return r;
	}
	dfd = dirfd(d);
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		size_t nl = strlen(name);
		char host[256], err[640];
		const char *tag;
		struct peer p;
		struct stat st;
		ssize_t len;
		int fd, r, stale;

		if (name[0] == '.')
			continue;       /* ".", "..", probe files */
		if (strstr(name, ".rec.hpcinit-tmp.")) {
			/* A writer's temp file; left behind only by a crash. */
			if (do_prune && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    now - (int64_t)st.st_mtime > lease)
				prune(run, name, "stale temporary file");
			continue;
		}
		if (!suffix(name, nl, ".rec"))
			continue;       /* not ours: left alone */
		if (nl - 4 >= sizeof(host)) {
			reject(run, "bad-name", "record %.64s...: file name too long; rejected", name);
			continue;
		}
		memcpy(host, name, nl - 4);
		host[nl - 4] = '\0';
		if (!record_hostname_valid(host)) {
			reject(run, "bad-name", "record %s: file name is not <hostname>.rec; rejected",
				      name);
			continue;
		}
		if (strcmp(host, self->hostname) == 0)
			continue;       /* this node: described by self, not by its old record */
		stale = 0;
		/*
		 * Back here when the file went stale under us: its writer replaced
		 * it by rename on another NFS client, so the handle this client
		 * held names an inode the server has deleted (ESTALE from open,
		 * fstat or read).  The name now holds the new record: open it again.
		 */
reopen:
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
		if (fd < 0) {
			if (errno == ESTALE && ++stale < RECORD_STALE_TRIES)
				goto reopen;
			if (errno == ELOOP)
				reject(run, "symlink", "record %s: is a symbolic link; rejected", name);
			else if (errno != ENOENT)   /* ENOENT: pruned by another node meanwhile */
				reject(run, "unreadable", "record %s: cannot open: %s; rejected", name, strerror(errno));
			continue;
		}
		if (fstat(fd, &st) < 0) {
			int e = errno;

			close(fd);
			if (e == ESTALE && ++stale < RECORD_STALE_TRIES)
				goto reopen;
			reject(run, "unreadable", "record %s: cannot stat: %s; rejected", name, strerror(e));
			continue;
		}
		if (!S_ISREG(st.st_mode)) {
			reject(run, "not-a-file", "record %s: not a regular file; rejected", name);
			close(fd);
			continue;
		}
		if (st.st_uid == 0 && rv->head_squash && st.st_uid != rv->trusted) {
			/*
			 * On the head's own squashed export only root on this node
			 * writes as root: a record from before the export squashed
			 * root (or from an older hpcinit).  apply gives it to the
			 * trusted writer, on the descriptor that was checked.
			 */
			if (do_prune && fchown(fd, rv->trusted, rv->trusted_gid) == 0)
				report_detail(run->rep, "record %s: owned by root (written before root was "
					      "squashed); re-owned to uid %u", name, (unsigned)rv->trusted);
		} else if (st.st_uid != rv->trusted) {
			reject(run, "wrong-owner", "record %s: owned by uid %u, not by the trusted writer "
				      "(uid %u%s); rejected", name, (unsigned)st.st_uid,
				      (unsigned)rv->trusted, rv->squashed ? ", root squashed" : ", root");
			close(fd);
			continue;
		}
		if (st.st_mode & (S_IWGRP | S_IWOTH)) {
			reject(run, "writable", "record %s: writable by group or others (mode %04o); "
				      "rejected", name, (unsigned)(st.st_mode & 07777));
			close(fd);
			continue;
		}
		if (st.st_size > RECORD_MAX_BYTES) {
			reject(run, "too-large", "record %s: %lld bytes, over the %d-byte limit; rejected",
				      name, (long long)st.st_size, RECORD_MAX_BYTES);
			close(fd);
			continue;
		}
		len = read_record(fd, buf, (size_t)st.st_size, RECORD_MAX_BYTES);
		close(fd);
		if (len == -ESTALE && ++stale < RECORD_STALE_TRIES)
			goto reopen;
		if (len < 0) {
			reject(run, "unreadable", "record %s: cannot read: %s; rejected", name,
				      strerror((int)-len));
			continue;
		}
		r = record_parse(buf, (size_t)len, spec->cluster.name, sec->key, sec->len, &p,
				 err, sizeof(err));
		if (r == 0 && strcmp(p.hostname, host) != 0) {
			snprintf(err, sizeof(err), "describes host %s, not %s", p.hostname, host);
			peer_clear(&p);
			r = -EBADMSG;
		}
		if (r < 0) {
			if (r == -ENODATA)
				reject(run, "truncated", "record %s: truncated (no \"...\" end marker); rejected", name);
			else if (r == -EKEYREJECTED)
				reject(run, "bad-hmac", "record %s: bad HMAC (tampered, or written with another cluster "
				       "secret); rejected", name);
			else if (r == -ENOKEY)
				reject(run, "no-hmac", "record %s: no HMAC while cluster.secret_file is set; rejected",
				       name);
			else
				reject(run, "malformed", "record %s: %s; rejected", name, err);
			if (do_prune && now - (int64_t)st.st_mtime > lease)
				prune(run, name, "rejected and not refreshed within the lease");
			continue;
		}
		if (p.updated > now + DISC_CLOCK_SKEW_S || (int64_t)st.st_mtime > now + DISC_CLOCK_SKEW_S) {
			int64_t ahead = (p.updated > st.st_mtime ? p.updated : (int64_t)st.st_mtime) - now;

			reject(run, "future", "record %s: dated %" PRId64 " s in the future (more than the %d s of "
			       "clock skew allowed); rejected", name, ahead, DISC_CLOCK_SKEW_S);
			peer_clear(&p);
			continue;
		}
		if (now - p.updated > lease) {
			sh->expired++;
			if (do_prune)
				prune(run, name, "lease expired (scale-in)");
			peer_clear(&p);
			continue;
		}
		tag = admit_record(&run->admit, &p, &run->notes, err, sizeof(err));
		if (tag) {
			reject(run, tag, "record %s: %s; rejected", name, err);
			peer_clear(&p);
			continue;
		}
		*peerset_add(&run->found) = p;
	}
	if (errno) {
		int r = -errno;

		report_finding(&run->notes, ST_FAILED, "discovery.dir.unreadable",
			       "rendezvous directory %s: %s", rv->nodes, strerror(errno));
		closedir(d);
		return r;
	}
	closedir(d);
	return 0;
}

/* Write this node's record, stamped now.  The lease refresh alone is not reported as a change. */
static int write_record(struct ctx *c, struct report *rep, const struct rendezvous *rv,
			const struct secret *sec, struct peer *self, int64_t now)
{
	const char *cluster = c->spec->cluster.name;
	char *rel = xasprintf("%s/%s.rec", rv->nodes, self->hostname);
	char *text, *old = NULL, *oldnorm = NULL, *newnorm;
	int64_t updated = self->updated;
	struct report scratch;
	struct peer oldp;
	int r;

	self->updated = now;
	text = record_format(self, cluster, sec->key, sec->len);
	if (!text) {
		report_detail(rep, "%s: cannot compute the record HMAC", rel);
		free(rel);
		self->updated = updated;
		return -EIO;
	}
	/* Same record but for the time stamp?  Then it is only a lease refresh. */
	if (fs_read(c, rel, &old, NULL) == 0 &&
	    record_parse(old, strlen(old), cluster, NULL, 0, &oldp, NULL, 0) == 0) {
		struct peer tmp = *self;

		tmp.updated = oldp.updated;
		oldnorm = record_format(&oldp, cluster, NULL, 0);
		newnorm = record_format(&tmp, cluster, NULL, 0);
		if (strcmp(oldnorm, newnorm) != 0) {
			free(oldnorm);
			oldnorm = NULL;
		}
		free(newnorm);
		peer_clear(&oldp);
	}
	report_init(&scratch);
	r = fs_write(c, oldnorm ? &scratch : rep, rel, text, strlen(text), 0644,
		     rv->trusted, rv->trusted_gid);
	if (r < 0 && oldnorm)
		sb_append(&rep->details, sb_str(&scratch.details));
	report_free(&scratch);
	free(old);
	free(oldnorm);
	free(text);
	free(rel);
	return r;
}

/*
 * Write this node's record and learn the cluster clock from its file time.
 * When this node's clock is off by more than the skew, the record is
 * written again, stamped with the cluster clock, and the run says so.
 */
static int write_self(struct ctx *c, struct report *rep, struct shared *sh, struct peer *self)
{
	int64_t mine = disc_now(), stamp = mine + sh->offset, off;
	char *rel, *hp;
	struct stat st;
	int r;

	r = write_record(c, rep, &sh->rv, &sh->sec, self, stamp);
	/*
	 * Found on real VMs (tests/vm): a compute that mounted the share the
	 * moment the head exported it got ESTALE on its first write, and the
	 * same write worked a few seconds later.  Retry a few times.
	 */
	for (int i = 0; r == -ESTALE && i < 5; i++) {
		report_detail(rep, "stale NFS file handle writing this node's record; retrying in 1 s");
		sleep(1);
		r = write_record(c, rep, &sh->rv, &sh->sec, self, stamp);
	}
	if (r < 0)
		return r;
	sh->written = mine;
	rel = xasprintf("%s/%s.rec", sh->rv.nodes, self->hostname);
	hp = ctx_path(c, rel);
	free(rel);
	r = lstat(hp, &st);
	free(hp);
	if (r < 0)
		return 0;       /* the record is written; the clock stays this node's */
	off = (int64_t)st.st_mtime - mine;
	sh->offset = off > DISC_CLOCK_SKEW_S || off < -DISC_CLOCK_SKEW_S ? off : 0;
	if (mine + sh->offset - stamp > DISC_CLOCK_SKEW_S || stamp - (mine + sh->offset) > DISC_CLOCK_SKEW_S) {
		report_detail(rep, "this node's clock is %" PRId64 " s %s the shared directory's "
			      "(file times in %s); records are stamped and leases judged by the "
			      "directory's clock; fix the time sync (chrony)", off < 0 ? -off : off,
			      off < 0 ? "ahead of" : "behind", sh->rv.nodes);
		r = write_record(c, rep, &sh->rv, &sh->sec, self, mine + sh->offset);
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---- the method's hooks ---- */

static int shared_open(struct disc_run *run)
{
	struct ctx *c = run->c;
	const struct spec *spec = c->spec;
	struct shared *sh = xcalloc(1, sizeof(*sh));
	int r;

	run->priv = sh;
	r = load_secret(c, run->rep, &sh->sec);
	if (r < 0) {
		report_set(run->rep, ST_FAILED, "cluster secret unusable");
		return r;
	}
	if (!spec->discovery.dir) {
		report_set(run->rep, ST_FAILED, "discovery.dir is required with method shared");
		return -EINVAL;
	}
	r = rendezvous_open(c, run->rep, &run->self, &sh->rv);
	if (r == -ENOENT && !ctx_may_write(c)) {
		report_set(run->rep, ST_CHANGED, "rendezvous directory %s missing", spec->discovery.dir);
		return 1;
	}
	if (r < 0)
		report_set(run->rep, ST_FAILED, "rendezvous directory %s refused", spec->discovery.dir);
	return r;
}

/* check/plan: is this node's record there, current and fresh? */
static void compare_self(struct disc_run *run)
{
	struct ctx *c = run->c;
	struct report *rep = run->rep;
	const struct spec *spec = c->spec;
	struct shared *sh = run->priv;
	char *rel = xasprintf("%s/%s.rec", sh->rv.nodes, run->self.hostname), *old = NULL;
	struct peer oldp;
	char *want, *have;

	if (fs_read(c, rel, &old, NULL) < 0) {
		report_changed(rep, rel);
		report_raise(rep, ST_CHANGED);
		report_detail(rep, "%s: missing; apply writes this node's record", rel);
	} else if (record_parse(old, strlen(old), spec->cluster.name, sh->sec.key, sh->sec.len,
				&oldp, NULL, 0) < 0) {
		report_changed(rep, rel);
		report_raise(rep, ST_CHANGED);
		report_detail(rep, "%s: unreadable or bad HMAC; apply rewrites it", rel);
	} else {
		struct peer tmp = run->self;

		tmp.updated = oldp.updated;
		want = record_format(&tmp, spec->cluster.name, NULL, 0);
		have = record_format(&oldp, spec->cluster.name, NULL, 0);
		if (strcmp(want, have) != 0) {
			report_changed(rep, rel);
			report_raise(rep, ST_CHANGED);
			if (c->mode == RUN_PLAN)
				text_diff(&rep->details, rel, have, want);
			else
				report_detail(rep, "%s: differs from this node's state", rel);
		} else if (shared_now(sh) - oldp.updated > lease_s(spec)) {
			report_raise(rep, ST_CHANGED);
			report_detail(rep, "%s: lease expired; peers have dropped this node", rel);
		}
		free(want);
		free(have);
		peer_clear(&oldp);
	}
	free(old);
	free(rel);
}

static int shared_publish(struct disc_run *run)
{
	struct shared *sh = run->priv;
	int r;

	if (!ctx_may_write(run->c)) {
		compare_self(run);
		return 0;
	}
	r = write_self(run->c, run->rep, sh, &run->self);
	if (r < 0) {
		if ((r == -EACCES || r == -EPERM) && sh->rv.trusted == 0)
			report_detail(run->rep, "%s is root's, and root cannot write there: does the share "
				      "squash root (root_squash is the NFS default)?  Then the tree must belong "
				      "to the uid root is squashed to: hpcinit on the head that exports the share "
				      "makes it so; for another server, chown -R 65534:65534 %s on it",
				      sh->rv.nodes, sh->rv.levels[0]);
		report_set(run->rep, ST_FAILED, "cannot write this node's record in %s", sh->rv.nodes);
		return r;
	}
	return 0;
}

/*
 * One read of the directory.  In apply, expired records are removed in the
 * same pass, so a refresh reads the directory once; while the step waits for
 * peers, this node's own lease is kept fresh.
 */
static int shared_list(struct disc_run *run)
{
	struct ctx *c = run->c;
	const struct spec *spec = c->spec;
	struct shared *sh = run->priv;
	int r;

	if (run->waited && disc_now() - sh->written > lease_s(spec) / 3) {
		struct report scratch;

		report_init(&scratch);
		(void)write_self(c, &scratch, sh, &run->self);
		report_free(&scratch);
	}
	sh->rejected = sh->expired = 0;
	strlist_free(&sh->rejects);
	r = read_records(run, ctx_may_write(c));
	if (r < 0) {
		disc_notes_commit(run);
		report_set(run->rep, ST_FAILED, "cannot read %s", sh->rv.nodes);
		return r;
	}
	/* Formed (here or by a member): fewer nodes now means nodes left, not "wait". */
	return disc_expect_met(run);
}

static int shared_finish(struct disc_run *run, const struct peerset *set)
{
	struct ctx *c = run->c;
	struct report *rep = run->rep;
	const struct spec *spec = c->spec;
	struct shared *sh = run->priv;

	for (size_t i = 0; i < sh->rejects.n; i++)
		log_warn("%s", sh->rejects.v[i]);
	if (sh->rejected > sh->rejects.n)
		log_warn("%zu more records rejected; the run's details list them (up to 1000)",
			 sh->rejected - sh->rejects.n);
	if (set->n >= spec->discovery.expect) {
		report_set(rep, ST_OK, "%zu node%s known (expect %u)%s%s", set->n,
			   set->n == 1 ? "" : "s", spec->discovery.expect,
			   run->waited ? " after waiting" : "",
			   sh->rejected ? "; records rejected, see details" : "");
	} else if (run->ready || !ctx_may_write(c)) {
		report_detail(rep, "%zu nodes known, fewer than expect %u%s%s%s", set->n,
			      spec->discovery.expect, run->ready ? " (" : "",
			      run->ready ? run->ready_why : "", run->ready ? ")" : "");
		report_set(rep, ST_OK, "%zu node%s known (expect %u)%s", set->n, set->n == 1 ? "" : "s",
			   spec->discovery.expect,
			   sh->rejected ? "; records rejected, see details" : "");
	} else if (c->refresh) {
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes in %s, and none says the "
			   "cluster has formed (a refresh does not wait for them)", set->n,
			   spec->discovery.expect, sh->rv.nodes);
	} else {
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes after waiting %" PRIu64
			   " s for peers in %s", set->n, spec->discovery.expect,
			   spec->discovery.wait_ms / 1000, sh->rv.nodes);
	}
	return 0;
}

/* hpcinit leave: remove this node's record; peers drop it on their next read. */
static int shared_leave(struct disc_run *run)
{
	struct shared *sh = run->priv;
	char *rel = xasprintf("%s/%s.rec", sh->rv.nodes, run->self.hostname);
	int r = fs_remove(run->c, run->rep, rel);

	if (r < 0)
		report_set(run->rep, ST_FAILED, "cannot remove %s: %s", rel, strerror(-r));
	else if (r > 0)
		report_set(run->rep, ST_CHANGED, "%s removed", rel);
	else
		report_set(run->rep, ST_OK, "%s: no record to remove", rel);
	free(rel);
	return r < 0 ? r : 0;
}

static void shared_close(struct disc_run *run)
{
	struct shared *sh = run->priv;

	if (!sh)
		return;
	secret_free(&sh->sec);
	rendezvous_free(&sh->rv);
	strlist_free(&sh->rejects);
	free(sh);
	run->priv = NULL;
}

const struct disc_method_ops disc_method_shared = {
	.name = "shared",
	.id = DISC_SHARED,
	/*
	 * Nodes of a scale set start within a fraction of a second of each
	 * other: a short first poll, doubling up to WAIT_POLL_CAP_MS, finds
	 * them without a fixed 250 ms wait, and a long wait still costs one
	 * directory read every 5 s.
	 */
	.first_poll_ms = 50,
	.open = shared_open,
	.publish = shared_publish,
	.list = shared_list,
	.collect = disc_nop,
	.finish = shared_finish,
	.leave = shared_leave,
	.close = shared_close,
};

int disc_secret_load(const struct ctx *c, struct report *rep, char **key, size_t *len)
{
	struct secret s = { NULL, 0 };
	int r = load_secret(c, rep, &s);

	*key = s.key;
	*len = s.len;
	return r;
}
