/* SPDX-License-Identifier: MIT */
/* Runs the module table in order under deadlines, and records the run. */
#ifndef HPCINIT_RUNNER_H
#define HPCINIT_RUNNER_H

#include "hpcinit.h"
#include "../../modules/table.h"

#define STATUS_DIR "/run/hpcinit"
#define STATUS_PATH "/run/hpcinit/status.json"
/* Written instead when a run could not record itself (the status files are removed). */
#define STATUS_ERROR_PATH "/run/hpcinit/status-error.json"
#define LAST_RUN_PATH "/var/lib/hpcinit/last-run.json"
#define LOCK_PATH "/run/hpcinit/lock"
/* The finding of a step skipped because a step it needs failed (status.json counts it as not done). */
#define NEEDS_FAILED_TAG "runner.needs.failed"

struct run_opts {
	const char *command;            /* "apply", "check", "plan", "refresh", "verify" */
	struct strlist only;            /* empty: every module */
	uint64_t lock_timeout_ms;
	/*
	 * hpcinit check: record the run as the status part "check" (the node's
	 * live state: status.json, the textfile, the health answer) when it gets
	 * the run lock within lock_timeout_ms; otherwise it runs unrecorded.
	 */
	bool record_check;
	/*
	 * While the run waits for the run lock: called about every 50 ms (NULL:
	 * nothing).  The watch renews its etcd lease there: another run holding
	 * the lock for longer than the lease must not end this node's membership.
	 */
	void (*lock_wait)(void *arg);
	void *lock_wait_arg;
};

struct run_result {
	struct report *reports;         /* one per module_table entry */
	bool *ran;                      /* false: not selected by --only */
	size_t n;
	struct outputs out;             /* the typed outputs the steps handed on; freed with res */
	uint64_t started_unix;
	int64_t started_ms;             /* the same, in ms */
	int64_t started_boot_ms;        /* CLOCK_BOOTTIME, ms: which part ran a step last (status.c) */
	bool recorded;                  /* the run wrote its status part */
	uint64_t duration_ms;
	int exit_code;
};

/* Check --only names; on error print what is known and return -EINVAL. */
int runner_check_only(const struct strlist *only);
/*
 * Check a module table's declarations: unique names, a check or apply hook,
 * needs that name earlier modules, known outputs and inputs, each output with
 * exactly one producer that runs before its readers, and isolated modules
 * producing only what the child can send back (peers).  Prints each problem;
 * 0 or -EINVAL.  runner_run checks module_table with it before anything runs.
 */
int runner_check_table(const struct module *const *table);
/* Run; fills res.  Returns the exit code (docs/conventions.md "Exit codes"). */
int runner_run(struct ctx *c, const struct run_opts *o, struct run_result *res);
/*
 * The run lock (LOCK_PATH), waiting up to timeout_ms: 0 and the fd that holds
 * it, or -errno.  runner_take_lock_while: wait(arg) is called between tries.
 */
int runner_take_lock(struct ctx *c, uint64_t timeout_ms, int *ret_fd);
int runner_take_lock_while(struct ctx *c, uint64_t timeout_ms, void (*wait)(void *), void *arg,
			   int *ret_fd);
void run_result_free(struct run_result *res);
/*
 * hpcinit leave (and the watch's Scheduled Events): under the run lock
 * (waiting up to lock_timeout_ms, so an apply or refresh in flight finishes
 * first and cannot put the record back), each enabled module's leave hook,
 * last step first, each reported as "leave: NAME: ok|changed|failed: ...";
 * the one of the step that publishes the node (OUT_PEERS, discovery: its
 * record goes) after all of them, in a child under its deadline
 * (runner_call_isolated), reported as "leave: ok|changed|failed: ...".  No leave hook enabled: says so, 0.  1 when one
 * failed or the lock was not had, else 0.
 */
int runner_leave(struct ctx *c, uint64_t lock_timeout_ms);
/*
 * Run hook in a child under module name's deadline, as an isolated step
 * runs (hpcinit leave's removal of the record on the shared directory): at
 * the deadline it fails naming what it was blocked in; a child of name still
 * asleep in the kernel from an earlier run fails it at once.  0 or -errno.
 */
int runner_call_isolated(struct ctx *c, const char *name, int (*hook)(struct ctx *, struct report *),
			 struct report *rep);

#endif
