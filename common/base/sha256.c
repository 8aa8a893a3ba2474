/* SPDX-License-Identifier: MIT */
/* SHA-256 and HMAC-SHA256 without a library (sha256.h says why). */
#include "config.h"

#include <string.h>

#include "sha256.h"

static const uint32_t K[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
	0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
	0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
	0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
	0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
	0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
	0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static inline uint32_t ror(uint32_t x, unsigned n)
{
	return (x >> n) | (x << (32 - n));
}

static inline uint32_t load_be32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void store_be32(unsigned char *p, uint32_t v)
{
	p[0] = (unsigned char)(v >> 24);
	p[1] = (unsigned char)(v >> 16);
	p[2] = (unsigned char)(v >> 8);
	p[3] = (unsigned char)v;
}

/* FIPS 180-4 6.2.2: one round; the eight working variables rotate by name, not by copies. */
#define S0(x) (ror(x, 2) ^ ror(x, 13) ^ ror(x, 22))
#define S1(x) (ror(x, 6) ^ ror(x, 11) ^ ror(x, 25))
#define ROUND(a, b, c, d, e, f, g, h, t) do { \
	uint32_t t1_ = h + S1(e) + ((e & f) ^ (~e & g)) + K[t] + w[t]; \
	d += t1_; \
	h = t1_ + S0(a) + ((a & b) ^ (a & c) ^ (b & c)); \
} while (0)

/* The compression of nblocks 64-byte blocks, portable C. */
static void blocks_c(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
	uint32_t w[64];

	for (; nblocks--; p += SHA256_BLOCK) {
		uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];

		for (int t = 0; t < 16; t++)
			w[t] = load_be32(p + 4 * t);
		for (int t = 16; t < 64; t++) {
			uint32_t s0 = ror(w[t - 15], 7) ^ ror(w[t - 15], 18) ^ (w[t - 15] >> 3);
			uint32_t s1 = ror(w[t - 2], 17) ^ ror(w[t - 2], 19) ^ (w[t - 2] >> 10);

			w[t] = w[t - 16] + s0 + w[t - 7] + s1;
		}
		for (int t = 0; t < 64; t += 8) {
			ROUND(a, b, c, d, e, f, g, k, t);
			ROUND(k, a, b, c, d, e, f, g, t + 1);
			ROUND(g, k, a, b, c, d, e, f, t + 2);
			ROUND(f, g, k, a, b, c, d, e, t + 3);
			ROUND(e, f, g, k, a, b, c, d, t + 4);
			ROUND(d, e, f, g, k, a, b, c, t + 5);
			ROUND(c, d, e, f, g, k, a, b, t + 6);
			ROUND(b, c, d, e, f, g, k, a, t + 7);
		}
		h[0] += a;
		h[1] += b;
		h[2] += c;
		h[3] += d;
		h[4] += e;
		h[5] += f;
		h[6] += g;
		h[7] += k;
	}
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>
#define SHA256_X86 1

/*
 * The same compression with the x86 SHA extensions (Intel's, on every Azure
 * HPC size's AMD EPYC and on Intel since Ice Lake): about 4x the portable
 * code, as fast as libcrypto's.  Four rounds a step: the message schedule by
 * sha256msg1/msg2, two rounds at a time by sha256rnds2 on the state held as
 * ABEF and CDGH.
 */
__attribute__((target("sha,sse4.1")))
static void blocks_x86(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
	const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
	__m128i tmp = _mm_loadu_si128((const __m128i *)&h[0]);
	__m128i st1 = _mm_loadu_si128((const __m128i *)&h[4]);
	__m128i st0;

	tmp = _mm_shuffle_epi32(tmp, 0xB1);             /* CDAB */
	st1 = _mm_shuffle_epi32(st1, 0x1B);             /* EFGH */
	st0 = _mm_alignr_epi8(tmp, st1, 8);             /* ABEF */
	st1 = _mm_blend_epi16(st1, tmp, 0xF0);          /* CDGH */
	for (; nblocks--; p += SHA256_BLOCK) {
		__m128i abef = st0, cdgh = st1, m[4];

		for (int i = 0; i < 16; i++) {
			__m128i msg;

			if (i < 4)
				m[i] = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
			else
				m[i & 3] = _mm_sha256msg2_epu32(
					_mm_add_epi32(_mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]),
						      _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4)),
					m[(i + 3) & 3]);
			msg = _mm_add_epi32(m[i & 3], _mm_loadu_si128((const __m128i *)&K[4 * i]));
			st1 = _mm_sha256rnds2_epu32(st1, st0, msg);
			st0 = _mm_sha256rnds2_epu32(st0, st1, _mm_shuffle_epi32(msg, 0x0E));
		}
		st0 = _mm_add_epi32(st0, abef);
		st1 = _mm_add_epi32(st1, cdgh);
	}
	tmp = _mm_shuffle_epi32(st0, 0x1B);             /* FEBA */
	st1 = _mm_shuffle_epi32(st1, 0xB1);             /* DCHG */
	st0 = _mm_blend_epi16(tmp, st1, 0xF0);          /* DCBA */
	st1 = _mm_alignr_epi8(st1, tmp, 8);             /* HGFE */
	_mm_storeu_si128((__m128i *)&h[0], st0);
	_mm_storeu_si128((__m128i *)&h[4], st1);
}

/* CPUID: SHA (leaf 7, EBX bit 29), SSSE3 and SSE4.1 (leaf 1, ECX bits 9 and 19). */
static bool cpu_has_sha(void)
{
	unsigned a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 9)) || !(c & (1u << 19)))
		return false;
	return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 29));
}
#endif

/* 0 unknown, 1 portable, 2 x86 SHA extensions; the same answer on every thread. */
static int impl;

static void blocks(uint32_t h[8], const unsigned char *p, size_t nblocks)
{
	int i = __atomic_load_n(&impl, __ATOMIC_RELAXED);

	if (!i) {
		i = 1;
#ifdef SHA256_X86
		if (cpu_has_sha())
			i = 2;
#endif
		__atomic_store_n(&impl, i, __ATOMIC_RELAXED);
	}
#ifdef SHA256_X86
	if (i == 2) {
		blocks_x86(h, p, nblocks);
		return;
	}
#endif
	blocks_c(h, p, nblocks);
}

bool sha256_accelerated(void)
{
	unsigned char md[SHA256_LEN];

	sha256("", 0, md);      /* the choice made */
	return __atomic_load_n(&impl, __ATOMIC_RELAXED) == 2;
}

void sha256_force_portable(bool portable)
{
	__atomic_store_n(&impl, portable ? 1 : 0, __ATOMIC_RELAXED);
}

void sha256_init(struct sha256 *s)
{
	static const uint32_t iv[8] = {
		0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
	};

	memcpy(s->h, iv, sizeof(iv));
	s->bytes = 0;
	s->n = 0;
}

void sha256_update(struct sha256 *s, const void *data, size_t len)
{
	const unsigned char *p = data;

	s->bytes += len;
	if (s->n) {
		size_t take = SHA256_BLOCK - s->n < len ? SHA256_BLOCK - s->n : len;

		memcpy(s->buf + s->n, p, take);
		s->n += take;
		p += take;
		len -= take;
		if (s->n < SHA256_BLOCK)
			return;
		blocks(s->h, s->buf, 1);
		s->n = 0;
	}
	if (len >= SHA256_BLOCK) {
		blocks(s->h, p, len / SHA256_BLOCK);
		p += len - len % SHA256_BLOCK;
		len %= SHA256_BLOCK;
	}
	if (len) {
		memcpy(s->buf, p, len);
		s->n = len;
	}
}

/* FIPS 180-4 5.1.1: a 1 bit, zeros, the length in bits as 64 bits big-endian. */
void sha256_final(struct sha256 *s, unsigned char out[SHA256_LEN])
{
	uint64_t bits = s->bytes * 8;

	s->buf[s->n++] = 0x80;
	if (s->n > SHA256_BLOCK - 8) {
		memset(s->buf + s->n, 0, SHA256_BLOCK - s->n);
		blocks(s->h, s->buf, 1);
		s->n = 0;
	}
	memset(s->buf + s->n, 0, SHA256_BLOCK - 8 - s->n);
	store_be32(s->buf + 56, (uint32_t)(bits >> 32));
	store_be32(s->buf + 60, (uint32_t)bits);
	blocks(s->h, s->buf, 1);
	for (int i = 0; i < 8; i++)
		store_be32(out + 4 * i, s->h[i]);
	sha256_init(s);
}

void sha256(const void *data, size_t len, unsigned char out[SHA256_LEN])
{
	struct sha256 s;

	sha256_init(&s);
	sha256_update(&s, data, len);
	sha256_final(&s, out);
}

/* RFC 2104: a key longer than a block is hashed first; the pads are hashed once, here. */
void hmac_sha256_init(struct hmac_sha256 *h, const void *key, size_t keylen)
{
	unsigned char k[SHA256_BLOCK] = { 0 }, pad[SHA256_BLOCK];

	if (keylen > SHA256_BLOCK)
		sha256(key, keylen, k);
	else if (keylen)
		memcpy(k, key, keylen);
	for (int i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x36;
	sha256_init(&h->ipad);
	sha256_update(&h->ipad, pad, sizeof(pad));
	for (int i = 0; i < SHA256_BLOCK; i++)
		pad[i] = k[i] ^ 0x5c;
	sha256_init(&h->opad);
	sha256_update(&h->opad, pad, sizeof(pad));
	explicit_bzero(k, sizeof(k));
	explicit_bzero(pad, sizeof(pad));
	h->cur = h->ipad;
}

void hmac_sha256_reset(struct hmac_sha256 *h)
{
	h->cur = h->ipad;
}

void hmac_sha256_update(struct hmac_sha256 *h, const void *data, size_t len)
{
	sha256_update(&h->cur, data, len);
}

void hmac_sha256_final(struct hmac_sha256 *h, unsigned char out[SHA256_LEN])
{
	unsigned char inner[SHA256_LEN];
	struct sha256 o = h->opad;

	sha256_final(&h->cur, inner);
	sha256_update(&o, inner, sizeof(inner));
	sha256_final(&o, out);
	explicit_bzero(inner, sizeof(inner));
	explicit_bzero(&o, sizeof(o));
	h->cur = h->ipad;
}

void hmac_sha256_wipe(struct hmac_sha256 *h)
{
	explicit_bzero(h, sizeof(*h));
}

void hmac_sha256(const void *key, size_t keylen, const void *data, size_t len,
		 unsigned char out[SHA256_LEN])
{
	struct hmac_sha256 h;

	hmac_sha256_init(&h, key, keylen);
	hmac_sha256_update(&h, data, len);
	hmac_sha256_final(&h, out);
	hmac_sha256_wipe(&h);
}

bool ct_equal(const void *a, const void *b, size_t n)
{
	const volatile unsigned char *x = a, *y = b;
	unsigned char d = 0;

	for (size_t i = 0; i < n; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}
