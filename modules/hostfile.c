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
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "nodeset.h"
#include "record.h"

#define CLUSH_DIR "/etc/clustershell/groups.d"
#define CLUSH_YAML CLUSH_DIR "/hpcinit.yaml"
#define CLUSH_LOCAL CLUSH_DIR "/local.cfg"
#define HEADER_MARK "# hpcinit:"

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

		if (fb && fallbacks)
			strlist_push(fallbacks, p->hostname);
		names[i] = name;
		sb_printf(&t->openmpi, "%s slots=%u\n", name, p->slots);
		sb_printf(&t->ompi_block, "%s slots=%u\n", name, p->slots);
		sb_printf(&t->mpich, "%s:%u\n", name, p->slots);
		sb_printf(&t->plain, "%s\n", name);
	}
	t->group = nodeset_fold(names, peers->n);
	free(names);
	free(header);
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
		r = fs_write(c, rep, path, text->buf, text->len, 0644, 0, 0);
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
	r = fs_write(c, rep, CLUSH_YAML, yaml, strlen(yaml), 0644, 0, 0);
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

static int hf_run(struct ctx *c, struct report *rep)
{
	const struct spec *spec = c->spec;
	const struct spec_hostfile *hf = &spec->hostfile;
	const char *dir = hf->dir ? hf->dir : "/etc/hpcinit";
	const char *ompi_path = NULL;
	struct strlist fallbacks = { 0 };
	struct strbuf written = STRBUF_INIT;
	struct hf_text t;
	int r, ret = 0;

	if (!c->out->peers || c->out->peers->n == 0) {
		report_set(rep, ST_FAILED, "no peers known (discovery did not run)");
		return -ENODATA;
	}
	hostfile_render(spec, c->out->peers, &t, &fallbacks);
	if (fallbacks.n) {
		report_detail(rep, "hostfile.address ipoib: %zu node(s) publish no IPoIB address "
			      "(first: %s); using their cluster address", fallbacks.n, fallbacks.v[0]);
		report_raise(rep, ST_DEGRADED);
	}
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
out:
	if (ret < 0)
		report_set(rep, ST_FAILED, "cannot write the hostfiles (see details)");
	else
		report_set(rep, ST_OK, "%zu node%s in %s: %s", c->out->peers->n, c->out->peers->n == 1 ? "" : "s",
			   dir, sb_str(&written));
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
};
