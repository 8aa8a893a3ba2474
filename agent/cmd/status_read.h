/* SPDX-License-Identifier: MIT */
/* hpcinit status and the health probe's state: the status documents read back (status_read.c). */
#ifndef HPCINIT_STATUS_READ_H
#define HPCINIT_STATUS_READ_H

#include <stdbool.h>
#include <stdio.h>

#include "status.h"              /* STATUS_EXIT_UNKNOWN */

/* Read a status document and print it as a table.  0, or -errno. */
int status_print(const struct ctx *c, const char *path, FILE *out);
/*
 * hpcinit status: status.json as a table (or as JSON).  Returns the node's
 * worst current state as the exit code: 0 ready, 1 failed, 3 degraded, and
 * STATUS_EXIT_UNKNOWN when it is unknown: the last run could not write its
 * status, only an earlier boot's last-run.json is left (stale), or
 * status.json is absent or unreadable.
 */
int status_command(const struct ctx *c, bool json, FILE *out);
/*
 * The node's state for a health probe: status_command's code (0, 1, 3, or
 * STATUS_EXIT_UNKNOWN), and whether a full apply ran since boot.
 */
int status_state(const struct ctx *c, bool *ret_applied);

#endif
