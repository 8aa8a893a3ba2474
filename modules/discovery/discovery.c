/* SPDX-License-Identifier: MIT */
/*
 * discovery: learn the cluster (docs/conventions.md "Peers").  Every method ends with
 * the typed output peers (c->out->peers, OUT_PEERS) = every known node, this
 * one included and flagged self, so ssh, hostfile and mpi work the same
 * whichever method found them.
 *
 * The step describes this node (node.c), lets the method publish it, then
 * lists the membership until discovery.expect nodes are known or
 * discovery.wait runs out -- that loop lives here, once, for every method.
 *
 * expect is a formation target for a new cluster, not a gate for a running
 * one: a refresh (and the watch's) looks once; a node that has seen expect
 * reached in this boot, or whose admitted peers' records say "formed: true",
 * does not wait either, and publishes "formed: true" itself, so the mark
 * outlives every single member of a cluster that scales 0 -> N -> 1.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "discovery.h"
#include "fsutil.h"
#include "log.h"
#include "number.h"

#define LIST_PEERS_MAX 32               /* details name the nodes up to this many */

/* The methods, by discovery.method.  A new one (etcd) is one file and one line here. */
static const struct disc_method_ops *const disc_methods[] = {
	&disc_method_shared,
	&disc_method_static,
	&disc_method_scan,
	&disc_method_etcd,
	NULL,
};

static const struct disc_method_ops *method_of(const struct spec *s)
{
	for (size_t i = 0; disc_methods[i]; i++)
		if (disc_methods[i]->id == s->discovery.method)
			return disc_methods[i];
	return NULL;
}

static bool disc_enabled(const struct spec *s)
{
	return s->discovery.present;
}

static uint64_t disc_timeout(const struct spec *s)
{
	/* The wait for peers, plus time for the work around it. */
	return s->discovery.wait_ms + 60000;
}

/*
 * Two records claiming one address: a VM that left and a new one that got
 * its address.  Keep this node, else the newer record; the older one
 * expires on its own.
 */
static int addr_order(const void *x, const void *y)
{
	const struct peer *const *a = x, *const *b = y;

	return strcmp((*a)->addr, (*b)->addr) ?: disc_self_first(*a, *b) ?:
		((*a)->updated > (*b)->updated ? -1 : (*a)->updated < (*b)->updated);
}

static const char *addr_of(const struct peer *p)
{
	return p->addr;
}

void drop_duplicate_addrs(struct peerset *s, struct report *notes)
{
	struct peer **idx, *keep;

	if (s->n < 2 || !disc_any_equal(s, addr_of, false))
		return;
	idx = disc_sorted_index(s, addr_order);
	keep = idx[0];
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(idx[i]->addr, keep->addr) != 0) {
			keep = idx[i];
			continue;
		}
		report_finding(notes, ST_OK, "discovery.address.claimed-twice",
			       "address %s is claimed by %s and %s; keeping %s", keep->addr,
			       keep->hostname, idx[i]->hostname, keep->hostname);
		peer_clear(idx[i]);     /* hostname NULL marks it dropped */
	}
	free(idx);
	disc_compact(s);
}

#define READY_MARK "/run/hpcinit/discovery-ready"

bool disc_ready_before(const struct ctx *c)
{
	char *text = NULL, *want = xasprintf("%s\n", c->spec->cluster.name);
	bool ok = fs_read(c, READY_MARK, &text, NULL) == 0 && strcmp(text, want) == 0;

	free(text);
	free(want);
	return ok;
}

void disc_mark_ready(struct ctx *c)
{
	struct report scratch;
	char *text = xasprintf("%s\n", c->spec->cluster.name);

	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(c, &scratch, READY_MARK, text, strlen(text), 0644, 0, 0);
	report_free(&scratch);
	free(text);
}

/*
 * hpcinit leave marks this boot's /run: a refresh (the timer's, the
 * watch's, a lease found gone) must not publish the record again behind
 * the admin's back.  "hpcinit apply" with discovery forgets the mark
 * (leave_forget) and joins again; so does a reboot.
 */
#define LEFT_MARK "/run/hpcinit/left"

/* true when this node left the spec's cluster in this boot; *when: the time it left (UTC) */
static bool disc_left(const struct ctx *c, char *when, size_t size)
{
	char *text = NULL;
	size_t cl = strlen(c->spec->cluster.name);
	bool left = false;

	if (fs_read(c, LEFT_MARK, &text, NULL) == 0 && strncmp(text, c->spec->cluster.name, cl) == 0 &&
	    text[cl] == '\n') {
		long long secs = -1;
		time_t t;
		struct tm tm;

		left = true;
		(void)num_ll_prefix(text + cl + 1, 0, INT32_MAX * 64LL, &secs, NULL);
		t = (time_t)secs;
		if (secs < 0 || !gmtime_r(&t, &tm) || !strftime(when, size, "%Y-%m-%d %H:%M:%S UTC", &tm))
			snprintf(when, size, "an unknown time");
	}
	free(text);
	return left;
}

static void disc_mark_left(struct ctx *c)
{
	struct report scratch;
	char *text = xasprintf("%s\n%lld\n", c->spec->cluster.name, (long long)time(NULL));

	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(c, &scratch, LEFT_MARK, text, strlen(text), 0644, 0, 0);
	report_free(&scratch);
	free(text);
}

/* "hpcinit apply" (not refresh, not the watch's) forgets the mark: this node joins again. */
static void leave_forget(struct ctx *c)
{
	struct report scratch;

	if (!fs_exists(c, LEFT_MARK))
		return;
	report_init(&scratch);
	(void)fs_remove(c, &scratch, LEFT_MARK);
	report_free(&scratch);
}

/* Sort s (head first, natural order) and name its nodes in the report. */
static void list_peers(struct report *rep, struct peerset *s, bool all)
{
	peerset_sort(s);
	if (s->n > LIST_PEERS_MAX && !all) {
		report_detail(rep, "%zu nodes (listed with -v)", s->n);
		return;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct peer *p = &s->v[i];

		report_detail(rep, "node %s %s%s%s slots=%u host_keys=%zu%s%s", p->hostname, p->addr,
			      p->ipoib_addr ? " ipoib=" : "", p->ipoib_addr ? p->ipoib_addr : "",
			      p->slots, p->host_keys.n, p->head ? " head" : "", p->self ? " (self)" : "");
	}
}

/*
 * List until the method says expect is met (disc_expect_met), or
 * discovery.wait (counted from the step's start: a method may wait while it
 * publishes) or the step's deadline runs out; check, plan and refresh look
 * once.  When the time is up
 * during a pause, one last list gives the freshest view at the deadline.
 */
static int wait_for_peers(const struct disc_method_ops *m, struct disc_run *run)
{
	struct ctx *c = run->c;
	uint64_t wait_end = run->start_ms + c->spec->discovery.wait_ms, delay = m->first_poll_ms;

	for (;;) {
		struct ctx until = *c;
		int r;

		disc_run_reset(run);
		r = m->list(run);
		if (r != 0)
			return r < 0 ? r : 0;
		if (!ctx_may_write(c) || c->refresh || now_ms() >= wait_end || ctx_remaining_ms(c) == 0)
			return 0;
		run->waited = true;
		if (run->listen_again) {
			run->listen_again = false;
			continue;
		}
		if (until.deadline_ms > wait_end)
			until.deadline_ms = wait_end;
		(void)ctx_backoff(&until, &delay, WAIT_POLL_CAP_MS);
	}
}

/*
 * What the step's method opened, kept for the announce in the same child
 * (runner.c: the child stays after the step when the run records itself):
 * etcd's helper session, its connection and lease, so the announce starts
 * no second helper.  The process's end closes it when no announce comes.
 */
static struct {
	const struct disc_method_ops *m;
	void *priv;
	struct peer self;               /* the step's facts: addresses and boot id (node_facts_known) */
} kept;

static int disc_run(struct ctx *c, struct report *rep)
{
	const struct disc_method_ops *m = method_of(c->spec);
	struct disc_run run = { .c = c, .rep = rep, .start_ms = now_ms() };
	struct peer facts = { 0 };      /* this node's addresses and boot id, for the announce */
	struct peerset *set;
	char when[64];
	bool marked, left = false;
	int r;

	report_init(&run.notes);
	r = node_facts(c, rep, &run.self);
	if (r < 0) {
		report_set(rep, ST_FAILED, "cannot describe this node");
		goto out;
	}
	facts.addr = xstrdup(run.self.addr);
	facts.ipoib_addr = run.self.ipoib_addr ? xstrdup(run.self.ipoib_addr) : NULL;
	facts.boot_id = run.self.boot_id ? xstrdup(run.self.boot_id) : NULL;
	/* A node alone is its own cluster: formed from the start. */
	marked = disc_ready_before(c);
	run.ready = marked || c->spec->discovery.expect <= 1;
	snprintf(run.ready_why, sizeof(run.ready_why), "reached earlier in this boot: nodes have left");
	run.self.formed = run.ready;
	admit_init(&run.admit, c, &run.self);
	run.admit.check_names = !(m && m->names_from_spec);
	if (!m) {
		report_set(rep, ST_FAILED, "discovery.method %d has no implementation",
			   (int)c->spec->discovery.method);
		r = -EINVAL;
		goto out;
	}
	if (ctx_may_write(c) && c->command && strcmp(c->command, "apply") == 0)
		leave_forget(c);
	r = m->open(&run);
	if (r == 0 && (left = disc_left(c, when, sizeof(when))))
		report_detail(rep, "this node left cluster %s at %s (hpcinit leave): its record is not "
			      "published again until \"hpcinit apply\" (or a reboot); the peers are still "
			      "listed", c->spec->cluster.name, when);
	else if (r == 0)
		r = m->publish(&run);
	if (r == 0)
		r = wait_for_peers(m, &run);
	if (r == 0)
		r = m->collect(&run);
	if (r < 0)
		goto out;
	admit_found(&run);
	if (r == 0)
		(void)disc_expect_met(&run);
	if (r == 0 && !run.ready && run.found.n + 1 >= c->spec->discovery.expect)
		run.ready = true;
	if (r == 0 && run.ready && !marked && ctx_may_write(c)) {
		/*
		 * Formed now: remember it for this boot, and tell the next node to
		 * join.  Where the run ends with the announce of this node's state
		 * (its first apply of the boot), that put says it (disc_announce
		 * reads the mark): one change of the record fewer for every
		 * watcher and every waiting node to read, at a cold start.
		 */
		disc_mark_ready(c);
		if (!run.self.formed && !left) {
			run.self.formed = true;
			if (!c->announce_follows) {
				struct report *keep = run.rep, scratch;

				report_init(&scratch);
				run.rep = &scratch;
				if (m->publish(&run) < 0)
					report_detail(keep, "this node's record does not say the cluster formed "
						      "yet (the next refresh writes it)");
				run.rep = keep;
				report_free(&scratch);
			}
		}
	}

	/* This node first, then what the method found (nothing when open said so). */
	set = xcalloc(1, sizeof(*set));
	*peerset_add(set) = run.self;
	memset(&run.self, 0, sizeof(run.self));
	for (size_t i = 0; r == 0 && i < run.found.n; i++)
		*peerset_add(set) = run.found.v[i];
	run.found.n = 0;
	drop_contested_names(set, &run.notes);
	drop_duplicate_addrs(set, &run.notes);
	disc_notes_commit(&run);
	if (r == 0)
		(void)m->finish(&run, set);
	list_peers(rep, set, c->verbose > 0);
	peerset_free(c->out->peers);
	c->out->peers = set;
	r = 0;
out:
	if (m && r == 0 && c->step_stays && rep->status != ST_FAILED && m->keep && m->keep(&run)) {
		kept.m = m;
		kept.priv = run.priv;
		run.priv = NULL;
		peer_clear(&kept.self);
		kept.self = facts;
		memset(&facts, 0, sizeof(facts));
	}
	peer_clear(&facts);
	if (m)
		m->close(&run);
	disc_run_reset(&run);
	report_free(&run.notes);
	peer_clear(&run.self);
	admit_free(&run.admit);
	return r;
}

/* hpcinit leave: this node's facts, then the method takes it out. */
int discovery_leave(struct ctx *c, struct report *rep)
{
	const struct disc_method_ops *m = method_of(c->spec);
	struct disc_run run = { .c = c, .rep = rep, .start_ms = now_ms() };
	int r;

	report_init(&run.notes);
	r = node_facts(c, rep, &run.self);
	if (r < 0) {
		report_set(rep, ST_FAILED, "cannot describe this node");
	} else if (m) {
		r = m->open(&run);
		if (r >= 0)
			r = m->leave(&run);
		if (r >= 0 && rep->status != ST_FAILED && ctx_may_write(c))
			disc_mark_left(c);
		m->close(&run);
	}
	report_free(&run.notes);
	peer_clear(&run.self);
	return r;
}

/*
 * The node's state changed (the runner's announce, after a run that wrote
 * the status): put this node's record again with it, through the method's
 * publish, looking once and listing nothing (etcd: one sync, which puts only
 * a record that differs; in the watch, nothing when the stream holds it),
 * after an apply and after a recorded check alike.  Nothing for a node that
 * left, or a method without records.
 */
static int disc_announce(struct ctx *c, struct report *rep)
{
	const struct disc_method_ops *m = method_of(c->spec);
	/* a recorded check announces too: putting this node's record is the one write it makes here */
	struct ctx w = *c;
	struct disc_run run = { .c = &w, .rep = rep, .start_ms = now_ms(), .announce = true };
	bool same_child = kept.priv && kept.m == m;
	char when[64];
	int r;

	w.mode = RUN_APPLY;
	w.refresh = true;               /* look once: no wait for the tree or for peers */
	if (!m || m->names_from_spec || c->mode == RUN_PLAN || disc_left(&w, when, sizeof(when)))
		return 0;
	report_init(&run.notes);
	/*
	 * In the step's child, moments after the step: its session, and its
	 * addresses and boot id (no second listing of the interfaces); the host
	 * and user keys are read again (the ssh step may have made them since).
	 */
	r = node_facts_known(&w, rep, &run.self, same_child ? &kept.self : NULL);
	run.self.formed = disc_ready_before(&w) || c->spec->discovery.expect <= 1;
	if (r >= 0 && same_child) {
		run.priv = kept.priv;   /* the step's session, in this same child */
		kept.priv = NULL;
	} else if (r >= 0) {
		r = m->open(&run);
	}
	peer_clear(&kept.self);
	if (r == 0)
		r = m->publish(&run);
	if (r >= 0 && rep->status != ST_FAILED)
		report_set(rep, rep->status, "this node's record says %s%s%s", peer_state_name(run.self.state),
			   run.self.reason ? ": " : "", run.self.reason ? run.self.reason : "");
	m->close(&run);
	report_free(&run.notes);
	peer_clear(&run.self);
	return r < 0 ? r : 0;
}

static int disc_check(struct ctx *c, struct report *rep)
{
	return disc_run(c, rep);
}

static int disc_apply(struct ctx *c, struct report *rep)
{
	return disc_run(c, rep);
}

const struct module discovery_module = {
	.name = "discovery",
	.enabled = disc_enabled,
	.needs = NULL,
	.timeout_ms = disc_timeout,
	.check = disc_check,
	.apply = disc_apply,
	.outputs = OUT_PEERS,
	.inputs = OUT_GPU,      /* the slots of mpi.slots_per_gpu: the usable GPUs (lib/slots, node.c) */
	.isolate = true,        /* the shared directory, scans: a dead server must not hang the run */
	.leave = discovery_leave,       /* the runner's last leave, isolated (runner_leave) */
	.announce = disc_announce,      /* the node's state changed: its record says so */
	.wake_at = discovery_held_until,        /* a record held since it vanished: its grace's end */
};
