/* SPDX-License-Identifier: MIT */
/*
 * The GPUs on the bus earlier this boot (gpu_step.h): every PCI address a
 * run saw, kept in /run (gone at reboot), so a later run (the check timer)
 * sees a GPU that fell off the bus even where no count says how many there
 * should be.  Runs that may write add what they see; none removes.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "gpu_step.h"
#include "hpcinit.h"
#include "strbuf.h"
#include "strlist.h"

static bool in_inventory(const struct gpu_inventory *inv, const char *pci)
{
	for (size_t i = 0; i < inv->n; i++)
		if (strcmp(inv->gpu[i].pci, pci) == 0)
			return true;
	return false;
}

void gpu_check_seen(struct ctx *c, struct report *r, const struct gpu_inventory *inv, const struct strlist *named)
{
	char *text = NULL;
	struct strlist seen = { 0 };
	struct strbuf out = STRBUF_INIT;
	bool grew = false;

	if (fs_read(c, GPU_SEEN_PATH, &text, NULL) == 0)
		for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			if (nl)
				*nl = '\0';
			if (*line && strlen(line) < sizeof(inv->gpu[0].pci) && !strlist_has(&seen, line))
				strlist_push(&seen, line);
		}
	free(text);
	for (size_t i = 0; i < seen.n; i++)
		if (!in_inventory(inv, seen.v[i]) && !strlist_has(named, seen.v[i]))
			report_finding(r, ST_FAILED, "gpu.missing", "%s: a GPU was there earlier this boot (" GPU_SEEN_PATH
				       ") and is gone from the PCI bus: it fell off the bus; drain the node, then "
				       "deallocate and redeploy the VM", seen.v[i]);
	for (size_t i = 0; i < inv->n; i++)
		if (!strlist_has(&seen, inv->gpu[i].pci)) {
			strlist_push(&seen, inv->gpu[i].pci);
			grew = true;
		}
	if (grew && ctx_may_write(c)) {
		struct report scratch;

		for (size_t i = 0; i < seen.n; i++)
			sb_printf(&out, "%s\n", seen.v[i]);
		report_init(&scratch);
		if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
			(void)fs_write(c, &scratch, GPU_SEEN_PATH, out.buf, out.len, 0644, 0, 0);
		report_free(&scratch);
	}
	sb_free(&out);
	strlist_free(&seen);
}
