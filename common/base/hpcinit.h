/* SPDX-License-Identifier: MIT */
/*
 * The module contract: what the runner hands a step (struct ctx), what a
 * step hands back (struct report, report.h), and the step itself (struct module).
 */
#ifndef HPCINIT_H
#define HPCINIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "report.h"
#include "spec.h"
#include "strbuf.h"
#include "util.h"

struct peerset;                 /* record.h */
struct rdma_result;             /* lib/ib/ibsysfs.h */
struct gpu_inventory;           /* lib/gpu/gpu.h */

/*
 * Typed hand-offs between steps.  Each field is declared by exactly one
 * producer (struct module .outputs) and read only by modules that declare it
 * in .inputs; the producer must run earlier in module_table.  The runner
 * checks the declarations at startup (runner_check_table) and hands each
 * module a view holding only what it declared, so an undeclared read sees
 * NULL.  The runner owns the values and frees them after the run.
 */
enum output_id {
	OUT_PEERS = 1u << 0,    /* peers: discovery */
	OUT_RDMA = 1u << 1,     /* rdma: rdma */
	OUT_GPU = 1u << 2,      /* gpu: gpu */
};
#define OUT_ALL (OUT_PEERS | OUT_RDMA | OUT_GPU)

struct outputs {
	struct peerset *peers;          /* OUT_PEERS: every known node, this one flagged self */
	const struct rdma_result *rdma; /* OUT_RDMA: what the rdma step found usable in this run */
	const struct gpu_inventory *gpu;        /* OUT_GPU: the GPUs the gpu step found (NULL: it could not read them) */
};

/*
 * The run so far, as the running step sees it (c->run): the steps before it
 * in run order, each with its module, its report and whether it ran (false:
 * not selected by --only).  The runner fills it; a step reads it instead of
 * the runner's state or the module table.
 */
struct run_so_far {
	size_t n;                               /* the steps before this one */
	const struct module *const *steps;
	const struct report *reports;
	const bool *ran;
};

/*
 * The node's state as hpcinit composes it from its latest runs (status.json):
 * what status, the health endpoint, the textfile, Slurm and this node's
 * record say of it.  The runner sets c->node before the steps run (the state
 * the last runs left) and again once it wrote this run's status, before it
 * calls the announce hooks (agent/core/status.c, status_prior_load).
 */
struct node_state {
	bool known;             /* false: no full apply since boot (nothing to say yet) */
	enum rstatus status;    /* ST_OK ready, ST_DEGRADED or ST_FAILED */
	char reason[128];       /* the worst finding's tag ("" when ready) */
	int64_t ready_ms;       /* ms from the kernel's start to ready in this boot; -1 not yet */
};

struct ctx {
	const struct spec *spec;
	const char *root;       /* fake root for every path; "" means the real / */
	enum run_mode mode;
	const char *command;    /* "apply", "refresh", "watch", ... (runner_run sets it); NULL: unknown */
	int verbose;
	bool json;
	bool verify;            /* hpcinit verify: the mpi module runs its cluster check */
	bool refresh;           /* hpcinit refresh or watch: discovery looks once, never waits for expect */
	bool step_stays;        /* in a step's child that stays for the announce (runner.c):
				 * a step may keep its session open for it */
	bool announce_follows;  /* this run ends with the announce of the node's state (the first
				 * apply of the boot: runner.c); a step may leave to that put what
				 * it would put itself (discovery: "formed: true") */
	uint64_t deadline_ms;   /* CLOCK_MONOTONIC ms when the running module must give up */
	const char *module;     /* name of the running module, for logs */
	/* Overrides a fake root may supply (documented; tests use them). */
	const char *kernel_release;  /* NULL: uname(2), or <root>/etc/hpcinit/kernel-release */
	const char *hostname;        /* NULL: gethostname(2); read it with node_hostname (util.h) */
	/* This module's view of the typed outputs (struct outputs): its declared
	 * inputs and its own outputs; everything else is NULL. */
	struct outputs *out;
	/* The run so far: the steps before this one, for a step that acts on the
	 * node's readiness (slurm).  Read only; NULL outside a run. */
	const struct run_so_far *run;
	/* The node's state (struct node_state above); known false outside a run. */
	struct node_state node;
};

/*
 * A step.  Hooks left NULL get defaults, resolved in one place
 * (runner.c, module_resolve): enabled: always; timeout_ms: 60 s; check:
 * apply (which writes nothing outside RUN_APPLY); apply: check.  A module
 * must implement check or apply.
 */
struct module {
	const char *name;
	/* Is the module's section in the spec?  Absent means skipped. */
	bool (*enabled)(const struct spec *);
	/* Modules this one needs; a failed or skipped one skips this one.  NULL-terminated;
	 * each must name a module earlier in the table. */
	const char *const *needs;
	/* Default deadline in ms, or a function of the spec. */
	uint64_t (*timeout_ms)(const struct spec *);
	/* Observe only.  Fill rep; return 0 or -errno (-errno also means failed). */
	int (*check)(struct ctx *, struct report *);
	/* Converge idempotently.  In RUN_PLAN the core calls apply with writes diverted. */
	int (*apply)(struct ctx *, struct report *);
	/* Typed outputs this module sets in c->out, and those of earlier modules it reads
	 * (enum output_id bits). */
	unsigned outputs;
	unsigned inputs;
	/* Touches shared storage or the network: the runner runs the hook in a child
	 * (common/base/proc.c) and gives up on it at the deadline, naming what it waited for. */
	bool isolate;
	/* With isolate: the step may run in the child an earlier step left waiting
	 * (agent/core/iso.c: discovery's, in a node's first apply of the boot)
	 * instead of a child of its own.  Such a step reads nothing of the run but
	 * the spec, c->node and its declared inputs (c->run is NULL there), and
	 * leaves its process as it found it (file-system identity, signals, cwd). */
	bool shares_child;
	/* hpcinit leave (and Scheduled Events): take this node out before discovery
	 * removes its record.  NULL: nothing to do. */
	int (*leave)(struct ctx *, struct report *);
	/* After a run that wrote the node's status, when c->node differs from the
	 * state before the run: tell the cluster (discovery puts it in this node's
	 * record).  Run isolated, like leave.  NULL: nothing to do. */
	int (*announce)(struct ctx *, struct report *);
	/* When this step wants a refresh without a change in the cluster (a
	 * record held since it vanished: discovery's grace ends), in now_ms()
	 * time; 0: no such time.  Read by a watcher (hpcinit watch) through
	 * modules_wake_at.  NULL: never. */
	uint64_t (*wake_at)(const struct ctx *);
};

/* True when the mode may change the system. */
static inline bool ctx_may_write(const struct ctx *c) { return c->mode == RUN_APPLY; }
/* True on the real system: no --root, or --root /.  False on a fake root (tests, images). */
static inline bool ctx_real_root(const struct ctx *c)
{
	return !c->root || !c->root[0] || (c->root[0] == '/' && !c->root[1]);
}

#endif
