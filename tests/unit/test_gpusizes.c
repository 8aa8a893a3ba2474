/* SPDX-License-Identifier: MIT */
/* lib/gpu/sizes.c: the GRES types, the GPU sizes and Azure's GPU-HCA pairing as data. */
#include "config.h"

#include <string.h>

#include "../../lib/gpu/sizes.c"
#include "test.h"

int main(void)
{
	const struct gpu_size *z;
	size_t n = 0;

	TEST_STREQ(gpu_type_of(0x2330), "h100");
	TEST_STREQ(gpu_type_of(0x2335), "h200");
	TEST_STREQ(gpu_type_of(0x20b2), "a100");
	TEST_STREQ(gpu_type_of(0x20b5), "a100");
	TEST_STREQ(gpu_type_of(0x22a3), "");    /* an NVSwitch is no GPU type */
	z = gpu_size_find("standard_nd96isr_h100_v5");  /* IMDS's case is not promised */
	TEST_CHECK(z != NULL);
	TEST_INTEQ(z->gpus, 8);
	for (; z->pairs[n].gpu; n++)
		;
	TEST_INTEQ(n, 8);
	/* Azure's layout: GPUs 0001-0003, 0008 (NUMA 0), 0009-000c (NUMA 1), HCAs 0101-0108 in turn. */
	TEST_STREQ(z->pairs[3].gpu, "0008:00:00.0");
	TEST_STREQ(z->pairs[3].hca, "0104:00:00.0");
	TEST_STREQ(z->pairs[4].gpu, "0009:00:00.0");
	TEST_STREQ(z->pairs[7].hca, "0108:00:00.0");
	TEST_INTEQ(gpu_size_find("Standard_NC96ads_A100_v4")->gpus, 4);
	TEST_CHECK(gpu_size_find("Standard_NC96ads_A100_v4")->pairs == NULL);
	TEST_INTEQ(gpu_size_find("Standard_ND96asr_v4")->gpus, 8);
	TEST_CHECK(gpu_size_find("Standard_HB176rs_v4") == NULL);
	TEST_CHECK(gpu_size_find(NULL) == NULL);
	TEST_EXIT();
}
