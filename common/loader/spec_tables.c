/* SPDX-License-Identifier: MIT */
/*
 * The version-1 spec as tables (netplan style): one {key, type, offset,
 * argument} table per section, the enum words, the bounds of every number,
 * size and duration, and the two spec-only types (version, NFS source).
 * The walker (schema.c) reads them; spec.c holds the defaults and the checks
 * between keys.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "names.h"
#include "spec.h"
#include "spec_tables.h"
#include "strbuf.h"
#include "units.h"

#define SPEC_NFS_WAIT_DEFAULT_MS (5 * MIN_MS)   /* nfs.mounts[].wait when absent */

/* ---------------------------------------------------------------- enums */

static const struct enum_val role_vals[] = {
	{ "compute", ROLE_COMPUTE }, { "head", ROLE_HEAD }, { NULL, 0 } };
static const struct enum_val link_vals[] = {
	{ "infiniband", LINK_INFINIBAND }, { "ethernet", LINK_ETHERNET }, { "any", LINK_ANY },
	{ NULL, 0 } };
static const struct enum_val soft_vals[] = {
	{ "auto", SOFT_AUTO }, { "allow", SOFT_ALLOW }, { "deny", SOFT_DENY }, { NULL, 0 } };
static const struct enum_val peermem_vals[] = {
	{ "optional", GPU_PEERMEM_OPTIONAL }, { "required", GPU_PEERMEM_REQUIRED }, { NULL, 0 } };
static const struct enum_val method_vals[] = {
	{ "shared", DISC_SHARED }, { "static", DISC_STATIC }, { "scan", DISC_SCAN }, { "etcd", DISC_ETCD },
	{ NULL, 0 } };
static const struct enum_val unreachable_vals[] = {
	{ "fail", DISC_UNREACH_FAIL }, { "degrade", DISC_UNREACH_DEGRADE }, { NULL, 0 } };
static const struct enum_val keytype_vals[] = {
	{ "ed25519", KEY_ED25519 }, { "ecdsa", KEY_ECDSA }, { "rsa", KEY_RSA }, { NULL, 0 } };
static const struct enum_val hostkeys_vals[] = {
	{ "pinned", HOSTKEYS_PINNED }, { "scan", HOSTKEYS_SCAN }, { "ca", HOSTKEYS_CA }, { NULL, 0 } };
static const struct enum_val address_vals[] = {
	{ "hostname", HF_ADDR_HOSTNAME }, { "ip", HF_ADDR_IP }, { "ipoib", HF_ADDR_IPOIB },
	{ NULL, 0 } };
static const struct enum_val etc_hosts_vals[] = {
	{ "auto", HF_HOSTS_AUTO }, { "always", HF_HOSTS_ALWAYS }, { "never", HF_HOSTS_NEVER },
	{ NULL, 0 } };
static const struct enum_val exclude_vals[] = {
	{ "failed", HF_EXCLUDE_FAILED }, { "none", HF_EXCLUDE_NONE }, { NULL, 0 } };
static const struct enum_val slurm_auth_vals[] = {
	{ "munge", SLURM_AUTH_MUNGE }, { "slurm", SLURM_AUTH_SLURM }, { NULL, 0 } };
static const struct enum_val launcher_vals[] = {
	{ "openmpi", MPI_OPENMPI }, { "mpich", MPI_MPICH }, { "intel", MPI_INTEL }, { NULL, 0 } };
static const struct enum_val kupd_vals[] = {
	{ "hold", KUPD_HOLD }, { "when_modules", KUPD_WHEN_MODULES }, { NULL, 0 } };
static const struct enum_val format_vals[] = {
	{ "openmpi", HF_OPENMPI }, { "mpich", HF_MPICH }, { "plain", HF_PLAIN },
	{ "clush", HF_CLUSH }, { NULL, 0 } };

_Static_assert(sizeof(enum role) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum link_layer) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum soft_rdma) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum gpu_peermem) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum disc_method) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum mpi_launcher) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum key_type) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum host_keys) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum hf_address) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum slurm_auth) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum kernel_updates) == sizeof(int), "enums are stored as int");

const char *link_layer_name(enum link_layer l)
{
	return enum_name(link_vals, (int)l);
}

const char *disc_method_name(enum disc_method m)
{
	return enum_name(method_vals, (int)m);
}

/* ---------------------------------------------------------------- spec-only handlers */

static bool p_version(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	long long n = 0;
	int r = parse_ll(node_text(v), &n);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || n != SPEC_VERSION) {
		error_mark(L, v->start_mark, path, "unsupported spec version %s; this hpcinit reads version %d",
			   node_text(v), SPEC_VERSION);
		return false;
	}
	*(unsigned *)field_ptr(f, base) = SPEC_VERSION;
	return true;
}

/* "host:/export", "[v6]:/export".  Fills source, host and export of a mount. */
static bool p_nfs_source(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			 void *base, const char *path)
{
	struct spec_nfs_mount *m = base;
	const char *s = node_text(v), *colon, *why = NULL;
	char *host = NULL, *exp_norm;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		unsigned char a6[sizeof(struct in6_addr)];

		if (rb && rb[1] == ':') {
			host = xstrndup(s + 1, (size_t)(rb - s - 1));
			colon = rb + 1;
			if (inet_pton(AF_INET6, host, a6) != 1)
				why = "the address in [brackets] is not IPv6";
		} else {
			colon = NULL;
			why = "write an IPv6 server as [address]:/export";
		}
	} else {
		colon = strchr(s, ':');
		if (colon) {
			host = xstrndup(s, (size_t)(colon - s));
			if (!name_hostname_valid(host) && !name_ip_valid(host))
				why = "the server is not a host name or IPv4 address";
		} else {
			why = "add the export after the server, like 10.0.0.7:/shared";
		}
	}
	if (!why && colon[1] != '/')
		why = "the export after ':' must be an absolute path, like 10.0.0.7:/shared";
	if (!why) {
		exp_norm = name_path_normalize(colon + 1, &why);
		if (exp_norm) {
			free(m->host);
			free(m->export);
			free(m->source);
			m->host = host;
			m->export = exp_norm;
			m->source = xstrdup(s);
			return true;
		}
	}
	free(host);
	bad_value(L, f, k, v, path, why);
	return false;
}

/* ---------------------------------------------------------------- the schema */

static const struct type T_VERSION = { "the spec version (1)", YAML_SCALAR_NODE, p_version, NULL };
static const struct type T_NFS_SOURCE = { "an NFS source like 10.0.0.7:/shared", YAML_SCALAR_NODE,
					   p_nfs_source, NULL };

static const struct flags_arg formats_flags = { format_vals, "format", "openmpi, mpich, plain or clush" };

static const struct int_arg version_int = { 1, 1, 4 };
static const struct int_arg rate_int = { 0, 1600, 4 };
static const struct int_arg slots_int = { 0, 4096, 4 };
static const struct int_arg gpu_count_int = { 0, 64, 4 };     /* GPU_MAX (lib/gpu/gpu.h) */
static const struct int_arg port_int = { 1, 65535, 2 };
static const struct int_arg expect_int = { 1, SPEC_MAX_HOSTS, 4 };
static const struct float_arg latency_float = { 0, 1e6 };
/* At most 1E: limits.conf (KiB, rounded up) and LimitMEMLOCK= then hold it exactly. */
static const struct size_arg memlock_size = {
	64 * KIB, EIB, true, offsetof(struct spec_memlock, unlimited) };
static const struct size_arg reg_mr_size = { 0, 64 * GIB, false, 0 };
static const struct size_arg bandwidth_size = { 0, 1024 * GIB, false, 0 };     /* per second */
static const struct dur_arg open_timeout_dur = { 100, 10 * MIN_MS };
static const struct dur_arg nfs_wait_dur = { 0, 24 * HOUR_MS };
static const struct dur_arg disc_wait_dur = { 0, 24 * HOUR_MS };
static const struct dur_arg lease_dur = { SEC_MS, 24 * HOUR_MS };
static const struct dur_arg scan_timeout_dur = { 10, 60 * SEC_MS };
static const struct dur_arg cert_validity_dur = { 5 * MIN_MS, 5 * 366 * 24 * HOUR_MS };
static const struct dur_arg users_wait_dur = { 0, HOUR_MS };
static const struct cidr_arg network_cidr = { offsetof(struct spec_cluster, has_network) };
static const struct path_arg not_root_path = { true };
static const struct hosts_arg hosts_max = { SPEC_MAX_HOSTS };
static const struct list_arg pam_users_list = {
	"'*', user names or @groups", "'*', a user name or @group", name_check_pam_domain, 1024, true, true };
static const struct list_arg modules_list = {
	"kernel module names", "a kernel module name", name_check_module, 256, false, true };
static const struct list_arg options_list = {
	"options like hard or vers=3", "an option like hard or vers=3", name_check_mount_option, 64,
	false, false };
static const struct list_arg export_options_list = {
	"options like rw or no_subtree_check", "an option like rw", name_check_option, 64, false, false };
static const struct list_arg endpoints_list = {
	"etcd client URLs like https://10.0.0.4:2379", "a URL like https://10.0.0.4:2379",
	name_check_endpoint, 32, true, true };
static const struct list_arg conf_servers_list = {
	"slurmctld hosts like head1 or 10.0.0.4:6817", "a host like head1", name_check_host_port, 8, true, true };
static const struct list_arg features_list = {
	"Slurm feature names", "a feature name like hbv4", name_check_feature, 64, false, true };
static const struct int_arg margin_int = { 0, 50, 4 };
static const struct dur_arg leave_wait_dur = { 0, 24 * HOUR_MS };
static const struct dur_arg register_window_dur = { 0, HOUR_MS };
static const struct list_arg ssh_users_list = {
	"user names", "a user name", name_check_user, 1024, false, true };

static const struct field cluster_fields[] = {
	{ "name", &T_CLUSTER_NAME, offsetof(struct spec_cluster, name), NULL, F_REQUIRED, M_NONE,
	  "add name: followed by lower-case letters, digits or '-'" },
	{ "role", &T_ENUM, offsetof(struct spec_cluster, role), role_vals, 0, M_ROLE, NULL },
	{ "network", &T_CIDR, offsetof(struct spec_cluster, network), &network_cidr, 0, M_NETWORK, NULL },
	{ "secret_file", &T_PATH, offsetof(struct spec_cluster, secret_file), NULL, 0, M_SECRET, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field memlock_fields[] = {
	{ "limit", &T_SIZE, offsetof(struct spec_memlock, limit_bytes), &memlock_size, 0, M_NONE, NULL },
	{ "users", &T_STRLIST, offsetof(struct spec_memlock, users), &pam_users_list, 0, M_NONE, NULL },
	{ "systemd", &T_BOOL, offsetof(struct spec_memlock, systemd), NULL, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field kernel_fields[] = {
	{ "hold", &T_BOOL, offsetof(struct spec_kernel, hold), NULL, 0, M_NONE, NULL },
	{ "expect", &T_GLOB, offsetof(struct spec_kernel, expect), NULL, 0, M_NONE, NULL },
	{ "modules", &T_STRLIST, offsetof(struct spec_kernel, modules), &modules_list, 0, M_NONE, NULL },
	{ "updates", &T_ENUM, offsetof(struct spec_kernel, updates), kupd_vals, 0, M_KERNEL_UPDATES, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field rdma_fields[] = {
	{ "required", &T_BOOL, offsetof(struct spec_rdma, required), NULL, 0, M_NONE, NULL },
	{ "devices", &T_GLOB, offsetof(struct spec_rdma, devices), NULL, 0, M_NONE, NULL },
	{ "link_layer", &T_ENUM, offsetof(struct spec_rdma, link_layer), link_vals, 0, M_NONE, NULL },
	{ "min_rate_gbps", &T_INT, offsetof(struct spec_rdma, min_rate_gbps), &rate_int, 0, M_NONE, NULL },
	{ "ipoib", &T_IFNAME, offsetof(struct spec_rdma, ipoib), NULL, 0, M_RDMA_IPOIB, NULL },
	{ "open_timeout", &T_DURATION, offsetof(struct spec_rdma, open_timeout_ms), &open_timeout_dur,
	  0, M_NONE, NULL },
	{ "reg_mr", &T_SIZE, offsetof(struct spec_rdma, reg_mr_bytes), &reg_mr_size, 0, M_NONE, NULL },
	{ "software", &T_ENUM, offsetof(struct spec_rdma, software), soft_vals, 0, M_NONE, NULL },
	{ "placement_group", &T_BOOL, offsetof(struct spec_rdma, placement_group), NULL, 0, M_NONE, NULL },
	{ "imds_url", &T_URL, offsetof(struct spec_rdma, imds_url), NULL, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field gpu_fields[] = {
	{ "count", &T_INT, offsetof(struct spec_gpu, count), &gpu_count_int, 0, M_NONE, NULL },
	{ "peermem", &T_ENUM, offsetof(struct spec_gpu, peermem), peermem_vals, 0, M_NONE, NULL },
	{ "imds_url", &T_URL, offsetof(struct spec_gpu, imds_url), NULL, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field mount_fields[] = {
	{ "source", &T_NFS_SOURCE, 0, NULL, F_REQUIRED, M_NONE, "add source: server:/export" },
	{ "path", &T_PATH, offsetof(struct spec_nfs_mount, path), &not_root_path, F_REQUIRED, M_NONE,
	  "add path: /mount/point" },
	{ "options", &T_STRLIST, offsetof(struct spec_nfs_mount, options), &options_list, 0, M_NONE, NULL },
	{ "wait", &T_DURATION, offsetof(struct spec_nfs_mount, wait_ms), &nfs_wait_dur, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field export_fields[] = {
	{ "path", &T_PATH, offsetof(struct spec_nfs_export, path), &not_root_path, F_REQUIRED, M_NONE,
	  "add path: /directory/to/export" },
	{ "clients", &T_CLIENTS, offsetof(struct spec_nfs_export, clients), NULL, 0, M_NONE, NULL },
	{ "options", &T_STRLIST, offsetof(struct spec_nfs_export, options), &export_options_list, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

void spec_nfs_mount_defaults(struct spec_nfs_mount *m)
{
	m->wait_ms = SPEC_NFS_WAIT_DEFAULT_MS;
}

static void mount_init(void *elem)
{
	spec_nfs_mount_defaults(elem);
}

static void export_init(void *elem)
{
	(void)elem;
}

static void set_elem_mark(struct spec_mark *m, yaml_node_t *e)
{
	m->line = (unsigned)e->start_mark.line + 1;
	m->col = (unsigned)e->start_mark.column + 1;
}

static void default_options(struct strlist *l, const char *const *opts)
{
	for (; *opts; opts++)
		strlist_push(l, *opts);
}

/* Report a path used by an earlier entry, at this entry's path value. */
static void unique_path(struct loader *L, yaml_node_t *e, const char *path, const char *what,
			const char *mine, const char *other, size_t other_i, const char *list)
{
	yaml_node_t *pv;

	if (!mine || !other || strcmp(mine, other))
		return;
	pv = map_get(L, e, "path");
	error_mark(L, pv ? pv->start_mark : e->start_mark, path,
		   "%s '%s' is already used by %s[%zu]; each %s needs its own path",
		   what, mine, list, other_i, what);
}

static void mount_finish(struct loader *L, void *elem, size_t i, yaml_node_t *e, uint32_t seen,
			 void *base, const char *path)
{
	static const char *const defaults[] = { "vers=3", "hard", "proto=tcp", NULL };
	struct spec_nfs_mount *m = elem;
	struct spec_nfs *nfs = base;

	set_elem_mark(&m->mark, e);
	/* absent: the defaults; [] means none (the module adds nothing of its own) */
	if (!(seen & (1u << 2)))
		default_options(&m->options, defaults);
	for (size_t j = 0; j < i; j++)
		if (m->path && nfs->mounts[j].path && !strcmp(m->path, nfs->mounts[j].path)) {
			unique_path(L, e, path, "mount point", m->path, nfs->mounts[j].path, j,
				    "nfs.mounts");
			break;
		}
}

static void export_finish(struct loader *L, void *elem, size_t i, yaml_node_t *e, uint32_t seen,
			  void *base, const char *path)
{
	static const char *const defaults[] = { "rw", "sync", "no_subtree_check", NULL };
	struct spec_nfs_export *x = elem;
	struct spec_nfs *nfs = base;

	set_elem_mark(&x->mark, e);
	if (!(seen & (1u << 2)))
		default_options(&x->options, defaults);
	for (size_t j = 0; j < i; j++)
		if (x->path && nfs->exports[j].path && !strcmp(x->path, nfs->exports[j].path)) {
			unique_path(L, e, path, "export", x->path, nfs->exports[j].path, j,
				    "nfs.exports");
			break;
		}
}

static const struct maplist_arg mounts_arg = {
	mount_fields, sizeof(struct spec_nfs_mount), 256, offsetof(struct spec_nfs, n_mounts),
	"a mapping with source: and path:", mount_init, mount_finish };
static const struct maplist_arg exports_arg = {
	export_fields, sizeof(struct spec_nfs_export), 256, offsetof(struct spec_nfs, n_exports),
	"a mapping with path: and clients:", export_init, export_finish };

static const struct field nfs_fields[] = {
	{ "mounts", &T_MAPLIST, offsetof(struct spec_nfs, mounts), &mounts_arg, 0, M_NONE, NULL },
	{ "exports", &T_MAPLIST, offsetof(struct spec_nfs, exports), &exports_arg, 0, M_NFS_EXPORTS, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field scan_fields[] = {
	{ "port", &T_INT, offsetof(struct spec_discovery, scan_port), &port_int, 0, M_NONE, NULL },
	{ "timeout", &T_DURATION, offsetof(struct spec_discovery, scan_timeout_ms), &scan_timeout_dur,
	  0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};
static const struct schema scan_schema = { scan_fields, -1, true };

static const struct field events_fields[] = {
	{ "enable", &T_BOOL, offsetof(struct spec_discovery, events_enable), NULL, 0, M_NONE, NULL },
	{ "url", &T_URL, offsetof(struct spec_discovery, events_url), NULL, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};
static const struct schema events_schema = { events_fields, -1, true };

static const struct field discovery_fields[] = {
	{ "method", &T_ENUM, offsetof(struct spec_discovery, method), method_vals, 0, M_DISC_METHOD, NULL },
	{ "dir", &T_PATH, offsetof(struct spec_discovery, dir), NULL, 0, M_DISC_DIR, NULL },
	{ "hosts", &T_HOSTS, offsetof(struct spec_discovery, hosts), &hosts_max, 0, M_DISC_HOSTS, NULL },
	{ "scan", &T_MAP, 0, &scan_schema, 0, M_NONE, NULL },
	{ "expect", &T_INT, offsetof(struct spec_discovery, expect), &expect_int, 0, M_NONE, NULL },
	{ "wait", &T_DURATION, offsetof(struct spec_discovery, wait_ms), &disc_wait_dur, 0, M_NONE, NULL },
	{ "lease", &T_DURATION, offsetof(struct spec_discovery, lease_ms), &lease_dur, 0, M_NONE, NULL },
	{ "endpoints", &T_STRLIST, offsetof(struct spec_discovery, endpoints), &endpoints_list, 0,
	  M_DISC_ENDPOINTS, NULL },
	{ "ca_file", &T_PATH, offsetof(struct spec_discovery, ca_file), NULL, 0, M_NONE, NULL },
	{ "cert_file", &T_PATH, offsetof(struct spec_discovery, cert_file), NULL, 0, M_DISC_CERT, NULL },
	{ "key_file", &T_PATH, offsetof(struct spec_discovery, key_file), NULL, 0, M_NONE, NULL },
	{ "auth_file", &T_PATH, offsetof(struct spec_discovery, auth_file), NULL, 0, M_DISC_AUTH, NULL },
	{ "on_unreachable", &T_ENUM, offsetof(struct spec_discovery, unreachable), unreachable_vals, 0,
	  M_DISC_UNREACH, NULL },
	{ "scheduled_events", &T_MAP, 0, &events_schema, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field ssh_fields[] = {
	{ "users", &T_STRLIST, offsetof(struct spec_ssh, users), &ssh_users_list, 0, M_NONE, NULL },
	{ "key_type", &T_ENUM, offsetof(struct spec_ssh, key_type), keytype_vals, 0, M_NONE, NULL },
	{ "host_keys", &T_ENUM, offsetof(struct spec_ssh, host_keys), hostkeys_vals, 0, M_SSH_HOSTKEYS,
	  NULL },
	{ "restrict_from", &T_BOOL, offsetof(struct spec_ssh, restrict_from), NULL, 0, M_SSH_RESTRICT,
	  NULL },
	{ "ca_key_file", &T_PATH, offsetof(struct spec_ssh, ca_key_file), NULL, 0, M_SSH_CA_KEY, NULL },
	{ "ca_public_key", &T_SSH_PUBKEY, offsetof(struct spec_ssh, ca_public_key), NULL, 0, M_SSH_CA_PUB,
	  NULL },
	{ "cert_validity", &T_DURATION, offsetof(struct spec_ssh, cert_validity_ms), &cert_validity_dur,
	  0, M_NONE, NULL },
	{ "hostbased", &T_BOOL, offsetof(struct spec_ssh, hostbased), NULL, 0, M_NONE, NULL },
	{ "users_wait", &T_DURATION, offsetof(struct spec_ssh, users_wait_ms), &users_wait_dur, 0, M_NONE,
	  NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field hostfile_fields[] = {
	{ "dir", &T_PATH, offsetof(struct spec_hostfile, dir), NULL, 0, M_NONE, NULL },
	{ "formats", &T_FLAGS, offsetof(struct spec_hostfile, formats), &formats_flags, 0, M_NONE, NULL },
	{ "address", &T_ENUM, offsetof(struct spec_hostfile, address), address_vals, 0, M_HF_ADDRESS,
	  NULL },
	{ "openmpi_default", &T_BOOL, offsetof(struct spec_hostfile, openmpi_default), NULL, 0, M_NONE,
	  NULL },
	{ "etc_hosts", &T_ENUM, offsetof(struct spec_hostfile, etc_hosts), etc_hosts_vals, 0, M_NONE,
	  NULL },
	{ "exclude", &T_ENUM, offsetof(struct spec_hostfile, exclude), exclude_vals, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field verify_fields[] = {
	{ "enable", &T_BOOL, offsetof(struct spec_mpi, verify_enable), NULL, 0, M_NONE, NULL },
	{ "max_latency_us", &T_FLOAT, offsetof(struct spec_mpi, max_latency_us), &latency_float, 0,
	  M_NONE, NULL },
	{ "min_bandwidth", &T_SIZE, offsetof(struct spec_mpi, min_bandwidth), &bandwidth_size, 0,
	  M_NONE, NULL },
	{ "launcher", &T_ENUM, offsetof(struct spec_mpi, launcher), launcher_vals, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};
static const struct schema verify_schema = { verify_fields, -1, true };

static const struct field mpi_fields[] = {
	{ "profile", &T_BOOL, offsetof(struct spec_mpi, profile), NULL, 0, M_NONE, NULL },
	{ "verify", &T_MAP, 0, &verify_schema, 0, M_NONE, NULL },
	{ "slots", &T_INT, offsetof(struct spec_mpi, slots), &slots_int, 0, M_NONE, NULL },
	{ "slots_per_gpu", &T_BOOL, offsetof(struct spec_mpi, slots_per_gpu), NULL, 0, M_NONE, NULL },
	{ "software_fabric", &T_BOOL, offsetof(struct spec_mpi, software_fabric), NULL, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field slurm_fields[] = {
	{ "conf_servers", &T_STRLIST, offsetof(struct spec_slurm, conf_servers), &conf_servers_list, 0,
	  M_SLURM_SERVERS, NULL },
	{ "features", &T_STRLIST, offsetof(struct spec_slurm, features), &features_list, 0, M_NONE, NULL },
	{ "memory_margin_percent", &T_INT, offsetof(struct spec_slurm, memory_margin_pct), &margin_int, 0,
	  M_NONE, NULL },
	{ "auth", &T_ENUM, offsetof(struct spec_slurm, auth), slurm_auth_vals, 0, M_NONE, NULL },
	{ "key_file", &T_PATH, offsetof(struct spec_slurm, key_file), NULL, 0, M_SLURM_KEY, NULL },
	{ "leave_wait", &T_DURATION, offsetof(struct spec_slurm, leave_wait_ms), &leave_wait_dur, 0,
	  M_NONE, NULL },
	{ "register_window", &T_DURATION, offsetof(struct spec_slurm, register_window_ms), &register_window_dur,
	  0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

#define SECTION(name, st) \
	static const struct schema name##_schema = { name##_fields, (long)offsetof(st, present), false }
static const struct schema cluster_schema = { cluster_fields, -1, false };
SECTION(memlock, struct spec_memlock);
SECTION(kernel, struct spec_kernel);
SECTION(rdma, struct spec_rdma);
SECTION(gpu, struct spec_gpu);
SECTION(nfs, struct spec_nfs);
SECTION(discovery, struct spec_discovery);
SECTION(ssh, struct spec_ssh);
SECTION(hostfile, struct spec_hostfile);
SECTION(mpi, struct spec_mpi);
SECTION(slurm, struct spec_slurm);

const struct field spec_root_fields[] = {
	{ "version", &T_VERSION, offsetof(struct spec, version), &version_int, F_REQUIRED, M_NONE,
	  "add version: 1 as the first line" },
	{ "cluster", &T_MAP, offsetof(struct spec, cluster), &cluster_schema, F_REQUIRED, M_NONE,
	  "add cluster: {name: mycluster}" },
	{ "memlock", &T_MAP, offsetof(struct spec, memlock), &memlock_schema, 0, M_NONE, NULL },
	{ "kernel", &T_MAP, offsetof(struct spec, kernel), &kernel_schema, 0, M_NONE, NULL },
	{ "rdma", &T_MAP, offsetof(struct spec, rdma), &rdma_schema, 0, M_NONE, NULL },
	{ "gpu", &T_MAP, offsetof(struct spec, gpu), &gpu_schema, 0, M_NONE, NULL },
	{ "nfs", &T_MAP, offsetof(struct spec, nfs), &nfs_schema, 0, M_NONE, NULL },
	{ "discovery", &T_MAP, offsetof(struct spec, discovery), &discovery_schema, 0, M_DISC, NULL },
	{ "ssh", &T_MAP, offsetof(struct spec, ssh), &ssh_schema, 0, M_SSH, NULL },
	{ "hostfile", &T_MAP, offsetof(struct spec, hostfile), &hostfile_schema, 0, M_NONE, NULL },
	{ "mpi", &T_MAP, offsetof(struct spec, mpi), &mpi_schema, 0, M_NONE, NULL },
	{ "slurm", &T_MAP, offsetof(struct spec, slurm), &slurm_schema, 0, M_SLURM, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};
