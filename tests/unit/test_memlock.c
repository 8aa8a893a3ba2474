/* SPDX-License-Identifier: MIT */
/* memlock: rendering, limits.conf domains, PAM stack, /proc limits (the job limit: test_memlock_job.c). */
#include "config.h"

#include <sys/stat.h>

#include "../../modules/memlock.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-memlock.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

static const struct finding *tagged(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0)
			return &r->findings[i];
	return NULL;
}

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

	/*
	 * limits.conf domains: the loader's one rule (name_check_pam_domain),
	 * asked again before a line is written.  The step's own looser rule took
	 * "%grp", "a:b", "a*b", "@" and 64-byte names the spec refuses.
	 */
	{
		static const char *const ok[] = { "*", "@hpc", "azureuser", NULL };
		static const char *const bad[] = { "%grp", "a:b", "a*b", "@", "-x", "a b", "x\n* hard memlock 0", "",
						   "a123456789012345678901234567890123", NULL };
		struct ctx w = { .spec = &s, .root = root, .mode = RUN_APPLY };
		struct report r;

		for (const char *const *d = ok; *d; d++)
			TEST_CHECK(name_check_pam_domain(*d) == NULL);
		for (const char *const *d = bad; *d; d++) {
			char *p = fs_rooted(root, LIMITS_PATH);

			strlist_free(&s.memlock.users);
			strlist_push(&s.memlock.users, *d);
			report_init(&r);
			TEST_INTEQ(write_files(&w, &r), -EINVAL);
			TEST_INTEQ(r.status, ST_FAILED);
			TEST_CHECK(access(p, F_OK) < 0);        /* nothing written */
			report_free(&r);
			free(p);
		}
		strlist_free(&s.memlock.users);
		strlist_push(&s.memlock.users, "*");
	}

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
	/* a limit that is no number is not known (it was read as 0 bytes) */
	put("/proc/79/limits", "Max locked memory         8M                   unlimited            bytes\n");
	TEST_INTEQ(read_proc_memlock(&c, "79", &soft, &hard), -ENODATA);
	TEST_INTEQ(soft, 8388608);
	put("/proc/78/stat", "78 (sshd) S 1 78 78 0 -1 4194560\n");
	put("/proc/78/comm", "sshd\n");
	put("/proc/77/comm", "sshd\n");
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
		s.memlock.systemd = true;
		put("/proc/77/limits", "Max locked memory         unlimited            unlimited            bytes\n");
		/* hpcinit's limits file gone (check): a job gets less than the spec; broken, not drift */
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.job.low") && tagged(&r, "memlock.job.low")->sev == ST_FAILED);
		TEST_INTEQ(r.status, ST_FAILED);
		report_free(&r);
		/* ... or lowered in place: the same */
		put(LIMITS_PATH, "*  -  memlock  4096\n");
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.job.low") && tagged(&r, "memlock.job.low")->sev == ST_FAILED);
		TEST_CHECK(strstr(tagged(&r, "memlock.job.low")->text, "gets memlock 4 MiB") ||
			   strstr(tagged(&r, "memlock.job.low")->text, "4096"));
		report_free(&r);
		/* plan: a change to make, not a failure */
		c.mode = RUN_PLAN;
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.job.low") && tagged(&r, "memlock.job.low")->sev == ST_CHANGED);
		report_free(&r);
		c.mode = RUN_CHECK;
		put(LIMITS_PATH, "*  -  memlock  unlimited\n");
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.job.low") == NULL);
		TEST_INTEQ(r.status, ST_OK);
		TEST_INTEQ(report_problems(&r), 0);
		TEST_STREQ(r.findings[0].tag, "memlock.pam.active");
		TEST_STREQ(r.findings[1].tag, "memlock.pam.absent");
		TEST_CHECK(tagged(&r, "memlock.sshd.limit") != NULL);
		TEST_CHECK(tagged(&r, "memlock.job.pam") != NULL);
		TEST_CHECK(tagged(&r, "memlock.job.services") != NULL);
		TEST_CHECK(tagged(&r, "memlock.systemd.not-running") != NULL);
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
		put("/etc/pam.d/login", "session required pam_limits.so\n");

		/* The running sshd's limit below the spec changes the status, not only a detail. */
		put("/proc/77/limits", "Max locked memory         8388608              unlimited            bytes\n");
		report_init(&r);
		observe(&c, &r);
		TEST_INTEQ(r.status, ST_DEGRADED);
		TEST_CHECK(tagged(&r, "memlock.sshd.low") && tagged(&r, "memlock.sshd.low")->sev == ST_DEGRADED);
		report_free(&r);
		put("/proc/77/limits", "Max locked memory         unlimited            unlimited            bytes\n");

		/* sshd without UsePAM yes: ssh sessions skip pam_limits */
		put("/etc/ssh/sshd_config", "Include /etc/ssh/sshd_config.d/*.conf\nPort 22\n");
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.sshd.no-pam") && r.status == ST_DEGRADED);
		report_free(&r);
		put("/etc/ssh/sshd_config.d/50-pam.conf", "# Debian\nusepam yes\n");
		put("/etc/ssh/sshd_config.d/60-late.conf", "UsePAM no\n");     /* first value wins */
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.sshd.pam") != NULL);
		TEST_CHECK(tagged(&r, "memlock.sshd.no-pam") == NULL);
		TEST_INTEQ(r.status, ST_OK);
		report_free(&r);
	}

	/* the limit a job gets (lib/limits, its cases in test_memlock_job.c) as observe reports it */
	{
		struct report r;

		put("/etc/passwd", "root:x:0:0::/root:/bin/sh\nazureuser:x:1000:1000::/home/azureuser:/bin/sh\n");
		put("/etc/group", "azureuser:x:1000:\nhpc:x:2000:other,azureuser\n");
		put("/etc/security/limits.conf", "*  hard  memlock  1024\n");
		put("/etc/security/limits.d/90-hpcinit.conf", "*  soft memlock 8192\n*  hard memlock 8192\n");
		put("/etc/security/limits.d/99-site.conf", "# site policy\n*  -  memlock  4096\n");

		put("/etc/systemd/system.conf", "[Manager]\nDefaultLimitMEMLOCK=64K\n");
		put("/usr/lib/systemd/system.conf.d/95-vendor.conf", "[Manager]\nDefaultLimitMEMLOCK=1M:2M\n");
		put("/etc/systemd/system.conf.d/90-hpcinit.conf", "[Manager]\nDefaultLimitMEMLOCK=infinity\n");
		put("/etc/systemd/system.conf.d/95-vendor.conf", "# masked\n");

		/* observe names the file that lowers the limit, and fails */
		s.memlock.unlimited = false;
		s.memlock.limit_bytes = 8192 * 1024;
		put("/etc/security/limits.d/90-hpcinit.conf", "*  soft memlock 8192\n*  hard memlock 8192\n");
		report_init(&r);
		observe(&c, &r);
		TEST_INTEQ(r.status, ST_FAILED);
		TEST_CHECK(tagged(&r, "memlock.limits.overridden") != NULL);
		TEST_CHECK(strstr(tagged(&r, "memlock.limits.overridden")->text,
				  "/etc/security/limits.d/99-site.conf:2 sets memlock 4096 KiB for any user, below memlock.limit 8192 KiB") != NULL);
		report_free(&r);
		put("/etc/security/limits.d/99-site.conf", "# gone\n");
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.limits.overridden") == NULL);
		report_free(&r);
	}

	/* Slurm: what a job gets (PropagateResourceLimits, slurm.conf(5) of 22.05) */
	{
		struct memlock_slurm sl;
		struct report r;
		const struct finding *f;

		memlock_slurm_read(&c, &sl);
		TEST_CHECK(!sl.present);                /* no slurm.conf: nothing to say */
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.job.slurm") == NULL);
		report_free(&r);

		/* configless: the cache slurmd keeps; no key: Slurm's default ALL */
		put("/var/spool/slurmd/conf-cache/slurm.conf", "ClusterName=glo\nSlurmctldHost=head\n");
		put("/lib/systemd/system/slurmd.service", "[Service]\nExecStart=/usr/sbin/slurmd -D\nLimitMEMLOCK=infinity\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.present);
		TEST_STREQ(sl.conf, "/var/spool/slurmd/conf-cache/slurm.conf");
		TEST_CHECK(sl.propagates);
		TEST_STREQ(sl.setting, "PropagateResourceLimits=ALL (Slurm's default)");
		TEST_STREQ(sl.from, "");
		TEST_INTEQ(sl.slurmd_soft, MEMLOCK_UNLIMITED);
		TEST_STREQ(sl.slurmd_from, "/lib/systemd/system/slurmd.service:3");
		/* no slurmd runs: not known, and said so (not the unit's value) */
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.job.slurm") == NULL);
		f = tagged(&r, "memlock.job.slurm.unknown");
		TEST_CHECK(f && f->sev == ST_OK);
		TEST_CHECK(f && strcmp(f->text, "job: slurmd is not running here (no live /run/slurmd.pid, no process "
				       "named slurmd): what a Slurm job gets is not known until it runs "
				       "(/var/spool/slurmd/conf-cache/slurm.conf: PropagateResourceLimits=ALL (Slurm's "
				       "default)); its unit would give slurmd memlock unlimited (LimitMEMLOCK= at "
				       "/lib/systemd/system/slurmd.service:3)") == 0);
		report_free(&r);

		/* slurmd runs (found by its pid file) with 4 MiB soft, 6 MiB hard: a PAM session's
		 * 8 MiB is reduced to slurmd's hard limit, below memlock.limit: degraded */
		put("/run/slurmd.pid", "4321\n");
		put("/proc/4321/comm", "slurmd\n");
		put("/proc/4321/limits", "Limit                     Soft Limit           Hard Limit           Units     \n"
		    "Max locked memory         4194304              6291456              bytes     \n");
		report_init(&r);
		observe(&c, &r);
		f = tagged(&r, "memlock.job.slurm");
		TEST_CHECK(f && f->sev == ST_OK);
		TEST_CHECK(f && strcmp(f->text, "job: a Slurm job gets memlock 6144 KiB: the submitting shell's soft "
				       "limit, at most slurmd's hard limit 6144 KiB (pid 4321, /run/slurmd.pid, "
				       "/proc/4321/limits) (/var/spool/slurmd/conf-cache/slurm.conf: "
				       "PropagateResourceLimits=ALL (Slurm's default)): a shell of a new PAM session of any "
				       "user here has 8192 KiB; a shell with less (cron, a service, a login node without "
				       "this limit) gives its jobs less; to give jobs slurmd's soft limit (4096 KiB) "
				       "instead, set PropagateResourceLimitsExcept=MEMLOCK in slurm.conf") == 0);
		f = tagged(&r, "memlock.job.slurm.low");
		TEST_CHECK(f && f->sev == ST_DEGRADED);
		TEST_CHECK(f && strstr(f->text, "a Slurm job here gets memlock 6144 KiB, below memlock.limit 8192 KiB: "
				       "slurmd's hard limit (pid 4321)") == f->text);
		report_free(&r);

		/* /etc/slurm/slurm.conf wins over the cache; keys case-insensitive, comma lists */
		put("/etc/slurm/slurm.conf", "# site\npropagateresourcelimitsexcept=CORE,memlock  # RDMA\n");
		memlock_slurm_read(&c, &sl);
		TEST_STREQ(sl.conf, "/etc/slurm/slurm.conf");
		TEST_CHECK(!sl.propagates);
		TEST_STREQ(sl.setting, "PropagateResourceLimitsExcept=CORE,memlock");
		TEST_STREQ(sl.from, "/etc/slurm/slurm.conf:2");
		report_init(&r);
		observe(&c, &r);
		f = tagged(&r, "memlock.job.slurm");
		TEST_CHECK(f && strcmp(f->text, "job: a Slurm job gets memlock 4096 KiB: slurmd's soft limit (pid 4321, "
				       "/run/slurmd.pid: soft 4096 KiB, hard 6144 KiB in /proc/4321/limits), not the "
				       "submitting shell's (/etc/slurm/slurm.conf: PropagateResourceLimitsExcept=CORE,memlock "
				       "at /etc/slurm/slurm.conf:2); its unit would give unlimited (LimitMEMLOCK= at "
				       "/lib/systemd/system/slurmd.service:3), not what slurmd runs with: it was started "
				       "another way or before that changed") == 0);
		f = tagged(&r, "memlock.job.slurm.low");
		TEST_CHECK(f && f->sev == ST_DEGRADED && strstr(f->text, ": slurmd's soft limit (pid 4321); give "
							      "slurmd's unit LimitMEMLOCK=infinity") != NULL);
		report_free(&r);
		/* unlimited, as its unit says: nothing low */
		put("/proc/4321/limits", "Max locked memory         unlimited            unlimited            bytes\n");
		report_init(&r);
		observe(&c, &r);
		f = tagged(&r, "memlock.job.slurm");
		TEST_CHECK(f && strstr(f->text, "job: a Slurm job gets memlock unlimited: slurmd's soft limit") == f->text &&
			   strstr(f->text, "; slurmd has it from its unit: unlimited (LimitMEMLOCK= at "
				  "/lib/systemd/system/slurmd.service:3)") != NULL);
		TEST_CHECK(tagged(&r, "memlock.job.slurm.low") == NULL);
		report_free(&r);
		/* the slurm step's slurmd (hpcinit-slurmd under systemd) low: the fix is its restart */
		put("/proc/4321/limits", "Max locked memory         4194304              4194304              bytes\n");
		put("/run/systemd/system/.here", "");
		s.slurm.present = true;
		report_init(&r);
		observe(&c, &r);
		f = tagged(&r, "memlock.job.slurm.low");
		TEST_CHECK(f && strstr(f->text, "; restart slurmd (systemctl restart hpcinit-slurmd: the slurm step's "
				       "unit gives it LimitMEMLOCK=infinity)") != NULL);
		report_free(&r);
		s.slurm.present = false;
		/* a stale pid file (another program has that pid): no slurmd */
		put("/proc/4321/comm", "bash\n");
		report_init(&r);
		observe(&c, &r);
		TEST_CHECK(tagged(&r, "memlock.job.slurm.unknown") != NULL);
		report_free(&r);
	}

	strlist_free(&s.memlock.users);
	test_rm_rf(root);
	TEST_EXIT();
}
