/* SPDX-License-Identifier: MIT */
/* The head role: /etc/exports.d/hpcinit.exports and exportfs -ra. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cidr.h"
#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "nfs.h"
#include "proc.h"
#include "nfs/squash.h"

/* ---- exports (head role) ------------------------------------------------------- */

/* What the exports do to root (nfs_export_lookup): lib/nfs/squash.c. */

#define NFS_SELF_WAIT_MS 15000u         /* nfsd may take a moment after exportfs -ra */

/*
 * The head's address as its clients reach it: HPCINIT_ADDRESS, else the
 * first IPv4 address inside cluster.network, else 127.0.0.1.  Probing that
 * address makes the server see this node as a client inside the network
 * the exports name.
 */
static void self_address(const struct ctx *c, char *buf, size_t n)
{
	const char *env = getenv("HPCINIT_ADDRESS");
	struct ifaddrs *ifa, *i;

	snprintf(buf, n, "127.0.0.1");
	if (env && *env) {
		struct in_addr a;

		if (inet_pton(AF_INET, env, &a) == 1)
			snprintf(buf, n, "%s", env);
		return;
	}
	if (!c->spec->cluster.has_network || getifaddrs(&ifa) < 0)
		return;
	for (i = ifa; i; i = i->ifa_next) {
		const struct sockaddr_in *sin = (const void *)i->ifa_addr;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP) ||
		    !cidr_contains(&c->spec->cluster.network, AF_INET, &sin->sin_addr))
			continue;
		inet_ntop(AF_INET, &sin->sin_addr, buf, (socklen_t)n);
		break;
	}
	freeifaddrs(ifa);
}

/*
 * One self-probe of an export: NFSv3 (TCP to the portmapper, then MOUNT of
 * the path), and when v3 does not answer (a server with v3 switched off,
 * as for NFSv4.1-only clients), NFSv4 (TCP 2049, then a LOOKUP of the path,
 * or at least an NFS answer: see rpc_classify).  Retried with backoff for
 * up to NFS_SELF_WAIT_MS while nfsd starts.
 */
static int self_probe_one(struct ctx *c, struct nfs_target *t, struct nfs_probe_result *res,
			  uint64_t *ret_waited, unsigned *ret_attempts)
{
	struct ctx sub = *c;
	uint64_t start = now_ms(), delay = NFS_BACKOFF_FIRST_MS, w;
	unsigned a;
	int r;

	sub.deadline_ms = start + NFS_SELF_WAIT_MS;
	if (c->deadline_ms && c->deadline_ms < sub.deadline_ms)
		sub.deadline_ms = c->deadline_ms;
	t->wait_ms = 0;
	*ret_attempts = 0;
	for (;;) {
		t->vers = 3;
		r = probe_wait(&sub, t, res, &w, &a);
		*ret_attempts += 1;
		if (r == 0 || res->err == NE_NOEXPORT || res->err == NE_DENIED) {
			if (r == 0 || ctx_remaining_ms(&sub) == 0)
				break;
		} else {
			struct nfs_probe_result r4;

			t->vers = 4;
			if (probe_wait(&sub, t, &r4, &w, &a) == 0) {
				*res = r4;
				r = 0;
				break;
			}
			t->vers = 3;    /* the report names what v3 said */
		}
		if (!ctx_backoff(&sub, &delay, NFS_BACKOFF_CAP_MS))
			break;
	}
	*ret_waited = now_ms() - start;
	return r;
}

/*
 * Before telling clients they may mount: the server runs and answers for
 * each export, asked the way a client asks (NFSv3, or NFSv4 when the server
 * has v3 off, through the same probe the mounts use), at this node's own
 * address.  exportfs -ra succeeding says nothing about nfsd.
 */
static void export_self_probe(struct ctx *c, struct report *r, enum rstatus *st)
{
	const struct spec *s = c->spec;
	char addr[64];

	self_address(c, addr, sizeof(addr));
	for (size_t i = 0; i < s->nfs.n_exports; i++) {
		const struct spec_nfs_export *x = &s->nfs.exports[i];
		struct nfs_target t = { 0 };
		struct nfs_probe_result res;
		uint64_t waited = 0;
		unsigned attempts = 0;

		t.host = addr;
		t.export = x->path;
		t.path = x->path;
		t.source = xasprintf("%s:%s", addr, x->path);
		if (self_probe_one(c, &t, &res, &waited, &attempts) == 0) {
			report_finding(r, ST_OK, "nfs.exports.self-probe",
				       "export %s answers at %s (this node probed itself as a client%s: %s%s%s); "
				       "clients in %s may mount %s", x->path, addr,
				       t.vers == 3 ? "" : " over NFSv4, v3 gave no answer",
				       res.what[0] ? res.what : "TCP", res.note[0] ? "; " : "", res.note,
				       x->clients, t.source);
		} else {
			report_finding(r, ST_FAILED, "nfs.exports.self-probe",
				       "the NFS server does not serve %s: %s: %s (probed at %s, %u attempt%s in %llu s); "
				       "is the NFS server running (systemctl status nfs-server)?", t.source,
				       res.what[0] ? res.what : "probe", res.msg[0] ? res.msg : "no answer", addr,
				       attempts, attempts == 1 ? "" : "s", (unsigned long long)(waited / 1000));
			*st = ST_FAILED;
		}
		free(t.source);
	}
}

static void exportfs_reload(struct ctx *c, struct report *r, enum rstatus *st)
{
	const char *const argv[] = { "exportfs", "-ra", NULL };
	struct proc_result pr;
	char *which;
	int rc;

	if (!ctx_real_root(c)) {
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
	if (!node_hostname(c, hostname, sizeof(hostname)))
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
		report_detail(r, "export: %s:%s to clients in %s (%s)", hostname, x->path, clients, o);
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
		else if (ctx_real_root(c)) {
			char *which = proc_which("exportfs");

			if (!which)
				exportfs_reload(c, r, &st);     /* reports the missing server */
			free(which);
		}
	}
	/* Only where a server could serve them (the real root, exportfs done): does it? */
	if (ctx_real_root(c) && st == ST_OK && c->mode != RUN_PLAN)
		export_self_probe(c, r, &st);
	else if (!ctx_real_root(c))
		report_detail(r, "fake root: the export self-probe does not run");
	return st;
}

