/* SPDX-License-Identifier: MIT */
/*
 * agent/core/metrics.c: the Prometheus text format's escaping, and the
 * findings as series: one a tag, counted (the sd_notify datagram is test_notify.c).
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcinit.h"
#include "metrics.h"
#include "test.h"

static void test_prom(void)
{
	struct strbuf sb = STRBUF_INIT;

	prom_label(&sb, "tag", "a\\b\"c\nd", 1);
	prom_label(&sb, "x", "caf\xc3\xa9\t", 0);
	TEST_STREQ(sb_str(&sb), "tag=\"a\\\\b\\\"c\\nd\",x=\"caf\\\\xc3\\\\xa9\\\\x09\"");
	sb_reset(&sb);
	prom_head(&sb, "hpcinit_x", "gauge", "one\\two\nthree \"q\"");
	TEST_STREQ(sb_str(&sb), "# HELP hpcinit_x one\\\\two\\nthree \"q\"\n# TYPE hpcinit_x gauge\n");
	sb_free(&sb);
}

/* Two findings with one tag are one series, counted; cluster findings apart; the bound's entry counts what it stands for. */
static void test_findings(void)
{
	struct strbuf sb = STRBUF_INIT;
	struct report r;

	report_init(&r);
	report_finding(&r, ST_DEGRADED, "memlock.pam.inactive", "sshd");
	report_finding(&r, ST_OK, "memlock.pam.active", "login");
	report_finding(&r, ST_DEGRADED, "memlock.pam.inactive", "login");
	report_finding(&r, ST_FAILED, "memlock.pam.inactive", "other");
	report_cluster(&r, "discovery.record.truncated", "node7");
	report_cluster(&r, "discovery.record.truncated", "node8");
	report_cluster(&r, "discovery.record.unsigned", "node9");
	metrics_findings(&sb, "hpcinit_finding", "memlock", &r, false);
	TEST_STREQ(sb_str(&sb),
		   "hpcinit_finding{step=\"memlock\",severity=\"degraded\",tag=\"memlock.pam.inactive\"} 2\n"
		   "hpcinit_finding{step=\"memlock\",severity=\"failed\",tag=\"memlock.pam.inactive\"} 1\n");
	sb_reset(&sb);
	metrics_findings(&sb, "hpcinit_cluster_findings", "discovery", &r, true);
	TEST_STREQ(sb_str(&sb),
		   "hpcinit_cluster_findings{step=\"discovery\",tag=\"discovery.record.truncated\"} 2\n"
		   "hpcinit_cluster_findings{step=\"discovery\",tag=\"discovery.record.unsigned\"} 1\n");
	report_free(&r);

	/* past the bound: the last entry stands for the findings not kept */
	report_init(&r);
	for (int i = 0; i < 1000 + 5; i++)       /* report.c keeps 1000 */
		report_cluster(&r, "discovery.record.rejected", "node%d", i);
	sb_reset(&sb);
	metrics_findings(&sb, "hpcinit_cluster_findings", "discovery", &r, true);
	TEST_STREQ(sb_str(&sb),
		   "hpcinit_cluster_findings{step=\"discovery\",tag=\"discovery.record.rejected\"} 1000\n"
		   "hpcinit_cluster_findings{step=\"discovery\",tag=\"report.more-findings\"} 5\n");
	report_free(&r);
	sb_free(&sb);
}

int main(void)
{
	test_prom();
	test_findings();
	TEST_EXIT();
}
