/* SPDX-License-Identifier: MIT */
/*
 * The boot, timed.  No platform says how long a VM took from power-on to
 * schedulable, so hpcinit records this boot's phases as unix times (ms) in
 * BOOT_PATH (/run is a tmpfs: a new boot starts a new record):
 *
 *   kernel            PID 1 started (/proc/stat btime + /proc/1/stat starttime)
 *   cloud-init.start  cloud-init's first stage started (/run/cloud-init/status.json)
 *   cloud-init.end    its final stage finished
 *   step.<name>       each step of the first full apply of the boot ended
 *   mounts, fabric    the nfs and rdma steps first ended ok (or changed)
 *   ready             the first full apply that ended ready or degraded
 *   slurm             the slurm step first registered the node (a compute's
 *                     slurm step ended ok or changed in a run that did not
 *                     fail: it registers only then, drained if degraded)
 *
 * A step's end is the run's start plus the own times of the steps up to it
 * (the runner's few ms between steps are not counted).  Every file is read
 * under --root, so tests give it a fake /proc and cloud-init files.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <yaml.h>

#include "boot.h"
#include "fsutil.h"
#include "json.h"
#include "log.h"
#include "runner.h"
#include "ydoc.h"
#include "number.h"

static long long realtime_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static struct boot_phase *phase(struct boot *b, const char *name)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->ph[i].name, name) == 0)
			return &b->ph[i];
	if (b->n == BOOT_MAX_PHASES)
		return NULL;
	snprintf(b->ph[b->n].name, sizeof(b->ph[b->n].name), "%s", name);
	b->ph[b->n].at_ms = 0;
	return &b->ph[b->n++];
}

/* Set a phase the first time only (a later run does not move it). */
static void reach(struct boot *b, const char *name, long long at_ms)
{
	struct boot_phase *p = phase(b, name);

	if (p && !p->at_ms && at_ms > 0)
		p->at_ms = at_ms;
}

/* Set a phase to what its source says now (kernel, cloud-init). */
static void set(struct boot *b, const char *name, long long at_ms)
{
	struct boot_phase *p;

	if (at_ms <= 0)
		return;
	p = phase(b, name);
	if (p)
		p->at_ms = at_ms;
}

/* A number of seconds (cloud-init writes floats) as ms; 0 if none. */
static long long scalar_ms(yaml_node_t *n)
{
	double v;

	if (!n || n->type != YAML_SCALAR_NODE)
		return 0;
	if (!num_double((const char *)n->data.scalar.value, 0, 1e11, &v) || v <= 0)
		return 0;
	return (long long)(v * 1000.0);
}

static int load_doc(const struct ctx *c, const char *path, char **text, yaml_document_t *doc)
{
	size_t len = 0;

	if (fs_read(c, path, text, &len) < 0)
		return -ENOENT;
	if (!ydoc_load(doc, *text, len)) {
		free(*text);
		*text = NULL;
		return -EBADMSG;
	}
	return 0;
}

/* The kernel: boot time from /proc/stat, PID 1's start from /proc/1/stat. */
static void read_kernel(const struct ctx *c, struct boot *b)
{
	char *text = NULL, *p;
	long long btime = 0, start = -1;
	long hz = sysconf(_SC_CLK_TCK);

	if (fs_read(c, "/proc/stat", &text, NULL) == 0) {
		p = strstr(text, "\nbtime ");
		if (p && !num_ll_prefix(p + 7, 1, LLONG_MAX / 1000, &btime, NULL))
			btime = 0;
		free(text);
	}
	if (btime <= 0)
		return;
	b->boot_ms = btime * 1000;
	if (fs_read(c, "/proc/1/stat", &text, NULL) == 0) {
		/* after "(comm)": state is field 3, starttime field 22 */
		p = strrchr(text, ')');
		for (int f = 2; p && f < 22; f++)
			p = strchr(p + 1, ' ');
		if (p && hz > 0 && !num_ll_prefix(p + 1, 0, LLONG_MAX / 1000, &start, NULL))
			start = -1;
		free(text);
	}
	if (start >= 0)
		set(b, "kernel", b->boot_ms + start * 1000 / hz);
}

/* cloud-init: its stages' start and finished times (null while running). */
static void read_cloud_init(const struct ctx *c, struct boot *b)
{
	static const char *const stages[] = { "init-local", "init", "modules-config", "modules-final" };
	yaml_document_t doc;
	char *text = NULL;
	yaml_node_t *v1;
	long long first = 0;

	if (load_doc(c, "/run/cloud-init/status.json", &text, &doc) < 0)
		return;
	v1 = ydoc_node(&doc, yaml_document_get_root_node(&doc), "v1");
	for (size_t i = 0; i < sizeof(stages) / sizeof(stages[0]); i++) {
		long long s = scalar_ms(ydoc_node(&doc, ydoc_node(&doc, v1, stages[i]), "start"));

		if (s && (!first || s < first))
			first = s;
	}
	set(b, "cloud-init.start", first);
	set(b, "cloud-init.end", scalar_ms(ydoc_node(&doc, ydoc_node(&doc, v1, "modules-final"), "finished")));
	yaml_document_delete(&doc);
	free(text);
}

static void load_record(const struct ctx *c, struct boot *b)
{
	yaml_document_t doc;
	char *text = NULL;
	yaml_node_t *root, *phases;

	if (load_doc(c, BOOT_PATH, &text, &doc) < 0)
		return;
	root = yaml_document_get_root_node(&doc);
	phases = ydoc_node(&doc, root, "phases");
	for (yaml_node_item_t *it = phases && phases->type == YAML_SEQUENCE_NODE ?
				    phases->data.sequence.items.start : NULL;
	     it && it < phases->data.sequence.items.top; it++) {
		yaml_node_t *m = yaml_document_get_node(&doc, *it), *name = ydoc_node(&doc, m, "phase");
		yaml_node_t *at = ydoc_node(&doc, m, "at_ms");
		long long v;

		if (!name || name->type != YAML_SCALAR_NODE || !at || at->type != YAML_SCALAR_NODE ||
		    !num_ll((const char *)at->data.scalar.value, 0, LLONG_MAX, &v))
			continue;       /* not a time: that phase is not known */
		reach(b, (const char *)name->data.scalar.value, v);
	}
	yaml_document_delete(&doc);
	free(text);
}

static int by_time(const void *a, const void *b)
{
	const struct boot_phase *x = a, *y = b;

	return x->at_ms < y->at_ms ? -1 : x->at_ms > y->at_ms;
}

void boot_json(struct strbuf *sb, const struct boot *b)
{
	sb_append(sb, "{");
	json_kv_int(sb, "boot_ms", b->boot_ms, 1);
	sb_append(sb, ", \"phases\": [");
	for (size_t i = 0; i < b->n; i++) {
		sb_append(sb, i ? ", {" : "{");
		json_kv_str(sb, "phase", b->ph[i].name, 1);
		json_kv_int(sb, "at_ms", b->ph[i].at_ms, 0);
		if (b->boot_ms)
			json_kv_int(sb, "since_boot_ms", b->ph[i].at_ms - b->boot_ms, 0);
		sb_append(sb, "}");
	}
	sb_append(sb, "]}");
}

long long boot_ready_ms(const struct ctx *c)
{
	struct boot b = { 0 };
	struct boot_phase *p;

	load_record(c, &b);
	read_kernel(c, &b);
	p = phase(&b, "ready");
	return p && p->at_ms > 0 && b.boot_ms > 0 ? p->at_ms - b.boot_ms : -1;
}

void boot_update(struct ctx *c, const struct run_result *res, bool full, struct boot *b)
{
	long long end = realtime_ms(), at = end - (long long)res->duration_ms;
	struct strbuf sb = STRBUF_INIT;
	struct report scratch;

	memset(b, 0, sizeof(*b));
	load_record(c, b);
	read_kernel(c, b);
	read_cloud_init(c, b);
	/* a check observes: it reaches no phase (the steps it finds fine did nothing this boot) */
	for (size_t i = 0; c->mode != RUN_CHECK && i < res->n; i++) {
		const struct report *r = &res->reports[i];
		const char *name = module_table[i]->name;
		bool done = r->status == ST_OK || r->status == ST_CHANGED;
		char key[48];

		if (!res->ran[i])
			continue;
		at += (long long)r->duration_ms;
		if (r->status == ST_SKIPPED)
			continue;
		if (full) {
			snprintf(key, sizeof(key), "step.%s", name);
			reach(b, key, at);
		}
		if (done && strcmp(name, "nfs") == 0)
			reach(b, "mounts", at);
		if (done && strcmp(name, "rdma") == 0)
			reach(b, "fabric", at);
		/* the slurm step registers a compute only when no step failed (a degraded one, drained) */
		if (done && res->exit_code != 1 && strcmp(name, "slurm") == 0 && c->spec &&
		    c->spec->cluster.role != ROLE_HEAD)
			reach(b, "slurm", at);
	}
	if (full && (res->exit_code == 0 || res->exit_code == 3))
		reach(b, "ready", end);
	qsort(b->ph, b->n, sizeof(b->ph[0]), by_time);
	boot_json(&sb, b);
	sb_append(&sb, "\n");
	report_init(&scratch);
	if (fs_write(c, &scratch, BOOT_PATH, sb_str(&sb), sb.len, 0644, 0, 0) < 0)
		log_warn("cannot record this boot's phases in %s, ignoring", BOOT_PATH);
	report_free(&scratch);
	sb_free(&sb);
}
