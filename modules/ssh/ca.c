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
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "fsutil.h"
#include "proc.h"
#include "rendezvous/rendezvous.h"
#include "sshkey.h"
#include "systemd.h"
#include "ssh.h"
#include "number.h"

#define KEYGEN_TIMEOUT_MS 10000
#define KEYSIGN_PATH "/usr/lib/openssh/ssh-keysign"
#define CERT_WAIT_MS 30000
#define CERTS_MAX_BYTES (1024 * 1024)  /* the largest file of certs/ read (a KRL of many keys) */

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

/* ---- the certs collection of the rendezvous (lib/rendezvous) ---- */

/*
 * Open certs/: in the shared directory with every check nodes/ gets (one
 * trusted owner, no links, no special files, bounded, read without
 * blocking), or under /hpcinit/<cluster>/certs/ in etcd.  The head creates
 * it (the anonymous uid's on its own root-squashed export); a compute that
 * finds none yet gets -ENOENT and reads it as empty.
 */
static int certs_open(struct ctx *c, struct report *r, const struct khost *self, bool head,
		      struct rendezvous *st)
{
	struct rv_opts o = {
		.collection = "certs",
		.self = self ? self->id : c->hostname ? c->hostname : "localhost",
		.max_bytes = CERTS_MAX_BYTES,
		.create = head,
	};

	return rv_open(c, r, &o, st);
}

/*
 * Does the head vouch for this KRL?  With a cluster secret, only a KRL
 * whose revoked.krl.hmac the secret verifies is installed: a record writer
 * who is not the head cannot empty the list (un-revoking a departed node)
 * or fill it (revoking every host).  Without one, the rendezvous's owner
 * checks (shared) or etcd's access control (the computes' user may not
 * write certs/) are what vouch for it.
 */
static bool krl_vouched(struct ctx *c, struct report *r, struct rendezvous *st, const char *secret,
			size_t secret_len, const char *krl, size_t len)
{
	char *mac = NULL;
	int w;

	if (!secret)
		return true;
	w = ca_certs_read(st, r, "revoked.krl.hmac", &mac, NULL);
	if (w == 0)
		w = ca_krl_vouched(c->spec, secret, secret_len, krl, len, mac);
	free(mac);
	/* Not the head's: a cluster finding; this node keeps the last good KRL. */
	if (w < 0)
		report_cluster(r, "ssh.ca.krl-not-vouched",
			       "%srevoked.krl: %s; not installed (" REVOKED_PATH " stays as it was)",
			       st->where, w == -ENOENT ? "no revoked.krl.hmac from the head" :
			       "its HMAC does not verify with the cluster secret (not the head's)");
	return w == 0;
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

/* How one certificate line stands for this node (cert_judge). */
enum cert_verdict {
	CERT_GOOD,      /* to install */
	CERT_STALE,     /* the head's, but not usable: another key of this node's, or expired */
	CERT_FORGED,    /* one the head never writes: not a certificate, another CA, a user's, a name not ours */
};

/*
 * Judge one line: a host certificate signed by ca, for one of self's host
 * keys, naming only self's names, not expired.  CERT_GOOD fills *ct (the
 * caller frees it); else the finding's tag and text (after "<path>: ").
 */
static enum cert_verdict cert_judge(const char *line, const struct khost *self, const char *ca,
				    int64_t now, struct sshcert *ct, const char **tag, char *why, size_t len)
{
	const char *bad = NULL;

	if (sshcert_parse(line, ct) < 0) {
		*tag = "ssh.ca.bad-certificate";
		snprintf(why, len, "a line is not an OpenSSH certificate; ignored");
		return CERT_FORGED;
	}
	for (size_t i = 0; i < ct->principals.n && !bad; i++)
		if (!strlist_has(&self->names, ct->principals.v[i]))
			bad = ct->principals.v[i];
	if (!ca || strcmp(ct->ca_key, ca) != 0) {
		char *fp = sshkey_fingerprint(ct->ca_key);

		*tag = "ssh.ca.other-ca";
		snprintf(why, len, "certificate signed by another CA (%s), not ssh.ca_public_key; refused", fp);
		free(fp);
	} else if (ct->cert_type != 2) {
		*tag = "ssh.ca.not-host-cert";
		snprintf(why, len, "a user certificate, not a host certificate; refused");
	} else if (!strlist_has(&self->keys, ct->key)) {
		/* A rebuilt node's old certificate, until the head signs the new key. */
		*tag = "ssh.ca.not-own-key";
		snprintf(why, len, "certifies a key this node does not hold (stale, or not ours); not installed");
		sshcert_free(ct);
		return CERT_STALE;
	} else if (bad) {
		*tag = "ssh.ca.foreign-name";
		snprintf(why, len, "certificate names %s, which is not this node's; refused", bad);
	} else if ((int64_t)ct->valid_before <= now) {
		*tag = "ssh.ca.expired";
		snprintf(why, len, "the certificate expired; the head renews it on its next run");
		sshcert_free(ct);
		return CERT_STALE;
	} else {
		return CERT_GOOD;
	}
	sshcert_free(ct);
	return CERT_FORGED;
}

/*
 * Nothing usable in certs/ (a certificate not signed yet, or one the head
 * did not write): the certificates installed before that are still good
 * (cert_judge) stay in use.  How many were kept.
 */
static size_t keep_installed(struct ctx *c, struct report *r, const struct khost *self, const char *ca,
			     int64_t now, struct strbuf *conf)
{
	static const char *const types[] = { "ed25519", "ecdsa", "rsa" };
	size_t kept = 0;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char *dst = xasprintf("/etc/ssh/ssh_host_%s_key-cert.pub", types[i]), *text = NULL, why[256];
		const char *tag, *ft;
		struct sshcert ct;

		if (fs_read(c, dst, &text, NULL) == 0) {
			text[strcspn(text, "\n")] = '\0';
			if (cert_judge(text, self, ca, now, &ct, &tag, why, sizeof(why)) == CERT_GOOD) {
				ft = key_file_type(ct.key);
				if (ft && strcmp(ft, types[i]) == 0) {
					sb_printf(conf, "HostCertificate %s\n", dst);
					report_detail(r, "%s: the last good certificate, kept", dst);
					kept++;
				}
				sshcert_free(&ct);
			}
		}
		free(text);
		free(dst);
	}
	return kept;
}

/* Install one good certificate next to its key; *conf gets its HostCertificate line.  1, 0 or -errno. */
static int install_cert(struct ctx *c, struct report *r, const char *line, const struct sshcert *ct,
			struct strbuf *conf, bool *changed)
{
	const char *ft = key_file_type(ct->key);
	char *dst, *canon, *body;
	int w;

	if (!ft)
		return 0;
	dst = xasprintf("/etc/ssh/ssh_host_%s_key-cert.pub", ft);
	canon = sshkey_canonical(line);
	body = xasprintf("%s\n", canon);
	w = fs_write(c, r, dst, body, strlen(body), 0644, 0, 0);
	if (w > 0)
		*changed = true;
	sb_printf(conf, "HostCertificate %s\n", dst);
	free(body);
	free(canon);
	free(dst);
	return w < 0 ? w : 1;
}

/*
 * This node's certificates from the rendezvous, each judged (cert_judge).
 * The good ones are installed next to their keys; *conf gets their
 * HostCertificate lines.  A bad KRL or certificate keeps the last good one
 * (docs/ssh.md "Refusals"): one the head never writes (another CA, ...) is
 * a cluster finding, and with none usable in certs/ the good certificates
 * installed before stay.  Only a node left with none has a problem of its
 * own: ssh.ca.no-certificate, or the stale certificate's finding.
 */
static int install_own(struct ctx *c, struct report *r, const struct khost *self,
		       struct rendezvous *st, struct strbuf *conf, bool *changed)
{
	const struct spec *s = c->spec;
	char *name = xasprintf("%s.cert", self->id), *text = NULL;
	char *path = xasprintf("%s%s", st->where, name);
	char *ca = sshkey_canonical(s->ssh.ca_public_key);
	int64_t now = (int64_t)time(NULL);
	size_t installed = 0, kept = 0;
	struct report stale;
	int ret;

	report_init(&stale);
	ret = ca_certs_read(st, r, name, &text, NULL);
	if (ret < 0 && ret != -ENOENT && ret != -EKEYREJECTED)
		goto out;       /* the rendezvous did not answer */
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n'), *tag;
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p)), why[512];
		struct sshcert ct;
		enum cert_verdict v = cert_judge(line, self, ca, now, &ct, &tag, why, sizeof(why));

		p = nl ? nl + 1 : NULL;
		if (v == CERT_FORGED) {
			report_cluster(r, tag, "%s: %s", path, why);
		} else if (v == CERT_STALE) {
			report_finding(&stale, ST_DEGRADED, tag, "%s: %s", path, why);
		} else {
			int w = install_cert(c, r, line, &ct, conf, changed);

			if (w < 0)
				ret = w;
			installed += w > 0;
			sshcert_free(&ct);
		}
		free(line);
	}
	if (installed)
		report_detail(r, "%zu host certificate%s installed from %s", installed,
			      installed == 1 ? "" : "s", path);
	else
		kept = keep_installed(c, r, self, ca, now, conf);
	for (size_t i = 0; i < stale.n_findings && (installed || kept); i++)
		report_cluster(r, stale.findings[i].tag, "%s", stale.findings[i].text);
	if (!installed && !kept && stale.n_findings)
		report_take_findings(r, &stale);
	else if (!installed && !kept)
		report_finding(r, ST_DEGRADED, "ssh.ca.no-certificate",
			       "%s: no %scertificate for this node yet (the head signs it on its next run); "
			       "members cannot check this node's host key until then", path,
			       text ? "usable " : "");
	if (ret == -ENOENT || ret == -EKEYREJECTED)
		ret = 0;
out:
	report_free(&stale);
	free(ca);
	free(text);
	free(path);
	free(name);
	return ret;
}

/* Does <id>.cert hold a certificate of one of self's keys? */
static bool cert_ready(struct rendezvous *st, const struct khost *self)
{
	char *name = xasprintf("%s.cert", self->id), *text = NULL;
	bool ready = false;

	if (rv_get(st, name, &text, NULL) == 0)
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
static void wait_for_cert(struct ctx *c, struct report *r, const struct khost *self,
			  struct rendezvous *st)
{
	unsigned waited = 0;
	struct report scratch;

	report_init(&scratch);
	while (!cert_ready(st, self) && waited < CERT_WAIT_MS) {
		sleep_ms(250);
		waited += 250;
		if (!st->ops) {
			/* certs/ did not exist yet: the head makes it with the first certificate. */
			rv_close(st);
			if (certs_open(c, &scratch, self, false, st) < 0 && !st->ops &&
			    ctx_remaining_ms(c) == 0)
				break;
		} else if (rv_reload(st, &scratch) < 0) {
			break;
		}
	}
	report_free(&scratch);
	if (waited)
		report_detail(r, "waited %u ms for this node's certificate", waited);
}

/* ---- hostbased ---- */

/*
 * The ssh client, running as the user, loads the host's public keys to ask
 * ssh-keysign for a signature: a public key only root can read ("no local
 * public host keys could be loaded") leaves host-based login nothing to
 * offer.  cloud-init writes the ssh_keys: it is given with mode 0600 (found
 * on VMs).  A public key is public: apply makes it 0644, check reports it.
 */
static int hostbased_pubkeys(struct ctx *c, struct report *r)
{
	static const char *const types[] = { "ed25519", "ecdsa", "rsa" };
	int ret = 0;

	for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
		char *rel = xasprintf("/etc/ssh/ssh_host_%s_key.pub", types[i]), *abs = ctx_path(c, rel);
		char *text = NULL;
		size_t len = 0;
		struct stat st;

		if (lstat(abs, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == 0 && !(st.st_mode & S_IROTH)) {
			if (!ctx_may_write(c))
				report_finding(r, ST_DEGRADED, "ssh.hostbased.pubkey-unreadable",
					       "%s is mode %04o: users' ssh cannot load it for host-based login; "
					       "apply makes it 0644 (a public key)", rel, (unsigned)(st.st_mode & 07777));
			else if (fs_read(c, rel, &text, &len) == 0 && (ret = fs_write(c, r, rel, text, len, 0644,
										     0, st.st_gid)) >= 0)
				report_detail(r, "%s: made readable (0644) for host-based login", rel);
		}
		free(text);
		free(abs);
		free(rel);
	}
	return ret < 0 ? ret : 0;
}

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
	w = hostbased_pubkeys(c, r);
	return ret < 0 ? ret : w;
}

/* ---- sshd ---- */

/* sshd's pid file: PidFile of /etc/ssh/sshd_config, else /run/sshd.pid.  malloc'd. */
static char *sshd_pidfile(struct ctx *c)
{
	char *text = NULL, *pidfile = NULL;

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
	return pidfile ? pidfile : xstrdup("/run/sshd.pid");
}

/*
 * sshd reloads by re-executing itself on SIGHUP (systemd's reload of
 * ssh.service is that SIGHUP too): its listening sockets closed, then new
 * ones opened.  A run that returned in between left a node whose sshd
 * refused the peers that now trust it (tests/cluster/ssh-ca-etcd.sh: an
 * old node's ssh to a new one right after the new one's apply, "Connection
 * refused").  So a reload waits, up to SSHD_RELISTEN_MS, until sshd listens
 * on sockets none of which it held before (old: n_old > 0; with none, no
 * daemon listened -- socket activation, or none running -- and nothing is
 * waited for).
 */
#define SSHD_RELISTEN_MS 5000
#define SSHD_LISTEN_MAX 16

static void sshd_relisten(struct ctx *c, struct report *r, const char *pidfile, const unsigned long long *old,
			  int n_old)
{
	uint64_t start = now_ms(), left = ctx_remaining_ms(c);
	uint64_t end = start + (left < SSHD_RELISTEN_MS ? left : SSHD_RELISTEN_MS);

	if (n_old <= 0)
		return;
	for (;;) {
		unsigned long long cur[SSHD_LISTEN_MAX];
		pid_t pid = daemon_pid(c, pidfile, "sshd", 0, NULL, 0);
		int n = pid ? daemon_listening(c, pid, cur, SSHD_LISTEN_MAX) : 0;
		bool fresh = n > 0;

		for (int i = 0; i < n && fresh; i++)
			for (int j = 0; j < n_old; j++)
				fresh = fresh && cur[i] != old[j];
		if (fresh)
			return;
		if (now_ms() >= end) {
			report_detail(r, "sshd not listening again %" PRIu64 " ms after its reload", now_ms() - start);
			return;
		}
		usleep(10000);
	}
}

static int sshd_reload(struct ctx *c, struct report *r)
{
	char *pidfile = NULL;
	struct proc_result pr = { 0 };
	unsigned long long old[SSHD_LISTEN_MAX];
	int ret, n_old = 0;
	pid_t pid;

	if (services_refused(c, r, "sshd reload"))
		return 0;
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
	pidfile = sshd_pidfile(c);
	pid = daemon_pid(c, pidfile, "sshd", 0, NULL, 0);
	if (pid)
		n_old = daemon_listening(c, pid, old, SSHD_LISTEN_MAX);
	if (systemd_booted(c)) {
		/* Debian's unit is ssh.service, RHEL's sshd.service: found, not assumed. */
		const char *unit = sshd_unit(c);
		const char *argv[] = { "systemctl", "reload-or-restart", unit ? unit : "ssh.service", NULL };

		ret = ca_keygen(r, argv);
		if (ret < 0 && !unit) {
			argv[2] = "sshd.service";
			ret = ca_keygen(r, argv);
		}
		if (ret == 0) {
			report_detail(r, "sshd reloaded (systemctl reload-or-restart %s)", argv[2]);
			sshd_relisten(c, r, pidfile, old, n_old);
		}
		free(pidfile);
		return ret;
	}
	/* No systemd (containers, the simulated cluster): SIGHUP by sshd's PidFile. */
	if (!pid || kill(pid, SIGHUP) < 0) {
		report_finding(r, ST_DEGRADED, "ssh.sshd.not-reloaded",
			       "no running sshd found (%s): the new " SSHD_CONF_PATH " takes effect "
			       "when sshd starts", pidfile);
	} else {
		report_detail(r, "sshd reloaded (SIGHUP to %ld from %s)", (long)pid, pidfile);
		sshd_relisten(c, r, pidfile, old, n_old);
	}
	free(pidfile);
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

/*
 * The revocation list from the certs collection, once its HMAC vouches for
 * it.  No KRL yet: an empty list (ssh reads it as "nothing revoked").  A
 * refused one, one the head did not vouch for, or one gone after this node
 * installed one: a cluster finding, and the local copy (the last good KRL)
 * stays as it was.  0 or -errno.
 */
static int install_krl(struct ctx *c, struct report *r, struct rendezvous *st, const char *secret,
		       size_t secret_len)
{
	char *krl = NULL;
	size_t len = 0;
	int w = ca_certs_read(st, r, "revoked.krl", &krl, &len);

	if (w == 0 && !krl_vouched(c, r, st, secret, secret_len, krl, len))
		w = -EKEYREJECTED;
	if (w == -ENOENT && fs_exists(c, REVOKED_PATH) && st->ops) {
		/* The head never takes its KRL away: a missing one un-revokes nobody. */
		report_cluster(r, "ssh.ca.krl-missing", "%srevoked.krl: missing (the head publishes it on "
			       "every run); " REVOKED_PATH " stays as it was", st->where);
		w = -EKEYREJECTED;
	}
	if (w == 0 || w == -ENOENT)
		w = fs_write(c, r, REVOKED_PATH, krl ? krl : "", w == 0 ? len : 0, 0644, 0, 0);
	else if (w == -EKEYREJECTED)
		w = 0;          /* the last good KRL stays */
	free(krl);
	return w < 0 ? w : 0;
}

/*
 * sshd's drop-in: conf written (its directory made when missing, sshd's
 * Include checked), or with conf NULL removed when it is ours (sshd's own
 * settings apply again).  *changed set when the file changed.  0 or -errno.
 */
static int sshd_conf_converge(struct ctx *c, struct report *r, const struct strbuf *conf, bool *changed)
{
	int w;

	if (!conf) {
		if (!our_file(c, SSHD_CONF_PATH))
			return 0;
		w = fs_remove(c, r, SSHD_CONF_PATH);
	} else {
		if (!fs_exists(c, SSHD_CONF_DIR))
			(void)fs_mkdir_p(c, r, SSHD_CONF_DIR, 0755, 0, 0);
		w = fs_write(c, r, SSHD_CONF_PATH, sb_str(conf), conf->len, 0644, 0, 0);
		check_sshd_include(c, r);
	}
	if (w > 0)
		*changed = true;
	return w < 0 ? w : 0;
}

int ca_hostbased_converge(struct ctx *c, struct report *r, const struct khosts *want,
			  const char *kh_text)
{
	const struct spec *s = c->spec;
	const struct khost *self = self_host(want);
	struct strbuf conf = STRBUF_INIT;
	bool changed = false, ca = s->ssh.host_keys == HOSTKEYS_CA;
	struct rendezvous st = { 0 };
	bool st_open = false;
	char *secret = NULL;
	size_t secret_len = 0;
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
	if (ca && (w = rv_secret_load(c, r, &secret, &secret_len)) < 0) {
		report_finding(r, ST_FAILED, "ssh.ca.no-secret", "cluster secret unusable; nothing "
			       "signed or installed");
		sb_free(&conf);
		return w;
	}
	if (ca) {
		bool head = s->cluster.role == ROLE_HEAD && s->ssh.ca_key_file;

		w = certs_open(c, r, self, head, &st);
		st_open = true;
		if (w < 0 && w != -ENOENT) {
			report_finding(r, ST_FAILED, "ssh.ca.store-unreachable",
				       "cannot read the certificates in %s: %s; nothing signed or installed",
				       st.where, strerror(-w));
			rv_close(&st);
			sb_free(&conf);
			if (secret)
				explicit_bzero(secret, secret_len);
			free(secret);
			return w;
		}
		if (head && w == 0) {
			size_t nsigned = 0, nrevoked = 0, npruned = 0;

			w = ca_head_sign(c, r, want, &st, secret, secret_len, &nsigned, &nrevoked,
					 &npruned);
			if (w < 0)
				ret = w;
			report_detail(r, "CA: %zu certificate%s signed, %zu host key%s revoked, "
				      "%zu expired revocation%s pruned (in %s)", nsigned,
				      nsigned == 1 ? "" : "s", nrevoked, nrevoked == 1 ? "" : "s",
				      npruned, npruned == 1 ? "" : "s", st.where);
		}
		/*
		 * Only a node's apply waits for its certificate (a boot brings the
		 * head and its computes up together); refresh and the watch's
		 * refreshes take what is there and run again soon anyway.
		 */
		if (self && ctx_may_write(c) && s->cluster.role != ROLE_HEAD && c->command &&
		    strcmp(c->command, "apply") == 0)
			wait_for_cert(c, r, self, &st);
		if (self) {
			w = install_own(c, r, self, &st, &conf, &changed);
			if (w < 0)
				ret = w;
		}
		if ((w = install_krl(c, r, &st, secret, secret_len)) < 0)
			ret = w;
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
	if ((w = sshd_conf_converge(c, r, ca || s->ssh.hostbased ? &conf : NULL, &changed)) < 0)
		ret = w;
	if (changed && ctx_may_write(c) && (w = sshd_reload(c, r)) < 0)
		ret = w;
	sb_free(&conf);
	if (st_open)
		rv_close(&st);
	if (secret)
		explicit_bzero(secret, secret_len);
	free(secret);
	return ret;
}
