/* SPDX-License-Identifier: MIT */
/*
 * The records' HMAC-SHA256 (record_hmac, declared in record.h), with a keyed
 * context kept per thread: the shared directory's records are checked on
 * several threads at once (lib/rendezvous/dir.c).
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/core_names.h>

#include "crypto.h"
#include "record.h"
#include "strbuf.h"

static void hex(char *out, const unsigned char *in, size_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[in[i] >> 4];
		out[2 * i + 1] = digits[in[i] & 15];
	}
	out[2 * n] = '\0';
}

/*
 * HMAC-SHA256 through OpenSSL's EVP_MAC (libcrypto loaded on the first
 * record signed or checked: crypto.h).  The keyed context is kept: for the
 * next record with the same key it is re-initialised without a key, which
 * restarts from the key's already-hashed pads, so 10,000 records neither
 * fetch the algorithm nor hash the key again.  One per thread: the shared
 * directory's records are parsed on several (lib/rendezvous/dir.c), and a
 * worker thread frees its own with record_thread_end.
 */
static __thread struct {
	unsigned char *key;
	size_t keylen;
	EVP_MAC *mac;
	EVP_MAC_CTX *ctx;
} mac_cache;

static void mac_forget(void)
{
	if (mac_cache.key) {
		explicit_bzero(mac_cache.key, mac_cache.keylen);
		free(mac_cache.key);
		mac_cache.key = NULL;
	}
}

void record_thread_end(void)
{
	mac_forget();
	if (mac_cache.ctx || mac_cache.mac) {
		crypto()->EVP_MAC_CTX_free(mac_cache.ctx);
		crypto()->EVP_MAC_free(mac_cache.mac);
	}
	mac_cache.ctx = NULL;
	mac_cache.mac = NULL;
}

static int mac_prepare(const void *key, size_t keylen)
{
	const struct crypto_api *C = crypto();
	char digest[] = "SHA256";
	OSSL_PARAM params[] = {
		C->OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST, digest, 0),
		C->OSSL_PARAM_construct_end(),
	};

	if (mac_cache.key && mac_cache.keylen == keylen && memcmp(mac_cache.key, key, keylen) == 0)
		return C->EVP_MAC_init(mac_cache.ctx, NULL, 0, NULL) ? 0 : -EIO;
	if (!mac_cache.ctx) {
		mac_cache.mac = C->EVP_MAC_fetch(NULL, OSSL_MAC_NAME_HMAC, NULL);
		if (!mac_cache.mac)
			return -EIO;
		mac_cache.ctx = C->EVP_MAC_CTX_new(mac_cache.mac);
		if (!mac_cache.ctx)
			return -ENOMEM;
	}
	mac_forget();
	if (!C->EVP_MAC_init(mac_cache.ctx, key, keylen, params))
		return -EIO;
	mac_cache.key = xmalloc(keylen ? keylen : 1);
	memcpy(mac_cache.key, key, keylen);
	mac_cache.keylen = keylen;
	return 0;
}

int record_hmac(const void *key, size_t keylen, const void *data, size_t len,
		char out[RECORD_HMAC_HEX + 1])
{
	unsigned char md[32];
	size_t n = 0;

	if (mac_prepare(key, keylen) < 0 ||
	    !crypto()->EVP_MAC_update(mac_cache.ctx, data, len) ||
	    !crypto()->EVP_MAC_final(mac_cache.ctx, md, &n, sizeof(md)) || n != sizeof(md)) {
		/* forget a half-made cache so the next call starts over */
		mac_forget();
		return -EIO;
	}
	hex(out, md, sizeof(md));
	return 0;
}

