/* SPDX-License-Identifier: MIT */
/*
 * This node's fabric identity, for its peer record (agent/base/record.c): the
 * RDMA devices that are its fabric (ibsysfs.c's classification: never the
 * accelerated-networking VF) with their port GUIDs, the tenant P_Key (the
 * larger of a port's two), and on Azure the placement group: IMDS
 * compute/placementGroupId, asked once (lib/metadata), under a deadline, never required.
 * Together P_Key and placement group are the node's InfiniBand domain:
 * nodes of two domains cannot reach each other over InfiniBand.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcinit.h"
#include "ibsysfs.h"
#include "identity.h"
#include "metadata/metadata.h"
#include "record.h"

bool ib_fabric_candidate(const struct spec_rdma *s, const struct ib_dev *d)
{
	bool ll = false;

	if (d->kind == IB_KIND_AN_VF || fnmatch(s->devices ? s->devices : "*", d->name, 0) != 0)
		return false;
	if (d->kind == IB_KIND_SOFT &&
	    !(s->software == SOFT_ALLOW || (s->software == SOFT_AUTO && s->link_layer != LINK_INFINIBAND)))
		return false;
	for (unsigned k = 0; k < d->n_ports; k++)
		ll |= ib_link_matches(s->link_layer, d->ports[k].link_layer);
	return ll;
}

static bool pg_valid(const char *s)
{
	if (!*s || strlen(s) > 64)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') || *s == '-'))
			return false;
	return true;
}

void rdma_node_identity(struct ctx *c, struct report *r, struct peer *p)
{
	const struct spec_rdma *s = &c->spec->rdma;
	struct ib_dev *devs;
	struct strbuf sb = STRBUF_INIT;
	unsigned pkey = 0;
	size_t n;

	if (!s->present)
		return;
	devs = xcalloc(IB_MAX_DEVS, sizeof(*devs));
	n = ib_read_devices(c, devs, IB_MAX_DEVS);
	for (size_t i = 0; i < n; i++) {
		const struct ib_dev *d = &devs[i];
		const char *guid = d->n_ports && d->ports[0].port_guid[0] ? d->ports[0].port_guid : "-";

		if (!ib_fabric_candidate(s, d) || !ib_safe_name(d->name) || strpbrk(d->name, "=,:"))
			continue;
		sb_printf(&sb, "%s%s=%s", sb.len ? "," : "", d->name, guid);
		for (unsigned k = 0; k < d->n_ports; k++)
			if (strcmp(d->ports[k].link_layer, "InfiniBand") == 0 && d->ports[k].pkey_max > pkey)
				pkey = d->ports[k].pkey_max;
	}
	free(devs);
	if (sb.len)
		p->fabric = sb_steal(&sb);
	sb_free(&sb);
	if (pkey)
		p->pkey = xasprintf("0x%04x", pkey);
	/* The placement group matters only between InfiniBand nodes, and only Azure has one. */
	if (pkey && s->placement_group && s->imds_url) {
		char pg[128], err[160];
		bool cached;
		int ret = md_fact(c, "placement-group", s->imds_url, pg, sizeof(pg), &cached, err, sizeof(err));

		if (ret == 0 && pg_valid(pg))
			p->placement_group = xstrdup(pg);
		else if (ret == 0 && pg[0])
			report_detail(r, "placement group: %s answered \"%.40s\", not an identifier: ignored",
				      s->imds_url, pg);
		else if (ret < 0)
			report_detail(r, "placement group: not known (%s: %s); the InfiniBand domain is the "
				      "P_Key %s alone", s->imds_url, err, p->pkey);
	}
}

char *rdma_peer_domain(const struct peer *p)
{
	if (!p->pkey)
		return NULL;
	return p->placement_group ? xasprintf("%s-%s", p->pkey, p->placement_group) : xstrdup(p->pkey);
}

/* FNV-1a of a domain word, for rdma_domains_index's table. */
static size_t domain_hash(const char *s)
{
	uint64_t h = 14695981039346656037ULL;

	for (; *s; s++) {
		h ^= (unsigned char)*s;
		h *= 1099511628211ULL;
	}
	return (size_t)h;
}

/*
 * One pass through the peers and an open addressing table of the domains
 * seen: linear in the records (4,000 records of 4,000 domains are 4,000
 * lookups, not 8 million comparisons).
 */
void rdma_domains_index(const struct peerset *ps, struct strlist *ret, unsigned *counts, size_t *idx)
{
	size_t cap = 16, *slot;         /* domain index + 1; 0: empty */

	while (ps && cap < 2 * ps->n)
		cap *= 2;
	slot = xcalloc(cap, sizeof(*slot));
	for (size_t i = 0; ps && i < ps->n; i++) {
		char *d = rdma_peer_domain(&ps->v[i]);
		size_t k;

		if (idx)
			idx[i] = RDMA_NO_DOMAIN;
		if (!d)
			continue;
		for (k = domain_hash(d) & (cap - 1); slot[k] && strcmp(ret->v[slot[k] - 1], d) != 0;
		     k = (k + 1) & (cap - 1))
			;
		if (!slot[k]) {
			strlist_push_take(ret, d);
			slot[k] = ret->n;
		} else {
			free(d);
		}
		if (counts)
			counts[slot[k] - 1]++;
		if (idx)
			idx[i] = slot[k] - 1;
	}
	free(slot);
}

void rdma_domains(const struct peerset *ps, struct strlist *ret, unsigned *counts)
{
	rdma_domains_index(ps, ret, counts, NULL);
}
