/* SPDX-License-Identifier: MIT */
/* CIDR networks: parse to canonical text, test membership. */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>

#include "ascii.h"
#include "cidr.h"

int cidr_parse(const char *text, struct cidr *ret)
{
	char addr[INET6_ADDRSTRLEN + 1], out[INET6_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	struct cidr c;
	unsigned long prefix = 0;
	size_t al, max;
	unsigned char *bytes;

	if (!slash)
		return -EINVAL;
	al = (size_t)(slash - text);
	if (al == 0 || al >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, text, al);
	addr[al] = '\0';
	memset(&c, 0, sizeof(c));
	c.family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(c.family, addr, &c.addr) != 1)
		return -EINVAL;
	max = c.family == AF_INET ? 32 : 128;
	if (!is_digit((unsigned char)slash[1]) || strlen(slash + 1) > 3)
		return -EINVAL;
	for (const char *p = slash + 1; *p; p++) {
		if (!is_digit((unsigned char)*p))
			return -EINVAL;
		prefix = prefix * 10 + (unsigned long)(*p - '0');
	}
	if (prefix > max)
		return -EINVAL;
	c.prefix = (unsigned)prefix;
	/* Clear the host bits: 10.0.0.5/24 means the network 10.0.0.0/24. */
	bytes = (unsigned char *)&c.addr;
	for (size_t bit = prefix; bit < max; bit++)
		bytes[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	if (!inet_ntop(c.family, &c.addr, out, sizeof(out)))
		return -EINVAL;
	snprintf(c.text, sizeof(c.text), "%s/%u", out, c.prefix);
	*ret = c;
	return 0;
}

bool cidr_contains(const struct cidr *c, int family, const void *addr)
{
	const unsigned char *net, *a = addr;
	unsigned full, rest;

	if (!c || !addr || family != c->family)
		return false;
	net = (const unsigned char *)&c->addr;
	full = c->prefix / 8;
	rest = c->prefix % 8;
	if (memcmp(net, a, full))
		return false;
	if (rest) {
		unsigned char mask = (unsigned char)(0xffu << (8 - rest));

		return (net[full] & mask) == (a[full] & mask);
	}
	return true;
}

/* ---------------------------------------------------------------- node ranges */

