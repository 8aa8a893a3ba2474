/* SPDX-License-Identifier: MIT */
/*
 * /etc/hpcinit/ssh_known_hosts and the ssh_config drop-in: every peer's
 * host keys under all its names, rebuilt from the current peers on every
 * run, so departed peers disappear and an address reused by a new VM is
 * never a mismatch.  A host key that changes while its node stays up (same
 * boot id) is refused and reported, never silently accepted.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sshkey.h"
#include "ssh.h"

#define HOST_LINE_MAX 900       /* patterns per "Host" line, in characters */
#define FETCH_TIMEOUT_MS 3000   /* one key exchange (host_keys: scan) */

static void khost_free(struct khost *h)
{
	free(h->id);
	free(h->boot_id);
	free(h->source);
	strlist_free(&h->names);
	strlist_free(&h->keys);
	memset(h, 0, sizeof(*h));
}

void khosts_free(struct khosts *s)
{
	for (size_t i = 0; i < s->n; i++)
		khost_free(&s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = s->cap = 0;
}

/* Make room for n more entries. */
static void khosts_reserve(struct khosts *s, size_t n)
{
	if (s->n + n > s->cap) {
		s->cap = s->n + n;
		s->v = xrealloc(s->v, s->cap * sizeof(*s->v));
	}
}

/* A zeroed new entry.  Doubling: one realloc (and copy) per node made 10,000 nodes copy 10,000 times. */
static struct khost *khost_new(struct khosts *s)
{
	struct khost *h;

	if (s->n >= s->cap)
		khosts_reserve(s, s->n ? s->n : 16);
	h = &s->v[s->n++];
	memset(h, 0, sizeof(*h));
	return h;
}

struct khost *khosts_add(struct khosts *s, const char *id, const char *boot_id,
			 const char *source)
{
	struct khost *h = khost_new(s);

	h->id = xstrdup(id);
	h->boot_id = xstrdup(boot_id ? boot_id : "");
	h->source = xstrdup(source);
	return h;
}

static bool is_blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

/*
 * "# host <id> boot_id=<id|-> source=<record|local|scan>" (p to end, after
 * "# host "): the new entry, or NULL.  Read in place, no copy of the line.
 */
static struct khost *parse_host_comment(struct khosts *s, const char *p, const char *end)
{
	const char *id = NULL, *boot = NULL, *src = NULL;
	size_t idl = 0, bootl = 0, srcl = 0;
	struct khost *h;

	while (p < end) {
		const char *tok;
		size_t n;

		while (p < end && is_blank(*p))
			p++;
		if (p >= end)
			break;
		tok = p;
		while (p < end && !is_blank(*p))
			p++;
		n = (size_t)(p - tok);
		if (!id)
			id = tok, idl = n;
		else if (n >= 8 && strncmp(tok, "boot_id=", 8) == 0)
			boot = tok + 8, bootl = n - 8;
		else if (n >= 7 && strncmp(tok, "source=", 7) == 0)
			src = tok + 7, srcl = n - 7;
	}
	if (!id)
		return NULL;
	if (boot && bootl == 1 && boot[0] == '-')
		boot = NULL;
	h = khost_new(s);
	h->id = xstrndup(id, idl);
	h->boot_id = boot ? xstrndup(boot, bootl) : xstrdup("");
	h->source = src ? xstrndup(src, srcl) : xstrdup("record");
	return h;
}

/*
 * Read ssh_known_hosts as hpcinit wrote it.  Key lines belong to the last
 * "# host" comment; lines before any (hand-written) go to an entry with
 * an empty id, which no peer matches.
 */
void kh_parse(const char *text, struct khosts *ret)
{
	struct khost *cur = NULL;
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		const char *line = p, *end = nl ? nl : line + strlen(line), *sp;
		char *canon;

		p = nl ? nl + 1 : NULL;
		if (end - line >= 7 && strncmp(line, "# host ", 7) == 0) {
			cur = parse_host_comment(ret, line + 7, end);
			continue;
		}
		if (line[0] == '#')
			continue;
		for (sp = line; sp < end && !is_blank(*sp); sp++)
			;
		/* sshkey_canonical stops at the end of the line ('\n') */
		if (sp >= end || !(canon = sshkey_canonical(sp)))
			continue;
		if (!cur)
			cur = khosts_add(ret, "", "", "manual");
		for (const char *n = line; n < sp;) {
			const char *comma = memchr(n, ',', (size_t)(sp - n));
			const char *e = comma ? comma : sp;

			if (e > n)
				strlist_add_unique_n(&cur->names, n, (size_t)(e - n));
			n = e + 1;
		}
		if (strlist_has(&cur->keys, canon))
			free(canon);
		else
			strlist_push_take(&cur->keys, canon);
	}
}

char *kh_render(const struct spec *s, const struct khosts *hosts)
{
	struct strbuf sb = STRBUF_INIT, names = STRBUF_INIT;   /* names: one buffer for every host */

	sb_printf(&sb, "# hpcinit: host keys of the nodes of cluster %s (ssh module).\n"
		  "# Rebuilt from the peers' records on every run; edits are replaced.\n"
		  "# To accept a changed key of a node that stayed up, remove its lines\n"
		  "# (ssh-keygen -R NAME -f " KH_PATH ") and run: hpcinit refresh\n",
		  s->cluster.name);
	for (size_t i = 0; i < hosts->n; i++) {
		const struct khost *h = &hosts->v[i];

		if (!h->keys.n || !h->names.n)
			continue;
		sb_reset(&names);
		for (size_t j = 0; j < h->names.n; j++) {
			if (j)
				sb_appendn(&names, ",", 1);
			sb_append(&names, h->names.v[j]);
		}
		sb_appendn(&sb, "# host ", 7);
		sb_append(&sb, h->id);
		sb_appendn(&sb, " boot_id=", 9);
		sb_append(&sb, *h->boot_id ? h->boot_id : "-");
		sb_appendn(&sb, " source=", 8);
		sb_append(&sb, h->source);
		sb_appendn(&sb, "\n", 1);
		for (size_t j = 0; j < h->keys.n; j++) { /* appends, not printf: a line per node */
			sb_appendn(&sb, names.buf, names.len);
			sb_appendn(&sb, " ", 1);
			sb_append(&sb, h->keys.v[j]);
			sb_appendn(&sb, "\n", 1);
		}
	}
	sb_free(&names);
	return sb_steal(&sb);
}

/* Host patterns that cover cluster.network exactly, when ssh_config can say so. */
static char *network_pattern(const struct spec *s)
{
	const struct cidr *n = &s->cluster.network;
	const unsigned char *b;

	if (!s->cluster.has_network || n->family != AF_INET)
		return NULL;
	b = (const unsigned char *)&n->addr.v4.s_addr;
	switch (n->prefix) {
	case 8:
		return xasprintf("%u.*", b[0]);
	case 16:
		return xasprintf("%u.%u.*", b[0], b[1]);
	case 24:
		return xasprintf("%u.%u.%u.*", b[0], b[1], b[2]);
	default:
		return NULL;
	}
}

/*
 * The ssh_config drop-in.  ssh takes the first value it finds for each
 * option and Debian's ssh_config includes ssh_config.d before its own
 * "Host *", so these win for the cluster's hosts and touch no other host.
 * The patterns are split over several Host stanzas to keep lines short.
 */
char *conf_render(const struct spec *s, const struct khosts *hosts)
{
	struct strbuf sb = STRBUF_INIT, line = STRBUF_INIT;
	struct strlist pats = { 0 };
	struct smap seen;
	char *net = network_pattern(s);
	bool ca = s->ssh.host_keys == HOSTKEYS_CA;
	const char *const *pv;
	const char **own = NULL;
	size_t pn = 0;

	if (ca) {
		/* The CA vouches for names and addresses: patterns, not a list of N. */
		ca_host_patterns(s, hosts, &pats);
		pv = (const char *const *)pats.v;
		pn = pats.n;
	} else {
		size_t most = net ? 1 : 0;

		/* Borrowed from hosts, not copied: a name per node and address. */
		for (size_t i = 0; i < hosts->n; i++)
			most += hosts->v[i].names.n;
		own = xmalloc((most ? most : 1) * sizeof(*own));
		pv = own;
		if (net)
			own[pn++] = net;
		smap_init(&seen, most);
		for (size_t i = 0; i < hosts->n; i++)
			for (size_t j = 0; j < hosts->v[i].names.n; j++)
				if (smap_add(&seen, hosts->v[i].names.v[j], 0))
					own[pn++] = hosts->v[i].names.v[j];
		smap_free(&seen);
	}
	sb_printf(&sb, "# hpcinit: host-key checking for the nodes of cluster %s (ssh module).\n"
		  "# Their keys (host_keys: ca: their CA) come from " KH_PATH ".\n"
		  "# Rebuilt on every run; edits are replaced.\n", s->cluster.name);
	/*
	 * ssh-keysign reads ssh_config for the host "", so no Host pattern
	 * can limit EnableSSHKeysign: it stands before the first Host line.
	 * Which hosts get host-based login is HostbasedAuthentication's job.
	 */
	if (s->ssh.hostbased)
		sb_append(&sb, "EnableSSHKeysign yes\n");
	for (size_t i = 0; i <= pn; i++) {
		size_t l = i < pn ? strlen(pv[i]) : 0;

		/* ca: one stanza per pattern (a negated pattern voids its whole line). */
		if (line.len && (i == pn || ca || line.len + 1 + l > HOST_LINE_MAX)) {
			sb_appendn(&sb, "Host", 4);
			sb_appendn(&sb, line.buf, line.len);
			sb_appendn(&sb, "\n", 1);
			sb_append(&sb, "\tGlobalKnownHostsFile " KH_PATH
				  " /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2\n"
				  "\tStrictHostKeyChecking yes\n");
			if (ca)
				sb_append(&sb, "\tRevokedHostKeys " REVOKED_PATH "\n");
			if (s->ssh.hostbased)
				sb_append(&sb, "\tHostbasedAuthentication yes\n");
			sb_reset(&line);
		}
		if (i < pn)
			sb_appendn(&line, " ", 1), sb_appendn(&line, pv[i], l);
	}
	sb_free(&line);
	strlist_free(&pats);
	free(own);
	free(net);
	return sb_steal(&sb);
}

/* ---- host keys fetched over the network (host_keys: scan, opt-in) ---- */

struct fetch_ops {
	int (*fetch)(const char *host, unsigned port, unsigned timeout_ms, char **ret_key);
};

/*
 * One key exchange, by the helper (sshkey.c): the negotiated host key is
 * the one ssh will be offered too, since both prefer ed25519.
 */
static int helper_fetch(const char *host, unsigned port, unsigned timeout_ms, char **ret_key)
{
	struct strlist keys = { 0 };
	char why[256] = "";
	int err = 0, r;

	r = sshkey_fetch_host_keys(&host, 1, port, timeout_ms, false, timeout_ms + 5000, &keys,
				   &err, why, sizeof(why));
	if (r == 0 && err == 0 && keys.n)
		*ret_key = xstrdup(keys.v[0]);
	strlist_free(&keys);
	return r < 0 ? r : err ? err : 0;
}

static const struct fetch_ops helper_fetch_ops = { helper_fetch };
/* Tests swap this table (docs/conventions.md "Ops tables for hardware, network and time"). */
static const struct fetch_ops *fetch_ops = &helper_fetch_ops;
/* ---- building the wanted known_hosts ---- */

static void peer_names(const struct peer *p, const char *id, struct strlist *names)
{
	const char *dot = strchr(id, '.');

	strlist_add_unique(names, id);
	if (dot && dot > id)
		strlist_add_unique_n(names, id, (size_t)(dot - id));
	if (valid_addr(p->addr))
		strlist_add_unique(names, p->addr);
	if (valid_addr(p->ipoib_addr))
		strlist_add_unique(names, p->ipoib_addr);
}

/* A name two live peers claim would pin one's key for the other: drop it from both. */
static void drop_shared_names(struct report *r, struct khosts *want)
{
	struct smap first, shared;
	struct strlist dropped = { 0 };
	size_t k = 0;

	for (size_t i = 0; i < want->n; i++)
		k += want->v[i].names.n;
	smap_init(&first, k);
	for (size_t i = 0; i < want->n; i++)
		for (size_t j = 0; j < want->v[i].names.n; j++) {
			const char *n = want->v[i].names.v[j];

			if (smap_put(&first, n, i, &k) || k == i)
				continue;
			report_cluster(r, "ssh.known-hosts.name-claimed-twice",
				       "%s is claimed by both %s and %s; left out of " KH_PATH
				       " until one of them leaves", n, want->v[k].id, want->v[i].id);
			strlist_push(&dropped, n);
		}
	smap_free(&first);
	if (!dropped.n)
		return;
	smap_init(&shared, dropped.n);
	for (size_t i = 0; i < dropped.n; i++)
		(void)smap_add(&shared, dropped.v[i], 0);
	for (size_t i = 0; i < want->n; i++) {
		struct strlist *names = &want->v[i].names;
		size_t keep = 0;

		for (size_t j = 0; j < names->n; j++) {
			if (smap_get(&shared, names->v[j], NULL))
				free(names->v[j]);
			else
				names->v[keep++] = names->v[j];
		}
		names->n = keep;
		if (names->v)
			names->v[keep] = NULL;
	}
	smap_free(&shared);
	strlist_free(&dropped);
}

/* The first key of a that b lacks, NULL when a is a subset of b. */
static const char *first_new_key(const struct strlist *a, const struct strlist *b)
{
	for (size_t i = 0; i < a->n; i++)
		if (!strlist_has(b, a->v[i]))
			return a->v[i];
	return NULL;
}

/*
 * The rule for a host key the pinned entry of the same node lacks: a
 * rebuilt VM (its record shows a different boot id) replaces the old keys;
 * the same running instance presenting a new key is refused, the old keys
 * stay pinned and the run fails, naming the node.  Keys that merely
 * disappear are dropped: that never lets a new key in.
 */
static void apply_key_policy(struct report *r, const struct khost *old, struct khost *h,
			     bool self, struct ssh_tally *t)
{
	const char *fresh = old && old->keys.n ? first_new_key(&h->keys, &old->keys) : NULL;
	char *fp_new, *fp_old;
	size_t tl;

	if (!fresh)
		return;
	fp_new = sshkey_fingerprint(fresh);
	if (self) {
		report_detail(r, "%s: this node's own host keys changed; pinned %s", h->id, fp_new);
		free(fp_new);
		return;
	}
	if (*old->boot_id && *h->boot_id && strcmp(old->boot_id, h->boot_id) != 0) {
		report_detail(r, "%s: host key replaced (now %s): the node was rebuilt or rebooted "
			      "(boot id %s -> %s)", h->id, fp_new, old->boot_id, h->boot_id);
		free(fp_new);
		return;
	}
	/* Name the pinned key of the same type, if any. */
	tl = strcspn(fresh, " ");
	fp_old = NULL;
	for (size_t i = 0; i < old->keys.n && !fp_old; i++)
		if (strncmp(old->keys.v[i], fresh, tl + 1) == 0)
			fp_old = sshkey_fingerprint(old->keys.v[i]);
	if (!fp_old)
		fp_old = sshkey_fingerprint(old->keys.v[0]);
	report_finding(r, ST_FAILED, "ssh.host-key.changed",
		       "%s: HOST KEY CHANGED while the node stayed up (boot id %s): it "
		       "publishes %s, pinned is %s. Refused: the pinned key stays and ssh to it "
		       "fails. If the change is intended, remove its lines (ssh-keygen -R %s -f "
		       KH_PATH ") and run hpcinit refresh", h->id,
		       *h->boot_id ? h->boot_id : "unknown", fp_new, fp_old, h->id);
	free(fp_new);
	free(fp_old);
	strlist_copy(&h->keys, &old->keys);
	free(h->boot_id);
	h->boot_id = xstrdup(old->boot_id);
	t->refused = true;
	strlist_push(&t->refused_hosts, h->id);
}

static unsigned fetch_port(const struct spec *s)
{
	if (s->discovery.present && s->discovery.method == DISC_SCAN && s->discovery.scan_port)
		return s->discovery.scan_port;
	return 22;
}

/* A peer without published host keys: pinned mode leaves it out, scan mode fetches. */
static void keys_from_network(struct ctx *c, struct report *r, const struct peer *p,
			      const struct khost *old, struct khost *h, struct ssh_tally *t)
{
	const char *target = valid_addr(p->addr) ? p->addr : h->id;
	char *key = NULL;
	int ret;

	if (c->spec->ssh.host_keys != HOSTKEYS_SCAN) {
		report_cluster(r, "ssh.host-key.unpublished",
			       "%s: published no host keys, left out of " KH_PATH " (ssh to it is "
			       "refused); publish them with discovery: shared, or opt in to trust on "
			       "first use with ssh: {host_keys: scan}", h->id);
		return;
	}
	free(h->source);
	h->source = xstrdup("scan");
	if (old && old->keys.n) {
		/* Trusted on first use earlier: stays pinned, no new fetch. */
		strlist_copy(&h->keys, &old->keys);
		t->tofu++;
		return;
	}
	if (!ctx_may_write(c)) {
		report_detail(r, "%s: apply fetches its host key from %s:%u (trust on first use)",
			      h->id, target, fetch_port(c->spec));
		t->tofu++;
		return;
	}
	ret = fetch_ops->fetch(target, fetch_port(c->spec), FETCH_TIMEOUT_MS, &key);
	if (ret < 0) {
		report_finding(r, ST_DEGRADED, "ssh.host-key.fetch-failed",
			       "%s: cannot fetch its host key from %s:%u: %s; left out",
			       h->id, target, fetch_port(c->spec), strerror(-ret));
		return;
	}
	{
		char *fp = sshkey_fingerprint(key);

		report_detail(r, "%s: host key %s fetched from %s (trust on first use, not verified)",
			      h->id, fp, target);
		free(fp);
	}
	strlist_push(&h->keys, key);
	free(key);
	t->tofu++;
}

void want_build(struct ctx *c, struct report *r, const struct peerset *ps, struct khosts *want)
{
	/* discovery: scan fetches host keys itself: trust on first use, not records. */
	bool scanned = c->spec->discovery.present && c->spec->discovery.method == DISC_SCAN;
	bool have_self = false;
	struct smap ids;
	size_t at;

	smap_init(&ids, ps ? ps->n + 1 : 1);
	khosts_reserve(want, ps ? ps->n + 1 : 1);
	/* This node first: a record that claims its name must not displace it. */
	for (size_t n = 0; ps && n < 2 * ps->n; n++) {
		const struct peer *p = &ps->v[n % ps->n];
		struct khost *h;
		char *id;

		if (p->self != (n < ps->n))
			continue;
		if (!record_hostname_valid(p->hostname)) {
			report_cluster(r, "ssh.peer.bad-hostname",
				       "a peer record has an invalid hostname; ignored");
			continue;
		}
		id = lowercase(p->hostname);
		if (smap_get(&ids, id, &at)) {
			report_cluster(r, "ssh.peer.hostname-claimed-twice",
				       "%s: %s; the other is ignored", id, want->v[at].peer &&
				       want->v[at].peer->self ?
				       "a peer record carries this node's hostname" :
				       "two peer records carry this hostname");
			free(id);
			continue;
		}
		h = khosts_add(want, id, p->boot_id, p->self ? "local" : scanned ? "scan" : "record");
		h->peer = p;
		(void)smap_add(&ids, h->id, want->n - 1);
		peer_names(p, id, &h->names);
		if (p->self) {
			have_self = true;
			(void)sshkey_host_pubkeys(c, &h->keys);
		} else {
			for (size_t k = 0; k < p->host_keys.n; k++) {
				char *canon = sshkey_canonical(p->host_keys.v[k]);

				/* ca: the head judges (and refuses) a certificate in a record. */
				if (canon && sshkey_is_cert(canon) && c->spec->ssh.host_keys != HOSTKEYS_CA)
					report_cluster(r, "ssh.hostkey.certificate",
						       "%s: its record publishes a certificate (%.*s) where a "
						       "plain host key belongs; not pinned", id,
						       (int)strcspn(canon, " "), canon);
				else if (canon && !strlist_has(&h->keys, canon))
					strlist_push_take(&h->keys, canon), canon = NULL;
				else if (!canon)
					report_detail(r, "%s: a published host key is malformed; ignored", id);
				free(canon);
			}
		}
		free(id);
	}
	if (!have_self) {
		char name[NODE_HOSTNAME_MAX];
		char *id = node_hostname(c, name, sizeof(name)) ? lowercase(name) : NULL;

		if (id && smap_get(&ids, id, NULL)) {
			report_cluster(r, "ssh.peer.hostname-claimed-twice",
				       "%s: a peer record carries this node's hostname", id);
		} else if (id) {
			struct khost *h;

			h = khosts_add(want, id, "", "local");
			(void)smap_add(&ids, h->id, want->n - 1);
			strlist_push(&h->names, id);
			(void)sshkey_host_pubkeys(c, &h->keys);
		}
		free(id);
	}
	drop_shared_names(r, want);
	smap_free(&ids);
}

void want_judge(struct ctx *c, struct report *r, const struct khosts *old, struct khosts *want,
		struct ssh_tally *t)
{
	struct smap ids, olds;
	size_t at, gone = 0;

	/* The ids of want, to name who left: only when there is an old model. */
	smap_init(&ids, old->n ? want->n : 0);
	for (size_t i = 0; old->n && i < want->n; i++)
		(void)smap_add(&ids, want->v[i].id, i);
	smap_init(&olds, old->n);
	for (size_t i = 0; i < old->n; i++)
		if (*old->v[i].id)
			(void)smap_add(&olds, old->v[i].id, i);
	for (size_t i = 0; i < want->n; i++) {
		struct khost *h = &want->v[i];
		const struct khost *o = smap_get(&olds, h->id, &at) ? &old->v[at] : NULL;
		const struct peer *p = h->peer;

		if (!h->keys.n && p && !p->self) {
			keys_from_network(c, r, p, o, h, t);
		} else {
			apply_key_policy(r, o, h, strcmp(h->source, "local") == 0, t);
			if (strcmp(h->source, "scan") == 0 && h->keys.n)
				t->tofu++;
		}
		t->host_keys += h->keys.n;
	}
	for (size_t i = 0; i < old->n; i++) {
		if (!*old->v[i].id || smap_get(&ids, old->v[i].id, NULL))
			continue;
		if (++gone <= DETAIL_MAX)
			report_detail(r, "%s: no longer a peer; its host keys are pruned", old->v[i].id);
	}
	if (gone > DETAIL_MAX)
		report_detail(r, "%zu more nodes are no longer peers; their host keys are pruned",
			      gone - DETAIL_MAX);
	t->peers = want->n;
	smap_free(&ids);
	smap_free(&olds);
}

void want_hosts(struct ctx *c, struct report *r, const struct peerset *ps,
		const struct khosts *old, struct khosts *want, struct ssh_tally *t)
{
	want_build(c, r, ps, want);
	want_judge(c, r, old, want, t);
}

/* Index "name key" and "name type" pairs of a known_hosts model. */
static void kh_index(const struct khosts *hs, struct strlist *store, struct smap *pairs,
		     struct smap *types)
{
	for (size_t i = 0; i < hs->n; i++)
		for (size_t j = 0; j < hs->v[i].names.n; j++)
			for (size_t k = 0; k < hs->v[i].keys.n; k++) {
				const char *key = hs->v[i].keys.v[k];

				strlist_push_take(store, xasprintf("%s %s", hs->v[i].names.v[j], key));
				strlist_push_take(store, xasprintf("%s %.*s", hs->v[i].names.v[j],
								    (int)strcspn(key, " "), key));
			}
	smap_init(pairs, store->n / 2);
	smap_init(types, store->n / 2);
	for (size_t i = 0; i + 1 < store->n; i += 2) {
		(void)smap_add(pairs, store->v[i], 0);
		(void)smap_add(types, store->v[i + 1], 0);
	}
}

void kh_compare(struct report *r, const struct khosts *have, const struct khosts *want)
{
	struct strlist hs = { 0 }, ws = { 0 };
	struct smap hp, ht, wp, wt;

	kh_index(have, &hs, &hp, &ht);
	kh_index(want, &ws, &wp, &wt);
	size_t n = 0;

	for (size_t i = 0; i + 1 < ws.n; i += 2) {
		char *fp;

		if (smap_get(&hp, ws.v[i], NULL) || ++n > DETAIL_MAX)
			continue;
		fp = sshkey_fingerprint(ws.v[i] + strcspn(ws.v[i], " ") + 1);
		report_detail(r, KH_PATH ": %.*s: %s key (want %s)", (int)strcspn(ws.v[i], " "), ws.v[i],
			      smap_get(&ht, ws.v[i + 1], NULL) ? "mismatched" : "missing", fp);
		free(fp);
	}
	if (n > DETAIL_MAX)
		report_detail(r, KH_PATH ": %zu more names lack a key", n - DETAIL_MAX);
	n = 0;
	for (size_t i = 0; i + 1 < hs.n; i += 2) {
		char *fp;

		if (smap_get(&wp, hs.v[i], NULL) || smap_get(&wt, hs.v[i + 1], NULL) ||
		    ++n > DETAIL_MAX)
			continue;
		fp = sshkey_fingerprint(hs.v[i] + strcspn(hs.v[i], " ") + 1);
		report_detail(r, KH_PATH ": %.*s: extra key %s", (int)strcspn(hs.v[i], " "), hs.v[i], fp);
		free(fp);
	}
	if (n > DETAIL_MAX)
		report_detail(r, KH_PATH ": %zu more extra keys", n - DETAIL_MAX);
	smap_free(&hp);
	smap_free(&ht);
	smap_free(&wp);
	smap_free(&wt);
	strlist_free(&hs);
	strlist_free(&ws);
}
