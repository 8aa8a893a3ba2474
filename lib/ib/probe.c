/* SPDX-License-Identifier: MIT */
/* Runs of hpcinit-rdma-probe under the child engine (probe.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hpcinit.h"
#include "ib/probe.h"
#include "limits/memlock_job.h"
#include "proc.h"

#define REAP_GRACE_MS 500       /* after SIGKILL: a probe stuck in the kernel is left behind */

extern char **environ;

/* The helper's argv: hpcinit-rdma-probe [--root R] [--memlock M] CMD [ARG [ARG]]. */
static void helper_argv(const struct ctx *c, struct strlist *av, char *path, long long memlock, const char *cmd,
			const char *a1, const char *a2)
{
	strlist_push(av, path);
	if (c->root && c->root[0]) {
		strlist_push(av, "--root");
		strlist_push(av, c->root);
	}
	/*
	 * The probe registers under the limit a job gets here (lib/limits/memlock_job.c: a
	 * new PAM session of the spec's user, and systemd services; the lower),
	 * never under the spec's wish: it proves the node, not the spec.
	 */
	if (memlock != MEMLOCK_UNSET && (strcmp(cmd, "probe") == 0 || strcmp(cmd, "resolve") == 0)) {
		char buf[32];

		snprintf(buf, sizeof(buf), "%lld", memlock);
		strlist_push(av, "--memlock");
		strlist_push(av, memlock == MEMLOCK_UNLIMITED ? "unlimited" : buf);
	}
	strlist_push(av, cmd);
	if (a1)
		strlist_push(av, a1);
	if (a2)
		strlist_push(av, a2);
}

/*
 * Start the helper.  It gets the agent's environment: it is part of
 * hpcinit, and LD_PRELOAD shims and sanitizer options must reach it.
 */
static int helper_start(const struct ctx *c, struct proc_child *ch, long long memlock, const char *cmd,
			const char *a1, const char *a2)
{
	char *path = proc_helper_path(RDMA_PROBE_HELPER);
	struct strlist av = { 0 };
	int r;

	helper_argv(c, &av, path, memlock, cmd, a1, a2);
	r = proc_start_argv(ch, path, (const char *const *)av.v, (const char *const *)environ, NULL);
	strlist_free(&av);
	free(path);
	return r;
}

int probe_job_start(const struct ctx *c, struct probe_job *j, uint64_t reg_mr, unsigned timeout_ms,
		    long long memlock)
{
	char num[32];

	j->last_step = STEP_NONE;
	snprintf(num, sizeof(num), "%llu", (unsigned long long)(j->resolve ? timeout_ms : reg_mr));
	return helper_start(c, &j->ch, memlock, j->route ? "route" : j->resolve ? "resolve" : "probe",
			    j->resolve ? j->addr : j->what, num);
}

/*
 * Wait for every job until it answers or the timeout passes; kill the rest
 * at once.  SIGKILL cannot end a process sleeping uninterruptibly in a
 * driver, so reaping is bounded too: such a probe is left to init.
 */
static void jobs_wait(struct probe_job *jobs, size_t n, uint64_t timeout_ms)
{
	const struct proc_limits lim = { .timeout_ms = (unsigned)timeout_ms, .reap_ms = REAP_GRACE_MS,
					 .eof_ends = true };
	struct proc_child *chs = xcalloc(n ? n : 1, sizeof(*chs));

	for (size_t i = 0; i < n; i++)
		chs[i] = jobs[i].ch;
	proc_wait(chs, n, &lim);
	for (size_t i = 0; i < n; i++) {
		struct probe_job *j = &jobs[i];
		struct proc_child *ch = &chs[i];
		struct probe_parsed pp;

		probe_parse(ch->out.buf ? ch->out.buf : "", ch->out.len, &pp);
		j->last_step = pp.last_step;
		j->have_result = pp.have_result;
		j->res = pp.res;
		j->hung = ch->pid > 0 && !ch->eof;
		j->reaped = ch->exited;
		j->wstatus = ch->status;
		j->ms = ch->ms;
		proc_child_free(ch);
		memset(&j->ch, 0, sizeof(j->ch));
	}
	free(chs);
}

/*
 * How long the probes may take: timeout_ms, cut so that a second of the
 * step's deadline is left to read the answers and report.  A deadline
 * nearer than that second is not cut further (the probes keep their own
 * timeout), and no deadline cuts nothing.
 */
static uint64_t probe_wait_ms(const struct ctx *c, uint64_t timeout_ms)
{
	uint64_t left = ctx_remaining_ms(c);

	return left > 1000 && timeout_ms > left - 1000 ? left - 1000 : timeout_ms;
}

/* jobs_wait within the step's deadline: every probe batch waits through here. */
void probe_jobs_wait(const struct ctx *c, struct probe_job *jobs, size_t n, uint64_t timeout_ms)
{
	jobs_wait(jobs, n, probe_wait_ms(c, timeout_ms));
}

int probe_helper_ask(const struct ctx *c, const char *cmd, const char *arg, unsigned timeout_ms,
		     struct strbuf *ret)
{
	const struct proc_limits lim = { .timeout_ms = timeout_ms, .reap_ms = REAP_GRACE_MS, .eof_ends = true };
	struct proc_child ch = { 0 };
	int r = helper_start(c, &ch, MEMLOCK_UNSET, cmd, arg, NULL);

	if (r < 0)
		return r;
	proc_wait(&ch, 1, &lim);
	r = ch.eof ? 0 : -ETIMEDOUT;
	*ret = ch.out;
	ch.out = (struct strbuf)STRBUF_INIT;
	proc_child_free(&ch);
	return r;
}

char *probe_helper_field(const char *text, const char *key)
{
	size_t k = strlen(key);

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);

		if (n > k && strncmp(p, key, k) == 0 && p[k] == ' ')
			return xasprintf("%.*s", (int)(n - k - 1), p + k + 1);
		p = nl ? nl + 1 : NULL;
	}
	return NULL;
}
