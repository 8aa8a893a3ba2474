/* SPDX-License-Identifier: MIT */
/* Base64, RFC 4648 (base64.h). */
#include "config.h"

#include <stdlib.h>

#include "base64.h"
#include "strbuf.h"

static const char b64_alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int b64_value(char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

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
	unsigned char *out;
	unsigned acc = 0, bits = 0;
	size_t len = 0, pad = 0;

	if (!s || n % 4)
		return NULL;
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	out = xmalloc(n / 4 * 3 + 1);
	for (size_t i = 0; i < n - pad; i++) {
		int v = b64_value(s[i]);

		if (v < 0) {            /* not in the alphabet, or '=' before the end */
			free(out);
			return NULL;
		}
		acc = (acc << 6) | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[len++] = (unsigned char)(acc >> bits);
		}
		acc &= (1u << bits) - 1;
	}
	if (acc) {                      /* bits left over: not the canonical encoding */
		free(out);
		return NULL;
	}
	out[len] = '\0';
	*ret_len = len;
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
