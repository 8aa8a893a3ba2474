/* SPDX-License-Identifier: MIT */
/* The mpi step's parts: the fabric (fabric.c), the profile (mpi.c) and the cluster check (verify.c). */
#ifndef HPCINIT_MPI_H
#define HPCINIT_MPI_H

#include "hpcinit.h"

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

void mpi_fabric_detect(const struct ctx *c, struct fabric *f);
/* The records: device names that differ, InfiniBand domains, a node alone in one. */
void mpi_fabric_peers(const struct ctx *c, struct report *r, struct fabric *f);
void mpi_fabric_free(struct fabric *f);
/* What UCX needs on a software device (mpi.software_fabric), "NAME=value", NULL-terminated. */
extern const char *const mpi_soft_ucx_env[];

/*
 * Run hpcinit-mpiverify with mpirun over <hostfile.dir>/hostfile.openmpi:
 * hello from every node, then latency and bandwidth between neighbour
 * pairs.  Fills r (one detail per pair, the slow pair in the summary) and
 * returns 0, or -errno when it could not run.  Uses c->deadline_ms when
 * set, else 2 minutes.  During apply it retries until then while nodes
 * refuse the login (they may still be setting up); for "hpcinit verify"
 * (c->verify) it tries once.
 * Runs as the first ssh.users account when started as root.
 */
int mpi_verify(struct ctx *c, struct report *r);

#endif
