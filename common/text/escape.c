/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "escape.h"

size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

static size_t keep_len(const unsigned char *s, size_t n, bool keep_nl)
{
	uint32_t cp;
	size_t l;

	if (s[0] == '\n')
		return keep_nl;
	if (s[0] == '\t')
		return 1;
	l = utf8_seq(s, n, &cp);
	if (!l || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f) ||
	    cp == 0x2028 || cp == 0x2029 || (cp >= 0x202a && cp <= 0x202e) ||
	    (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff || cp == 0xfffe || cp == 0xffff)
		return 0;
	return l;
}

size_t esc_keep_len(const char *s, size_t n, bool keep_nl)
{
	return keep_len((const unsigned char *)s, n, keep_nl);
}

void esc_append(struct strbuf *out, const char *s, size_t n, bool keep_nl)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0;

	while (i < n) {
		size_t run = i, l;

		while (run < n && (l = keep_len(p + run, n - run, keep_nl)) > 0)
			run += l;
		if (run > i)
			sb_appendn(out, s + i, run - i);
		if (run < n) {
			sb_printf(out, "\\x%02x", p[run]);
			run++;
		}
		i = run;
	}
	if (!out->buf)
		sb_append(out, "");
}

bool esc_clean(const char *s, size_t n, bool keep_nl)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t l;

	for (size_t i = 0; i < n; i += l)
		if ((l = keep_len(p + i, n - i, keep_nl)) == 0)
			return false;
	return true;
}

void esc_copy(char *buf, size_t n, const char *s, bool keep_nl)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len;

	if (!n)
		return;
	esc_append(&sb, s, strlen(s), keep_nl);
	len = sb.len < n - 1 ? sb.len : n - 1;
	/* Do not cut a UTF-8 sequence: back up over continuation bytes. */
	if (len < sb.len)
		while (len && ((unsigned char)sb.buf[len] & 0xc0) == 0x80)
			len--;
	memcpy(buf, sb_str(&sb), len);
	buf[len] = '\0';
	sb_free(&sb);
}
