/* SPDX-License-Identifier: MIT */
/*
 * The MPI fabric (mpi.c's header says how it is chosen): what the profile
 * (mpi.c) and verify's mpirun line (verify.c) both use, in a file below
 * both, so the cluster check never calls back into the step's file.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "hpcinit.h"
#include "mpi.h"
#include "ib/ibsysfs.h"
#include "ib/identity.h"
#include "ib/peers.h"
#include "record.h"

void mpi_fabric_free(struct fabric *f)
{
	free(f->what);
	free(f->what_extra);
	for (size_t i = 0; i < f->n_mca; i++)
		free(f->mca[i].value);
	free(f->ucx_devices);
	free(f->ucx_pkey);
	free(f->differ);
	memset(f, 0, sizeof(*f));
}

static void mca_set(struct fabric *f, const char *name, const char *value)
{
	f->mca[f->n_mca].name = name;
	f->mca[f->n_mca].value = xstrdup(value);
	f->n_mca++;
}

/* Values go into a shell file: accept only what device names are made of. */
static bool safe_token(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= '0' && *s <= '9') || *s == '_' || *s == '-' || *s == '.'))
			return false;
	return true;
}

/* Is name one of the space-separated words of list? */
static bool in_words(const char *list, const char *name)
{
	size_t nl = strlen(name);

	for (const char *p = list; *p;) {
		size_t wl = strcspn(p, " ");

		if (wl == nl && strncmp(p, name, nl) == 0)
			return true;
		p += wl;
		p += strspn(p, " ");
	}
	return false;
}

/*
 * Active RDMA ports "dev:port" from the IB sysfs inventory (lib/ib/ibsysfs.c):
 * of the devices the rdma step selected (only, a space-separated list) or,
 * when it did not run, of those matching rdma.devices.  ret_pkey: the
 * largest P_Key among them (Azure's tenant partition).  Software devices
 * (rxe, siw) go to soft (their names) and soft_ports (their active ports),
 * never to ret.
 */
static void rdma_ports(const struct ctx *c, const char *only, struct strlist *ret,
		       unsigned long *ret_pkey, struct strlist *soft, struct strlist *soft_ports)
{
	const struct spec *s = c->spec;
	struct ib_dev *devs = xcalloc(IB_MAX_DEVS, sizeof(*devs));
	size_t n = ib_read_devices(c, devs, IB_MAX_DEVS);

	for (size_t i = 0; i < n; i++) {
		const struct ib_dev *d = &devs[i];

		if (!safe_token(d->name) || !(only ? in_words(only, d->name) :
		    fnmatch(s->rdma.devices ? s->rdma.devices : "*", d->name, 0) == 0))
			continue;
		/* By what sysfs says, never by name: accelerated networking's VF is never the fabric. */
		if (d->kind == IB_KIND_AN_VF)
			continue;
		if (d->kind == IB_KIND_SOFT)
			strlist_push(soft, d->name);
		for (unsigned k = 0; k < d->n_ports; k++) {
			const struct ib_port *p = &d->ports[k];

			if (p->state != 4 || !ib_link_matches(s->rdma.link_layer, p->link_layer))
				continue;
			strlist_push_take(d->kind == IB_KIND_SOFT ? soft_ports : ret,
					  xasprintf("%s:%u", d->name, p->num));
			if (d->kind != IB_KIND_SOFT && p->pkey_max > *ret_pkey)
				*ret_pkey = p->pkey_max;
		}
	}
	free(devs);
}

/*
 * What UCX needs to run on a software device (mpi.software_fabric), each
 * found on the VMs of tests/vm (Soft-RoCE rxe0, UCX 1.13.1, Open MPI
 * 4.1.4; docs/mpi.md, "A software device as the fabric").
 */
const char *const mpi_soft_ucx_env[] = {
	/*
	 * UCX's UD transport (the wire-up of rc_verbs and its keepalive) drops
	 * every packet whose destination GID is not one it expects for RoCE;
	 * rxe's GIDs fail that check, the peers' replies are dropped, and the
	 * endpoint ended in "UD endpoint ... unhandled timeout" after 30 s.
	 */
	"UCX_UD_VERBS_ETH_DGID_CHECK=n",
	NULL,
};

static void fabric_ucx(struct fabric *f, const struct strlist *ports)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < ports->n; i++)
		sb_printf(&sb, "%s%s", i ? "," : "", ports->v[i]);
	f->rdma = true;
	f->ucx_devices = sb_steal(&sb);
	mca_set(f, "pml", "ucx");
	mca_set(f, "btl", "^vader,tcp,openib,uct");
	/* Open MPI's pml ucx opens only on devices named mlx* unless told otherwise. */
	if (f->soft_fabric)
		mca_set(f, "pml_ucx_devices", "any");
}

void mpi_fabric_detect(const struct ctx *c, struct fabric *f)
{
	const struct spec *s = c->spec;
	const struct rdma_result *rr = c->out ? c->out->rdma : NULL;
	struct strlist ports = { 0 }, soft = { 0 }, soft_ports = { 0 };
	unsigned long pkey = 0;

	memset(f, 0, sizeof(*f));
	if (s->rdma.present && !(rr && !rr->usable))
		rdma_ports(c, rr ? rr->devices : NULL, &ports, &pkey, &soft, &soft_ports);
	if (ports.n) {
		fabric_ucx(f, &ports);
		if (pkey)
			f->ucx_pkey = xasprintf("0x%04lx", pkey);
		f->what = xasprintf("rdma: UCX on %s", f->ucx_devices);
	} else if (soft_ports.n && s->mpi.software_fabric) {
		f->soft_fabric = true;
		fabric_ucx(f, &soft_ports);
		f->what = xasprintf("rdma: UCX on %s (a software RDMA device: mpi.software_fabric)", f->ucx_devices);
	} else {
		/* Found on a VM with Soft-RoCE: UCX over rxe timed out where TCP worked (docs/mpi.md). */
		f->soft_rdma = soft.n > 0;
		f->what = s->cluster.has_network ?
			  xasprintf("ethernet: TCP over %s%s%s%s", s->cluster.network.text,
				    soft.n ? " (" : "", soft.n ? soft.v[0] : "",
				    soft.n ? " is a software RDMA device: not used)" : "") :
			  xasprintf("ethernet: TCP on every interface (no cluster.network)%s%s%s",
				    soft.n ? " (" : "", soft.n ? soft.v[0] : "",
				    soft.n ? " is a software RDMA device: not used)" : "");
		mca_set(f, "pml", "ob1");
		mca_set(f, "btl", "tcp,self,vader");
		if (s->cluster.has_network)
			mca_set(f, "btl_tcp_if_include", s->cluster.network.text);
	}
	if (s->cluster.has_network)
		mca_set(f, "oob_tcp_if_include", s->cluster.network.text);
	strlist_free(&ports);
	strlist_free(&soft);
	strlist_free(&soft_ports);
}

/* "mlx5_ib0,mlx5_ib1" from a record's "mlx5_ib0=guid,mlx5_ib1=guid" (malloc'd). */
static char *fabric_names(const char *fabric)
{
	struct strbuf sb = STRBUF_INIT;

	for (const char *p = fabric; p && *p;) {
		size_t n = strcspn(p, ","), k = strcspn(p, "=");

		sb_printf(&sb, "%s%.*s", sb.len ? "," : "", (int)(k < n ? k : n), p);
		p += n;
		p += *p == ',';
	}
	return sb_steal(&sb);
}

/*
 * Fabric identity across the cluster, from the records: peers whose devices
 * have other names (mlx5_0 where this node has mlx5_ib0: one ran Azure's
 * renaming service, one did not), and InfiniBand domains (P_Key and
 * placement group): a node alone in its domain reaches no peer over IB.
 */
void mpi_fabric_peers(const struct ctx *c, struct report *r, struct fabric *f)
{
	const struct peerset *ps = c->out ? c->out->peers : NULL;
	const struct peer *self = NULL;
	struct strlist doms = { 0 };
	struct strbuf differ = STRBUF_INIT, extra = STRBUF_INIT;
	unsigned *counts, n_differ = 0, n_unknown = 0;
	size_t *idx, known = 0;
	char *mine;

	for (size_t i = 0; ps && i < ps->n; i++)
		if (ps->v[i].self)
			self = &ps->v[i];
	if (!self || !self->fabric)
		return;
	mine = fabric_names(self->fabric);
	for (size_t i = 0; i < ps->n; i++) {
		const struct peer *p = &ps->v[i];
		char *theirs;

		if (p->self)
			continue;
		if (!p->fabric) {
			n_unknown++;
			continue;
		}
		theirs = fabric_names(p->fabric);
		if (strcmp(theirs, mine) != 0) {
			if (n_differ < 8)
				sb_printf(&differ, "%s%s has %s", differ.len ? ", " : "", p->hostname, theirs);
			n_differ++;
		}
		free(theirs);
	}
	if (n_differ) {
		f->names_differ = true;
		free(f->differ);
		f->differ = xasprintf("%s%s", sb_str(&differ), n_differ > 8 ? ", ..." : "");
		report_detail(r, "warning: fabric device names differ: this node has %s; %s%s: a device list "
			      "passed from one node to another (mpirun -x UCX_NET_DEVICES, NCCL_IB_HCA) names "
			      "devices that are not there; each node's profile and system files name its own",
			      mine, sb_str(&differ), n_differ > 8 ? ", ..." : "");
		sb_printf(&extra, "; device names differ on %u peer(s) (%s)", n_differ, sb_str(&differ));
	}
	if (n_unknown)
		report_detail(r, "%u peer(s) publish no fabric identity (an older hpcinit, or no rdma section): "
			      "their device names and InfiniBand domain are unknown", n_unknown);
	counts = xcalloc(ps->n, sizeof(*counts));
	idx = xcalloc(ps->n, sizeof(*idx));
	rdma_domains_index(ps, &doms, counts, idx);       /* linear: 4,000 domains are no 16 million compares */
	for (size_t k = 0; k < doms.n; k++)
		known += counts[k];
	if (doms.n > 1) {
		struct strbuf sb = STRBUF_INIT;

		for (size_t d = 0; d < doms.n; d++)
			sb_printf(&sb, "%s%s (%u node%s)", d ? ", " : "", doms.v[d], counts[d], counts[d] == 1 ? "" : "s");
		report_detail(r, "InfiniBand domains (P_Key[-placement group]): %s; InfiniBand reaches only within "
			      "one: run jobs on one domain's hostfile (hostfile.openmpi.<domain>)", sb_str(&sb));
		sb_printf(&extra, "; %zu InfiniBand domains", doms.n);
		sb_free(&sb);
	}
	/* alone among nodes whose domain is known; peers without one say nothing */
	for (size_t i = 0; i < ps->n && known >= 2; i++) {
		size_t d = idx[i];
		const struct peer *lone = &ps->v[i];

		if (d == RDMA_NO_DOMAIN || counts[d] != 1)
			continue;
		char why[512];

		snprintf(why, sizeof(why), "%s is alone in InfiniBand domain %s: MPI over InfiniBand reaches no "
			 "other node from it (P_Key %s%s%s is its scale set's own)", lone->hostname, doms.v[d],
			 lone->pkey ? lone->pkey : "?", lone->placement_group ? ", placement group " : "",
			 lone->placement_group ? lone->placement_group : "");
		/* This node alone is its own problem; a peer alone is a cluster finding, not this node's state. */
		if (lone->self)
			report_finding(r, ST_DEGRADED, "mpi.fabric.alone", "%s", why);
		else
			report_cluster(r, "mpi.fabric.alone", "%s", why);
	}
	if (extra.len) {
		char *old = f->what_extra;

		f->what_extra = xasprintf("%s%s", old ? old : "", sb_str(&extra));
		free(old);
	}
	free(counts);
	free(idx);
	free(mine);
	strlist_free(&doms);
	sb_free(&differ);
	sb_free(&extra);
}
