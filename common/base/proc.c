/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "blocked.h"
#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "proc.h"
#include "number.h"

static const char safe_path[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

char *proc_which(const char *name)
{
	const char *p = safe_path;

	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? xstrdup(name) : NULL;
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = xasprintf("%.*s/%s", (int)n, p, name);
		struct stat st;

		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			return cand;
		free(cand);
		p += n + (colon ? 1 : 0);
	}
	return NULL;
}

/*
 * Who besides root and this process's user could change what st is?  NULL
 * when no one, else a phrase (in buf) for the warning.  A directory with the
 * sticky bit that root owns (/tmp) may be writable by others: they cannot
 * rename or replace what they do not own in it.
 */
static const char *not_ours(const struct stat *st, char *buf, size_t len)
{
	uid_t me = geteuid();

	if (st->st_uid != 0 && st->st_uid != me) {
		snprintf(buf, len, "owned by uid %u, neither root nor this process's user (uid %u)",
			 (unsigned)st->st_uid, (unsigned)me);
		return buf;
	}
	if (S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX) && st->st_uid == 0)
		return NULL;
	if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		snprintf(buf, len, "writable by group or others (mode %04o)", (unsigned)(st->st_mode & 07777));
		return buf;
	}
	return NULL;
}

/*
 * Is dir (the directory of the running binary) hpcinit's build tree, trusted
 * as much as this process itself?  configure writes config.status there, an
 * installed system never has one beside the binary.  The binary, the marker,
 * the directory and every directory above it up to / must be owned by root or
 * by this process's user and not be writable by group or others: whoever
 * else could add, rename or replace a file there could slip in a helper that
 * this process (root, at boot) runs.  A root process started from a build
 * in a user's home is that user's to steer: its helpers are not used.  why
 * (in buf): what failed, when the marker is there but the checks are not met.
 */
static bool build_tree_trusted(const char *dir, const struct stat *exe, char *buf, size_t len,
			       const char **why)
{
	char *marker = xasprintf("%s/config.status", dir), *up = xstrdup(dir), what[96];
	struct stat st, ms;
	const char *w = NULL;
	bool ok = false;

	*why = NULL;
	if (lstat(marker, &ms) != 0)
		goto out;               /* not a build tree: the usual case */
	if (!S_ISREG(ms.st_mode)) {
		*why = "config.status is not a regular file";
		goto out;
	}
	if ((w = not_ours(&ms, what, sizeof(what))))
		snprintf(buf, len, "config.status is %s", w);
	else if ((w = not_ours(exe, what, sizeof(what))))
		snprintf(buf, len, "the binary is %s", w);
	/* dir, then each directory above it, then / */
	while (!w) {
		char *slash = strrchr(up, '/');
		const char *d = up[0] ? up : "/";

		if (lstat(d, &st) != 0 || !S_ISDIR(st.st_mode)) {
			snprintf(buf, len, "%s is not a directory", d);
			w = buf;
		} else if ((w = not_ours(&st, what, sizeof(what)))) {
			snprintf(buf, len, "directory %s is %s", d, w);
		}
		if (!up[0] || !slash)
			break;
		*slash = '\0';
	}
	if (w)
		*why = buf;
	ok = !w;
out:
	free(up);
	free(marker);
	return ok;
}

const char *proc_build_dir(void)
{
	static bool done;
	static char *dir;
	char exe[PATH_MAX], *slash;
	const char *why;
	char buf[PATH_MAX + 128];
	struct stat st;
	ssize_t n;

	if (done)
		return dir;
	done = true;
	n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (n <= 0 || stat("/proc/self/exe", &st) != 0)
		return NULL;
	exe[n] = '\0';
	slash = strrchr(exe, '/');
	if (!slash || slash == exe)
		return NULL;
	*slash = '\0';
	if (build_tree_trusted(exe, &st, buf, sizeof(buf), &why))
		dir = xstrdup(exe);
	else if (why)
		log_warn("%s looks like a build tree (config.status) but its helpers are not used: %s; "
			 "helpers come from %s/hpcinit (HPCINIT_LIBEXEC_DIR overrides)",
			 exe, why, LIBEXECDIR);
	return dir;
}

char *proc_helper_path(const char *name)
{
	const char *dir = getenv("HPCINIT_LIBEXEC_DIR");

	if (dir && dir[0] == '/')
		return xasprintf("%s/%s", dir, name);
	if ((dir = proc_build_dir()))
		return xasprintf("%s/%s", dir, name);
	return xasprintf("%s/%s", LIBEXECDIR "/hpcinit", name);
}

char *argv_render(const char *const argv[])
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; argv[i]; i++) {
		const char *a = argv[i];
		bool plain = *a != '\0';

		for (const char *q = a; *q; q++)
			if (!(strchr("-_./=:,+@%", *q) || (*q >= '0' && *q <= '9') ||
			      (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
				plain = false;
		if (i)
			sb_append(&sb, " ");
		if (plain) {
			sb_append(&sb, a);
		} else {
			sb_append(&sb, "'");
			for (const char *q = a; *q; q++) {
				if (*q == '\'')
					sb_append(&sb, "'\\''");
				else
					sb_appendn(&sb, q, 1);
			}
			sb_append(&sb, "'");
		}
	}
	return sb_steal(&sb);
}

void proc_result_free(struct proc_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
	r->out_len = r->err_len = 0;
}

/* ---- children stuck in the kernel (what they wait for: blocked.c) ---------- */

static char *stuck_dir;

void proc_stuck_dir(const char *dir)
{
	free(stuck_dir);
	stuck_dir = dir ? xstrdup(dir) : NULL;
}

/* The record's file: the key with anything but [A-Za-z0-9._-] as %XX. */
static char *stuck_path(const char *key)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "%s/", stuck_dir);
	for (const unsigned char *q = (const unsigned char *)key; *q; q++) {
		if ((*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ||
		    *q == '-' || *q == '_' || (*q == '.' && q != (const unsigned char *)key))
			sb_appendn(&sb, (const char *)q, 1);
		else
			sb_printf(&sb, "%%%02X", *q);
	}
	return sb_steal(&sb);
}

/* A killed child not asleep in the kernel is waited for this long at most. */
#define KILL_REAP_MAX_MS 10000

/* State (R, S, D, Z, ...) and start time (clock ticks since boot) of pid; false when it is gone. */
static bool proc_stat_of(pid_t pid, char *state, unsigned long long *starttime)
{
	char path[64], buf[1024], *p;
	const char *q;
	FILE *f;
	size_t n;
	int field = 3;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	if (!(f = fopen(path, "re")))
		return false;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* "pid (comm) state ppid ...": comm may hold anything, so count from its last ')'. */
	if (!(p = strrchr(buf, ')')) || p[1] != ' ')
		return false;
	*state = p[2];
	for (p += 2; *p && field < 22; p++)
		if (*p == ' ')
			field++;
	q = p;
	return field == 22 && num_ull_field(&q, 10, ULLONG_MAX, starttime);
}

int proc_stuck_find(const char *key, struct proc_stuck *st)
{
	char *path, buf[1024];
	unsigned long long start = 0, now_start = 0;
	long long pid = 0, since = 0;
	char state = '?';
	FILE *f;
	int ret = 0;

	memset(st, 0, sizeof(*st));
	if (!stuck_dir || !key)
		return 0;
	path = stuck_path(key);
	if (!(f = fopen(path, "re"))) {
		free(path);
		return 0;
	}
	while (fgets(buf, sizeof(buf), f)) {
		buf[strcspn(buf, "\n")] = '\0';
		/* a number that does not read stays 0: the record is stale */
		if (strncmp(buf, "pid ", 4) == 0)
			(void)num_ll(buf + 4, 1, INT32_MAX - 1, &pid);
		else if (strncmp(buf, "starttime ", 10) == 0)
			(void)num_ull(buf + 10, 10, ULLONG_MAX, &start);
		else if (strncmp(buf, "since ", 6) == 0)
			(void)num_ll(buf + 6, LLONG_MIN, LLONG_MAX, &since);
		else if (strncmp(buf, "what ", 5) == 0)
			snprintf(st->what, sizeof(st->what), "%.*s", (int)sizeof(st->what) - 1, buf + 5);
	}
	fclose(f);
	/* The same process (pid and start time), still asleep in the kernel: still stuck. */
	if (pid > 0 && pid < INT32_MAX && proc_stat_of((pid_t)pid, &state, &now_start) &&
	    now_start == start && state == 'D') {
		st->pid = (pid_t)pid;
		st->since = since;
		proc_wchan(st->pid, st->wchan, sizeof(st->wchan));
		ret = 1;
	} else {
		/* It ended (or the pid is someone else's now): the record is stale. */
		unlink(path);
		memset(st, 0, sizeof(*st));
	}
	free(path);
	return ret;
}

void proc_stuck_text(const struct proc_stuck *st, struct strbuf *sb)
{
	char when[64] = "?";
	time_t t = (time_t)st->since;
	struct tm tm;

	if (st->since > 0 && localtime_r(&t, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
	sb_printf(sb, "still blocked since %s (pid %d, waiting in %s)", when, (int)st->pid,
		  st->wchan[0] ? st->wchan : "the kernel");
	if (st->what[0])
		sb_printf(sb, ": %s", st->what);
}

/* An abandoned child with a key: keep its record, so the next run does not start another. */
static void stuck_note(const struct proc_child *ch)
{
	struct strbuf sb = STRBUF_INIT, what = STRBUF_INIT;
	unsigned long long start;
	char state, *path, *tmp;
	int fd;

	if (!stuck_dir || !ch->stuck_key || !proc_stat_of(ch->pid, &state, &start))
		return;
	if (mkdir(stuck_dir, 0755) < 0 && errno == ENOENT) {
		/* its parent (/run/hpcinit) too: a check run may come first */
		char *parent = xstrdup(stuck_dir), *sl = strrchr(parent, '/');

		if (sl && sl != parent) {
			*sl = '\0';
			(void)!mkdir(parent, 0755);
		}
		free(parent);
		(void)!mkdir(stuck_dir, 0755);
	}
	if (ch->stuck_what && *ch->stuck_what)
		sb_append(&what, ch->stuck_what);
	else
		proc_describe_blocked(ch->pid, &what);
	for (char *q = what.buf; q && *q; q++)
		if (*q == '\n')
			*q = ' ';
	sb_printf(&sb, "pid %d\nstarttime %llu\nsince %lld\nwhat %s\n", (int)ch->pid, start,
		  (long long)time(NULL), sb_str(&what));
	path = stuck_path(ch->stuck_key);
	tmp = xasprintf("%s.tmp", path);
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd >= 0) {
		bool ok = write(fd, sb.buf, sb.len) == (ssize_t)sb.len;

		close(fd);
		if (!ok || rename(tmp, path) < 0)
			unlink(tmp);
	}
	free(tmp);
	free(path);
	sb_free(&what);
	sb_free(&sb);
}

static int stuck_check(struct proc_child *ch)
{
	if (ch->stuck_key && proc_stuck_find(ch->stuck_key, &ch->blocked) == 1)
		return -EBUSY;
	return 0;
}

/* ---- the child engine ------------------------------------------------------ */

/* Close every descriptor from lo up, except keep (-1: none). */
static void close_from(int lo, int keep)
{
#ifdef SYS_close_range
	if ((keep < lo || keep == lo ||
	     syscall(SYS_close_range, (unsigned)lo, (unsigned)keep - 1, 0u) == 0) &&
	    syscall(SYS_close_range, (unsigned)(keep >= lo ? keep + 1 : lo), ~0u, 0u) == 0)
		return;
#endif
	long max = sysconf(_SC_OPEN_MAX);

	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = lo; fd < max; fd++)
		if (fd != keep)
			close(fd);
}

/*
 * In the child: make fds[i] descriptor i (fds[i] < 0: /dev/null for 0-2,
 * nothing above) and close everything else but keep, so a child that hangs holds
 * nothing its parent's world waits on (the run lock, the caller's pipes).
 */
static void child_fds(const int *fds, int n, int keep)
{
	int moved[8];
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);

	/* First lift every kept descriptor above the targets, so no dup2 clobbers another. */
	for (int i = 0; i < n; i++) {
		int src = fds[i] >= 0 ? fds[i] : (i < 3 ? nul : -1);

		moved[i] = src >= 0 ? fcntl(src, F_DUPFD_CLOEXEC, n + 3) : -1;
		if (src >= 0 && moved[i] < 0)
			_exit(127);
	}
	for (int i = 0; i < n; i++)
		if (moved[i] >= 0 && dup2(moved[i], i) < 0)
			_exit(127);
	close_from(n, keep);
}

static void child_init(struct proc_child *ch)
{
	ch->pid = -1;
	ch->out_fd = ch->err_fd = ch->in_fd = -1;
	ch->t_start = now_ms();
}

/*
 * In a forked child: prog's module entered in place of exec.  Returns only
 * where the module does not load (the caller then execs prog); else the
 * child exits with the entry's code.  The child is made what an exec would
 * make it: the environment, caught signals back to their default, no input
 * the parent's stdio had buffered; fd 3 (the exec report, close-on-exec)
 * closed, which tells the parent it started.
 */
static void enter_module(const char *module, const char *entry, char *const argv[], char *const envp[])
{
	void *h = dlopen(module, RTLD_NOW | RTLD_LOCAL), *sym = h ? dlsym(h, entry) : NULL;
	int (*fn)(int, char **);
	int argc = 0, code;
	union { char *const *c; char **m; } av = { argv };

	if (!sym)
		return;                 /* not there or not loadable: the program is exec'd */
	memcpy(&fn, &sym, sizeof(fn));
	for (int s = 1; s < NSIG; s++) {
		struct sigaction sa;

		if (sigaction(s, NULL, &sa) == 0 && sa.sa_handler != SIG_DFL &&
		    sa.sa_handler != SIG_IGN)
			signal(s, SIG_DFL);
	}
	while (argv[argc])
		argc++;
	{
		union { char *const *c; char **m; } ev = { envp };

		environ = ev.m;
	}
	__fpurge(stdin);
	close(3);
	code = fn(argc, av.m);
	fflush(stdout);
	fflush(stderr);
	_exit(code & 0xff);
}

static int start_argv(struct proc_child *ch, const char *module, const char *entry, const char *prog,
		      const char *const argv[], const char *const envp[], const char *stdin_data);

int proc_start_argv(struct proc_child *ch, const char *prog, const char *const argv[],
		    const char *const envp[], const char *stdin_data)
{
	return start_argv(ch, NULL, NULL, prog, argv, envp, stdin_data);
}

int proc_start_module(struct proc_child *ch, const char *module, const char *entry, const char *prog,
		      const char *const argv[], const char *const envp[], const char *stdin_data)
{
	return start_argv(ch, module, entry, prog, argv, envp, stdin_data);
}

static int start_argv(struct proc_child *ch, const char *module, const char *entry, const char *prog,
		      const char *const argv[], const char *const envp[], const char *stdin_data)
{
	static const char *const default_env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, inp[2] = { -1, -1 }, execp[2] = { -1, -1 };
	int r = 0, exec_errno = 0, status;
	size_t in_len = stdin_data ? strlen(stdin_data) : 0;

	child_init(ch);
	if ((r = stuck_check(ch)) < 0)
		return r;
	ch->own_group = true;
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    (in_len && pipe2(inp, O_CLOEXEC) < 0) || pipe2(execp, O_CLOEXEC) < 0) {
		r = -errno;
		goto out_close_pipes;
	}
	fflush(NULL);
	ch->pid = fork();
	if (ch->pid < 0) {
		r = -errno;
		goto out_close_pipes;
	}
	if (ch->pid == 0) {
		int keep[4] = { inp[0], outp[1], errp[1], execp[1] };
		int e;

		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		child_fds(keep, 4, -1);
		/* fd 3 reports a failed execve; close-on-exec, so a good one closes it. */
		fcntl(3, F_SETFD, FD_CLOEXEC);
		/* execve's prototype predates const; the arrays are not modified. */
		union { const char *const *c; char *const *m; } av = { argv }, ev = { envp ? envp : default_env };

		if (module)
			enter_module(module, entry, av.m, ev.m);
		execve(prog, av.m, ev.m);
		e = errno;
		(void)!write(3, &e, sizeof(e));
		_exit(127);
	}
	setpgid(ch->pid, ch->pid);
	fd_close(&inp[0]);
	fd_close(&outp[1]);
	fd_close(&errp[1]);
	fd_close(&execp[1]);
	if (read(execp[0], &exec_errno, sizeof(exec_errno)) == (ssize_t)sizeof(exec_errno)) {
		waitpid(ch->pid, &status, 0);
		ch->pid = -1;
		r = -exec_errno;
		goto out_close_pipes;
	}
	fd_close(&execp[0]);
	ch->out_fd = outp[0];
	ch->err_fd = errp[0];
	if (in_len) {
		ch->in_fd = inp[1];
		ch->in_data = stdin_data;
		ch->in_len = in_len;
		fcntl(ch->in_fd, F_SETFL, O_NONBLOCK);
	}
	return 0;

out_close_pipes:
	for (int i = 0; i < 2; i++) {
		fd_close(&outp[i]);
		fd_close(&errp[i]);
		fd_close(&inp[i]);
		fd_close(&execp[i]);
	}
	return r;
}

int proc_start_fn(struct proc_child *ch, void (*fn)(void *arg, int fd), void *arg, size_t want)
{
	int p[2], cp[2] = { -1, -1 }, ret;

	child_init(ch);
	ch->want = want;
	if ((ret = stuck_check(ch)) < 0)
		return ret;
	if (pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	if (ch->cmd_stdin && pipe2(cp, O_CLOEXEC) < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	/*
	 * A step's answer can be megabytes (10,000 peers: 2.9 MB): a 1 MiB pipe
	 * moves it in a few wake-ups instead of 45.  The default where refused.
	 */
	(void)fcntl(p[0], F_SETPIPE_SZ, 1 << 20);
	fflush(NULL);
	ch->pid = fork();
	if (ch->pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		if (cp[0] >= 0) {
			close(cp[0]);
			close(cp[1]);
		}
		return -e;
	}
	if (ch->pid == 0) {
		int keep[3] = { cp[0], -1, ch->keep_stderr ? 2 : -1 }, fd = p[1];

		/* The answer pipe keeps its number (above 2), so no descriptor of the parent's reappears. */
		if (fd < 3 && (fd = fcntl(fd, F_DUPFD_CLOEXEC, 3)) < 0)
			_exit(127);
		child_fds(keep, 3, fd);
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		signal(SIGPIPE, SIG_DFL);
		fn(arg, fd);
		_exit(0);
	}
	close(p[1]);
	ch->out_fd = p[0];
	if (cp[0] >= 0) {
		close(cp[0]);
		ch->in_fd = cp[1];
	}
	return 0;
}

void proc_child_free(struct proc_child *ch)
{
	fd_close(&ch->out_fd);
	fd_close(&ch->err_fd);
	fd_close(&ch->in_fd);
	sb_free(&ch->out);
	sb_free(&ch->err);
}

static void child_signal(const struct proc_child *ch, int sig)
{
	if (ch->exited && !ch->own_group)
		return;         /* reaped: the pid may belong to someone else by now */
	kill(ch->own_group ? -ch->pid : ch->pid, sig);
}

static bool child_reading(const struct proc_child *ch)
{
	return ch->out_fd >= 0 || ch->err_fd >= 0 || ch->in_fd >= 0;
}

static bool child_done(const struct proc_child *ch)
{
	return ch->pid <= 0 || ch->exited || ch->abandoned;
}

/* Stop reading a child: its output so far is what we have. */
static void child_stop_reading(struct proc_child *ch, uint64_t now)
{
	if (child_reading(ch) && !ch->eof)
		ch->ms = now - ch->t_start;
	fd_close(&ch->out_fd);
	fd_close(&ch->err_fd);
	fd_close(&ch->in_fd);
}

/* Deadline, escalation and giving up for one child; returns the next time it needs attention. */
static uint64_t child_tick(struct proc_child *ch, const struct proc_limits *lim, uint64_t deadline,
			   uint64_t now)
{
	if (!child_reading(ch) && child_done(ch))
		return UINT64_MAX;
	if (!ch->t_term && !ch->t_kill) {
		uint64_t end = deadline;

		if (lim->eof_ends && ch->eof && !child_reading(ch))
			end = ch->t_start + ch->ms + lim->reap_ms;
		if (now < end)
			return end;
		if (lim->eof_ends && ch->eof) {
			/* It answered but will not exit: leave it, it holds nothing of ours. */
			ch->abandoned = true;
			return UINT64_MAX;
		}
		ch->timed_out = true;
		if (lim->term_grace_ms) {
			child_signal(ch, SIGTERM);
			ch->t_term = now;
			return now + lim->term_grace_ms;
		}
		child_signal(ch, SIGKILL);
		ch->t_kill = now;
	} else if (!ch->t_kill) {
		if (now < ch->t_term + lim->term_grace_ms)
			return ch->t_term + lim->term_grace_ms;
		child_signal(ch, SIGKILL);
		ch->t_kill = now;
	}
	/* Killed: grandchildren holding the pipes open must not keep us here. */
	child_stop_reading(ch, now);
	if (ch->exited)
		return UINT64_MAX;
	if (now >= ch->t_kill + lim->reap_ms) {
		char state = '?';
		unsigned long long st0;

		/*
		 * Only a child asleep in the kernel (D) is stuck; one that is
		 * still running its exit on a loaded machine (or under valgrind)
		 * gets up to KILL_REAP_MAX_MS before it is given up on, so that
		 * "stuck in the kernel" is said only when it is true.
		 */
		if (now < ch->t_kill + KILL_REAP_MAX_MS && proc_stat_of(ch->pid, &state, &st0) &&
		    state != 'D')
			return now + 50;
		ch->abandoned = true;
		return UINT64_MAX;
	}
	return ch->t_kill + lim->reap_ms;
}

static void child_io(struct proc_child *ch, int fd, short revents)
{
	char buf[8192];
	ssize_t n;

	if (!revents)
		return;
	if (fd == ch->in_fd) {
		n = write(fd, ch->in_data + ch->in_off, ch->in_len - ch->in_off);
		if (n > 0)
			ch->in_off += (size_t)n;
		if (n < 0 && (errno == EAGAIN || errno == EINTR))
			return;
		if (n < 0 || ch->in_off == ch->in_len)
			fd_close(&ch->in_fd);
		return;
	}
	n = read(fd, buf, sizeof(buf));
	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	struct strbuf *sb = fd == ch->out_fd ? &ch->out : &ch->err;

	size_t cap = fd == ch->out_fd && ch->max_out ? ch->max_out : PROC_MAX_OUTPUT;

	if (n > 0 && sb->len + (size_t)n <= cap)
		sb_appendn(sb, buf, (size_t)n);
	else if (n > 0 && fd == ch->out_fd)
		ch->out_cut = true;
	if (n <= 0 || (fd == ch->out_fd && ch->want && ch->out.len >= ch->want)) {
		fd_close(fd == ch->out_fd ? &ch->out_fd : &ch->err_fd);
		if (ch->out_fd < 0 && ch->err_fd < 0) {
			fd_close(&ch->in_fd);
			ch->eof = true;
			ch->ms = now_ms() - ch->t_start;
		}
	}
}

/* Where no SIGCHLD wakes proc_wait (its pipe could not be made): how often waitpid looks. */
#define EXIT_POLL_MS 5
static bool chld_wake_off;      /* tests: as if the pipe could not be made */

/*
 * A child's exit wakes proc_wait's poll: while it waits, SIGCHLD writes a
 * byte to this pipe (the self-pipe: a signal between the waitpid and the
 * poll leaves the byte there, so no exit is missed).  A step's child closes
 * its answer pipe a moment before it is a zombie; polling waitpid(WNOHANG)
 * found it alive in that moment and slept a whole EXIT_POLL_MS step, once
 * per isolated step.  (Not a pidfd: valgrind, which runs the tests, does
 * not know pidfd_open.)
 */
static int chld_pipe[2] = { -1, -1 };

static void on_sigchld(int sig)
{
	int e = errno, w = chld_pipe[1];

	(void)sig;
	if (w >= 0)
		(void)!write(w, "c", 1);
	errno = e;
}

/* Start (on) or stop (!on) the wake-ups; false when there are none (polling waitpid instead). */
static bool chld_wake(bool on, struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = on_sigchld, .sa_flags = SA_NOCLDSTOP | SA_RESTART };
	int w;

	if (on) {
		if (chld_wake_off || pipe2(chld_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
			return false;
		sigemptyset(&sa.sa_mask);
		sigaction(SIGCHLD, &sa, old);
		return true;
	}
	sigaction(SIGCHLD, old, NULL);
	w = chld_pipe[1];
	chld_pipe[1] = -1;
	close(w);
	close(chld_pipe[0]);
	chld_pipe[0] = -1;
	return false;
}

/* chs[i]'s pollfds: its pipes while it is read. */
static void child_poll_set(struct proc_child *ch, struct pollfd *pf, size_t *owner, size_t i, nfds_t *k)
{
	int fds[3] = { ch->out_fd, ch->err_fd, ch->in_fd };

	for (int f = 0; f < 3 && child_reading(ch); f++)
		if (fds[f] >= 0) {
			pf[*k] = (struct pollfd){ .fd = fds[f], .events = f == 2 ? POLLOUT : POLLIN };
			owner[(*k)++] = i;
		}
}

void proc_wait(struct proc_child *chs, size_t n, const struct proc_limits *lim)
{
	uint64_t deadline = now_ms() + lim->timeout_ms;
	struct pollfd *pf = xcalloc(3 * n + 2, sizeof(*pf));
	size_t *owner = xcalloc(3 * n + 2, sizeof(*owner));
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe, old_chld;
	/* installed before the first waitpid: an exit after it wakes the poll */
	bool wake = chld_wake(true, &old_chld);

	/* A child that exits without reading its stdin must not kill us with SIGPIPE. */
	sigaction(SIGPIPE, &ign, &old_pipe);
	for (;;) {
		uint64_t now = now_ms(), next = UINT64_MAX;
		nfds_t k = 0;
		bool pending = false, unpiped = false;

		if (wake) {
			pf[k] = (struct pollfd){ .fd = chld_pipe[0], .events = POLLIN };
			owner[k++] = SIZE_MAX;
		}
		for (size_t i = 0; i < n; i++) {
			struct proc_child *ch = &chs[i];

			if (!ch->exited && ch->pid > 0 && !ch->abandoned) {
				int st;

				if (waitpid(ch->pid, &st, WNOHANG) == ch->pid) {
					ch->exited = true;
					ch->status = st;
				}
			}
			/* The child is gone: what is left in the pipes comes at once, or from a grandchild. */
			if (ch->exited && !child_reading(ch))
				continue;
			uint64_t t = child_tick(ch, lim, deadline, now);

			if (t < next)
				next = t;
			child_poll_set(ch, pf, owner, i, &k);
			if (child_reading(ch) || !child_done(ch))
				pending = true;
			/* Running without pipes, and no SIGCHLD to say when it exits: waitpid is polled. */
			unpiped |= !wake && !child_reading(ch) && !child_done(ch);
		}
		if (!pending)
			break;
		int wait_ms = next == UINT64_MAX ? 1000 : (int)(next > now ? next - now : 0) + 1;

		if (unpiped && wait_ms > EXIT_POLL_MS)
			wait_ms = EXIT_POLL_MS;
		if (poll(pf, k, wait_ms) < 0) {
			if (errno == EINTR)
				continue;       /* SIGCHLD itself: its byte is read on the next round */
			break;
		}
		for (nfds_t q = 0; q < k; q++) {
			char drain[64];

			if (owner[q] != SIZE_MAX)
				child_io(&chs[owner[q]], pf[q].fd, pf[q].revents);
			else if (pf[q].revents)
				while (read(pf[q].fd, drain, sizeof(drain)) > 0)
					;
		}
	}
	sigaction(SIGPIPE, &old_pipe, NULL);
	if (wake)
		chld_wake(false, &old_chld);
	for (size_t i = 0; i < n; i++)
		if (chs[i].abandoned && chs[i].timed_out)
			stuck_note(&chs[i]);
	free(pf);
	free(owner);
}

int proc_run(const char *const argv[], const char *const envp[], const char *stdin_data,
	     unsigned timeout_ms, struct proc_result *ret)
{
	return proc_run_max(argv, envp, stdin_data, timeout_ms, 0, ret);
}

int proc_run_max(const char *const argv[], const char *const envp[], const char *stdin_data,
		 unsigned timeout_ms, size_t max_out, struct proc_result *ret)
{
	const struct proc_limits lim = { .timeout_ms = timeout_ms, .term_grace_ms = 1000, .reap_ms = 500 };
	struct proc_child ch = { 0 };
	char *prog;
	int r;

	memset(ret, 0, sizeof(*ret));
	prog = proc_which(argv[0]);
	if (!prog)
		return -ENOENT;
	r = proc_start_argv(&ch, prog, argv, envp, stdin_data);
	free(prog);
	if (r < 0)
		return r;
	ch.max_out = max_out;
	proc_wait(&ch, 1, &lim);
	ret->timed_out = ch.timed_out;
	if (ch.exited && WIFEXITED(ch.status)) {
		ret->exit_code = WEXITSTATUS(ch.status);
	} else if (ch.exited && WIFSIGNALED(ch.status)) {
		ret->exit_code = -1;
		ret->term_signal = WTERMSIG(ch.status);
	} else if (ch.abandoned) {
		ret->abandoned = true;
		ret->exit_code = -1;
		ret->term_signal = SIGKILL;
	}
	ret->out_len = ch.out.len;
	ret->out_cut = ch.out_cut;
	ret->out = sb_steal(&ch.out);
	ret->err_len = ch.err.len;
	ret->err = sb_steal(&ch.err);
	proc_child_free(&ch);
	return 0;
}
