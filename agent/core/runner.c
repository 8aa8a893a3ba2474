/* SPDX-License-Identifier: MIT */
/*
 * The runner: checks the module table's declarations, fills in default hooks,
 * runs the selected steps in table order under their deadlines with their
 * views of the typed outputs, skips those whose needs failed, holds the run
 * lock, and hands the run to status.c to record.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "iso.h"
#include "log.h"
#include "number.h"
#include "outputs.h"
#include "proc.h"
#include "record.h"
#include "runner.h"
#include "status.h"

#define DEFAULT_TIMEOUT_MS (60u * 1000)

/*
 * The step whose child stays after its answer (iso.c, iso_run's stay): the
 * first selected one with an announce hook (discovery), when the announce
 * surely comes (a node's first apply this boot: its state was unknown) or a
 * later selected step may share the child (shares_child: ssh, hostfile, mpi).
 * SIZE_MAX: none.
 */
static size_t stay_at = SIZE_MAX;

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
		if (m->isolate && (m->outputs & ~(unsigned)OUT_PEERS)) {
			/* run_isolated brings back the report and peers only */
			struct strbuf names = STRBUF_INIT;

			outputs_names(&names, m->outputs & ~(unsigned)OUT_PEERS);
			r = table_err("%s runs isolated, but its output %s cannot come back from the child",
				      m->name, sb_str(&names));
			sb_free(&names);
		}
		if (m->outputs & m->inputs) {
			struct strbuf names = STRBUF_INIT;

			outputs_names(&names, m->outputs & m->inputs);
			r = table_err("%s both produces and reads %s", m->name, sb_str(&names));
			sb_free(&names);
		}
	}
	for (size_t k = 0; k < n_output_descs; k++) {
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
		sel[i] = o->only.n == 0 || strlist_has(&o->only, mods[i].name);
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
int runner_take_lock(struct ctx *c, uint64_t timeout_ms, int *ret_fd)
{
	return runner_take_lock_while(c, timeout_ms, NULL, NULL, ret_fd);
}

int runner_take_lock_while(struct ctx *c, uint64_t timeout_ms, void (*wait)(void *), void *arg,
			   int *ret_fd)
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
		if (wait)
			wait(arg);
		sleep_ms(50);
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
	struct run_so_far sofar;
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
	sofar = (struct run_so_far){ i, module_table, res->reports, res->ran };
	c->run = &sofar;
	log_set_module(m->name);
	if (m->isolate) {
		r = iso_run(c, m, c->mode == RUN_CHECK ? m->check : m->apply, rep, &view, tmo,
			    i == stay_at ? &res->out : NULL);
	} else {
		r = c->mode == RUN_CHECK ? m->check(c, rep) : m->apply(c, rep);
		iso_outputs_set(m->outputs);
	}
	outputs_copy(&res->out, &view, m->outputs);
	c->out = NULL;
	c->run = NULL;
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

static bool node_state_changed(const struct node_state *a, const struct node_state *b)
{
	return a->known != b->known || a->status != b->status || strcmp(a->reason, b->reason) != 0;
}

/*
 * The node's state changed in this run: each enabled step with an announce
 * hook tells the cluster (discovery: this node's record), isolated.  What it
 * says goes to the log only: the run's report and exit code are the node's.
 */
static void announce(struct ctx *c)
{
	for (size_t i = 0; module_table[i]; i++) {
		const struct module *m = module_table[i];
		struct report rep;

		if (!m->announce || (m->enabled && !m->enabled(c->spec)))
			continue;
		report_init(&rep);
		if ((iso_staying(m->name) ? iso_announce(c, &rep) :
		     runner_call_isolated(c, m->name, m->announce, &rep)) < 0 || rep.status == ST_FAILED)
			log_msg(LOG_LVL_WARN, "%s: cannot tell the cluster this node's state: %s", m->name,
				rep.summary[0] ? rep.summary : "failed");
		report_free(&rep);
	}
}

/*
 * The run lock for a run that records itself: an apply (no lock, no run:
 * -errno), or a check asked to record (o->record_check): without the lock
 * within o->lock_timeout_ms it still runs, unrecorded, so it never writes a
 * status between an apply's steps and never waits for one without end.
 * *record true: the run records itself, holding *lock_fd.
 */
static int lock_for_record(struct ctx *c, const struct run_opts *o, int *lock_fd, bool *record)
{
	struct ctx w = *c;
	int r;

	*record = c->mode == RUN_APPLY || (c->mode == RUN_CHECK && o->record_check);
	if (!*record)
		return 0;
	w.mode = RUN_APPLY;     /* /run/hpcinit is hpcinit's own: a check may make it */
	r = runner_take_lock_while(&w, o->lock_timeout_ms, o->lock_wait, o->lock_wait_arg, lock_fd);
	if (r < 0 && c->mode == RUN_CHECK) {
		log_warn("check: not recorded (it could not take the run lock): status, the health answer and "
			 "the metrics keep the state the last recorded run left");
		*record = false;
		return 0;
	}
	return r;
}

/*
 * stay_at for this run: the first selected, enabled step with an announce
 * hook, isolated, when the announce surely comes (announce) or a later
 * selected, enabled step may share its child.  Where neither, no child waits
 * for nothing (a converged apply on static discovery: 1.04x its CPU when one
 * did).
 */
static size_t stay_index(const struct ctx *c, const struct module *mods, const bool *ran, size_t n,
			 bool announce)
{
	for (size_t i = 0; i < n; i++) {
		bool stay = announce;

		if (!ran[i] || !mods[i].announce || !mods[i].isolate || !mods[i].enabled(c->spec))
			continue;
		for (size_t j = i + 1; j < n && !stay; j++)
			stay = ran[j] && mods[j].isolate && mods[j].shares_child && mods[j].enabled(c->spec);
		return stay ? i : SIZE_MAX;
	}
	return SIZE_MAX;
}

int runner_run(struct ctx *c, const struct run_opts *o, struct run_result *res)
{
	size_t n = 0;
	int lock_fd = -1;
	uint64_t t0 = now_ms();
	struct module *mods;
	struct timespec ts;
	struct status_prior *prior = NULL;
	bool record = false;

	while (module_table[n])
		n++;
	c->command = o->command;
	fs_run_begin();
	memset(res, 0, sizeof(*res));
	res->n = n;
	res->reports = xcalloc(n, sizeof(*res->reports));
	res->ran = xcalloc(n, sizeof(*res->ran));
	res->started_unix = (uint64_t)time(NULL);
	clock_gettime(CLOCK_REALTIME, &ts);
	res->started_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
	clock_gettime(CLOCK_BOOTTIME, &ts);
	res->started_boot_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
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

	{
		int r = lock_for_record(c, o, &lock_fd, &record);

		if (r < 0) {
			/* Nothing ran: the report lists no module. */
			memset(res->ran, 0, n * sizeof(*res->ran));
			res->exit_code = 1;
			free(mods);
			return 1;
		}
	}
	{
		/* Children stuck in the kernel are recorded here, so no run starts a second one. */
		char *sd = ctx_path(c, STATUS_DIR "/stuck");

		proc_stuck_dir(sd);
		free(sd);
	}
	if (record)
		prior = status_prior_load(c, &c->node);   /* what the last runs left: this run's record says it */
	/* the node's state goes from unknown to known (a whole apply): the announce surely comes */
	c->announce_follows = record && c->mode == RUN_APPLY && !c->node.known && status_part_of(c, o) == PART_APPLY;
	stay_at = stay_index(c, mods, res->ran, n, c->announce_follows);
	for (size_t i = 0; i < n; i++)
		if (res->ran[i])
			run_one(c, &mods[i], i, res);
	stay_at = SIZE_MAX;
	c->announce_follows = false;
	proc_stuck_dir(NULL);
	free(mods);
	res->duration_ms = now_ms() - t0;
	res->exit_code = exit_code_of(c, res);
	if (record) {
		struct node_state before = c->node;

		res->recorded = true;
		status_write(c, o, res, prior);
		if (node_state_changed(&before, &c->node))
			announce(c);
		close(lock_fd);   /* releases the flock */
	}
	iso_end();
	return res->exit_code;
}

int runner_call_isolated(struct ctx *c, const char *name, int (*hook)(struct ctx *, struct report *),
			 struct report *rep)
{
	const struct module *m = module_find(name);
	struct module res, one = { .name = name };
	struct outputs view = { 0 };
	char *sd = ctx_path(c, STATUS_DIR "/stuck");
	uint64_t tmo;
	int r;

	if (!m)
		return -EINVAL;
	module_resolve(m, &res);
	tmo = res.timeout_ms(c->spec);
	c->deadline_ms = now_ms() + tmo;
	c->module = name;
	c->out = &view;
	proc_stuck_dir(sd);
	free(sd);
	log_set_module(name);
	r = iso_run(c, &one, hook, rep, &view, tmo, NULL);
	log_set_module(NULL);
	proc_stuck_dir(NULL);
	outputs_free(&view);
	c->out = NULL;
	c->module = NULL;
	if (r < 0)
		report_raise(rep, ST_FAILED);
	if (!rep->summary[0])
		report_summarize(rep);
	return r;
}

/* One step's leave: the record's removal (discovery's) in a child under its deadline. */
static int leave_one(struct ctx *c, const struct module *m, bool record)
{
	struct report rep;
	int r;

	report_init(&rep);
	if (record) {
		/* In a child: a shared directory that stopped answering ends at the deadline, not holding the lock. */
		r = runner_call_isolated(c, m->name, m->leave, &rep);
	} else {
		c->module = m->name;
		log_set_module(m->name);
		r = m->leave(c, &rep);          /* its own deadline (slurm: slurm.leave_wait) */
		log_set_module(NULL);
		c->module = NULL;
		if (r < 0)
			report_raise(&rep, ST_FAILED);
		if (!rep.summary[0])
			report_summarize(&rep);
	}
	if (record)
		printf("leave: %s: %s\n", rep.status == ST_FAILED ? "failed" : rep.status == ST_CHANGED ?
		       "changed" : "ok", rep.summary[0] ? rep.summary : "nothing to remove");
	else
		printf("leave: %s: %s: %s\n", m->name, rep.status == ST_FAILED ? "failed" :
		       rep.status == ST_CHANGED ? "changed" : "ok", rep.summary[0] ? rep.summary : "nothing to do");
	if (rep.details.len)
		fputs(sb_str(&rep.details), stdout);
	r = r < 0 || rep.status == ST_FAILED ? 1 : 0;
	report_free(&rep);
	return r;
}

int runner_leave(struct ctx *c, uint64_t lock_timeout_ms)
{
	size_t n = 0, hooks = 0;
	int code = 0, lock_fd = -1, r;

	for (; module_table[n]; n++)
		hooks += module_table[n]->leave && (!module_table[n]->enabled || module_table[n]->enabled(c->spec));
	if (!hooks) {
		fprintf(stderr, "hpcinit: leave: the spec has no discovery section; nothing to leave\n");
		return 0;
	}
	/* After a run in flight: its publish (or its slurmd start) cannot come after this removal. */
	r = runner_take_lock(c, lock_timeout_ms, &lock_fd);
	if (r < 0) {
		printf("leave: failed: cannot take the run lock: %s; this node's record was not removed\n",
		       strerror(-r));
		return 1;
	}
	fs_run_begin();
	/*
	 * Last step first, and the step that publishes the node (OUT_PEERS:
	 * discovery) after all of them: the scheduler lets the node go before
	 * its record does.
	 */
	for (int record = 0; record < 2; record++)
		for (size_t i = n; i--;) {
			const struct module *m = module_table[i];

			if (m->leave && (!m->enabled || m->enabled(c->spec)) && !!(m->outputs & OUT_PEERS) == record)
				code |= leave_one(c, m, record);
		}
	close(lock_fd);
	return code;
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
