/* SPDX-License-Identifier: MIT */
#ifndef HPCINIT_ISO_H
#define HPCINIT_ISO_H
/*
 * The answer an isolated step's child sends the runner (iso.c): its return
 * value, its report as JSON, its peers (record_pack), then "E".  For the
 * runner only (runner.c's run_isolated).
 */
#include <stddef.h>

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

#endif
