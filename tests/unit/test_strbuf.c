/* SPDX-License-Identifier: MIT */
/* common/text/strbuf.c: growing strings (JSON output is test_json.c, reports test_report.c). */
#include "config.h"

#include "../../common/text/strbuf.c"
#include "test.h"

int main(void)
{
	struct strbuf sb = STRBUF_INIT;
	char *s;

	TEST_STREQ(sb_str(&sb), "");
	sb_append(&sb, "abc");
	sb_printf(&sb, "-%d-%s", 42, "x");
	TEST_STREQ(sb_str(&sb), "abc-42-x");
	TEST_INTEQ(sb.len, 8);
	for (int i = 0; i < 1000; i++)
		sb_append(&sb, "0123456789");
	TEST_INTEQ(sb.len, 10008);
	sb_reset(&sb);
	TEST_STREQ(sb_str(&sb), "");
	sb_appendn(&sb, "a\0b", 3);
	TEST_INTEQ(sb.len, 3);
	s = sb_steal(&sb);
	TEST_CHECK(s[0] == 'a' && s[1] == '\0' && s[2] == 'b');
	free(s);
	TEST_CHECK(sb.buf == NULL);
	/* sb_append_u64 writes what "%llu" writes */
	{
		static const unsigned long long vs[] = { 0, 7, 9, 10, 99, 100, 4294967295ull, 4294967296ull,
							 18446744073709551615ull };

		for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
			char want[32];

			snprintf(want, sizeof(want), "x%llu", vs[i]);
			sb_reset(&sb);
			sb_append(&sb, "x");
			sb_append_u64(&sb, vs[i]);
			TEST_STREQ(sb_str(&sb), want);
			TEST_INTEQ(sb.len, strlen(want));
		}
		sb_free(&sb);
	}
	s = xasprintf("%s=%u", "k", 7u);
	TEST_STREQ(s, "k=7");
	free(s);
	/* sb_printf formats into the free space in one pass when the text fits,
	 * twice when it does not: both give the same text, at every boundary. */
	for (size_t pre = 0; pre < 300; pre += 37)
		for (int w = 0; w < 700; w += 61) {
			struct strbuf t = STRBUF_INIT;
			char *want;

			for (size_t k = 0; k < pre; k++)
				sb_appendn(&t, "p", 1);
			sb_printf(&t, "<%*d|%s>", w, w, "tail");
			want = xmalloc(pre + (size_t)w + 16);
			memset(want, 'p', pre);
			snprintf(want + pre, (size_t)w + 16, "<%*d|%s>", w, w, "tail");
			TEST_STREQ(sb_str(&t), want);
			TEST_INTEQ(t.len, strlen(want));
			free(want);
			sb_free(&t);
		}

	sb_free(&sb);
	TEST_EXIT();
}
