/* SPDX-License-Identifier: MIT */
/* strbuf, json escaping, report helpers. */
#include "config.h"

#include "../../agent/text/strbuf.c"
#include "../../agent/text/json.c"
#include "../../agent/base/report.c"
#include "test.h"

int main(void)
{
	struct strbuf sb = STRBUF_INIT;
	struct report r;
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

	json_str(&sb, "q\"b\\n\nt\t\x01\x7f");
	TEST_STREQ(sb_str(&sb), "\"q\\\"b\\\\n\\nt\\t\\u0001\\u007f\"");
	sb_reset(&sb);
	json_kv_str(&sb, "a", NULL, 1);
	json_kv_int(&sb, "b", -3, 0);
	TEST_STREQ(sb_str(&sb), "\"a\": null, \"b\": -3");
	sb_free(&sb);

	report_init(&r);
	TEST_INTEQ(r.status, ST_OK);
	report_raise(&r, ST_CHANGED);
	report_raise(&r, ST_OK);
	TEST_INTEQ(r.status, ST_CHANGED);
	report_raise(&r, ST_FAILED);
	report_raise(&r, ST_DEGRADED);
	TEST_INTEQ(r.status, ST_FAILED);
	report_set(&r, ST_OK, "line one\nline two");
	TEST_STREQ(r.summary, "line one line two");
	report_detail(&r, "d%d", 1);
	report_detail(&r, "d2\n");
	TEST_STREQ(sb_str(&r.details), "d1\nd2\n");
	report_changed(&r, "/a");
	report_changed(&r, "/a");
	report_changed(&r, "/b");
	TEST_INTEQ(r.changed.n, 2);
	report_free(&r);

	/* details and findings are bounded; "... N more" counts the rest */
	report_init(&r);
	for (int i = 0; i < 30000; i++)
		report_finding(&r, i == 29999 ? ST_FAILED : ST_DEGRADED, "t.junk", "record junk%d.rec: rejected", i);
	report_detail(&r, "two\nlines");
	{
		const char *d = sb_str(&r.details), *last = strrchr(d, '\n');
		size_t lines = 0;

		for (const char *p = d; *p; p++)
			lines += *p == '\n';
		TEST_INTEQ(lines, REPORT_MAX_LINES + 1);
		TEST_CHECK(r.details.len <= REPORT_MAX_BYTES + 200);
		TEST_CHECK(strstr(d, "record junk0.rec: rejected\n") == d);
		TEST_CHECK(strstr(d, "record junk999.rec: rejected\n") != NULL);
		TEST_CHECK(strstr(d, "record junk1000.rec") == NULL);
		while (last > d && last[-1] != '\n')
			last--;
		TEST_STREQ(last, "... 29002 more detail lines not kept (a step keeps its first 1000 lines, 128 KiB)\n");
	}
	TEST_INTEQ(r.n_findings, REPORT_MAX_FINDINGS + 1);
	TEST_STREQ(r.findings[REPORT_MAX_FINDINGS - 1].text, "record junk999.rec: rejected");
	TEST_STREQ(r.findings[REPORT_MAX_FINDINGS].tag, "report.more-findings");
	TEST_STREQ(r.findings[REPORT_MAX_FINDINGS].text, "... 29000 more findings not kept (a step keeps at most 1000)");
	TEST_INTEQ(r.findings[REPORT_MAX_FINDINGS].sev, ST_FAILED);     /* the worst of those not kept */
	TEST_INTEQ(r.status, ST_FAILED);
	/* taken into another report (discovery's notes): the count goes along */
	{
		struct report dst;

		report_init(&dst);
		report_detail(&dst, "before");
		report_take_findings(&dst, &r);
		TEST_INTEQ(dst.n_findings, REPORT_MAX_FINDINGS + 1);
		TEST_STREQ(dst.findings[REPORT_MAX_FINDINGS].text,
			   "... 29000 more findings not kept (a step keeps at most 1000)");
		TEST_INTEQ(dst.findings[REPORT_MAX_FINDINGS].sev, ST_FAILED);
		/* "before" and 999 findings kept; 1 + 29000 lines counted */
		TEST_CHECK(strstr(sb_str(&dst.details), "\n... 29001 more detail lines not kept") != NULL);
		report_free(&dst);
	}
	report_free(&r);
	/* the byte bound: long lines */
	report_init(&r);
	for (int i = 0; i < 100; i++)
		report_detail(&r, "%02d %04000d", i, 0);
	TEST_CHECK(r.details.len <= REPORT_MAX_BYTES + 200);
	TEST_CHECK(strstr(sb_str(&r.details), "... 68 more detail lines not kept") != NULL);
	report_free(&r);
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_APPLY), "changed");
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_CHECK), "drift");
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_PLAN), "would change");
	TEST_EXIT();
}
