/* SPDX-License-Identifier: MIT */
/*
 * The verbs helper hpcinit-rdma-probe: the hardware side sits behind an
 * ops table (docs/conventions.md "Ops tables"), chosen once per run: libibverbs/librdmacm
 * (rdma-verbs.c), or, on a fake root that asks for it, the fixture ops
 * (rdma-fake.c, linked only when configured --enable-test-backends).  The
 * agent never maps the verbs libraries: the rdma step (modules/rdma/rdma.c)
 * runs the helper through lib/ib/probe.c under rdma.open_timeout and reads
 * its answer (lib/ib/proto.c).  The sysfs inventory is lib/ib/ibsysfs.c.
 */
#ifndef HPCINIT_RDMA_PROBE_H
#define HPCINIT_RDMA_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcinit.h"
#include "ib/ibsysfs.h"
#include "ib/probe.h"

#define RDMA_MAX_PORTS IB_MAX_PORTS

/* Probe side (rdma-child.c): announce a step on io->fd (so a hang names its call). */
struct probe_io {
	int fd;
};
void probe_step(struct probe_io *io, enum probe_step s);
/* Give up CAP_IPC_LOCK so pinning is charged to RLIMIT_MEMLOCK, as for an MPI rank. */
int probe_drop_ipc_lock(void);
/* Set RLIMIT_MEMLOCK to bytes (UINT64_MAX: unlimited), where allowed. */
void probe_raise_memlock(uint64_t bytes);
void probe_read_memlock(struct probe_result *res);

struct rdma_ops {
	const char *name;
	/* Before any other call: the real table points libibverbs at <root>/sys. */
	int (*init)(const struct ctx *c);
	/* Devices the verbs library lists (names appended to ret).  0 or -errno. */
	int (*list)(const struct ctx *c, struct strlist *ret);
	/* In a probe child: open, query device and ports, alloc a PD, register reg_mr bytes. */
	void (*probe)(const struct ctx *c, const char *dev, uint64_t reg_mr, struct probe_io *io,
		      struct probe_result *res);
	/* An interface's address (IPv4 first, then global IPv6).  0, -ENOENT (none), -errno. */
	int (*if_addr)(const struct ctx *c, const char *ifname, char *buf, size_t n);
	/*
	 * In a probe child: rdma_resolve_addr(addr) within timeout_ms, then, with
	 * route (a peer's address), rdma_resolve_route; resolved_dev on success.
	 */
	void (*resolve)(const struct ctx *c, const char *addr, unsigned timeout_ms, bool route,
			struct probe_io *io, struct probe_result *res);
	void (*fini)(void);
};

extern const struct rdma_ops rdma_verbs_ops;
/* The fixture ops (rdma-fake.c) when built --enable-test-backends, else NULL (rdma-nofake.c). */
extern const struct rdma_ops *const rdma_test_ops;

#endif
