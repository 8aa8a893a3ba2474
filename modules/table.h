/* SPDX-License-Identifier: MIT */
/* The steps in run order (table.c): read by the runner and the commands, never by a step. */
#ifndef HPCINIT_TABLE_H
#define HPCINIT_TABLE_H

#include "hpcinit.h"

/* The module table, in run order, NULL-terminated. */
extern const struct module *const module_table[];
/* The module called name, NULL when there is none. */
const struct module *module_find(const char *name);
/* The earliest time an enabled step wants a refresh (its wake_at hook), 0: none. */
uint64_t modules_wake_at(const struct ctx *c);

#endif
