/* SPDX-License-Identifier: MIT */
/*
 * agent/core/status.c, the parts a reader of status.json relies on: a
 * step's report written as its status-document entry and read back (what
 * an isolated step's child and the composition of status.json from the
 * parts do), bad documents, the result words, and a table row escaped
 * whoever wrote the file.  (Whole runs' documents: test_runner.c and
 * tests/system/core-status.sh.)
 */
#include "config.h"

#include <stdio.h>

#include "../../agent/core/status.c"
#include "test.h"

#ifndef REPORT_MAX_FINDINGS
#define REPORT_MAX_FINDINGS 1000        /* report.c's bound */
#endif

static void test_round_trip(void)
{
	struct report r, back;
	char *j;

	report_init(&r);
	report_finding(&r, ST_OK, "x.info", "said \"so\"");
	report_finding(&r, ST_DEGRADED, "x.slow", "tab\there, caf\xc3\xa9");
	report_finding(&r, ST_CHANGED, "x.drift", "line one\nline two");
	report_detail(&r, "a detail with \\ and \"quotes\"");
	report_detail(&r, "an escape \033[2J and a bad byte \xff");
	report_changed(&r, "/etc/hosts");
	report_changed(&r, "/etc/ssh/ssh_known_hosts");
	report_set(&r, ST_DEGRADED, "slow: %d ms", 1234);
	r.duration_ms = 987;
	j = report_to_json("nfs", &r);
	TEST_CHECK(strstr(j, "\"name\": \"nfs\"") != NULL);

	report_init(&back);
	TEST_INTEQ(report_from_json(j, strlen(j), &back), 0);
	TEST_INTEQ(back.status, ST_DEGRADED);
	TEST_STREQ(back.summary, "slow: 1234 ms");
	TEST_INTEQ(back.duration_ms, 987);
	TEST_INTEQ(back.n_findings, 3);
	if (back.n_findings == 3) {
		TEST_INTEQ(back.findings[0].sev, ST_OK);
		TEST_STREQ(back.findings[0].tag, "x.info");
		TEST_STREQ(back.findings[0].text, "said \"so\"");
		TEST_INTEQ(back.findings[1].sev, ST_DEGRADED);
		TEST_STREQ(back.findings[1].text, "tab\there, caf\xc3\xa9");
		TEST_INTEQ(back.findings[2].sev, ST_CHANGED);
	}
	/* details come back line by line; what could act on a terminal stays escaped text */
	TEST_CHECK(strstr(sb_str(&back.details), "a detail with \\ and \"quotes\"\n") != NULL);
	TEST_CHECK(strstr(sb_str(&back.details), "an escape \\x1b[2J and a bad byte \\xff\n") != NULL);
	TEST_CHECK(strchr(sb_str(&back.details), '\033') == NULL);
	TEST_INTEQ(back.details_lines, r.details_lines);
	TEST_INTEQ(back.changed.n, 2);
	if (back.changed.n == 2)
		TEST_STREQ(back.changed.v[1], "/etc/ssh/ssh_known_hosts");
	free(j);
	report_free(&back);
	report_free(&r);
}

/* A report over the findings bound: the count of those not kept survives the trip. */
static void test_bound_round_trip(void)
{
	struct report r, back;
	char *j;

	report_init(&r);
	for (int i = 0; i < REPORT_MAX_FINDINGS + 25; i++)
		report_finding(&r, ST_DEGRADED, "x.many", "finding %d", i);
	j = report_to_json("discovery", &r);
	report_init(&back);
	TEST_INTEQ(report_from_json(j, strlen(j), &back), 0);
	TEST_INTEQ(back.n_findings, r.n_findings);
	TEST_INTEQ(back.findings_dropped, 25);
	/* and it goes on counting when more come */
	report_finding(&back, ST_DEGRADED, "x.many", "one more");
	TEST_INTEQ(back.findings_dropped, 26);
	free(j);
	report_free(&back);
	report_free(&r);
}

static void test_bad(void)
{
	static const char *const bad[] = { "{\"status\": \"ok\"", "[1, 2]", "just text", "" };
	struct report r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		report_init(&r);
		report_set(&r, ST_CHANGED, "kept");
		TEST_INTEQ(report_from_json(bad[i], strlen(bad[i]), &r), -EBADMSG);
		TEST_STREQ(r.summary, "kept");          /* nothing changed */
		report_free(&r);
	}
	/* a status nobody knows is not ok; findings of an unknown severity are left out */
	report_init(&r);
	{
		const char *t = "{\"status\": \"grand\", \"summary\": \"s\", \"findings\": "
				"[{\"severity\": \"catastrophic\", \"tag\": \"x\", \"text\": \"y\"}, "
				"{\"severity\": \"degraded\", \"tag\": \"z\", \"text\": \"w\"}], "
				"\"duration_ms\": -5, \"details\": [\"d\", {\"not\": \"a line\"}]}";

		TEST_INTEQ(report_from_json(t, strlen(t), &r), 0);
	}
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_INTEQ(r.n_findings, 1);
	if (r.n_findings == 1)
		TEST_STREQ(r.findings[0].tag, "z");
	TEST_INTEQ(r.duration_ms, 0);
	TEST_STREQ(sb_str(&r.details), "d\n");
	report_free(&r);
}

static void test_words_and_rows(void)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f;

	TEST_STREQ(status_result_word(0), "ready");
	TEST_STREQ(status_result_word(3), "degraded");
	TEST_STREQ(status_result_word(1), "failed");
	TEST_STREQ(status_result_word(2), "failed");   /* anything else is not ready */
	f = open_memstream(&out, &len);
	status_print_row(f, "nfs", "ok", "12ms", "mounted \033]0;evil\007 /scratch\nx");
	fclose(f);
	TEST_STREQ(out, "nfs        ok                12ms  mounted \\x1b]0;evil\\x07 /scratch\\x0ax\n");
	free(out);
}

int main(void)
{
	test_round_trip();
	test_bound_round_trip();
	test_bad();
	test_words_and_rows();
	TEST_EXIT();
}
