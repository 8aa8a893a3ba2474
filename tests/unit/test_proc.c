/* SPDX-License-Identifier: MIT */
/* proc: argv exec (no shell), captured output, timeouts that kill the group, exit codes. */
#include "config.h"

#include "../../agent/proc.c"
#include "test.h"

int main(void)
{
	struct proc_result r;
	uint64_t t0;

	{
		const char *argv[] = { "echo", "a b", "$HOME;rm -rf /", NULL };

		TEST_INTEQ(proc_run(argv, NULL, NULL, 5000, &r), 0);
		/* Arguments arrive verbatim: nothing is interpreted by a shell. */
		TEST_STREQ(r.out, "a b $HOME;rm -rf /\n");
		TEST_INTEQ(r.exit_code, 0);
		TEST_CHECK(!r.timed_out);
		proc_result_free(&r);
	}
	{
		const char *argv[] = { "cat", NULL };

		TEST_INTEQ(proc_run(argv, NULL, "stdin data\n", 5000, &r), 0);
		TEST_STREQ(r.out, "stdin data\n");
		proc_result_free(&r);
	}
	{
		const char *argv[] = { "ls", "/nonexistent-hpcinit", NULL };

		TEST_INTEQ(proc_run(argv, NULL, NULL, 5000, &r), 0);
		TEST_CHECK(r.exit_code != 0);
		TEST_CHECK(strstr(r.err, "nonexistent-hpcinit") != NULL);
		proc_result_free(&r);
	}
	{
		const char *argv[] = { "env", NULL };

		TEST_INTEQ(proc_run(argv, NULL, NULL, 5000, &r), 0);
		TEST_STREQ(r.out, "PATH=/usr/sbin:/usr/bin:/sbin:/bin\nLC_ALL=C\n");
		proc_result_free(&r);
	}
	{
		const char *argv[] = { "no-such-program-hpcinit", NULL };

		TEST_INTEQ(proc_run(argv, NULL, NULL, 5000, &r), -ENOENT);
	}
	{
		/* A child that ignores its deadline is killed with its process group. */
		const char *argv[] = { "sleep", "30", NULL };

		t0 = mono_ms();
		TEST_INTEQ(proc_run(argv, NULL, NULL, 300, &r), 0);
		TEST_CHECK(r.timed_out);
		TEST_INTEQ(r.exit_code, -1);
		TEST_INTEQ(r.term_signal, SIGTERM);
		TEST_CHECK(mono_ms() - t0 < 3000);
		proc_result_free(&r);
	}
	{
		/* A child that exits without reading its stdin: EPIPE, not SIGPIPE for us. */
		const char *argv[] = { "true", NULL };
		char *big = xmalloc(1 << 20);

		memset(big, 'x', (1 << 20) - 1);
		big[(1 << 20) - 1] = '\0';
		TEST_INTEQ(proc_run(argv, NULL, big, 5000, &r), 0);
		TEST_INTEQ(r.exit_code, 0);
		proc_result_free(&r);
		free(big);
	}
	{
		const char *argv[] = { "a", "b c", "it's", "", NULL };
		char *s = argv_render(argv);

		TEST_STREQ(s, "a 'b c' 'it'\\''s' ''");
		free(s);
	}
	{
		char *p = proc_which("sh");

		TEST_CHECK(p && p[0] == '/');
		free(p);
		TEST_CHECK(proc_which("no-such-program-hpcinit") == NULL);
	}
	TEST_EXIT();
}
