/* SPDX-License-Identifier: MIT */
/*
 * rdma: the hardware side sits behind an ops table (STYLE.md item 6) in
 * the probe helper libexec/hpcinit-rdma-probe, chosen once per run:
 * libibverbs/librdmacm (verbs.c), or, on a fake root that asks for it, the
 * fixture ops (fake.c, linked only when configured --enable-test-backends).
 * The agent never maps the verbs libraries: rdma.c runs the helper through
 * the child engine (agent/base/proc.c) under rdma.open_timeout and reads its
 * answer (proto.c).  The sysfs inventory is ibsysfs.c, shared with mpi.
 */
#ifndef HPCINIT_RDMA_H
#define HPCINIT_RDMA_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcinit.h"
#include "ib/ibsysfs.h"

#define RDMA_MAX_PORTS IB_MAX_PORTS
#define RDMA_PROBE_HELPER "hpcinit-rdma-probe"
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
	STEP_RESOLVE_ROUTE,     /* rdma_resolve_route and its event (a peer's address); after
				 * STEP_DONE so the wire numbers of the others stay */
};

/* A probe's answer (proto.c carries it as text). */
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

/* Probe side (child.c): announce a step on io->fd (so a hang names its call). */
struct probe_io {
	int fd;
};
void probe_step(struct probe_io *io, enum probe_step s);
/* Give up CAP_IPC_LOCK so pinning is charged to RLIMIT_MEMLOCK, as for an MPI rank. */
int probe_drop_ipc_lock(void);
/* Set RLIMIT_MEMLOCK to bytes (UINT64_MAX: unlimited), where allowed. */
void probe_raise_memlock(uint64_t bytes);
void probe_read_memlock(struct probe_result *res);

/* Both sides (proto.c). */
const char *probe_step_call(enum probe_step s);
const char *errno_name(int e);
int errno_from_name(const char *name);
void probe_emit_step(int fd, enum probe_step s);
void probe_emit_result(int fd, const struct probe_result *res);
struct probe_parsed {
	int last_step;                  /* the last step announced (STEP_NONE: none) */
	bool have_result;               /* the result line arrived */
	struct probe_result res;
};
/* Parse a probe's output; a cut last line is ignored. */
void probe_parse(const char *text, size_t len, struct probe_parsed *ret);

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
/* The fixture ops (fake.c) when built --enable-test-backends, else NULL (nofake.c). */
extern const struct rdma_ops *const rdma_test_ops;

/* What the rdma module found, for later modules (the typed output c->out->rdma). */
struct rdma_result {
	bool usable;                    /* selected devices passed every check */
	enum link_layer link_layer;     /* of the selected devices */
	unsigned rate_gbps;             /* lowest active rate among them */
	char devices[256];              /* selected device names, space-separated */
	char ipoib_addr[64];            /* "" when none */
};

/* Peers whose address rdma_cm resolves (addr and route) per run, at most. */
#define RDMA_PEERS_MAX 3
struct peerset;
/*
 * rdma_cm to peers (the mpi step calls it: peers are known after discovery):
 * resolve the address and the route to the IPoIB address (rdma.ipoib set) or,
 * on an Ethernet link layer (RoCE, rxe), the cluster address of up to
 * RDMA_PEERS_MAX peers that follow this node in peers' order, in parallel
 * helpers under rdma.open_timeout.  One detail a peer; a failure is a finding
 * (rdma.peer-resolve: failed, degraded when rdma.required is false).
 * Returns the worst status (ST_OK when nothing was to check); n_checked
 * peers were probed, n_ok of them resolved.
 */
enum rstatus rdma_check_peers(struct ctx *c, struct report *r, const struct peerset *peers,
			      unsigned *n_checked, unsigned *n_ok);

#endif
