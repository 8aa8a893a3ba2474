/* SPDX-License-Identifier: MIT */
/* A NULL-terminated, growable list of malloc'd strings.  Allocation failure aborts. */
#ifndef HPCINIT_STRLIST_H
#define HPCINIT_STRLIST_H

#include <stddef.h>

struct strlist {
	char **v;                       /* v[n] is NULL once anything was added */
	size_t n;
};

void strlist_free(struct strlist *l);
int strlist_push(struct strlist *l, const char *s);
/* Append s itself (malloc'd; the list owns it from now on). */
void strlist_push_take(struct strlist *l, char *s);
/* Make room for extra more entries (and the NULL) before filling v[] directly. */
void strlist_reserve(struct strlist *l, size_t extra);

#endif
