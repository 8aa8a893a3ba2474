/* SPDX-License-Identifier: MIT */
/*
 * The cloud's metadata service (Azure IMDS), the agent's one client of it:
 * a text GET under a deadline, and the instance facts asked with it once a
 * boot (md_fact: the placement group for lib/ib's identity, the VM size for
 * the gpu step, kept in /run/hpcinit/facts), and Scheduled Events (what hpcinit watch
 * acts on: an event that will take this VM away, and its acknowledgement).
 *
 * A GET is plain HTTP/1.0 to the service's numeric address, in the agent
 * (no library).  Scheduled Events need JSON: they run in the service's own
 * helper, hpcinit-metadata (libcurl, json-c: "events" and "ack", through
 * proc.c, under a deadline); its answer is read here, and its failures
 * keep their meaning (-errno), never a bare -1.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../rendezvous/etcd-proto.h"
#include "fsutil.h"
#include "metadata.h"
#include "proc.h"

/* One HTTP/1.0 GET with "Metadata: true" to a numeric http:// URL within timeout_ms; the body, trimmed. */
int imds_get_text(const char *url, unsigned timeout_ms, char *out, size_t n, char *err, size_t errn)
{
	char host[64], port[8] = "80", req[768], buf[8192];
	const char *p, *path;
	struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV }, *ai = NULL;
	uint64_t end = now_ms() + timeout_ms;
	size_t hl, len = 0;
	int fd = -1, r = -EINVAL;
	char *body;

	out[0] = err[0] = '\0';
	if (strncmp(url, "http://", 7) != 0) {
		snprintf(err, errn, "only http:// (the metadata service's scheme)");
		return -EINVAL;
	}
	p = url + 7;
	path = strchr(p, '/');
	hl = path ? (size_t)(path - p) : strlen(p);
	if (!path || hl == 0 || hl >= sizeof(host)) {
		snprintf(err, errn, "no host or path");
		return -EINVAL;
	}
	memcpy(host, p, hl);
	host[hl] = '\0';
	{
		char *colon = strrchr(host, ':');

		if (colon && !strchr(host, ']') && strlen(colon + 1) < sizeof(port)) {
			snprintf(port, sizeof(port), "%s", colon + 1);
			*colon = '\0';
		}
	}
	if (getaddrinfo(host, port, &hints, &ai) != 0) {
		snprintf(err, errn, "%s: not a numeric address (the metadata service has one)", host);
		return -EINVAL;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		r = -errno;
		goto out;
	}
	if (connect(fd, ai->ai_addr, ai->ai_addrlen) < 0 && errno != EINPROGRESS) {
		r = -errno;
		snprintf(err, errn, "connect: %s", strerror(errno));
		goto out;
	}
	{
		int w = snprintf(req, sizeof(req), "GET %s HTTP/1.0\r\nHost: %s\r\nMetadata: true\r\n"
				 "Connection: close\r\n\r\n", path, host);
		size_t sent = 0;

		if (w < 0 || (size_t)w >= sizeof(req)) {
			snprintf(err, errn, "URL too long");
			goto out;
		}
		for (;;) {
			struct pollfd pf = { .fd = fd, .events = sent < (size_t)w ? POLLOUT : POLLIN };
			uint64_t now = now_ms();
			int pr;
			ssize_t k;

			if (now >= end) {
				r = -ETIMEDOUT;
				snprintf(err, errn, "no answer within %u ms", timeout_ms);
				goto out;
			}
			pr = poll(&pf, 1, (int)(end - now));
			if (pr < 0 && errno == EINTR)
				continue;
			if (pr <= 0)
				continue;
			if (sent < (size_t)w) {
				k = send(fd, req + sent, (size_t)w - sent, MSG_NOSIGNAL);
				if (k < 0 && errno != EAGAIN) {
					r = -errno;
					snprintf(err, errn, "%s", strerror(errno));
					goto out;
				}
				sent += k > 0 ? (size_t)k : 0;
				continue;
			}
			k = read(fd, buf + len, sizeof(buf) - 1 - len);
			if (k < 0 && errno == EAGAIN)
				continue;
			if (k < 0) {
				r = -errno;
				snprintf(err, errn, "%s", strerror(errno));
				goto out;
			}
			if (k == 0 || (len += (size_t)k) == sizeof(buf) - 1)
				break;
		}
	}
	buf[len] = '\0';
	if (strncmp(buf, "HTTP/1.", 7) != 0 || len < 12 || strncmp(buf + 9, "200", 3) != 0) {
		r = -EPROTO;
		snprintf(err, errn, "answered %.*s", (int)strcspn(buf, "\r\n") > 60 ? 60 : (int)strcspn(buf, "\r\n"), buf);
		goto out;
	}
	body = strstr(buf, "\r\n\r\n");
	if (!body) {
		r = -EPROTO;
		snprintf(err, errn, "no body");
		goto out;
	}
	body += 4;
	body[strcspn(body, "\r\n")] = '\0';
	snprintf(out, n, "%s", body);
	r = 0;
out:
	if (fd >= 0)
		close(fd);
	freeaddrinfo(ai);
	return r;
}

/* ---- instance facts, asked once a boot ---- */

int md_fact(struct ctx *c, const char *name, const char *url, char *out, size_t n, bool *cached,
	    char *err, size_t errn)
{
	char *path = xasprintf(MD_FACTS_DIR "/%s", name), *text = NULL;
	size_t ul = strlen(url);
	int r;

	*cached = false;
	out[0] = err[0] = '\0';
	/* "URL\nFACT\n": the fact of this url, written by an earlier run this boot */
	if (fs_read(c, path, &text, NULL) == 0 && strncmp(text, url, ul) == 0 && text[ul] == '\n') {
		char *v = text + ul + 1;

		v[strcspn(v, "\r\n")] = '\0';
		if (v[0] && strlen(v) < n) {
			snprintf(out, n, "%s", v);
			*cached = true;
			free(text);
			free(path);
			return 0;
		}
	}
	free(text);
	r = imds_get_text(url, IMDS_TIMEOUT_MS, out, n, err, errn);
	if (r == 0 && out[0] && ctx_may_write(c) && !strpbrk(out, "\r\n")) {
		struct report scratch;
		char *body = xasprintf("%s\n%s\n", url, out);

		report_init(&scratch);
		if (fs_mkdir_p(c, &scratch, MD_FACTS_DIR, 0755, 0, 0) >= 0)
			(void)fs_write(c, &scratch, path, body, strlen(body), 0644, 0, 0);
		report_free(&scratch);
		free(body);
	}
	free(path);
	return r;
}

/* ---- Scheduled Events ---- */

/* The helper with --timeout and args; 0 and its answer in res, or -errno. */
static int run_helper(const char *const *args, struct proc_result *res)
{
	struct strlist argv = { 0 };
	const char **av;
	int r;

	strlist_push_take(&argv, proc_helper_path(MD_HELPER_NAME));
	strlist_push(&argv, "--timeout");
	strlist_push_take(&argv, xasprintf("%u", MD_CALL_TIMEOUT_MS));
	for (size_t i = 0; args[i]; i++)
		strlist_push(&argv, args[i]);
	av = xcalloc(argv.n + 1, sizeof(*av));
	for (size_t i = 0; i < argv.n; i++)
		av[i] = argv.v[i];
	r = proc_run(av, NULL, NULL, MD_RUN_MS, res);
	free(av);
	strlist_free(&argv);
	if (r < 0)
		return r;
	return md_status(res);
}

int md_status(const struct proc_result *res)
{
	if (res->timed_out)
		return -ETIMEDOUT;
	switch (res->exit_code) {
	case ETCD_EX_OK:
		return 0;
	case ETCD_EX_DOWN:
		return -EHOSTUNREACH;   /* the service did not answer */
	default:
		return -EPROTO;         /* it answered no events document, a usage error, killed */
	}
}

char *md_next_word(char **p, bool rest)
{
	char *w = *p, *e;

	while (*w == ' ')
		w++;
	if (!*w)
		return NULL;
	e = rest ? w + strlen(w) : w + strcspn(w, " ");
	*p = *e ? e + 1 : e;
	*e = '\0';
	return w;
}

/*
 * resources (the whole list, however long) names this VM (its metadata
 * name self, or host): true, with *others the number of the other VMs it
 * lists.
 */
static bool names_me(const char *self, const char *host, const char *resources, size_t *others)
{
	char *copy = xstrdup(resources), *save = NULL;
	bool me = false;

	*others = 0;
	for (char *r = strtok_r(copy, ",", &save); r; r = strtok_r(NULL, ",", &save)) {
		bool this = (self[0] && !strcmp(r, self)) || (host[0] && !strcasecmp(r, host));

		me = me || this;
		*others += !this;
	}
	free(copy);
	return me;
}

void md_events_parse(char *text, const char *host, struct md_events *ret)
{
	char self[256] = "";

	for (char *save = NULL, *l = strtok_r(text, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		char *p = l, *w = md_next_word(&p, false), *id, *type, *st, *rs;
		size_t others = 0;

		if (w && !strcmp(w, "self") && (w = md_next_word(&p, false))) {
			snprintf(self, sizeof(self), "%s", w);
			continue;
		}
		if (!w || strcmp(w, "event") != 0 || !(id = md_next_word(&p, false)) ||
		    !(type = md_next_word(&p, false)) || !(st = md_next_word(&p, false)) ||
		    !(rs = md_next_word(&p, true)) ||
		    (strcmp(type, "Terminate") != 0 && strcmp(type, "Preempt") != 0) ||
		    !names_me(self, host ? host : "", rs, &others))
			continue;
		ret->v = xrealloc(ret->v, (ret->n + 1) * sizeof(*ret->v));
		ret->v[ret->n++] = (struct md_event){ .id = xstrdup(id), .type = xstrdup(type),
						      .status = xstrdup(st), .others = others };
	}
}

void md_events_free(struct md_events *ev)
{
	for (size_t i = 0; i < ev->n; i++) {
		free(ev->v[i].id);
		free(ev->v[i].type);
		free(ev->v[i].status);
	}
	free(ev->v);
	memset(ev, 0, sizeof(*ev));
}

int md_events_get(const char *url, const char *host, struct md_events *ret, struct strbuf *err)
{
	const char *args[] = { "events", url, NULL };
	struct proc_result res = { 0 };
	int r = run_helper(args, &res);

	memset(ret, 0, sizeof(*ret));
	if (r == 0 && res.out)
		md_events_parse(res.out, host, ret);
	else if (r < 0 && err && res.err && *res.err)
		sb_append(err, res.err);
	proc_result_free(&res);
	return r;
}

int md_events_ack(const char *url, const char *id, struct strbuf *err)
{
	const char *args[] = { "ack", url, id, NULL };
	struct proc_result res = { 0 };
	int r = run_helper(args, &res);

	if (r < 0 && err && res.err && *res.err)
		sb_append(err, res.err);
	proc_result_free(&res);
	return r;
}
