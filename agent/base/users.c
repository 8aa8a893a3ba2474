/* SPDX-License-Identifier: MIT */
/*
 * Users and their groups as the steps need them (fsutil.h): on the real root
 * from NSS, on a fake root from its own /etc/passwd and /etc/group.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "number.h"
#include "strlist.h"

/*
 * On the real root a user comes from NSS (getpwnam_r), so users from LDAP,
 * SSSD or Entra ID work as local ones do; a fake root has only its own
 * <root>/etc/passwd.
 */
static int lookup_nss(const char *user, uid_t *ret_uid, gid_t *ret_gid, char **ret_home)
{
	struct passwd pw, *res = NULL;
	long sz = sysconf(_SC_GETPW_R_SIZE_MAX);
	size_t bufsz = sz > 0 ? (size_t)sz : 16384;
	char *buf = NULL;
	int e;

	for (;;) {
		buf = xrealloc(buf, bufsz);
		e = getpwnam_r(user, &pw, buf, bufsz, &res);
		if (e != ERANGE || bufsz >= 1u << 20)
			break;
		bufsz *= 2;
	}
	if (e == 0 && !res)
		e = ENOENT;
	if (e == 0) {
		if (ret_uid)
			*ret_uid = pw.pw_uid;
		if (ret_gid)
			*ret_gid = pw.pw_gid;
		if (ret_home)
			*ret_home = xstrdup(pw.pw_dir ? pw.pw_dir : "");
	}
	free(buf);
	return -e;
}

/* line's fields at ':' (it is cut there) into f, at most max: how many. */
static int split_colons(char *line, char **f, int max)
{
	char *s = line;
	int i;

	for (i = 0; i < max && s; i++) {
		f[i] = s;
		s = strchr(s, ':');
		if (s)
			*s++ = '\0';
	}
	return i;
}

int fs_lookup_user(const struct ctx *c, const char *user, uid_t *ret_uid, gid_t *ret_gid,
		   char **ret_home)
{
	char *text = NULL;
	int r;
	size_t ul = strlen(user);

	if (ctx_real_root(c))
		return lookup_nss(user, ret_uid, ret_gid, ret_home);
	r = fs_read(c, "/etc/passwd", &text, NULL);

	if (r < 0)
		return r;
	r = -ENOENT;
	for (char *line = text; line && *line;) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (strncmp(line, user, ul) == 0 && line[ul] == ':') {
			/* name:pw:uid:gid:gecos:home:shell */
			char *f[7] = { 0 };
			int i = split_colons(line, f, 7);

			if (i >= 6 && f[2] && f[3] && f[5]) {
				unsigned long long u, g;

				if (!num_ull(f[2], 10, UINT_MAX - 1, &u) || !num_ull(f[3], 10, UINT_MAX - 1, &g))
					break;
				if (ret_uid)
					*ret_uid = (uid_t)u;
				if (ret_gid)
					*ret_gid = (gid_t)g;
				if (ret_home)
					*ret_home = xstrdup(f[5]);
				r = 0;
			}
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	free(text);
	return r;
}

/* The groups of user through NSS: getgrouplist (its primary group first when known), getgrgid. */
static void user_groups_nss(const char *user, bool gid_known, gid_t gid, struct strlist *ret)
{
	int n = 64;
	gid_t *gs = xcalloc((size_t)n, sizeof(*gs));
	gid_t base = gid_known ? gid : (gid_t)-1;

	if (getgrouplist(user, base, gs, &n) < 0) {
		gs = xrealloc(gs, (size_t)n * sizeof(*gs));
		if (getgrouplist(user, base, gs, &n) < 0)
			n = 0;
	}
	for (int i = 0; i < n; i++) {
		struct group *g;

		if (!gid_known && gs[i] == (gid_t)-1)
			continue;
		if ((g = getgrgid(gs[i])) && !strlist_has(ret, g->gr_name))
			strlist_push(ret, g->gr_name);
	}
	free(gs);
}

void fs_user_groups(const struct ctx *c, const char *user, bool gid_known, gid_t gid, struct strlist *ret)
{
	char *text = NULL, *next;

	if (ctx_real_root(c)) {
		user_groups_nss(user, gid_known, gid, ret);
		return;
	}
	if (fs_read(c, "/etc/group", &text, NULL) < 0)
		return;
	for (char *line = text; line && *line; line = next) {
		char *nl = strchr(line, '\n'), *f[4] = { 0 };
		unsigned long long g;
		bool member;

		if (nl)
			*nl = '\0';
		next = nl ? nl + 1 : NULL;
		/* name:pw:gid:members */
		if (split_colons(line, f, 4) < 4 || !num_ull(f[2], 10, UINT_MAX, &g))
			continue;
		member = gid_known && g == gid;
		for (char *save = NULL, *m = strtok_r(f[3], ",", &save); m && !member; m = strtok_r(NULL, ",", &save))
			member = strcmp(m, user) == 0;
		if (member && !strlist_has(ret, f[0]))
			strlist_push(ret, f[0]);
	}
	free(text);
}
