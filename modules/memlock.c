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
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <unistd.h>

#include <glob.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "limits/memlock_job.h"
#include "names.h"
#include "proc.h"
#include "systemd.h"
#include "number.h"

#define LIMITS_PATH "/etc/security/limits.d/90-hpcinit.conf"
#define SYSTEMD_SYSTEM_PATH "/etc/systemd/system.conf.d/90-hpcinit.conf"
#define SYSTEMD_USER_PATH "/etc/systemd/user.conf.d/90-hpcinit.conf"
#define PAM_MAX_DEPTH 8

static bool memlock_enabled(const struct spec *s)
{
	return s->memlock.present;
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

	/* The loader's rule (name_check_pam_domain), asked again before a line is written. */
	for (size_t i = 0; i < s->memlock.users.n; i++) {
		const char *why = name_check_pam_domain(s->memlock.users.v[i]);

		if (why) {
			report_set(r, ST_FAILED, "memlock.users: '%s' is not a limits.conf domain: %s",
				   s->memlock.users.v[i], why);
			return -EINVAL;
		}
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

/* "Max locked memory" of /proc/PID/limits (memlock_proc_read); -1 = unlimited. */
static int read_proc_memlock(const struct ctx *c, const char *pid, long long *soft, long long *hard)
{
	long long n;

	if (!num_ll(pid, 1, INT32_MAX, &n))
		return -EINVAL;
	return memlock_proc_read(c, (long)n, soft, hard);
}

/* The running sshd: /run/sshd.pid, else the lowest process named sshd whose parent is 1 (daemon_pid). */
static char *find_sshd(const struct ctx *c)
{
	pid_t pid = daemon_pid(c, "/run/sshd.pid", "sshd", DAEMON_SCAN | DAEMON_TOP, NULL, 0);

	return pid ? xasprintf("%ld", (long)pid) : NULL;
}

static void fmt_kib(long long bytes, char *buf, size_t n)
{
	if (bytes < 0)
		snprintf(buf, n, "unlimited");
	else
		snprintf(buf, n, "%lld KiB", bytes / 1024);
}

/*
 * sshd's UsePAM, as sshd reads its configuration: the first value of a
 * keyword wins, Include expands globs in order.  1 yes, 0 no (or unset: the
 * OpenSSH default is no), -ENOENT when there is no sshd_config.
 */
static int sshd_use_pam(const struct ctx *c, const char *path, int depth, char **ret_where)
{
	char *text = NULL;
	int r = -ENOENT;
	unsigned lineno = 0;

	if (depth > 4 || fs_read(c, path, &text, NULL) < 0)
		return -ENOENT;
	for (char *line = text; line && *line && r < 0;) {
		char *nl = strchr(line, '\n'), *save = NULL, *kw, *val;

		lineno++;
		if (nl)
			*nl = '\0';
		line[strcspn(line, "#")] = '\0';
		kw = strtok_r(line, " \t=", &save);
		val = kw ? strtok_r(NULL, " \t=", &save) : NULL;
		line = nl ? nl + 1 : NULL;
		if (!kw || !val)
			continue;
		if (strcasecmp(kw, "Match") == 0)
			break;          /* UsePAM is not allowed in Match blocks */
		if (strcasecmp(kw, "UsePAM") == 0) {
			r = strcasecmp(val, "yes") == 0;
			*ret_where = xasprintf("%s:%u", path, lineno);
		} else if (strcasecmp(kw, "Include") == 0) {
			for (; val && r < 0; val = strtok_r(NULL, " \t", &save)) {
				char *pat = val[0] == '/' ? xstrdup(val) : xasprintf("/etc/ssh/%s", val);
				char *rooted = ctx_path(c, pat);
				size_t skip = strlen(rooted) - strlen(pat);
				glob_t g;

				if (glob(rooted, 0, NULL, &g) == 0) {
					for (size_t i = 0; i < g.gl_pathc && r < 0; i++)
						r = sshd_use_pam(c, g.gl_pathv[i] + skip, depth + 1, ret_where);
					globfree(&g);
				}
				free(rooted);
				free(pat);
			}
		}
	}
	free(text);
	if (r == -ENOENT && depth == 0)
		r = 0;                  /* the file exists and does not say: OpenSSH's default, no */
	return r;
}

/* The live default of the running manager: systemctl show's DefaultLimitMEMLOCK (bytes or infinity). */
static int live_default(const struct ctx *c, long long *ret)
{
	char *out = NULL;
	int r = systemctl_run(c, "show", "--property=DefaultLimitMEMLOCK", &out);

	if (r < 0)
		return r;
	r = -EBADMSG;
	for (char *line = out; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (strncmp(line, "DefaultLimitMEMLOCK=", 20) == 0) {
			char *v = line + 20;
			long long n;

			if (strcmp(v, "infinity") == 0) {
				*ret = MEMLOCK_UNLIMITED;
				r = 0;
			} else {
				if (num_ll(v, 0, LLONG_MAX, &n)) {
					*ret = n;
					r = 0;
				}
			}
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(out);
	return r;
}

/*
 * The drop-in reaches services started later in this boot (slurmd after
 * hpcinit) only once the manager re-reads its configuration (found on a real
 * VM: the files were right and a new service still got 8 MiB).
 * "systemctl daemon-reload" re-reads system.conf.d there; what counts is
 * the manager's own answer afterwards (systemctl show), so apply reloads
 * whenever the live value differs, and says what the manager has.
 */
static bool systemd_live(struct ctx *c, struct report *r, long long want)
{
	char wbuf[32], lbuf[32];
	long long live;
	int ret;

	if (!c->spec->memlock.systemd)
		return false;
	if (!systemd_booted(c)) {
		report_finding(r, ST_OK, "memlock.systemd.not-running",
			       "systemd: not running here (no " SYSTEMD_BOOTED_DIR "): the drop-in applies when it starts");
		return false;
	}
	if (systemctl_refused(c, r, "systemd (daemon-reload)"))
		return false;
	memlock_fmt(want, wbuf, sizeof(wbuf));
	ret = live_default(c, &live);
	if (ret < 0) {
		report_finding(r, ST_DEGRADED, "memlock.systemd.unknown",
			       "systemd: cannot read the running manager's DefaultLimitMEMLOCK (systemctl show: %s)",
			       strerror(-ret));
		return false;
	}
	if (live == want) {
		memlock_fmt(live, lbuf, sizeof(lbuf));
		report_finding(r, ST_OK, "memlock.systemd.live",
			       "systemd: services started now get memlock %s (systemctl show)", lbuf);
		return true;
	}
	memlock_fmt(live, lbuf, sizeof(lbuf));
	if (!ctx_may_write(c)) {
		report_finding(r, ST_CHANGED, "memlock.systemd.stale",
			       "systemd: the running manager still gives services memlock %s, not %s; apply "
			       "runs systemctl daemon-reload", lbuf, wbuf);
		return false;
	}
	ret = systemctl_run(c, "daemon-reload", NULL, NULL);
	if (ret < 0) {
		/*
		 * systemctl gives up on the manager's answer after 25 s (D-Bus
		 * "Connection timed out", found on a loaded VM) while the
		 * reload goes on; what counts is what the manager gives after
		 * it, so ask until the deadline.
		 */
		int rl = ret;
		uint64_t delay = 250;

		while (live_default(c, &live) == 0 && live != want && ctx_backoff(c, &delay, 2000))
			;
		if (live_default(c, &live) == 0) {
			if (live != want)
				memlock_fmt(live, lbuf, sizeof(lbuf));
			else {
				report_finding(r, ST_CHANGED, "memlock.systemd.reloaded",
				       "systemd: reloaded (systemctl daemon-reload gave up: %s; the manager "
				       "answered later); services started from now on get memlock %s (systemctl show); "
				       "running services keep %s until restarted", strerror(-rl), wbuf, lbuf);
				return true;
			}
		}
	}
	if (ret == 0)
		ret = live_default(c, &live);
	if (ret == 0 && live == want) {
		report_finding(r, ST_CHANGED, "memlock.systemd.reloaded",
			       "systemd: reloaded (systemctl daemon-reload); services started from now on get "
			       "memlock %s (systemctl show); running services keep %s until restarted", wbuf, lbuf);
		return true;
	}
	if (ret == 0)
		memlock_fmt(live, lbuf, sizeof(lbuf));
	report_finding(r, ST_FAILED, "memlock.systemd.stale",
		       "systemd: after daemon-reload services still get memlock %s, not %s%s%s", lbuf, wbuf,
		       ret < 0 ? ": " : "", ret < 0 ? strerror(-ret) : "");
	return false;
}

/*
 * On a first boot sshd starts long before hpcinit and keeps the limit the
 * manager gave it then (8 MiB); what mpirun starts through ssh outside a
 * pam_limits session inherits that.  Once the manager's default is right,
 * apply restarts sshd (try-restart: only if it runs; its unit by its unit
 * file, sshd_unit: ssh.service on Debian/Ubuntu, sshd.service elsewhere).
 * Open sessions survive: both units stop only the listener (KillMode=process).
 */
static int restart_sshd(struct ctx *c)
{
	return sshd_systemctl(c, "try-restart");
}

/* The running sshd's memlock: 0 and soft/hard, or -errno; ret_pid malloc'd. */
static int sshd_limits(const struct ctx *c, char **ret_pid, long long *soft, long long *hard)
{
	char *pid = find_sshd(c);

	*ret_pid = pid;
	if (!pid)
		return -ESRCH;
	return read_proc_memlock(c, pid, soft, hard);
}

/*
 * What a Slurm job gets, read from the running slurmd (memlock_slurm_read):
 * with PropagateResourceLimits naming MEMLOCK (ALL, Slurm's default) the
 * submitting shell's soft limit, at most slurmd's hard limit; otherwise
 * slurmd's own soft limit.  No slurmd: not known, and said so.
 */
static void slurm_job(const struct ctx *c, struct report *r, const struct memlock_job *j, const char *who,
		      long long want)
{
	struct memlock_slurm sl;
	char ubuf[32], pbuf[32], sbuf[32], hbuf[32], gbuf[32], wbuf[32], unit[340], setting[1500];
	long long got, unit_soft;

	memlock_slurm_read(c, &sl);
	if (!sl.present)
		return;
	if (sl.slurmd_soft != MEMLOCK_UNSET) {
		unit_soft = sl.slurmd_soft;
		memlock_fmt(sl.slurmd_soft, ubuf, sizeof(ubuf));
		snprintf(unit, sizeof(unit), "%s%s", sl.slurmd_from[0] == '/' ? "LimitMEMLOCK= at " : "",
			 sl.slurmd_from);
	} else {
		unit_soft = j->svc_soft;
		memlock_fmt(j->svc_soft, ubuf, sizeof(ubuf));
		snprintf(unit, sizeof(unit), "%s", *j->svc_from ? j->svc_from : "systemd's built-in default");
	}
	snprintf(setting, sizeof(setting), "%s: %s%s%s%s%s", sl.conf, sl.setting, *sl.from ? " at " : "", sl.from,
		 *sl.problem ? "; " : "", sl.problem);
	if (!sl.live) {
		report_finding(r, ST_OK, "memlock.job.slurm.unknown",
			       "job: slurmd is not running here (%s%s%s): what a Slurm job gets is not known until it "
			       "runs (%s); its unit would give slurmd memlock %s (%s)", sl.pid ? "its limits cannot be "
			       "read, " : "no live ", sl.pid ? sl.pid_how : sl.pidfile, sl.pid ? "" : ", no process named "
			       "slurmd", setting, ubuf, unit);
		return;
	}
	memlock_fmt(sl.live_soft, sbuf, sizeof(sbuf));
	memlock_fmt(sl.live_hard, hbuf, sizeof(hbuf));
	memlock_fmt(j->pam_soft, pbuf, sizeof(pbuf));
	got = memlock_slurm_job(&sl, j->pam_soft);
	memlock_fmt(got, gbuf, sizeof(gbuf));
	if (!sl.propagates)
		report_finding(r, ST_OK, "memlock.job.slurm",
			       "job: a Slurm job gets memlock %s: slurmd's soft limit (pid %ld, %s: soft %s, hard %s in "
			       "/proc/%ld/limits), not the submitting shell's (%s); %s %s (%s)%s", gbuf, sl.pid, sl.pid_how,
			       sbuf, hbuf, sl.pid, setting, unit_soft == sl.live_soft ? "slurmd has it from its unit:" :
			       "its unit would give", ubuf, unit, unit_soft == sl.live_soft ? "" : ", not what slurmd "
			       "runs with: it was started another way or before that changed");
	else if (got != MEMLOCK_UNSET)
		report_finding(r, ST_OK, "memlock.job.slurm",
			       "job: a Slurm job gets memlock %s: the submitting shell's soft limit, at most slurmd's "
			       "hard limit %s (pid %ld, %s, /proc/%ld/limits) (%s): a shell of a new PAM session of %s "
			       "here has %s; a shell with less (cron, a service, a login node without this limit) gives "
			       "its jobs less; to give jobs slurmd's soft limit (%s) instead, set "
			       "PropagateResourceLimitsExcept=MEMLOCK in slurm.conf", gbuf, hbuf, sl.pid, sl.pid_how,
			       sl.pid, setting, who, pbuf, sbuf);
	else
		report_finding(r, ST_OK, "memlock.job.slurm",
			       "job: a Slurm job gets the submitting shell's soft memlock, at most slurmd's hard limit "
			       "%s (pid %ld, %s, /proc/%ld/limits) (%s): no limits line sets it for a new PAM session "
			       "of %s here", hbuf, sl.pid, sl.pid_how, sl.pid, setting, who);
	if (got == MEMLOCK_UNSET || !memlock_lt(got, want))
		return;
	memlock_fmt(want, wbuf, sizeof(wbuf));
	if (!sl.propagates || got == sl.live_hard)
		report_finding(r, ST_DEGRADED, "memlock.job.slurm.low",
			       "a Slurm job here gets memlock %s, below memlock.limit %s: slurmd's %s limit (pid %ld); %s",
			       gbuf, wbuf, sl.propagates ? "hard" : "soft", sl.pid, strstr(unit, "hpcinit-slurmd") ?
			       "restart slurmd (systemctl restart hpcinit-slurmd: the slurm step's unit gives it "
			       "LimitMEMLOCK=infinity)" : "give slurmd's unit LimitMEMLOCK=infinity (a drop-in in "
			       "/etc/systemd/system/slurmd.service.d) and restart slurmd");
	else
		report_finding(r, ST_DEGRADED, "memlock.job.slurm.low",
			       "a Slurm job here gets memlock %s, below memlock.limit %s: the limit of the submitting "
			       "shell (a new PAM session of %s here)", gbuf, wbuf, who);
}

/* The limit a job gets: a new PAM session of the spec's user, and systemd services. */
/*
 * hpcinit's own limits file says less than the spec, or is gone: a job gets
 * less than memlock.limit now.  Apply restores it, but until then a job hits
 * it: broken, not drift (check), a change to make (plan; apply wrote it first).
 */
static void job_low(struct ctx *c, struct report *r, const char *who, const char *got, const char *from,
		    const char *want)
{
	report_finding(r, c->mode == RUN_CHECK ? ST_FAILED : ST_CHANGED, "memlock.job.low",
		       "job: a new PAM session of %s gets memlock %s (%s), below memlock.limit %s: %s is not "
		       "what the spec says; hpcinit apply restores it", who, got, from, want, LIMITS_PATH);
}

static void job_limits(struct ctx *c, struct report *r, long long want)
{
	const struct spec_memlock *m = &c->spec->memlock;
	const char *user = memlock_job_user(c);
	struct memlock_job j;
	char wbuf[32], sbuf[32], hbuf[32];
	char who[96];

	memlock_job_limit(c, user, &j);
	memlock_fmt(want, wbuf, sizeof(wbuf));
	memlock_fmt(j.pam_soft, sbuf, sizeof(sbuf));
	memlock_fmt(j.pam_hard, hbuf, sizeof(hbuf));
	snprintf(who, sizeof(who), "%s%s", *user ? "user " : "any user", user);
	report_finding(r, ST_OK, "memlock.job.pam",
		       "job: a new PAM session of %s gets memlock soft %s%s%s, hard %s%s%s (pam_limits' reading of "
		       "limits.conf and limits.d)", who, sbuf, *j.pam_soft_from ? " from " : "", j.pam_soft_from,
		       hbuf, *j.pam_hard_from ? " from " : "", j.pam_hard_from);
	if (j.pam_soft != MEMLOCK_UNSET && memlock_lt(j.pam_soft, want)) {
		bool ours = strncmp(j.pam_soft_from, LIMITS_PATH ":", strlen(LIMITS_PATH) + 1) == 0;

		if (!ours)
			report_finding(r, ST_FAILED, "memlock.limits.overridden",
				       "%s sets memlock %s for %s, below memlock.limit %s: it overrides %s "
				       "(pam_limits reads limits.d in name order; a later or more specific line wins)",
				       j.pam_soft_from, sbuf, who, wbuf, LIMITS_PATH);
		else
			job_low(c, r, who, sbuf, j.pam_soft_from, wbuf);
	} else if (j.pam_soft == MEMLOCK_UNSET && !fs_exists(c, LIMITS_PATH)) {
		job_low(c, r, who, "the limit it inherits", "no limits line", wbuf);
	} else if (j.pam_soft == MEMLOCK_UNSET) {
		report_finding(r, ST_FAILED, "memlock.job.uncovered",
			       "no limits line applies to %s: memlock.users (%s%s) does not cover the users whose "
			       "jobs run here", who, m->users.n ? m->users.v[0] : "", m->users.n > 1 ? ", ..." : "");
	}
	memlock_fmt(j.svc_soft, sbuf, sizeof(sbuf));
	report_finding(r, ST_OK, "memlock.job.services",
		       "job: systemd services get memlock %s%s%s (DefaultLimitMEMLOCK; a unit's own LimitMEMLOCK= "
		       "overrides it)", sbuf, *j.svc_from ? " from " : " (systemd's built-in default)", j.svc_from);
	slurm_job(c, r, &j, who, want);
	if (m->systemd && j.svc_soft != MEMLOCK_UNSET && memlock_lt(j.svc_soft, want) &&
	    strstr(j.svc_from, SYSTEMD_SYSTEM_PATH ":") != j.svc_from)
		report_finding(r, ST_FAILED, "memlock.systemd.overridden",
			       "%s sets DefaultLimitMEMLOCK %s, below memlock.limit %s: it is read after %s",
			       j.svc_from, sbuf, wbuf, SYSTEMD_SYSTEM_PATH);
}

/* Observations that do not change anything but the running manager's view; shared by check and apply. */
static void observe(struct ctx *c, struct report *r)
{
	const struct spec_memlock *m = &c->spec->memlock;
	long long want = m->unlimited ? -1 : (long long)m->limit_bytes;
	const char *services[] = { "sshd", "login" };
	char *pid = NULL, *where = NULL;
	char wbuf[32];
	long long soft, hard;
	bool live_ok;
	int usepam;

	fmt_kib(want, wbuf, sizeof(wbuf));
	for (int i = 0; i < 2; i++) {
		char *path = xasprintf("/etc/pam.d/%s", services[i]);
		bool exists = fs_exists(c, path);

		where = NULL;
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
	where = NULL;
	usepam = sshd_use_pam(c, "/etc/ssh/sshd_config", 0, &where);
	if (usepam == 0)
		report_finding(r, ST_DEGRADED, "memlock.sshd.no-pam",
			       "sshd: no 'UsePAM yes' in /etc/ssh/sshd_config%s%s%s: ssh sessions (mpirun's "
			       "launches) skip pam_limits and keep sshd's own limit", where ? " (" : "",
			       where ? where : "", where ? ")" : "");
	else if (usepam > 0)
		report_finding(r, ST_OK, "memlock.sshd.pam", "sshd: UsePAM yes (%s)", where);
	free(where);
	job_limits(c, r, want);
	live_ok = systemd_live(c, r, want);
	if (sshd_limits(c, &pid, &soft, &hard) == 0 && (memlock_lt(hard, want) || memlock_lt(soft, want)) &&
	    live_ok && ctx_may_write(c)) {
		char sb[32];
		int ret = restart_sshd(c);

		fmt_kib(soft, sb, sizeof(sb));
		free(pid);
		pid = NULL;    /* a failed restart reads no new one: found again below */
		if (ret == 0 && sshd_limits(c, &pid, &soft, &hard) == 0 &&
		    !memlock_lt(hard, want) && !memlock_lt(soft, want))
			report_finding(r, ST_CHANGED, "memlock.sshd.restarted",
				       "sshd ran with memlock %s (started before the systemd default); "
				       "restarted (systemctl try-restart), open sessions kept", sb);
		else if (ret < 0)
			report_finding(r, ST_DEGRADED, "memlock.sshd.restart-failed",
				       "sshd runs with memlock %s; systemctl try-restart ssh.service/sshd.service: %s",
				       sb, strerror(-ret));
		if (!pid)
			pid = find_sshd(c);
	}
	if (pid) {
		if (read_proc_memlock(c, pid, &soft, &hard) == 0) {
			char sb[32], hb[32];
			bool low = memlock_lt(hard, want) || memlock_lt(soft, want);

			fmt_kib(soft, sb, sizeof(sb));
			fmt_kib(hard, hb, sizeof(hb));
			report_finding(r, low ? ST_DEGRADED : ST_OK, low ? "memlock.sshd.low" : "memlock.sshd.limit",
				       "sshd (pid %s) runs with memlock soft %s, hard %s%s", pid, sb, hb,
				       low ? "; below memlock.limit: what it starts outside a pam_limits session "
				       "keeps that; restart sshd (systemctl restart ssh) once the systemd default is in force" : "");
		}
		free(pid);
	} else {
		report_finding(r, ST_OK, "memlock.sshd.absent",
			       "sshd: no running sshd found (/run/sshd.pid, /proc)");
	}
	if (ctx_real_root(c)) {
		struct rlimit rl;

		if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0) {
			char sb[32];

			fmt_kib(rl.rlim_cur == RLIM_INFINITY ? -1 : (long long)rl.rlim_cur, sb, sizeof(sb));
			report_finding(r, ST_OK, "memlock.self.limit",
				       "this process (hpcinit) has memlock %s; wanted %s", sb, wbuf);
		}
	}
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
	limits_value(&c->spec->memlock, val, sizeof(val));
	if (r->status == ST_DEGRADED || r->status == ST_FAILED || (!ret && r->status == ST_CHANGED))
		report_summarize(r);    /* the worst finding first (a reload counts as a change) */
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
	if (r->status == ST_DEGRADED || r->status == ST_FAILED || (!ret && r->status == ST_CHANGED))
		report_summarize(r);    /* the worst finding first (a reload counts as a change) */
	else if (ret)
		report_set(r, ST_CHANGED, "%zu memlock file(s) missing or different", r->changed.n);
	else
		report_set(r, ST_OK, "memlock %s in force (files and PAM)", val);
	return 0;
}

/* A daemon-reload on a loaded VM can take longer than systemctl waits (25 s). */
static uint64_t memlock_timeout(const struct spec *s)
{
	return s->memlock.systemd ? 90 * 1000 : 10 * 1000;
}

const struct module memlock_module = {
	.name = "memlock",
	.enabled = memlock_enabled,
	.needs = NULL,
	.timeout_ms = memlock_timeout,
	.check = memlock_check,
	.apply = memlock_apply,
};
