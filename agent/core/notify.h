/* SPDX-License-Identifier: MIT */
/* The systemd notification protocol, written directly (no libsystemd). */
#ifndef HPCINIT_NOTIFY_H
#define HPCINIT_NOTIFY_H

#include <stdbool.h>

struct run_result;

/*
 * Send text (e.g. "READY=1\nSTATUS=...") as one datagram to the socket named
 * by $NOTIFY_SOCKET: a path, or "@name" for an abstract socket.  0 when sent
 * or when NOTIFY_SOCKET is unset (not run by systemd); else -errno, logged.
 */
int notify_send(const char *text);
/*
 * Say how a run ended: "STATUS=hpcinit <what>: <result> (exit N): <worst
 * step's summary>", with READY=1 first when ready is set and the run did
 * not fail (hpcinit watch: ready once a membership was applied).
 */
int notify_run(const char *what, const struct run_result *res, bool ready);

#endif
