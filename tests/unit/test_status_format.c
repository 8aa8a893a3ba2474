/* SPDX-License-Identifier: MIT */
/*
 * agent/core/status_format.c: the status document's format (docs/formats.md).
 * A document without "format" (release 0.1.0's) and one of format 1 are
 * read; a newer one, or one whose format is no number, is refused, saying
 * the format, the writer's version only when it reads as one, and the
 * formats read.  (Whole runs and hpcinit status: tests/compat/status-format.sh.)
 */
#include "config.h"

#include <string.h>

#include "../../agent/core/status_format.c"
#include "test.h"

/* Whether the JSON text's document is refused, with the reason in why. */
static bool refused(const char *text, char *why, size_t n)
{
	yaml_document_t doc;
	bool r;

	why[0] = '\0';
	if (!ydoc_load(&doc, text, strlen(text))) {
		snprintf(why, n, "(unparsable test document)");
		return true;
	}
	r = status_format_refused(&doc, yaml_document_get_root_node(&doc), why, n);
	yaml_document_delete(&doc);
	return r;
}

int main(void)
{
	char why[160];

	TEST_INTEQ(STATUS_FORMAT, 1);
	TEST_CHECK(STATUS_FORMAT <= STATUS_FORMAT_READ);
	TEST_INTEQ(status_format_of(NULL), 1);
	TEST_INTEQ(status_format_of("1"), 1);
	TEST_INTEQ(status_format_of("12"), 12);
	TEST_INTEQ(status_format_of("0"), 0);
	TEST_INTEQ(status_format_of("-1"), 0);
	TEST_INTEQ(status_format_of("one"), 0);
	TEST_INTEQ(status_format_of(""), 0);

	/* 0.1.0's document (no format) and this release's */
	TEST_CHECK(!refused("{\"hpcinit\": \"0.1.0\", \"result\": \"ready\", \"exit_code\": 0}", why, sizeof(why)));
	TEST_CHECK(!refused("{\"hpcinit\": \"0.2.0\", \"format\": 1, \"result\": \"ready\"}", why, sizeof(why)));
	/* newer: said, with its writer */
	TEST_CHECK(refused("{\"hpcinit\": \"0.9.1~rc1\", \"format\": 2, \"result\": \"ready\"}", why, sizeof(why)));
	TEST_STREQ(why, "status format 2 (written by hpcinit 0.9.1~rc1) is newer than hpcinit " PACKAGE_VERSION
		   " reads (formats 1 to 1)");
	/* a writer that does not read as a version is not shown */
	TEST_CHECK(refused("{\"hpcinit\": \"0.9\\u001b[2J\", \"format\": 3}", why, sizeof(why)));
	TEST_STREQ(why, "status format 3 is newer than hpcinit " PACKAGE_VERSION " reads (formats 1 to 1)");
	TEST_CHECK(refused("{\"format\": 7}", why, sizeof(why)));
	TEST_STREQ(why, "status format 7 is newer than hpcinit " PACKAGE_VERSION " reads (formats 1 to 1)");
	/* not a number */
	TEST_CHECK(refused("{\"hpcinit\": \"0.2.0\", \"format\": \"two\"}", why, sizeof(why)));
	TEST_STREQ(why, "its format is not a number from 1");
	TEST_CHECK(refused("{\"format\": 0}", why, sizeof(why)));
	TEST_EXIT();
}
