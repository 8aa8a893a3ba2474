/* SPDX-License-Identifier: MIT */
/* A growable NUL-terminated byte buffer.  Allocation failure aborts (xalloc). */
#ifndef HPCINIT_STRBUF_H
#define HPCINIT_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

struct strbuf {
	char *buf;      /* NULL until the first append; always NUL-terminated after */
	size_t len;
	size_t cap;
};

#define STRBUF_INIT { NULL, 0, 0 }

void sb_append(struct strbuf *sb, const char *s);
/* Room for extra more bytes and the NUL at buf + len (buf is then not NULL); the caller writes them and moves len. */
void sb_reserve(struct strbuf *sb, size_t extra);
/* v in decimal, as "%llu" writes it: no printf in loops over every node. */
void sb_append_u64(struct strbuf *sb, unsigned long long v);
void sb_appendn(struct strbuf *sb, const void *data, size_t n);
void sb_printf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));
void sb_reset(struct strbuf *sb);
/* Hand the buffer to the caller (never NULL) and reset sb. */
char *sb_steal(struct strbuf *sb);
void sb_free(struct strbuf *sb);
/* The contents, "" when empty. */
static inline const char *sb_str(const struct strbuf *sb) { return sb->buf ? sb->buf : ""; }

void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);
char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
