/* SPDX-License-Identifier: MIT */
/*
 * discovery method "shared": each node keeps one record in
 * <dir>/<cluster>/nodes/<host>.rec on the shared filesystem and reads
 * everyone else's: one readdir and one read per node, O(N) per node, no
 * connection to any peer.  Records are trusted by the directory's owner
 * (root, or the uid root is squashed to) and, with cluster.secret_file, by
 * their HMAC.  A head that exports the share with root squashed makes the
 * tree and its own record the export's anonymous uid's, so that every
 * record has the owner the clients' root writes as.
 *
 * Time: the cluster clock is the shared directory's, seen in the file time
 * of a probe file each run writes before its record (rv_dir_now).  A node
 * whose own clock is off by more than DISC_CLOCK_SKEW_S stamps its record
 * and judges leases by that clock instead and says so (discovery.clock.skew),
 * so a node that is behind is not pruned by its peers and a node that is
 * ahead prunes no one; a record dated further than the skew ahead of the
 * cluster clock is rejected (it would otherwise never expire and win every
 * address conflict).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "discovery.h"
#include "escape.h"
#include "fsutil.h"
#include "log.h"
#include "rendezvous/rendezvous.h"


/* How long write_self trusts its own last probe of the directory's clock (probe_fresh). */
#define PROBE_REUSE_MS 2000

struct secret {
	char *key;                      /* NULL: no cluster secret */
	size_t len;
};

static void secret_free(struct secret *s)
{
	if (s->key) {
		explicit_bzero(s->key, s->len);
		free(s->key);
	}
	s->key = NULL;
	s->len = 0;
}

/* ---- cluster secret (lib/rendezvous/secret.c) ---- */

static int load_secret(const struct ctx *c, struct report *rep, struct secret *ret)
{
	return rv_secret_load(c, rep, &ret->key, &ret->len);
}

/* ---- shared: the rendezvous directory (lib/rendezvous, collection "nodes") ---- */

/* The method's state, from open to close. */
struct shared {
	struct secret sec;
	struct rendezvous rv;           /* the nodes collection */
	const char *nodes;              /* its directory (target path) */
	int64_t written;                /* when this node's record was last written (own clock) */
	int64_t offset;                 /* cluster clock - own clock; 0 within the skew */
	/* write_self's last probe of the directory's clock: when (0: none), own clock then, offset */
	uint64_t probe_ms;
	int64_t probe_mine, probe_off;
	size_t expired, pruned;         /* expired: of the last pass (rejected: run->rejected) */
};

static int64_t lease_s(const struct spec *spec)
{
	int64_t s = (int64_t)(spec->discovery.lease_ms / 1000);

	return s > 0 ? s : 1;
}

/* The cluster clock: this node's, corrected by what the shared directory showed. */
static int64_t shared_now(const struct shared *sh)
{
	return disc_now() + sh->offset;
}

static bool suffix(const char *s, size_t n, const char *suf)
{
	size_t l = strlen(suf);

	return n >= l && memcmp(s + n - l, suf, l) == 0;
}

/* A file name of the directory (anyone's text) for a message: escaped, newlines too, malloc'd. */
static char *shown(const char *name)
{
	struct strbuf sb = STRBUF_INIT;

	esc_append(&sb, name, strlen(name), false);
	return sb_steal(&sb);
}

/* Prunings go to the step's report: they outlive the pass. */
static void prune(struct disc_run *run, const char *name, const char *why)
{
	struct shared *sh = run->priv;

	if (rv_remove(&sh->rv, run->rep, name) > 0) {
		char *n = shown(name);

		sh->pruned++;
		report_detail(run->rep, "record %s: %s; removed", n, why);
		free(n);
	}
}

/*
 * A FUSE client answers ENOTCONN once its daemon is gone, and ECONNABORTED to
 * a call that was in flight when it went (the kernel's fuse_abort_conn): a
 * stalled share's daemon killed, or blobfuse crashing, fails the call the run
 * was blocked in with the second (the fault campaign, seed 4801).
 */
bool disc_unreachable(int r)
{
	return r == -ENOTCONN || r == -ECONNABORTED || r == -EIO || r == -ETIMEDOUT || r == -EHOSTDOWN ||
	       r == -EHOSTUNREACH || r == -ENETUNREACH || r == -ECONNREFUSED || r == -ECONNRESET;
}

/*
 * The directory away (issue 37): its server stalled or gone (a FUSE or NFS client answers
 * ENOTCONN, ECONNABORTED, EIO, ETIMEDOUT), not this node sick.  The step still fails, so the steps that
 * need it are skipped and keep what they wrote: the hostfiles hold the last known members.
 * Tagged apart (DISC_UNREACHABLE_TAG): this node's record, written again when the share is
 * back, says degraded for it, not failed (node.c), so no peer drops a live node.
 */
static void unreachable_finding(struct disc_run *run, struct report *rep, const char *what, int r)
{
	report_finding(rep, ST_FAILED, "discovery.rendezvous.unreachable",
		       "rendezvous directory %s unreachable (%s: %s): an outage of the share, not of this "
		       "node; the hostfiles keep the last known members, and this node's record says "
		       "degraded, not failed, when the share is back (its peers keep it for the grace of "
		       "%" PRIu64 " s meanwhile)", run->c->spec->discovery.dir, what, strerror(-r),
		       disc_grace_ms(run->c->spec) / 1000);
}

/* One pass over the nodes directory, as the library's list callbacks see it. */
struct pass {
	struct disc_run *run;
	bool do_prune;
	int64_t now, lease, grace;
	uint64_t kept_ms;               /* > 0: the directory was away; past the lease is kept (held.c) */
	size_t valid, overdue;          /* records taken but those past lease + grace; of them, older
					 * than half the lease */
	struct peerset late;            /* past their lease: judged at the pass's end (settle_late) */
};

/* Names: <hostname>.rec of another node is read; a bad name is rejected unread. */
static bool want_record(void *arg, const char *name)
{
	struct pass *ps = arg;
	size_t nl = strlen(name);
	char host[256];

	if (!suffix(name, nl, ".rec"))
		return false;   /* not ours: left alone */
	if (nl - 4 >= sizeof(host)) {
		disc_reject(ps->run, "bad-name", "record %.64s...: file name too long; rejected", name);
		return false;
	}
	memcpy(host, name, nl - 4);
	host[nl - 4] = '\0';
	if (!record_hostname_valid(host)) {
		disc_reject(ps->run, "bad-name", "record %s: file name is not <hostname>.rec; rejected", name);
		return false;
	}
	/* this node: described by self, not by its old record */
	return strcmp(host, ps->run->self.hostname) != 0;
}

/* prep: parse and check the record where it was read; touches nothing shared. */
static void *parse_record(void *arg, const struct rv_entry *e)
{
	const struct pass *ps = arg;
	const struct shared *sh = ps->run->priv;
	size_t nl = strlen(e->name);
	char host[256];

	memcpy(host, e->name, nl - 4);  /* want_record took only <hostname>.rec */
	host[nl - 4] = '\0';
	return disc_parsed_new(ps->run->c->spec->cluster.name, e->value, e->len, sh->sec.key, sh->sec.len, host);
}

/* A fresh record (or one kept): admitted as a peer, or rejected saying why. */
static int take_peer(struct disc_run *run, struct peer *pp, const char *name)
{
	struct peer p = *pp;
	char err[640];
	const char *tag;

	tag = admit_record(&run->admit, &p, &run->notes, err, sizeof(err));
	if (tag) {
		disc_reject(run, tag, "record %s: %s; rejected", name, err);
		peer_clear(&p);
		return 0;
	}
	*peerset_add(&run->found) = p;
	return 0;
}

/* One record the library read and parsed (or refused): a peer, or a rejection saying why. */
static int take_record(void *arg, const struct rv_entry *e)
{
	struct pass *ps = arg;
	struct disc_run *run = ps->run;
	struct shared *sh = run->priv;
	struct disc_parsed *pr = e->prep;
	const char *name = e->name;
	struct peer p;
	int r;

	if (e->refused && strcmp(e->refused, "temp") == 0) {
		/* A writer's temp file; left behind only by a crash. */
		if (ps->do_prune && strstr(name, ".rec.hpcinit-tmp.") && ps->now - e->mtime > ps->lease)
			prune(run, name, "stale temporary file");
		return 0;
	}
	if (e->refused) {
		disc_reject(run, e->refused, "record %s: %s; rejected", name, e->why);
		return 0;
	}
	if (e->reowned) {
		char *n = shown(name);

		report_detail(run->rep, "record %s: owned by root (written before root was "
			      "squashed); re-owned to uid %u", n, (unsigned)sh->rv.tree.trusted);
		free(n);
	}
	r = disc_record_judge(run, pr->r, pr->err, name);
	p = pr->p;
	free(pr->err);
	free(pr);
	if (r < 0) {
		if (ps->do_prune && ps->now - e->mtime > ps->lease)
			prune(run, name, "rejected and not refreshed within the lease");
		return 0;
	}
	if (p.updated > ps->now + DISC_CLOCK_SKEW_S || e->mtime > ps->now + DISC_CLOCK_SKEW_S) {
		int64_t ahead = (p.updated > e->mtime ? p.updated : e->mtime) - ps->now;

		disc_reject(run, "future", "record %s: dated %" PRId64 " s in the future (more than the %d s of "
		       "clock skew allowed); rejected", name, ahead, DISC_CLOCK_SKEW_S);
		peer_clear(&p);
		return 0;
	}
	if (ps->now - p.updated <= ps->lease + ps->grace) {     /* older: gone long ago, not "at once" */
		ps->valid++;
		if ((ps->now - p.updated) * 2000 > (int64_t)run->c->spec->discovery.lease_ms)
			ps->overdue++;  /* not written for half the lease */
	}
	if (ps->now - p.updated > ps->lease && ps->kept_ms) {
		report_detail(run->rep, "record %s: past its lease by %" PRId64 " s, kept: the directory was "
			      "away, its node may not have written it since (%" PRIu64 " s of the grace left)",
			      name, ps->now - p.updated - ps->lease, (ps->kept_ms + 999) / 1000);
	} else if (ps->now - p.updated > ps->lease) {
		*peerset_add(&ps->late) = p;    /* a scale-in, or most nodes cut off: settle_late */
		return 0;
	}
	return take_peer(run, &p, name);
}

/*
 * The records past their lease, once the pass has read every record.  One
 * among fresh ones is a node that stopped writing (a crash, a VM deleted
 * without a leave): pruned, a scale-in.  Most records, two or more, overdue
 * at once (not written for half the lease, which a live node's never is: it
 * writes every third of the lease in the watch, every timer period else,
 * and the period is at most half the lease) is what this node sees when the
 * others cannot reach the directory and it can (a partition, their mounts
 * stalled): no node can tell that from a mass crash, so for the grace after
 * the last pass that found it so (held.c), a record past its lease is held
 * as it was last written, up to lease + grace old, while its node writes it
 * again.  A lone peer past its lease is a crash either way.
 */
static void settle_late(struct pass *ps)
{
	struct disc_run *run = ps->run;
	struct shared *sh = run->priv;
	int64_t grace = ps->grace;
	bool most = ps->overdue >= 2 && ps->overdue * 2 > ps->valid, held;

	if (most) {
		report_detail(run->rep, "%zu of %zu records not written for half the lease or more: most nodes "
			      "stopped at once (an outage of the share, or a partition between them and it), not "
			      "a scale-in; records past their lease are held for the grace of %" PRId64 " s",
			      ps->overdue, ps->valid, grace);
		disc_shared_most_overdue(run->c);
	}
	held = most || (ps->late.n && disc_shared_held_ms(run->c));
	for (size_t i = 0; i < ps->late.n; i++) {
		struct peer *p = &ps->late.v[i];
		char *name = xasprintf("%s.rec", p->hostname);
		int64_t past = ps->now - p->updated - ps->lease;

		if (held && past <= grace) {
			report_detail(run->rep, "record %s: past its lease by %" PRId64 " s, held: most records "
				      "stopped at once (%" PRId64 " s of the grace left for it)", name, past,
				      grace - past);
			(void)take_peer(run, p, name);
		} else {
			sh->expired++;
			if (ps->do_prune)
				prune(run, name, held ? "past its lease and the grace (scale-in)"
					       : "lease expired (scale-in)");
			peer_clear(p);
		}
		free(name);
	}
	free(ps->late.v);
	ps->late.v = NULL;
	ps->late.n = 0;
}

/*
 * One pass over the nodes directory: every fresh, trusted, well-formed
 * record becomes a peer; each rejected one gets a line saying why.  With
 * do_prune (apply), records past their lease are removed at the pass's end
 * (settle_late), unless most nodes stopped at once.
 */
static int read_records(struct disc_run *run, bool do_prune)
{
	struct shared *sh = run->priv;
	struct pass ps = { .run = run, .do_prune = do_prune, .now = shared_now(sh), .lease = lease_s(run->c->spec),
			   .grace = (int64_t)(disc_grace_ms(run->c->spec) / 1000), .kept_ms = disc_shared_kept_ms(run->c) };
	/*
	 * A run that may wait lists again every few seconds: a record whose
	 * file is unchanged is not read, parsed or checked again
	 * (lib/rendezvous/dirlist.c: a copy of its parse), for a sixth of the
	 * lease after it was read.  A waiting writer rewrites its record every
	 * third of the lease, so a record given from that cache is never older
	 * than half the lease for being cached (settle_late's "overdue").
	 * Within that sixth its file is not checked again (fstatat) while
	 * readdir gives it as a regular file under the inode number it was
	 * read from: every writer renames a new file into place, and what
	 * readdir cannot show (a change in place, a name replaced twice with
	 * its first inode's number used again) leaves the record as read, no
	 * older than the cache's bound above (recheck_ms = reuse_ms).
	 */
	struct rv_lister l = {
		.want = want_record, .prep = parse_record, .prep_free = disc_parsed_free,
		.thread_end = record_thread_end, .each = take_record, .arg = &ps,
		.reuse_ms = ctx_may_write(run->c) && !run->c->refresh ? run->c->spec->discovery.lease_ms / 6 : 0,
		.prep_copy = disc_parsed_copy,
	};
	int r;

	l.recheck_ms = l.reuse_ms;
	r = rv_list_prep(&sh->rv, run->rep, &l);
	if (r >= 0) {
		settle_late(&ps);
	} else {                        /* a pass cut short: its counts say nothing; prune nothing */
		for (size_t i = 0; i < ps.late.n; i++)
			peer_clear(&ps.late.v[i]);
		free(ps.late.v);
	}
	if (r < 0 && disc_unreachable(r))
		unreachable_finding(run, &run->notes, "listing", r);
	else if (r < 0)
		report_finding(&run->notes, ST_FAILED, "discovery.dir.unreadable",
			       "rendezvous directory %s: %s", sh->nodes, strerror(-r));
	return r;
}

/* Write this node's record, stamped now.  The lease refresh alone is not reported as a change. */
static int write_record(struct ctx *c, struct report *rep, struct rendezvous *rv,
			const struct secret *sec, struct peer *self, int64_t now)
{
	const char *cluster = c->spec->cluster.name;
	char *name = xasprintf("%s.rec", self->hostname);
	char *rel = xasprintf("%s%s", rv->where, name);
	char *text, *old = NULL, *oldnorm = NULL, *newnorm;
	int64_t updated = self->updated;
	struct report scratch;
	struct peer oldp;
	int r;

	self->updated = now;
	text = record_format(self, cluster, sec->key, sec->len);
	if (!text) {
		report_detail(rep, "%s: cannot compute the record HMAC", rel);
		free(rel);
		free(name);
		self->updated = updated;
		return -EIO;
	}
	/* Same record but for the time stamp?  Then it is only a lease refresh. */
	if (rv_get(rv, name, &old, NULL) == 0 &&
	    record_parse(old, strlen(old), cluster, NULL, 0, &oldp, NULL, 0) == 0) {
		struct peer tmp = *self;

		tmp.updated = oldp.updated;
		oldnorm = record_format(&oldp, cluster, NULL, 0);
		newnorm = record_format(&tmp, cluster, NULL, 0);
		if (strcmp(oldnorm, newnorm) != 0) {
			free(oldnorm);
			oldnorm = NULL;
		}
		free(newnorm);
		peer_clear(&oldp);
	}
	report_init(&scratch);
	r = rv_put(rv, oldnorm ? &scratch : rep, name, text, strlen(text));
	if (r < 0 && oldnorm)
		sb_append(&rep->details, sb_str(&scratch.details));
	report_free(&scratch);
	free(old);
	free(oldnorm);
	free(text);
	free(rel);
	free(name);
	return r;
}

/*
 * A probe of the directory's clock this process made moments ago still holds
 * (PROBE_REUSE_MS; the announce after the step, in the step's child, writes
 * the record again tens of milliseconds later): the offset it gave is the
 * offset now, unless this node's clock was stepped in between, which its
 * wall clock against the monotonic one shows (more than a second apart).
 * No new probe file then: one create and one unlink fewer on the share (an
 * NFS client's four or five calls to the server).
 */
static bool probe_fresh(const struct shared *sh, int64_t mine)
{
	uint64_t now = now_ms();
	int64_t mono_s, wall_s;

	if (!sh->probe_ms || now < sh->probe_ms || now - sh->probe_ms >= PROBE_REUSE_MS)
		return false;
	mono_s = (int64_t)((now - sh->probe_ms) / 1000);
	wall_s = mine - sh->probe_mine;
	return wall_s >= mono_s - 1 && wall_s <= mono_s + 1;
}

/*
 * Learn the cluster clock, then write this node's record stamped with it.
 * The clock comes first (a probe file's time, lib/rendezvous/dir.c): a
 * record stamped with a wrong clock, even for the moment before a second
 * write put it right, is one a peer reads as past its lease (and prunes)
 * or as dated in the future (and rejects); and this run's own reading of
 * the others' ages needs the offset even when that record is gone by then.
 * A clock off by more than the skew is a fault of this node: a finding.
 */
static int write_self(struct ctx *c, struct report *rep, struct shared *sh, struct peer *self)
{
	int64_t mine = disc_now(), dir_now, off;
	int r;

	if (probe_fresh(sh, mine)) {
		off = sh->probe_off;
	} else {
		r = rv_dir_now(&sh->rv, &dir_now);
		/*
		 * Found on real VMs (tests/vm): a compute that mounted the share the
		 * moment the head exported it got ESTALE on its first write, and the
		 * same write worked a few seconds later.  Retry a few times.
		 */
		for (int i = 0; r == -ESTALE && i < 5; i++) {
			report_detail(rep, "stale NFS file handle writing in %s; retrying in 1 s", sh->nodes);
			sleep(1);
			mine = disc_now();
			r = rv_dir_now(&sh->rv, &dir_now);
		}
		if (r < 0)
			return r;       /* this node could not write its record either */
		off = dir_now - mine;
		sh->probe_ms = now_ms();
		sh->probe_mine = mine;
		sh->probe_off = off;
	}
	sh->offset = off > DISC_CLOCK_SKEW_S || off < -DISC_CLOCK_SKEW_S ? off : 0;
	if (sh->offset)
		report_finding(rep, ST_DEGRADED, "discovery.clock.skew",
			       "this node's clock is %" PRId64 " s %s the shared directory's (file "
			       "times in %s, more than the %d s of skew allowed): records are stamped "
			       "and leases judged by the directory's clock; fix the time sync (chrony)",
			       off < 0 ? -off : off, off < 0 ? "ahead of" : "behind", sh->nodes,
			       DISC_CLOCK_SKEW_S);
	r = write_record(c, rep, &sh->rv, &sh->sec, self, mine + sh->offset);
	for (int i = 0; r == -ESTALE && i < 5; i++) {
		report_detail(rep, "stale NFS file handle writing this node's record; retrying in 1 s");
		sleep(1);
		r = write_record(c, rep, &sh->rv, &sh->sec, self, disc_now() + sh->offset);
	}
	if (r < 0)
		return r;
	sh->written = mine;
	disc_shared_written(c, rep);
	return 0;
}

/* ---- the method's hooks ---- */

/*
 * On a root_squash share only the head that exports it can make the tree
 * (root on a compute writes as the anonymous uid, in a directory root
 * owns), and it does so in its own discovery step, after its export is up:
 * a compute whose mount just succeeded can be early.  An NFS client may
 * also keep a "no such file" for a level the head made meanwhile (its
 * cached lookups live up to acdirmax).  So apply waits for the tree within
 * discovery.wait, as it waits for peers; refresh, check and plan look once.
 */
static bool tree_pending(const struct disc_run *run, int r)
{
	const struct ctx *c = run->c;

	return (r == -ENOENT || r == -EACCES) && ctx_may_write(c) && !c->refresh &&
	       now_ms() < run->start_ms + c->spec->discovery.wait_ms && ctx_remaining_ms(c) > 0;
}

/* One pause of that wait: doubling from 250 ms to WAIT_POLL_CAP_MS, never past the wait. */
static void tree_pause(struct disc_run *run, uint64_t *delay)
{
	struct ctx until = *run->c;
	uint64_t wait_end = run->start_ms + run->c->spec->discovery.wait_ms;

	if (until.deadline_ms > wait_end)
		until.deadline_ms = wait_end;
	(void)ctx_backoff(&until, delay, WAIT_POLL_CAP_MS);
	run->waited = true;
}

/* What the last attempt of the wait said, into the step's report. */
static void tree_absorb(struct report *rep, const struct report *tmp, int r, uint64_t since)
{
	for (size_t i = 0; i < tmp->changed.n; i++)
		report_changed(rep, tmp->changed.v[i]);
	report_raise(rep, tmp->status);
	if (r == 0)
		report_take_findings(rep, tmp);
	else if (tmp->details.len)
		report_detail(rep, "%s", sb_str(&tmp->details));
	report_detail(rep, "waited %" PRIu64 " ms for the rendezvous tree: %s", now_ms() - since,
		      r == 0 ? "there now" : "still refused at the end of discovery.wait");
}

/* Open the nodes collection again and, with publish, write this node's record: until it works. */
static int tree_wait(struct disc_run *run, struct shared *sh, bool publish, int r)
{
	uint64_t delay = 250, since = now_ms();
	struct report tmp;

	report_init(&tmp);
	while (tree_pending(run, r)) {
		tree_pause(run, &delay);
		report_free(&tmp);
		report_init(&tmp);
		rv_close(&sh->rv);
		r = disc_tree_open(run->c, &tmp, &run->self, &sh->rv);
		sh->nodes = sh->rv.tree.levels[2];
		if (r == 0 && publish)
			r = write_self(run->c, &tmp, sh, &run->self);
	}
	tree_absorb(run->rep, &tmp, r, since);
	report_free(&tmp);
	return r;
}


static int shared_open(struct disc_run *run)
{
	struct ctx *c = run->c;
	const struct spec *spec = c->spec;
	struct shared *sh = xcalloc(1, sizeof(*sh));
	int r;

	run->priv = sh;
	r = load_secret(c, run->rep, &sh->sec);
	if (r < 0) {
		report_set(run->rep, ST_FAILED, "cluster secret unusable");
		return r;
	}
	if (!spec->discovery.dir) {
		report_set(run->rep, ST_FAILED, "discovery.dir is required with method shared");
		return -EINVAL;
	}
	r = disc_tree_open(c, run->rep, &run->self, &sh->rv);
	sh->nodes = sh->rv.tree.levels[2];
	if (tree_pending(run, r))
		r = tree_wait(run, sh, false, r);
	if (r == -ENOENT && !ctx_may_write(c)) {
		report_set(run->rep, ST_CHANGED, "rendezvous directory %s missing", spec->discovery.dir);
		return 1;
	}
	if (r < 0 && disc_unreachable(r))
		unreachable_finding(run, run->rep, "open", r);
	if (r < 0 && r != -ENOMEDIUM)   /* -ENOMEDIUM: its finding names the mount that is not there */
		report_set(run->rep, ST_FAILED, "rendezvous directory %s %s", spec->discovery.dir,
			   disc_unreachable(r) ? "unreachable" : "refused");
	return r;
}

/* check/plan: is this node's record there, current and fresh? */
static void compare_self(struct disc_run *run)
{
	struct ctx *c = run->c;
	struct report *rep = run->rep;
	const struct spec *spec = c->spec;
	struct shared *sh = run->priv;
	char *name = xasprintf("%s.rec", run->self.hostname), *old = NULL;
	char *rel = xasprintf("%s%s", sh->rv.where, name);
	struct peer oldp;
	char *want, *have;

	if (rv_get(&sh->rv, name, &old, NULL) < 0) {
		report_changed(rep, rel);
		report_raise(rep, ST_CHANGED);
		report_detail(rep, "%s: missing; apply writes this node's record", rel);
	} else if (record_parse(old, strlen(old), spec->cluster.name, sh->sec.key, sh->sec.len,
				&oldp, NULL, 0) < 0) {
		report_changed(rep, rel);
		report_raise(rep, ST_CHANGED);
		report_detail(rep, "%s: unreadable or bad HMAC; apply rewrites it", rel);
	} else {
		struct peer tmp = run->self;

		tmp.updated = oldp.updated;
		node_state_like(&tmp, &oldp);
		want = record_format(&tmp, spec->cluster.name, NULL, 0);
		have = record_format(&oldp, spec->cluster.name, NULL, 0);
		if (strcmp(want, have) != 0) {
			report_changed(rep, rel);
			report_raise(rep, ST_CHANGED);
			if (c->mode == RUN_PLAN)
				text_diff(&rep->details, rel, have, want);
			else
				report_detail(rep, "%s: differs from this node's state", rel);
		} else if (shared_now(sh) - oldp.updated > lease_s(spec)) {
			report_raise(rep, ST_CHANGED);
			report_detail(rep, "%s: lease expired; peers have dropped this node", rel);
		}
		free(want);
		free(have);
		peer_clear(&oldp);
	}
	free(old);
	free(rel);
	free(name);
}

static int shared_publish(struct disc_run *run)
{
	struct shared *sh = run->priv;
	int r;

	if (!ctx_may_write(run->c)) {
		compare_self(run);
		return 0;
	}
	r = write_self(run->c, run->rep, sh, &run->self);
	if (tree_pending(run, r))
		r = tree_wait(run, sh, true, r);
	if (r < 0) {
		if ((r == -EACCES || r == -EPERM) && sh->rv.tree.trusted == 0)
			report_detail(run->rep, "%s is root's, and root cannot write there: does the share "
				      "squash root (root_squash is the NFS default)?  Then the tree must belong "
				      "to the uid root is squashed to: hpcinit on the head that exports the share "
				      "makes it so; for another server, chown -R 65534:65534 %s on it",
				      sh->nodes, sh->rv.tree.levels[0]);
		if (disc_unreachable(r))
			unreachable_finding(run, run->rep, "writing this node's record", r);
		report_set(run->rep, ST_FAILED, "cannot write this node's record in %s", sh->nodes);
		return r;
	}
	return 0;
}

/*
 * One read of the directory.  In apply, expired records are removed in the
 * same pass, so a refresh reads the directory once; while the step waits for
 * peers, this node's own lease is kept fresh.
 */
static int shared_list(struct disc_run *run)
{
	struct ctx *c = run->c;
	const struct spec *spec = c->spec;
	struct shared *sh = run->priv;
	bool was_ready = run->ready;
	int r;

	if (run->waited && disc_now() - sh->written > lease_s(spec) / 3) {
		struct report scratch;

		report_init(&scratch);
		(void)write_self(c, &scratch, sh, &run->self);
		report_free(&scratch);
	}
	disc_rejects_reset(run);
	sh->expired = 0;
	r = read_records(run, ctx_may_write(c));
	/*
	 * A record read in this pass says the cluster formed, and this node had
	 * not seen that before: its writer formed on records that may have
	 * arrived after this pass listed the directory (a directory is not
	 * listed at one instant; many nodes start at once).  One more pass,
	 * listed after that mark was read, holds them.
	 */
	if (r >= 0 && !was_ready && disc_expect_met(run) && run->ready &&
	    run->found.n + 1 < (size_t)spec->discovery.expect) {
		disc_run_reset(run);
		disc_rejects_reset(run);
		sh->expired = 0;
		r = read_records(run, ctx_may_write(c));
	}
	if (r < 0) {
		disc_notes_commit(run);
		report_set(run->rep, ST_FAILED, "cannot read %s", sh->nodes);
		return r;
	}
	/* Formed (here or by a member): fewer nodes now means nodes left, not "wait". */
	return disc_expect_met(run);
}

static int shared_finish(struct disc_run *run, const struct peerset *set)
{
	struct ctx *c = run->c;
	struct report *rep = run->rep;
	const struct spec *spec = c->spec;
	struct shared *sh = run->priv;

	disc_rejects_log(run);
	if (run->waited) {
		struct rv_list_stats st;

		rv_dir_list_stats(&sh->rv, &st);
		report_detail(rep, "waiting: %zu lists of %s, %zu of them over the directory unchanged (one stat "
			      "of it), %zu records taken from an earlier list's read", st.passes, sh->nodes,
			      st.quiet, st.reused);
	}
	if (set->n >= spec->discovery.expect) {
		report_set(rep, ST_OK, "%zu node%s known (expect %u)%s%s", set->n,
			   set->n == 1 ? "" : "s", spec->discovery.expect,
			   run->waited ? " after waiting" : "",
			   run->rejected ? "; records rejected, see details" : "");
	} else if (run->ready || !ctx_may_write(c)) {
		report_detail(rep, "%zu nodes known, fewer than expect %u%s%s%s", set->n,
			      spec->discovery.expect, run->ready ? " (" : "",
			      run->ready ? run->ready_why : "", run->ready ? ")" : "");
		report_set(rep, ST_OK, "%zu node%s known (expect %u)%s", set->n, set->n == 1 ? "" : "s",
			   spec->discovery.expect,
			   run->rejected ? "; records rejected, see details" : "");
	} else if (c->refresh) {
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes in %s, and none says the "
			   "cluster has formed (a refresh does not wait for them)", set->n,
			   spec->discovery.expect, sh->nodes);
	} else {
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes after waiting %" PRIu64
			   " s for peers in %s", set->n, spec->discovery.expect,
			   spec->discovery.wait_ms / 1000, sh->nodes);
	}
	return 0;
}

/* hpcinit leave: remove this node's record; peers drop it on their next read. */
static int shared_leave(struct disc_run *run)
{
	struct shared *sh = run->priv;
	char *name = xasprintf("%s.rec", run->self.hostname);
	char *rel = xasprintf("%s%s", sh->rv.where, name);
	int r = rv_remove(&sh->rv, run->rep, name);

	if (r < 0)
		report_set(run->rep, ST_FAILED, "cannot remove %s: %s", rel, strerror(-r));
	else if (r > 0)
		report_set(run->rep, ST_CHANGED, "%s removed", rel);
	else
		report_set(run->rep, ST_OK, "%s: no record to remove", rel);
	free(rel);
	free(name);
	return r < 0 ? r : 0;
}

static void shared_close(struct disc_run *run)
{
	struct shared *sh = run->priv;

	disc_rejects_reset(run);        /* the run's, also when its session was kept (shared_keep) */
	if (!sh)
		return;
	secret_free(&sh->sec);
	rv_close(&sh->rv);
	free(sh);
	run->priv = NULL;
}

/*
 * The step's child stays for the announce: keep the open tree, the secret
 * and the clock's probe for its one publish (no second open, key read or
 * probe file).  Only a session that wrote this node's record (so its tree
 * opened): else the announce opens.
 */
static bool shared_keep(struct disc_run *run)
{
	const struct shared *sh = run->priv;

	return sh && sh->written;
}

const struct disc_method_ops disc_method_shared = {
	.name = "shared",
	.id = DISC_SHARED,
	/*
	 * Nodes of a scale set start within a fraction of a second of each
	 * other: a short first poll, doubling up to WAIT_POLL_CAP_MS, finds
	 * them without a fixed 250 ms wait, and a long wait still costs one
	 * directory read every 5 s.
	 */
	.first_poll_ms = 50,
	.open = shared_open,
	.publish = shared_publish,
	.list = shared_list,
	.collect = disc_nop,
	.finish = shared_finish,
	.leave = shared_leave,
	.close = shared_close,
	.keep = shared_keep,
};

int disc_secret_load(const struct ctx *c, struct report *rep, char **key, size_t *len)
{
	struct secret s = { NULL, 0 };
	int r = load_secret(c, rep, &s);

	*key = s.key;
	*len = s.len;
	return r;
}
