/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escape.h"
#include "hpcinit.h"

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

void report_detail(struct report *r, const char *fmt, ...)
{
	struct strbuf text = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&text, fmt, ap);
	va_end(ap);
	esc_append(&r->details, sb_str(&text), text.len, true);
	sb_free(&text);
	if (r->details.len && r->details.buf[r->details.len - 1] != '\n')
		sb_append(&r->details, "\n");
}

void report_changed(struct report *r, const char *path)
{
	for (size_t i = 0; i < r->changed.n; i++)
		if (strcmp(r->changed.v[i], path) == 0)
			return;
	strlist_push(&r->changed, path);
}

void report_finding(struct report *r, enum rstatus sev, const char *tag, const char *fmt, ...)
{
	struct strbuf raw = STRBUF_INIT, text = STRBUF_INIT;
	struct finding *f;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&raw, fmt, ap);
	va_end(ap);
	esc_append(&text, sb_str(&raw), raw.len, true);
	sb_free(&raw);
	report_detail(r, "%s", sb_str(&text));
	r->findings = xrealloc(r->findings, (r->n_findings + 1) * sizeof(*r->findings));
	f = &r->findings[r->n_findings++];
	f->sev = sev;
	f->tag = xstrdup(tag);
	f->text = sb_steal(&text);
	report_raise(r, sev);
}

size_t report_problems(const struct report *r)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_findings; i++)
		n += rank(r->findings[i].sev) > 0;
	return n;
}

bool report_summarize(struct report *r)
{
	size_t more = report_problems(r);

	if (rank(r->status) == 0)
		return false;
	for (size_t i = 0; i < r->n_findings; i++) {
		if (r->findings[i].sev != r->status)
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
