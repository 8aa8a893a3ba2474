/* SPDX-License-Identifier: MIT */
/*
 * Node sets in clustershell syntax: expand "node[01-16,20]" to names, and
 * fold names back to "node[01-16,20]".  fold's output always expands to
 * exactly the names it was given (as a set).
 */
#ifndef HPCINIT_NODESET_H
#define HPCINIT_NODESET_H

#include <stddef.h>
#include <stdint.h>

#include "strlist.h"

struct nr_range {
	unsigned long lo, hi;
	int width;                      /* zero-padded width, 0 for none */
};

/* One pattern: prefix, at most one [range] group, suffix. */
struct noderange {
	char *prefix, *suffix;
	struct nr_range *r;
	size_t n;                       /* 0: no bracket, the name is prefix */
	uint64_t count;                 /* names it expands to */
};

/* Parse one pattern.  0, or -EINVAL with *why saying what is wrong. */
int noderange_parse(const char *pattern, struct noderange *ret, const char **why);
/* Append its names into out, which has room for count more (strlist_reserve). */
void noderange_fill(const struct noderange *nr, struct strlist *out);
void noderange_clear(struct noderange *nr);
/* Expand one pattern into out (appended).  0 or -EINVAL/-E2BIG (more than limit). */
int noderange_expand(const char *pattern, struct strlist *out, size_t limit);

/* Expand a comma-separated set of patterns ("a,node[1-3,7]").  Same returns; limit is the total. */
int nodeset_expand(const char *set, struct strlist *out, size_t limit);
/* Fold names into one set ("node1,node2,node3,node7" -> "node[1-3,7]"); malloc'd, "" for none. */
char *nodeset_fold(const char *const *names, size_t n);

#endif
