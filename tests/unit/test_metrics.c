/* SPDX-License-Identifier: MIT */
/* metrics: the Prometheus text format's escaping; notify: the sd_notify datagram. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "hpcinit.h"
#include "metrics.h"
#include "notify.h"
#include "test.h"

static void test_prom(void)
{
	struct strbuf sb = STRBUF_INIT;

	prom_label(&sb, "tag", "a\\b\"c\nd", 1);
	prom_label(&sb, "x", "caf\xc3\xa9\t", 0);
	TEST_STREQ(sb_str(&sb), "tag=\"a\\\\b\\\"c\\nd\",x=\"caf\\\\xc3\\\\xa9\\\\x09\"");
	sb_reset(&sb);
	prom_head(&sb, "hpcinit_x", "gauge", "one\\two\nthree \"q\"");
	TEST_STREQ(sb_str(&sb), "# HELP hpcinit_x one\\\\two\\nthree \"q\"\n# TYPE hpcinit_x gauge\n");
	sb_free(&sb);
}

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

int main(void)
{
	test_prom();
	test_notify();
	TEST_EXIT();
}
