/* SPDX-License-Identifier: MIT */
/*
 * What a job gets (memlock_job.h).  Two readers, each following the program it
 * stands for:
 *
 * - pam_limits (Linux-PAM modules/pam_limits): /etc/security/limits.conf,
 *   then /etc/security/limits.d/\*.conf in C-locale name order.  A line
 *   applies when its domain matches: the user name or a uid range (most
 *   specific), @group or a gid range, then '*'.  A later line overrides an
 *   earlier one of the same or lower specificity, never a more specific
 *   one.  "-" sets soft and hard.  Values are KiB; unlimited/infinity/-1.
 *   We parse rather than open a PAM session: a session (su, runuser) runs
 *   that service's stack, not sshd's, needs a login-capable user and, run
 *   as root without CAP_SYS_RESOURCE (containers), cannot show a limit above
 *   root's own hard limit; the parse shows the value and the file:line
 *   that sets it on every node and on a fake root.  The stacks themselves
 *   (is pam_limits in sshd's session phase, UsePAM) are checked by memlock.c.
 * - systemd (src/core/main.c, system.conf(5)): /etc/systemd/system.conf,
 *   then the drop-ins of system.conf.d in /usr/lib, /usr/local/lib, /run,
 *   /etc (a name in a later directory hides the same name in an earlier
 *   one), in name order; the last DefaultLimitMEMLOCK= wins.  Sizes take
 *   K/M/G/T (1024-based); "SOFT:HARD" sets both.
 * - Slurm (slurm.conf(5), 22.05): slurmd reads /etc/slurm/slurm.conf, or in
 *   configless mode the copy it caches (/run/slurm/conf, and
 *   SlurmdSpoolDir/conf-cache, /var/spool/slurmd by default).  Keys are
 *   case-insensitive; "Include FILE" inlines a file (relative to the
 *   including file's directory).  PropagateResourceLimits (default ALL) or
 *   PropagateResourceLimitsExcept name the limits a job takes from the
 *   submitting shell instead of from slurmd.  A running slurmd is found by
 *   SlurmdPidFile (default /run/slurmd.pid), else by name in /proc; its
 *   command line says which slurm.conf it reads (-f FILE; --conf-server:
 *   the configless copy /run/slurm/conf, 22.05 and later).
 * - slurmstepd (src/slurmd/slurmstepd/ulimits.c, 22.05): a task starts
 *   with slurmd's limits (slurmd forks and execs slurmstepd); a propagated
 *   limit replaces the soft one, and one above the hard limit is reduced to
 *   it ("reducing req to max").  slurmd's own limit is its unit's
 *   LimitMEMLOCK= under systemd (not pam_limits: no PAM session starts it).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "fsutil.h"
#include "number.h"
#include "systemd.h"
#include "limits/memlock_job.h"

void memlock_fmt(long long bytes, char *buf, size_t n)
{
	if (bytes == MEMLOCK_UNLIMITED)
		snprintf(buf, n, "unlimited");
	else if (bytes == MEMLOCK_UNSET)
		snprintf(buf, n, "unset");
	else
		snprintf(buf, n, "%lld KiB", bytes / 1024);
}

bool memlock_lt(long long a, long long b)
{
	if (a == MEMLOCK_UNSET || b == MEMLOCK_UNSET || a == MEMLOCK_UNLIMITED)
		return false;
	return b == MEMLOCK_UNLIMITED || a < b;
}

long long memlock_job_min(const struct memlock_job *j)
{
	long long m = MEMLOCK_UNSET;

	if (j->pam_soft != MEMLOCK_UNSET)
		m = j->pam_soft;
	if (j->svc_soft != MEMLOCK_UNSET && (m == MEMLOCK_UNSET || memlock_lt(j->svc_soft, m)))
		m = j->svc_soft;
	return m;
}

const char *memlock_job_user(const struct ctx *c)
{
	const struct spec *s = c->spec;

	for (size_t i = 0; s->ssh.present && i < s->ssh.users.n; i++)
		if (fs_lookup_user(c, s->ssh.users.v[i], NULL, NULL, NULL) == 0)
			return s->ssh.users.v[i];
	return "";
}

struct who {
	const char *name;       /* "" = any user */
	bool known;
	unsigned long uid, gid;
	struct strlist groups;  /* names of the groups it is in */
};

static bool parse_ul(const char *s, unsigned long *ret)
{
	unsigned long long v;

	if (!num_ull(s, 10, ULONG_MAX, &v))
		return false;
	*ret = (unsigned long)v;
	return true;
}

/* "a:b", "a:", ":b" (uid or gid ranges); false when s is not a range. */
static bool in_range(const char *s, unsigned long v, bool *ret_match)
{
	const char *colon = strchr(s, ':');
	char lo[32] = "", hi[32] = "";
	unsigned long a = 0, b = (unsigned long)-1;

	if (!colon || (size_t)(colon - s) >= sizeof(lo) || strlen(colon + 1) >= sizeof(hi))
		return false;
	memcpy(lo, s, (size_t)(colon - s));
	strcpy(hi, colon + 1);
	if ((*lo && !parse_ul(lo, &a)) || (*hi && !parse_ul(hi, &b)))
		return false;
	*ret_match = v >= a && v <= b;
	return true;
}

/* pam_limits' specificity of a domain for w: 0 user, 1 group, 2 '*'; -1 no match. */
static int domain_rank(const struct who *w, const char *dom)
{
	bool m;

	if (strcmp(dom, "*") == 0)
		return 2;
	if (dom[0] == '%')
		return -1;              /* maxlogins domains */
	if (dom[0] == '@') {
		if (w->known && in_range(dom + 1, w->gid, &m))
			return m ? 1 : -1;
		for (size_t i = 0; i < w->groups.n; i++)
			if (strcmp(w->groups.v[i], dom + 1) == 0)
				return 1;
		return -1;
	}
	if (w->known && in_range(dom, w->uid, &m))
		return m ? 0 : -1;
	return *w->name && strcmp(dom, w->name) == 0 ? 0 : -1;
}

/* limits.conf value in KiB -> bytes. */
static bool parse_pam_value(const char *v, long long *ret)
{
	unsigned long kib;

	if (strcmp(v, "unlimited") == 0 || strcmp(v, "infinity") == 0 || strcmp(v, "-1") == 0) {
		*ret = MEMLOCK_UNLIMITED;
		return true;
	}
	if (!parse_ul(v, &kib) || kib > (unsigned long)(LLONG_MAX / 1024))
		return false;
	*ret = (long long)kib * 1024;
	return true;
}

struct pam_acc {
	long long soft, hard;
	int soft_rank, hard_rank;
	char *soft_from, *hard_from;
};

static void pam_file(const struct ctx *c, const char *path, const struct who *w, struct pam_acc *a)
{
	char *text = NULL;
	unsigned lineno = 0;

	if (fs_read(c, path, &text, NULL) < 0)
		return;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n'), *f[4] = { 0 }, *save = NULL;
		int nf = 0, rank;
		long long v;

		lineno++;
		if (nl)
			*nl = '\0';
		line[strcspn(line, "#")] = '\0';
		for (char *t = strtok_r(line, " \t", &save); t && nf < 4; t = strtok_r(NULL, " \t", &save))
			f[nf++] = t;
		line = nl ? nl + 1 : NULL;
		if (nf < 4 || strcasecmp(f[2], "memlock") != 0 || !parse_pam_value(f[3], &v))
			continue;
		rank = domain_rank(w, f[0]);
		if (rank < 0)
			continue;
		bool soft = strcmp(f[1], "soft") == 0 || strcmp(f[1], "-") == 0;
		bool hard = strcmp(f[1], "hard") == 0 || strcmp(f[1], "-") == 0;

		if (soft && rank <= a->soft_rank) {
			a->soft = v;
			a->soft_rank = rank;
			free(a->soft_from);
			a->soft_from = xasprintf("%s:%u", path, lineno);
		}
		if (hard && rank <= a->hard_rank) {
			a->hard = v;
			a->hard_rank = rank;
			free(a->hard_from);
			a->hard_from = xasprintf("%s:%u", path, lineno);
		}
	}
	free(text);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Names in dir ending in ".conf", sorted (C locale). */
static void conf_names(const struct ctx *c, const char *dir, struct strlist *ret)
{
	char *p = ctx_path(c, dir);
	DIR *d = opendir(p);
	struct dirent *de;

	free(p);
	if (!d)
		return;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l > 5 && de->d_name[0] != '.' && strcmp(de->d_name + l - 5, ".conf") == 0)
			strlist_push(ret, de->d_name);
	}
	closedir(d);
	if (ret->n)
		qsort(ret->v, ret->n, sizeof(*ret->v), cmp_str);
}

static void load_groups(const struct ctx *c, struct who *w)
{
	if (*w->name)
		fs_user_groups(c, w->name, w->known, (gid_t)w->gid, &w->groups);
}

/* systemd's size: "infinity", N, N{K,M,G,T}; false when unparsable. */
static bool parse_sd_size(const char *s, long long *ret)
{
	const char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (strcmp(s, "infinity") == 0) {
		*ret = MEMLOCK_UNLIMITED;
		return true;
	}
	if (!num_ull_prefix(s, 10, ULLONG_MAX, &v, &end))
		return false;
	switch (*end) {
	case '\0':
		break;
	case 'K':
		shift = 10;
		break;
	case 'M':
		shift = 20;
		break;
	case 'G':
		shift = 30;
		break;
	case 'T':
		shift = 40;
		break;
	default:
		return false;
	}
	if (*end && end[1])
		return false;
	if (v > (unsigned long long)LLONG_MAX >> shift)
		return false;
	*ret = (long long)(v << shift);
	return true;
}

static void sd_file(const struct ctx *c, const char *path, struct memlock_job *j)
{
	char *text = NULL;
	bool manager = false;
	unsigned lineno = 0;

	if (fs_read(c, path, &text, NULL) < 0)
		return;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');

		lineno++;
		if (nl)
			*nl = '\0';
		line += strspn(line, " \t");
		if (*line == '[') {
			manager = strncmp(line, "[Manager]", 9) == 0;
		} else if (manager && strncmp(line, "DefaultLimitMEMLOCK=", 20) == 0) {
			char *v = line + 20, *colon;
			long long soft, hard;

			v[strcspn(v, " \t\r")] = '\0';
			colon = strchr(v, ':');
			if (colon)
				*colon = '\0';
			if (parse_sd_size(v, &soft) && (!colon ? (hard = soft, true) : parse_sd_size(colon + 1, &hard))) {
				j->svc_soft = soft;
				j->svc_hard = hard;
				snprintf(j->svc_from, sizeof(j->svc_from), "%s:%u", path, lineno);
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
}

static void systemd_default(const struct ctx *c, struct memlock_job *j)
{
	static const char *const dirs[] = { "/usr/lib/systemd/system.conf.d", "/usr/local/lib/systemd/system.conf.d",
					    "/run/systemd/system.conf.d", "/etc/systemd/system.conf.d" };
	struct strlist names = { 0 };

	sd_file(c, "/etc/systemd/system.conf", j);
	for (size_t d = 0; d < 4; d++) {
		struct strlist here = { 0 };

		conf_names(c, dirs[d], &here);
		for (size_t i = 0; i < here.n; i++) {
			bool dup = false;

			for (size_t k = 0; k < names.n && !dup; k++)
				dup = strcmp(names.v[k], here.v[i]) == 0;
			if (!dup)
				strlist_push(&names, here.v[i]);
		}
		strlist_free(&here);
	}
	if (names.n)
		qsort(names.v, names.n, sizeof(*names.v), cmp_str);
	for (size_t i = 0; i < names.n; i++) {
		/* the last directory holding the name wins */
		for (size_t d = 4; d-- > 0;) {
			char *p = xasprintf("%s/%s", dirs[d], names.v[i]);

			if (fs_exists(c, p)) {
				sd_file(c, p, j);
				free(p);
				break;
			}
			free(p);
		}
	}
	strlist_free(&names);
}

void memlock_job_limit(const struct ctx *c, const char *user, struct memlock_job *ret)
{
	struct who w = { .name = user ? user : "" };
	struct pam_acc a = { .soft = MEMLOCK_UNSET, .hard = MEMLOCK_UNSET, .soft_rank = 99, .hard_rank = 99 };
	struct strlist names = { 0 };

	memset(ret, 0, sizeof(*ret));
	snprintf(ret->user, sizeof(ret->user), "%s", w.name);
	if (*w.name) {
		uid_t u;
		gid_t g;

		if (fs_lookup_user(c, w.name, &u, &g, NULL) == 0) {
			w.known = true;
			w.uid = u;
			w.gid = g;
		}
		load_groups(c, &w);
	}
	pam_file(c, "/etc/security/limits.conf", &w, &a);
	conf_names(c, "/etc/security/limits.d", &names);
	for (size_t i = 0; i < names.n; i++) {
		char *p = xasprintf("/etc/security/limits.d/%s", names.v[i]);

		pam_file(c, p, &w, &a);
		free(p);
	}
	strlist_free(&names);
	strlist_free(&w.groups);
	ret->pam_soft = a.soft;
	ret->pam_hard = a.hard;
	snprintf(ret->pam_soft_from, sizeof(ret->pam_soft_from), "%s", a.soft_from ? a.soft_from : "");
	snprintf(ret->pam_hard_from, sizeof(ret->pam_hard_from), "%s", a.hard_from ? a.hard_from : "");
	free(a.soft_from);
	free(a.hard_from);
	ret->svc_soft = ret->svc_hard = MEMLOCK_UNSET;
	systemd_default(c, ret);
}

/* ---- Slurm: what a job gets ---------------------------------------------- */

#define SLURM_INCLUDE_DEPTH 8

struct slurm_acc {
	char prl[160], prl_from[300];           /* PropagateResourceLimits */
	char prle[160], prle_from[300];         /* PropagateResourceLimitsExcept */
	char pidfile[256];                      /* SlurmdPidFile */
	char problem[300];
};

static void slurm_file(const struct ctx *c, const char *path, int depth, struct slurm_acc *a);

static void slurm_include(const struct ctx *c, const char *from, const char *name, int depth,
			  unsigned lineno, struct slurm_acc *a)
{
	char *p;

	if (depth >= SLURM_INCLUDE_DEPTH) {
		if (!a->problem[0])
			snprintf(a->problem, sizeof(a->problem), "%s:%u: Include nested more than %d deep, not followed",
				 from, lineno, SLURM_INCLUDE_DEPTH);
		return;
	}
	if (name[0] == '/') {
		p = xstrdup(name);
	} else {
		const char *slash = strrchr(from, '/');

		p = xasprintf("%.*s/%s", slash ? (int)(slash - from) : 1, slash ? from : "/", name);
	}
	if (!fs_exists(c, p)) {
		if (!a->problem[0])
			snprintf(a->problem, sizeof(a->problem), "%s:%u: Include %s: not found (not read)",
				 from, lineno, p);
	} else {
		slurm_file(c, p, depth + 1, a);
	}
	free(p);
}

static void slurm_file(const struct ctx *c, const char *path, int depth, struct slurm_acc *a)
{
	char *text = NULL;
	unsigned lineno = 0;

	if (fs_read(c, path, &text, NULL) < 0) {
		if (!a->problem[0])
			snprintf(a->problem, sizeof(a->problem), "%s: cannot be read", path);
		return;
	}
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n'), *save = NULL, *tok;

		lineno++;
		if (nl)
			*nl = '\0';
		line[strcspn(line, "#\r")] = '\0';
		tok = strtok_r(line, " \t", &save);
		if (tok && strcasecmp(tok, "include") == 0) {
			char *name = strtok_r(NULL, " \t", &save);

			if (name)
				slurm_include(c, path, name, depth, lineno, a);
			tok = NULL;
		}
		/* Several Key=Value pairs may share a line; "Key = Value" is read too. */
		for (; tok; tok = strtok_r(NULL, " \t", &save)) {
			char *eq = strchr(tok, '='), *val;

			if (!eq) {
				char *next = save ? save + strspn(save, " \t") : NULL;

				if (!next || *next != '=')
					continue;       /* a bare word */
				save = next + 1;
				val = strtok_r(NULL, " \t", &save);
			} else {
				*eq = '\0';
				val = eq[1] ? eq + 1 : strtok_r(NULL, " \t", &save);
			}
			if (!val)
				break;
			if (strcasecmp(tok, "PropagateResourceLimits") == 0) {
				snprintf(a->prl, sizeof(a->prl), "%s", val);
				snprintf(a->prl_from, sizeof(a->prl_from), "%s:%u", path, lineno);
			} else if (strcasecmp(tok, "PropagateResourceLimitsExcept") == 0) {
				snprintf(a->prle, sizeof(a->prle), "%s", val);
				snprintf(a->prle_from, sizeof(a->prle_from), "%s:%u", path, lineno);
			} else if (strcasecmp(tok, "SlurmdPidFile") == 0 && val[0] == '/') {
				snprintf(a->pidfile, sizeof(a->pidfile), "%s", val);
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
}

/* Is name (case-insensitive) in the comma list? */
static bool list_has(const char *list, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = list; *p;) {
		size_t l = strcspn(p, ",");

		if (l == n && strncasecmp(p, name, n) == 0)
			return true;
		p += l + (p[l] ? 1 : 0);
	}
	return false;
}

/*
 * slurmd's own LimitMEMLOCK=: the transient unit hpcinit's slurm step runs
 * it in (systemd-run --property=LimitMEMLOCK=infinity, modules/slurm) when
 * it runs, else that step's limit when the spec has a slurm section and
 * systemd runs (without systemd the step starts slurmd itself: no unit),
 * else slurmd.service (the unit first found, then its drop-ins).  What the
 * unit would give; the running slurmd's own limit is read from /proc.
 */
static void slurmd_unit(const struct ctx *c, struct memlock_slurm *ret)
{
	static const char *const dirs[] = { "/etc/systemd/system", "/run/systemd/system", "/usr/lib/systemd/system",
					    "/lib/systemd/system" };
	static const char transient[] = "/run/systemd/transient/hpcinit-slurmd.service";
	struct strlist files = { 0 };

	if (fs_exists(c, transient)) {
		strlist_push(&files, transient);
		goto read;
	}
	if (c->spec && c->spec->slurm.present && systemd_booted(c)) {
		ret->slurmd_soft = MEMLOCK_UNLIMITED;
		snprintf(ret->slurmd_from, sizeof(ret->slurmd_from), "the slurm step's unit hpcinit-slurmd");
		return;
	}
	for (size_t d = 0; d < 4; d++) {
		char *p = xasprintf("%s/slurmd.service", dirs[d]);

		if (fs_exists(c, p)) {
			strlist_push(&files, p);
			free(p);
			break;
		}
		free(p);
	}
	/* drop-ins: /usr/lib, /run, /etc order, a name in a later one hides the same name */
	for (size_t d = 4; d-- > 0;) {
		struct strlist here = { 0 };
		char *dir = xasprintf("%s/slurmd.service.d", dirs[d]);

		conf_names(c, dir, &here);
		for (size_t i = 0; i < here.n; i++)
			strlist_push_take(&files, xasprintf("%s/%s", dir, here.v[i]));
		strlist_free(&here);
		free(dir);
	}
read:
	for (size_t i = 0; i < files.n; i++) {
		char *text = NULL;
		unsigned lineno = 0;

		if (fs_read(c, files.v[i], &text, NULL) < 0)
			continue;
		for (char *line = text; line && *line;) {
			char *nl = strchr(line, '\n');

			lineno++;
			if (nl)
				*nl = '\0';
			line += strspn(line, " \t");
			if (strncmp(line, "LimitMEMLOCK=", 13) == 0) {
				char *v = line + 13, *colon;
				long long soft;

				v[strcspn(v, " \t\r")] = '\0';
				colon = strchr(v, ':');
				if (colon)
					*colon = '\0';
				if (parse_sd_size(v, &soft)) {
					ret->slurmd_soft = soft;
					snprintf(ret->slurmd_from, sizeof(ret->slurmd_from), "%s:%u", files.v[i], lineno);
				}
			}
			line = nl ? nl + 1 : NULL;
		}
		free(text);
	}
	strlist_free(&files);
}

int memlock_proc_read(const struct ctx *c, long pid, long long *soft, long long *hard)
{
	char *path = xasprintf("/proc/%ld/limits", pid), *text = NULL;
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
			const char *p = line + 17;
			long long sv = MEMLOCK_UNLIMITED, hv = MEMLOCK_UNLIMITED;

			/* each a number of bytes or "unlimited"; anything else: the limits are not known */
			if (num_word_field(&p, s1, sizeof(s1)) && num_word_field(&p, s2, sizeof(s2)) &&
			    (strcmp(s1, "unlimited") == 0 || num_ll(s1, 0, LLONG_MAX, &sv)) &&
			    (strcmp(s2, "unlimited") == 0 || num_ll(s2, 0, LLONG_MAX, &hv))) {
				*soft = sv;
				*hard = hv;
				r = 0;
			}
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return r;
}

/*
 * The slurm.conf the running slurmd reads, from its command line: -f FILE,
 * or with --conf-server the configless copy (when there is one); NULL
 * when it says neither.  Malloc'd.
 */
static char *slurmd_conf(const struct ctx *c, long pid)
{
	char *path = xasprintf("/proc/%ld/cmdline", pid), *text = NULL, *ret = NULL;
	size_t n = 0;

	if (fs_read(c, path, &text, &n) == 0) {
		for (size_t i = 0; i < n && !ret; i += strlen(text + i) + 1) {
			const char *arg = text + i;

			if (strcmp(arg, "-f") == 0 && i + 3 < n && text[i + 3] == '/')
				ret = xstrdup(text + i + 3);
			else if (strncmp(arg, "-f/", 3) == 0)
				ret = xstrdup(arg + 2);
			else if (strcmp(arg, "--conf-server") == 0 || strncmp(arg, "--conf-server=", 14) == 0)
				ret = xstrdup("/run/slurm/conf/slurm.conf");
		}
	}
	free(text);
	free(path);
	if (ret && !fs_exists(c, ret)) {
		free(ret);
		ret = NULL;
	}
	return ret;
}

static void slurm_settings(const struct ctx *c, struct memlock_slurm *ret, struct slurm_acc *a)
{
	memset(a, 0, sizeof(*a));
	slurm_file(c, ret->conf, 0, a);
	if (a->prl[0] && a->prle[0])
		snprintf(ret->problem, sizeof(ret->problem), "both PropagateResourceLimits (%s) and "
			 "PropagateResourceLimitsExcept (%s) are set: Slurm accepts only one", a->prl_from, a->prle_from);
	else
		snprintf(ret->problem, sizeof(ret->problem), "%s", a->problem);
	if (a->prle[0]) {
		/* Except: ALL propagates nothing, NONE everything */
		ret->propagates = !list_has(a->prle, "ALL") && !list_has(a->prle, "MEMLOCK");
		snprintf(ret->setting, sizeof(ret->setting), "PropagateResourceLimitsExcept=%.120s", a->prle);
		snprintf(ret->from, sizeof(ret->from), "%s", a->prle_from);
	} else if (a->prl[0]) {
		ret->propagates = !list_has(a->prl, "NONE") && (list_has(a->prl, "ALL") || list_has(a->prl, "MEMLOCK"));
		snprintf(ret->setting, sizeof(ret->setting), "PropagateResourceLimits=%.120s", a->prl);
		snprintf(ret->from, sizeof(ret->from), "%s", a->prl_from);
	} else {
		ret->propagates = true;
		snprintf(ret->setting, sizeof(ret->setting), "PropagateResourceLimits=ALL (Slurm's default)");
		ret->from[0] = '\0';
	}
}

void memlock_slurm_read(const struct ctx *c, struct memlock_slurm *ret)
{
	static const char *const confs[] = { "/etc/slurm/slurm.conf", "/run/slurm/conf/slurm.conf",
					     "/var/spool/slurmd/conf-cache/slurm.conf" };
	struct slurm_acc a;
	char *own;

	memset(ret, 0, sizeof(*ret));
	ret->slurmd_soft = MEMLOCK_UNSET;
	for (size_t i = 0; i < sizeof(confs) / sizeof(confs[0]) && !ret->present; i++)
		if (fs_exists(c, confs[i])) {
			ret->present = true;
			snprintf(ret->conf, sizeof(ret->conf), "%s", confs[i]);
		}
	if (!ret->present)
		return;
	slurm_settings(c, ret, &a);
	snprintf(ret->pidfile, sizeof(ret->pidfile), "%s", a.pidfile[0] ? a.pidfile : "/run/slurmd.pid");
	ret->pid = (long)daemon_pid(c, ret->pidfile, "slurmd", DAEMON_SCAN, ret->pid_how, sizeof(ret->pid_how));
	if (ret->pid && (own = slurmd_conf(c, ret->pid)) != NULL) {
		/* the file the running slurmd reads (configless: its cached copy) */
		if (strcmp(own, ret->conf) != 0) {
			snprintf(ret->conf, sizeof(ret->conf), "%s", own);
			slurm_settings(c, ret, &a);
		}
		free(own);
	}
	if (ret->pid)
		ret->live = memlock_proc_read(c, ret->pid, &ret->live_soft, &ret->live_hard) == 0;
	slurmd_unit(c, ret);
}

long long memlock_slurm_job(const struct memlock_slurm *sl, long long submit)
{
	if (!sl->live)
		return MEMLOCK_UNSET;
	if (!sl->propagates)
		return sl->live_soft;
	if (submit == MEMLOCK_UNSET)
		return MEMLOCK_UNSET;
	return memlock_lt(sl->live_hard, submit) ? sl->live_hard : submit;
}
