/* SPDX-License-Identifier: MIT */
/*
 * The textfile node_exporter reads: Prometheus's text exposition format
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), no
 * timestamps, written with fsutil's atomic write (a temp name that does not
 * end in .prom, then rename), so the collector never reads half a file.
 * It is written only where the exporter looks: when its directory exists.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "metrics.h"

void prom_head(struct strbuf *sb, const char *name, const char *type, const char *help)
{
	sb_printf(sb, "# HELP %s ", name);
	for (const char *p = help; *p; p++) {
		if (*p == '\\')
			sb_append(sb, "\\\\");
		else if (*p == '\n')
			sb_append(sb, "\\n");
		else
			sb_appendn(sb, p, 1);
	}
	sb_printf(sb, "\n# TYPE %s %s\n", name, type);
}

void prom_label(struct strbuf *sb, const char *key, const char *value, int first)
{
	sb_printf(sb, "%s%s=\"", first ? "" : ",", key);
	for (const unsigned char *p = (const unsigned char *)(value ? value : ""); *p; p++) {
		if (*p == '\\')
			sb_append(sb, "\\\\");
		else if (*p == '"')
			sb_append(sb, "\\\"");
		else if (*p == '\n')
			sb_append(sb, "\\n");
		else if (*p < 0x20 || *p >= 0x7f)
			sb_printf(sb, "\\\\x%02x", *p);   /* label values must be UTF-8: keep ASCII */
		else
			sb_appendn(sb, p, 1);
	}
	sb_append(sb, "\"");
}

static bool counted(const struct finding *f, bool cluster)
{
	return cluster ? f->cluster : !f->cluster && (f->sev == ST_DEGRADED || f->sev == ST_FAILED);
}

void metrics_findings(struct strbuf *sb, const char *metric, const char *step, const struct report *r,
		      bool cluster)
{
	bool *done = xcalloc(r->n_findings + 1, sizeof(*done));

	for (size_t j = 0; j < r->n_findings; j++) {
		const struct finding *f = &r->findings[j];
		size_t n = 0;

		if (done[j] || !counted(f, cluster))
			continue;
		for (size_t l = j; l < r->n_findings; l++) {
			const struct finding *g = &r->findings[l];

			if (done[l] || !counted(g, cluster) || strcmp(g->tag, f->tag) != 0 || (!cluster && g->sev != f->sev))
				continue;
			done[l] = true;
			n += strcmp(g->tag, "report.more-findings") == 0 && r->findings_dropped ? r->findings_dropped : 1;
		}
		sb_printf(sb, "%s{", metric);
		prom_label(sb, "step", step, 1);
		if (!cluster)
			prom_label(sb, "severity", finding_severity_name(f->sev), 0);
		prom_label(sb, "tag", f->tag, 0);
		sb_printf(sb, "} %zu\n", n);
	}
	free(done);
}

int metrics_write(struct ctx *c, const char *text)
{
	char *dir = ctx_path(c, TEXTFILE_DIR);
	struct report scratch;
	struct stat st;
	int r;

	r = stat(dir, &st) == 0 && S_ISDIR(st.st_mode);
	free(dir);
	if (!r)
		return 0;
	report_init(&scratch);
	/*
	 * Not synced: no later boot reads it (packaging/tmpfiles/hpcinit.conf removes it at boot);
	 * the rename still gives the collector the old file or the new one, whole.  Every check
	 * writes it (every 2 minutes on every node).
	 */
	r = fs_write_opt(c, &scratch, TEXTFILE_DIR "/" TEXTFILE_NAME, text, strlen(text), 0644, 0, 0,
			 FS_NO_SYNC);
	report_free(&scratch);
	return r < 0 ? r : 1;
}
