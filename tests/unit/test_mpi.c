/* SPDX-License-Identifier: MIT */
/*
 * mpi: fabric detection from a fixture sysfs (the machine has no RDMA
 * device: the tree below is a fake of /sys/class/infiniband), the profile,
 * the mpirun command line, parsing hpcinit-mpiverify's output, the leader.
 */
#include "config.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include "../../modules/mpi/fabric.c"
#include "../../modules/mpi/mpi.c"
#include "../../modules/mpi/verify.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-mpi.XXXXXX";
#define put(rel, text) test_put(root, rel, text)
#define get(rel) test_get(root, rel)
static char name_glo[] = "glo";
static char devices_glob[] = "mlx5_ib*";

static void ib_port(const char *dev, const char *port, const char *ll, const char *state)
{
	char *p = xasprintf("/sys/class/infiniband/%s/ports/%s/link_layer", dev, port);

	put(p, ll);
	free(p);
	p = xasprintf("/sys/class/infiniband/%s/ports/%s/state", dev, port);
	put(p, state);
	free(p);
}

static char *joined(const struct strlist *l)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < l->n; i++)
		sb_printf(&sb, "%s%s", i ? " " : "", l->v[i]);
	return sb_steal(&sb);
}

static void test_fabric(struct spec *s)
{
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY };
	struct fabric f;
	char *t;

	/* No rdma section: TCP on the cluster network. */
	mpi_fabric_detect(&c, &f);
	TEST_CHECK(!f.rdma);
	t = profile_render(s, &f);
	TEST_STREQ(t, "# hpcinit (mpi module): MPI settings for cluster glo.\n"
		   "# Fabric ethernet: TCP over 198.18.3.0/24.\n"
		   "# Rebuilt on every run; edits are replaced.  Override per job with mpirun --mca.\n"
		   "export OMPI_MCA_pml=ob1\n"
		   "export OMPI_MCA_btl=tcp,self,vader\n"
		   "export OMPI_MCA_btl_tcp_if_include=198.18.3.0/24\n"
		   "export OMPI_MCA_oob_tcp_if_include=198.18.3.0/24\n"
		   "# Intel MPI and MPICH (libfabric): the same fabric.\n"
		   "export I_MPI_FABRICS=shm:ofi\n"
		   "export FI_PROVIDER=tcp\n"
		   "export I_MPI_TCP_NETMASK=198.18.3.0/24\n");
	free(t);
	mpi_fabric_free(&f);

	/* rdma section but no device (this machine): still TCP. */
	s->rdma.present = true;
	s->rdma.devices = devices_glob;
	s->rdma.link_layer = LINK_INFINIBAND;
	mpi_fabric_detect(&c, &f);
	TEST_CHECK(!f.rdma);
	mpi_fabric_free(&f);

	/* A fixture sysfs: two IB ports (one down), an accelerated-networking NIC. */
	ib_port("mlx5_ib0", "1", "InfiniBand\n", "4: ACTIVE\n");
	put("/sys/class/infiniband/mlx5_ib0/ports/1/pkeys/0", "0x7fff\n");
	put("/sys/class/infiniband/mlx5_ib0/ports/1/pkeys/1", "0x800b\n");
	ib_port("mlx5_ib1", "1", "InfiniBand\n", "1: DOWN\n");
	ib_port("mlx5_an0", "1", "Ethernet\n", "4: ACTIVE\n");
	mpi_fabric_detect(&c, &f);
	TEST_CHECK(f.rdma);
	TEST_STREQ(f.ucx_devices, "mlx5_ib0:1");
	TEST_STREQ(f.ucx_pkey, "0x800b");
	t = profile_render(s, &f);
	TEST_CHECK(strstr(t, "export OMPI_MCA_pml=ucx\n") != NULL);
	TEST_CHECK(strstr(t, "export UCX_NET_DEVICES=mlx5_ib0:1\n") != NULL);
	TEST_CHECK(strstr(t, "export UCX_IB_PKEY=0x800b\n") != NULL);
	TEST_CHECK(strstr(t, "export FI_PROVIDER=mlx\n") != NULL);
	TEST_CHECK(strstr(t, "export I_MPI_FABRICS=shm:ofi\n") != NULL);
	TEST_CHECK(strstr(t, "I_MPI_TCP_NETMASK") == NULL);
	TEST_CHECK(strstr(t, "btl_tcp_if_include") == NULL);
	TEST_CHECK(strstr(t, "export OMPI_MCA_oob_tcp_if_include=198.18.3.0/24\n") != NULL);
	free(t);
	mpi_fabric_free(&f);

	/* Both ports up: both listed, in name order. */
	ib_port("mlx5_ib1", "1", "InfiniBand\n", "4: ACTIVE\n");
	mpi_fabric_detect(&c, &f);
	TEST_STREQ(f.ucx_devices, "mlx5_ib0:1,mlx5_ib1:1");
	mpi_fabric_free(&f);

	/* link_layer: ethernet (RoCE) picks the Ethernet port when the glob allows it. */
	s->rdma.link_layer = LINK_ETHERNET;
	s->rdma.devices = NULL;         /* default: every name, sysfs decides */
	mpi_fabric_detect(&c, &f);
	TEST_STREQ(f.ucx_devices, "mlx5_an0:1");        /* a RoCE NIC by sysfs, whatever its name */
	mpi_fabric_free(&f);
	/* ...but not once sysfs shows it is accelerated networking's VF (netdev enslaved to hv_netvsc). */
	{
		char *l1 = xasprintf("%s/sys/class/net/enP1s1/master", root);
		char *l2 = xasprintf("%s/sys/class/net/eth0/device/driver", root);

		put("/sys/class/infiniband/mlx5_an0/device/net/enP1s1/ifindex", "3\n");
		put("/sys/class/net/enP1s1/operstate", "up\n");
		put("/sys/class/net/eth0/device/uevent", "\n");
		TEST_INTEQ(symlink("../eth0", l1), 0);
		TEST_INTEQ(symlink("../../../../bus/vmbus/drivers/hv_netvsc", l2), 0);
		free(l1);
		free(l2);
	}
	mpi_fabric_detect(&c, &f);
	TEST_CHECK(!f.rdma);
	mpi_fabric_free(&f);
	s->rdma.link_layer = LINK_INFINIBAND;
	s->rdma.devices = devices_glob;

	/* A device name that is not a plain token is never written to the shell file. */
	ib_port("mlx5_ib$(reboot)", "1", "InfiniBand\n", "4: ACTIVE\n");
	mpi_fabric_detect(&c, &f);
	TEST_STREQ(f.ucx_devices, "mlx5_ib0:1,mlx5_ib1:1");
	mpi_fabric_free(&f);

	/* The rdma module ran: only the devices it found usable; none when it found none. */
	{
		struct rdma_result rr = { .usable = true, .link_layer = LINK_INFINIBAND };
		struct outputs out = { .rdma = &rr };

		snprintf(rr.devices, sizeof(rr.devices), "mlx5_ib1");
		c.out = &out;
		mpi_fabric_detect(&c, &f);
		TEST_STREQ(f.ucx_devices, "mlx5_ib1:1");
		mpi_fabric_free(&f);
		snprintf(rr.devices, sizeof(rr.devices), "mlx5_ib0 mlx5_ib1");
		mpi_fabric_detect(&c, &f);
		TEST_STREQ(f.ucx_devices, "mlx5_ib0:1,mlx5_ib1:1");
		mpi_fabric_free(&f);
		rr.usable = false;
		mpi_fabric_detect(&c, &f);
		TEST_CHECK(!f.rdma);
		TEST_CHECK(strstr(f.what, "ethernet") == f.what);
		mpi_fabric_free(&f);
		c.out = NULL;
		TEST_CHECK(in_words("a bb c", "bb"));
		TEST_CHECK(!in_words("a bbb c", "bb"));
		TEST_CHECK(!in_words("", "a"));
	}

	/* The profile: written, then left alone; mpi.profile: false removes only ours. */
	{
		struct report r;

		mpi_fabric_detect(&c, &f);
		report_init(&r);
		TEST_INTEQ(profile_converge(&c, &r, &f), 1);
		report_free(&r);
		report_init(&r);
		TEST_INTEQ(profile_converge(&c, &r, &f), 0);
		TEST_INTEQ(r.changed.n, 0);
		report_free(&r);
		t = get(PROFILE_PATH);
		TEST_CHECK(t && strstr(t, "UCX_NET_DEVICES=mlx5_ib0:1,mlx5_ib1:1") != NULL);
		free(t);
		s->mpi.profile = false;
		report_init(&r);
		TEST_INTEQ(profile_converge(&c, &r, &f), 1);
		report_free(&r);
		TEST_CHECK(!fs_exists(&c, PROFILE_PATH));
		put(PROFILE_PATH, "# the admin's own\n");
		report_init(&r);
		TEST_INTEQ(profile_converge(&c, &r, &f), 0);
		report_free(&r);
		TEST_CHECK(fs_exists(&c, PROFILE_PATH));
		s->mpi.profile = true;
		mpi_fabric_free(&f);
	}
	s->rdma.present = false;
}

static void test_argv(struct spec *s)
{
	struct ctx c = { .spec = s, .root = root };
	struct fabric f;
	struct strlist a = { 0 };
	char *t;

	setenv("HPCINIT_MPIVERIFY", "/opt/x/hpcinit-mpiverify", 1);
	mpi_fabric_detect(&c, &f);
	verify_argv(&c, &f, "/etc/hpcinit/hostfile.openmpi", 0, 4, NULL, true, &a);
	t = joined(&a);
	TEST_STREQ(t, "mpirun --allow-run-as-root --hostfile /etc/hpcinit/hostfile.openmpi "
		   "--map-by node -np 4 --bind-to none --mca plm_rsh_args -o BatchMode=yes "
		   "--mca pml ob1 --mca btl tcp,self,vader --mca btl_tcp_if_include 198.18.3.0/24 "
		   "--mca oob_tcp_if_include 198.18.3.0/24 /opt/x/hpcinit-mpiverify --round 0");
	free(t);
	strlist_free(&a);
	s->mpi.max_latency_us = 50;
	s->mpi.min_bandwidth = 10ull << 30;
	verify_argv(&c, &f, "/h", 7, 2, "alice", false, &a);
	t = joined(&a);
	TEST_CHECK(strncmp(t, "runuser -u alice -- mpirun --hostfile /h ", 41) == 0);
	TEST_CHECK(strstr(t, "--allow-run-as-root") == NULL);
	TEST_CHECK(strstr(t, " /opt/x/hpcinit-mpiverify --max-latency-us 50 --min-bw-mibps 10240.0 --round 7") != NULL);
	free(t);
	strlist_free(&a);
	/* the limit as a plain decimal: the program refuses "1e+06" (num_double) */
	s->mpi.max_latency_us = 1e6;
	verify_argv(&c, &f, "/h", 7, 2, "alice", false, &a);
	t = joined(&a);
	TEST_CHECK(strstr(t, " --max-latency-us 1000000 ") != NULL);
	free(t);
	strlist_free(&a);
	s->mpi.max_latency_us = 2.5;
	verify_argv(&c, &f, "/h", 7, 2, "alice", false, &a);
	t = joined(&a);
	TEST_CHECK(strstr(t, " --max-latency-us 2.5 ") != NULL);
	free(t);
	strlist_free(&a);
	s->mpi.max_latency_us = 0;
	s->mpi.min_bandwidth = 0;
	mpi_fabric_free(&f);
	/* MPICH: Hydra's mpirun.mpich, the host:N hostfile, one rank a node, the MPICH build of the program. */
	s->mpi.launcher = MPI_MPICH;
	setenv("HPCINIT_MPIVERIFY_MPICH", "/opt/x/hpcinit-mpiverify-mpich", 1);
	mpi_fabric_detect(&c, &f);
	verify_argv(&c, &f, "/etc/hpcinit/hostfile.mpich", 2, 4, "alice", false, &a);
	t = joined(&a);
	TEST_STREQ(t, "runuser -u alice -- env HYDRA_LAUNCHER_EXTRA_ARGS=-o BatchMode=yes mpirun.mpich "
		   "-launcher ssh -f /etc/hpcinit/hostfile.mpich -n 4 -ppn 1 -genv UCX_TLS tcp,self "
		   "/opt/x/hpcinit-mpiverify-mpich --round 2");
	free(t);
	strlist_free(&a);
	/* Intel MPI: mpiexec.hydra with its libfabric settings, the MPICH-ABI build (untested: not installable here). */
	s->mpi.launcher = MPI_INTEL;
	verify_argv(&c, &f, "/etc/hpcinit/hostfile.mpich", 0, 2, NULL, true, &a);
	t = joined(&a);
	TEST_STREQ(t, "env HYDRA_LAUNCHER_EXTRA_ARGS=-o BatchMode=yes mpiexec.hydra -launcher ssh "
		   "-f /etc/hpcinit/hostfile.mpich -n 2 -ppn 1 -genv I_MPI_FABRICS shm:ofi -genv FI_PROVIDER tcp "
		   "-genv UCX_TLS tcp,self /opt/x/hpcinit-mpiverify-mpich --round 0");
	free(t);
	strlist_free(&a);
	mpi_fabric_free(&f);
	s->mpi.launcher = MPI_OPENMPI;
	unsetenv("HPCINIT_MPIVERIFY_MPICH");
	TEST_STREQ(verify_program(MPI_MPICH), LIBEXECDIR "/hpcinit-mpiverify-mpich");
	TEST_STREQ(launcher_hostfile(MPI_INTEL), "hostfile.mpich");
	/* A relative override is ignored: mpirun runs it on every node. */
	setenv("HPCINIT_MPIVERIFY", "hpcinit-mpiverify", 1);
	TEST_STREQ(verify_program(MPI_OPENMPI), LIBEXECDIR "/hpcinit-mpiverify");
	unsetenv("HPCINIT_MPIVERIFY");
}

static void test_parse(void)
{
	struct report r;

	report_init(&r);
	TEST_INTEQ(verify_parse(&r,
		"hello rank=0 host=n1\nhello rank=1 host=n2\nhello rank=2 host=n3\n"
		"pair ranks=0-1 hosts=n1,n2 latency_us=7.10 lat8_us=6.90 lat64_us=7.00 lat512_us=7.10 bw_MiBps=1180.3\n"
		"pair ranks=1-2 hosts=n2,n3 latency_us=9.20 lat8_us=9.00 lat64_us=9.10 lat512_us=9.20 bw_MiBps=900.1\n"
		"result status=ok nodes=3 pairs=2 round=1 rounds=3 max_latency_us=9.20 slowest=n2,n3 "
		"min_bw_MiBps=900.1 narrowest=n2,n3\n",
		0, 0), 1);
	TEST_INTEQ(r.status, ST_OK);
	TEST_STREQ(r.summary, "3 nodes answered; 2 pairs: max latency 9.20 us (n2 <-> n3), "
		   "min bandwidth 900.1 MiB/s");
	TEST_CHECK(strstr(sb_str(&r.details), "pair n1 <-> n2: latency 7.10 us (8 B 6.90, 512 B 7.10), "
			  "bandwidth 1180.3 MiB/s at 4 MiB\n") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "round 1 of 3 (round-robin pairs") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "hello from 3 ranks") != NULL);
	report_free(&r);

	report_init(&r);
	TEST_INTEQ(verify_parse(&r,
		"pair ranks=0-1 hosts=n1,n2 latency_us=12.50 bw_MiBps=100.0\n"
		"result status=slow nodes=2 pairs=1 max_latency_us=12.50 slowest=n1,n2 "
		"min_bw_MiBps=100.0 limit_us=5\n", 5, 0), 1);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_STREQ(r.summary, "slow pair n1 <-> n2: latency 12.50 us is above max_latency_us 5");
	TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, "mpi.verify.slow-pair") == 0);
	report_free(&r);

	/* bandwidth is judged too: min_bandwidth 1 GiB/s, the narrow pair named */
	report_init(&r);
	TEST_INTEQ(verify_parse(&r,
		"pair ranks=0-1 hosts=n1,n2 latency_us=3.00 bw_MiBps=100.0\n"
		"result status=slow nodes=2 pairs=1 round=0 rounds=1 max_latency_us=3.00 slowest=n1,n2 "
		"min_bw_MiBps=100.0 narrowest=n1,n2 limit_MiBps=1024\n", 0, 1ull << 30), 1);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_STREQ(r.summary, "narrow pair n1 <-> n2: bandwidth 100.0 MiB/s at 4 MiB is below min_bandwidth 1024.0 MiB/s");
	TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, "mpi.verify.low-bandwidth") == 0);
	report_free(&r);

	report_init(&r);
	TEST_INTEQ(verify_parse(&r, "result status=error nodes=2 pairs=1 reason=same-host host=n1\n", 0, 0), 1);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_CHECK(strstr(r.summary, "two ranks ran on n1") != NULL);
	TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, "mpi.verify.rank-twice") == 0);
	report_free(&r);
	/* a launch that fails, one that runs out of time: each its own tag */
	{
		struct proc_result pr = { 0 };

		pr.exit_code = 1;
		pr.err = xstrdup("ssh: connect to host n2 port 22: Connection refused\n");
		report_init(&r);
		launch_report(&r, &pr, 2);
		TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, "mpi.verify.launch-failed") == 0);
		report_free(&r);
		free(pr.err);
		memset(&pr, 0, sizeof(pr));
		pr.timed_out = true;
		report_init(&r);
		launch_report(&r, &pr, 1);
		TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, "mpi.verify.timeout") == 0);
		report_free(&r);
	}

	report_init(&r);
	TEST_INTEQ(verify_parse(&r, "hello rank=0 host=n1\nresult status=ok nodes=1 pairs=0\n", 0, 0), 1);
	TEST_STREQ(r.summary, "1 node answered (no pair to measure)");
	report_free(&r);

	/* mpirun's own complaints are not a result. */
	report_init(&r);
	TEST_INTEQ(verify_parse(&r, "ORTE was unable to reliably start one or more daemons.\n", 0, 0), 0);
	report_free(&r);

	/* A failed start: the ssh line, not Open MPI's page of boilerplate. */
	report_init(&r);
	{
		char *why = launch_failure(&r, "ssh: connect to host n4 port 22: Connection refused\r\n"
					   "-----\nORTE was unable to reliably start one or more daemons.\n");

		TEST_STREQ(why, "ssh: connect to host n4 port 22: Connection refused");
		TEST_STREQ(sb_str(&r.details), "mpirun said: ssh: connect to host n4 port 22: Connection refused\n");
		free(why);
	}
	report_free(&r);
	/* Under load Open MPI warns first; its "Permission denied(13)" is not ssh's. */
	report_init(&r);
	{
		char *why = launch_failure(&r, "[n1:28250] plm:rsh: Warning: setpgid(28254,28254) failed in parent "
					   "with errno=Permission denied(13)\n"
					   "ssh: connect to host n4 port 22: Connection refused\r\n");

		TEST_STREQ(why, "ssh: connect to host n4 port 22: Connection refused");
		free(why);
	}
	report_free(&r);
	report_init(&r);
	{
		char *why = launch_failure(&r, "alice@n2: Permission denied (publickey).\r\n");

		TEST_STREQ(why, "alice@n2: Permission denied (publickey).");
		free(why);
	}
	report_free(&r);
	report_init(&r);
	{
		char *why = launch_failure(&r, "-----\nORTE was unable to start.\nline 2\n");

		TEST_CHECK(why == NULL);
		TEST_STREQ(sb_str(&r.details), "mpirun said: ORTE was unable to start.\nmpirun said: line 2\n");
	}
	report_free(&r);

	/*
	 * Two Open MPI releases in one cluster (Debian 12's 4.1 beside Debian
	 * 13's 5.0): what each mpirun printed on the test bed's VMs.
	 */
	{
		char *node = NULL;

		TEST_STREQ(missing_daemon("bash: line 1: orted: command not found\n-----\n"
					  "ORTE was unable to reliably start one or more daemons.\n", &node), "orted");
		TEST_CHECK(node == NULL);
		TEST_STREQ(missing_daemon("bash: line 1: /usr/bin/prted: No such file or directory\n-----\n"
					  "PRTE has lost communication with a remote daemon.\n\n"
					  "  HNP daemon   : [prterun-c1-1246@0,0] on node c1\n"
					  "  Remote daemon: [prterun-c1-1246@0,2] on node c2\n", &node), "prted");
		TEST_STREQ(node, "c2");
		free(node);
		TEST_CHECK(missing_daemon("ssh: connect to host n4 port 22: Connection refused\r\n", &node) == NULL);
		TEST_CHECK(missing_daemon("bash: orted: Permission denied\n", &node) == NULL);
		TEST_CHECK(missing_daemon("prted: No such file or directory\nRemote daemon: on node \n", &node));
		TEST_CHECK(node == NULL);
	}

	TEST_INTEQ(count_hosts("# hpcinit\nn1 slots=2\n\n  n2 slots=2\n#n3\nn4"), 3);
	TEST_INTEQ(count_hosts(""), 0);
}

static void test_leader(void)
{
	struct peer v[3];
	struct peerset ps = { v, 3 };
	char a[] = "node10", b[] = "node2", h[] = "zhead";

	memset(v, 0, sizeof(v));
	v[0].hostname = a;
	v[1].hostname = b;
	v[2].hostname = h;
	v[0].self = true;
	TEST_CHECK(is_leader(&ps));     /* "node10" < "node2" by bytes: same answer on every node */
	v[2].head = true;
	TEST_CHECK(!is_leader(&ps));    /* a head node leads */
	v[0].self = false;
	v[2].self = true;
	TEST_CHECK(is_leader(&ps));
	TEST_CHECK(!is_leader(NULL));
}

/*
 * A software device (a "parent" netdev in sysfs: Soft-RoCE rxe0): TCP by
 * default; mpi.software_fabric makes it the fabric, with what UCX needs on
 * it in the profile and on verify's mpirun line (Open MPI and MPICH).
 */
static void test_soft(struct spec *s)
{
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY };
	struct fabric f;
	struct strlist a = { 0 };
	char *t;

	s->rdma.present = true;
	s->rdma.devices = NULL;
	s->rdma.link_layer = LINK_ETHERNET;
	ib_port("rxe0", "1", "Ethernet\n", "4: ACTIVE\n");
	put("/sys/class/infiniband/rxe0/parent", "eth0\n");
	mpi_fabric_detect(&c, &f);
	TEST_CHECK(!f.rdma);
	TEST_CHECK(f.soft_rdma);
	TEST_STREQ(f.what, "ethernet: TCP over 198.18.3.0/24 (rxe0 is a software RDMA device: not used)");
	mpi_fabric_free(&f);
	s->mpi.software_fabric = true;
	mpi_fabric_detect(&c, &f);
	TEST_CHECK(f.rdma && f.soft_fabric);
	TEST_STREQ(f.ucx_devices, "rxe0:1");
	TEST_CHECK(f.ucx_pkey == NULL);
	t = profile_render(s, &f);
	TEST_CHECK(strstr(t, "# Fabric rdma: UCX on rxe0:1 (a software RDMA device: mpi.software_fabric).\n") != NULL);
	TEST_CHECK(strstr(t, "export OMPI_MCA_pml=ucx\nexport OMPI_MCA_btl=^vader,tcp,openib,uct\n"
			  "export OMPI_MCA_pml_ucx_devices=any\n") != NULL);
	TEST_CHECK(strstr(t, "export UCX_NET_DEVICES=rxe0:1\nexport UCX_UD_VERBS_ETH_DGID_CHECK=n\n") != NULL);
	TEST_CHECK(strstr(t, "NCCL_IB_HCA") == NULL);
	TEST_CHECK(strstr(t, "export FI_PROVIDER=tcp\n") != NULL);
	free(t);
	setenv("HPCINIT_MPIVERIFY", "/opt/x/hpcinit-mpiverify", 1);
	verify_argv(&c, &f, "/h", 0, 2, NULL, true, &a);
	t = joined(&a);
	TEST_STREQ(t, "mpirun --allow-run-as-root --hostfile /h --map-by node -np 2 --bind-to none "
		   "--mca plm_rsh_args -o BatchMode=yes --mca pml ucx --mca btl ^vader,tcp,openib,uct "
		   "--mca pml_ucx_devices any --mca oob_tcp_if_include 198.18.3.0/24 "
		   "-x UCX_NET_DEVICES=rxe0:1 -x UCX_UD_VERBS_ETH_DGID_CHECK=n /opt/x/hpcinit-mpiverify --iters 50 "
		   "--bw-iters 2 --round 0");
	free(t);
	strlist_free(&a);
	s->mpi.launcher = MPI_MPICH;
	setenv("HPCINIT_MPIVERIFY_MPICH", "/opt/x/hpcinit-mpiverify-mpich", 1);
	verify_argv(&c, &f, "/h", 0, 2, NULL, true, &a);
	t = joined(&a);
	TEST_STREQ(t, "env HYDRA_LAUNCHER_EXTRA_ARGS=-o BatchMode=yes mpirun.mpich -launcher ssh -f /h -n 2 "
		   "-ppn 1 -genv UCX_NET_DEVICES rxe0:1 -genv UCX_UD_VERBS_ETH_DGID_CHECK n "
		   "/opt/x/hpcinit-mpiverify-mpich --iters 50 --bw-iters 2 --round 0");
	free(t);
	strlist_free(&a);
	s->mpi.launcher = MPI_OPENMPI;
	unsetenv("HPCINIT_MPIVERIFY");
	unsetenv("HPCINIT_MPIVERIFY_MPICH");
	mpi_fabric_free(&f);
	s->mpi.software_fabric = false;
	s->rdma.present = false;
}

int main(void)
{
	struct spec s = { 0 };

	if (!mkdtemp(root))
		return 1;
	s.cluster.name = name_glo;
	s.cluster.has_network = true;
	s.cluster.network.family = AF_INET;
	inet_pton(AF_INET, "198.18.3.0", &s.cluster.network.addr.v4);
	s.cluster.network.prefix = 24;
	snprintf(s.cluster.network.text, sizeof(s.cluster.network.text), "198.18.3.0/24");
	s.mpi.present = true;
	s.mpi.profile = true;

	test_fabric(&s);
	test_argv(&s);
	test_soft(&s);
	test_parse();
	test_leader();

	test_rm_rf(root);
	TEST_EXIT();
}
