/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the nfs step's exports (modules/nfs/export.c): the exports
 * file on a temporary fake root, and the head probing its own exports
 * (through the fakes of testnfs.h).
 */
#include "testnfs.h"

static void test_exports(void)
{
	char root[] = "/tmp/test_nfs.XXXXXX";
	char path[512], *text;
	/* Through the loader: it fills clients from cluster.network and the default options. */
	struct spec *s = load("version: 1\ncluster: {name: glocluster, role: head, network: 10.0.0.0/24}\n"
			      "nfs:\n  exports:\n"
			      "    - {path: /shared, options: [rw, no_root_squash, no_subtree_check]}\n"
			      "    - {path: \"/apps sw\", clients: \"*\"}\n");
	struct report r;
	struct ctx c;
	struct stat st;

	TEST_CHECK(s != NULL);
	if (!s)
		return;
	TEST_CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/etc", root);
	mkdir(path, 0755);

	ctx_setup(&c, s, root, RUN_APPLY);
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	snprintf(path, sizeof(path), "%s/etc/exports.d/hpcinit.exports", root);
	text = slurp(path);
	TEST_STREQ(text, "# Written by hpcinit from nfs.exports of cluster glocluster; edit the spec, not this file.\n"
		   "/shared 10.0.0.0/24(rw,no_root_squash,no_subtree_check)\n"
		   "/apps\\040sw *(rw,sync,no_subtree_check)\n");
	free(text);
	/* "may mount" is said only after the head's self-probe, which a fake root does not run. */
	TEST_CHECK(strstr(sb_str(&r.details), "export: head0:/shared to clients in 10.0.0.0/24 "
			  "(rw,no_root_squash,no_subtree_check)") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "may mount") == NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "fake root: exportfs -ra not run") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "fake root: the export self-probe does not run") != NULL);
	TEST_STREQ(r.summary, "0 mounts; 2 exports");
	snprintf(path, sizeof(path), "%s/shared", root);
	TEST_INTEQ(stat(path, &st), 0);
	TEST_CHECK(S_ISDIR(st.st_mode));
	report_free(&r);

	/* idempotent */
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_OK);
	TEST_INTEQ(r.changed.n, 0);
	report_free(&r);

	/* an invalid clients value never reaches the step: the loader rejects it */
	{
		struct spec *bad = load("version: 1\ncluster: {name: glocluster, role: head}\n"
					"nfs: {exports: [{path: /shared, clients: \"10.0.0.0/24(rw)\"}]}\n");

		TEST_CHECK(bad == NULL);
		spec_free(bad);
	}

	/* compute role: exports ignored and our file removed */
	s->cluster.role = ROLE_COMPUTE;
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_CHECK(strstr(sb_str(&r.details), "cluster.role is compute, ignoring") != NULL);
	snprintf(path, sizeof(path), "%s/etc/exports.d/hpcinit.exports", root);
	TEST_CHECK(access(path, F_OK) < 0);
	report_free(&r);

	rm_rf(root);
	spec_free(s);
}


/*
 * The head probes its own exports before it tells clients they may mount:
 * a server that answers gives "clients in ... may mount"; one that refuses
 * (or is not running) fails the step, naming the call and its answer.
 * (On the real root, after exportfs; tests/vmcheck/nfs-self-probe.sh runs it
 * against a real kernel NFS server.)
 */
static void test_self_probe(void)
{
	struct spec *s = spec_new("c1");
	struct report r;
	struct ctx c;
	enum rstatus st = ST_OK;

	s->cluster.role = ROLE_HEAD;
	s->nfs.n_exports = 1;
	s->nfs.exports = xcalloc(1, sizeof(*s->nfs.exports));
	s->nfs.exports[0].path = xstrdup("/shared");
	s->nfs.exports[0].clients = xstrdup("198.18.0.0/24");
	ctx_setup(&c, s, "", RUN_APPLY);
	setenv("HPCINIT_ADDRESS", "198.18.0.7", 1);

	fakes_reset();
	report_init(&r);
	export_self_probe(&c, &r, &st);
	TEST_INTEQ(st, ST_OK);
	TEST_INTEQ(r.n_findings, 1);
	TEST_STREQ(r.findings[0].tag, "nfs.exports.self-probe");
	TEST_CHECK(strstr(r.findings[0].text, "export /shared answers at 198.18.0.7") != NULL);
	TEST_CHECK(strstr(r.findings[0].text, "clients in 198.18.0.0/24 may mount 198.18.0.7:/shared") != NULL);
	TEST_INTEQ(fake_tcp_last_port, PORTMAP_PORT);
	TEST_INTEQ(fake_rpc_calls, 1);
	report_free(&r);

	/* The server refuses the head itself: failed, with the MOUNT answer. */
	fakes_reset();
	fake_rpc_err = NE_DENIED;
	s->nfs.exports[0].clients[0] = '1';
	c.deadline_ms = now_ms() + 1500;        /* the probe retries until its wait or the deadline */
	report_init(&r);
	export_self_probe(&c, &r, &st);
	TEST_INTEQ(st, ST_FAILED);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_CHECK(strstr(r.findings[0].text, "the NFS server does not serve 198.18.0.7:/shared: MOUNT /shared: "
			  "MNT3ERR_ACCES(13)") != NULL);
	report_free(&r);

	/* Nothing listens: the connect is named. */
	fakes_reset();
	fake_tcp_fail_left = -1;
	st = ST_OK;
	c.deadline_ms = now_ms() + 1500;
	report_init(&r);
	export_self_probe(&c, &r, &st);
	TEST_INTEQ(st, ST_FAILED);
	TEST_CHECK(strstr(r.findings[0].text, "port 111 (portmapper): Connection refused") != NULL);
	report_free(&r);

	/* v3 switched off on the server (vers3=n: clients mount 4.1): v4 answers, ok. */
	fakes_reset();
	fake_rpc_v3_off = true;
	st = ST_OK;
	c.deadline_ms = now_ms() + 5000;
	report_init(&r);
	export_self_probe(&c, &r, &st);
	TEST_INTEQ(st, ST_OK);
	TEST_CHECK(strstr(r.findings[0].text, "export /shared answers at 198.18.0.7 (this node probed itself as a "
			  "client over NFSv4, v3 gave no answer: LOOKUP /shared)") != NULL);
	TEST_INTEQ(fake_tcp_last_port, NFS_PORT);
	TEST_INTEQ(fake_rpc_calls, 2);
	report_free(&r);
	unsetenv("HPCINIT_ADDRESS");
	spec_del(s);
}

/* An export directory that cannot be made, an exports file that cannot be written: by their tags. */
static void test_export_tags(void)
{
	char root[] = "/tmp/test_nfs_export.XXXXXX";
	char path[512];
	struct spec *s = load("version: 1\ncluster: {name: glocluster, role: head, network: 10.0.0.0/24}\n"
			      "nfs:\n  exports:\n    - {path: /afile/shared}\n");
	struct report r;
	struct ctx c;
	bool found;

	TEST_CHECK(s != NULL);
	if (!s)
		return;
	TEST_CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/etc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/afile", root);
	spit(path, "a file where the export's parent would be\n");
	ctx_setup(&c, s, root, RUN_APPLY);
	report_init(&r);
	nfs_apply(&c, &r);
	TEST_INTEQ(r.status, ST_FAILED);
	found = false;
	for (size_t i = 0; i < r.n_findings; i++)
		found |= strcmp(r.findings[i].tag, "nfs.exports.mkdir") == 0;
	TEST_CHECK(found);
	report_free(&r);

	/* /etc/exports.d is a file: the exports file cannot be written there */
	spec_free(s);
	s = load("version: 1\ncluster: {name: glocluster, role: head, network: 10.0.0.0/24}\n"
		 "nfs:\n  exports:\n    - {path: /shared}\n");
	snprintf(path, sizeof(path), "%s/etc/exports.d", root);
	spit(path, "not a directory\n");
	ctx_setup(&c, s, root, RUN_APPLY);
	report_init(&r);
	nfs_apply(&c, &r);
	TEST_INTEQ(r.status, ST_FAILED);
	found = false;
	for (size_t i = 0; i < r.n_findings; i++)
		found |= strcmp(r.findings[i].tag, "nfs.exports.write") == 0;
	TEST_CHECK(found);
	if (!found)
		for (size_t i = 0; i < r.n_findings; i++)
			fprintf(stderr, "  %s: %s\n", r.findings[i].tag, r.findings[i].text);
	report_free(&r);
	rm_rf(root);
	spec_free(s);
}

int main(void)
{
	nfs_io = &fake_ops;
	test_exports();
	test_self_probe();
	test_export_tags();
	TEST_EXIT();
}
