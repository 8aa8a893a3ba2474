/* SPDX-License-Identifier: MIT */
/*
 * The real rdma ops: libibverbs and librdmacm, linked only into the probe
 * helper (libexec/hpcinit-rdma-probe).  libibverbs reads SYSFS_PATH once,
 * at its first call, so init sets it before anything else when the run has
 * a fake root.  A probe looks its device up in the list that list() opened.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include "fsutil.h"
#include "rdma-probe.h"

static struct ibv_device **dev_list;
static int dev_count;

static int verbs_init(const struct ctx *c)
{
	if (c->root && c->root[0] && strcmp(c->root, "/") != 0) {
		char *sys = fs_rooted(c->root, "/sys");
		int r = setenv("SYSFS_PATH", sys, 1);

		free(sys);
		if (r < 0)
			return -errno;
	}
	return 0;
}

static int verbs_list(const struct ctx *c, struct strlist *ret)
{
	if (!dev_list) {
		errno = 0;
		dev_list = ibv_get_device_list(&dev_count);
		if (!dev_list)
			return errno ? -errno : -ENODEV;
	}
	for (int i = 0; i < dev_count; i++)
		strlist_push(ret, ibv_get_device_name(dev_list[i]));
	return 0;
}

static void fail(struct probe_result *res, enum probe_step s, int e)
{
	res->step = s;
	res->err = e ? e : EIO;
}

static void verbs_probe(const struct ctx *c, const char *name, uint64_t reg_mr,
			struct probe_io *io, struct probe_result *res)
{
	struct ibv_device *dev = NULL;
	struct ibv_context *ctx;
	struct ibv_device_attr da;
	struct ibv_pd *pd;
	int e;

	for (int i = 0; i < dev_count && !dev; i++)
		if (strcmp(ibv_get_device_name(dev_list[i]), name) == 0)
			dev = dev_list[i];
	if (!dev) {
		fail(res, STEP_OPEN, ENODEV);
		return;
	}
	probe_step(io, STEP_OPEN);
	errno = 0;
	ctx = ibv_open_device(dev);
	if (!ctx) {
		fail(res, STEP_OPEN, errno);
		return;
	}
	probe_step(io, STEP_QUERY_DEVICE);
	memset(&da, 0, sizeof(da));
	e = ibv_query_device(ctx, &da);
	if (e) {
		fail(res, STEP_QUERY_DEVICE, e);
		goto out_close;
	}
	snprintf(res->fw_ver, sizeof(res->fw_ver), "%s", da.fw_ver);
	res->phys_port_cnt = da.phys_port_cnt;
	probe_step(io, STEP_QUERY_PORT);
	for (unsigned p = 1; p <= da.phys_port_cnt && p <= RDMA_MAX_PORTS; p++) {
		struct ibv_port_attr pa;

		memset(&pa, 0, sizeof(pa));
		e = ibv_query_port(ctx, (uint8_t)p, &pa);
		if (e) {
			fail(res, STEP_QUERY_PORT, e);
			goto out_close;
		}
		res->port_state[p - 1] = pa.state;
	}
	probe_step(io, STEP_ALLOC_PD);
	errno = 0;
	pd = ibv_alloc_pd(ctx);
	if (!pd) {
		fail(res, STEP_ALLOC_PD, errno);
		goto out_close;
	}
	if (reg_mr) {
		void *buf;
		struct ibv_mr *mr;

		probe_step(io, STEP_REG_MR);
		/* Pin as an MPI rank would: without CAP_IPC_LOCK, against RLIMIT_MEMLOCK. */
		probe_drop_ipc_lock();
		buf = mmap(NULL, reg_mr, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (buf == MAP_FAILED) {
			fail(res, STEP_REG_MR, errno);
			goto out_pd;
		}
		errno = 0;
		mr = ibv_reg_mr(pd, buf, reg_mr, IBV_ACCESS_LOCAL_WRITE);
		if (!mr) {
			fail(res, STEP_REG_MR, errno);
			munmap(buf, reg_mr);
			goto out_pd;
		}
		ibv_dereg_mr(mr);
		munmap(buf, reg_mr);
	}
	res->step = STEP_DONE;
out_pd:
	ibv_dealloc_pd(pd);
out_close:
	ibv_close_device(ctx);
}

static bool link_local6(const struct in6_addr *a)
{
	return a->s6_addr[0] == 0xfe && (a->s6_addr[1] & 0xc0) == 0x80;
}

/* The real interfaces: only meaningful for the real root, and the only source there. */
static int verbs_if_addr(const struct ctx *c, const char *ifname, char *buf, size_t n)
{
	struct ifaddrs *ifa, *i;
	int r = -ENOENT;

	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (int pass = 0; pass < 2 && r == -ENOENT; pass++) {
		for (i = ifa; i; i = i->ifa_next) {
			if (!i->ifa_addr || strcmp(i->ifa_name, ifname) != 0)
				continue;
			if (pass == 0 && i->ifa_addr->sa_family == AF_INET) {
				inet_ntop(AF_INET, &((struct sockaddr_in *)(void *)i->ifa_addr)->sin_addr, buf,
					  (socklen_t)n);
				r = 0;
				break;
			}
			if (pass == 1 && i->ifa_addr->sa_family == AF_INET6) {
				const struct in6_addr *a6 = &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr;

				if (link_local6(a6))
					continue;
				inet_ntop(AF_INET6, a6, buf, (socklen_t)n);
				r = 0;
				break;
			}
		}
	}
	freeifaddrs(ifa);
	return r;
}

/*
 * Wait for the next rdma_cm event on ch (want), at most wait_ms; 0, or the
 * step's failure in res (ETIMEDOUT when no event came).
 */
static int cm_wait(struct rdma_event_channel *ch, enum rdma_cm_event_type want, enum probe_step step,
		   unsigned wait_ms, struct probe_result *res)
{
	struct pollfd pf = { .fd = ch->fd, .events = POLLIN };
	struct rdma_cm_event *ev = NULL;
	int ret = 0;

	if (poll(&pf, 1, (int)wait_ms) <= 0) {
		fail(res, step, ETIMEDOUT);
		return -1;
	}
	if (rdma_get_cm_event(ch, &ev) < 0) {
		fail(res, step, errno);
		return -1;
	}
	if (ev->event != want) {
		snprintf(res->event, sizeof(res->event), "%s", rdma_event_str(ev->event));
		fail(res, step, ev->status < 0 ? -ev->status : EHOSTUNREACH);
		ret = -1;
	}
	rdma_ack_cm_event(ev);
	return ret;
}

/*
 * rdma_resolve_addr is asked in attempts of at most RESOLVE_ATTEMPT_MS.  The
 * kernel (drivers/infiniband/core/addr.c) answers a request whose neighbour
 * is not resolved yet when a neighbour update arrives, else only when the
 * request's own timeout expires: a request that misses the update (the ARP
 * reply came before it was queued) waits for its whole timeout and then
 * resolves.  Seen on real VMs (rxe): a peer took 5.2 s with a 5 s timeout,
 * and at boot, with the whole budget as the timeout, the answer came after
 * the agent's deadline ("did not complete within 10000 ms") although the
 * peer was up.  Each new attempt looks at the neighbour again and sends a
 * new ARP; an address that never resolves still fails with ETIMEDOUT, as
 * the helper's answer, before the agent's deadline (RESOLVE_MARGIN_MS).
 */
#define RESOLVE_ATTEMPT_MS 1000
#define RESOLVE_MARGIN_MS 300

static void verbs_resolve(const struct ctx *c, const char *addr, unsigned timeout_ms, bool route,
			  struct probe_io *io, struct probe_result *res)
{
	struct sockaddr_storage ss;
	struct rdma_event_channel *ch = NULL;
	struct rdma_cm_id *id = NULL;
	uint64_t margin = timeout_ms / 10 < RESOLVE_MARGIN_MS ? timeout_ms / 10 : RESOLVE_MARGIN_MS;
	uint64_t end = now_ms() + timeout_ms - margin;

	(void)c;
	memset(&ss, 0, sizeof(ss));
	if (inet_pton(AF_INET, addr, &((struct sockaddr_in *)&ss)->sin_addr) == 1) {
		ss.ss_family = AF_INET;
	} else if (inet_pton(AF_INET6, addr, &((struct sockaddr_in6 *)&ss)->sin6_addr) == 1) {
		ss.ss_family = AF_INET6;
	} else {
		fail(res, STEP_RESOLVE_ADDR, EINVAL);
		return;
	}
	fail(res, STEP_RESOLVE_ADDR, ETIMEDOUT);        /* until an attempt says otherwise */
	for (;;) {
		uint64_t now = now_ms();
		unsigned attempt = end > now ? (unsigned)(end - now) : 0;
		int ok;

		if (attempt == 0)
			break;          /* res holds the last attempt's failure */
		if (attempt > RESOLVE_ATTEMPT_MS)
			attempt = RESOLVE_ATTEMPT_MS;
		probe_step(io, STEP_CM_CHANNEL);
		errno = 0;
		ch = rdma_create_event_channel();
		if (!ch) {
			fail(res, STEP_CM_CHANNEL, errno);
			return;
		}
		if (rdma_create_id(ch, &id, NULL, RDMA_PS_TCP) < 0) {
			fail(res, STEP_CM_CHANNEL, errno);
			goto out_channel;
		}
		probe_step(io, STEP_RESOLVE_ADDR);
		if (rdma_resolve_addr(id, NULL, (struct sockaddr *)&ss, (int)attempt) < 0) {
			fail(res, STEP_RESOLVE_ADDR, errno);
			goto out_id;
		}
		res->event[0] = '\0';
		/* The kernel answers at the attempt's timeout: a little longer for the event. */
		ok = cm_wait(ch, RDMA_CM_EVENT_ADDR_RESOLVED, STEP_RESOLVE_ADDR, attempt + 200, res) == 0;
		if (ok)
			break;
		if (res->err != ETIMEDOUT)
			goto out_id;    /* an answer (no route, unreachable): no use asking again */
		rdma_destroy_id(id);
		rdma_destroy_event_channel(ch);
		id = NULL;
		ch = NULL;
	}
	if (!id)
		return;
	if (id->verbs)
		snprintf(res->resolved_dev, sizeof(res->resolved_dev), "%s", ibv_get_device_name(id->verbs->device));
	if (route) {
		/* A peer: the path to it too (the SA's path record on IB; the neighbour on RoCE). */
		uint64_t now = now_ms();
		unsigned left = end > now + 100 ? (unsigned)(end - now) : 100;

		probe_step(io, STEP_RESOLVE_ROUTE);
		if (rdma_resolve_route(id, (int)left) < 0) {
			fail(res, STEP_RESOLVE_ROUTE, errno);
			goto out_id;
		}
		if (cm_wait(ch, RDMA_CM_EVENT_ROUTE_RESOLVED, STEP_RESOLVE_ROUTE, left + 200, res) < 0)
			goto out_id;
	}
	res->step = STEP_DONE;
	res->err = 0;
	res->event[0] = '\0';
out_id:
	rdma_destroy_id(id);
out_channel:
	rdma_destroy_event_channel(ch);
}

static void verbs_fini(void)
{
	if (dev_list)
		ibv_free_device_list(dev_list);
	dev_list = NULL;
	dev_count = 0;
}

const struct rdma_ops rdma_verbs_ops = {
	.name = "libibverbs",
	.init = verbs_init,
	.list = verbs_list,
	.probe = verbs_probe,
	.if_addr = verbs_if_addr,
	.resolve = verbs_resolve,
	.fini = verbs_fini,
};
