/* SPDX-License-Identifier: MIT */
/*
 * nodeset.c: expanding ranges, folding names (checked against the real
 * clustershell `nodeset -e` when installed), and the round trip between them.
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>

#include "../../common/loader/nodeset.c"
#include "proc.h"
#include "spec.h"
#include "test.h"

static void expect_range(const char *pat, size_t n, const char *first, const char *last)
{
	struct strlist l = { NULL, 0 };

	TEST_INTEQ(noderange_expand(pat, &l, SPEC_MAX_HOSTS), 0);
	TEST_INTEQ(l.n, n);
	if (l.n == n && n) {
		TEST_STREQ(l.v[0], first);
		TEST_STREQ(l.v[n - 1], last);
		TEST_CHECK(l.v[n] == NULL);
	}
	strlist_free(&l);
}


static void test_noderange(void)
{
	struct strlist l = { NULL, 0 };

	expect_range("node[01-16,20]", 17, "node01", "node20");
	TEST_INTEQ(noderange_expand("node[01-16,20]", &l, 100), 0);
	if (l.n == 17) {
		TEST_STREQ(l.v[8], "node09");
		TEST_STREQ(l.v[9], "node10");
		TEST_STREQ(l.v[15], "node16");
	}
	strlist_free(&l);
	expect_range("node[1-3]", 3, "node1", "node3");
	expect_range("n[8-10]", 3, "n8", "n10");
	expect_range("n[08-10]", 3, "n08", "n10");
	expect_range("n[001-100]", 100, "n001", "n100");
	expect_range("n[0-3]", 4, "n0", "n3");
	expect_range("rack[1-2]-ib", 2, "rack1-ib", "rack2-ib");
	expect_range("[1-2].example", 2, "1.example", "2.example");
	expect_range("plain", 1, "plain", "plain");
	expect_range("n[7]", 1, "n7", "n7");
	expect_range("n[3,1,2]", 3, "n3", "n2");       /* spec order is kept */

	/* Appends to what is there; errors leave it as it was. */
	strlist_push(&l, "head");
	TEST_INTEQ(noderange_expand("c[1-2]", &l, 10), 0);
	TEST_INTEQ(l.n, 3);
	TEST_STREQ(l.v[0], "head");
	TEST_STREQ(l.v[2], "c2");
	static const char *const bads[] = {
		"", "n[", "n]", "n]1[", "n[1-2][3]", "n[1-2]x[3]", "n[[1]]", "n[1-[2]]", "n[]",
		"n[2-1]", "n[a]", "n[1,]", "n[,1]", "n[1-]", "n[-1]", "n[1--2]", "n[1234567890]",
		"n[1 - 2]", "n[1-2",
	};
	for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
		int r = noderange_expand(bads[i], &l, 1000);

		TEST_INTEQ(r, -EINVAL);
		if (r != -EINVAL)
			fprintf(stderr, "  pattern \"%s\"\n", bads[i]);
	}
	TEST_INTEQ(l.n, 3);
	TEST_INTEQ(noderange_expand("n[1-5]", &l, 5), 0);
	TEST_INTEQ(l.n, 8);
	TEST_INTEQ(noderange_expand("n[1-5]", &l, 4), -E2BIG);
	TEST_INTEQ(noderange_expand("n[0-999999999]", &l, SPEC_MAX_HOSTS), -E2BIG);
	TEST_INTEQ(noderange_expand("n[0-999999999,0-999999999]", &l, SPEC_MAX_HOSTS), -E2BIG);
	TEST_INTEQ(l.n, 8);
	TEST_INTEQ(noderange_expand(NULL, &l, 1), -EINVAL);
	strlist_free(&l);

	/* The exact limit expands; one more is refused. */
	TEST_INTEQ(noderange_expand("n[1-100000]", &l, SPEC_MAX_HOSTS), 0);
	TEST_INTEQ(l.n, SPEC_MAX_HOSTS);
	if (l.n == SPEC_MAX_HOSTS)
		TEST_STREQ(l.v[SPEC_MAX_HOSTS - 1], "n100000");
	strlist_free(&l);
	TEST_INTEQ(noderange_expand("n[0-100000]", &l, SPEC_MAX_HOSTS), -E2BIG);
	TEST_INTEQ(l.n, 0);

}

/* Expand with the real nodeset and compare with the names, sorted. */
static void check_nodeset(const char *const *names, size_t n, const char *folded)
{
	char *bin = proc_which("nodeset");
	const char *argv[] = { "nodeset", "-S", "\\n", "-e", folded, NULL };
	struct proc_result pr;
	struct strbuf want = STRBUF_INIT;
	const char **sorted;

	if (!bin) {
		printf("# nodeset not installed: expansion not cross-checked\n");
		return;
	}
	argv[0] = bin;
	TEST_INTEQ(proc_run(argv, NULL, NULL, 10000, &pr), 0);
	TEST_INTEQ(pr.exit_code, 0);
	sorted = xcalloc(n, sizeof(*sorted));
	memcpy(sorted, names, n * sizeof(*sorted));
	/* nodeset prints its own order; compare as sets via sorted lines from both */
	{
		struct strlist got = { 0 };
		char *save = NULL;

		for (char *tok = strtok_r(pr.out, "\n", &save); tok; tok = strtok_r(NULL, "\n", &save))
			strlist_push(&got, tok);
		TEST_INTEQ(got.n, n);
		for (size_t i = 0; i < n; i++) {
			bool found = false;

			for (size_t j = 0; j < got.n && !found; j++)
				found = strcmp(got.v[j], names[i]) == 0;
			if (!found)
				fprintf(stderr, "nodeset -e %s lacks %s\n", folded, names[i]);
			TEST_CHECK(found);
		}
		strlist_free(&got);
	}
	free(sorted);
	sb_free(&want);
	proc_result_free(&pr);
	free(bin);
}

static void fold_case(const char *const *names, size_t n, const char *want)
{
	char *f = nodeset_fold(names, n);

	TEST_STREQ(f, want);
	check_nodeset(names, n, f);
	free(f);
}

static void test_fold(void)
{
	{
		const char *v[] = { "node1", "node2", "node3", "node7" };

		fold_case(v, 4, "node[1-3,7]");
	}
	{
		const char *v[] = { "node10", "node9", "node1", "node2", "node11", "node100" };

		fold_case(v, 6, "node[1-2,9-11,100]");
	}
	{
		const char *v[] = { "node01", "node02", "node03", "node10", "node04" };

		fold_case(v, 5, "node[01-04],node10");
	}
	{
		const char *v[] = { "head", "node1", "login2", "node2" };

		fold_case(v, 4, "head,login2,node[1-2]");
	}
	{
		const char *v[] = { "198.18.1.2", "198.18.1.3", "198.18.1.10" };

		fold_case(v, 3, "198.18.1.[2-3,10]");
	}
	{
		const char *v[] = { "vm-a", "vm-b" };

		fold_case(v, 2, "vm-a,vm-b");
	}
	{
		const char *v[] = { "n5" };

		fold_case(v, 1, "n5");
	}
	{
		char *f = nodeset_fold(NULL, 0);

		TEST_STREQ(f, "");
		free(f);
	}
}

/* Sorted copy of a list, for comparing sets. */
static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool same_set(const char *const *a, size_t na, const struct strlist *b)
{
	const char **x = xcalloc(na + 1, sizeof(*x));
	char **y = xcalloc(b->n + 1, sizeof(*y));
	bool same = na == b->n;

	memcpy(x, a, na * sizeof(*x));
	memcpy(y, b->v, b->n * sizeof(*y));
	qsort(x, na, sizeof(*x), str_cmp);
	qsort(y, b->n, sizeof(*y), str_cmp);
	for (size_t i = 0; same && i < na; i++)
		same = strcmp(x[i], y[i]) == 0;
	free(x);
	free(y);
	return same;
}

/* expand(fold(list)) is the list (as a set), and fold(expand(fold(list))) is fold(list). */
static void round_trip(const char *const *names, size_t n)
{
	char *f = nodeset_fold(names, n), *f2;
	struct strlist l = { NULL, 0 };

	TEST_INTEQ(nodeset_expand(f, &l, SPEC_MAX_HOSTS), 0);
	TEST_CHECK(same_set(names, n, &l));
	f2 = nodeset_fold((const char *const *)l.v, l.n);
	TEST_STREQ(f2, f);
	strlist_free(&l);
	free(f2);
	free(f);
}

/* fold(expand(x)) expands to the same names as x. */
static void round_trip_set(const char *set, size_t n)
{
	struct strlist a = { NULL, 0 }, b = { NULL, 0 };
	char *f;

	TEST_INTEQ(nodeset_expand(set, &a, SPEC_MAX_HOSTS), 0);
	TEST_INTEQ(a.n, n);
	f = nodeset_fold((const char *const *)a.v, a.n);
	TEST_INTEQ(nodeset_expand(f, &b, SPEC_MAX_HOSTS), 0);
	TEST_CHECK(same_set((const char *const *)a.v, a.n, &b));
	strlist_free(&a);
	strlist_free(&b);
	free(f);
}

static void test_round_trip(void)
{
	static const char *const a[] = { "node1", "node2", "node3", "node7" };
	static const char *const b[] = { "node01", "node02", "node03", "node10", "node04" };
	static const char *const c[] = { "head", "node1", "login2", "node2", "node100", "node099" };
	static const char *const d[] = { "198.18.1.2", "198.18.1.3", "198.18.1.10" };
	static const char *const e[] = { "n0", "n00", "n000", "n1", "n01", "n9999999999" };
	static const char *const f[] = { "rack1-ib", "rack2-ib", "x" };
	struct strlist l = { NULL, 0 };

	round_trip(a, 4);
	round_trip(b, 5);
	round_trip(c, 6);
	round_trip(d, 3);
	round_trip(e, 6);
	round_trip(f, 3);
	round_trip_set("node[01-16,20]", 17);
	round_trip_set("n[8-10],m[008-010],head", 7);
	round_trip_set("a,b,c[1-3]", 5);

	/* the set syntax: commas inside brackets belong to the range */
	TEST_INTEQ(nodeset_expand("h,n[1,3-4],x[2]", &l, 100), 0);
	TEST_INTEQ(l.n, 5);
	if (l.n == 5) {
		TEST_STREQ(l.v[0], "h");
		TEST_STREQ(l.v[2], "n3");
		TEST_STREQ(l.v[4], "x2");
	}
	/* errors and limits leave the list as it was */
	TEST_INTEQ(nodeset_expand("a,,b", &l, 100), -EINVAL);
	TEST_INTEQ(nodeset_expand("a,n[1-", &l, 100), -EINVAL);
	TEST_INTEQ(nodeset_expand("a,n[1-10]", &l, 10), -E2BIG);
	TEST_INTEQ(l.n, 5);
	TEST_CHECK(l.v[5] == NULL);
	TEST_INTEQ(nodeset_expand("", &l, 100), 0);
	TEST_INTEQ(l.n, 5);
	strlist_free(&l);
}

int main(void)
{
	test_noderange();
	test_fold();
	test_round_trip();
	TEST_EXIT();
}
