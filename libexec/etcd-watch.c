/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-etcd watch and await: the membership under a prefix as a stream
 * of events, and the wait for EXPECT keys (etcd-client.h).
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

#include <json-c/json.h>

#include "escape.h"
#include "etcd-client.h"

/* ---- watch ---- */

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

/* The stream's bytes: the messages they complete, then "synced" once for all their events. */
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

/*
 * The watch stream of prefix from revision rev on the current endpoint:
 * the request in *hc (its URL in url), js's tokener made, the stream's
 * bytes to on_data.  The body (malloc'd) returned, for watch_end.
 */
static char *watch_start(const char *prefix, int64_t rev, struct jstream *js, http_data_fn on_data,
			struct http_call *hc, char url[static 1024])
{
	const char *ep = etcd_endpoints[etcd_cur];
	char *end = prefix_end_b64(prefix), *body;
	json_object *req, *cr = json_object_new_object();

	json_object_object_add(cr, "key", b64_obj(prefix, strlen(prefix)));
	json_object_object_add(cr, "range_end", str_obj(end));
	json_object_object_add(cr, "start_revision", i64_obj(rev));
	free(end);
	req = json_object_new_object();
	json_object_object_add(req, "create_request", cr);
	snprintf(url, 1024, "%s%s", ep, ep[strlen(ep) - 1] == '/' ? "v3/watch" : "/v3/watch");
	body = strdup(json_object_to_json_string_ext(req, JSON_C_TO_STRING_PLAIN));
	*hc = (struct http_call){ .url = url, .body = body, .on_data = on_data, .arg = js };
	json_object_put(req);
	js->tok = json_tokener_new();
	if (!body || !js->tok)
		abort();
	return body;
}

/* The end of a stream: what watch_start made freed, and the connection (left mid-answer) closed. */
static void watch_end(struct jstream *js, char *body)
{
	free(body);
	json_tokener_free(js->tok);
	http_close();
}

int cmd_watch(const char *prefix, int64_t from)
{
	unsigned backoff_ms = 100;
	int64_t rev = from > 0 ? from + 1 : 0, last_list = 0, gap_ms = 0;
	bool quiet = false;

	prctl(PR_SET_PDEATHSIG, SIGTERM);
	for (;;) {
		struct watch_state w = { 0 };
		struct jstream js = { .on_msg = watch_message, .arg = &w };
		struct http_call hc;
		char url[1024], *body;
		int rc;

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
				helper_sleep_ms(gap_ms - since);
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
				helper_sleep_ms(backoff_ms);
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
		body = watch_start(prefix, rev, &js, on_watch, &hc, url);
		/* A dead member without a reset: TCP keepalive, and no byte for 10 minutes ends the stream. */
		hc.stream = true;
		rc = http_post(&hc);
		watch_end(&js, body);
		if (w.restart && w.next_rev == 0) {
			rev = 0;
			continue;
		}
		fprintf(stderr, "hpcinit-etcd: watch on %s ended: %s; trying the next endpoint\n",
			etcd_endpoints[etcd_cur], rc == 0 ? "stream closed" : hc.what);
		/* Events between the drop and the new stream would be lost: list anew. */
		etcd_cur = (etcd_cur + 1) % etcd_n_endpoints;
		rev = 0;
		helper_sleep_ms(100);
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
	bool formed_ends, formed;       /* a record saying "formed: true" ends the wait too */
	size_t *slot, slots;            /* keys by hash: index + 1, 0 empty (key_find); slots a power of 2 */
	bool stale;                     /* a key dropped: the index is built again at the next find */
};

/* Room for one more key in a (its three arrays grow together). */
static void await_room(struct await_state *a)
{
	if (a->n < a->cap)
		return;
	a->cap = a->cap ? 2 * a->cap : 64;
	a->keys = realloc(a->keys, a->cap * sizeof(*a->keys));
	a->items = realloc(a->items, a->cap * sizeof(*a->items));
	a->item_len = realloc(a->item_len, a->cap * sizeof(*a->item_len));
	if (!a->keys || !a->items || !a->item_len)
		abort();
}

/* FNV-1a: the keys of one prefix differ in their last bytes. */
static size_t key_hash(const char *k)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *k; k++)
		h = (h ^ (unsigned char)*k) * 1099511628211ULL;
	return (size_t)h;
}

static void index_put(struct await_state *a, size_t i)
{
	size_t s = key_hash(a->keys[i]) & (a->slots - 1);

	while (a->slot[s])
		s = (s + 1) & (a->slots - 1);
	a->slot[s] = i + 1;
}

/* The index of every key, built again (at most half full). */
static void index_build(struct await_state *a)
{
	size_t want = 64;

	while (want < 2 * a->cap)
		want *= 2;
	if (want != a->slots) {
		free(a->slot);
		a->slot = malloc(want * sizeof(*a->slot));
		if (!a->slot)
			abort();
		a->slots = want;
	}
	memset(a->slot, 0, a->slots * sizeof(*a->slot));
	for (size_t i = 0; i < a->n; i++)
		index_put(a, i);
	a->stale = false;
}

/*
 * Key k's index, a->n when it has none.  Through a hash index: a linear
 * search made a node's wait for 1,000 peers half a million comparisons.
 */
static size_t key_find(struct await_state *a, const char *k)
{
	size_t s;

	if (a->stale || !a->slot || a->slots < 2 * a->cap)
		index_build(a);
	for (s = key_hash(k) & (a->slots - 1); a->slot[s]; s = (s + 1) & (a->slots - 1))
		if (!strcmp(a->keys[a->slot[s] - 1], k))
			return a->slot[s] - 1;
	return a->n;
}

/* Key n - 1, just added, into the index (built again when it grows past half). */
static void key_added(struct await_state *a)
{
	if (a->stale || !a->slot || a->slots < 2 * a->cap)
		index_build(a);
	else
		index_put(a, a->n - 1);
}

static void await_drop(struct await_state *a, size_t i)
{
	a->stale = true;
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

		if (!(k = (char *)b64_str(jstr(kv, "key"), &kl)))
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
		await_room(a);
		a->keys[a->n] = k;
		a->item_len[a->n] = 0;
		a->n++;
		key_added(a);
	} else {
		free(k);
		free(a->items[i]);
	}
	a->bytes = a->bytes - a->item_len[i] + len;
	a->items[i] = item;
	a->item_len[i] = len;
	/* The agent judges the record (HMAC and all); a false alarm only ends this wait early. */
	if (a->formed_ends && memmem(item, len, "\nformed: true\n", 14))
		a->formed = true;
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
	if ((int64_t)a->n >= a->expect || a->formed)
		a->done = true;
	return !a->done && !a->restart && !a->too_big;  /* enough (or list again): end the stream */
}

static void await_rev(int64_t rev, void *arg)
{
	struct await_state *a = arg;

	while (a->n)
		await_drop(a, a->n - 1);
	a->rev = rev;
	a->formed = false;
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

/*
 * The membership the agent has (what list or await printed, at revision
 * rev) into a: its "kv" frames, every other line skipped.  False (a
 * emptied) when it does not parse to its end: then a range, as without it.
 */
static bool await_seed(struct await_state *a, int64_t rev, const char *p, size_t len)
{
	const char *end = p + len;

	await_rev(rev, a);
	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		unsigned long long kl, vl;
		long long lease;
		size_t rest, hl;
		char *k, *item;

		if (!nl)
			break;
		hl = (size_t)(nl + 1 - p);
		rest = (size_t)(end - nl - 1);
		if (etcd_frame_header(p, nl, &kl, &vl, &lease) != 1) {
			p = nl + 1;     /* "rev R", "waited 1", "list": not keys */
			continue;
		}
		if (kl > rest || vl > rest - kl || rest - kl - vl < 1 || nl[1 + kl + vl] != '\n' ||
		    memchr(nl + 1, '\0', (size_t)kl))
			break;
		if (!(k = strndup(nl + 1, (size_t)kl)) || !(item = malloc(hl + kl + vl + 1)))
			abort();
		memcpy(item, p, hl + kl + vl + 1);
		if (key_find(a, k) < a->n) {
			free(k);
			free(item);
			break;
		}
		await_room(a);
		a->keys[a->n] = k;
		a->items[a->n] = item;
		a->item_len[a->n] = hl + kl + vl + 1;
		a->bytes += hl + kl + vl + 1;
		a->n++;
		key_added(a);
		p = nl + 1 + kl + vl + 1;
	}
	if (p == end && a->bytes <= LIST_MAX)
		return true;
	await_rev(0, a);
	return false;
}

int cmd_await(const char *prefix, int64_t expect, long ms, int64_t from, const char *seed, size_t seed_len,
	      bool formed_ends)
{
	struct await_state a = { .expect = expect, .formed_ends = formed_ends };
	int64_t deadline = mono_ms() + ms;
	bool waited = false, current = true;
	/* Given the membership at revision from: no range, the watch starts after it. */
	bool have = from > 0 && seed && await_seed(&a, from, seed, seed_len);
	int r = 0;

	while (!a.done) {
		struct jstream js = { .on_msg = await_message, .arg = &a };
		struct http_call hc;
		char url[1024], *body;
		int64_t left = deadline - mono_ms();

		if (!have)
			r = await_keys(&a, prefix);
		have = false;
		if (r < 0)
			break;
		if ((int64_t)a.n >= expect || a.formed || left <= 0)
			break;
		a.restart = false;
		body = watch_start(prefix, a.rev + 1, &js, on_stream, &hc, url);
		hc.timeout_ms = (long)left;
		http_post(&hc);         /* ends when enough keys, at the timeout, or an error */
		watch_end(&js, body);
		waited = true;
		if (a.too_big) {
			fprintf(stderr, "hpcinit-etcd: the keys under %s hold more than %d MiB: over "
				"hpcinit-etcd's limit; remove the keys that are not nodes' records\n",
				safe_str(prefix, 0), LIST_MAX >> 20);
			r = R_LIMIT;
			break;
		}
		if (a.restart && !a.done)
			helper_sleep_ms(200);  /* never a tight loop of ranges (an endpoint ending every watch) */
		if (!a.done && !a.restart) {
			/* Out of time: the stream kept the membership current; a failed stream did not. */
			current = hc.fail == HTTP_TIMEDOUT;
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
	free(a.slot);
	free(a.keys);
	free(a.items);
	free(a.item_len);
	if (r < 0)
		return exit_of(r);
	return current ? EX_OK : cmd_list(prefix);
}
