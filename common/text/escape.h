/* SPDX-License-Identifier: MIT */
/*
 * Text that came from elsewhere (a peer record, a file name in the
 * rendezvous directory, an NFS server's export list, a tool's output) is
 * made safe here before it reaches a terminal, syslog or status.json: valid
 * UTF-8 is kept, and what a terminal or a JSON reader would act on or
 * choke on is shown as \xNN (each byte): C0 controls (tab kept; newline
 * kept where the caller allows lines), DEL, C1 controls, the line and
 * paragraph separators, bidirectional overrides, and invalid UTF-8.
 */
#ifndef HPCINIT_ESCAPE_H
#define HPCINIT_ESCAPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"

/*
 * Length of the UTF-8 sequence at s (at most n bytes), or 0 when it is not
 * valid UTF-8 (overlong forms, surrogates and values above U+10FFFF included).
 */
size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp);
/* Bytes of the character at s (n > 0 bytes left) that may be shown as they
 * are, or 0 when its first byte must be escaped. */
size_t esc_keep_len(const char *s, size_t n, bool keep_nl);
/* Append the n bytes at s to out, escaped; keep_nl keeps '\n'. */
void esc_append(struct strbuf *out, const char *s, size_t n, bool keep_nl);
/* True when esc_append would copy s unchanged. */
bool esc_clean(const char *s, size_t n, bool keep_nl);
/* Copy s (NUL-terminated) into buf of size n, escaped, cut at a character
 * boundary so the result is always valid UTF-8. */
void esc_copy(char *buf, size_t n, const char *s, bool keep_nl);

#endif
