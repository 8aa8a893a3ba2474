/* SPDX-License-Identifier: MIT */
/* libcrypto loaded on first use (crypto.h says why). */
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "crypto.h"

static struct crypto_api api;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static bool loaded;

/* As the dynamic loader ends a program whose library is missing: the name, why, exit 127. */
static void crypto_die(const char *what)
{
	fprintf(stderr, "hpcinit: cannot load %s (OpenSSL 3's libcrypto, a dependency of the package): %s\n",
		CRYPTO_SONAME, what ? what : "unknown error");
	_exit(127);
}

static void crypto_load(void)
{
	/* RTLD_LOCAL: its symbols stay out of the global scope (the helpers' libraries load their own) */
	void *h = dlopen(CRYPTO_SONAME, RTLD_NOW | RTLD_LOCAL);
	void *sym;

	if (!h)
		crypto_die(dlerror());
#define CRYPTO_LOOKUP(f) \
	sym = dlsym(h, #f); \
	if (!sym) \
		crypto_die(dlerror()); \
	*(void **)&api.f = sym;
	CRYPTO_FUNCTIONS(CRYPTO_LOOKUP)
#undef CRYPTO_LOOKUP
	/* hpcinit never prints OpenSSL's error strings: not loading them saves ~0.4 MB. */
	api.OPENSSL_init_crypto(OPENSSL_INIT_NO_LOAD_CRYPTO_STRINGS, NULL);
	__atomic_store_n(&loaded, true, __ATOMIC_RELEASE);
}

const struct crypto_api *crypto(void)
{
	pthread_once(&once, crypto_load);
	return &api;
}

bool crypto_loaded(void)
{
	return __atomic_load_n(&loaded, __ATOMIC_ACQUIRE);
}
