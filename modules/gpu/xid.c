/* SPDX-License-Identifier: MIT */
/*
 * The GPUs' Xid events in the kernel log (gpu_step.h): /dev/kmsg (under the
 * root: <root>/dev/kmsg, a plain file in tests) read without blocking from
 * its oldest record to the newest, so it only ever holds this boot's.  The
 * Xids Azure's node health checks treat as failing fail the step, naming the
 * GPU's PCI address; Xid 79 is "GPU has fallen off the bus".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "gpu_step.h"
#include "hpcinit.h"
#include "number.h"
#include "strlist.h"

#define KMSG_MAX (8u << 20)     /* the kernel's ring is smaller; a plain file is cut here */

/* azurehpc-health-checks' failing Xids, with what NVIDIA's Xid catalog calls them. */
static const struct { unsigned xid; const char *what; } failing[] = {
	{ 48, "double-bit ECC error" }, { 56, "display engine error" }, { 57, "error programming video memory" },
	{ 58, "unstable video memory interface" }, { 62, "internal micro-controller halt" },
	{ 63, "ECC page retirement or row remapping recorded" }, { 64, "ECC page retirement or row remapping failed" },
	{ 65, "video processor exception" }, { 68, "video processor exception" }, { 69, "graphics engine class error" },
	{ 73, "NVENC2 error" }, { 74, "NVLink error" }, { 79, "GPU has fallen off the bus" },
	{ 80, "corrupted data sent to GPU" }, { 81, "VGA subsystem error" }, { 92, "high single-bit ECC error rate" },
	{ 119, "GSP RPC timeout" }, { 120, "GSP error" },
};

bool gpu_parse_xid(const char *line, unsigned *xid, char *pci, size_t n)
{
	/* "NVRM: Xid (PCI:0001:00:00): 79, pid=1234, name=..., GPU has fallen off the bus." */
	const char *p = strstr(line, "NVRM: Xid (PCI:");
	const char *close;
	long long v;
	size_t w;

	if (!p)
		return false;
	p += strlen("NVRM: Xid (PCI:");
	close = strchr(p, ')');
	if (!close || close[1] != ':')
		return false;
	w = (size_t)(close - p);
	if (w == 0 || w >= n)
		return false;
	memcpy(pci, p, w);
	pci[w] = '\0';
	p = close + 2;
	p += strspn(p, " ");
	if (!num_ll_prefix(p, 0, 100000, &v, NULL))
		return false;
	*xid = (unsigned)v;
	return true;
}

/* The kernel log's text: every record /dev/kmsg still holds, one a line.  NULL when unreadable. */
static char *kmsg_read(const struct ctx *c, size_t *len)
{
	char *hp = ctx_path(c, "/dev/kmsg");
	int fd = open(hp, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	struct strbuf sb = STRBUF_INIT;
	char buf[8192];

	free(hp);
	if (fd < 0)
		return NULL;
	while (sb.len < KMSG_MAX && ctx_remaining_ms(c) > 0) {
		ssize_t k = read(fd, buf, sizeof(buf));

		if (k < 0 && (errno == EINTR || errno == EPIPE))
			continue;       /* EPIPE: a record was overwritten while we read; the next one follows */
		if (k <= 0)
			break;          /* EAGAIN: no newer record; 0: a plain file's end */
		sb_appendn(&sb, buf, (size_t)k);
	}
	close(fd);
	*len = sb.len;
	return sb_steal(&sb);
}

static const char *xid_what(unsigned xid)
{
	for (size_t i = 0; i < sizeof(failing) / sizeof(failing[0]); i++)
		if (failing[i].xid == xid)
			return failing[i].what;
	return NULL;
}

/* The GPU of the inventory whose address starts with the log's ("0001:00:00"), else the log's own. */
static const char *gpu_named(const struct gpu_inventory *inv, const char *pci)
{
	size_t n = strlen(pci);

	for (size_t i = 0; i < inv->n; i++)
		if (strncmp(inv->gpu[i].pci, pci, n) == 0 && inv->gpu[i].pci[n] == '.')
			return inv->gpu[i].pci;
	return pci;
}

/* First time this GPU logs this Xid (each said once, 16 at most)? */
static bool first_time(struct strlist *said, const char *pci, unsigned xid)
{
	char key[48];

	snprintf(key, sizeof(key), "%s %u", pci, xid);
	if (strlist_has(said, key) || said->n >= 16)
		return false;
	strlist_push(said, key);
	return true;
}

void gpu_check_xid(struct ctx *c, struct report *r, const struct gpu_inventory *inv)
{
	size_t len = 0, seen = 0;
	char *text = kmsg_read(c, &len);
	struct strlist said = { 0 };

	if (!text) {
		report_detail(r, "kernel log: /dev/kmsg unreadable, Xid events not checked");
		return;
	}
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n'), pci[32];
		unsigned xid;

		if (nl)
			*nl = '\0';
		if (gpu_parse_xid(line, &xid, pci, sizeof(pci))) {
			const char *what = xid_what(xid);

			seen++;
			if (!first_time(&said, pci, xid))
				;       /* the same GPU's same Xid again: said once */
			else if (what)
				report_finding(r, ST_FAILED, "gpu.xid", "%s: Xid %u (%s) in the kernel log this boot: "
					       "drain the node; reboot, and if it comes back, deallocate and redeploy "
					       "the VM", gpu_named(inv, pci), xid, what);
			else
				report_detail(r, "%s: Xid %u in the kernel log (not a failing one)", gpu_named(inv, pci), xid);
		}
		line = nl ? nl + 1 : NULL;
	}
	report_detail(r, "kernel log: %zu bytes read, %zu Xid event(s)", len, seen);
	strlist_free(&said);
	free(text);
}
