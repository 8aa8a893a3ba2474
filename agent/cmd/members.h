/* SPDX-License-Identifier: MIT */
/* hpcinit members: every member's state, from the rendezvous (members.c). */
#ifndef HPCINIT_MEMBERS_H
#define HPCINIT_MEMBERS_H

#include <stdbool.h>
#include <stdio.h>

struct ctx;

/* Print every member's state (table, or JSON with json) to out.  Returns the exit code. */
int members_main(struct ctx *c, bool json, FILE *out);

#endif
