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
#include "gpu/gpu.h"
#include "ib/ibsysfs.h"
#include "ib/identity.h"
#include "ib/peers.h"
#include "record.h"

#define PROFILE_PATH "/etc/profile.d/hpcinit-mpi.sh"
#define PROFILE_MAGIC "# hpcinit (mpi module)"
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
	for (size_t i = 0; f->soft_fabric && mpi_soft_ucx_env[i]; i++)
		sb_printf(&sb, "export %s\n", mpi_soft_ucx_env[i]);
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
		for (size_t i = 0; f->soft_fabric && mpi_soft_ucx_env[i]; i++)
			sb_printf(&ucx, "%s\n", mpi_soft_ucx_env[i]);
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

/*
 * The GPUs' nearest HCAs (the gpu step's OUT_GPU), by CUDA index in PCI
 * order, for a launch wrapper binding a local rank to its GPU's HCA
 * (docs/gpu.md).  Names are sysfs's, checked safe (lib/gpu/hca.c).
 */
static void profile_gpu(struct strbuf *sb, const struct gpu_inventory *inv)
{
	bool all = inv && inv->n > 0;

	for (size_t i = 0; all && i < inv->n; i++)
		all = inv->gpu[i].hca[0] != '\0';
	if (!inv || !inv->n)
		return;
	sb_printf(sb, "# GPUs (the gpu step): each GPU's nearest InfiniBand HCA, by CUDA index in PCI order.\n");
	if (!all) {
		sb_printf(sb, "# Not every GPU has an HCA here (the gpu step's gpu.hca findings): none exported.\n");
		return;
	}
	sb_printf(sb, "export HPCINIT_GPU_HCA=");
	for (size_t i = 0; i < inv->n; i++)
		sb_printf(sb, "%s%s", i ? "," : "", inv->gpu[i].hca);
	sb_printf(sb, "\n");
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
	if (c->out && c->out->gpu) {
		struct strbuf sb = STRBUF_INIT;

		sb_append(&sb, text);
		profile_gpu(&sb, c->out->gpu);
		free(text);
		text = sb_steal(&sb);
	}
	ret = 0;
	if (!fs_exists(c, "/etc/profile.d"))
		ret = fs_mkdir_p(c, r, "/etc/profile.d", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, PROFILE_PATH, text, strlen(text), 0644, 0, 0);
	free(text);
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

	mpi_fabric_detect(c, &f);
	mpi_fabric_peers(c, r, &f);         /* the records: names that differ go into the profile */
	/*
	 * "hpcinit verify" measures and writes nothing: it runs without
	 * discovery, so it does not know the peers the profile speaks of.
	 */
	ret = c->verify ? 0 : profile_converge(c, r, &f);
	if (ret < 0) {
		report_finding(r, ST_FAILED, "mpi.profile.write", "cannot write " PROFILE_PATH);
		mpi_fabric_free(&f);
		return ret;
	}
	{
		struct strbuf done = STRBUF_INIT;

		if (!c->verify && sysfiles_converge(c, r, &f, &done) < 0) {
			report_finding(r, ST_FAILED, "mpi.sysfiles.write", "cannot write the MPI and NCCL system "
				       "files (see details)");
			sb_free(&done);
			mpi_fabric_free(&f);
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
		enum rstatus pst = ib_check_peers(c, r, c->out->peers, &n_checked, &n_ok);

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
		mpi_fabric_free(&f);
		return 0;
	}
	/* "hpcinit verify" runs it here and now; apply only on one node. */
	if (!c->verify && !is_leader(c->out ? c->out->peers : NULL)) {
		report_set(r, ST_OK, "fabric %s%s", f.what, f.what_extra ? f.what_extra : "");
		report_summarize(r);
		report_detail(r, "verify runs on the head node (or the first by name), not here");
		mpi_fabric_free(&f);
		return 0;
	}
	ret = mpi_verify(c, r);
	summary = xstrdup(r->summary);
	report_set(r, r->status == ST_FAILED ? ST_FAILED : ST_OK, "%s; fabric %s%s", summary, f.what,
		   f.what_extra ? f.what_extra : "");
	free(summary);
	mpi_fabric_free(&f);
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
	.inputs = OUT_RDMA | OUT_PEERS | OUT_GPU,      /* GPU: each GPU's HCA in the profile */
	.isolate = true,        /* the profile, users' homes, mpirun over the network */
	.shares_child = true,   /* reads its inputs and the spec only; mpirun in children of its own */
};
