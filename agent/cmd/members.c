/* SPDX-License-Identifier: MIT */
/*
 * hpcinit members: from any node, every member's state as its record says
 * it (ready, degraded or failed with the worst finding's tag, the boot's
 * time to ready), read from the rendezvous (discovery.method shared or
 * etcd) -- the cluster's bootstrap view without a central server.
 *
 * The command reads the collection "nodes" through lib/rendezvous and checks
 * every record as discovery does (record.c: format, cluster, the HMAC with
 * the cluster secret); it writes nothing.  The reading runs in a child under
 * a deadline (a shared directory whose server is gone must not hang the
 * command), which hands back the finished text.  Every name that reaches the
 * output is escaped (escape.c, json.c); the table lists the members that are
 * not ready first and at most MEMBERS_LINES_MAX lines without -v.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "escape.h"
#include "json.h"
#include "members.h"
#include "proc.h"
#include "record.h"
#include "rendezvous/rendezvous.h"

#define MEMBERS_TIMEOUT_MS 30000        /* the whole reading, in its child */
#define MEMBERS_LINES_MAX 100           /* the table's member lines without -v */
#define MEMBERS_REJECTS_MAX 10          /* rejected entries named */
#define MEMBERS_OUT_MAX (64u << 20)     /* the child's answer */
#define MEMBERS_SKEW_S 60               /* a shared record is expired after its lease and this */
#define NAME_SHOWN_MAX 64               /* bytes of an entry's name shown when it is rejected */

/* The states shown, worst first (the table's order); expired: a shared record past its lease. */
enum shown { SHOWN_FAILED, SHOWN_DEGRADED, SHOWN_EXPIRED, SHOWN_UNKNOWN, SHOWN_READY, SHOWN_N };
static const char *const shown_names[SHOWN_N] = { "failed", "degraded", "expired", "unknown", "ready" };

struct members {
	struct ctx *c;
	char *key;                      /* the cluster secret, NULL without one */
	size_t key_len;
	bool shared;                    /* the dir backend: file names end in ".rec" */
	int64_t now, lease_s;
	struct peerset set;
	size_t rejected;
	struct strlist rejects;         /* "name: why", escaped, the first MEMBERS_REJECTS_MAX */
	struct strbuf out;              /* the answer: "rc=N\n" and the text */
};

struct parsed {
	struct peer p;
	int r;
	char err[200];
};

static enum shown shown_of(const struct members *m, const struct peer *p)
{
	if (m->shared && m->now - p->updated > m->lease_s + MEMBERS_SKEW_S)
		return SHOWN_EXPIRED;
	switch (p->state) {
	case PEER_FAILED:
		return SHOWN_FAILED;
	case PEER_DEGRADED:
		return SHOWN_DEGRADED;
	case PEER_READY:
		return SHOWN_READY;
	case PEER_UNKNOWN:
		break;
	}
	return SHOWN_UNKNOWN;
}

/* The host an entry's name is for: the shared directory's "<host>.rec", etcd's "<host>". */
static bool host_of(const struct members *m, const char *name, char *host, size_t size)
{
	size_t n = strlen(name);

	if (m->shared) {
		if (n <= 4 || strcmp(name + n - 4, ".rec") != 0)
			return false;
		n -= 4;
	}
	if (n == 0 || n >= size)
		return false;
	memcpy(host, name, n);
	host[n] = '\0';
	return true;
}

static void reject(struct members *m, const char *name, const char *why)
{
	struct strbuf sb = STRBUF_INIT;
	size_t n = strlen(name);

	m->rejected++;
	if (m->rejects.n >= MEMBERS_REJECTS_MAX)
		return;
	esc_append(&sb, name, n > NAME_SHOWN_MAX ? NAME_SHOWN_MAX : n, false);
	sb_append(&sb, n > NAME_SHOWN_MAX ? "...: " : ": ");
	esc_append(&sb, why, strlen(why), false);
	strlist_push_take(&m->rejects, sb_steal(&sb));
}

static bool want_entry(void *arg, const char *name)
{
	const struct members *m = arg;

	return !m->shared || (name[0] != '.' && strlen(name) > 4 && strcmp(name + strlen(name) - 4, ".rec") == 0);
}

/* On any thread: the record parsed and checked (its HMAC with the secret). */
static void *prep_entry(void *arg, const struct rv_entry *e)
{
	const struct members *m = arg;
	struct parsed *x;

	if (!e->value)
		return NULL;
	x = xcalloc(1, sizeof(*x));
	x->r = record_parse(e->value, e->len, m->c->spec->cluster.name, m->key, m->key_len, &x->p, x->err,
			    sizeof(x->err));
	return x;
}

static void prep_free(void *prep)
{
	struct parsed *x = prep;

	if (x)
		peer_clear(&x->p);
	free(x);
}

static int take_entry(void *arg, const struct rv_entry *e)
{
	struct members *m = arg;
	struct parsed *x = e->prep;
	char host[256], why[320];

	if (e->refused || !x) {
		reject(m, e->name, e->why ? e->why : "unreadable");
	} else if (x->r < 0) {
		reject(m, e->name, x->err);
	} else if (!host_of(m, e->name, host, sizeof(host)) || strcmp(host, x->p.hostname) != 0) {
		snprintf(why, sizeof(why), "describes host %s", x->p.hostname);
		reject(m, e->name, why);
	} else {
		*peerset_add(&m->set) = x->p;
		memset(&x->p, 0, sizeof(x->p));
	}
	prep_free(x);
	return 0;
}

/* Worst first, then head first and natural order (peerset_sort's). */
static const struct members *sort_m;
static int member_order(const void *a, const void *b)
{
	const struct peer *x = a, *y = b;
	enum shown sx = shown_of(sort_m, x), sy = shown_of(sort_m, y);

	if (sx != sy)
		return sx < sy ? -1 : 1;
	if (x->head != y->head)
		return x->head ? -1 : 1;
	return natural_cmp(x->hostname, y->hostname);
}

static void ready_text(const struct peer *p, char *buf, size_t size)
{
	if (p->ready_ms > 0)
		snprintf(buf, size, "%" PRId64 ".%01" PRId64 " s", p->ready_ms / 1000, p->ready_ms % 1000 / 100);
	else
		snprintf(buf, size, "-");
}

static void render_table(struct members *m, const char *where, const size_t *count)
{
	struct strbuf *o = &m->out;
	size_t w = 4, lines = m->c->verbose > 0 ? m->set.n : MEMBERS_LINES_MAX;

	for (size_t i = 0; i < m->set.n; i++)
		if (strlen(m->set.v[i].hostname) > w)
			w = strlen(m->set.v[i].hostname) > 40 ? 40 : strlen(m->set.v[i].hostname);
	sb_append(o, "cluster ");
	esc_append(o, m->c->spec->cluster.name, strlen(m->c->spec->cluster.name), false);
	sb_printf(o, " (%s ", m->shared ? "shared" : "etcd");
	esc_append(o, where, strlen(where), false);
	sb_printf(o, "): %zu member%s", m->set.n, m->set.n == 1 ? "" : "s");
	for (int s = 0; s < SHOWN_N; s++)
		if (count[s])
			sb_printf(o, ", %zu %s", count[s], shown_names[s]);
	sb_append(o, "\n");
	if (m->set.n)
		sb_printf(o, "%-*s  %-8s  %-9s  %s\n", (int)w, "NODE", "STATE", "READY IN", "REASON");
	for (size_t i = 0; i < m->set.n && i < lines; i++) {
		const struct peer *p = &m->set.v[i];
		struct strbuf name = STRBUF_INIT, why = STRBUF_INIT;
		char ready[32];

		esc_append(&name, p->hostname, strlen(p->hostname), false);
		if (p->reason)
			esc_append(&why, p->reason, strlen(p->reason), false);
		ready_text(p, ready, sizeof(ready));
		if (p->head)
			sb_append(&why, why.len ? " (head)" : "(head)");
		sb_printf(o, "%-*s  %-8s  %-9s  %s", (int)w, sb_str(&name), shown_names[shown_of(m, p)], ready,
			  sb_str(&why));
		while (o->len && o->buf[o->len - 1] == ' ')
			o->buf[--o->len] = '\0';
		sb_append(o, "\n");
		sb_free(&name);
		sb_free(&why);
	}
	if (m->set.n > lines)
		sb_printf(o, "... %zu more (ready ones last; -v lists every member)\n", m->set.n - lines);
	if (m->rejected)
		sb_printf(o, "%zu entr%s rejected (not counted as members):\n", m->rejected,
			  m->rejected == 1 ? "y" : "ies");
	for (size_t i = 0; i < m->rejects.n; i++)
		sb_printf(o, "  %s\n", m->rejects.v[i]);
	if (m->rejected > m->rejects.n)
		sb_printf(o, "  ... %zu more\n", m->rejected - m->rejects.n);
}

static void render_json(struct members *m, const char *where, const size_t *count)
{
	struct strbuf *o = &m->out;

	sb_append(o, "{");
	json_kv_str(o, "cluster", m->c->spec->cluster.name, 1);
	json_kv_str(o, "method", m->shared ? "shared" : "etcd", 0);
	json_kv_str(o, "where", where, 0);
	json_kv_int(o, "members", (long long)m->set.n, 0);
	for (int s = 0; s < SHOWN_N; s++)
		json_kv_int(o, shown_names[s], (long long)count[s], 0);
	json_kv_int(o, "rejected", (long long)m->rejected, 0);
	sb_append(o, ",\"nodes\":[");
	for (size_t i = 0; i < m->set.n; i++) {
		const struct peer *p = &m->set.v[i];

		sb_append(o, i ? ",{" : "{");
		json_kv_str(o, "hostname", p->hostname, 1);
		json_kv_str(o, "addr", p->addr, 0);
		json_kv_str(o, "role", p->head ? "head" : "compute", 0);
		json_kv_str(o, "state", shown_names[shown_of(m, p)], 0);
		json_kv_str(o, "recorded_state", peer_state_name(p->state), 0);
		if (p->reason)
			json_kv_str(o, "reason", p->reason, 0);
		if (p->ready_ms > 0)
			json_kv_int(o, "ready_ms", (long long)p->ready_ms, 0);
		json_kv_int(o, "updated", (long long)p->updated, 0);
		if (p->version)
			json_kv_str(o, "version", p->version, 0);
		sb_append(o, "}");
	}
	sb_append(o, "],\"rejects\":[");
	for (size_t i = 0; i < m->rejects.n; i++) {
		if (i)
			sb_append(o, ",");
		json_str(o, m->rejects.v[i]);
	}
	sb_append(o, "]}\n");
}

/* rv_open's message, or the errno's, as one line of the answer. */
static void fail_text(struct members *m, const char *what, const struct report *rep, int r)
{
	const char *d = sb_str(&rep->details);
	size_t n = strcspn(d, "\n");

	sb_printf(&m->out, "rc=1\nhpcinit: members: %s: ", what);
	if (n)
		esc_append(&m->out, d, n, false);
	else
		sb_append(&m->out, strerror(-r));
	sb_append(&m->out, "\n");
}

/* The child: read and judge the collection, render the answer into m->out. */
static void members_read(struct members *m, bool json)
{
	struct ctx *c = m->c;
	char self[NODE_HOSTNAME_MAX];
	struct rendezvous rv;
	struct rv_opts o = { .collection = "nodes", .max_bytes = RECORD_MAX_BYTES };
	struct rv_lister l = {
		.want = want_entry, .prep = prep_entry, .prep_free = prep_free,
		.thread_end = record_thread_end, .each = take_entry, .arg = m,
	};
	struct report rep;
	size_t count[SHOWN_N] = { 0 };
	int r;

	o.self = node_hostname(c, self, sizeof(self)) ? self : "localhost";
	report_init(&rep);
	r = rv_secret_load(c, &rep, &m->key, &m->key_len);
	if (r < 0) {
		fail_text(m, "the cluster secret (the records' HMAC needs it; run as root)", &rep, r);
		report_free(&rep);
		return;
	}
	r = rv_open(c, &rep, &o, &rv);
	if (r == 0)
		r = rv_list_prep(&rv, &rep, &l);
	if (r < 0) {
		fail_text(m, rv.where ? rv.where : "the rendezvous", &rep, r);
	} else {
		sort_m = m;
		if (m->set.n > 1)
			qsort(m->set.v, m->set.n, sizeof(m->set.v[0]), member_order);
		for (size_t i = 0; i < m->set.n; i++)
			count[shown_of(m, &m->set.v[i])]++;
		sb_append(&m->out, "rc=0\n");
		(json ? render_json : render_table)(m, rv.where, count);
	}
	rv_close(&rv);
	report_free(&rep);
}

static void members_child(void *arg, int fd)
{
	struct members *m = arg;

	members_read(m, m->c->json);
	for (size_t off = 0; off < m->out.len;) {
		ssize_t n = write(fd, m->out.buf + off, m->out.len - off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		off += (size_t)n;
	}
}

int members_main(struct ctx *c, bool json, FILE *out)
{
	const struct spec *s = c->spec;
	struct members m = { .c = c, .shared = s->discovery.method == DISC_SHARED };
	struct proc_child ch = { 0 };
	const struct proc_limits lim = {
		.timeout_ms = MEMBERS_TIMEOUT_MS, .term_grace_ms = 1000, .reap_ms = 500, .eof_ends = true,
	};
	long long rc = 1;
	const char *nl;
	int r;

	if (!s->discovery.present || (s->discovery.method != DISC_SHARED && s->discovery.method != DISC_ETCD)) {
		fprintf(stderr, "hpcinit: members: the members' records are in the rendezvous of discovery.method "
			"shared or etcd; this spec has %s\n", s->discovery.present ? "another method" : "no discovery");
		return 2;
	}
	c->mode = RUN_CHECK;            /* read only: nothing is created or written */
	c->json = json;
	m.now = (int64_t)time(NULL);
	m.lease_s = (int64_t)(s->discovery.lease_ms / 1000);
	ch.keep_stderr = true;
	ch.max_out = MEMBERS_OUT_MAX;
	r = proc_start_fn(&ch, members_child, &m, 0);
	if (r < 0) {
		fprintf(stderr, "hpcinit: members: cannot start the reader: %s\n", strerror(-r));
		return 1;
	}
	proc_wait(&ch, 1, &lim);
	nl = ch.out.buf ? strchr(ch.out.buf, '\n') : NULL;
	if (ch.timed_out || !nl || strncmp(ch.out.buf, "rc=", 3) != 0 || ch.out_cut) {
		fprintf(stderr, "hpcinit: members: %s\n", ch.timed_out ? "the rendezvous did not answer within "
			"30 s (a shared directory's server gone, etcd unreachable?)" : "the reader ended without an answer");
		proc_child_free(&ch);
		return 1;
	}
	rc = ch.out.buf[3] == '0' ? 0 : 1;
	fputs(nl + 1, rc == 0 ? out : stderr);
	proc_child_free(&ch);
	return (int)rc;
}
