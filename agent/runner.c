/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "escape.h"
#include "fsutil.h"
#include "json.h"
#include "log.h"
#include "record.h"
#include "runner.h"

#define DEFAULT_TIMEOUT_MS (60u * 1000)
#define NEEDS_FAILED_TAG "runner.needs.failed"

/* ---- hook defaults --------------------------------------------------------- */

static const char *const no_needs[] = { NULL };

static bool default_enabled(const struct spec *s)
{
	return true;
}

static uint64_t default_timeout_ms(const struct spec *s)
{
	return DEFAULT_TIMEOUT_MS;
}

/*
 * The one place that knows which hooks may be left out (rdma-core's
 * dummy_ops): everything after this sees a complete module.  check falls back
 * to apply, which writes nothing outside RUN_APPLY, and apply to check (an
 * observe-only step).  runner_check_table rejects a module with neither.
 */
static void module_resolve(const struct module *m, struct module *ret)
{
	*ret = *m;
	if (!ret->enabled)
		ret->enabled = default_enabled;
	if (!ret->needs)
		ret->needs = no_needs;
	if (!ret->timeout_ms)
		ret->timeout_ms = default_timeout_ms;
	if (!ret->check)
		ret->check = m->apply;
	if (!ret->apply)
		ret->apply = m->check;
}

/* ---- typed outputs --------------------------------------------------------- */

static void free_peers(void *p)
{
	peerset_free(p);
}

/* One line an output: its bit, its name in messages, its field, who frees it. */
static const struct output_desc {
	unsigned id;
	const char *name;
	size_t offset;
	void (*free)(void *);
} output_descs[] = {
	{ OUT_PEERS, "peers", offsetof(struct outputs, peers), free_peers },
	{ OUT_RDMA, "rdma", offsetof(struct outputs, rdma), NULL },     /* the rdma module's static */
};
#define N_OUTPUTS (sizeof(output_descs) / sizeof(output_descs[0]))

_Static_assert(sizeof(struct outputs) == N_OUTPUTS * sizeof(void *),
	       "every field of struct outputs is a pointer with a line in output_descs");

static void *output_get(const struct outputs *o, const struct output_desc *d)
{
	void *p;

	memcpy(&p, (const char *)o + d->offset, sizeof(p));
	return p;
}

/* Copy the outputs named by bits from src to dst. */
static void outputs_copy(struct outputs *dst, const struct outputs *src, unsigned bits)
{
	for (size_t k = 0; k < N_OUTPUTS; k++)
		if (bits & output_descs[k].id)
			memcpy((char *)dst + output_descs[k].offset,
			       (const char *)src + output_descs[k].offset, sizeof(void *));
}

static void outputs_free(struct outputs *o)
{
	for (size_t k = 0; k < N_OUTPUTS; k++) {
		void *p = output_get(o, &output_descs[k]);

		if (p && output_descs[k].free)
			output_descs[k].free(p);
	}
	memset(o, 0, sizeof(*o));
}

static void bits_names(struct strbuf *sb, unsigned bits)
{
	bool first = true;

	for (size_t k = 0; k < N_OUTPUTS; k++)
		if (bits & output_descs[k].id) {
			sb_printf(sb, "%s%s", first ? "" : ", ", output_descs[k].name);
			first = false;
		}
}

static int table_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int table_err(const char *fmt, ...)
{
	va_list ap;

	fputs("hpcinit: internal error: module table: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return -EINVAL;
}

int runner_check_table(const struct module *const *table)
{
	int r = 0;

	for (size_t i = 0; table[i]; i++) {
		const struct module *m = table[i];
		unsigned unknown = (m->outputs | m->inputs) & ~(unsigned)OUT_ALL;

		if (!m->name || !*m->name) {
			r = table_err("entry %zu has no name", i);
			continue;
		}
		for (size_t j = 0; j < i; j++)
			if (table[j]->name && strcmp(table[j]->name, m->name) == 0)
				r = table_err("two modules named '%s'", m->name);
		if (!m->check && !m->apply)
			r = table_err("%s: neither check nor apply", m->name);
		for (const char *const *d = m->needs; d && *d; d++) {
			size_t j;

			for (j = 0; j < i; j++)
				if (strcmp(table[j]->name, *d) == 0)
					break;
			if (j == i)
				r = table_err("%s needs '%s', which is not a module before it", m->name, *d);
		}
		if (unknown)
			r = table_err("%s declares unknown outputs or inputs (bits 0x%x)", m->name, unknown);
		if (m->outputs & m->inputs) {
			struct strbuf names = STRBUF_INIT;

			bits_names(&names, m->outputs & m->inputs);
			r = table_err("%s both produces and reads %s", m->name, sb_str(&names));
			sb_free(&names);
		}
	}
	for (size_t k = 0; k < N_OUTPUTS; k++) {
		const struct output_desc *o = &output_descs[k];
		size_t producer = 0, n_producers = 0;

		for (size_t i = 0; table[i]; i++)
			if (table[i]->outputs & o->id) {
				if (n_producers++)
					r = table_err("output %s has two producers, %s and %s", o->name,
						      table[producer]->name, table[i]->name);
				else
					producer = i;
			}
		if (!n_producers) {
			r = table_err("no module produces output %s", o->name);
			continue;
		}
		for (size_t i = 0; table[i]; i++)
			if ((table[i]->inputs & o->id) && i < producer)
				r = table_err("%s reads %s, but its producer %s runs later", table[i]->name,
					      o->name, table[producer]->name);
	}
	return r;
}

static bool in_list(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

int runner_check_only(const struct strlist *only)
{
	int r = 0;

	for (size_t i = 0; i < only->n; i++) {
		if (module_find(only->v[i]))
			continue;
		struct strbuf names = STRBUF_INIT;

		for (size_t j = 0; module_table[j]; j++)
			sb_printf(&names, "%s%s", j ? ", " : "", module_table[j]->name);
		fprintf(stderr, "hpcinit: --only: unknown module '%s'; modules are: %s\n",
			only->v[i], sb_str(&names));
		sb_free(&names);
		r = -EINVAL;
	}
	return r;
}

/* --only pulls in the modules the selected ones need, so "--only ssh" still has peers. */
static void select_modules(const struct run_opts *o, const struct module *mods, bool *sel, size_t n)
{
	for (size_t i = 0; i < n; i++)
		sel[i] = o->only.n == 0 || in_list(&o->only, mods[i].name);
	for (size_t i = n; i-- > 0;) {
		const struct module *m = &mods[i];

		if (!sel[i])
			continue;
		for (const char *const *d = m->needs; *d; d++)
			for (size_t j = 0; j < i; j++)
				if (strcmp(module_table[j]->name, *d) == 0)
					sel[j] = true;
	}
}

/*
 * One run at a time: an flock on /run/hpcinit/lock.  The holder writes its
 * pid into the file so a waiting run can say who it waits for.
 */
static int take_lock(struct ctx *c, uint64_t timeout_ms, int *ret_fd)
{
	struct report scratch;
	char *path = ctx_path(c, LOCK_PATH);
	uint64_t start = now_ms();
	bool told = false;
	int fd, r;

	report_init(&scratch);
	r = fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0);
	report_free(&scratch);
	if (r < 0) {
		log_errno(LOG_LVL_ERR, r, "cannot create %s/run/hpcinit", c->root);
		free(path);
		return r;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0) {
		r = -errno;
		log_errno(LOG_LVL_ERR, r, "cannot open lock %s", path);
		free(path);
		return r;
	}
	for (;;) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			break;
		if (errno != EWOULDBLOCK) {
			r = -errno;
			log_errno(LOG_LVL_ERR, r, "cannot lock %s", path);
			goto out_close;
		}
		char holder[32] = "";
		ssize_t n = pread(fd, holder, sizeof(holder) - 1, 0);

		holder[n > 0 ? n : 0] = '\0';
		holder[strcspn(holder, "\n")] = '\0';
		if (now_ms() - start >= timeout_ms) {
			log_err("another hpcinit run (pid %s) still holds %s after %llu s; "
				"let it finish (hpcinit status) or raise --lock-timeout",
				*holder ? holder : "?", path, (unsigned long long)(timeout_ms / 1000));
			r = -EBUSY;
			goto out_close;
		}
		if (!told) {
			log_warn("another hpcinit run (pid %s) holds %s; waiting up to %llu s",
				 *holder ? holder : "?", path, (unsigned long long)(timeout_ms / 1000));
			told = true;
		}
		struct timespec ts = { 0, 50 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	char pid[32];
	int len = snprintf(pid, sizeof(pid), "%ld\n", (long)getpid());

	if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t)len, 0) != len)
		log_debug("cannot record pid in %s", path);
	free(path);
	*ret_fd = fd;
	return 0;
out_close:
	close(fd);
	free(path);
	return r;
}

static const struct module *find_idx(const char *name, size_t *ret)
{
	for (size_t i = 0; module_table[i]; i++)
		if (strcmp(module_table[i]->name, name) == 0) {
			*ret = i;
			return module_table[i];
		}
	return NULL;
}

/*
 * Run module i with its view of the outputs: its declared inputs and its own
 * outputs.  Afterwards its outputs go back into res->out.
 */
static void run_one(struct ctx *c, const struct module *m, size_t i, struct run_result *res)
{
	struct report *rep = &res->reports[i];
	struct outputs view = { 0 };
	struct peerset *legacy_peers = c->peers;
	uint64_t t0 = now_ms(), tmo;
	int r;

	if (!m->enabled(c->spec)) {
		report_set(rep, ST_SKIPPED, "no %s section in the spec", m->name);
		return;
	}
	for (const char *const *d = m->needs; *d; d++) {
		size_t j;

		if (!find_idx(*d, &j))
			continue;
		if (res->reports[j].status == ST_FAILED || res->reports[j].status == ST_SKIPPED) {
			bool failed = res->reports[j].status == ST_FAILED;

			/* Tagged: status.json counts a step skipped for a failed need as not done. */
			report_finding(rep, ST_SKIPPED, failed ? NEEDS_FAILED_TAG : "runner.needs.skipped",
				       "needs %s, which %s", *d, failed ? "failed" : "was skipped");
			report_set(rep, ST_SKIPPED, "needs %s, which %s", *d,
				   failed ? "failed" : "was skipped");
			return;
		}
	}
	tmo = m->timeout_ms(c->spec);
	c->deadline_ms = t0 + tmo;
	c->module = m->name;
	outputs_copy(&view, &res->out, m->inputs | m->outputs);
	c->out = &view;
	log_set_module(m->name);
	if (c->mode == RUN_CHECK)
		r = m->check(c, rep);
	else
		r = m->apply(c, rep);
	outputs_copy(&res->out, &view, m->outputs);
	c->out = NULL;
	/* Going with ctx->peers: a write to it is the output, and its readers see the output. */
	if (c->peers != legacy_peers)
		res->out.peers = c->peers;
	else
		c->peers = res->out.peers;
	if (r < 0)
		report_raise(rep, ST_FAILED);
	/* The worst-first summary from the findings, unless the module wrote one. */
	if (!rep->summary[0])
		report_summarize(rep);
	if (r < 0 && !rep->summary[0])
		report_set(rep, ST_FAILED, "%s", strerror(-r));
	if (!rep->summary[0]) {
		if (rep->status == ST_CHANGED)
			report_set(rep, ST_CHANGED, "%zu file(s) %s", rep->changed.n,
				   c->mode == RUN_APPLY ? "changed" : "differ");
		else
			report_set(rep, rep->status, "in sync");
	}
	rep->duration_ms = now_ms() - t0;
	if (rep->status == ST_FAILED)
		log_err("%s", rep->summary);
	else if (rep->status == ST_DEGRADED)
		log_warn("%s", rep->summary);
	else
		log_info("%s: %s", rstatus_name(rep->status, c->mode), rep->summary);
	log_set_module(NULL);
	c->module = NULL;
}

static int exit_code_of(const struct ctx *c, const struct run_result *res)
{
	bool failed = false, degraded = false, drift = false;

	for (size_t i = 0; i < res->n; i++) {
		if (!res->ran[i])
			continue;
		failed |= res->reports[i].status == ST_FAILED;
		degraded |= res->reports[i].status == ST_DEGRADED;
		drift |= res->reports[i].status == ST_CHANGED;
	}
	if (failed)
		return 1;
	if (c->mode == RUN_CHECK && drift)
		return 1;
	if (degraded)
		return 3;
	return 0;
}

/* ---- status: the last full apply and the last refresh, kept apart ---------- */

/*
 * Each kind of run keeps its own report (/run/hpcinit/<part>.json); status.json
 * is composed from them: every step as its latest run left it, and the worst
 * of those as the result.  A refresh therefore never hides a failed boot: the
 * steps it does not run keep the apply's verdict, and a step the apply skipped
 * because its need failed still counts as not done.
 */
enum part_id { PART_APPLY, PART_REFRESH, PART_VERIFY, N_PARTS };
static const char *const part_names[N_PARTS] = { "apply", "refresh", "verify" };

struct part {
	bool present, owned;
	const char *command;
	char *command_buf;              /* owned copy behind command */
	long long started, duration_ms;
	int exit_code;
	struct report *reports;         /* by module_table index */
	bool *ran;
	size_t n;
};

static enum part_id part_of(const struct ctx *c, const struct run_opts *o)
{
	if (c->verify)
		return PART_VERIFY;
	if (strcmp(o->command, "apply") == 0 && o->only.n == 0)
		return PART_APPLY;
	return PART_REFRESH;
}

static char *part_path(enum part_id p)
{
	return xasprintf("%s/%s.json", STATUS_DIR, part_names[p]);
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

static const char *map_get(yaml_document_t *doc, yaml_node_t *map, const char *key);
static yaml_node_t *map_node(yaml_document_t *doc, yaml_node_t *map, const char *key);

static bool parse_ll(const char *s, long long *ret)
{
	char *end;
	long long v;

	if (!s || !*s)
		return false;
	errno = 0;
	v = strtoll(s, &end, 10);
	if (errno || *end)
		return false;
	*ret = v;
	return true;
}

static bool status_from_name(const char *s, enum rstatus *ret)
{
	static const enum rstatus all[] = { ST_OK, ST_CHANGED, ST_SKIPPED, ST_DEGRADED, ST_FAILED };

	for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(s, rstatus_name(all[i], RUN_APPLY)) == 0) {
			*ret = all[i];
			return true;
		}
	return false;
}

static bool severity_from_name(const char *s, enum rstatus *ret)
{
	static const enum rstatus all[] = { ST_OK, ST_CHANGED, ST_DEGRADED, ST_FAILED };

	for (size_t i = 0; s && i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(s, finding_severity_name(all[i])) == 0) {
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
	if (!status_from_name(map_get(doc, m, "status"), &r->status))
		r->status = ST_FAILED;          /* unreadable is not ok */
	if (parse_ll(map_get(doc, m, "duration_ms"), &v) && v >= 0)
		r->duration_ms = (uint64_t)v;
	snprintf(r->summary, sizeof(r->summary), "%s", map_get(doc, m, "summary") ?: "");
	seq = map_node(doc, m, "details");
	for (yaml_node_item_t *it = seq && seq->type == YAML_SEQUENCE_NODE ? seq->data.sequence.items.start : NULL;
	     it && it < seq->data.sequence.items.top; it++) {
		yaml_node_t *l = yaml_document_get_node(doc, *it);

		if (l && l->type == YAML_SCALAR_NODE)
			sb_printf(&r->details, "%s\n", (const char *)l->data.scalar.value);
	}
	seq = map_node(doc, m, "findings");
	for (yaml_node_item_t *it = seq && seq->type == YAML_SEQUENCE_NODE ? seq->data.sequence.items.start : NULL;
	     it && it < seq->data.sequence.items.top; it++) {
		yaml_node_t *f = yaml_document_get_node(doc, *it);
		enum rstatus sev;

		if (!severity_from_name(map_get(doc, f, "severity"), &sev))
			continue;
		r->findings = xrealloc(r->findings, (r->n_findings + 1) * sizeof(*r->findings));
		r->findings[r->n_findings].sev = sev;
		r->findings[r->n_findings].tag = xstrdup(map_get(doc, f, "tag") ?: "");
		r->findings[r->n_findings].text = xstrdup(map_get(doc, f, "text") ?: "");
		r->n_findings++;
	}
	seq = map_node(doc, m, "changed");
	for (yaml_node_item_t *it = seq && seq->type == YAML_SEQUENCE_NODE ? seq->data.sequence.items.start : NULL;
	     it && it < seq->data.sequence.items.top; it++) {
		yaml_node_t *l = yaml_document_get_node(doc, *it);

		if (l && l->type == YAML_SCALAR_NODE)
			strlist_push(&r->changed, (const char *)l->data.scalar.value);
	}
}

/* Load a part's run document; absent or unreadable leaves p not present. */
static void part_load(const struct ctx *c, enum part_id id, struct part *p)
{
	char *path = part_path(id), *text = NULL;
	size_t len = 0, n = 0;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *mods;
	long long v;

	memset(p, 0, sizeof(*p));
	if (fs_read(c, path, &text, &len) < 0) {
		free(path);
		return;
	}
	free(path);
	yaml_parser_initialize(&parser);
	yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yaml_parser_delete(&parser);
		free(text);
		return;
	}
	root = yaml_document_get_root_node(&doc);
	if (!root || root->type != YAML_MAPPING_NODE)
		goto out;
	while (module_table[n])
		n++;
	p->present = p->owned = true;
	p->n = n;
	p->reports = xcalloc(n, sizeof(*p->reports));
	p->ran = xcalloc(n, sizeof(*p->ran));
	for (size_t i = 0; i < n; i++)
		report_init(&p->reports[i]);
	p->command = p->command_buf = xstrdup(map_get(&doc, root, "command") ?: part_names[id]);
	p->started = parse_ll(map_get(&doc, root, "started"), &v) ? v : 0;
	p->duration_ms = parse_ll(map_get(&doc, root, "duration_ms"), &v) ? v : 0;
	p->exit_code = parse_ll(map_get(&doc, root, "exit_code"), &v) && v >= 0 && v < 256 ? (int)v : 1;
	mods = map_node(&doc, root, "modules");
	for (yaml_node_item_t *it = mods && mods->type == YAML_SEQUENCE_NODE ? mods->data.sequence.items.start : NULL;
	     it && it < mods->data.sequence.items.top; it++) {
		yaml_node_t *m = yaml_document_get_node(&doc, *it);
		size_t i = module_index(map_get(&doc, m, "name"));

		if (i == SIZE_MAX || p->ran[i])
			continue;
		report_free(&p->reports[i]);
		load_module(&doc, m, &p->reports[i]);
		p->ran[i] = true;
	}
out:
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);
	free(text);
}

/* The part of this run, borrowing res's reports. */
static void part_from_result(struct part *p, const struct run_opts *o, const struct run_result *res)
{
	memset(p, 0, sizeof(*p));
	p->present = true;
	p->command = o->command;
	p->started = (long long)res->started_unix;
	p->duration_ms = (long long)res->duration_ms;
	p->exit_code = res->exit_code;
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

/* For every module, the part whose run of it is the latest (-1: none). */
static int latest_part(const struct part *parts, size_t i)
{
	int best = -1;

	for (int k = 0; k < N_PARTS; k++)
		if (parts[k].present && i < parts[k].n && parts[k].ran[i] &&
		    (best < 0 || parts[k].started >= parts[best].started))
			best = k;
	return best;
}

/*
 * The worst current state: 1 when a step's latest run failed or was blocked,
 * or when no full apply is on record (since boot); 3 when one is degraded.
 */
static int current_exit(const struct part *parts)
{
	bool failed = !parts[PART_APPLY].present, degraded = false;

	for (size_t i = 0; module_table[i]; i++) {
		int k = latest_part(parts, i);

		if (k < 0)
			continue;
		failed |= parts[k].reports[i].status == ST_FAILED || blocked(&parts[k].reports[i]);
		degraded |= parts[k].reports[i].status == ST_DEGRADED;
	}
	return failed ? 1 : degraded ? 3 : 0;
}

static const char *current_word(int code)
{
	return code == 0 ? "ready" : code == 3 ? "degraded" : "failed";
}

/* "result", "exit_code", "applied" and "parts": when each part last ran and how. */
static void json_parts(struct strbuf *sb, const struct part *parts)
{
	int code = current_exit(parts);

	json_kv_str(sb, "result", current_word(code), 0);
	json_kv_int(sb, "exit_code", code, 0);
	sb_printf(sb, ", \"applied\": %s", parts[PART_APPLY].present ? "true" : "false");
	sb_append(sb, ",\n \"parts\": {");
	for (int k = 0; k < N_PARTS; k++) {
		const struct part *p = &parts[k];

		sb_printf(sb, "%s\"%s\": ", k ? ", " : "", part_names[k]);
		if (!p->present) {
			sb_append(sb, "null");
			continue;
		}
		sb_append(sb, "{");
		json_kv_str(sb, "command", p->command, 1);
		json_kv_int(sb, "started", p->started, 0);
		json_kv_int(sb, "duration_ms", p->duration_ms, 0);
		json_kv_str(sb, "result", current_word(p->exit_code == 3 ? 3 : p->exit_code ? 1 : 0), 0);
		json_kv_int(sb, "exit_code", p->exit_code, 0);
		sb_append(sb, "}");
	}
	sb_append(sb, "}");
}

static void json_module(struct strbuf *sb, const char *name, const struct report *r, enum run_mode mode,
			bool first_mod, const char *part, long long ran_at);

/* status.json: this run's identity, the worst current state, the parts, every step's latest report. */
static char *status_compose(const struct ctx *c, const struct run_opts *o, const struct run_result *res,
			    const struct part *parts)
{
	struct strbuf sb = STRBUF_INIT;
	bool first = true;

	sb_append(&sb, "{");
	json_kv_str(&sb, "hpcinit", PACKAGE_VERSION, 1);
	json_kv_str(&sb, "command", o->command, 0);
	json_kv_str(&sb, "spec", c->spec ? c->spec->file : NULL, 0);
	json_kv_str(&sb, "cluster", c->spec ? c->spec->cluster.name : NULL, 0);
	json_kv_int(&sb, "started", (long long)res->started_unix, 0);
	json_kv_int(&sb, "duration_ms", (long long)res->duration_ms, 0);
	json_parts(&sb, parts);
	sb_append(&sb, ",\n \"modules\": [");
	for (size_t i = 0; module_table[i]; i++) {
		int k = latest_part(parts, i);

		if (k < 0)
			continue;
		json_module(&sb, module_table[i]->name, &parts[k].reports[i], RUN_APPLY, first,
			    part_names[k], parts[k].started);
		first = false;
	}
	sb_append(&sb, "\n ]\n}\n");
	return sb_steal(&sb);
}

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

static int write_file(struct ctx *c, struct report *scratch, const char *path, const char *text)
{
	char *dir = xstrdup(path);
	int r;

	*strrchr(dir, '/') = '\0';
	r = fs_mkdir_p(c, scratch, dir, 0755, 0, 0);
	free(dir);
	if (r >= 0)
		r = fs_write(c, scratch, path, text, strlen(text), 0644, 0, 0);
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
	json_kv_str(&sb, "result", "unknown", 0);
	json_kv_int(&sb, "exit_code", 1, 0);
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

static void write_status(struct ctx *c, const struct run_opts *o, const struct run_result *res)
{
	struct report scratch;
	struct part parts[N_PARTS];
	enum part_id id = part_of(c, o);
	char *json = runner_json(c, o, res), *pp = part_path(id), *status = NULL;
	const char *paths[] = { STATUS_PATH, LAST_RUN_PATH };
	int r;

	report_init(&scratch);
	r = write_file(c, &scratch, pp, json);
	if (r < 0) {
		status_broken(c, &scratch, o, res, pp, r, id);
		goto out;
	}
	load_parts(c, parts);
	part_free(&parts[id]);
	part_from_result(&parts[id], o, res);
	status = status_compose(c, o, res, parts);
	free_parts(parts);
	for (int i = 0; i < 2; i++) {
		r = write_file(c, &scratch, paths[i], status);
		if (r < 0) {
			status_broken(c, &scratch, o, res, paths[i], r, id);
			goto out;
		}
	}
	unlink_rooted(c, STATUS_ERROR_PATH);
out:
	report_free(&scratch);
	free(status);
	free(pp);
	free(json);
}

int runner_run(struct ctx *c, const struct run_opts *o, struct run_result *res)
{
	size_t n = 0;
	int lock_fd = -1;
	uint64_t t0 = now_ms();
	struct module *mods;

	while (module_table[n])
		n++;
	memset(res, 0, sizeof(*res));
	res->n = n;
	res->reports = xcalloc(n, sizeof(*res->reports));
	res->ran = xcalloc(n, sizeof(*res->ran));
	res->started_unix = (uint64_t)time(NULL);
	for (size_t i = 0; i < n; i++)
		report_init(&res->reports[i]);
	if (runner_check_table(module_table) < 0) {
		res->exit_code = 1;
		return 1;
	}
	mods = xcalloc(n, sizeof(*mods));
	for (size_t i = 0; i < n; i++)
		module_resolve(module_table[i], &mods[i]);
	select_modules(o, mods, res->ran, n);

	if (c->mode == RUN_APPLY) {
		int r = take_lock(c, o->lock_timeout_ms, &lock_fd);

		if (r < 0) {
			/* Nothing ran: the report lists no module. */
			memset(res->ran, 0, n * sizeof(*res->ran));
			res->exit_code = 1;
			free(mods);
			return 1;
		}
	}
	for (size_t i = 0; i < n; i++)
		if (res->ran[i])
			run_one(c, &mods[i], i, res);
	free(mods);
	/* The outputs belong to res now (run_result_free); ctx->peers only mirrored them. */
	c->peers = NULL;
	res->duration_ms = now_ms() - t0;
	res->exit_code = exit_code_of(c, res);
	if (c->mode == RUN_APPLY) {
		write_status(c, o, res);
		close(lock_fd);   /* releases the flock */
	}
	return res->exit_code;
}

void run_result_free(struct run_result *res)
{
	for (size_t i = 0; i < res->n; i++)
		report_free(&res->reports[i]);
	outputs_free(&res->out);
	free(res->reports);
	free(res->ran);
	memset(res, 0, sizeof(*res));
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
		json_kv_str(sb, "severity", finding_severity_name(f->sev), 1);
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
	if (c->mode == RUN_CHECK) {
		/* check --json also says how the node was left: the worst current
		 * state of status.json and when each part last ran. */
		struct part parts[N_PARTS];

		load_parts(c, parts);
		sb_append(&sb, ",\n \"status\": {");
		json_kv_str(&sb, "file", STATUS_PATH, 1);
		json_parts(&sb, parts);
		sb_append(&sb, "}");
		free_parts(parts);
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

/* A unix time from a status file as local time, or "?". */
static void fmt_time(const char *s, char *buf, size_t size)
{
	long long v;
	struct tm tm;
	time_t t;

	snprintf(buf, size, "?");
	if (!parse_ll(s, &v) || v <= 0)
		return;
	t = (time_t)v;
	if (localtime_r(&t, &tm))
		strftime(buf, size, "%Y-%m-%d %H:%M:%S %Z", &tm);
}

int status_print(const struct ctx *c, const char *path, FILE *out)
{
	char *text = NULL;
	size_t len = 0;
	yaml_parser_t parser;
	yaml_document_t doc;
	yaml_node_t *root, *mods, *parts;
	char when[64];
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
	fmt_time(map_get(&doc, root, "started"), when, sizeof(when));
	fprintf(out, "last run: hpcinit %s, %s, cluster %s, spec %s\n",
		map_get(&doc, root, "command") ?: "?", when,
		map_get(&doc, root, "cluster") ?: "?", map_get(&doc, root, "spec") ?: "?");
	parts = map_node(&doc, root, "parts");
	for (int k = 0; parts && k < N_PARTS; k++) {
		yaml_node_t *pn = map_node(&doc, parts, part_names[k]);

		if (!pn || pn->type != YAML_MAPPING_NODE) {
			fprintf(out, "last %-8s never%s\n", part_names[k],
				k == PART_APPLY ? " since boot: the node is not ready until hpcinit apply runs" : "");
			continue;
		}
		fmt_time(map_get(&doc, pn, "started"), when, sizeof(when));
		fprintf(out, "last %-8s %s, %s (exit %s, %s ms)\n", part_names[k], when,
			map_get(&doc, pn, "result") ?: "?", map_get(&doc, pn, "exit_code") ?: "?",
			map_get(&doc, pn, "duration_ms") ?: "?");
	}
	print_row(out, "MODULE", "RESULT", "TIME", "FROM     SUMMARY");
	mods = map_node(&doc, root, "modules");
	if (mods && mods->type == YAML_SEQUENCE_NODE) {
		for (yaml_node_item_t *it = mods->data.sequence.items.start;
		     it < mods->data.sequence.items.top; it++) {
			yaml_node_t *m = yaml_document_get_node(&doc, *it);
			char dur[32];

			struct strbuf sum = STRBUF_INIT;

			snprintf(dur, sizeof(dur), "%sms", map_get(&doc, m, "duration_ms") ?: "?");
			/* FROM: the part whose run of the step this is (older files have none) */
			sb_printf(&sum, "%-8s %s", map_get(&doc, m, "part") ?: "-", map_get(&doc, m, "summary") ?: "");
			print_row(out, map_get(&doc, m, "name") ?: "?", map_get(&doc, m, "status") ?: "?",
				  dur, sb_str(&sum));
			sb_free(&sum);
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

int status_command(const struct ctx *c, bool json, FILE *out)
{
	char *text = NULL;
	int r;

	/* The last run could not record itself: its status is unknown. */
	if (fs_read(c, STATUS_ERROR_PATH, &text, NULL) == 0) {
		if (json) {
			fputs(text, out);
		} else {
			yaml_parser_t parser;
			yaml_document_t doc;
			const char *why = NULL;

			yaml_parser_initialize(&parser);
			yaml_parser_set_input_string(&parser, (const unsigned char *)text, strlen(text));
			if (yaml_parser_load(&parser, &doc)) {
				why = map_get(&doc, yaml_document_get_root_node(&doc), "reason");
				fprintf(out, "status unknown (stale): %s; the older status was removed. "
					"Run hpcinit check to see the node now.\n", why ?: "the last run could not write its status");
				yaml_document_delete(&doc);
			} else {
				fprintf(out, "status unknown (stale): %s%s is unreadable\n", c->root, STATUS_ERROR_PATH);
			}
			yaml_parser_delete(&parser);
		}
		free(text);
		return 1;
	}
	if (fs_exists(c, STATUS_PATH)) {
		if (json) {
			r = fs_read(c, STATUS_PATH, &text, NULL);
			if (r == 0)
				fputs(text, out);
			free(text);
		} else {
			r = status_print(c, STATUS_PATH, out);
		}
		if (r < 0)
			fprintf(stderr, "hpcinit: cannot read %s%s: %s\n", c->root, STATUS_PATH, strerror(-r));
		return r < 0 ? 1 : 0;
	}
	/* Only an earlier boot's report is left: show it, never as current. */
	r = fs_read(c, LAST_RUN_PATH, &text, NULL);
	if (r < 0) {
		fprintf(stderr, "hpcinit: no status: %s%s and %s%s: %s (has hpcinit apply run?)\n",
			c->root, STATUS_PATH, c->root, LAST_RUN_PATH, strerror(-r));
		return 1;
	}
	if (json) {
		struct strbuf sb = STRBUF_INIT;

		sb_append(&sb, "{");
		json_kv_str(&sb, "hpcinit", PACKAGE_VERSION, 1);
		json_kv_str(&sb, "result", "unknown", 0);
		json_kv_int(&sb, "exit_code", 1, 0);
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
	return 1;
}
