/* SPDX-License-Identifier: MIT */
/*
 * fsutil: root prefix, atomic writes that skip unchanged content, what a
 * write syncs (fsync counted), managed blocks, plan mode.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* fsutil.c's fsync calls, counted (test_write_sync) */
static int fsyncs;
static int counted_fsync(int fd)
{
	fsyncs++;
	return fsync(fd);
}
#define fsync counted_fsync
#include "../../common/base/fsutil.c"
#undef fsync
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-fsutil.XXXXXX";

#define slurp(rel) test_get(root, rel)
#define put(rel, text) test_put(root, rel, text)

static struct stat stat_of(const char *rel)
{
	char *p = fs_rooted(root, rel);
	struct stat st;

	memset(&st, 0, sizeof(st));
	stat(p, &st);
	free(p);
	return st;
}

static void test_rooted(void)
{
	char *p;

	p = fs_rooted("", "/etc/fstab");
	TEST_STREQ(p, "/etc/fstab");
	free(p);
	p = fs_rooted("/", "/etc/fstab");
	TEST_STREQ(p, "/etc/fstab");
	free(p);
	p = fs_rooted("/tmp/r/", "/etc/fstab");
	TEST_STREQ(p, "/tmp/r/etc/fstab");
	free(p);
	p = fs_rooted("/tmp/r", "etc");
	TEST_STREQ(p, "/tmp/r/etc");
	free(p);
}

static void test_write(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY };
	struct report r;
	struct stat st1, st2;
	char *t;

	report_init(&r);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/a/b", 0750, 0, 0), 1);
	st1 = stat_of("/etc/a/b");
	TEST_INTEQ(st1.st_mode & 07777, 0750);
	TEST_INTEQ(stat_of("/etc/a").st_mode & 07777, 0755);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/a/b", 0750, 0, 0), 0);

	TEST_INTEQ(fs_write(&c, &r, "/etc/a/b/f", "hello\n", 6, 0640, 0, 0), 1);
	t = slurp("/etc/a/b/f");
	TEST_STREQ(t, "hello\n");
	free(t);
	st1 = stat_of("/etc/a/b/f");
	TEST_INTEQ(st1.st_mode & 07777, 0640);
	TEST_CHECK(r.changed.n >= 1);
	TEST_STREQ(r.changed.v[r.changed.n - 1], "/etc/a/b/f");

	/* Same content: nothing written, inode and mtime kept. */
	sleep(1);
	TEST_INTEQ(fs_write(&c, &r, "/etc/a/b/f", "hello\n", 6, 0640, 0, 0), 0);
	st2 = stat_of("/etc/a/b/f");
	TEST_INTEQ(st2.st_ino, st1.st_ino);
	TEST_INTEQ(st2.st_mtime, st1.st_mtime);

	/* Mode only: fixed in place, same inode. */
	TEST_INTEQ(fs_write(&c, &r, "/etc/a/b/f", "hello\n", 6, 0600, 0, 0), 1);
	st2 = stat_of("/etc/a/b/f");
	TEST_INTEQ(st2.st_ino, st1.st_ino);
	TEST_INTEQ(st2.st_mode & 07777, 0600);

	/* New content: replaced by rename (new inode), no temp file left. */
	TEST_INTEQ(fs_write(&c, &r, "/etc/a/b/f", "bye\n", 4, 0600, 0, 0), 1);
	st2 = stat_of("/etc/a/b/f");
	TEST_CHECK(st2.st_ino != st1.st_ino);
	t = slurp("/etc/a/b/f");
	TEST_STREQ(t, "bye\n");
	free(t);
	{
		char *dir = fs_rooted(root, "/etc/a/b");
		DIR *d = opendir(dir);
		struct dirent *de;
		int n = 0;

		while ((de = readdir(d)))
			if (de->d_name[0] != '.')
				n++;
		closedir(d);
		free(dir);
		TEST_INTEQ(n, 1);
	}

	/* Not a regular file: refused with a message naming the path. */
	TEST_INTEQ(fs_write(&c, &r, "/etc/a/b", "x", 1, 0644, 0, 0), -EEXIST);
	TEST_CHECK(strstr(sb_str(&r.details), "/etc/a/b: exists and is not a regular file") != NULL);
	report_free(&r);
}

static void test_plan_and_check(void)
{
	struct ctx c = { .root = root, .mode = RUN_PLAN };
	struct report r;
	char *t;

	put("/etc/plan.conf", "one\ntwo\nthree\n");
	report_init(&r);
	TEST_INTEQ(fs_write(&c, &r, "/etc/plan.conf", "one\nTWO\nthree\n", 14, 0644, 0, 0), 1);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(strstr(sb_str(&r.details), "-two\n+TWO\n") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "--- /etc/plan.conf\n") != NULL);
	t = slurp("/etc/plan.conf");
	TEST_STREQ(t, "one\ntwo\nthree\n");    /* untouched */
	free(t);
	/* plan never creates directories */
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/newdir/sub", 0755, 0, 0), 1);
	TEST_CHECK(!fs_exists(&c, "/etc/newdir"));
	TEST_INTEQ(fs_remove(&c, &r, "/etc/plan.conf"), 1);
	TEST_CHECK(fs_exists(&c, "/etc/plan.conf"));
	report_free(&r);

	c.mode = RUN_CHECK;
	report_init(&r);
	TEST_INTEQ(fs_write(&c, &r, "/etc/missing.conf", "x\n", 2, 0644, 0, 0), 1);
	TEST_CHECK(strstr(sb_str(&r.details), "/etc/missing.conf: missing") != NULL);
	TEST_CHECK(!fs_exists(&c, "/etc/missing.conf"));
	report_free(&r);
}

static void test_managed_block(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY };
	struct report r;
	char *t;

	t = managed_block_apply(NULL, "glo", "a\nb\n");
	TEST_STREQ(t, "# BEGIN hpcinit glo\na\nb\n# END hpcinit glo\n");
	free(t);
	/* Appending to a file without a final newline keeps its bytes and adds one. */
	t = managed_block_apply("x y", "glo", "a");
	TEST_STREQ(t, "x y\n# BEGIN hpcinit glo\na\n# END hpcinit glo\n");
	free(t);
	/* Replace in the middle; outside bytes identical. */
	t = managed_block_apply("head\n# BEGIN hpcinit glo\nold\n# END hpcinit glo\ntail\n", "glo", "new\n");
	TEST_STREQ(t, "head\n# BEGIN hpcinit glo\nnew\n# END hpcinit glo\ntail\n");
	free(t);
	/* Another cluster's block is not ours. */
	t = managed_block_apply("# BEGIN hpcinit other\nz\n# END hpcinit other\n", "glo", "new\n");
	TEST_STREQ(t, "# BEGIN hpcinit other\nz\n# END hpcinit other\n# BEGIN hpcinit glo\nnew\n# END hpcinit glo\n");
	free(t);
	/* Empty body removes the block. */
	t = managed_block_apply("head\n# BEGIN hpcinit glo\nold\n# END hpcinit glo\ntail\n", "glo", "");
	TEST_STREQ(t, "head\ntail\n");
	free(t);
	/* A marker must be a whole line. */
	t = managed_block_apply("# BEGIN hpcinit glob\nq\n# END hpcinit glob\n", "glo", "n\n");
	TEST_STREQ(t, "# BEGIN hpcinit glob\nq\n# END hpcinit glob\n# BEGIN hpcinit glo\nn\n# END hpcinit glo\n");
	free(t);
	t = managed_block_get("a\n# BEGIN hpcinit glo\nk1\nk2\n# END hpcinit glo\n", "glo");
	TEST_STREQ(t, "k1\nk2\n");
	free(t);
	TEST_CHECK(managed_block_get("a\n", "glo") == NULL);

	put("/etc/fstab", "# static\nUUID=1 / ext4 defaults 0 1\n");
	report_init(&r);
	TEST_INTEQ(fs_managed_block(&c, &r, "/etc/fstab", "glo", "srv:/x /x nfs _netdev 0 0\n", 0644, 0, 0), 1);
	t = slurp("/etc/fstab");
	TEST_STREQ(t, "# static\nUUID=1 / ext4 defaults 0 1\n# BEGIN hpcinit glo\nsrv:/x /x nfs _netdev 0 0\n# END hpcinit glo\n");
	free(t);
	TEST_INTEQ(fs_managed_block(&c, &r, "/etc/fstab", "glo", "srv:/x /x nfs _netdev 0 0\n", 0644, 0, 0), 0);
	TEST_INTEQ(fs_managed_block(&c, &r, "/etc/fstab", "glo", NULL, 0644, 0, 0), 1);
	t = slurp("/etc/fstab");
	TEST_STREQ(t, "# static\nUUID=1 / ext4 defaults 0 1\n");
	free(t);
	/* Removing a block from a missing file changes nothing. */
	TEST_INTEQ(fs_managed_block(&c, &r, "/etc/none", "glo", NULL, 0644, 0, 0), 0);
	TEST_CHECK(!fs_exists(&c, "/etc/none"));
	report_free(&r);
}

static void test_diff(void)
{
	struct strbuf sb = STRBUF_INIT;

	text_diff(&sb, "/f", "", "a\nb\n");
	TEST_STREQ(sb_str(&sb), "--- /f\n+++ /f (planned)\n@@ -1,0 +1,2 @@\n+a\n+b\n");
	sb_reset(&sb);
	text_diff(&sb, "/f", "a\nb\nc\n", "a\nc\n");
	TEST_STREQ(sb_str(&sb), "--- /f\n+++ /f (planned)\n@@ -2,1 +2,0 @@\n-b\n");
	sb_free(&sb);
}

/* Issue 13: directories hpcinit did not create are never changed, unsafe ones refused. */
static void test_mkdir_safety(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY };
	struct report r;
	char *p, *q;

	report_init(&r);
	/* An existing directory keeps its mode: no chmod to what the caller asked. */
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/keep", 0750, 0, 0), 1);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/keep", 0755, 0, 0), 0);
	TEST_INTEQ(stat_of("/etc/keep").st_mode & 07777, 0750);

	/* Not root-owned: refused, named, left as it is. */
	p = fs_rooted(root, "/etc/theirs");
	TEST_INTEQ(mkdir(p, 0755), 0);
	TEST_INTEQ(chown(p, 1234, 1234), 0);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/theirs", 0755, 0, 0), -EPERM);
	TEST_CHECK(strstr(sb_str(&r.details), "/etc/theirs: owned by uid 1234 with mode 0755") != NULL);
	TEST_INTEQ(stat_of("/etc/theirs").st_uid, 1234);
	/* ... also as a parent of what would be created */
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/theirs/sub", 0755, 0, 0), -EPERM);
	TEST_CHECK(!fs_exists(&c, "/etc/theirs/sub"));
	/* ... but it is the right owner when the directory is for that user (~/.ssh) */
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/theirs/.ssh", 0700, 1234, 1234), 1);
	TEST_INTEQ(stat_of("/etc/theirs/.ssh").st_uid, 1234);
	TEST_INTEQ(stat_of("/etc/theirs/.ssh").st_mode & 07777, 0700);
	free(p);

	/* Writable by others: refused, mode not "fixed". */
	p = fs_rooted(root, "/etc/open");
	TEST_INTEQ(mkdir(p, 0755), 0);
	TEST_INTEQ(chmod(p, 0777), 0);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/open", 0755, 0, 0), -EPERM);
	TEST_INTEQ(stat_of("/etc/open").st_mode & 07777, 0777);
	/* A sticky world-writable directory is fine on the way down (/tmp), never as the place. */
	TEST_INTEQ(chmod(p, 01777), 0);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/open", 0755, 0, 0), -EPERM);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/open/mine", 0755, 0, 0), 1);
	TEST_INTEQ(stat_of("/etc/open/mine").st_mode & 07777, 0755);
	free(p);

	/* A symlink is never followed to create or change: leaf or parent. */
	p = fs_rooted(root, "/etc/target");
	q = fs_rooted(root, "/etc/link");
	TEST_INTEQ(mkdir(p, 0700), 0);
	TEST_INTEQ(symlink(p, q), 0);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/link", 0755, 0, 0), -ELOOP);
	TEST_CHECK(strstr(sb_str(&r.details), "/etc/link: is a symbolic link") != NULL);
	TEST_INTEQ(stat_of("/etc/target").st_mode & 07777, 0700);
	/* a root-made link in a root-only directory is followed on the way down (/var/run) */
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/link/sub", 0755, 0, 0), 1);
	TEST_INTEQ(stat_of("/etc/target/sub").st_mode & 07777, 0755);
	/* ... but not one made by someone else */
	TEST_INTEQ(lchown(q, 1234, 1234), 0);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/link/sub2", 0755, 0, 0), -ELOOP);
	TEST_CHECK(!fs_exists(&c, "/etc/target/sub2"));
	free(p);
	free(q);
	report_free(&r);
}

/* Issue 13: a BEGIN without END never makes hpcinit delete the lines after it. */
static void test_truncated_block(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY };
	struct report r;
	const char *text = "a\nb\n# BEGIN hpcinit glo\nold\nsite line 1\nsite line 2\n";
	unsigned line = 0;
	char *t;

	TEST_INTEQ(managed_block_check(text, "glo", &line), -EBADMSG);
	TEST_INTEQ(line, 3);
	TEST_INTEQ(managed_block_check("# BEGIN hpcinit glo\nx\n# END hpcinit glo\n", "glo", &line), 0);
	TEST_INTEQ(managed_block_check("# BEGIN hpcinit glo", "glo", &line), -EBADMSG);
	t = managed_block_apply(text, "glo", "new\n");
	TEST_STREQ(t, text);
	free(t);

	put("/etc/trunc", text);
	report_init(&r);
	TEST_INTEQ(fs_managed_block(&c, &r, "/etc/trunc", "glo", "new\n", 0644, 0, 0), -EBADMSG);
	TEST_CHECK(strstr(sb_str(&r.details), "/etc/trunc:3: \"# BEGIN hpcinit glo\" has no \"# END hpcinit glo\"") != NULL);
	t = slurp("/etc/trunc");
	TEST_STREQ(t, text);
	free(t);
	TEST_INTEQ(fs_managed_block(&c, &r, "/etc/trunc", "glo", NULL, 0644, 0, 0), -EBADMSG);
	t = slurp("/etc/trunc");
	TEST_STREQ(t, text);
	free(t);
	report_free(&r);
}

/* Issue 13: temp files carry the node's name; a write removes only its own node's leftovers. */
static void test_temp_names(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY, .hostname = "node1" };
	struct report r;

	report_init(&r);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/home/shared", 0755, 0, 0) >= 0, 1);
	put("/home/shared/authorized_keys.hpcinit-tmp.node2.abcdef", "node2 is writing this");
	put("/home/shared/authorized_keys.hpcinit-tmp.node1.ghijkl", "node1 crashed here");
	TEST_INTEQ(fs_write(&c, &r, "/home/shared/authorized_keys", "k\n", 2, 0600, 0, 0), 1);
	TEST_CHECK(fs_exists(&c, "/home/shared/authorized_keys.hpcinit-tmp.node2.abcdef"));
	TEST_CHECK(!fs_exists(&c, "/home/shared/authorized_keys.hpcinit-tmp.node1.ghijkl"));
	/*
	 * A converged file: a run killed while writing other content left its
	 * temp file after the file was last written (core-kill.sh: the spec
	 * went back before the next run): the converged write still tidies.
	 */
	usleep(20000);
	fs_run_begin();         /* the next run: it looks again (test_run_memo) */
	put("/home/shared/authorized_keys.hpcinit-tmp.node1.mnopqr", "killed with other content");
	TEST_INTEQ(fs_write(&c, &r, "/home/shared/authorized_keys", "k\n", 2, 0600, 0, 0), 0);
	TEST_CHECK(!fs_exists(&c, "/home/shared/authorized_keys.hpcinit-tmp.node1.mnopqr"));
	report_free(&r);
}

/* fs_read_host: every byte at every size around its first buffer, a limit, and /proc's size 0. */
static void test_read_sizes(void)
{
	static const size_t sizes[] = { 0, 1, 100, 8191, 8192, 8193, 16384, 100001, 1200000 };
	char *path = fs_rooted(root, "/etc/sized"), *got;
	size_t len;

	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		char *want = xmalloc(sizes[i] + 1);
		FILE *f = fopen(path, "w");

		for (size_t k = 0; k < sizes[i]; k++)
			want[k] = (char)('a' + (k * 7 + i) % 26);
		want[sizes[i]] = '\0';
		TEST_CHECK(f && fwrite(want, 1, sizes[i], f) == sizes[i]);
		if (f)
			fclose(f);
		got = NULL;
		len = 12345;
		TEST_INTEQ(fs_read_host(path, FS_MAX_READ, &got, &len), 0);
		TEST_INTEQ(len, sizes[i]);
		TEST_CHECK(got && memcmp(got, want, sizes[i] + 1) == 0);
		free(got);
		/* one byte over the limit: refused; at the limit: read */
		if (sizes[i]) {
			got = NULL;
			TEST_INTEQ(fs_read_host(path, sizes[i] - 1, &got, NULL), -EFBIG);
			TEST_CHECK(got == NULL);
			TEST_INTEQ(fs_read_host(path, sizes[i], &got, &len), 0);
			TEST_INTEQ(len, sizes[i]);
			free(got);
		}
		free(want);
	}
	free(path);
	/* st_size 0, content all the same */
	TEST_INTEQ(fs_read_host("/proc/self/status", FS_MAX_READ, &got, &len), 0);
	TEST_CHECK(len > 100 && strlen(got) == len && strncmp(got, "Name:", 5) == 0);
	free(got);
	TEST_INTEQ(fs_read_host("/proc/self/status", 10, &got, &len), -EFBIG);
}

/* Syncs by flag: file and directory, the file only, none; FS_REPLACE writes the same content anew. */
static void test_write_sync(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY };
	struct report r;
	struct stat st1, st2;
	char *t;

	report_init(&r);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/etc/s", 0755, 0, 0), 1);
	fsyncs = 0;
	TEST_INTEQ(fs_write(&c, &r, "/etc/s/f", "1\n", 2, 0644, 0, 0), 1);
	TEST_INTEQ(fsyncs, 2);
	fsyncs = 0;
	TEST_INTEQ(fs_write_opt(&c, &r, "/etc/s/f", "2\n", 2, 0644, 0, 0, FS_SYNC_FILE), 1);
	TEST_INTEQ(fsyncs, 1);
	fsyncs = 0;
	TEST_INTEQ(fs_write_opt(&c, &r, "/etc/s/f", "3\n", 2, 0644, 0, 0, FS_NO_SYNC), 1);
	TEST_INTEQ(fsyncs, 0);
	t = slurp("/etc/s/f");
	TEST_STREQ(t, "3\n");
	free(t);
	/* unchanged: nothing written, nothing synced */
	TEST_INTEQ(fs_write(&c, &r, "/etc/s/f", "3\n", 2, 0644, 0, 0), 0);
	TEST_INTEQ(fsyncs, 0);
	/* under /run (a tmpfs no later boot reads): a plain fs_write syncs nothing, unless asked */
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/run/s", 0755, 0, 0), 1);
	fsyncs = 0;
	TEST_INTEQ(fs_write(&c, &r, "/run/s/f", "1\n", 2, 0644, 0, 0), 1);
	TEST_INTEQ(fsyncs, 0);
	TEST_INTEQ(fs_write_opt(&c, &r, "/run/s/f", "2\n", 2, 0644, 0, 0, FS_SYNC_FILE), 1);
	TEST_INTEQ(fsyncs, 1);

	/* FS_REPLACE does not read the old file: the same content is written again (a new inode) */
	st1 = stat_of("/etc/s/f");
	TEST_INTEQ(fs_write_opt(&c, &r, "/etc/s/f", "3\n", 2, 0644, 0, 0, FS_REPLACE | FS_NO_SYNC), 1);
	st2 = stat_of("/etc/s/f");
	TEST_CHECK(st2.st_ino != st1.st_ino);
	TEST_INTEQ(st2.st_mode & 07777, 0644);
	t = slurp("/etc/s/f");
	TEST_STREQ(t, "3\n");
	free(t);
	report_free(&r);
}

/*
 * fd_read_full: n bytes however the writer cuts them, or what came before the
 * end of file; an error as -errno.  fd_close: closes once, leaves -1.
 */
static void test_fd_read_full(void)
{
	char buf[16] = "";
	int p[2], fd;
	pid_t pid;

	TEST_CHECK(pipe(p) == 0);
	pid = fork();
	if (pid == 0) {
		/* "hello" then "world", a pause between: the reader must read twice */
		close(p[0]);
		(void)fd_write_all(p[1], "hello", 5);
		usleep(100 * 1000);
		(void)fd_write_all(p[1], "world!", 6);
		_exit(0);
	}
	fd_close(&p[1]);
	TEST_INTEQ(p[1], -1);
	TEST_INTEQ(fd_read_full(p[0], buf, 10), 10);
	TEST_CHECK(memcmp(buf, "helloworld", 10) == 0);
	/* one byte left, then the end of file: the count of what came */
	TEST_INTEQ(fd_read_full(p[0], buf, sizeof(buf)), 1);
	TEST_CHECK(buf[0] == '!');
	TEST_INTEQ(fd_read_full(p[0], buf, sizeof(buf)), 0);
	waitpid(pid, NULL, 0);
	fd = p[0];
	fd_close(&p[0]);
	TEST_INTEQ(p[0], -1);
	TEST_CHECK(fcntl(fd, F_GETFD) < 0 && errno == EBADF);      /* closed */
	fd_close(&p[0]);        /* closed already: nothing */
	TEST_INTEQ(p[0], -1);
	TEST_INTEQ(fd_read_full(fd, buf, 1), -EBADF);
}

/*
 * Within a run a directory is walked to and looked through once (fs_seen):
 * a temp file made there later in the run is a live write's, left alone;
 * the next run (fs_run_begin) and a forked child look again.  A directory
 * that held a temp file of this node is looked through at every write.
 */
static void test_run_memo(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY, .hostname = "node1" };
	struct report r;
	char *p = fs_rooted(root, "/srv/memo");
	pid_t pid;
	int st;

	report_init(&r);
	fs_run_begin();
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/srv/memo", 0755, 0, 0), 1);
	TEST_INTEQ(fs_write(&c, &r, "/srv/memo/a", "a\n", 2, 0644, 0, 0), 1);
	put("/srv/memo/b.hpcinit-tmp.node1.abcdef", "made after the look, in this run");
	TEST_INTEQ(fs_write(&c, &r, "/srv/memo/b", "b\n", 2, 0644, 0, 0), 1);
	TEST_CHECK(fs_exists(&c, "/srv/memo/b.hpcinit-tmp.node1.abcdef"));
	fs_run_begin();
	TEST_INTEQ(fs_write(&c, &r, "/srv/memo/b", "B\n", 2, 0644, 0, 0), 1);
	TEST_CHECK(!fs_exists(&c, "/srv/memo/b.hpcinit-tmp.node1.abcdef"));

	/* a killed run's temp file of another name: every write looks */
	fs_run_begin();
	put("/srv/memo/z.hpcinit-tmp.node1.zzzzzz", "a killed run's");
	TEST_INTEQ(fs_write(&c, &r, "/srv/memo/a", "A\n", 2, 0644, 0, 0), 1);
	put("/srv/memo/b.hpcinit-tmp.node1.ghijkl", "a killed run's too");
	TEST_INTEQ(fs_write(&c, &r, "/srv/memo/b", "b\n", 2, 0644, 0, 0), 1);
	TEST_CHECK(!fs_exists(&c, "/srv/memo/b.hpcinit-tmp.node1.ghijkl"));
	TEST_CHECK(fs_exists(&c, "/srv/memo/z.hpcinit-tmp.node1.zzzzzz"));

	/* the walk: found safe once in this run; a forked child and the next run walk again */
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/srv/memo", 0755, 0, 0), 0);
	TEST_INTEQ(chmod(p, 0777), 0);
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/srv/memo", 0755, 0, 0), 0);
	pid = fork();
	if (pid == 0) {
		int refused = fs_mkdir_p(&c, &r, "/srv/memo", 0755, 0, 0) == -EPERM;

		free(p);        /* the child frees what it holds: valgrind checks its leaks too */
		report_free(&r);
		fs_run_begin();
		_exit(refused ? 0 : 1);
	}
	TEST_INTEQ(waitpid(pid, &st, 0), pid);
	TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	fs_run_begin();
	TEST_INTEQ(fs_mkdir_p(&c, &r, "/srv/memo", 0755, 0, 0), -EPERM);
	TEST_INTEQ(chmod(p, 0755), 0);
	fs_run_begin();
	free(p);
	report_free(&r);
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	{
		char *etc = fs_rooted(root, "/etc");

		mkdir(etc, 0755);
		free(etc);
	}
	test_rooted();
	test_read_sizes();
	test_write();
	test_write_sync();
	test_plan_and_check();
	test_managed_block();
	test_diff();
	test_mkdir_safety();
	test_truncated_block();
	test_temp_names();
	test_run_memo();
	test_fd_read_full();
	test_rm_rf(root);
	TEST_EXIT();
}
