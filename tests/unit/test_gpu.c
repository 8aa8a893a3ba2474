/* SPDX-License-Identifier: MIT */
/*
 * lib/gpu/gpu.c: the inventory from a fixture root (no GPU on this machine:
 * the sysfs, procfs and /dev files below stand in for a node's).
 */
#include "config.h"

#include <sys/sysmacros.h>
#include <unistd.h>

#include "../../lib/gpu/gpu.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-gpu.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

static void pci(const char *bdf, const char *vendor, const char *device, const char *cls, const char *numa)
{
	char p[256];

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/vendor", bdf);
	put(p, vendor);
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/device", bdf);
	put(p, device);
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/class", bdf);
	put(p, cls);
	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/numa_node", bdf);
	put(p, numa);
}

static void bind_nvidia(const char *bdf, int minor)
{
	char p[256], *hp, text[128];

	snprintf(p, sizeof(p), "%s/sys/bus/pci/devices/%s/driver", root, bdf);
	TEST_INTEQ(symlink("../../../bus/pci/drivers/nvidia", p), 0);
	snprintf(p, sizeof(p), "/proc/driver/nvidia/gpus/%s/information", bdf);
	snprintf(text, sizeof(text), "Model: \t\t NVIDIA H100 80GB HBM3\nIRQ:   \t\t 0\nDevice Minor: \t %d\n", minor);
	put(p, text);
	put("/dev/.stand-in", "");
	snprintf(p, sizeof(p), "/dev/nvidia%d", minor);
	hp = fs_rooted(root, p);
	if (getuid() == 0)
		TEST_INTEQ(mknod(hp, S_IFCHR | 0666, makedev(195, (unsigned)minor)), 0);
	free(hp);
}

static void test_parsers(void)
{
	char v[32];

	gpu_parse_driver_version("NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar  5 22:42:15 UTC 2024\n"
				 "GCC version:  gcc version 12.2.0\n", v, sizeof(v));
	TEST_STREQ(v, "535.161.08");
	gpu_parse_driver_version("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  550.54.15  Release Build\n",
				 v, sizeof(v));
	TEST_STREQ(v, "550.54.15");
	gpu_parse_driver_version("NVRM version: something else\n", v, sizeof(v));
	TEST_STREQ(v, "");
	gpu_parse_driver_version(NULL, v, sizeof(v));
	TEST_STREQ(v, "");
	TEST_INTEQ(gpu_parse_minor("Model: x\nDevice Minor: \t 7\nBus Type: PCIe\n"), 7);
	TEST_INTEQ(gpu_parse_minor("Device Minor: x\n"), -1);
	TEST_INTEQ(gpu_parse_minor("Device Minor: 300\n"), -1);
	TEST_INTEQ(gpu_parse_minor("Model: x\n"), -1);
	TEST_CHECK(gpu_is_gpu(0x10de, 0x030200));
	TEST_CHECK(gpu_is_gpu(0x10de, 0x030000));
	TEST_CHECK(!gpu_is_gpu(0x10de, 0x068000));      /* an NVSwitch's bridge class */
	TEST_CHECK(!gpu_is_gpu(0x1002, 0x030200));      /* AMD: not this inventory's */
	TEST_CHECK(gpu_is_nvswitch(0x10de, 0x22a3));
	TEST_CHECK(gpu_is_nvswitch(0x10de, 0x1af1));
	TEST_CHECK(!gpu_is_nvswitch(0x10de, 0x2330));
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	struct gpu_inventory inv;

	test_parsers();
	if (!mkdtemp(root))
		return 1;
	gpu_inventory_read(&c, &inv);
	TEST_INTEQ(inv.n, 0);
	TEST_STREQ(inv.driver_version, "");

	/* Two H100s (one bound), an NVSwitch, a Mellanox HCA, an AMD GPU. */
	pci("0002:00:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "0\n");
	pci("0001:00:00.0", "0x10de\n", "0x2330\n", "0x030200\n", "1\n");
	pci("0005:00:00.0", "0x10de\n", "0x22a3\n", "0x068000\n", "-1\n");
	pci("0101:00:00.0", "0x15b3\n", "0x101e\n", "0x020700\n", "0\n");
	pci("0201:00:00.0", "0x1002\n", "0x74a1\n", "0x038000\n", "0\n");
	put("/sys/bus/pci/drivers/nvidia/uevent", "DRIVER=nvidia\n");
	bind_nvidia("0001:00:00.0", 0);
	put("/proc/driver/nvidia/version", "NVRM version: NVIDIA UNIX x86_64 Kernel Module  535.161.08  Tue Mar 5\n");
	gpu_inventory_read(&c, &inv);
	TEST_INTEQ(inv.n, 2);
	TEST_STREQ(inv.gpu[0].pci, "0001:00:00.0");     /* PCI address order, not readdir's */
	TEST_STREQ(inv.gpu[1].pci, "0002:00:00.0");
	TEST_CHECK(inv.gpu[0].bound);
	TEST_INTEQ(inv.gpu[0].minor, 0);
	TEST_INTEQ(inv.gpu[0].numa, 1);
	TEST_INTEQ(inv.gpu[0].device, 0x2330);
	TEST_STREQ(inv.gpu[0].type, "h100");
	TEST_CHECK(!inv.gpu[1].bound);
	TEST_INTEQ(inv.gpu[1].minor, -1);
	TEST_CHECK(!inv.gpu[1].dev_node);
	TEST_INTEQ(inv.n_nvswitch, 1);
	TEST_STREQ(inv.nvswitch_pci, "0005:00:00.0");
	TEST_STREQ(inv.driver_version, "535.161.08");
	TEST_CHECK(!inv.ctl);
	if (getuid() == 0) {
		TEST_CHECK(inv.gpu[0].dev_node);
		TEST_INTEQ(inv.n_usable, 1);
	}
	/* A regular file is not a device node. */
	put("/dev/nvidiactl", "");
	gpu_inventory_read(&c, &inv);
	TEST_CHECK(!inv.ctl);
	test_rm_rf(root);
	TEST_EXIT();
}
