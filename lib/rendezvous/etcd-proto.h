/* SPDX-License-Identifier: MIT */
/*
 * What hpcinit-etcd prints and how it exits: the one description of the
 * protocol between the helper (libexec/hpcinit-etcd.c) and the agent's
 * reader (lib/rendezvous/etcd.c).  Both include this file.
 *
 * The output is a sequence of frames, each starting with a text line:
 *
 *   "kv KL VL LEASE\n" KEY VALUE "\n"   a key: KL bytes of key, VL bytes of
 *                                        value (binary-safe), its lease (0: none)
 *   "del KL\n" KEY "\n"                  a deletion (watch)
 *   any other line                       "rev R", "lease ID", "ttl T", "put 0|1",
 *                                        "deleted N", "revoked N", "list",
 *                                        "waited 1", "reset", "synced"
 *
 * A reader takes the frames one by one (rv_frame_next): a "kv" or "del"
 * frame whose lengths run past what it has is not whole yet.  New line
 * kinds may be added; readers skip lines they do not know.
 */
#ifndef HPCINIT_ETCD_PROTO_H
#define HPCINIT_ETCD_PROTO_H

#define ETCD_HELPER_NAME "hpcinit-etcd"
/* The same program as a module a step's session enters in a forked child (proc_start_module). */
#define ETCD_HELPER_MODULE "hpcinit-etcd.so"
#define ETCD_HELPER_ENTRY "hpcinit_etcd_main"

/* Exit codes. */
enum {
	ETCD_EX_OK = 0,
	ETCD_EX_DOWN = 1,               /* no endpoint answered (stderr names each) */
	ETCD_EX_USAGE = 2,
	ETCD_EX_REFUSED = 3,            /* etcd answered and refused the call */
};

/*
 * At most this many bytes of keys and values under a prefix: past it the
 * helper fails (exit 3) saying so.  The agent reads up to ETCD_OUT_MAX of
 * the helper's output (the frames' lines on top).
 */
#define ETCD_LIST_MAX (64 * 1024 * 1024)
#define ETCD_OUT_MAX (ETCD_LIST_MAX + ETCD_LIST_MAX / 4)

/*
 * The agent's deadline for one run of the helper (plain requests): each
 * endpoint may take the request timeout, three times over.  The helper
 * retries a slow answer (connected, no answer in time: an overloaded
 * member) within this, less one request timeout, with a longer timeout
 * each time; a wait (await) adds its own time to both.
 */
#define ETCD_RUN_MS(timeout_ms, n_endpoints) ((timeout_ms) * ((n_endpoints) + 1) * 3)
/*
 * A run that reads the membership gets this much more per node the
 * cluster expects (discovery.expect): a member answering a thousand nodes'
 * lists at once answers each late, but answers (at 1,000 nodes on one
 * member of 2 cores a cold start moves 1.5 GB of records).  The agent
 * passes the helper its deadline (--deadline MS).
 */
#define ETCD_RUN_MS_PER_NODE 60

/*
 * "hpcinit-etcd [OPTIONS] serve": one helper for several calls (a step's:
 * publish, wait, "formed: true"), so a node starts it once.  Each request
 * on its stdin is a line ETCD_SERVE_CALL (ARGC, then the bytes of the
 * call's stdin), then ARGC arguments, each a line with its length and the
 * bytes and a newline (the same words a run of its own would take after
 * the OPTIONS: "--put always", "--deadline MS", the command and its
 * arguments), then the stdin bytes.  Each answer is a line ETCD_SERVE_DONE
 * (the exit code, the bytes of stdout, the bytes of stderr), then those
 * bytes: what a run of its own would have printed and exited with.  EOF on
 * its stdin ends it.  "watch" is not served.
 */
#define ETCD_SERVE_CALL "call %u %zu"
#define ETCD_SERVE_DONE "done %d %zu %zu"
#define ETCD_SERVE_ARGS_MAX 32

#define ETCD_FRAME_KV "kv %llu %llu %lld"      /* printed so; read with etcd_frame_header */
#define ETCD_FRAME_DEL "del %llu"

/*
 * A frame's header line [p, nl) read as "kv KL VL LEASE" (*lease may be
 * negative) or "del KL"; false when it is neither.  Not sscanf: that
 * measures the whole rest of the buffer on every call (glibc), which made
 * reading a list of 10,000 keys quadratic.
 */
static inline const char *etcd_frame_num(const char *p, const char *nl, unsigned long long *ret)
{
	unsigned long long v = 0;
	const char *s = p;

	/* past the type's end: the largest value (no lengths fit it: a reader waits for more) */
	while (p < nl && *p >= '0' && *p <= '9' && p - s < 24) {
		unsigned d = (unsigned)(*p++ - '0');

		v = v > (~0ULL - d) / 10 ? ~0ULL : v * 10 + d;
	}
	*ret = v;
	return p > s && (p == nl || *p < '0' || *p > '9') ? p : NULL;
}

static inline int etcd_frame_header(const char *p, const char *nl, unsigned long long *kl,
				    unsigned long long *vl, long long *lease)
{
	unsigned long long l;
	int neg;

	if (nl - p > 4 && !__builtin_memcmp(p, "del ", 4)) {
		p = etcd_frame_num(p + 4, nl, kl);
		return p == nl ? 2 : 0;
	}
	if (nl - p < 8 || __builtin_memcmp(p, "kv ", 3) || !(p = etcd_frame_num(p + 3, nl, kl)) ||
	    p == nl || *p++ != ' ' || !(p = etcd_frame_num(p, nl, vl)) || p == nl || *p++ != ' ')
		return 0;
	neg = p < nl && *p == '-';
	if (!(p = etcd_frame_num(p + neg, nl, &l)) || p != nl || l > 9223372036854775807ULL)
		return 0;
	*lease = neg ? -(long long)l : (long long)l;
	return 1;
}

#endif
