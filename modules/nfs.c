/* SPDX-License-Identifier: MIT */
/*
 * nfs: the cluster's shared storage.
 *
 * For each mount: create the mount point, keep one managed fstab line (so a
 * reboot mounts it without us), and unless the right filesystem is already
 * mounted, wait for the server (TCP, then MOUNT/LOOKUP with libnfs) with
 * backoff until the mount's `wait` runs out, run mount(8), and verify the
 * result (mountinfo, statfs magic, a write probe).  The head role writes
 * /etc/exports.d/hpcinit.exports and runs `exportfs -ra`.
 *
 * Network and mount-point access sit behind struct nfs_ops (STYLE.md item 6)
 * so unit tests swap the table.  Everything that can block on a server
 * (libnfs sync calls, statfs of a hard mount whose server died) runs in a
 * forked child with a deadline; a child stuck in the kernel is abandoned,
 * never waited for.
 *
 * Test hooks (documented in docs/nfs.md):
 *  - HPCINIT_MOUNT_PROG: the mount program (default "mount").  On a fake
 *    root (--root DIR) nothing is mounted unless this is set.
 *  - On a fake root, mountinfo is read from <root>/proc/self/mountinfo when
 *    that file exists (a fixture), and statfs magic is not checked.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifdef HAVE_LIBNFS
#include <sys/time.h>           /* libnfs.h uses struct timeval without including it */
#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw-mount.h>
#endif

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "proc.h"

#define NFS_SUPER_MAGIC_ 0x6969
#define NFS_PORT 2049u
#define PORTMAP_PORT 111u
#define NFS_MAX_MOUNTS 256              /* hard limit on mounts/exports in one spec */
#define NFS_MOUNT_TIMEOUT_MS 60000u     /* mount(8), once the server answered */
#define NFS_INSPECT_TIMEOUT_MS 10000u   /* statfs/stat/write probe of a mounted path */
#define NFS_TCP_TIMEOUT_MS 3000u        /* one connect attempt */
#define NFS_RPC_TIMEOUT_MS 10000u       /* one libnfs probe */
#define NFS_BACKOFF_FIRST_MS 500u
#define NFS_BACKOFF_CAP_MS 5000u
#define NFS_DEFAULT_WAIT_MS (5u * 60u * 1000u)
#define EXPORTS_FILE "/etc/exports.d/hpcinit.exports"

/* What went wrong, in the words a user needs. */
enum nfs_err {
	NE_OK,
	NE_UNREACHABLE,         /* no TCP connection, or the RPC service did not answer */
	NE_NOEXPORT,            /* the server has no such export / path */
	NE_DENIED,              /* the server refused this client */
	NE_NODEV,               /* the kernel has no NFS client (ENODEV from mount) */
	NE_TIMEOUT,             /* mount(8) did not finish */
	NE_NOHELPER,            /* mount.nfs missing */
	NE_STATD,               /* v3 locking needs rpc.statd, which is not running */
	NE_OTHER,
};

/* Result of one probe; flat so a child can hand it over a pipe. */
struct probe_result {
	enum nfs_err err;
	int errnum;             /* positive errno, 0 when none */
	char what[96];          /* "port 111 (portmapper)", "MOUNT /shared", ... */
	char msg[512];          /* the system's or libnfs's own words */
	bool have_exports;
	char exports[2048];     /* the server's exports, one a line */
	bool have_mode;
	unsigned mode;          /* mode of the export's root, when known */
};

/* What a mounted path looks like; flat for the same reason. */
struct mp_info {
	int statfs_err;         /* 0 or errno */
	long fstype;
	int stat_err;
	unsigned mode;
	int write_err;          /* 0 ok, errno, or -1 not tried */
	char write_step[16];
};

struct nfs_ops {
	/* Connect to host:port within timeout_ms; 0 or -errno, err says why. */
	int (*tcp_connect)(const char *host, uint16_t port, unsigned timeout_ms,
			   char *err, size_t errlen);
	/* MOUNT (v3) or LOOKUP (v4) of export; 0 when the server has it, else -errno and res. */
	int (*rpc_probe)(const char *host, const char *export, int vers, unsigned timeout_ms,
			 struct probe_result *res);
	/* statfs/stat of a mounted path, optional write probe; 0 or -ETIMEDOUT. */
	int (*inspect)(const char *hostpath, bool write_probe, unsigned timeout_ms,
		       struct mp_info *ret);
};

/* One mount of the spec, resolved. */
struct nfs_target {
	const struct spec_nfs_mount *m;
	const char *host, *export, *path;
	char *source;           /* host:/export, as mount(8) and mountinfo see it */
	int vers;               /* 3 or 4; from vers=/nfsvers= (4 when absent: mount.nfs tries 4 first) */
	uint16_t port;          /* port= option, 0 when absent */
	bool ro;
	uint64_t wait_ms;
	struct strlist opts;    /* for mount -o */
};

struct mi_entry {
	char *mountpoint, *fstype, *source, *mntopts, *superopts;
};

struct mountinfo {
	struct mi_entry *v;
	size_t n;
	bool fixture;           /* read from <root>/proc/self/mountinfo of a fake root */
};

static const struct nfs_ops real_ops;
static const struct nfs_ops *ops = &real_ops;

/* ---- small text helpers ------------------------------------------------ */

static void fmt_duration(uint64_t ms, char *buf, size_t len)
{
	if (ms < 60000)
		snprintf(buf, len, "%llu.%llus", (unsigned long long)(ms / 1000),
			 (unsigned long long)(ms % 1000 / 100));
	else
		snprintf(buf, len, "%llum%llus", (unsigned long long)(ms / 60000),
			 (unsigned long long)(ms % 60000 / 1000));
}

/* fstab(5) and exports(5) fields: whitespace and backslash as octal escapes. */
static char *field_escape(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *s; s++) {
		if (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\\')
			sb_printf(&sb, "\\%03o", (unsigned)(unsigned char)*s);
		else
			sb_appendn(&sb, s, 1);
	}
	return sb_steal(&sb);
}

/* Undo \NNN escapes (mountinfo, fstab). */
static char *field_unescape(const char *s, size_t n)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\\' && i + 3 < n &&
		    s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' && s[i + 2] <= '7' &&
		    s[i + 3] >= '0' && s[i + 3] <= '7') {
			char ch = (char)((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0'));

			sb_appendn(&sb, &ch, 1);
			i += 3;
		} else {
			sb_appendn(&sb, s + i, 1);
		}
	}
	if (!sb.buf)
		return xstrdup("");
	return sb_steal(&sb);
}

/* The key of "key=value" (or the whole word), compared up to '='. */
static bool opt_key_eq(const char *opt, const char *key)
{
	size_t kl = strlen(key);

	return strncmp(opt, key, kl) == 0 && (opt[kl] == '\0' || opt[kl] == '=');
}

static const char *opt_find(const struct strlist *l, const char *key)
{
	for (size_t i = 0; i < l->n; i++)
		if (opt_key_eq(l->v[i], key))
			return l->v[i];
	return NULL;
}

/* Value of key= in a comma-separated option string, malloc'd, or NULL. */
static char *optstr_get(const char *optstr, const char *key)
{
	size_t kl = strlen(key);

	for (const char *p = optstr; p && *p;) {
		const char *comma = strchr(p, ',');
		size_t n = comma ? (size_t)(comma - p) : strlen(p);

		if (n >= kl && strncmp(p, key, kl) == 0 && (n == kl || p[kl] == '='))
			return n == kl ? xstrdup("") : xstrndup(p + kl + 1, n - kl - 1);
		p = comma ? comma + 1 : NULL;
	}
	return NULL;
}

static char *strlist_join(const struct strlist *l, const char *sep)
{
	struct strbuf sb = STRBUF_INIT;

	for (size_t i = 0; i < l->n; i++) {
		if (i)
			sb_append(&sb, sep);
		sb_append(&sb, l->v[i]);
	}
	if (!sb.buf)
		return xstrdup("");
	return sb_steal(&sb);
}

/* An option word that fits in fstab and in one -o argument. */
static bool opt_valid(const char *o)
{
	if (!*o || strlen(o) > 256)
		return false;
	for (; *o; o++)
		if (*o == ',' || *o == ' ' || *o == '\t' || *o == '\n' || *o == '\\' ||
		    *o == '(' || *o == ')' || *o == '#' || (unsigned char)*o < 0x20)
			return false;
	return true;
}

static bool path_valid(const char *p)
{
	size_t n = strlen(p);

	if (p[0] != '/' || n < 2 || n >= PATH_MAX || p[n - 1] == '/')
		return false;
	if (strstr(p, "//") || strstr(p, "/../") || strstr(p, "/./") ||
	    (n >= 3 && strcmp(p + n - 3, "/..") == 0) || (n >= 2 && strcmp(p + n - 2, "/.") == 0))
		return false;
	for (; *p; p++)
		if (*p == '\n' || (unsigned char)*p < 0x20)
			return false;
	return true;
}

/* ---- targets ------------------------------------------------------------ */

static int parse_vers(const struct strlist *opts)
{
	const char *v = opt_find(opts, "vers");

	if (!v)
		v = opt_find(opts, "nfsvers");
	if (!v)
		return 4;       /* mount.nfs negotiates from 4.2 down; probe 4 */
	v = strchr(v, '=');
	if (!v)
		return 4;
	return v[1] == '3' ? 3 : v[1] == '2' ? 3 : 4;
}

static void target_free(struct nfs_target *t)
{
	free(t->source);
	strlist_free(&t->opts);
}

/*
 * Resolve one spec mount.  Returns 0, or -EINVAL with a detail saying what
 * is wrong (the spec loader should have caught it; we never pass bad text on
 * to fstab or mount(8)).
 */
static int target_init(struct nfs_target *t, const struct spec_nfs_mount *m, struct report *r)
{
	static const char *const defaults[] = { "vers=3", "hard", "proto=tcp" };
	const char *port;

	memset(t, 0, sizeof(*t));
	t->m = m;
	t->host = m->host;
	t->export = m->export;
	t->path = m->path;
	t->wait_ms = m->wait_ms ? m->wait_ms : NFS_DEFAULT_WAIT_MS;
	if (!t->host || !*t->host || !t->export || t->export[0] != '/' || !t->path) {
		report_detail(r, "nfs.mounts: source \"%s\" must be host:/export",
			      m->source ? m->source : "");
		return -EINVAL;
	}
	for (const char *p = t->host; *p; p++)
		if (*p == ' ' || *p == '\t' || *p == '/' || *p == '\\' || *p == '[' || *p == ']' ||
		    (unsigned char)*p < 0x20) {
			report_detail(r, "nfs.mounts: bad host in source \"%s\"", m->source);
			return -EINVAL;
		}
	if (!path_valid(t->path)) {
		report_detail(r, "nfs.mounts: path \"%s\" must be an absolute path other than /, "
			      "without . or .. parts or a trailing slash", t->path);
		return -EINVAL;
	}
	for (const char *p = t->export; *p; p++)
		if ((unsigned char)*p < 0x20) {
			report_detail(r, "nfs.mounts: bad export in source \"%s\"", m->source);
			return -EINVAL;
		}
	if (m->options.n == 0) {
		for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
			strlist_push(&t->opts, defaults[i]);
	} else {
		for (size_t i = 0; i < m->options.n; i++) {
			if (!opt_valid(m->options.v[i])) {
				report_detail(r, "nfs.mounts %s: option \"%s\" is not valid (one option "
					      "a list item; no commas, spaces or parentheses)",
					      t->path, m->options.v[i]);
				strlist_free(&t->opts);
				return -EINVAL;
			}
			strlist_push(&t->opts, m->options.v[i]);
		}
	}
	/* an IPv6 server is written [addr]:/export, as mount(8) and mountinfo do */
	t->source = strchr(t->host, ':') ? xasprintf("[%s]:%s", t->host, t->export)
		: xasprintf("%s:%s", t->host, t->export);
	t->vers = parse_vers(&t->opts);
	t->ro = opt_find(&t->opts, "ro") != NULL;
	port = opt_find(&t->opts, "port");
	if (port && port[4] == '=') {
		char *end;
		unsigned long v;

		errno = 0;
		v = strtoul(port + 5, &end, 10);
		if (errno || *end || end == port + 5 || v > 65535) {
			report_detail(r, "nfs.mounts %s: bad %s", t->path, port);
			target_free(t);
			return -EINVAL;
		}
		t->port = (uint16_t)v;
	}
	return 0;
}

/* Options for mount -o: exactly the spec's (or the defaults). */
static char *mount_optstr(const struct nfs_target *t)
{
	return strlist_join(&t->opts, ",");
}

/*
 * Options for fstab: the spec's plus _netdev (order after the network),
 * nofail (a dead server does not fail the boot) and a systemd mount timeout
 * equal to the wait, so a hard mount on a dead server cannot hang the boot.
 * A key the user already gave is not added again.
 */
static char *fstab_optstr(const struct nfs_target *t)
{
	struct strlist l = { 0 };
	char *ret;

	for (size_t i = 0; i < t->opts.n; i++)
		strlist_push(&l, t->opts.v[i]);
	if (!opt_find(&l, "_netdev"))
		strlist_push(&l, "_netdev");
	if (!opt_find(&l, "nofail"))
		strlist_push(&l, "nofail");
	if (!opt_find(&l, "x-systemd.mount-timeout")) {
		char *o = xasprintf("x-systemd.mount-timeout=%llus",
				    (unsigned long long)((t->wait_ms + 999) / 1000));

		strlist_push(&l, o);
		free(o);
	}
	ret = strlist_join(&l, ",");
	strlist_free(&l);
	return ret;
}

static char *fstab_line(const struct nfs_target *t)
{
	char *src = field_escape(t->source), *path = field_escape(t->path), *opts = fstab_optstr(t);
	char *line = xasprintf("%s %s nfs %s 0 0\n", src, path, opts);

	free(src);
	free(path);
	free(opts);
	return line;
}

/* ---- mountinfo ------------------------------------------------------------ */

static void mountinfo_free(struct mountinfo *mi)
{
	for (size_t i = 0; i < mi->n; i++) {
		free(mi->v[i].mountpoint);
		free(mi->v[i].fstype);
		free(mi->v[i].source);
		free(mi->v[i].mntopts);
		free(mi->v[i].superopts);
	}
	free(mi->v);
	mi->v = NULL;
	mi->n = 0;
}

/*
 * proc(5): "36 35 98:0 /mnt1 /mnt2 rw,noatime master:1 - ext3 /dev/root rw,errors=continue".
 * Lines that do not parse are skipped.
 */
static void mountinfo_parse(const char *text, struct mountinfo *mi)
{
	memset(mi, 0, sizeof(*mi));
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');
		size_t len = nl ? (size_t)(nl - line) : strlen(line);
		const char *f[6];
		size_t fl[6];
		int nf = 0;
		const char *p = line, *end = line + len, *sep;

		/* id parent dev root mountpoint options */
		while (nf < 6 && p < end) {
			const char *s = p;

			while (p < end && *p != ' ')
				p++;
			f[nf] = s;
			fl[nf] = (size_t)(p - s);
			nf++;
			while (p < end && *p == ' ')
				p++;
		}
		sep = nf == 6 ? p : NULL;
		/* optional fields until " - " (a lone "-") */
		while (sep && sep < end) {
			if (sep[0] == '-' && (sep + 1 == end || sep[1] == ' '))
				break;
			sep = memchr(sep, ' ', (size_t)(end - sep));
			if (sep)
				sep++;
		}
		if (sep && sep < end) {
			const char *g[3];
			size_t gl[3];
			int ng = 0;

			p = sep + 1;
			while (p < end && *p == ' ')
				p++;
			while (ng < 3 && p < end) {
				const char *s = p;

				while (p < end && *p != ' ')
					p++;
				g[ng] = s;
				gl[ng] = (size_t)(p - s);
				ng++;
				while (p < end && *p == ' ')
					p++;
			}
			if (ng >= 2) {
				struct mi_entry *e;

				mi->v = xrealloc(mi->v, (mi->n + 1) * sizeof(*mi->v));
				e = &mi->v[mi->n++];
				e->mountpoint = field_unescape(f[4], fl[4]);
				e->mntopts = xstrndup(f[5], fl[5]);
				e->fstype = xstrndup(g[0], gl[0]);
				e->source = field_unescape(g[1], gl[1]);
				e->superopts = ng == 3 ? xstrndup(g[2], gl[2]) : xstrdup("");
			}
		}
		line = nl ? nl + 1 : NULL;
	}
}

/* The mount on top at path (the last one listed), or NULL. */
static const struct mi_entry *mountinfo_find(const struct mountinfo *mi, const char *path)
{
	for (size_t i = mi->n; i-- > 0;)
		if (strcmp(mi->v[i].mountpoint, path) == 0)
			return &mi->v[i];
	return NULL;
}

static bool is_nfs_type(const char *fstype)
{
	return strcmp(fstype, "nfs") == 0 || strcmp(fstype, "nfs4") == 0;
}

/* "host:/export" equal up to trailing slashes of the export. */
static bool source_eq(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	while (la > 1 && a[la - 1] == '/' && a[la - 2] != ':')
		la--;
	while (lb > 1 && b[lb - 1] == '/' && b[lb - 2] != ':')
		lb--;
	return la == lb && strncmp(a, b, la) == 0;
}

/*
 * Read the mount table the module should look at.  Real root: the kernel's.
 * Fake root: <root>/proc/self/mountinfo when it exists (a fixture, paths as
 * on the target); otherwise the kernel's entries below the root, with the
 * root taken off (a test that really mounts under --root sees its mounts).
 */
static void mountinfo_load(const struct ctx *c, struct mountinfo *mi)
{
	char *text = NULL;
	bool fake = !(!c->root || !*c->root || strcmp(c->root, "/") == 0);

	memset(mi, 0, sizeof(*mi));
	if (fake && fs_read(c, "/proc/self/mountinfo", &text, NULL) == 0) {
		mountinfo_parse(text, mi);
		mi->fixture = true;
		free(text);
		return;
	}
	if (fs_read_host("/proc/self/mountinfo", FS_MAX_READ, &text, NULL) < 0)
		return;
	mountinfo_parse(text, mi);
	free(text);
	if (fake) {
		char *rootdir = fs_rooted(c->root, "/");
		size_t rl = strlen(rootdir), kept = 0;

		while (rl > 1 && rootdir[rl - 1] == '/')
			rl--;
		for (size_t i = 0; i < mi->n; i++) {
			struct mi_entry *e = &mi->v[i];

			if (strncmp(e->mountpoint, rootdir, rl) == 0 && e->mountpoint[rl] == '/') {
				char *p = xstrdup(e->mountpoint + rl);

				free(e->mountpoint);
				e->mountpoint = p;
				mi->v[kept++] = *e;
			} else {
				free(e->mountpoint);
				free(e->fstype);
				free(e->source);
				free(e->mntopts);
				free(e->superopts);
			}
		}
		mi->n = kept;
		free(rootdir);
	}
}

/*
 * Compare the options that decide behaviour with what the kernel reports.
 * rsize/wsize are left out: the server may negotiate them down.  Appends
 * "want X, mounted Y" findings to out; returns the number of findings.
 */
static int options_diff(const struct nfs_target *t, const struct mi_entry *e, struct strbuf *out)
{
	static const char *const keys[] = { "proto", "nconnect", "sec", "timeo", "retrans", "port" };
	int n = 0;
	bool mounted_ro = opt_key_eq(e->mntopts, "ro") || strncmp(e->mntopts, "ro,", 3) == 0;
	const char *v;
	char *have;

	if (t->ro != mounted_ro) {
		sb_printf(out, "%swant %s, mounted %s", n++ ? "; " : "", t->ro ? "ro" : "rw",
			  mounted_ro ? "ro" : "rw");
	}
	v = opt_find(&t->opts, "vers");
	if (!v)
		v = opt_find(&t->opts, "nfsvers");
	if (v && (v = strchr(v, '='))) {
		v++;
		have = optstr_get(e->superopts, "vers");
		/* "4" matches 4.x; "4.1" must match exactly */
		if (have && !(strcmp(have, v) == 0 ||
			      (!strchr(v, '.') && strncmp(have, v, strlen(v)) == 0 && have[strlen(v)] == '.')))
			sb_printf(out, "%swant vers=%s, mounted vers=%s", n++ ? "; " : "", v, have);
		free(have);
	}
	for (size_t k = 0; k < sizeof(keys) / sizeof(keys[0]); k++) {
		v = opt_find(&t->opts, keys[k]);
		if (!v || !strchr(v, '='))
			continue;
		v = strchr(v, '=') + 1;
		have = optstr_get(e->superopts, keys[k]);
		if (have && strcmp(have, v) != 0)
			sb_printf(out, "%swant %s=%s, mounted %s=%s", n++ ? "; " : "", keys[k], v,
				  keys[k], have);
		free(have);
	}
	for (size_t k = 0; k < 2; k++) {
		const char *want = k == 0 ? "soft" : "hard", *other = k == 0 ? "hard" : "soft";
		char *o;

		if (!opt_find(&t->opts, want))
			continue;
		o = optstr_get(e->superopts, other);
		if (o)
			sb_printf(out, "%swant %s, mounted %s", n++ ? "; " : "", want, other);
		free(o);
	}
	if (opt_find(&t->opts, "nolock") && (have = optstr_get(e->superopts, "local_lock"))) {
		if (strcmp(have, "all") != 0)
			sb_printf(out, "%swant nolock, mounted local_lock=%s", n++ ? "; " : "", have);
		free(have);
	}
	return n;
}

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
static char *first_line(const char *s)
{
	while (s && (*s == '\n' || *s == ' '))
		s++;
	if (!s || !*s)
		return xstrdup("(no message)");
	return xstrndup(s, strcspn(s, "\n"));
}

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
		       void *out, size_t outlen, unsigned timeout_ms)
{
	const struct proc_limits lim = { .timeout_ms = timeout_ms, .reap_ms = 500, .eof_ends = true };
	struct bounded b = { fn, arg, out, outlen };
	struct proc_child ch = { 0 };
	int ret = proc_start_fn(&ch, bounded_child, &b, outlen);

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

/* ---- real ops: libnfs probe ------------------------------------------------- */

struct rpc_args {
	const char *host, *export;
	int vers;
	unsigned timeout_ms;
};

/* Used by the libnfs probe (and the unit tests' fake); unused --without-libnfs. */
__attribute__((unused))
static void exports_add(struct probe_result *res, const char *line)
{
	size_t used = strlen(res->exports), n = strlen(line);

	if (used + n + 2 > sizeof(res->exports))
		return;
	memcpy(res->exports + used, line, n);
	res->exports[used + n] = '\n';
	res->exports[used + n + 1] = '\0';
}

/* Is export (or a directory above it) in the newline-separated list? */
__attribute__((unused))
static bool export_listed(const char *list, const char *export)
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

#ifdef HAVE_LIBNFS
static void rpc_probe_child(const void *argp, void *outp)
{
	const struct rpc_args *a = argp;
	struct probe_result *res = outp;
	struct nfs_context *nfs;
	int timeout_s = (int)((a->timeout_ms + 999) / 1000), r;

	if (a->vers == 3) {
		struct exportnode *ex = mount_getexports(a->host);

		res->have_exports = ex != NULL;
		for (struct exportnode *e = ex; e; e = e->ex_next) {
			struct strbuf sb = STRBUF_INIT;

			sb_append(&sb, e->ex_dir);
			for (struct groupnode *g = e->ex_groups; g; g = g->gr_next)
				sb_printf(&sb, "%s%s", g == e->ex_groups ? "  " : ",", g->gr_name);
			exports_add(res, sb_str(&sb));
			sb_free(&sb);
		}
		mount_free_export_list(ex);
	}
	nfs = nfs_init_context();
	if (!nfs) {
		res->err = NE_OTHER;
		res->errnum = ENOMEM;
		snprintf(res->msg, sizeof(res->msg), "libnfs: cannot create a context");
		return;
	}
	nfs_set_timeout(nfs, timeout_s * 1000);
	nfs_set_autoreconnect(nfs, 0);
	if (a->vers == 3) {
		snprintf(res->what, sizeof(res->what), "MOUNT %s", a->export);
		r = nfs_mount(nfs, a->host, a->export);
	} else {
		snprintf(res->what, sizeof(res->what), "NFSv4 port %u", NFS_PORT);
		nfs_set_version(nfs, 4);        /* NFS_V4 */
		r = nfs_mount(nfs, a->host, "/");
	}
	if (r == 0) {
		struct nfs_stat_64 st;

		if (a->vers != 3)
			snprintf(res->what, sizeof(res->what), "LOOKUP %s", a->export);
		r = nfs_stat64(nfs, a->vers == 3 ? "/" : a->export, &st);
		if (r == 0) {
			res->have_mode = true;
			res->mode = (unsigned)(st.nfs_mode & 07777);
		}
	}
	if (r < 0) {
		const char *m = nfs_get_error(nfs);

		res->errnum = -r;
		snprintf(res->msg, sizeof(res->msg), "%s", m && *m ? m : strerror(-r));
		if (r == -ENOENT || (r == -EACCES && res->have_exports &&
				     !export_listed(res->exports, a->export)))
			res->err = NE_NOEXPORT;
		else if (r == -EACCES || r == -EPERM)
			res->err = NE_DENIED;
		else
			res->err = NE_UNREACHABLE;
		/* v4 has no export list: show what the pseudo root holds instead. */
		if (res->err == NE_NOEXPORT && a->vers != 3) {
			struct nfsdir *dir;

			if (nfs_opendir(nfs, "/", &dir) == 0) {
				struct nfsdirent *de;

				res->have_exports = true;
				while ((de = nfs_readdir(nfs, dir))) {
					char line[300];

					if (strcmp(de->name, ".") == 0 || strcmp(de->name, "..") == 0)
						continue;
					snprintf(line, sizeof(line), "/%s", de->name);
					exports_add(res, line);
				}
				nfs_closedir(nfs, dir);
			}
		}
	}
	nfs_destroy_context(nfs);
}
#endif

static int rpc_probe_real(const char *host, const char *export, int vers, unsigned timeout_ms,
			  struct probe_result *res)
{
#ifdef HAVE_LIBNFS
	struct rpc_args a = { host, export, vers, timeout_ms };
	int r;

	memset(res, 0, sizeof(*res));
	/* libnfs's own timeout bounds each RPC; the child's deadline bounds the whole. */
	r = run_bounded(rpc_probe_child, &a, res, sizeof(*res), timeout_ms + 2000);
	if (r < 0) {
		memset(res, 0, sizeof(*res));
		res->err = NE_UNREACHABLE;
		res->errnum = -r;
		snprintf(res->what, sizeof(res->what), "%s", vers == 3 ? "MOUNT protocol" : "NFSv4");
		snprintf(res->msg, sizeof(res->msg), "%s",
			 r == -ETIMEDOUT ? "no answer" : "probe failed");
		return r;
	}
	res->what[sizeof(res->what) - 1] = '\0';
	res->msg[sizeof(res->msg) - 1] = '\0';
	res->exports[sizeof(res->exports) - 1] = '\0';
	return res->err == NE_OK ? 0 : -(res->errnum ? res->errnum : EIO);
#else
	(void)host;
	(void)export;
	(void)vers;
	(void)timeout_ms;
	memset(res, 0, sizeof(*res));
	return -ENOSYS;         /* built --without-libnfs: the probe stops at TCP */
#endif
}

/* ---- real ops: inspect a mounted path -------------------------------------- */

struct inspect_args {
	const char *hostpath;
	bool write_probe;
};

static void inspect_child(const void *argp, void *outp)
{
	const struct inspect_args *a = argp;
	struct mp_info *mp = outp;
	struct statfs sfs;
	struct stat st;
	char name[PATH_MAX];
	char host[64] = "node";
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
	(void)gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	snprintf(name, sizeof(name), "%s/.hpcinit-probe.%s.%ld", a->hostpath, host, (long)getpid());
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
	struct inspect_args a = { hostpath, write_probe };

	memset(ret, 0, sizeof(*ret));
	return run_bounded(inspect_child, &a, ret, sizeof(*ret), timeout_ms);
}

static const struct nfs_ops real_ops = {
	.tcp_connect = tcp_connect_real,
	.rpc_probe = rpc_probe_real,
	.inspect = inspect_real,
};

/* ---- the probe, with backoff ------------------------------------------------- */

/*
 * One attempt: TCP to the port(s) the mount needs, then the libnfs probe.
 * v3 needs the portmapper (111), which names the NFS and MOUNT ports (Blob
 * NFS serves NFS on 2048, not 2049); v4 needs only the NFS port.
 */
static int probe_once(const struct nfs_target *t, unsigned budget_ms, struct probe_result *res)
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
		r = ops->tcp_connect(t->host, ports[i], to ? to : 1, res->msg, sizeof(res->msg));
		if (r < 0) {
			res->err = NE_UNREACHABLE;
			res->errnum = -r;
			return r;
		}
	}
	/* libnfs talks v4 on 2049 only; a v4 mount on another port stops at TCP. */
	if (t->vers != 3 && t->port && t->port != NFS_PORT)
		return 0;
	r = ops->rpc_probe(t->host, t->export, t->vers,
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
static int probe_wait(const struct ctx *c, const struct nfs_target *t, struct probe_result *res,
		      uint64_t *ret_waited, unsigned *ret_attempts)
{
	struct ctx sub = *c;
	uint64_t start = now_ms(), delay = NFS_BACKOFF_FIRST_MS;
	unsigned attempts = 0;
	bool logged = false;
	int r;

	sub.deadline_ms = start + t->wait_ms;
	if (c->deadline_ms && c->deadline_ms < sub.deadline_ms)
		sub.deadline_ms = c->deadline_ms;
	for (;;) {
		uint64_t left = ctx_remaining_ms(&sub);

		attempts++;
		r = probe_once(t, (unsigned)(left > NFS_RPC_TIMEOUT_MS ? NFS_RPC_TIMEOUT_MS
					     : left ? left : 1), res);
		if (r == 0)
			break;
		if (!logged) {
			log_info("%s: waiting for the server (%s: %s), up to %llus", t->source,
				 res->what, res->msg, (unsigned long long)(ctx_remaining_ms(&sub) / 1000));
			logged = true;
		} else {
			log_debug("%s: %s: %s; retrying", t->source, res->what, res->msg);
		}
		if (!ctx_backoff(&sub, &delay, NFS_BACKOFF_CAP_MS))
			break;
	}
	*ret_waited = now_ms() - start;
	*ret_attempts = attempts;
	return r;
}

/* Append the export list (or why there is none) to the report. */
static void detail_exports(struct report *r, const struct nfs_target *t,
			   const struct probe_result *pr)
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
static void explain_probe(struct report *r, const struct nfs_target *t,
			  const struct probe_result *pr, uint64_t waited, unsigned attempts,
			  char *summary, size_t slen)
{
	char w[32];

	fmt_duration(waited, w, sizeof(w));
	switch (pr->err) {
	case NE_NOEXPORT:
		report_detail(r, "%s: export %s not found on %s (%s: %s); waited %s, %u attempts",
			      t->path, t->export, t->host, pr->what, pr->msg, w, attempts);
		detail_exports(r, t, pr);
		report_detail(r, "  fix nfs.mounts source \"%s\" to one of the exports, or export it on the server",
			      t->source);
		snprintf(summary, slen, "%s: export %s not found on %s", t->path, t->export, t->host);
		break;
	case NE_DENIED:
		report_detail(r, "%s: %s refused %s: permission denied (%s: %s); waited %s",
			      t->path, t->host, t->export, pr->what, pr->msg, w);
		detail_exports(r, t, pr);
		report_detail(r, "  the export's client list must include this node's address "
			      "(and sec= must match); on Blob NFS, allow the VNet/subnet on the storage account");
		snprintf(summary, slen, "%s: %s: permission denied by %s", t->path, t->export, t->host);
		break;
	default:
		report_detail(r, "%s: server %s unreachable on %s: %s; waited %s (%u attempts, wait %llus)",
			      t->path, t->host, pr->what, pr->msg, w, attempts,
			      (unsigned long long)((t->wait_ms + 999) / 1000));
		report_detail(r, "  check that the NFS server is running and that TCP %s is open "
			      "from this node (NSG, firewall); raise nfs.mounts wait if the server boots later",
			      pr->what);
		snprintf(summary, slen, "%s: server %s unreachable (%s) after %s", t->path, t->host,
			 pr->what, w);
		break;
	}
}

/* mount(8)'s failure, in the report. */
static void explain_mount(struct report *r, const struct nfs_target *t, enum nfs_err e,
			  const struct proc_result *pr, unsigned timeout_ms,
			  char *summary, size_t slen)
{
	char *line = first_line(pr->err && *pr->err ? pr->err : pr->out);

	switch (e) {
	case NE_NODEV:
		report_detail(r, "%s: the kernel has no NFS client support (mount: %s; ENODEV, "
			      "'unknown filesystem type'): install nfs-common (RHEL: nfs-utils) and load "
			      "the nfs module (modprobe nfs), or use a kernel with NFS", t->path, line);
		snprintf(summary, slen, "%s: kernel has no NFS client support (ENODEV)", t->path);
		break;
	case NE_NOHELPER:
		report_detail(r, "%s: mount.nfs is missing (mount: %s): install nfs-common (RHEL: nfs-utils)",
			      t->path, line);
		snprintf(summary, slen, "%s: mount.nfs missing", t->path);
		break;
	case NE_STATD:
		report_detail(r, "%s: NFSv3 locking needs rpc.statd, which is not running (mount: %s): "
			      "start it (systemctl start rpc-statd) or add nolock to the options if "
			      "locks may stay local to each node", t->path, line);
		snprintf(summary, slen, "%s: rpc.statd not running (needed for NFSv3 locks)", t->path);
		break;
	case NE_DENIED:
		report_detail(r, "%s: permission denied mounting %s (mount: %s); the export's client list "
			      "must include this node, and sec= must match", t->path, t->source, line);
		snprintf(summary, slen, "%s: permission denied mounting %s", t->path, t->source);
		break;
	case NE_NOEXPORT:
		report_detail(r, "%s: %s: no such export or path on the server (mount: %s)",
			      t->path, t->source, line);
		snprintf(summary, slen, "%s: export %s not found", t->path, t->export);
		break;
	case NE_TIMEOUT:
		if (pr->timed_out)
			report_detail(r, "%s: mount of %s timed out after %us and was killed; the server "
				      "answered the probe, so check its load and the proto/nconnect options",
				      t->path, t->source, timeout_ms / 1000);
		else
			report_detail(r, "%s: mount of %s timed out (mount: %s); the server answered the "
				      "probe, so check its load and the proto/nconnect options",
				      t->path, t->source, line);
		snprintf(summary, slen, "%s: mount timed out", t->path);
		break;
	case NE_UNREACHABLE:
		report_detail(r, "%s: mount of %s lost the server (mount: %s)", t->path, t->source, line);
		snprintf(summary, slen, "%s: server %s unreachable during mount", t->path, t->host);
		break;
	default:
		report_detail(r, "%s: mount of %s failed (exit %d): %s", t->path, t->source,
			      pr->exit_code, line);
		snprintf(summary, slen, "%s: mount failed: %s", t->path, line);
		break;
	}
	free(line);
}

/* ---- one mount --------------------------------------------------------------- */

static bool real_root(const struct ctx *c)
{
	return !c->root || !*c->root || strcmp(c->root, "/") == 0;
}

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
				   bool write_probe, bool check_magic, char *summary, size_t slen)
{
	char *hp = ctx_path(c, t->path);
	struct mp_info mp;
	enum rstatus st = ST_OK;
	int rc = ops->inspect(hp, write_probe, NFS_INSPECT_TIMEOUT_MS, &mp);

	free(hp);
	if (rc < 0) {
		report_detail(r, "%s: mounted but not answering within %us (%s): the server is down or the "
			      "mount is stale; check %s, then umount -f %s and run hpcinit apply",
			      t->path, NFS_INSPECT_TIMEOUT_MS / 1000, strerror(-rc), t->host, t->path);
		snprintf(summary, slen, "%s: mounted but not answering", t->path);
		return ST_FAILED;
	}
	if (mp.statfs_err || mp.stat_err) {
		report_detail(r, "%s: cannot stat the mount: %s", t->path,
			      strerror(mp.statfs_err ? mp.statfs_err : mp.stat_err));
		snprintf(summary, slen, "%s: cannot stat the mount", t->path);
		return ST_FAILED;
	}
	if (check_magic && mp.fstype != NFS_SUPER_MAGIC_) {
		report_detail(r, "%s: statfs reports filesystem type 0x%lx, not NFS (0x%x)", t->path,
			      (unsigned long)mp.fstype, NFS_SUPER_MAGIC_);
		snprintf(summary, slen, "%s: not an NFS filesystem", t->path);
		return ST_FAILED;
	}
	note_mode(r, t, mp.mode);
	if (write_probe && mp.write_err > 0) {
		if (mp.write_err == EACCES || mp.write_err == EPERM) {
			report_detail(r, "%s: root cannot write to the share (%s a probe file: %s): the export "
				      "squashes root (root_squash; Blob NFS can map root to nobody) or the root "
				      "directory's mode denies it; users with access can still write",
				      t->path, mp.write_step, strerror(mp.write_err));
			snprintf(summary, slen, "%s: root cannot write", t->path);
			st = ST_DEGRADED;
		} else {
			report_detail(r, "%s: the share is mounted rw but a write probe failed (%s: %s)%s",
				      t->path, mp.write_step, strerror(mp.write_err),
				      mp.write_err == EROFS ? "; the server exports it read-only: add ro to "
				      "the options or fix the export" : "");
			snprintf(summary, slen, "%s: write probe failed: %s", t->path, strerror(mp.write_err));
			st = ST_FAILED;
		}
	}
	return st;
}

static enum rstatus mount_one(struct ctx *c, struct report *r, const struct nfs_target *t,
			      bool *ret_not_mounted, char *summary, size_t slen)
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
	e = mountinfo_find(&mi, t->path);
	if (e && is_nfs_type(e->fstype) && source_eq(e->source, t->source)) {
		struct strbuf diff = STRBUF_INIT;

		/* No write probe here: a re-run must not touch the share (its root's mtime). */
		st = verify_mounted(c, r, t, false, !mi.fixture, summary, slen);
		if (st != ST_FAILED && options_diff(t, e, &diff)) {
			report_detail(r, "%s: mounted with other options than the spec: %s; to change them: "
				      "umount %s && hpcinit apply (not done automatically: it would break "
				      "running jobs)", t->path, sb_str(&diff), t->path);
			if (c->mode == RUN_APPLY) {
				snprintf(summary, slen, "%s: wrong mount options", t->path);
				st = st == ST_OK ? ST_DEGRADED : st;
			} else if (st == ST_OK) {
				st = ST_CHANGED;        /* drift */
			}
		}
		if (st == ST_OK)
			report_detail(r, "%s: %s mounted (%s)", t->path, t->source, e->fstype);
		sb_free(&diff);
		goto out;
	}
	if (e) {
		report_detail(r, "%s: already has %s (%s) mounted; unmount it or change the nfs.mounts path "
			      "(hpcinit does not stack mounts)", t->path, e->source, e->fstype);
		snprintf(summary, slen, "%s: another filesystem is mounted there", t->path);
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
			snprintf(summary, slen, "%s: cannot create the mount point", t->path);
			st = ST_FAILED;
			goto out;
		}
	} else if (!S_ISDIR(sb.st_mode)) {
		report_detail(r, "%s: exists and is not a directory; it cannot be a mount point", t->path);
		snprintf(summary, slen, "%s: not a directory", t->path);
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
		struct probe_result pr;
		uint64_t waited;
		unsigned attempts;
		char w[32];

		if (probe_wait(c, t, &pr, &waited, &attempts) < 0) {
			explain_probe(r, t, &pr, waited, attempts, summary, slen);
			st = ST_FAILED;
			goto out;
		}
		fmt_duration(waited, w, sizeof(w));
		if (attempts > 1)
			report_detail(r, "%s: server %s answered after %s (%u attempts)", t->path, t->host,
				      w, attempts);
		if (!real_root(c) && !prog) {
			report_detail(r, "%s: fake root: not mounting; would run: %s", t->path, cmd);
			/* what the probe saw of the share's root stands in for the mount's */
			if (pr.have_mode)
				note_mode(r, t, pr.mode);
			st = ST_CHANGED;
			goto out;
		}
	}
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
			snprintf(summary, slen, "%s: cannot run %s", t->path, argv[0]);
			st = ST_FAILED;
			goto out;
		}
		ne = classify_mount(&pr);
		if (ne != NE_OK) {
			explain_mount(r, t, ne, &pr, to, summary, slen);
			report_detail(r, "  ran: %s", cmd);
			proc_result_free(&pr);
			st = ST_FAILED;
			goto out;
		}
		proc_result_free(&pr);
	}
	/* Believe the kernel, not mount's exit code. */
	mountinfo_free(&mi);
	mountinfo_load(c, &mi);
	e = mountinfo_find(&mi, t->path);
	if (!e || !is_nfs_type(e->fstype) || !source_eq(e->source, t->source)) {
		report_detail(r, "%s: %s exited 0, but mountinfo shows %s on %s", t->path, argv[0],
			      e ? e->source : "nothing", t->path);
		snprintf(summary, slen, "%s: mount not visible after mount(8)", t->path);
		st = ST_FAILED;
		goto out;
	}
	st = verify_mounted(c, r, t, !t->ro, !mi.fixture, summary, slen);
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
static void foreign_fstab_lines(const struct ctx *c, struct report *r, const char *tag,
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
				char *mp = field_unescape(f2, l2);

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

/* ---- exports (head role) ------------------------------------------------------- */

static void exportfs_reload(struct ctx *c, struct report *r, enum rstatus *st)
{
	const char *const argv[] = { "exportfs", "-ra", NULL };
	struct proc_result pr;
	char *which;
	int rc;

	if (!real_root(c)) {
		report_detail(r, "fake root: exportfs -ra not run");
		return;
	}
	which = proc_which("exportfs");
	if (!which) {
		report_detail(r, "exportfs not found: no kernel NFS server here (install nfs-kernel-server; "
			      "RHEL: nfs-utils); %s is written but nothing serves it", EXPORTS_FILE);
		if (*st != ST_FAILED)
			*st = ST_DEGRADED;
		return;
	}
	free(which);
	rc = proc_run(argv, NULL, NULL, 30000, &pr);
	if (rc < 0 || pr.exit_code != 0) {
		char *line = rc < 0 ? xstrdup(strerror(-rc)) : first_line(pr.err);

		report_detail(r, "exportfs -ra failed%s: %s", pr.timed_out ? " (timed out)" : "", line);
		free(line);
		*st = ST_FAILED;
	} else {
		report_detail(r, "exportfs -ra: exports reloaded");
	}
	if (rc == 0)
		proc_result_free(&pr);
}

static enum rstatus do_exports(struct ctx *c, struct report *r, unsigned *ret_n,
			       char *summary, size_t slen)
{
	static const char *const defaults[] = { "rw", "sync", "no_subtree_check" };
	const struct spec *s = c->spec;
	bool head = s->cluster.role == ROLE_HEAD;
	size_t n = head ? s->nfs.n_exports : 0;
	struct strbuf body = STRBUF_INIT;
	char hostname[256] = "";
	enum rstatus st = ST_OK;
	int rc;

	*ret_n = 0;
	if (!head && s->nfs.n_exports)
		report_detail(r, "nfs.exports: cluster.role is compute, ignoring (exports are for role: head)");
	if (n == 0) {
		/* The file is ours: no exports, no file. */
		rc = fs_remove(c, r, EXPORTS_FILE);
		if (rc < 0)
			st = ST_FAILED;
		else if (rc == 1 && c->mode == RUN_APPLY)
			exportfs_reload(c, r, &st);
		return st;
	}
	if (c->hostname)
		snprintf(hostname, sizeof(hostname), "%s", c->hostname);
	else if (gethostname(hostname, sizeof(hostname) - 1) < 0)
		snprintf(hostname, sizeof(hostname), "this-node");
	sb_printf(&body, "# Written by hpcinit from nfs.exports of cluster %s; edit the spec, not this file.\n",
		  s->cluster.name);
	for (size_t i = 0; i < n; i++) {
		const struct spec_nfs_export *x = &s->nfs.exports[i];
		const char *clients = x->clients ? x->clients :
			s->cluster.has_network ? s->cluster.network.text : NULL;
		struct strlist opts = { 0 };
		char *path, *o;
		bool ok = true;

		if (!x->path || !path_valid(x->path)) {
			report_detail(r, "nfs.exports: path \"%s\" must be an absolute path other than /",
				      x->path ? x->path : "");
			ok = false;
		}
		if (!clients || !*clients) {
			report_detail(r, "nfs.exports %s: no clients, and cluster.network is not set",
				      x->path ? x->path : "");
			ok = false;
		} else {
			for (const char *p = clients; *p; p++)
				if (*p == ' ' || *p == '\t' || *p == '(' || *p == ')' || *p == '#' ||
				    (unsigned char)*p < 0x21) {
					report_detail(r, "nfs.exports %s: clients \"%s\" must be one host, "
						      "CIDR or *", x->path, clients);
					ok = false;
					break;
				}
		}
		for (size_t k = 0; k < x->options.n; k++)
			if (!opt_valid(x->options.v[k])) {
				report_detail(r, "nfs.exports %s: option \"%s\" is not valid", x->path,
					      x->options.v[k]);
				ok = false;
			}
		if (!ok) {
			st = ST_FAILED;
			continue;
		}
		if (x->options.n)
			for (size_t k = 0; k < x->options.n; k++)
				strlist_push(&opts, x->options.v[k]);
		else
			for (size_t k = 0; k < sizeof(defaults) / sizeof(defaults[0]); k++)
				strlist_push(&opts, defaults[k]);
		o = strlist_join(&opts, ",");
		path = field_escape(x->path);
		sb_printf(&body, "%s %s(%s)\n", path, clients, o);
		report_detail(r, "export: clients in %s may mount %s:%s (%s)", clients, hostname, x->path, o);
		free(path);
		free(o);
		strlist_free(&opts);
		/* Directories: created when missing, existing ones are left as they are. */
		if (!fs_exists(c, x->path) && fs_mkdir_p(c, r, x->path, 0755, 0, 0) < 0)
			st = ST_FAILED;
		(*ret_n)++;
	}
	if (st == ST_FAILED) {
		snprintf(summary, slen, "nfs.exports: invalid entries, %s not written", EXPORTS_FILE);
		sb_free(&body);
		return st;
	}
	if (!fs_exists(c, "/etc/exports.d") && fs_mkdir_p(c, r, "/etc/exports.d", 0755, 0, 0) < 0) {
		sb_free(&body);
		snprintf(summary, slen, "cannot create /etc/exports.d");
		return ST_FAILED;
	}
	rc = fs_write(c, r, EXPORTS_FILE, body.buf, body.len, 0644, 0, 0);
	sb_free(&body);
	if (rc < 0) {
		snprintf(summary, slen, "cannot write %s", EXPORTS_FILE);
		return ST_FAILED;
	}
	if (c->mode == RUN_APPLY) {
		if (rc == 1)
			exportfs_reload(c, r, &st);
		else if (real_root(c)) {
			char *which = proc_which("exportfs");

			if (!which)
				exportfs_reload(c, r, &st);     /* reports the missing server */
			free(which);
		}
	}
	if (st == ST_DEGRADED && !summary[0])
		snprintf(summary, slen, "exports written, but no NFS server here to serve them");
	return st;
}

/* ---- the module ------------------------------------------------------------------ */

static int nfs_run(struct ctx *c, struct report *r)
{
	const struct spec *s = c->spec;
	const struct spec_nfs *n = &s->nfs;
	struct nfs_target *t;
	struct strbuf body = STRBUF_INIT;
	char first_fail[256] = "", first_degr[256] = "", xsum[256] = "";
	unsigned n_ok = 0, n_changed = 0, n_drift = 0, n_failed = 0, n_degraded = 0, n_exports = 0;
	bool fstab_stale = false;
	enum rstatus xst;
	size_t bad = 0;
	int rc;

	if (n->n_mounts > NFS_MAX_MOUNTS || n->n_exports > NFS_MAX_MOUNTS) {
		report_set(r, ST_FAILED, "nfs: more than %u mounts or exports", NFS_MAX_MOUNTS);
		return -E2BIG;
	}
	t = xcalloc(n->n_mounts ? n->n_mounts : 1, sizeof(*t));
	for (size_t i = 0; i < n->n_mounts; i++) {
		if (target_init(&t[i], &n->mounts[i], r) < 0) {
			bad++;
			continue;
		}
		for (size_t j = 0; j < i; j++)
			if (t[j].path && strcmp(t[j].path, t[i].path) == 0) {
				report_detail(r, "nfs.mounts: %s is mounted twice", t[i].path);
				bad++;
			}
	}
	if (bad) {
		report_set(r, ST_FAILED, "nfs: %zu invalid mount entr%s in the spec", bad, bad == 1 ? "y" : "ies");
		rc = -EINVAL;
		goto out;
	}

	/* fstab first: even when the server is not there yet, the next boot will mount it. */
	for (size_t i = 0; i < n->n_mounts; i++) {
		char *line = fstab_line(&t[i]);

		sb_append(&body, line);
		free(line);
	}
	rc = fs_managed_block(c, r, "/etc/fstab", s->cluster.name, sb_str(&body), 0644, 0, 0);
	if (rc < 0) {
		snprintf(first_fail, sizeof(first_fail), "cannot update /etc/fstab: %s", strerror(-rc));
		n_failed++;
	} else if (rc == 1 && c->mode != RUN_APPLY) {
		fstab_stale = true;
		if (c->mode == RUN_CHECK)
			report_detail(r, "/etc/fstab: the managed lines for cluster %s are stale or missing",
				      s->cluster.name);
	}
	foreign_fstab_lines(c, r, s->cluster.name, t, n->n_mounts);

	for (size_t i = 0; i < n->n_mounts; i++) {
		char sum[256] = "";
		bool not_mounted = false;
		enum rstatus st = mount_one(c, r, &t[i], &not_mounted, sum, sizeof(sum));

		report_raise(r, st);
		switch (st) {
		case ST_OK:
			n_ok++;
			break;
		case ST_CHANGED:
			if (not_mounted)
				n_changed++;
			else
				n_drift++;
			break;
		case ST_DEGRADED:
			n_degraded++;
			if (!first_degr[0])
				snprintf(first_degr, sizeof(first_degr), "%s", sum);
			break;
		default:
			n_failed++;
			if (!first_fail[0])
				snprintf(first_fail, sizeof(first_fail), "%s", sum);
			break;
		}
	}

	xst = do_exports(c, r, &n_exports, xsum, sizeof(xsum));
	report_raise(r, xst);
	if (xst == ST_FAILED) {
		n_failed++;
		if (!first_fail[0])
			snprintf(first_fail, sizeof(first_fail), "%s", xsum);
	} else if (xst == ST_DEGRADED && !first_degr[0]) {
		snprintf(first_degr, sizeof(first_degr), "%s", xsum);
	}

	if (n_failed) {
		report_set(r, ST_FAILED, "%s%s", first_fail, n_failed > 1 ? " (and more failures)" : "");
		rc = -EIO;
	} else {
		struct strbuf sum = STRBUF_INIT;
		const char *verb = c->mode == RUN_APPLY ? "mounted" : c->mode == RUN_CHECK ?
			"not mounted" : "to mount";

		sb_printf(&sum, "%zu mount%s", n->n_mounts, n->n_mounts == 1 ? "" : "s");
		if (n->n_mounts)
			sb_printf(&sum, ": %u ok", n_ok);
		if (n_changed)
			sb_printf(&sum, ", %u %s", n_changed, verb);
		if (n_drift)
			sb_printf(&sum, ", %u with other options", n_drift);
		if (fstab_stale)
			sb_printf(&sum, "; fstab %s", c->mode == RUN_CHECK ? "stale" : "to update");
		if (n_degraded)
			sb_printf(&sum, ", %u degraded (%s)", n_degraded, first_degr);
		if (n_exports)
			sb_printf(&sum, "; %u export%s", n_exports, n_exports == 1 ? "" : "s");
		if (xst == ST_DEGRADED)
			sb_printf(&sum, " (%s)", xsum);
		report_set(r, r->status, "%s", sb_str(&sum));
		sb_free(&sum);
		rc = 0;
	}
out:
	for (size_t i = 0; i < n->n_mounts; i++)
		target_free(&t[i]);
	free(t);
	sb_free(&body);
	return rc;
}

static bool nfs_enabled(const struct spec *s)
{
	return s->nfs.present;
}

/* The sum of the mounts' waits, plus time for mount(8) and the checks. */
static uint64_t nfs_timeout_ms(const struct spec *s)
{
	uint64_t ms = 30000;

	for (size_t i = 0; i < s->nfs.n_mounts && i < NFS_MAX_MOUNTS; i++)
		ms += (s->nfs.mounts[i].wait_ms ? s->nfs.mounts[i].wait_ms : NFS_DEFAULT_WAIT_MS) +
			NFS_MOUNT_TIMEOUT_MS + 2 * NFS_INSPECT_TIMEOUT_MS;
	return ms;
}

static int nfs_check(struct ctx *c, struct report *r)
{
	return nfs_run(c, r);
}

static int nfs_apply(struct ctx *c, struct report *r)
{
	return nfs_run(c, r);
}

const struct module nfs_module = {
	.name = "nfs",
	.enabled = nfs_enabled,
	.needs = NULL,
	.timeout_ms = nfs_timeout_ms,
	.check = nfs_check,
	.apply = nfs_apply,
};
