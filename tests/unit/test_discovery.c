/* SPDX-License-Identifier: MIT */
/*
 * discovery (shared method) on a fake root: records written and read,
 * lease refresh not reported as a change, expiry and pruning, duplicate
 * addresses, each rejection with its own message, directory refusals,
 * check/plan changing nothing, and the expect wait giving up degraded.
 */
#include "config.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../modules/discovery/discovery.c"
#include "../../modules/discovery/admit.c"
#include "../../modules/discovery/node.c"
#include "rendezvous/rendezvous.h"
/*
 * A seam around the record writes of shared.c: every version of a record
 * that lands in the directory is looked at as a peer reading it that
 * moment would (seam_put, below).
 */
static int seam_put(struct rendezvous *rv, struct report *rep, const char *name, const char *data,
		    size_t len);
#define rv_put seam_put
#include "../../modules/discovery/shared.c"
#undef rv_put
#include "../../modules/discovery/static.c"
#include "../../modules/discovery/scan.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-discovery.XXXXXX";
static char s_name[] = "glo", s_dir[] = "/share/.hpcinit", s_key[] = "/etc/hpcinit/cluster.key";
static const char *const KEY = "0123456789abcdef0123456789abcdef";
#define NODES "/share/.hpcinit/glo/nodes"

static char *host(const char *rel)
{
	return fs_rooted(root, rel);
}

static void put(const char *rel, const char *text, mode_t mode)
{
	char *p = host(rel);
	FILE *f = fopen(p, "w");

	fputs(text, f);
	fclose(f);
	chmod(p, mode);
	free(p);
}

static bool exists(const char *rel)
{
	char *p = host(rel);
	struct stat st;
	bool r = lstat(p, &st) == 0;

	free(p);
	return r;
}

/* A signed record for name at addr, updated age seconds ago. */
static void plant(const char *name, const char *addr, int64_t age, const char *key)
{
	struct peer p = { 0 };
	char *rel = xasprintf(NODES "/%s.rec", name), *text;

	p.hostname = xstrdup(name);
	p.addr = xstrdup(addr);
	p.slots = 4;
	p.updated = (int64_t)time(NULL) - age;
	text = record_format(&p, "glo", key, key ? strlen(key) : 0);
	put(rel, text, 0644);
	free(text);
	free(rel);
	peer_clear(&p);
}

static int run(struct ctx *c, struct report *rep)
{
	report_init(rep);
	c->out->peers = peerset_free(c->out->peers);
	return disc_apply(c, rep);
}

static bool has_peer(const struct ctx *c, const char *name)
{
	for (size_t i = 0; c->out->peers && i < c->out->peers->n; i++)
		if (strcmp(c->out->peers->v[i].hostname, name) == 0)
			return true;
	return false;
}

static bool detail(const struct report *rep, const char *text)
{
	if (strstr(sb_str(&rep->details), text))
		return true;
	fprintf(stderr, "details lack \"%s\":\n%s", text, sb_str(&rep->details));
	return false;
}

/* Did the run record a finding with this tag (and severity)? */
static bool finding(const struct report *rep, const char *tag, enum rstatus sev)
{
	for (size_t i = 0; i < rep->n_findings; i++)
		if (strcmp(rep->findings[i].tag, tag) == 0 && rep->findings[i].sev == sev)
			return true;
	fprintf(stderr, "no finding %s\n", tag);
	return false;
}

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


/* A clock skewed by clock_skew seconds from the real one (the shared directory's). */
static int64_t clock_skew;

static int64_t skewed_now(void)
{
	return (int64_t)time(NULL) + clock_skew;
}

static const struct disc_clock skewed_clock = { skewed_now };

static int64_t record_updated(const char *name)
{
	char *rel = xasprintf(NODES "/%s.rec", name), *hp = host(rel), *text = NULL;
	struct peer p;
	int64_t u = -1;

	if (fs_read_host(hp, 100000, &text, NULL) == 0 &&
	    record_parse(text, strlen(text), "glo", NULL, 0, &p, NULL, 0) == 0) {
		u = p.updated;
		peer_clear(&p);
	}
	free(text);
	free(hp);
	free(rel);
	return u;
}

static int64_t diff_abs(int64_t a, int64_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * Leases with skewed clocks, both ways (issue 13): a node whose clock is
 * ahead prunes no fresh record; a node whose clock is behind stamps its
 * record with the shared directory's clock, so its peers do not prune it;
 * a record dated beyond the skew is rejected and wins no address conflict.
 */
static void test_clock_skew(struct ctx *c, struct spec *spec)
{
	struct report rep;

	spec->discovery.expect = 1;
	spec->discovery.wait_ms = 0;
	disc_clock = &skewed_clock;

	/* this node's clock an hour ahead: node2's fresh record stays */
	plant("node2", "10.0.0.2", 0, KEY);
	clock_skew = 3600;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "node2"));
	TEST_CHECK(exists(NODES "/node2.rec"));
	TEST_CHECK(detail(&rep, "this node's clock is 3600 s ahead of the shared directory's"));
	TEST_CHECK(diff_abs(record_updated("node1"), (int64_t)time(NULL)) <= DISC_CLOCK_SKEW_S);
	report_free(&rep);

	/* an hour behind: fresh records are not "in the future", own record stamped right */
	clock_skew = -3600;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "node2"));
	TEST_CHECK(detail(&rep, "this node's clock is 3600 s behind the shared directory's"));
	TEST_CHECK(diff_abs(record_updated("node1"), (int64_t)time(NULL)) <= DISC_CLOCK_SKEW_S);
	report_free(&rep);
	/* so node3, with a right clock, keeps node1 instead of pruning it */
	clock_skew = 0;
	c->hostname = "node3";
	setenv("HPCINIT_ADDRESS", "10.0.0.3", 1);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "node1"));
	TEST_CHECK(exists(NODES "/node1.rec"));
	report_free(&rep);
	c->hostname = "node1";
	setenv("HPCINIT_ADDRESS", "10.0.0.1", 1);

	/* dated an hour ahead: rejected, and node2 keeps its address */
	plant("future", "10.0.0.2", -3600, KEY);
	plant("nearfuture", "10.0.0.8", -(DISC_CLOCK_SKEW_S / 2), KEY);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_INTEQ(rep.status, ST_DEGRADED);
	TEST_CHECK(detail(&rep, "record future.rec: dated 3600 s in the future (more than the 60 s "
			  "of clock skew allowed); rejected"));
	TEST_CHECK(finding(&rep, "discovery.record.future", ST_DEGRADED));
	TEST_CHECK(has_peer(c, "node2") && !has_peer(c, "future"));
	TEST_CHECK(has_peer(c, "nearfuture"));
	report_free(&rep);
	disc_clock = &system_clock;
	clock_skew = 0;
}

/*
 * The peer of the seam: with a right clock, it reads each record the
 * moment it is written, as take_record does, and prunes one past its lease.
 */
static bool seam_peer;
static int seam_stale, seam_future;

static int seam_put(struct rendezvous *rv, struct report *rep, const char *name, const char *data,
		    size_t len)
{
	int r = rv_put(rv, rep, name, data, len);
	int64_t now = (int64_t)time(NULL);
	struct peer p;

	if (r < 0 || !seam_peer || record_parse(data, len, "glo", NULL, 0, &p, NULL, 0) < 0)
		return r;
	if (p.updated > now + DISC_CLOCK_SKEW_S) {
		fprintf(stderr, "seam: a peer reads %s dated %" PRId64 " s in the future\n", name,
			p.updated - now);
		seam_future++;
	} else if (now - p.updated > lease_s(rv->c->spec)) {
		fprintf(stderr, "seam: a peer reads %s %" PRId64 " s old and prunes it\n", name,
			now - p.updated);
		struct report scratch;

		seam_stale++;
		report_init(&scratch);
		(void)rv_remove(rv, &scratch, name);
		report_free(&scratch);
	}
	peer_clear(&p);
	return r;
}

/*
 * Found by the fault campaign (seed 20, --faults clock): a node whose clock
 * was 196 s behind wrote its record stamped with its own clock, and only
 * then learned the directory's clock and wrote it again.  A peer reading in
 * between pruned the record as past its lease; the node, finding it gone,
 * kept its own clock and rejected every peer as "dated 196 s in the
 * future".  Here a peer reads every version written: none may be stale or
 * from the future, this node keeps its peers, and the clock is a finding
 * until it is right again.
 */
static void test_clock_first_write(struct ctx *c, struct spec *spec)
{
	const int64_t skews[] = { -196, -3600, 3600 };
	struct report rep;
	char *hp;

	/* the records test_clock_skew planted ahead go: only node1 and node2 here */
	hp = host(NODES "/future.rec");
	(void)unlink(hp);
	free(hp);
	hp = host(NODES "/nearfuture.rec");
	(void)unlink(hp);
	free(hp);
	spec->discovery.expect = 1;
	spec->discovery.wait_ms = 0;
	disc_clock = &skewed_clock;
	seam_peer = true;
	for (size_t i = 0; i < sizeof(skews) / sizeof(skews[0]); i++) {
		plant("node2", "10.0.0.2", 0, KEY);
		clock_skew = skews[i];
		seam_stale = seam_future = 0;
		TEST_INTEQ(run(c, &rep), 0);
		TEST_INTEQ(seam_stale, 0);
		TEST_INTEQ(seam_future, 0);
		TEST_CHECK(exists(NODES "/node1.rec"));
		TEST_CHECK(!exists(NODES "/.hpcinit-clock.node1"));     /* the probe is gone */
		TEST_CHECK(has_peer(c, "node2"));
		TEST_CHECK(strstr(sb_str(&rep.details), "discovery.record.future") == NULL &&
			   strstr(sb_str(&rep.details), "in the future") == NULL);
		TEST_CHECK(finding(&rep, "discovery.clock.skew", ST_DEGRADED));
		TEST_INTEQ(rep.status, ST_DEGRADED);
		TEST_CHECK(diff_abs(record_updated("node1"), (int64_t)time(NULL)) <= DISC_CLOCK_SKEW_S);
		report_free(&rep);
	}
	/* the clock fixed: the finding is gone (other findings here are earlier tests' records) */
	clock_skew = 0;
	seam_stale = seam_future = 0;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_INTEQ(seam_stale + seam_future, 0);
	TEST_CHECK(has_peer(c, "node2"));
	TEST_CHECK(strstr(sb_str(&rep.details), "this node's clock is") == NULL);
	for (size_t i = 0; i < rep.n_findings; i++)
		TEST_CHECK(strcmp(rep.findings[i].tag, "discovery.clock.skew") != 0);
	report_free(&rep);
	seam_peer = false;
	disc_clock = &system_clock;
}

/* A signed, fresh record for name at addr with an IPoIB address. */
static void plant_ipoib(const char *name, const char *addr, const char *ipoib)
{
	struct peer p = { 0 };
	char *rel = xasprintf(NODES "/%s.rec", name), *text;

	p.hostname = xstrdup(name);
	p.addr = xstrdup(addr);
	p.ipoib_addr = ipoib ? xstrdup(ipoib) : NULL;
	p.slots = 4;
	p.updated = (int64_t)time(NULL);
	text = record_format(&p, "glo", KEY, strlen(KEY));
	put(rel, text, 0644);
	free(text);
	free(rel);
	peer_clear(&p);
}

static const struct peer *peer_named(const struct ctx *c, const char *name)
{
	for (size_t i = 0; c->out->peers && i < c->out->peers->n; i++)
		if (strcmp(c->out->peers->v[i].hostname, name) == 0)
			return &c->out->peers->v[i];
	return NULL;
}

static void unplant(const char *name)
{
	char *rel = xasprintf(NODES "/%s.rec", name), *hp = host(rel);

	unlink(hp);
	free(hp);
	free(rel);
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
	TEST_CHECK(finding(&rep, "discovery.record.ipoib-outside", ST_DEGRADED));
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
	TEST_INTEQ(rep.status, ST_DEGRADED);
	TEST_CHECK(detail(&rep, "record node4.rec: address 192.168.7.4 is outside cluster.network "
			  "10.0.0.0/24; rejected"));
	TEST_CHECK(finding(&rep, "discovery.record.outside-network", ST_DEGRADED));
	TEST_CHECK(detail(&rep, "a record for NODE1 (10.0.0.41) claims this node's name node1"));
	TEST_CHECK(finding(&rep, "discovery.name.claims-self", ST_DEGRADED));
	TEST_CHECK(detail(&rep, "record node5.attacker.example.rec: hostname node5.attacker.example "
			  "is not a short name like this node's (node1); rejected"));
	TEST_CHECK(detail(&rep, "record node2.glo.rec: hostname node2.glo is not a short name"));
	TEST_CHECK(finding(&rep, "discovery.record.foreign-name", ST_DEGRADED));
	TEST_CHECK(detail(&rep, "name Node7 is claimed by 2 records"));
	TEST_CHECK(finding(&rep, "discovery.name.contested", ST_DEGRADED));
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
		TEST_CHECK(finding(&run.notes, "discovery.record.outside-network", ST_DEGRADED));
		TEST_CHECK(pass == 1 || finding(&run.notes, "discovery.record.foreign-name", ST_DEGRADED));
		disc_run_reset(&run);
	}
	report_free(&run.notes);
	admit_free(&run.admit);
	peer_clear(&run.self);
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
			   finding(&notes, "discovery.name.contested", ST_DEGRADED));
		TEST_CHECK(pass == 0 || detail(&notes, "name NODE3 is claimed by 2 records"));
		for (size_t i = 0; i < s.n; i++)
			peer_clear(&s.v[i]);
		s.n = 0;
		report_free(&notes);
	}
	free(s.v);
}

static bool owned(const char *rel, uid_t uid, gid_t gid, mode_t mode)
{
	char *p = host(rel);
	struct stat st;
	bool ok = lstat(p, &st) == 0 && st.st_uid == uid && st.st_gid == gid &&
		  (mode == 0 || (st.st_mode & 07777) == mode);

	if (!ok)
		fprintf(stderr, "%s: uid %u gid %u mode %04o, want %u %u %04o\n", rel, (unsigned)st.st_uid,
			(unsigned)st.st_gid, (unsigned)(st.st_mode & 07777), (unsigned)uid, (unsigned)gid,
			(unsigned)mode);
	free(p);
	return ok;
}

static void own(const char *rel, uid_t uid, gid_t gid)
{
	char *p = host(rel);

	TEST_INTEQ(lchown(p, uid, gid), 0);
	free(p);
}

/*
 * A compute whose root the head's export squashes, simulated: the same
 * run in a child that writes as uid 65534, as root on an NFS client of a
 * root_squash export does.  The probe finds 65534, records owned by it are
 * trusted, a record owned by root (which no squashed client can write) is
 * not.  No cluster secret: a child running as 65534 could not read root's.
 * Returns the child's number of failed checks.
 */
static int squashed_compute(struct ctx *head)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		struct spec spec = *head->spec;
		struct outputs out = { 0 };
		struct ctx c = *head;
		struct report rep;

		spec.cluster.role = ROLE_COMPUTE;
		spec.cluster.secret_file = NULL;
		spec.nfs.n_exports = 0;
		c.spec = &spec;
		c.out = &out;
		c.hostname = "c1";
		setenv("HPCINIT_ADDRESS", "10.0.0.31", 1);
		test_failures = 0;
		if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
		    setresuid(65534, 65534, 65534) < 0)
			_exit(100);
		TEST_INTEQ(run(&c, &rep), 0);
		TEST_CHECK(detail(&rep, NODES ": root is squashed to uid 65534 on this share; records owned "
				  "by uid 65534 are accepted"));
		TEST_CHECK(finding(&rep, "discovery.squash.no-secret", ST_DEGRADED));
		TEST_CHECK(has_peer(&c, "node1") && has_peer(&c, "node2"));
		TEST_CHECK(!has_peer(&c, "rootrec"));
		TEST_CHECK(detail(&rep, "record rootrec.rec: owned by uid 0, not by the trusted writer "
				  "(uid 65534, root squashed); rejected"));
		TEST_CHECK(owned(NODES "/c1.rec", 65534, 65534, 0644));
		report_free(&rep);
		out.peers = peerset_free(out.peers);
		_exit(test_failures > 99 ? 99 : test_failures);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status))
		return 1;
	return WEXITSTATUS(status);
}

/*
 * The head exports the share with root squashed (issue 12): it makes the
 * tree and its record the anonymous uid's, re-owns what an earlier run made
 * as root, trusts records of that uid, and refuses what it must.
 */
static void test_head_squash(struct ctx *c, struct spec *spec)
{
	struct spec_nfs_export x = { 0 };
	struct strlist sq = { 0 }, no = { 0 }, anon = { 0 };
	char export_path[] = "/share";
	struct report rep;
	char *p;

	spec->discovery.expect = 1;
	spec->discovery.wait_ms = 0;
	disc_clock = &system_clock;
	setenv("HPCINIT_ADDRESS", "10.0.0.1", 1);
	p = host("/share/.hpcinit");
	test_rm_rf(p);
	free(p);
	strlist_push(&sq, "rw");
	strlist_push(&sq, "sync");
	strlist_push(&sq, "no_subtree_check");
	strlist_push(&no, "rw");
	strlist_push(&no, "no_root_squash");
	strlist_push(&anon, "all_squash");
	strlist_push(&anon, "anonuid=1234");
	strlist_push(&anon, "anongid=1235");
	spec->cluster.role = ROLE_HEAD;
	x.path = export_path;
	x.options = no;
	spec->nfs.exports = &x;
	spec->nfs.n_exports = 1;

	/* no_root_squash: as before, root's tree; with the secret no finding */
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(owned("/share/.hpcinit", 0, 0, 0755) && owned(NODES, 0, 0, 0755));
	TEST_CHECK(owned(NODES "/node1.rec", 0, 0, 0644));
	TEST_CHECK(!finding(&rep, "discovery.rendezvous.no-secret", ST_DEGRADED));
	report_free(&rep);
	/* without a secret, check names the unauthenticated rendezvous on the unsquashed export */
	spec->cluster.secret_file = NULL;
	c->mode = RUN_CHECK;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_INTEQ(rep.status, ST_DEGRADED);
	TEST_CHECK(finding(&rep, "discovery.rendezvous.no-secret", ST_DEGRADED));
	TEST_CHECK(detail(&rep, NODES ": this node exports /share with no_root_squash and there is no "
			  "cluster.secret_file"));
	TEST_CHECK(!finding(&rep, "discovery.squash.no-secret", ST_DEGRADED));
	report_free(&rep);
	c->mode = RUN_APPLY;
	spec->cluster.secret_file = s_key;
	plant("node2", "10.0.0.2", 0, KEY);

	/* the export now squashes root: check says what apply will do, and changes nothing */
	x.options = sq;
	c->mode = RUN_CHECK;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_INTEQ(rep.status, ST_CHANGED);
	TEST_CHECK(detail(&rep, NODES ": owned by 0:0; apply gives it to 65534:65534 (the export's anonymous uid)"));
	TEST_CHECK(has_peer(c, "node2"));
	TEST_CHECK(owned(NODES, 0, 0, 0755) && owned(NODES "/node2.rec", 0, 0, 0644));
	report_free(&rep);

	/* apply: every level, this node's record and the root-owned record go to 65534 */
	c->mode = RUN_APPLY;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_INTEQ(rep.status, ST_CHANGED);
	TEST_CHECK(owned("/share/.hpcinit", 65534, 65534, 0755));
	TEST_CHECK(owned("/share/.hpcinit/glo", 65534, 65534, 0755));
	TEST_CHECK(owned(NODES, 65534, 65534, 0755));
	TEST_CHECK(owned(NODES "/node1.rec", 65534, 65534, 0644));
	TEST_CHECK(owned(NODES "/node2.rec", 65534, 65534, 0644));
	TEST_CHECK(owned("/share", 0, 0, 0755));       /* the export itself is never handed over */
	TEST_CHECK(detail(&rep, NODES ": re-owned from 0:0 to 65534:65534"));
	TEST_CHECK(detail(&rep, "record node2.rec: owned by root (written before root was squashed); "
			  "re-owned to uid 65534"));
	TEST_CHECK(detail(&rep, NODES ": this node exports /share with root_squash: root on its clients "
			  "writes as uid 65534"));
	TEST_CHECK(has_peer(c, "node2"));
	report_free(&rep);

	/* converged: nothing changes; records of 65534 trusted, others not */
	plant("node3", "10.0.0.3", 0, KEY);
	own(NODES "/node3.rec", 65534, 65534);
	plant("evil", "10.0.0.9", 0, KEY);
	own(NODES "/evil.rec", 1000, 1000);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_INTEQ(rep.changed.n, 0);
	TEST_CHECK(has_peer(c, "node2") && has_peer(c, "node3") && !has_peer(c, "evil"));
	TEST_CHECK(detail(&rep, "record evil.rec: owned by uid 1000, not by the trusted writer (uid 65534, "
			  "root squashed); rejected"));
	TEST_CHECK(!finding(&rep, "discovery.squash.no-secret", ST_DEGRADED));
	report_free(&rep);
	p = host(NODES "/evil.rec");
	unlink(p);
	free(p);

	/* a tree made from scratch is the anonymous uid's from the start */
	p = host("/share/.hpcinit");
	test_rm_rf(p);
	free(p);
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(owned("/share/.hpcinit", 65534, 65534, 0755) && owned(NODES, 65534, 65534, 0755));
	TEST_CHECK(owned(NODES "/node1.rec", 65534, 65534, 0644));
	report_free(&rep);

	/* a compute, squashed, trusts the head's records and refuses root's */
	plant("node2", "10.0.0.2", 0, KEY);
	own(NODES "/node2.rec", 65534, 65534);
	plant("rootrec", "10.0.0.8", 0, KEY);
	p = host("");
	chmod(p, 0755);         /* mkdtemp made it 0700: the child must get through */
	free(p);
	TEST_INTEQ(squashed_compute(c), 0);
	p = host(NODES "/rootrec.rec");
	unlink(p);
	free(p);
	/* the compute's record (written as 65534, without the secret it lacked) passes the owner rule */
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(!has_peer(c, "c1"));
	TEST_CHECK(detail(&rep, "record c1.rec: no HMAC while cluster.secret_file is set; rejected"));
	report_free(&rep);

	/* without the secret: the head trusts it, and a finding tells the admin to set the secret */
	spec->cluster.secret_file = NULL;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "c1"));
	TEST_INTEQ(rep.status, ST_DEGRADED);
	TEST_CHECK(finding(&rep, "discovery.squash.no-secret", ST_DEGRADED));
	report_free(&rep);
	spec->cluster.secret_file = s_key;

	/* another anonymous uid (all_squash, anonuid=1234): a tree of 65534 is someone else's: refused */
	x.options = anon;
	TEST_INTEQ(run(c, &rep), -EPERM);
	TEST_CHECK(detail(&rep, "is owned by uid 65534, but this node exports /share with all_squash "
			  "(anonymous uid 1234)"));
	TEST_CHECK(owned(NODES, 65534, 65534, 0755));
	report_free(&rep);
	x.options = sq;

	/* a level swapped for a link is not followed: refused, its target untouched */
	p = host("/share/elsewhere");
	mkdir(p, 0755);
	free(p);
	p = host("/share/.hpcinit");
	test_rm_rf(p);
	TEST_INTEQ(symlink("elsewhere", p), 0);
	TEST_INTEQ(run(c, &rep), -ENOTDIR);
	TEST_CHECK(owned("/share/elsewhere", 0, 0, 0755));
	report_free(&rep);
	unlink(p);
	free(p);

	/* discovery.dir is the export itself: refused with the reason */
	spec->discovery.dir = export_path;
	TEST_INTEQ(run(c, &rep), -EPERM);
	TEST_CHECK(detail(&rep, "discovery.dir /share is the export /share itself"));
	TEST_CHECK(owned("/share", 0, 0, 0755));
	report_free(&rep);
	/* ...also when either is written with a trailing slash */
	{
		char slashed[] = "/share/";

		spec->discovery.dir = slashed;
		TEST_INTEQ(run(c, &rep), -EPERM);
		TEST_CHECK(detail(&rep, "discovery.dir /share/ is the export /share itself"));
		TEST_CHECK(owned("/share", 0, 0, 0755));
		report_free(&rep);
		x.path = slashed;
		spec->discovery.dir = export_path;
		TEST_INTEQ(run(c, &rep), -EPERM);
		TEST_CHECK(owned("/share", 0, 0, 0755));
		report_free(&rep);
		x.path = export_path;
	}
	spec->discovery.dir = s_dir;

	spec->nfs.exports = NULL;
	spec->nfs.n_exports = 0;
	spec->cluster.role = ROLE_COMPUTE;
	strlist_free(&sq);
	strlist_free(&no);
	strlist_free(&anon);
}

int main(void)
{
	struct spec spec = { 0 };
	struct outputs out = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY, .hostname = "node1", .out = &out };
	struct report rep;
	char *p, *before = NULL, *after = NULL;
	struct stat st;

	test_dups();

	TEST_CHECK(mkdtemp(root) != NULL);
	c.root = root;
	setenv("HPCINIT_ADDRESS", "10.0.0.1", 1);
	unsetenv("HPCINIT_IPOIB_ADDRESS");
	spec.cluster.name = s_name;
	spec.cluster.secret_file = s_key;
	TEST_INTEQ(cidr_parse("10.0.0.0/24", &spec.cluster.network), 0);
	spec.cluster.has_network = true;
	spec.discovery.present = true;
	spec.discovery.method = DISC_SHARED;
	spec.discovery.dir = s_dir;
	spec.discovery.expect = 1;
	spec.discovery.wait_ms = 0;
	spec.discovery.lease_ms = 60000;
	c.deadline_ms = now_ms() + 60000;

	p = host("/etc");
	mkdir(p, 0755);
	free(p);
	p = host("/etc/hpcinit");
	mkdir(p, 0755);
	free(p);
	p = host("/share");
	mkdir(p, 0755);
	free(p);
	put(s_key, KEY, 0600);

	/* first apply: directories and the record are made */
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_INTEQ(rep.status, ST_CHANGED);
	TEST_CHECK(exists(NODES "/node1.rec"));
	TEST_CHECK(out.peers && out.peers->n == 1 && out.peers->v[0].self);
	TEST_CHECK(exists("/run/hpcinit/discovery-ready"));
	report_free(&rep);

	/* second apply: only the lease moves, reported ok */
	sleep(1);
	{
		char *hp = host(NODES "/node1.rec");

		fs_read_host(hp, 100000, &before, NULL);
		TEST_INTEQ(run(&c, &rep), 0);
		TEST_INTEQ(rep.status, ST_OK);
		TEST_INTEQ(rep.changed.n, 0);
		fs_read_host(hp, 100000, &after, NULL);
		TEST_CHECK(strcmp(before, after) != 0);     /* the lease was refreshed */
		free(hp);
		report_free(&rep);
	}

	/* peers, an expired one, a bad one of each kind, a duplicate address */
	plant("node2", "10.0.0.2", 0, KEY);
	plant("node10", "10.0.0.10", 0, KEY);
	plant("gone", "10.0.0.3", 3600, KEY);
	plant("nohmac", "10.0.0.4", 0, NULL);
	plant("badhmac", "10.0.0.5", 0, "another-key-of-enough-length");
	plant("stale-ip", "10.0.0.2", 30, KEY);
	plant("wrongowner", "10.0.0.6", 0, KEY);
	p = host(NODES "/wrongowner.rec");
	TEST_INTEQ(chown(p, 1000, 1000), 0);
	free(p);
	plant("groupw", "10.0.0.7", 0, KEY);
	p = host(NODES "/groupw.rec");
	chmod(p, 0664);
	free(p);
	put(NODES "/trunc.rec", "# hpcinit peer record\nformat: 1\ncluster: glo\nhost", 0644);
	put(NODES "/Bad Name.rec", "x", 0644);
	put(NODES "/README", "not a record\n", 0644);
	put(NODES "/node9.rec.hpcinit-tmp.abcdef", "left by a crash", 0644);
	{
		char *hp = host(NODES "/node9.rec.hpcinit-tmp.abcdef");
		struct timespec ts[2] = { { .tv_sec = time(NULL) - 7200 }, { .tv_sec = time(NULL) - 7200 } };

		utimensat(AT_FDCWD, hp, ts, 0);
		free(hp);
	}

	/* check mode first: nothing changes, rejections listed */
	c.mode = RUN_CHECK;
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_INTEQ(rep.status, ST_DEGRADED);
	TEST_CHECK(exists(NODES "/gone.rec"));              /* not pruned in check */
	TEST_CHECK(exists(NODES "/node9.rec.hpcinit-tmp.abcdef"));
	report_free(&rep);
	c.mode = RUN_APPLY;

	TEST_INTEQ(run(&c, &rep), 0);
	TEST_INTEQ(rep.status, ST_DEGRADED);
	TEST_CHECK(detail(&rep, "record nohmac.rec: no HMAC while cluster.secret_file is set; rejected"));
	TEST_CHECK(detail(&rep, "record badhmac.rec: bad HMAC"));
	TEST_CHECK(detail(&rep, "record wrongowner.rec: owned by uid 1000, not by the trusted writer (uid 0, root); rejected"));
	TEST_CHECK(detail(&rep, "record groupw.rec: writable by group or others (mode 0664); rejected"));
	TEST_CHECK(detail(&rep, "record trunc.rec: truncated"));
	TEST_CHECK(detail(&rep, "record Bad Name.rec: file name is not <hostname>.rec; rejected"));
	TEST_CHECK(detail(&rep, "record gone.rec: lease expired (scale-in); removed"));
	TEST_CHECK(detail(&rep, "stale temporary file; removed"));
	TEST_CHECK(detail(&rep, "address 10.0.0.2 is claimed by node2 and stale-ip; keeping node2"));
	/* the same, as data: a stable tag for each reason */
	TEST_CHECK(finding(&rep, "discovery.record.no-hmac", ST_DEGRADED));
	TEST_CHECK(finding(&rep, "discovery.record.bad-hmac", ST_DEGRADED));
	TEST_CHECK(finding(&rep, "discovery.record.wrong-owner", ST_DEGRADED));
	TEST_CHECK(finding(&rep, "discovery.record.writable", ST_DEGRADED));
	TEST_CHECK(finding(&rep, "discovery.record.truncated", ST_DEGRADED));
	TEST_CHECK(finding(&rep, "discovery.record.bad-name", ST_DEGRADED));
	TEST_CHECK(finding(&rep, "discovery.address.claimed-twice", ST_OK));
	TEST_CHECK(!exists(NODES "/gone.rec"));
	TEST_CHECK(!exists(NODES "/node9.rec.hpcinit-tmp.abcdef"));
	TEST_CHECK(exists(NODES "/badhmac.rec"));           /* rejected: kept for the admin */
	TEST_CHECK(exists(NODES "/README"));
	TEST_INTEQ(out.peers ? out.peers->n : 0, 3);
	TEST_CHECK(has_peer(&c, "node1") && has_peer(&c, "node2") && has_peer(&c, "node10"));
	if (out.peers && out.peers->n == 3) {                  /* natural order */
		TEST_STREQ(out.peers->v[0].hostname, "node1");
		TEST_STREQ(out.peers->v[1].hostname, "node2");
		TEST_STREQ(out.peers->v[2].hostname, "node10");
	}
	report_free(&rep);

	/* a world-writable directory is refused and left alone */
	p = host(NODES);
	chmod(p, 0777);
	TEST_INTEQ(run(&c, &rep), -EPERM);
	TEST_INTEQ(rep.status, ST_FAILED);
	TEST_CHECK(detail(&rep, "is writable by group or others (mode 0777)"));
	TEST_INTEQ(stat(p, &st), 0);
	TEST_INTEQ(st.st_mode & 07777, 0777);
	chmod(p, 0755);
	report_free(&rep);
	/* owned by a user while root writes as root: refused */
	TEST_INTEQ(chown(p, 1000, 1000), 0);
	TEST_INTEQ(run(&c, &rep), -EPERM);
	TEST_CHECK(detail(&rep, "refusing a tree with mixed owners"));
	TEST_INTEQ(chown(p, 0, 0), 0);
	report_free(&rep);
	free(p);

	/* a readable secret is refused */
	p = host(s_key);
	chmod(p, 0644);
	TEST_INTEQ(run(&c, &rep), -EPERM);
	TEST_CHECK(detail(&rep, "chmod 600 it"));
	chmod(p, 0600);
	report_free(&rep);
	/* a secret owned by a user, even 0600, is refused: that user could forge records */
	TEST_INTEQ(chown(p, 1000, 1000), 0);
	TEST_INTEQ(run(&c, &rep), -EPERM);
	TEST_CHECK(detail(&rep, "cluster.secret_file /etc/hpcinit/cluster.key: owned by uid 1000, "
			  "not root: that user could read it and forge records; refused"));
	TEST_INTEQ(chown(p, 0, 0), 0);
	report_free(&rep);
	/* a symlink to a good secret is refused too */
	{
		char *q = host("/etc/hpcinit/real.key");

		TEST_INTEQ(rename(p, q), 0);
		TEST_INTEQ(symlink(q, p), 0);
		TEST_INTEQ(run(&c, &rep), -ELOOP);
		TEST_CHECK(detail(&rep, "cluster.secret_file /etc/hpcinit/cluster.key: is a symbolic link; refused"));
		report_free(&rep);
		unlink(p);
		TEST_INTEQ(rename(q, p), 0);
		free(q);
	}
	TEST_INTEQ(run(&c, &rep), 0);
	free(p);
	report_free(&rep);

	/* expect not met and not reached before in this boot: waits, then degraded */
	p = host(READY_MARK);
	unlink(p);
	free(p);
	spec.discovery.expect = 10;
	spec.discovery.wait_ms = 600;
	{
		uint64_t t0 = now_ms();

		TEST_INTEQ(run(&c, &rep), 0);
		TEST_CHECK(now_ms() - t0 >= 500);
		TEST_INTEQ(rep.status, ST_DEGRADED);
		TEST_CHECK(strstr(rep.summary, "only 3 of 10 expected nodes") != NULL);
		report_free(&rep);
	}
	/* once reached in this boot, fewer nodes is not a reason to wait again */
	spec.discovery.expect = 3;
	TEST_INTEQ(run(&c, &rep), 0);
	report_free(&rep);
	spec.discovery.expect = 10;
	{
		uint64_t t0 = now_ms();

		TEST_INTEQ(run(&c, &rep), 0);
		TEST_CHECK(now_ms() - t0 < 500);
		TEST_CHECK(rep.status != ST_DEGRADED || detail(&rep, "bad HMAC"));
		TEST_CHECK(detail(&rep, "reached earlier in this boot"));
		report_free(&rep);
	}

	/* plan: the address change shows as a diff of the record, nothing written */
	c.mode = RUN_PLAN;
	setenv("HPCINIT_ADDRESS", "10.0.0.99", 1);
	free(before);
	before = NULL;
	p = host(NODES "/node1.rec");
	fs_read_host(p, 100000, &before, NULL);
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_CHECK(detail(&rep, "+addr: 10.0.0.99"));
	free(after);
	after = NULL;
	fs_read_host(p, 100000, &after, NULL);
	TEST_STREQ(after, before);
	free(p);
	report_free(&rep);
	/* an override that is not an address is refused */
	setenv("HPCINIT_ADDRESS", "not-an-ip", 1);
	TEST_INTEQ(run(&c, &rep), -EINVAL);
	report_free(&rep);

	/* leave: this node's record goes (plan only says so), peers are untouched */
	setenv("HPCINIT_ADDRESS", "10.0.0.1", 1);
	report_init(&rep);
	TEST_INTEQ(discovery_leave(&c, &rep), 0);
	TEST_CHECK(exists(NODES "/node1.rec"));
	report_free(&rep);
	c.mode = RUN_APPLY;
	report_init(&rep);
	TEST_INTEQ(discovery_leave(&c, &rep), 0);
	TEST_INTEQ(rep.status, ST_CHANGED);
	TEST_CHECK(!exists(NODES "/node1.rec"));
	TEST_CHECK(exists(NODES "/node2.rec"));
	report_free(&rep);
	report_init(&rep);
	TEST_INTEQ(discovery_leave(&c, &rep), 0);
	TEST_INTEQ(rep.status, ST_OK);
	report_free(&rep);
	/* the leave holds: a refresh lists the peers but does not publish this node again ... */
	TEST_CHECK(exists("/run/hpcinit/left"));
	c.command = "refresh";
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_CHECK(exists("/run/hpcinit/left"));
	TEST_CHECK(!exists(NODES "/node1.rec"));
	TEST_CHECK(has_peer(&c, "node2"));
	TEST_CHECK(detail(&rep, "(hpcinit leave): its record is not published again until \"hpcinit apply\""));
	report_free(&rep);
	/* ... until "hpcinit apply" runs discovery: the step forgets the leave and joins again */
	c.command = "apply";
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_CHECK(!exists("/run/hpcinit/left"));
	TEST_CHECK(exists(NODES "/node1.rec"));
	report_free(&rep);
	c.command = NULL;

	test_clock_skew(&c, &spec);
	test_clock_first_write(&c, &spec);
	test_admit(&c, &spec);
	test_admit_found(&c);
	test_contested_many();
	test_head_squash(&c, &spec);

	out.peers = peerset_free(out.peers);
	free(before);
	free(after);
	test_rm_rf(root);
	TEST_EXIT();
}
