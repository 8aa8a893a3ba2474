/* SPDX-License-Identifier: MIT */
/*
 * FAKE rdma ops for fixture trees (test only).  This machine has no RDMA
 * hardware, so the fixture says how each verbs call behaves.  The probe
 * helper (libexec/hpcinit-rdma-probe) picks this table only when --root is
 * a fake root holding /etc/hpcinit/fake-rdma, and it is linked only into
 * builds configured --enable-test-backends: a production build has none.  The file, one
 * directive a line ('#' comments):
 *
 *   probe DEV ok                      every call succeeds (the default)
 *   probe DEV hang CALL               CALL never returns (the parent kills it)
 *   probe DEV fail CALL ERRNO         CALL fails with ERRNO (e.g. ENODEV)
 *   ipoib IF ADDR RESULT              IF has address ADDR ("-": none);
 *                                     rdma_resolve_addr gives RESULT: a device
 *                                     name, an ERRNO, or "hang"
 *   peer ADDR RESULT [ROUTE]          a peer's address: rdma_resolve_addr gives
 *                                     RESULT (as above), rdma_resolve_route
 *                                     ROUTE: ok (the default), an ERRNO, or
 *                                     "hang".  An address no line names gives
 *                                     EADDRNOTAVAIL.
 *
 * CALL is ibv_open_device, ibv_query_device, ibv_query_port, ibv_alloc_pd,
 * ibv_reg_mr.  What is not faked: the device list comes from the fixture's
 * sysfs like libibverbs builds it (devices with a uverbs node); fw_ver and
 * port states come from sysfs; "ibv_reg_mr" really pins reg_mr bytes with
 * mlock(2) after dropping CAP_IPC_LOCK, so the kernel enforces the real
 * RLIMIT_MEMLOCK; and a hang is a real blocked child process.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "fsutil.h"
#include "rdma-probe.h"
#include "number.h"

#define FAKE_MAX_LINES 256

struct fake_line {
	char kind[8];           /* "probe", "ipoib" */
	char name[64];
	char a[64], b[64], c[64];
};

static struct fake_line fake[FAKE_MAX_LINES];
static size_t n_fake;

static int fake_init(const struct ctx *c)
{
	char *text = NULL;
	int r = fs_read(c, RDMA_FAKE_FILE, &text, NULL);

	n_fake = 0;
	if (r < 0)
		return r;
	for (char *line = text; line && *line && n_fake < FAKE_MAX_LINES;) {
		char *nl = strchr(line, '\n');
		struct fake_line *f = &fake[n_fake];

		if (nl)
			*nl = '\0';
		memset(f, 0, sizeof(*f));
		if (line[0] != '#') {
			const char *p = line;

			/* KIND NAME A [B [C]] */
			if (num_word_field(&p, f->kind, sizeof(f->kind)) && num_word_field(&p, f->name, sizeof(f->name)) &&
			    num_word_field(&p, f->a, sizeof(f->a))) {
				if (num_word_field(&p, f->b, sizeof(f->b)))
					(void)num_word_field(&p, f->c, sizeof(f->c));
				n_fake++;
			}
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return 0;
}

static const struct fake_line *fake_find(const char *kind, const char *name)
{
	for (size_t i = 0; i < n_fake; i++)
		if (strcmp(fake[i].kind, kind) == 0 && strcmp(fake[i].name, name) == 0)
			return &fake[i];
	return NULL;
}

static bool sysfs_get(const struct ctx *c, const char *path, char *buf, size_t n)
{
	char *text = NULL;

	buf[0] = '\0';
	if (fs_read(c, path, &text, NULL) < 0)
		return false;
	text[strcspn(text, "\r\n")] = '\0';
	snprintf(buf, n, "%s", text);
	free(text);
	return true;
}

/* Like libibverbs without its provider check: the ibdev of every uverbs node. */
static int fake_list(const struct ctx *c, struct strlist *ret)
{
	char *dir = ctx_path(c, "/sys/class/infiniband_verbs");
	struct strlist names = { 0 };
	DIR *d = opendir(dir);
	struct dirent *e;

	free(dir);
	if (!d)
		return -ENOSYS;   /* what libibverbs says without abi_version */
	while ((e = readdir(d)) && names.n < 256) {
		char path[320], dev[64];

		if (strncmp(e->d_name, "uverbs", 6) != 0 || strchr(e->d_name, '/'))
			continue;
		snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/%s/ibdev", e->d_name);
		if (sysfs_get(c, path, dev, sizeof(dev)) && dev[0])
			strlist_push(&names, dev);
	}
	closedir(d);
	for (size_t i = 0; i < names.n; i++)
		strlist_push(ret, names.v[i]);
	strlist_free(&names);
	return 0;
}

/* Announce a step; block for ever or fail there when the fixture says so. */
static bool fake_step(const struct fake_line *f, enum probe_step s, struct probe_io *io,
		      struct probe_result *res)
{
	probe_step(io, s);
	if (!f || strcmp(probe_step_call(s), f->b) != 0)
		return true;
	if (strcmp(f->a, "hang") == 0)
		for (;;)
			pause();
	if (strcmp(f->a, "fail") == 0) {
		int e = errno_from_name(f->c);

		res->step = s;
		res->err = e ? e : EIO;
		return false;
	}
	return true;
}

static void fake_probe(const struct ctx *c, const char *dev, uint64_t reg_mr, struct probe_io *io,
		       struct probe_result *res)
{
	const struct fake_line *f = fake_find("probe", dev);
	char path[192], buf[64];

	if (!fake_step(f, STEP_OPEN, io, res) || !fake_step(f, STEP_QUERY_DEVICE, io, res))
		return;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/fw_ver", dev);
	sysfs_get(c, path, res->fw_ver, sizeof(res->fw_ver));
	if (!fake_step(f, STEP_QUERY_PORT, io, res))
		return;
	for (unsigned p = 1; p <= RDMA_MAX_PORTS; p++) {
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/%u/state", dev, p);
		if (!sysfs_get(c, path, buf, sizeof(buf)))
			break;
		unsigned long long st = 0;

		/* "4: ACTIVE": the state's number first; a file that starts otherwise is state 0 (NOP) */
		(void)num_ull_prefix(buf, 10, UINT32_MAX, &st, NULL);
		res->port_state[p - 1] = (uint32_t)st;
		res->phys_port_cnt = p;
	}
	if (!fake_step(f, STEP_ALLOC_PD, io, res))
		return;
	if (reg_mr) {
		void *mem;

		if (!fake_step(f, STEP_REG_MR, io, res))
			return;
		/* Real pinning, charged to the real RLIMIT_MEMLOCK. */
		probe_drop_ipc_lock();
		mem = mmap(NULL, reg_mr, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (mem == MAP_FAILED) {
			res->step = STEP_REG_MR;
			res->err = errno;
			return;
		}
		/* The syscall itself: ASan's mlock() interceptor does nothing and returns 0. */
		if (syscall(SYS_mlock, mem, (size_t)reg_mr) < 0) {
			res->step = STEP_REG_MR;
			res->err = errno == EPERM ? ENOMEM : errno;
			munmap(mem, reg_mr);
			return;
		}
		syscall(SYS_munlock, mem, (size_t)reg_mr);
		munmap(mem, reg_mr);
	}
	res->step = STEP_DONE;
}

static int fake_if_addr(const struct ctx *c, const char *ifname, char *buf, size_t n)
{
	const struct fake_line *f = fake_find("ipoib", ifname);

	if (!f || strcmp(f->a, "-") == 0)
		return -ENOENT;
	snprintf(buf, n, "%s", f->a);
	return 0;
}

static void fake_resolve(const struct ctx *c, const char *addr, unsigned timeout_ms, bool route,
			 struct probe_io *io, struct probe_result *res)
{
	const struct fake_line *f = NULL;

	for (size_t i = 0; i < n_fake && !f; i++)
		if (strcmp(fake[i].kind, route ? "peer" : "ipoib") == 0 &&
		    strcmp(route ? fake[i].name : fake[i].a, addr) == 0)
			f = &fake[i];
	if (f && route) {
		/* "peer ADDR RESULT [ROUTE]": name is ADDR, a RESULT, b ROUTE */
		static struct fake_line pl;

		pl = *f;
		snprintf(pl.b, sizeof(pl.b), "%s", f->a);
		snprintf(pl.c, sizeof(pl.c), "%s", f->b[0] ? f->b : "ok");
		f = &pl;
	}
	probe_step(io, STEP_CM_CHANNEL);
	probe_step(io, STEP_RESOLVE_ADDR);
	if (!f || !f->b[0]) {
		res->step = STEP_RESOLVE_ADDR;
		res->err = EADDRNOTAVAIL;
		return;
	}
	if (strcmp(f->b, "hang") == 0)
		for (;;)
			pause();
	if (errno_from_name(f->b)) {
		res->step = STEP_RESOLVE_ADDR;
		res->err = errno_from_name(f->b);
		return;
	}
	snprintf(res->resolved_dev, sizeof(res->resolved_dev), "%s", f->b);
	if (route) {
		probe_step(io, STEP_RESOLVE_ROUTE);
		if (strcmp(f->c, "hang") == 0)
			for (;;)
				pause();
		if (errno_from_name(f->c)) {
			res->step = STEP_RESOLVE_ROUTE;
			res->err = errno_from_name(f->c);
			return;
		}
	}
	res->step = STEP_DONE;
}

static const struct rdma_ops rdma_fake_ops = {
	.name = "FAKE fixture ops",
	.init = fake_init,
	.list = fake_list,
	.probe = fake_probe,
	.if_addr = fake_if_addr,
	.resolve = fake_resolve,
	.fini = NULL,
};

const struct rdma_ops *const rdma_test_ops = &rdma_fake_ops;
