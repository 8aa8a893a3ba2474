/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <syslog.h>

#include "escape.h"
#include "log.h"
#include "strbuf.h"

static int verbosity;           /* 0: warnings and errors; 1: info; 2: debug */
static int syslog_on;
static const char *cur_module;

void log_init(int v, int use_syslog)
{
	verbosity = v;
	syslog_on = use_syslog;
	if (syslog_on)
		openlog("hpcinit", LOG_PID, LOG_DAEMON);
}

void log_set_module(const char *module)
{
	cur_module = module;
}

__attribute__((format(printf, 3, 0)))
static void vlog(enum log_level lvl, const char *suffix, const char *fmt, va_list ap)
{
	static const char *const names[] = { "error", "warning", "info", "debug" };
	static const int prio[] = { LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG };
	struct strbuf raw = STRBUF_INIT, sb = STRBUF_INIT;

	if ((int)lvl > (int)LOG_LVL_WARN + verbosity && !(syslog_on && lvl <= LOG_LVL_INFO))
		return;
	sb_vprintf(&raw, fmt, ap);
	if (suffix)
		sb_printf(&raw, ": %s", suffix);
	/*
	 * What a message quotes may come from another machine: escaped for the
	 * terminal and syslog.  A message may run over lines (a program's
	 * output); each further line is indented, so no text can start a line
	 * that reads as a log entry of its own.
	 */
	while (raw.len && sb_str(&raw)[raw.len - 1] == '\n')
		raw.len--;
	for (const char *p = sb_str(&raw), *end = p + raw.len, *nl; p < end; p = nl + 1) {
		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			nl = end;
		if (p != sb_str(&raw))
			sb_appendn(&sb, "\n    ", 5);
		esc_append(&sb, p, (size_t)(nl - p), false);
	}
	sb_free(&raw);
	if ((int)lvl <= (int)LOG_LVL_WARN + verbosity)
		fprintf(stderr, "hpcinit[%s]: %s: %s\n", cur_module ? cur_module : "core",
			names[lvl], sb_str(&sb));
	if (syslog_on && lvl <= LOG_LVL_INFO)
		syslog(prio[lvl], "[%s] %s", cur_module ? cur_module : "core", sb_str(&sb));
	sb_free(&sb);
}

void log_msg(enum log_level lvl, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lvl, NULL, fmt, ap);
	va_end(ap);
}

int log_errno(enum log_level lvl, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vlog(lvl, strerror(err < 0 ? -err : err), fmt, ap);
	va_end(ap);
	return err;
}
