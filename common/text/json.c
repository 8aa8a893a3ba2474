/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>

#include <string.h>

#include "escape.h"
#include "json.h"

void json_str(struct strbuf *sb, const char *s)
{
	sb_append(sb, "\"");
	if (!s)
		s = "";
	/* Always valid UTF-8 JSON: what escape.c would escape becomes the text
	 * \xNN (an escaped backslash), so readers see the same as the terminal. */
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (*p >= 0x80) {
			size_t l = esc_keep_len((const char *)p, strlen((const char *)p), true);

			if (l) {
				sb_appendn(sb, p, l);
				p += l - 1;
			} else {
				sb_printf(sb, "\\\\x%02x", *p);
			}
			continue;
		}
		switch (*p) {
		case '"':
			sb_append(sb, "\\\"");
			break;
		case '\\':
			sb_append(sb, "\\\\");
			break;
		case '\n':
			sb_append(sb, "\\n");
			break;
		case '\t':
			sb_append(sb, "\\t");
			break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				sb_printf(sb, "\\u%04x", *p);
			else
				sb_appendn(sb, p, 1);
		}
	}
	sb_append(sb, "\"");
}

void json_kv_str(struct strbuf *sb, const char *key, const char *val, int first)
{
	if (!first)
		sb_append(sb, ", ");
	json_str(sb, key);
	sb_append(sb, ": ");
	if (val)
		json_str(sb, val);
	else
		sb_append(sb, "null");
}

void json_kv_int(struct strbuf *sb, const char *key, long long val, int first)
{
	if (!first)
		sb_append(sb, ", ");
	json_str(sb, key);
	sb_printf(sb, ": %lld", val);
}
