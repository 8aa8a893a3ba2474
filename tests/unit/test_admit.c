/* SPDX-License-Identifier: MIT */
/*
 * What a peer must be to be admitted (modules/discovery/admit.c, and the
 * duplicate addresses of discovery.c), through whole runs of the shared
 * method on a fake root and through admit_found, the backstop every
 * method's peers pass.
 */
#include "testdisc.h"

static void test_dups(void)
{
	struct peerset s = { 0 };
	struct report notes;
	const char *names[] = { "a", "b", "c", "d" };
	const char *addrs[] = { "10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.1" };
	int64_t upd[] = { 100, 100, 300, 200 };

	report_init(&notes);
	for (int i = 0; i < 4; i++) {
		struct peer *p = peerset_add(&s);

		p->hostname = xstrdup(names[i]);
		p->addr = xstrdup(addrs[i]);
		p->updated = upd[i];
	}
	drop_duplicate_addrs(&s, &notes);
	TEST_INTEQ(s.n, 2);
	TEST_STREQ(s.v[0].hostname, "b");
	TEST_STREQ(s.v[1].hostname, "c");          /* the newest claim of 10.0.0.1 */
	TEST_CHECK(strstr(sb_str(&notes.details), "keeping c") != NULL);
	for (size_t i = 0; i < s.n; i++)
		peer_clear(&s.v[i]);
	free(s.v);
	report_free(&notes);
}


/*
 * What a record writer cannot do (issue 13): put an address outside
 * cluster.network or an IPoIB address outside the IPoIB network into use,
 * take this node's name (in another case), use a foreign name, or share a
 * name with another record.
 */
static void test_admit(struct ctx *c, struct spec *spec)
{
	static char ib0[] = "ib0";
	const struct peer *p;
	struct report rep;

	spec->discovery.expect = 1;
	spec->discovery.wait_ms = 0;
	unplant("future");
	unplant("nearfuture");
	unplant("node10");

	/* the spec names no IPoIB interface: records' IPoIB addresses are not used */
	plant_ipoib("node2", "10.0.0.2", "172.16.0.2");
	TEST_INTEQ(run(c, &rep), 0);
	p = peer_named(c, "node2");
	TEST_CHECK(p && p->ipoib_addr == NULL);
	report_free(&rep);

	/* rdma.ipoib named, its subnet 172.16.0.0/16: inside kept, outside dropped */
	spec->rdma.present = true;
	spec->rdma.ipoib = ib0;
	setenv("HPCINIT_IPOIB_ADDRESS", "172.16.0.1/16", 1);
	plant_ipoib("node3", "10.0.0.3", "192.0.2.66");
	TEST_INTEQ(run(c, &rep), 0);
	p = peer_named(c, "node2");
	TEST_CHECK(p && p->ipoib_addr && strcmp(p->ipoib_addr, "172.16.0.2") == 0);
	p = peer_named(c, "node3");
	TEST_CHECK(p && p->ipoib_addr == NULL);
	TEST_CHECK(cluster_finding(&rep, "discovery.record.ipoib-outside"));
	TEST_CHECK(detail(&rep, "node3: IPoIB address 192.0.2.66 is outside this node's IPoIB "
			  "network 172.16.0.0/16; ignored"));
	p = peer_named(c, "node1");
	TEST_CHECK(p && p->self && p->ipoib_addr && strcmp(p->ipoib_addr, "172.16.0.1") == 0);
	report_free(&rep);
	unsetenv("HPCINIT_IPOIB_ADDRESS");
	spec->rdma.present = false;
	spec->rdma.ipoib = NULL;
	unplant("node3");

	/* an address outside cluster.network */
	plant_ipoib("node4", "192.168.7.4", NULL);
	/* this node's name in another case, at another address */
	plant_ipoib("NODE1", "10.0.0.41", NULL);
	/* a foreign name, and a dotted name shadowing node2's short name */
	plant_ipoib("node5.attacker.example", "10.0.0.5", NULL);
	plant_ipoib("node2.glo", "10.0.0.42", NULL);
	/* two records for one name */
	plant_ipoib("node7", "10.0.0.7", NULL);
	plant_ipoib("Node7", "10.0.0.17", NULL);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(rep.status != ST_DEGRADED && report_problems(&rep) == 0);   /* others' records */
	TEST_CHECK(detail(&rep, "record node4.rec: address 192.168.7.4 is outside cluster.network "
			  "10.0.0.0/24; rejected"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.outside-network"));
	TEST_CHECK(detail(&rep, "a record for NODE1 (10.0.0.41) claims this node's name node1"));
	TEST_CHECK(cluster_finding(&rep, "discovery.name.claims-self"));
	TEST_CHECK(detail(&rep, "record node5.attacker.example.rec: hostname node5.attacker.example "
			  "is not a short name like this node's (node1); rejected"));
	TEST_CHECK(detail(&rep, "record node2.glo.rec: hostname node2.glo is not a short name"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.foreign-name"));
	TEST_CHECK(detail(&rep, "name Node7 is claimed by 2 records"));
	TEST_CHECK(cluster_finding(&rep, "discovery.name.contested"));
	TEST_CHECK(!peer_named(c, "node4") && !peer_named(c, "NODE1") &&
		   !peer_named(c, "node5.attacker.example") && !peer_named(c, "node2.glo") &&
		   !peer_named(c, "node7") && !peer_named(c, "Node7"));
	p = peer_named(c, "node1");
	TEST_CHECK(p && p->self && strcmp(p->addr, "10.0.0.1") == 0);
	TEST_CHECK(peer_named(c, "node2") != NULL);
	TEST_INTEQ(c->out->peers ? c->out->peers->n : 0, 2);
	report_free(&rep);
	/* once one of the two leaves, the other is used */
	unplant("Node7");
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(peer_named(c, "node7") != NULL);
	report_free(&rep);
	unplant("node4");
	unplant("NODE1");
	unplant("node5.attacker.example");
	unplant("node2.glo");
	unplant("node7");

	/* a node named in a domain: names in that domain (any case), nothing else */
	c->hostname = "node1.glo.internal";
	plant_ipoib("node8.GLO.Internal", "10.0.0.8", NULL);
	plant_ipoib("node9", "10.0.0.9", NULL);
	plant_ipoib("node6.glo.internal.attacker.example", "10.0.0.6", NULL);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(peer_named(c, "node8.GLO.Internal") != NULL);
	TEST_CHECK(!peer_named(c, "node9") && !peer_named(c, "node2"));
	TEST_CHECK(!peer_named(c, "node6.glo.internal.attacker.example"));
	TEST_CHECK(detail(&rep, "record node9.rec: hostname node9 is not a name in this cluster's "
			  "domain glo.internal; rejected"));
	report_free(&rep);
	unplant("node8.GLO.Internal");
	unplant("node9");
	unplant("node6.glo.internal.attacker.example");
	unplant("node1.glo.internal");
	c->hostname = "node1";
}

/* The backstop every method's peers pass (etcd's included): admit_found. */
static void test_admit_found(struct ctx *c)
{
	struct disc_run run = { .c = c };
	const char *names[] = { "node2", "node3.attacker.example", "node4" };
	const char *addrs[] = { "10.0.0.2", "10.0.0.3", "192.168.0.4" };

	report_init(&run.notes);
	run.self.hostname = xstrdup("node1");
	admit_init(&run.admit, c, &run.self);
	for (int pass = 0; pass < 2; pass++) {
		run.admit.check_names = pass == 0;
		for (int i = 0; i < 3; i++) {
			struct peer *p = peerset_add(&run.found);

			p->hostname = xstrdup(names[i]);
			p->addr = xstrdup(addrs[i]);
		}
		admit_found(&run);
		TEST_INTEQ(run.found.n, pass == 0 ? 1 : 2);
		TEST_STREQ(run.found.v[0].hostname, "node2");
		if (pass == 1 && run.found.n == 2)
			TEST_STREQ(run.found.v[1].hostname, "node3.attacker.example");
		TEST_CHECK(cluster_finding(&run.notes, "discovery.record.outside-network"));
		TEST_CHECK(pass == 1 || cluster_finding(&run.notes, "discovery.record.foreign-name"));
		disc_run_reset(&run);
	}
	report_free(&run.notes);
	admit_free(&run.admit);
	peer_clear(&run.self);
}

/*
 * Every host the spec names is reserved (spec_host_names): slurm.conf_servers
 * (with a port), an nfs.exports client and an NFS server, while addresses,
 * networks and patterns name no host.  A record claiming one is rejected.
 */
static bool listed(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

static void test_reserved(struct ctx *c, struct spec *spec)
{
	char srv[] = "/srv", client[] = "nfsclient1", data[] = "/data", network[] = "10.0.0.0/24";
	struct spec_nfs_export exports[] = { { .path = srv, .clients = client },
					     { .path = data, .clients = network } };
	struct strlist names = { 0 }, whys = { 0 };
	struct report rep;

	strlist_push(&spec->slurm.conf_servers, "slurmhead:6817");
	strlist_push(&spec->slurm.conf_servers, "10.0.0.4");
	spec->nfs.exports = exports;
	spec->nfs.n_exports = 2;
	spec_host_names(spec, &names, &whys);
	TEST_INTEQ(names.n, 2);
	TEST_CHECK(listed(&names, "slurmhead") && listed(&names, "nfsclient1"));
	TEST_CHECK(listed(&whys, "the slurmctld host slurmhead:6817 (slurm.conf_servers)"));
	TEST_CHECK(listed(&whys, "the NFS client of the export /srv"));
	strlist_free(&names);
	strlist_free(&whys);
	plant_ipoib("slurmhead", "10.0.0.30", NULL);
	plant_ipoib("NFSclient1", "10.0.0.31", NULL);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(!peer_named(c, "slurmhead") && !peer_named(c, "NFSclient1"));
	TEST_CHECK(detail(&rep, "record slurmhead.rec: hostname slurmhead is the slurmctld host "
			  "slurmhead:6817 (slurm.conf_servers) in this node's spec (slurmhead)"));
	TEST_CHECK(detail(&rep, "record NFSclient1.rec: hostname NFSclient1 is the NFS client of the "
			  "export /srv in this node's spec (nfsclient1)"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.reserved-name"));
	TEST_CHECK(report_problems(&rep) == 0);
	report_free(&rep);
	unplant("slurmhead");
	unplant("NFSclient1");
	/* a name this node's /etc/hosts gives another address (outside hpcinit's block) */
	{
		char *etc = xasprintf("%s/etc", c->root), *hosts = xasprintf("%s/etc/hosts", c->root);
		FILE *f;

		mkdir(etc, 0755);
		f = fopen(hosts, "w");
		TEST_CHECK(f != NULL);
		if (f) {
			fputs("10.0.0.99 storage1\n", f);
			fclose(f);
		}
		plant_ipoib("storage1", "10.0.0.32", NULL);
		TEST_INTEQ(run(c, &rep), 0);
		TEST_CHECK(!peer_named(c, "storage1"));
		TEST_CHECK(cluster_finding(&rep, "discovery.record.resolves-elsewhere"));
		report_free(&rep);
		unplant("storage1");
		unlink(hosts);
		free(etc);
		free(hosts);
	}
	strlist_free(&spec->slurm.conf_servers);
	spec->nfs.exports = NULL;
	spec->nfs.n_exports = 0;
}

/*
 * Names equal but for case, far apart in a large set (the clash test's table
 * wraps and probes): both dropped, reported once; a large set without one
 * keeps every peer in its order.
 */
static void test_contested_many(void)
{
	enum { N = 1000 };
	struct peerset s = { 0 };
	struct report notes;

	for (int pass = 0; pass < 2; pass++) {
		report_init(&notes);
		for (int i = 0; i < N; i++) {
			struct peer *p = peerset_add(&s);

			p->hostname = xasprintf("node%d", i);
			p->addr = xasprintf("10.0.%d.%d", i / 250, i % 250 + 1);
		}
		if (pass == 1) {
			struct peer *p = peerset_add(&s);

			p->hostname = xstrdup("NODE3");
			p->addr = xstrdup("10.0.9.9");
		}
		drop_contested_names(&s, &notes);
		TEST_INTEQ(s.n, pass == 0 ? N : N - 1);
		TEST_STREQ(s.v[0].hostname, "node0");
		TEST_STREQ(s.v[3].hostname, pass == 0 ? "node3" : "node4");
		TEST_STREQ(s.v[s.n - 1].hostname, "node999");
		TEST_CHECK(pass == 0 ? notes.n_findings == 0 :
			   cluster_finding(&notes, "discovery.name.contested"));
		TEST_CHECK(pass == 0 || detail(&notes, "name NODE3 is claimed by 2 records"));
		for (size_t i = 0; i < s.n; i++)
			peer_clear(&s.v[i]);
		s.n = 0;
		report_free(&notes);
	}
	free(s.v);
}

int main(void)
{
	struct spec spec = { 0 };
	struct outputs out = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY, .hostname = "node1", .out = &out };
	struct report rep;

	test_dups();
	disc_test_setup(&c, &spec);
	/* a first apply makes the directories and this node's record */
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_CHECK(exists(NODES "/node1.rec"));
	report_free(&rep);
	test_admit(&c, &spec);
	test_admit_found(&c);
	test_reserved(&c, &spec);
	test_contested_many();
	out.peers = peerset_free(out.peers);
	test_rm_rf(root);
	TEST_EXIT();
}
