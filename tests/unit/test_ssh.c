/* SPDX-License-Identifier: MIT */
/*
 * ssh: known_hosts and authorized_keys rendering, the ssh_config drop-in,
 * the host-key change rule, and whole runs on a fake root (peers built by
 * hand, as discovery would fill them).
 */
#include "config.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include "../../modules/ssh/common.c"
#include "../../modules/ssh/known_hosts.c"
#include "../../modules/ssh/authorized_keys.c"
#include "../../lib/sshkeys/userkeys.c"
#include "../../modules/ssh/ssh.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-ssh.XXXXXX";
#define get(rel) test_get(root, rel)
static char name_glo[] = "glo";

static void put(const char *rel, const char *text, mode_t mode)
{
	char *p = fs_rooted(root, rel);
	char *dir = xstrdup(p);
	FILE *f;

	*strrchr(dir, '/') = '\0';
	for (char *q = dir + strlen(root) + 1; *q; q++)
		if (*q == '/') {
			*q = '\0';
			mkdir(dir, 0755);
			*q = '/';
		}
	mkdir(dir, 0755);
	f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	chmod(p, mode);
	free(dir);
	free(p);
}

static struct stat st_of(const char *rel)
{
	char *p = fs_rooted(root, rel);
	struct stat st;

	memset(&st, 0, sizeof(st));
	(void)lstat(p, &st);
	free(p);
	return st;
}

/* A fresh ed25519 public key "ssh-ed25519 AAAA..." (malloc'd), made by the real helper. */
static char *new_key(void)
{
	char *pub = NULL, *priv = NULL, err[256] = "";

	if (sshkey_generate(KEY_ED25519, &pub, &priv, err, sizeof(err)) < 0) {
		fprintf(stderr, "hpcinit-ssh keygen: %s\n", err);
		abort();
	}
	free(priv);
	return pub;
}

/* What ssh-keygen -l says of a public key line ("256 SHA256:... comment (ED25519)"). */
static char *keygen_fingerprint(const char *pub)
{
	char *path = fs_rooted(root, "/fp.pub"), *ret = NULL;
	const char *argv[] = { "ssh-keygen", "-l", "-f", path, NULL };
	struct proc_result res;
	FILE *f = fopen(path, "w");

	fprintf(f, "%s x\n", pub);
	fclose(f);
	if (proc_run(argv, NULL, NULL, 10000, &res) == 0 && res.exit_code == 0) {
		char *sp = strchr(res.out, ' ');

		if (sp)
			ret = xstrndup(sp + 1, strcspn(sp + 1, " "));
	}
	proc_result_free(&res);
	unlink(path);
	free(path);
	return ret;
}

/*
 * The agent's own key parsing against the real tools: fingerprints as
 * ssh-keygen prints them, the public half read from a private key (OpenSSH
 * format in the agent, PEM through the helper), refusals.
 */
static void test_keys(void)
{
	static const enum key_type types[] = { KEY_ED25519, KEY_ECDSA, KEY_RSA };

	for (size_t i = 0; i < 3; i++) {
		char *pub = NULL, *priv = NULL, *again = NULL, *fp, *want;

		TEST_INTEQ(sshkey_generate(types[i], &pub, &priv, NULL, 0), 0);
		if (!pub || !priv)
			continue;
		TEST_CHECK(strstr(priv, "PRIVATE KEY-----") != NULL);
		TEST_INTEQ(sshkey_public_of_private(priv, strlen(priv), &again), 0);
		TEST_STREQ(again, pub);
		fp = sshkey_fingerprint(pub);
		want = keygen_fingerprint(pub);
		TEST_CHECK(want != NULL);
		if (want) {
			char *line = xasprintf("%.*s %s", (int)strcspn(pub, " "), pub, want);

			TEST_STREQ(fp, line);
			free(line);
		}
		free(want);
		free(fp);
		free(again);
		free(pub);
		free(priv);
	}
	/* An encrypted OpenSSH key (ssh-keygen -N): refused, not guessed at; unencrypted: read. */
	for (int pass = 0; pass < 2; pass++) {
		char *path = fs_rooted(root, "/enc_key"), *pubpath = xasprintf("%s.pub", path);
		const char *argv[] = { "ssh-keygen", "-q", "-t", "ed25519", "-N", pass ? "" : "secret-pass",
				       "-f", path, NULL };
		struct proc_result res;
		char *text = NULL, *want = NULL, *pub = NULL;
		size_t len = 0;

		unlink(path);
		unlink(pubpath);
		TEST_INTEQ(proc_run(argv, NULL, NULL, 20000, &res), 0);
		TEST_INTEQ(res.exit_code, 0);
		proc_result_free(&res);
		TEST_INTEQ(fs_read_host(path, 100000, &text, &len), 0);
		TEST_INTEQ(fs_read_host(pubpath, 100000, &want, NULL), 0);
		if (text && want) {
			char *canon = sshkey_canonical(want);

			TEST_INTEQ(sshkey_public_of_private(text, len, &pub), pass ? 0 : -EINVAL);
			if (pass)
				TEST_STREQ(pub, canon);
			else
				TEST_CHECK(pub == NULL);
			free(canon);
		}
		free(pub);
		free(text);
		free(want);
		unlink(path);
		unlink(pubpath);
		free(pubpath);
		free(path);
	}
	/* Not a key at all. */
	{
		char *pub = NULL;

		TEST_INTEQ(sshkey_public_of_private("garbage\n", 8, &pub), -EINVAL);
		TEST_CHECK(pub == NULL);
	}
	/* The real fetcher: nothing listens on port 1, the host is reported as refused. */
	{
		const char *hosts[] = { "127.0.0.1" };
		struct strlist keys[1] = { { 0 } };
		int errs[1] = { 0 };
		char why[256] = "";

		TEST_INTEQ(sshkey_fetch_host_keys(hosts, 1, 1, 1000, false, 20000, keys, errs, why,
						  sizeof(why)), 0);
		TEST_INTEQ(errs[0], -ECONNREFUSED);
		TEST_INTEQ(keys[0].n, 0);
		strlist_free(&keys[0]);
	}
	{
		char *fp = sshkey_fingerprint("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCextra");

		TEST_STREQ(fp, "ssh-rsa (unparsable)");
		free(fp);
	}
}

static void peer_init(struct peer *p, const char *host, const char *addr, const char *boot,
		      const char *hostkey)
{
	memset(p, 0, sizeof(*p));
	p->hostname = xstrdup(host);
	p->addr = addr ? xstrdup(addr) : NULL;
	p->boot_id = xstrdup(boot);
	if (hostkey)
		strlist_push(&p->host_keys, hostkey);
}

static void peer_user_key(struct peer *p, const char *user, const char *key)
{
	p->user_keys = xrealloc(p->user_keys, (p->n_user_keys + 1) * sizeof(*p->user_keys));
	p->user_keys[p->n_user_keys].user = xstrdup(user);
	p->user_keys[p->n_user_keys].key = xstrdup(key);
	p->n_user_keys++;
}

static void peers_free(struct peerset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->v[i];

		free(p->hostname);
		free(p->addr);
		free(p->ipoib_addr);
		free(p->boot_id);
		free(p->version);
		strlist_free(&p->host_keys);
		for (size_t k = 0; k < p->n_user_keys; k++) {
			free(p->user_keys[k].user);
			free(p->user_keys[k].key);
		}
		free(p->user_keys);
	}
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}

static void set_network(struct spec *s, const char *addr, unsigned prefix)
{
	s->cluster.has_network = true;
	s->cluster.network.family = AF_INET;
	inet_pton(AF_INET, addr, &s->cluster.network.addr.v4);
	s->cluster.network.prefix = prefix;
	snprintf(s->cluster.network.text, sizeof(s->cluster.network.text), "%s/%u", addr, prefix);
}

static size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static bool same_set(const struct strlist *a, const struct strlist *b)
{
	return a->n == b->n && !first_new_key(a, b) && !first_new_key(b, a);
}

/* Did the run record a finding with this tag? */
static bool has_finding(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0)
			return true;
	return false;
}

static int fake_fetches;
static char *fake_host_key;

static int fake_fetch(const char *host, unsigned port, unsigned timeout_ms, char **ret_key)
{
	fake_fetches++;
	if (strcmp(host, "198.18.3.99") == 0)
		return -ECONNREFUSED;
	*ret_key = xstrdup(fake_host_key);
	return 0;
}

static const struct fetch_ops fake_fetch_ops = { fake_fetch };

static void test_names(void)
{
	TEST_CHECK(valid_hostname("hps-1"));
	TEST_CHECK(valid_hostname("node1.cluster.example"));
	TEST_CHECK(!valid_hostname("*"));
	TEST_CHECK(!valid_hostname("a,b"));
	TEST_CHECK(!valid_hostname("a b"));
	TEST_CHECK(!valid_hostname("!bad"));
	TEST_CHECK(!valid_hostname("-x"));
	TEST_CHECK(!valid_hostname(""));
	TEST_CHECK(!valid_hostname(NULL));
	TEST_CHECK(valid_addr("198.18.3.1"));
	TEST_CHECK(valid_addr("fd00::1"));
	TEST_CHECK(!valid_addr("198.18.3.*"));
	TEST_CHECK(!valid_addr(NULL));
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
	TEST_CHECK(r.status == ST_DEGRADED && has_finding(&r, "ssh.known-hosts.name-claimed-twice"));
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
		TEST_CHECK(r.status == ST_DEGRADED && has_finding(&r, "ssh.peer.hostname-claimed-twice"));
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
	TEST_CHECK(r.status == ST_DEGRADED && has_finding(&r, "ssh.host-key.unpublished"));
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

static void test_conf(struct spec *s)
{
	struct khosts hs = { 0 };
	struct khost *h;
	char *text;

	h = khosts_add(&hs, "hps-1", "", "local");
	strlist_push(&h->names, "hps-1");
	strlist_push(&h->names, "198.18.3.11");
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host 198.18.3.* hps-1 198.18.3.11\n"
			  "\tGlobalKnownHostsFile /etc/hpcinit/ssh_known_hosts /etc/ssh/ssh_known_hosts "
			  "/etc/ssh/ssh_known_hosts2\n\tStrictHostKeyChecking yes\n") != NULL);
	TEST_CHECK(strstr(text, "StrictHostKeyChecking no") == NULL);
	TEST_CHECK(strstr(text, "UserKnownHostsFile") == NULL);
	free(text);

	/* /20 cannot be one ssh pattern: hosts are listed, no network pattern. */
	set_network(s, "198.18.0.0", 20);
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host hps-1 198.18.3.11\n") != NULL);
	free(text);
	set_network(s, "10.0.0.0", 8);
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host 10.* hps-1") != NULL);
	free(text);
	set_network(s, "172.16.0.0", 16);
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host 172.16.* hps-1") != NULL);
	free(text);

	/* Many hosts: several stanzas, each line short, each with both settings. */
	for (int i = 2; i <= 300; i++) {
		char n[32];

		snprintf(n, sizeof(n), "node%03d", i);
		h = khosts_add(&hs, n, "", "record");
		strlist_push(&h->names, n);
	}
	text = conf_render(s, &hs);
	{
		size_t stanzas = count(text, "\nHost ");
		size_t longest = 0;

		for (const char *p = text; *p;) {
			size_t l = strcspn(p, "\n");

			if (l > longest)
				longest = l;
			p += l + (p[l] == '\n');
		}
		TEST_CHECK(stanzas > 1);
		TEST_INTEQ(count(text, "\tStrictHostKeyChecking yes\n"), stanzas);
		TEST_INTEQ(count(text, "\tGlobalKnownHostsFile "), stanzas);
		TEST_CHECK(longest <= HOST_LINE_MAX + 16);
		TEST_INTEQ(count(text, " node150"), 1);
	}
	free(text);
	khosts_free(&hs);
	set_network(s, "198.18.3.0", 24);
}

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

/* Whole runs on a fake root: files, owners, modes, idempotence, refusals. */
static void test_run(struct spec *s, const char *khost2, const char *kuser2)
{
	struct outputs out = { 0 };
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY, .hostname = "hps-1", .out = &out };
	struct peerset ps = { 0 };
	struct report r;
	struct stat st;
	char *text, *line;
	int ret;

	put("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"
	    "alice:x:4242:4343::/home/alice:/bin/bash\n"
	    "ghost:x:4244:4244::/home/ghost:/bin/bash\n", 0644);
	{
		char *home = fs_rooted(root, "/home/alice");
		char *parent = fs_rooted(root, "/home");

		mkdir(parent, 0755);
		free(parent);
		mkdir(home, 0755);
		TEST_INTEQ(chown(home, 4242, 4343), 0);
		free(home);
	}
	ps.v = xcalloc(2, sizeof(*ps.v));
	ps.n = 2;
	peer_init(&ps.v[0], "hps-1", "198.18.3.11", "b1", NULL);
	ps.v[0].self = true;
	peer_init(&ps.v[1], "hps-2", "198.18.3.12", "b2", khost2);
	peer_user_key(&ps.v[1], "alice", kuser2);
	out.peers = &ps;

	/* plan: nothing is written, the would-be changes are listed. */
	c.mode = RUN_PLAN;
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(!fs_exists(&c, "/etc/hpcinit/ssh_known_hosts"));
	TEST_CHECK(!fs_exists(&c, "/home/alice/.ssh"));
	report_free(&r);

	c.mode = RUN_APPLY;
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	if (r.status != ST_CHANGED)
		fprintf(stderr, "%s\n%s", r.summary, sb_str(&r.details));
	TEST_CHECK(strstr(r.summary, "2 nodes, 2 host keys pinned, 1 users with 2 authorized keys") != NULL);
	report_free(&r);

	st = st_of("/home/alice/.ssh");
	TEST_INTEQ(st.st_mode & 07777, 0700);
	TEST_INTEQ(st.st_uid, 4242);
	TEST_INTEQ(st.st_gid, 4343);
	st = st_of("/home/alice/.ssh/authorized_keys");
	TEST_INTEQ(st.st_mode & 07777, 0600);
	TEST_INTEQ(st.st_uid, 4242);
	st = st_of("/home/alice/.ssh/id_ed25519");
	TEST_INTEQ(st.st_mode & 07777, 0600);
	TEST_INTEQ(st.st_uid, 4242);
	st = st_of("/etc/hpcinit/ssh_known_hosts");
	TEST_INTEQ(st.st_mode & 07777, 0644);
	TEST_INTEQ(st.st_uid, 0);
	text = get("/home/alice/.ssh/authorized_keys");
	line = xasprintf("from=\"198.18.3.0/24\" %s alice@hps-2\n", kuser2);
	TEST_CHECK(text && strstr(text, "# BEGIN hpcinit glo\n") == text);
	TEST_CHECK(text && strstr(text, line) != NULL);
	TEST_INTEQ(count(text, "from="), 2);
	free(line);
	free(text);
	text = get("/etc/ssh/ssh_config.d/90-hpcinit.conf");
	TEST_CHECK(text && strstr(text, "Host 198.18.3.* hps-1 198.18.3.11 hps-2 198.18.3.12\n") != NULL);
	free(text);

	/* Re-run: nothing changes, no file is rewritten, and no helper is needed. */
	{
		struct stat before = st_of("/etc/hpcinit/ssh_known_hosts");
		struct stat ak_before = st_of("/home/alice/.ssh/authorized_keys");
		char *dir = getenv("HPCINIT_LIBEXEC_DIR") ? xstrdup(getenv("HPCINIT_LIBEXEC_DIR")) : NULL;

		setenv("HPCINIT_LIBEXEC_DIR", "/nonexistent", 1);
		report_init(&r);
		ret = ssh_run(&c, &r);
		if (dir)
			setenv("HPCINIT_LIBEXEC_DIR", dir, 1);
		else
			unsetenv("HPCINIT_LIBEXEC_DIR");
		free(dir);
		TEST_INTEQ(ret, 0);
		TEST_INTEQ(r.status, ST_OK);
		TEST_INTEQ(r.changed.n, 0);
		report_free(&r);
		st = st_of("/etc/hpcinit/ssh_known_hosts");
		TEST_INTEQ(st.st_ino, before.st_ino);
		st = st_of("/home/alice/.ssh/authorized_keys");
		TEST_INTEQ(st.st_ino, ak_before.st_ino);
	}

	/* Lines outside the block survive; a departed peer's key goes. */
	text = get("/home/alice/.ssh/authorized_keys");
	line = xasprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnkeyofalice alice@laptop\n%s", text);
	put("/home/alice/.ssh/authorized_keys", line, 0600);
	free(line);
	free(text);
	{
		char *p = fs_rooted(root, "/home/alice/.ssh/authorized_keys");

		TEST_INTEQ(chown(p, 4242, 4343), 0);
		free(p);
	}
	ps.n = 1;               /* hps-2 left */
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_CHECK(strstr(sb_str(&r.details), "hps-2: no longer a peer") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "authorized_keys: removed ssh-ed25519 SHA256:") != NULL);
	report_free(&r);
	text = get("/home/alice/.ssh/authorized_keys");
	TEST_CHECK(text && strstr(text, "alice@laptop") != NULL);
	TEST_CHECK(text && strstr(text, "alice@hps-2") == NULL);
	free(text);
	text = get("/etc/hpcinit/ssh_known_hosts");
	TEST_CHECK(text && strstr(text, "hps-2") == NULL);
	free(text);

	/* check reports what is missing, and changes nothing. */
	ps.n = 2;
	c.mode = RUN_CHECK;
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(strstr(sb_str(&r.details), "/etc/hpcinit/ssh_known_hosts: hps-2: missing key (want ssh-ed25519 SHA256:") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "authorized_keys: missing ssh-ed25519 SHA256:") != NULL);
	report_free(&r);
	text = get("/etc/hpcinit/ssh_known_hosts");
	TEST_CHECK(text && strstr(text, "hps-2") == NULL);
	free(text);
	c.mode = RUN_APPLY;
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	report_free(&r);
	/* A hand-added key in known_hosts is extra. */
	text = get("/etc/hpcinit/ssh_known_hosts");
	line = xasprintf("%shps-2 ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCextra\n", text);
	put("/etc/hpcinit/ssh_known_hosts", line, 0644);
	free(line);
	free(text);
	c.mode = RUN_CHECK;
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_CHECK(strstr(sb_str(&r.details), "hps-2: extra key ssh-rsa") != NULL);
	report_free(&r);
	c.mode = RUN_APPLY;
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	report_free(&r);

	/* A group-writable authorized_keys is refused, not fixed. */
	{
		char *p = fs_rooted(root, "/home/alice/.ssh/authorized_keys");

		chmod(p, 0660);
		report_init(&r);
		ret = ssh_run(&c, &r);
		TEST_CHECK(ret < 0);
		TEST_INTEQ(r.status, ST_FAILED);
		TEST_CHECK(strstr(sb_str(&r.details), "writable by group or others (mode 0660)") != NULL);
		report_free(&r);
		TEST_INTEQ(stat(p, &st), 0);
		TEST_INTEQ(st.st_mode & 07777, 0660);
		chmod(p, 0600);
		free(p);
	}

	/* A symlinked ~/.ssh is refused and nothing is written through it. */
	{
		char *sshd = fs_rooted(root, "/home/alice/.ssh");
		char *moved = fs_rooted(root, "/home/alice/.ssh-real");
		char *target = fs_rooted(root, "/etc/elsewhere");

		TEST_INTEQ(rename(sshd, moved), 0);
		mkdir(target, 0755);
		TEST_INTEQ(symlink(target, sshd), 0);
		report_init(&r);
		ret = ssh_run(&c, &r);
		TEST_CHECK(ret < 0);
		TEST_CHECK(strstr(sb_str(&r.details), "/home/alice/.ssh: is a symbolic link; refusing to follow it") != NULL);
		report_free(&r);
		TEST_CHECK(!fs_exists(&c, "/etc/elsewhere/authorized_keys"));
		TEST_CHECK(!fs_exists(&c, "/etc/elsewhere/id_ed25519"));
		TEST_INTEQ(lstat(target, &st), 0);
		TEST_INTEQ(st.st_uid, 0);       /* not chowned to the user */
		unlink(sshd);
		TEST_INTEQ(rename(moved, sshd), 0);
		rmdir(target);
		free(sshd);
		free(moved);
		free(target);
	}

	/* A user in ssh.users without a home: failed with the reason, others still done. */
	strlist_push(&s->ssh.users, "ghost");
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_CHECK(ret < 0);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_CHECK(strstr(sb_str(&r.details), "home directory /home/ghost does not exist") != NULL);
	TEST_CHECK(strstr(r.summary, "1 of 2 users set up") != NULL);
	TEST_CHECK(!fs_exists(&c, "/home/ghost"));
	report_free(&r);
	free(s->ssh.users.v[--s->ssh.users.n]);
	s->ssh.users.v[s->ssh.users.n] = NULL;

	/* The drop-in is useless when ssh_config does not include ssh_config.d. */
	put("/etc/ssh/ssh_config", "Host *\n    SendEnv LANG\n", 0644);
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_INTEQ(r.status, ST_DEGRADED);
	TEST_CHECK(strstr(sb_str(&r.details), "does not include /etc/ssh/ssh_config.d/*.conf") != NULL);
	TEST_CHECK(has_finding(&r, "ssh.config.no-include"));
	report_free(&r);
	put("/etc/ssh/ssh_config", "StrictHostKeyChecking ask\nInclude /etc/ssh/ssh_config.d/*.conf\n", 0644);
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_INTEQ(r.status, ST_DEGRADED);
	TEST_CHECK(strstr(sb_str(&r.details), "move the Include up") != NULL);
	TEST_CHECK(has_finding(&r, "ssh.config.include-too-late"));
	report_free(&r);
	put("/etc/ssh/ssh_config", "Include /etc/ssh/ssh_config.d/*.conf\nHost *\n", 0644);
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_INTEQ(r.status, ST_OK);
	report_free(&r);

	/* A live peer's changed host key fails the run and stays out. */
	strlist_free(&ps.v[1].host_keys);
	{
		char *k = new_key();

		strlist_push(&ps.v[1].host_keys, k);
		report_init(&r);
		ret = ssh_run(&c, &r);
		TEST_INTEQ(r.status, ST_FAILED);
		TEST_CHECK(strstr(r.summary, "host key changed while the node stayed up: hps-2") != NULL);
		report_free(&r);
		text = get("/etc/hpcinit/ssh_known_hosts");
		TEST_CHECK(text && strstr(text, k) == NULL);
		TEST_CHECK(text && strstr(text, khost2) != NULL);
		free(text);
		free(k);
	}
	peers_free(&ps);
}

/* Many peers: every host and every key once, the map grows; O(N) keeps this quick. */
static void test_many(struct spec *s, size_t n)
{
	struct ctx c = { .spec = s, .root = root, .mode = RUN_CHECK, .hostname = "n0" };
	struct peerset ps = { 0 };
	struct khosts old = { 0 }, want = { 0 };
	struct ssh_tally t = { 0 };
	struct report r;
	char *text;
	uint64_t t0 = now_ms();

	ps.v = xcalloc(n, sizeof(*ps.v));
	ps.n = n;
	for (size_t i = 0; i < n; i++) {
		char host[32], addr[32], key[96];

		snprintf(host, sizeof(host), "n%zu", i);
		snprintf(addr, sizeof(addr), "10.%zu.%zu.%zu", (i >> 16) & 255, (i >> 8) & 255, i & 255);
		snprintf(key, sizeof(key), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%08zuxx", i);
		peer_init(&ps.v[i], host, addr, "b", key);
		peer_user_key(&ps.v[i], "alice", key);
	}
	ps.v[0].self = true;
	/* two peers claim one address */
	free(ps.v[n - 1].addr);
	ps.v[n - 1].addr = xstrdup(ps.v[n - 2].addr);
	report_init(&r);
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(want.n, n);
	TEST_INTEQ(count(sb_str(&r.details), "is claimed by both"), 1);
	text = kh_render(s, &want);
	TEST_INTEQ(count(text, "\n# host "), n);
	kh_parse(text, &old);
	TEST_INTEQ(old.n, n);
	free(text);
	text = conf_render(s, &want);
	TEST_INTEQ(count(text, " n1234 "), 1);
	free(text);
	kh_compare(&r, &old, &want);
	TEST_INTEQ(count(sb_str(&r.details), "missing key"), 0);
	TEST_INTEQ(count(sb_str(&r.details), "extra key"), 0);
	text = ak_render(s, &ps, "alice", NULL, "n0", &r);
	TEST_INTEQ(count(text, "alice@n"), n - 1);
	report_free(&r);
	/* Details stay short: DETAIL_MAX lines of a kind, then a count. */
	report_init(&r);
	ak_report_diff(&c, &r, "/x", NULL, text);
	TEST_INTEQ(count(sb_str(&r.details), "/x: missing "), DETAIL_MAX + 1);
	{
		char *more = xasprintf("/x: missing %zu more keys\n", n - 1 - DETAIL_MAX);

		TEST_CHECK(strstr(sb_str(&r.details), more) != NULL);
		free(more);
	}
	report_free(&r);
	report_init(&r);
	{
		struct khosts none = { 0 };
		struct peerset pruned = { 0 };

		kh_compare(&r, &none, &want);
		TEST_INTEQ(count(sb_str(&r.details), "missing key"), DETAIL_MAX);
		TEST_CHECK(strstr(sb_str(&r.details), "more names lack a key\n") != NULL);
		khosts_free(&want);
		memset(&t, 0, sizeof(t));
		report_free(&r);
		report_init(&r);
		want_hosts(&c, &r, &pruned, &old, &want, &t);   /* everyone left */
		TEST_INTEQ(count(sb_str(&r.details), ": no longer a peer"), DETAIL_MAX);
		{
			char *more = xasprintf("%zu more nodes are no longer peers", n - 1 - DETAIL_MAX);

			TEST_CHECK(strstr(sb_str(&r.details), more) != NULL);
			free(more);
		}
	}
	free(text);
	fprintf(stderr, "%zu peers: %llu ms\n", n, (unsigned long long)(now_ms() - t0));
	khosts_free(&old);
	khosts_free(&want);
	report_free(&r);
	peers_free(&ps);
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root };
	struct strlist self_keys = { 0 };
	char *k1, *k2, *k3, *k4, *kself, *khost_self;

	if (!mkdtemp(root))
		return 1;
	chmod(root, 0755);      /* the user's identity must reach the fake home */
	s.cluster.name = name_glo;
	set_network(&s, "198.18.3.0", 24);
	s.ssh.present = true;
	s.ssh.restrict_from = true;
	s.ssh.key_type = KEY_ED25519;
	strlist_push(&s.ssh.users, "alice");
	k1 = new_key();
	k2 = new_key();
	k3 = new_key();
	k4 = new_key();
	kself = new_key();
	khost_self = new_key();
	{
		char *t = xasprintf("%s root@hps-1\n", khost_self);

		put("/etc/ssh/ssh_host_ed25519_key.pub", t, 0644);
		free(t);
	}
	put("/etc/ssh/ssh_config", "Include /etc/ssh/ssh_config.d/*.conf\nHost *\n", 0644);
	TEST_INTEQ(sshkey_host_pubkeys(&c, &self_keys), 0);
	TEST_INTEQ(self_keys.n, 1);
	strlist_free(&self_keys);

	test_names();
	test_keys();
	test_known_hosts(&s, khost_self, k1, k2);
	test_parse_odd(k1);
	test_compare(k1, k2);
	test_conf(&s);
	test_authorized(&s, k1, k2, kself);
	test_run(&s, k3, k4);
	test_many(&s, 3000);
	if (getenv("TEST_SSH_MANY"))
		test_many(&s, (size_t)strtoul(getenv("TEST_SSH_MANY"), NULL, 10));

	free(k1);
	free(k2);
	free(k3);
	free(k4);
	free(kself);
	free(khost_self);
	strlist_free(&s.ssh.users);
	test_rm_rf(root);
	TEST_EXIT();
}
