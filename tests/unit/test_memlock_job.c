/* SPDX-License-Identifier: MIT */
/* lib/limits/memlock_job.c: the memlock a job gets, read as pam_limits, systemd and slurmd read it. */
#include "config.h"

#include <sys/stat.h>

#include "../../lib/limits/memlock_job.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-memlock-job.XXXXXX";
#define put(rel, text) test_put(root, rel, text)

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };

	if (!mkdtemp(root))
		return 1;
	char name[] = "glo";
	s.cluster.name = name;

	/*
	 * memlock_lt, the one comparison: unlimited is the largest; a limit not
	 * known (unset) is below nothing and nothing is below it.  The memlock
	 * step's old copy took unset for unlimited (4096 < unset), this file's
	 * took it for the smallest (unset < 4096): each fails one line here.
	 */
	TEST_CHECK(memlock_lt(4096, 8192) && !memlock_lt(8192, 4096) && !memlock_lt(4096, 4096));
	TEST_CHECK(memlock_lt(0, 1) && memlock_lt(1LL << 40, MEMLOCK_UNLIMITED));
	TEST_CHECK(!memlock_lt(MEMLOCK_UNLIMITED, 4096) && !memlock_lt(MEMLOCK_UNLIMITED, MEMLOCK_UNLIMITED));
	TEST_CHECK(!memlock_lt(MEMLOCK_UNSET, 4096));
	TEST_CHECK(!memlock_lt(4096, MEMLOCK_UNSET));
	TEST_CHECK(!memlock_lt(MEMLOCK_UNSET, MEMLOCK_UNLIMITED) && !memlock_lt(MEMLOCK_UNLIMITED, MEMLOCK_UNSET));
	TEST_CHECK(!memlock_lt(MEMLOCK_UNSET, MEMLOCK_UNSET));

	/* pam_limits' reading: order, specificity, '-' and KiB values */

	{
		struct memlock_job j;

		put("/etc/passwd", "root:x:0:0::/root:/bin/sh\nazureuser:x:1000:1000::/home/azureuser:/bin/sh\n");
		put("/etc/group", "azureuser:x:1000:\nhpc:x:2000:other,azureuser\n");
		put("/etc/security/limits.conf", "*  hard  memlock  1024\n");
		put("/etc/security/limits.d/90-hpcinit.conf", "*  soft memlock 8192\n*  hard memlock 8192\n");
		memlock_job_limit(&c, "azureuser", &j);
		TEST_INTEQ(j.pam_soft, 8192 * 1024);
		TEST_INTEQ(j.pam_hard, 8192 * 1024);
		TEST_STREQ(j.pam_soft_from, "/etc/security/limits.d/90-hpcinit.conf:1");
		/* a later file lowers it */
		put("/etc/security/limits.d/99-site.conf", "# site policy\n*  -  memlock  4096\n");
		memlock_job_limit(&c, "azureuser", &j);
		TEST_INTEQ(j.pam_soft, 4096 * 1024);
		TEST_INTEQ(j.pam_hard, 4096 * 1024);
		TEST_STREQ(j.pam_soft_from, "/etc/security/limits.d/99-site.conf:2");
		/* a group line beats a later '*' line; a user line beats both */
		put("/etc/security/limits.d/80-grp.conf", "@hpc soft memlock unlimited\n");
		memlock_job_limit(&c, "azureuser", &j);
		TEST_INTEQ(j.pam_soft, MEMLOCK_UNLIMITED);
		TEST_INTEQ(j.pam_hard, 4096 * 1024);
		memlock_job_limit(&c, "", &j);          /* any user: '*' lines only */
		TEST_INTEQ(j.pam_soft, 4096 * 1024);
		put("/etc/security/limits.d/10-user.conf", "azureuser soft memlock 2048\n1000:1999 hard memlock 3072\n");
		memlock_job_limit(&c, "azureuser", &j);
		TEST_INTEQ(j.pam_soft, 2048 * 1024);
		TEST_INTEQ(j.pam_hard, 3072 * 1024);
		test_put(root, "/etc/security/limits.d/10-user.conf", "");
		test_put(root, "/etc/security/limits.d/80-grp.conf", "");

		/* systemd: system.conf, then drop-ins by name; /etc hides /usr/lib of the same name */
		put("/etc/systemd/system.conf", "[Manager]\nDefaultLimitMEMLOCK=64K\n");
		put("/usr/lib/systemd/system.conf.d/95-vendor.conf", "[Manager]\nDefaultLimitMEMLOCK=1M:2M\n");
		memlock_job_limit(&c, "azureuser", &j);
		TEST_INTEQ(j.svc_soft, 1 << 20);
		TEST_INTEQ(j.svc_hard, 2 << 20);
		TEST_STREQ(j.svc_from, "/usr/lib/systemd/system.conf.d/95-vendor.conf:2");
		put("/etc/systemd/system.conf.d/90-hpcinit.conf", "[Manager]\nDefaultLimitMEMLOCK=infinity\n");
		memlock_job_limit(&c, "azureuser", &j);
		TEST_INTEQ(j.svc_soft, 1 << 20);        /* 95-vendor sorts after 90-hpcinit */
		put("/etc/systemd/system.conf.d/95-vendor.conf", "# masked\n");
		memlock_job_limit(&c, "azureuser", &j);
		TEST_INTEQ(j.svc_soft, MEMLOCK_UNLIMITED);
		TEST_STREQ(j.svc_from, "/etc/systemd/system.conf.d/90-hpcinit.conf:2");
		TEST_INTEQ(memlock_job_min(&j), 4096 * 1024);
	}

	/* Slurm: what a job gets (PropagateResourceLimits, slurm.conf(5) of 22.05) */
	{
		struct memlock_slurm sl;

		put("/lib/systemd/system/slurmd.service", "[Service]\nExecStart=/usr/sbin/slurmd -D\nLimitMEMLOCK=infinity\n");
		/* Except=CORE: MEMLOCK propagates; Except=NONE: all do; Except=ALL: none */
		put("/etc/slurm/slurm.conf", "PropagateResourceLimitsExcept=CORE\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.propagates);
		put("/etc/slurm/slurm.conf", "PropagateResourceLimitsExcept=NONE\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.propagates);
		put("/etc/slurm/slurm.conf", "PropagateResourceLimitsExcept=ALL\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(!sl.propagates);
		/* the list form: NONE, ALL, a list with or without MEMLOCK; "Key = Value"; several keys on a line */
		put("/etc/slurm/slurm.conf", "PropagateResourceLimits=NONE\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(!sl.propagates);
		put("/etc/slurm/slurm.conf", "PropagateResourceLimits = ALL\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.propagates);
		TEST_STREQ(sl.setting, "PropagateResourceLimits=ALL");
		put("/etc/slurm/slurm.conf", "SlurmdSpoolDir=/var/spool/slurmd PropagateResourceLimits=NOFILE,CORE\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(!sl.propagates);
		put("/etc/slurm/slurm.conf", "PropagateResourceLimits=NOFILE,MEMLOCK\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.propagates);
		/* Include: relative to the including file, followed; the last value wins */
		put("/etc/slurm/slurm.conf", "PropagateResourceLimits=ALL\nInclude limits.conf\n");
		put("/etc/slurm/limits.conf", "PropagateResourceLimits=NONE\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(!sl.propagates);
		TEST_STREQ(sl.from, "/etc/slurm/limits.conf:1");
		TEST_STREQ(sl.problem, "");
		/* a missing include and an include loop: named, no crash */
		put("/etc/slurm/slurm.conf", "include /etc/slurm/nope.conf\nInclude slurm.conf\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.propagates);
		TEST_STREQ(sl.problem, "/etc/slurm/slurm.conf:1: Include /etc/slurm/nope.conf: not found (not read)");
		put("/etc/slurm/slurm.conf", "Include slurm.conf\n");
		memlock_slurm_read(&c, &sl);
		TEST_STREQ(sl.problem, "/etc/slurm/slurm.conf:1: Include nested more than 8 deep, not followed");
		/* both keys: Slurm takes only one */
		put("/etc/slurm/slurm.conf", "PropagateResourceLimits=ALL\nPropagateResourceLimitsExcept=MEMLOCK\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(strstr(sl.problem, "both PropagateResourceLimits (/etc/slurm/slurm.conf:1) and "
				  "PropagateResourceLimitsExcept (/etc/slurm/slurm.conf:2) are set") != NULL);
		/* slurmd's limit: a drop-in in /etc overrides the unit */
		put("/etc/systemd/system/slurmd.service.d/memlock.conf", "[Service]\nLimitMEMLOCK=64M\n");
		memlock_slurm_read(&c, &sl);
		TEST_INTEQ(sl.slurmd_soft, 64ll << 20);
		TEST_STREQ(sl.slurmd_from, "/etc/systemd/system/slurmd.service.d/memlock.conf:2");
		/* hpcinit's slurm step runs slurmd in its own transient unit: that one counts */
		s.slurm.present = true;
		memlock_slurm_read(&c, &sl);            /* without systemd the step starts slurmd itself */
		TEST_STREQ(sl.slurmd_from, "/etc/systemd/system/slurmd.service.d/memlock.conf:2");
		put("/run/systemd/system/.here", "");
		memlock_slurm_read(&c, &sl);
		TEST_INTEQ(sl.slurmd_soft, MEMLOCK_UNLIMITED);
		TEST_STREQ(sl.slurmd_from, "the slurm step's unit hpcinit-slurmd");
		put("/run/systemd/transient/hpcinit-slurmd.service", "# This is a transient unit file\n[Service]\n"
		    "LimitMEMLOCK=8M\nExecStart=/usr/sbin/slurmd -D -s -Z\n");
		memlock_slurm_read(&c, &sl);
		TEST_INTEQ(sl.slurmd_soft, 8ll << 20);
		TEST_STREQ(sl.slurmd_from, "/run/systemd/transient/hpcinit-slurmd.service:3");
		s.slurm.present = false;

		/* the running slurmd: SlurmdPidFile, its /proc/PID/limits, the conf its command line names */
		TEST_CHECK(!sl.live && sl.pid == 0);
		TEST_STREQ(sl.pidfile, "/run/slurmd.pid");
		TEST_INTEQ(memlock_slurm_job(&sl, 1 << 20), MEMLOCK_UNSET);    /* not running: not known */
		put("/etc/slurm/slurm.conf", "SlurmdPidFile=/var/run/slurm/d.pid PropagateResourceLimits=ALL\n");
		put("/var/run/slurm/d.pid", "977\n");
		put("/proc/977/comm", "slurmd\n");
		put("/proc/977/limits", "Limit  Soft Limit  Hard Limit  Units\nMax cpu time  unlimited  unlimited  seconds\n"
		    "Max locked memory         4194304              8388608              bytes     \n");
		memlock_slurm_read(&c, &sl);
		TEST_STREQ(sl.pidfile, "/var/run/slurm/d.pid");
		TEST_INTEQ(sl.pid, 977);
		TEST_STREQ(sl.pid_how, "/var/run/slurm/d.pid");
		TEST_CHECK(sl.live && sl.propagates);
		TEST_INTEQ(sl.live_soft, 4 << 20);
		TEST_INTEQ(sl.live_hard, 8 << 20);
		TEST_INTEQ(memlock_slurm_job(&sl, 2 << 20), 2 << 20);          /* the submitting shell's */
		TEST_INTEQ(memlock_slurm_job(&sl, 16 << 20), 8 << 20);         /* reduced to slurmd's hard */
		TEST_INTEQ(memlock_slurm_job(&sl, MEMLOCK_UNLIMITED), 8 << 20);
		TEST_INTEQ(memlock_slurm_job(&sl, MEMLOCK_UNSET), MEMLOCK_UNSET);
		/* configless (--conf-server): the cached copy it reads counts, not /etc/slurm */
		{
			char *p = xasprintf("%s/proc/977/cmdline", root);
			FILE *f = fopen(p, "w");

			fwrite("/usr/sbin/slurmd\0-Z\0--conf-server\0head\0", 1, 39, f);
			fclose(f);
			free(p);
		}
		put("/run/slurm/conf/slurm.conf", "PropagateResourceLimitsExcept=MEMLOCK\n");
		memlock_slurm_read(&c, &sl);
		TEST_STREQ(sl.conf, "/run/slurm/conf/slurm.conf");
		TEST_CHECK(!sl.propagates);
		TEST_INTEQ(memlock_slurm_job(&sl, MEMLOCK_UNLIMITED), 4 << 20); /* slurmd's soft */
		/* -f FILE */
		{
			char *p = xasprintf("%s/proc/977/cmdline", root);
			FILE *f = fopen(p, "w");

			fwrite("slurmd\0-f\0/etc/slurm/other.conf\0", 1, 33, f);
			fclose(f);
			free(p);
		}
		put("/etc/slurm/other.conf", "PropagateResourceLimits=NONE\n");
		memlock_slurm_read(&c, &sl);
		TEST_STREQ(sl.conf, "/etc/slurm/other.conf");
		TEST_CHECK(!sl.propagates);
		/* a stale pid file, and no process of that name: none */
		put("/proc/977/comm", "sshd\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.pid == 0 && !sl.live);
		TEST_STREQ(sl.conf, "/etc/slurm/slurm.conf");
		/* found by name in /proc when the pid file is gone */
		put("/proc/1200/comm", "slurmd\n");
		put("/proc/1200/limits", "Max locked memory         unlimited            unlimited            bytes\n");
		memlock_slurm_read(&c, &sl);
		TEST_INTEQ(sl.pid, 1200);
		TEST_STREQ(sl.pid_how, "a process named slurmd");
		TEST_CHECK(sl.live && sl.live_soft == MEMLOCK_UNLIMITED && sl.live_hard == MEMLOCK_UNLIMITED);
		TEST_INTEQ(memlock_slurm_job(&sl, 2 << 20), 2 << 20);
		/* limits that cannot be read: running, not live */
		put("/proc/1200/limits", "Max locked memory         lots                 unlimited            bytes\n");
		memlock_slurm_read(&c, &sl);
		TEST_CHECK(sl.pid == 1200 && !sl.live);
	}

	test_rm_rf(root);
	TEST_EXIT();
}
