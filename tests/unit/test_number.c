/* SPDX-License-Identifier: MIT */
/* The checked number parser (agent/text/number.c). */
#include "config.h"

#include <limits.h>

#include "../../agent/text/number.c"
#include "test.h"

int main(void)
{
	long long v = 7;
	unsigned long long u = 7;
	const char *end = NULL;

	TEST_CHECK(num_ll("0", 0, 10, &v) && v == 0);
	TEST_CHECK(num_ll("-12", LLONG_MIN, LLONG_MAX, &v) && v == -12);
	TEST_CHECK(num_ll("9223372036854775807", LLONG_MIN, LLONG_MAX, &v) && v == LLONG_MAX);
	v = 7;
	/* nothing, junk, space, '+', out of range: false, *ret untouched */
	TEST_CHECK(!num_ll(NULL, 0, 10, &v));
	TEST_CHECK(!num_ll("", 0, 10, &v));
	TEST_CHECK(!num_ll("12x", 0, 100, &v));
	TEST_CHECK(!num_ll(" 12", 0, 100, &v));
	TEST_CHECK(!num_ll("12 ", 0, 100, &v));
	TEST_CHECK(!num_ll("+12", 0, 100, &v));
	TEST_CHECK(!num_ll("-", -10, 100, &v));
	TEST_CHECK(!num_ll("11", 0, 10, &v));
	TEST_CHECK(!num_ll("-1", 0, 10, &v));
	TEST_CHECK(!num_ll("9223372036854775808", LLONG_MIN, LLONG_MAX, &v));
	TEST_INTEQ(v, 7);

	TEST_CHECK(num_ull("18446744073709551615", 10, ULLONG_MAX, &u) && u == ULLONG_MAX);
	TEST_CHECK(num_ull("644", 8, 07777, &u) && u == 0644);
	TEST_CHECK(num_ull("ff", 16, 255, &u) && u == 255);
	u = 7;
	TEST_CHECK(!num_ull("-1", 10, ULLONG_MAX, &u));     /* strtoull would wrap it */
	TEST_CHECK(!num_ull("8", 8, 07777, &u));
	TEST_CHECK(!num_ull("0x10", 16, 255, &u));
	TEST_CHECK(!num_ull("256", 16, 255, &u));
	TEST_CHECK(!num_ull("18446744073709551616", 10, ULLONG_MAX, &u));
	TEST_INTEQ((long long)u, 7);

	/* a number inside a line */
	TEST_CHECK(num_ll_prefix("123 rest", 0, 1000, &v, &end) && v == 123 && *end == ' ');
	TEST_CHECK(num_ll_prefix("-5", -10, 10, &v, &end) && v == -5 && *end == '\0');
	TEST_CHECK(!num_ll_prefix("x1", 0, 10, &v, &end));
	TEST_CHECK(!num_ll_prefix(" 1", 0, 10, &v, &end));
	TEST_CHECK(num_ull_prefix("42:x", 10, 100, &u, &end) && u == 42 && *end == ':');
	TEST_CHECK(num_ll_prefix("7", 0, 10, &v, NULL) && v == 7);

	/* decimal fractions: what strtod takes beyond them is refused */
	double d = 7;

	TEST_CHECK(num_double("1.5", 0, 10, &d) && d == 1.5);
	TEST_CHECK(num_double("-0.25", -1, 1, &d) && d == -0.25);
	TEST_CHECK(num_double("100", 0, 1e11, &d) && d == 100);
	d = 7;
	TEST_CHECK(!num_double("", 0, 10, &d));
	TEST_CHECK(!num_double(NULL, 0, 10, &d));
	TEST_CHECK(!num_double("1e3", 0, 1e9, &d));
	TEST_CHECK(!num_double("inf", 0, 1e9, &d));
	TEST_CHECK(!num_double("nan", -1e9, 1e9, &d));
	TEST_CHECK(!num_double("0x10", 0, 1e9, &d));
	TEST_CHECK(!num_double(" 1", 0, 10, &d));
	TEST_CHECK(!num_double("1.", 0, 10, &d));
	TEST_CHECK(!num_double(".5", 0, 10, &d));
	TEST_CHECK(!num_double("+1", 0, 10, &d));
	TEST_CHECK(!num_double("11", 0, 10, &d));
	TEST_CHECK(!num_double("-1", 0, 10, &d));
	TEST_CHECK(!num_double("1.5x", 0, 10, &d));
	TEST_CHECK(d == 7);
	TEST_CHECK(num_double_prefix("100 Gb/sec", 0, 1e6, &d, &end) && d == 100 && *end == ' ');
	TEST_CHECK(num_double_prefix("2.5e3", 0, 1e6, &d, &end) && d == 2.5 && *end == 'e');
	/* fields of a line: blanks between, a number ends at a blank, newline or the end */
	{
		const char *p = "kv 12\t34 -1\nrest", *q;
		long long l = 0;
		char w[8];

		u = 0;

		TEST_CHECK(num_word_field(&p, w, sizeof(w)));
		TEST_STREQ(w, "kv");
		TEST_CHECK(num_ull_field(&p, 10, ULLONG_MAX, &u) && u == 12);
		TEST_CHECK(num_ll_field(&p, LLONG_MIN, LLONG_MAX, &l) && l == 34);
		TEST_CHECK(num_ll_field(&p, -1, 5, &l) && l == -1);
		TEST_INTEQ(*p, '\n');
		/* nothing left on the line: no field, p untouched */
		q = p + 1 + 4;
		TEST_CHECK(!num_word_field(&q, w, sizeof(w)) && !num_ll_field(&q, 0, 9, &l) && *q == '\0');
		/* junk after the digits, out of range, '+', none: false, p and the value untouched */
		q = "12x 3";
		TEST_CHECK(!num_ull_field(&q, 10, 100, &u) && u == 12 && q[0] == '1');
		q = " 101";
		TEST_CHECK(!num_ull_field(&q, 10, 100, &u) && q[0] == ' ');
		q = "+5";
		TEST_CHECK(!num_ll_field(&q, 0, 9, &l));
		q = "-5";
		TEST_CHECK(!num_ull_field(&q, 10, 9, &u));
		/* base 16: /proc's "0x" allowed */
		q = "0x7ffd1a2b 0X10 ff";
		TEST_CHECK(num_ull_field(&q, 16, ULLONG_MAX, &u) && u == 0x7ffd1a2bULL);
		TEST_CHECK(num_ull_field(&q, 16, ULLONG_MAX, &u) && u == 16);
		TEST_CHECK(num_ull_field(&q, 16, ULLONG_MAX, &u) && u == 255 && *q == '\0');
		q = "0x";
		TEST_CHECK(!num_ull_field(&q, 16, ULLONG_MAX, &u));
		/* a word too long for its buffer: false, never cut (sscanf's %7s split it in two) */
		q = "12345678 x";
		TEST_CHECK(!num_word_field(&q, w, sizeof(w)) && q[0] == '1');
		q = "1234567 x";
		TEST_CHECK(num_word_field(&q, w, sizeof(w)));
		TEST_STREQ(w, "1234567");
	}
	TEST_EXIT();
}
