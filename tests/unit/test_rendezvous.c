/* SPDX-License-Identifier: MIT */
/*
 * lib/rendezvous: the shared-directory backend on a fake root (levels,
 * owners, links, FIFOs, sizes, squash, a spec mount not there; lists on
 * threads and their read cache: test_dirlist.c) and the etcd backend's frame reader
 * and exit-code mapping, the session's answers, a watcher's stream parser and the
 * shared directory's name sum.  The etcd backend against a real etcd is in
 * tests/cluster/etcd-*.sh and ssh-ca-etcd.sh.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/rendezvous/rendezvous.c"
#include "../../lib/rendezvous/dir.c"
#include "../../lib/rendezvous/dirlist.c"
#include "../../lib/rendezvous/etcd.c"
#include "../../lib/rendezvous/stream.c"
#include "spec.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-rendezvous.XXXXXX";
static char s_name[] = "glo", s_dir[] = "/share/.hpcinit";

#include "testrv.h"

#define CERTS "/share/.hpcinit/glo/certs"

static bool detail(const struct report *rep, const char *text)
{
	return strstr(sb_str(&rep->details), text) != NULL;
}

static struct rv_opts opts(bool create)
{
	struct rv_opts o = { .collection = "certs", .self = "node1", .max_bytes = 1024,
			     .create = create };

	return o;
}

static void test_dir(struct ctx *c)
{
	struct rendezvous rv;
	struct report rep;
	struct rv_opts o = opts(false);
	struct seen s = { 0 };
	char *v = NULL, *p;
	size_t len = 0;

	/* A compute (create false) finds no collection: -ENOENT, nothing made. */
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), -ENOENT);
	rv_close(&rv);
	report_free(&rep);

	/* The head creates the levels; put, get, names, remove. */
	o = opts(true);
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), 0);
	TEST_STREQ(rv.where, CERTS "/");
	TEST_INTEQ(rv_put(&rv, &rep, "node1.cert", "cert-text\n", 10), 1);
	TEST_INTEQ(rv_put(&rv, &rep, "node1.cert", "cert-text\n", 10), 0);
	TEST_INTEQ(rv_get(&rv, "node1.cert", &v, &len), 0);
	TEST_STREQ(v, "cert-text\n");
	TEST_INTEQ(len, 10);
	free(v);
	TEST_INTEQ(rv_get(&rv, "missing", &v, NULL), -ENOENT);
	TEST_INTEQ(rv_get(&rv, "../nodes/x", &v, NULL), -EINVAL);
	TEST_INTEQ(rv_put(&rv, &rep, "a/b", "x", 1), -EINVAL);

	/* Entries that must never be read: a link to a secret, a FIFO, a device, too big, writable. */
	put_file("/etc-secret", "root-only secret\n", 0600, 0);
	{
		char *secret = host("/etc-secret");

		p = host(CERTS "/link.cert");
		TEST_INTEQ(symlink(secret, p), 0);
		free(p);
		free(secret);
	}
	p = host(CERTS "/fifo.cert");
	TEST_INTEQ(mkfifo(p, 0644), 0);
	free(p);
	put_file(CERTS "/big.cert", "0123456789012345678901234567890123456789", 0644, 0);
	rv.o.max_bytes = 16;
	put_file(CERTS "/groupw.cert", "x\n", 0664, 0);
	if (geteuid() == 0)
		put_file(CERTS "/user.cert", "x\n", 0644, 1000);
	put_file(CERTS "/.hidden", "x\n", 0644, 0);

	{
		struct rv_entry e;

		/* A FIFO opened O_NONBLOCK: refused at once, not a hang. */
		TEST_INTEQ(rv_get_entry(&rv, "fifo.cert", &e, &v), -EPERM);
		TEST_STREQ(e.refused, "not-a-file");
		TEST_INTEQ(rv_get_entry(&rv, "link.cert", &e, &v), -ELOOP);
		TEST_STREQ(e.refused, "symlink");
		TEST_CHECK(v == NULL);
		TEST_INTEQ(rv_get_entry(&rv, "big.cert", &e, &v), -EFBIG);
		TEST_STREQ(e.refused, "too-large");
		TEST_INTEQ(rv_get_entry(&rv, "groupw.cert", &e, &v), -EPERM);
		TEST_STREQ(e.refused, "writable");
		if (geteuid() == 0) {
			TEST_INTEQ(rv_get_entry(&rv, "user.cert", &e, &v), -EPERM);
			TEST_STREQ(e.refused, "wrong-owner");
			TEST_CHECK(strstr(e.why, "owned by uid 1000, not by the trusted writer (uid 0, root)"));
		}
	}
	TEST_INTEQ(rv_list(&rv, &rep, NULL, collect, &s), 0);
	TEST_CHECK(has(&s.names, "node1.cert"));
	TEST_CHECK(has(&s.refused, "link.cert:symlink"));
	TEST_CHECK(has(&s.refused, "fifo.cert:not-a-file"));
	TEST_CHECK(has(&s.refused, "big.cert:too-large"));
	TEST_CHECK(has(&s.refused, "groupw.cert:writable"));
	TEST_CHECK(!has(&s.names, ".hidden"));
	TEST_INTEQ(s.names.n, 1);
	strlist_free(&s.names);
	strlist_free(&s.refused);

	/*
	 * A run killed mid-put leaves "<name>.hpcinit-tmp.<node>.XXXXXX".  rv_put does
	 * not readdir the collection for it (10,000 entries): the next list removes
	 * this node's own (writers hold the run lock), leaves another node's, and
	 * in check mode removes nothing.
	 */
	put_file(CERTS "/node1.cert.hpcinit-tmp.node1.abcdef", "half", 0600, 0);
	put_file(CERTS "/node1.cert.hpcinit-tmp.node2.abcdef", "half", 0600, 0);
	TEST_INTEQ(rv_put(&rv, &rep, "node1.cert", "cert-text 2\n", 12), 1);
	p = host(CERTS "/node1.cert.hpcinit-tmp.node1.abcdef");
	TEST_CHECK(access(p, F_OK) == 0);
	c->mode = RUN_CHECK;
	TEST_INTEQ(rv_list(&rv, &rep, NULL, collect, &s), 0);
	TEST_CHECK(access(p, F_OK) == 0);
	TEST_CHECK(has(&s.refused, "node1.cert.hpcinit-tmp.node1.abcdef:temp"));
	strlist_free(&s.names);
	strlist_free(&s.refused);
	c->mode = RUN_APPLY;
	TEST_INTEQ(rv_list(&rv, &rep, NULL, collect, &s), 0);
	TEST_CHECK(access(p, F_OK) < 0 && errno == ENOENT);
	TEST_CHECK(!has(&s.refused, "node1.cert.hpcinit-tmp.node1.abcdef:temp"));
	TEST_CHECK(has(&s.refused, "node1.cert.hpcinit-tmp.node2.abcdef:temp"));
	TEST_CHECK(fs_is_own_temp(c, "x.rec.hpcinit-tmp.node1.Zz09_a"));
	TEST_CHECK(!fs_is_own_temp(c, "x.rec.hpcinit-tmp.node1.Zz09_"));
	TEST_CHECK(!fs_is_own_temp(c, "x.rec.hpcinit-tmp.node10.Zz09_a"));
	TEST_CHECK(!fs_is_own_temp(c, ".hpcinit-tmp.node1.Zz09_a"));
	free(p);
	strlist_free(&s.names);
	strlist_free(&s.refused);
	p = host(CERTS "/node1.cert.hpcinit-tmp.node2.abcdef");
	unlink(p);
	free(p);

	/* Removing a link removes the link, never its target. */
	TEST_INTEQ(rv_remove(&rv, &rep, "link.cert"), 1);
	p = host("/etc-secret");
	TEST_CHECK(access(p, F_OK) == 0);
	free(p);
	TEST_INTEQ(rv_remove(&rv, &rep, "node1.cert"), 1);
	TEST_INTEQ(rv_remove(&rv, &rep, "node1.cert"), 0);
	rv_close(&rv);
	report_free(&rep);

	/* The collection itself a link (to /etc): refused, nothing written in the target. */
	{
		char *target = host("/etc-target"), *certs = host(CERTS), *gone = xasprintf("%s.old", certs);

		TEST_INTEQ(mkdir(target, 0755), 0);
		TEST_INTEQ(rename(certs, gone), 0);
		TEST_INTEQ(symlink(target, certs), 0);
		report_init(&rep);
		TEST_INTEQ(rv_open(c, &rep, &o, &rv), -ENOTDIR);
		TEST_CHECK(detail(&rep, "rendezvous directory " CERTS ": not a directory (a symlink is "
				  "refused too)"));
		TEST_INTEQ(rv_put(&rv, &rep, "x.cert", "x", 1), -EBADF);
		rv_close(&rv);
		report_free(&rep);
		unlink(certs);
		TEST_INTEQ(rename(gone, certs), 0);
		free(target);
		free(certs);
		free(gone);
	}

	/* A level writable by others: refused with the reason. */
	p = host("/share/.hpcinit/glo");
	chmod(p, 0777);
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), -EPERM);
	TEST_CHECK(detail(&rep, "is writable by group or others (mode 0777)"));
	rv_close(&rv);
	report_free(&rep);
	chmod(p, 0755);
	free(p);
}

/* The head exports the share root squashed: levels and entries are the anonymous uid's. */
static void test_dir_squash(struct ctx *c, struct spec *spec)
{
	static char share[] = "/share";
	struct spec_nfs_export x = { .path = share };
	struct rendezvous rv;
	struct report rep;
	struct rv_opts o = opts(true);
	struct stat st;
	char *p;

	if (geteuid() != 0)
		return;
	o.collection = "sq";
	strlist_push(&x.options, "rw");
	strlist_push(&x.options, "root_squash");
	spec->cluster.role = ROLE_HEAD;
	spec->nfs.exports = &x;
	spec->nfs.n_exports = 1;
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), 0);
	TEST_INTEQ(rv.tree.trusted, 65534);
	TEST_INTEQ(rv_put(&rv, &rep, "a", "x\n", 2), 1);
	p = host("/share/.hpcinit/glo/sq/a");
	TEST_INTEQ(lstat(p, &st), 0);
	TEST_INTEQ(st.st_uid, 65534);
	free(p);
	p = host("/share/.hpcinit/glo/sq");
	TEST_INTEQ(lstat(p, &st), 0);
	TEST_INTEQ(st.st_uid, 65534);
	free(p);
	rv_close(&rv);
	report_free(&rep);
	/* no_root_squash now: the tree goes back to root. */
	strlist_push(&x.options, "no_root_squash");
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), 0);
	TEST_INTEQ(rv.tree.trusted, 0);
	rv_close(&rv);
	report_free(&rep);
	spec->nfs.exports = NULL;
	spec->nfs.n_exports = 0;
	spec->cluster.role = ROLE_COMPUTE;
	strlist_free(&x.options);
}

/*
 * discovery.dir on a mount of the spec that is not there: nothing of the
 * tree is made or read (the local disk under the mount point), and the
 * finding names the mount; once mountinfo lists it, the tree is made.
 */
static void test_dir_mount(struct ctx *c, struct spec *spec)
{
	struct spec_nfs_mount m = { .host = (char *)(uintptr_t)"nfs01", .export = (char *)(uintptr_t)"/export",
				    .path = (char *)(uintptr_t)"/share" };
	struct rv_opts o = opts(true);
	struct rendezvous rv;
	struct report rep;
	char *p, *coll = host("/share/.hpcinit/glo/fresh");

	spec->nfs.present = true;
	spec->nfs.mounts = &m;
	spec->nfs.n_mounts = 1;
	c->module = "discovery";
	o.collection = "fresh";
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), -ENOMEDIUM);
	TEST_INTEQ(rep.n_findings, 1);
	if (rep.n_findings) {
		TEST_STREQ(rep.findings[0].tag, "discovery.mount.absent");
		TEST_STREQ(rep.findings[0].text, "discovery.dir /share/.hpcinit is on the NFS mount /share "
			   "(nfs01:/export), which is not mounted; nothing is written there");
	}
	TEST_CHECK(access(coll, F_OK) < 0);
	rv_close(&rv);
	report_free(&rep);
	/* a compute's certs/ (create false) is refused the same way, not read as empty */
	o.create = false;
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), -ENOMEDIUM);
	rv_close(&rv);
	report_free(&rep);

	test_put(root, "/proc/self/mountinfo", "60 1 0:50 / /share rw - nfs nfs01:/export rw,vers=3\n");
	o.create = true;
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), 0);
	TEST_INTEQ(rep.n_findings, 0);
	TEST_CHECK(access(coll, F_OK) == 0);
	rv_close(&rv);
	report_free(&rep);

	p = host("/proc/self/mountinfo");
	unlink(p);
	spec->nfs.present = false;
	spec->nfs.mounts = NULL;
	spec->nfs.n_mounts = 0;
	c->module = NULL;
	free(p);
	free(coll);
}

static void test_frames(void)
{
	static const char out[] = "rev 7\nkv 3 5 12\nk/avalue\nlist\ndel 2\nk2\nkv 9 9 0\nshort";
	const char *p = out, *end = out + sizeof(out) - 1;
	struct rv_frame f;

	TEST_INTEQ(rv_frame_next(&p, end, &f), 1);
	TEST_INTEQ(f.kind, RV_F_LINE);
	TEST_INTEQ(f.line_len, 5);
	TEST_CHECK(memcmp(f.line, "rev 7", 5) == 0);
	TEST_INTEQ(rv_frame_next(&p, end, &f), 1);
	TEST_INTEQ(f.kind, RV_F_KV);
	TEST_INTEQ(f.key_len, 3);
	TEST_CHECK(memcmp(f.key, "k/a", 3) == 0);
	TEST_INTEQ(f.value_len, 5);
	TEST_CHECK(memcmp(f.value, "value", 5) == 0);
	TEST_INTEQ(f.lease, 12);
	TEST_INTEQ(rv_frame_next(&p, end, &f), 1);
	TEST_INTEQ(f.kind, RV_F_LINE);
	TEST_INTEQ(rv_frame_next(&p, end, &f), 1);
	TEST_INTEQ(f.kind, RV_F_DEL);
	TEST_CHECK(f.key_len == 2 && memcmp(f.key, "k2", 2) == 0);
	/* A kv whose lengths run past the end is not whole: the reader waits for more. */
	TEST_INTEQ(rv_frame_next(&p, end, &f), 0);
	TEST_CHECK(strncmp(p, "kv 9 9 0", 8) == 0);
	/* Lengths near the type's end do not wrap. */
	{
		static const char huge[] = "kv 18446744073709551615 2 0\nab\n";
		const char *q = huge;

		TEST_INTEQ(rv_frame_next(&q, huge + sizeof(huge) - 1, &f), 0);
	}
}

/*
 * A frame's header is read within its line: the byte after the buffer's end
 * is a page nobody may read (sscanf measured the whole rest of the buffer
 * with strlen, which read past an answer's end and made a list of 10,000
 * keys quadratic); a negative lease, a "del", a number that is no number.
 */
static void test_frames_bounded(void)
{
	long pg = sysconf(_SC_PAGESIZE);
	char *map = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	static const char text[] = "kv 3 2 -1\nk/aav\n";
	unsigned long long kl = 0, vl = 0;
	long long lease = 0;
	struct rv_frame f;
	const char *p, *end;

	TEST_CHECK(map != MAP_FAILED);
	if (map == MAP_FAILED)
		return;
	TEST_INTEQ(mprotect(map + pg, (size_t)pg, PROT_NONE), 0);
	memcpy(map + pg - (sizeof(text) - 1), text, sizeof(text) - 1);  /* no NUL: the next byte cannot be read */
	p = map + pg - (sizeof(text) - 1);
	end = map + pg;
	TEST_INTEQ(rv_frame_next(&p, end, &f), 1);
	TEST_INTEQ(f.kind, RV_F_KV);
	TEST_INTEQ(f.lease, -1);
	TEST_CHECK(f.key_len == 3 && f.value_len == 2 && memcmp(f.value, "av", 2) == 0);
	TEST_CHECK(p == end);
	munmap(map, (size_t)pg * 2);
	TEST_INTEQ(etcd_frame_header("del 12\n", "del 12\n" + 6, &kl, &vl, &lease), 2);
	TEST_INTEQ(kl, 12);
	TEST_INTEQ(etcd_frame_header("kv 1 2 3\n", "kv 1 2 3\n" + 8, &kl, &vl, &lease), 1);
	TEST_CHECK(kl == 1 && vl == 2 && lease == 3);
	TEST_INTEQ(etcd_frame_header("kv 1 x 3\n", "kv 1 x 3\n" + 8, &kl, &vl, &lease), 0);
	TEST_INTEQ(etcd_frame_header("kv 1 2 3 4\n", "kv 1 2 3 4\n" + 10, &kl, &vl, &lease), 0);
	TEST_INTEQ(etcd_frame_header("kv 1 2 \n", "kv 1 2 \n" + 7, &kl, &vl, &lease), 0);
	TEST_INTEQ(etcd_frame_header("del \n", "del \n" + 4, &kl, &vl, &lease), 0);
	TEST_INTEQ(etcd_frame_header("rev 7\n", "rev 7\n" + 5, &kl, &vl, &lease), 0);
}

/*
 * The step's helper ("serve") and its way out: a helper that stopped reading
 * its requests (stdin closed) is stopped, and the call runs in a helper of
 * its own; the write to it must not kill this process (SIGPIPE).  The helper
 * is a stand-in (a shell script: no etcd here): served, it reads the first
 * request's first line, closes its stdin, answers that call ("rev 5") and
 * lingers; run on its own it prints "rev 7".  It reads before it closes: a
 * stand-in that closed at once raced the first write (EPIPE when the close
 * came first, under valgrind on a busy machine), and that call, run on its
 * own, left the second call a new helper that answered "rev 5".
 */
static void test_session(struct ctx *c)
{
	static const char *const list[] = { "list", "/hpcinit/t/nodes/", NULL };
	char dir[] = "/tmp/hpcinit-test-sess.XXXXXX", *helper;
	struct proc_result res = { 0 };
	FILE *f;

	TEST_CHECK(mkdtemp(dir) != NULL);
	helper = xasprintf("%s/hpcinit-etcd", dir);
	f = fopen(helper, "w");
	TEST_CHECK(f != NULL);
	if (!f)
		return;
	fputs("#!/bin/sh\n# stand-in for hpcinit-etcd (test_rendezvous: no etcd)\n"
	      "for a; do [ \"$a\" = serve ] && { read -r l; exec <&-; printf 'done 0 6 0\\nrev 5\\n'; sleep 2; exit 0; }; done\n"
	      "printf 'rev 7\\n'\n", f);
	fclose(f);
	chmod(helper, 0755);
	setenv("HPCINIT_LIBEXEC_DIR", dir, 1);
	sess.armed = 1;
	TEST_INTEQ(rv_etcd_run(c, NULL, NULL, &res, list), 0);
	TEST_STREQ(res.out ? res.out : "", "rev 5\n");        /* served */
	TEST_CHECK(sess.up);
	proc_result_free(&res);
	memset(&res, 0, sizeof(res));
	/* The helper no longer reads: the call runs on its own. */
	TEST_INTEQ(rv_etcd_run(c, NULL, NULL, &res, list), 0);
	TEST_STREQ(res.out ? res.out : "", "rev 7\n");
	TEST_CHECK(!sess.up);
	proc_result_free(&res);
	sess.armed = 0;
	sess_stop(true);
	unsetenv("HPCINIT_LIBEXEC_DIR");
	unlink(helper);
	rmdir(dir);
	free(helper);
}

/* The sync's answer as the session reads it: the lease, the put, etcd's Date, then the list whole. */
static void test_sync_answer(void)
{
	static char out[] = "lease 42\nput 1\ndate 1700000000\nlist\nwaited 1\nkv 3 1 42\nk/ax\nrev 9\n";
	struct proc_result res = { .out = out, .out_len = sizeof(out) - 1 };
	struct rv_synced ans = { 0 };

	read_sync(&res, &ans);
	TEST_INTEQ(ans.lease, 42);
	TEST_CHECK(ans.put);
	TEST_INTEQ(ans.date, 1700000000);
	TEST_CHECK(ans.listed && ans.waited);
	TEST_CHECK(ans.members_len == strlen("waited 1\nkv 3 1 42\nk/ax\nrev 9\n") &&
		   memcmp(ans.members, "waited 1\nkv", 11) == 0);
	free(ans.members);
	/* No list asked: no members; a put of 0 is no put; junk after a number is no number. */
	{
		static char o2[] = "lease 5x\nput 0\n";
		struct proc_result r2 = { .out = o2, .out_len = sizeof(o2) - 1 };
		struct rv_synced a2 = { 0 };

		read_sync(&r2, &a2);
		TEST_INTEQ(a2.lease, 0);
		TEST_CHECK(!a2.put && !a2.listed && !a2.members);
	}
}

/* The watch stream kept as a membership: frames split anywhere, reset, del, synced counted. */
static void test_stream(void)
{
	static const char in[] = "reset\nkv 3 1 7\nk/ax\nkv 3 1 7\nk/by\nsynced\n"
				 "kv 3 1 7\nk/az\ndel 3\nk/b\nsynced\nreset\n";
	struct rv_stream m = { 0 };
	struct strbuf t = STRBUF_INIT;
	unsigned changes = 0;

	/* One byte at a time: a frame is taken only when whole. */
	for (size_t i = 0; i < 27; i++)
		rv_stream_feed(&m, in + i, 1, &changes);
	TEST_INTEQ(m.n, 1);
	TEST_INTEQ(changes, 0);
	TEST_CHECK(!m.synced);
	rv_stream_feed(&m, in + 27, 41 - 27, &changes);
	TEST_INTEQ(m.n, 2);
	TEST_INTEQ(changes, 1);
	TEST_CHECK(m.synced);
	rv_stream_feed(&m, in + 41, 72 - 41, &changes);
	TEST_INTEQ(changes, 2);
	rv_stream_text(&m, &t);
	/* k/a replaced by the later put, k/b deleted */
	TEST_STREQ(sb_str(&t), "kv 3 1 7\nk/az\n");
	rv_stream_feed(&m, in + 72, sizeof(in) - 1 - 72, &changes);
	TEST_INTEQ(m.n, 0);
	TEST_CHECK(!m.synced);
	TEST_INTEQ(m.in.len, 0);
	rv_stream_free(&m);
	sb_free(&t);
	/* Many keys (the index grows), every third deleted, every key put again: one entry each. */
	{
		struct strbuf one = STRBUF_INIT;
		char k[32];

		for (int round = 0; round < 2; round++)
			for (int i = 0; i < 1000; i++) {
				snprintf(k, sizeof(k), "k/n%04d", i);
				sb_reset(&one);
				if (round == 0 || i % 3)
					sb_printf(&one, "kv 7 1 0\n%sv\n", k);
				else
					sb_printf(&one, "del 7\n%s\n", k);
				rv_stream_feed(&m, sb_str(&one), one.len, &changes);
			}
		TEST_INTEQ(m.n, 1000 - 334);
		for (int i = 0; i < 1000; i += 3) {
			snprintf(k, sizeof(k), "k/n%04d", i);
			sb_reset(&one);
			sb_printf(&one, "kv 7 1 0\n%sw\n", k);
			rv_stream_feed(&m, sb_str(&one), one.len, &changes);
		}
		TEST_INTEQ(m.n, 1000);
		TEST_INTEQ(members_find(&m, "k/n0999", 7), members_find(&m, "k/n0999", 7));
		TEST_CHECK(members_find(&m, "k/n0999", 7) < m.n);
		TEST_CHECK(members_find(&m, "k/n1000", 7) == m.n);
		TEST_INTEQ(memcmp(m.item[members_find(&m, "k/n0003", 7)] + 16, "w", 1), 0);
		rv_stream_free(&m);
		sb_free(&one);
	}
	/* The view a watcher hands the runs it starts: set, read, cleared. */
	{
		size_t l = 1;

		TEST_CHECK(rv_etcd_view(&l) == NULL && l == 0);
		rv_etcd_view_set(in, 6);
		TEST_CHECK(rv_etcd_view(&l) == in && l == 6);
		rv_etcd_view_set(NULL, 6);
		TEST_CHECK(rv_etcd_view(&l) == NULL && l == 0);
	}
}

/* The shared directory's names summed: the same set in any order sums the same; another set not. */
static void test_names_sum(struct ctx *c)
{
	char *d = host("/share/.hpcinit/glo/sum"), *f;
	uint64_t a = 0, b = 0, e = 0;
	static const char *const names[] = { "n1.rec", "n2.rec", ".hidden.rec", "x.tmp", ".rec" };

	TEST_INTEQ(rv_dir_names_sum(c, "sum", ".rec", &e), -ENOENT);
	mkdir(d, 0755);
	TEST_INTEQ(rv_dir_names_sum(c, "sum", ".rec", &e), 0);
	for (size_t i = 0; i < 5; i++) {
		f = xasprintf("%s/%s", d, names[i]);
		close(open(f, O_CREAT | O_WRONLY, 0644));
		free(f);
	}
	TEST_INTEQ(rv_dir_names_sum(c, "sum", ".rec", &a), 0);
	TEST_CHECK(a != e);
	f = xasprintf("%s/x.tmp", d);
	unlink(f);      /* not a record: the sum does not move */
	free(f);
	TEST_INTEQ(rv_dir_names_sum(c, "sum", ".rec", &b), 0);
	TEST_CHECK(a == b);
	f = xasprintf("%s/n2.rec", d);
	unlink(f);
	free(f);
	TEST_INTEQ(rv_dir_names_sum(c, "sum", ".rec", &b), 0);
	TEST_CHECK(a != b);
	free(d);
}

static void test_status(void)
{
	struct proc_result r = { 0 };

	r.exit_code = ETCD_EX_OK;
	TEST_INTEQ(rv_etcd_status(&r), 0);
	r.exit_code = ETCD_EX_DOWN;
	TEST_INTEQ(rv_etcd_status(&r), -EHOSTUNREACH);
	r.exit_code = ETCD_EX_REFUSED;
	TEST_INTEQ(rv_etcd_status(&r), -EPROTO);
	r.exit_code = ETCD_EX_USAGE;
	TEST_INTEQ(rv_etcd_status(&r), -EPROTO);
	r.timed_out = true;
	TEST_INTEQ(rv_etcd_status(&r), -ETIMEDOUT);
}

int main(void)
{
	struct spec spec = { 0 };
	struct outputs out = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY, .hostname = "node1", .out = &out };
	char *p;

	test_frames();
	test_frames_bounded();
	test_sync_answer();
	test_status();

	TEST_CHECK(mkdtemp(root) != NULL);
	c.root = root;
	spec.cluster.name = s_name;
	spec.discovery.present = true;
	spec.discovery.method = DISC_SHARED;
	spec.discovery.dir = s_dir;
	c.deadline_ms = now_ms() + 60000;
	p = host("/share");
	mkdir(p, 0755);
	free(p);

	test_dir(&c);
	test_dir_squash(&c, &spec);
	test_dir_mount(&c, &spec);
	test_stream();
	test_session(&c);
	test_names_sum(&c);
	{
		/* The shared directory has no stream to watch: its users list it again. */
		/* Nor a lease: the session's calls are etcd's. */
		struct rendezvous drv;
		struct rv_opts o = { .collection = "nodes", .self = "node1", .max_bytes = 4096, .create = true };
		struct rv_sync q = { .name = "node1", .value = "x" };
		struct rv_synced ans;
		char *fr = NULL;
		size_t frl = 0;
		unsigned left = 0;
		struct report rep;

		report_init(&rep);
		TEST_INTEQ(rv_open(&c, &rep, &o, &drv), 0);
		TEST_INTEQ(rv_sync(&drv, &rep, &q, &ans), -EOPNOTSUPP);
		TEST_INTEQ(rv_frames(&drv, &rep, NULL, &fr, &frl), -EOPNOTSUPP);
		TEST_INTEQ(rv_leave(&drv, &rep, "node1", &left), -EOPNOTSUPP);
		rv_close(&drv);
		report_free(&rep);

		struct proc_child ch;

		TEST_INTEQ(rv_watch(&c, "nodes", &ch), -EOPNOTSUPP);
	}

	test_rm_rf(root);
	TEST_EXIT();
}
