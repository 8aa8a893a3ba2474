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
 * EXPORT (and, when that is ENOENT, what the pseudo root holds).  When the
 * v4 mount fails, a raw COMPOUND with no operations, once for each minor
 * version 0-2, says how far the server answered: libnfs speaks 4.0 only, and
 * a server that speaks 4.1 only (Azure Files, NetApp Files 4.1 volumes)
 * refuses it with NFS4ERR_MINOR_VERS_MISMATCH although it is up.  On
 * stdout, one "key value" a line:
 *
 *   exports               the export list follows (v3), or the pseudo root (v4)
 *   export PATH  CLIENTS  one export
 *   what CALL             the call that answered last: "MOUNT /shared", "LOOKUP /x", ...
 *   mode OCTAL            the export root's mode
 *   errnum N              0, or the positive errno of the failure
 *   msg TEXT              libnfs's own words
 *   layer L               v4, after a failed mount: "nfs" (the NFS service
 *                         answered a COMPOUND), "rpc" (TCP connected but no
 *                         NFS answer: an RPC error, garbage or silence), "tcp"
 *                         (no TCP connection)
 *   rpcmsg TEXT           layer rpc: libnfs's words for the RPC failure
 *   minor N STATUS        v4, layer nfs: minor version N's answer, "NFS4_OK",
 *                         "NFS4ERR_MINOR_VERS_MISMATCH" or "NFS4ERR_<n>"
 *   done                  the last line
 *
 * Exit status: 0 when it answered, 2 on usage.
 */
#include "config.h"
#include "number.h"

#include <errno.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>           /* libnfs.h uses struct timeval without including it */
#include <time.h>

#include <nfsc/libnfs.h>
#include <nfsc/libnfs-raw.h>
#include <nfsc/libnfs-raw-mount.h>
#include <nfsc/libnfs-raw-nfs4.h>

#define NFS_PORT 2049u

/* One line: no newline from the server's text may start a record of its own. */
static void put(const char *key, const char *value)
{
	printf("%s ", key);
	for (const char *p = value; *p; p++)
		putchar(*p == '\n' || *p == '\r' ? ' ' : *p);
	putchar('\n');
}

/* ---- the raw v4 probe: how far does the server answer? --------------------- */

struct call {
	int done, status;               /* RPC_STATUS_* */
	int nfsstat;                    /* the COMPOUND's status, when status is SUCCESS */
	char err[256];
};

static void call_cb(struct rpc_context *rpc, int status, void *data, void *priv)
{
	struct call *c = priv;

	(void)rpc;
	c->done = 1;
	c->status = status;
	if (status == RPC_STATUS_SUCCESS && data)
		c->nfsstat = (int)((COMPOUND4res *)data)->status;
	else if (status == RPC_STATUS_ERROR && data)
		snprintf(c->err, sizeof(c->err), "%s", (const char *)data);
}

static uint64_t mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/* Serve rpc until c is done; -1 when the connection broke or the deadline passed. */
static int call_wait(struct rpc_context *rpc, struct call *c, uint64_t deadline)
{
	while (!c->done) {
		struct pollfd pfd = { .fd = rpc_get_fd(rpc), .events = (short)rpc_which_events(rpc) };
		uint64_t now = mono_ms();
		int pr;

		if (now >= deadline) {
			snprintf(c->err, sizeof(c->err), "no answer within the probe's time");
			return -1;
		}
		pr = poll(&pfd, 1, deadline - now > 100 ? 100 : (int)(deadline - now));
		if (pr < 0 && errno != EINTR) {
			snprintf(c->err, sizeof(c->err), "poll: %s", strerror(errno));
			return -1;
		}
		if (rpc_service(rpc, pr > 0 ? pfd.revents : 0) < 0) {
			const char *e = rpc_get_error(rpc);

			if (!c->done)
				snprintf(c->err, sizeof(c->err), "%s", e && *e ? e : "connection lost");
			return c->done ? 0 : -1;
		}
	}
	return 0;
}

static void v4_layers(const char *host, unsigned long timeout_ms)
{
	struct rpc_context *rpc = rpc_init_context();
	uint64_t deadline = mono_ms() + (timeout_ms ? timeout_ms : 1000);
	struct call c = { 0 };
	char what[64];

	if (!rpc)
		return;
	if (rpc_connect_async(rpc, host, (int)NFS_PORT, call_cb, &c) < 0 ||
	    call_wait(rpc, &c, deadline) < 0 || c.status != RPC_STATUS_SUCCESS) {
		printf("layer tcp\n");
		goto out;
	}
	for (uint32_t minor = 0; minor <= 2; minor++) {
		COMPOUND4args args;

		memset(&args, 0, sizeof(args));
		args.minorversion = minor;
		memset(&c, 0, sizeof(c));
		if (rpc_nfs4_compound_async(rpc, call_cb, &args, &c) < 0 ||
		    call_wait(rpc, &c, deadline) < 0 || c.status != RPC_STATUS_SUCCESS) {
			/* A server that answered an earlier minor version did answer NFS. */
			if (minor == 0) {
				printf("layer rpc\n");
				put("rpcmsg", c.err[0] ? c.err : "no NFS answer");
			}
			break;
		}
		if (minor == 0)
			printf("layer nfs\n");
		if (c.nfsstat == NFS4_OK)
			snprintf(what, sizeof(what), "NFS4_OK");
		else if (c.nfsstat == NFS4ERR_MINOR_VERS_MISMATCH)
			snprintf(what, sizeof(what), "NFS4ERR_MINOR_VERS_MISMATCH");
		else
			snprintf(what, sizeof(what), "NFS4ERR_%d", c.nfsstat);
		printf("minor %u %s\n", (unsigned)minor, what);
	}
out:
	rpc_destroy_context(rpc);
}

int main(int argc, char **argv)
{
	const char *host, *export;
	struct nfs_context *nfs;
	char what[320];
	unsigned long long vers, timeout_ms;
	int r, mounted;

	if (argc != 5)
		goto out_usage;
	host = argv[1];
	export = argv[2];
	if (!num_ull(argv[3], 10, 4, &vers) || (vers != 3 && vers != 4))
		goto out_usage;
	if (!num_ull(argv[4], 10, 24ull * 3600 * 1000, &timeout_ms))
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
	mounted = r == 0;
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
		if (vers != 3 && !mounted)
			v4_layers(host, timeout_ms);
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
