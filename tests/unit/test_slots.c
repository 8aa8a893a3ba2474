/* SPDX-License-Identifier: MIT */
/* lib/slots: the ranks a node takes, from a fixture sysfs (no GPU here). */
#include "config.h"

#include "../../lib/slots/slots.c"
#include "gpu/gpu.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-slots.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

static void gpu(const char *bdf, const char *cls, const char *vendor)
{
	char *p = xasprintf("/sys/bus/pci/devices/%s/class", bdf);

	put(p, cls);
	free(p);
	p = xasprintf("/sys/bus/pci/devices/%s/vendor", bdf);
	put(p, vendor);
	free(p);
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	struct report r;

	if (!mkdtemp(root))
		return 1;
	/* No mpi section: the cores, whatever sysfs shows. */
	TEST_INTEQ(slots_count_gpus(&c), 0);
	report_init(&r);
	TEST_INTEQ(slots_node(&c, &r, 96), 96);
	TEST_INTEQ(r.details.len, 0);
	report_free(&r);

	/* An NVIDIA 3D controller, an AMD display-other, an NVIDIA bridge and a NIC. */
	gpu("0000:01:00.0", "0x030200\n", "0x10de\n");
	gpu("0000:02:00.0", "0x038000\n", "0x1002\n");
	gpu("0000:03:00.0", "0x068000\n", "0x10de\n");
	gpu("0000:04:00.0", "0x020000\n", "0x15b3\n");
	TEST_INTEQ(slots_count_gpus(&c), 2);

	s.mpi.present = true;
	report_init(&r);
	TEST_INTEQ(slots_node(&c, &r, 96), 96);
	report_free(&r);
	s.mpi.slots = 48;
	report_init(&r);
	TEST_INTEQ(slots_node(&c, &r, 96), 48);
	TEST_STREQ(sb_str(&r.details), "slots: 48 (mpi.slots; 96 cores)\n");
	report_free(&r);
	s.mpi.slots_per_gpu = true;
	report_init(&r);
	TEST_INTEQ(slots_node(&c, &r, 96), 2);
	TEST_STREQ(sb_str(&r.details), "slots: 2, one per GPU (mpi.slots_per_gpu; 96 cores)\n");
	report_free(&r);
	/* With the gpu step's inventory (OUT_GPU): its usable GPUs, not sysfs's count nor a table's. */
	{
		struct gpu_inventory inv = { .n = 8, .n_usable = 7, .expected = 8 };
		struct outputs out = { .gpu = &inv };

		c.out = &out;
		report_init(&r);
		TEST_INTEQ(slots_node(&c, &r, 96), 7);
		TEST_STREQ(sb_str(&r.details), "slots: 7, one per usable GPU (mpi.slots_per_gpu; the gpu step found "
			   "8 on the bus; 96 cores)\n");
		report_free(&r);
		inv.n_usable = 0;
		report_init(&r);
		TEST_INTEQ(slots_node(&c, &r, 96), 48);
		TEST_STREQ(sb_str(&r.details), "slots: mpi.slots_per_gpu, but the gpu step found no usable GPU (8 on "
			   "the bus): mpi.slots instead\nslots: 48 (mpi.slots; 96 cores)\n");
		report_free(&r);
		c.out = NULL;
		/* No hand-off but a gpu section (the announce hook): the inventory read here, the
		 * NVIDIA 3D controller above bound to no driver: no usable GPU. */
		s.gpu.present = true;
		put("/sys/bus/pci/devices/0000:01:00.0/device", "0x2330\n");
		report_init(&r);
		TEST_INTEQ(slots_node(&c, &r, 96), 48);
		TEST_STREQ(sb_str(&r.details), "slots: mpi.slots_per_gpu, but the gpu step found no usable GPU (1 on "
			   "the bus): mpi.slots instead\nslots: 48 (mpi.slots; 96 cores)\n");
		report_free(&r);
		s.gpu.present = false;
	}

	/* slots_per_gpu without GPUs: mpi.slots, then the cores; said. */
	{
		char *sys = xasprintf("%s/sys", root);

		test_rm_rf(sys);
		free(sys);
	}
	report_init(&r);
	TEST_INTEQ(slots_node(&c, &r, 96), 48);
	TEST_STREQ(sb_str(&r.details), "slots: mpi.slots_per_gpu, but sysfs shows no GPU (NVIDIA or AMD under "
		   "/sys/bus/pci/devices): mpi.slots instead\nslots: 48 (mpi.slots; 96 cores)\n");
	report_free(&r);
	s.mpi.slots = 0;
	report_init(&r);
	TEST_INTEQ(slots_node(&c, &r, 96), 96);
	TEST_STREQ(sb_str(&r.details), "slots: mpi.slots_per_gpu, but sysfs shows no GPU (NVIDIA or AMD under "
		   "/sys/bus/pci/devices): the usable cores instead\n");
	report_free(&r);

	test_rm_rf(root);
	TEST_EXIT();
}
