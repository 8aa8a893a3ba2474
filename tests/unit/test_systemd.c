/* SPDX-License-Identifier: MIT */
/*
 * common/base/systemd.c: --root starts no service (services_live), systemctl
 * and sshd's unit, on a temporary root whose systemctl is a shell script
 * standing in for systemd, named in HPCINIT_SYSTEMCTL (it logs its argv and
 * fails for the units it is told to).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../common/base/systemd.c"
#include "test.h"
#include "testfs.h"

static char root[] = "/tmp/hpcinit-test-systemd.XXXXXX";

/* A stand-in systemctl at rel: logs "$@" to <root>/calls, fails for a unit named in <root>/fail. */
static void put_systemctl(const char *rel, mode_t mode)
{
	char text[1024], *p = fs_rooted(root, rel);

	snprintf(text, sizeof(text),
		 "#!/bin/sh\n"
		 "echo \"$*\" >> '%s/calls'\n"
		 "if [ -f '%s/fail' ] && grep -qx \"$2\" '%s/fail'; then echo no >&2; exit 1; fi\n"
		 "echo \"did $1 ${2:-}\"\n", root, root, root);
	test_put(root, rel, text);
	TEST_INTEQ(chmod(p, mode), 0);
	free(p);
}

static void rm_rel(const char *rel)
{
	char *p = fs_rooted(root, rel);

	unlink(p);
	free(p);
}

/* What the stand-in was called with since the last call (and forget it). */
static char *calls(void)
{
	char *t = test_get(root, "/calls");

	rm_rel("/calls");
	return t ? t : xstrdup("");
}

/* daemon_pid: the pid file's process when it lives with that name, else by name in /proc. */
static void test_daemon_pid(void)
{
	struct ctx c = { .root = root, .mode = RUN_CHECK };
	struct ctx host = { .root = "/", .mode = RUN_CHECK };
	char how[64] = "", self[24], *pf;

	TEST_INTEQ(daemon_pid(&c, "/run/x.pid", "xd", DAEMON_SCAN, how, sizeof(how)), 0);
	test_put(root, "/run/x.pid", "812\n");
	test_put(root, "/proc/812/comm", "xd\n");
	TEST_INTEQ(daemon_pid(&c, "/run/x.pid", "xd", 0, how, sizeof(how)), 812);
	TEST_STREQ(how, "/run/x.pid");
	test_put(root, "/proc/812/comm", "xdd\n");               /* the pid went to another program */
	TEST_INTEQ(daemon_pid(&c, "/run/x.pid", "xd", 0, how, sizeof(how)), 0);
	test_put(root, "/proc/9000/comm", "xd\n");
	test_put(root, "/proc/700/comm", "xd\n");
	test_put(root, "/proc/self/comm", "xd\n");                /* not a pid */
	TEST_INTEQ(daemon_pid(&c, "/run/x.pid", "xd", DAEMON_SCAN, how, sizeof(how)), 700);
	TEST_STREQ(how, "a process named xd");
	/* DAEMON_TOP: only a child of pid 1 (the daemon, not its per-connection children); a zombie is none */
	test_put(root, "/proc/700/stat", "700 (xd) S 650 700 700 0 -1 4194560\n");
	test_put(root, "/proc/9000/stat", "9000 (x d)) S 1 9000 9000 0 -1 4194560\n");
	TEST_INTEQ(daemon_pid(&c, NULL, "xd", DAEMON_SCAN | DAEMON_TOP, how, sizeof(how)), 9000);
	test_put(root, "/proc/9000/stat", "9000 (xd) Z 1 9000 9000 0 -1 4194560\n");
	TEST_INTEQ(daemon_pid(&c, NULL, "xd", DAEMON_SCAN | DAEMON_TOP, how, sizeof(how)), 0);
	test_put(root, "/proc/700/stat", "700 (xd) R 1 700 700 0 -1 4194560\n");
	TEST_INTEQ(daemon_pid(&c, NULL, "xd", DAEMON_SCAN | DAEMON_TOP, how, sizeof(how)), 700);
	/* the pid file's first number is the pid (words after it are not read) */
	test_put(root, "/run/x.pid", "812 junk\n");
	test_put(root, "/proc/812/comm", "xd\n");
	TEST_INTEQ(daemon_pid(&c, "/run/x.pid", "xd", 0, NULL, 0), 812);
	test_put(root, "/run/x.pid", "-3\n");
	TEST_INTEQ(daemon_pid(&c, "/run/x.pid", "xd", 0, NULL, 0), 0);
	/* the real root: this very process, found by its name in this mount namespace */
	snprintf(self, sizeof(self), "%ld", (long)getpid());
	test_put(root, "/run/self.pid", self);
	{
		char *comm = NULL;

		pf = fs_rooted(root, "/run/self.pid");

		TEST_CHECK(fs_read_host("/proc/self/comm", 64, &comm, NULL) == 0);
		comm[strcspn(comm, "\n")] = '\0';
		TEST_INTEQ(daemon_pid(&host, pf, comm, 0, NULL, 0), getpid());
		TEST_CHECK(daemon_pid(&host, NULL, comm, DAEMON_SCAN, NULL, 0) > 0);
		free(comm);
		free(pf);
	}
}

/* systemd_booted: /run/systemd/system under the root is a directory */
static void test_booted(void)
{
	struct ctx c = { .root = root, .mode = RUN_CHECK };
	char *p = fs_rooted(root, "/run/systemd/system");

	rm_rel("/run/systemd/system");
	TEST_CHECK(!systemd_booted(&c));
	test_put(root, "/run/systemd/system", "a file\n");      /* a file is not the manager */
	TEST_CHECK(!systemd_booted(&c));
	rm_rel("/run/systemd/system");
	TEST_INTEQ(mkdir(p, 0755), 0);
	TEST_CHECK(systemd_booted(&c));
	TEST_INTEQ(rmdir(p), 0);
	free(p);
}

/* daemon_listening: the TCP sockets a process listens on (its own here), by inode; a new socket a new inode. */
static bool listed(pid_t pid, unsigned long long ino, int *n)
{
	struct ctx real = { .root = "", .mode = RUN_CHECK };
	unsigned long long v[16];

	*n = daemon_listening(&real, pid, v, 16);
	for (int i = 0; i < *n; i++)
		if (v[i] == ino)
			return true;
	return false;
}

static void test_listening(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	struct sockaddr_in6 a6 = { .sin6_family = AF_INET6, .sin6_addr = IN6ADDR_LOOPBACK_INIT };
	int s = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), s6, n;
	struct stat st, st6;

	TEST_CHECK(s >= 0 && bind(s, (struct sockaddr *)&a, sizeof(a)) == 0 && fstat(s, &st) == 0);
	TEST_CHECK(!listed(getpid(), st.st_ino, &n));      /* bound, not listening */
	TEST_INTEQ(n, 0);
	TEST_INTEQ(listen(s, 4), 0);
	TEST_CHECK(listed(getpid(), st.st_ino, &n));
	TEST_INTEQ(n, 1);
	/* IPv6 too (tcp6), where this machine has it */
	s6 = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s6 >= 0 && bind(s6, (struct sockaddr *)&a6, sizeof(a6)) == 0 && listen(s6, 4) == 0 &&
	    fstat(s6, &st6) == 0) {
		TEST_CHECK(listed(getpid(), st6.st_ino, &n));
		TEST_INTEQ(n, 2);
	} else {
		fprintf(stderr, "# no IPv6 loopback here: tcp6 not tried\n");
	}
	if (s6 >= 0)
		close(s6);
	close(s);
	TEST_CHECK(!listed(getpid(), st.st_ino, &n));
	TEST_INTEQ(n, 0);
	/* a listening socket another process holds is not this one's */
	{
		int p[2];
		pid_t child;
		char c;

		TEST_INTEQ(pipe(p), 0);
		child = fork();
		if (child == 0) {
			struct sockaddr_in b = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };

			/* 900 listeners: far more LISTEN lines in the namespace than this process holds */
			for (int i = 0; i < 900; i++) {
				int t = socket(AF_INET, SOCK_STREAM, 0);

				if (t < 0 || bind(t, (struct sockaddr *)&b, sizeof(b)) < 0 || listen(t, 1) < 0)
					_exit(1);
			}
			if (write(p[1], "x", 1) != 1)
				_exit(1);
			pause();
			_exit(0);
		}
		TEST_CHECK(child > 0 && read(p[0], &c, 1) == 1);
		TEST_CHECK(!listed(getpid(), 0, &n));
		TEST_INTEQ(n, 0);
		TEST_CHECK(!listed(child, 0, &n));
		TEST_INTEQ(n, 16);     /* max: the first 16 of its 900 */
		/* 8 of this process's among the other's 900: all 8 found, wherever the kernel lists them */
		{
			int own[8], found = 0;
			unsigned long long v[16];

			for (int i = 0; i < 8; i++) {
				own[i] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
				TEST_CHECK(own[i] >= 0 && bind(own[i], (struct sockaddr *)&a, sizeof(a)) == 0 &&
					   listen(own[i], 1) == 0);
			}
			n = daemon_listening(&(struct ctx){ .root = "", .mode = RUN_CHECK }, getpid(), v, 16);
			TEST_INTEQ(n, 8);
			for (int i = 0; i < 8; i++) {
				TEST_CHECK(fstat(own[i], &st) == 0);
				for (int j = 0; j < n; j++)
					found += v[j] == st.st_ino;
				close(own[i]);
			}
			TEST_INTEQ(found, 8);
		}
		kill(child, SIGKILL);
		waitpid(child, NULL, 0);
		close(p[0]);
		close(p[1]);
		TEST_CHECK(daemon_listening(&(struct ctx){ .root = "", .mode = RUN_CHECK }, child, NULL, 0) < 0);
	}
}

int main(void)
{
	struct spec s = { 0 };
	struct ctx c = { .spec = &s, .root = root, .mode = RUN_APPLY };
	char *out = NULL, *p, *t;

	if (!mkdtemp(root))
		return 1;

	/* no systemctl in the root: none found, nothing run */
	unsetenv("HPCINIT_SYSTEMCTL");
	TEST_CHECK(systemctl_path(&c) == NULL);
	TEST_INTEQ(systemctl_run(&c, "is-active", "x.service", &out), -ENOENT);
	TEST_CHECK(out == NULL);

	/* --root is a tree: its own systemctl (an image's) is never run, it would reach this machine's systemd */
	put_systemctl("/usr/bin/systemctl", 0755);
	put_systemctl("/bin/systemctl", 0755);
	TEST_CHECK(!services_live(&c));
	TEST_CHECK(systemctl_path(&c) == NULL);
	TEST_INTEQ(systemctl_run(&c, "daemon-reload", NULL, NULL), -ENOENT);
	t = calls();
	TEST_STREQ(t, "");
	free(t);
	{
		struct report r;

		report_init(&r);
		TEST_CHECK(services_refused(&c, &r, "munged"));
		TEST_CHECK(systemctl_refused(&c, &r, "systemd"));
		TEST_INTEQ((int)r.n_findings, 2);
		TEST_STREQ(r.findings[0].tag, "service.root");
		TEST_INTEQ((int)r.findings[0].sev, ST_OK);
		TEST_CHECK(strncmp(r.findings[0].text, "munged: not started: --root /tmp/", 33) == 0);
		report_free(&r);
	}
	/* the real root: services are this machine's; systemctl is /usr/bin's or /bin's */
	{
		struct ctx real = { .spec = &s, .root = "", .mode = RUN_APPLY };

		TEST_CHECK(services_live(&real));
		TEST_CHECK(!services_refused(&real, NULL, "x"));
		p = systemctl_path(&real);
		TEST_CHECK(!p || !strcmp(p, "/usr/bin/systemctl") || !strcmp(p, "/bin/systemctl"));
		free(p);
	}

	/* a test's stand-in, HPCINIT_SYSTEMCTL: absolute and executable only */
	setenv("HPCINIT_SYSTEMCTL", "usr/bin/systemctl", 1);
	TEST_CHECK(systemctl_path(&c) == NULL);
	t = fs_rooted(root, "/bin/systemctl");
	setenv("HPCINIT_SYSTEMCTL", t, 1);
	put_systemctl("/bin/systemctl", 0644);
	TEST_CHECK(systemctl_path(&c) == NULL);
	put_systemctl("/bin/systemctl", 0755);
	p = systemctl_path(&c);
	TEST_STREQ(p, t);
	free(p);
	free(t);
	TEST_CHECK(!systemctl_refused(&c, NULL, "systemd"));
	t = fs_rooted(root, "/usr/bin/systemctl");
	setenv("HPCINIT_SYSTEMCTL", t, 1);
	free(t);

	/* its stdout handed back on success, the argv as given (no shell between) */
	TEST_INTEQ(systemctl_run(&c, "is-active", "a b;c.service", &out), 0);
	TEST_STREQ(out, "did is-active a b;c.service\n");
	free(out);
	out = NULL;
	t = calls();
	TEST_STREQ(t, "is-active a b;c.service\n");
	free(t);
	/* one argument: a2 NULL ends argv */
	TEST_INTEQ(systemctl_run(&c, "daemon-reload", NULL, NULL), 0);
	t = calls();
	TEST_STREQ(t, "daemon-reload\n");
	free(t);

	/* a failing systemctl: -EIO and no output */
	test_put(root, "/fail", "bad.service\n");
	TEST_INTEQ(systemctl_run(&c, "restart", "bad.service", &out), -EIO);
	TEST_CHECK(out == NULL);
	free(calls());

	/* sshd's unit: none installed */
	TEST_CHECK(sshd_unit(&c) == NULL);
	/* RHEL's, in /usr/lib */
	test_put(root, "/usr/lib/systemd/system/sshd.service", "[Service]\n");
	TEST_STREQ(sshd_unit(&c), "sshd.service");
	TEST_INTEQ(sshd_systemctl(&c, "reload"), 0);
	t = calls();
	TEST_STREQ(t, "reload sshd.service\n");
	free(t);
	/* Debian's, in /lib: ssh.service wins over sshd.service (Debian ships an sshd alias) */
	test_put(root, "/lib/systemd/system/ssh.service", "[Service]\n");
	TEST_STREQ(sshd_unit(&c), "ssh.service");
	/* ... also from /etc/systemd/system alone */
	rm_rel("/lib/systemd/system/ssh.service");
	rm_rel("/usr/lib/systemd/system/sshd.service");
	test_put(root, "/etc/systemd/system/ssh.service", "[Service]\n");
	TEST_STREQ(sshd_unit(&c), "ssh.service");
	/* the unit found fails: that failure, no second guess */
	test_put(root, "/fail", "ssh.service\n");
	TEST_INTEQ(sshd_systemctl(&c, "reload"), -EIO);
	t = calls();
	TEST_STREQ(t, "reload ssh.service\n");
	free(t);

	/* no unit file: ssh.service, and when that fails sshd.service */
	rm_rel("/etc/systemd/system/ssh.service");
	TEST_CHECK(sshd_unit(&c) == NULL);
	TEST_INTEQ(sshd_systemctl(&c, "restart"), 0);
	t = calls();
	TEST_STREQ(t, "restart ssh.service\nrestart sshd.service\n");
	free(t);
	/* ... and when both fail, the failure */
	test_put(root, "/fail", "ssh.service\nsshd.service\n");
	TEST_INTEQ(sshd_systemctl(&c, "restart"), -EIO);
	free(calls());
	/* ... and ssh.service alone when it works */
	rm_rel("/fail");
	TEST_INTEQ(sshd_systemctl(&c, "restart"), 0);
	t = calls();
	TEST_STREQ(t, "restart ssh.service\n");
	free(t);

	test_daemon_pid();
	test_booted();
	test_listening();
	test_rm_rf(root);
	TEST_EXIT();
}
