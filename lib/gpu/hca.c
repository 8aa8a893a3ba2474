/* SPDX-License-Identifier: MIT */
/* Each GPU's nearest InfiniBand HCA: Azure's pairing per size, checked against sysfs's NUMA nodes (hca.h). */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fsutil.h"
#include "gpu/hca.h"
#include "hpcinit.h"
#include "number.h"
#include "strbuf.h"
#include "strlist.h"

static bool first_line(const struct ctx *c, const char *path, char *buf, size_t n)
{
	char *text = NULL;

	if (fs_read(c, path, &text, NULL) < 0)
		return false;
	text[strcspn(text, "\r\n")] = '\0';
	snprintf(buf, n, "%s", text);
	free(text);
	return true;
}

static int cmp_hca(const void *a, const void *b)
{
	return strcmp(((const struct gpu_hca *)a)->name, ((const struct gpu_hca *)b)->name);
}

/* One device: its PCI address (the device link's last part), NUMA node and link layer. */
static bool read_one(const struct ctx *c, const char *name, struct gpu_hca *h)
{
	char path[320], target[PATH_MAX], buf[64], *hp;
	const char *base;
	ssize_t k;
	long long numa;

	if (!name[0] || name[0] == '.' || name[0] == '-' ||
	    strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.-") != strlen(name))
		return false;   /* the name goes into shell profiles and status: only [A-Za-z0-9_.-] */
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device", name);
	hp = ctx_path(c, path);
	k = readlink(hp, target, sizeof(target) - 1);
	free(hp);
	if (k <= 0)
		return false;
	target[k] = '\0';
	base = strrchr(target, '/') ? strrchr(target, '/') + 1 : target;
	if (strlen(base) >= sizeof(h->pci) || strlen(name) >= sizeof(h->name))
		return false;
	memset(h, 0, sizeof(*h));
	/* lengths checked above: a copy, not a truncation (gcc -O1 cannot see it) */
	memcpy(h->name, name, strlen(name) + 1);
	memcpy(h->pci, base, strlen(base) + 1);
	h->numa = -1;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/device/numa_node", name);
	if (first_line(c, path, buf, sizeof(buf)) && num_ll(buf, -1, 1024, &numa))
		h->numa = (int)numa;
	snprintf(path, sizeof(path), "/sys/class/infiniband/%s/ports/1/link_layer", name);
	h->infiniband = first_line(c, path, buf, sizeof(buf)) && strcmp(buf, "InfiniBand") == 0;
	return true;
}

size_t gpu_hca_read(const struct ctx *c, struct gpu_hca *h, size_t max)
{
	char *hp = ctx_path(c, "/sys/class/infiniband");
	DIR *d = opendir(hp);
	struct dirent *e;
	size_t n = 0;

	free(hp);
	while (d && n < max && (e = readdir(d)))
		if (e->d_name[0] != '.' && read_one(c, e->d_name, &h[n]))
			n++;
	if (d)
		closedir(d);
	if (n)
		qsort(h, n, sizeof(*h), cmp_hca);
	return n;
}

static const struct gpu_hca *by_pci(const struct gpu_hca *h, size_t nh, const char *pci)
{
	for (size_t k = 0; k < nh; k++)
		if (strcmp(h[k].pci, pci) == 0)
			return &h[k];
	return NULL;
}

static void pair_azure(struct gpu_inventory *inv, const struct gpu_hca *h, size_t nh, const struct gpu_size *sz,
		       struct strlist *problems)
{
	for (size_t i = 0; i < inv->n; i++) {
		struct gpu_dev *g = &inv->gpu[i];
		const char *want = NULL;
		const struct gpu_hca *hca;

		for (size_t k = 0; sz->pairs[k].gpu && !want; k++)
			if (strcmp(sz->pairs[k].gpu, g->pci) == 0)
				want = sz->pairs[k].hca;
		if (!want) {
			strlist_push_take(problems, xasprintf("%s: not a GPU address of %s's layout: no HCA paired",
							     g->pci, sz->name));
			continue;
		}
		hca = by_pci(h, nh, want);
		if (!hca) {
			strlist_push_take(problems, xasprintf("%s: its HCA %s (Azure's pairing for %s) is not an RDMA "
							     "device here", g->pci, want, sz->name));
			continue;
		}
		snprintf(g->hca, sizeof(g->hca), "%s", hca->name);
		if (g->numa >= 0 && hca->numa >= 0 && g->numa != hca->numa)
			strlist_push_take(problems, xasprintf("%s (NUMA %d) and its HCA %s %s (NUMA %d) are on different "
							     "NUMA nodes: not %s's layout", g->pci, g->numa, hca->name,
							     hca->pci, hca->numa, sz->name));
	}
}

/* Without a published pairing: the n-th GPU of a NUMA node gets the n-th InfiniBand HCA of it. */
static void pair_numa(struct gpu_inventory *inv, const struct gpu_hca *h, size_t nh)
{
	for (size_t i = 0; i < inv->n; i++) {
		struct gpu_dev *g = &inv->gpu[i];
		size_t rank = 0, seen = 0;

		for (size_t j = 0; j < i; j++)
			rank += inv->gpu[j].numa == g->numa;
		for (size_t k = 0; k < nh; k++) {
			if (!h[k].infiniband || h[k].numa != g->numa)
				continue;
			if (seen++ == rank) {
				snprintf(g->hca, sizeof(g->hca), "%s", h[k].name);
				break;
			}
		}
	}
}

void gpu_hca_pair(struct gpu_inventory *inv, const struct gpu_hca *h, size_t nh, const struct gpu_size *sz,
		  struct strlist *problems, const char **how)
{
	for (size_t i = 0; i < inv->n; i++)
		inv->gpu[i].hca[0] = '\0';
	if (sz && sz->pairs) {
		*how = "Azure's pairing";
		pair_azure(inv, h, nh, sz, problems);
	} else {
		*how = "NUMA nodes";
		pair_numa(inv, h, nh);
	}
}
