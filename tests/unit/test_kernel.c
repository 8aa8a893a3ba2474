/* SPDX-License-Identifier: MIT */
/* kernel: os-release, version order, dpkg status, hold files for each family, module lookup. */
#include "config.h"

#include <sys/stat.h>

/* The whole step, to reach its statics: the module, os and kmod, each package manager. */
#include "../../modules/kernel/kernel.c"
#include "../../modules/kernel/kmod.c"
#include "../../modules/kernel/os.c"
#include "../../modules/kernel/pm_apt.c"
#include "../../modules/kernel/pm_dnf.c"
#include "../../modules/kernel/pm_tdnf.c"
#include "../../modules/kernel/pm_zypper.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-kernel.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

static void test_os_release(void)
{
	struct os_info os;

	os_info_parse("NAME=\"Ubuntu\"\nID=ubuntu\nID_LIKE=debian\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n", &os);
	TEST_INTEQ(os.family, DISTRO_DEBIAN);
	TEST_STREQ(os.pretty, "Ubuntu 22.04.4 LTS");
	os_info_parse("ID=\"almalinux\"\nID_LIKE=\"rhel centos fedora\"\n", &os);
	TEST_INTEQ(os.family, DISTRO_RHEL);
	os_info_parse("ID=\"rocky\"\n", &os);
	TEST_INTEQ(os.family, DISTRO_RHEL);
	os_info_parse("ID=\"sles\"\nID_LIKE=\"suse\"\n", &os);
	TEST_INTEQ(os.family, DISTRO_SUSE);
	os_info_parse("ID=\"opensuse-leap\"\n", &os);
	TEST_INTEQ(os.family, DISTRO_SUSE);
	os_info_parse("ID=mariner\n", &os);
	TEST_INTEQ(os.family, DISTRO_AZL);
	os_info_parse("ID=azurelinux\n", &os);
	TEST_INTEQ(os.family, DISTRO_AZL);
	/* A derivative known only by ID_LIKE. */
	os_info_parse("ID=mint\nID_LIKE=\"ubuntu debian\"\n", &os);
	TEST_INTEQ(os.family, DISTRO_DEBIAN);
	os_info_parse("ID=arch\n", &os);
	TEST_INTEQ(os.family, DISTRO_UNKNOWN);
	TEST_STREQ(os.id, "arch");
	/* A key that only starts like ID must not match. */
	os_info_parse("IDX=ubuntu\n", &os);
	TEST_INTEQ(os.family, DISTRO_UNKNOWN);
}

static void test_versions(void)
{
	TEST_CHECK(kver_cmp("5.15.0-1061-azure", "5.15.0-1057-azure") > 0);
	TEST_CHECK(kver_cmp("5.15.0-1057-azure", "5.15.0-1061-azure") < 0);
	TEST_INTEQ(kver_cmp("5.15.0-1057-azure", "5.15.0-1057-azure"), 0);
	TEST_CHECK(kver_cmp("6.1.0-18-cloud-amd64", "6.1.0-9-cloud-amd64") > 0);
	TEST_CHECK(kver_cmp("4.18.0-553.el8_10.x86_64", "4.18.0-513.24.1.el8_9.x86_64") > 0);
	TEST_CHECK(kver_cmp("5.14.21-150500.55.39-azure", "5.14.21-150500.55.36-azure") > 0);
	TEST_CHECK(kver_cmp("6.6.57.1-6.azl3", "6.6.47.1-1.azl3") > 0);
	TEST_CHECK(kver_cmp("6.1.0~rc1", "6.1.0") < 0);
	TEST_CHECK(kver_cmp("5.15.0-10", "5.15.0-010") == 0);

	TEST_CHECK(valid_release("5.15.0-1057-azure"));
	TEST_CHECK(valid_release("4.18.0-553.el8_10.x86_64"));
	TEST_CHECK(!valid_release(""));
	TEST_CHECK(!valid_release("../../etc"));
	TEST_CHECK(!valid_release("5.15 0"));
	TEST_CHECK(!valid_release(".hidden"));
}

static const char dpkg_status[] =
	"Package: linux-image-5.15.0-1057-azure\n"
	"Status: install ok installed\n"
	"Version: 5.15.0-1057.65\n"
	"Depends: linux-modules-5.15.0-1057-azure\n"
	"Description: Signed kernel image azure\n"
	" A kernel image for azure.\n"
	"\n"
	"Package: linux-modules-5.15.0-1057-azure\n"
	"Status: hold ok installed\n"
	"\n"
	"Package: linux-image-azure\n"
	"Status: install ok installed\n"
	"Depends: linux-image-5.15.0-1057-azure, linux-modules-extra-5.15.0-1057-azure\n"
	"\n"
	"Package: linux-azure\n"
	"Status: install ok installed\n"
	"Pre-Depends: dpkg\n"
	"Depends: linux-headers-azure (= 5.15.0.1057.55),\n"
	" linux-image-azure (= 5.15.0.1057.55)\n"
	"\n"
	"Package: linux-image-5.15.0-1040-azure\n"
	"Status: deinstall ok config-files\n"
	"\n"
	"Package: linux-image-5.15.0-1061-azure\n"
	"Status: install ok installed\n"
	"\n"
	"Package: linux-headers-azure\n"
	"Status: install ok installed\n"
	"Depends: linux-headers-5.15.0-1057-azure\n"
	"\n"
	"Package: bash\n"
	"Status: install ok installed\n";

static void test_dpkg(void)
{
	struct dpkg_db db;
	struct strlist held = { 0 };

	dpkg_db_parse(dpkg_status, &db);
	TEST_INTEQ(db.n, 8);
	TEST_STREQ(db.v[1].want, "hold");
	TEST_CHECK(db.v[0].installed);
	TEST_CHECK(!db.v[4].installed);
	TEST_CHECK(depends_on_image(db.v[2].depends));
	TEST_CHECK(!depends_on_image(db.v[6].depends));
	dpkg_hold_set(&db, "5.15.0-1057-azure", &held);
	TEST_INTEQ(held.n, 4);
	TEST_CHECK(strlist_has(&held, "linux-image-5.15.0-1057-azure"));
	TEST_CHECK(strlist_has(&held, "linux-modules-5.15.0-1057-azure"));
	TEST_CHECK(strlist_has(&held, "linux-image-azure"));
	/* linux-azure names linux-image-azure on a folded Depends: line. */
	TEST_CHECK(strlist_has(&held, "linux-azure"));
	TEST_CHECK(!strlist_has(&held, "linux-headers-azure"));
	TEST_CHECK(!strlist_has(&held, "linux-image-5.15.0-1061-azure"));
	TEST_CHECK(!strlist_has(&held, "bash"));
	strlist_free(&held);
	dpkg_db_free(&db);

	/* The apt blacklist anchors metapackage names and escapes regex characters. */
	struct strlist h = { 0 };
	char *t;

	strlist_push(&h, "linux-image-azure");
	strlist_push(&h, "linux-azure");
	strlist_push(&h, "linux-image-6.1.0+1-amd64");
	t = render_apt_blacklist("c1", "5.15.0-1057-azure", &h);
	TEST_CHECK(strstr(t, "Unattended-Upgrade::Package-Blacklist {\n") != NULL);
	TEST_CHECK(strstr(t, "\t\"linux-azure$\";\n") != NULL);
	TEST_CHECK(strstr(t, "\t\"linux-image-\";\n") != NULL);
	TEST_CHECK(strstr(t, "linux-image-azure$") == NULL);   /* covered by the prefix */
	free(t);
	t = regex_escape("libstdc++6.x");
	TEST_STREQ(t, "libstdc\\+\\+6\\.x");
	free(t);
	strlist_free(&h);
}

static void test_dnf(void)
{
	struct ini_main im;
	char *t;

	TEST_CHECK(exclude_covers_kernel("kernel*"));
	TEST_CHECK(exclude_covers_kernel("shim* kernel* grub2*"));
	TEST_CHECK(exclude_covers_kernel("foo,kernel*"));
	TEST_CHECK(!exclude_covers_kernel("kernel"));
	TEST_CHECK(!exclude_covers_kernel("kernel-core*"));
	TEST_CHECK(!exclude_covers_kernel("nvidia*"));
	TEST_CHECK(words_kept("a b,c", "c kernel* b a"));
	TEST_CHECK(!words_kept("a b", "a kernel*"));

	/* The block goes at the end of [main], before the next section. */
	t = dnf_conf_apply("[main]\ngpgcheck=1\n\n[local]\nname=local\nbaseurl=file:///r\n", "c1", "exclude");
	TEST_STREQ(t, "[main]\ngpgcheck=1\n\n# BEGIN hpcinit c1\nexclude=kernel*\n# END hpcinit c1\n"
		      "[local]\nname=local\nbaseurl=file:///r\n");
	free(t);
	/* No [main]: the block brings one. */
	t = dnf_conf_apply("", "c1", "exclude");
	TEST_STREQ(t, "# BEGIN hpcinit c1\n[main]\nexclude=kernel*\n# END hpcinit c1\n");
	/* Our own block is found again and left as it is, wherever it is. */
	ini_scan_main(t, "c1", false, &im);
	TEST_CHECK(!im.has_main);   /* the [main] inside our block is ours */
	TEST_CHECK(im.excludes == NULL && !im.used[EX_EXCLUDE]);
	ini_scan_main(t, "c1", true, &im);
	TEST_STREQ(im.excludes, "kernel*");
	free(im.excludes);
	{
		char *again = dnf_conf_apply(t, "c1", "exclude");

		TEST_STREQ(again, t);
		free(again);
	}
	free(t);
	/* A foreign exclude= in [main] is seen; one in another section is not. */
	ini_scan_main("[main]\nexclude = nvidia*\n[x]\nexclude=kernel*\n", "c1", false, &im);
	TEST_STREQ(im.excludes, "nvidia*");
	TEST_CHECK(im.used[EX_EXCLUDE] && !im.used[EX_EXCLUDEPKGS]);
	free(im.excludes);
	ini_scan_main("[main]\nbest=True\n[x]\nexclude=kernel*\n", "c1", false, &im);
	TEST_CHECK(im.excludes == NULL);
	ini_scan_main("[main]\nexcludepkgs=kernel*\n", "c1", false, &im);
	TEST_STREQ(im.excludes, "kernel*");
	TEST_CHECK(im.used[EX_EXCLUDEPKGS] && !im.used[EX_EXCLUDE]);
	free(im.excludes);
	/* dnf's reading (tests/system/kernel-hold-dnf.sh shows it with the real dnf): a key's
	 * last value wins, case-insensitively; the two keys add up in order of first use; an
	 * empty value clears; an indented line continues a value. */
	ini_scan_main("[main]\nexclude=a\nEXCLUDE=b\n", "c1", false, &im);
	TEST_STREQ(im.excludes, "b");
	free(im.excludes);
	ini_scan_main("[main]\nexclude=a\nexcludepkgs=k*\nexclude=\n", "c1", false, &im);
	TEST_STREQ(im.excludes, "k*");
	free(im.excludes);
	ini_scan_main("[main]\nexcludepkgs=k*\nexclude=\n", "c1", false, &im);
	TEST_STREQ(im.excludes, "");
	free(im.excludes);
	ini_scan_main("[main]\nexclude=a b\n  c\nbest=1\n  d\n", "c1", false, &im);
	TEST_STREQ(im.excludes, "a b c");
	free(im.excludes);
	/* The image's exclude= stays; ours takes the other key, and both count. */
	{
		const char *img = "[main]\nexclude=nvidia-fabricmanager gdrcopy\n[r]\nname=r\n";
		struct report rep, *r = &rep;

		report_init(r);

		ini_scan_main(img, "c1", false, &im);
		TEST_STREQ(dnf_free_key(&im, false), "excludepkgs");
		TEST_CHECK(dnf_free_key(&im, true) == NULL);   /* yum: one key only */
		t = dnf_hold_text(r, "/etc/dnf/dnf.conf", img, "c1", &im);
		TEST_STREQ(t, "[main]\nexclude=nvidia-fabricmanager gdrcopy\n# BEGIN hpcinit c1\n"
			      "excludepkgs=kernel*\n# END hpcinit c1\n[r]\nname=r\n");
		free(im.excludes);
		ini_scan_main(t, "c1", true, &im);
		TEST_STREQ(im.excludes, "nvidia-fabricmanager gdrcopy kernel*");
		free(im.excludes);
		free(t);
		/* Both keys taken: nothing written, and the finding says what to do. */
		img = "[main]\nexclude=a\nexcludepkgs=b\n";
		ini_scan_main(img, "c1", false, &im);
		TEST_CHECK(dnf_hold_text(r, "/etc/dnf/dnf.conf", img, "c1", &im) == NULL);
		free(im.excludes);
		/* An empty exclude= in a second [main] (read after ours) would clear ours: refused. */
		img = "[main]\nbest=1\n[r]\nname=r\n[main]\nexclude=\n";
		ini_scan_main(img, "c1", false, &im);
		TEST_CHECK(dnf_hold_text(r, "/etc/dnf/dnf.conf", img, "c1", &im) == NULL);
		free(im.excludes);
		TEST_CHECK(r->status == ST_FAILED);
		report_free(r);
	}
}

static void test_zypp(void)
{
	char pkg[64];

	suse_kernel_pkg("5.14.21-150500.55.39-azure", pkg, sizeof(pkg));
	TEST_STREQ(pkg, "kernel-azure");
	suse_kernel_pkg("5.14.21-150500.55.39-default", pkg, sizeof(pkg));
	TEST_STREQ(pkg, "kernel-default");
	suse_kernel_pkg("6.4.0-150600.21", pkg, sizeof(pkg));
	TEST_STREQ(pkg, "kernel-default");

	TEST_CHECK(zypp_locked("type: package\nmatch_type: exact\nsolvable_name: kernel-azure\n", "kernel-azure"));
	TEST_CHECK(zypp_locked("\ntype: package\nmatch_type: glob\ncase_sensitive: on\nsolvable_name: kernel*\n\n",
			       "kernel-azure"));
	TEST_CHECK(!zypp_locked("type: package\nmatch_type: exact\nsolvable_name: kernel*\n", "kernel-azure"));
	TEST_CHECK(!zypp_locked("type: pattern\nsolvable_name: kernel-azure\n", "kernel-azure"));
	TEST_CHECK(!zypp_locked("type: package\nsolvable_name: nvidia-driver\n\n", "kernel-azure"));
	/* Comments do not end an entry; a blank line does. */
	TEST_CHECK(zypp_locked("type: package\n# note\nmatch_type: exact\nsolvable_name: kernel-azure\n",
			       "kernel-azure"));
	TEST_CHECK(!zypp_locked("solvable_name: kernel-azure\ntype: pattern\n\ntype: package\n", "kernel-azure"));
	/* The block hpcinit writes is read back as a lock, after a foreign entry without a blank line. */
	{
		char *t = managed_block_apply("type: package\nsolvable_name: foo", "c1",
					      "\ntype: package\nmatch_type: exact\ncase_sensitive: on\n"
					      "solvable_name: kernel-azure\n\n");

		TEST_CHECK(zypp_locked(t, "kernel-azure"));
		TEST_CHECK(zypp_locked(t, "foo"));
		free(t);
	}
}

static void test_modules(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	struct strlist names = { 0 }, kernels = { 0 };
	struct kmod *m;
	char norm[64];

	TEST_CHECK(ko_name("mlx5_ib.ko", norm, sizeof(norm)));
	TEST_STREQ(norm, "mlx5_ib");
	TEST_CHECK(ko_name("rdma-ucm.ko.zst", norm, sizeof(norm)));
	TEST_STREQ(norm, "rdma_ucm");
	TEST_CHECK(!ko_name("modules.dep", norm, sizeof(norm)));

	put("/lib/modules/5.15.0-1057-azure/kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko.zst", "");
	put("/lib/modules/5.15.0-1057-azure/updates/dkms/ib_uverbs.ko", "");
	put("/lib/modules/5.15.0-1057-azure/modules.builtin", "kernel/drivers/infiniband/core/ib_core.ko\n");
	put("/var/lib/dkms/mlnx-ofed-kernel/24.01/5.15.0-1057-azure/x86_64/module/rdma_ucm.ko", "");
	put("/boot/vmlinuz-5.15.0-1057-azure", "");
	put("/boot/vmlinuz-0-rescue-abcdef", "");
	put("/lib/modules/4.18.0-553.el8_10.x86_64/vmlinuz", "");
	strlist_push(&names, "mlx5_ib");
	strlist_push(&names, "ib-uverbs");
	strlist_push(&names, "ib_core");
	strlist_push(&names, "rdma_ucm");
	strlist_push(&names, "mlx4_ib");
	m = kmods_new(&names);
	kmods_find(&c, "5.15.0-1057-azure", m, names.n);
	TEST_STREQ(m[0].path, "/lib/modules/5.15.0-1057-azure/kernel/drivers/infiniband/hw/mlx5/mlx5_ib.ko.zst");
	TEST_STREQ(m[1].path, "/lib/modules/5.15.0-1057-azure/updates/dkms/ib_uverbs.ko");
	TEST_CHECK(m[2].builtin);
	TEST_CHECK(m[3].path == NULL);
	TEST_STREQ(m[3].dkms, "/var/lib/dkms/mlnx-ofed-kernel/24.01/5.15.0-1057-azure/x86_64/module/rdma_ucm.ko");
	TEST_CHECK(m[4].path == NULL && m[4].dkms == NULL);
	kmods_free(m, names.n);

	installed_kernels(&c, &kernels);
	TEST_INTEQ(kernels.n, 2);
	TEST_CHECK(strlist_has(&kernels, "5.15.0-1057-azure"));
	TEST_CHECK(strlist_has(&kernels, "4.18.0-553.el8_10.x86_64"));
	strlist_free(&kernels);
	{
		struct dpkg_db db;

		dpkg_db_parse("Package: linux-image-6.1.0-18-amd64-dbg\nStatus: install ok installed\n\n"
			      "Package: linux-image-unsigned-6.1.0-20-amd64\nStatus: install ok installed\n\n"
			      "Package: linux-image-amd64\nStatus: install ok installed\n", &db);
		installed_kernels(&c, &kernels);
		kernel_pm_apt.installed(&db, &kernels);
		TEST_INTEQ(kernels.n, 3);
		TEST_CHECK(strlist_has(&kernels, "6.1.0-20-amd64"));
		dpkg_db_free(&db);
	}
	TEST_CHECK(strlist_has(&kernels, "5.15.0-1057-azure"));
	TEST_CHECK(strlist_has(&kernels, "4.18.0-553.el8_10.x86_64"));
	strlist_free(&kernels);
	strlist_free(&names);
}

static void test_release_source(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	char rel[KREL_MAX];
	const char *src;

	/* No file under the fake root: uname. */
	TEST_INTEQ(running_release(&c, rel, sizeof(rel), &src), 0);
	TEST_STREQ(src, "uname");
	put("/etc/hpcinit/kernel-release", "5.15.0-1057-azure\n");
	TEST_INTEQ(running_release(&c, rel, sizeof(rel), &src), 0);
	TEST_STREQ(rel, "5.15.0-1057-azure");
	TEST_STREQ(src, KERNEL_RELEASE_FILE);
	c.kernel_release = "6.1.0-18-cloud-amd64";
	TEST_INTEQ(running_release(&c, rel, sizeof(rel), &src), 0);
	TEST_STREQ(rel, "6.1.0-18-cloud-amd64");
	c.kernel_release = "../../x";
	TEST_INTEQ(running_release(&c, rel, sizeof(rel), &src), -EINVAL);
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_os_release();
	test_versions();
	test_dpkg();
	test_dnf();
	test_zypp();
	test_modules();
	test_release_source();
	test_rm_rf(root);
	TEST_EXIT();
}
