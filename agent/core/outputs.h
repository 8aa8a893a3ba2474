/* SPDX-License-Identifier: MIT */
/*
 * The typed outputs (struct outputs in hpcinit.h), one line each: its bit,
 * its name in messages, its field and who frees it (outputs.c).  For the
 * runner (runner.c) and an isolated step's child (iso.c).
 */
#ifndef HPCINIT_OUTPUTS_H
#define HPCINIT_OUTPUTS_H

#include <stddef.h>

#include "hpcinit.h"
#include "strbuf.h"

struct output_desc {
	unsigned id;
	const char *name;
	size_t offset;
	void (*free)(void *);
};
extern const struct output_desc output_descs[];
extern const size_t n_output_descs;

/* Copy the outputs named by bits from src to dst (the pointers: the values stay src's). */
void outputs_copy(struct outputs *dst, const struct outputs *src, unsigned bits);
/* Free what o owns (the peers), and clear it. */
void outputs_free(struct outputs *o);
/* The names of bits, ", " between them, appended to sb. */
void outputs_names(struct strbuf *sb, unsigned bits);

#endif
