/* SPDX-License-Identifier: MIT */
/*
 * mpi: the MPI fabric profile (/etc/profile.d/hpcinit-mpi.sh) and the
 * cluster verification (hpcinit-mpiverify under mpirun).
 *
 * Fabric: RDMA when the spec has an rdma section and sysfs shows an
 * active port of a device matching rdma.devices with the wanted link
 * layer; then Open MPI uses UCX on those ports.  When the rdma module ran
 * in this run (its typed output c->out->rdma), only the devices it found usable count,
 * and none if it found none.  Software devices (Soft-RoCE rdma_rxe, siw)
 * do not count: they run the RDMA transport on the CPU over the same NIC
 * that TCP uses directly; mpi.software_fabric makes them the fabric all the
 * same (development, CI), with the UCX settings they need.  Otherwise TCP,
 * limited to cluster.network for both MPI traffic and Open MPI's launch
 * channel.
 * The same settings go into the profile and onto verify's mpirun line
 * (remote daemons started over ssh do not read profile.d).
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
#include "proc.h"
#include "ib/ibsysfs.h"
#include "ib/identity.h"
#include "rdma/rdma.h"
#include "record.h"

#define PROFILE_PATH "/etc/profile.d/hpcinit-mpi.sh"
#define PROFILE_MAGIC "# hpcinit (mpi module)"
#define VERIFY_DEFAULT_MS (2 * 60 * 1000)
#define VERIFY_RUN_MAX_MS (5 * 60 * 1000)

struct mca {
	const char *name;       /* OMPI_MCA_<name> in the profile, --mca <name> on mpirun */
	char *value;
};

/* The fabric settings, shared by the profile and verify's mpirun line. */
struct fabric {
	bool rdma;
	bool soft_rdma;        /* a software RDMA device (rxe, siw) is there; MPI uses TCP */
	bool soft_fabric;      /* mpi.software_fabric: UCX on that software device */
	char *what;             /* one line for humans */
	char *what_extra;       /* "; rdma_cm to N of M peer(s) ok", or NULL */
	struct mca mca[6];
	size_t n_mca;
	char *ucx_devices;      /* UCX_NET_DEVICES, NULL on TCP */
	char *ucx_pkey;         /* UCX_IB_PKEY, NULL when unknown */
	bool names_differ;      /* peers call their fabric devices otherwise: never pass ours to them */
	char *differ;           /* "node03 has mlx5_1, ...", when they do */
};

static void fabric_free(struct fabric *f)
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
static const char *const soft_ucx_env[] = {
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

static void fabric_detect(const struct ctx *c, struct fabric *f)
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
static void fabric_peers(const struct ctx *c, struct report *r, struct fabric *f)
{
	const struct peerset *ps = c->out ? c->out->peers : NULL;
	const struct peer *self = NULL;
	struct strlist doms = { 0 };
	struct strbuf differ = STRBUF_INIT, extra = STRBUF_INIT;
	unsigned *counts, n_differ = 0, n_unknown = 0;
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
	rdma_domains(ps, &doms, counts);
	if (doms.n > 1) {
		struct strbuf sb = STRBUF_INIT;

		for (size_t d = 0; d < doms.n; d++)
			sb_printf(&sb, "%s%s (%u node%s)", d ? ", " : "", doms.v[d], counts[d], counts[d] == 1 ? "" : "s");
		report_detail(r, "InfiniBand domains (P_Key[-placement group]): %s; InfiniBand reaches only within "
			      "one: run jobs on one domain's hostfile (hostfile.openmpi.<domain>)", sb_str(&sb));
		sb_printf(&extra, "; %zu InfiniBand domains", doms.n);
		sb_free(&sb);
	}
	for (size_t d = 0; d < doms.n; d++) {
		const struct peer *lone = NULL;
		size_t known = 0;

		for (size_t k = 0; k < doms.n; k++)
			known += counts[k];
		/* alone among nodes whose domain is known; peers without one say nothing */
		if (counts[d] != 1 || known < 2)
			continue;
		for (size_t i = 0; i < ps->n && !lone; i++) {
			char *pd = rdma_peer_domain(&ps->v[i]);

			if (pd && strcmp(pd, doms.v[d]) == 0)
				lone = &ps->v[i];
			free(pd);
		}
		report_finding(r, ST_DEGRADED, "mpi.fabric.alone", "%s is alone in InfiniBand domain %s: MPI over "
			       "InfiniBand reaches no other node from it (P_Key %s%s%s is its scale set's own)",
			       lone ? lone->hostname : "?", doms.v[d], lone && lone->pkey ? lone->pkey : "?",
			       lone && lone->placement_group ? ", placement group " : "",
			       lone && lone->placement_group ? lone->placement_group : "");
	}
	if (extra.len) {
		char *old = f->what_extra;

		f->what_extra = xasprintf("%s%s", old ? old : "", sb_str(&extra));
		free(old);
	}
	free(counts);
	free(mine);
	strlist_free(&doms);
	sb_free(&differ);
	sb_free(&extra);
}

static char *profile_render(const struct spec *s, const struct fabric *f)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, PROFILE_MAGIC ": MPI settings for cluster %s.\n"
		  "# Fabric %s.\n"
		  "# Rebuilt on every run; edits are replaced.  Override per job with mpirun --mca.\n",
		  s->cluster.name, f->what);
	for (size_t i = 0; i < f->n_mca; i++)
		sb_printf(&sb, "export OMPI_MCA_%s=%s\n", f->mca[i].name, f->mca[i].value);
	if (f->differ && f->ucx_devices)
		sb_printf(&sb, "# Device names differ between nodes (%s): the names below are this node's,\n"
			  "# and every node's profile and /etc/ucx/ucx.conf name its own; never pass them to\n"
			  "# other nodes (mpirun -x UCX_NET_DEVICES, -x NCCL_IB_HCA).\n", f->differ);
	if (f->ucx_devices)
		sb_printf(&sb, "export UCX_NET_DEVICES=%s\n", f->ucx_devices);
	if (f->ucx_pkey)
		sb_printf(&sb, "export UCX_IB_PKEY=%s\n", f->ucx_pkey);
	for (size_t i = 0; f->soft_fabric && soft_ucx_env[i]; i++)
		sb_printf(&sb, "export %s\n", soft_ucx_env[i]);
	/* NCCL: "=" makes the list exact; without it mlx5_ib1 would also match mlx5_ib10. */
	if (f->ucx_devices && !f->soft_fabric)
		sb_printf(&sb, "export NCCL_IB_HCA==%s\n", f->ucx_devices);
	/*
	 * Intel MPI (2019 and later: libfabric) and MPICH builds on libfabric
	 * read FI_PROVIDER: "mlx" (UCX underneath, the provider the Azure HPC
	 * documentation uses on InfiniBand) or "tcp".  UCX builds of MPICH read
	 * UCX_NET_DEVICES above.  I_MPI_TCP_NETMASK keeps Intel MPI's TCP
	 * traffic on cluster.network.
	 */
	sb_append(&sb, "# Intel MPI and MPICH (libfabric): the same fabric.\n"
		  "export I_MPI_FABRICS=shm:ofi\n");
	sb_printf(&sb, "export FI_PROVIDER=%s\n", f->rdma && !f->soft_fabric ? "mlx" : "tcp");
	if ((!f->rdma || f->soft_fabric) && s->cluster.has_network)
		sb_printf(&sb, "export I_MPI_TCP_NETMASK=%s\n", s->cluster.network.text);
	return sb_steal(&sb);
}

/*
 * The system files MPI and NCCL read whatever the shell: mpirun lines users
 * write themselves, batch jobs, non-login ssh.  A managed block in each,
 * text outside it kept; Open MPI's file is the package's own (Debian's says
 * pml = ^ucx): its later lines win, so the block goes at the end.
 */
#define SYSFILE_TAG "mpi"
#define UCX_CONF "/etc/ucx/ucx.conf"            /* UCX >= 1.12: $UCX_CONFIG_DIR/ucx.conf, default sysconfdir/ucx */
#define NCCL_CONF "/etc/nccl.conf"              /* NCCL: after NCCL_CONF_FILE and ~/.nccl.conf */

static const char *const ompi_params_paths[] = {
	"/etc/openmpi/openmpi-mca-params.conf",                 /* Debian, Ubuntu */
	"/usr/lib64/openmpi/etc/openmpi-mca-params.conf",       /* RHEL, Alma, Rocky, Fedora */
	"/usr/lib64/mpi/gcc/openmpi4/etc/openmpi-mca-params.conf",      /* SLES, openSUSE */
	"/etc/openmpi-mca-params.conf",                         /* --sysconfdir=/etc builds */
	NULL,
};

static int sysfiles_converge(struct ctx *c, struct report *r, const struct fabric *f, struct strbuf *done)
{
	bool want = c->spec->mpi.profile;
	struct strbuf ompi = STRBUF_INIT, ucx = STRBUF_INIT, nccl = STRBUF_INIT;
	int ret = 0, rr;

	if (want) {
		for (size_t i = 0; i < f->n_mca; i++)
			sb_printf(&ompi, "%s = %s\n", f->mca[i].name, f->mca[i].value);
		if (f->ucx_devices) {
			sb_printf(&ucx, "UCX_NET_DEVICES=%s\n", f->ucx_devices);
			if (!f->soft_fabric)
				sb_printf(&nccl, "NCCL_IB_HCA==%s\n", f->ucx_devices);
		}
		if (f->ucx_pkey)
			sb_printf(&ucx, "UCX_IB_PKEY=%s\n", f->ucx_pkey);
		for (size_t i = 0; f->soft_fabric && soft_ucx_env[i]; i++)
			sb_printf(&ucx, "%s\n", soft_ucx_env[i]);
	}
	for (size_t i = 0; ompi_params_paths[i]; i++) {
		if (!fs_exists(c, ompi_params_paths[i]))
			continue;       /* Open MPI not installed there: nothing to reach */
		rr = fs_managed_block(c, r, ompi_params_paths[i], SYSFILE_TAG, sb_str(&ompi), 0644, 0, 0);
		if (rr < 0)
			ret = rr;
		else if (want)
			sb_printf(done, "%s%s", done->len ? ", " : "", ompi_params_paths[i]);
		break;
	}
	if (ucx.len && !fs_exists(c, "/etc/ucx"))
		rr = fs_mkdir_p(c, r, "/etc/ucx", 0755, 0, 0);
	else
		rr = 0;
	if (rr >= 0 && (ucx.len || fs_exists(c, UCX_CONF)))
		rr = fs_managed_block(c, r, UCX_CONF, SYSFILE_TAG, sb_str(&ucx), 0644, 0, 0);
	if (rr < 0)
		ret = rr;
	else if (ucx.len)
		sb_printf(done, "%s" UCX_CONF, done->len ? ", " : "");
	rr = nccl.len || fs_exists(c, NCCL_CONF) ?
	     fs_managed_block(c, r, NCCL_CONF, SYSFILE_TAG, sb_str(&nccl), 0644, 0, 0) : 0;
	if (rr < 0)
		ret = rr;
	else if (nccl.len)
		sb_printf(done, "%s" NCCL_CONF, done->len ? ", " : "");
	sb_free(&ompi);
	sb_free(&ucx);
	sb_free(&nccl);
	return ret;
}

static int profile_converge(struct ctx *c, struct report *r, const struct fabric *f)
{
	char *text = NULL;
	int ret;

	if (!c->spec->mpi.profile) {
		/* Turned off: remove the file only if it is ours. */
		if (fs_read(c, PROFILE_PATH, &text, NULL) == 0 &&
		    strncmp(text, PROFILE_MAGIC, strlen(PROFILE_MAGIC)) == 0)
			ret = fs_remove(c, r, PROFILE_PATH);
		else
			ret = 0;
		free(text);
		return ret;
	}
	text = profile_render(c->spec, f);
	ret = 0;
	if (!fs_exists(c, "/etc/profile.d"))
		ret = fs_mkdir_p(c, r, "/etc/profile.d", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, PROFILE_PATH, text, strlen(text), 0644, 0, 0);
	free(text);
	return ret;
}

/* ---- verify ---- */

/* Value of key=... in a "k=v k=v" line, malloc'd, or NULL. */
static char *field(const char *line, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = line; p && *p;) {
		p += strspn(p, " ");
		if (strncmp(p, key, kl) == 0 && p[kl] == '=')
			return xstrndup(p + kl + 1, strcspn(p + kl + 1, " \n"));
		p = strchr(p, ' ');
	}
	return NULL;
}

static int count_hosts(const char *text)
{
	int n = 0;

	for (const char *p = text; p && *p;) {
		const char *q = p + strspn(p, " \t");

		if (*q && *q != '#' && *q != '\n')
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

/*
 * Turn the verify program's output into details and a summary.  Returns
 * 1 when a result line was found (the run happened), 0 when not.
 */
static int verify_parse(struct report *r, const char *out, double limit, uint64_t min_bw)
{
	int hellos = 0, pairs = 0, found = 0;

	for (const char *p = out; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));

		p = nl ? nl + 1 : NULL;
		if (strncmp(line, "hello ", 6) == 0) {
			hellos++;
		} else if (strncmp(line, "pair ", 5) == 0) {
			char *hosts = field(line, "hosts"), *lat = field(line, "latency_us");
			char *bw = field(line, "bw_MiBps"), *l8 = field(line, "lat8_us"), *l512 = field(line, "lat512_us");
			char *comma = hosts ? strchr(hosts, ',') : NULL;

			if (comma)
				*comma = '\0';
			report_detail(r, "pair %s <-> %s: latency %s us (8 B %s, 512 B %s), bandwidth %s MiB/s at 4 MiB",
				      hosts ? hosts : "?", comma ? comma + 1 : "?", lat ? lat : "?",
				      l8 ? l8 : "?", l512 ? l512 : "?", bw ? bw : "?");
			pairs++;
			free(hosts);
			free(lat);
			free(bw);
			free(l8);
			free(l512);
		} else if (strncmp(line, "result ", 7) == 0) {
			char *st = field(line, "status"), *nodes = field(line, "nodes");
			char *maxl = field(line, "max_latency_us"), *slowest = field(line, "slowest");
			char *minbw = field(line, "min_bw_MiBps"), *host = field(line, "host");
			char *comma = slowest ? strchr(slowest, ',') : NULL;

			if (comma)
				*comma = '\0';
			char *narrowest = field(line, "narrowest"), *rnd = field(line, "round");
			char *rounds = field(line, "rounds");
			char *ncomma = narrowest ? strchr(narrowest, ',') : NULL;
			bool judged = false;

			if (ncomma)
				*ncomma = '\0';
			found = 1;
			if (rnd && rounds)
				report_detail(r, "round %s of %s (round-robin pairs: every pair of nodes is measured "
					      "once in %s runs)", rnd, rounds, rounds);
			if (st && strcmp(st, "slow") == 0 && limit > 0 && maxl && strtod(maxl, NULL) > limit) {
				report_finding(r, ST_FAILED, "mpi.verify.slow-pair", "slow pair %s <-> %s: "
					       "latency %s us is above max_latency_us %g", slowest,
					       comma ? comma + 1 : "?", maxl, limit);
				judged = true;
			}
			if (st && strcmp(st, "slow") == 0 && min_bw && minbw &&
			    strtod(minbw, NULL) * 1024.0 * 1024.0 < (double)min_bw) {
				report_finding(r, ST_FAILED, "mpi.verify.low-bandwidth", "narrow pair %s <-> %s: "
					       "bandwidth %s MiB/s at 4 MiB is below min_bandwidth %.1f MiB/s",
					       narrowest ? narrowest : "?", ncomma ? ncomma + 1 : "?", minbw,
					       (double)min_bw / (1024.0 * 1024.0));
				judged = true;
			}
			free(narrowest);
			free(rnd);
			free(rounds);
			if (st && strcmp(st, "slow") == 0 && !judged)
				report_finding(r, ST_FAILED, "mpi.verify.slow-pair", "slow pair %s <-> %s: "
					       "latency %s us (limit %g us)", slowest ? slowest : "?",
					       comma ? comma + 1 : "?", maxl ? maxl : "?", limit);
			else if (st && strcmp(st, "error") == 0)
				report_finding(r, ST_FAILED, "mpi.verify.rank-twice", "two ranks ran on %s: the "
					       "hostfile lists it twice or mpirun did not map by node",
					       host ? host : "?");
			else if (pairs == 0)
				report_set(r, ST_OK, "%s node answered (no pair to measure)",
					   nodes ? nodes : "1");
			else
				report_set(r, ST_OK, "%s nodes answered; %d pairs: max latency %s us "
					   "(%s <-> %s), min bandwidth %s MiB/s", nodes ? nodes : "?",
					   pairs, maxl ? maxl : "?", slowest ? slowest : "?",
					   comma ? comma + 1 : "?", minbw ? minbw : "?");
			free(st);
			free(nodes);
			free(maxl);
			free(slowest);
			free(minbw);
			free(host);
		}
		free(line);
	}
	if (found && hellos)
		report_detail(r, "hello from %d ranks", hellos);
	if (r->status == ST_FAILED)
		report_summarize(r);
	return found;
}

/*
 * What mpirun's stderr says about a failed start: the ssh complaints (its
 * own explanation is a page of boilerplate), else its first lines.
 * Returns the first ssh line (malloc'd) for the summary, or NULL.
 */
static char *launch_failure(struct report *r, const char *err)
{
	static const char *const ssh_says[] = {
		/* "Permission denied (" is ssh's; Open MPI warns "...errno=Permission denied(13)" */
		"ssh:", "Permission denied (", "Host key verification failed",
		"REMOTE HOST IDENTIFICATION HAS CHANGED", "Could not resolve",
	};
	char *first = NULL;
	int shown = 0;

	for (int pass = 0; pass < 2 && !shown; pass++)
		for (const char *p = err; p && *p && shown < 6;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			bool hit;

			while (len && (p[len - 1] == '\r' || p[len - 1] == ' '))
				len--;          /* ssh ends its messages with \r\n */
			hit = pass == 1 && len && *p != '-';

			for (size_t i = 0; !pass && i < sizeof(ssh_says) / sizeof(*ssh_says); i++)
				if (memmem(p, len, ssh_says[i], strlen(ssh_says[i])))
					hit = true;
			if (hit) {
				report_detail(r, "mpirun said: %.*s", (int)len, p);
				if (!pass && !first)
					first = xstrndup(p, len);
				shown++;
			}
			p = nl ? nl + 1 : NULL;
		}
	return first;
}

/*
 * The verify program, built for the MPI that launches it: hpcinit-mpiverify
 * (Open MPI) or hpcinit-mpiverify-mpich (MPICH, and Intel MPI, which keeps
 * MPICH's ABI).  HPCINIT_MPIVERIFY / HPCINIT_MPIVERIFY_MPICH: a copy the
 * nodes can all read (the tests); else the one beside a binary run from its
 * build tree (proc_build_dir), else LIBEXECDIR's.
 */
static const char *verify_program(enum mpi_launcher l)
{
	const char *p = getenv(l == MPI_OPENMPI ? "HPCINIT_MPIVERIFY" : "HPCINIT_MPIVERIFY_MPICH");

	const char *name = l == MPI_OPENMPI ? "hpcinit-mpiverify" : "hpcinit-mpiverify-mpich";
	const char *dir = proc_build_dir();     /* a binary run from its build tree: the one beside it */
	static char path[PATH_MAX];

	if (p && *p == '/')
		return p;
	snprintf(path, sizeof(path), "%s/%s", dir ? dir : LIBEXECDIR, name);
	return path;
}

/* The launcher of each MPI, and the hostfile format it reads. */
static const char *launcher_prog(enum mpi_launcher l)
{
	return l == MPI_OPENMPI ? "mpirun" : l == MPI_MPICH ? "mpirun.mpich" : "mpiexec.hydra";
}

static const char *launcher_hostfile(enum mpi_launcher l)
{
	return l == MPI_OPENMPI ? "hostfile.openmpi" : "hostfile.mpich";
}

static void argv_add(struct strlist *a, const char *s)
{
	strlist_push(a, s);
}

/* Builds the mpirun command line; exposed to tests through mpi.c's inclusion. */
static void verify_argv(const struct ctx *c, const struct fabric *f, const char *hostfile, unsigned long round,
			int nodes, const char *run_as, bool as_root, struct strlist *a)
{
	char num[32];

	enum mpi_launcher l = c->spec->mpi.launcher;

	if (run_as) {
		argv_add(a, "runuser");
		argv_add(a, "-u");
		argv_add(a, run_as);
		argv_add(a, "--");
	}
	if (l != MPI_OPENMPI) {
		/*
		 * Hydra (MPICH's mpirun.mpich, Intel MPI's mpiexec.hydra): one rank
		 * a node from the host:N hostfile; its ssh launcher never prompts.
		 */
		argv_add(a, "env");
		argv_add(a, "HYDRA_LAUNCHER_EXTRA_ARGS=-o BatchMode=yes");
		argv_add(a, launcher_prog(l));
		argv_add(a, "-launcher");
		argv_add(a, "ssh");
		argv_add(a, "-f");
		argv_add(a, hostfile);
		snprintf(num, sizeof(num), "%d", nodes);
		argv_add(a, "-n");
		argv_add(a, num);
		argv_add(a, "-ppn");
		argv_add(a, "1");
		if (l == MPI_INTEL) {
			/* Intel MPI 2019+: libfabric; the provider of the profile (untested here). */
			argv_add(a, "-genv");
			argv_add(a, "I_MPI_FABRICS");
			argv_add(a, "shm:ofi");
			argv_add(a, "-genv");
			argv_add(a, "FI_PROVIDER");
			argv_add(a, f->rdma && !f->soft_fabric ? "mlx" : "tcp");
		}
		if (!f->rdma) {
			/*
			 * TCP fabric, one rank a node: UCX over tcp and self only.  With
			 * UCX's default transports MPICH 4.0 (ch4:ucx) left ranks
			 * spinning in MPI_Finalize in about half the runs on the
			 * simulated cluster (tests/cluster/mpi-mpich.sh).
			 */
			argv_add(a, "-genv");
			argv_add(a, "UCX_TLS");
			argv_add(a, "tcp,self");
		}
		if (f->ucx_devices && !f->names_differ) {
			argv_add(a, "-genv");
			argv_add(a, "UCX_NET_DEVICES");
			argv_add(a, f->ucx_devices);
		}
		if (f->ucx_pkey) {
			argv_add(a, "-genv");
			argv_add(a, "UCX_IB_PKEY");
			argv_add(a, f->ucx_pkey);
		}
		for (size_t i = 0; f->soft_fabric && soft_ucx_env[i]; i++) {
			char *name = xstrndup(soft_ucx_env[i], strcspn(soft_ucx_env[i], "="));

			argv_add(a, "-genv");
			argv_add(a, name);
			argv_add(a, strchr(soft_ucx_env[i], '=') + 1);
			free(name);
		}
		goto program;
	}
	argv_add(a, "mpirun");
	if (as_root)
		argv_add(a, "--allow-run-as-root");
	argv_add(a, "--hostfile");
	argv_add(a, hostfile);
	argv_add(a, "--map-by");
	argv_add(a, "node");
	snprintf(num, sizeof(num), "%d", nodes);
	argv_add(a, "-np");
	argv_add(a, num);
	/* Without it every node pins its rank to core 0: ~4 ms instead of ~7 us here. */
	argv_add(a, "--bind-to");
	argv_add(a, "none");
	/* Fail at once, never prompt, when a node does not trust us yet. */
	argv_add(a, "--mca");
	argv_add(a, "plm_rsh_args");
	argv_add(a, "-o BatchMode=yes");
	for (size_t i = 0; i < f->n_mca; i++) {
		argv_add(a, "--mca");
		argv_add(a, f->mca[i].name);
		argv_add(a, f->mca[i].value);
	}
	/* Names that differ between nodes: each node's own system files name its devices. */
	if (f->ucx_devices && !f->names_differ) {
		char *x = xasprintf("UCX_NET_DEVICES=%s", f->ucx_devices);

		argv_add(a, "-x");
		argv_add(a, x);
		free(x);
	}
	if (f->ucx_pkey) {
		char *x = xasprintf("UCX_IB_PKEY=%s", f->ucx_pkey);

		argv_add(a, "-x");
		argv_add(a, x);
		free(x);
	}
	/* The remote ranks read their own ucx.conf too; the line says it for nodes that have none. */
	for (size_t i = 0; f->soft_fabric && soft_ucx_env[i]; i++) {
		argv_add(a, "-x");
		argv_add(a, soft_ucx_env[i]);
	}
program:
	argv_add(a, verify_program(l));
	if (c->spec->mpi.max_latency_us > 0) {
		snprintf(num, sizeof(num), "%g", c->spec->mpi.max_latency_us);
		argv_add(a, "--max-latency-us");
		argv_add(a, num);
	}
	if (c->spec->mpi.min_bandwidth > 0) {
		snprintf(num, sizeof(num), "%.1f", (double)c->spec->mpi.min_bandwidth / (1024.0 * 1024.0));
		argv_add(a, "--min-bw-mibps");
		argv_add(a, num);
	}
	snprintf(num, sizeof(num), "%lu", round);
	argv_add(a, "--round");
	argv_add(a, num);
}

/*
 * The round-robin round of the next verify (hpcinit-mpiverify pairs every
 * rank with a new partner each round): one counter on this node, advanced
 * after every run that measured, so successive runs cover every pair in
 * N-1 rounds.  The program takes it modulo the number of rounds.
 */
#define VERIFY_ROUND_PATH "/var/lib/hpcinit/mpi-verify-round"

static unsigned long verify_round_load(const struct ctx *c)
{
	char *text = NULL, *end;
	unsigned long v = 0;

	if (fs_read(c, VERIFY_ROUND_PATH, &text, NULL) == 0) {
		errno = 0;
		v = strtoul(text, &end, 10);
		if (errno || end == text || v > 1000000000ul)
			v = 0;
	}
	free(text);
	return v;
}

static void verify_round_save(struct ctx *c, unsigned long round)
{
	struct report scratch;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%lu\n", round);

	if (!ctx_may_write(c))
		return;
	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/var/lib/hpcinit", 0755, 0, 0) < 0 ||
	    fs_write(c, &scratch, VERIFY_ROUND_PATH, buf, (size_t)n, 0644, 0, 0) < 0)
		log_warn("cannot write %s: the next verify measures the same pairs again", VERIFY_ROUND_PATH);
	report_free(&scratch);
}

/* One verify run over one hostfile: the whole cluster's, or one InfiniBand domain's (domain set). */
static int verify_hostfile(struct ctx *c, struct report *r, const char *domain)
{
	const struct spec *s = c->spec;
	const char *dir = s->hostfile.present && s->hostfile.dir ? s->hostfile.dir : "/etc/hpcinit";
	enum mpi_launcher l = s->mpi.launcher;
	char *hf = xasprintf("%s/%s%s%s", dir, launcher_hostfile(l), domain ? "." : "", domain ? domain : ""),
	     *hfhost = ctx_path(c, hf);
	char *text = NULL, *mpirun = proc_which(launcher_prog(l));
	unsigned long round = 0;
	const char *run_as = NULL;
	uint64_t end = now_ms() + VERIFY_DEFAULT_MS, delay = 1000;
	struct fabric f;
	struct strlist argv = { 0 };
	int nodes, ret, attempt = 0;

	fabric_detect(c, &f);
	{
		struct report scratch;

		report_init(&scratch);
		fabric_peers(c, &scratch, &f);
		report_free(&scratch);
	}
	if (c->deadline_ms)
		end = c->deadline_ms;
	if (!mpirun) {
		report_finding(r, ST_FAILED, "mpi.verify.no-mpirun", "%s not found: install %s", launcher_prog(l),
			       l == MPI_OPENMPI ? "Open MPI (openmpi-bin)" : l == MPI_MPICH ? "MPICH (mpich)" :
			       "Intel MPI and source its vars.sh for the PATH hpcinit runs with");
		ret = -ENOENT;
		goto out;
	}
	if (access(verify_program(l), X_OK) < 0) {
		report_finding(r, ST_FAILED, "mpi.verify.no-program", "%s is missing: hpcinit was built "
			       "without %s (configure found no %s)", verify_program(l),
			       l == MPI_OPENMPI ? "Open MPI" : "MPICH", l == MPI_OPENMPI ? "ompi-c" : "mpich");
		ret = -ENOENT;
		goto out;
	}
	ret = fs_read(c, hf, &text, NULL);
	if (ret < 0) {
		report_finding(r, ST_FAILED, "mpi.verify.no-hostfile", "%s: %s; the hostfile module writes it",
			       hf, strerror(-ret));
		goto out;
	}
	nodes = count_hosts(text);
	if (nodes < 1) {
		report_finding(r, ST_FAILED, "mpi.verify.no-hosts", "%s lists no hosts", hf);
		ret = -ENOENT;
		goto out;
	}
	/* mpirun logs in to the nodes as a cluster user: that is the path jobs take. */
	if (geteuid() == 0 && s->ssh.users.n && strcmp(s->ssh.users.v[0], "root") != 0)
		run_as = s->ssh.users.v[0];
	round = verify_round_load(c);
	verify_argv(c, &f, hfhost, round, nodes, run_as, geteuid() == 0 && !run_as, &argv);
	{
		char *shown = argv_render((const char *const *)argv.v);

		report_detail(r, "%s", shown);
		free(shown);
	}
	for (;;) {
		struct proc_result pr = { 0 };
		uint64_t now = now_ms(), left = end > now ? end - now : 0;

		attempt++;
		ret = proc_run((const char *const *)argv.v, NULL, NULL,
			       (unsigned)(left < VERIFY_RUN_MAX_MS ? left : VERIFY_RUN_MAX_MS), &pr);
		if (ret < 0) {
			report_finding(r, ST_FAILED, "mpi.verify.cannot-run", "cannot run mpirun: %s", strerror(-ret));
			break;
		}
		if (verify_parse(r, pr.out, s->mpi.max_latency_us, s->mpi.min_bandwidth)) {
			verify_round_save(c, round + 1);
			if (attempt > 1)
				report_detail(r, "mpirun ran on attempt %d (nodes were not all reachable "
					      "before)", attempt);
			if (pr.exit_code != 0 && r->status != ST_FAILED)
				report_finding(r, ST_FAILED, "mpi.verify.exit-status", "mpirun exited %d after the check",
					       pr.exit_code);
			proc_result_free(&pr);
			break;
		}
		/*
		 * No result: a node refused us or is not up yet.  At boot (apply)
		 * the others may still be setting up: retry until the deadline.
		 * Asked for by hand (hpcinit verify), answer now.
		 */
		if (c->verify || pr.timed_out || now_ms() + delay + 5000 >= end) {
			char *why = launch_failure(r, pr.err);

			report_finding(r, ST_FAILED, pr.timed_out ? "mpi.verify.timeout" : "mpi.verify.launch-failed",
				       "mpirun %s after %d attempt%s: %s", pr.timed_out ? "timed out" : "failed",
				       attempt, attempt > 1 ? "s" : "", why ? why : "see details");
			free(why);
			proc_result_free(&pr);
			break;
		}
		proc_result_free(&pr);
		{
			struct ctx tmp = *c;

			tmp.deadline_ms = end;
			(void)ctx_backoff(&tmp, &delay, 10000);
		}
	}
	ret = 0;
out:
	/* The worst finding first (the core's summary), as "hpcinit verify" shows it. */
	if (r->status == ST_FAILED)
		report_summarize(r);
	strlist_free(&argv);
	fabric_free(&f);
	free(mpirun);
	free(text);
	free(hf);
	free(hfhost);
	return ret;
}

/*
 * The InfiniBand domains the hostfile module wrote hostfiles for
 * (<launcher hostfile>.<domain>, with its header), and how many hosts each
 * lists: what verify pairs within.
 */
static void verify_domains(const struct ctx *c, struct strlist *doms, struct strlist *counts)
{
	const struct spec *s = c->spec;
	const char *dir = s->hostfile.present && s->hostfile.dir ? s->hostfile.dir : "/etc/hpcinit";
	const char *base = launcher_hostfile(s->mpi.launcher);
	char *hp = ctx_path(c, dir);
	DIR *d = opendir(hp);
	struct dirent *e;
	size_t bl = strlen(base);

	free(hp);
	while (d && (e = readdir(d))) {
		char *rel, *text = NULL;

		if (strncmp(e->d_name, base, bl) != 0 || e->d_name[bl] != '.' || !e->d_name[bl + 1])
			continue;
		rel = xasprintf("%s/%s", dir, e->d_name);
		if (fs_read(c, rel, &text, NULL) == 0 && strncmp(text, "# hpcinit:", 10) == 0) {
			strlist_push(doms, e->d_name + bl + 1);
			strlist_push_take(counts, xasprintf("%d", count_hosts(text)));
			/* in name order, whatever readdir's */
			for (size_t k = doms->n - 1; k > 0 && strcmp(doms->v[k - 1], doms->v[k]) > 0; k--) {
				char *t = doms->v[k];

				doms->v[k] = doms->v[k - 1];
				doms->v[k - 1] = t;
				t = counts->v[k];
				counts->v[k] = counts->v[k - 1];
				counts->v[k - 1] = t;
			}
		}
		free(text);
		free(rel);
	}
	if (d)
		closedir(d);
}

/*
 * Verify: over the whole cluster, or, when the hostfile module wrote more
 * than one InfiniBand domain's hostfile, one run per domain of two or more
 * nodes (InfiniBand does not reach across domains); a node alone in its
 * domain is not measured (the mpi step's finding mpi.fabric.alone names it).
 */
int mpi_verify(struct ctx *c, struct report *r)
{
	struct strlist doms = { 0 }, counts = { 0 };
	struct strbuf sum = STRBUF_INIT;
	int ret = 0, ran = 0;

	verify_domains(c, &doms, &counts);
	if (doms.n < 2) {
		strlist_free(&doms);
		strlist_free(&counts);
		return verify_hostfile(c, r, NULL);
	}
	for (size_t d = 0; d < doms.n; d++) {
		int rr;

		if (strcmp(counts.v[d], "1") == 0 || strcmp(counts.v[d], "0") == 0) {
			report_detail(r, "domain %s: %s node, nothing to pair within it: not measured", doms.v[d],
				      counts.v[d]);
			continue;
		}
		report_detail(r, "domain %s: %s nodes: verify pairs only within it", doms.v[d], counts.v[d]);
		rr = verify_hostfile(c, r, doms.v[d]);
		if (rr < 0)
			ret = rr;
		sb_printf(&sum, "%sdomain %s: %s", sum.len ? "; " : "", doms.v[d], r->summary);
		ran++;
	}
	if (ran && r->status != ST_FAILED)
		report_set(r, r->status, "%s", sb_str(&sum));
	else if (!ran)
		report_set(r, r->status, "no InfiniBand domain has two nodes: nothing to measure");
	sb_free(&sum);
	strlist_free(&doms);
	strlist_free(&counts);
	return ret;
}

/*
 * Verify runs on one node only, or every node at boot would start N
 * mpiruns over N nodes: the head node, else the first hostname.
 */
static bool is_leader(const struct peerset *ps)
{
	const struct peer *best = NULL;

	for (size_t i = 0; ps && i < ps->n; i++) {
		const struct peer *p = &ps->v[i];

		if (!p->hostname)
			continue;
		if (!best || (p->head && !best->head) ||
		    (p->head == best->head && strcmp(p->hostname, best->hostname) < 0))
			best = p;
	}
	return best && best->self;
}

static int mpi_run(struct ctx *c, struct report *r)
{
	struct fabric f;
	char *summary;
	int ret;

	fabric_detect(c, &f);
	fabric_peers(c, r, &f);         /* the records: names that differ go into the profile */
	/*
	 * "hpcinit verify" measures and writes nothing: it runs without
	 * discovery, so it does not know the peers the profile speaks of.
	 */
	ret = c->verify ? 0 : profile_converge(c, r, &f);
	if (ret < 0) {
		report_finding(r, ST_FAILED, "mpi.profile.write", "cannot write " PROFILE_PATH);
		fabric_free(&f);
		return ret;
	}
	{
		struct strbuf done = STRBUF_INIT;

		if (!c->verify && sysfiles_converge(c, r, &f, &done) < 0) {
			report_finding(r, ST_FAILED, "mpi.sysfiles.write", "cannot write the MPI and NCCL system "
				       "files (see details)");
			sb_free(&done);
			fabric_free(&f);
			return -EIO;
		}
		if (done.len)
			report_detail(r, "the same settings for mpirun lines outside login shells: %s", sb_str(&done));
		sb_free(&done);
	}
	/*
	 * rdma_cm to peers: the rdma step runs before discovery, so the peers
	 * are checked here; also over a software device the spec allows, which
	 * MPI does not use but other RDMA users (storage, NCCL-style jobs) do.
	 */
	if ((f.rdma || f.soft_rdma) && c->mode != RUN_PLAN && c->out && c->out->peers) {
		unsigned n_checked = 0, n_ok = 0;
		enum rstatus pst = rdma_check_peers(c, r, c->out->peers, &n_checked, &n_ok);

		if (n_checked) {
			char *old = f.what_extra;

			f.what_extra = xasprintf("%s; rdma_cm to %u of %u peer(s) ok", old ? old : "", n_ok, n_checked);
			free(old);
		}
		if (pst != ST_OK)
			report_raise(r, pst);
	}
	if (c->mode != RUN_APPLY || (!c->verify && !c->spec->mpi.verify_enable)) {
		report_set(r, ST_OK, "fabric %s%s", f.what, f.what_extra ? f.what_extra : "");
		report_summarize(r);    /* a peer rdma_cm did not resolve: that first */
		fabric_free(&f);
		return 0;
	}
	/* "hpcinit verify" runs it here and now; apply only on one node. */
	if (!c->verify && !is_leader(c->out ? c->out->peers : NULL)) {
		report_set(r, ST_OK, "fabric %s%s", f.what, f.what_extra ? f.what_extra : "");
		report_summarize(r);
		report_detail(r, "verify runs on the head node (or the first by name), not here");
		fabric_free(&f);
		return 0;
	}
	ret = mpi_verify(c, r);
	summary = xstrdup(r->summary);
	report_set(r, r->status == ST_FAILED ? ST_FAILED : ST_OK, "%s; fabric %s%s", summary, f.what,
		   f.what_extra ? f.what_extra : "");
	free(summary);
	fabric_free(&f);
	return ret;
}

static bool mpi_enabled(const struct spec *s)
{
	return s->mpi.present;
}

static uint64_t mpi_timeout(const struct spec *s)
{
	/*
	 * verify (at apply, or "hpcinit verify" whatever verify.enable says)
	 * waits for the other nodes to trust this one; the profile alone takes
	 * milliseconds.
	 */
	return 10 * 60 * 1000;
}

const struct module mpi_module = {
	.name = "mpi",
	.enabled = mpi_enabled,
	.needs = NULL,
	.timeout_ms = mpi_timeout,
	.check = mpi_run,
	.apply = mpi_run,
	.inputs = OUT_RDMA | OUT_PEERS,
	.isolate = true,        /* the profile, users' homes, mpirun over the network */
};
