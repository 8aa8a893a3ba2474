/* SPDX-License-Identifier: MIT */
/*
 * The IB sysfs inventory, read once here for every step that needs it
 * (rdma checks it, mpi picks its UCX ports from it): devices under
 * <root>/sys/class/infiniband with node type, firmware, GUID, uverbs node,
 * and per port state, physical state, rate, link layer, LIDs and P_Keys.
 * No verbs library: plain files under the root.
 *
 * What a device is comes from sysfs, never from its name (Azure's
 * rdma_rename NAME_FIXED calls an InfiniBand port mlx5_ib<N> and an Ethernet
 * one mlx5_an<N>; before it runs, or where it does not, both are mlx5_<N>):
 * a "parent" netdev (rdma_rxe, siw) makes a software device; a port's link
 * layer InfiniBand an HCA; an Ethernet device whose netdev (device/net) is
 * enslaved to Hyper-V's synthetic NIC (hv_netvsc), or is driven by mana,
 * is accelerated networking's VF; any other Ethernet device is RoCE.
 */
#ifndef HPCINIT_IBSYSFS_H
#define HPCINIT_IBSYSFS_H

#include <stdbool.h>
#include <stddef.h>

#include "hpcinit.h"

#define IB_MAX_PORTS 16
#define IB_MAX_DEVS 64

/* What sysfs says a device is (ib_classify). */
enum ib_kind {
	IB_KIND_HCA,            /* hardware, InfiniBand link layer: the fabric */
	IB_KIND_ROCE,           /* hardware, Ethernet link layer, not a VM's accelerated-networking VF */
	IB_KIND_AN_VF,          /* accelerated networking's Ethernet VF (mlx5 or mana): never the fabric */
	IB_KIND_SOFT,           /* rdma_rxe or siw on a netdev: the CPU does the transport */
};

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
	char port_guid[24];             /* the low 64 bits of GID 0 ("0c42:a103:0065:aa10"), "" unknown */
};

struct ib_dev {
	char name[64];
	int node_type;                  /* 1 CA, 4 RNIC (iWARP); -1 unknown */
	char node_type_txt[32];
	char fw_ver[64];
	char node_guid[40];
	char uverbs[32];                /* "uverbs0", "" when there is none */
	char parent[32];                /* software device (rxe, siw): its netdev; "" for hardware */
	char driver[32];                /* device/driver's name (mlx5_core, mana), "" unknown */
	char netdev[32];                /* the first netdev under device/net (ib0, enP49993s1), "" none */
	char master[32];                /* that netdev's master (eth0 for an Azure VF), "" none */
	char master_driver[32];         /* the master's driver (hv_netvsc), "" unknown */
	enum ib_kind kind;
	struct ib_port ports[IB_MAX_PORTS];
	unsigned n_ports;
};

/* Every device (sorted by name), at most max.  Returns how many. */
size_t ib_read_devices(const struct ctx *c, struct ib_dev *devs, size_t max);
/* What sysfs says d is (set by ib_read_devices in d->kind). */
enum ib_kind ib_classify(const struct ib_dev *d);
/* "InfiniBand HCA", "RoCE NIC", "accelerated networking's Ethernet VF", "software RoCE"... */
const char *ib_kind_text(const struct ib_dev *d);
/* The netdev a device sits on: a software device's parent, else device/net's first. */
const char *ib_dev_netdev(const struct ib_dev *d);
/* Does a port's link layer ("InfiniBand", "Ethernet") satisfy the spec's? */
bool ib_link_matches(enum link_layer want, const char *have);

/* Small parsers and readers, shared with rdma's IPoIB checks. */
bool ib_sysfs_read(const struct ctx *c, const char *path, char *buf, size_t n);
int ib_parse_num_text(const char *s, char *txt, size_t n);     /* "4: ACTIVE" -> 4, "ACTIVE" */
double ib_parse_rate(const char *s);                           /* "200 Gb/sec (4X HDR)" -> 200 */
unsigned ib_parse_hex16(const char *s);                        /* "0x800b" -> 0x800b; 0 when bad */
bool ib_safe_name(const char *s);                              /* one path component, < 64 */

/*
 * What the rdma step found, for later steps (its typed output c->out->rdma;
 * here, below the steps, so that mpi reads it without reaching into rdma).
 */
struct rdma_result {
	bool usable;                    /* selected devices passed every check */
	enum link_layer link_layer;     /* of the selected devices */
	unsigned rate_gbps;             /* lowest active rate among them */
	char devices[256];              /* selected device names, space-separated */
	char ipoib_addr[64];            /* "" when none */
};

#endif
