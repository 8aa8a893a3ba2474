/* SPDX-License-Identifier: MIT */
/*
 * modules/ssh/users.c: which node is wrong when the nodes resolve a user to
 * different ids.  The most nodes are right, the head's side on a tie; with
 * no majority every node of the tie fails; a record that says nothing (an
 * older hpcinit) does not count; the odd nodes are named, the first 10.
 */
#include "config.h"

#include <errno.h>

#include "../../modules/ssh/users.c"
#include "test.h"

/* peers "name=ids" ("name" alone: says nothing), the first one the head */
static void peers(struct peerset *ps, const char *const *v, bool head_first)
{
	memset(ps, 0, sizeof(*ps));
	for (size_t i = 0; v[i]; i++) {
		struct peer *p = peerset_add(ps);
		const char *eq = strchr(v[i], '=');

		p->hostname = eq ? xstrndup(v[i], (size_t)(eq - v[i])) : xstrdup(v[i]);
		p->users = eq ? xasprintf("bob=1:1,alice=%s", eq + 1) : NULL;
		p->head = head_first && i == 0;
	}
}

/* user_compare for alice (self: uid:gid, head or not): the one finding's severity and text, or none */
static int judge(const char *const *v, bool head_first, uint32_t uid, bool self_head, char *text, size_t n)
{
	struct peerset ps;
	struct report r;
	struct uid_gid self = { uid, uid, self_head, NULL };
	int sev = -1;

	peers(&ps, v, head_first);
	report_init(&r);
	user_compare(&r, &ps, "alice", &self);
	text[0] = '\0';
	if (r.n_findings == 1) {
		sev = r.findings[0].cluster ? -2 : (int)r.findings[0].sev;
		snprintf(text, n, "%s", r.findings[0].text);
		TEST_STREQ(r.findings[0].tag, "ssh.user.ids-differ");
	}
	TEST_CHECK(r.n_findings <= 1);
	report_free(&r);
	for (size_t i = 0; i < ps.n; i++)
		peer_clear(&ps.v[i]);
	free(ps.v);
	return sev;
}

int main(void)
{
	char t[2048];

	/* every node agrees, and one says nothing: no finding */
	TEST_INTEQ(judge((const char *[]){ "h=5:5", "c2=5:5", "c3", NULL }, true, 5, false, t, sizeof(t)), -1);
	/* this node is the odd one: failed, both ids */
	TEST_INTEQ(judge((const char *[]){ "h=5:5", "c2=5:5", NULL }, true, 7, false, t, sizeof(t)), ST_FAILED);
	TEST_CHECK(strstr(t, "user alice is 7:7 here but 5:5 on 2 of 3 nodes, the head's among them") != NULL);
	/* another node is: a cluster finding naming it, this node's status untouched */
	TEST_INTEQ(judge((const char *[]){ "h=5:5", "c2=7:7", NULL }, true, 5, false, t, sizeof(t)), -2);
	TEST_CHECK(strstr(t, "user alice is 5:5 here and on 2 of 3 nodes, but not on c2 (7:7)") != NULL);
	/* a gid alone differs: counted as different */
	TEST_INTEQ(judge((const char *[]){ "h=5:5", "c2=5:6", NULL }, true, 5, false, t, sizeof(t)), -2);
	TEST_CHECK(strstr(t, "not on c2 (5:6)") != NULL);
	/* a tie: the head's side is right, from either side */
	TEST_INTEQ(judge((const char *[]){ "h=5:5", NULL }, true, 7, false, t, sizeof(t)), ST_FAILED);
	TEST_CHECK(strstr(t, "on 1 of 2 nodes, the head's among them") != NULL);
	TEST_INTEQ(judge((const char *[]){ "c2=7:7", NULL }, false, 5, true, t, sizeof(t)), -2);
	TEST_CHECK(strstr(t, "but not on c2 (7:7)") != NULL);
	/* a tie without the head: no majority, this node fails and names the others */
	TEST_INTEQ(judge((const char *[]){ "c2=7:7", NULL }, false, 5, false, t, sizeof(t)), ST_FAILED);
	TEST_CHECK(strstr(t, "the nodes disagree with no majority (c2 (7:7))") != NULL);
	/* three ids, one each (per-VM UIDs everywhere): no majority either */
	TEST_INTEQ(judge((const char *[]){ "c2=7:7", "c3=8:8", NULL }, false, 5, false, t, sizeof(t)), ST_FAILED);
	/* the majority beats the head: 3 nodes at 5, the head at 9 */
	TEST_INTEQ(judge((const char *[]){ "h=9:9", "c2=5:5", "c3=5:5", NULL }, true, 5, false, t, sizeof(t)), -2);
	TEST_CHECK(strstr(t, "on 3 of 4 nodes, but not on h (9:9)") != NULL);
	/* many odd nodes: the first 10 named, then a count */
	{
		const char *v[40] = { 0 };
		char names[40][48];

		v[0] = "h=5:5";
		for (int i = 1; i < 15; i++) {
			snprintf(names[i], sizeof(names[i]), "c%02d=%d:%d", i, 100 + i, 100 + i);
			v[i] = names[i];
		}
		for (int i = 15; i < 35; i++)
			v[i] = "ok=5:5";
		TEST_INTEQ(judge(v, true, 5, false, t, sizeof(t)), -2);
		TEST_CHECK(strstr(t, "on 22 of 36 nodes, but not on c01 (101:101), c02 (102:102)") != NULL);
		TEST_CHECK(strstr(t, "c10 (110:110) and 4 more") != NULL);
	}
	TEST_EXIT();
}
