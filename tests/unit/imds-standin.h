/* SPDX-License-Identifier: MIT */
/*
 * A stand-in for Azure IMDS (tests only; not the real service): a loopback
 * listener answering one scripted answer a connection, for the unit tests
 * of lib/metadata (the client) and lib/ib/identity.c (the placement group).
 */
#ifndef HPCINIT_TEST_IMDS_STANDIN_H
#define HPCINIT_TEST_IMDS_STANDIN_H

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- a stand-in for IMDS: one scripted answer a connection -------------------------- */

#define HANG NULL               /* accept, read, never answer */

static void imds_serve(int lfd, const char *const *answers, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		int fd = accept(lfd, NULL, NULL);
		char req[4096];
		size_t len = 0;
		ssize_t k;
		const char *a = answers[i];

		if (fd < 0)
			_exit(1);
		while (len < sizeof(req) - 1 && (k = read(fd, req + len, sizeof(req) - 1 - len)) > 0) {
			len += (size_t)k;
			req[len] = '\0';
			if (strstr(req, "\r\n\r\n"))
				break;
		}
		req[len] = '\0';
		if (strncmp(req, "GET /metadata/instance/compute/placementGroupId?api-version=2021-02-01&format=text "
			    "HTTP/1.0\r\n", 86) != 0 || !strstr(req, "\r\nMetadata: true\r\n"))
			a = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
		if (a == HANG) {
			sleep(5);
		} else if (write(fd, a, strlen(a)) < 0) {
			_exit(1);
		}
		close(fd);
	}
	_exit(0);
}

/* Start the stand-in; its URL in url, its pid returned. */
static pid_t imds_start(const char *const *answers, size_t n, char *url, size_t urln)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t sl = sizeof(sa);
	int lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	pid_t pid;

	if (lfd < 0 || bind(lfd, (struct sockaddr *)&sa, sizeof(sa)) < 0 || listen(lfd, 8) < 0 ||
	    getsockname(lfd, (struct sockaddr *)&sa, &sl) < 0)
		abort();
	snprintf(url, urln, "http://127.0.0.1:%u/metadata/instance/compute/placementGroupId"
		 "?api-version=2021-02-01&format=text", (unsigned)ntohs(sa.sin_port));
	pid = fork();
	if (pid == 0)
		imds_serve(lfd, answers, n);
	close(lfd);
	return pid;
}

static void imds_stop(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

#endif
