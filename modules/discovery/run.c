/* SPDX-License-Identifier: MIT */
/*
 * What the step (discovery.c) and its methods (shared.c, static.c, scan.c,
 * etcd.c) share about a run: the clock records are stamped and judged by,
 * the hook that does nothing, when expect is met, the notes moved on.  A
 * file below both, so no method calls back into the step that calls it.
 */
#include "config.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "discovery.h"
#include "escape.h"
#include "log.h"
#include "record.h"

static int64_t system_now(void)
{
	return (int64_t)time(NULL);
}

static const struct disc_clock system_clock = { system_now };
const struct disc_clock *disc_clock = &system_clock;

int64_t disc_now(void)
{
	return disc_clock->now();
}

int disc_nop(struct disc_run *run)
{
	(void)run;
	return 0;
}

bool disc_expect_met(struct disc_run *run)
{
	if (run->ready || run->found.n + 1 >= run->c->spec->discovery.expect)
		return true;
	for (size_t i = 0; i < run->found.n; i++)
		if (run->found.v[i].formed) {
			run->ready = true;
			snprintf(run->ready_why, sizeof(run->ready_why), "the cluster has formed: "
				 "%s's record says so", run->found.v[i].hostname);
			return true;
		}
	return false;
}

void disc_notes_commit(struct disc_run *run)
{
	report_take_findings(run->rep, &run->notes);      /* with the count of those not kept */
	report_free(&run->notes);
	report_init(&run->notes);
}

void disc_run_reset(struct disc_run *run)
{
	for (size_t i = 0; i < run->found.n; i++)
		peer_clear(&run->found.v[i]);
	free(run->found.v);
	memset(&run->found, 0, sizeof(run->found));
	report_free(&run->notes);
	report_init(&run->notes);
}

void disc_reject(struct disc_run *run, const char *why, const char *fmt, ...)
{
	struct strbuf raw = STRBUF_INIT, sb = STRBUF_INIT;
	char *tag;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&raw, fmt, ap);
	va_end(ap);
	/* Names in it are anyone's (file names, keys): one line, escaped, in the finding and the log. */
	esc_append(&sb, sb_str(&raw), raw.len, false);
	sb_free(&raw);
	tag = xasprintf("discovery.record.%s", why);
	report_cluster(&run->notes, tag, "%s", sb_str(&sb));
	free(tag);
	if (run->rejects.n < DISC_REJECT_LOG_MAX)
		strlist_push(&run->rejects, sb_str(&sb));
	run->rejected++;
	sb_free(&sb);
}

void disc_rejects_reset(struct disc_run *run)
{
	run->rejected = 0;
	strlist_free(&run->rejects);
}

void disc_rejects_log(const struct disc_run *run)
{
	for (size_t i = 0; i < run->rejects.n; i++)
		log_warn("%s", run->rejects.v[i]);
	if (run->rejected > run->rejects.n)
		log_warn("%zu more records rejected; the run's details list them (up to 1000)",
			 run->rejected - run->rejects.n);
}

int disc_record_parse(const char *cluster, const char *data, size_t len, const void *key, size_t key_len,
		      const char *host, struct peer *ret, char *err, size_t errlen)
{
	int r = record_parse(data, len, cluster, key, key_len, ret, err, errlen);

	if (r == 0 && strcmp(ret->hostname, host) != 0) {
		snprintf(err, errlen, "describes host %s, not %s", ret->hostname, host);
		peer_clear(ret);
		r = -EBADMSG;
	}
	return r;
}

struct disc_parsed *disc_parsed_new(const char *cluster, const char *data, size_t len, const void *key,
				    size_t key_len, const char *host)
{
	struct disc_parsed *pr = xcalloc(1, sizeof(*pr));
	char err[640] = "";

	pr->r = disc_record_parse(cluster, data, len, key, key_len, host, &pr->p, err, sizeof(err));
	if (pr->r < 0)
		pr->err = xstrdup(err);
	return pr;
}

void *disc_parsed_copy(void *arg, const void *prep)
{
	const struct disc_parsed *pr = prep;
	struct disc_parsed *cp = xcalloc(1, sizeof(*cp));

	(void)arg;
	cp->r = pr->r;
	cp->err = pr->err ? xstrdup(pr->err) : NULL;
	if (pr->r == 0)
		peer_copy(&cp->p, &pr->p);
	return cp;
}

void disc_parsed_free(void *prep)
{
	struct disc_parsed *pr = prep;

	if (pr->r == 0)
		peer_clear(&pr->p);
	free(pr->err);
	free(pr);
}

int disc_record_judge(struct disc_run *run, int r, const char *err, const char *name)
{
	if (r == -ENODATA)
		disc_reject(run, "truncated", "record %s: truncated (no \"...\" end marker); rejected", name);
	else if (r == -EKEYREJECTED)
		disc_reject(run, "bad-hmac", "record %s: bad HMAC (tampered, or written with another cluster "
			    "secret); rejected", name);
	else if (r == -EPROTONOSUPPORT)
		/* docs/formats.md: a new format is one this node would misread, so the node is left out */
		disc_reject(run, "format-newer", "record %s: %s; the node is left out until this node runs "
			    "a release that reads its format (docs/formats.md)", name, err);
	else if (r == -ENOKEY)
		disc_reject(run, "no-hmac", "record %s: no HMAC while cluster.secret_file is set; rejected", name);
	else if (r < 0)
		disc_reject(run, "malformed", "record %s: %s; rejected", name, err);
	return r;
}

int disc_record_take(struct disc_run *run, const char *data, size_t len, const void *key, size_t key_len,
		     const char *host, const char *name, struct peer *ret)
{
	char err[640] = "";
	int r = disc_record_parse(run->c->spec->cluster.name, data, len, key, key_len, host, ret, err,
				  sizeof(err));

	return disc_record_judge(run, r, err, name);
}

/* FNV-1a over the key's bytes, lowercased when nocase. */
static uint64_t key_hash(const char *key, bool nocase)
{
	uint64_t h = 14695981039346656037ULL;

	for (const unsigned char *c = (const unsigned char *)key; *c; c++) {
		h ^= (uint64_t)(nocase && *c >= 'A' && *c <= 'Z' ? *c + ('a' - 'A') : *c);
		h *= 1099511628211ULL;
	}
	return h;
}

bool disc_any_equal(const struct peerset *s, const char *(*key)(const struct peer *), bool nocase)
{
	size_t cap = 16, *slot;
	bool clash = false;

	while (cap < 2 * s->n)
		cap *= 2;
	slot = xcalloc(cap, sizeof(*slot));      /* index + 1; 0: empty */
	for (size_t i = 0; i < s->n && !clash; i++) {
		const char *ki = key(&s->v[i]);
		size_t k = (size_t)key_hash(ki, nocase) & (cap - 1);

		for (; slot[k]; k = (k + 1) & (cap - 1)) {
			const char *kj = key(&s->v[slot[k] - 1]);

			if ((nocase ? strcasecmp(kj, ki) : strcmp(kj, ki)) == 0) {
				clash = true;
				break;
			}
		}
		slot[k] = i + 1;
	}
	free(slot);
	return clash;
}

int disc_self_first(const struct peer *a, const struct peer *b)
{
	return a->self == b->self ? 0 : a->self ? -1 : 1;
}

struct peer **disc_sorted_index(struct peerset *s, int (*cmp)(const void *, const void *))
{
	struct peer **idx = xmalloc(s->n * sizeof(*idx));

	for (size_t i = 0; i < s->n; i++)
		idx[i] = &s->v[i];
	qsort(idx, s->n, sizeof(*idx), cmp);
	return idx;
}

void disc_compact(struct peerset *s)
{
	size_t w = 0;

	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].hostname)
			s->v[w++] = s->v[i];
	s->n = w;
}
