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
#include <stddef.h>

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
 * Fields of a line (what sscanf's "%lld %llu %31s" read, checked; the only
 * reader of fields, so nothing else calls sscanf): blanks (' ', '\t')
 * skipped, then a number that ends at a blank, a newline or the end of the
 * string; *p moved just after it.  false, *p and *ret untouched, when there
 * is none, it is out of range or something else follows its digits.  In
 * base 16 a leading "0x" is allowed (/proc prints it).
 */
bool num_ll_field(const char **p, long long min, long long max, long long *ret);
bool num_ull_field(const char **p, int base, unsigned long long max, unsigned long long *ret);
/* A word of a line: blanks skipped, up to a blank, newline or the end, into buf (a NUL; a word of n bytes or more: false). */
bool num_word_field(const char **p, char *buf, size_t n);

/*
 * A decimal fraction, all of s: digits, at most one '.' with digits after
 * it, a '-' first when min < 0; no exponent, no "inf" or "nan", no space.
 * In [min, max]: true and *ret, else false and *ret untouched.
 */
bool num_double(const char *s, double min, double max, double *ret);
/* The same for the number s starts with; *end just after it. */
bool num_double_prefix(const char *s, double min, double max, double *ret, const char **end);

#endif
