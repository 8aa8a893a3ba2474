/* SPDX-License-Identifier: MIT */
/*
 * The spec loader's typed handlers (common/loader/handlers.c) through the
 * schema walker (schema.c): sizes, durations, integers and numbers,
 * booleans and enums, paths, names, CIDR, node ranges, each with its bounds
 * and its message for a bad value.
 */
#include "testspec.h"

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


int main(void)
{
	test_size();
	test_duration();
	test_int_and_number();
	test_bool_enum();
	test_paths();
	test_names();
	test_cidr();
	test_noderange();
	TEST_EXIT();
}
