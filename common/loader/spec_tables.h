/* SPDX-License-Identifier: MIT */
/*
 * The spec's schema tables (spec_tables.c) as spec.c sees them: the root
 * table the walker starts from, and the marks the checks between keys
 * point at.  Private to the loader.
 */
#ifndef HPCINIT_SPEC_TABLES_H
#define HPCINIT_SPEC_TABLES_H

#include "schema.h"

/* Marks of keys the cross-field checks point at. */
enum mark_slot {
	M_NONE,
	M_NETWORK,
	M_ROLE,
	M_RDMA_IPOIB,
	M_NFS_EXPORTS,
	M_DISC,
	M_DISC_METHOD,
	M_DISC_HOSTS,
	M_DISC_DIR,
	M_DISC_ENDPOINTS,
	M_DISC_CERT,
	M_DISC_AUTH,
	M_DISC_UNREACH,
	M_SSH,
	M_SSH_RESTRICT,
	M_SSH_HOSTKEYS,
	M_SSH_CA_KEY,
	M_SSH_CA_PUB,
	M_HF_ADDRESS,
	M_SLURM,
	M_SLURM_SERVERS,
	M_SECRET,
	M_SLURM_KEY,
	M_KERNEL_UPDATES,
	M_COUNT
};
_Static_assert(M_COUNT <= SCHEMA_SLOTS, "the loader keeps SCHEMA_SLOTS marks");

/* The root of the version-1 spec: version, cluster and one table per section. */
extern const struct field spec_root_fields[];

#endif
