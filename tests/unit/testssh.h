/* SPDX-License-Identifier: MIT */
/*
 * What the ssh step's unit tests share (test_ssh.c, test_known_hosts.c,
 * test_authorized_keys.c): the step's files #included (to reach their
 * statics), a fake root, keys made by the real helper, peers built by hand
 * as discovery would fill them, a stand-in host-key fetcher, and the spec
 * every test starts from.
 */
#ifndef HPCINIT_TESTSSH_H
#define HPCINIT_TESTSSH_H

#include "config.h"

#include <arpa/inet.h>
#include <sys/stat.h>

#include "../../modules/ssh/common.c"
#include "../../modules/ssh/known_hosts.c"
#include "../../modules/ssh/authorized_keys.c"
#include "../../lib/sshkeys/userkeys.c"
#include "../../modules/ssh/ssh.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-ssh.XXXXXX";
#define get(rel) test_get(root, rel)
static char name_glo[] = "glo";

static inline void put(const char *rel, const char *text, mode_t mode)
{
	char *p = fs_rooted(root, rel);
	char *dir = xstrdup(p);
	FILE *f;

	*strrchr(dir, '/') = '\0';
	for (char *q = dir + strlen(root) + 1; *q; q++)
		if (*q == '/') {
			*q = '\0';
			mkdir(dir, 0755);
			*q = '/';
		}
	mkdir(dir, 0755);
	f = fopen(p, "w");
	fputs(text, f);
	fclose(f);
	chmod(p, mode);
	free(dir);
	free(p);
}

static inline struct stat st_of(const char *rel)
{
	char *p = fs_rooted(root, rel);
	struct stat st;

	memset(&st, 0, sizeof(st));
	(void)lstat(p, &st);
	free(p);
	return st;
}

/* A fresh ed25519 public key "ssh-ed25519 AAAA..." (malloc'd), made by the real helper. */
static inline char *new_key(void)
{
	char *pub = NULL, *priv = NULL, err[256] = "";

	if (sshkey_generate(KEY_ED25519, &pub, &priv, err, sizeof(err)) < 0) {
		fprintf(stderr, "hpcinit-ssh keygen: %s\n", err);
		abort();
	}
	free(priv);
	return pub;
}

/* What ssh-keygen -l says of a public key line ("256 SHA256:... comment (ED25519)"). */
static inline char *keygen_fingerprint(const char *pub)
{
	char *path = fs_rooted(root, "/fp.pub"), *ret = NULL;
	const char *argv[] = { "ssh-keygen", "-l", "-f", path, NULL };
	struct proc_result res;
	FILE *f = fopen(path, "w");

	fprintf(f, "%s x\n", pub);
	fclose(f);
	if (proc_run(argv, NULL, NULL, 10000, &res) == 0 && res.exit_code == 0) {
		char *sp = strchr(res.out, ' ');

		if (sp)
			ret = xstrndup(sp + 1, strcspn(sp + 1, " "));
	}
	proc_result_free(&res);
	unlink(path);
	free(path);
	return ret;
}

static inline void peer_init(struct peer *p, const char *host, const char *addr, const char *boot,
		      const char *hostkey)
{
	memset(p, 0, sizeof(*p));
	p->hostname = xstrdup(host);
	p->addr = addr ? xstrdup(addr) : NULL;
	p->boot_id = xstrdup(boot);
	if (hostkey)
		strlist_push(&p->host_keys, hostkey);
}

static inline void peer_user_key(struct peer *p, const char *user, const char *key)
{
	p->user_keys = xrealloc(p->user_keys, (p->n_user_keys + 1) * sizeof(*p->user_keys));
	p->user_keys[p->n_user_keys].user = xstrdup(user);
	p->user_keys[p->n_user_keys].key = xstrdup(key);
	p->n_user_keys++;
}

static inline void peers_free(struct peerset *ps)
{
	for (size_t i = 0; i < ps->n; i++) {
		struct peer *p = &ps->v[i];

		free(p->hostname);
		free(p->addr);
		free(p->ipoib_addr);
		free(p->boot_id);
		free(p->version);
		strlist_free(&p->host_keys);
		for (size_t k = 0; k < p->n_user_keys; k++) {
			free(p->user_keys[k].user);
			free(p->user_keys[k].key);
		}
		free(p->user_keys);
	}
	free(ps->v);
	ps->v = NULL;
	ps->n = 0;
}

static inline void set_network(struct spec *s, const char *addr, unsigned prefix)
{
	s->cluster.has_network = true;
	s->cluster.network.family = AF_INET;
	inet_pton(AF_INET, addr, &s->cluster.network.addr.v4);
	s->cluster.network.prefix = prefix;
	snprintf(s->cluster.network.text, sizeof(s->cluster.network.text), "%s/%u", addr, prefix);
}

static inline size_t count(const char *hay, const char *needle)
{
	size_t n = 0;

	for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

static inline bool same_set(const struct strlist *a, const struct strlist *b)
{
	return a->n == b->n && !first_new_key(a, b) && !first_new_key(b, a);
}

/* Did the run record a finding with this tag? */
static inline bool has_finding(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0)
			return true;
	return false;
}

static int fake_fetches;
static char *fake_host_key;

static inline int fake_fetch(const char *host, unsigned port, unsigned timeout_ms, char **ret_key)
{
	fake_fetches++;
	if (strcmp(host, "198.18.3.99") == 0)
		return -ECONNREFUSED;
	*ret_key = xstrdup(fake_host_key);
	return 0;
}

static const struct fetch_ops fake_fetch_ops = { fake_fetch };

/* The fake root and the spec the tests start from: cluster glo on 198.18.3.0/24, user alice. */
static inline void ssh_test_setup(struct spec *s)
{
	if (!mkdtemp(root))
		exit(1);
	chmod(root, 0755);      /* the user's identity must reach the fake home */
	memset(s, 0, sizeof(*s));
	s->cluster.name = name_glo;
	set_network(s, "198.18.3.0", 24);
	s->ssh.present = true;
	s->ssh.restrict_from = true;
	s->ssh.key_type = KEY_ED25519;
	strlist_push(&s->ssh.users, "alice");
	put("/etc/ssh/ssh_config", "Include /etc/ssh/ssh_config.d/*.conf\nHost *\n", 0644);
}

/* This node's host key, made by the real helper, in <root>/etc/ssh (malloc'd). */
static inline char *ssh_test_host_key(void)
{
	char *k = new_key(), *t = xasprintf("%s root@hps-1\n", k);

	put("/etc/ssh/ssh_host_ed25519_key.pub", t, 0644);
	free(t);
	return k;
}

static inline void ssh_test_teardown(struct spec *s)
{
	strlist_free(&s->ssh.users);
	test_rm_rf(root);
}

#endif
