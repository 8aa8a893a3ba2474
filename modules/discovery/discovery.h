/* SPDX-License-Identifier: MIT */
/*
 * What the discovery step's files share (docs/conventions.md "Peers",
 * docs/cluster.md).  The folder holds: the step itself (discovery.c), which
 * runs a method and owns the one loop that waits for discovery.expect
 * nodes; this node's facts (node.c); what a peer must be to be used
 * (admit.c); what the step and its methods share about a run (run.c: the
 * clock, when expect is met); and one file per method behind struct
 * disc_method_ops, listed in disc_methods[] (discovery.c): shared.c and
 * etcd.c keep peer records (common/base/record.c) in a rendezvous, static.c
 * resolves discovery.hosts, scan.c probes cluster.network.
 *
 * Adding a method: one file defining a const struct disc_method_ops and one
 * line in disc_methods[].
 */
#ifndef HPCINIT_DISCOVERY_H
#define HPCINIT_DISCOVERY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/socket.h>

#include "hpcinit.h"
#include "record.h"

#define WAIT_POLL_CAP_MS 5000           /* the wait re-reads at least every 5 s */
/*
 * How far a record's time may lie ahead of the cluster clock (the shared
 * directory's file times, see shared.c) before it is rejected.  Documented
 * in docs/cluster.md.
 */
#define DISC_CLOCK_SKEW_S 60

/* Where "now" comes from (run.c): time(2), or a skewed clock in tests (docs/conventions.md "Ops tables"). */
struct disc_clock {
	int64_t (*now)(void);
};
extern const struct disc_clock *disc_clock;
/* This node's clock, unix seconds. */
int64_t disc_now(void);

/* What a record's peer must be to be used (admit.c). */
struct admit {
	const struct spec *spec;
	bool check_names;               /* false: the method's names come from the spec or DNS */
	char *self_name;                /* this node's hostname, lower case */
	const char *domain;             /* in self_name, after its first dot; NULL: short names */
	bool has_ipoib;                 /* the IPoIB network is known: */
	struct cidr ipoib;              /* rdma.ipoib's subnet on this node */
	struct strlist reserved;        /* names this node needs for something else ... */
	struct strlist reserved_why;    /* ... and what for (the same index) */
	char *static_hosts;             /* /etc/hosts without hpcinit's block; NULL: none */
};

/* One run of a method: what the step hands it and what it hands back. */
struct disc_run {
	struct ctx *c;
	struct report *rep;
	struct peer self;               /* this node's facts (node.c) */
	struct admit admit;             /* the rules for records, from self and the spec */
	struct peerset found;           /* peers of the last list, self not included */
	struct report notes;            /* findings of the last list (rejections ...): only
					 * findings, disc_notes_commit moves them on */
	bool waited;                    /* list ran more than once (or publish waited for peers) */
	uint64_t start_ms;              /* the step's start: discovery.wait counts from here */
	bool listen_again;              /* list waited for a change itself: list again without a pause */
	bool announce;                  /* the announce hook: publish only (etcd: no list), never wait */
	/*
	 * The cluster has formed: this node saw discovery.expect nodes earlier
	 * in this boot, or a member's record says it did (formed: true).  Fewer
	 * nodes then means nodes left or the cluster is scaling: nobody waits.
	 */
	bool ready;
	char ready_why[160];            /* why ready, for the details */
	/* records the last list rejected: how many, and the first reasons for the log (run.c) */
	size_t rejected;
	struct strlist rejects;
	void *priv;                     /* the method's own state, from open to close */
};

#define DISC_REJECT_LOG_MAX 10          /* rejections logged (syslog) per run */

/*
 * A rendezvous method.  A hook a method does not need is disc_nop, so the step
 * never tests for NULL.  Hooks return 0 or -errno; a failing hook has set
 * the report's status and summary.
 */
struct disc_method_ops {
	const char *name;               /* discovery.method in the spec */
	enum disc_method id;            /* its value in struct spec */
	uint64_t first_poll_ms;         /* first pause of the wait; doubles to WAIT_POLL_CAP_MS */
	/*
	 * The peers' names come from the spec or DNS (static, scan), not from
	 * records other nodes wrote: the cluster's naming rule (admit.c) is
	 * not applied to them.  A method that reads records leaves it false.
	 */
	bool names_from_spec;
	/* Check the spec, load what the method needs.  1: nothing to list (self only). */
	int (*open)(struct disc_run *);
	/* Make this node known (shared: write, or in check/plan compare, its record). */
	int (*publish)(struct disc_run *);
	/* One look at the membership into run->found and run->notes.  1: expect is met. */
	int (*list)(struct disc_run *);
	/* After the last list: complete run->found (names, host keys) and notes. */
	int (*collect)(struct disc_run *);
	/* Status and summary, from the final set (self included). */
	int (*finish)(struct disc_run *, const struct peerset *set);
	/* Take this node out of the cluster (hpcinit leave): remove what publish made. */
	int (*leave)(struct disc_run *);
	void (*close)(struct disc_run *);
	/*
	 * The step's child stays for the announce (c->step_stays): keep what
	 * open made (run->priv) for it, made ready for one more publish; false
	 * when it should not be kept (then close).  NULL: never kept.
	 */
	bool (*keep)(struct disc_run *);
};

extern const struct disc_method_ops disc_method_shared;
extern const struct disc_method_ops disc_method_static;
extern const struct disc_method_ops disc_method_scan;
extern const struct disc_method_ops disc_method_etcd;

/* The cluster secret (cluster.secret_file) for a method: *key NULL without one (shared.c). */
int disc_secret_load(const struct ctx *c, struct report *rep, char **key, size_t *len);

/* Method shared: make <dir>/<cluster>/nodes exist, decide whom to trust, say what the admin must know (tree.c). */
struct rendezvous;
int disc_tree_open(struct ctx *c, struct report *rep, const struct peer *self, struct rendezvous *rv);
/* The default for a hook a method does not need: does nothing, returns 0 (run.c). */
int disc_nop(struct disc_run *run);

/* ---- what a vanished record means (held.c) ---- */

/* How long a record that vanished without a leave is held: discovery.lease, at least 5 s. */
uint64_t disc_grace_ms(const struct spec *s);
/* When the first record held now stops being held (monotonic ms; 0: none held): the watch refreshes then. */
uint64_t discovery_held_until(const struct ctx *c);
/* The boot id a record's text says, into buf ("" when none). */
void disc_record_boot_id(const char *v, size_t vl, char *buf, size_t size);
/* true when key's record left gracefully: its tombstone names boot (the method's). */
typedef bool (*disc_left_fn)(void *arg, const char *key, const char *boot);
/*
 * The list just taken (*text, *len, malloc'd frames; replaced) against the
 * last one (prev): records gone from it are a leave (left() true) or held
 * for the grace, their last frames appended to *text.
 */
void disc_held_merge(struct disc_run *run, const char *prev, size_t prev_len, char **text, size_t *len,
		     const char *self_key, disc_left_fn left, void *arg);
/* shared: this node wrote its record now; a write after more than half the lease says the directory was away. */
void disc_shared_written(struct ctx *c, struct report *rep);
/* shared: how long records past their lease are still kept (the grace after the directory came back), 0: not. */
uint64_t disc_shared_kept_ms(const struct ctx *c);
/* shared: a list found most records overdue at once (an outage or a partition, not a scale-in): marked now. */
void disc_shared_most_overdue(struct ctx *c);
/* shared: how long records past their lease are still held after the last such list, 0: not. */
uint64_t disc_shared_held_ms(const struct ctx *c);

/* ---- this node's facts (node.c) ---- */

/* Everything this node publishes into *ret.  Failures that leave a usable record are details. */
int node_facts(struct ctx *c, struct report *rep, struct peer *ret);
/*
 * node_facts, with the addresses and the boot id of known (this node's facts
 * as the same process found them moments before: the announce after the
 * discovery step, in the step's child) in place of listing the interfaces and
 * reading the boot id again; NULL: as node_facts.
 */
int node_facts_known(struct ctx *c, struct report *rep, struct peer *ret, const struct peer *known);
/* p's state, reason and time to ready from the node's state (c->node; unknown outside a run). */
void node_state_set(const struct ctx *c, struct peer *p);
/*
 * The finding of a rendezvous this node cannot reach (shared.c's disc_unreachable): an
 * outage of the share, not a sick node.  A last run that failed for it alone is published
 * as degraded (node_state_set), never failed: hostfile.exclude: failed drops failed nodes.
 */
#define DISC_UNREACHABLE_TAG "discovery.rendezvous.unreachable"
/* -errno r says the rendezvous is away (its server stalled or gone), not refused. */
bool disc_unreachable(int r);
/*
 * dst says src's state (shallow: dst owns nothing of it): check and plan
 * compare this node's record but for its state, which the runner keeps
 * (the announce hook puts it), so a state is never drift.
 */
void node_state_like(struct peer *dst, const struct peer *src);
/* Is sa inside cluster.network (true without one)? */
bool node_in_network(const struct spec *spec, const struct sockaddr *sa);
/* The address of sa as text (malloc'd), NULL when it cannot be printed. */
char *node_sa_text(const struct sockaddr *sa);

/*
 * The IPoIB network: the subnet of the spec's rdma.ipoib interface on this
 * node (HPCINIT_IPOIB_ADDRESS=addr/prefix on a fake root).  -ENOENT when the
 * spec names no rdma.ipoib or the interface has no IPv4 address.
 */
int node_ipoib_network(const struct ctx *c, struct cidr *ret);

/* ---- what records may do (admit.c) ---- */

void admit_init(struct admit *a, const struct ctx *c, const struct peer *self);
void admit_free(struct admit *a);
/* name has the form of this node's: short, or in its domain (case aside). */
bool admit_name_ours(const struct admit *a, const char *name);
/*
 * A record's peer, after its HMAC, owner and lease: NULL when it may be
 * used (an IPoIB address it may not use is dropped, a note says when that
 * looks wrong), else a tag word ("outside-network", "foreign-name",
 * "reserved-name", "resolves-elsewhere") and the reason in why.  Every
 * method that reads records calls it for each one.
 */
const char *admit_record(const struct admit *a, struct peer *p, struct report *notes,
			 char *why, size_t len);
/*
 * A record dated more than DISC_CLOCK_SKEW_S after now (the cluster's clock
 * as the method knows it: shared, the directory's file times; etcd, this
 * node's) would win every address contest (drop_duplicate_addrs keeps the
 * newest) for good: NULL when it is not, else "future" and the reason.
 */
const char *admit_future(const struct peer *p, int64_t now, char *why, size_t len);
/*
 * Every method's peers pass admit_record once more before they are used
 * (a method that already rejected with its own messages loses nothing).
 */
void admit_found(struct disc_run *run);
/*
 * One node, one name (every method, self included in s): names equal but
 * for case are one; a peer claiming this node's is dropped, a name two
 * peers claim is dropped from both.
 */
void drop_contested_names(struct peerset *s, struct report *notes);

/* ---- shared by the methods (discovery.c) ---- */

/* Drop all but one peer claiming each address: this node, else the newest record. */
void drop_duplicate_addrs(struct peerset *s, struct report *notes);
/* Has this node seen `expect` nodes since boot (/run is per boot), in this cluster? */
bool disc_ready_before(const struct ctx *c);
void disc_mark_ready(struct ctx *c);
/* ---- shared by the step and its methods (run.c) ---- */

/*
 * The one rule every method's list ends with: is there nothing to wait for?
 * True when run->ready, when expect nodes are known (self included), or
 * when an admitted peer's record says the cluster formed (then run->ready
 * is set: this node joins a running cluster).
 */
bool disc_expect_met(struct disc_run *run);
/* Record the findings of the last list (run->notes) in the step's report. */
void disc_notes_commit(struct disc_run *run);
/* Empty run->found and run->notes for the next list. */
void disc_run_reset(struct disc_run *run);
/*
 * A record not taken: a cluster finding (report_cluster) tagged
 * discovery.record.WHY in run->notes (the same tags for every method),
 * counted, and the first reasons kept for the log (syslog on a real
 * system), so that a planted or tampered record leaves a trace even when
 * nobody reads the run's output.  Another node's bad record is never this
 * node's problem: it does not raise the step's status (nobody drains).
 */
void disc_reject(struct disc_run *run, const char *why, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * A record read for host (name: what the messages call it, the file or the
 * key) parsed with the cluster's secret (key, NULL without one) into *ret:
 * 0, or the rejection said (disc_reject: truncated, bad-hmac, no-hmac,
 * malformed; a record of another host is malformed) and -errno.
 */
int disc_record_take(struct disc_run *run, const char *data, size_t len, const void *key, size_t key_len,
		     const char *host, const char *name, struct peer *ret);
/*
 * disc_record_take in two: the parse, which touches nothing shared (any
 * thread: the shared directory's records are parsed on several), with the
 * reason in err; then, on the run's thread, the rejection said and counted.
 */
int disc_record_parse(const char *cluster, const char *data, size_t len, const void *key, size_t key_len,
		      const char *host, struct peer *ret, char *err, size_t errlen);
int disc_record_judge(struct disc_run *run, int r, const char *err, const char *name);
/*
 * A record parsed where it was read (a list's prep, on any thread): the
 * peer, or why not; its copy and its free are the list's prep_copy (the
 * shared directory's read cache keeps one: lib/rendezvous/dirlist.c) and
 * prep_free.
 */
struct disc_parsed {
	int r;
	char *err;                      /* r < 0 */
	struct peer p;                  /* r == 0 */
};
struct disc_parsed *disc_parsed_new(const char *cluster, const char *data, size_t len, const void *key,
				    size_t key_len, const char *host);
void *disc_parsed_copy(void *arg, const void *prep);
void disc_parsed_free(void *prep);
/*
 * Whether two peers of s have the same key (without case when nocase): one
 * pass through an open addressing table of the keys' hashes, so that the
 * n log n comparisons of a sort are made only when some are equal.
 */
bool disc_any_equal(const struct peerset *s, const char *(*key)(const struct peer *), bool nocase);
/* -1 when a is this node and b is not, 1 the other way, else 0: this node sorts first. */
int disc_self_first(const struct peer *a, const struct peer *b);
/* Pointers to s's peers sorted by cmp (on struct peer **), malloc'd: for a pass that drops some. */
struct peer **disc_sorted_index(struct peerset *s, int (*cmp)(const void *, const void *));
/* Remove the peers a pass dropped (peer_clear: hostname NULL), keeping the order. */
void disc_compact(struct peerset *s);
/* Forget the last list's rejections. */
void disc_rejects_reset(struct disc_run *run);
/* Log the rejections kept, and how many more there were. */
void disc_rejects_log(const struct disc_run *run);

/* ---- the step (discovery.c) ---- */

/* hpcinit leave: take this node out of the cluster with the spec's method. */
int discovery_leave(struct ctx *c, struct report *rep);

#endif
