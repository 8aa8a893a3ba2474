/* SPDX-License-Identifier: MIT */
/*
 * lib/gpu/hca.c: each GPU's nearest HCA from a fixture root (no GPU or HCA
 * here: the sysfs files below stand in for an ND H100 v5's), by Azure's
 * pairing and by NUMA nodes.
 */
#include "config.h"

#include <unistd.h>

#include "../../lib/gpu/hca.c"
#include "gpu/sizes.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-gpuhca.XXXXXX";

static void hca(const char *name, const char *pci, const char *numa, const char *ll)
{
	char p[256], *hp, *dir;

	snprintf(p, sizeof(p), "/sys/bus/pci/devices/%s/numa_node", pci);
	test_put(root, p, numa);
	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/ports/1/link_layer", name);
	test_put(root, p, ll);
	snprintf(p, sizeof(p), "/sys/class/infiniband/%s/device", name);
	hp = fs_rooted(root, p);
	dir = xasprintf("../../../bus/pci/devices/%s", pci);
	TEST_INTEQ(symlink(dir, hp), 0);
	free(dir);
	free(hp);
}

static void gpu(struct gpu_inventory *inv, const char *pci, int numa)
{
	struct gpu_dev *g = &inv->gpu[inv->n++];

	TEST_CHECK(strlen(pci) < sizeof(g->pci));
	memcpy(g->pci, pci, strlen(pci) + 1);
	g->numa = numa;
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	static const char *const gpus[] = { "0001", "0002", "0003", "0008", "0009", "000a", "000b", "000c" };
	struct gpu_hca h[GPU_HCA_MAX];
	struct gpu_inventory inv = { 0 };
	struct strlist problems = { 0 };
	const char *how;
	size_t nh;
	char name[32], pci[32];

	if (!mkdtemp(root))
		return 1;
	TEST_INTEQ(gpu_hca_read(&c, h, GPU_HCA_MAX), 0);
	for (int i = 7; i >= 0; i--) {         /* made in reverse: read back by name */
		snprintf(name, sizeof(name), "mlx5_ib%d", i);
		snprintf(pci, sizeof(pci), "01%02x:00:00.0", i + 1);
		hca(name, pci, i < 4 ? "0\n" : "1\n", "InfiniBand\n");
	}
	hca("mlx5_an0", "c0de:00:02.0", "0\n", "Ethernet\n");     /* accelerated networking's VF */
	hca("x$(reboot)", "c0df:00:02.0", "0\n", "InfiniBand\n");  /* a name no shell profile may carry: left out */
	nh = gpu_hca_read(&c, h, GPU_HCA_MAX);
	TEST_INTEQ(nh, 9);
	TEST_STREQ(h[0].name, "mlx5_an0");
	TEST_CHECK(!h[0].infiniband);
	TEST_STREQ(h[1].name, "mlx5_ib0");
	TEST_STREQ(h[1].pci, "0101:00:00.0");
	TEST_INTEQ(h[8].numa, 1);
	for (size_t i = 0; i < 8; i++) {
		snprintf(pci, sizeof(pci), "%s:00:00.0", gpus[i]);
		gpu(&inv, pci, i < 4 ? 0 : 1);
	}
	/* Azure's pairing: 0008 with 0104 (mlx5_ib3), 0009 with 0105 (mlx5_ib4). */
	gpu_hca_pair(&inv, h, nh, gpu_size_find("Standard_ND96isr_H100_v5"), &problems, &how);
	TEST_STREQ(how, "Azure's pairing");
	TEST_INTEQ(problems.n, 0);
	TEST_STREQ(inv.gpu[3].hca, "mlx5_ib3");
	TEST_STREQ(inv.gpu[4].hca, "mlx5_ib4");
	TEST_STREQ(inv.gpu[7].hca, "mlx5_ib7");
	/* By NUMA nodes: the same here, the VF never taken. */
	gpu_hca_pair(&inv, h, nh, gpu_size_find("Standard_ND96asr_v4"), &problems, &how);
	TEST_STREQ(how, "NUMA nodes");
	TEST_STREQ(inv.gpu[0].hca, "mlx5_ib0");
	TEST_STREQ(inv.gpu[5].hca, "mlx5_ib5");
	/* A GPU on the other NUMA node than its paired HCA, and a paired HCA gone: each named. */
	inv.gpu[2].numa = 1;
	gpu_hca_pair(&inv, h + 1, 6, gpu_size_find("Standard_ND96isr_H100_v5"), &problems, &how);
	TEST_INTEQ(problems.n, 3);
	TEST_STREQ(problems.v[0], "0003:00:00.0 (NUMA 1) and its HCA mlx5_ib2 0103:00:00.0 (NUMA 0) are on "
		   "different NUMA nodes: not Standard_ND96isr_H100_v5's layout");
	TEST_STREQ(problems.v[1], "000b:00:00.0: its HCA 0107:00:00.0 (Azure's pairing for "
		   "Standard_ND96isr_H100_v5) is not an RDMA device here");
	TEST_STREQ(inv.gpu[6].hca, "");
	strlist_free(&problems);
	test_rm_rf(root);
	TEST_EXIT();
}
