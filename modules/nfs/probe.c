/* SPDX-License-Identifier: MIT */
/*
 * Waiting for the NFS server: TCP to the ports the mount needs, then the
 * MOUNT/LOOKUP probe with libnfs -- in the helper hpcinit-nfs-probe, so the
 * agent never maps libnfs -- with backoff until the mount's wait runs out;
 * and statfs/stat/write probes of a mounted path.  Everything that can
 * block on a server runs in a child under the engine of agent/base/proc.c; a
 * child stuck in the kernel is abandoned, never waited for.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "nfs.h"
#include "proc.h"
#include "number.h"

extern char **environ;

/* ---- real ops: TCP ------------------------------------------------------------ */

static int tcp_connect_real(const char *host, uint16_t port, unsigned timeout_ms,
			    char *err, size_t errlen)
{
	struct addrinfo hints, *res = NULL;
	char portstr[8];
	uint64_t deadline = now_ms() + timeout_ms;
	int rc, ret = -EHOSTUNREACH;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICSERV;
	snprintf(portstr, sizeof(portstr), "%u", (unsigned)port);
	rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc != 0) {
		snprintf(err, errlen, "cannot resolve %s: %s", host,
			 rc == EAI_SYSTEM ? strerror(errno) : gai_strerror(rc));
		return -EHOSTUNREACH;
	}
	snprintf(err, errlen, "no address");
	for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int soerr = 0;
		socklen_t sl = sizeof(soerr);

		if (fd < 0) {
			ret = -errno;
			snprintf(err, errlen, "socket: %s", strerror(errno));
			continue;
		}
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
			close(fd);
			ret = 0;
			break;
		}
		if (errno != EINPROGRESS) {
			ret = -errno;
			snprintf(err, errlen, "%s", strerror(errno));
			close(fd);
			continue;
		}
		for (;;) {
			struct pollfd pfd = { .fd = fd, .events = POLLOUT };
			uint64_t now = now_ms();
			int pr;

			if (now >= deadline) {
				soerr = ETIMEDOUT;
				break;
			}
			pr = poll(&pfd, 1, (int)(deadline - now));
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr < 0)
				soerr = errno;
			else if (pr == 0)
				soerr = ETIMEDOUT;
			else if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
				soerr = errno;
			break;
		}
		close(fd);
		if (soerr == 0) {
			ret = 0;
			break;
		}
		ret = -soerr;
		snprintf(err, errlen, "%s", soerr == ETIMEDOUT ? "no answer (connect timed out)"
			 : strerror(soerr));
	}
	freeaddrinfo(res);
	if (ret == 0 && errlen)
		err[0] = '\0';
	return ret;
}

/* ---- real ops: bounded child ------------------------------------------------- */

struct bounded {
	void (*fn)(const void *arg, void *out);
	const void *arg;
	void *out;
	size_t outlen;
};

static void bounded_child(void *argp, int fd)
{
	struct bounded *b = argp;
	const char *o = b->out;
	size_t off = 0;

	b->fn(b->arg, b->out);
	while (off < b->outlen) {
		ssize_t w = write(fd, o + off, b->outlen - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			_exit(1);
		off += (size_t)w;
	}
}

/*
 * Run fn(arg, out) in a child (the engine in proc.c) and copy its out back,
 * or give up after timeout_ms.  A child that does not finish is killed; one
 * stuck in the kernel (a hard NFS mount) cannot die and is left behind.
 */
static int run_bounded(void (*fn)(const void *arg, void *out), const void *arg,
		       void *out, size_t outlen, unsigned timeout_ms, const char *key, struct proc_stuck *blocked)
{
	const struct proc_limits lim = { .timeout_ms = timeout_ms, .reap_ms = 500, .eof_ends = true };
	struct bounded b = { fn, arg, out, outlen };
	struct proc_child ch = { .stuck_key = key };
	int ret = proc_start_fn(&ch, bounded_child, &b, outlen);

	if (ret == -EBUSY && blocked)
		*blocked = ch.blocked;  /* an earlier run's probe of it still sleeps in the kernel */
	if (ret < 0)
		return ret;
	proc_wait(&ch, 1, &lim);
	if (ch.out.len >= outlen)
		memcpy(out, ch.out.buf, outlen);
	else
		ret = ch.eof ? -EPIPE : -ETIMEDOUT;     /* EPIPE: the child died before answering */
	proc_child_free(&ch);
	return ret;
}

/* ---- real ops: the libnfs probe, in the helper hpcinit-nfs-probe ------------ */

/* Used by the helper's answer (and the unit tests' fake). */
void exports_add(struct nfs_probe_result *res, const char *line)
{
	size_t used = strlen(res->exports), n = strlen(line);

	if (used + n + 2 > sizeof(res->exports))
		return;
	memcpy(res->exports + used, line, n);
	res->exports[used + n] = '\n';
	res->exports[used + n + 1] = '\0';
}

/* Is export (or a directory above it) in the newline-separated list? */
bool export_listed(const char *list, const char *export)
{
	for (const char *p = list; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		const char *sp = memchr(p, ' ', n);

		if (sp)
			n = (size_t)(sp - p);       /* "path  clients" */
		if (n && strncmp(export, p, n) == 0 &&
		    (export[n] == '\0' || export[n] == '/' || (n == 1 && p[0] == '/')))
			return true;
		p = nl ? nl + 1 : NULL;
	}
	return false;
}

/*
 * The helper's answer (libexec/hpcinit-nfs-probe.c), one "key value" a line:
 * errnum, what, msg, mode, exports (the list follows as "export LINE"), done.
 * false when it is cut short.
 */
bool rpc_answer_parse(const char *text, struct nfs_probe_result *res)
{
	bool done = false;

	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[600];

		if (!nl)
			break;
		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		long long e;
		unsigned long long m;

		/* a number that does not read is the helper breaking its protocol: EPROTO, no mode */
		if (strncmp(line, "errnum ", 7) == 0)
			res->errnum = num_ll(line + 7, 0, 4095, &e) ? (int)e : EPROTO;
		else if (strncmp(line, "what ", 5) == 0)
			snprintf(res->what, sizeof(res->what), "%.*s", (int)sizeof(res->what) - 1, line + 5);
		else if (strncmp(line, "msg ", 4) == 0)
			snprintf(res->msg, sizeof(res->msg), "%.*s", (int)sizeof(res->msg) - 1, line + 4);
		else if (strncmp(line, "mode ", 5) == 0) {
			res->have_mode = num_ull(line + 5, 8, 07777, &m);
			res->mode = res->have_mode ? (unsigned)m : 0;
		} else if (strcmp(line, "exports") == 0)
			res->have_exports = true;
		else if (strncmp(line, "export ", 7) == 0)
			exports_add(res, line + 7);
		else if (strncmp(line, "layer ", 6) == 0)
			snprintf(res->layer, sizeof(res->layer), "%.*s", (int)sizeof(res->layer) - 1, line + 6);
		else if (strncmp(line, "rpcmsg ", 7) == 0)
			snprintf(res->rpcmsg, sizeof(res->rpcmsg), "%.*s", (int)sizeof(res->rpcmsg) - 1, line + 7);
		else if (strncmp(line, "minor ", 6) == 0) {
			size_t used = strlen(res->minors);

			snprintf(res->minors + used, sizeof(res->minors) - used, "%s\n", line + 6);
		} else if (strcmp(line, "done") == 0)
			done = true;
		p = nl + 1;
	}
	return done;
}

/*
 * The minor versions of the helper's "minor N STATUS" lines that the server
 * did (refused false) or did not (refused true) accept, as "4.1, 4.2".
 */
static void minors_list(const char *minors, bool refused, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	for (const char *p = minors; *p;) {
		size_t n = strcspn(p, "\n");
		bool mismatch = n > 2 && memmem(p, n, "MINOR_VERS_MISMATCH", 19) != NULL;

		if (n && mismatch == refused && used + 8 < len)
			used += (size_t)snprintf(buf + used, len - used, "%s4.%c", used ? ", " : "", p[0]);
		p += n + (p[n] ? 1 : 0);
	}
}

/*
 * What a failed MOUNT/LOOKUP means: the export is missing, this client is
 * refused; or, when the v4 mount of the pseudo root failed, how far the
 * server answered.  A server whose NFS service answered is up, whatever
 * minor version it refused (libnfs speaks 4.0 only; Azure Files and NetApp
 * Files 4.1 volumes speak 4.1 only): the kernel's mount decides.  The
 * network is blamed only when TCP did not connect.
 */
void rpc_classify(struct nfs_probe_result *res, const char *export)
{
	int r = -res->errnum;

	if (!res->errnum)
		res->err = NE_OK;
	else if (r == -ENOENT || (r == -EACCES && res->have_exports && !export_listed(res->exports, export)))
		res->err = NE_NOEXPORT;
	else if (r == -EACCES || r == -EPERM)
		res->err = NE_DENIED;
	else if (r == -ENOMEM)
		res->err = NE_OTHER;
	else if (strcmp(res->layer, "nfs") == 0) {
		char ok[32], refused[32];

		minors_list(res->minors, false, ok, sizeof(ok));
		minors_list(res->minors, true, refused, sizeof(refused));
		if (strstr(refused, "4.0"))
			snprintf(res->note, sizeof(res->note),
				 "answered NFSv4 (speaks %s; refuses %s with NFS4ERR_MINOR_VERS_MISMATCH, "
				 "and 4.0 is all the probe speaks): the export is not checked before the mount",
				 ok[0] ? ok : "no minor version the probe tried", refused);
		else
			snprintf(res->note, sizeof(res->note),
				 "answered NFSv4 (speaks %s), but the probe's mount of its pseudo root failed (%.200s): "
				 "the export is not checked before the mount", ok[0] ? ok : "?", res->msg);
		res->err = NE_OK;
	} else if (strcmp(res->layer, "rpc") == 0)
		res->err = NE_NOANSWER;
	else
		res->err = NE_UNREACHABLE;
}

static int rpc_probe_real(const char *host, const char *export, int vers, unsigned timeout_ms,
			  struct nfs_probe_result *res)
{
	memset(res, 0, sizeof(*res));
#ifdef HAVE_LIBNFS
	/* libnfs's own timeout bounds each RPC; the helper's deadline bounds the whole. */
	const struct proc_limits lim = { .timeout_ms = timeout_ms + 2000, .reap_ms = 500, .eof_ends = true };
	struct proc_child ch = { 0 };
	char *path = proc_helper_path("hpcinit-nfs-probe"), vbuf[8], tbuf[16];
	const char *argv[] = { path, host, export, vbuf, tbuf, NULL };
	bool done = false;
	int r;

	snprintf(vbuf, sizeof(vbuf), "%d", vers);
	snprintf(tbuf, sizeof(tbuf), "%u", timeout_ms);
	r = proc_start_argv(&ch, path, argv, (const char *const *)environ, NULL);
	if (r == -ENOENT) {
		/* Not installed: as a build without libnfs, the probe stops at TCP. */
		log_warn("%s is not installed: the NFS server probe stops at TCP", path);
		free(path);
		return -ENOSYS;
	}
	free(path);
	if (r == 0) {
		proc_wait(&ch, 1, &lim);
		done = rpc_answer_parse(sb_str(&ch.out), res);
		r = done ? 0 : ch.eof ? -EPIPE : -ETIMEDOUT;
		proc_child_free(&ch);
	}
	if (r < 0) {
		memset(res, 0, sizeof(*res));
		/* v4: TCP to the port connected just before, so the server took it and said nothing */
		res->err = vers == 3 ? NE_UNREACHABLE : NE_NOANSWER;
		res->errnum = -r;
		snprintf(res->what, sizeof(res->what), "%s", vers == 3 ? "MOUNT protocol" : "NFSv4 port 2049");
		snprintf(res->msg, sizeof(res->msg), "%s", r == -ETIMEDOUT ? "no answer" : "probe failed");
		return r;
	}
	rpc_classify(res, export);
	if (res->err == NE_OK && res->note[0])
		return 0;       /* up: the kernel's mount decides */
	return res->err == NE_OK ? 0 : -(res->errnum ? res->errnum : EIO);
#else
	(void)host;
	(void)export;
	(void)vers;
	(void)timeout_ms;
	return -ENOSYS;         /* built --without-libnfs: the probe stops at TCP */
#endif
}

/* ---- real ops: inspect a mounted path -------------------------------------- */

struct inspect_args {
	const char *hostpath;
	bool write_probe;
	char host[64];          /* this node's name (node_hostname), "node" when none */
};

static void inspect_child(const void *argp, void *outp)
{
	const struct inspect_args *a = argp;
	struct mp_info *mp = outp;
	struct statfs sfs;
	struct stat st;
	char name[PATH_MAX];
	int fd;

	mp->write_err = -1;
	if (statfs(a->hostpath, &sfs) < 0)
		mp->statfs_err = errno;
	else
		mp->fstype = (long)sfs.f_type;
	if (stat(a->hostpath, &st) < 0)
		mp->stat_err = errno;
	else
		mp->mode = (unsigned)(st.st_mode & 07777);
	if (!a->write_probe)
		return;
	snprintf(name, sizeof(name), "%s/.hpcinit-probe.%s.%ld", a->hostpath, a->host, (long)getpid());
	snprintf(mp->write_step, sizeof(mp->write_step), "create");
	fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		mp->write_err = errno;
		return;
	}
	snprintf(mp->write_step, sizeof(mp->write_step), "write");
	if (write(fd, "hpcinit\n", 8) != 8 || fsync(fd) < 0) {
		mp->write_err = errno ? errno : EIO;
		close(fd);
		unlink(name);
		return;
	}
	close(fd);
	snprintf(mp->write_step, sizeof(mp->write_step), "remove");
	if (unlink(name) < 0) {
		mp->write_err = errno;
		return;
	}
	mp->write_err = 0;
}

static int inspect_real(const char *hostpath, bool write_probe, unsigned timeout_ms,
			struct mp_info *ret)
{
	struct inspect_args a = { hostpath, write_probe, "node" };
	char host[NODE_HOSTNAME_MAX];
	struct proc_stuck blocked;
	char *key = xasprintf("nfs.inspect.%s", hostpath);
	int r;

	if (node_hostname(NULL, host, sizeof(host)))
		snprintf(a.host, sizeof(a.host), "%.63s", host);
	memset(ret, 0, sizeof(*ret));
	/* One stuck probe per mount point: a dead hard mount does not collect one per run. */
	r = run_bounded(inspect_child, &a, ret, sizeof(*ret), timeout_ms, key, &blocked);
	free(key);
	if (r == -EBUSY) {
		struct strbuf sb = STRBUF_INIT;

		memset(ret, 0, sizeof(*ret));
		proc_stuck_text(&blocked, &sb);
		snprintf(ret->blocked, sizeof(ret->blocked), "%s", sb_str(&sb));
		sb_free(&sb);
	}
	return r;
}

static const struct nfs_ops real_ops = {
	.tcp_connect = tcp_connect_real,
	.rpc_probe = rpc_probe_real,
	.inspect = inspect_real,
};

const struct nfs_ops *nfs_io = &real_ops;

/* ---- the probe, with backoff ------------------------------------------------- */

/*
 * One attempt: TCP to the port(s) the mount needs, then the libnfs probe.
 * v3 needs the portmapper (111), which names the NFS and MOUNT ports (Blob
 * NFS serves NFS on 2048, not 2049); v4 needs only the NFS port.
 */
static int probe_once(const struct nfs_target *t, unsigned budget_ms, struct nfs_probe_result *res)
{
	uint16_t ports[2];
	const char *names[2];
	size_t np = 0;
	int r;

	memset(res, 0, sizeof(*res));
	if (t->vers == 3) {
		ports[np] = PORTMAP_PORT;
		names[np++] = "portmapper";
		if (t->port) {
			ports[np] = t->port;
			names[np++] = "nfs";
		}
	} else {
		ports[np] = t->port ? t->port : NFS_PORT;
		names[np++] = "nfs";
	}
	for (size_t i = 0; i < np; i++) {
		unsigned to = budget_ms < NFS_TCP_TIMEOUT_MS ? budget_ms : NFS_TCP_TIMEOUT_MS;

		snprintf(res->what, sizeof(res->what), "port %u (%s)", (unsigned)ports[i], names[i]);
		r = nfs_io->tcp_connect(t->host, ports[i], to ? to : 1, res->msg, sizeof(res->msg));
		if (r < 0) {
			res->err = NE_UNREACHABLE;
			res->errnum = -r;
			return r;
		}
	}
	/* libnfs talks v4 on 2049 only; a v4 mount on another port stops at TCP. */
	if (t->vers != 3 && t->port && t->port != NFS_PORT)
		return 0;
	r = nfs_io->rpc_probe(t->host, t->export, t->vers,
			   budget_ms < NFS_RPC_TIMEOUT_MS ? (budget_ms > 1000 ? budget_ms : 1000)
			   : NFS_RPC_TIMEOUT_MS, res);
	if (r == -ENOSYS) {             /* no libnfs: TCP is all we can say */
		memset(res, 0, sizeof(*res));
		return 0;
	}
	if (r < 0 && res->err == NE_OK)
		res->err = NE_OTHER;
	return r < 0 ? r : 0;
}

/*
 * Probe until the server has the export or the mount's wait runs out.
 * Every failure is retried: a head node that boots late first serves an
 * empty export table, then ours.  Returns 0 or the last -errno, with *res
 * the last attempt's result and *ret_waited how long it took.
 */
int probe_wait(const struct ctx *c, const struct nfs_target *t, struct nfs_probe_result *res,
		      uint64_t *ret_waited, unsigned *ret_attempts)
{
	struct ctx sub = *c;
	uint64_t start = now_ms(), delay = NFS_BACKOFF_FIRST_MS;
	unsigned attempts = 0;
	bool logged = false, last = false;
	int r;

	/* wait: 0s (the loader's value, never "unset") is one probe with its own budget. */
	sub.deadline_ms = start + (t->wait_ms ? t->wait_ms : NFS_ONE_PROBE_MS);
	if (c->deadline_ms && c->deadline_ms < sub.deadline_ms)
		sub.deadline_ms = c->deadline_ms;
	for (;;) {
		uint64_t left = ctx_remaining_ms(&sub);

		attempts++;
		r = probe_once(t, (unsigned)(left > NFS_RPC_TIMEOUT_MS ? NFS_RPC_TIMEOUT_MS
					     : left ? left : 1), res);
		if (r == 0 || t->wait_ms == 0 || last)
			break;
		if (!logged) {
			log_info("%s: waiting for the server (%s: %s), up to %llus", t->source,
				 res->what, res->msg, (unsigned long long)(ctx_remaining_ms(&sub) / 1000));
			logged = true;
		} else {
			log_debug("%s: %s: %s; retrying", t->source, res->what, res->msg);
		}
		/*
		 * The pause ends NFS_LAST_PROBE_MS before the wait does, so the
		 * wait ends with a probe: a backoff that slept to the deadline
		 * left its last seconds (up to NFS_BACKOFF_CAP_MS) unchecked, and
		 * a server that came up then was reported down.
		 */
		struct ctx nap = sub;

		if (nap.deadline_ms > NFS_LAST_PROBE_MS)
			nap.deadline_ms -= NFS_LAST_PROBE_MS;
		if (!ctx_backoff(&nap, &delay, NFS_BACKOFF_CAP_MS)) {
			if (ctx_remaining_ms(&sub) == 0)
				break;
			last = true;    /* the end of the wait: one more probe, with what is left */
		}
	}
	*ret_waited = now_ms() - start;
	*ret_attempts = attempts;
	return r;
}

/* Append the export list (or why there is none) to the report. */
static void detail_exports(struct report *r, const struct nfs_target *t,
			   const struct nfs_probe_result *pr)
{
	if (!pr->have_exports) {
		report_detail(r, "  %s did not give its export list%s", t->host,
			      t->vers == 3 ? "" : " (NFSv4 has none; its pseudo root could not be read)");
		return;
	}
	if (!pr->exports[0]) {
		report_detail(r, "  %s exports nothing (yet)", t->host);
		return;
	}
	report_detail(r, "  %s %s:", t->host, t->vers == 3 ? "exports" : "has under its NFSv4 pseudo root");
	for (const char *p = pr->exports; *p;) {
		size_t n = strcspn(p, "\n");

		report_detail(r, "    %.*s", (int)n, p);
		p += n + (p[n] ? 1 : 0);
	}
}

/* The failure of a probe, in the report: what, where, how long, what to do. */
void explain_probe(struct report *r, const struct nfs_target *t,
		   const struct nfs_probe_result *pr, uint64_t waited, unsigned attempts)
{
	char w[32];

	nfs_fmt_duration(waited, w, sizeof(w));
	switch (pr->err) {
	case NE_NOEXPORT:
		report_detail(r, "%s: export %s not found on %s (%s: %s); waited %s, %u attempts",
			      t->path, t->export, t->host, pr->what, pr->msg, w, attempts);
		detail_exports(r, t, pr);
		report_detail(r, "  fix nfs.mounts source \"%s\" to one of the exports, or export it on the server",
			      t->source);
		report_finding(r, ST_FAILED, "nfs.server.no-export", "%s: export %s not found on %s", t->path,
			       t->export, t->host);
		break;
	case NE_DENIED:
		report_detail(r, "%s: %s refused %s: permission denied (%s: %s); waited %s",
			      t->path, t->host, t->export, pr->what, pr->msg, w);
		detail_exports(r, t, pr);
		report_detail(r, "  the export's client list must include this node's address "
			      "(and sec= must match); on Blob NFS, allow the VNet/subnet on the storage account");
		report_finding(r, ST_FAILED, "nfs.server.denied", "%s: %s: permission denied by %s", t->path,
			       t->export, t->host);
		break;
	case NE_NOANSWER:
		report_detail(r, "%s: server %s took the TCP connection (%s) but gave no NFS answer: %s; "
			      "waited %s (%u attempts, wait %llus)",
			      t->path, t->host, pr->what, pr->rpcmsg[0] ? pr->rpcmsg : pr->msg, w, attempts,
			      (unsigned long long)((t->wait_ms + 999) / 1000));
		report_detail(r, "  the network path is open; check that an NFSv4 server serves on %s "
			      "(not another program, not one with NFSv4 off) and that it has finished starting; "
			      "raise nfs.mounts wait if it starts later", t->host);
		report_finding(r, ST_FAILED, "nfs.server.no-nfs-answer", "%s: server %s gave no NFS answer (%s) after %s",
			       t->path, t->host, pr->what, w);
		break;
	default:
		report_detail(r, "%s: server %s unreachable on %s: %s; waited %s (%u attempts, wait %llus)",
			      t->path, t->host, pr->what, pr->msg, w, attempts,
			      (unsigned long long)((t->wait_ms + 999) / 1000));
		report_detail(r, "  check that the NFS server is running and that TCP %s is open "
			      "from this node (NSG, firewall); raise nfs.mounts wait if the server boots later",
			      pr->what);
		report_finding(r, ST_FAILED, "nfs.server.unreachable", "%s: server %s unreachable (%s) after %s",
			       t->path, t->host,
			 pr->what, w);
		break;
	}
}
