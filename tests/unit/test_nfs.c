/* SPDX-License-Identifier: MIT */
/*
 * Unit tests of the nfs step (modules/nfs/nfs.c, fstab.c, mount.c): fstab
 * rendering and option merging, option drift, mount(8)
 * error classification, the wait loop and whole runs on a temporary fake
 * root, the step's deadline.  Its exports are test_nfs_export.c, its probe
 * test_nfs_probe.c, the squash rules test_squash.c, the mount table test_mounts.c.
 */
#include "testnfs.h"

/* ---- tests --------------------------------------------------------------- */

static void test_fstab_line(void)
{
	static const char *const blob[] = { "sec=sys", "vers=3", "nolock", "proto=tcp", NULL };
	static const char *const mine[] = { "vers=4.1", "nofail", "x-systemd.mount-timeout=20s", NULL };
	struct spec_nfs_mount m;
	struct report r;
	struct nfs_target t;
	char *line, *o;

	report_init(&r);
	/* defaults when the spec gives no options */
	mount_init(&m, "10.0.0.7", "/shared", "/scratch", NULL, 300000);
	target_init(&t, &m);
	line = fstab_line(&t);
	TEST_STREQ(line, "10.0.0.7:/shared /scratch nfs vers=3,hard,proto=tcp,_netdev,nofail,"
		   "x-systemd.mount-timeout=300s 0 0\n");
	o = mount_optstr(&t);
	TEST_STREQ(o, "vers=3,hard,proto=tcp");
	TEST_INTEQ(t.vers, 3);
	free(o);
	free(line);
	target_free(&t);
	mount_fini(&m);

	/* Blob NFS; a space in the path is escaped */
	mount_init(&m, "acct.blob.core.windows.net", "/acct/container", "/mnt/my data", blob, 60000);
	target_init(&t, &m);
	line = fstab_line(&t);
	TEST_STREQ(line, "acct.blob.core.windows.net:/acct/container /mnt/my\\040data nfs "
		   "sec=sys,vers=3,nolock,proto=tcp,_netdev,nofail,x-systemd.mount-timeout=60s 0 0\n");
	free(line);
	target_free(&t);
	mount_fini(&m);

	/* wait: 0s (one probe) never writes systemd's "0 = no timeout": the floor is 1 s */
	mount_init(&m, "198.18.2.2", "/export", "/zero", NULL, 0);
	target_init(&t, &m);
	line = fstab_line(&t);
	TEST_CHECK(strstr(line, ",x-systemd.mount-timeout=1s 0 0\n") != NULL);
	free(line);
	target_free(&t);
	mount_fini(&m);

	/* keys the user gave are not added twice */
	mount_init(&m, "anf", "/vol1", "/data", mine, WAIT_UNSET);
	target_init(&t, &m);
	line = fstab_line(&t);
	TEST_STREQ(line, "anf:/vol1 /data nfs vers=4.1,nofail,x-systemd.mount-timeout=20s,_netdev 0 0\n");
	TEST_INTEQ(t.vers, 4);
	TEST_INTEQ(t.wait_ms, 5 * 60 * 1000);      /* the loader's default, taken as it is */
	free(line);
	target_free(&t);
	mount_fini(&m);
	report_free(&r);
}

/*
 * The rules of the nfs section are the loader's (names.c, spec.c): what the
 * step used to reject by itself never reaches it.  The step takes the
 * loaded values as they are, wait: 0s included.
 */
static void test_target_invalid(void)
{
	static const char *const bad[] = {
		"options: [\"vers=3,hard\"]", "options: [vers=4, port=70000]", "path: /",
		"path: relative", "path: /a/../b", "source: \"h:e\"",
	};
	struct nfs_target t;
	struct spec *s;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *y = xasprintf("version: 1\ncluster: {name: c}\nnfs: {mounts: [{source: \"h:/e\", "
				    "path: /p, %s}]}\n", bad[i]);

		/* a later key of the same name would be a duplicate: put the bad one alone */
		if (strncmp(bad[i], "path:", 5) == 0 || strncmp(bad[i], "source:", 7) == 0) {
			free(y);
			y = xasprintf("version: 1\ncluster: {name: c}\nnfs: {mounts: [{%s, %s}]}\n",
				      strncmp(bad[i], "path:", 5) == 0 ? "source: \"h:/e\"" : "path: /p", bad[i]);
		}
		s = load(y);
		TEST_CHECK(s == NULL);
		spec_free(s);
		free(y);
	}
	s = load("version: 1\ncluster: {name: c}\nnfs: {mounts: [{source: \"h:/e\", path: /p, "
		 "options: [nfsvers=3, port=2048, ro], wait: 0s}]}\n");
	TEST_CHECK(s != NULL);
	if (!s)
		return;
	target_init(&t, &s->nfs.mounts[0]);
	TEST_INTEQ(t.port, 2048);
	TEST_INTEQ(t.vers, 3);
	TEST_CHECK(t.ro);
	TEST_INTEQ(t.wait_ms, 0);       /* one probe, no wait: not replaced by a default */
	target_free(&t);
	spec_free(s);
}

static const char mountinfo_text[] =
	"22 1 0:21 / /proc rw,nosuid,nodev,noexec,relatime shared:5 - proc proc rw\n"
	"25 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
	"60 25 0:50 / /scratch rw,relatime shared:30 master:2 - nfs 10.0.0.7:/shared "
	"rw,vers=3,rsize=1048576,wsize=1048576,namlen=255,hard,nolock,proto=tcp,nconnect=8,timeo=600,"
	"retrans=2,sec=sys,mountaddr=10.0.0.7,mountvers=3,mountport=20048,mountproto=tcp,"
	"local_lock=all,addr=10.0.0.7\n"
	"61 25 0:51 / /mnt/my\\040data ro,relatime - nfs4 acct.blob.core.windows.net:/acct/c "
	"ro,vers=4.1,hard,proto=tcp,sec=sys\n"
	"garbage line without separator\n"
	"62 25 0:52 / /scratch rw,relatime - tmpfs tmpfs rw\n";

static void test_options_diff(void)
{
	static const char *const same[] = { "vers=3", "hard", "nolock", "proto=tcp", "nconnect=8",
					    "rsize=262144", NULL };
	static const char *const other[] = { "vers=4", "soft", "nconnect=4", NULL };
	static const char *const v41[] = { "vers=4.1", "ro", NULL };
	static const char *const v42[] = { "vers=4.2", NULL };
	struct mountinfo mi;
	struct spec_nfs_mount m;
	struct nfs_target t;
	struct report r;
	struct strbuf sb = STRBUF_INIT;

	report_init(&r);
	mountinfo_parse(mountinfo_text, &mi);
	mount_init(&m, "10.0.0.7", "/shared", "/scratch", same, 0);
	target_init(&t, &m);
	/* rsize differs (server negotiated) but is not compared */
	TEST_INTEQ(options_diff(&t, &mi.v[2], &sb), 0);
	TEST_STREQ(sb_str(&sb), "");
	target_free(&t);
	mount_fini(&m);

	mount_init(&m, "10.0.0.7", "/shared", "/scratch", other, 0);
	target_init(&t, &m);
	TEST_INTEQ(options_diff(&t, &mi.v[2], &sb), 3);
	TEST_STREQ(sb_str(&sb), "want vers=4, mounted vers=3; want nconnect=4, mounted nconnect=8; "
		   "want soft, mounted hard");
	sb_reset(&sb);
	target_free(&t);
	mount_fini(&m);

	mount_init(&m, "acct.blob.core.windows.net", "/acct/c", "/mnt/my data", v41, 0);
	target_init(&t, &m);
	TEST_INTEQ(options_diff(&t, &mi.v[3], &sb), 0);
	target_free(&t);
	mount_fini(&m);

	mount_init(&m, "acct.blob.core.windows.net", "/acct/c", "/mnt/my data", v42, 0);
	target_init(&t, &m);
	TEST_INTEQ(options_diff(&t, &mi.v[3], &sb), 2);
	TEST_STREQ(sb_str(&sb), "want rw, mounted ro; want vers=4.2, mounted vers=4.1");
	target_free(&t);
	mount_fini(&m);
	sb_free(&sb);
	mountinfo_free(&mi);
	report_free(&r);
}

static void test_classify(void)
{
	static const struct {
		const char *err;
		int code;
		bool timed_out;
		enum nfs_err want;
	} cases[] = {
		/* as printed by mount.nfs on this machine (kernel without NFS) */
		{ "mount.nfs: No such device\n", 32, false, NE_NODEV },
		{ "mount: /scratch: unknown filesystem type 'nfs'.\n", 32, false, NE_NODEV },
		{ "mount: /scratch: bad option; for several filesystems (e.g. nfs, cifs) you might "
		  "need a /sbin/mount.<type> helper program.\n", 32, false, NE_NOHELPER },
		{ "mount.nfs: rpc.statd is not running but is required for remote locking.\n"
		  "mount.nfs: Either use '-o nolock' to keep locks local, or start statd.\n", 32, false, NE_STATD },
		{ "mount.nfs: access denied by server while mounting 10.0.0.7:/shared\n", 32, false, NE_DENIED },
		{ "mount.nfs: mounting 10.0.0.7:/nope failed, reason given by server: No such file or "
		  "directory\n", 32, false, NE_NOEXPORT },
		{ "mount.nfs: Connection timed out\n", 32, false, NE_TIMEOUT },
		{ "", -1, true, NE_TIMEOUT },
		{ "mount.nfs: Connection refused\n", 32, false, NE_UNREACHABLE },
		{ "mount.nfs: something else\n", 32, false, NE_OTHER },
		{ "", 0, false, NE_OK },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct proc_result pr = { 0 };

		pr.err = (char *)(uintptr_t)cases[i].err;
		pr.exit_code = cases[i].code;
		pr.timed_out = cases[i].timed_out;
		TEST_INTEQ(classify_mount(&pr), cases[i].want);
	}
}

static void test_escape(void)
{
	char *e = field_escape("/a b\\c\td");
	char *u = mounts_unescape(e, strlen(e));

	TEST_STREQ(e, "/a\\040b\\134c\\011d");
	TEST_STREQ(u, "/a b\\c\td");
	free(e);
	free(u);
	u = mounts_unescape("x\\04", 4);         /* truncated escape stays as is */
	TEST_STREQ(u, "x\\04");
	free(u);
	TEST_CHECK(export_listed("/export  *\n/other\n", "/export"));
	TEST_CHECK(export_listed("/export  *\n/other\n", "/other/sub"));
	TEST_CHECK(!export_listed("/export  *\n/other\n", "/exp"));
	TEST_CHECK(!export_listed("/export  *\n/other\n", "/exportx"));
	TEST_CHECK(export_listed("/\n", "/anything"));
	TEST_CHECK(!export_listed("", "/export"));
}

/* wait: 0s is one probe: no retry, however the server answers. */
static void test_wait_zero(void)
{
	struct spec_nfs_mount m;
	struct nfs_target t;
	struct nfs_probe_result pr;
	struct ctx c;
	struct spec *s = spec_new("c1");
	uint64_t waited, t0;
	unsigned attempts;

	ctx_setup(&c, s, "", RUN_APPLY);
	fakes_reset();
	mount_init(&m, "198.18.2.2", "/export", "/scratch", NULL, 0);
	target_init(&t, &m);
	fake_tcp_fail_left = -1;
	t0 = now_ms();
	TEST_INTEQ(probe_wait(&c, &t, &pr, &waited, &attempts), -ECONNREFUSED);
	TEST_INTEQ(attempts, 1);
	TEST_CHECK(now_ms() - t0 < 400);
	fakes_reset();
	TEST_INTEQ(probe_wait(&c, &t, &pr, &waited, &attempts), 0);
	TEST_INTEQ(attempts, 1);
	target_free(&t);
	mount_fini(&m);
	spec_del(s);
}

static void test_wait_loop(void)
{
	static const char *const v4[] = { "vers=4", NULL };
	struct spec_nfs_mount m;
	struct nfs_target t;
	struct report r;
	struct nfs_probe_result pr;
	struct ctx c;
	struct spec *s = spec_new("c1");
	uint64_t waited, t0;
	unsigned attempts;
	char sum[256];

	report_init(&r);
	ctx_setup(&c, s, "", RUN_APPLY);
	fakes_reset();
	/* server comes up on the third attempt */
	mount_init(&m, "198.18.2.2", "/export", "/scratch", NULL, 20000);
	target_init(&t, &m);
	fake_tcp_fail_left = 2;
	TEST_INTEQ(probe_wait(&c, &t, &pr, &waited, &attempts), 0);
	TEST_INTEQ(attempts, 3);
	TEST_INTEQ(fake_tcp_last_port, PORTMAP_PORT);     /* v3 goes through the portmapper */
	TEST_INTEQ(fake_rpc_calls, 1);
	TEST_CHECK(waited >= 1400);                        /* 500 + 1000 ms of backoff */
	target_free(&t);
	mount_fini(&m);

	/* never comes up: gives up after the wait, says host, port and how long */
	fakes_reset();
	mount_init(&m, "198.18.2.2", "/export", "/scratch", v4, 1500);
	target_init(&t, &m);
	fake_tcp_fail_left = -1;
	t0 = now_ms();
	TEST_INTEQ(probe_wait(&c, &t, &pr, &waited, &attempts), -ECONNREFUSED);
	TEST_CHECK(now_ms() - t0 >= 1500 - NFS_LAST_PROBE_MS - 100 && now_ms() - t0 < 3000);
	TEST_INTEQ(fake_tcp_last_port, NFS_PORT);
	TEST_INTEQ(fake_rpc_calls, 0);
	explain_probe(&r, &t, &pr, waited, attempts);
	snprintf(sum, sizeof(sum), "%s", r.n_findings ? r.findings[r.n_findings - 1].text : "");
	TEST_CHECK(strstr(sb_str(&r.details), "/scratch: server 198.18.2.2 unreachable on port 2049 (nfs): "
			  "Connection refused; waited 1.") != NULL);
	TEST_CHECK(strstr(sum, "server 198.18.2.2 unreachable (port 2049 (nfs)) after 1.") != NULL);
	target_free(&t);
	mount_fini(&m);

	/*
	 * The wait ends with a probe: a server up only in the last seconds of
	 * the wait is found.  Probes at 0, 0.5, 1.5 and 3.5 s fail; the next
	 * backoff (4 s) would sleep past the 6.5 s wait, so the fifth probe
	 * comes just before its end instead of never.
	 */
	fakes_reset();
	mount_init(&m, "198.18.2.2", "/export", "/scratch", NULL, 6500);
	target_init(&t, &m);
	fake_tcp_fail_left = 4;
	TEST_INTEQ(probe_wait(&c, &t, &pr, &waited, &attempts), 0);
	TEST_INTEQ(attempts, 5);
	TEST_CHECK(waited >= 6500 - NFS_LAST_PROBE_MS - 100);
	target_free(&t);
	mount_fini(&m);

	/*
	 * A missing export is retried: a late head serves its exports late.
	 * Proven with a wait far longer than the first backoff (500 ms) and a
	 * server that has the export on the second answer, so the retry does
	 * not depend on the first attempt and its backoff fitting a short
	 * wait; the first answer is slow, as on a loaded machine.
	 */
	fakes_reset();
	mount_init(&m, "198.18.2.2", "/late", "/scratch", NULL, 20000);
	target_init(&t, &m);
	fake_rpc_err = NE_NOEXPORT;
	fake_rpc_err_left = 1;
	fake_rpc_delay_ms = 150;
	TEST_INTEQ(probe_wait(&c, &t, &pr, &waited, &attempts), 0);
	TEST_INTEQ(attempts, 2);
	TEST_INTEQ(fake_rpc_calls, 2);
	TEST_CHECK(waited >= 500 + 2 * 150);
	target_free(&t);
	mount_fini(&m);

	/* the server answers but never has the export: the list is shown */
	fakes_reset();
	report_free(&r);
	report_init(&r);
	mount_init(&m, "198.18.2.2", "/nope", "/scratch", NULL, 600);
	target_init(&t, &m);
	fake_rpc_err = NE_NOEXPORT;
	TEST_INTEQ(probe_wait(&c, &t, &pr, &waited, &attempts), -EACCES);
	TEST_INTEQ(fake_rpc_calls, attempts);   /* each attempt asked; how many fit 600 ms is the scheduler's */
	explain_probe(&r, &t, &pr, waited, attempts);
	snprintf(sum, sizeof(sum), "%s", r.n_findings ? r.findings[r.n_findings - 1].text : "");
	TEST_CHECK(strstr(sb_str(&r.details), "export /nope not found on 198.18.2.2") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "198.18.2.2 exports:\n    /export  *\n    /other\n") != NULL);
	TEST_STREQ(sum, "/scratch: export /nope not found on 198.18.2.2");
	target_free(&t);
	mount_fini(&m);

	/* the module deadline is shorter than the mount's wait: it wins */
	fakes_reset();
	mount_init(&m, "198.18.2.2", "/export", "/scratch", NULL, 60000);
	target_init(&t, &m);
	fake_tcp_fail_left = -1;
	c.deadline_ms = now_ms() + 700;
	t0 = now_ms();
	TEST_CHECK(probe_wait(&c, &t, &pr, &waited, &attempts) < 0);
	TEST_CHECK(now_ms() - t0 < 1500);
	target_free(&t);
	mount_fini(&m);
	report_free(&r);
	spec_del(s);
}

/* A whole run on a fake root: fstab block, idempotence, removal, exports. */
static void test_fake_root(void)
{
	static const char *const anf[] = { "vers=3", "hard", "nconnect=8", "proto=tcp", NULL };
	char root[] = "/tmp/test_nfs.XXXXXX";
	char path[512], *text;
	struct spec *s = spec_new("glocluster");
	struct report r;
	struct ctx c;
	struct stat st1, st2;
	const char *foreign = "# /etc/fstab: static file system information.\n"
		"UUID=1234 / ext4 errors=remount-ro 0 1\n"
		"   # odd spacing stays\n"
		"10.0.0.9:/old /scratch nfs defaults 0 0\n"
		"tmpfs /tmp tmpfs defaults 0 0";   /* no final newline */

	TEST_CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/etc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/self", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/etc/fstab", root);
	spit(path, foreign);
	/* both shares already mounted (fixture mountinfo), so no probe and no mount */
	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
	spit(path, "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
	     "60 25 0:50 / /scratch rw,relatime - nfs 10.0.0.7:/shared rw,vers=3,hard,proto=tcp,nconnect=8\n"
	     "61 25 0:51 / /data rw,relatime - nfs 10.0.0.8:/vol1 rw,vers=3,hard,proto=tcp,nconnect=8\n");

	s->nfs.n_mounts = 2;
	s->nfs.mounts = xcalloc(2, sizeof(*s->nfs.mounts));
	mount_init(&s->nfs.mounts[0], "10.0.0.7", "/shared", "/scratch", NULL, 5000);
	mount_init(&s->nfs.mounts[1], "10.0.0.8", "/vol1", "/data", anf, 5000);
	fakes_reset();
	fake_mode = 0750;

	/* plan: shows the fstab diff, writes nothing */
	ctx_setup(&c, s, root, RUN_PLAN);
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(strstr(sb_str(&r.details), "+++ /etc/fstab (planned)") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "+10.0.0.7:/shared /scratch nfs vers=3,hard,proto=tcp,"
			  "_netdev,nofail,x-systemd.mount-timeout=5s 0 0\n") != NULL);
	snprintf(path, sizeof(path), "%s/etc/fstab", root);
	text = slurp(path);
	TEST_STREQ(text, foreign);
	free(text);
	report_free(&r);

	/* apply: the block is appended, other lines kept byte for byte */
	fake_inspect_calls = 0;
	ctx_setup(&c, s, root, RUN_APPLY);
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_INTEQ(fake_tcp_calls, 0);
	TEST_INTEQ(fake_inspect_calls, 2);
	TEST_CHECK(!fake_inspect_wrote);        /* already mounted: the share is not written */
	text = slurp(path);
	TEST_STREQ(text, "# /etc/fstab: static file system information.\n"
		   "UUID=1234 / ext4 errors=remount-ro 0 1\n"
		   "   # odd spacing stays\n"
		   "10.0.0.9:/old /scratch nfs defaults 0 0\n"
		   "tmpfs /tmp tmpfs defaults 0 0\n"
		   "# BEGIN hpcinit glocluster\n"
		   "10.0.0.7:/shared /scratch nfs vers=3,hard,proto=tcp,_netdev,nofail,"
		   "x-systemd.mount-timeout=5s 0 0\n"
		   "10.0.0.8:/vol1 /data nfs vers=3,hard,nconnect=8,proto=tcp,_netdev,nofail,"
		   "x-systemd.mount-timeout=5s 0 0\n"
		   "# END hpcinit glocluster\n");
	free(text);
	/* the foreign /scratch line is reported, not touched; 0750 is reported, not chmod'ed */
	TEST_CHECK(strstr(sb_str(&r.details), "another line (10.0.0.9:/old) also mounts /scratch") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "mode 0750") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "chmod 0755 /data") != NULL);
	TEST_STREQ(r.summary, "2 mounts: 2 ok");
	TEST_INTEQ(r.changed.n, 1);
	if (r.changed.n)
		TEST_STREQ(r.changed.v[0], "/etc/fstab");
	report_free(&r);

	/* again: nothing changes, the file is not rewritten */
	TEST_INTEQ(stat(path, &st1), 0);
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_OK);
	TEST_INTEQ(r.changed.n, 0);
	TEST_INTEQ(stat(path, &st2), 0);
	TEST_CHECK(st1.st_ino == st2.st_ino && st1.st_mtim.tv_nsec == st2.st_mtim.tv_nsec);
	report_free(&r);

	/* check: in sync */
	ctx_setup(&c, s, root, RUN_CHECK);
	report_init(&r);
	TEST_INTEQ(nfs_check(&c, &r), 0);
	TEST_INTEQ(r.status, ST_OK);
	TEST_CHECK(!fake_inspect_wrote);        /* check never writes, not even a probe file */
	report_free(&r);

	/* a mount removed from the spec: its line goes, the rest stays */
	mount_fini(&s->nfs.mounts[1]);
	s->nfs.n_mounts = 1;
	ctx_setup(&c, s, root, RUN_CHECK);
	report_init(&r);
	TEST_INTEQ(nfs_check(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(strstr(sb_str(&r.details), "managed lines for cluster glocluster are stale") != NULL);
	report_free(&r);
	ctx_setup(&c, s, root, RUN_APPLY);
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	report_free(&r);
	text = slurp(path);
	TEST_CHECK(text && strstr(text, "/data") == NULL);
	TEST_CHECK(text && strncmp(text, foreign, strlen(foreign)) == 0);
	free(text);

	/* wrong options on a mounted share: drift in check, degraded in apply, no remount */
	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
	spit(path, "60 25 0:50 / /scratch rw,relatime - nfs 10.0.0.7:/shared rw,vers=4.2,hard,proto=tcp\n");
	ctx_setup(&c, s, root, RUN_CHECK);
	report_init(&r);
	TEST_INTEQ(nfs_check(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(strstr(sb_str(&r.details), "want vers=3, mounted vers=4.2") != NULL);
	report_free(&r);
	ctx_setup(&c, s, root, RUN_APPLY);
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_DEGRADED);
	report_free(&r);

	/* not mounted, server never answers: failed after the wait; fstab stays written */
	spit(path, "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
	s->nfs.mounts[0].wait_ms = 600;
	fake_tcp_fail_left = -1;
	report_init(&r);
	TEST_CHECK(nfs_apply(&c, &r) < 0);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_CHECK(strstr(r.summary, "/scratch: server 10.0.0.7 unreachable (port 111 (portmapper))") != NULL);
	/* findings are data: a stable tag and the severity, the text the summary shows */
	TEST_INTEQ(r.n_findings, 1);
	TEST_STREQ(r.findings[0].tag, "nfs.server.unreachable");
	TEST_INTEQ(r.findings[0].sev, ST_FAILED);
	TEST_CHECK(strncmp(r.summary, r.findings[0].text, strlen(r.findings[0].text)) == 0);
	snprintf(path, sizeof(path), "%s/scratch", root);
	TEST_INTEQ(stat(path, &st1), 0);        /* the mount point was created */
	TEST_CHECK(S_ISDIR(st1.st_mode) && (st1.st_mode & 07777) == 0755);
	report_free(&r);

	/* server up, fake root, no HPCINIT_MOUNT_PROG: says what it would run */
	fake_tcp_fail_left = 0;
	unsetenv("HPCINIT_MOUNT_PROG");
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	snprintf(path, sizeof(path), "fake root: not mounting; would run: mount -t nfs -o "
		 "vers=3,hard,proto=tcp 10.0.0.7:/shared %s/scratch", root);
	TEST_CHECK(strstr(sb_str(&r.details), path) != NULL);
	report_free(&r);

	/* a mount program that works (a fake: it adds the mount to the fixture) */
	snprintf(path, sizeof(path), "%s/fake-mount", root);
	{
		char *script = xasprintf("#!/bin/sh\necho \"61 25 0:51 / /scratch rw - nfs $5 rw,$4\" "
					 ">>%s/proc/self/mountinfo\n", root);

		spit(path, script);
		free(script);
	}
	chmod(path, 0755);
	setenv("HPCINIT_MOUNT_PROG", path, 1);
	fake_inspect_wrote = false;
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_STREQ(r.summary, "1 mount: 0 ok, 1 mounted");
	TEST_CHECK(fake_inspect_wrote);         /* a fresh rw mount gets a write probe */
	report_free(&r);
	/* root squashed (the NFS default): said, with the reason, as information, not degraded */
	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
	spit(path, "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
	fake_write_err = EACCES;
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(strstr(sb_str(&r.details), "root cannot write to the share (create a probe file: "
			  "Permission denied)") != NULL);
	TEST_INTEQ(r.n_findings, 1);
	if (r.n_findings == 1) {
		TEST_STREQ(r.findings[0].tag, "nfs.mounted.root-cannot-write");
		TEST_INTEQ(r.findings[0].sev, ST_OK);
	}
	report_free(&r);
	fake_write_err = 0;
	spit(path, "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n");

	/* the mount program fails like this machine's mount.nfs: ENODEV is explained */
	snprintf(path, sizeof(path), "%s/fake-mount", root);
	spit(path, "#!/bin/sh\necho 'mount.nfs: No such device' >&2\nexit 32\n");
	chmod(path, 0755);
	setenv("HPCINIT_MOUNT_PROG", path, 1);
	report_init(&r);
	TEST_CHECK(nfs_apply(&c, &r) < 0);
	TEST_STREQ(r.summary, "/scratch: kernel has no NFS client support (ENODEV)");
	TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, "nfs.mount.no-kernel-nfs") == 0);
	TEST_CHECK(strstr(sb_str(&r.details), "the kernel has no NFS client support (mount: mount.nfs: "
			  "No such device; ENODEV") != NULL);
	report_free(&r);
	/* each failure mount.nfs names is its own finding (the tags index the tests) */
	{
		static const struct { const char *says, *tag; } fails[] = {
			{ "mount: wrong fs type, bad option, bad superblock on 10.0.0.7:/shared, missing "
			  "codepage or helper program, or other error", "nfs.mount.no-mount-nfs" },
			{ "mount.nfs: rpc.statd is not running but is required for remote locking.",
			  "nfs.mount.no-statd" },
			{ "mount.nfs: access denied by server while mounting 10.0.0.7:/shared", "nfs.mount.denied" },
			{ "mount.nfs: mounting 10.0.0.7:/shared failed, reason given by server: No such file or "
			  "directory", "nfs.mount.no-export" },
			{ "mount.nfs: Connection timed out", "nfs.mount.timeout" },
			{ "mount.nfs: Connection refused", "nfs.mount.unreachable" },
		};
		for (size_t i = 0; i < sizeof(fails) / sizeof(fails[0]); i++) {
			char *script = xasprintf("#!/bin/sh\necho '%s' >&2\nexit 32\n", fails[i].says);

			spit(path, script);
			free(script);
			report_init(&r);
			TEST_CHECK(nfs_apply(&c, &r) < 0);
			TEST_INTEQ(r.status, ST_FAILED);
			TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, fails[i].tag) == 0);
			if (r.n_findings != 1 || strcmp(r.findings[0].tag, fails[i].tag) != 0)
				fprintf(stderr, "  mount says '%s': %s, not %s\n", fails[i].says,
					r.n_findings ? r.findings[0].tag : "no finding", fails[i].tag);
			report_free(&r);
		}
	}
	/* a mount program that cannot be started */
	setenv("HPCINIT_MOUNT_PROG", "/nonexistent/mount", 1);
	report_init(&r);
	TEST_CHECK(nfs_apply(&c, &r) < 0);
	TEST_CHECK(r.n_findings == 1 && strcmp(r.findings[0].tag, "nfs.mount.cannot-run") == 0);
	if (r.n_findings)
		fprintf(stderr, "  no mount program: %s\n", r.findings[0].tag);
	report_free(&r);
	unsetenv("HPCINIT_MOUNT_PROG");

	/* a mount removed entirely: the block goes, the file is as it was (plus a final newline) */
	mount_fini(&s->nfs.mounts[0]);
	s->nfs.n_mounts = 0;
	report_init(&r);
	TEST_INTEQ(nfs_apply(&c, &r), 0);
	report_free(&r);
	snprintf(path, sizeof(path), "%s/etc/fstab", root);
	text = slurp(path);
	TEST_CHECK(text && strncmp(text, foreign, strlen(foreign)) == 0);
	TEST_CHECK(text && strstr(text, "hpcinit") == NULL);
	free(text);

	rm_rf(root);
	spec_del(s);
}
static void test_timeout(void)
{
	struct spec *s = spec_new("c");

	TEST_INTEQ(nfs_timeout_ms(s), 30000);
	s->nfs.n_mounts = 2;
	s->nfs.mounts = xcalloc(2, sizeof(*s->nfs.mounts));
	mount_init(&s->nfs.mounts[0], "h", "/a", "/a", NULL, 3000);
	mount_init(&s->nfs.mounts[1], "h", "/b", "/b", NULL, WAIT_UNSET);
	TEST_INTEQ(nfs_timeout_ms(s), 30000 + 3000 + 5 * 60 * 1000 +
		   2 * (NFS_MOUNT_TIMEOUT_MS + 2 * NFS_INSPECT_TIMEOUT_MS));
	spec_del(s);
}


/* has_tag: r's findings include tag (each printed when not) */
static bool has_tag(const struct report *r, const char *tag)
{
	for (size_t i = 0; i < r->n_findings; i++)
		if (strcmp(r->findings[i].tag, tag) == 0)
			return true;
	fprintf(stderr, "  no finding %s; the findings:\n", tag);
	for (size_t i = 0; i < r->n_findings; i++)
		fprintf(stderr, "    %s: %s\n", r->findings[i].tag, r->findings[i].text);
	return false;
}

/* tag_run MODE, with the fixture mountinfo MI: the report's findings for one mount at PATH */
static void tag_run(struct report *r, const char *root, const char *mi, const char *mpath, enum run_mode mode)
{
	static const char *const v3[] = { "vers=3", "hard", "proto=tcp", NULL };
	struct spec *s = spec_new("glocluster");
	char path[512];
	struct ctx c;

	snprintf(path, sizeof(path), "%s/proc/self/mountinfo", root);
	spit(path, mi);
	s->nfs.n_mounts = 1;
	s->nfs.mounts = xcalloc(1, sizeof(*s->nfs.mounts));
	mount_init(&s->nfs.mounts[0], "10.0.0.7", "/shared", mpath, v3, 2000);
	ctx_setup(&c, s, root, mode);
	report_init(r);
	if (mode == RUN_CHECK)
		nfs_check(&c, r);
	else
		nfs_apply(&c, r);
	spec_free(s);
}

/* Each finding of a mount and its mount point, by its tag (the tags index the tests). */
static void test_finding_tags(void)
{
	static const char *const root_line = "25 1 8:1 / / rw - ext4 /dev/sda1 rw\n";
	char root[] = "/tmp/test_nfs_tags.XXXXXX", path[600], mi[512];
	struct nfs_target t;
	struct spec_nfs_mount m;
	struct nfs_probe_result pr;
	struct report r;

	TEST_CHECK(mkdtemp(root) != NULL);
	snprintf(path, sizeof(path), "%s/etc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc", root);
	mkdir(path, 0755);
	snprintf(path, sizeof(path), "%s/proc/self", root);
	mkdir(path, 0755);
	snprintf(mi, sizeof(mi), "%s60 25 0:50 / /scratch rw,relatime - nfs 10.0.0.7:/shared "
		 "rw,vers=3,hard,proto=tcp\n", root_line);

	/* mounted, and the probe of it does not come back */
	fakes_reset();
	fake_inspect_rc = -ETIMEDOUT;
	tag_run(&r, root, mi, "/scratch", RUN_CHECK);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_CHECK(has_tag(&r, "nfs.mounted.not-answering"));
	report_free(&r);
	/* mounted, and stat of it fails */
	fakes_reset();
	fake_stat_err = EIO;
	tag_run(&r, root, mi, "/scratch", RUN_CHECK);
	TEST_CHECK(has_tag(&r, "nfs.mounted.stat-failed"));
	report_free(&r);
	/* mounted with other options than the spec's (vers=4.1 where it says 3) */
	fakes_reset();
	snprintf(mi, sizeof(mi), "%s60 25 0:50 / /scratch rw,relatime - nfs4 10.0.0.7:/shared "
		 "rw,vers=4.1,hard,proto=tcp\n", root_line);
	tag_run(&r, root, mi, "/scratch", RUN_APPLY);
	TEST_CHECK(has_tag(&r, "nfs.mounted.options-differ"));
	report_free(&r);
	/* another filesystem at the mount point */
	fakes_reset();
	snprintf(mi, sizeof(mi), "%s60 25 8:2 / /scratch rw,relatime - ext4 /dev/sdb1 rw\n", root_line);
	tag_run(&r, root, mi, "/scratch", RUN_APPLY);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_CHECK(has_tag(&r, "nfs.mountpoint.busy"));
	report_free(&r);
	/* the mount point is a file; its parent is a file */
	fakes_reset();
	snprintf(path, sizeof(path), "%s/afile", root);
	spit(path, "x\n");
	tag_run(&r, root, root_line, "/afile", RUN_APPLY);
	TEST_CHECK(has_tag(&r, "nfs.mountpoint.not-dir"));
	report_free(&r);
	tag_run(&r, root, root_line, "/afile/scratch", RUN_APPLY);
	TEST_CHECK(has_tag(&r, "nfs.mountpoint.mkdir"));
	report_free(&r);
	/* mounted now, and the write probe of the fresh mount fails (EIO, not a squashed root) */
	fakes_reset();
	fake_write_err = EIO;
	snprintf(path, sizeof(path), "%s/fake-mount", root);
	{
		char *script = xasprintf("#!/bin/sh\necho \"61 25 0:51 / /scratch rw - nfs $5 rw,$4\" "
					 ">>%s/proc/self/mountinfo\n", root);

		spit(path, script);
		free(script);
	}
	chmod(path, 0755);
	setenv("HPCINIT_MOUNT_PROG", path, 1);
	tag_run(&r, root, root_line, "/scratch", RUN_APPLY);
	TEST_CHECK(has_tag(&r, "nfs.mounted.write-failed"));
	report_free(&r);
	unsetenv("HPCINIT_MOUNT_PROG");
	/* mount(8) says it mounted, and mountinfo shows nothing there */
	fakes_reset();
	setenv("HPCINIT_MOUNT_PROG", "/bin/true", 1);
	tag_run(&r, root, root_line, "/scratch", RUN_APPLY);
	TEST_CHECK(has_tag(&r, "nfs.mount.not-visible"));
	report_free(&r);
	unsetenv("HPCINIT_MOUNT_PROG");
	/* /etc/fstab cannot be written (a directory) */
	snprintf(path, sizeof(path), "%s/etc/fstab", root);
	unlink(path);
	mkdir(path, 0755);
	tag_run(&r, root, mi, "/scratch", RUN_APPLY);
	TEST_CHECK(has_tag(&r, "nfs.fstab.write"));
	report_free(&r);

	/* the server's answers before a mount: no such export, permission denied */
	mount_init(&m, "198.18.2.2", "/export", "/scratch", NULL, 1000);
	target_init(&t, &m);
	memset(&pr, 0, sizeof(pr));
	pr.err = NE_NOEXPORT;
	report_init(&r);
	explain_probe(&r, &t, &pr, 1000, 2);
	TEST_CHECK(has_tag(&r, "nfs.server.no-export"));
	report_free(&r);
	pr.err = NE_DENIED;
	report_init(&r);
	explain_probe(&r, &t, &pr, 1000, 2);
	TEST_CHECK(has_tag(&r, "nfs.server.denied"));
	report_free(&r);
	target_free(&t);
	mount_fini(&m);
	rm_rf(root);
}

int main(void)
{
	nfs_io = &fake_ops;
	test_fstab_line();
	test_target_invalid();
	test_options_diff();
	test_classify();
	test_escape();
	test_wait_loop();
	test_wait_zero();
	test_fake_root();
	test_timeout();
	test_finding_tags();
	TEST_EXIT();
}
