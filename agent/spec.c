/* SPDX-License-Identifier: MIT */
/*
 * The version-1 spec loader.
 *
 * The YAML goes through three passes: a byte scan (size, UTF-8, control
 * characters, tabs in indentation), libyaml's event parser (syntax errors,
 * aliases, a second document, nesting depth), and libyaml's document API,
 * whose tree is walked against one schema table per section.  Every problem
 * becomes a diag with the 1-based line and column of the node it is about;
 * the walk never stops at the first error.  Only syntax errors end a pass
 * early, because libyaml cannot go on after one.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <net/if.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <yaml.h>

#include "spec.h"
#include "strbuf.h"

#define SPEC_MAX_DIAGS 100      /* then "too many errors" */
#define SPEC_MAX_DEPTH 32       /* the schema is 4 levels deep */
#define SOURCE_LINE_MAX 512     /* longer source lines are cut in messages */
#define VALUE_SHOW_MAX 60       /* longer values are cut in messages */
#define PATH_MAX_LEN 4095
#define NAME_MAX_LEN 255

#define KIB 1024ULL
#define MIB (1024ULL * KIB)
#define GIB (1024ULL * MIB)
#define TIB (1024ULL * GIB)

#define SEC_MS 1000ULL
#define MIN_MS (60ULL * SEC_MS)
#define HOUR_MS (60ULL * MIN_MS)

/* Marks of keys the cross-field checks point at. */
enum mark_slot {
	M_NONE,
	M_NETWORK,
	M_ROLE,
	M_RDMA_IPOIB,
	M_NFS_EXPORTS,
	M_DISC,
	M_DISC_METHOD,
	M_DISC_HOSTS,
	M_DISC_DIR,
	M_SSH,
	M_SSH_RESTRICT,
	M_HF_ADDRESS,
	M_COUNT
};

struct slot {
	bool set, bad;
	yaml_mark_t key, val;
};

struct loader {
	const char *name;
	const unsigned char *buf;
	size_t len;
	size_t *line_start;             /* byte offset where each line starts */
	size_t *line_end;               /* byte offset of its line break */
	size_t n_lines;
	struct diags *diags;
	size_t n_errors;
	bool doc_loaded;
	yaml_document_t doc;
	struct spec *spec;
	struct slot slots[M_COUNT];
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

static const struct type T_ENUM;

enum { F_REQUIRED = 1u << 0 };

struct field {
	const char *key;
	const struct type *type;
	size_t off;
	const void *arg;
	unsigned flags;
	enum mark_slot slot;
	const char *hint;               /* said when the key is missing */
};

/* ---------------------------------------------------------------- names */

struct enum_val {
	const char *name;
	int value;
};

static const struct enum_val role_vals[] = {
	{ "compute", ROLE_COMPUTE }, { "head", ROLE_HEAD }, { NULL, 0 } };
static const struct enum_val link_vals[] = {
	{ "infiniband", LINK_INFINIBAND }, { "ethernet", LINK_ETHERNET }, { "any", LINK_ANY },
	{ NULL, 0 } };
static const struct enum_val method_vals[] = {
	{ "shared", DISC_SHARED }, { "static", DISC_STATIC }, { "scan", DISC_SCAN }, { NULL, 0 } };
static const struct enum_val keytype_vals[] = {
	{ "ed25519", KEY_ED25519 }, { "ecdsa", KEY_ECDSA }, { "rsa", KEY_RSA }, { NULL, 0 } };
static const struct enum_val hostkeys_vals[] = {
	{ "pinned", HOSTKEYS_PINNED }, { "scan", HOSTKEYS_SCAN }, { NULL, 0 } };
static const struct enum_val address_vals[] = {
	{ "hostname", HF_ADDR_HOSTNAME }, { "ip", HF_ADDR_IP }, { "ipoib", HF_ADDR_IPOIB },
	{ NULL, 0 } };
static const struct enum_val etc_hosts_vals[] = {
	{ "auto", HF_HOSTS_AUTO }, { "always", HF_HOSTS_ALWAYS }, { "never", HF_HOSTS_NEVER },
	{ NULL, 0 } };
static const struct enum_val format_vals[] = {
	{ "openmpi", HF_OPENMPI }, { "mpich", HF_MPICH }, { "plain", HF_PLAIN },
	{ "clush", HF_CLUSH }, { NULL, 0 } };

_Static_assert(sizeof(enum role) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum link_layer) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum disc_method) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum key_type) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum host_keys) == sizeof(int), "enums are stored as int");
_Static_assert(sizeof(enum hf_address) == sizeof(int), "enums are stored as int");

static const char *enum_name(const struct enum_val *t, int v)
{
	for (; t->name; t++)
		if (t->value == v)
			return t->name;
	return "?";
}

const char *link_layer_name(enum link_layer l)
{
	return enum_name(link_vals, (int)l);
}

const char *disc_method_name(enum disc_method m)
{
	return enum_name(method_vals, (int)m);
}

/* ---------------------------------------------------------------- text helpers */

static bool is_digit(int c)
{
	return c >= '0' && c <= '9';
}

static bool is_lower_alnum(int c)
{
	return (c >= 'a' && c <= 'z') || is_digit(c);
}

static bool is_alnum(int c)
{
	return is_lower_alnum(c) || (c >= 'A' && c <= 'Z');
}

static int ascii_lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

static bool streq_nocase(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (ascii_lower((unsigned char)*a) != ascii_lower((unsigned char)*b))
			return false;
	return *a == *b;
}

/*
 * Length of the UTF-8 sequence at s (at most n bytes), or 0 when it is not
 * valid UTF-8 (overlong forms, surrogates and values above U+10FFFF included).
 * *cp gets the code point.
 */
static size_t utf8_seq(const unsigned char *s, size_t n, uint32_t *cp)
{
	uint32_t c = s[0], min;
	size_t len;

	if (c < 0x80) {
		*cp = c;
		return 1;
	} else if ((c & 0xe0) == 0xc0) {
		len = 2, c &= 0x1f, min = 0x80;
	} else if ((c & 0xf0) == 0xe0) {
		len = 3, c &= 0x0f, min = 0x800;
	} else if ((c & 0xf8) == 0xf0) {
		len = 4, c &= 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (s[i] & 0x3f);
	}
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	*cp = c;
	return len;
}

/* Characters (not bytes) in a valid UTF-8 string. */
static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xc0) != 0x80;
	return n;
}

/* Quote a value for a message with q: escapes, cut when long. */
static void sb_quote_with(struct strbuf *sb, const char *s, char q)
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

static void sb_quote(struct strbuf *sb, const char *s)
{
	sb_quote_with(sb, s, '"');
}

static bool node_is_null(const yaml_node_t *n)
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

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* "a mapping", "a sequence", "an empty value" or the quoted scalar. */
static void sb_describe_node(struct strbuf *sb, const yaml_node_t *n)
{
	if (node_is_null(n))
		sb_append(sb, "an empty value");
	else if (n->type == YAML_MAPPING_NODE)
		sb_append(sb, "a mapping");
	else if (n->type == YAML_SEQUENCE_NODE)
		sb_append(sb, "a sequence");
	else
		sb_quote(sb, scalar(n));
}

static size_t levenshtein(const char *a, const char *b)
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

/* The closest name within distance 2, or one that starts with s (or s with it). */
static const char *suggest(const char *s, const char *const *names, size_t n)
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

/* ---------------------------------------------------------------- diagnostics */

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

static void diag_push(struct diags *d, const char *file, unsigned line, unsigned col,
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

static void index_lines(struct loader *L)
{
	size_t cap = 16, i = 0;

	/* libyaml drops a leading BOM before it counts columns. */
	if (L->len >= 3 && L->buf[0] == 0xef && L->buf[1] == 0xbb && L->buf[2] == 0xbf)
		i = 3;
	L->line_start = xmalloc(cap * sizeof(size_t));
	L->line_end = xmalloc(cap * sizeof(size_t));
	L->n_lines = 0;
	for (;;) {
		size_t start = i, bl = 0;

		while (i < L->len && !(bl = break_len(L->buf + i, L->len - i)))
			i++;
		if (L->n_lines == cap) {
			cap *= 2;
			L->line_start = xrealloc(L->line_start, cap * sizeof(size_t));
			L->line_end = xrealloc(L->line_end, cap * sizeof(size_t));
		}
		L->line_start[L->n_lines] = start;
		L->line_end[L->n_lines] = i;
		L->n_lines++;
		if (i >= L->len)
			break;
		i += bl;
	}
}

/* The line, made printable: invalid bytes and control characters become '?'. */
static char *source_line(const struct loader *L, unsigned line)
{
	struct strbuf sb = STRBUF_INIT;
	size_t i, end;

	if (!line || line > L->n_lines)
		return NULL;
	i = L->line_start[line - 1];
	end = L->line_end[line - 1];
	if (end - i > SOURCE_LINE_MAX)
		end = i + SOURCE_LINE_MAX;
	sb_append(&sb, "");
	while (i < end) {
		uint32_t cp;
		size_t l = utf8_seq(L->buf + i, end - i, &cp);

		if (l == 0 || (cp < 0x20 && cp != '\t') || cp == 0x7f || (cp >= 0x80 && cp < 0xa0)) {
			sb_append(&sb, "?");
			i += l ? l : 1;
		} else {
			sb_appendn(&sb, L->buf + i, l);
			i += l;
		}
	}
	return sb_steal(&sb);
}

/* 1-based line and character column of a byte offset. */
static void offset_to_pos(const struct loader *L, size_t off, unsigned *line, unsigned *col)
{
	size_t lo = 0, hi = L->n_lines;
	unsigned c = 1;

	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;

		if (L->line_start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	for (size_t i = L->line_start[lo]; i < off && i < L->len; i++)
		if ((L->buf[i] & 0xc0) != 0x80)
			c++;
	*line = (unsigned)lo + 1;
	*col = c;
}

/* Byte offset of a libyaml mark (whose column counts characters). */
static size_t mark_to_offset(const struct loader *L, yaml_mark_t m)
{
	size_t i, c = 0;

	if (m.line >= L->n_lines)
		return L->len;
	i = L->line_start[m.line];
	while (i < L->line_end[m.line] && c < m.column) {
		i++;
		while (i < L->line_end[m.line] && (L->buf[i] & 0xc0) == 0x80)
			i++;
		c++;
	}
	return i;
}

static void error_at(struct loader *L, unsigned line, unsigned col, const char *path,
		     const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void error_at(struct loader *L, unsigned line, unsigned col, const char *path,
		     const char *fmt, ...)
{
	struct strbuf sb = STRBUF_INIT;
	va_list ap;

	L->n_errors++;
	if (L->n_errors > SPEC_MAX_DIAGS)
		return;
	if (path && *path)
		sb_printf(&sb, "%s: ", path);
	va_start(ap, fmt);
	sb_vprintf(&sb, fmt, ap);
	va_end(ap);
	diag_push(L->diags, L->name, line, col, sb_steal(&sb), source_line(L, line));
}

#define error_mark(L, m, path, ...) \
	error_at(L, (unsigned)(m).line + 1, (unsigned)(m).column + 1, path, __VA_ARGS__)

static int diag_cmp(const struct diag *a, const struct diag *b)
{
	/* Position-less diags go last. */
	unsigned la = a->line ? a->line : UINT_MAX, lb = b->line ? b->line : UINT_MAX;

	if (la != lb)
		return la < lb ? -1 : 1;
	return a->col < b->col ? -1 : a->col > b->col;
}

/* Stable insertion sort of the diags added by this load (at most SPEC_MAX_DIAGS). */
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

/* ---------------------------------------------------------------- value parsers */

/* Decimal integer, optional '-'.  0, -EINVAL (not a number) or -ERANGE. */
static int parse_ll(const char *s, long long *ret)
{
	bool neg = false;
	unsigned long long v = 0;

	if (*s == '-') {
		neg = true;
		s++;
	} else if (*s == '+') {
		s++;
	}
	if (!is_digit((unsigned char)*s))
		return -EINVAL;
	for (; is_digit((unsigned char)*s); s++) {
		if (v > (ULLONG_MAX - 9) / 10)
			return -ERANGE;
		v = v * 10 + (unsigned)(*s - '0');
	}
	if (*s)
		return -EINVAL;
	if (v > (unsigned long long)LLONG_MAX)
		return -ERANGE;
	*ret = neg ? -(long long)v : (long long)v;
	return 0;
}

/*
 * Leading decimal digits as uint64.  *end is set after them in every case
 * (so the unit can still be checked), and -ERANGE says they overflowed.
 */
static int parse_u64_prefix(const char *s, uint64_t *ret, const char **end)
{
	uint64_t v = 0;
	bool over = false;

	*end = s;
	*ret = 0;
	if (!is_digit((unsigned char)*s))
		return -EINVAL;
	for (; is_digit((unsigned char)*s); s++) {
		unsigned d = (unsigned)(*s - '0');

		if (v > (UINT64_MAX - d) / 10)
			over = true;
		else
			v = v * 10 + d;
	}
	*end = s;
	*ret = v;
	return over ? -ERANGE : 0;
}

/* "64G", "64GiB", "512M", "4096": bytes.  -EINVAL, -ERANGE. */
static int parse_size(const char *s, uint64_t *ret)
{
	static const struct { const char *suffix; uint64_t mult; } units[] = {
		{ "", 1 }, { "B", 1 },
		{ "K", KIB }, { "k", KIB }, { "KiB", KIB },
		{ "M", MIB }, { "m", MIB }, { "MiB", MIB },
		{ "G", GIB }, { "g", GIB }, { "GiB", GIB },
		{ "T", TIB }, { "t", TIB }, { "TiB", TIB },
	};
	const char *end = s;
	uint64_t v = 0;
	int r = parse_u64_prefix(s, &v, &end);

	for (size_t i = 0; r != -EINVAL && i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].suffix))
			continue;
		if (r < 0 || (v && units[i].mult > UINT64_MAX / v))
			return -ERANGE;
		*ret = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

/* "500ms", "10s", "5m", "1h": milliseconds.  -EINVAL, -ERANGE, -EDOM (no unit). */
static int parse_duration(const char *s, uint64_t *ret)
{
	static const struct { const char *unit; uint64_t mult; } units[] = {
		{ "ms", 1 }, { "s", SEC_MS }, { "m", MIN_MS }, { "h", HOUR_MS },
	};
	const char *end = s;
	uint64_t v = 0;
	int r = parse_u64_prefix(s, &v, &end);

	if (r == -EINVAL)
		return r;
	if (!*end)
		return -EDOM;
	for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
		if (strcmp(end, units[i].unit))
			continue;
		if (r < 0 || (v && units[i].mult > UINT64_MAX / v))
			return -ERANGE;
		*ret = v * units[i].mult;
		return 0;
	}
	return -EINVAL;
}

static void sb_size(struct strbuf *sb, uint64_t v)
{
	static const char sfx[] = "KMGT";

	for (int i = 3; i >= 0; i--) {
		uint64_t m = KIB << (10 * i);

		if (v && v % m == 0) {
			sb_printf(sb, "%llu%c", (unsigned long long)(v / m), sfx[i]);
			return;
		}
	}
	sb_printf(sb, "%llu", (unsigned long long)v);
}

static void sb_duration(struct strbuf *sb, uint64_t ms)
{
	if (ms && ms % HOUR_MS == 0)
		sb_printf(sb, "%lluh", (unsigned long long)(ms / HOUR_MS));
	else if (ms && ms % MIN_MS == 0)
		sb_printf(sb, "%llum", (unsigned long long)(ms / MIN_MS));
	else if (ms && ms % SEC_MS == 0)
		sb_printf(sb, "%llus", (unsigned long long)(ms / SEC_MS));
	else
		sb_printf(sb, "%llums", (unsigned long long)ms);
}

/* A plain decimal number with optional fraction and exponent: no hex, inf or nan. */
static int parse_number(const char *s, double *ret)
{
	const char *p = s;
	char *end;
	double d;

	if (*p == '-' || *p == '+')
		p++;
	if (!is_digit((unsigned char)*p) && !(*p == '.' && is_digit((unsigned char)p[1])))
		return -EINVAL;
	while (is_digit((unsigned char)*p))
		p++;
	if (*p == '.')
		for (p++; is_digit((unsigned char)*p); p++)
			;
	if (*p == 'e' || *p == 'E') {
		p++;
		if (*p == '-' || *p == '+')
			p++;
		if (!is_digit((unsigned char)*p))
			return -EINVAL;
		while (is_digit((unsigned char)*p))
			p++;
	}
	if (*p)
		return -EINVAL;
	errno = 0;
	d = strtod(s, &end);
	if (*end || errno == ERANGE || !isfinite(d))
		return -ERANGE;
	*ret = d;
	return 0;
}

/* ---------------------------------------------------------------- name validators */

/* Each validator returns NULL when s is fine, else why not (for the message). */

static bool has_control(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || *s == 0x7f)
			return true;
	return false;
}

static const char *check_cluster_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 63)
		return "1 to 63 characters";
	for (size_t i = 0; i < n; i++)
		if (!is_lower_alnum((unsigned char)s[i]) && s[i] != '-')
			return "only lower-case letters, digits and '-'";
	if (s[0] == '-' || s[n - 1] == '-')
		return "not starting or ending with '-'";
	return NULL;
}

static bool valid_label(const char *s, size_t n, bool wild)
{
	if (n == 0 || n > 63)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!is_alnum((unsigned char)s[i]) && s[i] != '-' &&
		    !(wild && (s[i] == '*' || s[i] == '?')))
			return false;
	return s[0] != '-' && s[n - 1] != '-';
}

/* RFC 1123 host name; wild also allows '*' and '?' (exports(5) wildcards). */
static bool valid_hostname_ex(const char *s, bool wild)
{
	size_t n = strlen(s);

	if (n == 0 || n > 253)
		return false;
	for (const char *p = s;;) {
		const char *dot = strchr(p, '.');
		size_t l = dot ? (size_t)(dot - p) : strlen(p);

		if (!valid_label(p, l, wild))
			return false;
		if (!dot)
			return true;
		p = dot + 1;
	}
}

static bool valid_hostname(const char *s)
{
	return valid_hostname_ex(s, false);
}

static bool valid_ip(const char *s)
{
	unsigned char a[sizeof(struct in6_addr)];

	return inet_pton(AF_INET, s, a) == 1 || inet_pton(AF_INET6, s, a) == 1;
}

/* POSIX-portable user or group name, as useradd accepts it. */
static bool valid_user(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 32)
		return false;
	if (!is_alnum((unsigned char)s[0]) && s[0] != '_')
		return false;
	if (is_digit((unsigned char)s[0]) && strspn(s, "0123456789") == n)
		return false;        /* all digits reads as a uid */
	for (size_t i = 1; i < n; i++) {
		if (s[i] == '$' && i == n - 1)
			break;
		if (!is_alnum((unsigned char)s[i]) && !strchr("._-", s[i]))
			return false;
	}
	return true;
}

static const char *check_user(const char *s)
{
	return valid_user(s) ? NULL :
		"not a valid user name (letters, digits, '.', '_', '-', at most 32, not starting with '-')";
}

/* pam_limits domains hpcinit writes: '*', a user or @group. */
static const char *check_pam_domain(const char *s)
{
	if (!strcmp(s, "*"))
		return NULL;
	if (s[0] == '@')
		return valid_user(s + 1) ? NULL : "not a valid group name after '@'";
	return valid_user(s) ? NULL : "expected '*', a user name or @group";
}

static const char *check_module(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > 55)
		return "not a kernel module name (1 to 55 letters, digits, '_' or '-')";
	for (size_t i = 0; i < n; i++)
		if (!is_alnum((unsigned char)s[i]) && s[i] != '_' && s[i] != '-')
			return "not a kernel module name (1 to 55 letters, digits, '_' or '-')";
	return NULL;
}

/* One mount or export option: they are joined with ',' in fstab and exports. */
static const char *check_option(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return "empty option";
	if (n > NAME_MAX_LEN)
		return "option is longer than 255 characters";
	if (strchr(s, ','))
		return "one option per entry: write [a, b], not \"a,b\"";
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= ' ' || s[i] == 0x7f || s[i] == '#' || s[i] == '"' ||
		    s[i] == '\'' || s[i] == '\\')
			return "options cannot hold spaces, quotes, '#' or '\\'";
	return NULL;
}

/* Linux dev_valid_name(). */
static bool valid_ifname(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= IFNAMSIZ || !strcmp(s, ".") || !strcmp(s, ".."))
		return false;
	for (size_t i = 0; i < n; i++)
		if (s[i] == '/' || s[i] == ':' || (unsigned char)s[i] <= ' ' ||
		    (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

/* An fnmatch(3) pattern for one name: no '/', brackets closed, no trailing '\'. */
static const char *check_glob(const char *s)
{
	size_t n = strlen(s);

	if (n == 0)
		return "empty pattern";
	if (n > NAME_MAX_LEN)
		return "pattern is longer than 255 characters";
	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '/')
			return "a pattern matches one name and cannot hold '/'";
		if (c <= ' ' || c == 0x7f)
			return "a pattern cannot hold spaces or control characters";
		if (c == '\\') {
			if (++i >= n)
				return "pattern ends with '\\'";
		} else if (c == '[') {
			size_t j = i + 1;

			if (j < n && (s[j] == '!' || s[j] == '^'))
				j++;
			if (j < n && s[j] == ']')
				j++;
			while (j < n && s[j] != ']')
				j++;
			if (j >= n)
				return "'[' without a closing ']'";
			i = j;
		}
	}
	return NULL;
}

/*
 * Canonical absolute path: repeated '/' and "." components dropped, no
 * trailing '/'.  NULL with *why set when it is not acceptable.
 */
static char *path_normalize(const char *s, const char **why)
{
	size_t n = strlen(s), o = 0;
	char *out;

	if (s[0] != '/') {
		*why = "expected an absolute path (starting with /)";
		return NULL;
	}
	if (n > PATH_MAX_LEN) {
		*why = "path is longer than 4095 characters";
		return NULL;
	}
	if (has_control(s)) {
		*why = "path holds a control character";
		return NULL;
	}
	out = xmalloc(n + 1);
	for (size_t i = 0; i < n;) {
		size_t l;

		while (s[i] == '/')
			i++;
		l = strcspn(s + i, "/");
		if (l == 0)
			break;
		if (l == 2 && s[i] == '.' && s[i + 1] == '.') {
			free(out);
			*why = "'..' is not allowed in a path";
			return NULL;
		}
		if (!(l == 1 && s[i] == '.')) {
			out[o++] = '/';
			memcpy(out + o, s + i, l);
			o += l;
		}
		i += l;
	}
	if (o == 0)
		out[o++] = '/';
	out[o] = '\0';
	return out;
}

/* ---------------------------------------------------------------- CIDR */

int cidr_parse(const char *text, struct cidr *ret)
{
	char addr[INET6_ADDRSTRLEN + 1], out[INET6_ADDRSTRLEN];
	const char *slash = strchr(text, '/');
	struct cidr c;
	unsigned long prefix = 0;
	size_t al, max;
	unsigned char *bytes;

	if (!slash)
		return -EINVAL;
	al = (size_t)(slash - text);
	if (al == 0 || al >= sizeof(addr))
		return -EINVAL;
	memcpy(addr, text, al);
	addr[al] = '\0';
	memset(&c, 0, sizeof(c));
	c.family = strchr(addr, ':') ? AF_INET6 : AF_INET;
	if (inet_pton(c.family, addr, &c.addr) != 1)
		return -EINVAL;
	max = c.family == AF_INET ? 32 : 128;
	if (!is_digit((unsigned char)slash[1]) || strlen(slash + 1) > 3)
		return -EINVAL;
	for (const char *p = slash + 1; *p; p++) {
		if (!is_digit((unsigned char)*p))
			return -EINVAL;
		prefix = prefix * 10 + (unsigned long)(*p - '0');
	}
	if (prefix > max)
		return -EINVAL;
	c.prefix = (unsigned)prefix;
	/* Clear the host bits: 10.0.0.5/24 means the network 10.0.0.0/24. */
	bytes = (unsigned char *)&c.addr;
	for (size_t bit = prefix; bit < max; bit++)
		bytes[bit / 8] &= (unsigned char)~(0x80u >> (bit % 8));
	if (!inet_ntop(c.family, &c.addr, out, sizeof(out)))
		return -EINVAL;
	snprintf(c.text, sizeof(c.text), "%s/%u", out, c.prefix);
	*ret = c;
	return 0;
}

bool cidr_contains(const struct cidr *c, int family, const void *addr)
{
	const unsigned char *net, *a = addr;
	unsigned full, rest;

	if (!c || !addr || family != c->family)
		return false;
	net = (const unsigned char *)&c->addr;
	full = c->prefix / 8;
	rest = c->prefix % 8;
	if (memcmp(net, a, full))
		return false;
	if (rest) {
		unsigned char mask = (unsigned char)(0xffu << (8 - rest));

		return (net[full] & mask) == (a[full] & mask);
	}
	return true;
}

/* ---------------------------------------------------------------- node ranges */

struct nr_range {
	unsigned long lo, hi;
	int width;                      /* zero-padded width, 0 for none */
};

struct noderange {
	char *prefix, *suffix;
	struct nr_range *r;
	size_t n;
	uint64_t count;
};

static void noderange_clear(struct noderange *nr)
{
	free(nr->prefix);
	free(nr->suffix);
	free(nr->r);
	memset(nr, 0, sizeof(*nr));
}

/* Digits of one bound: at most 9, so the arithmetic stays in range. */
static int nr_number(const char *s, size_t n, unsigned long *v, const char **why)
{
	if (n == 0) {
		*why = "a range needs numbers, like [01-16,20]";
		return -EINVAL;
	}
	if (n > 9) {
		*why = "range numbers have at most 9 digits";
		return -EINVAL;
	}
	*v = 0;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit((unsigned char)s[i])) {
			*why = "a range holds numbers, '-' and ',' only, like [01-16,20]";
			return -EINVAL;
		}
		*v = *v * 10 + (unsigned long)(s[i] - '0');
	}
	return 0;
}

static int noderange_parse(const char *pat, struct noderange *ret, const char **why)
{
	struct noderange nr = { NULL, NULL, NULL, 0, 0 };
	const char *open = strchr(pat, '['), *close_ = strchr(pat, ']'), *p, *end;

	if (!*pat) {
		*why = "empty host name";
		return -EINVAL;
	}
	if (!open) {
		if (close_) {
			*why = "']' without '['";
			return -EINVAL;
		}
		nr.prefix = xstrdup(pat);
		nr.suffix = xstrdup("");
		nr.r = xcalloc(1, sizeof(*nr.r));
		nr.n = 0;       /* no bracket: the name itself */
		nr.count = 1;
		*ret = nr;
		return 0;
	}
	if (close_ && close_ < open) {
		*why = "']' without '['";
		return -EINVAL;
	}
	if (!close_) {
		*why = "'[' without a closing ']'";
		return -EINVAL;
	}
	if (memchr(open + 1, '[', (size_t)(close_ - open - 1))) {
		*why = "nested '[' in a node range";
		return -EINVAL;
	}
	if (strchr(close_ + 1, '[') || strchr(close_ + 1, ']')) {
		*why = "only one [range] group is supported, like node[01-16]";
		return -EINVAL;
	}
	end = close_;
	if (end == open + 1) {
		*why = "empty range []";
		return -EINVAL;
	}
	nr.r = xmalloc((size_t)(end - open) * sizeof(*nr.r));
	for (p = open + 1; p <= end;) {
		size_t l = strcspn(p, ",]");
		const char *dash = memchr(p, '-', l);
		struct nr_range *r = &nr.r[nr.n];
		size_t l1 = dash ? (size_t)(dash - p) : l;

		if (nr_number(p, l1, &r->lo, why) < 0 ||
		    nr_number(dash ? dash + 1 : p, dash ? l - l1 - 1 : l, &r->hi, why) < 0)
			goto fail;
		if (r->lo > r->hi) {
			*why = "a range goes from low to high, like [01-16]";
			goto fail;
		}
		r->width = l1 > 1 && p[0] == '0' ? (int)l1 : 0;
		nr.count += r->hi - r->lo + 1;
		nr.n++;
		p += l + 1;
	}
	nr.prefix = xstrndup(pat, (size_t)(open - pat));
	nr.suffix = xstrdup(close_ + 1);
	*ret = nr;
	return 0;
fail:
	noderange_clear(&nr);
	return -EINVAL;
}

/*
 * Append the names into an array already sized for them: growing it a name at
 * a time is quadratic where realloc copies (valgrind, ASan).
 */
static void noderange_fill(const struct noderange *nr, struct strlist *out)
{
	if (nr->n == 0) {
		out->v[out->n++] = xstrdup(nr->prefix);
		out->v[out->n] = NULL;
		return;
	}
	for (size_t i = 0; i < nr->n; i++) {
		for (unsigned long v = nr->r[i].lo;; v++) {
			out->v[out->n++] = xasprintf("%s%0*lu%s", nr->prefix, nr->r[i].width, v,
						     nr->suffix);
			if (v == nr->r[i].hi)
				break;
		}
	}
	out->v[out->n] = NULL;
}

/* Append the names; the caller has checked count against its limit. */
static void noderange_emit(const struct noderange *nr, struct strlist *out)
{
	strlist_reserve(out, (size_t)nr->count);
	noderange_fill(nr, out);
}

int noderange_expand(const char *pattern, struct strlist *out, size_t limit)
{
	struct noderange nr;
	const char *why;
	int r;

	if (!pattern || !out)
		return -EINVAL;
	r = noderange_parse(pattern, &nr, &why);
	if (r < 0)
		return r;
	if (nr.count > limit) {
		noderange_clear(&nr);
		return -E2BIG;
	}
	noderange_emit(&nr, out);
	noderange_clear(&nr);
	return 0;
}

/* ---------------------------------------------------------------- schema walk */

static void describe_field(const struct field *f, struct strbuf *sb)
{
	if (f->type->describe)
		f->type->describe(f, sb);
	else
		sb_append(sb, f->type->what);
}

/* "PATH: expected WHAT, got VALUE[; EXTRA]" at the value. */
static void bad_value(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
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

static void *field_ptr(const struct field *f, void *base)
{
	return (char *)base + f->off;
}

static yaml_node_t *node(struct loader *L, int id)
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
	const char *key = scalar(k), *s;
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
static uint32_t walk_map(struct loader *L, yaml_node_t *map, const struct field *fields,
			 void *base, const char *path, yaml_mark_t where)
{
	yaml_mark_t first[32];
	uint32_t seen = 0;

	if (map && map->type == YAML_MAPPING_NODE) {
		for (yaml_node_pair_t *p = map->data.mapping.pairs.start;
		     p < map->data.mapping.pairs.top; p++) {
			yaml_node_t *k = node(L, p->key), *v = node(L, p->value);
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
				if (!strcmp(f->key, scalar(k)))
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

/* ---------------------------------------------------------------- typed handlers */

/* Store a freshly allocated string in a char * field. */
static void set_string(const struct field *f, void *base, char *s)
{
	char **dst = field_ptr(f, base);

	free(*dst);
	*dst = s;
}

static bool p_bool(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const char *s = scalar(v);
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

struct int_arg {
	long long min, max;
	size_t width;                   /* sizeof the destination: 2, 4 or 8 */
};

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
	int r = parse_ll(scalar(v), &n);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || n < a->min || n > a->max) {
		error_mark(L, v->start_mark, path, "%s is out of range; use a number from %lld to %lld",
			   scalar(v), a->min, a->max);
		return false;
	}
	switch (a->width) {
	case 2: { uint16_t x = (uint16_t)n; memcpy(field_ptr(f, base), &x, 2); break; }
	case 4: { unsigned x = (unsigned)n; memcpy(field_ptr(f, base), &x, 4); break; }
	default: { uint64_t x = (uint64_t)n; memcpy(field_ptr(f, base), &x, 8); break; }
	}
	return true;
}

static bool p_version(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	long long n = 0;
	int r = parse_ll(scalar(v), &n);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || n != SPEC_VERSION) {
		error_mark(L, v->start_mark, path, "unsupported spec version %s; this hpcinit reads version %d",
			   scalar(v), SPEC_VERSION);
		return false;
	}
	*(unsigned *)field_ptr(f, base) = SPEC_VERSION;
	return true;
}

struct float_arg {
	double min, max;
};

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
	int r = parse_number(scalar(v), &d);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || d < a->min || d > a->max) {
		error_mark(L, v->start_mark, path, "%s is out of range; use a number from %.15g to %.15g",
			   scalar(v), a->min, a->max);
		return false;
	}
	*(double *)field_ptr(f, base) = d;
	return true;
}

struct size_arg {
	uint64_t min, max;
	bool unlimited;                 /* "unlimited" allowed: sets the bool at unlimited_off */
	size_t unlimited_off;
};

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
	const char *s = scalar(v);
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

struct dur_arg {
	uint64_t min, max;              /* ms */
};

static bool p_duration(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		       void *base, const char *path)
{
	const struct dur_arg *a = f->arg;
	uint64_t ms = 0;
	int r = parse_duration(scalar(v), &ms);

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
			   scalar(v), sb_str(&sb));
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

/* Look s up in an enum table; on failure say what was expected (and the closest). */
static bool enum_lookup(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			const char *path, int *ret)
{
	const struct enum_val *e = f->arg;
	const char *names[16], *s = scalar(v), *close_;
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
	const char *why = NULL;
	char *p = path_normalize(scalar(v), &why);

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
typedef const char *(*check_fn)(const char *s);

static bool p_checked(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path, check_fn check, bool say_why)
{
	const char *why = check(scalar(v));

	if (why) {
		bad_value(L, f, k, v, path, say_why ? why : NULL);
		return false;
	}
	set_string(f, base, xstrdup(scalar(v)));
	return true;
}

static bool p_glob(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, check_glob, true);
}

static bool p_cluster_name(struct loader *L, const struct field *f, yaml_node_t *k,
			   yaml_node_t *v, void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, check_cluster_name, false);
}

static const char *check_ifname(const char *s)
{
	return valid_ifname(s) ? NULL : "1 to 15 characters, no '/', ':' or spaces";
}

static bool p_ifname(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		     void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, check_ifname, false);
}

/* CIDR; the arg is the offset of a bool set when present (has_network). */
struct cidr_arg {
	size_t has_off;
};

static bool p_cidr(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const struct cidr_arg *a = f->arg;
	struct cidr c;

	if (cidr_parse(scalar(v), &c) < 0) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	*(struct cidr *)field_ptr(f, base) = c;
	*(bool *)((char *)base + a->has_off) = true;
	return true;
}

/* exports(5) clients: '*', a network, an address, a host name (wildcards allowed), @netgroup. */
static bool p_clients(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	const char *s = scalar(v);
	struct cidr c;

	if (cidr_parse(s, &c) == 0) {
		set_string(f, base, xstrdup(c.text));
		return true;
	}
	if (!strcmp(s, "*") || valid_ip(s) || valid_hostname_ex(s, true) ||
	    (s[0] == '@' && valid_hostname(s + 1))) {
		set_string(f, base, xstrdup(s));
		return true;
	}
	bad_value(L, f, k, v, path, NULL);
	return false;
}

/* "host:/export", "[v6]:/export".  Fills source, host and export of a mount. */
static bool p_nfs_source(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			 void *base, const char *path)
{
	struct spec_nfs_mount *m = base;
	const char *s = scalar(v), *colon, *why = NULL;
	char *host = NULL, *exp_norm;

	if (s[0] == '[') {
		const char *rb = strchr(s, ']');
		unsigned char a6[sizeof(struct in6_addr)];

		if (rb && rb[1] == ':') {
			host = xstrndup(s + 1, (size_t)(rb - s - 1));
			colon = rb + 1;
			if (inet_pton(AF_INET6, host, a6) != 1)
				why = "the address in [brackets] is not IPv6";
		} else {
			colon = NULL;
			why = "write an IPv6 server as [address]:/export";
		}
	} else {
		colon = strchr(s, ':');
		if (colon) {
			host = xstrndup(s, (size_t)(colon - s));
			if (!valid_hostname(host) && !valid_ip(host))
				why = "the server is not a host name or IPv4 address";
		} else {
			why = "add the export after the server, like 10.0.0.7:/shared";
		}
	}
	if (!why && colon[1] != '/')
		why = "the export after ':' must be an absolute path, like 10.0.0.7:/shared";
	if (!why) {
		exp_norm = path_normalize(colon + 1, &why);
		if (exp_norm) {
			free(m->host);
			free(m->export);
			free(m->source);
			m->host = host;
			m->export = exp_norm;
			m->source = xstrdup(s);
			return true;
		}
	}
	free(host);
	bad_value(L, f, k, v, path, why);
	return false;
}

struct list_arg {
	const char *items;              /* "user names": for "a sequence of ..." */
	const char *item;               /* "a user name": for one entry */
	check_fn check;
	size_t max;
	bool nonempty, unique;
};

static void describe_list(const struct field *f, struct strbuf *sb)
{
	const struct list_arg *a = f->arg;

	sb_printf(sb, "a sequence of %s", a->items);
}

static bool seq_count_ok(struct loader *L, const struct field *f, yaml_node_t *k,
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

static size_t seq_len(const yaml_node_t *v)
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
		yaml_node_t *e = node(L, v->data.sequence.items.start[i]);
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
		why = a->check(scalar(e));
		if (why) {
			sb_quote(&sb, scalar(e));
			error_mark(L, e->start_mark, path, "%s: %s", sb_str(&sb), why);
			sb_free(&sb);
			ok = false;
			continue;
		}
		for (j = 0; a->unique && j < out->n; j++)
			if (!strcmp(out->v[j], scalar(e)))
				break;
		if (a->unique && j < out->n) {
			sb_quote(&sb, scalar(e));
			error_mark(L, e->start_mark, path, "%s is listed twice", sb_str(&sb));
			sb_free(&sb);
			ok = false;
			continue;
		}
		strlist_push(out, scalar(e));
	}
	return ok;
}

/* hostfile.formats: a sequence of enum names, stored as bits. */
static bool p_formats(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	unsigned *dst = field_ptr(f, base), bits = 0;
	size_t n = seq_len(v);
	struct field ef = *f;
	bool ok = true;

	ef.type = &T_ENUM;      /* entries are reported as single enum values */

	if (!seq_count_ok(L, f, k, v, path, n, 16, true, "openmpi, mpich, plain or clush"))
		return false;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = node(L, v->data.sequence.items.start[i]);
		int x;

		if (!e)
			continue;
		if (e->type != YAML_SCALAR_NODE || node_is_null(e)) {
			bad_value(L, &ef, NULL, e, path, NULL);
			ok = false;
			continue;
		}
		if (!enum_lookup(L, &ef, NULL, e, path, &x)) {
			ok = false;
			continue;
		}
		if (bits & (unsigned)x) {
			error_mark(L, e->start_mark, path, "format '%s' is listed twice", scalar(e));
			ok = false;
			continue;
		}
		bits |= (unsigned)x;
	}
	if (ok)
		*dst = bits;
	return ok;
}

/* discovery.hosts: names and ranges, expanded in spec order. */
/* discovery.hosts: names and ranges, expanded in spec order. */
static bool p_hosts(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		    void *base, const char *path)
{
	struct strlist *out = field_ptr(f, base);
	size_t n = seq_len(v), total = 0;
	struct noderange *nrs;
	bool ok = true;

	strlist_free(out);
	if (!seq_count_ok(L, f, k, v, path, n, SPEC_MAX_HOSTS, false, "a host name"))
		return false;
	if (n == 0)
		return true;
	/* First pass: parse every entry and count the names against the limit. */
	nrs = xcalloc(n, sizeof(*nrs));
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = node(L, v->data.sequence.items.start[i]);
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
		sb_quote(&sb, scalar(e));
		if (noderange_parse(scalar(e), &nrs[i], &why) < 0) {
			error_mark(L, e->start_mark, path, "bad node range %s: %s", sb_str(&sb), why);
			ok = false;
		} else if (nrs[i].count > SPEC_MAX_HOSTS - total) {
			if (nrs[i].count > SPEC_MAX_HOSTS)
				error_mark(L, e->start_mark, path, "%s expands to more than %d hosts",
					   sb_str(&sb), SPEC_MAX_HOSTS);
			else
				error_mark(L, e->start_mark, path,
					   "the list expands to more than %d hosts at %s",
					   SPEC_MAX_HOSTS, sb_str(&sb));
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
		yaml_node_t *e = node(L, v->data.sequence.items.start[i]);
		size_t first = out->n;

		if (!nrs[i].prefix)
			continue;
		noderange_fill(&nrs[i], out);
		noderange_clear(&nrs[i]);
		for (size_t j = first; j < out->n; j++) {
			struct strbuf sb = STRBUF_INIT;

			if (valid_hostname(out->v[j]) || valid_ip(out->v[j]))
				continue;
			sb_quote(&sb, scalar(e));
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

struct schema {
	const struct field *fields;
	long present_off;               /* offset of 'bool present', or -1 */
	bool inline_;                   /* fields live in the parent struct */
};

static bool p_map(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		  void *base, const char *path)
{
	const struct schema *sc = f->arg;
	void *sub = sc->inline_ ? base : field_ptr(f, base);
	size_t before = L->n_errors;

	if (sc->present_off >= 0)
		*(bool *)((char *)sub + sc->present_off) = true;
	walk_map(L, v, sc->fields, sub, path, k->start_mark);
	return L->n_errors == before;
}

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

static void describe_maplist(const struct field *f, struct strbuf *sb)
{
	const struct maplist_arg *a = f->arg;

	sb_printf(sb, "a sequence, each entry %s", a->item);
}

static bool p_maplist(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	const struct maplist_arg *a = f->arg;
	size_t n = seq_len(v), before = L->n_errors;
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
		yaml_node_t *e = node(L, v->data.sequence.items.start[i]);
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
	return L->n_errors == before;
}

/* ---------------------------------------------------------------- the schema */

static const struct type T_BOOL = { "a boolean (true or false)", YAML_SCALAR_NODE, p_bool, NULL };
static const struct type T_INT = { "an integer", YAML_SCALAR_NODE, p_int, describe_int };
static const struct type T_VERSION = { "the spec version (1)", YAML_SCALAR_NODE, p_version, NULL };
static const struct type T_FLOAT = { "a number", YAML_SCALAR_NODE, p_float, describe_float };
static const struct type T_SIZE = { "a size", YAML_SCALAR_NODE, p_size, describe_size };
static const struct type T_DURATION = { "a duration like 10s (ms, s, m or h)", YAML_SCALAR_NODE,
					 p_duration, NULL };
static const struct type T_ENUM = { "one of", YAML_SCALAR_NODE, p_enum, describe_enum };
static const struct type T_PATH = { "an absolute path", YAML_SCALAR_NODE, p_path, NULL };
static const struct type T_GLOB = { "a glob pattern like mlx5_ib*", YAML_SCALAR_NODE, p_glob, NULL };
static const struct type T_CLUSTER_NAME = {
	"a cluster name (1 to 63 lower-case letters, digits or '-', not starting or ending with '-')",
	YAML_SCALAR_NODE,
	p_cluster_name, NULL };
static const struct type T_IFNAME = {
	"an interface name like ib0 (at most 15 characters, no '/', ':' or spaces)", YAML_SCALAR_NODE,
	p_ifname, NULL };
static const struct type T_CIDR = { "a network like 10.0.0.0/24", YAML_SCALAR_NODE, p_cidr, NULL };
static const struct type T_CLIENTS = {
	"NFS clients: a network like 10.0.0.0/24, a host name or '*'", YAML_SCALAR_NODE,
	p_clients, NULL };
static const struct type T_NFS_SOURCE = { "an NFS source like 10.0.0.7:/shared", YAML_SCALAR_NODE,
					   p_nfs_source, NULL };
static const struct type T_STRLIST = { "a sequence", YAML_SEQUENCE_NODE, p_strlist, describe_list };
static const struct type T_FORMATS = { "a sequence of openmpi, mpich, plain or clush",
					YAML_SEQUENCE_NODE, p_formats, NULL };
static const struct type T_HOSTS = { "a sequence of host names or ranges like node[01-16]",
				      YAML_SEQUENCE_NODE, p_hosts, NULL };
static const struct type T_MAP = { "a mapping", YAML_MAPPING_NODE, p_map, NULL };
static const struct type T_MAPLIST = { "a sequence", YAML_SEQUENCE_NODE, p_maplist,
					describe_maplist };

/* T_FORMATS reports each entry through the enum handler, which reads the arg. */
#define FMT_FIELD(k, st, m) { k, &T_FORMATS, offsetof(st, m), format_vals, 0, M_NONE, NULL }

static const struct int_arg version_int = { 1, 1, 4 };
static const struct int_arg rate_int = { 0, 1600, 4 };
static const struct int_arg port_int = { 1, 65535, 2 };
static const struct int_arg expect_int = { 1, SPEC_MAX_HOSTS, 4 };
static const struct float_arg latency_float = { 0, 1e6 };
static const struct size_arg memlock_size = {
	64 * KIB, UINT64_MAX, true, offsetof(struct spec_memlock, unlimited) };
static const struct size_arg reg_mr_size = { 0, 64 * GIB, false, 0 };
static const struct dur_arg open_timeout_dur = { 100, 10 * MIN_MS };
static const struct dur_arg nfs_wait_dur = { 0, 24 * HOUR_MS };
static const struct dur_arg disc_wait_dur = { 0, 24 * HOUR_MS };
static const struct dur_arg lease_dur = { SEC_MS, 24 * HOUR_MS };
static const struct dur_arg scan_timeout_dur = { 10, 60 * SEC_MS };
static const struct cidr_arg network_cidr = { offsetof(struct spec_cluster, has_network) };
static const struct list_arg pam_users_list = {
	"'*', user names or @groups", "'*', a user name or @group", check_pam_domain, 1024, true, true };
static const struct list_arg modules_list = {
	"kernel module names", "a kernel module name", check_module, 256, false, true };
static const struct list_arg options_list = {
	"options like hard or vers=3", "an option like hard or vers=3", check_option, 64, false, false };
static const struct list_arg ssh_users_list = {
	"user names", "a user name", check_user, 1024, false, true };

static const struct field cluster_fields[] = {
	{ "name", &T_CLUSTER_NAME, offsetof(struct spec_cluster, name), NULL, F_REQUIRED, M_NONE,
	  "add name: followed by lower-case letters, digits or '-'" },
	{ "role", &T_ENUM, offsetof(struct spec_cluster, role), role_vals, 0, M_ROLE, NULL },
	{ "network", &T_CIDR, offsetof(struct spec_cluster, network), &network_cidr, 0, M_NETWORK, NULL },
	{ "secret_file", &T_PATH, offsetof(struct spec_cluster, secret_file), NULL, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field memlock_fields[] = {
	{ "limit", &T_SIZE, offsetof(struct spec_memlock, limit_bytes), &memlock_size, 0, M_NONE, NULL },
	{ "users", &T_STRLIST, offsetof(struct spec_memlock, users), &pam_users_list, 0, M_NONE, NULL },
	{ "systemd", &T_BOOL, offsetof(struct spec_memlock, systemd), NULL, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field kernel_fields[] = {
	{ "hold", &T_BOOL, offsetof(struct spec_kernel, hold), NULL, 0, M_NONE, NULL },
	{ "expect", &T_GLOB, offsetof(struct spec_kernel, expect), NULL, 0, M_NONE, NULL },
	{ "modules", &T_STRLIST, offsetof(struct spec_kernel, modules), &modules_list, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field rdma_fields[] = {
	{ "required", &T_BOOL, offsetof(struct spec_rdma, required), NULL, 0, M_NONE, NULL },
	{ "devices", &T_GLOB, offsetof(struct spec_rdma, devices), NULL, 0, M_NONE, NULL },
	{ "link_layer", &T_ENUM, offsetof(struct spec_rdma, link_layer), link_vals, 0, M_NONE, NULL },
	{ "min_rate_gbps", &T_INT, offsetof(struct spec_rdma, min_rate_gbps), &rate_int, 0, M_NONE, NULL },
	{ "ipoib", &T_IFNAME, offsetof(struct spec_rdma, ipoib), NULL, 0, M_RDMA_IPOIB, NULL },
	{ "open_timeout", &T_DURATION, offsetof(struct spec_rdma, open_timeout_ms), &open_timeout_dur,
	  0, M_NONE, NULL },
	{ "reg_mr", &T_SIZE, offsetof(struct spec_rdma, reg_mr_bytes), &reg_mr_size, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field mount_fields[] = {
	{ "source", &T_NFS_SOURCE, 0, NULL, F_REQUIRED, M_NONE, "add source: server:/export" },
	{ "path", &T_PATH, offsetof(struct spec_nfs_mount, path), NULL, F_REQUIRED, M_NONE,
	  "add path: /mount/point" },
	{ "options", &T_STRLIST, offsetof(struct spec_nfs_mount, options), &options_list, 0, M_NONE, NULL },
	{ "wait", &T_DURATION, offsetof(struct spec_nfs_mount, wait_ms), &nfs_wait_dur, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field export_fields[] = {
	{ "path", &T_PATH, offsetof(struct spec_nfs_export, path), NULL, F_REQUIRED, M_NONE,
	  "add path: /directory/to/export" },
	{ "clients", &T_CLIENTS, offsetof(struct spec_nfs_export, clients), NULL, 0, M_NONE, NULL },
	{ "options", &T_STRLIST, offsetof(struct spec_nfs_export, options), &options_list, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static void mount_init(void *elem)
{
	struct spec_nfs_mount *m = elem;

	m->wait_ms = 5 * MIN_MS;
}

static void export_init(void *elem)
{
	(void)elem;
}

static yaml_node_t *map_get(struct loader *L, yaml_node_t *map, const char *key)
{
	for (yaml_node_pair_t *p = map->data.mapping.pairs.start; p < map->data.mapping.pairs.top; p++) {
		yaml_node_t *k = node(L, p->key);

		if (k && k->type == YAML_SCALAR_NODE && !strcmp(scalar(k), key))
			return node(L, p->value);
	}
	return NULL;
}

static void set_elem_mark(struct spec_mark *m, yaml_node_t *e)
{
	m->line = (unsigned)e->start_mark.line + 1;
	m->col = (unsigned)e->start_mark.column + 1;
}

static void default_options(struct strlist *l, const char *const *opts)
{
	for (; *opts; opts++)
		strlist_push(l, *opts);
}

/* Report a path used by an earlier entry, at this entry's path value. */
static void unique_path(struct loader *L, yaml_node_t *e, const char *path, const char *what,
			const char *mine, const char *other, size_t other_i, const char *list)
{
	yaml_node_t *pv;

	if (!mine || !other || strcmp(mine, other))
		return;
	pv = map_get(L, e, "path");
	error_mark(L, pv ? pv->start_mark : e->start_mark, path,
		   "%s '%s' is already used by %s[%zu]; each %s needs its own path",
		   what, mine, list, other_i, what);
}

static void mount_finish(struct loader *L, void *elem, size_t i, yaml_node_t *e, uint32_t seen,
			 void *base, const char *path)
{
	static const char *const defaults[] = { "vers=3", "hard", "proto=tcp", NULL };
	struct spec_nfs_mount *m = elem;
	struct spec_nfs *nfs = base;

	set_elem_mark(&m->mark, e);
	if (!(seen & (1u << 2)))
		default_options(&m->options, defaults);
	for (size_t j = 0; j < i; j++)
		if (m->path && nfs->mounts[j].path && !strcmp(m->path, nfs->mounts[j].path)) {
			unique_path(L, e, path, "mount point", m->path, nfs->mounts[j].path, j,
				    "nfs.mounts");
			break;
		}
}

static void export_finish(struct loader *L, void *elem, size_t i, yaml_node_t *e, uint32_t seen,
			  void *base, const char *path)
{
	static const char *const defaults[] = { "rw", "sync", "no_subtree_check", NULL };
	struct spec_nfs_export *x = elem;
	struct spec_nfs *nfs = base;

	set_elem_mark(&x->mark, e);
	if (!(seen & (1u << 2)))
		default_options(&x->options, defaults);
	for (size_t j = 0; j < i; j++)
		if (x->path && nfs->exports[j].path && !strcmp(x->path, nfs->exports[j].path)) {
			unique_path(L, e, path, "export", x->path, nfs->exports[j].path, j,
				    "nfs.exports");
			break;
		}
}

static const struct maplist_arg mounts_arg = {
	mount_fields, sizeof(struct spec_nfs_mount), 256, offsetof(struct spec_nfs, n_mounts),
	"a mapping with source: and path:", mount_init, mount_finish };
static const struct maplist_arg exports_arg = {
	export_fields, sizeof(struct spec_nfs_export), 256, offsetof(struct spec_nfs, n_exports),
	"a mapping with path: and clients:", export_init, export_finish };

static const struct field nfs_fields[] = {
	{ "mounts", &T_MAPLIST, offsetof(struct spec_nfs, mounts), &mounts_arg, 0, M_NONE, NULL },
	{ "exports", &T_MAPLIST, offsetof(struct spec_nfs, exports), &exports_arg, 0, M_NFS_EXPORTS, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field scan_fields[] = {
	{ "port", &T_INT, offsetof(struct spec_discovery, scan_port), &port_int, 0, M_NONE, NULL },
	{ "timeout", &T_DURATION, offsetof(struct spec_discovery, scan_timeout_ms), &scan_timeout_dur,
	  0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};
static const struct schema scan_schema = { scan_fields, -1, true };

static const struct field discovery_fields[] = {
	{ "method", &T_ENUM, offsetof(struct spec_discovery, method), method_vals, 0, M_DISC_METHOD, NULL },
	{ "dir", &T_PATH, offsetof(struct spec_discovery, dir), NULL, 0, M_DISC_DIR, NULL },
	{ "hosts", &T_HOSTS, offsetof(struct spec_discovery, hosts), NULL, 0, M_DISC_HOSTS, NULL },
	{ "scan", &T_MAP, 0, &scan_schema, 0, M_NONE, NULL },
	{ "expect", &T_INT, offsetof(struct spec_discovery, expect), &expect_int, 0, M_NONE, NULL },
	{ "wait", &T_DURATION, offsetof(struct spec_discovery, wait_ms), &disc_wait_dur, 0, M_NONE, NULL },
	{ "lease", &T_DURATION, offsetof(struct spec_discovery, lease_ms), &lease_dur, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field ssh_fields[] = {
	{ "users", &T_STRLIST, offsetof(struct spec_ssh, users), &ssh_users_list, 0, M_NONE, NULL },
	{ "key_type", &T_ENUM, offsetof(struct spec_ssh, key_type), keytype_vals, 0, M_NONE, NULL },
	{ "host_keys", &T_ENUM, offsetof(struct spec_ssh, host_keys), hostkeys_vals, 0, M_NONE, NULL },
	{ "restrict_from", &T_BOOL, offsetof(struct spec_ssh, restrict_from), NULL, 0, M_SSH_RESTRICT,
	  NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field hostfile_fields[] = {
	{ "dir", &T_PATH, offsetof(struct spec_hostfile, dir), NULL, 0, M_NONE, NULL },
	FMT_FIELD("formats", struct spec_hostfile, formats),
	{ "address", &T_ENUM, offsetof(struct spec_hostfile, address), address_vals, 0, M_HF_ADDRESS,
	  NULL },
	{ "openmpi_default", &T_BOOL, offsetof(struct spec_hostfile, openmpi_default), NULL, 0, M_NONE,
	  NULL },
	{ "etc_hosts", &T_ENUM, offsetof(struct spec_hostfile, etc_hosts), etc_hosts_vals, 0, M_NONE,
	  NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

static const struct field verify_fields[] = {
	{ "enable", &T_BOOL, offsetof(struct spec_mpi, verify_enable), NULL, 0, M_NONE, NULL },
	{ "max_latency_us", &T_FLOAT, offsetof(struct spec_mpi, max_latency_us), &latency_float, 0,
	  M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};
static const struct schema verify_schema = { verify_fields, -1, true };

static const struct field mpi_fields[] = {
	{ "profile", &T_BOOL, offsetof(struct spec_mpi, profile), NULL, 0, M_NONE, NULL },
	{ "verify", &T_MAP, 0, &verify_schema, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

#define SECTION(name, st) \
	static const struct schema name##_schema = { name##_fields, (long)offsetof(st, present), false }
static const struct schema cluster_schema = { cluster_fields, -1, false };
SECTION(memlock, struct spec_memlock);
SECTION(kernel, struct spec_kernel);
SECTION(rdma, struct spec_rdma);
SECTION(nfs, struct spec_nfs);
SECTION(discovery, struct spec_discovery);
SECTION(ssh, struct spec_ssh);
SECTION(hostfile, struct spec_hostfile);
SECTION(mpi, struct spec_mpi);

static const struct field root_fields[] = {
	{ "version", &T_VERSION, offsetof(struct spec, version), &version_int, F_REQUIRED, M_NONE,
	  "add version: 1 as the first line" },
	{ "cluster", &T_MAP, offsetof(struct spec, cluster), &cluster_schema, F_REQUIRED, M_NONE,
	  "add cluster: {name: mycluster}" },
	{ "memlock", &T_MAP, offsetof(struct spec, memlock), &memlock_schema, 0, M_NONE, NULL },
	{ "kernel", &T_MAP, offsetof(struct spec, kernel), &kernel_schema, 0, M_NONE, NULL },
	{ "rdma", &T_MAP, offsetof(struct spec, rdma), &rdma_schema, 0, M_NONE, NULL },
	{ "nfs", &T_MAP, offsetof(struct spec, nfs), &nfs_schema, 0, M_NONE, NULL },
	{ "discovery", &T_MAP, offsetof(struct spec, discovery), &discovery_schema, 0, M_DISC, NULL },
	{ "ssh", &T_MAP, offsetof(struct spec, ssh), &ssh_schema, 0, M_SSH, NULL },
	{ "hostfile", &T_MAP, offsetof(struct spec, hostfile), &hostfile_schema, 0, M_NONE, NULL },
	{ "mpi", &T_MAP, offsetof(struct spec, mpi), &mpi_schema, 0, M_NONE, NULL },
	{ NULL, NULL, 0, NULL, 0, M_NONE, NULL }
};

/* Defaults from spec.h, set before the walk; lists and strings get theirs after it. */
static void spec_defaults(struct spec *s)
{
	s->cluster.role = ROLE_COMPUTE;
	s->memlock.unlimited = true;
	s->memlock.systemd = true;
	s->kernel.hold = true;
	s->rdma.required = true;
	s->rdma.link_layer = LINK_INFINIBAND;
	s->rdma.open_timeout_ms = 10 * SEC_MS;
	s->rdma.reg_mr_bytes = 64 * MIB;
	s->discovery.method = DISC_SHARED;
	s->discovery.scan_port = 22;
	s->discovery.scan_timeout_ms = 500;
	s->discovery.expect = 1;
	s->discovery.wait_ms = 10 * MIN_MS;
	s->discovery.lease_ms = 5 * MIN_MS;
	s->ssh.key_type = KEY_ED25519;
	s->ssh.host_keys = HOSTKEYS_PINNED;
	s->ssh.restrict_from = true;
	s->hostfile.address = HF_ADDR_HOSTNAME;
	s->hostfile.openmpi_default = true;
	s->hostfile.etc_hosts = HF_HOSTS_AUTO;
	s->mpi.profile = true;
	s->mpi.verify_enable = false;
	s->mpi.max_latency_us = 0;
}

static void spec_late_defaults(struct spec *s)
{
	if (s->memlock.users.n == 0)
		strlist_push(&s->memlock.users, "*");
	if (!s->rdma.devices)
		s->rdma.devices = xstrdup("mlx5_ib*");
	if (!s->hostfile.dir)
		s->hostfile.dir = xstrdup("/etc/hpcinit");
	if (!s->hostfile.formats)
		s->hostfile.formats = HF_OPENMPI | HF_MPICH | HF_PLAIN | HF_CLUSH;
}

/* Where a cross-field error points: the key's value when set, else the section key. */
static yaml_mark_t slot_mark(const struct loader *L, enum mark_slot want, enum mark_slot fallback)
{
	if (L->slots[want].set)
		return L->slots[want].val;
	if (L->slots[fallback].set)
		return L->slots[fallback].key;
	return L->doc.start_mark;
}

/* Checks between keys, after the walk.  A key that failed to parse is not used. */
static void cross_checks(struct loader *L)
{
	struct spec *s = L->spec;
	const struct slot *net = &L->slots[M_NETWORK];
	/* A network that is written but bad was reported already: don't also call it missing. */
	bool network = s->cluster.has_network || net->set;

	for (size_t i = 0; i < s->nfs.n_exports; i++) {
		struct spec_nfs_export *x = &s->nfs.exports[i];

		if (x->clients)
			continue;
		if (s->cluster.has_network) {
			x->clients = xstrdup(s->cluster.network.text);
		} else if (!network) {
			char *p = xasprintf("nfs.exports[%zu]", i);

			error_at(L, x->mark.line, x->mark.col, p,
				 "clients is not set and there is no cluster.network to default to; "
				 "add clients: (like 10.0.0.0/24) or set cluster.network");
			free(p);
		}
	}
	if (s->nfs.n_exports && s->cluster.role != ROLE_HEAD && !L->slots[M_ROLE].bad)
		error_mark(L, L->slots[M_NFS_EXPORTS].key, "nfs.exports",
			   "only the head node exports; set cluster.role: head, or move exports to the head node's spec");

	if (s->discovery.present && !L->slots[M_DISC_METHOD].bad) {
		yaml_mark_t m = slot_mark(L, M_DISC_METHOD, M_DISC);

		switch (s->discovery.method) {
		case DISC_SHARED:
			if (!s->discovery.dir && !L->slots[M_DISC_DIR].set)
				error_mark(L, m, "discovery.method",
					   "shared needs discovery.dir (a directory on the shared filesystem); add dir:");
			break;
		case DISC_STATIC:
			if (!s->discovery.hosts.n && !L->slots[M_DISC_HOSTS].bad)
				error_mark(L, m, "discovery.method",
					   "static needs discovery.hosts; add hosts: like [\"node[01-04]\"]");
			break;
		case DISC_SCAN:
			if (!network)
				error_mark(L, m, "discovery.method",
					   "scan needs cluster.network (the range to scan); set cluster.network");
			break;
		}
	}
	if (s->ssh.present && s->ssh.restrict_from && !network && !L->slots[M_SSH_RESTRICT].bad)
		error_mark(L, slot_mark(L, M_SSH_RESTRICT, M_SSH), "ssh.restrict_from",
			   "true needs cluster.network; set cluster.network or restrict_from: false");
	if (s->hostfile.present && s->hostfile.address == HF_ADDR_IPOIB && !s->rdma.ipoib &&
	    !L->slots[M_RDMA_IPOIB].bad)
		error_mark(L, L->slots[M_HF_ADDRESS].val, "hostfile.address",
			   "ipoib needs rdma.ipoib (the IPoIB interface); set rdma.ipoib: ib0 or use address: hostname");
}

/* ---------------------------------------------------------------- before libyaml */

/* Non-UTF-8 and control characters: libyaml's own messages give no line. */
static bool check_bytes(struct loader *L)
{
	for (size_t i = 0; i < L->len;) {
		uint32_t cp;
		size_t l = utf8_seq(L->buf + i, L->len - i, &cp);
		unsigned line, col;

		if (l == 0) {
			offset_to_pos(L, i, &line, &col);
			error_at(L, line, col, NULL, "invalid UTF-8 (byte 0x%02X); save the file as UTF-8",
				 L->buf[i]);
			return false;
		}
		if ((cp < 0x20 && cp != '\t' && cp != '\n' && cp != '\r') || cp == 0x7f ||
		    (cp >= 0x80 && cp < 0xa0 && cp != 0x85) || cp == 0xfffe || cp == 0xffff) {
			offset_to_pos(L, i, &line, &col);
			error_at(L, line, col, NULL,
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
static bool check_tabs(struct loader *L)
{
	bool ok = true;

	for (size_t n = 0; n < L->n_lines; n++) {
		size_t i = L->line_start[n], end = L->line_end[n], tab = SIZE_MAX;

		for (; i < end && (L->buf[i] == ' ' || L->buf[i] == '\t'); i++)
			if (L->buf[i] == '\t' && tab == SIZE_MAX)
				tab = i;
		if (tab == SIZE_MAX || i == end || L->buf[i] == '#')
			continue;
		error_at(L, (unsigned)n + 1, (unsigned)(tab - L->line_start[n]) + 1, NULL,
			 "tab character in indentation; YAML indents with spaces only");
		ok = false;
	}
	return ok;
}

/* libyaml's problem in its own words, for the parentheses. */
static char *yaml_problem(const yaml_parser_t *p)
{
	if (p->context)
		return xasprintf("%s %s at line %lu", p->problem, p->context,
				 (unsigned long)p->context_mark.line + 1);
	return xstrdup(p->problem ? p->problem : "unknown error");
}

static void yaml_error(struct loader *L, const yaml_parser_t *p)
{
	const char *prob = p->problem ? p->problem : "";
	char *orig;
	unsigned line, col;
	size_t off;

	if (p->error == YAML_MEMORY_ERROR) {
		error_at(L, 0, 0, NULL, "out of memory while parsing");
		return;
	}
	if (p->error == YAML_READER_ERROR) {
		offset_to_pos(L, p->problem_offset < L->len ? p->problem_offset : L->len, &line, &col);
		error_at(L, line, col, NULL, "cannot read the input (%s)", prob);
		return;
	}
	orig = yaml_problem(p);
	line = (unsigned)p->problem_mark.line + 1;
	col = (unsigned)p->problem_mark.column + 1;
	off = mark_to_offset(L, p->problem_mark);
	if ((off < L->len && L->buf[off] == '\t') || strstr(prob, "tab character")) {
		error_at(L, line, col, NULL,
			 "tab character in indentation; YAML indents with spaces only (%s)", orig);
	} else if (!strcmp(prob, "did not find expected key") ||
		   !strcmp(prob, "did not find expected '-' indicator")) {
		error_at(L, line, col, NULL,
			 "bad indentation: check that keys at the same level start in the same column (%s)",
			 orig);
	} else if (!strcmp(prob, "mapping values are not allowed in this context")) {
		error_at(L, line, col, NULL,
			 "bad indentation: check that keys at the same level start in the same column, "
			 "and quote values that contain ': ' (%s)", orig);
	} else if (!strcmp(prob, "block sequence entries are not allowed in this context")) {
		error_at(L, line, col, NULL,
			 "bad indentation: a '- ' entry must start on its own line, below its key (%s)",
			 orig);
	} else if (!strcmp(prob, "could not find expected ':'")) {
		error_at(L, line, col, NULL, "expected 'key: value' (%s)", orig);
	} else if (p->context && strstr(p->context, "quoted scalar")) {
		/* Point at the opening quote: the end of the file tells nothing. */
		error_mark(L, p->context_mark, NULL,
			   "unterminated quoted string; add the closing quote (%s)", orig);
	} else if (strstr(prob, "expected ',' or ']'")) {
		error_mark(L, p->context_mark, NULL,
			   "unclosed '['; close the sequence with ']' (%s)", orig);
	} else if (strstr(prob, "expected ',' or '}'")) {
		error_mark(L, p->context_mark, NULL,
			   "unclosed '{'; close the mapping with '}' (%s)", orig);
	} else {
		error_at(L, line, col, NULL, "YAML syntax error (%s)", orig);
	}
	free(orig);
}

/* The event pass: syntax, aliases, one document only, bounded nesting. */
static bool check_events(struct loader *L)
{
	yaml_parser_t p;
	yaml_event_t ev;
	int depth = 0, docs = 0;
	bool ok = true, done = false;

	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, L->buf, L->len);
	while (!done) {
		if (!yaml_parser_parse(&p, &ev)) {
			yaml_error(L, &p);
			ok = false;
			break;
		}
		switch (ev.type) {
		case YAML_DOCUMENT_START_EVENT:
			if (++docs == 2) {
				error_mark(L, ev.start_mark, NULL,
					   "a spec holds one YAML document; remove this second one (or its '---')");
				ok = false;
				done = true;
			}
			break;
		case YAML_ALIAS_EVENT:
			error_mark(L, ev.start_mark, NULL,
				   "aliases (*%s) are not supported; write the value out",
				   (const char *)ev.data.alias.anchor);
			ok = false;
			break;
		case YAML_SEQUENCE_START_EVENT:
		case YAML_MAPPING_START_EVENT:
			if (++depth > SPEC_MAX_DEPTH) {
				error_mark(L, ev.start_mark, NULL,
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
		error_at(L, 1, 1, NULL, "empty spec; expected a mapping with version: 1 and cluster:");
		ok = false;
	}
	return ok;
}

/* ---------------------------------------------------------------- entry points */

struct spec *spec_free(struct spec *s)
{
	if (!s)
		return NULL;
	free(s->file);
	free(s->cluster.name);
	free(s->cluster.secret_file);
	strlist_free(&s->memlock.users);
	free(s->kernel.expect);
	strlist_free(&s->kernel.modules);
	free(s->rdma.devices);
	free(s->rdma.ipoib);
	for (size_t i = 0; i < s->nfs.n_mounts; i++) {
		struct spec_nfs_mount *m = &s->nfs.mounts[i];

		free(m->source);
		free(m->host);
		free(m->export);
		free(m->path);
		strlist_free(&m->options);
	}
	free(s->nfs.mounts);
	for (size_t i = 0; i < s->nfs.n_exports; i++) {
		free(s->nfs.exports[i].path);
		free(s->nfs.exports[i].clients);
		strlist_free(&s->nfs.exports[i].options);
	}
	free(s->nfs.exports);
	free(s->discovery.dir);
	strlist_free(&s->discovery.hosts);
	strlist_free(&s->ssh.users);
	free(s->hostfile.dir);
	free(s);
	return NULL;
}

static int load(struct loader *L)
{
	yaml_parser_t p;
	yaml_node_t *root;
	yaml_mark_t top = { 0, 0, 0 };

	if (!check_bytes(L))
		return -EINVAL;
	if (!check_tabs(L))
		return -EINVAL;
	if (!check_events(L))
		return -EINVAL;

	yaml_parser_initialize(&p);
	yaml_parser_set_input_string(&p, L->buf, L->len);
	if (!yaml_parser_load(&p, &L->doc)) {
		int r = p.error == YAML_MEMORY_ERROR ? -ENOMEM : -EINVAL;

		yaml_error(L, &p);
		yaml_parser_delete(&p);
		return r;
	}
	yaml_parser_delete(&p);
	L->doc_loaded = true;
	root = yaml_document_get_root_node(&L->doc);
	if (!root || node_is_null(root)) {
		error_at(L, 1, 1, NULL, "empty spec; expected a mapping with version: 1 and cluster:");
		return -EINVAL;
	}
	if (root->type != YAML_MAPPING_NODE) {
		struct strbuf sb = STRBUF_INIT;

		sb_describe_node(&sb, root);
		error_mark(L, root->start_mark, NULL,
			   "expected a mapping with version: 1 and cluster:, got %s", sb_str(&sb));
		sb_free(&sb);
		return -EINVAL;
	}
	top = root->start_mark;
	walk_map(L, root, root_fields, L->spec, NULL, top);
	cross_checks(L);
	spec_late_defaults(L->spec);
	return L->n_errors ? -EINVAL : 0;
}

int spec_load_buffer(const char *name, const char *buf, size_t len,
		     struct spec **ret_spec, struct diags *diags)
{
	struct loader L;
	size_t first = diags->n;
	int r;

	memset(&L, 0, sizeof(L));
	L.name = name ? name : "<spec>";
	L.buf = (const unsigned char *)(buf ? buf : "");
	L.len = buf ? len : 0;
	L.diags = diags;
	if (L.len > SPEC_MAX_BYTES) {
		error_at(&L, 0, 0, NULL, "spec is larger than the limit of %d bytes (1 MiB); "
			 "is this the right file?", SPEC_MAX_BYTES);
		return -EFBIG;
	}
	index_lines(&L);
	L.spec = xcalloc(1, sizeof(*L.spec));
	L.spec->file = xstrdup(L.name);
	spec_defaults(L.spec);

	r = load(&L);

	if (L.doc_loaded)
		yaml_document_delete(&L.doc);
	if (L.n_errors > SPEC_MAX_DIAGS)
		diag_push(diags, L.name, 0, 0,
			  xasprintf("too many errors (%zu); fix these first", L.n_errors), NULL);
	sort_diags(diags, first);
	free(L.line_start);
	free(L.line_end);
	if (r < 0) {
		spec_free(L.spec);
		return r;
	}
	*ret_spec = L.spec;
	return 0;
}

int spec_load_file(const char *path, struct spec **ret_spec, struct diags *diags)
{
	struct strbuf sb = STRBUF_INIT;
	struct stat st;
	char chunk[65536];
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		diag_push(diags, path, 0, 0, xasprintf("cannot open the spec: %s", strerror(-r)), NULL);
		return r;
	}
	if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		close(fd);
		diag_push(diags, path, 0, 0, xstrdup("is a directory; give the spec file"), NULL);
		return -EISDIR;
	}
	for (;;) {
		ssize_t n = read(fd, chunk, sizeof(chunk));

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			close(fd);
			sb_free(&sb);
			diag_push(diags, path, 0, 0, xasprintf("cannot read the spec: %s", strerror(-r)),
				  NULL);
			return r;
		}
		if (n == 0)
			break;
		sb_appendn(&sb, chunk, (size_t)n);
		/* Stop reading early: the size error does not need the rest. */
		if (sb.len > SPEC_MAX_BYTES)
			break;
	}
	close(fd);
	r = spec_load_buffer(path, sb.buf, sb.len, ret_spec, diags);
	sb_free(&sb);
	return r;
}
