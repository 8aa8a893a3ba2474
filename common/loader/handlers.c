/* SPDX-License-Identifier: MIT */
/*
 * The typed handlers of the schema (schema.h): each stores one value in its
 * field or reports, at the value, what was expected.  The rules they apply
 * are units.c's, names.c's, cidr.c's and nodeset.c's.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ascii.h"
#include "cidr.h"
#include "names.h"
#include "nodeset.h"
#include "schema.h"
#include "strlist.h"
#include "units.h"

/* Store a freshly allocated string in a char * field. */
void set_string(const struct field *f, void *base, char *s)
{
	char **dst = field_ptr(f, base);

	free(*dst);
	*dst = s;
}

static bool p_bool(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const char *s = node_text(v);
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
	int r = parse_ll(node_text(v), &n);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || n < a->min || n > a->max) {
		error_mark(L, v->start_mark, path, "%s is out of range; use a number from %lld to %lld",
			   node_text(v), a->min, a->max);
		return false;
	}
	switch (a->width) {
	case 2: { uint16_t x = (uint16_t)n; memcpy(field_ptr(f, base), &x, 2); break; }
	case 4: { unsigned x = (unsigned)n; memcpy(field_ptr(f, base), &x, 4); break; }
	default: { uint64_t x = (uint64_t)n; memcpy(field_ptr(f, base), &x, 8); break; }
	}
	return true;
}

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
	int r = parse_number(node_text(v), &d);

	if (r == -EINVAL) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	if (r < 0 || d < a->min || d > a->max) {
		error_mark(L, v->start_mark, path, "%s is out of range; use a number from %.15g to %.15g",
			   node_text(v), a->min, a->max);
		return false;
	}
	*(double *)field_ptr(f, base) = d;
	return true;
}

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
	const char *s = node_text(v);
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

static bool p_duration(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		       void *base, const char *path)
{
	const struct dur_arg *a = f->arg;
	uint64_t ms = 0;
	int r = parse_duration(node_text(v), &ms);

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
			   node_text(v), sb_str(&sb));
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

bool enum_lookup(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			const char *path, int *ret)
{
	const struct enum_val *e = f->arg;
	const char *names[16], *s = node_text(v), *close_;
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
	const struct path_arg *a = f->arg;
	const char *why = NULL;
	char *p = name_path_normalize(node_text(v), &why);

	if (p && a && a->not_root && !strcmp(p, "/")) {
		free(p);
		p = NULL;
		why = "expected a path other than /";
	}
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
static bool p_checked(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path, check_fn check, bool say_why)
{
	const char *why = check(node_text(v));

	if (why) {
		bad_value(L, f, k, v, path, say_why ? why : NULL);
		return false;
	}
	set_string(f, base, xstrdup(node_text(v)));
	return true;
}

static bool p_glob(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, name_check_glob, true);
}

static bool p_cluster_name(struct loader *L, const struct field *f, yaml_node_t *k,
			   yaml_node_t *v, void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, name_check_cluster, false);
}

static bool p_ifname(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		     void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, name_check_ifname, false);
}

static bool p_cidr(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		   void *base, const char *path)
{
	const struct cidr_arg *a = f->arg;
	struct cidr c;

	if (cidr_parse(node_text(v), &c) < 0) {
		bad_value(L, f, k, v, path, NULL);
		return false;
	}
	*(struct cidr *)field_ptr(f, base) = c;
	*(bool *)((char *)base + a->has_off) = true;
	return true;
}



static void describe_list(const struct field *f, struct strbuf *sb)
{
	const struct list_arg *a = f->arg;

	sb_printf(sb, "a sequence of %s", a->items);
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
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
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
		why = a->check(node_text(e));
		if (why) {
			sb_quote(&sb, node_text(e));
			error_mark(L, e->start_mark, path, "%s: %s", sb_str(&sb), why);
			sb_free(&sb);
			ok = false;
			continue;
		}
		for (j = 0; a->unique && j < out->n; j++)
			if (!strcmp(out->v[j], node_text(e)))
				break;
		if (a->unique && j < out->n) {
			sb_quote(&sb, node_text(e));
			error_mark(L, e->start_mark, path, "%s is listed twice", sb_str(&sb));
			sb_free(&sb);
			ok = false;
			continue;
		}
		strlist_push(out, node_text(e));
	}
	return ok;
}

/* Host names and ranges, expanded in spec order. */
static bool p_hosts(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		    void *base, const char *path)
{
	const struct hosts_arg *a = f->arg;
	struct strlist *out = field_ptr(f, base);
	size_t n = seq_len(v), total = 0;
	struct noderange *nrs;
	bool ok = true;

	strlist_free(out);
	if (!seq_count_ok(L, f, k, v, path, n, a->max, false, "a host name"))
		return false;
	if (n == 0)
		return true;
	/* First pass: parse every entry and count the names against the limit. */
	nrs = xcalloc(n, sizeof(*nrs));
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
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
		sb_quote(&sb, node_text(e));
		if (noderange_parse(node_text(e), &nrs[i], &why) < 0) {
			error_mark(L, e->start_mark, path, "bad node range %s: %s", sb_str(&sb), why);
			ok = false;
		} else if (nrs[i].count > a->max - total) {
			if (nrs[i].count > a->max)
				error_mark(L, e->start_mark, path, "%s expands to more than %zu hosts",
					   sb_str(&sb), a->max);
			else
				error_mark(L, e->start_mark, path,
					   "the list expands to more than %zu hosts at %s",
					   a->max, sb_str(&sb));
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
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
		size_t first = out->n;

		if (!nrs[i].prefix)
			continue;
		noderange_fill(&nrs[i], out);
		noderange_clear(&nrs[i]);
		for (size_t j = first; j < out->n; j++) {
			struct strbuf sb = STRBUF_INIT;

			if (name_hostname_valid(out->v[j]) || name_ip_valid(out->v[j]))
				continue;
			sb_quote(&sb, node_text(e));
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

/* A mapping: its own table (a section, or inline keys like scan:). */
static bool p_url(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		  void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, name_check_url, false);
}

/*
 * An OpenSSH public key line, "type base64 [comment]": a known plain key
 * type and a base64 blob whose first field names the same type (RFC 4253
 * string), so a certificate or a truncated paste is caught at load time.
 */
static const char *check_ssh_pubkey(const char *s)
{
	static const char *const types[] = { "ssh-ed25519", "ecdsa-sha2-nistp256",
		"ecdsa-sha2-nistp384", "ecdsa-sha2-nistp521", "ssh-rsa", NULL };
	static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	unsigned char blob[64];
	size_t tl = strcspn(s, " "), bl, n = 0, i;
	const char *p = s + tl;
	uint32_t acc = 0;
	int bits = 0;
	bool known = false;

	for (i = 0; types[i]; i++)
		if (strlen(types[i]) == tl && strncmp(s, types[i], tl) == 0)
			known = true;
	if (!known || *p != ' ')
		return "expected a public key like \"ssh-ed25519 AAAA... comment\"";
	p++;
	bl = strcspn(p, " ");
	if (bl < 16 || strspn(p, b64) + strspn(p + strspn(p, b64), "=") != bl)
		return "expected a public key like \"ssh-ed25519 AAAA... comment\"";
	for (i = 0; i < bl && p[i] != '=' && n < sizeof(blob); i++) {
		acc = (acc << 6) | (uint32_t)(strchr(b64, p[i]) - b64);
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			blob[n++] = (unsigned char)(acc >> bits);
		}
	}
	if (n < 4 + tl || ((uint32_t)blob[0] << 24 | (uint32_t)blob[1] << 16 | (uint32_t)blob[2] << 8 |
			   blob[3]) != tl || memcmp(blob + 4, s, tl) != 0)
		return "the key's base64 does not hold a key of the type it names";
	return NULL;
}

static bool p_ssh_pubkey(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
			 void *base, const char *path)
{
	return p_checked(L, f, k, v, base, path, check_ssh_pubkey, true);
}

/* exports(5) clients: '*', a network, an address, a host name (wildcards allowed), @netgroup. */
static bool p_clients(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	const char *s = node_text(v);
	struct cidr c;

	if (cidr_parse(s, &c) == 0) {
		set_string(f, base, xstrdup(c.text));
		return true;
	}
	if (!strcmp(s, "*") || name_ip_valid(s) || name_host_valid(s, NAME_WILD) ||
	    (s[0] == '@' && name_hostname_valid(s + 1))) {
		set_string(f, base, xstrdup(s));
		return true;
	}
	bad_value(L, f, k, v, path, NULL);
	return false;
}

/* A sequence of enum names, stored as bits (hostfile.formats). */
static bool p_flags(struct loader *L, const struct field *f, yaml_node_t *k, yaml_node_t *v,
		      void *base, const char *path)
{
	const struct flags_arg *a = f->arg;
	unsigned *dst = field_ptr(f, base), bits = 0;
	size_t n = seq_len(v);
	struct field ef = *f;
	bool ok = true;

	ef.type = &T_ENUM;      /* entries are reported as single enum values */
	ef.arg = a->vals;
	if (!seq_count_ok(L, f, k, v, path, n, 16, true, a->list))
		return false;
	for (size_t i = 0; i < n; i++) {
		yaml_node_t *e = ld_node(L, v->data.sequence.items.start[i]);
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
			error_mark(L, e->start_mark, path, "%s '%s' is listed twice", a->item,
				   node_text(e));
			ok = false;
			continue;
		}
		bits |= (unsigned)x;
	}
	if (ok)
		*dst = bits;
	return ok;
}

static void describe_flags(const struct field *f, struct strbuf *sb)
{
	const struct flags_arg *a = f->arg;

	sb_printf(sb, "a sequence of %s", a->list);
}

/* ---- the types ---- */

const struct type T_BOOL = { "a boolean (true or false)", YAML_SCALAR_NODE, p_bool, NULL };
const struct type T_INT = { "an integer", YAML_SCALAR_NODE, p_int, describe_int };
const struct type T_FLOAT = { "a number", YAML_SCALAR_NODE, p_float, describe_float };
const struct type T_SIZE = { "a size", YAML_SCALAR_NODE, p_size, describe_size };
const struct type T_DURATION = { "a duration like 10s (ms, s, m or h)", YAML_SCALAR_NODE,
				  p_duration, NULL };
const struct type T_ENUM = { "one of", YAML_SCALAR_NODE, p_enum, describe_enum };
const struct type T_PATH = { "an absolute path", YAML_SCALAR_NODE, p_path, NULL };
const struct type T_GLOB = { "a glob pattern like mlx5_ib*", YAML_SCALAR_NODE, p_glob, NULL };
const struct type T_CLUSTER_NAME = {
	"a cluster name (1 to 63 lower-case letters, digits or '-', not starting or ending with '-')",
	YAML_SCALAR_NODE,
	p_cluster_name, NULL };
const struct type T_IFNAME = {
	"an interface name like ib0 (at most 15 characters, no '/', ':' or spaces)", YAML_SCALAR_NODE,
	p_ifname, NULL };
const struct type T_CIDR = { "a network like 10.0.0.0/24", YAML_SCALAR_NODE, p_cidr, NULL };
const struct type T_STRLIST = { "a sequence", YAML_SEQUENCE_NODE, p_strlist, describe_list };
const struct type T_HOSTS = { "a sequence of host names or ranges like node[01-16]",
			       YAML_SEQUENCE_NODE, p_hosts, NULL };
const struct type T_SSH_PUBKEY = { "an OpenSSH public key", YAML_SCALAR_NODE, p_ssh_pubkey, NULL };
const struct type T_URL = { "an http:// or https:// URL", YAML_SCALAR_NODE, p_url, NULL };
const struct type T_CLIENTS = {
	"NFS clients: a network like 10.0.0.0/24, a host name or '*'", YAML_SCALAR_NODE,
	p_clients, NULL };
const struct type T_FLAGS = { "a sequence", YAML_SEQUENCE_NODE, p_flags, describe_flags };
