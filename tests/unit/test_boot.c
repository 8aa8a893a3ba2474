/* SPDX-License-Identifier: MIT */
/* boot: this boot's phases from a fake /proc and cloud-init status, and from runs. */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../../agent/core/boot.c"
#include "test.h"
#include "testfs.h"

static void mkdir_in(const char *root, const char *rel)
{
	char *p = fs_rooted(root, rel);

	mkdir(p, 0755);
	free(p);
}

/* A run of every step with status st, except those named in fail. */
static void make_run(struct run_result *res, enum rstatus st, const char *fail, int code)
{
	size_t n = 0;

	while (module_table[n])
		n++;
	memset(res, 0, sizeof(*res));
	res->n = n;
	res->reports = xcalloc(n, sizeof(*res->reports));
	res->ran = xcalloc(n, sizeof(*res->ran));
	for (size_t i = 0; i < n; i++) {
		report_init(&res->reports[i]);
		res->ran[i] = true;
		res->reports[i].status = fail && strcmp(module_table[i]->name, fail) == 0 ? ST_FAILED : st;
		res->reports[i].duration_ms = 10;
	}
	res->duration_ms = 10 * n;
	res->exit_code = code;
}

static void free_run(struct run_result *res)
{
	for (size_t i = 0; i < res->n; i++)
		report_free(&res->reports[i]);
	free(res->reports);
	free(res->ran);
}

static long long at(const struct boot *b, const char *name)
{
	for (size_t i = 0; i < b->n; i++)
		if (strcmp(b->ph[i].name, name) == 0)
			return b->ph[i].at_ms;
	return -1;
}

int main(void)
{
	char root[] = "/tmp/hpcinit-boot-XXXXXX";
	struct spec spec = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY };
	struct run_result res;
	struct boot b;
	long long ready;

	TEST_CHECK(mkdtemp(root) != NULL);
	c.root = root;
	test_put(root, "/proc/stat", "cpu  1 2 3\nbtime 1764000000\n");
	/* comm with spaces and a parenthesis: fields count from the last ')' */
	test_put(root, "/proc/1/stat", "1 (sys (d) x) S 0 1 1 0 -1 4194560 1 2 3 4 5 6 7 8 20 0 1 0 215 1 1\n");
	test_put(root, "/run/cloud-init/status.json",
		 "{\"v1\": {\"init-local\": {\"start\": 1764000004.5, \"finished\": null},"
		 " \"modules-final\": {\"start\": null, \"finished\": null}}}\n");
	mkdir_in(root, "/run/hpcinit");

	/* A failed first apply (nfs failed): steps and fabric recorded, no mounts, no ready, no slurm. */
	make_run(&res, ST_CHANGED, "nfs", 1);
	boot_update(&c, &res, true, &b);
	TEST_INTEQ(b.boot_ms, 1764000000000LL);
	TEST_INTEQ(at(&b, "kernel"), 1764000002150LL);
	TEST_INTEQ(at(&b, "cloud-init.start"), 1764000004500LL);
	TEST_INTEQ(at(&b, "cloud-init.end"), -1);          /* still running */
	TEST_CHECK(at(&b, "step.nfs") > 0);
	TEST_CHECK(at(&b, "fabric") > 0);
	TEST_INTEQ(at(&b, "mounts"), -1);
	TEST_INTEQ(at(&b, "ready"), -1);
	TEST_INTEQ(at(&b, "slurm"), -1);
	TEST_CHECK(at(&b, "step.rdma") < at(&b, "step.nfs"));
	free_run(&res);

	/* The repair: ready, mounts and slurm now; the steps keep the first apply's times. */
	test_put(root, "/run/cloud-init/status.json",
		 "{\"v1\": {\"init-local\": {\"start\": 1764000004.5}, \"modules-final\": {\"finished\": 1764000042.25}}}\n");
	{
		long long nfs1 = at(&b, "step.nfs");

		make_run(&res, ST_OK, NULL, 0);
		boot_update(&c, &res, true, &b);
		TEST_INTEQ(at(&b, "step.nfs"), nfs1);
	}
	TEST_INTEQ(at(&b, "cloud-init.end"), 1764000042250LL);
	TEST_CHECK(at(&b, "mounts") > 0);
	TEST_CHECK(at(&b, "ready") > 0);
	TEST_CHECK(at(&b, "slurm") > 0);
	ready = at(&b, "ready");
	free_run(&res);
	/* sorted by time */
	for (size_t i = 1; i < b.n; i++)
		TEST_CHECK(b.ph[i - 1].at_ms <= b.ph[i].at_ms);

	/* A later degraded apply does not move "ready". */
	make_run(&res, ST_DEGRADED, NULL, 3);
	boot_update(&c, &res, true, &b);
	TEST_INTEQ(at(&b, "ready"), ready);
	free_run(&res);

	/* A head's slurm step never registers it. */
	test_rm_rf(root);
	TEST_CHECK(mkdtemp(strcpy(root, "/tmp/hpcinit-boot-XXXXXX")) != NULL);
	mkdir_in(root, "/run");
	mkdir_in(root, "/run/hpcinit");
	spec.cluster.role = ROLE_HEAD;
	make_run(&res, ST_OK, NULL, 0);
	boot_update(&c, &res, true, &b);
	TEST_INTEQ(at(&b, "slurm"), -1);
	TEST_CHECK(at(&b, "ready") > 0);
	TEST_INTEQ(b.boot_ms, 0);                        /* no /proc/stat: unknown */
	free_run(&res);
	test_rm_rf(root);
	TEST_EXIT();
}
