/* SPDX-License-Identifier: MIT */
/* common/loader/spechosts.c: every host name the spec names, and only host names. */
#include "config.h"

#include "../../common/loader/spechosts.c"
#include "test.h"

static bool listed(const struct strlist *l, const char *s)
{
	for (size_t i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return true;
	return false;
}

int main(void)
{
	char srv[] = "/srv", client[] = "nfsclient1", data[] = "/data", network[] = "10.0.0.0/24";
	char src[] = "nfs01:/home", host[] = "nfs01", src2[] = "10.0.0.9:/x", host2[] = "10.0.0.9";
	char events[] = "http://metadata01/metadata/scheduledevents";
	struct spec_nfs_export exports[] = { { .path = srv, .clients = client },
					     { .path = data, .clients = network } };
	struct spec_nfs_mount mounts[] = { { .source = src, .host = host }, { .source = src2, .host = host2 } };
	struct spec s = { 0 };
	struct strlist names = { 0 }, whys = { 0 };

	/* nothing named: nothing listed */
	spec_host_names(&s, &names, &whys);
	TEST_INTEQ(names.n, 0);
	strlist_push(&s.slurm.conf_servers, "slurmhead:6817");
	strlist_push(&s.slurm.conf_servers, "10.0.0.4");
	strlist_push(&s.discovery.endpoints, "https://etcd1.example:2379");
	strlist_push(&s.discovery.endpoints, "http://127.0.0.1:2379");
	s.discovery.events_enable = true;
	s.discovery.events_url = events;
	s.nfs.exports = exports;
	s.nfs.n_exports = 2;
	s.nfs.mounts = mounts;
	s.nfs.n_mounts = 2;
	spec_host_names(&s, &names, &whys);
	/* addresses and networks name no host */
	TEST_INTEQ(names.n, 5);
	TEST_INTEQ(whys.n, names.n);
	TEST_CHECK(listed(&names, "nfs01") && listed(&names, "nfsclient1") && listed(&names, "slurmhead"));
	TEST_CHECK(listed(&names, "etcd1.example") && listed(&names, "metadata01"));
	TEST_CHECK(!listed(&names, "10.0.0.4") && !listed(&names, "10.0.0.9") && !listed(&names, "127.0.0.1"));
	TEST_CHECK(listed(&whys, "the NFS server of nfs01:/home"));
	TEST_CHECK(listed(&whys, "the NFS client of the export /srv"));
	TEST_CHECK(listed(&whys, "the slurmctld host slurmhead:6817 (slurm.conf_servers)"));
	TEST_CHECK(listed(&whys, "the etcd endpoint https://etcd1.example:2379"));
	TEST_CHECK(listed(&whys, "the Scheduled Events address http://metadata01/metadata/scheduledevents"));
	strlist_free(&names);
	strlist_free(&whys);
	strlist_free(&s.slurm.conf_servers);
	strlist_free(&s.discovery.endpoints);
	TEST_EXIT();
}
