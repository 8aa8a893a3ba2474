/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "strbuf.h"

static void oom(void)
{
	fputs("hpcinit: out of memory\n", stderr);
	abort();
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p)
		oom();
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);

	if (!p)
		oom();
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		oom();
	return p;
}

char *xstrdup(const char *s)
{
	return xstrndup(s, strlen(s));
}

char *xstrndup(const char *s, size_t n)
{
	char *p = xmalloc(n + 1);

	memcpy(p, s, n);
	p[n] = '\0';
	return p;
}

char *xasprintf(const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	return sb_steal(&sb);
}

static void sb_grow(struct strbuf *sb, size_t extra)
{
	size_t need = sb->len + extra + 1;

	if (need < sb->len)
		oom();
	if (need <= sb->cap)
		return;
	size_t cap = sb->cap ? sb->cap : 64;
	while (cap < need) {
		if (cap > (size_t)-1 / 2)
			oom();
		cap *= 2;
	}
	sb->buf = xrealloc(sb->buf, cap);
	sb->cap = cap;
}

void sb_reserve(struct strbuf *sb, size_t extra)
{
	sb_grow(sb, extra);
}

void sb_appendn(struct strbuf *sb, const void *data, size_t n)
{
	sb_grow(sb, n);
	if (n)
		memcpy(sb->buf + sb->len, data, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
}

void sb_append(struct strbuf *sb, const char *s)
{
	sb_appendn(sb, s, strlen(s));
}

void sb_append_u64(struct strbuf *sb, unsigned long long v)
{
	char num[24];
	size_t i = sizeof(num);

	do {
		num[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	sb_appendn(sb, num + i, sizeof(num) - i);
}

void sb_vprintf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list ap2;
	size_t avail;
	int n;

	/* One pass into the free space when the text fits (most do: keys, lines
	 * of a file), a second only when it does not: formatting twice was a
	 * third of the ssh step's instructions at 10,000 records. */
	sb_grow(sb, 127);
	avail = sb->cap - sb->len;
	va_copy(ap2, ap);
	n = vsnprintf(sb->buf + sb->len, avail, fmt, ap2);
	va_end(ap2);
	if (n < 0) {
		sb->buf[sb->len] = '\0';
		return;
	}
	if ((size_t)n >= avail) {
		sb_grow(sb, (size_t)n);
		vsnprintf(sb->buf + sb->len, (size_t)n + 1, fmt, ap);
	}
	sb->len += (size_t)n;
}

void sb_printf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(sb, fmt, ap);
	va_end(ap);
}

void sb_reset(struct strbuf *sb)
{
	sb->len = 0;
	if (sb->buf)
		sb->buf[0] = '\0';
}

char *sb_steal(struct strbuf *sb)
{
	char *p = sb->buf ? sb->buf : xstrdup("");

	sb->buf = NULL;
	sb->len = sb->cap = 0;
	return p;
}

void sb_free(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->cap = 0;
}
