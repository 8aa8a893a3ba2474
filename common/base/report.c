/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "hpcinit.h"
#include "report.h"

void report_init(struct report *r)
{
	memset(r, 0, sizeof(*r));
	r->status = ST_OK;
}

void report_free(struct report *r)
{
	sb_free(&r->details);
	strlist_free(&r->changed);
	for (size_t i = 0; i < r->n_findings; i++) {
		free(r->findings[i].tag);
		free(r->findings[i].text);
	}
	free(r->findings);
	r->findings = NULL;
	r->n_findings = 0;
}

static int rank(enum rstatus st)
{
	switch (st) {
	case ST_OK:
		return 0;
	case ST_SKIPPED:
		return 0;
	case ST_CHANGED:
		return 1;
	case ST_DEGRADED:
		return 2;
	case ST_FAILED:
		return 3;
	}
	return 3;
}

void report_raise(struct report *r, enum rstatus st)
{
	if (rank(st) > rank(r->status) || (r->status == ST_OK && st == ST_SKIPPED))
		r->status = st;
}

void report_set(struct report *r, enum rstatus st, const char *fmt, ...)
{
	struct strbuf text = STRBUF_INIT;
	va_list ap;

	report_raise(r, st);
	va_start(ap, fmt);
	sb_vprintf(&text, fmt, ap);
	va_end(ap);
	for (char *p = text.buf; p && *p; p++)
		if (*p == '\n')
			*p = ' ';
	esc_copy(r->summary, sizeof(r->summary), sb_str(&text), false);
	sb_free(&text);
}

/*
 * A step's details and findings are bounded: 30,000 junk records in a
 * rendezvous directory once gave a 6 MB status.json (three copies) and 1.9 MB
 * of output.  The first REPORT_MAX_LINES lines (REPORT_MAX_BYTES at most) are
 * kept, then one "... N more" line that counts the rest; the first
 * REPORT_MAX_FINDINGS findings are kept, then one finding tagged
 * "report.more-findings" that counts the rest and carries the worst severity
 * among them.  The step's status is raised by every finding all the same.
 */
#define REPORT_MAX_LINES 1000
#define REPORT_MAX_BYTES (128 * 1024)
#define REPORT_MAX_FINDINGS 1000

static void details_drop(struct report *r, size_t lines)
{
	if (!r->details_dropped)
		r->details_cut = r->details.len;
	r->details_dropped += lines;
	r->details.len = r->details_cut;
	if (r->details.buf)
		r->details.buf[r->details.len] = '\0';
	sb_printf(&r->details, "... %zu more detail lines not kept (a step keeps its first %d lines, %d KiB)\n",
		  r->details_dropped, REPORT_MAX_LINES, REPORT_MAX_BYTES / 1024);
}

/* fmt and its arguments, escaped (newlines kept) onto text. */
static void escaped_vprintf(struct strbuf *text, const char *fmt, va_list ap)
	__attribute__((format(printf, 2, 0)));
static void escaped_vprintf(struct strbuf *text, const char *fmt, va_list ap)
{
	struct strbuf raw = STRBUF_INIT;

	sb_vprintf(&raw, fmt, ap);
	esc_append(text, sb_str(&raw), raw.len, true);
	sb_free(&raw);
}

void report_detail(struct report *r, const char *fmt, ...)
{
	struct strbuf text = STRBUF_INIT;
	size_t dropped = 0;
	va_list ap;

	va_start(ap, fmt);
	escaped_vprintf(&text, fmt, ap);
	va_end(ap);
	if (!text.len || text.buf[text.len - 1] != '\n')
		sb_append(&text, "\n");
	for (const char *p = sb_str(&text); *p;) {
		const char *nl = strchr(p, '\n');
		size_t len = (size_t)(nl - p) + 1;

		if (r->details_dropped || dropped || r->details_lines >= REPORT_MAX_LINES ||
		    r->details.len + len > REPORT_MAX_BYTES)
			dropped++;
		else {
			sb_appendn(&r->details, p, len);
			r->details_lines++;
		}
		p += len;
	}
	sb_free(&text);
	if (dropped)
		details_drop(r, dropped);
}

void report_changed(struct report *r, const char *path)
{
	for (size_t i = 0; i < r->changed.n; i++)
		if (strcmp(r->changed.v[i], path) == 0)
			return;
	strlist_push(&r->changed, path);
}

/*
 * n more findings not kept: counted by the last entry, tagged
 * report.more-findings; a cluster finding as long as every one it counts is.
 */
static void findings_drop(struct report *r, size_t n, enum rstatus sev, bool cluster)
{
	struct finding *f;

	if (!r->findings_dropped) {
		r->findings = xrealloc(r->findings, (r->n_findings + 1) * sizeof(*r->findings));
		f = &r->findings[r->n_findings++];
		f->sev = ST_OK;
		f->cluster = true;
		f->tag = xstrdup("report.more-findings");
		f->text = NULL;
	}
	f = &r->findings[r->n_findings - 1];
	f->cluster = f->cluster && cluster;
	r->findings_dropped += n;
	if (rank(sev) > rank(f->sev))
		f->sev = sev;
	free(f->text);
	f->text = xasprintf("... %zu more findings not kept (a step keeps at most %d)",
			    r->findings_dropped, REPORT_MAX_FINDINGS);
}

static void finding_add(struct report *r, enum rstatus sev, bool cluster, const char *tag, const char *fmt,
			va_list ap) __attribute__((format(printf, 5, 0)));
static void finding_add(struct report *r, enum rstatus sev, bool cluster, const char *tag, const char *fmt,
			va_list ap)
{
	struct strbuf text = STRBUF_INIT;
	struct finding *f;

	escaped_vprintf(&text, fmt, ap);
	report_detail(r, "%s", sb_str(&text));
	if (!cluster)
		report_raise(r, sev);
	if (r->findings_dropped || r->n_findings >= REPORT_MAX_FINDINGS) {
		findings_drop(r, 1, sev, cluster);
		sb_free(&text);
		return;
	}
	r->findings = xrealloc(r->findings, (r->n_findings + 1) * sizeof(*r->findings));
	f = &r->findings[r->n_findings++];
	f->sev = sev;
	f->cluster = cluster;
	f->tag = xstrdup(tag);
	f->text = sb_steal(&text);
}

void report_finding(struct report *r, enum rstatus sev, const char *tag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	finding_add(r, sev, false, tag, fmt, ap);
	va_end(ap);
}

void report_cluster(struct report *r, const char *tag, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	finding_add(r, ST_DEGRADED, true, tag, fmt, ap);
	va_end(ap);
}

void report_take_findings(struct report *dst, const struct report *src)
{
	size_t kept = src->n_findings - (src->findings_dropped ? 1 : 0);

	for (size_t i = 0; i < kept; i++)
		if (src->findings[i].cluster)
			report_cluster(dst, src->findings[i].tag, "%s", src->findings[i].text);
		else
			report_finding(dst, src->findings[i].sev, src->findings[i].tag, "%s", src->findings[i].text);
	if (src->findings_dropped) {
		const struct finding *m = &src->findings[src->n_findings - 1];

		if (dst->details_dropped || dst->details_lines >= REPORT_MAX_LINES)
			details_drop(dst, src->findings_dropped);   /* each was a line */
		else
			report_detail(dst, "%s", m->text);
		if (!m->cluster)
			report_raise(dst, m->sev);
		findings_drop(dst, src->findings_dropped, m->sev, m->cluster);
	}
}

size_t report_problems(const struct report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_findings; i++)
		n += rank(r->findings[i].sev) > 0 && !r->findings[i].cluster;
	return n;
}

bool report_summarize(struct report *r)
{
	size_t more = report_problems(r);

	if (rank(r->status) == 0)
		return false;
	for (size_t i = 0; i < r->n_findings; i++) {
		if (r->findings[i].sev != r->status || r->findings[i].cluster)
			continue;
		if (more > 1)
			report_set(r, r->status, "%s (+%zu more)", r->findings[i].text, more - 1);
		else
			report_set(r, r->status, "%s", r->findings[i].text);
		return true;
	}
	return false;
}

const char *finding_severity_name(enum rstatus sev)
{
	switch (sev) {
	case ST_OK:
	case ST_SKIPPED:
		return "info";
	case ST_CHANGED:
		return "change";
	case ST_DEGRADED:
		return "degraded";
	case ST_FAILED:
		return "failed";
	}
	return "?";
}

const char *finding_kind_name(const struct finding *f)
{
	return f->cluster ? "cluster" : finding_severity_name(f->sev);
}

bool finding_kind_from_name(const char *s, enum rstatus *ret_sev, bool *ret_cluster)
{
	static const enum rstatus all[] = { ST_OK, ST_CHANGED, ST_DEGRADED, ST_FAILED };

	if (s && strcmp(s, "cluster") == 0) {
		*ret_sev = ST_DEGRADED;
		*ret_cluster = true;
		return true;
	}
	for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(s, finding_severity_name(all[i])) == 0) {
			*ret_sev = all[i];
			*ret_cluster = false;
			return true;
		}
	return false;
}

const char *rstatus_name(enum rstatus st, enum run_mode mode)
{
	switch (st) {
	case ST_OK:
		return "ok";
	case ST_CHANGED:
		return mode == RUN_APPLY ? "changed" : mode == RUN_CHECK ? "drift" : "would change";
	case ST_SKIPPED:
		return "skipped";
	case ST_DEGRADED:
		return "degraded";
	case ST_FAILED:
		return "failed";
	}
	return "?";
}
