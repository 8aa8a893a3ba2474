/* SPDX-License-Identifier: MIT */
/* cidr.c: networks in canonical form, membership. */
#include "config.h"

#include "../../common/loader/cidr.c"
#include "test.h"

static void test_cidr(void)
{
	struct cidr c;
	struct in_addr a4;
	struct in6_addr a6;

	TEST_INTEQ(cidr_parse("10.0.0.0/24", &c), 0);
	TEST_INTEQ(c.family, AF_INET);
	TEST_INTEQ(c.prefix, 24);
	TEST_STREQ(c.text, "10.0.0.0/24");
	TEST_INTEQ(cidr_parse("10.0.0.77/24", &c), 0);
	TEST_STREQ(c.text, "10.0.0.0/24");
	TEST_INTEQ(cidr_parse("198.18.5.9/15", &c), 0);
	TEST_STREQ(c.text, "198.18.0.0/15");
	TEST_INTEQ(cidr_parse("0.0.0.0/0", &c), 0);
	TEST_STREQ(c.text, "0.0.0.0/0");
	TEST_INTEQ(cidr_parse("10.1.2.3/32", &c), 0);
	TEST_STREQ(c.text, "10.1.2.3/32");
	TEST_INTEQ(cidr_parse("fd00::1/64", &c), 0);
	TEST_INTEQ(c.family, AF_INET6);
	TEST_STREQ(c.text, "fd00::/64");
	TEST_INTEQ(cidr_parse("2001:DB8:0:0:1::ff/128", &c), 0);
	TEST_STREQ(c.text, "2001:db8::1:0:0:ff/128");
	TEST_INTEQ(cidr_parse("::/0", &c), 0);
	TEST_STREQ(c.text, "::/0");

	memset(&c, 0x5a, sizeof(c));
	struct cidr before = c;
	TEST_INTEQ(cidr_parse("10.0.0.0/33", &c), -EINVAL);
	TEST_CHECK(memcmp(&c, &before, sizeof(c)) == 0);    /* untouched on error */
	TEST_INTEQ(cidr_parse("2001:db8::/129", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("10.0.0.0", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("10.0.0/24", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("10.0.0.0/", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("10.0.0.0/2a", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("10.0.0.0/-1", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("10.0.0.0/1000", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("/24", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("010.0.0.0/8", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("host/24", &c), -EINVAL);
	TEST_INTEQ(cidr_parse("", &c), -EINVAL);

	TEST_INTEQ(cidr_parse("10.0.0.0/24", &c), 0);
	inet_pton(AF_INET, "10.0.0.200", &a4);
	TEST_CHECK(cidr_contains(&c, AF_INET, &a4));
	inet_pton(AF_INET, "10.0.1.1", &a4);
	TEST_CHECK(!cidr_contains(&c, AF_INET, &a4));
	inet_pton(AF_INET6, "::ffff:10.0.0.1", &a6);
	TEST_CHECK(!cidr_contains(&c, AF_INET6, &a6));
	TEST_INTEQ(cidr_parse("172.16.0.0/12", &c), 0);     /* not on a byte boundary */
	inet_pton(AF_INET, "172.31.255.255", &a4);
	TEST_CHECK(cidr_contains(&c, AF_INET, &a4));
	inet_pton(AF_INET, "172.32.0.0", &a4);
	TEST_CHECK(!cidr_contains(&c, AF_INET, &a4));
	TEST_INTEQ(cidr_parse("0.0.0.0/0", &c), 0);
	TEST_CHECK(cidr_contains(&c, AF_INET, &a4));
	TEST_INTEQ(cidr_parse("10.1.2.3/32", &c), 0);
	inet_pton(AF_INET, "10.1.2.3", &a4);
	TEST_CHECK(cidr_contains(&c, AF_INET, &a4));
	inet_pton(AF_INET, "10.1.2.2", &a4);
	TEST_CHECK(!cidr_contains(&c, AF_INET, &a4));
	TEST_INTEQ(cidr_parse("fd00:1::/33", &c), 0);
	inet_pton(AF_INET6, "fd00:1:7fff::1", &a6);
	TEST_CHECK(cidr_contains(&c, AF_INET6, &a6));
	inet_pton(AF_INET6, "fd00:1:8000::1", &a6);
	TEST_CHECK(!cidr_contains(&c, AF_INET6, &a6));
	TEST_CHECK(!cidr_contains(&c, AF_INET, &a4));

	TEST_CHECK(!cidr_contains(NULL, AF_INET, "abcd"));
}

int main(void)
{
	test_cidr();
	TEST_EXIT();
}
