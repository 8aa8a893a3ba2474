/* SPDX-License-Identifier: MIT */
/* SSH key helpers (libssh) shared by discovery (publishing) and ssh (trust). */
#ifndef HPCINIT_SSHKEY_H
#define HPCINIT_SSHKEY_H

#include <stdbool.h>
#include <sys/types.h>

#include "spec.h"

struct ctx;
struct report;

/*
 * Make sure ~user/.ssh exists (0700, owned by the user) and holds a key pair
 * of the given type; never overwrite an existing private key.  The public
 * key line ("type base64 comment") is returned in *ret_pub (malloc'd).
 * In check/plan mode nothing is created; a missing key gives -ENOENT.
 */
int sshkey_ensure_user(struct ctx *c, struct report *r, const char *user,
		       enum key_type type, char **ret_pub);
/*
 * Files under ~user are controlled by the user, so root must not follow a
 * link or a swapped directory there.  sshkey_check_path refuses (with a
 * detail) a path that is a symlink, of the wrong type, owned by someone
 * other than uid (or root), or writable by group/others -- sshd's
 * StrictModes would ignore such a file anyway.  0 when absent or fine.
 */
int sshkey_check_path(const struct ctx *c, struct report *r, const char *path,
		      bool want_dir, uid_t uid);
/*
 * Take the user's filesystem identity (setfsuid/setfsgid) while touching
 * files in a home the user controls; a no-op unless running as root for
 * another user whose home or ~/.ssh they own.  Pass the result to
 * sshkey_fsid_restore.
 */
bool sshkey_fsid_user(const struct ctx *c, const char *home, uid_t uid, gid_t gid);
void sshkey_fsid_restore(bool switched);
/* This node's host public keys from <root>/etc/ssh/ssh_host_*_key.pub ("type base64"). */
int sshkey_host_pubkeys(const struct ctx *c, struct strlist *ret);
/* Keep "type base64" of a public key line; NULL when the line is not a key. malloc'd. */
char *sshkey_canonical(const char *line);

#endif
