/* SPDX-License-Identifier: MIT */
/*
 * mpi: the cluster check (hpcinit-mpiverify under mpirun): its command line
 * for each launcher, its output read back, the round-robin round, one run
 * per InfiniBand domain.  The fabric it runs on comes from mpi.c.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "log.h"
#include "hpcinit.h"
#include "mpi.h"
#include "proc.h"
#include "ib/identity.h"
#include "record.h"
#include "number.h"

#define VERIFY_DEFAULT_MS (2 * 60 * 1000)
#define VERIFY_RUN_MAX_MS (5 * 60 * 1000)
#define SOFT_ITERS "50"                 /* round trips a size on a software device (mpi.software_fabric) */
#define SOFT_BW_ITERS "2"               /* and of 4 MiB */

/* Value of key=... in a "k=v k=v" line, malloc'd, or NULL. */
static char *field(const char *line, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = line; p && *p;) {
		p += strspn(p, " ");
		if (strncmp(p, key, kl) == 0 && p[kl] == '=')
			return xstrndup(p + kl + 1, strcspn(p + kl + 1, " \n"));
		p = strchr(p, ' ');
	}
	return NULL;
}

static int count_hosts(const char *text)
{
	int n = 0;

	for (const char *p = text; p && *p;) {
		const char *q = p + strspn(p, " \t");

		if (*q && *q != '#' && *q != '\n')
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

/*
 * Turn the verify program's output into details and a summary.  Returns
 * 1 when a result line was found (the run happened), 0 when not.
 */
static int verify_parse(struct report *r, const char *out, double limit, uint64_t min_bw)
{
	int hellos = 0, pairs = 0, found = 0;

	for (const char *p = out; p && *p;) {
		const char *nl = strchr(p, '\n');
		char *line = xstrndup(p, nl ? (size_t)(nl - p) : strlen(p));

		p = nl ? nl + 1 : NULL;
		if (strncmp(line, "hello ", 6) == 0) {
			hellos++;
		} else if (strncmp(line, "pair ", 5) == 0) {
			char *hosts = field(line, "hosts"), *lat = field(line, "latency_us");
			char *bw = field(line, "bw_MiBps"), *l8 = field(line, "lat8_us"), *l512 = field(line, "lat512_us");
			char *comma = hosts ? strchr(hosts, ',') : NULL;

			if (comma)
				*comma = '\0';
			report_detail(r, "pair %s <-> %s: latency %s us (8 B %s, 512 B %s), bandwidth %s MiB/s at 4 MiB",
				      hosts ? hosts : "?", comma ? comma + 1 : "?", lat ? lat : "?",
				      l8 ? l8 : "?", l512 ? l512 : "?", bw ? bw : "?");
			pairs++;
			free(hosts);
			free(lat);
			free(bw);
			free(l8);
			free(l512);
		} else if (strncmp(line, "result ", 7) == 0) {
			char *st = field(line, "status"), *nodes = field(line, "nodes");
			char *maxl = field(line, "max_latency_us"), *slowest = field(line, "slowest");
			char *minbw = field(line, "min_bw_MiBps"), *host = field(line, "host");
			char *comma = slowest ? strchr(slowest, ',') : NULL;

			if (comma)
				*comma = '\0';
			char *narrowest = field(line, "narrowest"), *rnd = field(line, "round");
			char *rounds = field(line, "rounds");
			char *ncomma = narrowest ? strchr(narrowest, ',') : NULL;
			bool judged = false;

			if (ncomma)
				*ncomma = '\0';
			found = 1;
			if (rnd && rounds)
				report_detail(r, "round %s of %s (round-robin pairs: every pair of nodes is measured "
					      "once in %s runs)", rnd, rounds, rounds);
			double maxl_v = 0, minbw_v = 0;
			bool maxl_ok = maxl && num_double(maxl, 0, 1e12, &maxl_v);
			bool minbw_ok = minbw && num_double(minbw, 0, 1e12, &minbw_v);

			if (st && strcmp(st, "slow") == 0 && limit > 0 && maxl_ok && maxl_v > limit) {
				report_finding(r, ST_FAILED, "mpi.verify.slow-pair", "slow pair %s <-> %s: "
					       "latency %s us is above max_latency_us %g", slowest,
					       comma ? comma + 1 : "?", maxl, limit);
				judged = true;
			}
			if (st && strcmp(st, "slow") == 0 && min_bw && minbw_ok &&
			    minbw_v * 1024.0 * 1024.0 < (double)min_bw) {
				report_finding(r, ST_FAILED, "mpi.verify.low-bandwidth", "narrow pair %s <-> %s: "
					       "bandwidth %s MiB/s at 4 MiB is below min_bandwidth %.1f MiB/s",
					       narrowest ? narrowest : "?", ncomma ? ncomma + 1 : "?", minbw,
					       (double)min_bw / (1024.0 * 1024.0));
				judged = true;
			}
			free(narrowest);
			free(rnd);
			free(rounds);
			if (st && strcmp(st, "slow") == 0 && !judged)
				report_finding(r, ST_FAILED, "mpi.verify.slow-pair", "slow pair %s <-> %s: "
					       "latency %s us (limit %g us)", slowest ? slowest : "?",
					       comma ? comma + 1 : "?", maxl ? maxl : "?", limit);
			else if (st && strcmp(st, "error") == 0)
				report_finding(r, ST_FAILED, "mpi.verify.rank-twice", "two ranks ran on %s: the "
					       "hostfile lists it twice or mpirun did not map by node",
					       host ? host : "?");
			else if (pairs == 0)
				report_set(r, ST_OK, "%s node answered (no pair to measure)",
					   nodes ? nodes : "1");
			else
				report_set(r, ST_OK, "%s nodes answered; %d pairs: max latency %s us "
					   "(%s <-> %s), min bandwidth %s MiB/s", nodes ? nodes : "?",
					   pairs, maxl ? maxl : "?", slowest ? slowest : "?",
					   comma ? comma + 1 : "?", minbw ? minbw : "?");
			free(st);
			free(nodes);
			free(maxl);
			free(slowest);
			free(minbw);
			free(host);
		}
		free(line);
	}
	if (found && hellos)
		report_detail(r, "hello from %d ranks", hellos);
	if (r->status == ST_FAILED)
		report_summarize(r);
	return found;
}

/*
 * What mpirun's stderr says about a failed start: the ssh complaints (its
 * own explanation is a page of boilerplate), else its first lines.
 * Returns the first ssh line (malloc'd) for the summary, or NULL.
 */
static char *launch_failure(struct report *r, const char *err)
{
	static const char *const ssh_says[] = {
		/* "Permission denied (" is ssh's; Open MPI warns "...errno=Permission denied(13)" */
		"ssh:", "Permission denied (", "Host key verification failed",
		"REMOTE HOST IDENTIFICATION HAS CHANGED", "Could not resolve",
	};
	char *first = NULL;
	int shown = 0;

	for (int pass = 0; pass < 2 && !shown; pass++)
		for (const char *p = err; p && *p && shown < 6;) {
			const char *nl = strchr(p, '\n');
			size_t len = nl ? (size_t)(nl - p) : strlen(p);
			bool hit;

			while (len && (p[len - 1] == '\r' || p[len - 1] == ' '))
				len--;          /* ssh ends its messages with \r\n */
			hit = pass == 1 && len && *p != '-';

			for (size_t i = 0; !pass && i < sizeof(ssh_says) / sizeof(*ssh_says); i++)
				if (memmem(p, len, ssh_says[i], strlen(ssh_says[i])))
					hit = true;
			if (hit) {
				report_detail(r, "mpirun said: %.*s", (int)len, p);
				if (!pass && !first)
					first = xstrndup(p, len);
				shown++;
			}
			p = nl ? nl + 1 : NULL;
		}
	return first;
}

/*
 * The launcher daemon a node lacks, "orted" or "prted", or NULL.  mpirun
 * starts its daemon on every node over ssh: Open MPI 4.x's is orted, 5.x's
 * (PRRTE) prted, and neither release has the other's.  On nodes of two
 * releases (Debian 12 has Open MPI 4.1, Debian 13 5.0: tests/vm/cluster.sh
 * --release) the shell there says "orted: command not found" or
 * "/usr/bin/prted: No such file or directory".  Open MPI 5 names the node
 * ("Remote daemon: [...] on node c2"): *node gets it (malloc'd), or NULL
 * (node may be NULL).
 */
static const char *missing_daemon(const char *err, char **node)
{
	static const char *const daemons[] = { "orted", "prted" };
	static const char *const said[] = { ": command not found", ": No such file or directory" };
	const char *d = NULL, *p, *q;

	if (node)
		*node = NULL;
	for (size_t i = 0; !d && i < 2; i++)
		for (p = err; !d && p && (p = strstr(p, daemons[i])); p += 5)
			for (size_t k = 0; k < 2; k++)
				if (strncmp(p + 5, said[k], strlen(said[k])) == 0)
					d = daemons[i];
	if (!d || !node || !(p = strstr(err, "Remote daemon:")))
		return d;
	q = strchr(p, '\n');
	p = memmem(p, q ? (size_t)(q - p) : strlen(p), " on node ", 9);
	if (p && p[9] && !strchr(" \r\n", p[9]))
		*node = xstrndup(p + 9, strcspn(p + 9, " \r\n"));
	return d;
}

/* The finding of an mpirun that gave no result (timed out, or failed to start). */
static void launch_report(struct report *r, const struct proc_result *pr, int attempt)
{
	char *why = launch_failure(r, pr->err), *node = NULL;
	const char *daemon = pr->timed_out || !pr->err ? NULL : missing_daemon(pr->err, &node);

	if (daemon)
		report_finding(r, ST_FAILED, "mpi.verify.mixed-mpi", "mpirun failed: %s has no %s, the "
			       "daemon of this node's Open MPI %s: the nodes run different Open MPI "
			       "releases (4.x starts orted, 5.x prted, neither the other's); run jobs "
			       "among the nodes of one release, or install one MPI on every node",
			       node ? node : "a node", daemon, strcmp(daemon, "orted") ? "5.x" : "4.x");
	else
		report_finding(r, ST_FAILED, pr->timed_out ? "mpi.verify.timeout" : "mpi.verify.launch-failed",
			       "mpirun %s after %d attempt%s: %s", pr->timed_out ? "timed out" : "failed",
			       attempt, attempt > 1 ? "s" : "", why ? why : "see details");
	free(why);
	free(node);
}

/*
 * The verify program, built for the MPI that launches it: hpcinit-mpiverify
 * (Open MPI) or hpcinit-mpiverify-mpich (MPICH, and Intel MPI, which keeps
 * MPICH's ABI).  HPCINIT_MPIVERIFY / HPCINIT_MPIVERIFY_MPICH: a copy the
 * nodes can all read (the tests); else the one beside a binary run from its
 * build tree (proc_build_dir), else LIBEXECDIR's.
 */
static const char *verify_program(enum mpi_launcher l)
{
	const char *p = getenv(l == MPI_OPENMPI ? "HPCINIT_MPIVERIFY" : "HPCINIT_MPIVERIFY_MPICH");

	const char *name = l == MPI_OPENMPI ? "hpcinit-mpiverify" : "hpcinit-mpiverify-mpich";
	const char *dir = proc_build_dir();     /* a binary run from its build tree: the one beside it */
	static char path[PATH_MAX];

	if (p && *p == '/')
		return p;
	snprintf(path, sizeof(path), "%s/%s", dir ? dir : LIBEXECDIR, name);
	return path;
}

/* The launcher of each MPI, and the hostfile format it reads. */
static const char *launcher_prog(enum mpi_launcher l)
{
	return l == MPI_OPENMPI ? "mpirun" : l == MPI_MPICH ? "mpirun.mpich" : "mpiexec.hydra";
}

static const char *launcher_hostfile(enum mpi_launcher l)
{
	return l == MPI_OPENMPI ? "hostfile.openmpi" : "hostfile.mpich";
}

static void argv_add(struct strlist *a, const char *s)
{
	strlist_push(a, s);
}

/* Hydra (MPICH's mpirun.mpich, Intel MPI's mpiexec.hydra): the launcher and its settings. */
static void verify_argv_hydra(const struct fabric *f, enum mpi_launcher l, const char *hostfile, int nodes,
			      struct strlist *a)
{
	char num[32];

	/* One rank a node from the host:N hostfile; its ssh launcher never prompts. */
	argv_add(a, "env");
	argv_add(a, "HYDRA_LAUNCHER_EXTRA_ARGS=-o BatchMode=yes");
	argv_add(a, launcher_prog(l));
	argv_add(a, "-launcher");
	argv_add(a, "ssh");
	argv_add(a, "-f");
	argv_add(a, hostfile);
	snprintf(num, sizeof(num), "%d", nodes);
	argv_add(a, "-n");
	argv_add(a, num);
	argv_add(a, "-ppn");
	argv_add(a, "1");
	if (l == MPI_INTEL) {
		/* Intel MPI 2019+: libfabric; the provider of the profile (untested here). */
		argv_add(a, "-genv");
		argv_add(a, "I_MPI_FABRICS");
		argv_add(a, "shm:ofi");
		argv_add(a, "-genv");
		argv_add(a, "FI_PROVIDER");
		argv_add(a, f->rdma && !f->soft_fabric ? "mlx" : "tcp");
	}
	if (!f->rdma) {
		/*
		 * TCP fabric, one rank a node: UCX over tcp and self only.  With
		 * UCX's default transports MPICH 4.0 (ch4:ucx) left ranks
		 * spinning in MPI_Finalize in about half the runs on the
		 * simulated cluster (tests/cluster/mpi-mpich.sh).
		 */
		argv_add(a, "-genv");
		argv_add(a, "UCX_TLS");
		argv_add(a, "tcp,self");
	}
	if (f->ucx_devices && !f->names_differ) {
		argv_add(a, "-genv");
		argv_add(a, "UCX_NET_DEVICES");
		argv_add(a, f->ucx_devices);
	}
	if (f->ucx_pkey) {
		argv_add(a, "-genv");
		argv_add(a, "UCX_IB_PKEY");
		argv_add(a, f->ucx_pkey);
	}
	for (size_t i = 0; f->soft_fabric && mpi_soft_ucx_env[i]; i++) {
		char *name = xstrndup(mpi_soft_ucx_env[i], strcspn(mpi_soft_ucx_env[i], "="));

		argv_add(a, "-genv");
		argv_add(a, name);
		argv_add(a, strchr(mpi_soft_ucx_env[i], '=') + 1);
		free(name);
	}
}

/* Builds the mpirun command line; exposed to tests through verify.c's inclusion. */
static void verify_argv(const struct ctx *c, const struct fabric *f, const char *hostfile, unsigned long round,
			int nodes, const char *run_as, bool as_root, struct strlist *a)
{
	char num[32];

	enum mpi_launcher l = c->spec->mpi.launcher;

	if (run_as) {
		argv_add(a, "runuser");
		argv_add(a, "-u");
		argv_add(a, run_as);
		argv_add(a, "--");
	}
	if (l != MPI_OPENMPI) {
		verify_argv_hydra(f, l, hostfile, nodes, a);
		goto program;
	}
	argv_add(a, "mpirun");
	if (as_root)
		argv_add(a, "--allow-run-as-root");
	argv_add(a, "--hostfile");
	argv_add(a, hostfile);
	argv_add(a, "--map-by");
	argv_add(a, "node");
	snprintf(num, sizeof(num), "%d", nodes);
	argv_add(a, "-np");
	argv_add(a, num);
	/* Without it every node pins its rank to core 0: ~4 ms instead of ~7 us here. */
	argv_add(a, "--bind-to");
	argv_add(a, "none");
	/* Fail at once, never prompt, when a node does not trust us yet. */
	argv_add(a, "--mca");
	argv_add(a, "plm_rsh_args");
	argv_add(a, "-o BatchMode=yes");
	for (size_t i = 0; i < f->n_mca; i++) {
		argv_add(a, "--mca");
		argv_add(a, f->mca[i].name);
		argv_add(a, f->mca[i].value);
	}
	/* Names that differ between nodes: each node's own system files name its devices. */
	if (f->ucx_devices && !f->names_differ) {
		char *x = xasprintf("UCX_NET_DEVICES=%s", f->ucx_devices);

		argv_add(a, "-x");
		argv_add(a, x);
		free(x);
	}
	if (f->ucx_pkey) {
		char *x = xasprintf("UCX_IB_PKEY=%s", f->ucx_pkey);

		argv_add(a, "-x");
		argv_add(a, x);
		free(x);
	}
	/* The remote ranks read their own ucx.conf too; the line says it for nodes that have none. */
	for (size_t i = 0; f->soft_fabric && mpi_soft_ucx_env[i]; i++) {
		argv_add(a, "-x");
		argv_add(a, mpi_soft_ucx_env[i]);
	}
program:
	argv_add(a, verify_program(l));
	if (c->spec->mpi.max_latency_us > 0) {
		/* a plain decimal, never "1e+06": the program reads no exponent (num_double) */
		snprintf(num, sizeof(num), "%.6f", c->spec->mpi.max_latency_us);
		for (size_t n = strlen(num); n > 1 && strchr(num, '.') && (num[n - 1] == '0' || num[n - 1] == '.');)
			num[--n] = '\0';
		argv_add(a, "--max-latency-us");
		argv_add(a, num);
	}
	if (c->spec->mpi.min_bandwidth > 0) {
		snprintf(num, sizeof(num), "%.1f", (double)c->spec->mpi.min_bandwidth / (1024.0 * 1024.0));
		argv_add(a, "--min-bw-mibps");
		argv_add(a, num);
	}
	/*
	 * A software device's transport runs on the CPU: on the VMs of tests/vm
	 * (emulated CPUs) a message took milliseconds, and the default 1000
	 * round trips a size and 20 of 4 MiB would outlast verify's limit.
	 */
	if (f->soft_fabric) {
		argv_add(a, "--iters");
		argv_add(a, SOFT_ITERS);
		argv_add(a, "--bw-iters");
		argv_add(a, SOFT_BW_ITERS);
	}
	snprintf(num, sizeof(num), "%lu", round);
	argv_add(a, "--round");
	argv_add(a, num);
}

/*
 * The round-robin round of the next verify (hpcinit-mpiverify pairs every
 * rank with a new partner each round): one counter on this node, advanced
 * after every run that measured, so successive runs cover every pair in
 * N-1 rounds.  The program takes it modulo the number of rounds.
 */
#define VERIFY_ROUND_PATH "/var/lib/hpcinit/mpi-verify-round"

static unsigned long verify_round_load(const struct ctx *c)
{
	char *text = NULL;
	unsigned long long v = 0;

	/* the round first (then a newline); no number there: round 0 */
	if (fs_read(c, VERIFY_ROUND_PATH, &text, NULL) == 0 && !num_ull_prefix(text, 10, 1000000000, &v, NULL))
		v = 0;
	free(text);
	return v;
}

static void verify_round_save(struct ctx *c, unsigned long round)
{
	struct report scratch;
	char buf[32];
	int n = snprintf(buf, sizeof(buf), "%lu\n", round);

	if (!ctx_may_write(c))
		return;
	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/var/lib/hpcinit", 0755, 0, 0) < 0 ||
	    fs_write(c, &scratch, VERIFY_ROUND_PATH, buf, (size_t)n, 0644, 0, 0) < 0)
		log_warn("cannot write %s: the next verify measures the same pairs again", VERIFY_ROUND_PATH);
	report_free(&scratch);
}

/* One verify run over one hostfile: the whole cluster's, or one InfiniBand domain's (domain set). */
static int verify_hostfile(struct ctx *c, struct report *r, const char *domain)
{
	const struct spec *s = c->spec;
	const char *dir = s->hostfile.present && s->hostfile.dir ? s->hostfile.dir : "/etc/hpcinit";
	enum mpi_launcher l = s->mpi.launcher;
	char *hf = xasprintf("%s/%s%s%s", dir, launcher_hostfile(l), domain ? "." : "", domain ? domain : ""),
	     *hfhost = ctx_path(c, hf);
	char *text = NULL, *mpirun = proc_which(launcher_prog(l));
	unsigned long round = 0;
	const char *run_as = NULL;
	uint64_t end = now_ms() + VERIFY_DEFAULT_MS, delay = 1000;
	struct fabric f;
	struct strlist argv = { 0 };
	int nodes, ret, attempt = 0;

	mpi_fabric_detect(c, &f);
	{
		struct report scratch;

		report_init(&scratch);
		mpi_fabric_peers(c, &scratch, &f);
		report_free(&scratch);
	}
	if (c->deadline_ms)
		end = c->deadline_ms;
	if (!mpirun) {
		report_finding(r, ST_FAILED, "mpi.verify.no-mpirun", "%s not found: install %s", launcher_prog(l),
			       l == MPI_OPENMPI ? "Open MPI (openmpi-bin)" : l == MPI_MPICH ? "MPICH (mpich)" :
			       "Intel MPI and source its vars.sh for the PATH hpcinit runs with");
		ret = -ENOENT;
		goto out;
	}
	if (access(verify_program(l), X_OK) < 0) {
		report_finding(r, ST_FAILED, "mpi.verify.no-program", "%s is missing: hpcinit was built "
			       "without %s (configure found no %s)", verify_program(l),
			       l == MPI_OPENMPI ? "Open MPI" : "MPICH", l == MPI_OPENMPI ? "ompi-c" : "mpich");
		ret = -ENOENT;
		goto out;
	}
	ret = fs_read(c, hf, &text, NULL);
	if (ret < 0) {
		report_finding(r, ST_FAILED, "mpi.verify.no-hostfile", "%s: %s; the hostfile module writes it",
			       hf, strerror(-ret));
		goto out;
	}
	nodes = count_hosts(text);
	if (nodes < 1) {
		report_finding(r, ST_FAILED, "mpi.verify.no-hosts", "%s lists no hosts", hf);
		ret = -ENOENT;
		goto out;
	}
	/* mpirun logs in to the nodes as a cluster user: that is the path jobs take. */
	if (geteuid() == 0 && s->ssh.users.n && strcmp(s->ssh.users.v[0], "root") != 0)
		run_as = s->ssh.users.v[0];
	round = verify_round_load(c);
	verify_argv(c, &f, hfhost, round, nodes, run_as, geteuid() == 0 && !run_as, &argv);
	{
		char *shown = argv_render((const char *const *)argv.v);

		report_detail(r, "%s", shown);
		free(shown);
	}
	for (;;) {
		struct proc_result pr = { 0 };
		uint64_t now = now_ms(), left = end > now ? end - now : 0;

		attempt++;
		ret = proc_run((const char *const *)argv.v, NULL, NULL,
			       (unsigned)(left < VERIFY_RUN_MAX_MS ? left : VERIFY_RUN_MAX_MS), &pr);
		if (ret < 0) {
			report_finding(r, ST_FAILED, "mpi.verify.cannot-run", "cannot run mpirun: %s", strerror(-ret));
			break;
		}
		if (verify_parse(r, pr.out, s->mpi.max_latency_us, s->mpi.min_bandwidth)) {
			verify_round_save(c, round + 1);
			if (attempt > 1)
				report_detail(r, "mpirun ran on attempt %d (nodes were not all reachable "
					      "before)", attempt);
			if (pr.exit_code != 0 && r->status != ST_FAILED)
				report_finding(r, ST_FAILED, "mpi.verify.exit-status", "mpirun exited %d after the check",
					       pr.exit_code);
			proc_result_free(&pr);
			break;
		}
		/*
		 * No result: a node refused us or is not up yet.  At boot (apply)
		 * the others may still be setting up: retry until the deadline.
		 * Asked for by hand (hpcinit verify), answer now.
		 */
		/* a node without this MPI's daemon will not grow one: answer now */
		if (c->verify || pr.timed_out || (pr.err && missing_daemon(pr.err, NULL)) ||
		    now_ms() + delay + 5000 >= end) {
			launch_report(r, &pr, attempt);
			proc_result_free(&pr);
			break;
		}
		proc_result_free(&pr);
		{
			struct ctx tmp = *c;

			tmp.deadline_ms = end;
			(void)ctx_backoff(&tmp, &delay, 10000);
		}
	}
	ret = 0;
out:
	/* The worst finding first (the core's summary), as "hpcinit verify" shows it. */
	if (r->status == ST_FAILED)
		report_summarize(r);
	strlist_free(&argv);
	mpi_fabric_free(&f);
	free(mpirun);
	free(text);
	free(hf);
	free(hfhost);
	return ret;
}

/*
 * The InfiniBand domains the hostfile module wrote hostfiles for
 * (<launcher hostfile>.<domain>, with its header), and how many hosts each
 * lists: what verify pairs within.
 */
static void verify_domains(const struct ctx *c, struct strlist *doms, struct strlist *counts)
{
	const struct spec *s = c->spec;
	const char *dir = s->hostfile.present && s->hostfile.dir ? s->hostfile.dir : "/etc/hpcinit";
	const char *base = launcher_hostfile(s->mpi.launcher);
	char *hp = ctx_path(c, dir);
	DIR *d = opendir(hp);
	struct dirent *e;
	size_t bl = strlen(base);

	free(hp);
	while (d && (e = readdir(d))) {
		char *rel, *text = NULL;

		if (strncmp(e->d_name, base, bl) != 0 || e->d_name[bl] != '.' || !e->d_name[bl + 1])
			continue;
		rel = xasprintf("%s/%s", dir, e->d_name);
		if (fs_read(c, rel, &text, NULL) == 0 && strncmp(text, "# hpcinit:", 10) == 0) {
			strlist_push(doms, e->d_name + bl + 1);
			strlist_push_take(counts, xasprintf("%d", count_hosts(text)));
			/* in name order, whatever readdir's */
			for (size_t k = doms->n - 1; k > 0 && strcmp(doms->v[k - 1], doms->v[k]) > 0; k--) {
				char *t = doms->v[k];

				doms->v[k] = doms->v[k - 1];
				doms->v[k - 1] = t;
				t = counts->v[k];
				counts->v[k] = counts->v[k - 1];
				counts->v[k - 1] = t;
			}
		}
		free(text);
		free(rel);
	}
	if (d)
		closedir(d);
}

/*
 * Verify: over the whole cluster, or, when the hostfile module wrote more
 * than one InfiniBand domain's hostfile, one run per domain of two or more
 * nodes (InfiniBand does not reach across domains); a node alone in its
 * domain is not measured (the mpi step's finding mpi.fabric.alone names it).
 */
int mpi_verify(struct ctx *c, struct report *r)
{
	struct strlist doms = { 0 }, counts = { 0 };
	struct strbuf sum = STRBUF_INIT;
	int ret = 0, ran = 0;

	verify_domains(c, &doms, &counts);
	if (doms.n < 2) {
		strlist_free(&doms);
		strlist_free(&counts);
		return verify_hostfile(c, r, NULL);
	}
	for (size_t d = 0; d < doms.n; d++) {
		int rr;

		if (strcmp(counts.v[d], "1") == 0 || strcmp(counts.v[d], "0") == 0) {
			report_detail(r, "domain %s: %s node, nothing to pair within it: not measured", doms.v[d],
				      counts.v[d]);
			continue;
		}
		report_detail(r, "domain %s: %s nodes: verify pairs only within it", doms.v[d], counts.v[d]);
		rr = verify_hostfile(c, r, doms.v[d]);
		if (rr < 0)
			ret = rr;
		sb_printf(&sum, "%sdomain %s: %s", sum.len ? "; " : "", doms.v[d], r->summary);
		ran++;
	}
	if (ran && r->status != ST_FAILED)
		report_set(r, r->status, "%s", sb_str(&sum));
	else if (!ran)
		report_set(r, r->status, "no InfiniBand domain has two nodes: nothing to measure");
	sb_free(&sum);
	strlist_free(&doms);
	strlist_free(&counts);
	return ret;
}
