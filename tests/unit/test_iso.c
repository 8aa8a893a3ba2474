/* SPDX-License-Identifier: MIT */
/*
 * iso: the frames of an isolated step's answer, written and read back; a
 * peer that does not read back fails the whole answer, never a shorter list.
 */
#include "config.h"

#include <errno.h>

#include "../../agent/core/iso.c"

#include "test.h"

static void test_iso_header(void)
{
	char a[8];
	size_t n = 0;
	const char *l;

	l = "J - 12\n";
	TEST_CHECK(iso_header(l, strchr(l, '\n'), a, &n) && strcmp(a, "-") == 0 && n == 12);
	l = "P 1 0\n";
	TEST_CHECK(iso_header(l, strchr(l, '\n'), a, &n) && strcmp(a, "1") == 0 && n == 0);
	l = "P 1234567 9\n";
	TEST_CHECK(iso_header(l, strchr(l, '\n'), a, &n) && strcmp(a, "1234567") == 0 && n == 9);
	l = "P 12345678 9\n";       /* the word is too long */
	TEST_CHECK(!iso_header(l, strchr(l, '\n'), a, &n));
	l = "J - 12x\n";
	TEST_CHECK(!iso_header(l, strchr(l, '\n'), a, &n));
	l = "J - -1\n";
	TEST_CHECK(!iso_header(l, strchr(l, '\n'), a, &n));
	l = "J -\n";
	TEST_CHECK(!iso_header(l, strchr(l, '\n'), a, &n));
	l = "J  5\n";
	TEST_CHECK(!iso_header(l, strchr(l, '\n'), a, &n));
}

/* The isolated child's answer: "R -errno", the report, "E"; an R line that is no number is no answer. */
static void test_iso_answer(void)
{
	struct report r, got;
	struct peerset *peers = NULL;
	char *js, *text;
	int ret = 7;

	report_init(&r);
	report_set(&r, ST_CHANGED, "did it");
	js = report_to_json("x", &r);
	text = xasprintf("R -5\nJ - %zu\n%s\nE\n", strlen(js), js);
	report_init(&got);
	TEST_INTEQ(iso_parse(text, strlen(text), &got, &peers, &ret, NULL), 0);
	TEST_INTEQ(ret, -5);
	TEST_STREQ(got.summary, "did it");
	TEST_CHECK(peers == NULL);
	free(text);
	for (size_t i = 0; i < 3; i++) {
		static const char *const bad[] = { "R x", "R 5junk", "R" };

		text = xasprintf("%s\nJ - %zu\n%s\nE\n", bad[i], strlen(js), js);
		ret = 7;
		TEST_INTEQ(iso_parse(text, strlen(text), &got, &peers, &ret, NULL), -ENODATA);
		TEST_INTEQ(ret, 7);
		free(text);
	}
	free(js);
	report_free(&got);
	report_free(&r);
}

static void add(struct peerset *ps, const char *name, const char *addr)
{
	struct peer *p = peerset_add(ps);

	p->hostname = xstrdup(name);
	p->addr = addr ? xstrdup(addr) : NULL;
	p->slots = 2;
}

/*
 * Peers: every one comes back, this node's mark too; one that does not read
 * back (here a peer without an address, which record_unpack refuses) makes
 * the answer -EBADMSG with no list at all, and why names the frame.  The old
 * reader skipped it: three nodes reported, two handed to the hostfile step.
 */
static void test_iso_peers(void)
{
	struct peerset ps = { 0 }, *got = NULL;
	struct report r, back;
	struct strbuf sb = STRBUF_INIT, why = STRBUF_INIT;
	char *js;
	int ret = 7;

	report_init(&r);
	report_set(&r, ST_OK, "3 nodes known");
	js = report_to_json("discovery", &r);
	add(&ps, "n1", "10.0.0.1");
	add(&ps, "n2", "10.0.0.2");
	add(&ps, "n3", "10.0.0.3");
	ps.v[1].self = true;
	iso_answer(&sb, 0, js, &ps);
	{
		/*
		 * iso_whole (a child that stays sends no end of file): not whole at any
		 * byte before the end, whole at it, the scan going on where it stopped
		 * -- read a byte at a time and in two pieces cut at every offset
		 */
		size_t pos = 0, early = 0;

		for (size_t n = 0; n < sb.len; n++)
			early += iso_whole(sb.buf, n, &pos);
		TEST_INTEQ(early, 0);
		TEST_CHECK(iso_whole(sb.buf, sb.len, &pos));
		for (size_t cut = 0; cut < sb.len; cut++) {
			pos = 0;
			early += iso_whole(sb.buf, cut, &pos);
			if (!iso_whole(sb.buf, sb.len, &pos))
				early++;
		}
		TEST_INTEQ(early, 0);
		/* what is no frame ends the wait (iso_parse then says why) */
		pos = 0;
		TEST_CHECK(iso_whole("R 0\nX junk\n", 11, &pos));
		pos = 0;
		TEST_CHECK(iso_whole("R 0\nJ - x\n", 10, &pos));
	}
	report_init(&back);
	TEST_INTEQ(iso_parse(sb.buf, sb.len, &back, &got, &ret, &why), 0);
	TEST_INTEQ(ret, 0);
	TEST_CHECK(got && got->n == 3);
	if (got && got->n == 3) {
		TEST_STREQ(got->v[2].hostname, "n3");
		TEST_CHECK(!got->v[0].self && got->v[1].self && !got->v[2].self);
	}
	got = peerset_free(got);
	report_free(&back);

	/* the second peer has no address */
	free(ps.v[1].addr);
	ps.v[1].addr = NULL;
	sb_reset(&sb);
	iso_answer(&sb, 0, js, &ps);
	report_init(&back);
	TEST_INTEQ(iso_parse(sb.buf, sb.len, &back, &got, &ret, &why), -EBADMSG);
	TEST_CHECK(got == NULL);
	TEST_CHECK(strstr(sb_str(&why), "peer 2 of the answer") != NULL);
	report_free(&back);

	/* the same, cut short before "E": no answer (the child died), not a bad peer */
	sb.len -= 2;
	report_init(&back);
	TEST_INTEQ(iso_parse(sb.buf, sb.len, &back, &got, &ret, NULL), -ENODATA);
	TEST_CHECK(got == NULL);
	report_free(&back);

	sb_free(&sb);
	sb_free(&why);
	free(js);
	report_free(&r);
	for (size_t i = 0; i < ps.n; i++)
		peer_clear(&ps.v[i]);
	free(ps.v);
}

int main(void)
{
	test_iso_header();
	test_iso_answer();
	test_iso_peers();
	TEST_EXIT();
}
