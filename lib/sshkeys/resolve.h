/* SPDX-License-Identifier: MIT */
/*
 * The spec's users (ssh.users) as this node resolves them: through NSS on
 * the real root (getpwnam: /etc/passwd, sssd, ldap, extrausers, whatever
 * nsswitch.conf names), from <root>/etc/passwd under a fake root
 * (fs_lookup_user).  Discovery puts what resolved in this node's record
 * (users:), the ssh step waits for them at boot and compares the nodes
 * (docs/ssh.md "Directory users").
 */
#ifndef HPCINIT_SSHKEYS_RESOLVE_H
#define HPCINIT_SSHKEYS_RESOLVE_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcinit.h"

/*
 * "name=uid:gid,..." of the users that resolve now, in the spec's order,
 * whole items up to RECORD_USERS_MAX bytes (the record's bound): NULL when
 * none does.  A user that does not resolve is left out.
 */
char *users_resolved_text(const struct ctx *c, const struct strlist *users);

/*
 * Wait, up to wait_ms from now, until every one of users resolves (looked
 * up again every poll_ms); ret_ok[i] (users->n entries) says which did.
 * wait_ms 0 looks once.  Returns how many did not.
 */
size_t users_wait(const struct ctx *c, const struct strlist *users, uint64_t wait_ms,
		  uint64_t poll_ms, bool *ret_ok);

#endif
