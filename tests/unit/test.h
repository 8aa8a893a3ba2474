/* SPDX-License-Identifier: MIT */
/*
 * A tiny unit-test harness in the style of chrony's test/unit: a test file
 * #includes the .c it tests (to reach statics), calls TEST_CHECK, and ends
 * main() with TEST_EXIT().  Output is TAP-like; exit 1 on any failure.
 */
#ifndef HPCINIT_TEST_H
#define HPCINIT_TEST_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int test_failures, test_checks;

#define TEST_CHECK(expr) do { \
	test_checks++; \
	if (!(expr)) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #expr); \
	} \
} while (0)

#define TEST_STREQ(a, b) do { \
	const char *ta_ = (a), *tb_ = (b); \
	test_checks++; \
	if (!ta_ || !tb_ || strcmp(ta_, tb_) != 0) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: expected \"%s\"\n%*s  got      \"%s\"\n", __FILE__, __LINE__, \
			tb_ ? tb_ : "(null)", (int)strlen(__FILE__) + 1, "", ta_ ? ta_ : "(null)"); \
	} \
} while (0)

#define TEST_INTEQ(a, b) do { \
	long long ta_ = (long long)(a), tb_ = (long long)(b); \
	test_checks++; \
	if (ta_ != tb_) { \
		test_failures++; \
		fprintf(stderr, "%s:%d: %s == %lld, expected %lld\n", __FILE__, __LINE__, #a, ta_, tb_); \
	} \
} while (0)

#define TEST_EXIT() do { \
	printf("%s: %d checks, %d failed\n", __FILE__, test_checks, test_failures); \
	return test_failures ? 1 : 0; \
} while (0)

#endif
