/* SPDX-License-Identifier: MIT */
/* Prometheus text exposition for node_exporter's textfile collector. */
#ifndef HPCINIT_METRICS_H
#define HPCINIT_METRICS_H

#include <stdbool.h>

#include "strbuf.h"

struct ctx;
struct report;

/* Where Debian's prometheus-node-exporter reads *.prom by default (--collector.textfile.directory). */
#define TEXTFILE_DIR "/var/lib/prometheus/node-exporter"
#define TEXTFILE_NAME "hpcinit.prom"

/* A metric's # HELP and # TYPE lines (help text escaped as the format says). */
void prom_head(struct strbuf *sb, const char *name, const char *type, const char *help);
/* A label value, quoted and escaped: backslash, double quote and newline. */
void prom_label(struct strbuf *sb, const char *key, const char *value, int first);
/*
 * The series of metric for one step's findings, one a tag (and severity),
 * its value how many findings have it (the bound's "... N more" entry counts
 * those it stands for): cluster false, the findings that make the step
 * degraded or failed ({step, severity, tag}); true, its cluster findings
 * ({step, tag}).  Two findings with one tag are one series, never two.
 */
void metrics_findings(struct strbuf *sb, const char *metric, const char *step, const struct report *r,
		      bool cluster);
/*
 * Write text to TEXTFILE_DIR/TEXTFILE_NAME (under --root) atomically, only
 * when TEXTFILE_DIR exists (the exporter's package made it): 1 written,
 * 0 no directory, -errno.
 */
int metrics_write(struct ctx *c, const char *text);

#endif
