/* SPDX-License-Identifier: MIT */
/* Small pieces the ssh step's files share: a string map, list and name helpers. */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "ssh.h"

/*
 * The hash: 8 bytes a step (keys are host keys of 80 characters and more;
 * FNV-1a a byte at a time was half of the lookups' instructions), then
 * mixed so that the low bits, which pick the slot, depend on every byte.
 */
static uint64_t smap_hash(const char *key, size_t n)
{
	uint64_t h = 0x9e3779b97f4a7c15ull ^ n, w;
	const char *p = key;

	for (; n >= 8; n -= 8, p += 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * 0xff51afd7ed558ccdull;
		h ^= h >> 32;
	}
	w = 0;
	memcpy(&w, p, n);
	h = (h ^ w) * 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 29;
	h *= 0xff51afd7ed558ccdull;
	h ^= h >> 32;
	return h;
}

/* The slot of key (hash h): where it is, or the empty slot where it goes. */
static size_t smap_find(const struct smap *m, const char *key, uint64_t h)
{
	size_t i;

	for (i = (size_t)h & (m->cap - 1);
	     m->v[i].key && (m->v[i].hash != h || strcmp(m->v[i].key, key) != 0);
	     i = (i + 1) & (m->cap - 1))
		;
	return i;
}

/* Room for expect keys at a load of at most 2/3. */
void smap_init(struct smap *m, size_t expect)
{
	m->cap = 16;
	while (2 * m->cap < 3 * expect)
		m->cap <<= 1;
	m->v = xcalloc(m->cap, sizeof(*m->v));
	m->n = 0;
}

void smap_free(struct smap *m)
{
	free(m->v);
	memset(m, 0, sizeof(*m));
}

bool smap_get(const struct smap *m, const char *key, size_t *ret)
{
	size_t i = smap_find(m, key, smap_hash(key, strlen(key)));

	if (!m->v[i].key)
		return false;
	if (ret)
		*ret = m->v[i].val;
	return true;
}

bool smap_put(struct smap *m, const char *key, size_t val, size_t *ret)
{
	uint64_t h = smap_hash(key, strlen(key));
	size_t i = smap_find(m, key, h);

	if (m->v[i].key) {
		if (ret)
			*ret = m->v[i].val;
		return false;
	}
	if (3 * (m->n + 1) > 2 * m->cap) {
		struct smap bigger;

		smap_init(&bigger, m->cap);
		for (size_t j = 0; j < m->cap; j++)
			if (m->v[j].key)
				bigger.v[smap_find(&bigger, m->v[j].key, m->v[j].hash)] = m->v[j];
		bigger.n = m->n;
		smap_free(m);
		*m = bigger;
		i = smap_find(m, key, h);
	}
	m->v[i].key = key;
	m->v[i].val = val;
	m->v[i].hash = h;
	m->n++;
	return true;
}

bool smap_add(struct smap *m, const char *key, size_t val)
{
	return smap_put(m, key, val, NULL);
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
