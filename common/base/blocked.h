/* SPDX-License-Identifier: MIT */
/* What a blocked child waits for, read from /proc (blocked.c). */
#ifndef HPCINIT_BLOCKED_H
#define HPCINIT_BLOCKED_H

#include <stddef.h>
#include <sys/types.h>

#include "strbuf.h"

/* What pid is blocked in: its system call, the file behind its descriptor, its kernel wait. */
void proc_describe_blocked(pid_t pid, struct strbuf *sb);
/* The kernel function pid sleeps in (/proc/PID/wchan) into buf, "" when unknown. */
void proc_wchan(pid_t pid, char *buf, size_t size);

#endif
