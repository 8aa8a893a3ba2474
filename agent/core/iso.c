/* SPDX-License-Identifier: MIT */
/*
 * The frames of an isolated step's answer (iso.h), between its child and the
 * runner: "R r\n", then "J - N\n" and N bytes of the report's JSON, one
 * "P S N\n" and N bytes of record_pack a peer (S: 1 for this node), "E\n".
 * A peer the runner cannot read back fails the whole answer: a list one
 * node shorter than the step's own report said is a hostfile that silently
 * lacks a live node.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <string.h>

#include "iso.h"
#include "number.h"
#include "status.h"

/* "T A N\n", then N bytes of text and "\n".  No printf: one of these per peer. */
static void iso_put(struct strbuf *sb, char tag, const char *a, const char *text, size_t n)
{
	char num[24];
	size_t i = sizeof(num), l = n;
	const char pre[2] = { tag, ' ' };

	num[--i] = '\n';
	do {
		num[--i] = (char)('0' + l % 10);
		l /= 10;
	} while (l);
	num[--i] = ' ';
	sb_appendn(sb, pre, 2);
	sb_append(sb, a);
	sb_appendn(sb, num + i, sizeof(num) - i);
	sb_appendn(sb, text, n);
	sb_appendn(sb, "\n", 1);
}

void iso_answer(struct strbuf *sb, int r, const char *report_json, const struct peerset *peers)
{
	struct strbuf one = STRBUF_INIT;

	sb_printf(sb, "R %d\n", r);
	iso_put(sb, 'J', "-", report_json, strlen(report_json));
	for (size_t i = 0; peers && i < peers->n; i++) {
		sb_reset(&one);
		record_pack(&one, &peers->v[i]);
		iso_put(sb, 'P', peers->v[i].self ? "1" : "0", one.buf ? one.buf : "", one.len);
	}
	sb_free(&one);
	sb_append(sb, "E\n");
}

/*
 * "T A N" (tag, a word of at most 7 characters, a length), the line from p
 * to nl.  Not sscanf: it measures the whole rest of the answer on every call,
 * which made reading back 10,000 peers quadratic.
 */
static bool iso_header(const char *p, const char *nl, char a[8], size_t *ret_n)
{
	const char *w = p + 2, *sp;
	unsigned long long n;
	const char *end;

	if (nl - p < 5 || p[1] != ' ' || !(sp = memchr(w, ' ', (size_t)(nl - w))) || sp == w || sp - w > 7 ||
	    sp[1] < '0' || sp[1] > '9')
		return false;
	memcpy(a, w, (size_t)(sp - w));
	a[sp - w] = '\0';
	if (!num_ull_prefix(sp + 1, 10, SIZE_MAX, &n, &end) || end != nl)
		return false;
	*ret_n = (size_t)n;
	return true;
}

/* One "P" frame's body onto peers; false (why says which) when it does not read back. */
static bool iso_peer(const char *body, size_t n, const char *a, size_t nth, struct peerset **peers,
		     struct strbuf *why)
{
	struct peer pe;
	struct peer *slot;
	int r = record_unpack(body, n, &pe);

	if (r < 0) {
		if (why && !why->len)
			/* not its bytes: they are a record's, another node's words */
			sb_printf(why, "peer %zu of the answer (%zu bytes) does not read back: %s", nth, n,
				  strerror(-r));
		return false;
	}
	if (!*peers)
		*peers = xcalloc(1, sizeof(**peers));
	slot = peerset_add(*peers);
	*slot = pe;
	slot->self = a[0] == '1';
	return true;
}

int iso_parse(const char *text, size_t len, struct report *rep, struct peerset **ret_peers, int *ret,
	      struct strbuf *why)
{
	const char *p = text, *end = text + len;
	struct peerset *peers = NULL;
	bool done = false, have_report = false, unreadable = false;
	size_t nth = 0;

	*ret_peers = NULL;
	while (p < end && !done) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char tag, a[8];
		size_t n;

		if (!nl)
			break;
		tag = *p;
		if (tag == 'E') {
			done = true;
		} else if (tag == 'R') {
			long long v;
			const char *e;

			/* "R -errno": anything else is no answer (strtol read junk as 0, success) */
			if (p[1] != ' ' || !num_ll_prefix(p + 2, INT_MIN, INT_MAX, &v, &e) || e != nl)
				break;
			*ret = (int)v;
		} else if ((tag == 'J' || tag == 'P') && iso_header(p, nl, a, &n) &&
			   n <= (size_t)(end - nl - 1)) {
			const char *body = nl + 1;

			if (tag == 'J')
				have_report = report_from_json(body, n, rep) == 0;
			else if (!iso_peer(body, n, a, ++nth, &peers, why))
				unreadable = true;     /* read on: a cut-short answer is still that */
			nl = body + n;
		} else {
			break;
		}
		p = nl + 1;
	}
	if (!done || !have_report || unreadable) {
		peerset_free(peers);
		return !done || !have_report ? -ENODATA : -EBADMSG;
	}
	*ret_peers = peers;
	return 0;
}
