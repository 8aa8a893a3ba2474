/* SPDX-License-Identifier: MIT */
/*
 * host_keys: ca on the head (docs/ssh.md "Host certificates"): sign the
 * members' host keys into certs/<id>.cert, revoke what must not be
 * trusted any more into certs/revoked.keys and certs/revoked.krl.
 *
 * What the head signs follows pinned mode's rules for a key that changes
 * (known_hosts.c apply_key_policy): a member whose record shows a new host
 * key under the same boot id (the same running instance) is refused and
 * keeps its certificate; a new boot id (a rebuilt or rebooted node) gets
 * the new key signed and the replaced key revoked.  The boot id the head
 * signed for is kept in the certificate's key id,
 * "hpcinit:<cluster>:<id>:<boot id>".
 *
 * The revocation list is the head's own: its copy in HEAD_STATE_DIR is the
 * truth, the rendezvous holds what the head published.  A published KRL
 * that differs from the head's is written again (repaired), and the CA's
 * own key is never revoked, whatever revoked.keys says.  With a cluster
 * secret the head vouches for the KRL with an HMAC (revoked.krl.hmac) that
 * every node checks before it installs the KRL.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "proc.h"
#include "record.h"
#include "rendezvous/rendezvous.h"
#include "sshkey.h"
#include "ssh.h"
#include "number.h"

#define KEYGEN_TIMEOUT_MS 10000
#define HEAD_STATE_DIR "/var/lib/hpcinit/ssh-ca"       /* the head's own revocation list */

/* ---- running ssh-keygen ---- */

int ca_keygen(struct report *r, const char *const argv[])
{
	struct proc_result pr = { 0 };
	int ret = proc_run(argv, NULL, NULL, KEYGEN_TIMEOUT_MS, &pr);

	if (ret < 0) {
		report_detail(r, "%s: cannot run: %s", argv[0], strerror(-ret));
	} else if (pr.exit_code != 0) {
		char *cmd = argv_render(argv);

		report_detail(r, "%s: %s%s", cmd, pr.timed_out ? "timed out " : "",
			      pr.err_len ? pr.err : "failed");
		free(cmd);
		ret = -EIO;
	}
	proc_result_free(&pr);
	return ret;
}

static int write_host(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");
	int ret = 0;

	if (!f)
		return -errno;
	if (fputs(text, f) < 0)
		ret = -EIO;
	if (fclose(f) != 0 && !ret)
		ret = -EIO;
	return ret;
}

/* A boot id as it may go into a key id: [0-9a-f-], else "-" (unknown). */
static const char *boot_word(const char *b)
{
	if (!b || !*b || strlen(b) > 64 || strspn(b, "0123456789abcdef-") != strlen(b))
		return "-";
	return b;
}

/* The boot id a certificate was signed for (its key id's last field); "" when none. */
static char *cert_boot(const struct sshcert *ct)
{
	const char *p = ct->key_id;
	int colons = 0;

	for (const char *q = p; *q; q++)
		if (*q == ':' && ++colons == 3)
			return xstrdup(strcmp(q + 1, "-") ? q + 1 : "");
	return xstrdup("");
}

/* Sign key ("type base64") for id with principals names: the certificate line, or NULL. */
static char *sign_key(struct report *r, const char *tmp, const char *cakey, const char *cluster,
		      const struct khost *h, const char *key, uint64_t secs)
{
	char *pub = xasprintf("%s/host.pub", tmp), *cert = xasprintf("%s/host-cert.pub", tmp);
	char *kid = xasprintf("hpcinit:%s:%s:%s", cluster, h->id, boot_word(h->boot_id));
	char *val = xasprintf("-5m:+%llus", (unsigned long long)secs);
	struct strbuf pr = STRBUF_INIT;
	char *text = NULL, *ret = NULL;

	for (size_t i = 0; i < h->names.n; i++)
		sb_printf(&pr, "%s%s", i ? "," : "", h->names.v[i]);
	(void)unlink(cert);
	text = xasprintf("%s\n", key);
	if (write_host(pub, text) == 0) {
		const char *argv[] = { "ssh-keygen", "-q", "-s", cakey, "-h", "-I", kid, "-n", sb_str(&pr),
				       "-V", val, pub, NULL };

		free(text);
		text = NULL;
		if (ca_keygen(r, argv) == 0 && fs_read_host(cert, 64 * 1024, &text, NULL) == 0)
			ret = sshkey_canonical(text);
	}
	free(text);
	free(pub);
	free(cert);
	free(kid);
	free(val);
	sb_free(&pr);
	return ret;
}

static bool same_set(const struct strlist *a, const struct strlist *b)
{
	if (a->n != b->n)
		return false;
	for (size_t i = 0; i < a->n; i++)
		if (!strlist_has(b, a->v[i]))
			return false;
	return true;
}

/* One certificate of a member's old .cert file. */
struct oldcert {
	char *line;             /* canonical certificate */
	char *key;              /* the certified key */
	char *boot;             /* the boot id it was signed for; "" unknown */
	int64_t valid_before;
	bool good;              /* ours, a host cert for exactly the member's names, half its time left */
};

struct oldcerts {
	struct oldcert *v;
	size_t n;
};

static void oldcerts_free(struct oldcerts *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->v[i].line);
		free(o->v[i].key);
		free(o->v[i].boot);
	}
	free(o->v);
	memset(o, 0, sizeof(*o));
}

/* The certificates of text (a .cert file) signed by ca. */
static void oldcerts_parse(const char *text, const char *ca, const struct strlist *names,
			   uint64_t validity_s, int64_t now, struct oldcerts *ret)
{
	memset(ret, 0, sizeof(*ret));
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		struct sshcert ct;

		p = nl ? nl + 1 : NULL;
		if (sshcert_parse(line, &ct) == 0 && ca && strcmp(ct.ca_key, ca) == 0 && ct.cert_type == 2) {
			struct oldcert *o;

			ret->v = xrealloc(ret->v, (ret->n + 1) * sizeof(*ret->v));
			o = &ret->v[ret->n++];
			o->line = sshkey_canonical(line);
			o->key = xstrdup(ct.key);
			o->boot = cert_boot(&ct);
			o->valid_before = ct.valid_before > INT64_MAX ? INT64_MAX : (int64_t)ct.valid_before;
			o->good = o->line && same_set(&ct.principals, names) &&
				  o->valid_before > now + (int64_t)validity_s / 2;
			sshcert_free(&ct);
		} else if (sshcert_parse(line, &ct) == 0) {
			sshcert_free(&ct);
		}
		free(line);
	}
}

static const struct oldcert *oldcert_of(const struct oldcerts *o, const char *key)
{
	for (size_t i = 0; i < o->n; i++)
		if (strcmp(o->v[i].key, key) == 0)
			return &o->v[i];
	return NULL;
}

/*
 * The revocation list (revoked.keys): one line "<until> <type> <base64>
 * [<id>]" per revoked host key, until the time (epoch s) the last
 * certificate the head issued for it expires; id is the member it was
 * revoked for.  After that no certificate of the key is valid anyway, so
 * the entry is pruned and the KRL does not grow forever.  A line with no
 * time (written before times were kept) gets now + cert_validity.
 */
struct revoked {
	char *key;
	char *id;               /* "" unknown */
	int64_t until;
};

struct revlist {
	struct revoked *v;
	size_t n, cap;
};

static void rev_add(struct revlist *l, const char *key, int64_t until, const char *id)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0) {
			if (until > l->v[i].until)
				l->v[i].until = until;
			if (!*l->v[i].id && id && *id) {
				free(l->v[i].id);
				l->v[i].id = xstrdup(id);
			}
			return;
		}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n].key = xstrdup(key);
	l->v[l->n].id = xstrdup(id ? id : "");
	l->v[l->n++].until = until;
}

static const struct revoked *rev_find(const struct revlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0)
			return &l->v[i];
	return NULL;
}

static bool rev_has(const struct revlist *l, const char *key)
{
	return rev_find(l, key) != NULL;
}

static void rev_free(struct revlist *l)
{
	for (size_t i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].id);
	}
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void rev_parse(char *text, int64_t dflt, struct revlist *l)
{
	for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
		const char *end;
		char *canon, *sp;
		const char *id = "";
		long long until;

		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		if (!num_ll_prefix(p, LLONG_MIN, LLONG_MAX, &until, &end) || *end != ' ')
			until = dflt;
		else
			p += end - p + 1;
		/* "<type> <base64> <id>": the id is the key's comment. */
		sp = strchr(p, ' ');
		if (sp && (sp = strchr(sp + 1, ' ')) && record_hostname_valid(sp + 1))
			id = sp + 1;
		if ((canon = sshkey_canonical(p)))
			rev_add(l, canon, until, id);
		free(canon);
	}
}

/* Add the certified keys of a departed member's .cert file, until their certificates expire. */
static void revoke_file(const char *text, const char *id, struct revlist *revoked)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		struct sshcert ct;

		p = nl ? nl + 1 : NULL;
		if (sshcert_parse(line, &ct) == 0) {
			rev_add(revoked, ct.key, ct.valid_before > INT64_MAX ? INT64_MAX :
				(int64_t)ct.valid_before, id);
			sshcert_free(&ct);
		}
		free(line);
	}
}

/* The text the KRL's HMAC covers: the cluster's name, then the KRL's bytes. */
static int krl_mac(const char *key, size_t keylen, const char *cluster, const char *krl, size_t len,
		   char out[RECORD_HMAC_HEX + 1])
{
	struct strbuf sb = STRBUF_INIT;
	int r;

	sb_printf(&sb, "hpcinit-krl\n%s\n", cluster);
	sb_appendn(&sb, krl, len);
	r = record_hmac(key, keylen, sb.buf, sb.len, out);
	sb_free(&sb);
	return r;
}

int ca_krl_vouched(const struct spec *s, const char *key, size_t keylen, const char *krl,
		   size_t len, const char *mac_text)
{
	char mac[RECORD_HMAC_HEX + 1];

	if (!key)
		return 0;
	if (!mac_text)
		return -ENOKEY;
	if (krl_mac(key, keylen, s->cluster.name, krl, len, mac) < 0)
		return -EIO;
	return strncmp(mac_text, mac, RECORD_HMAC_HEX) == 0 &&
	       (mac_text[RECORD_HMAC_HEX] == '\n' || mac_text[RECORD_HMAC_HEX] == '\0') ? 0 : -EKEYREJECTED;
}

/* The head's state for one run. */
struct head {
	struct ctx *c;
	struct report *r;
	struct rendezvous *st;
	const struct khosts *want;
	char *ca, *cakey;
	char tmp[32];
	uint64_t secs;
	int64_t now;
	char *secret;
	size_t secret_len;
	struct revlist revoked;
	struct strbuf *certs;           /* per member of want: the .cert file to publish */
	size_t nsigned, nrevoked, npruned;
};

/* The revocation list the head keeps: its own copy, else (first run, rebuilt head) certs/'s. */
static int load_revoked(struct head *hd)
{
	char *text = NULL;
	int w = fs_read(hd->c, HEAD_STATE_DIR "/revoked.keys", &text, NULL);

	if (w < 0)
		w = ca_certs_get(hd->st, hd->r, "revoked.keys", &text, NULL);
	if (w == 0)
		rev_parse(text, hd->now + (int64_t)hd->secs, &hd->revoked);
	free(text);
	return w == -ENOENT ? 0 : w;
}

/*
 * One member: keep what still serves, refuse a key that changed under the
 * same boot id, sign the rest; a key the new certificate replaces is
 * revoked.  The .cert text goes to hd->certs[i].
 */
static void plan_member(struct head *hd, size_t i)
{
	const struct khost *h = &hd->want->v[i];
	char *name = xasprintf("%s.cert", h->id), *old = NULL;
	struct oldcerts oc = { 0 };
	bool refused = false;

	(void)ca_certs_get(hd->st, hd->r, name, &old, NULL);
	oldcerts_parse(old, hd->ca, &h->names, hd->secs, hd->now, &oc);
	/* Pinned mode's rule: a new key while the old certificates' boot id is the record's. */
	for (size_t k = 0; k < h->keys.n && !refused && oc.n; k++) {
		struct sshcert pc;

		if (sshcert_parse(h->keys.v[k], &pc) == 0) {
			sshcert_free(&pc);
			continue;
		}
		if (oldcert_of(&oc, h->keys.v[k]) || strcmp(h->source, "local") == 0)
			continue;
		for (size_t o = 0; o < oc.n && !refused; o++) {
			char *fp_new, *fp_old;

			if (oc.v[o].valid_before <= hd->now || strlist_has(&h->keys, oc.v[o].key))
				continue;
			if (*oc.v[o].boot && *h->boot_id && strcmp(oc.v[o].boot, h->boot_id) != 0)
				continue;       /* rebuilt or rebooted: the new key is signed below */
			fp_new = sshkey_fingerprint(h->keys.v[k]);
			fp_old = sshkey_fingerprint(oc.v[o].key);
			report_cluster(hd->r, "ssh.ca.host-key-changed",
				       "%s: HOST KEY CHANGED while the node stayed up (boot id %s): its record "
				       "publishes %s, certified is %s. Not signed: the old certificate stays. "
				       "If the change is intended, remove %s%s and run hpcinit refresh on the "
				       "head", h->id, *h->boot_id ? h->boot_id : "unknown", fp_new, fp_old,
				       hd->st->where, name);
			free(fp_new);
			free(fp_old);
			refused = true;
		}
	}
	if (refused) {
		for (size_t o = 0; o < oc.n; o++)
			if (oc.v[o].line && oc.v[o].valid_before > hd->now)
				sb_printf(&hd->certs[i], "%s %s\n", oc.v[o].line, h->id);
		goto out;
	}
	/* Keys of the old certificates that the member no longer has: replaced, so revoked. */
	for (size_t o = 0; o < oc.n; o++)
		if (!strlist_has(&h->keys, oc.v[o].key) && oc.v[o].valid_before > hd->now &&
		    !rev_has(&hd->revoked, oc.v[o].key)) {
			char *fp = sshkey_fingerprint(oc.v[o].key);

			rev_add(&hd->revoked, oc.v[o].key, oc.v[o].valid_before, h->id);
			report_detail(hd->r, "%s: host key %s replaced (boot id %s -> %s); its certificate "
				      "is revoked", h->id, fp, *oc.v[o].boot ? oc.v[o].boot : "unknown",
				      *h->boot_id ? h->boot_id : "unknown");
			free(fp);
		}
	for (size_t k = 0; k < h->keys.n; k++) {
		const struct oldcert *o = oldcert_of(&oc, h->keys.v[k]);
		const struct revoked *rv_;
		struct sshcert pc;
		char *cert = NULL;

		/* A record publishes plain host keys; a certificate there is refused. */
		if (sshcert_parse(h->keys.v[k], &pc) == 0) {
			bool ours = hd->ca && strcmp(pc.ca_key, hd->ca) == 0;
			char *fp = sshkey_fingerprint(pc.ca_key);

			report_cluster(hd->r, ours ? "ssh.ca.record-cert" : "ssh.ca.record-other-ca",
				       "%s: its record publishes a host certificate signed by %s (%s) "
				       "instead of a host key; not signed, left out", h->id,
				       ours ? "this CA" : "another CA", fp);
			free(fp);
			sshcert_free(&pc);
			continue;
		}
		if (hd->ca && strcmp(h->keys.v[k], hd->ca) == 0) {
			report_cluster(hd->r, "ssh.ca.record-ca-key",
				       "%s: its record publishes the CA's own key as a host key; not signed",
				       h->id);
			continue;
		}
		rv_ = rev_find(&hd->revoked, h->keys.v[k]);
		if (rv_ && !o && *rv_->id && strcmp(rv_->id, h->id) != 0) {
			char *fp = sshkey_fingerprint(h->keys.v[k]);

			report_cluster(hd->r, "ssh.ca.key-revoked",
				       "%s: host key %s was revoked for %s (a departed or replaced node's); "
				       "not signed", h->id, fp, rv_->id);
			free(fp);
			continue;
		}
		if (o && o->good)
			cert = xstrdup(o->line);
		if (!cert && (cert = sign_key(hd->r, hd->tmp, hd->cakey, hd->c->spec->cluster.name, h,
					      h->keys.v[k], hd->secs)))
			hd->nsigned++;
		if (cert)
			sb_printf(&hd->certs[i], "%s %s\n", cert, h->id);
		free(cert);
	}
out:
	oldcerts_free(&oc);
	free(old);
	free(name);
}

/* Build the KRL of keys with ssh-keygen -k: 0 and its bytes. */
static int make_krl(struct head *hd, const char *keys, char **krl, size_t *len)
{
	char *kf = xasprintf("%s/revoked.keys", hd->tmp), *kk = xasprintf("%s/revoked.krl", hd->tmp);
	const char *argv[] = { "ssh-keygen", "-q", "-k", "-f", kk, kf, NULL };
	int w = -EIO;

	if (write_host(kf, keys) == 0 && ca_keygen(hd->r, argv) == 0 &&
	    fs_read_host(kk, FS_MAX_READ, krl, len) == 0)
		w = 0;
	(void)unlink(kf);
	(void)unlink(kk);
	free(kf);
	free(kk);
	return w;
}

/*
 * The revocation list: pruned, never the CA's key, never a key its own
 * member holds again; kept in HEAD_STATE_DIR and published (with the
 * KRL's HMAC) to certs/, where a KRL that differs is written again.
 */
static int publish_revoked(struct head *hd)
{
	struct strbuf rk = STRBUF_INIT, keys = STRBUF_INIT;
	char *krl = NULL, *old_rk = NULL, *have = NULL;
	size_t krl_len = 0, have_len = 0;
	struct report scratch;
	int ret = 0, w;

	for (size_t i = 0; i < hd->revoked.n; i++) {
		const struct revoked *v = &hd->revoked.v[i];
		bool back = false;

		if (hd->ca && strcmp(v->key, hd->ca) == 0) {
			report_cluster(hd->r, "ssh.ca.revoke-ca",
				       "revoked.keys names the CA's own key: never revoked (that would "
				       "revoke every host certificate); dropped");
			continue;
		}
		/* A member back with the same key (a lease that lapsed) is not revoked. */
		for (size_t m = 0; m < hd->want->n && !back; m++)
			back = (!*v->id || strcmp(v->id, hd->want->v[m].id) == 0) &&
			       strlist_has(&hd->want->v[m].keys, v->key);
		if (back)
			continue;
		if (v->until <= hd->now) {
			hd->npruned++;
			continue;
		}
		sb_printf(&rk, "%lld %s%s%s\n", (long long)v->until, v->key, *v->id ? " " : "", v->id);
		sb_printf(&keys, "%s\n", v->key);
		hd->nrevoked++;
	}
	report_init(&scratch);
	(void)fs_read(hd->c, HEAD_STATE_DIR "/revoked.keys", &old_rk, NULL);
	if (ctx_may_write(hd->c))
		(void)fs_mkdir_p(hd->c, &scratch, HEAD_STATE_DIR, 0700, 0, 0);
	/* The KRL: made again when the list changed or the head has none. */
	if (old_rk && strcmp(old_rk, sb_str(&rk)) == 0 &&
	    fs_read(hd->c, HEAD_STATE_DIR "/revoked.krl", &krl, &krl_len) == 0) {
		/* the head's KRL stands */
	} else {
		free(krl);
		krl = NULL;
		if ((w = make_krl(hd, sb_str(&keys), &krl, &krl_len)) < 0)
			ret = w;
	}
	if (krl) {
		(void)fs_write(hd->c, &scratch, HEAD_STATE_DIR "/revoked.krl", krl, krl_len, 0600, 0, 0);
		(void)fs_write(hd->c, &scratch, HEAD_STATE_DIR "/revoked.keys", sb_str(&rk), rk.len,
			       0600, 0, 0);
		if ((w = rv_put(hd->st, hd->r, "revoked.keys", sb_str(&rk), rk.len)) < 0)
			ret = w;
		/* Repair: what certs/ holds must be the head's KRL, byte for byte. */
		w = ca_certs_get(hd->st, NULL, "revoked.krl", &have, &have_len);
		if (w < 0 || have_len != krl_len || memcmp(have, krl, krl_len) != 0) {
			if (w == 0)
				report_detail(hd->r, "%srevoked.krl differs from the head's; written again",
					      hd->st->where);
			if (w < 0 && w != -ENOENT)
				(void)rv_remove(hd->st, hd->r, "revoked.krl");
			if ((w = rv_put(hd->st, hd->r, "revoked.krl", krl, krl_len)) < 0)
				ret = w;
		}
		if (hd->secret) {
			char mac[RECORD_HMAC_HEX + 2];

			if (krl_mac(hd->secret, hd->secret_len, hd->c->spec->cluster.name, krl, krl_len,
				    mac) == 0) {
				strcat(mac, "\n");
				if ((w = rv_put(hd->st, hd->r, "revoked.krl.hmac", mac, strlen(mac))) < 0)
					ret = w;
			}
		}
	}
	report_free(&scratch);
	free(have);
	free(krl);
	free(old_rk);
	sb_free(&rk);
	sb_free(&keys);
	return ret;
}

/* Departed members: their certificates name an id no member has; their keys are revoked. */
static int revoke_departed(struct head *hd)
{
	struct strlist names = { 0 };
	struct smap ids;
	int ret = 0, w;

	smap_init(&ids, hd->want->n + 1);
	for (size_t i = 0; i < hd->want->n; i++)
		(void)smap_add(&ids, hd->want->v[i].id, i);
	(void)rv_names(hd->st, hd->r, &names);
	for (size_t n = 0; n < names.n; n++) {
		size_t l = strlen(names.v[n]);
		char *id, *text = NULL;

		if (l <= 5 || strcmp(names.v[n] + l - 5, ".cert") != 0)
			continue;
		id = xstrndup(names.v[n], l - 5);
		if (smap_get(&ids, id, NULL)) {
			free(id);
			continue;
		}
		if (ca_certs_get(hd->st, hd->r, names.v[n], &text, NULL) == 0) {
			revoke_file(text, id, &hd->revoked);
			report_detail(hd->r, "%s: no longer a member; its host keys are revoked", id);
		}
		if ((w = rv_remove(hd->st, hd->r, names.v[n])) < 0)
			ret = w;
		free(text);
		free(id);
	}
	smap_free(&ids);
	strlist_free(&names);
	return ret;
}

/* Does the CA key file hold the private half of ca_public_key? */
static int check_ca_key(struct head *hd)
{
	const char *argv[] = { "ssh-keygen", "-y", "-f", hd->cakey, NULL };
	struct proc_result pr = { 0 };
	char *got = NULL;
	int ret = proc_run(argv, NULL, NULL, KEYGEN_TIMEOUT_MS, &pr);

	if (ret == 0 && pr.exit_code == 0)
		got = sshkey_canonical(pr.out);
	if (!got || !hd->ca || strcmp(got, hd->ca) != 0) {
		report_finding(hd->r, ST_FAILED, "ssh.ca.key-mismatch",
			       "%s is not the private key of ssh.ca_public_key (%s); nothing signed",
			       hd->c->spec->ssh.ca_key_file, got ? "another key" : pr.err_len ? pr.err :
			       "unreadable");
		ret = -EKEYREJECTED;
	}
	free(got);
	proc_result_free(&pr);
	return ret;
}

int ca_head_sign(struct ctx *c, struct report *r, const struct khosts *want, struct rendezvous *st,
		 const char *secret, size_t secret_len, size_t *ret_signed, size_t *ret_revoked,
		 size_t *ret_pruned)
{
	const struct spec *s = c->spec;
	struct head hd = {
		.c = c, .r = r, .st = st, .want = want, .secs = s->ssh.cert_validity_ms / 1000,
		.now = (int64_t)time(NULL), .ca = sshkey_canonical(s->ssh.ca_public_key),
		.cakey = ctx_path(c, s->ssh.ca_key_file), .tmp = "/tmp/hpcinit-ca.XXXXXX",
	};
	int ret = 0, w;

	*ret_signed = *ret_revoked = *ret_pruned = 0;
	if (secret) {
		hd.secret = xmalloc(secret_len + 1);
		memcpy(hd.secret, secret, secret_len);
	}
	hd.secret_len = secret_len;
	if (!ctx_may_write(c)) {
		report_detail(r, "apply signs the members' host keys with %s", s->ssh.ca_key_file);
		goto out;
	}
	/* The CA key as the cluster secret: root's alone, a regular file (ssh-keygen checks less). */
	if ((ret = fs_check_private(c, r, "ssh.ca_key_file", s->ssh.ca_key_file)) < 0) {
		report_finding(r, ST_FAILED, "ssh.ca.key-unsafe",
			       "ssh.ca_key_file %s is not safe to sign with (see details); nothing signed",
			       s->ssh.ca_key_file);
		goto out;
	}
	if (!mkdtemp(hd.tmp)) {
		ret = -errno;
		report_detail(r, "cannot make a temporary directory: %s", strerror(-ret));
		goto out;
	}
	if ((ret = check_ca_key(&hd)) < 0 || (ret = load_revoked(&hd)) < 0)
		goto rm;        /* a refused revoked.keys: rebuilt from nothing, it would drop every revocation */
	hd.certs = xcalloc(want->n + 1, sizeof(*hd.certs));
	for (size_t i = 0; i < want->n; i++) {
		hd.certs[i] = (struct strbuf)STRBUF_INIT;
		plan_member(&hd, i);
	}
	/* Revocations first: a node that finds its certificate finds the KRL too. */
	if ((w = revoke_departed(&hd)) < 0)
		ret = w;
	if ((w = publish_revoked(&hd)) < 0)
		ret = w;
	for (size_t i = 0; i < want->n; i++) {
		char *name = xasprintf("%s.cert", want->v[i].id);

		if (hd.certs[i].len && (w = rv_put(st, r, name, sb_str(&hd.certs[i]), hd.certs[i].len)) < 0)
			ret = w;
		free(name);
		sb_free(&hd.certs[i]);
	}
	free(hd.certs);
rm:
	{
		char *p1 = xasprintf("%s/host.pub", hd.tmp), *p2 = xasprintf("%s/host-cert.pub", hd.tmp);

		(void)unlink(p1);
		(void)unlink(p2);
		free(p1);
		free(p2);
		(void)rmdir(hd.tmp);
	}
out:
	*ret_signed = hd.nsigned;
	*ret_revoked = hd.nrevoked;
	*ret_pruned = hd.npruned;
	rev_free(&hd.revoked);
	if (hd.secret) {
		explicit_bzero(hd.secret, hd.secret_len);
		free(hd.secret);
	}
	free(hd.cakey);
	free(hd.ca);
	return ret;
}
