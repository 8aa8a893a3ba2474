/* SPDX-License-Identifier: MIT */
/*
 * What the unit tests of modules/nfs/ share (test_nfs.c, test_nfs_export.c,
 * test_nfs_probe.c): the step's files #included (to reach their statics),
 * the fakes behind struct nfs_ops, and helpers that build mounts and specs.
 * The network and the mounted path are behind struct nfs_ops; the fakes
 * replace them (this machine's kernel has no NFS, and unit tests send no
 * traffic).  tests/cluster/nfs-ganesha.sh runs the real probe against a
 * real nfs-ganesha.
 */
#ifndef HPCINIT_TESTNFS_H
#define HPCINIT_TESTNFS_H

#include "../../modules/nfs/nfs.c"
#include "../../modules/nfs/mount.c"
#include "../../modules/nfs/probe.c"
#include "../../modules/nfs/fstab.c"
#include "../../modules/nfs/export.c"

#include <ftw.h>
#include <time.h>

#include "test.h"

/* ---- fakes ---------------------------------------------------------------- */

static int fake_tcp_fail_left;          /* connects that fail before one succeeds; <0: always */
static unsigned fake_tcp_calls;
static uint16_t fake_tcp_last_port;
static enum nfs_err fake_rpc_err;
static int fake_rpc_err_left;           /* answers with fake_rpc_err before NE_OK; <0: always */
static unsigned fake_rpc_delay_ms;      /* how long an answer takes (a slow or loaded machine) */
static unsigned fake_rpc_calls;
static bool fake_rpc_v3_off;            /* v3 gives no answer (a server with vers3=n); v4 answers */
static unsigned fake_mode = 0755;
static int fake_inspect_rc;
static int fake_write_err;
static int fake_stat_err;               /* inspect: stat of the mount fails with it */
static unsigned fake_inspect_calls;
static bool fake_inspect_wrote;

static int fake_tcp(const char *host, uint16_t port, unsigned timeout_ms, char *err, size_t errlen)
{
	fake_tcp_calls++;
	fake_tcp_last_port = port;
	if (fake_tcp_fail_left != 0) {
		if (fake_tcp_fail_left > 0)
			fake_tcp_fail_left--;
		snprintf(err, errlen, "%s", strerror(ECONNREFUSED));
		return -ECONNREFUSED;
	}
	return 0;
}

static int fake_rpc(const char *host, const char *export, int vers, unsigned timeout_ms,
		    struct nfs_probe_result *res)
{
	fake_rpc_calls++;
	memset(res, 0, sizeof(*res));
	if (fake_rpc_delay_ms) {
		struct timespec ts = { (time_t)(fake_rpc_delay_ms / 1000),
				       (long)(fake_rpc_delay_ms % 1000) * 1000000L };

		while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
			;
	}
	if (fake_rpc_v3_off) {
		if (vers != 3) {
			snprintf(res->what, sizeof(res->what), "LOOKUP %s", export);
			return 0;
		}
		res->err = NE_UNREACHABLE;
		res->errnum = EPROTONOSUPPORT;
		snprintf(res->what, sizeof(res->what), "MOUNT %s", export);
		snprintf(res->msg, sizeof(res->msg), "RPC: Program not registered");
		return -EPROTONOSUPPORT;
	}
	res->err = fake_rpc_err_left == 0 ? NE_OK : fake_rpc_err;
	if (res->err == NE_OK)
		return 0;
	if (fake_rpc_err_left > 0)
		fake_rpc_err_left--;
	snprintf(res->what, sizeof(res->what), "MOUNT %s", export);
	snprintf(res->msg, sizeof(res->msg), "MNT3ERR_ACCES(13)");
	res->have_exports = true;
	exports_add(res, "/export  *");
	exports_add(res, "/other");
	res->errnum = EACCES;
	return -EACCES;
}

static int fake_inspect(const char *hostpath, bool write_probe, unsigned timeout_ms,
			struct mp_info *ret)
{
	fake_inspect_calls++;
	fake_inspect_wrote = write_probe;
	memset(ret, 0, sizeof(*ret));
	if (fake_inspect_rc)
		return fake_inspect_rc;
	ret->fstype = NFS_SUPER_MAGIC_;
	ret->mode = fake_mode;
	ret->write_err = write_probe ? fake_write_err : -1;
	ret->stat_err = fake_stat_err;
	snprintf(ret->write_step, sizeof(ret->write_step), "create");
	return 0;
}

static const struct nfs_ops fake_ops = {
	.tcp_connect = fake_tcp,
	.rpc_probe = fake_rpc,
	.inspect = fake_inspect,
};

static inline void fakes_reset(void)
{
	fake_tcp_fail_left = 0;
	fake_tcp_calls = 0;
	fake_tcp_last_port = 0;
	fake_rpc_err = NE_OK;
	fake_rpc_err_left = -1;
	fake_rpc_delay_ms = 0;
	fake_rpc_calls = 0;
	fake_rpc_v3_off = false;
	fake_mode = 0755;
	fake_inspect_rc = 0;
	fake_write_err = 0;
	fake_stat_err = 0;
	fake_inspect_calls = 0;
	fake_inspect_wrote = false;
}

/* ---- helpers ------------------------------------------------------------- */

#define WAIT_UNSET UINT64_MAX   /* mount_init: no wait key in the spec */

/* Load a spec from text through the real loader; NULL (and the errors printed) when it fails. */
static inline struct spec *load(const char *yaml)
{
	struct diags d = { 0 };
	struct spec *s = NULL;
	int r = spec_load_buffer("test.yaml", yaml, strlen(yaml), &s, &d);

	if (r < 0)
		diags_print(&d, stdout);
	diags_free(&d);
	return r < 0 ? NULL : s;
}

/* A mount as the loader makes it when the spec gives no options and no wait. */
static const struct spec_nfs_mount *loader_mount(void)
{
	static struct spec *s;

	if (!s)
		s = load("version: 1\ncluster: {name: c}\nnfs: {mounts: [{source: \"h:/e\", path: /p}]}\n");
	if (!s || s->nfs.n_mounts != 1) {
		printf("the loader did not load the reference mount\n");
		exit(1);
	}
	return &s->nfs.mounts[0];
}

/* opts NULL: the loader's default options; wait_ms WAIT_UNSET: the loader's default wait. */
static inline void mount_init(struct spec_nfs_mount *m, const char *host, const char *export,
		       const char *path, const char *const *opts, uint64_t wait_ms)
{
	memset(m, 0, sizeof(*m));
	m->host = xstrdup(host);
	m->export = xstrdup(export);
	m->source = xasprintf("%s:%s", host, export);
	m->path = xstrdup(path);
	for (size_t i = 0; opts && opts[i]; i++)
		strlist_push(&m->options, opts[i]);
	for (size_t i = 0; !opts && i < loader_mount()->options.n; i++)
		strlist_push(&m->options, loader_mount()->options.v[i]);
	m->wait_ms = wait_ms == WAIT_UNSET ? loader_mount()->wait_ms : wait_ms;
}

static inline void mount_fini(struct spec_nfs_mount *m)
{
	free(m->host);
	free(m->export);
	free(m->source);
	free(m->path);
	strlist_free(&m->options);
}

static inline char *slurp(const char *path)
{
	char *text = NULL;

	if (fs_read_host(path, FS_MAX_READ, &text, NULL) < 0)
		return NULL;
	return text;
}

static inline void spit(const char *path, const char *text)
{
	FILE *f = fopen(path, "we");

	if (!f) {
		perror(path);
		exit(1);
	}
	fputs(text, f);
	fclose(f);
}

static inline int rm_cb(const char *p, const struct stat *sb, int type, struct FTW *ftw)
{
	return remove(p);
}

static inline void rm_rf(const char *dir)
{
	nftw(dir, rm_cb, 16, FTW_DEPTH | FTW_PHYS);
}


static inline struct spec *spec_new(const char *cluster)
{
	struct spec *s = xcalloc(1, sizeof(*s));

	s->version = 1;
	s->cluster.name = xstrdup(cluster);
	s->nfs.present = true;
	return s;
}

static inline void spec_del(struct spec *s)
{
	spec_free(s);   /* the loader's own teardown: every field it may own */
}

static inline void ctx_setup(struct ctx *c, const struct spec *s, const char *root, enum run_mode mode)
{
	memset(c, 0, sizeof(*c));
	c->spec = s;
	c->root = root;
	c->mode = mode;
	c->module = "nfs";
	c->hostname = "head0";
	c->deadline_ms = now_ms() + 60000;
}


#endif
