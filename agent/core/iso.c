/* SPDX-License-Identifier: MIT */
/*
 * Isolated steps (iso.h): the child a step runs in, and the frames of its
 * answer to the runner: "R r\n", then "J - N\n" and N bytes of the report's
 * JSON, one "P S N\n" and N bytes of record_pack a peer (S: 1 for this node),
 * "E\n".  A peer the runner cannot read back fails the whole answer: a list
 * one node shorter than the step's own report said is a hostfile that
 * silently lacks a live node.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "blocked.h"
#include "fsutil.h"
#include "iso.h"
#include "log.h"
#include "number.h"
#include "outputs.h"
#include "proc.h"
#include "runner.h"
#include "status.h"

#define ISO_GRACE_MS 1000u       /* an isolated step may overrun its deadline this much to report */

/* "T A N\n", then N bytes of text and "\n".  No printf: one of these per peer. */
static void iso_put(struct strbuf *sb, char tag, const char *a, const char *text, size_t n)
{
	char num[24];
	size_t i = sizeof(num), l = n;
	const char pre[2] = { tag, ' ' };

	num[--i] = '\n';
	do {
		num[--i] = (char)('0' + l % 10);
		l /= 10;
	} while (l);
	num[--i] = ' ';
	sb_appendn(sb, pre, 2);
	sb_append(sb, a);
	sb_appendn(sb, num + i, sizeof(num) - i);
	sb_appendn(sb, text, n);
	sb_appendn(sb, "\n", 1);
}

void iso_answer(struct strbuf *sb, int r, const char *report_json, const struct peerset *peers)
{
	struct strbuf one = STRBUF_INIT;

	sb_printf(sb, "R %d\n", r);
	iso_put(sb, 'J', "-", report_json, strlen(report_json));
	for (size_t i = 0; peers && i < peers->n; i++) {
		sb_reset(&one);
		record_pack(&one, &peers->v[i]);
		iso_put(sb, 'P', peers->v[i].self ? "1" : "0", one.buf ? one.buf : "", one.len);
	}
	sb_free(&one);
	sb_append(sb, "E\n");
}

/*
 * "T A N" (tag, a word of at most 7 characters, a length), the line from p
 * to nl.  Not sscanf: it measures the whole rest of the answer on every call,
 * which made reading back 10,000 peers quadratic.
 */
static bool iso_header(const char *p, const char *nl, char a[8], size_t *ret_n)
{
	const char *w = p + 2, *sp;
	unsigned long long n;
	const char *end;

	if (nl - p < 5 || p[1] != ' ' || !(sp = memchr(w, ' ', (size_t)(nl - w))) || sp == w || sp - w > 7 ||
	    sp[1] < '0' || sp[1] > '9')
		return false;
	memcpy(a, w, (size_t)(sp - w));
	a[sp - w] = '\0';
	if (!num_ull_prefix(sp + 1, 10, SIZE_MAX, &n, &end) || end != nl)
		return false;
	*ret_n = (size_t)n;
	return true;
}

/* One "P" frame's body onto peers; false (why says which) when it does not read back. */
static bool iso_peer(const char *body, size_t n, const char *a, size_t nth, struct peerset **peers,
		     struct strbuf *why)
{
	struct peer pe;
	struct peer *slot;
	int r = record_unpack(body, n, &pe);

	if (r < 0) {
		if (why && !why->len)
			/* not its bytes: they are a record's, another node's words */
			sb_printf(why, "peer %zu of the answer (%zu bytes) does not read back: %s", nth, n,
				  strerror(-r));
		return false;
	}
	if (!*peers)
		*peers = xcalloc(1, sizeof(**peers));
	slot = peerset_add(*peers);
	*slot = pe;
	slot->self = a[0] == '1';
	return true;
}

int iso_parse(const char *text, size_t len, struct report *rep, struct peerset **ret_peers, int *ret,
	      struct strbuf *why)
{
	const char *p = text, *end = text + len;
	struct peerset *peers = NULL;
	bool done = false, have_report = false, unreadable = false;
	size_t nth = 0;

	*ret_peers = NULL;
	while (p < end && !done) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char tag, a[8];
		size_t n;

		if (!nl)
			break;
		tag = *p;
		if (tag == 'E') {
			done = true;
		} else if (tag == 'R') {
			long long v;
			const char *e;

			/* "R -errno": anything else is no answer (strtol read junk as 0, success) */
			if (p[1] != ' ' || !num_ll_prefix(p + 2, INT_MIN, INT_MAX, &v, &e) || e != nl)
				break;
			*ret = (int)v;
		} else if ((tag == 'J' || tag == 'P') && iso_header(p, nl, a, &n) &&
			   n <= (size_t)(end - nl - 1)) {
			const char *body = nl + 1;

			if (tag == 'J')
				have_report = report_from_json(body, n, rep) == 0;
			else if (!iso_peer(body, n, a, ++nth, &peers, why))
				unreadable = true;     /* read on: a cut-short answer is still that */
			nl = body + n;
		} else {
			break;
		}
		p = nl + 1;
	}
	if (!done || !have_report || unreadable) {
		peerset_free(peers);
		return !done || !have_report ? -ENODATA : -EBADMSG;
	}
	*ret_peers = peers;
	return 0;
}

bool iso_whole(const char *text, size_t len, size_t *pos)
{
	const char *p = text + *pos, *end = text + len;

	while (p < end) {
		const char *nl = memchr(p, '\n', (size_t)(end - p));
		char a[8];
		size_t n;

		if (!nl)
			return false;
		if (*p == 'E' || (*p != 'R' && *p != 'J' && *p != 'P'))
			return true;    /* its end, or no frame: iso_parse says which */
		if (*p != 'R') {
			if (!iso_header(p, nl, a, &n))
				return true;
			if (n >= (size_t)(end - nl - 1))
				return false;   /* the body and its "\n" not all here yet */
			nl += 1 + n;
		}
		p = nl + 1;
		*pos = (size_t)(p - text);
	}
	return false;
}

/* ---- the child: steps that touch shared storage or the network ------------- */

/*
 * A step flagged isolate runs in a child (the child engine, common/base/proc.c):
 * every step that touches shared storage, users' homes or the network
 * (discovery, nfs, ssh, hostfile, mpi, slurm).
 * A hard NFS mount whose server died, or a FUSE server that never answers,
 * puts the process that touches it to sleep in the kernel where no signal
 * reaches it; in a child that only costs the child.  The child sends back
 * the step's return value, its report (the status document's module entry)
 * and its peers (record_pack: every field, not a record to parse again),
 * then "E".  At the deadline the runner looks at what the child is blocked
 * in (/proc/PID/syscall, the descriptor's path, wchan), kills it, leaves it behind if it cannot die, and the run goes on.
 */
struct iso {
	struct ctx *c;
	const struct module *m;
	int (*hook)(struct ctx *, struct report *);     /* m's check, apply, or a leave */
	struct report *rep;
	struct outputs *view;
	const struct outputs *stay;     /* NULL, or the run's outputs before m: the child stays (struct lingering) */
};

/*
 * The step with an announce hook (discovery) in a node's first apply of the
 * boot: its child stays after its answer, holding what it opened (etcd: the
 * helper's session, its connection and lease), and does what the runner
 * writes on its stdin (struct iso_cmd), one thing at a time:
 *   - a later step that may share it (module .shares_child), when the child
 *     holds that step's inputs as they are (no step elsewhere set them since
 *     it started: stale), under the step's own deadline: its answer as from a
 *     child of its own, and it stays;
 *   - the announce, once the runner knows the node's state and it changed:
 *     on the session the step opened, then it ends;
 *   - its stdin closed: it ends.
 * A cold start so forks one child for discovery, ssh, hostfile and mpi and
 * starts one etcd helper (issue 37: the announce's own child and helper had
 * cost a node 2-3 ms of CPU, a child of its own for hostfile 0.5-0.7 ms).  A
 * child that overran, crashed or answered nonsense stays no more: the next
 * step gets a child of its own, the announce too.
 */
static struct lingering {
	bool live;              /* ch stays, waiting */
	struct module m;        /* its module (resolved: a copy, the run frees its table first) */
	unsigned stale;         /* outputs set elsewhere since it started: what it holds of them is old */
	struct proc_child ch;
} lg;

/*
 * A word to a staying child.  The child is a fork of this process: a module's
 * pointers (name, hooks, needs) are the same there.
 */
struct iso_cmd {
	char op;                /* 'S': run m's hook; 'A': m's announce, with node */
	struct module m;
	int (*hook)(struct ctx *, struct report *);
	uint64_t deadline_ms;
	struct node_state node;
};
_Static_assert(sizeof(struct iso_cmd) <= PIPE_BUF, "a word to the child is one write");

/* fd_write_all, where a reader that is gone is an error, not this process's end (SIGPIPE). */
static int write_no_sigpipe(int fd, const void *data, size_t len)
{
	struct sigaction ign = { .sa_handler = SIG_IGN }, old;
	int r;

	sigemptyset(&ign.sa_mask);
	sigaction(SIGPIPE, &ign, &old);
	r = fd_write_all(fd, data, len);
	sigaction(SIGPIPE, &old, NULL);
	return r;
}

/* Send a's answer: r, rep as JSON, peers (NULL: none). */
static void iso_send(int fd, const char *name, int r, const struct report *rep, const struct peerset *peers)
{
	struct strbuf sb = STRBUF_INIT;
	char *js = report_to_json(name, rep);

	iso_answer(&sb, r, js, peers);
	free(js);
	(void)fd_write_all(fd, sb_str(&sb), sb.len);
	sb_free(&sb);
}

/*
 * A later step in the child that stayed: its view from what the child holds
 * (all), no run so far (c->run NULL: a step that shares the child reads none),
 * then the context as the staying step had it, for the announce.
 */
static void iso_serve_step(struct iso *a, const struct iso_cmd *cmd, const struct outputs *all, int fd)
{
	struct ctx *c = a->c, saved = *c;
	struct outputs v = { 0 };
	struct report rep;
	int r;

	outputs_copy(&v, all, cmd->m.inputs | cmd->m.outputs);
	c->out = &v;
	c->run = NULL;
	c->module = cmd->m.name;
	c->deadline_ms = cmd->deadline_ms;
	c->step_stays = false;
	log_set_module(cmd->m.name);
	report_init(&rep);
	r = cmd->hook(c, &rep);
	iso_send(fd, cmd->m.name, r, &rep, (cmd->m.outputs & OUT_PEERS) ? v.peers : NULL);
	report_free(&rep);
	log_set_module(a->m->name);
	*c = saved;
}

/* The child's side after its answer: the runner's words on stdin (struct iso_cmd); nothing more on EOF. */
static void iso_stay(struct iso *a, int fd)
{
	struct outputs all = *a->stay;  /* the run's outputs when this child started, and its step's */
	struct iso_cmd cmd;
	struct report rep;
	int r;

	outputs_copy(&all, a->view, a->m->outputs);
	for (;;) {
		if (fd_read_full(0, &cmd, sizeof(cmd)) != (ssize_t)sizeof(cmd))
			return;         /* no announce: what the step opened ends with this process */
		if (cmd.op != 'S')
			break;
		iso_serve_step(a, &cmd, &all, fd);
	}
	a->c->node = cmd.node;
	a->c->deadline_ms = now_ms() + a->m->timeout_ms(a->c->spec);
	report_init(&rep);
	r = a->m->announce(a->c, &rep);
	iso_send(fd, a->m->name, r, &rep, NULL);
	report_free(&rep);
}

static void iso_child(void *arg, int fd)
{
	struct iso *a = arg;
	int r;

	a->c->step_stays = a->stay != NULL;
	r = a->hook(a->c, a->rep);
	iso_send(fd, a->m->name, r, a->rep, (a->m->outputs & OUT_PEERS) ? a->view->peers : NULL);
	if (a->stay)
		iso_stay(a, fd);
}

enum iso_got { ISO_LATE, ISO_EOF, ISO_WHOLE };

/*
 * Read the child's answer until the deadline (until; ISO_LATE): to its end
 * of file (ISO_EOF), or (whole: a child that stays) until the answer is
 * whole (ISO_WHOLE: the child lives on).  It may write more than a pipe holds.
 */
static enum iso_got iso_read(struct proc_child *ch, uint64_t until, bool whole)
{
	size_t pos = 0;

	for (;;) {
		uint64_t now = now_ms();
		struct pollfd pf = { .fd = ch->out_fd, .events = POLLIN };
		ssize_t n;

		if (whole && iso_whole(ch->out.buf ? ch->out.buf : "", ch->out.len, &pos))
			return ISO_WHOLE;
		if (now >= until)
			return ISO_LATE;
		if (poll(&pf, 1, (int)(until - now)) <= 0)
			continue;
		/* Straight into the answer's buffer (megabytes for 10,000 peers), a pipe's worth at a time. */
		if (ch->out.cap - ch->out.len < 65536 + 1)
			sb_reserve(&ch->out, 65536);
		n = read(ch->out_fd, ch->out.buf + ch->out.len, ch->out.cap - ch->out.len - 1);
		if (n > 0) {
			ch->out.len += (size_t)n;
			ch->out.buf[ch->out.len] = '\0';
		} else if (n == 0 || errno != EINTR) {
			return ISO_EOF;
		}
	}
}

/* Past the deadline: the child killed (or left behind), the step failed naming what it waited for. */
static int iso_overrun(struct proc_child *ch, const char *name, struct report *rep, uint64_t tmo)
{
	struct strbuf why = STRBUF_INIT;
	const struct proc_limits kill_now = { .timeout_ms = 0, .term_grace_ms = 0, .reap_ms = 500 };
	char *key;

	fd_close(&ch->in_fd);
	proc_describe_blocked(ch->pid, &why);
	ch->stuck_key = key = xasprintf("step.%s", name);
	ch->stuck_what = sb_str(&why);
	proc_wait(ch, 1, &kill_now);
	free(key);
	report_free(rep);
	report_init(rep);
	report_finding(rep, ST_FAILED, "runner.deadline",
		       "did not finish within its deadline (%llu s): blocked in %s; the step was killed%s",
		       (unsigned long long)((tmo + 999) / 1000), sb_str(&why),
		       ch->abandoned ? " but cannot die (asleep in the kernel) and was left behind" : "");
	sb_free(&why);
	proc_child_free(ch);
	return -ETIMEDOUT;
}

/* The answer read (reaped first unless the child stays): the step's return value, rep, view's peers. */
static int iso_take(struct proc_child *ch, struct report *rep, struct outputs *view, bool stays)
{
	struct strbuf bad = STRBUF_INIT;
	struct peerset *got = NULL;
	int r = -EIO, ret;

	if (!stays) {
		const struct proc_limits reap = { .timeout_ms = ISO_GRACE_MS, .reap_ms = 500, .eof_ends = true };

		fd_close(&ch->in_fd);
		proc_wait(ch, 1, &reap);
	}
	ret = iso_parse(ch->out.buf ? ch->out.buf : "", ch->out.len, rep, &got, &r, &bad);
	if (ret == 0) {
		if (view)
			view->peers = got;
		else
			peerset_free(got);
	} else if (ret == -EBADMSG) {
		/* A peer dropped here would be a hostfile shorter than discovery's own count: fail. */
		report_free(rep);
		report_init(rep);
		report_finding(rep, ST_FAILED, "runner.peer-unreadable", "the runner cannot read back the "
			       "step's answer: %s; the step failed rather than hand on a shorter list of nodes",
			       sb_str(&bad));
		r = -EBADMSG;
	} else if (ret < 0) {
		int sig = ch->exited && WIFSIGNALED(ch->status) ? WTERMSIG(ch->status) : 0;

		report_free(rep);
		report_init(rep);
		report_finding(rep, ST_FAILED, "runner.crashed", "the step's child ended without an answer%s%s",
			       sig ? ": signal " : "", sig ? strsignal(sig) : "");
		r = -EIO;
	}
	sb_free(&bad);
	return r;
}

/* Kill a child that is no use (it overran, or its answer was nonsense) and reap it. */
static void iso_kill(struct proc_child *ch)
{
	const struct proc_limits kill_now = { .timeout_ms = 0, .term_grace_ms = 0, .reap_ms = 500 };

	fd_close(&ch->in_fd);
	proc_wait(ch, 1, &kill_now);
}

/*
 * Whether m runs in the child that stays: it may share it, the child holds its
 * inputs as they are, and no child of an earlier run of m still sleeps in the
 * kernel (that is iso_run's to report: runner.still-blocked).
 */
static bool iso_serves(const struct module *m)
{
	struct proc_stuck st;
	char *key;
	bool stuck;

	if (!lg.live || !m->shares_child || (m->inputs & lg.stale))
		return false;
	key = xasprintf("step.%s", m->name);
	stuck = proc_stuck_find(key, &st) == 1;
	free(key);
	return !stuck;
}

/*
 * m's hook in the child that stays (iso_serves): 1 when it ran there (*ret its
 * return value); 0 when the child had ended before (reaped): m needs a child
 * of its own.
 */
static int iso_serve(struct ctx *c, const struct module *m, int (*hook)(struct ctx *, struct report *),
		     struct report *rep, struct outputs *view, uint64_t tmo, int *ret)
{
	struct iso_cmd cmd;
	struct proc_child *ch = &lg.ch;
	enum iso_got got;

	memset(&cmd, 0, sizeof(cmd));   /* its padding too: all of it goes down the pipe */
	cmd.op = 'S';
	cmd.m = *m;
	cmd.hook = hook;
	cmd.deadline_ms = c->deadline_ms;
	sb_reset(&ch->out);
	if (write_no_sigpipe(ch->in_fd, &cmd, sizeof(cmd)) < 0) {
		iso_end();      /* it had ended: reaped */
		return 0;
	}
	got = iso_read(ch, c->deadline_ms + ISO_GRACE_MS, true);
	if (got == ISO_LATE) {
		lg.live = false;
		*ret = iso_overrun(ch, m->name, rep, tmo);
		return 1;
	}
	*ret = iso_take(ch, rep, view, got == ISO_WHOLE);
	if (got == ISO_WHOLE && *ret != -EIO)
		return 1;       /* it answered, and waits for more */
	if (got == ISO_WHOLE)
		iso_kill(ch);   /* what it sent is no answer: it stays no more */
	lg.live = false;
	proc_child_free(ch);
	return 1;
}

int iso_run(struct ctx *c, const struct module *m, int (*hook)(struct ctx *, struct report *),
	    struct report *rep, struct outputs *view, uint64_t tmo, const struct outputs *stay)
{
	struct iso a = { c, m, hook, rep, view, stay };
	struct proc_child ch = { 0 };
	uint64_t until = c->deadline_ms + ISO_GRACE_MS;
	enum iso_got got;
	int r, ret;
	char *key;

	if (!stay && iso_serves(m) && iso_serve(c, m, hook, rep, view, tmo, &r)) {
		iso_outputs_set(m->outputs);
		return r;
	}
	if (stay)
		iso_end();      /* one child stays at a time */
	iso_outputs_set(m->outputs);
	ch.keep_stderr = true;  /* the step's log lines */
	ch.cmd_stdin = stay != NULL;
	ch.stuck_key = key = xasprintf("step.%s", m->name);
	ret = proc_start_fn(&ch, iso_child, &a, 0);
	free(key);
	ch.stuck_key = NULL;
	if (ret == -EBUSY) {
		/* The last run's child of this step still sleeps in the kernel: start no second one. */
		struct strbuf why = STRBUF_INIT;

		proc_stuck_text(&ch.blocked, &why);
		report_finding(rep, ST_FAILED, "runner.still-blocked", "%s; no new child started", sb_str(&why));
		sb_free(&why);
		return -ETIMEDOUT;
	}
	if (ret < 0) {
		report_set(rep, ST_FAILED, "cannot start the step in a child: %s", strerror(-ret));
		return ret;
	}
	got = iso_read(&ch, until, stay != NULL);
	if (got == ISO_LATE)
		return iso_overrun(&ch, m->name, rep, tmo);
	/* A child that stays has answered and waits: for later steps and the announce. */
	r = iso_take(&ch, rep, view, got == ISO_WHOLE);
	if (got == ISO_WHOLE && r == -EIO) {
		iso_kill(&ch);  /* what it sent is no answer: it does not stay */
	} else if (got == ISO_WHOLE) {
		lg.live = true;
		lg.m = *m;
		lg.stale = 0;
		lg.ch = ch;
		return r;
	}
	proc_child_free(&ch);
	return r;
}

void iso_outputs_set(unsigned bits)
{
	if (lg.live)
		lg.stale |= bits;
}

void iso_end(void)
{
	const struct proc_limits reap = { .timeout_ms = ISO_GRACE_MS, .reap_ms = 500, .eof_ends = true };

	if (!lg.live)
		return;
	fd_close(&lg.ch.in_fd);
	proc_wait(&lg.ch, 1, &reap);
	proc_child_free(&lg.ch);
	lg.live = false;
}

int iso_announce(struct ctx *c, struct report *rep)
{
	struct iso_cmd cmd;
	uint64_t tmo = lg.m.timeout_ms(c->spec);
	struct proc_child *ch = &lg.ch;
	char *sd = ctx_path(c, STATUS_DIR "/stuck");
	int r;

	memset(&cmd, 0, sizeof(cmd));
	cmd.op = 'A';
	cmd.m = lg.m;
	cmd.node = c->node;

	lg.live = false;
	sb_reset(&ch->out);
	proc_stuck_dir(sd);
	free(sd);
	log_set_module(lg.m.name);
	if (write_no_sigpipe(ch->in_fd, &cmd, sizeof(cmd)) < 0) {
		r = iso_take(ch, rep, NULL, false);     /* it is gone: says how */
		proc_child_free(ch);
	} else {
		fd_close(&ch->in_fd);
		if (iso_read(ch, now_ms() + tmo + ISO_GRACE_MS, false) == ISO_LATE) {
			r = iso_overrun(ch, lg.m.name, rep, tmo);
		} else {
			r = iso_take(ch, rep, NULL, false);
			proc_child_free(ch);
		}
	}
	log_set_module(NULL);
	proc_stuck_dir(NULL);
	if (r < 0)
		report_raise(rep, ST_FAILED);
	if (!rep->summary[0])
		report_summarize(rep);
	return r;
}

pid_t iso_staying(const char *name)
{
	return lg.live && strcmp(lg.m.name, name) == 0 ? lg.ch.pid : 0;
}
