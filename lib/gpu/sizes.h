/* SPDX-License-Identifier: MIT */
/*
 * What is known of GPUs and VM sizes, as data (sizes.c): the Slurm GRES type
 * of a PCI device id, the GPUs an Azure VM size has, and the GPU-to-HCA
 * pairing Azure publishes for NCCL per size.
 */
#ifndef HPCINIT_GPU_SIZES_H
#define HPCINIT_GPU_SIZES_H

#include <stddef.h>

/* The fact file an image or custom-data may write with this VM's size (IMDS's vmSize); slurm reads the same. */
#define GPU_VM_SIZE_FACT "/etc/hpcinit/facts/vm-size"

struct gpu_pair {
	const char *gpu;        /* the GPU's PCI address ("0001:00:00.0") */
	const char *hca;        /* its HCA's ("0101:00:00.0") */
};

struct gpu_size {
	const char *name;       /* "Standard_ND96isr_H100_v5" (matched without regard to case) */
	unsigned gpus;
	const struct gpu_pair *pairs;   /* Azure's pairing (its NCCL topology file), NULL-terminated; NULL: none known */
};

/* The GRES type of an NVIDIA PCI device id ("h100", "a100"), "" when not in the table. */
const char *gpu_type_of(unsigned device);
/* The size named (IMDS's vmSize), NULL when it has no GPUs in the table. */
const struct gpu_size *gpu_size_find(const char *name);

#endif
