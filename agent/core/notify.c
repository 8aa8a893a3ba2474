/* SPDX-License-Identifier: MIT */
/*
 * sd_notify without libsystemd: systemd's protocol is one datagram of
 * newline-separated VAR=value lines sent to the AF_UNIX socket named in
 * $NOTIFY_SOCKET ("/path", or "@name" for the abstract namespace).  hpcinit
 * watch (Type=notify) says READY=1 after its first membership and a STATUS=
 * after each refresh; hpcinit.service (oneshot, NotifyAccess=main) says its
 * result in STATUS=.
 */
#include "config.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "log.h"
#include "notify.h"
#include "record.h"
#include "runner.h"
#include "strbuf.h"

int notify_send(const char *text)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	size_t len;
	socklen_t salen;
	int fd, r = 0;

	if (!path || !*path)
		return 0;
	len = strlen(path);
	if ((path[0] != '/' && path[0] != '@') || len < 2 || len >= sizeof(sa.sun_path)) {
		log_warn("NOTIFY_SOCKET=%s is not a socket path or @abstract name, ignoring", path);
		return -EINVAL;
	}
	memcpy(sa.sun_path, path, len);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';          /* abstract: no NUL at the end, length counts */
	salen = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/' ? 1 : 0));
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		log_errno(LOG_LVL_WARN, r, "notify: socket, ignoring");
		return r;
	}
	if (sendto(fd, text, strlen(text), MSG_NOSIGNAL, (struct sockaddr *)&sa, salen) < 0) {
		r = -errno;
		log_errno(LOG_LVL_WARN, r, "notify: cannot send to %s, ignoring", path);
	}
	close(fd);
	return r;
}

int notify_run(const char *what, const struct run_result *res, bool ready)
{
	struct strbuf sb = STRBUF_INIT;
	const char *word = res->exit_code == 0 ? "ready" : res->exit_code == 3 ? "degraded" : "failed";
	const char *why = NULL;
	int worst = -1, r;

	/* The summary of the worst step (the first failed, else the first degraded). */
	for (size_t i = 0; i < res->n; i++) {
		int rank = res->reports[i].status == ST_FAILED ? 2 : res->reports[i].status == ST_DEGRADED ? 1 : 0;

		if (res->ran[i] && rank > 0 && rank > worst) {
			worst = rank;
			why = res->reports[i].summary;
		}
	}
	if (ready && res->exit_code != 1)
		sb_append(&sb, "READY=1\n");
	sb_printf(&sb, "STATUS=hpcinit %s: %s (exit %d)", what, word, res->exit_code);
	if (res->out.peers)
		sb_printf(&sb, ", %zu peers", res->out.peers->n);
	if (why && *why) {
		/* one line: the protocol separates variables by newlines */
		size_t start = sb.len;

		sb_printf(&sb, ": %s", why);
		for (size_t i = start; i < sb.len; i++)
			if (sb.buf[i] == '\n' || sb.buf[i] == '\r')
				sb.buf[i] = ' ';
	}
	sb_append(&sb, "\n");
	r = notify_send(sb_str(&sb));
	sb_free(&sb);
	return r;
}
