/* SPDX-License-Identifier: MIT */
/*
 * kernel: RDMA drivers (DKMS OFED, or the distro's) are built for one
 * kernel.  check verifies that the running kernel is the expected one, that
 * the listed modules exist for it and are loaded, that its packages are held,
 * and whether a newer kernel is installed that the next reboot would boot.
 * apply holds the running kernel with the distro's own mechanism, one file
 * a package-manager family (pm_*.c, behind struct kernel_pm):
 *   Debian/Ubuntu   dpkg selections (what apt-mark hold writes), plus an
 *                   unattended-upgrades blacklist
 *   RHEL family     exclude=kernel* in [main] of dnf.conf (yum.conf)
 *   SLES/openSUSE   a package lock in /etc/zypp/locks
 *   Azure Linux     /etc/tdnf/locks.d/hpcinit-kernel.conf (exact names:
 *                   tdnf locks do not take wildcards)
 * With the hold on, kernel.updates: a newer kernel the family offers is
 * reported with whether every kernel.modules exists for it, and with
 * when_modules let in (the family's let_through) only when they all do.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "kernel.h"

/* ---- package managers -------------------------------------------------- */

/* The families, one file each (pm_*.c). */
static const struct kernel_pm *const kernel_pms[] = {
	&kernel_pm_apt, &kernel_pm_dnf, &kernel_pm_zypper, &kernel_pm_tdnf,
};

static const struct kernel_pm *pm_for(enum distro family)
{
	for (size_t i = 0; i < sizeof(kernel_pms) / sizeof(kernel_pms[0]); i++)
		if (kernel_pms[i]->family == family)
			return kernel_pms[i];
	return NULL;
}

/* A family file older than a hook leaves it NULL: the default in pm.c. */
static int pm_newest(const struct kernel_pm *pm, struct ctx *c, struct report *r, const void *db,
		     struct kernel_update *u)
{
	return (pm->newest ? pm->newest : kernel_pm_no_newest)(c, r, db, u);
}

static int pm_update_modules(const struct kernel_pm *pm, struct ctx *c, struct report *r,
			     const struct kernel_update *u, const void *db, struct kmod *mods, size_t n)
{
	return (pm->update_modules ? pm->update_modules : kernel_pm_no_update_modules)(c, r, u, db, mods, n);
}

static int pm_let_through(const struct kernel_pm *pm, struct ctx *c, struct report *r, const char *rel,
			  const struct kernel_update *u, const void *db)
{
	return (pm->let_through ? pm->let_through : kernel_pm_no_let_through)(c, r, rel, u, db);
}

/* ---- kernel.updates ------------------------------------------------------ */

/*
 * Where kernel.modules stand for u: its modules directory when u is
 * installed (modules.builtin, DKMS state: kmods_find), else what the
 * family's index says its packages ship.  The missing ones, each with why,
 * into missing; *ret_how says where they were looked for.  0, or -errno
 * (-EOPNOTSUPP, -ENODATA: unknown) from the family.
 */
static int update_missing(struct ctx *c, struct report *r, const struct kernel_pm *pm, const void *db,
			  const struct kernel_update *u, bool installed, struct strbuf *missing,
			  const char **ret_how)
{
	const struct strlist *names = &c->spec->kernel.modules;
	struct kmod *mods = kmods_new(names);
	int ret = 0;

	if (installed) {
		kmods_find(c, u->rel, mods, names->n);
		*ret_how = "installed: /lib/modules, modules.builtin, DKMS";
	} else {
		ret = pm_update_modules(pm, c, r, u, db, mods, names->n);
		*ret_how = "not installed: the packages its upgrade installs";
	}
	for (size_t i = 0; ret == 0 && i < names->n; i++) {
		const struct kmod *m = &mods[i];

		if (m->path)
			report_detail(r, "kernel.updates: %s for %s: %s", m->name, u->rel, m->path);
		else if (m->dkms)
			sb_printf(missing, "%s%s (built by DKMS, not installed: %s)", missing->len ? ", " : "",
				  m->name, m->dkms);
		else if (m->other)
			sb_printf(missing, "%s%s (in %s, which the upgrade does not install)",
				  missing->len ? ", " : "", m->name, m->other);
		else
			sb_printf(missing, "%s%s", missing->len ? ", " : "", m->name);
	}
	kmods_free(mods, names->n);
	return ret;
}

/*
 * With the hold on: a newer kernel the package manager offers, and whether
 * every kernel.modules exists for it.  True when kernel.updates:
 * when_modules lets it in (*u is that kernel).
 */
static bool check_update(struct ctx *c, struct report *r, const char *rel, const struct kernel_pm *pm,
			 const void *db, struct kernel_update *u)
{
	const struct spec_kernel *k = &c->spec->kernel;
	bool gate = k->updates == KUPD_WHEN_MODULES;
	struct strlist have = { 0 };
	struct strbuf missing = STRBUF_INIT;
	const char *how = "";
	bool installed, let = false;
	int ret;

	memset(u, 0, sizeof(*u));
	ret = pm_newest(pm, c, r, db, u);
	if (ret == -EOPNOTSUPP) {
		report_detail(r, "kernel.updates: which newer kernel %s would install is unknown on this family",
			      pm->name);
		return false;
	}
	if (ret == -ENOENT || (ret == 0 && kver_cmp(u->rel, rel) <= 0))
		return false;
	if (ret < 0) {
		report_finding(r, ST_OK, "kernel.update.unknown", "cannot tell whether %s offers a newer kernel: "
			       "%s%s", pm->name, strerror(-ret), gate ? "; held" : "");
		return false;
	}
	installed_kernels(c, &have);
	pm->installed(db, &have);
	installed = strlist_has(&have, u->rel);
	strlist_free(&have);
	report_finding(r, ST_OK, "kernel.update.available", "newer kernel %s offered (%s%s%s)%s", u->rel,
		       u->pkg, u->version[0] ? " " : "", u->version, installed ? ", installed, not running" : "");
	if (k->modules.n == 0)
		return false;
	ret = update_missing(c, r, pm, db, u, installed, &missing, &how);
	if (ret < 0)
		report_finding(r, ST_OK, "kernel.update.modules-unknown", "kernel %s: whether kernel.modules exist "
			       "for it is unknown (%s)%s", u->rel, ret == -ENODATA ? "no file lists in the package index" :
			       ret == -EOPNOTSUPP ? "unknown on this family" :
			       ret == -EIO ? "the package manager failed; asked again after its index or database changes" :
			       strerror(-ret),
			       gate ? "; held" : "");
	else if (missing.len)
		report_finding(r, ST_OK, "kernel.update.modules-missing", "kernel %s lacks %s (%s)%s", u->rel,
			       sb_str(&missing), how, gate ? "; held" : "");
	else
		report_finding(r, ST_OK, "kernel.update.modules-ok", "every kernel.modules exists for kernel %s "
			       "(%s)%s", u->rel, how, gate ? "" : "; held (kernel.updates: hold)");
	let = gate && ret == 0 && missing.len == 0;
	sb_free(&missing);
	return let;
}

/* ---- the module -------------------------------------------------------- */

static bool kernel_enabled(const struct spec *s)
{
	return s->kernel.present;
}

static uint64_t kernel_timeout(const struct spec *s)
{
	return 2 * DPKG_TIMEOUT_MS;
}

static void check_modules(struct ctx *c, struct report *r, const char *rel)
{
	const struct strlist *names = &c->spec->kernel.modules;
	struct kmod *mods;

	if (names->n == 0)
		return;
	mods = kmods_new(names);
	kmods_find(c, rel, mods, names->n);
	for (size_t i = 0; i < names->n; i++) {
		struct kmod *m = &mods[i];
		char *sysmod = xasprintf("/sys/module/%s", m->norm);
		bool loaded = fs_exists(c, sysmod);

		free(sysmod);
		if (!m->path && m->dkms)
			report_finding(r, ST_FAILED, "kernel.module.dkms-not-installed",
				       "module %s: built by DKMS (%s) but not installed for %s; "
				       "run dkms install", m->name, m->dkms, rel);
		else if (!m->path)
			report_finding(r, ST_FAILED, "kernel.module.missing",
				       "module %s: not found for the running kernel %s "
				       "(/lib/modules/%s, modules.builtin, DKMS); reinstall the RDMA drivers "
				       "for this kernel", m->name, rel, rel);
		else if (m->builtin)
			report_finding(r, ST_OK, "kernel.module.builtin",
				       "module %s: built into %s", m->name, rel);
		else if (!loaded)
			report_finding(r, ST_FAILED, "kernel.module.not-loaded",
				       "module %s: present (%s) but not loaded; modprobe %s",
				       m->name, m->path, m->name);
		else
			report_finding(r, ST_OK, "kernel.module.loaded",
				       "module %s: loaded (%s)", m->name, m->path);
	}
	kmods_free(mods, names->n);
}

/* A newer installed kernel becomes the default at the next reboot: will RDMA work there? */
static void check_pending(struct ctx *c, struct report *r, const char *rel,
			  const struct kernel_pm *pm, const void *db)
{
	struct strlist kernels = { 0 };
	const char *newest = NULL;

	installed_kernels(c, &kernels);
	if (pm)
		pm->installed(db, &kernels);
	for (size_t i = 0; i < kernels.n; i++)
		if (!newest || kver_cmp(kernels.v[i], newest) > 0)
			newest = kernels.v[i];
	if (newest && kver_cmp(newest, rel) > 0) {
		const struct strlist *names = &c->spec->kernel.modules;
		struct strbuf missing = STRBUF_INIT;

		if (names->n) {
			struct kmod *mods = kmods_new(names);

			kmods_find(c, newest, mods, names->n);
			for (size_t i = 0; i < names->n; i++)
				if (!mods[i].path)
					sb_printf(&missing, "%s%s", missing.len ? " " : "", mods[i].name);
			kmods_free(mods, names->n);
		}
		if (names->n && missing.len == 0)
			report_finding(r, ST_OK, "kernel.pending.ok",
				       "newer kernel %s installed; the next reboot boots it, and the "
				       "listed modules exist for it", newest);
		else if (names->n)
			report_finding(r, ST_DEGRADED, "kernel.pending.breaks-rdma",
				       "newer kernel %s installed: the next reboot boots it and "
				       "breaks RDMA (missing for it: %s); remove it or rebuild the drivers before "
				       "rebooting", newest, sb_str(&missing));
		else
			report_finding(r, ST_DEGRADED, "kernel.pending.unchecked",
				       "newer kernel %s installed: the next reboot boots it; list "
				       "kernel.modules to have hpcinit check the RDMA drivers exist for it", newest);
		sb_free(&missing);
	}
	strlist_free(&kernels);
}

static int kernel_run(struct ctx *c, struct report *r)
{
	const struct spec_kernel *k = &c->spec->kernel;
	const struct kernel_pm *pm;
	struct os_info os;
	void *db = NULL;
	char rel[KREL_MAX], *text = NULL;
	const char *src = "uname";
	int ret;

	ret = running_release(c, rel, sizeof(rel), &src);
	if (ret < 0) {
		report_set(r, ST_FAILED, "cannot tell the running kernel release (%s): %s", src,
			   ret == -EINVAL ? "not a valid release string" : strerror(-ret));
		return 0;
	}
	if (fs_read(c, "/etc/os-release", &text, NULL) == 0 ||
	    fs_read(c, "/usr/lib/os-release", &text, NULL) == 0)
		os_info_parse(text, &os);
	else
		memset(&os, 0, sizeof(os));
	free(text);
	report_finding(r, ST_OK, "kernel.release",
		       "running kernel %s (from %s); distribution %s (%s)", rel, src,
		       os.pretty[0] ? os.pretty : os.id[0] ? os.id : "unknown", distro_name(os.family));
	pm = pm_for(os.family);
	if (pm && (ret = pm->db_open(c, &db)) < 0) {
		report_set(r, ST_FAILED, "cannot read the %s package database: %s", pm->name,
			   strerror(-ret));
		return 0;
	}

	if (k->expect && fnmatch(k->expect, rel, 0) != 0)
		report_finding(r, ST_FAILED, "kernel.expect.mismatch",
			       "running kernel %s does not match kernel.expect '%s'", rel, k->expect);
	check_modules(c, r, rel);

	if (k->hold && pm) {
		struct kernel_update u;
		bool let = check_update(c, r, rel, pm, db, &u);

		ret = let ? pm_let_through(pm, c, r, rel, &u, db) : -EOPNOTSUPP;
		if (let && ret == -EOPNOTSUPP)
			report_detail(r, "kernel.updates: %s cannot let kernel %s in on this family: held",
				      pm->name, u.rel);
		if (ret == -EOPNOTSUPP)
			ret = pm->hold(c, r, rel, db);
		if (ret < 0)
			report_finding(r, ST_FAILED, "kernel.hold.error",
				       "cannot hold the kernel: %s", strerror(-ret));
	} else if (!k->hold && pm) {
		ret = pm->release(c, r, rel, db);
		if (ret < 0)
			report_finding(r, ST_FAILED, "kernel.hold.error",
				       "cannot release hpcinit's kernel hold: %s", strerror(-ret));
	} else if (k->hold) {
		report_finding(r, ST_FAILED, "kernel.hold.unknown-distro",
			       "cannot hold the kernel: unknown distribution '%s' in "
			       "/etc/os-release (known: Debian/Ubuntu, RHEL/Alma/Rocky/CentOS, "
			       "SLES/openSUSE, Azure Linux)", os.id[0] ? os.id : "(none)");
	}
	check_pending(c, r, rel, pm, db);

	/* Problems: the runner's summary names the worst first. */
	if (report_problems(r) == 0 && r->status == ST_CHANGED)
		report_set(r, ST_CHANGED, "kernel %s held (%s)", rel, distro_name(os.family));
	else if (report_problems(r) == 0)
		report_set(r, ST_OK, "kernel %s%s%s", rel, k->hold ? " held" : "",
			   k->modules.n ? ", RDMA modules present and loaded" : "");
	if (pm)
		pm->db_close(db);
	return 0;
}

const struct module kernel_module = {
	.name = "kernel",
	.enabled = kernel_enabled,
	.needs = NULL,
	.timeout_ms = kernel_timeout,
	.check = kernel_run,
	.apply = kernel_run,
};
