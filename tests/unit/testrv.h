/* SPDX-License-Identifier: MIT */
/*
 * What test_rendezvous and test_dirlist share: files put under the test's
 * fake root (the includer's static char root[]) with a mode and an owner,
 * and an rv_list callback that collects the names and refusals it is given.
 * Include after the rendezvous sources and testfs.h.
 */
#ifndef HPCINIT_TESTRV_H
#define HPCINIT_TESTRV_H

#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* root+rel on the host (freed by the caller). */
static char *host(const char *rel)
{
	return fs_rooted(root, rel);
}

/* Write text to root+rel (its directory there already), then its owner uid:uid and mode. */
static void put_file(const char *rel, const char *text, mode_t mode, uid_t uid)
{
	char *p = host(rel);
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, mode);

	if (fd >= 0) {
		if (write(fd, text, strlen(text)) < 0)
			perror(p);
		if (fchown(fd, uid, uid) < 0)
			perror(p);
		if (fchmod(fd, mode) < 0)
			perror(p);
		close(fd);
	}
	free(p);
}

/* What a list gave: the names read, and "name:why" for each refused. */
struct seen {
	struct strlist names, refused;
};

static int collect(void *arg, const struct rv_entry *e)
{
	struct seen *s = arg;

	if (e->refused)
		strlist_push_take(&s->refused, xasprintf("%s:%s", e->name, e->refused));
	else
		strlist_push(&s->names, e->name);
	return 0;
}

static bool has(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

#endif
