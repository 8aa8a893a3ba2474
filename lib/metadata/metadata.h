/* SPDX-License-Identifier: MIT */
/* The cloud's metadata service: instance facts and Scheduled Events (metadata.c). */
#ifndef HPCINIT_METADATA_H
#define HPCINIT_METADATA_H

#include <stdbool.h>
#include <stddef.h>

#include "hpcinit.h"
#include "proc.h"

#define MD_HELPER_NAME "hpcinit-metadata"  /* Scheduled Events (libcurl, json-c) */
#define IMDS_TIMEOUT_MS 2000            /* one GET of an instance fact */
#define MD_CALL_TIMEOUT_MS 5000         /* Scheduled Events: one request of the helper */
#define MD_RUN_MS 15000                 /* Scheduled Events: one run of the helper */

/*
 * GET url (http://<numeric address>[:port]/path, "Metadata: true") within
 * timeout_ms: 0 and the body's first line in out; -EINVAL (not such a URL),
 * -ETIMEDOUT, -EPROTO (not a 200 answer) or the connection's -errno, with
 * the reason in err.
 */
int imds_get_text(const char *url, unsigned timeout_ms, char *out, size_t n, char *err, size_t errn);

/*
 * An instance fact (name: "vm-size", "placement-group") from url, asked once
 * a boot: the answer of an earlier run this boot when it asked the same url
 * (MD_FACTS_DIR/<name>, in /run: a reboot, or a redeploy, forgets it), else
 * imds_get_text's, kept there by a run that may write.  0 and the fact in
 * out (*cached true when it came from the file), or imds_get_text's -errno
 * and err; a failure is never kept, so the next run asks again.
 */
#define MD_FACTS_DIR "/run/hpcinit/facts"
int md_fact(struct ctx *c, const char *name, const char *url, char *out, size_t n, bool *cached,
	    char *err, size_t errn);

/* A Scheduled Event that takes this VM away (Terminate or Preempt naming it). */
struct md_event {
	char *id, *type, *status;
	size_t others;                  /* the other VMs the event lists */
};
struct md_events {
	struct md_event *v;
	size_t n;
};
/*
 * The events at url that name this VM (its metadata name, or host): 0, or
 * -EHOSTUNREACH (the service did not answer), -ETIMEDOUT, -EPROTO (no
 * events document) or the helper's start error, what it said appended to
 * err (when not NULL).
 */
int md_events_get(const char *url, const char *host, struct md_events *ret, struct strbuf *err);
/* Acknowledge (start) event id: 0 or -errno as md_events_get. */
int md_events_ack(const char *url, const char *id, struct strbuf *err);
void md_events_free(struct md_events *ev);
/* The helper's answer ("self NAME", "event ID TYPE STATUS RESOURCES" lines; text is cut up). */
void md_events_parse(char *text, const char *host, struct md_events *ret);
/*
 * The next space-separated word of *p (moved past it, cut out in place), or
 * the rest of the line when rest; NULL at the end.  No length limit: the
 * helper prints an event's resources as one word of any length.  The one
 * reader of the helper's lines and of the watch's events child's.
 */
char *md_next_word(char **p, bool rest);
/* The helper's exit as -errno (the one mapping for the metadata service). */
int md_status(const struct proc_result *res);

#endif
