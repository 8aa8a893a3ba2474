/* SPDX-License-Identifier: MIT */
/*
 * Peer records (docs/conventions.md "Peers").  A record is a small YAML document in a
 * fixed shape, so that writing it is a printf and reading 10,000 of them is
 * a single pass over each file with no allocation per line:
 *
 *   # hpcinit peer record; written by hpcinit, do not edit
 *   format: 1
 *   cluster: glocluster
 *   hostname: node1
 *   addr: 10.0.0.4
 *   ipoib: 172.16.1.4                  (optional)
 *   fabric: mlx5_ib0=0c42:a103:0065:aa10   (optional: RDMA devices and port GUIDs)
 *   pkey: 0x800b                       (optional: the InfiniBand tenant P_Key)
 *   placement_group: 2a6d...           (optional: Azure's placementGroupId)
 *   slots: 120
 *   role: compute
 *   version: 0.1.0
 *   boot_id: 0f3c...                   (optional)
 *   updated: 1700000000
 *   formed: true                       (optional)
 *   state: degraded                    (optional: ready, degraded, failed)
 *   reason: mounts.nfs.absent          (optional: the worst finding's tag)
 *   ready_ms: 41230                    (optional: its boot's time to ready)
 *   users: alice=10001:10001           (optional: the spec's users as NSS resolved them)
 *   host_keys:
 *     - ssh-ed25519 AAAA...
 *   user_keys:
 *     - user: azureuser
 *       key: ssh-ed25519 AAAA... azureuser@hpcinit
 *   hmac: <64 hex digits>              (with a cluster secret)
 *   ...
 *
 * The parser accepts exactly this shape (any valid YAML reader reads it too),
 * and every value is checked against a character set before it is kept, so
 * nothing from a record reaches a path, a hostfile or a known_hosts line
 * unvalidated.  The "..." document end marker is the last line: a record
 * without it was cut short.  The HMAC covers every byte before the hmac line.
 * Versions (docs/formats.md): "format: N" is always the first field.
 * Unknown top-level "key: value" lines are skipped, so a newer agent can add
 * optional fields without a new format and without older nodes rejecting
 * its record during a rolling upgrade; a new format number is for a change
 * an older reader would misread, and such a record is refused before any
 * other line of it is read (check_newer).  Optional fields added to format 1
 * before release 0.1.0: "formed: true" says the writer has seen its cluster
 * formed (a node joining then does not wait for discovery.expect); state,
 * reason and ready_ms (a record without them is a node whose state is
 * unknown, which every reader treats as usable); users, what the writer
 * resolved of ssh.users (a record without it says nothing about them).
 * Each is covered by the HMAC like every field.
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"
#include "number.h"
#include "record.h"
#include "sha256.h"
#include "strbuf.h"

#define RECORD_END "...\n"

void peer_clear(struct peer *p)
{
	if (!p)
		return;
	free(p->hostname);
	free(p->addr);
	free(p->ipoib_addr);
	free(p->fabric);
	free(p->pkey);
	free(p->placement_group);
	strlist_free(&p->host_keys);
	for (size_t i = 0; i < p->n_user_keys; i++) {
		free(p->user_keys[i].user);
		free(p->user_keys[i].key);
	}
	free(p->user_keys);
	free(p->version);
	free(p->boot_id);
	free(p->reason);
	free(p->users);
	memset(p, 0, sizeof(*p));
}

static char *dup_opt(const char *s)
{
	return s ? xstrdup(s) : NULL;
}

/* Field by field as peer_clear frees them: a field added to one is added to both. */
void peer_copy(struct peer *dst, const struct peer *src)
{
	*dst = *src;    /* the numbers and flags */
	dst->hostname = dup_opt(src->hostname);
	dst->addr = dup_opt(src->addr);
	dst->ipoib_addr = dup_opt(src->ipoib_addr);
	dst->fabric = dup_opt(src->fabric);
	dst->pkey = dup_opt(src->pkey);
	dst->placement_group = dup_opt(src->placement_group);
	memset(&dst->host_keys, 0, sizeof(dst->host_keys));
	strlist_copy(&dst->host_keys, &src->host_keys);
	dst->user_keys = src->n_user_keys ? xcalloc(src->n_user_keys, sizeof(*dst->user_keys)) : NULL;
	for (size_t i = 0; i < src->n_user_keys; i++) {
		dst->user_keys[i].user = dup_opt(src->user_keys[i].user);
		dst->user_keys[i].key = dup_opt(src->user_keys[i].key);
	}
	dst->version = dup_opt(src->version);
	dst->boot_id = dup_opt(src->boot_id);
	dst->reason = dup_opt(src->reason);
	dst->users = dup_opt(src->users);
}

struct peerset *peerset_free(struct peerset *s)
{
	if (!s)
		return NULL;
	for (size_t i = 0; i < s->n; i++)
		peer_clear(&s->v[i]);
	free(s->v);
	free(s);
	return NULL;
}

struct peer *peerset_add(struct peerset *s)
{
	/* Capacity is implied by n: 8, then doubled at every power of two. */
	if (s->n < 8 || (s->n & (s->n - 1)) == 0) {
		size_t cap = s->n < 8 ? 8 : s->n * 2;

		s->v = xrealloc(s->v, cap * sizeof(*s->v));
	}
	memset(&s->v[s->n], 0, sizeof(s->v[0]));
	return &s->v[s->n++];
}

static inline bool is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/*
 * Natural order: runs of digits compare as numbers ("node2" < "node10"),
 * everything else byte by byte.  Equal numbers with different zero padding
 * ("node01" vs "node1") fall back to strcmp so the order stays total.
 */
int natural_cmp(const char *a, const char *b)
{
	const char *pa = a, *pb = b;

	while (*pa && *pb) {
		if (is_digit(*pa) && is_digit(*pb)) {
			const char *sa, *sb;
			size_t la, lb;

			while (*pa == '0' && is_digit(pa[1]))
				pa++;
			while (*pb == '0' && is_digit(pb[1]))
				pb++;
			sa = pa;
			sb = pb;
			while (is_digit(*pa))
				pa++;
			while (is_digit(*pb))
				pb++;
			la = (size_t)(pa - sa);
			lb = (size_t)(pb - sb);
			if (la != lb)
				return la < lb ? -1 : 1;
			for (size_t i = 0; i < la; i++)
				if (sa[i] != sb[i])
					return sa[i] < sb[i] ? -1 : 1;
			continue;
		}
		if (*pa != *pb)
			return (unsigned char)*pa < (unsigned char)*pb ? -1 : 1;
		pa++;
		pb++;
	}
	if (*pa || *pb)
		return *pa ? 1 : -1;
	return strcmp(a, b);
}

static int peer_order(const void *x, const void *y)
{
	const struct peer *a = x, *b = y;

	if (a->head != b->head)
		return a->head ? -1 : 1;
	return natural_cmp(a->hostname, b->hostname);
}

void peerset_sort(struct peerset *s)
{
	if (s && s->n > 1)
		qsort(s->v, s->n, sizeof(s->v[0]), peer_order);
}

static const char *const state_names[] = { "unknown", "ready", "degraded", "failed" };

const char *peer_state_name(enum peer_state s)
{
	return (unsigned)s < 4 ? state_names[s] : "unknown";
}

/* ---- validation of single values ---- */

/* A name a machine calls itself: RFC 1123, and '_' as some images use it. */
bool record_hostname_valid(const char *s)
{
	return s && name_host_valid(s, NAME_UNDERSCORE);
}

static bool token_valid(const char *s, size_t n, size_t max, const char *extra)
{
	if (n == 0 || n > max)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c) ||
		      strchr(extra, c)) || c == '\0')
			return false;
	}
	return true;
}

static bool hex_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!(is_digit(s[i]) || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return true;
}

/* n bytes of s: a uid or gid, decimal without leading zeros, below 4294967295; -1 when not. */
static int64_t id_value(const char *s, size_t n)
{
	int64_t v = 0;

	if (n == 0 || n > 10 || (n > 1 && s[0] == '0'))
		return -1;
	for (size_t i = 0; i < n; i++) {
		if (!is_digit(s[i]))
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	return v < 4294967295 ? v : -1;
}

/* One "name=uid:gid" item of n bytes: its name's length, or 0 when malformed; the numbers in ret. */
static size_t users_item(const char *s, size_t n, int64_t *ret_uid, int64_t *ret_gid)
{
	const char *eq = memchr(s, '=', n), *colon;
	size_t nl;

	if (!eq)
		return 0;
	nl = (size_t)(eq - s);
	colon = memchr(eq + 1, ':', n - nl - 1);
	if (!colon || !name_user_validn(s, nl))
		return 0;
	*ret_uid = id_value(eq + 1, (size_t)(colon - eq - 1));
	*ret_gid = id_value(colon + 1, (size_t)(s + n - colon - 1));
	return *ret_uid < 0 || *ret_gid < 0 ? 0 : nl;
}

bool record_users_valid(const char *s, size_t n)
{
	if (n == 0 || n > RECORD_USERS_MAX)
		return false;
	for (const char *p = s, *end = s + n; p < end;) {
		const char *comma = memchr(p, ',', (size_t)(end - p));
		size_t il = comma ? (size_t)(comma - p) : (size_t)(end - p);
		int64_t u, g;

		if (!users_item(p, il, &u, &g) || (comma && comma + 1 == end))
			return false;
		p += il + 1;
	}
	return true;
}

int record_user_ids(const struct peer *p, const char *user, uint32_t *ret_uid, uint32_t *ret_gid)
{
	size_t ul = strlen(user);

	for (const char *s = p->users; s && *s;) {
		const char *comma = strchr(s, ',');
		size_t il = comma ? (size_t)(comma - s) : strlen(s);
		int64_t u, g;

		if (users_item(s, il, &u, &g) == ul && memcmp(s, user, ul) == 0) {
			*ret_uid = (uint32_t)u;
			*ret_gid = (uint32_t)g;
			return 0;
		}
		s = comma ? comma + 1 : NULL;
	}
	return -ENOENT;
}

/*
 * Length of a public key "type base64" at the start of s (the form
 * sshkey_canonical() produces: the same character sets and minimum
 * lengths), or 0 when s does not start with one.  No allocation: this runs
 * for every key of every record.
 */
static size_t key_span(const char *s, size_t n)
{
	size_t t = 0, b;

	while (t < n && ((s[t] >= 'a' && s[t] <= 'z') || is_digit(s[t]) || s[t] == '-' ||
			 s[t] == '@' || s[t] == '.'))
		t++;
	if (t < 7 || t >= n || s[t] != ' ' ||
	    !(memcmp(s, "ssh-", 4) == 0 || memcmp(s, "ecdsa-", 6) == 0 || memcmp(s, "sk-", 3) == 0))
		return 0;
	b = t + 1;
	while (b < n && ((s[b] >= 'A' && s[b] <= 'Z') || (s[b] >= 'a' && s[b] <= 'z') ||
			 is_digit(s[b]) || s[b] == '+' || s[b] == '/' || s[b] == '='))
		b++;
	if (b - t - 1 < 16 || (b < n && s[b] != ' '))
		return 0;
	return b;
}

/* "type base64" plus a plain comment when there is one; an odd comment is dropped. */
static char *user_key_clean(const char *s, size_t n)
{
	size_t k = key_span(s, n);

	if (!k)
		return NULL;
	if (k + 1 < n && token_valid(s + k + 1, n - k - 1, 128, "@._-+"))
		return xstrndup(s, n);
	return xstrndup(s, k);
}

/* ---- formatting ---- */

/* "name: value\n" without printf: records are formatted once per peer for
 * every child's answer, 10,000 times a refresh at 10,000 records. */
static void field(struct strbuf *sb, const char *name, const char *value)
{
	sb_append(sb, name);
	sb_append(sb, value);
	sb_appendn(sb, "\n", 1);
}

char *record_format(const struct peer *p, const char *cluster, const void *key, size_t keylen)
{
	struct strbuf sb = STRBUF_INIT;

	sb_append(&sb, "# hpcinit peer record; written by hpcinit, do not edit\n");
	sb_printf(&sb, "format: %d\n", RECORD_FORMAT);
	field(&sb, "cluster: ", cluster);
	field(&sb, "hostname: ", p->hostname);
	field(&sb, "addr: ", p->addr);
	if (p->ipoib_addr)
		field(&sb, "ipoib: ", p->ipoib_addr);
	if (p->fabric)
		field(&sb, "fabric: ", p->fabric);
	if (p->pkey)
		field(&sb, "pkey: ", p->pkey);
	if (p->placement_group)
		field(&sb, "placement_group: ", p->placement_group);
	sb_printf(&sb, "slots: %u\n", p->slots);
	field(&sb, "role: ", p->head ? "head" : "compute");
	if (p->version)
		field(&sb, "version: ", p->version);
	if (p->boot_id)
		field(&sb, "boot_id: ", p->boot_id);
	sb_printf(&sb, "updated: %" PRId64 "\n", p->updated);
	if (p->formed)
		sb_append(&sb, "formed: true\n");
	if (p->state != PEER_UNKNOWN)
		field(&sb, "state: ", peer_state_name(p->state));
	if (p->state != PEER_UNKNOWN && p->reason)
		field(&sb, "reason: ", p->reason);
	if (p->ready_ms > 0)
		sb_printf(&sb, "ready_ms: %" PRId64 "\n", p->ready_ms);
	if (p->users)
		field(&sb, "users: ", p->users);
	if (p->host_keys.n) {
		sb_append(&sb, "host_keys:\n");
		for (size_t i = 0; i < p->host_keys.n; i++)
			field(&sb, "  - ", p->host_keys.v[i]);
	} else {
		sb_append(&sb, "host_keys: []\n");
	}
	if (p->n_user_keys) {
		sb_append(&sb, "user_keys:\n");
		for (size_t i = 0; i < p->n_user_keys; i++)
			{
				field(&sb, "  - user: ", p->user_keys[i].user);
				field(&sb, "    key: ", p->user_keys[i].key);
			}
	} else {
		sb_append(&sb, "user_keys: []\n");
	}
	if (key) {
		char mac[RECORD_HMAC_HEX + 1];

		if (record_hmac(key, keylen, sb.buf, sb.len, mac) < 0) {
			sb_free(&sb);
			return NULL;
		}
		field(&sb, "hmac: ", mac);
	}
	sb_append(&sb, RECORD_END);
	return sb_steal(&sb);
}

/* ---- parsing ---- */

struct parser {
	const char *text, *end;
	const char *line;       /* current line */
	size_t len;             /* its length without '\n' */
	unsigned flags;         /* the LC_ classes of the line's bytes */
	unsigned lineno;
	char *err;
	size_t errlen;
};

static int perr(struct parser *ps, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int perr(struct parser *ps, int code, const char *fmt, ...)
{
	va_list ap;
	int n = 0;

	if (ps->err && ps->errlen) {
		if (ps->lineno)
			n = snprintf(ps->err, ps->errlen, "line %u: ", ps->lineno);
		if (n < 0 || (size_t)n >= ps->errlen)
			n = 0;
		va_start(ap, fmt);
		vsnprintf(ps->err + n, ps->errlen - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return code;
}

/*
 * The bytes a line is checked for, found in the one pass that finds its end
 * (a memchr for each of them cost more than the rest of the parse: 16 short
 * lines a record, 10,000 records a refresh).
 */
enum { LC_CR = 1, LC_TAB = 2, LC_HASH = 4, LC_QUOTE = 8 };
static const unsigned char line_class[256] = {
	['\r'] = LC_CR, ['\t'] = LC_TAB, ['#'] = LC_HASH, ['"'] = LC_QUOTE, ['\''] = LC_QUOTE,
};

/* Advance to the next line; false at the end of the text. */
static bool next_line(struct parser *ps)
{
	const char *p = ps->line ? ps->line + ps->len + 1 : ps->text;
	const char *q;
	unsigned f = 0;

	if (p >= ps->end)
		return false;
	for (q = p; q < ps->end && *q != '\n'; q++)
		f |= line_class[(unsigned char)*q];
	ps->line = p;
	ps->len = (size_t)(q - p);
	ps->flags = f;
	ps->lineno++;
	return true;
}

enum field {
	F_FORMAT, F_CLUSTER, F_HOSTNAME, F_ADDR, F_IPOIB, F_SLOTS, F_ROLE, F_VERSION,
	F_BOOT_ID, F_UPDATED, F_FORMED, F_HOST_KEYS, F_USER_KEYS, F_HMAC, F_FABRIC, F_PKEY, F_PGROUP,
	F_STATE, F_REASON, F_READY_MS, F_USERS, F_COUNT
};

static const char *const field_names[F_COUNT] = {
	"format", "cluster", "hostname", "addr", "ipoib", "slots", "role", "version",
	"boot_id", "updated", "formed", "host_keys", "user_keys", "hmac", "fabric", "pkey", "placement_group",
	"state", "reason", "ready_ms", "users",
};

static const unsigned char field_lens[F_COUNT] = { 6, 7, 8, 4, 5, 5, 4, 7, 7, 7, 6, 9, 9, 4, 6, 4, 15, 5, 6, 8, 5 };

/* n bytes of s: a decimal number up to max, without leading zeros.  0, or -EINVAL. */
static int parse_u64(const char *s, size_t n, uint64_t max, uint64_t *ret)
{
	char buf[24];
	unsigned long long v;

	if (n == 0 || n > 20 || (n > 1 && s[0] == '0'))
		return -EINVAL;
	memcpy(buf, s, n);
	buf[n] = '\0';
	if (!num_ull(buf, 10, max, &v))
		return -EINVAL;
	*ret = v;
	return 0;
}

/* What record_parse has read so far. */
struct rec {
	struct peer p;
	bool seen[F_COUNT];
	const char *cluster;            /* the cluster the record must name; NULL: any */
	const char *hmac_line, *mac;    /* the hmac field's line and its value */
	int list;                       /* F_HOST_KEYS / F_USER_KEYS while inside that list, else -1 */
};

/*
 * A record of a newer format is told before any other line is read: every
 * format keeps "format: N" as its first field, and the lines after it may
 * mean what this agent cannot know (docs/formats.md).  Nothing of it is
 * kept; the writer's version, when a line says it in a shape this agent
 * reads, goes into the message, which the caller escapes.
 */
static int check_newer(struct parser *ps)
{
	struct parser scan = *ps;
	const char *ver = "";
	size_t verlen = 0;
	uint64_t u = 0;

	while (next_line(&scan) && (scan.len == 0 || scan.line[0] == '#'))
		;
	/* not first, or not newer: the field-by-field read judges it */
	if (!scan.line || scan.len <= 8 || memcmp(scan.line, "format: ", 8) != 0 ||
	    parse_u64(scan.line + 8, scan.len - 8, UINT32_MAX, &u) < 0 || u <= RECORD_FORMAT_READ)
		return 0;
	while (next_line(&scan))
		if (scan.len > 9 && memcmp(scan.line, "version: ", 9) == 0 &&
		    token_valid(scan.line + 9, scan.len - 9, 64, ".+~-_")) {
			ver = scan.line + 9;
			verlen = scan.len - 9;
			break;
		}
	return perr(ps, -EPROTONOSUPPORT, "format %" PRIu64 "%s%.*s%s is newer than hpcinit %s reads "
		    "(formats 1 to %d)", u, verlen ? " (written by hpcinit " : "", (int)verlen, ver,
		    verlen ? ")" : "", PACKAGE_VERSION, RECORD_FORMAT_READ);
}

/*
 * The whole text before its lines: bounded, no NUL, not of a newer format,
 * and ending with the marker "...\n" (anything else at the end means the
 * file was cut short: a crashed writer without atomic rename, a full disk).
 */
static int check_frame(struct parser *ps, const char *text, size_t len)
{
	if (len > RECORD_MAX_BYTES)
		return perr(ps, -EFBIG, "larger than %d bytes", RECORD_MAX_BYTES);
	if (memchr(text, '\0', len))
		return perr(ps, -EBADMSG, "contains a NUL byte");
	if (check_newer(ps) < 0)
		return -EPROTONOSUPPORT;
	if (len < sizeof(RECORD_END) - 1 ||
	    memcmp(text + len - (sizeof(RECORD_END) - 1), RECORD_END, sizeof(RECORD_END) - 1) != 0 ||
	    (len > sizeof(RECORD_END) - 1 && text[len - sizeof(RECORD_END)] != '\n'))
		return perr(ps, -ENODATA, "truncated: the end marker \"...\" is missing");
	return 0;
}

/* An indented line: an item of the host_keys list, or the two lines of a user_keys item. */
static int parse_item(struct parser *ps, struct rec *rc, const char *l, size_t n)
{
	struct peer *p = &rc->p;
	struct user_key *uk;

	if (rc->list == F_HOST_KEYS && n > 4 && memcmp(l, "  - ", 4) == 0) {
		if (key_span(l + 4, n - 4) != n - 4)
			return perr(ps, -EBADMSG, "host key is not \"type base64\"");
		if (p->host_keys.n >= RECORD_MAX_KEYS)
			return perr(ps, -EBADMSG, "more than %d host keys", RECORD_MAX_KEYS);
		strlist_push_take(&p->host_keys, xstrndup(l + 4, n - 4));
		return 0;
	}
	if (rc->list != F_USER_KEYS || n <= 10 || memcmp(l, "  - user: ", 10) != 0)
		return perr(ps, -EBADMSG, "unexpected indented line");
	if (!name_user_validn(l + 10, n - 10))
		return perr(ps, -EBADMSG, "invalid user name");
	if (p->n_user_keys >= RECORD_MAX_KEYS)
		return perr(ps, -EBADMSG, "more than %d user keys", RECORD_MAX_KEYS);
	if (!next_line(ps) || ps->len <= 9 || memcmp(ps->line, "    key: ", 9) != 0)
		return perr(ps, -EBADMSG, "user_keys item without \"key:\"");
	p->user_keys = xrealloc(p->user_keys, (p->n_user_keys + 1) * sizeof(*p->user_keys));
	uk = &p->user_keys[p->n_user_keys];
	uk->key = user_key_clean(ps->line + 9, ps->len - 9);
	if (!uk->key || (ps->flags & LC_HASH)) {
		free(uk->key);
		return perr(ps, -EBADMSG, "user key is not \"type base64 [comment]\"");
	}
	uk->user = xstrndup(l + 10, n - 10);
	p->n_user_keys++;
	return 0;
}

/* A token field's value (version, boot_id, fabric, placement_group) into *dst. */
static int parse_token(struct parser *ps, const char *v, size_t vl, size_t max, const char *extra,
		       const char *what, char **dst)
{
	if (!token_valid(v, vl, max, extra))
		return perr(ps, -EBADMSG, "%s", what);
	*dst = xstrndup(v, vl);
	return 0;
}

/* true or false into *dst (the word is "head"/"compute" for the role). */
static int parse_word(struct parser *ps, const char *v, size_t vl, const char *yes, const char *no,
		      const char *what, bool *dst)
{
	if (vl == strlen(yes) && memcmp(v, yes, vl) == 0)
		*dst = true;
	else if (!(vl == strlen(no) && memcmp(v, no, vl) == 0))
		return perr(ps, -EBADMSG, "%s", what);
	return 0;
}

/* An IP address field (addr, ipoib) into *dst. */
static int parse_ip(struct parser *ps, enum field f, const char *v, size_t vl, char **dst)
{
	char *a = xstrndup(v, vl);

	if (vl > 45 || !name_ip_valid(a)) {
		free(a);
		return perr(ps, -EBADMSG, "%s: not an IP address", field_names[f]);
	}
	*dst = a;
	return 0;
}

/* One scalar field's value (not empty, not quoted), checked, into rc. */
static int parse_value(struct parser *ps, struct rec *rc, enum field f, const char *v, size_t vl)
{
	struct peer *p = &rc->p;
	uint64_t u;

	switch (f) {
	case F_FORMAT:
		/* a newer one not first is refused here too (check_newer found it not first) */
		if (parse_u64(v, vl, UINT32_MAX, &u) < 0 || u == 0)
			return perr(ps, -EBADMSG, "format: expected a number from 1 (this agent reads 1 to %d)",
				    RECORD_FORMAT_READ);
		if (u > RECORD_FORMAT_READ)
			return perr(ps, -EPROTONOSUPPORT, "format %" PRIu64 " is newer than hpcinit %s "
				    "reads (formats 1 to %d)", u, PACKAGE_VERSION, RECORD_FORMAT_READ);
		return 0;
	case F_CLUSTER:
		if (rc->cluster && (strlen(rc->cluster) != vl || memcmp(rc->cluster, v, vl) != 0))
			return perr(ps, -EXDEV, "belongs to cluster \"%.*s\", not \"%s\"",
				    (int)(vl > 63 ? 63 : vl), v, rc->cluster);
		return 0;
	case F_HOSTNAME:
		p->hostname = xstrndup(v, vl);
		return record_hostname_valid(p->hostname) ? 0 : perr(ps, -EBADMSG, "invalid hostname");
	case F_ADDR:
		return parse_ip(ps, f, v, vl, &p->addr);
	case F_IPOIB:
		return parse_ip(ps, f, v, vl, &p->ipoib_addr);
	case F_SLOTS:
		if (parse_u64(v, vl, 1u << 20, &u) < 0 || u == 0)
			return perr(ps, -EBADMSG, "slots: expected 1..%u", 1u << 20);
		p->slots = (unsigned)u;
		return 0;
	case F_ROLE:
		return parse_word(ps, v, vl, "head", "compute", "role: expected compute or head", &p->head);
	case F_VERSION:
		return parse_token(ps, v, vl, 64, ".+~-_", "version: invalid", &p->version);
	case F_BOOT_ID:
		return parse_token(ps, v, vl, 64, "-", "boot_id: invalid", &p->boot_id);
	case F_UPDATED:
		if (parse_u64(v, vl, INT64_MAX, &u) < 0)
			return perr(ps, -EBADMSG, "updated: expected unix seconds");
		p->updated = (int64_t)u;
		return 0;
	case F_FORMED:
		return parse_word(ps, v, vl, "true", "false", "formed: expected true or false", &p->formed);
	case F_HMAC:
		if (vl != RECORD_HMAC_HEX || !hex_valid(v, vl))
			return perr(ps, -EBADMSG, "hmac: expected %d hex digits", RECORD_HMAC_HEX);
		rc->hmac_line = ps->line;
		rc->mac = v;
		return 0;
	case F_FABRIC:
		/* "dev=guid,dev=guid": device names and GUIDs, nothing a shell or path could use */
		return parse_token(ps, v, vl, 1024, "_.:=,-", "fabric: expected device=GUID,...", &p->fabric);
	case F_PKEY:
		if (vl < 3 || vl > 6 || v[0] != '0' || v[1] != 'x' || !hex_valid(v + 2, vl - 2))
			return perr(ps, -EBADMSG, "pkey: expected 0x and 1 to 4 hex digits");
		p->pkey = xstrndup(v, vl);
		return 0;
	case F_PGROUP:
		return parse_token(ps, v, vl, 64, "-", "placement_group: invalid", &p->placement_group);
	case F_STATE:
		for (int s = PEER_READY; s <= PEER_FAILED; s++)
			if (strlen(state_names[s]) == vl && memcmp(state_names[s], v, vl) == 0)
				p->state = (enum peer_state)s;
		return p->state ? 0 : perr(ps, -EBADMSG, "state: expected ready, degraded or failed");
	case F_REASON:
		return parse_token(ps, v, vl, 127, "._-", "reason: expected a finding's tag", &p->reason);
	case F_READY_MS:
		if (parse_u64(v, vl, INT64_MAX, &u) < 0)
			return perr(ps, -EBADMSG, "ready_ms: expected milliseconds");
		p->ready_ms = (int64_t)u;
		return 0;
	case F_USERS:
		if (!record_users_valid(v, vl))
			return perr(ps, -EBADMSG, "users: expected name=uid:gid,... in %d bytes", RECORD_USERS_MAX);
		p->users = xstrndup(v, vl);
		return 0;
	case F_HOST_KEYS:
	case F_USER_KEYS:
	case F_COUNT:
		break;
	}
	return 0;
}

/* A "key: value" line.  A key this agent does not know (a newer agent's) is skipped. */
static int parse_field(struct parser *ps, struct rec *rc, const char *l, size_t n)
{
	const char *colon = memchr(l, ':', n), *v;
	size_t kl, vl;
	int f;

	rc->list = -1;
	if (!colon || !token_valid(l, (size_t)(colon - l), 32, "_"))
		return perr(ps, -EBADMSG, "expected \"key: value\"");
	kl = (size_t)(colon - l);
	v = colon + 1;
	vl = n - kl - 1;
	if (vl > 0) {
		if (*v != ' ' || vl < 2 || v[1] == ' ' || v[vl - 1] == ' ')
			return perr(ps, -EBADMSG, "expected one space after \"%.*s:\"", (int)kl, l);
		v++;
		vl--;
	}
	for (f = 0; f < F_COUNT; f++)
		if (field_lens[f] == kl && memcmp(field_names[f], l, kl) == 0)
			break;
	if (f == F_COUNT)
		return 0;
	if (rc->seen[f])
		return perr(ps, -EBADMSG, "duplicate key %s", field_names[f]);
	rc->seen[f] = true;
	if (f == F_HOST_KEYS || f == F_USER_KEYS) {
		if (vl == 2 && memcmp(v, "[]", 2) == 0)
			return 0;
		if (vl != 0)
			return perr(ps, -EBADMSG, "%s: expected a list", field_names[f]);
		rc->list = f;
		return 0;
	}
	/* the key before the colon is a token: a '#' or a quote on the line is in the value */
	if (vl == 0 || (ps->flags & (LC_HASH | LC_QUOTE)))
		return perr(ps, -EBADMSG, "%s: empty or quoted value", field_names[f]);
	return parse_value(ps, rc, (enum field)f, v, vl);
}

/* Every line up to the end marker, and nothing after it. */
static int parse_lines(struct parser *ps, struct rec *rc)
{
	bool ended = false;
	int r;

	while (next_line(ps)) {
		const char *l = ps->line;
		size_t n = ps->len;

		if (ended)
			return perr(ps, -EBADMSG, "text after the end marker");
		if (n == 3 && memcmp(l, "...", 3) == 0) {
			ended = true;
			continue;
		}
		if (n == 0 || l[0] == '#')
			continue;
		if (ps->flags & (LC_CR | LC_TAB))
			return perr(ps, -EBADMSG, "tab or carriage return");
		if (rc->hmac_line)
			return perr(ps, -EBADMSG, "hmac must be the last field");
		r = l[0] == ' ' ? parse_item(ps, rc, l, n) : parse_field(ps, rc, l, n);
		if (r < 0)
			return r;
	}
	return 0;
}

/* The fields a record must have, and its HMAC when there is a key. */
static int check_whole(struct parser *ps, const struct rec *rc, const void *key, size_t keylen)
{
	static const enum field required[] = {
		F_FORMAT, F_CLUSTER, F_HOSTNAME, F_ADDR, F_SLOTS, F_ROLE, F_UPDATED,
	};
	char want[RECORD_HMAC_HEX + 1];

	ps->lineno = 0;
	for (size_t i = 0; i < sizeof(required) / sizeof(required[0]); i++)
		if (!rc->seen[required[i]])
			return perr(ps, -EBADMSG, "field %s is missing", field_names[required[i]]);
	if (!key)
		return 0;
	if (!rc->mac)
		return perr(ps, -ENOKEY, "no hmac, and cluster.secret_file is set");
	if (record_hmac(key, keylen, ps->text, (size_t)(rc->hmac_line - ps->text), want) < 0)
		return perr(ps, -EIO, "cannot compute the HMAC");
	if (!ct_equal(want, rc->mac, RECORD_HMAC_HEX))
		return perr(ps, -EKEYREJECTED,
			    "HMAC does not match (tampered, or written with another cluster secret)");
	return 0;
}

int record_parse(const char *text, size_t len, const char *cluster,
		 const void *key, size_t keylen, struct peer *ret, char *err, size_t errlen)
{
	struct parser ps = { .text = text, .end = text + len, .err = err, .errlen = errlen };
	struct rec rc = { .cluster = cluster, .list = -1 };
	int r;

	if (err && errlen)
		err[0] = '\0';
	r = check_frame(&ps, text, len);
	if (r == 0)
		r = parse_lines(&ps, &rc);
	if (r == 0)
		r = check_whole(&ps, &rc, key, keylen);
	if (r < 0) {
		peer_clear(&rc.p);
		return r;
	}
	*ret = rc.p;
	return 0;
}
