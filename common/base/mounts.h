/* SPDX-License-Identifier: MIT */
/*
 * The mounts of the root (its /proc/self/mountinfo) and the one answer to
 * "is this path on a mount the spec names (nfs.mounts), and is that mount
 * there?" (mounts.c).  A step that writes under a path asks before it
 * writes: on an absent mount the write would land on the local disk under
 * the mount point, where no other node sees it and where the mount, once
 * it comes, hides it (docs/nfs.md "A mount that is not there").
 */
#ifndef HPCINIT_MOUNTS_H
#define HPCINIT_MOUNTS_H

#include <stdbool.h>
#include <stddef.h>

#include "hpcinit.h"

struct mi_entry {
	char *mountpoint, *fstype, *source, *mntopts, *superopts;
};

struct mountinfo {
	struct mi_entry *v;
	size_t n;
	bool fixture;           /* read from <root>/proc/self/mountinfo of a fake root */
};

/* Undo the \NNN escapes of mountinfo and fstab fields (n bytes of s); malloc'd. */
char *mounts_unescape(const char *s, size_t n);
/* proc(5)'s mountinfo text into mi; lines that do not parse are skipped. */
void mountinfo_parse(const char *text, struct mountinfo *mi);
/*
 * The root's mounts: <root>/proc/self/mountinfo when a fake root has one
 * (mi->fixture), else the kernel's, under a fake root only the mounts
 * inside it, their mount points made relative to it.
 */
void mountinfo_load(const struct ctx *c, struct mountinfo *mi);
void mountinfo_free(struct mountinfo *mi);
/* The mount on top at path (the last one listed), or NULL. */
const struct mi_entry *mountinfo_find(const struct mountinfo *mi, const char *path);

/* nfs or nfs4. */
bool mounts_nfs_type(const char *fstype);
/* "host:/export" equal up to trailing slashes of the export. */
bool mounts_source_eq(const char *a, const char *b);
/* The spec mount's source as mount(8) and mountinfo write it ("[v6addr]:/export"); malloc'd. */
char *mounts_source(const struct spec_nfs_mount *m);
/* The top mount at m's path when it is m (NFS, m's source), else NULL. */
const struct mi_entry *mountinfo_spec_mount(const struct mountinfo *mi, const struct spec_nfs_mount *m);

/* Is path at or under dir (both absolute; trailing slashes of dir ignored)? */
bool mounts_path_under(const char *path, const char *dir);
/*
 * The first mount of the spec (outermost first) that path lies on and that
 * is not there, or NULL: path is on no mount of the spec (a head's exported
 * directories are local: they are not mounts), or every one it is on is
 * mounted.  The root's mount table is read only when path is on one.
 */
const struct spec_nfs_mount *mounts_absent(const struct ctx *c, const char *path);
/*
 * Before writing under path: 0 when mounts_absent finds nothing; else
 * -ENOMEDIUM and a finding "<step>.mount.absent" (failed) in rep naming
 * what (the key or the use: "discovery.dir"), path and the mount:
 * "discovery.dir /shared/hpc is on the NFS mount /shared (nfs01:/export),
 * which is not mounted; nothing written there".
 */
int mounts_require(const struct ctx *c, struct report *rep, const char *what, const char *path);

#endif
