/* SPDX-License-Identifier: MIT */
/*
 * discovery method "static": the names and ranges of discovery.hosts,
 * resolved with getaddrinfo.  No records: slots are assumed to be this
 * node's (a uniform scale set) and host keys are not known.
 */
#include "config.h"

#include <errno.h>
#include <netdb.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "discovery.h"

struct statics {
	size_t unresolved;              /* of the last pass */
	bool self_listed;
};

/* Resolve name; keep the address inside cluster.network (IPv4 first). */
static int resolve(const struct spec *spec, const char *name, char **ret, const char **why)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_ADDRCONFIG };
	struct addrinfo *res = NULL, *ai;
	int r = getaddrinfo(name, NULL, &hints, &res);

	if (r == EAI_BADFLAGS || (r != 0 && r != EAI_NONAME && r != EAI_AGAIN)) {
		hints.ai_flags = 0;
		r = getaddrinfo(name, NULL, &hints, &res);
	}
	if (r != 0) {
		*why = gai_strerror(r);
		return -EHOSTUNREACH;
	}
	*ret = NULL;
	for (int fam = AF_INET; !*ret; fam = AF_INET6) {
		for (ai = res; ai && !*ret; ai = ai->ai_next)
			if (ai->ai_family == fam && node_in_network(spec, ai->ai_addr))
				*ret = node_sa_text(ai->ai_addr);
		if (fam == AF_INET6)
			break;
	}
	freeaddrinfo(res);
	if (!*ret) {
		*why = "no address inside cluster.network";
		return -EADDRNOTAVAIL;
	}
	return 0;
}

static int static_open(struct disc_run *run)
{
	run->priv = xcalloc(1, sizeof(struct statics));
	return 0;
}

static int static_list(struct disc_run *run)
{
	const struct spec *spec = run->c->spec;
	const struct strlist *hosts = &spec->discovery.hosts;
	struct statics *st = run->priv;

	st->unresolved = 0;
	st->self_listed = false;
	for (size_t i = 0; i < hosts->n; i++) {
		const char *why = NULL;
		char *addr = NULL;
		struct peer *p;

		if (!record_hostname_valid(hosts->v[i])) {
			report_finding(&run->notes, ST_DEGRADED, "discovery.static.bad-name",
				       "static host \"%s\" is not a valid host name", hosts->v[i]);
			st->unresolved++;
			continue;
		}
		if (strcmp(hosts->v[i], run->self.hostname) == 0) {
			st->self_listed = true;
			continue;
		}
		if (resolve(spec, hosts->v[i], &addr, &why) < 0) {
			report_finding(&run->notes, ST_DEGRADED, "discovery.static.unresolved",
				       "static host %s does not resolve: %s", hosts->v[i], why);
			st->unresolved++;
			continue;
		}
		if (strcmp(addr, run->self.addr) == 0) {
			st->self_listed = true;
			free(addr);
			continue;
		}
		p = peerset_add(&run->found);
		p->hostname = xstrdup(hosts->v[i]);
		p->addr = addr;
		p->slots = run->self.slots;     /* no record: assume a uniform scale set */
	}
	return disc_expect_met(run);
}

static int static_collect(struct disc_run *run)
{
	const struct statics *st = run->priv;

	if (!st->self_listed)
		report_finding(&run->notes, ST_OK, "discovery.static.self-added",
			       "this node (%s) is not in discovery.hosts; added", run->self.hostname);
	return 0;
}

static int static_finish(struct disc_run *run, const struct peerset *set)
{
	const struct spec *spec = run->c->spec;
	const struct statics *st = run->priv;

	if (set->n < spec->discovery.expect)
		report_set(run->rep, ST_DEGRADED, "only %zu of %u expected nodes resolve", set->n,
			   spec->discovery.expect);
	else
		report_set(run->rep, ST_OK, "%zu nodes from discovery.hosts%s", set->n,
			   st->unresolved ? "; some do not resolve, see details" : "");
	return 0;
}

static void static_close(struct disc_run *run)
{
	free(run->priv);
	run->priv = NULL;
}

const struct disc_method_ops disc_method_static = {
	.name = "static",
	.id = DISC_STATIC,
	.first_poll_ms = 250,
	.names_from_spec = true,        /* discovery.hosts */
	.open = static_open,
	.publish = disc_nop,            /* the names are in every node's spec */
	.list = static_list,
	.collect = static_collect,
	.finish = static_finish,
	.leave = disc_nop,
	.close = static_close,
};
