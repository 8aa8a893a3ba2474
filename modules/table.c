/* SPDX-License-Identifier: MIT */
/* The module table, in run order (docs/conventions.md "Run order"). */
#include "config.h"

#include <string.h>

#include "table.h"

extern const struct module memlock_module;
extern const struct module kernel_module;
extern const struct module rdma_module;
extern const struct module gpu_module;
extern const struct module nfs_module;
extern const struct module discovery_module;
extern const struct module ssh_module;
extern const struct module hostfile_module;
extern const struct module mpi_module;
extern const struct module slurm_module;

const struct module *const module_table[] = {
	&memlock_module,
	&kernel_module,
	&rdma_module,
	&gpu_module,
	&nfs_module,
	&discovery_module,
	&ssh_module,
	&hostfile_module,
	&mpi_module,
	&slurm_module,	/* last: it acts on the readiness of all the others */
	NULL,
};

uint64_t modules_wake_at(const struct ctx *c)
{
	uint64_t first = 0;

	for (size_t i = 0; module_table[i]; i++) {
		const struct module *m = module_table[i];
		uint64_t t;

		if (!m->wake_at || (m->enabled && !m->enabled(c->spec)))
			continue;
		t = m->wake_at(c);
		if (t && (!first || t < first))
			first = t;
	}
	return first;
}

const struct module *module_find(const char *name)
{
	for (size_t i = 0; module_table[i]; i++)
		if (strcmp(module_table[i]->name, name) == 0)
			return module_table[i];
	return NULL;
}
