/* SPDX-License-Identifier: MIT */
/* One mount of the nfs step: mount(8), its errors in a user's words, verification. */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "nfs.h"
#include "proc.h"

/* ---- mount(8) errors -------------------------------------------------------- */

static bool contains_ci(const char *hay, const char *needle)
{
	size_t nl = strlen(needle);

	for (; hay && *hay; hay++)
		if (strncasecmp(hay, needle, nl) == 0)
			return true;
	return false;
}

/* Sort mount(8)'s failure into the classes the messages explain. */
static enum nfs_err classify_mount(const struct proc_result *pr)
{
	const char *e = pr->err;

	if (pr->timed_out)
		return NE_TIMEOUT;
	if (pr->exit_code == 0)
		return NE_OK;
	if (contains_ci(e, "no such device") || contains_ci(e, "unknown filesystem type"))
		return NE_NODEV;
	if (contains_ci(e, "helper program") || contains_ci(e, "wrong fs type, bad option"))
		return NE_NOHELPER;
	if (contains_ci(e, "rpc.statd is not running"))
		return NE_STATD;
	if (contains_ci(e, "access denied") || contains_ci(e, "permission denied") ||
	    contains_ci(e, "operation not permitted"))
		return NE_DENIED;
	if (contains_ci(e, "no such file or directory"))
		return NE_NOEXPORT;
	if (contains_ci(e, "timed out"))
		return NE_TIMEOUT;
	if (contains_ci(e, "connection refused") || contains_ci(e, "no route to host") ||
	    contains_ci(e, "network is unreachable") || contains_ci(e, "connection reset"))
		return NE_UNREACHABLE;
	return NE_OTHER;
}

/* The first non-empty line of s, without its newline, malloc'd. */
char *nfs_first_line(const char *s)
{
	while (s && (*s == '\n' || *s == ' '))
		s++;
	if (!s || !*s)
		return xstrdup("(no message)");
	return xstrndup(s, strcspn(s, "\n"));
}

/* mount(8) failures that need something installed or started on this node. */
static const struct {
	enum nfs_err e;
	const char *tag, *what, *extra, *advice, *summary;
} local_causes[] = {
	{ NE_NODEV, "nfs.mount.no-kernel-nfs", "the kernel has no NFS client support",
	  "; ENODEV, 'unknown filesystem type'", "install nfs-common (RHEL: nfs-utils) and load the nfs "
	  "module (modprobe nfs), or use a kernel with NFS", "kernel has no NFS client support (ENODEV)" },
	{ NE_NOHELPER, "nfs.mount.no-mount-nfs", "mount.nfs is missing", "",
	  "install nfs-common (RHEL: nfs-utils)", "mount.nfs missing" },
	{ NE_STATD, "nfs.mount.no-statd", "NFSv3 locking needs rpc.statd, which is not running", "",
	  "start it (systemctl start rpc-statd) or add nolock to the options if locks may stay local "
	  "to each node", "rpc.statd not running (needed for NFSv3 locks)" },
};

/* mount(8)'s failure, in the report: details and one finding (nfs.mount.*). */
static void explain_mount(struct report *r, const struct nfs_target *t, enum nfs_err e,
			  const struct proc_result *pr, unsigned timeout_ms)
{
	char *line = nfs_first_line(pr->err && *pr->err ? pr->err : pr->out);

	for (size_t i = 0; i < sizeof(local_causes) / sizeof(local_causes[0]); i++)
		if (local_causes[i].e == e) {
			report_detail(r, "%s: %s (mount: %s%s): %s", t->path, local_causes[i].what, line,
				      local_causes[i].extra, local_causes[i].advice);
			report_finding(r, ST_FAILED, local_causes[i].tag, "%s: %s", t->path,
				       local_causes[i].summary);
			goto out;
		}
	if (e == NE_DENIED) {
		report_detail(r, "%s: permission denied mounting %s (mount: %s); the export's client list "
			      "must include this node, and sec= must match", t->path, t->source, line);
		report_finding(r, ST_FAILED, "nfs.mount.denied", "%s: permission denied mounting %s",
			       t->path, t->source);
	} else if (e == NE_NOEXPORT) {
		report_detail(r, "%s: %s: no such export or path on the server (mount: %s)",
			      t->path, t->source, line);
		report_finding(r, ST_FAILED, "nfs.mount.no-export", "%s: export %s not found", t->path, t->export);
	} else if (e == NE_TIMEOUT) {
		if (pr->timed_out)
			report_detail(r, "%s: mount of %s timed out after %us and was killed; the server "
				      "answered the probe, so check its load and the proto/nconnect options",
				      t->path, t->source, timeout_ms / 1000);
		else
			report_detail(r, "%s: mount of %s timed out (mount: %s); the server answered the "
				      "probe, so check its load and the proto/nconnect options",
				      t->path, t->source, line);
		report_finding(r, ST_FAILED, "nfs.mount.timeout", "%s: mount timed out", t->path);
	} else if (e == NE_UNREACHABLE) {
		report_detail(r, "%s: mount of %s lost the server (mount: %s)", t->path, t->source, line);
		report_finding(r, ST_FAILED, "nfs.mount.unreachable", "%s: server %s unreachable during mount",
			       t->path, t->host);
	} else {
		report_detail(r, "%s: mount of %s failed (exit %d): %s", t->path, t->source,
			      pr->exit_code, line);
		report_finding(r, ST_FAILED, "nfs.mount.failed", "%s: mount failed: %s", t->path, line);
	}
out:
	free(line);
}

/* ---- one mount --------------------------------------------------------------- */

/* The mount program: HPCINIT_MOUNT_PROG (a test hook) or "mount". */
static const char *mount_prog(void)
{
	const char *p = secure_getenv("HPCINIT_MOUNT_PROG");

	return p && *p ? p : NULL;
}

static void note_mode(struct report *r, const struct nfs_target *t, unsigned mode)
{
	if (!(mode & 0001))
		report_detail(r, "%s: the share's root is mode %04o: users other than its owner and group "
			      "cannot enter it (new Blob NFS containers are 0750); if they should: chmod 0755 %s",
			      t->path, mode, t->path);
}

/*
 * Look at a mounted target: answering, NFS (real root only), writable.
 * Returns the status for this mount.
 */
static enum rstatus verify_mounted(struct ctx *c, struct report *r, const struct nfs_target *t,
				   bool write_probe, bool check_magic)
{
	char *hp = ctx_path(c, t->path);
	struct mp_info mp;
	enum rstatus st = ST_OK;
	int rc = nfs_io->inspect(hp, write_probe, NFS_INSPECT_TIMEOUT_MS, &mp);

	free(hp);
	if (rc == -EBUSY && mp.blocked[0]) {
		report_detail(r, "%s: mounted but not answering: the last probe of it is %s; no new probe "
			      "started: the server is down or the mount is stale; check %s, then umount -f %s "
			      "and run hpcinit apply", t->path, mp.blocked, t->host, t->path);
		report_finding(r, ST_FAILED, "nfs.mounted.not-answering", "%s: mounted but not answering", t->path);
		return ST_FAILED;
	}
	if (rc < 0) {
		report_detail(r, "%s: mounted but not answering within %us (%s): the server is down or the "
			      "mount is stale; check %s, then umount -f %s and run hpcinit apply",
			      t->path, NFS_INSPECT_TIMEOUT_MS / 1000, strerror(-rc), t->host, t->path);
		report_finding(r, ST_FAILED, "nfs.mounted.not-answering", "%s: mounted but not answering", t->path);
		return ST_FAILED;
	}
	if (mp.statfs_err || mp.stat_err) {
		report_detail(r, "%s: cannot stat the mount: %s", t->path,
			      strerror(mp.statfs_err ? mp.statfs_err : mp.stat_err));
		report_finding(r, ST_FAILED, "nfs.mounted.stat-failed", "%s: cannot stat the mount", t->path);
		return ST_FAILED;
	}
	if (check_magic && mp.fstype != NFS_SUPER_MAGIC_) {
		report_detail(r, "%s: statfs reports filesystem type 0x%lx, not NFS (0x%x)", t->path,
			      (unsigned long)mp.fstype, NFS_SUPER_MAGIC_);
		report_finding(r, ST_FAILED, "nfs.mounted.not-nfs", "%s: not an NFS filesystem", t->path);
		return ST_FAILED;
	}
	note_mode(r, t, mp.mode);
	if (write_probe && mp.write_err > 0) {
		if (mp.write_err == EACCES || mp.write_err == EPERM) {
			/*
			 * Root squashed: the NFS default and Blob NFS's mapping, chosen
			 * by the admin; users with access write as before and the
			 * rendezvous tree belongs to the squashed uid (docs/cluster.md).
			 * Found on real VMs (tests/vm --squash): as "degraded" it kept
			 * every compute of a root_squash cluster from being ready.
			 */
			report_detail(r, "%s: root cannot write to the share (%s a probe file: %s): the export "
				      "squashes root (root_squash; Blob NFS can map root to nobody) or the root "
				      "directory's mode denies it; users with access can still write",
				      t->path, mp.write_step, strerror(mp.write_err));
			report_finding(r, ST_OK, "nfs.mounted.root-cannot-write", "%s: root cannot write "
				       "(root squashed)", t->path);
		} else {
			report_detail(r, "%s: the share is mounted rw but a write probe failed (%s: %s)%s",
				      t->path, mp.write_step, strerror(mp.write_err),
				      mp.write_err == EROFS ? "; the server exports it read-only: add ro to "
				      "the options or fix the export" : "");
			report_finding(r, ST_FAILED, "nfs.mounted.write-failed", "%s: write probe failed: %s", t->path,
				       strerror(mp.write_err));
			st = ST_FAILED;
		}
	}
	return st;
}

/*
 * t's share is mounted already (e): verified without a write probe (a
 * re-run must not touch the share, its root's mtime), and options other
 * than the spec's reported, never changed (it would break running jobs).
 */
static enum rstatus check_mounted(struct ctx *c, struct report *r, const struct nfs_target *t,
				  const struct mi_entry *e, bool live)
{
	struct strbuf diff = STRBUF_INIT;
	enum rstatus st = verify_mounted(c, r, t, false, live);

	if (st != ST_FAILED && options_diff(t, e, &diff)) {
		report_detail(r, "%s: mounted with other options than the spec: %s; to change them: "
			      "umount %s && hpcinit apply (not done automatically: it would break "
			      "running jobs)", t->path, sb_str(&diff), t->path);
		if (c->mode == RUN_APPLY) {
			report_finding(r, ST_DEGRADED, "nfs.mounted.options-differ", "%s: wrong mount options", t->path);
			st = st == ST_OK ? ST_DEGRADED : st;
		} else if (st == ST_OK) {
			st = ST_CHANGED;        /* drift */
		}
	}
	if (st == ST_OK)
		report_detail(r, "%s: %s mounted (%s)", t->path, t->source, e->fstype);
	sb_free(&diff);
	return st;
}

/* mount(8) under the step's deadline (cmd: argv as text): 0, or -1 with the failure reported. */
static int run_mount(struct ctx *c, struct report *r, const struct nfs_target *t,
		     const char *const argv[], const char *cmd)
{
	struct proc_result pr;
	uint64_t left = ctx_remaining_ms(c);
	unsigned to = NFS_MOUNT_TIMEOUT_MS;
	enum nfs_err ne;
	int rc;

	if (c->deadline_ms && left < to)
		to = left > 5000 ? (unsigned)left : 5000;
	log_info("%s: running %s", t->path, cmd);
	rc = proc_run(argv, NULL, NULL, to, &pr);
	if (rc < 0) {
		report_detail(r, "%s: cannot run %s: %s%s", t->path, argv[0], strerror(-rc),
			      rc == -ENOENT ? " (install util-linux / mount)" : "");
		report_finding(r, ST_FAILED, "nfs.mount.cannot-run", "%s: cannot run %s", t->path, argv[0]);
		return -1;
	}
	ne = classify_mount(&pr);
	if (ne != NE_OK) {
		explain_mount(r, t, ne, &pr, to);
		report_detail(r, "  ran: %s", cmd);
		proc_result_free(&pr);
		return -1;
	}
	proc_result_free(&pr);
	return 0;
}

enum rstatus mount_one(struct ctx *c, struct report *r, const struct nfs_target *t,
		       bool *ret_not_mounted)
{
	struct mountinfo mi;
	const struct mi_entry *e;
	char *optstr = mount_optstr(t), *hp = ctx_path(c, t->path);
	const char *prog = mount_prog();
	const char *argv[] = { prog ? prog : "mount", "-t", "nfs", "-o", optstr, t->source, hp, NULL };
	char *cmd = NULL;
	enum rstatus st;
	struct stat sb;

	mountinfo_load(c, &mi);
	e = mountinfo_spec_mount(&mi, t->m);
	if (e) {
		st = check_mounted(c, r, t, e, !mi.fixture);
		goto out;
	}
	if ((e = mountinfo_find(&mi, t->path))) {
		report_detail(r, "%s: already has %s (%s) mounted; unmount it or change the nfs.mounts path "
			      "(hpcinit does not stack mounts)", t->path, e->source, e->fstype);
		report_finding(r, ST_FAILED, "nfs.mountpoint.busy", "%s: another filesystem is mounted there", t->path);
		st = ST_FAILED;
		goto out;
	}
	cmd = argv_render(argv);
	*ret_not_mounted = true;
	if (c->mode == RUN_CHECK) {
		report_detail(r, "%s: not mounted (%s)", t->path, t->source);
		st = ST_CHANGED;
		goto out;
	}
	/* The mount point: created when missing, never chmod'ed (it may hold a share's root). */
	if (lstat(hp, &sb) < 0) {
		if (fs_mkdir_p(c, r, t->path, 0755, 0, 0) < 0) {
			report_finding(r, ST_FAILED, "nfs.mountpoint.mkdir", "%s: cannot create the mount point", t->path);
			st = ST_FAILED;
			goto out;
		}
	} else if (!S_ISDIR(sb.st_mode)) {
		report_detail(r, "%s: exists and is not a directory; it cannot be a mount point", t->path);
		report_finding(r, ST_FAILED, "nfs.mountpoint.not-dir", "%s: not a directory", t->path);
		st = ST_FAILED;
		goto out;
	}
	if (c->mode == RUN_PLAN) {
		report_detail(r, "%s: would wait up to %llus for %s, then run: %s", t->path,
			      (unsigned long long)(t->wait_ms / 1000), t->host, cmd);
		st = ST_CHANGED;
		goto out;
	}
	{
		struct nfs_probe_result pr;
		uint64_t waited;
		unsigned attempts;
		char w[32];

		if (probe_wait(c, t, &pr, &waited, &attempts) < 0) {
			explain_probe(r, t, &pr, waited, attempts);
			st = ST_FAILED;
			goto out;
		}
		nfs_fmt_duration(waited, w, sizeof(w));
		if (attempts > 1)
			report_detail(r, "%s: server %s answered after %s (%u attempts)", t->path, t->host,
				      w, attempts);
		if (pr.note[0])
			report_detail(r, "%s: server %s %s", t->path, t->host, pr.note);
		if (!ctx_real_root(c) && !prog) {
			report_detail(r, "%s: fake root: not mounting; would run: %s", t->path, cmd);
			/* what the probe saw of the share's root stands in for the mount's */
			if (pr.have_mode)
				note_mode(r, t, pr.mode);
			st = ST_CHANGED;
			goto out;
		}
	}
	if (run_mount(c, r, t, argv, cmd) < 0) {
		st = ST_FAILED;
		goto out;
	}
	/* Believe the kernel, not mount's exit code. */
	mountinfo_free(&mi);
	mountinfo_load(c, &mi);
	if (!mountinfo_spec_mount(&mi, t->m)) {
		e = mountinfo_find(&mi, t->path);
		report_detail(r, "%s: %s exited 0, but mountinfo shows %s on %s", t->path, argv[0],
			      e ? e->source : "nothing", t->path);
		report_finding(r, ST_FAILED, "nfs.mount.not-visible", "%s: mount not visible after mount(8)", t->path);
		st = ST_FAILED;
		goto out;
	}
	st = verify_mounted(c, r, t, !t->ro, !mi.fixture);
	if (st != ST_FAILED) {
		report_detail(r, "%s: mounted %s (%s)", t->path, t->source, cmd);
		if (st == ST_OK)
			st = ST_CHANGED;
	}
out:
	mountinfo_free(&mi);
	free(cmd);
	free(optstr);
	free(hp);
	return st;
}

/*
 * Lines outside our block that mount the same path: two fstab lines for one
 * mount point make the boot mount twice.  We report them, never edit them.
 */
void foreign_fstab_lines(const struct ctx *c, struct report *r, const char *tag,
				const struct nfs_target *t, size_t n)
{
	char *text = NULL, *rest;
	unsigned lineno = 0;

	if (fs_read(c, "/etc/fstab", &text, NULL) < 0)
		return;
	rest = managed_block_apply(text, tag, NULL);
	for (const char *p = rest; p && *p;) {
		size_t len = strcspn(p, "\n");
		const char *q = p, *end = p + len;

		lineno++;
		while (q < end && (*q == ' ' || *q == '\t'))
			q++;
		if (q < end && *q != '#') {
			const char *f1 = q, *f2;
			size_t l1, l2;

			while (q < end && *q != ' ' && *q != '\t')
				q++;
			l1 = (size_t)(q - f1);
			while (q < end && (*q == ' ' || *q == '\t'))
				q++;
			f2 = q;
			while (q < end && *q != ' ' && *q != '\t')
				q++;
			l2 = (size_t)(q - f2);
			if (l2) {
				char *mp = mounts_unescape(f2, l2);

				for (size_t i = 0; i < n; i++)
					if (strcmp(mp, t[i].path) == 0)
						report_detail(r, "/etc/fstab: another line (%.*s) also mounts %s; "
							      "remove it, or the boot mounts twice (hpcinit "
							      "leaves lines it does not manage alone)",
							      (int)l1, f1, t[i].path);
				free(mp);
			}
		}
		p = *end ? end + 1 : end;
	}
	free(rest);
	free(text);
}

