/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target for hpcinit-etcd's JSON handling (and hpcinit-metadata's
 * Scheduled Events reader): whatever answers at an etcd endpoint (or the
 * Scheduled Events address) may send anything.  The
 * first byte picks the reader, the rest is the answer:
 *   0  a range answer, as list prints it (the ops of range_prefix)
 *   1  watch messages, fed to the stream parser in pieces as curl cuts them
 *   2  await's messages (the membership it keeps)
 *   3  a Scheduled Events document
 *   4  an error answer (answer_error, header_rev, get_i64)
 *   0x40 to 0x7f: watch messages read by the stream's scanner
 *      (etcd-stream.c) and by json-c: a message the scanner takes whole
 *      must read the same both ways, else abort
 *   0x80 and up: an HTTP answer, read by the helper's own client
 *      (etcd-http.c) from a socket that holds these bytes and then ends;
 *      the same text as a Date header and as a URL too
 * Crashes, leaks, UB and timeouts are the findings.  The helper itself is
 * compiled in (its five files and hpcinit-metadata.c; their mains renamed); stdout goes to /dev/null (run-etcd.sh
 * closes the target's stderr too; crash reports still show).
 * Build and run: tests/fuzz/run-etcd.sh; make check replays etcd-corpus.
 */
#define main hpcinit_etcd_main
int hpcinit_etcd_main(int argc, char **argv);
#include "../../libexec/hpcinit-etcd.c"
#include "../../libexec/etcd-client.c"
#include "../../libexec/etcd-http.c"
#include "../../libexec/etcd-watch.c"
#include "../../libexec/etcd-stream.c"
#undef main
/* The Scheduled Events reader is hpcinit-metadata's (the same HTTP and JSON client). */
#define main hpcinit_metadata_main
#define usage metadata_usage
int hpcinit_metadata_main(int argc, char **argv);
#include "../../libexec/hpcinit-metadata.c"
#undef usage
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fuzz_stop(struct wmsg *m, void *arg)
{
	(void)m;
	(void)arg;
	return true;
}

static bool same_bytes(const char *a, size_t an, const char *b, size_t bn)
{
	return (!a) == (!b) && (!a || (an == bn && !memcmp(a, b, an)));
}

/* Two readings of one message the same, as the watch and await use them. */
static bool wmsg_same(const struct wmsg *a, const struct wmsg *b)
{
	if (a->result != b->result || a->canceled != b->canceled || a->created != b->created ||
	    a->events != b->events || a->compact_revision != b->compact_revision ||
	    a->revision != b->revision || a->n_events != b->n_events || a->n_ev != b->n_ev)
		return false;
	for (size_t i = 0; i < a->n_ev; i++) {
		const struct wkv *x = &a->ev[i], *y = &b->ev[i];

		if (x->deleted != y->deleted || x->lease != y->lease ||
		    !same_bytes(x->key, x->key_len, y->key, y->key_len) ||
		    !same_bytes(x->value, x->value_len, y->value, y->value_len))
			return false;
	}
	return true;
}

/*
 * The watch stream's scanner (etcd-stream.c) against json-c: every message
 * the scanner takes whole, json-c must read the same from the same bytes;
 * a difference aborts (a finding).
 */
static void fuzz_scan(const char *p, size_t n)
{
	struct wmsg a = { 0 }, b = { 0 };
	size_t used;

	while (n && wmsg_scan(p, n, &a, &used) == SCAN_DONE) {
		json_tokener *tok = json_tokener_new();
		json_object *j = tok ? json_tokener_parse_ex(tok, p, (int)used) : NULL;

		if (!j)
			abort();        /* the scanner took what json-c does not read */
		wmsg_of_json(j, &b);
		if (!wmsg_same(&a, &b))
			abort();
		json_object_put(j);
		json_tokener_free(tok);
		p += used;
		n -= used;
	}
	free(a.ev);
	free(b.ev);
}

static void fuzz_http(const uint8_t *p, size_t n, const char *text)
{
	struct http_buf b = { 0 };
	struct http_call c = { .on_data = on_body, .arg = &b, .timeout_ms = 1000 };
	struct answer a = { .c = &c };
	struct url u;
	int sv[2];

	(void)http_date(text);
	(void)url_parse(text, &u);
	if (n > 65536 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) < 0)
		return;
	if (write(sv[1], p, n) == (ssize_t)n) {
		shutdown(sv[1], SHUT_WR);
		http_close();
		cn.fd = sv[0];
		a.end = mono_ms() + 1000;
		(void)exchange(&c, "", 0, &a);
		http_close();
	} else {
		close(sv[0]);
	}
	close(sv[1]);
	free(b.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static bool init;
	char *text;
	json_object *j;

	if (!init) {
		if (!freopen("/dev/null", "w", stdout))
			abort();
		init = true;
	}
	if (size < 1)
		return 0;
	text = malloc(size);
	if (!text)
		abort();
	memcpy(text, data + 1, size - 1);
	text[size - 1] = '\0';
	if (data[0] >= 0x80) {
		fuzz_http(data + 1, size - 1, text);
		free(text);
		return 0;
	}
	if (data[0] >= 0x40) {
		fuzz_scan(text, size - 1);
		free(text);
		return 0;
	}
	switch (data[0] % 5) {
	case 0: {
		const struct range_ops ops = { .on_rev = print_rev, .on_kv = print_put };
		json_object *kvs;

		j = json_tokener_parse(text);
		ops.on_rev(header_rev(j), NULL);
		kvs = jget(j, "kvs", json_type_array);
		for (size_t i = 0; i < jlen(kvs); i++)
			ops.on_kv(json_object_array_get_idx(kvs, i), NULL);
		(void)jtrue(j, "more");
		(void)get_i64(j, "count");
		json_object_put(j);
		break;
	}
	case 1: {
		struct watch_state w = { .quiet = size > 1 && (data[1] & 1) };
		struct jstream js = { .on_msg = watch_message, .arg = &w };

		js.tok = json_tokener_new();
		/* In pieces of 7 bytes: the tokener must join messages however they are cut. */
		for (size_t off = 0; off < size - 1 && !w.restart; off += 7) {
			size_t n = size - 1 - off < 7 ? size - 1 - off : 7;

			if (on_watch(text + off, 1, n, &js) != n)
				break;
		}
		jstream_free(&js);
		break;
	}
	case 2: {
		struct await_state a = { .expect = 1000 };
		struct jstream js = { .on_msg = await_message, .arg = &a };

		js.tok = json_tokener_new();
		(void)on_stream(text, 1, size - 1, &js);
		jstream_free(&js);
		while (a.n)
			await_drop(&a, a.n - 1);
		free(a.keys);
		free(a.items);
		free(a.item_len);
		free(a.slot);
		break;
	}
	case 3:
		j = json_tokener_parse(text);
		events_print(j);
		json_object_put(j);
		break;
	default: {
		struct jstream js = { .on_msg = fuzz_stop };

		j = json_tokener_parse(text);
		(void)answer_error(j, 400);
		(void)header_rev(j);
		(void)jstr(j, "token");
		json_object_put(j);
		js.tok = json_tokener_new();
		(void)on_stream(text, 1, size - 1, &js);
		jstream_free(&js);
		break;
	}
	}
	free(text);
	return 0;
}
