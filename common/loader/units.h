/* SPDX-License-Identifier: MIT */
/*
 * Numbers with units: the one parser for sizes and durations, used by the
 * spec loader and by the command line.  Every function takes the whole
 * string: no leading or trailing space, no sign where none is allowed.
 */
#ifndef HPCINIT_UNITS_H
#define HPCINIT_UNITS_H

#include <stdint.h>

#include "strbuf.h"

#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)
#define TIB (1024ULL * GIB)
#define PIB (1024ULL * TIB)
#define EIB (1024ULL * PIB)

#define SEC_MS 1000ULL
#define MIN_MS (60ULL * SEC_MS)
#define HOUR_MS (60ULL * MIN_MS)

/* Decimal integer, optional sign.  0, -EINVAL (not a number) or -ERANGE. */
int parse_ll(const char *s, long long *ret);
/* A plain decimal number with optional fraction and exponent: no hex, inf or nan. */
int parse_number(const char *s, double *ret);
/*
 * "64G", "64GiB", "512M", "4096": bytes (K, M, G, T, P, E are powers of 1024).
 * -EINVAL (not a size), -ERANGE (above 2^64 - 1: never wrapped).
 */
int parse_size(const char *s, uint64_t *ret);
/*
 * "500ms", "10s", "5m", "1h": milliseconds.  A unit is required.
 * -EINVAL, -EDOM (a number without a unit), -ERANGE.
 */
int parse_duration(const char *s, uint64_t *ret_ms);

/* The shortest exact form: 65536 -> "64K", 1000 -> "1000". */
void sb_size(struct strbuf *sb, uint64_t bytes);
/* The shortest exact form: 600000 -> "10m", 1500 -> "1500ms". */
void sb_duration(struct strbuf *sb, uint64_t ms);

#endif
