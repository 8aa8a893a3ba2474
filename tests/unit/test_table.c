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
	TEST_INTEQ(n, 9);
	TEST_CHECK(strcmp(module_table[n - 1]->name, "slurm") == 0);   /* last: it reads the run so far */
	TEST_INTEQ(produced, OUT_ALL);
	TEST_CHECK(module_find("discovery")->outputs & OUT_PEERS);
	TEST_CHECK(module_find("rdma")->outputs & OUT_RDMA);
	TEST_CHECK(module_find("nosuch") == NULL);
	TEST_EXIT();
}
