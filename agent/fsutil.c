/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"

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
	char buf[8192];
	int fd, r = 0;

	fd = open(hostpath, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -errno;
	for (;;) {
		ssize_t n = read(fd, buf, sizeof(buf));

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
		sb_appendn(&sb, buf, (size_t)n);
	}
	close(fd);
	if (r < 0) {
		sb_free(&sb);
		return r;
	}
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

static int write_all(int fd, const void *data, size_t len)
{
	const char *p = data;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * A run killed between creating its temp file and the rename leaves
 * "<name>.hpcinit-tmp.XXXXXX" behind; the next write of <name> removes it.
 * Writers hold the run lock, so no live temp file is removed.
 */
static void remove_stale_temps(const char *hostpath)
{
	const char *slash = strrchr(hostpath, '/');
	char *dir = slash ? xstrndup(hostpath, (size_t)(slash - hostpath + 1)) : xstrdup(".");
	char *prefix = xasprintf("%s.hpcinit-tmp.", slash ? slash + 1 : hostpath);
	size_t pl = strlen(prefix);
	DIR *d = opendir(dir);
	struct dirent *de;

	if (d) {
		while ((de = readdir(d)))
			if (strncmp(de->d_name, prefix, pl) == 0 && strlen(de->d_name) == pl + 6)
				(void)unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	free(prefix);
	free(dir);
}

/*
 * Write to a temp file beside the target and rename it into place, so a
 * reader (or a crash) sees the old or the new content, never a mix.
 */
static int atomic_replace(const char *hostpath, const void *data, size_t len,
			  mode_t mode, uid_t uid, gid_t gid)
{
	char *tmp = xasprintf("%s.hpcinit-tmp.XXXXXX", hostpath);
	int fd, r;

	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		goto out_free;
	}
	if (fchmod(fd, mode) < 0 || fchown(fd, uid, gid) < 0) {
		r = -errno;
		goto out_unlink;
	}
	r = write_all(fd, data, len);
	if (r < 0)
		goto out_unlink;
	if (fsync(fd) < 0) {
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
	return fsync_dir_of(hostpath);

out_unlink:
	if (fd >= 0)
		close(fd);
	unlink(tmp);
out_free:
	free(tmp);
	return r;
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
	char *hp = ctx_path(c, path);
	char *old = NULL;
	size_t old_len = 0;
	struct stat st;
	bool exists, same_content = false, same_meta = false;
	int ret;

	if (ctx_may_write(c))
		remove_stale_temps(hp);
	exists = lstat(hp, &st) == 0;
	if (exists && !S_ISREG(st.st_mode)) {
		report_detail(r, "%s: exists and is not a regular file; remove it or fix the spec", path);
		ret = -EEXIST;
		goto out;
	}
	if (exists) {
		ret = fs_read_host(hp, FS_MAX_READ, &old, &old_len);
		if (ret < 0) {
			report_detail(r, "%s: cannot read: %s", path, strerror(-ret));
			goto out;
		}
		same_content = old_len == len && memcmp(old, data, len) == 0;
		if (uid == FS_KEEP_OWNER) {
			uid = st.st_uid;
			gid = st.st_gid;
		}
		same_meta = (st.st_mode & 07777) == (mode & 07777) && st.st_uid == uid && st.st_gid == gid;
	} else if (uid == FS_KEEP_OWNER) {
		uid = 0;
		gid = 0;
	}
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
		if (chmod(hp, mode) < 0 || lchown(hp, uid, gid) < 0) {
			ret = -errno;
			report_detail(r, "%s: cannot set mode/owner: %s", path, strerror(errno));
			goto out;
		}
	} else {
		ret = atomic_replace(hp, data, len, mode, uid, gid);
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

int fs_mkdir_p(struct ctx *c, struct report *r, const char *path,
	       mode_t mode, uid_t uid, gid_t gid)
{
	char *hp = ctx_path(c, path);
	size_t skip = strlen(hp) - strlen(path);  /* do not create the root itself */
	int ret = 0;
	struct stat st;

	if (uid == FS_KEEP_OWNER) {
		uid = 0;
		gid = 0;
	}
	for (char *p = hp + skip + 1;; p++) {
		bool last = *p == '\0';

		if (*p != '/' && !last)
			continue;
		if (p == hp + skip + 1 && !last)
			continue;
		*p = '\0';
		if (stat(hp, &st) == 0) {
			if (!S_ISDIR(st.st_mode)) {
				report_detail(r, "%s: exists and is not a directory", hp + skip);
				ret = -ENOTDIR;
				break;
			}
			if (last && ((st.st_mode & 07777) != (mode & 07777) ||
				     st.st_uid != uid || st.st_gid != gid)) {
				ret = 1;
				if (!ctx_may_write(c)) {
					note_change(c, r, path, NULL, NULL, "wrong mode or owner");
				} else if (chmod(hp, mode) < 0 || chown(hp, uid, gid) < 0) {
					ret = -errno;
					report_detail(r, "%s: cannot set mode/owner: %s", path, strerror(errno));
				} else {
					note_change(c, r, path, NULL, NULL, "mode/owner set");
				}
			}
		} else if (errno != ENOENT) {
			ret = -errno;
			report_detail(r, "%s: %s", hp + skip, strerror(errno));
			break;
		} else if (!ctx_may_write(c)) {
			note_change(c, r, hp + skip, NULL, NULL, "directory missing");
			ret = 1;
			/* parents below do not exist either; report the first only */
			break;
		} else {
			/* Parents get the default 0755 root:root, the leaf gets mode/owner. */
			if (mkdir(hp, last ? mode : 0755) < 0 && errno != EEXIST) {
				ret = -errno;
				report_detail(r, "%s: cannot create directory: %s", hp + skip, strerror(errno));
				break;
			}
			if (last && (chmod(hp, mode) < 0 || chown(hp, uid, gid) < 0)) {
				ret = -errno;
				report_detail(r, "%s: cannot set mode/owner: %s", path, strerror(errno));
				break;
			}
			note_change(c, r, hp + skip, NULL, NULL, "directory created");
			ret = 1;
		}
		if (last)
			break;
		*p = '/';
	}
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
			/* A BEGIN without END: treat the rest of the file as the block. */
			after = b + strlen(b);
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
	for (size_t i = pre; i < a.n - suf; i++)
		sb_printf(out, "-%s\n", a.v[i]);
	for (size_t i = pre; i < b.n - suf; i++)
		sb_printf(out, "+%s\n", b.v[i]);
	strlist_free(&a);
	strlist_free(&b);
}

int fs_lookup_user(const struct ctx *c, const char *user, uid_t *ret_uid, gid_t *ret_gid,
		   char **ret_home)
{
	char *text = NULL;
	int r = fs_read(c, "/etc/passwd", &text, NULL);
	size_t ul = strlen(user);

	if (r < 0)
		return r;
	r = -ENOENT;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (strncmp(line, user, ul) == 0 && line[ul] == ':') {
			/* name:pw:uid:gid:gecos:home:shell */
			char *f[7] = { 0 };
			char *s = line;
			int i;

			for (i = 0; i < 7 && s; i++) {
				f[i] = s;
				s = strchr(s, ':');
				if (s)
					*s++ = '\0';
			}
			if (i >= 6 && f[2] && f[3] && f[5]) {
				char *end;
				unsigned long u, g;

				errno = 0;
				u = strtoul(f[2], &end, 10);
				if (errno || *end || end == f[2] || u > UINT_MAX - 1)
					break;
				g = strtoul(f[3], &end, 10);
				if (errno || *end || end == f[3] || g > UINT_MAX - 1)
					break;
				if (ret_uid)
					*ret_uid = (uid_t)u;
				if (ret_gid)
					*ret_gid = (gid_t)g;
				if (ret_home)
					*ret_home = xstrdup(f[5]);
				r = 0;
			}
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return r;
}
