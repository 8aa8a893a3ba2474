/* SPDX-License-Identifier: MIT */
/* Prometheus text exposition for node_exporter's textfile collector. */
#ifndef HPCINIT_METRICS_H
#define HPCINIT_METRICS_H

#include "strbuf.h"

struct ctx;

/* Where Debian's prometheus-node-exporter reads *.prom by default (--collector.textfile.directory). */
#define TEXTFILE_DIR "/var/lib/prometheus/node-exporter"
#define TEXTFILE_NAME "hpcinit.prom"

/* A metric's # HELP and # TYPE lines (help text escaped as the format says). */
void prom_head(struct strbuf *sb, const char *name, const char *type, const char *help);
/* A label value, quoted and escaped: backslash, double quote and newline. */
void prom_label(struct strbuf *sb, const char *key, const char *value, int first);
/*
 * Write text to TEXTFILE_DIR/TEXTFILE_NAME (under --root) atomically, only
 * when TEXTFILE_DIR exists (the exporter's package made it): 1 written,
 * 0 no directory, -errno.
 */
int metrics_write(struct ctx *c, const char *text);

#endif
