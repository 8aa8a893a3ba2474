/* SPDX-License-Identifier: MIT */
/*
 * agent/base/util.c: the clock and a step's deadline.  The backoff's
 * delays are checked as values (doubled, capped, cut to what is left of
 * the deadline), never as measured times.
 */
#include "config.h"

#include "../../agent/base/util.c"
#include "test.h"

int main(void)
{
	struct ctx c = { 0 };
	uint64_t t0 = now_ms(), t1, d;

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
	TEST_EXIT();
}
