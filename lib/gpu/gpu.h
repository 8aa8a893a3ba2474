/* SPDX-License-Identifier: MIT */
/*
 * The node's GPUs as the kernel shows them (lib/gpu/): PCI functions of
 * NVIDIA 3D and display controllers, the driver they are bound to, their
 * device nodes, the NVSwitches, the driver's version and the nearest
 * InfiniBand HCA of each.  The gpu step fills one and hands it on
 * (OUT_GPU); slurm (GRES, gres.conf) and mpi read it.  Read under the ctx's
 * root like every other fact.
 */
#ifndef HPCINIT_LIB_GPU_H
#define HPCINIT_LIB_GPU_H

#include <stdbool.h>
#include <stddef.h>

#define GPU_MAX 64              /* GPUs a node may have; more is a finding, not an overflow */

struct gpu_dev {
	char pci[16];           /* PCI address as sysfs names it: "0001:00:00.0" */
	unsigned vendor;        /* 0x10de */
	unsigned device;        /* PCI device id: 0x2330 (H100 SXM) */
	unsigned class_code;    /* 0x030200 (3D controller) or 0x0300xx (VGA) */
	int numa;               /* NUMA node sysfs gives, -1 where none */
	bool bound;             /* its driver link names "nvidia" */
	int minor;              /* the driver's minor (/dev/nvidia<minor>), -1 unknown */
	bool dev_node;          /* /dev/nvidia<minor> is a character device */
	char type[32];          /* the Slurm GRES type ("h100", "a100"), "" when unknown */
	char hca[32];           /* nearest InfiniBand HCA ("mlx5_0"), "" when none */
};

struct gpu_inventory {
	size_t n;               /* GPUs on the PCI bus (bound or not), in PCI address order */
	struct gpu_dev gpu[GPU_MAX];
	unsigned expected;      /* gpu.count, or the VM size's count; 0 when neither says */
	size_t n_usable;        /* bound, with their device nodes */
	size_t n_nvswitch;      /* NVSwitches on the bus */
	char driver_version[32];        /* /proc/driver/nvidia/version, "" when no driver */
	bool ctl;               /* /dev/nvidiactl is a character device */
};

#endif
