/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "escape.h"
#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "number.h"
#include "strlist.h"

char *fs_rooted(const char *root, const char *path)
{
	size_t rl;

	if (!root || !*root || (root[0] == '/' && root[1] == '\0'))
		return xstrdup(path);
	rl = strlen(root);
	while (rl > 1 && root[rl - 1] == '/')
		rl--;
	if (path[0] != '/')
		return xasprintf("%.*s/%s", (int)rl, root, path);
	return xasprintf("%.*s%s", (int)rl, root, path);
}

char *ctx_path(const struct ctx *c, const char *path)
{
	return fs_rooted(c->root, path);
}

int fs_read_host(const char *hostpath, size_t max, char **ret, size_t *ret_len)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	int fd, r = 0;

	fd = open(hostpath, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	/*
	 * Read straight into a buffer sized from fstat (known_hosts and
	 * authorized_keys of 10,000 nodes are a megabyte each): one read, not
	 * 8 KiB at a time copied into a buffer that doubles.  A size of 0
	 * (/proc) or one that changes is read as it comes.
	 */
	sb_reserve(&sb, fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size > 0 &&
		   (unsigned long long)st.st_size <= max ? (size_t)st.st_size + 1 : 8192);   /* + 1: room to see EOF */
	for (;;) {
		ssize_t n;

		if (sb.cap - sb.len - 1 == 0)
			sb_reserve(&sb, sb.len);
		n = read(fd, sb.buf + sb.len, sb.cap - sb.len - 1);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		if (sb.len + (size_t)n > max) {
			r = -EFBIG;
			break;
		}
		sb.len += (size_t)n;
	}
	close(fd);
	if (r < 0) {
		sb_free(&sb);
		return r;
	}
	sb.buf[sb.len] = '\0';
	if (ret_len)
		*ret_len = sb.len;
	*ret = sb_steal(&sb);
	return 0;
}

int fs_read(const struct ctx *c, const char *path, char **ret, size_t *ret_len)
{
	char *p = ctx_path(c, path);
	int r = fs_read_host(p, FS_MAX_READ, ret, ret_len);

	free(p);
	return r;
}

bool fs_exists(const struct ctx *c, const char *path)
{
	char *p = ctx_path(c, path);
	struct stat st;
	bool ok = lstat(p, &st) == 0;

	free(p);
	return ok;
}

static int fsync_dir_of(const char *hostpath)
{
	char *d = xstrdup(hostpath);
	char *slash = strrchr(d, '/');
	int fd, r = 0;

	if (slash == d)
		slash[1] = '\0';
	else if (slash)
		*slash = '\0';
	else {
		free(d);
		d = xstrdup(".");
	}
	fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		r = -errno;
	else {
		if (fsync(fd) < 0)
			r = -errno;
		close(fd);
	}
	free(d);
	return r;
}

int fd_write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			return -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t fd_read_full(int fd, void *buf, size_t len)
{
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, (char *)buf + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			break;
		got += (size_t)n;
	}
	return (ssize_t)got;
}

void fd_close(int *fd)
{
	if (*fd >= 0)
		close(*fd);
	*fd = -1;
}

/*
 * Temp files carry this node's name: two nodes writing the same shared home
 * (NFS) each remove only their own leftovers, never the other's live file.
 * The name is node_hostname (a valid host name, else "localhost"), its
 * first 64 bytes.
 */
static char *tmp_prefix(const struct ctx *c, const char *hostpath)
{
	char node[NODE_HOSTNAME_MAX];

	if (!node_hostname(c, node, sizeof(node)))
		snprintf(node, sizeof(node), "localhost");
	node[64] = '\0';               /* the name's first 64 bytes, as before */
	return xasprintf("%s.hpcinit-tmp.%s.", hostpath, node);
}

/*
 * What this process learnt in this run, so that a run writing many files in
 * one directory walks to it and reads it once (a cold start wrote seven
 * files in /run/hpcinit, three in /etc/hpcinit: each walked from / and read
 * the whole directory).  Two kinds of entry: "d<uid>:<dir>", a directory
 * fs_mkdir_p found (or made) safe for files of <uid>; "t<dir>", a directory
 * remove_stale_temps read that held no temp file of this node at all.  A
 * temp file made there later in the run is a live write of this run (the
 * run lock), not a killed run's: the next run looks again.  Only the
 * process that learnt an entry uses it (a forked child starts afresh) and
 * only until fs_run_begin, which the runner calls at each run's start (a
 * watch's next run looks again).
 */
#define FS_SEEN_MAX 16
static struct {
	bool fork_hook;
	size_t n;
	char *what[FS_SEEN_MAX];
} fs_seen;

void fs_run_begin(void)
{
	for (size_t i = 0; i < fs_seen.n; i++)
		free(fs_seen.what[i]);
	fs_seen.n = 0;
}

static bool seen_has(const char *what)
{
	for (size_t i = 0; i < fs_seen.n; i++)
		if (strcmp(fs_seen.what[i], what) == 0)
			return true;
	return false;
}

static void seen_add(char *what)
{
	/* a forked child (iso.c, proc.c) starts afresh: its parent may have learnt more since */
	if (!fs_seen.fork_hook)
		fs_seen.fork_hook = pthread_atfork(NULL, NULL, fs_run_begin) == 0;
	if (fs_seen.fork_hook && fs_seen.n < FS_SEEN_MAX && !seen_has(what))
		fs_seen.what[fs_seen.n++] = what;
	else
		free(what);
}

/* name is a temp file of this node's, mark its ".hpcinit-tmp.<node>." (tmp_prefix of "") */
static bool own_temp(const char *name, const char *mark)
{
	const char *at = strstr(name, mark);

	return at && at > name && strlen(at) == strlen(mark) + 6;
}

/*
 * A run killed between creating its temp file and the rename leaves
 * "<name>.hpcinit-tmp.<node>.XXXXXX" behind; the next write of <name> on
 * the same node removes it.  Writers hold the run lock, so no live temp
 * file of this node is removed.  A directory with no temp file of this
 * node is not read again in this run (fs_seen).
 */
static void remove_stale_temps(const struct ctx *c, const char *hostpath)
{
	const char *slash = strrchr(hostpath, '/');
	char *dir = slash ? xstrndup(hostpath, (size_t)(slash - hostpath + 1)) : xstrdup(".");
	char *full = tmp_prefix(c, hostpath);
	const char *prefix = slash ? full + (slash + 1 - hostpath) : full;
	size_t pl = strlen(prefix);
	char *key = xasprintf("t%s", dir);
	const char *mark = strstr(full + strlen(hostpath), ".hpcinit-tmp.");  /* any name's: ".hpcinit-tmp.<node>." */
	bool any = false;
	DIR *d = seen_has(key) ? NULL : opendir(dir);
	struct dirent *de;

	if (d) {
		while ((de = readdir(d))) {
			if (strncmp(de->d_name, prefix, pl) == 0 && strlen(de->d_name) == pl + 6)
				(void)unlinkat(dirfd(d), de->d_name, 0);
			else if (!any)
				any = own_temp(de->d_name, mark);
		}
		closedir(d);
		if (!any) {
			seen_add(key);
			key = NULL;
		}
	}
	free(key);
	free(full);
	free(dir);
}

/* Did hostpath's directory change (an entry made or removed) after st, hostpath's own, changed? */
static bool dir_changed_since(const char *hostpath, const struct stat *st)
{
	const char *slash = strrchr(hostpath, '/');
	char *dir = slash ? xstrndup(hostpath, (size_t)(slash - hostpath + 1)) : xstrdup(".");
	struct stat ds;
	bool changed = true;

	if (lstat(dir, &ds) == 0)
		changed = ds.st_mtim.tv_sec > st->st_ctim.tv_sec ||
			  (ds.st_mtim.tv_sec == st->st_ctim.tv_sec && ds.st_mtim.tv_nsec > st->st_ctim.tv_nsec);
	free(dir);
	return changed;
}

bool fs_is_own_temp(const struct ctx *c, const char *name)
{
	char *mark = tmp_prefix(c, "");
	bool own = own_temp(name, mark);

	free(mark);
	return own;
}

static int atomic_replace(const struct ctx *c, const char *hostpath, const void *data, size_t len,
			  mode_t mode, uid_t uid, gid_t gid, unsigned flags)
{
	char *prefix = tmp_prefix(c, hostpath);
	char *tmp = xasprintf("%sXXXXXX", prefix);
	int fd, r;

	free(prefix);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out_free;
	}
	if (fchmod(fd, mode) < 0 || fchown(fd, uid, gid) < 0) {
		r = -errno;
		goto out_unlink;
	}
	r = fd_write_all(fd, data, len);
	if (r < 0)
		goto out_unlink;
	if (!(flags & FS_NO_SYNC) && fsync(fd) < 0) {
		r = -errno;
		goto out_unlink;
	}
	if (close(fd) < 0) {
		fd = -1;
		r = -errno;
		goto out_unlink;
	}
	fd = -1;
	if (rename(tmp, hostpath) < 0) {
		r = -errno;
		goto out_unlink;
	}
	free(tmp);
	return flags & (FS_NO_SYNC | FS_SYNC_FILE) ? 0 : fsync_dir_of(hostpath);

out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out_free:
	free(tmp);
	return r;
}


int fs_check_private(const struct ctx *c, struct report *r, const char *key, const char *path)
{
	char *hp = ctx_path(c, path);
	struct stat st;
	int fd = open(hp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY), e;

	free(hp);
	if (fd < 0) {
		e = errno;
		if (e == ELOOP)
			report_detail(r, "%s %s: is a symbolic link; refused (make it a regular file, "
				      "mode 0600, owned by root)", key, path);
		else
			report_detail(r, "%s %s: %s", key, path, strerror(e));
		return -e;
	}
	e = fstat(fd, &st) < 0 ? errno : 0;
	close(fd);
	if (e) {
		report_detail(r, "%s %s: %s", key, path, strerror(e));
		return -e;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		report_detail(r, "%s %s: must be a regular file not readable by group or others "
			      "(mode %04o); refused (chmod 600 %s)", key, path,
			      (unsigned)(st.st_mode & 07777), path);
		return -EPERM;
	}
	if (st.st_uid != 0) {
		report_detail(r, "%s %s: owned by uid %u, not root: that user could read or replace "
			      "it; refused (chown root %s)", key, path, (unsigned)st.st_uid, path);
		return -EPERM;
	}
	return 0;
}
/*
 * Set mode and owner of the regular file that was checked (st) through a
 * descriptor opened without following links; if what is there now is not
 * that file (swapped since the check), nothing is changed.
 */
static int fix_meta(const char *hostpath, const struct stat *st, mode_t mode, uid_t uid, gid_t gid)
{
	struct stat now;
	int fd = open(hostpath, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int ret = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &now) < 0)
		ret = -errno;
	else if (!S_ISREG(now.st_mode) || now.st_ino != st->st_ino || now.st_dev != st->st_dev)
		ret = -ESTALE;
	else if (fchown(fd, uid, gid) < 0 || fchmod(fd, mode) < 0)
		ret = -errno;
	close(fd);
	return ret;
}

static void note_change(struct ctx *c, struct report *r, const char *path,
			const char *old, const char *new_, const char *what)
{
	report_changed(r, path);
	report_raise(r, ST_CHANGED);
	if (c->mode == RUN_PLAN) {
		if (new_ || old)
			text_diff(&r->details, path, old ? old : "", new_ ? new_ : "");
		else
			report_detail(r, "%s: %s", path, what);
	} else if (c->mode == RUN_CHECK) {
		report_detail(r, "%s: %s", path, what);
	}
}

int fs_write(struct ctx *c, struct report *r, const char *path,
	     const void *data, size_t len, mode_t mode, uid_t uid, gid_t gid)
{
	return fs_write_opt(c, r, path, data, len, mode, uid, gid, 0);
}

int fs_write_opt(struct ctx *c, struct report *r, const char *path, const void *data, size_t len,
		 mode_t mode, uid_t uid, gid_t gid, unsigned flags)
{
	char *hp = ctx_path(c, path);
	char *old = NULL;
	size_t old_len = 0;
	struct stat st;
	bool exists, same_content = false, same_meta = false;
	int ret;

	/* /run is a tmpfs a crash empties: no later boot reads what is there (fsutil.h) */
	if (!(flags & (FS_SYNC_FILE | FS_NO_SYNC)) && strncmp(path, "/run/", 5) == 0)
		flags |= FS_NO_SYNC;
	exists = lstat(hp, &st) == 0;
	if (exists && !S_ISREG(st.st_mode)) {
		report_detail(r, "%s: exists and is not a regular file; remove it or fix the spec", path);
		ret = -EEXIST;
		goto out;
	}
	if (exists && !(flags & FS_REPLACE)) {
		ret = fs_read_host(hp, FS_MAX_READ, &old, &old_len);
		if (ret < 0) {
			report_detail(r, "%s: cannot read: %s", path, strerror(-ret));
			goto out;
		}
		same_content = old_len == len && memcmp(old, data, len) == 0;
	}
	if (exists) {
		if (uid == FS_KEEP_OWNER) {
			uid = st.st_uid;
			gid = st.st_gid;
		}
		same_meta = (st.st_mode & 07777) == (mode & 07777) && st.st_uid == uid && st.st_gid == gid;
	} else if (uid == FS_KEEP_OWNER) {
		uid = 0;
		gid = 0;
	}
	/*
	 * A killed run's temp files: a write that happens looks for them; a
	 * converged file only when its directory changed after the file did
	 * (a temp file made there since), so a converged run reads no
	 * directory every time (a half-dead home would stall the readdir).
	 */
	if (ctx_may_write(c) && !(flags & FS_KEEP_TEMPS) &&
	    (!(same_content && same_meta) || dir_changed_since(hp, &st)))
		remove_stale_temps(c, hp);
	if (same_content && same_meta) {
		ret = 0;
		goto out;
	}
	if (!ctx_may_write(c)) {
		char *newtxt = xstrndup(data, len);

		if (same_content)
			note_change(c, r, path, NULL, NULL, "wrong mode or owner");
		else
			note_change(c, r, path, old, newtxt, exists ? "content differs" : "missing");
		free(newtxt);
		ret = 1;
		goto out;
	}
	if (same_content) {
		/* Only metadata differs: fix it in place, no rewrite. */
		ret = fix_meta(hp, &st, mode, uid, gid);
		if (ret < 0) {
			report_detail(r, "%s: cannot set mode/owner: %s", path, strerror(-ret));
			goto out;
		}
	} else {
		ret = atomic_replace(c, hp, data, len, mode, uid, gid, flags);
		if (ret < 0) {
			report_detail(r, "%s: cannot write: %s", path, strerror(-ret));
			goto out;
		}
	}
	note_change(c, r, path, NULL, NULL, "written");
	ret = 1;
out:
	free(old);
	free(hp);
	return ret;
}

/*
 * Is an existing directory a safe place for what hpcinit writes?  Owned by
 * root or by the user the files are for, and writable by nobody else.  A
 * sticky directory (/tmp) is accepted on the way down, never as the place
 * itself: others can add names there but cannot replace ours.
 */
static bool dir_is_safe(const struct stat *st, uid_t uid, bool last)
{
	if (st->st_uid != 0 && st->st_uid != uid)
		return false;
	if (!(st->st_mode & (S_IWGRP | S_IWOTH)))
		return true;
	return !last && (st->st_mode & S_ISVTX);
}

/*
 * mkdir -p, walked one component at a time from the root with openat and
 * O_NOFOLLOW, so a link or a directory swapped in between the check and the
 * use changes nothing.  Only what it creates gets mode and owner (set on
 * the open descriptor); an existing directory keeps its own, and one that
 * is not safe (dir_is_safe) is refused with a message, never "fixed".  A
 * symbolic link is followed only on the way down, only when root made it in
 * a directory only root can write (/var/run -> /run).
 */
int fs_mkdir_p(struct ctx *c, struct report *r, const char *path,
	       mode_t mode, uid_t uid, gid_t gid)
{
	char *hp = ctx_path(c, path);
	size_t skip = strlen(hp) - strlen(path);  /* do not create the root itself */
	char *rootdir = skip ? xstrndup(hp, skip) : xstrdup("/");
	char *walk = xstrdup(path);
	char *save = NULL, *name;
	struct strbuf done = STRBUF_INIT;      /* the target path walked so far */
	struct stat pst, st;
	char *key;
	int dfd, ret = 0;

	if (uid == FS_KEEP_OWNER) {
		uid = 0;
		gid = 0;
	}
	key = xasprintf("d%u:%s", (unsigned)uid, hp);
	if (seen_has(key)) {            /* walked to and found safe for uid in this run */
		dfd = -1;
		goto out;
	}
	dfd = open(rootdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || fstat(dfd, &pst) < 0) {
		ret = -errno;
		report_detail(r, "%s: %s", rootdir, strerror(errno));
		goto out;
	}
	name = strtok_r(walk, "/", &save);
	while (name) {
		char *next = strtok_r(NULL, "/", &save);
		bool last = next == NULL;
		int nfd, oflags = O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW;

		sb_printf(&done, "/%s", name);
		if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
			if (S_ISLNK(st.st_mode)) {
				if (last || st.st_uid != 0 || pst.st_uid != 0 ||
				    (pst.st_mode & (S_IWGRP | S_IWOTH))) {
					report_detail(r, "%s: is a symbolic link; hpcinit does not follow links "
						      "to create or change directories: replace it with a directory "
						      "or point the spec at the real path", sb_str(&done));
					ret = -ELOOP;
					break;
				}
				oflags &= ~O_NOFOLLOW;
			} else if (!S_ISDIR(st.st_mode)) {
				report_detail(r, "%s: exists and is not a directory", sb_str(&done));
				ret = -ENOTDIR;
				break;
			}
			nfd = openat(dfd, name, oflags);
			if (nfd < 0 || fstat(nfd, &st) < 0) {
				ret = -errno;
				report_detail(r, "%s: %s", sb_str(&done), strerror(errno));
				if (nfd >= 0)
					close(nfd);
				break;
			}
			if (!dir_is_safe(&st, uid, last)) {
				report_detail(r, "%s: owned by uid %u with mode %04o: someone other than root%s "
					      "could replace what hpcinit puts there; hpcinit does not change "
					      "directories it did not create: chown root and chmod go-w it, or "
					      "choose another directory in the spec", sb_str(&done),
					      (unsigned)st.st_uid, (unsigned)(st.st_mode & 07777),
					      uid ? " or its user" : "");
				close(nfd);
				ret = -EPERM;
				break;
			}
		} else if (errno != ENOENT) {
			ret = -errno;
			report_detail(r, "%s: %s", sb_str(&done), strerror(errno));
			break;
		} else if (!ctx_may_write(c)) {
			note_change(c, r, sb_str(&done), NULL, NULL, "directory missing");
			ret = 1;
			/* parents below do not exist either; report the first only */
			break;
		} else {
			/* Made private, then given its final mode and owner on the descriptor:
			 * parents get 0755 root:root, the leaf gets mode/owner. */
			if (mkdirat(dfd, name, 0700) < 0 && errno != EEXIST) {
				ret = -errno;
				report_detail(r, "%s: cannot create directory: %s", sb_str(&done), strerror(errno));
				break;
			}
			nfd = openat(dfd, name, oflags);
			if (nfd < 0 || fstat(nfd, &st) < 0 ||
			    ((st.st_uid != (last ? uid : 0) || st.st_gid != (last ? gid : 0)) &&
			     fchown(nfd, last ? uid : 0, last ? gid : 0) < 0) ||
			    fchmod(nfd, last ? mode : 0755) < 0) {
				ret = -errno;
				report_detail(r, "%s: cannot set mode/owner: %s", sb_str(&done), strerror(errno));
				if (nfd >= 0)
					close(nfd);
				break;
			}
			note_change(c, r, sb_str(&done), NULL, NULL, "directory created");
			ret = 1;
		}
		close(dfd);
		dfd = nfd;
		pst = st;
		name = next;
	}
	if (ret == 0 || (ret == 1 && ctx_may_write(c))) {
		seen_add(key);
		key = NULL;
	}
out:
	if (dfd >= 0)
		close(dfd);
	free(key);
	sb_free(&done);
	free(walk);
	free(rootdir);
	free(hp);
	return ret;
}

int fs_remove(struct ctx *c, struct report *r, const char *path)
{
	char *hp = ctx_path(c, path);
	char *old = NULL;
	struct stat st;
	int ret;

	if (lstat(hp, &st) < 0) {
		ret = errno == ENOENT ? 0 : -errno;
		if (ret < 0)
			report_detail(r, "%s: %s", path, strerror(-ret));
		goto out;
	}
	if (!ctx_may_write(c)) {
		if (S_ISREG(st.st_mode))
			(void)fs_read_host(hp, FS_MAX_READ, &old, NULL);
		note_change(c, r, path, old, NULL, "would be removed");
		ret = 1;
		goto out;
	}
	if (unlink(hp) < 0) {
		ret = -errno;
		report_detail(r, "%s: cannot remove: %s", path, strerror(errno));
		goto out;
	}
	(void)fsync_dir_of(hp);
	note_change(c, r, path, NULL, NULL, "removed");
	ret = 1;
out:
	free(old);
	free(hp);
	return ret;
}

/* Find a line equal to marker (without its newline) at a line start; NULL if none. */
static const char *find_line(const char *text, const char *marker)
{
	size_t ml = strlen(marker);

	for (const char *p = text; p && *p;) {
		if (strncmp(p, marker, ml) == 0 && (p[ml] == '\n' || p[ml] == '\0'))
			return p;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return NULL;
}

char *managed_block_get(const char *text, const char *tag)
{
	char *begin = xasprintf("# BEGIN hpcinit %s", tag);
	char *end = xasprintf("# END hpcinit %s", tag);
	const char *b = find_line(text, begin), *e, *inside;
	char *ret = NULL;

	if (b) {
		inside = strchr(b, '\n');
		inside = inside ? inside + 1 : b + strlen(b);
		e = find_line(inside, end);
		if (e)
			ret = xstrndup(inside, (size_t)(e - inside));
	}
	free(begin);
	free(end);
	return ret;
}

int managed_block_check(const char *text, const char *tag, unsigned *ret_line)
{
	char *begin = xasprintf("# BEGIN hpcinit %s", tag);
	char *end = xasprintf("# END hpcinit %s", tag);
	const char *b = text ? find_line(text, begin) : NULL;
	int ret = 0;

	if (b) {
		const char *inside = strchr(b, '\n');

		if (!inside || !find_line(inside + 1, end)) {
			unsigned line = 1;

			for (const char *p = text; p < b; p++)
				line += *p == '\n';
			if (ret_line)
				*ret_line = line;
			ret = -EBADMSG;
		}
	}
	free(begin);
	free(end);
	return ret;
}

char *managed_block_apply(const char *old, const char *tag, const char *body)
{
	char *begin = xasprintf("# BEGIN hpcinit %s", tag);
	char *end = xasprintf("# END hpcinit %s", tag);
	struct strbuf sb = STRBUF_INIT;
	const char *b = old ? find_line(old, begin) : NULL;
	const char *after = NULL;
	bool have_body = body && *body;

	if (b) {
		const char *inside = strchr(b, '\n');
		const char *e;

		inside = inside ? inside + 1 : b + strlen(b);
		e = find_line(inside, end);
		if (e) {
			after = strchr(e, '\n');
			after = after ? after + 1 : e + strlen(e);
		} else {
			/* A BEGIN without END (a truncated edit): what follows is not
			 * ours to delete.  Change nothing; managed_block_check says why. */
			free(begin);
			free(end);
			return xstrdup(old);
		}
		sb_appendn(&sb, old, (size_t)(b - old));
	} else if (old) {
		sb_append(&sb, old);
		if (have_body && sb.len && sb.buf[sb.len - 1] != '\n')
			sb_append(&sb, "\n");
	}
	if (have_body) {
		sb_printf(&sb, "%s\n", begin);
		sb_append(&sb, body);
		if (body[strlen(body) - 1] != '\n')
			sb_append(&sb, "\n");
		sb_printf(&sb, "%s\n", end);
	}
	if (after)
		sb_append(&sb, after);
	free(begin);
	free(end);
	return sb_steal(&sb);
}

int fs_managed_block(struct ctx *c, struct report *r, const char *path,
		     const char *tag, const char *body, mode_t mode, uid_t uid, gid_t gid)
{
	char *hp = ctx_path(c, path);
	char *old = NULL, *new_;
	struct stat st;
	unsigned line = 0;
	int ret;

	if (lstat(hp, &st) == 0) {
		ret = fs_read_host(hp, FS_MAX_READ, &old, NULL);
		if (ret < 0) {
			report_detail(r, "%s: cannot read: %s", path, strerror(-ret));
			free(hp);
			return ret;
		}
		mode = st.st_mode & 07777;
		uid = st.st_uid;
		gid = st.st_gid;
	} else if (!body || !*body) {
		free(hp);
		return 0;
	}
	free(hp);
	if (managed_block_check(old, tag, &line) < 0) {
		report_detail(r, "%s:%u: \"# BEGIN hpcinit %s\" has no \"# END hpcinit %s\" after it "
			      "(a truncated edit?); hpcinit changes nothing in this file: put the END line "
			      "back where the block ends, or delete the block by hand", path, line, tag, tag);
		free(old);
		return -EBADMSG;
	}
	new_ = managed_block_apply(old, tag, body);
	if (old && strcmp(old, new_) == 0)
		ret = 0;
	else
		ret = fs_write(c, r, path, new_, strlen(new_), mode, uid, gid);
	free(old);
	free(new_);
	return ret;
}

/*
 * A line diff good enough for plan output: common prefix and suffix lines
 * are skipped, the middle is shown as removed then added lines.
 */
void text_diff(struct strbuf *out, const char *path, const char *old, const char *new_)
{
	struct strlist a = { 0 }, b = { 0 };
	size_t pre = 0, suf = 0;
	const char *texts[2] = { old, new_ };
	struct strlist *lists[2] = { &a, &b };

	for (int i = 0; i < 2; i++) {
		const char *p = texts[i];

		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			char *line = xstrndup(p, n);

			strlist_push(lists[i], line);
			free(line);
			p += n + (nl ? 1 : 0);
		}
	}
	while (pre < a.n && pre < b.n && strcmp(a.v[pre], b.v[pre]) == 0)
		pre++;
	while (suf < a.n - pre && suf < b.n - pre &&
	       strcmp(a.v[a.n - 1 - suf], b.v[b.n - 1 - suf]) == 0)
		suf++;
	sb_printf(out, "--- %s\n+++ %s (planned)\n@@ -%zu,%zu +%zu,%zu @@\n", path, path,
		  pre + 1, a.n - pre - suf, pre + 1, b.n - pre - suf);
	/* File lines may hold what a peer published: escaped like every detail. */
	for (size_t i = pre; i < a.n - suf; i++) {
		sb_append(out, "-");
		esc_append(out, a.v[i], strlen(a.v[i]), false);
		sb_append(out, "\n");
	}
	for (size_t i = pre; i < b.n - suf; i++) {
		sb_append(out, "+");
		esc_append(out, b.v[i], strlen(b.v[i]), false);
		sb_append(out, "\n");
	}
	strlist_free(&a);
	strlist_free(&b);
}
