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
