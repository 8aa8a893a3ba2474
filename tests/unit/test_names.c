/* SPDX-License-Identifier: MIT */
/* names.c: host, user, interface, module, option, glob and path rules. */
#include "config.h"

#include "../../common/loader/names.c"
#include "test.h"

static void test_paths(void)
{
	const char *why = NULL;
	char *p;

	p = name_path_normalize("/a//b/./c/", &why);
	TEST_STREQ(p, "/a/b/c");
	free(p);
	p = name_path_normalize("/", &why);
	TEST_STREQ(p, "/");
	free(p);
	p = name_path_normalize("//.//", &why);
	TEST_STREQ(p, "/");
	free(p);
	p = name_path_normalize("/scratch/.hpcinit", &why);
	TEST_STREQ(p, "/scratch/.hpcinit");
	free(p);
	p = name_path_normalize("/a/..b/c..", &why);
	TEST_STREQ(p, "/a/..b/c..");
	free(p);
	TEST_CHECK(name_path_normalize("scratch", &why) == NULL);
	TEST_STREQ(why, "expected an absolute path (starting with /)");
	TEST_CHECK(name_path_normalize("", &why) == NULL);
	TEST_CHECK(name_path_normalize("/a/../b", &why) == NULL);
	TEST_STREQ(why, "'..' is not allowed in a path");
	TEST_CHECK(name_path_normalize("/a/..", &why) == NULL);
	TEST_CHECK(name_path_normalize("/a\nb", &why) == NULL);
	TEST_STREQ(why, "path holds a control character");

	char long_path[4100];
	long_path[0] = '/';
	memset(long_path + 1, 'x', 4095);
	long_path[4096] = '\0';
	TEST_CHECK(name_path_normalize(long_path, &why) == NULL);
	TEST_STREQ(why, "path is longer than 4095 characters");
	long_path[4095] = '\0';
	p = name_path_normalize(long_path, &why);
	TEST_CHECK(p != NULL);
	free(p);

}

static void test_rules(void)
{
	/* glob */
	TEST_CHECK(name_check_glob("mlx5_ib*") == NULL);
	TEST_CHECK(name_check_glob("5.15.0-*-azure") == NULL);
	TEST_CHECK(name_check_glob("[!a]x") == NULL);
	TEST_CHECK(name_check_glob("[]a]x") == NULL);
	TEST_CHECK(name_check_glob("a\\*") == NULL);
	TEST_STREQ(name_check_glob(""), "empty pattern");
	TEST_STREQ(name_check_glob("a/b"), "a pattern matches one name and cannot hold '/'");
	TEST_STREQ(name_check_glob("[abc"), "'[' without a closing ']'");
	TEST_STREQ(name_check_glob("a\\"), "pattern ends with '\\'");
	TEST_STREQ(name_check_glob("a b"), "a pattern cannot hold spaces or control characters");
	char longg[300];
	memset(longg, 'a', 256);
	longg[256] = '\0';
	TEST_STREQ(name_check_glob(longg), "pattern is longer than 255 characters");

	/* host names (RFC 1123) */
	TEST_CHECK(name_hostname_valid("node01"));
	TEST_CHECK(name_hostname_valid("a.b-c.d"));
	TEST_CHECK(name_hostname_valid("198.18.0.1"));
	TEST_CHECK(name_hostname_valid("0node"));
	TEST_CHECK(!name_hostname_valid(""));
	TEST_CHECK(!name_hostname_valid("-a"));
	TEST_CHECK(!name_hostname_valid("a-"));
	TEST_CHECK(!name_hostname_valid("a_b"));
	TEST_CHECK(!name_hostname_valid("a..b"));
	TEST_CHECK(!name_hostname_valid("a."));
	TEST_CHECK(!name_hostname_valid("a*"));
	TEST_CHECK(name_host_valid("*.cluster", NAME_WILD));
	char label[80];
	memset(label, 'a', 64);
	label[64] = '\0';
	TEST_CHECK(!name_hostname_valid(label));
	label[63] = '\0';
	TEST_CHECK(name_hostname_valid(label));
	char longh[300];
	for (int i = 0; i < 254; i++)
		longh[i] = i % 2 ? '.' : 'a';
	longh[253] = 'a';
	longh[254] = '\0';
	TEST_CHECK(!name_hostname_valid(longh));
	longh[253] = '\0';
	TEST_CHECK(name_hostname_valid(longh));

	/* cluster names */
	TEST_CHECK(name_check_cluster("glocluster") == NULL);
	TEST_CHECK(name_check_cluster("a") == NULL);
	TEST_CHECK(name_check_cluster("hpc-01") == NULL);
	TEST_CHECK(name_check_cluster("") != NULL);
	TEST_CHECK(name_check_cluster("-a") != NULL);
	TEST_CHECK(name_check_cluster("a-") != NULL);
	TEST_CHECK(name_check_cluster("A") != NULL);
	TEST_CHECK(name_check_cluster("a_b") != NULL);
	TEST_CHECK(name_check_cluster("a.b") != NULL);
	TEST_CHECK(name_check_cluster(label) == NULL);  /* 63 */
	label[63] = 'a';
	label[64] = '\0';
	TEST_CHECK(name_check_cluster(label) != NULL);  /* 64 */

	/* users and pam domains */
	TEST_CHECK(name_user_valid("azureuser"));
	TEST_CHECK(name_user_valid("_apt"));
	TEST_CHECK(name_user_valid("bob.smith"));
	TEST_CHECK(name_user_valid("host$"));
	TEST_CHECK(name_user_valid("u1000"));
	TEST_CHECK(!name_user_valid(""));
	TEST_CHECK(!name_user_valid("-bob"));
	TEST_CHECK(!name_user_valid("1000"));
	TEST_CHECK(!name_user_valid("bad user"));
	TEST_CHECK(!name_user_valid("a$b"));
	TEST_CHECK(!name_user_valid("abcdefghijabcdefghijabcdefghijabc"));   /* 33 */
	TEST_CHECK(name_user_valid("abcdefghijabcdefghijabcdefghijab"));     /* 32 */
	TEST_CHECK(name_check_pam_domain("*") == NULL);
	TEST_CHECK(name_check_pam_domain("@hpc") == NULL);
	TEST_CHECK(name_check_pam_domain("alice") == NULL);
	TEST_CHECK(name_check_pam_domain("@") != NULL);
	TEST_CHECK(name_check_pam_domain("@-x") != NULL);
	TEST_CHECK(name_check_pam_domain("**") != NULL);

	/* interfaces, modules, options */
	TEST_CHECK(name_ifname_valid("ib0"));
	TEST_CHECK(name_ifname_valid("abcdefghijklmno"));    /* 15 */
	TEST_CHECK(!name_ifname_valid("abcdefghijklmnop"));  /* 16 */
	TEST_CHECK(!name_ifname_valid(""));
	TEST_CHECK(!name_ifname_valid("a/b"));
	TEST_CHECK(!name_ifname_valid("a:b"));
	TEST_CHECK(!name_ifname_valid("a b"));
	TEST_CHECK(!name_ifname_valid("."));
	TEST_CHECK(!name_ifname_valid(".."));
	TEST_CHECK(name_check_module("mlx5_ib") == NULL);
	TEST_CHECK(name_check_module("ib-core") == NULL);
	TEST_CHECK(name_check_module("mlx5 ib") != NULL);
	TEST_CHECK(name_check_module("") != NULL);
	TEST_CHECK(name_check_option("vers=3") == NULL);
	TEST_CHECK(name_check_option("rsize=1048576") == NULL);
	TEST_CHECK(name_check_option("") != NULL);
	TEST_STREQ(name_check_option("a,b"), "one option per entry: write [a, b], not \"a,b\"");
	TEST_CHECK(name_check_option("a b") != NULL);
	TEST_CHECK(name_check_option("a#b") != NULL);

}

/*
 * The rules the nfs step re-checked before it had the loader's word for
 * them: a mount option or export option with parentheses, a port= that is
 * not a port.  (Mount point "/" is refused through the schema, test_spec.)
 */
static void test_options(void)
{
	TEST_STREQ(name_check_option("sec=(krb5)"), "options cannot hold '(' or ')'");
	TEST_STREQ(name_check_option("rw)"), "options cannot hold '(' or ')'");
	TEST_CHECK(name_check_option("no_subtree_check") == NULL);
	TEST_CHECK(name_check_mount_option("port=2049") == NULL);
	TEST_CHECK(name_check_mount_option("port=0") == NULL);
	TEST_CHECK(name_check_mount_option("port=65535") == NULL);
	TEST_CHECK(name_check_mount_option("portmap") == NULL);
	TEST_CHECK(name_check_mount_option("hard") == NULL);
	TEST_STREQ(name_check_mount_option("port=65536"), "port= needs a number from 0 to 65535");
	TEST_STREQ(name_check_mount_option("port="), "port= needs a number from 0 to 65535");
	TEST_STREQ(name_check_mount_option("port=x"), "port= needs a number from 0 to 65535");
	TEST_STREQ(name_check_mount_option("port=99999999999999999999"),
		   "port= needs a number from 0 to 65535");
	TEST_STREQ(name_check_mount_option("a,b"), "one option per entry: write [a, b], not \"a,b\"");
	/* the same port rule in URLs and host:port (moved here from spec.c) */
	TEST_CHECK(name_check_endpoint("https://10.0.0.4:2379") == NULL);
	TEST_CHECK(name_check_endpoint("http://etcd1:65535/") == NULL);
	TEST_CHECK(name_check_endpoint("http://[fd00::1]:2379") == NULL);
	TEST_CHECK(name_check_endpoint("http://etcd1") == NULL);
	TEST_STREQ(name_check_endpoint("http://etcd1:0"), "the port after ':' must be a number from 1 to 65535");
	TEST_STREQ(name_check_endpoint("http://etcd1:65536"), "the port after ':' must be a number from 1 to 65535");
	TEST_STREQ(name_check_endpoint("http://etcd1:"), "the port after ':' must be a number from 1 to 65535");
	TEST_STREQ(name_check_endpoint("http://etcd1:+23"), "the port after ':' must be a number from 1 to 65535");
	TEST_STREQ(name_check_endpoint("http://etcd1:123456"), "the port after ':' must be a number from 1 to 65535");
	TEST_CHECK(name_check_endpoint("http://etcd1:2379/v3") != NULL);
	TEST_CHECK(name_check_endpoint("ftp://etcd1") != NULL);
	TEST_CHECK(name_check_host_port("head1") == NULL);
	TEST_CHECK(name_check_host_port("10.0.0.4:6817") == NULL);
	TEST_STREQ(name_check_host_port("head1:0"), "expected a port from 1 to 65535 after ':'");
	TEST_STREQ(name_check_host_port("head1:"), "expected a port from 1 to 65535 after ':'");
	TEST_STREQ(name_check_host_port("head1:-1"), "expected a port from 1 to 65535 after ':'");
	TEST_STREQ(name_check_host_port("head1:99999"), "expected a port from 1 to 65535 after ':'");
	TEST_STREQ(name_check_host_port(":6817"), "expected a host like head1 or 10.0.0.4:6817");
	TEST_CHECK(name_check_feature("hbv4") == NULL);
	TEST_CHECK(name_check_feature("a b") != NULL);
}

/* Names machines call themselves (peer records): RFC 1123 plus '_'. */
static void test_self_names(void)
{
	TEST_CHECK(name_host_valid("vmss-hpc_000001.internal", NAME_UNDERSCORE));
	TEST_CHECK(name_host_valid("node1", NAME_UNDERSCORE));
	TEST_CHECK(!name_hostname_valid("vmss-hpc_000001.internal"));
	TEST_CHECK(!name_host_valid("", NAME_UNDERSCORE));
	TEST_CHECK(!name_host_valid(".", NAME_UNDERSCORE));
	TEST_CHECK(!name_host_valid("a..b", NAME_UNDERSCORE));
	TEST_CHECK(!name_host_valid("a/b", NAME_UNDERSCORE));
	TEST_CHECK(!name_host_valid("-rf", NAME_UNDERSCORE));
	TEST_CHECK(!name_host_valid("a*", NAME_UNDERSCORE));
	TEST_CHECK(!name_host_valid("a_*", NAME_WILD));
	TEST_CHECK(name_host_valid("a_*", NAME_WILD | NAME_UNDERSCORE));

	/* user names from a record line: n bytes, no NUL inside */
	TEST_CHECK(name_user_validn("alice trailing", 5));
	TEST_CHECK(!name_user_validn("al\0ce", 5));
	TEST_CHECK(!name_user_validn("1000", 4));
	TEST_CHECK(name_user_validn("u1000", 5));
	TEST_CHECK(!name_user_validn("", 0));

	TEST_CHECK(name_ip_valid("10.0.0.1"));
	TEST_CHECK(name_ip_valid("fd00::7"));
	TEST_CHECK(!name_ip_valid("10.0.0"));
	TEST_CHECK(!name_ip_valid("node1"));
	TEST_STREQ(name_check_ifname("ib0/x"), "1 to 15 characters, no '/', ':' or spaces");
	TEST_CHECK(name_check_ifname("ib0") == NULL);
}

static void test_url(void)
{
	TEST_CHECK(name_check_url("http://169.254.169.254/metadata/scheduledevents?api-version=2020-07-01") == NULL);
	TEST_CHECK(name_check_url("https://h") == NULL);
	TEST_STREQ(name_check_url("http://a"), "expected http:// or https:// and a host");
	TEST_STREQ(name_check_url("ftp://host/x"), "expected http:// or https:// and a host");
	TEST_STREQ(name_check_url("http://h/a b"),
		   "a URL cannot hold spaces, quotes, '\\' or control characters");
	TEST_STREQ(name_check_url("http://h/\"x"),
		   "a URL cannot hold spaces, quotes, '\\' or control characters");
	char longu[1100];
	memcpy(longu, "http://", 7);
	memset(longu + 7, 'a', 1018);
	longu[1025] = '\0';
	TEST_STREQ(name_check_url(longu), "a URL is at most 1024 characters");
	longu[1024] = '\0';
	TEST_CHECK(name_check_url(longu) == NULL);
}

/* What a record may not be called (admit.c): localhost, the spec's hosts, static /etc/hosts. */
static void test_reserved(void)
{
	char addr[64], *h;

	TEST_CHECK(name_is_localhost("localhost"));
	TEST_CHECK(name_is_localhost("LOCALHOST"));
	TEST_CHECK(name_is_localhost("ip6-localhost"));
	TEST_CHECK(name_is_localhost("IP6-AllNodes"));
	TEST_CHECK(name_is_localhost("BroadcastHost"));
	TEST_CHECK(!name_is_localhost(""));
	TEST_CHECK(name_is_localhost("localhost.localdomain"));
	TEST_CHECK(name_is_localhost("a.localhost"));
	TEST_CHECK(!name_is_localhost("localhost1"));
	TEST_CHECK(!name_is_localhost("node1"));
	TEST_CHECK(name_same_host("nfs01", "NFS01"));
	TEST_CHECK(name_same_host("nfs01", "nfs01.example.com"));
	TEST_CHECK(name_same_host("nfs01.example.com", "nfs01"));
	TEST_CHECK(!name_same_host("nfs0", "nfs01.example.com"));
	TEST_CHECK(!name_same_host("nfs01.a.com", "nfs01.b.com"));
	TEST_CHECK(!name_same_host("node1", "node10"));
	h = name_url_host("https://etcd-1.example.com:2379");
	TEST_STREQ(h, "etcd-1.example.com");
	free(h);
	h = name_url_host("http://[fd00::5]:2379/x");
	TEST_STREQ(h, "fd00::5");
	free(h);
	h = name_url_host("http://metadata01/metadata/scheduledevents?x=1");
	TEST_STREQ(h, "metadata01");
	free(h);
	TEST_CHECK(name_url_host("no-scheme") == NULL);
	TEST_CHECK(name_hosts_lookup("127.0.0.1 localhost\n10.9.9.9 lic.example.com lic # x\n", "lic", addr,
				     sizeof(addr)));
	TEST_STREQ(addr, "10.9.9.9");
	TEST_CHECK(!name_hosts_lookup("# 10.1.1.1 gone\n10.0.0.2 node2\n", "gone", addr, sizeof(addr)));
	TEST_CHECK(!name_hosts_lookup("10.0.0.2 node2\n", "node20", addr, sizeof(addr)));
}

int main(void)
{
	test_reserved();
	test_paths();
	test_rules();
	test_options();
	test_self_names();
	test_url();
	TEST_EXIT();
}
