/* SPDX-License-Identifier: MIT */
/*
 * libcrypto, loaded on first use.  Linked at start, OpenSSL's library cost
 * every run about 1.2 ms of CPU and 1.8 MB of RSS (its relocations) though a
 * converged run with static discovery signs nothing, and `hpcinit check` runs
 * on a timer on every node (docs/performance.md).  So the agent does not link
 * it: the first call of crypto() dlopens it (its soname, CRYPTO_SONAME) and
 * looks up the functions the agent uses, each typed from OpenSSL's own
 * headers, so a caller writes crypto()->BIO_free(...) and the compiler
 * checks it as it checks a direct call.  Only the PEM private keys of
 * sshkey.c need it now: the records' HMAC and the key fingerprints are
 * sha256.c's, so signing or checking records never loads it.
 * Which library: the one the package depends on (debian/control, the rpm's
 * libcrypto.so.3()(64bit)).  Where it cannot be loaded, crypto() does what
 * the dynamic loader did when it was linked, only later: it says which
 * library and why, and ends the process (exit 127).
 */
#ifndef HPCINIT_CRYPTO_H
#define HPCINIT_CRYPTO_H

#include <stdbool.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>
#include <openssl/pem.h>

#ifndef CRYPTO_SONAME
#define CRYPTO_SONAME "libcrypto.so.3"
#endif

/* Every libcrypto function the agent calls (add one here to call it). */
#define CRYPTO_FUNCTIONS(X) \
	X(OPENSSL_init_crypto) \
	X(BIO_new_mem_buf) X(BIO_free) X(PEM_read_bio_PrivateKey) \
	X(EVP_PKEY_free) X(EVP_PKEY_get_base_id) X(EVP_PKEY_get_bn_param) \
	X(EVP_PKEY_get_utf8_string_param) X(EVP_PKEY_get_octet_string_param) \
	X(EVP_PKEY_get_raw_public_key) \
	X(BN_num_bits) X(BN_bn2bin) X(BN_free)

struct crypto_api {
#define CRYPTO_FIELD(f) __typeof__(f) *f;
	CRYPTO_FUNCTIONS(CRYPTO_FIELD)
#undef CRYPTO_FIELD
};

/* The functions above, libcrypto loaded on the first call (thread-safe); never NULL. */
const struct crypto_api *crypto(void);
/* Whether crypto() has loaded libcrypto in this process (for the tests). */
bool crypto_loaded(void);

#endif
