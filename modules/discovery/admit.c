/* SPDX-License-Identifier: MIT */
/*
 * What a peer must be before ssh, hostfile and mpi act on it (docs/conventions.md
 * "Trust", docs/cluster.md "What a record writer can and cannot do").  A
 * root on one node can write any record, with the cluster secret if it has
 * it; what it writes may describe a node, never widen or displace one:
 *
 *  - addresses are the cluster's: addr inside cluster.network; the IPoIB
 *    address inside the IPoIB network, the subnet of this node's
 *    rdma.ipoib interface -- with no rdma.ipoib in the spec, or no address
 *    on it, records' IPoIB addresses are dropped, never used;
 *  - names are the cluster's own: this node's hostname sets the form, a
 *    short name (no dot) or a name in this node's domain (the part after
 *    its first dot), compared without regard to case;
 *  - one node, one name: names equal but for case are one name; a record
 *    claiming this node's is dropped, and two records claiming one name
 *    are both dropped until one leaves;
 *  - a name this node needs for something else never comes from a record:
 *    localhost and its kin, the hosts its spec names (spec_host_names: NFS
 *    servers and clients, slurmctld hosts, etcd endpoints, the Scheduled
 *    Events address) unless the static
 *    /etc/hosts gives that name the record's own address (an NFS server
 *    that is also a member: pin it there), and a name the static
 *    /etc/hosts (outside hpcinit's block) gives another address.  The
 *    system's resolver (DNS) is not asked: at boot it may hang or not be
 *    up, and an admission that depends on it would differ from run to run;
 *    the block hpcinit writes into /etc/hosts comes after the static lines,
 *    so for names there the static line is what the node resolves anyway.
 *    Such a record is rejected and reported (not ignored): its name is all
 *    it is, and a silent drop would hide a writer that tries.
 */
#include "config.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "discovery.h"
#include "fsutil.h"
#include "names.h"

static char *lower(const char *s)
{
	char *r = xstrdup(s);

	for (char *p = r; *p; p++)
		if (*p >= 'A' && *p <= 'Z')
			*p = (char)(*p - 'A' + 'a');
	return r;
}

void admit_init(struct admit *a, const struct ctx *c, const struct peer *self)
{
	const char *dot;
	char *hosts = NULL;

	memset(a, 0, sizeof(*a));
	a->spec = c->spec;
	a->check_names = true;
	a->self_name = self->hostname ? lower(self->hostname) : xstrdup("");
	dot = strchr(a->self_name, '.');
	a->domain = dot ? dot + 1 : NULL;
	a->has_ipoib = node_ipoib_network(c, &a->ipoib) == 0;
	spec_host_names(c->spec, &a->reserved, &a->reserved_why);
	if (fs_read(c, "/etc/hosts", &hosts, NULL) == 0) {
		/* Only the static lines: the block is hpcinit's own output, from records. */
		a->static_hosts = managed_block_apply(hosts, c->spec->cluster.name, NULL);
		free(hosts);
	}
}

void admit_free(struct admit *a)
{
	free(a->self_name);
	strlist_free(&a->reserved);
	strlist_free(&a->reserved_why);
	free(a->static_hosts);
	memset(a, 0, sizeof(*a));
}

/* The text address s lies in n. */
static bool addr_in(const struct cidr *n, const char *s)
{
	unsigned char buf[sizeof(struct in6_addr)];

	if (inet_pton(AF_INET, s, buf) == 1)
		return cidr_contains(n, AF_INET, buf);
	if (inet_pton(AF_INET6, s, buf) == 1)
		return cidr_contains(n, AF_INET6, buf);
	return false;
}

bool admit_name_ours(const struct admit *a, const char *name)
{
	const char *dot = strchr(name, '.');

	if (!a->domain)
		return dot == NULL;
	return dot && dot > name && strcasecmp(dot + 1, a->domain) == 0;
}

/* A name this node needs for something else, or that its static /etc/hosts gives another address. */
static const char *admit_name_reserved(const struct admit *a, const struct peer *p, char *why, size_t len)
{
	char addr[256];

	/* This node's own name: drop_contested_names rejects the claim, saying so. */
	if (name_same_host(p->hostname, a->self_name))
		return NULL;
	if (name_is_localhost(p->hostname)) {
		snprintf(why, len, "hostname %s is a name every system keeps for itself (loopback); a "
			 "record may not take it", p->hostname);
		return "reserved-name";
	}
	for (size_t i = 0; i < a->reserved.n; i++)
		if (name_same_host(p->hostname, a->reserved.v[i]) &&
		    !(a->static_hosts && name_hosts_lookup(a->static_hosts, p->hostname, addr, sizeof(addr)) &&
		      strcmp(addr, p->addr) == 0)) {
			snprintf(why, len, "hostname %s is %s in this node's spec (%s); a record may not "
				 "take a name this node needs for something else", p->hostname,
				 a->reserved_why.v[i], a->reserved.v[i]);
			return "reserved-name";
		}
	if (a->static_hosts && name_hosts_lookup(a->static_hosts, p->hostname, addr, sizeof(addr)) &&
	    strcmp(addr, p->addr) != 0) {
		snprintf(why, len, "hostname %s is %s in this node's /etc/hosts (outside hpcinit's block), "
			 "not the record's %s; a record may not move a name that resolves elsewhere",
			 p->hostname, addr, p->addr);
		return "resolves-elsewhere";
	}
	return NULL;
}

const char *admit_record(const struct admit *a, struct peer *p, struct report *notes,
			 char *why, size_t len)
{
	const struct spec *spec = a->spec;
	const char *t;

	if (spec->cluster.has_network && !addr_in(&spec->cluster.network, p->addr)) {
		snprintf(why, len, "address %s is outside cluster.network %s", p->addr,
			 spec->cluster.network.text);
		return "outside-network";
	}
	if (a->check_names && !admit_name_ours(a, p->hostname)) {
		if (a->domain)
			snprintf(why, len, "hostname %s is not a name in this cluster's domain %s",
				 p->hostname, a->domain);
		else
			snprintf(why, len, "hostname %s is not a short name like this node's (%s)",
				 p->hostname, a->self_name);
		return "foreign-name";
	}
	if (a->check_names && (t = admit_name_reserved(a, p, why, len)))
		return t;
	if (p->ipoib_addr && a->has_ipoib && !addr_in(&a->ipoib, p->ipoib_addr)) {
		report_cluster(notes, "discovery.record.ipoib-outside",
			       "%s: IPoIB address %s is outside this node's IPoIB network %s; ignored",
			       p->hostname, p->ipoib_addr, a->ipoib.text);
		free(p->ipoib_addr);
		p->ipoib_addr = NULL;
	} else if (p->ipoib_addr && !a->has_ipoib) {
		/* No IPoIB network to check it against: never used. */
		free(p->ipoib_addr);
		p->ipoib_addr = NULL;
	}
	return NULL;
}

const char *admit_future(const struct peer *p, int64_t now, char *why, size_t len)
{
	if (p->updated <= now + DISC_CLOCK_SKEW_S)
		return NULL;
	snprintf(why, len, "dated %" PRId64 " s in the future (more than the %d s of clock skew "
		 "allowed)", p->updated - now, DISC_CLOCK_SKEW_S);
	return "future";
}

void admit_found(struct disc_run *run)
{
	struct peerset *s = &run->found;
	size_t w = 0;

	for (size_t i = 0; i < s->n; i++) {
		struct peer *p = &s->v[i];
		char why[512], tag[64];
		const char *t = admit_record(&run->admit, p, &run->notes, why, sizeof(why));

		if (t) {
			snprintf(tag, sizeof(tag), "discovery.record.%s", t);
			report_cluster(&run->notes, tag, "record %s: %s; rejected", p->hostname, why);
			peer_clear(p);
			continue;
		}
		s->v[w++] = *p;
	}
	s->n = w;
}

static int name_order(const void *x, const void *y)
{
	const struct peer *const *a = x, *const *b = y;

	return strcasecmp((*a)->hostname, (*b)->hostname) ?: disc_self_first(*a, *b) ?:
		strcmp((*a)->hostname, (*b)->hostname);
}

static const char *hostname_of(const struct peer *p)
{
	return p->hostname;
}

void drop_contested_names(struct peerset *s, struct report *notes)
{
	struct peer **idx;

	if (s->n < 2 || !disc_any_equal(s, hostname_of, true))
		return;
	idx = disc_sorted_index(s, name_order);
	for (size_t i = 0, j; i < s->n; i = j) {
		for (j = i + 1; j < s->n && strcasecmp(idx[i]->hostname, idx[j]->hostname) == 0; j++)
			;
		if (j - i < 2)
			continue;
		if (idx[i]->self) {
			/* This node's entry is never displaced. */
			for (size_t k = i + 1; k < j; k++) {
				report_cluster(notes, "discovery.name.claims-self",
					       "a record for %s (%s) claims this node's name %s "
					       "(names compare without case); rejected",
					       idx[k]->hostname, idx[k]->addr, idx[i]->hostname);
				peer_clear(idx[k]);
			}
			continue;
		}
		report_cluster(notes, "discovery.name.contested",
			       "name %s is claimed by %zu records (%s at %s, %s at %s%s); none of "
			       "them is used until only one is left", idx[i]->hostname, j - i,
			       idx[i]->hostname, idx[i]->addr, idx[i + 1]->hostname, idx[i + 1]->addr,
			       j - i > 2 ? ", ..." : "");
		for (size_t k = i; k < j; k++)
			peer_clear(idx[k]);
	}
	free(idx);
	disc_compact(s);
}
