/* SPDX-License-Identifier: MIT */
/*
 * proc: a child stuck in the kernel is not waited for.  A FUSE file system
 * whose server takes requests and never answers puts a stat(2) on it into
 * uninterruptible sleep (state D) that SIGKILL cannot end -- what a dead
 * hard NFS server or a wedged RDMA driver does.  The engine must give up on
 * such a child after the reap grace, report it abandoned, and return.
 * Needs root and /dev/fuse (exit 77, SKIP, otherwise).
 */
#include "config.h"

#include <linux/fuse.h>
#include <sys/mount.h>

#include "../../agent/proc.c"
#include "test.h"

static char mnt[64];

/* The server: answer FUSE_INIT, then read every request and answer none. */
static void serve(int fuse)
{
	static char buf[1 << 17];

	for (;;) {
		ssize_t n = read(fuse, buf, sizeof(buf));
		const struct fuse_in_header *in = (const void *)buf;

		if (n < 0 && errno == EINTR)
			continue;
		if (n < (ssize_t)sizeof(*in))
			_exit(0);
		if (in->opcode == FUSE_INIT) {
			const struct fuse_init_in *ii = (const void *)(in + 1);
			struct {
				struct fuse_out_header h;
				struct fuse_init_out o;
			} rep;

			memset(&rep, 0, sizeof(rep));
			rep.h.len = sizeof(rep);
			rep.h.unique = in->unique;
			rep.o.major = FUSE_KERNEL_VERSION;
			rep.o.minor = ii->minor < FUSE_KERNEL_MINOR_VERSION ? ii->minor : FUSE_KERNEL_MINOR_VERSION;
			rep.o.max_readahead = ii->max_readahead;
			rep.o.max_write = 4096;
			if (write(fuse, &rep, sizeof(rep)) != (ssize_t)sizeof(rep))
				_exit(1);
		}
		/* anything else: taken from the queue, never answered */
	}
}

static void stat_child(void *arg, int fd)
{
	struct stat st;

	(void)!write(fd, "S", 1);
	(void)!stat(arg, &st);
	(void)!write(fd, "R", 1);
}

static char proc_state(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

int main(void)
{
	const struct proc_limits lim = { .timeout_ms = 300, .term_grace_ms = 200, .reap_ms = 400 };
	struct proc_child ch = { 0 };
	struct proc_result r;
	char opts[128];
	pid_t server;
	int fuse, st;
	uint64_t t0, took;

	snprintf(mnt, sizeof(mnt), "/tmp/hpcinit-stuck.XXXXXX");
	fuse = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (geteuid() != 0 || fuse < 0 || !mkdtemp(mnt)) {
		printf("SKIP: needs root and /dev/fuse\n");
		return 77;
	}
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0", fuse);
	if (mount("hpcinit-stuck", mnt, "fuse", MS_NOSUID | MS_NODEV, opts) < 0) {
		printf("SKIP: cannot mount fuse: %s\n", strerror(errno));
		rmdir(mnt);
		return 77;
	}
	server = fork();
	if (server == 0)
		serve(fuse);
	close(fuse);    /* the server holds the connection now */

	/* A function child: killed at the deadline, stays in D, is left behind. */
	TEST_INTEQ(proc_start_fn(&ch, stat_child, mnt, 0), 0);
	t0 = now_ms();
	proc_wait(&ch, 1, &lim);
	took = now_ms() - t0;
	TEST_STREQ(sb_str(&ch.out), "S");
	TEST_CHECK(ch.timed_out && ch.abandoned && !ch.exited);
	TEST_CHECK(took >= 290 + 200 + 390 && took < 300 + 200 + 400 + 1000);
	TEST_CHECK(proc_state(ch.pid) == 'D');
	printf("# function child %d: state %c after SIGKILL, given up after %llu ms\n", (int)ch.pid,
	       proc_state(ch.pid), (unsigned long long)took);
	proc_child_free(&ch);

	/* An external program (TERM, then KILL 1 s later), through proc_run. */
	{
		const char *argv[] = { "stat", mnt, NULL };

		t0 = now_ms();
		TEST_INTEQ(proc_run(argv, NULL, NULL, 300, &r), 0);
		took = now_ms() - t0;
		TEST_CHECK(r.timed_out && r.abandoned);
		TEST_INTEQ(r.exit_code, -1);
		TEST_INTEQ(r.term_signal, SIGKILL);
		TEST_CHECK(took >= 300 + 1000 && took < 300 + 1000 + 500 + 1000);
		proc_result_free(&r);
	}

	/* Clean up: the server goes, the connection aborts, the stuck children end. */
	kill(server, SIGKILL);
	waitpid(server, &st, 0);
	/* It dies of the signals it got (SIGTERM first; under valgrind the SIGKILL may win). */
	TEST_CHECK(waitpid(ch.pid, &st, 0) == ch.pid && WIFSIGNALED(st) &&
		   (WTERMSIG(st) == SIGTERM || WTERMSIG(st) == SIGKILL));
	while (waitpid(-1, &st, 0) > 0)
		;
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	TEST_EXIT();
}
