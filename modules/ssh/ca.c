/* SPDX-License-Identifier: MIT */
/*
 * ssh.host_keys: ca and ssh.hostbased (docs/ssh.md "Host certificates",
 * "Host-based login").
 *
 *   head (cluster.role head, ssh.ca_key_file): signs every member's host
 *       keys with ssh-keygen -s (principals: the names known_hosts.c gives
 *       it: hostname, short name, addresses) into <id>.cert of the
 *       rendezvous (store.c: the shared directory or etcd), revokes the
 *       keys of members that left into revoked.krl and prunes revocations
 *       whose certificates have expired;
 *   every node: installs its own certificate (checked: our CA, its own
 *       key, its own names) as /etc/ssh/ssh_host_<type>_key-cert.pub, the
 *       KRL as /etc/hpcinit/ssh_revoked_keys, and names them in an
 *       sshd_config.d drop-in; reloads sshd when that changed;
 *   hostbased: /etc/ssh/shosts.equiv (members' names and addresses) and
 *       the members' keys (or the CA line) in /etc/ssh/ssh_known_hosts,
 *       the file sshd reads to check a client host;
 *   neither (any more): what hpcinit made for them is removed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "proc.h"
#include "sshkey.h"
#include "ssh.h"

#define KEYGEN_TIMEOUT_MS 10000
#define KEYSIGN_PATH "/usr/lib/openssh/ssh-keysign"
#define CERT_WAIT_MS 30000

/* The self entry of want (source local). */
static const struct khost *self_host(const struct khosts *hosts)
{
	for (size_t i = 0; i < hosts->n; i++)
		if (strcmp(hosts->v[i].source, "local") == 0)
			return &hosts->v[i];
	return NULL;
}

/* The cluster's DNS domain: what follows the first dot of this node's name, or NULL. */
static const char *cluster_domain(const struct khosts *hosts)
{
	const struct khost *h = self_host(hosts);
	const char *dot = h ? strchr(h->id, '.') : NULL;

	return dot && dot[1] ? dot + 1 : NULL;
}

/*
 * cluster.network as a host pattern, rounded out to a whole octet: ssh's
 * patterns cannot say /25.  The CA signs only members' addresses, so the
 * wider pattern trusts no address the CA did not name.
 */
static char *net_pattern(const struct spec *s)
{
	const struct cidr *n = &s->cluster.network;
	const unsigned char *b;

	if (!s->cluster.has_network || n->family != AF_INET)
		return NULL;
	b = (const unsigned char *)&n->addr.v4.s_addr;
	if (n->prefix >= 24)
		return xasprintf("%u.%u.%u.*", b[0], b[1], b[2]);
	if (n->prefix >= 16)
		return xasprintf("%u.%u.*", b[0], b[1]);
	if (n->prefix >= 8)
		return xasprintf("%u.*", b[0]);
	return xstrdup("*.*.*.*");
}

void ca_host_patterns(const struct spec *s, const struct khosts *hosts, struct strlist *ret)
{
	const char *dom = cluster_domain(hosts);
	char *net = net_pattern(s);

	/* Short names: anything without a dot (the names admit_record accepts). */
	strlist_push(ret, "* !*.*");
	if (dom)
		strlist_push_take(ret, xasprintf("*.%s", dom));
	if (net)
		strlist_push_take(ret, net);
}

char *ca_kh_render(const struct spec *s, const struct khosts *hosts)
{
	struct strbuf sb = STRBUF_INIT;
	char *ca = sshkey_canonical(s->ssh.ca_public_key);
	const char *dom = cluster_domain(hosts);
	char *net = net_pattern(s);

	sb_printf(&sb, "# hpcinit: the host CA of cluster %s (ssh module, host_keys: ca).\n"
		  "# A member's host certificate, signed by this CA for its own names and\n"
		  "# address, is what ssh checks; the same lines at any cluster size.\n",
		  s->cluster.name);
	if (ca) {
		sb_printf(&sb, "@cert-authority *,!*.* %s\n", ca);
		if (dom || net)
			sb_printf(&sb, "@cert-authority %s%s%s%s %s\n", dom ? "*." : "", dom ? dom : "",
				  dom && net ? "," : "", net ? net : "", ca);
	}
	free(net);
	free(ca);
	return sb_steal(&sb);
}

/* ---- running ssh-keygen ---- */

static int keygen(struct report *r, const char *const argv[])
{
	struct proc_result pr = { 0 };
	int ret = proc_run(argv, NULL, NULL, KEYGEN_TIMEOUT_MS, &pr);

	if (ret < 0) {
		report_detail(r, "ssh-keygen: cannot run: %s", strerror(-ret));
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

/* Sign key ("type base64") for id with principals names: the certificate line, or NULL. */
static char *sign_key(struct report *r, const char *tmp, const char *cakey, const char *cluster,
		      const char *id, const struct strlist *names, const char *key, uint64_t secs)
{
	char *pub = xasprintf("%s/host.pub", tmp), *cert = xasprintf("%s/host-cert.pub", tmp);
	char *kid = xasprintf("hpcinit:%s:%s", cluster, id), *val = xasprintf("-5m:+%llus",
									       (unsigned long long)secs);
	struct strbuf pr = STRBUF_INIT;
	char *text = NULL, *ret = NULL;

	for (size_t i = 0; i < names->n; i++)
		sb_printf(&pr, "%s%s", i ? "," : "", names->v[i]);
	(void)unlink(cert);
	text = xasprintf("%s\n", key);
	if (write_host(pub, text) == 0) {
		const char *argv[] = { "ssh-keygen", "-q", "-s", cakey, "-h", "-I", kid, "-n", sb_str(&pr),
				       "-V", val, pub, NULL };

		free(text);
		text = NULL;
		if (keygen(r, argv) == 0 && fs_read_host(cert, 64 * 1024, &text, NULL) == 0)
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

/*
 * The certificate of key in text (a .cert file) that still serves: signed
 * by ca for exactly names, and less than half its validity used.
 */
static char *cert_still_good(const char *text, const char *key, const char *ca,
			     const struct strlist *names, uint64_t validity_s, int64_t now)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		struct sshcert ct;

		p = nl ? nl + 1 : NULL;
		if (sshcert_parse(line, &ct) == 0) {
			bool good = strcmp(ct.key, key) == 0 && strcmp(ct.ca_key, ca) == 0 &&
				    ct.cert_type == 2 && same_set(&ct.principals, names) &&
				    (int64_t)ct.valid_before > now + (int64_t)validity_s / 2;

			sshcert_free(&ct);
			if (good) {
				char *ret = sshkey_canonical(line);

				free(line);
				return ret;
			}
		}
		free(line);
	}
	return NULL;
}

/*
 * The revocation list the head keeps (revoked.keys): one line
 * "<until> <type> <base64>" per revoked host key, until the time (epoch s)
 * the last certificate the head issued for it expires.  After that no
 * certificate of the key is valid anyway, so the entry is pruned and the KRL
 * does not grow forever.  A line with no time (written before times were
 * kept) gets now + cert_validity, the longest any certificate of it can run.
 */
struct revoked {
	char *key;
	int64_t until;
};

struct revlist {
	struct revoked *v;
	size_t n, cap;
};

static void rev_add(struct revlist *l, const char *key, int64_t until)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i].key, key) == 0) {
			if (until > l->v[i].until)
				l->v[i].until = until;
			return;
		}
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->v = xrealloc(l->v, l->cap * sizeof(*l->v));
	}
	l->v[l->n].key = xstrdup(key);
	l->v[l->n++].until = until;
}

static void rev_free(struct revlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i].key);
	free(l->v);
	memset(l, 0, sizeof(*l));
}

static void rev_parse(char *text, int64_t dflt, struct revlist *l)
{
	for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
		char *end, *canon;
		long long until;

		nl = strchr(p, '\n');
		if (nl)
			*nl = '\0';
		until = strtoll(p, &end, 10);
		if (end == p || *end != ' ')
			until = dflt;
		else
			p = end + 1;
		if ((canon = sshkey_canonical(p)))
			rev_add(l, canon, until);
		free(canon);
	}
}

/* Add the certified keys of a departed member's .cert file, until their certificates expire. */
static void revoke_file(const char *text, struct revlist *revoked)
{
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		struct sshcert ct;

		p = nl ? nl + 1 : NULL;
		if (sshcert_parse(line, &ct) == 0) {
			rev_add(revoked, ct.key, ct.valid_before > INT64_MAX ? INT64_MAX :
				(int64_t)ct.valid_before);
			sshcert_free(&ct);
		}
		free(line);
	}
}

/* Build the KRL of keys with ssh-keygen -k and store it as revoked.krl. */
static int write_krl(struct cstore *st, struct report *r, const char *tmp, const char *keys)
{
	char *kf = xasprintf("%s/revoked.keys", tmp), *kk = xasprintf("%s/revoked.krl", tmp);
	const char *argv[] = { "ssh-keygen", "-q", "-k", "-f", kk, kf, NULL };
	char *krl = NULL;
	size_t krl_len = 0;
	int w;

	if (write_host(kf, keys) == 0 && keygen(r, argv) == 0 &&
	    fs_read_host(kk, FS_MAX_READ, &krl, &krl_len) == 0)
		w = cstore_write(st, r, "revoked.krl", krl, krl_len);
	else
		w = -EIO;
	(void)unlink(kf);
	(void)unlink(kk);
	free(kf);
	free(kk);
	free(krl);
	return w;
}

/*
 * The head: sign what lacks a good certificate, revoke the keys of members
 * whose certificate has no member any more, keep (and prune) the KRL.
 */
static int head_sign(struct ctx *c, struct report *r, const struct khosts *want,
		     struct cstore *st, size_t *ret_signed, size_t *ret_revoked, size_t *ret_pruned)
{
	const struct spec *s = c->spec;
	uint64_t secs = s->ssh.cert_validity_ms / 1000;
	char *ca = sshkey_canonical(s->ssh.ca_public_key), *cakey = ctx_path(c, s->ssh.ca_key_file);
	char tmp[] = "/tmp/hpcinit-ca.XXXXXX";
	char *old_rk = NULL;
	struct revlist revoked = { 0 };
	struct strlist current = { 0 }, names = { 0 };
	struct smap ids;
	int64_t now = (int64_t)time(NULL);
	int ret = 0, w;

	*ret_signed = *ret_revoked = *ret_pruned = 0;
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
	if (!mkdtemp(tmp)) {
		ret = -errno;
		report_detail(r, "cannot make a temporary directory: %s", strerror(-ret));
		goto out;
	}
	/* The CA key file must hold the private half of ca_public_key. */
	{
		const char *argv[] = { "ssh-keygen", "-y", "-f", cakey, NULL };
		struct proc_result pr = { 0 };
		char *got = NULL;

		ret = proc_run(argv, NULL, NULL, KEYGEN_TIMEOUT_MS, &pr);
		if (ret == 0 && pr.exit_code == 0)
			got = sshkey_canonical(pr.out);
		if (!got || !ca || strcmp(got, ca) != 0) {
			report_finding(r, ST_FAILED, "ssh.ca.key-mismatch",
				       "%s is not the private key of ssh.ca_public_key (%s); nothing signed",
				       s->ssh.ca_key_file, got ? "another key" : pr.err_len ? pr.err :
				       "unreadable");
			ret = -EKEYREJECTED;
		}
		free(got);
		proc_result_free(&pr);
		if (ret < 0)
			goto rm;
	}
	/* Revocations first: a node that finds its certificate finds the KRL too. */
	smap_init(&ids, want->n + 1);
	for (size_t i = 0; i < want->n; i++) {
		(void)smap_add(&ids, want->v[i].id, i);
		for (size_t k = 0; k < want->v[i].keys.n; k++)
			strlist_push(&current, want->v[i].keys.v[k]);
	}
	if (cstore_read(st, "revoked.keys", &old_rk, NULL) == 0)
		rev_parse(old_rk, now + (int64_t)secs, &revoked);
	/* Departed members: their certificates name an id no member has. */
	cstore_names(st, &names);
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
		if (cstore_read(st, names.v[n], &text, NULL) == 0) {
			revoke_file(text, &revoked);
			report_detail(r, "%s: no longer a member; its host keys are revoked", id);
		}
		if ((w = cstore_remove(st, r, names.v[n])) < 0)
			ret = w;
		free(text);
		free(id);
	}
	smap_free(&ids);
	{
		/* A member back with the same key (a lease that lapsed) is not revoked. */
		struct strbuf rk = STRBUF_INIT, keys = STRBUF_INIT;

		for (size_t i = 0; i < revoked.n; i++) {
			if (strlist_has(&current, revoked.v[i].key))
				continue;
			if (revoked.v[i].until <= now) {
				(*ret_pruned)++;
				continue;
			}
			sb_printf(&rk, "%lld %s\n", (long long)revoked.v[i].until, revoked.v[i].key);
			sb_printf(&keys, "%s\n", revoked.v[i].key);
			(*ret_revoked)++;
		}
		w = cstore_write(st, r, "revoked.keys", sb_str(&rk), rk.len);
		if (w < 0)
			ret = w;
		else if ((w > 0 || !cstore_has(st, "revoked.krl")) &&
			 (w = write_krl(st, r, tmp, sb_str(&keys))) < 0)
			ret = w;
		sb_free(&rk);
		sb_free(&keys);
	}
	for (size_t i = 0; i < want->n; i++) {
		const struct khost *h = &want->v[i];
		char *name = xasprintf("%s.cert", h->id), *old = NULL;
		struct strbuf out = STRBUF_INIT;

		(void)cstore_read(st, name, &old, NULL);
		for (size_t k = 0; k < h->keys.n; k++) {
			struct sshcert pc;
			char *cert;

			/* A record publishes plain host keys; a certificate there is refused. */
			if (sshcert_parse(h->keys.v[k], &pc) == 0) {
				bool ours = ca && strcmp(pc.ca_key, ca) == 0;
				char *fp = sshkey_fingerprint(pc.ca_key);

				report_finding(r, ours ? ST_DEGRADED : ST_FAILED,
					       ours ? "ssh.ca.record-cert" : "ssh.ca.record-other-ca",
					       "%s: its record publishes a host certificate signed by %s (%s) "
					       "instead of a host key; not signed, left out", h->id,
					       ours ? "this CA" : "another CA", fp);
				free(fp);
				sshcert_free(&pc);
				continue;
			}
			cert = old ? cert_still_good(old, h->keys.v[k], ca, &h->names, secs, now) : NULL;

			if (!cert) {
				cert = sign_key(r, tmp, cakey, s->cluster.name, h->id, &h->names,
						h->keys.v[k], secs);
				if (cert)
					(*ret_signed)++;
			}
			if (cert)
				sb_printf(&out, "%s %s\n", cert, h->id);
			free(cert);
		}
		if (out.len && (w = cstore_write(st, r, name, sb_str(&out), out.len)) < 0)
			ret = w;
		free(name);
		free(old);
		sb_free(&out);
	}
rm:
	{
		char *p1 = xasprintf("%s/host.pub", tmp), *p2 = xasprintf("%s/host-cert.pub", tmp);

		(void)unlink(p1);
		(void)unlink(p2);
		free(p1);
		free(p2);
		(void)rmdir(tmp);
	}
out:
	rev_free(&revoked);
	strlist_free(&current);
	strlist_free(&names);
	free(old_rk);
	free(cakey);
	free(ca);
	return ret;
}

/* "ed25519" for "ssh-ed25519 ...", as in /etc/ssh/ssh_host_<type>_key. */
static const char *key_file_type(const char *key)
{
	if (strncmp(key, "ssh-ed25519 ", 12) == 0)
		return "ed25519";
	if (strncmp(key, "ecdsa-", 6) == 0)
		return "ecdsa";
	if (strncmp(key, "ssh-rsa ", 8) == 0)
		return "rsa";
	return NULL;
}

/*
 * This node's certificates from the rendezvous, each checked: a host
 * certificate signed by ca_public_key, for one of this node's own host
 * keys, naming only names this node has.  The accepted ones are installed
 * next to their keys; *conf gets their HostCertificate lines.
 */
static int install_own(struct ctx *c, struct report *r, const struct khost *self,
		       const struct cstore *st, struct strbuf *conf, bool *changed)
{
	const struct spec *s = c->spec;
	char *name = xasprintf("%s.cert", self->id), *text = NULL;
	char *path = xasprintf("%s%s", st->where, name);
	char *ca = sshkey_canonical(s->ssh.ca_public_key);
	int64_t now = (int64_t)time(NULL);
	size_t installed = 0;
	int ret = 0;

	if (cstore_read(st, name, &text, NULL) < 0) {
		report_finding(r, ST_DEGRADED, "ssh.ca.no-certificate",
			       "%s: no certificate for this node yet (the head signs it on its next run); "
			       "members cannot check this node's host key until then", path);
		goto out;
	}
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
		struct sshcert ct;
		const char *ft;
		char *bad = NULL;

		p = nl ? nl + 1 : NULL;
		if (sshcert_parse(line, &ct) < 0) {
			report_finding(r, ST_DEGRADED, "ssh.ca.bad-certificate",
				       "%s: a line is not an OpenSSH certificate; ignored", path);
			free(line);
			continue;
		}
		for (size_t i = 0; i < ct.principals.n && !bad; i++)
			if (!strlist_has(&self->names, ct.principals.v[i]))
				bad = ct.principals.v[i];
		if (!ca || strcmp(ct.ca_key, ca) != 0) {
			char *fp = sshkey_fingerprint(ct.ca_key);

			report_finding(r, ST_FAILED, "ssh.ca.other-ca",
				       "%s: certificate signed by another CA (%s), not ssh.ca_public_key; "
				       "refused", path, fp);
			free(fp);
		} else if (ct.cert_type != 2) {
			report_finding(r, ST_FAILED, "ssh.ca.not-host-cert",
				       "%s: a user certificate, not a host certificate; refused", path);
		} else if (!strlist_has(&self->keys, ct.key)) {
			/* A rebuilt node's old certificate, until the head signs the new key. */
			report_finding(r, ST_DEGRADED, "ssh.ca.not-own-key",
				       "%s: certifies a key this node does not hold (stale, or not ours); "
				       "not installed", path);
		} else if (bad) {
			report_finding(r, ST_FAILED, "ssh.ca.foreign-name",
				       "%s: certificate names %s, which is not this node's; refused", path, bad);
		} else if ((int64_t)ct.valid_before <= now) {
			report_finding(r, ST_DEGRADED, "ssh.ca.expired",
				       "%s: the certificate expired; the head renews it on its next run", path);
		} else if ((ft = key_file_type(ct.key))) {
			char *dst = xasprintf("/etc/ssh/ssh_host_%s_key-cert.pub", ft);
			char *canon = sshkey_canonical(line);
			char *body = xasprintf("%s\n", canon);
			int w;

			free(canon);
			w = fs_write(c, r, dst, body, strlen(body), 0644, 0, 0);
			if (w < 0)
				ret = w;
			else if (w > 0)
				*changed = true;
			sb_printf(conf, "HostCertificate %s\n", dst);
			installed++;
			free(body);
			free(dst);
		}
		sshcert_free(&ct);
		free(line);
	}
	if (installed)
		report_detail(r, "%zu host certificate%s installed from %s", installed,
			      installed == 1 ? "" : "s", path);
out:
	free(ca);
	free(text);
	free(path);
	free(name);
	return ret;
}

/* Does <id>.cert hold a certificate of one of self's keys? */
static bool cert_ready(const struct cstore *st, const struct khost *self)
{
	char *name = xasprintf("%s.cert", self->id), *text = NULL;
	bool ready = false;

	if (cstore_read(st, name, &text, NULL) == 0)
		for (const char *p = text; p && *p && !ready;) {
			const char *nl = strchr(p, '\n');
			char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));
			struct sshcert ct;

			p = nl ? nl + 1 : NULL;
			if (sshcert_parse(line, &ct) == 0) {
				ready = strlist_has(&self->keys, ct.key);
				sshcert_free(&ct);
			}
			free(line);
		}
	free(text);
	free(name);
	return ready;
}

/*
 * A joining node's certificate appears when the head next runs: apply
 * waits for it a little (CERT_WAIT_MS), so that a node brought up together
 * with the head ends its first run with its certificate installed.
 */
static void wait_for_cert(struct report *r, const struct khost *self, struct cstore *st)
{
	struct timespec ts = { 0, 250 * 1000 * 1000 };
	unsigned waited = 0;
	struct report scratch;

	report_init(&scratch);
	while (!cert_ready(st, self) && waited < CERT_WAIT_MS) {
		nanosleep(&ts, NULL);
		waited += 250;
		if (cstore_reload(st, &scratch) < 0)
			break;
	}
	report_free(&scratch);
	if (waited)
		report_detail(r, "waited %u ms for this node's certificate", waited);
}

/* ---- hostbased ---- */

static int hostbased_files(struct ctx *c, struct report *r, const struct khosts *want,
			   const char *kh_text)
{
	struct strbuf eq = STRBUF_INIT;
	struct stat st;
	char *ks = ctx_path(c, KEYSIGN_PATH);
	int ret, w;

	sb_printf(&eq, "# hpcinit: the members of cluster %s (ssh.hostbased); rebuilt on every run.\n",
		  c->spec->cluster.name);
	for (size_t i = 0; i < want->n; i++)
		for (size_t j = 0; j < want->v[i].names.n; j++)
			sb_printf(&eq, "%s\n", want->v[i].names.v[j]);
	ret = fs_write(c, r, SHOSTS_PATH, sb_str(&eq), eq.len, 0644, 0, 0);
	/* sshd checks a client host's key in /etc/ssh/ssh_known_hosts only. */
	w = fs_managed_block(c, r, SYS_KNOWN_HOSTS, c->spec->cluster.name, kh_text, 0644, 0, 0);
	if (w < 0)
		ret = w;
	if (stat(ks, &st) < 0 || !(st.st_mode & S_ISUID) || st.st_uid != 0)
		report_finding(r, ST_DEGRADED, "ssh.hostbased.no-keysign",
			       KEYSIGN_PATH " is %s: the ssh client cannot sign host-based logins; "
			       "install openssh-client (it ships ssh-keysign setuid root)",
			       access(ks, F_OK) == 0 ? "not setuid root" : "missing");
	free(ks);
	sb_free(&eq);
	return ret < 0 ? ret : 0;
}

/* ---- sshd ---- */

static int sshd_reload(struct ctx *c, struct report *r)
{
	char *text = NULL, *pidfile = NULL;
	struct proc_result pr = { 0 };
	int ret;

	if (c->root && *c->root && strcmp(c->root, "/") != 0) {
		report_detail(r, "sshd not reloaded (fake root)");
		return 0;
	}
	{
		const char *argv[] = { "/usr/sbin/sshd", "-t", NULL };

		ret = proc_run(argv, NULL, NULL, KEYGEN_TIMEOUT_MS, &pr);
		if (ret < 0 || pr.exit_code != 0) {
			report_finding(r, ST_FAILED, "ssh.sshd.config-invalid",
				       "sshd -t rejects the configuration with " SSHD_CONF_PATH ": %s; "
				       "sshd not reloaded", ret < 0 ? strerror(-ret) : pr.err);
			proc_result_free(&pr);
			return -EINVAL;
		}
		proc_result_free(&pr);
	}
	if (fs_exists(c, "/run/systemd/system")) {
		const char *argv[] = { "systemctl", "reload-or-restart", "ssh", NULL };

		ret = keygen(r, argv);
		if (ret == 0)
			report_detail(r, "sshd reloaded (systemctl reload ssh)");
		return ret;
	}
	/* No systemd (containers, the simulated cluster): SIGHUP by sshd's PidFile. */
	if (fs_read(c, "/etc/ssh/sshd_config", &text, NULL) == 0)
		for (char *p = text, *nl; p && *p; p = nl ? nl + 1 : NULL) {
			char *w;

			nl = strchr(p, '\n');
			if (nl)
				*nl = '\0';
			w = p + strspn(p, " \t");
			if (strncasecmp(w, "PidFile", 7) == 0 && (w[7] == ' ' || w[7] == '\t')) {
				w += 7 + strspn(w + 7, " \t");
				pidfile = xstrdup(w);
				break;
			}
		}
	free(text);
	text = NULL;
	if (!pidfile)
		pidfile = xstrdup("/run/sshd.pid");
	ret = fs_read(c, pidfile, &text, NULL);
	if (ret == 0) {
		long pid = strtol(text, NULL, 10);
		char comm[64] = "", *cp = xasprintf("/proc/%ld/comm", pid);
		FILE *f = pid > 1 ? fopen(cp, "re") : NULL;

		if (f) {
			if (!fgets(comm, sizeof(comm), f))
				comm[0] = '\0';
			fclose(f);
		}
		if (strncmp(comm, "sshd", 4) != 0 || kill((pid_t)pid, SIGHUP) < 0)
			ret = -ESRCH;
		else
			report_detail(r, "sshd reloaded (SIGHUP to %ld from %s)", pid, pidfile);
		free(cp);
	}
	if (ret < 0)
		report_finding(r, ST_DEGRADED, "ssh.sshd.not-reloaded",
			       "no running sshd found (%s): the new " SSHD_CONF_PATH " takes effect "
			       "when sshd starts", pidfile);
	free(pidfile);
	free(text);
	return 0;
}

/* sshd_config must include sshd_config.d for the drop-in to count. */
static void check_sshd_include(struct ctx *c, struct report *r)
{
	char *text = NULL;

	if (fs_read(c, "/etc/ssh/sshd_config", &text, NULL) == 0 &&
	    !strstr(text, "sshd_config.d/"))
		report_finding(r, ST_DEGRADED, "ssh.sshd.no-include",
			       "/etc/ssh/sshd_config does not include " SSHD_CONF_DIR "/*.conf, so "
			       SSHD_CONF_PATH " has no effect: add \"Include " SSHD_CONF_DIR
			       "/*.conf\" at its top");
	free(text);
}

/* Is the file at path a host certificate hpcinit installed (key id "hpcinit:...")? */
static bool our_cert(struct ctx *c, const char *path)
{
	char *text = NULL;
	struct sshcert ct;
	bool ours = false;

	if (fs_read(c, path, &text, NULL) == 0 && sshcert_parse(text, &ct) == 0) {
		ours = strncmp(ct.key_id, "hpcinit:", 8) == 0;
		sshcert_free(&ct);
	}
	free(text);
	return ours;
}

/* Does the file at path begin with hpcinit's header line? */
static bool our_file(struct ctx *c, const char *path)
{
	char *text = NULL;
	bool ours = fs_read(c, path, &text, NULL) == 0 && strncmp(text, "# hpcinit: ", 11) == 0;

	free(text);
	return ours;
}

/*
 * host_keys no longer ca: the certificates hpcinit installed and the local
 * KRL go (the drop-in that named them is rewritten or removed by the caller).
 */
static int ca_remove(struct ctx *c, struct report *r, bool *changed)
{
	static const char *const types[] = { "ed25519", "ecdsa", "rsa" };
	int ret = 0, w;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char *p = xasprintf("/etc/ssh/ssh_host_%s_key-cert.pub", types[i]);

		if (our_cert(c, p)) {
			if ((w = fs_remove(c, r, p)) < 0)
				ret = w;
			else if (w > 0)
				*changed = true;
		}
		free(p);
	}
	if (fs_exists(c, REVOKED_PATH) && (w = fs_remove(c, r, REVOKED_PATH)) < 0)
		ret = w;
	return ret;
}

/* hostbased no longer on: hpcinit's shosts.equiv and its block of the system known_hosts go. */
static int hostbased_remove(struct ctx *c, struct report *r)
{
	int ret = 0, w;

	if (our_file(c, SHOSTS_PATH) && (w = fs_remove(c, r, SHOSTS_PATH)) < 0)
		ret = w;
	if (fs_exists(c, SYS_KNOWN_HOSTS)) {
		char *text = NULL, *block = NULL;

		if (fs_read(c, SYS_KNOWN_HOSTS, &text, NULL) == 0)
			block = managed_block_get(text, c->spec->cluster.name);
		if (block && (w = fs_managed_block(c, r, SYS_KNOWN_HOSTS, c->spec->cluster.name, NULL,
						    0644, 0, 0)) < 0)
			ret = w;
		free(block);
		free(text);
	}
	return ret;
}

int ca_hostbased_converge(struct ctx *c, struct report *r, const struct khosts *want,
			  const char *kh_text)
{
	const struct spec *s = c->spec;
	const struct khost *self = self_host(want);
	struct strbuf conf = STRBUF_INIT;
	bool changed = false, ca = s->ssh.host_keys == HOSTKEYS_CA;
	struct cstore st = { 0 };
	bool st_open = false;
	int ret = 0, w;

	if (ca && s->cluster.role != ROLE_HEAD && fs_exists(c, CA_KEY_DEFAULT)) {
		report_finding(r, ST_FAILED, "ssh.ca.key-on-compute",
			       CA_KEY_DEFAULT " exists on a compute node: the CA private key belongs on "
			       "the head only (whoever holds it can vouch for any host). Remove it; "
			       "nothing was signed or installed");
		return -EPERM;
	}
	sb_printf(&conf, "# hpcinit: sshd settings of cluster %s (ssh module); rebuilt on every run.\n",
		  s->cluster.name);
	if (ca && !(s->discovery.present && (s->discovery.method == DISC_SHARED ||
					     s->discovery.method == DISC_ETCD))) {
		report_finding(r, ST_FAILED, "ssh.ca.no-rendezvous",
			       "host_keys: ca publishes certificates in the rendezvous (discovery.method "
			       "shared or etcd); discovery.method %s has no place for them",
			       s->discovery.present ? disc_method_name(s->discovery.method) : "(none)");
		ca = false;
		ret = -EOPNOTSUPP;
	}
	if (ca) {
		if ((w = cstore_open(c, r, &st)) < 0) {
			report_finding(r, ST_FAILED, "ssh.ca.store-unreachable",
				       "cannot read the certificates in %s: %s; nothing signed or installed",
				       st.where, strerror(-w));
			cstore_close(&st);
			sb_free(&conf);
			return w;
		}
		st_open = true;
		if (s->cluster.role == ROLE_HEAD && s->ssh.ca_key_file) {
			size_t nsigned = 0, nrevoked = 0, npruned = 0;

			if (!st.etcd && !fs_exists(c, st.dir) && ctx_may_write(c))
				(void)fs_mkdir_p(c, r, st.dir, 0755, 0, 0);
			w = head_sign(c, r, want, &st, &nsigned, &nrevoked, &npruned);
			if (w < 0)
				ret = w;
			report_detail(r, "CA: %zu certificate%s signed, %zu host key%s revoked, "
				      "%zu expired revocation%s pruned (in %s)", nsigned,
				      nsigned == 1 ? "" : "s", nrevoked, nrevoked == 1 ? "" : "s",
				      npruned, npruned == 1 ? "" : "s", st.where);
		}
		if (self && ctx_may_write(c) && s->cluster.role != ROLE_HEAD)
			wait_for_cert(r, self, &st);
		if (self) {
			w = install_own(c, r, self, &st, &conf, &changed);
			if (w < 0)
				ret = w;
		}
		{
			char *krl = NULL;
			size_t len = 0;

			/* No KRL yet: an empty list (ssh reads it as "nothing revoked"). */
			if (cstore_read(&st, "revoked.krl", &krl, &len) < 0)
				len = 0;
			w = fs_write(c, r, REVOKED_PATH, krl ? krl : "", len, 0644, 0, 0);
			if (w < 0)
				ret = w;
			free(krl);
		}
	} else if ((w = ca_remove(c, r, &changed)) < 0) {
		ret = w;
	}
	if (s->ssh.hostbased) {
		w = hostbased_files(c, r, want, kh_text);
		if (w < 0)
			ret = w;
		sb_append(&conf, "HostbasedAuthentication yes\n");
	} else if ((w = hostbased_remove(c, r)) < 0) {
		ret = w;
	}
	if (!ca && !s->ssh.hostbased) {
		/* Nothing for sshd: the drop-in goes (sshd's own settings apply again). */
		if (our_file(c, SSHD_CONF_PATH)) {
			w = fs_remove(c, r, SSHD_CONF_PATH);
			if (w < 0)
				ret = w;
			else if (w > 0)
				changed = true;
		}
	} else {
		if (!fs_exists(c, SSHD_CONF_DIR))
			(void)fs_mkdir_p(c, r, SSHD_CONF_DIR, 0755, 0, 0);
		w = fs_write(c, r, SSHD_CONF_PATH, sb_str(&conf), conf.len, 0644, 0, 0);
		if (w < 0)
			ret = w;
		else if (w > 0)
			changed = true;
		check_sshd_include(c, r);
	}
	if (changed && ctx_may_write(c) && (w = sshd_reload(c, r)) < 0)
		ret = w;
	sb_free(&conf);
	if (st_open)
		cstore_close(&st);
	return ret;
}
