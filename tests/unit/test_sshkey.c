/* SPDX-License-Identifier: MIT */
/*
 * common/base/sshkey.c: SSH key text against the real tools (keys made by
 * the hpcinit-ssh helper and ssh-keygen, fingerprints as ssh-keygen -l
 * prints them), canonical key lines, this node's host keys from a fake
 * root's /etc/ssh, the StrictModes checks of a user's files, acting as a
 * user (fsuid and groups), and the real host-key fetcher.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../common/base/sshkey.c"
#include "proc.h"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-sshkey.XXXXXX";

/* What ssh-keygen -l says of a public key line ("256 SHA256:... comment (ED25519)"). */
static char *keygen_fingerprint(const char *pub)
{
	char *path = fs_rooted(root, "/fp.pub"), *ret = NULL;
	const char *argv[] = { "ssh-keygen", "-l", "-f", path, NULL };
	struct proc_result res;
	FILE *f = fopen(path, "w");

	fprintf(f, "%s x\n", pub);
	fclose(f);
	if (proc_run(argv, NULL, NULL, 10000, &res) == 0 && res.exit_code == 0) {
		char *sp = strchr(res.out, ' ');

		if (sp)
			ret = xstrndup(sp + 1, strcspn(sp + 1, " "));
	}
	proc_result_free(&res);
	unlink(path);
	free(path);
	return ret;
}

/*
 * The agent's own key parsing against the real tools: fingerprints as
 * ssh-keygen prints them, the public half read from a private key (OpenSSH
 * format in the agent, PEM through the helper), refusals.
 */
static void test_keys(void)
{
	static const enum key_type types[] = { KEY_ED25519, KEY_ECDSA, KEY_RSA };

	for (size_t i = 0; i < 3; i++) {
		char *pub = NULL, *priv = NULL, *again = NULL, *fp, *want;

		TEST_INTEQ(sshkey_generate(types[i], &pub, &priv, NULL, 0), 0);
		if (!pub || !priv)
			continue;
		TEST_CHECK(strstr(priv, "PRIVATE KEY-----") != NULL);
		TEST_INTEQ(sshkey_public_of_private(priv, strlen(priv), &again), 0);
		TEST_STREQ(again, pub);
		fp = sshkey_fingerprint(pub);
		want = keygen_fingerprint(pub);
		TEST_CHECK(want != NULL);
		if (want) {
			char *line = xasprintf("%.*s %s", (int)strcspn(pub, " "), pub, want);

			TEST_STREQ(fp, line);
			free(line);
		}
		free(want);
		free(fp);
		free(again);
		free(pub);
		free(priv);
	}
	/* An encrypted OpenSSH key (ssh-keygen -N): refused, not guessed at; unencrypted: read. */
	for (int pass = 0; pass < 2; pass++) {
		char *path = fs_rooted(root, "/enc_key"), *pubpath = xasprintf("%s.pub", path);
		const char *argv[] = { "ssh-keygen", "-q", "-t", "ed25519", "-N", pass ? "" : "secret-pass",
				       "-f", path, NULL };
		struct proc_result res;
		char *text = NULL, *want = NULL, *pub = NULL;
		size_t len = 0;

		unlink(path);
		unlink(pubpath);
		TEST_INTEQ(proc_run(argv, NULL, NULL, 20000, &res), 0);
		TEST_INTEQ(res.exit_code, 0);
		proc_result_free(&res);
		TEST_INTEQ(fs_read_host(path, 100000, &text, &len), 0);
		TEST_INTEQ(fs_read_host(pubpath, 100000, &want, NULL), 0);
		if (text && want) {
			char *canon = sshkey_canonical(want);

			TEST_INTEQ(sshkey_public_of_private(text, len, &pub), pass ? 0 : -EINVAL);
			if (pass)
				TEST_STREQ(pub, canon);
			else
				TEST_CHECK(pub == NULL);
			free(canon);
		}
		free(pub);
		free(text);
		free(want);
		unlink(path);
		unlink(pubpath);
		free(pubpath);
		free(path);
	}
	/* Not a key at all. */
	{
		char *pub = NULL;

		TEST_INTEQ(sshkey_public_of_private("garbage\n", 8, &pub), -EINVAL);
		TEST_CHECK(pub == NULL);
	}
	/* The real fetcher: nothing listens on port 1, the host is reported as refused. */
	{
		const char *hosts[] = { "127.0.0.1" };
		struct strlist keys[1] = { { 0 } };
		int errs[1] = { 0 };
		char why[256] = "";

		TEST_INTEQ(sshkey_fetch_host_keys(hosts, 1, 1, 1000, false, 20000, keys, errs, why,
						  sizeof(why)), 0);
		TEST_INTEQ(errs[0], -ECONNREFUSED);
		TEST_INTEQ(keys[0].n, 0);
		strlist_free(&keys[0]);
	}
	{
		char *fp = sshkey_fingerprint("ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCextra");

		TEST_STREQ(fp, "ssh-rsa (unparsable)");
		free(fp);
	}
}

#define ED_B64 "AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl"

/* sshkey_canonical as first written (before its one-pass form), for the comparison below. */
static char *canonical_ref(const char *line)
{
	const char *p = line, *t, *b;
	size_t tl, bl;

	while (*p == ' ' || *p == '\t')
		p++;
	t = p;
	while (*p && *p != ' ' && *p != '\t' && *p != '\n')
		p++;
	tl = (size_t)(p - t);
	while (*p == ' ' || *p == '\t')
		p++;
	b = p;
	while (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
		p++;
	bl = (size_t)(p - b);
	if (tl < 7 || bl < 16 || !(strncmp(t, "ssh-", 4) == 0 || strncmp(t, "ecdsa-", 6) == 0 ||
				   strncmp(t, "sk-", 3) == 0))
		return NULL;
	for (const char *q = b; q < b + bl; q++)
		if (!((*q >= 'A' && *q <= 'Z') || (*q >= 'a' && *q <= 'z') ||
		      (*q >= '0' && *q <= '9') || *q == '+' || *q == '/' || *q == '='))
			return NULL;
	for (const char *q = t; q < t + tl; q++)
		if (!((*q >= 'a' && *q <= 'z') || (*q >= '0' && *q <= '9') || *q == '-' ||
		      *q == '@' || *q == '.'))
			return NULL;
	return xasprintf("%.*s %.*s", (int)tl, t, (int)bl, b);
}

/* Key lines as authorized_keys and .pub files hold them: type and base64 kept, the rest dropped. */
static void test_canonical(void)
{
	static const struct {
		const char *line, *want;
	} cases[] = {
		{ "ssh-ed25519 " ED_B64 " root@hps-1\n", "ssh-ed25519 " ED_B64 },
		{ " \tssh-ed25519\t" ED_B64 "\r\n", "ssh-ed25519 " ED_B64 },
		{ "ecdsa-sha2-nistp256 " ED_B64, "ecdsa-sha2-nistp256 " ED_B64 },
		{ "sk-ssh-ed25519@openssh.com " ED_B64 " yubi", "sk-ssh-ed25519@openssh.com " ED_B64 },
		{ "ssh-ed25519-cert-v01@openssh.com " ED_B64, "ssh-ed25519-cert-v01@openssh.com " ED_B64 },
		{ "ssh-ed25519 AAAAC3NzaC1lZDI", NULL },                 /* base64 too short (15) */
		{ "ssh-ed25519 AAAAC3NzaC1lZDI1", "ssh-ed25519 AAAAC3NzaC1lZDI1" },   /* 16: long enough */
		{ "ssh-ed25519 " ED_B64 "$", NULL },                     /* not base64 */
		{ "SSH-ED25519 " ED_B64, NULL },                         /* types are lower case */
		{ "rsa " ED_B64, NULL },                                 /* not an SSH key type */
		{ "ssh-ed;25519 " ED_B64, NULL },
		{ "from=\"10.0.0.0/8\" ssh-ed25519 " ED_B64, NULL },    /* options are not a key */
		{ "ssh-ed25519", NULL },
		{ "", NULL },
		{ "# ssh-ed25519 " ED_B64, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char *got = sshkey_canonical(cases[i].line);

		if (cases[i].want)
			TEST_STREQ(got, cases[i].want);
		else if (got) {
			fprintf(stderr, "case %zu: \"%s\" taken as \"%s\"\n", i, cases[i].line, got);
			TEST_CHECK(got == NULL);
		} else {
			TEST_CHECK(got == NULL);
		}
		free(got);
	}
	/* Against the first version (one scan for the words, one for their characters), on random lines. */
	{
		static const char alpha[] = "ssh-ed25519 AZaz09+/=@.-_;$\t\r\n \x80#";
		unsigned seed = 12345;
		size_t taken = 0;

		for (int n = 0; n < 200000; n++) {
			char line[48];
			size_t len = 0, want_len;
			char *got, *want;

			seed = seed * 1103515245u + 12345u;
			want_len = (seed >> 16) % (sizeof(line) - 1);
			if (n % 3 == 0)         /* often a plausible start */
				len = (size_t)snprintf(line, sizeof(line), "%s", n % 2 ? "ssh-ed25519 " : " sk-a@b.c\t");
			while (len < want_len) {
				seed = seed * 1103515245u + 12345u;
				/* mostly base64, now and then anything of alpha */
				if ((seed >> 8) % 16)
					line[len++] = "AZaz09+/="[(seed >> 16) % 9];
				else
					line[len++] = alpha[(seed >> 16) % (sizeof(alpha) - 1)];
			}
			line[len] = '\0';
			got = sshkey_canonical(line);
			want = canonical_ref(line);
			if ((got == NULL) != (want == NULL) || (got && strcmp(got, want) != 0)) {
				fprintf(stderr, "\"%s\": \"%s\", first version \"%s\"\n", line, got ? got : "(null)",
					want ? want : "(null)");
				TEST_CHECK(false);
				n = 200000;
			}
			taken += got != NULL;
			free(got);
			free(want);
		}
		TEST_CHECK(taken > 1000);       /* keys taken, not only refused */
	}
	TEST_CHECK(sshkey_is_cert("ssh-ed25519-cert-v01@openssh.com " ED_B64));
	TEST_CHECK(sshkey_is_cert("ecdsa-sha2-nistp256-cert-v01@openssh.com AAAA"));
	TEST_CHECK(!sshkey_is_cert("ssh-ed25519 " ED_B64));
	TEST_CHECK(!sshkey_is_cert("-cert-v01@openssh.com AAAA"));    /* the suffix alone is no type */
	TEST_CHECK(!sshkey_is_cert("ssh-ed25519 x-cert-v01@openssh.com"));
}

/* This node's host keys: the .pub files under <root>/etc/ssh, sorted, certificates and junk left out. */
static void test_host_pubkeys(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root };
	struct strlist keys = { 0 };

	test_put(root, "/etc/ssh/ssh_host_rsa_key.pub", "ssh-rsa " ED_B64 " root@x\n");
	test_put(root, "/etc/ssh/ssh_host_ed25519_key.pub", "ssh-ed25519 " ED_B64 " root@x\n");
	test_put(root, "/etc/ssh/ssh_host_ecdsa_key.pub", "ssh-ed25519-cert-v01@openssh.com " ED_B64 "\n");
	test_put(root, "/etc/ssh/ssh_host_dsa_key.pub", "not a key\n");
	test_put(root, "/etc/ssh/ssh_host_ed25519_key", "-----BEGIN OPENSSH PRIVATE KEY-----\n");
	test_put(root, "/etc/ssh/ssh_known_hosts.pub", "ssh-ed25519 " ED_B64 "\n");
	TEST_INTEQ(sshkey_host_pubkeys(&c, &keys), 0);
	TEST_INTEQ(keys.n, 2);
	if (keys.n == 2) {
		TEST_STREQ(keys.v[0], "ssh-ed25519 " ED_B64);
		TEST_STREQ(keys.v[1], "ssh-rsa " ED_B64);
	}
	strlist_free(&keys);
	/* no /etc/ssh at all: the error, nothing listed */
	c.root = "/nonexistent-hpcinit-root";
	TEST_INTEQ(sshkey_host_pubkeys(&c, &keys), -ENOENT);
	TEST_INTEQ(keys.n, 0);
}

/* A user's files as sshd's StrictModes judges them: each refusal with its reason. */
static void test_check_path(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root };
	struct report r;
	char *p;

	test_put(root, "/home/u/.ssh/authorized_keys", "x\n");
	report_init(&r);
	/* absent: fine (nothing to refuse yet) */
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh/none", false, 0), 0);
	/* a regular file of its user, 0644: fine */
	p = fs_rooted(root, "/home/u/.ssh/authorized_keys");
	chmod(p, 0644);
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh/authorized_keys", false, geteuid()), 0);
	TEST_INTEQ(r.details.len, 0);
	/* a directory where a file is wanted, and the other way round */
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh", false, geteuid()), -EEXIST);
	TEST_CHECK(strstr(sb_str(&r.details), "/home/u/.ssh: is not a file; move it away") != NULL);
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh/authorized_keys", true, geteuid()), -EEXIST);
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh", true, geteuid()), 0);
	/* another owner */
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh/authorized_keys", false, geteuid() + 1), -EPERM);
	TEST_CHECK(strstr(sb_str(&r.details), "not by its user") != NULL);
	/* group-writable */
	chmod(p, 0664);
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh/authorized_keys", false, geteuid()), -EPERM);
	TEST_CHECK(strstr(sb_str(&r.details), "writable by group or others (mode 0664)") != NULL);
	free(p);
	/* a symbolic link, even to a good file: not followed */
	p = fs_rooted(root, "/home/u/.ssh/link");
	TEST_INTEQ(symlink("authorized_keys", p), 0);
	free(p);
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh/link", false, geteuid()), -ELOOP);
	TEST_CHECK(strstr(sb_str(&r.details), "is a symbolic link; refusing to follow it") != NULL);
	/* a path through a file: the error named */
	TEST_INTEQ(sshkey_check_path(&c, &r, "/home/u/.ssh/authorized_keys/x", false, geteuid()), -ENOTDIR);
	report_free(&r);
}

/* Acting as a user: files made then are the user's, root's groups are gone until restored. */
static void test_fsid(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root };
	int n_before = getgroups(0, NULL), fd;
	gid_t groups[64];
	struct stat st;
	bool sw;
	char *home, *file;

	if (geteuid() != 0) {
		printf("# not root: acting as a user is not run\n");
		return;
	}
	home = fs_rooted(root, "/home/v");
	file = fs_rooted(root, "/home/v/made");
	TEST_INTEQ(mkdir(home, 0755), 0);
	/* a home the user does not own: no switch */
	TEST_CHECK(!sshkey_fsid_user(&c, "/home/v", 1234, 1234));
	/* root itself: never a switch */
	TEST_CHECK(!sshkey_fsid_user(&c, "/home/v", 0, 0));
	TEST_INTEQ(chown(home, 1234, 1234), 0);
	sw = sshkey_fsid_user(&c, "/home/v", 1234, 1234);
	TEST_CHECK(sw);
	TEST_INTEQ(getgroups(64, groups), 1);
	TEST_INTEQ(groups[0], 1234);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	TEST_CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	sshkey_fsid_restore(sw);
	TEST_INTEQ(lstat(file, &st), 0);
	TEST_INTEQ(st.st_uid, 1234);
	TEST_INTEQ(st.st_gid, 1234);
	TEST_INTEQ(getgroups(0, NULL), n_before);
	/* root again: what it makes is root's */
	unlink(file);
	fd = open(file, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	TEST_CHECK(fd >= 0);
	if (fd >= 0)
		close(fd);
	TEST_INTEQ(lstat(file, &st), 0);
	TEST_INTEQ(st.st_uid, 0);
	sshkey_fsid_restore(false);     /* nothing switched: nothing to do */
	TEST_INTEQ(setfsuid((uid_t)-1), 0);
	free(home);
	free(file);
}

int main(void)
{
	if (!mkdtemp(root) || chmod(root, 0755) < 0)       /* the user's fsuid walks it */
		return 1;
	test_keys();
	test_canonical();
	test_host_pubkeys();
	test_check_path();
	test_fsid();
	test_rm_rf(root);
	TEST_EXIT();
}
