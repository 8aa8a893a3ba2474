/* SPDX-License-Identifier: MIT */
/* Node sets: expand ranges to names, fold names to ranges (nodeset.h). */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"
#include "nodeset.h"
#include "strbuf.h"
#include "number.h"

/* ---- expand ---- */

void noderange_clear(struct noderange *nr)
{
	free(nr->prefix);
	free(nr->suffix);
	free(nr->r);
	memset(nr, 0, sizeof(*nr));
}

/* Digits of one bound: at most 9, so the arithmetic stays in range. */
static int nr_number(const char *s, size_t n, unsigned long *v, const char **why)
{
	if (n == 0) {
		*why = "a range needs numbers, like [01-16,20]";
		return -EINVAL;
	}
	if (n > 9) {
		*why = "range numbers have at most 9 digits";
		return -EINVAL;
	}
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i])) {
			*why = "a range holds numbers, '-' and ',' only, like [01-16,20]";
			return -EINVAL;
		}
		*v = *v * 10 + (unsigned long)(s[i] - '0');
	}
	return 0;
}

int noderange_parse(const char *pat, struct noderange *ret, const char **why)
{
	struct noderange nr = { NULL, NULL, NULL, 0, 0 };
	const char *open = strchr(pat, '['), *close_ = strchr(pat, ']'), *p, *end;

	if (!*pat) {
		*why = "empty host name";
		return -EINVAL;
	}
	if (!open) {
		if (close_) {
			*why = "']' without '['";
			return -EINVAL;
		}
		nr.prefix = xstrdup(pat);
		nr.suffix = xstrdup("");
		nr.r = xcalloc(1, sizeof(*nr.r));
		nr.n = 0;       /* no bracket: the name itself */
		nr.count = 1;
		*ret = nr;
		return 0;
	}
	if (close_ && close_ < open) {
		*why = "']' without '['";
		return -EINVAL;
	}
	if (!close_) {
		*why = "'[' without a closing ']'";
		return -EINVAL;
	}
	if (memchr(open + 1, '[', (size_t)(close_ - open - 1))) {
		*why = "nested '[' in a node range";
		return -EINVAL;
	}
	if (strchr(close_ + 1, '[') || strchr(close_ + 1, ']')) {
		*why = "only one [range] group is supported, like node[01-16]";
		return -EINVAL;
	}
	end = close_;
	if (end == open + 1) {
		*why = "empty range []";
		return -EINVAL;
	}
	nr.r = xmalloc((size_t)(end - open) * sizeof(*nr.r));
	for (p = open + 1; p <= end;) {
		size_t l = strcspn(p, ",]");
		const char *dash = memchr(p, '-', l);
		struct nr_range *r = &nr.r[nr.n];
		size_t l1 = dash ? (size_t)(dash - p) : l;

		if (nr_number(p, l1, &r->lo, why) < 0 ||
		    nr_number(dash ? dash + 1 : p, dash ? l - l1 - 1 : l, &r->hi, why) < 0)
			goto fail;
		if (r->lo > r->hi) {
			*why = "a range goes from low to high, like [01-16]";
			goto fail;
		}
		r->width = l1 > 1 && p[0] == '0' ? (int)l1 : 0;
		nr.count += r->hi - r->lo + 1;
		nr.n++;
		p += l + 1;
	}
	nr.prefix = xstrndup(pat, (size_t)(open - pat));
	nr.suffix = xstrdup(close_ + 1);
	*ret = nr;
	return 0;
fail:
	noderange_clear(&nr);
	return -EINVAL;
}

/*
 * The caller sizes the array first: growing it a name at a time is
 * quadratic where realloc copies (valgrind, ASan).
 */
void noderange_fill(const struct noderange *nr, struct strlist *out)
{
	if (nr->n == 0) {
		out->v[out->n++] = xstrdup(nr->prefix);
		out->v[out->n] = NULL;
		return;
	}
	for (size_t i = 0; i < nr->n; i++) {
		for (unsigned long v = nr->r[i].lo;; v++) {
			out->v[out->n++] = xasprintf("%s%0*lu%s", nr->prefix, nr->r[i].width, v,
						     nr->suffix);
			if (v == nr->r[i].hi)
				break;
		}
	}
	out->v[out->n] = NULL;
}

/* Append the names; the caller has checked count against its limit. */
static void noderange_emit(const struct noderange *nr, struct strlist *out)
{
	strlist_reserve(out, (size_t)nr->count);
	noderange_fill(nr, out);
}

int noderange_expand(const char *pattern, struct strlist *out, size_t limit)
{
	struct noderange nr;
	const char *why;
	int r;

	if (!pattern || !out)
		return -EINVAL;
	r = noderange_parse(pattern, &nr, &why);
	if (r < 0)
		return r;
	if (nr.count > limit) {
		noderange_clear(&nr);
		return -E2BIG;
	}
	noderange_emit(&nr, out);
	noderange_clear(&nr);
	return 0;
}

int nodeset_expand(const char *set, struct strlist *out, size_t limit)
{
	size_t before = out ? out->n : 0;
	int r = 0;

	if (!set || !out)
		return -EINVAL;
	if (!*set)
		return 0;       /* the empty set, as nodeset_fold() writes it */
	/* split at the commas outside brackets */
	for (const char *p = set; r == 0;) {
		const char *q = p;
		char *one;

		while (*q && *q != ',') {
			if (*q == '[')
				while (*q && *q != ']')
					q++;
			if (*q)
				q++;
		}
		one = xstrndup(p, (size_t)(q - p));
		r = noderange_expand(one, out, limit - (out->n - before));
		free(one);
		if (!*q)
			break;
		p = q + 1;
	}
	if (r < 0)
		while (out->n > before)
			free(out->v[--out->n]);
	if (out->v)
		out->v[out->n] = NULL;
	return r;
}

/* ---- fold ---- */

struct nsname {
	const char *prefix;
	size_t plen;
	unsigned long num;
	unsigned width;         /* zero-padded width, 0 when not padded */
	bool has_num;
	const char *full;
};

static int nsname_cmp(const void *x, const void *y)
{
	const struct nsname *a = x, *b = y;
	size_t m = a->plen < b->plen ? a->plen : b->plen;
	int r = memcmp(a->prefix, b->prefix, m);

	if (r)
		return r;
	if (a->plen != b->plen)
		return a->plen < b->plen ? -1 : 1;
	if (a->has_num != b->has_num)
		return a->has_num ? 1 : -1;
	if (a->width != b->width)
		return a->width > b->width ? -1 : 1;   /* padded first */
	return a->num < b->num ? -1 : a->num > b->num;
}

/*
 * Fold names into clustershell nodeset syntax.  Only a trailing number is
 * folded, and padded numbers ("node01") only with the same width; the
 * result always expands back to exactly the same names.
 */
char *nodeset_fold(const char *const *names, size_t n)
{
	struct nsname *v = xcalloc(n ? n : 1, sizeof(*v));
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		const char *s = names[i];
		size_t len = strlen(s), d = len;

		while (d > 0 && s[d - 1] >= '0' && s[d - 1] <= '9')
			d--;
		v[i].full = s;
		v[i].prefix = s;
		v[i].plen = len;
		if (d < len && len - d <= 9) {
			v[i].has_num = true;
			v[i].plen = d;
			unsigned long long num = 0;

			(void)num_ull_prefix(s + d, 10, 999999999, &num, NULL);     /* at most 9 digits */
			v[i].num = (unsigned long)num;
			v[i].width = (s[d] == '0' && len - d > 1) ? (unsigned)(len - d) : 0;
		}
	}
	qsort(v, n, sizeof(*v), nsname_cmp);
	for (size_t i = 0; i < n;) {
		size_t j = i;

		if (sb.len)
			sb_append(&sb, ",");
		if (!v[i].has_num) {
			sb_append(&sb, v[i].full);
			/* the same name twice folds to one */
			while (j < n && nsname_cmp(&v[j], &v[i]) == 0)
				j++;
			i = j;
			continue;
		}
		while (j < n && v[j].has_num && v[j].plen == v[i].plen && v[j].width == v[i].width &&
		       memcmp(v[j].prefix, v[i].prefix, v[i].plen) == 0)
			j++;
		sb_appendn(&sb, v[i].prefix, v[i].plen);
		if (j - i == 1) {
			sb_printf(&sb, "%0*lu", (int)v[i].width, v[i].num);
			i = j;
			continue;
		}
		sb_append(&sb, "[");
		for (size_t k = i; k < j;) {
			size_t e = k;

			while (e + 1 < j && v[e + 1].num <= v[e].num + 1)
				e++;
			if (k != i)
				sb_append(&sb, ",");
			if (v[e].num == v[k].num)
				sb_printf(&sb, "%0*lu", (int)v[k].width, v[k].num);
			else
				sb_printf(&sb, "%0*lu-%0*lu", (int)v[k].width, v[k].num,
					  (int)v[e].width, v[e].num);
			k = e + 1;
		}
		sb_append(&sb, "]");
		i = j;
	}
	free(v);
	return sb_steal(&sb);
}
