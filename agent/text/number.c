/* SPDX-License-Identifier: MIT */
/* Numbers read from text, checked (number.h). */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "number.h"

static bool digit_in_base(char ch, int base)
{
	if (base == 16)
		return isxdigit((unsigned char)ch);
	return ch >= '0' && ch < '0' + (base < 10 ? base : 10);
}

bool num_ll_prefix(const char *s, long long min, long long max, long long *ret, const char **end)
{
	char *e;
	long long v;

	if (!s || !digit_in_base(s[s[0] == '-'], 10))
		return false;
	errno = 0;
	v = strtoll(s, &e, 10);
	if (errno || v < min || v > max)
		return false;
	*ret = v;
	if (end)
		*end = e;
	return true;
}

bool num_ull_prefix(const char *s, int base, unsigned long long max, unsigned long long *ret,
		    const char **end)
{
	char *e;
	unsigned long long v;

	if (!s || !digit_in_base(s[0], base) || (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X')))
		return false;
	errno = 0;
	v = strtoull(s, &e, base);
	if (errno || v > max)
		return false;
	*ret = v;
	if (end)
		*end = e;
	return true;
}

bool num_ll(const char *s, long long min, long long max, long long *ret)
{
	const char *end;
	long long v;

	if (!num_ll_prefix(s, min, max, &v, &end) || *end)
		return false;
	*ret = v;
	return true;
}

bool num_ull(const char *s, int base, unsigned long long max, unsigned long long *ret)
{
	const char *end;
	unsigned long long v;

	if (!num_ull_prefix(s, base, max, &v, &end) || *end)
		return false;
	*ret = v;
	return true;
}

bool num_double_prefix(const char *s, double min, double max, double *ret, const char **end)
{
	char buf[64], *e;
	size_t n = 0;
	double v;

	if (!s)
		return false;
	if (s[n] == '-')
		n++;
	if (!digit_in_base(s[n], 10))
		return false;
	while (digit_in_base(s[n], 10))
		n++;
	if (s[n] == '.') {
		if (!digit_in_base(s[n + 1], 10))
			return false;
		n++;
		while (digit_in_base(s[n], 10))
			n++;
	}
	if (n >= sizeof(buf))
		return false;
	memcpy(buf, s, n);      /* strtod sees only what was checked: no exponent, no hex */
	buf[n] = '\0';
	errno = 0;
	v = strtod(buf, &e);
	if (errno || *e || !(v >= min && v <= max))
		return false;
	*ret = v;
	if (end)
		*end = s + n;
	return true;
}

bool num_double(const char *s, double min, double max, double *ret)
{
	const char *end;
	double v;

	if (!num_double_prefix(s, min, max, &v, &end) || *end)
		return false;
	*ret = v;
	return true;
}

/* A field ends at a blank, a newline or the end of the string. */
static bool field_end(char ch)
{
	return ch == ' ' || ch == '\t' || ch == '\n' || ch == '\0';
}

static const char *field_start(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

bool num_ll_field(const char **p, long long min, long long max, long long *ret)
{
	const char *s = field_start(*p), *end;
	long long v;

	if (!num_ll_prefix(s, min, max, &v, &end) || !field_end(*end))
		return false;
	*ret = v;
	*p = end;
	return true;
}

bool num_ull_field(const char **p, int base, unsigned long long max, unsigned long long *ret)
{
	const char *s = field_start(*p), *end;
	unsigned long long v;

	if (base == 16 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!num_ull_prefix(s, base, max, &v, &end) || !field_end(*end))
		return false;
	*ret = v;
	*p = end;
	return true;
}

bool num_word_field(const char **p, char *buf, size_t n)
{
	const char *s = field_start(*p);
	size_t len = 0;

	while (!field_end(s[len]))
		len++;
	if (len == 0 || len >= n)
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	*p = s + len;
	return true;
}
