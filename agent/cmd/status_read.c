/* SPDX-License-Identifier: MIT */
/*
 * hpcinit status and the health probe's state: status.json (or an earlier
 * boot's last-run.json) read back, printed as a table or handed on as it
 * is, and the node's state as an exit code.  core/status.c writes them.
 * A document of a newer format (docs/formats.md) is neither shown as a
 * table nor trusted for the state: status unknown, saying why.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaml.h>

#include "escape.h"
#include "fsutil.h"
#include "json.h"
#include "number.h"
#include "status.h"
#include "status_format.h"
#include "status_read.h"
#include "ydoc.h"

static bool status_parse_ll(const char *s, long long *ret)
{
	return num_ll(s, LLONG_MIN, LLONG_MAX, ret);
}

/* A unix time from a status file as local time, or "?". */
static void fmt_time(const char *s, char *buf, size_t size)
{
	long long v;
	struct tm tm;
	time_t t;

	snprintf(buf, size, "?");
	if (!status_parse_ll(s, &v) || v <= 0)
		return;
	t = (time_t)v;
	if (localtime_r(&t, &tm))
		strftime(buf, size, "%Y-%m-%d %H:%M:%S %Z", &tm);
}

/* The boot, timed: each phase of this boot, seconds after the kernel started. */
static void print_boot(yaml_document_t *doc, yaml_node_t *boot, FILE *out)
{
	yaml_node_t *ph = ydoc_node(doc, boot, "phases");
	long long b = 0, at;

	if (!ph || ph->type != YAML_SEQUENCE_NODE || ph->data.sequence.items.start == ph->data.sequence.items.top)
		return;
	if (!status_parse_ll(ydoc_get(doc, boot, "boot_ms"), &b))
		b = 0;
	fprintf(out, "boot, seconds after the kernel started%s:\n", b ? "" : " (boot time unknown: unix times)");
	for (yaml_node_item_t *it = ph->data.sequence.items.start; it < ph->data.sequence.items.top; it++) {
		yaml_node_t *m = yaml_document_get_node(doc, *it);
		struct strbuf name = STRBUF_INIT;
		const char *n = ydoc_get(doc, m, "phase") ?: "?";

		if (!status_parse_ll(ydoc_get(doc, m, "at_ms"), &at))
			continue;
		esc_append(&name, n, strlen(n), false);
		fprintf(out, "  %-22s %9.3f\n", sb_str(&name), (double)(at - b) / 1000.0);
		sb_free(&name);
	}
}

#define STATUS_MAX_CLUSTER_LINES 20

/* A scalar of a document, escaped for the terminal. */
static void print_escaped(FILE *out, const char *fmt_prefix, const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	esc_append(&sb, s ? s : "?", strlen(s ? s : "?"), false);
	fprintf(out, "%s%s", fmt_prefix, sb_str(&sb));
	sb_free(&sb);
}

/* "drift": the steps whose latest check found what apply would restore (not a failure). */
static void print_drift(yaml_document_t *doc, yaml_node_t *root, FILE *out)
{
	yaml_node_t *d = ydoc_node(doc, root, "drift");
	bool first = true;

	if (!d || d->type != YAML_SEQUENCE_NODE)
		return;
	for (yaml_node_item_t *it = d->data.sequence.items.start; it < d->data.sequence.items.top; it++) {
		yaml_node_t *n = yaml_document_get_node(doc, *it);

		if (!n || n->type != YAML_SCALAR_NODE)
			continue;
		print_escaped(out, first ? "drift:" : ",", "");
		print_escaped(out, " ", (const char *)n->data.scalar.value);
		first = false;
	}
	if (!first)
		fputs(" (what hpcinit apply restores; not a reason to fail the node)\n", out);
}

/* The cluster findings (about other nodes, never this node's state), at most STATUS_MAX_CLUSTER_LINES. */
static void print_cluster(yaml_document_t *doc, yaml_node_t *mods, FILE *out)
{
	size_t n = 0;

	for (yaml_node_item_t *it = mods->data.sequence.items.start; it < mods->data.sequence.items.top; it++) {
		yaml_node_t *m = yaml_document_get_node(doc, *it), *f = ydoc_node(doc, m, "findings");

		for (yaml_node_item_t *j = f && f->type == YAML_SEQUENCE_NODE ? f->data.sequence.items.start : NULL;
		     j && j < f->data.sequence.items.top; j++) {
			yaml_node_t *e = yaml_document_get_node(doc, *j);
			const char *sev = ydoc_get(doc, e, "severity");

			if (!sev || strcmp(sev, "cluster") != 0)
				continue;
			if (n++ == 0)
				fputs("\ncluster findings (about other nodes; never this node's state):\n", out);
			if (n > STATUS_MAX_CLUSTER_LINES)
				continue;
			print_escaped(out, "  ", ydoc_get(doc, m, "name"));
			print_escaped(out, ": ", ydoc_get(doc, e, "tag"));
			print_escaped(out, ": ", ydoc_get(doc, e, "text"));
			fputc('\n', out);
		}
	}
	if (n > STATUS_MAX_CLUSTER_LINES)
		fprintf(out, "  ... %zu more (hpcinit status --json)\n", n - STATUS_MAX_CLUSTER_LINES);
}

int status_print(const struct ctx *c, const char *path, FILE *out)
{
	char *text = NULL;
	size_t len = 0;
	yaml_document_t doc;
	yaml_node_t *root, *mods, *parts;
	const char *peers;
	char when[64], why[160];
	int r = fs_read(c, path, &text, &len);

	if (r < 0)
		return r;
	if (!ydoc_load(&doc, text, len)) {
		free(text);
		return -EBADMSG;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		r = -EBADMSG;
		goto out;
	}
	if (status_format_refused(&doc, root, why, sizeof(why))) {
		/* docs/formats.md: a newer format is not shown as if this hpcinit knew what it says */
		fprintf(out, "%s%s: %s; not shown (hpcinit status --json hands it on as it is)\n", c->root, path, why);
		r = 0;
		goto out;
	}
	fmt_time(ydoc_get(&doc, root, "started"), when, sizeof(when));
	fprintf(out, "last run: hpcinit %s, %s, cluster %s, spec %s\n",
		ydoc_get(&doc, root, "command") ?: "?", when,
		ydoc_get(&doc, root, "cluster") ?: "?", ydoc_get(&doc, root, "spec") ?: "?");
	parts = ydoc_node(&doc, root, "parts");
	for (int k = 0; parts && k < N_PARTS; k++) {
		yaml_node_t *pn = ydoc_node(&doc, parts, status_part_names[k]);

		if (!pn || pn->type != YAML_MAPPING_NODE) {
			fprintf(out, "last %-8s never%s\n", status_part_names[k],
				k == PART_APPLY ? " since boot: the node is not ready until hpcinit apply runs" : "");
			continue;
		}
		fmt_time(ydoc_get(&doc, pn, "started"), when, sizeof(when));
		fprintf(out, "last %-8s %s, %s (exit %s, %s ms)\n", status_part_names[k], when,
			ydoc_get(&doc, pn, "result") ?: "?", ydoc_get(&doc, pn, "exit_code") ?: "?",
			ydoc_get(&doc, pn, "duration_ms") ?: "?");
	}
	if ((peers = ydoc_get(&doc, root, "peers")))
		fprintf(out, "peers known: %s\n", peers);
	print_drift(&doc, root, out);
	print_boot(&doc, ydoc_node(&doc, root, "boot"), out);
	status_print_row(out, "MODULE", "RESULT", "TIME", "FROM     SUMMARY");
	mods = ydoc_node(&doc, root, "modules");
	if (mods && mods->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = mods->data.sequence.items.start;
		     it < mods->data.sequence.items.top; it++) {
			yaml_node_t *m = yaml_document_get_node(&doc, *it);
			char dur[32];

			struct strbuf sum = STRBUF_INIT;

			snprintf(dur, sizeof(dur), "%sms", ydoc_get(&doc, m, "duration_ms") ?: "?");
			/* FROM: the part whose run of the step this is (older files have none) */
			sb_printf(&sum, "%-8s %s", ydoc_get(&doc, m, "part") ?: "-", ydoc_get(&doc, m, "summary") ?: "");
			status_print_row(out, ydoc_get(&doc, m, "name") ?: "?", ydoc_get(&doc, m, "status") ?: "?",
				  dur, sb_str(&sum));
			sb_free(&sum);
		}
		for (yaml_node_item_t *it = mods->data.sequence.items.start;
		     it < mods->data.sequence.items.top; it++) {
			yaml_node_t *m = yaml_document_get_node(&doc, *it);
			const char *st = ydoc_get(&doc, m, "status");
			yaml_node_t *det = ydoc_node(&doc, m, "details");

			if (!st || (strcmp(st, "failed") && strcmp(st, "degraded")) || !det ||
			    det->type != YAML_SEQUENCE_NODE || det->data.sequence.items.start == det->data.sequence.items.top)
				continue;
			fprintf(out, "\n[%s]\n", ydoc_get(&doc, m, "name") ?: "?");
			for (yaml_node_item_t *d = det->data.sequence.items.start; d < det->data.sequence.items.top; d++) {
				yaml_node_t *line = yaml_document_get_node(&doc, *d);

				if (line && line->type == YAML_SCALAR_NODE) {
					struct strbuf sb = STRBUF_INIT;

					esc_append(&sb, (const char *)line->data.scalar.value,
						   line->data.scalar.length, false);
					fprintf(out, "  %s\n", sb_str(&sb));
					sb_free(&sb);
				}
			}
		}
		print_cluster(&doc, mods, out);
	}
	fprintf(out, "\nresult: %s (exit %s, %s ms)\n", ydoc_get(&doc, root, "result") ?: "?",
		ydoc_get(&doc, root, "exit_code") ?: "?", ydoc_get(&doc, root, "duration_ms") ?: "?");
	r = 0;
out:
	yaml_document_delete(&doc);
	free(text);
	return r;
}

/*
 * status's exit code: what status.json says the node is (its "result",
 * cross-checked with its "exit_code"): ready 0, failed 1, degraded 3.
 * A document that says anything else, cannot be read, or is of a format
 * newer than this hpcinit reads (why, when not NULL, says so) is unknown: 4.
 */
static int status_code(const char *text, char *why, size_t whylen)
{
	yaml_document_t doc;
	int code = STATUS_EXIT_UNKNOWN;
	char buf[160];

	if (ydoc_load(&doc, text, strlen(text))) {
		yaml_node_t *root = yaml_document_get_root_node(&doc);
		const char *res = ydoc_get(&doc, root, "result"), *ec = ydoc_get(&doc, root, "exit_code");
		long long v;

		if (status_format_refused(&doc, root, why ? why : buf, why ? whylen : sizeof(buf)))
			res = NULL;
		if (res && status_parse_ll(ec, &v) && (v == 0 || v == 1 || v == 3) &&
		    strcmp(res, status_result_word((int)v)) == 0)
			code = (int)v;
		yaml_document_delete(&doc);
	}
	return code;
}

int status_state(const struct ctx *c, bool *ret_applied)
{
	char *text = NULL;
	int code = STATUS_EXIT_UNKNOWN;

	*ret_applied = false;
	if (fs_exists(c, STATUS_ERROR_PATH) || fs_read(c, STATUS_PATH, &text, NULL) < 0)
		return STATUS_EXIT_UNKNOWN;
	code = status_code(text, NULL, 0);
	{
		yaml_document_t doc;

		if (ydoc_load(&doc, text, strlen(text))) {
			const char *a = ydoc_get(&doc, yaml_document_get_root_node(&doc), "applied");

			*ret_applied = a && strcmp(a, "true") == 0;
			yaml_document_delete(&doc);
		}
	}
	free(text);
	return code;
}

int status_command(const struct ctx *c, bool json, FILE *out)
{
	char *text = NULL;
	int r, code;

	/* The last run could not record itself: its status is unknown. */
	if (fs_read(c, STATUS_ERROR_PATH, &text, NULL) == 0) {
		if (json) {
			fputs(text, out);
		} else {
			yaml_document_t doc;
			const char *why = NULL;

			if (ydoc_load(&doc, text, strlen(text))) {
				why = ydoc_get(&doc, yaml_document_get_root_node(&doc), "reason");
				fprintf(out, "status unknown (stale): %s; the older status was removed. "
					"Run hpcinit check to see the node now.\n", why ?: "the last run could not write its status");
				yaml_document_delete(&doc);
			} else {
				fprintf(out, "status unknown (stale): %s%s is unreadable\n", c->root, STATUS_ERROR_PATH);
			}
		}
		free(text);
		return STATUS_EXIT_UNKNOWN;
	}
	if (fs_exists(c, STATUS_PATH)) {
		char why[160] = "";

		r = fs_read(c, STATUS_PATH, &text, NULL);
		code = r < 0 ? STATUS_EXIT_UNKNOWN : status_code(text, why, sizeof(why));
		if (r == 0 && json)
			fputs(text, out);
		else if (r == 0)
			r = status_print(c, STATUS_PATH, out);
		free(text);
		if (r < 0) {
			fprintf(stderr, "hpcinit: cannot read %s%s: %s\n", c->root, STATUS_PATH, strerror(-r));
			return STATUS_EXIT_UNKNOWN;
		}
		if (code == STATUS_EXIT_UNKNOWN && why[0])
			fprintf(stderr, "hpcinit: %s%s: %s: status unknown\n", c->root, STATUS_PATH, why);
		else if (code == STATUS_EXIT_UNKNOWN)
			fprintf(stderr, "hpcinit: %s%s does not say ready, degraded or failed: status unknown\n",
				c->root, STATUS_PATH);
		return code;
	}
	/* Only an earlier boot's report is left: show it, never as current. */
	r = fs_read(c, LAST_RUN_PATH, &text, NULL);
	if (r < 0) {
		fprintf(stderr, "hpcinit: no status: %s%s and %s%s: %s (has hpcinit apply run?)\n",
			c->root, STATUS_PATH, c->root, LAST_RUN_PATH, strerror(-r));
		return STATUS_EXIT_UNKNOWN;
	}
	if (json) {
		struct strbuf sb = STRBUF_INIT;

		sb_append(&sb, "{");
		json_kv_str(&sb, "hpcinit", PACKAGE_VERSION, 1);
		json_kv_int(&sb, "format", STATUS_FORMAT, 0);
		json_kv_str(&sb, "result", "unknown", 0);
		json_kv_int(&sb, "exit_code", STATUS_EXIT_UNKNOWN, 0);
		sb_append(&sb, ", \"stale\": true");
		json_kv_str(&sb, "reason", "no hpcinit run since boot (" STATUS_PATH " is absent); "
			    "last_run is " LAST_RUN_PATH " from an earlier boot", 0);
		sb_printf(&sb, ",\n \"last_run\": %s}\n", text);
		fputs(sb_str(&sb), out);
		sb_free(&sb);
	} else {
		fprintf(out, "stale: no hpcinit run since boot (%s is absent); below is %s from an earlier boot\n",
			STATUS_PATH, LAST_RUN_PATH);
		if (status_print(c, LAST_RUN_PATH, out) < 0)
			fprintf(out, "(%s%s is unreadable)\n", c->root, LAST_RUN_PATH);
	}
	free(text);
	return STATUS_EXIT_UNKNOWN;
}
