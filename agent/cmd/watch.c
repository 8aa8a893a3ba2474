/* SPDX-License-Identifier: MIT */
/*
 * hpcinit watch: a long-running, low-memory process that keeps this node's
 * membership fresh and re-applies discovery, ssh and hostfile (the refresh)
 * when the membership changes, so a join or a leave reaches every node in
 * about a second instead of at the next timer run.
 *
 *  - etcd: the helper's "watch" streams the membership under the cluster's
 *    prefix: the whole of it when it starts (and again after a reconnect
 *    or a compacted revision, when events may have been missed), then each
 *    put and deletion.  This process keeps that membership; a batch of
 *    changes is debounced (DEBOUNCE_MS), then one refresh runs on it
 *    without asking etcd again (rv_etcd_view_set: no list, and no put
 *    while etcd holds this node's record unchanged), so a join or a leave
 *    costs every watcher no request and no helper process.
 *    The lease is renewed every third of its TTL by the helper's
 *    "keepalive": O(1) work a node, however large the cluster; a lease
 *    found gone (etcd unreachable for longer than the TTL) is replaced by a
 *    refresh, which grants a new one and puts the record again.
 *  - shared: the nodes directory is listed every POLL_MS (names only: a
 *    join or a leave adds or removes a file); a new name set triggers a
 *    refresh, and a refresh every third of the lease keeps this node's
 *    record fresh and prunes expired ones.
 *
 * The stream, the lease's keepalive and the directory's names are
 * lib/rendezvous's (stream.c), Scheduled Events lib/metadata's: this file
 * keeps the loop (wait, debounce, refresh through the runner, notify).
 * The watch process itself is the agent (no libcurl, no json-c).
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "escape.h"
#include "fsutil.h"
#include "log.h"
#include "metadata/metadata.h"
#include "notify.h"
#include "proc.h"
#include "rendezvous/rendezvous.h"
#include "status.h"
#include "watch.h"

#define DEBOUNCE_MS 100                 /* changes this close together make one refresh */
#define POLL_MS 1000                    /* shared: how often the nodes directory is listed */
#define RESTART_MS 1000                 /* a watch helper that ended is started again after this */
#define HELD_SLACK_MS 20                /* a held record's refresh: this after its grace ends */

#define EVENTS_MS 1000                  /* Scheduled Events: poll about once a second */
#define LEAVE_RETRY_MS 5000             /* a leave for a scheduled event that failed: again after this */

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

/* One refresh: the runner with the refresh's modules; one line to stderr. */
static int refresh(struct ctx *c, const struct run_opts *ro, const char *why)
{
	struct run_result res;
	uint64_t t0 = now_ms();
	int code;

	struct strbuf parts = STRBUF_INIT;

	code = runner_run(c, ro, &res);
	notify_run("watch", &res, true);        /* READY=1 once the first membership is applied */
	if (c->verbose)
		runner_print_table(c, &res, stderr);
	/* Where the time went: each step's own time, the rest is the runner (lock, status). */
	for (size_t i = 0; i < res.n; i++)
		if (res.ran[i])
			sb_printf(&parts, "%s%s %" PRIu64, parts.len ? ", " : "", module_table[i]->name,
				  res.reports[i].duration_ms);
	for (size_t i = 0; i < res.n; i++)
		if (res.ran[i] && !strcmp(module_table[i]->name, "discovery"))
			fprintf(stderr, "hpcinit watch: %s: refresh exit %d in %" PRIu64 " ms (%s): %s\n",
				why, code, now_ms() - t0, sb_str(&parts), res.reports[i].summary);
	sb_free(&parts);
	fflush(stderr);
	run_result_free(&res);
	return code;
}

/* ---- Azure Scheduled Events ---- */

/*
 * The metadata service (lib/metadata: md_events_get, md_events_ack) is
 * asked in a child of the watch (events_child),
 * never by the watch itself: a service that does not answer holds up that
 * child alone (each of its helper calls ends at a deadline), and the watch
 * reads what it finds from a pipe in the same poll as everything else.
 * The child writes "mine ID TYPE STATUS OTHERS" once for each Terminate or
 * Preempt naming this VM, OTHERS the number of other VMs the event lists.
 */
static void events_child(void *arg, int fd)
{
	struct ctx *c = arg;
	struct strlist seen = { 0 };

	/* The watch's handlers would only set its flag here: SIGTERM ends this child. */
	signal(SIGTERM, SIG_DFL);
	signal(SIGINT, SIG_DFL);
	for (;;) {
		struct md_events ev = { 0 };
		struct strbuf err = STRBUF_INIT;
		char host[256] = "";
		int r;

		(void)node_hostname(c, host, sizeof(host));
		r = md_events_get(c->spec->discovery.events_url, host, &ev, &err);

		if (r < 0)
			log_debug("scheduled events: %s%s%s", strerror(-r), err.len ? ": " : "", sb_str(&err));
		for (size_t i = 0; i < ev.n; i++) {
			bool known = false;

			for (size_t k = 0; k < seen.n && !known; k++)
				known = !strcmp(seen.v[k], ev.v[i].id);
			if (!known) {
				char *line = xasprintf("mine %s %s %s %zu\n", ev.v[i].id, ev.v[i].type,
						       ev.v[i].status, ev.v[i].others);
				ssize_t n = write(fd, line, strlen(line));

				free(line);
				if (n < 0)
					_exit(0);       /* the watch is gone */
				strlist_push(&seen, ev.v[i].id);
			}
		}
		md_events_free(&ev);
		sb_free(&err);
		poll(NULL, 0, EVENTS_MS);
	}
}

struct events {
	struct proc_child ch;
	bool running;
	uint64_t restart_at, next_leave;
	struct strbuf in;               /* the child's output not read as lines yet */
	struct strlist pending;         /* events for this VM, not acknowledged yet */
	struct strlist shared;          /* those of them that list other VMs too: never acknowledged */
};

/* Start the child when it is not running; the fd to poll, or -1. */
static int events_fd(struct ctx *c, struct events *ev)
{
	if (!c->spec->discovery.events_enable)
		return -1;
	if (!ev->running && now_ms() >= ev->restart_at) {
		memset(&ev->ch, 0, sizeof(ev->ch));
		ev->ch.keep_stderr = true;
		ev->running = proc_start_fn(&ev->ch, events_child, c, 0) == 0;
		if (!ev->running)
			ev->restart_at = now_ms() + RESTART_MS;
	}
	return ev->running ? ev->ch.out_fd : -1;
}

static void events_stop(struct events *ev)
{
	if (ev->running && ev->ch.pid > 0) {
		kill(ev->ch.pid, SIGTERM);
		(void)waitpid(ev->ch.pid, NULL, 0);
	}
	if (ev->running)
		proc_child_free(&ev->ch);
	ev->running = false;
}

/* What the child found (its fd was readable). */
static void events_read(struct events *ev)
{
	char buf[4096], *nl;
	ssize_t n = read(ev->ch.out_fd, buf, sizeof(buf));

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return;
	if (n <= 0) {
		fprintf(stderr, "hpcinit watch: the Scheduled Events poller ended; starting it again\n");
		events_stop(ev);
		ev->restart_at = now_ms() + RESTART_MS;
		return;
	}
	sb_appendn(&ev->in, buf, (size_t)n);
	while ((nl = memchr(ev->in.buf, '\n', ev->in.len))) {
		char *line = xstrndup(ev->in.buf, (size_t)(nl - ev->in.buf)), *p = line;
		char *w = md_next_word(&p, false), *id = md_next_word(&p, false), *type = md_next_word(&p, false);
		char *st = md_next_word(&p, false), *others = md_next_word(&p, false);

		if (w && !strcmp(w, "mine") && id && type && st && others) {
			bool alone = !strcmp(others, "0");

			fprintf(stderr, "hpcinit watch: scheduled event %s: %s of this VM%s%s%s (%s)\n", id, type,
				alone ? "" : " and ", alone ? "" : others, alone ? "" : " other VM(s)", st);
			strlist_push(&ev->pending, id);
			if (!alone)
				strlist_push(&ev->shared, id);
		}
		free(line);
		ev->in.len -= (size_t)(nl + 1 - ev->in.buf);
		memmove(ev->in.buf, nl + 1, ev->in.len + 1);
	}
}

/*
 * An event for this VM: leave the cluster, then acknowledge the events
 * (which lets Azure go ahead at once).  Only after a leave that worked: a
 * failed leave acknowledges nothing and is tried again.  Only an event that
 * lists this VM alone: acknowledging one that lists other VMs too starts it
 * for all of them, before their own leave ran; this node leaves and lets
 * Azure start it at its NotBefore time (or when every VM listed has
 * acknowledged it).  true when the node left: the watch then ends.
 */
static bool events_act(struct ctx *c, struct events *ev, uint64_t lock_timeout_ms)
{
	const char *url = c->spec->discovery.events_url;
	int code;

	if (!ev->pending.n || now_ms() < ev->next_leave)
		return false;
	code = runner_leave(c, lock_timeout_ms);
	fflush(stdout);
	if (code != 0) {
		fprintf(stderr, "hpcinit watch: leaving the cluster failed (exit %d); the scheduled event "
			"is not acknowledged; trying again in %d s\n", code, LEAVE_RETRY_MS / 1000);
		ev->next_leave = now_ms() + LEAVE_RETRY_MS;
		return false;
	}
	for (size_t i = 0; i < ev->pending.n; i++) {
		struct strbuf err = STRBUF_INIT;
		bool shared = false;
		int r;

		for (size_t k = 0; k < ev->shared.n && !shared; k++)
			shared = !strcmp(ev->shared.v[k], ev->pending.v[i]);
		if (shared) {
			fprintf(stderr, "hpcinit watch: left the cluster (exit 0); event %s is not acknowledged: it "
				"lists other VMs too, and acknowledging it would start it for every VM listed before "
				"their own leave ran; Azure starts it at its NotBefore time\n", ev->pending.v[i]);
			continue;
		}
		r = md_events_ack(url, ev->pending.v[i], &err);
		fprintf(stderr, "hpcinit watch: left the cluster (exit 0); acknowledging event %s: %s%s\n",
			ev->pending.v[i], r == 0 ? "done" : "failed: ", r == 0 ? "" : strerror(-r));
		sb_free(&err);
	}
	return true;
}

static void events_free(struct events *ev)
{
	events_stop(ev);
	sb_free(&ev->in);
	strlist_free(&ev->pending);
	strlist_free(&ev->shared);
}

/* ---- shared: poll the names in the nodes directory (rv_dir_names_sum) ---- */

static int names_hash(const struct ctx *c, uint64_t *ret)
{
	return rv_dir_names_sum(c, "nodes", ".rec", ret);
}

static int watch_shared(struct ctx *c, const struct run_opts *ro)
{
	uint64_t lease_ms = c->spec->discovery.lease_ms, last_refresh = now_ms(), have = 0;
	bool known = names_hash(c, &have) == 0;
	struct events ev = { 0 };

	while (!stop) {
		uint64_t h = 0, until = now_ms() + POLL_MS;

		/* The pause between listings, awake for what the Scheduled Events child finds. */
		while (!stop && now_ms() < until) {
			struct pollfd pf = { .fd = events_fd(c, &ev), .events = POLLIN };

			if (poll(&pf, 1, (int)(until - now_ms())) > 0 && (pf.revents & (POLLIN | POLLHUP)))
				events_read(&ev);
		}
		if (stop)
			break;
		if (events_act(c, &ev, ro->lock_timeout_ms))
			break;
		if (names_hash(c, &h) == 0 && (!known || h != have)) {
			known = true;
			have = h;
			refresh(c, ro, "membership changed");
			last_refresh = now_ms();
			(void)names_hash(c, &have);     /* the refresh may have pruned */
		} else if (now_ms() - last_refresh >= lease_ms / 3) {
			refresh(c, ro, "lease renewal");
			last_refresh = now_ms();
			(void)names_hash(c, &have);
		}
	}
	events_free(&ev);
	return 0;
}

/* ---- etcd: the helper's watch stream, and keepalives ---- */

/* The lease's renewal: every third of the lease, in the loop and while a refresh waits for the lock. */
static void renew_lease(struct rv_keeper *k)
{
	struct strbuf err = STRBUF_INIT;

	if (rv_keeper_tick(k, &err) && err.len)
		fprintf(stderr, "hpcinit watch: keepalive: %s", sb_str(&err));
	sb_free(&err);
}

/* run_opts.lock_wait: another run (the refresh timer's) holds the lock; the lease goes on being renewed. */
static void renew_while_waiting(void *arg)
{
	renew_lease(arg);
}

/*
 * Debounce: more changes within DEBOUNCE_MS join this refresh, and
 * refreshes are at least as far apart as the CPU the last one used (its
 * own and its steps' children's; hold_until: a node busy with a whole
 * scale set's joins runs fewer, each on the newest view, instead of a
 * queue of them, and spends at most about half a core on them).  Not as far
 * apart as the last one took: a refresh that waited (for the run lock, for
 * the disk, for a machine shared with a thousand other nodes) held the next
 * as long, and at 1,000 nodes a leave reached the watchers 20 s late behind
 * the join's refreshes.  The lease goes on being renewed during the hold.
 */
static void debounce(struct rv_stream *mem, unsigned *changes, uint64_t hold_until, struct rv_keeper *ka)
{
	uint64_t until = now_ms() + DEBOUNCE_MS;

	if (hold_until > until)
		until = hold_until;
	while (*changes && now_ms() < until) {
		struct pollfd one = { .fd = mem->ch.out_fd, .events = POLLIN };
		uint64_t tn = now_ms(), to = ka->next < until ? ka->next : until;
		int p = poll(&one, 1, to > tn ? (int)(to - tn) : 0);

		renew_lease(ka);
		if (p < 0)
			break;
		if (p == 0)
			continue;
		if (!rv_stream_read(mem, changes))
			break;
		if (now_ms() + DEBOUNCE_MS > until)
			until = now_ms() + DEBOUNCE_MS;
	}
}

/* The watch's refreshes: when to try a failed one again, and how long to hold the next. */
struct backoff {
	uint64_t retry_at, retry_ms;    /* retry_at 0: the last refresh worked */
	uint64_t hold_until;            /* no refresh before this (see debounce) */
	bool started;                   /* the first refresh ran */
};

/*
 * One refresh; one that failed (etcd unreachable or overloaded: a whole
 * scale set starting at once) is tried again with backoff and jitter, not
 * only at the next change.
 */
/* CPU this process and its waited-for children have used, ms. */
static uint64_t cpu_used_ms(void)
{
	struct rusage self = { 0 }, kids = { 0 };

	(void)getrusage(RUSAGE_SELF, &self);
	(void)getrusage(RUSAGE_CHILDREN, &kids);
	return (uint64_t)(self.ru_utime.tv_sec + self.ru_stime.tv_sec + kids.ru_utime.tv_sec + kids.ru_stime.tv_sec) * 1000 +
	       (uint64_t)(self.ru_utime.tv_usec + self.ru_stime.tv_usec + kids.ru_utime.tv_usec + kids.ru_stime.tv_usec) / 1000;
}

static void refresh_backoff(struct ctx *c, const struct run_opts *ro, struct backoff *bo, const char *why)
{
	uint64_t cpu0 = cpu_used_ms();

	if (refresh(c, ro, why) == 1) {
		bo->retry_at = now_ms() + bo->retry_ms / 2 + (uint64_t)(random() % (long)bo->retry_ms);
		if (bo->retry_ms < 30000)
			bo->retry_ms *= 2;
	} else {
		bo->retry_at = 0;
		bo->retry_ms = 1000;
	}
	bo->started = true;
	bo->hold_until = now_ms() + (cpu_used_ms() - cpu0);
}

static int watch_etcd(struct ctx *c, const struct run_opts *ro_in)
{
	uint64_t every = c->spec->discovery.lease_ms / 3;
	struct rv_keeper ka = { .c = c };
	struct run_opts wro = *ro_in, *ro = &wro;
	uint64_t restart_at = 0, held_done = 0;
	struct backoff bo = { .retry_ms = 1000 };
	struct strbuf text = STRBUF_INIT;
	struct rv_stream mem = { 0 };
	struct events ev = { 0 };

	if (every < 500)
		every = 500;
	ka.every = every;
	ka.next = now_ms() + every;
	wro.lock_wait = renew_while_waiting;
	wro.lock_wait_arg = &ka;
	while (!stop) {
		struct pollfd pf[3];
		unsigned changes = 0;
		/* A time a step asked for (a record held since it vanished: its grace's end): a refresh then. */
		uint64_t now = now_ms(), wake, held = modules_wake_at(c);
		int n = 0, t, efd = events_fd(c, &ev), ei = -1, erri = -1;

		if (!mem.running && now >= restart_at) {
			int r = rv_stream_start(c, "nodes", &mem);

			if (r < 0) {
				fprintf(stderr, "hpcinit watch: cannot start the etcd watch: %s\n", strerror(-r));
				restart_at = now + RESTART_MS;
			}
		}
		wake = ka.next;
		if (!mem.running && restart_at < wake)
			wake = restart_at;
		if (bo.retry_at && bo.retry_at < wake)
			wake = bo.retry_at;
		if (c->spec->discovery.events_enable && !ev.running && ev.restart_at < wake)
			wake = ev.restart_at;
		if (ev.pending.n && ev.next_leave < wake)
			wake = ev.next_leave;
		if (held && held != held_done && held + HELD_SLACK_MS < wake)
			wake = held + HELD_SLACK_MS;
		t = wake > now ? (int)(wake - now) : 0;
		if (mem.running) {
			pf[n++] = (struct pollfd){ .fd = mem.ch.out_fd, .events = POLLIN };
			if (mem.ch.err_fd >= 0) {
				erri = n;
				pf[n++] = (struct pollfd){ .fd = mem.ch.err_fd, .events = POLLIN };
			}
		}
		if (efd >= 0) {
			ei = n;
			pf[n++] = (struct pollfd){ .fd = efd, .events = POLLIN };
		}
		if (poll(pf, (nfds_t)n, t) < 0 && errno != EINTR)
			break;
		if (stop)
			break;
		if (ei >= 0 && (pf[ei].revents & (POLLIN | POLLHUP)))
			events_read(&ev);
		if (mem.running && erri >= 0 && (pf[erri].revents & (POLLIN | POLLHUP))) {
			struct strlist lines = { 0 };

			(void)rv_stream_read_err(&mem, &lines);
			for (size_t i = 0; i < lines.n; i++)
				fprintf(stderr, "hpcinit watch: %s\n", lines.v[i]);
			strlist_free(&lines);
		}
		if (mem.running && (pf[0].revents & (POLLIN | POLLHUP))) {
			if (!rv_stream_read(&mem, &changes)) {
				fprintf(stderr, "hpcinit watch: the etcd watch ended; starting it again\n");
				rv_stream_stop(&mem);
				restart_at = now_ms() + RESTART_MS;
			}
			if (mem.running)
				debounce(&mem, &changes, bo.hold_until, &ka);
		}
		/* The refreshes run on the stream's membership while it is whole. */
		if (mem.running && mem.synced) {
			rv_stream_text(&mem, &text);
			rv_etcd_view_set(sb_str(&text), text.len);
		} else {
			rv_etcd_view_set(NULL, 0);
		}
		if (events_act(c, &ev, ro->lock_timeout_ms))
			break;
		if (!changes && held && held != held_done && now_ms() >= held + HELD_SLACK_MS) {
			held_done = held;
			if (!bo.retry_at)
				refresh_backoff(c, ro, &bo, "a vanished record's grace ended");
		}
		if (changes || (bo.retry_at && now_ms() >= bo.retry_at))
			refresh_backoff(c, ro, &bo, !changes ? "retry" : !bo.started ?
					"start (the stream's view, no list)" : mem.running && mem.synced ?
					"membership changed (the stream's view, no list)" : "membership changed");
		renew_lease(&ka);
		if (ka.gone) {
			ka.gone = false;
			/* The key went with the lease; the stream may not say so yet: list, then put. */
			rv_etcd_view_set(NULL, 0);
			refresh(c, ro, rv_etcd_lease(c) ? "lease expired" : "no lease");
		}
	}
	events_free(&ev);
	rv_etcd_view_set(NULL, 0);
	rv_stream_free(&mem);
	sb_free(&text);
	return 0;
}

int watch_main(struct ctx *c, const struct run_opts *ro)
{
	struct sigaction sa = { .sa_handler = on_signal };
	const struct spec *spec = c->spec;

	if (!spec->discovery.present ||
	    (spec->discovery.method != DISC_ETCD && spec->discovery.method != DISC_SHARED)) {
		fprintf(stderr, "hpcinit: watch needs discovery.method etcd or shared (static and scan "
			"have no membership to watch; the refresh timer covers them)\n");
		return 2;
	}
	sigemptyset(&sa.sa_mask);
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	fprintf(stderr, "hpcinit watch: watching cluster %s (method %s)\n", spec->cluster.name,
		disc_method_name(spec->discovery.method));
	srandom((unsigned)getpid() ^ (unsigned)now_ms());
	/*
	 * etcd: the first refresh runs on the stream's first whole view (one
	 * range a node at start, not a list of its own as well: a whole
	 * scale set starting at once asks etcd half as much).
	 */
	if (spec->discovery.method == DISC_ETCD)
		return watch_etcd(c, ro);
	refresh(c, ro, "start");
	return watch_shared(c, ro);
}
