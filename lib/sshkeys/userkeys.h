/* SPDX-License-Identifier: MIT */
/*
 * The cluster users' ~/.ssh and key pairs (userkeys.c), a library below the
 * steps: the ssh step installs them, discovery (which runs before ssh) puts
 * the public halves in this node's first record (docs/ssh.md "Whose keys").
 */
#ifndef HPCINIT_SSHKEYS_USERKEYS_H
#define HPCINIT_SSHKEYS_USERKEYS_H

#include <sys/types.h>

#include "hpcinit.h"

/*
 * Make sure ~user/.ssh exists (0700, owned by the user) and holds a key pair
 * of the given type; never overwrite an existing private key.  The public
 * key line ("type base64 comment") is returned in *ret_pub (malloc'd).
 * In check/plan mode nothing is created; a missing key gives -ENOENT.
 */
int ssh_user_key(struct ctx *c, struct report *r, const char *user, enum key_type type,
		 char **ret_pub);

/* A cluster user's account and one file in their ~/.ssh. */
struct ssh_user {
	uid_t uid;
	gid_t gid;
	char *home, *sshdir, *path;     /* path: <sshdir>/<file> (target paths, malloc'd) */
};

/*
 * Look the user up and refuse (with a detail) a ~/.ssh or ~/.ssh/<file> that
 * sshd's StrictModes would refuse (sshkey_check_path); absent is fine.  A
 * home on a mount of the spec that is not there: -ENOMEDIUM and the finding
 * <step>.mount.absent (common/base/mounts.h); nothing is made there.
 */
int ssh_user_open(const struct ctx *c, struct report *r, const char *name, const char *file,
		  struct ssh_user *ret);
void ssh_user_close(struct ssh_user *u);

#endif
