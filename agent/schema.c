/* SPDX-License-Identifier: MIT */
/* The schema walker and the typed handlers (schema.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"
#include "cidr.h"
#include "names.h"
#include "nodeset.h"
#include "schema.h"
#include "strlist.h"
#include "units.h"

const char *enum_name(const struct enum_val *t, int v)
{
	for (; t->name; t++)
		if (t->value == v)
			return t->name;
	return "?";
}

/* ---- nodes ---- */

bool node_is_null(const yaml_node_t *n)
{
	const char *s;

	if (!n)
		return true;
	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return false;
	s = (const char *)n->data.scalar.value;
	return !strcmp(s, "") || !strcmp(s, "~") || !strcmp(s, "null") ||
	       !strcmp(s, "Null") || !strcmp(s, "NULL");
}

const char *node_text(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

void sb_describe_node(struct strbuf *sb, const yaml_node_t *n)
{
	if (node_is_null(n))
		sb_append(sb, "an empty value");
	else if (n->type == YAML_MAPPING_NODE)
		sb_append(sb, "a mapping");
	else if (n->type == YAML_SEQUENCE_NODE)
		sb_append(sb, "a sequence");
	else
		sb_quote(sb, node_text(n));
}

/* ---- the walk ---- */

static void describe_field(const struct field *f, struct strbuf *sb)
{
	if (f->type->describe)
		f->type->describe(f, sb);
	else
		sb_append(sb, f->type->what);
}

void bad_value(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      const char *path, const char *extra)
{
	struct strbuf sb = STRBUF_INIT;

	sb_append(&sb, "expected ");
	describe_field(f, &sb);
	sb_append(&sb, ", got ");
	sb_describe_node(&sb, v);
	if (extra)
		sb_printf(&sb, "; %s", extra);
	/* An empty value has no place of its own: point at its key. */
	if (node_is_null(v) && k)
		error_mark(L, k->start_mark, path, "%s", sb_str(&sb));
	else
		error_mark(L, v->start_mark, path, "%s", sb_str(&sb));
	sb_free(&sb);
}

void *field_ptr(const struct field *f, void *base)
{
	return (char *)base + f->off;
}

yaml_node_t *ld_node(struct loader *L, int id)
{
	return yaml_document_get_node(&L->doc, id);
}

static char *join_path(const char *path, const char *key)
{
	return path && *path ? xasprintf("%s.%s", path, key) : xstrdup(key);
}

static void unknown_key(struct loader *L, const struct field *fields, yaml_node_t *k,
			const char *path)
{
	const char *names[32];
	size_t n = 0;
	const char *key = node_text(k), *s;
	struct strbuf sb = STRBUF_INIT;

	for (const struct field *f = fields; f->key && n < 32; f++)
		names[n++] = f->key;
	sb_append(&sb, "unknown key ");
	sb_quote_with(&sb, key, '\'');
	s = suggest(key, names, n);
	if (s) {
		sb_printf(&sb, "; did you mean '%s'?", s);
	} else {
		sb_append(&sb, "; valid keys here: ");
		for (size_t i = 0; i < n; i++)
			sb_printf(&sb, "%s%s", i ? ", " : "", names[i]);
	}
	error_mark(L, k->start_mark, path, "%s", sb_str(&sb));
	sb_free(&sb);
}

static bool parse_field(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			void *base, const char *path)
{
	bool is_null = node_is_null(v);

	switch (f->type->node) {
	case YAML_SCALAR_NODE:
		if (is_null || v->type != YAML_SCALAR_NODE) {
			bad_value(L, f, k, v, path, NULL);
			return false;
		}
		break;
	case YAML_MAPPING_NODE:
	case YAML_SEQUENCE_NODE:
		/* "memlock:" with nothing after it is an empty section. */
		if (!is_null && v->type != f->type->node) {
			bad_value(L, f, k, v, path, NULL);
			return false;
		}
		break;
	default:
		break;
	}
	return f->type->parse(L, f, k, is_null ? NULL : v, base, path);
}

/*
 * Walk one mapping against its field table.  where is the place to report a
 * missing key (the key that holds this mapping, or the mapping itself).
 * Returns a bit per field seen.
 */
uint32_t walk_map(struct loader *L, yaml_node_t *map, const struct field *fields,
			 void *base, const char *path, yaml_mark_t where)
{
	yaml_mark_t first[32];
	uint32_t seen = 0;

	if (map && map->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
		     p < map->data.mapping.pairs.top; p++) {
			yaml_node_t *k = ld_node(L, p->key), *v = ld_node(L, p->value);
			const struct field *f;
			size_t idx;
			char *sub;
			bool ok;

			if (!k || !v)
				continue;
			if (k->type != YAML_SCALAR_NODE || node_is_null(k)) {
				struct strbuf sb = STRBUF_INIT;

				sb_describe_node(&sb, k);
				error_mark(L, k->start_mark, path,
					   "expected a key name, got %s", sb_str(&sb));
				sb_free(&sb);
				continue;
			}
			for (f = fields; f->key; f++)
				if (!strcmp(f->key, node_text(k)))
					break;
			if (!f->key) {
				unknown_key(L, fields, k, path);
				continue;
			}
			idx = (size_t)(f - fields);
			if (seen & (1u << idx)) {
				error_mark(L, k->start_mark, path, "duplicate key '%s' (first at line %lu)",
					   f->key, (unsigned long)first[idx].line + 1);
				continue;
			}
			seen |= 1u << idx;
			first[idx] = k->start_mark;
			sub = join_path(path, f->key);
			ok = parse_field(L, f, k, v, base, sub);
			free(sub);
			if (f->slot) {
				L->slots[f->slot].set = true;
				L->slots[f->slot].bad = !ok;
				L->slots[f->slot].key = k->start_mark;
				L->slots[f->slot].val = node_is_null(v) ? k->start_mark : v->start_mark;
			}
		}
	}
	for (const struct field *f = fields; f->key; f++) {
		if (!(f->flags & F_REQUIRED) || (seen & (1u << (f - fields))))
			continue;
		if (f->hint)
			error_mark(L, where, path, "missing required key '%s'; %s", f->key, f->hint);
		else
			error_mark(L, where, path, "missing required key '%s'", f->key);
	}
	return seen;
}


yaml_node_t *map_get(struct loader *L, yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = ld_node(L, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp(node_text(k), key))
			return ld_node(L, p->value);
	}
	return NULL;
}

/* ---- typed handlers ---- */


void set_string(const struct field *f, void *base, char *s)
{
	char **dst = field_ptr(f, base);

	free(*dst);
	*dst = s;
}

static bool p_bool(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const char *s = node_text(v);
	bool *dst = field_ptr(f, base);

	if (streq_nocase(s, "true") || streq_nocase(s, "yes")) {
		*dst = true;
	} else if (streq_nocase(s, "false") || streq_nocase(s, "no")) {
		*dst = false;
	} else {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	return true;
}

static void describe_int(const struct field *f, struct strbuf *sb)
{
	const struct int_arg *a = f->arg;

	sb_printf(sb, "an integer from %lld to %lld", a->min, a->max);
}

static bool p_int(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		  void *base, const char *path)
{
	const struct int_arg *a = f->arg;
	long long n = 0;
	int r = parse_ll(node_text(v), &n);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || n < a->min || n > a->max) {
		error_mark(L, v->start_mark, path, "%s is out of range; use a number from %lld to %lld",
			   node_text(v), a->min, a->max);
		return false;
	}
	switch (a->width) {
	case 2: { uint16_t x = (uint16_t)n; memcpy(field_ptr(f, base), &x, 2); break; }
	case 4: { unsigned x = (unsigned)n; memcpy(field_ptr(f, base), &x, 4); break; }
	default: { uint64_t x = (uint64_t)n; memcpy(field_ptr(f, base), &x, 8); break; }
	}
	return true;
}

static void describe_float(const struct field *f, struct strbuf *sb)
{
	const struct float_arg *a = f->arg;

	sb_printf(sb, "a number from %.15g to %.15g", a->min, a->max);
}

static bool p_float(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		    void *base, const char *path)
{
	const struct float_arg *a = f->arg;
	double d = 0;
	int r = parse_number(node_text(v), &d);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || d < a->min || d > a->max) {
		error_mark(L, v->start_mark, path, "%s is out of range; use a number from %.15g to %.15g",
			   node_text(v), a->min, a->max);
		return false;
	}
	*(double *)field_ptr(f, base) = d;
	return true;
}

static void describe_size(const struct field *f, struct strbuf *sb)
{
	const struct size_arg *a = f->arg;

	if (a->unlimited)
		sb_append(sb, "a size like 64G or 'unlimited'");
	else
		sb_append(sb, "a size like 64M (K, M, G or T)");
}

static bool p_size(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const struct size_arg *a = f->arg;
	const char *s = node_text(v);
	uint64_t n = 0;
	int r;

	if (a->unlimited && !strcmp(s, "unlimited")) {
		*(bool *)((char *)base + a->unlimited_off) = true;
		return true;
	}
	r = parse_size(s, &n);
	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || n < a->min || n > a->max) {
		struct strbuf sb = STRBUF_INIT;

		if (a->max == UINT64_MAX) {
			sb_append(&sb, "use a size of at least ");
			sb_size(&sb, a->min);
		} else {
			sb_append(&sb, "use a size from ");
			sb_size(&sb, a->min);
			sb_append(&sb, " to ");
			sb_size(&sb, a->max);
		}
		if (a->unlimited)
			sb_append(&sb, ", or 'unlimited'");
		error_mark(L, v->start_mark, path, "%s is out of range; %s", s, sb_str(&sb));
		sb_free(&sb);
		return false;
	}
	if (a->unlimited)
		*(bool *)((char *)base + a->unlimited_off) = false;
	*(uint64_t *)field_ptr(f, base) = n;
	return true;
}

static bool p_duration(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		       void *base, const char *path)
{
	const struct dur_arg *a = f->arg;
	uint64_t ms = 0;
	int r = parse_duration(node_text(v), &ms);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r == -EDOM) {
		bad_value(L, f, k, v, path, "add a unit: ms, s, m or h");
		return false;
	}
	if (r < 0 || ms < a->min || ms > a->max) {
		struct strbuf sb = STRBUF_INIT;

		sb_duration(&sb, a->min);
		sb_append(&sb, " to ");
		sb_duration(&sb, a->max);
		error_mark(L, v->start_mark, path, "%s is out of range; use a duration from %s",
			   node_text(v), sb_str(&sb));
		sb_free(&sb);
		return false;
	}
	*(uint64_t *)field_ptr(f, base) = ms;
	return true;
}

static void describe_enum(const struct field *f, struct strbuf *sb)
{
	const struct enum_val *e = f->arg;

	sb_append(sb, "one of ");
	for (size_t i = 0; e[i].name; i++)
		sb_printf(sb, "%s%s", i ? ", " : "", e[i].name);
}

bool enum_lookup(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			const char *path, int *ret)
{
	const struct enum_val *e = f->arg;
	const char *names[16], *s = node_text(v), *close_;
	size_t n = 0;

	for (size_t i = 0; e[i].name; i++) {
		if (!strcmp(e[i].name, s)) {
			*ret = e[i].value;
			return true;
		}
		if (n < 16)
			names[n++] = e[i].name;
	}
	close_ = suggest(s, names, n);
	if (close_) {
		char *hint = xasprintf("did you mean '%s'?", close_);

		bad_value(L, f, k, v, path, hint);
		free(hint);
	} else {
		bad_value(L, f, k, v, path, NULL);
	}
	return false;
}

static bool p_enum(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	int x;

	if (!enum_lookup(L, f, k, v, path, &x))
		return false;
	memcpy(field_ptr(f, base), &x, sizeof(x));
	return true;
}

static bool p_path(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const struct path_arg *a = f->arg;
	const char *why = NULL;
	char *p = name_path_normalize(node_text(v), &why);

	if (p && a && a->not_root && !strcmp(p, "/")) {
		free(p);
		p = NULL;
		why = "expected a path other than /";
	}
	if (!p) {
		struct strbuf sb = STRBUF_INIT;

		sb_describe_node(&sb, v);
		error_mark(L, v->start_mark, path, "%s, got %s", why, sb_str(&sb));
		sb_free(&sb);
		return false;
	}
	set_string(f, base, p);
	return true;
}


/* A scalar checked by a function that says why it is wrong. */
static bool p_checked(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path, check_fn check, bool say_why)
{
	const char *why = check(node_text(v));

	if (why) {
		bad_value(L, f, k, v, path, say_why ? why : NULL);
		return false;
	}
	set_string(f, base, xstrdup(node_text(v)));
	return true;
}

static bool p_glob(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, name_check_glob, true);
}

static bool p_cluster_name(struct loader *L, const struct field *f, yaml_node_t *k,
			   yaml_node_t *v, void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, name_check_cluster, false);
}

static bool p_ifname(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		     void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, name_check_ifname, false);
}

static bool p_cidr(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const struct cidr_arg *a = f->arg;
	struct cidr c;

	if (cidr_parse(node_text(v), &c) < 0) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	*(struct cidr *)field_ptr(f, base) = c;
	*(bool *)((char *)base + a->has_off) = true;
	return true;
}


static void describe_list(const struct field *f, struct strbuf *sb)
{
	const struct list_arg *a = f->arg;

	sb_printf(sb, "a sequence of %s", a->items);
}

bool seq_count_ok(struct loader *L, const struct field *f, yaml_node_t *k,
			 yaml_node_t *v, const char *path, size_t n, size_t max, bool nonempty,
			 const char *item)
{
	if (n > max) {
		error_mark(L, v->start_mark, path, "more than %zu entries", max);
		return false;
	}
	if (nonempty && n == 0) {
		error_mark(L, v ? v->start_mark : k->start_mark, path,
			   "expected at least one entry (%s)", item);
		return false;
	}
	return true;
}

size_t seq_len(const yaml_node_t *v)
{
	return v ? (size_t)(v->data.sequence.items.top - v->data.sequence.items.start) : 0;
}

static bool p_strlist(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	const struct list_arg *a = f->arg;
	struct strlist *out = field_ptr(f, base);
	size_t n = seq_len(v);
	bool ok = true;

	strlist_free(out);
	if (!seq_count_ok(L, f, k, v, path, n, a->max, a->nonempty, a->item))
		return false;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
		struct strbuf sb = STRBUF_INIT;
		const char *why;
		size_t j;

		if (!e)
			continue;
		if (e->type != YAML_SCALAR_NODE || node_is_null(e)) {
			sb_describe_node(&sb, e);
			error_mark(L, e->start_mark, path, "entry %zu: expected %s, got %s", i + 1,
				   a->item, sb_str(&sb));
			sb_free(&sb);
			ok = false;
			continue;
		}
		why = a->check(node_text(e));
		if (why) {
			sb_quote(&sb, node_text(e));
			error_mark(L, e->start_mark, path, "%s: %s", sb_str(&sb), why);
			sb_free(&sb);
			ok = false;
			continue;
		}
		for (j = 0; a->unique && j < out->n; j++)
			if (!strcmp(out->v[j], node_text(e)))
				break;
		if (a->unique && j < out->n) {
			sb_quote(&sb, node_text(e));
			error_mark(L, e->start_mark, path, "%s is listed twice", sb_str(&sb));
			sb_free(&sb);
			ok = false;
			continue;
		}
		strlist_push(out, node_text(e));
	}
	return ok;
}

/* Host names and ranges, expanded in spec order. */
static bool p_hosts(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		    void *base, const char *path)
{
	const struct hosts_arg *a = f->arg;
	struct strlist *out = field_ptr(f, base);
	size_t n = seq_len(v), total = 0;
	struct noderange *nrs;
	bool ok = true;

	strlist_free(out);
	if (!seq_count_ok(L, f, k, v, path, n, a->max, false, "a host name"))
		return false;
	if (n == 0)
		return true;
	/* First pass: parse every entry and count the names against the limit. */
	nrs = xcalloc(n, sizeof(*nrs));
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
		struct strbuf sb = STRBUF_INIT;
		const char *why;

		if (!e)
			continue;
		if (e->type != YAML_SCALAR_NODE || node_is_null(e)) {
			sb_describe_node(&sb, e);
			error_mark(L, e->start_mark, path,
				   "entry %zu: expected a host name or range like node[01-16], got %s",
				   i + 1, sb_str(&sb));
			sb_free(&sb);
			ok = false;
			continue;
		}
		sb_quote(&sb, node_text(e));
		if (noderange_parse(node_text(e), &nrs[i], &why) < 0) {
			error_mark(L, e->start_mark, path, "bad node range %s: %s", sb_str(&sb), why);
			ok = false;
		} else if (nrs[i].count > a->max - total) {
			if (nrs[i].count > a->max)
				error_mark(L, e->start_mark, path, "%s expands to more than %zu hosts",
					   sb_str(&sb), a->max);
			else
				error_mark(L, e->start_mark, path,
					   "the list expands to more than %zu hosts at %s",
					   a->max, sb_str(&sb));
			noderange_clear(&nrs[i]);
			sb_free(&sb);
			ok = false;
			break;
		} else {
			total += (size_t)nrs[i].count;
		}
		sb_free(&sb);
	}
	/* Second pass: one array for every name, each checked as a host name. */
	strlist_reserve(out, total);
	out->v[out->n] = NULL;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
		size_t first = out->n;

		if (!nrs[i].prefix)
			continue;
		noderange_fill(&nrs[i], out);
		noderange_clear(&nrs[i]);
		for (size_t j = first; j < out->n; j++) {
			struct strbuf sb = STRBUF_INIT;

			if (name_hostname_valid(out->v[j]) || name_ip_valid(out->v[j]))
				continue;
			sb_quote(&sb, node_text(e));
			error_mark(L, e->start_mark, path, "%s: \"%s\" is not a valid host name%s",
				   sb_str(&sb), out->v[j],
				   strchr(out->v[j], '_') ? " ('_' is not allowed)" : "");
			sb_free(&sb);
			ok = false;
			break;
		}
	}
	free(nrs);
	return ok;
}

/* A mapping: its own table (a section, or inline keys like scan:). */
static bool p_map(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		  void *base, const char *path)
{
	const struct schema *sc = f->arg;
	void *sub = sc->inline_ ? base : field_ptr(f, base);
	size_t before = L->src.n_errors;

	if (sc->present_off >= 0)
		*(bool *)((char *)sub + sc->present_off) = true;
	walk_map(L, v, sc->fields, sub, path, k->start_mark);
	return L->src.n_errors == before;
}

static void describe_maplist(const struct field *f, struct strbuf *sb)
{
	const struct maplist_arg *a = f->arg;

	sb_printf(sb, "a sequence, each entry %s", a->item);
}

/* A sequence of mappings, each walked against the element table. */
static bool p_maplist(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	const struct maplist_arg *a = f->arg;
	size_t n = seq_len(v), before = L->src.n_errors;
	char **arr = field_ptr(f, base);
	size_t *count = (size_t *)((char *)base + a->count_off);

	if (*arr)
		return false;           /* only through a duplicate key, already reported */
	if (!seq_count_ok(L, f, k, v, path, n, a->max, false, a->item))
		return false;
	if (n == 0)
		return true;
	*arr = xcalloc(n, a->elem_size);
	*count = n;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
		char *elem = *arr + i * a->elem_size;
		char *sub = xasprintf("%s[%zu]", path, i);
		uint32_t seen;

		a->init(elem);
		if (e && e->type == YAML_MAPPING_NODE) {
			seen = walk_map(L, e, a->fields, elem, sub, e->start_mark);
			a->finish(L, elem, i, e, seen, base, sub);
		} else if (e) {
			struct strbuf sb = STRBUF_INIT;

			sb_describe_node(&sb, e);
			error_mark(L, e->start_mark, sub, "expected %s, got %s", a->item, sb_str(&sb));
			sb_free(&sb);
		}
		free(sub);
	}
	return L->src.n_errors == before;
}

/* ---- the types ---- */

const struct type T_BOOL = { "a boolean (true or false)", YAML_SCALAR_NODE, p_bool, NULL };
const struct type T_INT = { "an integer", YAML_SCALAR_NODE, p_int, describe_int };
const struct type T_FLOAT = { "a number", YAML_SCALAR_NODE, p_float, describe_float };
const struct type T_SIZE = { "a size", YAML_SCALAR_NODE, p_size, describe_size };
const struct type T_DURATION = { "a duration like 10s (ms, s, m or h)", YAML_SCALAR_NODE,
				  p_duration, NULL };
const struct type T_ENUM = { "one of", YAML_SCALAR_NODE, p_enum, describe_enum };
const struct type T_PATH = { "an absolute path", YAML_SCALAR_NODE, p_path, NULL };
const struct type T_GLOB = { "a glob pattern like mlx5_ib*", YAML_SCALAR_NODE, p_glob, NULL };
const struct type T_CLUSTER_NAME = {
	"a cluster name (1 to 63 lower-case letters, digits or '-', not starting or ending with '-')",
	YAML_SCALAR_NODE,
	p_cluster_name, NULL };
const struct type T_IFNAME = {
	"an interface name like ib0 (at most 15 characters, no '/', ':' or spaces)", YAML_SCALAR_NODE,
	p_ifname, NULL };
const struct type T_CIDR = { "a network like 10.0.0.0/24", YAML_SCALAR_NODE, p_cidr, NULL };
const struct type T_STRLIST = { "a sequence", YAML_SEQUENCE_NODE, p_strlist, describe_list };
const struct type T_HOSTS = { "a sequence of host names or ranges like node[01-16]",
			       YAML_SEQUENCE_NODE, p_hosts, NULL };
const struct type T_MAP = { "a mapping", YAML_MAPPING_NODE, p_map, NULL };
const struct type T_MAPLIST = { "a sequence", YAML_SEQUENCE_NODE, p_maplist, describe_maplist };

/* ---- loading ---- */

int schema_load(struct loader *L, const struct field *fields, void *base, const char *root_what)
{
	yaml_parser_t p;
	yaml_node_t *root;

	if (!source_check_bytes(&L->src) || !source_check_tabs(&L->src) ||
	    !source_check_yaml(&L->src))
		return -EINVAL;
	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, L->src.buf, L->src.len);
	if (!yaml_parser_load(&p, &L->doc)) {
		int r = p.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;

		source_yaml_error(&L->src, &p);
		yaml_parser_delete(&p);
		return r;
	}
	yaml_parser_delete(&p);
	L->doc_loaded = true;
	root = yaml_document_get_root_node(&L->doc);
	if (!root || node_is_null(root)) {
		error_at(L, 1, 1, NULL, "empty spec; expected %s", root_what);
		return -EINVAL;
	}
	if (root->type != YAML_MAPPING_NODE) {
		struct strbuf sb = STRBUF_INIT;

		sb_describe_node(&sb, root);
		error_mark(L, root->start_mark, NULL, "expected %s, got %s", root_what, sb_str(&sb));
		sb_free(&sb);
		return -EINVAL;
	}
	walk_map(L, root, fields, base, NULL, root->start_mark);
	return 0;
}

void schema_unload(struct loader *L)
{
	if (L->doc_loaded)
		yaml_document_delete(&L->doc);
	L->doc_loaded = false;
}
