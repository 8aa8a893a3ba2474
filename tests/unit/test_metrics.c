/* SPDX-License-Identifier: MIT */
/* agent/core/metrics.c: the Prometheus text format's escaping (the sd_notify datagram is test_notify.c). */
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

int main(void)
{
	test_prom();
	TEST_EXIT();
}
