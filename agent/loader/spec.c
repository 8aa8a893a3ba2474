/* SPDX-License-Identifier: MIT */
/*
 * The version-1 spec loader.
 *
 * The YAML goes through three passes: a byte scan (size, UTF-8, control
 * characters, tabs in indentation), libyaml's event parser (syntax errors,
 * aliases, a second document, nesting depth), and libyaml's document API,
 * whose tree is walked against one schema table per section.  Every problem
 * becomes a diag with the 1-based line and column of the node it is about;
 * the walk never stops at the first error.  Only syntax errors end a pass
 * early, because libyaml cannot go on after one.
 *
 * This file holds what the spec means: the tables, every default and the
 * checks between keys.  The family around it: diag.c (messages, places,
 * the byte and syntax passes), schema.c (the walker and typed handlers),
 * units.c (sizes, durations), names.c (names and paths), cidr.c,
 * nodeset.c and strlist.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "names.h"
#include "schema.h"
#include "spec.h"
#include "strbuf.h"
#include "units.h"

#define SPEC_NFS_WAIT_DEFAULT_MS (5 * MIN_MS)   /* nfs.mounts[].wait when absent */

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
	M_COUNT
};
_Static_assert(M_COUNT <= SCHEMA_SLOTS, "the loader keeps SCHEMA_SLOTS marks");

/* ---------------------------------------------------------------- enums */

static const struct enum_val role_vals[] = {
	{ "compute", ROLE_COMPUTE }, { "head", ROLE_HEAD }, { NULL, 0 } };
static const struct enum_val link_vals[] = {
	{ "infiniband", LINK_INFINIBAND }, { "ethernet", LINK_ETHERNET }, { "any", LINK_ANY },
	{ NULL, 0 } };
static const struct enum_val soft_vals[] = {
	{ "auto", SOFT_AUTO }, { "allow", SOFT_ALLOW }, { "deny", SOFT_DENY }, { NULL, 0 } };
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
static const struct enum_val format_vals[] = {
	{ "openmpi", HF_OPENMPI }, { "mpich", HF_MPICH }, { "plain", HF_PLAIN },
	{ "clush", HF_CLUSH }, { NULL, 0 } };

_Static_assert(sizeof(enum role) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum link_layer) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum soft_rdma) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum disc_method) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum mpi_launcher) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum key_type) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum host_keys) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum hf_address) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum slurm_auth) == sizeof(int), "enums are stored as int");

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
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

#define SECTION(name, st) \
	static const struct schema name##_schema = { name##_fields, (long)offsetof(st, present), false }
static const struct schema cluster_schema = { cluster_fields, -1, false };
SECTION(memlock, struct spec_memlock);
SECTION(kernel, struct spec_kernel);
SECTION(rdma, struct spec_rdma);
SECTION(nfs, struct spec_nfs);
SECTION(discovery, struct spec_discovery);
SECTION(ssh, struct spec_ssh);
SECTION(hostfile, struct spec_hostfile);
SECTION(mpi, struct spec_mpi);
SECTION(slurm, struct spec_slurm);

static const struct field root_fields[] = {
	{ "version", &T_VERSION, offsetof(struct spec, version), &version_int, F_REQUIRED, M_NONE,
	  "add version: 1 as the first line" },
	{ "cluster", &T_MAP, offsetof(struct spec, cluster), &cluster_schema, F_REQUIRED, M_NONE,
	  "add cluster: {name: mycluster}" },
	{ "memlock", &T_MAP, offsetof(struct spec, memlock), &memlock_schema, 0, M_NONE, NULL },
	{ "kernel", &T_MAP, offsetof(struct spec, kernel), &kernel_schema, 0, M_NONE, NULL },
	{ "rdma", &T_MAP, offsetof(struct spec, rdma), &rdma_schema, 0, M_NONE, NULL },
	{ "nfs", &T_MAP, offsetof(struct spec, nfs), &nfs_schema, 0, M_NONE, NULL },
	{ "discovery", &T_MAP, offsetof(struct spec, discovery), &discovery_schema, 0, M_DISC, NULL },
	{ "ssh", &T_MAP, offsetof(struct spec, ssh), &ssh_schema, 0, M_SSH, NULL },
	{ "hostfile", &T_MAP, offsetof(struct spec, hostfile), &hostfile_schema, 0, M_NONE, NULL },
	{ "mpi", &T_MAP, offsetof(struct spec, mpi), &mpi_schema, 0, M_NONE, NULL },
	{ "slurm", &T_MAP, offsetof(struct spec, slurm), &slurm_schema, 0, M_SLURM, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};


/* Defaults from spec.h, set before the walk; lists and strings get theirs after it. */
static void spec_defaults(struct spec *s)
{
	s->cluster.role = ROLE_COMPUTE;
	s->memlock.unlimited = true;
	s->memlock.systemd = true;
	s->kernel.hold = true;
	s->rdma.required = true;
	s->rdma.link_layer = LINK_INFINIBAND;
	s->rdma.open_timeout_ms = 10 * SEC_MS;
	s->rdma.reg_mr_bytes = 64 * MIB;
	s->rdma.placement_group = true;
	s->discovery.method = DISC_SHARED;
	s->discovery.scan_port = 22;
	s->discovery.scan_timeout_ms = 500;
	s->discovery.expect = 1;
	s->discovery.wait_ms = 10 * MIN_MS;
	s->discovery.lease_ms = 5 * MIN_MS;
	s->ssh.key_type = KEY_ED25519;
	s->ssh.host_keys = HOSTKEYS_PINNED;
	s->ssh.restrict_from = true;
	s->ssh.cert_validity_ms = 24 * HOUR_MS;  /* docs/ssh.md "How long a certificate lives" */
	s->hostfile.address = HF_ADDR_HOSTNAME;
	s->hostfile.openmpi_default = true;
	s->hostfile.etc_hosts = HF_HOSTS_AUTO;
	s->hostfile.exclude = HF_EXCLUDE_FAILED;
	s->mpi.profile = true;
	s->mpi.verify_enable = false;
	s->mpi.max_latency_us = 0;
	s->mpi.launcher = MPI_OPENMPI;
	s->slurm.memory_margin_pct = 3;
	s->slurm.leave_wait_ms = 60 * SEC_MS;
}

static void spec_late_defaults(struct spec *s)
{
	if (s->memlock.users.n == 0)
		strlist_push(&s->memlock.users, "*");
	if (!s->rdma.devices)
		s->rdma.devices = xstrdup("*");
	if (!s->rdma.imds_url)
		s->rdma.imds_url = xstrdup(SPEC_IMDS_PG_URL);        /* what a device is comes from sysfs (ibsysfs.c) */
	if (!s->hostfile.dir)
		s->hostfile.dir = xstrdup("/etc/hpcinit");
	if (!s->discovery.events_url)
		s->discovery.events_url = xstrdup(SPEC_EVENTS_URL);
	if (!s->hostfile.formats)
		s->hostfile.formats = HF_OPENMPI | HF_MPICH | HF_PLAIN | HF_CLUSH;
}

/* Where a cross-field error points: the key's value when set, else the section key. */
static yaml_mark_t slot_mark(const struct loader *L, enum mark_slot want, enum mark_slot fallback)
{
	if (L->slots[want].set)
		return L->slots[want].val;
	if (L->slots[fallback].set)
		return L->slots[fallback].key;
	return L->doc.start_mark;
}

/* Checks between keys, after the walk.  A key that failed to parse is not used. */
static void cross_checks(struct loader *L, struct spec *s)
{
	const struct slot *net = &L->slots[M_NETWORK];
	/* A network that is written but bad was reported already: don't also call it missing. */
	bool network = s->cluster.has_network || net->set;

	for (size_t i = 0; i < s->nfs.n_exports; i++) {
		struct spec_nfs_export *x = &s->nfs.exports[i];

		if (x->clients)
			continue;
		if (s->cluster.has_network) {
			x->clients = xstrdup(s->cluster.network.text);
		} else if (!network) {
			char *p = xasprintf("nfs.exports[%zu]", i);

			error_at(L, x->mark.line, x->mark.col, p,
				 "clients is not set and there is no cluster.network to default to; "
				 "add clients: (like 10.0.0.0/24) or set cluster.network");
			free(p);
		}
	}
	if (s->nfs.n_exports && s->cluster.role != ROLE_HEAD && !L->slots[M_ROLE].bad)
		error_mark(L, L->slots[M_NFS_EXPORTS].key, "nfs.exports",
			   "only the head node exports; set cluster.role: head, or move exports to the head node's spec");

	if (s->discovery.present && !L->slots[M_DISC_METHOD].bad) {
		yaml_mark_t m = slot_mark(L, M_DISC_METHOD, M_DISC);

		switch (s->discovery.method) {
		case DISC_SHARED:
			if (!s->discovery.dir && !L->slots[M_DISC_DIR].set)
				error_mark(L, m, "discovery.method",
					   "shared needs discovery.dir (a directory on the shared filesystem); add dir:");
			break;
		case DISC_STATIC:
			if (!s->discovery.hosts.n && !L->slots[M_DISC_HOSTS].bad)
				error_mark(L, m, "discovery.method",
					   "static needs discovery.hosts; add hosts: like [\"node[01-04]\"]");
			break;
		case DISC_SCAN:
			if (!network)
				error_mark(L, m, "discovery.method",
					   "scan needs cluster.network (the range to scan); set cluster.network");
			break;
		case DISC_ETCD:
			if (!s->discovery.endpoints.n && !L->slots[M_DISC_ENDPOINTS].set)
				error_mark(L, m, "discovery.method",
					   "etcd needs discovery.endpoints; add endpoints: like [\"https://10.0.0.4:2379\"]");
			break;
		}
		if (s->discovery.method != DISC_ETCD &&
		    (s->discovery.endpoints.n || s->discovery.ca_file || s->discovery.cert_file ||
		     s->discovery.key_file || s->discovery.auth_file))
			error_mark(L, m, "discovery.method",
				   "endpoints, ca_file, cert_file, key_file and auth_file are for method etcd; "
				   "set method: etcd or remove them");
		if (s->discovery.method != DISC_ETCD && L->slots[M_DISC_UNREACH].set)
			error_mark(L, slot_mark(L, M_DISC_UNREACH, M_DISC), "discovery.on_unreachable",
				   "on_unreachable is for method etcd (the other methods have no store to "
				   "reach); set method: etcd or remove it");
		if (!s->discovery.cert_file != !s->discovery.key_file)
			error_mark(L, slot_mark(L, M_DISC_CERT, M_DISC), "discovery.cert_file",
				   "cert_file and key_file go together (the client certificate and its key); "
				   "set both or neither");
		/* etcd's authenticate sends the password itself: never over plain HTTP. */
		for (size_t i = 0; s->discovery.auth_file && i < s->discovery.endpoints.n; i++)
			if (strncmp(s->discovery.endpoints.v[i], "https://", 8) != 0) {
				error_mark(L, slot_mark(L, M_DISC_AUTH, M_DISC), "discovery.auth_file",
					   "auth_file sends its password to every endpoint, and %s is not "
					   "https://: it would cross the network in clear text; use https:// "
					   "endpoints (with ca_file) or client certificates (cert_file, key_file)",
					   s->discovery.endpoints.v[i]);
				break;
			}
	}
	if (s->ssh.present && s->ssh.restrict_from && !network && !L->slots[M_SSH_RESTRICT].bad)
		error_mark(L, slot_mark(L, M_SSH_RESTRICT, M_SSH), "ssh.restrict_from",
			   "true needs cluster.network; set cluster.network or restrict_from: false");
	if (s->ssh.present && s->ssh.host_keys == HOSTKEYS_CA && !s->ssh.ca_public_key &&
	    !L->slots[M_SSH_HOSTKEYS].bad && !L->slots[M_SSH_CA_PUB].bad)
		error_mark(L, slot_mark(L, M_SSH_HOSTKEYS, M_SSH), "ssh.host_keys",
			   "ca needs ssh.ca_public_key (the CA every node trusts); add ca_public_key: \"ssh-ed25519 AAAA...\"");
	if (s->ssh.present && s->ssh.host_keys != HOSTKEYS_CA && (s->ssh.ca_key_file || s->ssh.ca_public_key) &&
	    !L->slots[M_SSH_HOSTKEYS].bad)
		error_mark(L, slot_mark(L, M_SSH_HOSTKEYS, M_SSH), "ssh.host_keys",
			   "ca_key_file and ca_public_key are for host_keys: ca; set host_keys: ca or remove them");
	if (s->ssh.ca_key_file && s->cluster.role != ROLE_HEAD && !L->slots[M_ROLE].bad)
		error_mark(L, L->slots[M_SSH_CA_KEY].key, "ssh.ca_key_file",
			   "only the head node holds the CA private key; set cluster.role: head, or remove "
			   "ca_key_file from this node's spec (compute nodes need only ca_public_key)");
	if (s->hostfile.present && s->hostfile.address == HF_ADDR_IPOIB && !s->rdma.ipoib &&
	    !L->slots[M_RDMA_IPOIB].bad)
		error_mark(L, L->slots[M_HF_ADDRESS].val, "hostfile.address",
			   "ipoib needs rdma.ipoib (the IPoIB interface); set rdma.ipoib: ib0 or use address: hostname");
	if (s->slurm.present && s->cluster.role == ROLE_COMPUTE && !s->slurm.conf_servers.n &&
	    !L->slots[M_SLURM_SERVERS].set && !L->slots[M_ROLE].bad)
		error_mark(L, L->slots[M_SLURM].key, "slurm",
			   "a compute node needs slurm.conf_servers (the slurmctld it registers with); "
			   "add conf_servers: [head1]");
}

/* ---------------------------------------------------------------- before libyaml */



struct spec *spec_free(struct spec *s)
{
	if (!s)
		return NULL;
	free(s->file);
	free(s->cluster.name);
	free(s->cluster.secret_file);
	strlist_free(&s->memlock.users);
	free(s->kernel.expect);
	strlist_free(&s->kernel.modules);
	free(s->rdma.devices);
	free(s->rdma.ipoib);
	free(s->rdma.imds_url);
	for (size_t i = 0; i < s->nfs.n_mounts; i++) {
		struct spec_nfs_mount *m = &s->nfs.mounts[i];

		free(m->source);
		free(m->host);
		free(m->export);
		free(m->path);
		strlist_free(&m->options);
	}
	free(s->nfs.mounts);
	for (size_t i = 0; i < s->nfs.n_exports; i++) {
		free(s->nfs.exports[i].path);
		free(s->nfs.exports[i].clients);
		strlist_free(&s->nfs.exports[i].options);
	}
	free(s->nfs.exports);
	free(s->discovery.dir);
	strlist_free(&s->discovery.hosts);
	strlist_free(&s->discovery.endpoints);
	free(s->discovery.ca_file);
	free(s->discovery.cert_file);
	free(s->discovery.key_file);
	free(s->discovery.auth_file);
	free(s->discovery.events_url);
	strlist_free(&s->ssh.users);
	strlist_free(&s->slurm.conf_servers);
	strlist_free(&s->slurm.features);
	free(s->slurm.key_file);
	free(s->ssh.ca_key_file);
	free(s->ssh.ca_public_key);
	free(s->hostfile.dir);
	free(s);
	return NULL;
}

/* The placeholder of the example custom-data that the file at root+path (regular, not a link) holds, or NULL. */
static const char *placeholder(const char *root, const char *path)
{
	static const char *const known[] = { SPEC_PLACEHOLDER, "REPLACE ME" /* slurm examples before 33 */ };
	char *p = xasprintf("%s%s", root, path), buf[4096];
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	const char *r = NULL;
	struct stat st;
	ssize_t n = -1;

	free(p);
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
		n = read(fd, buf, sizeof(buf));
	close(fd);
	for (size_t i = 0; i < 2 && n > 0 && !r; i++)
		r = memmem(buf, (size_t)n, known[i], strlen(known[i])) ? known[i] : NULL;
	explicit_bzero(buf, sizeof(buf));
	return r;
}

/*
 * A secret file the spec names that still holds the placeholder of the
 * example custom-data is a spec error, at the key that names it: a node
 * that made a secret of its own would be rejected by every peer.  Read under
 * root; a file not there (a workstation) or unreadable is the step's to say.
 */
static void placeholder_checks(struct loader *L, const struct spec *s, const char *root)
{
	static const char once[] = "ONCE, on your workstation (%s), and put the same value in every node's custom-data";
	const struct {
		const char *key, *path, *how;
		enum mark_slot slot;
	} f[] = {
		{ "cluster.secret_file", s->cluster.secret_file, "openssl rand -hex 32", M_SECRET },
		{ "slurm.key_file", s->slurm.key_file, "dd if=/dev/urandom bs=128 count=1 | base64 -w0; "
		  "custom-data encoding: b64", M_SLURM_KEY },
		{ "discovery.auth_file", s->discovery.auth_file, NULL, M_DISC_AUTH },
		{ "discovery.key_file", s->discovery.key_file, NULL, M_DISC },
		{ "ssh.ca_key_file", s->ssh.ca_key_file, NULL, M_SSH_CA_KEY },
	};

	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		const char *ph = f[i].path ? placeholder(root, f[i].path) : NULL;
		char *how = f[i].how ? xasprintf(once, f[i].how) : NULL;

		if (ph)
			error_mark(L, L->slots[f[i].slot].key, f[i].key, "%s%s still holds the placeholder '%s' of "
				   "the example custom-data: generate the %s %s; a value made on one node alone is "
				   "rejected by every peer", root, f[i].path, ph, how ? "secret" : "file's content",
				   how ? how : "once and put it in the custom-data");
		free(how);
	}
}

static int load(struct loader *L, struct spec *s, const char *root)
{
	int r = schema_load(L, root_fields, s, "a mapping with version: 1 and cluster:");

	if (r < 0)
		return r;
	cross_checks(L, s);
	if (root)
		placeholder_checks(L, s, root);
	spec_late_defaults(s);
	return L->src.n_errors ? -EINVAL : 0;
}

int spec_load_buffer(const char *name, const char *buf, size_t len,
		     struct spec **ret_spec, struct diags *diags)
{
	return spec_load_buffer_root(name, buf, len, NULL, ret_spec, diags);
}

int spec_load_buffer_root(const char *name, const char *buf, size_t len, const char *root,
			  struct spec **ret_spec, struct diags *diags)
{
	struct loader L;
	struct spec *s;
	int r;

	memset(&L, 0, sizeof(L));
	source_open(&L.src, name ? name : "<spec>", buf ? buf : "", buf ? len : 0, diags);
	if (L.src.len > SPEC_MAX_BYTES) {
		error_at(&L, 0, 0, NULL, "spec is larger than the limit of %d bytes (1 MiB); "
			 "is this the right file?", SPEC_MAX_BYTES);
		return -EFBIG;
	}
	source_index(&L.src);
	s = xcalloc(1, sizeof(*s));
	s->file = xstrdup(L.src.name);
	spec_defaults(s);

	r = load(&L, s, root);

	schema_unload(&L);
	source_close(&L.src);
	if (r < 0) {
		spec_free(s);
		return r;
	}
	*ret_spec = s;
	return 0;
}

int spec_load_file(const char *path, struct spec **ret_spec, struct diags *diags)
{
	return spec_load_file_root(path, NULL, ret_spec, diags);
}

int spec_load_file_root(const char *path, const char *root, struct spec **ret_spec, struct diags *diags)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	char chunk[65536];
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		diag_push(diags, path, 0, 0, xasprintf("cannot open the spec: %s", strerror(-r)), NULL);
		return r;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		diag_push(diags, path, 0, 0, xstrdup("is a directory; give the spec file"), NULL);
		return -EISDIR;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			close(fd);
			sb_free(&sb);
			diag_push(diags, path, 0, 0, xasprintf("cannot read the spec: %s", strerror(-r)),
				  NULL);
			return r;
		}
		if (n == 0)
			break;
		sb_appendn(&sb, chunk, (size_t)n);
		/* Stop reading early: the size error does not need the rest. */
		if (sb.len > SPEC_MAX_BYTES)
			break;
	}
	close(fd);
	r = spec_load_buffer_root(path, sb.buf, sb.len, root, ret_spec, diags);
	sb_free(&sb);
	return r;
}
