/* SPDX-License-Identifier: MIT */
/*
 * What a blocked child waits for, read from /proc: its system call, the
 * file that call names or the file behind its descriptor, and the kernel
 * function it sleeps in.  For the runner's message at a step's deadline and
 * the record of a child stuck in the kernel (proc.c).
 */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <unistd.h>

#include "blocked.h"
#include "number.h"

#define PATH_MAX_TEXT 1024       /* the longest path a message names */

struct call {
	long nr;
	const char *name;
	bool fd_arg;
	int path_arg;
};

/*
 * fd_arg: the first argument is a descriptor; path_arg: argument 1 or 2
 * is a path, relative to that descriptor (the *at calls) or to the
 * working directory.
 */
static const struct call calls[] = {
#ifdef SYS_getdents64
	{ SYS_getdents64, "getdents64 (readdir)", true, 0 },
#endif
#ifdef SYS_openat
	{ SYS_openat, "openat", true, 2 },
#endif
#ifdef SYS_open
	{ SYS_open, "open", false, 1 },
#endif
#ifdef SYS_newfstatat
	{ SYS_newfstatat, "fstatat (stat)", true, 2 },
#endif
#ifdef SYS_statx
	{ SYS_statx, "statx (stat)", true, 2 },
#endif
#ifdef SYS_stat
	{ SYS_stat, "stat", false, 1 },
#endif
#ifdef SYS_lstat
	{ SYS_lstat, "lstat", false, 1 },
#endif
#ifdef SYS_statfs
	{ SYS_statfs, "statfs", false, 1 },
#endif
#ifdef SYS_fstatfs
	{ SYS_fstatfs, "fstatfs", true, 0 },
#endif
#ifdef SYS_getxattr
	{ SYS_getxattr, "getxattr", false, 1 },
#endif
#ifdef SYS_lgetxattr
	{ SYS_lgetxattr, "lgetxattr", false, 1 },
#endif
#ifdef SYS_faccessat
	{ SYS_faccessat, "faccessat (access)", true, 2 },
#endif
#ifdef SYS_faccessat2
	{ SYS_faccessat2, "faccessat2 (access)", true, 2 },
#endif
#ifdef SYS_access
	{ SYS_access, "access", false, 1 },
#endif
#ifdef SYS_readlinkat
	{ SYS_readlinkat, "readlinkat", true, 2 },
#endif
#ifdef SYS_read
	{ SYS_read, "read", true, 0 },
#endif
#ifdef SYS_pread64
	{ SYS_pread64, "pread", true, 0 },
#endif
#ifdef SYS_write
	{ SYS_write, "write", true, 0 },
#endif
#ifdef SYS_fsync
	{ SYS_fsync, "fsync", true, 0 },
#endif
#ifdef SYS_fdatasync
	{ SYS_fdatasync, "fdatasync", true, 0 },
#endif
#ifdef SYS_fchown
	{ SYS_fchown, "fchown", true, 0 },
#endif
#ifdef SYS_fchmod
	{ SYS_fchmod, "fchmod", true, 0 },
#endif
#ifdef SYS_fchownat
	{ SYS_fchownat, "fchownat (chown)", true, 2 },
#endif
#ifdef SYS_renameat2
	{ SYS_renameat2, "rename", true, 2 },
#endif
#ifdef SYS_renameat
	{ SYS_renameat, "rename", true, 2 },
#endif
#ifdef SYS_rename
	{ SYS_rename, "rename", false, 1 },
#endif
#ifdef SYS_mkdirat
	{ SYS_mkdirat, "mkdir", true, 2 },
#endif
#ifdef SYS_mkdir
	{ SYS_mkdir, "mkdir", false, 1 },
#endif
#ifdef SYS_unlinkat
	{ SYS_unlinkat, "unlink", true, 2 },
#endif
#ifdef SYS_unlink
	{ SYS_unlink, "unlink", false, 1 },
#endif
#ifdef SYS_connect
	{ SYS_connect, "connect", true, 0 },
#endif
#ifdef SYS_poll
	{ SYS_poll, "poll", false, 0 },
#endif
#ifdef SYS_ppoll
	{ SYS_ppoll, "ppoll", false, 0 },
#endif
};

/* The kernel function pid sleeps in (/proc/PID/wchan), "" when unknown. */
void proc_wchan(pid_t pid, char *buf, size_t size)
{
	char path[64];
	FILE *f;

	buf[0] = '\0';
	snprintf(path, sizeof(path), "/proc/%d/wchan", (int)pid);
	if ((f = fopen(path, "re"))) {
		if (!fgets(buf, (int)size, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
	if (strcmp(buf, "0") == 0)
		buf[0] = '\0';
}

/*
 * A string in pid's memory at addr (a path a system call was given), read
 * through /proc/PID/mem (the caller is the child's parent, or root); false
 * when it cannot be read.
 */
static bool read_child_string(pid_t pid, unsigned long long addr, char *buf, size_t size)
{
	char path[64];
	ssize_t n;
	int fd;

	if (!addr || size < 2)
		return false;
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return false;
	n = pread(fd, buf, size - 1, (off_t)addr);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	return memchr(buf, '\0', (size_t)n) != NULL && buf[0] != '\0';
}

/* pid's system call and its first two arguments from /proc/PID/syscall; nr -1: running, -2: unknown. */
static long read_syscall(pid_t pid, unsigned long long a[2])
{
	char path[64], buf[256] = "";
	long nr = -2;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	if ((f = fopen(path, "re"))) {
		const char *p = buf;
		long long n;

		/* "NR 0xARG1 0xARG2 ...", "-1 0xSP 0xPC" (user mode), "running" */
		if (fgets(buf, sizeof(buf), f) && num_ll_field(&p, -1, LONG_MAX, &n)) {
			nr = (long)n;
			if (num_ull_field(&p, 16, ULLONG_MAX, &a[0]))
				(void)num_ull_field(&p, 16, ULLONG_MAX, &a[1]);
		}
		fclose(f);
	}
	return nr;
}

static const struct call *call_of(long nr)
{
	const struct call *c = NULL;

	for (size_t i = 0; i < sizeof(calls) / sizeof(calls[0]); i++)
		if (calls[i].nr == nr)
			c = &calls[i];
	return c;
}

/* " of FILE" (the path the call names) or " on FILE" (its descriptor's, or the cwd's). */
static void describe_file(pid_t pid, const struct call *call, const unsigned long long a[2],
			  struct strbuf *sb)
{
	char link[64], target[512] = "", arg[PATH_MAX_TEXT];
	ssize_t n;

	/*
	 * The descriptor's file, or the directory a relative path starts from.
	 * The descriptor is an int: /proc shows AT_FDCWD as 0xffffff9c.
	 */
	if (!call->fd_arg || (int)(unsigned)a[0] == AT_FDCWD)
		snprintf(link, sizeof(link), "/proc/%d/cwd", (int)pid);
	else
		snprintf(link, sizeof(link), "/proc/%d/fd/%llu", (int)pid, a[0]);
	n = readlink(link, target, sizeof(target) - 1);
	target[n > 0 ? n : 0] = '\0';
	if (call->path_arg && read_child_string(pid, a[call->path_arg - 1], arg, sizeof(arg))) {
		/* the file the call names: "openat of /home/alice/.ssh/authorized_keys" */
		if (arg[0] == '/' || !target[0])
			sb_printf(sb, " of %s", arg);
		else
			sb_printf(sb, " of %s%s%s", target, strcmp(target, "/") == 0 ? "" : "/", arg);
	} else if (target[0]) {
		sb_printf(sb, " on %s", target);
	}
}

void proc_describe_blocked(pid_t pid, struct strbuf *sb)
{
	unsigned long long a[2] = { 0, 0 };
	char wchan[64] = "";
	long nr = read_syscall(pid, a);
	const struct call *call = call_of(nr);

	proc_wchan(pid, wchan, sizeof(wchan));
	if (nr < 0) {
		sb_append(sb, "running, not in a system call");
	} else {
		if (call)
			sb_printf(sb, "%s", call->name);
		else
			sb_printf(sb, "system call %ld", nr);
		if (call && (call->fd_arg || call->path_arg))
			describe_file(pid, call, a, sb);
	}
	if (wchan[0])
		sb_printf(sb, " (kernel: %s)", wchan);
}
