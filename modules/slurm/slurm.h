/* SPDX-License-Identifier: MIT */
/* The slurm step (modules/slurm): its pure parts (words.c: scontrol's answers,
 * reasons, features, memory, the arrival's window and slot; gres.c: GRES and
 * Slurm versions), shared with slurm.c and the unit test, and arrival.c's side
 * of the arrival (the address, the wait, what was last told). */
#ifndef HPCINIT_SLURM_H
#define HPCINIT_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "strlist.h"
#include "gpu/gpu.h"

/* The reason prefix hpcinit owns: it resumes only drains whose reason starts with it. */
#define SLURM_REASON_PREFIX "hpcinit:"
#define SLURM_REASON_MAX 200
/*
 * The node's own gres.conf lines.  A configless slurmd keeps only the files
 * slurmctld serves in its cache (a gres.conf the controller lacks is
 * removed there), so the head's gres.conf says "Include <this>" and every
 * node reads its own (docs/slurm.md).
 */
#define SLURM_GRES_INCLUDE "/etc/slurm/hpcinit-gres.conf"
/* The fact file an image or custom-data may write with this VM's size (IMDS's vmSize). */
#define SLURM_VM_SIZE_FACT "/etc/hpcinit/facts/vm-size"

/* One node as "scontrol show node NAME --oneliner" prints it. */
struct slurm_node {
	bool found;             /* false: "Node X not found" (not registered) */
	char state[128];        /* "IDLE+DRAIN+DYNAMIC_NORM" */
	char reason[256];       /* without the " [user@time]" scontrol appends; "" when none */
	char addr[64];          /* NodeAddr: the address slurmctld talks to it by; "" when not said */
	bool drain;             /* DRAIN in the state (draining or drained) */
	bool busy;              /* jobs on it: ALLOCATED, MIXED or COMPLETING */
	bool down;              /* DOWN or NOT_RESPONDING */
};

/* Parse scontrol's answer; 0, or -EBADMSG when it is neither a node nor "not found". */
int slurm_parse_node(const char *text, struct slurm_node *ret);
/* "hpcinit:<tag>[,<tag>...]" of at most SLURM_REASON_MAX bytes, "+N" for tags left off. malloc'd. */
char *slurm_reason(const struct strlist *tags);
bool slurm_reason_ours(const char *reason);
/*
 * The node's features, in order, without duplicates: the cluster's name, the
 * VM size (lower-cased; NULL or "" when unknown), the InfiniBand domain
 * ("ib-<id>"; NULL until the fabric identity is recorded), then the spec's.
 * Characters Slurm does not take in a feature become '_'.
 */
void slurm_features(const char *cluster, const char *vm_size, const char *ib_domain,
		    const struct strlist *extra, struct strlist *ret);
/* RealMemory in MiB: MemTotal (KiB) less margin_pct percent, rounded down; at least 1. */
uint64_t slurm_real_memory_mb(uint64_t memtotal_kib, unsigned margin_pct);
/* MemTotal in KiB from /proc/meminfo's text; 0 when absent. */
uint64_t slurm_meminfo_total_kib(const char *meminfo);
/* slurmd --conf's value: "RealMemory=N Feature=a,b". malloc'd. */
char *slurm_node_conf(uint64_t real_memory_mb, const struct strlist *features);

/* ---- arrival: when a node registers, and from where (words.c; arrival.c the step's side) ---- */

/* slurm.register_window unset: SLURM_WINDOW_PER_NODE_MS a node of discovery.expect, at most SLURM_WINDOW_MAX_MS. */
#define SLURM_WINDOW_AUTO UINT64_MAX
#define SLURM_WINDOW_PER_NODE_MS 10u
#define SLURM_WINDOW_MAX_MS 60000u
/* The window: spec_ms when set; else scaled to expect (the cluster's size; 1 or less: unknown, 0 ms). */
uint64_t slurm_register_window_ms(uint64_t spec_ms, unsigned expect);
/*
 * This node's place in the window: slot index mod slots, delay slot * window / slots,
 * where slots is expect when the cluster's size is known (> 1), else the window's
 * milliseconds.  index is the host part of the node's address in cluster.network
 * (a scale set's consecutive addresses land in consecutive slots: N nodes, N even
 * slots) or, without one, slurm_name_index of its name.
 */
uint64_t slurm_register_delay_ms(uint64_t window_ms, unsigned expect, uint64_t index);
/* FNV-1a of the node's name: the index of a node without an address in cluster.network. */
uint64_t slurm_name_index(const char *name);
/*
 * The state a node last told slurmctld, as /run/hpcinit/slurm-told keeps it:
 * "<name> <want>\n", want the drain reason or "ready".  malloc'd.
 */
char *slurm_told_line(const char *name, const char *want);

/* arrival.c: the step's side of the same (reads interfaces, sleeps, keeps /run/hpcinit/slurm-told). */
struct ctx;
struct report;
struct spec;
/* The address slurmctld is given: this node's record's, else its first in cluster.network; NULL: none known. */
char *slurm_node_addr(const struct ctx *c);
/* slurm.register_window as it applies to this spec (scaled to discovery.expect when unset). */
uint64_t slurm_window_of(const struct spec *s);
/* Wait this node's slot of the window (apply; plan and check only say it); 0 or -ETIMEDOUT. */
int slurm_pace(struct ctx *c, struct report *rep, const char *name, const char *addr);
/*
 * apply: slurmctld's NodeAddr for the node (have) is not its address (22.05 takes the
 * address a dynamic node registered from, whatever --conf says): set it.  0 or -errno.
 */
int slurm_fix_addr(struct ctx *c, struct report *rep, const char *name, const char *have);
/* The node's state is what it last told slurmctld in this boot. */
bool slurm_told_same(const struct ctx *c, const char *name, const char *want);
/* Keep what was told (want NULL: ready); name NULL forgets it. */
void slurm_told_write(const struct ctx *c, const char *name, const char *want);

/* ---- gres.c: GPUs and versions --------------------------------------------- */

/* A Slurm release: major.minor decide what talks to what ("22.05.8": 22, 5). */
struct slurm_version {
	unsigned major, minor;
	char text[32];          /* as printed: "22.05.8" */
};

/* The last word of the first line ("slurm-wlm 22.05.8" from slurmd -V); 0 or -EBADMSG. */
int slurm_version_parse(const char *text, struct slurm_version *ret);
/* SLURM_VERSION of "scontrol show config" (slurmctld's own version); 0 or -EBADMSG. */
int slurm_config_version(const char *show_config, struct slurm_version *ret);
/* a is a later release than b (major.minor; the patch level does not count). */
bool slurm_version_newer(const struct slurm_version *a, const struct slurm_version *b);
/* The words of a client's complaint that say slurmctld refused its protocol (the client is newer); NULL if none. */
const char *slurm_refused_protocol(const char *err);

bool slurm_gres_type_ok(const char *type);
/* GPUs Slurm can be given: bound, with a device node and a known minor. */
size_t slurm_gres_count(const struct gpu_inventory *inv);
/*
 * slurmd --conf's Gres value: "gpu:h100:8" when every usable GPU's type is
 * known ("gpu:a:2,gpu:b:1" for two types), else "gpu:8"; NULL when none.
 * malloc'd.
 */
char *slurm_gres(const struct gpu_inventory *inv);
/* The gres.conf text: one "Name=gpu [Type=t] File=/dev/nvidia<minor>" line a usable GPU, by minor. malloc'd. */
char *slurm_gres_conf(const struct gpu_inventory *inv);

#endif
