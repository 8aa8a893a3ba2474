/* SPDX-License-Identifier: MIT */
/*
 * proc: argv exec (no shell), captured output, timeouts that kill the group,
 * exit codes; the build-tree rule for helpers; the engine underneath: TERM then KILL, inherited descriptors
 * closed, function children, several children under one deadline.
 * (A child stuck in the kernel: test_proc_stuck.c.)
 */
#include "config.h"

#include <sys/resource.h>

#include "../../common/base/proc.c"
#include "test.h"

static void fn_answer(void *arg, int fd)
{
	const int *probe = arg;
	char msg[64];
	int n;

	/* The parent's descriptor (not close-on-exec) must be gone; stdout is /dev/null. */
	n = snprintf(msg, sizeof(msg), "fd %s, fd1 %s", fcntl(*probe, F_GETFD) < 0 ? "closed" : "open",
		     fcntl(1, F_GETFD) >= 0 ? "open" : "closed");
	(void)!write(fd, msg, (size_t)n);
	(void)!write(1, "lost\n", 5);
}

static void fn_sleep(void *arg, int fd)
{
	(void)arg;
	(void)!write(fd, "S", 1);
	for (;;)
		pause();
}

/* Answers, closes its pipe, and lives on 300 ms without it (the moment an isolated step's child has, drawn out). */
static void fn_close_then_exit(void *arg, int fd)
{
	(void)arg;
	(void)!write(fd, "A", 1);
	close(fd);
	usleep(300 * 1000);
}

/* Closes its pipe and never exits. */
static void fn_close_then_hang(void *arg, int fd)
{
	(void)arg;
	close(fd);
	for (;;)
		pause();
}

/* Times our process slept (voluntary context switches) while proc_wait waited for ch. */
static long wait_sleeps(struct proc_child *ch, const struct proc_limits *lim)
{
	struct rusage a, b;

	getrusage(RUSAGE_SELF, &a);
	proc_wait(ch, 1, lim);
	getrusage(RUSAGE_SELF, &b);
	return b.ru_nvcsw - a.ru_nvcsw;
}

/*
 * A child that closed its pipe and has not exited yet: proc_wait sleeps
 * until the exit (SIGCHLD wakes its poll), not in EXIT_POLL_MS steps of
 * waitpid(WNOHANG) (which cost a 5 ms step per isolated step of a run: 60
 * steps over these 300 ms).  Without the wake-up (chld_wake_off: its pipe
 * could not be made) the steps are the way, and the exit is still seen.
 * The deadline still holds.
 */
static void test_exit_wakes(void)
{
	const struct proc_limits lim = { .timeout_ms = 5000, .reap_ms = 5000, .eof_ends = true };
	const struct proc_limits dl = { .timeout_ms = 300, .reap_ms = 500 };
	struct proc_child ch = { 0 };
	uint64_t t0 = now_ms();
	long sleeps;

	TEST_INTEQ(proc_start_fn(&ch, fn_close_then_exit, NULL, 0), 0);
	sleeps = wait_sleeps(&ch, &lim);
	TEST_CHECK(ch.eof && ch.exited && WIFEXITED(ch.status) && !ch.timed_out);
	TEST_STREQ(sb_str(&ch.out), "A");
	TEST_CHECK(now_ms() - t0 >= 290 && now_ms() - t0 < 3000);
	if (sleeps >= 20)
		fprintf(stderr, "proc_wait slept %ld times for one child's exit\n", sleeps);
	TEST_CHECK(sleeps < 20);
	proc_child_free(&ch);

	chld_wake_off = true;
	memset(&ch, 0, sizeof(ch));
	TEST_INTEQ(proc_start_fn(&ch, fn_close_then_exit, NULL, 0), 0);
	sleeps = wait_sleeps(&ch, &lim);
	TEST_CHECK(ch.eof && ch.exited && WIFEXITED(ch.status) && !ch.timed_out);
	TEST_CHECK(sleeps >= 20);       /* the fallback: polled, as this test can tell */
	proc_child_free(&ch);
	chld_wake_off = false;

	/* Closed its pipe and hangs: killed at the deadline, nothing to wake the poll but the timer. */
	memset(&ch, 0, sizeof(ch));
	t0 = now_ms();
	TEST_INTEQ(proc_start_fn(&ch, fn_close_then_hang, NULL, 0), 0);
	proc_wait(&ch, 1, &dl);
	TEST_CHECK(ch.timed_out && ch.exited && WIFSIGNALED(ch.status) && WTERMSIG(ch.status) == SIGKILL);
	TEST_CHECK(now_ms() - t0 >= 290 && now_ms() - t0 < 2000);
	proc_child_free(&ch);
}

static void test_engine(void)
{
	const struct proc_limits lim = { .timeout_ms = 500, .reap_ms = 500, .eof_ends = true };
	struct proc_child ch[3];
	int inherited = open("/dev/null", O_RDONLY);     /* deliberately without O_CLOEXEC */
	int high = dup2(inherited, 200);
	uint64_t t0;

	TEST_CHECK(inherited >= 0 && high == 200);
	memset(ch, 0, sizeof(ch));
	/* Function children: output captured, inherited descriptors closed, one deadline for all. */
	TEST_INTEQ(proc_start_fn(&ch[0], fn_answer, &inherited, 0), 0);
	TEST_INTEQ(proc_start_fn(&ch[1], fn_answer, &high, 0), 0);
	TEST_INTEQ(proc_start_fn(&ch[2], fn_sleep, NULL, 0), 0);
	/* The answer pipe holds 1 MiB (10,000 peers are 2.9 MB: 3 wake-ups, not 45) where allowed. */
	if (geteuid() == 0)
		TEST_INTEQ(fcntl(ch[0].out_fd, F_GETPIPE_SZ), 1 << 20);
	t0 = now_ms();
	proc_wait(ch, 3, &lim);
	TEST_CHECK(now_ms() - t0 >= 490 && now_ms() - t0 < 2500);
	TEST_STREQ(sb_str(&ch[0].out), "fd closed, fd1 open");
	TEST_STREQ(sb_str(&ch[1].out), "fd closed, fd1 open");
	TEST_CHECK(ch[0].eof && ch[0].exited && !ch[0].timed_out && WIFEXITED(ch[0].status));
	/* The sleeper said "S", then was killed at the deadline (SIGKILL at once: no TERM grace). */
	TEST_STREQ(sb_str(&ch[2].out), "S");
	TEST_CHECK(!ch[2].eof && ch[2].timed_out && ch[2].exited && !ch[2].abandoned);
	TEST_CHECK(WIFSIGNALED(ch[2].status) && WTERMSIG(ch[2].status) == SIGKILL);
	TEST_CHECK(ch[2].ms >= 490);
	for (int i = 0; i < 3; i++)
		proc_child_free(&ch[i]);

	/* want: the answer is complete after that many bytes, whatever the child does next. */
	memset(ch, 0, sizeof(ch));
	TEST_INTEQ(proc_start_fn(&ch[0], fn_sleep, NULL, 1), 0);
	t0 = now_ms();
	proc_wait(ch, 1, &lim);
	TEST_STREQ(sb_str(&ch[0].out), "S");
	TEST_CHECK(ch[0].eof && !ch[0].timed_out);
	/* It answered and keeps running: left behind after the reap grace, not killed, not waited for. */
	TEST_CHECK(ch[0].abandoned && !ch[0].exited);
	TEST_CHECK(now_ms() - t0 < 1500);
	kill(ch[0].pid, SIGKILL);
	waitpid(ch[0].pid, NULL, 0);
	proc_child_free(&ch[0]);

	/* argv children: an inherited descriptor does not survive into the program either. */
	{
		const char *argv[] = { "sh", "-c", "if [ -e /proc/self/fd/200 ]; then echo open; else echo closed; fi",
				       NULL };
		struct proc_result r;

		TEST_INTEQ(proc_run(argv, NULL, NULL, 5000, &r), 0);
		TEST_STREQ(r.out, "closed\n");
		proc_result_free(&r);
	}
	close(high);
	close(inherited);
}

/*
 * The build-tree rule (build_tree_trusted), as root: a tree and every
 * directory above it root's and not writable by group or others; a tree in a
 * directory another user owns, or owned by another user, or a group-writable
 * directory above it, is not trusted, and why names the directory.
 */
static void test_build_tree(void)
{
	char base[] = "/tmp/hpcinit-test-bt.XXXXXX", buf[PATH_MAX + 128], *u, *bt, *m;
	const char *why;
	struct stat exe = { .st_uid = 0, .st_mode = S_IFREG | 0755 };

	if (geteuid() != 0)
		return;         /* chown: core-helper-path.sh runs the binary */
	TEST_CHECK(mkdtemp(base) != NULL);
	TEST_INTEQ(chmod(base, 0755), 0);
	u = xasprintf("%s/u", base);
	bt = xasprintf("%s/u/bt", base);
	m = xasprintf("%s/u/bt/config.status", base);
	TEST_INTEQ(mkdir(u, 0755), 0);
	TEST_INTEQ(mkdir(bt, 0755), 0);
	/* no marker: not a build tree, nothing to say */
	TEST_CHECK(!build_tree_trusted(bt, &exe, buf, sizeof(buf), &why));
	TEST_CHECK(why == NULL);
	fclose(fopen(m, "w"));
	TEST_CHECK(build_tree_trusted(bt, &exe, buf, sizeof(buf), &why));
	/* a directory above it another user's (65534: nobody) */
	TEST_INTEQ(chown(u, 65534, 65534), 0);
	TEST_CHECK(!build_tree_trusted(bt, &exe, buf, sizeof(buf), &why));
	TEST_CHECK(why && strstr(why, "is owned by uid 65534, neither root nor this process's user (uid 0)"));
	TEST_CHECK(why && strncmp(why, "directory ", 10) == 0 && strstr(why, "/u is owned"));
	TEST_INTEQ(chown(u, 0, 0), 0);
	/* group-writable above it; a root-owned sticky one (/tmp) is fine */
	TEST_INTEQ(chmod(u, 0775), 0);
	TEST_CHECK(!build_tree_trusted(bt, &exe, buf, sizeof(buf), &why));
	TEST_CHECK(why && strstr(why, "/u is writable by group or others (mode 0775)"));
	TEST_INTEQ(chmod(u, 01777), 0);
	TEST_CHECK(build_tree_trusted(bt, &exe, buf, sizeof(buf), &why));
	TEST_INTEQ(chmod(u, 0755), 0);
	/* the binary another user's */
	exe.st_uid = 65534;
	TEST_CHECK(!build_tree_trusted(bt, &exe, buf, sizeof(buf), &why));
	TEST_CHECK(why && strncmp(why, "the binary is owned by uid 65534", 32) == 0);
	exe.st_uid = 0;
	TEST_CHECK(build_tree_trusted(bt, &exe, buf, sizeof(buf), &why));
	unlink(m);
	rmdir(bt);
	rmdir(u);
	rmdir(base);
	free(m);
	free(bt);
	free(u);
}

static void on_term(int sig)
{
	(void)sig;
}

/* What proc_start_module makes of its child, and its exec where the module does not load. */
static void test_module(void)
{
	const struct proc_limits lim = { .timeout_ms = 10000, .term_grace_ms = 1000, .reap_ms = 500 };
	const char *argv[] = { "echo", "a b", NULL }, *envp[] = { "HPCINIT_TEST_ENV=child", NULL };
	char *exe = realpath("/proc/self/exe", NULL), *module;
	struct sigaction sa = { .sa_handler = on_term }, old;
	const char *modules[] = { NULL, "/nonexistent-hpcinit/x.so", NULL };
	const char *entries[] = { "test_module_main", "test_module_main", "no_such_entry" };

	TEST_CHECK(exe != NULL);
	if (!exe)
		return;
	*strrchr(exe, '/') = '\0';
	module = xasprintf("%s/test-module.so", exe);
	modules[0] = modules[2] = module;
	/* what a child must not keep of its parent: a handler, the environment, buffered input */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, &old);
	setenv("HPCINIT_TEST_ENV", "parent", 1);
	ungetc('X', stdin);
	for (int i = 0; i < 3; i++) {
		struct proc_child ch = { 0 };

		TEST_INTEQ(proc_start_module(&ch, modules[i], entries[i], "/bin/echo", argv, envp, "line\n"), 0);
		proc_wait(&ch, 1, &lim);
		TEST_CHECK(ch.exited && WIFEXITED(ch.status));
		if (i == 0) {
			TEST_INTEQ(WEXITSTATUS(ch.status), 7);
			TEST_STREQ(sb_str(&ch.out), "argc 2 [a b] env child sigterm default fd3 closed stdin line\n");
		} else {
			/* not there, or no such entry: the program exec'd */
			TEST_INTEQ(WEXITSTATUS(ch.status), 0);
			TEST_STREQ(sb_str(&ch.out), "a b\n");
		}
		proc_child_free(&ch);
	}
	sigaction(SIGTERM, &old, NULL);
	unsetenv("HPCINIT_TEST_ENV");
	(void)getc(stdin);
	free(module);
	free(exe);
}

int main(void)
{
	test_module();
	test_engine();
	test_exit_wakes();
	test_build_tree();
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

		t0 = now_ms();
		TEST_INTEQ(proc_run(argv, NULL, NULL, 300, &r), 0);
		TEST_CHECK(r.timed_out);
		TEST_INTEQ(r.exit_code, -1);
		TEST_INTEQ(r.term_signal, SIGTERM);
		TEST_CHECK(now_ms() - t0 < 3000);
		proc_result_free(&r);
	}
	{
		/* A child that ignores SIGTERM gets SIGKILL 1 s later (sleep inherits the ignore). */
		const char *argv[] = { "sh", "-c", "trap '' TERM; echo ready; sleep 30", NULL };

		t0 = now_ms();
		TEST_INTEQ(proc_run(argv, NULL, NULL, 300, &r), 0);
		TEST_CHECK(r.timed_out && !r.abandoned);
		TEST_INTEQ(r.exit_code, -1);
		TEST_INTEQ(r.term_signal, SIGKILL);
		TEST_STREQ(r.out, "ready\n");
		TEST_CHECK(now_ms() - t0 >= 1290 && now_ms() - t0 < 4000);
		proc_result_free(&r);
	}
	{
		/* Output that outlives the child (a grandchild holds the pipe) does not hold us past the deadline. */
		const char *argv[] = { "sh", "-c", "sleep 30 & echo bye", NULL };

		t0 = now_ms();
		TEST_INTEQ(proc_run(argv, NULL, NULL, 300, &r), 0);
		TEST_STREQ(r.out, "bye\n");
		TEST_INTEQ(r.exit_code, 0);
		TEST_CHECK(now_ms() - t0 < 3000);
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
