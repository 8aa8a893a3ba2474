/* SPDX-License-Identifier: MIT */
/* The head role: /etc/exports.d/hpcinit.exports and exportfs -ra. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "nfs.h"
#include "proc.h"

/* ---- exports (head role) ------------------------------------------------------- */

static void exportfs_reload(struct ctx *c, struct report *r, enum rstatus *st)
{
	const char *const argv[] = { "exportfs", "-ra", NULL };
	struct proc_result pr;
	char *which;
	int rc;

	if (!nfs_real_root(c)) {
		report_detail(r, "fake root: exportfs -ra not run");
		return;
	}
	which = proc_which("exportfs");
	if (!which) {
		report_detail(r, "exportfs not found: no kernel NFS server here (install nfs-kernel-server; "
			      "RHEL: nfs-utils); %s is written but nothing serves it", EXPORTS_FILE);
		report_finding(r, ST_DEGRADED, "nfs.exports.no-server",
			       "exports written, but no NFS server here to serve them");
		if (*st != ST_FAILED)
			*st = ST_DEGRADED;
		return;
	}
	free(which);
	rc = proc_run(argv, NULL, NULL, 30000, &pr);
	if (rc < 0 || pr.exit_code != 0) {
		char *line = rc < 0 ? xstrdup(strerror(-rc)) : nfs_first_line(pr.err);

		report_finding(r, ST_FAILED, "nfs.exports.exportfs-failed", "exportfs -ra failed%s: %s",
			       pr.timed_out ? " (timed out)" : "", line);
		free(line);
		*st = ST_FAILED;
	} else {
		report_detail(r, "exportfs -ra: exports reloaded");
	}
	if (rc == 0)
		proc_result_free(&pr);
}

enum rstatus do_exports(struct ctx *c, struct report *r, unsigned *ret_n)
{
	const struct spec *s = c->spec;
	bool head = s->cluster.role == ROLE_HEAD;
	size_t n = head ? s->nfs.n_exports : 0;
	struct strbuf body = STRBUF_INIT;
	char hostname[256] = "";
	enum rstatus st = ST_OK;
	int rc;

	*ret_n = 0;
	if (!head && s->nfs.n_exports)
		report_detail(r, "nfs.exports: cluster.role is compute, ignoring (exports are for role: head)");
	if (n == 0) {
		/* The file is ours: no exports, no file. */
		rc = fs_remove(c, r, EXPORTS_FILE);
		if (rc < 0)
			st = ST_FAILED;
		else if (rc == 1 && c->mode == RUN_APPLY)
			exportfs_reload(c, r, &st);
		return st;
	}
	if (c->hostname)
		snprintf(hostname, sizeof(hostname), "%s", c->hostname);
	else if (gethostname(hostname, sizeof(hostname) - 1) < 0)
		snprintf(hostname, sizeof(hostname), "this-node");
	sb_printf(&body, "# Written by hpcinit from nfs.exports of cluster %s; edit the spec, not this file.\n",
		  s->cluster.name);
	for (size_t i = 0; i < n; i++) {
		const struct spec_nfs_export *x = &s->nfs.exports[i];
		const char *clients = x->clients;       /* the loader defaulted it to cluster.network */
		char *path, *o;

		o = nfs_strlist_join(&x->options, ",");
		path = field_escape(x->path);
		sb_printf(&body, "%s %s(%s)\n", path, clients, o);
		report_detail(r, "export: clients in %s may mount %s:%s (%s)", clients, hostname, x->path, o);
		free(path);
		free(o);
		/* Directories: created when missing, existing ones are left as they are. */
		if (!fs_exists(c, x->path) && fs_mkdir_p(c, r, x->path, 0755, 0, 0) < 0)
			st = ST_FAILED;
		(*ret_n)++;
	}
	if (st == ST_FAILED) {
		report_finding(r, ST_FAILED, "nfs.exports.mkdir", "nfs.exports: an export directory could not be made; "
			       "%s not written", EXPORTS_FILE);
		sb_free(&body);
		return st;
	}
	if (!fs_exists(c, "/etc/exports.d") && fs_mkdir_p(c, r, "/etc/exports.d", 0755, 0, 0) < 0) {
		sb_free(&body);
		report_finding(r, ST_FAILED, "nfs.exports.mkdir", "cannot create /etc/exports.d");
		return ST_FAILED;
	}
	rc = fs_write(c, r, EXPORTS_FILE, body.buf, body.len, 0644, 0, 0);
	sb_free(&body);
	if (rc < 0) {
		report_finding(r, ST_FAILED, "nfs.exports.write", "cannot write %s", EXPORTS_FILE);
		return ST_FAILED;
	}
	if (c->mode == RUN_APPLY) {
		if (rc == 1)
			exportfs_reload(c, r, &st);
		else if (nfs_real_root(c)) {
			char *which = proc_which("exportfs");

			if (!which)
				exportfs_reload(c, r, &st);     /* reports the missing server */
			free(which);
		}
	}
	return st;
}

