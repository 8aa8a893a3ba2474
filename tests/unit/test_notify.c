/* SPDX-License-Identifier: MIT */
/*
 * agent/core/notify.c: the systemd notification protocol written directly:
 * one datagram to $NOTIFY_SOCKET (a path or an abstract name) received by
 * a real socket here, and what a run's end says (READY=1, STATUS= in one
 * line naming the worst step).
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "../../agent/core/notify.c"
#include "record.h"
#include "runner.h"
#include "test.h"

/* Bind a datagram socket at addr ("/path" or "@name"); its fd. */
static int listen_at(const char *addr)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len = strlen(addr);
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);

	memcpy(sa.sun_path, addr, len);
	if (addr[0] == '@')
		sa.sun_path[0] = '\0';
	TEST_CHECK(fd >= 0);
	TEST_CHECK(bind(fd, (struct sockaddr *)&sa, (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len)) == 0);
	return fd;
}

static void expect_datagram(int fd, const char *want)
{
	char buf[512];
	ssize_t n = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	TEST_CHECK(n >= 0);
	buf[n < 0 ? 0 : n] = '\0';
	TEST_STREQ(buf, want);
}

static void test_notify(void)
{
	char path[] = "/tmp/hpcinit-notify-XXXXXX", sock[64], abs[64];
	int fd;

	unsetenv("NOTIFY_SOCKET");
	TEST_INTEQ(notify_send("READY=1\n"), 0);        /* not under systemd: nothing to do */
	TEST_CHECK(mkdtemp(path) != NULL);
	snprintf(sock, sizeof(sock), "%s/notify", path);
	fd = listen_at(sock);
	setenv("NOTIFY_SOCKET", sock, 1);
	TEST_INTEQ(notify_send("STATUS=path\n"), 0);
	expect_datagram(fd, "STATUS=path\n");
	close(fd);
	unlink(sock);
	rmdir(path);

	snprintf(abs, sizeof(abs), "@hpcinit-unit-%d", (int)getpid());
	fd = listen_at(abs);
	setenv("NOTIFY_SOCKET", abs, 1);
	TEST_INTEQ(notify_send("READY=1\nSTATUS=abstract\n"), 0);
	expect_datagram(fd, "READY=1\nSTATUS=abstract\n");
	close(fd);

	setenv("NOTIFY_SOCKET", "relative/path", 1);
	TEST_INTEQ(notify_send("READY=1\n"), -EINVAL);
	unsetenv("NOTIFY_SOCKET");
}

/* A run of three steps: what notify_run sends for it. */
static void test_notify_run(void)
{
	char abs[64];
	struct report reps[3];
	bool ran[3] = { true, true, true };
	struct run_result res = { .reports = reps, .ran = ran, .n = 3 };
	struct peerset ps = { 0 };
	int fd;

	snprintf(abs, sizeof(abs), "@hpcinit-unit-run-%d", (int)getpid());
	fd = listen_at(abs);
	setenv("NOTIFY_SOCKET", abs, 1);
	for (int i = 0; i < 3; i++)
		report_init(&reps[i]);

	/* ready: READY=1 first when asked for, the peers counted */
	res.out.peers = &ps;
	ps.n = 4;
	TEST_INTEQ(notify_run("apply", &res, true), 0);
	expect_datagram(fd, "READY=1\nSTATUS=hpcinit apply: ready (exit 0), 4 peers\n");
	TEST_INTEQ(notify_run("apply", &res, false), 0);
	expect_datagram(fd, "STATUS=hpcinit apply: ready (exit 0), 4 peers\n");
	res.out.peers = NULL;

	/* degraded: still READY, the degraded step's summary on the same line */
	reps[1].status = ST_DEGRADED;
	snprintf(reps[1].summary, sizeof(reps[1].summary), "only 3 of 4 nodes\nsecond line");
	res.exit_code = 3;
	TEST_INTEQ(notify_run("refresh", &res, true), 0);
	expect_datagram(fd, "READY=1\nSTATUS=hpcinit refresh: degraded (exit 3): only 3 of 4 nodes second line\n");

	/* failed: no READY; the failed step is worse than the degraded one before it */
	reps[2].status = ST_FAILED;
	snprintf(reps[2].summary, sizeof(reps[2].summary), "mount /scratch: timed out");
	res.exit_code = 1;
	TEST_INTEQ(notify_run("apply", &res, true), 0);
	expect_datagram(fd, "STATUS=hpcinit apply: failed (exit 1): mount /scratch: timed out\n");

	/* a step that did not run (--only) is not the reason */
	ran[2] = false;
	TEST_INTEQ(notify_run("apply", &res, false), 0);
	expect_datagram(fd, "STATUS=hpcinit apply: failed (exit 1): only 3 of 4 nodes second line\n");

	/* nobody listening any more: the error, nothing else breaks */
	close(fd);
	TEST_INTEQ(notify_run("apply", &res, false), -ECONNREFUSED);
	for (int i = 0; i < 3; i++)
		report_free(&reps[i]);
	unsetenv("NOTIFY_SOCKET");
}

int main(void)
{
	test_notify();
	test_notify_run();
	TEST_EXIT();
}
