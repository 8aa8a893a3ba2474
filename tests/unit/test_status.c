/* SPDX-License-Identifier: MIT */
/*
 * agent/core/status.c, the parts a reader of status.json relies on: a
 * step's report written as its status-document entry and read back (what
 * an isolated step's child and the composition of status.json from the
 * parts do), bad documents, the result words, a table row escaped
 * whoever wrote the file, and the node's state from the parts with a
 * check among them (drift is not broken).  (Whole runs' documents: test_runner.c and
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

/* Parts in memory: each of the first step's reports with a status, at a time. */
struct fake_part {
	struct report reports[32];
	bool ran[32];
};

static void fake(struct part *p, struct fake_part *f, long long at_ms, enum rstatus st)
{
	size_t n = 0;

	while (module_table[n])
		n++;
	for (size_t i = 0; p->reports && i < p->n; i++)
		report_free(&p->reports[i]);
	memset(p, 0, sizeof(*p));
	memset(f, 0, sizeof(*f));
	for (size_t i = 0; i < n && i < 32; i++)
		report_init(&f->reports[i]);
	report_set(&f->reports[0], st, "x");
	f->ran[0] = true;
	p->present = true;
	p->command = "x";
	p->started_ms = at_ms;
	p->reports = f->reports;
	p->ran = f->ran;
	p->n = n < 32 ? n : 32;
}

static void test_check_part(void)
{
	struct part parts[N_PARTS];
	struct fake_part f[N_PARTS];
	struct report r;
	const char *drift = "{\"status\": \"drift\", \"summary\": \"s\"}";

	/* a check's document names ST_CHANGED "drift": read back as changed, not unreadable */
	report_init(&r);
	TEST_INTEQ(report_from_json(drift, strlen(drift), &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	report_free(&r);

	memset(parts, 0, sizeof(parts));
	fake(&parts[PART_APPLY], &f[PART_APPLY], 1000, ST_OK);
	TEST_INTEQ(current_exit(parts), 0);
	/* a later check that finds the step failed fails the node */
	fake(&parts[PART_CHECK], &f[PART_CHECK], 2000, ST_FAILED);
	TEST_INTEQ(current_exit(parts), 1);
	TEST_STREQ(part_word(&parts[PART_CHECK], PART_CHECK), "failed");
	/* an apply after it repairs it; one in the same second but a ms later too */
	fake(&parts[PART_APPLY], &f[PART_APPLY], 2001, ST_CHANGED);
	TEST_INTEQ(current_exit(parts), 0);
	/* drift only: ready, listed as drift, the verdict is the check's */
	fake(&parts[PART_CHECK], &f[PART_CHECK], 3000, ST_CHANGED);
	TEST_INTEQ(current_exit(parts), 0);
	TEST_CHECK(drifted(parts, 0));
	TEST_INTEQ(verdict_part(parts, 0), PART_CHECK);
	TEST_STREQ(part_word(&parts[PART_CHECK], PART_CHECK), "drift");
	/* drift never clears a failed apply */
	fake(&parts[PART_APPLY], &f[PART_APPLY], 2500, ST_FAILED);
	TEST_INTEQ(current_exit(parts), 1);
	TEST_INTEQ(verdict_part(parts, 0), PART_APPLY);
	/* a check that finds it in sync does */
	fake(&parts[PART_CHECK], &f[PART_CHECK], 4000, ST_OK);
	TEST_INTEQ(current_exit(parts), 0);
	TEST_CHECK(!drifted(parts, 0));
	TEST_STREQ(part_word(&parts[PART_CHECK], PART_CHECK), "in-sync");
	/* degraded found by a check: degraded */
	fake(&parts[PART_CHECK], &f[PART_CHECK], 5000, ST_DEGRADED);
	TEST_INTEQ(current_exit(parts), 3);
	/*
	 * A wall clock stepped back between runs (a node's clock was ahead and NTP put it right):
	 * the apply made under the wrong clock says it started after the refresh that followed it.
	 * The order is the boot clock's (started_boot_ms): the refresh's verdict is the node's.
	 * Seed 3703 of the fault campaign: a node's clock 262 s ahead, its apply failed (no link),
	 * then it was ready again, and its record said failed until the wall clock passed the
	 * apply's started_ms.  Parts without the boot clock (older files) go by the wall clock.
	 */
	fake(&parts[PART_CHECK], &f[PART_CHECK], 1, ST_OK);
	parts[PART_CHECK].present = false;
	fake(&parts[PART_APPLY], &f[PART_APPLY], 9000 + 262000, ST_FAILED);
	parts[PART_APPLY].boot_ms = 500000;
	fake(&parts[PART_REFRESH], &f[PART_REFRESH], 9500, ST_OK);
	parts[PART_REFRESH].boot_ms = 500400;
	TEST_INTEQ(latest_of(parts, 0, true), PART_REFRESH);
	TEST_INTEQ(current_exit(parts), 0);
	parts[PART_REFRESH].boot_ms = 0;       /* an older file: the wall clock's order */
	TEST_INTEQ(latest_of(parts, 0, true), PART_APPLY);
	TEST_INTEQ(current_exit(parts), 1);
	parts[PART_REFRESH].present = false;
	/* no apply since boot: failed, whatever the check says */
	parts[PART_APPLY].present = false;
	fake(&parts[PART_CHECK], &f[PART_CHECK], 6000, ST_OK);
	TEST_INTEQ(current_exit(parts), 1);
	for (int k = 0; k < N_PARTS; k++)
		for (size_t i = 0; parts[k].reports && i < parts[k].n; i++)
			report_free(&parts[k].reports[i]);
}

int main(void)
{
	test_check_part();
	test_round_trip();
	test_bound_round_trip();
	test_bad();
	test_words_and_rows();
	TEST_EXIT();
}
