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
