/* SPDX-License-Identifier: MIT */
/*
 * proc: a child stuck in the kernel is not waited for.  A FUSE file system
 * whose server takes requests and never answers puts a stat(2) on it into
 * uninterruptible sleep (state D) that SIGKILL cannot end -- what a dead
 * hard NFS server or a wedged RDMA driver does.  The engine must give up on
 * such a child after the reap grace, report it abandoned, and return.
 * And it must not start a second one: a child with a key is recorded when it
 * is left behind, and while it sleeps there every later start with that key
 * (a later run's) is refused, naming it, so N runs leave one stuck child.
 * Needs root and /dev/fuse (exit 77, SKIP, otherwise).
 */
#include "config.h"

#include <dirent.h>
#include <linux/fuse.h>
#include <sys/mount.h>

#include "../../common/base/proc.c"
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

/* Field 4 (ppid) and 22 (start time) of /proc/PID/stat. */
static long long stat_field(pid_t pid, int want)
{
	char path[64], buf[1024], *p;
	FILE *f;
	size_t n;
	int field = 3;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	if (!(p = strrchr(buf, ')')))
		return -1;
	for (p += 2; *p && field < want; p++)
		if (*p == ' ')
			field++;
	return strtoll(p, NULL, 10);
}

static pid_t getppid_of(pid_t pid)
{
	return (pid_t)stat_field(pid, 4);
}

static unsigned long long starttime_of(pid_t pid)
{
	return (unsigned long long)stat_field(pid, 22);
}

int main(void)
{
	const struct proc_limits lim = { .timeout_ms = 300, .term_grace_ms = 200, .reap_ms = 400 };
	struct proc_child ch = { 0 };
	struct proc_result r;
	char opts[128];
	pid_t server, stuck;
	int fuse, st, n_stuck;
	char sdir[64], rec[128];
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

	snprintf(sdir, sizeof(sdir), "/tmp/hpcinit-stuckrec.XXXXXX");
	TEST_CHECK(mkdtemp(sdir) != NULL);
	snprintf(rec, sizeof(rec), "%s/step.probe", sdir);
	proc_stuck_dir(sdir);

	/* A function child: killed at the deadline, stays in D, is left behind. */
	ch.stuck_key = "step.probe";
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
	stuck = ch.pid;
	TEST_CHECK(access(rec, F_OK) == 0);

	/* Five more runs of the same step: none starts a child, each names the stuck one. */
	for (int i = 0; i < 5; i++) {
		struct proc_child again = { .stuck_key = "step.probe" };
		struct strbuf txt = STRBUF_INIT;
		char want[64];

		t0 = now_ms();
		TEST_INTEQ(proc_start_fn(&again, stat_child, mnt, 0), -EBUSY);
		TEST_CHECK(now_ms() - t0 < 200);
		TEST_INTEQ(again.pid, -1);
		TEST_INTEQ(again.blocked.pid, stuck);
		TEST_CHECK(again.blocked.since > 0);
		proc_stuck_text(&again.blocked, &txt);
		snprintf(want, sizeof(want), "(pid %d, waiting in ", (int)stuck);
		TEST_CHECK(strncmp(sb_str(&txt), "still blocked since ", 20) == 0 && strstr(sb_str(&txt), want));
		TEST_CHECK(strstr(sb_str(&txt), "stat") != NULL);      /* what it was left in */
		if (i == 0)
			printf("# %s\n", sb_str(&txt));
		sb_free(&txt);
		proc_child_free(&again);
	}
	/* Our children asleep in the kernel: the one. */
	n_stuck = 0;
	{
		DIR *d = opendir("/proc");
		struct dirent *e;

		while (d && (e = readdir(d))) {
			pid_t p = (pid_t)atoi(e->d_name);

			if (p > 0 && proc_state(p) == 'D' && getppid_of(p) == getpid())
				n_stuck++;
		}
		if (d)
			closedir(d);
	}
	TEST_INTEQ(n_stuck, 1);
	/* A record whose pid is another process (start time differs) is stale, and goes. */
	{
		FILE *f = fopen(rec, "we");
		struct proc_stuck pst;

		TEST_CHECK(f != NULL);
		fprintf(f, "pid %d\nstarttime 1\nsince 1\nwhat x\n", (int)getpid());
		fclose(f);
		TEST_INTEQ(proc_stuck_find("step.probe", &pst), 0);
		TEST_CHECK(access(rec, F_OK) < 0);
		f = fopen(rec, "we");
		fprintf(f, "pid %d\nstarttime %llu\nsince 1\nwhat x\n", (int)stuck, starttime_of(stuck));
		fclose(f);
		TEST_INTEQ(proc_stuck_find("step.probe", &pst), 1);
		/* ... and a live process with the right start time but not asleep in the kernel: not stuck */
		f = fopen(rec, "we");
		fprintf(f, "pid %d\nstarttime %llu\nsince 1\nwhat x\n", (int)getpid(), starttime_of(getpid()));
		fclose(f);
		TEST_INTEQ(proc_stuck_find("step.probe", &pst), 0);
		/* put the real record back */
		f = fopen(rec, "we");
		fprintf(f, "pid %d\nstarttime %llu\nsince 1\nwhat x\n", (int)stuck, starttime_of(stuck));
		fclose(f);
	}

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
	/* The stuck child ended: its record is stale, and the step may start again. */
	{
		struct proc_stuck sst;
		struct proc_child again = { .stuck_key = "step.probe" };
		const struct proc_limits quick = { .timeout_ms = 2000, .reap_ms = 500 };

		TEST_INTEQ(proc_stuck_find("step.probe", &sst), 0);
		TEST_CHECK(access(rec, F_OK) < 0);
		TEST_INTEQ(proc_start_fn(&again, stat_child, mnt, 0), 0);
		proc_wait(&again, 1, &quick);
		TEST_CHECK(again.exited && !again.abandoned);
		proc_child_free(&again);
	}
	proc_stuck_dir(NULL);
	rmdir(sdir);
	umount2(mnt, MNT_DETACH);
	rmdir(mnt);
	TEST_EXIT();
}
