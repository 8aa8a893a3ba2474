/* SPDX-License-Identifier: MIT */
/* Locale-free ASCII character classes for the parsers (ctype.h follows the locale). */
#ifndef HPCINIT_ASCII_H
#define HPCINIT_ASCII_H

#include <stdbool.h>

static inline bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static inline bool is_lower_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c);
}

static inline bool is_alnum(int c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static inline int ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static inline bool streq_nocase(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b))
			return false;
	return *a == *b;
}

#endif
