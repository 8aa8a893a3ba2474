/* SPDX-License-Identifier: MIT */
/*
 * The users' key pairs, which the ssh step owns (userkeys.c).  discovery
 * runs before ssh and asks for the public halves: a node's first record
 * must already carry them (docs/ssh.md "Whose keys").
 */
#ifndef HPCINIT_SSH_USERKEYS_H
#define HPCINIT_SSH_USERKEYS_H

#include "hpcinit.h"

/*
 * Make sure ~user/.ssh exists (0700, owned by the user) and holds a key pair
 * of the given type; never overwrite an existing private key.  The public
 * key line ("type base64 comment") is returned in *ret_pub (malloc'd).
 * In check/plan mode nothing is created; a missing key gives -ENOENT.
 */
int ssh_user_key(struct ctx *c, struct report *r, const char *user, enum key_type type,
		 char **ret_pub);

#endif
