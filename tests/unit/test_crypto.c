/* SPDX-License-Identifier: MIT */
/*
 * crypto.c: libcrypto is not in the process until the first crypto() call
 * (this test does not link it: a run that signs nothing never maps it), then
 * it is, once, and the functions looked up are OpenSSL's: SHA-256 of "abc"
 * (FIPS 180-2's vector) and record_hmac's RFC 4231 case 2 through it.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "crypto.h"
#include "record.h"
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

static void test_lazy(void)
{
	static const unsigned char abc_sha256[32] = {
		0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea, 0x41, 0x41, 0x40, 0xde, 0x5d, 0xae, 0x22, 0x23,
		0xb0, 0x03, 0x61, 0xa3, 0x96, 0x17, 0x7a, 0x9c, 0xb4, 0x10, 0xff, 0x61, 0xf2, 0x00, 0x15, 0xad,
	};
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	const struct crypto_api *c;

	TEST_CHECK(!mapped());
	TEST_CHECK(!crypto_loaded());
	c = crypto();
	TEST_CHECK(c != NULL);
	TEST_CHECK(crypto_loaded());
	TEST_CHECK(mapped());
	TEST_CHECK(crypto() == c);
	TEST_INTEQ(c->EVP_Digest("abc", 3, md, &n, c->EVP_sha256(), NULL), 1);
	TEST_INTEQ((int)n, 32);
	TEST_CHECK(memcmp(md, abc_sha256, 32) == 0);
	TEST_INTEQ(c->CRYPTO_memcmp("same", "same", 4), 0);
	TEST_CHECK(c->CRYPTO_memcmp("same", "sane", 4) != 0);
}

static void test_hmac_through_it(void)
{
	static const char data[] = "what do ya want for nothing?";
	char out[RECORD_HMAC_HEX + 1];

	TEST_INTEQ(record_hmac("Jefe", 4, data, strlen(data), out), 0);
	TEST_STREQ(out, "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843");
	record_thread_end();
}

int main(void)
{
	test_lazy();
	test_hmac_through_it();
	TEST_EXIT();
}
