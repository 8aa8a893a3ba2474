/* SPDX-License-Identifier: MIT */
/* The clock, a step's deadline and this node's name (util.c); hpcinit.h includes it. */
#ifndef HPCINIT_UTIL_H
#define HPCINIT_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct ctx;

uint64_t now_ms(void);          /* CLOCK_MONOTONIC */
uint64_t ctx_remaining_ms(const struct ctx *c);   /* 0 when the deadline passed */
/* Sleep ms milliseconds, the whole of them (a signal does not cut it short). */
void sleep_ms(uint64_t ms);
/* Sleep with exponential backoff capped at cap_ms and at the deadline; false when out of time. */
bool ctx_backoff(const struct ctx *c, uint64_t *delay_ms, uint64_t cap_ms);

/* A buffer for node_hostname: a host name is at most 253 bytes. */
#define NODE_HOSTNAME_MAX 256
/*
 * This node's host name, the one place it is looked up: --hostname
 * (c->hostname) when given, else gethostname(2) (c NULL: gethostname only).
 * The one validity rule is a peer record's (record_hostname_valid: RFC 1123
 * labels and '_', common/loader/names.c).  Into buf and returns buf when valid and it
 * fits in len; else buf is "" and NULL: each caller says what stands in.
 */
const char *node_hostname(const struct ctx *c, char *buf, size_t len);

#endif
