/* SPDX-License-Identifier: MIT */
/*
 * runner: order, skips for absent sections and failed needs, --only with needs,
 * exit codes, JSON report.  Uses a table of test modules instead of the real one.
 */
#include "config.h"

#include "../../agent/runner.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static int calls[4];
static int order[8], norder;
static uint64_t seen_deadline;

static bool on(const struct spec *s) { return true; }
static bool off(const struct spec *s) { return false; }
static uint64_t t5(const struct spec *s) { return 5000; }

static int a_apply(struct ctx *c, struct report *r)
{
	calls[0]++;
	order[norder++] = 0;
	seen_deadline = c->deadline_ms;
	report_set(r, ST_CHANGED, "a did it");
	report_changed(r, "/etc/a");
	return 0;
}

static int b_apply(struct ctx *c, struct report *r)
{
	calls[1]++;
	order[norder++] = 1;
	report_detail(r, "b broke: \"quoted\"");
	return -EIO;
}

static int c_apply(struct ctx *c, struct report *r)
{
	calls[2]++;
	order[norder++] = 2;
	return 0;
}

static int d_apply(struct ctx *c, struct report *r)
{
	calls[3]++;
	order[norder++] = 3;
	report_set(r, ST_DEGRADED, "d is optional");
	return 0;
}

static const char *const needs_b[] = { "b", NULL };
static const char *const needs_a[] = { "a", NULL };
static const struct module ma = { "a", on, NULL, t5, a_apply, a_apply };
static const struct module mb = { "b", on, NULL, NULL, b_apply, b_apply };
static const struct module mc = { "c", on, needs_b, NULL, c_apply, c_apply };
static const struct module md = { "d", on, needs_a, NULL, d_apply, d_apply };
static const struct module me = { "e", off, NULL, NULL, c_apply, c_apply };
const struct module *const module_table[] = { &ma, &mb, &mc, &md, &me, NULL };

const struct module *module_find(const char *name)
{
	for (size_t i = 0; module_table[i]; i++)
		if (strcmp(module_table[i]->name, name) == 0)
			return module_table[i];
	return NULL;
}

static char root[] = "/tmp/hpcinit-test-runner.XXXXXX";

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_APPLY };
	struct run_opts o = { .command = "apply", .lock_timeout_ms = 1000 };
	struct run_result res;
	uint64_t t0;
	char *j;
	int code;

	if (!mkdtemp(root))
		return 1;
	char name[] = "glo";
	s.cluster.name = name;
	char file[] = "/x.yaml";
	s.file = file;
	t0 = now_ms();
	code = runner_run(&c, &o, &res);
	TEST_INTEQ(code, 1);            /* b failed */
	TEST_INTEQ(norder, 3);          /* a, b, d ran in order; c skipped */
	TEST_INTEQ(order[0], 0);
	TEST_INTEQ(order[1], 1);
	TEST_INTEQ(order[2], 3);
	TEST_CHECK(seen_deadline >= t0 + 5000 && seen_deadline <= now_ms() + 5000);
	TEST_INTEQ(res.reports[1].status, ST_FAILED);
	TEST_STREQ(res.reports[1].summary, "Input/output error");
	TEST_INTEQ(res.reports[2].status, ST_SKIPPED);
	TEST_STREQ(res.reports[2].summary, "needs b, which failed");
	TEST_INTEQ(res.reports[3].status, ST_DEGRADED);
	TEST_INTEQ(res.reports[4].status, ST_SKIPPED);
	TEST_STREQ(res.reports[4].summary, "no e section in the spec");
	j = runner_json(&c, &o, &res);
	TEST_CHECK(strstr(j, "\"name\": \"b\", \"status\": \"failed\"") != NULL);
	TEST_CHECK(strstr(j, "\"details\": [\"b broke: \\\"quoted\\\"\"]") != NULL);
	TEST_CHECK(strstr(j, "\"changed\": [\"/etc/a\"]") != NULL);
	TEST_CHECK(strstr(j, "\"exit_code\": 1") != NULL);
	free(j);
	run_result_free(&res);

	/* --only d pulls in a (its need); b and c are not run at all. */
	memset(calls, 0, sizeof(calls));
	norder = 0;
	strlist_push(&o.only, "d");
	TEST_INTEQ(runner_check_only(&o.only), 0);
	code = runner_run(&c, &o, &res);
	TEST_INTEQ(code, 3);            /* only d degraded */
	TEST_INTEQ(calls[0], 1);
	TEST_INTEQ(calls[1], 0);
	TEST_INTEQ(calls[3], 1);
	TEST_CHECK(!res.ran[1] && !res.ran[2]);
	run_result_free(&res);
	strlist_free(&o.only);

	/* check mode: drift is exit 1 and nothing is locked or written */
	c.mode = RUN_CHECK;
	strlist_push(&o.only, "a");
	code = runner_run(&c, &o, &res);
	TEST_INTEQ(code, 1);
	run_result_free(&res);
	strlist_free(&o.only);

	strlist_push(&o.only, "zz");
	TEST_INTEQ(runner_check_only(&o.only), -EINVAL);
	strlist_free(&o.only);
	{
		char *p = fs_rooted(root, STATUS_PATH), *text = NULL;

		TEST_INTEQ(fs_read_host(p, 1 << 20, &text, NULL), 0);
		TEST_CHECK(text && strstr(text, "\"command\": \"apply\""));
		free(text);
		free(p);
	}
	test_rm_rf(root);
	TEST_EXIT();
}
