/* SPDX-License-Identifier: MIT */
/* The schema walker: mappings, sequences of mappings, loading (schema.h). */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "schema.h"

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

/* ---- the types for nesting ---- */

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

