/* SPDX-License-Identifier: MIT */
/*
 * SSH keys for discovery (publishing) and ssh (trust), without libssh in
 * the agent: OpenSSH key text is parsed here, and the work that needs
 * libssh (making a key pair, fetching a host key over the network) runs in
 * the helper program hpcinit-ssh (libexec/hpcinit-ssh.c) through proc.c.
 */
#ifndef HPCINIT_SSHKEY_H
#define HPCINIT_SSHKEY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "spec.h"

struct ctx;
struct report;

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
 * Take the user's filesystem identity (setfsuid/setfsgid, and the user's
 * primary group as the only supplementary group: root's are dropped) while
 * touching files in a home the user controls; a no-op unless running as
 * root for another user whose home or ~/.ssh they own.  Pass the result to
 * sshkey_fsid_restore, which puts root's groups back.  Not nested.
 */
bool sshkey_fsid_user(const struct ctx *c, const char *home, uid_t uid, gid_t gid);
void sshkey_fsid_restore(bool switched);
/* This node's host public keys from <root>/etc/ssh/ssh_host_*_key.pub ("type base64"). */
int sshkey_host_pubkeys(const struct ctx *c, struct strlist *ret);
/* Keep "type base64" of a public key line; NULL when the line is not a key. malloc'd. */
char *sshkey_canonical(const char *line);
/*
 * Is key ("type base64", canonical) an OpenSSH certificate
 * ("...-cert-v01@openssh.com")?  sshkey_canonical accepts one; where a
 * plain host key is expected (a node's own key files, pinned known_hosts)
 * callers refuse it.
 */
bool sshkey_is_cert(const char *key);
/* "type SHA256:..." as ssh-keygen -l prints it; "type (unparsable)" for a malformed key. */
char *sshkey_fingerprint(const char *canon);

/*
 * The public key ("type base64") of a private key file's text, read from
 * the key itself, without the helper: an OpenSSH-format key carries it in
 * clear, a PEM key (RSA, ECDSA as libssh writes them) is read with OpenSSL.
 * -EINVAL when the key cannot be used: encrypted (a passphrase) or unreadable.
 */
int sshkey_public_of_private(const char *text, size_t len, char **ret_pub);

/* ---- the helper program (libexec/hpcinit-ssh) ---- */

/* (Its path: proc_helper_path("hpcinit-ssh"), $(libexecdir)/hpcinit/hpcinit-ssh.) */
/*
 * A new key pair of the given type: the public key ("type base64") and the
 * private key text, both malloc'd; the caller wipes and frees the private
 * key.  -errno, with the helper's message in err (may be NULL).
 */
int sshkey_generate(enum key_type type, char **ret_pub, char **ret_priv, char *err, size_t errlen);

/*
 * The one host-key fetcher: for each of hosts[0..n), the host keys its sshd
 * on port offers, by key exchange (no authentication: trust on first use).
 * each_type: one exchange per key type (every key the host has), else one
 * exchange (the key ssh itself would be offered).  Keys go to ret[i] as
 * "type base64"; errs[i] (may be NULL) gets -errno for a host that gave none.
 * The whole fetch is bounded by total_ms.  -errno, with a one-line reason
 * in err, when the helper failed.
 */
int sshkey_fetch_host_keys(const char *const *hosts, size_t n, unsigned port,
			   unsigned timeout_ms, bool each_type, unsigned total_ms,
			   struct strlist *ret, int *errs, char *err, size_t errlen);

#endif
