/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-etcd's etcd client: base64, JSON access, requests (HTTP:
 * etcd-http.c) with endpoint failover and token auth, and ranges under a prefix read
 * page by page (etcd-client.h).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "base64.h"
#include "escape.h"
#include "etcd-client.h"
#include "number.h"

const char *etcd_endpoints[MAX_ENDPOINTS];
size_t etcd_n_endpoints, etcd_cur;         /* cur: the endpoint that answered last */
const char *etcd_auth_file;
int64_t etcd_deadline_ms;

void helper_sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	if (ms > 0)
		nanosleep(&ts, NULL);
}

/* A JSON string's base64 (common/text/base64.c's rules) decoded; NULL when absent or not base64. */
unsigned char *b64_str(const char *s, size_t *ret_len)
{
	return s ? b64_decode(s, strlen(s), ret_len) : NULL;
}

/* The end of a prefix range: the prefix with its last byte plus one. */
char *prefix_end_b64(const char *prefix)
{
	size_t n = strlen(prefix);
	unsigned char *e = (unsigned char *)strdup(prefix);
	char *out;

	if (!e)
		abort();
	while (n > 0 && e[n - 1] == 0xff)
		n--;
	if (n == 0) {
		free(e);
		return strdup("AA==");  /* "\0": every key */
	}
	e[n - 1]++;
	out = b64_encode(e, n);
	free(e);
	return out;
}

/*
 * ---- JSON: what an answer may hold ----
 *
 * Whatever answers at an endpoint may send any JSON: every member is read
 * through these, which give NULL (or 0, or "") when it is absent or of
 * another type, never a crash (json-c asserts on an array call on a
 * non-array, and a string of JSON null is NULL).
 */
json_object *jget(json_object *j, const char *k, json_type t)
{
	json_object *v = NULL;

	if (!j || !json_object_is_type(j, json_type_object) || !json_object_object_get_ex(j, k, &v) ||
	    !json_object_is_type(v, t))
		return NULL;
	return v;
}

const char *jstr(json_object *j, const char *k)
{
	return json_object_get_string(jget(j, k, json_type_string));
}

size_t jlen(json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* Element i of array a when it is a string, else NULL. */
json_object *jget_idx_str(json_object *a, size_t i)
{
	json_object *v = i < jlen(a) ? json_object_array_get_idx(a, i) : NULL;

	return json_object_is_type(v, json_type_string) ? v : NULL;
}

bool jtrue(json_object *j, const char *k)
{
	return json_object_get_boolean(jget(j, k, json_type_boolean));
}

/*
 * Text from an answer (an error message, a key) made safe for our stderr,
 * which reaches the run's output and syslog: escaped as the agent escapes
 * everything from elsewhere (common/text/escape.c), newlines included, so a
 * message can never print a line of its own.  At most max bytes of it.
 * The result lives until the next call with the same slot (0-3).
 */
static const char *safe(const void *s, size_t n, size_t max, int slot)
{
	static struct strbuf sb[4];

	sb[slot].len = 0;
	if (sb[slot].buf)
		sb[slot].buf[0] = '\0';
	if (!s)
		s = "", n = 0;
	esc_append(&sb[slot], s, n < max ? n : max, false);
	if (n > max)
		sb_append(&sb[slot], "...");
	return sb_str(&sb[slot]);
}

const char *safe_str(const char *s, int slot)
{
	return safe(s, s ? strlen(s) : 0, 200, slot);
}

/* ---- HTTP ---- */


size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct http_buf *b = arg;
	size_t n = size * nmemb;

	if (b->n + n + 1 > RESP_MAX) {
		b->too_big = true;
		return 0;
	}
	if (b->n + n + 1 > b->cap) {
		size_t cap = b->cap ? b->cap * 2 : 4096;

		while (cap < b->n + n + 1)
			cap *= 2;
		b->p = realloc(b->p, cap);
		if (!b->p)
			abort();
		b->cap = cap;
	}
	memcpy(b->p + b->n, data, n);
	b->n += n;
	b->p[b->n] = '\0';
	return n;
}


size_t on_stream(char *data, size_t size, size_t nmemb, void *arg)
{
	struct jstream *s = arg;
	size_t n = size * nmemb, off = 0;

	while (off < n) {
		size_t chunk = n - off > 65536 ? 65536 : n - off;
		json_object *j = json_tokener_parse_ex(s->tok, data + off, (int)chunk);
		bool go;

		if (!j) {
			if (json_tokener_get_error(s->tok) != json_tokener_continue) {
				fprintf(stderr, "hpcinit-etcd: watch stream: %s\n",
					json_tokener_error_desc(json_tokener_get_error(s->tok)));
				json_tokener_reset(s->tok);
				return 0;
			}
			off += chunk;
			s->held += chunk;
			if (s->held > RESP_MAX) {
				/* json-c would hold it all: end the stream (the caller lists again). */
				fprintf(stderr, "hpcinit-etcd: watch stream: one message passes %d MiB; "
					"ending the stream\n", RESP_MAX >> 20);
				json_tokener_reset(s->tok);
				s->held = 0;
				return 0;
			}
			continue;
		}
		off += json_tokener_get_parse_end(s->tok);
		s->held = 0;
		json_tokener_reset(s->tok);
		go = s->on_msg(j, s->arg);
		json_object_put(j);
		if (!go)
			return 0;
	}
	return n;
}

static bool answered;                   /* an endpoint has answered this process */

/* What one endpoint answered, for the message when none would do. */
struct tried {
	char what[256];
};


/*
 * An endpoint took the request and gave no answer in time: a member busy
 * with many nodes' requests at once (a cold start of a thousand).  Ask
 * again while the run's time (end) lasts, with twice the timeout each time,
 * after a pause with jitter (100 ms doubling to 2 s, half of it random) so
 * that the nodes that timed out together do not come back together.  true:
 * paused, ask again with *tmo.
 */
static bool ask_again(const char *path, const char *what, size_t busy, int64_t end, unsigned *attempt,
		      long *tmo)
{
	int64_t pause = *attempt < 5 ? 100LL << *attempt : 2000, left;

	pause = pause / 2 + random() % (pause / 2 + 1);
	left = end - mono_ms() - pause;
	if (left < 1000)
		return false;
	*tmo = *tmo * 2 < left ? *tmo * 2 : (long)left;
	(*attempt)++;
	fprintf(stderr, "hpcinit-etcd: %s: %s: %s (busy); asking again in %" PRId64 " ms (timeout %ld ms)\n",
		path, etcd_endpoints[busy], what, pause, *tmo);
	helper_sleep_ms(pause);
	return true;
}

/*
 * POST body to path on the endpoints in turn, from the one that answered
 * last.  0 and the parsed answer of the first endpoint that gave an HTTP
 * answer below 500; -1 when none did (stderr names each and its answer).
 */
static int call(const char *path, const char *body, json_object **ret, long *ret_status)
{
	struct tried tried[MAX_ENDPOINTS];
	bool renewed = false;           /* the token was renewed once in this call */
	int64_t end = etcd_deadline_ms ? etcd_deadline_ms :
		mono_ms() + ETCD_RUN_MS(etcd_timeout_ms, (int64_t)etcd_n_endpoints) - etcd_timeout_ms;
	long tmo = etcd_timeout_ms;
	unsigned attempt = 0, slow;
	size_t slow_k = 0;              /* the first endpoint that was busy */

again:
	slow = 0;
	for (size_t k = 0; k < etcd_n_endpoints; k++) {
		size_t i = (etcd_cur + k) % etcd_n_endpoints;
		char url[1024];
		struct http_buf b = { 0 };
		struct http_call hc = { .url = url, .body = body, .timeout_ms = tmo, .on_data = on_body, .arg = &b };
		long status;
		int rc;

		snprintf(url, sizeof(url), "%s%s", etcd_endpoints[i],
			 etcd_endpoints[i][strlen(etcd_endpoints[i]) - 1] == '/' ? path + 1 : path);
		rc = http_post(&hc);
		status = hc.status;
		/*
		 * It took the request and did not answer in time: busy, not
		 * down.  A connection kept from an earlier answer reports no
		 * connect time: an endpoint that answered this process before
		 * counts as up too.
		 */
		if (hc.fail == HTTP_TIMEDOUT && (answered || hc.connected) && !slow++)
			slow_k = k;
		if (b.too_big) {
			/* Not the endpoint's failure: every one would say as much. */
			fprintf(stderr, "hpcinit-etcd: %s: the answer of %s passes the %d MiB limit of one "
				"answer\n", path, etcd_endpoints[i], RESP_MAX >> 20);
			free(b.p);
			return R_LIMIT;
		}
		if (rc < 0) {
			snprintf(tried[k].what, sizeof(tried[k].what), "%s", hc.what);
		} else if (status >= 500 || status == 0) {
			json_object *j = b.p ? json_tokener_parse(b.p) : NULL, *m = NULL;

			/*
			 * 503: the member is up and cannot serve now (too many
			 * requests in its queue, a leader being elected): busy,
			 * asked again like a slow answer.
			 */
			if (status == 503 && !slow++)
				slow_k = k;

			if (j && ((m = jget(j, "message", json_type_string)) ||
				  (m = jget(j, "error", json_type_string))))
				snprintf(tried[k].what, sizeof(tried[k].what), "HTTP %ld: %s", status,
					 safe_str(json_object_get_string(m), 0));
			else
				snprintf(tried[k].what, sizeof(tried[k].what), "HTTP %ld", status);
			json_object_put(j);
		} else {
			json_object *j = json_tokener_parse(b.p ? b.p : "");

			free(b.p);
			if (!j) {
				snprintf(tried[k].what, sizeof(tried[k].what),
					 "HTTP %ld with an answer that is not JSON", status);
				continue;
			}
			if (status == 401 && etcd_auth_file && strcmp(path, "/v3/auth/authenticate") != 0) {
				int r;

				json_object_put(j);
				if (renewed) {
					/* A token etcd issued a moment ago refused: never a loop of logins. */
					fprintf(stderr, "hpcinit-etcd: %s: %s refused the token it had just "
						"issued (HTTP 401)\n", path, etcd_endpoints[i]);
					return R_REFUSED;
				}
				/* The token expired: log in again, then ask again (once). */
				free(etcd_token);
				etcd_token = NULL;
				if ((r = authenticate()) < 0)
					return r;
				renewed = true;
				goto again;
			}
			etcd_cur = i;
			answered = true;
			*ret = j;
			if (ret_status)
				*ret_status = status;
			return 0;
		}
		free(b.p);
	}
	if (slow && ask_again(path, tried[slow_k].what, (etcd_cur + slow_k) % etcd_n_endpoints, end,
			      &attempt, &tmo))
		goto again;
	fprintf(stderr, "hpcinit-etcd: no etcd endpoint answered %s:", path);
	for (size_t k = 0; k < etcd_n_endpoints; k++)
		fprintf(stderr, "%s %s: %s", k ? ";" : "", etcd_endpoints[(etcd_cur + k) % etcd_n_endpoints],
			tried[k].what);
	fputc('\n', stderr);
	return R_DOWN;
}

/* The error text of an answer (escaped), NULL when it is not an error. */
static const char *answer_error(json_object *j, long status)
{
	const char *m = jstr(j, "message");

	if (!m)
		m = jstr(j, "error");
	if (m)
		return safe_str(m, 1);
	return status >= 400 ? "refused" : NULL;
}

/* An int64 field (the gateway writes them as strings); 0 when absent or not a number. */
int64_t get_i64(json_object *j, const char *k)
{
	json_object *v = NULL;

	if (!j || !json_object_is_type(j, json_type_object) || !json_object_object_get_ex(j, k, &v))
		return 0;
	if (json_object_is_type(v, json_type_string)) {
		long long n;

		return num_ll(json_object_get_string(v), INT64_MIN, INT64_MAX, &n) ? n : 0;
	}
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	return 0;
}

int64_t header_rev(json_object *j)
{
	return get_i64(jget(j, "header", json_type_object), "revision");
}

int authenticate(void)
{
	FILE *f = fopen(etcd_auth_file, "r");
	char line[1024], *colon, *body;
	json_object *req, *j = NULL, *t = NULL;
	long status = 0;
	int r = -1;

	if (!f) {
		fprintf(stderr, "hpcinit-etcd: %s: %s\n", etcd_auth_file, strerror(errno));
		return R_REFUSED;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	colon = strchr(line, ':');
	if (!colon) {
		fprintf(stderr, "hpcinit-etcd: %s: expected one line user:password\n", etcd_auth_file);
		explicit_bzero(line, sizeof(line));
		return R_REFUSED;
	}
	*colon = '\0';
	req = json_object_new_object();
	json_object_object_add(req, "name", json_object_new_string(line));
	json_object_object_add(req, "password", json_object_new_string(colon + 1));
	explicit_bzero(line, sizeof(line));
	body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
	if ((r = call("/v3/auth/authenticate", body, &j, &status)) == 0) {
		r = -1;
		if ((t = jget(j, "token", json_type_string))) {
			etcd_token = strdup(json_object_get_string(t));
			r = 0;
		} else {
			fprintf(stderr, "hpcinit-etcd: etcd refused the user in %s: %s\n", etcd_auth_file,
				answer_error(j, status) ? answer_error(j, status) : "no token");
			r = R_REFUSED;
		}
	}
	explicit_bzero(body, strlen(body));
	free(body);
	json_object_put(j);
	return r;
}

/* POST a request object (consumed); R_DOWN none answered, R_REFUSED etcd refused it, R_LIMIT too big. */
int request(const char *path, json_object *req, json_object **ret)
{
	char *body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	long status = 0;
	const char *err;
	int r;

	json_object_put(req);
	r = call(path, body, ret, &status);
	free(body);
	if (r < 0)
		return r;
	if (status >= 400 && (err = answer_error(*ret, status))) {
		fprintf(stderr, "hpcinit-etcd: %s: etcd answered: %s\n", path, err);
		return R_REFUSED;
	}
	return 0;
}

json_object *str_obj(const char *s)
{
	return json_object_new_string(s);
}

json_object *b64_obj(const void *p, size_t n)
{
	char *e = b64_encode(p, n);
	json_object *o = json_object_new_string(e);

	free(e);
	return o;
}

json_object *i64_obj(int64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return str_obj(s);
}

int exit_of(int r)
{
	return r == R_DOWN ? EX_DOWN : EX_REFUSED;
}

/* ---- ranges: keys and values under a prefix, page by page ---- */

/* A put's item as list prints it (malloc'd, *ret_len bytes); NULL when kv is not whole. */
char *kv_item(json_object *kv, char **ret_key, size_t *ret_len)
{
	unsigned char *kb, *vb;
	size_t kl = 0, vl = 0;
	char *item = NULL;
	const char *v = jstr(kv, "value");

	kb = b64_str(jstr(kv, "key"), &kl);
	if (!kb)
		return NULL;
	vb = v ? b64_str(v, &vl) : (unsigned char *)strdup("");
	if (vb) {
		FILE *f = open_memstream(&item, ret_len);

		if (!f)
			abort();
		fprintf(f, "kv %zu %zu %" PRId64 "\n", kl, vl, get_i64(kv, "lease"));
		fwrite(kb, 1, kl, f);
		fwrite(vb, 1, vl, f);
		fputc('\n', f);
		fclose(f);
		if (ret_key) {
			kb[kl] = '\0';
			*ret_key = (char *)kb;
			kb = NULL;
		}
	}
	free(kb);
	free(vb);
	return item;
}

/* A deletion's item: "del KL\n" KEY "\n" (malloc'd, *ret_len bytes); NULL when kv has no key. */
static char *del_item(json_object *kv, size_t *ret_len)
{
	unsigned char *kb;
	size_t kl = 0;
	char *item = NULL;
	FILE *f;

	if (!(kb = b64_str(jstr(kv, "key"), &kl)))
		return NULL;
	if (!(f = open_memstream(&item, ret_len)))
		abort();
	fprintf(f, "del %zu\n", kl);
	fwrite(kb, 1, kl, f);
	fputc('\n', f);
	fclose(f);
	free(kb);
	return item;
}

/* One key and value as "kv KL VL LEASE\n" KEY VALUE "\n" ("del KL\n" KEY "\n" for a deletion). */
void print_kv(json_object *kv, bool deleted)
{
	size_t len = 0;
	char *item = deleted ? del_item(kv, &len) : kv_item(kv, NULL, &len);

	if (item)
		fwrite(item, 1, len, stdout);
	free(item);
}

/* An event of a watch message: its kv and whether it is a deletion; false when it has no kv. */
bool event_kv(json_object *e, json_object **ret_kv, bool *ret_deleted)
{
	const char *t = jstr(e, "type");

	*ret_kv = jget(e, "kv", json_type_object);
	*ret_deleted = t && !strcmp(t, "DELETE");
	return *ret_kv != NULL;
}


int range_prefix(const char *prefix, const struct range_ops *ops, int64_t *ret_rev)
{
	char *end = prefix_end_b64(prefix), *from = b64_encode((const unsigned char *)prefix, strlen(prefix));
	/*
	 * The first page is a few keys (etcd builds a whole answer before it
	 * sends a byte: a page of huge values would only time out); then as
	 * many as fill half of RESP_MAX at the size seen so far.
	 */
	int64_t rev = 0, limit = FIRST_PAGE_KEYS;
	size_t total = 0, keys = 0;
	int r = 0;

	for (;;) {
		json_object *req = json_object_new_object(), *j = NULL, *kvs, *last;
		size_t n;
		unsigned char *lk;
		size_t ll = 0;

		json_object_object_add(req, "key", str_obj(from));
		json_object_object_add(req, "range_end", str_obj(end));
		json_object_object_add(req, "limit", i64_obj(limit));
		if (rev)
			json_object_object_add(req, "revision", i64_obj(rev));
		r = request("/v3/kv/range", req, &j);
		if (r == R_LIMIT && limit > 1) {
			limit /= 2;             /* big values: fewer keys a page */
			continue;
		}
		if (r < 0)
			break;
		if (!rev) {
			rev = header_rev(j);
			if (rev <= 0) {
				fprintf(stderr, "hpcinit-etcd: /v3/kv/range: the answer has no revision\n");
				json_object_put(j);
				r = R_REFUSED;
				break;
			}
			ops->on_rev(rev, ops->arg);
		}
		kvs = jget(j, "kvs", json_type_array);
		n = jlen(kvs);
		for (size_t i = 0; i < n && r == 0; i++) {
			json_object *kv = json_object_array_get_idx(kvs, i);

			total += strlen(jstr(kv, "key") ? jstr(kv, "key") : "") +
				 strlen(jstr(kv, "value") ? jstr(kv, "value") : "");
			if (total / 4 * 3 > LIST_MAX) {
				fprintf(stderr, "hpcinit-etcd: the keys under %s hold more than %d MiB (%zu "
					"keys so far): over hpcinit-etcd's limit; remove the keys that are "
					"not nodes' records\n", safe_str(prefix, 0), LIST_MAX >> 20, keys);
				r = R_LIMIT;
				break;
			}
			keys++;
			r = ops->on_kv(kv, ops->arg);
		}
		if (r == 0 && keys) {
			size_t per_key = total / keys + 1;

			limit = (int64_t)(RESP_MAX / 2 / per_key);
			limit = limit < 1 ? 1 : limit > PAGE_KEYS ? PAGE_KEYS : limit;
		}
		/* The next page starts after the last key of this one. */
		last = n ? json_object_array_get_idx(kvs, n - 1) : NULL;
		lk = r == 0 && n && jtrue(j, "more") ? b64_str(jstr(last, "key"), &ll) : NULL;
		json_object_put(j);
		if (!lk)
			break;
		lk = realloc(lk, ll + 1);
		if (!lk)
			abort();
		lk[ll] = '\0';          /* the smallest key after it */
		free(from);
		from = b64_encode(lk, ll + 1);
		free(lk);
	}
	free(end);
	free(from);
	*ret_rev = rev;         /* on R_LIMIT too: the watch waits for a change after it */
	return r;
}

void print_rev(int64_t rev, void *arg)
{
	(void)arg;
	printf("rev %" PRId64 "\n", rev);
}

int print_put(json_object *kv, void *arg)
{
	(void)arg;
	print_kv(kv, false);
	return 0;
}

static void no_rev(int64_t rev, void *arg)
{
	(void)rev;
	(void)arg;
}

/* Every key under prefix, printed; the store's revision of that view in *ret_rev. */
int list_prefix(const char *prefix, int64_t *ret_rev)
{
	const struct range_ops ops = { .on_rev = no_rev, .on_kv = print_put };

	return range_prefix(prefix, &ops, ret_rev);
}

int cmd_list(const char *prefix)
{
	const struct range_ops ops = { .on_rev = print_rev, .on_kv = print_put };
	int64_t rev = 0;
	int r = range_prefix(prefix, &ops, &rev);

	/* The page by page printing means a failure can leave part of a list: no "end" and exit != 0. */
	return r < 0 ? exit_of(r) : EX_OK;
}
