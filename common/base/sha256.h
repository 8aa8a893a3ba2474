/* SPDX-License-Identifier: MIT */
/*
 * SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), plain C, no library.
 * The records' HMAC (hmac.c) and the SSH key fingerprints (sshkey.c) use
 * it, so the record path and `hpcinit check` never load libcrypto: its
 * dlopen, relocations and provider tables cost each node 2-3 ms of CPU at
 * cold start (docs/performance.md).  libcrypto stays for what only it does
 * (PEM private keys: crypto.h).
 */
#ifndef HPCINIT_SHA256_H
#define HPCINIT_SHA256_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SHA256_LEN 32           /* bytes of a digest */
#define SHA256_BLOCK 64         /* bytes of a block */

struct sha256 {
	uint32_t h[8];
	uint64_t bytes;         /* message bytes so far */
	unsigned char buf[SHA256_BLOCK];
	size_t n;               /* bytes waiting in buf */
};

/* Streaming: init, any number of updates, final (which leaves s to init again). */
void sha256_init(struct sha256 *s);
void sha256_update(struct sha256 *s, const void *data, size_t len);
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN]);
/* One shot. */
void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN]);

/*
 * A keyed HMAC-SHA256: the states after the key's inner and outer pads are
 * kept, so hmac_sha256_reset starts the next message without hashing the
 * key again (one key, 10,000 records: hmac.c).  hmac_sha256_wipe clears the
 * key material (explicit_bzero) when the context is dropped.
 */
struct hmac_sha256 {
	struct sha256 ipad, opad;       /* after the key ^ 0x36.., 0x5c.. blocks */
	struct sha256 cur;              /* the message under way (inner hash) */
};

void hmac_sha256_init(struct hmac_sha256 *h, const void *key, size_t keylen);
void hmac_sha256_reset(struct hmac_sha256 *h);
void hmac_sha256_update(struct hmac_sha256 *h, const void *data, size_t len);
/* The MAC of the message so far; h is then reset, ready for the next one. */
void hmac_sha256_final(struct hmac_sha256 *h, unsigned char out[SHA256_LEN]);
void hmac_sha256_wipe(struct hmac_sha256 *h);
/* One shot. */
void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 unsigned char out[SHA256_LEN]);

/* Whether the x86 SHA extensions do the work (CPUID says, once). */
bool sha256_accelerated(void);
/* For the tests: the portable code from now on, or (false) the best this CPU has again. */
void sha256_force_portable(bool portable);

/* Whether a and b's n bytes are equal, in time that depends on n only (for MACs). */
bool ct_equal(const void *a, const void *b, size_t n);

#endif
