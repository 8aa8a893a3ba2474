/* SPDX-License-Identifier: MIT */
/* Sizes, durations and plain numbers: the one place their syntax is decided. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"
#include "units.h"

int parse_ll(const char *s, long long *ret)
{
	bool neg = false;
	unsigned long long v = 0;

	if (*s == '-') {
		neg = true;
		s++;
	} else if (*s == '+') {
		s++;
	}
	if (!is_digit((unsigned char)*s))
		return -EINVAL;
	for (; is_digit((unsigned char)*s); s++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (*s)
		return -EINVAL;
	if (v > (unsigned long long)LLONG_MAX)
		return -ERANGE;
	*ret = neg ? -(long long)v : (long long)v;
	return 0;
}

/*
 * Leading decimal digits as uint64.  *end is set after them in every case
 * (so the unit can still be checked), and -ERANGE says they overflowed.
 */
static int parse_u64_prefix(const char *s, uint64_t *ret, const char **end)
{
	uint64_t v = 0;
	bool over = false;

	*end = s;
	*ret = 0;
	if (!is_digit((unsigned char)*s))
		return -EINVAL;
	for (; is_digit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			over = true;
		else
			v = v * 10 + d;
	}
	*end = s;
	*ret = v;
	return over ? -ERANGE : 0;
}

int parse_size(const char *s, uint64_t *ret)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{ "", 1 }, { "B", 1 },
		{ "K", KIB }, { "k", KIB }, { "KiB", KIB },
		{ "M", MIB }, { "m", MIB }, { "MiB", MIB },
		{ "G", GIB }, { "g", GIB }, { "GiB", GIB },
		{ "T", TIB }, { "t", TIB }, { "TiB", TIB },
		{ "P", PIB }, { "p", PIB }, { "PiB", PIB },
		{ "E", EIB }, { "e", EIB }, { "EiB", EIB },
	};
	const char *end = s;
	uint64_t v = 0;
	int r = parse_u64_prefix(s, &v, &end);

	for (size_t i = 0; r != -EINVAL && i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (r < 0 || (v && units[i].mult > UINT64_MAX / v))
			return -ERANGE;
		*ret = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

int parse_duration(const char *s, uint64_t *ret)
{
	static const struct { const char *unit; uint64_t mult; } units[] = {
		{ "ms", 1 }, { "s", SEC_MS }, { "m", MIN_MS }, { "h", HOUR_MS },
	};
	const char *end = s;
	uint64_t v = 0;
	int r = parse_u64_prefix(s, &v, &end);

	if (r == -EINVAL)
		return r;
	if (!*end)
		return -EDOM;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (r < 0 || (v && units[i].mult > UINT64_MAX / v))
			return -ERANGE;
		*ret = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

void sb_size(struct strbuf *sb, uint64_t v)
{
	static const char sfx[] = "KMGTPE";

	for (int i = 5; i >= 0; i--) {
		uint64_t m = KIB << (10 * i);

		if (v && v % m == 0) {
			sb_printf(sb, "%llu%c", (unsigned long long)(v / m), sfx[i]);
			return;
		}
	}
	sb_printf(sb, "%llu", (unsigned long long)v);
}

void sb_duration(struct strbuf *sb, uint64_t ms)
{
	if (ms && ms % HOUR_MS == 0)
		sb_printf(sb, "%lluh", (unsigned long long)(ms / HOUR_MS));
	else if (ms && ms % MIN_MS == 0)
		sb_printf(sb, "%llum", (unsigned long long)(ms / MIN_MS));
	else if (ms && ms % SEC_MS == 0)
		sb_printf(sb, "%llus", (unsigned long long)(ms / SEC_MS));
	else
		sb_printf(sb, "%llums", (unsigned long long)ms);
}

int parse_number(const char *s, double *ret)
{
	const char *p = s;
	char *end;
	double d;

	if (*p == '-' || *p == '+')
		p++;
	if (!is_digit((unsigned char)*p) && !(*p == '.' && is_digit((unsigned char)p[1])))
		return -EINVAL;
	while (is_digit((unsigned char)*p))
		p++;
	if (*p == '.')
		for (p++; is_digit((unsigned char)*p); p++)
			;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		if (!is_digit((unsigned char)*p))
			return -EINVAL;
		while (is_digit((unsigned char)*p))
			p++;
	}
	if (*p)
		return -EINVAL;
	errno = 0;
	d = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(d))
		return -ERANGE;
	*ret = d;
	return 0;
}

/* ---------------------------------------------------------------- name validators */

/* Each validator returns NULL when s is fine, else why not (for the message). */
