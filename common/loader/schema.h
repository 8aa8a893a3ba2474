/* SPDX-License-Identifier: MIT */
/*
 * The schema walker: a YAML mapping is checked against a table of
 * {key, type, offsetof(field), arg} (netplan style), each type a typed
 * handler that stores the value or reports why not, at the value's place.
 * Unknown keys, duplicate keys, missing required keys and wrong node types
 * are reported by the walker (schema.c); the typed handlers are in
 * handlers.c; spec.c holds the tables, the defaults and the checks between
 * keys.
 */
#ifndef HPCINIT_SCHEMA_H
#define HPCINIT_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <yaml.h>

#include "diag.h"
#include "strbuf.h"

#define SCHEMA_SLOTS 24         /* marks a table can keep for later checks */

/* Where a key and its value were, for checks after the walk. */
struct slot {
	bool set, bad;
	yaml_mark_t key, val;
};

struct loader {
	struct source src;
	bool doc_loaded;
	yaml_document_t doc;
	struct slot slots[SCHEMA_SLOTS];
};

struct field;
typedef bool (*parse_fn)(struct loader *L, const struct field *f, yaml_node_t *k,
			 yaml_node_t *v, void *base, const char *path);

struct type {
	const char *what;               /* "a boolean (true or false)" */
	yaml_node_type_t node;          /* the node type it takes */
	parse_fn parse;
	void (*describe)(const struct field *f, struct strbuf *sb);   /* NULL: what */
};

enum { F_REQUIRED = 1u << 0 };

struct field {
	const char *key;
	const struct type *type;
	size_t off;
	const void *arg;
	unsigned flags;
	unsigned slot;                  /* 0 or where to keep the marks (< SCHEMA_SLOTS) */
	const char *hint;               /* said when the key is missing */
};

#define error_at(L, line, col, path, ...) source_error(&(L)->src, line, col, path, __VA_ARGS__)
#define error_mark(L, m, path, ...) source_error_mark(&(L)->src, m, path, __VA_ARGS__)

/* ---- the types and their args ---- */

struct enum_val {
	const char *name;
	int value;
};
const char *enum_name(const struct enum_val *t, int v);

struct int_arg {
	long long min, max;
	size_t width;                   /* sizeof the destination: 2, 4 or 8 */
};
struct float_arg {
	double min, max;
};
struct size_arg {
	uint64_t min, max;
	bool unlimited;                 /* "unlimited" allowed: sets the bool at unlimited_off */
	size_t unlimited_off;
};
struct dur_arg {
	uint64_t min, max;              /* ms */
};
/* CIDR; the offset of a bool set when present (has_network). */
struct cidr_arg {
	size_t has_off;
};
/* A path; NULL arg: any absolute path. */
struct path_arg {
	bool not_root;                  /* "/" itself is refused (mount points, exports) */
};
typedef const char *(*check_fn)(const char *s);
struct list_arg {
	const char *items;              /* "user names": for "a sequence of ..." */
	const char *item;               /* "a user name": for one entry */
	check_fn check;
	size_t max;
	bool nonempty, unique;
};
/* A sequence of enum names stored as bits; entries are checked against vals. */
struct flags_arg {
	const struct enum_val *vals;
	const char *item;               /* "format": "format 'x' is listed twice" */
	const char *list;               /* "openmpi, mpich, plain or clush" */
};
/* Host names and ranges like node[01-16], expanded; at most max names. */
struct hosts_arg {
	size_t max;
};
struct schema {
	const struct field *fields;
	long present_off;               /* offset of 'bool present', or -1 */
	bool inline_;                   /* fields live in the parent struct */
};
/* A sequence of mappings (nfs.mounts, nfs.exports). */
struct maplist_arg {
	const struct field *fields;
	size_t elem_size;
	size_t max;
	size_t count_off;               /* size_t count next to the array pointer */
	const char *item;               /* "a mapping with source: and path:" */
	void (*init)(void *elem);
	void (*finish)(struct loader *L, void *elem, size_t i, yaml_node_t *e, uint32_t seen,
		       void *base, const char *path);
};

extern const struct type T_BOOL, T_INT, T_FLOAT, T_SIZE, T_DURATION, T_ENUM, T_FLAGS, T_PATH,
	T_GLOB, T_CLUSTER_NAME, T_IFNAME, T_URL, T_CIDR, T_CLIENTS, T_STRLIST, T_HOSTS, T_MAP,
	T_MAPLIST, T_SSH_PUBKEY;

/* ---- for handlers and checks outside this file ---- */

bool node_is_null(const yaml_node_t *n);
const char *node_text(const yaml_node_t *n);
yaml_node_t *ld_node(struct loader *L, int id);
/* "a mapping", "a sequence", "an empty value" or the quoted scalar. */
void sb_describe_node(struct strbuf *sb, const yaml_node_t *n);
void *field_ptr(const struct field *f, void *base);
/* Store a freshly allocated string in a char * field. */
void set_string(const struct field *f, void *base, char *s);
/* "PATH: expected WHAT, got VALUE[; EXTRA]" at the value. */
void bad_value(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
	       const char *path, const char *extra);
/* Look s up in the field's enum table; on failure say what was expected (and the closest). */
bool enum_lookup(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		 const char *path, int *ret);
size_t seq_len(const yaml_node_t *v);
bool seq_count_ok(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		  const char *path, size_t n, size_t max, bool nonempty, const char *item);
yaml_node_t *map_get(struct loader *L, yaml_node_t *map, const char *key);
/* Walk one mapping against its table; where is the place to report a missing key. */
uint32_t walk_map(struct loader *L, yaml_node_t *map, const struct field *fields,
		  void *base, const char *path, yaml_mark_t where);

/*
 * Check the bytes and the YAML syntax of L->src, load the document and walk
 * its root mapping (root_what says what it must be) against fields.
 * 0, or -EINVAL/-ENOMEM with the problems reported.
 */
int schema_load(struct loader *L, const struct field *fields, void *base, const char *root_what);
void schema_unload(struct loader *L);

#endif
