/* SPDX-License-Identifier: MIT */
/*
 * The cluster secret (cluster.secret_file): what authenticates what one
 * node leaves in the rendezvous for the others -- peer records (record.c's
 * HMAC) and the CA's revocation list.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "rendezvous.h"

#define SECRET_MIN 16
#define SECRET_MAX 4096

/*
 * The secret must be root's alone: a regular file (not a symlink), owned by
 * root, not readable or writable by group or others.  It is checked and read
 * through one O_NOFOLLOW descriptor, so what was checked is what is read.
 */
int rv_secret_load(const struct ctx *c, struct report *rep, char **ret_key, size_t *ret_len)
{
	const char *path = c->spec->cluster.secret_file;
	char *hp, *text;
	struct stat st = { 0 };
	size_t n = 0;
	int fd, r;

	*ret_key = NULL;
	*ret_len = 0;
	if (!path)
		return 0;
	hp = ctx_path(c, path);
	fd = open(hp, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	free(hp);
	if (fd < 0) {
		r = -errno;
		if (errno == ELOOP)
			report_detail(rep, "cluster.secret_file %s: is a symbolic link; refused (make it a "
				      "regular file, mode 0600, owned by root)", path);
		else
			report_detail(rep, "cluster.secret_file %s: %s; write it on every node from the "
				      "custom-data (the same value everywhere, generated once: openssl rand -hex 32; "
				      "mode 0600)", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		report_detail(rep, "cluster.secret_file %s: must be a regular file not readable by "
			      "group or others (mode %04o); chmod 600 it",
			      path, (unsigned)(st.st_mode & 07777));
		close(fd);
		return -EPERM;
	}
	if (st.st_uid != 0) {
		report_detail(rep, "cluster.secret_file %s: owned by uid %u, not root: that user could "
			      "read it and forge records; refused (chown root %s)", path,
			      (unsigned)st.st_uid, path);
		close(fd);
		return -EPERM;
	}
	text = xmalloc(SECRET_MAX + 2);
	for (;;) {
		ssize_t k = read(fd, text + n, SECRET_MAX + 2 - n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			r = k < 0 ? -errno : 0;
			break;
		}
		n += (size_t)k;
		if (n >= SECRET_MAX + 2) {
			r = 0;
			break;
		}
	}
	close(fd);
	if (r < 0) {
		report_detail(rep, "cluster.secret_file %s: %s", path, strerror(-r));
		explicit_bzero(text, n);
		free(text);
		return r;
	}
	while (n && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		n--;
	if (n < SECRET_MIN || n > SECRET_MAX) {
		report_detail(rep, "cluster.secret_file %s: needs %d to %d bytes; generate the secret once, "
			      "on your workstation (openssl rand -hex 32), and put the same value in every "
			      "node's custom-data: a secret made on this node alone is rejected by every peer",
			      path, SECRET_MIN, SECRET_MAX);
		explicit_bzero(text, SECRET_MAX + 2);
		free(text);
		return -EINVAL;
	}
	*ret_key = text;
	*ret_len = n;
	return 0;
}
