/* SPDX-License-Identifier: MIT */
/* SSH key helpers (libssh) shared by discovery (publishing) and ssh (trust). */
#ifndef HPCINIT_SSHKEY_H
#define HPCINIT_SSHKEY_H

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
/* This node's host public keys from <root>/etc/ssh/ssh_host_*_key.pub ("type base64"). */
int sshkey_host_pubkeys(const struct ctx *c, struct strlist *ret);
/* Keep "type base64" of a public key line; NULL when the line is not a key. malloc'd. */
char *sshkey_canonical(const char *line);

#endif
