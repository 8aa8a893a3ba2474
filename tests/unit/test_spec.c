/* SPDX-License-Identifier: MIT */
/*
 * The spec (common/loader/spec.c): the sections' defaults, a full spec, the
 * nfs, etcd and ssh CA sections, the checks between keys.  The typed
 * handlers are test_handlers.c, the loader's messages test_spec_errors.c.
 */
#include "testspec.h"

static char fixture_dir[4096];

/* The fixtures: under $TOP_SRCDIR when set, else where the build says. */
static void fixture_dir_init(void)
{
	const char *top = getenv("TOP_SRCDIR");

	if (top && *top)
		snprintf(fixture_dir, sizeof(fixture_dir), "%s/tests/fixtures", top);
	else
		snprintf(fixture_dir, sizeof(fixture_dir), "%s", FIXTURE_DIR);
}

static void test_defaults(void)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	const char *text = "version: 1\ncluster:\n  name: tiny\n";
	int r = load_text(text, &s, &d);

	TEST_INTEQ(r, 0);
	TEST_INTEQ(d.n, 0);
	if (!s)
		return;
	TEST_STREQ(s->file, "t.yaml");
	TEST_INTEQ(s->version, 1);
	TEST_STREQ(s->cluster.name, "tiny");
	TEST_INTEQ(s->cluster.role, ROLE_COMPUTE);
	TEST_CHECK(!s->cluster.has_network);
	TEST_CHECK(s->cluster.secret_file == NULL);
	TEST_CHECK(!s->memlock.present);
	TEST_CHECK(s->memlock.unlimited);
	TEST_INTEQ(s->memlock.users.n, 1);
	TEST_STREQ(s->memlock.users.v[0], "*");
	TEST_CHECK(s->memlock.systemd);
	TEST_CHECK(!s->kernel.present);
	TEST_CHECK(s->kernel.hold);
	TEST_CHECK(s->kernel.expect == NULL);
	TEST_INTEQ(s->kernel.modules.n, 0);
	TEST_CHECK(!s->rdma.present);
	TEST_CHECK(s->rdma.required);
	TEST_STREQ(s->rdma.devices, "*");     /* sysfs decides what a device is */
	TEST_INTEQ(s->rdma.link_layer, LINK_INFINIBAND);
	TEST_INTEQ(s->rdma.min_rate_gbps, 0);
	TEST_CHECK(s->rdma.ipoib == NULL);
	TEST_INTEQ(s->rdma.open_timeout_ms, 10000);
	TEST_INTEQ(s->rdma.reg_mr_bytes, 64 << 20);
	TEST_CHECK(!s->nfs.present);
	TEST_INTEQ(s->nfs.n_mounts, 0);
	TEST_INTEQ(s->nfs.n_exports, 0);
	TEST_CHECK(!s->discovery.present);
	TEST_INTEQ(s->discovery.method, DISC_SHARED);
	TEST_CHECK(s->discovery.dir == NULL);
	TEST_INTEQ(s->discovery.hosts.n, 0);
	TEST_INTEQ(s->discovery.scan_port, 22);
	TEST_INTEQ(s->discovery.scan_timeout_ms, 500);
	TEST_INTEQ(s->discovery.expect, 1);
	TEST_INTEQ(s->discovery.wait_ms, 600000);
	TEST_INTEQ(s->discovery.lease_ms, 300000);
	TEST_CHECK(!s->ssh.present);
	TEST_INTEQ(s->ssh.users.n, 0);
	TEST_INTEQ(s->ssh.key_type, KEY_ED25519);
	TEST_INTEQ(s->ssh.host_keys, HOSTKEYS_PINNED);
	TEST_CHECK(s->ssh.restrict_from);
	TEST_CHECK(!s->hostfile.present);
	TEST_STREQ(s->hostfile.dir, "/etc/hpcinit");
	TEST_INTEQ(s->hostfile.formats, HF_OPENMPI | HF_MPICH | HF_PLAIN | HF_CLUSH);
	TEST_INTEQ(s->hostfile.address, HF_ADDR_HOSTNAME);
	TEST_CHECK(s->hostfile.openmpi_default);
	TEST_CHECK(!s->mpi.present);
	TEST_CHECK(s->mpi.profile);
	TEST_CHECK(!s->mpi.verify_enable);
	TEST_CHECK(s->mpi.max_latency_us == 0);
	spec_free(s);

	/* Present sections: an empty mapping and a null value both count, with defaults. */
	s = load_ok("memlock: {}\nkernel:\nmpi: ~\nhostfile: {formats: [plain]}\n");
	if (s) {
		TEST_CHECK(s->memlock.present);
		TEST_CHECK(s->memlock.unlimited);
		TEST_INTEQ(s->memlock.users.n, 1);
		TEST_CHECK(s->kernel.present);
		TEST_CHECK(s->kernel.hold);
		TEST_CHECK(s->mpi.present);
		TEST_CHECK(s->mpi.profile);
		TEST_CHECK(s->hostfile.present);
		TEST_INTEQ(s->hostfile.formats, HF_PLAIN);
		TEST_CHECK(!s->rdma.present);
		TEST_CHECK(!s->ssh.present);
	}
	spec_free(s);
}

static char *read_fixture(const char *rel, size_t *len)
{
	char *path = xasprintf("%s/%s", fixture_dir, rel);
	FILE *f = fopen(path, "rb");
	struct strbuf sb = STRBUF_INIT;
	char chunk[4096];
	size_t n;

	TEST_CHECK(f != NULL);
	if (!f) {
		fprintf(stderr, "  cannot open %s\n", path);
		free(path);
		return NULL;
	}
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sb_appendn(&sb, chunk, n);
	fclose(f);
	free(path);
	*len = sb.len;
	return sb_steal(&sb);
}

static void test_full(void)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	size_t len = 0;
	char *text = read_fixture("good/full.yaml", &len);
	char *path = xasprintf("%s/good/full.yaml", fixture_dir);
	int r;

	if (!text) {
		free(path);
		return;
	}
	r = spec_load_buffer("full.yaml", text, len, &s, &d);
	TEST_INTEQ(r, 0);
	TEST_INTEQ(d.n, 0);
	diags_print(&d, stderr);
	free(text);
	if (s) {
		TEST_INTEQ(s->version, 1);
		TEST_STREQ(s->cluster.name, "glocluster");
		TEST_INTEQ(s->cluster.role, ROLE_HEAD);
		TEST_CHECK(s->cluster.has_network);
		TEST_STREQ(s->cluster.network.text, "10.0.0.0/24");
		TEST_STREQ(s->cluster.secret_file, "/etc/hpcinit/cluster.key");
		TEST_CHECK(s->memlock.present);
		TEST_CHECK(s->memlock.unlimited);
		TEST_INTEQ(s->memlock.users.n, 1);
		TEST_STREQ(s->memlock.users.v[0], "*");
		TEST_CHECK(s->memlock.systemd);
		TEST_CHECK(s->kernel.present);
		TEST_CHECK(s->kernel.hold);
		TEST_STREQ(s->kernel.expect, "5.15.0-*-azure");
		TEST_INTEQ(s->kernel.modules.n, 3);
		TEST_STREQ(s->kernel.modules.v[0], "mlx5_ib");
		TEST_STREQ(s->kernel.modules.v[2], "rdma_ucm");
		TEST_CHECK(s->rdma.present);
		TEST_CHECK(s->rdma.required);
		TEST_STREQ(s->rdma.devices, "mlx5_ib*");
		TEST_INTEQ(s->rdma.link_layer, LINK_INFINIBAND);
		TEST_INTEQ(s->rdma.min_rate_gbps, 100);
		TEST_STREQ(s->rdma.ipoib, "ib0");
		TEST_INTEQ(s->rdma.open_timeout_ms, 10000);
		TEST_INTEQ(s->rdma.reg_mr_bytes, 64 << 20);
		TEST_CHECK(s->nfs.present);
		TEST_INTEQ(s->nfs.n_mounts, 1);
		if (s->nfs.n_mounts == 1) {
			struct spec_nfs_mount *m = &s->nfs.mounts[0];

			TEST_STREQ(m->source, "10.0.0.7:/shared");
			TEST_STREQ(m->host, "10.0.0.7");
			TEST_STREQ(m->export, "/shared");
			TEST_STREQ(m->path, "/scratch");
			TEST_INTEQ(m->options.n, 7);
			TEST_STREQ(m->options.v[0], "vers=3");
			TEST_STREQ(m->options.v[6], "nconnect=8");
			TEST_INTEQ(m->wait_ms, 300000);
			TEST_INTEQ(m->mark.line, 27);
			TEST_INTEQ(m->mark.col, 7);
		}
		TEST_INTEQ(s->nfs.n_exports, 1);
		if (s->nfs.n_exports == 1) {
			struct spec_nfs_export *x = &s->nfs.exports[0];

			TEST_STREQ(x->path, "/shared");
			TEST_STREQ(x->clients, "10.0.0.0/24");
			TEST_INTEQ(x->options.n, 3);
			TEST_STREQ(x->options.v[1], "no_root_squash");
			TEST_INTEQ(x->mark.line, 32);
			TEST_INTEQ(x->mark.col, 7);
		}
		TEST_CHECK(s->discovery.present);
		TEST_INTEQ(s->discovery.method, DISC_SHARED);
		TEST_STREQ(s->discovery.dir, "/scratch/.hpcinit");
		TEST_INTEQ(s->discovery.hosts.n, 4);
		TEST_STREQ(s->discovery.hosts.v[0], "glocluster0");
		TEST_STREQ(s->discovery.hosts.v[3], "glocluster3");
		TEST_INTEQ(s->discovery.scan_port, 22);
		TEST_INTEQ(s->discovery.scan_timeout_ms, 500);
		TEST_INTEQ(s->discovery.expect, 4);
		TEST_INTEQ(s->discovery.wait_ms, 600000);
		TEST_INTEQ(s->discovery.lease_ms, 300000);
		TEST_CHECK(s->ssh.present);
		TEST_INTEQ(s->ssh.users.n, 1);
		TEST_STREQ(s->ssh.users.v[0], "azureuser");
		TEST_INTEQ(s->ssh.key_type, KEY_ED25519);
		TEST_INTEQ(s->ssh.host_keys, HOSTKEYS_PINNED);
		TEST_CHECK(s->ssh.restrict_from);
		TEST_CHECK(s->hostfile.present);
		TEST_STREQ(s->hostfile.dir, "/etc/hpcinit");
		TEST_INTEQ(s->hostfile.formats, HF_OPENMPI | HF_MPICH | HF_PLAIN | HF_CLUSH);
		TEST_INTEQ(s->hostfile.address, HF_ADDR_HOSTNAME);
		TEST_CHECK(s->hostfile.openmpi_default);
		TEST_CHECK(s->mpi.present);
		TEST_CHECK(s->mpi.profile);
		TEST_CHECK(s->mpi.verify_enable);
		TEST_CHECK(s->mpi.max_latency_us == 5.0);
	}
	spec_free(s);

	/* The same through spec_load_file: the name is the path. */
	s = NULL;
	r = spec_load_file(path, &s, &d);
	TEST_INTEQ(r, 0);
	TEST_INTEQ(d.n, 0);
	if (s)
		TEST_STREQ(s->file, path);
	spec_free(s);
	free(path);
}

static void test_nfs(void)
{
	struct spec *s = load_ok("nfs:\n"
		    "  mounts:\n"
		    "    - {source: \"[fd00::7]:/export/a/\", path: /mnt/a}\n"
		    "    - {source: \"nfs-1.cluster:/b\", path: /mnt/b, options: [], wait: 10s}\n");
	if (s && s->nfs.n_mounts == 2) {
		TEST_STREQ(s->nfs.mounts[0].host, "fd00::7");
		TEST_STREQ(s->nfs.mounts[0].export, "/export/a");
		TEST_STREQ(s->nfs.mounts[0].source, "[fd00::7]:/export/a/");
		TEST_INTEQ(s->nfs.mounts[0].options.n, 3);
		TEST_STREQ(s->nfs.mounts[0].options.v[0], "vers=3");
		TEST_STREQ(s->nfs.mounts[0].options.v[1], "hard");
		TEST_STREQ(s->nfs.mounts[0].options.v[2], "proto=tcp");
		TEST_STREQ(s->nfs.mounts[1].host, "nfs-1.cluster");
		TEST_INTEQ(s->nfs.mounts[1].options.n, 0);    /* [] means none */
		TEST_INTEQ(s->nfs.mounts[1].wait_ms, 10000);
	} else {
		TEST_CHECK(!"two mounts");
	}
	spec_free(s);

	/* Exports: clients default to cluster.network; networks are written canonically. */
	struct diags d = { NULL, 0 };
	int r = load_text("version: 1\ncluster: {name: h, role: head, network: 10.0.0.9/24}\n"
		     "nfs:\n  exports:\n    - path: /a\n    - {path: /b, clients: 10.1.2.3/16}\n"
		     "    - {path: /c, clients: \"*.cluster\", options: [ro]}\n", &s, &d);
	TEST_INTEQ(r, 0);
	TEST_INTEQ(d.n, 0);
	if (s && s->nfs.n_exports == 3) {
		TEST_STREQ(s->nfs.exports[0].clients, "10.0.0.0/24");
		TEST_INTEQ(s->nfs.exports[0].options.n, 3);
		TEST_STREQ(s->nfs.exports[0].options.v[0], "rw");
		TEST_STREQ(s->nfs.exports[0].options.v[1], "sync");
		TEST_STREQ(s->nfs.exports[0].options.v[2], "no_subtree_check");
		TEST_STREQ(s->nfs.exports[1].clients, "10.1.0.0/16");
		TEST_STREQ(s->nfs.exports[2].clients, "*.cluster");
		TEST_INTEQ(s->nfs.exports[2].options.n, 1);
		TEST_INTEQ(s->nfs.exports[1].mark.line, 6);
	}
	spec_free(s);
	diags_free(&d);

	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: /m}, {source: \"b:/y\", path: /m/}]}\n"),
		   "nfs.mounts[1]: mount point '/m' is already used by nfs.mounts[0]; each mount point needs its own path");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\"}]}\n"),
		   "nfs.mounts[0]: missing required key 'path'; add path: /mount/point");
	TEST_STREQ(bad("nfs: {mounts: [x]}\n"),
		   "nfs.mounts[0]: expected a mapping with source: and path:, got \"x\"");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: /m, size: 1}]}\n"),
		   "nfs.mounts[0]: unknown key 'size'; valid keys here: source, path, options, wait");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/../x\", path: /m}]}\n"),
		   "nfs.mounts[0].source: expected an NFS source like 10.0.0.7:/shared, got \"a:/../x\"; "
		   "'..' is not allowed in a path");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"[fd00::7:/x\", path: /m}]}\n"),
		   "nfs.mounts[0].source: expected an NFS source like 10.0.0.7:/shared, got \"[fd00::7:/x\"; "
		   "write an IPv6 server as [address]:/export");
	TEST_STREQ(bad("cluster: {name: h, role: head}\n"),
		   "duplicate key 'cluster' (first at line 2)");

	/* wait: 0s is one probe, kept as 0; absent is the loader's 5 min, the only default. */
	s = load_ok("nfs: {mounts: [{source: \"a:/x\", path: /m, wait: 0s},\n"
		    "               {source: \"a:/y\", path: /n}, {source: \"a:/z\", path: /o, wait: 0ms}]}\n");
	if (s && s->nfs.n_mounts == 3) {
		TEST_INTEQ(s->nfs.mounts[0].wait_ms, 0);
		TEST_INTEQ(s->nfs.mounts[1].wait_ms, 5 * 60 * 1000);
		TEST_INTEQ(s->nfs.mounts[2].wait_ms, 0);
	} else {
		TEST_CHECK(!"three mounts");
	}
	spec_free(s);
	{
		struct spec_nfs_mount m;

		memset(&m, 0, sizeof(m));
		spec_nfs_mount_defaults(&m);
		TEST_INTEQ(m.wait_ms, 5 * 60 * 1000);
	}
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: /m, wait: 25h}]}\n"),
		   "nfs.mounts[0].wait: 25h is out of range; use a duration from 0ms to 24h");

	/* What the nfs step used to re-check is the loader's: "/" and the option rules. */
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: /}]}\n"),
		   "nfs.mounts[0].path: expected a path other than /, got \"/\"");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: //./}]}\n"),
		   "nfs.mounts[0].path: expected a path other than /, got \"//./\"");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: /m, options: [\"port=70000\"]}]}\n"),
		   "nfs.mounts[0].options: \"port=70000\": port= needs a number from 0 to 65535");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: /m, options: [\"sec=(sys)\"]}]}\n"),
		   "nfs.mounts[0].options: \"sec=(sys)\": options cannot hold '(' or ')'");
	TEST_STREQ(first_error("version: 1\ncluster: {name: h, role: head, network: 10.0.0.0/24}\n"
			       "nfs: {exports: [{path: /}]}\n", NULL, NULL, NULL),
		   "nfs.exports[0].path: expected a path other than /, got \"/\"");
	TEST_STREQ(first_error("version: 1\ncluster: {name: h, role: head, network: 10.0.0.0/24}\n"
			       "nfs: {exports: [{path: /a, options: [\"rw)\"]}]}\n", NULL, NULL, NULL),
		   "nfs.exports[0].options: \"rw)\": options cannot hold '(' or ')'");
	s = load_ok("nfs: {mounts: [{source: \"a:/x\", path: /m, options: [\"port=2049\"]}]}\n");
	if (s && s->nfs.n_mounts == 1)
		TEST_STREQ(s->nfs.mounts[0].options.v[0], "port=2049");
	spec_free(s);
}

static void test_cross(void)
{
	static const char *const head = "version: 1\ncluster: {name: c1}\n";
	struct {
		const char *extra, *msg;
		unsigned line, col;
	} cases[] = {
		{ "discovery: {expect: 2}\n",
		  "discovery.method: shared needs discovery.dir (a directory on the shared filesystem); add dir:",
		  3, 1 },
		{ "discovery:\n  method: static\n",
		  "discovery.method: static needs discovery.hosts; add hosts: like [\"node[01-04]\"]", 4, 11 },
		{ "discovery:\n  method: scan\n",
		  "discovery.method: scan needs cluster.network (the range to scan); set cluster.network",
		  4, 11 },
		{ "ssh: {users: [a]}\n",
		  "ssh.restrict_from: true needs cluster.network; set cluster.network or restrict_from: false",
		  3, 1 },
		{ "ssh:\n  restrict_from: yes\n",
		  "ssh.restrict_from: true needs cluster.network; set cluster.network or restrict_from: false",
		  4, 18 },
		{ "hostfile:\n  address: ipoib\n",
		  "hostfile.address: ipoib needs rdma.ipoib (the IPoIB interface); set rdma.ipoib: ib0 or use address: hostname",
		  4, 12 },
		{ "nfs:\n  exports:\n    - {path: /a, clients: \"*\"}\n",
		  "nfs.exports: only the head node exports; set cluster.role: head, or move exports to the head node's spec",
		  4, 3 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *t = xasprintf("%s%s", head, cases[i].extra);
		unsigned line = 0, col = 0;
		size_t n = 0;

		TEST_STREQ(first_error(t, &n, &line, &col), cases[i].msg);
		TEST_INTEQ(n, 1);
		TEST_INTEQ(line, cases[i].line);
		TEST_INTEQ(col, cases[i].col);
		free(t);
	}
	/* Satisfied cross-field needs load. */
	struct spec *s = load_ok("discovery: {method: scan}\nssh: {users: [a]}\n"
				 "rdma: {ipoib: ib0}\nhostfile: {address: ipoib}\n");
	spec_free(s);
	/* restrict_from: false needs no network. */
	struct diags d = { NULL, 0 };
	int r = load_text("version: 1\ncluster: {name: c}\nssh: {users: [a], restrict_from: false}\n", &s, &d);
	TEST_INTEQ(r, 0);
	spec_free(s);
	diags_free(&d);
	/* A bad network is reported once, not again as missing. */
	size_t n = 0;
	TEST_STREQ(first_error("version: 1\ncluster: {name: c, network: x}\ndiscovery: {method: scan}\n"
			       "ssh: {users: [a]}\n", &n, NULL, NULL),
		   "cluster.network: expected a network like 10.0.0.0/24, got \"x\"");
	TEST_INTEQ(n, 1);
}

/* discovery method etcd: endpoints, TLS and auth files, the lease. */
static void test_etcd(void)
{
	struct spec *s = load_ok("discovery:\n  method: etcd\n"
				 "  endpoints: [\"https://10.0.0.4:2379\", \"http://etcd-2:2379/\", "
				 "\"https://[fd00::5]:2379\", \"http://e3\"]\n"
				 "  ca_file: /etc/hpcinit/etcd-ca.pem\n"
				 "  cert_file: /etc/hpcinit/c.pem\n  key_file: /etc/hpcinit/c.key\n"
				 "  expect: 4\n  wait: 10m\n  lease: 90s\n");

	TEST_INTEQ(s->discovery.method, DISC_ETCD);
	TEST_STREQ(disc_method_name(DISC_ETCD), "etcd");
	TEST_INTEQ(s->discovery.endpoints.n, 4);
	TEST_STREQ(s->discovery.endpoints.v[0], "https://10.0.0.4:2379");
	TEST_STREQ(s->discovery.endpoints.v[2], "https://[fd00::5]:2379");
	TEST_STREQ(s->discovery.ca_file, "/etc/hpcinit/etcd-ca.pem");
	TEST_STREQ(s->discovery.cert_file, "/etc/hpcinit/c.pem");
	TEST_STREQ(s->discovery.key_file, "/etc/hpcinit/c.key");
	TEST_INTEQ(s->discovery.lease_ms, 90000);
	TEST_INTEQ(s->discovery.expect, 4);
	spec_free(s);
	/* A password only over TLS (issue 23): auth_file with https endpoints only. */
	s = load_ok("discovery: {method: etcd, endpoints: [\"https://10.0.0.4:2379\", \"https://e2\"], "
		    "auth_file: /etc/hpcinit/etcd-auth}\n");
	TEST_STREQ(s->discovery.auth_file, "/etc/hpcinit/etcd-auth");
	spec_free(s);
	TEST_STREQ(bad("discovery: {method: etcd, endpoints: [\"https://a\", \"http://b:2379\"], "
		       "auth_file: /etc/hpcinit/etcd-auth}\n"),
		   "discovery.auth_file: auth_file sends its password to every endpoint, and http://b:2379 is "
		   "not https://: it would cross the network in clear text; use https:// endpoints (with "
		   "ca_file) or client certificates (cert_file, key_file)");

	s = load_ok("discovery: {dir: /d}\n");
	TEST_CHECK(!s->discovery.events_enable);
	TEST_STREQ(s->discovery.events_url, SPEC_EVENTS_URL);
	spec_free(s);
	s = load_ok("discovery: {dir: /d, scheduled_events: {enable: true, url: \"http://127.0.0.1:8080/se?a=1\"}}\n");
	TEST_CHECK(s->discovery.events_enable);
	TEST_STREQ(s->discovery.events_url, "http://127.0.0.1:8080/se?a=1");
	spec_free(s);
	TEST_STREQ(bad("discovery: {dir: /d, scheduled_events: {url: \"ftp://x/y\"}}\n"),
		   "discovery.scheduled_events.url: expected an http:// or https:// URL, got \"ftp://x/y\"");

	TEST_STREQ(bad("discovery: {method: etcd}\n"),
		   "discovery.method: etcd needs discovery.endpoints; add endpoints: like [\"https://10.0.0.4:2379\"]");
	TEST_STREQ(bad("discovery: {method: etcd, endpoints: [\"10.0.0.4:2379\"]}\n"),
		   "discovery.endpoints: \"10.0.0.4:2379\": expected a URL like https://10.0.0.4:2379 (http or "
		   "https, a host and an optional port, no path)");
	TEST_STREQ(bad("discovery: {method: etcd, endpoints: [\"http://a:0\"]}\n"),
		   "discovery.endpoints: \"http://a:0\": the port after ':' must be a number from 1 to 65535");
	TEST_STREQ(bad("discovery: {method: etcd, endpoints: [\"http://a:2379/v3\"]}\n"),
		   "discovery.endpoints: \"http://a:2379/v3\": expected a URL like https://10.0.0.4:2379 (http or "
		   "https, a host and an optional port, no path)");
	TEST_STREQ(bad("discovery: {method: etcd, endpoints: [\"http://a b\"]}\n"),
		   "discovery.endpoints: \"http://a b\": expected a URL like https://10.0.0.4:2379 (http or "
		   "https, a host and an optional port, no path)");
	TEST_STREQ(bad("discovery: {method: etcd, endpoints: [\"http://a\"], cert_file: /c}\n"),
		   "discovery.cert_file: cert_file and key_file go together (the client certificate and its "
		   "key); set both or neither");
	TEST_STREQ(bad("discovery: {dir: /d, endpoints: [\"http://a\"]}\n"),
		   "discovery.method: endpoints, ca_file, cert_file, key_file and auth_file are for method "
		   "etcd; set method: etcd or remove them");
	TEST_STREQ(bad("discovery: {method: etcd, endpoints: [\"http://a\", \"http://a\"]}\n"),
		   first_error("version: 1\ncluster: {name: c1, network: 10.0.0.0/24}\n"
			       "discovery: {method: etcd, endpoints: [\"http://a\", \"http://a\"]}\n",
			       NULL, NULL, NULL));
}


/* ssh.host_keys: ca and ssh.hostbased (issue 17). */
static void test_ssh_ca(void)
{
	static const char *const pub =
		"ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHlEh3b2c7dZ4k5C8o7ZmZbqC8lR5Sx7Z2kFq2w3Yx1A hpcinit-ca";
	char *text = xasprintf("version: 1\ncluster: {name: c1, network: 10.0.0.0/24, role: head}\n"
			       "ssh: {host_keys: ca, ca_key_file: /etc/hpcinit/ssh-ca, "
			       "ca_public_key: \"%s\", cert_validity: 48h, hostbased: true}\n", pub);
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	char *extra;

	TEST_INTEQ(load_text(text, &s, &d), 0);
	TEST_INTEQ(d.n, 0);
	if (s) {
		TEST_INTEQ(s->ssh.host_keys, HOSTKEYS_CA);
		TEST_STREQ(s->ssh.ca_key_file, "/etc/hpcinit/ssh-ca");
		TEST_STREQ(s->ssh.ca_public_key, pub);
		TEST_INTEQ(s->ssh.cert_validity_ms, 48ull * 3600 * 1000);
		TEST_CHECK(s->ssh.hostbased);
	}
	spec_free(s);
	diags_free(&d);
	free(text);
	/* A compute: the public key only; default validity 24 h; hostbased off. */
	extra = xasprintf("ssh: {host_keys: ca, ca_public_key: \"%s\"}\n", pub);
	s = load_ok(extra);
	if (s) {
		TEST_CHECK(s->ssh.ca_key_file == NULL);
		TEST_INTEQ(s->ssh.cert_validity_ms, 24ull * 3600 * 1000);
		TEST_CHECK(!s->ssh.hostbased);
	}
	spec_free(s);
	free(extra);
	extra = xasprintf("ssh: {host_keys: ca, ca_public_key: \"%s\", ca_key_file: /etc/hpcinit/ssh-ca}\n", pub);
	TEST_STREQ(bad(extra), "ssh.ca_key_file: only the head node holds the CA private key; set "
		   "cluster.role: head, or remove ca_key_file from this node's spec (compute nodes need "
		   "only ca_public_key)");
	free(extra);
	TEST_STREQ(bad("ssh: {host_keys: ca}\n"),
		   "ssh.host_keys: ca needs ssh.ca_public_key (the CA every node trusts); add "
		   "ca_public_key: \"ssh-ed25519 AAAA...\"");
	TEST_STREQ(bad("ssh: {host_keys: ca, ca_public_key: \"ssh-ed25519-cert-v01@openssh.com AAAAAAAAAAAAAAAAAAAA\"}\n"),
		   "ssh.ca_public_key: expected an OpenSSH public key, got \"ssh-ed25519-cert-v01@openssh.com "
		   "AAAAAAAAAAAAAAAAAAAA\"; expected a public key like \"ssh-ed25519 AAAA... comment\"");
	TEST_STREQ(bad("ssh: {cert_validity: 1m}\n"),
		   "ssh.cert_validity: 1m is out of range; use a duration from 5m to 43920h");
}

/*
 * Placeholders (issue 33): with a root, each secret file the spec names is
 * read under it, and one that still holds the example custom-data's
 * placeholder is an error at the key that names it.  Without a root
 * (spec_load_buffer) nothing is read; a file not there is no error.
 */
static void test_placeholders(void)
{
	char root[] = "/tmp/hpcinit-test-spec.XXXXXX";
	const char *text = "version: 1\ncluster:\n  name: c1\n  network: 10.0.0.0/24\n"
			   "  secret_file: /s/cluster.key\nslurm:\n  conf_servers: [h]\n  key_file: /s/munge.key\n"
			   "discovery: {method: etcd, endpoints: [\"https://e:2379\"], auth_file: /s/auth}\n";
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	char *p;
	FILE *f;

	TEST_CHECK(mkdtemp(root) != NULL);
	p = xasprintf("%s/s", root);
	TEST_INTEQ(mkdir(p, 0700), 0);
	free(p);
	/* no file under the root: loads */
	TEST_INTEQ(spec_load_buffer_root("n.yaml", text, strlen(text), root, &s, &d), 0);
	TEST_INTEQ(d.n, 0);
	spec_free(s);
	s = NULL;
	/* the placeholders: one error each, at the key, the file named */
	p = xasprintf("%s/s/cluster.key", root);
	f = fopen(p, "w");
	fputs("CHANGE-ME\n", f);
	fclose(f);
	free(p);
	p = xasprintf("%s/s/munge.key", root);
	f = fopen(p, "w");
	fputs("xxCHANGE-ME-padded-to-look-long-enough-for-munge-xxxxxxxxxxxxx\n", f);
	fclose(f);
	free(p);
	p = xasprintf("%s/s/auth", root);
	f = fopen(p, "w");
	fputs("root:CHANGE-ME\n", f);
	fclose(f);
	free(p);
	TEST_INTEQ(spec_load_buffer_root("n.yaml", text, strlen(text), root, &s, &d), -EINVAL);
	TEST_CHECK(s == NULL);
	TEST_INTEQ(d.n, 3);
	if (d.n == 3) {
		p = xasprintf("cluster.secret_file: %s/s/cluster.key still holds the placeholder 'CHANGE-ME' of the "
			      "example custom-data: generate the secret ONCE, on your workstation (openssl rand -hex 32), "
			      "and put the same value in every node's custom-data; a value made on one node alone is "
			      "rejected by every peer", root);
		TEST_INTEQ(d.v[0].line, 5);
		TEST_INTEQ(d.v[0].col, 3);
		TEST_STREQ(d.v[0].msg, p);
		free(p);
		TEST_INTEQ(d.v[1].line, 8);
		TEST_CHECK(strstr(d.v[1].msg, "slurm.key_file: ") == d.v[1].msg);
		TEST_INTEQ(d.v[2].line, 9);
		TEST_CHECK(strstr(d.v[2].msg, "discovery.auth_file: ") == d.v[2].msg);
	}
	diags_free(&d);
	/* without a root nothing is read */
	TEST_INTEQ(spec_load_buffer("n.yaml", text, strlen(text), &s, &d), 0);
	TEST_INTEQ(d.n, 0);
	spec_free(s);
	s = NULL;
	/* a real value: loads */
	p = xasprintf("%s/s/cluster.key", root);
	f = fopen(p, "w");
	fputs("0123456789abcdef0123456789abcdef\n", f);
	fclose(f);
	free(p);
	p = xasprintf("%s/s/munge.key", root);
	unlink(p);
	free(p);
	p = xasprintf("%s/s/auth", root);
	unlink(p);
	free(p);
	TEST_INTEQ(spec_load_buffer_root("n.yaml", text, strlen(text), root, &s, &d), 0);
	TEST_INTEQ(d.n, 0);
	spec_free(s);
	diags_free(&d);
	p = xasprintf("%s/s/cluster.key", root);
	TEST_INTEQ(unlink(p), 0);
	free(p);
	p = xasprintf("%s/s", root);
	TEST_INTEQ(rmdir(p), 0);
	free(p);
	TEST_INTEQ(rmdir(root), 0);
}

int main(void)
{
	fixture_dir_init();
	test_defaults();
	test_full();
	test_nfs();
	test_cross();
	test_etcd();
	test_ssh_ca();
	test_placeholders();
	TEST_EXIT();
}
