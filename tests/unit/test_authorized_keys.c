/* SPDX-License-Identifier: MIT */
/*
 * The ssh step's authorized_keys (modules/ssh/authorized_keys.c): the
 * cluster's user keys rendered for each user, with the from= restriction
 * to the cluster network.
 */
#include "testssh.h"

static void test_authorized(struct spec *s, const char *ka, const char *kb, const char *kself)
{
	struct peerset ps = { 0 };
	struct report r;
	char *text, *want;

	ps.v = xcalloc(3, sizeof(*ps.v));
	ps.n = 3;
	peer_init(&ps.v[0], "hps-1", "198.18.3.11", "b1", NULL);
	ps.v[0].self = true;
	peer_user_key(&ps.v[0], "alice", "ssh-ed25519 AAAAstalerecordkeyofselfxx alice@x");
	peer_init(&ps.v[1], "hps-2", "198.18.3.12", "b2", NULL);
	ps.v[1].ipoib_addr = xstrdup("172.16.0.12");
	peer_user_key(&ps.v[1], "alice", ka);
	peer_user_key(&ps.v[1], "bob", kb);
	peer_user_key(&ps.v[1], "alice", "ssh-ed25519 AAAA\ncommand=\"evil\" x");
	peer_init(&ps.v[2], "hps-3", "198.18.3.13", "b3", NULL);
	peer_user_key(&ps.v[2], "alice", kb);      /* same key on two nodes: one line */
	peer_user_key(&ps.v[2], "alice", "command=\"/bin/evil\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA x");

	report_init(&r);
	text = ak_render(s, &ps, "alice", kself, "hps-1", &r);
	want = xasprintf("from=\"198.18.3.0/24,127.0.0.0/8,::1\" %s alice@hps-1\n"
			 "from=\"198.18.3.0/24,172.16.0.12\" %s alice@hps-2\n"
			 "from=\"198.18.3.0/24\" %s alice@hps-3\n", kself, ka, kb);
	TEST_STREQ(text, want);
	TEST_CHECK(strstr(text, "evil") == NULL);
	TEST_INTEQ(count(sb_str(&r.details), "is malformed; ignored"), 2);
	free(want);
	free(text);
	report_free(&r);

	/* bob gets only bob's keys; without restrict_from no options. */
	s->ssh.restrict_from = false;
	text = ak_render(s, &ps, "bob", NULL, "hps-1", NULL);
	want = xasprintf("%s bob@hps-2\n", kb);
	TEST_STREQ(text, want);
	free(want);
	free(text);
	s->ssh.restrict_from = true;

	/* Without cluster.network, from= lists each node's own addresses. */
	s->cluster.has_network = false;
	text = ak_render(s, &ps, "bob", NULL, "hps-1", NULL);
	want = xasprintf("from=\"198.18.3.12,172.16.0.12\" %s bob@hps-2\n", kb);
	TEST_STREQ(text, want);
	free(want);
	free(text);
	s->cluster.has_network = true;

	/* One key on 12 nodes (a home on NFS), no cluster.network: one line, every address once, in order. */
	{
		struct peerset many = { 0 };
		struct strbuf from = STRBUF_INIT;

		many.v = xcalloc(12, sizeof(*many.v));
		many.n = 12;
		for (size_t i = 0; i < 12; i++) {
			char host[16], addr[32];

			snprintf(host, sizeof(host), "n%zu", i);
			snprintf(addr, sizeof(addr), "198.18.4.%zu", 10 + i % 11);   /* n11 repeats n0's */
			peer_init(&many.v[i], host, addr, "b", NULL);
			peer_user_key(&many.v[i], "alice", ka);
			if (i < 11)
				sb_printf(&from, "%s%s", i ? "," : "", addr);
		}
		s->cluster.has_network = false;
		text = ak_render(s, &many, "alice", NULL, "n0", NULL);
		want = xasprintf("from=\"%s\" %s alice@n0\n", sb_str(&from), ka);
		TEST_STREQ(text, want);
		free(want);
		free(text);
		s->cluster.has_network = true;
		sb_free(&from);
		peers_free(&many);
	}

	/* ak_keys reads back keys and comments through the from= option. */
	{
		struct strlist k = { 0 }, cm = { 0 };

		ak_keys("from=\"10.0.0.0/8\" ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIabc alice@n1\n"
			"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAAB x\n# comment\n", &k, &cm);
		TEST_INTEQ(k.n, 2);
		TEST_STREQ(k.v[0], "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIabc");
		TEST_STREQ(cm.v[0], "alice@n1");
		TEST_STREQ(cm.v[1], "x");
		strlist_free(&k);
		strlist_free(&cm);
	}
	peers_free(&ps);
}

int main(void)
{
	struct spec s;
	char *k1, *k2, *kself, *khost_self;

	ssh_test_setup(&s);
	k1 = new_key();
	k2 = new_key();
	kself = new_key();
	khost_self = ssh_test_host_key();
	test_authorized(&s, k1, k2, kself);
	free(k1);
	free(k2);
	free(kself);
	free(khost_self);
	ssh_test_teardown(&s);
	TEST_EXIT();
}
