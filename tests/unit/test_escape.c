/* SPDX-License-Identifier: MIT */
/* escape: what reaches a terminal, syslog or status.json from elsewhere. */
#include "config.h"

#include <string.h>

#include "escape.h"
#include "hpcinit.h"
#include "json.h"
#include "test.h"

static char *esc(const char *s, bool keep_nl)
{
	struct strbuf sb = STRBUF_INIT;

	esc_append(&sb, s, strlen(s), keep_nl);
	return sb_steal(&sb);
}

#define ESC_IS(in, nl, want) do { char *_t = esc(in, nl); TEST_STREQ(_t, want); free(_t); } while (0)

static void test_escape(void)
{
	ESC_IS("plain text, tab\there", false, "plain text, tab\there");
	ESC_IS("caf\xc3\xa9 \xe2\x9c\x93", false, "caf\xc3\xa9 \xe2\x9c\x93");      /* UTF-8 kept */
	ESC_IS("a\033[31mred", false, "a\\x1b[31mred");
	ESC_IS("bell\007", false, "bell\\x07");
	ESC_IS("two\nlines", true, "two\nlines");
	ESC_IS("two\nlines", false, "two\\x0alines");
	ESC_IS("bad\xff\xfe", false, "bad\\xff\\xfe");
	ESC_IS("cut\xe2\x9c", false, "cut\\xe2\\x9c");                       /* truncated sequence */
	ESC_IS("c1\xc2\x9b" "31m", false, "c1\\xc2\\x9b31m");                 /* C1 CSI */
	ESC_IS("rtl\xe2\x80\xae", false, "rtl\\xe2\\x80\\xae");               /* bidi override */
	ESC_IS("ls\xe2\x80\xa8", false, "ls\\xe2\\x80\\xa8");                 /* line separator */
	ESC_IS("over\xc0\xaf", false, "over\\xc0\\xaf");                      /* overlong '/' */
	TEST_CHECK(esc_clean("ok \xc3\xa9", 5, false));
	TEST_CHECK(!esc_clean("\033", 1, false));
}

static void test_copy(void)
{
	char buf[8];

	esc_copy(buf, sizeof(buf), "abcdef\xc3\xa9xyz", false);  /* cut before the 2-byte char */
	TEST_STREQ(buf, "abcdef");
	esc_copy(buf, sizeof(buf), "\033", false);
	TEST_STREQ(buf, "\\x1b");
	esc_copy(buf, sizeof(buf), "\033\033", false);          /* "\x1b\x1b" does not fit: cut, still text */
	TEST_STREQ(buf, "\\x1b\\x1");
}

static void test_report_and_json(void)
{
	struct report r;
	struct strbuf js = STRBUF_INIT;

	report_init(&r);
	report_detail(&r, "record %s: rejected", "evil\033]0;x\007");
	TEST_STREQ(sb_str(&r.details), "record evil\\x1b]0;x\\x07: rejected\n");
	report_set(&r, ST_FAILED, "name %s\nnext", "\xff");
	TEST_STREQ(r.summary, "name \\xff next");
	/* a summary cut at its size stays valid UTF-8 */
	{
		char longs[400];

		memset(longs, 'a', sizeof(longs));
		memcpy(longs + 254, "\xc3\xa9\xc3\xa9", 4);
		longs[sizeof(longs) - 1] = '\0';
		report_set(&r, ST_FAILED, "%s", longs);
		TEST_INTEQ(strlen(r.summary), 254);
	}
	report_finding(&r, ST_DEGRADED, "t.x", "addr %s", "1.2.3.4\033[2J");
	TEST_STREQ(r.findings[0].text, "addr 1.2.3.4\\x1b[2J");
	report_free(&r);

	json_str(&js, "a\033b\xff\xc3\xa9\"\\\n\xe2\x80\xa8");
	TEST_STREQ(sb_str(&js), "\"a\\u001bb\\\\xff\xc3\xa9\\\"\\\\\\n\\\\xe2\\\\x80\\\\xa8\"");
	sb_free(&js);
}

int main(void)
{
	test_escape();
	test_copy();
	test_report_and_json();
	TEST_EXIT();
}
