/* SPDX-License-Identifier: MIT */
/*
 * What the ssh step's files share (docs/conventions.md "Trust", docs/ssh.md).
 * The folder holds: the step itself (ssh.c), known_hosts and the ssh_config
 * drop-in (known_hosts.c), authorized_keys (authorized_keys.c), the spec's
 * users as NSS resolves them (users.c), host certificates and host-based
 * login (ca.c on every node, ca_head.c on the head, certs.c the certs/
 * collection both read, cert.c an OpenSSH certificate's fields), and small
 * shared pieces (common.c).  The users' key pairs are lib/sshkeys; libssh
 * lives in the helper hpcinit-ssh (libexec/hpcinit-ssh.c).
 */
#ifndef HPCINIT_SSH_H
#define HPCINIT_SSH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcinit.h"
#include "record.h"
#include "sshkeys/userkeys.h"

#define KH_PATH "/etc/hpcinit/ssh_known_hosts"
#define CONF_DIR "/etc/ssh/ssh_config.d"
#define CONF_PATH CONF_DIR "/90-hpcinit.conf"
#define DETAIL_MAX 10           /* lines of one kind in details; the rest are counted */

/* One node's entry in ssh_known_hosts: its identity, names and host keys. */
struct khost {
	char *id;               /* lower-case hostname */
	char *boot_id;          /* "" when unknown */
	char *source;           /* record | local | scan */
	struct strlist names;   /* hostname, short name, addresses */
	struct strlist keys;    /* "type base64" */
	const struct peer *peer;        /* the peer it was built from; NULL when read back */
};

struct khosts {
	struct khost *v;
	size_t n;
	size_t cap;             /* allocated entries; 0 for a borrowed array */
};

/* What one run found, for the summary line. */
struct ssh_tally {
	size_t peers, host_keys, tofu, users, user_keys;
	bool refused;           /* a live peer's host key changed */
	struct strlist refused_hosts;
};

/*
 * A string -> index map (open addressing, linear probing), so that a run
 * stays O(N) in the number of nodes.  Keys are borrowed: they must outlive
 * it.  Each slot keeps its key's hash next to it: a probe compares the
 * hash, and reads the key (elsewhere in memory) only when it matches.
 */
struct smap_slot {
	const char *key;        /* NULL: empty */
	size_t val;
	uint64_t hash;
};

struct smap {
	struct smap_slot *v;
	size_t cap, n;
};

/* ---- common.c ---- */

void smap_init(struct smap *m, size_t expect);
void smap_free(struct smap *m);
bool smap_get(const struct smap *m, const char *key, size_t *ret);
/* Insert key (keeping an existing value); returns false when it was there. */
bool smap_add(struct smap *m, const char *key, size_t val);
/* Insert key with val when absent (true); else false and its value in *ret (when not NULL). */
bool smap_put(struct smap *m, const char *key, size_t val, size_t *ret);
bool valid_addr(const char *s);
char *lowercase(const char *s);

/* ---- known_hosts.c ---- */

void khosts_free(struct khosts *s);
struct khost *khosts_add(struct khosts *s, const char *id, const char *boot_id,
			 const char *source);
/* Read ssh_known_hosts as hpcinit wrote it. */
void kh_parse(const char *text, struct khosts *ret);
char *kh_render(const struct spec *s, const struct khosts *hosts);
char *conf_render(const struct spec *s, const struct khosts *hosts);
/* The known_hosts this run wants, from the peers and what is pinned (old): want_build, then want_judge. */
void want_hosts(struct ctx *c, struct report *r, const struct peerset *ps,
		const struct khosts *old, struct khosts *want, struct ssh_tally *t);
/* The entries the peers ask for (names, published keys), before any policy. */
void want_build(struct ctx *c, struct report *r, const struct peerset *ps, struct khosts *want);
/*
 * The key policy against what is pinned (old), keys fetched for peers
 * without published ones, departed nodes named, counts in t.  Judging
 * against an old model equal to want's own rendering changes nothing.
 */
void want_judge(struct ctx *c, struct report *r, const struct khosts *old, struct khosts *want,
		struct ssh_tally *t);
/* check: missing, extra and mismatched keys, by name and key type. */
void kh_compare(struct report *r, const struct khosts *have, const struct khosts *want);

/* ---- cert.c: an OpenSSH certificate, read far enough to judge it ---- */

struct sshcert {
	char *type;             /* "ssh-ed25519-cert-v01@openssh.com" */
	char *key;              /* the certified key, "type base64" */
	uint32_t cert_type;     /* 1 user, 2 host */
	char *key_id;
	struct strlist principals;
	uint64_t valid_after, valid_before;
	char *ca_key;           /* the key that signed it, "type base64" */
};

/* Parse "type base64 [comment]".  0, or -EBADMSG (ret is then empty). */
int sshcert_parse(const char *line, struct sshcert *ret);
void sshcert_free(struct sshcert *c);

/* ---- ca.c: host_keys: ca and hostbased (docs/ssh.md) ---- */

#define CA_KEY_DEFAULT "/etc/hpcinit/ssh-ca"            /* where a compute must hold no CA key */
#define REVOKED_PATH "/etc/hpcinit/ssh_revoked_keys"    /* the cluster's KRL, a local copy */
#define SSHD_CONF_DIR "/etc/ssh/sshd_config.d"
#define SSHD_CONF_PATH SSHD_CONF_DIR "/90-hpcinit.conf"
#define SHOSTS_PATH "/etc/ssh/shosts.equiv"
#define SYS_KNOWN_HOSTS "/etc/ssh/ssh_known_hosts"

/* The known_hosts of ca mode: @cert-authority lines for the cluster's names and network. */
char *ca_kh_render(const struct spec *s, const struct khosts *hosts);
/* Host patterns (ssh_config "Host" syntax) for the cluster's names and network in ca mode. */
void ca_host_patterns(const struct spec *s, const struct khosts *hosts, struct strlist *ret);
/*
 * ca mode: the head signs the members' host keys and revokes departed ones;
 * every node installs its own certificate and the cluster's KRL.
 * hostbased: shosts.equiv and the system known_hosts sshd reads.  Then the
 * sshd drop-in, and a reload when it or a certificate changed.
 */
int ca_hostbased_converge(struct ctx *c, struct report *r, const struct khosts *want,
			  const char *kh_text);

/* certs.c: read name from the certs collection: 0, -ENOENT, or a refusal (a failed finding in r when not NULL). */
struct rendezvous;
int ca_certs_get(struct rendezvous *st, struct report *r, const char *name, char **ret,
		 size_t *ret_len);
/*
 * certs.c: what a node reads of certs/ for itself (ca.c): 0, -ENOENT when
 * absent (certs/ itself not made yet included), -EKEYREJECTED for an entry
 * the rendezvous refuses (a cluster finding in r: whoever wrote it, it was
 * not the head), or another -errno (the rendezvous unreachable).
 */
int ca_certs_read(struct rendezvous *st, struct report *r, const char *name, char **ret,
		  size_t *ret_len);

/* ---- ca_head.c: the head signs and revokes ---- */

/* Run ssh-keygen (or systemctl) argv under a 10 s deadline; its error in r. */
int ca_keygen(struct report *r, const char *const argv[]);
/*
 * Sign the members' host keys (pinned mode's rule for a changed key), revoke
 * departed and replaced keys, keep the revocation list and publish it with
 * its HMAC (secret: the cluster secret, NULL without one).
 */
int ca_head_sign(struct ctx *c, struct report *r, const struct khosts *want, struct rendezvous *st,
		 const char *secret, size_t secret_len, size_t *ret_signed, size_t *ret_revoked,
		 size_t *ret_pruned);
/* 0 when mac_text is the head's HMAC of krl (always without a key); -ENOKEY, -EKEYREJECTED. */
int ca_krl_vouched(const struct spec *s, const char *key, size_t keylen, const char *krl,
		   size_t len, const char *mac_text);

/* ---- authorized_keys.c ---- */

/* The authorized_keys block for one user (self_pub: this node's key, NULL when absent). */
char *ak_render(const struct spec *s, const struct peerset *ps, const char *user,
		const char *self_pub, const char *self_host, struct report *r);
void ak_report_diff(struct ctx *c, struct report *r, const char *path,
		    const char *old_block, const char *new_block);

/* ---- users.c: the spec's users through NSS, the same on every node ---- */

/*
 * Wait (apply at boot: ssh.users_wait) for every user of ssh.users to
 * resolve, ssh.user.unresolved (failed) for each that does not; then each
 * resolved user's ids against the peers' records: ssh.user.ids-differ,
 * failed when this node is the odd one, a cluster finding naming the odd
 * nodes otherwise.  Returns which resolved (ssh.users.n entries, malloc'd).
 */
bool *users_converge(struct ctx *c, struct report *r);

#endif
