/* SPDX-License-Identifier: MIT */
/*
 * lib/sshkeys/userkeys.c: a cluster user's ~/.ssh and key pair, in check
 * mode (nothing written).  The private key is made by the real ssh-keygen;
 * the public half ssh_user_key derives must be the one ssh-keygen -y prints.
 * A home on a spec mount that is not there is never written (apply).
 */
#include "config.h"

#include <errno.h>
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/sshkeys/userkeys.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-userkeys.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

/* Run argv through the agent's child engine; its first line of output in out. */
static int run(const char *const argv[], char *out, size_t n)
{
	struct proc_result pr;
	int ret = proc_run(argv, NULL, NULL, 30000, &pr);

	if (ret == 0) {
		snprintf(out, n, "%s", pr.out);
		out[strcspn(out, "\n")] = '\0';
		ret = pr.exit_code;
	}
	proc_result_free(&pr);
	return ret;
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	struct report r;
	struct ssh_user u;
	char *pub = NULL, path[512], want[512];

	if (!mkdtemp(root) || chmod(root, 0755) < 0)       /* the user's fsuid walks it */
		return 1;
	/* alice is uid 1000 when we are root (her fsuid then walks the tree), else ourselves */
	uid_t uid = geteuid() == 0 ? 1000 : geteuid();
	gid_t gid = geteuid() == 0 ? 1000 : getegid();
	char pw[256];

	snprintf(pw, sizeof(pw), "root:x:0:0::/root:/bin/sh\nalice:x:%u:%u::/home/alice:/bin/sh\n",
		 (unsigned)uid, (unsigned)gid);
	put("/etc/passwd", pw);

	/* an unknown user: refused with what to do */
	report_init(&r);
	TEST_CHECK(ssh_user_open(&c, &r, "bob", "authorized_keys", &u) < 0);
	TEST_CHECK(strstr(sb_str(&r.details), "user bob: not found in /etc/passwd") != NULL);
	ssh_user_close(&u);
	report_free(&r);

	/* a known one: the paths under its home */
	report_init(&r);
	TEST_INTEQ(ssh_user_open(&c, &r, "alice", "authorized_keys", &u), 0);
	TEST_INTEQ(u.uid, uid);
	TEST_STREQ(u.sshdir, "/home/alice/.ssh");
	TEST_STREQ(u.path, "/home/alice/.ssh/authorized_keys");
	ssh_user_close(&u);
	report_free(&r);

	/* no home: never made here (pam_mkhomedir's job) */
	report_init(&r);
	TEST_INTEQ(ssh_user_key(&c, &r, "alice", KEY_ED25519, &pub), -ENOENT);
	TEST_CHECK(strstr(sb_str(&r.details), "home directory /home/alice does not exist") != NULL);
	report_free(&r);

	/* a home, no key: check mode says apply makes one, and makes nothing */
	snprintf(path, sizeof(path), "%s/home", root);
	TEST_CHECK(mkdir(path, 0755) == 0);
	snprintf(path, sizeof(path), "%s/home/alice", root);
	TEST_CHECK(mkdir(path, 0755) == 0);
	TEST_CHECK(chown(path, uid, gid) == 0);
	report_init(&r);
	TEST_INTEQ(ssh_user_key(&c, &r, "alice", KEY_ED25519, &pub), -ENOENT);
	TEST_CHECK(strstr(sb_str(&r.details), "/home/alice/.ssh/id_ed25519: missing; apply generates a ed25519 key pair") != NULL);
	TEST_INTEQ(r.status, ST_CHANGED);
	snprintf(path, sizeof(path), "%s/home/alice/.ssh/id_ed25519", root);
	TEST_CHECK(access(path, F_OK) < 0);
	report_free(&r);

	/* the user's own key (real ssh-keygen): kept, its public half read from it */
	snprintf(path, sizeof(path), "%s/home/alice/.ssh", root);
	TEST_CHECK(mkdir(path, 0700) == 0);
	TEST_CHECK(chown(path, uid, gid) == 0);
	snprintf(path, sizeof(path), "%s/home/alice/.ssh/id_ed25519", root);
	{
		const char *const gen[] = { "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "", "-f", path, NULL };
		const char *const show[] = { "ssh-keygen", "-y", "-f", path, NULL };
		char junk[64];

		TEST_INTEQ(run(gen, junk, sizeof(junk)), 0);
		TEST_INTEQ(run(show, want, sizeof(want)), 0);
	}
	TEST_CHECK(chown(path, uid, gid) == 0);
	strcat(path, ".pub");
	unlink(path);
	report_init(&r);
	TEST_INTEQ(ssh_user_key(&c, &r, "alice", KEY_ED25519, &pub), 0);
	TEST_CHECK(pub != NULL && strncmp(pub, want, strlen(want)) == 0);
	TEST_CHECK(pub != NULL && strcmp(pub + strlen(want), " alice@hpcinit") == 0);
	TEST_CHECK(access(path, F_OK) < 0);     /* check mode: the .pub is not written */
	free(pub);
	report_free(&r);

	/*
	 * /home on a mount of the spec that is not there: apply makes nothing
	 * in the home the local disk has under the mount point, and the
	 * finding names the mount (common/base/mounts.c).
	 */
	{
		struct spec_nfs_mount home = { .host = (char *)(uintptr_t)"nfs01",
					       .export = (char *)(uintptr_t)"/home",
					       .path = (char *)(uintptr_t)"/home" };

		s.nfs.present = true;
		s.nfs.mounts = &home;
		s.nfs.n_mounts = 1;
		c.mode = RUN_APPLY;
		c.module = "ssh";
		snprintf(path, sizeof(path), "%s/home/alice/.ssh", root);
		test_rm_rf(path);
		report_init(&r);
		TEST_INTEQ(ssh_user_key(&c, &r, "alice", KEY_ED25519, &pub), -ENOMEDIUM);
		TEST_INTEQ(r.status, ST_FAILED);
		TEST_INTEQ(r.n_findings, 1);
		if (r.n_findings) {
			TEST_STREQ(r.findings[0].tag, "ssh.mount.absent");
			TEST_STREQ(r.findings[0].text, "user alice's home /home/alice is on the NFS mount "
				   "/home (nfs01:/home), which is not mounted; nothing is written there");
		}
		TEST_CHECK(access(path, F_OK) < 0);     /* no ~/.ssh made */
		report_free(&r);
		report_init(&r);
		TEST_INTEQ(ssh_user_open(&c, &r, "alice", "authorized_keys", &u), -ENOMEDIUM);
		ssh_user_close(&u);
		report_free(&r);
		/* mounted: the home is the user's again (check mode: nothing written) */
		put("/proc/self/mountinfo", "60 1 0:50 / /home rw - nfs4 nfs01:/home rw,vers=4.1\n");
		c.mode = RUN_CHECK;
		report_init(&r);
		TEST_INTEQ(ssh_user_open(&c, &r, "alice", "authorized_keys", &u), 0);
		TEST_INTEQ(r.n_findings, 0);
		ssh_user_close(&u);
		report_free(&r);
		s.nfs.mounts = NULL;
		s.nfs.n_mounts = 0;
	}

	test_rm_rf(root);
	TEST_EXIT();
}
