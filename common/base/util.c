/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hpcinit.h"
#include "names.h"
#include "util.h"

uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

uint64_t ctx_remaining_ms(const struct ctx *c)
{
	uint64_t now = now_ms();

	return c->deadline_ms > now ? c->deadline_ms - now : 0;
}

void sleep_ms(uint64_t ms)
{
	struct timespec ts = { (time_t)(ms / 1000), (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

bool ctx_backoff(const struct ctx *c, uint64_t *delay_ms, uint64_t cap_ms)
{
	uint64_t left = ctx_remaining_ms(c);
	uint64_t d = *delay_ms ? *delay_ms : 100;

	if (left == 0)
		return false;
	if (d > cap_ms)
		d = cap_ms;
	if (d > left)
		d = left;
	sleep_ms(d);
	*delay_ms = d * 2;
	return ctx_remaining_ms(c) > 0;
}

const char *node_hostname(const struct ctx *c, char *buf, size_t len)
{
	char sys[NODE_HOSTNAME_MAX] = "";
	const char *name = c ? c->hostname : NULL;
	size_t n;

	if (len == 0)
		return NULL;
	buf[0] = '\0';
	if (!name) {
		if (gethostname(sys, sizeof(sys) - 1) < 0)
			return NULL;
		name = sys;
	}
	n = strlen(name);
	if (n >= len || !name_host_valid(name, NAME_UNDERSCORE))
		return NULL;
	memcpy(buf, name, n + 1);
	return buf;
}
