/* SPDX-License-Identifier: MIT */
/* lib/ib/probe.c: runs of the verbs helper with real children, deadlines, its argv. */
#include "config.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../lib/ib/probe.c"
#include "test.h"

/*
 * A stand-in for the probe helper, run by the real job code through the
 * child engine: the device name says how it behaves.
 */
static const char fake_helper[] =
	"#!/bin/sh\n"
	"while [ \"${1#--}\" != \"$1\" ]; do shift 2; done\n"
	"echo 'step 1'\n"
	"case $2 in sleepy) exec sleep 30;; crash) kill -9 $$;; esac\n"
	"echo 'step 2'\n"
	"echo 'fw 20.28.4000'\n"
	"m=$(ulimit -l); [ \"$m\" = unlimited ] && m=18446744073709551615 || m=$((m * 1024))\n"
	"case $2 in enomem) echo 'step 5'; echo \"result 5 12 $m $m 0\"; exit 0;; esac\n"
	"echo \"result 8 0 $m $m 1\"\n";

/* Real children: one answers, one hangs (killed at the timeout), one dies, one fails reg_mr. */
static void test_jobs(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = "" };
	struct probe_job jobs[4];
	const char *names[4] = { "good", "sleepy", "crash", "enomem" };
	char dir[] = "/tmp/hpcinit-rdma-helper.XXXXXX", *helper;
	char *old = getenv("HPCINIT_LIBEXEC_DIR") ? xstrdup(getenv("HPCINIT_LIBEXEC_DIR")) : NULL;
	uint64_t t0, took;

	TEST_CHECK(mkdtemp(dir) != NULL);
	helper = xasprintf("%s/%s", dir, RDMA_PROBE_HELPER);
	{
		FILE *f = fopen(helper, "we");

		TEST_CHECK(f && fputs(fake_helper, f) >= 0 && fclose(f) == 0 && chmod(helper, 0755) == 0);
	}
	setenv("HPCINIT_LIBEXEC_DIR", dir, 1);
	memset(jobs, 0, sizeof(jobs));
	for (int i = 0; i < 4; i++) {
		jobs[i].what = names[i];
		TEST_INTEQ(probe_job_start(&c, &jobs[i], 0, 1000, MEMLOCK_UNSET), 0);
	}
	t0 = now_ms();
	/* 1 s leaves the answering children time even under valgrind on a busy machine. */
	jobs_wait(jobs, 4, 1000);
	took = now_ms() - t0;
	TEST_CHECK(took >= 990 && took < 1000 + REAP_GRACE_MS + 500);

	TEST_CHECK(jobs[0].have_result && !jobs[0].hung && jobs[0].reaped);
	TEST_INTEQ(jobs[0].res.step, STEP_DONE);
	TEST_STREQ(jobs[0].res.fw_ver, "20.28.4000");
	TEST_CHECK(jobs[0].res.memlock_cur > 0);

	TEST_CHECK(jobs[1].hung && !jobs[1].have_result && jobs[1].reaped);
	TEST_INTEQ(jobs[1].last_step, STEP_OPEN);
	TEST_CHECK(WIFSIGNALED(jobs[1].wstatus) && WTERMSIG(jobs[1].wstatus) == SIGKILL);

	TEST_CHECK(!jobs[2].hung && !jobs[2].have_result && jobs[2].reaped);
	TEST_CHECK(WIFSIGNALED(jobs[2].wstatus));

	TEST_CHECK(jobs[3].have_result);
	TEST_INTEQ(jobs[3].res.step, STEP_REG_MR);
	TEST_INTEQ(jobs[3].res.err, ENOMEM);

	/* Every batch waits within the step's deadline, a second short of it. */
	c.deadline_ms = 0;
	TEST_INTEQ(probe_wait_ms(&c, 10000), 10000);
	c.deadline_ms = now_ms() + 500;
	TEST_INTEQ(probe_wait_ms(&c, 10000), 10000);
	c.deadline_ms = now_ms() + 5000;
	TEST_INTEQ(probe_wait_ms(&c, 2000), 2000);
	took = probe_wait_ms(&c, 10000);
	TEST_CHECK(took > 3000 && took <= 4000);
	memset(jobs, 0, sizeof(jobs));
	jobs[0].what = "sleepy";
	TEST_INTEQ(probe_job_start(&c, &jobs[0], 0, 60000, MEMLOCK_UNSET), 0);
	c.deadline_ms = now_ms() + 2000;
	t0 = now_ms();
	probe_jobs_wait(&c, jobs, 1, 60000);
	took = now_ms() - t0;
	TEST_CHECK(took >= 900 && took < 30000);        /* the deadline's, not the 60 s asked */
	TEST_CHECK(jobs[0].hung && jobs[0].reaped);
	c.deadline_ms = 0;

	/* No helper: the job does not start, and says why. */
	unlink(helper);
	memset(jobs, 0, sizeof(jobs));
	jobs[0].what = "good";
	TEST_INTEQ(probe_job_start(&c, &jobs[0], 0, 1000, MEMLOCK_UNSET), -ENOENT);
	rmdir(dir);
	free(helper);
	if (old)
		setenv("HPCINIT_LIBEXEC_DIR", old, 1);
	else
		unsetenv("HPCINIT_LIBEXEC_DIR");
	free(old);
}

/* The memlock a probe registers under goes on its argv; a peer's route and the lists have none. */
static void test_argv(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = "/r" };
	struct strlist av = { 0 };
	char path[] = "/x/hpcinit-rdma-probe";

	helper_argv(&c, &av, path, 1 << 20, "probe", "mlx5_ib0", "67108864");
	TEST_INTEQ(av.n, 8);
	TEST_STREQ(av.v[1], "--root");
	TEST_STREQ(av.v[3], "--memlock");
	TEST_STREQ(av.v[4], "1048576");
	TEST_STREQ(av.v[5], "probe");
	strlist_free(&av);
	helper_argv(&c, &av, path, MEMLOCK_UNLIMITED, "resolve", "10.0.0.5", "2000");
	TEST_STREQ(av.v[4], "unlimited");
	strlist_free(&av);
	helper_argv(&c, &av, path, 1 << 20, "route", "10.0.0.5", "2000");
	TEST_INTEQ(av.n, 6);
	TEST_STREQ(av.v[3], "route");
	strlist_free(&av);
	helper_argv(&c, &av, path, MEMLOCK_UNSET, "probe", "mlx5_ib0", NULL);
	TEST_INTEQ(av.n, 5);
	strlist_free(&av);
	c.root = "";
	helper_argv(&c, &av, path, MEMLOCK_UNSET, "list", NULL, NULL);
	TEST_INTEQ(av.n, 2);
	strlist_free(&av);
}

/* The built helper never chooses the fixture ops for the real root. */
static void test_select(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = "" };
	const char *roots[] = { "", "/", "/nonexistent-hpcinit-root" };

	if (!getenv("HPCINIT_LIBEXEC_DIR")) {
		printf("# test_select: HPCINIT_LIBEXEC_DIR unset (not under make check): not run\n");
		return;
	}
	for (size_t i = 0; i < 3; i++) {
		struct strbuf out = STRBUF_INIT;
		char *b;

		c.root = roots[i];
		TEST_INTEQ(probe_helper_ask(&c, "list", NULL, 10000, &out), 0);
		b = probe_helper_field(sb_str(&out), "backend");
		TEST_STREQ(b ? b : "(none)", "libibverbs");
		free(b);
		sb_free(&out);
	}
}

int main(void)
{
	test_jobs();
	test_argv();
	test_select();
	TEST_EXIT();
}
