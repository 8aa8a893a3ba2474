/* SPDX-License-Identifier: MIT */
/* record_pack: a peer between two processes of one run, packed and read back. */
#include "config.h"

#include <errno.h>

#include "../../common/base/record_pack.c"

#include "test.h"

static const char *const KEY1 = "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOv3e0Vn3R8wq5xwq0r1T2x1dKp0JmM0mXo1c9c1yqzA";
static const char *const KEY2 = "ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBP+u";

static void fill(struct peer *p)
{
	memset(p, 0, sizeof(*p));
	p->hostname = xstrdup("node7");
	p->addr = xstrdup("10.0.0.7");
	p->ipoib_addr = xstrdup("172.16.0.7");
	p->slots = 120;
	p->head = false;
	strlist_push(&p->host_keys, KEY1);
	strlist_push(&p->host_keys, KEY2);
	p->user_keys = xcalloc(1, sizeof(*p->user_keys));
	p->user_keys[0].user = xstrdup("azureuser");
	p->user_keys[0].key = xasprintf("%s azureuser@hpcinit", KEY1);
	p->n_user_keys = 1;
	p->version = xstrdup("0.1.0");
	p->boot_id = xstrdup("0f3c1e2a-1111-2222-3333-444455556666");
	p->updated = 1700000000;
}

/*
 * The packed form an isolated step's child sends the runner: every field
 * comes back (the record text of both is the same, and the fields the text
 * does not hold: self), absent strings stay absent, and anything cut short
 * or padded is refused whole.
 */
static void test_pack(void)
{
	struct peer p, q;
	struct strbuf sb = STRBUF_INIT;
	char *a, *b;

	fill(&p);
	p.fabric = xstrdup("mlx5_ib0=0c42:a103:0065:aa10");
	p.pkey = xstrdup("0x800b");
	p.placement_group = xstrdup("pg-1");
	p.head = true;
	p.formed = true;
	p.self = true;
	p.updated = -5;
	p.state = PEER_FAILED;
	p.reason = xstrdup("mounts.nfs.absent");
	p.ready_ms = 41230;
	p.users = xstrdup("alice=10001:10001,bob=10002:100");
	record_pack(&sb, &p);
	TEST_INTEQ(record_unpack(sb.buf, sb.len, &q), 0);
	TEST_CHECK(q.state == PEER_FAILED && q.ready_ms == 41230);
	TEST_STREQ(q.users, "alice=10001:10001,bob=10002:100");
	TEST_STREQ(q.reason, "mounts.nfs.absent");
	a = record_format(&p, "glo", NULL, 0);
	b = record_format(&q, "glo", NULL, 0);
	TEST_STREQ(a, b);
	TEST_CHECK(q.self && q.head && q.formed && q.updated == -5 && q.slots == 120);
	TEST_INTEQ(q.host_keys.n, 2);
	TEST_INTEQ(q.n_user_keys, 1);
	TEST_STREQ(q.user_keys[0].user, "azureuser");
	free(a);
	free(b);
	peer_clear(&q);
	/* every cut short is refused, and so is a byte too many */
	for (size_t n = 0; n < sb.len; n++)
		TEST_INTEQ(record_unpack(sb.buf, n, &q), -EBADMSG);
	sb_append(&sb, "x");
	TEST_INTEQ(record_unpack(sb.buf, sb.len, &q), -EBADMSG);
	peer_clear(&p);
	sb_reset(&sb);

	/* absent strings stay absent, no keys */
	memset(&p, 0, sizeof(p));
	p.hostname = xstrdup("n1");
	p.addr = xstrdup("10.0.0.1");
	record_pack(&sb, &p);
	TEST_INTEQ(record_unpack(sb.buf, sb.len, &q), 0);
	TEST_CHECK(!q.ipoib_addr && !q.fabric && !q.version && !q.self && q.host_keys.n == 0 &&
		   q.n_user_keys == 0 && !q.users);
	TEST_STREQ(q.hostname, "n1");
	peer_clear(&q);
	peer_clear(&p);
	/*
	 * more keys than a record holds (RECORD_MAX_KEYS): this node's own peer is no parsed
	 * record (ssh.users can name more), and whatever record_pack wrote reads back -- the
	 * runner fails a step whose peer does not (runner.peer-unreadable, agent/core/iso.c)
	 */
	memset(&p, 0, sizeof(p));
	p.hostname = xstrdup("n1");
	p.addr = xstrdup("10.0.0.1");
	p.self = true;
	p.state = PEER_FAILED;
	p.user_keys = xcalloc(RECORD_MAX_KEYS + 8, sizeof(*p.user_keys));
	for (size_t i = 0; i < RECORD_MAX_KEYS + 8; i++) {
		strlist_push(&p.host_keys, KEY2);
		p.user_keys[i].user = xasprintf("u%zu", i);
		p.user_keys[i].key = xstrdup(KEY1);
		p.n_user_keys++;
	}
	sb_reset(&sb);
	record_pack(&sb, &p);
	TEST_INTEQ(record_unpack(sb.buf, sb.len, &q), 0);
	TEST_INTEQ(q.host_keys.n, RECORD_MAX_KEYS + 8);
	TEST_INTEQ(q.n_user_keys, RECORD_MAX_KEYS + 8);
	TEST_CHECK(q.self && q.state == PEER_FAILED);
	peer_clear(&q);
	peer_clear(&p);
	/* the exact bytes, appended after what sb holds */
	memset(&p, 0, sizeof(p));
	p.hostname = xstrdup("n1");
	p.addr = xstrdup("10.0.0.1");
	p.slots = 4;
	p.updated = -5;
	sb_reset(&sb);
	sb_append(&sb, "x");
	record_pack(&sb, &p);
	TEST_STREQ(sb_str(&sb), "x2:n18:10.0.0.1------1:42:-51:0-1:01:01:0-");
	peer_clear(&p);
	/* a length past the end, a count over the limit */
	TEST_INTEQ(record_unpack("99:n1", 5, &q), -EBADMSG);
	sb_reset(&sb);
	sb_append(&sb, "2:n18:10.0.0.1------1:01:01:0-1:03:999-");
	TEST_INTEQ(record_unpack(sb.buf, sb.len, &q), -EBADMSG);
	sb_free(&sb);

	/* the numbers: both ends of updated, and what num_ll refuses */
	for (int i = 0; i < 2; i++) {
		memset(&p, 0, sizeof(p));
		p.hostname = xstrdup("n1");
		p.addr = xstrdup("10.0.0.1");
		p.updated = i ? INT64_MAX : INT64_MIN;
		p.slots = UINT_MAX;
		record_pack(&sb, &p);
		TEST_INTEQ(record_unpack(sb.buf, sb.len, &q), 0);
		TEST_CHECK(q.updated == p.updated && q.slots == UINT_MAX);
		peer_clear(&q);
		peer_clear(&p);
		sb_reset(&sb);
	}
	{
		static const struct {
			const char *slots, *updated, *flags;
			int want;
			int64_t updated_is;
		} nums[] = {
			{ "3:007", "2:-0", "1:7", 0, 0 },
			{ "1:1", "20:-9223372036854775808", "1:0", 0, INT64_MIN },
			{ "1:1", "20:00000000000000000042", "1:0", 0, 42 },
			{ "1:1", "19:9223372036854775808", "1:0", -EBADMSG, 0 },      /* over */
			{ "1:1", "1:5", "2:32", -EBADMSG, 0 },                        /* flags 0-31 */
			{ "2:-1", "1:5", "1:0", -EBADMSG, 0 },                        /* slots >= 0 */
			{ "10:4294967296", "1:5", "1:0", -EBADMSG, 0 },               /* over UINT_MAX */
			{ "1:1", "1:-", "1:0", -EBADMSG, 0 },
			{ "1:1", "2:+5", "1:0", -EBADMSG, 0 },
			{ "1:1", "2:5x", "1:0", -EBADMSG, 0 },
			{ "1:1", "2: 5", "1:0", -EBADMSG, 0 },
			{ "1:1", "0:", "1:0", -EBADMSG, 0 },
			{ "1:1", "-", "1:0", -EBADMSG, 0 },
		};

		for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
			char *t = xasprintf("2:n18:10.0.0.1------%s%s%s-1:01:01:0-", nums[i].slots, nums[i].updated,
					    nums[i].flags);
			int r = record_unpack(t, strlen(t), &q);

			if (r != nums[i].want)
				fprintf(stderr, "case %zu: %s %s %s\n", i, nums[i].slots, nums[i].updated, nums[i].flags);
			TEST_INTEQ(r, nums[i].want);
			if (r == 0) {
				TEST_CHECK(q.updated == nums[i].updated_is);
				peer_clear(&q);
			}
			free(t);
		}
	}
	sb_free(&sb);
}

/*
 * peer_copy (the shared directory's read cache hands each list a copy of a
 * record's parse): every field the packed form holds comes out the same,
 * no string is shared, and each is freed apart (ASan and valgrind count).
 */
static void test_copy(void)
{
	struct peer p, q;
	struct strbuf a = STRBUF_INIT, b = STRBUF_INIT;

	fill(&p);
	p.fabric = xstrdup("mlx5_ib0=0c42:a103:0065:aa10");
	p.pkey = xstrdup("0x800b");
	p.placement_group = xstrdup("pg-1");
	p.head = p.formed = p.self = true;
	p.state = PEER_DEGRADED;
	p.reason = xstrdup("rdma.port.down");
	p.ready_ms = 777;
	p.users = xstrdup("alice=10001:10001");
	p.user_keys = xrealloc(p.user_keys, 2 * sizeof(*p.user_keys));
	p.user_keys[1].user = xstrdup("bob");
	p.user_keys[1].key = xstrdup(KEY2);
	p.n_user_keys = 2;
	peer_copy(&q, &p);
	record_pack(&a, &p);
	record_pack(&b, &q);
	TEST_STREQ(b.buf, a.buf);
	TEST_CHECK(q.hostname != p.hostname && q.addr != p.addr && q.ipoib_addr != p.ipoib_addr &&
		   q.fabric != p.fabric && q.pkey != p.pkey && q.placement_group != p.placement_group &&
		   q.version != p.version && q.boot_id != p.boot_id && q.reason != p.reason &&
		   q.users != p.users && q.host_keys.v != p.host_keys.v && q.host_keys.v[0] != p.host_keys.v[0] &&
		   q.user_keys != p.user_keys && q.user_keys[1].key != p.user_keys[1].key);
	peer_clear(&p);
	sb_reset(&b);
	record_pack(&b, &q);
	TEST_STREQ(b.buf, a.buf);
	peer_clear(&q);

	/* absent stays absent */
	memset(&p, 0, sizeof(p));
	p.hostname = xstrdup("n1");
	peer_copy(&q, &p);
	TEST_CHECK(!q.addr && !q.users && !q.user_keys && q.host_keys.n == 0 && !q.host_keys.v);
	TEST_STREQ(q.hostname, "n1");
	peer_clear(&p);
	peer_clear(&q);
	sb_free(&a);
	sb_free(&b);
}

int main(void)
{
	test_pack();
	test_copy();
	TEST_EXIT();
}
