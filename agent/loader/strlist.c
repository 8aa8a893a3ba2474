/* SPDX-License-Identifier: MIT */
/* String lists (strlist.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "strbuf.h"
#include "strlist.h"

/* Slots a list of n entries has allocated (entries + NULL), a power of two: growth is geometric. */
static size_t strlist_slots(size_t n)
{
	size_t c = 2;

	while (c < n + 1)
		c *= 2;
	return c;
}

/* Invariant: a list of n entries has at least strlist_slots(n) slots allocated. */
void strlist_reserve(struct strlist *l, size_t extra)
{
	l->v = xrealloc(l->v, strlist_slots(l->n + extra) * sizeof(*l->v));
}

void strlist_push_take(struct strlist *l, char *s)
{
	if (!l->v || strlist_slots(l->n + 1) != strlist_slots(l->n))
		l->v = xrealloc(l->v, strlist_slots(l->n + 1) * sizeof(*l->v));
	l->v[l->n++] = s;
	l->v[l->n] = NULL;
}

int strlist_push(struct strlist *l, const char *s)
{
	strlist_push_take(l, xstrdup(s));
	return 0;
}

void strlist_free(struct strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

bool strlist_has(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

void strlist_add_unique(struct strlist *l, const char *s)
{
	if (!strlist_has(l, s))
		strlist_push(l, s);
}

void strlist_add_unique_n(struct strlist *l, const char *s, size_t n)
{
	for (size_t i = 0; i < l->n; i++)
		if (strncmp(l->v[i], s, n) == 0 && l->v[i][n] == '\0')
			return;
	strlist_push_take(l, xstrndup(s, n));
}

void strlist_copy(struct strlist *dst, const struct strlist *src)
{
	strlist_free(dst);
	for (size_t i = 0; i < src->n; i++)
		strlist_push(dst, src->v[i]);
}
