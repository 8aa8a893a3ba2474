/* SPDX-License-Identifier: MIT */
/*
 * Every tests/fixtures/bad/NAME.yaml must be rejected with exactly the lines
 * of NAME.expect ("NAME.yaml:L:C: error: message", one per diag, in order);
 * every tests/fixtures/good/NAME.yaml must load without a diag.  The fixtures
 * are found through TOP_SRCDIR (make check) or FIXTURE_DIR (built in).
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <string.h>

#include "spec.h"
#include "strbuf.h"
#include "test.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif

/* The bad fixtures there must be at least this many: a wrong directory fails. */
#define MIN_BAD_FIXTURES 25

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rbe");
	struct strbuf sb = STRBUF_INIT;
	char chunk[4096];
	size_t n;

	if (!f)
		return NULL;
	while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0)
		sb_appendn(&sb, chunk, n);
	fclose(f);
	*len = sb.len;
	return sb_steal(&sb);
}

static bool has_suffix(const char *s, const char *suffix)
{
	size_t n = strlen(s), m = strlen(suffix);

	return n > m && !strcmp(s + n - m, suffix);
}

/* Sorted names of regular *.suffix files in dir. */
static size_t list_dir(const char *dir, const char *suffix, struct strlist *out)
{
	struct dirent **ents;
	int n = scandir(dir, &ents, NULL, alphasort);

	if (n < 0) {
		fprintf(stderr, "cannot list %s: %s\n", dir, strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (has_suffix(ents[i]->d_name, suffix))
			strlist_push(out, ents[i]->d_name);
		free(ents[i]);
	}
	free(ents);
	return out->n;
}

static void check_bad(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	char *expect_path = xasprintf("%.*s.expect", (int)(strlen(path) - 5), path);
	struct diags d = { NULL, 0 };
	struct strbuf got = STRBUF_INIT;
	struct spec *s = NULL;
	size_t len = 0, elen = 0;
	char *text = slurp(path, &len), *expect = slurp(expect_path, &elen);
	int r;

	TEST_CHECK(text != NULL);
	TEST_CHECK(expect != NULL);
	if (!text || !expect) {
		fprintf(stderr, "  %s: missing %s\n", name, text ? expect_path : path);
		goto out;
	}
	/* The basename, so the lines are the same in a VPATH build or distcheck. */
	r = spec_load_buffer(name, text, len, &s, &d);
	TEST_CHECK(r < 0);
	TEST_CHECK(s == NULL);
	for (size_t i = 0; i < d.n; i++) {
		const struct diag *g = &d.v[i];

		if (g->line && g->col)
			sb_printf(&got, "%s:%u:%u: error: %s\n", g->file, g->line, g->col, g->msg);
		else
			sb_printf(&got, "%s: error: %s\n", g->file, g->msg);
	}
	TEST_STREQ(sb_str(&got), expect);
	if (strcmp(sb_str(&got), expect))
		fprintf(stderr, "  (fixture %s)\n", name);
out:
	spec_free(s);
	diags_free(&d);
	sb_free(&got);
	free(text);
	free(expect);
	free(path);
	free(expect_path);
}

static void check_good(const char *dir, const char *name)
{
	char *path = xasprintf("%s/%s", dir, name);
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	size_t len = 0;
	char *text = slurp(path, &len);

	TEST_CHECK(text != NULL);
	if (text) {
		TEST_INTEQ(spec_load_buffer(name, text, len, &s, &d), 0);
		TEST_INTEQ(d.n, 0);
		diags_print(&d, stderr);
		TEST_CHECK(s && s->cluster.name);
	}
	spec_free(s);
	diags_free(&d);
	free(text);
	free(path);
}

int main(void)
{
	const char *top = getenv("TOP_SRCDIR");
	char *base = top && *top ? xasprintf("%s/tests/fixtures", top) : xstrdup(FIXTURE_DIR);
	char *bad_dir = xasprintf("%s/bad", base), *good_dir = xasprintf("%s/good", base);
	struct strlist yamls = { NULL, 0 }, expects = { NULL, 0 }, goods = { NULL, 0 };

	list_dir(bad_dir, ".yaml", &yamls);
	list_dir(bad_dir, ".expect", &expects);
	list_dir(good_dir, ".yaml", &goods);
	printf("%zu bad fixtures, %zu good ones, in %s\n", yamls.n, goods.n, base);
	TEST_CHECK(yamls.n >= MIN_BAD_FIXTURES);
	TEST_CHECK(goods.n >= 1);
	/* Every expectation has its spec and the other way round. */
	TEST_INTEQ(expects.n, yamls.n);
	for (size_t i = 0; i < yamls.n; i++)
		check_bad(bad_dir, yamls.v[i]);
	for (size_t i = 0; i < goods.n; i++)
		check_good(good_dir, goods.v[i]);
	strlist_free(&yamls);
	strlist_free(&expects);
	strlist_free(&goods);
	free(bad_dir);
	free(good_dir);
	free(base);
	TEST_EXIT();
}
