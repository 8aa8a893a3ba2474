/* SPDX-License-Identifier: MIT */
/*
 * The module contract: what the runner hands a step (struct ctx), what a
 * step hands back (struct report), and the step itself (struct module).
 */
#ifndef HPCINIT_H
#define HPCINIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "spec.h"
#include "strbuf.h"

enum run_mode {
	RUN_APPLY,      /* converge: write what differs */
	RUN_CHECK,      /* observe only: report drift */
	RUN_PLAN,       /* observe only: report what apply would change, with diffs */
};

enum rstatus {
	ST_OK,          /* in sync, nothing to do */
	ST_CHANGED,     /* apply changed something; in check/plan: drift / would change */
	ST_SKIPPED,     /* section absent, or a needed module failed */
	ST_DEGRADED,    /* works, with a problem the spec marks optional */
	ST_FAILED,      /* the step did not reach its goal */
};

struct report {
	enum rstatus status;
	char summary[256];      /* one line, no newline */
	struct strbuf details;  /* free text, one finding a line; diffs in plan mode */
	struct strlist changed; /* paths (as seen on the target, without --root) */
	uint64_t duration_ms;   /* filled by the runner */
};

struct peerset;                 /* record.h */

struct ctx {
	const struct spec *spec;
	const char *root;       /* fake root for every path; "" means the real / */
	enum run_mode mode;
	int verbose;
	bool json;
	bool verify;            /* hpcinit verify: the mpi module runs its cluster check */
	uint64_t deadline_ms;   /* CLOCK_MONOTONIC ms when the running module must give up */
	const char *module;     /* name of the running module, for logs */
	/* Overrides a fake root may supply (documented; tests use them). */
	const char *kernel_release;  /* NULL: uname(2), or <root>/etc/hpcinit/kernel-release */
	const char *hostname;        /* NULL: gethostname(2) */
	/* State passed between modules in run order. */
	struct peerset *peers;  /* set by discovery; read by ssh, hostfile, mpi */
	void *rdma_result;      /* set by rdma; read by mpi (profile) */
};

struct module {
	const char *name;
	/* Is the module's section in the spec?  Absent means skipped. */
	bool (*enabled)(const struct spec *);
	/* Modules this one needs; a failed or skipped one skips this one. NULL-terminated. */
	const char *const *needs;
	/* Default deadline in ms, or a function of the spec (may be NULL: 60 s). */
	uint64_t (*timeout_ms)(const struct spec *);
	/* Observe only.  Fill rep; return 0 or -errno (-errno also means failed). */
	int (*check)(struct ctx *, struct report *);
	/* Converge idempotently.  In RUN_PLAN the core calls apply with writes diverted. */
	int (*apply)(struct ctx *, struct report *);
};

/* The module table, in run order, NULL-terminated (modules/table.c). */
extern const struct module *const module_table[];
const struct module *module_find(const char *name);

/* Report helpers (report.c).  They never fail; out-of-memory aborts. */
void report_init(struct report *r);
void report_free(struct report *r);
void report_set(struct report *r, enum rstatus st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Raise status to at least st (FAILED > DEGRADED > CHANGED > OK). */
void report_raise(struct report *r, enum rstatus st);
void report_detail(struct report *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void report_changed(struct report *r, const char *path);
const char *rstatus_name(enum rstatus st, enum run_mode mode);

/* Time (util.c). */
uint64_t now_ms(void);          /* CLOCK_MONOTONIC */
uint64_t ctx_remaining_ms(const struct ctx *c);   /* 0 when the deadline passed */
/* Sleep with exponential backoff capped at cap_ms and at the deadline; false when out of time. */
bool ctx_backoff(const struct ctx *c, uint64_t *delay_ms, uint64_t cap_ms);

/* True when the mode may change the system. */
static inline bool ctx_may_write(const struct ctx *c) { return c->mode == RUN_APPLY; }

#endif
