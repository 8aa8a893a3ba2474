/* SPDX-License-Identifier: MIT */
#ifndef HPCINIT_ISO_H
#define HPCINIT_ISO_H
/*
 * Isolated steps (iso.c): a step's hook run in a child under its deadline,
 * and the answer the child sends the runner: its return value, its report as
 * JSON, its peers (record_pack), then "E".  For the runner only (runner.c).
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "hpcinit.h"

#include "record.h"
#include "report.h"
#include "strbuf.h"

/* The whole answer into sb: "R r", the report's JSON, one frame a peer (peers may be NULL), "E". */
void iso_answer(struct strbuf *sb, int r, const char *report_json, const struct peerset *peers);

/*
 * Read an answer back: *ret the step's return value, rep its report,
 * *ret_peers its peers (NULL when it sent none; the caller frees them).
 * 0: a whole answer.  -ENODATA: cut short (no report, no "E": the child
 * died).  -EBADMSG: a whole answer with a peer the runner cannot read back;
 * why says which.  Never a shorter list: on any error nothing is kept.
 */
int iso_parse(const char *text, size_t len, struct report *rep, struct peerset **ret_peers, int *ret,
	      struct strbuf *why);

/*
 * Whether text holds a whole answer: true once its "E" line is in (or what
 * is no frame at all: iso_parse then says why), false while a frame is still
 * coming.  *pos (0 at first) keeps where the scan goes on, so reading an
 * answer a pipe's worth at a time scans it once.  For a child that stays
 * after its answer (runner.c's announce): no end of file tells it is whole.
 */
bool iso_whole(const char *text, size_t len, size_t *pos);

/*
 * m's hook in a child (module m resolved: its timeout_ms set), reading its
 * answer until c->deadline_ms plus a grace: the hook's return value, its
 * report in rep, its peers in view.  stay (the run's outputs before m, or
 * NULL): the child stays after its answer, with what the step opened, for
 * m's announce (iso_announce, or iso_end) and for later steps that may share
 * it (module .shares_child): iso_run runs such a step there, not in a child
 * of its own, while the child holds its inputs as they are.
 */
int iso_run(struct ctx *c, const struct module *m, int (*hook)(struct ctx *, struct report *),
	    struct report *rep, struct outputs *view, uint64_t tmo, const struct outputs *stay);
/* A step in the runner's own process set these outputs: a child that stays holds old ones. */
void iso_outputs_set(unsigned bits);
/* The pid of the child that stays for module name's announce; 0: none. */
pid_t iso_staying(const char *name);
/* The announce in the child that stayed, with c->node, under the step's deadline from now. */
int iso_announce(struct ctx *c, struct report *rep);
/* Nothing to announce: the child that stayed ends (its stdin closed), reaped. */
void iso_end(void);

#endif
