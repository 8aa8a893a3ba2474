/* SPDX-License-Identifier: MIT */
/*
 * This node's facts: what it publishes about itself whichever method runs
 * (docs/conventions.md "Peers"): hostname, cluster and IPoIB addresses, usable cores,
 * role, boot id, SSH host keys, the cluster users' public keys, and its
 * state (ready, degraded or failed with the worst finding's tag, and the
 * boot's time to ready: c->node, which the runner keeps).
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "discovery.h"
#include "fsutil.h"
#include "names.h"
#include "sshkey.h"
#include "sshkeys/resolve.h"
#include "sshkeys/userkeys.h"
#include "ib/identity.h"
#include "slots/slots.h"

bool node_in_network(const struct spec *spec, const struct sockaddr *sa)
{
	if (!spec->cluster.has_network)
		return true;
	if (sa->sa_family == AF_INET)
		return cidr_contains(&spec->cluster.network, AF_INET,
				     &((const struct sockaddr_in *)(const void *)sa)->sin_addr);
	if (sa->sa_family == AF_INET6)
		return cidr_contains(&spec->cluster.network, AF_INET6,
				     &((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr);
	return false;
}

char *node_sa_text(const struct sockaddr *sa)
{
	char buf[INET6_ADDRSTRLEN];
	const void *a = sa->sa_family == AF_INET ?
		(const void *)&((const struct sockaddr_in *)(const void *)sa)->sin_addr :
		(const void *)&((const struct sockaddr_in6 *)(const void *)sa)->sin6_addr;

	if (!inet_ntop(sa->sa_family, a, buf, sizeof(buf)))
		return NULL;
	return xstrdup(buf);
}

/*
 * An address given in the environment (documented test override for a fake
 * root, where the interfaces are the host's).  Must still be an address.
 */
static int env_address(const char *var, char **ret)
{
	const char *v = getenv(var);
	unsigned char buf[sizeof(struct in6_addr)];

	if (!v || !*v)
		return 0;
	if (inet_pton(AF_INET, v, buf) != 1 && inet_pton(AF_INET6, v, buf) != 1)
		return -EINVAL;
	*ret = xstrdup(v);
	return 1;
}

/* The interfaces, listed once for the record's addresses (*ifa: NULL until then). */
static int interfaces(struct ifaddrs **ifa)
{
	if (!*ifa && getifaddrs(ifa) < 0) {
		*ifa = NULL;
		return -errno;
	}
	return 0;
}

/*
 * This node's address: the first interface address inside cluster.network
 * (without a network: the first non-loopback IPv4, then IPv6, address).
 */
static int local_address(const struct ctx *c, struct report *rep, struct ifaddrs **ifa, char **ret)
{
	const struct spec *spec = c->spec;
	struct ifaddrs *i;
	char *best = NULL;
	int r = env_address("HPCINIT_ADDRESS", ret);

	if (r < 0) {
		report_detail(rep, "HPCINIT_ADDRESS=%s is not an IP address", getenv("HPCINIT_ADDRESS"));
		return r;
	}
	if (r > 0)
		return 0;
	r = interfaces(ifa);
	if (r < 0) {
		report_detail(rep, "cannot list interfaces: %s", strerror(-r));
		return r;
	}
	for (int pass = 0; pass < 2 && !best; pass++)
		for (i = *ifa; i && !best; i = i->ifa_next) {
			int fam = pass == 0 ? AF_INET : AF_INET6;

			if (!i->ifa_addr || i->ifa_addr->sa_family != fam ||
			    (i->ifa_flags & IFF_LOOPBACK) || !(i->ifa_flags & IFF_UP))
				continue;
			if (fam == AF_INET6 && IN6_IS_ADDR_LINKLOCAL(
				    &((struct sockaddr_in6 *)(void *)i->ifa_addr)->sin6_addr))
				continue;
			if (node_in_network(spec, i->ifa_addr))
				best = node_sa_text(i->ifa_addr);
		}
	if (!best) {
		if (spec->cluster.has_network)
			report_detail(rep, "no interface has an address inside cluster.network %s",
				      spec->cluster.network.text);
		else
			report_detail(rep, "no interface has a non-loopback address");
		return -EADDRNOTAVAIL;
	}
	*ret = best;
	return 0;
}

/*
 * HPCINIT_IPOIB_ADDRESS: an address, or address/prefix, which also gives the
 * IPoIB network.  1 and the parts set when it is usable, 0 when unset.
 */
static int env_ipoib(char **ret_addr, struct cidr *ret_net, bool *ret_has_net)
{
	const char *v = getenv("HPCINIT_IPOIB_ADDRESS");
	char *copy, *slash;
	int r;

	*ret_has_net = false;
	if (!v || !*v)
		return 0;
	copy = xstrdup(v);
	slash = strchr(copy, '/');
	if (slash)
		*slash = '\0';
	r = name_ip_valid(copy) ? 1 : 0;
	if (r && slash && cidr_parse(v, ret_net) == 0)
		*ret_has_net = true;
	if (r)
		*ret_addr = copy;
	else
		free(copy);
	return r;
}

int node_ipoib_network(const struct ctx *c, struct cidr *ret)
{
	const char *want = c->spec->rdma.present ? c->spec->rdma.ipoib : NULL;
	struct ifaddrs *ifa, *i;
	char *addr = NULL;
	bool has = false;
	int r = -ENOENT;

	if (!want)
		return -ENOENT;         /* the spec names no IPoIB interface */
	if (env_ipoib(&addr, ret, &has) > 0) {
		free(addr);
		return has ? 0 : -ENOENT;
	}
	if (getifaddrs(&ifa) < 0)
		return -errno;
	for (i = ifa; i && r < 0; i = i->ifa_next) {
		char text[INET_ADDRSTRLEN + 8], buf[INET_ADDRSTRLEN];
		uint32_t mask;
		unsigned prefix = 0;

		if (!i->ifa_addr || !i->ifa_netmask || i->ifa_addr->sa_family != AF_INET ||
		    strcmp(i->ifa_name, want) != 0)
			continue;
		mask = ntohl(((const struct sockaddr_in *)(const void *)i->ifa_netmask)->sin_addr.s_addr);
		while (prefix < 32 && (mask & (0x80000000u >> prefix)))
			prefix++;
		if (!inet_ntop(AF_INET, &((const struct sockaddr_in *)(const void *)i->ifa_addr)->sin_addr,
			       buf, sizeof(buf)))
			continue;
		snprintf(text, sizeof(text), "%s/%u", buf, prefix);
		if (cidr_parse(text, ret) == 0)
			r = 0;
	}
	freeifaddrs(ifa);
	return r;
}

/* The IPoIB address: rdma.ipoib's interface, else the first ib* interface with IPv4. */
static char *ipoib_address(const struct ctx *c, struct ifaddrs **ifa)
{
	const char *want = c->spec->rdma.present ? c->spec->rdma.ipoib : NULL;
	struct ifaddrs *i;
	char *ret = NULL;
	struct cidr net;
	bool has;

	if (env_ipoib(&ret, &net, &has) > 0)
		return ret;
	if (interfaces(ifa) < 0)
		return NULL;
	for (i = *ifa; i && !ret; i = i->ifa_next) {
		if (!i->ifa_addr || i->ifa_addr->sa_family != AF_INET || !(i->ifa_flags & IFF_UP))
			continue;
		if (want ? strcmp(i->ifa_name, want) == 0 : strncmp(i->ifa_name, "ib", 2) == 0)
			ret = node_sa_text(i->ifa_addr);
	}
	return ret;
}

static unsigned usable_cores(void)
{
	cpu_set_t set;
	long n;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return (unsigned)CPU_COUNT(&set);
	n = sysconf(_SC_NPROCESSORS_ONLN);
	return n > 0 ? (unsigned)n : 1;
}

static char *boot_id(const struct ctx *c)
{
	char *text = NULL;
	size_t n;

	if (fs_read(c, "/proc/sys/kernel/random/boot_id", &text, &n) < 0)
		return NULL;        /* a fake root without /proc: the record just omits it */
	while (n && (text[n - 1] == '\n' || text[n - 1] == ' '))
		text[--n] = '\0';
	for (size_t i = 0; i < n; i++)
		if (!((text[i] >= '0' && text[i] <= '9') || (text[i] >= 'a' && text[i] <= 'f') ||
		      text[i] == '-') || n > 64) {
			free(text);
			return NULL;
		}
	if (n == 0) {
		free(text);
		return NULL;
	}
	return text;
}

static char *self_hostname(const struct ctx *c)
{
	char buf[NODE_HOSTNAME_MAX];

	return node_hostname(c, buf, sizeof(buf)) ? xstrdup(buf) : NULL;
}

/* A finding's tag as a record's reason: [A-Za-z0-9._-], 1 to 127 bytes. */
static bool reason_valid(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 127)
		return false;
	for (; *s; s++)
		if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
		      *s == '.' || *s == '_' || *s == '-'))
			return false;
	return true;
}

void node_state_set(const struct ctx *c, struct peer *p)
{
	const struct node_state *n = &c->node;

	free(p->reason);
	p->reason = NULL;
	p->state = !n->known ? PEER_UNKNOWN : n->status == ST_FAILED ? PEER_FAILED :
		n->status == ST_DEGRADED ? PEER_DEGRADED : PEER_READY;
	/*
	 * Failed for its own rendezvous outage alone (the worst finding of its last run is
	 * DISC_UNREACHABLE_TAG): the node itself is fine.  Said as degraded, with that reason, so
	 * that its peers keep it in their MPI hostfiles when the share is back (hostfile.exclude:
	 * failed) -- the outage's cost, not a node's leave.  A crashed node writes nothing: the
	 * crash bound (its record's lease, then the grace) is untouched.
	 */
	if (p->state == PEER_FAILED && strcmp(n->reason, DISC_UNREACHABLE_TAG) == 0)
		p->state = PEER_DEGRADED;
	if (p->state != PEER_READY && p->state != PEER_UNKNOWN && reason_valid(n->reason))
		p->reason = xstrdup(n->reason);
	p->ready_ms = n->known && n->ready_ms > 0 ? n->ready_ms : 0;
}

void node_state_like(struct peer *dst, const struct peer *src)
{
	dst->state = src->state;
	dst->reason = src->reason;
	dst->ready_ms = src->ready_ms;
}

int node_facts(struct ctx *c, struct report *rep, struct peer *p)
{
	return node_facts_known(c, rep, p, NULL);
}

int node_facts_known(struct ctx *c, struct report *rep, struct peer *p, const struct peer *known)
{
	const struct spec *spec = c->spec;
	struct ifaddrs *ifa = NULL;
	int r = 0;

	memset(p, 0, sizeof(*p));
	p->self = true;
	p->hostname = self_hostname(c);
	if (!p->hostname || !record_hostname_valid(p->hostname)) {
		report_detail(rep, "this node's hostname \"%s\" is not a valid host name "
			      "([A-Za-z0-9._-]); set it (hostnamectl) or pass --hostname",
			      p->hostname ? p->hostname : "");
		return -EINVAL;
	}
	if (known && known->addr) {
		p->addr = xstrdup(known->addr);
		p->ipoib_addr = known->ipoib_addr ? xstrdup(known->ipoib_addr) : NULL;
	} else {
		r = local_address(c, rep, &ifa, &p->addr);
		if (r >= 0)
			p->ipoib_addr = ipoib_address(c, &ifa);
		if (ifa)
			freeifaddrs(ifa);
		if (r < 0)
			return r;
	}
	rdma_node_identity(c, rep, p);  /* fabric devices, P_Key, placement group (lib/ib/identity.c) */
	p->slots = slots_node(c, rep, usable_cores());   /* mpi.slots, mpi.slots_per_gpu (lib/slots) */
	p->head = spec->cluster.role == ROLE_HEAD;
	p->version = xstrdup(PACKAGE_VERSION);
	p->boot_id = known ? (known->boot_id ? xstrdup(known->boot_id) : NULL) : boot_id(c);
	p->updated = disc_now();
	node_state_set(c, p);
	r = sshkey_host_pubkeys(c, &p->host_keys);
	if (r < 0 && r != -ENOENT)
		report_detail(rep, "/etc/ssh: cannot read host keys: %s", strerror(-r));
	if (p->host_keys.n == 0)
		report_detail(rep, "no SSH host keys in /etc/ssh; peers cannot pin this node's "
			      "host key (run ssh-keygen -A)");
	if (spec->ssh.present) {
		/* the users as NSS resolves them here, so that the nodes compare (modules/ssh/users.c) */
		p->users = users_resolved_text(c, &spec->ssh.users);
		for (size_t i = 0; i < spec->ssh.users.n; i++) {
			char *pub = NULL;
			struct user_key *uk;

			/* not resolved (yet): the ssh step waits for the directory and says so */
			if (fs_lookup_user(c, spec->ssh.users.v[i], NULL, NULL, NULL) == -ENOENT)
				continue;
			r = ssh_user_key(c, rep, spec->ssh.users.v[i], spec->ssh.key_type, &pub);
			if (r < 0) {
				if (r != -ENOENT || ctx_may_write(c))
					report_raise(rep, ST_DEGRADED);
				continue;
			}
			p->user_keys = xrealloc(p->user_keys, (p->n_user_keys + 1) * sizeof(*p->user_keys));
			uk = &p->user_keys[p->n_user_keys++];
			uk->user = xstrdup(spec->ssh.users.v[i]);
			uk->key = pub;
		}
	}
	return 0;
}
