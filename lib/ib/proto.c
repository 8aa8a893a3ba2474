/* SPDX-License-Identifier: MIT */
/*
 * What the rdma probe helper (libexec/hpcinit-rdma-probe) and the agent say
 * to each other: one line a record on the helper's stdout, written as it
 * goes, so a probe killed at its deadline still tells which call it was in.
 *
 *   backend NAME [FIXTURE]      the ops table in use (list)
 *   init-error ERRNO            list-error ERRNO
 *   device NAME                 a device the verbs library lists
 *   addr ADDRESS                noaddr ERRNO      (ifaddr)
 *   step N                      about to make call N (enum probe_step)
 *   fw TEXT | resolved DEV | event NAME
 *   result STEP ERR MEMLOCK_CUR MEMLOCK_MAX PORTS     last line of a probe
 *
 * Numbers are decimal; MEMLOCK_* 18446744073709551615 means unlimited.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ib/probe.h"
#include "number.h"

static const struct { int e; const char *name; } errno_names[] = {
	{ EPERM, "EPERM" }, { ENOENT, "ENOENT" }, { EINTR, "EINTR" }, { EIO, "EIO" },
	{ ENXIO, "ENXIO" }, { E2BIG, "E2BIG" }, { EBADF, "EBADF" }, { EAGAIN, "EAGAIN" },
	{ ENOMEM, "ENOMEM" }, { EACCES, "EACCES" }, { EFAULT, "EFAULT" }, { EBUSY, "EBUSY" },
	{ EEXIST, "EEXIST" }, { ENODEV, "ENODEV" }, { EINVAL, "EINVAL" }, { ENFILE, "ENFILE" },
	{ EMFILE, "EMFILE" }, { ENOSPC, "ENOSPC" }, { ERANGE, "ERANGE" }, { ENOSYS, "ENOSYS" },
	{ EPROTONOSUPPORT, "EPROTONOSUPPORT" }, { EOPNOTSUPP, "EOPNOTSUPP" },
	{ EAFNOSUPPORT, "EAFNOSUPPORT" }, { EADDRNOTAVAIL, "EADDRNOTAVAIL" },
	{ ENETDOWN, "ENETDOWN" }, { ENETUNREACH, "ENETUNREACH" }, { ECONNREFUSED, "ECONNREFUSED" },
	{ EHOSTUNREACH, "EHOSTUNREACH" }, { ETIMEDOUT, "ETIMEDOUT" }, { ENODATA, "ENODATA" },
	{ EPROTO, "EPROTO" }, { ECONNRESET, "ECONNRESET" }, { ENOTSUP, "ENOTSUP" },
};

const char *errno_name(int e)
{
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (errno_names[i].e == e)
			return errno_names[i].name;
	return "errno";
}

int errno_from_name(const char *name)
{
	for (size_t i = 0; i < sizeof(errno_names) / sizeof(errno_names[0]); i++)
		if (strcmp(errno_names[i].name, name) == 0)
			return errno_names[i].e;
	return 0;
}

const char *probe_step_call(enum probe_step s)
{
	switch (s) {
	case STEP_NONE:
		return "the probe start";
	case STEP_OPEN:
		return "ibv_open_device";
	case STEP_QUERY_DEVICE:
		return "ibv_query_device";
	case STEP_QUERY_PORT:
		return "ibv_query_port";
	case STEP_ALLOC_PD:
		return "ibv_alloc_pd";
	case STEP_REG_MR:
		return "ibv_reg_mr";
	case STEP_CM_CHANNEL:
		return "rdma_create_id";
	case STEP_RESOLVE_ADDR:
		return "rdma_resolve_addr";
	case STEP_RESOLVE_ROUTE:
		return "rdma_resolve_route";
	case STEP_DONE:
		return "the probe end";
	}
	return "?";
}

void probe_emit_step(int fd, enum probe_step s)
{
	dprintf(fd, "step %d\n", (int)s);
}

void probe_emit_result(int fd, const struct probe_result *res)
{
	if (res->fw_ver[0])
		dprintf(fd, "fw %s\n", res->fw_ver);
	if (res->resolved_dev[0])
		dprintf(fd, "resolved %s\n", res->resolved_dev);
	if (res->event[0])
		dprintf(fd, "event %s\n", res->event);
	dprintf(fd, "result %d %d %" PRIu64 " %" PRIu64 " %u\n", (int)res->step, (int)res->err,
		res->memlock_cur, res->memlock_max, res->phys_port_cnt);
}

/* "key rest" lines; the value runs to the end of the line (at most n-1 bytes kept). */
static const char *line_value(const char *line, size_t len, const char *key, char *buf, size_t n)
{
	size_t k = strlen(key);

	if (len <= k || strncmp(line, key, k) != 0 || line[k] != ' ')
		return NULL;
	snprintf(buf, n, "%.*s", (int)(len - k - 1), line + k + 1);
	return buf;
}

void probe_parse(const char *text, size_t len, struct probe_parsed *ret)
{
	char v[128];

	memset(ret, 0, sizeof(*ret));
	ret->last_step = STEP_NONE;
	for (const char *p = text; p < text + len;) {
		const char *nl = memchr(p, '\n', (size_t)(text + len - p));
		size_t n;

		if (!nl)
			break;          /* a line cut by the kill: not a record */
		n = (size_t)(nl - p);
		long long step;

		if (line_value(p, n, "step", v, sizeof(v))) {
			if (num_ll(v, 0, INT_MAX, &step))       /* else the last step stays the one known */
				ret->last_step = (int)step;
		} else if (line_value(p, n, "fw", v, sizeof(v))) {
			snprintf(ret->res.fw_ver, sizeof(ret->res.fw_ver), "%.*s", (int)sizeof(ret->res.fw_ver) - 1, v);
		} else if (line_value(p, n, "resolved", v, sizeof(v))) {
			snprintf(ret->res.resolved_dev, sizeof(ret->res.resolved_dev), "%.*s", (int)sizeof(ret->res.resolved_dev) - 1, v);
		} else if (line_value(p, n, "event", v, sizeof(v))) {
			snprintf(ret->res.event, sizeof(ret->res.event), "%.*s", (int)sizeof(ret->res.event) - 1, v);
		} else if (line_value(p, n, "result", v, sizeof(v))) {
			const char *q = v;
			long long st, err;
			unsigned long long cur, max, ports;

			if (num_ll_field(&q, INT_MIN, INT_MAX, &st) && num_ll_field(&q, INT_MIN, INT_MAX, &err) &&
			    num_ull_field(&q, 10, UINT64_MAX, &cur) && num_ull_field(&q, 10, UINT64_MAX, &max) &&
			    num_ull_field(&q, 10, UINT_MAX, &ports)) {
				ret->res.step = (int)st;
				ret->res.err = (int)err;
				ret->res.memlock_cur = cur;
				ret->res.memlock_max = max;
				ret->res.phys_port_cnt = (unsigned)ports;
				ret->have_result = true;
			}
		}
		p = nl + 1;
	}
}
