/* SPDX-License-Identifier: MIT */
/* Logs go to stderr and, when enabled, to syslog tagged with the module. */
#ifndef HPCINIT_LOG_H
#define HPCINIT_LOG_H

#include <stdarg.h>

enum log_level { LOG_LVL_ERR, LOG_LVL_WARN, LOG_LVL_INFO, LOG_LVL_DEBUG };

void log_init(int verbosity, int use_syslog);
void log_set_module(const char *module);   /* NULL: core */
void log_msg(enum log_level lvl, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* log_msg at ERR/WARN with ": strerror(-err)" appended; returns err. */
int log_errno(enum log_level lvl, int err, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#define log_err(...)   log_msg(LOG_LVL_ERR, __VA_ARGS__)
#define log_warn(...)  log_msg(LOG_LVL_WARN, __VA_ARGS__)
#define log_info(...)  log_msg(LOG_LVL_INFO, __VA_ARGS__)
#define log_debug(...) log_msg(LOG_LVL_DEBUG, __VA_ARGS__)

#endif
