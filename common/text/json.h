/* SPDX-License-Identifier: MIT */
/* Minimal JSON output (status files, --json).  Strings are escaped so libyaml can read them back. */
#ifndef HPCINIT_JSON_H
#define HPCINIT_JSON_H

#include "strbuf.h"

void json_str(struct strbuf *sb, const char *s);
/* "key": "value" with a leading comma when !first */
void json_kv_str(struct strbuf *sb, const char *key, const char *val, int first);
void json_kv_int(struct strbuf *sb, const char *key, long long val, int first);

#endif
