/* SPDX-License-Identifier: MIT */
/*
 * discovery (shared method) on a fake root: records written and read,
 * lease refresh not reported as a change, expiry and pruning, duplicate
 * addresses, each rejection with its own message, directory refusals,
 * check/plan changing nothing, the expect wait giving up degraded, leave,
 * clocks, and the head's tree on a root-squashing export.  What a peer must
 * be (admit.c) is test_admit.c; what a vanished or stale record means
 * (held.c, an outage, a partition) is test_held.c.
 */
#define TESTDISC_SEAM
#include "testdisc.h"

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

/* Does name's record hold text (its state's reason, say)? */
static bool record_says(const char *name, const char *text)
{
	char *rel = xasprintf(NODES "/%s.rec", name), *hp = host(rel), *data = NULL;
	bool r = fs_read_host(hp, 100000, &data, NULL) == 0 && strstr(data, text) != NULL;

	free(data);
	free(hp);
	free(rel);
	return r;
}

static int64_t diff_abs(int64_t a, int64_t b)
{
	return a > b ? a - b : b - a;
}

/*
 * A detail that names a number of seconds measured across a second's edge:
 * pre, n or n + 1, post (the clock read before, the file time after; or the
 * record planted before the run reads the clock).
 */
static bool detail_s(const struct report *rep, const char *pre, int n, const char *post)
{
	char a[256], b[256];

	snprintf(a, sizeof(a), "%s%d%s", pre, n, post);
	snprintf(b, sizeof(b), "%s%d%s", pre, n + 1, post);
	return strstr(sb_str(&rep->details), b) || detail(rep, a);
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
	TEST_CHECK(detail_s(&rep, "this node's clock is ", 3599, " s ahead of the shared directory's"));
	TEST_CHECK(diff_abs(record_updated("node1"), (int64_t)time(NULL)) <= DISC_CLOCK_SKEW_S);
	report_free(&rep);

	/* an hour behind: fresh records are not "in the future", own record stamped right */
	clock_skew = -3600;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(has_peer(c, "node2"));
	TEST_CHECK(detail_s(&rep, "this node's clock is ", 3600, " s behind the shared directory's"));
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
	TEST_INTEQ(rep.status, ST_OK);      /* another node's record: not this node's problem */
	TEST_CHECK(detail_s(&rep, "record future.rec: dated ", 3599, " s in the future (more than the 60 s "
			   "of clock skew allowed); rejected"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.future"));
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

/*
 * The announce after the step, in the step's child (c->step_stays): the
 * step's session is kept (shared_keep), and its probe of the directory's
 * clock, moments old, gives the offset (probe_fresh): one probe file for
 * the two writes of the record.  A clock stepped in between, or a probe
 * past PROBE_REUSE_MS, is probed again; either way the record the announce
 * writes says the new state, stamped by the directory's clock.
 */
static void test_announce_kept(struct ctx *c, struct spec *spec)
{
	struct report rep;

	spec->discovery.expect = 1;
	spec->discovery.wait_ms = 0;
	disc_clock = &skewed_clock;
	for (int k = 0; k < 3; k++) {
		/* 0: announced at once; 1: the clock stepped an hour in between; 2: the probe 2 s old */
		clock_skew = 0;
		seam_probes = 0;
		c->step_stays = true;
		TEST_INTEQ(run(c, &rep), 0);
		c->step_stays = false;
		TEST_INTEQ(seam_probes, 1);
		TEST_CHECK(kept.priv != NULL && kept.m == &disc_method_shared);
		report_free(&rep);
		if (k == 1)
			clock_skew = -3600;
		if (k == 2 && kept.priv) {     /* as if made PROBE_REUSE_MS ago, both clocks agreeing */
			((struct shared *)kept.priv)->probe_ms -= PROBE_REUSE_MS;
			((struct shared *)kept.priv)->probe_mine -= PROBE_REUSE_MS / 1000;
		}
		c->node.known = true;
		c->node.status = ST_DEGRADED;
		snprintf(c->node.reason, sizeof(c->node.reason), "kept.%d", k);
		report_init(&rep);
		TEST_INTEQ(disc_announce(c, &rep), 0);
		TEST_INTEQ(seam_probes, k == 0 ? 1 : 2);
		TEST_CHECK(kept.priv == NULL);
		TEST_CHECK(strstr(rep.summary, "this node's record says degraded: kept.") != NULL);
		TEST_CHECK(record_says("node1", "kept."));
		TEST_CHECK(k != 1 || finding(&rep, "discovery.clock.skew", ST_DEGRADED));
		TEST_CHECK(diff_abs(record_updated("node1"), (int64_t)time(NULL)) <= DISC_CLOCK_SKEW_S);
		TEST_CHECK(!exists(NODES "/.hpcinit-clock.node1"));
		report_free(&rep);
	}
	/* without step_stays nothing is kept: the announce opens and probes on its own */
	clock_skew = 0;
	seam_probes = 0;
	TEST_INTEQ(run(c, &rep), 0);
	TEST_CHECK(kept.priv == NULL);
	report_free(&rep);
	report_init(&rep);
	TEST_INTEQ(disc_announce(c, &rep), 0);
	TEST_INTEQ(seam_probes, 2);
	report_free(&rep);
	memset(&c->node, 0, sizeof(c->node));
	disc_clock = &system_clock;
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

/*
 * Hundreds of records: the shared directory's list reads and parses batches
 * of 128 or more on several threads (lib/rendezvous/dir.c); the peers, the
 * rejections and their reasons must be those one thread gives.
 */
static void test_many(struct ctx *c, struct spec *spec)
{
	struct report rep;
	char name[32], addr[32];
	bool sorted = true;
	size_t n;

	TEST_INTEQ(cidr_parse("10.0.0.0/16", &spec->cluster.network), 0);     /* room for 300 */
	for (int i = 100; i < 400; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		snprintf(addr, sizeof(addr), "10.0.%d.%d", i / 200 + 1, i % 200 + 1);
		plant(name, addr, 0, i % 50 == 3 ? "another-key-of-enough-length" : KEY);
	}
	TEST_INTEQ(run(c, &rep), 0);
	TEST_INTEQ(rep.status, ST_OK);
	TEST_CHECK(detail(&rep, "record nohmac.rec: no HMAC while cluster.secret_file is set; rejected"));
	TEST_CHECK(detail(&rep, "record wrongowner.rec: owned by uid 1000, not by the trusted writer (uid 0, root); rejected"));
	TEST_CHECK(detail(&rep, "record groupw.rec: writable by group or others (mode 0664); rejected"));
	TEST_CHECK(detail(&rep, "record trunc.rec: truncated"));
	TEST_CHECK(detail(&rep, "record Bad Name.rec: file name is not <hostname>.rec; rejected"));
	TEST_CHECK(detail(&rep, "record newer.rec: format 2 (written by hpcinit 9.0.0) is newer than hpcinit "
			  PACKAGE_VERSION " reads (formats 1 to 1); the node is left out until this node runs "
			  "a release that reads its format (docs/formats.md)"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.format-newer"));
	TEST_CHECK(exists(NODES "/newer.rec"));
	TEST_CHECK(detail(&rep, "record many103.rec: bad HMAC"));
	TEST_CHECK(detail(&rep, "record many353.rec: bad HMAC"));
	TEST_CHECK(!detail(&rep, "record many104.rec"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.bad-hmac"));
	/* node1 (this node), node2, node10 and the 300 planted but the 6 with the wrong key */
	n = c->out->peers ? c->out->peers->n : 0;
	TEST_INTEQ(n, 3 + 300 - 6);
	TEST_CHECK(has_peer(c, "many100") && has_peer(c, "many399") && !has_peer(c, "many153"));
	for (size_t i = 2; i < n; i++)          /* after this node: natural order */
		if (natural_cmp(c->out->peers->v[i - 1].hostname, c->out->peers->v[i].hostname) >= 0 &&
		    !c->out->peers->v[i - 1].self)
			sorted = false;
	TEST_CHECK(sorted);
	report_free(&rep);
	for (int i = 100; i < 400; i++) {
		snprintf(name, sizeof(name), "many%d", i);
		unplant(name);
	}
	TEST_INTEQ(cidr_parse("10.0.0.0/24", &spec->cluster.network), 0);
}

/* A name in discovery.hosts the loader would refuse (a spec built in code): a finding, not a peer. */
static void test_static_bad_name(void)
{
	struct spec spec = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY, .hostname = "node1" };
	struct report rep;
	struct disc_run run = { .c = &c, .rep = &rep };
	char self[] = "node1";
	bool found = false;

	report_init(&rep);
	report_init(&run.notes);
	run.self.hostname = self;
	strlist_push(&spec.discovery.hosts, "-bad..name");
	TEST_INTEQ(static_open(&run), 0);
	static_list(&run);
	for (size_t i = 0; i < run.notes.n_findings; i++)
		found |= strcmp(run.notes.findings[i].tag, "discovery.static.bad-name") == 0;
	TEST_CHECK(found);
	TEST_INTEQ(run.found.n, 0);
	static_close(&run);
	report_free(&run.notes);
	report_free(&rep);
	strlist_free(&spec.discovery.hosts);
}

/*
 * A rendezvous this node cannot reach is an outage, not a sick node (issue 37): a last run
 * that failed for it (its worst finding the outage's) is published as degraded, so that
 * hostfile.exclude: failed keeps the node in its peers' hostfiles; failed for anything else
 * is still failed.  The outage's finding carries that tag, for the errors of a share away.
 */
static void test_unreachable_state(void)
{
	struct spec spec = { 0 };
	char dir[] = "/share/.hpcinit";
	struct ctx c = { .spec = &spec };
	struct disc_run run = { .c = &c };
	struct report rep;
	struct peer p = { 0 };

	c.node.known = true;
	c.node.status = ST_FAILED;
	snprintf(c.node.reason, sizeof(c.node.reason), "%s", DISC_UNREACHABLE_TAG);
	node_state_set(&c, &p);
	TEST_CHECK(p.state == PEER_DEGRADED);
	TEST_STREQ(p.reason, DISC_UNREACHABLE_TAG);
	snprintf(c.node.reason, sizeof(c.node.reason), "nfs.mounted.not-answering");
	node_state_set(&c, &p);
	TEST_CHECK(p.state == PEER_FAILED);
	peer_clear(&p);

	TEST_CHECK(disc_unreachable(-ENOTCONN) && disc_unreachable(-EIO) && disc_unreachable(-ETIMEDOUT));
	TEST_CHECK(disc_unreachable(-ECONNABORTED));    /* a FUSE call in flight when its daemon went */
	TEST_CHECK(!disc_unreachable(-EACCES) && !disc_unreachable(-ENOENT) && !disc_unreachable(-ENOMEDIUM));
	spec.discovery.dir = dir;
	spec.discovery.lease_ms = 15000;
	report_init(&rep);
	unreachable_finding(&run, &rep, "open", -ENOTCONN);
	TEST_CHECK(rep.n_findings == 1 && strcmp(rep.findings[0].tag, DISC_UNREACHABLE_TAG) == 0);
	TEST_CHECK(rep.n_findings == 1 && rep.findings[0].sev == ST_FAILED &&
		   strstr(rep.findings[0].text, "/share/.hpcinit unreachable (open: ") != NULL);
	report_free(&rep);
}

int main(void)
{
	struct spec spec = { 0 };
	struct outputs out = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY, .hostname = "node1", .out = &out };
	struct report rep;
	char *p, *before = NULL, *after = NULL;
	struct stat st;

	test_static_bad_name();
	test_unreachable_state();
	disc_test_setup(&c, &spec);

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
	/* a newer format (docs/formats.md): refused before its lines are read, kept for its writer */
	put(NODES "/newer.rec", "# hpcinit peer record\nformat: 2\ncluster: glo\nhostname: newer\n"
	    "addr: 10.0.0.11\nslots: many\nversion: 9.0.0\n...\n", 0644);
	put(NODES "/README", "not a record\n", 0644);
	/* a link, a directory, a record too large, one naming another host than its file */
	{
		char *lp = host(NODES "/linked.rec"), *dp = host(NODES "/adir.rec");
		char *big = xmalloc(RECORD_MAX_BYTES + 2);

		TEST_INTEQ(symlink("node2.rec", lp), 0);
		TEST_INTEQ(mkdir(dp, 0755), 0);
		memset(big, 'x', RECORD_MAX_BYTES + 1);
		big[RECORD_MAX_BYTES + 1] = '\0';
		put(NODES "/huge.rec", big, 0644);
		free(big);
		free(lp);
		free(dp);
	}
	plant("node11", "10.0.0.11", 0, KEY);
	{
		char *from = host(NODES "/node11.rec"), *to = host(NODES "/node12.rec");

		TEST_INTEQ(rename(from, to), 0);
		free(from);
		free(to);
	}
	put(NODES "/node9.rec.hpcinit-tmp.abcdef", "left by a crash", 0644);
	{
		char *hp = host(NODES "/node9.rec.hpcinit-tmp.abcdef");
		struct timespec ts[2] = { { .tv_sec = time(NULL) - 7200 }, { .tv_sec = time(NULL) - 7200 } };

		utimensat(AT_FDCWD, hp, ts, 0);
		free(hp);
	}

	/* check mode first: nothing changes, rejections listed (cluster findings: this node is ok) */
	c.mode = RUN_CHECK;
	TEST_INTEQ(run(&c, &rep), 0);
	TEST_INTEQ(rep.status, ST_OK);
	TEST_INTEQ(report_problems(&rep), 0);
	TEST_CHECK(exists(NODES "/gone.rec"));              /* not pruned in check */
	TEST_CHECK(exists(NODES "/node9.rec.hpcinit-tmp.abcdef"));
	report_free(&rep);
	c.mode = RUN_APPLY;

	TEST_INTEQ(run(&c, &rep), 0);
	TEST_INTEQ(rep.status, ST_CHANGED);     /* the pruning; the rejections raise nothing */
	TEST_CHECK(detail(&rep, "record nohmac.rec: no HMAC while cluster.secret_file is set; rejected"));
	TEST_CHECK(detail(&rep, "record badhmac.rec: bad HMAC"));
	TEST_CHECK(detail(&rep, "record wrongowner.rec: owned by uid 1000, not by the trusted writer (uid 0, root); rejected"));
	TEST_CHECK(detail(&rep, "record groupw.rec: writable by group or others (mode 0664); rejected"));
	TEST_CHECK(detail(&rep, "record trunc.rec: truncated"));
	TEST_CHECK(detail(&rep, "record Bad Name.rec: file name is not <hostname>.rec; rejected"));
	TEST_CHECK(detail(&rep, "record newer.rec: format 2 (written by hpcinit 9.0.0) is newer than hpcinit "
			  PACKAGE_VERSION " reads (formats 1 to 1); the node is left out until this node runs "
			  "a release that reads its format (docs/formats.md)"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.format-newer"));
	TEST_CHECK(exists(NODES "/newer.rec"));
	TEST_CHECK(detail(&rep, "record gone.rec: lease expired (scale-in); removed"));
	TEST_CHECK(detail(&rep, "stale temporary file; removed"));
	TEST_CHECK(detail(&rep, "address 10.0.0.2 is claimed by node2 and stale-ip; keeping node2"));
	/* the same, as data: a stable tag for each reason */
	TEST_CHECK(cluster_finding(&rep, "discovery.record.no-hmac"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.bad-hmac"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.wrong-owner"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.writable"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.truncated"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.bad-name"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.symlink"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.not-a-file"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.too-large"));
	TEST_CHECK(cluster_finding(&rep, "discovery.record.malformed"));
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
	test_many(&c, &spec);

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
	test_announce_kept(&c, &spec);
	test_head_squash(&c, &spec);

	out.peers = peerset_free(out.peers);
	free(before);
	free(after);
	test_rm_rf(root);
	TEST_EXIT();
}
