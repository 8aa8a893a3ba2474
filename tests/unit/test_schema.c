/* SPDX-License-Identifier: MIT */
/*
 * common/loader/schema.c: the schema walker on a table of its own (not the
 * spec's): values stored through offsetof, nested mappings and sequences
 * of mappings with their paths, unknown keys with a suggestion or the list
 * of valid keys, duplicate keys, missing required keys with their hint,
 * wrong node types, the marks kept in slots, the root that is not a mapping.
 */
#include "config.h"

#include <stddef.h>

#include "../../common/loader/schema.c"
#include "test.h"

struct inner {
	bool present;
	unsigned port;
	bool on;
};
struct item {
	unsigned weight;
	bool heavy;
};
struct toy {
	unsigned level;
	bool flag;
	int mode;
	struct inner in;
	struct item *items;
	size_t n_items;
	unsigned finished;              /* items the finish hook saw */
};

static const struct int_arg level_arg = { 0, 10, sizeof(unsigned) };
static const struct int_arg port_arg = { 1, 65535, sizeof(unsigned) };
static const struct int_arg weight_arg = { 0, 100, sizeof(unsigned) };
static const struct enum_val mode_vals[] = { { "fast", 1 }, { "safe", 2 }, { NULL, 0 } };

static const struct field inner_fields[] = {
	{ "port", &T_INT, offsetof(struct inner, port), &port_arg, F_REQUIRED, 0, NULL },
	{ "on", &T_BOOL, offsetof(struct inner, on), NULL, 0, 0, NULL },
	{ NULL, NULL, 0, NULL, 0, 0, NULL },
};
static const struct schema inner_schema = { inner_fields, offsetof(struct inner, present), false };

static const struct field item_fields[] = {
	{ "weight", &T_INT, offsetof(struct item, weight), &weight_arg, F_REQUIRED, 0, "give each item a weight" },
	{ "heavy", &T_BOOL, offsetof(struct item, heavy), NULL, 0, 0, NULL },
	{ NULL, NULL, 0, NULL, 0, 0, NULL },
};

static void item_init(void *elem)
{
	((struct item *)elem)->weight = 7;      /* the default, kept when weight is bad */
}

static void item_finish(struct loader *L, void *elem, size_t i, yaml_node_t *e, uint32_t seen,
			void *base, const char *path)
{
	struct toy *t = base;

	(void)L;
	(void)elem;
	(void)i;
	(void)e;
	(void)path;
	if (seen & 1u)
		t->finished++;
}

static const struct maplist_arg items_arg = {
	item_fields, sizeof(struct item), 2, offsetof(struct toy, n_items),
	"a mapping with weight:", item_init, item_finish,
};

static const struct field toy_fields[] = {
	{ "level", &T_INT, offsetof(struct toy, level), &level_arg, F_REQUIRED, 1, "set level: 0 to 10" },
	{ "flag", &T_BOOL, offsetof(struct toy, flag), NULL, 0, 2, NULL },
	{ "mode", &T_ENUM, offsetof(struct toy, mode), mode_vals, 0, 0, NULL },
	{ "inner", &T_MAP, offsetof(struct toy, in), &inner_schema, 0, 0, NULL },
	{ "items", &T_MAPLIST, offsetof(struct toy, items), &items_arg, 0, 0, NULL },
	{ NULL, NULL, 0, NULL, 0, 0, NULL },
};

struct run {
	struct loader L;
	struct diags d;
	struct toy t;
	int r;
};

static void load(struct run *run, const char *text)
{
	memset(run, 0, sizeof(*run));
	source_open(&run->L.src, "toy.yaml", text, strlen(text), &run->d);
	source_index(&run->L.src);
	run->r = schema_load(&run->L, toy_fields, &run->t, "a toy mapping");
}

static void done(struct run *run)
{
	schema_unload(&run->L);
	source_close(&run->L.src);
	diags_free(&run->d);
	free(run->t.items);
}

/* Is there a diag with this message at line:col (0: any)? */
static bool has(const struct run *run, const char *msg, unsigned line, unsigned col)
{
	for (size_t i = 0; i < run->d.n; i++)
		if (strcmp(run->d.v[i].msg, msg) == 0 && (!line || run->d.v[i].line == line) &&
		    (!col || run->d.v[i].col == col))
			return true;
	fprintf(stderr, "no diag \"%s\" at %u:%u; have:\n", msg, line, col);
	for (size_t i = 0; i < run->d.n; i++)
		fprintf(stderr, "  %u:%u %s\n", run->d.v[i].line, run->d.v[i].col, run->d.v[i].msg);
	return false;
}

int main(void)
{
	struct run run;

	/* everything right: stored where the table says, marks kept for the slots */
	load(&run, "level: 3\nflag: true\nmode: safe\ninner: {port: 8080, on: yes}\n"
		   "items:\n  - {weight: 5, heavy: true}\n  - {weight: 6}\n");
	TEST_INTEQ(run.r, 0);
	TEST_INTEQ(run.d.n, 0);
	TEST_INTEQ(run.t.level, 3);
	TEST_CHECK(run.t.flag);
	TEST_INTEQ(run.t.mode, 2);
	TEST_CHECK(run.t.in.present);
	TEST_INTEQ(run.t.in.port, 8080);
	TEST_CHECK(run.t.in.on);
	TEST_INTEQ(run.t.n_items, 2);
	if (run.t.n_items == 2) {
		TEST_INTEQ(run.t.items[0].weight, 5);
		TEST_CHECK(run.t.items[0].heavy);
		TEST_INTEQ(run.t.items[1].weight, 6);
		TEST_CHECK(!run.t.items[1].heavy);
	}
	TEST_INTEQ(run.t.finished, 2);
	TEST_CHECK(run.L.slots[1].set && !run.L.slots[1].bad);
	TEST_INTEQ(run.L.slots[1].key.line, 0);         /* libyaml's marks count from 0 */
	TEST_INTEQ(run.L.slots[1].val.column, 7);
	TEST_CHECK(run.L.slots[2].set && run.L.slots[2].key.line == 1);
	TEST_CHECK(!run.L.slots[0].set && !run.L.slots[3].set);
	done(&run);

	/* an empty section: present, its required key missing, said at the section's key */
	load(&run, "level: 1\ninner:\n");
	TEST_CHECK(run.t.in.present);
	TEST_CHECK(has(&run, "inner: missing required key 'port'", 2, 1));
	done(&run);

	/* unknown keys: the closest name, else every valid one; the path of a nested key */
	load(&run, "level: 1\nflga: true\ninner: {port: 1, prot: 2}\nzzzzzz: 1\n");
	TEST_CHECK(has(&run, "unknown key 'flga'; did you mean 'flag'?", 2, 1));
	TEST_CHECK(has(&run, "inner: unknown key 'prot'; did you mean 'port'?", 3, 18));
	TEST_CHECK(has(&run, "unknown key 'zzzzzz'; valid keys here: level, flag, mode, inner, items", 4, 1));
	TEST_CHECK(!run.t.flag);
	done(&run);

	/* a duplicate key: named with the first one's line; the first value stays */
	load(&run, "level: 1\nflag: false\nflag: true\n");
	TEST_CHECK(has(&run, "duplicate key 'flag' (first at line 2)", 3, 1));
	TEST_CHECK(!run.t.flag);
	done(&run);

	/* the required key missing at the top: its hint, at the mapping's start */
	load(&run, "flag: true\n");
	TEST_INTEQ(run.r, 0);                   /* the walk reports; the caller counts errors */
	TEST_CHECK(has(&run, "missing required key 'level'; set level: 0 to 10", 1, 1));
	TEST_INTEQ(run.L.src.n_errors, 1);
	done(&run);

	/* wrong node types: a mapping for a scalar, a scalar for a mapping, a null for a scalar */
	load(&run, "level: {a: 1}\ninner: 5\nflag:\n");
	TEST_CHECK(has(&run, "level: expected an integer from 0 to 10, got a mapping", 1, 8));
	TEST_CHECK(has(&run, "inner: expected a mapping, got \"5\"", 2, 8));
	TEST_CHECK(has(&run, "flag: expected a boolean (true or false), got an empty value", 0, 0));
	TEST_CHECK(run.L.slots[1].set && run.L.slots[1].bad);   /* the mark kept, marked bad */
	TEST_CHECK(!run.t.in.present);
	done(&run);

	/* a key that is not a scalar */
	load(&run, "level: 1\n[a, b]: 2\n");
	TEST_CHECK(has(&run, "expected a key name, got a sequence", 2, 1));
	done(&run);

	/* sequences of mappings: each entry's path, the element default kept, too many entries */
	load(&run, "level: 1\nitems:\n  - {heavy: true}\n  - 3\n");
	TEST_CHECK(has(&run, "items[0]: missing required key 'weight'; give each item a weight", 3, 5));
	TEST_CHECK(has(&run, "items[1]: expected a mapping with weight:, got \"3\"", 4, 5));
	TEST_INTEQ(run.t.n_items, 2);
	if (run.t.n_items == 2)
		TEST_INTEQ(run.t.items[0].weight, 7);
	TEST_INTEQ(run.t.finished, 0);
	done(&run);
	load(&run, "level: 1\nitems: [{weight: 1}, {weight: 2}, {weight: 3}]\n");
	TEST_CHECK(has(&run, "items: more than 2 entries", 2, 8));
	TEST_CHECK(run.t.items == NULL);
	done(&run);
	load(&run, "level: 1\nitems: []\n");
	TEST_INTEQ(run.d.n, 0);
	TEST_CHECK(run.t.items == NULL && run.t.n_items == 0);
	done(&run);
	/* a duplicate sequence: reported once, the first one kept */
	load(&run, "level: 1\nitems: [{weight: 1}]\nitems: [{weight: 2}, {weight: 3}]\n");
	TEST_CHECK(has(&run, "duplicate key 'items' (first at line 2)", 3, 1));
	TEST_INTEQ(run.t.n_items, 1);
	done(&run);

	/* the root: a null document, or not a mapping; said with what the caller expects */
	load(&run, "~\n");
	TEST_INTEQ(run.r, -EINVAL);
	TEST_CHECK(has(&run, "empty spec; expected a toy mapping", 1, 1));
	done(&run);
	load(&run, "- 1\n- 2\n");
	TEST_INTEQ(run.r, -EINVAL);
	TEST_CHECK(has(&run, "expected a toy mapping, got a sequence", 1, 1));
	done(&run);
	/* YAML that does not parse: -EINVAL, no document left to unload */
	load(&run, "level: [1\n");
	TEST_INTEQ(run.r, -EINVAL);
	TEST_CHECK(!run.L.doc_loaded);
	TEST_CHECK(run.d.n >= 1);
	done(&run);

	/* enum_name: the name of a value, "?" for none */
	TEST_STREQ(enum_name(mode_vals, 1), "fast");
	TEST_STREQ(enum_name(mode_vals, 3), "?");
	TEST_EXIT();
}
