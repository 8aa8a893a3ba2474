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
 * This file holds what the spec means: every default and the checks
 * between keys; spec_tables.c holds the tables.  The family around it: diag.c (messages, places,
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
#include "spec_tables.h"
#include "strbuf.h"
#include "units.h"

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
	s->ssh.users_wait_ms = 2 * MIN_MS;       /* docs/ssh.md "Directory users": SSSD's first minute */
	s->hostfile.address = HF_ADDR_HOSTNAME;
	s->hostfile.openmpi_default = true;
	s->hostfile.etc_hosts = HF_HOSTS_AUTO;
	s->hostfile.exclude = HF_EXCLUDE_FAILED;
	s->gpu.peermem = GPU_PEERMEM_OPTIONAL;
	s->mpi.profile = true;
	s->mpi.verify_enable = false;
	s->mpi.max_latency_us = 0;
	s->mpi.launcher = MPI_OPENMPI;
	s->slurm.memory_margin_pct = 3;
	s->slurm.leave_wait_ms = 60 * SEC_MS;
	s->slurm.register_window_ms = UINT64_MAX;       /* unset: modules/slurm scales it to the cluster */
}

static void spec_late_defaults(struct spec *s)
{
	if (s->memlock.users.n == 0)
		strlist_push(&s->memlock.users, "*");
	if (!s->rdma.devices)
		s->rdma.devices = xstrdup("*");
	if (!s->rdma.imds_url)
		s->rdma.imds_url = xstrdup(SPEC_IMDS_PG_URL);        /* what a device is comes from sysfs (ibsysfs.c) */
	if (!s->gpu.imds_url)
		s->gpu.imds_url = xstrdup(SPEC_IMDS_VMSIZE_URL);    /* only asked when gpu.count is 0 and no fact file */
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

	if (s->kernel.updates == KUPD_WHEN_MODULES && !s->kernel.hold)
		error_mark(L, L->slots[M_KERNEL_UPDATES].val, "kernel.updates",
			   "when_modules gates the hold, and kernel.hold is false; set kernel.hold: true or "
			   "remove updates:");
	else if (s->kernel.updates == KUPD_WHEN_MODULES && s->kernel.modules.n == 0)
		error_mark(L, L->slots[M_KERNEL_UPDATES].val, "kernel.updates",
			   "when_modules lets a newer kernel in when every kernel.modules exists for it, "
			   "and kernel.modules is empty; list the modules (like [mlx5_ib, lustre])");
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
	free(s->gpu.imds_url);
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
	int r = schema_load(L, spec_root_fields, s, "a mapping with version: 1 and cluster:");

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
