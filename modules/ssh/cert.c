/* SPDX-License-Identifier: MIT */
/*
 * Reading an OpenSSH certificate (PROTOCOL.certkeys) far enough to judge
 * it: the certified key, type, key id, principals, validity and the CA key
 * that signed it.  The signature itself is checked by ssh and sshd, which
 * hold the CA key in known_hosts; see docs/ssh.md "Host certificates".
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base64.h"
#include "sshkey.h"
#include "ssh.h"

struct rd {
	const unsigned char *p;
	size_t n;
	bool bad;
};

static uint64_t rd_u(struct rd *r, size_t len)
{
	uint64_t v = 0;

	if (r->bad || r->n < len) {
		r->bad = true;
		return 0;
	}
	for (size_t i = 0; i < len; i++)
		v = v << 8 | r->p[i];
	r->p += len;
	r->n -= len;
	return v;
}

/* One SSH string: its bytes stay in the blob. */
static const unsigned char *rd_str(struct rd *r, size_t *len)
{
	const unsigned char *s;
	uint64_t l = rd_u(r, 4);

	if (r->bad || l > r->n) {
		r->bad = true;
		*len = 0;
		return NULL;
	}
	s = r->p;
	*len = (size_t)l;
	r->p += l;
	r->n -= (size_t)l;
	return s;
}

static char *b64(const unsigned char *p, size_t n)
{
	return b64_encode(p, n);
}

static unsigned char *unb64(const char *s, size_t sl, size_t *ret_len)
{
	if (sl == 0 || sl > 64 * 1024)
		return NULL;
	return b64_decode(s, sl, ret_len);
}

void sshcert_free(struct sshcert *c)
{
	free(c->type);
	free(c->key);
	free(c->key_id);
	free(c->ca_key);
	strlist_free(&c->principals);
	memset(c, 0, sizeof(*c));
}

/* "type base64" of an SSH public key blob (its first string names the type). */
static char *blob_key(const unsigned char *p, size_t n)
{
	struct rd r = { p, n, false };
	size_t tl;
	const unsigned char *t = rd_str(&r, &tl);
	char *enc, *ret;

	if (r.bad || tl == 0 || tl > 64)
		return NULL;
	enc = b64(p, n);
	ret = xasprintf("%.*s %s", (int)tl, (const char *)t, enc);
	free(enc);
	return ret;
}

int sshcert_parse(const char *line, struct sshcert *ret)
{
	char *canon = sshkey_canonical(line);
	const char *sp;
	unsigned char *blob = NULL, *plain = NULL;
	size_t blen = 0, tl, l, nfields, plen = 0;
	struct rd r;
	const unsigned char *t, *s;
	const char *suffix = "-cert-v01@openssh.com";
	int err = -EBADMSG;

	memset(ret, 0, sizeof(*ret));
	if (!canon)
		return -EBADMSG;
	sp = strchr(canon, ' ');
	tl = (size_t)(sp - canon);
	if (tl <= strlen(suffix) || strncmp(canon + tl - strlen(suffix), suffix, strlen(suffix)) != 0)
		goto out;
	blob = unb64(sp + 1, strlen(sp + 1), &blen);
	if (!blob)
		goto out;
	r = (struct rd){ blob, blen, false };
	t = rd_str(&r, &l);
	if (r.bad || l != tl || memcmp(t, canon, tl) != 0)
		goto out;
	ret->type = xstrndup(canon, tl);
	(void)rd_str(&r, &l);   /* nonce */
	/* The certified key: the plain type's fields, rebuilt as a plain key blob. */
	{
		size_t pt_len = tl - strlen(suffix);
		struct strbuf kb = STRBUF_INIT;
		const unsigned char *fstart = r.p;
		unsigned char hdr[4];

		if (pt_len == strlen("ssh-ed25519") && strncmp(canon, "ssh-ed25519", pt_len) == 0)
			nfields = 1;
		else if (strncmp(canon, "ecdsa-sha2-", 11) == 0 ||
			 (pt_len == 7 && strncmp(canon, "ssh-rsa", 7) == 0))
			nfields = 2;
		else
			goto out;
		for (size_t i = 0; i < nfields; i++)
			(void)rd_str(&r, &l);
		if (r.bad)
			goto out;
		hdr[0] = (unsigned char)(pt_len >> 24);
		hdr[1] = (unsigned char)(pt_len >> 16);
		hdr[2] = (unsigned char)(pt_len >> 8);
		hdr[3] = (unsigned char)pt_len;
		sb_appendn(&kb, (const char *)hdr, 4);
		sb_appendn(&kb, canon, pt_len);
		sb_appendn(&kb, (const char *)fstart, (size_t)(r.p - fstart));
		plen = kb.len;
		plain = (unsigned char *)sb_steal(&kb);
		ret->key = blob_key(plain, plen);
	}
	(void)rd_u(&r, 8);      /* serial */
	ret->cert_type = (uint32_t)rd_u(&r, 4);
	s = rd_str(&r, &l);
	if (r.bad)
		goto out;
	ret->key_id = xstrndup((const char *)s, l);
	s = rd_str(&r, &l);
	if (r.bad)
		goto out;
	{
		struct rd pr = { s, l, false };

		while (pr.n && !pr.bad) {
			size_t nl;
			const unsigned char *ns = rd_str(&pr, &nl);

			if (pr.bad)
				goto out;
			strlist_push_take(&ret->principals, xstrndup((const char *)ns, nl));
		}
	}
	ret->valid_after = rd_u(&r, 8);
	ret->valid_before = rd_u(&r, 8);
	(void)rd_str(&r, &l);   /* critical options */
	(void)rd_str(&r, &l);   /* extensions */
	(void)rd_str(&r, &l);   /* reserved */
	s = rd_str(&r, &l);     /* signature key */
	(void)rd_str(&r, &tl);  /* signature */
	if (r.bad || !ret->key)
		goto out;
	ret->ca_key = blob_key(s, l);
	if (ret->ca_key)
		err = 0;
out:
	if (err < 0)
		sshcert_free(ret);
	free(plain);
	free(blob);
	free(canon);
	return err;
}
