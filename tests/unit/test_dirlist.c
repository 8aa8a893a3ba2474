/* SPDX-License-Identifier: MIT */
/*
 * lib/rendezvous/dirlist.c: a list of the shared directory's collection on a
 * fake root -- entries read and prepped on several threads, each called in
 * readdir's order, a walk each stops -- and the read cache of a run that
 * lists again and again (rv_lister.reuse_ms, prep_copy): what it gives, and
 * what it reads again (a file replaced, written in place, re-moded,
 * re-owned, made a link, removed; past reuse_ms).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
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

static char root[] = "/tmp/hpcinit-test-dirlist.XXXXXX";
static char s_name[] = "glo", s_dir[] = "/share/.hpcinit";

#include "testrv.h"

/* ---- rv_list_prep: entries read and prepped on several threads, each in order ---- */

struct prepped {
	pthread_t tid;
	char *copy;                     /* the value prep saw */
};

struct par {
	struct strlist order;           /* each's names and refusals, in its order */
	pthread_t tids[16];
	unsigned ntids;
	pthread_mutex_t mu;
	unsigned preps, freed, lib_freed, thread_ends, stop_after, eaches;
	bool mismatch;
};

static void *par_prep(void *arg, const struct rv_entry *e)
{
	struct par *pa = arg;
	struct prepped *pp = xcalloc(1, sizeof(*pp));
	bool known = false;

	pp->tid = pthread_self();
	pp->copy = xstrndup(e->value, e->len);
	usleep(50);     /* long enough that a worker thread surely gets its share of a batch */
	pthread_mutex_lock(&pa->mu);
	pa->preps++;
	for (unsigned i = 0; i < pa->ntids; i++)
		known = known || pthread_equal(pa->tids[i], pp->tid);
	if (!known && pa->ntids < 16)
		pa->tids[pa->ntids++] = pp->tid;
	pthread_mutex_unlock(&pa->mu);
	return pp;
}

static void par_prep_free(void *arg)
{
	struct prepped *pp = arg;

	free(pp->copy);
	free(pp);
}

static struct par *par_current;

/* prep_free as the library calls it: after a stop, for the entries each never saw */
static void par_lib_free(void *arg)
{
	par_current->lib_freed++;
	par_prep_free(arg);
}

static void par_thread_end(void)
{
	pthread_mutex_lock(&par_current->mu);
	par_current->thread_ends++;
	pthread_mutex_unlock(&par_current->mu);
}

static int par_each(void *arg, const struct rv_entry *e)
{
	struct par *pa = arg;
	struct prepped *pp = e->prep;

	if (pa->stop_after && pa->eaches == pa->stop_after) {
		if (pp) {       /* each owns the prep of the entry it is given, also when it stops */
			pa->freed++;
			par_prep_free(pp);
		}
		return 7;
	}
	pa->eaches++;
	if (e->refused) {
		strlist_push_take(&pa->order, xasprintf("%s:%s", e->name, e->refused));
		pa->mismatch = pa->mismatch || pp != NULL;
		return 0;
	}
	strlist_push(&pa->order, e->name);
	if (!pp || strcmp(pp->copy, e->value) != 0) {
		pa->mismatch = true;
	} else {
		pa->freed++;
		par_prep_free(pp);
	}
	return 0;
}

static bool want_not_skip(void *arg, const char *name)
{
	(void)arg;
	return strncmp(name, "skip", 4) != 0;
}

static void test_dir_parallel(struct ctx *c)
{
	struct rv_opts o = { .collection = "many", .self = "node1", .max_bytes = 1024, .create = true };
	struct rendezvous rv;
	struct report rep;
	struct seen s = { 0 };
	struct par pa = { .mu = PTHREAD_MUTEX_INITIALIZER };
	struct rv_lister l = { .want = want_not_skip, .prep = par_prep, .prep_free = par_lib_free,
			       .thread_end = par_thread_end, .each = par_each, .arg = &pa };
	unsigned threads = list_threads(), n = 2600;
	bool same = true;

	par_current = &pa;
	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), 0);
	/* Three batches: entries to read, refused ones, temp files, names want declines. */
	for (unsigned i = 0; i < n; i++) {
		char rel[96], text[32];

		snprintf(text, sizeof(text), "value %u\n", i);
		if (i % 500 == 7)
			snprintf(rel, sizeof(rel), "/share/.hpcinit/glo/many/w%04u.cert", i);
		else if (i % 500 == 9)
			snprintf(rel, sizeof(rel), "/share/.hpcinit/glo/many/t%04u.cert.hpcinit-tmp.1", i);
		else if (i % 500 == 11)
			snprintf(rel, sizeof(rel), "/share/.hpcinit/glo/many/skip%04u", i);
		else
			snprintf(rel, sizeof(rel), "/share/.hpcinit/glo/many/e%04u.cert", i);
		put_file(rel, text, i % 500 == 7 ? 0666 : 0644, 0);
	}
	/* The order the walk on one thread gives (no prep: rv_list). */
	TEST_INTEQ(rv_list(&rv, &rep, want_not_skip, collect, &s), 0);
	TEST_INTEQ(s.names.n, n - 3 * 6);       /* the temp files come as refused "temp" */
	TEST_INTEQ(s.refused.n, 2 * 6);
	TEST_CHECK(has(&s.refused, "w0007.cert:writable"));
	TEST_CHECK(has(&s.refused, "t0009.cert.hpcinit-tmp.1:temp"));
	TEST_CHECK(!has(&s.names, "skip0011"));

	TEST_INTEQ(rv_list_prep(&rv, &rep, &l), 0);
	TEST_INTEQ(pa.order.n, n - 6);
	TEST_CHECK(!pa.mismatch);
	TEST_INTEQ(pa.preps, n - 3 * 6);        /* only entries read: not refused, temp or declined */
	TEST_INTEQ(pa.freed, pa.preps);
	TEST_INTEQ(pa.lib_freed, 0);
	/* each saw the entries in the walk's order, refusals included */
	{
		size_t a = 0, b = 0;

		for (size_t i = 0; i < pa.order.n && same; i++) {
			const char *x = pa.order.v[i], *want;

			if (strchr(x, ':'))
				want = b < s.refused.n ? s.refused.v[b++] : "";
			else
				want = a < s.names.n ? s.names.v[a++] : "";
			if (strcmp(x, want) != 0) {
				fprintf(stderr, "# order: %s, expected %s at %zu\n", x, want, i);
				same = false;
			}
		}
	}
	TEST_CHECK(same);
	/* Several threads did the reading and the prep, each ended its own (3 batches). */
	fprintf(stderr, "# %u CPUs usable: %u threads prepped, %u worker ends\n", threads, pa.ntids,
		pa.thread_ends);
	if (threads > 1) {
		TEST_CHECK(pa.ntids >= 2);
		TEST_INTEQ(pa.thread_ends, 3 * (threads - 1));
	} else {
		TEST_INTEQ(pa.ntids, 1);
		TEST_INTEQ(pa.thread_ends, 0);
	}
	/* A walk each stops: its value returned, every prep made freed (ASan and valgrind count). */
	strlist_free(&pa.order);
	pa.preps = pa.freed = pa.eaches = 0;
	pa.stop_after = 1500;
	TEST_INTEQ(rv_list_prep(&rv, &rep, &l), 7);
	TEST_INTEQ(pa.eaches, 1500);
	TEST_INTEQ(pa.freed + pa.lib_freed, pa.preps);
	TEST_CHECK(pa.lib_freed > 0);
	strlist_free(&pa.order);
	strlist_free(&s.names);
	strlist_free(&s.refused);
	rv_close(&rv);
	report_free(&rep);
}

/* ---- rv_lister.reuse_ms: an unchanged entry is given from the read cache, a changed one read ---- */

static int kv_each(void *arg, const struct rv_entry *e)
{
	struct strlist *l = arg;

	if (e->refused)
		strlist_push_take(l, xasprintf("%s:%s", e->name, e->refused));
	else
		strlist_push_take(l, xasprintf("%s=%.*s", e->name, (int)e->len, e->value));
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * One pass with the lister's reuse_ms and recheck_ms: what each saw, sorted
 * into one line; *reused: how many came from the cache.
 */
static char *kv_pass_with(struct rendezvous *rv, struct report *rep, uint64_t reuse_ms, uint64_t recheck_ms,
			  size_t *reused)
{
	struct strlist l = { 0 };
	struct rv_lister lister = { .each = kv_each, .arg = &l, .reuse_ms = reuse_ms, .recheck_ms = recheck_ms };
	size_t before = rv->read_cache ? rv->read_cache->reused : 0;
	struct strbuf sb = { 0 };
	char *ret;

	TEST_INTEQ(rv_list_prep(rv, rep, &lister), 0);
	if (l.n)
		qsort(l.v, l.n, sizeof(*l.v), cmp_str);
	for (size_t i = 0; i < l.n; i++)
		sb_printf(&sb, "%s%s", i ? " " : "", l.v[i]);
	*reused = (rv->read_cache ? rv->read_cache->reused : 0) - before;
	strlist_free(&l);
	ret = xstrdup(sb_str(&sb));
	sb_free(&sb);
	return ret;
}

static char *kv_pass(struct rendezvous *rv, struct report *rep, uint64_t reuse_ms, size_t *reused)
{
	return kv_pass_with(rv, rep, reuse_ms, 0, reused);
}

#define KV_PASS(rv, rep, ms, want_line, want_reused) do {                                       \
		size_t reused_;                                                                 \
		char *line_ = kv_pass(rv, rep, ms, &reused_);                                   \
		TEST_STREQ(line_, want_line);                                                   \
		TEST_INTEQ(reused_, want_reused);                                               \
		free(line_);                                                                    \
	} while (0)

/* prep and prep_copy for the cache: the value as prep saw it; calls counted (any thread). */
struct cp {
	pthread_mutex_t mu;
	unsigned preps, copies, eaches, wrong;
};

static void *cp_prep(void *arg, const struct rv_entry *e)
{
	struct cp *c = arg;

	pthread_mutex_lock(&c->mu);
	c->preps++;
	pthread_mutex_unlock(&c->mu);
	return xstrndup(e->value, e->len);
}

static void *cp_copy(void *arg, const void *prep)
{
	struct cp *c = arg;

	pthread_mutex_lock(&c->mu);
	c->copies++;
	pthread_mutex_unlock(&c->mu);
	return xstrdup(prep);
}

static int cp_each(void *arg, const struct rv_entry *e)
{
	struct cp *c = arg;

	c->eaches++;
	if (!e->prep || strcmp(e->prep, e->value) != 0)
		c->wrong++;
	free(e->prep);
	return 0;
}

/* A new report, the rendezvous opened, and entries a, b and c (A1, B1, C1) put. */
static void open_abc(struct ctx *c, struct report *rep, const struct rv_opts *o, struct rendezvous *rv)
{
	report_init(rep);
	TEST_INTEQ(rv_open(c, rep, o, rv), 0);
	TEST_INTEQ(rv_put(rv, rep, "a", "A1", 2), 1);
	TEST_INTEQ(rv_put(rv, rep, "b", "B1", 2), 1);
	TEST_INTEQ(rv_put(rv, rep, "c", "C1", 2), 1);
}

static void test_dir_cache(struct ctx *c)
{
	struct rv_opts o = { .collection = "cached", .self = "node1", .max_bytes = 1024, .create = true };
	struct rendezvous rv;
	struct report rep;
	struct stat st;
	char *p;

	open_abc(c, &rep, &o, &rv);
	/* Without reuse_ms nothing is cached; with it, the first pass reads all, the next none. */
	KV_PASS(&rv, &rep, 0, "a=A1 b=B1 c=C1", 0);
	TEST_CHECK(rv.read_cache == NULL);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);
	/* Replaced by rename (as every writer does), the same size: read again. */
	TEST_INTEQ(rv_put(&rv, &rep, "b", "B2", 2), 1);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1", 2);
	/* Written in place, the same size, its modification time put back: the change time tells. */
	usleep(20000);  /* past the file clock's tick: a change time that differs */
	p = host("/share/.hpcinit/glo/cached/c");
	TEST_INTEQ(stat(p, &st), 0);
	{
		struct timespec t[2] = { st.st_atim, st.st_mtim };
		int fd = open(p, O_WRONLY);

		TEST_CHECK(fd >= 0 && pwrite(fd, "C2", 2, 0) == 2);
		close(fd);
		TEST_INTEQ(utimensat(AT_FDCWD, p, t, 0), 0);
	}
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C2", 2);
	/* A mode, an owner or a type that the checks refuse is refused, not given from the cache. */
	TEST_INTEQ(chmod(p, 0666), 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c:writable", 2);
	TEST_INTEQ(chmod(p, 0644), 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C2", 2);
	if (geteuid() == 0) {
		TEST_INTEQ(chown(p, 1000, 1000), 0);
		KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c:wrong-owner", 2);
		TEST_INTEQ(chown(p, 0, 0), 0);
	}
	TEST_INTEQ(unlink(p), 0);
	{
		char *secret = host("/etc-secret");

		TEST_INTEQ(symlink(secret, p), 0);
		free(secret);
	}
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c:symlink", 2);
	TEST_INTEQ(unlink(p), 0);
	free(p);
	/* Gone: not listed.  Past reuse_ms: read again. */
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2", 2);
	usleep(5000);
	KV_PASS(&rv, &rep, 2, "a=A1 b=B2", 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2", 2);
	rv_close(&rv);
	TEST_CHECK(rv.read_cache == NULL);

	/* Many entries: read and given on several threads (LIST_PAR_MIN), the cache grown. */
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), 0);
	for (unsigned i = 0; i < 700; i++) {
		char name[16], val[16];

		snprintf(name, sizeof(name), "n%03u", i);
		snprintf(val, sizeof(val), "v%u", i);
		TEST_INTEQ(rv_put(&rv, &rep, name, val, strlen(val)), 1);
	}
	{
		size_t r1, r2, r3;
		char *l1 = kv_pass(&rv, &rep, 60000, &r1), *l2 = kv_pass(&rv, &rep, 60000, &r2), *l3;

		TEST_STREQ(l1, l2);
		TEST_INTEQ(r1, 0);
		TEST_INTEQ(r2, 702);
		TEST_INTEQ(rv_put(&rv, &rep, "n123", "changed", 7), 1);
		l3 = kv_pass(&rv, &rep, 60000, &r3);
		TEST_INTEQ(r3, 701);
		TEST_CHECK(strstr(l3, "n123=changed") != NULL && strstr(l1, "n123=v123") != NULL);
		free(l1);
		free(l2);
		free(l3);
	}
	/*
	 * With prep_copy the cache keeps each entry's prep: an unchanged entry
	 * comes with a copy of it, prep is not called again; a changed one is
	 * read and prepped.  Every prep and copy freed (ASan and valgrind count).
	 */
	{
		struct cp cp = { .mu = PTHREAD_MUTEX_INITIALIZER };
		struct rv_lister l = { .prep = cp_prep, .prep_free = free, .prep_copy = cp_copy, .each = cp_each,
				       .arg = &cp, .reuse_ms = 60000 };
		size_t pr0 = rv.read_cache->prep_reused;

		TEST_INTEQ(rv_list_prep(&rv, &rep, &l), 0);     /* cached without preps: prepped, kept now */
		TEST_INTEQ(cp.preps, 702);
		TEST_INTEQ(rv.read_cache->prep_reused - pr0, 0);
		TEST_INTEQ(rv_put(&rv, &rep, "n007", "again", 5), 1);
		TEST_INTEQ(rv_list_prep(&rv, &rep, &l), 0);     /* n007 read and prepped, the rest copied */
		TEST_INTEQ(cp.preps, 703);
		TEST_INTEQ(rv.read_cache->prep_reused - pr0, 701);
		TEST_INTEQ(rv_list_prep(&rv, &rep, &l), 0);
		TEST_INTEQ(cp.preps, 703);
		TEST_INTEQ(rv_put(&rv, &rep, "n008", "twice", 5), 1);
		TEST_INTEQ(rv_list_prep(&rv, &rep, &l), 0);
		TEST_INTEQ(rv_list_prep(&rv, &rep, &l), 0);
		TEST_INTEQ(cp.preps, 704);                      /* only n008 again, read after its change */
		TEST_INTEQ(rv.read_cache->prep_reused - pr0, 701 + 702 + 701 + 702);
		TEST_INTEQ(cp.eaches, 5 * 702);
		TEST_INTEQ(cp.wrong, 0);
		TEST_INTEQ(cp.copies, 704 + 701 + 702 + 701 + 702);   /* one kept a prep, one given a hit */
	}
	rv_close(&rv);
	report_free(&rep);
}

/*
 * A quiet directory: a pass over a directory whose times were settled (past
 * the directory's clock by RV_QUIET_MARGIN_S) keeps its names; while the
 * directory stays the same the next passes take them, readdir and the
 * entries' fstatat not called.  Any change to the directory ends that.
 */
/* The directory's clock as the probe read it (base), or as if read s seconds later. */
static void set_clock(struct rendezvous *rv, struct timespec base, int s)
{
	rv->dir_clock = base;
	rv->dir_clock.tv_sec += s;
}

static void test_dir_quiet(struct ctx *c)
{
	struct rv_opts o = { .collection = "quiet", .self = "node1", .max_bytes = 1024, .create = true };
	struct rendezvous rv;
	struct report rep;
	struct timespec base, n;
	int64_t now;
	char *p;

	open_abc(c, &rep, &o, &rv);
	/* No probe of the directory's clock in this run: never quiet. */
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 0);
	/* The real clock: probed (which changes the directory), then 2.6 s of quiet. */
	TEST_INTEQ(rv_dir_now(&rv, &now), 0);
	base = rv.dir_clock;
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);       /* not settled yet: kept nothing */
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 0);
	usleep(2600000);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);       /* settled: its names kept */
	TEST_INTEQ(rv.read_cache->quiet_passes, 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 2);
	/*
	 * A change in place leaves the directory as it was: a quiet pass gives
	 * the entry as checked when read (no fstatat: that is the saving).
	 */
	p = host("/share/.hpcinit/glo/quiet/c");
	TEST_INTEQ(chmod(p, 0666), 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B1 c=C1", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 3);
	/* Replaced by rename: the directory's times change, every entry is checked again. */
	TEST_INTEQ(rv_put(&rv, &rep, "b", "B2", 2), 1);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c:writable", 1);
	TEST_INTEQ(chmod(p, 0644), 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1", 2);        /* changed 0 s ago: not settled */
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 3);
	set_clock(&rv, base, 10);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1", 3);        /* kept */
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1", 3);        /* quiet */
	TEST_INTEQ(rv.read_cache->quiet_passes, 4);
	/* A name added: seen at once, and no pass kept until the directory settles. */
	set_clock(&rv, base, 0);
	TEST_INTEQ(rv_put(&rv, &rep, "d", "D1", 2), 1);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1 d=D1", 3);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1 d=D1", 4);
	TEST_INTEQ(rv.read_cache->quiet_passes, 4);
	set_clock(&rv, base, 10);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1 d=D1", 4);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 c=C1 d=D1", 4);
	TEST_INTEQ(rv.read_cache->quiet_passes, 5);
	/* One removed: gone at once (a full pass, kept: the clock says settled). */
	TEST_INTEQ(unlink(p), 0);
	free(p);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 5);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 6);
	/* A writer's temporary file is listed as one in a quiet pass too. */
	put_file("/share/.hpcinit/glo/quiet/e" RV_TMP_MARK "node9.x", "E", 0600, 0);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1 e.hpcinit-tmp.node9.x:temp", 3);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1 e.hpcinit-tmp.node9.x:temp", 3);
	TEST_INTEQ(rv.read_cache->quiet_passes, 7);
	/* Past reuse_ms a quiet pass reads the entries again (their names from the cache). */
	usleep(5000);
	KV_PASS(&rv, &rep, 2, "a=A1 b=B2 d=D1 e.hpcinit-tmp.node9.x:temp", 0);
	TEST_INTEQ(rv.read_cache->quiet_passes, 8);
	/*
	 * A clock read long ago counts for a tenth less: read 20 s ago as 17 s
	 * behind this machine's clock now, it says 1 s after now (not settled);
	 * 15 s behind, 3 s after (settled).
	 */
	TEST_INTEQ(rv_put(&rv, &rep, "f", "F1", 2), 1);
	TEST_INTEQ(clock_gettime(CLOCK_REALTIME, &n), 0);
	rv.dir_clock_ms = now_ms() - 20000;
	set_clock(&rv, n, -17);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1 e.hpcinit-tmp.node9.x:temp f=F1", 3);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1 e.hpcinit-tmp.node9.x:temp f=F1", 4);
	TEST_INTEQ(rv.read_cache->quiet_passes, 8);
	set_clock(&rv, n, -15);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1 e.hpcinit-tmp.node9.x:temp f=F1", 4);
	KV_PASS(&rv, &rep, 60000, "a=A1 b=B2 d=D1 e.hpcinit-tmp.node9.x:temp f=F1", 4);
	TEST_INTEQ(rv.read_cache->quiet_passes, 9);
	rv_close(&rv);
	report_free(&rep);
}

/*
 * rv_lister.recheck_ms: an entry checked (read or fstatat) less than
 * recheck_ms before, that readdir gives with the inode number it had then,
 * is given without its fstatat; a new inode (a rename) is read at once.
 */
#define RE_PASS(rv, rep, ms, want_line) do {                                                    \
		size_t reused_;                                                                 \
		char *line_ = kv_pass_with(rv, rep, 60000, ms, &reused_);                      \
		TEST_STREQ(line_, want_line);                                                   \
		free(line_);                                                                    \
	} while (0)

static void test_dir_recheck(struct ctx *c)
{
	struct rv_opts o = { .collection = "recheck", .self = "node1", .max_bytes = 1024, .create = true };
	struct rendezvous rv;
	struct report rep;
	char *p;

	report_init(&rep);
	TEST_INTEQ(rv_open(c, &rep, &o, &rv), 0);
	TEST_INTEQ(rv_put(&rv, &rep, "a", "A1", 2), 1);
	TEST_INTEQ(rv_put(&rv, &rep, "b", "B1", 2), 1);
	RE_PASS(&rv, &rep, 60000, "a=A1 b=B1");
	p = host("/share/.hpcinit/glo/recheck/b");
	/* Changed in place within recheck_ms: given as checked when read (no fstatat). */
	TEST_INTEQ(chmod(p, 0666), 0);
	RE_PASS(&rv, &rep, 60000, "a=A1 b=B1");
	/* Without recheck_ms every pass checks it: refused at once. */
	RE_PASS(&rv, &rep, 0, "a=A1 b:writable");
	TEST_INTEQ(chmod(p, 0644), 0);
	RE_PASS(&rv, &rep, 0, "a=A1 b=B1");
	/* Past recheck_ms: checked again, refused. */
	TEST_INTEQ(chmod(p, 0666), 0);
	RE_PASS(&rv, &rep, 60000, "a=A1 b=B1");
	usleep(5000);
	RE_PASS(&rv, &rep, 2, "a=A1 b:writable");
	TEST_INTEQ(chmod(p, 0644), 0);
	RE_PASS(&rv, &rep, 2, "a=A1 b=B1");
	/* A check starts recheck_ms again: 50 ms after it, 40 ms checks; at once after, it does not. */
	{
		size_t n0;

		usleep(50000);
		n0 = rv.read_cache->checked;
		RE_PASS(&rv, &rep, 40, "a=A1 b=B1");
		TEST_INTEQ(rv.read_cache->checked - n0, 2);
		RE_PASS(&rv, &rep, 40, "a=A1 b=B1");
		TEST_INTEQ(rv.read_cache->checked - n0, 2);
	}
	/* Replaced by rename within recheck_ms: a new inode, read at once. */
	TEST_INTEQ(rv_put(&rv, &rep, "b", "B2", 2), 1);
	RE_PASS(&rv, &rep, 60000, "a=A1 b=B2");
	/*
	 * Removed and made a symlink between two passes: ext4 may give the
	 * symlink the freed inode's number at once (test_dirlist caught it on
	 * this machine's root, under load), so readdir's number can be the
	 * cached one; its type is not.  Tried until that happens (at most 40
	 * times): every try must refuse the symlink.
	 */
	{
		char *secret = host("/etc-secret");
		int same = 0, tries = 0;

		while (tries < 40 && same < 3) {
			struct stat st0, st1;

			tries++;
			TEST_INTEQ(lstat(p, &st0), 0);
			TEST_INTEQ(unlink(p), 0);
			TEST_INTEQ(symlink(secret, p), 0);
			TEST_INTEQ(lstat(p, &st1), 0);
			same += st0.st_ino == st1.st_ino;
			RE_PASS(&rv, &rep, 60000, "a=A1 b:symlink");
			TEST_INTEQ(unlink(p), 0);
			put_file("/share/.hpcinit/glo/recheck/b", "B2", 0644, 0);
			RE_PASS(&rv, &rep, 60000, "a=A1 b=B2");
		}
		printf("# a symlink took the removed record's inode number in %d of %d tries\n", same, tries);
		free(secret);
	}
	/* Removed, or made a link (a new inode): never given from the cache. */
	{
		char *secret = host("/etc-secret");

		TEST_INTEQ(unlink(p), 0);
		RE_PASS(&rv, &rep, 60000, "a=A1");
		TEST_INTEQ(symlink(secret, p), 0);
		RE_PASS(&rv, &rep, 60000, "a=A1 b:symlink");
		TEST_INTEQ(unlink(p), 0);
		free(secret);
	}
	free(p);
	rv_close(&rv);
	report_free(&rep);
}

int main(void)
{
	struct spec spec = { 0 };
	struct outputs out = { 0 };
	struct ctx c = { .spec = &spec, .mode = RUN_APPLY, .hostname = "node1", .out = &out };
	char *p;

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
	put_file("/etc-secret", "root-only secret\n", 0600, 0);   /* what a planted link points to */

	test_dir_parallel(&c);
	test_dir_cache(&c);
	test_dir_quiet(&c);
	test_dir_recheck(&c);

	test_rm_rf(root);
	TEST_EXIT();
}
