/* SPDX-License-Identifier: MIT */
/*
 * The rendezvous in etcd: keys /hpcinit/<cluster>/<collection>/<name>.
 * Every call runs the helper hpcinit-etcd (libcurl, json-c) through proc.c
 * under a deadline, the calls of one open rendezvous through one helper
 * ("serve"); this file is the agent's one runner of it, its one
 * reader of the helper's frames and its one mapping of the helper's exit
 * codes (lib/rendezvous/etcd-proto.h).
 *
 * A collection is listed once at open (and again on rv_reload); get and
 * list answer from that list.  put writes with no lease (a certificate
 * must outlive a head that is down longer than discovery.lease); binary
 * values (names ending in ".krl") are stored base64-encoded.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base64.h"
#include "etcd-proto.h"
#include "escape.h"
#include "fsutil.h"
#include "number.h"
#include "rendezvous.h"

#define ETCD_VALUE_MAX (60 * 1024)      /* the helper reads at most 64 KiB of a value */

char *rv_etcd_prefix(const struct spec *spec, const char *collection)
{
	return xasprintf("/hpcinit/%s/%s/", spec->cluster.name, collection);
}

void rv_etcd_argv(const struct ctx *c, struct strlist *argv, unsigned timeout_ms)
{
	const struct spec_discovery *d = &c->spec->discovery;

	strlist_push_take(argv, proc_helper_path(ETCD_HELPER_NAME));
	for (size_t i = 0; i < d->endpoints.n; i++) {
		strlist_push(argv, "--endpoint");
		strlist_push(argv, d->endpoints.v[i]);
	}
	if (d->ca_file) {
		strlist_push(argv, "--cacert");
		strlist_push_take(argv, ctx_path(c, d->ca_file));
	}
	if (d->cert_file && d->key_file) {
		strlist_push(argv, "--cert");
		strlist_push_take(argv, ctx_path(c, d->cert_file));
		strlist_push(argv, "--key");
		strlist_push_take(argv, ctx_path(c, d->key_file));
	}
	if (d->auth_file) {
		strlist_push(argv, "--auth");
		strlist_push_take(argv, ctx_path(c, d->auth_file));
	}
	strlist_push(argv, "--timeout");
	strlist_push_take(argv, xasprintf("%u", timeout_ms));
}

int rv_etcd_status(const struct proc_result *res)
{
	if (res->timed_out)
		return -ETIMEDOUT;
	switch (res->exit_code) {
	case ETCD_EX_OK:
		return 0;
	case ETCD_EX_DOWN:
		return -EHOSTUNREACH;
	default:
		return -EPROTO;         /* refused, a usage error, killed */
	}
}

/*
 * The step's helper ("hpcinit-etcd serve", lib/rendezvous/etcd-proto.h):
 * while a rendezvous in etcd is open (etcd_open arms it, etcd_close ends
 * it) its calls go to one helper, started at the first: a node's cold
 * start (publish, list and wait, then "formed: true") starts one process,
 * not one a call.  A helper that ends or answers what does not parse is
 * stopped and the call runs on its own (calls are safe to repeat: a sync
 * puts only what differs); one that passes the call's deadline is killed,
 * as a run of its own is.  The watch's refreshes read the stream's view
 * and make no call; its keepalives run on their own.
 */
static struct {
	unsigned armed;                 /* open rendezvous in etcd */
	bool up;
	struct proc_child ch;
	char *req;                      /* the request being written (ch.in_data) */
	struct strbuf in;               /* what the helper answered so far */
} sess;

static void sess_stop(bool kill_now)
{
	const struct proc_limits lim = { .timeout_ms = kill_now ? 0 : 2000, .reap_ms = 1000, .eof_ends = true };

	if (!sess.up)
		return;
	if (sess.ch.in_fd >= 0)
		close(sess.ch.in_fd);   /* EOF: the helper ends */
	sess.ch.in_fd = -1;
	proc_wait(&sess.ch, 1, &lim);
	proc_child_free(&sess.ch);
	free(sess.req);
	sess.req = NULL;
	sb_free(&sess.in);
	sess.up = false;
}

/* One request: ETCD_SERVE_CALL, each argument, the stdin bytes. */
static char *sess_request(const struct strlist *call, const char *stdin_data)
{
	struct strbuf sb = STRBUF_INIT;
	size_t in_len = stdin_data ? strlen(stdin_data) : 0;

	sb_printf(&sb, ETCD_SERVE_CALL "\n", (unsigned)call->n, in_len);
	for (size_t i = 0; i < call->n; i++)
		sb_printf(&sb, "%zu\n%s\n", strlen(call->v[i]), call->v[i]);
	if (in_len)
		sb_appendn(&sb, stdin_data, in_len);
	return sb_steal(&sb);
}

/* The answer when whole: 1 (res filled, sess.in emptied), 0 not yet, -EPROTO when it does not parse. */
static int sess_answer(struct proc_result *res)
{
	const char *p = sess.in.buf, *nl = p ? memchr(p, '\n', sess.in.len) : NULL;
	size_t hl, ol = 0, el = 0;
	char line[65];
	int code = 0;

	if (!nl)
		return sess.in.len > 64 ? -EPROTO : 0;
	hl = (size_t)(nl + 1 - p);
	if (hl > 64)
		return -EPROTO;
	memcpy(line, p, hl - 1);
	line[hl - 1] = '\0';          /* the line alone, not megabytes of answer */
	{
		const char *q = line + 5;
		long long lc;
		unsigned long long lo, le;

		/* ETCD_SERVE_DONE: "done CODE OUT-LEN ERR-LEN" */
		if (strncmp(line, "done ", 5) || !num_ll_field(&q, INT_MIN, INT_MAX, &lc) ||
		    !num_ull_field(&q, 10, ETCD_OUT_MAX + ETCD_OUT_MAX, &lo) ||
		    !num_ull_field(&q, 10, ETCD_OUT_MAX, &le) || *q)
			return -EPROTO;
		code = (int)lc;
		ol = (size_t)lo;
		el = (size_t)le;
	}
	if (sess.in.len - hl < ol + el)
		return 0;
	if (sess.in.len - hl > ol + el)
		return -EPROTO;         /* one request at a time: nothing may follow */
	res->exit_code = code;
	res->out_cut = ol > ETCD_OUT_MAX;
	res->out_len = res->out_cut ? ETCD_OUT_MAX : ol;
	res->out = xstrndup(p + hl, res->out_len);
	res->err_len = el;
	res->err = xstrndup(p + hl + ol, el);
	sb_free(&sess.in);
	return 1;
}

static int sess_talk(const struct ctx *c, uint64_t end, struct proc_result *res);

/*
 * One call through the step's helper, starting it when it is not up: 0
 * with res filled (timed out: the helper killed), or -errno when it could
 * not be asked (the caller runs the call on its own).
 */
static int sess_call(const struct ctx *c, const struct strlist *call, const char *stdin_data, unsigned ms,
		     struct proc_result *res)
{
	uint64_t end = now_ms() + ms;
	int r = 0;

	free(sess.req);
	sess.req = sess_request(call, stdin_data);
	/* A helper that ended before it read the request must not kill this process (SIGPIPE). */
	{
		struct sigaction ign = { .sa_handler = SIG_IGN }, old_pipe;

		sigemptyset(&ign.sa_mask);
		sigaction(SIGPIPE, &ign, &old_pipe);
		r = sess_talk(c, end, res);
		sigaction(SIGPIPE, &old_pipe, NULL);
	}
	return r;
}

/* sess_call's work: start the helper if it is not up, write the request, read the answer. */
static int sess_talk(const struct ctx *c, uint64_t end, struct proc_result *res)
{
	int r = 0;

	if (!sess.up) {
		struct strlist argv = { 0 };
		const char **av;
		char *module;

		rv_etcd_argv(c, &argv, RV_CALL_TIMEOUT_MS);
		strlist_push(&argv, "serve");
		av = xcalloc(argv.n + 1, sizeof(*av));
		for (size_t i = 0; i < argv.n; i++)
			av[i] = argv.v[i];
		memset(&sess.ch, 0, sizeof(sess.ch));
		/* the helper entered in the forked child, not exec'd (hpcinit-etcd.c, ETCD_HELPER_MODULE) */
		module = proc_helper_path(ETCD_HELPER_MODULE);
		r = proc_start_module(&sess.ch, module, ETCD_HELPER_ENTRY, av[0], av, NULL,
				      sess.req);     /* the first request: its stdin */
		free(module);
		free(av);
		strlist_free(&argv);
		if (r < 0)
			return r;
		sess.up = true;
	} else {
		sess.ch.in_data = sess.req;
		sess.ch.in_len = strlen(sess.req);
		sess.ch.in_off = 0;
	}
	while (r == 0) {
		struct pollfd pf[3] = { { .fd = sess.ch.out_fd, .events = POLLIN },
					{ .fd = sess.ch.err_fd, .events = POLLIN },
					{ .fd = sess.ch.in_off < sess.ch.in_len ? sess.ch.in_fd : -1, .events = POLLOUT } };
		uint64_t now = now_ms();
		char buf[65536];
		ssize_t n;

		if (now >= end) {
			sess_stop(true);
			res->timed_out = true;
			res->exit_code = -1;
			return 0;
		}
		if (poll(pf, 3, (int)(end - now)) < 0) {
			r = errno == EINTR ? 0 : -errno;
			continue;
		}
		if (pf[2].revents & (POLLOUT | POLLERR | POLLHUP)) {
			n = write(sess.ch.in_fd, sess.ch.in_data + sess.ch.in_off, sess.ch.in_len - sess.ch.in_off);
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				r = -EPIPE;
			else if (n > 0)
				sess.ch.in_off += (size_t)n;
		}
		if (pf[1].revents & (POLLIN | POLLHUP)) {
			/* The helper's own stderr (a served call's comes in its answer): kept for a failure. */
			n = read(sess.ch.err_fd, buf, sizeof(buf));
			if (n > 0 && sess.ch.err.len < 65536)
				sb_appendn(&sess.ch.err, buf, (size_t)n);
		}
		if (pf[0].revents & (POLLIN | POLLHUP)) {
			n = read(sess.ch.out_fd, buf, sizeof(buf));
			if (n > 0) {
				sb_appendn(&sess.in, buf, (size_t)n);
				r = sess_answer(res);
				if (r == 1)
					return 0;
			} else if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
				r = -EPIPE;     /* the helper ended */
			}
		}
	}
	sess_stop(true);
	return r;
}

int rv_etcd_run(const struct ctx *c, struct report *rep, const char *stdin_data,
		struct proc_result *res, const char *const args[])
{
	const struct spec_discovery *d = &c->spec->discovery;
	struct strlist argv = { 0 };
	const char **av;
	size_t n = 0;
	long long wait = 0;
	int r;

	unsigned long long ms;

	for (size_t i = 0; args[i]; i++)
		n++;
	/*
	 * The wait of an await (PREFIX EXPECT MS [REV]) or of a sync that
	 * waits (KEY TTL LEASE PREFIX EXPECT MS) comes on top of the requests'
	 * time: an await killed at its own end would be asked again, with a
	 * whole list of the membership each time.
	 */
	if ((n >= 4 && !strcmp(args[0], "await") && !num_ll(args[3], 0, 86400000, &wait)) ||
	    (n == 7 && !strcmp(args[0], "sync") && !num_ll(args[6], 0, 86400000, &wait)))
		wait = 0;
	/*
	 * Each endpoint may take the whole request time, three times over (the
	 * helper asks a busy member again within it); a run that reads the
	 * membership (list, await, a sync with a prefix) more with every node
	 * expected; plus the wait.
	 */
	ms = ETCD_RUN_MS(RV_CALL_TIMEOUT_MS, (unsigned long long)d->endpoints.n) + (unsigned long long)wait;
	if (!strcmp(args[0], "list") || !strcmp(args[0], "await") || (!strcmp(args[0], "sync") && n >= 5))
		ms += (unsigned long long)ETCD_RUN_MS_PER_NODE * d->expect;
	rv_etcd_argv(c, &argv, RV_CALL_TIMEOUT_MS);
	/* The helper's retries end one request's time before the agent's deadline. */
	strlist_push(&argv, "--deadline");
	strlist_push_take(&argv, xasprintf("%llu", ms - RV_CALL_TIMEOUT_MS));
	for (size_t i = 0; args[i]; i++)
		strlist_push(&argv, args[i]);
	av = xcalloc(argv.n + 1, sizeof(*av));
	for (size_t i = 0; i < argv.n; i++)
		av[i] = argv.v[i];
	r = -ENOTCONN;
	if (sess.armed) {
		/* The step's helper: the call's own words, after the helper's options. */
		struct strlist call = { 0 };

		for (size_t i = argv.n - n - 2; i < argv.n; i++)
			strlist_push(&call, argv.v[i]);
		r = sess_call(c, &call, stdin_data, (unsigned)ms, res);
		strlist_free(&call);
		if (r < 0)
			proc_result_free(res);
	}
	/* A membership up to the helper's own limit (it fails past that, saying so). */
	if (r < 0)
		r = proc_run_max(av, NULL, stdin_data, (unsigned)ms, ETCD_OUT_MAX, res);
	if (r < 0) {
		if (rep)
			report_detail(rep, "%s: cannot run: %s", argv.v[0], strerror(-r));
	} else if ((r = rv_etcd_status(res)) == 0 && res->out_cut) {
		/* A membership cut short would drop nodes without a word: fail, saying why. */
		if (rep)
			report_detail(rep, "%s %s: its answer passes the %d MiB the agent reads from it; "
				      "the rest was dropped, so nothing of it is used (fewer or smaller keys "
				      "under the prefix)", argv.v[0], args[0], ETCD_OUT_MAX >> 20);
		r = -EPROTO;
	} else if (r < 0 && rep) {
		const char *e = res->err && *res->err ? res->err : "no message\n";

		/* The helper's lines (it escapes what etcd said in them), escaped as every detail is. */
		esc_append(&rep->details, e, strlen(e), true);
		if (e[strlen(e) - 1] != '\n')
			sb_append(&rep->details, "\n");
	}
	free(av);
	strlist_free(&argv);
	return r;
}

int rv_etcd_call(const struct ctx *c, struct report *rep, const char *stdin_data,
		 struct proc_result *res, const char *a0, ...)
{
	const char *args[16];
	size_t n = 0;
	va_list ap;

	va_start(ap, a0);
	for (const char *a = a0; a && n < 15; a = va_arg(ap, const char *))
		args[n++] = a;
	va_end(ap);
	args[n] = NULL;
	return rv_etcd_run(c, rep, stdin_data, res, args);
}

int rv_frame_next(const char **pp, const char *end, struct rv_frame *f)
{
	const char *p = *pp, *nl;
	unsigned long long kl = 0, vl = 0;
	long long lease = 0;
	size_t hl, rest;
	int kind;

	if (p >= end || !(nl = memchr(p, '\n', (size_t)(end - p))))
		return 0;
	hl = (size_t)(nl + 1 - p);
	rest = (size_t)(end - nl - 1);
	memset(f, 0, sizeof(*f));
	kind = etcd_frame_header(p, nl, &kl, &vl, &lease);
	if (kind == 1) {
		if (kl > rest || vl > rest - kl || rest - kl - vl < 1)
			return 0;
		f->kind = RV_F_KV;
		f->key = nl + 1;
		f->key_len = (size_t)kl;
		f->value = nl + 1 + kl;
		f->value_len = (size_t)vl;
		f->lease = lease;
		f->size = hl + (size_t)kl + (size_t)vl + 1;
	} else if (kind == 2) {
		if (kl > rest || rest - kl < 1)
			return 0;
		f->kind = RV_F_DEL;
		f->key = nl + 1;
		f->key_len = (size_t)kl;
		f->size = hl + (size_t)kl + 1;
	} else {
		f->kind = RV_F_LINE;
		f->line = p;
		f->line_len = hl - 1;
		f->size = hl;
	}
	*pp = p + f->size;
	return 1;
}

int rv_watch(const struct ctx *c, const char *collection, struct proc_child *ch)
{
	struct strlist argv = { 0 };
	const char **av;
	int r;

	memset(ch, 0, sizeof(*ch));
	if (c->spec->discovery.method != DISC_ETCD)
		return -EOPNOTSUPP;
	rv_etcd_argv(c, &argv, RV_CALL_TIMEOUT_MS);
	strlist_push(&argv, "watch");
	strlist_push_take(&argv, rv_etcd_prefix(c->spec, collection));
	av = xcalloc(argv.n + 1, sizeof(*av));
	for (size_t i = 0; i < argv.n; i++)
		av[i] = argv.v[i];
	r = proc_start_argv(ch, av[0], av, NULL, NULL);
	free(av);
	strlist_free(&argv);
	return r;
}

/* ---- the backend ---- */

static bool is_binary(const char *name)
{
	size_t l = strlen(name);

	return l > 4 && strcmp(name + l - 4, ".krl") == 0;
}

static ssize_t cache_index(const struct rendezvous *rv, const char *name)
{
	for (size_t i = 0; i < rv->names.n; i++)
		if (strcmp(rv->names.v[i], name) == 0)
			return (ssize_t)i;
	return -1;
}

static int etcd_reload(struct rendezvous *rv, struct report *rep)
{
	struct proc_result res = { 0 };
	size_t pl = strlen(rv->prefix);
	const char *p, *end;
	struct rv_frame f;
	int r;

	strlist_free(&rv->names);
	strlist_free(&rv->vals);
	r = rv_etcd_call(rv->c, rep, NULL, &res, "list", rv->prefix, NULL);
	if (r < 0) {
		proc_result_free(&res);
		return r;
	}
	p = res.out;
	end = res.out + res.out_len;
	while (rv_frame_next(&p, end, &f))
		/* Only <prefix><name> with a plain name; values are text. */
		if (f.kind == RV_F_KV && f.key_len > pl && memcmp(f.key, rv->prefix, pl) == 0 &&
		    !memchr(f.key + pl, '/', f.key_len - pl) && !memchr(f.key + pl, '\0', f.key_len - pl) &&
		    !memchr(f.value, '\0', f.value_len)) {
			strlist_push_take(&rv->names, xstrndup(f.key + pl, f.key_len - pl));
			strlist_push_take(&rv->vals, xstrndup(f.value, f.value_len));
		}
	proc_result_free(&res);
	rv->listed = true;
	return 0;
}

static int etcd_open(struct rendezvous *rv, struct report *rep)
{
	sess.armed++;
	rv->prefix = rv_etcd_prefix(rv->c->spec, rv->o.collection);
	rv->where = xstrdup(rv->prefix);
	rv->lease = rv_etcd_lease(rv->c);
	return rv->o.no_list ? 0 : etcd_reload(rv, rep);
}

static int decode64(const char *v, char **ret, size_t *ret_len)
{
	unsigned char *out = b64_decode(v, strlen(v), ret_len);

	if (!out)
		return -EBADMSG;
	*ret = (char *)out;
	return 0;
}

static int etcd_get(struct rendezvous *rv, const char *name, struct rv_entry *e, char **ret)
{
	ssize_t i = cache_index(rv, name);
	int r;

	if (i < 0)
		return -ENOENT;
	if (is_binary(name)) {
		r = decode64(rv->vals.v[i], ret, &e->len);
		if (r < 0) {
			e->refused = "malformed";
			e->why = "not base64";
		}
		return r;
	}
	e->len = strlen(rv->vals.v[i]);
	if (e->len > rv->o.max_bytes) {
		e->refused = "too-large";
		e->why = "over the size limit";
		return -EFBIG;
	}
	*ret = xstrdup(rv->vals.v[i]);
	return 0;
}

static char *enc64(const char *p, size_t n)
{
	return b64_encode(p, n);
}

static int etcd_put(struct rendezvous *rv, struct report *rep, const char *name, const char *data,
		    size_t len)
{
	struct proc_result res = { 0 };
	char *val = is_binary(name) ? enc64(data, len) : xstrndup(data, len);
	ssize_t i = cache_index(rv, name);
	char *key;
	int r;

	if (i >= 0 && strcmp(rv->vals.v[i], val) == 0) {
		free(val);
		return 0;
	}
	key = xasprintf("%s%s", rv->prefix, name);
	if (strlen(val) > ETCD_VALUE_MAX) {
		report_finding(rep, ST_FAILED, "rendezvous.value-too-large",
			       "%s: %zu bytes, over the %d bytes one etcd value may hold here; not written",
			       key, strlen(val), ETCD_VALUE_MAX);
		r = -EFBIG;
	} else if (!ctx_may_write(rv->c)) {
		report_changed(rep, key);
		report_raise(rep, ST_CHANGED);
		r = 1;
	} else if ((r = rv_etcd_call(rv->c, rep, val, &res, "sync", key, "0", NULL)) == 0) {
		report_changed(rep, key);
		report_raise(rep, ST_CHANGED);
		if (i >= 0) {
			free(rv->vals.v[i]);
			rv->vals.v[i] = val;
		} else {
			strlist_push(&rv->names, name);
			strlist_push_take(&rv->vals, val);
		}
		val = NULL;
		r = 1;
	}
	proc_result_free(&res);
	free(val);
	free(key);
	return r;
}

static int etcd_remove(struct rendezvous *rv, struct report *rep, const char *name)
{
	struct proc_result res = { 0 };
	ssize_t i = cache_index(rv, name);
	char *key;
	int r = 1;

	if (i < 0)
		return 0;
	key = xasprintf("%s%s", rv->prefix, name);
	report_changed(rep, key);
	report_raise(rep, ST_CHANGED);
	if (ctx_may_write(rv->c) && (r = rv_etcd_call(rv->c, rep, NULL, &res, "leave", key, NULL)) == 0) {
		free(rv->names.v[i]);
		free(rv->vals.v[i]);
		/* Keep the lists' order cheap: the last entry takes this slot. */
		rv->names.v[i] = rv->names.v[rv->names.n - 1];
		rv->vals.v[i] = rv->vals.v[rv->vals.n - 1];
		rv->names.n--;
		rv->vals.n--;
		r = 1;
	}
	proc_result_free(&res);
	free(key);
	return r;
}

static int etcd_list(struct rendezvous *rv, struct report *rep, rv_want_fn want, rv_each_fn each,
		     void *arg)
{
	(void)rep;
	for (size_t i = 0; i < rv->names.n; i++) {
		struct rv_entry e = { .name = rv->names.v[i] };
		char *val = NULL;
		int r;

		if (want && !want(arg, e.name))
			continue;
		if (etcd_get(rv, e.name, &e, &val) == 0)
			e.value = val;
		r = each(arg, &e);
		free(val);
		if (r)
			return r;
	}
	return 0;
}

static void etcd_close(struct rendezvous *rv)
{
	if (sess.armed && --sess.armed == 0)
		sess_stop(false);
	free(rv->prefix);
	strlist_free(&rv->names);
	strlist_free(&rv->vals);
}

static int etcd_sync(struct rendezvous *rv, struct report *rep, const struct rv_sync *q, struct rv_synced *ans);
static int etcd_frames(struct rendezvous *rv, struct report *rep, const struct rv_await *w, char **ret,
		       size_t *ret_len);
static int etcd_leave(struct rendezvous *rv, struct report *rep, const char *name, unsigned *left);

const struct rv_ops rv_etcd_ops = {
	.name = "etcd",
	.open = etcd_open,
	.get = etcd_get,
	.put = etcd_put,
	.remove = etcd_remove,
	.list = etcd_list,
	.close = etcd_close,
	.sync = etcd_sync,
	.frames = etcd_frames,
	.leave = etcd_leave,
};

int rv_reload(struct rendezvous *rv, struct report *rep)
{
	return rv->ops == &rv_etcd_ops ? etcd_reload(rv, rep) : 0;
}

/*
 * ---- the node's session: its own key under a lease ----
 *
 * The lease this node holds lives in LEASE_FILE (per boot); rv_sync keeps
 * it alive and puts the node's entry under it, rv_leave revokes it.  The
 * helper's answers are read here, and only here.
 */

static const char *view;                /* rv_etcd_view_set: not owned */
static size_t view_len;

void rv_etcd_view_set(const char *text, size_t len)
{
	view = text;
	view_len = text ? len : 0;
}

const char *rv_etcd_view(size_t *len)
{
	if (len)
		*len = view_len;
	return view;
}

int64_t rv_etcd_lease(const struct ctx *c)
{
	char *text = NULL;
	const char *end;
	long long v = 0;

	/* the lease id and a newline (lease_write); anything else is no lease */
	if (fs_read(c, RV_LEASE_FILE, &text, NULL) == 0 &&
	    !(num_ll_prefix(text, 1, INT64_MAX, &v, &end) && (*end == '\n' || !*end)))
		v = 0;
	free(text);
	return v;
}

static void lease_write(struct ctx *c, int64_t lease)
{
	struct report scratch;
	char *text = xasprintf("%" PRId64 "\n", lease);

	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(c, &scratch, RV_LEASE_FILE, text, strlen(text), 0600, 0, 0);
	report_free(&scratch);
	free(text);
}

/* The answer of a sync: the lease granted, whether it put, etcd's Date, and after "list" the list. */
static void read_sync(const struct proc_result *res, struct rv_synced *ans)
{
	const char *p = res->out, *end = res->out + res->out_len;
	struct rv_frame f;

	while (rv_frame_next(&p, end, &f)) {
		char line[64];
		const char *w;
		long long v;

		if (f.kind != RV_F_LINE || f.line_len >= sizeof(line))
			continue;
		memcpy(line, f.line, f.line_len);
		line[f.line_len] = '\0';
		w = strchr(line, ' ');
		if (w && num_ll(w + 1, INT64_MIN, INT64_MAX, &v)) {
			if (!strncmp(line, "lease ", 6))
				ans->lease = v;
			else if (!strncmp(line, "put ", 4))
				ans->put = v != 0;
			else if (!strncmp(line, "date ", 5))
				ans->date = v;
		} else if (!strcmp(line, "list")) {
			ans->members_len = (size_t)(end - p);
			ans->members = xmalloc(ans->members_len + 1);
			memcpy(ans->members, p, ans->members_len);
			ans->members[ans->members_len] = '\0';
			ans->listed = true;
			ans->waited = strncmp(p, "waited 1\n", 9) == 0;
			break;
		}
	}
}

static int etcd_sync(struct rendezvous *rv, struct report *rep, const struct rv_sync *q, struct rv_synced *ans)
{
	struct proc_result res = { 0 };
	char ttl[32], lease[32], want[32], mss[32];
	char *key = xasprintf("%s%s", rv->prefix, q->name);
	int r;

	snprintf(ttl, sizeof(ttl), "%" PRIu64, q->ttl_s ? q->ttl_s : 1);
	snprintf(lease, sizeof(lease), "%" PRId64, rv->lease);
	snprintf(want, sizeof(want), "%u", q->expect);
	snprintf(mss, sizeof(mss), "%" PRIu64, q->wait_ms);
	if (!q->list)
		r = q->put_always ?
			rv_etcd_call(rv->c, rep, q->value, &res, "--put", "always", "sync", key, ttl, lease, NULL) :
			rv_etcd_call(rv->c, rep, q->value, &res, "sync", key, ttl, lease, NULL);
	else
		r = rv_etcd_call(rv->c, rep, q->value, &res, "sync", key, ttl, lease, rv->prefix,
				 q->wait_ms ? want : NULL, mss, NULL);
	free(key);
	if (r == 0) {
		read_sync(&res, ans);
		if (ans->lease > 0 && ans->lease != rv->lease) {
			rv->lease = ans->lease;
			ans->lease_new = true;
			lease_write(rv->c, ans->lease);
		}
	}
	proc_result_free(&res);
	return r;
}

static int etcd_frames(struct rendezvous *rv, struct report *rep, const struct rv_await *w, char **ret,
		       size_t *ret_len)
{
	struct proc_result res = { 0 };
	char want[32], mss[32], revs[32];
	int r;

	if (!w) {
		r = rv_etcd_call(rv->c, rep, NULL, &res, "list", rv->prefix, NULL);
	} else {
		snprintf(want, sizeof(want), "%zu", w->expect);
		snprintf(mss, sizeof(mss), "%" PRIu64, w->wait_ms);
		snprintf(revs, sizeof(revs), "%" PRId64, w->rev);
		/* The membership just listed (at rev) on stdin: the helper watches from after it. */
		r = rv_etcd_call(rv->c, rep, w->have, &res, "await", rv->prefix, want, mss, revs, NULL);
	}
	if (r == 0) {
		*ret = res.out ? res.out : xstrdup("");
		*ret_len = res.out_len;
		res.out = NULL;
	}
	proc_result_free(&res);
	return r;
}

static int etcd_leave(struct rendezvous *rv, struct report *rep, const char *name, unsigned *left)
{
	struct proc_result res = { 0 };
	char lease[32], *key = xasprintf("%s%s", rv->prefix, name);
	long long deleted = 0, revoked = 0;
	const char *p, *end;
	struct rv_frame f;
	int r;

	snprintf(lease, sizeof(lease), "%" PRId64, rv->lease);
	r = rv_etcd_call(rv->c, rep, NULL, &res, "leave", key, lease, NULL);
	free(key);
	if (r < 0) {
		proc_result_free(&res);
		return r;
	}
	p = res.out;
	end = res.out + res.out_len;
	while (rv_frame_next(&p, end, &f)) {
		char line[64];

		if (f.kind != RV_F_LINE || f.line_len >= sizeof(line))
			continue;
		memcpy(line, f.line, f.line_len);
		line[f.line_len] = '\0';
		if (!strncmp(line, "deleted ", 8) && !num_ll(line + 8, 0, INT64_MAX, &deleted))
			deleted = 0;
		else if (!strncmp(line, "revoked ", 8) && !num_ll(line + 8, 0, INT64_MAX, &revoked))
			revoked = 0;
	}
	proc_result_free(&res);
	if (rv->lease) {
		struct report scratch;

		report_init(&scratch);
		(void)fs_remove(rv->c, &scratch, RV_LEASE_FILE);
		report_free(&scratch);
		rv->lease = 0;
	}
	*left = (deleted ? RV_LEFT_DELETED : 0) | (revoked ? RV_LEFT_REVOKED : 0);
	return 0;
}

int64_t rv_etcd_keepalive(const struct ctx *c, int64_t lease, struct strbuf *err)
{
	struct proc_result res = { 0 };
	char id[32];
	long long ttl = -1;

	snprintf(id, sizeof(id), "%" PRId64, lease);
	if (rv_etcd_call(c, NULL, NULL, &res, "keepalive", id, NULL) == 0 &&
	    !(res.out && !strncmp(res.out, "ttl ", 4) && num_ll_prefix(res.out + 4, 0, INT64_MAX, &ttl, NULL)))
		ttl = -1;
	if (err && res.exit_code != 0 && res.err && *res.err)
		sb_append(err, res.err);
	proc_result_free(&res);
	return ttl;
}
