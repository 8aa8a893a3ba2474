/* SPDX-License-Identifier: MIT */
/* The run report and the node's status (status.c). */
#ifndef HPCINIT_STATUS_H
#define HPCINIT_STATUS_H

#include <stdio.h>
#include <string.h>

#include "runner.h"

/* The exit code of hpcinit status (and a part's) when the node's state is unknown. */
#define STATUS_EXIT_UNKNOWN 4

/*
 * The parts on record before a run that records itself, read once under the
 * run lock: *ret_node is the node's state they say (the state the last runs
 * left), and status_write composes this run's with them and frees them.
 */
struct status_prior;
struct status_prior *status_prior_load(const struct ctx *c, struct node_state *ret_node);
/* Record a run that may write, or a recorded check: its part, status.json and the textfile
 * (prior: from status_prior_load, taken and freed; NULL: read here). */
void status_write(struct ctx *c, const struct run_opts *o, const struct run_result *res,
		  struct status_prior *prior);
/* One step's report as its status-document entry (JSON), and parsed back (0 or -EBADMSG). */
char *report_to_json(const char *name, const struct report *r);
int report_from_json(const char *text, size_t len, struct report *r);
/* Render the run as JSON (the status document). */
char *runner_json(const struct ctx *c, const struct run_opts *o, const struct run_result *res);
/* Print the human table (and details of interesting modules) to out. */
void runner_print_table(const struct ctx *c, const struct run_result *res, FILE *out);

/* ---- for the readers (agent/cmd/status_read.c) ---- */

/* The kinds of run status.json is composed from, and their names there. */
enum part_id { PART_APPLY, PART_REFRESH, PART_VERIFY, PART_CHECK, N_PARTS };
/* The part a run records (PART_APPLY: a whole apply, after which the node's state is known). */
static inline enum part_id status_part_of(const struct ctx *c, const struct run_opts *o)
{
	if (c->mode == RUN_CHECK)
		return PART_CHECK;
	if (c->verify)
		return PART_VERIFY;
	if (strcmp(o->command, "apply") == 0 && o->only.n == 0)
		return PART_APPLY;
	return PART_REFRESH;
}
extern const char *const status_part_names[N_PARTS];
/* "ready", "degraded" or "failed" for an exit code 0, 3 or 1. */
const char *status_result_word(int code);
/* One row of the table: name, status, time, summary (escaped). */
void status_print_row(FILE *out, const char *name, const char *status, const char *dur, const char *summary);

#endif
