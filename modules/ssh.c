/* SPDX-License-Identifier: MIT */
/*
 * ssh: passwordless SSH between cluster nodes with host-key checking on
 * (DESIGN.md "Trust").  Inputs are the peers discovery found; outputs:
 *
 *   ~user/.ssh/authorized_keys      a managed block per cluster: every peer's
 *                                   key for the same user, from="<network>"
 *   /etc/hpcinit/ssh_known_hosts    every peer's host keys under all its names
 *   /etc/ssh/ssh_config.d/90-hpcinit.conf
 *                                   StrictHostKeyChecking yes + that file for
 *                                   the cluster's hosts
 *
 * Both lists are rebuilt from the current peers on every run, so departed
 * peers disappear and an address reused by a new VM is never a mismatch.
 * A host key that changes while its node stays up (same boot id) is refused
 * and reported, never silently accepted.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "record.h"
#include "sshkey.h"

#define KH_PATH "/etc/hpcinit/ssh_known_hosts"
#define CONF_DIR "/etc/ssh/ssh_config.d"
#define CONF_PATH CONF_DIR "/90-hpcinit.conf"
#define SYS_CONF "/etc/ssh/ssh_config"
#define HOST_LINE_MAX 900       /* patterns per "Host" line, in characters */
#define FETCH_TIMEOUT_MS 3000   /* one libssh key exchange (host_keys: scan) */

/* One node's entry in ssh_known_hosts: its identity, names and host keys. */
struct khost {
	char *id;               /* lower-case hostname */
	char *boot_id;          /* "" when unknown */
	char *source;           /* record | local | scan */
	struct strlist names;   /* hostname, short name, addresses */
	struct strlist keys;    /* "type base64" */
};

struct khosts {
	struct khost *v;
	size_t n;
};

/* What one run found, for the summary line. */
struct ssh_tally {
	size_t peers, host_keys, tofu, users, user_keys;
	bool refused;           /* a live peer's host key changed */
	bool degraded;          /* a peer is left out, a name is ambiguous, ... */
	bool failed;            /* a user could not be set up */
	struct strlist refused_hosts;
};

static void khost_free(struct khost *h)
{
	free(h->id);
	free(h->boot_id);
	free(h->source);
	strlist_free(&h->names);
	strlist_free(&h->keys);
	memset(h, 0, sizeof(*h));
}

static void khosts_free(struct khosts *s)
{
	for (size_t i = 0; i < s->n; i++)
		khost_free(&s->v[i]);
	free(s->v);
	s->v = NULL;
	s->n = 0;
}

static struct khost *khosts_add(struct khosts *s, const char *id, const char *boot_id,
				const char *source)
{
	struct khost *h;

	s->v = xrealloc(s->v, (s->n + 1) * sizeof(*s->v));
	h = &s->v[s->n++];
	memset(h, 0, sizeof(*h));
	h->id = xstrdup(id);
	h->boot_id = xstrdup(boot_id ? boot_id : "");
	h->source = xstrdup(source);
	return h;
}

static struct khost *khosts_find(const struct khosts *s, const char *id)
{
	for (size_t i = 0; i < s->n; i++)
		if (strcmp(s->v[i].id, id) == 0)
			return &s->v[i];
	return NULL;
}

static bool strlist_has(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

static void strlist_add_unique(struct strlist *l, const char *s)
{
	if (!strlist_has(l, s))
		strlist_push(l, s);
}

static void strlist_copy(struct strlist *dst, const struct strlist *src)
{
	strlist_free(dst);
	for (size_t i = 0; i < src->n; i++)
		strlist_push(dst, src->v[i]);
}

/*
 * Names end up in known_hosts and in a "Host" pattern list, where '*', '?',
 * '!', ',' or blanks would widen what a record may claim.  Accept only
 * plain host names.
 */
static bool valid_hostname(const char *s)
{
	size_t n = s ? strlen(s) : 0;

	if (n == 0 || n > 253 || s[0] == '-' || s[0] == '.')
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || *p == '-' || *p == '.' || *p == '_'))
			return false;
	return true;
}

static bool valid_addr(const char *s)
{
	unsigned char buf[sizeof(struct in6_addr)];

	return s && (inet_pton(AF_INET, s, buf) == 1 || inet_pton(AF_INET6, s, buf) == 1);
}

static char *lowercase(const char *s)
{
	char *d = xstrdup(s);

	for (char *p = d; *p; p++)
		*p = (char)tolower((unsigned char)*p);
	return d;
}

/* "SHA256:..." as ssh-keygen -l prints it, for details. */
static char *key_fingerprint(const char *canon)
{
	const char *sp = strchr(canon, ' ');
	char *type, *fp, *ret = NULL;
	unsigned char *hash = NULL;
	size_t hlen = 0;
	ssh_key k = NULL;

	if (!sp)
		return xstrdup(canon);
	type = xstrndup(canon, (size_t)(sp - canon));
	if (ssh_pki_import_pubkey_base64(sp + 1, ssh_key_type_from_name(type), &k) == SSH_OK &&
	    ssh_get_publickey_hash(k, SSH_PUBLICKEY_HASH_SHA256, &hash, &hlen) == 0 &&
	    (fp = ssh_get_fingerprint_hash(SSH_PUBLICKEY_HASH_SHA256, hash, hlen))) {
		ret = xasprintf("%s %s", type, fp);
		ssh_string_free_char(fp);
	}
	if (hash)
		ssh_clean_pubkey_hash(&hash);
	ssh_key_free(k);
	if (!ret)
		ret = xasprintf("%s (unparsable)", type);
	free(type);
	return ret;
}

/* "# host <id> boot_id=<id|-> source=<record|local|scan>" */
static void parse_host_comment(struct khosts *s, const char *line)
{
	char *copy = xstrdup(line + strlen("# host "));
	char *save = NULL, *tok, *id = NULL, *boot = NULL, *src = NULL;

	for (tok = strtok_r(copy, " \t", &save); tok; tok = strtok_r(NULL, " \t", &save)) {
		if (!id)
			id = tok;
		else if (strncmp(tok, "boot_id=", 8) == 0)
			boot = tok + 8;
		else if (strncmp(tok, "source=", 7) == 0)
			src = tok + 7;
	}
	if (id)
		khosts_add(s, id, boot && strcmp(boot, "-") != 0 ? boot : "", src ? src : "record");
	free(copy);
}

/*
 * Read ssh_known_hosts as hpcinit wrote it.  Key lines belong to the last
 * "# host" comment; lines before any (hand-written) go to an entry with
 * an empty id, which no peer matches.
 */
static void kh_parse(const char *text, struct khosts *ret)
{
	struct khost *cur = NULL;
	const char *p = text;

	while (p && *p) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		char *sp, *canon;

		p = nl ? nl + 1 : NULL;
		if (strncmp(line, "# host ", 7) == 0) {
			parse_host_comment(ret, line);
			cur = &ret->v[ret->n - 1];
		} else if (line[0] != '#' && (sp = strpbrk(line, " \t")) && (canon = sshkey_canonical(sp))) {
			char *save = NULL;

			*sp = '\0';
			if (!cur)
				cur = khosts_add(ret, "", "", "manual");
			for (char *n = strtok_r(line, ",", &save); n; n = strtok_r(NULL, ",", &save))
				strlist_add_unique(&cur->names, n);
			strlist_add_unique(&cur->keys, canon);
			free(canon);
		}
		free(line);
	}
}

static char *kh_render(const struct spec *s, const struct khosts *hosts)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "# hpcinit: host keys of the nodes of cluster %s (ssh module).\n"
		  "# Rebuilt from the peers' records on every run; edits are replaced.\n"
		  "# To accept a changed key of a node that stayed up, remove its lines\n"
		  "# (ssh-keygen -R NAME -f " KH_PATH ") and run: hpcinit refresh\n",
		  s->cluster.name);
	for (size_t i = 0; i < hosts->n; i++) {
		const struct khost *h = &hosts->v[i];
		struct strbuf names = STRBUF_INIT;

		if (!h->keys.n || !h->names.n)
			continue;
		for (size_t j = 0; j < h->names.n; j++)
			sb_printf(&names, "%s%s", j ? "," : "", h->names.v[j]);
		sb_printf(&sb, "# host %s boot_id=%s source=%s\n", h->id,
			  *h->boot_id ? h->boot_id : "-", h->source);
		for (size_t j = 0; j < h->keys.n; j++)
			sb_printf(&sb, "%s %s\n", sb_str(&names), h->keys.v[j]);
		sb_free(&names);
	}
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
static char *conf_render(const struct spec *s, const struct khosts *hosts)
{
	struct strbuf sb = STRBUF_INIT, line = STRBUF_INIT;
	struct strlist pats = { 0 };
	char *net = network_pattern(s);

	if (net)
		strlist_push(&pats, net);
	free(net);
	for (size_t i = 0; i < hosts->n; i++)
		for (size_t j = 0; j < hosts->v[i].names.n; j++)
			strlist_add_unique(&pats, hosts->v[i].names.v[j]);
	sb_printf(&sb, "# hpcinit: host-key checking for the nodes of cluster %s (ssh module).\n"
		  "# Their keys come from " KH_PATH ", built from the peers' records.\n"
		  "# Rebuilt on every run; edits are replaced.\n", s->cluster.name);
	for (size_t i = 0; i < pats.n; i++) {
		if (line.len && line.len + 1 + strlen(pats.v[i]) > HOST_LINE_MAX) {
			sb_printf(&sb, "Host%s\n", sb_str(&line));
			sb_append(&sb, "\tGlobalKnownHostsFile " KH_PATH
				  " /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2\n"
				  "\tStrictHostKeyChecking yes\n");
			sb_reset(&line);
		}
		sb_printf(&line, " %s", pats.v[i]);
	}
	if (line.len) {
		sb_printf(&sb, "Host%s\n", sb_str(&line));
		sb_append(&sb, "\tGlobalKnownHostsFile " KH_PATH
			  " /etc/ssh/ssh_known_hosts /etc/ssh/ssh_known_hosts2\n"
			  "\tStrictHostKeyChecking yes\n");
	}
	sb_free(&line);
	strlist_free(&pats);
	return sb_steal(&sb);
}

/* ---- host keys fetched over the network (host_keys: scan, opt-in) ---- */

struct fetch_ops {
	int (*fetch)(const char *host, unsigned port, unsigned timeout_ms, char **ret_key);
};

/*
 * One key exchange with libssh; the negotiated host key is the one ssh
 * will be offered too, since both prefer ed25519.  No authentication.
 */
static int libssh_fetch(const char *host, unsigned port, unsigned timeout_ms, char **ret_key)
{
	ssh_session s = ssh_new();
	ssh_key key = NULL;
	char *b64 = NULL;
	long sec = (long)(timeout_ms / 1000), usec = (long)(timeout_ms % 1000) * 1000;
	int no = 0, ret = -EIO;

	if (!s)
		return -ENOMEM;
	if (ssh_options_set(s, SSH_OPTIONS_HOST, host) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_PORT, &port) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &sec) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_TIMEOUT_USEC, &usec) < 0 ||
	    ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no) < 0)
		goto out;
	if (ssh_connect(s) != SSH_OK) {
		ret = -ECONNREFUSED;
		goto out;
	}
	if (ssh_get_server_publickey(s, &key) == SSH_OK &&
	    ssh_pki_export_pubkey_base64(key, &b64) == SSH_OK) {
		*ret_key = xasprintf("%s %s", ssh_key_type_to_char(ssh_key_type(key)), b64);
		ret = 0;
	}
	ssh_disconnect(s);
out:
	if (b64)
		ssh_string_free_char(b64);
	ssh_key_free(key);
	ssh_free(s);
	return ret;
}

static const struct fetch_ops libssh_fetch_ops = { libssh_fetch };
/* Tests swap this table (STYLE.md 6). */
static const struct fetch_ops *fetch_ops = &libssh_fetch_ops;

/* ---- building the wanted known_hosts ---- */

static void peer_names(const struct peer *p, const char *id, struct strlist *names)
{
	const char *dot = strchr(id, '.');

	strlist_add_unique(names, id);
	if (dot && dot > id) {
		char *shortname = xstrndup(id, (size_t)(dot - id));

		strlist_add_unique(names, shortname);
		free(shortname);
	}
	if (valid_addr(p->addr))
		strlist_add_unique(names, p->addr);
	if (valid_addr(p->ipoib_addr))
		strlist_add_unique(names, p->ipoib_addr);
}

/* A name two live peers claim would pin one's key for the other: drop it from both. */
static void drop_shared_names(struct report *r, struct khosts *want, struct ssh_tally *t)
{
	for (size_t i = 0; i < want->n; i++)
		for (size_t j = 0; j < want->v[i].names.n; j++) {
			const char *n = want->v[i].names.v[j];
			bool shared = false;

			for (size_t k = i + 1; k < want->n; k++)
				for (size_t m = 0; m < want->v[k].names.n; m++)
					if (strcmp(want->v[k].names.v[m], n) == 0) {
						report_detail(r, "%s is claimed by both %s and %s; left out of "
							      KH_PATH " until one of them leaves",
							      n, want->v[i].id, want->v[k].id);
						free(want->v[k].names.v[m]);
						memmove(&want->v[k].names.v[m], &want->v[k].names.v[m + 1],
							(want->v[k].names.n - m) * sizeof(char *));
						want->v[k].names.n--;
						m--;
						shared = true;
					}
			if (shared) {
				free(want->v[i].names.v[j]);
				memmove(&want->v[i].names.v[j], &want->v[i].names.v[j + 1],
					(want->v[i].names.n - j) * sizeof(char *));
				want->v[i].names.n--;
				j--;
				t->degraded = true;
			}
		}
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
	fp_new = key_fingerprint(fresh);
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
			fp_old = key_fingerprint(old->keys.v[i]);
	if (!fp_old)
		fp_old = key_fingerprint(old->keys.v[0]);
	report_detail(r, "%s: HOST KEY CHANGED while the node stayed up (boot id %s): it "
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
		report_detail(r, "%s: published no host keys, left out of " KH_PATH " (ssh to it is "
			      "refused); publish them with discovery: shared, or opt in to trust on "
			      "first use with ssh: {host_keys: scan}", h->id);
		t->degraded = true;
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
		report_detail(r, "%s: cannot fetch its host key from %s:%u: %s; left out",
			      h->id, target, fetch_port(c->spec), strerror(-ret));
		t->degraded = true;
		return;
	}
	{
		char *fp = key_fingerprint(key);

		report_detail(r, "%s: host key %s fetched from %s (trust on first use, not verified)",
			      h->id, fp, target);
		free(fp);
	}
	strlist_push(&h->keys, key);
	free(key);
	t->tofu++;
}

static void want_hosts(struct ctx *c, struct report *r, const struct peerset *ps,
		       const struct khosts *old, struct khosts *want, struct ssh_tally *t)
{
	/* discovery: scan fetches host keys itself: trust on first use, not records. */
	bool scanned = c->spec->discovery.present && c->spec->discovery.method == DISC_SCAN;
	bool have_self = false;

	for (size_t i = 0; ps && i < ps->n; i++) {
		const struct peer *p = &ps->v[i];
		struct khost *h;
		char *id;

		if (!valid_hostname(p->hostname)) {
			report_detail(r, "a peer record has an invalid hostname; ignored");
			t->degraded = true;
			continue;
		}
		id = lowercase(p->hostname);
		if (khosts_find(want, id)) {
			report_detail(r, "%s: two peer records carry this hostname; the first is used", id);
			t->degraded = true;
			free(id);
			continue;
		}
		h = khosts_add(want, id, p->boot_id, p->self ? "local" : scanned ? "scan" : "record");
		peer_names(p, id, &h->names);
		if (p->self) {
			have_self = true;
			(void)sshkey_host_pubkeys(c, &h->keys);
		} else {
			for (size_t k = 0; k < p->host_keys.n; k++) {
				char *canon = sshkey_canonical(p->host_keys.v[k]);

				if (canon)
					strlist_add_unique(&h->keys, canon);
				else
					report_detail(r, "%s: a published host key is malformed; ignored", id);
				free(canon);
			}
		}
		free(id);
	}
	if (!have_self) {
		char name[256] = "";
		char *id;

		if (c->hostname)
			snprintf(name, sizeof(name), "%s", c->hostname);
		else
			(void)gethostname(name, sizeof(name) - 1);
		if (valid_hostname(name)) {
			struct khost *h;

			id = lowercase(name);
			h = khosts_add(want, id, "", "local");
			strlist_push(&h->names, id);
			(void)sshkey_host_pubkeys(c, &h->keys);
			free(id);
		}
	}
	drop_shared_names(r, want, t);
	for (size_t i = 0; i < want->n; i++) {
		struct khost *h = &want->v[i];
		const struct khost *o = khosts_find(old, h->id);
		const struct peer *p = NULL;

		for (size_t k = 0; ps && k < ps->n && !p; k++)
			if (ps->v[k].hostname && strcasecmp(ps->v[k].hostname, h->id) == 0)
				p = &ps->v[k];
		if (!h->keys.n && p && !p->self) {
			keys_from_network(c, r, p, o, h, t);
		} else {
			apply_key_policy(r, o, h, strcmp(h->source, "local") == 0, t);
			if (strcmp(h->source, "scan") == 0 && h->keys.n)
				t->tofu++;
		}
		t->host_keys += h->keys.n;
	}
	for (size_t i = 0; i < old->n; i++)
		if (*old->v[i].id && !khosts_find(want, old->v[i].id))
			report_detail(r, "%s: no longer a peer; its host keys are pruned", old->v[i].id);
	t->peers = want->n;
}

/* check: missing, extra and mismatched keys, by name and key type. */
static void kh_compare(struct report *r, const struct khosts *have, const struct khosts *want)
{
	for (size_t i = 0; i < want->n; i++)
		for (size_t j = 0; j < want->v[i].names.n; j++) {
			const char *name = want->v[i].names.v[j];

			for (size_t k = 0; k < want->v[i].keys.n; k++) {
				const char *key = want->v[i].keys.v[k];
				size_t tl = strcspn(key, " ");
				bool found = false, other = false;

				for (size_t a = 0; a < have->n; a++) {
					if (!strlist_has(&have->v[a].names, name))
						continue;
					for (size_t b = 0; b < have->v[a].keys.n; b++) {
						const char *hk = have->v[a].keys.v[b];

						if (strcmp(hk, key) == 0)
							found = true;
						else if (strncmp(hk, key, tl + 1) == 0)
							other = true;
					}
				}
				if (!found) {
					char *fp = key_fingerprint(key);

					report_detail(r, KH_PATH ": %s: %s key (want %s)", name,
						      other ? "mismatched" : "missing", fp);
					free(fp);
				}
			}
		}
	for (size_t a = 0; a < have->n; a++)
		for (size_t j = 0; j < have->v[a].names.n; j++) {
			const char *name = have->v[a].names.v[j];

			for (size_t b = 0; b < have->v[a].keys.n; b++) {
				const char *hk = have->v[a].keys.v[b];
				size_t tl = strcspn(hk, " ");
				bool wanted = false, same_type = false;

				for (size_t i = 0; i < want->n; i++) {
					if (!strlist_has(&want->v[i].names, name))
						continue;
					for (size_t k = 0; k < want->v[i].keys.n; k++) {
						if (strcmp(want->v[i].keys.v[k], hk) == 0)
							wanted = true;
						else if (strncmp(want->v[i].keys.v[k], hk, tl + 1) == 0)
							same_type = true;
					}
				}
				if (!wanted && !same_type) {
					char *fp = key_fingerprint(hk);

					report_detail(r, KH_PATH ": %s: extra key %s", name, fp);
					free(fp);
				}
			}
		}
}

/* ---- authorized_keys ---- */

struct akey {
	char *key;              /* "type base64" */
	char *comment;          /* user@host of the first node publishing it */
	struct strlist from;
};

static void akey_add(struct akey **v, size_t *n, const char *key, const char *user,
		     const char *host, const struct spec *s, const struct peer *p, bool self)
{
	struct akey *a = NULL;

	for (size_t i = 0; i < *n; i++)
		if (strcmp((*v)[i].key, key) == 0)
			a = &(*v)[i];
	if (!a) {
		*v = xrealloc(*v, (*n + 1) * sizeof(**v));
		a = &(*v)[(*n)++];
		memset(a, 0, sizeof(*a));
		a->key = xstrdup(key);
		a->comment = xasprintf("%s@%s", user, host);
	}
	if (s->cluster.has_network)
		strlist_add_unique(&a->from, s->cluster.network.text);
	else if (p && valid_addr(p->addr))
		strlist_add_unique(&a->from, p->addr);
	/* mpirun over hostfile.address: ipoib comes from the IPoIB address. */
	if (p && valid_addr(p->ipoib_addr))
		strlist_add_unique(&a->from, p->ipoib_addr);
	if (self) {
		/* "ssh <own hostname>" may resolve to 127.0.1.1 (Debian /etc/hosts). */
		strlist_add_unique(&a->from, "127.0.0.0/8");
		strlist_add_unique(&a->from, "::1");
	}
}

/*
 * The authorized_keys block for one user: every node's key for the same
 * user name, this node's own included (mpirun may ssh to itself).
 * self_pub is this node's key as read from ~/.ssh (NULL when absent).
 */
static char *ak_render(const struct spec *s, const struct peerset *ps, const char *user,
		       const char *self_pub, const char *self_host, struct report *r)
{
	struct akey *v = NULL;
	size_t n = 0;
	struct strbuf sb = STRBUF_INIT;
	bool self_done = false;

	for (size_t i = 0; ps && i < ps->n; i++) {
		const struct peer *p = &ps->v[i];
		const char *host = valid_hostname(p->hostname) ? p->hostname : "peer";

		if (p->self) {
			char *canon = self_pub ? sshkey_canonical(self_pub) : NULL;

			if (canon)
				akey_add(&v, &n, canon, user, host, s, p, true);
			free(canon);
			self_done = true;
			continue;
		}
		for (size_t k = 0; k < p->n_user_keys; k++) {
			char *canon;

			if (!p->user_keys[k].user || strcmp(p->user_keys[k].user, user) != 0)
				continue;
			canon = p->user_keys[k].key ? sshkey_canonical(p->user_keys[k].key) : NULL;
			if (canon)
				akey_add(&v, &n, canon, user, host, s, p, false);
			else if (r)
				report_detail(r, "%s: a published key of %s is malformed; ignored", host, user);
			free(canon);
		}
	}
	if (!self_done && self_pub) {
		char *canon = sshkey_canonical(self_pub);

		if (canon)
			akey_add(&v, &n, canon, user, self_host, s, NULL, true);
		free(canon);
	}
	for (size_t i = 0; i < n; i++) {
		if (s->ssh.restrict_from) {
			if (!v[i].from.n) {
				if (r)
					report_detail(r, "%s: no address known to restrict %s's key with "
						      "from=; left out", v[i].comment, user);
				goto next;
			}
			sb_append(&sb, "from=\"");
			for (size_t j = 0; j < v[i].from.n; j++)
				sb_printf(&sb, "%s%s", j ? "," : "", v[i].from.v[j]);
			sb_append(&sb, "\" ");
		}
		sb_printf(&sb, "%s %s\n", v[i].key, v[i].comment);
next:
		free(v[i].key);
		free(v[i].comment);
		strlist_free(&v[i].from);
	}
	free(v);
	return sb_steal(&sb);
}

/* Canonical keys of an authorized_keys block (and their comments), for details. */
static void ak_keys(const char *block, struct strlist *ret, struct strlist *comments)
{
	for (const char *p = block; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		const char *k = line;
		char *canon = NULL;

		p = nl ? nl + 1 : NULL;
		/* Skip a leading from="..." option. */
		if (strncmp(k, "from=\"", 6) == 0 && (k = strchr(k + 6, '"')))
			k++;
		if (k)
			canon = sshkey_canonical(k);
		if (canon && !strlist_has(ret, canon)) {
			/* type, base64, then the comment */
			k += strspn(k, " \t");
			k += strcspn(k, " \t");
			k += strspn(k, " \t");
			k += strcspn(k, " \t");
			k += strspn(k, " \t");
			strlist_push(ret, canon);
			if (comments)
				strlist_push(comments, k);
		}
		free(canon);
		free(line);
	}
}

static void ak_report_diff(struct ctx *c, struct report *r, const char *path,
			   const char *old_block, const char *new_block)
{
	struct strlist a = { 0 }, b = { 0 }, ac = { 0 }, bc = { 0 };

	ak_keys(old_block, &a, &ac);
	ak_keys(new_block, &b, &bc);
	for (size_t i = 0; i < b.n; i++)
		if (!strlist_has(&a, b.v[i])) {
			char *fp = key_fingerprint(b.v[i]);

			report_detail(r, "%s: %s %s %s", path, ctx_may_write(c) ? "authorized" : "missing",
				      fp, bc.v[i]);
			free(fp);
		}
	for (size_t i = 0; i < a.n; i++)
		if (!strlist_has(&b, a.v[i])) {
			char *fp = key_fingerprint(a.v[i]);

			report_detail(r, "%s: %s %s %s", path, ctx_may_write(c) ? "removed" : "extra",
				      fp, ac.v[i]);
			free(fp);
		}
	strlist_free(&a);
	strlist_free(&b);
	strlist_free(&ac);
	strlist_free(&bc);
}

static void self_hostname(const struct ctx *c, const struct peerset *ps, char *buf, size_t len)
{
	for (size_t i = 0; ps && i < ps->n; i++)
		if (ps->v[i].self && valid_hostname(ps->v[i].hostname)) {
			snprintf(buf, len, "%s", ps->v[i].hostname);
			return;
		}
	if (c->hostname)
		snprintf(buf, len, "%s", c->hostname);
	else if (gethostname(buf, len - 1) < 0 || !valid_hostname(buf))
		snprintf(buf, len, "localhost");
}

static int user_converge(struct ctx *c, struct report *r, const char *user,
			 struct ssh_tally *t)
{
	const struct spec *s = c->spec;
	char *home = NULL, *sshdir = NULL, *ak = NULL, *pub = NULL, *body = NULL;
	char *old = NULL, *old_block = NULL;
	char host[256];
	bool as_user;
	uid_t uid;
	gid_t gid;
	int ret;

	ret = fs_lookup_user(c, user, &uid, &gid, &home);
	if (ret < 0) {
		report_detail(r, "user %s: not found in /etc/passwd; create the account first "
			      "(cloud-init users:) or remove it from ssh.users", user);
		return ret;
	}
	sshdir = xasprintf("%s/.ssh", strcmp(home, "/") == 0 ? "" : home);
	ak = xasprintf("%s/authorized_keys", sshdir);
	ret = sshkey_ensure_user(c, r, user, s->ssh.key_type, &pub);
	if (ret < 0 && !(ret == -ENOENT && !ctx_may_write(c) && fs_exists(c, home)))
		goto out;
	ret = sshkey_check_path(c, r, sshdir, true, uid);
	if (ret == 0)
		ret = sshkey_check_path(c, r, ak, false, uid);
	if (ret < 0)
		goto out;
	self_hostname(c, c->peers, host, sizeof(host));
	body = ak_render(s, c->peers, user, pub, host, r);
	as_user = sshkey_fsid_user(c, home, uid, gid);
	if (fs_read(c, ak, &old, NULL) == 0)
		old_block = managed_block_get(old, s->cluster.name);
	ak_report_diff(c, r, ak, old_block, body);
	if (ctx_may_write(c) || fs_exists(c, sshdir))
		ret = fs_managed_block(c, r, ak, s->cluster.name, body, 0600, uid, gid);
	else
		ret = 0;        /* check/plan without ~/.ssh: reported by sshkey_ensure_user */
	sshkey_fsid_restore(as_user);
	if (ret >= 0) {
		struct strlist keys = { 0 };

		ak_keys(body, &keys, NULL);
		t->user_keys += keys.n;
		strlist_free(&keys);
		ret = 0;
	}
out:
	free(old);
	free(old_block);
	free(body);
	free(pub);
	free(ak);
	free(sshdir);
	free(home);
	return ret;
}

/*
 * The drop-in only works when the system ssh_config includes
 * ssh_config.d before any line that sets the same options.
 */
static void check_include(struct ctx *c, struct report *r, struct ssh_tally *t)
{
	char *text = NULL;
	bool included = false, overridden = false;

	if (fs_read(c, SYS_CONF, &text, NULL) < 0) {
		free(text);
		return;         /* no system file: the drop-in alone is not read either */
	}
	for (char *p = text; p && *p && !included;) {
		char *nl = strchr(p, '\n');
		char *w;

		if (nl)
			*nl = '\0';
		w = p + strspn(p, " \t");
		if (strncasecmp(w, "Include", 7) == 0 && strstr(w, "ssh_config.d/"))
			included = true;
		else if (strncasecmp(w, "StrictHostKeyChecking", 21) == 0 ||
			 strncasecmp(w, "GlobalKnownHostsFile", 20) == 0)
			overridden = true;
		p = nl ? nl + 1 : NULL;
	}
	if (!included) {
		report_detail(r, SYS_CONF " does not include " CONF_DIR "/*.conf, so " CONF_PATH
			      " has no effect: add \"Include " CONF_DIR "/*.conf\" at its top");
		t->degraded = true;
	} else if (overridden) {
		report_detail(r, SYS_CONF " sets StrictHostKeyChecking or GlobalKnownHostsFile before "
			      "it includes " CONF_DIR "; ssh uses the first value, so move the Include up");
		t->degraded = true;
	}
	free(text);
}

static int write_system_files(struct ctx *c, struct report *r, const struct khosts *want)
{
	const struct spec *s = c->spec;
	char *kh = kh_render(s, want), *conf = conf_render(s, want);
	int ret = 0;

	if (!fs_exists(c, "/etc/hpcinit"))
		ret = fs_mkdir_p(c, r, "/etc/hpcinit", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, KH_PATH, kh, strlen(kh), 0644, 0, 0);
	if (ret >= 0 && !fs_exists(c, CONF_DIR))
		ret = fs_mkdir_p(c, r, CONF_DIR, 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, CONF_PATH, conf, strlen(conf), 0644, 0, 0);
	free(kh);
	free(conf);
	return ret < 0 ? ret : 0;
}

static int ssh_run(struct ctx *c, struct report *r)
{
	const struct spec *s = c->spec;
	struct khosts old = { 0 }, want = { 0 };
	struct ssh_tally t = { 0 };
	char *text = NULL;
	int ret, err = 0;

	if (fs_read(c, KH_PATH, &text, NULL) == 0)
		kh_parse(text, &old);
	want_hosts(c, r, c->peers, &old, &want, &t);
	if (c->mode == RUN_CHECK)
		kh_compare(r, &old, &want);
	ret = write_system_files(c, r, &want);
	if (ret < 0)
		err = ret;
	check_include(c, r, &t);
	for (size_t i = 0; i < s->ssh.users.n; i++) {
		ret = user_converge(c, r, s->ssh.users.v[i], &t);
		if (ret < 0) {
			t.failed = true;
			if (!err)
				err = ret;
		} else {
			t.users++;
		}
	}

	if (t.refused) {
		struct strbuf names = STRBUF_INIT;

		for (size_t i = 0; i < t.refused_hosts.n; i++)
			sb_printf(&names, "%s%s", i ? ", " : "", t.refused_hosts.v[i]);
		report_set(r, ST_FAILED, "host key changed while the node stayed up: %s; refused "
			   "(see details)", sb_str(&names));
		sb_free(&names);
	} else if (err) {
		report_set(r, ST_FAILED, "%zu of %zu users set up; %s", t.users, s->ssh.users.n,
			   strerror(-err));
	} else {
		report_set(r, t.degraded ? ST_DEGRADED : ST_OK,
			   "%zu nodes, %zu host keys pinned%s, %zu users with %zu authorized keys",
			   t.peers, t.host_keys, t.tofu ? " (some trusted on first use)" : "",
			   t.users, t.user_keys);
	}
	strlist_free(&t.refused_hosts);
	khosts_free(&old);
	khosts_free(&want);
	free(text);
	return err;
}

static bool ssh_enabled(const struct spec *s)
{
	return s->ssh.present;
}

static uint64_t ssh_timeout(const struct spec *s)
{
	/* A first scan fetches one host key per peer, one after the other. */
	return s->ssh.host_keys == HOSTKEYS_SCAN ? 10 * 60 * 1000 : 60 * 1000;
}

static const char *const ssh_needs[] = { "discovery", NULL };

const struct module ssh_module = {
	.name = "ssh",
	.enabled = ssh_enabled,
	.needs = ssh_needs,
	.timeout_ms = ssh_timeout,
	.check = ssh_run,
	.apply = ssh_run,
};
