/* SPDX-License-Identifier: MIT */
/*
 * The kernel step's own files (modules/kernel/): kernel.c (the step),
 * os.c (os-release, releases, installed kernels), kmod.c (the modules
 * directory) and one pm_*.c a package-manager family behind struct kernel_pm.
 */
#ifndef HPCINIT_KERNEL_H
#define HPCINIT_KERNEL_H

#include <stdbool.h>
#include <stddef.h>
#include <string.h>

#include "hpcinit.h"

#define KREL_MAX 128                    /* longest kernel release we accept */
#define DPKG_TIMEOUT_MS 60000
#define KERNEL_RELEASE_FILE "/etc/hpcinit/kernel-release"

enum distro { DISTRO_UNKNOWN, DISTRO_DEBIAN, DISTRO_RHEL, DISTRO_SUSE, DISTRO_AZL };

struct os_info {
	enum distro family;
	char id[64];
	char pretty[128];
};

/* os.c */
const char *distro_name(enum distro d);
/* ID decides; ID_LIKE (space-separated) is the fallback for derivatives. */
void os_info_parse(const char *text, struct os_info *ret);
/* A release is used in paths and package names: no '/', no spaces. */
bool valid_release(const char *s);
/* --kernel-release, else (fake roots only) <root>/etc/hpcinit/kernel-release, else uname(2). */
int running_release(const struct ctx *c, char *buf, size_t n, const char **ret_src);
/* rpm-style version order: <0, 0, >0. */
int kver_cmp(const char *a, const char *b);
/* Append rel to out if it is a valid release not yet listed. */
void add_release(struct strlist *out, const char *rel);
/* Kernels in /boot and the modules directories. */
void installed_kernels(const struct ctx *c, struct strlist *out);

/* kmod.c */
struct kmod {
	const char *name;       /* as in the spec */
	char norm[64];          /* '-' -> '_' */
	char *path;             /* where found (target path), NULL if not */
	bool builtin;
	char *dkms;             /* built by DKMS but not installed */
	char *other;            /* a kernel not installed: a package that ships it, which its upgrade does not install */
};

struct kmod *kmods_new(const struct strlist *names);
/* Look each module up for release rel: modules directory, modules.builtin, DKMS. */
void kmods_find(const struct ctx *c, const char *rel, struct kmod *mods, size_t n);
void kmods_free(struct kmod *mods, size_t n);

/* A newer kernel the package manager offers (kernel.updates). */
struct kernel_update {
	char rel[KREL_MAX];     /* its release, as uname -r will say: 6.1.0-99-amd64 */
	char pkg[192];          /* the package that carries it: linux-image-6.1.0-99-amd64 */
	char version[96];       /* that package's candidate version */
};

/*
 * A package-manager family: how it lists installed kernels and holds the
 * running one.  Every hook is set (the kernel_pm_no_* defaults below); a
 * family file older than a hook may leave it NULL: kernel.c then uses the
 * default.
 */
struct kernel_pm {
	enum distro family;
	const char *name;
	/* Read the package database once; *ret_db may stay NULL (none).  0 or -errno. */
	int (*db_open)(const struct ctx *c, void **ret_db);
	void (*db_close)(void *db);
	/* Add the kernel releases the database says are installed. */
	void (*installed)(const void *db, struct strlist *out);
	/* Hold the running kernel rel; problems are findings.  0 or -errno. */
	int (*hold)(struct ctx *c, struct report *r, const char *rel, const void *db);
	/*
	 * kernel.hold: false: undo the holds hpcinit made (and only those), say
	 * so (kernel.hold.released), and name holds made by others, left alone
	 * (kernel.hold.foreign).  Outside RUN_APPLY, what would go is drift.
	 */
	int (*release)(struct ctx *c, struct report *r, const char *rel, const void *db);
	/*
	 * The newest kernel the package manager would install for this node's
	 * kernel packages (their candidates in the index as it is: never a
	 * refresh; cheap, cached where asking costs).  0 with *ret filled;
	 * -ENOENT: it offers none; -EOPNOTSUPP: this family cannot tell (the
	 * default: "unknown on this family", a detail, never a failure); another
	 * -errno: asking failed (a detail in r says why).
	 */
	int (*newest)(struct ctx *c, struct report *r, const void *db, struct kernel_update *ret);
	/*
	 * For u offered but not installed (no /lib/modules/<rel> yet): set
	 * path ("<package>: <file>") of each of mods its candidate packages
	 * would ship.  0; -EOPNOTSUPP: this family cannot tell (the default);
	 * -ENODATA: the index has no file lists (a detail in r says what gives them).
	 */
	int (*update_modules)(struct ctx *c, struct report *r, const struct kernel_update *u,
			      const void *db, struct kmod *mods, size_t n);
	/*
	 * kernel.updates: when_modules, every module exists for u: keep the
	 * running kernel rel's own packages held (nothing removes it) and let
	 * u in; undo only what hpcinit held.  Problems are findings.  0 or
	 * -errno; -EOPNOTSUPP (the default): this family only holds.
	 */
	int (*let_through)(struct ctx *c, struct report *r, const char *rel,
			   const struct kernel_update *u, const void *db);
};

/* Report a release: "released" (apply) or drift naming what apply would release. */
void kernel_released(struct ctx *c, struct report *r, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* apt_update.c: the apt family's newest and update_modules (state: its answer, freed by apt_upd_free). */
int apt_newest(struct ctx *c, struct report *r, const char *running, const struct strlist *metas,
	       bool (*installed)(const char *rel, const void *arg), const void *inst_arg, void *state,
	       struct kernel_update *ret);
int apt_update_modules(struct ctx *c, struct report *r, const struct kernel_update *u, void *state,
		       struct kmod *mods, size_t n);
void *apt_upd_new(void);
void apt_upd_free(void *state);
bool apt_inst_line(const char *line, char *name, size_t nn, char *ver, size_t vn);
void apt_depends_newest(const char *deps, struct kernel_update *u, bool *found);

extern const struct kernel_pm kernel_pm_apt;
extern const struct kernel_pm kernel_pm_dnf;
extern const struct kernel_pm kernel_pm_zypper;
extern const struct kernel_pm kernel_pm_tdnf;

/* Defaults for families without a database hpcinit reads (pm.c). */
int kernel_pm_no_db(const struct ctx *c, void **ret_db);
void kernel_pm_no_db_close(void *db);
void kernel_pm_no_installed(const void *db, struct strlist *out);
int kernel_pm_no_newest(struct ctx *c, struct report *r, const void *db, struct kernel_update *ret);
int kernel_pm_no_update_modules(struct ctx *c, struct report *r, const struct kernel_update *u,
				const void *db, struct kmod *mods, size_t n);
int kernel_pm_no_let_through(struct ctx *c, struct report *r, const char *rel,
			     const struct kernel_update *u, const void *db);

#endif
