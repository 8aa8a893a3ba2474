/* SPDX-License-Identifier: MIT */
/* strbuf, json escaping, report helpers. */
#include "config.h"

#include "../../agent/strbuf.c"
#include "../../agent/json.c"
#include "../../agent/report.c"
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
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_APPLY), "changed");
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_CHECK), "drift");
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_PLAN), "would change");
	TEST_EXIT();
}
