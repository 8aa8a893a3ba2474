/* SPDX-License-Identifier: MIT */
/*
 * The agent's side of the verbs helper hpcinit-rdma-probe (lib/ib/): what
 * the helper and the agent say to each other (proto.c), and its runs under
 * the child engine (probe.c): one helper a device or a peer, each with a
 * deadline, their answers read line by line.  Below the steps: the rdma
 * step probes its devices with it, rdma_cm to peers (peers.c) its peers.
 */
#ifndef HPCINIT_IB_PROBE_H
#define HPCINIT_IB_PROBE_H

#include <stdbool.h>
#include <stdint.h>

#include "hpcinit.h"
#include "ib/ibsysfs.h"
#include "proc.h"

#define RDMA_PROBE_HELPER "hpcinit-rdma-probe"
/* The fixture ops' behaviour (libexec/rdma-fake.c), read only under a fake --root. */
#define RDMA_FAKE_FILE "/etc/hpcinit/fake-rdma"

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
	uint32_t port_state[IB_MAX_PORTS];   /* enum ibv_port_state values */
	char fw_ver[64];
	char resolved_dev[64];          /* rdma_resolve_addr: the device the address maps to */
	char event[64];                 /* rdma_resolve_addr: the unexpected event, if any */
};

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

/* One run of the helper: a device's probe, an interface's resolve, a peer's route. */
struct probe_job {
	const char *what;               /* device, interface or peer */
	bool resolve;
	bool route;                     /* a peer's address: resolve_addr and resolve_route */
	char addr[64];
	struct proc_child ch;           /* the helper (agent/proc.c) */
	bool hung, reaped;
	int wstatus;
	int last_step;
	bool have_result;
	struct probe_result res;
	uint64_t ms;
};

/*
 * Start j: "probe" of j->what registering reg_mr bytes, or "resolve" /
 * "route" of j->addr within timeout_ms.  memlock: the limit a probe or a
 * resolve registers under (bytes, MEMLOCK_UNLIMITED), MEMLOCK_UNSET to keep
 * the agent's.  0 or -errno.
 */
int probe_job_start(const struct ctx *c, struct probe_job *j, uint64_t reg_mr, unsigned timeout_ms,
		    long long memlock);
/*
 * Wait for every job until it answers or timeout_ms passes (cut to leave a
 * second of the step's deadline), kill the rest; fills their results.
 */
void probe_jobs_wait(const struct ctx *c, struct probe_job *jobs, size_t n, uint64_t timeout_ms);
/* Run the helper to its end (list, ifaddr); its stdout in ret (caller frees), -errno when it did not answer. */
int probe_helper_ask(const struct ctx *c, const char *cmd, const char *arg, unsigned timeout_ms,
		     struct strbuf *ret);
/* The value of the first "key value" line of text, or NULL (malloc'd). */
char *probe_helper_field(const char *text, const char *key);

#endif
