/* SPDX-License-Identifier: MIT */
/*
 * The NVIDIA management library (NVML, libnvidia-ml.so.1), where the node
 * has it (lib/gpu/nvml.c): loaded with dlopen in a child under a deadline,
 * never linked, so hpcinit keeps no build dependency on it and a node
 * without it loses nothing but these facts (a detail line, no finding).
 * Per GPU of the inventory, matched by PCI address: persistence mode, ECC
 * mode and uncorrectable errors, row remapping (A100, H100 and later) or
 * retired pages (older GPUs).  The findings and their thresholds are in
 * docs/gpu.md ("The management library (NVML)").
 */
#ifndef HPCINIT_LIB_GPU_NVML_H
#define HPCINIT_LIB_GPU_NVML_H

struct ctx;
struct report;
struct gpu_inventory;

/* The library dlopen asks for: the driver's, found by the dynamic loader. */
#define NVML_LIB_DEFAULT "libnvidia-ml.so.1"
/*
 * The override of the library's path (tests load a stand-in): an absolute
 * path, honoured only where the file and every directory above it are owned
 * by root or by this process's user and writable by no one else, since the
 * library's code runs in a root process.  Under a fake root (--root) the
 * default library is never loaded (it would read this machine's GPUs, not
 * the root's); only the override is.
 */
#define NVML_LIB_ENV "HPCINIT_NVML_LIB"
/* The longest the reading may take, even when the step's deadline is later. */
#define NVML_DEADLINE_MS 20000u
/* Kept back from the step's deadline for the step's own report; less than twice this left: not read. */
#define NVML_RESERVE_MS 500u

/*
 * Read NVML for the GPUs of inv and add to r a detail line per GPU and the
 * findings (gpu.nvml.*, gpu.persistence.*, gpu.ecc.*, gpu.rowremap.*,
 * gpu.pages.*).  Ends by c->deadline_ms (or NVML_DEADLINE_MS from now,
 * whichever comes first) whatever the driver does.  0, or -errno when the
 * reader could not be started (a finding says so too).
 */
int gpu_nvml_check(struct ctx *c, const struct gpu_inventory *inv, struct report *r);

#endif
