/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-etcd: every etcd call of hpcinit, in its own process so that the
 * agent never maps libcurl or json-c (a node that does not use etcd never
 * runs this).  It talks to etcd's v3 JSON gateway (etcd 3.4 and 3.5: the
 * same /v3/... calls); keys and values travel base64-encoded in the JSON.
 * JSON is parsed with json-c, the library Debian's own tools use, which
 * also parses the watch stream object by object.
 *
 *   hpcinit-etcd [OPTIONS] sync KEY TTL_S [LEASE [PREFIX [EXPECT MS]]]   (the value on stdin)
 *       keep LEASE alive (or grant a new lease of TTL_S when it is gone or
 *       0), and put KEY=value under it unless etcd holds exactly that (a
 *       lease granted just now holds nothing yet: no range to ask first).
 *       Prints "lease ID", "ttl T", "put 0|1", "rev R".  TTL_S 0: put with
 *       no lease (the ssh CA's certificates, which outlive any one lease).
 *       With PREFIX, then a line "list" and what list PREFIX prints; with
 *       EXPECT and MS, what await PREFIX EXPECT MS prints: a node's whole
 *       apply (publish, list, wait for its peers) is one process.
 *   hpcinit-etcd [OPTIONS] list PREFIX
 *       "rev R", then per key "kv KEYLEN VALUELEN LEASE" and the key and
 *       value bytes, then a newline.
 *   hpcinit-etcd [OPTIONS] keepalive LEASE       "ttl T" (0: the lease is gone)
 *   hpcinit-etcd [OPTIONS] leave KEY [LEASE]     revoke LEASE, delete KEY
 *   hpcinit-etcd events URL
 *       Azure Scheduled Events (no --endpoint needed): GET URL with the
 *       header "Metadata: true"; "self NAME" (this VM's name from the
 *       instance metadata service at the same address), then one line
 *       "event ID TYPE STATUS RESOURCE,RESOURCE..." per event.
 *   hpcinit-etcd ack URL EVENT_ID
 *       acknowledge (start) the event: POST {"StartRequests":[{"EventId":ID}]}.
 *   hpcinit-etcd [OPTIONS] await PREFIX EXPECT MS
 *       as list, once PREFIX holds EXPECT keys or after MS: one process
 *       for a node's whole wait for its peers (a range, then a watch whose
 *       events keep the membership, keys and values: the answer needs no
 *       second range); "waited 1" first when it had to watch.
 *   hpcinit-etcd [OPTIONS] watch PREFIX [REV]
 *       runs until killed, streaming the membership under PREFIX: "reset",
 *       every key as list prints it, "synced" when it starts (and again
 *       after a reconnect or a compacted revision, when events may have been
 *       missed); then per batch of events one "kv KL VL LEASE" (a put, key
 *       and value follow) or "del KL" (a deletion, the key follows) each,
 *       and "synced".  The reader keeps the membership without listing
 *       again.  With REV (a reader that has the view at revision REV) it
 *       starts with the events after REV instead; a REV compacted away
 *       gives the whole membership as at a start.  Lines "endpoint URL: ..." on stderr say what failed.
 *
 * Options: --endpoint URL (repeat; tried in turn, the next after a
 * connection failure or a 5xx answer), --cacert FILE, --cert FILE --key
 * FILE, --auth FILE ("user:password", etcd's token auth), --timeout MS
 * (one request; default 5000).
 *
 * Exit 0 on success, 2 on usage errors, 1 when no endpoint answered (stderr
 * names every endpoint and what it answered), 3 when etcd refused the call.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <json-c/json.h>

#include "escape.h"
#include "etcd-proto.h"

#define MAX_ENDPOINTS 32
#define STDIN_MAX (64 * 1024)
/*
 * Limits on what etcd (or whatever answers at an endpoint) can make this
 * process hold.  A range is asked for in pages at one revision (a few keys
 * first, then as many as fill half of RESP_MAX at the size seen, at most
 * PAGE_KEYS; half as many when an answer would pass RESP_MAX), and printed page
 * by page: the helper holds one page, never the whole membership (await
 * keeps the membership itself, at most LIST_MAX).  One watch message is at
 * most RESP_MAX too.  Past LIST_MAX under the prefix the call fails with a
 * message saying so (exit 3), never "no endpoint answered".
 */
#define RESP_MAX (8 * 1024 * 1024)      /* one answer or one watch message */
#define PAGE_KEYS 1000                  /* at most, a page */
#define FIRST_PAGE_KEYS 4               /* the first page: value sizes unknown yet */
#define LIST_MAX ETCD_LIST_MAX           /* keys and values under the prefix, in all */
#define LIST_RETRY_S 10                 /* watch: an over-limit prefix is listed again at most this often */
#define CONNECT_MS 1500

/* The exit codes and frames the agent reads: etcd-proto.h, shared with lib/rendezvous/etcd.c. */
enum { EX_OK = ETCD_EX_OK, EX_DOWN = ETCD_EX_DOWN, EX_USAGE = ETCD_EX_USAGE, EX_REFUSED = ETCD_EX_REFUSED };
/* request()'s failures: no endpoint answered, etcd refused, over a limit (a refusal too). */
enum { R_DOWN = -1, R_REFUSED = -2, R_LIMIT = -3 };

static const char *endpoints[MAX_ENDPOINTS];
static size_t n_endpoints, cur;         /* cur: the endpoint that answered last */
static const char *cacert, *cert, *key, *auth_file;
static long timeout_ms = 5000;
static char *token;                     /* etcd auth token, after authenticate */
static CURL *curl;

/* ---- base64 ---- */

static const char b64c[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static char *b64_encode(const unsigned char *s, size_t n)
{
	char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;

	if (!out)
		abort();
	for (size_t i = 0; i < n; i += 3) {
		unsigned v = (unsigned)s[i] << 16 | (i + 1 < n ? (unsigned)s[i + 1] << 8 : 0) |
			     (i + 2 < n ? s[i + 2] : 0);

		*o++ = b64c[v >> 18 & 63];
		*o++ = b64c[v >> 12 & 63];
		*o++ = i + 1 < n ? b64c[v >> 6 & 63] : '=';
		*o++ = i + 2 < n ? b64c[v & 63] : '=';
	}
	*o = '\0';
	return out;
}

static int b64_val(int ch)
{
	const char *p = ch ? strchr(b64c, ch) : NULL;

	return p ? (int)(p - b64c) : -1;
}

/* Decode s into a malloc'd buffer (NUL-terminated); NULL when s is not base64. */
static unsigned char *b64_decode(const char *s, size_t *ret_len)
{
	size_t n = s ? strlen(s) : 0, o = 0;
	unsigned char *out;
	unsigned acc = 0;
	int bits = 0;

	if (!s)
		return NULL;
	out = malloc(n / 4 * 3 + 4);
	if (!out)
		abort();
	for (size_t i = 0; i < n; i++) {
		int v;

		if (s[i] == '=')
			break;
		v = b64_val((unsigned char)s[i]);
		if (v < 0) {
			free(out);
			return NULL;
		}
		acc = acc << 6 | (unsigned)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (unsigned char)(acc >> bits & 0xff);
		}
	}
	out[o] = '\0';
	*ret_len = o;
	return out;
}

/* The end of a prefix range: the prefix with its last byte plus one. */
static char *prefix_end_b64(const char *prefix)
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
static json_object *jget(json_object *j, const char *k, json_type t)
{
	json_object *v = NULL;

	if (!j || !json_object_is_type(j, json_type_object) || !json_object_object_get_ex(j, k, &v) ||
	    !json_object_is_type(v, t))
		return NULL;
	return v;
}

static const char *jstr(json_object *j, const char *k)
{
	return json_object_get_string(jget(j, k, json_type_string));
}

static size_t jlen(json_object *a)
{
	return json_object_is_type(a, json_type_array) ? json_object_array_length(a) : 0;
}

/* Element i of array a when it is a string, else NULL. */
static json_object *jget_idx_str(json_object *a, size_t i)
{
	json_object *v = i < jlen(a) ? json_object_array_get_idx(a, i) : NULL;

	return json_object_is_type(v, json_type_string) ? v : NULL;
}

static bool jtrue(json_object *j, const char *k)
{
	return json_object_get_boolean(jget(j, k, json_type_boolean));
}

/*
 * Text from an answer (an error message, a key) made safe for our stderr,
 * which reaches the run's output and syslog: escaped as the agent escapes
 * everything from elsewhere (agent/text/escape.c), newlines included, so a
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

static const char *safe_str(const char *s, int slot)
{
	return safe(s, s ? strlen(s) : 0, 200, slot);
}

/* ---- HTTP ---- */

struct buf {
	char *p;
	size_t n, cap;
	bool too_big;                   /* the answer passed RESP_MAX: cut off */
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
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

/*
 * A stream of JSON messages (the gateway's watch: one object per line),
 * split by json-c's own incremental tokener: each whole object goes to
 * on_msg as it completes, however curl cuts the bytes, and no byte is
 * parsed twice.  on_msg returns false to end the stream; bytes that are
 * not JSON end it too (the caller reconnects).
 */
struct jstream {
	json_tokener *tok;
	bool (*on_msg)(json_object *msg, void *arg);
	void *arg;
	size_t held;                    /* bytes of the message not yet whole */
};

static size_t on_stream(char *data, size_t size, size_t nmemb, void *arg)
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

static void setup_handle(CURL *h, const char *url, const char *body, struct curl_slist *hdrs)
{
	curl_easy_reset(h);
	curl_easy_setopt(h, CURLOPT_URL, url);
	curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
	curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms < CONNECT_MS ? timeout_ms : CONNECT_MS);
	curl_easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(h, CURLOPT_NOPROXY, "*");      /* etcd is never reached through a proxy */
	if (cacert)
		curl_easy_setopt(h, CURLOPT_CAINFO, cacert);
	if (cert) {
		curl_easy_setopt(h, CURLOPT_SSLCERT, cert);
		curl_easy_setopt(h, CURLOPT_SSLKEY, key);
	}
}

static struct curl_slist *headers(void)
{
	struct curl_slist *h = curl_slist_append(NULL, "Content-Type: application/json");

	if (token) {
		char *a = malloc(strlen(token) + 32);

		if (!a)
			abort();
		sprintf(a, "Authorization: %s", token);
		h = curl_slist_append(h, a);
		free(a);
	}
	return h;
}

/* What one endpoint answered, for the message when none would do. */
struct tried {
	char what[256];
};

static int authenticate(void);

/*
 * POST body to path on the endpoints in turn, from the one that answered
 * last.  0 and the parsed answer of the first endpoint that gave an HTTP
 * answer below 500; -1 when none did (stderr names each and its answer).
 */
static int call(const char *path, const char *body, json_object **ret, long *ret_status)
{
	struct tried tried[MAX_ENDPOINTS];
	bool renewed = false;           /* the token was renewed once in this call */

again:

	for (size_t k = 0; k < n_endpoints; k++) {
		size_t i = (cur + k) % n_endpoints;
		char url[1024];
		struct buf b = { 0 };
		struct curl_slist *hdrs = headers();
		long status = 0;
		CURLcode cc;

		snprintf(url, sizeof(url), "%s%s%s", endpoints[i],
			 endpoints[i][strlen(endpoints[i]) - 1] == '/' ? path + 1 : path, "");
		setup_handle(curl, url, body, hdrs);
		curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &b);
		cc = curl_easy_perform(curl);
		curl_slist_free_all(hdrs);
		if (cc == CURLE_OK)
			curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
		if (b.too_big) {
			/* Not the endpoint's failure: every one would say as much. */
			fprintf(stderr, "hpcinit-etcd: %s: the answer of %s passes the %d MiB limit of one "
				"answer\n", path, endpoints[i], RESP_MAX >> 20);
			free(b.p);
			return R_LIMIT;
		}
		if (cc != CURLE_OK) {
			bool tls = strncmp(endpoints[i], "https:", 6) == 0;
			const char *hint = "";

			/* Name the TLS setting to look at (never a key or a password). */
			if (cc == CURLE_PEER_FAILED_VERIFICATION)
				hint = cacert ? " (the member's certificate does not verify against "
					"discovery.ca_file, or does not name this address)" :
					" (the member's certificate does not verify against the system's CAs: "
					"set discovery.ca_file)";
			else if (tls && !cert && (cc == CURLE_RECV_ERROR || cc == CURLE_SSL_CONNECT_ERROR ||
						  cc == CURLE_SEND_ERROR))
				hint = " (TLS handshake refused: a member with --client-cert-auth needs "
					"discovery.cert_file and key_file)";
			else if (tls && (cc == CURLE_SSL_CERTPROBLEM || cc == CURLE_SSL_CONNECT_ERROR))
				hint = " (check discovery.cert_file and key_file)";
			snprintf(tried[k].what, sizeof(tried[k].what), "%s%s", curl_easy_strerror(cc), hint);
		} else if (status >= 500 || status == 0) {
			json_object *j = b.p ? json_tokener_parse(b.p) : NULL, *m = NULL;

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
			if (status == 401 && auth_file && strcmp(path, "/v3/auth/authenticate") != 0) {
				int r;

				json_object_put(j);
				if (renewed) {
					/* A token etcd issued a moment ago refused: never a loop of logins. */
					fprintf(stderr, "hpcinit-etcd: %s: %s refused the token it had just "
						"issued (HTTP 401)\n", path, endpoints[i]);
					return R_REFUSED;
				}
				/* The token expired: log in again, then ask again (once). */
				free(token);
				token = NULL;
				if ((r = authenticate()) < 0)
					return r;
				renewed = true;
				goto again;
			}
			cur = i;
			*ret = j;
			if (ret_status)
				*ret_status = status;
			return 0;
		}
		free(b.p);
	}
	fprintf(stderr, "hpcinit-etcd: no etcd endpoint answered %s:", path);
	for (size_t k = 0; k < n_endpoints; k++)
		fprintf(stderr, "%s %s: %s", k ? ";" : "", endpoints[(cur + k) % n_endpoints],
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
static int64_t get_i64(json_object *j, const char *k)
{
	json_object *v = NULL;

	if (!j || !json_object_is_type(j, json_type_object) || !json_object_object_get_ex(j, k, &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	if (json_object_is_type(v, json_type_int))
		return json_object_get_int64(v);
	return 0;
}

static int64_t header_rev(json_object *j)
{
	return get_i64(jget(j, "header", json_type_object), "revision");
}

static int authenticate(void)
{
	FILE *f = fopen(auth_file, "r");
	char line[1024], *colon, *body;
	json_object *req, *j = NULL, *t = NULL;
	long status = 0;
	int r = -1;

	if (!f) {
		fprintf(stderr, "hpcinit-etcd: %s: %s\n", auth_file, strerror(errno));
		return R_REFUSED;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	colon = strchr(line, ':');
	if (!colon) {
		fprintf(stderr, "hpcinit-etcd: %s: expected one line user:password\n", auth_file);
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
			token = strdup(json_object_get_string(t));
			r = 0;
		} else {
			fprintf(stderr, "hpcinit-etcd: etcd refused the user in %s: %s\n", auth_file,
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
static int request(const char *path, json_object *req, json_object **ret)
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

static json_object *str_obj(const char *s)
{
	return json_object_new_string(s);
}

static json_object *b64_obj(const void *p, size_t n)
{
	char *e = b64_encode(p, n);
	json_object *o = json_object_new_string(e);

	free(e);
	return o;
}

static json_object *i64_obj(int64_t v)
{
	char s[32];

	snprintf(s, sizeof(s), "%" PRId64, v);
	return str_obj(s);
}

static int exit_of(int r)
{
	return r == R_DOWN ? EX_DOWN : EX_REFUSED;
}

/* ---- subcommands ---- */

static int lease_keepalive(int64_t lease, int64_t *ret_ttl)
{
	json_object *req = json_object_new_object(), *j = NULL, *res = NULL;
	int r;

	json_object_object_add(req, "ID", i64_obj(lease));
	r = request("/v3/lease/keepalive", req, &j);
	if (r == 0) {
		/* {"result": {"ID": ..., "TTL": ...}}; no TTL: the lease is gone */
		if (!(res = jget(j, "result", json_type_object)))
			res = j;
		*ret_ttl = get_i64(res, "TTL");
	} else if (r == R_REFUSED) {
		*ret_ttl = 0;
		r = 0;
	}
	json_object_put(j);
	return r;
}

static int read_stdin(char **ret, size_t *ret_len)
{
	size_t n = 0, cap = 4096;
	char *p = malloc(cap);

	if (!p)
		abort();
	for (;;) {
		ssize_t k;

		if (n + 1 >= cap) {
			if (cap >= STDIN_MAX)
				break;
			cap *= 2;
			p = realloc(p, cap);
			if (!p)
				abort();
		}
		k = read(0, p + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	p[n] = '\0';
	*ret = p;
	*ret_len = n;
	return 0;
}

static int cmd_sync(const char *k, int64_t ttl_s, int64_t lease)
{
	json_object *req, *j = NULL, *kvs = NULL;
	int64_t ttl = 0, rev = 0;
	char *value = NULL;
	size_t vlen = 0;
	bool same = false, fresh = false;
	int r;

	read_stdin(&value, &vlen);
	if (ttl_s == 0)
		lease = 0;
	if (lease > 0) {
		r = lease_keepalive(lease, &ttl);
		if (r < 0)
			goto out;
	}
	if (ttl <= 0 && ttl_s > 0) {
		fresh = true;
		req = json_object_new_object();
		json_object_object_add(req, "TTL", i64_obj(ttl_s));
		r = request("/v3/lease/grant", req, &j);
		if (r < 0)
			goto out;
		lease = get_i64(j, "ID");
		ttl = get_i64(j, "TTL");
		json_object_put(j);
		j = NULL;
		if (lease <= 0) {
			fprintf(stderr, "hpcinit-etcd: etcd granted no lease\n");
			r = R_REFUSED;
			goto out;
		}
	}
	/* Put only what differs: an unchanged record wakes no watcher. */
	req = json_object_new_object();
	json_object_object_add(req, "key", b64_obj(k, strlen(k)));
	r = fresh ? 0 : request("/v3/kv/range", req, &j);
	if (fresh)
		json_object_put(req);
	if (r < 0)
		goto out;
	rev = fresh ? 0 : header_rev(j);
	if (!fresh && jlen(kvs = jget(j, "kvs", json_type_array)) == 1) {
		json_object *kv = json_object_array_get_idx(kvs, 0);
		unsigned char *have;
		size_t hl = 0;

		if ((have = b64_decode(jstr(kv, "value"), &hl))) {
			same = hl == vlen && memcmp(have, value, vlen) == 0 && get_i64(kv, "lease") == lease;
			free(have);
		}
	}
	json_object_put(j);
	j = NULL;
	if (!same) {
		req = json_object_new_object();
		json_object_object_add(req, "key", b64_obj(k, strlen(k)));
		json_object_object_add(req, "value", b64_obj(value, vlen));
		json_object_object_add(req, "lease", i64_obj(lease));
		r = request("/v3/kv/put", req, &j);
		if (r < 0)
			goto out;
		rev = header_rev(j);
	}
	printf("lease %" PRId64 "\nttl %" PRId64 "\nput %d\nrev %" PRId64 "\n", lease, ttl, !same, rev);
	r = 0;
out:
	json_object_put(j);
	free(value);
	return r < 0 ? exit_of(r) : EX_OK;
}

/* A put's item as list prints it (malloc'd, *ret_len bytes); NULL when kv is not whole. */
static char *kv_item(json_object *kv, char **ret_key, size_t *ret_len)
{
	unsigned char *kb, *vb;
	size_t kl = 0, vl = 0;
	char *item = NULL;
	const char *v = jstr(kv, "value");

	kb = b64_decode(jstr(kv, "key"), &kl);
	if (!kb)
		return NULL;
	vb = v ? b64_decode(v, &vl) : (unsigned char *)strdup("");
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

	if (!(kb = b64_decode(jstr(kv, "key"), &kl)))
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
static void print_kv(json_object *kv, bool deleted)
{
	size_t len = 0;
	char *item = deleted ? del_item(kv, &len) : kv_item(kv, NULL, &len);

	if (item)
		fwrite(item, 1, len, stdout);
	free(item);
}

/* An event of a watch message: its kv and whether it is a deletion; false when it has no kv. */
static bool event_kv(json_object *e, json_object **ret_kv, bool *ret_deleted)
{
	const char *t = jstr(e, "type");

	*ret_kv = jget(e, "kv", json_type_object);
	*ret_deleted = t && !strcmp(t, "DELETE");
	return *ret_kv != NULL;
}

/*
 * Every key under prefix, in pages at one revision: on_rev once (the
 * revision of the view, before any key), then on_kv for each key.  A
 * page whose answer would pass RESP_MAX is asked again with half the keys;
 * past LIST_MAX bytes of keys and values in all, R_LIMIT and a message.
 */
struct range_ops {
	void (*on_rev)(int64_t rev, void *arg);
	int (*on_kv)(json_object *kv, void *arg);       /* < 0 stops the range (that error) */
	void *arg;
};

static int range_prefix(const char *prefix, const struct range_ops *ops, int64_t *ret_rev)
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
		lk = r == 0 && n && jtrue(j, "more") ? b64_decode(jstr(last, "key"), &ll) : NULL;
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

static void print_rev(int64_t rev, void *arg)
{
	(void)arg;
	printf("rev %" PRId64 "\n", rev);
}

static int print_put(json_object *kv, void *arg)
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
static int list_prefix(const char *prefix, int64_t *ret_rev)
{
	const struct range_ops ops = { .on_rev = no_rev, .on_kv = print_put };

	return range_prefix(prefix, &ops, ret_rev);
}

static int cmd_list(const char *prefix)
{
	const struct range_ops ops = { .on_rev = print_rev, .on_kv = print_put };
	int64_t rev = 0;
	int r = range_prefix(prefix, &ops, &rev);

	/* The page by page printing means a failure can leave part of a list: no "end" and exit != 0. */
	return r < 0 ? exit_of(r) : EX_OK;
}

static int cmd_keepalive(int64_t lease)
{
	int64_t ttl = 0;
	int r = lease_keepalive(lease, &ttl);

	if (r < 0)
		return exit_of(r);
	printf("ttl %" PRId64 "\n", ttl);
	return EX_OK;
}

static int cmd_leave(const char *k, int64_t lease)
{
	json_object *req, *j = NULL;
	int revoked = 0, r;

	if (lease > 0) {
		req = json_object_new_object();
		json_object_object_add(req, "ID", i64_obj(lease));
		r = request("/v3/lease/revoke", req, &j);
		if (r == R_DOWN)
			return EX_DOWN;
		revoked = r == 0;       /* -2: not found, expired already */
		json_object_put(j);
		j = NULL;
	}
	req = json_object_new_object();
	json_object_object_add(req, "key", b64_obj(k, strlen(k)));
	r = request("/v3/kv/deleterange", req, &j);
	if (r < 0)
		return exit_of(r);
	printf("revoked %d\ndeleted %" PRId64 "\n", revoked, get_i64(j, "deleted"));
	json_object_put(j);
	return EX_OK;
}

/* ---- watch ---- */

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void sleep_ms(int64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	if (ms > 0)
		nanosleep(&ts, NULL);
}

struct watch_state {
	bool created, changed, restart;
	bool quiet;                     /* over the limit: print nothing, end at the first change */
	int64_t next_rev;
};

/* The end of a batch: the reader's view is whole again. */
static void say_synced(void)
{
	if (fputs("synced\n", stdout) == EOF || fflush(stdout) == EOF)
		exit(0);        /* the reader is gone */
}

/* One JSON message of the stream; false ends the stream (reconnect or list again). */
static bool watch_message(json_object *j, void *arg)
{
	struct watch_state *w = arg;
	json_object *res = jget(j, "result", json_type_object), *ev;
	size_t n;

	if (!res) {
		json_object *m = jget(j, "error", json_type_object);
		const char *text = m ? json_object_to_json_string(m) : jstr(j, "error");

		if (text)
			fprintf(stderr, "hpcinit-etcd: watch: %s\n", safe_str(text, 0));
		w->restart = true;
		return false;
	}
	if (get_i64(res, "compact_revision") > 0) {
		/* The revision we asked for is compacted away: list again. */
		fprintf(stderr, "hpcinit-etcd: watch: revision compacted (now %" PRId64 "); listing again\n",
			get_i64(res, "compact_revision"));
		w->restart = true;
		w->next_rev = 0;
	} else if (jtrue(res, "canceled")) {
		w->restart = true;
	} else if (jtrue(res, "created")) {
		w->created = true;
	}
	ev = jget(res, "events", json_type_array);
	if (!w->restart && (n = jlen(ev)) > 0) {
		if (w->quiet) {
			/* The prefix changed: it may fit now; list again (not more often than LIST_RETRY_S). */
			w->restart = true;
			w->next_rev = 0;
			return false;
		}
		for (size_t i = 0; i < n; i++) {
			json_object *kv;
			bool deleted;

			if (event_kv(json_object_array_get_idx(ev, i), &kv, &deleted))
				print_kv(kv, deleted);
		}
		w->changed = true;
		w->next_rev = header_rev(res) + 1;
	}
	return !w->restart;
}

/* curl's bytes: the messages they complete, then "synced" once for all their events. */
static size_t on_watch(char *data, size_t size, size_t nmemb, void *arg)
{
	struct jstream *s = arg;
	struct watch_state *w = s->arg;
	size_t r = on_stream(data, size, nmemb, s);

	if (w->changed) {
		w->changed = false;
		say_synced();
	}
	return r;
}

static int cmd_watch(const char *prefix, int64_t from)
{
	unsigned backoff_ms = 100;
	int64_t rev = from > 0 ? from + 1 : 0, last_list = 0, gap_ms = 0;
	bool quiet = false;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	for (;;) {
		struct watch_state w = { 0 };
		struct jstream js = { .on_msg = watch_message, .arg = &w };
		json_object *req, *cr;
		struct curl_slist *hdrs;
		char url[1024], *end, *body;
		CURLcode cc;

		if (rev == 0) {
			int r;

			/*
			 * Lists come no closer than gap_ms: one that follows
			 * the last within a minute doubles the gap (up to
			 * LIST_RETRY_S), so a stream that ends at once (an
			 * endpoint that answers watches with errors) is no
			 * download loop; an over-limit prefix is listed again
			 * only after it changed, and not more often than that.
			 */
			if (last_list) {
				int64_t since = mono_ms() - last_list;

				gap_ms = quiet ? LIST_RETRY_S * 1000 : since > 60000 ? 0 :
					gap_ms ? (gap_ms * 2 < LIST_RETRY_S * 1000 ? gap_ms * 2 : LIST_RETRY_S * 1000) : 200;
				fflush(stdout);
				sleep_ms(gap_ms - since);
			}
			/*
			 * First start, or events may be lost (a reconnect, a
			 * compacted revision): the whole membership again, as
			 * "reset", the keys, "synced"; then the events after it.
			 */
			fputs("reset\n", stdout);
			last_list = mono_ms();
			r = list_prefix(prefix, &rev);
			quiet = r == R_LIMIT && rev > 0;
			if (r < 0 && !quiet) {
				fflush(stdout);
				sleep_ms(backoff_ms);
				if (backoff_ms < 2000)
					backoff_ms *= 2;
				rev = 0;
				continue;
			}
			rev++;
			if (quiet)
				fflush(stdout);         /* no "synced": the reader's view is not whole */
			else
				say_synced();
		}
		w.quiet = quiet;
		backoff_ms = 100;
		end = prefix_end_b64(prefix);
		cr = json_object_new_object();
		json_object_object_add(cr, "key", b64_obj(prefix, strlen(prefix)));
		json_object_object_add(cr, "range_end", str_obj(end));
		json_object_object_add(cr, "start_revision", i64_obj(rev));
		free(end);
		req = json_object_new_object();
		json_object_object_add(req, "create_request", cr);
		body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
		json_object_put(req);
		hdrs = headers();
		snprintf(url, sizeof(url), "%s%s", endpoints[cur],
			 endpoints[cur][strlen(endpoints[cur]) - 1] == '/' ? "v3/watch" : "/v3/watch");
		setup_handle(curl, url, body, hdrs);
		js.tok = json_tokener_new();
		if (!js.tok)
			abort();
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_watch);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &js);
		/* A dead member without a reset: no byte for this long ends the stream. */
		curl_easy_setopt(curl, CURLOPT_LOW_SPEED_LIMIT, 1L);
		curl_easy_setopt(curl, CURLOPT_LOW_SPEED_TIME, 600L);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPALIVE, 1L);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPIDLE, 5L);
		curl_easy_setopt(curl, CURLOPT_TCP_KEEPINTVL, 2L);
		cc = curl_easy_perform(curl);
		curl_slist_free_all(hdrs);
		free(body);
		json_tokener_free(js.tok);
		if (w.restart && w.next_rev == 0) {
			rev = 0;
			continue;
		}
		fprintf(stderr, "hpcinit-etcd: watch on %s ended: %s; trying the next endpoint\n",
			endpoints[cur], cc == CURLE_OK ? "stream closed" : curl_easy_strerror(cc));
		/* Events between the drop and the new stream would be lost: list anew. */
		cur = (cur + 1) % n_endpoints;
		rev = 0;
		sleep_ms(100);
	}
	return EX_OK;
}

/*
 * await: the membership once PREFIX holds at least EXPECT keys, or after MS
 * without (whichever comes first), printed as list prints it.  One process
 * for the whole wait: a range, then a watch from its revision whose events
 * keep the membership, keys and values (no listing again per join, and no
 * range for the result: when a whole scale set converges at once, N nodes
 * asking for N records each at the same moment was the costly part).  A
 * compacted revision lists again; a dropped stream ends in one list.  The
 * membership it keeps is at most LIST_MAX bytes (then it fails as list does).
 */
struct await_state {
	char **keys, **items;           /* each key and its item, as list prints it */
	size_t *item_len;
	size_t n, cap, bytes;           /* bytes: of all items */
	int64_t expect, rev;            /* rev: the revision the membership is at */
	bool done, restart, too_big;
};

static size_t key_find(const struct await_state *a, const char *k)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strcmp(a->keys[i], k))
			return i;
	return a->n;
}

static void await_drop(struct await_state *a, size_t i)
{
	a->bytes -= a->item_len[i];
	free(a->keys[i]);
	free(a->items[i]);
	a->n--;
	a->keys[i] = a->keys[a->n];
	a->items[i] = a->items[a->n];
	a->item_len[i] = a->item_len[a->n];
}

/* A put (the key and its value, kept) or a deletion, into the membership. */
static void await_event(struct await_state *a, json_object *kv, bool deleted)
{
	char *k = NULL, *item = NULL;
	size_t len = 0, i;

	if (deleted) {
		size_t kl = 0;

		if (!(k = (char *)b64_decode(jstr(kv, "key"), &kl)))
			return;
		k[kl] = '\0';
		if ((i = key_find(a, k)) < a->n)
			await_drop(a, i);
		free(k);
		return;
	}
	item = kv_item(kv, &k, &len);
	if (!item)
		return;
	i = key_find(a, k);
	if (i == a->n) {
		if (a->n == a->cap) {
			a->cap = a->cap ? 2 * a->cap : 64;
			a->keys = realloc(a->keys, a->cap * sizeof(*a->keys));
			a->items = realloc(a->items, a->cap * sizeof(*a->items));
			a->item_len = realloc(a->item_len, a->cap * sizeof(*a->item_len));
			if (!a->keys || !a->items || !a->item_len)
				abort();
		}
		a->keys[a->n] = k;
		a->item_len[a->n] = 0;
		a->n++;
	} else {
		free(k);
		free(a->items[i]);
	}
	a->bytes = a->bytes - a->item_len[i] + len;
	a->items[i] = item;
	a->item_len[i] = len;
	if (a->bytes > LIST_MAX)
		a->too_big = true;
}

static bool await_message(json_object *j, void *arg)
{
	struct await_state *a = arg;
	json_object *res = jget(j, "result", json_type_object), *ev;

	if (!res || get_i64(res, "compact_revision") > 0 || jtrue(res, "canceled"))
		a->restart = true;
	else if ((ev = jget(res, "events", json_type_array))) {
		a->rev = header_rev(res);
		for (size_t k = 0; k < jlen(ev); k++) {
			json_object *kv;
			bool deleted;

			if (event_kv(json_object_array_get_idx(ev, k), &kv, &deleted))
				await_event(a, kv, deleted);
		}
	}
	if ((int64_t)a->n >= a->expect)
		a->done = true;
	return !a->done && !a->restart && !a->too_big;  /* enough (or list again): end the stream */
}

static void await_rev(int64_t rev, void *arg)
{
	struct await_state *a = arg;

	while (a->n)
		await_drop(a, a->n - 1);
	a->rev = rev;
}

static int await_put(json_object *kv, void *arg)
{
	await_event(arg, kv, false);
	return 0;
}

/* The membership under prefix into a (replacing what it held), at its revision a->rev. */
static int await_keys(struct await_state *a, const char *prefix)
{
	const struct range_ops ops = { .on_rev = await_rev, .on_kv = await_put, .arg = a };
	int64_t rev = 0;

	return range_prefix(prefix, &ops, &rev);
}

static int cmd_await(const char *prefix, int64_t expect, long ms)
{
	struct await_state a = { .expect = expect };
	int64_t deadline = mono_ms() + ms;
	bool waited = false, current = true;
	int r = 0;

	while (!a.done) {
		struct jstream js = { .on_msg = await_message, .arg = &a };
		json_object *req, *cr;
		struct curl_slist *hdrs;
		char url[1024], *end, *body;
		int64_t left = deadline - mono_ms();
		CURLcode cc;

		r = await_keys(&a, prefix);
		if (r < 0)
			break;
		if ((int64_t)a.n >= expect || left <= 0)
			break;
		a.restart = false;
		end = prefix_end_b64(prefix);
		cr = json_object_new_object();
		json_object_object_add(cr, "key", b64_obj(prefix, strlen(prefix)));
		json_object_object_add(cr, "range_end", str_obj(end));
		json_object_object_add(cr, "start_revision", i64_obj(a.rev + 1));
		free(end);
		req = json_object_new_object();
		json_object_object_add(req, "create_request", cr);
		body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
		json_object_put(req);
		hdrs = headers();
		snprintf(url, sizeof(url), "%s%s", endpoints[cur],
			 endpoints[cur][strlen(endpoints[cur]) - 1] == '/' ? "v3/watch" : "/v3/watch");
		setup_handle(curl, url, body, hdrs);
		js.tok = json_tokener_new();
		if (!js.tok)
			abort();
		curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_stream);
		curl_easy_setopt(curl, CURLOPT_WRITEDATA, &js);
		curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, (long)left);
		cc = curl_easy_perform(curl);   /* ends when enough keys, at the timeout, or an error */
		curl_slist_free_all(hdrs);
		free(body);
		json_tokener_free(js.tok);
		waited = true;
		if (a.too_big) {
			fprintf(stderr, "hpcinit-etcd: the keys under %s hold more than %d MiB: over "
				"hpcinit-etcd's limit; remove the keys that are not nodes' records\n",
				safe_str(prefix, 0), LIST_MAX >> 20);
			r = R_LIMIT;
			break;
		}
		if (a.restart && !a.done)
			sleep_ms(200);  /* never a tight loop of ranges (an endpoint ending every watch) */
		if (!a.done && !a.restart) {
			/* Out of time: the stream kept the membership current; a failed stream did not. */
			current = cc == CURLE_OPERATION_TIMEDOUT;
			break;
		}
	}
	if (r == 0 && waited)
		printf("waited 1\n");
	if (r == 0 && current) {
		/* The range and the events since: what a list now would print, without asking again. */
		printf("rev %" PRId64 "\n", a.rev);
		for (size_t i = 0; i < a.n; i++)
			fwrite(a.items[i], 1, a.item_len[i], stdout);
	}
	while (a.n)
		await_drop(&a, a.n - 1);
	free(a.keys);
	free(a.items);
	free(a.item_len);
	if (r < 0)
		return exit_of(r);
	return current ? EX_OK : cmd_list(prefix);
}

/* ---- Azure Scheduled Events ---- */

/* One request to one URL with "Metadata: true"; 0 and the body, or -1 (stderr says why). */
static int imds(const char *url, const char *body, struct buf *b)
{
	struct curl_slist *h = curl_slist_append(NULL, "Metadata: true");
	long status = 0;
	CURLcode cc;

	if (body)
		h = curl_slist_append(h, "Content-Type: application/json");
	curl_easy_reset(curl);
	curl_easy_setopt(curl, CURLOPT_URL, url);
	curl_easy_setopt(curl, CURLOPT_HTTPHEADER, h);
	curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");       /* IMDS is never proxied */
	curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
	curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
	curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, on_body);
	curl_easy_setopt(curl, CURLOPT_WRITEDATA, b);
	if (body)
		curl_easy_setopt(curl, CURLOPT_POSTFIELDS, body);
	cc = curl_easy_perform(curl);
	curl_slist_free_all(h);
	if (cc == CURLE_OK)
		curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
	if (cc != CURLE_OK || status < 200 || status > 299) {
		fprintf(stderr, "hpcinit-etcd: %s: %s\n", url,
			cc != CURLE_OK ? curl_easy_strerror(cc) : "unexpected HTTP status");
		if (cc == CURLE_OK)
			fprintf(stderr, "hpcinit-etcd: %s answered HTTP %ld\n", url, status);
		return -1;
	}
	return 0;
}

/* Text fields of the events document may hold anything: print them as one safe word. */
static void put_word(const char *s)
{
	if (!s || !*s)
		s = "-";
	for (; *s; s++)
		putchar((*s > ' ' && *s < 0x7f && *s != ',') ? *s : '_');
}

/* The events document (an answer of the Scheduled Events endpoint), one line an event. */
static void events_print(json_object *j)
{
	json_object *evs = jget(j, "Events", json_type_array);

	printf("incarnation %" PRId64 "\n", get_i64(j, "DocumentIncarnation"));
	for (size_t i = 0; i < jlen(evs); i++) {
		json_object *e = json_object_array_get_idx(evs, i);
		json_object *res = jget(e, "Resources", json_type_array);
		size_t n = jlen(res), printed = 0;

		fputs("event ", stdout);
		put_word(jstr(e, "EventId"));
		putchar(' ');
		put_word(jstr(e, "EventType"));
		putchar(' ');
		put_word(jstr(e, "EventStatus"));
		putchar(' ');
		for (size_t k = 0; k < n; k++) {
			const char *name = json_object_get_string(jget_idx_str(res, k));

			if (!name)
				continue;
			if (printed++)
				putchar(',');
			put_word(name);
		}
		if (!printed)
			putchar('-');
		putchar('\n');
	}
}

static int cmd_events(const char *url)
{
	struct buf b = { 0 }, nb = { 0 };
	json_object *j;
	const char *p = strstr(url, "://");
	char base[512], name_url[640];
	size_t bl;

	/* This VM's name: the instance metadata service at the same scheme, host and port. */
	p = p ? strchr(p + 3, '/') : NULL;
	bl = p ? (size_t)(p - url) : strlen(url);
	if (bl >= sizeof(base)) {
		fprintf(stderr, "hpcinit-etcd: %s: URL too long\n", url);
		return EX_USAGE;
	}
	memcpy(base, url, bl);
	base[bl] = '\0';
	snprintf(name_url, sizeof(name_url),
		 "%s/metadata/instance/compute/name?api-version=2021-02-01&format=text", base);
	if (imds(name_url, NULL, &nb) == 0 && nb.p) {
		fputs("self ", stdout);
		put_word(nb.p);
		putchar('\n');
	}
	free(nb.p);
	if (imds(url, NULL, &b) < 0) {
		free(b.p);
		return EX_DOWN;
	}
	j = json_tokener_parse(b.p ? b.p : "");
	free(b.p);
	if (!j) {
		fprintf(stderr, "hpcinit-etcd: %s: the answer is not JSON\n", url);
		return EX_REFUSED;
	}
	events_print(j);
	json_object_put(j);
	return EX_OK;
}

static int cmd_ack(const char *url, const char *id)
{
	json_object *req = json_object_new_object(), *arr = json_object_new_array(),
		    *one = json_object_new_object();
	struct buf b = { 0 };
	int r;

	json_object_object_add(one, "EventId", json_object_new_string(id));
	json_object_array_add(arr, one);
	json_object_object_add(req, "StartRequests", arr);
	r = imds(url, json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN), &b);
	json_object_put(req);
	free(b.p);
	if (r < 0)
		return EX_DOWN;
	printf("acknowledged %s\n", id);
	return EX_OK;
}

/* ---- main ---- */

static int usage(void)
{
	fprintf(stderr, "usage: hpcinit-etcd --endpoint URL... [--cacert F] [--cert F --key F] [--auth F] "
		"[--timeout MS] COMMAND\n"
		"  sync KEY TTL_S [LEASE [PREFIX [EXPECT MS]]] < VALUE | list PREFIX | keepalive LEASE | leave KEY [LEASE] | "
		"watch PREFIX [REV] | await PREFIX EXPECT MS\n"
		"       hpcinit-etcd [--timeout MS] events URL | ack URL EVENT_ID\n");
	return EX_USAGE;
}

static bool parse_i64(const char *s, int64_t *ret)
{
	char *e;
	long long v;

	errno = 0;
	v = strtoll(s, &e, 10);
	if (errno || e == s || *e || v < 0)
		return false;
	*ret = v;
	return true;
}

int main(int argc, char **argv)
{
	int i = 1, ret;
	int64_t a = 0, b = 0;
	const char *cmd;

	for (; i < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		const char *o = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (!v)
			return usage();
		if (!strcmp(o, "--endpoint") && n_endpoints < MAX_ENDPOINTS)
			endpoints[n_endpoints++] = v;
		else if (!strcmp(o, "--cacert"))
			cacert = v;
		else if (!strcmp(o, "--cert"))
			cert = v;
		else if (!strcmp(o, "--key"))
			key = v;
		else if (!strcmp(o, "--auth"))
			auth_file = v;
		else if (!strcmp(o, "--timeout"))
			timeout_ms = strtol(v, NULL, 10) > 0 ? strtol(v, NULL, 10) : 5000;
		else
			return usage();
	}
	if (i >= argc || !cert != !key)
		return usage();
	cmd = argv[i++];
	if (n_endpoints == 0 && strcmp(cmd, "events") != 0 && strcmp(cmd, "ack") != 0)
		return usage();
	signal(SIGPIPE, SIG_DFL);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != 0 || !(curl = curl_easy_init())) {
		fprintf(stderr, "hpcinit-etcd: libcurl did not start\n");
		return EX_DOWN;
	}
	if (auth_file) {
		for (size_t k = 0; k < n_endpoints; k++)
			if (strncmp(endpoints[k], "https://", 8) != 0) {
				/* etcd's authenticate carries the password itself: only over TLS. */
				fprintf(stderr, "hpcinit-etcd: endpoint %s is not https://: the password of "
					"%s would cross the network in clear text; refused (use https:// "
					"endpoints with discovery.auth_file)\n", safe_str(endpoints[k], 0), auth_file);
				return EX_REFUSED;
			}
	}
	if (auth_file && n_endpoints) {
		int r = authenticate();

		if (r < 0)
			return exit_of(r);
	}
	if (!strcmp(cmd, "sync") && argc - i >= 2 && argc - i <= 6 && argc - i != 5 &&
	    parse_i64(argv[i + 1], &a) && (argc - i == 2 || parse_i64(argv[i + 2], &b))) {
		int64_t want = 0, ms = 0;

		if (argc - i == 6 && (!parse_i64(argv[i + 4], &want) || !parse_i64(argv[i + 5], &ms) || ms <= 0))
			ret = usage();
		else if ((ret = cmd_sync(argv[i], a, b)) == EX_OK && argc - i >= 4) {
			/* The same process lists (or waits for the peers) next: no second start. */
			printf("list\n");
			ret = argc - i == 6 ? cmd_await(argv[i + 3], want, (long)ms) : cmd_list(argv[i + 3]);
		}
	} else if (!strcmp(cmd, "list") && argc - i == 1)
		ret = cmd_list(argv[i]);
	else if (!strcmp(cmd, "keepalive") && argc - i == 1 && parse_i64(argv[i], &a))
		ret = cmd_keepalive(a);
	else if (!strcmp(cmd, "leave") && (argc - i == 1 || argc - i == 2) &&
		 (argc - i == 1 || parse_i64(argv[i + 1], &b)))
		ret = cmd_leave(argv[i], b);
	else if (!strcmp(cmd, "await") && argc - i == 3 && parse_i64(argv[i + 1], &a) &&
		 parse_i64(argv[i + 2], &b) && b > 0)
		ret = cmd_await(argv[i], a, (long)b);
	else if (!strcmp(cmd, "events") && argc - i == 1)
		ret = cmd_events(argv[i]);
	else if (!strcmp(cmd, "ack") && argc - i == 2)
		ret = cmd_ack(argv[i], argv[i + 1]);
	else if (!strcmp(cmd, "watch") && (argc - i == 1 || (argc - i == 2 && parse_i64(argv[i + 1], &a))))
		ret = cmd_watch(argv[i], argc - i == 2 ? a : 0);
	else
		ret = usage();
	fflush(stdout);
	curl_easy_cleanup(curl);
	curl_global_cleanup();
	free(token);
	return ret;
}
