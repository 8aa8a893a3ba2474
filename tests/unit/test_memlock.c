/* SPDX-License-Identifier: MIT */
/* memlock: rendering, limits.conf domains, PAM stack parsing, /proc limits parsing. */
#include "config.h"

#include <sys/stat.h>

#include "../../modules/memlock.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-memlock.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	char *t, *where = NULL;
	long long soft = 0, hard = 0;

	if (!mkdtemp(root))
		return 1;
	char name[] = "glo";
	s.cluster.name = name;
	s.memlock.present = true;
	s.memlock.unlimited = false;
	s.memlock.limit_bytes = 64ull << 30;
	strlist_push(&s.memlock.users, "*");
	t = render_limits(&s);
	TEST_CHECK(strstr(t, "*                soft memlock 67108864\n") != NULL);
	TEST_CHECK(strstr(t, "*                hard memlock 67108864\n") != NULL);
	free(t);
	/* rounded up to whole KiB */
	s.memlock.limit_bytes = 1025;
	t = render_limits(&s);
	TEST_CHECK(strstr(t, "soft memlock 2\n") != NULL);
	free(t);
	t = render_systemd(&s);
	TEST_CHECK(strstr(t, "[Manager]\nDefaultLimitMEMLOCK=1025\n") != NULL);
	free(t);
	s.memlock.unlimited = true;
	t = render_systemd(&s);
	TEST_CHECK(strstr(t, "DefaultLimitMEMLOCK=infinity\n") != NULL);
	free(t);

	TEST_CHECK(valid_domain("*"));
	TEST_CHECK(valid_domain("@hpc"));
	TEST_CHECK(valid_domain("azureuser"));
	TEST_CHECK(valid_domain("%grp"));
	TEST_CHECK(!valid_domain("a b"));
	TEST_CHECK(!valid_domain("x\n* hard memlock 0"));
	TEST_CHECK(!valid_domain(""));

	/* PAM: Debian (@include), RHEL (include / substack), commented lines do not count. */
	put("/etc/pam.d/common-session", "session required pam_unix.so\nsession required pam_limits.so\n");
	put("/etc/pam.d/sshd", "@include common-auth\n@include common-session\n");
	TEST_CHECK(pam_has_limits(&c, "sshd", 0, &where));
	TEST_STREQ(where, "/etc/pam.d/common-session");
	free(where);
	where = NULL;
	put("/etc/pam.d/password-auth", "session     required      pam_limits.so\n");
	put("/etc/pam.d/rhel-sshd", "session    include      password-auth\n");
	TEST_CHECK(pam_has_limits(&c, "rhel-sshd", 0, &where));
	free(where);
	where = NULL;
	put("/etc/pam.d/sub", "session substack password-auth\n");
	TEST_CHECK(pam_has_limits(&c, "sub", 0, &where));
	free(where);
	where = NULL;
	put("/etc/pam.d/commented", "#session required pam_limits.so\nauth required pam_limits.so\n");
	TEST_CHECK(!pam_has_limits(&c, "commented", 0, &where));
	put("/etc/pam.d/ctrl", "session [success=ok default=bad] pam_limits.so\n");
	TEST_CHECK(pam_has_limits(&c, "ctrl", 0, &where));
	free(where);
	where = NULL;
	/* include loops end */
	put("/etc/pam.d/loop", "@include loop\n");
	TEST_CHECK(!pam_has_limits(&c, "loop", 0, &where));
	TEST_CHECK(!pam_has_limits(&c, "../passwd", 0, &where));

	put("/proc/77/limits", "Limit                     Soft Limit           Hard Limit           Units\n"
	    "Max locked memory         8388608              unlimited            bytes\n");
	TEST_INTEQ(read_proc_memlock(&c, "77", &soft, &hard), 0);
	TEST_INTEQ(soft, 8388608);
	TEST_INTEQ(hard, -1);
	put("/proc/78/stat", "78 (sshd) S 1 78 78 0 -1 4194560\n");
	put("/proc/78/limits", "Max locked memory         65536                65536                bytes\n");
	t = find_sshd(&c);
	TEST_STREQ(t, "78");
	free(t);
	put("/run/sshd.pid", "77\n");
	t = find_sshd(&c);
	TEST_STREQ(t, "77");
	free(t);

	/* observe: sshd's PAM stack runs pam_limits, login has none: findings say which */
	{
		struct report r;

		s.memlock.unlimited = true;
		report_init(&r);
		observe(&c, &r);
		TEST_INTEQ(r.status, ST_OK);
		TEST_INTEQ(report_problems(&r), 0);
		TEST_STREQ(r.findings[0].tag, "memlock.pam.active");
		TEST_STREQ(r.findings[1].tag, "memlock.pam.absent");
		TEST_STREQ(r.findings[2].tag, "memlock.sshd.limit");
		report_free(&r);
		put("/etc/pam.d/login", "session required pam_unix.so\n");
		report_init(&r);
		observe(&c, &r);
		TEST_INTEQ(r.status, ST_DEGRADED);
		TEST_INTEQ(report_problems(&r), 1);
		TEST_INTEQ(r.findings[1].sev, ST_DEGRADED);
		TEST_STREQ(r.findings[1].tag, "memlock.pam.inactive");
		TEST_CHECK(report_summarize(&r));
		TEST_STREQ(r.summary, r.findings[1].text);
		report_free(&r);
	}

	strlist_free(&s.memlock.users);
	test_rm_rf(root);
	TEST_EXIT();
}
