/* SPDX-License-Identifier: MIT */
/* hpcinit watch: re-apply discovery, ssh and hostfile when the membership changes. */
#ifndef HPCINIT_WATCH_H
#define HPCINIT_WATCH_H

#include "runner.h"

/*
 * Run until SIGTERM or SIGINT: one refresh at once, then another after every
 * membership change (etcd: the watch stream, debounced; shared: a poll of
 * the nodes directory every second), keeping this node's lease alive in
 * between.  ro holds the refresh's module list and lock timeout.  Returns
 * the exit code: 0 after a signal, 2 when the spec's method cannot be
 * watched.
 */
int watch_main(struct ctx *c, const struct run_opts *ro);

#endif
