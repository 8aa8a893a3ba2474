/* SPDX-License-Identifier: MIT */
/* The gpu step's parts (modules/gpu/): the driver's companions (driver.c), the kernel log
 * (xid.c) and the GPUs seen earlier this boot (seen.c). */
#ifndef HPCINIT_GPU_STEP_H
#define HPCINIT_GPU_STEP_H

#include "gpu/gpu.h"
#include "hpcinit.h"

/* The pid file nvidia-fabricmanager.service names, and the process's comm (15 characters). */
#define GPU_FM_PIDFILE "/run/nvidia-fabricmanager/nv-fabricmanager.pid"
#define GPU_FM_COMM "nv-fabricmanage"

/* GPUDirect RDMA: nvidia_peermem loaded and registered (infiniband: the node has an InfiniBand HCA; or gpu.peermem: required). */
void gpu_check_peermem(struct ctx *c, struct report *r, bool infiniband);
/* On NVSwitch nodes: nvidia-fabricmanager running, of the driver's version. */
void gpu_check_fabric(struct ctx *c, struct report *r, const struct gpu_inventory *inv);
/* NCCL_TOPO_FILE of /etc/nccl.conf (the image's): the file it names is there. */
void gpu_check_nccl_topo(struct ctx *c, struct report *r);
/* The fabric manager's installed version from dpkg's status text ("535.161.08"), "" when none. */
void gpu_fm_version_dpkg(const char *status, char *out, size_t n);

struct strlist;
/* The GPUs' PCI addresses seen earlier this boot, one a line (/run: gone at reboot). */
#define GPU_SEEN_PATH "/run/hpcinit/gpu-seen"
/*
 * A GPU seen earlier this boot and gone now fails the step (gpu.missing),
 * unless named already (named: PCI addresses said missing); a run that may
 * write adds what it sees.
 */
void gpu_check_seen(struct ctx *c, struct report *r, const struct gpu_inventory *inv, const struct strlist *named);

/* The kernel log (/dev/kmsg, read without blocking): Xid events of the GPUs. */
void gpu_check_xid(struct ctx *c, struct report *r, const struct gpu_inventory *inv);
/* One kernel log line: the Xid and the PCI address it names ("0001:00:00"), false when none. */
bool gpu_parse_xid(const char *line, unsigned *xid, char *pci, size_t n);

#endif
