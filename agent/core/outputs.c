/* SPDX-License-Identifier: MIT */
/* The typed outputs' table (outputs.h): which field each bit is, and who frees it. */
#include "config.h"

#include <stdbool.h>
#include <string.h>

#include "outputs.h"
#include "record.h"

static void free_peers(void *p)
{
	peerset_free(p);
}

const struct output_desc output_descs[] = {
	{ OUT_PEERS, "peers", offsetof(struct outputs, peers), free_peers },
	{ OUT_RDMA, "rdma", offsetof(struct outputs, rdma), NULL },     /* the rdma module's static */
	{ OUT_GPU, "gpu", offsetof(struct outputs, gpu), NULL },        /* the gpu module's static */
};
#define N_OUTPUTS (sizeof(output_descs) / sizeof(output_descs[0]))
const size_t n_output_descs = N_OUTPUTS;

_Static_assert(sizeof(struct outputs) == N_OUTPUTS * sizeof(void *),
	       "every field of struct outputs is a pointer with a line in output_descs");

static void *output_get(const struct outputs *o, const struct output_desc *d)
{
	void *p;

	memcpy(&p, (const char *)o + d->offset, sizeof(p));
	return p;
}

void outputs_copy(struct outputs *dst, const struct outputs *src, unsigned bits)
{
	for (size_t k = 0; k < N_OUTPUTS; k++)
		if (bits & output_descs[k].id)
			memcpy((char *)dst + output_descs[k].offset,
			       (const char *)src + output_descs[k].offset, sizeof(void *));
}

void outputs_free(struct outputs *o)
{
	for (size_t k = 0; k < N_OUTPUTS; k++) {
		void *p = output_get(o, &output_descs[k]);

		if (p && output_descs[k].free)
			output_descs[k].free(p);
	}
	memset(o, 0, sizeof(*o));
}

void outputs_names(struct strbuf *sb, unsigned bits)
{
	bool first = true;

	for (size_t k = 0; k < N_OUTPUTS; k++)
		if (bits & output_descs[k].id) {
			sb_printf(sb, "%s%s", first ? "" : ", ", output_descs[k].name);
			first = false;
		}
}
