/* SPDX-License-Identifier: MIT */
/*
 * agent/loader/strlist.c: growable NULL-terminated string lists: copies or
 * takes its strings, stays NULL-terminated across every growth, reserve
 * keeps the entries, free empties it for reuse; membership (the one
 * strlist_has), adding once and copying.
 */
#include "config.h"

#include <stdio.h>

#include "../../agent/loader/strlist.c"
#include "test.h"

int main(void)
{
	struct strlist l = { 0 };
	char buf[32];

	/* empty: nothing allocated; free of an empty list is fine */
	TEST_CHECK(l.v == NULL);
	strlist_free(&l);
	TEST_CHECK(l.v == NULL && l.n == 0);

	/* push copies: changing the source afterwards changes nothing */
	snprintf(buf, sizeof(buf), "first");
	TEST_INTEQ(strlist_push(&l, buf), 0);
	buf[0] = 'X';
	TEST_INTEQ(l.n, 1);
	TEST_STREQ(l.v[0], "first");
	TEST_CHECK(l.v[0] != buf);
	TEST_CHECK(l.v[1] == NULL);

	/* many pushes across the power-of-two growths: order kept, v[n] NULL after each */
	for (int i = 1; i < 1000; i++) {
		snprintf(buf, sizeof(buf), "s%d", i);
		if (i % 3)
			strlist_push(&l, buf);
		else
			strlist_push_take(&l, xstrdup(buf));
		if (l.v[l.n] != NULL) {
			TEST_CHECK(l.v[l.n] == NULL);
			break;
		}
	}
	TEST_INTEQ(l.n, 1000);
	TEST_STREQ(l.v[0], "first");
	TEST_STREQ(l.v[1], "s1");
	TEST_STREQ(l.v[3], "s3");
	TEST_STREQ(l.v[511], "s511");
	TEST_STREQ(l.v[512], "s512");
	TEST_STREQ(l.v[999], "s999");
	TEST_CHECK(l.v[1000] == NULL);
	TEST_INTEQ(strlist_slots(1000), 1024);
	TEST_INTEQ(strlist_slots(1023), 1024);
	TEST_INTEQ(strlist_slots(1024), 2048);   /* n entries and the NULL */
	TEST_INTEQ(strlist_slots(0), 2);

	/* free: empty again, and reusable */
	strlist_free(&l);
	TEST_CHECK(l.v == NULL && l.n == 0);
	strlist_push(&l, "again");
	TEST_INTEQ(l.n, 1);
	TEST_STREQ(l.v[0], "again");

	/* reserve, then fill v[] directly: the entries there stay, room for the NULL */
	strlist_reserve(&l, 40);
	for (int i = 0; i < 40; i++) {
		snprintf(buf, sizeof(buf), "r%d", i);
		l.v[l.n++] = xstrdup(buf);
	}
	l.v[l.n] = NULL;
	TEST_STREQ(l.v[0], "again");
	TEST_STREQ(l.v[40], "r39");
	/* and pushing after a direct fill grows from there */
	strlist_push(&l, "after");
	TEST_INTEQ(l.n, 42);
	TEST_STREQ(l.v[41], "after");
	TEST_CHECK(l.v[42] == NULL);
	strlist_free(&l);

	/* reserve on an empty list allocates room for the NULL too */
	strlist_reserve(&l, 0);
	TEST_CHECK(l.v != NULL);
	l.v[0] = NULL;
	strlist_free(&l);
	/* membership: byte for byte, an empty list has nothing */
	{
		struct strlist a = { 0 }, b = { 0 };

		TEST_CHECK(!strlist_has(&a, ""));
		strlist_push(&a, "node01");
		strlist_push(&a, "");
		TEST_CHECK(strlist_has(&a, "node01") && strlist_has(&a, ""));
		TEST_CHECK(!strlist_has(&a, "NODE01") && !strlist_has(&a, "node0") && !strlist_has(&a, "node011"));
		strlist_add_unique(&a, "node01");
		strlist_add_unique(&a, "node02");
		TEST_INTEQ(a.n, 3);
		strlist_add_unique_n(&a, "node02.example", 6);   /* "node02": there */
		strlist_add_unique_n(&a, "node0", 4);            /* "node": new */
		TEST_INTEQ(a.n, 4);
		TEST_STREQ(a.v[3], "node");
		strlist_push(&b, "old");
		strlist_copy(&b, &a);
		TEST_INTEQ(b.n, 4);
		TEST_CHECK(!strlist_has(&b, "old") && strlist_has(&b, "node") && b.v[4] == NULL);
		strlist_free(&a);
		strlist_free(&b);
	}
	TEST_EXIT();
}
