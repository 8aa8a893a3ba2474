/* SPDX-License-Identifier: MIT */
/* The boot, timed: this boot's phases from the kernel to "registered with Slurm". */
#ifndef HPCINIT_BOOT_H
#define HPCINIT_BOOT_H

#include <stdbool.h>

#include "strbuf.h"

struct ctx;
struct run_result;

#define BOOT_PATH "/run/hpcinit/boot.json"
#define BOOT_MAX_PHASES 40

/* Each phase is the unix time in ms when it ended (0: not yet, or unknown). */
struct boot_phase {
	char name[48];
	long long at_ms;
};

struct boot {
	long long boot_ms;              /* the kernel started (/proc/stat btime), 0 unknown */
	struct boot_phase ph[BOOT_MAX_PHASES];
	size_t n;
};

/*
 * Load BOOT_PATH (this boot's record, on tmpfs), read the kernel's and
 * cloud-init's times again, and add what this run reached for the first time:
 * each step's end and "mounts", "fabric" (the nfs and rdma steps done), "ready"
 * (a full apply that ended ready or degraded) and "slurm" (the slurm step
 * registered the node).  full: the run is a full apply; a check reaches
 * none.  Writes BOOT_PATH back; b holds the result (sorted by time).
 */
void boot_update(struct ctx *c, const struct run_result *res, bool full, struct boot *b);
/* ms from the kernel's start to "ready" in this boot (BOOT_PATH), -1 not yet or not known. */
long long boot_ready_ms(const struct ctx *c);
/* The "boot" object of status.json. */
void boot_json(struct strbuf *sb, const struct boot *b);

#endif
