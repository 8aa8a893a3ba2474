/* SPDX-License-Identifier: MIT */
/* rdma: the probe protocol (sysfs values: test_ibsysfs.c; the helper's runs: test_ibprobe.c), anomaly order. */
#include "config.h"

#include <sys/mman.h>
#include <sys/stat.h>

#include "../../modules/rdma/rdma.c"
#include "../../libexec/rdma-child.c"
#include "ib/identity.h"
#include "test.h"

static void test_parsing(void)
{
	char txt[32];

	TEST_STREQ(errno_name(ENOMEM), "ENOMEM");
	TEST_STREQ(errno_name(ENXIO), "ENXIO");
	TEST_INTEQ(errno_from_name("ENODEV"), ENODEV);
	TEST_INTEQ(errno_from_name("EBOGUS"), 0);
	TEST_STREQ(probe_step_call(STEP_OPEN), "ibv_open_device");
	TEST_STREQ(probe_step_call(STEP_REG_MR), "ibv_reg_mr");

	fmt_kib(txt, sizeof(txt), 8192 * 1024);
	TEST_STREQ(txt, "8192 KiB");
	fmt_kib(txt, sizeof(txt), UINT64_MAX);
	TEST_STREQ(txt, "unlimited");
	fmt_size(txt, sizeof(txt), 64ull << 20);
	TEST_STREQ(txt, "64 MiB");
	fmt_size(txt, sizeof(txt), 1536);
	TEST_STREQ(txt, "1536 bytes");
}

/* The helper's text protocol: a line cut by the kill is not a record. */
static void test_protocol(void)
{
	struct probe_result res;
	struct probe_parsed pp;
	char path[] = "/tmp/hpcinit-rdma-proto.XXXXXX";
	int fd = mkstemp(path);
	char *text = NULL;
	size_t len = 0;

	TEST_CHECK(fd >= 0);
	memset(&res, 0, sizeof(res));
	res.step = STEP_DONE;
	res.memlock_cur = UINT64_MAX;
	res.memlock_max = 8192 * 1024;
	res.phys_port_cnt = 1;
	snprintf(res.fw_ver, sizeof(res.fw_ver), "1.2.3");
	probe_emit_step(fd, STEP_OPEN);
	probe_emit_step(fd, STEP_ALLOC_PD);
	probe_emit_result(fd, &res);
	close(fd);
	TEST_INTEQ(fs_read_host(path, 4096, &text, &len), 0);
	unlink(path);
	probe_parse(text, 9, &pp);              /* "step 1\nst" */
	TEST_INTEQ(pp.last_step, STEP_OPEN);
	TEST_CHECK(!pp.have_result);
	probe_parse(text, 14, &pp);             /* both steps */
	TEST_INTEQ(pp.last_step, STEP_ALLOC_PD);
	TEST_CHECK(!pp.have_result);
	probe_parse("step 1\nstep 3x\n", 16, &pp);    /* a step that is no number: the last one known */
	TEST_INTEQ(pp.last_step, STEP_OPEN);
	probe_parse(text, len - 1, &pp);        /* the result line without its newline */
	TEST_CHECK(!pp.have_result);
	probe_parse(text, len, &pp);
	TEST_CHECK(pp.have_result);
	TEST_STREQ(pp.res.fw_ver, "1.2.3");
	TEST_INTEQ(pp.res.step, STEP_DONE);
	TEST_CHECK(pp.res.memlock_cur == UINT64_MAX && pp.res.memlock_max == 8192 * 1024);
	TEST_INTEQ(pp.res.phys_port_cnt, 1);
	free(text);
}

/* The verdict text for each probe outcome, and the summary order. */
static void test_verdicts(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = "" };
	struct report r;
	struct anomalies a = { NULL, 0, 0, ST_FAILED };
	struct dev_info d;
	struct probe_job j;

	s.rdma.open_timeout_ms = 2000;
	s.rdma.reg_mr_bytes = 64ull << 20;
	memset(&d, 0, sizeof(d));
	snprintf(d.ib.name, sizeof(d.ib.name), "mlx5_ib0");
	report_init(&r);

	memset(&j, 0, sizeof(j));
	j.have_result = true;
	j.res.step = STEP_REG_MR;
	j.res.err = ENOMEM;
	j.res.memlock_cur = 8192 * 1024;
	j.res.memlock_max = 8192 * 1024;
	check_probe(&c, &r, &a, &d, &j);
	TEST_STREQ(a.first, "reg-mr-enomem: mlx5_ib0: ibv_reg_mr of 64 MiB failed with ENOMEM: the memlock "
		   "limit in force is 8192 KiB (hard 8192 KiB); set memlock: unlimited and restart the "
		   "services that use RDMA");

	memset(&j, 0, sizeof(j));
	j.hung = true;
	j.reaped = true;
	j.last_step = STEP_OPEN;
	check_probe(&c, &r, &a, &d, &j);
	/* Each anomaly is a finding: stable tag, severity, the text of its detail line. */
	TEST_INTEQ(r.n_findings, 2);
	TEST_STREQ(r.findings[0].tag, "rdma.reg-mr-enomem");
	TEST_STREQ(r.findings[1].tag, "rdma.hang");
	TEST_INTEQ(r.findings[1].sev, ST_FAILED);
	TEST_STREQ(r.findings[1].text, a.first);
	/* A hang outranks the ENOMEM found before it. */
	TEST_STREQ(a.first, "hang: mlx5_ib0: ibv_open_device did not return within 2000 ms; probe killed");
	TEST_INTEQ(a.n, 2);

	memset(&j, 0, sizeof(j));
	j.have_result = true;
	j.res.step = STEP_OPEN;
	j.res.err = ENOENT;
	check_probe(&c, &r, &a, &d, &j);
	TEST_CHECK(strstr(sb_str(&r.details), "open-failed: mlx5_ib0: ibv_open_device failed: ENOENT "
				     "(No such file or directory)\n") != NULL);
	free(a.first);
	report_free(&r);
}

/* Without CAP_IPC_LOCK, pinning more than RLIMIT_MEMLOCK fails with ENOMEM (the fake reg_mr relies on it). */
static void test_memlock_enforced(void)
{
	pid_t pid = fork();
	int st = 0;

	if (pid == 0) {
		struct rlimit rl = { 1 << 20, 1 << 20 };
		void *m;

		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0 || probe_drop_ipc_lock() < 0)
			_exit(2);
		m = mmap(NULL, 4 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			_exit(3);
		_exit(syscall(SYS_mlock, m, (size_t)(4 << 20)) < 0 && errno == ENOMEM ? 0 : 1);
	}
	waitpid(pid, &st, 0);
	TEST_CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
}

/* What a device is, from sysfs facts only: never from its name. */
static void test_classify(void)
{
	struct ib_dev d;

	memset(&d, 0, sizeof(d));
	d.n_ports = 1;
	snprintf(d.name, sizeof(d.name), "mlx5_an0");            /* a name that says nothing */
	snprintf(d.ports[0].link_layer, sizeof(d.ports[0].link_layer), "InfiniBand");
	TEST_INTEQ(ib_classify(&d), IB_KIND_HCA);
	snprintf(d.ports[0].link_layer, sizeof(d.ports[0].link_layer), "Ethernet");
	TEST_INTEQ(ib_classify(&d), IB_KIND_ROCE);
	snprintf(d.master, sizeof(d.master), "bond0");           /* a bond on bare metal: still RoCE */
	snprintf(d.master_driver, sizeof(d.master_driver), "bonding");
	TEST_INTEQ(ib_classify(&d), IB_KIND_ROCE);
	snprintf(d.master, sizeof(d.master), "eth0");            /* enslaved to Hyper-V's synthetic NIC */
	snprintf(d.master_driver, sizeof(d.master_driver), "hv_netvsc");
	TEST_INTEQ(ib_classify(&d), IB_KIND_AN_VF);
	TEST_STREQ(ib_kind_text(&(struct ib_dev){ .kind = IB_KIND_AN_VF }), "accelerated networking's Ethernet VF");
	memset(d.master_driver, 0, sizeof(d.master_driver));
	snprintf(d.driver, sizeof(d.driver), "mana");            /* MANA: always the VF */
	TEST_INTEQ(ib_classify(&d), IB_KIND_AN_VF);
	snprintf(d.name, sizeof(d.name), "mlx5_ib0");
	snprintf(d.parent, sizeof(d.parent), "eth0");            /* rdma_rxe's parent netdev */
	TEST_INTEQ(ib_classify(&d), IB_KIND_SOFT);
	TEST_STREQ(ib_dev_netdev(&d), "eth0");
}

/* The metadata client refuses what it cannot send safely, before any socket. */
static void test_imds_url(void)
{
	char out[64], err[128];

	TEST_INTEQ(imds_get_text("https://169.254.169.254/x", 100, out, sizeof(out), err, sizeof(err)), -EINVAL);
	TEST_CHECK(strstr(err, "only http://") != NULL);
	TEST_INTEQ(imds_get_text("http://metadata.example/x", 100, out, sizeof(out), err, sizeof(err)), -EINVAL);
	TEST_CHECK(strstr(err, "not a numeric address") != NULL);
	TEST_INTEQ(imds_get_text("http://127.0.0.1", 100, out, sizeof(out), err, sizeof(err)), -EINVAL);
	TEST_CHECK(strstr(err, "no host or path") != NULL);
}

int main(void)
{
	test_parsing();
	test_protocol();
	test_verdicts();
	test_memlock_enforced();
	test_classify();
	test_imds_url();
	TEST_EXIT();
}
