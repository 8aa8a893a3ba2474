/* SPDX-License-Identifier: MIT */
/* Base64 (common/text/base64.c): RFC 4648's vectors both ways, and what decoding refuses. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../../common/text/base64.c"
#include "test.h"

/* s decodes to want (n bytes); encoding want gives s back */
static void round_trip(const char *want, size_t n, const char *s)
{
	size_t len = 99;
	unsigned char *d = b64_decode(s, strlen(s), &len);
	char *e = b64_encode(want, n);

	TEST_CHECK(d != NULL);
	TEST_INTEQ((long long)len, (long long)n);
	TEST_CHECK(d && memcmp(d, want, n) == 0 && d[n] == '\0');
	TEST_STREQ(e, s);
	free(d);
	free(e);
}

static void refused(const char *s)
{
	size_t len = 99;
	unsigned char *d = b64_decode(s, strlen(s), &len);

	if (d)
		fprintf(stderr, "base64 '%s' was accepted\n", s);
	TEST_CHECK(d == NULL);
	TEST_INTEQ((long long)len, 99);
	free(d);
}

/* The decoder as it was (one character at a time): what the table-driven one must equal. */
static int ref_value(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	return ch == '+' ? 62 : ch == '/' ? 63 : -1;
}

static unsigned char *ref_decode(const unsigned char *s, size_t n, size_t *ret_len)
{
	unsigned char *out;
	unsigned acc = 0, bits = 0;
	size_t len = 0, pad = 0;

	if (n % 4)
		return NULL;
	while (pad < 2 && pad < n && s[n - 1 - pad] == '=')
		pad++;
	out = xmalloc(n / 4 * 3 + 1);
	for (size_t i = 0; i < n - pad; i++) {
		int v = ref_value(s[i]);

		if (v < 0) {
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
	if (acc) {
		free(out);
		return NULL;
	}
	*ret_len = len;
	return out;
}

/*
 * Random strings over the alphabet, '=', and a few bytes outside it (often one
 * character off a valid encoding, so the padded tail's canonical check is hit):
 * accepted exactly when the reference accepts, to the same bytes.  Returns the
 * number of strings accepted.
 */
static unsigned cross_check(unsigned rounds)
{
	static const char pool[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/==-_ \n\x80\xff";
	unsigned seed = 12345, accepted = 0, mismatches = 0;

	for (unsigned r = 0; r < rounds; r++) {
		unsigned char raw[64], s[96];
		size_t n, len = 0, rlen = 0;
		unsigned char *d, *want;
		char *e;

		/* a valid encoding of random bytes, then (most rounds) one character changed */
		seed = seed * 1103515245u + 12345u;
		n = (seed >> 16) % sizeof(raw);
		for (size_t i = 0; i < n; i++) {
			seed = seed * 1103515245u + 12345u;
			raw[i] = (unsigned char)(seed >> 16);
		}
		e = b64_encode(raw, n);
		n = strlen(e);
		memcpy(s, e, n);
		free(e);
		seed = seed * 1103515245u + 12345u;
		if (n && (seed >> 16) % 4) {
			size_t at = (seed >> 8) % n;

			seed = seed * 1103515245u + 12345u;
			s[at] = (unsigned char)pool[(seed >> 16) % (sizeof(pool) - 1)];
		}
		d = b64_decode((const char *)s, n, &len);
		want = ref_decode(s, n, &rlen);
		if (!!d != !!want || (d && (len != rlen || memcmp(d, want, len) != 0 || d[len] != '\0')))
			mismatches++;
		accepted += d != NULL;
		free(d);
		free(want);
	}
	TEST_INTEQ(mismatches, 0);
	return accepted;
}

int main(void)
{
	static const unsigned char bin[] = { 0xfb, 0xff, 0x00, 0x3e };
	size_t len = 0;
	unsigned char *d;

	/* RFC 4648 section 10 */
	round_trip("", 0, "");
	round_trip("f", 1, "Zg==");
	round_trip("fo", 2, "Zm8=");
	round_trip("foo", 3, "Zm9v");
	round_trip("foob", 4, "Zm9vYg==");
	round_trip("fooba", 5, "Zm9vYmE=");
	round_trip("foobar", 6, "Zm9vYmFy");
	/* the two last characters of the alphabet, and a NUL byte inside */
	round_trip((const char *)bin, sizeof(bin), "+/8APg==");

	refused("Zg");                  /* unpadded: the length is no multiple of 4 */
	refused("Zm9");
	refused("Zg=");
	refused("Zg===");               /* three '=' */
	refused("====");
	refused("Zg==Zg==");            /* '=' before the end */
	refused("Zm=v");
	refused("Zh==");                /* bits left over: not the canonical "Zg==" */
	refused("Zm9=");                /* the same for one '=' */
	refused("Zm9v YmFy");           /* a space */
	refused("Zm9v\nYmFy");
	refused("Zm9-YmFy");            /* base64url's alphabet is not this one */
	refused("Zm9_YmFy");
	refused("Zm9v\x80mFy");
	TEST_CHECK(b64_decode(NULL, 0, &len) == NULL);
	/* every bit left over in a padded tail, each refused; the canonical one accepted */
	for (int v = 0; v < 64; v++) {
		char t2[5] = { 'Z', "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[v], '=', '=', 0 };
		char t1[5] = { 'Z', 'm', "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"[v], '=', 0 };
		unsigned char *a = b64_decode(t2, 4, &len), *b = b64_decode(t1, 4, &len);

		TEST_CHECK(!a == !!(v & 0x0f));
		TEST_CHECK(!b == !!(v & 0x03));
		free(a);
		free(b);
	}
	{
		/* against the one-character-at-a-time decoder: both accepted and refused strings seen */
		unsigned acc = cross_check(200000);

		TEST_CHECK(acc > 20000 && acc < 180000);
	}

	/* PEM bodies: white space between lines is skipped, nothing else is */
	d = b64_decode_lines("Zm9v\nYmFy\r\n", 11, &len);
	TEST_CHECK(d && len == 6 && memcmp(d, "foobar", 6) == 0);
	free(d);
	d = b64_decode_lines(" Zm9v\tYg==\n", 11, &len);
	TEST_CHECK(d && len == 4 && memcmp(d, "foob", 4) == 0);
	free(d);
	TEST_CHECK(b64_decode_lines("Zm9v\nYg=\n", 9, &len) == NULL);
	TEST_CHECK(b64_decode_lines("Zm9v.YmFy", 9, &len) == NULL);
	TEST_EXIT();
}
