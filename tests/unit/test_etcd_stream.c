/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-etcd's watch stream read (libexec/etcd-stream.c): the scanner
 * takes the gateway's messages whole, with what json-c reads of them; a
 * message it does not take (an escape, a fraction, an error) goes to
 * json-c; however the bytes come cut, each message reaches on_msg once.
 * The fuzz target (tests/fuzz/fuzz_etcd.c, included: the helper with it)
 * holds the scanner against json-c on any bytes; here, on the messages
 * etcd sends, that the scanner takes them at all.
 */
#include "../fuzz/fuzz_etcd.c"

#include <fcntl.h>
#include <unistd.h>

#include "test.h"

#define K "L2hwY2luaXQvc2ltYy9ub2Rlcy9ub2RlMQ=="          /* /hpcinit/simc/nodes/node1 */
#define V "IyBocGNpbml0IHBlZXIgcmVjb3JkCmZvcm1lZDogdHJ1ZQo="  /* a record's lines */
#define HDR "\"header\":{\"cluster_id\":\"14841639068965178418\",\"member_id\":\"10276657743932975437\"," \
	"\"revision\":\"8\",\"raft_term\":\"2\"}"
/* A put as etcd 3.5's gateway sends it. */
#define PUT "{\"result\":{" HDR ",\"events\":[{\"kv\":{\"key\":\"" K "\",\"create_revision\":\"8\"," \
	"\"mod_revision\":\"8\",\"version\":\"1\",\"value\":\"" V "\",\"lease\":\"7587876553455423\"}}]}}\n"
#define DEL "{\"result\":{" HDR ",\"events\":[{\"type\":\"DELETE\",\"kv\":{\"key\":\"" K "\"," \
	"\"mod_revision\":\"9\"}}]}}\n"
#define CREATED "{\"result\":{" HDR ",\"created\":true}}\n"

/* The scanner and json-c on the same bytes: both read them, the same way. */
static int scan_as_json(const char *text, struct wmsg *m)
{
	struct wmsg b = { 0 };
	size_t used = 0;
	int r = wmsg_scan(text, strlen(text), m, &used);

	if (r == SCAN_DONE) {
		json_object *j = json_tokener_parse(text);

		TEST_CHECK(j != NULL);
		if (j) {
			wmsg_of_json(j, &b);
			TEST_CHECK(wmsg_same(m, &b));
			json_object_put(j);
		}
		/* what follows the message (its newline) is the next message's */
		TEST_CHECK(used <= strlen(text) && text[used - 1] == '}');
	}
	free(b.ev);
	return r;
}

static void test_scan(void)
{
	struct wmsg m = { 0 };
	size_t used;

	TEST_INTEQ(scan_as_json(PUT, &m), SCAN_DONE);
	TEST_CHECK(m.result && m.events && !m.created && !m.canceled);
	TEST_INTEQ(m.revision, 8);
	TEST_INTEQ(m.n_events, 1);
	TEST_INTEQ(m.n_ev, 1);
	TEST_CHECK(!m.ev[0].deleted && m.ev[0].lease == 7587876553455423LL);
	TEST_CHECK(m.ev[0].key_len == strlen(K) && !memcmp(m.ev[0].key, K, strlen(K)));
	TEST_CHECK(m.ev[0].value_len == strlen(V) && !memcmp(m.ev[0].value, V, strlen(V)));

	TEST_INTEQ(scan_as_json(DEL, &m), SCAN_DONE);
	TEST_CHECK(m.n_ev == 1 && m.ev[0].deleted && !m.ev[0].value);
	TEST_INTEQ(scan_as_json(CREATED, &m), SCAN_DONE);
	TEST_CHECK(m.created && !m.events && m.n_ev == 0);
	TEST_INTEQ(scan_as_json("{\"result\":{" HDR ",\"compact_revision\":\"5\"}}", &m), SCAN_DONE);
	TEST_INTEQ(m.compact_revision, 5);
	TEST_INTEQ(scan_as_json("{\"result\":{\"canceled\":true,\"header\":{\"revision\":12}}}", &m), SCAN_DONE);
	TEST_CHECK(m.canceled && m.revision == 12);

	/* as json-c reads them: the last of a name, another type as none, an element without kv counted */
	TEST_INTEQ(scan_as_json("{\"result\":{\"events\":[{\"kv\":{\"key\":\"" K "\"}}],\"events\":[7,{\"type\":"
				"\"DELETE\",\"kv\":{\"key\":5,\"value\":\"" V "\",\"lease\":\"x\"}},{\"kv\":[]}],"
				"\"created\":1,\"canceled\":\"true\",\"header\":{\"revision\":3},\"header\":{}}}", &m),
		    SCAN_DONE);
	TEST_CHECK(m.events && m.n_events == 3 && m.n_ev == 1 && m.revision == 0 && !m.created && !m.canceled);
	TEST_CHECK(m.n_ev == 1 && m.ev[0].deleted && !m.ev[0].key && m.ev[0].lease == 0);

	/* json-c's to read: an escape, a fraction, an error, a result that is no object, not JSON */
	TEST_INTEQ(scan_as_json("{\"result\":{\"events\":[{\"kv\":{\"key\":\"a\\u0041\"}}]}}", &m), SCAN_OTHER);
	TEST_INTEQ(scan_as_json("{\"result\":{\"header\":{\"revision\":1.5}}}", &m), SCAN_OTHER);
	TEST_INTEQ(scan_as_json("{\"error\":{\"grpc_code\":14,\"message\":\"etcdserver: no leader\"}}", &m),
		   SCAN_OTHER);
	TEST_INTEQ(scan_as_json("{\"result\":[]}", &m), SCAN_OTHER);
	TEST_INTEQ(scan_as_json("]", &m), SCAN_OTHER);

	/* not whole yet: more; white space alone: more, taken */
	for (size_t n = 1; n < strlen(PUT) - 1; n++)
		TEST_INTEQ(wmsg_scan(PUT, n, &m, &used), SCAN_MORE);
	TEST_INTEQ(wmsg_scan(" \r\n\t", 4, &m, &used), SCAN_MORE);
	TEST_INTEQ(used, 4);
	free(m.ev);
}

/* What on_msg saw: the messages, as print_wkv would print their events. */
struct seen {
	int msgs;
	struct strbuf out;
	int stop_after;         /* 0: never end the stream */
};

static bool seen_msg(struct wmsg *m, void *arg)
{
	struct seen *s = arg;

	s->msgs++;
	sb_printf(&s->out, "m %d %d %" PRId64 " %zu:", m->result, m->created, m->revision, m->n_events);
	for (size_t i = 0; i < m->n_ev; i++)
		sb_printf(&s->out, " %s %.*s/%zu", m->ev[i].deleted ? "del" : "put", (int)m->ev[i].key_len,
			  m->ev[i].key ? m->ev[i].key : "", m->ev[i].value_len);
	sb_append(&s->out, "\n");
	return !s->stop_after || s->msgs < s->stop_after;
}

/* The stream in pieces of `piece` bytes: what on_msg saw, and whether the stream went on to its end. */
static bool feed(const char *text, size_t piece, struct seen *s)
{
	struct jstream js = { .on_msg = seen_msg, .arg = s };
	size_t n = strlen(text);
	bool whole = true;

	js.tok = json_tokener_new();
	for (size_t off = 0; off < n; off += piece) {
		size_t k = n - off < piece ? n - off : piece;
		char *copy = malloc(k);         /* each piece in its own bytes, as the HTTP client's buffer */

		memcpy(copy, text + off, k);
		if (on_stream(copy, 1, k, &js) != k)
			whole = false;
		free(copy);
		if (!whole)
			break;
	}
	jstream_free(&js);
	return whole;
}

static void test_stream(void)
{
	/* four messages, one of them json-c's (an escape in its key: "A"), without newlines between two */
	const char *text = CREATED PUT "{\"result\":{\"header\":{\"revision\":\"10\"},\"events\":[{\"kv\":"
			   "{\"key\":\"\\u0041\"}}]}}" DEL;
	struct seen one = { 0 };

	TEST_CHECK(feed(text, strlen(text), &one));
	TEST_INTEQ(one.msgs, 4);
	TEST_STREQ(sb_str(&one.out), "m 1 1 8 0:\nm 1 0 8 1: put " K "/" "48" "\nm 1 0 10 1: put A/0\n"
		   "m 1 0 8 1: del " K "/0\n");
	for (size_t piece = 1; piece <= 64; piece++) {
		struct seen s = { 0 };

		TEST_CHECK(feed(text, piece, &s));
		TEST_STREQ(sb_str(&s.out), sb_str(&one.out));
		sb_free(&s.out);
	}

	/* on_msg's false ends the stream; so do bytes that are not JSON, after the messages before them */
	{
		struct seen s = { .stop_after = 2 };

		TEST_CHECK(!feed(text, 7, &s));
		TEST_INTEQ(s.msgs, 2);
		sb_free(&s.out);
	}
	{
		struct seen s = { 0 };
		int saved = dup(2), null = open("/dev/null", O_WRONLY);
		bool whole;

		/* the helper's own line about it, not this test's output */
		fflush(stderr);
		dup2(null, 2);
		whole = feed(PUT "{\"result\":}" PUT, 5, &s);
		fflush(stderr);
		dup2(saved, 2);
		close(saved);
		close(null);
		TEST_CHECK(!whole);
		TEST_INTEQ(s.msgs, 1);
		sb_free(&s.out);
	}
	sb_free(&one.out);
}

int main(void)
{
	test_scan();
	test_stream();
	TEST_EXIT();
}
