/* SPDX-License-Identifier: MIT */
/* common/base/report.c: a step's report: status, summary, details, changed files, findings, their bounds. */
#include "config.h"

#include "../../common/base/report.c"
#include "test.h"

int main(void)
{
	struct report r;

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
	/* cluster findings: shown and counted, never this node's status (issue 33, item 2) */
	report_init(&r);
	report_cluster(&r, "discovery.record.truncated", "record %s: truncated; rejected", "evil");
	TEST_INTEQ(r.status, ST_OK);
	TEST_INTEQ(r.n_findings, 1);
	TEST_CHECK(r.findings[0].cluster);
	TEST_STREQ(finding_kind_name(&r.findings[0]), "cluster");
	TEST_INTEQ(report_problems(&r), 0);
	TEST_CHECK(!report_summarize(&r));
	TEST_CHECK(strstr(sb_str(&r.details), "record evil: truncated; rejected\n") != NULL);
	report_finding(&r, ST_DEGRADED, "discovery.expect", "2 of 3 peers");
	TEST_INTEQ(r.status, ST_DEGRADED);
	TEST_INTEQ(report_problems(&r), 1);
	TEST_CHECK(report_summarize(&r));
	TEST_STREQ(r.summary, "2 of 3 peers");
	report_free(&r);
	{
		enum rstatus sev = ST_OK;
		bool cl = false;

		TEST_CHECK(finding_kind_from_name("cluster", &sev, &cl) && cl && sev == ST_DEGRADED);
		TEST_CHECK(finding_kind_from_name("failed", &sev, &cl) && !cl && sev == ST_FAILED);
		TEST_CHECK(!finding_kind_from_name("bogus", &sev, &cl));
	}
	/* 30,000 cluster findings: the count of those not kept is a cluster finding too */
	report_init(&r);
	for (int i = 0; i < 30000; i++)
		report_cluster(&r, "discovery.record.rejected", "record junk%d.rec: rejected", i);
	TEST_INTEQ(r.status, ST_OK);
	TEST_CHECK(r.findings[REPORT_MAX_FINDINGS].cluster);
	{
		struct report dst;

		report_init(&dst);
		report_take_findings(&dst, &r);
		TEST_INTEQ(dst.status, ST_OK);
		TEST_CHECK(dst.findings[0].cluster && dst.findings[REPORT_MAX_FINDINGS].cluster);
		report_free(&dst);
	}
	report_free(&r);
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_APPLY), "changed");
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_CHECK), "drift");
	TEST_STREQ(rstatus_name(ST_CHANGED, RUN_PLAN), "would change");
	TEST_EXIT();
}
