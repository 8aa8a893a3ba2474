/* SPDX-License-Identifier: MIT */
/*
 * hmac.c: record_hmac against RFC 4231's HMAC-SHA256 vectors, the kept
 * context switching keys, and several threads at once, each with its own
 * context (freed by record_thread_end: valgrind and ASan count).
 */
#include "config.h"

#include <pthread.h>
#include <string.h>

#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "record.h"
#include "strbuf.h"
#include "test.h"

/* RFC 4231, test cases 1 and 2 */
static const char case1_mac[] = "b0344c61d8db38535ca8afceaf0bf12b881dc200c9833da726e9376c2e32cff7";
static const char case2_mac[] = "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843";

static void case1(char out[RECORD_HMAC_HEX + 1])
{
	unsigned char key[20];

	memset(key, 0x0b, sizeof(key));
	TEST_INTEQ(record_hmac(key, sizeof(key), "Hi There", 8, out), 0);
}

static void case2(char out[RECORD_HMAC_HEX + 1])
{
	static const char data[] = "what do ya want for nothing?";

	TEST_INTEQ(record_hmac("Jefe", 4, data, strlen(data), out), 0);
}

/* The cached HMAC equals a plain HMAC() for short, block-sized and long keys. */
static void test_hmac_cache(void)
{
	static const size_t lens[] = { 1, 16, 63, 64, 65, 200, 4096 };
	char *key = xmalloc(4096), mac[RECORD_HMAC_HEX + 1], want[RECORD_HMAC_HEX + 1];
	const char *data = "the quick brown fox";

	for (size_t i = 0; i < 4096; i++)
		key[i] = (char)(i * 7 + 3);
	for (int round = 0; round < 2; round++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
			unsigned char md[32];
			unsigned int ml = 0;

			HMAC(EVP_sha256(), key, (int)lens[i], (const unsigned char *)data, strlen(data), md, &ml);
			for (unsigned int k = 0; k < ml; k++)
				snprintf(want + 2 * k, 3, "%02x", md[k]);
			TEST_INTEQ(record_hmac(key, lens[i], data, strlen(data), mac), 0);
			TEST_STREQ(mac, want);
		}
	free(key);
}

struct worker {
	int which;
	unsigned wrong;
};

/* Many HMACs with one key, on a thread of its own beside another with the other key. */
static void *work(void *arg)
{
	struct worker *w = arg;
	char out[RECORD_HMAC_HEX + 1];

	for (int i = 0; i < 2000; i++) {
		if (w->which == 1)
			case1(out);
		else
			case2(out);
		if (strcmp(out, w->which == 1 ? case1_mac : case2_mac) != 0)
			w->wrong++;
	}
	record_thread_end();
	return NULL;
}

int main(void)
{
	char out[RECORD_HMAC_HEX + 1];
	struct worker w[4] = { { 1, 0 }, { 2, 0 }, { 1, 0 }, { 2, 0 } };
	pthread_t t[4];

	/* the vectors, and the kept context switching keys and back */
	case1(out);
	TEST_STREQ(out, case1_mac);
	case2(out);
	TEST_STREQ(out, case2_mac);
	case1(out);
	TEST_STREQ(out, case1_mac);
	case1(out);     /* same key again: the kept context, re-initialised without the key */
	TEST_STREQ(out, case1_mac);

	/* four threads, two keys: no thread's context is another's */
	for (int i = 0; i < 4; i++)
		TEST_INTEQ(pthread_create(&t[i], NULL, work, &w[i]), 0);
	for (int i = 0; i < 4; i++) {
		pthread_join(t[i], NULL);
		TEST_INTEQ(w[i].wrong, 0);
	}
	/* this thread's context is still its own (case 1's key) after the others ended */
	case2(out);
	TEST_STREQ(out, case2_mac);
	record_thread_end();
	case1(out);     /* a context made again after it was freed */
	TEST_STREQ(out, case1_mac);
	record_thread_end();
	test_hmac_cache();
	record_thread_end();
	TEST_EXIT();
}
