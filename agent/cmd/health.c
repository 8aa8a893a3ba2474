/* SPDX-License-Identifier: MIT */
/*
 * hpcinit health: one answer to the Azure VMSS Application Health extension
 * (Rich Health States over HTTP), inetd style: systemd's
 * hpcinit-health.socket (Accept=yes) starts it per connection with the
 * connection on stdin and stdout.  No daemon: it reads the request (at most
 * HEALTH_MAX_REQUEST bytes, for at most HEALTH_READ_MS), reads the node's
 * status (status.c) and answers:
 *
 *   ready or degraded   200 {"ApplicationHealthState": "Healthy"}
 *   failed              200 {"ApplicationHealthState": "Unhealthy"}
 *   no full apply yet   503 without that body: no valid answer, so the
 *   this boot, or the   platform keeps a new instance Initializing, then
 *   status unknown      (after its grace period) counts it Unknown and
 *                       repairs a node that never became ready
 *
 * Degraded is Healthy (the node works; Slurm drains it with the reason);
 * the reason is in the metrics (hpcinit_finding) and in hpcinit status.
 * The state is live: status.json includes the last recorded hpcinit check
 * (hpcinit-check.timer), so a failure found after boot answers Unhealthy
 * and a repair Healthy again; drift alone stays Healthy.
 */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "health.h"
#include "runner.h"
#include "status_read.h"
#include "strbuf.h"

#define HEALTH_MAX_REQUEST 8192
#define HEALTH_READ_MS 2000
#define HEALTH_DEADLINE_S 5             /* the whole answer, whatever blocks */

/* Read the request head (up to the empty line) within the deadline: its length, or -1. */
static ssize_t read_request(int fd, char *buf, size_t size)
{
	uint64_t until = now_ms() + HEALTH_READ_MS;
	size_t len = 0;

	while (len + 1 < size) {
		uint64_t now = now_ms();
		struct pollfd pf = { .fd = fd, .events = POLLIN };
		ssize_t n;

		if (now >= until || poll(&pf, 1, (int)(until - now)) <= 0)
			return -1;
		n = read(fd, buf + len, size - 1 - len);
		if (n < 0 && (errno == EINTR || errno == EAGAIN))
			continue;
		if (n <= 0)
			break;
		len += (size_t)n;
		buf[len] = '\0';
		if (strstr(buf, "\r\n\r\n") || strstr(buf, "\n\n"))
			return (ssize_t)len;
	}
	buf[len] = '\0';
	return len + 1 < size && len ? (ssize_t)len : -1;
}

static void answer(int fd, const char *status, const char *type, const char *body, bool head)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
		  "Cache-Control: no-store\r\nConnection: close\r\n\r\n%s",
		  status, type, strlen(body), head ? "" : body);
	(void)fd_write_all(fd, sb_str(&sb), sb.len);
	sb_free(&sb);
}

int health_main(const struct ctx *c, int in_fd, int out_fd)
{
	char req[HEALTH_MAX_REQUEST];
	bool applied = false, head;
	ssize_t n;
	int code;

	signal(SIGPIPE, SIG_IGN);
	alarm(HEALTH_DEADLINE_S);
	n = read_request(in_fd, req, sizeof(req));
	if (n < 0) {
		answer(out_fd, "400 Bad Request", "text/plain", "no complete request\n", false);
		return 1;
	}
	head = strncmp(req, "HEAD ", 5) == 0;
	if (strncmp(req, "GET ", 4) != 0 && !head) {
		answer(out_fd, "405 Method Not Allowed", "text/plain", "GET only\n", false);
		return 1;
	}
	code = status_state(c, &applied);
	if (code != 0 && code != 1 && code != 3) {
		answer(out_fd, "503 Service Unavailable", "text/plain",
		       "hpcinit: status unknown (no run since boot, or it could not write its status)\n", head);
		return 0;
	}
	if (!applied) {
		answer(out_fd, "503 Service Unavailable", "text/plain", "hpcinit: no full apply since boot yet\n", head);
		return 0;
	}
	answer(out_fd, "200 OK", "application/json", code == 1 ? "{\"ApplicationHealthState\": \"Unhealthy\"}\n" :
	       "{\"ApplicationHealthState\": \"Healthy\"}\n", head);
	return 0;
}
