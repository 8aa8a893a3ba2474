/* SPDX-License-Identifier: MIT */
/*
 * The NVIDIA management library, where the node has it (see nvml.h).
 * Minimal first version: the interface; the reading follows.
 */
#include "config.h"

#include "gpu/nvml.h"

#include "gpu/gpu.h"
#include "hpcinit.h"

int gpu_nvml_check(struct ctx *c, const struct gpu_inventory *inv, struct report *r)
{
	(void)c;
	if (inv->n == 0)
		return 0;
	report_detail(r, "NVML: not read yet (lib/gpu/nvml.c is being written)");
	return 0;
}
