/* SPDX-License-Identifier: MIT */
/*
 * The slurm step's arrival: what a thousand nodes booting at once ask of
 * slurmctld (docs/slurm.md, "Arrival").
 *   - The node's address goes with its registration (NodeAddr, NodeHostname
 *     in slurmd's --conf): slurmctld never resolves a name, so a name the
 *     controller's resolver does not know costs it nothing.
 *   - Registration is paced: each node waits its own slot of
 *     slurm.register_window, derived from its address (or name), so N nodes
 *     booting together arrive spread evenly over the window.
 *   - hpcinit check (Slurm's HealthCheckProgram, every few minutes on every
 *     node) asks slurmctld nothing while the node's state is the one it last
 *     told it: /run/hpcinit/slurm-told keeps that state (a reboot forgets it,
 *     and apply always asks).
 * The rules themselves (window, slot, record line) are pure, in words.c.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <inttypes.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cidr.h"
#include "fsutil.h"
#include "hpcinit.h"
#include "proc.h"
#include "record.h"
#include "slurm.h"

#define TOLD "/run/hpcinit/slurm-told"

/* The host part of an IPv4 address inside network; false when it is not one. */
static bool host_part(const struct cidr *net, const char *addr, uint64_t *ret)
{
	struct in_addr a;
	uint32_t mask;

	if (net->family != AF_INET || inet_pton(AF_INET, addr, &a) != 1 ||
	    !cidr_contains(net, AF_INET, &a))
		return false;
	mask = net->prefix >= 32 ? 0 : (uint32_t)(0xffffffffu >> net->prefix);
	*ret = ntohl(a.s_addr) & mask;
	return true;
}

/* The first up, non-loopback IPv4 address inside cluster.network; NULL when none. */
static char *address_in_network(const struct cidr *net)
{
	struct ifaddrs *ifa, *i;
	char buf[INET_ADDRSTRLEN], *best = NULL;

	if (net->family != AF_INET || getifaddrs(&ifa) < 0)
		return NULL;
	for (i = ifa; i && !best; i = i->ifa_next) {
		const struct in_addr *a;

		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || (i->ifa_flags & IFF_LOOPBACK) ||
		    !(i->ifa_flags & IFF_UP))
			continue;
		a = &((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr;
		if (cidr_contains(net, AF_INET, a) && inet_ntop(AF_INET, a, buf, sizeof(buf)))
			best = xstrdup(buf);
	}
	freeifaddrs(ifa);
	return best;
}

char *slurm_node_addr(const struct ctx *c)
{
	const struct peerset *ps = c->out ? c->out->peers : NULL;

	/* discovery's own record: the address every peer already uses */
	for (size_t i = 0; ps && i < ps->n; i++)
		if (ps->v[i].self && ps->v[i].addr)
			return xstrdup(ps->v[i].addr);
	return c->spec->cluster.has_network ? address_in_network(&c->spec->cluster.network) : NULL;
}

static unsigned cluster_size(const struct spec *s)
{
	return s->discovery.present ? s->discovery.expect : 0;
}

uint64_t slurm_window_of(const struct spec *s)
{
	return slurm_register_window_ms(s->slurm.register_window_ms, cluster_size(s));
}

int slurm_pace(struct ctx *c, struct report *rep, const char *name, const char *addr)
{
	const struct spec *s = c->spec;
	uint64_t window = slurm_window_of(s), index, delay, until;
	bool by_addr = addr && s->cluster.has_network && host_part(&s->cluster.network, addr, &index);

	if (!by_addr)
		index = slurm_name_index(name);
	delay = slurm_register_delay_ms(window, cluster_size(s), index);
	if (!window)
		return 0;
	report_detail(rep, "registration paced: %" PRIu64 " ms into a %" PRIu64 " ms window (%s%s, %u nodes)",
		      delay, window, by_addr ? "slot of address " : "slot of name ", by_addr ? addr : name,
		      cluster_size(s));
	if (!ctx_may_write(c) || !delay)
		return 0;
	until = now_ms() + delay;
	while (now_ms() < until) {
		uint64_t left = until - now_ms();

		if (ctx_remaining_ms(c) <= left)
			return -ETIMEDOUT;
		sleep_ms(left);
	}
	return 0;
}

int slurm_fix_addr(struct ctx *c, struct report *rep, const char *name, const char *have)
{
	char *addr = slurm_node_addr(c), *n, *a, *h;
	struct proc_result res = { 0 };
	uint64_t left = ctx_remaining_ms(c);
	int r;

	if (!addr || !have[0] || strcmp(addr, have) == 0) {
		free(addr);
		return 0;
	}
	n = xasprintf("nodename=%s", name);
	a = xasprintf("nodeaddr=%s", addr);
	h = xasprintf("nodehostname=%s", name);
	{
		const char *argv[] = { "scontrol", "update", n, a, h, NULL };

		r = left ? proc_run(argv, NULL, NULL, left < 30000 ? (unsigned)left : 30000, &res) : -ETIMEDOUT;
		if (r >= 0)
			r = res.timed_out ? -ETIMEDOUT : res.exit_code;
	}
	if (r == 0)
		report_finding(rep, ST_CHANGED, "slurm.nodeaddr", "%s: slurmctld had NodeAddr=%s (where it "
			       "registered from); set to %s, its address in cluster.network", name, have, addr);
	else
		report_finding(rep, ST_DEGRADED, "slurm.nodeaddr.failed", "%s: slurmctld has NodeAddr=%s, not "
			       "%s (its address in cluster.network), and scontrol update failed: %.200s", name,
			       have, addr, r < 0 ? strerror(-r) : res.err && *res.err ? res.err : "no output");
	proc_result_free(&res);
	free(n);
	free(a);
	free(h);
	free(addr);
	return 0;
}

/* ---- what this node last told slurmctld ------------------------------------ */

bool slurm_told_same(const struct ctx *c, const char *name, const char *want)
{
	char *text = NULL, *line = slurm_told_line(name, want);
	bool same = fs_read(c, TOLD, &text, NULL) == 0 && strcmp(text, line) == 0;

	free(text);
	free(line);
	return same;
}

/* hpcinit's own state in /run: written in check too (as runner.c's status is) */
void slurm_told_write(const struct ctx *c, const char *name, const char *want)
{
	struct ctx w = *c;
	struct report scratch;
	char *line = name ? slurm_told_line(name, want) : NULL;

	w.mode = RUN_APPLY;
	report_init(&scratch);
	if (!line)
		(void)fs_remove(&w, &scratch, TOLD);
	else if (fs_mkdir_p(&w, &scratch, "/run/hpcinit", 0755, 0, 0) >= 0)
		(void)fs_write(&w, &scratch, TOLD, line, strlen(line), 0644, 0, 0);
	report_free(&scratch);
	free(line);
}
