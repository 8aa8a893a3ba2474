/* SPDX-License-Identifier: MIT */
/* units.c: the one parser for sizes, durations and plain numbers. */
#include "config.h"

#include <errno.h>

#include "../../common/loader/units.c"
#include "test.h"

static void test_size(void)
{
	uint64_t v = 0;

	TEST_INTEQ(parse_size("0", &v), 0);
	TEST_INTEQ(v, 0);
	TEST_INTEQ(parse_size("4096", &v), 0);
	TEST_INTEQ(v, 4096);
	TEST_INTEQ(parse_size("64K", &v), 0);
	TEST_INTEQ(v, 65536);
	TEST_INTEQ(parse_size("64k", &v), 0);
	TEST_INTEQ(v, 65536);
	TEST_INTEQ(parse_size("64KiB", &v), 0);
	TEST_INTEQ(v, 65536);
	TEST_INTEQ(parse_size("512M", &v), 0);
	TEST_INTEQ(v, 512ULL << 20);
	TEST_INTEQ(parse_size("64G", &v), 0);
	TEST_INTEQ(v, 64ULL << 30);
	TEST_INTEQ(parse_size("2GiB", &v), 0);
	TEST_INTEQ(v, 2ULL << 30);
	TEST_INTEQ(parse_size("3T", &v), 0);
	TEST_INTEQ(v, 3ULL << 40);
	TEST_INTEQ(parse_size("1TiB", &v), 0);
	TEST_INTEQ(v, 1ULL << 40);
	TEST_INTEQ(parse_size("18446744073709551615", &v), 0);
	TEST_CHECK(v == UINT64_MAX);
	TEST_INTEQ(parse_size("64Q", &v), -EINVAL);
	TEST_INTEQ(parse_size("", &v), -EINVAL);
	TEST_INTEQ(parse_size("G", &v), -EINVAL);
	TEST_INTEQ(parse_size("-1", &v), -EINVAL);
	TEST_INTEQ(parse_size("1.5G", &v), -EINVAL);
	TEST_INTEQ(parse_size("64 G", &v), -EINVAL);
	TEST_INTEQ(parse_size("64KB", &v), -EINVAL);
	TEST_INTEQ(parse_size("unlimited", &v), -EINVAL);
	TEST_INTEQ(parse_size("18446744073709551616", &v), -ERANGE);
	TEST_INTEQ(parse_size("16777216T", &v), -ERANGE);
	TEST_INTEQ(parse_size("99999999999999999999999Q", &v), -EINVAL);


	/* P and E, and nothing near 2^64 wraps: 16E is 2^64, one past the top. */
	TEST_INTEQ(parse_size("1P", &v), 0);
	TEST_CHECK(v == 1ULL << 50);
	TEST_INTEQ(parse_size("15E", &v), 0);
	TEST_CHECK(v == 15ULL << 60);
	TEST_INTEQ(parse_size("1EiB", &v), 0);
	TEST_CHECK(v == 1ULL << 60);
	TEST_INTEQ(parse_size("16E", &v), -ERANGE);
	TEST_INTEQ(parse_size("16384P", &v), -ERANGE);
	TEST_INTEQ(parse_size("17179869184T", &v), -ERANGE);
	TEST_INTEQ(parse_size("18446744073709551615K", &v), -ERANGE);
}

static void test_duration(void)
{
	uint64_t v = 0;

	TEST_INTEQ(parse_duration("500ms", &v), 0);
	TEST_INTEQ(v, 500);
	TEST_INTEQ(parse_duration("10s", &v), 0);
	TEST_INTEQ(v, 10000);
	TEST_INTEQ(parse_duration("5m", &v), 0);
	TEST_INTEQ(v, 300000);
	TEST_INTEQ(parse_duration("1h", &v), 0);
	TEST_INTEQ(v, 3600000);
	TEST_INTEQ(parse_duration("0s", &v), 0);
	TEST_INTEQ(v, 0);
	TEST_INTEQ(parse_duration("10", &v), -EDOM);
	TEST_INTEQ(parse_duration("10x", &v), -EINVAL);
	TEST_INTEQ(parse_duration("1.5s", &v), -EINVAL);
	TEST_INTEQ(parse_duration("s", &v), -EINVAL);
	TEST_INTEQ(parse_duration("", &v), -EINVAL);
	TEST_INTEQ(parse_duration("10 s", &v), -EINVAL);
	TEST_INTEQ(parse_duration("10S", &v), -EINVAL);
	TEST_INTEQ(parse_duration("99999999999999999999h", &v), -ERANGE);
	TEST_INTEQ(parse_duration("9999999999999999h", &v), -ERANGE);

	TEST_INTEQ(parse_duration("+10s", &v), -EINVAL);
	TEST_INTEQ(parse_duration(" 10s", &v), -EINVAL);
	TEST_INTEQ(parse_duration("-1s", &v), -EINVAL);
	TEST_INTEQ(parse_duration("18446744073709551615ms", &v), 0);
	TEST_CHECK(v == UINT64_MAX);
	TEST_INTEQ(parse_duration("18446744073709551616ms", &v), -ERANGE);
	TEST_INTEQ(parse_duration("18446744073709552s", &v), -ERANGE);
}

/* The printed form is exact: each value prints as its text and parses back to itself. */
static void check_format(void (*print)(struct strbuf *, uint64_t),
			 int (*parse)(const char *, uint64_t *),
			 const uint64_t *vals, const char *const *texts, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct strbuf sb = STRBUF_INIT;
		uint64_t back = ~vals[i];

		print(&sb, vals[i]);
		TEST_STREQ(sb_str(&sb), texts[i]);
		TEST_INTEQ(parse(sb_str(&sb), &back), 0);
		TEST_CHECK(back == vals[i]);
		sb_free(&sb);
	}
}

static void test_formats(void)
{
	static const uint64_t sizes[] = { 0, 1, 1023, 1024, 65536, 64ULL << 30, 3ULL << 40,
					  1ULL << 50, 15ULL << 60, 1ULL << 63, UINT64_MAX,
					  UINT64_MAX - 1023 };
	static const char *const size_texts[] = { "0", "1", "1023", "1K", "64K", "64G", "3T", "1P",
						  "15E", "8E", "18446744073709551615",
						  "18014398509481983K" };
	static const uint64_t durs[] = { 0, 1, 500, 1000, 1500, 60000, 90000, 3600000, 86400000 };
	static const char *const dur_texts[] = { "0ms", "1ms", "500ms", "1s", "1500ms", "1m", "90s",
						 "1h", "24h" };

	check_format(sb_size, parse_size, sizes, size_texts, sizeof(sizes) / sizeof(sizes[0]));
	check_format(sb_duration, parse_duration, durs, dur_texts, sizeof(durs) / sizeof(durs[0]));
}

static void test_numbers(void)
{
	long long n = 0;
	double d = 0;

	TEST_INTEQ(parse_ll("0", &n), 0);
	TEST_INTEQ(n, 0);
	TEST_INTEQ(parse_ll("-5", &n), 0);
	TEST_INTEQ(n, -5);
	TEST_INTEQ(parse_ll("+3", &n), 0);
	TEST_INTEQ(n, 3);
	TEST_INTEQ(parse_ll("", &n), -EINVAL);
	TEST_INTEQ(parse_ll("-", &n), -EINVAL);
	TEST_INTEQ(parse_ll("1a", &n), -EINVAL);
	TEST_INTEQ(parse_ll("0x10", &n), -EINVAL);
	TEST_INTEQ(parse_ll(" 1", &n), -EINVAL);
	TEST_INTEQ(parse_ll("9223372036854775807", &n), 0);
	TEST_INTEQ(parse_ll("9223372036854775808", &n), -ERANGE);
	TEST_INTEQ(parse_ll("99999999999999999999999", &n), -ERANGE);

	TEST_INTEQ(parse_number("5", &d), 0);
	TEST_CHECK(d == 5.0);
	TEST_INTEQ(parse_number("0.5", &d), 0);
	TEST_CHECK(d == 0.5);
	TEST_INTEQ(parse_number(".5", &d), 0);
	TEST_CHECK(d == 0.5);
	TEST_INTEQ(parse_number("1e3", &d), 0);
	TEST_CHECK(d == 1000.0);
	TEST_INTEQ(parse_number("-1", &d), 0);
	TEST_INTEQ(parse_number("0x10", &d), -EINVAL);
	TEST_INTEQ(parse_number("inf", &d), -EINVAL);
	TEST_INTEQ(parse_number("nan", &d), -EINVAL);
	TEST_INTEQ(parse_number("1e", &d), -EINVAL);
	TEST_INTEQ(parse_number(".", &d), -EINVAL);
	TEST_INTEQ(parse_number("1e999", &d), -ERANGE);

}

int main(void)
{
	test_size();
	test_duration();
	test_formats();
	test_numbers();
	TEST_EXIT();
}
