/* SPDX-License-Identifier: MIT */
/*
 * The records' HMAC-SHA256 (record_hmac, declared in record.h), with a keyed
 * context kept per thread: the shared directory's records are checked on
 * several threads at once (lib/rendezvous/dir.c).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "record.h"
#include "sha256.h"
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
 * HMAC-SHA256 by sha256.c: no libcrypto on the record path (sha256.h says
 * why).  The keyed context is kept: for the next record with the same key it
 * restarts from the key's already-hashed pads, so 10,000 records never hash
 * the key again.  One per thread: the shared directory's records are parsed
 * on several (lib/rendezvous/dir.c), and a worker thread wipes its own with
 * record_thread_end.
 */
static __thread struct {
	unsigned char *key;
	size_t keylen;
	struct hmac_sha256 ctx;
} mac_cache;

void record_thread_end(void)
{
	if (mac_cache.key) {
		explicit_bzero(mac_cache.key, mac_cache.keylen);
		free(mac_cache.key);
		mac_cache.key = NULL;
	}
	mac_cache.keylen = 0;
	hmac_sha256_wipe(&mac_cache.ctx);
}

static void mac_prepare(const void *key, size_t keylen)
{
	if (mac_cache.key && mac_cache.keylen == keylen && memcmp(mac_cache.key, key, keylen) == 0) {
		hmac_sha256_reset(&mac_cache.ctx);
		return;
	}
	record_thread_end();
	hmac_sha256_init(&mac_cache.ctx, key, keylen);
	mac_cache.key = xmalloc(keylen ? keylen : 1);
	memcpy(mac_cache.key, key, keylen);
	mac_cache.keylen = keylen;
}

int record_hmac(const void *key, size_t keylen, const void *data, size_t len,
		char out[RECORD_HMAC_HEX + 1])
{
	unsigned char md[SHA256_LEN];

	mac_prepare(key, keylen);
	hmac_sha256_update(&mac_cache.ctx, data, len);
	hmac_sha256_final(&mac_cache.ctx, md);
	hex(out, md, sizeof(md));
	explicit_bzero(md, sizeof(md));
	return 0;
}
