/* SPDX-License-Identifier: MIT */
/*
 * systemctl of the root, and sshd's unit: ssh.service on Debian and Ubuntu,
 * sshd.service on RHEL, SUSE and Azure Linux, found by its unit file, never
 * assumed (systemd.h).
 */
#include "config.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "fsutil.h"
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
