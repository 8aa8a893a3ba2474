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
 *   0x80 and up: an HTTP answer, read by the helper's own client
 *      (etcd-http.c) from a socket that holds these bytes and then ends;
 *      the same text as a Date header and as a URL too
 * Crashes, leaks, UB and timeouts are the findings.  The helper itself is
 * compiled in (its four files and hpcinit-metadata.c; their mains renamed); stdout goes to /dev/null (run-etcd.sh
 * closes the target's stderr too; crash reports still show).
 * Build and run: tests/fuzz/run-etcd.sh; make check replays etcd-corpus.
 */
#define main hpcinit_etcd_main
int hpcinit_etcd_main(int argc, char **argv);
#include "../../libexec/hpcinit-etcd.c"
#include "../../libexec/etcd-client.c"
#include "../../libexec/etcd-http.c"
#include "../../libexec/etcd-watch.c"
#undef main
/* The Scheduled Events reader is hpcinit-metadata's (the same HTTP and JSON client). */
#define main hpcinit_metadata_main
#define usage metadata_usage
int hpcinit_metadata_main(int argc, char **argv);
#include "../../libexec/hpcinit-metadata.c"
#undef usage
#undef main

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool fuzz_stop(json_object *j, void *arg)
{
	(void)j;
	(void)arg;
	return true;
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
		json_tokener_free(js.tok);
		break;
	}
	case 2: {
		struct await_state a = { .expect = 1000 };
		struct jstream js = { .on_msg = await_message, .arg = &a };

		js.tok = json_tokener_new();
		(void)on_stream(text, 1, size - 1, &js);
		json_tokener_free(js.tok);
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
		json_tokener_free(js.tok);
		break;
	}
	}
	free(text);
	return 0;
}
