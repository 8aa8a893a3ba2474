/* SPDX-License-Identifier: MIT */
/*
 * kernel step, Debian/Ubuntu: the dpkg database, and the hold: dpkg
 * selections (what apt-mark hold writes) on the running kernel's packages and
 * every metapackage that pulls in a kernel image, plus an unattended-upgrades
 * blacklist.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "kernel.h"
#include "proc.h"

#define APT_HOLD_PATH "/etc/apt/apt.conf.d/51hpcinit-kernel-hold"
/* The packages hpcinit put on hold, one a line: kernel.hold: false releases these and no others. */
#define HOLD_LEDGER_PATH "/var/lib/hpcinit/kernel-holds"

/* ---- dpkg status ------------------------------------------------------ */

struct dpkg_pkg {
	char *name;
	char *want;             /* install, hold, deinstall, purge */
	bool installed;         /* third word of Status: is "installed" */
	char *depends;          /* Depends: and Pre-Depends:, joined */
};

struct dpkg_db {
	struct dpkg_pkg *v;
	size_t n;
	void *upd;              /* apt_update.c's answer, this run */
};

static void dpkg_db_free(struct dpkg_db *db)
{
	for (size_t i = 0; i < db->n; i++) {
		free(db->v[i].name);
		free(db->v[i].want);
		free(db->v[i].depends);
	}
	free(db->v);
	db->v = NULL;
	db->n = 0;
	apt_upd_free(db->upd);
	db->upd = NULL;
}

/* Parse /var/lib/dpkg/status (deb822 stanzas; continuation lines start with a blank). */
static void dpkg_db_parse(const char *text, struct dpkg_db *db)
{
	struct dpkg_pkg cur = { 0 };
	const char *p = text;
	bool in_depends = false;

	memset(db, 0, sizeof(*db));
	for (;;) {
		const char *nl = p ? strchr(p, '\n') : NULL;
		size_t ll = p ? (nl ? (size_t)(nl - p) : strlen(p)) : 0;
		bool end = !p || !*p;

		if (end || ll == 0) {
			if (cur.name) {
				db->v = xrealloc(db->v, (db->n + 1) * sizeof(*db->v));
				db->v[db->n++] = cur;
			} else {
				free(cur.want);
				free(cur.depends);
			}
			memset(&cur, 0, sizeof(cur));
			if (end)
				break;
		} else if ((p[0] == ' ' || p[0] == '\t') && in_depends) {
			/* A folded Depends: line continues the field. */
			char *add = xstrndup(p, ll);
			char *joined = xasprintf("%s %s", cur.depends ? cur.depends : "", add);

			free(cur.depends);
			free(add);
			cur.depends = joined;
		} else if (strncmp(p, "Package:", 8) == 0) {
			const char *v = p + 8;

			while (*v == ' ')
				v++;
			free(cur.name);
			cur.name = xstrndup(v, ll - (size_t)(v - p));
		} else if (strncmp(p, "Status:", 7) == 0) {
			char *s = xstrndup(p + 7, ll - 7), *save = NULL;
			char *w1 = strtok_r(s, " ", &save);
			char *w2 = w1 ? strtok_r(NULL, " ", &save) : NULL;
			char *w3 = w2 ? strtok_r(NULL, " ", &save) : NULL;

			free(cur.want);
			cur.want = xstrdup(w1 ? w1 : "");
			cur.installed = w3 && strcmp(w3, "installed") == 0;
			free(s);
		} else if (strncmp(p, "Depends:", 8) == 0 || strncmp(p, "Pre-Depends:", 12) == 0) {
			const char *v = strchr(p, ':') + 1;
			char *add = xstrndup(v, ll - (size_t)(v - p));
			char *joined = xasprintf("%s%s%s", cur.depends ? cur.depends : "",
						 cur.depends ? "," : "", add);

			free(cur.depends);
			free(add);
			cur.depends = joined;
		}
		if (p && *p && p[0] != ' ' && p[0] != '\t')
			in_depends = strncmp(p, "Depends:", 8) == 0 || strncmp(p, "Pre-Depends:", 12) == 0;
		p = nl ? nl + 1 : NULL;
	}
}

/* Does a Depends: value name a kernel image package (linux-image-...)? */
static bool depends_on_image(const char *deps)
{
	for (const char *p = deps; p && *p;) {
		while (*p == ' ' || *p == ',' || *p == '|')
			p++;
		if (strncmp(p, "linux-image-", 12) == 0)
			return true;
		p += strcspn(p, ",|");
	}
	return false;
}

/*
 * What to hold on Debian/Ubuntu: the running kernel's own packages, and
 * every installed metapackage that pulls in a kernel image (linux-azure,
 * linux-image-azure, linux-image-amd64, ...), because upgrading those is
 * what installs the next kernel.
 */
static bool own_package(const char *name, const char *rel)
{
	const char *own[] = { "linux-image-", "linux-image-unsigned-", "linux-modules-",
			      "linux-modules-extra-" };

	for (size_t k = 0; k < sizeof(own) / sizeof(own[0]); k++) {
		size_t pl = strlen(own[k]);

		if (strncmp(name, own[k], pl) == 0 && strcmp(name + pl, rel) == 0)
			return true;
	}
	return false;
}

/* Installed packages that pull in a kernel image and are no kernel's own (linux-image-amd64, linux-azure). */
static void dpkg_metas(const struct dpkg_db *db, struct strlist *out)
{
	for (size_t i = 0; db && i < db->n; i++) {
		const struct dpkg_pkg *p = &db->v[i];
		const char *n = p->name;

		if (strncmp(n, "linux-image-unsigned-", 21) == 0)
			n += 21;
		else if (strncmp(n, "linux-image-", 12) == 0 || strncmp(n, "linux-modules-", 14) == 0)
			n += strncmp(n, "linux-image-", 12) == 0 ? 12 : 14;
		if (n != p->name && isdigit((unsigned char)*n))
			continue;       /* one kernel's own package */
		if (p->installed && p->depends && depends_on_image(p->depends) && !strlist_has(out, p->name))
			strlist_push(out, p->name);
	}
}

/* Let-in (kernel.updates: when_modules): the running kernel's own packages only, no metapackage. */
static void dpkg_hold_set(const struct dpkg_db *db, const char *rel, struct strlist *out, bool metas)
{
	for (size_t i = 0; i < db->n; i++) {
		const struct dpkg_pkg *p = &db->v[i];
		bool take;

		if (!p->installed)
			continue;
		take = own_package(p->name, rel);
		if (!take && metas && p->depends && depends_on_image(p->depends))
			take = true;
		if (take && !strlist_has(out, p->name))
			strlist_push(out, p->name);
	}
}

static const struct dpkg_pkg *dpkg_find(const struct dpkg_db *db, const char *name)
{
	for (size_t i = 0; i < db->n; i++)
		if (strcmp(db->v[i].name, name) == 0)
			return &db->v[i];
	return NULL;
}

/* ---- the hold --------------------------------------------------------- */

static char *regex_escape(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *s; s++) {
		if (strchr(".+*?()[]{}|^$\\", *s))
			sb_append(&sb, "\\");
		sb_appendn(&sb, s, 1);
	}
	return sb_steal(&sb);
}

static char *render_apt_blacklist(const char *cluster, const char *rel, const struct strlist *held,
				  const struct kernel_update *u)
{
	struct strbuf sb = STRBUF_INIT;

	if (u)
		sb_printf(&sb, "// Managed by hpcinit for cluster %s: the running kernel %s is held, and\n"
			  "// kernel %s may come in (kernel.updates: when_modules; every module of\n"
			  "// kernel.modules exists for it).  Keep unattended-upgrades away from the\n"
			  "// running kernel's own packages only.\n"
			  "Unattended-Upgrade::Package-Blacklist {\n", cluster, rel, u->rel);
	else
		sb_printf(&sb, "// Managed by hpcinit for cluster %s: the running kernel %s is held\n"
			  "// because the RDMA drivers are built for it.  Keep unattended-upgrades away\n"
			  "// from kernels; upgrade them by hand, then reboot and re-run hpcinit.\n"
			  "Unattended-Upgrade::Package-Blacklist {\n"
			  "\t\"linux-image-\";\n\t\"linux-modules-\";\n\t\"linux-headers-\";\n",
			  cluster, rel);
	for (size_t i = 0; i < held->n; i++) {
		char *e;

		if (!u && (strncmp(held->v[i], "linux-image-", 12) == 0 ||
			   strncmp(held->v[i], "linux-modules-", 14) == 0))
			continue;
		e = regex_escape(held->v[i]);
		sb_printf(&sb, "\t\"%s$\";\n", e);
		free(e);
	}
	sb_append(&sb, "};\n");
	return sb_steal(&sb);
}

/* Run dpkg --set-selections (pkg word) against the root's admindir; retry while dpkg is locked. */
static int dpkg_set_selection(struct ctx *c, struct report *r, const struct strlist *pkgs, const char *word)
{
	char *admindir = ctx_path(c, "/var/lib/dpkg");
	char *opt = xasprintf("--admindir=%s", admindir);
	const char *argv[] = { "dpkg", opt, "--set-selections", NULL };
	struct strbuf in = STRBUF_INIT;
	uint64_t delay = 0;
	int ret;

	for (size_t i = 0; i < pkgs->n; i++)
		sb_printf(&in, "%s %s\n", pkgs->v[i], word);
	for (;;) {
		struct proc_result pr;
		struct sigaction ign = { .sa_handler = SIG_IGN }, old;

		/*
		 * dpkg exits without reading its input when the lock is taken: the
		 * write must fail with EPIPE, not kill the agent.
		 */
		sigemptyset(&ign.sa_mask);
		sigaction(SIGPIPE, &ign, &old);
		ret = proc_run(argv, NULL, sb_str(&in), DPKG_TIMEOUT_MS, &pr);
		sigaction(SIGPIPE, &old, NULL);
		if (ret < 0) {
			report_detail(r, "cannot run dpkg: %s", strerror(-ret));
			break;
		}
		if (pr.exit_code == 0) {
			proc_result_free(&pr);
			break;
		}
		/* apt or unattended-upgrades at boot holds the dpkg lock: wait for it. */
		if (strstr(pr.err, "lock") && ctx_backoff(c, &delay, 5000)) {
			proc_result_free(&pr);
			continue;
		}
		const char *line = strstr(pr.err, "dpkg: error");

		if (!line)
			line = pr.err;
		report_detail(r, "dpkg --set-selections failed (exit %d): %.*s", pr.exit_code,
			      (int)strcspn(line, "\n"), line);
		proc_result_free(&pr);
		ret = -EIO;
		break;
	}
	sb_free(&in);
	free(opt);
	free(admindir);
	return ret;
}

static void ledger_read(const struct ctx *c, struct strlist *out)
{
	char *text = NULL;

	if (fs_read(c, HOLD_LEDGER_PATH, &text, NULL) < 0)
		return;
	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save))
		if (*l != '#' && !strlist_has(out, l))
			strlist_push(out, l);
	free(text);
}

/* Record pkgs as hpcinit's holds (add), or forget them (!add). */
static void ledger_update(struct ctx *c, struct report *r, const struct strlist *pkgs, bool add)
{
	struct strlist old = { 0 }, all = { 0 };
	struct strbuf sb = STRBUF_INIT;
	struct report scratch;

	ledger_read(c, &old);
	for (size_t i = 0; i < old.n; i++)
		if (add || !strlist_has(pkgs, old.v[i]))
			strlist_push(&all, old.v[i]);
	for (size_t i = 0; add && i < pkgs->n; i++)
		if (!strlist_has(&all, pkgs->v[i]))
			strlist_push(&all, pkgs->v[i]);
	strlist_free(&old);
	sb_append(&sb, "# Packages hpcinit put on hold (dpkg selections); kernel.hold: false releases these.\n");
	for (size_t i = 0; i < all.n; i++)
		sb_printf(&sb, "%s\n", all.v[i]);
	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/var/lib/hpcinit", 0755, 0, 0) < 0 ||
	    fs_write(c, &scratch, HOLD_LEDGER_PATH, sb_str(&sb), sb.len, 0644, 0, 0) < 0)
		report_finding(r, ST_DEGRADED, "kernel.hold.ledger",
			       "cannot record the held packages in %s: kernel.hold: false will not know them",
			       HOLD_LEDGER_PATH);
	report_free(&scratch);
	sb_free(&sb);
	strlist_free(&all);
}

static int release_debian(struct ctx *c, struct report *r, const char *rel, const void *state)
{
	const struct dpkg_db *db = state;
	struct strlist ours = { 0 }, todo = { 0 };
	int ret = 0;

	ledger_read(c, &ours);
	for (size_t i = 0; db && i < ours.n; i++) {
		const struct dpkg_pkg *p = dpkg_find(db, ours.v[i]);

		if (p && p->want && strcmp(p->want, "hold") == 0)
			strlist_push(&todo, ours.v[i]);
	}
	if (todo.n) {
		struct strbuf names = STRBUF_INIT;

		for (size_t i = 0; i < todo.n; i++)
			sb_printf(&names, "%s%s", i ? " " : "", todo.v[i]);
		if (ctx_may_write(c)) {
			ret = dpkg_set_selection(c, r, &todo, "install");
			if (ret == 0) {
				report_changed(r, "/var/lib/dpkg/status");
				kernel_released(c, r, "dpkg selections back to install: %s", sb_str(&names));
			} else {
				report_finding(r, ST_FAILED, "kernel.hold.dpkg-failed",
					       "could not release %s with dpkg", sb_str(&names));
			}
		} else {
			report_changed(r, "/var/lib/dpkg/status");
			kernel_released(c, r, "dpkg selections on hold: %s", sb_str(&names));
		}
		sb_free(&names);
	}
	if (ret == 0 && ours.n && fs_remove(c, r, HOLD_LEDGER_PATH) < 0)
		ret = 0;
	if (fs_exists(c, APT_HOLD_PATH) && fs_remove(c, r, APT_HOLD_PATH) > 0)
		kernel_released(c, r, "the unattended-upgrades blacklist %s", APT_HOLD_PATH);
	/* Holds hpcinit did not make: named, never touched. */
	for (size_t i = 0; db && i < db->n; i++) {
		const struct dpkg_pkg *p = &db->v[i];

		if (p->want && strcmp(p->want, "hold") == 0 && strncmp(p->name, "linux-", 6) == 0 &&
		    !strlist_has(&ours, p->name))
			report_finding(r, ST_OK, "kernel.hold.foreign",
				       "left alone: %s is on hold (not by hpcinit)", p->name);
	}
	strlist_free(&todo);
	strlist_free(&ours);
	return 0;
}

/* The hold; with u (a kernel let in), on the running kernel's own packages only. */
static int hold_apply(struct ctx *c, struct report *r, const char *rel, const void *state,
		      const struct kernel_update *u)
{
	const struct dpkg_db *db = state;
	struct strlist held = { 0 }, todo = { 0 };
	char *text;
	int ret = 0;

	if (!db) {
		report_finding(r, ST_FAILED, "kernel.hold.no-dpkg-status",
			       "cannot hold the kernel: no dpkg status at /var/lib/dpkg/status");
		return 0;
	}
	dpkg_hold_set(db, rel, &held, !u);
	if (held.n == 0) {
		report_finding(r, ST_FAILED, "kernel.hold.no-package",
			       "cannot hold kernel %s: no installed package provides it "
			       "(looked for linux-image-%s and kernel metapackages)", rel, rel);
		return 0;
	}
	for (size_t i = 0; i < held.n; i++) {
		const struct dpkg_pkg *p = dpkg_find(db, held.v[i]);

		if (!p->want || strcmp(p->want, "hold") != 0)
			strlist_push(&todo, held.v[i]);
	}
	if (todo.n) {
		struct strbuf names = STRBUF_INIT;

		for (size_t i = 0; i < todo.n; i++)
			sb_printf(&names, "%s%s", i ? " " : "", todo.v[i]);
		if (ctx_may_write(c)) {
			ret = dpkg_set_selection(c, r, &todo, "hold");
			if (ret == 0)
				ledger_update(c, r, &todo, true);
			if (ret == 0) {
				report_finding(r, ST_OK, "kernel.hold.ok",
					       "held with dpkg selections: %s", sb_str(&names));
				report_changed(r, "/var/lib/dpkg/status");
				report_raise(r, ST_CHANGED);
			} else {
				report_finding(r, ST_FAILED, "kernel.hold.dpkg-failed",
					       "could not hold %s with dpkg", sb_str(&names));
				ret = 0;
			}
		} else {
			report_detail(r, "/var/lib/dpkg/status: not held: %s (apply runs dpkg --set-selections, "
				      "as apt-mark hold does)", sb_str(&names));
			report_changed(r, "/var/lib/dpkg/status");
			report_finding(r, ST_CHANGED, "kernel.hold.missing",
				       "kernel packages not held: %s", sb_str(&names));
		}
		sb_free(&names);
	} else {
		report_finding(r, ST_OK, "kernel.hold.ok",
			       "held (dpkg selections): %s", held.v[0]);
		for (size_t i = 1; i < held.n; i++)
			report_finding(r, ST_OK, "kernel.hold.ok",
				       "held (dpkg selections): %s", held.v[i]);
	}
	if (fs_exists(c, "/etc/apt/apt.conf.d") || ctx_may_write(c)) {
		text = render_apt_blacklist(c->spec->cluster.name, rel, &held, u);
		ret = fs_mkdir_p(c, r, "/etc/apt/apt.conf.d", 0755, 0, 0);
		if (ret >= 0)
			ret = fs_write(c, r, APT_HOLD_PATH, text, strlen(text), 0644, 0, 0);
		if (ret > 0 && !ctx_may_write(c))
			report_finding(r, ST_CHANGED, "kernel.hold.unattended-upgrades",
				       "unattended-upgrades may replace the kernel (%s)", APT_HOLD_PATH);
		free(text);
		ret = ret < 0 ? ret : 0;
	}
	strlist_free(&todo);
	strlist_free(&held);
	return ret;
}

static int hold_debian(struct ctx *c, struct report *r, const char *rel, const void *state)
{
	return hold_apply(c, r, rel, state, NULL);
}

/*
 * kernel.updates: when_modules, u passed: the metapackages hpcinit held
 * (its ledger) go back to install, so that apt's next upgrade (apt-get
 * dist-upgrade, unattended-upgrades) installs u; the running kernel's own
 * packages stay held.  A hold made by others is named and left.
 */
static int let_in_debian(struct ctx *c, struct report *r, const char *rel, const struct kernel_update *u,
			 const void *state)
{
	const struct dpkg_db *db = state;
	struct strlist metas = { 0 }, ours = { 0 }, todo = { 0 };
	struct strbuf names = STRBUF_INIT;
	int ret;

	ret = hold_apply(c, r, rel, state, u);
	if (ret < 0 || !db)
		return ret;
	dpkg_metas(db, &metas);
	ledger_read(c, &ours);
	for (size_t i = 0; i < metas.n; i++) {
		const struct dpkg_pkg *p = dpkg_find(db, metas.v[i]);

		if (!p->want || strcmp(p->want, "hold") != 0)
			continue;
		if (strlist_has(&ours, p->name)) {
			strlist_push(&todo, p->name);
			sb_printf(&names, "%s%s", names.len ? " " : "", p->name);
		} else {
			report_finding(r, ST_OK, "kernel.hold.foreign", "left alone: %s is on hold (not by "
				       "hpcinit): it keeps kernel %s out", p->name, u->rel);
		}
	}
	if (todo.n && ctx_may_write(c)) {
		ret = dpkg_set_selection(c, r, &todo, "install");
		if (ret == 0) {
			ledger_update(c, r, &todo, false);
			report_changed(r, "/var/lib/dpkg/status");
			report_finding(r, ST_CHANGED, "kernel.update.let-in", "kernel %s let in: %s back to install "
				       "(dpkg selections); apt's next upgrade installs it, the running kernel's "
				       "packages stay held", u->rel, sb_str(&names));
		} else {
			report_finding(r, ST_FAILED, "kernel.hold.dpkg-failed", "could not release %s with dpkg",
				       sb_str(&names));
		}
	} else if (todo.n) {
		report_changed(r, "/var/lib/dpkg/status");
		report_finding(r, ST_CHANGED, "kernel.update.let-in", "kernel %s may come in, but hpcinit's "
			       "hold on %s keeps it out (apply releases it)", u->rel, sb_str(&names));
	} else {
		report_finding(r, ST_OK, "kernel.update.let-in", "kernel %s may come in: hpcinit holds no "
			       "kernel metapackage", u->rel);
	}
	sb_free(&names);
	strlist_free(&todo);
	strlist_free(&ours);
	strlist_free(&metas);
	return 0;
}

static bool release_listed(const char *rel, const void *arg)
{
	return strlist_has(arg, rel);
}

static void dpkg_installed(const void *state, struct strlist *out);

static int newest_debian(struct ctx *c, struct report *r, const void *state, struct kernel_update *ret)
{
	const struct dpkg_db *db = state;
	struct strlist metas = { 0 }, have = { 0 };
	char running[KREL_MAX];
	const char *src;
	int rc;

	if (!db)
		return -ENOENT;
	rc = running_release(c, running, sizeof(running), &src);
	if (rc < 0)
		return rc;
	dpkg_metas(db, &metas);
	installed_kernels(c, &have);
	dpkg_installed(db, &have);
	rc = apt_newest(c, r, running, &metas, release_listed, &have, db->upd, ret);
	strlist_free(&have);
	strlist_free(&metas);
	return rc;
}

static int update_modules_debian(struct ctx *c, struct report *r, const struct kernel_update *u,
				 const void *state, struct kmod *mods, size_t n)
{
	const struct dpkg_db *db = state;

	return apt_update_modules(c, r, u, db ? db->upd : NULL, mods, n);
}

/* linux-image-<rel> packages dpkg has installed (the boot loader may pick them). */
static void dpkg_installed(const void *state, struct strlist *out)
{
	const struct dpkg_db *db = state;

	for (size_t i = 0; db && i < db->n; i++) {
		const char *n = db->v[i].name;

		if (!db->v[i].installed || strncmp(n, "linux-image-", 12) != 0)
			continue;
		size_t len;

		n += 12;
		if (strncmp(n, "unsigned-", 9) == 0)
			n += 9;
		len = strlen(n);
		/* linux-image-<rel>-dbg (Debian) and -dbgsym hold symbols, not a kernel. */
		if ((len > 4 && strcmp(n + len - 4, "-dbg") == 0) ||
		    (len > 7 && strcmp(n + len - 7, "-dbgsym") == 0))
			continue;
		if (isdigit((unsigned char)n[0]))
			add_release(out, n);
	}
}

/* Read /var/lib/dpkg/status once; no database is not an error here (the hold says so). */
static int dpkg_open(const struct ctx *c, void **ret_db)
{
	struct dpkg_db *db;
	char *text = NULL;

	*ret_db = NULL;
	if (fs_read(c, "/var/lib/dpkg/status", &text, NULL) < 0)
		return 0;
	db = xcalloc(1, sizeof(*db));
	dpkg_db_parse(text, db);
	db->upd = apt_upd_new();
	free(text);
	*ret_db = db;
	return 0;
}

static void dpkg_close(void *state)
{
	struct dpkg_db *db = state;

	if (!db)
		return;
	dpkg_db_free(db);
	free(db);
}

const struct kernel_pm kernel_pm_apt = {
	.release = release_debian,
	.family = DISTRO_DEBIAN,
	.name = "apt/dpkg",
	.db_open = dpkg_open,
	.db_close = dpkg_close,
	.installed = dpkg_installed,
	.hold = hold_debian,
	.newest = newest_debian,
	.update_modules = update_modules_debian,
	.let_through = let_in_debian,
};
