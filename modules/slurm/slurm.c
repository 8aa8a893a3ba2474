/* SPDX-License-Identifier: MIT */
/*
 * The slurm step: this node in Slurm, with no central orchestrator.
 *
 * Every node: the munge key from slurm.key_file (root's alone, like
 * cluster.secret_file) in /etc/munge, and munged running with it.
 * A compute node, last in the run, reads the run so far (c->run: the
 * reports of every earlier step) and
 *   - failed: never starts slurmd (a node already registered is drained);
 *   - ready or degraded: registers as a dynamic node (slurmd -Z, configless
 *     --conf-server, features and memory from its facts), then drains itself
 *     with reason "hpcinit:<tags>" when degraded, and resumes a drain that
 *     carries that prefix once ready again; a drain with any other reason
 *     (an admin's) is never touched.
 * hpcinit check runs the same reconciliation without starting anything: it is
 * Slurm's HealthCheckProgram.  hpcinit leave drains, waits for the jobs,
 * stops slurmd and deletes the dynamic node.
 *
 * Every program runs through proc.c (argv, a deadline); nothing is a shell string.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "proc.h"
#include "ib/identity.h"
#include "record.h"
#include "slurm.h"
#include "systemd.h"
#include "number.h"

#define MUNGE_KEY "/etc/munge/munge.key"
#define SLURM_KEY "/etc/slurm/slurm.key"      /* auth/slurm, Slurm 23.11+ */
#define MUNGE_DIR "/run/munge"
#define MUNGE_SOCKET "/run/munge/munge.socket.2"
#define MUNGE_PID "/run/munge/munged.pid"
#define SLURMD_PID "/run/slurmd.pid"
#define SLURMD_UNIT "hpcinit-slurmd"       /* the transient unit under systemd */
#define KEY_MIN 32                          /* munged refuses shorter keys */
#define KEY_MAX 1024
#define CMD_MS 30000u                       /* one scontrol or systemctl at most */
#define LEAVING_REASON SLURM_REASON_PREFIX "leaving"

static bool slurm_enabled(const struct spec *s)
{
	return s->slurm.present;
}

/* the registration's own two minutes, after this node's slot of slurm.register_window */
static uint64_t slurm_timeout_ms(const struct spec *s)
{
	return 120 * 1000 + slurm_window_of(s);
}

/* Run argv under the step's deadline (at most CMD_MS); its exit code, or -errno. */
static int run(const struct ctx *c, const char *const argv[], struct proc_result *res)
{
	uint64_t left = ctx_remaining_ms(c);
	int r;

	if (!left)
		return -ETIMEDOUT;
	r = proc_run(argv, NULL, NULL, left < CMD_MS ? (unsigned)left : CMD_MS, res);
	if (r < 0)
		return r;
	return res->timed_out ? -ETIMEDOUT : res->exit_code;
}

/* The first line of a program's complaint, for a finding. */
static const char *first_line(const struct proc_result *res, char *buf, size_t size)
{
	const char *t = res->err && *res->err ? res->err : res->out ? res->out : "";

	snprintf(buf, size, "%.*s", (int)strcspn(t, "\n"), t);
	return buf[0] ? buf : "no output";
}

static int run_logged(struct ctx *c, struct report *rep, const char *const argv[])
{
	struct proc_result res = { 0 };
	char line[256];
	int r = run(c, argv, &res);

	if (r != 0) {
		char *cmd = argv_render(argv);

		report_detail(rep, "%s: %s", cmd, r < 0 ? strerror(-r) : first_line(&res, line, sizeof(line)));
		free(cmd);
	}
	proc_result_free(&res);
	return r;
}

/* Stop a daemon we may have started: TERM, then wait for it to go (up to 10 s). */
static void stop_pid(const struct ctx *c, const char *pidfile, const char *comm)
{
	pid_t pid = daemon_pid(c, pidfile, comm, 0, NULL, 0);
	uint64_t delay = 50, until = now_ms() + 10000;

	if (!pid || kill(pid, SIGTERM) < 0)
		return;
	while (daemon_pid(c, pidfile, comm, 0, NULL, 0) == pid && now_ms() < until) {
		if (!ctx_backoff(c, &delay, 200))
			break;
	}
}

/* ---- the key -------------------------------------------------------------- */

/*
 * The key must be root's alone, as cluster.secret_file: a regular file (not a
 * symlink) owned by root, no group or other bits, checked and read through
 * one descriptor.  It is never logged, diffed or put in a record.
 */
static int read_key(const struct ctx *c, struct report *rep, char **ret, size_t *ret_len)
{
	const char *path = c->spec->slurm.key_file;
	char *hp = ctx_path(c, path), *buf;
	struct stat st;
	ssize_t k;
	size_t n = 0;
	int fd = open(hp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);

	free(hp);
	if (fd < 0) {
		int e = errno;

		report_finding(rep, ST_FAILED, "slurm.key.missing", "slurm.key_file %s: %s; write it on every "
			       "node as the cluster secret is written (the same bytes, mode 0600, owned by root)",
			       path, e == ELOOP ? "is a symbolic link; refused" : strerror(e));
		return -e;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077) || st.st_uid != 0) {
		report_finding(rep, ST_FAILED, "slurm.key.unsafe", "slurm.key_file %s: must be a regular file "
			       "owned by root, not readable by group or others (uid %u, mode %04o); "
			       "chown root and chmod 600 it", path, (unsigned)st.st_uid,
			       (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	buf = xmalloc(KEY_MAX + 1);
	while (n <= KEY_MAX && (k = read(fd, buf + n, KEY_MAX + 1 - n)) != 0) {
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	if (n < KEY_MIN || n > KEY_MAX) {
		report_finding(rep, ST_FAILED, "slurm.key.size", "slurm.key_file %s: needs %d to %d bytes; "
			       "generate the key once, on your workstation (dd if=/dev/urandom bs=128 count=1 | "
			       "base64 -w0), and put the same value in every node's custom-data: a key made on "
			       "this node alone is not the cluster's", path, KEY_MIN, KEY_MAX);
		explicit_bzero(buf, KEY_MAX + 1);
		free(buf);
		return -EINVAL;
	}
	*ret = buf;
	*ret_len = n;
	return 0;
}

/*
 * Where slurm.auth puts the key, for whom: munge's key for munged
 * (munge:munge 0400, as Slurm's authentication guide says), or Slurm's own
 * (auth/slurm, Slurm 23.11 and later) for slurmctld and slurmd, owned by
 * SlurmUser with mode 0600 (the Debian packages' SlurmUser is "slurm").
 */
struct key_dest {
	const char *path, *user, *what, *package, *missing_tag;
	mode_t mode;
};

static const struct key_dest *key_dest(const struct spec *s)
{
	static const struct key_dest munge = { MUNGE_KEY, "munge", "munge", "munge", "slurm.munge.missing",
						 0400 };
	static const struct key_dest slurm = { SLURM_KEY, "slurm", "auth/slurm", "slurmd", "slurm.user.missing",
						 0600 };

	return s->slurm.auth == SLURM_AUTH_SLURM ? &slurm : &munge;
}

/* The key where slurm.auth says; *changed when it was not there as is. */
static int install_key(struct ctx *c, struct report *rep, bool *changed)
{
	const struct key_dest *d = key_dest(c->spec);
	char *key = NULL, *old = NULL, *hp;
	size_t len = 0, old_len = 0;
	uid_t uid;
	gid_t gid;
	struct stat st;
	bool same;
	int r = 0;

	*changed = false;
	if (!c->spec->slurm.key_file)
		return 0;
	r = fs_lookup_user(c, d->user, &uid, &gid, NULL);
	if (r < 0) {
		report_finding(rep, ST_FAILED, d->missing_tag, "no user %s for the %s key: install %s "
			       "(Debian, Ubuntu: apt-get install %s)", d->user, d->what, d->package, d->package);
		return r;
	}
	r = read_key(c, rep, &key, &len);
	if (r < 0)
		return r;
	hp = ctx_path(c, d->path);
	same = lstat(hp, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == uid && st.st_gid == gid &&
	       (st.st_mode & 07777) == d->mode && fs_read(c, d->path, &old, &old_len) == 0 &&
	       old_len == len && memcmp(old, key, len) == 0;
	free(hp);
	if (old)
		explicit_bzero(old, old_len);
	free(old);
	if (!same) {
		*changed = true;
		if (!ctx_may_write(c)) {
			/* never fs_write here: plan would print the key in its diff */
			report_finding(rep, ST_CHANGED, "slurm.key.differs", "%s: not slurm.key_file's key "
				       "(or not %s's alone, %04o)", d->path, d->user, (unsigned)d->mode);
		} else {
			r = fs_write(c, rep, d->path, key, len, d->mode, uid, gid);
			if (r >= 0)
				report_finding(rep, ST_CHANGED, "slurm.key.installed", "%s: slurm.key_file's key "
					       "installed (%s, %s %04o)", d->path, d->what, d->user, (unsigned)d->mode);
		}
	}
	explicit_bzero(key, len);
	free(key);
	if (r < 0 || !ctx_may_write(c))
		return r < 0 ? r : 0;
	if (c->spec->slurm.auth == SLURM_AUTH_SLURM || !services_live(c))
		return 0;       /* no daemon of its own (slurmd reads it when it starts); --root: slurm_run */
	/* munged, with this key */
	if (systemd_booted(c)) {
		const char *argv[] = { "systemctl", *changed ? "restart" : "start", "munge.service", NULL };

		r = run_logged(c, rep, argv);
	} else {
		const char *argv[] = { "setpriv", "--reuid=munge", "--regid=munge", "--clear-groups",
				       "/usr/sbin/munged", NULL };

		if (*changed)
			stop_pid(c, MUNGE_PID, "munged");
		if (daemon_pid(c, MUNGE_PID, "munged", 0, NULL, 0))
			return 0;
		r = fs_mkdir_p(c, rep, MUNGE_DIR, 0755, uid, gid);
		if (r >= 0)
			r = run_logged(c, rep, argv);
	}
	if (r != 0) {
		report_finding(rep, ST_FAILED, "slurm.munge.start", "munged did not start with the new key");
		return r < 0 ? r : -EIO;
	}
	return 0;
}

/* ---- readiness: the run so far --------------------------------------------- */

/*
 * The worst status of the steps before this one in this run, and the tags of
 * their findings of that status (a step without one: "<step>.failed").
 * *ran false: no earlier step ran.
 *
 * In hpcinit check, drift (what apply would quietly restore: a file's mode, a
 * membership file before the next refresh) is no reason to drain: the node's
 * state (status.json, the health answer) stays ready on drift too.  What a job
 * would hit, the steps report as degraded or failed in check (a mount gone:
 * nfs.mount.absent; a job's memlock below the spec: memlock.job.low).
 */
static enum rstatus readiness(const struct ctx *c, struct strlist *tags, bool *ran)
{
	const struct run_so_far *run = c->run;
	enum rstatus worst = ST_OK;

	*ran = false;
	for (size_t i = 0; run && i < run->n; i++) {
		const struct report *r = &run->reports[i];
		const struct module *m = run->steps[i];
		enum rstatus st = r->status;

		if (!run->ran[i] || st == ST_SKIPPED)
			continue;
		*ran = true;
		if (st < ST_DEGRADED || st < worst)
			continue;
		if (st > worst) {
			strlist_free(tags);
			worst = st;
		}
		{
			size_t before = tags->n;

			for (size_t j = 0; j < r->n_findings; j++)
				if (r->findings[j].sev == st && !r->findings[j].cluster)
					strlist_push(tags, r->findings[j].tag);
			if (tags->n == before)
				strlist_push_take(tags, xasprintf("%s.%s", m->name, st == ST_FAILED ? "failed" : "degraded"));
		}
	}
	return worst;
}

/* ---- scontrol -------------------------------------------------------------- */

static const char *node_name(const struct ctx *c, char *buf, size_t size)
{
	return node_hostname(c, buf, size);
}

/* What the controller says about this node; -errno when it cannot be asked. */
static int query(const struct ctx *c, const char *name, struct slurm_node *ret)
{
	const char *argv[] = { "scontrol", "--oneliner", "show", "node", name, NULL };
	struct proc_result res = { 0 };
	int r = run(c, argv, &res);

	if (r >= 0) {
		/* "Node X not found" comes on stderr with exit 1 */
		r = slurm_parse_node(r == 0 ? res.out : res.err, ret);
	}
	proc_result_free(&res);
	return r;
}

static int update(struct ctx *c, struct report *rep, const char *name, const char *state, const char *reason)
{
	char *n = xasprintf("nodename=%s", name), *s = xasprintf("state=%s", state);
	char *why = reason ? xasprintf("reason=%s", reason) : NULL;
	const char *argv[] = { "scontrol", "update", n, s, why, NULL };
	int r = run_logged(c, rep, argv);

	free(n);
	free(s);
	free(why);
	return r;
}

/*
 * Make the node's drain say what the run found: drained with want (NULL: the
 * node is ready) when hpcinit owns the drain or there is none; an admin's
 * drain is left alone.
 */
static int reconcile(struct ctx *c, struct report *rep, const char *name, const struct slurm_node *n,
		     const char *want)
{
	/*
	 * In hpcinit check (the HealthCheckProgram) a drain or resume is the
	 * check's answer, not drift: a node whose check only resumed its own
	 * drain is healthy now and exits 0; one it drained exits 1 through
	 * the step that failed or drifted.
	 */
	enum rstatus done = c->mode == RUN_CHECK ? ST_OK : ST_CHANGED;

	if (!n->found)
		return 0;
	if (n->drain && !slurm_reason_ours(n->reason)) {
		report_finding(rep, ST_OK, "slurm.drain.admin", "%s: drained by someone else (reason "
			       "\"%s\"): left alone", name, n->reason);
		return 0;
	}
	if (want && (!n->drain || strcmp(n->reason, want) != 0)) {
		if (ctx_may_write(c) || c->mode == RUN_CHECK) {
			if (update(c, rep, name, "drain", want) != 0) {
				report_finding(rep, ST_FAILED, "slurm.drain.failed", "%s: cannot drain", name);
				return -EIO;
			}
		}
		report_finding(rep, done, "slurm.drained", "%s: %s with reason %s", name,
			       c->mode == RUN_PLAN ? "would drain" : "drained", want);
		if (done == ST_OK)      /* check: the slurm row says what it did */
			report_set(rep, rep->status, "%s: drained with reason %s", name, want);
	} else if (!want && n->drain) {
		if (ctx_may_write(c) || c->mode == RUN_CHECK) {
			if (update(c, rep, name, "resume", NULL) != 0) {
				report_finding(rep, ST_FAILED, "slurm.resume.failed", "%s: cannot resume", name);
				return -EIO;
			}
		}
		report_finding(rep, done, "slurm.resumed", "%s: %s (was %s)", name,
			       c->mode == RUN_PLAN ? "would resume" : "resumed", n->reason);
		if (done == ST_OK)
			report_set(rep, rep->status, "%s: resumed (was %s)", name, n->reason);
	}
	return 0;
}

/* ---- registering ----------------------------------------------------------- */

/*
 * The InfiniBand domain of this node's fabric, as its own record carries it
 * (discovery publishes the rdma step's fabric identity): the same word the
 * hostfiles use per domain.  NULL without discovery, rdma or a known domain.
 */
static char *ib_domain(const struct ctx *c)
{
	const struct peerset *ps = c->out ? c->out->peers : NULL;

	for (size_t i = 0; ps && i < ps->n; i++)
		if (ps->v[i].self)
			return rdma_peer_domain(&ps->v[i]);
	return NULL;
}

static char *vm_size(const struct ctx *c)
{
	char *text = NULL;
	size_t n;

	if (fs_read(c, SLURM_VM_SIZE_FACT, &text, &n) < 0)
		return NULL;
	text[strcspn(text, " \t\r\n")] = '\0';
	return text;
}

/* ---- GPUs and versions ------------------------------------------------------ */

/*
 * This node's gres.conf lines (SLURM_GRES_INCLUDE), written atomically
 * before slurmd starts: the device files of the GPUs the gpu step found, or
 * a comment on a node without any, so that a head whose gres.conf includes
 * the file never leaves a node without it (slurmd retried a missing
 * include for 60 s, then failed).
 */
static int write_gres_conf(struct ctx *c, struct report *rep)
{
	const struct gpu_inventory *inv = c->out ? c->out->gpu : NULL;
	static const struct gpu_inventory none;
	char *text = slurm_gres_conf(inv ? inv : &none);
	int r = fs_mkdir_p(c, rep, "/etc/slurm", 0755, 0, 0);

	if (r >= 0)
		r = fs_write(c, rep, SLURM_GRES_INCLUDE, text, strlen(text), 0644, 0, 0);
	free(text);
	if (r < 0)
		report_finding(rep, ST_FAILED, "slurm.gres.write", "%s: cannot write this node's gres.conf "
			       "lines: %s", SLURM_GRES_INCLUDE, strerror(-r));
	return r < 0 ? r : 0;
}

/* A node short of GPUs is never registered (the gpu step fails it too). */
static bool gres_short(const struct ctx *c, struct report *rep)
{
	const struct gpu_inventory *inv = c->out ? c->out->gpu : NULL;
	size_t n;

	if (!inv)
		return false;
	n = slurm_gres_count(inv);
	if (n && n >= inv->n && n >= inv->expected)
		return false;
	report_finding(rep, ST_FAILED, "slurm.gres.short", "%zu of %zu GPUs usable (%u expected): not "
		       "registered with Slurm; a node short of a GPU is not given jobs that ask for them",
		       n, inv->n > inv->expected ? inv->n : (size_t)inv->expected, inv->expected);
	return true;
}

static int slurm_version_of(const struct ctx *c, const char *const argv[], const char *const envp[],
			    struct slurm_version *v, char *err, size_t size)
{
	struct proc_result res = { 0 };
	uint64_t left = ctx_remaining_ms(c);
	int r = left ? proc_run(argv, envp, NULL, left < CMD_MS ? (unsigned)left : CMD_MS, &res) : -ETIMEDOUT;

	if (r >= 0)
		r = res.timed_out ? -ETIMEDOUT : res.exit_code;
	if (r == 0)
		r = argv[1][0] == '-' ? slurm_version_parse(res.out, v) : slurm_config_version(res.out, v);
	if (r != 0)
		first_line(&res, err, size);
	proc_result_free(&res);
	return r;
}

/*
 * Slurm refuses a slurmd newer than slurmctld (major.minor).  Before
 * registering, ask the controller its version ("scontrol show config":
 * SLURM_VERSION is slurmctld's own; SLURM_CONF_SERVER lets scontrol fetch
 * the configuration from the conf servers as slurmd does) and compare with
 * slurmd -V.  A slurmctld older than this node's client refuses its
 * protocol outright (a 24.11 scontrol against 22.05: "Zero Bytes were
 * transmitted or received"): that is the same rule.  -EPROTO: do not
 * register.  A controller that does not answer at all within most of the
 * step's deadline leaves the version unchecked and slurmd is started as
 * before (it retries until slurmctld is up).
 */
static int version_gate(struct ctx *c, struct report *rep, const char *servers)
{
	const char *vargv[] = { "slurmd", "-V", NULL };
	const char *sargv[] = { "scontrol", "show", "config", NULL };
	char *env_server = xasprintf("SLURM_CONF_SERVER=%s", servers);
	const char *envp[] = { "PATH=/usr/sbin:/usr/bin:/sbin:/bin", "LC_ALL=C", env_server, NULL };
	struct slurm_version mine, ctld;
	char err[256] = "";
	const char *why = NULL;
	uint64_t delay = 200, stop = now_ms() + ctx_remaining_ms(c) * 3 / 4;
	unsigned refused = 0;
	int r;

	if (slurm_version_of(c, vargv, NULL, &mine, err, sizeof(err)) != 0) {
		report_detail(rep, "slurmd -V: %s; its version is not compared with slurmctld's", err);
		free(env_server);
		return 0;
	}
	for (;;) {
		r = slurm_version_of(c, sargv, envp, &ctld, err, sizeof(err));
		if (r == 0 || now_ms() >= stop)
			break;
		why = slurm_refused_protocol(err);
		refused = why ? refused + 1 : 0;
		if (refused >= 3)
			break;
		if (!ctx_backoff(c, &delay, 2000))
			break;
	}
	free(env_server);
	if (r == 0 && slurm_version_newer(&mine, &ctld)) {
		report_finding(rep, ST_FAILED, "slurm.version.newer", "slurmd %s is newer than slurmctld %s: "
			       "Slurm refuses it; install slurmd %u.%02u or upgrade the controller first",
			       mine.text, ctld.text, ctld.major, ctld.minor);
		return -EPROTO;
	}
	if (r == 0) {
		report_detail(rep, "slurmd %s, slurmctld %s", mine.text, ctld.text);
		return 0;
	}
	if (refused >= 3) {
		report_finding(rep, ST_FAILED, "slurm.version.newer", "slurmd %s is newer than slurmctld at %s: "
			       "the controller refused this node's Slurm protocol (scontrol: \"%s\"), as a slurmctld "
			       "older than %u.%02u does (its version cannot be asked from here), and Slurm refuses "
			       "a newer slurmd; install the controller's release of slurmd or upgrade the "
			       "controller first", mine.text, servers, why, mine.major, mine.minor);
		return -EPROTO;
	}
	report_detail(rep, "slurmctld's version unknown (scontrol show config: %s); slurmd %s started unchecked",
		      err, mine.text);
	return 0;
}

/* slurmd -Z --conf-server ... --conf "RealMemory=.. Feature=.. [Gres=..]" -N name, started once. */
static int start_slurmd(struct ctx *c, struct report *rep, const char *name)
{
	const struct spec *s = c->spec;
	struct strlist feats = { 0 };
	struct strbuf servers = { 0 };
	char *meminfo = NULL, *size = vm_size(c), *dom = ib_domain(c), *conf, *gres, *addr = slurm_node_addr(c);
	size_t n;
	uint64_t kib = 0;
	int r;

	if (fs_read_host("/proc/meminfo", 1 << 16, &meminfo, &n) == 0)
		kib = slurm_meminfo_total_kib(meminfo);
	free(meminfo);
	slurm_features(s->cluster.name, size, dom, &s->slurm.features, &feats);
	conf = slurm_node_conf(slurm_real_memory_mb(kib, s->slurm.memory_margin_pct), &feats);
	gres = c->out && c->out->gpu ? slurm_gres(c->out->gpu) : NULL;
	if (gres) {
		char *with = xasprintf("%s Gres=%s", conf, gres);

		free(conf);
		conf = with;
	}
	/* the address goes with the registration: slurmctld resolves no name (arrival.c) */
	if (addr) {
		char *with = xasprintf("NodeAddr=%s NodeHostname=%s %s", addr, name, conf);

		free(conf);
		conf = with;
	} else {
		report_detail(rep, "no address of this node in cluster.network: slurmctld resolves %s", name);
	}
	for (size_t i = 0; i < s->slurm.conf_servers.n; i++)
		sb_printf(&servers, "%s%s", i ? "," : "", s->slurm.conf_servers.v[i]);
	if (gres_short(c, rep)) {
		r = -EPROTO;
		goto out;
	}
	if (ctx_may_write(c) && (r = write_gres_conf(c, rep)) < 0)
		goto out;
	/* before the first word to slurmctld (the version gate's scontrol is one) */
	if ((r = slurm_pace(c, rep, name, addr)) < 0) {
		report_finding(rep, ST_FAILED, "slurm.register.timeout", "%s: the step's deadline passed in "
			       "its slot of slurm.register_window", name);
		goto out;
	}
	if (ctx_may_write(c) && (r = version_gate(c, rep, sb_str(&servers))) < 0)
		goto out;
	if (!ctx_may_write(c)) {
		report_finding(rep, ST_CHANGED, "slurm.register", "would start slurmd -Z --conf-server %s "
			       "--conf \"%s\" -N %s", sb_str(&servers), conf, name);
		r = 0;
	} else if (systemd_booted(c)) {
		/* A transient unit: slurmd gets the unit's limits (locked memory for RDMA), not
		 * hpcinit's, and is not started at the next boot before hpcinit says it may. */
		const char *reset[] = { "systemctl", "reset-failed", SLURMD_UNIT ".service", NULL };
		const char *argv[] = { "systemd-run", "--unit=" SLURMD_UNIT, "--property=LimitMEMLOCK=infinity",
				       "--property=LimitNOFILE=131072", "--property=LimitSTACK=infinity",
				       "--property=KillMode=process", "--property=Delegate=yes", "--property=TasksMax=infinity",
				       /* a configless slurmd that cannot reach slurmctld yet exits
					* (22.05: "failed to load configs"): it tries again */
				       "--property=Restart=on-failure", "--property=RestartSec=5",
				       "--property=After=munge.service", "/usr/sbin/slurmd", "-D", "-s", "-Z",
				       "--conf-server", sb_str(&servers), "--conf", conf, "-N", name, NULL };
		struct proc_result res = { 0 };

		(void)run(c, reset, &res);
		proc_result_free(&res);
		r = run_logged(c, rep, argv);
	} else {
		const char *argv[] = { "slurmd", "-Z", "--conf-server", sb_str(&servers), "--conf", conf,
				       "-N", name, NULL };

		r = run_logged(c, rep, argv);
	}
	if (r != 0)
		report_finding(rep, ST_FAILED, "slurm.slurmd.start", "slurmd did not start (conf server %s)",
			       sb_str(&servers));
	else if (ctx_may_write(c))
		report_finding(rep, ST_CHANGED, "slurm.registered", "slurmd started: %s registers with "
			       "%s as a dynamic node (%s)", name, sb_str(&servers), conf);
out:
	free(gres);
	free(addr);
	strlist_free(&feats);
	sb_free(&servers);
	free(conf);
	free(size);
	free(dom);
	return r == 0 ? 0 : r < 0 ? r : -EIO;
}

/*
 * slurmd writes its pid file only once it has its configuration: a configless
 * slurmd still waiting for slurmctld has none.  Under systemd the transient
 * unit says it runs; starting it a second time would fail ("already exists").
 */
static bool slurmd_running(const struct ctx *c)
{
	const char *argv[] = { "systemctl", "is-active", SLURMD_UNIT ".service", NULL };
	struct proc_result res = { 0 };
	bool r;

	if (daemon_pid(c, SLURMD_PID, "slurmd", 0, NULL, 0))
		return true;
	if (!systemd_booted(c))
		return false;
	/* "activating": between two tries (Restart=on-failure below) */
	r = run(c, argv, &res) >= 0 && res.out &&
	    (strncmp(res.out, "active\n", 7) == 0 || strncmp(res.out, "activating\n", 11) == 0 ||
	     strncmp(res.out, "reloading\n", 10) == 0);
	proc_result_free(&res);
	return r;
}

static void stop_slurmd(struct ctx *c)
{
	if (systemd_booted(c)) {
		const char *stop[] = { "systemctl", "stop", SLURMD_UNIT ".service", NULL };
		struct proc_result res = { 0 };

		(void)run(c, stop, &res);
		proc_result_free(&res);
	} else {
		stop_pid(c, SLURMD_PID, "slurmd");
	}
}

/*
 * Until the controller lists the node and hears from it, or the deadline.
 * slurmd writes its pid file once it has its configuration, just before it
 * registers: wait for that here first (at most 3 s), asking slurmctld nothing,
 * then ask (a poll a second at most: at 1,000 nodes each query is an RPC).
 */
static int wait_registered(struct ctx *c, struct report *rep, const char *name, struct slurm_node *n)
{
	uint64_t delay = 100, local = now_ms() + 3000;

	while (!daemon_pid(c, SLURMD_PID, "slurmd", 0, NULL, 0) && now_ms() < local && ctx_backoff(c, &delay, 200))
		;
	delay = 100;
	for (;;) {
		if (query(c, name, n) == 0 && n->found && !n->down)
			return 0;
		if (!ctx_backoff(c, &delay, 1000)) {
			report_finding(rep, ST_FAILED, "slurm.register.timeout", "%s: slurmd runs but the "
				       "controller does not list the node as responding (state %s); see "
				       "slurmd's log", name, n->found ? n->state : "not found");
			return -ETIMEDOUT;
		}
	}
}

static int slurm_run(struct ctx *c, struct report *rep)
{
	struct strlist tags = { 0 };
	struct slurm_node n = { 0 };
	char host[256], *want = NULL;
	const char *name;
	enum rstatus st;
	bool changed = false, ran;
	int r;

	if (c->mode != RUN_CHECK) {
		r = install_key(c, rep, &changed);
		if (r < 0)
			return r;
	}
	/* --root: the key in the tree, and nothing started, asked or registered here */
	if (services_refused(c, rep, c->spec->cluster.role == ROLE_HEAD ? "munged" : "munged and slurmd")) {
		if (!report_summarize(rep))
			report_set(rep, ST_OK, "%s; not started: --root", !c->spec->slurm.key_file ?
				   "no slurm.key_file" : "key in place");
		return 0;
	}
	/* slurmd reads Slurm's own key when it starts (munged was restarted instead) */
	if (changed && ctx_may_write(c) && c->spec->slurm.auth == SLURM_AUTH_SLURM &&
	    c->spec->cluster.role != ROLE_HEAD && slurmd_running(c)) {
		stop_slurmd(c);
		report_finding(rep, ST_CHANGED, "slurm.slurmd.rekey", "slurmd stopped: it starts "
			       "again with the new auth/slurm key");
	}
	if (c->spec->cluster.role == ROLE_HEAD) {
		if (!rep->n_findings)
			report_set(rep, ST_OK, "head: %s; slurmctld is the head's own (docs/slurm.md)",
				   !c->spec->slurm.key_file ? "no slurm.key_file: the key is not hpcinit's" :
				   c->spec->slurm.auth == SLURM_AUTH_SLURM ? "auth/slurm key in place" :
				   "munge key in place");
		return 0;
	}
	name = node_name(c, host, sizeof(host));
	if (!name)
		return -errno;
	st = readiness(c, &tags, &ran);
	if (!ran) {
		report_set(rep, ST_SKIPPED, "readiness unknown: no earlier step ran in this run; %s is "
			   "neither registered nor drained (run hpcinit without --only)", name);
		return 0;
	}
	if (st >= ST_DEGRADED)
		want = slurm_reason(&tags);
	strlist_free(&tags);

	if (st == ST_FAILED && !slurmd_running(c)) {
		/* Never registered: it stays out of sinfo. */
		report_set(rep, ST_SKIPPED, "not registered with Slurm: the node failed (%s)", want);
		free(want);
		return 0;
	}
	if (!slurmd_running(c)) {
		if (c->mode == RUN_CHECK) {
			report_finding(rep, ST_OK, "slurm.slurmd.stopped", "slurmd is not running on %s: "
				       "nothing to drain or resume", name);
			free(want);
			return 0;
		}
		r = start_slurmd(c, rep, name);
		if (r == 0 && ctx_may_write(c))
			r = wait_registered(c, rep, name, &n);
		if (r < 0 || !ctx_may_write(c)) {
			free(want);
			return r;
		}
	} else if (c->mode == RUN_CHECK && slurm_told_same(c, name, want)) {
		/* steady state: the HealthCheckProgram asks slurmctld nothing (arrival.c) */
		report_set(rep, rep->status, "%s: %s%s, as last told to slurmctld (not asked: no change)", name,
			   want ? "drained with reason " : "ready", want ? want : "");
		free(want);
		return 0;
	} else if ((r = query(c, name, &n)) < 0) {
		report_finding(rep, st == ST_FAILED ? ST_FAILED : ST_DEGRADED, "slurm.controller",
			       "slurmd runs but scontrol cannot ask the controller about %s: %s", name,
			       strerror(-r));
		free(want);
		return 0;
	}
	/* Debian 12's Slurm 22.05 cannot register drained: drain right after registering. */
	r = reconcile(c, rep, name, &n, want);
	if (r == 0 && n.found && ctx_may_write(c))
		r = slurm_fix_addr(c, rep, name, n.addr);
	if (r == 0 && n.found && c->mode != RUN_PLAN)
		slurm_told_write(c, name, want);
	if (r == 0 && !rep->summary[0] && report_problems(rep) == 0 && !want)
		report_set(rep, rep->status, "%s in Slurm: %s", name, n.state);
	free(want);
	return r;
}

/* ---- leaving --------------------------------------------------------------- */

static int slurm_leave(struct ctx *c, struct report *rep)
{
	struct slurm_node n = { 0 };
	char host[256], *arg;
	const char *name = node_name(c, host, sizeof(host));
	uint64_t delay = 500;
	int r;

	if (c->spec->cluster.role == ROLE_HEAD || !name)
		return name ? 0 : -errno;
	if (services_refused(c, rep, "slurmd (leave)")) {
		report_set(rep, ST_OK, "%s: not drained or removed from Slurm: --root", name);
		return 0;
	}
	c->deadline_ms = now_ms() + c->spec->slurm.leave_wait_ms + 2 * CMD_MS;
	slurm_told_write(c, NULL, NULL);        /* whatever it was, it is no more */
	r = query(c, name, &n);
	if (r < 0 || !n.found) {
		report_set(rep, ST_OK, "%s is not in Slurm%s", name, r < 0 ? " (no controller answered)" : "");
		return 0;
	}
	if (!n.drain && update(c, rep, name, "drain", LEAVING_REASON) != 0) {
		report_set(rep, ST_FAILED, "%s: cannot drain", name);
		return -EIO;
	}
	report_finding(rep, ST_CHANGED, "slurm.leave.drained", "%s: drained (%s)", name,
		       n.drain ? n.reason : LEAVING_REASON);
	c->deadline_ms = now_ms() + c->spec->slurm.leave_wait_ms;
	while (query(c, name, &n) == 0 && n.found && n.busy)
		if (!ctx_backoff(c, &delay, 2000)) {
			report_set(rep, ST_FAILED, "%s: jobs still running after slurm.leave_wait; left "
				   "drained (delete it when idle: scontrol delete nodename=%s)", name, name);
			return -ETIMEDOUT;
		}
	c->deadline_ms = now_ms() + 2 * CMD_MS;
	stop_slurmd(c);
	arg = xasprintf("nodename=%s", name);
	{
		const char *argv[] = { "scontrol", "delete", arg, NULL };

		r = run_logged(c, rep, argv);
	}
	free(arg);
	if (r != 0) {
		report_set(rep, ST_FAILED, "%s: drained and slurmd stopped, but scontrol delete failed", name);
		return -EIO;
	}
	report_finding(rep, ST_CHANGED, "slurm.leave.deleted", "%s: idle, slurmd stopped, removed from Slurm",
		       name);
	return 0;
}

static const char *const slurm_needs[] = { NULL };

const struct module slurm_module = {
	.name = "slurm",
	.enabled = slurm_enabled,
	.needs = slurm_needs,
	.timeout_ms = slurm_timeout_ms,
	.check = slurm_run,
	.apply = slurm_run,
	.leave = slurm_leave,
	.inputs = OUT_PEERS | OUT_GPU,  /* its own record (InfiniBand domain); its GPUs (GRES) */
	.isolate = true,        /* slurm.key_file on shared storage, scontrol to slurmctld */
};
