/* SPDX-License-Identifier: MIT */
/*
 * kernel: RDMA drivers (DKMS OFED, or the distro's) are built for one
 * kernel.  check verifies that the running kernel is the expected one, that
 * the listed modules exist for it and are loaded, that its packages are held,
 * and whether a newer kernel is installed that the next reboot would boot.
 * apply holds the running kernel with the distro's own mechanism:
 *   Debian/Ubuntu   dpkg selections (what apt-mark hold writes), plus an
 *                   unattended-upgrades blacklist
 *   RHEL family     exclude=kernel* in [main] of dnf.conf (yum.conf)
 *   SLES/openSUSE   a package lock in /etc/zypp/locks
 *   Azure Linux     /etc/tdnf/locks.d/hpcinit-kernel.conf (exact names:
 *                   tdnf locks do not take wildcards)
 */
#include "config.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "proc.h"

#define KREL_MAX 128                    /* longest kernel release we accept */
#define WALK_MAX_DEPTH 10               /* lib/modules/<rel>/kernel/drivers/... */
#define WALK_MAX_ENTRIES 200000         /* bound on a hostile or huge tree */
#define DPKG_TIMEOUT_MS 60000
#define KERNEL_RELEASE_FILE "/etc/hpcinit/kernel-release"
#define APT_HOLD_PATH "/etc/apt/apt.conf.d/51hpcinit-kernel-hold"
#define TDNF_LOCK_PATH "/etc/tdnf/locks.d/hpcinit-kernel.conf"
#define ZYPP_LOCKS_PATH "/etc/zypp/locks"

enum distro { DISTRO_UNKNOWN, DISTRO_DEBIAN, DISTRO_RHEL, DISTRO_SUSE, DISTRO_AZL };

struct os_info {
	enum distro family;
	char id[64];
	char pretty[128];
};

static const char *distro_name(enum distro d)
{
	switch (d) {
	case DISTRO_DEBIAN:
		return "Debian/Ubuntu";
	case DISTRO_RHEL:
		return "RHEL family";
	case DISTRO_SUSE:
		return "SLES/openSUSE";
	case DISTRO_AZL:
		return "Azure Linux";
	case DISTRO_UNKNOWN:
		break;
	}
	return "unknown";
}

/* ---- /etc/os-release ------------------------------------------------- */

/* Value of KEY= in os-release text, unquoted, into buf ("" when absent). */
static void osrel_get(const char *text, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);

	buf[0] = '\0';
	for (const char *p = text; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);

		if (ll > kl && strncmp(p, key, kl) == 0 && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t vl = ll - kl - 1;

			if (vl >= 2 && (v[0] == '"' || v[0] == '\'') && v[vl - 1] == v[0]) {
				v++;
				vl -= 2;
			}
			if (vl >= n)
				vl = n - 1;
			memcpy(buf, v, vl);
			buf[vl] = '\0';
			return;
		}
		p = nl ? nl + 1 : NULL;
	}
}

static enum distro distro_of_word(const char *w)
{
	static const struct { const char *id; enum distro d; } map[] = {
		{ "debian", DISTRO_DEBIAN }, { "ubuntu", DISTRO_DEBIAN },
		{ "rhel", DISTRO_RHEL }, { "centos", DISTRO_RHEL }, { "rocky", DISTRO_RHEL },
		{ "almalinux", DISTRO_RHEL }, { "fedora", DISTRO_RHEL }, { "ol", DISTRO_RHEL },
		{ "sles", DISTRO_SUSE }, { "sled", DISTRO_SUSE }, { "suse", DISTRO_SUSE },
		{ "opensuse", DISTRO_SUSE }, { "opensuse-leap", DISTRO_SUSE },
		{ "opensuse-tumbleweed", DISTRO_SUSE },
		{ "mariner", DISTRO_AZL }, { "azurelinux", DISTRO_AZL },
	};

	for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
		if (strcmp(w, map[i].id) == 0)
			return map[i].d;
	return DISTRO_UNKNOWN;
}

/* ID decides; ID_LIKE (space-separated) is the fallback for derivatives. */
static void os_info_parse(const char *text, struct os_info *ret)
{
	char like[256], *save = NULL;

	memset(ret, 0, sizeof(*ret));
	osrel_get(text, "ID", ret->id, sizeof(ret->id));
	osrel_get(text, "PRETTY_NAME", ret->pretty, sizeof(ret->pretty));
	osrel_get(text, "ID_LIKE", like, sizeof(like));
	ret->family = distro_of_word(ret->id);
	for (char *w = strtok_r(like, " ", &save); w && ret->family == DISTRO_UNKNOWN;
	     w = strtok_r(NULL, " ", &save))
		ret->family = distro_of_word(w);
}

/* ---- kernel release and versions ------------------------------------- */

static bool fake_root(const struct ctx *c)
{
	return c->root && c->root[0] && strcmp(c->root, "/") != 0;
}

/* A release is used in paths and package names: no '/', no spaces. */
static bool valid_release(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= KREL_MAX || s[0] == '.')
		return false;
	for (const char *p = s; *p; p++)
		if (!(isalnum((unsigned char)*p) || strchr("._+~-", *p)))
			return false;
	return true;
}

/*
 * The running kernel: --kernel-release, else (fake roots only) the file
 * <root>/etc/hpcinit/kernel-release, else uname(2).
 */
static int running_release(const struct ctx *c, char *buf, size_t n, const char **ret_src)
{
	struct utsname u;

	*ret_src = "uname";
	if (c->kernel_release) {
		snprintf(buf, n, "%s", c->kernel_release);
		*ret_src = "--kernel-release";
	} else if (fake_root(c) && fs_exists(c, KERNEL_RELEASE_FILE)) {
		char *text = NULL;
		int r = fs_read(c, KERNEL_RELEASE_FILE, &text, NULL);

		if (r < 0)
			return r;
		text[strcspn(text, " \t\r\n")] = '\0';
		snprintf(buf, n, "%s", text);
		free(text);
		*ret_src = KERNEL_RELEASE_FILE;
	} else {
		if (uname(&u) < 0)
			return -errno;
		snprintf(buf, n, "%s", u.release);
		*ret_src = "uname";
	}
	return valid_release(buf) ? 0 : -EINVAL;
}

/*
 * Compare kernel releases the way rpm's vercmp does: runs of digits compare
 * numerically, runs of letters as strings, anything else separates.  "~"
 * sorts before everything (pre-releases).  Good for 5.15.0-1057-azure vs
 * 5.15.0-1061-azure and 4.18.0-513.24.1.el8_9 vs 4.18.0-553.el8_10.
 */
static int kver_cmp(const char *a, const char *b)
{
	while (*a || *b) {
		while (*a && !isalnum((unsigned char)*a) && *a != '~')
			a++;
		while (*b && !isalnum((unsigned char)*b) && *b != '~')
			b++;
		if (*a == '~' || *b == '~') {
			if (*a != '~')
				return 1;
			if (*b != '~')
				return -1;
			a++;
			b++;
			continue;
		}
		if (!*a || !*b)
			return *a ? 1 : *b ? -1 : 0;
		const char *sa = a, *sb = b;
		bool num = isdigit((unsigned char)*a);

		if (num != (bool)isdigit((unsigned char)*b))
			return num ? 1 : -1;   /* a number is newer than letters */
		if (num) {
			while (*sa == '0')
				sa++;
			while (*sb == '0')
				sb++;
			a = sa;
			b = sb;
			while (isdigit((unsigned char)*a))
				a++;
			while (isdigit((unsigned char)*b))
				b++;
			if ((a - sa) != (b - sb))
				return (a - sa) > (b - sb) ? 1 : -1;
		} else {
			while (isalpha((unsigned char)*a))
				a++;
			while (isalpha((unsigned char)*b))
				b++;
		}
		size_t la = (size_t)(a - sa), lb = (size_t)(b - sb);
		int c = strncmp(sa, sb, la < lb ? la : lb);

		if (c)
			return c > 0 ? 1 : -1;
		if (la != lb)
			return la > lb ? 1 : -1;
	}
	return 0;
}

static bool strlist_has(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

/* ---- dpkg status ------------------------------------------------------ */

struct dpkg_pkg {
	char *name;
	char *want;             /* install, hold, deinstall, purge */
	bool installed;         /* third word of Status: is "installed" */
	char *depends;          /* Depends: and Pre-Depends:, joined */
};

struct dpkg_db {
	struct dpkg_pkg *v;
	size_t n;
};

static void dpkg_db_free(struct dpkg_db *db)
{
	for (size_t i = 0; i < db->n; i++) {
		free(db->v[i].name);
		free(db->v[i].want);
		free(db->v[i].depends);
	}
	free(db->v);
	db->v = NULL;
	db->n = 0;
}

/* Parse /var/lib/dpkg/status (deb822 stanzas; continuation lines start with a blank). */
static void dpkg_db_parse(const char *text, struct dpkg_db *db)
{
	struct dpkg_pkg cur = { 0 };
	const char *p = text;
	bool in_depends = false;

	memset(db, 0, sizeof(*db));
	for (;;) {
		const char *nl = p ? strchr(p, '\n') : NULL;
		size_t ll = p ? (nl ? (size_t)(nl - p) : strlen(p)) : 0;
		bool end = !p || !*p;

		if (end || ll == 0) {
			if (cur.name) {
				db->v = xrealloc(db->v, (db->n + 1) * sizeof(*db->v));
				db->v[db->n++] = cur;
			} else {
				free(cur.want);
				free(cur.depends);
			}
			memset(&cur, 0, sizeof(cur));
			if (end)
				break;
		} else if ((p[0] == ' ' || p[0] == '\t') && in_depends) {
			/* A folded Depends: line continues the field. */
			char *add = xstrndup(p, ll);
			char *joined = xasprintf("%s %s", cur.depends ? cur.depends : "", add);

			free(cur.depends);
			free(add);
			cur.depends = joined;
		} else if (strncmp(p, "Package:", 8) == 0) {
			const char *v = p + 8;

			while (*v == ' ')
				v++;
			free(cur.name);
			cur.name = xstrndup(v, ll - (size_t)(v - p));
		} else if (strncmp(p, "Status:", 7) == 0) {
			char *s = xstrndup(p + 7, ll - 7), *save = NULL;
			char *w1 = strtok_r(s, " ", &save);
			char *w2 = w1 ? strtok_r(NULL, " ", &save) : NULL;
			char *w3 = w2 ? strtok_r(NULL, " ", &save) : NULL;

			free(cur.want);
			cur.want = xstrdup(w1 ? w1 : "");
			cur.installed = w3 && strcmp(w3, "installed") == 0;
			free(s);
		} else if (strncmp(p, "Depends:", 8) == 0 || strncmp(p, "Pre-Depends:", 12) == 0) {
			const char *v = strchr(p, ':') + 1;
			char *add = xstrndup(v, ll - (size_t)(v - p));
			char *joined = xasprintf("%s%s%s", cur.depends ? cur.depends : "",
						 cur.depends ? "," : "", add);

			free(cur.depends);
			free(add);
			cur.depends = joined;
		}
		if (p && *p && p[0] != ' ' && p[0] != '\t')
			in_depends = strncmp(p, "Depends:", 8) == 0 || strncmp(p, "Pre-Depends:", 12) == 0;
		p = nl ? nl + 1 : NULL;
	}
}

/* Does a Depends: value name a kernel image package (linux-image-...)? */
static bool depends_on_image(const char *deps)
{
	for (const char *p = deps; p && *p;) {
		while (*p == ' ' || *p == ',' || *p == '|')
			p++;
		if (strncmp(p, "linux-image-", 12) == 0)
			return true;
		p += strcspn(p, ",|");
	}
	return false;
}

/*
 * What to hold on Debian/Ubuntu: the running kernel's own packages, and
 * every installed metapackage that pulls in a kernel image (linux-azure,
 * linux-image-azure, linux-image-amd64, ...), because upgrading those is
 * what installs the next kernel.
 */
static void dpkg_hold_set(const struct dpkg_db *db, const char *rel, struct strlist *out)
{
	const char *own[] = { "linux-image-", "linux-image-unsigned-", "linux-modules-",
			      "linux-modules-extra-" };

	for (size_t i = 0; i < db->n; i++) {
		const struct dpkg_pkg *p = &db->v[i];
		bool take = false;

		if (!p->installed)
			continue;
		for (size_t k = 0; k < sizeof(own) / sizeof(own[0]) && !take; k++) {
			size_t pl = strlen(own[k]);

			take = strncmp(p->name, own[k], pl) == 0 && strcmp(p->name + pl, rel) == 0;
		}
		if (!take && p->depends && depends_on_image(p->depends))
			take = true;
		if (take && !strlist_has(out, p->name))
			strlist_push(out, p->name);
	}
}

static const struct dpkg_pkg *dpkg_find(const struct dpkg_db *db, const char *name)
{
	for (size_t i = 0; i < db->n; i++)
		if (strcmp(db->v[i].name, name) == 0)
			return &db->v[i];
	return NULL;
}

/* ---- installed kernels ------------------------------------------------ */

static void add_release(struct strlist *out, const char *rel)
{
	if (valid_release(rel) && !strlist_has(out, rel))
		strlist_push(out, rel);
}

/* Kernels the boot loader could pick: /boot/vmlinuz-<rel>, /lib/modules/<rel>/vmlinuz, dpkg images. */
static void installed_kernels(const struct ctx *c, const struct dpkg_db *db, struct strlist *out)
{
	const char *moddirs[] = { "/lib/modules", "/usr/lib/modules" };
	char *boot = ctx_path(c, "/boot");
	DIR *d = opendir(boot);
	struct dirent *e;

	free(boot);
	if (d) {
		while ((e = readdir(d)))
			if (strncmp(e->d_name, "vmlinuz-", 8) == 0 &&
			    strncmp(e->d_name + 8, "0-rescue", 8) != 0)
				add_release(out, e->d_name + 8);
		closedir(d);
	}
	for (size_t k = 0; k < 2; k++) {
		char *md = ctx_path(c, moddirs[k]);

		d = opendir(md);
		if (d) {
			while ((e = readdir(d))) {
				char *vm;

				if (e->d_name[0] == '.')
					continue;
				vm = xasprintf("%s/%s/vmlinuz", moddirs[k], e->d_name);
				if (fs_exists(c, vm))
					add_release(out, e->d_name);
				free(vm);
			}
			closedir(d);
		}
		free(md);
	}
	for (size_t i = 0; db && i < db->n; i++) {
		const char *n = db->v[i].name;

		if (!db->v[i].installed || strncmp(n, "linux-image-", 12) != 0)
			continue;
		size_t len;

		n += 12;
		if (strncmp(n, "unsigned-", 9) == 0)
			n += 9;
		len = strlen(n);
		/* linux-image-<rel>-dbg (Debian) and -dbgsym hold symbols, not a kernel. */
		if ((len > 4 && strcmp(n + len - 4, "-dbg") == 0) ||
		    (len > 7 && strcmp(n + len - 7, "-dbgsym") == 0))
			continue;
		if (isdigit((unsigned char)n[0]))
			add_release(out, n);
	}
}

/* ---- kernel modules ---------------------------------------------------- */

struct kmod {
	const char *name;       /* as in the spec */
	char norm[64];          /* '-' -> '_' */
	char *path;             /* where found (target path), NULL if not */
	bool builtin;
	char *dkms;             /* built by DKMS but not installed */
};

static void kmod_norm(const char *in, char *out, size_t n)
{
	size_t i;

	for (i = 0; in[i] && i + 1 < n; i++)
		out[i] = in[i] == '-' ? '_' : in[i];
	out[i] = '\0';
}

/* "mlx5_ib.ko.zst" -> true, with the module name normalized into out. */
static bool ko_name(const char *file, char *out, size_t n)
{
	const char *sfx[] = { ".ko", ".ko.xz", ".ko.zst", ".ko.gz" };
	size_t fl = strlen(file);

	for (size_t k = 0; k < 4; k++) {
		size_t sl = strlen(sfx[k]);

		if (fl > sl && strcmp(file + fl - sl, sfx[k]) == 0) {
			char tmp[256];

			if (fl - sl >= sizeof(tmp))
				return false;
			memcpy(tmp, file, fl - sl);
			tmp[fl - sl] = '\0';
			kmod_norm(tmp, out, n);
			return true;
		}
	}
	return false;
}

struct walk {
	struct kmod *mods;
	size_t n;
	size_t entries;
};

/* Depth-first walk of a module tree (no symlinks followed: build/ and source/ are links). */
static void walk_modules(struct walk *w, int dirfd, const char *target_path, int depth)
{
	DIR *d = fdopendir(dirfd);
	struct dirent *e;

	if (!d) {
		close(dirfd);
		return;
	}
	while ((e = readdir(d)) && w->entries < WALK_MAX_ENTRIES) {
		char norm[64];

		unsigned char type = e->d_type;

		w->entries++;
		if (e->d_name[0] == '.')
			continue;
		if (type == DT_UNKNOWN) {
			struct stat st;

			if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
				continue;
			type = S_ISDIR(st.st_mode) ? DT_DIR : S_ISREG(st.st_mode) ? DT_REG : DT_LNK;
		}
		if (type == DT_DIR && depth < WALK_MAX_DEPTH) {
			int fd = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);

			if (fd >= 0) {
				char *sub = xasprintf("%s/%s", target_path, e->d_name);

				walk_modules(w, fd, sub, depth + 1);
				free(sub);
			}
			continue;
		}
		if (type != DT_REG || !ko_name(e->d_name, norm, sizeof(norm)))
			continue;
		for (size_t i = 0; i < w->n; i++)
			if (!w->mods[i].path && strcmp(w->mods[i].norm, norm) == 0)
				w->mods[i].path = xasprintf("%s/%s", target_path, e->d_name);
	}
	closedir(d);
}

static void builtin_scan(const struct ctx *c, const char *dir, struct kmod *mods, size_t n)
{
	char *path = xasprintf("%s/modules.builtin", dir);
	char *text = NULL;

	if (fs_read(c, path, &text, NULL) == 0) {
		for (char *line = text; line && *line;) {
			char *nl = strchr(line, '\n');
			char *base, norm[64];

			if (nl)
				*nl = '\0';
			base = strrchr(line, '/');
			base = base ? base + 1 : line;
			if (ko_name(base, norm, sizeof(norm)))
				for (size_t i = 0; i < n; i++)
					if (!mods[i].path && strcmp(mods[i].norm, norm) == 0) {
						mods[i].builtin = true;
						mods[i].path = xstrdup(path);
					}
			line = nl ? nl + 1 : NULL;
		}
	}
	free(text);
	free(path);
}

/* /var/lib/dkms/<pkg>/<ver>/<rel>/<arch>/module/<name>.ko*: built, maybe not installed. */
static void dkms_scan(const struct ctx *c, const char *rel, struct kmod *mods, size_t n)
{
	char *root = ctx_path(c, "/var/lib/dkms");
	DIR *dp = opendir(root);
	struct dirent *ep;

	while (dp && (ep = readdir(dp))) {
		char *pkgdir;
		DIR *dv;
		struct dirent *ev;

		if (ep->d_name[0] == '.')
			continue;
		pkgdir = xasprintf("%s/%s", root, ep->d_name);
		dv = opendir(pkgdir);
		while (dv && (ev = readdir(dv))) {
			char *reldir;
			DIR *da;
			struct dirent *ea;

			if (ev->d_name[0] == '.')
				continue;
			reldir = xasprintf("%s/%s/%s", pkgdir, ev->d_name, rel);
			da = opendir(reldir);
			while (da && (ea = readdir(da))) {
				char *mdir;
				DIR *dm;
				struct dirent *em;

				if (ea->d_name[0] == '.')
					continue;
				mdir = xasprintf("%s/%s/module", reldir, ea->d_name);
				dm = opendir(mdir);
				while (dm && (em = readdir(dm))) {
					char norm[64];

					if (!ko_name(em->d_name, norm, sizeof(norm)))
						continue;
					for (size_t i = 0; i < n; i++)
						if (!mods[i].path && !mods[i].dkms && strcmp(mods[i].norm, norm) == 0)
							mods[i].dkms = xasprintf("/var/lib/dkms/%s/%s/%s/%s/module/%s",
										 ep->d_name, ev->d_name, rel,
										 ea->d_name, em->d_name);
				}
				if (dm)
					closedir(dm);
				free(mdir);
			}
			if (da)
				closedir(da);
			free(reldir);
		}
		if (dv)
			closedir(dv);
		free(pkgdir);
	}
	if (dp)
		closedir(dp);
	free(root);
}

/* Find each module for kernel rel: lib/modules (kernel/, updates/, extra/, updates/dkms), builtin, DKMS. */
static void kmods_find(const struct ctx *c, const char *rel, struct kmod *mods, size_t n)
{
	const char *bases[] = { "/lib/modules", "/usr/lib/modules" };
	struct stat seen[2];
	int nseen = 0;

	for (size_t k = 0; k < 2; k++) {
		char *tp = xasprintf("%s/%s", bases[k], rel);
		char *hp = ctx_path(c, tp);
		struct stat st;
		bool dup = false;
		int fd;

		if (stat(hp, &st) == 0) {
			for (int s = 0; s < nseen; s++)
				dup |= seen[s].st_dev == st.st_dev && seen[s].st_ino == st.st_ino;
			if (!dup) {
				struct walk w = { mods, n, 0 };

				seen[nseen++] = st;
				fd = open(hp, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
				if (fd >= 0)
					walk_modules(&w, fd, tp, 0);
				builtin_scan(c, tp, mods, n);
			}
		}
		free(hp);
		free(tp);
	}
	dkms_scan(c, rel, mods, n);
}

static void kmods_free(struct kmod *mods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(mods[i].path);
		free(mods[i].dkms);
	}
	free(mods);
}

static struct kmod *kmods_new(const struct strlist *names)
{
	struct kmod *m = xcalloc(names->n ? names->n : 1, sizeof(*m));

	for (size_t i = 0; i < names->n; i++) {
		m[i].name = names->v[i];
		kmod_norm(names->v[i], m[i].norm, sizeof(m[i].norm));
	}
	return m;
}

/* ---- holds, one per family --------------------------------------------- */

static char *regex_escape(const char *s)
{
	struct strbuf sb = STRBUF_INIT;

	for (; *s; s++) {
		if (strchr(".+*?()[]{}|^$\\", *s))
			sb_append(&sb, "\\");
		sb_appendn(&sb, s, 1);
	}
	return sb_steal(&sb);
}

static char *render_apt_blacklist(const char *cluster, const char *rel, const struct strlist *held)
{
	struct strbuf sb = STRBUF_INIT;

	sb_printf(&sb, "// Managed by hpcinit for cluster %s: the running kernel %s is held\n"
		  "// because the RDMA drivers are built for it.  Keep unattended-upgrades away\n"
		  "// from kernels; upgrade them by hand, then reboot and re-run hpcinit.\n"
		  "Unattended-Upgrade::Package-Blacklist {\n"
		  "\t\"linux-image-\";\n\t\"linux-modules-\";\n\t\"linux-headers-\";\n",
		  cluster, rel);
	for (size_t i = 0; i < held->n; i++) {
		char *e;

		if (strncmp(held->v[i], "linux-image-", 12) == 0 ||
		    strncmp(held->v[i], "linux-modules-", 14) == 0)
			continue;
		e = regex_escape(held->v[i]);
		sb_printf(&sb, "\t\"%s$\";\n", e);
		free(e);
	}
	sb_append(&sb, "};\n");
	return sb_steal(&sb);
}

/* Run dpkg --set-selections against the root's admindir; retry while dpkg is locked. */
static int dpkg_set_hold(struct ctx *c, struct report *r, const struct strlist *pkgs)
{
	char *admindir = ctx_path(c, "/var/lib/dpkg");
	char *opt = xasprintf("--admindir=%s", admindir);
	const char *argv[] = { "dpkg", opt, "--set-selections", NULL };
	struct strbuf in = STRBUF_INIT;
	uint64_t delay = 0;
	int ret;

	for (size_t i = 0; i < pkgs->n; i++)
		sb_printf(&in, "%s hold\n", pkgs->v[i]);
	for (;;) {
		struct proc_result pr;
		struct sigaction ign = { .sa_handler = SIG_IGN }, old;

		/*
		 * dpkg exits without reading its input when the lock is taken: the
		 * write must fail with EPIPE, not kill the agent.
		 */
		sigemptyset(&ign.sa_mask);
		sigaction(SIGPIPE, &ign, &old);
		ret = proc_run(argv, NULL, sb_str(&in), DPKG_TIMEOUT_MS, &pr);
		sigaction(SIGPIPE, &old, NULL);
		if (ret < 0) {
			report_detail(r, "cannot run dpkg: %s", strerror(-ret));
			break;
		}
		if (pr.exit_code == 0) {
			proc_result_free(&pr);
			break;
		}
		/* apt or unattended-upgrades at boot holds the dpkg lock: wait for it. */
		if (strstr(pr.err, "lock") && ctx_backoff(c, &delay, 5000)) {
			proc_result_free(&pr);
			continue;
		}
		const char *line = strstr(pr.err, "dpkg: error");

		if (!line)
			line = pr.err;
		report_detail(r, "dpkg --set-selections failed (exit %d): %.*s", pr.exit_code,
			      (int)strcspn(line, "\n"), line);
		proc_result_free(&pr);
		ret = -EIO;
		break;
	}
	sb_free(&in);
	free(opt);
	free(admindir);
	return ret;
}

static int hold_debian(struct ctx *c, struct report *r, const char *rel,
		       const struct dpkg_db *db, bool have_db)
{
	struct strlist held = { 0 }, todo = { 0 };
	char *text;
	int ret = 0;

	if (!have_db) {
		report_finding(r, ST_FAILED, "kernel.hold.no-dpkg-status",
			       "cannot hold the kernel: no dpkg status at /var/lib/dpkg/status");
		return 0;
	}
	dpkg_hold_set(db, rel, &held);
	if (held.n == 0) {
		report_finding(r, ST_FAILED, "kernel.hold.no-package",
			       "cannot hold kernel %s: no installed package provides it "
			       "(looked for linux-image-%s and kernel metapackages)", rel, rel);
		return 0;
	}
	for (size_t i = 0; i < held.n; i++) {
		const struct dpkg_pkg *p = dpkg_find(db, held.v[i]);

		if (!p->want || strcmp(p->want, "hold") != 0)
			strlist_push(&todo, held.v[i]);
	}
	if (todo.n) {
		struct strbuf names = STRBUF_INIT;

		for (size_t i = 0; i < todo.n; i++)
			sb_printf(&names, "%s%s", i ? " " : "", todo.v[i]);
		if (ctx_may_write(c)) {
			ret = dpkg_set_hold(c, r, &todo);
			if (ret == 0) {
				report_detail(r, "held with dpkg selections: %s", sb_str(&names));
				report_changed(r, "/var/lib/dpkg/status");
				report_raise(r, ST_CHANGED);
			} else {
				report_finding(r, ST_FAILED, "kernel.hold.dpkg-failed",
					       "could not hold %s with dpkg", sb_str(&names));
				ret = 0;
			}
		} else {
			report_detail(r, "/var/lib/dpkg/status: not held: %s (apply runs dpkg --set-selections, "
				      "as apt-mark hold does)", sb_str(&names));
			report_changed(r, "/var/lib/dpkg/status");
			report_finding(r, ST_CHANGED, "kernel.hold.missing",
				       "kernel packages not held: %s", sb_str(&names));
		}
		sb_free(&names);
	} else {
		report_detail(r, "held (dpkg selections): %s", held.v[0]);
		for (size_t i = 1; i < held.n; i++)
			report_detail(r, "held (dpkg selections): %s", held.v[i]);
	}
	if (fs_exists(c, "/etc/apt/apt.conf.d") || ctx_may_write(c)) {
		text = render_apt_blacklist(c->spec->cluster.name, rel, &held);
		ret = fs_mkdir_p(c, r, "/etc/apt/apt.conf.d", 0755, 0, 0);
		if (ret >= 0)
			ret = fs_write(c, r, APT_HOLD_PATH, text, strlen(text), 0644, 0, 0);
		if (ret > 0 && !ctx_may_write(c))
			report_finding(r, ST_CHANGED, "kernel.hold.unattended-upgrades",
				       "unattended-upgrades may replace the kernel (%s)", APT_HOLD_PATH);
		free(text);
		ret = ret < 0 ? ret : 0;
	}
	strlist_free(&todo);
	strlist_free(&held);
	return ret;
}

/* Is a dnf/yum exclude value covering every kernel package? */
static bool exclude_covers_kernel(const char *value)
{
	char *v = xstrdup(value), *save = NULL;
	bool ok = false;

	for (char *t = strtok_r(v, " ,\t", &save); t && !ok; t = strtok_r(NULL, " ,\t", &save))
		ok = fnmatch(t, "kernel", 0) == 0 && fnmatch(t, "kernel-core", 0) == 0 &&
		     fnmatch(t, "kernel-modules", 0) == 0;
	free(v);
	return ok;
}

struct ini_main {
	bool has_main;
	size_t end;             /* offset where [main] ends (next section or EOF) */
	char *foreign_exclude;  /* an exclude= line of [main] outside our block */
};

/* Look at [main] of an INI file, ignoring the text of our managed block. */
static void ini_scan_main(const char *text, const char *tag, struct ini_main *ret)
{
	char *begin = xasprintf("# BEGIN hpcinit %s", tag), *endm = xasprintf("# END hpcinit %s", tag);
	bool in_main = false, in_block = false;
	const char *p = text;

	memset(ret, 0, sizeof(*ret));
	ret->end = strlen(text);
	while (p && *p) {
		const char *nl = strchr(p, '\n');
		size_t ll = nl ? (size_t)(nl - p) : strlen(p);
		const char *s = p;

		while (s < p + ll && (*s == ' ' || *s == '\t'))
			s++;
		if (ll == strlen(begin) && strncmp(p, begin, ll) == 0) {
			in_block = true;
		} else if (ll == strlen(endm) && strncmp(p, endm, ll) == 0) {
			in_block = false;
		} else if (!in_block && *s == '[') {
			if (in_main) {
				ret->end = (size_t)(p - text);
				break;
			}
			in_main = strncmp(s, "[main]", 6) == 0;
			ret->has_main |= in_main;
		} else if (!in_block && in_main &&
			   (strncmp(s, "exclude", 7) == 0 || strncmp(s, "excludepkgs", 11) == 0)) {
			const char *k = s + (strncmp(s, "excludepkgs", 11) == 0 ? 11 : 7);

			while (*k == ' ' || *k == '\t')
				k++;
			if (*k == '=' && !ret->foreign_exclude) {
				k++;
				while (*k == ' ' || *k == '\t')
					k++;
				ret->foreign_exclude = xstrndup(k, ll - (size_t)(k - p));
			}
		}
		p = nl ? nl + 1 : NULL;
	}
	free(begin);
	free(endm);
}

/* New dnf.conf text with our block inside [main]; NULL when a foreign exclude= forbids it. */
static char *dnf_conf_apply(const char *old, const char *tag, struct ini_main *im)
{
	const char *body = "exclude=kernel*\n";
	char *blk, *cur;
	struct strbuf sb = STRBUF_INIT;

	ini_scan_main(old, tag, im);
	cur = managed_block_get(old, tag);
	if (cur) {
		free(cur);
		return managed_block_apply(old, tag, im->has_main ? body : "[main]\nexclude=kernel*\n");
	}
	blk = managed_block_apply("", tag, im->has_main ? body : "[main]\nexclude=kernel*\n");
	if (!im->has_main) {
		sb_append(&sb, old);
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			sb_append(&sb, "\n");
		sb_append(&sb, blk);
	} else {
		/* At the end of [main], before the next section. */
		size_t cut = im->end;

		sb_appendn(&sb, old, cut);
		if (sb.len && sb.buf[sb.len - 1] != '\n')
			sb_append(&sb, "\n");
		sb_append(&sb, blk);
		sb_append(&sb, old + cut);
	}
	free(blk);
	return sb_steal(&sb);
}

static int hold_rhel(struct ctx *c, struct report *r)
{
	const char *path = fs_exists(c, "/etc/dnf/dnf.conf") ? "/etc/dnf/dnf.conf" :
			   fs_exists(c, "/etc/yum.conf") ? "/etc/yum.conf" : "/etc/dnf/dnf.conf";
	const char *tag = c->spec->cluster.name;
	struct ini_main im;
	char *old = NULL, *new_;
	int ret = fs_read(c, path, &old, NULL);

	if (ret < 0 && ret != -ENOENT) {
		report_finding(r, ST_FAILED, "kernel.hold.unreadable",
			       "cannot read %s: %s", path, strerror(-ret));
		return 0;
	}
	if (!old)
		old = xstrdup("");
	ini_scan_main(old, tag, &im);
	if (im.foreign_exclude && exclude_covers_kernel(im.foreign_exclude)) {
		report_detail(r, "held: %s [main] has exclude=%s", path, im.foreign_exclude);
		free(im.foreign_exclude);
		free(old);
		return 0;
	}
	if (im.foreign_exclude) {
		/* dnf keeps only one exclude= per section: a second line would drop the user's. */
		report_finding(r, ST_FAILED, "kernel.hold.foreign-exclude",
			       "%s: [main] already has exclude=%s without kernel*; add kernel* to "
			       "that line (hpcinit does not edit lines it does not own)", path, im.foreign_exclude);
		free(im.foreign_exclude);
		free(old);
		return 0;
	}
	new_ = dnf_conf_apply(old, tag, &im);
	free(im.foreign_exclude);
	if (strcmp(new_, old) == 0) {
		report_detail(r, "held: %s [main] excludes kernel* (hpcinit block)", path);
		ret = 0;
	} else {
		char *dir = xstrndup(path, (size_t)(strrchr(path, '/') - path));

		ret = fs_mkdir_p(c, r, dir, 0755, 0, 0);
		free(dir);
		if (ret >= 0)
			ret = fs_write(c, r, path, new_, strlen(new_), 0644, FS_KEEP_OWNER, FS_KEEP_OWNER);
		if (ret > 0 && !ctx_may_write(c))
			report_finding(r, ST_CHANGED, "kernel.hold.missing",
				       "kernel not held: %s has no exclude=kernel* in [main]", path);
		else if (ret > 0)
			report_detail(r, "held: exclude=kernel* added to [main] of %s", path);
	}
	free(new_);
	free(old);
	return ret < 0 ? ret : 0;
}

/* SUSE names kernel packages by flavour: 5.14.21-150500.55.39-azure -> kernel-azure. */
static void suse_kernel_pkg(const char *rel, char *buf, size_t n)
{
	const char *dash = strrchr(rel, '-');
	bool alpha = dash && dash[1];

	for (const char *p = dash ? dash + 1 : ""; *p && alpha; p++)
		alpha = isalpha((unsigned char)*p) != 0;
	snprintf(buf, n, "kernel-%s", alpha ? dash + 1 : "default");
}

/* Does /etc/zypp/locks already lock pkg (by exact name or a glob that matches it)? */
static bool zypp_locked(const char *text, const char *pkg)
{
	bool locked = false;
	bool is_pkg = true, glob = true;
	char name[256] = "";
	const char *p = text;

	for (;;) {
		const char *nl = p ? strchr(p, '\n') : NULL;
		size_t ll = p ? (nl ? (size_t)(nl - p) : strlen(p)) : 0;
		bool end = !p || !*p;

		if (!end && p[0] == '#') {
			/* comments do not end an entry (libzypp PoolQuery::recover) */
		} else if (end || ll == 0 || memchr(p, ':', ll) == NULL) {
			if (name[0] && is_pkg &&
			    (glob ? fnmatch(name, pkg, 0) == 0 : strcmp(name, pkg) == 0))
				locked = true;
			name[0] = '\0';
			is_pkg = true;
			glob = true;
			if (end)
				break;
		} else {
			char key[64], val[256];
			const char *colon = memchr(p, ':', ll);
			size_t kl = (size_t)(colon - p), vl;
			const char *v = colon + 1;

			while (*v == ' ' && v < p + ll)
				v++;
			vl = ll - (size_t)(v - p);
			snprintf(key, sizeof(key), "%.*s", (int)(kl < 63 ? kl : 63), p);
			snprintf(val, sizeof(val), "%.*s", (int)(vl < 255 ? vl : 255), v);
			val[strcspn(val, " \t\r")] = '\0';
			if (strcmp(key, "solvable_name") == 0)
				snprintf(name, sizeof(name), "%s", val);
			else if (strcmp(key, "type") == 0)
				is_pkg = strcmp(val, "package") == 0;
			else if (strcmp(key, "match_type") == 0)
				glob = strcmp(val, "exact") != 0;
			else if (strcmp(key, "match_exact") == 0)
				glob = strcmp(val, "1") != 0 && strcmp(val, "true") != 0;
		}
		p = nl ? nl + 1 : NULL;
	}
	return locked;
}

static int hold_suse(struct ctx *c, struct report *r, const char *rel)
{
	char pkg[160], *old = NULL, *body, *new_, *zconf = NULL;
	int ret = fs_read(c, ZYPP_LOCKS_PATH, &old, NULL);

	suse_kernel_pkg(rel, pkg, sizeof(pkg));
	if (ret < 0 && ret != -ENOENT) {
		report_finding(r, ST_FAILED, "kernel.hold.unreadable",
			       "cannot read %s: %s", ZYPP_LOCKS_PATH, strerror(-ret));
		return 0;
	}
	if (!old)
		old = xstrdup("");
	/* openSUSE bug 1177262: zypper may ignore locks on multiversion kernels. */
	if (fs_read(c, "/etc/zypp/zypp.conf", &zconf, NULL) == 0) {
		for (char *l = zconf; l && *l;) {
			char *nl = strchr(l, '\n');

			if (nl)
				*nl = '\0';
			if (strncmp(l, "multiversion", 12) == 0 && strstr(l, "multiversion(kernel)"))
				report_detail(r, "warning: /etc/zypp/zypp.conf installs kernels as multiversion; "
					      "zypper can install a new %s beside the locked one (openSUSE "
					      "bug 1177262): check 'zypper locks' after updates", pkg);
			l = nl ? nl + 1 : NULL;
		}
		free(zconf);
	}
	if (zypp_locked(old, pkg)) {
		report_detail(r, "held: %s locks %s", ZYPP_LOCKS_PATH, pkg);
		free(old);
		return 0;
	}
	/* Blank lines around the entry: zypp ends a lock at the first blank line. */
	body = xasprintf("\ntype: package\nmatch_type: exact\ncase_sensitive: on\nsolvable_name: %s\n\n", pkg);
	new_ = managed_block_apply(old, c->spec->cluster.name, body);
	ret = fs_mkdir_p(c, r, "/etc/zypp", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, ZYPP_LOCKS_PATH, new_, strlen(new_), 0644, FS_KEEP_OWNER, FS_KEEP_OWNER);
	if (ret > 0 && !ctx_may_write(c))
		report_finding(r, ST_CHANGED, "kernel.hold.missing",
			       "kernel not held: no lock for %s in %s", pkg, ZYPP_LOCKS_PATH);
	else if (ret > 0)
		report_detail(r, "held: lock for %s added to %s", pkg, ZYPP_LOCKS_PATH);
	free(body);
	free(new_);
	free(old);
	return ret < 0 ? ret : 0;
}

static int hold_azl(struct ctx *c, struct report *r)
{
	char *dir = ctx_path(c, "/etc/tdnf/locks.d");
	DIR *d = opendir(dir);
	struct dirent *e;
	bool elsewhere = false;
	int ret;

	/* Other lock files: tdnf takes exact names only, so a glob there locks nothing. */
	while (d && (e = readdir(d))) {
		char *tp, *text = NULL;

		if (fnmatch("*.conf", e->d_name, 0) != 0 || strcmp(e->d_name, "hpcinit-kernel.conf") == 0)
			continue;
		tp = xasprintf("/etc/tdnf/locks.d/%s", e->d_name);
		if (fs_read(c, tp, &text, NULL) == 0) {
			for (char *l = text; l && *l;) {
				char *nl = strchr(l, '\n');

				if (nl)
					*nl = '\0';
				if (strcmp(l, "kernel") == 0)
					elsewhere = true;
				else if (strpbrk(l, "*?["))
					report_detail(r, "warning: %s: '%s' locks nothing: tdnf locks.d takes "
						      "exact package names, no wildcards", tp, l);
				l = nl ? nl + 1 : NULL;
			}
		}
		free(text);
		free(tp);
	}
	if (d)
		closedir(d);
	free(dir);
	if (elsewhere) {
		report_detail(r, "held: another file in /etc/tdnf/locks.d locks kernel");
		return 0;
	}
	ret = fs_mkdir_p(c, r, "/etc/tdnf/locks.d", 0755, 0, 0);
	if (ret >= 0)
		ret = fs_write(c, r, TDNF_LOCK_PATH, "kernel\n", 7, 0644, 0, 0);
	if (ret > 0 && !ctx_may_write(c))
		report_finding(r, ST_CHANGED, "kernel.hold.missing",
			       "kernel not held: no tdnf lock for kernel (%s)", TDNF_LOCK_PATH);
	else if (ret > 0)
		report_detail(r, "held: %s locks kernel", TDNF_LOCK_PATH);
	else if (ret == 0)
		report_detail(r, "held: %s locks kernel", TDNF_LOCK_PATH);
	return ret < 0 ? ret : 0;
}

/* ---- the module -------------------------------------------------------- */

static bool kernel_enabled(const struct spec *s)
{
	return s->kernel.present;
}

static uint64_t kernel_timeout(const struct spec *s)
{
	return 2 * DPKG_TIMEOUT_MS;
}

static void check_modules(struct ctx *c, struct report *r, const char *rel)
{
	const struct strlist *names = &c->spec->kernel.modules;
	struct kmod *mods;

	if (names->n == 0)
		return;
	mods = kmods_new(names);
	kmods_find(c, rel, mods, names->n);
	for (size_t i = 0; i < names->n; i++) {
		struct kmod *m = &mods[i];
		char *sysmod = xasprintf("/sys/module/%s", m->norm);
		bool loaded = fs_exists(c, sysmod);

		free(sysmod);
		if (!m->path && m->dkms)
			report_finding(r, ST_FAILED, "kernel.module.dkms-not-installed",
				       "module %s: built by DKMS (%s) but not installed for %s; "
				       "run dkms install", m->name, m->dkms, rel);
		else if (!m->path)
			report_finding(r, ST_FAILED, "kernel.module.missing",
				       "module %s: not found for the running kernel %s "
				       "(/lib/modules/%s, modules.builtin, DKMS); reinstall the RDMA drivers "
				       "for this kernel", m->name, rel, rel);
		else if (m->builtin)
			report_detail(r, "module %s: built into %s", m->name, rel);
		else if (!loaded)
			report_finding(r, ST_FAILED, "kernel.module.not-loaded",
				       "module %s: present (%s) but not loaded; modprobe %s",
				       m->name, m->path, m->name);
		else
			report_detail(r, "module %s: loaded (%s)", m->name, m->path);
	}
	kmods_free(mods, names->n);
}

/* A newer installed kernel becomes the default at the next reboot: will RDMA work there? */
static void check_pending(struct ctx *c, struct report *r, const char *rel,
			  const struct dpkg_db *db)
{
	struct strlist kernels = { 0 };
	const char *newest = NULL;

	installed_kernels(c, db, &kernels);
	for (size_t i = 0; i < kernels.n; i++)
		if (!newest || kver_cmp(kernels.v[i], newest) > 0)
			newest = kernels.v[i];
	if (newest && kver_cmp(newest, rel) > 0) {
		const struct strlist *names = &c->spec->kernel.modules;
		struct strbuf missing = STRBUF_INIT;

		if (names->n) {
			struct kmod *mods = kmods_new(names);

			kmods_find(c, newest, mods, names->n);
			for (size_t i = 0; i < names->n; i++)
				if (!mods[i].path)
					sb_printf(&missing, "%s%s", missing.len ? " " : "", mods[i].name);
			kmods_free(mods, names->n);
		}
		if (names->n && missing.len == 0)
			report_detail(r, "newer kernel %s installed; the next reboot boots it, and the "
				      "listed modules exist for it", newest);
		else if (names->n)
			report_finding(r, ST_DEGRADED, "kernel.pending.breaks-rdma",
				       "newer kernel %s installed: the next reboot boots it and "
				       "breaks RDMA (missing for it: %s); remove it or rebuild the drivers before "
				       "rebooting", newest, sb_str(&missing));
		else
			report_finding(r, ST_DEGRADED, "kernel.pending.unchecked",
				       "newer kernel %s installed: the next reboot boots it; list "
				       "kernel.modules to have hpcinit check the RDMA drivers exist for it", newest);
		sb_free(&missing);
	}
	strlist_free(&kernels);
}

static int kernel_run(struct ctx *c, struct report *r)
{
	const struct spec_kernel *k = &c->spec->kernel;
	struct os_info os;
	struct dpkg_db db = { 0 };
	bool have_db = false;
	char rel[KREL_MAX], *text = NULL;
	const char *src = "uname";
	int ret;

	ret = running_release(c, rel, sizeof(rel), &src);
	if (ret < 0) {
		report_set(r, ST_FAILED, "cannot tell the running kernel release (%s): %s", src,
			   ret == -EINVAL ? "not a valid release string" : strerror(-ret));
		return 0;
	}
	if (fs_read(c, "/etc/os-release", &text, NULL) == 0 ||
	    fs_read(c, "/usr/lib/os-release", &text, NULL) == 0)
		os_info_parse(text, &os);
	else
		memset(&os, 0, sizeof(os));
	free(text);
	text = NULL;
	report_detail(r, "running kernel %s (from %s); distribution %s (%s)", rel, src,
		      os.pretty[0] ? os.pretty : os.id[0] ? os.id : "unknown", distro_name(os.family));
	if (os.family == DISTRO_DEBIAN && fs_read(c, "/var/lib/dpkg/status", &text, NULL) == 0) {
		dpkg_db_parse(text, &db);
		have_db = true;
	}
	free(text);

	if (k->expect && fnmatch(k->expect, rel, 0) != 0)
		report_finding(r, ST_FAILED, "kernel.expect.mismatch",
			       "running kernel %s does not match kernel.expect '%s'", rel, k->expect);
	check_modules(c, r, rel);

	if (k->hold) {
		switch (os.family) {
		case DISTRO_DEBIAN:
			ret = hold_debian(c, r, rel, &db, have_db);
			break;
		case DISTRO_RHEL:
			ret = hold_rhel(c, r);
			break;
		case DISTRO_SUSE:
			ret = hold_suse(c, r, rel);
			break;
		case DISTRO_AZL:
			ret = hold_azl(c, r);
			break;
		case DISTRO_UNKNOWN:
			report_finding(r, ST_FAILED, "kernel.hold.unknown-distro",
				       "cannot hold the kernel: unknown distribution '%s' in "
				       "/etc/os-release (known: Debian/Ubuntu, RHEL/Alma/Rocky/CentOS, "
				       "SLES/openSUSE, Azure Linux)", os.id[0] ? os.id : "(none)");
			break;
		}
		if (ret < 0)
			report_finding(r, ST_FAILED, "kernel.hold.error",
				       "cannot hold the kernel: %s", strerror(-ret));
	}
	check_pending(c, r, rel, have_db ? &db : NULL);

	/* Problems: the runner's summary names the worst first. */
	if (report_problems(r) == 0 && r->status == ST_CHANGED)
		report_set(r, ST_CHANGED, "kernel %s held (%s)", rel, distro_name(os.family));
	else if (report_problems(r) == 0)
		report_set(r, ST_OK, "kernel %s%s%s", rel, k->hold ? " held" : "",
			   k->modules.n ? ", RDMA modules present and loaded" : "");
	dpkg_db_free(&db);
	return 0;
}

const struct module kernel_module = {
	.name = "kernel",
	.enabled = kernel_enabled,
	.needs = NULL,
	.timeout_ms = kernel_timeout,
	.check = kernel_run,
	.apply = kernel_run,
};
