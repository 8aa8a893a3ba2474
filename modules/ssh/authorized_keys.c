/* SPDX-License-Identifier: MIT */
/*
 * ~user/.ssh/authorized_keys: a managed block per cluster holding every
 * node's key of the same user, this node's own included, with
 * from="<cluster.network>".
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sshkey.h"
#include "ssh.h"

#define FROM_INLINE 4

struct akey {
	char *key;              /* "type base64" */
	const char *host;       /* the comment is user@host, host of the first node publishing it */
	/* from=, borrowed (the spec's network, the peers' addresses): in place up to FROM_INLINE */
	const char *from_in[FROM_INLINE];
	const char **from;      /* from_in, or on the heap for a key many nodes share */
	size_t n_from;
};

/* Add s to a's from= list unless there; s must outlive the block's rendering. */
static void from_add(struct akey *a, const char *s)
{
	for (size_t i = 0; i < a->n_from; i++)
		if (strcmp(a->from[i], s) == 0)
			return;
	/* in place, then doubling: most keys get one or two entries, a key shared by N nodes N */
	if (a->n_from == FROM_INLINE) {
		a->from = xmalloc(2 * FROM_INLINE * sizeof(*a->from));
		memcpy(a->from, a->from_in, sizeof(a->from_in));
	} else if (a->n_from > FROM_INLINE && (a->n_from & (a->n_from - 1)) == 0) {
		a->from = xrealloc(a->from, 2 * a->n_from * sizeof(*a->from));
	}
	a->from[a->n_from++] = s;
}

/* v has room for every key (ak_render counts them first): no realloc per key. */
static void akey_add(struct akey *v, size_t *n, struct smap *seen, char *key,
		     const char *user, const char *host, const struct spec *s, const struct peer *p,
		     bool self)
{
	struct akey *a;
	size_t i;

	if (!smap_put(seen, key, *n, &i)) {
		a = &v[i];
		free(key);
	} else {
		a = &v[(*n)++];
		memset(a, 0, sizeof(*a));
		a->key = key;   /* the map borrows it */
		a->host = host;
		a->from = a->from_in;
	}
	if (s->cluster.has_network)
		from_add(a, s->cluster.network.text);
	else if (p && valid_addr(p->addr))
		from_add(a, p->addr);
	/* mpirun over hostfile.address: ipoib comes from the IPoIB address. */
	if (p && p->ipoib_addr && valid_addr(p->ipoib_addr))
		from_add(a, p->ipoib_addr);
	if (self) {
		/* "ssh <own hostname>" may resolve to 127.0.1.1 (Debian /etc/hosts). */
		from_add(a, "127.0.0.0/8");
		from_add(a, "::1");
	}
}

/*
 * The authorized_keys block for one user: every node's key for the same
 * user name, this node's own included (mpirun may ssh to itself).
 * self_pub is this node's key as read from ~/.ssh (NULL when absent).
 */
char *ak_render(const struct spec *s, const struct peerset *ps, const char *user,
		const char *self_pub, const char *self_host, struct report *r)
{
	struct akey *v;
	size_t n = 0, most = 1, ul = strlen(user);
	struct strbuf sb = STRBUF_INIT;
	struct smap seen;
	bool self_done = false;

	for (size_t i = 0; ps && i < ps->n; i++)
		most += ps->v[i].self ? 1 : ps->v[i].n_user_keys;
	v = xcalloc(most, sizeof(*v));
	smap_init(&seen, most);

	for (size_t i = 0; ps && i < ps->n; i++) {
		const struct peer *p = &ps->v[i];
		const char *host = record_hostname_valid(p->hostname) ? p->hostname : "peer";

		if (p->self) {
			char *canon = self_pub ? sshkey_canonical(self_pub) : NULL;

			if (canon)
				akey_add(v, &n, &seen, canon, user, host, s, p, true);
			self_done = true;
			continue;
		}
		for (size_t k = 0; k < p->n_user_keys; k++) {
			char *canon;

			if (!p->user_keys[k].user || strcmp(p->user_keys[k].user, user) != 0)
				continue;
			canon = p->user_keys[k].key ? sshkey_canonical(p->user_keys[k].key) : NULL;
			if (canon)
				akey_add(v, &n, &seen, canon, user, host, s, p, false);
			else if (r)
				report_detail(r, "%s: a published key of %s is malformed; ignored", host, user);
		}
	}
	if (!self_done && self_pub) {
		char *canon = sshkey_canonical(self_pub);

		if (canon)
			akey_add(v, &n, &seen, canon, user, self_host, s, NULL, true);
	}
	for (size_t i = 0; i < n; i++) {
		if (s->ssh.restrict_from) {
			if (!v[i].n_from) {
				if (r)
					report_detail(r, "%s@%s: no address known to restrict %s's key with "
						      "from=; left out", user, v[i].host, user);
				goto next;
			}
			sb_appendn(&sb, "from=\"", 6);
			for (size_t j = 0; j < v[i].n_from; j++) {
				if (j)
					sb_appendn(&sb, ",", 1);
				sb_append(&sb, v[i].from[j]);
			}
			sb_appendn(&sb, "\" ", 2);
		}
		sb_append(&sb, v[i].key);      /* appends, not printf: 10,000 keys a refresh */
		sb_appendn(&sb, " ", 1);
		sb_appendn(&sb, user, ul);
		sb_appendn(&sb, "@", 1);
		sb_append(&sb, v[i].host);
		sb_appendn(&sb, "\n", 1);
next:
		free(v[i].key);
		if (v[i].from != v[i].from_in)
			free(v[i].from);
	}
	smap_free(&seen);
	free(v);
	return sb_steal(&sb);
}

/* Canonical keys of an authorized_keys block (and their comments), for details. */
static void ak_keys(const char *block, struct strlist *ret, struct strlist *comments)
{
	struct smap seen;

	smap_init(&seen, 64);
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
		if (canon && !smap_get(&seen, canon, NULL)) {
			/* type, base64, then the comment */
			k += strspn(k, " \t");
			k += strcspn(k, " \t");
			k += strspn(k, " \t");
			k += strcspn(k, " \t");
			k += strspn(k, " \t");
			strlist_push_take(ret, canon);
			canon = NULL;
			(void)smap_add(&seen, ret->v[ret->n - 1], 0);
			if (comments)
				strlist_push(comments, k);
		}
		free(canon);
		free(line);
	}
	smap_free(&seen);
}

void ak_report_diff(struct ctx *c, struct report *r, const char *path,
		    const char *old_block, const char *new_block)
{
	struct strlist a = { 0 }, b = { 0 }, ac = { 0 }, bc = { 0 };
	struct smap am, bm;

	/* The steady state: nothing authorized or removed. */
	if (old_block && new_block && strcmp(old_block, new_block) == 0)
		return;
	ak_keys(old_block, &a, &ac);
	ak_keys(new_block, &b, &bc);
	smap_init(&am, a.n);
	smap_init(&bm, b.n);
	for (size_t i = 0; i < a.n; i++)
		(void)smap_add(&am, a.v[i], i);
	for (size_t i = 0; i < b.n; i++)
		(void)smap_add(&bm, b.v[i], i);
	for (int pass = 0; pass < 2; pass++) {
		const struct strlist *l = pass ? &a : &b, *cm = pass ? &ac : &bc;
		const struct smap *other = pass ? &bm : &am;
		const char *what = pass ? (ctx_may_write(c) ? "removed" : "extra") :
				   (ctx_may_write(c) ? "authorized" : "missing");
		size_t n = 0;

		for (size_t i = 0; i < l->n; i++) {
			char *fp;

			if (smap_get(other, l->v[i], NULL) || ++n > DETAIL_MAX)
				continue;
			fp = sshkey_fingerprint(l->v[i]);
			report_detail(r, "%s: %s %s %s", path, what, fp, cm->v[i]);
			free(fp);
		}
		if (n > DETAIL_MAX)
			report_detail(r, "%s: %s %zu more keys", path, what, n - DETAIL_MAX);
	}
	smap_free(&am);
	smap_free(&bm);
	strlist_free(&a);
	strlist_free(&b);
	strlist_free(&ac);
	strlist_free(&bc);
}
