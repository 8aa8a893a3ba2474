/* SPDX-License-Identifier: MIT */
/*
 * hpcinit-nfs-probe: the libnfs part of the nfs step's wait for a server, in
 * a process of its own so the agent never maps libnfs.  The agent runs it
 * through its child engine with a deadline (a server that takes the
 * connection and never answers cannot hold the agent) and decides what the
 * answer means (modules/nfs/probe.c).
 *
 *   hpcinit-nfs-probe HOST EXPORT VERS TIMEOUT_MS
 *
 * v3: the server's export list (MOUNT EXPORT), then MOUNT of EXPORT and a
 * GETATTR of its root; v4: a mount of the pseudo root and a LOOKUP of
 * EXPORT (and, when that is ENOENT, what the pseudo root holds).  On stdout,
 * one "key value" a line:
 *
 *   exports               the export list follows (v3), or the pseudo root (v4)
 *   export PATH  CLIENTS  one export
 *   what CALL             the call that answered last: "MOUNT /shared", "LOOKUP /x", ...
 *   mode OCTAL            the export root's mode
 *   errnum N              0, or the positive errno of the failure
 *   msg TEXT              libnfs's own words
 *   done                  the last line
 *
 * Exit status: 0 when it answered, 2 on usage.
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>           /* libnfs.h uses struct timeval without including it */

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw-mount.h>

#define NFS_PORT 2049u

/* One line: no newline from the server's text may start a record of its own. */
static void put(const char *key, const char *value)
{
	printf("%s ", key);
	for (const char *p = value; *p; p++)
		putchar(*p == '\n' || *p == '\r' ? ' ' : *p);
	putchar('\n');
}

int main(int argc, char **argv)
{
	const char *host, *export;
	struct nfs_context *nfs;
	char *end, what[320];
	unsigned long vers, timeout_ms;
	int r;

	if (argc != 5)
		goto out_usage;
	host = argv[1];
	export = argv[2];
	errno = 0;
	vers = strtoul(argv[3], &end, 10);
	if (errno || *end || (vers != 3 && vers != 4))
		goto out_usage;
	timeout_ms = strtoul(argv[4], &end, 10);
	if (errno || *end || timeout_ms > 24ul * 3600 * 1000)
		goto out_usage;

	if (vers == 3) {
		struct exportnode *ex = mount_getexports(host);

		if (ex)
			printf("exports\n");
		for (struct exportnode *e = ex; e; e = e->ex_next) {
			printf("export %s", e->ex_dir);
			for (struct groupnode *g = e->ex_groups; g; g = g->gr_next)
				printf("%s%s", g == e->ex_groups ? "  " : ",", g->gr_name);
			printf("\n");
		}
		mount_free_export_list(ex);
	}
	nfs = nfs_init_context();
	if (!nfs) {
		printf("errnum %d\nmsg libnfs: cannot create a context\ndone\n", ENOMEM);
		return 0;
	}
	nfs_set_timeout(nfs, (int)((timeout_ms + 999) / 1000) * 1000);
	nfs_set_autoreconnect(nfs, 0);
	if (vers == 3) {
		snprintf(what, sizeof(what), "MOUNT %s", export);
		r = nfs_mount(nfs, host, export);
	} else {
		snprintf(what, sizeof(what), "NFSv4 port %u", NFS_PORT);
		nfs_set_version(nfs, 4);        /* NFS_V4 */
		r = nfs_mount(nfs, host, "/");
	}
	if (r == 0) {
		struct nfs_stat_64 st;

		if (vers != 3)
			snprintf(what, sizeof(what), "LOOKUP %s", export);
		r = nfs_stat64(nfs, vers == 3 ? "/" : export, &st);
		if (r == 0)
			printf("mode %o\n", (unsigned)(st.nfs_mode & 07777));
	}
	put("what", what);
	if (r < 0) {
		const char *m = nfs_get_error(nfs);

		printf("errnum %d\n", -r);
		put("msg", m && *m ? m : strerror(-r));
		/* v4 has no export list: show what the pseudo root holds instead. */
		if (r == -ENOENT && vers != 3) {
			struct nfsdir *dir;

			if (nfs_opendir(nfs, "/", &dir) == 0) {
				struct nfsdirent *de;

				printf("exports\n");
				while ((de = nfs_readdir(nfs, dir)))
					if (strcmp(de->name, ".") != 0 && strcmp(de->name, "..") != 0)
						printf("export /%s\n", de->name);
				nfs_closedir(nfs, dir);
			}
		}
	} else {
		printf("errnum 0\n");
	}
	printf("done\n");
	nfs_destroy_context(nfs);
	return 0;

out_usage:
	fprintf(stderr, "usage: hpcinit-nfs-probe HOST EXPORT VERS TIMEOUT_MS\n");
	return 2;
}
