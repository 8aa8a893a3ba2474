/* SPDX-License-Identifier: MIT */
/* Network math: a CIDR network, parsed to canonical form, and membership. */
#ifndef HPCINIT_CIDR_H
#define HPCINIT_CIDR_H

#include <stdbool.h>
#include <netinet/in.h>

struct cidr {
	int family;                     /* AF_INET or AF_INET6 */
	union {
		struct in_addr v4;
		struct in6_addr v6;
	} addr;                         /* network address, host bits cleared */
	unsigned prefix;
	char text[64];                  /* canonical "a.b.c.d/n" */
};

/* "10.0.0.5/24" -> 10.0.0.0/24.  0, or -EINVAL leaving *ret untouched. */
int cidr_parse(const char *text, struct cidr *ret);
/* addr (a struct in_addr or in6_addr of family) lies in c. */
bool cidr_contains(const struct cidr *c, int family, const void *addr);

#endif
