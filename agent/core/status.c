/* SPDX-License-Identifier: MIT */
/*
 * The run report and the node's status: the run as JSON (--json,
 * <part>.json), status.json composed from the last apply, refresh, verify
 * and check, the node_exporter textfile, the human table.  hpcinit status
 * reads them back in agent/cmd/status_read.c with the readers here
 * (status.h).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "boot.h"
#include "escape.h"
#include "fsutil.h"
#include "json.h"
#include "log.h"
#include "metrics.h"
#include "record.h"
#include "number.h"
#include "runner.h"
#include "status.h"
#include "status_format.h"
#include "ydoc.h"

/* ---- status: the last full apply, refresh, verify and check, kept apart ----- */

/*
 * Each kind of run keeps its own report (/run/hpcinit/<part>.json); status.json
 * is composed from them: every step as its latest run left it, and the worst
 * of those as the result.  A refresh therefore never hides a failed boot: the
 * steps it does not run keep the apply's verdict, and a step the apply skipped
 * because its need failed still counts as not done.  A check (the timer's,
 * Slurm's) is a run like the others, so a failure found after boot turns the
 * node failed and a check that finds it fine again turns it back; but drift
 * (ST_CHANGED in a check: what apply would quietly restore) is not broken: it
 * never clears a converging run's failure and never makes one (verdict_part).
 */
const char *const status_part_names[N_PARTS] = { "apply", "refresh", "verify", "check" };

struct part {
	bool present, owned;
	const char *command;
	char *command_buf;              /* owned copy behind command */
	long long started, duration_ms;
	long long started_ms;           /* which part ran a step last (older files: started * 1000) */
	long long boot_ms;              /* started_boot_ms, the boot clock's: this boot's order (0: none) */
	long long peers;                /* peers known after the run; -1: discovery did not run */
	int exit_code;
	struct report *reports;         /* by module_table index */
	bool *ran;
	size_t n;
};

static char *part_path(enum part_id p)
{
	return xasprintf("%s/%s.json", STATUS_DIR, status_part_names[p]);
}

static void part_free(struct part *p)
{
	if (p->owned) {
		for (size_t i = 0; i < p->n; i++)
			report_free(&p->reports[i]);
		free(p->reports);
		free(p->ran);
		free(p->command_buf);
	}
	memset(p, 0, sizeof(*p));
}

static bool parse_ll(const char *s, long long *ret)
{
	return num_ll(s, LLONG_MIN, LLONG_MAX, ret);
}

/* A step's status by its name in an apply's document, or a check's ("drift"). */
static bool status_from_name(const char *s, enum rstatus *ret)
{
	static const enum rstatus all[] = { ST_OK, ST_CHANGED, ST_SKIPPED, ST_DEGRADED, ST_FAILED };

	for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(s, rstatus_name(all[i], RUN_APPLY)) == 0 || strcmp(s, rstatus_name(all[i], RUN_CHECK)) == 0) {
			*ret = all[i];
			return true;
		}
	return false;
}

static size_t module_index(const char *name)
{
	size_t i;

	for (i = 0; name && module_table[i]; i++)
		if (strcmp(module_table[i]->name, name) == 0)
			return i;
	return SIZE_MAX;
}

/* Read one module entry of a run document back into a report. */
static void load_module(yaml_document_t *doc, yaml_node_t *m, struct report *r)
{
	yaml_node_t *seq;
	long long v;

	report_init(r);
	if (!status_from_name(ydoc_get(doc, m, "status"), &r->status))
		r->status = ST_FAILED;          /* unreadable is not ok */
	if (parse_ll(ydoc_get(doc, m, "duration_ms"), &v) && v >= 0)
		r->duration_ms = (uint64_t)v;
	snprintf(r->summary, sizeof(r->summary), "%s", ydoc_get(doc, m, "summary") ?: "");
	seq = ydoc_node(doc, m, "details");
	for (yaml_node_item_t *it = seq && seq->type == YAML_SEQUENCE_NODE ? seq->data.sequence.items.start : NULL;
	     it && it < seq->data.sequence.items.top; it++) {
		yaml_node_t *l = yaml_document_get_node(doc, *it);

		if (l && l->type == YAML_SCALAR_NODE) {
			sb_printf(&r->details, "%s\n", (const char *)l->data.scalar.value);
			r->details_lines++;     /* the bound (report.c) goes on counting */
		}
	}
	seq = ydoc_node(doc, m, "findings");
	for (yaml_node_item_t *it = seq && seq->type == YAML_SEQUENCE_NODE ? seq->data.sequence.items.start : NULL;
	     it && it < seq->data.sequence.items.top; it++) {
		yaml_node_t *f = yaml_document_get_node(doc, *it);
		enum rstatus sev;
		bool cluster;

		if (!finding_kind_from_name(ydoc_get(doc, f, "severity"), &sev, &cluster))
			continue;
		r->findings = xrealloc(r->findings, (r->n_findings + 1) * sizeof(*r->findings));
		r->findings[r->n_findings].sev = sev;
		r->findings[r->n_findings].cluster = cluster;
		r->findings[r->n_findings].tag = xstrdup(ydoc_get(doc, f, "tag") ?: "");
		r->findings[r->n_findings].text = xstrdup(ydoc_get(doc, f, "text") ?: "");
		if (strcmp(r->findings[r->n_findings].tag, "report.more-findings") == 0) {
			/* "... N more findings not kept": the bound (report.c) goes on counting */
			const char *t = r->findings[r->n_findings].text;
			unsigned long long n;

			if (num_ull_prefix(t + strspn(t, ". "), 10, ULONG_MAX, &n, NULL))
				r->findings_dropped = (unsigned long)n;
		}
		r->n_findings++;
	}
	seq = ydoc_node(doc, m, "changed");
	for (yaml_node_item_t *it = seq && seq->type == YAML_SEQUENCE_NODE ? seq->data.sequence.items.start : NULL;
	     it && it < seq->data.sequence.items.top; it++) {
		yaml_node_t *l = yaml_document_get_node(doc, *it);

		if (l && l->type == YAML_SCALAR_NODE)
			strlist_push(&r->changed, (const char *)l->data.scalar.value);
	}
}

/* Load a part's run document; absent, unreadable or of a newer format leaves p not present. */
static void part_load(const struct ctx *c, enum part_id id, struct part *p)
{
	char *path = part_path(id), *text = NULL, why[160];
	size_t len = 0, n = 0;
	yaml_document_t doc;
	yaml_node_t *root, *mods;
	long long v;

	memset(p, 0, sizeof(*p));
	if (fs_read(c, path, &text, &len) < 0) {
		free(path);
		return;
	}
	free(path);
	if (!ydoc_load(&doc, text, len)) {
		free(text);
		return;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		goto out;
	if (status_format_refused(&doc, root, why, sizeof(why))) {  /* a newer hpcinit's: its next run rewrites it */
		log_warn("%s%s/%s.json: %s; not read", c->root, STATUS_DIR, status_part_names[id], why);
		goto out;
	}
	while (module_table[n])
		n++;
	p->present = p->owned = true;
	p->n = n;
	p->reports = xcalloc(n, sizeof(*p->reports));
	p->ran = xcalloc(n, sizeof(*p->ran));
	for (size_t i = 0; i < n; i++)
		report_init(&p->reports[i]);
	p->command = p->command_buf = xstrdup(ydoc_get(&doc, root, "command") ?: status_part_names[id]);
	p->started = parse_ll(ydoc_get(&doc, root, "started"), &v) ? v : 0;
	p->started_ms = parse_ll(ydoc_get(&doc, root, "started_ms"), &v) ? v : p->started * 1000;
	p->boot_ms = parse_ll(ydoc_get(&doc, root, "started_boot_ms"), &v) && v > 0 ? v : 0;
	p->duration_ms = parse_ll(ydoc_get(&doc, root, "duration_ms"), &v) ? v : 0;
	p->peers = parse_ll(ydoc_get(&doc, root, "peers"), &v) && v >= 0 ? v : -1;
	p->exit_code = parse_ll(ydoc_get(&doc, root, "exit_code"), &v) && v >= 0 && v < 256 ? (int)v : 1;
	mods = ydoc_node(&doc, root, "modules");
	for (yaml_node_item_t *it = mods && mods->type == YAML_SEQUENCE_NODE ? mods->data.sequence.items.start : NULL;
	     it && it < mods->data.sequence.items.top; it++) {
		yaml_node_t *m = yaml_document_get_node(&doc, *it);
		size_t i = module_index(ydoc_get(&doc, m, "name"));

		if (i == SIZE_MAX || p->ran[i])
			continue;
		report_free(&p->reports[i]);
		load_module(&doc, m, &p->reports[i]);
		p->ran[i] = true;
	}
out:
	yaml_document_delete(&doc);
	free(text);
}

/* The part of this run, borrowing res's reports. */
static void part_from_result(struct part *p, const struct run_opts *o, const struct run_result *res)
{
	memset(p, 0, sizeof(*p));
	p->present = true;
	p->command = o->command;
	p->started = (long long)res->started_unix;
	p->started_ms = (long long)res->started_ms;
	p->boot_ms = (long long)res->started_boot_ms;
	p->duration_ms = (long long)res->duration_ms;
	p->exit_code = res->exit_code;
	p->peers = res->out.peers ? (long long)res->out.peers->n : -1;
	p->reports = res->reports;
	p->ran = res->ran;
	p->n = res->n;
}

/* A step skipped because a step it needs failed: not done. */
static bool blocked(const struct report *r)
{
	if (r->status != ST_SKIPPED)
		return false;
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, NEEDS_FAILED_TAG) == 0)
			return true;
	return false;
}

/*
 * Part a started no earlier than b: by the boot clock, which a wall clock stepped back does
 * not move (/run/hpcinit holds this boot's parts); an older release's part by the wall clock.
 */
static bool ran_after(const struct part *a, const struct part *b)
{
	return a->boot_ms && b->boot_ms ? a->boot_ms >= b->boot_ms : a->started_ms >= b->started_ms;
}

/* For every module, the part whose run of it is the latest (-1: none); checks too or not. */
static int latest_of(const struct part *parts, size_t i, bool checks)
{
	int best = -1;

	for (int k = 0; k < N_PARTS; k++)
		if (parts[k].present && i < parts[k].n && parts[k].ran[i] && (checks || k != PART_CHECK) &&
		    (best < 0 || ran_after(&parts[k], &parts[best])))
			best = k;
	return best;
}

static bool bad(const struct report *r)
{
	return r->status == ST_FAILED || r->status == ST_DEGRADED || blocked(r);
}

/* Step i's latest run is a check that found drift (what apply would restore). */
static bool drifted(const struct part *parts, size_t i)
{
	int k = latest_of(parts, i, true);

	return k == PART_CHECK && parts[k].reports[i].status == ST_CHANGED;
}

/*
 * The part whose report of step i is the node's (-1: none): the latest run
 * of it, but drift found by a check leaves a failed, degraded or blocked
 * apply, refresh or verify standing (the step is not converged; only a check
 * that finds it in sync, or a run that converges it, clears that).
 */
static int verdict_part(const struct part *parts, size_t i)
{
	int k = latest_of(parts, i, true), a;

	if (!drifted(parts, i))
		return k;
	a = latest_of(parts, i, false);
	return a >= 0 && bad(&parts[a].reports[i]) ? a : k;
}

/*
 * The worst current state: 1 when a step's verdict failed or was blocked,
 * or when no full apply is on record (since boot); 3 when one is degraded.
 * Drift is neither.
 */
static int current_exit(const struct part *parts)
{
	bool failed = !parts[PART_APPLY].present, degraded = false;

	for (size_t i = 0; module_table[i]; i++) {
		int k = verdict_part(parts, i);

		if (k < 0)
			continue;
		failed |= parts[k].reports[i].status == ST_FAILED || blocked(&parts[k].reports[i]);
		degraded |= parts[k].reports[i].status == ST_DEGRADED;
	}
	return failed ? 1 : degraded ? 3 : 0;
}

/* The node's state from the parts: current_exit's verdict and the worst finding's tag. */
static void node_state_of(const struct part *parts, struct node_state *ret)
{
	int code = current_exit(parts);

	memset(ret, 0, sizeof(*ret));
	ret->ready_ms = -1;
	ret->known = parts[PART_APPLY].present;
	ret->status = code == 1 ? ST_FAILED : code == 3 ? ST_DEGRADED : ST_OK;
	for (size_t i = 0; ret->status != ST_OK && !ret->reason[0] && module_table[i]; i++) {
		int k = verdict_part(parts, i);
		const struct report *r = k >= 0 ? &parts[k].reports[i] : NULL;

		for (size_t j = 0; r && r->status == ret->status && j < r->n_findings; j++)
			if (r->findings[j].sev == ret->status && !r->findings[j].cluster) {
				snprintf(ret->reason, sizeof(ret->reason), "%s", r->findings[j].tag);
				break;
			}
		if (r && r->status == ret->status && !ret->reason[0])
			snprintf(ret->reason, sizeof(ret->reason), "%s.%s", module_table[i]->name,
				 ret->status == ST_FAILED ? "failed" : "degraded");
	}
}

const char *status_result_word(int code)
{
	return code == 0 ? "ready" : code == 3 ? "degraded" : "failed";
}

/* A part's result: a check's from its steps (drift is not failed), another's from its exit code. */
static const char *part_word(const struct part *p, int k)
{
	bool failed = false, degraded = false, drift = false;

	if (k != PART_CHECK)
		return status_result_word(p->exit_code == 3 ? 3 : p->exit_code ? 1 : 0);
	for (size_t i = 0; i < p->n; i++) {
		if (!p->ran[i])
			continue;
		failed |= p->reports[i].status == ST_FAILED || blocked(&p->reports[i]);
		degraded |= p->reports[i].status == ST_DEGRADED;
		drift |= p->reports[i].status == ST_CHANGED;
	}
	return failed ? "failed" : degraded ? "degraded" : drift ? "drift" : "in-sync";
}

/* "result", "exit_code", "applied", "drift" and "parts": when each part last ran and how. */
static void json_parts(struct strbuf *sb, const struct part *parts)
{
	int code = current_exit(parts);
	bool first = true;

	json_kv_str(sb, "result", status_result_word(code), 0);
	json_kv_int(sb, "exit_code", code, 0);
	sb_printf(sb, ", \"applied\": %s", parts[PART_APPLY].present ? "true" : "false");
	sb_append(sb, ", \"drift\": [");
	for (size_t i = 0; module_table[i]; i++)
		if (drifted(parts, i)) {
			sb_append(sb, first ? "" : ", ");
			json_str(sb, module_table[i]->name);
			first = false;
		}
	sb_append(sb, "]");
	sb_append(sb, ",\n \"parts\": {");
	for (int k = 0; k < N_PARTS; k++) {
		const struct part *p = &parts[k];

		sb_printf(sb, "%s\"%s\": ", k ? ", " : "", status_part_names[k]);
		if (!p->present) {
			sb_append(sb, "null");
			continue;
		}
		sb_append(sb, "{");
		json_kv_str(sb, "command", p->command, 1);
		json_kv_int(sb, "started", p->started, 0);
		json_kv_int(sb, "duration_ms", p->duration_ms, 0);
		json_kv_str(sb, "result", part_word(p, k), 0);
		json_kv_int(sb, "exit_code", p->exit_code, 0);
		sb_append(sb, "}");
	}
	sb_append(sb, "}");
}

static void json_module(struct strbuf *sb, const char *name, const struct report *r, enum run_mode mode,
			bool first_mod, const char *part, long long ran_at);

/* The run's identity, the first keys of every run report and of status.json (opens the object). */
static void json_identity(struct strbuf *sb, const struct ctx *c, const struct run_opts *o,
			  const struct run_result *res)
{
	sb_append(sb, "{");
	json_kv_str(sb, "hpcinit", PACKAGE_VERSION, 1);
	json_kv_int(sb, "format", STATUS_FORMAT, 0);
	json_kv_str(sb, "command", o->command, 0);
	json_kv_str(sb, "spec", c->spec ? c->spec->file : NULL, 0);
	json_kv_str(sb, "cluster", c->spec ? c->spec->cluster.name : NULL, 0);
	json_kv_int(sb, "started", (long long)res->started_unix, 0);
	json_kv_int(sb, "started_ms", (long long)res->started_ms, 0);
	json_kv_int(sb, "started_boot_ms", (long long)res->started_boot_ms, 0);
	json_kv_int(sb, "duration_ms", (long long)res->duration_ms, 0);
}

/* Peers known: from the latest part that ran discovery (-1: none did). */
static long long latest_peers(const struct part *parts)
{
	int best = -1;

	for (int k = 0; k < N_PARTS; k++)
		if (parts[k].present && parts[k].peers >= 0 && (best < 0 || ran_after(&parts[k], &parts[best])))
			best = k;
	return best < 0 ? -1 : parts[best].peers;
}

/* status.json: this run's identity, the worst current state, the parts, every step's latest report. */
static char *status_compose(const struct ctx *c, const struct run_opts *o, const struct run_result *res,
			    const struct part *parts, const struct boot *b)
{
	struct strbuf sb = STRBUF_INIT;
	bool first = true;
	long long peers = latest_peers(parts);

	json_identity(&sb, c, o, res);
	json_parts(&sb, parts);
	if (peers >= 0)
		json_kv_int(&sb, "peers", peers, 0);
	sb_append(&sb, ",\n \"boot\": ");
	boot_json(&sb, b);
	sb_append(&sb, ",\n \"modules\": [");
	for (size_t i = 0; module_table[i]; i++) {
		int k = verdict_part(parts, i);

		if (k < 0)
			continue;
		/* a check's drift reads "drift" */
		json_module(&sb, module_table[i]->name, &parts[k].reports[i], k == PART_CHECK ? RUN_CHECK : RUN_APPLY,
			    first, status_part_names[k], parts[k].started);
		first = false;
	}
	sb_append(&sb, "\n ]\n}\n");
	return sb_steal(&sb);
}

static char *run_json(const struct ctx *c, const struct run_opts *o, const struct run_result *res,
		      const struct part *parts);

/* The parts on record before a run that records itself, read once (status_prior_load). */
struct status_prior {
	struct part parts[N_PARTS];
};

static void load_parts(const struct ctx *c, struct part *parts)
{
	for (int k = 0; k < N_PARTS; k++)
		part_load(c, (enum part_id)k, &parts[k]);
}

static void free_parts(struct part *parts)
{
	for (int k = 0; k < N_PARTS; k++)
		part_free(&parts[k]);
}

/* Replaced whole, not compared (each holds the run's time); under /run not synced (fsutil.h). */
static int write_file(struct ctx *c, struct report *scratch, const char *path, const char *text)
{
	char *dir = xstrdup(path);
	unsigned flags = FS_REPLACE;
	int r;

	*strrchr(dir, '/') = '\0';
	flags |= strcmp(dir, STATUS_DIR) == 0 ? FS_NO_SYNC : FS_SYNC_FILE;
	r = fs_mkdir_p(c, scratch, dir, 0755, 0, 0);
	free(dir);
	if (r >= 0)
		r = fs_write_opt(c, scratch, path, text, strlen(text), 0644, 0, 0, flags);
	return r;
}

static void unlink_rooted(const struct ctx *c, const char *path)
{
	char *p = ctx_path(c, path);

	if (unlink(p) < 0 && errno != ENOENT)
		log_errno(LOG_LVL_WARN, -errno, "cannot remove %s", p);
	free(p);
}

/*
 * A run that cannot record itself must not leave an older "ready" behind:
 * the status files go, and a small note says why, for hpcinit status.
 */
static void status_broken(struct ctx *c, struct report *scratch, const struct run_opts *o,
			  const struct run_result *res, const char *path, int err, enum part_id id)
{
	struct strbuf sb = STRBUF_INIT, why = STRBUF_INIT;
	char *pp = part_path(id);

	log_errno(LOG_LVL_ERR, err, "cannot write %s; removing the old status so nobody reads it as current", path);
	unlink_rooted(c, STATUS_PATH);
	unlink_rooted(c, LAST_RUN_PATH);
	unlink_rooted(c, pp);
	free(pp);
	sb_printf(&why, "hpcinit %s could not write %s: %s", o->command, path, strerror(-err));
	sb_append(&sb, "{");
	json_kv_str(&sb, "hpcinit", PACKAGE_VERSION, 1);
	json_kv_int(&sb, "format", STATUS_FORMAT, 0);
	json_kv_str(&sb, "result", "unknown", 0);
	json_kv_int(&sb, "exit_code", STATUS_EXIT_UNKNOWN, 0);
	sb_append(&sb, ", \"stale\": true");
	json_kv_str(&sb, "reason", sb_str(&why), 0);
	json_kv_str(&sb, "command", o->command, 0);
	json_kv_int(&sb, "started", (long long)res->started_unix, 0);
	json_kv_int(&sb, "run_exit_code", res->exit_code, 0);
	sb_append(&sb, "}\n");
	if (write_file(c, scratch, STATUS_ERROR_PATH, sb_str(&sb)) < 0)
		log_err("cannot write %s either: hpcinit status will find no status", STATUS_ERROR_PATH);
	sb_free(&why);
	sb_free(&sb);
}

/* ---- the node_exporter textfile (metrics.c writes it) ------------------------ */

static const char *const step_results[] = { "ok", "changed", "drift", "skipped", "degraded", "failed" };

/*
 * The same truth as status.json, as metrics: the node's state, every step's
 * verdict, time, drift and the findings that make it degraded or failed (one
 * series a tag, counted), the cluster findings, each part's last run, the
 * peers known, this boot's phases.  No series twice (node_exporter refuses
 * a repeated one at every scrape).
 */
static char *metrics_compose(const struct part *parts, const struct boot *b)
{
	struct strbuf sb = STRBUF_INIT;
	int code = current_exit(parts);
	long long peers = latest_peers(parts);
	static const char *const states[] = { "ready", "degraded", "failed" };

	prom_head(&sb, "hpcinit_ready", "gauge",
		  "1 when the node is ready: a full apply this boot and no step failed or degraded since.");
	sb_printf(&sb, "hpcinit_ready %d\n", code == 0);
	prom_head(&sb, "hpcinit_state", "gauge", "The node's state (status.json result): 1 for the current one.");
	for (size_t i = 0; i < 3; i++) {
		sb_append(&sb, "hpcinit_state{");
		prom_label(&sb, "state", states[i], 1);
		sb_printf(&sb, "} %d\n", strcmp(status_result_word(code), states[i]) == 0);
	}
	prom_head(&sb, "hpcinit_step_result", "gauge",
		  "Each step's result in the node's state (a check's drift: drift): 1 for the current one.");
	for (size_t i = 0; module_table[i]; i++) {
		int k = verdict_part(parts, i);
		const char *now = k >= 0 ? rstatus_name(parts[k].reports[i].status,
							k == PART_CHECK ? RUN_CHECK : RUN_APPLY) : NULL;

		for (size_t j = 0; k >= 0 && j < sizeof(step_results) / sizeof(step_results[0]); j++) {
			sb_append(&sb, "hpcinit_step_result{");
			prom_label(&sb, "step", module_table[i]->name, 1);
			prom_label(&sb, "result", step_results[j], 0);
			sb_printf(&sb, "} %d\n", strcmp(now, step_results[j]) == 0);
		}
	}
	prom_head(&sb, "hpcinit_step_duration_seconds", "gauge", "How long each step's latest run took.");
	for (size_t i = 0; module_table[i]; i++) {
		int k = latest_of(parts, i, true);

		if (k < 0)
			continue;
		sb_append(&sb, "hpcinit_step_duration_seconds{");
		prom_label(&sb, "step", module_table[i]->name, 1);
		sb_printf(&sb, "} %.3f\n", (double)parts[k].reports[i].duration_ms / 1000.0);
	}
	prom_head(&sb, "hpcinit_drift", "gauge",
		  "1 when the latest check found the step drifted (what apply would restore; not a failure).");
	for (size_t i = 0; module_table[i]; i++)
		if (latest_of(parts, i, true) >= 0) {
			sb_append(&sb, "hpcinit_drift{");
			prom_label(&sb, "step", module_table[i]->name, 1);
			sb_printf(&sb, "} %d\n", drifted(parts, i));
		}
	prom_head(&sb, "hpcinit_finding", "gauge",
		  "How many findings of each tag make a step degraded or failed (the reason).");
	for (size_t i = 0; module_table[i]; i++) {
		int k = verdict_part(parts, i);

		if (k >= 0)
			metrics_findings(&sb, "hpcinit_finding", module_table[i]->name, &parts[k].reports[i], false);
	}
	prom_head(&sb, "hpcinit_cluster_findings", "gauge",
		  "How many findings of each tag a step made about other nodes (never this node's state).");
	for (size_t i = 0; module_table[i]; i++) {
		int k = latest_of(parts, i, true);

		if (k >= 0)
			metrics_findings(&sb, "hpcinit_cluster_findings", module_table[i]->name, &parts[k].reports[i],
					 true);
	}
	prom_head(&sb, "hpcinit_last_run_timestamp_seconds", "gauge",
		  "When each part (apply, refresh, verify, check) last ran, unix time.");
	for (int k = 0; k < N_PARTS; k++)
		if (parts[k].present) {
			sb_append(&sb, "hpcinit_last_run_timestamp_seconds{");
			prom_label(&sb, "part", status_part_names[k], 1);
			sb_printf(&sb, "} %lld\n", parts[k].started);
		}
	prom_head(&sb, "hpcinit_last_run_duration_seconds", "gauge", "How long each part's last run took.");
	for (int k = 0; k < N_PARTS; k++)
		if (parts[k].present) {
			sb_append(&sb, "hpcinit_last_run_duration_seconds{");
			prom_label(&sb, "part", status_part_names[k], 1);
			sb_printf(&sb, "} %.3f\n", (double)parts[k].duration_ms / 1000.0);
		}
	prom_head(&sb, "hpcinit_last_run_exit_code", "gauge",
		  "Each part's last exit code: 0 ready, 1 failed (a check's: drift or failed), 3 degraded.");
	for (int k = 0; k < N_PARTS; k++)
		if (parts[k].present) {
			sb_append(&sb, "hpcinit_last_run_exit_code{");
			prom_label(&sb, "part", status_part_names[k], 1);
			sb_printf(&sb, "} %d\n", parts[k].exit_code);
		}
	if (peers >= 0) {
		prom_head(&sb, "hpcinit_peers", "gauge", "Peers known (nodes in the cluster, this one included).");
		sb_printf(&sb, "hpcinit_peers %lld\n", peers);
	}
	if (b->boot_ms) {
		prom_head(&sb, "hpcinit_boot_time_seconds", "gauge", "When the kernel started, unix time.");
		sb_printf(&sb, "hpcinit_boot_time_seconds %.3f\n", (double)b->boot_ms / 1000.0);
		prom_head(&sb, "hpcinit_boot_phase_seconds", "gauge",
			  "This boot's phases: seconds from the kernel's start to the end of each.");
		for (size_t i = 0; i < b->n; i++) {
			sb_append(&sb, "hpcinit_boot_phase_seconds{");
			prom_label(&sb, "phase", b->ph[i].name, 1);
			sb_printf(&sb, "} %.3f\n", (double)(b->ph[i].at_ms - b->boot_ms) / 1000.0);
		}
	}
	return sb_steal(&sb);
}

void status_write(struct ctx *c, const struct run_opts *o, const struct run_result *res,
		  struct status_prior *prior)
{
	struct report scratch;
	struct status_prior own;
	struct part *parts = prior ? prior->parts : own.parts;
	enum part_id id = status_part_of(c, o);
	char *json, *pp = part_path(id), *status = NULL, *textfile = NULL;
	const char *paths[] = { STATUS_PATH, LAST_RUN_PATH };
	struct boot boot;
	/* the status files are hpcinit's own: a check writes them too (and nothing else) */
	struct ctx wc = *c, *w = &wc;
	int r;

	wc.mode = RUN_APPLY;
	if (!prior)
		load_parts(c, parts);
	json = run_json(c, o, res, parts);      /* a check's "status" block: the parts before it */
	report_init(&scratch);
	r = write_file(w, &scratch, pp, json);
	if (r < 0) {
		status_broken(w, &scratch, o, res, pp, r, id);
		goto out;
	}
	part_free(&parts[id]);
	part_from_result(&parts[id], o, res);
	boot_update(c, res, id == PART_APPLY, &boot);
	status = status_compose(c, o, res, parts, &boot);
	node_state_of(parts, &c->node);
	for (size_t i = 0; i < boot.n; i++)
		if (strcmp(boot.ph[i].name, "ready") == 0 && boot.boot_ms > 0 && boot.ph[i].at_ms > 0)
			c->node.ready_ms = boot.ph[i].at_ms - boot.boot_ms;
	textfile = metrics_compose(parts, &boot);
	r = metrics_write(w, textfile);
	if (r < 0)
		log_errno(LOG_LVL_WARN, r, "cannot write %s/%s for node_exporter, ignoring", TEXTFILE_DIR, TEXTFILE_NAME);
	for (int i = 0; i < 2; i++) {
		r = write_file(w, &scratch, paths[i], status);
		if (r < 0) {
			status_broken(w, &scratch, o, res, paths[i], r, id);
			goto out;
		}
	}
	unlink_rooted(c, STATUS_ERROR_PATH);
out:
	free_parts(parts);
	if (prior)
		free(prior);
	report_free(&scratch);
	free(textfile);
	free(status);
	free(pp);
	free(json);
}

struct status_prior *status_prior_load(const struct ctx *c, struct node_state *ret_node)
{
	struct status_prior *p = xcalloc(1, sizeof(*p));

	load_parts(c, p->parts);
	node_state_of(p->parts, ret_node);
	ret_node->ready_ms = boot_ready_ms(c);  /* as status_write says it: a record put before and after agrees */
	return p;
}

static const char *result_word(const struct ctx *c, int code)
{
	switch (code) {
	case 0:
		return c->mode == RUN_APPLY ? "ready" : c->mode == RUN_CHECK ? "in-sync" : "planned";
	case 3:
		return "degraded";
	default:
		return c->mode == RUN_CHECK ? "drift-or-failed" : "failed";
	}
}

static void json_module(struct strbuf *sb, const char *name, const struct report *r, enum run_mode mode,
			bool first_mod, const char *part, long long ran_at)
{
	const char *p = sb_str(&r->details);
	bool first = true;

	sb_append(sb, first_mod ? "\n  {" : ",\n  {");
	json_kv_str(sb, "name", name, 1);
	json_kv_str(sb, "status", rstatus_name(r->status, mode), 0);
	json_kv_int(sb, "duration_ms", (long long)r->duration_ms, 0);
	json_kv_str(sb, "summary", r->summary, 0);
	if (part) {
		json_kv_str(sb, "part", part, 0);
		json_kv_int(sb, "ran", ran_at, 0);
	}
	sb_append(sb, ", \"details\": [");
	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t len = nl ? (size_t)(nl - p) : strlen(p);
		char *line = xstrndup(p, len);

		if (!first)
			sb_append(sb, ", ");
		json_str(sb, line);
		free(line);
		first = false;
		p += len + (nl ? 1 : 0);
	}
	sb_append(sb, "], \"findings\": [");
	for (size_t j = 0; j < r->n_findings; j++) {
		const struct finding *f = &r->findings[j];

		sb_append(sb, j ? ", {" : "{");
		json_kv_str(sb, "severity", finding_kind_name(f), 1);
		json_kv_str(sb, "tag", f->tag, 0);
		json_kv_str(sb, "text", f->text, 0);
		sb_append(sb, "}");
	}
	sb_append(sb, "], \"changed\": [");
	for (size_t j = 0; j < r->changed.n; j++) {
		if (j)
			sb_append(sb, ", ");
		json_str(sb, r->changed.v[j]);
	}
	sb_append(sb, "]}");
}

/* The run as JSON; a check's "status" block from parts (the parts on record), else read here. */
static char *run_json(const struct ctx *c, const struct run_opts *o, const struct run_result *res,
		      const struct part *parts)
{
	struct strbuf sb = STRBUF_INIT;
	bool first_mod = true;

	json_identity(&sb, c, o, res);
	json_kv_str(&sb, "result", result_word(c, res->exit_code), 0);
	json_kv_int(&sb, "exit_code", res->exit_code, 0);
	if (res->out.peers)
		json_kv_int(&sb, "peers", (long long)res->out.peers->n, 0);
	if (c->mode == RUN_CHECK) {
		/* check --json also says whether it recorded itself (the part
		 * "check") and how the node was left: the worst current state of
		 * status.json and when each part last ran. */
		struct part own[N_PARTS];

		if (!parts)
			load_parts(c, own);
		sb_printf(&sb, ", \"recorded\": %s", res->recorded ? "true" : "false");
		sb_append(&sb, ",\n \"status\": {");
		json_kv_str(&sb, "file", STATUS_PATH, 1);
		json_parts(&sb, parts ? parts : own);
		sb_append(&sb, "}");
		if (!parts)
			free_parts(own);
	}
	sb_append(&sb, ",\n \"modules\": [");
	for (size_t i = 0; i < res->n; i++) {
		if (!res->ran[i])
			continue;
		json_module(&sb, module_table[i]->name, &res->reports[i], c->mode, first_mod, NULL, 0);
		first_mod = false;
	}
	sb_append(&sb, "\n ]\n}\n");
	return sb_steal(&sb);
}

void status_print_row(FILE *out, const char *name, const char *status, const char *dur,
		      const char *summary)
{
	struct strbuf sb = STRBUF_INIT;

	/* status prints what a file says: escaped, whoever wrote the file. */
	esc_append(&sb, summary, strlen(summary), false);
	fprintf(out, "%-10s %-13s %8s  %s\n", name, status, dur, sb_str(&sb));
	sb_free(&sb);
}

void runner_print_table(const struct ctx *c, const struct run_result *res, FILE *out)
{
	status_print_row(out, "MODULE", "RESULT", "TIME", "SUMMARY");
	for (size_t i = 0; i < res->n; i++) {
		const struct report *r = &res->reports[i];
		char dur[32];

		if (!res->ran[i])
			continue;
		snprintf(dur, sizeof(dur), "%llums", (unsigned long long)r->duration_ms);
		status_print_row(out, module_table[i]->name, rstatus_name(r->status, c->mode), dur, r->summary);
	}
	for (size_t i = 0; i < res->n; i++) {
		const struct report *r = &res->reports[i];
		/* "hpcinit verify" exists for its details: the per-pair measurements. */
		bool show = r->details.len && res->ran[i] &&
			    (c->verbose || c->verify || c->mode != RUN_APPLY ||
			     r->status == ST_FAILED || r->status == ST_DEGRADED);

		if (!show)
			continue;
		fprintf(out, "\n[%s]\n", module_table[i]->name);
		const char *p = sb_str(&r->details);

		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);

			fprintf(out, "  %.*s\n", (int)len, p);
			p += len + (nl ? 1 : 0);
		}
	}
	fprintf(out, "\nresult: %s (exit %d, %llu ms)\n", result_word(c, res->exit_code),
		res->exit_code, (unsigned long long)res->duration_ms);
}

/* One step's report as its status-document entry, and back (runner.c's isolated steps). */
char *runner_json(const struct ctx *c, const struct run_opts *o, const struct run_result *res)
{
	return run_json(c, o, res, NULL);
}

char *report_to_json(const char *name, const struct report *r)
{
	struct strbuf sb = STRBUF_INIT;

	json_module(&sb, name, r, RUN_APPLY, true, NULL, 0);
	return sb_steal(&sb);
}

int report_from_json(const char *text, size_t len, struct report *r)
{
	yaml_document_t doc;
	int ret = -EBADMSG;

	if (ydoc_load(&doc, text, len)) {
		yaml_node_t *root = yaml_document_get_root_node(&doc);

		if (root && root->type == YAML_MAPPING_NODE) {
			report_free(r);
			load_module(&doc, root, r);
			ret = 0;
		}
		yaml_document_delete(&doc);
	}
	return ret;
}
