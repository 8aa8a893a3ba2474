/* SPDX-License-Identifier: MIT */
/*
 * lib/ib/proto.c: what the verbs helper and the agent say to each other.
 * Records written by the emitters through a real pipe are parsed back; a
 * line cut by a kill, a malformed result and unknown records change
 * nothing; errno names go both ways.
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <unistd.h>

#include "../../lib/ib/proto.c"
#include "test.h"

/* Everything written to the pipe's write end by fn, read back (at most n-1 bytes). */
static size_t drain(int fds[2], char *buf, size_t n)
{
	size_t len = 0;
	ssize_t k;

	close(fds[1]);
	while (len < n - 1 && (k = read(fds[0], buf + len, n - 1 - len)) > 0)
		len += (size_t)k;
	close(fds[0]);
	buf[len] = '\0';
	return len;
}

static void test_round_trip(void)
{
	struct probe_result res = { 0 }, *got;
	struct probe_parsed pp;
	char buf[1024];
	int fds[2];
	size_t len;

	TEST_INTEQ(pipe(fds), 0);
	probe_emit_step(fds[1], STEP_OPEN);
	probe_emit_step(fds[1], STEP_REG_MR);
	res.step = STEP_REG_MR;
	res.err = ENOMEM;
	res.memlock_cur = 65536;
	res.memlock_max = UINT64_MAX;
	res.phys_port_cnt = 2;
	snprintf(res.fw_ver, sizeof(res.fw_ver), "20.31.1014");
	snprintf(res.resolved_dev, sizeof(res.resolved_dev), "mlx5_ib0");
	probe_emit_result(fds[1], &res);
	len = drain(fds, buf, sizeof(buf));
	TEST_STREQ(buf, "step 1\nstep 5\nfw 20.31.1014\nresolved mlx5_ib0\n"
		   "result 5 12 65536 18446744073709551615 2\n");

	probe_parse(buf, len, &pp);
	got = &pp.res;
	TEST_INTEQ(pp.last_step, STEP_REG_MR);
	TEST_CHECK(pp.have_result);
	TEST_INTEQ(got->step, STEP_REG_MR);
	TEST_INTEQ(got->err, ENOMEM);
	TEST_CHECK(got->memlock_cur == 65536);
	TEST_CHECK(got->memlock_max == UINT64_MAX);      /* unlimited survives the trip */
	TEST_INTEQ(got->phys_port_cnt, 2);
	TEST_STREQ(got->fw_ver, "20.31.1014");
	TEST_STREQ(got->resolved_dev, "mlx5_ib0");
	TEST_STREQ(got->event, "");

	/* a resolve that failed on an event: the event is carried */
	memset(&res, 0, sizeof(res));
	res.step = STEP_RESOLVE_ADDR;
	res.err = EADDRNOTAVAIL;
	snprintf(res.event, sizeof(res.event), "RDMA_CM_EVENT_ADDR_ERROR");
	TEST_INTEQ(pipe(fds), 0);
	probe_emit_result(fds[1], &res);
	len = drain(fds, buf, sizeof(buf));
	TEST_STREQ(buf, "event RDMA_CM_EVENT_ADDR_ERROR\nresult 7 99 0 0 0\n");
	probe_parse(buf, len, &pp);
	TEST_CHECK(pp.have_result);
	TEST_INTEQ(pp.last_step, STEP_NONE);
	TEST_STREQ(pp.res.event, "RDMA_CM_EVENT_ADDR_ERROR");
	TEST_INTEQ(pp.res.err, EADDRNOTAVAIL);
}

static void parse(const char *text, struct probe_parsed *pp)
{
	probe_parse(text, strlen(text), pp);
}

static void test_parse_cut_and_bad(void)
{
	struct probe_parsed pp;
	char longfw[300];

	/* nothing: no step, no result */
	parse("", &pp);
	TEST_INTEQ(pp.last_step, STEP_NONE);
	TEST_CHECK(!pp.have_result);

	/* killed while in ibv_reg_mr: the last whole step line tells where */
	parse("step 1\nstep 2\nstep 3\nstep 4\nstep 5\n", &pp);
	TEST_INTEQ(pp.last_step, STEP_REG_MR);
	TEST_CHECK(!pp.have_result);
	TEST_STREQ(probe_step_call((enum probe_step)pp.last_step), "ibv_reg_mr");

	/* a line cut by the kill is not a record: neither a step nor a result */
	parse("step 2\nstep 3", &pp);
	TEST_INTEQ(pp.last_step, STEP_QUERY_DEVICE);
	parse("step 8\nresult 8 0 1 1 1", &pp);
	TEST_CHECK(!pp.have_result);
	TEST_INTEQ(pp.last_step, STEP_DONE);

	/* a result with a field missing is no result */
	parse("result 8 0 1 1\n", &pp);
	TEST_CHECK(!pp.have_result);
	parse("result 8 0 x 1 1\n", &pp);
	TEST_CHECK(!pp.have_result);

	/* records the agent does not know, or that only start like one, are skipped */
	parse("backend fake\ndevice mlx5_0\nstepping 4\nresults 8 0 1 1 1\nfw\nstep 6\n"
	      "result 8 0 1 2 1\n", &pp);
	TEST_INTEQ(pp.last_step, STEP_CM_CHANNEL);
	TEST_CHECK(pp.have_result);
	TEST_INTEQ(pp.res.step, STEP_DONE);
	TEST_STREQ(pp.res.fw_ver, "");

	/* a long fw text is cut to the field, never past it */
	memset(longfw, 'f', sizeof(longfw));
	memcpy(longfw, "fw ", 3);
	longfw[sizeof(longfw) - 2] = '\n';
	longfw[sizeof(longfw) - 1] = '\0';
	parse(longfw, &pp);
	TEST_INTEQ(strlen(pp.res.fw_ver), sizeof(pp.res.fw_ver) - 1);

	/* only len bytes are read: the second line lies past it */
	probe_parse("step 4\nstep 5\n", 7, &pp);
	TEST_INTEQ(pp.last_step, STEP_ALLOC_PD);
}

static void test_names(void)
{
	/* every name both ways */
	static const int all[] = { EPERM, ENOENT, ENOMEM, EACCES, ENODEV, EINVAL, ETIMEDOUT,
				   EADDRNOTAVAIL, EHOSTUNREACH, ECONNREFUSED, EOPNOTSUPP };

	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		TEST_INTEQ(errno_from_name(errno_name(all[i])), all[i]);
	TEST_STREQ(errno_name(ENOMEM), "ENOMEM");
	TEST_STREQ(errno_name(ETIMEDOUT), "ETIMEDOUT");
	/* not in the table: a generic word, and a name the table lacks is 0 */
	TEST_STREQ(errno_name(EDOM), "errno");
	TEST_STREQ(errno_name(0), "errno");
	TEST_INTEQ(errno_from_name("EDOM"), 0);
	TEST_INTEQ(errno_from_name("enomem"), 0);
	TEST_INTEQ(errno_from_name(""), 0);

	/* each step names its call; an unknown number says so */
	TEST_STREQ(probe_step_call(STEP_NONE), "the probe start");
	TEST_STREQ(probe_step_call(STEP_OPEN), "ibv_open_device");
	TEST_STREQ(probe_step_call(STEP_QUERY_PORT), "ibv_query_port");
	TEST_STREQ(probe_step_call(STEP_CM_CHANNEL), "rdma_create_id");
	TEST_STREQ(probe_step_call(STEP_RESOLVE_ROUTE), "rdma_resolve_route");
	TEST_STREQ(probe_step_call(STEP_DONE), "the probe end");
	TEST_STREQ(probe_step_call((enum probe_step)42), "?");
	/* the wire numbers the helper and older agents share */
	TEST_INTEQ(STEP_DONE, 8);
	TEST_INTEQ(STEP_RESOLVE_ROUTE, 9);
}

int main(void)
{
	test_round_trip();
	test_parse_cut_and_bad();
	test_names();
	TEST_EXIT();
}
