/* SPDX-License-Identifier: MIT */
/*
 * common/loader/spec_tables.c: the tables themselves, walked as data.  Every
 * key is a lower-case word, unique in its table, keeps its marks in a slot
 * the loader has, and is documented: docs/spec.md has a row for every leaf
 * key (its dotted path, `nfs.mounts[].path` for lists of mappings) and
 * hpcinit.yaml(5) names every section.  A key added to a table without its
 * documentation fails here.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../common/loader/spec_tables.c"
#include "test.h"

static char *slurp(const char *path)
{
	FILE *f = fopen(path, "r");
	char *buf;
	long n;

	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = calloc(1, (size_t)n + 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	return buf;
}

static const char *spec_md, *man5;
static unsigned leaves;

static bool word(const char *k)
{
	if (!*k)
		return false;
	for (; *k; k++)
		if (!((*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') || *k == '_'))
			return false;
	return true;
}

static void walk(const struct field *fields, const char *prefix, int depth)
{
	for (const struct field *f = fields; f->key; f++) {
		char path[256], quoted[260];

		TEST_CHECK(word(f->key));
		TEST_CHECK(f->slot < M_COUNT);
		for (const struct field *g = fields; g < f; g++)
			if (strcmp(g->key, f->key) == 0) {
				printf("  %s%s: twice in one table\n", prefix, f->key);
				TEST_CHECK(0);
			}
		snprintf(path, sizeof(path), "%s%s", prefix, f->key);
		if (f->type == &T_MAP) {
			const struct schema *s = f->arg;
			char sub[260];

			if (depth == 0 && !strstr(man5, path)) {
				printf("  section %s: not in hpcinit.yaml(5)\n", path);
				TEST_CHECK(0);
			}
			snprintf(sub, sizeof(sub), "%s.", path);
			walk(s->fields, sub, depth + 1);
			continue;
		}
		if (f->type == &T_MAPLIST) {
			const struct maplist_arg *a = f->arg;
			char sub[260];

			snprintf(sub, sizeof(sub), "%s[].", path);
			walk(a->fields, sub, depth + 1);
			continue;
		}
		if (depth == 0)         /* version: the root's own scalar */
			continue;
		leaves++;
		snprintf(quoted, sizeof(quoted), "`%s`", path);
		if (!strstr(spec_md, quoted)) {
			printf("  %s: no row in docs/spec.md\n", path);
			TEST_CHECK(0);
		}
	}
}

int main(void)
{
	spec_md = slurp(SRCDIR "/docs/spec.md");
	man5 = slurp(SRCDIR "/packaging/man/hpcinit.yaml.5");
	TEST_CHECK(spec_md != NULL && man5 != NULL);
	if (!spec_md || !man5)
		TEST_EXIT();
	walk(spec_root_fields, "", 0);
	/* the walk reads the tables: the spec has dozens of keys */
	TEST_CHECK(leaves > 60);
	printf("%u keys\n", leaves);
	TEST_EXIT();
}
