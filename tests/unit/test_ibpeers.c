/* SPDX-License-Identifier: MIT */
/*
 * lib/ib/peers.c: rdma_cm to the peers that follow this node, through the
 * real verbs helper (hpcinit-rdma-probe) run by the child engine.  This
 * machine has no RDMA hardware: the helper's fixture ops (a build configured
 * --enable-test-backends; else SKIP) read how each peer's address and route
 * resolve from the fake root's /etc/hpcinit/fake-rdma.  What is checked is
 * peers.c's: which peers (the ring after this node, 3 at most, never
 * itself), which address (IPoIB or the cluster address by link layer), and
 * what each answer becomes (a detail, or a finding as severe as
 * rdma.required says).
 */
#include "config.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/ib/peers.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-ibpeers.XXXXXX";

static void peers_make(struct peerset *ps, size_t n, size_t self)
{
	ps->n = n;
	ps->v = xcalloc(n, sizeof(*ps->v));
	for (size_t i = 0; i < n; i++) {
		ps->v[i].hostname = xasprintf("node%02zu", i + 1);
		ps->v[i].addr = xasprintf("10.0.0.%zu", i + 1);
		ps->v[i].ipoib_addr = xasprintf("172.16.1.%zu", i + 1);
		ps->v[i].self = i == self;
	}
}

static void peers_drop(struct peerset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		free(ps->v[i].hostname);
		free(ps->v[i].addr);
		free(ps->v[i].ipoib_addr);
	}
	free(ps->v);
	memset(ps, 0, sizeof(*ps));
}

static bool said(const struct report *r, const char *text)
{
	if (strstr(sb_str(&r->details), text))
		return true;
	fprintf(stderr, "details lack \"%s\":\n%s", text, sb_str(&r->details));
	return false;
}

static unsigned findings(const struct report *r, const char *tag, enum rstatus sev)
{
	unsigned n = 0;

	for (size_t i = 0; i < r->n_findings; i++)
		n += strcmp(r->findings[i].tag, tag) == 0 && r->findings[i].sev == sev;
	return n;
}

/* Has this helper fixture ops?  (It lists "backend FAKE" under a root with the fixture file.) */
static bool fixture_ops(const struct ctx *c)
{
	struct strbuf out = STRBUF_INIT;
	bool yes = probe_helper_ask(c, "list", NULL, 10000, &out) == 0 && strstr(sb_str(&out), "backend FAKE");

	sb_free(&out);
	return yes;
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	struct peerset ps = { 0 };
	struct report r;
	unsigned checked = 99, good = 99;
	char ib0[] = "ib0", empty[] = "/tmp/hpcinit-test-ibpeers-nohelper.XXXXXX";
	char *old;

	if (!mkdtemp(root) || !mkdtemp(empty))
		return 1;
	c.deadline_ms = now_ms() + 120000;
	test_put(root, "/etc/hpcinit/fake-rdma",
		 "peer 172.16.1.4 mlx5_ib0\n"
		 "peer 172.16.1.5 mlx5_ib0 ETIMEDOUT\n"
		 "peer 172.16.1.1 EHOSTUNREACH\n"
		 "peer 172.16.1.2 mlx5_ib0\n"
		 "peer 10.0.0.4 rxe0\n"
		 "peer 10.0.0.1 hang\n");
	if (!fixture_ops(&c)) {
		printf("SKIP: hpcinit-rdma-probe has no fixture ops (configure --enable-test-backends)\n");
		test_rm_rf(root);
		rmdir(empty);
		return 77;
	}
	s.rdma.present = true;
	s.rdma.required = true;
	s.rdma.link_layer = LINK_INFINIBAND;
	s.rdma.ipoib = ib0;
	s.rdma.open_timeout_ms = 10000;

	/* nothing to check: no rdma section, or no peer but this node */
	peers_make(&ps, 5, 2);
	s.rdma.present = false;
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_OK);
	TEST_INTEQ(checked, 0);
	TEST_INTEQ(r.details.len, 0);
	report_free(&r);
	s.rdma.present = true;
	peers_drop(&ps);
	peers_make(&ps, 1, 0);
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_OK);
	TEST_INTEQ(checked, 0);
	report_free(&r);
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, NULL, &checked, &good), ST_OK);
	report_free(&r);
	peers_drop(&ps);

	/* no helper installed: said, not a failure */
	peers_make(&ps, 5, 2);
	old = xstrdup(getenv("HPCINIT_LIBEXEC_DIR") ? getenv("HPCINIT_LIBEXEC_DIR") : "");
	setenv("HPCINIT_LIBEXEC_DIR", empty, 1);
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_OK);
	TEST_CHECK(said(&r, "rdma_cm to peers: not checked (hpcinit-rdma-probe is not installed)"));
	TEST_INTEQ(checked, 0);
	report_free(&r);
	if (*old)
		setenv("HPCINIT_LIBEXEC_DIR", old, 1);
	else
		unsetenv("HPCINIT_LIBEXEC_DIR");
	free(old);

	/* this node is node03: node04, node05 and (round the ring) node01; node02 not this run */
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_FAILED);
	TEST_INTEQ(checked, 3);
	TEST_INTEQ(good, 1);
	TEST_CHECK(said(&r, "rdma_cm to node04: 172.16.1.4 resolves (address and route) via mlx5_ib0 in "));
	TEST_CHECK(said(&r, "rdma_cm to node05: rdma_resolve_route(172.16.1.5) failed: ETIMEDOUT (Connection timed out)"));
	TEST_CHECK(said(&r, "rdma_cm to node01: rdma_resolve_addr(172.16.1.1) failed: EHOSTUNREACH (No route to host)"));
	TEST_CHECK(strstr(sb_str(&r.details), "node02") == NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "node03") == NULL);
	TEST_INTEQ(findings(&r, "rdma.peer-resolve", ST_FAILED), 2);
	report_free(&r);

	/* rdma.required false: the same failures are degraded */
	s.rdma.required = false;
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_DEGRADED);
	TEST_INTEQ(findings(&r, "rdma.peer-resolve", ST_DEGRADED), 2);
	report_free(&r);
	s.rdma.required = true;

	/* a peer publishing no IPoIB address is named and still takes its place among the 3 */
	free(ps.v[3].ipoib_addr);
	ps.v[3].ipoib_addr = NULL;
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_FAILED);
	TEST_CHECK(said(&r, "rdma_cm to node04: not checked: it publishes no IPoIB address\n"));
	TEST_INTEQ(checked, 2);
	TEST_INTEQ(good, 0);
	TEST_CHECK(strstr(sb_str(&r.details), "node02") == NULL);
	report_free(&r);
	/* rdma.ipoib not set on InfiniBand: no address to try for any of them */
	s.rdma.ipoib = NULL;
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_OK);
	TEST_CHECK(said(&r, "rdma_cm to node05: not checked: it publishes no IPoIB address (rdma.ipoib is not set)"));
	TEST_INTEQ(checked, 0);
	report_free(&r);

	/* Ethernet (RoCE, rxe): the cluster address; a hang ends at rdma.open_timeout, named */
	s.rdma.link_layer = LINK_ETHERNET;
	s.rdma.open_timeout_ms = 500;
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_FAILED);
	TEST_INTEQ(checked, 3);
	TEST_INTEQ(good, 1);
	TEST_CHECK(said(&r, "rdma_cm to node04: 10.0.0.4 resolves (address and route) via rxe0"));
	TEST_CHECK(said(&r, "rdma_cm to node01: rdma_resolve_addr(10.0.0.1) did not complete within 500 ms"));
	/* an address the fixture does not name: rdma_cm's EADDRNOTAVAIL */
	TEST_CHECK(said(&r, "rdma_cm to node05: rdma_resolve_addr(10.0.0.5) failed: EADDRNOTAVAIL"));
	report_free(&r);

	/* this node not among the peers (it left): the ring starts at the first */
	ps.v[2].self = false;
	s.rdma.link_layer = LINK_INFINIBAND;
	s.rdma.ipoib = ib0;
	report_init(&r);
	TEST_INTEQ(ib_check_peers(&c, &r, &ps, &checked, &good), ST_FAILED);
	TEST_CHECK(said(&r, "rdma_cm to node02: 172.16.1.2 resolves"));
	TEST_CHECK(said(&r, "rdma_cm to node03:"));
	TEST_CHECK(strstr(sb_str(&r.details), "node01") == NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "node05") == NULL);
	report_free(&r);

	peers_drop(&ps);
	test_rm_rf(root);
	rmdir(empty);
	TEST_EXIT();
}
