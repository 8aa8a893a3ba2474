/* SPDX-License-Identifier: MIT */
/*
 * Every path the agent touches goes through here, prefixed with ctx->root.
 * Paths given to these functions are target paths ("/etc/fstab"); the
 * functions add the root.  Writes are atomic and skipped when the content,
 * mode and owner are already right.  Outside RUN_APPLY nothing is written:
 * the change is recorded in the report (with a diff in RUN_PLAN) instead.
 * users.c (declared here too) resolves users and groups for the owners.
 *
 * Return convention for writers: 0 = already right, 1 = changed (or would
 * change), -errno = error (the report's details say which path and why).
 */
#ifndef HPCINIT_FSUTIL_H
#define HPCINIT_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ctx;
struct report;

#define FS_MAX_READ (16u * 1024 * 1024)   /* files larger than this are refused */
#define FS_KEEP_OWNER ((uid_t)-1)         /* pass as uid/gid: new files get root, existing keep theirs */

/* root + path, malloc'd.  root "" or "/" gives path unchanged. */
char *fs_rooted(const char *root, const char *path);
char *ctx_path(const struct ctx *c, const char *path);

/* Read a whole file (under the root).  0 and *ret (NUL-terminated), or -errno. */
int fs_read(const struct ctx *c, const char *path, char **ret, size_t *ret_len);
/* Same on an already-rooted host path. */
int fs_read_host(const char *hostpath, size_t max, char **ret, size_t *ret_len);
bool fs_exists(const struct ctx *c, const char *path);
/*
 * A credential file of the spec (what key names it: "discovery.auth_file")
 * as the cluster secret is checked: a regular file, not a symbolic link,
 * owned by root, no access for group or others (opened without blocking,
 * so a FIFO does not hang the run).  0, or -errno with a detail in r that
 * names the key, the file and the fix.
 */
int fs_check_private(const struct ctx *c, struct report *r, const char *key, const char *path);

/*
 * Atomically make path hold exactly data, with mode and owner.  Parent
 * directories must exist (use fs_mkdir_p).  temp file in the same directory,
 * fchmod/fchown, write, fsync, rename, fsync of the directory.
 */
int fs_write(struct ctx *c, struct report *r, const char *path,
	     const void *data, size_t len, mode_t mode, uid_t uid, gid_t gid);
/*
 * Before it writes, fs_write removes this node's temp files of path left by
 * a killed run: a readdir of path's directory.  FS_KEEP_TEMPS skips that,
 * for a directory whose lister removes them instead (the rendezvous: 10,000
 * records, read anyway in the same run; fs_is_own_temp tells which).
 */
#define FS_KEEP_TEMPS 1u
/*
 * What a write syncs: by default the file and its directory, so after a
 * crash the name holds the new file.  FS_SYNC_FILE: the file only; after a
 * crash the name holds the old file or the new one, either whole (a record
 * rewritten every run, /var/lib/hpcinit/last-run.json).  FS_NO_SYNC: neither,
 * for a file no later boot reads (the status files under /run, a tmpfs a
 * crash empties anyway, written by `check` on a timer all day); the rename
 * still replaces it whole for every reader.  Every write under /run/ is
 * FS_NO_SYNC unless it asks for FS_SYNC_FILE (the steps' state files there:
 * on a fake root, a cold start made 6 of its 21 fsyncs there).
 */
#define FS_SYNC_FILE 2u
#define FS_NO_SYNC 4u
/* The content always differs (it holds the run's time): the old file is not read to compare. */
#define FS_REPLACE 8u
int fs_write_opt(struct ctx *c, struct report *r, const char *path, const void *data, size_t len,
		 mode_t mode, uid_t uid, gid_t gid, unsigned flags);
/*
 * A run's start: what this process learnt of directories in the last run
 * (fs_mkdir_p's walk, the look for temp files a killed run left) is
 * forgotten; within a run each directory is walked to and read once.
 */
void fs_run_begin(void);
/* name (a file name, no directory) is a temp file fs_write on this node made: "*.hpcinit-tmp.<node>.XXXXXX" */
bool fs_is_own_temp(const struct ctx *c, const char *name);

/*
 * mkdir -p without following links: mode/owner go to the leaf it creates,
 * 0755 root:root to parents it creates.  Existing directories are never
 * changed; one that root (or uid) does not own, or that group or others can
 * write, is refused (-EPERM) with a message naming it.
 */
int fs_mkdir_p(struct ctx *c, struct report *r, const char *path,
	       mode_t mode, uid_t uid, gid_t gid);

/* Remove a file if present. 0 absent, 1 removed (would remove), -errno. */
int fs_remove(struct ctx *c, struct report *r, const char *path);

/*
 * Managed block: lines between "# BEGIN hpcinit <tag>" and "# END hpcinit <tag>".
 * body (may be NULL or "" to remove the block) replaces the block's inside;
 * text outside it is kept byte for byte.  A missing file is created with
 * mode/uid/gid when body is non-empty.  Existing files keep their mode/owner.
 */
int fs_managed_block(struct ctx *c, struct report *r, const char *path,
		     const char *tag, const char *body, mode_t mode, uid_t uid, gid_t gid);
/*
 * A "# BEGIN hpcinit <tag>" with no END after it (a truncated edit) makes
 * the block's extent unknown: -EBADMSG and the BEGIN's line number, and
 * fs_managed_block changes nothing in such a file (managed_block_apply
 * returns the text unchanged).  0 otherwise.
 */
int managed_block_check(const char *text, const char *tag, unsigned *ret_line);
/* Compute the new content without writing (exposed for tests).  Returns malloc'd text. */
char *managed_block_apply(const char *old, const char *tag, const char *body);
/* Extract the block body (malloc'd) or NULL when there is none. */
char *managed_block_get(const char *text, const char *tag);

/* A unified-style diff of two texts, for plan output (appended to out). */
struct strbuf;
void text_diff(struct strbuf *out, const char *path, const char *old, const char *new_);

/* Look up a user: NSS (getpwnam_r) on the real root, <root>/etc/passwd under a fake
 * root.  0 or -ENOENT (or another -errno from NSS). ret_home malloc'd. */
int fs_lookup_user(const struct ctx *c, const char *user, uid_t *ret_uid, gid_t *ret_gid,
		   char **ret_home);
/* All len bytes to fd (again after EINTR and short writes): 0 or -errno. */
int fd_write_all(int fd, const void *data, size_t len);
/* len bytes from fd (again after EINTR and short reads), or what came before its end of file: the count, or -errno. */
ssize_t fd_read_full(int fd, void *buf, size_t len);
/* Close *fd when open, and mark it closed (-1). */
void fd_close(int *fd);
struct strlist;
/*
 * The names of the groups user is in: its primary group (gid, when
 * gid_known) and every group that lists it.  NSS (getgrouplist, getgrgid)
 * on the real root, <root>/etc/group under a fake root.  Appended to ret,
 * each once.
 */
void fs_user_groups(const struct ctx *c, const char *user, bool gid_known, gid_t gid, struct strlist *ret);

#endif
