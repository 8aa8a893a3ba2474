/* SPDX-License-Identifier: MIT */
/*
 * The ssh step's known_hosts (modules/ssh/known_hosts.c): host names and
 * addresses, this node from /etc/ssh, rendering and parsing back, the
 * host-key change rule, pruning, hand edits, check's vocabulary.
 */
#include "testssh.h"

static void test_names(void)
{
	/* the one host-name rule (a peer record's): nothing that widens a Host line */
	TEST_CHECK(record_hostname_valid("hps-1"));
	TEST_CHECK(record_hostname_valid("node1.cluster.example"));
	TEST_CHECK(!record_hostname_valid("*"));
	TEST_CHECK(!record_hostname_valid("a,b"));
	TEST_CHECK(!record_hostname_valid("a b"));
	TEST_CHECK(!record_hostname_valid("!bad"));
	TEST_CHECK(!record_hostname_valid("-x"));
	TEST_CHECK(!record_hostname_valid(""));
	TEST_CHECK(!record_hostname_valid(NULL));
	TEST_CHECK(valid_addr("198.18.3.1"));
	TEST_CHECK(valid_addr("fd00::1"));
	TEST_CHECK(!valid_addr("198.18.3.*"));
	TEST_CHECK(!valid_addr(NULL));
}

/*
 * Names the ssh step's own rule (valid_hostname, gone) let into known_hosts
 * and the Host line while the loader's and a record's rule refuse them: a
 * label ending in '-', an empty label, a label over 63 bytes.  Each peer is
 * left out with ssh.peer.bad-hostname; this node stays.
 */
static void test_bad_names(struct spec *s)
{
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY };
	char long_label[80];
	const char *bad[] = { "hps-", "hps..sim", "hps.-x", "hps.sim.", long_label };
	size_t nbad = sizeof(bad) / sizeof(bad[0]);
	struct peerset ps = { 0 };
	struct khosts old = { 0 }, want = { 0 };
	struct ssh_tally t = { 0 };
	struct report r;
	size_t n = 0;

	memset(long_label, 'a', 64);
	long_label[64] = '\0';
	ps.v = xcalloc(nbad + 1, sizeof(*ps.v));
	ps.n = nbad + 1;
	peer_init(&ps.v[0], "hps-1", "198.18.3.11", "b1", NULL);
	ps.v[0].self = true;
	for (size_t i = 0; i < nbad; i++)
		peer_init(&ps.v[i + 1], bad[i], "198.18.3.12", "b2", NULL);
	report_init(&r);
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(want.n, 1);
	TEST_STREQ(want.n ? want.v[0].id : NULL, "hps-1");
	for (size_t i = 0; i < r.n_findings; i++)
		n += strcmp(r.findings[i].tag, "ssh.peer.bad-hostname") == 0;
	TEST_INTEQ(n, nbad);
	khosts_free(&want);
	report_free(&r);
	peers_free(&ps);
}

/* known_hosts: names, self from /etc/ssh, round trip, the change rule, pruning. */
static void test_known_hosts(struct spec *s, const char *k_self, const char *k1, const char *k2)
{
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY };
	struct peerset ps = { 0 };
	struct khosts old = { 0 }, want = { 0 }, again = { 0 };
	struct ssh_tally t = { 0 };
	struct report r;
	char *text;

	ps.v = xcalloc(3, sizeof(*ps.v));
	ps.n = 3;
	peer_init(&ps.v[0], "hps-1.sim.example", "198.18.3.11", "b1", NULL);
	ps.v[0].self = true;
	peer_init(&ps.v[1], "HPS-2", "198.18.3.12", "b2", k1);
	ps.v[1].ipoib_addr = xstrdup("172.16.0.12");
	peer_init(&ps.v[2], "hps-3", "198.18.3.13", "b3", k2);

	report_init(&r);
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(want.n, 3);
	TEST_STREQ(want.v[0].id, "hps-1.sim.example");
	TEST_INTEQ(want.v[0].names.n, 3);
	TEST_STREQ(want.v[0].names.v[1], "hps-1");
	TEST_STREQ(want.v[0].names.v[2], "198.18.3.11");
	TEST_INTEQ(want.v[0].keys.n, 1);
	TEST_STREQ(want.v[0].keys.v[0], k_self);
	TEST_STREQ(want.v[1].id, "hps-2");
	TEST_INTEQ(want.v[1].names.n, 3);
	TEST_STREQ(want.v[1].names.v[2], "172.16.0.12");
	TEST_INTEQ(t.host_keys, 3);
	TEST_CHECK(!t.refused && report_problems(&r) == 0);

	text = kh_render(s, &want);
	{
		char *line = xasprintf("hps-2,198.18.3.12,172.16.0.12 %s\n", k1);

		TEST_CHECK(strstr(text, line) != NULL);
		free(line);
	}
	TEST_CHECK(strstr(text, "# host hps-2 boot_id=b2 source=record\n") != NULL);
	TEST_CHECK(strstr(text, "# host hps-1.sim.example boot_id=b1 source=local\n") != NULL);
	kh_parse(text, &again);
	TEST_INTEQ(again.n, 3);
	TEST_STREQ(again.v[1].boot_id, "b2");
	TEST_CHECK(same_set(&again.v[1].names, &want.v[1].names));
	TEST_CHECK(same_set(&again.v[1].keys, &want.v[1].keys));
	free(text);
	khosts_free(&want);
	report_free(&r);

	/* Same boot id, new key: refused, the pinned key stays, the run names the node. */
	memset(&t, 0, sizeof(t));
	report_init(&r);
	strlist_free(&ps.v[1].host_keys);
	strlist_push(&ps.v[1].host_keys, k2);
	want_hosts(&c, &r, &ps, &again, &want, &t);
	TEST_CHECK(t.refused);
	TEST_INTEQ(t.refused_hosts.n, 1);
	TEST_STREQ(t.refused_hosts.v[0], "hps-2");
	TEST_STREQ(want.v[1].keys.v[0], k1);
	TEST_CHECK(strstr(sb_str(&r.details), "hps-2: HOST KEY CHANGED while the node stayed up") != NULL);
	TEST_CHECK(has_finding(&r, "ssh.host-key.changed"));
	TEST_CHECK(strstr(sb_str(&r.details), "SHA256:") != NULL);
	strlist_free(&t.refused_hosts);
	khosts_free(&want);
	report_free(&r);

	/* A key that only disappears (same boot) is dropped, nothing refused. */
	{
		struct khosts two = { 0 };
		struct khost *h = khosts_add(&two, "hps-2", "b2", "record");

		strlist_push(&h->names, "hps-2");
		strlist_push(&h->keys, k1);
		strlist_push(&h->keys, k2);
		memset(&t, 0, sizeof(t));
		report_init(&r);
		want_hosts(&c, &r, &ps, &two, &want, &t);
		TEST_CHECK(!t.refused);
		TEST_INTEQ(want.v[1].keys.n, 1);
		TEST_STREQ(want.v[1].keys.v[0], k2);
		khosts_free(&want);
		khosts_free(&two);
		report_free(&r);
	}

	/* New boot id (rebuilt VM): the new key replaces the old one. */
	memset(&t, 0, sizeof(t));
	report_init(&r);
	free(ps.v[1].boot_id);
	ps.v[1].boot_id = xstrdup("b2-rebuilt");
	want_hosts(&c, &r, &ps, &again, &want, &t);
	TEST_CHECK(!t.refused);
	TEST_STREQ(want.v[1].keys.v[0], k2);
	TEST_INTEQ(want.v[1].keys.n, 1);
	TEST_CHECK(strstr(sb_str(&r.details), "hps-2: host key replaced") != NULL);
	khosts_free(&want);
	report_free(&r);

	/* An admin removed the pinned lines (ssh-keygen -R): the new key is accepted. */
	memset(&t, 0, sizeof(t));
	report_init(&r);
	free(ps.v[1].boot_id);
	ps.v[1].boot_id = xstrdup("b2");
	strlist_free(&again.v[1].keys);
	want_hosts(&c, &r, &ps, &again, &want, &t);
	TEST_CHECK(!t.refused);
	TEST_STREQ(want.v[1].keys.v[0], k2);
	khosts_free(&want);
	report_free(&r);

	/* A departed peer is pruned and said so; an address claimed twice is dropped. */
	memset(&t, 0, sizeof(t));
	report_init(&r);
	free(ps.v[2].hostname);
	ps.v[2].hostname = xstrdup("hps-4");
	free(ps.v[2].addr);
	ps.v[2].addr = xstrdup("198.18.3.12");
	want_hosts(&c, &r, &ps, &again, &want, &t);
	TEST_CHECK(strstr(sb_str(&r.details), "hps-3: no longer a peer; its host keys are pruned") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "198.18.3.12 is claimed by both hps-2 and hps-4") != NULL);
	TEST_CHECK(r.status != ST_DEGRADED && report_problems(&r) == 0 &&
		   has_finding(&r, "ssh.known-hosts.name-claimed-twice"));
	TEST_CHECK(!strlist_has(&want.v[1].names, "198.18.3.12"));
	TEST_CHECK(!strlist_has(&want.v[2].names, "198.18.3.12"));
	TEST_CHECK(strlist_has(&want.v[2].names, "hps-4"));
	khosts_free(&want);
	report_free(&r);

	/* A record claiming this node's name, listed before it, does not displace it. */
	{
		struct peerset two = { 0 };

		two.v = xcalloc(2, sizeof(*two.v));
		two.n = 2;
		peer_init(&two.v[0], "hps-1.sim.example", "198.18.3.66", "bx", k2);
		peer_init(&two.v[1], "hps-1.sim.example", "198.18.3.11", "b1", NULL);
		two.v[1].self = true;
		memset(&t, 0, sizeof(t));
		report_init(&r);
		want_hosts(&c, &r, &two, &again, &want, &t);
		TEST_INTEQ(want.n, 1);
		TEST_CHECK(want.v[0].peer == &two.v[1]);
		TEST_STREQ(want.v[0].keys.v[0], k_self);
		TEST_CHECK(strstr(sb_str(&r.details), "hps-1.sim.example: a peer record carries this "
				  "node's hostname; the other is ignored") != NULL);
		TEST_CHECK(r.status != ST_DEGRADED && report_problems(&r) == 0 &&
		   has_finding(&r, "ssh.peer.hostname-claimed-twice"));
		khosts_free(&want);
		report_free(&r);
		peers_free(&two);
	}

	/* A record whose hostname is a pattern is ignored, not written as "*". */
	memset(&t, 0, sizeof(t));
	report_init(&r);
	free(ps.v[2].hostname);
	ps.v[2].hostname = xstrdup("*");
	want_hosts(&c, &r, &ps, &again, &want, &t);
	TEST_INTEQ(want.n, 2);
	text = kh_render(s, &want);
	TEST_CHECK(strstr(text, "*") == NULL || strstr(text, "\n* ") == NULL);
	free(text);
	khosts_free(&want);
	report_free(&r);

	/* pinned mode: a peer without host keys is left out, with the reason. */
	memset(&t, 0, sizeof(t));
	report_init(&r);
	free(ps.v[2].hostname);
	ps.v[2].hostname = xstrdup("hps-5");
	strlist_free(&ps.v[2].host_keys);
	want_hosts(&c, &r, &ps, &again, &want, &t);
	TEST_CHECK(r.status != ST_DEGRADED && report_problems(&r) == 0 &&
		   has_finding(&r, "ssh.host-key.unpublished"));
	TEST_CHECK(strstr(sb_str(&r.details), "hps-5: published no host keys") != NULL);
	text = kh_render(s, &want);
	TEST_CHECK(strstr(text, "hps-5") == NULL);
	free(text);
	khosts_free(&want);
	report_free(&r);

	/* scan mode: fetched once (trust on first use), then kept without fetching again. */
	s->ssh.host_keys = HOSTKEYS_SCAN;
	fetch_ops = &fake_fetch_ops;
	fake_host_key = xstrdup(k2);
	memset(&t, 0, sizeof(t));
	report_init(&r);
	want_hosts(&c, &r, &ps, &again, &want, &t);
	TEST_INTEQ(fake_fetches, 1);
	TEST_INTEQ(t.tofu, 1);
	TEST_STREQ(want.v[2].source, "scan");
	TEST_STREQ(want.v[2].keys.v[0], k2);
	TEST_CHECK(strstr(sb_str(&r.details), "(trust on first use, not verified)") != NULL);
	text = kh_render(s, &want);
	khosts_free(&old);
	kh_parse(text, &old);
	free(text);
	khosts_free(&want);
	report_free(&r);
	memset(&t, 0, sizeof(t));
	report_init(&r);
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(fake_fetches, 1);
	TEST_STREQ(want.v[2].keys.v[0], k2);
	khosts_free(&want);
	report_free(&r);
	/* An unreachable host is left out, not fatal. */
	memset(&t, 0, sizeof(t));
	report_init(&r);
	free(ps.v[2].hostname);
	ps.v[2].hostname = xstrdup("hps-9");
	free(ps.v[2].addr);
	ps.v[2].addr = xstrdup("198.18.3.99");
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(fake_fetches, 2);
	TEST_CHECK(r.status == ST_DEGRADED && has_finding(&r, "ssh.host-key.fetch-failed"));
	TEST_INTEQ(want.v[2].keys.n, 0);
	khosts_free(&want);
	report_free(&r);
	/* check mode never fetches. */
	c.mode = RUN_CHECK;
	memset(&t, 0, sizeof(t));
	report_init(&r);
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(fake_fetches, 2);
	TEST_CHECK(strstr(sb_str(&r.details), "apply fetches its host key from 198.18.3.99:22") != NULL);
	khosts_free(&want);
	report_free(&r);
	/* discovery: scan brings the keys: marked scan, counted as trust on first use. */
	s->discovery.present = true;
	s->discovery.method = DISC_SCAN;
	c.mode = RUN_APPLY;
	memset(&t, 0, sizeof(t));
	report_init(&r);
	strlist_push(&ps.v[2].host_keys, k1);
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(fake_fetches, 2);
	TEST_STREQ(want.v[2].source, "scan");
	TEST_STREQ(want.v[1].source, "scan");
	TEST_INTEQ(t.tofu, 2);
	khosts_free(&want);
	report_free(&r);
	s->discovery.present = false;
	s->discovery.method = DISC_SHARED;
	s->ssh.host_keys = HOSTKEYS_PINNED;
	fetch_ops = &helper_fetch_ops;
	free(fake_host_key);

	khosts_free(&old);
	khosts_free(&again);
	peers_free(&ps);
}

/* Hand edits: lines before any "# host", an empty "# host" comment. */
static void test_parse_odd(const char *k1)
{
	struct khosts hs = { 0 };
	char *text = xasprintf("# host \nhandmade %s\n# host n1 boot_id=- source=scan\n"
			       "n1,10.0.0.1 %s\nnot a key line\n", k1, k1);

	kh_parse(text, &hs);
	TEST_INTEQ(hs.n, 2);
	TEST_STREQ(hs.v[0].id, "");
	TEST_STREQ(hs.v[0].names.v[0], "handmade");
	TEST_STREQ(hs.v[1].id, "n1");
	TEST_STREQ(hs.v[1].boot_id, "");
	TEST_STREQ(hs.v[1].source, "scan");
	TEST_INTEQ(hs.v[1].names.n, 2);
	TEST_INTEQ(hs.v[1].keys.n, 1);
	free(text);
	khosts_free(&hs);
}

/* check's vocabulary: missing, mismatched (same name and type, other key), extra. */
static void test_compare(const char *k1, const char *k2)
{
	struct khosts have = { 0 }, want = { 0 };
	struct khost *h;
	struct report r;

	h = khosts_add(&have, "n1", "", "record");
	strlist_push(&h->names, "n1");
	strlist_push(&h->keys, k1);
	h = khosts_add(&have, "gone", "", "record");
	strlist_push(&h->names, "gone");
	strlist_push(&h->keys, k2);
	h = khosts_add(&want, "n1", "", "record");
	strlist_push(&h->names, "n1");
	strlist_push(&h->keys, k2);
	h = khosts_add(&want, "n2", "", "record");
	strlist_push(&h->names, "n2");
	strlist_push(&h->keys, k2);
	report_init(&r);
	kh_compare(&r, &have, &want);
	TEST_CHECK(strstr(sb_str(&r.details), "ssh_known_hosts: n1: mismatched key (want ssh-ed25519 SHA256:") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "ssh_known_hosts: n2: missing key (want ssh-ed25519 SHA256:") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "ssh_known_hosts: gone: extra key ssh-ed25519 SHA256:") != NULL);
	TEST_INTEQ(count(sb_str(&r.details), "\n"), 3);
	report_free(&r);
	khosts_free(&have);
	khosts_free(&want);
}

/*
 * The steady state (ssh_run): when ssh_known_hosts holds exactly what want
 * renders to, judging want against it read back is judging it against
 * nothing, so ssh_run skips reading it.  Same report, tally and file,
 * with this node, a renamed peer, one without keys and a shared address.
 */
static void test_judge_steady(struct spec *s, const char *k1, const char *k2)
{
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY };
	struct peerset ps = { 0 };
	struct khosts old = { 0 }, a = { 0 }, b = { 0 };
	struct ssh_tally ta = { 0 }, tb = { 0 };
	struct report ra, rb;
	char *text, *ta_text, *tb_text;

	ps.v = xcalloc(5, sizeof(*ps.v));
	ps.n = 5;
	peer_init(&ps.v[0], "hps-1.sim.example", "198.18.3.11", "b1", NULL);
	ps.v[0].self = true;
	peer_init(&ps.v[1], "HPS-2", "198.18.3.12", "b2", k1);
	ps.v[1].ipoib_addr = xstrdup("172.16.0.12");
	peer_init(&ps.v[2], "hps-3", "198.18.3.13", "b3", k2);
	peer_init(&ps.v[3], "hps-4", "198.18.3.14", "b4", NULL);  /* no keys: left out */
	peer_init(&ps.v[4], "hps-5", "198.18.3.13", "b5", k1);    /* hps-3's address */

	report_init(&ra);
	want_build(&c, &ra, &ps, &a);
	text = kh_render(s, &a);
	kh_parse(text, &old);
	TEST_INTEQ(old.n, 4);
	want_judge(&c, &ra, &old, &a, &ta);
	report_init(&rb);
	want_build(&c, &rb, &ps, &b);
	{
		struct khosts none = { 0 };

		want_judge(&c, &rb, &none, &b, &tb);
	}
	TEST_INTEQ(ra.status, rb.status);
	TEST_INTEQ(ra.status, ST_OK);          /* others' records: cluster findings */
	TEST_STREQ(sb_str(&ra.details), sb_str(&rb.details));
	TEST_INTEQ(ra.n_findings, rb.n_findings);
	TEST_CHECK(has_finding(&ra, "ssh.host-key.unpublished"));
	TEST_CHECK(has_finding(&ra, "ssh.known-hosts.name-claimed-twice"));
	TEST_INTEQ(ta.peers, tb.peers);
	TEST_INTEQ(ta.host_keys, tb.host_keys);
	TEST_INTEQ(ta.tofu, tb.tofu);
	TEST_CHECK(!ta.refused && !tb.refused);
	ta_text = kh_render(s, &a);
	tb_text = kh_render(s, &b);
	TEST_STREQ(ta_text, text);
	TEST_STREQ(tb_text, text);
	free(ta_text);
	free(tb_text);
	free(text);
	khosts_free(&old);
	khosts_free(&a);
	khosts_free(&b);
	report_free(&ra);
	report_free(&rb);
	peers_free(&ps);
}

int main(void)
{
	struct spec s;
	char *k1, *k2, *khost_self;

	ssh_test_setup(&s);
	k1 = new_key();
	k2 = new_key();
	khost_self = ssh_test_host_key();
	test_names();
	test_known_hosts(&s, khost_self, k1, k2);
	test_bad_names(&s);
	test_parse_odd(k1);
	test_judge_steady(&s, k1, k2);
	test_compare(k1, k2);
	free(k1);
	free(k2);
	free(khost_self);
	ssh_test_teardown(&s);
	TEST_EXIT();
}
