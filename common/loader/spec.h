/* SPDX-License-Identifier: MIT */
/*
 * The version-1 node spec as typed structs.  spec.c fills them from YAML
 * with the section tables of spec_tables.c; spechosts.c lists the host
 * names the spec itself names;
 * every module reads only these structs, so the contract lives here.
 */
#ifndef HPCINIT_SPEC_H
#define HPCINIT_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <netinet/in.h>

#include "cidr.h"
#include "diag.h"
#include "strlist.h"

#define SPEC_VERSION 1
#define SPEC_MAX_BYTES (1024 * 1024)   /* a spec larger than this is refused */
#define SPEC_MAX_HOSTS 100000          /* hard limit on expanded node ranges */

enum role { ROLE_COMPUTE, ROLE_HEAD };
enum link_layer { LINK_INFINIBAND, LINK_ETHERNET, LINK_ANY };
/* rdma.software: may a software RDMA device (rdma_rxe, siw) satisfy the spec? */
enum soft_rdma { SOFT_AUTO, SOFT_ALLOW, SOFT_DENY };
enum disc_method { DISC_SHARED, DISC_STATIC, DISC_SCAN, DISC_ETCD };
/* etcd: what discovery does when no endpoint answers. */
enum disc_unreachable { DISC_UNREACH_FAIL, DISC_UNREACH_DEGRADE };
enum key_type { KEY_ED25519, KEY_ECDSA, KEY_RSA };
enum host_keys { HOSTKEYS_PINNED, HOSTKEYS_SCAN, HOSTKEYS_CA };
enum hf_address { HF_ADDR_HOSTNAME, HF_ADDR_IP, HF_ADDR_IPOIB };
enum hf_etc_hosts { HF_HOSTS_AUTO, HF_HOSTS_ALWAYS, HF_HOSTS_NEVER };
/* hostfile.exclude: which nodes the MPI hostfiles leave out, by the state their records say. */
enum hf_exclude { HF_EXCLUDE_FAILED, HF_EXCLUDE_NONE };

enum hf_format {
	HF_OPENMPI = 1u << 0,
	HF_MPICH   = 1u << 1,
	HF_PLAIN   = 1u << 2,
	HF_CLUSH   = 1u << 3,
};

/* Source position of a value, 1-based, for messages emitted after loading. */
struct spec_mark {
	unsigned line, col;
};

struct spec_cluster {
	char *name;                     /* required, [a-z0-9-]{1,63} */
	enum role role;                 /* default compute */
	bool has_network;
	struct cidr network;
	char *secret_file;              /* NULL when absent */
};

struct spec_memlock {
	bool present;
	bool unlimited;                 /* default true */
	uint64_t limit_bytes;           /* when !unlimited */
	struct strlist users;           /* default ["*"]; pam domains: user, @group, * */
	bool systemd;                   /* default true */
};

/* kernel.updates: with the hold on, may a newer kernel come in? */
enum kernel_updates { KUPD_HOLD, KUPD_WHEN_MODULES };

struct spec_kernel {
	bool present;
	bool hold;                      /* default true */
	enum kernel_updates updates;    /* default hold */
	char *expect;                   /* glob, NULL when absent */
	struct strlist modules;         /* default empty */
};

struct spec_rdma {
	bool present;
	bool required;                  /* default true */
	char *devices;                  /* glob, default "*": sysfs decides (ibsysfs.c) */
	enum link_layer link_layer;     /* default infiniband */
	unsigned min_rate_gbps;         /* default 0 (no minimum) */
	char *ipoib;                    /* interface name, NULL when absent */
	uint64_t open_timeout_ms;       /* default 10 s */
	uint64_t reg_mr_bytes;          /* default 64 MiB; 0 disables the reg_mr probe */
	enum soft_rdma software;        /* default auto: allowed unless link_layer is infiniband */
	bool placement_group;           /* ask IMDS for the placement group (IB domain); default true */
	char *imds_url;                 /* its URL; default IMDS compute/placementGroupId */
};

/* gpu: the node's NVIDIA GPUs (modules/gpu, docs/gpu.md). */
enum gpu_peermem { GPU_PEERMEM_OPTIONAL, GPU_PEERMEM_REQUIRED };

struct spec_gpu {
	bool present;
	unsigned count;                 /* GPUs this node must have; 0 (default): the VM size's (lib/gpu/sizes.c) */
	enum gpu_peermem peermem;       /* GPUDirect RDMA missing: degraded (optional, default) or failed */
	char *imds_url;                 /* where the VM size comes from without the fact file; default IMDS compute/vmSize */
};

struct spec_nfs_mount {
	char *source;                   /* "host:/export" */
	char *host;                     /* split from source */
	char *export;                   /* split from source, starts with '/' */
	char *path;                     /* absolute mount point, not / */
	struct strlist options;         /* default [vers=3,hard,proto=tcp]; [] is none */
	/*
	 * How long to wait for the server; always set by the loader: the spec's
	 * value, or 5 min when the key is absent.  0 is the
	 * spec's "0s": one probe, no waiting (never "unset").
	 */
	uint64_t wait_ms;
	struct spec_mark mark;
};

struct spec_nfs_export {
	char *path;                     /* absolute, not / */
	char *clients;                  /* CIDR, host or "*"; default cluster.network */
	struct strlist options;         /* default [rw,sync,no_subtree_check]; [] is none */
	struct spec_mark mark;
};

struct spec_nfs {
	bool present;
	struct spec_nfs_mount *mounts;
	size_t n_mounts;
	struct spec_nfs_export *exports;
	size_t n_exports;
};

struct spec_discovery {
	bool present;
	enum disc_method method;        /* default shared */
	char *dir;                      /* shared: rendezvous directory */
	struct strlist hosts;           /* static: expanded names, in spec order */
	uint16_t scan_port;             /* default 22 */
	uint64_t scan_timeout_ms;       /* default 500 ms */
	unsigned expect;                /* default 1 (self) */
	uint64_t wait_ms;               /* default 10 min */
	uint64_t lease_ms;              /* default 5 min; etcd: the lease TTL */
	struct strlist endpoints;       /* etcd: client URLs, tried in turn */
	char *ca_file;                  /* etcd: CA bundle for https endpoints */
	char *cert_file, *key_file;     /* etcd: client certificate (both or neither) */
	char *auth_file;                /* etcd: "user:password" for etcd's token auth */
	enum disc_unreachable unreachable; /* etcd, no endpoint answers: fail (default) or degrade */
	bool events_enable;             /* watch: follow Azure Scheduled Events (default false) */
	char *events_url;               /* their endpoint (default: the instance metadata service) */
};

struct spec_ssh {
	bool present;
	struct strlist users;
	enum key_type key_type;         /* default ed25519 */
	enum host_keys host_keys;       /* default pinned */
	bool restrict_from;             /* default true */
	char *ca_key_file;              /* host_keys ca, head only: the CA private key */
	char *ca_public_key;            /* host_keys ca: "type base64 [comment]" of the CA */
	uint64_t cert_validity_ms;      /* host_keys ca: default 7 days */
	bool hostbased;                 /* host-based login between members (default false) */
	uint64_t users_wait_ms;         /* how long users may take to resolve through NSS (default 2 min) */
};

struct spec_hostfile {
	bool present;
	char *dir;                      /* default /etc/hpcinit */
	unsigned formats;               /* HF_* bits, default all */
	enum hf_address address;        /* default hostname */
	bool openmpi_default;           /* default true */
	enum hf_etc_hosts etc_hosts;    /* default auto */
	enum hf_exclude exclude;        /* default failed */
};

/* mpi.verify.launcher: which MPI launches the verify program (built for it). */
enum mpi_launcher { MPI_OPENMPI, MPI_MPICH, MPI_INTEL };

struct spec_mpi {
	bool present;
	bool profile;                   /* default true */
	bool verify_enable;             /* default false */
	double max_latency_us;          /* default 0 = no threshold */
	uint64_t min_bandwidth;         /* bytes per second at 4 MiB; default 0 = no threshold */
	enum mpi_launcher launcher;     /* default openmpi */
	unsigned slots;                 /* ranks per node in records and hostfiles; 0 (default): usable cores */
	bool slots_per_gpu;             /* one rank per GPU (ND sizes), where sysfs shows GPUs; default false */
	bool software_fabric;           /* a software RDMA device (rxe, siw) may be the fabric; default false */
};

/* slurm: this node in Slurm (modules/slurm, docs/slurm.md). */
enum slurm_auth { SLURM_AUTH_MUNGE, SLURM_AUTH_SLURM };

struct spec_slurm {
	bool present;
	struct strlist conf_servers;    /* compute: slurmctld hosts, "host[:port]" (configless) */
	struct strlist features;        /* added to the facts' features (cluster, VM size, IB domain) */
	unsigned memory_margin_pct;     /* RealMemory: MemTotal less this share; default 3 */
	enum slurm_auth auth;           /* whose key key_file is: munge's (default) or Slurm's auth/slurm */
	char *key_file;                 /* the key, root's alone like cluster.secret_file; NULL: none */
	uint64_t leave_wait_ms;         /* leave: how long to wait for jobs before the delete; default 60 s */
	uint64_t register_window_ms;    /* registrations spread over it; UINT64_MAX: unset (scaled to discovery.expect) */
};

struct spec {
	char *file;                     /* path the spec was read from */
	unsigned version;
	struct spec_cluster cluster;
	struct spec_memlock memlock;
	struct spec_kernel kernel;
	struct spec_rdma rdma;
	struct spec_gpu gpu;
	struct spec_nfs nfs;
	struct spec_discovery discovery;
	struct spec_ssh ssh;
	struct spec_hostfile hostfile;
	struct spec_mpi mpi;
	struct spec_slurm slurm;
};

/*
 * Load and validate a spec.  Returns 0 and sets *ret_spec on success;
 * returns -EINVAL when the spec has errors (all of them in *diags),
 * or another -errno when the file cannot be read (also described in *diags).
 */
int spec_load_file(const char *path, struct spec **ret_spec, struct diags *diags);
/* Same, from memory; name is used in messages. */
int spec_load_buffer(const char *name, const char *buf, size_t len,
		     struct spec **ret_spec, struct diags *diags);
/*
 * The same, and with root (a directory; "" for the real root, NULL for no
 * check) an error for each secret file the spec names (cluster.secret_file,
 * slurm.key_file, discovery.auth_file and key_file, ssh.ca_key_file) that,
 * read under root, still holds the example custom-data's placeholder
 * (SPEC_PLACEHOLDER), at the key that names it.
 */
#define SPEC_PLACEHOLDER "CHANGE-ME"
int spec_load_file_root(const char *path, const char *root, struct spec **ret_spec, struct diags *diags);
int spec_load_buffer_root(const char *name, const char *buf, size_t len, const char *root,
			  struct spec **ret_spec, struct diags *diags);
struct spec *spec_free(struct spec *s);

/* Helpers shared with modules and tests. */
const char *link_layer_name(enum link_layer l);
const char *disc_method_name(enum disc_method m);
#define SPEC_IMDS_PG_URL \
	"http://169.254.169.254/metadata/instance/compute/placementGroupId?api-version=2021-02-01&format=text"
#define SPEC_IMDS_VMSIZE_URL \
	"http://169.254.169.254/metadata/instance/compute/vmSize?api-version=2021-02-01&format=text"
#define SPEC_EVENTS_URL "http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01"
/*
 * Every host name the spec names, each with what it is for (whys, the same
 * index): the NFS servers of nfs.mounts, the clients of nfs.exports, the
 * slurmctld hosts of slurm.conf_servers, the etcd endpoints, the Scheduled
 * Events and instance metadata addresses.  Addresses, networks and patterns
 * name no host and are left out.  The one list of them: no peer's record
 * may take one of these names (modules/discovery/admit.c).
 */
void spec_host_names(const struct spec *s, struct strlist *names, struct strlist *whys);
/* The defaults of one mount, for a mount not made by the loader (tests). */
void spec_nfs_mount_defaults(struct spec_nfs_mount *m);

#endif
