/* SPDX-License-Identifier: MIT */
/*
 * What a watcher of a collection reads (hpcinit watch): etcd's stream of
 * the collection, kept as the membership it describes, with the lease kept
 * alive beside it; the shared directory's names, summed, for a poll.
 *
 * The stream is the helper's "watch" (rv_watch): "reset", every key,
 * "synced", then "kv"/"del" per change (etcd-proto.h).  This file is its
 * one reader; the watcher only polls its descriptors and asks for the
 * membership in the helper's list format.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "escape.h"
#include "fsutil.h"
#include "rendezvous.h"

static void members_clear(struct rv_stream *m)
{
	for (size_t i = 0; i < m->n; i++) {
		free(m->key[i]);
		free(m->item[i]);
	}
	m->n = 0;
	m->stale = true;
	m->synced = false;
}

/* FNV-1a of a key's bytes (the keys of one prefix differ in their last bytes). */
static size_t key_hash(const char *k, size_t kl)
{
	uint64_t h = 14695981039346656037ULL;

	for (size_t i = 0; i < kl; i++)
		h = (h ^ (unsigned char)k[i]) * 1099511628211ULL;
	return (size_t)h;
}

static void index_put(struct rv_stream *m, size_t i)
{
	size_t s = key_hash(m->key[i], strlen(m->key[i])) & (m->slots - 1);

	while (m->slot[s])
		s = (s + 1) & (m->slots - 1);
	m->slot[s] = i + 1;
}

/* The index of every key, built again (at most half full). */
static void index_build(struct rv_stream *m)
{
	size_t want = 64;

	while (want < 2 * m->cap)
		want *= 2;
	if (want != m->slots) {
		free(m->slot);
		m->slot = xmalloc(want * sizeof(*m->slot));
		m->slots = want;
	}
	memset(m->slot, 0, m->slots * sizeof(*m->slot));
	for (size_t i = 0; i < m->n; i++)
		index_put(m, i);
	m->stale = false;
}

/*
 * Key k's index, m->n when it has none.  Through a hash index: a linear
 * search (with a strlen of every key) made a watch's start on 10,000 keys
 * 50 million comparisons.
 */
static size_t members_find(struct rv_stream *m, const char *k, size_t kl)
{
	if (m->stale || !m->slot || m->slots < 2 * m->cap)
		index_build(m);
	for (size_t s = key_hash(k, kl) & (m->slots - 1); m->slot[s]; s = (s + 1) & (m->slots - 1)) {
		const char *have = m->key[m->slot[s] - 1];

		if (memcmp(have, k, kl) == 0 && have[kl] == '\0' && !memchr(k, '\0', kl))
			return m->slot[s] - 1;
	}
	return m->n;
}

static void members_put(struct rv_stream *m, const char *k, size_t kl, const char *item, size_t len)
{
	size_t i = members_find(m, k, kl);

	if (i == m->n) {
		if (m->n == m->cap) {
			m->cap = m->cap ? 2 * m->cap : 64;
			m->key = xrealloc(m->key, m->cap * sizeof(*m->key));
			m->item = xrealloc(m->item, m->cap * sizeof(*m->item));
			m->item_len = xrealloc(m->item_len, m->cap * sizeof(*m->item_len));
		}
		m->key[m->n] = xstrndup(k, kl);
		m->item[m->n] = NULL;
		m->n++;
		if (m->stale || !m->slot || m->slots < 2 * m->cap)
			index_build(m);
		else
			index_put(m, m->n - 1);
	}
	free(m->item[i]);
	m->item[i] = xmalloc(len);
	memcpy(m->item[i], item, len);
	m->item_len[i] = len;
}

static void members_del(struct rv_stream *m, const char *k, size_t kl)
{
	size_t i = members_find(m, k, kl);

	if (i == m->n)
		return;
	free(m->key[i]);
	free(m->item[i]);
	m->stale = true;
	m->n--;
	m->key[i] = m->key[m->n];
	m->item[i] = m->item[m->n];
	m->item_len[i] = m->item_len[m->n];
}

void rv_stream_text(const struct rv_stream *m, struct strbuf *out)
{
	sb_reset(out);
	for (size_t i = 0; i < m->n; i++)
		sb_appendn(out, m->item[i], m->item_len[i]);
}

void rv_stream_feed(struct rv_stream *m, const char *buf, size_t n, unsigned *changes)
{
	const char *start, *p, *end;
	struct rv_frame f;
	size_t used;

	sb_appendn(&m->in, buf, n);
	start = p = sb_str(&m->in);
	end = p + m->in.len;
	while (rv_frame_next(&p, end, &f)) {
		if (f.kind == RV_F_KV) {
			members_put(m, f.key, f.key_len, p - f.size, f.size);
		} else if (f.kind == RV_F_DEL) {
			members_del(m, f.key, f.key_len);
		} else if (f.line_len == 5 && !memcmp(f.line, "reset", 5)) {
			members_clear(m);
		} else if (f.line_len == 6 && !memcmp(f.line, "synced", 6)) {
			m->synced = true;
			(*changes)++;
		}
	}
	used = (size_t)(p - start);
	if (used) {
		memmove(m->in.buf, m->in.buf + used, m->in.len - used + 1);
		m->in.len -= used;
	}
}

int rv_stream_start(const struct ctx *c, const char *collection, struct rv_stream *m)
{
	sb_reset(&m->in);
	sb_reset(&m->err_line);
	int r = rv_watch(c, collection, &m->ch);

	members_clear(m);
	m->running = r == 0;
	return r;
}

void rv_stream_stop(struct rv_stream *m)
{
	if (m->running && m->ch.pid > 0) {
		kill(-m->ch.pid, SIGTERM);
		(void)waitpid(m->ch.pid, NULL, 0);
		m->ch.pid = 0;
	}
	if (m->running)
		proc_child_free(&m->ch);
	m->running = false;
	members_clear(m);
}

void rv_stream_free(struct rv_stream *m)
{
	rv_stream_stop(m);
	free(m->key);
	free(m->item);
	free(m->item_len);
	free(m->slot);
	sb_free(&m->in);
	sb_free(&m->err_line);
	memset(m, 0, sizeof(*m));
}

bool rv_stream_read(struct rv_stream *m, unsigned *changes)
{
	char buf[65536];
	ssize_t n = read(m->ch.out_fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0)
		return false;
	rv_stream_feed(m, buf, (size_t)n, changes);
	return true;
}

bool rv_stream_read_err(struct rv_stream *m, struct strlist *lines)
{
	char buf[4096];
	ssize_t n = read(m->ch.err_fd, buf, sizeof(buf));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN;
	if (n == 0) {
		close(m->ch.err_fd);
		m->ch.err_fd = -1;
		return false;
	}
	for (ssize_t i = 0; i < n; i++) {
		struct strbuf safe = STRBUF_INIT;

		if (buf[i] != '\n') {
			if (m->err_line.len < 4096)
				sb_appendn(&m->err_line, &buf[i], 1);
			continue;
		}
		/* The helper's line, escaped as the agent escapes everything from elsewhere. */
		esc_append(&safe, sb_str(&m->err_line), m->err_line.len, false);
		strlist_push(lines, sb_str(&safe));
		sb_free(&safe);
		sb_reset(&m->err_line);
	}
	return true;
}

/* ---- the lease, kept alive beside the stream ---- */

bool rv_keeper_tick(struct rv_keeper *k, struct strbuf *err)
{
	int64_t lease;

	if (now_ms() < k->next)
		return false;
	lease = rv_etcd_lease(k->c);
	if (!lease || rv_etcd_keepalive(k->c, lease, err) == 0)
		k->gone = true;
	k->next = now_ms() + k->every;
	return true;
}

/* ---- the shared directory: its names, for a poll ---- */

int rv_dir_names_sum(const struct ctx *c, const char *collection, const char *suffix, uint64_t *ret)
{
	char *rel = xasprintf("%s/%s/%s", c->spec->discovery.dir, c->spec->cluster.name, collection);
	char *hp = ctx_path(c, rel);
	DIR *d = opendir(hp);
	struct dirent *de;
	uint64_t sum = 0, n = 0;
	size_t sl = strlen(suffix);

	free(rel);
	free(hp);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);
		uint64_t h = 1469598103934665603ULL;

		if (de->d_name[0] == '.' || l <= sl || strcmp(de->d_name + l - sl, suffix) != 0)
			continue;
		for (size_t i = 0; i < l; i++)
			h = (h ^ (unsigned char)de->d_name[i]) * 1099511628211ULL;
		sum += h;
		n++;
	}
	closedir(d);
	*ret = sum ^ (n * 0x9e3779b97f4a7c15ULL);
	return 0;
}
