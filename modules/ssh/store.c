/* SPDX-License-Identifier: MIT */
/*
 * Where host_keys: ca keeps the cluster's certificates (docs/ssh.md
 * "Where certificates live"): a few named values, "<host>.cert",
 * "revoked.keys" and "revoked.krl", written by the head and read by every
 * node, in the rendezvous of discovery.method:
 *
 *   shared: files in <discovery.dir>/<cluster>/certs/;
 *   etcd:   keys /hpcinit/<cluster>/certs/<name>, put with no lease (a
 *           certificate must outlive a head that is down for longer than
 *           discovery.lease; it expires on its own, and the head deletes
 *           and revokes a departed member's).  The binary KRL is stored
 *           base64-encoded.  Every call runs the etcd helper
 *           (hpcinit-etcd) through proc.c, as discovery does.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/evp.h>

#include "../discovery/discovery.h"
#include "fsutil.h"
#include "proc.h"
#include "ssh.h"

#define CALL_TIMEOUT_MS 5000
#define ETCD_VALUE_MAX (60 * 1024)      /* the helper reads at most 64 KiB of a value */

static bool is_binary(const char *name)
{
	size_t l = strlen(name);

	return l > 4 && strcmp(name + l - 4, ".krl") == 0;
}

/* Run the etcd helper: 0 and its output, or -errno with what it said in the report. */
static int etcd_call(const struct cstore *st, struct report *r, const char *in,
		     struct proc_result *res, const char *cmd, const char *a1, const char *a2)
{
	const struct spec_discovery *d = &st->c->spec->discovery;
	struct strlist argv = { 0 };
	const char **av;
	int ret;

	etcd_helper_argv(st->c, &argv, CALL_TIMEOUT_MS);
	strlist_push(&argv, cmd);
	if (a1)
		strlist_push(&argv, a1);
	if (a2)
		strlist_push(&argv, a2);
	av = xcalloc(argv.n + 1, sizeof(*av));
	for (size_t i = 0; i < argv.n; i++)
		av[i] = argv.v[i];
	ret = proc_run(av, NULL, in, (unsigned)(CALL_TIMEOUT_MS * (d->endpoints.n + 1) * 3), res);
	if (ret < 0) {
		report_detail(r, "%s: cannot run: %s", argv.v[0], strerror(-ret));
	} else if (res->exit_code != 0) {
		report_detail(r, "etcd %s %s: %s", cmd, a1 ? a1 : "",
			      res->err && *res->err ? res->err : "failed");
		ret = res->exit_code == 1 || res->timed_out ? -EHOSTUNREACH : -EPROTO;
	}
	free(av);
	strlist_free(&argv);
	return ret;
}

int cstore_reload(struct cstore *st, struct report *r)
{
	struct proc_result res = { 0 };
	size_t pl;
	char *p, *end;
	int ret;

	if (!st->etcd)
		return 0;
	strlist_free(&st->names);
	strlist_free(&st->vals);
	ret = etcd_call(st, r, NULL, &res, "list", st->prefix, NULL);
	if (ret < 0) {
		proc_result_free(&res);
		return ret;
	}
	pl = strlen(st->prefix);
	p = res.out;
	end = res.out + res.out_len;
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		const char *line = p;
		unsigned long long kl, vl;
		long long lease;

		if (!nl)
			break;
		*nl = '\0';
		p = nl + 1;
		if (sscanf(line, "kv %llu %llu %lld", &kl, &vl, &lease) != 3)
			continue;
		if (kl > (size_t)(end - p) || vl > (size_t)(end - p) - kl)
			break;
		/* Only <prefix><name> with a plain name; values are text. */
		if (kl > pl && memcmp(p, st->prefix, pl) == 0 && !memchr(p + pl, '/', kl - pl) &&
		    !memchr(p + pl, '\0', kl - pl) && !memchr(p + kl, '\0', vl)) {
			strlist_push_take(&st->names, xstrndup(p + pl, (size_t)kl - pl));
			strlist_push_take(&st->vals, xstrndup(p + kl, (size_t)vl));
		}
		p += kl + vl + 1;
	}
	proc_result_free(&res);
	return 0;
}

int cstore_open(struct ctx *c, struct report *r, struct cstore *st)
{
	const struct spec *s = c->spec;

	memset(st, 0, sizeof(*st));
	st->c = c;
	if (s->discovery.method == DISC_ETCD) {
		st->etcd = true;
		st->prefix = xasprintf("/hpcinit/%s/certs/", s->cluster.name);
		st->where = xstrdup(st->prefix);
		return cstore_reload(st, r);
	}
	st->dir = xasprintf("%s/%s/certs", s->discovery.dir, s->cluster.name);
	st->where = xasprintf("%s/", st->dir);
	return 0;
}

void cstore_close(struct cstore *st)
{
	free(st->dir);
	free(st->prefix);
	free(st->where);
	strlist_free(&st->names);
	strlist_free(&st->vals);
	memset(st, 0, sizeof(*st));
}

static ssize_t etcd_index(const struct cstore *st, const char *name)
{
	for (size_t i = 0; i < st->names.n; i++)
		if (strcmp(st->names.v[i], name) == 0)
			return (ssize_t)i;
	return -1;
}

static char *enc64(const char *p, size_t n)
{
	char *out = xmalloc(4 * ((n + 2) / 3) + 1);

	EVP_EncodeBlock((unsigned char *)out, (const unsigned char *)p, (int)n);
	return out;
}

int cstore_read(const struct cstore *st, const char *name, char **ret, size_t *ret_len)
{
	*ret = NULL;
	if (ret_len)
		*ret_len = 0;
	if (st->etcd) {
		ssize_t i = etcd_index(st, name);
		const char *v;
		size_t vl;

		if (i < 0)
			return -ENOENT;
		v = st->vals.v[i];
		vl = strlen(v);
		if (is_binary(name)) {
			unsigned char *out;
			int n;
			size_t pad = 0;

			if (vl % 4 != 0)
				return -EBADMSG;
			out = xmalloc(vl / 4 * 3 + 1);
			n = vl ? EVP_DecodeBlock(out, (const unsigned char *)v, (int)vl) : 0;
			if (n < 0) {
				free(out);
				return -EBADMSG;
			}
			while (pad < 2 && vl > pad && v[vl - 1 - pad] == '=')
				pad++;
			out[(size_t)n - pad] = '\0';
			*ret = (char *)out;
			if (ret_len)
				*ret_len = (size_t)n - pad;
			return 0;
		}
		*ret = xstrdup(v);
		if (ret_len)
			*ret_len = vl;
		return 0;
	} else {
		char *path = xasprintf("%s/%s", st->dir, name);
		int ret_ = fs_read(st->c, path, ret, ret_len);

		free(path);
		return ret_;
	}
}

bool cstore_has(const struct cstore *st, const char *name)
{
	char *path;
	bool ret;

	if (st->etcd)
		return etcd_index(st, name) >= 0;
	path = xasprintf("%s/%s", st->dir, name);
	ret = fs_exists(st->c, path);
	free(path);
	return ret;
}

int cstore_write(struct cstore *st, struct report *r, const char *name, const char *data,
		 size_t len)
{
	struct proc_result res = { 0 };
	char *val, *key;
	ssize_t i;
	int ret;

	if (!st->etcd) {
		char *path = xasprintf("%s/%s", st->dir, name);

		ret = fs_write(st->c, r, path, data, len, 0644, 0, 0);
		free(path);
		return ret;
	}
	val = is_binary(name) ? enc64(data, len) : xstrndup(data, len);
	i = etcd_index(st, name);
	if (i >= 0 && strcmp(st->vals.v[i], val) == 0) {
		free(val);
		return 0;
	}
	key = xasprintf("%s%s", st->prefix, name);
	if (strlen(val) > ETCD_VALUE_MAX) {
		report_finding(r, ST_FAILED, "ssh.ca.value-too-large",
			       "%s: %zu bytes, over the %d bytes one etcd value may hold here; not written",
			       key, strlen(val), ETCD_VALUE_MAX);
		ret = -EFBIG;
	} else if (!ctx_may_write(st->c)) {
		report_changed(r, key);
		report_raise(r, ST_CHANGED);
		ret = 1;
	} else if ((ret = etcd_call(st, r, val, &res, "sync", key, "0")) == 0) {
		report_changed(r, key);
		report_raise(r, ST_CHANGED);
		if (i >= 0) {
			free(st->vals.v[i]);
			st->vals.v[i] = val;
			val = NULL;
		} else {
			strlist_push(&st->names, name);
			strlist_push_take(&st->vals, val);
			val = NULL;
		}
		ret = 1;
	}
	proc_result_free(&res);
	free(val);
	free(key);
	return ret;
}

int cstore_remove(struct cstore *st, struct report *r, const char *name)
{
	struct proc_result res = { 0 };
	char *key;
	ssize_t i;
	int ret;

	if (!st->etcd) {
		char *path = xasprintf("%s/%s", st->dir, name);

		ret = fs_remove(st->c, r, path);
		free(path);
		return ret;
	}
	if ((i = etcd_index(st, name)) < 0)
		return 0;
	key = xasprintf("%s%s", st->prefix, name);
	report_changed(r, key);
	report_raise(r, ST_CHANGED);
	if (ctx_may_write(st->c)) {
		ret = etcd_call(st, r, NULL, &res, "leave", key, NULL);
		if (ret == 0) {
			free(st->names.v[i]);
			free(st->vals.v[i]);
			/* Keep the lists' order cheap: the last entry takes this slot. */
			st->names.v[i] = st->names.v[st->names.n - 1];
			st->vals.v[i] = st->vals.v[st->vals.n - 1];
			st->names.n--;
			st->vals.n--;
			ret = 1;
		}
	} else {
		ret = 1;
	}
	proc_result_free(&res);
	free(key);
	return ret;
}

void cstore_names(const struct cstore *st, struct strlist *ret)
{
	DIR *d;
	struct dirent *de;
	char *hdir;

	if (st->etcd) {
		for (size_t i = 0; i < st->names.n; i++)
			strlist_push(ret, st->names.v[i]);
		return;
	}
	hdir = ctx_path(st->c, st->dir);
	d = opendir(hdir);
	while (d && (de = readdir(d)))
		if (de->d_name[0] != '.')
			strlist_push(ret, de->d_name);
	if (d)
		closedir(d);
	free(hdir);
}
