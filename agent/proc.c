/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "hpcinit.h"
#include "proc.h"

static const char safe_path[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

char *proc_which(const char *name)
{
	const char *p = safe_path;

	if (strchr(name, '/'))
		return access(name, X_OK) == 0 ? xstrdup(name) : NULL;
	while (*p) {
		const char *colon = strchr(p, ':');
		size_t n = colon ? (size_t)(colon - p) : strlen(p);
		char *cand = xasprintf("%.*s/%s", (int)n, p, name);
		struct stat st;

		if (stat(cand, &st) == 0 && S_ISREG(st.st_mode) && access(cand, X_OK) == 0)
			return cand;
		free(cand);
		p += n + (colon ? 1 : 0);
	}
	return NULL;
}

char *argv_render(const char *const argv[])
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; argv[i]; i++) {
		const char *a = argv[i];
		bool plain = *a != '\0';

		for (const char *q = a; *q; q++)
			if (!(strchr("-_./=:,+@%", *q) || (*q >= '0' && *q <= '9') ||
			      (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z')))
				plain = false;
		if (i)
			sb_append(&sb, " ");
		if (plain) {
			sb_append(&sb, a);
		} else {
			sb_append(&sb, "'");
			for (const char *q = a; *q; q++) {
				if (*q == '\'')
					sb_append(&sb, "'\\''");
				else
					sb_appendn(&sb, q, 1);
			}
			sb_append(&sb, "'");
		}
	}
	return sb_steal(&sb);
}

void proc_result_free(struct proc_result *r)
{
	free(r->out);
	free(r->err);
	r->out = r->err = NULL;
	r->out_len = r->err_len = 0;
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int proc_run(const char *const argv[], const char *const envp[], const char *stdin_data,
	     unsigned timeout_ms, struct proc_result *ret)
{
	static const char *const default_env[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", NULL };
	int outp[2] = { -1, -1 }, errp[2] = { -1, -1 }, inp[2] = { -1, -1 }, execp[2] = { -1, -1 };
	struct strbuf out = STRBUF_INIT, err = STRBUF_INIT;
	size_t in_off = 0, in_len = stdin_data ? strlen(stdin_data) : 0;
	char *prog;
	pid_t pid;
	int status = 0, r = 0, exec_errno = 0;
	uint64_t deadline, killed_at = 0;
	bool exited = false;
	struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;

	memset(ret, 0, sizeof(*ret));
	prog = proc_which(argv[0]);
	if (!prog)
		return -ENOENT;
	/* A child that exits without reading its stdin must not kill us with SIGPIPE. */
	sigaction(SIGPIPE, &ign, &old_pipe);
	if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 ||
	    pipe2(inp, O_CLOEXEC) < 0 || pipe2(execp, O_CLOEXEC) < 0) {
		r = -errno;
		goto out_close;
	}
	pid = fork();
	if (pid < 0) {
		r = -errno;
		goto out_close;
	}
	if (pid == 0) {
		int e;

		setpgid(0, 0);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(inp[0], 0) < 0 || dup2(outp[1], 1) < 0 || dup2(errp[1], 2) < 0)
			_exit(127);
		/* execve's prototype predates const; the arrays are not modified. */
		union { const char *const *c; char *const *m; } av = { argv }, ev = { envp ? envp : default_env };

		execve(prog, av.m, ev.m);
		e = errno;
		(void)!write(execp[1], &e, sizeof(e));
		_exit(127);
	}
	setpgid(pid, pid);
	close(inp[0]);
	inp[0] = -1;
	close(outp[1]);
	outp[1] = -1;
	close(errp[1]);
	errp[1] = -1;
	close(execp[1]);
	execp[1] = -1;
	if (read(execp[0], &exec_errno, sizeof(exec_errno)) == (ssize_t)sizeof(exec_errno)) {
		waitpid(pid, &status, 0);
		r = -exec_errno;
		goto out_close;
	}
	if (in_len == 0) {
		close(inp[1]);
		inp[1] = -1;
	} else {
		fcntl(inp[1], F_SETFL, O_NONBLOCK);
	}

	deadline = mono_ms() + timeout_ms;
	while (outp[0] >= 0 || errp[0] >= 0 || inp[1] >= 0) {
		struct pollfd pf[3];
		int nf = 0, wait_ms;
		uint64_t now = mono_ms();

		if (!killed_at && now >= deadline) {
			kill(-pid, SIGTERM);
			killed_at = now;
			ret->timed_out = true;
		} else if (killed_at && now >= killed_at + 1000) {
			kill(-pid, SIGKILL);
			/* Grandchildren holding the pipes open must not keep us here. */
			break;
		}
		wait_ms = killed_at ? (int)(killed_at + 1000 - now) + 1 : (int)(deadline - now) + 1;
		if (outp[0] >= 0)
			pf[nf++] = (struct pollfd){ .fd = outp[0], .events = POLLIN };
		if (errp[0] >= 0)
			pf[nf++] = (struct pollfd){ .fd = errp[0], .events = POLLIN };
		if (inp[1] >= 0)
			pf[nf++] = (struct pollfd){ .fd = inp[1], .events = POLLOUT };
		if (poll(pf, (nfds_t)nf, wait_ms) < 0) {
			if (errno == EINTR)
				continue;
			r = -errno;
			break;
		}
		for (int i = 0; i < nf; i++) {
			char buf[8192];
			ssize_t n;

			if (!pf[i].revents)
				continue;
			if (pf[i].fd == inp[1]) {
				n = write(inp[1], stdin_data + in_off, in_len - in_off);
				if (n > 0)
					in_off += (size_t)n;
				if (n < 0 && errno == EAGAIN)
					continue;
				if (n < 0 || in_off == in_len) {
					close(inp[1]);
					inp[1] = -1;
				}
				continue;
			}
			n = read(pf[i].fd, buf, sizeof(buf));
			if (n <= 0) {
				if (n < 0 && (errno == EINTR || errno == EAGAIN))
					continue;
				if (pf[i].fd == outp[0]) {
					close(outp[0]);
					outp[0] = -1;
				} else {
					close(errp[0]);
					errp[0] = -1;
				}
				continue;
			}
			struct strbuf *sb = pf[i].fd == outp[0] ? &out : &err;

			if (sb->len + (size_t)n <= PROC_MAX_OUTPUT)
				sb_appendn(sb, buf, (size_t)n);
		}
	}
	/* Reap: the pipes are closed (or we gave up on them); bound the wait too. */
	for (;;) {
		pid_t w = waitpid(pid, &status, WNOHANG);
		uint64_t now = mono_ms();

		if (w == pid) {
			exited = true;
			break;
		}
		if (w < 0 && errno != EINTR)
			break;
		if (!killed_at && now >= deadline) {
			kill(-pid, SIGTERM);
			killed_at = now;
			ret->timed_out = true;
		} else if (killed_at && now >= killed_at + 1000) {
			kill(-pid, SIGKILL);
			waitpid(pid, &status, 0);
			exited = true;
			break;
		}
		struct timespec ts = { 0, 5 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	if (exited) {
		if (WIFEXITED(status)) {
			ret->exit_code = WEXITSTATUS(status);
		} else if (WIFSIGNALED(status)) {
			ret->exit_code = -1;
			ret->term_signal = WTERMSIG(status);
		}
	}
out_close:
	for (int i = 0; i < 2; i++) {
		if (outp[i] >= 0)
			close(outp[i]);
		if (errp[i] >= 0)
			close(errp[i]);
		if (inp[i] >= 0)
			close(inp[i]);
		if (execp[i] >= 0)
			close(execp[i]);
	}
	free(prog);
	sigaction(SIGPIPE, &old_pipe, NULL);
	if (r < 0) {
		sb_free(&out);
		sb_free(&err);
		return r;
	}
	ret->out_len = out.len;
	ret->out = sb_steal(&out);
	ret->err_len = err.len;
	ret->err = sb_steal(&err);
	return 0;
}
