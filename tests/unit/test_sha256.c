/* SPDX-License-Identifier: MIT */
/*
 * sha256.c: SHA-256 against FIPS 180-4's examples ("", "abc", the 448- and
 * 896-bit messages, a million 'a'), HMAC-SHA256 against RFC 4231's test
 * cases 1-7, streaming split at every offset, the keyed context reused, and
 * both against OpenSSL's SHA256() and HMAC() (this test links libcrypto) for
 * random keys and messages of 0..300 bytes and a few large ones; ct_equal.
 * Twice: the x86 SHA extensions where the CPU has them, the portable code.
 */
#include "config.h"

#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "sha256.h"
#include "strbuf.h"
#include "test.h"

static void hexof(char *out, const unsigned char *md, size_t n)
{
	for (size_t i = 0; i < n; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
}

static void digest_is(const void *data, size_t len, const char *want)
{
	unsigned char md[SHA256_LEN];
	char hex[2 * SHA256_LEN + 1];

	sha256(data, len, md);
	hexof(hex, md, sizeof(md));
	TEST_STREQ(hex, want);
}

/* FIPS 180-4's examples (NIST's "SHA256.pdf", "SHA2_Additional"). */
static void test_fips(void)
{
	char *million = xmalloc(1000000);
	struct sha256 s;
	unsigned char md[SHA256_LEN];
	char hex[2 * SHA256_LEN + 1];

	digest_is("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	digest_is("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	digest_is("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56,
		  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	digest_is("abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu",
		  112, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
	memset(million, 'a', 1000000);
	digest_is(million, 1000000, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	/* the million in odd pieces: the buffer filled and emptied across blocks */
	sha256_init(&s);
	for (size_t off = 0, step = 1; off < 1000000; off += step, step = step % 97 + 1)
		sha256_update(&s, million + off, off + step > 1000000 ? 1000000 - off : step);
	sha256_final(&s, md);
	hexof(hex, md, sizeof(md));
	TEST_STREQ(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	free(million);
}

/* RFC 4231 section 4: test cases 1-7 (case 5's MAC truncated to 128 bits, as the RFC gives it). */
static void test_rfc4231(void)
{
	static const struct {
		unsigned char kbyte;
		size_t klen;
		unsigned char dbyte;    /* 0: data is the text */
		size_t dlen;
		const char *text, *mac;
	} cases[] = {
		{ 0x0b, 20, 0, 0, "Hi There", "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7" },
		{ 0, 0, 0, 0, "what do ya want for nothing?",
		  "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843" },
		{ 0xaa, 20, 0xdd, 50, NULL, "773ea91e36800e46854db8ebd09181a72959098b3ef8c122d9635514ced565fe" },
		{ 1, 25, 0xcd, 50, NULL, "82558a389a443c0ea4cc819899f2083a85f0faa3e578f8077a2e3ff46729665b" },
		{ 0x0c, 20, 0, 0, "Test With Truncation", "a3b6167473100ee06e0c796c2955552b" },
		{ 0xaa, 131, 0, 0, "Test Using Larger Than Block-Size Key - Hash Key First",
		  "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54" },
		{ 0xaa, 131, 0, 0, "This is a test using a larger than block-size key and a larger than "
		  "block-size data. The key needs to be hashed before being used by the HMAC algorithm.",
		  "9b09ffa71b942fcb27635fbcd5b0e944bfdc63644f0713938a7f51535c3a35e2" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		unsigned char key[131], data[50], md[SHA256_LEN];
		char hex[2 * SHA256_LEN + 1];
		const void *k = key, *d = data;
		size_t kl = cases[i].klen, dl = cases[i].dlen;
		struct hmac_sha256 h;

		if (i == 1) {
			k = "Jefe";
			kl = 4;
		} else if (i == 3) {
			for (size_t j = 0; j < kl; j++)
				key[j] = (unsigned char)(j + 1);        /* 0x01..0x19 */
		} else {
			memset(key, cases[i].kbyte, kl);
		}
		if (cases[i].text) {
			d = cases[i].text;
			dl = strlen(cases[i].text);
		} else {
			memset(data, cases[i].dbyte, dl);
		}
		hmac_sha256(k, kl, d, dl, md);
		hexof(hex, md, sizeof(md));
		hex[strlen(cases[i].mac)] = '\0';
		TEST_STREQ(hex, cases[i].mac);
		/* the kept context: twice, the second from the key's pads (reset by final) */
		hmac_sha256_init(&h, k, kl);
		for (int round = 0; round < 2; round++) {
			hmac_sha256_update(&h, d, dl);
			hmac_sha256_final(&h, md);
			hexof(hex, md, sizeof(md));
			hex[strlen(cases[i].mac)] = '\0';
			TEST_STREQ(hex, cases[i].mac);
		}
		/* reset drops a message half-fed */
		hmac_sha256_update(&h, "junk", 4);
		hmac_sha256_reset(&h);
		hmac_sha256_update(&h, d, dl);
		hmac_sha256_final(&h, md);
		hexof(hex, md, sizeof(md));
		hex[strlen(cases[i].mac)] = '\0';
		TEST_STREQ(hex, cases[i].mac);
		hmac_sha256_wipe(&h);
		{
			static const struct hmac_sha256 zero;

			TEST_CHECK(memcmp(&h, &zero, sizeof(h)) == 0);
		}
	}
}

/* A message fed in two (and three) pieces, split at every offset, hashes as in one. */
static void test_streaming(void)
{
	unsigned char msg[300], whole[SHA256_LEN], md[SHA256_LEN], mwhole[SHA256_LEN];
	struct hmac_sha256 h;

	for (size_t i = 0; i < sizeof(msg); i++)
		msg[i] = (unsigned char)(i * 31 + 7);
	sha256(msg, sizeof(msg), whole);
	hmac_sha256("key", 3, msg, sizeof(msg), mwhole);
	hmac_sha256_init(&h, "key", 3);
	for (size_t a = 0; a <= sizeof(msg); a++) {
		struct sha256 s;

		sha256_init(&s);
		sha256_update(&s, msg, a);
		sha256_update(&s, msg + a, sizeof(msg) - a);
		sha256_final(&s, md);
		TEST_CHECK(memcmp(md, whole, sizeof(md)) == 0);
		hmac_sha256_update(&h, msg, a);
		hmac_sha256_update(&h, msg + a, sizeof(msg) - a);
		hmac_sha256_final(&h, md);
		TEST_CHECK(memcmp(md, mwhole, sizeof(md)) == 0);
		for (size_t b = a; b <= sizeof(msg); b += 13) {
			sha256_init(&s);
			sha256_update(&s, msg, a);
			sha256_update(&s, msg + a, b - a);
			sha256_update(&s, msg + b, sizeof(msg) - b);
			sha256_final(&s, md);
			TEST_CHECK(memcmp(md, whole, sizeof(md)) == 0);
		}
	}
	hmac_sha256_wipe(&h);
}

/* xorshift64: the same "random" inputs every run, so a failure repeats. */
static uint64_t rnd_state = 0x9e3779b97f4a7c15ULL;

static uint64_t rnd(void)
{
	rnd_state ^= rnd_state << 13;
	rnd_state ^= rnd_state >> 7;
	rnd_state ^= rnd_state << 17;
	return rnd_state;
}

static void fill(unsigned char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (unsigned char)rnd();
}

/* One message against OpenSSL: SHA256() and HMAC(EVP_sha256()). */
static void against_openssl(const unsigned char *key, size_t kl, const unsigned char *msg, size_t ml)
{
	unsigned char ours[SHA256_LEN], theirs[EVP_MAX_MD_SIZE];
	unsigned int tl = 0;

	sha256(msg, ml, ours);
	SHA256(msg, ml, theirs);
	TEST_CHECK(memcmp(ours, theirs, SHA256_LEN) == 0);
	hmac_sha256(key, kl, msg, ml, ours);
	TEST_CHECK(HMAC(EVP_sha256(), key, (int)kl, msg, ml, theirs, &tl) != NULL);
	TEST_INTEQ(tl, SHA256_LEN);
	TEST_CHECK(memcmp(ours, theirs, SHA256_LEN) == 0);
}

static void test_openssl(void)
{
	static const size_t large[] = { 4095, 4096, 65536, 65537, 1 << 20 };
	unsigned char key[300], msg[300];
	unsigned char *big = xmalloc(1 << 20);
	int before = test_failures;

	for (size_t ml = 0; ml <= sizeof(msg); ml++)
		for (int r = 0; r < 3; r++) {
			size_t kl = (size_t)(rnd() % (sizeof(key) + 1));

			fill(key, kl);
			fill(msg, ml);
			against_openssl(key, kl, msg, ml);
		}
	for (size_t kl = 0; kl <= sizeof(key); kl++) {
		fill(key, kl);
		fill(msg, 100);
		against_openssl(key, kl, msg, 100);
	}
	fill(big, 1 << 20);
	fill(key, 32);
	for (size_t i = 0; i < sizeof(large) / sizeof(large[0]); i++)
		against_openssl(key, 32, big, large[i]);
	free(big);
	TEST_INTEQ(test_failures, before);
}

static void test_ct_equal(void)
{
	unsigned char a[64], b[64];

	fill(a, sizeof(a));
	memcpy(b, a, sizeof(b));
	TEST_CHECK(ct_equal(a, b, sizeof(a)));
	TEST_CHECK(ct_equal(a, b, 0));
	b[0] ^= 1;
	TEST_CHECK(!ct_equal(a, b, sizeof(a)));
	TEST_CHECK(ct_equal(a + 1, b + 1, sizeof(a) - 1));
	b[0] ^= 1;
	b[63] ^= 0x80;
	TEST_CHECK(!ct_equal(a, b, sizeof(a)));
	TEST_CHECK(ct_equal(a, b, 63));
}

int main(void)
{
	/* each twice where the CPU has the SHA extensions: with them, and the portable code */
	for (int portable = 0; portable < 2; portable++) {
		sha256_force_portable(portable);
		printf("# %s\n", sha256_accelerated() ? "x86 SHA extensions" : "portable C");
		test_fips();
		test_rfc4231();
		test_streaming();
		test_openssl();
	}
	test_ct_equal();
	TEST_EXIT();
}
