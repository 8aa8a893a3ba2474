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

#include "etcd-proto.h"

#define MAX_ENDPOINTS 32
#define STDIN_MAX (64 * 1024)
#define RESP_MAX (64 * 1024 * 1024)     /* a range of 100,000 records fits */
#define CONNECT_MS 1500

/* The exit codes and frames the agent reads: etcd-proto.h, shared with lib/rendezvous/etcd.c. */
enum { EX_OK = ETCD_EX_OK, EX_DOWN = ETCD_EX_DOWN, EX_USAGE = ETCD_EX_USAGE, EX_REFUSED = ETCD_EX_REFUSED };

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
	size_t n = strlen(s), o = 0;
	unsigned char *out = malloc(n / 4 * 3 + 4);
	unsigned acc = 0;
	int bits = 0;

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

/* ---- HTTP ---- */

struct buf {
	char *p;
	size_t n, cap;
};

static size_t on_body(char *data, size_t size, size_t nmemb, void *arg)
{
	struct buf *b = arg;
	size_t n = size * nmemb;

	if (b->n + n + 1 > RESP_MAX)
		return 0;
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
			continue;
		}
		off += json_tokener_get_parse_end(s->tok);
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

			if (j && (json_object_object_get_ex(j, "message", &m) ||
				  json_object_object_get_ex(j, "error", &m)))
				snprintf(tried[k].what, sizeof(tried[k].what), "HTTP %ld: %.200s", status,
					 json_object_get_string(m));
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
				/* The token expired: log in again, then ask again. */
				json_object_put(j);
				free(token);
				token = NULL;
				if (authenticate() < 0)
					return -1;
				return call(path, body, ret, ret_status);
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
	return -1;
}

/* The error text of an answer, NULL when it is not an error. */
static const char *answer_error(json_object *j, long status)
{
	json_object *m = NULL;

	if (json_object_object_get_ex(j, "message", &m) || json_object_object_get_ex(j, "error", &m))
		return json_object_get_string(m);
	return status >= 400 ? "refused" : NULL;
}

/* An int64 field (the gateway writes them as strings); 0 when absent. */
static int64_t get_i64(json_object *j, const char *k)
{
	json_object *v = NULL;

	if (!j || !json_object_object_get_ex(j, k, &v))
		return 0;
	if (json_object_is_type(v, json_type_string))
		return strtoll(json_object_get_string(v), NULL, 10);
	return json_object_get_int64(v);
}

static int64_t header_rev(json_object *j)
{
	json_object *h = NULL;

	return json_object_object_get_ex(j, "header", &h) ? get_i64(h, "revision") : 0;
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
		return -1;
	}
	if (!fgets(line, sizeof(line), f))
		line[0] = '\0';
	fclose(f);
	line[strcspn(line, "\r\n")] = '\0';
	colon = strchr(line, ':');
	if (!colon) {
		fprintf(stderr, "hpcinit-etcd: %s: expected one line user:password\n", auth_file);
		explicit_bzero(line, sizeof(line));
		return -1;
	}
	*colon = '\0';
	req = json_object_new_object();
	json_object_object_add(req, "name", json_object_new_string(line));
	json_object_object_add(req, "password", json_object_new_string(colon + 1));
	explicit_bzero(line, sizeof(line));
	body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	json_object_put(req);
	if (call("/v3/auth/authenticate", body, &j, &status) == 0) {
		if (json_object_object_get_ex(j, "token", &t)) {
			token = strdup(json_object_get_string(t));
			r = 0;
		} else {
			fprintf(stderr, "hpcinit-etcd: etcd refused the user in %s: %s\n", auth_file,
				answer_error(j, status) ? answer_error(j, status) : "no token");
			r = -2;
		}
	}
	explicit_bzero(body, strlen(body));
	free(body);
	json_object_put(j);
	return r;
}

/* POST a request object (consumed); -1 none answered, -2 etcd refused it. */
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
		return -1;
	if (status >= 400 && (err = answer_error(*ret, status))) {
		fprintf(stderr, "hpcinit-etcd: %s: etcd answered: %s\n", path, err);
		return -2;
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
	return r == -1 ? EX_DOWN : EX_REFUSED;
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
		if (!json_object_object_get_ex(j, "result", &res))
			res = j;
		*ret_ttl = get_i64(res, "TTL");
	} else if (r == -2) {
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
			r = -2;
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
	if (!fresh && json_object_object_get_ex(j, "kvs", &kvs) && json_object_array_length(kvs) == 1) {
		json_object *kv = json_object_array_get_idx(kvs, 0), *v = NULL;
		unsigned char *have;
		size_t hl = 0;

		if (json_object_object_get_ex(kv, "value", &v) &&
		    (have = b64_decode(json_object_get_string(v), &hl))) {
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

/* One key and value as "kv KL VL LEASE\n" KEY VALUE "\n" ("del KL\n" KEY "\n" for a deletion). */
/* A put's item as list prints it (malloc'd, *ret_len bytes); NULL when kv is not whole. */
static char *kv_item(json_object *kv, char **ret_key, size_t *ret_len)
{
	json_object *kk = NULL, *vv = NULL;
	unsigned char *kb, *vb;
	size_t kl = 0, vl = 0;
	char *item = NULL;

	if (!json_object_object_get_ex(kv, "key", &kk))
		return NULL;
	kb = b64_decode(json_object_get_string(kk), &kl);
	vb = json_object_object_get_ex(kv, "value", &vv) ?
		b64_decode(json_object_get_string(vv), &vl) : (unsigned char *)strdup("");
	if (kb && vb) {
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

/* One key and value as "kv KL VL LEASE\n" KEY VALUE "\n" ("del KL\n" KEY "\n" for a deletion). */
static void print_kv(json_object *kv, bool deleted)
{
	json_object *kk = NULL;
	unsigned char *kb;
	size_t kl = 0, len = 0;
	char *item;

	if (!deleted) {
		item = kv_item(kv, NULL, &len);
		if (item)
			fwrite(item, 1, len, stdout);
		free(item);
		return;
	}
	if (!json_object_object_get_ex(kv, "key", &kk))
		return;
	kb = b64_decode(json_object_get_string(kk), &kl);
	if (kb) {
		printf("del %zu\n", kl);
		fwrite(kb, 1, kl, stdout);
		putchar('\n');
	}
	free(kb);
}

/* Every key under prefix, printed; the store's revision of that view in *ret_rev. */
static int list_prefix(const char *prefix, int64_t *ret_rev)
{
	json_object *req = json_object_new_object(), *j = NULL, *kvs = NULL;
	char *end = prefix_end_b64(prefix);
	int r;

	json_object_object_add(req, "key", b64_obj(prefix, strlen(prefix)));
	json_object_object_add(req, "range_end", str_obj(end));
	free(end);
	r = request("/v3/kv/range", req, &j);
	if (r < 0)
		return r;
	*ret_rev = header_rev(j);
	if (json_object_object_get_ex(j, "kvs", &kvs)) {
		size_t n = json_object_array_length(kvs);

		for (size_t i = 0; i < n; i++)
			print_kv(json_object_array_get_idx(kvs, i), false);
	}
	json_object_put(j);
	return 0;
}

static int cmd_list(const char *prefix)
{
	int64_t rev = 0;
	int r;

	/* The revision goes first: buffer the list (stdout is not seekable). */
	char *text = NULL;
	size_t len = 0;
	FILE *keep = stdout, *mem = open_memstream(&text, &len);

	if (!mem)
		return EX_DOWN;
	stdout = mem;
	r = list_prefix(prefix, &rev);
	fclose(mem);
	stdout = keep;
	if (r == 0) {
		printf("rev %" PRId64 "\n", rev);
		fwrite(text, 1, len, stdout);
	}
	free(text);
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
		if (r == -1)
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

struct watch_state {
	bool created, changed, restart;
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
	json_object *res = NULL, *ev = NULL;

	if (!json_object_object_get_ex(j, "result", &res)) {
		json_object *m = NULL;

		if (json_object_object_get_ex(j, "error", &m))
			fprintf(stderr, "hpcinit-etcd: watch: %s\n", json_object_to_json_string(m));
		w->restart = true;
		return false;
	}
	if (get_i64(res, "compact_revision") > 0) {
		/* The revision we asked for is compacted away: list again. */
		fprintf(stderr, "hpcinit-etcd: watch: revision compacted (now %" PRId64 "); listing again\n",
			get_i64(res, "compact_revision"));
		w->restart = true;
		w->next_rev = 0;
	} else if (json_object_object_get_ex(res, "canceled", &ev) && json_object_get_boolean(ev)) {
		w->restart = true;
	} else if (json_object_object_get_ex(res, "created", &ev) && json_object_get_boolean(ev)) {
		w->created = true;
	}
	if (!w->restart && json_object_object_get_ex(res, "events", &ev) &&
	    json_object_array_length(ev) > 0) {
		size_t n = json_object_array_length(ev);

		for (size_t i = 0; i < n; i++) {
			json_object *e = json_object_array_get_idx(ev, i), *t = NULL, *kv = NULL;

			if (json_object_object_get_ex(e, "kv", &kv))
				print_kv(kv, json_object_object_get_ex(e, "type", &t) &&
					 !strcmp(json_object_get_string(t), "DELETE"));
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
	int64_t rev = from > 0 ? from + 1 : 0;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	for (;;) {
		struct watch_state w = { 0 };
		struct jstream js = { .on_msg = watch_message, .arg = &w };
		json_object *req, *cr;
		struct curl_slist *hdrs;
		char url[1024], *end, *body;
		CURLcode cc;

		if (rev == 0) {
			/*
			 * First start, or events may be lost (a reconnect, a
			 * compacted revision): the whole membership again, as
			 * "reset", the keys, "synced"; then the events after it.
			 */
			fputs("reset\n", stdout);
			if (list_prefix(prefix, &rev) < 0) {
				struct timespec ts = { backoff_ms / 1000, (long)(backoff_ms % 1000) * 1000000L };

				fflush(stdout);
				nanosleep(&ts, NULL);
				if (backoff_ms < 2000)
					backoff_ms *= 2;
				rev = 0;
				continue;
			}
			rev++;
			say_synced();
		}
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
		{
			struct timespec ts = { 0, 100 * 1000000L };

			nanosleep(&ts, NULL);
		}
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
 * compacted revision lists again; a dropped stream ends in one list.
 */
struct await_state {
	char **keys, **items;           /* each key and its item, as list prints it */
	size_t *item_len;
	size_t n, cap;
	int64_t expect, rev;            /* rev: the revision the membership is at */
	bool done, restart;
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
	json_object *kk = NULL;
	char *k = NULL, *item = NULL;
	size_t len = 0, i;

	if (deleted) {
		size_t kl = 0;

		if (!json_object_object_get_ex(kv, "key", &kk) ||
		    !(k = (char *)b64_decode(json_object_get_string(kk), &kl)))
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
		a->n++;
	} else {
		free(k);
		free(a->items[i]);
	}
	a->items[i] = item;
	a->item_len[i] = len;
}

static bool await_message(json_object *j, void *arg)
{
	struct await_state *a = arg;
	json_object *res = NULL, *ev = NULL;

	if (!json_object_object_get_ex(j, "result", &res) || get_i64(res, "compact_revision") > 0 ||
	    (json_object_object_get_ex(res, "canceled", &ev) && json_object_get_boolean(ev)))
		a->restart = true;
	else if (json_object_object_get_ex(res, "events", &ev) && (a->rev = header_rev(res), true))
		for (size_t k = 0; k < json_object_array_length(ev); k++) {
			json_object *e = json_object_array_get_idx(ev, k), *t = NULL, *kv = NULL;

			if (json_object_object_get_ex(e, "kv", &kv))
				await_event(a, kv, json_object_object_get_ex(e, "type", &t) &&
					    !strcmp(json_object_get_string(t), "DELETE"));
		}
	if ((int64_t)a->n >= a->expect)
		a->done = true;
	return !a->done && !a->restart;  /* enough (or list again): end the stream */
}

static int64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The membership under prefix into a (replacing what it held), at its revision a->rev. */
static int await_keys(struct await_state *a, const char *prefix)
{
	json_object *req = json_object_new_object(), *j = NULL, *kvs = NULL;
	char *end = prefix_end_b64(prefix);
	int r;

	json_object_object_add(req, "key", b64_obj(prefix, strlen(prefix)));
	json_object_object_add(req, "range_end", str_obj(end));
	free(end);
	r = request("/v3/kv/range", req, &j);
	if (r < 0)
		return r;
	while (a->n)
		await_drop(a, a->n - 1);
	a->rev = header_rev(j);
	if (json_object_object_get_ex(j, "kvs", &kvs))
		for (size_t i = 0; i < json_object_array_length(kvs); i++)
			await_event(a, json_object_array_get_idx(kvs, i), false);
	json_object_put(j);
	return 0;
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

static int cmd_events(const char *url)
{
	struct buf b = { 0 }, nb = { 0 };
	json_object *j, *evs = NULL;
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
	printf("incarnation %" PRId64 "\n", get_i64(j, "DocumentIncarnation"));
	if (json_object_object_get_ex(j, "Events", &evs) && json_object_is_type(evs, json_type_array)) {
		for (size_t i = 0; i < json_object_array_length(evs); i++) {
			json_object *e = json_object_array_get_idx(evs, i), *v = NULL, *res = NULL;

			fputs("event ", stdout);
			put_word(json_object_object_get_ex(e, "EventId", &v) ? json_object_get_string(v) : NULL);
			putchar(' ');
			put_word(json_object_object_get_ex(e, "EventType", &v) ? json_object_get_string(v) : NULL);
			putchar(' ');
			put_word(json_object_object_get_ex(e, "EventStatus", &v) ? json_object_get_string(v) : NULL);
			putchar(' ');
			if (json_object_object_get_ex(e, "Resources", &res) &&
			    json_object_is_type(res, json_type_array) && json_object_array_length(res) > 0) {
				for (size_t k = 0; k < json_object_array_length(res); k++) {
					if (k)
						putchar(',');
					put_word(json_object_get_string(json_object_array_get_idx(res, k)));
				}
			} else {
				putchar('-');
			}
			putchar('\n');
		}
	}
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
