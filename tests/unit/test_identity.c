/* SPDX-License-Identifier: MIT */
/*
 * lib/ib/identity.c: this node's fabric identity.  Which devices are the
 * fabric; the identity read from a fake sysfs under a temporary root (device
 * GUIDs, the larger P_Key); the placement group asked of a stand-in for
 * Azure's metadata service (IMDS: a loopback HTTP server in a child, which
 * answers only requests carrying "Metadata: true"); InfiniBand domains.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../lib/ib/identity.c"
#include "test.h"
#include "testfs.h"
#include "imds-standin.h"

static char root[] = "/tmp/hpcinit-test-identity.XXXXXX";

/* ---- which devices are the fabric ----------------------------------------------------- */

static struct ib_dev dev(const char *name, enum ib_kind kind, const char *ll)
{
	struct ib_dev d;

	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "%s", name);
	d.kind = kind;
	d.n_ports = 1;
	snprintf(d.ports[0].link_layer, sizeof(d.ports[0].link_layer), "%s", ll);
	return d;
}

static void test_candidate(void)
{
	struct spec_rdma s = { .present = true, .link_layer = LINK_INFINIBAND, .software = SOFT_AUTO };
	struct ib_dev hca = dev("mlx5_ib0", IB_KIND_HCA, "InfiniBand");
	struct ib_dev roce = dev("mlx5_0", IB_KIND_ROCE, "Ethernet");
	struct ib_dev vf = dev("mlx5_an0", IB_KIND_AN_VF, "Ethernet");
	struct ib_dev rxe = dev("rxe0", IB_KIND_SOFT, "Ethernet");
	struct ib_dev none = dev("mlx5_ib9", IB_KIND_HCA, "InfiniBand");
	char glob[] = "mlx5_ib*";

	/* infiniband: the HCA only */
	TEST_CHECK(ib_fabric_candidate(&s, &hca));
	TEST_CHECK(!ib_fabric_candidate(&s, &roce));
	TEST_CHECK(!ib_fabric_candidate(&s, &vf));
	TEST_CHECK(!ib_fabric_candidate(&s, &rxe));     /* auto: no software device for infiniband */
	none.n_ports = 0;                               /* no port: no link layer to match */
	TEST_CHECK(!ib_fabric_candidate(&s, &none));
	/* ethernet: RoCE, and software devices under auto, never the accelerated-networking VF */
	s.link_layer = LINK_ETHERNET;
	TEST_CHECK(!ib_fabric_candidate(&s, &hca));
	TEST_CHECK(ib_fabric_candidate(&s, &roce));
	TEST_CHECK(!ib_fabric_candidate(&s, &vf));
	TEST_CHECK(ib_fabric_candidate(&s, &rxe));
	s.software = SOFT_DENY;
	TEST_CHECK(!ib_fabric_candidate(&s, &rxe));
	/* any: both kinds of hardware; software allowed explicitly even for infiniband's spec */
	s.link_layer = LINK_ANY;
	s.software = SOFT_AUTO;
	TEST_CHECK(ib_fabric_candidate(&s, &hca) && ib_fabric_candidate(&s, &roce));
	TEST_CHECK(!ib_fabric_candidate(&s, &vf));
	s.link_layer = LINK_INFINIBAND;
	s.software = SOFT_ALLOW;
	rxe.ports[0].link_layer[0] = '\0';
	snprintf(rxe.ports[0].link_layer, sizeof(rxe.ports[0].link_layer), "InfiniBand");
	TEST_CHECK(ib_fabric_candidate(&s, &rxe));
	/* the devices glob */
	s.devices = glob;
	TEST_CHECK(ib_fabric_candidate(&s, &hca));
	TEST_CHECK(!ib_fabric_candidate(&s, &rxe));
	/* a second port of the right link layer is enough */
	s.devices = NULL;
	s.software = SOFT_AUTO;
	roce.n_ports = 2;
	snprintf(roce.ports[1].link_layer, sizeof(roce.ports[1].link_layer), "InfiniBand");
	TEST_CHECK(ib_fabric_candidate(&s, &roce));
}

/* ---- the identity from sysfs and IMDS ------------------------------------------------- */

static void put_port(const char *devname, unsigned port, const char *ll, const char *gid,
		     const char *const *pkeys)
{
	char rel[256];

	snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/node_type", devname);
	test_put(root, rel, "1: CA\n");
	snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports/%u/link_layer", devname, port);
	test_put(root, rel, ll);
	snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports/%u/state", devname, port);
	test_put(root, rel, "4: ACTIVE\n");
	if (gid) {
		snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports/%u/gids/0", devname, port);
		test_put(root, rel, gid);
	}
	for (size_t i = 0; pkeys && pkeys[i]; i++) {
		snprintf(rel, sizeof(rel), "/sys/class/infiniband/%s/ports/%u/pkeys/%zu", devname, port, i);
		test_put(root, rel, pkeys[i]);
	}
}

static void peer_fields_free(struct peer *p)
{
	free(p->fabric);
	free(p->pkey);
	free(p->placement_group);
	memset(p, 0, sizeof(*p));
}

static void test_node_identity(void)
{
	static const char *const pk0[] = { "0x7fff\n", "0x8014\n", "0x0000\n", NULL };
	static const char *const pk1[] = { "0x800b\n", "0xffff\n", NULL };
	static const char *const answers[] = {
		"HTTP/1.1 200 OK\r\n\r\npg-0123abc\r\n",
		"HTTP/1.1 200 OK\r\n\r\nnot an id!\r\n",
		"HTTP/1.1 503 Service Unavailable\r\n\r\n",
	};
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root };
	struct peer p = { 0 };
	struct report r;
	char url[256];
	pid_t pid;

	/* no rdma section: nothing, not even sysfs read */
	report_init(&r);
	rdma_node_identity(&c, &r, &p);
	TEST_CHECK(!p.fabric && !p.pkey && !p.placement_group);

	/* an HCA with two P_Keys (the larger is the tenant's), a RoCE NIC, a name that cannot be carried */
	put_port("mlx5_ib0", 1, "InfiniBand\n", "fe80:0000:0000:0000:0015:5dff:fe33:ee41\n", pk0);
	put_port("mlx5_0", 1, "Ethernet\n", "fe80:0000:0000:0000:0a0b:0c0d:0e0f:1011\n", pk1);
	put_port("bad=name", 1, "InfiniBand\n", NULL, pk1);
	s.rdma.present = true;
	s.rdma.link_layer = LINK_INFINIBAND;
	rdma_node_identity(&c, &r, &p);
	TEST_STREQ(p.fabric, "mlx5_ib0=0015:5dff:fe33:ee41");
	TEST_STREQ(p.pkey, "0x8014");
	TEST_CHECK(p.placement_group == NULL);          /* no IMDS URL: not asked */
	peer_fields_free(&p);

	/* any link layer: both carried (sorted by name); the RoCE NIC's P_Keys are not InfiniBand's */
	s.rdma.link_layer = LINK_ANY;
	rdma_node_identity(&c, &r, &p);
	TEST_STREQ(p.fabric, "mlx5_0=0a0b:0c0d:0e0f:1011,mlx5_ib0=0015:5dff:fe33:ee41");
	TEST_STREQ(p.pkey, "0x8014");
	peer_fields_free(&p);

	/* a second HCA without a GID: "-" for its GUID; its larger P_Key wins */
	put_port("mlx5_ib1", 1, "InfiniBand\n", NULL, (const char *const[]){ "0x9001\n", NULL });
	s.rdma.link_layer = LINK_INFINIBAND;
	rdma_node_identity(&c, &r, &p);
	TEST_STREQ(p.fabric, "mlx5_ib0=0015:5dff:fe33:ee41,mlx5_ib1=-");
	TEST_STREQ(p.pkey, "0x9001");
	peer_fields_free(&p);
	report_free(&r);

	/* the placement group from IMDS: taken when it is an identifier, said and ignored when not
	 * (a check: it keeps no answer, so each call asks; md_fact's keeping is test_metadata's) */
	c.mode = RUN_CHECK;
	pid = imds_start(answers, 3, url, sizeof(url));
	s.rdma.placement_group = true;
	s.rdma.imds_url = url;
	report_init(&r);
	rdma_node_identity(&c, &r, &p);
	TEST_STREQ(p.placement_group, "pg-0123abc");
	TEST_INTEQ(r.details.len, 0);
	peer_fields_free(&p);
	rdma_node_identity(&c, &r, &p);
	TEST_CHECK(p.placement_group == NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "answered \"not an id!\", not an identifier: ignored") != NULL);
	TEST_STREQ(p.pkey, "0x9001");
	peer_fields_free(&p);
	rdma_node_identity(&c, &r, &p);
	TEST_CHECK(p.placement_group == NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "placement group: not known (") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "503 Service Unavailable); the InfiniBand domain is the "
			  "P_Key 0x9001 alone") != NULL);
	peer_fields_free(&p);
	imds_stop(pid);
	report_free(&r);

	/* without an InfiniBand P_Key IMDS is not asked (the URL now refuses: a question would show) */
	s.rdma.link_layer = LINK_ETHERNET;
	report_init(&r);
	rdma_node_identity(&c, &r, &p);
	TEST_STREQ(p.fabric, "mlx5_0=0a0b:0c0d:0e0f:1011");
	TEST_CHECK(p.pkey == NULL && p.placement_group == NULL);
	TEST_INTEQ(r.details.len, 0);
	peer_fields_free(&p);
	report_free(&r);
}

/* ---- InfiniBand domains ---------------------------------------------------------------- */

static void test_domains(void)
{
	struct peerset ps = { 0 };
	struct strlist doms = { 0 };
	unsigned counts[5] = { 9, 9, 9, 9, 9 };
	char k1[] = "0x800b", k2[] = "0x8014", pg[] = "pg1";
	char *d;

	ps.n = 5;
	ps.v = xcalloc(5, sizeof(*ps.v));
	ps.v[0].pkey = k1;
	ps.v[1].pkey = k1;
	ps.v[1].placement_group = pg;
	ps.v[2].pkey = NULL;                    /* no identity: no domain */
	ps.v[3].pkey = k2;
	ps.v[4].pkey = k1;

	d = rdma_peer_domain(&ps.v[0]);
	TEST_STREQ(d, "0x800b");
	free(d);
	d = rdma_peer_domain(&ps.v[1]);
	TEST_STREQ(d, "0x800b-pg1");
	free(d);
	TEST_CHECK(rdma_peer_domain(&ps.v[2]) == NULL);

	memset(counts, 0, sizeof(counts));
	rdma_domains(&ps, &doms, counts);
	TEST_INTEQ(doms.n, 3);
	if (doms.n == 3) {                      /* in peers' order, each once */
		TEST_STREQ(doms.v[0], "0x800b");
		TEST_STREQ(doms.v[1], "0x800b-pg1");
		TEST_STREQ(doms.v[2], "0x8014");
	}
	TEST_INTEQ(counts[0], 2);
	TEST_INTEQ(counts[1], 1);
	TEST_INTEQ(counts[2], 1);
	strlist_free(&doms);
	/* no counts wanted, no peers */
	rdma_domains(&ps, &doms, NULL);
	TEST_INTEQ(doms.n, 3);
	strlist_free(&doms);
	rdma_domains(NULL, &doms, NULL);
	TEST_INTEQ(doms.n, 0);
	/* each peer's domain, or none */
	{
		size_t idx[5];

		rdma_domains_index(&ps, &doms, NULL, idx);
		TEST_CHECK(idx[0] == 0 && idx[1] == 1 && idx[2] == RDMA_NO_DOMAIN && idx[3] == 2 && idx[4] == 0);
		strlist_free(&doms);
	}
	free(ps.v);
	/* 6,000 peers, 3,000 domains of two each (the table grows past many collisions): one pass */
	{
		size_t n = 6000, *idx = xcalloc(n, sizeof(*idx));
		unsigned *cnt = xcalloc(n, sizeof(*cnt));
		bool ok = true;

		ps.n = n;
		ps.v = xcalloc(n, sizeof(*ps.v));
		for (size_t i = 0; i < n; i++) {
			ps.v[i].pkey = k1;
			ps.v[i].placement_group = xasprintf("pg%zu", i % 3000);
		}
		rdma_domains_index(&ps, &doms, cnt, idx);
		TEST_INTEQ(doms.n, 3000);
		for (size_t i = 0; i < n; i++) {
			char *want = xasprintf("0x800b-pg%zu", i % 3000);

			ok = ok && idx[i] == i % 3000 && cnt[idx[i]] == 2 && strcmp(doms.v[idx[i]], want) == 0;
			free(want);
			free(ps.v[i].placement_group);
		}
		TEST_CHECK(ok);
		strlist_free(&doms);
		free(ps.v);
		free(idx);
		free(cnt);
	}
}

int main(void)
{
	if (!mkdtemp(root))
		return 1;
	signal(SIGPIPE, SIG_IGN);
	test_candidate();
	test_node_identity();
	test_domains();
	test_rm_rf(root);
	TEST_EXIT();
}
