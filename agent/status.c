/* SPDX-License-Identifier: MIT */
/*
 * The run report: the status document (JSON: --json, /run/hpcinit/status.json),
 * the human table, and reading a status document back (hpcinit status).  The
 * document's layout is written and read here only.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <yaml.h>

#include "escape.h"
#include "fsutil.h"
#include "json.h"
#include "runner.h"

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

char *runner_json(const struct ctx *c, const struct run_opts *o, const struct run_result *res)
{
	struct strbuf sb = STRBUF_INIT;
	bool first_mod = true;

	sb_append(&sb, "{");
	json_kv_str(&sb, "hpcinit", PACKAGE_VERSION, 1);
	json_kv_str(&sb, "command", o->command, 0);
	json_kv_str(&sb, "spec", c->spec ? c->spec->file : NULL, 0);
	json_kv_str(&sb, "cluster", c->spec ? c->spec->cluster.name : NULL, 0);
	json_kv_int(&sb, "started", (long long)res->started_unix, 0);
	json_kv_int(&sb, "duration_ms", (long long)res->duration_ms, 0);
	json_kv_str(&sb, "result", result_word(c, res->exit_code), 0);
	json_kv_int(&sb, "exit_code", res->exit_code, 0);
	sb_append(&sb, ",\n \"modules\": [");
	for (size_t i = 0; i < res->n; i++) {
		const struct report *r = &res->reports[i];

		if (!res->ran[i])
			continue;
		sb_append(&sb, first_mod ? "\n  {" : ",\n  {");
		first_mod = false;
		json_kv_str(&sb, "name", module_table[i]->name, 1);
		json_kv_str(&sb, "status", rstatus_name(r->status, c->mode), 0);
		json_kv_int(&sb, "duration_ms", (long long)r->duration_ms, 0);
		json_kv_str(&sb, "summary", r->summary, 0);
		sb_append(&sb, ", \"details\": [");
		const char *p = sb_str(&r->details);
		bool first = true;

		while (*p) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			char *line = xstrndup(p, len);

			if (!first)
				sb_append(&sb, ", ");
			json_str(&sb, line);
			free(line);
			first = false;
			p += len + (nl ? 1 : 0);
		}
		sb_append(&sb, "], \"findings\": [");
		for (size_t j = 0; j < r->n_findings; j++) {
			const struct finding *f = &r->findings[j];

			sb_append(&sb, j ? ", {" : "{");
			json_kv_str(&sb, "severity", finding_severity_name(f->sev), 1);
			json_kv_str(&sb, "tag", f->tag, 0);
			json_kv_str(&sb, "text", f->text, 0);
			sb_append(&sb, "}");
		}
		sb_append(&sb, "], \"changed\": [");
		for (size_t j = 0; j < r->changed.n; j++) {
			if (j)
				sb_append(&sb, ", ");
			json_str(&sb, r->changed.v[j]);
		}
		sb_append(&sb, "]}");
	}
	sb_append(&sb, "\n ]\n}\n");
	return sb_steal(&sb);
}

static void print_row(FILE *out, const char *name, const char *status, const char *dur,
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
	print_row(out, "MODULE", "RESULT", "TIME", "SUMMARY");
	for (size_t i = 0; i < res->n; i++) {
		const struct report *r = &res->reports[i];
		char dur[32];

		if (!res->ran[i])
			continue;
		snprintf(dur, sizeof(dur), "%llums", (unsigned long long)r->duration_ms);
		print_row(out, module_table[i]->name, rstatus_name(r->status, c->mode), dur, r->summary);
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

/*
 * status reads back the JSON we wrote.  JSON with our escaping is YAML, so
 * libyaml's document API reads it; no second parser.
 */
static const char *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);
		yaml_node_t *v = yaml_document_get_node(doc, p->value);

		if (k && v && k->type == YAML_SCALAR_NODE && v->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, key) == 0)
			return (const char *)v->data.scalar.value;
	}
	return NULL;
}

static yaml_node_t *map_node(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	if (!map || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = yaml_document_get_node(doc, p->key);

		if (k && k->type == YAML_SCALAR_NODE && strcmp((const char *)k->data.scalar.value, key) == 0)
			return yaml_document_get_node(doc, p->value);
	}
	return NULL;
}

int status_print(const struct ctx *c, const char *path, FILE *out)
{
	char *text = NULL;
	size_t len = 0;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *mods;
	int r = fs_read(c, path, &text, &len);

	if (r < 0)
		return r;
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_parser_delete(&parser);
		free(text);
		return -EBADMSG;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE) {
		r = -EBADMSG;
		goto out;
	}
	time_t started = 0;
	const char *s = map_get(&doc, root, "started");
	char when[64] = "?";

	if (s) {
		char *end;
		long long v = strtoll(s, &end, 10);

		if (!*end && v > 0) {
			struct tm tm;

			started = (time_t)v;
			if (localtime_r(&started, &tm))
				strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S %Z", &tm);
		}
	}
	fprintf(out, "last run: hpcinit %s, %s, cluster %s, spec %s\n",
		map_get(&doc, root, "command") ?: "?", when,
		map_get(&doc, root, "cluster") ?: "?", map_get(&doc, root, "spec") ?: "?");
	print_row(out, "MODULE", "RESULT", "TIME", "SUMMARY");
	mods = map_node(&doc, root, "modules");
	if (mods && mods->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = mods->data.sequence.items.start;
		     it < mods->data.sequence.items.top; it++) {
			yaml_node_t *m = yaml_document_get_node(&doc, *it);
			char dur[32];

			snprintf(dur, sizeof(dur), "%sms", map_get(&doc, m, "duration_ms") ?: "?");
			print_row(out, map_get(&doc, m, "name") ?: "?", map_get(&doc, m, "status") ?: "?",
				  dur, map_get(&doc, m, "summary") ?: "");
		}
		for (yaml_node_item_t *it = mods->data.sequence.items.start;
		     it < mods->data.sequence.items.top; it++) {
			yaml_node_t *m = yaml_document_get_node(&doc, *it);
			const char *st = map_get(&doc, m, "status");
			yaml_node_t *det = map_node(&doc, m, "details");

			if (!st || (strcmp(st, "failed") && strcmp(st, "degraded")) || !det ||
			    det->type != YAML_SEQUENCE_NODE || det->data.sequence.items.start == det->data.sequence.items.top)
				continue;
			fprintf(out, "\n[%s]\n", map_get(&doc, m, "name") ?: "?");
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
	}
	fprintf(out, "\nresult: %s (exit %s, %s ms)\n", map_get(&doc, root, "result") ?: "?",
		map_get(&doc, root, "exit_code") ?: "?", map_get(&doc, root, "duration_ms") ?: "?");
	r = 0;
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	free(text);
	return r;
}
