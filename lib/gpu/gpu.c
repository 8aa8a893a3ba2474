/* SPDX-License-Identifier: MIT */
/*
 * The node's GPUs as the kernel shows them (gpu.h): the PCI functions under
 * <root>/sys/bus/pci/devices, the driver each is bound to, its minor from
 * /proc/driver/nvidia/gpus/<addr>/information, its /dev/nvidia<minor>, the
 * NVSwitches, /dev/nvidiactl and the driver's version.
 */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "gpu/gpu.h"
#include "gpu/sizes.h"
#include "hpcinit.h"
#include "number.h"

#define NVIDIA 0x10de

bool gpu_is_gpu(unsigned vendor, unsigned class_code)
{
	unsigned cls = class_code >> 8;         /* 0x0302xx -> 0x0302 */

	return vendor == NVIDIA && (cls == 0x0302 || cls == 0x0300);
}

bool gpu_is_nvswitch(unsigned vendor, unsigned device)
{
	return vendor == NVIDIA && (device == 0x22a3 || device == 0x1af1);     /* H100, A100 systems */
}

/* A small sysfs or procfs file under the root, first line, trimmed: false when unreadable. */
static bool read_line(const struct ctx *c, const char *path, char *buf, size_t n)
{
	char *text = NULL;
	size_t len;

	if (fs_read(c, path, &text, &len) < 0)
		return false;
	text[strcspn(text, "\r\n")] = '\0';
	snprintf(buf, n, "%s", text);
	free(text);
	return true;
}

static bool read_hex(const struct ctx *c, const char *path, unsigned *ret)
{
	char buf[32];
	unsigned long long v;

	if (!read_line(c, path, buf, sizeof(buf)) || strncmp(buf, "0x", 2) != 0 ||
	    !num_ull(buf + 2, 16, 0xffffffffu, &v))
		return false;
	*ret = (unsigned)v;
	return true;
}

static bool is_chr(const struct ctx *c, const char *path)
{
	char *hp = ctx_path(c, path);
	struct stat st;
	bool ok = stat(hp, &st) == 0 && S_ISCHR(st.st_mode);

	free(hp);
	return ok;
}

/* The last component of the link's target (a driver link's name), "" when none. */
static void link_name(const struct ctx *c, const char *path, char *buf, size_t n)
{
	char *hp = ctx_path(c, path), target[PATH_MAX];
	ssize_t k = readlink(hp, target, sizeof(target) - 1);

	free(hp);
	buf[0] = '\0';
	if (k <= 0)
		return;
	target[k] = '\0';
	{
		const char *base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
		size_t bl = strlen(base);

		if (bl >= n)
			bl = n - 1;
		memcpy(buf, base, bl);
		buf[bl] = '\0';
	}
}

void gpu_parse_driver_version(const char *text, char *out, size_t n)
{
	/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar ..." or
	 * "NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build ..." */
	const char *p = text ? strstr(text, "Kernel Module") : NULL;

	out[0] = '\0';
	while (p && *p && *p != '\n') {
		size_t w;

		p += strspn(p, " \t");
		w = strcspn(p, " \t\n");
		if (w && w < n && p[0] >= '0' && p[0] <= '9' && memchr(p, '.', w) &&
		    strspn(p, "0123456789.") == w) {
			memcpy(out, p, w);
			out[w] = '\0';
			return;
		}
		p += w;
	}
}

int gpu_parse_minor(const char *text)
{
	const char *p = text ? strstr(text, "Device Minor:") : NULL;
	long long v;
	const char *end;

	if (!p)
		return -1;
	p += strlen("Device Minor:");
	p += strspn(p, " \t");
	if (!num_ll_prefix(p, 0, 255, &v, &end))
		return -1;
	return (int)v;
}

static int cmp_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The PCI functions' names, sorted (at most 4096). */
static size_t pci_names(const struct ctx *c, char ***ret)
{
	char *hp = ctx_path(c, "/sys/bus/pci/devices");
	DIR *d = opendir(hp);
	struct dirent *e;
	char **v = NULL;
	size_t n = 0;

	free(hp);
	while (d && (e = readdir(d)) && n < 4096) {
		if (e->d_name[0] == '.' || strlen(e->d_name) >= sizeof(((struct gpu_dev *)0)->pci))
			continue;
		v = xrealloc(v, (n + 1) * sizeof(*v));
		v[n++] = xstrdup(e->d_name);
	}
	if (d)
		closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_name);
	*ret = v;
	return n;
}

static void read_gpu(const struct ctx *c, struct gpu_dev *g, const char *addr, unsigned dev, unsigned cls)
{
	char path[320], buf[32], drv[64];
	char *info = NULL;
	size_t len;
	long long numa;

	snprintf(g->pci, sizeof(g->pci), "%s", addr);
	g->vendor = NVIDIA;
	g->device = dev;
	g->class_code = cls;
	g->numa = -1;
	g->minor = -1;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/numa_node", addr);
	if (read_line(c, path, buf, sizeof(buf)) && num_ll(buf, -1, 1024, &numa))
		g->numa = (int)numa;
	snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/driver", addr);
	link_name(c, path, drv, sizeof(drv));
	g->bound = strcmp(drv, "nvidia") == 0;
	snprintf(path, sizeof(path), "/proc/driver/nvidia/gpus/%s/information", addr);
	if (g->bound && fs_read(c, path, &info, &len) == 0)
		g->minor = gpu_parse_minor(info);
	free(info);
	if (g->minor >= 0) {
		snprintf(path, sizeof(path), "/dev/nvidia%d", g->minor);
		g->dev_node = is_chr(c, path);
	}
	snprintf(g->type, sizeof(g->type), "%s", gpu_type_of(dev));
}

void gpu_inventory_read(const struct ctx *c, struct gpu_inventory *inv)
{
	char **names = NULL, path[320];
	size_t n = pci_names(c, &names);
	char *ver = NULL;
	size_t len;

	memset(inv, 0, sizeof(*inv));
	for (size_t i = 0; i < n; i++) {
		unsigned vendor, dev, cls;

		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/vendor", names[i]);
		if (!read_hex(c, path, &vendor) || vendor != NVIDIA)
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/device", names[i]);
		if (!read_hex(c, path, &dev))
			continue;
		snprintf(path, sizeof(path), "/sys/bus/pci/devices/%s/class", names[i]);
		if (!read_hex(c, path, &cls))
			cls = 0;
		if (gpu_is_nvswitch(vendor, dev)) {
			if (!inv->n_nvswitch++)
				snprintf(inv->nvswitch_pci, sizeof(inv->nvswitch_pci), "%s", names[i]);
		} else if (gpu_is_gpu(vendor, cls)) {
			if (inv->n == GPU_MAX) {
				inv->truncated = true;
				continue;
			}
			read_gpu(c, &inv->gpu[inv->n], names[i], dev, cls);
			if (inv->gpu[inv->n].bound && inv->gpu[inv->n].dev_node)
				inv->n_usable++;
			inv->n++;
		}
	}
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	if (fs_read(c, "/proc/driver/nvidia/version", &ver, &len) == 0)
		gpu_parse_driver_version(ver, inv->driver_version, sizeof(inv->driver_version));
	free(ver);
	inv->ctl = is_chr(c, "/dev/nvidiactl");
}
