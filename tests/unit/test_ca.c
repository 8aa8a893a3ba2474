/* SPDX-License-Identifier: MIT */
/*
 * The ssh step's host CA (modules/ssh/ca.c, and ca_head.c's check of the
 * revocation list's HMAC).  What ca mode writes to known_hosts is judged by
 * OpenSSH itself (ssh-keygen -F over the rendered file: which host names and
 * addresses the CA is trusted for); the HMAC the head publishes is computed
 * independently by the openssl command.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../modules/ssh/ca.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-ca.XXXXXX";

/* argv's stdout (malloc'd), its exit code in *code; NULL when it could not run. */
static char *run(const char *const argv[], const char *in, int *code)
{
	struct proc_result pr;
	char *out = NULL;

	if (proc_run(argv, NULL, in, 20000, &pr) < 0)
		return NULL;
	*code = pr.exit_code;
	out = pr.out ? xstrdup(pr.out) : xstrdup("");
	proc_result_free(&pr);
	return out;
}

/* Does OpenSSH trust the CA for host, by the known_hosts text? (ssh-keygen -F, a CA line found) */
static bool ca_trusted_for(const char *kh_text, const char *host)
{
	char *path = fs_rooted(root, "/known_hosts"), *out;
	const char *argv[] = { "ssh-keygen", "-F", host, "-f", path, NULL };
	int code = -1;
	bool yes;

	test_put(root, "/known_hosts", kh_text);
	out = run(argv, NULL, &code);
	yes = out && code == 0 && strstr(out, " CA\n") != NULL;
	free(out);
	free(path);
	return yes;
}

static void set_net(struct spec *s, int family, const char *addr, unsigned prefix)
{
	s->cluster.has_network = true;
	s->cluster.network.family = family;
	if (family == AF_INET)
		inet_pton(AF_INET, addr, &s->cluster.network.addr.v4);
	else
		inet_pton(AF_INET6, addr, &s->cluster.network.addr.v6);
	s->cluster.network.prefix = prefix;
}

static void test_known_hosts(const char *ca_pub)
{
	struct spec s = { 0 };
	struct khost self = { 0 };
	struct khosts hosts = { &self, 1, 0 };
	char name[] = "glo", local[] = "local", id[] = "node1.glo.internal", *kh, *ca_line;
	struct strlist pats = { 0 };

	s.cluster.name = name;
	s.ssh.ca_public_key = xasprintf("%s the-ca-comment", ca_pub);
	self.source = local;
	self.id = id;
	set_net(&s, AF_INET, "198.18.3.0", 25);         /* /25: ssh's patterns say the whole /24 */

	kh = ca_kh_render(&s, &hosts);
	ca_line = xasprintf("@cert-authority *,!*.* %s\n", ca_pub);
	TEST_CHECK(strstr(kh, ca_line) != NULL);
	TEST_CHECK(strstr(kh, "the-ca-comment") == NULL);      /* the key, canonical */
	/* what OpenSSH makes of it */
	TEST_CHECK(ca_trusted_for(kh, "node7"));                /* a short name */
	TEST_CHECK(ca_trusted_for(kh, "node7.glo.internal"));   /* the cluster's domain */
	TEST_CHECK(ca_trusted_for(kh, "198.18.3.200"));         /* the network, rounded out */
	TEST_CHECK(!ca_trusted_for(kh, "node7.glo.internal.evil.example"));
	TEST_CHECK(!ca_trusted_for(kh, "www.example.com"));
	TEST_CHECK(!ca_trusted_for(kh, "198.18.4.1"));
	free(kh);
	ca_host_patterns(&s, &hosts, &pats);
	TEST_INTEQ(pats.n, 3);
	if (pats.n == 3) {
		TEST_STREQ(pats.v[0], "* !*.*");
		TEST_STREQ(pats.v[1], "*.glo.internal");
		TEST_STREQ(pats.v[2], "198.18.3.*");
	}
	strlist_free(&pats);

	/* a /12 is rounded out to the /8; a /20 to the /16 */
	set_net(&s, AF_INET, "172.16.0.0", 12);
	kh = ca_kh_render(&s, &hosts);
	TEST_CHECK(ca_trusted_for(kh, "172.31.255.1"));
	TEST_CHECK(ca_trusted_for(kh, "172.99.0.1"));
	TEST_CHECK(!ca_trusted_for(kh, "173.16.0.1"));
	free(kh);
	set_net(&s, AF_INET, "10.7.16.0", 20);
	kh = ca_kh_render(&s, &hosts);
	TEST_CHECK(ca_trusted_for(kh, "10.7.200.1"));
	TEST_CHECK(!ca_trusted_for(kh, "10.8.0.1"));
	free(kh);

	/* this node has a short name and the network is IPv6: short names alone (no network pattern) */
	self.id = name;
	set_net(&s, AF_INET6, "fd00::", 64);
	kh = ca_kh_render(&s, &hosts);
	TEST_CHECK(ca_trusted_for(kh, "node7"));
	TEST_CHECK(!ca_trusted_for(kh, "node7.glo.internal"));
	TEST_CHECK(strstr(kh, "@cert-authority") == strrchr(kh, '@'));   /* one line */
	free(kh);
	ca_host_patterns(&s, &hosts, &pats);
	TEST_INTEQ(pats.n, 1);
	strlist_free(&pats);

	/* no CA key that reads as a key: no CA line at all (trust nothing) */
	free(s.ssh.ca_public_key);
	s.ssh.ca_public_key = xstrdup("not a key");
	kh = ca_kh_render(&s, &hosts);
	TEST_CHECK(strstr(kh, "@cert-authority") == NULL);
	TEST_CHECK(!ca_trusted_for(kh, "node7"));
	free(kh);
	free(s.ssh.ca_public_key);
	free(ca_line);
}

/* The HMAC of a KRL as openssl computes it over "hpcinit-krl\nCLUSTER\n" and the KRL (from a file: it has NULs). */
static char *openssl_mac(const char *key, const char *cluster, const char *krl, size_t len)
{
	char *path = fs_rooted(root, "/krl-input"), *keyopt = xasprintf("key:%s", key), *out, *eq;
	const char *argv[] = { "openssl", "dgst", "-sha256", "-mac", "HMAC", "-macopt", keyopt, path, NULL };
	FILE *f = fopen(path, "we");
	int code = -1;

	if (!f || fprintf(f, "hpcinit-krl\n%s\n", cluster) < 0 || fwrite(krl, 1, len, f) != len || fclose(f) != 0)
		abort();
	out = run(argv, NULL, &code);
	free(keyopt);
	free(path);
	if (!out || code != 0 || !(eq = strstr(out, "= "))) {
		free(out);
		return NULL;
	}
	memmove(out, eq + 2, strlen(eq + 2) + 1);
	out[strcspn(out, "\n")] = '\0';
	return out;
}

static void test_krl_mac(void)
{
	static const char key[] = "0123456789abcdef0123456789abcdef";
	static const char krl[] = "SSHKRL\n\0\x01binary\xff part";
	struct spec s = { 0 };
	char name[] = "glo", *mac = openssl_mac(key, "glo", krl, sizeof(krl) - 1), *t;

	s.cluster.name = name;
	TEST_CHECK(mac != NULL && strlen(mac) == RECORD_HMAC_HEX);
	if (!mac)
		return;
	/* the head's MAC, as published (a line), or bare */
	t = xasprintf("%s\n", mac);
	TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), krl, sizeof(krl) - 1, t), 0);
	TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), krl, sizeof(krl) - 1, mac), 0);
	free(t);
	/* no secret: nothing to check; a secret and no MAC: not vouched for */
	TEST_INTEQ(ca_krl_vouched(&s, NULL, 0, krl, sizeof(krl) - 1, NULL), 0);
	TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), krl, sizeof(krl) - 1, NULL), -ENOKEY);
	/* one byte of the KRL changed (past a NUL: the length counts, not the string) */
	{
		char k2[sizeof(krl)];

		memcpy(k2, krl, sizeof(krl));
		k2[sizeof(krl) - 3] ^= 1;
		TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), k2, sizeof(krl) - 1, mac), -EKEYREJECTED);
	}
	/* the same KRL for another cluster, or another secret */
	{
		char other[] = "glo2";

		s.cluster.name = other;
		TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), krl, sizeof(krl) - 1, mac), -EKEYREJECTED);
		s.cluster.name = name;
	}
	TEST_INTEQ(ca_krl_vouched(&s, "another-secret-of-length", 24, krl, sizeof(krl) - 1, mac), -EKEYREJECTED);
	/* a MAC cut short, or with more after it on the line */
	t = xstrndup(mac, RECORD_HMAC_HEX - 1);
	TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), krl, sizeof(krl) - 1, t), -EKEYREJECTED);
	free(t);
	t = xasprintf("%sff", mac);
	TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), krl, sizeof(krl) - 1, t), -EKEYREJECTED);
	free(t);
	/* upper case hex is not what the head writes */
	for (char *p = mac; *p; p++)
		if (*p >= 'a' && *p <= 'f')
			*p = (char)(*p - 'a' + 'A');
	TEST_INTEQ(ca_krl_vouched(&s, key, strlen(key), krl, sizeof(krl) - 1, mac), -EKEYREJECTED);
	free(mac);
}

int main(void)
{
	char *pub = NULL, *priv = NULL, err[256] = "";

	if (!mkdtemp(root))
		return 1;
	if (sshkey_generate(KEY_ED25519, &pub, &priv, err, sizeof(err)) < 0) {
		fprintf(stderr, "hpcinit-ssh keygen: %s\n", err);
		return 1;
	}
	free(priv);
	test_known_hosts(pub);
	test_krl_mac();
	free(pub);
	test_rm_rf(root);
	TEST_EXIT();
}
