/* SPDX-License-Identifier: MIT */
/*
 * Numbers read from text: one checked parser for the whole agent, so no
 * caller forgets errno, the end pointer or the range.  A number is digits
 * (a '-' first where the type is signed), nothing else: no space, no '+',
 * no trailing junk; out of range is an error, never a clamped value.
 */
#ifndef HPCINIT_NUMBER_H
#define HPCINIT_NUMBER_H

#include <stdbool.h>

/* All of s as a base-10 number in [min, max]: true and *ret, else false and *ret untouched. */
bool num_ll(const char *s, long long min, long long max, long long *ret);
/* All of s as an unsigned number in base (8, 10 or 16; no "0x") up to max: true and *ret. */
bool num_ull(const char *s, int base, unsigned long long max, unsigned long long *ret);
/*
 * The number s starts with (base 10, a '-' allowed), in [min, max]: true,
 * *ret and *end just after its digits; false when s starts with no digit or
 * the number is out of range.  For numbers inside a line ("pid 123 ...").
 */
bool num_ll_prefix(const char *s, long long min, long long max, long long *ret, const char **end);
/* The same, unsigned, in base. */
bool num_ull_prefix(const char *s, int base, unsigned long long max, unsigned long long *ret,
		    const char **end);

/*
 * A decimal fraction, all of s: digits, at most one '.' with digits after
 * it, a '-' first when min < 0; no exponent, no "inf" or "nan", no space.
 * In [min, max]: true and *ret, else false and *ret untouched.
 */
bool num_double(const char *s, double min, double max, double *ret);
/* The same for the number s starts with; *end just after it. */
bool num_double_prefix(const char *s, double min, double max, double *ret, const char **end);

#endif
