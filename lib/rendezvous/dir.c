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
 * NFS client (ESTALE from open, fstat or read) is opened again.
 *
 * A run that lists the collection again and again (a node waiting for
 * discovery.expect) asks for what it read to be cached (rv_lister.reuse_ms):
 * an entry whose file is still the one read -- device, inode, size, change
 * and modification times, owner and mode, as one fstatat sees them -- is
 * given from the cache, not opened and read again, for at most reuse_ms
 * after it was read; with the lister's prep_copy, a copy of its prep too
 * (discovery: the record parsed and its HMAC checked), not made again.  Writers replace entries by rename, and any write,
 * chown or chmod sets the change time, which only the kernel sets; so what
 * is checked is still what was read.  The bound covers a client whose
 * cached attributes lag the server's (NFS revalidates them on open, not on
 * stat).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
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

#define TMP_MARK ".hpcinit-tmp."        /* fs_write's temporary files */

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
static ssize_t read_fd(int fd, char *buf, size_t size, size_t max)
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

/* e->why points into why[256]: the caller's, so that threads read entries side by side. */
#define WHY_LEN 256
static int refuse(struct rv_entry *e, char *why, const char *tag, int r, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int refuse(struct rv_entry *e, char *why, const char *tag, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_LEN, fmt, ap);
	va_end(ap);
	e->refused = tag;
	e->why = why;
	return r;
}

/* stout (optional): the stat of the descriptor read, when the entry was read (0). */
static int read_entry(int dfd, const char *name, const struct rv_tree *t, bool reown, size_t max,
		      struct rv_entry *e, char **ret, char *why, struct stat *stout)
{
	struct stat st;
	ssize_t len;
	char *buf;
	int fd, stale = 0;

	*ret = NULL;
	e->name = name;
	/*
	 * Back here when the file went stale under us: its writer replaced it
	 * by rename on another NFS client, so the handle this client held
	 * names an inode the server has deleted (ESTALE from open, fstat or
	 * read).  The name now holds the new entry: open it again.
	 */
reopen:
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int err = errno;

		if (err == ESTALE && ++stale < RV_STALE_TRIES)
			goto reopen;
		if (err == ELOOP)
			return refuse(e, why, "symlink", -ELOOP, "is a symbolic link");
		if (err == ENOENT)
			return -ENOENT;         /* removed meanwhile */
		return refuse(e, why, "unreadable", -err, "cannot open: %s", strerror(err));
	}
	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		if (err == ESTALE && ++stale < RV_STALE_TRIES)
			goto reopen;
		return refuse(e, why, "unreadable", -err, "cannot stat: %s", strerror(err));
	}
	e->mtime = (int64_t)st.st_mtime;
	e->reowned = false;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(e, why, "not-a-file", -EPERM, "not a regular file");
	}
	if (st.st_uid == 0 && t->head_squash && st.st_uid != t->trusted) {
		/*
		 * On the head's own squashed export only root on this node writes
		 * as root: an entry from before the export squashed root (or from
		 * an older hpcinit).  apply gives it to the trusted writer, on the
		 * descriptor that was checked.
		 */
		if (reown && fchown(fd, t->trusted, t->trusted_gid) == 0)
			e->reowned = true;
	} else if (st.st_uid != t->trusted) {
		close(fd);
		return refuse(e, why, "wrong-owner", -EPERM, "owned by uid %u, not by the trusted writer "
			      "(uid %u%s)", (unsigned)st.st_uid, (unsigned)t->trusted,
			      t->squashed ? ", root squashed" : ", root");
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return refuse(e, why, "writable", -EPERM, "writable by group or others (mode %04o)",
			      (unsigned)(st.st_mode & 07777));
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return refuse(e, why, "too-large", -EFBIG, "%lld bytes, over the %zu-byte limit",
			      (long long)st.st_size, max);
	}
	/* Sized by the file, not the limit: 10,000 records of 2 KiB are read in 2 KiB buffers. */
	buf = xmalloc((size_t)st.st_size + 2);
	len = read_fd(fd, buf, (size_t)st.st_size, (size_t)st.st_size + 1);
	if (len == -EFBIG)
		len = -EAGAIN;  /* it grew while read: written in place, not replaced by rename */
	close(fd);
	if (len == -ESTALE && ++stale < RV_STALE_TRIES) {
		free(buf);
		goto reopen;
	}
	if (len < 0) {
		free(buf);
		return refuse(e, why, "unreadable", (int)len, "cannot read: %s", strerror((int)-len));
	}
	buf[len] = '\0';
	e->value = buf;
	e->len = (size_t)len;
	*ret = buf;
	if (stout)
		*stout = st;
	return 0;
}

int rv_dir_read_entry(int dfd, const char *name, const struct rv_tree *t, bool reown, size_t max,
		      struct rv_entry *e, char **ret)
{
	static char why[WHY_LEN];

	return read_entry(dfd, name, t, reown, max, e, ret, why, NULL);
}

/* ---- the read cache: what earlier passes of this run read, by name (open addressing) ---- */
struct rv_cached {
	char *name;                     /* NULL: an empty slot */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
	uid_t uid;
	mode_t mode;
	uint64_t read_ms;               /* the start of the pass that read it (CLOCK_MONOTONIC) */
	char *val;
	size_t len;
	void *prep;                     /* the lister's prep of it (a copy: prep_copy), or NULL */
};

struct rv_read_cache {
	struct rv_cached *v;
	size_t cap, n;                  /* cap: a power of two, at least twice n */
	size_t reused;                  /* entries given from here (tests, benches) */
	size_t prep_reused;             /* of them, with their prep copied, not made again */
	void (*prep_free)(void *);      /* the lister's, for the preps kept */
};

static size_t cache_slot(const struct rv_read_cache *k, const char *name)
{
	uint64_t h = 14695981039346656037ULL;   /* FNV-1a */
	size_t i;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	for (i = (size_t)h & (k->cap - 1); k->v[i].name && strcmp(k->v[i].name, name) != 0;
	     i = (i + 1) & (k->cap - 1))
		;
	return i;
}

static struct rv_cached *cache_find(const struct rv_read_cache *k, const char *name)
{
	struct rv_cached *e = k->cap ? &k->v[cache_slot(k, name)] : NULL;

	return e && e->name ? e : NULL;
}

static bool cache_same(const struct rv_cached *e, const struct stat *st)
{
	return S_ISREG(st->st_mode) && e->dev == st->st_dev && e->ino == st->st_ino &&
	       e->size == st->st_size && e->uid == st->st_uid && e->mode == st->st_mode &&
	       e->mtim.tv_sec == st->st_mtim.tv_sec && e->mtim.tv_nsec == st->st_mtim.tv_nsec &&
	       e->ctim.tv_sec == st->st_ctim.tv_sec && e->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

static void cached_clear(const struct rv_read_cache *k, struct rv_cached *e)
{
	free(e->val);
	if (e->prep && k->prep_free)
		k->prep_free(e->prep);
	e->val = NULL;
	e->prep = NULL;
}

/* Keep val and prep (taken) as name's entry, read from the file st describes. */
static void cache_put(struct rv_read_cache *k, const char *name, const struct stat *st, char *val, size_t len,
		      void *prep, uint64_t read_ms)
{
	struct rv_cached *e;

	if (2 * (k->n + 1) > k->cap) {
		struct rv_read_cache old = *k;

		k->cap = k->cap ? 2 * k->cap : 64;
		k->v = xcalloc(k->cap, sizeof(*k->v));
		for (size_t i = 0; i < old.cap; i++)
			if (old.v[i].name)
				k->v[cache_slot(k, old.v[i].name)] = old.v[i];
		free(old.v);
	}
	e = &k->v[cache_slot(k, name)];
	if (e->name) {
		cached_clear(k, e);
	} else {
		e->name = xstrdup(name);
		k->n++;
	}
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtim = st->st_mtim;
	e->ctim = st->st_ctim;
	e->uid = st->st_uid;
	e->mode = st->st_mode;
	e->read_ms = read_ms;
	e->val = val;
	e->len = len;
	e->prep = prep;
}

static void cache_free(struct rv_read_cache *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->cap; i++) {
		free(k->v[i].name);
		cached_clear(k, &k->v[i]);
	}
	free(k->v);
	free(k);
}

static int open_coll(const struct rendezvous *rv, DIR **ret)
{
	char *hp = ctx_path(rv->c, rv->tree.levels[2]);
	int fd = open(hp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	free(hp);
	if (fd < 0)
		return -errno;
	*ret = fdopendir(fd);
	if (!*ret) {
		int r = -errno;

		close(fd);
		return r;
	}
	return 0;
}

static int dir_get(struct rendezvous *rv, const char *name, struct rv_entry *e, char **ret)
{
	DIR *d;
	int r;

	*ret = NULL;
	if (strchr(name, '/') || name[0] == '.' || !name[0])
		return -EINVAL;
	if ((r = open_coll(rv, &d)) < 0)
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
	 */
	int r = fs_write_opt(rv->c, rep, path, data, len, 0644, rv->tree.trusted, rv->tree.trusted_gid,
			     FS_KEEP_TEMPS | FS_SYNC_FILE);

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
	if (r == 0)
		*ret = (int64_t)st.st_mtime;
	free(rel);
	free(hp);
	return r;
}

/*
 * One pass over the collection, in batches of LIST_BATCH names: the names
 * first (readdir and want, on this thread), then the entries read -- and
 * prepped, when the lister has prep -- on up to RV_LIST_THREADS threads
 * (opening, checking and reading 10,000 small files is most of a refresh
 * at that size, and each entry is independent), then each, on this thread
 * in readdir's order.  Names starting with "." (probes) are skipped;
 * fs_write's temporary files come with refused "temp" and their file time,
 * for the caller to prune; a name want declines is never opened.
 */
#define LIST_BATCH 1024
#define LIST_PAR_MIN 128                /* a smaller batch is read on this thread alone */

struct slot {
	size_t name_off;                /* in the batch's name pool */
	bool temp;
	bool hit;                       /* given from the cache: val is the cache's */
	bool prep_hit;                  /* and its prep a copy of the cache's */
	int r;
	char *val;
	void *cache_prep;               /* the copy of its prep the cache will keep */
	struct stat st;                 /* with a cache: the descriptor read */
	struct rv_entry e;
	char why[WHY_LEN];
};

struct batch {
	const struct ctx *c;
	struct slot *s;
	size_t n;
	struct strbuf names;
	int dfd;
	const struct rv_tree *t;
	bool reown;
	size_t max;
	const struct rv_lister *l;
	struct rv_read_cache *cache;    /* NULL: nothing cached (reuse_ms 0); read-only while reading */
	uint64_t start_ms;              /* the pass's start */
	size_t next;                    /* the next slot to read: taken atomically */
};

/* The slot's entry from the cache, when its file is the one read within reuse_ms (any thread). */
static bool reuse(const struct batch *b, struct slot *s)
{
	const struct rv_cached *k = cache_find(b->cache, s->e.name);
	struct stat st;

	if (!k || b->start_ms - k->read_ms >= b->l->reuse_ms)
		return false;
	if (fstatat(b->dfd, s->e.name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !cache_same(k, &st) ||
	    st.st_uid != b->t->trusted)
		return false;   /* gone, changed or not the same: read as any other */
	s->hit = true;
	s->r = 0;
	s->val = k->val;
	s->e.value = k->val;
	s->e.len = k->len;
	s->e.mtime = (int64_t)st.st_mtime;
	if (k->prep && b->l->prep_copy) {
		s->e.prep = b->l->prep_copy(b->l->arg, k->prep);
		s->prep_hit = true;
	}
	return true;
}

static void read_slot(struct batch *b, struct slot *s)
{
	if (s->temp)
		return;
	if (!b->cache || !reuse(b, s))
		s->r = read_entry(b->dfd, s->e.name, b->t, b->reown, b->max, &s->e, &s->val, s->why,
				  b->cache ? &s->st : NULL);
	if (s->r == 0 && b->l->prep && !s->e.prep) {
		s->e.prep = b->l->prep(b->l->arg, &s->e);
		if (b->cache && s->e.prep && b->l->prep_copy)
			s->cache_prep = b->l->prep_copy(b->l->arg, s->e.prep);
	}
}

static void batch_work(struct batch *b)
{
	size_t i;

	while ((i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < b->n)
		read_slot(b, &b->s[i]);
}

static void *batch_worker(void *arg)
{
	struct batch *b = arg;

	batch_work(b);
	if (b->l->thread_end)
		b->l->thread_end();
	return NULL;
}

/* As many threads as this process may run on, up to RV_LIST_THREADS. */
static unsigned list_threads(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > RV_LIST_THREADS ? RV_LIST_THREADS : (unsigned)n;
}

/* Read (and prep) every slot of the batch; the workers block every signal: they are this thread's. */
static void batch_read(struct batch *b, unsigned threads)
{
	pthread_t tid[RV_LIST_THREADS];
	unsigned started = 0;

	for (size_t i = 0; i < b->n; i++)
		b->s[i].e.name = b->names.buf + b->s[i].name_off;
	b->next = 0;
	if (threads > 1 && b->n >= LIST_PAR_MIN) {
		sigset_t all, old;

		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		for (unsigned i = 1; i < threads; i++)
			if (pthread_create(&tid[started], NULL, batch_worker, b) == 0)
				started++;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	batch_work(b);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}

/*
 * each for every slot, in order; after a stop, only frees.  The first
 * non-zero return.  What was read goes into the cache only after every
 * each of the batch: a name readdir gave twice (a directory changed while
 * listed) replaces no value an earlier slot still lends.
 */
static int batch_each(struct batch *b, int stop)
{
	for (size_t i = 0; i < b->n; i++) {
		struct slot *s = &b->s[i];

		if (!stop && (s->temp || s->r != -ENOENT || s->e.refused))
			stop = b->l->each(b->l->arg, &s->e);
		else if (s->e.prep && b->l->prep_free)
			b->l->prep_free(s->e.prep);
	}
	for (size_t i = 0; i < b->n; i++) {
		struct slot *s = &b->s[i];

		if (s->hit) {
			struct rv_cached *k = cache_find(b->cache, s->e.name);

			b->cache->reused++;
			b->cache->prep_reused += s->prep_hit;
			if (s->cache_prep && k && !k->prep)
				k->prep = s->cache_prep;        /* cached before it had a prep */
			else if (s->cache_prep && b->l->prep_free)
				b->l->prep_free(s->cache_prep);
		} else if (b->cache && s->r == 0 && s->val && !s->e.reowned) {
			cache_put(b->cache, s->e.name, &s->st, s->val, s->e.len, s->cache_prep, b->start_ms);
		} else {
			free(s->val);
			if (s->cache_prep && b->l->prep_free)
				b->l->prep_free(s->cache_prep);
		}
	}
	b->n = 0;
	sb_reset(&b->names);
	return stop;
}

/*
 * Add the name to the batch: a temporary file with its time, else a name to
 * read.  This node's own temporary files are leftovers of a killed run
 * (writers hold the run lock, as fs_write's own clean-up assumes): removed,
 * since rv_put does not look for them (FS_KEEP_TEMPS).
 */
static void batch_add(struct batch *b, const char *name)
{
	struct slot *s;
	struct stat st;

	if (strstr(name, TMP_MARK) && b->reown && fs_is_own_temp(b->c, name)) {
		(void)unlinkat(b->dfd, name, 0);
		return;
	}
	s = &b->s[b->n++];

	memset(s, 0, sizeof(*s));
	s->name_off = b->names.len;
	sb_appendn(&b->names, name, strlen(name) + 1);
	if (!strstr(name, TMP_MARK))
		return;
	s->temp = true;
	s->e.refused = "temp";
	s->e.why = "a writer's temporary file";
	if (fstatat(b->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		b->n--;         /* gone meanwhile */
	else
		s->e.mtime = (int64_t)st.st_mtime;
}

int rv_dir_list_prep(struct rendezvous *rv, struct report *rep, const struct rv_lister *l)
{
	struct batch b = { .c = rv->c, .t = &rv->tree, .reown = ctx_may_write(rv->c), .max = rv->o.max_bytes,
			   .l = l };
	unsigned threads = list_threads();
	struct dirent *de;
	int r = 0, err;
	DIR *d;

	(void)rep;
	if ((r = open_coll(rv, &d)) < 0)
		return r;
	b.dfd = dirfd(d);
	if (l->reuse_ms) {
		if (!rv->read_cache)
			rv->read_cache = xcalloc(1, sizeof(*rv->read_cache));
		b.cache = rv->read_cache;
		if (l->prep_copy)
			b.cache->prep_free = l->prep_free;
		b.start_ms = now_ms();
	}
	b.s = xmalloc(LIST_BATCH * sizeof(*b.s));
	for (;;) {
		errno = 0;
		de = readdir(d);
		err = errno;
		if (de && de->d_name[0] != '.' &&
		    (strstr(de->d_name, TMP_MARK) || !l->want || l->want(l->arg, de->d_name)))
			batch_add(&b, de->d_name);
		if (b.n == LIST_BATCH || (!de && b.n)) {
			batch_read(&b, threads);
			if ((r = batch_each(&b, 0)) != 0)
				break;
		}
		if (!de) {
			r = err ? -err : 0;
			break;
		}
	}
	free(b.s);
	sb_free(&b.names);
	closedir(d);
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
	cache_free(rv->read_cache);
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
