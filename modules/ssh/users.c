/* SPDX-License-Identifier: MIT */
/*
 * The spec's users, the same on every node (docs/ssh.md "Directory users").
 * Each must resolve through NSS before the node is ready (a directory slow
 * at boot is waited for, ssh.users_wait), with the UID and GID the other
 * nodes resolved: the records carry each node's (users:).  Per-VM users
 * (Entra ID login makes large, VM-specific UIDs), a local account shadowing
 * the directory, a second NSS source: the node that disagrees with the most
 * nodes (the head's side on a tie) is wrong, and it alone fails; the others
 * name it in a cluster finding.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "log.h"
#include "ssh.h"
#include "sshkeys/resolve.h"

struct uid_gid {
	uint32_t uid, gid;
	bool head;
	const char *host;       /* NULL: this node */
};

static int ids_cmp(const void *x, const void *y)
{
	const struct uid_gid *a = x, *b = y;

	if (a->uid != b->uid)
		return a->uid < b->uid ? -1 : 1;
	if (a->gid != b->gid)
		return a->gid < b->gid ? -1 : 1;
	return 0;
}

/* A run of equal ids in a sorted array: where it starts, how long, whether the head is in it. */
struct ids_run {
	size_t at, n;
	bool head;
};

/*
 * The ids most nodes resolved (v sorted): the longest run, the head's on a
 * tie; false when two runs tie and the head is in neither (no majority).
 */
static bool ids_reference(const struct uid_gid *v, size_t n, struct ids_run *ret)
{
	struct ids_run best = { 0 }, cur = { 0 };
	bool tie = false;

	for (size_t i = 0; i <= n; i++) {
		if (i < n && cur.n && ids_cmp(&v[cur.at], &v[i]) == 0) {
			cur.n++;
			cur.head |= v[i].head;
			continue;
		}
		if (cur.n > best.n || (cur.n == best.n && cur.head && !best.head)) {
			tie = false;
			best = cur;
		} else if (cur.n == best.n && !(best.head && !cur.head)) {
			tie = true;
		}
		if (i < n)
			cur = (struct ids_run){ i, 1, v[i].head };
	}
	*ret = best;
	return best.n && !tie;
}

/* Up to DETAIL_MAX names of the nodes outside run ref (all of them: ref NULL), then a count. */
static void others_names(struct strbuf *sb, const struct uid_gid *v, size_t n, const struct ids_run *ref)
{
	size_t shown = 0, more = 0;

	for (size_t i = 0; i < n; i++) {
		if ((ref && i >= ref->at && i < ref->at + ref->n) || !v[i].host)
			continue;
		if (shown++ < DETAIL_MAX)
			sb_printf(sb, "%s%s (%u:%u)", shown > 1 ? ", " : "", v[i].host, v[i].uid, v[i].gid);
		else
			more++;
	}
	if (more)
		sb_printf(sb, " and %zu more", more);
}

/* One user: this node's ids (self) against the ones the peers' records carry. */
static void user_compare(struct report *r, const struct peerset *ps, const char *user,
			 const struct uid_gid *self)
{
	struct uid_gid *v = xcalloc((ps ? ps->n : 0) + 1, sizeof(*v));
	struct strbuf sb = STRBUF_INIT;
	struct ids_run ref;
	size_t n = 0, self_at = 0;
	bool majority;

	v[n++] = *self;
	for (size_t i = 0; ps && i < ps->n; i++) {
		const struct peer *p = &ps->v[i];

		if (p->self || record_user_ids(p, user, &v[n].uid, &v[n].gid) < 0)
			continue;       /* an older hpcinit's record, or not resolved there: it says so itself */
		v[n].head = p->head;
		v[n++].host = p->hostname;
	}
	qsort(v, n, sizeof(*v), ids_cmp);
	majority = ids_reference(v, n, &ref);
	for (size_t i = 0; i < n; i++)
		if (!v[i].host)
			self_at = i;
	if (ref.n == n) {
		/* every node that says agrees */
	} else if (!majority || self_at < ref.at || self_at >= ref.at + ref.n) {
		if (majority)
			sb_printf(&sb, "user %s is %u:%u here but %u:%u on %zu of %zu nodes%s",
				  user, self->uid, self->gid, v[ref.at].uid, v[ref.at].gid, ref.n, n,
				  ref.head ? ", the head's among them" : "");
		else
			sb_printf(&sb, "user %s is %u:%u here and the nodes disagree with no majority (", user,
				  self->uid, self->gid);
		if (!majority)
			others_names(&sb, v, n, NULL);
		report_finding(r, ST_FAILED, "ssh.user.ids-differ",
			       "%s%s: this node resolves %s differently (per-VM users, a local account before "
			       "the directory in nsswitch.conf, another NSS source); its files on shared homes "
			       "belong to someone else and host-based login as %s fails", sb_str(&sb),
			       majority ? "" : ")", user, user);
	} else {
		others_names(&sb, v, n, &ref);
		report_cluster(r, "ssh.user.ids-differ",
			       "user %s is %u:%u here and on %zu of %zu nodes, but not on %s: that node "
			       "resolves %s differently (fix its NSS or its local account)", user, self->uid,
			       self->gid, ref.n, n, sb_str(&sb), user);
	}
	sb_free(&sb);
	free(v);
}

bool *users_converge(struct ctx *c, struct report *r)
{
	const struct spec *s = c->spec;
	const struct strlist *users = &s->ssh.users;
	bool *ok = xcalloc(users->n + 1, sizeof(*ok));
	/* apply at boot waits for a slow directory; check, plan and refresh look once */
	uint64_t wait = ctx_may_write(c) && !c->refresh ? s->ssh.users_wait_ms : 0;
	char wait_text[64] = "";

	if (wait)
		snprintf(wait_text, sizeof(wait_text), " after %" PRIu64 ".%01" PRIu64 " s (ssh.users_wait)",
			 wait / 1000, wait % 1000 / 100);

	/* looked once; the wait said in the log, where an admin watching the boot sees it */
	if (users_wait(c, users, 0, 1000, ok) && wait) {
		for (size_t i = 0; i < users->n; i++)
			if (!ok[i])
				log_warn("user %s does not resolve yet; waiting up to %" PRIu64 " s for it "
					 "(ssh.users_wait)", users->v[i], wait / 1000);
		(void)users_wait(c, users, wait, 1000, ok);
	}
	if (memchr(ok, false, users->n)) {
		for (size_t i = 0; i < users->n; i++)
			if (!ok[i])
				report_finding(r, ST_FAILED, "ssh.user.unresolved",
					       "user %s does not resolve%s%s: jobs as %s would fail (\"can't "
					       "get password entry\"); %s", users->v[i],
					       ctx_real_root(c) ? " through NSS (getpwnam)" : " in /etc/passwd",
					       wait_text, users->v[i],
					       ctx_real_root(c) ? "check the directory and sssd or nslcd "
					       "(getent passwd), or remove the user from ssh.users" :
					       "add the account or remove it from ssh.users");
	}
	for (size_t i = 0; i < users->n; i++) {
		struct uid_gid self = { 0 };
		uid_t uid;
		gid_t gid;

		if (!ok[i] || fs_lookup_user(c, users->v[i], &uid, &gid, NULL) < 0)
			continue;
		self.uid = (uint32_t)uid;
		self.gid = (uint32_t)gid;
		self.head = s->cluster.role == ROLE_HEAD;
		user_compare(r, c->out->peers, users->v[i], &self);
	}
	return ok;
}
