/* SPDX-License-Identifier: MIT */
/*
 * discovery: learn the cluster (DESIGN.md "Peers").  Every method ends with
 * ctx->peers = every known node, this one included and flagged self, so
 * ssh, hostfile and mpi work the same whichever method found them.
 *
 *   shared  each node keeps one record in <dir>/<cluster>/nodes/<host>.rec
 *           and reads everyone else's: one readdir and one read per node,
 *           O(N) per node, no connection to any peer.
 *   static  names and ranges from the spec, resolved with getaddrinfo.
 *   scan    parallel non-blocking connects across cluster.network, each
 *           answer confirmed by its SSH banner.
 */
#include "config.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdarg.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <libssh/libssh.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "record.h"
#include "sshkey.h"

#define SECRET_MIN 16
#define SECRET_MAX 4096
#define SCAN_MAX_HOSTS 65534            /* a /16 */
#define SCAN_CONCURRENCY 256
#define WAIT_POLL_CAP_MS 5000
#define LIST_PEERS_MAX 32               /* details name the nodes up to this many */
#define READY_MARK "/run/hpcinit/discovery-ready"

struct secret {
	char *key;                      /* NULL: no cluster secret */
	size_t len;
};

struct scan_result {
	struct peerset set;             /* peers read (self not included) */
	struct report notes;            /* rejections and other findings of this pass */
	size_t rejected, expired;
	struct strlist rejects;         /* the first REJECT_LOG_MAX reasons, for the log */
	struct report *keep;            /* prunings go here: they outlive the pass */
	size_t pruned;
};

#define REJECT_LOG_MAX 10               /* rejections logged (syslog) per run */

static bool disc_enabled(const struct spec *s)
{
	return s->discovery.present;
}

static uint64_t disc_timeout(const struct spec *s)
{
	/* The wait for peers, plus time for the work around it. */
	return s->discovery.wait_ms + 60000;
}

static void secret_free(struct secret *s)
{
	if (s->key) {
		explicit_bzero(s->key, s->len);
		free(s->key);
	}
	s->key = NULL;
	s->len = 0;
}

/* ---- this node ---- */

static bool in_network(const struct spec *spec, const struct sockaddr *sa)
{
	if (!spec->cluster.has_network)
		return true;
	if (sa->sa_family == AF_INET)
		return cidr_contains(&spec->cluster.network, AF_INET,
				     &((const struct sockaddr_in *)(const void *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return cidr_contains(&spec->cluster.network, AF_INET6,
				     &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return false;
}

static char *sa_text(const struct sockaddr *sa)
{
	char buf[INET6_ADDRSTRLEN];
	const void *a = sa->sa_family == AF_INET ?
		(const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr :
		(const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

	if (!inet_ntop(sa->sa_family, a, buf, sizeof(buf)))
		return NULL;
	return xstrdup(buf);
}

/*
 * An address given in the environment (documented test override for a fake
 * root, where the interfaces are the host's).  Must still be an address.
 */
static int env_address(const char *var, char **ret)
{
	const char *v = getenv(var);
	unsigned char buf[sizeof(struct in6_addr)];

	if (!v || !*v)
		return 0;
	if (inet_pton(AF_INET, v, buf) != 1 && inet_pton(AF_INET6, v, buf) != 1)
		return -EINVAL;
	*ret = xstrdup(v);
	return 1;
}

/*
 * This node's address: the first interface address inside cluster.network
 * (without a network: the first non-loopback IPv4, then IPv6, address).
 */
static int local_address(const struct ctx *c, struct report *rep, char **ret)
{
	const struct spec *spec = c->spec;
	struct ifaddrs *ifa, *i;
	char *best = NULL;
	int r = env_address("HPCINIT_ADDRESS", ret);

	if (r < 0) {
		report_detail(rep, "HPCINIT_ADDRESS=%s is not an IP address", getenv("HPCINIT_ADDRESS"));
		return r;
	}
	if (r > 0)
		return 0;
	if (getifaddrs(&ifa) < 0) {
		r = -errno;
		report_detail(rep, "cannot list interfaces: %s", strerror(errno));
		return r;
	}
	for (int pass = 0; pass < 2 && !best; pass++)
		for (i = ifa; i && !best; i = i->ifa_next) {
			int fam = pass == 0 ? AF_INET : AF_INET6;

			if (!i->ifa_addr || i->ifa_addr->sa_family != fam ||
			    (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
				continue;
			if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(
				    &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr))
				continue;
			if (in_network(spec, i->ifa_addr))
				best = sa_text(i->ifa_addr);
		}
	freeifaddrs(ifa);
	if (!best) {
		if (spec->cluster.has_network)
			report_detail(rep, "no interface has an address inside cluster.network %s",
				      spec->cluster.network.text);
		else
			report_detail(rep, "no interface has a non-loopback address");
		return -EADDRNOTAVAIL;
	}
	*ret = best;
	return 0;
}

/* The IPoIB address: rdma.ipoib's interface, else the first ib* interface with IPv4. */
static char *ipoib_address(const struct ctx *c)
{
	const char *want = c->spec->rdma.present ? c->spec->rdma.ipoib : NULL;
	struct ifaddrs *ifa, *i;
	char *ret = NULL;

	if (env_address("HPCINIT_IPOIB_ADDRESS", &ret) > 0)
		return ret;
	if (getifaddrs(&ifa) < 0)
		return NULL;
	for (i = ifa; i && !ret; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
			continue;
		if (want ? strcmp(i->ifa_name, want) == 0 : strncmp(i->ifa_name, "ib", 2) == 0)
			ret = sa_text(i->ifa_addr);
	}
	freeifaddrs(ifa);
	return ret;
}

static unsigned usable_cores(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

static char *boot_id(const struct ctx *c)
{
	char *text = NULL;
	size_t n;

	if (fs_read(c, "/proc/sys/kernel/random/boot_id", &text, &n) < 0)
		return NULL;        /* a fake root without /proc: the record just omits it */
	while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f') ||
		      text[i] == '-') || n > 64) {
			free(text);
			return NULL;
		}
	if (n == 0) {
		free(text);
		return NULL;
	}
	return text;
}

static char *self_hostname(const struct ctx *c)
{
	char buf[256];

	if (c->hostname)
		return xstrdup(c->hostname);
	if (gethostname(buf, sizeof(buf)) < 0)
		return NULL;
	buf[sizeof(buf) - 1] = '\0';
	return xstrdup(buf);
}

/* Everything this node publishes.  Failures that leave a usable record are details. */
static int self_peer(struct ctx *c, struct report *rep, struct peer *p)
{
	const struct spec *spec = c->spec;
	int r;

	memset(p, 0, sizeof(*p));
	p->self = true;
	p->hostname = self_hostname(c);
	if (!p->hostname || !record_hostname_valid(p->hostname)) {
		report_detail(rep, "this node's hostname \"%s\" is not a valid host name "
			      "([A-Za-z0-9._-]); set it (hostnamectl) or pass --hostname",
			      p->hostname ? p->hostname : "");
		return -EINVAL;
	}
	r = local_address(c, rep, &p->addr);
	if (r < 0)
		return r;
	p->ipoib_addr = ipoib_address(c);
	p->slots = usable_cores();
	p->head = spec->cluster.role == ROLE_HEAD;
	p->version = xstrdup(PACKAGE_VERSION);
	p->boot_id = boot_id(c);
	p->updated = (int64_t)time(NULL);
	r = sshkey_host_pubkeys(c, &p->host_keys);
	if (r < 0 && r != -ENOENT)
		report_detail(rep, "/etc/ssh: cannot read host keys: %s", strerror(-r));
	if (p->host_keys.n == 0)
		report_detail(rep, "no SSH host keys in /etc/ssh; peers cannot pin this node's "
			      "host key (run ssh-keygen -A)");
	if (spec->ssh.present) {
		for (size_t i = 0; i < spec->ssh.users.n; i++) {
			char *pub = NULL;
			struct user_key *uk;

			r = sshkey_ensure_user(c, rep, spec->ssh.users.v[i], spec->ssh.key_type, &pub);
			if (r < 0) {
				if (r != -ENOENT || ctx_may_write(c))
					report_raise(rep, ST_DEGRADED);
				continue;
			}
			p->user_keys = xrealloc(p->user_keys, (p->n_user_keys + 1) * sizeof(*p->user_keys));
			uk = &p->user_keys[p->n_user_keys++];
			uk->user = xstrdup(spec->ssh.users.v[i]);
			uk->key = pub;
		}
	}
	return 0;
}

/* ---- cluster secret ---- */

static int load_secret(const struct ctx *c, struct report *rep, struct secret *ret)
{
	const char *path = c->spec->cluster.secret_file;
	char *hp, *text = NULL;
	struct stat st;
	size_t n;
	int r;

	if (!path)
		return 0;
	hp = ctx_path(c, path);
	if (lstat(hp, &st) < 0) {
		r = -errno;
		report_detail(rep, "cluster.secret_file %s: %s; create it on every node "
			      "(the same random bytes, mode 0600)", path, strerror(errno));
		free(hp);
		return r;
	}
	if (!S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		report_detail(rep, "cluster.secret_file %s: must be a regular file not readable by "
			      "group or others (mode %04o); chmod 600 it",
			      path, (unsigned)(st.st_mode & 07777));
		free(hp);
		return -EPERM;
	}
	r = fs_read_host(hp, SECRET_MAX + 2, &text, &n);
	free(hp);
	if (r < 0) {
		report_detail(rep, "cluster.secret_file %s: %s", path, strerror(-r));
		return r;
	}
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	if (n < SECRET_MIN || n > SECRET_MAX) {
		report_detail(rep, "cluster.secret_file %s: needs %d to %d bytes (try: "
			      "openssl rand -hex 32 > %s)", path, SECRET_MIN, SECRET_MAX, path);
		explicit_bzero(text, n);
		free(text);
		return -EINVAL;
	}
	ret->key = text;
	ret->len = n;
	return 0;
}

/* ---- shared: the rendezvous directory ---- */

struct rendezvous {
	char *levels[3];                /* dir, dir/cluster, dir/cluster/nodes (target paths) */
	const char *nodes;              /* == levels[2] */
	uid_t trusted;                  /* uid that writes records: 0, or root squashed */
	gid_t trusted_gid;
	bool squashed;
};

static void rendezvous_free(struct rendezvous *rv)
{
	for (int i = 0; i < 3; i++)
		free(rv->levels[i]);
}

/* Return the owner of dir if it passes the mode check; -ENOENT when missing. */
static int check_dir(const struct ctx *c, struct report *rep, const char *path, struct stat *st)
{
	char *hp = ctx_path(c, path);
	int r = 0;

	if (lstat(hp, st) < 0) {
		r = -errno;
		if (r != -ENOENT)
			report_detail(rep, "rendezvous directory %s: %s", path, strerror(errno));
	} else if (!S_ISDIR(st->st_mode)) {
		report_detail(rep, "rendezvous directory %s: not a directory (a symlink is refused too)",
			      path);
		r = -ENOTDIR;
	} else if (st->st_mode & (S_IWGRP | S_IWOTH)) {
		report_detail(rep, "rendezvous directory %s is writable by group or others (mode %04o): "
			      "anyone could plant a peer record; refusing it (chmod go-w %s)",
			      path, (unsigned)(st->st_mode & 07777), path);
		r = -EPERM;
	}
	free(hp);
	return r;
}

/*
 * Learn which uid this node's root writes as on the share: create a probe
 * file and look at its owner.  Root on a root_squash export comes out as
 * the anonymous uid.  Only called when the directory is not owned by root.
 */
static int probe_owner(const struct ctx *c, const char *nodes, const char *host,
		       uid_t *ret_uid, gid_t *ret_gid)
{
	char *rel = xasprintf("%s/.hpcinit-probe.%s.%ld", nodes, host, (long)getpid());
	char *hp = ctx_path(c, rel);
	struct stat st;
	int fd, r = 0;

	fd = open(hp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0) {
		r = -errno;
	} else {
		if (fstat(fd, &st) < 0)
			r = -errno;
		close(fd);
		(void)unlink(hp);
	}
	if (r == 0) {
		*ret_uid = st.st_uid;
		*ret_gid = st.st_gid;
	}
	free(rel);
	free(hp);
	return r;
}

/*
 * Make <dir>/<cluster>/nodes exist and decide whom to trust.  Missing levels
 * are created 0755 (plain mkdir: on a squashed share chown to root fails).
 * Existing levels must not be writable by group or others and must be owned
 * by root -- or, on a root_squash share, by the uid root is mapped to, which
 * a probe file shows.  Anything else is refused with the reason.
 */
static int rendezvous_open(struct ctx *c, struct report *rep, const struct peer *self,
			   struct rendezvous *rv)
{
	const struct spec *spec = c->spec;
	uid_t owner = 0;
	bool have_owner = false;
	struct stat st;
	int r;

	memset(rv, 0, sizeof(*rv));
	rv->levels[0] = xstrdup(spec->discovery.dir);
	rv->levels[1] = xasprintf("%s/%s", spec->discovery.dir, spec->cluster.name);
	rv->levels[2] = xasprintf("%s/nodes", rv->levels[1]);
	rv->nodes = rv->levels[2];
	for (int i = 0; i < 3; i++) {
		r = check_dir(c, rep, rv->levels[i], &st);
		if (r == -ENOENT) {
			char *hp;

			if (!ctx_may_write(c)) {
				report_changed(rep, rv->levels[i]);
				report_raise(rep, ST_CHANGED);
				report_detail(rep, "%s: directory missing; apply creates it", rv->levels[i]);
				return -ENOENT;
			}
			hp = ctx_path(c, rv->levels[i]);
			if (mkdir(hp, 0755) < 0 && errno != EEXIST) {
				r = -errno;
				report_detail(rep, "rendezvous directory %s: cannot create: %s%s",
					      rv->levels[i], strerror(errno),
					      i == 0 ? " (is the shared filesystem mounted?)" : "");
				free(hp);
				return r;
			}
			free(hp);
			report_changed(rep, rv->levels[i]);
			report_raise(rep, ST_CHANGED);
			r = check_dir(c, rep, rv->levels[i], &st);
		}
		if (r < 0)
			return r;
		if (!have_owner) {
			owner = st.st_uid;
			rv->trusted_gid = st.st_gid;
			have_owner = true;
		} else if (st.st_uid != owner) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u but %s by uid %u; "
				      "refusing a tree with mixed owners", rv->levels[i],
				      (unsigned)st.st_uid, rv->levels[0], (unsigned)owner);
			return -EPERM;
		}
	}
	rv->trusted = owner;
	if (owner == 0)
		return 0;

	/* Not root-owned: trusted only if it is who root writes as on this share. */
	if (ctx_may_write(c)) {
		uid_t u = 0;
		gid_t g = 0;

		r = probe_owner(c, rv->nodes, self->hostname, &u, &g);
		if (r < 0) {
			report_detail(rep, "rendezvous directory %s: cannot create a file: %s",
				      rv->nodes, strerror(-r));
			return r;
		}
		if (u != owner) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, not root (and root "
				      "writes as uid %u here, so it is not a root_squash share); "
				      "refusing it (chown root %s)", rv->nodes, (unsigned)owner,
				      (unsigned)u, rv->nodes);
			return -EPERM;
		}
		rv->trusted_gid = g;
	} else {
		char *rel = xasprintf("%s/%s.rec", rv->nodes, self->hostname);
		char *hp = ctx_path(c, rel);
		bool ok = lstat(hp, &st) == 0 && st.st_uid == owner;

		free(rel);
		free(hp);
		if (!ok) {
			report_detail(rep, "rendezvous directory %s is owned by uid %u, not root; only apply "
				      "can tell whether that is root_squash", rv->nodes, (unsigned)owner);
			return -EPERM;
		}
	}
	rv->squashed = true;
	report_detail(rep, "%s: root is squashed to uid %u on this share; records owned by uid %u "
		      "are accepted%s", rv->nodes, (unsigned)owner, (unsigned)owner,
		      spec->cluster.secret_file ? " and authenticated by the cluster secret" :
		      " -- without cluster.secret_file any client that writes as that uid can "
		      "plant records");
	return 0;
}

static int64_t lease_s(const struct spec *spec)
{
	int64_t s = (int64_t)(spec->discovery.lease_ms / 1000);

	return s > 0 ? s : 1;
}

static bool suffix(const char *s, size_t n, const char *suf)
{
	size_t l = strlen(suf);

	return n >= l && memcmp(s + n - l, suf, l) == 0;
}

/*
 * Read the file into buf.  Records are replaced by rename, never written in
 * place, so the inode holds st_size bytes: stop there instead of paying a
 * second read for EOF.  -EFBIG past max.
 */
static ssize_t read_record(int fd, char *buf, size_t size, size_t max)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = read(fd, buf + got, max + 1 - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max)
			return -EFBIG;
	}
	return (ssize_t)got;
}

/*
 * A record not taken: say why in the report, and keep the reason for the
 * log (syslog on a real system) so that a planted or tampered record leaves
 * a trace even when nobody reads the run's output.
 */
static void reject(struct scan_result *res, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reject(struct scan_result *res, const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	report_detail(&res->notes, "%s", sb_str(&sb));
	if (res->rejects.n < REJECT_LOG_MAX)
		strlist_push(&res->rejects, sb_str(&sb));
	res->rejected++;
	sb_free(&sb);
}

static void prune(struct ctx *c, struct scan_result *res, const char *nodes, const char *name,
		  const char *why)
{
	char *rel = xasprintf("%s/%s", nodes, name);

	if (fs_remove(c, res->keep, rel) > 0) {
		res->pruned++;
		report_detail(res->keep, "record %s: %s; removed", name, why);
	}
	free(rel);
}

/*
 * One pass over the nodes directory: every fresh, trusted, well-formed
 * record becomes a peer; each rejected one gets a line saying why.  With
 * do_prune (apply), records past their lease are removed as they are met.
 */
static int read_records(struct ctx *c, const struct rendezvous *rv, const struct secret *sec,
			const struct peer *self, bool do_prune, struct scan_result *res)
{
	const struct spec *spec = c->spec;
	static char buf[RECORD_MAX_BYTES + 1];
	int64_t now = (int64_t)time(NULL), lease = lease_s(spec);
	char *hp = ctx_path(c, rv->nodes);
	DIR *d;
	struct dirent *de;
	int dfd;

	d = opendir(hp);
	free(hp);
	if (!d) {
		int r = -errno;

		report_detail(&res->notes, "rendezvous directory %s: %s", rv->nodes, strerror(errno));
		return r;
	}
	dfd = dirfd(d);
	while ((errno = 0, de = readdir(d))) {
		const char *name = de->d_name;
		size_t nl = strlen(name);
		char host[256], err[640];
		struct peer p;
		struct stat st;
		ssize_t len;
		int fd, r;

		if (name[0] == '.')
			continue;       /* ".", "..", probe files */
		if (strstr(name, ".rec.hpcinit-tmp.")) {
			/* A writer's temp file; left behind only by a crash. */
			if (do_prune && fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
			    now - (int64_t)st.st_mtime > lease)
				prune(c, res, rv->nodes, name, "stale temporary file");
			continue;
		}
		if (!suffix(name, nl, ".rec"))
			continue;       /* not ours: left alone */
		if (nl - 4 >= sizeof(host)) {
			reject(res, "record %.64s...: file name too long; rejected", name);
			continue;
		}
		memcpy(host, name, nl - 4);
		host[nl - 4] = '\0';
		if (!record_hostname_valid(host)) {
			reject(res, "record %s: file name is not <hostname>.rec; rejected",
				      name);
			continue;
		}
		if (strcmp(host, self->hostname) == 0)
			continue;       /* this node: described by self, not by its old record */
		fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
		if (fd < 0) {
			if (errno == ELOOP)
				reject(res, "record %s: is a symbolic link; rejected", name);
			else if (errno != ENOENT)   /* ENOENT: pruned by another node meanwhile */
				reject(res, "record %s: cannot open: %s; rejected", name, strerror(errno));
			continue;
		}
		if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
			reject(res, "record %s: not a regular file; rejected", name);
			close(fd);
			continue;
		}
		if (st.st_uid != rv->trusted) {
			reject(res, "record %s: owned by uid %u, not by the trusted writer "
				      "(uid %u%s); rejected", name, (unsigned)st.st_uid,
				      (unsigned)rv->trusted, rv->squashed ? ", root squashed" : ", root");
			close(fd);
			continue;
		}
		if (st.st_mode & (S_IWGRP | S_IWOTH)) {
			reject(res, "record %s: writable by group or others (mode %04o); "
				      "rejected", name, (unsigned)(st.st_mode & 07777));
			close(fd);
			continue;
		}
		if (st.st_size > RECORD_MAX_BYTES) {
			reject(res, "record %s: %lld bytes, over the %d-byte limit; rejected",
				      name, (long long)st.st_size, RECORD_MAX_BYTES);
			close(fd);
			continue;
		}
		len = read_record(fd, buf, (size_t)st.st_size, RECORD_MAX_BYTES);
		close(fd);
		if (len < 0) {
			reject(res, "record %s: cannot read: %s; rejected", name,
				      strerror((int)-len));
			continue;
		}
		r = record_parse(buf, (size_t)len, spec->cluster.name, sec->key, sec->len, &p,
				 err, sizeof(err));
		if (r == 0 && strcmp(p.hostname, host) != 0) {
			snprintf(err, sizeof(err), "describes host %s, not %s", p.hostname, host);
			peer_clear(&p);
			r = -EBADMSG;
		}
		if (r < 0) {
			if (r == -ENODATA)
				reject(res, "record %s: truncated (no \"...\" end marker); rejected", name);
			else if (r == -EKEYREJECTED)
				reject(res, "record %s: bad HMAC (tampered, or written with another cluster "
				       "secret); rejected", name);
			else if (r == -ENOKEY)
				reject(res, "record %s: no HMAC while cluster.secret_file is set; rejected",
				       name);
			else
				reject(res, "record %s: %s; rejected", name, err);
			if (do_prune && now - (int64_t)st.st_mtime > lease)
				prune(c, res, rv->nodes, name, "rejected and not refreshed within the lease");
			continue;
		}
		if (now - p.updated > lease) {
			res->expired++;
			if (do_prune)
				prune(c, res, rv->nodes, name, "lease expired (scale-in)");
			peer_clear(&p);
			continue;
		}
		*peerset_add(&res->set) = p;
	}
	if (errno) {
		int r = -errno;

		report_detail(&res->notes, "rendezvous directory %s: %s", rv->nodes, strerror(errno));
		closedir(d);
		return r;
	}
	closedir(d);
	return 0;
}

/*
 * Two records claiming one address: a VM that left and a new one that got
 * its address.  Keep this node, else the newer record; the older one
 * expires on its own.
 */
static int addr_order(const void *x, const void *y)
{
	const struct peer *const *a = x, *const *b = y;
	int r = strcmp((*a)->addr, (*b)->addr);

	if (r)
		return r;
	if ((*a)->self != (*b)->self)
		return (*a)->self ? -1 : 1;
	return (*a)->updated > (*b)->updated ? -1 : (*a)->updated < (*b)->updated;
}

static void drop_duplicate_addrs(struct peerset *s, struct report *notes)
{
	struct peer **idx, *keep;
	size_t w = 0;

	if (s->n < 2)
		return;
	idx = xmalloc(s->n * sizeof(*idx));
	for (size_t i = 0; i < s->n; i++)
		idx[i] = &s->v[i];
	qsort(idx, s->n, sizeof(*idx), addr_order);
	keep = idx[0];
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(idx[i]->addr, keep->addr) != 0) {
			keep = idx[i];
			continue;
		}
		report_detail(notes, "address %s is claimed by %s and %s; keeping %s", keep->addr,
			      keep->hostname, idx[i]->hostname, keep->hostname);
		peer_clear(idx[i]);     /* hostname NULL marks it dropped */
	}
	free(idx);
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].hostname)
			s->v[w++] = s->v[i];
	s->n = w;
}

/* Drop a pass's results; the prunings (in res->keep) and their count stay. */
static void scan_result_free(struct scan_result *res)
{
	struct report *keep = res->keep;
	size_t pruned = res->pruned;

	for (size_t i = 0; i < res->set.n; i++)
		peer_clear(&res->set.v[i]);
	free(res->set.v);
	report_free(&res->notes);
	strlist_free(&res->rejects);
	memset(res, 0, sizeof(*res));
	res->keep = keep;
	res->pruned = pruned;
}

/* Write this node's record.  The lease refresh alone is not reported as a change. */
static int write_self(struct ctx *c, struct report *rep, const struct rendezvous *rv,
		      const struct secret *sec, struct peer *self)
{
	const char *cluster = c->spec->cluster.name;
	char *rel = xasprintf("%s/%s.rec", rv->nodes, self->hostname);
	char *text, *old = NULL, *oldnorm = NULL, *newnorm;
	int64_t updated = self->updated;
	struct report scratch;
	struct peer oldp;
	int r;

	self->updated = (int64_t)time(NULL);
	text = record_format(self, cluster, sec->key, sec->len);
	if (!text) {
		report_detail(rep, "%s: cannot compute the record HMAC", rel);
		free(rel);
		self->updated = updated;
		return -EIO;
	}
	/* Same record but for the time stamp?  Then it is only a lease refresh. */
	if (fs_read(c, rel, &old, NULL) == 0 &&
	    record_parse(old, strlen(old), cluster, NULL, 0, &oldp, NULL, 0) == 0) {
		struct peer tmp = *self;

		tmp.updated = oldp.updated;
		oldnorm = record_format(&oldp, cluster, NULL, 0);
		newnorm = record_format(&tmp, cluster, NULL, 0);
		if (strcmp(oldnorm, newnorm) != 0) {
			free(oldnorm);
			oldnorm = NULL;
		}
		free(newnorm);
		peer_clear(&oldp);
	}
	report_init(&scratch);
	r = fs_write(c, oldnorm ? &scratch : rep, rel, text, strlen(text), 0644,
		     rv->trusted, rv->trusted_gid);
	if (r < 0 && oldnorm)
		sb_append(&rep->details, sb_str(&scratch.details));
	report_free(&scratch);
	free(old);
	free(oldnorm);
	free(text);
	free(rel);
	return r;
}

/* Sort s (head first, natural order) and name its nodes in the report. */
static void list_peers(struct report *rep, struct peerset *s, bool all)
{
	peerset_sort(s);
	if (s->n > LIST_PEERS_MAX && !all) {
		report_detail(rep, "%zu nodes (listed with -v)", s->n);
		return;
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct peer *p = &s->v[i];

		report_detail(rep, "node %s %s%s%s slots=%u host_keys=%zu%s%s", p->hostname, p->addr,
			      p->ipoib_addr ? " ipoib=" : "", p->ipoib_addr ? p->ipoib_addr : "",
			      p->slots, p->host_keys.n, p->head ? " head" : "", p->self ? " (self)" : "");
	}
}

static void set_peers(struct ctx *c, struct peerset *s)
{
	c->peers = peerset_free(c->peers);
	c->peers = s;
}

/* Has this node seen `expect` nodes since boot?  (/run is per boot.) */
static bool ready_before(const struct ctx *c)
{
	char *text = NULL;
	bool ok = fs_read(c, READY_MARK, &text, NULL) == 0;
	char *want = xasprintf("%s\n", c->spec->cluster.name);

	ok = ok && strcmp(text, want) == 0;
	free(text);
	free(want);
	return ok;
}

static void mark_ready(struct ctx *c)
{
	struct report scratch;
	char *text = xasprintf("%s\n", c->spec->cluster.name);

	report_init(&scratch);
	if (fs_mkdir_p(c, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(c, &scratch, READY_MARK, text, strlen(text), 0644, 0, 0);
	report_free(&scratch);
	free(text);
}

/*
 * First re-read of the rendezvous directory while waiting for peers.  Nodes of a
 * scale set start within a fraction of a second of each other: a short first
 * poll, doubling up to WAIT_POLL_CAP_MS, finds them without a fixed 250 ms wait,
 * and a long wait still costs one directory read every 5 s.
 */
#define SHARED_FIRST_POLL_MS 50

static int shared_run(struct ctx *c, struct report *rep, struct peer *self, const struct secret *sec)
{
	const struct spec *spec = c->spec;
	struct rendezvous rv;
	struct scan_result res = { 0 };
	struct peerset *set;
	uint64_t wait_end = now_ms() + spec->discovery.wait_ms, delay = SHARED_FIRST_POLL_MS;
	int64_t written = 0;
	bool waited = false, ready = ready_before(c);
	int r;

	if (!spec->discovery.dir) {
		report_set(rep, ST_FAILED, "discovery.dir is required with method shared");
		return -EINVAL;
	}
	r = rendezvous_open(c, rep, self, &rv);
	if (r < 0) {
		if (r == -ENOENT && !ctx_may_write(c)) {
			report_set(rep, ST_CHANGED, "rendezvous directory %s missing", spec->discovery.dir);
			set = xcalloc(1, sizeof(*set));
			*peerset_add(set) = *self;
			memset(self, 0, sizeof(*self));
			list_peers(rep, set, c->verbose > 0);
			set_peers(c, set);
			rendezvous_free(&rv);
			return 0;
		}
		report_set(rep, ST_FAILED, "rendezvous directory %s refused", spec->discovery.dir);
		rendezvous_free(&rv);
		return r;
	}

	if (ctx_may_write(c)) {
		r = write_self(c, rep, &rv, sec, self);
		if (r < 0) {
			report_set(rep, ST_FAILED, "cannot write this node's record in %s", rv.nodes);
			rendezvous_free(&rv);
			return r;
		}
		written = self->updated;
	} else {
		/* check/plan: is this node's record there, current and fresh? */
		char *rel = xasprintf("%s/%s.rec", rv.nodes, self->hostname), *old = NULL;
		struct peer oldp;
		char *want, *have;

		if (fs_read(c, rel, &old, NULL) < 0) {
			report_changed(rep, rel);
			report_raise(rep, ST_CHANGED);
			report_detail(rep, "%s: missing; apply writes this node's record", rel);
		} else if (record_parse(old, strlen(old), spec->cluster.name, sec->key, sec->len,
					&oldp, NULL, 0) < 0) {
			report_changed(rep, rel);
			report_raise(rep, ST_CHANGED);
			report_detail(rep, "%s: unreadable or bad HMAC; apply rewrites it", rel);
		} else {
			struct peer tmp = *self;

			tmp.updated = oldp.updated;
			want = record_format(&tmp, spec->cluster.name, NULL, 0);
			have = record_format(&oldp, spec->cluster.name, NULL, 0);
			if (strcmp(want, have) != 0) {
				report_changed(rep, rel);
				report_raise(rep, ST_CHANGED);
				if (c->mode == RUN_PLAN)
					text_diff(&rep->details, rel, have, want);
				else
					report_detail(rep, "%s: differs from this node's state", rel);
			} else if ((int64_t)time(NULL) - oldp.updated > lease_s(spec)) {
				report_raise(rep, ST_CHANGED);
				report_detail(rep, "%s: lease expired; peers have dropped this node", rel);
			}
			free(want);
			free(have);
			peer_clear(&oldp);
		}
		free(old);
		free(rel);
	}

	/*
	 * Read; while fewer than expect are known on the first run of this
	 * boot, wait and read again.  In apply, expired records are removed in
	 * the same pass, so a refresh reads the directory once.
	 */
	res.keep = rep;
	for (;;) {
		bool last;

		scan_result_free(&res);
		report_init(&res.notes);
		r = read_records(c, &rv, sec, self, ctx_may_write(c), &res);
		if (r < 0)
			break;
		last = !ctx_may_write(c) || ready || res.set.n + 1 >= spec->discovery.expect ||
		       now_ms() >= wait_end || ctx_remaining_ms(c) == 0;
		if (last)
			break;
		/* Wait for peers, keeping this node's own lease fresh meanwhile. */
		waited = true;
		{
			struct ctx until = *c;

			if (until.deadline_ms > wait_end)
				until.deadline_ms = wait_end;
			if (!ctx_backoff(&until, &delay, WAIT_POLL_CAP_MS))
				continue;       /* out of time: the next pass is the last */
		}
		if ((int64_t)time(NULL) - written > lease_s(spec) / 3) {
			struct report scratch;

			report_init(&scratch);
			if (write_self(c, &scratch, &rv, sec, self) >= 0)
				written = self->updated;
			report_free(&scratch);
		}
	}
	if (r < 0) {
		sb_append(&rep->details, sb_str(&res.notes.details));
		report_set(rep, ST_FAILED, "cannot read %s", rv.nodes);
		scan_result_free(&res);
		rendezvous_free(&rv);
		return r;
	}

	set = xcalloc(1, sizeof(*set));
	*peerset_add(set) = *self;
	memset(self, 0, sizeof(*self));
	for (size_t i = 0; i < res.set.n; i++)
		*peerset_add(set) = res.set.v[i];
	res.set.n = 0;
	drop_duplicate_addrs(set, &res.notes);
	sb_append(&rep->details, sb_str(&res.notes.details));
	for (size_t i = 0; i < res.rejects.n; i++)
		log_warn("%s", res.rejects.v[i]);
	if (res.rejected > res.rejects.n)
		log_warn("%zu more records rejected; the run's details list them all",
			 res.rejected - res.rejects.n);
	if (res.rejected)
		report_raise(rep, ST_DEGRADED);
	list_peers(rep, set, c->verbose > 0);

	if (set->n >= spec->discovery.expect) {
		if (ctx_may_write(c) && !ready)
			mark_ready(c);
		report_set(rep, ST_OK, "%zu node%s known (expect %u)%s%s", set->n,
			   set->n == 1 ? "" : "s", spec->discovery.expect, waited ? " after waiting" : "",
			   res.rejected ? "; records rejected, see details" : "");
	} else if (ready || !ctx_may_write(c)) {
		report_detail(rep, "%zu nodes known, fewer than expect %u%s", set->n,
			      spec->discovery.expect, ready ? " (reached earlier in this boot: "
			      "nodes have left)" : "");
		report_set(rep, ST_OK, "%zu node%s known (expect %u)%s", set->n, set->n == 1 ? "" : "s",
			   spec->discovery.expect,
			   res.rejected ? "; records rejected, see details" : "");
	} else {
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes after waiting %" PRIu64
			   " s for peers in %s", set->n, spec->discovery.expect,
			   spec->discovery.wait_ms / 1000, rv.nodes);
	}
	set_peers(c, set);
	scan_result_free(&res);
	rendezvous_free(&rv);
	return 0;
}

/* ---- static ---- */

/* Resolve name; keep the address inside cluster.network (IPv4 first). */
static int resolve(const struct spec *spec, const char *name, char **ret, const char **why)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL, *ai;
	int r = getaddrinfo(name, NULL, &hints, &res);

	if (r == EAI_BADFLAGS || (r != 0 && r != EAI_NONAME && r != EAI_AGAIN)) {
		hints.ai_flags = 0;
		r = getaddrinfo(name, NULL, &hints, &res);
	}
	if (r != 0) {
		*why = gai_strerror(r);
		return -EHOSTUNREACH;
	}
	*ret = NULL;
	for (int fam = AF_INET; !*ret; fam = AF_INET6) {
		for (ai = res; ai && !*ret; ai = ai->ai_next)
			if (ai->ai_family == fam && in_network(spec, ai->ai_addr))
				*ret = sa_text(ai->ai_addr);
		if (fam == AF_INET6)
			break;
	}
	freeaddrinfo(res);
	if (!*ret) {
		*why = "no address inside cluster.network";
		return -EADDRNOTAVAIL;
	}
	return 0;
}

static int static_run(struct ctx *c, struct report *rep, struct peer *self)
{
	const struct spec *spec = c->spec;
	const struct strlist *hosts = &spec->discovery.hosts;
	uint64_t wait_end = now_ms() + spec->discovery.wait_ms, delay = 250;
	struct peerset *set = NULL;
	struct report notes;
	size_t unresolved = 0;
	bool self_listed = false;

	report_init(&notes);
	for (;;) {
		set = peerset_free(set);
		set = xcalloc(1, sizeof(*set));
		report_free(&notes);
		report_init(&notes);
		unresolved = 0;
		self_listed = false;
		for (size_t i = 0; i < hosts->n; i++) {
			const char *why = NULL;
			char *addr = NULL;
			struct peer *p;

			if (!record_hostname_valid(hosts->v[i])) {
				report_detail(&notes, "static host \"%s\" is not a valid host name", hosts->v[i]);
				unresolved++;
				continue;
			}
			if (strcmp(hosts->v[i], self->hostname) == 0) {
				self_listed = true;
				continue;
			}
			if (resolve(spec, hosts->v[i], &addr, &why) < 0) {
				report_detail(&notes, "static host %s does not resolve: %s", hosts->v[i], why);
				unresolved++;
				continue;
			}
			if (strcmp(addr, self->addr) == 0) {
				self_listed = true;
				free(addr);
				continue;
			}
			p = peerset_add(set);
			p->hostname = xstrdup(hosts->v[i]);
			p->addr = addr;
			p->slots = self->slots;     /* no record: assume a uniform scale set */
		}
		if (set->n + 1 >= spec->discovery.expect || !ctx_may_write(c))
			break;
		{
			struct ctx until = *c;

			if (until.deadline_ms > wait_end)
				until.deadline_ms = wait_end;
			if (!ctx_backoff(&until, &delay, WAIT_POLL_CAP_MS))
				break;
		}
	}
	if (!self_listed)
		report_detail(&notes, "this node (%s) is not in discovery.hosts; added", self->hostname);
	*peerset_add(set) = *self;
	memset(self, 0, sizeof(*self));
	drop_duplicate_addrs(set, &notes);
	sb_append(&rep->details, sb_str(&notes.details));
	report_free(&notes);
	list_peers(rep, set, c->verbose > 0);
	if (unresolved)
		report_raise(rep, ST_DEGRADED);
	if (set->n < spec->discovery.expect)
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes resolve", set->n,
			   spec->discovery.expect);
	else
		report_set(rep, ST_OK, "%zu nodes from discovery.hosts%s", set->n,
			   unresolved ? "; some do not resolve, see details" : "");
	set_peers(c, set);
	return 0;
}

/* ---- scan ---- */

struct probe {
	int fd;
	uint32_t addr;                  /* host order */
	bool connected;
	uint64_t deadline;
	size_t got;
	char banner[8];
};

/*
 * Connect to port on every address of the network at once (bounded by
 * SCAN_CONCURRENCY), and keep the ones that greet with "SSH-".  Each probe
 * has the same timeout, so a /24 takes about one timeout.
 */
static int scan_network(const struct spec *spec, uint16_t port, uint64_t timeout_ms,
			uint32_t **ret, size_t *ret_n, struct report *rep)
{
	const struct cidr *net = &spec->cluster.network;
	uint32_t base = ntohl(net->addr.v4.s_addr);
	uint64_t first, last, next;
	struct probe *pr;
	struct pollfd *pfd;
	size_t conc = SCAN_CONCURRENCY, active = 0, n_found = 0;
	uint32_t *found = NULL;
	struct rlimit rl;

	if (net->prefix >= 31) {
		first = base;
		last = base + (net->prefix == 31 ? 1u : 0u);
	} else {
		first = base + 1;
		last = base + (1ull << (32 - net->prefix)) - 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < conc + 64)
		conc = rl.rlim_cur > 80 ? (size_t)rl.rlim_cur - 64 : 16;
	pr = xcalloc(conc, sizeof(*pr));
	pfd = xcalloc(conc, sizeof(*pfd));
	next = first;
	for (;;) {
		uint64_t now = now_ms();
		int wait = -1, nr;

		while (active < conc && next <= last) {
			struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
			struct probe *p = &pr[active];
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

			sin.sin_addr.s_addr = htonl((uint32_t)next);
			if (fd < 0) {
				report_detail(rep, "scan: socket: %s", strerror(errno));
				break;
			}
			memset(p, 0, sizeof(*p));
			p->fd = fd;
			p->addr = (uint32_t)next;
			p->deadline = now + timeout_ms;
			next++;
			if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
				p->connected = true;
			else if (errno != EINPROGRESS) {
				close(fd);
				continue;
			}
			pfd[active].fd = fd;
			pfd[active].events = p->connected ? POLLIN : POLLOUT;
			active++;
		}
		if (active == 0)
			break;
		for (size_t i = 0; i < active; i++) {
			int left = pr[i].deadline > now ? (int)(pr[i].deadline - now) : 0;

			if (wait < 0 || left < wait)
				wait = left;
		}
		nr = poll(pfd, active, wait);
		if (nr < 0 && errno != EINTR) {
			report_detail(rep, "scan: poll: %s", strerror(errno));
			break;
		}
		now = now_ms();
		for (size_t i = 0; i < active;) {
			struct probe *p = &pr[i];
			bool done = false;

			if (pfd[i].revents && !p->connected) {
				int err = 0;
				socklen_t el = sizeof(err);

				if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err)
					done = true;
				else {
					p->connected = true;
					pfd[i].events = POLLIN;
				}
			} else if (pfd[i].revents) {
				ssize_t n = read(p->fd, p->banner + p->got, 4 - p->got);

				if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR)))
					done = true;
				else if (n > 0) {
					p->got += (size_t)n;
					if (p->got >= 4) {
						if (memcmp(p->banner, "SSH-", 4) == 0) {
							found = xrealloc(found, (n_found + 1) * sizeof(*found));
							found[n_found++] = p->addr;
						}
						done = true;
					}
				}
			}
			if (!done && now >= p->deadline)
				done = true;
			if (done) {
				close(p->fd);
				active--;
				pr[i] = pr[active];
				pfd[i] = pfd[active];
				continue;
			}
			i++;
		}
	}
	for (size_t i = 0; i < active; i++)
		close(pr[i].fd);
	free(pr);
	free(pfd);
	*ret = found;
	*ret_n = n_found;
	return 0;
}

/* Fetch the host keys sshd offers, one connection per key type (no auth). */
static void fetch_host_keys(const char *addr, uint16_t port, uint64_t timeout_ms,
			    struct strlist *keys)
{
	static const char *const algos[] = {
		"ssh-ed25519", "ecdsa-sha2-nistp256", "rsa-sha2-512,rsa-sha2-256",
	};
	long tmo = (long)(timeout_ms / 1000) + 1;
	unsigned int p = port;
	int no = 0;

	for (size_t i = 0; i < sizeof(algos) / sizeof(algos[0]); i++) {
		ssh_session s = ssh_new();
		ssh_key key = NULL;
		char *b64 = NULL;

		if (!s)
			return;
		ssh_options_set(s, SSH_OPTIONS_HOST, addr);
		ssh_options_set(s, SSH_OPTIONS_PORT, &p);
		ssh_options_set(s, SSH_OPTIONS_TIMEOUT, &tmo);
		ssh_options_set(s, SSH_OPTIONS_PROCESS_CONFIG, &no);
		ssh_options_set(s, SSH_OPTIONS_KNOWNHOSTS, "/dev/null");
		ssh_options_set(s, SSH_OPTIONS_GLOBAL_KNOWNHOSTS, "/dev/null");
		ssh_options_set(s, SSH_OPTIONS_HOSTKEYS, algos[i]);
		if (ssh_connect(s) == SSH_OK && ssh_get_server_publickey(s, &key) == SSH_OK &&
		    ssh_pki_export_pubkey_base64(key, &b64) == SSH_OK) {
			char *line = xasprintf("%s %s", ssh_key_type_to_char(ssh_key_type(key)), b64);

			strlist_push(keys, line);
			free(line);
		}
		if (b64)
			ssh_string_free_char(b64);
		ssh_key_free(key);
		ssh_disconnect(s);
		ssh_free(s);
	}
}

static int scan_run(struct ctx *c, struct report *rep, struct peer *self)
{
	const struct spec *spec = c->spec;
	uint64_t wait_end = now_ms() + spec->discovery.wait_ms, delay = 250, t0;
	bool want_keys = spec->ssh.present && spec->ssh.host_keys == HOSTKEYS_SCAN;
	uint32_t *found = NULL;
	size_t n_found = 0;
	struct peerset *set;

	if (!spec->cluster.has_network || spec->cluster.network.family != AF_INET) {
		report_set(rep, ST_FAILED, "discovery.method scan needs an IPv4 cluster.network");
		return -EINVAL;
	}
	if (spec->cluster.network.prefix < 16) {
		report_set(rep, ST_FAILED, "cluster.network %s is larger than a /16; scan refuses it",
			   spec->cluster.network.text);
		return -E2BIG;
	}
	for (;;) {
		free(found);
		found = NULL;
		t0 = now_ms();
		scan_network(spec, spec->discovery.scan_port, spec->discovery.scan_timeout_ms,
			     &found, &n_found, rep);
		if (n_found >= spec->discovery.expect || !ctx_may_write(c))
			break;
		{
			struct ctx until = *c;

			if (until.deadline_ms > wait_end)
				until.deadline_ms = wait_end;
			if (!ctx_backoff(&until, &delay, WAIT_POLL_CAP_MS))
				break;
		}
	}
	report_detail(rep, "scan of %s port %u: %zu SSH servers in %" PRIu64 " ms",
		      spec->cluster.network.text, spec->discovery.scan_port, n_found, now_ms() - t0);
	if (want_keys)
		report_detail(rep, "host keys fetched by scan (trust on first use: an impostor "
			      "answering now would be trusted; prefer host_keys: pinned with method shared)");
	set = xcalloc(1, sizeof(*set));
	for (size_t i = 0; i < n_found; i++) {
		struct in_addr a = { .s_addr = htonl(found[i]) };
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a };
		char text[INET_ADDRSTRLEN], host[NI_MAXHOST];
		struct peer *p;

		inet_ntop(AF_INET, &a, text, sizeof(text));
		if (strcmp(text, self->addr) == 0)
			continue;
		p = peerset_add(set);
		p->addr = xstrdup(text);
		if (getnameinfo((struct sockaddr *)&sin, sizeof(sin), host, sizeof(host), NULL, 0,
				NI_NAMEREQD) == 0 && record_hostname_valid(host))
			p->hostname = xstrdup(host);
		else
			p->hostname = xstrdup(text);
		p->slots = self->slots;     /* no record: assume a uniform scale set */
		if (want_keys)
			fetch_host_keys(text, spec->discovery.scan_port, spec->discovery.scan_timeout_ms,
					&p->host_keys);
	}
	free(found);
	*peerset_add(set) = *self;
	memset(self, 0, sizeof(*self));
	list_peers(rep, set, c->verbose > 0);
	if (set->n < spec->discovery.expect)
		report_set(rep, ST_DEGRADED, "only %zu of %u expected nodes answer on %s port %u",
			   set->n, spec->discovery.expect, spec->cluster.network.text,
			   spec->discovery.scan_port);
	else
		report_set(rep, ST_OK, "%zu nodes found by scan", set->n);
	set_peers(c, set);
	return 0;
}

/* ---- hooks ---- */

static int disc_run(struct ctx *c, struct report *rep)
{
	const struct spec *spec = c->spec;
	struct secret sec = { 0 };
	struct peer self;
	int r;

	r = self_peer(c, rep, &self);
	if (r < 0) {
		peer_clear(&self);
		report_set(rep, ST_FAILED, "cannot describe this node");
		return r;
	}
	switch (spec->discovery.method) {
	case DISC_SHARED:
		r = load_secret(c, rep, &sec);
		if (r < 0) {
			report_set(rep, ST_FAILED, "cluster secret unusable");
			break;
		}
		r = shared_run(c, rep, &self, &sec);
		break;
	case DISC_STATIC:
		r = static_run(c, rep, &self);
		break;
	case DISC_SCAN:
		r = scan_run(c, rep, &self);
		break;
	}
	secret_free(&sec);
	peer_clear(&self);
	return r;
}

static int disc_check(struct ctx *c, struct report *rep)
{
	return disc_run(c, rep);
}

static int disc_apply(struct ctx *c, struct report *rep)
{
	return disc_run(c, rep);
}

const struct module discovery_module = {
	.name = "discovery",
	.enabled = disc_enabled,
	.needs = NULL,
	.timeout_ms = disc_timeout,
	.check = disc_check,
	.apply = disc_apply,
	.outputs = OUT_PEERS,
};
