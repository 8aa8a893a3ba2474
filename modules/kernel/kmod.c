/* SPDX-License-Identifier: MIT */
/*
 * kernel step: where a kernel module of a release lives.  The modules
 * directory (/lib/modules/<rel>, compressed .ko too), modules.builtin, and
 * DKMS builds that were never installed.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "kernel.h"

#define WALK_MAX_DEPTH 10               /* lib/modules/<rel>/kernel/drivers/... */
#define WALK_MAX_ENTRIES 200000         /* bound on a hostile or huge tree */


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
void kmods_find(const struct ctx *c, const char *rel, struct kmod *mods, size_t n)
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

void kmods_free(struct kmod *mods, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free(mods[i].path);
		free(mods[i].dkms);
		free(mods[i].other);
	}
	free(mods);
}

struct kmod *kmods_new(const struct strlist *names)
{
	struct kmod *m = xcalloc(names->n ? names->n : 1, sizeof(*m));

	for (size_t i = 0; i < names->n; i++) {
		m[i].name = names->v[i];
		kmod_norm(names->v[i], m[i].norm, sizeof(m[i].norm));
	}
	return m;
}
