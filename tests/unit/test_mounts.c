/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of common/base/mounts.c: mountinfo parsing, the spec mount's
 * source and presence, paths under a mount, and mounts_absent /
 * mounts_require on a temporary fake root whose proc/self/mountinfo says
 * what is mounted.
 */
#include "../../common/base/mounts.c"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "test.h"
#include "testfs.h"

static const char mountinfo_text[] =
	"22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw\n"
	"25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	"60 25 0:50 / /scratch rw,relatime shared:30 master:2 - nfs 10.0.0.7:/shared "
	"rw,vers=3,hard,nolock,proto=tcp,addr=10.0.0.7\n"
	"61 25 0:51 / /mnt/my\\040data ro,relatime - nfs4 acct.blob.core.windows.net:/acct/c "
	"ro,vers=4.1,hard,proto=tcp,sec=sys\n"
	"garbage line without separator\n"
	"62 25 0:52 / /scratch rw,relatime - tmpfs tmpfs rw\n"
	"63 25 0:53 / /v6 rw - nfs [fd00::7]:/export rw\n";

static void test_parse(void)
{
	struct mountinfo mi;
	const struct mi_entry *e;

	mountinfo_parse(mountinfo_text, &mi);
	TEST_INTEQ(mi.n, 6);
	e = mountinfo_find(&mi, "/scratch");
	TEST_CHECK(e != NULL);
	if (e)                                  /* the top of the stack wins */
		TEST_STREQ(e->fstype, "tmpfs");
	e = mountinfo_find(&mi, "/mnt/my data");
	TEST_CHECK(e != NULL);
	if (e) {
		TEST_STREQ(e->fstype, "nfs4");
		TEST_STREQ(e->source, "acct.blob.core.windows.net:/acct/c");
		TEST_STREQ(e->mntopts, "ro,relatime");
		TEST_STREQ(e->superopts, "ro,vers=4.1,hard,proto=tcp,sec=sys");
	}
	TEST_CHECK(mountinfo_find(&mi, "/nowhere") == NULL);
	TEST_STREQ(mi.v[2].source, "10.0.0.7:/shared");
	mountinfo_free(&mi);
	mountinfo_parse("", &mi);
	TEST_INTEQ(mi.n, 0);
	mountinfo_free(&mi);
}

/* m as the loader makes it (the strings are the caller's, never freed here). */
static void mnt(struct spec_nfs_mount *m, const char *host, const char *export, const char *path)
{
	memset(m, 0, sizeof(*m));
	m->host = (char *)(uintptr_t)host;
	m->export = (char *)(uintptr_t)export;
	m->path = (char *)(uintptr_t)path;
}

static void test_rules(void)
{
	struct spec_nfs_mount m;
	struct mountinfo mi;
	char *src;

	TEST_CHECK(mounts_source_eq("10.0.0.7:/shared/", "10.0.0.7:/shared"));
	TEST_CHECK(mounts_source_eq("h:/", "h:/"));
	TEST_CHECK(!mounts_source_eq("h:/a", "h:/ab"));
	TEST_CHECK(mounts_nfs_type("nfs") && mounts_nfs_type("nfs4"));
	TEST_CHECK(!mounts_nfs_type("tmpfs") && !mounts_nfs_type("nfsd"));

	TEST_CHECK(mounts_path_under("/shared", "/shared"));
	TEST_CHECK(mounts_path_under("/shared/hpc/x", "/shared"));
	TEST_CHECK(mounts_path_under("/shared/hpc", "/shared/"));
	TEST_CHECK(!mounts_path_under("/sharedx/hpc", "/shared"));
	TEST_CHECK(!mounts_path_under("/etc/hpcinit", "/shared"));
	TEST_CHECK(mounts_path_under("/etc", "/"));

	mnt(&m, "10.0.0.7", "/shared", "/scratch");
	src = mounts_source(&m);
	TEST_STREQ(src, "10.0.0.7:/shared");
	free(src);
	mnt(&m, "fd00::7", "/export", "/v6");
	src = mounts_source(&m);
	TEST_STREQ(src, "[fd00::7]:/export");
	free(src);

	mountinfo_parse(mountinfo_text, &mi);
	TEST_CHECK(mountinfo_spec_mount(&mi, &m) == &mi.v[5]);
	/* another filesystem on top of the spec's NFS mount: not the spec's mount */
	mnt(&m, "10.0.0.7", "/shared/", "/scratch");
	TEST_CHECK(mountinfo_spec_mount(&mi, &m) == NULL);
	/* NFS, but another export */
	mnt(&m, "acct.blob.core.windows.net", "/acct/other", "/mnt/my data");
	TEST_CHECK(mountinfo_spec_mount(&mi, &m) == NULL);
	mnt(&m, "acct.blob.core.windows.net", "/acct/c", "/mnt/my data");
	TEST_CHECK(mountinfo_spec_mount(&mi, &m) != NULL);
	mountinfo_free(&mi);
}

static struct spec *spec_text(const char *role, const char *extra)
{
	char *text = xasprintf("version: 1\ncluster: {name: c1, role: %s, network: 10.0.0.0/24}\n%s",
			       role, extra);
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;

	TEST_INTEQ(spec_load_buffer("t.yaml", text, strlen(text), &s, &d), 0);
	if (d.n)
		diags_print(&d, stderr);
	diags_free(&d);
	free(text);
	return s;
}

/* The number of findings with tag, and the text of the last. */
static size_t findings(const struct report *r, const char *tag, const char **text)
{
	size_t n = 0;

	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0) {
			n++;
			*text = r->findings[i].text;
		}
	return n;
}

static void test_absent(void)
{
	char root[] = "/tmp/hpcinit-test-mounts.XXXXXX";
	struct spec *s = spec_text("head", "nfs:\n  mounts:\n"
				   "    - {source: \"nfs01:/export\", path: /shared}\n"
				   "    - {source: \"nfs02:/apps\", path: /shared/apps}\n"
				   "  exports:\n    - {path: /data}\n");
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY, .module = "discovery" };
	const char *text = NULL;
	struct report r;

	TEST_CHECK(mkdtemp(root) != NULL);
	if (!s)
		return;
	/* nothing mounted (a fixture with the root file system alone) */
	test_put(root, "/proc/self/mountinfo", "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
	TEST_CHECK(mounts_absent(&c, "/shared/hpc") == &s->nfs.mounts[0]);
	TEST_CHECK(mounts_absent(&c, "/shared") == &s->nfs.mounts[0]);
	/* the outer mount is named first: the inner one would be on the local disk too */
	TEST_CHECK(mounts_absent(&c, "/shared/apps/bin") == &s->nfs.mounts[0]);
	TEST_CHECK(mounts_absent(&c, "/sharedx") == NULL);
	TEST_CHECK(mounts_absent(&c, "/etc/hpcinit") == NULL);
	/* an exported directory is local to this node: not a mount */
	TEST_CHECK(mounts_absent(&c, "/data/hpc") == NULL);

	report_init(&r);
	TEST_INTEQ(mounts_require(&c, &r, "discovery.dir", "/shared/hpc"), -ENOMEDIUM);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_INTEQ(findings(&r, "discovery.mount.absent", &text), 1);
	TEST_STREQ(text, "discovery.dir /shared/hpc is on the NFS mount /shared (nfs01:/export), "
		   "which is not mounted; nothing is written there");
	TEST_INTEQ(mounts_require(&c, &r, "hostfile.dir", "/etc/hpcinit"), 0);
	TEST_INTEQ(r.n_findings, 1);
	report_free(&r);

	/* the outer one mounted, the inner one not */
	test_put(root, "/proc/self/mountinfo", "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "60 25 0:50 / /shared rw - nfs nfs01:/export rw,vers=3\n");
	TEST_CHECK(mounts_absent(&c, "/shared/hpc") == NULL);
	TEST_CHECK(mounts_absent(&c, "/shared/apps/bin") == &s->nfs.mounts[1]);
	/* a local file system mounted there instead is not the spec's mount */
	test_put(root, "/proc/self/mountinfo", "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "60 25 0:50 / /shared rw - tmpfs tmpfs rw\n");
	TEST_CHECK(mounts_absent(&c, "/shared/hpc") == &s->nfs.mounts[0]);
	/* both mounted */
	test_put(root, "/proc/self/mountinfo", "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "60 25 0:50 / /shared rw - nfs nfs01:/export rw,vers=3\n"
		 "61 60 0:51 / /shared/apps rw - nfs4 nfs02:/apps rw,vers=4.1\n");
	TEST_CHECK(mounts_absent(&c, "/shared/apps/bin") == NULL);
	report_init(&r);
	c.module = "hostfile";
	TEST_INTEQ(mounts_require(&c, &r, "hostfile.dir", "/shared/apps/hostfiles"), 0);
	TEST_INTEQ(r.n_findings, 0);
	TEST_INTEQ(r.status, ST_OK);
	report_free(&r);

	test_rm_rf(root);
	spec_free(s);
}

/* A spec without nfs, or with exports alone (a head): nothing is a spec mount. */
static void test_no_mounts(void)
{
	struct spec *s = spec_text("head", "nfs:\n  exports:\n    - {path: /shared}\n");
	struct ctx c = { .root = "/nonexistent-root", .mode = RUN_CHECK };

	if (!s)
		return;
	c.spec = s;
	TEST_CHECK(mounts_absent(&c, "/shared/hpc") == NULL);
	TEST_CHECK(mounts_absent(&c, NULL) == NULL);
	spec_free(s);
	s = spec_text("compute", "");
	c.spec = s;
	TEST_CHECK(mounts_absent(&c, "/shared/hpc") == NULL);
	spec_free(s);
}

int main(void)
{
	test_parse();
	test_rules();
	test_absent();
	test_no_mounts();
	TEST_EXIT();
}
