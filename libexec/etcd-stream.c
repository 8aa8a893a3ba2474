/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-etcd's watch streams, read (etcd-client.h: struct jstream, struct
 * wmsg): the gateway's messages as they come, however the bytes are cut,
 * each read by a scanner that takes only what the watch and await use of
 * it (the flags, the revisions, each event's key, value and lease), and
 * json-c for a message the scanner does not take whole.
 */
#include "config.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "etcd-client.h"
#include "number.h"

#define SCAN_DEPTH 16                   /* deeper: json-c reads it (its own limit is 32) */

/* A scan's answers: more bytes needed; a whole message read; not one the scanner reads (json-c does). */
enum { SCAN_MORE, SCAN_DONE, SCAN_OTHER };

struct scan {
	const char *p, *end;
	int depth;
};

typedef int (*scan_member)(struct scan *s, const char *k, size_t kl, void *arg);
typedef int (*scan_elem)(struct scan *s, void *arg);

/* White space, then a byte: DONE with s->p at it, MORE at the end. */
static int sc_ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
	return s->p < s->end ? SCAN_DONE : SCAN_MORE;
}

/* A string without escapes or control bytes: its bytes between the quotes. */
static int sc_str(struct scan *s, const char **ret, size_t *ret_len)
{
	if (*s->p != '"')
		return SCAN_OTHER;
	for (const char *q = s->p + 1; q < s->end; q++) {
		unsigned char c = (unsigned char)*q;

		if (c == '"') {
			*ret = s->p + 1;
			*ret_len = (size_t)(q - s->p - 1);
			s->p = q + 1;
			return SCAN_DONE;
		}
		if (c == '\\' || c < 0x20)
			return SCAN_OTHER;
	}
	return SCAN_MORE;
}

/* A token of letters, digits and .+- (a number, true, false, null): its bytes, up to what follows. */
static int sc_word(struct scan *s, const char **ret, size_t *ret_len)
{
	const char *q = s->p;

	while (q < s->end && ((*q >= '0' && *q <= '9') || (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') ||
			      *q == '.' || *q == '+' || *q == '-'))
		q++;
	if (q == s->end)
		return SCAN_MORE;       /* a token may go on in the next bytes */
	if (q == s->p)
		return SCAN_OTHER;
	*ret = s->p;
	*ret_len = (size_t)(q - s->p);
	s->p = q;
	return SCAN_DONE;
}

static bool word_is(const char *w, size_t n, const char *lit)
{
	return n == strlen(lit) && !memcmp(w, lit, n);
}

/* A plain integer, as json-c reads one into an int: -?digits, at most 18 of them, no leading 0. */
static bool word_int(const char *w, size_t n, int64_t *ret)
{
	size_t i = w[0] == '-';
	int64_t v = 0;

	if (n == i || n - i > 18 || (w[i] == '0' && n - i > 1))
		return false;
	for (; i < n; i++) {
		if (w[i] < '0' || w[i] > '9')
			return false;
		v = v * 10 + (w[i] - '0');
	}
	*ret = w[0] == '-' ? -v : v;
	return true;
}

static int sc_skip(struct scan *s);

/* An object, each member's value to f (which reads exactly one value), or skipped. */
static int sc_object(struct scan *s, scan_member f, void *arg)
{
	int r;

	if (*s->p != '{' || ++s->depth > SCAN_DEPTH)
		return SCAN_OTHER;
	s->p++;
	if ((r = sc_ws(s)) != SCAN_DONE)
		return r;
	if (*s->p == '}') {
		s->p++;
		s->depth--;
		return SCAN_DONE;
	}
	for (;;) {
		const char *k;
		size_t kl;

		if ((r = sc_ws(s)) != SCAN_DONE || (r = sc_str(s, &k, &kl)) != SCAN_DONE ||
		    (r = sc_ws(s)) != SCAN_DONE)
			return r;
		if (*s->p != ':')
			return SCAN_OTHER;
		s->p++;
		if ((r = sc_ws(s)) != SCAN_DONE || (r = f ? f(s, k, kl, arg) : sc_skip(s)) != SCAN_DONE ||
		    (r = sc_ws(s)) != SCAN_DONE)
			return r;
		if (*s->p == '}') {
			s->p++;
			s->depth--;
			return SCAN_DONE;
		}
		if (*s->p++ != ',')
			return SCAN_OTHER;
	}
}

/* An array, each element to f (which reads exactly one value), or skipped. */
static int sc_array(struct scan *s, scan_elem f, void *arg)
{
	int r;

	if (*s->p != '[' || ++s->depth > SCAN_DEPTH)
		return SCAN_OTHER;
	s->p++;
	if ((r = sc_ws(s)) != SCAN_DONE)
		return r;
	if (*s->p == ']') {
		s->p++;
		s->depth--;
		return SCAN_DONE;
	}
	for (;;) {
		if ((r = sc_ws(s)) != SCAN_DONE || (r = f ? f(s, arg) : sc_skip(s)) != SCAN_DONE ||
		    (r = sc_ws(s)) != SCAN_DONE)
			return r;
		if (*s->p == ']') {
			s->p++;
			s->depth--;
			return SCAN_DONE;
		}
		if (*s->p++ != ',')
			return SCAN_OTHER;
	}
}

/* Any value, read and let go; what json-c alone reads (a fraction, NaN, a comment...) is OTHER. */
static int sc_skip(struct scan *s)
{
	const char *w;
	size_t n;
	int64_t v;
	int r;

	if (*s->p == '{')
		return sc_object(s, NULL, NULL);
	if (*s->p == '[')
		return sc_array(s, NULL, NULL);
	if (*s->p == '"')
		return sc_str(s, &w, &n);
	if ((r = sc_word(s, &w, &n)) != SCAN_DONE)
		return r;
	return word_is(w, n, "true") || word_is(w, n, "false") || word_is(w, n, "null") ||
	       word_int(w, n, &v) ? SCAN_DONE : SCAN_OTHER;
}

/* A string value: its bytes; NULL when the value is of another type (as json-c's reading gives). */
static int sc_str_value(struct scan *s, const char **ret, size_t *ret_len)
{
	*ret = NULL;
	*ret_len = 0;
	return *s->p == '"' ? sc_str(s, ret, ret_len) : sc_skip(s);
}

/* A number as get_i64 reads one: a string of digits (num_ll) or an integer; 0 for anything else. */
static int sc_i64_value(struct scan *s, int64_t *ret)
{
	const char *w;
	size_t n;
	int r;

	*ret = 0;
	if (*s->p == '"') {
		char buf[64];
		long long v;

		if ((r = sc_str(s, &w, &n)) != SCAN_DONE)
			return r;
		if (n >= sizeof(buf))
			return SCAN_OTHER;
		memcpy(buf, w, n);
		buf[n] = '\0';
		if (num_ll(buf, INT64_MIN, INT64_MAX, &v))
			*ret = v;
		return SCAN_DONE;
	}
	if (*s->p == '{' || *s->p == '[')
		return sc_skip(s);
	if ((r = sc_word(s, &w, &n)) != SCAN_DONE)
		return r;
	if (word_int(w, n, ret) || word_is(w, n, "true") || word_is(w, n, "false") || word_is(w, n, "null"))
		return SCAN_DONE;
	return SCAN_OTHER;
}

/* true only for the literal true (jtrue). */
static int sc_bool_value(struct scan *s, bool *ret)
{
	const char *w;
	size_t n;
	int r;

	*ret = false;
	if (*s->p == '{' || *s->p == '[' || *s->p == '"')
		return sc_skip(s);
	if ((r = sc_word(s, &w, &n)) != SCAN_DONE)
		return r;
	*ret = word_is(w, n, "true");
	return *ret || word_is(w, n, "false") || word_is(w, n, "null") || word_int(w, n, &(int64_t){ 0 }) ?
	       SCAN_DONE : SCAN_OTHER;
}

#define KEY_IS(k, kl, lit) ((kl) == sizeof(lit) - 1 && !memcmp((k), (lit), (kl)))

/* An event's kv: key, value, lease (a later one of a name wins, as in json-c's object). */
static int sc_kv_member(struct scan *s, const char *k, size_t kl, void *arg)
{
	struct wkv *e = arg;

	if (KEY_IS(k, kl, "key"))
		return sc_str_value(s, &e->key, &e->key_len);
	if (KEY_IS(k, kl, "value"))
		return sc_str_value(s, &e->value, &e->value_len);
	if (KEY_IS(k, kl, "lease"))
		return sc_i64_value(s, &e->lease);
	return sc_skip(s);
}

struct sc_event {
	struct wkv kv;
	bool has_kv;
};

static int sc_event_member(struct scan *s, const char *k, size_t kl, void *arg)
{
	struct sc_event *ev = arg;

	if (KEY_IS(k, kl, "type")) {
		const char *t;
		size_t n;
		int r = sc_str_value(s, &t, &n);

		ev->kv.deleted = t && n == 6 && !memcmp(t, "DELETE", 6);
		return r;
	}
	if (KEY_IS(k, kl, "kv")) {
		bool deleted = ev->kv.deleted;

		ev->kv = (struct wkv){ .deleted = deleted };
		ev->has_kv = *s->p == '{';
		return ev->has_kv ? sc_object(s, sc_kv_member, &ev->kv) : sc_skip(s);
	}
	return sc_skip(s);
}

static int sc_event(struct scan *s, void *arg)
{
	struct wmsg *m = arg;
	struct sc_event ev = { { 0 }, false };
	int r;

	m->n_events++;
	if (*s->p != '{')
		return sc_skip(s);
	if ((r = sc_object(s, sc_event_member, &ev)) != SCAN_DONE || !ev.has_kv)
		return r;
	if (m->n_ev == m->cap_ev) {
		m->cap_ev = m->cap_ev ? 2 * m->cap_ev : 16;
		m->ev = realloc(m->ev, m->cap_ev * sizeof(*m->ev));
		if (!m->ev)
			abort();
	}
	m->ev[m->n_ev++] = ev.kv;
	return SCAN_DONE;
}

static int sc_header_member(struct scan *s, const char *k, size_t kl, void *arg)
{
	return KEY_IS(k, kl, "revision") ? sc_i64_value(s, arg) : sc_skip(s);
}

static int sc_result_member(struct scan *s, const char *k, size_t kl, void *arg)
{
	struct wmsg *m = arg;

	if (KEY_IS(k, kl, "header")) {
		m->revision = 0;
		return *s->p == '{' ? sc_object(s, sc_header_member, &m->revision) : sc_skip(s);
	}
	if (KEY_IS(k, kl, "events")) {
		m->events = *s->p == '[';
		m->n_events = m->n_ev = 0;
		return m->events ? sc_array(s, sc_event, m) : sc_skip(s);
	}
	if (KEY_IS(k, kl, "compact_revision"))
		return sc_i64_value(s, &m->compact_revision);
	if (KEY_IS(k, kl, "canceled"))
		return sc_bool_value(s, &m->canceled);
	if (KEY_IS(k, kl, "created"))
		return sc_bool_value(s, &m->created);
	return sc_skip(s);
}

static void wmsg_reset(struct wmsg *m)
{
	struct wkv *ev = m->ev;
	size_t cap = m->cap_ev;

	*m = (struct wmsg){ .ev = ev, .cap_ev = cap };
}

/* A message with its "error" member is json-c's (its text as json-c gives it); so is one without a result object. */
static int sc_top_member(struct scan *s, const char *k, size_t kl, void *arg)
{
	struct wmsg *m = arg;

	if (KEY_IS(k, kl, "error"))
		return SCAN_OTHER;
	if (KEY_IS(k, kl, "result")) {
		wmsg_reset(m);
		m->result = *s->p == '{';
		return m->result ? sc_object(s, sc_result_member, m) : SCAN_OTHER;
	}
	return sc_skip(s);
}

/*
 * The message at the start of p[0..n): DONE (m filled, *used its bytes and
 * the white space before it), MORE (*used: the white space before it), or
 * OTHER (json-c reads it).
 */
static int wmsg_scan(const char *p, size_t n, struct wmsg *m, size_t *used)
{
	struct scan s = { .p = p, .end = p + n };
	int r = sc_ws(&s);

	*used = (size_t)(s.p - p);
	if (r != SCAN_DONE)
		return r;
	wmsg_reset(m);
	r = sc_object(&s, sc_top_member, m);
	if (r == SCAN_DONE && !m->result)
		r = SCAN_OTHER;
	if (r == SCAN_DONE)
		*used = (size_t)(s.p - p);
	return r;
}

/* A message json-c read, as struct wmsg (its strings json-c's: valid until j is put). */
static void wmsg_of_json(json_object *j, struct wmsg *m)
{
	json_object *res = jget(j, "result", json_type_object), *ev;

	wmsg_reset(m);
	if (!res) {
		json_object *e = jget(j, "error", json_type_object);

		m->error = e ? json_object_to_json_string(e) : jstr(j, "error");
		return;
	}
	m->result = true;
	m->compact_revision = get_i64(res, "compact_revision");
	m->canceled = jtrue(res, "canceled");
	m->created = jtrue(res, "created");
	m->revision = header_rev(res);
	if (!(ev = jget(res, "events", json_type_array)))
		return;
	m->events = true;
	m->n_events = jlen(ev);
	for (size_t i = 0; i < m->n_events; i++) {
		json_object *kv;
		bool deleted;

		if (!event_kv(json_object_array_get_idx(ev, i), &kv, &deleted))
			continue;
		if (m->n_ev == m->cap_ev) {
			m->cap_ev = m->cap_ev ? 2 * m->cap_ev : 16;
			m->ev = realloc(m->ev, m->cap_ev * sizeof(*m->ev));
			if (!m->ev)
				abort();
		}
		m->ev[m->n_ev++] = wkv_of(kv, deleted);
	}
}

/* The first n bytes of the held ones taken: the rest moved to the front. */
static void jstream_take(struct jstream *s, size_t n)
{
	memmove(s->buf, s->buf + n, s->len - n);
	s->len -= n;
	s->tried = 0;
}

/* The message at the front to json-c: 1 one was whole (taken, on_msg's answer in *go), 0 more bytes needed, -1 not JSON. */
static int jstream_json(struct jstream *s, bool *go)
{
	json_object *j;

	json_tokener_reset(s->tok);
	j = json_tokener_parse_ex(s->tok, s->buf, (int)s->len);
	if (!j) {
		if (json_tokener_get_error(s->tok) == json_tokener_continue)
			return 0;
		fprintf(stderr, "hpcinit-etcd: watch stream: %s\n",
			json_tokener_error_desc(json_tokener_get_error(s->tok)));
		return -1;
	}
	wmsg_of_json(j, &s->m);
	*go = s->on_msg(&s->m, s->arg);
	json_object_put(j);
	jstream_take(s, (size_t)json_tokener_get_parse_end(s->tok));
	return 1;
}

size_t on_stream(char *data, size_t size, size_t nmemb, void *arg)
{
	struct jstream *s = arg;
	size_t n = size * nmemb;

	if (s->len + n > RESP_MAX) {
		/* One message held past the limit: end the stream (the caller lists again). */
		fprintf(stderr, "hpcinit-etcd: watch stream: one message passes %d MiB; ending the stream\n",
			RESP_MAX >> 20);
		s->len = s->tried = 0;
		return 0;
	}
	if (s->len + n + 1 > s->cap) {
		size_t cap = s->cap ? s->cap : 4096;

		while (cap < s->len + n + 1)
			cap *= 2;
		if (!(s->buf = realloc(s->buf, cap)))
			abort();
		s->cap = cap;
	}
	memcpy(s->buf + s->len, data, n);
	s->len += n;
	/*
	 * A scan that needed more is tried again when a message may have
	 * ended: the bytes end in "}" or white space, or a newline came (the
	 * gateway's end of a message), or they have doubled -- never the
	 * whole of a long message again for each piece of it.
	 */
	if (s->tried && memchr(data, '\n', n))
		s->tried = 0;
	while (s->len) {
		char last = s->buf[s->len - 1];
		size_t used = 0;
		bool go = true;
		int r;

		if (s->tried && last != '}' && last != '\n' && last != ' ' && last != '\r' && last != '\t' &&
		    s->len < 2 * s->tried)
			break;
		r = wmsg_scan(s->buf, s->len, &s->m, &used);
		if (r == SCAN_DONE) {
			go = s->on_msg(&s->m, s->arg);
			jstream_take(s, used);
		} else if (r == SCAN_MORE) {
			jstream_take(s, used);  /* the white space before it */
			s->tried = s->len;
			break;
		} else {
			r = jstream_json(s, &go);
			if (r < 0) {
				s->len = s->tried = 0;
				return 0;
			}
			if (r == 0) {
				s->tried = s->len;
				break;
			}
		}
		if (!go)
			return 0;
	}
	return n;
}

void jstream_free(struct jstream *s)
{
	json_tokener_free(s->tok);
	free(s->buf);
	free(s->m.ev);
	*s = (struct jstream){ 0 };
}
