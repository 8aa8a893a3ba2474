/* SPDX-License-Identifier: MIT */
/*
 * The slurm step's pure parts for GPUs and versions: the GRES a node
 * registers with (slurmd --conf "Gres=..."), the gres.conf lines naming its
 * device files, and Slurm's version rule (a slurmd newer than slurmctld is
 * refused).  No I/O here; tests/unit/test_slurm.c checks each rule.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm.h"
#include "strbuf.h"
#include "number.h"

/* A GRES type Slurm takes as a word: lower-case letters, digits, '_', '-', '.'; 1 to 31 bytes. */
bool slurm_gres_type_ok(const char *t)
{
	size_t n = t ? strlen(t) : 0;

	if (!n || n > 31)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!islower((unsigned char)t[i]) && !isdigit((unsigned char)t[i]) && !strchr("_-.", t[i]))
			return false;
	return true;
}

static bool usable(const struct gpu_dev *g)
{
	return g->bound && g->dev_node && g->minor >= 0;
}

/* Every usable GPU's type is known and a word: the GRES is typed. */
static bool typed(const struct gpu_inventory *inv)
{
	size_t k = 0;

	for (size_t i = 0; i < inv->n && i < GPU_MAX; i++) {
		if (!usable(&inv->gpu[i]))
			continue;
		if (!slurm_gres_type_ok(inv->gpu[i].type))
			return false;
		k++;
	}
	return k > 0;
}

size_t slurm_gres_count(const struct gpu_inventory *inv)
{
	size_t k = 0;

	for (size_t i = 0; i < inv->n && i < GPU_MAX; i++)
		k += usable(&inv->gpu[i]);
	return k;
}

char *slurm_gres(const struct gpu_inventory *inv)
{
	struct strbuf sb = { 0 };
	size_t n = slurm_gres_count(inv);

	if (!n)
		return NULL;
	if (!typed(inv)) {
		sb_printf(&sb, "gpu:%zu", n);
		return sb_steal(&sb);
	}
	/* one gpu:<type>:<count> per type, in the order the types first appear */
	for (size_t i = 0; i < inv->n && i < GPU_MAX; i++) {
		const struct gpu_dev *g = &inv->gpu[i];
		size_t k = 0;
		bool seen = false;

		if (!usable(g))
			continue;
		for (size_t j = 0; j < i && !seen; j++)
			seen = usable(&inv->gpu[j]) && strcmp(inv->gpu[j].type, g->type) == 0;
		if (seen)
			continue;
		for (size_t j = i; j < inv->n && j < GPU_MAX; j++)
			k += usable(&inv->gpu[j]) && strcmp(inv->gpu[j].type, g->type) == 0;
		sb_printf(&sb, "%sgpu:%s:%zu", sb.len ? "," : "", g->type, k);
	}
	return sb_steal(&sb);
}

static int by_minor(const void *a, const void *b)
{
	int x = (*(const struct gpu_dev *const *)a)->minor, y = (*(const struct gpu_dev *const *)b)->minor;

	return (x > y) - (x < y);
}

char *slurm_gres_conf(const struct gpu_inventory *inv)
{
	const struct gpu_dev *v[GPU_MAX];
	struct strbuf sb = { 0 };
	size_t n = 0;
	bool t = typed(inv);

	sb_append(&sb, "# Written by hpcinit (the slurm step) from the GPUs this node has; do not edit.\n"
		  "# The head's gres.conf includes this file (docs/slurm.md).\n");
	for (size_t i = 0; i < inv->n && i < GPU_MAX; i++)
		if (usable(&inv->gpu[i]))
			v[n++] = &inv->gpu[i];
	qsort(v, n, sizeof(v[0]), by_minor);
	for (size_t i = 0; i < n; i++) {
		sb_append(&sb, "Name=gpu");
		if (t)
			sb_printf(&sb, " Type=%s", v[i]->type);
		sb_printf(&sb, " File=/dev/nvidia%d\n", v[i]->minor);
	}
	if (!n)
		sb_append(&sb, "# no GPUs\n");
	return sb_steal(&sb);
}

int slurm_version_parse(const char *text, struct slurm_version *ret)
{
	const char *p = text;
	unsigned long long v[2];
	const char *end;

	memset(ret, 0, sizeof(*ret));
	if (!text)
		return -EBADMSG;
	/* "slurm-wlm 22.05.8" (Debian's slurmd -V), "slurm 24.11.5", or a bare "22.05.8" */
	p += strcspn(p, "\n");
	while (p > text && p[-1] == ' ')
		p--;
	end = p;
	while (p > text && p[-1] != ' ' && p[-1] != '\n')
		p--;
	if (end - p <= 0 || (size_t)(end - p) >= sizeof(ret->text))
		return -EBADMSG;
	memcpy(ret->text, p, (size_t)(end - p));
	ret->text[end - p] = '\0';
	if (!num_ull_prefix(ret->text, 10, 65535, &v[0], &end) || *end != '.' ||
	    !num_ull_prefix(end + 1, 10, 65535, &v[1], &end) || (*end && *end != '.' && *end != '-'))
		return -EBADMSG;
	ret->major = (unsigned)v[0];
	ret->minor = (unsigned)v[1];
	return 0;
}

int slurm_config_version(const char *show_config, struct slurm_version *ret)
{
	const char *p;

	for (p = show_config; p && (p = strstr(p, "SLURM_VERSION")); p++) {
		const char *q = p + strlen("SLURM_VERSION");
		char line[64];
		size_t n;

		if (p != show_config && p[-1] != '\n')
			continue;
		q += strspn(q, " ");
		if (*q != '=')
			continue;
		q++;
		q += strspn(q, " ");
		n = strcspn(q, " \n");
		if (!n || n >= sizeof(line))
			break;
		memcpy(line, q, n);
		line[n] = '\0';
		return slurm_version_parse(line, ret);
	}
	memset(ret, 0, sizeof(*ret));
	return -EBADMSG;
}

bool slurm_version_newer(const struct slurm_version *a, const struct slurm_version *b)
{
	return a->major != b->major ? a->major > b->major : a->minor > b->minor;
}

const char *slurm_refused_protocol(const char *err)
{
	/*
	 * What a client newer than slurmctld reads: a 24.11 scontrol against
	 * 22.05's slurmctld printed "Zero Bytes were transmitted or received"
	 * (the controller logged "Invalid Protocol Version", then closed).
	 */
	static const char *const says[] = { "Zero Bytes were transmitted or received",
					    "Protocol version has changed", "Incompatible versions", NULL };

	for (size_t i = 0; err && says[i]; i++)
		if (strstr(err, says[i]))
			return says[i];
	return NULL;
}
