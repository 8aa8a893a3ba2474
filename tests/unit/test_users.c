/* SPDX-License-Identifier: MIT */
/* users.c: a user and its groups from a fake root's /etc/passwd and /etc/group, and from NSS. */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/base/users.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-users.XXXXXX";

#define put(rel, text) test_put(root, rel, text)

static void test_users(void)
{
	struct ctx c = { .root = root, .mode = RUN_APPLY };
	uid_t u = 0;
	gid_t g = 0;
	char *home = NULL;

	put("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\nazureuser:x:1000:1001:,,,:/home/azureuser:/bin/bash\nbad:x:12a:1::/h:/bin/sh\n");
	TEST_INTEQ(fs_lookup_user(&c, "azureuser", &u, &g, &home), 0);
	TEST_INTEQ(u, 1000);
	TEST_INTEQ(g, 1001);
	TEST_STREQ(home, "/home/azureuser");
	free(home);
	TEST_INTEQ(fs_lookup_user(&c, "azure", &u, &g, NULL), -ENOENT);
	TEST_INTEQ(fs_lookup_user(&c, "bad", &u, &g, NULL), -ENOENT);

	/* The real root asks NSS: this process's own user, by the name NSS gives it. */
	{
		struct ctx real = { .root = "", .mode = RUN_CHECK };
		struct passwd *pw = getpwuid(getuid());

		TEST_CHECK(pw != NULL);
		if (pw) {
			char *name = xstrdup(pw->pw_name), *want = xstrdup(pw->pw_dir);

			TEST_INTEQ(fs_lookup_user(&real, name, &u, &g, &home), 0);
			TEST_INTEQ(u, getuid());
			TEST_STREQ(home, want);
			free(home);
			free(name);
			free(want);
		}
		/* a fake root does not: azureuser is only in the fake passwd */
		TEST_INTEQ(fs_lookup_user(&real, "azureuser-not-on-this-host", &u, &g, NULL), -ENOENT);
	}
	/* Groups: the fake root's /etc/group; the real root's through NSS (getgrouplist). */
	{
		struct strlist l = { 0 };
		struct ctx real = { .root = "", .mode = RUN_CHECK };
		struct passwd *pw = getpwuid(getuid());
		struct group *gr = pw ? getgrgid(pw->pw_gid) : NULL;

		put("/etc/group", "root:x:0:\nhpc:x:1001:\nrdma:x:7:alice,azureuser\nother:x:8:alice\nbad:x:x1:azureuser\n");
		fs_user_groups(&c, "azureuser", true, 1001, &l);
		TEST_INTEQ(l.n, 2);
		TEST_CHECK(l.n == 2 && !strcmp(l.v[0], "hpc") && !strcmp(l.v[1], "rdma"));
		strlist_free(&l);
		fs_user_groups(&c, "azureuser", false, 0, &l);
		TEST_CHECK(l.n == 1 && !strcmp(l.v[0], "rdma"));
		strlist_free(&l);
		TEST_CHECK(pw && gr);
		if (pw && gr) {
			char *name = xstrdup(pw->pw_name), *want = xstrdup(gr->gr_name);
			bool found = false;

			fs_user_groups(&real, name, true, pw->pw_gid, &l);
			for (size_t i = 0; i < l.n; i++)
				found = found || !strcmp(l.v[i], want);
			TEST_CHECK(found);      /* this process's primary group, by NSS */
			strlist_free(&l);
			free(name);
			free(want);
		}
	}
}

int main(void)
{
	if (!mkdtemp(root)) {
		perror("mkdtemp");
		return 1;
	}
	test_users();
	test_rm_rf(root);
	TEST_EXIT();
}
