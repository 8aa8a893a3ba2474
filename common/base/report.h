/* SPDX-License-Identifier: MIT */
/*
 * A step's report (report.c): its status, summary, details, changed files
 * and findings, and the helpers that fill it.  Part of the module contract
 * (hpcinit.h includes it).
 */
#ifndef HPCINIT_REPORT_H
#define HPCINIT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "strbuf.h"
#include "strlist.h"

enum run_mode {
	RUN_APPLY,      /* converge: write what differs */
	RUN_CHECK,      /* observe only: report drift */
	RUN_PLAN,       /* observe only: report what apply would change, with diffs */
};

enum rstatus {
	ST_OK,          /* in sync, nothing to do */
	ST_CHANGED,     /* apply changed something; in check/plan: drift / would change */
	ST_SKIPPED,     /* section absent, or a needed module failed */
	ST_DEGRADED,    /* works, with a problem the spec marks optional */
	ST_FAILED,      /* the step did not reach its goal */
};

/*
 * A finding is data: what the step saw, how bad it is and a stable dotted tag
 * ("kernel.hold.missing") that scripts can match on while the text changes.
 * sev is the status the finding implies: ST_OK (information), ST_CHANGED
 * (drift, or a change made), ST_DEGRADED or ST_FAILED.
 */
struct finding {
	enum rstatus sev;
	bool cluster;   /* about other nodes (report_cluster): never this node's status */
	char *tag;
	char *text;
};

struct report {
	enum rstatus status;
	char summary[256];      /* one line, no newline */
	struct strbuf details;  /* free text, one finding a line; diffs in plan mode */
	struct strlist changed; /* paths (as seen on the target, without --root) */
	struct finding *findings;       /* report_finding(), in the order recorded */
	size_t n_findings;
	uint64_t duration_ms;   /* filled by the runner */
	/* The bound on details and findings (report.c, REPORT_MAX_*): what was not kept. */
	size_t details_lines, details_dropped, details_cut, findings_dropped;
};

/* Report helpers.  They never fail; out-of-memory aborts. */
void report_init(struct report *r);
void report_free(struct report *r);
void report_set(struct report *r, enum rstatus st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Raise status to at least st (FAILED > DEGRADED > CHANGED > OK). */
void report_raise(struct report *r, enum rstatus st);
void report_detail(struct report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void report_changed(struct report *r, const char *path);
/*
 * Record a finding: a detail line (as report_detail), {sev, tag, text} in
 * r->findings, and the status raised to sev.  Unless the module sets a
 * summary, the runner makes one from the findings (report_summarize).
 */
void report_finding(struct report *r, enum rstatus sev, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/*
 * A cluster finding: what a step saw of other nodes or of what they share
 * (a record rejected, a KRL a non-head wrote).  A detail line and a finding
 * {ST_DEGRADED, tag, text, cluster} like report_finding (severity "cluster"
 * in JSON), shown in status and counted
 * in the metrics, but the report's status is NOT raised: a peer's bad record
 * is never a reason to drain, fail, or answer Unhealthy for this node.
 */
void report_cluster(struct report *r, const char *tag, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/*
 * A step's details and findings are bounded (report.c): the first 1000
 * lines (128 KiB), then a "... N more" line; the first 1000 findings, then
 * one tagged report.more-findings that counts the rest (worst severity).
 * report_take_findings records src's findings in dst (report_finding each),
 * its count of those not kept included.
 */
void report_take_findings(struct report *dst, const struct report *src);
/* Findings that are a problem of this node (sev above ST_OK, not cluster findings). */
size_t report_problems(const struct report *r);
/*
 * The worst-first summary: the first finding whose severity is the report's
 * status, and "(+N more)" for the other problems.  False (and nothing set)
 * when no finding explains the status.
 */
bool report_summarize(struct report *r);
const char *rstatus_name(enum rstatus st, enum run_mode mode);
/* Severity of a finding in JSON: "info", "change", "degraded", "failed". */
const char *finding_severity_name(enum rstatus sev);
/* A finding's kind in JSON and the metrics: "cluster" for a cluster finding, else its severity's name. */
const char *finding_kind_name(const struct finding *f);
/* The reverse of finding_kind_name: false for an unknown name. */
bool finding_kind_from_name(const char *s, enum rstatus *ret_sev, bool *ret_cluster);

#endif
