/* SPDX-License-Identifier: MIT */
/* lib/ib/ibsysfs.c: the IB sysfs inventory's value parsing and names. */
#include "config.h"

#include "../../lib/ib/ibsysfs.c"
#include "test.h"

int main(void)
{
	char txt[32];

	TEST_INTEQ(ib_parse_num_text("4: ACTIVE", txt, sizeof(txt)), 4);
	TEST_STREQ(txt, "ACTIVE");
	TEST_INTEQ(ib_parse_num_text("2: Polling", txt, sizeof(txt)), 2);
	TEST_STREQ(txt, "Polling");
	TEST_INTEQ(ib_parse_num_text("", txt, sizeof(txt)), -1);
	TEST_INTEQ(ib_parse_num_text("ACTIVE", txt, sizeof(txt)), -1);
	TEST_STREQ(txt, "ACTIVE");
	TEST_INTEQ(ib_parse_num_text("999: x", txt, sizeof(txt)), -1);

	TEST_CHECK(ib_parse_rate("200 Gb/sec (4X HDR)") == 200);
	TEST_CHECK(ib_parse_rate("2.5 Gb/sec (1X SDR)") == 2.5);
	TEST_CHECK(ib_parse_rate("400 Gb/sec (4X NDR)") == 400);
	TEST_CHECK(ib_parse_rate("") == 0);
	TEST_CHECK(ib_parse_rate("fast") == 0);
	TEST_CHECK(ib_parse_rate("-5 Gb/sec") == 0);

	TEST_INTEQ(ib_parse_hex16("0x800b"), 0x800b);
	TEST_INTEQ(ib_parse_hex16("0xffff"), 0xffff);
	TEST_INTEQ(ib_parse_hex16("0x10000"), 0);
	TEST_INTEQ(ib_parse_hex16("zz"), 0);

	TEST_CHECK(ib_link_matches(LINK_INFINIBAND, "InfiniBand"));
	TEST_CHECK(!ib_link_matches(LINK_INFINIBAND, "Ethernet"));
	TEST_CHECK(ib_link_matches(LINK_ETHERNET, "Ethernet"));
	TEST_CHECK(ib_link_matches(LINK_ANY, "Ethernet"));

	TEST_CHECK(!ib_safe_name("../x") && !ib_safe_name(".") && ib_safe_name("mlx5_ib0"));
	TEST_EXIT();
}
