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
	bool truncated;         /* more than GPU_MAX GPUs on the bus: the rest are not listed */
	char nvswitch_pci[16];  /* the first NVSwitch's PCI address, "" when none */
	char vm_size[64];       /* the VM size the expected count came from, "" when none */
};

struct ctx;
/*
 * Fill inv from <root>/sys/bus/pci/devices, /proc/driver/nvidia and /dev
 * (zeroed first; expected, type and hca left to the caller): every NVIDIA
 * function of class 0x0302xx or 0x0300xx in PCI address order, NVSwitches
 * counted.  Plain reads; the caller bounds them in time (modules/gpu).
 */
void gpu_inventory_read(const struct ctx *c, struct gpu_inventory *inv);
/* The driver's version in /proc/driver/nvidia/version's text ("535.161.08"), "" when none. */
void gpu_parse_driver_version(const char *text, char *out, size_t n);
/* "Device Minor: N" of /proc/driver/nvidia/gpus/<addr>/information, -1 when none. */
int gpu_parse_minor(const char *text);
/* Is this PCI function a GPU (NVIDIA, 3D or VGA controller)? An NVSwitch? */
bool gpu_is_gpu(unsigned vendor, unsigned class_code);
bool gpu_is_nvswitch(unsigned vendor, unsigned device);

#endif
