/* SPDX-License-Identifier: MIT */
/*
 * The IB sysfs inventory, read once here for every step that needs it
 * (rdma checks it, mpi picks its UCX ports from it): devices under
 * <root>/sys/class/infiniband with node type, firmware, GUID, uverbs node,
 * and per port state, physical state, rate, link layer, LIDs and P_Keys.
 * No verbs library: plain files under the root.
 */
#ifndef HPCINIT_IBSYSFS_H
#define HPCINIT_IBSYSFS_H

#include <stdbool.h>
#include <stddef.h>

#include "hpcinit.h"

#define IB_MAX_PORTS 16
#define IB_MAX_DEVS 64

struct ib_port {
	unsigned num;
	int state;                      /* 4 = ACTIVE; -1 unknown */
	char state_txt[32];
	int phys;                       /* 5 = LinkUp, 2 = Polling, 3 = Disabled; -1 unknown */
	char phys_txt[32];
	double rate_gbps;
	char rate_txt[64];
	char link_layer[32];            /* "InfiniBand", "Ethernet" */
	char lid[16], sm_lid[16];
	unsigned n_pkeys;               /* non-zero entries */
	unsigned pkey_max;              /* the larger P_Key: Azure's tenant key */
};

struct ib_dev {
	char name[64];
	int node_type;                  /* 1 CA, 4 RNIC (iWARP); -1 unknown */
	char node_type_txt[32];
	char fw_ver[64];
	char node_guid[40];
	char uverbs[32];                /* "uverbs0", "" when there is none */
	char parent[32];                /* software device (rxe, siw): its netdev; "" for hardware */
	struct ib_port ports[IB_MAX_PORTS];
	unsigned n_ports;
};

/* Every device (sorted by name), at most max.  Returns how many. */
size_t ib_read_devices(const struct ctx *c, struct ib_dev *devs, size_t max);
/* Does a port's link layer ("InfiniBand", "Ethernet") satisfy the spec's? */
bool ib_link_matches(enum link_layer want, const char *have);

/* Small parsers and readers, shared with rdma's IPoIB checks. */
bool ib_sysfs_read(const struct ctx *c, const char *path, char *buf, size_t n);
int ib_parse_num_text(const char *s, char *txt, size_t n);     /* "4: ACTIVE" -> 4, "ACTIVE" */
double ib_parse_rate(const char *s);                           /* "200 Gb/sec (4X HDR)" -> 200 */
unsigned ib_parse_hex16(const char *s);                        /* "0x800b" -> 0x800b; 0 when bad */
bool ib_safe_name(const char *s);                              /* one path component, < 64 */

#endif
