/* SPDX-License-Identifier: MIT */
/*
 * crypto.c: libcrypto is not in the process until the first crypto() call
 * (this test does not link it: a run that signs nothing never maps it), and
 * signing or checking a record (record_hmac, RFC 4231's case 2) or
 * fingerprinting an SSH key (as ssh-keygen -l printed it) does not call it
 * (sha256.c); then crypto() loads it, once, and the functions looked up are
 * OpenSSL's: a PEM EC key read through them.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "crypto.h"
#include "record.h"
#include "sshkey.h"
#include "strbuf.h"
#include "test.h"

/* Is a libcrypto mapped into this process (/proc/self/maps)? */
static bool mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[512];
	bool found = false;

	TEST_CHECK(f != NULL);
	while (f && fgets(line, sizeof(line), f))
		if (strstr(line, "/libcrypto.so"))
			found = true;
	if (f)
		fclose(f);
	return found;
}

/* The record path and the fingerprints: sha256.c, libcrypto never loaded. */
static void test_records_without_it(void)
{
	static const char data[] = "what do ya want for nothing?";
	char out[RECORD_HMAC_HEX + 1];
	char *fp;

	TEST_INTEQ(record_hmac("Jefe", 4, data, strlen(data), out), 0);
	TEST_STREQ(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	record_thread_end();
	/* ssh-keygen -lf of this key printed SHA256:V+OTYJfPYlyTx0Ub8SgZy9Ul2mhJ0PZbmxVi4pT5q5U */
	fp = sshkey_fingerprint("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGxhfsNH3vZQJHuUdQRFmagR6p3B9wYCp3HQF/UBd4u2");
	TEST_STREQ(fp, "ssh-ed25519 SHA256:V+OTYJfPYlyTx0Ub8SgZy9Ul2mhJ0PZbmxVi4pT5q5U");
	free(fp);
	TEST_CHECK(!crypto_loaded());
	TEST_CHECK(!mapped());
}

static void test_lazy(void)
{
	static const char pem[] =
		"-----BEGIN PRIVATE KEY-----\n"
		"MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg6k3tO/SKLRxvUxMb\n"
		"wuCIvpDZ3BV72NDMJymN0PAuqDChRANCAARlVDM1zwlGjQCcPiDatxm5o9xQlM/3\n"
		"wq+3IfzvTOaikrA0jCbhpTOe/+3dTvT+hqC6wBI69uHQHfHDC6V0C0pD\n"
		"-----END PRIVATE KEY-----\n";
	const struct crypto_api *c;
	EVP_PKEY *pk = NULL;
	BIO *bio;

	TEST_CHECK(!mapped());
	TEST_CHECK(!crypto_loaded());
	c = crypto();
	TEST_CHECK(c != NULL);
	TEST_CHECK(crypto_loaded());
	TEST_CHECK(mapped());
	TEST_CHECK(crypto() == c);
	bio = c->BIO_new_mem_buf(pem, (int)strlen(pem));
	TEST_CHECK(bio != NULL);
	if (bio)
		pk = c->PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
	TEST_CHECK(pk != NULL);
	if (pk)
		TEST_INTEQ(c->EVP_PKEY_get_base_id(pk), EVP_PKEY_EC);
	c->EVP_PKEY_free(pk);
	c->BIO_free(bio);
}

int main(void)
{
	test_records_without_it();
	test_lazy();
	TEST_EXIT();
}
