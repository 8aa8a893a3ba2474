/* SPDX-License-Identifier: MIT */
/*
 * memlock: RDMA needs to pin memory.  PAM sessions read limits.d; systemd
 * services ignore it and get DefaultLimitMEMLOCK (64 KiB unless set), so
 * both are written.  check reports what is really in force: the files,
 * whether pam_limits runs for sshd and login sessions, and the limit of the
 * running sshd from /proc/PID/limits.
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "proc.h"

#define LIMITS_PATH "/etc/security/limits.d/90-hpcinit.conf"
#define SYSTEMD_SYSTEM_PATH "/etc/systemd/system.conf.d/90-hpcinit.conf"
#define SYSTEMD_USER_PATH "/etc/systemd/user.conf.d/90-hpcinit.conf"
#define PAM_MAX_DEPTH 8

static bool memlock_enabled(const struct spec *s)
{
	return s->memlock.present;
}

/* limits.conf domains: "*", user, @group, %group, uid ranges; nothing that could split a line. */
static bool valid_domain(const char *d)
{
	if (!*d || strlen(d) > 64)
		return false;
	for (const char *p = d; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("._-@%*:", *p)))
			return false;
	return true;
}

/* Value for limits.conf, in KiB (rounded up), or "unlimited". */
static void limits_value(const struct spec_memlock *m, char *buf, size_t n)
{
	if (m->unlimited)
		snprintf(buf, n, "unlimited");
	else
		snprintf(buf, n, "%llu", (unsigned long long)((m->limit_bytes + 1023) / 1024));
}

static char *render_limits(const struct spec *s)
{
	struct strbuf sb = STRBUF_INIT;
	char val[32];

	limits_value(&s->memlock, val, sizeof(val));
	sb_printf(&sb, "# Managed by hpcinit for cluster %s: locked memory for RDMA.\n"
		  "# Changes here are overwritten; edit memlock: in the hpcinit spec instead.\n",
		  s->cluster.name);
	for (size_t i = 0; i < s->memlock.users.n; i++) {
		sb_printf(&sb, "%-16s soft memlock %s\n", s->memlock.users.v[i], val);
		sb_printf(&sb, "%-16s hard memlock %s\n", s->memlock.users.v[i], val);
	}
	return sb_steal(&sb);
}

static char *render_systemd(const struct spec *s)
{
	if (s->memlock.unlimited)
		return xasprintf("# Managed by hpcinit for cluster %s.\n"
				 "# systemd ignores limits.conf: services get this memlock limit.\n"
				 "[Manager]\nDefaultLimitMEMLOCK=infinity\n", s->cluster.name);
	return xasprintf("# Managed by hpcinit for cluster %s.\n"
			 "# systemd ignores limits.conf: services get this memlock limit.\n"
			 "[Manager]\nDefaultLimitMEMLOCK=%llu\n", s->cluster.name,
			 (unsigned long long)s->memlock.limit_bytes);
}

static int write_files(struct ctx *c, struct report *r)
{
	const struct spec *s = c->spec;
	char *text;
	int ret, changed = 0;

	for (size_t i = 0; i < s->memlock.users.n; i++)
		if (!valid_domain(s->memlock.users.v[i])) {
			report_set(r, ST_FAILED, "memlock.users: '%s' is not a limits.conf domain "
				   "(user, @group, %%group or *)", s->memlock.users.v[i]);
			return -EINVAL;
		}
	ret = fs_mkdir_p(c, r, "/etc/security/limits.d", 0755, 0, 0);
	if (ret < 0)
		return ret;
	text = render_limits(s);
	ret = fs_write(c, r, LIMITS_PATH, text, strlen(text), 0644, 0, 0);
	free(text);
	if (ret < 0)
		return ret;
	changed |= ret;

	const char *dirs[] = { "/etc/systemd/system.conf.d", "/etc/systemd/user.conf.d" };
	const char *files[] = { SYSTEMD_SYSTEM_PATH, SYSTEMD_USER_PATH };

	for (int i = 0; i < 2; i++) {
		if (s->memlock.systemd) {
			ret = fs_mkdir_p(c, r, dirs[i], 0755, 0, 0);
			if (ret < 0)
				return ret;
			text = render_systemd(s);
			ret = fs_write(c, r, files[i], text, strlen(text), 0644, 0, 0);
			free(text);
		} else {
			/* systemd: false: a drop-in we wrote earlier must go. */
			ret = fs_remove(c, r, files[i]);
		}
		if (ret < 0)
			return ret;
		changed |= ret;
	}
	return changed;
}

/* Does this PAM stack (or what it includes) run pam_limits in the session phase? */
static bool pam_has_limits(const struct ctx *c, const char *service, int depth, char **ret_where)
{
	char *path, *text = NULL;
	bool found = false;

	if (depth > PAM_MAX_DEPTH || strchr(service, '/') || strstr(service, ".."))
		return false;
	path = xasprintf("/etc/pam.d/%s", service);
	if (fs_read(c, path, &text, NULL) < 0) {
		free(path);
		return false;
	}
	for (char *line = text; line && *line && !found;) {
		char *nl = strchr(line, '\n');
		char *tok[4] = { 0 };
		int nt = 0;

		if (nl)
			*nl = '\0';
		for (char *save = NULL, *t = strtok_r(line, " \t", &save); t && nt < 4;
		     t = strtok_r(NULL, " \t", &save))
			tok[nt++] = t;
		if (nt >= 1 && tok[0][0] == '#') {
			/* comment */
		} else if (nt >= 2 && strcmp(tok[0], "@include") == 0) {
			found = pam_has_limits(c, tok[1], depth + 1, ret_where);
		} else if (nt >= 3 && (strcmp(tok[0], "session") == 0 || strcmp(tok[0], "-session") == 0)) {
			if (strcmp(tok[1], "include") == 0 || strcmp(tok[1], "substack") == 0)
				found = pam_has_limits(c, tok[2], depth + 1, ret_where);
			else if (strstr(tok[2], "pam_limits.so"))
				found = true;
			else if (nt >= 4 && tok[1][0] == '[' && strstr(tok[3], "pam_limits.so"))
				found = true;
		}
		if (found && !*ret_where)
			*ret_where = xstrdup(path);
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	free(path);
	return found;
}

/* "Max locked memory  soft  hard  units" from /proc/PID/limits; -1 = unlimited. */
static int read_proc_memlock(const struct ctx *c, const char *pid, long long *soft, long long *hard)
{
	char *path = xasprintf("/proc/%s/limits", pid), *text = NULL;
	int r = fs_read(c, path, &text, NULL);

	free(path);
	if (r < 0)
		return r;
	r = -ENODATA;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (strncmp(line, "Max locked memory", 17) == 0) {
			char s1[32], s2[32];

			if (sscanf(line + 17, "%31s %31s", s1, s2) == 2) {
				char *end;

				*soft = strcmp(s1, "unlimited") == 0 ? -1 : strtoll(s1, &end, 10);
				*hard = strcmp(s2, "unlimited") == 0 ? -1 : strtoll(s2, &end, 10);
				r = 0;
			}
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return r;
}

/* The running sshd: /run/sshd.pid, else the first process named sshd whose parent is 1. */
static char *find_sshd(const struct ctx *c)
{
	char *text = NULL, *ret = NULL, *procdir;
	DIR *d;
	struct dirent *de;

	if (fs_read(c, "/run/sshd.pid", &text, NULL) == 0) {
		text[strcspn(text, " \n")] = '\0';
		if (*text && strspn(text, "0123456789") == strlen(text)) {
			char *p = xasprintf("/proc/%s/limits", text);

			if (fs_exists(c, p))
				ret = xstrdup(text);
			free(p);
		}
		free(text);
		if (ret)
			return ret;
	}
	procdir = ctx_path(c, "/proc");
	d = opendir(procdir);
	free(procdir);
	if (!d)
		return NULL;
	while (!ret && (de = readdir(d))) {
		char *stat = NULL, *p;

		if (strspn(de->d_name, "0123456789") != strlen(de->d_name))
			continue;
		p = xasprintf("/proc/%s/stat", de->d_name);
		if (fs_read(c, p, &stat, NULL) == 0) {
			/* pid (comm) state ppid ... */
			char *open = strchr(stat, '('), *close = strrchr(stat, ')');

			if (open && close && close > open && strncmp(open + 1, "sshd)", 5) == 0 &&
			    strncmp(close + 1, " S 1 ", 5) == 0)
				ret = xstrdup(de->d_name);
		}
		free(stat);
		free(p);
	}
	closedir(d);
	return ret;
}

static void fmt_kib(long long bytes, char *buf, size_t n)
{
	if (bytes < 0)
		snprintf(buf, n, "unlimited");
	else
		snprintf(buf, n, "%lld KiB", bytes / 1024);
}

/* Observations that do not change anything; shared by check and apply. */
static void observe(struct ctx *c, struct report *r)
{
	const struct spec_memlock *m = &c->spec->memlock;
	long long want = m->unlimited ? -1 : (long long)m->limit_bytes;
	const char *services[] = { "sshd", "login" };
	char *pid;
	char wbuf[32];

	fmt_kib(want, wbuf, sizeof(wbuf));
	for (int i = 0; i < 2; i++) {
		char *where = NULL;
		char *path = xasprintf("/etc/pam.d/%s", services[i]);
		bool exists = fs_exists(c, path);

		if (!exists) {
			report_finding(r, ST_OK, "memlock.pam.absent",
				       "pam: %s does not exist (no %s PAM stack here)", path, services[i]);
		} else if (pam_has_limits(c, services[i], 0, &where)) {
			report_finding(r, ST_OK, "memlock.pam.active", "pam: pam_limits is active for %s (%s)",
				       services[i], where);
		} else {
			report_finding(r, ST_DEGRADED, "memlock.pam.inactive",
				       "pam: pam_limits is NOT active for %s sessions: limits.d is ignored "
				       "there; add 'session required pam_limits.so' to %s", services[i], path);
		}
		free(where);
		free(path);
	}
	pid = find_sshd(c);
	if (pid) {
		long long soft, hard;

		if (read_proc_memlock(c, pid, &soft, &hard) == 0) {
			char sb[32], hb[32];

			fmt_kib(soft, sb, sizeof(sb));
			fmt_kib(hard, hb, sizeof(hb));
			report_finding(r, ST_OK, "memlock.sshd.limit",
				       "sshd (pid %s) runs with memlock soft %s, hard %s%s", pid, sb, hb,
				       hard >= 0 && (want < 0 || hard < want) ?
				       "; pam_limits raises it per session, services need DefaultLimitMEMLOCK "
				       "and a restart" : "");
		}
		free(pid);
	} else {
		report_finding(r, ST_OK, "memlock.sshd.absent",
			       "sshd: no running sshd found (/run/sshd.pid, /proc)");
	}
	if (c->root[0] == '\0' || strcmp(c->root, "/") == 0) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
			char sb[32];

			fmt_kib(rl.rlim_cur == RLIM_INFINITY ? -1 : (long long)rl.rlim_cur, sb, sizeof(sb));
			report_finding(r, ST_OK, "memlock.self.limit",
				       "this process (hpcinit) has memlock %s; wanted %s", sb, wbuf);
		}
	}
}

static bool has_finding(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0 && r->findings[i].sev != ST_OK)
			return true;
	return false;
}

/*
 * The running systemd manager reads system.conf.d only when it loads its
 * configuration: until "systemctl daemon-reload", services it starts keep
 * the old DefaultLimitMEMLOCK (found on a real VM: the files were right,
 * and a service still got 8 MiB).  apply reloads after writing; apply and
 * check report what the manager really has.  1 when it differs from the
 * spec (drift), else 0.
 */
static int systemd_manager(struct ctx *c, struct report *r, bool wrote)
{
	const struct spec_memlock *m = &c->spec->memlock;
	const char *reload[] = { "systemctl", "daemon-reload", NULL };
	const char *show[] = { "systemctl", "show", "-p", "DefaultLimitMEMLOCK", "--value", NULL };
	struct proc_result pr;
	char *end, *v, hb[32], wb[32];
	long long have, want = m->unlimited ? -1 : (long long)m->limit_bytes;
	int drift = 0;

	if (!m->systemd || (c->root[0] && strcmp(c->root, "/") != 0) ||
	    !fs_exists(c, "/run/systemd/system"))
		return 0;
	if (wrote && c->mode == RUN_APPLY) {
		if (proc_run(reload, NULL, NULL, 60000, &pr) != 0 || pr.exit_code != 0)
			report_finding(r, ST_DEGRADED, "memlock.systemd.reload",
				       "systemctl daemon-reload failed (%s): services keep the old "
				       "DefaultLimitMEMLOCK until systemd reloads", pr.err && *pr.err ?
				       pr.err : "could not run it");
		proc_result_free(&pr);
	}
	if (proc_run(show, NULL, NULL, 10000, &pr) != 0 || pr.exit_code != 0) {
		proc_result_free(&pr);
		return 0;
	}
	v = pr.out;
	v[strcspn(v, "\n")] = '\0';
	have = strcmp(v, "infinity") == 0 ? -1 : strtoll(v, &end, 10);
	fmt_kib(have, hb, sizeof(hb));
	fmt_kib(want, wb, sizeof(wb));
	if (have != want) {
		report_finding(r, c->mode == RUN_APPLY ? ST_DEGRADED : ST_CHANGED, "memlock.systemd.manager",
			       "systemd manager has DefaultLimitMEMLOCK %s, not %s: services it starts get %s "
			       "until 'systemctl daemon-reload'", hb, wb, hb);
		drift = 1;
	} else {
		report_finding(r, ST_OK, "memlock.systemd.manager",
			       "systemd manager has DefaultLimitMEMLOCK %s%s", hb,
			       wrote && c->mode == RUN_APPLY ? " (after daemon-reload)" : "");
	}
	proc_result_free(&pr);
	return drift;
}

static int memlock_apply(struct ctx *c, struct report *r)
{
	int ret = write_files(c, r);
	char val[32];

	if (ret < 0) {
		if (!r->summary[0])
			report_set(r, ST_FAILED, "cannot write the memlock files");
		return ret;
	}
	observe(c, r);
	ret |= systemd_manager(c, r, ret > 0);
	limits_value(&c->spec->memlock, val, sizeof(val));
	if (r->status == ST_DEGRADED)
		report_set(r, ST_DEGRADED, "memlock %s written, but %s", val,
			   has_finding(r, "memlock.pam.inactive") ?
			   "pam_limits is not active everywhere" : "systemd services do not get it yet");
	else if (ret && c->mode == RUN_APPLY)
		report_set(r, ST_CHANGED, "memlock %s set for %zu domain(s)%s", val,
			   c->spec->memlock.users.n, c->spec->memlock.systemd ? " and systemd" : "");
	else if (ret)
		report_set(r, ST_CHANGED, "%zu file(s) would change", r->changed.n);
	else
		report_set(r, ST_OK, "memlock %s in place", val);
	return 0;
}

static int memlock_check(struct ctx *c, struct report *r)
{
	/* write_files never writes outside RUN_APPLY: here it only compares. */
	int ret = write_files(c, r);
	char val[32];

	if (ret < 0)
		return ret;
	observe(c, r);
	limits_value(&c->spec->memlock, val, sizeof(val));
	if (r->status == ST_DEGRADED)
		report_set(r, ST_DEGRADED, "pam_limits is not active everywhere");
	else if (ret)
		report_set(r, ST_CHANGED, "%zu memlock file(s) missing or different", r->changed.n);
	else
		report_set(r, ST_OK, "memlock %s in force (files and PAM)", val);
	return 0;
}

static uint64_t memlock_timeout(const struct spec *s)
{
	return 10 * 1000;
}

const struct module memlock_module = {
	.name = "memlock",
	.enabled = memlock_enabled,
	.needs = NULL,
	.timeout_ms = memlock_timeout,
	.check = memlock_check,
	.apply = memlock_apply,
};
