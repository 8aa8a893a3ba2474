/* SPDX-License-Identifier: MIT */
/* The ranks a node takes: GPUs, mpi.slots or the cores (slots.h). */
#include "config.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "gpu/gpu.h"
#include "hpcinit.h"
#include "ib/ibsysfs.h"
#include "slots/slots.h"

unsigned slots_count_gpus(const struct ctx *c)
{
	char *hp = ctx_path(c, "/sys/bus/pci/devices");
	DIR *d = opendir(hp);
	struct dirent *e;
	unsigned n = 0;

	free(hp);
	while (d && (e = readdir(d))) {
		char path[320], cls[32], ven[32];

		if (e->d_name[0] == '.' || strlen(e->d_name) > 64)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", e->d_name);
		if (!ib_sysfs_read(c, path, cls, sizeof(cls)))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", e->d_name);
		if (!ib_sysfs_read(c, path, ven, sizeof(ven)))
			continue;
		/* 0x0302xx 3D controller (H100, A100), 0x0380xx display/other (MI300X); NVIDIA, AMD */
		if ((strncmp(cls, "0x0302", 6) == 0 || strncmp(cls, "0x0380", 6) == 0) &&
		    (strcmp(ven, "0x10de") == 0 || strcmp(ven, "0x1002") == 0))
			n++;
	}
	if (d)
		closedir(d);
	return n;
}

unsigned slots_node(const struct ctx *c, struct report *r, unsigned cores)
{
	const struct spec_mpi *m = &c->spec->mpi;

	if (!m->present)
		return cores;
	if (m->slots_per_gpu) {
		const struct gpu_inventory *inv = c->out ? c->out->gpu : NULL;
		struct gpu_inventory *own = NULL;
		unsigned g;

		if (!inv && c->spec->gpu.present) {
			/* No hand-off in this call (the announce hook, --only): the same inventory, read here. */
			own = xmalloc(sizeof(*own));
			gpu_inventory_read(c, own);
			inv = own;
		}
		g = inv ? (unsigned)inv->n_usable : slots_count_gpus(c);

		if (g) {
			if (inv)
				report_detail(r, "slots: %u, one per usable GPU (mpi.slots_per_gpu; the gpu step found "
					      "%zu on the bus; %u cores)", g, inv->n, cores);
			else
				report_detail(r, "slots: %u, one per GPU (mpi.slots_per_gpu; %u cores)", g, cores);
			free(own);
			return g;
		}
		if (inv)
			report_detail(r, "slots: mpi.slots_per_gpu, but the gpu step found no usable GPU (%zu on "
				      "the bus): %s", inv->n, m->slots ? "mpi.slots instead" : "the usable cores instead");
		else
			report_detail(r, "slots: mpi.slots_per_gpu, but sysfs shows no GPU (NVIDIA or AMD under "
				      "/sys/bus/pci/devices): %s", m->slots ? "mpi.slots instead" : "the usable cores instead");
		free(own);
	}
	if (m->slots) {
		report_detail(r, "slots: %u (mpi.slots; %u cores)", m->slots, cores);
		return m->slots;
	}
	return cores;
}
