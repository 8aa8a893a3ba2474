/* SPDX-License-Identifier: MIT */
/*
 * The gpu step: every GPU the node should have is on the PCI bus, bound to
 * the nvidia driver, with its device node (docs/gpu.md).  The inventory
 * (lib/gpu) is read in a child under the step's deadline, since a wedged
 * driver can block a read of its procfs files; the step hands it on
 * (OUT_GPU) to discovery (slots), mpi and slurm.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "gpu/gpu.h"
#include "gpu/hca.h"
#include "gpu/nvml.h"
#include "gpu/sizes.h"
#include "gpu_step.h"
#include "hpcinit.h"
#include "ib/identity.h"
#include "proc.h"
#include "strlist.h"

#define GPU_READ_MAX_MS 5000            /* the inventory child's own cap within the step's deadline: it takes ms */

static struct gpu_inventory gpu_last;   /* OUT_GPU: this run's inventory */

static bool gpu_enabled(const struct spec *s)
{
	return s->gpu.present;
}

static uint64_t gpu_timeout(const struct spec *s)
{
	(void)s;
	return 30000;
}

static void inventory_child(void *arg, int fd)
{
	const struct ctx *c = arg;
	struct gpu_inventory inv;

	gpu_inventory_read(c, &inv);
	if (fd_write_all(fd, &inv, sizeof(inv)) < 0)
		_exit(1);
}

/* The inventory, read in a child that ends at the deadline: 0, or -errno with a failed finding. */
static int inventory_bounded(struct ctx *c, struct report *r, struct gpu_inventory *inv)
{
	uint64_t left = ctx_remaining_ms(c);
	const struct proc_limits lim = { .timeout_ms = (unsigned)(left < GPU_READ_MAX_MS ? left : GPU_READ_MAX_MS),
					 .reap_ms = 500, .eof_ends = true };
	struct proc_child ch = { .stuck_key = "gpu-inventory",
				 .stuck_what = "reading the GPUs' sysfs and /proc/driver/nvidia files" };
	int ret = proc_start_fn(&ch, inventory_child, c, sizeof(*inv));

	if (ret == -EBUSY) {
		report_finding(r, ST_FAILED, "gpu.hung", "an earlier run's read of the GPUs (pid %d) is still asleep "
			       "in the kernel (%s): the driver does not answer; reboot the node", (int)ch.blocked.pid,
			       ch.blocked.what);
		return ret;
	}
	if (ret < 0) {
		report_finding(r, ST_FAILED, "gpu.hung", "cannot start the GPU inventory's child: %s", strerror(-ret));
		return ret;
	}
	proc_wait(&ch, 1, &lim);
	if (ch.out.len >= sizeof(*inv)) {
		memcpy(inv, ch.out.buf, sizeof(*inv));
	} else {
		ret = ch.eof ? -EPIPE : -ETIMEDOUT;
		report_finding(r, ST_FAILED, "gpu.hung", "reading the GPUs (sysfs, /proc/driver/nvidia) %s within %u ms: "
			       "the driver does not answer", ch.eof ? "died" : "did not finish", lim.timeout_ms);
	}
	proc_child_free(&ch);
	return ret;
}

/* This VM's size: the fact file an image or custom-data writes, else IMDS (only when gpu.count is 0). */
static void vm_size(struct ctx *c, struct report *r, char *out, size_t n)
{
	char *text = NULL, err[256];
	size_t len;

	out[0] = '\0';
	if (fs_read(c, GPU_VM_SIZE_FACT, &text, &len) == 0) {
		text[strcspn(text, " \t\r\n")] = '\0';
		snprintf(out, n, "%s", text);
		free(text);
		if (out[0])
			return;
	}
	if (!ctx_real_root(c) && strcmp(c->spec->gpu.imds_url, SPEC_IMDS_VMSIZE_URL) == 0)
		return;         /* a fake root (an image, a test) is no VM: only a gpu.imds_url of its own is asked */
	{
		bool cached;

		if (md_fact(c, "vm-size", c->spec->gpu.imds_url, out, n, &cached, err, sizeof(err)) < 0) {
			out[0] = '\0';
			report_detail(r, "VM size: %s: %s", c->spec->gpu.imds_url, err);
		} else if (cached) {
			report_detail(r, "VM size: %s (asked of %s earlier this boot: " MD_FACTS_DIR "/vm-size)",
				      out, c->spec->gpu.imds_url);
		}
	}
}

/* inv->expected and inv->vm_size from gpu.count or the size table. */
static void expected_count(struct ctx *c, struct report *r, struct gpu_inventory *inv, const struct gpu_size **sz)
{
	*sz = NULL;
	vm_size(c, r, inv->vm_size, sizeof(inv->vm_size));
	if (inv->vm_size[0])
		*sz = gpu_size_find(inv->vm_size);
	if (c->spec->gpu.count) {
		inv->expected = c->spec->gpu.count;
		report_detail(r, "expected: %u GPUs (gpu.count)", inv->expected);
	} else if (*sz) {
		inv->expected = (*sz)->gpus;
		report_detail(r, "expected: %u GPUs (%s, the size table)", inv->expected, (*sz)->name);
	} else {
		if (inv->vm_size[0])
			report_finding(r, ST_OK, "gpu.count.unknown", "expected count unknown: %s is not in the size "
				       "table; set gpu.count to have a short node fail", inv->vm_size);
		else
			report_finding(r, ST_OK, "gpu.count.unknown", "expected count unknown: no VM size ("
				       GPU_VM_SIZE_FACT " or the metadata service); set gpu.count to have a short "
				       "node fail");
	}
}

/* A GPU of Azure's layout for this size that is not on the bus at all (its address added to named). */
static void name_absent(struct report *r, const struct gpu_inventory *inv, const struct gpu_size *sz,
			struct strlist *named)
{
	for (size_t k = 0; sz && sz->pairs && sz->pairs[k].gpu; k++) {
		bool seen = false;

		for (size_t i = 0; i < inv->n; i++)
			seen |= strcmp(inv->gpu[i].pci, sz->pairs[k].gpu) == 0;
		if (!seen) {
			report_finding(r, ST_FAILED, "gpu.missing", "%s: no GPU at this PCI address (%s has one "
				       "there): it fell off the bus or the host did not attach it; deallocate and "
				       "redeploy the VM", sz->pairs[k].gpu, sz->name);
			strlist_push(named, sz->pairs[k].gpu);
		}
	}
}

/* Each GPU: bound, its minor, its device node.  Failed findings naming its PCI address. */
static void judge_gpus(struct report *r, const struct gpu_inventory *inv)
{
	for (size_t i = 0; i < inv->n; i++) {
		const struct gpu_dev *g = &inv->gpu[i];

		report_detail(r, "%s: %04x:%04x%s%s, NUMA %d, %s, minor %d%s", g->pci, g->vendor, g->device,
			      g->type[0] ? " " : "", g->type, g->numa, g->bound ? "nvidia" : "unbound", g->minor,
			      g->dev_node ? "" : ", no device node");
		if (!g->bound)
			report_finding(r, ST_FAILED, "gpu.unbound", "%s: GPU %04x:%04x is on the PCI bus but not bound "
				       "to the nvidia driver (its probe failed: see the kernel log for \"NVIDIA probe "
				       "routine failed\"); reboot, else deallocate and redeploy the VM",
				       g->pci, g->vendor, g->device);
		else if (g->minor < 0)
			report_finding(r, ST_FAILED, "gpu.minor.unknown", "%s: bound to nvidia, but "
				       "/proc/driver/nvidia/gpus/%s/information gives no Device Minor", g->pci, g->pci);
		else if (!g->dev_node)
			report_finding(r, ST_FAILED, "gpu.devnode.missing", "%s: /dev/nvidia%d is not a character "
				       "device: slurmd's gres.conf and CUDA need it; run nvidia-modprobe -c %d or start "
				       "nvidia-persistenced", g->pci, g->minor, g->minor);
	}
}

/* Each GPU's nearest HCA, shown, and what does not hold of the pairing (degraded).  True: an InfiniBand HCA. */
static bool judge_hca(const struct ctx *c, struct report *r, struct gpu_inventory *inv, const struct gpu_size *sz)
{
	struct gpu_hca h[GPU_HCA_MAX];
	size_t nh = gpu_hca_read(c, h, GPU_HCA_MAX);
	struct strlist problems = { 0 };
	const char *how;
	bool ib = false;

	for (size_t k = 0; k < nh; k++)
		ib |= h[k].infiniband;
	if (!ib) {
		report_detail(r, "HCAs: no InfiniBand device (/sys/class/infiniband): no GPU is paired with one");
		return false;
	}
	gpu_hca_pair(inv, h, nh, sz, &problems, &how);
	for (size_t i = 0; i < inv->n; i++)
		report_detail(r, "%s -> %s (%s)", inv->gpu[i].pci, inv->gpu[i].hca[0] ? inv->gpu[i].hca : "no HCA", how);
	for (size_t k = 0; k < problems.n; k++)
		report_finding(r, ST_DEGRADED, "gpu.hca", "%s; NCCL and the MPI profile get no HCA for that GPU",
			       problems.v[k]);
	strlist_free(&problems);
	return true;
}

static void judge_count(struct report *r, const struct gpu_inventory *inv, const struct gpu_size *sz,
			struct strlist *named)
{
	if (inv->n == 0) {
		report_finding(r, ST_FAILED, "gpu.none", "no NVIDIA GPU on the PCI bus (/sys/bus/pci/devices, "
			       "vendor 0x10de, class 0x0302xx or 0x0300xx)%s", inv->expected ? "" :
			       " though the spec has a gpu section");
		return;
	}
	if (inv->truncated)
		report_finding(r, ST_DEGRADED, "gpu.toomany", "more than %d GPUs on the bus: only the first %d "
			       "are checked", GPU_MAX, GPU_MAX);
	if (inv->expected && inv->n < inv->expected) {
		report_finding(r, ST_FAILED, "gpu.missing", "%zu of %u GPUs on the PCI bus%s", inv->n,
			       inv->expected, sz && sz->pairs ? "" : ": deallocate and redeploy the VM");
		name_absent(r, inv, sz, named);
	} else if (inv->expected && inv->n > inv->expected) {
		report_finding(r, ST_DEGRADED, "gpu.count.more", "%zu GPUs on the PCI bus, %u expected "
			       "(gpu.count or the size table): check gpu.count", inv->n, inv->expected);
	}
	if (inv->driver_version[0] == '\0')
		report_finding(r, ST_FAILED, "gpu.driver.absent", "no NVIDIA driver (/proc/driver/nvidia/version): "
			       "the nvidia module is not loaded; install the driver or check dkms for this kernel");
	else if (!inv->ctl)
		report_finding(r, ST_FAILED, "gpu.ctl.missing", "/dev/nvidiactl is not a character device: "
			       "run nvidia-modprobe or start nvidia-persistenced");
}

/* "8 GPUs h100, driver 535.161.08, NVSwitch; GPU->HCA 0:mlx5_ib0 1:mlx5_ib1 ..." (the CUDA index in PCI order). */
static void summary_ok(struct report *r, const struct gpu_inventory *inv)
{
	struct strbuf sb = STRBUF_INIT;
	bool paired = false;

	sb_printf(&sb, "%zu GPU%s%s%s, driver %s%s", inv->n_usable, inv->n_usable == 1 ? "" : "s",
		  inv->gpu[0].type[0] ? " " : "", inv->gpu[0].type,
		  inv->driver_version, inv->n_nvswitch ? ", NVSwitch" : "");
	for (size_t i = 0; i < inv->n; i++)
		paired |= inv->gpu[i].hca[0] != '\0';
	for (size_t i = 0; paired && i < inv->n; i++)
		sb_printf(&sb, "%s%zu:%s", i ? " " : "; GPU->HCA ", i, inv->gpu[i].hca[0] ? inv->gpu[i].hca : "-");
	report_set(r, ST_OK, "%s", sb_str(&sb));
	sb_free(&sb);
}

static int gpu_run(struct ctx *c, struct report *r)
{
	struct gpu_inventory *inv = &gpu_last;
	struct strlist named = { 0 };
	const struct gpu_size *sz;
	int ret;

	c->out->gpu = NULL;
	ret = inventory_bounded(c, r, inv);
	if (ret < 0)
		return 0;               /* the finding says it; nothing to hand on */
	expected_count(c, r, inv, &sz);
	judge_count(r, inv, sz, &named);
	gpu_check_seen(c, r, inv, &named);
	strlist_free(&named);
	judge_gpus(r, inv);
	gpu_check_peermem(c, r, judge_hca(c, r, inv, sz));
	gpu_check_fabric(c, r, inv);
	gpu_check_nccl_topo(c, r);
	gpu_check_xid(c, r, inv);
	gpu_nvml_check(c, inv, r);      /* where the node has NVIDIA's management library: lib/gpu/nvml.c */
	c->out->gpu = inv;
	if (r->status == ST_OK)
		summary_ok(r, inv);
	return 0;
}

const struct module gpu_module = {
	.name = "gpu",
	.enabled = gpu_enabled,
	.needs = NULL,
	.timeout_ms = gpu_timeout,
	.check = gpu_run,
	.apply = gpu_run,
	.outputs = OUT_GPU,
};
