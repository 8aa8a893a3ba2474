/* SPDX-License-Identifier: MIT */
/*
 * Peer records: what one node publishes about itself (docs/conventions.md "Peers").
 * The discovery module hands them on as the typed output peers (c->out->peers);
 * ssh, hostfile and mpi read it.
 * record.c owns the on-disk format (YAML) and parsing with limits; hmac.c
 * the HMAC-SHA256 that authenticates a record;
 * record_pack.c the packed form between two processes of one run.
 */
#ifndef HPCINIT_RECORD_H
#define HPCINIT_RECORD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "spec.h"

#define RECORD_MAX_BYTES (64 * 1024)
/*
 * The record format (docs/formats.md): the "format: N" line, always the
 * first field.  RECORD_FORMAT is what this agent writes; it reads formats 1
 * to RECORD_FORMAT_READ.  Adding an optional field is not a new format (a
 * reader skips keys it does not know); a new number means a reader that
 * does not know it would misread the record, so it refuses it
 * (-EPROTONOSUPPORT) and the node is left out.
 */
#define RECORD_FORMAT 1
#define RECORD_FORMAT_READ 1
#define RECORD_MAX_KEYS 32
#define RECORD_USERS_MAX 4096   /* bytes of a record's users: field */

/* A node's state as its record says it; unknown counts as usable. */
enum peer_state { PEER_UNKNOWN, PEER_READY, PEER_DEGRADED, PEER_FAILED };
/* "unknown", "ready", "degraded", "failed". */
const char *peer_state_name(enum peer_state s);

struct user_key {
	char *user;             /* cluster user the key belongs to */
	char *key;              /* "ssh-ed25519 AAAA... comment" (one line) */
};

struct peer {
	char *hostname;         /* the node's hostname as it reports it */
	char *addr;             /* address inside cluster.network (text) */
	char *ipoib_addr;       /* IPoIB address or NULL */
	/* Fabric identity (lib/ib/identity.c); NULL when absent (older records). */
	char *fabric;           /* "mlx5_ib0=0c42:a103:0065:aa10,..." device=port GUID, by name */
	char *pkey;             /* the tenant P_Key "0x800b" */
	char *placement_group;  /* Azure's placementGroupId (IMDS) */
	unsigned slots;         /* usable cores */
	bool head;              /* role: head */
	struct strlist host_keys;   /* "ssh-ed25519 AAAA..." (type and base64, no comment) */
	struct user_key *user_keys;
	size_t n_user_keys;
	char *version;          /* agent version that wrote it */
	char *boot_id;
	int64_t updated;        /* unix seconds of the last refresh */
	bool formed;            /* the writer has seen its cluster formed (discovery.expect reached) */
	/* The writer's own state (its status: ready, degraded, failed), covered by the HMAC. */
	enum peer_state state;  /* PEER_UNKNOWN: not said (an older hpcinit, or no apply yet) */
	char *reason;           /* the worst finding's tag when degraded or failed, else NULL */
	int64_t ready_ms;       /* ms from its kernel's start to ready in its boot; 0 not known */
	/*
	 * What the writer resolved of the spec's users through NSS,
	 * "alice=10001:10001,bob=10002:100" (name=uid:gid, in spec order, at most
	 * RECORD_USERS_MAX bytes); NULL when it says nothing (an older hpcinit,
	 * no users, none resolved).  ssh compares it between nodes.
	 */
	char *users;
	bool self;              /* this node */
};

struct peerset {
	struct peer *v;
	size_t n;
};

void peer_clear(struct peer *p);
/* dst (uninitialized) becomes a deep copy of src: peer_clear frees each apart. */
void peer_copy(struct peer *dst, const struct peer *src);
struct peerset *peerset_free(struct peerset *s);
/* Natural sort ("node2" < "node10"), head first. */
void peerset_sort(struct peerset *s);
/* strverscmp-like comparison used by peerset_sort, exposed for tests. */
int natural_cmp(const char *a, const char *b);

/* Added by the discovery area (record.c). */
#define RECORD_HMAC_HEX 64      /* HMAC-SHA256 as lowercase hex */

/* Append a zeroed peer to s and return it (the set owns it). */
struct peer *peerset_add(struct peerset *s);
/* A hostname that is safe as a file name and in hostfiles: [A-Za-z0-9._-], no "..". */
bool record_hostname_valid(const char *name);
/* n bytes of s in the shape of a record's users: "name=uid:gid[,...]", each name a
 * user name, each number decimal without leading zeros, below 4294967295. */
bool record_users_valid(const char *s, size_t n);
/* user's numbers in p->users: 0, or -ENOENT when the record does not carry user. */
int record_user_ids(const struct peer *p, const char *user, uint32_t *ret_uid, uint32_t *ret_gid);
/* Free this thread's HMAC context (a worker thread that parsed records, as it ends). */
void record_thread_end(void);
/* HMAC-SHA256 of data as hex.  0 or -EIO. */
int record_hmac(const void *key, size_t keylen, const void *data, size_t len,
		char out[RECORD_HMAC_HEX + 1]);
/*
 * The record text for p in cluster (malloc'd), ending in the "..." marker.
 * With key (the cluster secret), an "hmac:" line covers all bytes before it.
 * NULL only when the HMAC cannot be computed.
 */
char *record_format(const struct peer *p, const char *cluster, const void *key, size_t keylen);
/*
 * Parse and check one record.  cluster (may be NULL) must match its
 * "cluster:"; with key, its hmac must be present and right.  Returns 0 and
 * fills *ret, or fills err with a one-line reason and returns:
 * -EFBIG too large, -ENODATA truncated (no end marker), -EBADMSG malformed,
 * -EXDEV another cluster, -ENOKEY no hmac, -EKEYREJECTED wrong hmac,
 * -EPROTONOSUPPORT a format newer than RECORD_FORMAT_READ (err names the
 * format and, when the record says it, the writer's version; nothing else
 * of such a record is read).
 */
int record_parse(const char *text, size_t len, const char *cluster,
		 const void *key, size_t keylen, struct peer *ret, char *err, size_t errlen);
/*
 * A peer already checked, between two processes of one run (an isolated
 * step's child and the runner): every field, self included, as a list of
 * "<length>:<bytes>" ("-" for an absent string), appended to sb.  Not a
 * record: no cluster, no HMAC, no checks but its own framing.
 * record_unpack reads len bytes of it back: 0, or -EBADMSG (ret cleared).
 */
struct strbuf;
void record_pack(struct strbuf *sb, const struct peer *p);
int record_unpack(const char *data, size_t len, struct peer *ret);

#endif
