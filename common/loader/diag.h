/* SPDX-License-Identifier: MIT */
/*
 * Diagnostics: problems in a source text with their place, printed the
 * netplan way ("file:line:col: error: msg", the line, a caret), plus the
 * checks that need nothing but the bytes (UTF-8, control characters, tabs
 * in indentation, YAML syntax) and the helpers messages are made of
 * (quoting, "did you mean").
 */
#ifndef HPCINIT_DIAG_H
#define HPCINIT_DIAG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "escape.h"
#include "strbuf.h"

#define DIAG_MAX 100            /* then "too many errors" */
#define SOURCE_LINE_MAX 512     /* longer source lines are cut in messages */

/* One problem, with its place.  line/col are 1-based; 0 = unknown. */
struct diag {
	char *file;
	unsigned line, col;
	char *msg;                      /* "expected ..., got ...; do ..." */
	char *source_line;              /* the offending line, NULL when unknown */
};

struct diags {
	struct diag *v;
	size_t n;
};

void diags_free(struct diags *d);
/* Append one diag; takes msg and source_line (malloc'd or NULL). */
void diag_push(struct diags *d, const char *file, unsigned line, unsigned col,
	       char *msg, char *source_line);
/* Print "file:line:col: error: msg", the source line and a caret, for each diag. */
void diags_print(const struct diags *d, FILE *out);

/* utf8_seq() is in escape.h. */
/* Quote a value for a message with q: escapes, cut when long. */
void sb_quote_with(struct strbuf *sb, const char *s, char q);
void sb_quote(struct strbuf *sb, const char *s);
size_t levenshtein(const char *a, const char *b);
/* The closest name within distance 2, or one that starts with s (or s with it). */
const char *suggest(const char *s, const char *const *names, size_t n);

/* A text being checked, and where its problems go. */
struct source {
	const char *name;
	const unsigned char *buf;
	size_t len;
	size_t *line_start;             /* byte offset where each line starts */
	size_t *line_end;               /* byte offset of its line break */
	size_t n_lines;
	struct diags *diags;
	size_t first;                   /* diags->n before this text */
	size_t n_errors;
};

void source_open(struct source *src, const char *name, const void *buf, size_t len,
		 struct diags *diags);
/* Find the lines (as libyaml counts them); messages quote them from then on. */
void source_index(struct source *src);
/* Sort this text's diags by place, add "too many errors", free the index. */
void source_close(struct source *src);
void source_error(struct source *src, unsigned line, unsigned col, const char *path,
		  const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* At a libyaml mark (0-based). */
#define source_error_mark(src, m, path, ...) \
	source_error(src, (unsigned)(m).line + 1, (unsigned)(m).column + 1, path, __VA_ARGS__)

/* Before libyaml: valid UTF-8, no control characters, no tab in indentation. */
bool source_check_bytes(struct source *src);
bool source_check_tabs(struct source *src);
/* libyaml's event pass: syntax, aliases, one document only, bounded nesting. */
bool source_check_yaml(struct source *src);
struct yaml_parser_s;
/* A libyaml parser error in words a user can act on. */
void source_yaml_error(struct source *src, const struct yaml_parser_s *p);

#endif
