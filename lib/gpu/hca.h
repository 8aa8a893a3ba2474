/* SPDX-License-Identifier: MIT */
/*
 * Each GPU's nearest InfiniBand HCA (hca.c).  Inside an Azure VM every PCI
 * device has a domain of its own, so sysfs shows no switch a GPU and an HCA
 * share, only NUMA nodes; the pairing Azure publishes for NCCL per size
 * (lib/gpu/sizes.c) says which, and sysfs's NUMA node checks it.
 */
#ifndef HPCINIT_GPU_HCA_H
#define HPCINIT_GPU_HCA_H

#include <stddef.h>

#include "gpu/gpu.h"
#include "gpu/sizes.h"

struct ctx;
struct strlist;

#define GPU_HCA_MAX 32

struct gpu_hca {
	char name[32];          /* the RDMA device ("mlx5_ib0"), as gpu_dev.hca holds it */
	char pci[16];           /* its PCI address, from /sys/class/infiniband/<name>/device */
	int numa;               /* its NUMA node, -1 unknown */
	bool infiniband;        /* port 1's link layer is InfiniBand */
};

/* The RDMA devices with a PCI address, by name.  Returns how many (at most max). */
size_t gpu_hca_read(const struct ctx *c, struct gpu_hca *h, size_t max);
/*
 * Set inv->gpu[i].hca: with sz's pairing, the HCA at the paired PCI address;
 * else the InfiniBand HCAs of the GPU's NUMA node in turn.  Each thing that
 * does not hold (a paired HCA absent, on another NUMA node than its GPU)
 * is a line in problems, naming the GPU's PCI address.  how: where the
 * pairing came from ("Azure's pairing for <size>", "NUMA nodes").
 */
void gpu_hca_pair(struct gpu_inventory *inv, const struct gpu_hca *h, size_t nh, const struct gpu_size *sz,
		  struct strlist *problems, const char **how);

#endif
