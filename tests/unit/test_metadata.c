/* SPDX-License-Identifier: MIT */
/*
 * lib/metadata: the metadata service's text GET against a stand-in IMDS
 * (tests/unit/imds-standin.h), the Scheduled Events answer read (which
 * events name this VM), and the helper's exits as -errno.  Scheduled
 * Events end to end (the helper, the watch leaving, the acknowledgement)
 * are in tests/cluster/etcd-watch.sh and etcd-hostile.sh.
 */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "../../lib/metadata/metadata.c"
#include "test.h"
#include "imds-standin.h"

static void test_imds(void)
{
	static const char *const answers[] = {
		"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\npg-0123abc\r\nsecond line\r\n",
		"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n",
		"HTTP/1.0 200 OK\r\nContent-Type: text/plain\r\n",
		"garbage",
		HANG,
	};
	char url[256], out[128], err[160];
	pid_t pid = imds_start(answers, 5, url, sizeof(url));

	/* 200: the body's first line */
	TEST_INTEQ(imds_get_text(url, 5000, out, sizeof(out), err, sizeof(err)), 0);
	TEST_STREQ(out, "pg-0123abc");
	/* another status: the status line said */
	TEST_INTEQ(imds_get_text(url, 5000, out, sizeof(out), err, sizeof(err)), -EPROTO);
	TEST_STREQ(err, "answered HTTP/1.1 404 Not Found");
	TEST_STREQ(out, "");
	/* headers without their end: no body */
	TEST_INTEQ(imds_get_text(url, 5000, out, sizeof(out), err, sizeof(err)), -EPROTO);
	TEST_STREQ(err, "no body");
	/* not HTTP */
	TEST_INTEQ(imds_get_text(url, 5000, out, sizeof(out), err, sizeof(err)), -EPROTO);
	TEST_STREQ(err, "answered garbage");
	/* no answer: the deadline ends it */
	TEST_INTEQ(imds_get_text(url, 300, out, sizeof(out), err, sizeof(err)), -ETIMEDOUT);
	TEST_STREQ(err, "no answer within 300 ms");
	imds_stop(pid);
	/* nothing listens any more: the connection's error */
	TEST_CHECK(imds_get_text(url, 2000, out, sizeof(out), err, sizeof(err)) == -ECONNREFUSED);
	/* not a URL it will use */
	TEST_INTEQ(imds_get_text("http://127.0.0.1:80", 100, out, sizeof(out), err, sizeof(err)), -EINVAL);
	TEST_STREQ(err, "no host or path");
	TEST_INTEQ(imds_get_text("http:///x", 100, out, sizeof(out), err, sizeof(err)), -EINVAL);
	TEST_INTEQ(imds_get_text("ftp://127.0.0.1/x", 100, out, sizeof(out), err, sizeof(err)), -EINVAL);
	TEST_STREQ(err, "only http:// (the metadata service's scheme)");
	TEST_INTEQ(imds_get_text("http://localhost/x", 100, out, sizeof(out), err, sizeof(err)), -EINVAL);
	TEST_STREQ(err, "localhost: not a numeric address (the metadata service has one)");
}

/* The helper's events answer: only Terminate or Preempt naming this VM (its name, or the host, any case). */
static void test_events_parse(void)
{
	char text[] = "incarnation 3\n"
		      "self vm-7\n"
		      "event E1 Terminate Scheduled vm-7\n"
		      "event E2 Reboot Scheduled vm-7\n"
		      "event E3 Preempt Started vm-1,NODE1,vm-2\n"
		      "event E4 Terminate Scheduled vm-9\n"
		      "event E5 Terminate\n"
		      "junk line\n";
	struct md_events ev = { 0 };

	md_events_parse(text, "node1", &ev);
	TEST_INTEQ(ev.n, 2);
	TEST_STREQ(ev.v[0].id, "E1");
	TEST_STREQ(ev.v[0].type, "Terminate");
	TEST_STREQ(ev.v[0].status, "Scheduled");
	TEST_INTEQ(ev.v[0].others, 0);
	TEST_STREQ(ev.v[1].id, "E3");
	TEST_STREQ(ev.v[1].type, "Preempt");
	TEST_INTEQ(ev.v[1].others, 2);
	md_events_free(&ev);
	/* Without "self", only the host name names this VM. */
	{
		char t2[] = "event E1 Terminate Scheduled vm-7\n";

		md_events_parse(t2, "node1", &ev);
		TEST_INTEQ(ev.n, 0);
		md_events_free(&ev);
	}
}

/* A failure keeps its meaning: no answer, a deadline, a refusal. */
static void test_status(void)
{
	struct proc_result r = { 0 };

	TEST_INTEQ(md_status(&r), 0);
	r.exit_code = ETCD_EX_DOWN;
	TEST_INTEQ(md_status(&r), -EHOSTUNREACH);
	r.exit_code = ETCD_EX_REFUSED;
	TEST_INTEQ(md_status(&r), -EPROTO);
	r.timed_out = true;
	TEST_INTEQ(md_status(&r), -ETIMEDOUT);
}

/* The events of a service that is not there: the helper says so, -EHOSTUNREACH, not -1. */
static void test_events_down(void)
{
	struct md_events ev = { 0 };
	struct strbuf err = STRBUF_INIT;
	const char *top = getenv("TOP_BUILDDIR");
	char *helper = top ? xasprintf("%s/" MD_HELPER_NAME, top) : NULL;
	int r;

	if (!helper || access(helper, X_OK) != 0) {
		printf("# the helper is not built here (TOP_BUILDDIR): its exits are only read above\n");
		free(helper);
		return;
	}
	free(helper);
	setenv("HPCINIT_LIBEXEC_DIR", top, 1);
	r = md_events_get("http://127.0.0.1:9/metadata/scheduledevents?api-version=2020-07-01", "node1", &ev, &err);
	TEST_INTEQ(r, -EHOSTUNREACH);
	TEST_INTEQ(ev.n, 0);
	sb_free(&err);
	md_events_free(&ev);
}

/* md_next_word: words cut out in place, runs of spaces skipped, the rest of the line when asked. */
static void test_next_word(void)
{
	char line[] = "mine  ev-1 Terminate Scheduled  3 vm1 vm2", *p = line;

	TEST_STREQ(md_next_word(&p, false), "mine");
	TEST_STREQ(md_next_word(&p, false), "ev-1");
	TEST_STREQ(md_next_word(&p, false), "Terminate");
	TEST_STREQ(md_next_word(&p, false), "Scheduled");
	TEST_STREQ(md_next_word(&p, true), "3 vm1 vm2");
	TEST_CHECK(md_next_word(&p, false) == NULL);
	TEST_CHECK(md_next_word(&p, true) == NULL);
	{
		char blank[] = "   ", *q = blank;

		TEST_CHECK(md_next_word(&q, false) == NULL);
	}
}

/* An instance fact: asked once a boot, kept by a run that may write, per URL; a failure not kept. */
static void test_fact(void)
{
	static const char *const answers[] = {
		"HTTP/1.1 503 Service Unavailable\r\n\r\n",
		"HTTP/1.1 200 OK\r\n\r\nStandard_ND96isr_H100_v5\r\n",
		"HTTP/1.1 200 OK\r\n\r\nStandard_HB176rs_v4\r\n",
	};
	char root[] = "/tmp/test_metadata.XXXXXX", url[256], url2[300], out[128], err[160], *text = NULL;
	struct ctx c = { .root = root, .mode = RUN_CHECK };
	bool cached = true;
	pid_t pid;

	TEST_CHECK(mkdtemp(root) != NULL);
	pid = imds_start(answers, 3, url, sizeof(url));
	/* the service fails: said, nothing kept */
	TEST_INTEQ(md_fact(&c, "vm-size", url, out, sizeof(out), &cached, err, sizeof(err)), -EPROTO);
	TEST_CHECK(!cached);
	TEST_CHECK(!fs_exists(&c, MD_FACTS_DIR "/vm-size"));
	/* a check asks and keeps nothing */
	TEST_INTEQ(md_fact(&c, "vm-size", url, out, sizeof(out), &cached, err, sizeof(err)), 0);
	TEST_STREQ(out, "Standard_ND96isr_H100_v5");
	TEST_CHECK(!cached);
	TEST_CHECK(!fs_exists(&c, MD_FACTS_DIR "/vm-size"));
	/* an apply asks and keeps the answer with the URL it asked */
	c.mode = RUN_APPLY;
	TEST_INTEQ(md_fact(&c, "vm-size", url, out, sizeof(out), &cached, err, sizeof(err)), 0);
	TEST_STREQ(out, "Standard_HB176rs_v4");
	TEST_CHECK(!cached);
	TEST_INTEQ(fs_read(&c, MD_FACTS_DIR "/vm-size", &text, NULL), 0);
	TEST_CHECK(text && strncmp(text, url, strlen(url)) == 0);
	free(text);
	imds_stop(pid);
	/* later runs this boot: the kept answer, the service not asked (it is gone) */
	c.mode = RUN_CHECK;
	TEST_INTEQ(md_fact(&c, "vm-size", url, out, sizeof(out), &cached, err, sizeof(err)), 0);
	TEST_STREQ(out, "Standard_HB176rs_v4");
	TEST_CHECK(cached);
	/* another URL is another question: asked (and refused, nothing listens) */
	snprintf(url2, sizeof(url2), "%s&x=1", url);
	TEST_CHECK(md_fact(&c, "vm-size", url2, out, sizeof(out), &cached, err, sizeof(err)) < 0);
	TEST_CHECK(!cached);
	TEST_STREQ(out, "");
	/* the fake root's tree, as made: the file, then each directory */
	{
		static const char *const made[] = { MD_FACTS_DIR "/vm-size", MD_FACTS_DIR, "/run/hpcinit", "/run" };

		for (size_t i = 0; i < 4; i++) {
			char *p = ctx_path(&c, made[i]);

			TEST_INTEQ(i == 0 ? unlink(p) : rmdir(p), 0);
			free(p);
		}
		TEST_INTEQ(rmdir(root), 0);
	}
}

int main(void)
{
	test_next_word();
	test_fact();
	test_imds();
	test_events_parse();
	test_status();
	test_events_down();
	TEST_EXIT();
}
