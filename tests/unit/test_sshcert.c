/* SPDX-License-Identifier: MIT */
/*
 * modules/ssh/cert.c: certificates made by the real ssh-keygen are read
 * back field by field (PROTOCOL.certkeys); damaged ones are refused.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../../modules/ssh/cert.c"
#include "fsutil.h"
#include "proc.h"
#include "test.h"

static char dir[] = "/tmp/test-sshcert.XXXXXX";

static void run(const char *const argv[])
{
	struct proc_result pr = { 0 };

	TEST_INTEQ(proc_run(argv, NULL, NULL, 20000, &pr), 0);
	TEST_INTEQ(pr.exit_code, 0);
	if (pr.exit_code)
		fprintf(stderr, "%s\n", pr.err);
	proc_result_free(&pr);
}

static char *slurp(const char *name)
{
	char *path = xasprintf("%s/%s", dir, name), *text = NULL;

	TEST_INTEQ(fs_read_host(path, 1 << 20, &text, NULL), 0);
	free(path);
	return text;
}

static void keygen(const char *name, const char *type)
{
	char *path = xasprintf("%s/%s", dir, name);
	const char *argv[] = { "ssh-keygen", "-q", "-t", type, "-N", "", "-C", name, "-f", path, NULL };

	run(argv);
	free(path);
}

static void sign(const char *ca, const char *key, const char *principals, bool host)
{
	char *cap = xasprintf("%s/%s", dir, ca), *kp = xasprintf("%s/%s.pub", dir, key);
	const char *argv[] = { "ssh-keygen", "-q", "-s", cap, host ? "-h" : "-q", "-I", "node7 id",
			       "-n", principals, "-V", "20300101000000:20300102000000", kp, NULL };

	run(argv);
	free(cap);
	free(kp);
}

static void check_type(const char *type)
{
	struct sshcert ct;
	char *cert, *pub, *capub, *canon_pub, *canon_ca;
	int r;

	keygen("host", type);
	sign("ca", "host", "node7,node7.example,10.0.0.7", true);
	cert = slurp("host-cert.pub");
	pub = slurp("host.pub");
	capub = slurp("ca.pub");
	canon_pub = sshkey_canonical(pub);
	canon_ca = sshkey_canonical(capub);
	r = sshcert_parse(cert, &ct);
	TEST_INTEQ(r, 0);
	if (r == 0) {
		TEST_CHECK(strstr(ct.type, "-cert-v01@openssh.com") != NULL);
		TEST_STREQ(ct.key, canon_pub);
		TEST_STREQ(ct.ca_key, canon_ca);
		TEST_INTEQ(ct.cert_type, 2);
		TEST_STREQ(ct.key_id, "node7 id");
		TEST_INTEQ(ct.principals.n, 3);
		if (ct.principals.n == 3) {
			TEST_STREQ(ct.principals.v[0], "node7");
			TEST_STREQ(ct.principals.v[2], "10.0.0.7");
		}
		TEST_CHECK(ct.valid_after > 1893456000ull - 86400 && ct.valid_after < 1893456000ull + 86400);
		TEST_INTEQ(ct.valid_before - ct.valid_after, 86400);
	}
	sshcert_free(&ct);
	/* A plain key is not a certificate; a truncated or altered one is refused. */
	TEST_INTEQ(sshcert_parse(pub, &ct), -EBADMSG);
	/* sshkey_canonical takes both; sshkey_is_cert tells them apart (pinned refuses one). */
	{
		char *cc = sshkey_canonical(cert);

		TEST_CHECK(cc != NULL);
		TEST_CHECK(cc && sshkey_is_cert(cc));
		TEST_CHECK(!sshkey_is_cert(canon_pub));
		TEST_CHECK(!sshkey_is_cert(canon_ca));
		TEST_CHECK(!sshkey_is_cert("-cert-v01@openssh.com AAAA"));
		free(cc);
	}
	{
		size_t n = strcspn(cert, " ") + 1 + 40;
		char *cut = xstrndup(cert, n);

		TEST_INTEQ(sshcert_parse(cut, &ct), -EBADMSG);
		free(cut);
		/* claim another certificate type than the blob holds */
		cut = xasprintf("%s%s", strncmp(cert, "ssh-rsa", 7) == 0 ? "ssh-ed25519-cert-v01@openssh.com" :
				"ssh-rsa-cert-v01@openssh.com", cert + strcspn(cert, " "));
		TEST_INTEQ(sshcert_parse(cut, &ct), -EBADMSG);
		free(cut);
	}
	free(cert);
	free(pub);
	free(capub);
	free(canon_pub);
	free(canon_ca);
	for (const char *const *f = (const char *const[]){ "host", "host.pub", "host-cert.pub", NULL };
	     *f; f++) {
		char *p = xasprintf("%s/%s", dir, *f);

		unlink(p);
		free(p);
	}
}

/* A user certificate reads as type 1. */
static void check_user_cert(void)
{
	struct sshcert ct;
	char *cert;

	keygen("host", "ed25519");
	sign("ca", "host", "alice", false);
	cert = slurp("host-cert.pub");
	TEST_INTEQ(sshcert_parse(cert, &ct), 0);
	TEST_INTEQ(ct.cert_type, 1);
	sshcert_free(&ct);
	free(cert);
}

int main(void)
{
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	keygen("ca", "ed25519");
	check_type("ed25519");
	check_type("ecdsa");
	check_type("rsa");
	check_user_cert();
	{
		const char *argv[] = { "rm", "-rf", dir, NULL };

		run(argv);
	}
	TEST_EXIT();
}
