/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fnmatch.h>
#include <grp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/core_names.h>

#include "base64.h"
#include "crypto.h"
#include "fsutil.h"
#include "hpcinit.h"
#include "log.h"
#include "proc.h"
#include "sha256.h"
#include "sshkey.h"
#include "number.h"

#define HELPER "hpcinit-ssh"            /* libexec/hpcinit-ssh.c, found by proc_helper_path */
#define HELPER_TIMEOUT_MS 60000         /* an RSA key pair takes well under a second */

/* Character classes of a key: bit 1 a type's [a-z0-9-@.], bit 2 base64's [A-Za-z0-9+/=]. */
#define KC_TYPE 1
#define KC_B64 2
static unsigned char key_class[256];
static bool key_class_ready;

static void key_class_init(void)
{
	for (int ch = 0; ch < 256; ch++) {
		unsigned char k = 0;

		if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9'))
			k = KC_TYPE | KC_B64;
		else if (ch >= 'A' && ch <= 'Z')
			k = KC_B64;
		else if (ch == '-' || ch == '@' || ch == '.')
			k = KC_TYPE;
		else if (ch == '+' || ch == '/' || ch == '=')
			k = KC_B64;
		key_class[ch] = k;
	}
	key_class_ready = true;
}

/*
 * One pass over each word, a table lookup a character: this runs for every
 * host and user key of every peer (20,000 a refresh of 10,000 nodes).  A
 * word ends at NUL, blank or newline (the base64 also at '\r'); any other
 * character outside its class refuses the key.
 */
char *sshkey_canonical(const char *line)
{
	const unsigned char *p = (const unsigned char *)line, *t, *b;
	size_t tl, bl;

	if (!key_class_ready)
		key_class_init();
	while (*p == ' ' || *p == '\t')
		p++;
	t = p;
	while (key_class[*p] & KC_TYPE)
		p++;
	if (*p && *p != ' ' && *p != '\t' && *p != '\n')
		return NULL;
	tl = (size_t)(p - t);
	while (*p == ' ' || *p == '\t')
		p++;
	b = p;
	while (key_class[*p] & KC_B64)
		p++;
	if (*p && *p != ' ' && *p != '\t' && *p != '\n' && *p != '\r')
		return NULL;
	bl = (size_t)(p - b);
	if (tl < 7 || bl < 16 || !(memcmp(t, "ssh-", 4) == 0 || memcmp(t, "ecdsa-", 6) == 0 ||
				   memcmp(t, "sk-", 3) == 0))
		return NULL;

	char *ret = xmalloc(tl + 1 + bl + 1);

	memcpy(ret, t, tl);
	ret[tl] = ' ';
	memcpy(ret + tl + 1, b, bl);
	ret[tl + 1 + bl] = '\0';
	return ret;
}

bool sshkey_is_cert(const char *key)
{
	static const char sfx[] = "-cert-v01@openssh.com";
	size_t tl = strcspn(key, " \t");

	return tl > sizeof(sfx) - 1 && strncmp(key + tl - (sizeof(sfx) - 1), sfx, sizeof(sfx) - 1) == 0;
}

int sshkey_host_pubkeys(const struct ctx *c, struct strlist *ret)
{
	char *dir = ctx_path(c, "/etc/ssh");
	DIR *d = opendir(dir);
	struct dirent *de;
	struct strlist names = { 0 };

	free(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d)))
		if (fnmatch("ssh_host_*_key.pub", de->d_name, 0) == 0)
			strlist_push(&names, de->d_name);
	closedir(d);
	/* Stable order: sort names. */
	for (size_t i = 1; i < names.n; i++)
		for (size_t j = i; j > 0 && strcmp(names.v[j - 1], names.v[j]) > 0; j--) {
			char *t = names.v[j];

			names.v[j] = names.v[j - 1];
			names.v[j - 1] = t;
		}
	for (size_t i = 0; i < names.n; i++) {
		char *path = xasprintf("/etc/ssh/%s", names.v[i]);
		char *text = NULL, *canon;

		/* A certificate in a key's .pub file is not this node's host key. */
		if (fs_read(c, path, &text, NULL) == 0 && (canon = sshkey_canonical(text))) {
			if (!sshkey_is_cert(canon))
				strlist_push(ret, canon);
			free(canon);
		}
		free(text);
		free(path);
	}
	strlist_free(&names);
	return 0;
}

int sshkey_check_path(const struct ctx *c, struct report *r, const char *path,
		      bool want_dir, uid_t uid)
{
	char *hp = ctx_path(c, path);
	const char *what = want_dir ? "directory" : "file";
	struct stat st;
	int ret = 0;

	if (lstat(hp, &st) < 0) {
		ret = errno == ENOENT ? 0 : -errno;
		if (ret < 0)
			report_detail(r, "%s: %s", path, strerror(-ret));
	} else if (S_ISLNK(st.st_mode)) {
		report_detail(r, "%s: is a symbolic link; refusing to follow it "
			      "(replace it with a real %s owned by the user)", path, what);
		ret = -ELOOP;
	} else if (want_dir ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
		report_detail(r, "%s: is not a %s; move it away", path, what);
		ret = -EEXIST;
	} else if (st.st_uid != uid) {
		report_detail(r, "%s: owned by uid %u, not by its user (uid %u); sshd's StrictModes "
			      "rejects it: chown it to the user after checking its content",
			      path, (unsigned)st.st_uid, (unsigned)uid);
		ret = -EPERM;
	} else if (st.st_mode & 022) {
		report_detail(r, "%s: writable by group or others (mode %04o); sshd's StrictModes "
			      "rejects it and its content cannot be trusted: check it, then chmod go-w",
			      path, (unsigned)(st.st_mode & 07777));
		ret = -EPERM;
	}
	free(hp);
	return ret;
}

/* Root's supplementary groups while acting as a user, put back by sshkey_fsid_restore. */
static gid_t *saved_groups;
static int n_saved_groups = -1;

bool sshkey_fsid_user(const struct ctx *c, const char *home, uid_t uid, gid_t gid)
{
	char *hh, *hs;
	struct stat st;
	bool owns;
	int n;

	if (geteuid() != 0 || uid == 0)
		return false;
	hh = ctx_path(c, home);
	hs = xasprintf("%s/.ssh", hh);
	owns = (lstat(hh, &st) == 0 && st.st_uid == uid) || (lstat(hs, &st) == 0 && st.st_uid == uid);
	free(hh);
	free(hs);
	if (!owns)
		return false;
	/*
	 * Groups first: after setfsuid the capability to pick any gid is gone.
	 * The permission checks use the supplementary groups too, so root's
	 * (disk, adm, shadow, whatever the host gave it) are dropped for the
	 * user's own primary group only: nothing the user could not reach.
	 */
	n = getgroups(0, NULL);
	if (n >= 0) {
		saved_groups = xmalloc(((size_t)n + 1) * sizeof(*saved_groups));
		n_saved_groups = getgroups(n, saved_groups);
	}
	if (n_saved_groups < 0 || setgroups(1, &gid) != 0) {
		/* Never here as root outside a user namespace that denies setgroups. */
		log_warn("acting as uid %u: cannot drop root's supplementary groups: %s",
			 (unsigned)uid, strerror(errno));
		free(saved_groups);
		saved_groups = NULL;
		n_saved_groups = -1;
	}
	setfsgid(gid);
	setfsuid(uid);
	return true;
}

void sshkey_fsid_restore(bool switched)
{
	if (!switched)
		return;
	setfsuid(0);
	setfsgid(0);
	if (n_saved_groups >= 0 && setgroups((size_t)n_saved_groups, saved_groups) != 0)
		log_warn("cannot restore root's supplementary groups: %s", strerror(errno));
	free(saved_groups);
	saved_groups = NULL;
	n_saved_groups = -1;
}

/* ---- key blobs: the SSH wire format (base64: common/text/base64.c) ---- */

/* One SSH "string" (uint32 length, bytes) at *p; false when it runs past end. */
static bool wire_string(const unsigned char **p, const unsigned char *end,
			const unsigned char **ret, size_t *ret_len)
{
	uint32_t l;

	if (end - *p < 4)
		return false;
	l = (uint32_t)(*p)[0] << 24 | (uint32_t)(*p)[1] << 16 | (uint32_t)(*p)[2] << 8 | (*p)[3];
	if ((size_t)(end - *p - 4) < l)
		return false;
	*ret = *p + 4;
	*ret_len = l;
	*p += 4 + l;
	return true;
}

/*
 * A public key blob: its first string is the key type (type, when given,
 * must match it) and, but for certificates, it is strings to the end.
 */
static bool blob_ok(const unsigned char *b, size_t n, const char *type, size_t tl,
		    const unsigned char **ret_type, size_t *ret_tl)
{
	const unsigned char *p = b, *end = b + n, *s;
	size_t sl;

	if (!wire_string(&p, end, &s, &sl) || sl == 0 || sl > 64)
		return false;
	if (type && !(sl == tl && memcmp(s, type, tl) == 0) &&
	    !(tl > 9 && strncmp(type, "rsa-sha2-", 9) == 0 && sl == 7 && memcmp(s, "ssh-rsa", 7) == 0))
		return false;
	if (ret_type) {
		*ret_type = s;
		*ret_tl = sl;
	}
	if (memmem(s, sl, "-cert-", 6))
		return true;
	while (p < end) {
		const unsigned char *x;

		if (!wire_string(&p, end, &x, &sl))
			return false;
	}
	return true;
}

char *sshkey_fingerprint(const char *canon)
{
	const char *sp = strchr(canon, ' ');
	unsigned char md[SHA256_LEN], *blob;
	size_t len = 0, tl;
	char *ret = NULL;

	if (!sp)
		return xstrdup(canon);
	tl = (size_t)(sp - canon);
	blob = b64_decode_lines(sp + 1, strlen(sp + 1), &len);
	if (blob && blob_ok(blob, len, canon, tl, NULL, NULL)) {
		char *b64;

		sha256(blob, len, md);      /* sha256.c: no libcrypto to list or compare keys */
		b64 = b64_encode(md, sizeof(md));
		b64[strcspn(b64, "=")] = '\0';      /* ssh-keygen -l prints it unpadded */
		ret = xasprintf("%.*s SHA256:%s", (int)tl, canon, b64);
		free(b64);
	}
	free(blob);
	return ret ? ret : xasprintf("%.*s (unparsable)", (int)tl, canon);
}

/* ---- the helper program ---- */

/*
 * Run the helper with args (NULL-terminated), stdin in (may be NULL).
 * 0 and its output in *res; else -errno and a one-line reason in err.
 */
static int helper_run(const char *const *args, const char *in, unsigned timeout_ms,
		      struct proc_result *res, char *err, size_t errlen)
{
	char *path = proc_helper_path(HELPER);
	size_t n = 0;
	const char **argv;
	int r;

	while (args[n])
		n++;
	argv = xcalloc(n + 2, sizeof(*argv));
	argv[0] = path;
	memcpy(argv + 1, args, n * sizeof(*argv));
	r = proc_run(argv, NULL, in, timeout_ms, res);
	free(argv);
	if (r < 0) {
		snprintf(err, errlen, "cannot run %s: %s", path, strerror(-r));
	} else if (res->timed_out) {
		snprintf(err, errlen, "%s timed out after %u ms", path, timeout_ms);
		r = -ETIMEDOUT;
	} else if (res->exit_code != 0) {
		const char *m = res->err_len ? res->err : "no message";

		snprintf(err, errlen, "%.*s", (int)strcspn(m, "\n"), m);
		r = -EIO;
	}
	free(path);
	return r;
}

static void result_wipe(struct proc_result *res)
{
	if (res->out)
		explicit_bzero(res->out, res->out_len);
	proc_result_free(res);
}

int sshkey_generate(enum key_type type, char **ret_pub, char **ret_priv, char *err, size_t errlen)
{
	const char *args[] = { "keygen", type == KEY_RSA ? "rsa" : type == KEY_ECDSA ? "ecdsa" :
			       "ed25519", NULL };
	struct proc_result res;
	char buf[256];
	const char *nl;
	char *pub;
	int r;

	if (!err) {
		err = buf;
		errlen = sizeof(buf);
	}
	r = helper_run(args, NULL, HELPER_TIMEOUT_MS, &res, err, errlen);
	if (r < 0) {
		result_wipe(&res);
		return r;
	}
	nl = strchr(res.out, '\n');
	pub = nl ? sshkey_canonical(res.out) : NULL;
	if (!pub || !strstr(nl, "PRIVATE KEY-----")) {
		snprintf(err, errlen, HELPER " keygen: unexpected output");
		free(pub);
		result_wipe(&res);
		return -EIO;
	}
	*ret_pub = pub;
	*ret_priv = xstrdup(nl + 1);
	result_wipe(&res);
	return 0;
}

/* ---- PEM private keys (libssh writes RSA and ECDSA keys so), by OpenSSL ---- */

struct blob {
	unsigned char *p;
	size_t n;
};

/* Append an SSH "string": a uint32 length, then the bytes. */
static void blob_string(struct blob *b, const void *data, size_t n)
{
	b->p = xrealloc(b->p, b->n + 4 + n);
	b->p[b->n] = (unsigned char)(n >> 24);
	b->p[b->n + 1] = (unsigned char)(n >> 16);
	b->p[b->n + 2] = (unsigned char)(n >> 8);
	b->p[b->n + 3] = (unsigned char)n;
	if (n)
		memcpy(b->p + b->n + 4, data, n);
	b->n += 4 + n;
}

/* An SSH "mpint" of a key parameter: big-endian, a leading zero when the top bit is set. */
static bool blob_mpint(struct blob *b, const EVP_PKEY *pk, const char *param)
{
	const struct crypto_api *C = crypto();
	BIGNUM *bn = NULL;
	unsigned char *buf;
	size_t l;

	if (C->EVP_PKEY_get_bn_param(pk, param, &bn) != 1)
		return false;
	l = ((size_t)C->BN_num_bits(bn) + 7) / 8;      /* BN_num_bytes, a macro */
	buf = xmalloc(l + 1);
	buf[0] = 0;
	C->BN_bn2bin(bn, buf + 1);
	if (l && (buf[1] & 0x80))
		blob_string(b, buf, l + 1);
	else
		blob_string(b, buf + 1, l);
	free(buf);
	C->BN_free(bn);
	return true;
}

/* Never prompt: an encrypted key is one hpcinit cannot use. */
static int no_passphrase(char *buf, int size, int rwflag, void *u)
{
	(void)buf;
	(void)size;
	(void)rwflag;
	(void)u;
	return -1;
}

/* The OpenSSH public key ("type base64") of an unencrypted PEM private key. */
static int pem_public(const char *text, size_t len, char **ret_pub)
{
	static const struct { const char *group, *ssh; } curves[] = {
		{ "prime256v1", "nistp256" }, { "secp384r1", "nistp384" }, { "secp521r1", "nistp521" },
	};
	const struct crypto_api *C = crypto();
	BIO *bio = C->BIO_new_mem_buf(text, (int)len);
	EVP_PKEY *pk = bio ? C->PEM_read_bio_PrivateKey(bio, NULL, no_passphrase, NULL) : NULL;
	struct blob b = { 0 };
	const char *type = NULL;
	bool ok = false;

	if (pk && C->EVP_PKEY_get_base_id(pk) == EVP_PKEY_RSA) {
		type = "ssh-rsa";
		blob_string(&b, type, strlen(type));
		ok = blob_mpint(&b, pk, OSSL_PKEY_PARAM_RSA_E) && blob_mpint(&b, pk, OSSL_PKEY_PARAM_RSA_N);
	} else if (pk && C->EVP_PKEY_get_base_id(pk) == EVP_PKEY_EC) {
		char group[64];
		unsigned char q[256];
		size_t ql = 0;

		if (C->EVP_PKEY_get_utf8_string_param(pk, OSSL_PKEY_PARAM_GROUP_NAME, group, sizeof(group),
						   NULL) == 1 &&
		    C->EVP_PKEY_get_octet_string_param(pk, OSSL_PKEY_PARAM_PUB_KEY, q, sizeof(q), &ql) == 1)
			for (size_t i = 0; i < sizeof(curves) / sizeof(curves[0]) && !ok; i++) {
				char name[32];

				if (strcmp(group, curves[i].group) != 0)
					continue;
				snprintf(name, sizeof(name), "ecdsa-sha2-%s", curves[i].ssh);
				blob_string(&b, name, strlen(name));
				blob_string(&b, curves[i].ssh, strlen(curves[i].ssh));
				blob_string(&b, q, ql);
				ok = true;
			}
	} else if (pk && C->EVP_PKEY_get_base_id(pk) == EVP_PKEY_ED25519) {
		unsigned char raw[32];
		size_t rl = sizeof(raw);

		type = "ssh-ed25519";
		blob_string(&b, type, strlen(type));
		if (C->EVP_PKEY_get_raw_public_key(pk, raw, &rl) == 1) {
			blob_string(&b, raw, rl);
			ok = true;
		}
	}
	if (ok) {
		const unsigned char *t;
		size_t tl;
		char *b64 = b64_encode(b.p, b.n);

		(void)blob_ok(b.p, b.n, NULL, 0, &t, &tl);
		*ret_pub = xasprintf("%.*s %s", (int)tl, (const char *)t, b64);
		free(b64);
	}
	free(b.p);
	C->EVP_PKEY_free(pk);
	C->BIO_free(bio);
	return ok ? 0 : -EINVAL;
}

int sshkey_public_of_private(const char *text, size_t len, char **ret_pub)
{
	static const char begin[] = "-----BEGIN OPENSSH PRIVATE KEY-----";
	static const char end[] = "-----END OPENSSH PRIVATE KEY-----";
	static const char magic[] = "openssh-key-v1";
	const char *b = memmem(text, len, begin, sizeof(begin) - 1), *e;
	const unsigned char *p, *stop, *cipher, *skip, *pub, *type;
	unsigned char *raw = NULL;
	size_t rl = 0, cl, sl, pl, tl;
	int r = -EINVAL;

	if (!b)
		return pem_public(text, len, ret_pub);
	b += sizeof(begin) - 1;
	e = memmem(b, len - (size_t)(b - text), end, sizeof(end) - 1);
	if (e)
		raw = b64_decode_lines(b, (size_t)(e - b), &rl);
	if (!raw || rl < sizeof(magic) || memcmp(raw, magic, sizeof(magic)) != 0)
		goto out;
	p = raw + sizeof(magic);
	stop = raw + rl;
	/* cipher, kdf, kdf options, number of keys, the first public key */
	if (!wire_string(&p, stop, &cipher, &cl) || !wire_string(&p, stop, &skip, &sl) ||
	    !wire_string(&p, stop, &skip, &sl) || stop - p < 4 || (p += 4, false) ||
	    !wire_string(&p, stop, &pub, &pl))
		goto out;
	if (!(cl == 4 && memcmp(cipher, "none", 4) == 0))
		goto out;               /* encrypted: a passphrase hpcinit does not have */
	if (!blob_ok(pub, pl, NULL, 0, &type, &tl))
		goto out;
	{
		char *b64 = b64_encode(pub, pl);

		*ret_pub = xasprintf("%.*s %s", (int)tl, (const char *)type, b64);
		free(b64);
	}
	r = 0;
out:
	if (raw)
		explicit_bzero(raw, rl);
	free(raw);
	return r;
}

int sshkey_fetch_host_keys(const char *const *hosts, size_t n, unsigned port,
			   unsigned timeout_ms, bool each_type, unsigned total_ms,
			   struct strlist *ret, int *errs, char *err, size_t errlen)
{
	struct strlist args = { 0 };
	struct proc_result res;
	char num[2][16];
	size_t at = 0;
	int r;

	if (n == 0)
		return 0;
	snprintf(num[0], sizeof(num[0]), "%u", port);
	snprintf(num[1], sizeof(num[1]), "%u", timeout_ms);
	strlist_push(&args, "hostkeys");
	if (each_type)
		strlist_push(&args, "--each-type");
	strlist_push(&args, num[0]);
	strlist_push(&args, num[1]);
	for (size_t i = 0; i < n; i++) {
		strlist_push(&args, hosts[i]);
		if (errs)
			errs[i] = -EIO;
	}
	r = helper_run((const char *const *)args.v, NULL, total_ms, &res, err, errlen);
	/*
	 * "HOST type base64" or "HOST error ERRNO", hosts in the order given.
	 * Read even after a timeout: the hosts done by then keep their keys.
	 */
	for (const char *line = res.out; line && *line;) {
		const char *nl = strchr(line, '\n'), *sp = strchr(line, ' ');
		size_t hl = sp ? (size_t)(sp - line) : 0;

		while (sp && at < n && !(strlen(hosts[at]) == hl && memcmp(hosts[at], line, hl) == 0))
			at++;
		if (sp && at < n && strncmp(sp + 1, "error ", 6) == 0) {
			long long e;
			const char *end;

			/* "error N": N an errno; anything else is the helper breaking its protocol */
			if (errs)
				errs[at] = num_ll_prefix(sp + 7, 1, 4095, &e, &end) && (*end == '\n' || !*end) ?
					-(int)e : -EPROTO;
		} else if (sp && at < n) {
			char *canon = sshkey_canonical(sp + 1);

			if (canon) {
				strlist_push(&ret[at], canon);
				if (errs)
					errs[at] = 0;
			}
			free(canon);
		}
		line = nl ? nl + 1 : NULL;
	}
	proc_result_free(&res);
	strlist_free(&args);
	return r;
}
