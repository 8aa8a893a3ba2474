/* SPDX-License-Identifier: MIT */
/*
 * Base64 (RFC 4648 section 4, the standard alphabet, padded): one
 * implementation for the SSH key code and the etcd helper, which wrote it
 * twice with different rules.  Decoding is strict: only the alphabet, '='
 * only as the last one or two characters of a padded length (a multiple of
 * 4), and no bits left over in the last character (canonical encoding).
 */
#ifndef HPCINIT_BASE64_H
#define HPCINIT_BASE64_H

#include <stddef.h>

/* The n bytes at p in base64, padded, NUL-terminated; malloc'd (never NULL). */
char *b64_encode(const void *p, size_t n);
/*
 * The n characters at s decoded into a malloc'd buffer with a NUL after the
 * bytes (*ret_len of them); NULL when s is not base64 by the rules above.
 */
unsigned char *b64_decode(const char *s, size_t n, size_t *ret_len);
/* The same, with white space (space, tab, CR, LF) between characters skipped: PEM bodies. */
unsigned char *b64_decode_lines(const char *s, size_t n, size_t *ret_len);

#endif
