/* SPDX-License-Identifier: MIT */
/*
 * The host names a spec names (spec_host_names): NFS servers and export
 * clients, slurm.conf_servers, etcd endpoints, the Scheduled Events and
 * instance metadata addresses.  One list, so that discovery reserves them
 * all (modules/discovery/admit.c): no peer record may claim one.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "spec.h"
#include "strbuf.h"

/* A host name (not an address, a network or a pattern) into names, with what it is. */
static void host_name(struct strlist *names, struct strlist *whys, char *host, char *why)
{
	if (host && name_hostname_valid(host) && !name_ip_valid(host)) {
		strlist_push_take(names, host);
		strlist_push_take(whys, why);
		return;
	}
	free(host);
	free(why);
}

void spec_host_names(const struct spec *s, struct strlist *names, struct strlist *whys)
{
	for (size_t i = 0; i < s->nfs.n_mounts; i++)
		host_name(names, whys, s->nfs.mounts[i].host ? xstrdup(s->nfs.mounts[i].host) : NULL,
			  xasprintf("the NFS server of %s", s->nfs.mounts[i].source));
	for (size_t i = 0; i < s->nfs.n_exports; i++)
		host_name(names, whys, s->nfs.exports[i].clients ? xstrdup(s->nfs.exports[i].clients) : NULL,
			  xasprintf("the NFS client of the export %s", s->nfs.exports[i].path));
	for (size_t i = 0; i < s->slurm.conf_servers.n; i++) {
		const char *hp = s->slurm.conf_servers.v[i];

		host_name(names, whys, xstrndup(hp, strcspn(hp, ":")),
			  xasprintf("the slurmctld host %s (slurm.conf_servers)", hp));
	}
	for (size_t i = 0; i < s->discovery.endpoints.n; i++)
		host_name(names, whys, name_url_host(s->discovery.endpoints.v[i]),
			  xasprintf("the etcd endpoint %s", s->discovery.endpoints.v[i]));
	if (s->discovery.events_enable && s->discovery.events_url)
		host_name(names, whys, name_url_host(s->discovery.events_url),
			  xasprintf("the Scheduled Events address %s", s->discovery.events_url));
	if (s->rdma.present && s->rdma.imds_url)
		host_name(names, whys, name_url_host(s->rdma.imds_url),
			  xasprintf("the instance metadata address %s", s->rdma.imds_url));
	if (s->gpu.present && s->gpu.imds_url)
		host_name(names, whys, name_url_host(s->gpu.imds_url),
			  xasprintf("the instance metadata address %s (gpu.imds_url)", s->gpu.imds_url));
}
