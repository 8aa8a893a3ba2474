/* SPDX-License-Identifier: MIT */
/* Small pieces the ssh step's files share: a string map, list and name helpers. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ssh.h"

static size_t smap_slot(const struct smap *m, const char *key)
{
	uint64_t h = 1469598103934665603ull;
	size_t i;

	for (const char *p = key; *p; p++)
		h = (h ^ (unsigned char)*p) * 1099511628211ull;
	for (i = (size_t)h & (m->cap - 1); m->keys[i] && strcmp(m->keys[i], key) != 0;
	     i = (i + 1) & (m->cap - 1))
		;
	return i;
}

void smap_init(struct smap *m, size_t expect)
{
	m->cap = 16;
	while (m->cap < 2 * expect)
		m->cap <<= 1;
	m->keys = xcalloc(m->cap, sizeof(*m->keys));
	m->vals = xcalloc(m->cap, sizeof(*m->vals));
	m->n = 0;
}

void smap_free(struct smap *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

bool smap_get(const struct smap *m, const char *key, size_t *ret)
{
	size_t i = smap_slot(m, key);

	if (!m->keys[i])
		return false;
	if (ret)
		*ret = m->vals[i];
	return true;
}

bool smap_add(struct smap *m, const char *key, size_t val)
{
	size_t i = smap_slot(m, key);

	if (m->keys[i])
		return false;
	if (2 * (m->n + 1) > m->cap) {
		struct smap bigger;

		smap_init(&bigger, m->cap);
		for (size_t j = 0; j < m->cap; j++)
			if (m->keys[j])
				(void)smap_add(&bigger, m->keys[j], m->vals[j]);
		smap_free(m);
		*m = bigger;
		i = smap_slot(m, key);
	}
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
	return true;
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

void strlist_copy(struct strlist *dst, const struct strlist *src)
{
	strlist_free(dst);
	for (size_t i = 0; i < src->n; i++)
		strlist_push(dst, src->v[i]);
}

/*
 * Names end up in known_hosts and in a "Host" pattern list, where '*', '?',
 * '!', ',' or blanks would widen what a record may claim.  Accept only
 * plain host names.
 */
bool valid_hostname(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 253 || s[0] == '-' || s[0] == '.')
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_'))
			return false;
	return true;
}

bool valid_addr(const char *s)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return s && (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1);
}

char *lowercase(const char *s)
{
	char *d = xstrdup(s);

	for (char *p = d; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return d;
}
