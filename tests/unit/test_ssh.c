/* SPDX-License-Identifier: MIT */
/*
 * The ssh step (modules/ssh/ssh.c, common.c): the ssh_config drop-in,
 * whole runs on a fake root (files, owners, modes, idempotence, refusals)
 * and many peers.  known_hosts is test_known_hosts.c, authorized_keys
 * test_authorized_keys.c, the key text test_sshkey.c.
 */
#include "testssh.h"

static void test_conf(struct spec *s)
{
	struct khosts hs = { 0 };
	struct khost *h;
	char *text;

	h = khosts_add(&hs, "hps-1", "", "local");
	strlist_push(&h->names, "hps-1");
	strlist_push(&h->names, "198.18.3.11");
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host 198.18.3.* hps-1 198.18.3.11\n"
			  "\tGlobalKnownHostsFile /etc/hpcinit/ssh_known_hosts /etc/ssh/ssh_known_hosts "
			  "/etc/ssh/ssh_known_hosts2\n\tStrictHostKeyChecking yes\n") != NULL);
	TEST_CHECK(strstr(text, "StrictHostKeyChecking no") == NULL);
	TEST_CHECK(strstr(text, "UserKnownHostsFile") == NULL);
	free(text);

	/* /20 cannot be one ssh pattern: hosts are listed, no network pattern. */
	set_network(s, "198.18.0.0", 20);
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host hps-1 198.18.3.11\n") != NULL);
	free(text);
	set_network(s, "10.0.0.0", 8);
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host 10.* hps-1") != NULL);
	free(text);
	set_network(s, "172.16.0.0", 16);
	text = conf_render(s, &hs);
	TEST_CHECK(strstr(text, "Host 172.16.* hps-1") != NULL);
	free(text);

	/* Many hosts: several stanzas, each line short, each with both settings. */
	for (int i = 2; i <= 300; i++) {
		char n[32];

		snprintf(n, sizeof(n), "node%03d", i);
		h = khosts_add(&hs, n, "", "record");
		strlist_push(&h->names, n);
	}
	text = conf_render(s, &hs);
	{
		size_t stanzas = count(text, "\nHost ");
		size_t longest = 0;

		for (const char *p = text; *p;) {
			size_t l = strcspn(p, "\n");

			if (l > longest)
				longest = l;
			p += l + (p[l] == '\n');
		}
		TEST_CHECK(stanzas > 1);
		TEST_INTEQ(count(text, "\tStrictHostKeyChecking yes\n"), stanzas);
		TEST_INTEQ(count(text, "\tGlobalKnownHostsFile "), stanzas);
		TEST_CHECK(longest <= HOST_LINE_MAX + 16);
		TEST_INTEQ(count(text, " node150"), 1);
	}
	free(text);
	khosts_free(&hs);
	set_network(s, "198.18.3.0", 24);
}

/* Whole runs on a fake root: files, owners, modes, idempotence, refusals. */
static void test_run(struct spec *s, const char *khost2, const char *kuser2)
{
	struct outputs out = { 0 };
	struct ctx c = { .spec = s, .root = root, .mode = RUN_APPLY, .hostname = "hps-1", .out = &out };
	struct peerset ps = { 0 };
	struct report r;
	struct stat st;
	char *text, *line;
	int ret;

	put("/etc/passwd", "root:x:0:0:root:/root:/bin/bash\n"
	    "alice:x:4242:4343::/home/alice:/bin/bash\n"
	    "ghost:x:4244:4244::/home/ghost:/bin/bash\n", 0644);
	{
		char *home = fs_rooted(root, "/home/alice");
		char *parent = fs_rooted(root, "/home");

		mkdir(parent, 0755);
		free(parent);
		mkdir(home, 0755);
		TEST_INTEQ(chown(home, 4242, 4343), 0);
		free(home);
	}
	ps.v = xcalloc(2, sizeof(*ps.v));
	ps.n = 2;
	peer_init(&ps.v[0], "hps-1", "198.18.3.11", "b1", NULL);
	ps.v[0].self = true;
	peer_init(&ps.v[1], "hps-2", "198.18.3.12", "b2", khost2);
	peer_user_key(&ps.v[1], "alice", kuser2);
	out.peers = &ps;

	/* plan: nothing is written, the would-be changes are listed. */
	c.mode = RUN_PLAN;
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(!fs_exists(&c, "/etc/hpcinit/ssh_known_hosts"));
	TEST_CHECK(!fs_exists(&c, "/home/alice/.ssh"));
	report_free(&r);

	c.mode = RUN_APPLY;
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	if (r.status != ST_CHANGED)
		fprintf(stderr, "%s\n%s", r.summary, sb_str(&r.details));
	TEST_CHECK(strstr(r.summary, "2 nodes, 2 host keys pinned, 1 users with 2 authorized keys") != NULL);
	report_free(&r);

	st = st_of("/home/alice/.ssh");
	TEST_INTEQ(st.st_mode & 07777, 0700);
	TEST_INTEQ(st.st_uid, 4242);
	TEST_INTEQ(st.st_gid, 4343);
	st = st_of("/home/alice/.ssh/authorized_keys");
	TEST_INTEQ(st.st_mode & 07777, 0600);
	TEST_INTEQ(st.st_uid, 4242);
	st = st_of("/home/alice/.ssh/id_ed25519");
	TEST_INTEQ(st.st_mode & 07777, 0600);
	TEST_INTEQ(st.st_uid, 4242);
	st = st_of("/etc/hpcinit/ssh_known_hosts");
	TEST_INTEQ(st.st_mode & 07777, 0644);
	TEST_INTEQ(st.st_uid, 0);
	text = get("/home/alice/.ssh/authorized_keys");
	line = xasprintf("from=\"198.18.3.0/24\" %s alice@hps-2\n", kuser2);
	TEST_CHECK(text && strstr(text, "# BEGIN hpcinit glo\n") == text);
	TEST_CHECK(text && strstr(text, line) != NULL);
	TEST_INTEQ(count(text, "from="), 2);
	free(line);
	free(text);
	text = get("/etc/ssh/ssh_config.d/90-hpcinit.conf");
	TEST_CHECK(text && strstr(text, "Host 198.18.3.* hps-1 198.18.3.11 hps-2 198.18.3.12\n") != NULL);
	free(text);

	/* Re-run: nothing changes, no file is rewritten, and no helper is needed. */
	{
		struct stat before = st_of("/etc/hpcinit/ssh_known_hosts");
		struct stat ak_before = st_of("/home/alice/.ssh/authorized_keys");
		char *dir = getenv("HPCINIT_LIBEXEC_DIR") ? xstrdup(getenv("HPCINIT_LIBEXEC_DIR")) : NULL;

		setenv("HPCINIT_LIBEXEC_DIR", "/nonexistent", 1);
		report_init(&r);
		ret = ssh_run(&c, &r);
		if (dir)
			setenv("HPCINIT_LIBEXEC_DIR", dir, 1);
		else
			unsetenv("HPCINIT_LIBEXEC_DIR");
		free(dir);
		TEST_INTEQ(ret, 0);
		TEST_INTEQ(r.status, ST_OK);
		TEST_INTEQ(r.changed.n, 0);
		report_free(&r);
		st = st_of("/etc/hpcinit/ssh_known_hosts");
		TEST_INTEQ(st.st_ino, before.st_ino);
		st = st_of("/home/alice/.ssh/authorized_keys");
		TEST_INTEQ(st.st_ino, ak_before.st_ino);
	}

	/* Lines outside the block survive; a departed peer's key goes. */
	text = get("/home/alice/.ssh/authorized_keys");
	line = xasprintf("ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOwnkeyofalice alice@laptop\n%s", text);
	put("/home/alice/.ssh/authorized_keys", line, 0600);
	free(line);
	free(text);
	{
		char *p = fs_rooted(root, "/home/alice/.ssh/authorized_keys");

		TEST_INTEQ(chown(p, 4242, 4343), 0);
		free(p);
	}
	ps.n = 1;               /* hps-2 left */
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_CHECK(strstr(sb_str(&r.details), "hps-2: no longer a peer") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "authorized_keys: removed ssh-ed25519 SHA256:") != NULL);
	report_free(&r);
	text = get("/home/alice/.ssh/authorized_keys");
	TEST_CHECK(text && strstr(text, "alice@laptop") != NULL);
	TEST_CHECK(text && strstr(text, "alice@hps-2") == NULL);
	free(text);
	text = get("/etc/hpcinit/ssh_known_hosts");
	TEST_CHECK(text && strstr(text, "hps-2") == NULL);
	free(text);

	/* check reports what is missing, and changes nothing. */
	ps.n = 2;
	c.mode = RUN_CHECK;
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_INTEQ(ret, 0);
	TEST_INTEQ(r.status, ST_CHANGED);
	TEST_CHECK(strstr(sb_str(&r.details), "/etc/hpcinit/ssh_known_hosts: hps-2: missing key (want ssh-ed25519 SHA256:") != NULL);
	TEST_CHECK(strstr(sb_str(&r.details), "authorized_keys: missing ssh-ed25519 SHA256:") != NULL);
	report_free(&r);
	text = get("/etc/hpcinit/ssh_known_hosts");
	TEST_CHECK(text && strstr(text, "hps-2") == NULL);
	free(text);
	c.mode = RUN_APPLY;
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	report_free(&r);
	/* A hand-added key in known_hosts is extra. */
	text = get("/etc/hpcinit/ssh_known_hosts");
	line = xasprintf("%shps-2 ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQCextra\n", text);
	put("/etc/hpcinit/ssh_known_hosts", line, 0644);
	free(line);
	free(text);
	c.mode = RUN_CHECK;
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_CHECK(strstr(sb_str(&r.details), "hps-2: extra key ssh-rsa") != NULL);
	report_free(&r);
	c.mode = RUN_APPLY;
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	report_free(&r);

	/* A group-writable authorized_keys is refused, not fixed. */
	{
		char *p = fs_rooted(root, "/home/alice/.ssh/authorized_keys");

		chmod(p, 0660);
		report_init(&r);
		ret = ssh_run(&c, &r);
		TEST_CHECK(ret < 0);
		TEST_INTEQ(r.status, ST_FAILED);
		TEST_CHECK(strstr(sb_str(&r.details), "writable by group or others (mode 0660)") != NULL);
		report_free(&r);
		TEST_INTEQ(stat(p, &st), 0);
		TEST_INTEQ(st.st_mode & 07777, 0660);
		chmod(p, 0600);
		free(p);
	}

	/* A symlinked ~/.ssh is refused and nothing is written through it. */
	{
		char *sshd = fs_rooted(root, "/home/alice/.ssh");
		char *moved = fs_rooted(root, "/home/alice/.ssh-real");
		char *target = fs_rooted(root, "/etc/elsewhere");

		TEST_INTEQ(rename(sshd, moved), 0);
		mkdir(target, 0755);
		TEST_INTEQ(symlink(target, sshd), 0);
		report_init(&r);
		ret = ssh_run(&c, &r);
		TEST_CHECK(ret < 0);
		TEST_CHECK(strstr(sb_str(&r.details), "/home/alice/.ssh: is a symbolic link; refusing to follow it") != NULL);
		report_free(&r);
		TEST_CHECK(!fs_exists(&c, "/etc/elsewhere/authorized_keys"));
		TEST_CHECK(!fs_exists(&c, "/etc/elsewhere/id_ed25519"));
		TEST_INTEQ(lstat(target, &st), 0);
		TEST_INTEQ(st.st_uid, 0);       /* not chowned to the user */
		unlink(sshd);
		TEST_INTEQ(rename(moved, sshd), 0);
		rmdir(target);
		free(sshd);
		free(moved);
		free(target);
	}

	/* A user in ssh.users without a home: failed with the reason, others still done. */
	strlist_push(&s->ssh.users, "ghost");
	report_init(&r);
	ret = ssh_run(&c, &r);
	TEST_CHECK(ret < 0);
	TEST_INTEQ(r.status, ST_FAILED);
	TEST_CHECK(strstr(sb_str(&r.details), "home directory /home/ghost does not exist") != NULL);
	TEST_CHECK(strstr(r.summary, "1 of 2 users set up") != NULL);
	TEST_CHECK(!fs_exists(&c, "/home/ghost"));
	report_free(&r);
	free(s->ssh.users.v[--s->ssh.users.n]);
	s->ssh.users.v[s->ssh.users.n] = NULL;

	/* The drop-in is useless when ssh_config does not include ssh_config.d. */
	put("/etc/ssh/ssh_config", "Host *\n    SendEnv LANG\n", 0644);
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_INTEQ(r.status, ST_DEGRADED);
	TEST_CHECK(strstr(sb_str(&r.details), "does not include /etc/ssh/ssh_config.d/*.conf") != NULL);
	TEST_CHECK(has_finding(&r, "ssh.config.no-include"));
	report_free(&r);
	put("/etc/ssh/ssh_config", "StrictHostKeyChecking ask\nInclude /etc/ssh/ssh_config.d/*.conf\n", 0644);
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_INTEQ(r.status, ST_DEGRADED);
	TEST_CHECK(strstr(sb_str(&r.details), "move the Include up") != NULL);
	TEST_CHECK(has_finding(&r, "ssh.config.include-too-late"));
	report_free(&r);
	put("/etc/ssh/ssh_config", "Include /etc/ssh/ssh_config.d/*.conf\nHost *\n", 0644);
	report_init(&r);
	TEST_INTEQ(ssh_run(&c, &r), 0);
	TEST_INTEQ(r.status, ST_OK);
	report_free(&r);

	/* A live peer's changed host key fails the run and stays out. */
	strlist_free(&ps.v[1].host_keys);
	{
		char *k = new_key();

		strlist_push(&ps.v[1].host_keys, k);
		report_init(&r);
		ret = ssh_run(&c, &r);
		TEST_INTEQ(r.status, ST_FAILED);
		TEST_CHECK(strstr(r.summary, "host key changed while the node stayed up: hps-2") != NULL);
		report_free(&r);
		text = get("/etc/hpcinit/ssh_known_hosts");
		TEST_CHECK(text && strstr(text, k) == NULL);
		TEST_CHECK(text && strstr(text, khost2) != NULL);
		free(text);
		free(k);
	}
	peers_free(&ps);
}

/* Many peers: every host and every key once, the map grows; O(N) keeps this quick. */
static void test_many(struct spec *s, size_t n)
{
	struct ctx c = { .spec = s, .root = root, .mode = RUN_CHECK, .hostname = "n0" };
	struct peerset ps = { 0 };
	struct khosts old = { 0 }, want = { 0 };
	struct ssh_tally t = { 0 };
	struct report r;
	char *text;
	uint64_t t0 = now_ms();

	ps.v = xcalloc(n, sizeof(*ps.v));
	ps.n = n;
	for (size_t i = 0; i < n; i++) {
		char host[32], addr[32], key[96];

		snprintf(host, sizeof(host), "n%zu", i);
		snprintf(addr, sizeof(addr), "10.%zu.%zu.%zu", (i >> 16) & 255, (i >> 8) & 255, i & 255);
		snprintf(key, sizeof(key), "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI%08zuxx", i);
		peer_init(&ps.v[i], host, addr, "b", key);
		peer_user_key(&ps.v[i], "alice", key);
	}
	ps.v[0].self = true;
	/* two peers claim one address */
	free(ps.v[n - 1].addr);
	ps.v[n - 1].addr = xstrdup(ps.v[n - 2].addr);
	report_init(&r);
	want_hosts(&c, &r, &ps, &old, &want, &t);
	TEST_INTEQ(want.n, n);
	TEST_INTEQ(count(sb_str(&r.details), "is claimed by both"), 1);
	text = kh_render(s, &want);
	TEST_INTEQ(count(text, "\n# host "), n);
	kh_parse(text, &old);
	TEST_INTEQ(old.n, n);
	free(text);
	text = conf_render(s, &want);
	TEST_INTEQ(count(text, " n1234 "), 1);
	free(text);
	kh_compare(&r, &old, &want);
	TEST_INTEQ(count(sb_str(&r.details), "missing key"), 0);
	TEST_INTEQ(count(sb_str(&r.details), "extra key"), 0);
	text = ak_render(s, &ps, "alice", NULL, "n0", &r);
	TEST_INTEQ(count(text, "alice@n"), n - 1);
	report_free(&r);
	/* Details stay short: DETAIL_MAX lines of a kind, then a count. */
	report_init(&r);
	ak_report_diff(&c, &r, "/x", NULL, text);
	TEST_INTEQ(count(sb_str(&r.details), "/x: missing "), DETAIL_MAX + 1);
	{
		char *more = xasprintf("/x: missing %zu more keys\n", n - 1 - DETAIL_MAX);

		TEST_CHECK(strstr(sb_str(&r.details), more) != NULL);
		free(more);
	}
	report_free(&r);
	report_init(&r);
	{
		struct khosts none = { 0 };
		struct peerset pruned = { 0 };

		kh_compare(&r, &none, &want);
		TEST_INTEQ(count(sb_str(&r.details), "missing key"), DETAIL_MAX);
		TEST_CHECK(strstr(sb_str(&r.details), "more names lack a key\n") != NULL);
		khosts_free(&want);
		memset(&t, 0, sizeof(t));
		report_free(&r);
		report_init(&r);
		want_hosts(&c, &r, &pruned, &old, &want, &t);   /* everyone left */
		TEST_INTEQ(count(sb_str(&r.details), ": no longer a peer"), DETAIL_MAX);
		{
			char *more = xasprintf("%zu more nodes are no longer peers", n - 1 - DETAIL_MAX);

			TEST_CHECK(strstr(sb_str(&r.details), more) != NULL);
			free(more);
		}
	}
	free(text);
	fprintf(stderr, "%zu peers: %llu ms\n", n, (unsigned long long)(now_ms() - t0));
	khosts_free(&old);
	khosts_free(&want);
	report_free(&r);
	peers_free(&ps);
}

int main(void)
{
	struct spec s;
	char *k3, *k4, *khost_self;

	ssh_test_setup(&s);
	k3 = new_key();
	k4 = new_key();
	khost_self = ssh_test_host_key();
	test_conf(&s);
	test_run(&s, k3, k4);
	test_many(&s, 3000);
	if (getenv("TEST_SSH_MANY"))
		test_many(&s, (size_t)strtoul(getenv("TEST_SSH_MANY"), NULL, 10));
	free(k3);
	free(k4);
	free(khost_self);
	ssh_test_teardown(&s);
	TEST_EXIT();
}
