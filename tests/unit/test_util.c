/* SPDX-License-Identifier: MIT */
/*
 * common/base/util.c: the clock, a step's deadline and this node's name.  The backoff's
 * delays are checked as values (doubled, capped, cut to what is left of
 * the deadline), never as measured times.
 */
#include "config.h"

#include "../../common/base/util.c"
#include "test.h"

#include <signal.h>
#include <sys/time.h>
#include <unistd.h>

static volatile sig_atomic_t alarms;
static void on_alarm(int sig) { (void)sig; alarms++; }

/* sleep_ms sleeps the whole time it is asked, though a signal arrives (EINTR) meanwhile. */
static void test_sleep_ms(void)
{
	struct sigaction sa = { .sa_handler = on_alarm };       /* no SA_RESTART: nanosleep sees EINTR */
	struct itimerval it = { .it_value = { 0, 20 * 1000 } };
	uint64_t t0;

	sigemptyset(&sa.sa_mask);
	TEST_INTEQ(sigaction(SIGALRM, &sa, NULL), 0);
	TEST_INTEQ(setitimer(ITIMER_REAL, &it, NULL), 0);
	t0 = now_ms();
	sleep_ms(120);
	TEST_CHECK(alarms == 1);                                /* the signal came, in the middle */
	TEST_CHECK(now_ms() - t0 >= 120);                       /* and the sleep went on to its end */
	signal(SIGALRM, SIG_DFL);
}

int main(void)
{
	struct ctx c = { 0 };
	uint64_t t0 = now_ms(), t1, d;

	test_sleep_ms();
	t0 = now_ms();

	/* monotonic: never goes back */
	for (int i = 0; i < 1000; i++) {
		t1 = now_ms();
		if (t1 < t0) {
			TEST_CHECK(t1 >= t0);
			break;
		}
		t0 = t1;
	}

	/* a deadline passed (or never set): nothing left, no backoff, the delay untouched */
	c.deadline_ms = 0;
	TEST_INTEQ(ctx_remaining_ms(&c), 0);
	d = 400;
	TEST_CHECK(!ctx_backoff(&c, &d, 1000));
	TEST_INTEQ(d, 400);
	c.deadline_ms = now_ms() - 1;
	TEST_INTEQ(ctx_remaining_ms(&c), 0);

	/* a deadline ahead: what is left, at most the whole */
	c.deadline_ms = now_ms() + 60000;
	TEST_CHECK(ctx_remaining_ms(&c) > 0 && ctx_remaining_ms(&c) <= 60000);

	/* the first delay is 100 ms, then it doubles */
	d = 0;
	TEST_CHECK(ctx_backoff(&c, &d, 1000));
	TEST_INTEQ(d, 200);
	d = 30;
	TEST_CHECK(ctx_backoff(&c, &d, 1000));
	TEST_INTEQ(d, 60);
	/* capped: the sleep is the cap, the next delay twice the cap */
	d = 5000;
	TEST_CHECK(ctx_backoff(&c, &d, 20));
	TEST_INTEQ(d, 40);

	/* cut to what is left of the deadline: after it, nothing is left and the answer is no */
	c.deadline_ms = now_ms() + 50;
	d = 10000;
	TEST_CHECK(!ctx_backoff(&c, &d, 60000));
	TEST_CHECK(d <= 100);
	TEST_INTEQ(ctx_remaining_ms(&c), 0);

	/* this node's name: --hostname first, else gethostname(2), one validity rule */
	{
		char buf[NODE_HOSTNAME_MAX], sys[NODE_HOSTNAME_MAX] = "", small[4];
		char long_label[80];

		c.hostname = "node-07.cluster";
		TEST_STREQ(node_hostname(&c, buf, sizeof(buf)), "node-07.cluster");
		c.hostname = "ip_10_0_0_7";         /* '_' as some images name themselves */
		TEST_STREQ(node_hostname(&c, buf, sizeof(buf)), "ip_10_0_0_7");
		/* what a record may not carry: NULL and "", never the system's name instead */
		static const char *const bad[] = { "", "-node", "node-", "a..b", ".a", "a b", "a*", "a,b",
						   "n\xe9", "node.-x", NULL };
		for (const char *const *b = bad; *b; b++) {
			c.hostname = *b;
			strcpy(buf, "x");
			TEST_CHECK(node_hostname(&c, buf, sizeof(buf)) == NULL);
			TEST_STREQ(buf, "");
		}
		memset(long_label, 'a', 64);
		long_label[64] = '\0';             /* a label of 64 */
		c.hostname = long_label;
		TEST_CHECK(node_hostname(&c, buf, sizeof(buf)) == NULL);
		long_label[63] = '\0';             /* of 63: fine */
		TEST_STREQ(node_hostname(&c, buf, sizeof(buf)), long_label);
		/* too long for the buffer: none, not a truncated name */
		c.hostname = "node1";
		TEST_CHECK(node_hostname(&c, small, sizeof(small)) == NULL);
		TEST_STREQ(small, "");
		TEST_CHECK(node_hostname(&c, small, 0) == NULL);
		/* no --hostname (and no ctx): the system's name when it is a valid one */
		c.hostname = NULL;
		TEST_CHECK(gethostname(sys, sizeof(sys) - 1) == 0);
		if (name_host_valid(sys, NAME_UNDERSCORE)) {
			TEST_STREQ(node_hostname(&c, buf, sizeof(buf)), sys);
			TEST_STREQ(node_hostname(NULL, buf, sizeof(buf)), sys);
		} else {
			TEST_CHECK(node_hostname(&c, buf, sizeof(buf)) == NULL);
		}
	}
	TEST_EXIT();
}
