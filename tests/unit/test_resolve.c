/* SPDX-License-Identifier: MIT */
/*
 * lib/sshkeys/resolve.c on a fake root (its /etc/passwd): the users: text
 * of the record (resolved users only, in order, bounded) and the wait (it
 * returns as soon as the users resolve, and at its deadline when they do not).
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/sshkeys/resolve.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-resolve.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

/* The directory answers late: bob is added 300 ms after the wait began. */
static void *late(void *arg)
{
	(void)arg;
	sleep_ms(300);
	put("/etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:10001:10001::/home/alice:/bin/sh\n"
	    "bob:x:10002:100::/home/bob:/bin/sh\n");
	return NULL;
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_APPLY };
	struct strlist users = { 0 };
	bool ok[3];
	uint64_t t0;
	char *text;
	pthread_t th;

	if (!mkdtemp(root))
		return 1;
	put("/etc/passwd", "root:x:0:0::/root:/bin/sh\nalice:x:10001:10001::/home/alice:/bin/sh\n");
	strlist_push(&users, "bob");
	strlist_push(&users, "alice");
	strlist_push(&users, "carol");

	/* only what resolves, in the spec's order */
	text = users_resolved_text(&c, &users);
	TEST_STREQ(text, "alice=10001:10001");
	TEST_CHECK(record_users_valid(text, strlen(text)));
	free(text);
	TEST_CHECK(users_resolved_text(&c, &(struct strlist){ 0 }) == NULL);

	/* looked once (wait 0): bob and carol missing */
	TEST_INTEQ(users_wait(&c, &users, 0, 50, ok), 2);
	TEST_CHECK(!ok[0] && ok[1] && !ok[2]);

	/* the wait ends at its deadline when carol never comes, and bob came on the way */
	TEST_CHECK(pthread_create(&th, NULL, late, NULL) == 0);
	t0 = now_ms();
	TEST_INTEQ(users_wait(&c, &users, 1500, 50, ok), 1);
	TEST_CHECK(now_ms() - t0 >= 1500 && now_ms() - t0 < 3000);
	pthread_join(th, NULL);
	TEST_CHECK(ok[0] && ok[1] && !ok[2]);
	text = users_resolved_text(&c, &users);
	TEST_STREQ(text, "bob=10002:100,alice=10001:10001");
	free(text);

	/* everyone there: no wait at all */
	free(users.v[2]);
	users.v[2] = xstrdup("root");
	t0 = now_ms();
	TEST_INTEQ(users_wait(&c, &users, 60000, 1000, ok), 0);
	TEST_CHECK(now_ms() - t0 < 1000);

	/* bounded: whole items up to RECORD_USERS_MAX bytes */
	{
		struct strbuf pw = STRBUF_INIT;
		struct strlist many = { 0 };
		char name[40];

		for (int i = 0; i < 400; i++) {
			snprintf(name, sizeof(name), "user%03d", i);
			sb_printf(&pw, "%s:x:%d:%d::/home/%s:/bin/sh\n", name, 100000 + i, 100000 + i, name);
			strlist_push(&many, name);
		}
		put("/etc/passwd", sb_str(&pw));
		text = users_resolved_text(&c, &many);
		TEST_CHECK(strlen(text) <= RECORD_USERS_MAX && strlen(text) > RECORD_USERS_MAX - 30);
		TEST_CHECK(record_users_valid(text, strlen(text)));
		TEST_CHECK(strncmp(text, "user000=100000:100000,user001=", 30) == 0);
		free(text);
		strlist_free(&many);
		sb_free(&pw);
	}
	strlist_free(&users);
	test_rm_rf(root);
	TEST_EXIT();
}
