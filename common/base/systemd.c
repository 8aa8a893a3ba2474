/* SPDX-License-Identifier: MIT */
/*
 * systemctl of the root, and sshd's unit: ssh.service on Debian and Ubuntu,
 * sshd.service on RHEL, SUSE and Azure Linux, found by its unit file, never
 * assumed (systemd.h).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "number.h"
#include "proc.h"
#include "systemd.h"

#define SYSTEMCTL_TIMEOUT_MS 30000

bool services_live(const struct ctx *c)
{
	return ctx_real_root(c);
}

bool services_refused(const struct ctx *c, struct report *rep, const char *what)
{
	if (services_live(c))
		return false;
	if (rep)
		report_finding(rep, ST_OK, "service.root", "%s: not started: --root %s is a tree, not this "
			       "machine (hpcinit starts, stops and reloads no service under --root)", what, c->root);
	return true;
}

char *systemctl_path(const struct ctx *c)
{
	static const char *const cands[] = { "/usr/bin/systemctl", "/bin/systemctl" };

	if (!services_live(c)) {
		const char *p = secure_getenv("HPCINIT_SYSTEMCTL");

		return p && p[0] == '/' && access(p, X_OK) == 0 ? xstrdup(p) : NULL;
	}
	for (size_t i = 0; i < 2; i++) {
		char *p = ctx_path(c, cands[i]);

		if (access(p, X_OK) == 0)
			return p;
		free(p);
	}
	return NULL;
}

bool systemctl_refused(const struct ctx *c, struct report *rep, const char *what)
{
	char *p;
	bool none;

	if (services_live(c))
		return false;
	p = systemctl_path(c);
	none = !p;
	free(p);
	return none && services_refused(c, rep, what);
}

int systemctl_run(const struct ctx *c, const char *a1, const char *a2, char **ret_out)
{
	char *prog = systemctl_path(c);
	const char *argv[] = { prog, a1, a2, NULL };
	struct proc_result pr;
	int r;

	if (!prog)
		return -ENOENT;
	r = proc_run(argv, NULL, NULL, SYSTEMCTL_TIMEOUT_MS, &pr);
	free(prog);
	if (r < 0)
		return r;
	r = pr.exit_code == 0 ? 0 : pr.timed_out ? -ETIMEDOUT : -EIO;
	if (r == 0 && ret_out) {
		*ret_out = pr.out;
		pr.out = NULL;
	}
	proc_result_free(&pr);
	return r;
}

const char *sshd_unit(const struct ctx *c)
{
	static const char *const dirs[] = { "/etc/systemd/system", "/usr/lib/systemd/system",
					    "/lib/systemd/system" };
	static const char *const units[] = { "ssh.service", "sshd.service" };

	for (size_t u = 0; u < 2; u++)
		for (size_t d = 0; d < 3; d++) {
			char *p = xasprintf("%s/%s", dirs[d], units[u]);
			bool found = fs_exists(c, p);

			free(p);
			if (found)
				return units[u];
		}
	return NULL;
}

int sshd_systemctl(const struct ctx *c, const char *verb)
{
	const char *unit = sshd_unit(c);
	int r;

	if (unit)
		return systemctl_run(c, verb, unit, NULL);
	r = systemctl_run(c, verb, "ssh.service", NULL);
	if (r < 0)
		r = systemctl_run(c, verb, "sshd.service", NULL);
	return r;
}

bool systemd_booted(const struct ctx *c)
{
	char *p = ctx_path(c, SYSTEMD_BOOTED_DIR);
	struct stat st;
	bool yes = stat(p, &st) == 0 && S_ISDIR(st.st_mode);

	free(p);
	return yes;
}

/* /proc/PID/comm (under c's root) is comm. */
static bool proc_is(const struct ctx *c, const char *pid, const char *comm)
{
	char *path = xasprintf("/proc/%s/comm", pid), *name = NULL;
	bool yes = false;

	if (fs_read(c, path, &name, NULL) == 0) {
		name[strcspn(name, "\n")] = '\0';
		yes = strcmp(name, comm) == 0;
	}
	free(name);
	free(path);
	return yes;
}

/*
 * The same network namespace as this process (the real root only): a
 * container's or a simulated node's daemon is not this node's, while a
 * service's own mount namespace (PrivateTmp=) keeps it this node's.
 */
static bool proc_same_net(const char *pid)
{
	char self[64] = "", other[64] = "", *p = xasprintf("/proc/%s/ns/net", pid);
	ssize_t a = readlink("/proc/self/ns/net", self, sizeof(self) - 1);
	ssize_t b = readlink(p, other, sizeof(other) - 1);

	free(p);
	return a > 0 && b > 0 && a == b && memcmp(self, other, (size_t)a) == 0;
}

/* /proc/PID (under c's root) lives (not a zombie) and its parent is pid 1: "pid (comm) state ppid ...". */
static bool proc_top(const struct ctx *c, const char *pid)
{
	char *path = xasprintf("/proc/%s/stat", pid), *text = NULL, *close;
	bool yes = false;

	if (fs_read(c, path, &text, NULL) == 0 && (close = strrchr(text, ')')))
		yes = close[1] == ' ' && close[2] && close[2] != 'Z' && strncmp(close + 3, " 1 ", 3) == 0;
	free(text);
	free(path);
	return yes;
}

pid_t daemon_pid(const struct ctx *c, const char *pidfile, const char *comm, unsigned flags,
		 char *ret_how, size_t how_len)
{
	char *text = NULL, *procdir, num[24];
	long long pid = 0, best = 0;
	DIR *d;
	struct dirent *de;

	if (pidfile && fs_read(c, pidfile, &text, NULL) == 0 &&
	    num_ll_prefix(text, 2, INT32_MAX - 1, &pid, NULL)) {
		snprintf(num, sizeof(num), "%lld", pid);
		if (proc_is(c, num, comm)) {
			free(text);
			if (ret_how)
				snprintf(ret_how, how_len, "%s", pidfile);
			return (pid_t)pid;
		}
	}
	free(text);
	if (!(flags & DAEMON_SCAN))
		return 0;
	procdir = ctx_path(c, "/proc");
	d = opendir(procdir);
	free(procdir);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		if (!num_ll(de->d_name, 2, INT32_MAX - 1, &pid) || (best && pid >= best))
			continue;
		if (proc_is(c, de->d_name, comm) && (!ctx_real_root(c) || proc_same_net(de->d_name)) &&
		    (!(flags & DAEMON_TOP) || proc_top(c, de->d_name)))
			best = pid;
	}
	closedir(d);
	if (best && ret_how)
		snprintf(ret_how, how_len, "a process named %s", comm);
	return (pid_t)best;
}

/* Whether v is one of the n inodes in set. */
static int ino_in(const unsigned long long *set, size_t n, unsigned long long v)
{
	for (size_t i = 0; i < n; i++)
		if (set[i] == v)
			return 1;
	return 0;
}

/*
 * The LISTEN lines of a /proc/PID/net/tcp{,6} ("sl local rem st tx:rx tr:tm
 * retr uid timeout inode") whose inode is one of the process's sockets
 * (mine, n_mine): appended to ino (n of max), the new count.  Every line is
 * read: a node may listen on many more sockets than the daemon holds.
 */
static size_t listen_lines(const struct ctx *c, const char *path, const unsigned long long *mine,
			   size_t n_mine, unsigned long long *ino, size_t max, size_t n)
{
	char *text = NULL;

	if (fs_read(c, path, &text, NULL) < 0)
		return n;
	for (const char *line = strchr(text, '\n'); line && n < max; line = strchr(line + 1, '\n')) {
		const char *p = line + 1;
		char w[80], st[8];
		unsigned long long v;
		int i;

		for (i = 0; i < 3 && num_word_field(&p, w, sizeof(w)); i++)
			;
		if (i < 3 || !num_word_field(&p, st, sizeof(st)) || strcmp(st, "0A") != 0)
			continue;
		for (i = 0; i < 5 && num_word_field(&p, w, sizeof(w)); i++)
			;
		if (i == 5 && num_ull_field(&p, 10, ULLONG_MAX, &v) && v && ino_in(mine, n_mine, v) &&
		    !ino_in(ino, n, v))
			ino[n++] = v;
	}
	free(text);
	return n;
}

int daemon_listening(const struct ctx *c, pid_t pid, unsigned long long *ino, size_t max)
{
	unsigned long long *mine = NULL;
	size_t n_mine = 0, cap = 0, n = 0;
	char *path, *dir;
	struct dirent *de;
	DIR *d;

	path = xasprintf("/proc/%ld/fd", (long)pid);
	dir = ctx_path(c, path);
	free(path);
	d = opendir(dir);
	if (!d) {
		int r = -errno;

		free(dir);
		return r;
	}
	while ((de = readdir(d))) {
		char link[64], *fd = xasprintf("%s/%s", dir, de->d_name);
		ssize_t k = readlink(fd, link, sizeof(link) - 1);
		unsigned long long v;
		const char *p = link + 8;

		free(fd);
		if (k <= 9 || strncmp(link, "socket:[", 8) != 0 || link[k - 1] != ']')
			continue;
		link[k - 1] = '\0';
		if (!num_ull_field(&p, 10, ULLONG_MAX, &v))
			continue;
		if (n_mine == cap) {
			cap = cap ? 2 * cap : 16;
			mine = xrealloc(mine, cap * sizeof(*mine));
		}
		mine[n_mine++] = v;
	}
	closedir(d);
	free(dir);
	if (n_mine) {
		path = xasprintf("/proc/%ld/net/tcp", (long)pid);
		n = listen_lines(c, path, mine, n_mine, ino, max, n);
		free(path);
		path = xasprintf("/proc/%ld/net/tcp6", (long)pid);
		n = listen_lines(c, path, mine, n_mine, ino, max, n);
		free(path);
	}
	free(mine);
	return (int)n;
}
