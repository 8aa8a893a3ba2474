/* SPDX-License-Identifier: MIT */
/*
 * nfs: the cluster's shared storage.
 *
 * For each mount: create the mount point, keep one managed fstab line (so a
 * reboot mounts it without us), and unless the right filesystem is already
 * mounted, wait for the server (TCP, then MOUNT/LOOKUP with libnfs) with
 * backoff until the mount's `wait` runs out, run mount(8), and verify the
 * result (mountinfo, statfs magic, a write probe).  The head role writes
 * /etc/exports.d/hpcinit.exports and runs `exportfs -ra`.
 *
 * Network and mount-point access sit behind struct nfs_ops (docs/conventions.md "Ops tables")
 * so unit tests swap the table.  Everything that can block on a server
 * (libnfs calls in the helper hpcinit-nfs-probe, statfs of a hard mount
 * whose server died) runs in a child under the engine of agent/base/proc.c; a
 * child stuck in the kernel is abandoned, never waited for.  The spec
 * loader owns every rule and default of the nfs section (names.c, spec.c):
 * this step acts on what it loaded, without checking it again.
 *
 * Files: see nfs.h.
 *
 * Test hooks (documented in docs/nfs.md):
 *  - HPCINIT_MOUNT_PROG: the mount program (default "mount").  On a fake
 *    root (--root DIR) nothing is mounted unless this is set.
 *  - On a fake root, mountinfo is read from <root>/proc/self/mountinfo when
 *    that file exists (a fixture), and statfs magic is not checked.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "nfs.h"
#include "proc.h"
#include "number.h"

/* ---- targets ------------------------------------------------------------ */

static int parse_vers(const struct strlist *opts)
{
	const char *v = nfs_opt_find(opts, "vers");

	if (!v)
		v = nfs_opt_find(opts, "nfsvers");
	if (!v)
		return 4;       /* mount.nfs negotiates from 4.2 down; probe 4 */
	v = strchr(v, '=');
	if (!v)
		return 4;
	return v[1] == '3' ? 3 : v[1] == '2' ? 3 : 4;
}

void target_free(struct nfs_target *t)
{
	free(t->source);
	strlist_free(&t->opts);
}

/*
 * One spec mount, resolved for mount(8), fstab and the probes.  The loader
 * checked every field and filled the defaults (options, wait): they are
 * taken as they are.
 */
void target_init(struct nfs_target *t, const struct spec_nfs_mount *m)
{
	const char *port;

	memset(t, 0, sizeof(*t));
	t->m = m;
	t->host = m->host;
	t->export = m->export;
	t->path = m->path;
	t->wait_ms = m->wait_ms;
	for (size_t i = 0; i < m->options.n; i++)
		strlist_push(&t->opts, m->options.v[i]);
	t->source = mounts_source(m);   /* [v6addr]:/export, as mount(8) and mountinfo write it */
	t->vers = parse_vers(&t->opts);
	t->ro = nfs_opt_find(&t->opts, "ro") != NULL;
	port = nfs_opt_find(&t->opts, "port");
	unsigned long long pn;

	if (port && port[4] == '=' && num_ull(port + 5, 10, 65535, &pn))   /* checked by names.c */
		t->port = (uint16_t)pn;
}

/* ---- the module ------------------------------------------------------------------ */

/* The text of the first finding of severity sev among r's findings [from, to), or NULL. */
static const char *first_finding(const struct report *r, size_t from, size_t to, enum rstatus sev)
{
	for (size_t i = from; i < to && i < r->n_findings; i++)
		if (r->findings[i].sev == sev)
			return r->findings[i].text;
	return NULL;
}

/*
 * What is wrong is recorded as findings (nfs.*) where it is found; a failed
 * run leaves the summary to the core (worst first).  A run that reached its
 * goal says what it did: mounts ok, mounted, drifted, degraded; exports.
 */
static int nfs_run(struct ctx *c, struct report *r)
{
	const struct spec *s = c->spec;
	const struct spec_nfs *n = &s->nfs;
	struct nfs_target *t;
	struct strbuf body = STRBUF_INIT, sum = STRBUF_INIT;
	unsigned n_ok = 0, n_changed = 0, n_drift = 0, n_failed = 0, n_degraded = 0, n_exports = 0;
	size_t f_mounts, f_exports;
	const char *degr, *xdegr;
	bool fstab_stale = false;
	enum rstatus xst;
	int rc;

	t = xcalloc(n->n_mounts ? n->n_mounts : 1, sizeof(*t));
	for (size_t i = 0; i < n->n_mounts; i++)
		target_init(&t[i], &n->mounts[i]);

	/* fstab first: even when the server is not there yet, the next boot will mount it. */
	for (size_t i = 0; i < n->n_mounts; i++) {
		char *line = fstab_line(&t[i]);

		sb_append(&body, line);
		free(line);
	}
	rc = fs_managed_block(c, r, "/etc/fstab", s->cluster.name, sb_str(&body), 0644, 0, 0);
	if (rc < 0) {
		report_finding(r, ST_FAILED, "nfs.fstab.write", "cannot update /etc/fstab: %s", strerror(-rc));
		n_failed++;
	} else if (rc == 1 && c->mode != RUN_APPLY) {
		fstab_stale = true;
		if (c->mode == RUN_CHECK)
			report_detail(r, "/etc/fstab: the managed lines for cluster %s are stale or missing",
				      s->cluster.name);
	}
	foreign_fstab_lines(c, r, s->cluster.name, t, n->n_mounts);

	f_mounts = r->n_findings;
	for (size_t i = 0; i < n->n_mounts; i++) {
		bool not_mounted = false;
		enum rstatus st = mount_one(c, r, &t[i], &not_mounted);

		report_raise(r, st);
		if (st == ST_OK)
			n_ok++;
		else if (st == ST_CHANGED && not_mounted)
			n_changed++;
		else if (st == ST_CHANGED)
			n_drift++;
		else if (st == ST_DEGRADED)
			n_degraded++;
		else
			n_failed++;
	}
	f_exports = r->n_findings;
	xst = do_exports(c, r, &n_exports);
	report_raise(r, xst);
	n_failed += xst == ST_FAILED;
	rc = n_failed ? -EIO : 0;
	if (n_failed) {
		report_summarize(r);    /* the core's summary: the worst finding first */
		goto out;
	}

	degr = first_finding(r, f_mounts, f_exports, ST_DEGRADED);
	xdegr = first_finding(r, f_exports, r->n_findings, ST_DEGRADED);
	sb_printf(&sum, "%zu mount%s", n->n_mounts, n->n_mounts == 1 ? "" : "s");
	if (n->n_mounts)
		sb_printf(&sum, ": %u ok", n_ok);
	if (n_changed)
		sb_printf(&sum, ", %u %s", n_changed, c->mode == RUN_APPLY ? "mounted" :
			  c->mode == RUN_CHECK ? "not mounted" : "to mount");
	if (n_drift)
		sb_printf(&sum, ", %u with other options", n_drift);
	if (fstab_stale)
		sb_printf(&sum, "; fstab %s", c->mode == RUN_CHECK ? "stale" : "to update");
	if (n_degraded)
		sb_printf(&sum, ", %u degraded (%s)", n_degraded, degr ? degr : xdegr ? xdegr : "");
	if (n_exports)
		sb_printf(&sum, "; %u export%s", n_exports, n_exports == 1 ? "" : "s");
	if (xst == ST_DEGRADED)
		sb_printf(&sum, " (%s)", xdegr ? xdegr : "");
	report_set(r, r->status, "%s", sb_str(&sum));
out:
	for (size_t i = 0; i < n->n_mounts; i++)
		target_free(&t[i]);
	free(t);
	sb_free(&body);
	sb_free(&sum);
	return rc;
}

static bool nfs_enabled(const struct spec *s)
{
	return s->nfs.present;
}

/*
 * The sum of the mounts' waits (wait: 0s is one probe), plus time for
 * mount(8) and the checks.
 */
static uint64_t nfs_timeout_ms(const struct spec *s)
{
	uint64_t ms = 30000;

	for (size_t i = 0; i < s->nfs.n_mounts && i < NFS_MAX_MOUNTS; i++)
		ms += (s->nfs.mounts[i].wait_ms ? s->nfs.mounts[i].wait_ms : NFS_ONE_PROBE_MS) +
			NFS_MOUNT_TIMEOUT_MS + 2 * NFS_INSPECT_TIMEOUT_MS;
	return ms;
}

static int nfs_check(struct ctx *c, struct report *r)
{
	return nfs_run(c, r);
}

static int nfs_apply(struct ctx *c, struct report *r)
{
	return nfs_run(c, r);
}

const struct module nfs_module = {
	.name = "nfs",
	.enabled = nfs_enabled,
	.needs = NULL,
	.timeout_ms = nfs_timeout_ms,
	.check = nfs_check,
	.apply = nfs_apply,
	.isolate = true,        /* /etc/fstab, the mounts, the exports */
};
