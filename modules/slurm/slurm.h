/* SPDX-License-Identifier: MIT */
/* The slurm step (modules/slurm): its pure parts, shared with the unit test. */
#ifndef HPCINIT_SLURM_H
#define HPCINIT_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "strlist.h"

/* The reason prefix hpcinit owns: it resumes only drains whose reason starts with it. */
#define SLURM_REASON_PREFIX "hpcinit:"
#define SLURM_REASON_MAX 200
/* The fact file an image or custom-data may write with this VM's size (IMDS's vmSize). */
#define SLURM_VM_SIZE_FACT "/etc/hpcinit/facts/vm-size"

/* One node as "scontrol show node NAME --oneliner" prints it. */
struct slurm_node {
	bool found;             /* false: "Node X not found" (not registered) */
	char state[128];        /* "IDLE+DRAIN+DYNAMIC_NORM" */
	char reason[256];       /* without the " [user@time]" scontrol appends; "" when none */
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

#endif
