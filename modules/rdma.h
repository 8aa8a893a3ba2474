/* SPDX-License-Identifier: MIT */
/*
 * rdma: the hardware side sits behind an ops table (STYLE.md item 6),
 * chosen once per run: libibverbs/librdmacm (rdma_verbs.c), or, on a fake
 * root that asks for it, the fixture ops (rdma_fake.c, test only).
 * Everything else -- sysfs inventory, the forked probes with their timeout,
 * the verdicts -- is rdma.c and runs the same with either table.
 */
#ifndef HPCINIT_RDMA_H
#define HPCINIT_RDMA_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcinit.h"

#define RDMA_MAX_PORTS 16
#define RDMA_FAKE_FILE "/etc/hpcinit/fake-rdma"   /* read only under a fake --root */

/* Steps of a probe child, reported to the parent before each call. */
enum probe_step {
	STEP_NONE,
	STEP_OPEN,              /* ibv_open_device */
	STEP_QUERY_DEVICE,      /* ibv_query_device */
	STEP_QUERY_PORT,        /* ibv_query_port */
	STEP_ALLOC_PD,          /* ibv_alloc_pd */
	STEP_REG_MR,            /* ibv_reg_mr */
	STEP_CM_CHANNEL,        /* rdma_create_event_channel / rdma_create_id */
	STEP_RESOLVE_ADDR,      /* rdma_resolve_addr and its event */
	STEP_DONE,
};

/* The child's answer: a fixed layout written once through a pipe. */
struct probe_result {
	int32_t step;                   /* STEP_DONE, or the step that failed */
	int32_t err;                    /* errno of the failure (positive); 0 when done */
	uint64_t memlock_cur;           /* RLIMIT_MEMLOCK in force in the probe; UINT64_MAX: unlimited */
	uint64_t memlock_max;
	uint32_t phys_port_cnt;
	uint32_t port_state[RDMA_MAX_PORTS];   /* enum ibv_port_state values */
	char fw_ver[64];
	char resolved_dev[64];          /* rdma_resolve_addr: the device the address maps to */
	char event[64];                 /* rdma_resolve_addr: the unexpected event, if any */
};

/* Child side: announce a step (so a hang names its call). */
struct probe_io {
	int fd;
};
void probe_step(struct probe_io *io, enum probe_step s);
/* Child side: give up CAP_IPC_LOCK so pinning is charged to RLIMIT_MEMLOCK, as for an MPI rank. */
int probe_drop_ipc_lock(void);
void probe_raise_memlock(const struct spec *s);
void probe_read_memlock(struct probe_result *res);
const char *probe_step_call(enum probe_step s);
const char *errno_name(int e);
int errno_from_name(const char *name);

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
	/* In a probe child: rdma_resolve_addr(addr) within timeout_ms; resolved_dev on success. */
	void (*resolve)(const struct ctx *c, const char *addr, unsigned timeout_ms,
			struct probe_io *io, struct probe_result *res);
	void (*fini)(void);
};

extern const struct rdma_ops rdma_verbs_ops;
extern const struct rdma_ops rdma_fake_ops;

/* What the rdma module found, for later modules (ctx->rdma_result; owned by rdma.c). */
struct rdma_result {
	bool usable;                    /* selected devices passed every check */
	enum link_layer link_layer;     /* of the selected devices */
	unsigned rate_gbps;             /* lowest active rate among them */
	char devices[256];              /* selected device names, space-separated */
	char ipoib_addr[64];            /* "" when none */
};

#endif
