/* SPDX-License-Identifier: MIT */
/*
 * rdma_cm to the peers (lib/ib/): through the verbs helper (probe.h), below
 * the steps; the mpi step calls it once discovery knows the peers.
 */
#ifndef HPCINIT_IB_PEERS_H
#define HPCINIT_IB_PEERS_H

#include "hpcinit.h"

/* Peers whose address rdma_cm resolves (addr and route) per run, at most. */
#define RDMA_PEERS_MAX 3
struct peerset;
/*
 * rdma_cm to peers (the mpi step calls it: peers are known after discovery):
 * resolve the address and the route to the IPoIB address (rdma.ipoib set) or,
 * on an Ethernet link layer (RoCE, rxe), the cluster address of up to
 * RDMA_PEERS_MAX peers that follow this node in peers' order, in parallel
 * helpers under rdma.open_timeout.  One detail a peer; a failure is a finding
 * (rdma.peer-resolve: failed, degraded when rdma.required is false).
 * Returns the worst status (ST_OK when nothing was to check); n_checked
 * peers were probed, n_ok of them resolved.
 */
enum rstatus ib_check_peers(struct ctx *c, struct report *r, const struct peerset *peers,
			    unsigned *n_checked, unsigned *n_ok);

#endif
