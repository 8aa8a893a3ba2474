/* SPDX-License-Identifier: MIT */
/*
 * discovery method "scan": parallel non-blocking connects across
 * cluster.network (IPv4, at most a /16), each answer confirmed by its SSH
 * banner.  Names come from reverse lookup; host keys are fetched only with
 * ssh.host_keys: scan (trust on first use, opt-in).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "discovery.h"
#include "sshkey.h"

#define SCAN_CONCURRENCY 256

/* Addresses that answered the last pass. */
struct scan {
	uint32_t *found;                /* host order */
	size_t n_found;
	uint64_t t0;                    /* start of the last pass */
};

struct probe {
	int fd;
	uint32_t addr;                  /* host order */
	bool connected;
	uint64_t deadline;
	size_t got;
	char banner[8];
};

/*
 * Connect to port on every address of the network at once (bounded by
 * SCAN_CONCURRENCY), and keep the ones that greet with "SSH-".  Each probe
 * has the same timeout, so a /24 takes about one timeout.
 */
static int scan_network(const struct spec *spec, uint16_t port, uint64_t timeout_ms,
			uint32_t **ret, size_t *ret_n, struct report *rep)
{
	const struct cidr *net = &spec->cluster.network;
	uint32_t base = ntohl(net->addr.v4.s_addr);
	uint64_t first, last, next;
	struct probe *pr;
	struct pollfd *pfd;
	size_t conc = SCAN_CONCURRENCY, active = 0, n_found = 0;
	uint32_t *found = NULL;
	struct rlimit rl;

	if (net->prefix >= 31) {
		first = base;
		last = base + (net->prefix == 31 ? 1u : 0u);
	} else {
		first = base + 1;
		last = base + (1ull << (32 - net->prefix)) - 2;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < conc + 64)
		conc = rl.rlim_cur > 80 ? (size_t)rl.rlim_cur - 64 : 16;
	pr = xcalloc(conc, sizeof(*pr));
	pfd = xcalloc(conc, sizeof(*pfd));
	next = first;
	for (;;) {
		uint64_t now = now_ms();
		int wait = -1, nr;

		while (active < conc && next <= last) {
			struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons(port) };
			struct probe *p = &pr[active];
			int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

			sin.sin_addr.s_addr = htonl((uint32_t)next);
			if (fd < 0) {
				report_detail(rep, "scan: socket: %s", strerror(errno));
				break;
			}
			memset(p, 0, sizeof(*p));
			p->fd = fd;
			p->addr = (uint32_t)next;
			p->deadline = now + timeout_ms;
			next++;
			if (connect(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
				p->connected = true;
			else if (errno != EINPROGRESS) {
				close(fd);
				continue;
			}
			pfd[active].fd = fd;
			pfd[active].events = p->connected ? POLLIN : POLLOUT;
			active++;
		}
		if (active == 0)
			break;
		for (size_t i = 0; i < active; i++) {
			int left = pr[i].deadline > now ? (int)(pr[i].deadline - now) : 0;

			if (wait < 0 || left < wait)
				wait = left;
		}
		nr = poll(pfd, active, wait);
		if (nr < 0 && errno != EINTR) {
			report_detail(rep, "scan: poll: %s", strerror(errno));
			break;
		}
		now = now_ms();
		for (size_t i = 0; i < active;) {
			struct probe *p = &pr[i];
			bool done = false;

			if (pfd[i].revents && !p->connected) {
				int err = 0;
				socklen_t el = sizeof(err);

				if (getsockopt(p->fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0 || err)
					done = true;
				else {
					p->connected = true;
					pfd[i].events = POLLIN;
				}
			} else if (pfd[i].revents) {
				ssize_t n = read(p->fd, p->banner + p->got, 4 - p->got);

				if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR)))
					done = true;
				else if (n > 0) {
					p->got += (size_t)n;
					if (p->got >= 4) {
						if (memcmp(p->banner, "SSH-", 4) == 0) {
							found = xrealloc(found, (n_found + 1) * sizeof(*found));
							found[n_found++] = p->addr;
						}
						done = true;
					}
				}
			}
			if (!done && now >= p->deadline)
				done = true;
			if (done) {
				close(p->fd);
				active--;
				pr[i] = pr[active];
				pfd[i] = pfd[active];
				continue;
			}
			i++;
		}
	}
	for (size_t i = 0; i < active; i++)
		close(pr[i].fd);
	free(pr);
	free(pfd);
	*ret = found;
	*ret_n = n_found;
	return 0;
}

/*
 * Every key each peer's sshd offers, one key exchange per key type, by the
 * one host-key fetcher (sshkey.c, the helper hpcinit-ssh).
 */
static void fetch_host_keys(struct disc_run *run)
{
	const struct spec *spec = run->c->spec;
	const char **addrs = xcalloc(run->found.n + 1, sizeof(*addrs));
	struct strlist *keys = xcalloc(run->found.n + 1, sizeof(*keys));
	/* Each exchange gets the probe timeout, rounded down to seconds, plus one second. */
	unsigned tmo = (unsigned)(spec->discovery.scan_timeout_ms / 1000 + 1) * 1000;
	uint64_t left = ctx_remaining_ms(run->c);
	char why[256] = "";
	int r;

	for (size_t i = 0; i < run->found.n; i++)
		addrs[i] = run->found.v[i].addr;
	r = sshkey_fetch_host_keys(addrs, run->found.n, spec->discovery.scan_port, tmo, true,
				   left > UINT32_MAX ? UINT32_MAX : (unsigned)left, keys, NULL,
				   why, sizeof(why));
	if (r < 0)
		report_detail(run->rep, "scan: cannot fetch host keys: %s", why);
	for (size_t i = 0; i < run->found.n; i++) {
		run->found.v[i].host_keys = keys[i];
		memset(&keys[i], 0, sizeof(keys[i]));
	}
	free(keys);
	free(addrs);
}

static int scan_open(struct disc_run *run)
{
	const struct spec *spec = run->c->spec;

	run->priv = xcalloc(1, sizeof(struct scan));
	if (!spec->cluster.has_network || spec->cluster.network.family != AF_INET) {
		report_set(run->rep, ST_FAILED, "discovery.method scan needs an IPv4 cluster.network");
		return -EINVAL;
	}
	if (spec->cluster.network.prefix < 16) {
		report_set(run->rep, ST_FAILED, "cluster.network %s is larger than a /16; scan refuses it",
			   spec->cluster.network.text);
		return -E2BIG;
	}
	return 0;
}

static int scan_list(struct disc_run *run)
{
	const struct spec *spec = run->c->spec;
	struct scan *sc = run->priv;

	free(sc->found);
	sc->found = NULL;
	sc->t0 = now_ms();
	scan_network(spec, spec->discovery.scan_port, spec->discovery.scan_timeout_ms,
		     &sc->found, &sc->n_found, run->rep);
	/* This node answers too: it counts.  Formed earlier in this boot: no wait (disc_expect_met). */
	return run->ready || sc->n_found >= spec->discovery.expect;
}

/* The answering addresses become peers: names by reverse lookup, host keys when wanted. */
static int scan_collect(struct disc_run *run)
{
	const struct spec *spec = run->c->spec;
	bool want_keys = spec->ssh.present && spec->ssh.host_keys == HOSTKEYS_SCAN;
	struct scan *sc = run->priv;

	report_detail(run->rep, "scan of %s port %u: %zu SSH servers in %" PRIu64 " ms",
		      spec->cluster.network.text, spec->discovery.scan_port, sc->n_found,
		      now_ms() - sc->t0);
	if (want_keys)
		report_detail(run->rep, "host keys fetched by scan (trust on first use: an impostor "
			      "answering now would be trusted; prefer host_keys: pinned with method shared)");
	for (size_t i = 0; i < sc->n_found; i++) {
		struct in_addr a = { .s_addr = htonl(sc->found[i]) };
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr = a };
		char text[INET_ADDRSTRLEN], host[NI_MAXHOST];
		struct peer *p;

		inet_ntop(AF_INET, &a, text, sizeof(text));
		if (strcmp(text, run->self.addr) == 0)
			continue;
		p = peerset_add(&run->found);
		p->addr = xstrdup(text);
		if (getnameinfo((struct sockaddr *)&sin, sizeof(sin), host, sizeof(host), NULL, 0,
				NI_NAMEREQD) == 0 && record_hostname_valid(host))
			p->hostname = xstrdup(host);
		else
			p->hostname = xstrdup(text);
		p->slots = run->self.slots;     /* no record: assume a uniform scale set */
	}
	if (want_keys)
		fetch_host_keys(run);
	return 0;
}

static int scan_finish(struct disc_run *run, const struct peerset *set)
{
	const struct spec *spec = run->c->spec;

	if (set->n < spec->discovery.expect)
		report_set(run->rep, ST_DEGRADED, "only %zu of %u expected nodes answer on %s port %u",
			   set->n, spec->discovery.expect, spec->cluster.network.text,
			   spec->discovery.scan_port);
	else
		report_set(run->rep, ST_OK, "%zu nodes found by scan", set->n);
	return 0;
}

static void scan_close(struct disc_run *run)
{
	struct scan *sc = run->priv;

	if (sc)
		free(sc->found);
	free(sc);
	run->priv = NULL;
}

const struct disc_method_ops disc_method_scan = {
	.name = "scan",
	.id = DISC_SCAN,
	.first_poll_ms = 250,
	.names_from_spec = true,        /* reverse DNS, else the address */
	.open = scan_open,
	.publish = disc_nop,            /* this node's sshd answers the others' scans */
	.list = scan_list,
	.collect = scan_collect,
	.finish = scan_finish,
	.leave = disc_nop,
	.close = scan_close,
};
