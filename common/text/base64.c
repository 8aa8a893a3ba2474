/* SPDX-License-Identifier: MIT */
/* Base64, RFC 4648 (base64.h). */
#include "config.h"

#include <stdlib.h>

#include "base64.h"
#include "strbuf.h"

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/*
 * A character's 6 bits, or 0x40 and above for one outside the alphabet (every
 * byte that is not A-Z a-z 0-9 + /, '=' included).  A table: the etcd helper
 * decodes every value of every list and event (issue 37's per-record cost).
 */
static const unsigned char b64_rev[256] = {
#define B64_BAD 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40
	B64_BAD, B64_BAD,
	0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40, 62, 0x40, 0x40, 0x40, 63,
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 0x40, 0x40, 0x40, 0x40, 0x40, 0x40,
	0x40, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 0x40, 0x40, 0x40, 0x40, 0x40,
	0x40, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 0x40, 0x40, 0x40, 0x40, 0x40,
	B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD, B64_BAD,
#undef B64_BAD
};

char *b64_encode(const void *p, size_t n)
{
	const unsigned char *s = p;
	char *out = xmalloc(4 * ((n + 2) / 3) + 1), *o = out;

	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? s[i + 2] : 0);

		*o++ = b64_alphabet[v >> 18 & 63];
		*o++ = b64_alphabet[v >> 12 & 63];
		*o++ = i + 1 < n ? b64_alphabet[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64_alphabet[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

unsigned char *b64_decode(const char *s, size_t n, size_t *ret_len)
{
	const unsigned char *u = (const unsigned char *)s;
	unsigned char *out, *o;
	size_t pad = 0, full;

	if (!s || n % 4)
		return NULL;
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	out = o = xmalloc(n / 4 * 3 + 1);
	/* Whole groups of four, the last one apart when it is padded. */
	full = pad ? n - 4 : n;
	for (size_t i = 0; i < full; i += 4) {
		unsigned a = b64_rev[u[i]], b = b64_rev[u[i + 1]], c = b64_rev[u[i + 2]], d = b64_rev[u[i + 3]];

		if ((a | b | c | d) & 0x40) {   /* not in the alphabet, or '=' before the end */
			free(out);
			return NULL;
		}
		*o++ = (unsigned char)(a << 2 | b >> 4);
		*o++ = (unsigned char)(b << 4 | c >> 2);
		*o++ = (unsigned char)(c << 6 | d);
	}
	if (pad) {
		unsigned a = b64_rev[u[n - 4]], b = b64_rev[u[n - 3]], c = pad == 1 ? b64_rev[u[n - 2]] : 0;

		/* bits left over (b's low bits with "==", c's with "="): not the canonical encoding */
		if ((a | b | c) & 0x40 || (pad == 2 ? b & 0x0f : c & 0x03)) {
			free(out);
			return NULL;
		}
		*o++ = (unsigned char)(a << 2 | b >> 4);
		if (pad == 1)
			*o++ = (unsigned char)(b << 4 | c >> 2);
	}
	*o = '\0';
	*ret_len = (size_t)(o - out);
	return out;
}

unsigned char *b64_decode_lines(const char *s, size_t n, size_t *ret_len)
{
	char *packed = xmalloc(n + 1);
	unsigned char *out;
	size_t m = 0;

	for (size_t i = 0; s && i < n; i++)
		if (s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r')
			packed[m++] = s[i];
	out = s ? b64_decode(packed, m, ret_len) : NULL;
	free(packed);
	return out;
}
