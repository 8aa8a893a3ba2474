/* SPDX-License-Identifier: MIT */
/*
 * What the spec loader's unit tests share (test_spec.c, test_handlers.c,
 * test_spec_errors.c): spec.c #included (to reach its statics), and loading
 * text that must pass or must fail.
 */
#ifndef HPCINIT_TESTSPEC_H
#define HPCINIT_TESTSPEC_H

#include "../../common/loader/spec.c"

#include <sys/stat.h>

#include "test.h"

#ifndef FIXTURE_DIR
#define FIXTURE_DIR "tests/fixtures"
#endif

/* Load text; keep the diags for the caller.  Returns the loader's result. */
static inline int load_text(const char *text, struct spec **ret, struct diags *d)
{
	return spec_load_buffer("t.yaml", text, strlen(text), ret, d);
}

/* Load text that must fail; returns the first message (static copy) and the count. */
static inline const char *first_error(const char *text, size_t *count, unsigned *line, unsigned *col)
{
	static char msg[1024];
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	int r = load_text(text, &s, &d);

	TEST_INTEQ(r, -EINVAL);
	TEST_CHECK(s == NULL);
	msg[0] = '\0';
	if (d.n) {
		snprintf(msg, sizeof(msg), "%s", d.v[0].msg);
		if (line)
			*line = d.v[0].line;
		if (col)
			*col = d.v[0].col;
	}
	if (count)
		*count = d.n;
	diags_free(&d);
	spec_free(s);
	return msg;
}

/* A minimal valid spec followed by extra text. */
static inline struct spec *load_ok(const char *extra)
{
	char *text = xasprintf("version: 1\ncluster: {name: c1, network: 10.0.0.0/24}\n%s", extra);
	struct diags d = { NULL, 0 };
	struct spec *s = NULL;
	int r = load_text(text, &s, &d);

	TEST_INTEQ(r, 0);
	TEST_INTEQ(d.n, 0);
	if (d.n)
		diags_print(&d, stderr);
	diags_free(&d);
	free(text);
	return s;
}

static inline const char *bad(const char *extra)
{
	char *text = xasprintf("version: 1\ncluster: {name: c1, network: 10.0.0.0/24}\n%s", extra);
	const char *m = first_error(text, NULL, NULL, NULL);

	free(text);
	return m;
}

#endif
