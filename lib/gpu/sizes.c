/* SPDX-License-Identifier: MIT */
/*
 * The GPU tables (sizes.h), one place each: GRES types by PCI device id,
 * Azure's GPU sizes with their counts, and the GPU-to-HCA pairing of the
 * sizes whose NCCL topology file Azure publishes (azhpc-images
 * topology/ files).  Data only; docs/gpu.md lists them.
 */
#include "config.h"

#include <strings.h>

#include "gpu/sizes.h"

static const struct { unsigned device; const char *type; } types[] = {
	{ 0x2330, "h100" },     /* H100 SXM5 80GB (ND H100 v5) */
	{ 0x2331, "h100" },     /* H100 PCIe */
	{ 0x2321, "h100" },     /* H100 NVL (NC H100 v5) */
	{ 0x2335, "h200" },     /* H200 SXM 141GB (ND H200 v5) */
	{ 0x20b0, "a100" },     /* A100 SXM4 40GB (ND A100 v4) */
	{ 0x20b2, "a100" },     /* A100 SXM4 80GB (ND A100 v4 amsr) */
	{ 0x20b5, "a100" },     /* A100 PCIe 80GB (NC A100 v4) */
	{ 0x20f1, "a100" },     /* A100 PCIe 40GB */
	{ 0x1db1, "v100" },     /* V100 SXM2 16GB (ND v2) */
	{ 0x1db4, "v100" },     /* V100 PCIe 16GB (NC v3) */
	{ 0x1db5, "v100" },     /* V100 SXM2 32GB */
	{ 0x1eb8, "t4" },       /* T4 (NC T4 v3) */
	{ 0x26b9, "l40s" },     /* L40S */
};

/* ND H100 v5: azhpc-images topology/ndv5-topo.xml.  (ND H200 v5 is not assumed to share it: NUMA nodes.) */
static const struct gpu_pair ndv5_pairs[] = {
	{ "0001:00:00.0", "0101:00:00.0" }, { "0002:00:00.0", "0102:00:00.0" },
	{ "0003:00:00.0", "0103:00:00.0" }, { "0008:00:00.0", "0104:00:00.0" },
	{ "0009:00:00.0", "0105:00:00.0" }, { "000a:00:00.0", "0106:00:00.0" },
	{ "000b:00:00.0", "0107:00:00.0" }, { "000c:00:00.0", "0108:00:00.0" },
	{ NULL, NULL },
};

static const struct gpu_size sizes[] = {
	{ "Standard_ND96isr_H100_v5", 8, ndv5_pairs },
	{ "Standard_ND96isr_H200_v5", 8, NULL },
	{ "Standard_ND96asr_v4", 8, NULL },
	{ "Standard_ND96amsr_A100_v4", 8, NULL },
	{ "Standard_ND40rs_v2", 8, NULL },
	{ "Standard_NC24ads_A100_v4", 1, NULL },
	{ "Standard_NC48ads_A100_v4", 2, NULL },
	{ "Standard_NC96ads_A100_v4", 4, NULL },
	{ "Standard_NC40ads_H100_v5", 1, NULL },
	{ "Standard_NC80adis_H100_v5", 2, NULL },
	{ "Standard_NC6s_v3", 1, NULL },
	{ "Standard_NC12s_v3", 2, NULL },
	{ "Standard_NC24s_v3", 4, NULL },
	{ "Standard_NC24rs_v3", 4, NULL },
	{ "Standard_NC4as_T4_v3", 1, NULL },
	{ "Standard_NC8as_T4_v3", 1, NULL },
	{ "Standard_NC16as_T4_v3", 1, NULL },
	{ "Standard_NC64as_T4_v3", 4, NULL },
};

const char *gpu_type_of(unsigned device)
{
	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
		if (types[i].device == device)
			return types[i].type;
	return "";
}

const struct gpu_size *gpu_size_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(sizes) / sizeof(sizes[0]); i++)
		if (strcasecmp(sizes[i].name, name) == 0)
			return &sizes[i];
	return NULL;
}
