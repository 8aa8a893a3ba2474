/* SPDX-License-Identifier: MIT */
/* This node's fabric identity for its record (identity.c). */
#ifndef HPCINIT_IB_IDENTITY_H
#define HPCINIT_IB_IDENTITY_H

#include <stdbool.h>
#include <stddef.h>

#include "hpcinit.h"
#include "ibsysfs.h"
#include "metadata/metadata.h"

struct peer;
/* Is d a fabric device for the spec: the glob, never the AN VF, soft devices as rdma.software says, link layer? */
bool ib_fabric_candidate(const struct spec_rdma *s, const struct ib_dev *d);
/* p->fabric, p->pkey and p->placement_group from sysfs and IMDS (rdma section only). */
void rdma_node_identity(struct ctx *c, struct report *r, struct peer *p);

/* A peer's InfiniBand domain as a file-name-safe word ("0x800b", "0x800b-<placement group>"); NULL: none known. */
char *rdma_peer_domain(const struct peer *p);
struct peerset;
/* The distinct domains of peers, in peers' order; counts (optional, zeroed, ps->n long): nodes in each. */
void rdma_domains(const struct peerset *ps, struct strlist *ret, unsigned *counts);
/* As rdma_domains (ret empty on the call), and idx (optional, ps->n long): each peer's domain in ret, or RDMA_NO_DOMAIN. */
#define RDMA_NO_DOMAIN ((size_t)-1)
void rdma_domains_index(const struct peerset *ps, struct strlist *ret, unsigned *counts, size_t *idx);

#endif
