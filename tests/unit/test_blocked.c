/* SPDX-License-Identifier: MIT */
/*
 * common/base/blocked.c: what a blocked child waits for, read from /proc,
 * for real children blocked in real system calls: opening a FIFO no one
 * writes (by an absolute and by a relative path), reading a pipe, ppoll,
 * and spinning in user space.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>

#include "../../common/base/blocked.c"
#include "strbuf.h"
#include "test.h"

static char dir[] = "/tmp/hpcinit-test-blocked.XXXXXX";

/* Wait (at most 10 s) until pid is in system call nr; false if it never gets there. */
static bool wait_in_call(pid_t pid, long nr)
{
	for (int i = 0; i < 1000; i++) {
		unsigned long long a[2] = { 0, 0 };
		struct timespec ts = { 0, 10 * 1000000L };

		if (read_syscall(pid, a) == nr)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

/* Wait until pid runs in user space ("running" in /proc/PID/syscall: no number). */
static bool wait_running(pid_t pid)
{
	for (int i = 0; i < 1000; i++) {
		unsigned long long a[2] = { 0, 0 };
		struct timespec ts = { 0, 10 * 1000000L };

		if (read_syscall(pid, a) < 0)
			return true;
		nanosleep(&ts, NULL);
	}
	return false;
}

static void stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* What proc_describe_blocked says of pid, without the kernel wait (which depends on the kernel). */
static char *describe(pid_t pid)
{
	struct strbuf sb = STRBUF_INIT;
	char *k;

	proc_describe_blocked(pid, &sb);
	k = strstr(sb.buf ? sb.buf : "", " (kernel: ");
	if (k)
		*k = '\0';
	return sb_steal(&sb);
}

int main(void)
{
	char fifo[128], want[256], wchan[64], *got;
	int pfd[2];
	pid_t pid;

	if (!mkdtemp(dir))
		return 1;
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	TEST_INTEQ(mkfifo(fifo, 0600), 0);

	/* open of a FIFO nobody writes, by its absolute path: "openat of PATH" */
	pid = fork();
	if (pid == 0) {
		open(fifo, O_RDONLY);
		_exit(0);
	}
	TEST_CHECK(wait_in_call(pid, SYS_openat));
	got = describe(pid);
	snprintf(want, sizeof(want), "openat of %s", fifo);
	TEST_STREQ(got, want);
	free(got);
	stop(pid);

	/* by a path relative to the working directory: the directory joined to it */
	pid = fork();
	if (pid == 0) {
		if (chdir(dir) == 0)
			open("fifo", O_RDONLY);
		_exit(0);
	}
	TEST_CHECK(wait_in_call(pid, SYS_openat));
	got = describe(pid);
	TEST_STREQ(got, want);
	free(got);
	stop(pid);

	/* a read: named, with the file behind its descriptor */
	TEST_INTEQ(pipe(pfd), 0);
	pid = fork();
	if (pid == 0) {
		char b;

		close(pfd[1]);
		if (read(pfd[0], &b, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(pfd[0]);
	TEST_CHECK(wait_in_call(pid, SYS_read));
	got = describe(pid);
	TEST_CHECK(strncmp(got, "read on pipe:[", 14) == 0);
	free(got);
	stop(pid);
	close(pfd[1]);

	/* a call the table does not name (clock_nanosleep, sleep's): its number */
	pid = fork();
	if (pid == 0) {
		sleep(3600);
		_exit(0);
	}
	TEST_CHECK(wait_in_call(pid, SYS_clock_nanosleep));
	got = describe(pid);
	snprintf(want, sizeof(want), "system call %ld", (long)SYS_clock_nanosleep);
	TEST_STREQ(got, want);
	free(got);
	stop(pid);

	/* ppoll: named, no file (it has none to name) */
	pid = fork();
	if (pid == 0) {
		struct timespec ts = { 3600, 0 };

		ppoll(NULL, 0, &ts, NULL);
		_exit(0);
	}
	TEST_CHECK(wait_in_call(pid, SYS_ppoll));
	got = describe(pid);
	TEST_STREQ(got, "ppoll");
	free(got);
	stop(pid);

	/* in user space: not in a system call, and no kernel wait */
	pid = fork();
	if (pid == 0) {
		for (volatile unsigned long i = 0;; i++)
			;
	}
	TEST_CHECK(wait_running(pid));
	got = describe(pid);
	TEST_STREQ(got, "running, not in a system call");
	free(got);
	proc_wchan(pid, wchan, sizeof(wchan));
	TEST_STREQ(wchan, "");
	stop(pid);

	/* a pid that is gone: no kernel wait known */
	proc_wchan(pid, wchan, sizeof(wchan));
	TEST_STREQ(wchan, "");

	unlink(fifo);
	rmdir(dir);
	TEST_EXIT();
}
