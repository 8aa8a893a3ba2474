/* SPDX-License-Identifier: MIT */
/*
 * common/text/json.c: JSON strings and key/value pairs, always valid UTF-8
 * JSON that libyaml reads back (status.json is read by ydoc.c): what
 * escape.c would escape becomes the text \xNN.
 */
#include "config.h"

#include "../../common/text/json.c"
#include "test.h"
#include "ydoc.h"

/* s written by json_str inside {"k": ...}, read back by libyaml (ydoc.c): the value, malloc'd. */
static char *round_trip(const char *s)
{
	struct strbuf sb = STRBUF_INIT;
	yaml_document_t doc;
	char *ret = NULL;

	sb_append(&sb, "{\"k\": ");
	json_str(&sb, s);
	sb_append(&sb, "}");
	if (ydoc_load(&doc, sb_str(&sb), sb.len)) {
		const char *v = ydoc_get(&doc, yaml_document_get_root_node(&doc), "k");

		ret = v ? xstrdup(v) : NULL;
		yaml_document_delete(&doc);
	}
	sb_free(&sb);
	return ret;
}

static char *js(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	json_str(&sb, s);
	return sb_steal(&sb);
}

#define JS_IS(in, want) do { char *got_ = js(in); TEST_STREQ(got_, want); free(got_); } while (0)
#define BACK_IS(in, want) do { char *got_ = round_trip(in); TEST_STREQ(got_, want); free(got_); } while (0)

int main(void)
{
	struct strbuf sb = STRBUF_INIT;

	json_str(&sb, "q\"b\\n\nt\t\x01\x7f");
	TEST_STREQ(sb_str(&sb), "\"q\\\"b\\\\n\\nt\\t\\u0001\\u007f\"");
	sb_reset(&sb);
	json_kv_str(&sb, "a", NULL, 1);
	json_kv_int(&sb, "b", -3, 0);
	TEST_STREQ(sb_str(&sb), "\"a\": null, \"b\": -3");


	/* UTF-8 kept; what a terminal would act on, or invalid UTF-8, becomes the text \xNN */
	JS_IS("caf\xc3\xa9", "\"caf\xc3\xa9\"");
	JS_IS("a\xff", "\"a\\\\xff\"");
	JS_IS("\xc2\x85", "\"\\\\xc2\\\\x85\"");                  /* C1 control NEL */
	JS_IS("x\xe2\x80\xaey", "\"x\\\\xe2\\\\x80\\\\xaey\"");   /* right-to-left override */
	JS_IS("\xc0\xaf", "\"\\\\xc0\\\\xaf\"");                  /* overlong '/' */
	JS_IS(NULL, "\"\"");
	JS_IS("", "\"\"");
	/* pairs: a comma before all but the first */
	sb_reset(&sb);
	json_kv_str(&sb, "k", "v", 1);
	json_kv_str(&sb, "k2", "v2", 0);
	json_kv_int(&sb, "min", -9223372036854775807LL - 1, 0);
	TEST_STREQ(sb_str(&sb), "\"k\": \"v\", \"k2\": \"v2\", \"min\": -9223372036854775808");
	sb_free(&sb);
	/* read back by libyaml as written: the same text, escapes as text */
	BACK_IS("plain", "plain");
	BACK_IS("q\"b\\n\nt\t", "q\"b\\n\nt\t");
	BACK_IS("caf\xc3\xa9", "caf\xc3\xa9");
	BACK_IS("a\xff" "b", "a\\xffb");
	BACK_IS("\x01\x7f", "\x01\x7f");
	BACK_IS("key: value # not a comment", "key: value # not a comment");
	TEST_EXIT();
}
