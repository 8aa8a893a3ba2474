/* SPDX-License-Identifier: MIT */
/*
 * What the package-manager families (pm_*.c) share: the release finding and
 * the defaults for a family without a database hpcinit reads.  A file below
 * them, so no family calls back into the step (kernel.c) that picks it.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>

#include "kernel.h"

void kernel_released(struct ctx *c, struct report *r, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	if (ctx_may_write(c)) {
		report_finding(r, ST_CHANGED, "kernel.hold.released", "released (kernel.hold: false): %s", sb_str(&sb));
	} else {
		report_finding(r, ST_CHANGED, "kernel.hold.release", "kernel.hold: false, but hpcinit's hold is "
			       "in place: %s (apply releases it)", sb_str(&sb));
	}
	sb_free(&sb);
}

int kernel_pm_no_db(const struct ctx *c, void **ret_db)
{
	*ret_db = NULL;
	return 0;
}

void kernel_pm_no_db_close(void *db)
{
}

void kernel_pm_no_installed(const void *db, struct strlist *out)
{
}

int kernel_pm_no_newest(struct ctx *c, struct report *r, const void *db, struct kernel_update *ret)
{
	return -EOPNOTSUPP;
}

int kernel_pm_no_update_modules(struct ctx *c, struct report *r, const struct kernel_update *u,
				const void *db, struct kmod *mods, size_t n)
{
	return -EOPNOTSUPP;
}

int kernel_pm_no_let_through(struct ctx *c, struct report *r, const char *rel,
			     const struct kernel_update *u, const void *db)
{
	return -EOPNOTSUPP;
}
