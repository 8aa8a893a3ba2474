/* SPDX-License-Identifier: MIT */
/*
 * The spec loader's messages (common/loader/spec.c, diag.c): YAML syntax and
 * the document's shape, each in its own words with its place; the limits
 * (nesting, error count, size); diagnostics printed with the source line
 * and a caret.
 */
#include "testspec.h"

static char fixture_dir[4096];

/* The fixtures: under $TOP_SRCDIR when set, else where the build says. */
static void fixture_dir_init(void)
{
	const char *top = getenv("TOP_SRCDIR");

	if (top && *top)
		snprintf(fixture_dir, sizeof(fixture_dir), "%s/tests/fixtures", top);
	else
		snprintf(fixture_dir, sizeof(fixture_dir), "%s", FIXTURE_DIR);
}

static void test_errors(void)
{
	size_t n = 0;
	unsigned line = 0, col = 0;

	/* Syntax problems, each in its own words. */
	TEST_STREQ(first_error("version: 1\ncluster:\n\tname: c\n", &n, &line, &col),
		   "tab character in indentation; YAML indents with spaces only");
	TEST_INTEQ(line, 3);
	TEST_INTEQ(col, 1);
	TEST_STREQ(first_error("version: 1\ncluster:\n  name: c\n role: head\n", &n, &line, &col),
		   "bad indentation: check that keys at the same level start in the same column "
		   "(did not find expected key while parsing a block mapping at line 1)");
	TEST_INTEQ(line, 4);
	TEST_INTEQ(col, 2);
	TEST_STREQ(first_error("version: 1\ncluster:\n  name: c\n    role: head\n", &n, &line, &col),
		   "bad indentation: check that keys at the same level start in the same column, "
		   "and quote values that contain ': ' (mapping values are not allowed in this context)");
	TEST_STREQ(first_error("version: 1\ncluster: {name: \"c\xff\"}\n", &n, &line, &col),
		   "invalid UTF-8 (byte 0xFF); save the file as UTF-8");
	TEST_INTEQ(line, 2);
	TEST_INTEQ(col, 19);
	TEST_STREQ(first_error("version: 1\ncluster: {name: \"\xc3\xa9\xc0\xaf\"}\n", &n, &line, &col),
		   "invalid UTF-8 (byte 0xC0); save the file as UTF-8");   /* overlong '/' */
	TEST_INTEQ(col, 19);
	TEST_STREQ(first_error("version: 1\ncluster: {name: \"\xed\xa0\x80\"}\n", NULL, NULL, NULL),
		   "invalid UTF-8 (byte 0xED); save the file as UTF-8");   /* surrogate */
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	TEST_INTEQ(spec_load_buffer("n.yaml", "version: 1\0\n", 12, &s, &d), -EINVAL);
	TEST_INTEQ(d.n, 1);
	if (d.n)
		TEST_STREQ(d.v[0].msg, "control character U+0000 is not allowed in YAML; remove it");
	diags_free(&d);
	TEST_STREQ(first_error("", &n, &line, &col),
		   "empty spec; expected a mapping with version: 1 and cluster:");
	TEST_STREQ(first_error("---\n", NULL, NULL, NULL),
		   "empty spec; expected a mapping with version: 1 and cluster:");
	TEST_STREQ(first_error("42\n", NULL, NULL, NULL),
		   "expected a mapping with version: 1 and cluster:, got \"42\"");
	TEST_STREQ(first_error("version: 1\ncluster: {name: c}\n---\nversion: 1\n", &n, &line, &col),
		   "a spec holds one YAML document; remove this second one (or its '---')");
	TEST_INTEQ(line, 3);
	TEST_STREQ(first_error("version: 1\ncluster: &a {name: c}\nx: *a\ny: *a\n", &n, NULL, NULL),
		   "aliases (*a) are not supported; write the value out");
	TEST_INTEQ(n, 2);
	TEST_STREQ(first_error("version: 1\nversion: 1\ncluster: {name: c}\n", &n, &line, &col),
		   "duplicate key 'version' (first at line 1)");
	TEST_INTEQ(line, 2);
	TEST_STREQ(first_error("version: one\ncluster: {name: c}\n", NULL, NULL, NULL),
		   "version: expected the spec version (1), got \"one\"");
	TEST_STREQ(first_error("version: 2\ncluster: {name: c}\n", NULL, NULL, NULL),
		   "version: unsupported spec version 2; this hpcinit reads version 1");
	TEST_STREQ(first_error("version: 1\ncluster: {name: c}\n[a]: 1\n", NULL, NULL, NULL),
		   "expected a key name, got a sequence");
	TEST_STREQ(first_error("version: 1\ncluster: {name: c}\nmemlock: [a]\n", NULL, NULL, NULL),
		   "memlock: expected a mapping, got a sequence");

	/* Deep nesting stops early with its own message. */
	struct strbuf deep = STRBUF_INIT;
	sb_append(&deep, "version: 1\ncluster: {name: c}\nx: ");
	for (int i = 0; i < 40; i++)
		sb_append(&deep, "[");
	TEST_STREQ(first_error(sb_str(&deep), NULL, NULL, NULL),
		   "nested more than 32 levels deep; a spec needs 4");
	sb_free(&deep);

	/* Every error in one run; at most DIAG_MAX, then one line says how many. */
	struct strbuf many = STRBUF_INIT;
	sb_append(&many, "version: 1\ncluster: {name: c}\n");
	for (int i = 0; i < 150; i++)
		sb_printf(&many, "bogus%d: 1\n", i);
	TEST_INTEQ(load_text(sb_str(&many), &s, &d), -EINVAL);
	TEST_INTEQ(d.n, DIAG_MAX + 1);
	if (d.n == DIAG_MAX + 1) {
		TEST_INTEQ(d.v[0].line, 3);
		TEST_INTEQ(d.v[DIAG_MAX - 1].line, 102);
		TEST_STREQ(d.v[DIAG_MAX].msg, "too many errors (150); fix these first");
		TEST_INTEQ(d.v[DIAG_MAX].line, 0);
	}
	diags_free(&d);
	sb_free(&many);

	/* Too big: refused before parsing. */
	char *big = xmalloc(SPEC_MAX_BYTES + 1);
	memset(big, '#', SPEC_MAX_BYTES + 1);
	s = NULL;
	TEST_INTEQ(spec_load_buffer("big.yaml", big, SPEC_MAX_BYTES + 1, &s, &d), -EFBIG);
	TEST_CHECK(s == NULL);
	TEST_INTEQ(d.n, 1);
	if (d.n)
		TEST_STREQ(d.v[0].msg,
			   "spec is larger than the limit of 1048576 bytes (1 MiB); is this the right file?");
	diags_free(&d);
	free(big);

	/* ret_spec is left alone on failure. */
	struct spec sentinel;
	s = &sentinel;
	TEST_INTEQ(load_text("version: 3\n", &s, &d), -EINVAL);
	TEST_CHECK(s == &sentinel);
	diags_free(&d);
	TEST_CHECK(spec_free(NULL) == NULL);
	diags_free(NULL);
	diags_free(&d);
}

static char *print_to_string(const struct diags *d)
{
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);

	diags_print(d, f);
	fclose(f);
	return out;
}

static void test_print(void)
{
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	char *out;

	load_text("version: 1\ncluster:\n  name: c1\nmemlock:\n  limit: 64Q\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:5:10: error: memlock.limit: expected a size like 64G or 'unlimited', got \"64Q\"\n"
			"  limit: 64Q\n"
			"         ^\n");
	free(out);
	diags_free(&d);

	/* Tabs before the column stay tabs in the caret line. */
	load_text("version: 1\ncluster: {name: c1}\nrdma: {\tlink_layer:\tfoo}\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:3:21: error: rdma.link_layer: expected one of infiniband, ethernet, any, got \"foo\"\n"
			"rdma: {\tlink_layer:\tfoo}\n"
			"       \t           \t^\n");
	free(out);
	diags_free(&d);

	/* Columns count characters: one pad for a two-byte letter. */
	load_text("version: 1\ncluster: {name: c1}\nkernel: {expect: \"é\", hold: maybe}\n", &s, &d);
	TEST_INTEQ(d.n, 1);
	if (d.n)
		TEST_INTEQ(d.v[0].col, 29);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:3:29: error: kernel.hold: expected a boolean (true or false), got \"maybe\"\n"
			"kernel: {expect: \"é\", hold: maybe}\n"
			"                            ^\n");
	free(out);
	diags_free(&d);

	/* kernel.updates: when_modules gates the hold on the listed modules: both must be there. */
	load_text("version: 1\ncluster: {name: c1}\nkernel: {hold: false, updates: when_modules}\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:3:32: error: kernel.updates: when_modules gates the hold, and kernel.hold is false; "
			"set kernel.hold: true or remove updates:\n"
			"kernel: {hold: false, updates: when_modules}\n"
			"                               ^\n");
	free(out);
	diags_free(&d);
	load_text("version: 1\ncluster: {name: c1}\nkernel:\n  updates: when_modules\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:4:12: error: kernel.updates: when_modules lets a newer kernel in when every "
			"kernel.modules exists for it, and kernel.modules is empty; list the modules (like [mlx5_ib, lustre])\n"
			"  updates: when_modules\n"
			"           ^\n");
	free(out);
	diags_free(&d);
	load_text("version: 1\ncluster: {name: c1}\nkernel: {updates: always}\n", &s, &d);
	out = print_to_string(&d);
	TEST_CHECK(strstr(out, "kernel.updates: expected one of hold, when_modules, got \"always\"") != NULL);
	free(out);
	diags_free(&d);
	load_text("version: 1\ncluster: {name: c1}\nkernel: {updates: when_modules, modules: [lustre]}\n", &s, &d);
	TEST_INTEQ(d.n, 0);
	TEST_INTEQ(s->kernel.updates, KUPD_WHEN_MODULES);
	spec_free(s);
	s = NULL;
	diags_free(&d);

	/* CR LF line ends: same lines, no CR in the source line. */
	load_text("version: 1\r\ncluster:\r\n  name: c1\r\n  role: boss\r\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:4:9: error: cluster.role: expected one of compute, head, got \"boss\"\n"
			"  role: boss\n"
			"        ^\n");
	free(out);
	diags_free(&d);

	/* A BOM is not a column. */
	load_text("\xef\xbb\xbfversion: 1\ncluster: {name: c1, role: x}\n", &s, &d);
	TEST_INTEQ(d.n, 1);
	if (d.n) {
		TEST_INTEQ(d.v[0].line, 2);
		TEST_INTEQ(d.v[0].col, 27);
	}
	diags_free(&d);
	load_text("\xef\xbb\xbfversoin: 1\ncluster: {name: c1}\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:1:1: error: unknown key 'versoin'; did you mean 'version'?\n"
			"versoin: 1\n"
			"^\n"
			"t.yaml:1:1: error: missing required key 'version'; add version: 1 as the first line\n"
			"versoin: 1\n"
			"^\n");
	free(out);
	diags_free(&d);

	/* Invalid bytes are shown as '?', the caret under them. */
	load_text("version: 1\ncluster: {name: \"a\x80\"}\n", &s, &d);
	out = print_to_string(&d);
	TEST_STREQ(out, "t.yaml:2:19: error: invalid UTF-8 (byte 0x80); save the file as UTF-8\n"
			"cluster: {name: \"a?\"}\n"
			"                  ^\n");
	free(out);
	diags_free(&d);

	/* A caret past a cut source line is left out; one just past the end is kept. */
	struct strbuf longline = STRBUF_INIT;
	sb_append(&longline, "version: 1\ncluster: {name: c1, role: compute");
	for (int i = 0; i < 600; i++)
		sb_append(&longline, " ");
	sb_append(&longline, ", x: 1}\n");
	load_text(sb_str(&longline), &s, &d);
	TEST_INTEQ(d.n, 1);
	if (d.n) {
		TEST_INTEQ(d.v[0].col, 636);
		TEST_INTEQ(strlen(d.v[0].source_line), SOURCE_LINE_MAX);
	}
	out = print_to_string(&d);
	TEST_CHECK(strchr(out, '^') == NULL);
	TEST_INTEQ(strlen(out), strlen(d.v[0].msg) + strlen("t.yaml:2:636: error: \n") + SOURCE_LINE_MAX + 1);
	free(out);
	diags_free(&d);
	sb_free(&longline);
	load_text("version: 1\ncluster: {name: \"c1\n", &s, &d);
	out = print_to_string(&d);
	TEST_CHECK(strstr(out, "\ncluster: {name: \"c1\n                ^\n") != NULL);
	free(out);
	diags_free(&d);

	/* No position: just the file. */
	TEST_INTEQ(spec_load_file("/nonexistent/hpcinit/spec.yaml", &s, &d), -ENOENT);
	out = print_to_string(&d);
	TEST_STREQ(out, "/nonexistent/hpcinit/spec.yaml: error: cannot open the spec: No such file or directory\n");
	free(out);
	diags_free(&d);
	TEST_INTEQ(spec_load_file(fixture_dir, &s, &d), -EISDIR);
	TEST_INTEQ(d.n, 1);
	diags_free(&d);
	diags_print(NULL, stderr);
}

static void test_load_file_big(void)
{
	char path[] = "/tmp/test_spec.XXXXXX";
	int fd = mkstemp(path);
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	char block[65536];

	TEST_CHECK(fd >= 0);
	if (fd < 0)
		return;
	memset(block, '#', sizeof(block));
	for (int i = 0; i < 20; i++)
		TEST_INTEQ(write(fd, block, sizeof(block)), sizeof(block));
	close(fd);
	TEST_INTEQ(spec_load_file(path, &s, &d), -EFBIG);
	TEST_INTEQ(d.n, 1);
	diags_free(&d);
	unlink(path);
}

int main(void)
{
	fixture_dir_init();
	test_errors();
	test_print();
	test_load_file_big();
	TEST_EXIT();
}
