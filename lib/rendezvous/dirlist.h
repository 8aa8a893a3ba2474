/* SPDX-License-Identifier: MIT */
/* What dir.c (the shared directory's backend) takes from dirlist.c (reading its entries). */
#ifndef HPCINIT_RENDEZVOUS_DIRLIST_H
#define HPCINIT_RENDEZVOUS_DIRLIST_H

#include <dirent.h>
#include <sys/stat.h>

#include "rendezvous.h"

#define RV_TMP_MARK ".hpcinit-tmp."     /* fs_write's temporary files */
#define RV_WHY_LEN 256                  /* e->why's buffer: the caller's, so that threads read side by side */

/*
 * One entry of the directory dfd, read through one O_NOFOLLOW|O_NONBLOCK
 * descriptor and checked (type, owner, mode, size): 0 and the value
 * in *ret (malloc'd), -ENOENT, or -errno with the refusal in e (e->why in
 * why[RV_WHY_LEN]).  stout (optional): the stat of the descriptor read.
 */
int rv_dir_read_entry_at(int dfd, const char *name, const struct rv_tree *t, bool reown, size_t max,
			 struct rv_entry *e, char **ret, char *why, struct stat *stout);
/* The collection's directory, opened without following a link. */
int rv_dir_open_coll(const struct rendezvous *rv, DIR **ret);
void rv_read_cache_free(struct rv_read_cache *k);

#endif
