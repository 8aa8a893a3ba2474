/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous in a shared directory: <discovery.dir>/<cluster>/<collection>/
 * on a shared filesystem, trusted by its owner.  Whoever could write there
 * could plant an entry, so every level must be a directory (not a link),
 * not writable by group or others, all of one owner: root, or -- on a
 * root_squash share -- the uid root is mapped to, which a probe file shows.
 * A head that exports the share with root squashed makes the tree the
 * export's anonymous uid's, so that every entry has the owner the clients'
 * root writes as.
 *
 * Entries are read through one O_NOFOLLOW|O_NONBLOCK descriptor: a link,
 * a FIFO or a device is refused without blocking; what is checked (owner,
 * mode, type, size) is what is read; an entry replaced by rename on another
 * NFS client (ESTALE from open, fstat or read) is opened again.  Reading
 * the entries (one, or a list: batches, threads, the read cache) is
 * dirlist.c's.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "mounts.h"
#include "nfs/squash.h"
#include "rendezvous.h"
#include "dirlist.h"


/* 0 when the directory passes the mode check; -ENOENT when missing. */
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
static int probe_owner(const struct ctx *c, const char *dir, const char *host,
		       uid_t *ret_uid, gid_t *ret_gid)
{
	char *rel = xasprintf("%s/.hpcinit-probe.%s.%ld", dir, host, (long)getpid());
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

/* The directory above the tree, open, and the names of the three levels; -1 when none. */
static int tree_top(const struct rendezvous *rv, const char *names[3], char **top)
{
	char *slash, *parent, *hp;
	size_t tl;
	int dfd;

	*top = xstrdup(rv->tree.levels[0]);
	tl = strlen(*top);
	while (tl > 1 && (*top)[tl - 1] == '/')
		(*top)[--tl] = '\0';
	slash = strrchr(*top, '/');
	if (!slash || slash[1] == '\0')
		return -2;
	names[0] = slash + 1;
	names[1] = rv->c->spec->cluster.name;
	names[2] = rv->o.collection;
	parent = slash == *top ? xstrdup("/") : xstrndup(*top, (size_t)(slash - *top));
	hp = ctx_path(rv->c, parent);
	dfd = open(hp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(hp);
	free(parent);
	return dfd;
}

/*
 * This node is the NFS server of the share and exports it with root (or
 * all) squashed: root on every client writes as the export's anonymous uid,
 * while root here writes as itself.  So the head makes each level of the
 * tree that uid's -- creating it 0755, or re-owning what an earlier run (or
 * a no_root_squash export) made as root -- and its entries are written as
 * that uid: every level and every entry then has the one owner the
 * clients' probe finds.  Walked with openat and O_NOFOLLOW from the
 * directory above the tree, owner and mode set on the descriptor, so a
 * link swapped in is never followed.  A level that is a link, not a
 * directory, writable by group or others or owned by someone else is left
 * alone for check_dir and the owner rule to refuse with the reason.  The
 * export's own directory is never re-owned: discovery.dir must lie inside it.
 */
static int head_tree(struct rendezvous *rv, struct report *rep, const struct nfs_squash *sq)
{
	struct ctx *c = rv->c;
	const char *names[3];
	char *top;
	int dfd, r = 0;

	dfd = tree_top(rv, names, &top);
	if (sq->at_export || dfd == -2) {
		report_detail(rep, "discovery.dir %s is the export %s itself: root on the clients (squashed "
			      "to uid %u) cannot create records in a directory root owns there, and hpcinit "
			      "does not hand the export to that uid; use a directory inside it "
			      "(e.g. %s/.hpcinit)", rv->tree.levels[0], sq->export, (unsigned)sq->anonuid,
			      sq->export);
		if (dfd >= 0)
			close(dfd);
		free(top);
		return -EPERM;
	}
	for (int i = 0; i < 3 && r == 0 && dfd >= 0; i++) {
		const int oflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;
		int nfd = openat(dfd, names[i], oflags);
		const char *lv = rv->tree.levels[i];
		struct stat st;

		if (nfd < 0 && errno == ENOENT && ctx_may_write(c) && (i < 2 || rv->o.create)) {
			if (mkdirat(dfd, names[i], 0700) < 0 && errno != EEXIST) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot create: %s", lv,
					      strerror(errno));
				break;
			}
			nfd = openat(dfd, names[i], oflags);
			if (nfd < 0 || fstat(nfd, &st) < 0 ||
			    ((st.st_uid != sq->anonuid || st.st_gid != sq->anongid) &&
			     fchown(nfd, sq->anonuid, sq->anongid) < 0) || fchmod(nfd, 0755) < 0) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot give it to uid %u: %s",
					      lv, (unsigned)sq->anonuid, strerror(errno));
			} else {
				report_changed(rep, lv);
				report_raise(rep, ST_CHANGED);
				report_detail(rep, "%s: created, owned by uid %u", lv, (unsigned)sq->anonuid);
			}
		} else if (nfd >= 0 && fstat(nfd, &st) == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
			   (st.st_uid == 0 || st.st_uid == sq->anonuid) &&
			   (st.st_uid != sq->anonuid || st.st_gid != sq->anongid)) {
			/* Made as root earlier (an upgrade, or the export squashed root later). */
			report_changed(rep, lv);
			report_raise(rep, ST_CHANGED);
			if (!ctx_may_write(c)) {
				report_detail(rep, "%s: owned by %u:%u; apply gives it to %u:%u (the export's "
					      "anonymous uid)", lv, (unsigned)st.st_uid,
					      (unsigned)st.st_gid, (unsigned)sq->anonuid, (unsigned)sq->anongid);
			} else if (fchown(nfd, sq->anonuid, sq->anongid) < 0) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot give it to uid %u: %s",
					      lv, (unsigned)sq->anonuid, strerror(errno));
			} else {
				report_detail(rep, "%s: re-owned from %u:%u to %u:%u (the export's anonymous uid)",
					      lv, (unsigned)st.st_uid, (unsigned)st.st_gid,
					      (unsigned)sq->anonuid, (unsigned)sq->anongid);
			}
		}
		close(dfd);
		dfd = nfd;      /* missing in check/plan, a link, ...: check_dir says what */
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
 * anonymous uid owns goes back to 0:0 -- walked as head_tree walks.  Only
 * the uid the squash rules would have used is re-owned.
 */
static int head_untree(struct rendezvous *rv, struct report *rep, const struct nfs_squash *sq)
{
	struct ctx *c = rv->c;
	const char *names[3];
	char *top;
	int dfd, r = 0;

	if (sq->at_export)
		return 0;
	dfd = tree_top(rv, names, &top);
	for (int i = 0; i < 3 && dfd >= 0 && r == 0; i++) {
		int nfd = openat(dfd, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		const char *lv = rv->tree.levels[i];
		struct stat st;

		if (nfd >= 0 && fstat(nfd, &st) == 0 && !(st.st_mode & (S_IWGRP | S_IWOTH)) &&
		    st.st_uid == sq->anonuid && sq->anonuid != 0) {
			report_changed(rep, lv);
			report_raise(rep, ST_CHANGED);
			if (!ctx_may_write(c)) {
				report_detail(rep, "%s: owned by %u:%u (the export's anonymous uid, from when it "
					      "squashed root); apply gives it back to 0:0", lv,
					      (unsigned)st.st_uid, (unsigned)st.st_gid);
			} else if (fchown(nfd, 0, 0) < 0) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot give it back to root: %s",
					      lv, strerror(errno));
			} else {
				report_detail(rep, "%s: re-owned from %u:%u to 0:0 (this node exports %s with "
					      "no_root_squash now)", lv, (unsigned)st.st_uid,
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

/* Check (and in apply create) the three levels; the owner they share in *owner. */
static int walk_levels(struct rendezvous *rv, struct report *rep, uid_t *owner)
{
	struct ctx *c = rv->c;
	bool have_owner = false;
	struct stat st;
	int r;

	for (int i = 0; i < 3; i++) {
		const char *lv = rv->tree.levels[i];

		r = check_dir(c, rep, lv, &st);
		if (r == -ENOENT) {
			char *hp;

			if (i == 2 && !rv->o.create)
				return -ENOENT;         /* nobody made this collection yet */
			if (!ctx_may_write(c)) {
				report_changed(rep, lv);
				report_raise(rep, ST_CHANGED);
				report_detail(rep, "%s: directory missing; apply creates it", lv);
				return -ENOENT;
			}
			hp = ctx_path(c, lv);
			if (mkdir(hp, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot create: %s%s", lv,
					      strerror(errno), i == 0 ? " (is the shared filesystem mounted?)" : "");
				free(hp);
				return r;
			}
			free(hp);
			report_changed(rep, lv);
			report_raise(rep, ST_CHANGED);
			r = check_dir(c, rep, lv, &st);
		}
		if (r < 0)
			return r;
		if (!have_owner) {
			*owner = st.st_uid;
			rv->tree.trusted_gid = st.st_gid;
			have_owner = true;
		} else if (st.st_uid != *owner) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u but %s by uid %u; "
				      "refusing a tree with mixed owners", lv, (unsigned)st.st_uid,
				      rv->tree.levels[0], (unsigned)*owner);
			return -EPERM;
		}
	}
	return 0;
}

/* Not root-owned and not this node's own export: trusted only if root writes as that uid here. */
static int trust_squashed(struct rendezvous *rv, struct report *rep, uid_t owner)
{
	struct ctx *c = rv->c;
	const char *dir = rv->tree.levels[2];
	struct stat st;
	int r;

	if (ctx_may_write(c)) {
		uid_t u = 0;
		gid_t g = 0;

		r = probe_owner(c, dir, rv->o.self, &u, &g);
		if (r < 0) {
			report_detail(rep, "rendezvous directory %s: cannot create a file: %s", dir,
				      strerror(-r));
			return r;
		}
		if (u != owner) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, not root (and root "
				      "writes as uid %u here, so it is not a root_squash share); "
				      "refusing it (chown root %s)", dir, (unsigned)owner, (unsigned)u, dir);
			return -EPERM;
		}
		rv->tree.trusted_gid = g;
	} else {
		/* check/plan write nothing: this node's own record shows whom root writes as. */
		char *rel = xasprintf("%s/nodes/%s.rec", rv->tree.levels[1], rv->o.self);
		char *hp = ctx_path(c, rel);
		bool ok = lstat(hp, &st) == 0 && st.st_uid == owner;

		free(rel);
		free(hp);
		if (!ok) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, not root; only apply "
				      "can tell whether that is root_squash", dir, (unsigned)owner);
			return -EPERM;
		}
	}
	rv->tree.squashed = true;
	report_detail(rep, "%s: root is squashed to uid %u on this share; records owned by uid %u "
		      "are accepted%s", dir, (unsigned)owner, (unsigned)owner,
		      c->spec->cluster.secret_file ? " and authenticated by the cluster secret" : "");
	return 0;
}

static int dir_open(struct rendezvous *rv, struct report *rep)
{
	struct ctx *c = rv->c;
	const struct spec *spec = c->spec;
	struct rv_tree *t = &rv->tree;
	struct nfs_squash sqv = { 0 }, *sq = &sqv;
	bool exported;
	uid_t owner = 0;
	int r;

	if (!spec->discovery.dir) {
		report_detail(rep, "discovery.dir is required with method shared");
		return -EINVAL;
	}
	t->levels[0] = xstrdup(spec->discovery.dir);
	t->levels[1] = xasprintf("%s/%s", spec->discovery.dir, spec->cluster.name);
	t->levels[2] = xasprintf("%s/%s", t->levels[1], rv->o.collection);
	rv->where = xasprintf("%s/", t->levels[2]);
	/* On a mount of the spec that is not there, the tree would be the local disk's. */
	if ((r = mounts_require(c, rep, "discovery.dir", spec->discovery.dir)) < 0)
		return r;
	exported = nfs_export_lookup(spec, spec->discovery.dir, sq);
	t->head_squash = exported && sq->squashed;
	if (t->head_squash && (r = head_tree(rv, rep, sq)) < 0)
		return r;
	if (exported && !sq->squashed && (r = head_untree(rv, rep, sq)) < 0)
		return r;
	if ((r = walk_levels(rv, rep, &owner)) < 0)
		return r;
	t->trusted = owner;
	if (t->head_squash) {
		/*
		 * Known from this node's own export, not probed: root here writes
		 * as itself, its clients' root as the anonymous uid.  A tree still
		 * root's is read as it is in check and plan (apply re-owns it).
		 */
		if (owner != sq->anonuid && (owner != 0 || ctx_may_write(c))) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, but this node exports "
				      "%s with %s (anonymous uid %u), so its clients' root writes as uid %u; "
				      "refusing it (chown -R %u:%u %s)", t->levels[2], (unsigned)owner,
				      sq->export, sq->all ? "all_squash" : "root_squash", (unsigned)sq->anonuid,
				      (unsigned)sq->anonuid, (unsigned)sq->anonuid, (unsigned)sq->anongid,
				      t->levels[0]);
			return -EPERM;
		}
		t->trusted = sq->anonuid;
		t->trusted_gid = sq->anongid;
		t->squashed = true;
		report_detail(rep, "%s: this node exports %s with %s: root on its clients writes as uid %u "
			      "(the anonymous uid), so the tree and this node's record are owned by uid %u "
			      "and records owned by uid %u are accepted%s", t->levels[2], sq->export,
			      sq->all ? "all_squash" : "root_squash", (unsigned)sq->anonuid,
			      (unsigned)sq->anonuid, (unsigned)sq->anonuid,
			      spec->cluster.secret_file ? " and authenticated by the cluster secret" : "");
		return 0;
	}
	if (owner == 0)
		return 0;
	if (exported && owner == sq->anonuid && !ctx_may_write(c)) {
		/* Still the anonymous uid's from when the export squashed root: apply re-owns it. */
		t->squashed = true;
		return 0;
	}
	return trust_squashed(rv, rep, owner);
}

/*
 * Read the file into buf.  Entries are replaced by rename, never written in
 * place, so the inode holds st_size bytes: stop there instead of paying a
 * second read for EOF.  -EFBIG past max.
 */
static int dir_get(struct rendezvous *rv, const char *name, struct rv_entry *e, char **ret)
{
	DIR *d;
	int r;

	*ret = NULL;
	if (strchr(name, '/') || name[0] == '.' || !name[0])
		return -EINVAL;
	if ((r = rv_dir_open_coll(rv, &d)) < 0)
		return r;
	r = rv_dir_read_entry(dirfd(d), name, &rv->tree, false, rv->o.max_bytes, e, ret);
	closedir(d);
	return r;
}

static int dir_put(struct rendezvous *rv, struct report *rep, const char *name, const char *data,
		   size_t len)
{
	char *path = xasprintf("%s/%s", rv->tree.levels[2], name);
	/*
	 * No readdir of 10,000 entries before each put: the list removes this
	 * node's leftovers.  The record is synced as a file, not its directory:
	 * it is this node's alone and written again at every lease refresh, so
	 * after a crash its name holding the old record or the new one is enough.
	 * A collection whose values always differ from the ones they replace
	 * (puts_differ: a record carries its time, and its writer read the old
	 * one already) is not read again to compare (on NFS, an open and a read
	 * fewer); plan and check still read it, for the difference they print.
	 */
	unsigned replace = rv->o.puts_differ && ctx_may_write(rv->c) ? FS_REPLACE : 0;
	int r = fs_write_opt(rv->c, rep, path, data, len, 0644, rv->tree.trusted, rv->tree.trusted_gid,
			     FS_KEEP_TEMPS | FS_SYNC_FILE | replace);

	free(path);
	return r;
}

static int dir_remove(struct rendezvous *rv, struct report *rep, const char *name)
{
	char *path = xasprintf("%s/%s", rv->tree.levels[2], name);
	int r = fs_remove(rv->c, rep, path);

	free(path);
	return r;
}

int rv_dir_now(struct rendezvous *rv, int64_t *ret)
{
	char *rel = xasprintf("%s/.hpcinit-clock.%s", rv->tree.levels[2], rv->o.self);
	char *hp = ctx_path(rv->c, rel);
	struct stat st;
	int fd, r = 0;

	/*
	 * One name per node, not per run: a run SIGKILLed before its unlink
	 * leaves one file, which the next run reuses.  Two runs at once share
	 * it harmlessly (each reads the time of its own write on its own fd).
	 */
	fd = open(hp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK, 0600);
	if (fd < 0) {
		r = -errno;
	} else {
		/* A write: its time is the server's, whatever the create carried. */
		errno = 0;
		if (write(fd, "\n", 1) != 1 || fstat(fd, &st) < 0)
			r = errno ? -errno : -EIO;
		else if (!S_ISREG(st.st_mode))
			r = -EPERM;
		close(fd);
		(void)unlink(hp);
	}
	if (r == 0) {
		*ret = (int64_t)st.st_mtime;
		rv->dir_clock = st.st_mtim;     /* for dirlist.c: whether the directory has been quiet */
		rv->dir_clock_ms = now_ms();
	}
	free(rel);
	free(hp);
	return r;
}

static int dir_list(struct rendezvous *rv, struct report *rep, rv_want_fn want, rv_each_fn each,
		    void *arg)
{
	struct rv_lister l = { .want = want, .each = each, .arg = arg };

	return rv_dir_list_prep(rv, rep, &l);
}

static void dir_close(struct rendezvous *rv)
{
	for (int i = 0; i < 3; i++)
		free(rv->tree.levels[i]);
	rv_read_cache_free(rv->read_cache);
	rv->read_cache = NULL;
}

const struct rv_ops rv_dir_ops = {
	.name = "dir",
	.open = dir_open,
	.get = dir_get,
	.put = dir_put,
	.remove = dir_remove,
	.list = dir_list,
	.close = dir_close,
};
