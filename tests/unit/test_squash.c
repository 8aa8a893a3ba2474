/* SPDX-License-Identifier: MIT */
/*
 * lib/nfs/squash.c: what this node's own exports do to root, read from
 * specs the real loader loads, as exportfs reads the options.
 */
#include "config.h"

#include <string.h>

#include "../../lib/nfs/squash.c"
#include "diag.h"
#include "spec.h"
#include "strbuf.h"
#include "test.h"

/* Load a spec from text through the real loader; NULL (and the errors printed) when it fails. */
static struct spec *load(const char *yaml)
{
	struct diags d = { 0 };
	struct spec *s = NULL;
	int r = spec_load_buffer("test.yaml", yaml, strlen(yaml), &s, &d);

	if (r < 0)
		diags_print(&d, stdout);
	diags_free(&d);
	return r < 0 ? NULL : s;
}

/* Which exports squash root, read as exportfs reads the options (lib/nfs/squash.h). */
static void test_export_squash(void)
{
	static const struct {
		const char *opts;       /* the options list of the export /shared */
		const char *path;
		bool squash, all;
		unsigned uid, gid;
	} cases[] = {
		{ "[rw, sync, no_subtree_check]", "/shared/.hpcinit", true, false, 65534, 65534 },  /* NFS default */
		{ "[rw, sync, no_root_squash, no_subtree_check]", "/shared/.hpcinit", false, false, 0, 0 },
		{ "[rw, root_squash]", "/shared/.hpcinit", true, false, 65534, 65534 },
		{ "[rw, root_squash, no_root_squash]", "/shared/x", false, false, 0, 0 },   /* last wins */
		{ "[rw, no_root_squash, all_squash]", "/shared/x", true, true, 65534, 65534 },
		{ "[rw, all_squash, no_all_squash, no_root_squash]", "/shared/x", false, false, 0, 0 },
		{ "[rw, root_squash, anonuid=1000, anongid=1001]", "/shared/x", true, false, 1000, 1001 },
		{ "[rw, anonuid=nobody]", "/shared/x", true, false, 65534, 65534 },        /* not a number */
		{ "[rw]", "/shared", true, false, 65534, 65534 },
		{ "[rw]", "/sharedx/.hpcinit", false, false, 0, 0 },                      /* not inside */
		{ "[rw]", "/data/.hpcinit", false, false, 0, 0 },
		{ "[rw]", "/shared/../etc/.hpcinit", false, false, 0, 0 },              /* not by its text */
		{ "[rw]", "/shared/./x", false, false, 0, 0 },
		{ "[rw]", "/shared/.hpcinit/", true, false, 65534, 65534 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *y = xasprintf("version: 1\ncluster: {name: glo, role: head, network: 10.0.0.0/24}\n"
				    "nfs:\n  exports:\n    - {path: /shared/, options: %s}\n", cases[i].opts);
		struct spec *s = load(y);
		struct nfs_squash sq = { 0 };

		TEST_CHECK(s != NULL);
		if (s) {
			bool got = nfs_export_squash(s, cases[i].path, &sq);

			if (got != cases[i].squash)
				fprintf(stderr, "case %zu: %s %s\n", i, cases[i].opts, cases[i].path);
			TEST_INTEQ(got, cases[i].squash);
			if (got && cases[i].squash) {
				TEST_INTEQ(sq.at_export, strcmp(cases[i].path, "/shared") == 0);
				TEST_INTEQ(sq.all, cases[i].all);
				TEST_INTEQ(sq.anonuid, cases[i].uid);
				TEST_INTEQ(sq.anongid, cases[i].gid);
			}
		}
		spec_free(s);
		free(y);
	}
	/* the innermost export decides; a compute never; the spec's own mount makes the head a client */
	{
		struct spec *s = load("version: 1\ncluster: {name: glo, role: head, network: 10.0.0.0/24}\n"
				      "nfs:\n  exports:\n"
				      "    - {path: /shared, options: [rw, no_root_squash]}\n"
				      "    - {path: /shared/rdv, options: [rw, anonuid=7]}\n"
				      "  mounts:\n"
				      "    - {source: \"10.0.0.9:/home\", path: /shared/home}\n");
		struct nfs_squash sq = { 0 };

		TEST_CHECK(s != NULL);
		if (s) {
			TEST_CHECK(nfs_export_squash(s, "/shared/rdv/.hpcinit", &sq));
			TEST_STREQ(sq.export, "/shared/rdv");
			TEST_INTEQ(sq.anonuid, 7);
			TEST_CHECK(!nfs_export_squash(s, "/shared/.hpcinit", &sq));
			/* exported, not squashed: the uid squashing would use, for the way back */
			memset(&sq, 0, sizeof(sq));
			TEST_CHECK(nfs_export_lookup(s, "/shared/.hpcinit", &sq));
			TEST_CHECK(!sq.squashed);
			TEST_STREQ(sq.export, "/shared");
			TEST_INTEQ(sq.anonuid, 65534);
			TEST_CHECK(nfs_export_lookup(s, "/shared/rdv/x", &sq) && sq.squashed);
			TEST_CHECK(!nfs_export_lookup(s, "/shared/home/.hpcinit", &sq));
			TEST_CHECK(!nfs_export_lookup(s, "/elsewhere", &sq));
			TEST_CHECK(!nfs_export_squash(s, "/shared/home/.hpcinit", &sq));
			s->cluster.role = ROLE_COMPUTE;
			TEST_CHECK(!nfs_export_squash(s, "/shared/rdv/.hpcinit", &sq));
		}
		spec_free(s);
	}
}

int main(void)
{
	test_export_squash();
	TEST_EXIT();
}
