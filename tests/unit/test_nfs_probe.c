/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the nfs step's probe (modules/nfs/probe.c) with its real
 * operations: inspect on a local directory, TCP to a loopback listener, the
 * bounded child, the helper's answer parsed and judged.
 */
#include "testnfs.h"

/* The real inspect op on a local directory (no NFS needed): mode and write probe. */
static void test_inspect_real(void)
{
	char dir[] = "/tmp/test_nfs.XXXXXX";
	struct mp_info mp;

	TEST_CHECK(mkdtemp(dir) != NULL);
	chmod(dir, 0750);
	TEST_INTEQ(inspect_real(dir, true, 5000, &mp), 0);
	TEST_INTEQ(mp.statfs_err, 0);
	TEST_INTEQ(mp.mode, 0750);
	TEST_INTEQ(mp.write_err, 0);
	TEST_INTEQ(rmdir(dir), 0);              /* the probe file is gone */
	TEST_INTEQ(inspect_real(dir, false, 5000, &mp), 0);
	TEST_INTEQ(mp.statfs_err, ENOENT);
}

/* The real TCP op against a loopback listener, and a closed port. */
static void test_tcp_real(void)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	char err[128];
	uint16_t port;

	TEST_CHECK(fd >= 0);
	TEST_INTEQ(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	TEST_INTEQ(listen(fd, 4), 0);
	TEST_INTEQ(getsockname(fd, (struct sockaddr *)&sa, &sl), 0);
	port = ntohs(sa.sin_port);
	TEST_INTEQ(tcp_connect_real("127.0.0.1", port, 2000, err, sizeof(err)), 0);
	close(fd);
	TEST_INTEQ(tcp_connect_real("127.0.0.1", port, 2000, err, sizeof(err)), -ECONNREFUSED);
	TEST_STREQ(err, "Connection refused");
}

/* A bounded child keeps none of our descriptors (the run lock is an flock). */
struct fd_probe {
	int fd;
	bool fd_open;
	bool stdout_null;
};

static void fd_probe_child(const void *arg, void *out)
{
	const int *fd = arg;
	struct fd_probe *o = out;
	struct stat a, b;

	o->fd = *fd;
	o->fd_open = fcntl(*fd, F_GETFD) >= 0;
	o->stdout_null = fstat(1, &a) == 0 && stat("/dev/null", &b) == 0 && a.st_rdev == b.st_rdev;
}

static void sleep_child(const void *arg, void *out)
{
	sleep(30);
}

static void test_bounded(void)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int hi = fcntl(fd, F_DUPFD_CLOEXEC, 200);
	struct fd_probe o = { 0 };
	char buf[8];
	uint64_t t0;

	TEST_INTEQ(run_bounded(fd_probe_child, &fd, &o, sizeof(o), 5000, NULL, NULL), 0);
	TEST_INTEQ(o.fd, fd);
	TEST_CHECK(!o.fd_open);
	TEST_CHECK(o.stdout_null);
	memset(&o, 0, sizeof(o));
	TEST_INTEQ(run_bounded(fd_probe_child, &hi, &o, sizeof(o), 5000, NULL, NULL), 0);
	TEST_CHECK(!o.fd_open);
	close(fd);
	close(hi);
	/* a child that does not answer in time is killed and reported */
	t0 = now_ms();
	TEST_INTEQ(run_bounded(sleep_child, NULL, buf, sizeof(buf), 300, NULL, NULL), -ETIMEDOUT);
	TEST_CHECK(now_ms() - t0 < 2000);
}

/* The helper's answer, parsed and judged by the agent; a missing helper stops the probe at TCP. */
static void test_rpc_answer(void)
{
	static const char answer[] = "exports\nexport /export  *\nexport /other\nwhat MOUNT /nope\n"
				     "errnum 13\nmsg MNT3ERR_ACCES(13)\ndone\n";
	struct nfs_probe_result res;

	memset(&res, 0, sizeof(res));
	TEST_CHECK(rpc_answer_parse(answer, &res));
	TEST_CHECK(res.have_exports);
	TEST_STREQ(res.exports, "/export  *\n/other\n");
	TEST_STREQ(res.what, "MOUNT /nope");
	TEST_STREQ(res.msg, "MNT3ERR_ACCES(13)");
	rpc_classify(&res, "/nope");
	TEST_INTEQ(res.err, NE_NOEXPORT);       /* refused, and not in the list: missing */
	rpc_classify(&res, "/export/sub");
	TEST_INTEQ(res.err, NE_DENIED);         /* in the list: this client is refused */
	memset(&res, 0, sizeof(res));
	TEST_CHECK(rpc_answer_parse("what LOOKUP /x\nmode 755\nerrnum 0\ndone\n", &res));
	TEST_CHECK(res.have_mode && res.mode == 0755);
	rpc_classify(&res, "/x");
	TEST_INTEQ(res.err, NE_OK);
	memset(&res, 0, sizeof(res));
	TEST_CHECK(!rpc_answer_parse("exports\nexport /a\nwhat MOUNT /a\n", &res));   /* cut short */
	/* numbers that do not read: an error (not errnum 0, success), no mode (not mode 0) */
	memset(&res, 0, sizeof(res));
	TEST_CHECK(rpc_answer_parse("what LOOKUP /x\nmode 7x5\nerrnum 1O\ndone\n", &res));
	TEST_INTEQ(res.errnum, EPROTO);
	TEST_CHECK(!res.have_mode);

	/* v4 against a 4.1-only server (what libexec/hpcinit-nfs-probe printed against
	 * nfs-ganesha with Minor_Versions = 1): the NFS service answered, so it is up. */
	memset(&res, 0, sizeof(res));
	TEST_CHECK(rpc_answer_parse("what NFSv4 port 2049\nerrnum 34\nmsg mount_cb: NFS4: SETCLIENTID (path /) failed "
				    "with NFS4ERR_MINOR_VERS_MISMATCH(-5)\nlayer nfs\nminor 0 NFS4ERR_MINOR_VERS_MISMATCH\n"
				    "minor 1 NFS4_OK\nminor 2 NFS4ERR_MINOR_VERS_MISMATCH\ndone\n", &res));
	TEST_STREQ(res.layer, "nfs");
	rpc_classify(&res, "/export");
	TEST_INTEQ(res.err, NE_OK);
	TEST_STREQ(res.note, "answered NFSv4 (speaks 4.1; refuses 4.0, 4.2 with NFS4ERR_MINOR_VERS_MISMATCH, "
		   "and 4.0 is all the probe speaks): the export is not checked before the mount");
	/* 4.0 accepted but the probe's mount failed otherwise: still up, the reason kept */
	memset(&res, 0, sizeof(res));
	TEST_CHECK(rpc_answer_parse("what NFSv4 port 2049\nerrnum 5\nmsg NFS4ERR_DELAY\nlayer nfs\n"
				    "minor 0 NFS4_OK\nminor 1 NFS4_OK\nminor 2 NFS4_OK\ndone\n", &res));
	rpc_classify(&res, "/export");
	TEST_INTEQ(res.err, NE_OK);
	TEST_STREQ(res.note, "answered NFSv4 (speaks 4.0, 4.1, 4.2), but the probe's mount of its pseudo root "
		   "failed (NFS4ERR_DELAY): the export is not checked before the mount");
	/* TCP taken, no NFS answer: not the network */
	memset(&res, 0, sizeof(res));
	TEST_CHECK(rpc_answer_parse("what NFSv4 port 2049\nerrnum 5\nmsg nfs_service failed\nlayer rpc\n"
				    "rpcmsg Socket failed with POLLHUP\ndone\n", &res));
	rpc_classify(&res, "/export");
	TEST_INTEQ(res.err, NE_NOANSWER);
	TEST_STREQ(res.rpcmsg, "Socket failed with POLLHUP");
	/* no TCP for the helper: the network */
	memset(&res, 0, sizeof(res));
	TEST_CHECK(rpc_answer_parse("what NFSv4 port 2049\nerrnum 111\nmsg connect failed\nlayer tcp\ndone\n", &res));
	rpc_classify(&res, "/export");
	TEST_INTEQ(res.err, NE_UNREACHABLE);
#ifdef HAVE_LIBNFS
	{
		char dir[] = "/tmp/test_nfs_helper.XXXXXX";
		char *old = getenv("HPCINIT_LIBEXEC_DIR") ? xstrdup(getenv("HPCINIT_LIBEXEC_DIR")) : NULL;

		TEST_CHECK(mkdtemp(dir) != NULL);
		setenv("HPCINIT_LIBEXEC_DIR", dir, 1);
		TEST_INTEQ(rpc_probe_real("198.18.2.2", "/export", 3, 1000, &res), -ENOSYS);
		if (old)
			setenv("HPCINIT_LIBEXEC_DIR", old, 1);
		else
			unsetenv("HPCINIT_LIBEXEC_DIR");
		free(old);
		rmdir(dir);
	}
#endif
}

int main(void)
{
	test_inspect_real();
	test_tcp_real();
	test_bounded();
	test_rpc_answer();
	TEST_EXIT();
}
