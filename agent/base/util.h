/* SPDX-License-Identifier: MIT */
/* The clock and a step's deadline (util.c); hpcinit.h includes it. */
#ifndef HPCINIT_UTIL_H
#define HPCINIT_UTIL_H

#include <stdbool.h>
#include <stdint.h>

struct ctx;

uint64_t now_ms(void);          /* CLOCK_MONOTONIC */
uint64_t ctx_remaining_ms(const struct ctx *c);   /* 0 when the deadline passed */
/* Sleep with exponential backoff capped at cap_ms and at the deadline; false when out of time. */
bool ctx_backoff(const struct ctx *c, uint64_t *delay_ms, uint64_t cap_ms);

#endif
