/* SPDX-License-Identifier: MIT */
/*
 * lib/rendezvous: the shared-directory backend on a fake root (levels,
 * owners, links, FIFOs, sizes, squash) and the etcd backend's frame reader
 * and exit-code mapping.  The etcd backend against a real etcd is in
 * tests/cluster/etcd-*.sh and ssh-ca-etcd.sh.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/rendezvous/rendezvous.c"
#include "../../lib/rendezvous/dir.c"
#include "../../lib/rendezvous/etcd.c"
#include "spec.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-rendezvous.XXXXXX";
static char s_name[] = "glo", s_dir[] = "/share/.hpcinit";
#define CERTS "/share/.hpcinit/glo/certs"

static char *host(const char *rel)
{
	return fs_rooted(root, rel);
}

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
	{
		/* The shared directory has no stream to watch: its users list it again. */
		struct proc_child ch;

		TEST_INTEQ(rv_watch(&c, "nodes", &ch), -EOPNOTSUPP);
	}

	test_rm_rf(root);
	TEST_EXIT();
}
