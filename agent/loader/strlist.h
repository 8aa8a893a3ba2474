/* SPDX-License-Identifier: MIT */
/* A NULL-terminated, growable list of malloc'd strings.  Allocation failure aborts. */
#ifndef HPCINIT_STRLIST_H
#define HPCINIT_STRLIST_H

#include <stdbool.h>
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
/* Is s in the list (byte for byte)?  A walk: for the few names of one node; lists of N use a map. */
bool strlist_has(const struct strlist *l, const char *s);
/* Append s unless it is there already. */
void strlist_add_unique(struct strlist *l, const char *s);
/* The same for the n bytes at s (no NUL needed). */
void strlist_add_unique_n(struct strlist *l, const char *s, size_t n);
/* dst becomes a copy of src (what dst held is freed). */
void strlist_copy(struct strlist *dst, const struct strlist *src);

#endif
