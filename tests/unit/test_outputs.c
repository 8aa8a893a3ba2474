/* SPDX-License-Identifier: MIT */
/*
 * outputs: a step's view holds the outputs it names and no other; what the
 * runner frees is the peers (the rdma and gpu outputs are their modules'
 * statics); the names in the table's messages.
 */
#include "config.h"

#include "../../agent/core/outputs.c"

#include "test.h"

static void test_copy(void)
{
	static const int rdma_static = 1, gpu_static = 2;
	struct peerset *ps = xcalloc(1, sizeof(*ps));
	struct outputs all = { .peers = ps, .rdma = (const void *)&rdma_static, .gpu = (const void *)&gpu_static };
	struct outputs v = { 0 };

	outputs_copy(&v, &all, OUT_PEERS);
	TEST_CHECK(v.peers == ps && v.rdma == NULL && v.gpu == NULL);
	v = (struct outputs){ 0 };
	outputs_copy(&v, &all, OUT_RDMA | OUT_GPU);
	TEST_CHECK(v.peers == NULL && v.rdma == all.rdma && v.gpu == all.gpu);
	v = (struct outputs){ 0 };
	outputs_copy(&v, &all, 0);
	TEST_CHECK(v.peers == NULL && v.rdma == NULL && v.gpu == NULL);
	/* back into the run's: only the named bit is written */
	v.peers = NULL;
	outputs_copy(&all, &v, OUT_GPU);
	TEST_CHECK(all.peers == ps && all.rdma == (const void *)&rdma_static && all.gpu == NULL);
	/* freed: the peers (valgrind and ASan see the rest), every field cleared */
	outputs_free(&all);
	TEST_CHECK(all.peers == NULL && all.rdma == NULL && all.gpu == NULL);
}

static void test_names(void)
{
	struct strbuf sb = STRBUF_INIT;

	outputs_names(&sb, OUT_PEERS | OUT_GPU);
	TEST_STREQ(sb_str(&sb), "peers, gpu");
	sb_reset(&sb);
	outputs_names(&sb, OUT_RDMA);
	TEST_STREQ(sb_str(&sb), "rdma");
	sb_reset(&sb);
	outputs_names(&sb, 0);
	TEST_STREQ(sb_str(&sb), "");
	sb_free(&sb);
	TEST_INTEQ((long)n_output_descs, 3);
}

int main(void)
{
	test_copy();
	test_names();
	TEST_EXIT();
}
