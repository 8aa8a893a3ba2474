/* SPDX-License-Identifier: MIT */
/*
 * The head of host_keys: ca (modules/ssh/ca_head.c) on a fake root: the CA
 * key and the members' host keys made by ssh-keygen, the certs collection
 * in a real shared directory (lib/rendezvous), and what the head publishes
 * judged by OpenSSH: certificates read by ssh-keygen -L (host certificate,
 * key id, principals, the CA), revocations by ssh-keygen -Q against the
 * KRL.  The rules: sign each member's keys once; a new key while the node
 * stayed up (same boot id) is refused and the old certificate kept; a new
 * boot id gets the new key signed and the replaced one revoked; a departed
 * member's keys are revoked and its certificate removed; the KRL carries
 * the secret's HMAC; an unsafe or mismatched CA key signs nothing.
 */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../modules/ssh/ca_head.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-ca-head.XXXXXX";
static const char secret[] = "0123456789abcdef0123456789abcdef";
#define CERTS "/shared/glo/certs"

/* argv's stdout (malloc'd) and exit code; NULL when it could not run. */
static char *run(const char *const argv[], int *code)
{
	struct proc_result pr;
	char *out;

	if (proc_run(argv, NULL, NULL, 20000, &pr) < 0)
		return NULL;
	*code = pr.exit_code;
	out = xstrdup(pr.out ? pr.out : "");
	proc_result_free(&pr);
	return out;
}

/* A new ed25519 key pair at rel (under the root) by ssh-keygen; its public key "type base64". */
static char *keygen(const char *rel)
{
	char *p = fs_rooted(root, rel), *pub = xasprintf("%s.pub", p), *text = NULL, *canon;
	const char *argv[] = { "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", p, NULL };
	int code = -1;

	unlink(p);
	unlink(pub);
	free(run(argv, &code));
	if (code != 0 || fs_read_host(pub, 65536, &text, NULL) < 0)
		abort();
	canon = sshkey_canonical(text);
	free(text);
	free(pub);
	free(p);
	return canon;
}

static void member(struct khost *h, const char *id, const char *boot, const char *addr, const char *key)
{
	memset(h, 0, sizeof(*h));
	h->id = xstrdup(id);
	h->boot_id = xstrdup(boot);
	h->source = xstrdup("record");
	strlist_push(&h->names, id);
	strlist_push(&h->names, addr);
	strlist_push(&h->keys, key);
}

static void member_free(struct khost *h)
{
	free(h->id);
	free(h->boot_id);
	free(h->source);
	strlist_free(&h->names);
	strlist_free(&h->keys);
}

/* What ssh-keygen -L says of the certificate published for id (its first line written to a file). */
static char *cert_listing(const char *id)
{
	char rel[128], *text, *p, *out;
	const char *argv[] = { "ssh-keygen", "-L", "-f", NULL, NULL };
	int code = -1;

	snprintf(rel, sizeof(rel), CERTS "/%s.cert", id);
	text = test_get(root, rel);
	if (!text)
		return NULL;
	text[strcspn(text, "\n")] = '\0';
	test_put(root, "/tmp-cert.pub", text);
	p = fs_rooted(root, "/tmp-cert.pub");
	argv[3] = p;
	out = run(argv, &code);
	free(p);
	free(text);
	if (code != 0) {
		free(out);
		return NULL;
	}
	return out;
}

/* Does OpenSSH read key as revoked by the published KRL?  (ssh-keygen -Q exits 1 for a revoked key.) */
static bool revoked(const char *key)
{
	char *krl = fs_rooted(root, CERTS "/revoked.krl"), *kp = fs_rooted(root, "/q.pub"), *out;
	const char *argv[] = { "ssh-keygen", "-Q", "-f", krl, kp, NULL };
	int code = -1;
	bool yes;

	test_put(root, "/q.pub", key);
	out = run(argv, &code);
	yes = code == 1 && out && strstr(out, "REVOKED");
	free(out);
	free(kp);
	free(krl);
	return yes;
}

static bool has_finding(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0)
			return true;
	return false;
}

struct world {
	struct spec s;
	struct ctx c;
	struct rendezvous st;
	size_t nsigned, nrevoked, npruned;
};

/* One run of the head over want; its return, the report left in r. */
static int sign(struct world *w, struct report *r, const struct khosts *want, bool with_secret)
{
	struct rv_opts o = { .collection = "certs", .self = "head0", .max_bytes = 1 << 20, .create = true };
	int ret;

	report_init(r);
	if (rv_open(&w->c, r, &o, &w->st) < 0)
		return -999;
	ret = ca_head_sign(&w->c, r, want, &w->st, with_secret ? secret : NULL, with_secret ? strlen(secret) : 0,
			   &w->nsigned, &w->nrevoked, &w->npruned);
	rv_close(&w->st);
	return ret;
}

int main(void)
{
	struct world w = { 0 };
	struct report r;
	struct khost m[2];
	struct khosts want = { m, 2, 0 };
	char *ca, *k1, *k1b, *k1c, *k2, *l, *p, *text, *mac;
	char name[] = "glo", dir[] = "/shared", cakey[] = "/etc/hpcinit/ssh-ca";

	if (!mkdtemp(root) || chmod(root, 0755) < 0)
		return 1;
	w.s.cluster.name = name;
	w.s.cluster.role = ROLE_HEAD;
	w.s.discovery.present = true;
	w.s.discovery.method = DISC_SHARED;
	w.s.discovery.dir = dir;
	w.s.ssh.present = true;
	w.s.ssh.host_keys = HOSTKEYS_CA;
	w.s.ssh.ca_key_file = cakey;
	w.s.ssh.cert_validity_ms = 7ULL * 24 * 3600 * 1000;
	w.c.spec = &w.s;
	w.c.root = root;
	w.c.mode = RUN_APPLY;
	w.c.hostname = "head0";
	w.c.deadline_ms = now_ms() + 300000;
	p = fs_rooted(root, "/shared");
	mkdir(p, 0755);
	free(p);
	test_put(root, "/etc/hpcinit/.keep", "");       /* the directories ssh-keygen writes into */
	test_put(root, "/keys/.keep", "");
	ca = keygen(cakey);
	w.s.ssh.ca_public_key = ca;
	k1 = keygen("/keys/k1");
	k1b = keygen("/keys/k1b");
	k1c = keygen("/keys/k1c");
	k2 = keygen("/keys/k2");
	member(&m[0], "node1", "aaaa-0001", "198.18.3.1", k1);
	member(&m[1], "node2", "bbbb-0001", "198.18.3.2", k2);

	/* first run: both signed, as host certificates OpenSSH reads for their names */
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_INTEQ(w.nsigned, 2);
	TEST_INTEQ(r.n_findings, 0);
	report_free(&r);
	l = cert_listing("node1");
	TEST_CHECK(l != NULL);
	if (l) {
		TEST_CHECK(strstr(l, "ssh-ed25519-cert-v01@openssh.com host certificate") != NULL);
		TEST_CHECK(strstr(l, "Key ID: \"hpcinit:glo:node1:aaaa-0001\"") != NULL);
		TEST_CHECK(strstr(l, "\n                node1\n") != NULL);
		TEST_CHECK(strstr(l, "\n                198.18.3.1\n") != NULL);
		TEST_CHECK(strstr(l, "node2") == NULL);
		free(l);
	}
	text = test_get(root, CERTS "/node1.cert");
	TEST_CHECK(text && strstr(text, " node1\n") != NULL);
	free(text);
	/* the KRL is there, empty of these keys, vouched for by the secret */
	TEST_CHECK(!revoked(k1) && !revoked(k2));
	text = test_get(root, CERTS "/revoked.krl");
	mac = test_get(root, CERTS "/revoked.krl.hmac");
	TEST_CHECK(text != NULL && mac != NULL);
	if (text && mac) {
		size_t len = 0;
		char *krl = NULL, *kp = fs_rooted(root, CERTS "/revoked.krl");

		TEST_INTEQ(fs_read_host(kp, 1 << 20, &krl, &len), 0);
		TEST_INTEQ(ca_krl_vouched(&w.s, secret, strlen(secret), krl, len, mac), 0);
		TEST_INTEQ(ca_krl_vouched(&w.s, "another-secret-0123456789", 25, krl, len, mac), -EKEYREJECTED);
		free(krl);
		free(kp);
	}
	free(text);
	free(mac);

	/* check mode: says what apply would do, signs nothing (node2's key is new: still its old certificate) */
	strlist_free(&m[1].keys);
	strlist_push(&m[1].keys, k1c);
	w.c.mode = RUN_CHECK;
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_INTEQ(w.nsigned, 0);
	TEST_CHECK(strstr(sb_str(&r.details), "apply signs the members' host keys with /etc/hpcinit/ssh-ca") != NULL);
	report_free(&r);
	w.c.mode = RUN_APPLY;
	strlist_free(&m[1].keys);
	strlist_push(&m[1].keys, k2);
	l = cert_listing("node2");
	TEST_CHECK(l && strstr(l, "hpcinit:glo:node2:bbbb-0001") != NULL);
	free(l);

	/* again, nothing new: nothing signed again */
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_INTEQ(w.nsigned, 0);
	report_free(&r);

	/* node1 shows a new key under the same boot id: refused, the old certificate stays */
	strlist_free(&m[0].keys);
	strlist_push(&m[0].keys, k1b);
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_CHECK(has_finding(&r, "ssh.ca.host-key-changed"));
	TEST_INTEQ(r.status, ST_OK);   /* a member's record: a cluster finding, the head signs on */
	TEST_INTEQ(w.nsigned, 0);
	report_free(&r);
	l = cert_listing("node1");
	TEST_CHECK(l && strstr(l, "hpcinit:glo:node1:aaaa-0001") != NULL);
	free(l);
	TEST_CHECK(!revoked(k1));

	/* ... under a new boot id (rebuilt): the new key signed, the replaced one revoked */
	free(m[0].boot_id);
	m[0].boot_id = xstrdup("aaaa-0002");
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_CHECK(!has_finding(&r, "ssh.ca.host-key-changed"));
	TEST_INTEQ(w.nsigned, 1);
	TEST_CHECK(strstr(sb_str(&r.details), "node1: host key ") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "replaced (boot id aaaa-0001 -> aaaa-0002); its certificate is revoked") != NULL);
	report_free(&r);
	l = cert_listing("node1");
	TEST_CHECK(l && strstr(l, "hpcinit:glo:node1:aaaa-0002") != NULL);
	free(l);
	TEST_CHECK(revoked(k1));
	TEST_CHECK(!revoked(k1b) && !revoked(k2));

	/* a member publishing a revoked key (node1's old one) is not signed for it */
	strlist_free(&m[1].keys);
	strlist_push(&m[1].keys, k1);
	free(m[1].boot_id);
	m[1].boot_id = xstrdup("bbbb-0002");
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_CHECK(has_finding(&r, "ssh.ca.key-revoked"));
	report_free(&r);
	strlist_free(&m[1].keys);
	strlist_push(&m[1].keys, k2);
	free(m[1].boot_id);
	m[1].boot_id = xstrdup("bbbb-0001");

	/* a record publishing the CA's own key is never signed */
	strlist_push(&m[1].keys, ca);
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_CHECK(has_finding(&r, "ssh.ca.record-ca-key"));
	report_free(&r);
	strlist_free(&m[1].keys);
	strlist_push(&m[1].keys, k2);

	/* node2 departs: its keys revoked, its certificate gone */
	want.n = 1;
	TEST_INTEQ(sign(&w, &r, &want, true), 0);
	TEST_CHECK(strstr(sb_str(&r.details), "node2: no longer a member; its host keys are revoked") != NULL);
	report_free(&r);
	TEST_CHECK(test_get(root, CERTS "/node2.cert") == NULL);
	TEST_CHECK(revoked(k2));
	TEST_CHECK(revoked(k1) && !revoked(k1b));
	want.n = 2;

	/* a CA key others may read signs nothing */
	p = fs_rooted(root, cakey);
	chmod(p, 0644);
	strlist_free(&m[0].keys);
	strlist_push(&m[0].keys, k1c);
	free(m[0].boot_id);
	m[0].boot_id = xstrdup("aaaa-0003");
	TEST_CHECK(sign(&w, &r, &want, true) < 0);
	TEST_CHECK(has_finding(&r, "ssh.ca.key-unsafe"));
	TEST_INTEQ(w.nsigned, 0);
	report_free(&r);
	chmod(p, 0600);
	free(p);
	/* nor one that is not the private half of ssh.ca_public_key */
	w.s.ssh.ca_public_key = k2;
	TEST_CHECK(sign(&w, &r, &want, true) < 0);
	TEST_CHECK(has_finding(&r, "ssh.ca.key-mismatch"));
	TEST_INTEQ(w.nsigned, 0);
	report_free(&r);
	w.s.ssh.ca_public_key = ca;
	l = cert_listing("node1");
	TEST_CHECK(l && strstr(l, "hpcinit:glo:node1:aaaa-0002") != NULL);     /* untouched */
	free(l);

	member_free(&m[0]);
	member_free(&m[1]);
	free(ca);
	free(k1);
	free(k1b);
	free(k1c);
	free(k2);
	test_rm_rf(root);
	TEST_EXIT();
}
