/* SPDX-License-Identifier: MIT */
/* Diagnostics with a place: collect, sort, print with a caret (diag.h). */
#include "config.h"

#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "ascii.h"
#include "diag.h"

#define SPEC_MAX_DEPTH 32       /* the schema is 4 levels deep */
#define VALUE_SHOW_MAX 60       /* longer values are cut in messages */

/* ---- text ---- */

/* Characters (not bytes) in a valid UTF-8 string. */
static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

void sb_quote_with(struct strbuf *sb, const char *s, char q)
{
	size_t n = strlen(s), shown = 0;

	sb_appendn(sb, &q, 1);
	for (size_t i = 0; i < n;) {
		unsigned char c = (unsigned char)s[i];
		uint32_t cp;
		size_t l;

		if (shown >= VALUE_SHOW_MAX) {
			sb_append(sb, "...");
			break;
		}
		if (c == (unsigned char)q || c == '\\') {
			sb_printf(sb, "\\%c", c);
			i++;
		} else if (c == '\n') {
			sb_append(sb, "\\n");
			i++;
		} else if (c == '\t') {
			sb_append(sb, "\\t");
			i++;
		} else if (c < 0x20 || c == 0x7f) {
			sb_printf(sb, "\\x%02x", c);
			i++;
		} else if ((l = utf8_seq((const unsigned char *)s + i, n - i, &cp)) > 0) {
			sb_appendn(sb, s + i, l);
			i += l;
		} else {
			sb_printf(sb, "\\x%02x", c);
			i++;
		}
		shown++;
	}
	sb_appendn(sb, &q, 1);
}

void sb_quote(struct strbuf *sb, const char *s)
{
	sb_quote_with(sb, s, '"');
}

size_t levenshtein(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la >= 64 || lb >= 64)
		return SIZE_MAX;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];

		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best;
			size_t sub = diag + (ascii_lower((unsigned char)a[i - 1]) !=
					     ascii_lower((unsigned char)b[j - 1]));

			best = up + 1 < row[j - 1] + 1 ? up + 1 : row[j - 1] + 1;
			row[j] = sub < best ? sub : best;
			diag = up;
		}
	}
	return row[lb];
}

const char *suggest(const char *s, const char *const *names, size_t n)
{
	const char *best = NULL;
	size_t best_d = 3, sl = strlen(s);

	for (size_t i = 0; i < n; i++) {
		size_t d = levenshtein(s, names[i]);

		if (d < best_d && d < sl) {
			best = names[i];
			best_d = d;
		}
	}
	if (best)
		return best;
	for (size_t i = 0; i < n; i++) {
		size_t nl = strlen(names[i]);

		if (sl >= 3 && ((sl < nl && !strncmp(s, names[i], sl)) ||
				(nl < sl && !strncmp(s, names[i], nl))))
			return names[i];
	}
	return NULL;
}

/* ---- diags ---- */

void diags_free(struct diags *d)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		free(d->v[i].file);
		free(d->v[i].msg);
		free(d->v[i].source_line);
	}
	free(d->v);
	d->v = NULL;
	d->n = 0;
}

void diag_push(struct diags *d, const char *file, unsigned line, unsigned col,
		      char *msg, char *source_line)
{
	struct diag *g;

	d->v = xrealloc(d->v, (d->n + 1) * sizeof(*d->v));
	g = &d->v[d->n++];
	g->file = xstrdup(file);
	g->line = line;
	g->col = col;
	g->msg = msg;
	g->source_line = source_line;
}

void diags_print(const struct diags *d, FILE *out)
{
	if (!d)
		return;
	for (size_t i = 0; i < d->n; i++) {
		const struct diag *g = &d->v[i];

		if (g->line && g->col)
			fprintf(out, "%s:%u:%u: error: %s\n", g->file, g->line, g->col, g->msg);
		else if (g->line)
			fprintf(out, "%s:%u: error: %s\n", g->file, g->line, g->msg);
		else
			fprintf(out, "%s: error: %s\n", g->file, g->msg);
		if (!g->line || !g->source_line)
			continue;
		fprintf(out, "%s\n", g->source_line);
		/* No caret past the end of a source line cut at SOURCE_LINE_MAX. */
		if (!g->col || g->col - 1 > utf8_chars(g->source_line))
			continue;
		/* One pad character per source character; tabs stay tabs so the caret lines up. */
		const char *s = g->source_line;
		for (unsigned c = 1; c < g->col; c++) {
			if (*s == '\t') {
				fputc('\t', out);
			} else {
				fputc(' ', out);
			}
			if (*s) {
				s++;
				while ((*s & 0xc0) == 0x80)
					s++;
			}
		}
		fputs("^\n", out);
	}
}

/* ---- a source text ---- */

/* Lines as libyaml counts them: CR LF, CR, LF, NEL, LS and PS each end one. */
static size_t break_len(const unsigned char *s, size_t n)
{
	if (s[0] == '\r')
		return n > 1 && s[1] == '\n' ? 2 : 1;
	if (s[0] == '\n')
		return 1;
	if (n > 1 && s[0] == 0xc2 && s[1] == 0x85)
		return 2;
	if (n > 2 && s[0] == 0xe2 && s[1] == 0x80 && (s[2] == 0xa8 || s[2] == 0xa9))
		return 3;
	return 0;
}

void source_index(struct source *src)
{
	size_t cap = 16, i = 0;

	/* libyaml drops a leading BOM before it counts columns. */
	if (src->len >= 3 && src->buf[0] == 0xef && src->buf[1] == 0xbb && src->buf[2] == 0xbf)
		i = 3;
	src->line_start = xmalloc(cap * sizeof(size_t));
	src->line_end = xmalloc(cap * sizeof(size_t));
	src->n_lines = 0;
	for (;;) {
		size_t start = i, bl = 0;

		while (i < src->len && !(bl = break_len(src->buf + i, src->len - i)))
			i++;
		if (src->n_lines == cap) {
			cap *= 2;
			src->line_start = xrealloc(src->line_start, cap * sizeof(size_t));
			src->line_end = xrealloc(src->line_end, cap * sizeof(size_t));
		}
		src->line_start[src->n_lines] = start;
		src->line_end[src->n_lines] = i;
		src->n_lines++;
		if (i >= src->len)
			break;
		i += bl;
	}
}

/* The line, made printable: invalid bytes and control characters become '?'. */
static char *source_line(const struct source *src, unsigned line)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, end;

	if (!line || line > src->n_lines)
		return NULL;
	i = src->line_start[line - 1];
	end = src->line_end[line - 1];
	if (end - i > SOURCE_LINE_MAX)
		end = i + SOURCE_LINE_MAX;
	sb_append(&sb, "");
	while (i < end) {
		uint32_t cp;
		size_t l = utf8_seq(src->buf + i, end - i, &cp);

		if (l == 0 || (cp < 0x20 && cp != '\t') || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
			sb_append(&sb, "?");
			i += l ? l : 1;
		} else {
			sb_appendn(&sb, src->buf + i, l);
			i += l;
		}
	}
	return sb_steal(&sb);
}

/* 1-based line and character column of a byte offset. */
static void offset_to_pos(const struct source *src, size_t off, unsigned *line, unsigned *col)
{
	size_t lo = 0, hi = src->n_lines;
	unsigned c = 1;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (src->line_start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = src->line_start[lo]; i < off && i < src->len; i++)
		if ((src->buf[i] & 0xc0) != 0x80)
			c++;
	*line = (unsigned)lo + 1;
	*col = c;
}

/* Byte offset of a libyaml mark (whose column counts characters). */
static size_t mark_to_offset(const struct source *src, yaml_mark_t m)
{
	size_t i, c = 0;

	if (m.line >= src->n_lines)
		return src->len;
	i = src->line_start[m.line];
	while (i < src->line_end[m.line] && c < m.column) {
		i++;
		while (i < src->line_end[m.line] && (src->buf[i] & 0xc0) == 0x80)
			i++;
		c++;
	}
	return i;
}

void source_error(struct source *src, unsigned line, unsigned col, const char *path,
		  const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	src->n_errors++;
	if (src->n_errors > DIAG_MAX)
		return;
	if (path && *path)
		sb_printf(&sb, "%s: ", path);
	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	diag_push(src->diags, src->name, line, col, sb_steal(&sb), source_line(src, line));
}

static int diag_cmp(const struct diag *a, const struct diag *b)
{
	/* Position-less diags go last. */
	unsigned la = a->line ? a->line : UINT_MAX, lb = b->line ? b->line : UINT_MAX;

	if (la != lb)
		return la < lb ? -1 : 1;
	return a->col < b->col ? -1 : a->col > b->col;
}

/* Stable insertion sort of the diags added by this load (at most DIAG_MAX). */
static void sort_diags(struct diags *d, size_t from)
{
	for (size_t i = from + 1; i < d->n; i++) {
		struct diag t = d->v[i];
		size_t j = i;

		while (j > from && diag_cmp(&d->v[j - 1], &t) > 0) {
			d->v[j] = d->v[j - 1];
			j--;
		}
		d->v[j] = t;
	}
}


void source_open(struct source *src, const char *name, const void *buf, size_t len,
		 struct diags *diags)
{
	memset(src, 0, sizeof(*src));
	src->name = name;
	src->buf = buf;
	src->len = len;
	src->diags = diags;
	src->first = diags->n;
}

void source_close(struct source *src)
{
	if (src->n_errors > DIAG_MAX)
		diag_push(src->diags, src->name, 0, 0,
			  xasprintf("too many errors (%zu); fix these first", src->n_errors), NULL);
	sort_diags(src->diags, src->first);
	free(src->line_start);
	free(src->line_end);
	src->line_start = src->line_end = NULL;
	src->n_lines = 0;
}

/* ---- before libyaml ---- */

/* Non-UTF-8 and control characters: libyaml's own messages give no line. */
bool source_check_bytes(struct source *src)
{
	for (size_t i = 0; i < src->len;) {
		uint32_t cp;
		size_t l = utf8_seq(src->buf + i, src->len - i, &cp);
		unsigned line, col;

		if (l == 0) {
			offset_to_pos(src, i, &line, &col);
			source_error(src, line, col, NULL, "invalid UTF-8 (byte 0x%02X); save the file as UTF-8",
				 src->buf[i]);
			return false;
		}
		if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7f ||
		    (cp >= 0x80 && cp < 0xa0 && cp != 0x85) || cp == 0xfffe || cp == 0xffff) {
			offset_to_pos(src, i, &line, &col);
			source_error(src, line, col, NULL,
				 "control character U+%04X is not allowed in YAML; remove it", cp);
			return false;
		}
		i += l;
	}
	return true;
}

/*
 * A tab in the indentation of a line with content.  libyaml's own message for
 * it ("found character that cannot start any token") does not say tab.
 */
bool source_check_tabs(struct source *src)
{
	bool ok = true;

	for (size_t n = 0; n < src->n_lines; n++) {
		size_t i = src->line_start[n], end = src->line_end[n], tab = SIZE_MAX;

		for (; i < end && (src->buf[i] == ' ' || src->buf[i] == '\t'); i++)
			if (src->buf[i] == '\t' && tab == SIZE_MAX)
				tab = i;
		if (tab == SIZE_MAX || i == end || src->buf[i] == '#')
			continue;
		source_error(src, (unsigned)n + 1, (unsigned)(tab - src->line_start[n]) + 1, NULL,
			 "tab character in indentation; YAML indents with spaces only");
		ok = false;
	}
	return ok;
}


/* ---- libyaml ---- */

/* libyaml's problem in its own words, for the parentheses. */
static char *yaml_problem(const yaml_parser_t *p)
{
	if (p->context)
		return xasprintf("%s %s at line %lu", p->problem, p->context,
				 (unsigned long)p->context_mark.line + 1);
	return xstrdup(p->problem ? p->problem : "unknown error");
}

void source_yaml_error(struct source *src, const struct yaml_parser_s *p)
{
	const char *prob = p->problem ? p->problem : "";
	char *orig;
	unsigned line, col;
	size_t off;

	if (p->error == YAML_MEMORY_ERROR) {
		source_error(src, 0, 0, NULL, "out of memory while parsing");
		return;
	}
	if (p->error == YAML_READER_ERROR) {
		offset_to_pos(src, p->problem_offset < src->len ? p->problem_offset : src->len, &line, &col);
		source_error(src, line, col, NULL, "cannot read the input (%s)", prob);
		return;
	}
	orig = yaml_problem(p);
	line = (unsigned)p->problem_mark.line + 1;
	col = (unsigned)p->problem_mark.column + 1;
	off = mark_to_offset(src, p->problem_mark);
	if ((off < src->len && src->buf[off] == '\t') || strstr(prob, "tab character")) {
		source_error(src, line, col, NULL,
			 "tab character in indentation; YAML indents with spaces only (%s)", orig);
	} else if (!strcmp(prob, "did not find expected key") ||
		   !strcmp(prob, "did not find expected '-' indicator")) {
		source_error(src, line, col, NULL,
			 "bad indentation: check that keys at the same level start in the same column (%s)",
			 orig);
	} else if (!strcmp(prob, "mapping values are not allowed in this context")) {
		source_error(src, line, col, NULL,
			 "bad indentation: check that keys at the same level start in the same column, "
			 "and quote values that contain ': ' (%s)", orig);
	} else if (!strcmp(prob, "block sequence entries are not allowed in this context")) {
		source_error(src, line, col, NULL,
			 "bad indentation: a '- ' entry must start on its own line, below its key (%s)",
			 orig);
	} else if (!strcmp(prob, "could not find expected ':'")) {
		source_error(src, line, col, NULL, "expected 'key: value' (%s)", orig);
	} else if (p->context && strstr(p->context, "quoted scalar")) {
		/* Point at the opening quote: the end of the file tells nothing. */
		source_error_mark(src, p->context_mark, NULL,
			   "unterminated quoted string; add the closing quote (%s)", orig);
	} else if (strstr(prob, "expected ',' or ']'")) {
		source_error_mark(src, p->context_mark, NULL,
			   "unclosed '['; close the sequence with ']' (%s)", orig);
	} else if (strstr(prob, "expected ',' or '}'")) {
		source_error_mark(src, p->context_mark, NULL,
			   "unclosed '{'; close the mapping with '}' (%s)", orig);
	} else {
		source_error(src, line, col, NULL, "YAML syntax error (%s)", orig);
	}
	free(orig);
}

bool source_check_yaml(struct source *src)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, docs = 0;
	bool ok = true, done = false;

	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, src->buf, src->len);
	while (!done) {
		if (!yaml_parser_parse(&p, &ev)) {
			source_yaml_error(src, &p);
			ok = false;
			break;
		}
		switch (ev.type) {
		case YAML_DOCUMENT_START_EVENT:
			if (++docs == 2) {
				source_error_mark(src, ev.start_mark, NULL,
					   "a spec holds one YAML document; remove this second one (or its '---')");
				ok = false;
				done = true;
			}
			break;
		case YAML_ALIAS_EVENT:
			source_error_mark(src, ev.start_mark, NULL,
				   "aliases (*%s) are not supported; write the value out",
				   (const char *)ev.data.alias.anchor);
			ok = false;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > SPEC_MAX_DEPTH) {
				source_error_mark(src, ev.start_mark, NULL,
					   "nested more than %d levels deep; a spec needs 4", SPEC_MAX_DEPTH);
				ok = false;
				done = true;
			}
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			depth--;
			break;
		case YAML_STREAM_END_EVENT:
			done = true;
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&p);
	if (ok && docs == 0) {
		source_error(src, 1, 1, NULL, "empty spec; expected a mapping with version: 1 and cluster:");
		ok = false;
	}
	return ok;
}

/* ---------------------------------------------------------------- entry points */
