/* SPDX-License-Identifier: MIT */
/*
 * Inside hpcinit-etcd: the etcd client (etcd-client.c: base64, JSON,
 * requests with endpoint failover and token auth, ranges read page by
 * page), HTTP (etcd-http.c: its own HTTP/1.1 for http://, libcurl loaded
 * for https://), the watch and await streams (etcd-watch.c), and the
 * subcommands and main (hpcinit-etcd.c).  The helper's protocol with the agent: lib/rendezvous/etcd-proto.h.
 */
#ifndef HPCINIT_ETCD_CLIENT_H
#define HPCINIT_ETCD_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>

#include "../lib/rendezvous/etcd-proto.h"

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
#define PAGE_KEYS 250                   /* at most, a page: a busy member answers a small one sooner */
#define FIRST_PAGE_KEYS 4               /* the first page: value sizes unknown yet */
#define LIST_MAX ETCD_LIST_MAX           /* keys and values under the prefix, in all */
#define LIST_RETRY_S 10                 /* watch: an over-limit prefix is listed again at most this often */
#define CONNECT_MS 1500

/* The exit codes and frames the agent reads: lib/rendezvous/etcd-proto.h, shared with lib/rendezvous/etcd.c. */
enum { EX_OK = ETCD_EX_OK, EX_DOWN = ETCD_EX_DOWN, EX_USAGE = ETCD_EX_USAGE, EX_REFUSED = ETCD_EX_REFUSED };
/* request()'s failures: no endpoint answered, etcd refused, over a limit (a refusal too). */
enum { R_DOWN = -1, R_REFUSED = -2, R_LIMIT = -3 };

/* The options (main sets them) and the connection: etcd-client.c's... */
extern const char *etcd_endpoints[MAX_ENDPOINTS];
extern size_t etcd_n_endpoints, etcd_cur;         /* cur: the endpoint that answered last */
extern const char *etcd_auth_file;
extern int64_t etcd_deadline_ms;             /* monotonic ms: retries end here (0: per call) */
/* ... and etcd-http.c's (it reads them; the client sets the token). */
extern const char *etcd_cacert, *etcd_cert, *etcd_key;
extern long etcd_timeout_ms;
extern char *etcd_token;                     /* etcd auth token, after authenticate */
extern int64_t etcd_date;                    /* the last answer's HTTP Date (etcd's clock), 0: none */

struct http_buf {
	char *p;
	size_t n, cap;
	bool too_big;                   /* the answer passed RESP_MAX: cut off */
};

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


/* The answer's bytes as they arrive (curl's write callback's type): fewer than size * nmemb taken ends the call. */
typedef size_t (*http_data_fn)(char *data, size_t size, size_t nmemb, void *arg);

/* How a call ended without a whole HTTP answer. */
enum http_fail {
	HTTP_OK,
	HTTP_TIMEDOUT,                  /* no connection, or no (more of the) answer, in time */
	HTTP_ENDED,                     /* on_data took fewer bytes than it was given */
	HTTP_FAILED,                    /* anything else: refused, reset, not HTTP... (what says) */
};

/* One POST (etcd-http.c): the inputs, then what came of it. */
struct http_call {
	const char *url, *body;         /* body: JSON, sent as application/json with etcd_token */
	long timeout_ms;                /* the whole call; 0: none */
	bool stream;                    /* a watch: TCP keepalive, and no byte for 10 minutes ends it */
	http_data_fn on_data;
	void *arg;
	long status;                    /* the HTTP status of a whole answer */
	bool connected;                 /* a connection was made (or a kept one used) */
	enum http_fail fail;
	char what[256];                 /* the failure in words (curl's), when fail */
};

/* ---- etcd-http.c ---- */
int64_t mono_ms(void);
/* 0: a whole answer (c->status, the body given to on_data); -1: c->fail and c->what.  Sets etcd_date. */
int http_post(struct http_call *c);
int64_t http_date(const char *s);       /* an IMF-fixdate's seconds since the epoch, 0 when not one */
void http_close(void);                  /* the kept connection closed (a stream left half read) */
void http_cleanup(void);                /* all of it, at exit */

/* ---- etcd-client.c ---- */
void helper_sleep_ms(int64_t ms);
unsigned char *b64_str(const char *s, size_t *ret_len);
char *prefix_end_b64(const char *prefix);
json_object *jget(json_object *j, const char *k, json_type t);
const char *jstr(json_object *j, const char *k);
size_t jlen(json_object *a);
json_object *jget_idx_str(json_object *a, size_t i);
bool jtrue(json_object *j, const char *k);
const char *safe_str(const char *s, int slot);
size_t on_body(char *data, size_t size, size_t nmemb, void *arg);
size_t on_stream(char *data, size_t size, size_t nmemb, void *arg);
int64_t get_i64(json_object *j, const char *k);
int64_t header_rev(json_object *j);
int authenticate(void);
int request(const char *path, json_object *req, json_object **ret);
json_object *str_obj(const char *s);
json_object *b64_obj(const void *p, size_t n);
json_object *i64_obj(int64_t v);
int exit_of(int r);
char *kv_item(json_object *kv, char **ret_key, size_t *ret_len);
void print_kv(json_object *kv, bool deleted);
bool event_kv(json_object *e, json_object **ret_kv, bool *ret_deleted);
int range_prefix(const char *prefix, const struct range_ops *ops, int64_t *ret_rev);
void print_rev(int64_t rev, void *arg);
int print_put(json_object *kv, void *arg);
int list_prefix(const char *prefix, int64_t *ret_rev);
int cmd_list(const char *prefix);

/* ---- etcd-watch.c ---- */
int cmd_watch(const char *prefix, int64_t from);
int cmd_await(const char *prefix, int64_t expect, long ms, int64_t from, const char *seed, size_t seed_len,
	      bool formed_ends);

/* ---- hpcinit-etcd.c ---- */

#endif
