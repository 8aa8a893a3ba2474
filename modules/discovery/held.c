/* SPDX-License-Identifier: MIT */
/*
 * What a vanished record means (issue 37): an outage is not a mass leave.
 *
 * Under method etcd a record goes when its lease ends.  A node that
 * crashed stops renewing it; so does every node at once when etcd itself
 * stops answering for longer than the lease: on resume etcd revokes every
 * lease that ran out meanwhile, and each node's watch takes a new one and
 * puts its record again -- a moment during which a node that lists sees
 * its peers gone.  Earlier node agents built on leases took that moment
 * for a mass leave.  Here a record that vanished is judged:
 *
 *  - a graceful leave ("hpcinit leave", a Scheduled Event's) writes a
 *    tombstone before it removes the record: /hpcinit/<cluster>/left/<host>
 *    holding the boot id of the record that left, under a lease of its own
 *    (discovery.lease + the grace); a vanished record with its tombstone is
 *    gone at once;
 *  - any other vanished record is held, as it was last seen, for the grace
 *    (disc_grace_ms: discovery.lease, at least GRACE_MIN_MS): long enough for
 *    a live node to find its lease gone (its keepalive every third of the
 *    lease) and put its record again.  A record back within the grace ends
 *    the hold; one that stays away is dropped at the first list after it.
 *    The watch runs a refresh then (discovery_held_until).
 *
 * So a crashed node leaves every list within lease + grace + the watch's
 * debounce and refresh (docs/discovery.md states the bound).  A node whose
 * own lease was lost republishes first (its refresh puts, then lists), and
 * gives its peers the same grace.  The records held and since when live in
 * HELD_FILE ("MS KEY" lines, MS on the monotonic clock; this boot's /run),
 * the last membership in the method's members file, both written by the
 * run that lists.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "discovery.h"
#include "fsutil.h"
#include "number.h"
#include "rendezvous/rendezvous.h"

#define HELD_FILE "/run/hpcinit/etcd-held"
#define GRACE_MIN_MS 5000

uint64_t disc_grace_ms(const struct spec *s)
{
	return s->discovery.lease_ms > GRACE_MIN_MS ? s->discovery.lease_ms : GRACE_MIN_MS;
}

/* HELD_FILE read: keys held and since when. */
struct held {
	struct strlist keys;
	uint64_t *since;
};

static void held_read(const struct ctx *c, struct held *h)
{
	char *text = NULL, *p, *nl;

	if (fs_read(c, HELD_FILE, &text, NULL) < 0)
		return;
	for (p = text; (nl = strchr(p, '\n')); p = nl + 1) {
		unsigned long long ms;
		const char *end;

		*nl = '\0';
		if (!num_ull_prefix(p, 10, UINT64_MAX, &ms, &end) || *end != ' ' || !end[1])
			continue;
		h->since = xrealloc(h->since, (h->keys.n + 1) * sizeof(*h->since));
		h->since[h->keys.n] = ms;
		strlist_push(&h->keys, end + 1);
	}
	free(text);
}

static void held_free(struct held *h)
{
	strlist_free(&h->keys);
	free(h->since);
}

uint64_t discovery_held_until(const struct ctx *c)
{
	struct held h = { 0 };
	uint64_t until = 0;

	held_read(c, &h);
	for (size_t i = 0; i < h.keys.n; i++)
		if (!until || h.since[i] + disc_grace_ms(c->spec) < until)
			until = h.since[i] + disc_grace_ms(c->spec);
	held_free(&h);
	return until;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The keys of a list's frames, sorted (for bsearch). */
static void keys_of(const char *p, const char *end, struct strlist *ret)
{
	struct rv_frame f;

	while (rv_frame_next(&p, end, &f))
		if (f.kind == RV_F_KV)
			strlist_push_take(ret, xstrndup(f.key, f.key_len));
	if (ret->n)
		qsort(ret->v, ret->n, sizeof(*ret->v), cmp_str);
}

static bool has_key(const struct strlist *s, const char *k)
{
	return s->n && bsearch(&k, s->v, s->n, sizeof(*s->v), cmp_str) != NULL;
}

/* The boot id a record's text says ("boot_id: X"), into buf; "" when none. */
void disc_record_boot_id(const char *v, size_t vl, char *buf, size_t size)
{
	const char *end = v + vl, *p = v;

	buf[0] = '\0';
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		size_t ll = nl ? (size_t)(nl - p) : (size_t)(end - p);

		if (ll > 9 && !memcmp(p, "boot_id: ", 9) && ll - 9 < size) {
			memcpy(buf, p + 9, ll - 9);
			buf[ll - 9] = '\0';
			return;
		}
		p += ll + 1;
	}
}

/*
 * The list just taken (*text, *len: the method's frames) against the last
 * one (prev): every record in prev and not in the list, other than self's,
 * is a leave when left() says its tombstone is there, else held (its last
 * frame appended to *text) until the grace since it vanished has passed.
 * HELD_FILE then says what is held (a run that may write).
 */
void disc_held_merge(struct disc_run *run, const char *prev, size_t prev_len, char **text, size_t *len,
		     const char *self_key, disc_left_fn left, void *arg)
{
	struct ctx *c = run->c;
	struct strlist now_keys = { 0 };
	struct held h = { 0 }, keep = { 0 };
	struct strbuf out = STRBUF_INIT, file = STRBUF_INIT;
	const char *p = prev, *end = prev + prev_len;
	uint64_t now = now_ms(), grace = disc_grace_ms(c->spec);
	struct rv_frame f;

	if (!prev)
		return;
	keys_of(*text, *text + *len, &now_keys);
	held_read(c, &h);
	sb_appendn(&out, *text, *len);
	while (rv_frame_next(&p, end, &f)) {
		char *key, boot[128];
		uint64_t since = now;
		bool was_held = false;

		if (f.kind != RV_F_KV)
			continue;
		key = xstrndup(f.key, f.key_len);
		if (!strcmp(key, self_key) || has_key(&now_keys, key)) {
			free(key);
			continue;
		}
		for (size_t i = 0; i < h.keys.n && !was_held; i++)
			if (!strcmp(h.keys.v[i], key)) {
				since = h.since[i];
				was_held = true;
			}
		disc_record_boot_id(f.value, f.value_len, boot, sizeof(boot));
		if (!was_held && left && left(arg, key, boot)) {
			report_detail(run->rep, "%s: gone, with its tombstone (a graceful leave)", key);
		} else if (now - since < grace) {
			report_detail(run->rep, "%s: its record vanished %" PRIu64 " ms ago without a leave (a "
				      "lease that ended: the node crashed, or etcd was away); kept as it was "
				      "last seen for the grace of %" PRIu64 " s", key, now - since, grace / 1000);
			sb_appendn(&out, p - f.size, f.size);
			sb_printf(&file, "%" PRIu64 " %s\n", since, key);
			strlist_push(&keep.keys, key);
		} else {
			report_detail(run->rep, "%s: its record stayed away for the grace of %" PRIu64 " s: gone",
				      key, grace / 1000);
		}
		free(key);
	}
	if (ctx_may_write(c) && (file.len || h.keys.n)) {
		struct report scratch;

		report_init(&scratch);
		if (!file.len)
			(void)fs_remove(c, &scratch, HELD_FILE);
		else if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
			(void)fs_write(c, &scratch, HELD_FILE, sb_str(&file), file.len, 0600, 0, 0);
		report_free(&scratch);
	}
	free(*text);
	*len = out.len;
	*text = sb_steal(&out);
	strlist_free(&now_keys);
	held_free(&h);
	held_free(&keep);
	sb_free(&file);
}

/*
 * Method shared: a record is past its lease when its node has not written
 * it for the lease.  When the directory itself stopped answering (a stalled
 * NFS server) no node could, and every record is past its lease the moment
 * it is back.  So a node that finds its own last write of its record older
 * than half the lease (its renewals are a third of the lease apart in the
 * watch, a refresh timer's period else) takes the directory for having been
 * away: from that write on, for the grace, records past their lease are kept
 * (and pruned by nobody), while their nodes write them again.
 */
#define SHARED_WRITTEN "/run/hpcinit/shared-written"    /* this node's last write of its record */
#define SHARED_BACK "/run/hpcinit/shared-back"          /* the write that found the directory back */
#define SHARED_HELD "/run/hpcinit/shared-held"          /* the last list that found most records overdue */

static uint64_t mono_file(const struct ctx *c, const char *path)
{
	char *text = NULL;
	unsigned long long v = 0;
	const char *end;

	if (fs_read(c, path, &text, NULL) == 0 && !(num_ull_prefix(text, 10, UINT64_MAX, &v, &end) &&
						     (*end == '\n' || !*end)))
		v = 0;
	free(text);
	return v;
}

static void mono_write(struct ctx *c, const char *path, uint64_t v)
{
	struct report scratch;
	char *text = xasprintf("%" PRIu64 "\n", v);

	report_init(&scratch);
	/* a time, read by the caller already: not read again to compare */
	if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write_opt(c, &scratch, path, text, strlen(text), 0644, 0, 0, FS_REPLACE);
	report_free(&scratch);
	free(text);
}

void disc_shared_written(struct ctx *c, struct report *rep)
{
	uint64_t now = now_ms(), last = mono_file(c, SHARED_WRITTEN);

	if (!ctx_may_write(c))
		return;
	if (last && now - last > c->spec->discovery.lease_ms / 2) {
		report_detail(rep, "this node could not write its record for %" PRIu64 " s (more than half "
			      "the lease): the directory was away; records past their lease are kept for "
			      "the grace of %" PRIu64 " s while their nodes write them again",
			      (now - last) / 1000, disc_grace_ms(c->spec) / 1000);
		mono_write(c, SHARED_BACK, now);
	}
	mono_write(c, SHARED_WRITTEN, now);
}

/* What is left of the grace since the time a mark file holds, 0: none (no mark, or over). */
static uint64_t grace_left(const struct ctx *c, const char *path)
{
	uint64_t since = mono_file(c, path), now = now_ms(), grace = disc_grace_ms(c->spec);

	return since && now - since < grace ? since + grace - now : 0;
}

uint64_t disc_shared_kept_ms(const struct ctx *c)
{
	return grace_left(c, SHARED_BACK);
}

/*
 * Method shared, the other side of an outage: this node reaches the
 * directory and most of its peers do not (a partition between them and the
 * server, or their mounts stalled and this node's not).  To this node their
 * records pass their lease together, which no node can tell from a mass
 * crash.  A list that finds most records overdue (shared.c) marks it here;
 * for the grace after the last such list, records past their lease are held
 * (up to lease + grace old) rather than pruned, while their nodes write
 * them again.
 */
void disc_shared_most_overdue(struct ctx *c)
{
	if (ctx_may_write(c))
		mono_write(c, SHARED_HELD, now_ms());
}

uint64_t disc_shared_held_ms(const struct ctx *c)
{
	return grace_left(c, SHARED_HELD);
}
