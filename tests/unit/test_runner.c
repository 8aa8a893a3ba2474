/* SPDX-License-Identifier: MIT */
/*
 * runner: order, skips for absent sections and failed needs, --only with needs,
 * exit codes, JSON report, findings and their summary, typed outputs and the
 * table checks, hook defaults.  Uses a table of test modules instead of the
 * real one (test_table walks the real one).
 */
#include "config.h"

#include <signal.h>

#include "../../agent/core/runner.c"
#include "../../agent/core/status.c"
#include "../../agent/cmd/status_read.c"
#include "proc.h"
#include "record.h"
#include "test.h"
#include "testfs.h"

static int calls[4];
static int order[8], norder;
static uint64_t seen_deadline, g_deadline;
static int f_calls, g_calls;
/* What each module saw of the outputs. */
static struct peerset *made_peers;
static const struct peerset *b_saw_out, *d_saw_out;
static bool b_had_out;

static bool on(const struct spec *s) { return true; }
static bool off(const struct spec *s) { return false; }
static uint64_t t5(const struct spec *s) { return 5000; }

static int a_apply(struct ctx *c, struct report *r)
{
	calls[0]++;
	order[norder++] = 0;
	seen_deadline = c->deadline_ms;
	/* A producer: its own output is in its view. */
	if (c->out) {
		c->out->peers = made_peers = xcalloc(1, sizeof(*made_peers));
		peerset_add(made_peers)->hostname = xstrdup("node1");
	}
	report_set(r, ST_CHANGED, "a did it");
	report_changed(r, "/etc/a");
	return 0;
}

static int b_apply(struct ctx *c, struct report *r)
{
	calls[1]++;
	order[norder++] = 1;
	/* Declares nothing: sees no output. */
	b_had_out = c->out != NULL;
	b_saw_out = c->out ? c->out->peers : NULL;
	report_detail(r, "b broke: \"quoted\"");
	return -EIO;
}

static int c_apply(struct ctx *c, struct report *r)
{
	calls[2]++;
	order[norder++] = 2;
	return 0;
}

static int d_apply(struct ctx *c, struct report *r)
{
	calls[3]++;
	order[norder++] = 3;
	d_saw_out = c->out ? c->out->peers : NULL;
	report_set(r, ST_DEGRADED, "d is optional");
	return 0;
}

/* Findings in a scrambled order: the summary names the worst first. */
static int f_apply(struct ctx *c, struct report *r)
{
	f_calls++;
	report_finding(r, ST_OK, "f.info", "just so you know");
	report_finding(r, ST_CHANGED, "f.drift", "drifted");
	report_finding(r, ST_FAILED, "f.bad.first", "bad \"first\"");
	report_finding(r, ST_DEGRADED, "f.deg", "degraded");
	report_finding(r, ST_FAILED, "f.bad.second", "bad second");
	return 0;
}

/* Only check, no enabled, no timeout: the defaults fill in. */
static int g_check(struct ctx *c, struct report *r)
{
	g_calls++;
	g_deadline = c->deadline_ms;
	return 0;
}

/*
 * leave: c's runs here, a's (the first step's: the record's removal) in a
 * child, after c's; each writes "<step> <pid>" to <root>/leave (a stand-in
 * for slurm's drain and discovery's removal).
 */
static char root[];
static bool a_leave_fails;
static void leave_note(const char *step)
{
	char *p = fs_rooted(root, "/leave"), *line = xasprintf("%s %ld\n", step, (long)getpid());
	FILE *f = fopen(p, "a");

	if (f) {
		fputs(line, f);
		fclose(f);
	}
	free(line);
	free(p);
}
static int a_leave(struct ctx *c, struct report *r)
{
	leave_note("a");
	if (a_leave_fails)
		return -EIO;
	report_set(r, ST_CHANGED, "removed node1's record");
	return 0;
}
static int c_leave(struct ctx *c, struct report *r)
{
	leave_note(c->module);
	return 0;
}

static const char *const needs_b[] = { "b", NULL };
static const char *const needs_a[] = { "a", NULL };
static const struct module ma = { .name = "a", .enabled = on, .timeout_ms = t5, .check = a_apply,
				  .apply = a_apply, .outputs = OUT_PEERS, .leave = a_leave };
static const struct module mb = { .name = "b", .enabled = on, .check = b_apply, .apply = b_apply };
static const struct module mc = { .name = "c", .enabled = on, .needs = needs_b, .check = c_apply,
				  .apply = c_apply, .leave = c_leave };
static const struct module md = { .name = "d", .enabled = on, .needs = needs_a, .check = d_apply,
				  .apply = d_apply, .inputs = OUT_PEERS };
static const struct module me = { .name = "e", .enabled = off, .check = c_apply, .apply = c_apply,
				  .outputs = OUT_RDMA | OUT_GPU, .leave = c_leave };
static const struct module mf = { .name = "f", .enabled = on, .apply = f_apply };
static const struct module mg = { .name = "g", .check = g_check };
const struct module *const module_table[] = { &ma, &mb, &mc, &md, &me, &mf, &mg, NULL };

const struct module *module_find(const char *name)
{
	for (size_t i = 0; module_table[i]; i++)
		if (strcmp(module_table[i]->name, name) == 0)
			return module_table[i];
	return NULL;
}

static char root[] = "/tmp/hpcinit-test-runner.XXXXXX";

/* runner_leave: enabled steps' leave hooks, last step first, the first step's in a child, under the lock. */
static void test_leave(struct ctx *c)
{
	char *t, want[64];
	int lock_fd = -1;

	snprintf(want, sizeof(want), "c %ld\na ", (long)getpid());
	TEST_INTEQ(runner_leave(c, 1000), 0);
	t = test_get(root, "/leave");
	TEST_CHECK(t && strncmp(t, want, strlen(want)) == 0);     /* c here, then a; e is off */
	TEST_CHECK(t && strlen(t) > strlen(want) && atol(t + strlen(want)) != (long)getpid());
	TEST_CHECK(t && !strstr(t, "e "));
	free(t);
	/* the record's removal failed: 1 */
	test_put(root, "/leave", "");
	a_leave_fails = true;
	TEST_INTEQ(runner_leave(c, 1000), 1);
	a_leave_fails = false;
	/* the run lock held by a run in flight: no step's leave runs, 1 */
	test_put(root, "/leave", "");
	TEST_INTEQ(runner_take_lock(c, 1000, &lock_fd), 0);
	if (fork() == 0)
		_exit(runner_leave(c, 200));
	{
		int st = 0;

		wait(&st);
		TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 1);
	}
	close(lock_fd);
	t = test_get(root, "/leave");
	TEST_STREQ(t, "");
	free(t);
}

/* The worst-first summary, straight from report.c. */
static void test_summarize(void)
{
	struct report r;

	/* information alone explains nothing */
	report_init(&r);
	report_finding(&r, ST_OK, "x.info", "fine");
	TEST_INTEQ(r.status, ST_OK);
	TEST_INTEQ(report_problems(&r), 0);
	TEST_CHECK(!report_summarize(&r));
	TEST_STREQ(r.summary, "");
	TEST_STREQ(sb_str(&r.details), "fine\n");
	report_free(&r);

	/* one problem: no "(+N more)" */
	report_init(&r);
	report_finding(&r, ST_OK, "x.info", "fine");
	report_finding(&r, ST_CHANGED, "x.drift", "drift %d", 1);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(report_summarize(&r));
	TEST_STREQ(r.summary, "drift 1");
	report_free(&r);

	/* degraded beats changed though recorded later; failed beats both */
	report_init(&r);
	report_finding(&r, ST_CHANGED, "x.drift", "drift");
	report_finding(&r, ST_DEGRADED, "x.deg1", "deg one");
	report_finding(&r, ST_DEGRADED, "x.deg2", "deg two");
	TEST_INTEQ(r.status, ST_DEGRADED);
	TEST_CHECK(report_summarize(&r));
	TEST_STREQ(r.summary, "deg one (+2 more)");
	report_finding(&r, ST_FAILED, "x.fail", "multi\nline");
	TEST_INTEQ(r.status, ST_FAILED);
	r.summary[0] = '\0';
	TEST_CHECK(report_summarize(&r));
	TEST_STREQ(r.summary, "multi line (+3 more)");
	TEST_INTEQ(r.n_findings, 4);
	TEST_STREQ(r.findings[3].tag, "x.fail");
	TEST_INTEQ(r.findings[3].sev, ST_FAILED);
	report_free(&r);

	/* a status no finding explains (a write, an errno) leaves the summary to others */
	report_init(&r);
	report_finding(&r, ST_CHANGED, "x.drift", "drift");
	report_raise(&r, ST_FAILED);
	TEST_CHECK(!report_summarize(&r));
	TEST_STREQ(r.summary, "");
	report_free(&r);

	TEST_STREQ(finding_severity_name(ST_OK), "info");
	TEST_STREQ(finding_severity_name(ST_CHANGED), "change");
	TEST_STREQ(finding_severity_name(ST_DEGRADED), "degraded");
	TEST_STREQ(finding_severity_name(ST_FAILED), "failed");
}

static int nop(struct ctx *c, struct report *r) { return 0; }

/* Declarations that must stop the run before anything runs. */
static void test_check_table(void)
{
	static const char *const needs_typo[] = { "discovry", NULL };
	static const char *const needs_later[] = { "q", NULL };
	const struct module p = { .name = "p", .apply = nop, .outputs = OUT_PEERS | OUT_RDMA | OUT_GPU };
	const struct module q = { .name = "q", .apply = nop, .inputs = OUT_PEERS };
	const struct module typo = { .name = "t", .apply = nop, .needs = needs_typo };
	const struct module later = { .name = "l", .apply = nop, .needs = needs_later };
	const struct module hookless = { .name = "h" };
	const struct module p2 = { .name = "p2", .apply = nop, .outputs = OUT_PEERS };
	const struct module odd = { .name = "o", .apply = nop, .inputs = 1u << 7 };
	const struct module self = { .name = "s", .apply = nop, .outputs = OUT_PEERS, .inputs = OUT_PEERS };
	const struct module rdma_only = { .name = "r", .apply = nop, .outputs = OUT_RDMA | OUT_GPU };
	const struct module rdma_alone = { .name = "ra", .apply = nop, .outputs = OUT_RDMA };
	const struct module peers_rdma = { .name = "pr", .apply = nop, .outputs = OUT_PEERS | OUT_RDMA };
	const struct module *good[] = { &p, &q, NULL };
	const struct module *t1[] = { &p, &typo, NULL };
	const struct module *t2[] = { &p, &later, &q, NULL };
	const struct module *t3[] = { &p, &hookless, NULL };
	const struct module *t4[] = { &p, &p2, NULL };
	const struct module *t5_[] = { &q, &p, NULL };
	const struct module *t6[] = { &p, &odd, NULL };
	const struct module *t7[] = { &rdma_only, &self, NULL };
	const struct module *t8[] = { &rdma_only, &q, NULL };
	const struct module *t9[] = { &p, &q, &q, NULL };
	const struct module iso_rdma = { .name = "ir", .apply = nop, .outputs = OUT_RDMA, .isolate = true };
	const struct module iso_peers = { .name = "ip", .apply = nop, .outputs = OUT_PEERS, .isolate = true };
	const struct module *t10[] = { &iso_peers, &iso_rdma, NULL };
	const struct module iso_gpu = { .name = "ig", .apply = nop, .outputs = OUT_GPU, .isolate = true };
	const struct module gpu_reader = { .name = "gr", .apply = nop, .inputs = OUT_GPU };
	const struct module gpu_maker = { .name = "gm", .apply = nop, .outputs = OUT_GPU };
	const struct module *t11[] = { &iso_peers, &rdma_alone, &iso_gpu, NULL };
	const struct module *t12[] = { &peers_rdma, &gpu_reader, &gpu_maker, NULL };
	const struct module *good3[] = { &peers_rdma, &gpu_maker, &gpu_reader, NULL };
	const struct module *good2[] = { &iso_peers, &rdma_only, &q, NULL };

	TEST_INTEQ(runner_check_table(good), 0);
	TEST_INTEQ(runner_check_table(module_table), 0);
	TEST_INTEQ(runner_check_table(t1), -EINVAL);   /* misspelled need */
	TEST_INTEQ(runner_check_table(t2), -EINVAL);   /* need on a later module */
	TEST_INTEQ(runner_check_table(t3), -EINVAL);   /* neither check nor apply */
	TEST_INTEQ(runner_check_table(t4), -EINVAL);   /* two producers */
	TEST_INTEQ(runner_check_table(t5_), -EINVAL);  /* read before produced */
	TEST_INTEQ(runner_check_table(t6), -EINVAL);   /* unknown output bit */
	TEST_INTEQ(runner_check_table(t7), -EINVAL);   /* produces what it reads */
	TEST_INTEQ(runner_check_table(t8), -EINVAL);   /* nobody produces peers */
	TEST_INTEQ(runner_check_table(t9), -EINVAL);   /* two modules named q */
	TEST_INTEQ(runner_check_table(t11), -EINVAL);  /* an isolated step cannot hand on the GPUs */
	TEST_INTEQ(runner_check_table(t12), -EINVAL);  /* the GPUs read before the gpu step */
	TEST_INTEQ(runner_check_table(good3), 0);      /* the GPUs read after it */
	TEST_INTEQ(runner_check_table(t10), -EINVAL);  /* isolated, with an output the child cannot send */
	TEST_INTEQ(runner_check_table(good2), 0);      /* isolated producer of peers */
}

/*
 * An isolated step's child sends its report back whole: the status, the
 * summary, the details (plan-mode diffs, line for line), the findings and the
 * changed files, and its peers -- 3,000 of them, more than a pipe holds, read
 * back in linear time (the answer's headers are not parsed with sscanf).
 */
static int iso_step(struct ctx *c, struct report *r)
{
	report_detail(r, "--- /etc/hosts");
	report_detail(r, "+++ /etc/hosts (planned)");
	report_detail(r, "+10.0.0.1 node1\t\"quoted\" \\ back");
	report_finding(r, ST_DEGRADED, "iso.tag", "a finding with ünïcode");
	strlist_push(&r->changed, "/etc/hosts");
	strlist_push(&r->changed, "/home/alice/.ssh/authorized_keys");
	report_set(r, ST_DEGRADED, "the summary");
	if (c->out && c->out->peers)
		return -1;      /* an input would be NULL here: this module declares none */
	return 0;
}

static int iso_peers_step(struct ctx *c, struct report *r)
{
	struct peerset *ps = xcalloc(1, sizeof(*ps));

	for (unsigned i = 0; i < 3000; i++) {
		struct peer *p = peerset_add(ps);

		p->hostname = xasprintf("node%u", i);
		p->addr = xasprintf("10.0.%u.%u", i / 250, i % 250 + 1);
		p->slots = 4;
		p->self = i == 7;
		p->version = xstrdup("1");
		p->boot_id = xstrdup("b");
		p->updated = 1;
	}
	c->out->peers = ps;
	report_set(r, ST_OK, "%zu peers", ps->n);
	return 0;
}

/* Three peers, the second without an address: it cannot be read back (record_unpack). */
static int iso_bad_peer_step(struct ctx *c, struct report *r)
{
	struct peerset *ps = xcalloc(1, sizeof(*ps));

	for (unsigned i = 0; i < 3; i++) {
		struct peer *p = peerset_add(ps);

		p->hostname = xasprintf("node%u", i);
		p->addr = i == 1 ? NULL : xasprintf("10.0.0.%u", i + 1);
		p->slots = 4;
	}
	c->out->peers = ps;
	report_set(r, ST_OK, "3 nodes known");
	return 0;
}

/* A step whose child dies before it answers (a crash in a library it calls). */
static int iso_crash_step(struct ctx *c, struct report *r)
{
	(void)c;
	(void)r;
	raise(SIGKILL);
	return 0;
}

/*
 * A step whose child stays for the announce (iso.c's struct lingering):
 * what the step opened (here a mark in the child's memory, and its pid)
 * is still there when the announce runs, with the state the runner sends.
 */
static int stay_mark;

static int iso_stay_step(struct ctx *c, struct report *r)
{
	stay_mark = c->step_stays ? 42 : 7;
	report_set(r, ST_OK, "step in %d", (int)getpid());
	return 0;
}

static int iso_stay_announce(struct ctx *c, struct report *r)
{
	report_set(r, ST_CHANGED, "announce in %d, mark %d, state %s %s, deadline %s", (int)getpid(), stay_mark,
		   rstatus_name(c->node.status, RUN_APPLY), c->node.reason,
		   c->deadline_ms > now_ms() + 5000 ? "renewed" : "old");
	return 0;
}

static void test_isolated_stays(void)
{
	struct spec s = { 0 };
	char name[] = "glo";
	struct ctx c = { .spec = &s, .root = "", .mode = RUN_APPLY };
	const struct module ms = { .name = "stay", .apply = iso_stay_step, .check = iso_stay_step,
				   .announce = iso_stay_announce, .isolate = true,
				   .timeout_ms = default_timeout_ms };
	const struct module mcr = { .name = "crash", .apply = iso_crash_step, .check = iso_crash_step,
				    .announce = iso_stay_announce, .isolate = true };
	struct outputs view = { 0 }, all = { 0 };
	struct report rep;
	char pid[32] = "", want[160];
	int r;

	s.cluster.name = name;
	c.out = &view;

	/* the step answers and its child stays: the announce runs in it, with the state sent */
	c.deadline_ms = now_ms() + 20000;
	report_init(&rep);
	r = iso_run(&c, &ms, ms.apply, &rep, &view, 20000, &all);
	TEST_INTEQ(r, 0);
	TEST_CHECK(iso_staying("stay") > 0);
	TEST_CHECK(sscanf(rep.summary, "step in %31s", pid) == 1);
	TEST_INTEQ(stay_mark, 0);       /* the step ran in the child, not here */
	report_free(&rep);
	c.node = (struct node_state){ .known = true, .status = ST_FAILED, .reason = "hostfile.failed" };
	c.deadline_ms = now_ms();       /* the step's deadline is gone: the announce gets its own */
	report_init(&rep);
	r = iso_announce(&c, &rep);
	TEST_INTEQ(r, 0);
	TEST_CHECK(iso_staying("stay") == 0);
	snprintf(want, sizeof(want), "announce in %s, mark 42, state failed hostfile.failed, deadline renewed", pid);
	TEST_STREQ(rep.summary, want);
	report_free(&rep);

	/* nothing to announce: the child ends when its stdin closes, reaped */
	report_init(&rep);
	r = iso_run(&c, &ms, ms.apply, &rep, &view, 20000, &all);
	TEST_INTEQ(r, 0);
	TEST_CHECK(iso_staying("stay") > 0);
	report_free(&rep);
	{
		pid_t p = iso_staying("stay");

		iso_end();
		TEST_CHECK(iso_staying("stay") == 0);
		TEST_CHECK(kill(p, 0) < 0 && errno == ESRCH);
	}

	/* a child that dies before its answer does not stay: the step failed, runner.crashed */
	c.deadline_ms = now_ms() + 20000;
	report_init(&rep);
	r = iso_run(&c, &mcr, mcr.apply, &rep, &view, 20000, &all);
	TEST_INTEQ(r, -EIO);
	TEST_CHECK(iso_staying("stay") == 0);
	TEST_CHECK(rep.n_findings == 1 && strcmp(rep.findings[0].tag, "runner.crashed") == 0);
	report_free(&rep);
}

/*
 * Later steps in the child that stays (iso.c, iso_serves): one that may share
 * it runs there (same pid, what the staying step left in memory, its peers as
 * its input, no run so far, its own deadline); one that may not, or whose
 * input was set elsewhere since, gets a child of its own; one that crashes or
 * overruns there ends the child, and the next gets a child of its own; the
 * announce still runs in the child after the steps it served, as its step.
 */
static int iso_share_step(struct ctx *c, struct report *r)
{
	report_set(r, ST_OK, "in %d mark %d peers %zu run %s module %s deadline %llu", (int)getpid(), stay_mark,
		   c->out && c->out->peers ? c->out->peers->n : (size_t)0, c->run ? "set" : "none", c->module,
		   (unsigned long long)c->deadline_ms);
	return 0;
}

static int iso_share_announce(struct ctx *c, struct report *r)
{
	report_set(r, ST_CHANGED, "announce in %d module %s peers %zu", (int)getpid(), c->module,
		   c->out && c->out->peers ? c->out->peers->n : (size_t)0);
	return 0;
}

static int iso_stay_peers_step(struct ctx *c, struct report *r)
{
	stay_mark = 42;
	return iso_peers_step(c, r);
}

static int iso_slow_step(struct ctx *c, struct report *r)
{
	(void)c;
	(void)r;
	sleep(30);
	return 0;
}

/* Whether p became a zombie (dead, not reaped) within 5 s. */
static bool zombie(pid_t p)
{
	for (int i = 0; i < 500; i++) {
		char path[64], buf[256] = "";
		FILE *f;
		const char *st;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)p);
		if ((f = fopen(path, "r"))) {
			if (!fgets(buf, sizeof(buf), f))
				buf[0] = '\0';
			fclose(f);
		}
		st = strrchr(buf, ')');
		if (st && st[1] == ' ' && st[2] == 'Z')
			return true;
		usleep(10 * 1000);
	}
	return false;
}

/* The staying step run again (the peers it gave before freed): its child's pid. */
static pid_t stay_again(struct ctx *c, const struct module *m, struct outputs *view, const struct outputs *all)
{
	struct report rep;

	view->peers = peerset_free(view->peers);
	c->deadline_ms = now_ms() + 20000;
	report_init(&rep);
	TEST_INTEQ(iso_run(c, m, m->apply, &rep, view, 20000, all), 0);
	report_free(&rep);
	return iso_staying(m->name);
}

/* m, in the child p that stays, fails with ret and its one finding tag; the child ends with it. */
static void ends_child(struct ctx *c, const struct module *m, uint64_t tmo, int ret, const char *tag, pid_t p,
		       struct outputs *v)
{
	struct report rep;

	report_init(&rep);
	TEST_INTEQ(iso_run(c, m, m->apply, &rep, v, tmo, NULL), ret);
	TEST_CHECK(rep.n_findings == 1 && strcmp(rep.findings[0].tag, tag) == 0);
	TEST_CHECK(iso_staying("stay") == 0);
	TEST_CHECK(kill(p, 0) < 0 && errno == ESRCH);
	report_free(&rep);
}

static void test_isolated_serves(void)
{
	struct spec s = { 0 };
	char name[] = "glo";
	struct ctx c = { .spec = &s, .root = "", .mode = RUN_APPLY, .module = "stay" };
	const struct run_so_far sofar = { 0 };
	const struct module mst = { .name = "stay", .apply = iso_stay_peers_step, .check = iso_stay_peers_step,
				    .announce = iso_share_announce, .isolate = true, .outputs = OUT_PEERS,
				    .timeout_ms = default_timeout_ms };
	const struct module msh = { .name = "share", .apply = iso_share_step, .check = iso_share_step,
				    .isolate = true, .shares_child = true, .inputs = OUT_PEERS };
	const struct module mown = { .name = "own", .apply = iso_share_step, .check = iso_share_step,
				     .isolate = true, .inputs = OUT_PEERS };
	const struct module mrdma = { .name = "rdmain", .apply = iso_share_step, .check = iso_share_step,
				      .isolate = true, .shares_child = true, .inputs = OUT_RDMA };
	const struct module mcr = { .name = "crash", .apply = iso_crash_step, .check = iso_crash_step,
				    .isolate = true, .shares_child = true };
	const struct module mslow = { .name = "slow", .apply = iso_slow_step, .check = iso_slow_step,
				      .isolate = true, .shares_child = true };
	struct outputs view = { 0 }, all = { 0 }, v2;
	struct report rep;
	char pid[32], want[200];
	pid_t p;
	uint64_t dl;
	int r;

	s.cluster.name = name;
	c.out = &view;
	c.run = &sofar;
	stay_mark = 0;

	c.deadline_ms = now_ms() + 20000;
	report_init(&rep);
	r = iso_run(&c, &mst, mst.apply, &rep, &view, 20000, &all);
	TEST_INTEQ(r, 0);
	p = iso_staying("stay");
	TEST_CHECK(p > 0);
	TEST_CHECK(view.peers && view.peers->n == 3000);
	report_free(&rep);
	snprintf(pid, sizeof(pid), "%d", (int)p);

	/* may share: runs in the staying child, on its peers, under the deadline it was given */
	v2 = (struct outputs){ 0 };
	c.out = &v2;
	c.module = "share";
	dl = c.deadline_ms = now_ms() + 15000;
	report_init(&rep);
	r = iso_run(&c, &msh, msh.apply, &rep, &v2, 15000, NULL);
	TEST_INTEQ(r, 0);
	snprintf(want, sizeof(want), "in %s mark 42 peers 3000 run none module share deadline %llu", pid,
		 (unsigned long long)dl);
	TEST_STREQ(rep.summary, want);
	TEST_CHECK(iso_staying("stay") == p);
	TEST_CHECK(v2.peers == NULL);   /* it sends none back: not its output */
	report_free(&rep);

	/* may not share: a child of its own; the child that stays waits on */
	report_init(&rep);
	r = iso_run(&c, &mown, mown.apply, &rep, &v2, 15000, NULL);
	TEST_INTEQ(r, 0);
	TEST_CHECK(strncmp(rep.summary, "in ", 3) == 0 && strncmp(rep.summary + 3, pid, strlen(pid)) != 0);
	TEST_CHECK(strstr(rep.summary, " mark 0 ") != NULL);
	TEST_CHECK(iso_staying("stay") == p);
	report_free(&rep);

	/* its input set here since the child started: what the child holds is old, a child of its own */
	iso_outputs_set(OUT_RDMA);
	report_init(&rep);
	r = iso_run(&c, &mrdma, mrdma.apply, &rep, &v2, 15000, NULL);
	TEST_INTEQ(r, 0);
	TEST_CHECK(strstr(rep.summary, " mark 0 ") != NULL);
	report_free(&rep);
	/* another input, still the child's: shared */
	report_init(&rep);
	r = iso_run(&c, &msh, msh.apply, &rep, &v2, 15000, NULL);
	TEST_CHECK(r == 0 && strstr(rep.summary, " mark 42 ") != NULL);
	report_free(&rep);

	/* the announce, after the steps it served: in the child, as its step, on its step's peers */
	c.out = &view;
	c.node = (struct node_state){ .known = true, .status = ST_OK };
	report_init(&rep);
	r = iso_announce(&c, &rep);
	TEST_INTEQ(r, 0);
	snprintf(want, sizeof(want), "announce in %s module stay peers 3000", pid);
	TEST_STREQ(rep.summary, want);
	TEST_CHECK(iso_staying("stay") == 0);
	report_free(&rep);

	/* a step that crashes in it: the step failed (runner.crashed), the child stays no more */
	p = stay_again(&c, &mst, &view, &all);
	ends_child(&c, &mcr, 15000, -EIO, "runner.crashed", p, &v2);
	/* the next one that may share gets a child of its own */
	report_init(&rep);
	r = iso_run(&c, &msh, msh.apply, &rep, &v2, 15000, NULL);
	TEST_CHECK(r == 0 && strstr(rep.summary, " mark 0 ") != NULL);
	report_free(&rep);

	/* the child that stays died before the step was sent: reaped, the step in a child of its own */
	p = stay_again(&c, &mst, &view, &all);
	TEST_CHECK(kill(p, SIGKILL) == 0);
	TEST_CHECK(zombie(p));
	report_init(&rep);
	r = iso_run(&c, &msh, msh.apply, &rep, &v2, 15000, NULL);
	TEST_CHECK(r == 0 && strstr(rep.summary, " mark 0 ") != NULL);
	TEST_CHECK(iso_staying("stay") == 0);
	TEST_CHECK(kill(p, 0) < 0 && errno == ESRCH);
	report_free(&rep);

	/* a step that overruns in it: killed at its deadline (runner.deadline), the child with it */
	p = stay_again(&c, &mst, &view, &all);
	c.deadline_ms = now_ms() + 200;
	ends_child(&c, &mslow, 200, -ETIMEDOUT, "runner.deadline", p, &v2);
	peerset_free(view.peers);
	c.run = NULL;
}

static void test_isolated_roundtrip(void)
{
	struct spec s = { 0 };
	char name[] = "glo";
	struct ctx c = { .spec = &s, .root = "", .mode = RUN_PLAN };
	const struct module m = { .name = "iso", .apply = iso_step, .check = iso_step, .isolate = true };
	const struct module mp = { .name = "isop", .apply = iso_peers_step, .check = iso_peers_step,
				   .outputs = OUT_PEERS, .isolate = true };
	struct outputs view = { 0 };
	struct report rep, want;
	int r;

	s.cluster.name = name;
	c.out = &view;
	c.deadline_ms = now_ms() + 20000;
	report_init(&rep);
	r = iso_run(&c, &m, m.apply, &rep, &view, 20000, NULL);
	TEST_INTEQ(r, 0);
	/* the report the hook makes, made here: the child's must read back the same */
	report_init(&want);
	TEST_INTEQ(iso_step(&c, &want), 0);
	TEST_INTEQ(rep.status, want.status);
	TEST_STREQ(rep.summary, want.summary);
	TEST_STREQ(sb_str(&rep.details), sb_str(&want.details));
	TEST_CHECK(strstr(sb_str(&rep.details), "+10.0.0.1 node1\t\"quoted\" \\ back\n") != NULL);
	TEST_INTEQ(rep.n_findings, want.n_findings);
	for (size_t i = 0; i < rep.n_findings && i < want.n_findings; i++) {
		TEST_INTEQ(rep.findings[i].sev, want.findings[i].sev);
		TEST_STREQ(rep.findings[i].tag, want.findings[i].tag);
		TEST_STREQ(rep.findings[i].text, want.findings[i].text);
	}
	TEST_INTEQ(rep.changed.n, 2);
	for (size_t i = 0; i < rep.changed.n && i < want.changed.n; i++)
		TEST_STREQ(rep.changed.v[i], want.changed.v[i]);
	report_free(&want);
	TEST_CHECK(view.peers == NULL);
	report_free(&rep);

	c.mode = RUN_APPLY;
	report_init(&rep);
	r = iso_run(&c, &mp, mp.apply, &rep, &view, 20000, NULL);
	TEST_INTEQ(r, 0);
	TEST_STREQ(rep.summary, "3000 peers");
	TEST_CHECK(view.peers != NULL);
	if (view.peers) {
		TEST_INTEQ(view.peers->n, 3000);
		TEST_STREQ(view.peers->v[2999].hostname, "node2999");
		TEST_STREQ(view.peers->v[2999].addr, "10.0.11.250");
		TEST_CHECK(view.peers->v[7].self && !view.peers->v[8].self);
	}
	view.peers = peerset_free(view.peers);
	report_free(&rep);

	/*
	 * a peer the runner cannot read back (here: no address, which record_unpack refuses):
	 * the step fails, tagged runner.peer-unreadable, and hands on no list at all -- never
	 * one node shorter than the count the step's own report gave (issue 37)
	 */
	{
		const struct module mbad = { .name = "isobad", .apply = iso_bad_peer_step,
					    .check = iso_bad_peer_step, .outputs = OUT_PEERS, .isolate = true };

		report_init(&rep);
		r = iso_run(&c, &mbad, mbad.apply, &rep, &view, 20000, NULL);
		TEST_INTEQ(r, -EBADMSG);
		TEST_INTEQ(rep.status, ST_FAILED);
		TEST_CHECK(rep.n_findings == 1 && strcmp(rep.findings[0].tag, "runner.peer-unreadable") == 0);
		TEST_CHECK(rep.n_findings == 1 && strstr(rep.findings[0].text, "peer 2 of the answer") != NULL);
		TEST_CHECK(view.peers == NULL);
		view.peers = peerset_free(view.peers);
		report_free(&rep);
	}

	/* the child killed before it answers: the step fails, tagged runner.crashed, the signal named */
	{
		const struct module mcr = { .name = "crash", .apply = iso_crash_step, .check = iso_crash_step,
					   .isolate = true };

		report_init(&rep);
		r = iso_run(&c, &mcr, mcr.apply, &rep, &view, 20000, NULL);
		TEST_INTEQ(r, -EIO);
		TEST_INTEQ(rep.status, ST_FAILED);
		TEST_CHECK(rep.n_findings == 1 && strcmp(rep.findings[0].tag, "runner.crashed") == 0);
		TEST_CHECK(rep.n_findings == 1 && strstr(rep.findings[0].text, "signal Killed") != NULL);
		report_free(&rep);
	}
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_APPLY };
	struct run_opts o = { .command = "apply", .lock_timeout_ms = 1000 };
	struct run_result res;
	uint64_t t0;
	char *j;
	int code;

	test_summarize();
	test_check_table();
	test_isolated_roundtrip();
	test_isolated_stays();
	test_isolated_serves();
	if (!mkdtemp(root))
		return 1;
	char name[] = "glo";
	s.cluster.name = name;
	char file[] = "/x.yaml";
	s.file = file;
	t0 = now_ms();
	code = runner_run(&c, &o, &res);
	TEST_INTEQ(code, 1);            /* b failed */
	TEST_INTEQ(norder, 3);          /* a, b, d ran in order; c skipped */
	TEST_INTEQ(order[0], 0);
	TEST_INTEQ(order[1], 1);
	TEST_INTEQ(order[2], 3);
	TEST_CHECK(seen_deadline >= t0 + 5000 && seen_deadline <= now_ms() + 5000);
	TEST_INTEQ(res.reports[1].status, ST_FAILED);
	TEST_STREQ(res.reports[1].summary, "Input/output error");
	TEST_INTEQ(res.reports[2].status, ST_SKIPPED);
	TEST_STREQ(res.reports[2].summary, "needs b, which failed");
	TEST_CHECK(res.reports[2].n_findings == 1 && strcmp(res.reports[2].findings[0].tag, NEEDS_FAILED_TAG) == 0);
	TEST_INTEQ(res.reports[3].status, ST_DEGRADED);
	TEST_INTEQ(res.reports[4].status, ST_SKIPPED);
	TEST_STREQ(res.reports[4].summary, "no e section in the spec");
	/* findings: worst first in the summary, structured in the JSON */
	TEST_INTEQ(f_calls, 1);
	TEST_INTEQ(res.reports[5].status, ST_FAILED);
	TEST_STREQ(res.reports[5].summary, "bad \"first\" (+3 more)");
	TEST_INTEQ(res.reports[5].n_findings, 5);
	/* hook defaults: g has only check, no enabled, no timeout */
	TEST_INTEQ(g_calls, 1);
	TEST_INTEQ(res.reports[6].status, ST_OK);
	TEST_STREQ(res.reports[6].summary, "in sync");
	TEST_CHECK(g_deadline >= t0 + DEFAULT_TIMEOUT_MS && g_deadline <= now_ms() + DEFAULT_TIMEOUT_MS);
	/* outputs: d declared peers and saw a's; b declared nothing and saw none */
	TEST_CHECK(made_peers != NULL);
	TEST_CHECK(d_saw_out == made_peers);
	TEST_CHECK(b_had_out);
	TEST_CHECK(b_saw_out == NULL);
	TEST_CHECK(res.out.peers == made_peers);       /* res owns it now */
	TEST_CHECK(c.out == NULL);
	j = runner_json(&c, &o, &res);
	TEST_CHECK(strstr(j, "\"name\": \"b\", \"status\": \"failed\"") != NULL);
	TEST_CHECK(strstr(j, "\"findings\": [{\"severity\": \"info\", \"tag\": \"f.info\", "
			  "\"text\": \"just so you know\"}, {\"severity\": \"change\", \"tag\": \"f.drift\", "
			  "\"text\": \"drifted\"}, {\"severity\": \"failed\", \"tag\": \"f.bad.first\", "
			  "\"text\": \"bad \\\"first\\\"\"}, {\"severity\": \"degraded\"") != NULL);
	TEST_CHECK(strstr(j, "\"summary\": \"a did it\", \"details\": [], \"findings\": [], "
			  "\"changed\": [\"/etc/a\"]") != NULL);
	TEST_CHECK(strstr(j, "\"details\": [\"b broke: \\\"quoted\\\"\"]") != NULL);
	TEST_CHECK(strstr(j, "\"changed\": [\"/etc/a\"]") != NULL);
	TEST_CHECK(strstr(j, "\"exit_code\": 1") != NULL);
	free(j);
	run_result_free(&res);

	/* --only d pulls in a (its need); b and c are not run at all. */
	memset(calls, 0, sizeof(calls));
	norder = 0;
	strlist_push(&o.only, "d");
	TEST_INTEQ(runner_check_only(&o.only), 0);
	code = runner_run(&c, &o, &res);
	TEST_INTEQ(code, 3);            /* only d degraded */
	TEST_INTEQ(calls[0], 1);
	TEST_INTEQ(calls[1], 0);
	TEST_INTEQ(calls[3], 1);
	TEST_CHECK(!res.ran[1] && !res.ran[2]);
	run_result_free(&res);
	strlist_free(&o.only);

	/* check mode: drift is exit 1 and nothing is locked or written */
	c.mode = RUN_CHECK;
	strlist_push(&o.only, "a");
	code = runner_run(&c, &o, &res);
	TEST_INTEQ(code, 1);
	run_result_free(&res);
	strlist_free(&o.only);

	/* check mode on a module with only apply: apply runs (it writes nothing outside RUN_APPLY) */
	strlist_push(&o.only, "f");
	code = runner_run(&c, &o, &res);
	TEST_INTEQ(code, 1);
	TEST_INTEQ(f_calls, 2);
	TEST_STREQ(res.reports[5].summary, "bad \"first\" (+3 more)");
	run_result_free(&res);
	strlist_free(&o.only);

	strlist_push(&o.only, "zz");
	TEST_INTEQ(runner_check_only(&o.only), -EINVAL);
	strlist_free(&o.only);

	/* the status document of an apply carries the findings */
	c.mode = RUN_APPLY;
	strlist_push(&o.only, "f");
	TEST_INTEQ(runner_run(&c, &o, &res), 1);
	run_result_free(&res);
	strlist_free(&o.only);
	{
		char *p = fs_rooted(root, STATUS_PATH), *text = NULL;

		TEST_INTEQ(fs_read_host(p, 1 << 20, &text, NULL), 0);
		TEST_CHECK(text && strstr(text, "\"command\": \"apply\""));
		TEST_CHECK(text && strstr(text, "\"tag\": \"f.bad.second\""));
		free(text);
		free(p);
		/* the status document with findings still reads back (libyaml) */
		FILE *out = tmpfile();

		TEST_CHECK(out != NULL);
		TEST_INTEQ(status_print(&c, STATUS_PATH, out), 0);
		fclose(out);
	}
	test_leave(&c);
	test_rm_rf(root);
	TEST_EXIT();
}
