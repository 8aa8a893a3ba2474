/* SPDX-License-Identifier: MIT */
/*
 * What the driver needs beside it (gpu_step.h): GPUDirect RDMA through
 * nvidia_peermem, registered with the peer-memory core where NCCL looks for
 * it, and on NVSwitch nodes the fabric manager, running and of the driver's
 * exact version (else CUDA fails with error 802).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "gpu_step.h"
#include "hpcinit.h"
#include "proc.h"
#include "systemd.h"

#define PEERMEM_MODULE "/sys/module/nvidia_peermem"
/* What NCCL itself tests (src/transport/net_ib.cc, ncclIbGdrSupport). */
static const char *const peermem_registered[] = {
	"/sys/kernel/mm/memory_peers/nv_mem/version",
	"/sys/kernel/mm/memory_peers/nvidia-peermem/version",
	NULL,
};

void gpu_check_peermem(struct ctx *c, struct report *r, bool infiniband)
{
	bool required = c->spec->gpu.peermem == GPU_PEERMEM_REQUIRED;
	enum rstatus sev = required ? ST_FAILED : ST_DEGRADED;
	const char *why = required ? " [gpu.peermem: required]" : "";
	bool registered = false;

	if (!required && !infiniband) {
		report_detail(r, "GPUDirect RDMA: no InfiniBand device (/sys/class/infiniband), not checked");
		return;
	}
	for (size_t i = 0; peermem_registered[i]; i++)
		registered |= fs_exists(c, peermem_registered[i]);
	if (!fs_exists(c, PEERMEM_MODULE))
		report_finding(r, sev, "gpu.peermem.unloaded", "nvidia_peermem is not loaded (" PEERMEM_MODULE "): "
			       "NCCL moves GPU data over InfiniBand through host memory (or DMA-BUF where the kernel "
			       "allows it); modprobe nvidia_peermem, and list it in /etc/modules-load.d%s", why);
	else if (!registered)
		report_finding(r, sev, "gpu.peermem.unregistered", "nvidia_peermem is loaded but not registered "
			       "with the peer-memory core (no %s or %s): NCCL drops GPUDirect RDMA without an error; "
			       "it was loaded before the InfiniBand stack: rmmod nvidia_peermem; modprobe "
			       "nvidia_peermem%s", peermem_registered[0], peermem_registered[1], why);
	else
		report_detail(r, "GPUDirect RDMA: nvidia_peermem loaded and registered");
}

void gpu_fm_version_dpkg(const char *status, char *out, size_t n)
{
	/* Paragraphs "Package: nvidia-fabricmanager[-NNN]", "Status: install ok installed", "Version: 535.161.08-1". */
	const char *p = status;

	out[0] = '\0';
	while (p && *p) {
		const char *end = strstr(p, "\n\n");
		size_t len = end ? (size_t)(end - p) : strlen(p);
		char *para = xstrndup(p, len), *pkg = strstr(para, "Package: nvidia-fabricmanager"),
		     *ver = strstr(para, "\nVersion: ");

		if (pkg && (pkg == para || pkg[-1] == '\n') && strstr(para, "\nStatus: install ok installed") && ver) {
			size_t w;

			ver += strlen("\nVersion: ");
			if (strchr(ver, ':') && strchr(ver, ':') < ver + strcspn(ver, "\n"))
				ver = strchr(ver, ':') + 1;     /* an epoch */
			w = strcspn(ver, "-\n");
			if (w < n) {
				memcpy(out, ver, w);
				out[w] = '\0';
			}
		}
		free(para);
		p = end ? end + 2 : NULL;
	}
}

/* The installed fabric manager's version: dpkg's status, else rpm's database; how: where it came from. */
static void fm_version(struct ctx *c, char *out, size_t n, const char **how)
{
	char *text = NULL;

	*how = "";
	out[0] = '\0';
	if (fs_read(c, "/var/lib/dpkg/status", &text, NULL) == 0) {
		gpu_fm_version_dpkg(text, out, n);
		free(text);
		*how = "dpkg";
		if (out[0])
			return;
	}
	/* RHEL 8/9 keep the database in /var/lib/rpm, newer Fedora and SUSE in /usr/lib/sysimage/rpm. */
	const char *db = fs_exists(c, "/var/lib/rpm") ? "/var/lib/rpm" :
			 fs_exists(c, "/usr/lib/sysimage/rpm") ? "/usr/lib/sysimage/rpm" : NULL;

	if (db) {
		const char *root = c->root && c->root[0] ? c->root : "/";
		const char *const argv[] = { "rpm", "--root", root, "--dbpath", db, "-q", "--qf", "%{VERSION}\\n",
					     "nvidia-fabric-manager", "nvidia-fabricmanager", NULL };
		uint64_t left = ctx_remaining_ms(c);
		struct proc_result res = { 0 };

		if (proc_run(argv, NULL, NULL, (unsigned)(left < 5000 ? left : 5000), &res) == 0) {
			for (char *line = res.out; line && *line;) {
				size_t w = strcspn(line, "\n");

				if (w && w < n && line[0] >= '0' && line[0] <= '9' && strspn(line, "0123456789.") == w) {
					memcpy(out, line, w);
					out[w] = '\0';
					*how = "rpm";
					break;
				}
				line = line[w] ? line + w + 1 : NULL;
			}
		}
		proc_result_free(&res);
	}
}

void gpu_check_fabric(struct ctx *c, struct report *r, const struct gpu_inventory *inv)
{
	char how[128] = "", ver[64];
	const char *from;
	pid_t pid;

	if (!inv->n_nvswitch)
		return;
	pid = daemon_pid(c, GPU_FM_PIDFILE, GPU_FM_COMM, DAEMON_SCAN, how, sizeof(how));
	fm_version(c, ver, sizeof(ver), &from);
	if (!pid)
		report_finding(r, ST_FAILED, "gpu.fabricmanager.down", "nvidia-fabricmanager is not running (no live "
			       "pid in " GPU_FM_PIDFILE ", no process named " GPU_FM_COMM ") on a node with %zu NVSwitches (the first "
			       "at %s): CUDA fails with error 802 (system not yet initialized); systemctl enable --now "
			       "nvidia-fabricmanager", inv->n_nvswitch, inv->nvswitch_pci);
	else
		report_detail(r, "fabric manager: pid %d (%s), version %s%s%s%s", (int)pid, how, ver[0] ? ver : "unknown",
			      from[0] ? " (" : "", from, from[0] ? ")" : "");
	if (!ver[0])
		report_finding(r, ST_DEGRADED, "gpu.fabricmanager.version-unknown", "nvidia-fabricmanager's version is "
			       "unknown (no nvidia-fabricmanager package in dpkg's or rpm's database): it must be the "
			       "driver's (%s) exactly", inv->driver_version[0] ? inv->driver_version : "unknown");
	else if (inv->driver_version[0] && strcmp(ver, inv->driver_version) != 0)
		report_finding(r, ST_FAILED, "gpu.fabricmanager.version", "nvidia-fabricmanager is %s (%s) but the "
			       "driver is %s: they must match exactly (CUDA error 802); install the fabric manager of "
			       "version %s and pin both", ver, from, inv->driver_version, inv->driver_version);
}

void gpu_check_nccl_topo(struct ctx *c, struct report *r)
{
	char *text = NULL, path[256] = "";

	if (fs_read(c, "/etc/nccl.conf", &text, NULL) < 0)
		return;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		line += strspn(line, " \t");
		if (strncmp(line, "NCCL_TOPO_FILE=", 15) == 0)
			snprintf(path, sizeof(path), "%.*s", (int)strcspn(line + 15, " \t\r"), line + 15);
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	if (!path[0])
		return;
	if (path[0] != '/' || !fs_exists(c, path))
		report_finding(r, ST_DEGRADED, "gpu.nccl.topo", "/etc/nccl.conf sets NCCL_TOPO_FILE=%s, which is not "
			       "there: NCCL sees no GPU-HCA pairing inside the VM and may pick a far HCA; install the "
			       "image's topology file or remove the line", path);
	else
		report_detail(r, "NCCL_TOPO_FILE: %s (/etc/nccl.conf, the image's: left as it is)", path);
}
