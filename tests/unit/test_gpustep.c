/* SPDX-License-Identifier: MIT */
/* modules/gpu: the kernel log's Xid lines and dpkg's fabric manager version, as text. */
#include "config.h"

#include "../../modules/gpu/driver.c"
#include "../../modules/gpu/xid.c"
#include "test.h"

int main(void)
{
	unsigned xid = 0;
	char pci[32], v[32];

	TEST_CHECK(gpu_parse_xid("6,1234,5678,-;NVRM: Xid (PCI:0009:00:00): 79, pid=0, name=, GPU has fallen off "
				 "the bus.", &xid, pci, sizeof(pci)));
	TEST_INTEQ(xid, 79);
	TEST_STREQ(pci, "0009:00:00");
	TEST_CHECK(gpu_parse_xid("[  12.3] NVRM: Xid (PCI:0001:00:00): 13, Graphics Exception", &xid, pci, sizeof(pci)));
	TEST_INTEQ(xid, 13);
	TEST_CHECK(!gpu_parse_xid("NVRM: Xid (PCI:0001:00:00) 79", &xid, pci, sizeof(pci)));
	TEST_CHECK(!gpu_parse_xid("NVRM: Xid (PCI:0001:00:00): x", &xid, pci, sizeof(pci)));
	TEST_CHECK(!gpu_parse_xid("nvidia: module loaded", &xid, pci, sizeof(pci)));
	TEST_STREQ(xid_what(79), "GPU has fallen off the bus");
	TEST_CHECK(xid_what(13) == NULL);

	gpu_fm_version_dpkg("Package: nvidia-fabricmanager-535\nStatus: install ok installed\nVersion: 535.161.08-1\n\n"
			    "Package: other\nStatus: install ok installed\nVersion: 1.0\n", v, sizeof(v));
	TEST_STREQ(v, "535.161.08");
	gpu_fm_version_dpkg("Package: nvidia-fabricmanager-535\nStatus: deinstall ok config-files\n"
			    "Version: 535.54.03-1\n", v, sizeof(v));
	TEST_STREQ(v, "");
	gpu_fm_version_dpkg("Package: nvidia-fabricmanager\nStatus: install ok installed\nVersion: 1:550.54.15-0ubuntu1\n",
			    v, sizeof(v));
	TEST_STREQ(v, "550.54.15");
	gpu_fm_version_dpkg("Package: libnvidia-fabricmanager\nStatus: install ok installed\nVersion: 9\n", v, sizeof(v));
	TEST_STREQ(v, "");      /* "Package: " must open its line: only the fabric manager's own package */
	TEST_EXIT();
}
