/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-rdma-probe: the verbs and rdma_cm calls of the rdma step, in a
 * process of their own so the agent never maps libibverbs or librdmacm (an
 * Ethernet image needs no rdma packages; a node without an rdma section
 * never loads them).  The agent runs one of these per device under
 * rdma.open_timeout through its child engine and kills it when a call does
 * not return; the answer is the text protocol of lib/ib/proto.c on
 * stdout, each step announced before its call.
 *
 *   hpcinit-rdma-probe [--root DIR] list
 *   hpcinit-rdma-probe [--root DIR] [--memlock unlimited|BYTES] probe DEVICE REG_MR_BYTES
 *   hpcinit-rdma-probe [--root DIR] ifaddr INTERFACE
 *   hpcinit-rdma-probe [--root DIR] [--memlock unlimited|BYTES] resolve ADDRESS TIMEOUT_MS
 *   hpcinit-rdma-probe [--root DIR] [--memlock unlimited|BYTES] route ADDRESS TIMEOUT_MS
 *
 * resolve: rdma_resolve_addr of this node's own (IPoIB) address; route: a
 * peer's, rdma_resolve_addr then rdma_resolve_route.
 *
 * Exit status: 0 when it answered (the answer may be a failure), 2 on usage.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "rdma-probe.h"
#include "number.h"

static int usage(void)
{
	fprintf(stderr, "usage: hpcinit-rdma-probe [--root DIR] [--memlock unlimited|BYTES] "
		"list | probe DEVICE REG_MR_BYTES | ifaddr INTERFACE | resolve|route ADDRESS TIMEOUT_MS\n");
	return 2;
}

static bool parse_u64(const char *s, uint64_t *ret)
{
	unsigned long long v;

	if (!num_ull(s, 10, ULLONG_MAX, &v))
		return false;
	*ret = v;
	return true;
}

/* The fixture ops only on a fake root that asks for them, and only in a test build. */
static const struct rdma_ops *select_ops(const struct ctx *c)
{
	if (rdma_test_ops && c->root[0] && strcmp(c->root, "/") != 0 && fs_exists(c, RDMA_FAKE_FILE))
		return rdma_test_ops;
	return &rdma_verbs_ops;
}

int main(int argc, char **argv)
{
	struct spec spec;
	struct ctx c = { .spec = &spec, .root = "" };
	const struct rdma_ops *ops;
	struct probe_io io = { 1 };
	struct probe_result res;
	uint64_t memlock = 0, n = 0;
	bool set_memlock = false;
	int i = 1, r;

	memset(&spec, 0, sizeof(spec));
	memset(&res, 0, sizeof(res));
	for (; i + 1 < argc && strncmp(argv[i], "--", 2) == 0; i += 2) {
		if (strcmp(argv[i], "--root") == 0) {
			c.root = argv[i + 1];
		} else if (strcmp(argv[i], "--memlock") == 0) {
			set_memlock = true;
			if (strcmp(argv[i + 1], "unlimited") == 0)
				memlock = UINT64_MAX;
			else if (!parse_u64(argv[i + 1], &memlock))
				return usage();
		} else {
			return usage();
		}
	}
	if (i >= argc)
		return usage();
	ops = select_ops(&c);
	r = ops->init(&c);
	if (strcmp(argv[i], "list") == 0 && argc == i + 1) {
		struct strlist names = { 0 };

		printf("backend %s\n", ops->name);
		if (r < 0)
			printf("init-error %d\n", -r);
		r = ops->list(&c, &names);
		if (r < 0)
			printf("list-error %d\n", -r);
		for (size_t k = 0; k < names.n; k++)
			printf("device %s\n", names.v[k]);
		strlist_free(&names);
	} else if (strcmp(argv[i], "ifaddr") == 0 && argc == i + 2) {
		char addr[64];

		r = ops->if_addr(&c, argv[i + 1], addr, sizeof(addr));
		if (r < 0)
			printf("noaddr %d\n", -r);
		else
			printf("addr %s\n", addr);
	} else if ((strcmp(argv[i], "probe") == 0 || strcmp(argv[i], "resolve") == 0 ||
		    strcmp(argv[i], "route") == 0) &&
		   argc == i + 3 && parse_u64(argv[i + 2], &n)) {
		if (set_memlock)
			probe_raise_memlock(memlock);
		probe_read_memlock(&res);
		if (argv[i][0] == 'p') {
			struct strlist names = { 0 };

			ops->list(&c, &names);  /* verbs: the device list the probe opens from */
			strlist_free(&names);
			ops->probe(&c, argv[i + 1], n, &io, &res);
		} else {
			ops->resolve(&c, argv[i + 1], n > 600000 ? 600000 : (unsigned)n, argv[i][1] == 'o', &io, &res);
		}
		probe_emit_result(1, &res);
	} else {
		return usage();
	}
	fflush(stdout);
	if (ops->fini)
		ops->fini();
	return 0;
}
