/* SPDX-License-Identifier: MIT */
/*
 * What a vanished or stale record means (modules/discovery/held.c, and
 * shared.c's settle_late), on a fake root: an outage is not a mass leave
 * (issue 37).  Method shared: a directory that was away keeps records past
 * their lease for the grace; most records overdue at once (a partition
 * between the other nodes and the share) are held for the grace, a lone one
 * past its lease is pruned.  Method etcd: a vanished record is held for the
 * grace, one with its tombstone goes at once.
 */
#include "testdisc.h"

/*
 * A detail naming N seconds past a record's lease, planted N s past it: N or N + 1, as a
 * second may begin between the plant and the run's clock (valgrind makes that likely).
 */
static bool detail_past(const struct report *rep, const char *pre, int n, const char *post)
{
	char a[256], b[256];

	snprintf(a, sizeof(a), "%s%d s%s", pre, n, post);
	snprintf(b, sizeof(b), "%s%d s%s", pre, n + 1, post);
	return detail(rep, a) || detail(rep, b);
}

/* An outage is not a mass leave (issue 37; held.c). */
static void put_ms(const char *rel, uint64_t ms)
{
	char *text = xasprintf("%" PRIu64 "\n", ms);

	put(rel, text, 0644);
	free(text);
}

/* shared: a directory that was away keeps the records past their lease for the grace. */
static void test_outage_shared(struct ctx *c, struct spec *spec)
{
	struct report rep;
	int64_t past = (int64_t)(spec->discovery.lease_ms / 1000) + 30;

	/* this node wrote its record a moment ago: a record past its lease goes, as before */
	TEST_INTEQ(run(c, &rep), 0);
	report_free(&rep);
	plant("crashed", "10.0.0.31", past, KEY);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(!has_peer(c, "crashed"));
	TEST_CHECK(!exists(NODES "/crashed.rec"));
	report_free(&rep);
	/* its last write a lease ago: the directory was away, nobody could write; kept */
	plant("stalled", "10.0.0.32", past, KEY);
	put_ms("/run/hpcinit/shared-written", now_ms() - spec->discovery.lease_ms);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "stalled"));
	TEST_CHECK(exists(NODES "/stalled.rec"));
	TEST_CHECK(detail(&rep, "the directory was away; records past their lease are kept for the grace"));
	TEST_CHECK(detail_past(&rep, "record stalled.rec: past its lease by ", 30, ", kept: the directory was away"));
	report_free(&rep);
	/* still within the grace: kept by the next run too */
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "stalled"));
	report_free(&rep);
	/* the grace over and the record not written again: gone */
	put_ms("/run/hpcinit/shared-back", now_ms() - disc_grace_ms(spec) - 1);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(!has_peer(c, "stalled"));
	TEST_CHECK(!exists(NODES "/stalled.rec"));
	report_free(&rep);
}

/*
 * shared, the other side: this node reaches the directory, most of its
 * peers do not (a partition).  Their records pass the lease together: held
 * for the grace, not pruned as a scale-in; one among fresh ones still goes.
 */
static void test_partition_shared(struct ctx *c, struct spec *spec)
{
	struct report rep;
	int64_t lease = (int64_t)(spec->discovery.lease_ms / 1000), grace = (int64_t)(disc_grace_ms(spec) / 1000);
	const char *cut[] = { "cut1", "cut2", "cut3", "cut4" };
	char addr[32];

	TEST_CHECK(!exists("/run/hpcinit/shared-held"));
	/* node2 and node10 fresh; four past their lease (a partition began a lease ago) */
	plant("node2", "10.0.0.2", 0, KEY);
	plant("node10", "10.0.0.10", 0, KEY);
	for (size_t i = 0; i < 4; i++) {
		snprintf(addr, sizeof(addr), "10.0.0.%zu", 41 + i);
		plant(cut[i], addr, lease + 1 + (int64_t)i, KEY);
	}
	/* check mode: held in the list, nothing marked, nothing removed */
	c->mode = RUN_CHECK;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "cut1") && has_peer(c, "cut4"));
	TEST_CHECK(!exists("/run/hpcinit/shared-held"));
	report_free(&rep);
	c->mode = RUN_APPLY;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(detail(&rep, "4 of 6 records not written for half the lease or more: most nodes stopped at once"));
	TEST_CHECK(detail_past(&rep, "record cut1.rec: past its lease by ", 1, ", held: most records stopped at once"));
	TEST_CHECK(has_peer(c, "cut1") && has_peer(c, "cut2") && has_peer(c, "cut3") && has_peer(c, "cut4"));
	TEST_CHECK(has_peer(c, "node2") && has_peer(c, "node10"));
	for (size_t i = 0; i < 4; i++) {
		char *rel = xasprintf(NODES "/%s.rec", cut[i]);

		TEST_CHECK(exists(rel));
		free(rel);
	}
	TEST_CHECK(exists("/run/hpcinit/shared-held"));
	report_free(&rep);
	/* the partition heals: three write again; the fourth, not yet back, is still held (the mark) */
	for (size_t i = 0; i < 3; i++) {
		snprintf(addr, sizeof(addr), "10.0.0.%zu", 41 + i);
		plant(cut[i], addr, 0, KEY);
	}
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(!detail(&rep, "records not written for half the lease or more"));
	TEST_CHECK(has_peer(c, "cut4") && exists(NODES "/cut4.rec"));
	report_free(&rep);
	/* held no longer than lease + grace from its last write: then a scale-in */
	plant("cut4", "10.0.0.44", lease + grace + 1, KEY);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(detail(&rep, "record cut4.rec: past its lease and the grace (scale-in); removed"));
	TEST_CHECK(!has_peer(c, "cut4") && !exists(NODES "/cut4.rec"));
	report_free(&rep);
	/* records long gone (past lease + grace: an old deployment's) are not "most stopped at once" */
	put_ms("/run/hpcinit/shared-held", now_ms() - disc_grace_ms(spec) - 1);
	for (int i = 1; i <= 6; i++) {          /* more than the 5 fresh ones */
		char name[16];

		snprintf(name, sizeof(name), "old%d", i);
		snprintf(addr, sizeof(addr), "10.0.0.%d", 50 + i);
		plant(name, addr, lease + grace + 60, KEY);
	}
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(!detail(&rep, "records not written for half the lease or more"));
	TEST_CHECK(detail(&rep, "record old1.rec: lease expired (scale-in); removed"));
	TEST_CHECK(!exists(NODES "/old6.rec"));
	TEST_CHECK(!exists("/run/hpcinit/shared-held") || !disc_shared_held_ms(c));
	report_free(&rep);
	/* the mark's grace over: one past its lease among fresh ones is pruned at once */
	put_ms("/run/hpcinit/shared-held", now_ms() - disc_grace_ms(spec) - 1);
	plant("cut4", "10.0.0.44", lease + 1, KEY);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(detail(&rep, "record cut4.rec: lease expired (scale-in); removed"));
	TEST_CHECK(!has_peer(c, "cut4"));
	report_free(&rep);
	for (size_t i = 0; i < 3; i++)
		unplant(cut[i]);
	unplant("node2");
	unplant("node10");
}

static void frame(struct strbuf *sb, const char *key, const char *boot)
{
	char *v = xasprintf("# record\nboot_id: %s\n...\n", boot);

	sb_printf(sb, "kv %zu %zu 0\n%s%s\n", strlen(key), strlen(v), key, v);
	free(v);
}

static bool tombstone_of(void *arg, const char *key, const char *boot)
{
	(void)key;
	return strcmp(boot, arg) == 0;
}

/* etcd: a vanished record is held for the grace, one with its tombstone goes at once. */
static void test_held_merge(struct ctx *c, struct spec *spec)
{
	struct report rep;
	struct disc_run run = { .c = c, .rep = &rep };
	struct strbuf prev = STRBUF_INIT, now = STRBUF_INIT;
	char *text, tomb[] = "B";
	size_t len;

	frame(&prev, "/p/node1", "self");
	frame(&prev, "/p/a", "A");
	frame(&prev, "/p/b", "B");
	frame(&prev, "/p/c", "C");
	frame(&now, "/p/node1", "self");
	frame(&now, "/p/a", "A");
	report_init(&rep);
	text = xstrdup(sb_str(&now));
	len = now.len;
	disc_held_merge(&run, sb_str(&prev), prev.len, &text, &len, "/p/node1", tombstone_of, tomb);
	TEST_CHECK(strstr(text, "/p/a") && strstr(text, "/p/c") && !strstr(text, "/p/b"));
	TEST_CHECK(detail(&rep, "/p/b: gone, with its tombstone (a graceful leave)"));
	TEST_CHECK(detail(&rep, "/p/c: its record vanished 0 ms ago without a leave"));
	TEST_CHECK(exists("/run/hpcinit/etcd-held"));
	TEST_CHECK(discovery_held_until(c) > now_ms());
	report_free(&rep);
	free(text);
	/* the grace over: dropped, and nothing held any more */
	{
		char *line = xasprintf("%" PRIu64 " /p/c\n", now_ms() - disc_grace_ms(spec) - 1);

		put("/run/hpcinit/etcd-held", line, 0600);
		free(line);
	}
	report_init(&rep);
	text = xstrdup(sb_str(&now));
	len = now.len;
	disc_held_merge(&run, sb_str(&prev), prev.len, &text, &len, "/p/node1", tombstone_of, tomb);
	TEST_CHECK(!strstr(text, "/p/c"));
	TEST_CHECK(detail(&rep, "/p/c: its record stayed away for the grace"));
	TEST_CHECK(!exists("/run/hpcinit/etcd-held"));
	TEST_INTEQ(discovery_held_until(c), 0);
	report_free(&rep);
	free(text);
	sb_free(&prev);
	sb_free(&now);
}

int main(void)
{
	struct spec spec = { 0 };
	struct outputs out = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY, .hostname = "node1", .out = &out };
	struct report rep;

	disc_test_setup(&c, &spec);
	/* this node's record, written a moment ago */
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_CHECK(exists(NODES "/node1.rec"));
	report_free(&rep);

	test_outage_shared(&c, &spec);
	test_partition_shared(&c, &spec);
	test_held_merge(&c, &spec);

	out.peers = peerset_free(out.peers);
	test_rm_rf(root);
	TEST_EXIT();
}
