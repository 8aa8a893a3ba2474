/* SPDX-License-Identifier: MIT */
/*
 * nfs step internals, shared by the files of modules/nfs/:
 *   nfs.c     the step: targets from the spec, the run, the summary
 *   mount.c   one mount: mount(8), its errors, verification, foreign fstab lines
 *   probe.c   waiting for the server: TCP, the libnfs helper, statfs/write probes
 *   fstab.c   fstab lines, option text (the mount table: common/base/mounts.c)
 *   export.c  the head role's exports
 */
#ifndef HPCINIT_NFS_H
#define HPCINIT_NFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "hpcinit.h"
#include "mounts.h"
#include "proc.h"

#define NFS_SUPER_MAGIC_ 0x6969
#define NFS_PORT 2049u
#define PORTMAP_PORT 111u
#define NFS_MAX_MOUNTS 256              /* hard limit on mounts/exports in one spec */
#define NFS_MOUNT_TIMEOUT_MS 60000u     /* mount(8), once the server answered */
#define NFS_INSPECT_TIMEOUT_MS 10000u   /* statfs/stat/write probe of a mounted path */
#define NFS_TCP_TIMEOUT_MS 3000u        /* one connect attempt */
#define NFS_RPC_TIMEOUT_MS 10000u       /* one libnfs probe */
#define NFS_ONE_PROBE_MS (2 * NFS_TCP_TIMEOUT_MS + NFS_RPC_TIMEOUT_MS)   /* wait: 0s */
#define NFS_BACKOFF_FIRST_MS 500u
#define NFS_BACKOFF_CAP_MS 5000u
#define NFS_LAST_PROBE_MS 200u        /* the wait ends with a probe this long before its end */
#define EXPORTS_FILE "/etc/exports.d/hpcinit.exports"

/* What went wrong, in the words a user needs. */
enum nfs_err {
	NE_OK,
	NE_UNREACHABLE,         /* no TCP connection */
	NE_NOANSWER,            /* TCP connected, but no NFS answer (an RPC error, garbage, silence) */
	NE_NOEXPORT,            /* the server has no such export / path */
	NE_DENIED,              /* the server refused this client */
	NE_NODEV,               /* the kernel has no NFS client (ENODEV from mount) */
	NE_TIMEOUT,             /* mount(8) did not finish */
	NE_NOHELPER,            /* mount.nfs missing */
	NE_STATD,               /* v3 locking needs rpc.statd, which is not running */
	NE_OTHER,
};

/* Result of one probe (the libnfs part comes from the helper hpcinit-nfs-probe). */
struct nfs_probe_result {
	enum nfs_err err;
	int errnum;             /* positive errno, 0 when none */
	char what[96];          /* "port 111 (portmapper)", "MOUNT /shared", ... */
	char msg[512];          /* the system's or libnfs's own words */
	bool have_exports;
	char exports[2048];     /* the server's exports, one a line */
	bool have_mode;
	unsigned mode;          /* mode of the export's root, when known */
	char layer[8];          /* v4, a failed mount: "nfs", "rpc" or "tcp" (how far the server answered) */
	char minors[160];       /* v4, layer nfs: "0 NFS4ERR_MINOR_VERS_MISMATCH\n1 NFS4_OK\n..." */
	char rpcmsg[256];       /* layer rpc: libnfs's words */
	char note[512];         /* the server is up but the probe could not check the export: why */
};

/* What a mounted path looks like; flat, so a probe child can hand it over a pipe. */
struct mp_info {
	int statfs_err;         /* 0 or errno */
	long fstype;
	int stat_err;
	unsigned mode;
	int write_err;          /* 0 ok, errno, or -1 not tried */
	char write_step[16];
	char blocked[512];      /* inspect returned -EBUSY: an earlier probe of the path is still stuck */
};

struct nfs_ops {
	/* Connect to host:port within timeout_ms; 0 or -errno, err says why. */
	int (*tcp_connect)(const char *host, uint16_t port, unsigned timeout_ms,
			   char *err, size_t errlen);
	/* MOUNT (v3) or LOOKUP (v4) of export; 0 when the server has it, else -errno and res. */
	int (*rpc_probe)(const char *host, const char *export, int vers, unsigned timeout_ms,
			 struct nfs_probe_result *res);
	/* statfs/stat of a mounted path, optional write probe; 0 or -ETIMEDOUT. */
	int (*inspect)(const char *hostpath, bool write_probe, unsigned timeout_ms,
		       struct mp_info *ret);
};

/* One mount of the spec, resolved. */
struct nfs_target {
	const struct spec_nfs_mount *m;
	const char *host, *export, *path;
	char *source;           /* host:/export, as mount(8) and mountinfo see it */
	int vers;               /* 3 or 4; from vers=/nfsvers= (4 when absent: mount.nfs tries 4 first) */
	uint16_t port;          /* port= option, 0 when absent */
	bool ro;
	uint64_t wait_ms;
	struct strlist opts;    /* for mount -o */
};

/* The ops in use (probe.c); unit tests swap in fakes. */
extern const struct nfs_ops *nfs_io;

/* the step (nfs.c) */
void target_init(struct nfs_target *t, const struct spec_nfs_mount *m);
void target_free(struct nfs_target *t);

/* fstab lines, option text (fstab.c) */
void nfs_fmt_duration(uint64_t ms, char *buf, size_t len);
char *field_escape(const char *s);
const char *nfs_opt_find(const struct strlist *l, const char *key);
char *nfs_strlist_join(const struct strlist *l, const char *sep);
char *mount_optstr(const struct nfs_target *t);
char *fstab_line(const struct nfs_target *t);
int options_diff(const struct nfs_target *t, const struct mi_entry *e, struct strbuf *out);

/* waiting for the server (probe.c) */
void exports_add(struct nfs_probe_result *res, const char *line);
bool export_listed(const char *list, const char *export);
bool rpc_answer_parse(const char *text, struct nfs_probe_result *res);
void rpc_classify(struct nfs_probe_result *res, const char *export);
int probe_wait(const struct ctx *c, const struct nfs_target *t, struct nfs_probe_result *res,
	uint64_t *ret_waited, unsigned *ret_attempts);
/* Why the server did not do: details and a finding (nfs.server.*). */
void explain_probe(struct report *r, const struct nfs_target *t,
	const struct nfs_probe_result *pr, uint64_t waited, unsigned attempts);

/* one mount: mount(8), verification (mount.c) */
char *nfs_first_line(const char *s);
/* One mount; what is wrong is a finding (nfs.mount.*, nfs.mounted.*, nfs.mountpoint.*). */
enum rstatus mount_one(struct ctx *c, struct report *r, const struct nfs_target *t,
	bool *ret_not_mounted);
void foreign_fstab_lines(const struct ctx *c, struct report *r, const char *tag,
	const struct nfs_target *t, size_t n);

/* exports, head role (export.c) */
/* The exports file; what is wrong is a finding (nfs.exports.*). */
enum rstatus do_exports(struct ctx *c, struct report *r, unsigned *ret_n);

#endif
