/* SPDX-License-Identifier: MIT */
/*
 * Reading the shared directory's collection (dir.c makes and trusts its
 * levels): one entry, through one O_NOFOLLOW|O_NONBLOCK descriptor whose
 * type, owner, mode and size are checked before it is read, opened again
 * after ESTALE; and a list (rv_list, rv_list_prep on the dir backend):
 * names read in batches, the entries read (and prepped) on up to
 * RV_LIST_THREADS threads, the lister's callbacks in readdir's order.
 *
 * A run that lists the collection again and again (a node waiting for
 * discovery.expect) asks for what it read to be cached (rv_lister.reuse_ms):
 * an entry whose file is still the one read -- device, inode, size, change
 * and modification times, owner and mode, as one fstatat sees them -- is
 * given from the cache, not opened and read again, for at most reuse_ms
 * after it was read; with the lister's prep_copy, a copy of its prep too
 * (discovery: the record parsed and its HMAC checked), not made again.
 * Writers replace entries by rename, and any write, chown or chmod sets the
 * change time, which only the kernel sets; so what is checked is still what
 * was read.  The bound covers a client whose cached attributes lag the
 * server's (NFS revalidates them on open, not on stat).
 *
 * A directory that has not changed is not listed again (a quiet pass): a
 * pass that began with the directory's times settled -- older, by
 * RV_QUIET_MARGIN_S, than the directory's own clock then (rv_dir_now's
 * probe, counted on by this node's clock less a tenth) -- and ended with
 * the directory as it began keeps its names; a later pass that finds the
 * directory the same (device, inode, size, links, owner, mode, change and
 * modification times: one fstat) takes them, readdir not called, and gives
 * each cached entry without its fstatat.  Any name added, removed or
 * replaced by rename changes the directory's times, and a change made after
 * the first fstat carries a later time than the settled one.  What a quiet
 * pass does not see is a cached file changed in place (chmod, chown, a
 * write): its entry is the one checked when read, given until reuse_ms ends
 * or the directory changes.
 *
 * While the directory changes (nodes arriving), a lister's recheck_ms
 * spares most of the fstatat calls: an entry checked (read, or its fstatat)
 * less than recheck_ms before, that readdir gives as a regular file with
 * the inode number it had then, is given as it was.  A writer's rename puts
 * a new inode under the name, which readdir shows; what readdir cannot show
 * -- a change in place, or a name replaced twice with its first inode's
 * number used again -- is seen at the first pass recheck_ms after the last
 * check.  So an
 * entry a list gives is at most recheck_ms older than the file, no more.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "rendezvous.h"
#include "dirlist.h"

static ssize_t read_fd(int fd, char *buf, size_t size, size_t max)
{
	size_t got = 0;

	while (got < size) {
		ssize_t n = read(fd, buf + got, max + 1 - got);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (n == 0)
			break;
		got += (size_t)n;
		if (got > max)
			return -EFBIG;
	}
	return (ssize_t)got;
}

/* e->why points into why[256]: the caller's, so that threads read entries side by side. */
static int refuse(struct rv_entry *e, char *why, const char *tag, int r, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static int refuse(struct rv_entry *e, char *why, const char *tag, int r, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, RV_WHY_LEN, fmt, ap);
	va_end(ap);
	e->refused = tag;
	e->why = why;
	return r;
}

/* stout (optional): the stat of the descriptor read, when the entry was read (0). */
int rv_dir_read_entry_at(int dfd, const char *name, const struct rv_tree *t, bool reown, size_t max,
		      struct rv_entry *e, char **ret, char *why, struct stat *stout)
{
	struct stat st;
	ssize_t len;
	char *buf;
	int fd, stale = 0;

	*ret = NULL;
	e->name = name;
	/*
	 * Back here when the file went stale under us: its writer replaced it
	 * by rename on another NFS client, so the handle this client held
	 * names an inode the server has deleted (ESTALE from open, fstat or
	 * read).  The name now holds the new entry: open it again.
	 */
reopen:
	fd = openat(dfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY);
	if (fd < 0) {
		int err = errno;

		if (err == ESTALE && ++stale < RV_STALE_TRIES)
			goto reopen;
		if (err == ELOOP)
			return refuse(e, why, "symlink", -ELOOP, "is a symbolic link");
		if (err == ENOENT)
			return -ENOENT;         /* removed meanwhile */
		return refuse(e, why, "unreadable", -err, "cannot open: %s", strerror(err));
	}
	if (fstat(fd, &st) < 0) {
		int err = errno;

		close(fd);
		if (err == ESTALE && ++stale < RV_STALE_TRIES)
			goto reopen;
		return refuse(e, why, "unreadable", -err, "cannot stat: %s", strerror(err));
	}
	e->mtime = (int64_t)st.st_mtime;
	e->reowned = false;
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return refuse(e, why, "not-a-file", -EPERM, "not a regular file");
	}
	if (st.st_uid == 0 && t->head_squash && st.st_uid != t->trusted) {
		/*
		 * On the head's own squashed export only root on this node writes
		 * as root: an entry from before the export squashed root (or from
		 * an older hpcinit).  apply gives it to the trusted writer, on the
		 * descriptor that was checked.
		 */
		if (reown && fchown(fd, t->trusted, t->trusted_gid) == 0)
			e->reowned = true;
	} else if (st.st_uid != t->trusted) {
		close(fd);
		return refuse(e, why, "wrong-owner", -EPERM, "owned by uid %u, not by the trusted writer "
			      "(uid %u%s)", (unsigned)st.st_uid, (unsigned)t->trusted,
			      t->squashed ? ", root squashed" : ", root");
	}
	if (st.st_mode & (S_IWGRP | S_IWOTH)) {
		close(fd);
		return refuse(e, why, "writable", -EPERM, "writable by group or others (mode %04o)",
			      (unsigned)(st.st_mode & 07777));
	}
	if ((uint64_t)st.st_size > max) {
		close(fd);
		return refuse(e, why, "too-large", -EFBIG, "%lld bytes, over the %zu-byte limit",
			      (long long)st.st_size, max);
	}
	/* Sized by the file, not the limit: 10,000 records of 2 KiB are read in 2 KiB buffers. */
	buf = xmalloc((size_t)st.st_size + 2);
	len = read_fd(fd, buf, (size_t)st.st_size, (size_t)st.st_size + 1);
	if (len == -EFBIG)
		len = -EAGAIN;  /* it grew while read: written in place, not replaced by rename */
	close(fd);
	if (len == -ESTALE && ++stale < RV_STALE_TRIES) {
		free(buf);
		goto reopen;
	}
	if (len < 0) {
		free(buf);
		return refuse(e, why, "unreadable", (int)len, "cannot read: %s", strerror((int)-len));
	}
	buf[len] = '\0';
	e->value = buf;
	e->len = (size_t)len;
	*ret = buf;
	if (stout)
		*stout = st;
	return 0;
}

int rv_dir_read_entry(int dfd, const char *name, const struct rv_tree *t, bool reown, size_t max,
		      struct rv_entry *e, char **ret)
{
	static char why[RV_WHY_LEN];

	return rv_dir_read_entry_at(dfd, name, t, reown, max, e, ret, why, NULL);
}

int rv_dir_open_coll(const struct rendezvous *rv, DIR **ret)
{
	char *hp = ctx_path(rv->c, rv->tree.levels[2]);
	int fd = open(hp, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);

	free(hp);
	if (fd < 0)
		return -errno;
	*ret = fdopendir(fd);
	if (!*ret) {
		int r = -errno;

		close(fd);
		return r;
	}
	return 0;
}

/* ---- the read cache: what earlier passes of this run read, by name (open addressing) ---- */
struct rv_cached {
	char *name;                     /* NULL: an empty slot */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtim, ctim;
	uid_t uid;
	mode_t mode;
	uint64_t read_ms;               /* the start of the pass that read it (CLOCK_MONOTONIC) */
	uint64_t checked_ms;            /* ... that last read or fstatat it */
	ino_t d_ino;                    /* readdir's inode number for it then (0: none given) */
	char *val;
	size_t len;
	void *prep;                     /* the lister's prep of it (a copy: prep_copy), or NULL */
};

struct rv_read_cache {
	struct rv_cached *v;
	size_t cap, n;                  /* cap: a power of two, at least twice n */
	size_t reused;                  /* entries given from here (tests, benches) */
	size_t prep_reused;             /* of them, with their prep copied, not made again */
	void (*prep_free)(void *);      /* the lister's, for the preps kept */
	/* the last pass that can stand for the next while the directory stays as it began */
	bool quiet;
	struct stat quiet_dir;          /* the directory's fstat as that pass began */
	struct strbuf quiet_names;      /* its names (not ".*"), NUL-separated, in readdir's order */
	size_t quiet_passes;            /* passes that took them (tests, benches) */
	size_t passes;                  /* passes with this cache */
	size_t checked;                 /* hits whose file a pass checked by fstatat (tests) */
};

static size_t cache_slot(const struct rv_read_cache *k, const char *name)
{
	uint64_t h = 14695981039346656037ULL;   /* FNV-1a */
	size_t i;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 1099511628211ULL;
	for (i = (size_t)h & (k->cap - 1); k->v[i].name && strcmp(k->v[i].name, name) != 0;
	     i = (i + 1) & (k->cap - 1))
		;
	return i;
}

static struct rv_cached *cache_find(const struct rv_read_cache *k, const char *name)
{
	struct rv_cached *e = k->cap ? &k->v[cache_slot(k, name)] : NULL;

	return e && e->name ? e : NULL;
}

static bool cache_same(const struct rv_cached *e, const struct stat *st)
{
	return S_ISREG(st->st_mode) && e->dev == st->st_dev && e->ino == st->st_ino &&
	       e->size == st->st_size && e->uid == st->st_uid && e->mode == st->st_mode &&
	       e->mtim.tv_sec == st->st_mtim.tv_sec && e->mtim.tv_nsec == st->st_mtim.tv_nsec &&
	       e->ctim.tv_sec == st->st_ctim.tv_sec && e->ctim.tv_nsec == st->st_ctim.tv_nsec;
}

static void cached_clear(const struct rv_read_cache *k, struct rv_cached *e)
{
	free(e->val);
	if (e->prep && k->prep_free)
		k->prep_free(e->prep);
	e->val = NULL;
	e->prep = NULL;
}

/* Keep val and prep (taken) as name's entry, read from the file st describes. */
static void cache_put(struct rv_read_cache *k, const char *name, const struct stat *st, ino_t d_ino, char *val,
		      size_t len, void *prep, uint64_t read_ms)
{
	struct rv_cached *e;

	if (2 * (k->n + 1) > k->cap) {
		struct rv_read_cache old = *k;

		k->cap = k->cap ? 2 * k->cap : 64;
		k->v = xcalloc(k->cap, sizeof(*k->v));
		for (size_t i = 0; i < old.cap; i++)
			if (old.v[i].name)
				k->v[cache_slot(k, old.v[i].name)] = old.v[i];
		free(old.v);
	}
	e = &k->v[cache_slot(k, name)];
	if (e->name) {
		cached_clear(k, e);
	} else {
		e->name = xstrdup(name);
		k->n++;
	}
	e->dev = st->st_dev;
	e->ino = st->st_ino;
	e->size = st->st_size;
	e->mtim = st->st_mtim;
	e->ctim = st->st_ctim;
	e->uid = st->st_uid;
	e->mode = st->st_mode;
	e->read_ms = read_ms;
	e->checked_ms = read_ms;
	e->d_ino = d_ino;
	e->val = val;
	e->len = len;
	e->prep = prep;
}

void rv_dir_list_stats(const struct rendezvous *rv, struct rv_list_stats *ret)
{
	const struct rv_read_cache *k = rv->read_cache;

	*ret = (struct rv_list_stats){ 0 };
	if (k)
		*ret = (struct rv_list_stats){ .passes = k->passes, .quiet = k->quiet_passes, .reused = k->reused };
}

void rv_read_cache_free(struct rv_read_cache *k)
{
	if (!k)
		return;
	for (size_t i = 0; i < k->cap; i++) {
		free(k->v[i].name);
		cached_clear(k, &k->v[i]);
	}
	free(k->v);
	sb_free(&k->quiet_names);
	free(k);
}

/*
 * One pass over the collection, in batches of LIST_BATCH names: the names
 * first (readdir and want, on this thread), then the entries read -- and
 * prepped, when the lister has prep -- on up to RV_LIST_THREADS threads
 * (opening, checking and reading 10,000 small files is most of a refresh
 * at that size, and each entry is independent), then each, on this thread
 * in readdir's order.  Names starting with "." (probes) are skipped;
 * fs_write's temporary files come with refused "temp" and their file time,
 * for the caller to prune; a name want declines is never opened.
 */
#define LIST_BATCH 1024
#define LIST_PAR_MIN 128                /* a smaller batch is read on this thread alone */

struct slot {
	size_t name_off;                /* in the batch's name pool */
	bool temp;
	bool hit;                       /* given from the cache: val is the cache's */
	bool prep_hit;                  /* and its prep a copy of the cache's */
	bool checked;                   /* and its file checked by fstatat in this pass */
	ino_t d_ino;                    /* readdir's inode number (0: none given, or a quiet pass) */
	int r;
	char *val;
	void *cache_prep;               /* the copy of its prep the cache will keep */
	struct stat st;                 /* with a cache: the descriptor read */
	struct rv_entry e;
	char why[RV_WHY_LEN];
};

struct batch {
	const struct ctx *c;
	struct slot *s;
	size_t n;
	struct strbuf names;
	int dfd;
	const struct rv_tree *t;
	bool reown;
	size_t max;
	const struct rv_lister *l;
	struct rv_read_cache *cache;    /* NULL: nothing cached (reuse_ms 0); read-only while reading */
	uint64_t start_ms;              /* the pass's start */
	bool quiet;                     /* a quiet pass: the directory as the cache's names were read */
	size_t next;                    /* the next slot to read: taken atomically */
};

/* The slot's entry from the cache, when its file is the one read within reuse_ms (any thread). */
static bool reuse(const struct batch *b, struct slot *s)
{
	const struct rv_cached *k = cache_find(b->cache, s->e.name);
	struct stat st;

	if (!k || b->start_ms - k->read_ms >= b->l->reuse_ms || k->uid != b->t->trusted)
		return false;
	/*
	 * No fstatat in a quiet pass (the directory unchanged since a pass
	 * that saw this entry), nor for an entry checked within recheck_ms
	 * that readdir gives as a regular file with the inode number it had
	 * then (next_name).
	 */
	if (!b->quiet && !(b->l->recheck_ms && s->d_ino && s->d_ino == k->d_ino &&
			   b->start_ms - k->checked_ms < b->l->recheck_ms)) {
		if (fstatat(b->dfd, s->e.name, &st, AT_SYMLINK_NOFOLLOW) < 0 || !cache_same(k, &st))
			return false;   /* gone, changed or not the same: read as any other */
		s->checked = true;
	}
	s->hit = true;
	s->r = 0;
	s->val = k->val;
	s->e.value = k->val;
	s->e.len = k->len;
	s->e.mtime = (int64_t)k->mtim.tv_sec;
	if (k->prep && b->l->prep_copy) {
		s->e.prep = b->l->prep_copy(b->l->arg, k->prep);
		s->prep_hit = true;
	}
	return true;
}

static void read_slot(struct batch *b, struct slot *s)
{
	if (s->temp)
		return;
	if (!b->cache || !reuse(b, s))
		s->r = rv_dir_read_entry_at(b->dfd, s->e.name, b->t, b->reown, b->max, &s->e, &s->val, s->why,
				  b->cache ? &s->st : NULL);
	if (s->r == 0 && b->l->prep && !s->e.prep) {
		s->e.prep = b->l->prep(b->l->arg, &s->e);
		if (b->cache && s->e.prep && b->l->prep_copy)
			s->cache_prep = b->l->prep_copy(b->l->arg, s->e.prep);
	}
}

static void batch_work(struct batch *b)
{
	size_t i;

	while ((i = __atomic_fetch_add(&b->next, 1, __ATOMIC_RELAXED)) < b->n)
		read_slot(b, &b->s[i]);
}

static void *batch_worker(void *arg)
{
	struct batch *b = arg;

	batch_work(b);
	if (b->l->thread_end)
		b->l->thread_end();
	return NULL;
}

/* As many threads as this process may run on, up to RV_LIST_THREADS. */
static unsigned list_threads(void)
{
	cpu_set_t set;
	int n;

	if (sched_getaffinity(0, sizeof(set), &set) < 0)
		return 1;
	n = CPU_COUNT(&set);
	return n < 1 ? 1 : n > RV_LIST_THREADS ? RV_LIST_THREADS : (unsigned)n;
}

/* Read (and prep) every slot of the batch; the workers block every signal: they are this thread's. */
static void batch_read(struct batch *b, unsigned threads)
{
	pthread_t tid[RV_LIST_THREADS];
	unsigned started = 0;

	for (size_t i = 0; i < b->n; i++)
		b->s[i].e.name = b->names.buf + b->s[i].name_off;
	b->next = 0;
	if (threads > 1 && b->n >= LIST_PAR_MIN) {
		sigset_t all, old;

		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, &old);
		for (unsigned i = 1; i < threads; i++)
			if (pthread_create(&tid[started], NULL, batch_worker, b) == 0)
				started++;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	batch_work(b);
	for (unsigned i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
}

/*
 * each for every slot, in order; after a stop, only frees.  The first
 * non-zero return.  What was read goes into the cache only after every
 * each of the batch: a name readdir gave twice (a directory changed while
 * listed) replaces no value an earlier slot still lends.
 */
static int batch_each(struct batch *b, int stop)
{
	for (size_t i = 0; i < b->n; i++) {
		struct slot *s = &b->s[i];

		if (!stop && (s->temp || s->r != -ENOENT || s->e.refused))
			stop = b->l->each(b->l->arg, &s->e);
		else if (s->e.prep && b->l->prep_free)
			b->l->prep_free(s->e.prep);
	}
	for (size_t i = 0; i < b->n; i++) {
		struct slot *s = &b->s[i];

		if (s->hit) {
			/* looked up only for a prep to keep or a check to note: most hits need no lookup */
			struct rv_cached *k = s->cache_prep || s->checked ? cache_find(b->cache, s->e.name) : NULL;

			if (k && s->checked) {
				k->checked_ms = b->start_ms;
				k->d_ino = s->d_ino;
			}
			b->cache->checked += s->checked;
			b->cache->reused++;
			b->cache->prep_reused += s->prep_hit;
			if (k && !k->prep)
				k->prep = s->cache_prep;        /* cached before it had a prep */
			else if (s->cache_prep && b->l->prep_free)
				b->l->prep_free(s->cache_prep);
		} else if (b->cache && s->r == 0 && s->val && !s->e.reowned) {
			cache_put(b->cache, s->e.name, &s->st, s->d_ino, s->val, s->e.len, s->cache_prep, b->start_ms);
		} else {
			free(s->val);
			if (s->cache_prep && b->l->prep_free)
				b->l->prep_free(s->cache_prep);
		}
	}
	b->n = 0;
	sb_reset(&b->names);
	return stop;
}

/*
 * Add the name to the batch: a temporary file with its time, else a name to
 * read.  This node's own temporary files are leftovers of a killed run
 * (writers hold the run lock, as fs_write's own clean-up assumes): removed,
 * since rv_put does not look for them (FS_KEEP_TEMPS).
 */
static void batch_add(struct batch *b, const char *name, ino_t d_ino)
{
	struct slot *s;
	struct stat st;

	if (strstr(name, RV_TMP_MARK) && b->reown && fs_is_own_temp(b->c, name)) {
		(void)unlinkat(b->dfd, name, 0);
		return;
	}
	s = &b->s[b->n++];

	memset(s, 0, sizeof(*s));
	s->name_off = b->names.len;
	s->d_ino = d_ino;
	sb_appendn(&b->names, name, strlen(name) + 1);
	if (!strstr(name, RV_TMP_MARK))
		return;
	s->temp = true;
	s->e.refused = "temp";
	s->e.why = "a writer's temporary file";
	if (fstatat(b->dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		b->n--;         /* gone meanwhile */
	else
		s->e.mtime = (int64_t)st.st_mtime;
}

#define RV_QUIET_MARGIN_S 2              /* over any file system's time granularity (FAT's 2 s) */

static int64_t ts_ns(const struct timespec *t)
{
	return (int64_t)t->tv_sec * 1000000000 + t->tv_nsec;
}

/*
 * Whether a change to the directory after st was read at at_ms (now_ms())
 * shows in its times: the directory's clock then -- at least the probe's
 * time plus what this node's clock counted since, less a tenth for a clock
 * slewed back -- was past both of st's times by RV_QUIET_MARGIN_S.  No probe
 * this run: never.
 */
static bool quiet_settled(const struct rendezvous *rv, const struct stat *st, uint64_t at_ms)
{
	int64_t since, clock_ns, newest;

	if (!rv->dir_clock_ms || at_ms < rv->dir_clock_ms)
		return false;
	since = (int64_t)(at_ms - rv->dir_clock_ms);
	clock_ns = ts_ns(&rv->dir_clock) + (since - since / 10) * 1000000;
	newest = ts_ns(&st->st_mtim) > ts_ns(&st->st_ctim) ? ts_ns(&st->st_mtim) : ts_ns(&st->st_ctim);
	return newest + (int64_t)RV_QUIET_MARGIN_S * 1000000000 <= clock_ns;
}

static bool dir_same(const struct stat *a, const struct stat *b)
{
	return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
	       a->st_nlink == b->st_nlink && a->st_uid == b->st_uid && a->st_mode == b->st_mode &&
	       ts_ns(&a->st_mtim) == ts_ns(&b->st_mtim) && ts_ns(&a->st_ctim) == ts_ns(&b->st_ctim);
}

/*
 * The next name of the pass and its inode number (0: not given): readdir's,
 * or (a quiet pass) the cache's next; NULL at the end (errno).
 */
static const char *next_name(struct batch *b, DIR *d, size_t *at, ino_t *ino)
{
	struct dirent *de;

	*ino = 0;
	if (b->quiet) {
		const struct strbuf *q = &b->cache->quiet_names;
		const char *name;

		errno = 0;
		if (*at >= q->len)
			return NULL;
		name = q->buf + *at;
		*at += strlen(name) + 1;
		return name;
	}
	errno = 0;
	de = readdir(d);
	if (!de)
		return NULL;
	/*
	 * Only a regular file's number spares the fstatat (reuse): a name
	 * removed and made again, as a symlink say, may get the freed inode's
	 * number at once (seen here: test_dirlist under load), and its type
	 * is what readdir can still tell at no cost.  DT_UNKNOWN: checked.
	 */
	*ino = de->d_type == DT_REG ? de->d_ino : 0;
	return de->d_name;
}

int rv_dir_list_prep(struct rendezvous *rv, struct report *rep, const struct rv_lister *l)
{
	struct batch b = { .c = rv->c, .t = &rv->tree, .reown = ctx_may_write(rv->c), .max = rv->o.max_bytes,
			   .l = l };
	unsigned threads = list_threads();
	struct strbuf seen = STRBUF_INIT;  /* a full pass's names, for the passes after it */
	struct stat before;
	bool keep = false;
	const char *name;
	size_t at = 0;
	ino_t ino;
	int r = 0, err;
	DIR *d;

	(void)rep;
	if ((r = rv_dir_open_coll(rv, &d)) < 0)
		return r;
	b.dfd = dirfd(d);
	if (l->reuse_ms) {
		if (!rv->read_cache)
			rv->read_cache = xcalloc(1, sizeof(*rv->read_cache));
		b.cache = rv->read_cache;
		if (l->prep_copy)
			b.cache->prep_free = l->prep_free;
		if (fstat(b.dfd, &before) == 0) {
			b.quiet = b.cache->quiet && dir_same(&before, &b.cache->quiet_dir);
			keep = !b.quiet && quiet_settled(rv, &before, now_ms());
		}
		if (!b.quiet)
			b.cache->quiet = false;
		b.cache->quiet_passes += b.quiet;
		b.cache->passes++;
		b.start_ms = now_ms();
	}
	b.s = xmalloc(LIST_BATCH * sizeof(*b.s));
	for (;;) {
		name = next_name(&b, d, &at, &ino);
		err = errno;
		if (name && name[0] != '.') {
			if (keep)
				sb_appendn(&seen, name, strlen(name) + 1);
			if (strstr(name, RV_TMP_MARK) || !l->want || l->want(l->arg, name))
				batch_add(&b, name, ino);
		}
		if (b.n == LIST_BATCH || (!name && b.n)) {
			batch_read(&b, threads);
			if ((r = batch_each(&b, 0)) != 0)
				break;
		}
		if (!name) {
			r = err ? -err : 0;
			break;
		}
	}
	/* A whole pass over a settled directory that did not change meanwhile: the next may stand on it. */
	if (keep && r == 0 && fstat(b.dfd, &b.cache->quiet_dir) == 0 && dir_same(&before, &b.cache->quiet_dir)) {
		sb_free(&b.cache->quiet_names);
		b.cache->quiet_names = seen;
		b.cache->quiet = true;
	} else {
		sb_free(&seen);
	}
	free(b.s);
	sb_free(&b.names);
	closedir(d);
	return r;
}
