/* SPDX-License-Identifier: MIT */
/*
 * What the step (discovery.c) and its methods (shared.c, static.c, scan.c,
 * etcd.c) share about a run: the clock records are stamped and judged by,
 * the hook that does nothing, when expect is met, the notes moved on.  A
 * file below both, so no method calls back into the step that calls it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "discovery.h"

static int64_t system_now(void)
{
	return (int64_t)time(NULL);
}

static const struct disc_clock system_clock = { system_now };
const struct disc_clock *disc_clock = &system_clock;

int64_t disc_now(void)
{
	return disc_clock->now();
}

int disc_nop(struct disc_run *run)
{
	(void)run;
	return 0;
}

bool disc_expect_met(struct disc_run *run)
{
	if (run->ready || run->found.n + 1 >= run->c->spec->discovery.expect)
		return true;
	for (size_t i = 0; i < run->found.n; i++)
		if (run->found.v[i].formed) {
			run->ready = true;
			snprintf(run->ready_why, sizeof(run->ready_why), "the cluster has formed: "
				 "%s's record says so", run->found.v[i].hostname);
			return true;
		}
	return false;
}

void disc_notes_commit(struct disc_run *run)
{
	report_take_findings(run->rep, &run->notes);      /* with the count of those not kept */
	report_free(&run->notes);
	report_init(&run->notes);
}

void disc_run_reset(struct disc_run *run)
{
	for (size_t i = 0; i < run->found.n; i++)
		peer_clear(&run->found.v[i]);
	free(run->found.v);
	memset(&run->found, 0, sizeof(run->found));
	report_free(&run->notes);
	report_init(&run->notes);
}
