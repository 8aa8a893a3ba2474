/* SPDX-License-Identifier: MIT */
/* record: natural sort, format/parse round trip, strictness, truncation, HMAC. */
#include "config.h"

#include <errno.h>

#include "../../agent/base/record.c"

#include "sshkey.h"
#include "test.h"

static const char *const KEY1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv3e0Vn3R8wq5xwq0r1T2x1dKp0JmM0mXo1c9c1yqzA";
static const char *const KEY2 = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBP+u";

static void fill(struct peer *p)
{
	memset(p, 0, sizeof(*p));
	p->hostname = xstrdup("node7");
	p->addr = xstrdup("10.0.0.7");
	p->ipoib_addr = xstrdup("172.16.0.7");
	p->slots = 120;
	p->head = false;
	strlist_push(&p->host_keys, KEY1);
	strlist_push(&p->host_keys, KEY2);
	p->user_keys = xcalloc(1, sizeof(*p->user_keys));
	p->user_keys[0].user = xstrdup("azureuser");
	p->user_keys[0].key = xasprintf("%s azureuser@hpcinit", KEY1);
	p->n_user_keys = 1;
	p->version = xstrdup("0.1.0");
	p->boot_id = xstrdup("0f3c1e2a-1111-2222-3333-444455556666");
	p->updated = 1700000000;
}

static int parse_str(const char *t, const char *key, struct peer *p, char *err, size_t el)
{
	return record_parse(t, strlen(t), "glo", key, key ? strlen(key) : 0, p, err, el);
}

/* Replace the first occurrence of from with to; malloc'd. */
static char *replace(const char *s, const char *from, const char *to)
{
	const char *at = strstr(s, from);

	if (!at)
		return xstrdup(s);
	return xasprintf("%.*s%s%s", (int)(at - s), s, to, at + strlen(from));
}

static void test_natural(void)
{
	TEST_CHECK(natural_cmp("node2", "node10") < 0);
	TEST_CHECK(natural_cmp("node10", "node2") > 0);
	TEST_CHECK(natural_cmp("node10", "node10") == 0);
	TEST_CHECK(natural_cmp("node01", "node2") < 0);
	TEST_CHECK(natural_cmp("node01", "node1") != 0);         /* total order */
	TEST_CHECK(natural_cmp("node1", "node1a") < 0);
	TEST_CHECK(natural_cmp("a", "b") < 0);
	TEST_CHECK(natural_cmp("rack2-node10", "rack10-node1") < 0);
	TEST_CHECK(natural_cmp("10.0.0.9", "10.0.0.10") < 0);
	TEST_CHECK(natural_cmp("node", "node1") < 0);
	TEST_CHECK(natural_cmp("", "a") < 0);
	TEST_CHECK(natural_cmp("node99999999999999999999", "node100000000000000000000") < 0);
}

static void test_sort(void)
{
	struct peerset *s = xcalloc(1, sizeof(*s));
	const char *names[] = { "node10", "node2", "head9", "node1", "node100", "login1" };

	for (size_t i = 0; i < 6; i++) {
		struct peer *p = peerset_add(s);

		p->hostname = xstrdup(names[i]);
		p->addr = xstrdup("10.0.0.1");
		p->head = strcmp(names[i], "head9") == 0;
	}
	for (int i = 0; i < 40; i++) {      /* grow past a few capacity doublings */
		struct peer *p = peerset_add(s);

		p->hostname = xasprintf("zz%d", 40 - i);
		p->addr = xstrdup("10.0.0.2");
	}
	peerset_sort(s);
	TEST_INTEQ(s->n, 46);
	TEST_STREQ(s->v[0].hostname, "head9");
	TEST_STREQ(s->v[1].hostname, "login1");
	TEST_STREQ(s->v[2].hostname, "node1");
	TEST_STREQ(s->v[3].hostname, "node2");
	TEST_STREQ(s->v[4].hostname, "node10");
	TEST_STREQ(s->v[5].hostname, "node100");
	TEST_STREQ(s->v[6].hostname, "zz1");
	TEST_STREQ(s->v[45].hostname, "zz40");
	peerset_free(s);
}

static void test_hostname(void)
{
	TEST_CHECK(record_hostname_valid("node1"));
	TEST_CHECK(record_hostname_valid("vmss-hpc_000001.internal"));
	TEST_CHECK(!record_hostname_valid(""));
	TEST_CHECK(!record_hostname_valid("."));
	TEST_CHECK(!record_hostname_valid(".."));
	TEST_CHECK(!record_hostname_valid("../etc"));
	TEST_CHECK(!record_hostname_valid("a/b"));
	TEST_CHECK(!record_hostname_valid("a..b"));
	TEST_CHECK(!record_hostname_valid("-rf"));
	TEST_CHECK(!record_hostname_valid("a b"));
	TEST_CHECK(!record_hostname_valid("a:1"));
}

static void test_roundtrip(void)
{
	struct peer p, q;
	char err[160];
	char *t;

	fill(&p);
	t = record_format(&p, "glo", NULL, 0);
	TEST_CHECK(strncmp(t, "# hpcinit peer record", 21) == 0);
	TEST_CHECK(strstr(t, "\nhostname: node7\n") != NULL);
	TEST_CHECK(strstr(t, "\n  - user: azureuser\n    key: ssh-ed25519 ") != NULL);
	TEST_CHECK(strlen(t) > 4 && strcmp(t + strlen(t) - 4, "...\n") == 0);
	TEST_INTEQ(parse_str(t, NULL, &q, err, sizeof(err)), 0);
	TEST_STREQ(q.hostname, "node7");
	TEST_STREQ(q.addr, "10.0.0.7");
	TEST_STREQ(q.ipoib_addr, "172.16.0.7");
	TEST_INTEQ(q.slots, 120);
	TEST_CHECK(!q.head);
	TEST_INTEQ(q.host_keys.n, 2);
	TEST_STREQ(q.host_keys.v[1], KEY2);
	TEST_INTEQ(q.n_user_keys, 1);
	TEST_STREQ(q.user_keys[0].user, "azureuser");
	TEST_CHECK(strstr(q.user_keys[0].key, "azureuser@hpcinit") != NULL);
	TEST_STREQ(q.version, "0.1.0");
	TEST_STREQ(q.boot_id, "0f3c1e2a-1111-2222-3333-444455556666");
	TEST_INTEQ(q.updated, 1700000000);
	/* format(parse(format(p))) == format(p) */
	{
		char *t2 = record_format(&q, "glo", NULL, 0);

		TEST_STREQ(t2, t);
		free(t2);
	}
	peer_clear(&q);
	free(t);

	/* empty lists and no optional fields */
	free(p.ipoib_addr);
	p.ipoib_addr = NULL;
	free(p.boot_id);
	p.boot_id = NULL;
	strlist_free(&p.host_keys);
	free(p.user_keys[0].user);
	free(p.user_keys[0].key);
	p.n_user_keys = 0;
	p.head = true;
	t = record_format(&p, "glo", NULL, 0);
	TEST_CHECK(strstr(t, "host_keys: []\n") != NULL);
	TEST_INTEQ(parse_str(t, NULL, &q, err, sizeof(err)), 0);
	TEST_CHECK(q.head);
	TEST_CHECK(q.ipoib_addr == NULL);
	TEST_INTEQ(q.host_keys.n, 0);
	peer_clear(&q);
	free(t);
	peer_clear(&p);
}

/* The fabric identity (rdma area): round trip, validation, and records without it. */
static void test_fabric_fields(void)
{
	struct peer p, q;
	char err[160];
	char *t, *bad;

	fill(&p);
	p.fabric = xstrdup("mlx5_ib0=0c42:a103:0065:aa10,mlx5_ib1=0c42:a103:0065:aa11");
	p.pkey = xstrdup("0x800b");
	p.placement_group = xstrdup("2a6d1c3e-0f4b-4c1a-9c0d-7e5f3b2a1d00");
	t = record_format(&p, "glo", NULL, 0);
	TEST_CHECK(strstr(t, "\nfabric: mlx5_ib0=0c42:a103:0065:aa10,mlx5_ib1=0c42:a103:0065:aa11\npkey: 0x800b\n"
			     "placement_group: 2a6d1c3e-0f4b-4c1a-9c0d-7e5f3b2a1d00\n") != NULL);
	TEST_INTEQ(parse_str(t, NULL, &q, err, sizeof(err)), 0);
	TEST_STREQ(q.fabric, "mlx5_ib0=0c42:a103:0065:aa10,mlx5_ib1=0c42:a103:0065:aa11");
	TEST_STREQ(q.pkey, "0x800b");
	TEST_STREQ(q.placement_group, "2a6d1c3e-0f4b-4c1a-9c0d-7e5f3b2a1d00");
	peer_clear(&q);
	bad = replace(t, "pkey: 0x800b", "pkey: 800b");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
	TEST_CHECK(strstr(err, "pkey: expected 0x and 1 to 4 hex digits") != NULL);
	free(bad);
	bad = replace(t, "mlx5_ib1=", "mlx5_ib1/../x=");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
	TEST_CHECK(strstr(err, "fabric: expected device=GUID") != NULL);
	free(bad);
	bad = replace(t, "placement_group: 2a6d", "placement_group: $(x)");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
	free(bad);
	free(t);
	peer_clear(&p);
}

/* RFC 4231 HMAC-SHA256 test cases 1, 3, 4, 6, 7 (2 is in test_hmac); 5 truncates. */
static void rfc4231(void)
{
	static const char tc6[] = "Test Using Larger Than Block-Size Key - Hash Key First";
	static const char tc7[] = "This is a test using a larger than block-size key and a larger than "
				  "block-size data. The key needs to be hashed before being used by the HMAC "
				  "algorithm.";
	unsigned char k[131], d[50];
	char mac[RECORD_HMAC_HEX + 1];

	memset(k, 0x0b, 20);
	TEST_INTEQ(record_hmac(k, 20, "Hi There", 8, mac), 0);
	TEST_STREQ(mac, "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7");
	memset(k, 0xaa, 20);
	memset(d, 0xdd, 50);
	TEST_INTEQ(record_hmac(k, 20, d, 50, mac), 0);
	TEST_STREQ(mac, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe");
	for (int i = 0; i < 25; i++)
		k[i] = (unsigned char)(i + 1);
	memset(d, 0xcd, 50);
	TEST_INTEQ(record_hmac(k, 25, d, 50, mac), 0);
	TEST_STREQ(mac, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b");
	memset(k, 0xaa, 131);
	TEST_INTEQ(record_hmac(k, 131, tc6, strlen(tc6), mac), 0);
	TEST_STREQ(mac, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
	/* the same key again: the kept context restarts from its pads */
	TEST_INTEQ(record_hmac(k, 131, tc7, strlen(tc7), mac), 0);
	TEST_STREQ(mac, "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2");
	TEST_INTEQ(record_hmac(k, 131, tc6, strlen(tc6), mac), 0);
	TEST_STREQ(mac, "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54");
}

/* formed: written only when set, read back, covered by the HMAC, strict value, optional. */
static void test_formed(void)
{
	const char *key = "0123456789abcdef0123456789abcdef";
	char err[160], *t, *bad;
	struct peer p, q;

	fill(&p);
	t = record_format(&p, "glo", key, strlen(key));
	TEST_CHECK(strstr(t, "formed:") == NULL);       /* an older agent's record: no field */
	TEST_INTEQ(parse_str(t, key, &q, err, sizeof(err)), 0);
	TEST_CHECK(!q.formed);
	peer_clear(&q);
	/* added without the secret: the HMAC no longer matches */
	bad = replace(t, "user_keys:", "formed: true\nuser_keys:");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	free(t);
	p.formed = true;
	t = record_format(&p, "glo", key, strlen(key));
	TEST_CHECK(strstr(t, "\nupdated: 1700000000\nformed: true\nhost_keys:\n") != NULL);
	TEST_INTEQ(parse_str(t, key, &q, err, sizeof(err)), 0);
	TEST_CHECK(q.formed);
	peer_clear(&q);
	/* removed without the secret: rejected too */
	bad = replace(t, "formed: true\n", "");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	free(t);
	t = record_format(&p, "glo", NULL, 0);
	bad = replace(t, "formed: true", "formed: yes");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
	TEST_CHECK(strstr(err, "formed: expected true or false") != NULL);
	free(bad);
	bad = replace(t, "formed: true", "formed: false");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), 0);
	TEST_CHECK(!q.formed);
	peer_clear(&q);
	free(bad);
	free(t);
	peer_clear(&p);
}

/* The node's state (issue 33): round trip, covered by the HMAC, older records parse as unknown. */
static void test_state(void)
{
	const char *key = "0123456789abcdef0123456789abcdef";
	static const char *const words[] = { "unknown", "ready", "degraded", "failed" };
	char err[160], *t, *bad;
	struct peer p, q;

	fill(&p);
	t = record_format(&p, "glo", key, strlen(key));
	TEST_CHECK(strstr(t, "state:") == NULL && strstr(t, "reason:") == NULL && strstr(t, "ready_ms:") == NULL);
	TEST_INTEQ(parse_str(t, key, &q, err, sizeof(err)), 0);
	TEST_CHECK(q.state == PEER_UNKNOWN && !q.reason && q.ready_ms == 0);     /* an older agent's record */
	peer_clear(&q);
	free(t);
	for (int s = PEER_READY; s <= PEER_FAILED; s++) {
		p.state = (enum peer_state)s;
		free(p.reason);
		p.reason = s == PEER_READY ? NULL : xstrdup("mounts.nfs.absent");
		p.ready_ms = s == PEER_FAILED ? 0 : 41230;
		t = record_format(&p, "glo", key, strlen(key));
		TEST_STREQ(peer_state_name(p.state), words[s]);
		TEST_INTEQ(parse_str(t, key, &q, err, sizeof(err)), 0);
		TEST_CHECK(q.state == p.state && q.ready_ms == p.ready_ms);
		TEST_CHECK(s == PEER_READY ? q.reason == NULL : strcmp(q.reason, "mounts.nfs.absent") == 0);
		peer_clear(&q);
		free(t);
	}
	/* failed turned ready, or the reason changed, without the secret: rejected */
	p.state = PEER_FAILED;
	t = record_format(&p, "glo", key, strlen(key));
	TEST_CHECK(strstr(t, "\nstate: failed\nreason: mounts.nfs.absent\n") != NULL);
	bad = replace(t, "state: failed", "state: ready");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	bad = replace(t, "reason: mounts.nfs.absent", "reason: mounts.nfs.gone");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	bad = replace(t, "state: failed\n", "");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	free(t);
	/* strict values (no secret: the parse itself refuses) */
	t = record_format(&p, "glo", NULL, 0);
	bad = replace(t, "state: failed", "state: sick");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
	TEST_CHECK(strstr(err, "state: expected") != NULL);
	free(bad);
	bad = replace(t, "reason: mounts.nfs.absent", "reason: a/b;rm");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
	TEST_CHECK(strstr(err, "reason") != NULL);
	free(bad);
	bad = replace(t, "user_keys:", "ready_ms: -5\nuser_keys:");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
	free(bad);
	bad = replace(t, "user_keys:", "state: ready\nuser_keys:");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);     /* duplicate */
	free(bad);
	free(t);
	peer_clear(&p);
}

static void test_hmac(void)
{
	char mac[RECORD_HMAC_HEX + 1], err[160];
	struct peer p, q;
	char *t, *bad;
	const char *key = "0123456789abcdef0123456789abcdef";

	/* RFC 4231 test case 2 */
	TEST_INTEQ(record_hmac("Jefe", 4, "what do ya want for nothing?", 28, mac), 0);
	TEST_STREQ(mac, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	rfc4231();

	fill(&p);
	t = record_format(&p, "glo", key, strlen(key));
	TEST_CHECK(strstr(t, "\nhmac: ") != NULL);
	TEST_INTEQ(parse_str(t, key, &q, err, sizeof(err)), 0);
	peer_clear(&q);
	/* readable without the secret too (the hmac is just not checked) */
	TEST_INTEQ(parse_str(t, NULL, &q, err, sizeof(err)), 0);
	peer_clear(&q);
	/* another secret */
	TEST_INTEQ(parse_str(t, "another-secret-of-16+bytes", &q, err, sizeof(err)), -EKEYREJECTED);
	TEST_CHECK(strstr(err, "HMAC does not match") != NULL);
	/* one byte changed in the body */
	bad = replace(t, "slots: 120", "slots: 121");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	/* an added host key */
	bad = replace(t, "host_keys:\n", "host_keys:\n  - ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIattackerattackerattacker\n");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	/* hmac removed */
	{
		char *h = strstr(t, "hmac: ");

		bad = xasprintf("%.*s...\n", (int)(h - t), t);
		TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -ENOKEY);
		TEST_CHECK(strstr(err, "no hmac") != NULL);
		free(bad);
	}
	/* hmac not last */
	bad = replace(t, "...\n", "zzz: 1\n...\n");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EBADMSG);
	free(bad);
	/* uppercase hex is not the canonical form */
	{
		char *h = strstr(t, "hmac: ") + 6;

		bad = xstrdup(t);
		for (char *x = bad + (h - t); *x != '\n'; x++)
			if (*x >= 'a' && *x <= 'f')
				*x = (char)(*x - 'a' + 'A');
		TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EBADMSG);
		free(bad);
	}
	free(t);
	peer_clear(&p);
}

static void test_truncation(void)
{
	struct peer p, q;
	char err[160];
	char *t;
	size_t len;
	int accepted = 0, truncated = 0;

	fill(&p);
	t = record_format(&p, "glo", "0123456789abcdef", 16);
	len = strlen(t);
	/* Every proper prefix is refused; a cut before the marker says "truncated". */
	for (size_t i = 0; i < len; i++) {
		int r = record_parse(t, i, "glo", "0123456789abcdef", 16, &q, err, sizeof(err));

		if (r == 0) {
			accepted++;
			peer_clear(&q);
		}
		if (r == -ENODATA)
			truncated++;
	}
	TEST_INTEQ(accepted, 0);
	TEST_INTEQ(truncated, (long long)len);
	TEST_INTEQ(record_parse(t, len - 4, "glo", NULL, 0, &q, err, sizeof(err)), -ENODATA);
	TEST_CHECK(strstr(err, "truncated") != NULL);
	free(t);
	peer_clear(&p);
}

static void test_strict(void)
{
	struct peer p, q;
	char err[160];
	char *t, *bad;
	static const struct {
		const char *from, *to;
		int want;
		const char *msg;
	} cases[] = {
		{ "hostname: node7", "hostname: ../../etc/passwd", -EBADMSG, "invalid hostname" },
		{ "hostname: node7", "hostname: node7\nhostname: node8", -EBADMSG, "duplicate key" },
		{ "addr: 10.0.0.7", "addr: 10.0.0.300", -EBADMSG, "not an IP" },
		{ "addr: 10.0.0.7", "addr: '10.0.0.7'", -EBADMSG, "quoted" },
		{ "slots: 120", "slots: 0", -EBADMSG, "slots" },
		{ "slots: 120", "slots: 012", -EBADMSG, "slots" },
		{ "slots: 120", "slots: 99999999999999999999999", -EBADMSG, "slots" },
		{ "slots: 120", "slots: -1", -EBADMSG, "slots" },
		{ "role: compute", "role: boss", -EBADMSG, "role" },
		{ "format: 1", "format: 0", -EBADMSG, "format: expected a number" },
		{ "format: 1", "format: 01", -EBADMSG, "format: expected a number" },
		{ "format: 1", "format: one", -EBADMSG, "format: expected a number" },
		{ "format: 1", "format: 2", -EPROTONOSUPPORT, "format 2 (written by hpcinit 0.1.0) is newer" },
		{ "format: 1", "format: 10", -EPROTONOSUPPORT, "format 10 (written by hpcinit 0.1.0) is newer" },
		{ "format: 1\n", "", -EBADMSG, "format is missing" },
		{ "cluster: glo", "cluster: other", -EXDEV, "other" },
		{ "updated: 1700000000", "updated: soon", -EBADMSG, "updated" },
		{ "  - ssh-ed25519", "  - ssh-ed25519 AAAA$(reboot) x\n  - ssh-ed25519", -EBADMSG, "host key" },
		{ "  - user: azureuser", "  - user: bad/user", -EBADMSG, "user name" },
		{ "    key: ssh-ed25519", "    kee: ssh-ed25519", -EBADMSG, "without" },
		{ "role: compute", "role:compute", -EBADMSG, "space" },
		{ "role: compute", "role:  compute", -EBADMSG, "space" },
		{ "role: compute", "\trole: compute", -EBADMSG, "tab" },
		{ "role: compute", "role: compute\r", -EBADMSG, "carriage" },
		{ "role: compute", "  role: compute", -EBADMSG, "indented" },
		{ "role: compute", "role compute", -EBADMSG, "key: value" },
		{ "addr: 10.0.0.7\n", "", -EBADMSG, "addr is missing" },
		{ "...\n", "...\nmore: 1\n...\n", -EBADMSG, "after the end" },
		{ "version: 0.1.0", "version: 0.1.0 # comment", -EBADMSG, "quoted" },
	};

	for (int f = 0; f < F_COUNT; f++)
		TEST_INTEQ(field_lens[f], strlen(field_names[f]));
	fill(&p);
	t = record_format(&p, "glo", NULL, 0);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int r;

		bad = replace(t, cases[i].from, cases[i].to);
		TEST_CHECK(strcmp(bad, t) != 0);
		r = parse_str(bad, NULL, &q, err, sizeof(err));
		if (r == 0)
			peer_clear(&q);
		TEST_INTEQ(r, cases[i].want);
		if (!strstr(err, cases[i].msg))
			fprintf(stderr, "case %zu: message \"%s\" lacks \"%s\"\n", i, err, cases[i].msg);
		TEST_CHECK(strstr(err, cases[i].msg) != NULL);
		free(bad);
	}
	/* a newer agent's extra field is skipped */
	bad = replace(t, "role: compute", "role: compute\nvm_id: 1234-abcd\nzone: 2");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), 0);
	peer_clear(&q);
	free(bad);
	/* comments and blank lines are fine */
	bad = replace(t, "role: compute", "# note\n\nrole: compute");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), 0);
	peer_clear(&q);
	free(bad);
	/* NUL byte */
	bad = xstrdup(t);
	bad[10] = '\0';
	TEST_INTEQ(record_parse(bad, strlen(t), "glo", NULL, 0, &q, err, sizeof(err)), -EBADMSG);
	free(bad);
	/* too large */
	{
		size_t n = RECORD_MAX_BYTES + 10;
		char *big = xmalloc(n);

		memset(big, '#', n);
		TEST_INTEQ(record_parse(big, n, "glo", NULL, 0, &q, err, sizeof(err)), -EFBIG);
		free(big);
	}
	/* too many host keys */
	{
		struct strbuf sb = STRBUF_INIT;

		for (int i = 0; i <= RECORD_MAX_KEYS; i++)
			sb_printf(&sb, "  - %s\n", KEY1);
		bad = replace(t, "host_keys:\n", "host_keys:\n");
		free(bad);
		bad = xasprintf("%.*shost_keys:\n%s%s", (int)(strstr(t, "host_keys:") - t), t, sb_str(&sb),
				strstr(t, "user_keys:"));
		TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
		TEST_CHECK(strstr(err, "more than") != NULL);
		free(bad);
		sb_free(&sb);
	}
	/* no error buffer is fine */
	TEST_INTEQ(record_parse("x", 1, "glo", NULL, 0, &q, NULL, 0), -ENODATA);
	free(t);
	peer_clear(&p);
}

/*
 * Versions (docs/formats.md): the format this agent writes and every older
 * one read; a newer one refused as such (-EPROTONOSUPPORT, naming the format,
 * the writer's version and the formats read) before any other line is read,
 * so a field whose meaning changed is never misread as what it meant before.
 */
static void test_formats(void)
{
	/* a record exactly as release 0.1.0 (commit 1033c06) writes it */
	static const char *const rel010 =
		"# hpcinit peer record; written by hpcinit, do not edit\n"
		"format: 1\ncluster: glo\nhostname: node3\naddr: 10.0.0.3\nslots: 4\nrole: compute\n"
		"version: 0.1.0\nupdated: 1700000000\nformed: true\nstate: ready\n"
		"users: alice=10001:10001\nhost_keys: []\nuser_keys: []\n...\n";
	struct peer p, q;
	char err[320];
	char *t, *t2;

	TEST_INTEQ(RECORD_FORMAT, 1);
	TEST_CHECK(RECORD_FORMAT <= RECORD_FORMAT_READ);
	TEST_INTEQ(parse_str(rel010, NULL, &q, err, sizeof(err)), 0);
	TEST_STREQ(q.hostname, "node3");
	TEST_CHECK(q.formed && q.state == PEER_READY);
	peer_clear(&q);

	/* what this agent writes says its format first */
	fill(&p);
	t = record_format(&p, "glo", NULL, 0);
	TEST_CHECK(strncmp(strchr(t, '\n') + 1, "format: 1\n", 10) == 0);

	/* format 2 whose other lines mean what format 1 cannot read: told as newer, not as malformed */
	t2 = xstrdup("# hpcinit peer record\n\nformat: 2\ncluster: other\nhostname: ../x\nslots: many\n"
		     "version: 0.9.0\nlayout: v2\n");
	memset(&q, 0x5a, sizeof(q));
	TEST_INTEQ(parse_str(t2, NULL, &q, err, sizeof(err)), -EPROTONOSUPPORT);
	TEST_STREQ(err, "format 2 (written by hpcinit 0.9.0) is newer than hpcinit " PACKAGE_VERSION
		   " reads (formats 1 to 1)");
	TEST_INTEQ(((unsigned char *)&q)[0], 0x5a);             /* nothing handed back */
	free(t2);
	/* with the cluster secret: refused as newer, not as a bad HMAC */
	t2 = replace(t, "format: 1", "format: 3");
	TEST_INTEQ(parse_str(t2, "0123456789abcdef", &q, err, sizeof(err)), -EPROTONOSUPPORT);
	TEST_CHECK(strstr(err, "format 3 (written by hpcinit 0.1.0)") != NULL);
	free(t2);
	/* a writer's version in no shape this agent reads is left out of the message */
	t2 = replace(t, "format: 1", "format: 2");
	free(t);
	t = replace(t2, "version: 0.1.0", "version: 0.9$(reboot)");
	TEST_INTEQ(parse_str(t, NULL, &q, err, sizeof(err)), -EPROTONOSUPPORT);
	TEST_STREQ(err, "format 2 is newer than hpcinit " PACKAGE_VERSION " reads (formats 1 to 1)");
	free(t);
	free(t2);
	/* a newer format not first (no writer of this project puts it there): refused all the same */
	fill(&q);
	t = record_format(&q, "glo", NULL, 0);
	t2 = replace(t, "format: 1\n", "");
	free(t);
	t = replace(t2, "slots: 120", "slots: 120\nformat: 2");
	TEST_INTEQ(parse_str(t, NULL, &p, err, sizeof(err)), -EPROTONOSUPPORT);
	TEST_CHECK(strstr(err, "format 2 is newer") != NULL);
	free(t);
	free(t2);
	peer_clear(&q);
	peer_clear(&p);
}

/* key_span accepts exactly what sshkey_canonical (the publisher's side) produces. */
static void test_key_span(void)
{
	static const char *const lines[] = {
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv3e0Vn3R8wq5xwq0r1",
		"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAI",
		"sk-ssh-ed25519@openssh.com AAAAGnNrLXNzaC1lZDI1NTE5QG9wZW5zc2guY29t",
		"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC+/=",
		"ssh-ed25519 AAAA",                     /* base64 too short */
		"ssh-dss",                              /* no key */
		"rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQC",  /* unknown type prefix */
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAA$",  /* bad base64 char */
		"SSH-ED25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv3",
		"ssh-ed25519  AAAAC3NzaC1lZDI1NTE5AAAAIOv3", /* two spaces */
		"ssh_ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv3",
	};

	for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]); i++) {
		char *canon = sshkey_canonical(lines[i]);
		size_t k = key_span(lines[i], strlen(lines[i]));
		/* whole line accepted <=> the publisher's canonical form is the line itself */
		bool same = (k == strlen(lines[i])) == (canon && strcmp(canon, lines[i]) == 0);

		if (!same)
			fprintf(stderr, "key_span disagrees with sshkey_canonical on \"%s\"\n", lines[i]);
		TEST_CHECK(same);
		free(canon);
	}
	TEST_INTEQ(key_span("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA user@h", 44), 36);
	{
		char *k = user_key_clean("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA user@h", 43);

		TEST_STREQ(k, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA user@h");
		free(k);
		k = user_key_clean("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA odd:comment!", 49);
		TEST_STREQ(k, "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAA");
		free(k);
	}
}



/*
 * users: what the writer resolved of the spec's users (issue 35).  A record
 * without it (an older hpcinit) parses and says nothing; the field is
 * covered by the HMAC, bounded, and every name and number is checked.
 */
static void test_users(void)
{
	const char *key = "0123456789abcdef0123456789abcdef";
	static const char *const bad_values[] = {
		"alice", "alice=1", "alice=1:", "alice=:1", "=1:1", "alice=01:1", "alice=1:1,",
		",alice=1:1", "alice=1:1,,bob=2:2", "alice=4294967295:1", "alice=1:99999999999",
		"alice=-1:1", "al/ce=1:1", "alice=1:1:1", "123=1:1", "alice=1 :1", "alice=1:1;rm",
	};
	struct strbuf sb = STRBUF_INIT;
	char err[160], *t, *bad;
	struct peer p, q;
	uint32_t u = 0, g = 0;
	size_t last = 0;

	fill(&p);
	t = record_format(&p, "glo", key, strlen(key));
	TEST_CHECK(strstr(t, "users:") == NULL);
	TEST_INTEQ(parse_str(t, key, &q, err, sizeof(err)), 0);
	TEST_CHECK(q.users == NULL);            /* an older agent's record: nothing said */
	TEST_INTEQ(record_user_ids(&q, "alice", &u, &g), -ENOENT);
	peer_clear(&q);
	free(t);

	p.users = xstrdup("alice=10001:10001,bob.x=4294967294:0,c$=0:100");
	t = record_format(&p, "glo", key, strlen(key));
	TEST_CHECK(strstr(t, "\nusers: alice=10001:10001,bob.x=4294967294:0,c$=0:100\n") != NULL);
	TEST_INTEQ(parse_str(t, key, &q, err, sizeof(err)), 0);
	TEST_STREQ(q.users, p.users);
	TEST_INTEQ(record_user_ids(&q, "alice", &u, &g), 0);
	TEST_CHECK(u == 10001 && g == 10001);
	TEST_INTEQ(record_user_ids(&q, "bob.x", &u, &g), 0);
	TEST_CHECK(u == 4294967294u && g == 0);
	TEST_INTEQ(record_user_ids(&q, "c$", &u, &g), 0);
	TEST_CHECK(u == 0 && g == 100);
	TEST_INTEQ(record_user_ids(&q, "bob", &u, &g), -ENOENT);       /* a prefix is not a name */
	TEST_INTEQ(record_user_ids(&q, "alice=10001", &u, &g), -ENOENT);
	peer_clear(&q);
	/* changed without the secret: rejected */
	bad = replace(t, "alice=10001:10001", "alice=10002:10001");
	TEST_INTEQ(parse_str(bad, key, &q, err, sizeof(err)), -EKEYREJECTED);
	free(bad);
	free(t);
	/* strict values */
	t = record_format(&p, "glo", NULL, 0);
	for (size_t i = 0; i < sizeof(bad_values) / sizeof(bad_values[0]); i++) {
		char *line = xasprintf("users: %s\n", bad_values[i]);

		bad = replace(t, "users: alice=10001:10001,bob.x=4294967294:0,c$=0:100\n", line);
		if (parse_str(bad, NULL, &q, err, sizeof(err)) != -EBADMSG)
			fprintf(stderr, "users value accepted: %s\n", bad_values[i]);
		TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);
		TEST_CHECK(strstr(err, "users: expected") != NULL);
		free(line);
		free(bad);
	}
	bad = replace(t, "user_keys:", "users: bob=1:1\nuser_keys:");
	TEST_INTEQ(parse_str(bad, NULL, &q, err, sizeof(err)), -EBADMSG);     /* duplicate */
	free(bad);
	free(t);
	/* bounded: whole items up to RECORD_USERS_MAX bytes, and not one more */
	while (sb.len <= RECORD_USERS_MAX) {
		last = sb.len;
		sb_printf(&sb, "%su%05zu=1:1", sb.len ? "," : "", sb.len);
	}
	TEST_CHECK(record_users_valid(sb.buf, last));
	TEST_CHECK(!record_users_valid(sb.buf, sb.len));
	sb_free(&sb);
	peer_clear(&p);
}

int main(void)
{
	test_key_span();
	test_natural();
	test_sort();
	test_hostname();
	test_roundtrip();
	test_fabric_fields();
	test_hmac();
	test_formed();
	test_state();
	test_users();
	test_truncation();
	test_strict();
	test_formats();
	TEST_EXIT();
}
