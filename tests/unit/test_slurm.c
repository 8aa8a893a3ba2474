/* SPDX-License-Identifier: MIT */
/*
 * slurm: the step's pure parts (scontrol's answers as Debian 12's Slurm
 * 22.05.8 printed them on the simulated cluster, the reason hpcinit owns,
 * features, memory), the readiness read from the run so far, and the spec
 * section's errors with their place.
 */
#include "config.h"

#include <errno.h>

#include "../../modules/slurm/words.c"
#include "../../modules/slurm/slurm.c"
#include "runner.h"
#include "test.h"
#include "testfs.h"

/* Copied from "scontrol --oneliner show node" (slurm-wlm 22.05.8), names shortened. */
static const char drained[] =
	"NodeName=slx318-3 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 CPUEfctv=2 CPUTot=2 CPULoad=11.06 "
	"AvailableFeatures=simc,hx ActiveFeatures=simc,hx Gres=(null) NodeAddr=198.19.41.13 "
	"NodeHostName=slx318-3 Version=22.05.8 OS=Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0  "
	"RealMemory=1000 AllocMem=0 FreeMem=18818 Sockets=1 Boards=1 State=IDLE+DRAIN+DYNAMIC_NORM "
	"ThreadsPerCore=1 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A Partitions=main  "
	"BootTime=2026-11-26T17:13:26 SlurmdStartTime=2026-11-26T17:31:46 LastBusyTime=2026-11-26T17:31:48 "
	"CfgTRES=cpu=2,mem=1000M,billing=2 AllocTRES= CapWatts=n/a CurrentWatts=0 AveWatts=0 "
	"ExtSensorsJoules=n/s ExtSensorsWatts=0 ExtSensorsTemp=n/s "
	"Reason=hpcinit:nfs.mount.failed [root@2026-11-26T17:31:50]\n";
static const char resumed[] =
	"NodeName=slx318-3 Arch=x86_64 CoresPerSocket=2  CPUAlloc=0 AvailableFeatures=simc,hx "
	"State=IDLE+DYNAMIC_NORM+NOT_RESPONDING ThreadsPerCore=1 TmpDisk=0 Weight=1\n";

static void test_parse(void)
{
	struct slurm_node n;

	TEST_INTEQ(slurm_parse_node(drained, &n), 0);
	TEST_CHECK(n.found);
	TEST_STREQ(n.state, "IDLE+DRAIN+DYNAMIC_NORM");
	TEST_STREQ(n.reason, "hpcinit:nfs.mount.failed");
	TEST_STREQ(n.addr, "198.19.41.13");
	TEST_CHECK(n.drain && !n.busy && !n.down);
	TEST_CHECK(slurm_reason_ours(n.reason));

	TEST_INTEQ(slurm_parse_node(resumed, &n), 0);
	TEST_CHECK(n.found && !n.drain && n.down);
	TEST_STREQ(n.reason, "");

	/* An admin's reason with spaces and brackets of its own. */
	TEST_INTEQ(slurm_parse_node("NodeName=a State=MIXED+DRAIN Reason=bad dimm [slot 3] [alice@2026-11-26T10:00:00]",
				    &n), 0);
	TEST_STREQ(n.reason, "bad dimm [slot 3]");
	TEST_CHECK(n.drain && n.busy);
	TEST_CHECK(!slurm_reason_ours(n.reason));
	/* DRAINING is a drain; DRAINED too; "IDLE*" is not responding. */
	TEST_INTEQ(slurm_parse_node("NodeName=a State=ALLOCATED+DRAINING", &n), 0);
	TEST_CHECK(n.drain && n.busy);
	TEST_INTEQ(slurm_parse_node("NodeName=a State=IDLE*", &n), 0);
	TEST_CHECK(n.down && !n.drain);
	TEST_INTEQ(slurm_parse_node("NodeName=a State=COMPLETING", &n), 0);
	TEST_CHECK(n.busy);

	TEST_INTEQ(slurm_parse_node("Node slx318-9 not found\n", &n), 0);
	TEST_CHECK(!n.found);
	TEST_INTEQ(slurm_parse_node("scontrol: error: Could not establish a configuration source\n", &n), -EBADMSG);
	TEST_INTEQ(slurm_parse_node("", &n), -EBADMSG);
}

static void test_reason(void)
{
	struct strlist t = { 0 };
	char *r;

	r = slurm_reason(&t);
	TEST_STREQ(r, "hpcinit:unknown");
	free(r);
	strlist_push(&t, "nfs.mount.failed");
	r = slurm_reason(&t);
	TEST_STREQ(r, "hpcinit:nfs.mount.failed");
	free(r);
	strlist_push(&t, "rdma.port.down");
	r = slurm_reason(&t);
	TEST_STREQ(r, "hpcinit:nfs.mount.failed,rdma.port.down");
	free(r);
	for (int i = 0; i < 40; i++)
		strlist_push(&t, "memlock.pam.inactive");
	r = slurm_reason(&t);
	TEST_CHECK(strlen(r) <= SLURM_REASON_MAX);
	TEST_CHECK(strstr(r, "hpcinit:nfs.mount.failed,rdma.port.down,memlock") == r);
	TEST_CHECK(strstr(r, "+") != NULL);
	free(r);
	strlist_free(&t);
	TEST_CHECK(!slurm_reason_ours("hpcinit"));
	TEST_CHECK(!slurm_reason_ours("HPCINIT:x"));
	TEST_CHECK(!slurm_reason_ours(NULL));
}

static char *joined(const struct strlist *l)
{
	struct strbuf sb = { 0 };

	for (size_t i = 0; i < l->n; i++)
		sb_printf(&sb, "%s%s", i ? "," : "", l->v[i]);
	return sb_steal(&sb);
}

static void test_features(void)
{
	struct strlist extra = { 0 }, f = { 0 };
	char *j, *conf;

	strlist_push(&extra, "hbv4");
	strlist_push(&extra, "c1");
	slurm_features("c1", "Standard_HB176rs_v4", NULL, &extra, &f);
	j = joined(&f);
	TEST_STREQ(j, "c1,standard_hb176rs_v4,hbv4");
	free(j);
	conf = slurm_node_conf(1000, &f);
	TEST_STREQ(conf, "RealMemory=1000 Feature=c1,standard_hb176rs_v4,hbv4");
	free(conf);
	strlist_free(&f);
	/* no VM size fact; the IB domain once recorded; odd characters made safe */
	slurm_features("c1", "", "a b/c", NULL, &f);
	j = joined(&f);
	TEST_STREQ(j, "c1,ib-a_b_c");
	free(j);
	strlist_free(&f);
	strlist_free(&extra);

	TEST_INTEQ(slurm_meminfo_total_kib("MemTotal:       24683520 kB\nMemFree: 1 kB\n"), 24683520);
	TEST_INTEQ(slurm_meminfo_total_kib("MemFree: 1 kB\nMemTotal: 2048 kB\n"), 2048);
	TEST_INTEQ(slurm_meminfo_total_kib("SwapMemTotal: 5 kB\n"), 0);
	TEST_INTEQ(slurm_meminfo_total_kib(""), 0);
	/* 24105 MiB less 3 % (723) = 23382 */
	TEST_INTEQ(slurm_real_memory_mb(24683520, 3), 23382);
	TEST_INTEQ(slurm_real_memory_mb(24683520, 0), 24105);
	TEST_INTEQ(slurm_real_memory_mb(0, 3), 1);
}

/* The readiness from the run so far: the worst earlier status and its tags. */
static void test_readiness(void)
{
	size_t n = 0, slurm_i = 0;
	struct run_result res = { 0 };
	struct run_so_far sofar;
	struct ctx c = { 0 };
	struct strlist tags = { 0 };
	bool ran;
	char *j;

	while (module_table[n])
		n++;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(module_table[i]->name, "slurm"))
			slurm_i = i;
	TEST_CHECK(slurm_i == n - 1);
	res.n = n;
	res.reports = xcalloc(n, sizeof(*res.reports));
	res.ran = xcalloc(n, sizeof(*res.ran));
	for (size_t i = 0; i < n; i++)
		report_init(&res.reports[i]);
	/* as the runner hands it to slurm, the last step: the steps before it */
	sofar = (struct run_so_far){ slurm_i, module_table, res.reports, res.ran };
	c.run = &sofar;

	TEST_INTEQ(readiness(&c, &tags, &ran), ST_OK);
	TEST_CHECK(!ran);
	for (size_t i = 0; i < n; i++)
		res.ran[i] = true;
	TEST_INTEQ(readiness(&c, &tags, &ran), ST_OK);
	TEST_CHECK(ran && tags.n == 0);
	/* drift (check) is no problem; a degraded step is */
	report_finding(&res.reports[0], ST_CHANGED, "memlock.file.differs", "x");
	report_finding(&res.reports[1], ST_DEGRADED, "kernel.hold.missing", "x");
	report_finding(&res.reports[2], ST_DEGRADED, "rdma.port.down", "x");
	report_finding(&res.reports[2], ST_OK, "rdma.info", "x");
	TEST_INTEQ(readiness(&c, &tags, &ran), ST_DEGRADED);
	j = joined(&tags);
	TEST_STREQ(j, "kernel.hold.missing,rdma.port.down");
	free(j);
	strlist_free(&tags);
	/* a failed step outranks them; one without a finding of its own gets <step>.failed */
	report_finding(&res.reports[3], ST_FAILED, "nfs.mount.failed", "x");
	report_set(&res.reports[4], ST_FAILED, "died");
	TEST_INTEQ(readiness(&c, &tags, &ran), ST_FAILED);
	j = joined(&tags);
	{
		char *want = xasprintf("nfs.mount.failed,%s.failed", module_table[4]->name);

		TEST_STREQ(j, want);
		free(want);
	}
	free(j);
	strlist_free(&tags);
	/* hpcinit check: drift is no reason to drain (the node's state stays ready on drift);
	 * what a job would hit the steps report as failed (nfs.mount.absent) */
	for (size_t i = 0; i < n; i++) {
		report_free(&res.reports[i]);
		report_init(&res.reports[i]);
	}
	c.mode = RUN_CHECK;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(module_table[i]->name, "hostfile") || !strcmp(module_table[i]->name, "discovery") ||
		    !strcmp(module_table[i]->name, "memlock"))
			report_finding(&res.reports[i], ST_CHANGED, "x.drift", "x");
	TEST_INTEQ(readiness(&c, &tags, &ran), ST_OK);
	TEST_CHECK(tags.n == 0);
	for (size_t i = 0; i < n; i++)
		if (!strcmp(module_table[i]->name, "nfs"))
			report_finding(&res.reports[i], ST_FAILED, "nfs.mount.absent", "x");
	TEST_INTEQ(readiness(&c, &tags, &ran), ST_FAILED);
	j = joined(&tags);
	TEST_STREQ(j, "nfs.mount.absent");
	free(j);
	strlist_free(&tags);
	for (size_t i = 0; i < n; i++) {
		report_free(&res.reports[i]);
		report_init(&res.reports[i]);
		report_finding(&res.reports[i], ST_CHANGED, "x.changed", "x");
	}
	c.mode = RUN_APPLY;
	TEST_INTEQ(readiness(&c, &tags, &ran), ST_OK);
	report_finding(&res.reports[3], ST_FAILED, "nfs.mount.failed", "x");
	report_set(&res.reports[4], ST_FAILED, "died");
	/* the slurm step's own report is not in its view of the run */
	report_finding(&res.reports[slurm_i], ST_FAILED, "slurm.x", "x");
	TEST_INTEQ(readiness(&c, &tags, &ran), ST_FAILED);
	TEST_CHECK(tags.n == 2);
	strlist_free(&tags);
	run_result_free(&res);
}

/* The IB domain feature comes from this node's own record (discovery's peers). */
static char pk1[] = "0x8001", pk2[] = "0x800b", pg[] = "pg7";

static void test_ib_domain(void)
{
	struct peer v[2] = { { 0 } };
	struct peerset ps = { v, 2 };
	struct outputs out = { 0 };
	struct ctx c = { 0 };
	struct strlist f = { 0 };
	char *d, *j;

	TEST_CHECK(ib_domain(&c) == NULL);
	c.out = &out;
	TEST_CHECK(ib_domain(&c) == NULL);
	out.peers = &ps;
	v[0].pkey = pk1;
	v[1].self = true;
	TEST_CHECK(ib_domain(&c) == NULL);      /* self has no fabric identity */
	v[1].pkey = pk2;
	v[1].placement_group = pg;
	d = ib_domain(&c);
	TEST_STREQ(d, "0x800b-pg7");
	slurm_features("c1", NULL, d, NULL, &f);
	j = joined(&f);
	TEST_STREQ(j, "c1,ib-0x800b-pg7");
	free(j);
	free(d);
	strlist_free(&f);
}

static bool details_have(const struct report *r, const char *needle)
{
	return strstr(sb_str(&r->details), needle) != NULL;
}

static bool has_tag(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (!strcmp(r->findings[i].tag, tag))
			return true;
	return false;
}

/*
 * The key on a fake root: plan says only that it differs (never its bytes);
 * a key group or others may read, or a symbolic link, is refused.
 */
static void test_key(void)
{
	static char root[] = "/tmp/hpcinit-test-slurm.XXXXXX";
	static char name[] = "c1", keyfile[] = "/etc/hpcinit/munge.key";
	struct spec s = { 0 };
	struct ctx c = { 0 };
	struct report r;
	char *p;

	if (geteuid() != 0) {
		printf("# key checks need root (the key must be root's): not run\n");
		return;
	}
	if (!mkdtemp(root))
		return;
	test_put(root, "/etc/passwd", "root:x:0:0::/root:/bin/sh\nmunge:x:106:111::/nonexistent:/usr/sbin/nologin\n");
	test_put(root, "/etc/hpcinit/munge.key", "SECRETKEYBYTES-SECRETKEYBYTES-SECRETKEYBYTES\n");
	p = fs_rooted(root, "/etc/hpcinit/munge.key");
	TEST_CHECK(chmod(p, 0600) == 0);
	s.cluster.name = name;
	s.slurm.present = true;
	s.slurm.key_file = keyfile;
	c.spec = &s;
	c.root = root;
	c.mode = RUN_PLAN;
	c.deadline_ms = now_ms() + 10000;

	report_init(&r);
	TEST_INTEQ(slurm_run(&c, &r), 0);
	TEST_CHECK(has_tag(&r, "slurm.key.differs"));
	TEST_CHECK(!details_have(&r, "SECRETKEY"));
	TEST_CHECK(r.status == ST_SKIPPED || r.status == ST_CHANGED);
	TEST_CHECK(!test_get(root, "/etc/munge/munge.key"));   /* plan writes nothing */
	report_free(&r);

	TEST_CHECK(chmod(p, 0640) == 0);
	report_init(&r);
	TEST_CHECK(slurm_run(&c, &r) < 0);
	TEST_CHECK(has_tag(&r, "slurm.key.unsafe"));
	TEST_CHECK(details_have(&r, "mode 0640"));
	report_free(&r);

	TEST_CHECK(chmod(p, 0600) == 0);
	{
		char *real = fs_rooted(root, "/etc/hpcinit/real.key");

		TEST_CHECK(rename(p, real) == 0);
		TEST_CHECK(symlink(real, p) == 0);
		free(real);
	}
	report_init(&r);
	TEST_CHECK(slurm_run(&c, &r) < 0);
	TEST_CHECK(has_tag(&r, "slurm.key.missing"));
	TEST_CHECK(details_have(&r, "is a symbolic link; refused"));
	report_free(&r);
	free(p);
	test_rm_rf(root);
}

static const char *first_error(const char *text, unsigned *line, unsigned *col)
{
	static char msg[1024];
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	int r = spec_load_buffer("t.yaml", text, strlen(text), &s, &d);

	TEST_INTEQ(r, -EINVAL);
	msg[0] = '\0';
	if (d.n) {
		snprintf(msg, sizeof(msg), "%s", d.v[0].msg);
		*line = d.v[0].line;
		*col = d.v[0].col;
	}
	TEST_INTEQ(d.n, 1);
	diags_free(&d);
	spec_free(s);
	return msg;
}

static void test_spec(void)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	unsigned line = 0, col = 0;
	const char *m;
	static const char good[] = "version: 1\ncluster: {name: c1}\n"
		"slurm:\n  conf_servers: [head1, \"10.0.0.4:6817\"]\n  features: [hbv4]\n"
		"  memory_margin_percent: 5\n  key_file: /etc/hpcinit/munge.key\n  leave_wait: 5m\n";
	static const char own[] = "version: 1\ncluster: {name: c1, role: head}\nslurm: {auth: slurm}\n";

	TEST_INTEQ(spec_load_buffer("t.yaml", good, strlen(good), &s, &d), 0);
	TEST_CHECK(s && s->slurm.present && s->slurm.conf_servers.n == 2);
	TEST_STREQ(s->slurm.conf_servers.v[1], "10.0.0.4:6817");
	TEST_INTEQ(s->slurm.memory_margin_pct, 5);
	TEST_INTEQ(s->slurm.leave_wait_ms, 300000);
	TEST_STREQ(s->slurm.key_file, "/etc/hpcinit/munge.key");
	s = spec_free(s);
	/* a head needs no conf_servers; the defaults */
	TEST_INTEQ(spec_load_buffer("t.yaml", "version: 1\ncluster: {name: c1, role: head}\nslurm: {}\n", 52,
				    &s, &d), 0);
	TEST_CHECK(s && s->slurm.memory_margin_pct == 3 && s->slurm.leave_wait_ms == 60000 && !s->slurm.key_file);
	TEST_INTEQ(s->slurm.auth, SLURM_AUTH_MUNGE);
	s = spec_free(s);
	/* Slurm's own key (auth/slurm) instead of munge's */
	TEST_INTEQ(spec_load_buffer("t.yaml", own, strlen(own), &s, &d), 0);
	TEST_CHECK(s && s->slurm.auth == SLURM_AUTH_SLURM);
	s = spec_free(s);
	m = first_error("version: 1\ncluster: {name: c1, role: head}\nslurm: {auth: jwt}\n", &line, &col);
	TEST_CHECK(strstr(m, "munge") != NULL && strstr(m, "slurm") != NULL);
	TEST_CHECK(line == 3 && col == 15);

	m = first_error("version: 1\ncluster: {name: c1}\nslurm: {features: [hbv4]}\n", &line, &col);
	TEST_CHECK(strstr(m, "a compute node needs slurm.conf_servers") != NULL);
	TEST_CHECK(line == 3 && col == 1);
	m = first_error("version: 1\ncluster: {name: c1}\nslurm:\n  conf_servers: [h1]\n  features: [ok, \"a b\"]\n",
			&line, &col);
	TEST_CHECK(strstr(m, "1 to 63 letters, digits") != NULL);
	TEST_CHECK(line == 5 && col == 18);
	m = first_error("version: 1\ncluster: {name: c1}\nslurm: {conf_servers: [\"h1:0\"]}\n", &line, &col);
	TEST_CHECK(strstr(m, "port from 1 to 65535") != NULL);
	TEST_CHECK(line == 3 && col == 24);
	m = first_error("version: 1\ncluster: {name: c1}\nslurm: {conf_servers: [\"-h\"]}\n", &line, &col);
	TEST_CHECK(strstr(m, "expected a host like head1") != NULL);
	m = first_error("version: 1\ncluster: {name: c1}\nslurm: {conf_servers: [h], memory_margin_percent: 60}\n",
			&line, &col);
	TEST_CHECK(line == 3 && col == 51);
	m = first_error("version: 1\ncluster: {name: c1}\nslurm: {conf_servers: [h], key_file: munge.key}\n",
			&line, &col);
	TEST_CHECK(line == 3 && col == 38);
	m = first_error("version: 1\ncluster: {name: c1}\nslurm: {conf_servers: [h], conf_server: h}\n", &line, &col);
	TEST_CHECK(strstr(m, "conf_servers") != NULL);
}

/* Arrival: the window scales with the cluster, N consecutive addresses take N even slots. */
static void test_arrival(void)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	unsigned line = 0, col = 0;
	static char seen[10000];
	uint64_t last = 0, prev = 0;
	size_t n = 0;
	char *t;

	TEST_CHECK(slurm_register_window_ms(SLURM_WINDOW_AUTO, 1000) == 10000);
	TEST_CHECK(slurm_register_window_ms(SLURM_WINDOW_AUTO, 1) == 0);     /* size unknown: no wait */
	TEST_CHECK(slurm_register_window_ms(SLURM_WINDOW_AUTO, 0) == 0);
	TEST_CHECK(slurm_register_window_ms(SLURM_WINDOW_AUTO, 100000) == SLURM_WINDOW_MAX_MS);
	TEST_CHECK(slurm_register_window_ms(5000, 1) == 5000);
	TEST_CHECK(slurm_register_window_ms(0, 1000) == 0);
	/* a scale set's 1000 addresses from .4 (Azure keeps the first four): 1000 slots 10 ms apart */
	for (uint64_t host = 4; host < 1004; host++) {
		uint64_t ms = slurm_register_delay_ms(10000, 1000, host);

		TEST_CHECK(ms < 10000 && ms % 10 == 0 && !seen[ms]);
		seen[ms] = 1;
		if (ms > last)
			last = ms;
	}
	for (size_t i = 0; i < sizeof(seen); i++)
		if (seen[i]) {
			TEST_CHECK(n == 0 || i - prev == 10);
			prev = i;
			n++;
		}
	TEST_CHECK(n == 1000 && last == 9990);
	TEST_CHECK(slurm_register_delay_ms(0, 1000, 77) == 0);
	/* size unknown, a window given: the name's hash, in milliseconds, inside the window */
	TEST_CHECK(slurm_register_delay_ms(2000, 0, slurm_name_index("cn-0042")) < 2000);
	TEST_CHECK(slurm_name_index("cn-0042") == slurm_name_index("cn-0042"));
	TEST_CHECK(slurm_name_index("cn-0042") != slurm_name_index("cn-0043"));
	t = slurm_told_line("cn1", NULL);
	TEST_STREQ(t, "cn1 ready\n");
	free(t);
	t = slurm_told_line("cn1", "hpcinit:nfs.mount.failed");
	TEST_STREQ(t, "cn1 hpcinit:nfs.mount.failed\n");
	free(t);
	/* the spec key; unset is "scaled" (UINT64_MAX), at most an hour */
	TEST_INTEQ(spec_load_buffer("t.yaml", "version: 1\ncluster: {name: c1, role: head}\nslurm: {}\n", 52,
				    &s, &d), 0);
	TEST_CHECK(s && s->slurm.register_window_ms == SLURM_WINDOW_AUTO);
	s = spec_free(s);
	TEST_INTEQ(spec_load_buffer("t.yaml", "version: 1\ncluster: {name: c1, role: head}\n"
				    "slurm: {register_window: 30s}\n", 73, &s, &d), 0);
	TEST_CHECK(s && s->slurm.register_window_ms == 30000);
	s = spec_free(s);
	first_error("version: 1\ncluster: {name: c1, role: head}\nslurm: {register_window: 2h}\n", &line, &col);
	TEST_CHECK(line == 3 && col == 26);
}

static struct gpu_inventory inv_of(size_t n, const char *type)
{
	struct gpu_inventory inv;

	memset(&inv, 0, sizeof(inv));
	inv.n = inv.n_usable = n;
	inv.expected = (unsigned)n;
	for (size_t i = 0; i < n; i++) {
		snprintf(inv.gpu[i].pci, sizeof(inv.gpu[i].pci), "%04x:00:00.0", (unsigned)(i + 1) & 0xffffu);
		inv.gpu[i].bound = inv.gpu[i].dev_node = true;
		inv.gpu[i].minor = (int)i;
		snprintf(inv.gpu[i].type, sizeof(inv.gpu[i].type), "%s", type);
	}
	return inv;
}

/* The GRES and gres.conf lines from the GPUs found, exactly. */
static void test_gres(void)
{
	struct gpu_inventory inv = inv_of(8, "h100");
	char *g = slurm_gres(&inv), *conf = slurm_gres_conf(&inv);
	static const char hdr[] = "# Written by hpcinit (the slurm step) from the GPUs this node has; do not edit.\n"
				  "# The head's gres.conf includes this file (docs/slurm.md).\n";

	TEST_STREQ(g, "gpu:h100:8");
	TEST_CHECK(strncmp(conf, hdr, strlen(hdr)) == 0);
	TEST_STREQ(conf + strlen(hdr), "Name=gpu Type=h100 File=/dev/nvidia0\nName=gpu Type=h100 File=/dev/nvidia1\n"
		   "Name=gpu Type=h100 File=/dev/nvidia2\nName=gpu Type=h100 File=/dev/nvidia3\n"
		   "Name=gpu Type=h100 File=/dev/nvidia4\nName=gpu Type=h100 File=/dev/nvidia5\n"
		   "Name=gpu Type=h100 File=/dev/nvidia6\nName=gpu Type=h100 File=/dev/nvidia7\n");
	free(g);
	free(conf);
	/* minors out of PCI order are written by minor; an unbound GPU is no GRES */
	inv = inv_of(3, "a100");
	inv.gpu[0].minor = 2;
	inv.gpu[2].minor = 0;
	inv.gpu[1].bound = false;
	g = slurm_gres(&inv);
	conf = slurm_gres_conf(&inv);
	TEST_STREQ(g, "gpu:a100:2");
	TEST_STREQ(conf + strlen(hdr), "Name=gpu Type=a100 File=/dev/nvidia0\nName=gpu Type=a100 File=/dev/nvidia2\n");
	TEST_INTEQ((int)slurm_gres_count(&inv), 2);
	free(g);
	free(conf);
	/* a type that is not a word Slurm takes (from a table or a spec gone wrong): no Type at all */
	inv = inv_of(2, "h100\nName=gpu File=/etc/shadow");
	g = slurm_gres(&inv);
	conf = slurm_gres_conf(&inv);
	TEST_STREQ(g, "gpu:2");
	TEST_STREQ(conf + strlen(hdr), "Name=gpu File=/dev/nvidia0\nName=gpu File=/dev/nvidia1\n");
	free(g);
	free(conf);
	TEST_CHECK(!slurm_gres_type_ok("H100") && !slurm_gres_type_ok("a b") && !slurm_gres_type_ok("") &&
		   slurm_gres_type_ok("h100") && slurm_gres_type_ok("rtx_6000-ada.1"));
	/* one unknown type: untyped; two known types: one entry each */
	inv = inv_of(2, "h100");
	inv.gpu[1].type[0] = '\0';
	g = slurm_gres(&inv);
	TEST_STREQ(g, "gpu:2");
	free(g);
	inv = inv_of(3, "h100");
	snprintf(inv.gpu[1].type, sizeof(inv.gpu[1].type), "a100");
	g = slurm_gres(&inv);
	TEST_STREQ(g, "gpu:h100:2,gpu:a100:1");
	free(g);
	/* none usable: no GRES, and a file that says so (a head including it still parses) */
	inv = inv_of(0, "");
	TEST_CHECK(slurm_gres(&inv) == NULL);
	conf = slurm_gres_conf(&inv);
	TEST_STREQ(conf + strlen(hdr), "# no GPUs\n");
	free(conf);
}

/* Slurm's version rule: slurmd -V and scontrol show config as the real 22.05.8 and 24.11.5 print them. */
static void test_version(void)
{
	struct slurm_version d, c;
	/* "scontrol show config" of Debian 12's slurmctld (lines around it kept) */
	static const char conf[] = "Configuration data as of 2026-12-06T04:58:49\n"
				   "SLURM_CONF              = /etc/slurm/slurm.conf\n"
				   "SLURM_VERSION           = 22.05.8\n"
				   "SrunEpilog              = (null)\n";

	TEST_INTEQ(slurm_version_parse("slurm-wlm 22.05.8\n", &d), 0);
	TEST_CHECK(d.major == 22 && d.minor == 5);
	TEST_STREQ(d.text, "22.05.8");
	TEST_INTEQ(slurm_version_parse("slurm-wlm 24.11.5\n", &d), 0);
	TEST_CHECK(d.major == 24 && d.minor == 11);
	TEST_INTEQ(slurm_version_parse("slurm 23.02.0-0rc1", &d), 0);
	TEST_CHECK(d.major == 23 && d.minor == 2);
	TEST_INTEQ(slurm_version_parse("slurm-wlm\n", &d), -EBADMSG);
	TEST_INTEQ(slurm_version_parse("", &d), -EBADMSG);
	TEST_INTEQ(slurm_version_parse("slurm 22x05", &d), -EBADMSG);
	TEST_INTEQ(slurm_config_version("SLURM_CONF = x\n", &c), -EBADMSG);
	TEST_INTEQ(slurm_config_version("XSLURM_VERSION = 1.2\n", &c), -EBADMSG);
	TEST_INTEQ(slurm_config_version(conf, &c), 0);
	TEST_STREQ(c.text, "22.05.8");
	TEST_INTEQ(slurm_version_parse("slurm-wlm 24.11.5", &d), 0);
	TEST_CHECK(slurm_version_newer(&d, &c));
	TEST_CHECK(!slurm_version_newer(&c, &d));
	TEST_INTEQ(slurm_version_parse("slurm-wlm 22.05.9", &d), 0);
	TEST_CHECK(!slurm_version_newer(&d, &c));       /* the patch level does not count */
	TEST_INTEQ(slurm_version_parse("slurm 22.11.0", &d), 0);
	TEST_CHECK(slurm_version_newer(&d, &c));
	TEST_CHECK(slurm_refused_protocol("scontrol: error: _fetch_child: failed to fetch remote configs: "
					  "Zero Bytes were transmitted or received"));
	TEST_CHECK(!slurm_refused_protocol("scontrol: error: _fetch_child: failed to fetch remote configs: "
					   "Unable to contact slurm controller (connect failure)"));
}

/* write_gres_conf: the whole file at once where slurmd's included gres.conf names it; a killed run's temp file goes. */
static void test_gres_write(void)
{
	static char root[] = "/tmp/hpcinit-test-gres.XXXXXX";
	static char host[] = "c1";
	struct gpu_inventory inv = inv_of(2, "h100");
	struct outputs out = { 0 };
	struct spec s = { 0 };
	struct ctx c = { 0 };
	struct report r;
	struct stat st;
	char *got, *p;

	if (geteuid() != 0) {
		printf("# gres.conf writes need root (root's file): not run\n");
		return;
	}
	if (!mkdtemp(root))
		return;
	test_put(root, "/etc/slurm/hpcinit-gres.conf", "Name=gpu File=/dev/nvidia9\n");
	test_put(root, "/etc/slurm/hpcinit-gres.conf.hpcinit-tmp.c1.AbC123", "Name=gpu File=/dev/nvidia");
	out.gpu = &inv;
	c.spec = &s;
	c.root = root;
	c.hostname = host;
	c.out = &out;
	c.mode = RUN_APPLY;
	c.deadline_ms = now_ms() + 10000;
	report_init(&r);
	TEST_INTEQ(write_gres_conf(&c, &r), 0);
	got = test_get(root, SLURM_GRES_INCLUDE);
	TEST_CHECK(got && strstr(got, "\nName=gpu Type=h100 File=/dev/nvidia0\nName=gpu Type=h100 File=/dev/nvidia1\n") &&
		   !strstr(got, "nvidia9"));
	free(got);
	got = test_get(root, "/etc/slurm/hpcinit-gres.conf.hpcinit-tmp.c1.AbC123");
	TEST_CHECK(got == NULL);
	free(got);
	p = fs_rooted(root, SLURM_GRES_INCLUDE);
	TEST_CHECK(stat(p, &st) == 0 && (st.st_mode & 07777) == 0644 && st.st_uid == 0);
	free(p);
	report_free(&r);
	/* no gpu section: the file says there are none (a head including it still parses) */
	c.out = NULL;
	report_init(&r);
	TEST_INTEQ(write_gres_conf(&c, &r), 0);
	got = test_get(root, SLURM_GRES_INCLUDE);
	TEST_CHECK(got && strstr(got, "\n# no GPUs\n") && !strstr(got, "Name=gpu"));
	free(got);
	report_free(&r);
	test_rm_rf(root);
}

int main(void)
{
	test_parse();
	test_reason();
	test_features();
	test_readiness();
	test_ib_domain();
	test_key();
	test_spec();
	test_arrival();
	test_gres();
	test_version();
	test_gres_write();
	TEST_EXIT();
}
