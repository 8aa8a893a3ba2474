/* SPDX-License-Identifier: MIT */
/*
 * lib/rendezvous/secret.c: the cluster secret, read from real files under a
 * temporary root: root's regular file, 0600, 16 to 4096 bytes; a link, a
 * group-readable file, another owner, a directory, a short or a long one
 * refused with what to do, and nothing handed back.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../lib/rendezvous/secret.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-secret.XXXXXX";

/* Load the secret at rel; the return value, the key (freed here) and its length through out. */
static int load(const char *rel, struct report *r, char *key_out, size_t key_n, size_t *len)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_CHECK };
	char *key = (char *)0x1;
	int ret;

	s.cluster.secret_file = xstrdup(rel);
	report_init(r);
	ret = rv_secret_load(&c, r, &key, len);
	free(s.cluster.secret_file);
	if (key && key_out)
		snprintf(key_out, key_n, "%.*s", (int)*len, key);
	if (key_out && !key)
		key_out[0] = '\0';
	free(key);
	return ret;
}

static void put_mode(const char *rel, const char *text, mode_t mode)
{
	char *p = fs_rooted(root, rel);

	test_put(root, rel, text);
	TEST_INTEQ(chmod(p, mode), 0);
	free(p);
}

static bool said(struct report *r, const char *what)
{
	bool yes = strstr(sb_str(&r->details), what) != NULL;

	if (!yes)
		fprintf(stderr, "details: %s\n", sb_str(&r->details));
	return yes;
}

int main(void)
{
	struct report r;
	char key[8192], big[5000], *p;
	size_t len = 99;
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root };
	char *k = (char *)0x1;

	if (!mkdtemp(root))
		return 1;

	/* no secret_file: nothing to load, no error, no key */
	report_init(&r);
	TEST_INTEQ(rv_secret_load(&c, &r, &k, &len), 0);
	TEST_CHECK(k == NULL);
	TEST_INTEQ(len, 0);
	report_free(&r);

	/* root's, 0600: the bytes without the trailing newline(s) */
	put_mode("/etc/hpcinit/secret", "0123456789abcdef0123\r\n\n", 0600);
	TEST_INTEQ(load("/etc/hpcinit/secret", &r, key, sizeof(key), &len), 0);
	TEST_STREQ(key, "0123456789abcdef0123");
	TEST_INTEQ(len, 20);
	report_free(&r);

	/* exactly 16 bytes is enough; 15 is not */
	put_mode("/etc/hpcinit/s16", "0123456789abcdef\n", 0400);
	TEST_INTEQ(load("/etc/hpcinit/s16", &r, key, sizeof(key), &len), 0);
	TEST_INTEQ(len, 16);
	report_free(&r);
	put_mode("/etc/hpcinit/s15", "0123456789abcde\n", 0600);
	TEST_INTEQ(load("/etc/hpcinit/s15", &r, key, sizeof(key), &len), -EINVAL);
	TEST_STREQ(key, "");
	TEST_INTEQ(len, 0);
	TEST_CHECK(said(&r, "needs 16 to 4096 bytes; generate the secret once, on your workstation "
			"(openssl rand -hex 32), and put the same value in every node's custom-data"));
	TEST_CHECK(!said(&r, "> /etc/hpcinit/s15"));   /* never: make one on this node */
	report_free(&r);

	/* 4096 bytes read whole; 4097 refused (not cut to a prefix) */
	memset(big, 'x', sizeof(big));
	big[4096] = '\0';
	put_mode("/etc/hpcinit/s4096", big, 0600);
	TEST_INTEQ(load("/etc/hpcinit/s4096", &r, NULL, 0, &len), 0);
	TEST_INTEQ(len, 4096);
	report_free(&r);
	big[4096] = 'x';
	big[4097] = '\0';
	put_mode("/etc/hpcinit/s4097", big, 0600);
	TEST_INTEQ(load("/etc/hpcinit/s4097", &r, NULL, 0, &len), -EINVAL);
	TEST_INTEQ(len, 0);
	report_free(&r);

	/* readable by the group or others: refused, the mode said */
	put_mode("/etc/hpcinit/s0640", "0123456789abcdef0123\n", 0640);
	TEST_INTEQ(load("/etc/hpcinit/s0640", &r, key, sizeof(key), &len), -EPERM);
	TEST_CHECK(said(&r, "must be a regular file not readable by group or others (mode 0640); chmod 600 it"));
	report_free(&r);
	put_mode("/etc/hpcinit/s0604", "0123456789abcdef0123\n", 0604);
	TEST_INTEQ(load("/etc/hpcinit/s0604", &r, key, sizeof(key), &len), -EPERM);
	report_free(&r);

	/* a symbolic link to a good secret: refused, not followed */
	p = fs_rooted(root, "/etc/hpcinit/link");
	TEST_INTEQ(symlink("secret", p), 0);
	free(p);
	TEST_INTEQ(load("/etc/hpcinit/link", &r, key, sizeof(key), &len), -ELOOP);
	TEST_CHECK(said(&r, "is a symbolic link; refused"));
	report_free(&r);

	/* a directory: not a regular file */
	p = fs_rooted(root, "/etc/hpcinit/dir");
	TEST_INTEQ(mkdir(p, 0700), 0);
	free(p);
	TEST_INTEQ(load("/etc/hpcinit/dir", &r, key, sizeof(key), &len), -EPERM);
	TEST_CHECK(said(&r, "must be a regular file"));
	report_free(&r);

	/* a FIFO: refused without blocking (opened O_NONBLOCK, then not a regular file) */
	p = fs_rooted(root, "/etc/hpcinit/fifo");
	TEST_INTEQ(mkfifo(p, 0600), 0);
	free(p);
	TEST_INTEQ(load("/etc/hpcinit/fifo", &r, key, sizeof(key), &len), -EPERM);
	report_free(&r);

	/* missing: says to write it on every node from the custom-data, generated once */
	TEST_INTEQ(load("/etc/hpcinit/none", &r, key, sizeof(key), &len), -ENOENT);
	TEST_CHECK(said(&r, "write it on every node from the custom-data (the same value everywhere, generated once"));
	report_free(&r);

	/* owned by another user (needs root to chown; the suite runs as root) */
	if (geteuid() == 0) {
		p = fs_rooted(root, "/etc/hpcinit/secret");
		TEST_INTEQ(chown(p, 1000, 0), 0);
		free(p);
		TEST_INTEQ(load("/etc/hpcinit/secret", &r, key, sizeof(key), &len), -EPERM);
		TEST_CHECK(said(&r, "owned by uid 1000, not root"));
		TEST_CHECK(said(&r, "chown root"));
		TEST_STREQ(key, "");
		report_free(&r);
	} else {
		printf("# not root: the other-owner case is not run\n");
	}

	test_rm_rf(root);
	TEST_EXIT();
}
