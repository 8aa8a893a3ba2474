/* SPDX-License-Identifier: MIT */
/*
 * hostfile: write the peers discovery found in the forms MPI launchers and
 * clustershell read.  One fixed order everywhere (head first, then natural
 * sort), atomic writes, and files already right are left alone, so the
 * refresh timer rewrites a file only when the cluster really changed.
 *
 *   <dir>/hostfile.openmpi   host slots=N     (Open MPI, HPC-X)
 *   <dir>/hostfile.mpich     host:N           (MPICH Hydra, Intel MPI -machinefile, MVAPICH)
 *   <dir>/hostfile.plain     host             (Intel MPI -f, pdsh, scripts)
 *   /etc/clustershell/groups.d/hpcinit.yaml   group source "hpcinit", group <cluster>
 *   /etc/clustershell/groups.d/local.cfg      managed "<cluster>: nodes" line, so that
 *                                             @<cluster> works with the default source
 *   Open MPI's default hostfile               managed block, so a bare mpirun uses the cluster
 *   /etc/hosts                                managed block "address name" for every node, so
 *                                             the names in the hostfiles resolve without DNS
 *                                             (hostfile.etc_hosts: auto, always, never)
 *   <dir>/hostfile.<format>.<domain>          the nodes of one InfiniBand domain (P_Key and
 *                                             placement group, lib/ib/identity.c), when
 *                                             records carry one: IB reaches only within it
 *                                             (HF_DOMAINS_MAX domains at most)
 *
 * The MPI hostfiles (openmpi, mpich, plain, the Open MPI default block, the
 * domains') list the nodes a job can use: a node whose record says it
 * failed is left out (hostfile.exclude: failed, the default; none keeps
 * it), but for this node itself (its record says what the last runs left).  The clush group and /etc/hosts keep every member: an admin reaches
 * a failed node to repair it.  Every pass is linear in the records.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "mounts.h"
#include "nodeset.h"
#include "record.h"
#include "ib/identity.h"

#define CLUSH_DIR "/etc/clustershell/groups.d"
#define CLUSH_YAML CLUSH_DIR "/hpcinit.yaml"
#define CLUSH_LOCAL CLUSH_DIR "/local.cfg"
#define HEADER_MARK "# hpcinit:"
#define ETC_HOSTS "/etc/hosts"
/*
 * At most this many InfiniBand domains get hostfiles of their own (3 files
 * each): the first in the hostfiles' order.  More is a cluster finding
 * (hostfile.domains.too-many), never this node's fault.  docs/cluster.md.
 */
#define HF_DOMAINS_MAX 256

/* Where distributions keep Open MPI's default hostfile, in the order tried. */
static const char *const ompi_default_paths[] = {
	"/etc/openmpi/openmpi-default-hostfile",            /* Debian, Ubuntu */
	"/usr/lib64/openmpi/etc/openmpi-default-hostfile",  /* RHEL, Alma, Rocky, Fedora */
	"/usr/lib64/mpi/gcc/openmpi4/etc/openmpi-default-hostfile",  /* SLES, openSUSE */
	"/etc/openmpi-default-hostfile",                    /* --sysconfdir=/etc builds */
	NULL,
};

static const char *const hf_needs[] = { "discovery", NULL };

static bool hf_enabled(const struct spec *s)
{
	return s->hostfile.present;
}

/* The name a launcher should use for p, per hostfile.address. */
static const char *peer_name(const struct spec *spec, const struct peer *p, bool *fallback)
{
	switch (spec->hostfile.address) {
	case HF_ADDR_IP:
		return p->addr;
	case HF_ADDR_IPOIB:
		if (p->ipoib_addr)
			return p->ipoib_addr;
		*fallback = true;
		return p->addr;
	case HF_ADDR_HOSTNAME:
		break;
	}
	return p->hostname;
}

/* ---- the files ---- */

struct hf_text {
	struct strbuf openmpi, mpich, plain, ompi_block;
	char *group;            /* folded nodeset */
};

static void hf_text_free(struct hf_text *t)
{
	sb_free(&t->openmpi);
	sb_free(&t->mpich);
	sb_free(&t->plain);
	sb_free(&t->ompi_block);
	free(t->group);
}

/* Build every format from the sorted peers (exposed to tests). */
static void hostfile_render(const struct spec *spec, const struct peerset *peers, struct hf_text *t,
		     struct strlist *fallbacks)
{
	const char **names = xcalloc(peers->n ? peers->n : 1, sizeof(*names));
	char *header = xasprintf(HEADER_MARK " cluster %s, %zu node%s; generated, do not edit\n",
				 spec->cluster.name, peers->n, peers->n == 1 ? "" : "s");

	memset(t, 0, sizeof(*t));
	sb_append(&t->openmpi, header);
	sb_append(&t->mpich, header);
	sb_append(&t->plain, header);
	for (size_t i = 0; i < peers->n; i++) {
		const struct peer *p = &peers->v[i];
		bool fb = false;
		const char *name = peer_name(spec, p, &fb);
		size_t nl, start;

		if (fb && fallbacks)
			strlist_push(fallbacks, p->hostname);
		names[i] = name;
		/* appends, not printf: four lines a node */
		nl = strlen(name);
		start = t->openmpi.len;
		sb_appendn(&t->openmpi, name, nl);
		sb_appendn(&t->openmpi, " slots=", 7);
		sb_append_u64(&t->openmpi, p->slots);
		sb_appendn(&t->openmpi, "\n", 1);
		sb_appendn(&t->ompi_block, t->openmpi.buf + start, t->openmpi.len - start);
		sb_appendn(&t->mpich, name, nl);
		sb_appendn(&t->mpich, ":", 1);
		sb_append_u64(&t->mpich, p->slots);
		sb_appendn(&t->mpich, "\n", 1);
		sb_appendn(&t->plain, name, nl);
		sb_appendn(&t->plain, "\n", 1);
	}
	t->group = nodeset_fold(names, peers->n);
	free(names);
	free(header);
}

/* The clush group: every member, failed ones too (folded, malloc'd). */
static char *group_of(const struct spec *spec, const struct peerset *peers)
{
	const char **names = xcalloc(peers->n ? peers->n : 1, sizeof(*names));
	char *g;

	for (size_t i = 0; i < peers->n; i++) {
		bool fb = false;

		names[i] = peer_name(spec, &peers->v[i], &fb);
	}
	g = nodeset_fold(names, peers->n);
	free(names);
	return g;
}

/*
 * The nodes a job can use (shallow copies into ret, which owns nothing):
 * with hostfile.exclude failed, every peer whose record says failed is
 * left out, and the report says which.
 */
static size_t usable_peers(const struct spec *spec, const struct peerset *all, struct peerset *ret,
			   struct report *rep)
{
	size_t out = 0;
	const struct peer *first = NULL;

	ret->v = xcalloc(all->n ? all->n : 1, sizeof(*ret->v));
	ret->n = 0;
	for (size_t i = 0; i < all->n; i++) {
		const struct peer *p = &all->v[i];

		/* this node's own record says the state the last runs left: this run's is not known yet */
		if (spec->hostfile.exclude == HF_EXCLUDE_FAILED && p->state == PEER_FAILED && !p->self) {
			if (!out++)
				first = p;
			continue;
		}
		ret->v[ret->n++] = *p;
	}
	if (out)
		report_detail(rep, "%zu failed node%s left out of the MPI hostfiles (first: %s%s%s; "
			      "hostfile.exclude: none keeps them); the clush group keeps every member", out,
			      out == 1 ? "" : "s", first->hostname, first->reason ? ": " : "",
			      first->reason ? first->reason : "");
	return out;
}

/* Remove a file we generated earlier (recognised by its header), for a format no longer wanted. */
static int remove_ours(struct ctx *c, struct report *rep, const char *path)
{
	char *old = NULL;
	int r = 0;

	if (fs_read(c, path, &old, NULL) == 0 && strncmp(old, HEADER_MARK, strlen(HEADER_MARK)) == 0)
		r = fs_remove(c, rep, path);
	free(old);
	return r;
}

static int one_file(struct ctx *c, struct report *rep, const char *dir, const char *name,
		    bool want, const struct strbuf *text, struct strbuf *written)
{
	char *path = xasprintf("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, name);
	int r;

	if (want) {
		/* hpcinit's alone, written again by every apply: the file synced, not its directory */
		r = fs_write_opt(c, rep, path, text->buf, text->len, 0644, 0, 0, FS_SYNC_FILE);
		if (r >= 0)
			sb_printf(written, "%s%s", written->len ? ", " : "", name + strlen("hostfile."));
	} else {
		r = remove_ours(c, rep, path);
	}
	free(path);
	return r;
}

static int clush_files(struct ctx *c, struct report *rep, bool want, const char *group)
{
	const char *cluster = c->spec->cluster.name;
	char *yaml, *line;
	int r, r2;

	if (!want) {
		r = remove_ours(c, rep, CLUSH_YAML);
		r2 = fs_exists(c, CLUSH_LOCAL) ?
			fs_managed_block(c, rep, CLUSH_LOCAL, cluster, NULL, 0644, 0, 0) : 0;
		return r < 0 ? r : r2;
	}
	r = fs_mkdir_p(c, rep, CLUSH_DIR, 0755, 0, 0);
	if (r < 0 || (r > 0 && !ctx_may_write(c) && !fs_exists(c, CLUSH_DIR)))
		return r < 0 ? r : 0;
	/*
	 * The YAML file is a group source of its own ("@hpcinit:<cluster>");
	 * the line in local.cfg serves the stock default source "local", which
	 * is what a bare "@<cluster>" and "clush -g <cluster>" ask.
	 */
	yaml = xasprintf(HEADER_MARK " cluster %s; generated, do not edit\n"
			 "# clustershell group source: nodeset -f @hpcinit:%s\n"
			 "hpcinit:\n  %s: '%s'\n", cluster, cluster, cluster, group);
	r = fs_write_opt(c, rep, CLUSH_YAML, yaml, strlen(yaml), 0644, 0, 0, FS_SYNC_FILE);
	free(yaml);
	if (r < 0)
		return r;
	line = xasprintf("%s: %s\n", cluster, group);
	r = fs_managed_block(c, rep, CLUSH_LOCAL, cluster, line, 0644, 0, 0);
	free(line);
	return r;
}

static int ompi_default(struct ctx *c, struct report *rep, bool want, const char *block,
			const char **ret_path)
{
	const char *path = NULL;

	for (size_t i = 0; ompi_default_paths[i] && !path; i++)
		if (fs_exists(c, ompi_default_paths[i]))
			path = ompi_default_paths[i];
	*ret_path = path;
	if (!path) {
		if (want)
			report_detail(rep, "Open MPI's default hostfile not found (is Open MPI installed?); "
				      "a bare mpirun will not know the cluster -- use --hostfile");
		return 0;
	}
	return fs_managed_block(c, rep, path, c->spec->cluster.name, want ? block : NULL,
				0644, 0, 0);
}

/* ---- per InfiniBand domain ---- */

/* Is name "hostfile.<format>.<something>"? */
static bool domain_file_name(const char *name)
{
	static const char *const fmts[] = { "hostfile.openmpi.", "hostfile.mpich.", "hostfile.plain.", NULL };

	for (size_t i = 0; fmts[i]; i++)
		if (strncmp(name, fmts[i], strlen(fmts[i])) == 0 && name[strlen(fmts[i])])
			return true;
	return false;
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Ours for domains no longer wanted: one readdir, each name looked up in the sorted want. */
static int domain_files_gone(struct ctx *c, struct report *rep, const char *dir, struct strlist *want)
{
	char *hp = ctx_path(c, dir);
	DIR *dd = opendir(hp);
	struct dirent *e;
	struct strlist gone = { 0 };
	int ret = 0;

	free(hp);
	if (want->n > 1)
		qsort(want->v, want->n, sizeof(*want->v), str_cmp);
	while (dd && (e = readdir(dd))) {
		const char *name = e->d_name;

		if (domain_file_name(name) && !(want->n && bsearch(&name, want->v, want->n, sizeof(*want->v), str_cmp)))
			strlist_push(&gone, name);
	}
	if (dd)
		closedir(dd);
	for (size_t i = 0; i < gone.n; i++) {
		char *path = xasprintf("%s/%s", strcmp(dir, "/") == 0 ? "" : dir, gone.v[i]);

		if (remove_ours(c, rep, path) < 0)
			ret = -EIO;
		free(path);
	}
	strlist_free(&gone);
	return ret;
}

/* The files of domain d (the peers in sub), each wanted format; their names into want. */
static int domain_write(struct ctx *c, struct report *rep, const char *dir, const char *dom,
			const struct peerset *sub, struct strlist *want)
{
	const struct spec *spec = c->spec;
	struct hf_text t;
	struct strbuf scratch = STRBUF_INIT;
	const struct {
		const char *fmt;
		unsigned bit;
		struct strbuf *text;
	} files[] = {
		{ "openmpi", HF_OPENMPI, &t.openmpi },
		{ "mpich", HF_MPICH, &t.mpich },
		{ "plain", HF_PLAIN, &t.plain },
	};
	int ret = 0;

	hostfile_render(spec, sub, &t, NULL);
	for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
		struct strbuf *hdr = files[i].text;
		char *name, *fixed;

		if (!(spec->hostfile.formats & files[i].bit))
			continue;
		name = xasprintf("hostfile.%s.%s", files[i].fmt, dom);
		/* the header names the domain */
		fixed = xasprintf(HEADER_MARK " InfiniBand domain %s:%s", dom, sb_str(hdr) + strlen(HEADER_MARK));
		sb_free(hdr);
		sb_append(hdr, fixed);
		free(fixed);
		if (one_file(c, rep, dir, name, true, files[i].text, &scratch) < 0)
			ret = -EIO;
		strlist_push_take(want, name);
	}
	hf_text_free(&t);
	sb_free(&scratch);
	return ret;
}

/*
 * One hostfile of each wanted format per domain (of the usable peers),
 * beside the whole-cluster ones, for HF_DOMAINS_MAX domains at most; ours
 * for domains that are gone are removed.  Nothing without domains.  Linear:
 * one pass gives each peer its domain (a hash table), one counting sort
 * groups them, each domain's files are rendered from its own peers.
 */
static int domain_files(struct ctx *c, struct report *rep, const char *dir, const struct peerset *peers,
			struct strbuf *written)
{
	struct strlist doms = { 0 }, want = { 0 };
	size_t n = peers->n ? peers->n : 1, *idx = xcalloc(n, sizeof(*idx)), *start, nd;
	unsigned *counts = xcalloc(n, sizeof(*counts));
	struct peerset sub = { xcalloc(n, sizeof(struct peer)), 0 };
	int ret = 0;

	rdma_domains_index(peers, &doms, counts, idx);
	nd = doms.n < HF_DOMAINS_MAX ? doms.n : HF_DOMAINS_MAX;
	if (doms.n > HF_DOMAINS_MAX)
		report_cluster(rep, "hostfile.domains.too-many", "the records name %zu InfiniBand domains, more than "
			       "the %d that get hostfiles of their own: the first %d (in the hostfiles' order) have "
			       "them, the others none", doms.n, HF_DOMAINS_MAX, HF_DOMAINS_MAX);
	/* start[d]: where domain d's peers begin in sub (a counting sort, peers' order kept) */
	start = xcalloc(nd + 1, sizeof(*start));
	for (size_t d = 0; d < nd; d++)
		start[d + 1] = start[d] + counts[d];
	for (size_t i = 0; i < peers->n; i++)
		if (idx[i] < nd)
			sub.v[start[idx[i]]++] = peers->v[i];   /* shallow: sub owns nothing */
	for (size_t d = 0, at = 0; d < nd; at += counts[d], d++) {
		struct peerset one = { sub.v + at, counts[d] };

		if (domain_write(c, rep, dir, doms.v[d], &one, &want) < 0)
			ret = -EIO;
		sb_printf(written, "%sdomain %s (%u node%s)", written->len ? ", " : "", doms.v[d], counts[d],
			  counts[d] == 1 ? "" : "s");
	}
	if (domain_files_gone(c, rep, dir, &want) < 0)
		ret = -EIO;
	strlist_free(&doms);
	strlist_free(&want);
	free(start);
	free(sub.v);
	free(idx);
	free(counts);
	return ret;
}

/* ---- /etc/hosts ---- */

/*
 * A hosts(5) text parsed once: every (name, address) pair, sorted by name
 * (case-insensitive, as the resolver compares) and then by line, so a
 * lookup is a binary search and the names of 10,000 nodes are checked in
 * O(n log n), not one scan of the file per node.
 */
struct hosts_entry {
	const char *name, *addr;
	size_t order;           /* position in the file: the first line wins */
};

struct hosts_index {
	char *text;             /* the copy the entries point into */
	struct hosts_entry *v;
	size_t n;
};

/* Names are kept in lower case (ASCII, what strcasecmp folds here): strcmp orders them. */
static int hosts_entry_cmp(const void *a, const void *b)
{
	const struct hosts_entry *x = a, *y = b;
	int r = strcmp(x->name, y->name);

	return r ? r : (x->order > y->order) - (x->order < y->order);
}

static void hosts_index_build(struct hosts_index *ix, const char *text)
{
	static const char ws[] = " \t\r";
	size_t cap = 0;

	memset(ix, 0, sizeof(*ix));
	if (!text)
		return;
	ix->text = xstrdup(text);
	for (char *l = ix->text; l && *l;) {
		char *e = strchr(l, '\n'), *hash, *save = NULL, *addr, *tok;

		if (e)
			*e = '\0';
		if ((hash = strchr(l, '#')))
			*hash = '\0';
		addr = strtok_r(l, ws, &save);
		while (addr && (tok = strtok_r(NULL, ws, &save))) {
			if (ix->n == cap) {
				cap = cap ? 2 * cap : 64;
				ix->v = xrealloc(ix->v, cap * sizeof(*ix->v));
			}
			for (char *q = tok; *q; q++)
				if (*q >= 'A' && *q <= 'Z')
					*q = (char)(*q - 'A' + 'a');
			ix->v[ix->n] = (struct hosts_entry){ tok, addr, ix->n };
			ix->n++;
		}
		l = e ? e + 1 : NULL;
	}
	if (ix->n)
		qsort(ix->v, ix->n, sizeof(*ix->v), hosts_entry_cmp);
}

static void hosts_index_free(struct hosts_index *ix)
{
	free(ix->text);
	free(ix->v);
	memset(ix, 0, sizeof(*ix));
}

/*
 * The first address the text gives name, NULL when none; *several is set
 * when other lines give the name a different address (the resolver may then
 * sort another one first).
 */
static const char *hosts_index_lookup(const struct hosts_index *ix, const char *name, bool *several)
{
	size_t lo = 0, hi = ix->n, n = strlen(name);
	char buf[256];
	char *low = n < sizeof(buf) ? buf : xmalloc(n + 1);
	const char *ret = NULL;

	for (size_t i = 0; i <= n; i++)
		low[i] = name[i] >= 'A' && name[i] <= 'Z' ? (char)(name[i] - 'A' + 'a') : name[i];
	/* the first entry not below name */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(ix->v[mid].name, low) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < ix->n && strcmp(ix->v[lo].name, low) == 0) {
		ret = ix->v[lo].addr;
		if (several) {
			*several = false;
			for (size_t k = lo + 1; k < ix->n && strcmp(ix->v[k].name, low) == 0; k++)
				if (strcmp(ix->v[k].addr, ret) != 0)
					*several = true;
		}
	}
	if (low != buf)
		free(low);
	return ret;
}

/*
 * Does the system's resolver ask /etc/hosts first and stop at its answer
 * (nsswitch.conf "hosts: files ...")?  Then a name found there resolves to
 * what the file says, without a getaddrinfo(3) that reads the whole file
 * again for every node.
 */
static bool files_first(const struct ctx *c)
{
	char *text = NULL;
	bool ret = false;

	if (fs_read(c, "/etc/nsswitch.conf", &text, NULL) < 0)
		return false;   /* glibc's default without the file is "dns [!UNAVAIL=return] files" */
	for (char *l = text, *e; l && *l; l = e ? e + 1 : NULL) {
		char *save = NULL, *key, *src, *next;

		if ((e = strchr(l, '\n')))
			*e = '\0';
		if (strchr(l, '#'))
			*strchr(l, '#') = '\0';
		key = strtok_r(l, " \t", &save);
		if (!key || strcmp(key, "hosts:") != 0)
			continue;
		src = strtok_r(NULL, " \t", &save);
		next = strtok_r(NULL, " \t", &save);
		/* "files [SUCCESS=continue]" would go on to other sources: not that */
		ret = src && strcmp(src, "files") == 0 && !(next && next[0] == '[' && strstr(next, "SUCCESS"));
	}
	free(text);
	return ret;
}

/*
 * Where name resolves: 0 to want (its first address, the one ssh and the
 * MPI launchers use), 1 elsewhere (that address in other), -1 not at all
 * (the resolver's message in other).  On the real root the system's
 * resolver answers (nsswitch: files, DNS, ...), from the parsed /etc/hosts
 * when nsswitch asks the file first and it names the node once; under a
 * fake root only the root's /etc/hosts (hosts, may be empty) can.
 */
/* snprintf(dst, len, "%s", s) without printf: once a node. */
static void copy_text(char *dst, size_t len, const char *s)
{
	size_t n = strlen(s);

	if (!len)
		return;
	if (n >= len)
		n = len - 1;
	memcpy(dst, s, n);
	dst[n] = '\0';
}

static int name_resolves(const struct ctx *c, const struct hosts_index *hosts, bool files, const char *name,
			 const char *want, char *other, size_t len)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM };
	struct addrinfo *res = NULL;
	char host[NI_MAXHOST];
	bool several = false;
	const char *a = hosts_index_lookup(hosts, name, &several);
	int r;

	if (!ctx_real_root(c)) {
		if (!a) {
			snprintf(other, len, "not in %s/etc/hosts", c->root);
			return -1;
		}
		copy_text(other, len, a);
		return strcmp(other, want) == 0 ? 0 : 1;
	}
	if (files && a && !several) {
		copy_text(other, len, a);
		return strcmp(other, want) == 0 ? 0 : 1;
	}
	r = getaddrinfo(name, NULL, &hints, &res);
	if (r != 0) {
		snprintf(other, len, "%s", gai_strerror(r));
		return -1;
	}
	r = getnameinfo(res->ai_addr, res->ai_addrlen, host, sizeof(host), NULL, 0, NI_NUMERICHOST);
	freeaddrinfo(res);
	if (r != 0) {
		snprintf(other, len, "%s", gai_strerror(r));
		return -1;
	}
	snprintf(other, len, "%s", host);
	return strcmp(host, want) == 0 ? 0 : 1;
}

/* Debian and Ubuntu map the own hostname to 127.0.1.1: not a wrong answer for this node. */
static bool loopback_text(const char *a)
{
	return strncmp(a, "127.", 4) == 0 || strcmp(a, "::1") == 0;
}

/*
 * Check every peer's name against its recorded address.  Returns how many
 * do not resolve there; the first one is described in first (malloc'd).
 * stop_first: stop at the first wrong one (returns 1): all a decision needs.
 * A name not in /etc/hosts is a DNS query, so at 1,000 nodes every full pass
 * is 1,000 queries (two packets each) from every node.
 */
static size_t names_wrong(const struct ctx *c, const struct peerset *peers, bool stop_first, char **first)
{
	char *hosts_text = NULL;
	struct hosts_index hosts;
	bool files = ctx_real_root(c) && files_first(c);
	size_t bad = 0;

	*first = NULL;
	if ((!ctx_real_root(c) || files) && fs_read(c, ETC_HOSTS, &hosts_text, NULL) < 0)
		hosts_text = NULL;
	hosts_index_build(&hosts, hosts_text);
	free(hosts_text);
	for (size_t i = 0; i < peers->n; i++) {
		const struct peer *p = &peers->v[i];
		char other[NI_MAXHOST + 64];
		int r = name_resolves(c, &hosts, files, p->hostname, p->addr, other, sizeof(other));

		if (r == 0 || (r == 1 && p->self && loopback_text(other)))
			continue;
		if (bad++ == 0)
			*first = r < 0 ? xasprintf("%s does not resolve (%s)", p->hostname, other) :
				 xasprintf("%s resolves to %s, its record says %s", p->hostname, other,
					   p->addr);
		if (stop_first)
			break;
	}
	hosts_index_free(&hosts);
	return bad;
}

/*
 * The managed block of /etc/hosts: one "address name" line per node.
 * etc_hosts: always writes it, never removes it, auto writes it when a
 * node's name does not resolve to its recorded address and keeps it once
 * written (the block itself then makes the names resolve).  Names are
 * resolved once a run where that suffices: the decision stops at the first
 * wrong name (the block is then written and answers for all of them), and a
 * full pass that found every name right is not repeated when nothing changed.
 */
static int etc_hosts(struct ctx *c, struct report *rep, bool *managed)
{
	const struct spec *spec = c->spec;
	const struct peerset *peers = c->out->peers;
	enum hf_etc_hosts mode = spec->hostfile.etc_hosts;
	char *old = NULL, *have = NULL, *why = NULL;
	struct strbuf body = STRBUF_INIT;
	bool want, all_right = false;
	size_t bad;
	int r;

	if (fs_read(c, ETC_HOSTS, &old, NULL) == 0)
		have = managed_block_get(old, spec->cluster.name);
	free(old);
	want = mode == HF_HOSTS_ALWAYS || (mode == HF_HOSTS_AUTO && have);
	if (mode == HF_HOSTS_AUTO && !have && spec->hostfile.address == HF_ADDR_HOSTNAME) {
		bad = names_wrong(c, peers, true, &why);
		if (bad) {
			want = true;
			report_detail(rep, "node names not resolving to the recorded address "
				      "(first: %s): %s " ETC_HOSTS, why,
				      ctx_may_write(c) ? "writing them to" : "apply writes them to");
		}
		all_right = !bad;
		free(why);
		why = NULL;
	}
	free(have);
	for (size_t i = 0; want && i < peers->n; i++) {
		sb_append(&body, peers->v[i].addr);
		sb_appendn(&body, " ", 1);
		sb_append(&body, peers->v[i].hostname);
		sb_appendn(&body, "\n", 1);
	}
	r = fs_managed_block(c, rep, ETC_HOSTS, spec->cluster.name, want ? sb_str(&body) : NULL,
			     0644, 0, 0);
	sb_free(&body);
	*managed = want;
	if (r < 0)
		return r;
	/* What a launcher will really get: a line above the block or DNS can still win. */
	if ((ctx_may_write(c) || r == 0) && !(all_right && !want && r == 0)) {
		bad = names_wrong(c, peers, false, &why);
		if (bad) {
			report_detail(rep, "%zu node name%s resolve%s elsewhere (first: %s); ssh and "
				      "mpirun would reach the wrong host or none", bad,
				      bad == 1 ? "" : "s", bad == 1 ? "s" : "", why);
			report_raise(rep, ST_DEGRADED);
		}
		free(why);
	}
	return r;
}

static int hf_run(struct ctx *c, struct report *rep)
{
	const struct spec *spec = c->spec;
	const struct spec_hostfile *hf = &spec->hostfile;
	const char *dir = hf->dir ? hf->dir : "/etc/hpcinit";
	const char *ompi_path = NULL;
	struct strlist fallbacks = { 0 };
	struct strbuf written = STRBUF_INIT;
	struct peerset usable;
	struct hf_text t;
	bool hosts = false;
	size_t left_out;
	int r, ret = 0;

	if (!c->out->peers || c->out->peers->n == 0) {
		report_set(rep, ST_FAILED, "no peers known (discovery did not run)");
		return -ENODATA;
	}
	left_out = usable_peers(spec, c->out->peers, &usable, rep);
	hostfile_render(spec, &usable, &t, &fallbacks);
	free(t.group);
	t.group = group_of(spec, c->out->peers);
	if (fallbacks.n) {
		report_detail(rep, "hostfile.address ipoib: %zu node(s) publish no IPoIB address "
			      "(first: %s); using their cluster address", fallbacks.n, fallbacks.v[0]);
		report_raise(rep, ST_DEGRADED);
	}
	r = mounts_require(c, rep, "hostfile.dir", dir);
	if (r == 0)
		r = fs_mkdir_p(c, rep, dir, 0755, 0, 0);
	if (r < 0) {
		ret = r;
		goto out;
	}
	if (r > 0 && !ctx_may_write(c) && !fs_exists(c, dir)) {
		/* check/plan with the directory missing: every file is missing too */
		report_detail(rep, "%s: apply creates the hostfiles here", dir);
	} else {
		const struct {
			const char *name;
			unsigned bit;
			const struct strbuf *text;
		} files[] = {
			{ "hostfile.openmpi", HF_OPENMPI, &t.openmpi },
			{ "hostfile.mpich", HF_MPICH, &t.mpich },
			{ "hostfile.plain", HF_PLAIN, &t.plain },
		};

		for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
			r = one_file(c, rep, dir, files[i].name, hf->formats & files[i].bit,
				     files[i].text, &written);
			if (r < 0)
				ret = r;
		}
		if (domain_files(c, rep, dir, &usable, &written) < 0)
			ret = -EIO;
	}
	r = clush_files(c, rep, hf->formats & HF_CLUSH, t.group);
	if (r < 0)
		ret = r;
	else if (hf->formats & HF_CLUSH)
		sb_printf(&written, "%sclush @%s", written.len ? ", " : "", spec->cluster.name);
	r = ompi_default(c, rep, hf->openmpi_default, sb_str(&t.ompi_block), &ompi_path);
	if (r < 0)
		ret = r;
	else if (hf->openmpi_default && ompi_path)
		sb_printf(&written, "%sOpen MPI default", written.len ? ", " : "");
	r = etc_hosts(c, rep, &hosts);
	if (r < 0)
		ret = r;
	else if (hosts)
		sb_printf(&written, "%s" ETC_HOSTS, written.len ? ", " : "");
out:
	if (ret < 0 && ret != -ENOMEDIUM)       /* -ENOMEDIUM: the finding names the mount */
		report_set(rep, ST_FAILED, "cannot write the hostfiles (see details)");
	else if (ret == 0 && left_out)
		report_set(rep, ST_OK, "%zu node%s in %s (%zu failed, left out of the MPI hostfiles): %s",
			   usable.n, usable.n == 1 ? "" : "s", dir, left_out, sb_str(&written));
	else if (ret == 0)
		report_set(rep, ST_OK, "%zu node%s in %s: %s", c->out->peers->n, c->out->peers->n == 1 ? "" : "s",
			   dir, sb_str(&written));
	free(usable.v);
	sb_free(&written);
	strlist_free(&fallbacks);
	hf_text_free(&t);
	return ret;
}

const struct module hostfile_module = {
	.name = "hostfile",
	.enabled = hf_enabled,
	.needs = hf_needs,
	.timeout_ms = NULL,
	.check = hf_run,
	.apply = hf_run,
	.inputs = OUT_PEERS,
	.isolate = true,        /* hostfile.dir and /etc/hosts may sit on shared storage */
	.shares_child = true,   /* reads its peers and the spec only */
};
