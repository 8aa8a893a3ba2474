/* SPDX-License-Identifier: MIT */
/*
 * The slurm step's pure parts: what scontrol says about a node, the drain
 * reason hpcinit owns, the features and memory a node registers with.
 * No I/O here, so tests/unit/test_slurm.c checks each rule directly.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "slurm.h"
#include "strbuf.h"
#include "number.h"


/* The value of " KEY=" (or at the start) up to the next blank; copied into buf. */
static bool field(const char *text, const char *key, char *buf, size_t size)
{
	size_t kl = strlen(key);

	for (const char *p = text; (p = strstr(p, key)); p += kl) {
		size_t n;

		if (p != text && p[-1] != ' ' && p[-1] != '\n')
			continue;
		if (p[kl] != '=')
			continue;
		p += kl + 1;
		n = strcspn(p, " \n");
		if (n >= size)
			n = size - 1;
		memcpy(buf, p, n);
		buf[n] = '\0';
		return true;
	}
	return false;
}

static bool has_word(const char *state, const char *w)
{
	size_t wl = strlen(w);

	for (const char *p = state; (p = strstr(p, w)); p += wl)
		if ((p == state || p[-1] == '+') && (p[wl] == '\0' || p[wl] == '+' || p[wl] == '*'))
			return true;
	return false;
}

int slurm_parse_node(const char *text, struct slurm_node *ret)
{
	const char *r;
	char name[256];

	memset(ret, 0, sizeof(*ret));
	if (strstr(text, " not found") && !strstr(text, "NodeName="))
		return 0;
	if (!field(text, "NodeName", name, sizeof(name)) || !field(text, "State", ret->state, sizeof(ret->state)))
		return -EBADMSG;
	ret->found = true;
	(void)field(text, "NodeAddr", ret->addr, sizeof(ret->addr));
	ret->drain = has_word(ret->state, "DRAIN") || has_word(ret->state, "DRAINED") ||
		     has_word(ret->state, "DRAINING");
	ret->busy = has_word(ret->state, "ALLOCATED") || has_word(ret->state, "MIXED") ||
		    has_word(ret->state, "COMPLETING");
	ret->down = has_word(ret->state, "DOWN") || has_word(ret->state, "NOT_RESPONDING") ||
		    strchr(ret->state, '*') != NULL;
	/* Reason is free text, the last field: "Reason=some words [root@2026-11-26T17:31:50]". */
	r = strstr(text, " Reason=");
	if (r) {
		const char *end, *stamp;
		size_t n;

		r += strlen(" Reason=");
		end = r + strcspn(r, "\n");
		stamp = end;
		while (stamp > r && stamp[-1] == ' ')
			stamp--;
		if (stamp > r && stamp[-1] == ']') {
			const char *lb = stamp;

			while (lb > r && *lb != '[')
				lb--;
			if (*lb == '[' && lb > r && lb[-1] == ' ')
				stamp = lb - 1;
		}
		n = (size_t)(stamp - r);
		if (n >= sizeof(ret->reason))
			n = sizeof(ret->reason) - 1;
		memcpy(ret->reason, r, n);
		ret->reason[n] = '\0';
	}
	return 0;
}

char *slurm_reason(const struct strlist *tags)
{
	struct strbuf sb = { 0 };
	size_t i;

	sb_append(&sb, SLURM_REASON_PREFIX);
	for (i = 0; i < tags->n; i++) {
		/* room for ",tag" and a "+N" after it */
		if (i && sb.len + 1 + strlen(tags->v[i]) + 8 > SLURM_REASON_MAX)
			break;
		sb_printf(&sb, "%s%s", i ? "," : "", tags->v[i]);
	}
	if (i < tags->n)
		sb_printf(&sb, "+%zu", tags->n - i);
	if (!tags->n)
		sb_append(&sb, "unknown");
	return sb_steal(&sb);
}

bool slurm_reason_ours(const char *reason)
{
	return reason && strncmp(reason, SLURM_REASON_PREFIX, strlen(SLURM_REASON_PREFIX)) == 0;
}

static void push_feature(struct strlist *l, const char *f)
{
	char *s = xstrdup(f);

	for (char *p = s; *p; p++) {
		*p = (char)tolower((unsigned char)*p);
		if (!isalnum((unsigned char)*p) && *p != '_' && *p != '.' && *p != '-')
			*p = '_';
	}
	if (*s && !strlist_has(l, s))
		strlist_push(l, s);
	free(s);
}

void slurm_features(const char *cluster, const char *vm_size, const char *ib_domain,
		    const struct strlist *extra, struct strlist *ret)
{
	if (cluster)
		push_feature(ret, cluster);
	if (vm_size && *vm_size)
		push_feature(ret, vm_size);
	if (ib_domain && *ib_domain) {
		char *f = xasprintf("ib-%s", ib_domain);

		push_feature(ret, f);
		free(f);
	}
	for (size_t i = 0; extra && i < extra->n; i++)
		if (!strlist_has(ret, extra->v[i]))
			strlist_push(ret, extra->v[i]);
}

uint64_t slurm_real_memory_mb(uint64_t memtotal_kib, unsigned margin_pct)
{
	uint64_t mb = memtotal_kib / 1024;

	if (margin_pct > 100)
		margin_pct = 100;
	mb -= mb * margin_pct / 100;
	return mb ? mb : 1;
}

uint64_t slurm_meminfo_total_kib(const char *meminfo)
{
	const char *p = strstr(meminfo, "MemTotal:");
	unsigned long long v;

	if (!p || (p != meminfo && p[-1] != '\n'))
		return 0;
	p += strlen("MemTotal:");
	while (*p == ' ' || *p == '\t')
		p++;
	if (!num_ull_prefix(p, 10, UINT64_MAX, &v, NULL))
		return 0;
	return v;
}

char *slurm_node_conf(uint64_t real_memory_mb, const struct strlist *features)
{
	struct strbuf sb = { 0 };

	sb_printf(&sb, "RealMemory=%" PRIu64, real_memory_mb);
	for (size_t i = 0; i < features->n; i++)
		sb_printf(&sb, "%s%s", i ? "," : " Feature=", features->v[i]);
	return sb_steal(&sb);
}

uint64_t slurm_register_window_ms(uint64_t spec_ms, unsigned expect)
{
	uint64_t w;

	if (spec_ms != SLURM_WINDOW_AUTO)
		return spec_ms;
	if (expect <= 1)
		return 0;
	w = (uint64_t)expect * SLURM_WINDOW_PER_NODE_MS;
	return w < SLURM_WINDOW_MAX_MS ? w : SLURM_WINDOW_MAX_MS;
}

uint64_t slurm_register_delay_ms(uint64_t window_ms, unsigned expect, uint64_t index)
{
	uint64_t slots = expect > 1 ? expect : window_ms;

	if (!window_ms || !slots)
		return 0;
	/* slot < slots <= 2^32 or window_ms (at most an hour): no overflow */
	return index % slots * window_ms / slots;
}

uint64_t slurm_name_index(const char *name)
{
	uint64_t h = 0xcbf29ce484222325ull;

	for (const unsigned char *p = (const unsigned char *)name; *p; p++)
		h = (h ^ *p) * 0x100000001b3ull;
	return h;
}

char *slurm_told_line(const char *name, const char *want)
{
	return xasprintf("%s %s\n", name, want ? want : "ready");
}
