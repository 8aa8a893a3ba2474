/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous: where the nodes of a cluster meet (docs/cluster.md).  A
 * library below the steps: discovery keeps its peer records in the
 * collection "nodes", the ssh CA its certificates and revocation list in
 * "certs".  Two backends behind one const ops table:
 *
 *   dir  (discovery.method shared): files <discovery.dir>/<cluster>/<coll>/
 *        <name> on a shared filesystem.  Every level of the tree is checked
 *        (a directory, not a link, not writable by group or others, one
 *        owner: root, or the uid root is squashed to); every entry is
 *        opened O_NOFOLLOW|O_NONBLOCK, must be a regular file of the
 *        trusted owner, not writable by group or others, at most max_bytes,
 *        and is opened again when NFS says it went stale (ESTALE).
 *   etcd (discovery.method etcd): keys /hpcinit/<cluster>/<coll>/<name>,
 *        every call through the hpcinit-etcd helper (one runner, one frame
 *        reader, one error mapping; the protocol is lib/rendezvous/etcd-proto.h).
 *
 * What an entry says is the caller's to judge (record.c, admit.c, the
 * CA's checks): the library says only whether it may be read at all.
 */
#ifndef HPCINIT_RENDEZVOUS_H
#define HPCINIT_RENDEZVOUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcinit.h"
#include "proc.h"

#define RV_STALE_TRIES 5                /* opens of one entry that may go stale (NFS, replaced) */
#define RV_CALL_TIMEOUT_MS 5000         /* one etcd request to one endpoint */

struct rv_opts {
	const char *collection;         /* "nodes", "certs" */
	const char *self;               /* this node's hostname: the squash probe's name, and in\n\t\t\t\t\t * check mode nodes/<self>.rec shows whom root writes as */
	size_t max_bytes;               /* the largest entry read */
	bool create;                    /* apply: create missing levels (else -ENOENT) */
	bool no_list;                   /* etcd: no list at open (the caller syncs, lists, awaits) */
	bool puts_differ;               /* dir: each put's value differs from the one it replaces (a
					 * record carries its time): apply does not read that to compare */
};

/* rv_sync: this node's own entry, kept under its lease (etcd). */
struct rv_sync {
	const char *name;               /* the entry (this node's) */
	const char *value;              /* its value, NUL-terminated */
	uint64_t ttl_s;                 /* the lease's TTL (0: 1 s) */
	bool put_always;                /* put without comparing first (a value known to differ) */
	bool list;                      /* then list the collection (ans->members) ... */
	unsigned expect;                /* ... waiting up to wait_ms (0: not) for expect entries */
	uint64_t wait_ms;
};
struct rv_synced {
	int64_t lease;                  /* the lease granted (0: none) */
	bool lease_new;                 /* not the one held before (kept in RV_LEASE_FILE now) */
	bool put;                       /* the entry was written */
	int64_t date;                   /* the rendezvous's clock (etcd's HTTP Date), 0: not said */
	bool listed, waited;            /* list: members holds the collection's frames; it waited */
	char *members;                  /* malloc'd, the caller's */
	size_t members_len;
};
/* rv_frames: wait for the collection to hold expect entries, watching from rev. */
struct rv_await {
	const char *have;               /* the collection's frames as listed at rev */
	size_t expect;
	uint64_t wait_ms;
	int64_t rev;
};
#define RV_LEFT_DELETED 1u
#define RV_LEFT_REVOKED 2u
#define RV_LEASE_FILE "/run/hpcinit/etcd-lease"  /* the lease this node holds (this boot) */

/* One entry: its name in the collection and its value (borrowed by the callback). */
struct rv_entry {
	const char *name;
	const char *value;              /* NUL-terminated; NULL when refused */
	size_t len;
	int64_t mtime;                  /* dir: the file time; etcd: 0 */
	int64_t lease;                  /* etcd: the key's lease; dir: 0 */
	const char *refused;            /* NULL, or a tag: symlink, not-a-file, wrong-owner,
					 * writable, too-large, unreadable, bad-name */
	const char *why;                /* the refusal in words */
	bool reowned;                   /* dir: a root-owned entry given to the trusted uid */
	void *prep;                     /* rv_list_prep: what the lister's prep made of it */
};

/* list: called for each entry; a non-zero return stops the walk (and is list's). */
typedef int (*rv_each_fn)(void *arg, const struct rv_entry *e);
/* list: false skips a name without opening it (dir: the name is not read at all). */
typedef bool (*rv_want_fn)(void *arg, const char *name);

struct rendezvous;

struct rv_ops {
	const char *name;
	int (*open)(struct rendezvous *, struct report *);
	/* 0 and the value (NUL-terminated, malloc'd), -ENOENT, or -errno with the refusal in e. */
	int (*get)(struct rendezvous *, const char *name, struct rv_entry *e, char **ret);
	/* As fs_write: 1 changed (would change), 0 the same already, -errno. */
	int (*put)(struct rendezvous *, struct report *, const char *name, const char *data, size_t len);
	/* 1 removed (would remove), 0 absent, -errno. */
	int (*remove)(struct rendezvous *, struct report *, const char *name);
	int (*list)(struct rendezvous *, struct report *, rv_want_fn, rv_each_fn, void *arg);
	void (*close)(struct rendezvous *);
	/* The session of a backend with leases (etcd; NULL for dir: -EOPNOTSUPP). */
	int (*sync)(struct rendezvous *, struct report *, const struct rv_sync *, struct rv_synced *);
	/* The collection's frames, unfiltered (w NULL: now; else after an await). */
	int (*frames)(struct rendezvous *, struct report *, const struct rv_await *w, char **ret, size_t *ret_len);
	/* This node's entry removed and its lease revoked: *left RV_LEFT_*. */
	int (*leave)(struct rendezvous *, struct report *, const char *name, unsigned *left);
};

/* The shared directory's tree: its levels and whom it trusts. */
struct rv_tree {
	char *levels[3];                /* dir, dir/cluster, dir/cluster/<collection> (target paths) */
	uid_t trusted;                  /* the uid that writes entries: 0, or root squashed */
	gid_t trusted_gid;
	bool squashed;
	bool head_squash;               /* this node exports the share, root squashed */
};

struct rv_read_cache;

struct rendezvous {
	const struct rv_ops *ops;
	struct ctx *c;
	struct rv_opts o;
	char *where;                    /* for messages: "<dir>/" or the etcd prefix */
	struct rv_tree tree;            /* dir */
	char *prefix;                   /* etcd: /hpcinit/<cluster>/<collection>/ */
	struct strlist names, vals;     /* etcd: the collection as the last list gave it */
	bool listed;
	int64_t lease;                  /* etcd: the lease this node holds (RV_LEASE_FILE), 0: none */
	struct rv_read_cache *read_cache; /* dir: what passes with reuse_ms read (dir.c), NULL: none */
	/* dir: the directory's clock as rv_dir_now last read it (a probe file's time), and when */
	struct timespec dir_clock;
	uint64_t dir_clock_ms;          /* now_ms() after that read; 0: never read */
};

extern const struct rv_ops rv_dir_ops;
extern const struct rv_ops rv_etcd_ops;

/*
 * Open a collection with the backend of discovery.method (shared or etcd).
 * 0; -ENOENT when a level is missing and o->create is false (a detail says
 * so); -ENOMEDIUM when discovery.dir is on a mount of the spec that is not
 * there (the finding <step>.mount.absent says so; nothing is made or read
 * there); -errno with the reason in rep.
 */
int rv_open(struct ctx *c, struct report *rep, const struct rv_opts *o, struct rendezvous *rv);
void rv_close(struct rendezvous *rv);
int rv_get(struct rendezvous *rv, const char *name, char **ret, size_t *ret_len);
/* As rv_get, with the entry's file time and, when refused, why (e->refused, e->why). */
int rv_get_entry(struct rendezvous *rv, const char *name, struct rv_entry *e, char **ret);
int rv_put(struct rendezvous *rv, struct report *rep, const char *name, const char *data, size_t len);
int rv_remove(struct rendezvous *rv, struct report *rep, const char *name);
int rv_list(struct rendezvous *rv, struct report *rep, rv_want_fn want, rv_each_fn each, void *arg);
/*
 * A list whose per-entry work may run on several threads.  want and each
 * are called as by rv_list, on the calling thread, in the collection's
 * order.  prep (optional) is called first for each entry read (value set),
 * on any thread, many at once: it may read arg but must change nothing
 * shared; its result reaches each as e->prep, which each owns (frees or
 * keeps).  prep_free frees the results each never saw (a walk that
 * stopped); thread_end (optional) runs on each worker thread as it ends,
 * to free what prep kept per thread.  The dir backend reads and preps
 * large collections on up to RV_LIST_THREADS threads (as many as this
 * process may run on); etcd calls prep in line.  reuse_ms (dir; 0: off):
 * a run that lists again and again caches what it read, and a later pass
 * gives an entry whose file is unchanged (dir.c: inode, size, times, owner,
 * mode) from what it cached, read at most reuse_ms before, without opening
 * it again.  prep_copy (optional, with reuse_ms): a copy of prep's result,
 * on any thread; with it the cache keeps a copy of each entry's prep too,
 * and an unchanged entry comes with a copy of that, prep not called again
 * (so prep must depend on the entry alone, and on what stays the same for
 * the rendezvous's life).
 */
#define RV_LIST_THREADS 4
struct rv_lister {
	rv_want_fn want;
	void *(*prep)(void *arg, const struct rv_entry *e);
	void (*prep_free)(void *prep);
	void (*thread_end)(void);
	rv_each_fn each;
	void *arg;
	uint64_t reuse_ms;
	void *(*prep_copy)(void *arg, const void *prep);
	/*
	 * recheck_ms (dir, with reuse_ms; 0: every pass): a cached entry that
	 * a pass checked (fstatat) or read less than recheck_ms before, and
	 * that readdir gives as a regular file with the same inode number as
	 * then, is given without its fstatat.
	 */
	uint64_t recheck_ms;
};
int rv_list_prep(struct rendezvous *rv, struct report *rep, const struct rv_lister *l);
/* Every name in the collection (refused entries included), appended to ret. */
int rv_names(struct rendezvous *rv, struct report *rep, struct strlist *ret);
/* etcd: list again (a node waiting for something); dir: nothing to do. */
int rv_reload(struct rendezvous *rv, struct report *rep);

/*
 * The session of a node in a rendezvous with leases (etcd): sync keeps the
 * lease alive (granting one when none is held or it is gone) and puts the
 * entry only when it differs (put_always: at once), then lists (and waits)
 * when asked; frames gives the whole collection as the helper's frames
 * ("kv" each key, "rev R") for a caller that judges every key itself, or
 * after waiting for expect entries; leave removes the entry and revokes
 * the lease.  -EOPNOTSUPP for the shared directory; else as rv_etcd_run.
 */
int rv_sync(struct rendezvous *rv, struct report *rep, const struct rv_sync *q, struct rv_synced *ans);
int rv_frames(struct rendezvous *rv, struct report *rep, const struct rv_await *w, char **ret, size_t *ret_len);
int rv_leave(struct rendezvous *rv, struct report *rep, const char *name, unsigned *left);
/*
 * The session's view of the collection a watcher keeps (hpcinit watch: its
 * stream's membership, in the helper's list format), for the runs it
 * starts: discovery lists it instead of asking etcd, and puts nothing while
 * it holds this node's record unchanged.  Set NULL when the stream is not
 * in sync (ask etcd).  Borrowed, not copied: the setter keeps it alive.
 */
void rv_etcd_view_set(const char *text, size_t len);
/* The view (NULL: none), its length in *len when len is not NULL. */
const char *rv_etcd_view(size_t *len);
/* The lease this node holds (RV_LEASE_FILE), 0 when none. */
int64_t rv_etcd_lease(const struct ctx *c);
/* Keep a lease alive: its TTL left (0: gone), -1 when etcd could not be asked (why appended to err). */
int64_t rv_etcd_keepalive(const struct ctx *c, int64_t lease, struct strbuf *err);

/*
 * The cluster secret (secret.c): *key NULL without cluster.secret_file;
 * else a regular file, not a link, root's, mode 0600 (no group or other
 * bits), 16 to 4096 bytes.  0, or -errno with the reason in rep.
 */
int rv_secret_load(const struct ctx *c, struct report *rep, char **key, size_t *len);

/* ---- the dir backend's pieces the discovery method uses too (dir.c) ---- */

/*
 * dirlist.c: read the entry name in the open directory dfd with every
 * check above (t: whom the tree trusts; reown: apply on a squashed head may
 * give a root-owned entry to the trusted uid, e->reowned says so).  0 and the
 * value (malloc'd, NUL-terminated, also in e->value); -ENOENT; else -errno
 * with e->refused and e->why (valid until the next call).
 */
int rv_dir_read_entry(int dfd, const char *name, const struct rv_tree *t, bool reown, size_t max,
		      struct rv_entry *e, char **ret);
/*
 * The shared directory's clock now: the file time of a probe file written
 * in the collection (".hpcinit-clock.<self>", removed at once; names
 * starting with "." are never listed).  On NFS the server sets it, so it is
 * the clock every node's writes are dated by.  0, or -errno.
 */
int rv_dir_now(struct rendezvous *rv, int64_t *ret);
/* rv_list_prep on the dir backend (dirlist.c). */
int rv_dir_list_prep(struct rendezvous *rv, struct report *rep, const struct rv_lister *l);
/* dir: what this rendezvous's lists with reuse_ms did (dirlist.c); all 0 without any. */
struct rv_list_stats {
	size_t passes;                  /* lists */
	size_t quiet;                   /* of them, over the directory unchanged: no readdir, no stat of an entry */
	size_t reused;                  /* entries given from what an earlier list read */
};
void rv_dir_list_stats(const struct rendezvous *rv, struct rv_list_stats *ret);

/* ---- etcd: the one helper runner, the one frame reader (etcd.c) ---- */

/* The helper's argv up to its command: the spec's endpoints, TLS, auth and timeout. */
void rv_etcd_argv(const struct ctx *c, struct strlist *argv, unsigned timeout_ms);
/*
 * Run the helper with args (NULL-terminated) after its options: 0 and its
 * output in *res; else what it said in rep's details (when rep is not
 * NULL) and -EHOSTUNREACH (no endpoint answered), -ETIMEDOUT, -EPROTO
 * (etcd refused) or the start error.
 */
int rv_etcd_run(const struct ctx *c, struct report *rep, const char *stdin_data,
		struct proc_result *res, const char *const args[]);
/* As rv_etcd_run with the arguments listed. */
int rv_etcd_call(const struct ctx *c, struct report *rep, const char *stdin_data,
		 struct proc_result *res, const char *a0, ...) __attribute__((sentinel));
/* The helper's exit code as -errno (the one mapping). */
int rv_etcd_status(const struct proc_result *res);

/* One frame of the helper's output (lib/rendezvous/etcd-proto.h). */
enum rv_frame_kind { RV_F_KV, RV_F_DEL, RV_F_LINE };
struct rv_frame {
	enum rv_frame_kind kind;
	const char *key, *value;        /* KV: key and value bytes; DEL: the key */
	size_t key_len, value_len;
	int64_t lease;
	const char *line;               /* LINE: the line, without its newline */
	size_t line_len;
	size_t size;                    /* the whole frame's bytes, header included */
};

/*
 * The next frame at *p (before end): 1 and *p moved past it, 0 when the
 * rest is not a whole frame (a stream still coming, or the end).  A frame
 * whose lengths run past end is not whole.
 */
int rv_frame_next(const char **p, const char *end, struct rv_frame *f);

/*
 * Watch a collection: start a child whose stdout (ch->out_fd) streams the
 * collection's frames (etcd: "reset", every key, "synced", then "kv"/"del"
 * per change; see lib/rendezvous/etcd-proto.h) until it is killed.  -EOPNOTSUPP
 * for the shared directory (its users list it again instead).
 */
int rv_watch(const struct ctx *c, const char *collection, struct proc_child *ch);

/*
 * ---- a watcher's reading (stream.c) ----
 *
 * A collection's stream (rv_watch), kept as the membership it describes:
 * key -> the helper's "kv" frame.  synced: a whole view since the last
 * "reset".  The watcher polls ch.out_fd (and ch.err_fd while >= 0).
 */
struct rv_stream {
	struct proc_child ch;
	bool running;
	char **key, **item;
	size_t *item_len;
	size_t n, cap;
	size_t *slot, slots;            /* the keys by hash: index + 1, 0 empty; slots a power of 2 */
	bool stale;                     /* a key dropped: the index is built again at the next find */
	bool synced;
	struct strbuf in;               /* stream bytes not parsed yet */
	struct strbuf err_line;         /* the helper's stderr line not ended yet */
};
/* Start the stream (the membership emptied): 0, or -errno (-EOPNOTSUPP: the shared directory). */
int rv_stream_start(const struct ctx *c, const char *collection, struct rv_stream *s);
/* End it (TERM to its process group), the membership emptied. */
void rv_stream_stop(struct rv_stream *s);
void rv_stream_free(struct rv_stream *s);
/* Read what ch.out_fd has: each "synced" counts one change in *changes.  false at end of stream. */
bool rv_stream_read(struct rv_stream *s, unsigned *changes);
/* As rv_stream_read, from bytes in hand (the reader's parser). */
void rv_stream_feed(struct rv_stream *s, const char *buf, size_t n, unsigned *changes);
/* Read what ch.err_fd has: each whole line, escaped, appended to lines.  false at its end (closed). */
bool rv_stream_read_err(struct rv_stream *s, struct strlist *lines);
/* The membership in the helper's list format (what a list would print). */
void rv_stream_text(const struct rv_stream *s, struct strbuf *out);

/* The lease kept alive every `every` ms (from next on); gone: it was found gone (or none is held). */
struct rv_keeper {
	const struct ctx *c;
	uint64_t every, next;
	bool gone;
};
/* When due: one keepalive (etcd's complaint appended to err).  true when it was due. */
bool rv_keeper_tick(struct rv_keeper *k, struct strbuf *err);

/*
 * The names in the shared directory's collection ending in suffix, summed
 * (a hash of the set, in any order) for a poll: 0, or -errno.  Only the
 * names: a join or a leave adds or removes a file.
 */
int rv_dir_names_sum(const struct ctx *c, const char *collection, const char *suffix, uint64_t *ret);

/* The etcd key prefix of a collection: /hpcinit/<cluster>/<collection>/. */
char *rv_etcd_prefix(const struct spec *spec, const char *collection);

#endif
