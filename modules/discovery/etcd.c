/* SPDX-License-Identifier: MIT */
/*
 * discovery method "etcd": each node keeps one key,
 * /hpcinit/<cluster>/nodes/<host>, whose value is the same record the
 * shared method writes (HMAC and every check of record.c apply), under an
 * etcd lease of discovery.lease.  etcd drops the key when the node stops
 * renewing the lease, so no lease compares clocks; the record's date (the
 * boot time) and the "in the future" rule go by etcd's clock (clock_seen):
 * the nodes' clocks need not agree.  A refresh is one "sync" (keep the
 * lease alive, put the record only when it differs, so an unchanged node
 * wakes no watcher) and one prefix range.
 *
 * The records live in the rendezvous's "nodes" collection (lib/rendezvous),
 * whose etcd session owns every call to etcd, this node's lease
 * (/run/hpcinit/etcd-lease) and the helper's answers: rv_sync, rv_frames,
 * rv_leave.  This file judges the records; etcd's clock offset lives in
 * /run/hpcinit/etcd-clock (per boot).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "discovery.h"
#include "escape.h"
#include "fsutil.h"
#include "log.h"
#include "proc.h"
#include "rendezvous/rendezvous.h"
#include "number.h"

#define MEMBERS_FILE "/run/hpcinit/etcd-members"  /* the last list etcd answered (this boot) */
#define CLOCK_FILE "/run/hpcinit/etcd-clock"      /* etcd's clock minus this node's, s (this boot) */
#define CLOCK_SLACK_S 5                 /* a Date within this of the known offset changes nothing */

struct etcd {
	struct rendezvous rv;           /* the "nodes" collection, its session and lease */
	bool rv_open;
	struct rendezvous left;         /* the "left" collection: graceful leaves' tombstones (held.c) */
	int left_open;                  /* 0: not yet, 1: listed, -1: could not be */
	char *key;                      /* this node's key (for messages) */
	char *prefix;                   /* /hpcinit/<cluster>/nodes/ */
	char *secret;                   /* cluster secret or NULL */
	size_t secret_len;
	uint64_t synced_ms;             /* when publish last renewed the lease */
	uint64_t wait_end_ms;           /* end of discovery.wait, from the first list */
	bool self_seen, self_same;      /* check/plan: this node's key in the last list */
	bool listed;                    /* the run has the membership: a publish lists no more */
	bool formed_put;                /* this run put "formed: true" (once without comparing) */
	bool unreachable;               /* no endpoint answered; on_unreachable: degrade */
	bool stale;                     /* the peers are the last membership etcd gave */
	char *pending;                  /* await's answer: the next list's (NULL: ask etcd) */
	size_t pending_len;
	int64_t clock_off;              /* etcd's clock minus this node's (s), when clock_known */
	bool clock_known;
	int64_t offset;                 /* clock_off past the allowed skew, else 0: the cluster clock */
};

/* The value of key in the watch's membership; NULL when it has none. */
static const char *watch_value(const char *key, size_t *ret_len)
{
	size_t len = 0;
	const char *p = rv_etcd_view(&len), *end = p + len;
	size_t want = strlen(key);
	struct rv_frame f;

	while (p && rv_frame_next(&p, end, &f))
		if (f.kind == RV_F_KV && f.key_len == want && memcmp(f.key, key, want) == 0) {
			*ret_len = f.value_len;
			return f.value;
		}
	return NULL;
}

static int fail(struct disc_run *run, int r, const char *what, bool may_degrade)
{
	const struct spec_discovery *d = &run->c->spec->discovery;
	struct etcd *e = run->priv;

	/*
	 * discovery.on_unreachable: degrade: go on with the last membership
	 * etcd gave in this boot (list reads it back, HMACs and all), so ssh
	 * and hostfile keep their files; the run ends degraded.
	 */
	if (may_degrade && (r == -EHOSTUNREACH || r == -ETIMEDOUT) &&
	    d->unreachable == DISC_UNREACH_DEGRADE && fs_exists(run->c, MEMBERS_FILE)) {
		report_detail(run->rep, "%s: none of the %zu etcd endpoints answered; "
			      "discovery.on_unreachable is degrade: using the last membership etcd gave "
			      "(%s)", what, d->endpoints.n, MEMBERS_FILE);
		e->unreachable = true;
		return 0;
	}

	if (r == -EHOSTUNREACH || r == -ETIMEDOUT)
		report_set(run->rep, ST_FAILED, "%s: none of the %zu etcd endpoints answered; "
			   "hostfiles and known hosts are left as they were", what, d->endpoints.n);
	else
		report_set(run->rep, ST_FAILED, "%s: etcd refused it (see details)", what);
	if (may_degrade && (r == -EHOSTUNREACH || r == -ETIMEDOUT) &&
	    d->unreachable == DISC_UNREACH_DEGRADE)
		report_detail(run->rep, "discovery.on_unreachable is degrade, but etcd gave no "
			      "membership yet in this boot: nothing to degrade to");
	return r;
}

/*
 * The boot time, by this node's clock (btime of /proc/stat follows the wall
 * clock): the record's "updated" once moved to the cluster clock (the lease,
 * not this, ages it out; it orders two records claiming one address).
 * Read under the root (--root: a test's own /proc/stat), else the kernel's.
 */
static int64_t boot_time(struct ctx *c)
{
	char *text = NULL, *p;
	long long bt = 0;

	if (fs_read(c, "/proc/stat", &text, NULL) < 0) {
		text = NULL;
		(void)fs_read_host("/proc/stat", 4 << 20, &text, NULL);
	}
	if (text && (p = strstr(text, "\nbtime ")) && !num_ll_prefix(p + 7, 1, INT64_MAX, &bt, NULL))
		bt = 0;
	free(text);
	return bt > 0 ? bt : (int64_t)time(NULL);
}

/*
 * The cluster clock under method etcd is etcd's: the HTTP Date of its
 * answers (the helper prints "date T").  A node whose clock differs from
 * it by more than DISC_CLOCK_SKEW_S dates its record and judges its peers'
 * ("in the future") by etcd's clock instead, and says so; so a node
 * booted a moment ago with its clock ahead is not rejected by its peers,
 * and a node behind rejects none.  The offset is kept per boot in
 * CLOCK_FILE, and moves only when a Date differs from it by more than
 * CLOCK_SLACK_S (the record's text stays the same from run to run).
 */
static void clock_read(struct etcd *e, struct ctx *c)
{
	char *text = NULL;
	const char *end;
	long long v;

	if (fs_read(c, CLOCK_FILE, &text, NULL) == 0) {
		if (num_ll_prefix(text, INT64_MIN, INT64_MAX, &v, &end) && (*end == '\n' || !*end)) {
			e->clock_off = v;
			e->clock_known = true;
		}
	}
	free(text);
	if (e->clock_known && (e->clock_off > DISC_CLOCK_SKEW_S || e->clock_off < -DISC_CLOCK_SKEW_S))
		e->offset = e->clock_off;
}

/* A "date T" from the helper, read at `local` by this node's clock. */
static void clock_seen(struct etcd *e, struct ctx *c, int64_t date, int64_t local)
{
	int64_t off = date - local;
	struct report scratch;
	char *text;

	if (date <= 0 || (e->clock_known && off - e->clock_off <= CLOCK_SLACK_S &&
			  e->clock_off - off <= CLOCK_SLACK_S))
		return;
	e->clock_off = off;
	e->clock_known = true;
	e->offset = off > DISC_CLOCK_SKEW_S || off < -DISC_CLOCK_SKEW_S ? off : 0;
	if (!ctx_may_write(c))
		return;
	text = xasprintf("%" PRId64 "\n", off);
	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(c, &scratch, CLOCK_FILE, text, strlen(text), 0644, 0, 0);
	report_free(&scratch);
	free(text);
}

/* ---- hooks ---- */

static int etcd_open(struct disc_run *run)
{
	struct ctx *c = run->c;
	struct etcd *e = xcalloc(1, sizeof(*e));
	int r;

	run->priv = e;
	r = disc_secret_load(c, run->rep, &e->secret, &e->secret_len);
	if (r < 0) {
		report_set(run->rep, ST_FAILED, "cluster secret unusable");
		return r;
	}
	/* The client key and the password as the cluster secret: root's alone. */
	if ((c->spec->discovery.key_file &&
	     (r = fs_check_private(c, run->rep, "discovery.key_file", c->spec->discovery.key_file)) < 0) ||
	    (c->spec->discovery.auth_file &&
	     (r = fs_check_private(c, run->rep, "discovery.auth_file", c->spec->discovery.auth_file)) < 0)) {
		report_set(run->rep, ST_FAILED, "etcd credentials unusable (see details)");
		return r;
	}
	{
		/* No list at open: a publish lists (and waits) in the same helper run. */
		struct rv_opts o = { .collection = "nodes", .self = run->self.hostname,
				     .max_bytes = RECORD_MAX_BYTES, .no_list = true };

		r = rv_open(c, run->rep, &o, &e->rv);
		if (r < 0) {
			report_set(run->rep, ST_FAILED, "the rendezvous in etcd cannot be opened: %s",
				   strerror(-r));
			return r;
		}
		e->rv_open = true;
	}
	e->prefix = xstrdup(e->rv.prefix);
	e->key = xasprintf("%s%s", e->prefix, run->self.hostname);
	clock_read(e, c);
	return 0;
}

/*
 * How long one wait for peers in etcd may take now: 0 when this run does
 * not wait (check/plan/refresh, the cluster formed, no discovery.wait left); at most a third of the lease (the lease is renewed
 * between waits), within discovery.wait (from the first wait of the run)
 * and the step's deadline.
 */
static uint64_t await_ms(struct disc_run *run)
{
	struct ctx *c = run->c;
	struct etcd *e = run->priv;
	uint64_t left = ctx_remaining_ms(c), ms = c->spec->discovery.lease_ms / 3;

	if (!ctx_may_write(c) || c->refresh || run->ready || c->spec->discovery.expect <= 1 ||
	    c->spec->discovery.wait_ms == 0)
		return 0;
	if (ms < 1000)
		ms = 1000;
	if (!e->wait_end_ms)
		e->wait_end_ms = run->start_ms + c->spec->discovery.wait_ms;
	if (e->wait_end_ms - now_ms() < ms && e->wait_end_ms > now_ms())
		ms = e->wait_end_ms - now_ms();
	if (left && left < ms + 1000)
		ms = left > 1000 ? left - 1000 : 0;
	if (now_ms() >= e->wait_end_ms || ms < 50)
		return 0;
	return ms;
}

/* After "list" the sync's answer is the list's, kept whole for the list (binary-safe). */
static void take_synced(struct disc_run *run, struct rv_synced *ans)
{
	struct etcd *e = run->priv;

	if (!ans->listed)
		return;
	free(e->pending);
	e->pending = ans->members;
	e->pending_len = ans->members_len;
	ans->members = NULL;
	e->listed = true;
	if (ans->waited)
		run->waited = true;
}

static int etcd_publish(struct disc_run *run)
{
	struct ctx *c = run->c;
	struct etcd *e = run->priv;
	struct rv_synced ans = { 0 };
	struct rv_sync q = { .name = run->self.hostname };
	char *text;
	int64_t asked, offset = e->offset;
	uint64_t sent_ms, ttl_s = c->spec->discovery.lease_ms / 1000 ? c->spec->discovery.lease_ms / 1000 : 1;
	bool again = false, granted = false;
	int r;

	if (!ctx_may_write(c))
		return 0;       /* check/plan: the list compares this node's key */
sync_again:
	run->self.updated = boot_time(c) + e->offset;
	text = record_format(&run->self, c->spec->cluster.name, e->secret, e->secret_len);
	if (!text) {
		report_set(run->rep, ST_FAILED, "cannot compute the record HMAC");
		return -EIO;
	}
	q.value = text;
	q.ttl_s = ttl_s;
	if (rv_etcd_view(NULL) && e->rv.lease) {
		/* In the watch: etcd holds exactly this record (the stream says so), the watch keeps the lease. */
		size_t have_len = 0;
		const char *have = watch_value(e->key, &have_len);

		if (have && have_len == strlen(text) && memcmp(have, text, have_len) == 0) {
			free(text);
			e->synced_ms = now_ms();
			return 0;
		}
	}
	asked = (int64_t)time(NULL);
	sent_ms = now_ms();             /* the lease is renewed at the start of a sync that waits */
	if (rv_etcd_view(NULL) || e->listed || again || run->announce) {
		/*
		 * The watch keeps the membership; a run that has listed it
		 * (the lease renewed during the wait, "formed: true" once the
		 * cluster formed) needs no second list of every record.
		 */
		bool changed = e->listed && run->self.formed && !e->formed_put;

		/*
		 * "formed: true" once formed: the record differs from etcd's
		 * (it did not say so), so the helper puts it without a range.
		 */
		if (changed)
			e->formed_put = true;
		q.put_always = changed;
	} else {
		/*
		 * The same helper then lists the membership (the list takes it
		 * from e->pending), and when this run waits for its peers,
		 * waits for them too (a watch from the list's revision), until
		 * expect keys or a record saying "formed: true" (which the list
		 * then judges): a node's whole cold start is one process and
		 * one range.
		 */
		q.list = true;
		q.expect = c->spec->discovery.expect;
		q.wait_ms = await_ms(run);
	}
	r = rv_sync(&e->rv, run->rep, &q, &ans);
	free(text);
	if (r < 0) {
		free(ans.members);
		return fail(run, r, "cannot publish this node's record", true);   /* 0: degrade */
	}
	take_synced(run, &ans);
	free(ans.members);
	granted = granted || ans.lease_new;
	e->synced_ms = sent_ms;
	clock_seen(e, c, ans.date, asked);
	if (ans.lease > 0 && e->offset != offset && !again) {
		/*
		 * The first word of etcd's clock in this boot (or a clock that
		 * moved): the record goes again, dated by it, before any peer
		 * can wait on the one just put.  Once a boot, or after a jump.
		 */
		again = true;
		offset = e->offset;
		q = (struct rv_sync){ .name = run->self.hostname };
		goto sync_again;
	}
	if (e->offset)
		report_finding(run->rep, ST_DEGRADED, "discovery.clock.skew",
			       "this node's clock is %" PRId64 " s %s etcd's (the Date of its answers; more "
			       "than the %d s of skew allowed): this node's record is dated and the peers' "
			       "judged by etcd's clock; fix the time sync (chrony)",
			       e->offset < 0 ? -e->offset : e->offset,
			       e->offset < 0 ? "ahead of" : "behind", DISC_CLOCK_SKEW_S);
	if (ans.lease <= 0) {
		report_set(run->rep, ST_FAILED, "etcd granted no lease");
		return -EPROTO;
	}
	if (granted)
		report_detail(run->rep, "etcd lease %" PRId64 " (%" PRIu64 " s) granted", ans.lease, ttl_s);
	if (ans.put) {
		report_changed(run->rep, e->key);
		report_raise(run->rep, ST_CHANGED);
	}
	return 0;
}

/* One key of the list: a peer, this node, or a rejection. */
/* A record of the list judged: true when it counts (a member admitted, or this node's own). */
static bool take_kv(struct disc_run *run, const char *k, size_t kl, const char *v, size_t vl)
{
	const struct spec *spec = run->c->spec;
	struct etcd *e = run->priv;
	size_t pl = strlen(e->prefix);
	char host[256], err[640];
	const char *tag;
	struct peer p;

	if (kl <= pl || memcmp(k, e->prefix, pl) != 0 || kl - pl >= sizeof(host) ||
	    memchr(k + pl, '\0', kl - pl)) {
		/* A key is anyone's text: escaped, newlines too, so it can print no line of its own. */
		struct strbuf sk = STRBUF_INIT;

		esc_append(&sk, k, kl < 200 ? kl : 200, false);
		disc_reject(run, "bad-name", "key %s: not %s<hostname>; rejected", sb_str(&sk), e->prefix);
		sb_free(&sk);
		return false;
	}
	memcpy(host, k + pl, kl - pl);
	host[kl - pl] = '\0';
	if (!record_hostname_valid(host)) {
		struct strbuf sk = STRBUF_INIT;

		esc_append(&sk, host, strlen(host) < 64 ? strlen(host) : 64, false);
		disc_reject(run, "bad-name", "key %s%s: not a valid host name; rejected", e->prefix, sb_str(&sk));
		sb_free(&sk);
		return false;
	}
	if (vl > RECORD_MAX_BYTES) {
		disc_reject(run, "too-large", "record %s: %zu bytes, over the %d-byte limit; rejected", host, vl,
		       RECORD_MAX_BYTES);
		return false;
	}
	if (strcmp(host, run->self.hostname) == 0 &&
	    disc_record_parse(spec->cluster.name, v, vl, e->secret, e->secret_len, host, &p, err,
			      sizeof(err)) < 0) {
		/* This node's own record refused: its peers refuse it too, a fault of this node. */
		e->self_seen = true;
		report_finding(&run->notes, ST_DEGRADED, "discovery.record.self-refused",
			       "this node's own record %s%s: %s; its peers reject it too (the next "
			       "apply or refresh writes it again)", e->prefix, host, err);
		return false;
	}
	if (strcmp(host, run->self.hostname) != 0 &&
	    disc_record_take(run, v, vl, e->secret, e->secret_len, host, host, &p) < 0)
		return false;
	if (strcmp(host, run->self.hostname) == 0) {
		struct peer tmp = run->self;
		char *want, *have;

		e->self_seen = true;
		tmp.updated = p.updated;
		node_state_like(&tmp, &p);
		want = record_format(&tmp, spec->cluster.name, NULL, 0);
		have = record_format(&p, spec->cluster.name, NULL, 0);
		e->self_same = strcmp(want, have) == 0;
		free(want);
		free(have);
		peer_clear(&p);
		return true;
	}
	/* The cluster's rules for records (admit.c), counted here like every rejection. */
	tag = admit_future(&p, disc_now() + e->offset, err, sizeof(err));
	if (!tag)
		tag = admit_record(&run->admit, &p, &run->notes, err, sizeof(err));
	if (tag) {
		disc_reject(run, tag, "record %s: %s; rejected", host, err);
		peer_clear(&p);
		return false;
	}
	*peerset_add(&run->found) = p;
	return true;
}

/*
 * Waiting for peers: no polling.  One helper process ("await") watches the
 * prefix from the list's revision and answers with the whole membership as
 * soon as etcd holds enough keys (expect, plus the keys this list rejected)
 * or after up to a third of the lease (then the lease is renewed and the
 * wait goes on, within discovery.wait).  Its answer is the next list's.
 */
static void wait_for_change(struct disc_run *run, int64_t rev, const char *members)
{
	struct ctx *c = run->c;
	struct etcd *e = run->priv;
	uint64_t ms = await_ms(run);
	struct rv_await w = { .have = members, .expect = (size_t)c->spec->discovery.expect + run->rejected,
			      .wait_ms = ms, .rev = rev };
	struct report scratch;
	char *out = NULL;
	size_t len = 0;

	if (!ctx_may_write(c) || rev <= 0 || ms == 0)
		return;
	report_init(&scratch);
	/*
	 * The helper gets the membership just listed (at rev) on stdin
	 * and watches from after it: no second range of every record.
	 */
	if (rv_frames(&e->rv, &scratch, &w, &out, &len) == 0) {
		free(e->pending);
		e->pending = out;
		e->pending_len = len;
		run->listen_again = true;
	}
	report_free(&scratch);
}

/*
 * The helper's list output (frames: "kv", "rev N") into run->found; its
 * revision.  kept (may be NULL): the frames of the records that count.
 */
static int64_t take_list(struct disc_run *run, const char *p, const char *end, struct strbuf *kept)
{
	int64_t rev = 0;
	struct rv_frame f;

	while (rv_frame_next(&p, end, &f)) {
		const char *q;
		long long v;

		if (f.kind == RV_F_KV) {
			if (take_kv(run, f.key, f.key_len, f.value, f.value_len) && kept)
				sb_appendn(kept, p - f.size, f.size);
		} else if (f.kind == RV_F_LINE && f.line_len > 4 && !memcmp(f.line, "rev ", 4) &&
			 (q = f.line + 4, num_ll_field(&q, LLONG_MIN, LLONG_MAX, &v)))
			rev = v;
	}
	return rev;
}

/*
 * Keep the records of the list that counted (members admitted, this node's
 * own; not its revision, not a record rejected) for on_unreachable: degrade,
 * and as the last membership a vanished record is held from (held.c): a
 * record that was never a member is not held.
 */
static void keep_members(struct disc_run *run, struct strbuf *sb)
{
	struct report scratch;

	report_init(&scratch);
	if (fs_mkdir_p(run->c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(run->c, &scratch, MEMBERS_FILE, sb->len ? sb_str(sb) : "", sb->len, 0600, 0, 0);
	report_free(&scratch);
}

/* disc_left_fn: key's record left gracefully: its tombstone holds the boot id that left (one list). */
static bool etcd_left(void *arg, const char *key, const char *boot)
{
	struct disc_run *run = arg;
	struct etcd *e = run->priv;
	size_t pl = strlen(e->prefix), len = 0;
	char *val = NULL;
	bool left;

	if (!e->left_open) {
		struct rv_opts o = { .collection = "left", .self = run->self.hostname, .max_bytes = 256 };
		struct report scratch;

		report_init(&scratch);
		e->left_open = rv_open(run->c, &scratch, &o, &e->left) == 0 ? 1 : -1;
		report_free(&scratch);
	}
	if (e->left_open < 0 || strncmp(key, e->prefix, pl) != 0 || rv_get(&e->left, key + pl, &val, &len) < 0)
		return false;
	left = strcmp(val, *boot ? boot : "-") == 0;
	free(val);
	return left;
}

/* The list just taken (*text, malloc'd) against the last one: what vanished is held or a leave. */
static void hold_vanished(struct disc_run *run, char **text, size_t *len)
{
	struct etcd *e = run->priv;
	char *prev = NULL;
	size_t plen = 0;

	if (fs_read(run->c, MEMBERS_FILE, &prev, &plen) < 0)
		return;
	disc_held_merge(run, prev, plen, text, len, e->key, etcd_left, run);
	free(prev);
}

static int etcd_list(struct disc_run *run)
{
	struct etcd *e = run->priv;
	struct proc_result res = { 0 };
	int64_t rev;
	int r;

	/* res: the list's frames (out, out_len), freed with it */
	/* A long wait for peers outlives the lease: renew it on the way. */
	if (run->waited && ctx_may_write(run->c) && !e->unreachable &&
	    now_ms() - e->synced_ms > run->c->spec->discovery.lease_ms / 3) {
		struct report *keep = run->rep, scratch;

		report_init(&scratch);
		run->rep = &scratch;
		(void)etcd_publish(run);
		run->rep = keep;
		report_free(&scratch);
	}
	disc_rejects_reset(run);
	e->self_seen = e->self_same = false;
	if (rv_etcd_view(NULL) && !e->unreachable) {
		/* In the watch: the membership its stream keeps, without asking etcd again. */
		size_t vlen = 0;
		const char *view = rv_etcd_view(&vlen);
		char *copy = xmalloc(vlen + 1);

		memcpy(copy, view, vlen);
		copy[vlen] = '\0';
		struct strbuf kept = STRBUF_INIT;

		hold_vanished(run, &copy, &vlen);
		(void)take_list(run, copy, copy + vlen, &kept);
		if (ctx_may_write(run->c))
			keep_members(run, &kept);
		sb_free(&kept);
		free(copy);
		return 1;
	}
	if (e->pending) {
		res.out = e->pending;
		res.out_len = e->pending_len;
		e->pending = NULL;
		r = 0;
	} else {
		r = e->unreachable ? -EHOSTUNREACH : rv_frames(&e->rv, run->rep, NULL, &res.out, &res.out_len);
	}
	if (r < 0 && !e->unreachable && fail(run, r, "cannot list the cluster's nodes", true) < 0) {
		proc_result_free(&res);
		return r;
	}
	if (r < 0) {
		/* on_unreachable: degrade: the last membership etcd gave, checked like a fresh one. */
		char *text = NULL;
		size_t len = 0;

		proc_result_free(&res);
		if (fs_read(run->c, MEMBERS_FILE, &text, &len) < 0) {
			report_set(run->rep, ST_FAILED, "cannot read %s", MEMBERS_FILE);
			return -EIO;
		}
		e->stale = true;
		(void)take_list(run, text, text + len, NULL);
		free(text);
		return 1;
	}
	e->listed = true;
	hold_vanished(run, &res.out, &res.out_len);
	{
		struct strbuf kept = STRBUF_INIT;

		rev = take_list(run, res.out, res.out + res.out_len, &kept);
		if (ctx_may_write(run->c))
			keep_members(run, &kept);
		sb_free(&kept);
	}
	if (disc_expect_met(run)) {
		proc_result_free(&res);
		return 1;
	}
	wait_for_change(run, rev, res.out);
	proc_result_free(&res);
	return 0;
}

static int etcd_finish(struct disc_run *run, const struct peerset *set)
{
	struct ctx *c = run->c;
	struct report *rep = run->rep;
	const struct spec *spec = c->spec;
	struct etcd *e = run->priv;

	disc_rejects_log(run);
	if (!ctx_may_write(c) && (!e->self_seen || !e->self_same)) {
		report_changed(rep, e->key);
		report_raise(rep, ST_CHANGED);
		report_detail(rep, "%s: %s; apply writes this node's record", e->key,
			      e->self_seen ? "differs from this node's state" : "missing in etcd");
	}
	if (e->stale) {
		report_set(rep, ST_DEGRADED, "%zu node%s from the last membership etcd gave: none of the "
			   "%zu etcd endpoints answered (discovery.on_unreachable: degrade; see details)",
			   set->n, set->n == 1 ? "" : "s", spec->discovery.endpoints.n);
		return 0;
	}
	if (set->n >= spec->discovery.expect) {
		report_set(rep, rep->status == ST_CHANGED ? ST_CHANGED : ST_OK,
			   "%zu node%s known through etcd (expect %u)%s%s", set->n,
			   set->n == 1 ? "" : "s", spec->discovery.expect, run->waited ? " after waiting" : "",
			   run->rejected ? "; records rejected, see details" : "");
	} else if (run->ready || !ctx_may_write(c)) {
		report_detail(rep, "%zu nodes known, fewer than expect %u%s%s%s", set->n,
			      spec->discovery.expect, run->ready ? " (" : "",
			      run->ready ? run->ready_why : "", run->ready ? ")" : "");
		report_set(rep, rep->status == ST_CHANGED ? ST_CHANGED : ST_OK,
			   "%zu node%s known through etcd (expect %u)%s", set->n, set->n == 1 ? "" : "s",
			   spec->discovery.expect, run->rejected ? "; records rejected, see details" : "");
	} else if (c->refresh) {
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes in etcd, and none says the "
			   "cluster has formed (a refresh does not wait for them)", set->n,
			   spec->discovery.expect);
	} else {
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes after waiting %" PRIu64
			   " s for peers in etcd", set->n, spec->discovery.expect,
			   spec->discovery.wait_ms / 1000);
	}
	return 0;
}

/*
 * A graceful leave's tombstone (held.c), put before the record goes:
 * /hpcinit/<cluster>/left/<host>, this boot's id, under a lease of its own
 * of discovery.lease + the grace (the node's own lease is revoked next).
 * Without it (etcd refused it) the peers hold the record for the grace.
 */
static void tombstone(struct disc_run *run)
{
	struct ctx *c = run->c;
	struct etcd *e = run->priv;
	struct rv_opts o = { .collection = "left", .self = run->self.hostname, .max_bytes = 256, .no_list = true };
	struct rv_sync q = { .name = run->self.hostname, .put_always = true,
			     .value = run->self.boot_id && *run->self.boot_id ? run->self.boot_id : "-",
			     .ttl_s = (c->spec->discovery.lease_ms + disc_grace_ms(c->spec)) / 1000 };
	struct rv_synced ans = { 0 };
	struct rendezvous t;
	struct report scratch;

	if (!ctx_may_write(c))
		return;
	report_init(&scratch);
	if (rv_open(c, &scratch, &o, &t) == 0) {
		t.lease = 0;    /* a lease of its own (the sync writes it as the node's: put back below) */
		if (rv_sync(&t, &scratch, &q, &ans) < 0)
			report_detail(run->rep, "the tombstone of this leave was not written (the peers hold "
				      "the record for %" PRIu64 " s)", disc_grace_ms(c->spec) / 1000);
		free(ans.members);
		rv_close(&t);
		if (e->rv.lease) {
			char *text = xasprintf("%" PRId64 "\n", e->rv.lease);

			(void)fs_write(c, &scratch, RV_LEASE_FILE, text, strlen(text), 0600, 0, 0);
			free(text);
		} else {
			(void)fs_remove(c, &scratch, RV_LEASE_FILE);
		}
	}
	report_free(&scratch);
}

/* hpcinit leave: the tombstone, then revoke the lease (etcd deletes the key with it) and delete the key. */
static int etcd_leave(struct disc_run *run)
{
	struct etcd *e = run->priv;
	unsigned left = 0;
	int r;

	tombstone(run);
	r = rv_leave(&e->rv, run->rep, run->self.hostname, &left);

	if (r < 0)
		return fail(run, r, "cannot leave", false);
	if (left)
		report_set(run->rep, ST_CHANGED, "%s removed from etcd%s", e->key,
			   left & RV_LEFT_REVOKED ? " (lease revoked)" : "");
	else
		report_set(run->rep, ST_OK, "%s: no record in etcd to remove", e->key);
	return 0;
}

static void etcd_close(struct disc_run *run)
{
	struct etcd *e = run->priv;

	disc_rejects_reset(run);        /* the run's, also when its session was kept (etcd_keep) */
	if (!e)
		return;
	if (e->secret) {
		explicit_bzero(e->secret, e->secret_len);
		free(e->secret);
	}
	if (e->rv_open)
		rv_close(&e->rv);
	if (e->left_open > 0)
		rv_close(&e->left);
	free(e->key);
	free(e->prefix);
	free(e->pending);
	free(e);
	run->priv = NULL;
}

/*
 * The step's session kept for the announce (runner.c): only one that reached
 * etcd; what the step listed is not the announce's (it lists nothing, as a
 * fresh open would not).
 */
static bool etcd_keep(struct disc_run *run)
{
	struct etcd *e = run->priv;

	if (!e || !e->rv_open || e->unreachable || e->stale)
		return false;
	free(e->pending);
	e->pending = NULL;
	e->pending_len = 0;
	e->listed = false;
	e->self_seen = e->self_same = false;
	return true;
}

const struct disc_method_ops disc_method_etcd = {
	.name = "etcd",
	.id = DISC_ETCD,
	.first_poll_ms = 100,
	.open = etcd_open,
	.publish = etcd_publish,
	.list = etcd_list,
	.collect = disc_nop,
	.finish = etcd_finish,
	.leave = etcd_leave,
	.close = etcd_close,
	.keep = etcd_keep,
};
