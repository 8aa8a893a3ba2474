/* SPDX-License-Identifier: MIT */
/* The spec loader: typed handlers, node ranges, CIDR, defaults, a full spec, messages. */
#include "../../agent/loader/spec.c"

#include <sys/stat.h>

#include "test.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif

static char fixture_dir[4096];

/* Load text; keep the diags for the caller.  Returns the loader's result. */
static int load_text(const char *text, struct spec **ret, struct diags *d)
{
	return spec_load_buffer("t.yaml", text, strlen(text), ret, d);
}

/* Load text that must fail; returns the first message (static copy) and the count. */
static const char *first_error(const char *text, size_t *count, unsigned *line, unsigned *col)
{
	static char msg[1024];
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	int r = load_text(text, &s, &d);

	TEST_INTEQ(r, -EINVAL);
	TEST_CHECK(s == NULL);
	msg[0] = '\0';
	if (d.n) {
		snprintf(msg, sizeof(msg), "%s", d.v[0].msg);
		if (line)
			*line = d.v[0].line;
		if (col)
			*col = d.v[0].col;
	}
	if (count)
		*count = d.n;
	diags_free(&d);
	spec_free(s);
	return msg;
}

/* A minimal valid spec followed by extra text. */
static struct spec *load_ok(const char *extra)
{
	char *text = xasprintf("version: 1\ncluster: {name: c1, network: 10.0.0.0/24}\n%s", extra);
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	int r = load_text(text, &s, &d);

	TEST_INTEQ(r, 0);
	TEST_INTEQ(d.n, 0);
	if (d.n)
		diags_print(&d, stderr);
	diags_free(&d);
	free(text);
	return s;
}

static const char *bad(const char *extra)
{
	char *text = xasprintf("version: 1\ncluster: {name: c1, network: 10.0.0.0/24}\n%s", extra);
	const char *m = first_error(text, NULL, NULL, NULL);

	free(text);
	return m;
}

static void test_size(void)
{
	/* Through the schema: bounds, 'unlimited' only where allowed. */
	struct spec *s = load_ok("memlock: {limit: 64G}\nrdma: {reg_mr: 0}\n");
	if (s) {
		TEST_CHECK(!s->memlock.unlimited);
		TEST_INTEQ(s->memlock.limit_bytes, 64ULL << 30);
		TEST_INTEQ(s->rdma.reg_mr_bytes, 0);
	}
	spec_free(s);
	s = load_ok("memlock: {limit: unlimited}\nrdma: {reg_mr: 64G}\n");
	if (s) {
		TEST_CHECK(s->memlock.unlimited);
		TEST_INTEQ(s->rdma.reg_mr_bytes, 64ULL << 30);
	}
	spec_free(s);
	s = load_ok("memlock: {limit: 64K}\n");
	if (s)
		TEST_INTEQ(s->memlock.limit_bytes, 65536);
	spec_free(s);
	TEST_STREQ(bad("memlock: {limit: 64Q}\n"),
		   "memlock.limit: expected a size like 64G or 'unlimited', got \"64Q\"");
	TEST_STREQ(bad("memlock: {limit: 63K}\n"),
		   "memlock.limit: 63K is out of range; use a size from 64K to 1E, or 'unlimited'");
	/* Near 2^64: rejected, never wrapped (limits.conf is in KiB, rounded up). */
	TEST_STREQ(bad("memlock: {limit: 18446744073709551615}\n"),
		   "memlock.limit: 18446744073709551615 is out of range; use a size from 64K to 1E, "
		   "or 'unlimited'");
	TEST_STREQ(bad("memlock: {limit: 18446744073709550592}\n"),
		   "memlock.limit: 18446744073709550592 is out of range; use a size from 64K to 1E, "
		   "or 'unlimited'");
	TEST_STREQ(bad("memlock: {limit: 16E}\n"),
		   "memlock.limit: 16E is out of range; use a size from 64K to 1E, or 'unlimited'");
	TEST_STREQ(bad("memlock: {limit: 2E}\n"),
		   "memlock.limit: 2E is out of range; use a size from 64K to 1E, or 'unlimited'");
	s = load_ok("memlock: {limit: 1E}\n");
	if (s) {
		TEST_CHECK(!s->memlock.unlimited);
		TEST_CHECK(s->memlock.limit_bytes == 1ULL << 60);
	}
	spec_free(s);
	TEST_STREQ(bad("rdma: {reg_mr: 65G}\n"),
		   "rdma.reg_mr: 65G is out of range; use a size from 0 to 64G");
	TEST_STREQ(bad("rdma: {reg_mr: unlimited}\n"),
		   "rdma.reg_mr: expected a size like 64M (K, M, G or T), got \"unlimited\"");
	TEST_STREQ(bad("rdma: {reg_mr: 18446744073709551616}\n"),
		   "rdma.reg_mr: 18446744073709551616 is out of range; use a size from 0 to 64G");
}

static void test_duration(void)
{
	struct spec *s = load_ok("rdma: {open_timeout: 100ms}\n"
				 "discovery: {dir: /d, wait: 0s, lease: 24h, scan: {timeout: 60s}}\n");
	if (s) {
		TEST_INTEQ(s->rdma.open_timeout_ms, 100);
		TEST_INTEQ(s->discovery.wait_ms, 0);
		TEST_INTEQ(s->discovery.lease_ms, 24 * 3600 * 1000ULL);
		TEST_INTEQ(s->discovery.scan_timeout_ms, 60000);
	}
	spec_free(s);
	TEST_STREQ(bad("rdma: {open_timeout: 10}\n"),
		   "rdma.open_timeout: expected a duration like 10s (ms, s, m or h), got \"10\"; "
		   "add a unit: ms, s, m or h");
	TEST_STREQ(bad("rdma: {open_timeout: 99ms}\n"),
		   "rdma.open_timeout: 99ms is out of range; use a duration from 100ms to 10m");
	TEST_STREQ(bad("rdma: {open_timeout: 11m}\n"),
		   "rdma.open_timeout: 11m is out of range; use a duration from 100ms to 10m");
	TEST_STREQ(bad("rdma: {open_timeout: soon}\n"),
		   "rdma.open_timeout: expected a duration like 10s (ms, s, m or h), got \"soon\"");
	TEST_STREQ(bad("discovery: {dir: /d, lease: 999ms}\n"),
		   "discovery.lease: 999ms is out of range; use a duration from 1s to 24h");
}

static void test_int_and_number(void)
{
	struct spec *s = load_ok("rdma: {min_rate_gbps: 1600}\n"
				 "discovery: {dir: /d, expect: 100000, scan: {port: 65535}}\n"
				 "mpi: {verify: {enable: yes, max_latency_us: 2.5}}\n");
	if (s) {
		TEST_INTEQ(s->rdma.min_rate_gbps, 1600);
		TEST_INTEQ(s->discovery.expect, SPEC_MAX_HOSTS);
		TEST_INTEQ(s->discovery.scan_port, 65535);
		TEST_CHECK(s->mpi.verify_enable);
		TEST_CHECK(s->mpi.max_latency_us == 2.5);
	}
	spec_free(s);
	TEST_STREQ(bad("rdma: {min_rate_gbps: 1601}\n"),
		   "rdma.min_rate_gbps: 1601 is out of range; use a number from 0 to 1600");
	TEST_STREQ(bad("rdma: {min_rate_gbps: -1}\n"),
		   "rdma.min_rate_gbps: -1 is out of range; use a number from 0 to 1600");
	TEST_STREQ(bad("rdma: {min_rate_gbps: 99999999999999999999}\n"),
		   "rdma.min_rate_gbps: 99999999999999999999 is out of range; use a number from 0 to 1600");
	TEST_STREQ(bad("rdma: {min_rate_gbps: 1.5}\n"),
		   "rdma.min_rate_gbps: expected an integer from 0 to 1600, got \"1.5\"");
	TEST_STREQ(bad("discovery: {dir: /d, scan: {port: 0}}\n"),
		   "discovery.scan.port: 0 is out of range; use a number from 1 to 65535");
	TEST_STREQ(bad("discovery: {dir: /d, expect: 0}\n"),
		   "discovery.expect: 0 is out of range; use a number from 1 to 100000");
	TEST_STREQ(bad("mpi: {verify: {max_latency_us: -0.5}}\n"),
		   "mpi.verify.max_latency_us: -0.5 is out of range; use a number from 0 to 1000000");
	TEST_STREQ(bad("mpi: {verify: {max_latency_us: fast}}\n"),
		   "mpi.verify.max_latency_us: expected a number from 0 to 1000000, got \"fast\"");
	TEST_STREQ(bad("mpi: {verify: true}\n"), "mpi.verify: expected a mapping, got \"true\"");
}

static void test_bool_enum(void)
{
	static const char *const truths[] = { "true", "True", "TRUE", "yes", "Yes", "YES" };
	static const char *const lies[] = { "false", "False", "FALSE", "no", "No", "NO" };

	for (size_t i = 0; i < 6; i++) {
		char *t = xasprintf("memlock: {systemd: %s}\nkernel: {hold: %s}\n", lies[i], truths[i]);
		struct spec *s = load_ok(t);

		if (s) {
			TEST_CHECK(!s->memlock.systemd);
			TEST_CHECK(s->kernel.hold);
		}
		spec_free(s);
		free(t);
	}
	TEST_STREQ(bad("memlock: {systemd: on}\n"),
		   "memlock.systemd: expected a boolean (true or false), got \"on\"");
	TEST_STREQ(bad("memlock: {systemd: 1}\n"),
		   "memlock.systemd: expected a boolean (true or false), got \"1\"");
	TEST_STREQ(bad("memlock: {systemd: [true]}\n"),
		   "memlock.systemd: expected a boolean (true or false), got a sequence");

	struct spec *s = load_ok("rdma: {link_layer: ethernet}\ndiscovery: {method: scan}\n"
				 "ssh: {key_type: rsa, host_keys: scan}\nhostfile: {address: ip}\n");
	if (s) {
		TEST_INTEQ(s->rdma.link_layer, LINK_ETHERNET);
		TEST_INTEQ(s->discovery.method, DISC_SCAN);
		TEST_INTEQ(s->ssh.key_type, KEY_RSA);
		TEST_INTEQ(s->ssh.host_keys, HOSTKEYS_SCAN);
		TEST_INTEQ(s->hostfile.address, HF_ADDR_IP);
	}
	spec_free(s);
	TEST_STREQ(bad("rdma: {link_layer: infiniban}\n"),
		   "rdma.link_layer: expected one of infiniband, ethernet, any, got \"infiniban\"; "
		   "did you mean 'infiniband'?");
	TEST_STREQ(bad("rdma: {link_layer: ib}\n"),
		   "rdma.link_layer: expected one of infiniband, ethernet, any, got \"ib\"");
	TEST_STREQ(bad("rdma: {link_layer: Ethernet}\n"),
		   "rdma.link_layer: expected one of infiniband, ethernet, any, got \"Ethernet\"; "
		   "did you mean 'ethernet'?");
	/* mpi.verify.min_bandwidth: a size per second */
	s = load_ok("mpi: {verify: {min_bandwidth: 10G}}\n");
	if (s)
		TEST_CHECK(s->mpi.min_bandwidth == 10ull << 30);
	spec_free(s);
	TEST_STREQ(bad("mpi: {verify: {min_bandwidth: fast}}\n"),
		   "mpi.verify.min_bandwidth: expected a size like 64M (K, M, G or T), got \"fast\"");
	/* rdma.software: auto (default), allow, deny */
	s = load_ok("rdma: {link_layer: ethernet}\n");
	if (s)
		TEST_INTEQ(s->rdma.software, SOFT_AUTO);
	spec_free(s);
	s = load_ok("rdma: {link_layer: any, software: deny}\n");
	if (s)
		TEST_INTEQ(s->rdma.software, SOFT_DENY);
	spec_free(s);
	s = load_ok("rdma: {software: allow}\n");
	if (s)
		TEST_INTEQ(s->rdma.software, SOFT_ALLOW);
	spec_free(s);
	TEST_STREQ(bad("rdma: {software: yes}\n"),
		   "rdma.software: expected one of auto, allow, deny, got \"yes\"");
	TEST_STREQ(link_layer_name(LINK_INFINIBAND), "infiniband");
	TEST_STREQ(link_layer_name(LINK_ETHERNET), "ethernet");
	TEST_STREQ(link_layer_name(LINK_ANY), "any");
	TEST_STREQ(disc_method_name(DISC_SHARED), "shared");
	TEST_STREQ(disc_method_name(DISC_STATIC), "static");
	TEST_STREQ(disc_method_name(DISC_SCAN), "scan");
}

static void test_paths(void)
{
	struct spec *s = load_ok("hostfile: {dir: /opt//hpc/./files/}\n");
	if (s)
		TEST_STREQ(s->hostfile.dir, "/opt/hpc/files");
	spec_free(s);
	TEST_STREQ(bad("hostfile: {dir: opt/hpc}\n"),
		   "hostfile.dir: expected an absolute path (starting with /), got \"opt/hpc\"");
	TEST_STREQ(bad("hostfile: {dir: \"/a\\nb\"}\n"),
		   "hostfile.dir: path holds a control character, got \"/a\\nb\"");

	/*
	 * The paths other steps compare (discovery.dir against the export
	 * holding it, mount points against each other) are normalized by the
	 * loader: "/shared/" and "/shared" are one path.
	 */
	s = load_ok("nfs: {mounts: [{source: \"a:/x/\", path: \"/mnt//shared/\"}]}\n"
		    "discovery: {dir: \"/mnt/shared//.hpcinit/\"}\n");
	if (s && s->nfs.n_mounts == 1) {
		TEST_STREQ(s->nfs.mounts[0].path, "/mnt/shared");
		TEST_STREQ(s->discovery.dir, "/mnt/shared/.hpcinit");
	}
	spec_free(s);
	{
		struct diags d = { NULL, 0 };

		s = NULL;
		TEST_INTEQ(load_text("version: 1\ncluster: {name: h, role: head, network: 10.0.0.0/24}\n"
				     "nfs: {exports: [{path: \"//shared///\"}]}\n", &s, &d), 0);
		TEST_INTEQ(d.n, 0);
		if (s && s->nfs.n_exports == 1)
			TEST_STREQ(s->nfs.exports[0].path, "/shared");
		diags_free(&d);
		spec_free(s);
	}
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: /m/}, {source: \"a:/y\", path: \"/m\"}]}\n"),
		   "nfs.mounts[1]: mount point '/m' is already used by nfs.mounts[0]; each mount point needs "
		   "its own path");
	TEST_STREQ(bad("nfs: {mounts: [{source: \"a:/x\", path: shared/}]}\n"),
		   "nfs.mounts[0].path: expected an absolute path (starting with /), got \"shared/\"");
	{
		unsigned line = 0, col = 0;

		TEST_STREQ(first_error("version: 1\ncluster: {name: c1, network: 10.0.0.0/24}\n"
				       "discovery: {dir: /shared/../etc}\n", NULL, &line, &col),
			   "discovery.dir: '..' is not allowed in a path, got \"/shared/../etc\"");
		TEST_INTEQ(line, 3);
		TEST_INTEQ(col, 18);
	}
}

static void test_names(void)
{
	struct spec *s = load_ok("rdma: {devices: \"mlx5_an*\", ipoib: ib1}\n"
				 "kernel: {expect: \"6.*-azure\", modules: [mlx5_ib, rdma_ucm]}\n"
				 "memlock: {users: [\"@hpc\", alice]}\n"
				 "ssh: {users: [azureuser, hpc.admin]}\n");
	if (s) {
		TEST_STREQ(s->rdma.devices, "mlx5_an*");
		TEST_STREQ(s->rdma.ipoib, "ib1");
		TEST_STREQ(s->kernel.expect, "6.*-azure");
		TEST_INTEQ(s->kernel.modules.n, 2);
		TEST_STREQ(s->kernel.modules.v[1], "rdma_ucm");
		TEST_CHECK(s->kernel.modules.v[2] == NULL);
		TEST_INTEQ(s->memlock.users.n, 2);
		TEST_STREQ(s->memlock.users.v[0], "@hpc");
		TEST_INTEQ(s->ssh.users.n, 2);
		TEST_STREQ(s->ssh.users.v[1], "hpc.admin");
	}
	spec_free(s);
	TEST_STREQ(bad("memlock: {users: []}\n"),
		   "memlock.users: expected at least one entry ('*', a user name or @group)");
	TEST_STREQ(bad("ssh: {users: [root, root]}\n"), "ssh.users: \"root\" is listed twice");
	TEST_STREQ(bad("ssh: {users: [root, ~]}\n"),
		   "ssh.users: entry 2: expected a user name, got an empty value");
	TEST_STREQ(bad("kernel: {modules: mlx5_ib}\n"),
		   "kernel.modules: expected a sequence of kernel module names, got \"mlx5_ib\"");
	TEST_STREQ(bad("cluster2: x\n"), "unknown key 'cluster2'; did you mean 'cluster'?");
}

static void test_cidr(void)
{
	struct spec *s = load_ok("");
	if (s) {
		TEST_CHECK(s->cluster.has_network);
		TEST_STREQ(s->cluster.network.text, "10.0.0.0/24");
	}
	spec_free(s);
	TEST_STREQ(first_error("version: 1\ncluster: {name: c, network: 10.0.0.0/33}\n", NULL, NULL, NULL),
		   "cluster.network: expected a network like 10.0.0.0/24, got \"10.0.0.0/33\"");
}

static void test_noderange(void)
{
	/* Through the schema: several patterns, spec order, a total bound. */
	struct spec *s = load_ok("discovery: {method: static, hosts: [head, \"node[01-03]\", "
				 "\"198.18.0.[7-8]\", \"fd00::7\"]}\n");
	if (s) {
		TEST_INTEQ(s->discovery.hosts.n, 7);
		if (s->discovery.hosts.n == 7) {
			TEST_STREQ(s->discovery.hosts.v[0], "head");
			TEST_STREQ(s->discovery.hosts.v[1], "node01");
			TEST_STREQ(s->discovery.hosts.v[3], "node03");
			TEST_STREQ(s->discovery.hosts.v[5], "198.18.0.8");
			TEST_STREQ(s->discovery.hosts.v[6], "fd00::7");
		}
	}
	spec_free(s);
	TEST_STREQ(bad("discovery: {method: static, hosts: [\"n[1-60000]\", \"m[1-60000]\"]}\n"),
		   "discovery.hosts: the list expands to more than 100000 hosts at \"m[1-60000]\"");
	TEST_STREQ(bad("discovery: {method: static, hosts: [\"n[0-100000]\"]}\n"),
		   "discovery.hosts: \"n[0-100000]\" expands to more than 100000 hosts");
	TEST_STREQ(bad("discovery: {method: static, hosts: [\"n[1-2\"]}\n"),
		   "discovery.hosts: bad node range \"n[1-2\": '[' without a closing ']'");
	TEST_STREQ(bad("discovery: {method: static, hosts: [\"-n[1-2]\"]}\n"),
		   "discovery.hosts: \"-n[1-2]\": \"-n1\" is not a valid host name");
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

static void test_errors(void)
{
	size_t n = 0;
	unsigned line = 0, col = 0;

	/* Syntax problems, each in its own words. */
	TEST_STREQ(first_error("version: 1\ncluster:\n\tname: c\n", &n, &line, &col),
		   "tab character in indentation; YAML indents with spaces only");
	TEST_INTEQ(line, 3);
	TEST_INTEQ(col, 1);
	TEST_STREQ(first_error("version: 1\ncluster:\n  name: c\n role: head\n", &n, &line, &col),
		   "bad indentation: check that keys at the same level start in the same column "
		   "(did not find expected key while parsing a block mapping at line 1)");
	TEST_INTEQ(line, 4);
	TEST_INTEQ(col, 2);
	TEST_STREQ(first_error("version: 1\ncluster:\n  name: c\n    role: head\n", &n, &line, &col),
		   "bad indentation: check that keys at the same level start in the same column, "
		   "and quote values that contain ': ' (mapping values are not allowed in this context)");
	TEST_STREQ(first_error("version: 1\ncluster: {name: \"c\xff\"}\n", &n, &line, &col),
		   "invalid UTF-8 (byte 0xFF); save the file as UTF-8");
	TEST_INTEQ(line, 2);
	TEST_INTEQ(col, 19);
	TEST_STREQ(first_error("version: 1\ncluster: {name: \"\xc3\xa9\xc0\xaf\"}\n", &n, &line, &col),
		   "invalid UTF-8 (byte 0xC0); save the file as UTF-8");   /* overlong '/' */
	TEST_INTEQ(col, 19);
	TEST_STREQ(first_error("version: 1\ncluster: {name: \"\xed\xa0\x80\"}\n", NULL, NULL, NULL),
		   "invalid UTF-8 (byte 0xED); save the file as UTF-8");   /* surrogate */
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	TEST_INTEQ(spec_load_buffer("n.yaml", "version: 1\0\n", 12, &s, &d), -EINVAL);
	TEST_INTEQ(d.n, 1);
	if (d.n)
		TEST_STREQ(d.v[0].msg, "control character U+0000 is not allowed in YAML; remove it");
	diags_free(&d);
	TEST_STREQ(first_error("", &n, &line, &col),
		   "empty spec; expected a mapping with version: 1 and cluster:");
	TEST_STREQ(first_error("---\n", NULL, NULL, NULL),
		   "empty spec; expected a mapping with version: 1 and cluster:");
	TEST_STREQ(first_error("42\n", NULL, NULL, NULL),
		   "expected a mapping with version: 1 and cluster:, got \"42\"");
	TEST_STREQ(first_error("version: 1\ncluster: {name: c}\n---\nversion: 1\n", &n, &line, &col),
		   "a spec holds one YAML document; remove this second one (or its '---')");
	TEST_INTEQ(line, 3);
	TEST_STREQ(first_error("version: 1\ncluster: &a {name: c}\nx: *a\ny: *a\n", &n, NULL, NULL),
		   "aliases (*a) are not supported; write the value out");
	TEST_INTEQ(n, 2);
	TEST_STREQ(first_error("version: 1\nversion: 1\ncluster: {name: c}\n", &n, &line, &col),
		   "duplicate key 'version' (first at line 1)");
	TEST_INTEQ(line, 2);
	TEST_STREQ(first_error("version: one\ncluster: {name: c}\n", NULL, NULL, NULL),
		   "version: expected the spec version (1), got \"one\"");
	TEST_STREQ(first_error("version: 2\ncluster: {name: c}\n", NULL, NULL, NULL),
		   "version: unsupported spec version 2; this hpcinit reads version 1");
	TEST_STREQ(first_error("version: 1\ncluster: {name: c}\n[a]: 1\n", NULL, NULL, NULL),
		   "expected a key name, got a sequence");
	TEST_STREQ(first_error("version: 1\ncluster: {name: c}\nmemlock: [a]\n", NULL, NULL, NULL),
		   "memlock: expected a mapping, got a sequence");

	/* Deep nesting stops early with its own message. */
	struct strbuf deep = STRBUF_INIT;
	sb_append(&deep, "version: 1\ncluster: {name: c}\nx: ");
	for (int i = 0; i < 40; i++)
		sb_append(&deep, "[");
	TEST_STREQ(first_error(sb_str(&deep), NULL, NULL, NULL),
		   "nested more than 32 levels deep; a spec needs 4");
	sb_free(&deep);

	/* Every error in one run; at most DIAG_MAX, then one line says how many. */
	struct strbuf many = STRBUF_INIT;
	sb_append(&many, "version: 1\ncluster: {name: c}\n");
	for (int i = 0; i < 150; i++)
		sb_printf(&many, "bogus%d: 1\n", i);
	TEST_INTEQ(load_text(sb_str(&many), &s, &d), -EINVAL);
	TEST_INTEQ(d.n, DIAG_MAX + 1);
	if (d.n == DIAG_MAX + 1) {
		TEST_INTEQ(d.v[0].line, 3);
		TEST_INTEQ(d.v[DIAG_MAX - 1].line, 102);
		TEST_STREQ(d.v[DIAG_MAX].msg, "too many errors (150); fix these first");
		TEST_INTEQ(d.v[DIAG_MAX].line, 0);
	}
	diags_free(&d);
	sb_free(&many);

	/* Too big: refused before parsing. */
	char *big = xmalloc(SPEC_MAX_BYTES + 1);
	memset(big, '#', SPEC_MAX_BYTES + 1);
	s = NULL;
	TEST_INTEQ(spec_load_buffer("big.yaml", big, SPEC_MAX_BYTES + 1, &s, &d), -EFBIG);
	TEST_CHECK(s == NULL);
	TEST_INTEQ(d.n, 1);
	if (d.n)
		TEST_STREQ(d.v[0].msg,
			   "spec is larger than the limit of 1048576 bytes (1 MiB); is this the right file?");
	diags_free(&d);
	free(big);

	/* ret_spec is left alone on failure. */
	struct spec sentinel;
	s = &sentinel;
	TEST_INTEQ(load_text("version: 3\n", &s, &d), -EINVAL);
	TEST_CHECK(s == &sentinel);
	diags_free(&d);
	TEST_CHECK(spec_free(NULL) == NULL);
	diags_free(NULL);
	diags_free(&d);
}

static char *print_to_string(const struct diags *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	diags_print(d, f);
	fclose(f);
	return out;
}

static void test_print(void)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	char *out;

	load_text("version: 1\ncluster:\n  name: c1\nmemlock:\n  limit: 64Q\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:5:10: error: memlock.limit: expected a size like 64G or 'unlimited', got \"64Q\"\n"
			"  limit: 64Q\n"
			"         ^\n");
	free(out);
	diags_free(&d);

	/* Tabs before the column stay tabs in the caret line. */
	load_text("version: 1\ncluster: {name: c1}\nrdma: {\tlink_layer:\tfoo}\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:3:21: error: rdma.link_layer: expected one of infiniband, ethernet, any, got \"foo\"\n"
			"rdma: {\tlink_layer:\tfoo}\n"
			"       \t           \t^\n");
	free(out);
	diags_free(&d);

	/* Columns count characters: one pad for a two-byte letter. */
	load_text("version: 1\ncluster: {name: c1}\nkernel: {expect: \"é\", hold: maybe}\n", &s, &d);
	TEST_INTEQ(d.n, 1);
	if (d.n)
		TEST_INTEQ(d.v[0].col, 29);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:3:29: error: kernel.hold: expected a boolean (true or false), got \"maybe\"\n"
			"kernel: {expect: \"é\", hold: maybe}\n"
			"                            ^\n");
	free(out);
	diags_free(&d);

	/* CR LF line ends: same lines, no CR in the source line. */
	load_text("version: 1\r\ncluster:\r\n  name: c1\r\n  role: boss\r\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:4:9: error: cluster.role: expected one of compute, head, got \"boss\"\n"
			"  role: boss\n"
			"        ^\n");
	free(out);
	diags_free(&d);

	/* A BOM is not a column. */
	load_text("\xef\xbb\xbfversion: 1\ncluster: {name: c1, role: x}\n", &s, &d);
	TEST_INTEQ(d.n, 1);
	if (d.n) {
		TEST_INTEQ(d.v[0].line, 2);
		TEST_INTEQ(d.v[0].col, 27);
	}
	diags_free(&d);
	load_text("\xef\xbb\xbfversoin: 1\ncluster: {name: c1}\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:1:1: error: unknown key 'versoin'; did you mean 'version'?\n"
			"versoin: 1\n"
			"^\n"
			"t.yaml:1:1: error: missing required key 'version'; add version: 1 as the first line\n"
			"versoin: 1\n"
			"^\n");
	free(out);
	diags_free(&d);

	/* Invalid bytes are shown as '?', the caret under them. */
	load_text("version: 1\ncluster: {name: \"a\x80\"}\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:2:19: error: invalid UTF-8 (byte 0x80); save the file as UTF-8\n"
			"cluster: {name: \"a?\"}\n"
			"                  ^\n");
	free(out);
	diags_free(&d);

	/* A caret past a cut source line is left out; one just past the end is kept. */
	struct strbuf longline = STRBUF_INIT;
	sb_append(&longline, "version: 1\ncluster: {name: c1, role: compute");
	for (int i = 0; i < 600; i++)
		sb_append(&longline, " ");
	sb_append(&longline, ", x: 1}\n");
	load_text(sb_str(&longline), &s, &d);
	TEST_INTEQ(d.n, 1);
	if (d.n) {
		TEST_INTEQ(d.v[0].col, 636);
		TEST_INTEQ(strlen(d.v[0].source_line), SOURCE_LINE_MAX);
	}
	out = print_to_string(&d);
	TEST_CHECK(strchr(out, '^') == NULL);
	TEST_INTEQ(strlen(out), strlen(d.v[0].msg) + strlen("t.yaml:2:636: error: \n") + SOURCE_LINE_MAX + 1);
	free(out);
	diags_free(&d);
	sb_free(&longline);
	load_text("version: 1\ncluster: {name: \"c1\n", &s, &d);
	out = print_to_string(&d);
	TEST_CHECK(strstr(out, "\ncluster: {name: \"c1\n                ^\n") != NULL);
	free(out);
	diags_free(&d);

	/* No position: just the file. */
	TEST_INTEQ(spec_load_file("/nonexistent/hpcinit/spec.yaml", &s, &d), -ENOENT);
	out = print_to_string(&d);
	TEST_STREQ(out, "/nonexistent/hpcinit/spec.yaml: error: cannot open the spec: No such file or directory\n");
	free(out);
	diags_free(&d);
	TEST_INTEQ(spec_load_file(fixture_dir, &s, &d), -EISDIR);
	TEST_INTEQ(d.n, 1);
	diags_free(&d);
	diags_print(NULL, stderr);
}

static void test_load_file_big(void)
{
	char path[] = "/tmp/test_spec.XXXXXX";
	int fd = mkstemp(path);
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	char block[65536];

	TEST_CHECK(fd >= 0);
	if (fd < 0)
		return;
	memset(block, '#', sizeof(block));
	for (int i = 0; i < 20; i++)
		TEST_INTEQ(write(fd, block, sizeof(block)), sizeof(block));
	close(fd);
	TEST_INTEQ(spec_load_file(path, &s, &d), -EFBIG);
	TEST_INTEQ(d.n, 1);
	diags_free(&d);
	unlink(path);
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

int main(void)
{
	const char *top = getenv("TOP_SRCDIR");

	if (top && *top)
		snprintf(fixture_dir, sizeof(fixture_dir), "%s/tests/fixtures", top);
	else
		snprintf(fixture_dir, sizeof(fixture_dir), "%s", FIXTURE_DIR);
	test_size();
	test_duration();
	test_int_and_number();
	test_bool_enum();
	test_paths();
	test_names();
	test_cidr();
	test_noderange();
	test_defaults();
	test_full();
	test_nfs();
	test_cross();
	test_etcd();
	test_errors();
	test_print();
	test_load_file_big();
	test_ssh_ca();
	TEST_EXIT();
}
