/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous front: a collection opened with the backend of
 * discovery.method (dir for shared, etcd for etcd), every call through the
 * backend's const ops table.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "rendezvous.h"

/* A collection's name, and an entry's: plain names, nothing that walks the tree. */
static bool plain_name(const char *s)
{
	if (!s || !*s || s[0] == '.' || strlen(s) > 255)
		return false;
	for (; *s; s++)
		if (*s == '/' || (unsigned char)*s < 0x21 || *s == 0x7f)
			return false;
	return true;
}

int rv_open(struct ctx *c, struct report *rep, const struct rv_opts *o, struct rendezvous *rv)
{
	const struct spec *s = c->spec;
	int r;

	memset(rv, 0, sizeof(*rv));
	rv->c = c;
	rv->o = *o;
	if (!plain_name(o->collection) || !o->self || !o->max_bytes)
		return -EINVAL;
	if (s->discovery.method == DISC_SHARED)
		rv->ops = &rv_dir_ops;
	else if (s->discovery.method == DISC_ETCD)
		rv->ops = &rv_etcd_ops;
	else
		return -EOPNOTSUPP;
	r = rv->ops->open(rv, rep);
	if (r < 0) {
		/* Nothing of a refused collection is used: every later call says -EBADF. */
		rv->ops->close(rv);
		rv->ops = NULL;
	}
	if (!rv->where)
		rv->where = xstrdup(s->discovery.dir ? s->discovery.dir : "(no rendezvous)");
	return r;
}

void rv_close(struct rendezvous *rv)
{
	if (rv->ops)
		rv->ops->close(rv);
	free(rv->where);
	memset(rv, 0, sizeof(*rv));
}

int rv_get_entry(struct rendezvous *rv, const char *name, struct rv_entry *e, char **ret)
{
	memset(e, 0, sizeof(*e));
	*ret = NULL;
	if (!rv->ops)
		return -EBADF;
	if (!plain_name(name))
		return -EINVAL;
	return rv->ops->get(rv, name, e, ret);
}

int rv_get(struct rendezvous *rv, const char *name, char **ret, size_t *ret_len)
{
	struct rv_entry e;
	int r = rv_get_entry(rv, name, &e, ret);

	if (ret_len)
		*ret_len = r == 0 ? e.len : 0;
	return r;
}

int rv_put(struct rendezvous *rv, struct report *rep, const char *name, const char *data, size_t len)
{
	if (!rv->ops)
		return -EBADF;
	if (!plain_name(name))
		return -EINVAL;
	return rv->ops->put(rv, rep, name, data, len);
}

int rv_remove(struct rendezvous *rv, struct report *rep, const char *name)
{
	if (!rv->ops)
		return -EBADF;
	if (!plain_name(name))
		return -EINVAL;
	return rv->ops->remove(rv, rep, name);
}

int rv_list(struct rendezvous *rv, struct report *rep, rv_want_fn want, rv_each_fn each, void *arg)
{
	if (!rv->ops)
		return -EBADF;
	return rv->ops->list(rv, rep, want, each, arg);
}

/* Another backend: prep in line, entry by entry, before each. */
static int prep_inline(void *arg, const struct rv_entry *e)
{
	const struct rv_lister *l = arg;
	struct rv_entry copy = *e;

	copy.prep = e->value ? l->prep(l->arg, e) : NULL;
	return l->each(l->arg, &copy);
}

static bool want_inline(void *arg, const char *name)
{
	const struct rv_lister *l = arg;

	return l->want(l->arg, name);
}

int rv_list_prep(struct rendezvous *rv, struct report *rep, const struct rv_lister *l)
{
	struct rv_lister copy = *l;

	if (!rv->ops)
		return -EBADF;
	if (rv->ops == &rv_dir_ops)
		return rv_dir_list_prep(rv, rep, l);
	if (!l->prep)
		return rv->ops->list(rv, rep, l->want, l->each, l->arg);
	return rv->ops->list(rv, rep, l->want ? want_inline : NULL, prep_inline, &copy);
}

int rv_sync(struct rendezvous *rv, struct report *rep, const struct rv_sync *q, struct rv_synced *ans)
{
	memset(ans, 0, sizeof(*ans));
	if (!rv->ops)
		return -EBADF;
	if (!plain_name(q->name) || !q->value)
		return -EINVAL;
	return rv->ops->sync ? rv->ops->sync(rv, rep, q, ans) : -EOPNOTSUPP;
}

int rv_frames(struct rendezvous *rv, struct report *rep, const struct rv_await *w, char **ret, size_t *ret_len)
{
	*ret = NULL;
	*ret_len = 0;
	if (!rv->ops)
		return -EBADF;
	return rv->ops->frames ? rv->ops->frames(rv, rep, w, ret, ret_len) : -EOPNOTSUPP;
}

int rv_leave(struct rendezvous *rv, struct report *rep, const char *name, unsigned *left)
{
	*left = 0;
	if (!rv->ops)
		return -EBADF;
	if (!plain_name(name))
		return -EINVAL;
	return rv->ops->leave ? rv->ops->leave(rv, rep, name, left) : -EOPNOTSUPP;
}

static bool no_read(void *arg, const char *name)
{
	strlist_push(arg, name);
	return false;
}

static int none(void *arg, const struct rv_entry *e)
{
	(void)arg;
	(void)e;
	return 0;
}

int rv_names(struct rendezvous *rv, struct report *rep, struct strlist *ret)
{
	return rv_list(rv, rep, no_read, none, ret);
}
