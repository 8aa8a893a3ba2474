/* SPDX-License-Identifier: MIT */
/* The IB sysfs inventory (see ibsysfs.h). */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "hpcinit.h"
#include "ibsysfs.h"
#include "number.h"

#define IB_MAX_PKEYS 256

/* Read a small sysfs attribute under the root, trimmed.  false when absent. */
bool ib_sysfs_read(const struct ctx *c, const char *path, char *buf, size_t n)
{
	char *hp = ctx_path(c, path);
	char *text = NULL;
	size_t len;
	int r = fs_read_host(hp, 4096, &text, &len);

	free(hp);
	buf[0] = '\0';
	if (r < 0)
		return false;
	while (len && (text[len - 1] == '\n' || text[len - 1] == ' ' || text[len - 1] == '\r'))
		text[--len] = '\0';
	snprintf(buf, n, "%s", text);
	free(text);
	return true;
}

/*
 * The last component of a symlink's target under the root (device/driver ->
 * ../../bus/pci/drivers/mlx5_core: "mlx5_core"), read, never followed.
 */
static bool sysfs_link_name(const struct ctx *c, const char *path, char *buf, size_t n)
{
	char *hp = ctx_path(c, path), target[512];
	ssize_t len = readlink(hp, target, sizeof(target) - 1);
	const char *base;

	free(hp);
	buf[0] = '\0';
	if (len <= 0)
		return false;
	target[len] = '\0';
	while (len > 1 && target[len - 1] == '/')
		target[--len] = '\0';
	base = strrchr(target, '/');
	base = base ? base + 1 : target;
	if (!ib_safe_name(base) || strlen(base) >= n)
		return false;
	memcpy(buf, base, strlen(base) + 1);
	return true;
}

/* "4: ACTIVE" -> 4 and "ACTIVE". */
int ib_parse_num_text(const char *s, char *txt, size_t n)
{
	const char *end;
	unsigned long long v;

	txt[0] = '\0';
	if (!*s)
		return -1;
	if (!num_ull_prefix(s, 10, 255, &v, &end)) {
		snprintf(txt, n, "%s", s);
		return -1;
	}
	while (*end == ':' || *end == ' ')
		end++;
	snprintf(txt, n, "%s", end);
	return (int)v;
}

/* "200 Gb/sec (4X HDR)" -> 200; "2.5 Gb/sec (1X SDR)" -> 2.5. */
double ib_parse_rate(const char *s)
{
	const char *end;
	double v;

	if (!num_double_prefix(s, 0, 1e6, &v, &end))
		return 0;
	while (*end == ' ')
		end++;
	if (strncmp(end, "Gb/sec", 6) == 0 || strncmp(end, "Gb/s", 4) == 0)
		return v;
	if (strncmp(end, "Mb/sec", 6) == 0)
		return v / 1000;
	return 0;
}

/* A hex sysfs value up to 0xffff (P_Keys, interface flags); 0 when malformed. */
unsigned ib_parse_hex16(const char *s)
{
	unsigned long long v;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;         /* sysfs writes P_Keys as 0xffff */
	if (!num_ull_prefix(s, 16, 0xffff, &v, NULL))
		return 0;
	return (unsigned)v;
}

static bool numeric_name(const char *s)
{
	if (!*s)
		return false;
	for (; *s; s++)
		if (*s < '0' || *s > '9')
			return false;
	return true;
}

bool ib_safe_name(const char *s)
{
	return *s && *s != '.' && !strchr(s, '/') && strlen(s) < 64;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted entries of a directory under the root (no dot entries), at most max. */
static void list_dir(const struct ctx *c, const char *path, struct strlist *out, size_t max)
{
	char *hp = ctx_path(c, path);
	DIR *d = opendir(hp);
	struct dirent *e;

	free(hp);
	if (!d)
		return;
	while ((e = readdir(d)) && out->n < max)
		if (ib_safe_name(e->d_name))
			strlist_push(out, e->d_name);
	closedir(d);
	if (out->n > 1)
		qsort(out->v, out->n, sizeof(*out->v), cmp_str);
}

static void read_port(const struct ctx *c, const char *dev, unsigned num, struct ib_port *p)
{
	char base[192], path[320], buf[128];
	struct strlist pk = { 0 };

	memset(p, 0, sizeof(*p));
	p->num = num;
	snprintf(base, sizeof(base), "/sys/class/infiniband/%s/ports/%u", dev, num);
	snprintf(path, sizeof(path), "%s/state", base);
	ib_sysfs_read(c, path, buf, sizeof(buf));
	p->state = ib_parse_num_text(buf, p->state_txt, sizeof(p->state_txt));
	snprintf(path, sizeof(path), "%s/phys_state", base);
	ib_sysfs_read(c, path, buf, sizeof(buf));
	p->phys = ib_parse_num_text(buf, p->phys_txt, sizeof(p->phys_txt));
	snprintf(path, sizeof(path), "%s/rate", base);
	ib_sysfs_read(c, path, p->rate_txt, sizeof(p->rate_txt));
	p->rate_gbps = ib_parse_rate(p->rate_txt);
	snprintf(path, sizeof(path), "%s/link_layer", base);
	if (!ib_sysfs_read(c, path, p->link_layer, sizeof(p->link_layer)))
		snprintf(p->link_layer, sizeof(p->link_layer), "InfiniBand");  /* before link_layer existed */
	snprintf(path, sizeof(path), "%s/lid", base);
	ib_sysfs_read(c, path, p->lid, sizeof(p->lid));
	snprintf(path, sizeof(path), "%s/sm_lid", base);
	ib_sysfs_read(c, path, p->sm_lid, sizeof(p->sm_lid));
	/* GID 0 is the link-local fe80::<port GUID>: its low 64 bits. */
	snprintf(path, sizeof(path), "%s/gids/0", base);
	if (ib_sysfs_read(c, path, buf, sizeof(buf)) && strlen(buf) == 39 && strncmp(buf, "fe80:", 5) == 0)
		memcpy(p->port_guid, buf + 20, 20);     /* "0c42:a103:0065:aa10" and its NUL */
	snprintf(path, sizeof(path), "%s/pkeys", base);
	list_dir(c, path, &pk, IB_MAX_PKEYS);
	for (size_t i = 0; i < pk.n; i++) {
		unsigned v;

		if (!numeric_name(pk.v[i]))
			continue;
		snprintf(path, sizeof(path), "%s/pkeys/%s", base, pk.v[i]);
		if (!ib_sysfs_read(c, path, buf, sizeof(buf)))
			continue;
		v = ib_parse_hex16(buf);
		if ((v & 0x7fff) == 0)
			continue;       /* empty slot */
		p->n_pkeys++;
		if (v > p->pkey_max)
			p->pkey_max = v;
	}
	strlist_free(&pk);
}

/* Every device under <root>/sys/class/infiniband, with its uverbs node. */
size_t ib_read_devices(const struct ctx *c, struct ib_dev *devs, size_t max)
{
	struct strlist names = { 0 }, uv = { 0 };
	size_t n = 0;

	list_dir(c, "/sys/class/infiniband", &names, max);
	list_dir(c, "/sys/class/infiniband_verbs", &uv, 256);
	for (size_t i = 0; i < names.n && n < max; i++) {
		struct ib_dev *d = &devs[n++];
		struct strlist ports = { 0 };
		char path[256], buf[64];

		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", names.v[i]);
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_type", d->name);
		ib_sysfs_read(c, path, buf, sizeof(buf));
		d->node_type = ib_parse_num_text(buf, d->node_type_txt, sizeof(d->node_type_txt));
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/fw_ver", d->name);
		ib_sysfs_read(c, path, d->fw_ver, sizeof(d->fw_ver));
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/node_guid", d->name);
		ib_sysfs_read(c, path, d->node_guid, sizeof(d->node_guid));
		/* Only the software drivers (rdma_rxe, siw) give a device a "parent" netdev. */
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/parent", d->name);
		ib_sysfs_read(c, path, d->parent, sizeof(d->parent));
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/driver", d->name);
		sysfs_link_name(c, path, d->driver, sizeof(d->driver));
		{
			struct strlist nets = { 0 };

			snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/net", d->name);
			list_dir(c, path, &nets, 64);
			if (nets.n && strlen(nets.v[0]) < sizeof(d->netdev))
				snprintf(d->netdev, sizeof(d->netdev), "%s", nets.v[0]);
			strlist_free(&nets);
		}
		if (d->netdev[0]) {
			snprintf(path, sizeof(path), "/sys/class/net/%s/master", d->netdev);
			if (sysfs_link_name(c, path, d->master, sizeof(d->master)) && strlen(d->master) < 16) {
				snprintf(path, sizeof(path), "/sys/class/net/%s/device/driver", d->master);
				sysfs_link_name(c, path, d->master_driver, sizeof(d->master_driver));
			}
		}
		for (size_t k = 0; k < uv.n; k++) {
			snprintf(path, sizeof(path), "/sys/class/infiniband_verbs/%s/ibdev", uv.v[k]);
			if (ib_sysfs_read(c, path, buf, sizeof(buf)) && strcmp(buf, d->name) == 0)
				snprintf(d->uverbs, sizeof(d->uverbs), "%s", uv.v[k]);
		}
		snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports", d->name);
		list_dir(c, path, &ports, 256);
		for (size_t k = 0; k < ports.n && d->n_ports < IB_MAX_PORTS; k++) {
			unsigned long long num;

			if (!numeric_name(ports.v[k]) || !num_ull(ports.v[k], 10, 255, &num) || num == 0)
				continue;
			read_port(c, d->name, (unsigned)num, &d->ports[d->n_ports++]);
		}
		strlist_free(&ports);
		d->kind = ib_classify(d);
	}
	strlist_free(&names);
	strlist_free(&uv);
	return n;
}

bool ib_link_matches(enum link_layer want, const char *have)
{
	switch (want) {
	case LINK_INFINIBAND:
		return strcmp(have, "InfiniBand") == 0;
	case LINK_ETHERNET:
		return strcmp(have, "Ethernet") == 0;
	case LINK_ANY:
		return true;
	}
	return false;
}


enum ib_kind ib_classify(const struct ib_dev *d)
{
	bool ib = false;

	if (d->parent[0])
		return IB_KIND_SOFT;
	for (unsigned k = 0; k < d->n_ports; k++)
		ib |= strcmp(d->ports[k].link_layer, "InfiniBand") == 0;
	if (ib)
		return IB_KIND_HCA;
	/*
	 * Azure's accelerated networking: the VF's netdev is enslaved to the
	 * synthetic NIC (hv_netvsc) that carries its address; MANA's RDMA
	 * device is always that VF.
	 */
	if (strcmp(d->master_driver, "hv_netvsc") == 0 || strcmp(d->driver, "mana") == 0 ||
	    strcmp(d->driver, "mana_ib") == 0)
		return IB_KIND_AN_VF;
	return IB_KIND_ROCE;
}

const char *ib_kind_text(const struct ib_dev *d)
{
	switch (d->kind) {
	case IB_KIND_HCA:
		return "InfiniBand HCA";
	case IB_KIND_ROCE:
		return d->node_type == 4 ? "iWARP NIC" : "RoCE NIC";
	case IB_KIND_AN_VF:
		return "accelerated networking's Ethernet VF";
	case IB_KIND_SOFT:
		return d->node_type == 4 ? "software iWARP (siw)" : "software RoCE (rdma_rxe)";
	}
	return "?";
}

const char *ib_dev_netdev(const struct ib_dev *d)
{
	return d->parent[0] ? d->parent : d->netdev;
}
