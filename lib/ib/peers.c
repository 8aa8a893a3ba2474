/* SPDX-License-Identifier: MIT */
/* rdma_cm to peers (peers.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "hpcinit.h"
#include "ib/peers.h"
#include "ib/probe.h"
#include "limits/memlock_job.h"
#include "proc.h"
#include "record.h"

enum rstatus ib_check_peers(struct ctx *c, struct report *r, const struct peerset *peers,
			    unsigned *n_checked, unsigned *n_ok)
{
	const struct spec_rdma *s = &c->spec->rdma;
	enum rstatus sev = s->required ? ST_FAILED : ST_DEGRADED, worst = ST_OK;
	struct probe_job jobs[RDMA_PEERS_MAX];
	size_t n_jobs = 0, self = SIZE_MAX, np = peers ? peers->n : 0;
	char *helper = proc_helper_path(RDMA_PROBE_HELPER);
	bool have_helper = access(helper, X_OK) == 0;

	free(helper);
	memset(jobs, 0, sizeof(jobs));
	*n_checked = *n_ok = 0;
	if (!s->present || np < 2)
		return ST_OK;
	if (!have_helper) {
		report_detail(r, "rdma_cm to peers: not checked (%s is not installed)", RDMA_PROBE_HELPER);
		return ST_OK;
	}
	for (size_t i = 0; i < np; i++)
		if (peers->v[i].self)
			self = i;
	/* The peers that follow this node (a ring): every pair is covered by one of its ends. */
	for (size_t k = 1, seen = 0; k < np && seen < RDMA_PEERS_MAX; k++) {
		const struct peer *p = &peers->v[((self == SIZE_MAX ? 0 : self) + k) % np];
		const char *addr = s->ipoib && p->ipoib_addr ? p->ipoib_addr :
				   s->link_layer != LINK_INFINIBAND ? p->addr : NULL;
		struct probe_job *j = &jobs[n_jobs];
		int ret;

		if (p->self)
			continue;
		seen++;
		if (!addr) {
			report_detail(r, "rdma_cm to %s: not checked: it publishes no IPoIB address%s",
				      p->hostname ? p->hostname : "?", s->ipoib ? "" : " (rdma.ipoib is not set)");
			continue;
		}
		j->what = p->hostname ? p->hostname : "?";
		snprintf(j->addr, sizeof(j->addr), "%s", addr);
		j->resolve = j->route = true;
		ret = probe_job_start(c, j, 0, (unsigned)s->open_timeout_ms, MEMLOCK_UNSET);
		if (ret < 0) {
			report_finding(r, sev, "rdma.peer-resolve", "rdma_cm to %s (%s): cannot start the probe: %s",
				       j->what, j->addr, strerror(-ret));
			worst = sev;
			continue;
		}
		n_jobs++;
	}
	if (n_jobs)
		probe_jobs_wait(c, jobs, n_jobs, s->open_timeout_ms);
	for (size_t i = 0; i < n_jobs; i++) {
		const struct probe_job *j = &jobs[i];
		const struct probe_result *res = &j->res;

		(*n_checked)++;
		if (j->have_result && res->step == STEP_DONE) {
			(*n_ok)++;
			report_detail(r, "rdma_cm to %s: %s resolves (address and route) via %s in %llu ms", j->what,
				      j->addr, res->resolved_dev[0] ? res->resolved_dev : "?", (unsigned long long)j->ms);
			continue;
		}
		worst = sev;
		if (j->hung)
			report_finding(r, sev, "rdma.peer-resolve", "rdma_cm to %s: %s(%s) did not complete within "
				       "%llu ms", j->what, probe_step_call((enum probe_step)j->last_step), j->addr,
				       (unsigned long long)s->open_timeout_ms);
		else if (!j->have_result)
			report_finding(r, sev, "rdma.peer-resolve", "rdma_cm to %s: the probe died", j->what);
		else
			report_finding(r, sev, "rdma.peer-resolve", "rdma_cm to %s: %s(%s) failed: %s%s%s (%s)",
				       j->what, probe_step_call((enum probe_step)res->step), j->addr,
				       res->event[0] ? res->event : "", res->event[0] ? ", " : "",
				       errno_name(res->err), strerror(res->err));
	}
	return worst;
}
