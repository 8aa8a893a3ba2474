/* SPDX-License-Identifier: MIT */
/*
 * What the discovery step's unit tests share (test_discovery.c,
 * test_admit.c): the step's files #included (to reach their statics), with
 * test_discovery.c's seam around shared.c's record writes when it defines
 * TESTDISC_SEAM; a fake root with the shared directory, records planted and
 * removed, runs, and what a report says.
 */
#ifndef HPCINIT_TESTDISC_H
#define HPCINIT_TESTDISC_H

#include "config.h"

#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include "../../modules/discovery/discovery.c"
#include "../../modules/discovery/run.c"
#include "../../modules/discovery/admit.c"
#include "../../modules/discovery/node.c"
#include "rendezvous/rendezvous.h"
#ifdef TESTDISC_SEAM
/*
 * A seam around the record writes of shared.c: every version of a record
 * that lands in the directory is looked at as a peer reading it that
 * moment would (seam_put, below).
 */
static int seam_put(struct rendezvous *rv, struct report *rep, const char *name, const char *data,
		    size_t len);
/* and around its probes of the directory's clock: counted (seam_probes) */
static int seam_probes;

static int seam_dir_now(struct rendezvous *rv, int64_t *ret)
{
	seam_probes++;
	return rv_dir_now(rv, ret);
}
#define rv_put seam_put
#define rv_dir_now seam_dir_now
#include "../../modules/discovery/shared.c"
#undef rv_put
#undef rv_dir_now
#else
#include "../../modules/discovery/shared.c"
#endif
#include "../../modules/discovery/static.c"
#include "../../modules/discovery/scan.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-discovery.XXXXXX";
static char s_name[] = "glo", s_dir[] = "/share/.hpcinit", s_key[] = "/etc/hpcinit/cluster.key";
static const char *const KEY = "0123456789abcdef0123456789abcdef";
#define NODES "/share/.hpcinit/glo/nodes"

static inline char *host(const char *rel)
{
	return fs_rooted(root, rel);
}

static inline void put(const char *rel, const char *text, mode_t mode)
{
	char *p = host(rel);
	FILE *f = fopen(p, "w");

	fputs(text, f);
	fclose(f);
	chmod(p, mode);
	free(p);
}

static inline bool exists(const char *rel)
{
	char *p = host(rel);
	struct stat st;
	bool r = lstat(p, &st) == 0;

	free(p);
	return r;
}

/* A signed record for name at addr, updated age seconds ago. */
static inline void plant(const char *name, const char *addr, int64_t age, const char *key)
{
	struct peer p = { 0 };
	char *rel = xasprintf(NODES "/%s.rec", name), *text;

	p.hostname = xstrdup(name);
	p.addr = xstrdup(addr);
	p.slots = 4;
	p.updated = (int64_t)time(NULL) - age;
	text = record_format(&p, "glo", key, key ? strlen(key) : 0);
	put(rel, text, 0644);
	free(text);
	free(rel);
	peer_clear(&p);
}

static inline int run(struct ctx *c, struct report *rep)
{
	report_init(rep);
	c->out->peers = peerset_free(c->out->peers);
	return disc_apply(c, rep);
}

static inline bool has_peer(const struct ctx *c, const char *name)
{
	for (size_t i = 0; c->out->peers && i < c->out->peers->n; i++)
		if (strcmp(c->out->peers->v[i].hostname, name) == 0)
			return true;
	return false;
}

static inline bool detail(const struct report *rep, const char *text)
{
	if (strstr(sb_str(&rep->details), text))
		return true;
	fprintf(stderr, "details lack \"%s\":\n%s", text, sb_str(&rep->details));
	return false;
}

/* Did the run record a finding with this tag (and severity)? */
static inline bool finding(const struct report *rep, const char *tag, enum rstatus sev)
{
	for (size_t i = 0; i < rep->n_findings; i++)
		if (strcmp(rep->findings[i].tag, tag) == 0 && rep->findings[i].sev == sev &&
		    !rep->findings[i].cluster)
			return true;
	fprintf(stderr, "no finding %s\n", tag);
	return false;
}

/* A cluster finding (report_cluster: about other nodes, never this node's status) tagged tag. */
static inline bool cluster_finding(const struct report *rep, const char *tag)
{
	for (size_t i = 0; i < rep->n_findings; i++)
		if (strcmp(rep->findings[i].tag, tag) == 0 && rep->findings[i].cluster)
			return true;
	fprintf(stderr, "no cluster finding %s\n", tag);
	return false;
}

/* A signed, fresh record for name at addr with an IPoIB address. */
static inline void plant_ipoib(const char *name, const char *addr, const char *ipoib)
{
	struct peer p = { 0 };
	char *rel = xasprintf(NODES "/%s.rec", name), *text;

	p.hostname = xstrdup(name);
	p.addr = xstrdup(addr);
	p.ipoib_addr = ipoib ? xstrdup(ipoib) : NULL;
	p.slots = 4;
	p.updated = (int64_t)time(NULL);
	text = record_format(&p, "glo", KEY, strlen(KEY));
	put(rel, text, 0644);
	free(text);
	free(rel);
	peer_clear(&p);
}

static inline const struct peer *peer_named(const struct ctx *c, const char *name)
{
	for (size_t i = 0; c->out->peers && i < c->out->peers->n; i++)
		if (strcmp(c->out->peers->v[i].hostname, name) == 0)
			return &c->out->peers->v[i];
	return NULL;
}

static inline void unplant(const char *name)
{
	char *rel = xasprintf(NODES "/%s.rec", name), *hp = host(rel);

	unlink(hp);
	free(hp);
	free(rel);
}

/*
 * The fake root and the spec every test starts from: node1 at 10.0.0.1 in
 * cluster glo (10.0.0.0/24), method shared in /share/.hpcinit, the secret
 * in place, one node expected, no wait.
 */
static inline void disc_test_setup(struct ctx *c, struct spec *spec)
{
	char *p;

	TEST_CHECK(mkdtemp(root) != NULL);
	c->root = root;
	setenv("HPCINIT_ADDRESS", "10.0.0.1", 1);
	unsetenv("HPCINIT_IPOIB_ADDRESS");
	spec->cluster.name = s_name;
	spec->cluster.secret_file = s_key;
	TEST_INTEQ(cidr_parse("10.0.0.0/24", &spec->cluster.network), 0);
	spec->cluster.has_network = true;
	spec->discovery.present = true;
	spec->discovery.method = DISC_SHARED;
	spec->discovery.dir = s_dir;
	spec->discovery.expect = 1;
	spec->discovery.wait_ms = 0;
	spec->discovery.lease_ms = 60000;
	c->deadline_ms = now_ms() + 60000;

	p = host("/etc");
	mkdir(p, 0755);
	free(p);
	p = host("/etc/hpcinit");
	mkdir(p, 0755);
	free(p);
	p = host("/share");
	mkdir(p, 0755);
	free(p);
	put(s_key, KEY, 0600);
}

#endif
