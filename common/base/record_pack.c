/* SPDX-License-Identifier: MIT */
/*
 * The packed form of a peer (record_pack, record_unpack; record.h): every
 * field of a peer already checked, between two processes of one run (an
 * isolated step's child and the runner), as "<length>:<bytes>" strings
 * ("-" for an absent one).  Not a record (record.c): no cluster, no HMAC,
 * no checks but its own framing and the numbers' ranges.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "number.h"
#include "record.h"
#include "strbuf.h"

/* "<n>:" then n bytes.  No printf: 10,000 peers make 150,000 of these. */
static void pack_bytes(struct strbuf *sb, const char *s, size_t n)
{
	char num[24];
	size_t i = sizeof(num), l = n;

	num[--i] = ':';
	do {
		num[--i] = (char)('0' + l % 10);
		l /= 10;
	} while (l);
	sb_appendn(sb, num + i, sizeof(num) - i);
	sb_appendn(sb, s, n);
}

static void pack_str(struct strbuf *sb, const char *s)
{
	if (s)
		pack_bytes(sb, s, strlen(s));
	else
		sb_appendn(sb, "-", 1);
}

static void pack_num(struct strbuf *sb, int64_t v)
{
	char num[24];
	size_t i = sizeof(num);
	uint64_t u = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;

	do {
		num[--i] = (char)('0' + u % 10);
		u /= 10;
	} while (u);
	if (v < 0)
		num[--i] = '-';
	pack_bytes(sb, num + i, sizeof(num) - i);
}

void record_pack(struct strbuf *sb, const struct peer *p)
{
	pack_str(sb, p->hostname);
	pack_str(sb, p->addr);
	pack_str(sb, p->ipoib_addr);
	pack_str(sb, p->fabric);
	pack_str(sb, p->pkey);
	pack_str(sb, p->placement_group);
	pack_str(sb, p->version);
	pack_str(sb, p->boot_id);
	pack_num(sb, p->slots);
	pack_num(sb, p->updated);
	pack_num(sb, (p->head ? 1 : 0) | (p->formed ? 2 : 0) | (p->self ? 4 : 0) | (int64_t)p->state << 3);
	pack_str(sb, p->reason);
	pack_num(sb, p->ready_ms);
	pack_num(sb, (int64_t)p->host_keys.n);
	for (size_t i = 0; i < p->host_keys.n; i++)
		pack_str(sb, p->host_keys.v[i]);
	pack_num(sb, (int64_t)p->n_user_keys);
	for (size_t i = 0; i < p->n_user_keys; i++) {
		pack_str(sb, p->user_keys[i].user);
		pack_str(sb, p->user_keys[i].key);
	}
	pack_str(sb, p->users);
}

struct unpack {
	const char *p, *end;
	bool bad;
};

/* The next string in place (*ret, *ret_n): false when absent ("-") or bad (u->bad set). */
static bool unpack_span(struct unpack *u, const char **ret, size_t *ret_n)
{
	size_t n = 0;

	if (u->bad || u->p >= u->end) {
		u->bad = true;
		return false;
	}
	if (*u->p == '-') {
		u->p++;
		return false;
	}
	/* bounded by what is left, not by a record's limits: whatever record_pack wrote reads back */
	while (u->p < u->end && *u->p >= '0' && *u->p <= '9' && n <= (size_t)(u->end - u->p))
		n = n * 10 + (size_t)(*u->p++ - '0');
	if (u->p >= u->end || *u->p != ':' || n > (size_t)(u->end - u->p - 1)) {
		u->bad = true;
		return false;
	}
	*ret = u->p + 1;
	*ret_n = n;
	u->p += 1 + n;
	return true;
}

/* The next string: malloc'd, NULL when absent ("-") or bad (u->bad set). */
static char *unpack_str(struct unpack *u)
{
	const char *s;
	size_t n;

	return unpack_span(u, &s, &n) ? xstrndup(s, n) : NULL;
}

/* The next number, read from a copy on the stack: no malloc for 40,000 numbers. */
static int64_t unpack_num(struct unpack *u, int64_t min, int64_t max)
{
	char buf[32];
	const char *s;
	size_t n;
	long long v = 0;

	if (!unpack_span(u, &s, &n)) {
		u->bad = true;
		return 0;
	}
	/* -?[0-9]{1,18} (the numbers record_pack writes) cannot overflow: read here. */
	{
		size_t neg = n && s[0] == '-', i = neg;
		int64_t d = 0;

		while (i < n && i - neg < 18 && s[i] >= '0' && s[i] <= '9')
			d = d * 10 + (s[i++] - '0');
		if (i == n && n > neg) {
			d = neg ? -d : d;
			if (d < min || d > max)
				u->bad = true;
			return u->bad ? 0 : d;
		}
	}
	if (n < sizeof(buf)) {
		memcpy(buf, s, n);
		buf[n] = '\0';
		if (!num_ll(buf, min, max, &v))
			u->bad = true;
	} else {
		char *copy = xstrndup(s, n);

		if (!num_ll(copy, min, max, &v))
			u->bad = true;
		free(copy);
	}
	return u->bad ? 0 : (int64_t)v;
}

int record_unpack(const char *data, size_t len, struct peer *ret)
{
	struct unpack u = { data, data + len, false };
	struct peer *p = ret;
	int64_t flags, n;

	memset(p, 0, sizeof(*p));
	p->hostname = unpack_str(&u);
	p->addr = unpack_str(&u);
	p->ipoib_addr = unpack_str(&u);
	p->fabric = unpack_str(&u);
	p->pkey = unpack_str(&u);
	p->placement_group = unpack_str(&u);
	p->version = unpack_str(&u);
	p->boot_id = unpack_str(&u);
	p->slots = (unsigned)unpack_num(&u, 0, UINT_MAX);
	p->updated = unpack_num(&u, INT64_MIN, INT64_MAX);
	flags = unpack_num(&u, 0, ((int64_t)PEER_FAILED << 3) | 7);     /* the bits record_pack sets */
	p->head = flags & 1;
	p->formed = flags & 2;
	p->self = flags & 4;
	p->state = (enum peer_state)(flags >> 3);
	p->reason = unpack_str(&u);
	p->ready_ms = unpack_num(&u, 0, INT64_MAX);
	/*
	 * Counts up to what the rest could hold (a key is 2 bytes at least), not RECORD_MAX_KEYS:
	 * this node's own peer is not a parsed record, and one it cannot read back would be a
	 * step failed (runner.peer-unreadable) for a list the step had whole.
	 */
	n = unpack_num(&u, 0, u.end - u.p);
	for (int64_t i = 0; i < n && !u.bad; i++) {
		char *k = unpack_str(&u);

		if (k)
			strlist_push_take(&p->host_keys, k);
		else
			u.bad = true;
	}
	n = unpack_num(&u, 0, (u.end - u.p) / 4);
	if (!u.bad && n > 0)
		p->user_keys = xcalloc((size_t)n, sizeof(*p->user_keys));
	for (int64_t i = 0; i < n && !u.bad; i++) {
		p->user_keys[i].user = unpack_str(&u);
		p->user_keys[i].key = unpack_str(&u);
		p->n_user_keys = (size_t)i + 1;
		if (!p->user_keys[i].user || !p->user_keys[i].key)
			u.bad = true;
	}
	p->users = unpack_str(&u);
	if (u.bad || u.p != u.end || !p->hostname || !p->addr) {
		peer_clear(p);
		return -EBADMSG;
	}
	return 0;
}
