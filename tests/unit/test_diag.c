/* SPDX-License-Identifier: MIT */
/* diag.c: suggestions; the places, carets and passes run through test_spec. */
#include "config.h"

#include "../../common/loader/diag.c"
#include "test.h"

static void test_suggest(void)
{
	static const char *const names[] = { "version", "cluster", "memlock", "kernel", "rdma",
					     "nfs", "discovery", "ssh", "hostfile", "mpi" };

	TEST_STREQ(suggest("memlok", names, 10), "memlock");
	TEST_STREQ(suggest("Kernel", names, 10), "kernel");
	TEST_STREQ(suggest("discover", names, 10), "discovery");
	TEST_STREQ(suggest("hostfiles", names, 10), "hostfile");
	TEST_STREQ(suggest("disc", names, 10), "discovery");       /* a prefix */
	TEST_CHECK(suggest("zzz", names, 10) == NULL);
	TEST_CHECK(suggest("x", names, 10) == NULL);
	TEST_INTEQ(levenshtein("kitten", "sitting"), 3);
	TEST_INTEQ(levenshtein("", "abc"), 3);
	TEST_INTEQ(levenshtein("abc", "abc"), 0);
}


static void test_quote(void)
{
	struct strbuf sb = STRBUF_INIT;
	uint32_t cp = 0;

	sb_quote(&sb, "a\"b\\c\n\x01\xc3\xa9\xff");
	TEST_STREQ(sb_str(&sb), "\"a\\\"b\\\\c\\n\\x01\xc3\xa9\\xff\"");
	sb_free(&sb);
	TEST_INTEQ(utf8_seq((const unsigned char *)"\xc3\xa9", 2, &cp), 2);
	TEST_INTEQ(cp, 0xe9);
	TEST_INTEQ(utf8_seq((const unsigned char *)"\xc0\x80", 2, &cp), 0);     /* overlong */
	TEST_INTEQ(utf8_seq((const unsigned char *)"\xed\xa0\x80", 3, &cp), 0); /* surrogate */
	TEST_INTEQ(utf8_seq((const unsigned char *)"\xe2\x82", 2, &cp), 0);     /* cut short */
}

int main(void)
{
	test_suggest();
	test_quote();
	TEST_EXIT();
}
