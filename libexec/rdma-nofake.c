/* SPDX-License-Identifier: MIT */
/* Production builds: no fixture ops (configure --enable-test-backends links fake.c instead). */
#include "config.h"

#include <stddef.h>

#include "rdma-probe.h"

const struct rdma_ops *const rdma_test_ops = NULL;
