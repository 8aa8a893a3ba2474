/* SPDX-License-Identifier: MIT */
/*
 * The real module table (modules/table.c): every need names an earlier
 * module, every output has exactly one producer that runs before its
 * readers, every module has a hook.  A misspelled need or output fails here,
 * in make check, before any run meets it at startup.
 */
#include "config.h"

#include <errno.h>

#include "hpcinit.h"
#include "runner.h"
#include "test.h"

int main(void)
{
	size_t n = 0;
	unsigned produced = 0;

	TEST_INTEQ(runner_check_table(module_table), 0);
	for (; module_table[n]; n++) {
		const struct module *m = module_table[n];

		TEST_CHECK(module_find(m->name) == m);
		produced |= m->outputs;
	}
	TEST_INTEQ(n, 10);
	TEST_CHECK(strcmp(module_table[n - 1]->name, "slurm") == 0);   /* last: it reads the run so far */
	TEST_INTEQ(produced, OUT_ALL);
	TEST_CHECK(module_find("discovery")->outputs & OUT_PEERS);
	TEST_CHECK(module_find("rdma")->outputs & OUT_RDMA);
	TEST_CHECK(module_find("gpu")->outputs & OUT_GPU);
	/* gpu runs after rdma and before discovery, which publishes the slots its GPUs give */
	for (size_t i = 0, rdma = 0, gpu = 0; module_table[i]; i++) {
		if (strcmp(module_table[i]->name, "rdma") == 0)
			rdma = i + 1;
		if (strcmp(module_table[i]->name, "gpu") == 0)
			gpu = i + 1;
		if (strcmp(module_table[i]->name, "discovery") == 0)
			TEST_CHECK(rdma && gpu > rdma);
	}
	TEST_CHECK(module_find("nosuch") == NULL);
	TEST_EXIT();
}
