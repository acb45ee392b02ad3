/* CRC32 (IEEE 802.3, zlib's crc32) for RoCE's ICRC (lib/util): slicing-by-8 tables, and
 * on x86 four interleaved 128-bit carry-less multiply (PCLMULQDQ) folds with a Barrett
 * reduction at the end, picked at run time. */
#include <pthread.h>
#include <stdlib.h>
#include "lib/util/crc32.h"
#include "lib/util/crc_slice8.h"

#define CRC32_POLY 0xedb88320u /* 0x04C11DB7, bit-reflected */

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static wt_util_crc_slice8_t crc_table;
static int crc_have_hw, crc_use_hw, crc_have_512;

static int hw_detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("pclmul") && __builtin_cpu_supports("sse4.1");
#else
	return 0;
#endif
}

static void crc_init_once(void)
{
	wt_util_crc_slice8_init(crc_table, CRC32_POLY);
	crc_have_hw = hw_detect();
#if defined(__x86_64__) || defined(__i386__)
	crc_have_512 = crc_have_hw && __builtin_cpu_supports("avx512f") &&
		       __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("vpclmulqdq");
#endif
	crc_use_hw = crc_have_hw && getenv("WT_UTIL_PORTABLE_KERNELS") == NULL;
}

static inline void crc_init(void)
{
	pthread_once(&crc_once, crc_init_once);
}

/* Raw register update (no init/final xor) with the tables. */
static inline uint32_t sw_update(uint32_t c, const uint8_t *p, size_t len)
{
	return wt_util_crc_slice8(crc_table, c, p, len);
}

uint32_t wt_util_crc32_portable(uint32_t crc, const void *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return crc;
	crc_init();
	return ~sw_update(~crc, buf, len);
}

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#include <smmintrin.h>
#include <wmmintrin.h>

#define HW_TARGET __attribute__((target("pclmul,sse4.1")))

/* Folding constants, in the bit-reflected domain where the first byte holds the highest
 * powers: each is x^n mod P reflected into 33 bits (shifted left by one, because a
 * reflected carry-less product comes out one bit low). A 128-bit lane is carried forward
 * over d bits by multiplying its two halves by x^(d+32) and x^(d-32):
 *   d = 2048 (four 512-bit registers ahead): x^2080, x^2016;
 *   d = 512 (four lanes ahead): x^544, x^480;  d = 128 (one lane): x^160, x^96;
 *   64 -> 32 bits: x^64.  Barrett: P itself and mu = floor(x^64 / P), both 33 bits. */
#define K_2080 0x11542778aull
#define K_2016 0x1322d1430ull
#define K_544 0x154442bd4ull
#define K_480 0x1c6e41596ull
#define K_160 0x1751997d0ull
#define K_96 0x0ccaa009eull
#define K_64 0x163cd6124ull
#define P_REFL 0x1db710641ull
#define MU_REFL 0x1f7011641ull

static inline HW_TARGET __m128i load128(const uint8_t *p)
{
	return _mm_loadu_si128((const __m128i *)(const void *)p);
}

/* x carried forward by the distance k encodes, plus the data that lands there. */
static inline HW_TARGET __m128i fold(__m128i x, __m128i k, __m128i data)
{
	__m128i lo = _mm_clmulepi64_si128(x, k, 0x00);
	__m128i hi = _mm_clmulepi64_si128(x, k, 0x11);

	return _mm_xor_si128(_mm_xor_si128(lo, hi), data);
}

/* The end of every fold: four 128-bit lanes onto one, the 16-byte blocks left, 128 ->
 * 32 bits, and the tables for the last bytes. */
static inline HW_TARGET uint32_t hw_finish(__m128i x0, __m128i x1, __m128i x2, __m128i x3,
					   const uint8_t *p, size_t len)
{
	const __m128i k1 = _mm_set_epi64x((long long)K_96, (long long)K_160);
	const __m128i k64 = _mm_set_epi64x(0, (long long)K_64);
	const __m128i barrett = _mm_set_epi64x((long long)MU_REFL, (long long)P_REFL);
	const __m128i low32 = _mm_setr_epi32(-1, 0, -1, 0);
	__m128i t;
	uint32_t c;

	x0 = fold(x0, k1, x1);
	x0 = fold(x0, k1, x2);
	x0 = fold(x0, k1, x3);
	while (len >= 16) {
		x0 = fold(x0, k1, load128(p));
		p += 16;
		len -= 16;
	}
	/* 128 -> 96 bits: the high-order half times x^96 onto the low-order half. */
	t = _mm_clmulepi64_si128(x0, k1, 0x10);
	x0 = _mm_xor_si128(_mm_srli_si128(x0, 8), t);
	/* 96 -> 64 bits: the high-order 32 bits times x^64 onto the rest. */
	t = _mm_srli_si128(x0, 4);
	x0 = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), k64, 0x00);
	x0 = _mm_xor_si128(x0, t);
	/* Barrett: q = floor(R * mu / x^64), then R - q * P leaves the 32-bit remainder. */
	t = _mm_clmulepi64_si128(_mm_and_si128(x0, low32), barrett, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, low32), barrett, 0x00);
	x0 = _mm_xor_si128(x0, t);
	c = (uint32_t)_mm_extract_epi32(x0, 1);
	return sw_update(c, p, len);
}

/* Raw register update for len >= 64; the tables take the tail under 16 bytes. Four
 * independent lanes hide the multiplier's latency; unaligned loads cost nothing extra on
 * the CPUs that have PCLMULQDQ, so there is no alignment prologue. */
static HW_TARGET uint32_t hw_fold(uint32_t c, const uint8_t *p, size_t len)
{
	const __m128i k4 = _mm_set_epi64x((long long)K_480, (long long)K_544);
	__m128i x0 = _mm_xor_si128(load128(p), _mm_cvtsi32_si128((int)c));
	__m128i x1 = load128(p + 16), x2 = load128(p + 32), x3 = load128(p + 48);

	p += 64;
	len -= 64;
	while (len >= 64) {
		x0 = fold(x0, k4, load128(p));
		x1 = fold(x1, k4, load128(p + 16));
		x2 = fold(x2, k4, load128(p + 32));
		x3 = fold(x3, k4, load128(p + 48));
		p += 64;
		len -= 64;
	}
	return hw_finish(x0, x1, x2, x3, p, len);
}

#include <immintrin.h>

#define HW512_TARGET __attribute__((target("avx512f,avx512vl,vpclmulqdq,pclmul,sse4.1")))

static inline HW512_TARGET __m512i fold512(__m512i x, __m512i k, __m512i data)
{
	__m512i lo = _mm512_clmulepi64_epi128(x, k, 0x00);
	__m512i hi = _mm512_clmulepi64_epi128(x, k, 0x11);

	return _mm512_ternarylogic_epi64(lo, hi, data, 0x96); /* lo ^ hi ^ data */
}

static inline HW512_TARGET __m512i load512(const uint8_t *p)
{
	return _mm512_loadu_si512((const void *)p);
}

/* The same folds four 128-bit lanes at a time (VPCLMULQDQ on 512-bit registers): sixteen
 * lanes in flight, 256 bytes per round, for len >= 256. */
static HW512_TARGET uint32_t hw_fold512(uint32_t c, const uint8_t *p, size_t len)
{
	const __m512i k16 =
	    _mm512_broadcast_i32x4(_mm_set_epi64x((long long)K_2016, (long long)K_2080));
	const __m512i k4 =
	    _mm512_broadcast_i32x4(_mm_set_epi64x((long long)K_480, (long long)K_544));
	__m512i z0 =
	    _mm512_xor_si512(load512(p), _mm512_zextsi128_si512(_mm_cvtsi32_si128((int)c)));
	__m512i z1 = load512(p + 64), z2 = load512(p + 128), z3 = load512(p + 192);

	p += 256;
	len -= 256;
	while (len >= 256) {
		z0 = fold512(z0, k16, load512(p));
		z1 = fold512(z1, k16, load512(p + 64));
		z2 = fold512(z2, k16, load512(p + 128));
		z3 = fold512(z3, k16, load512(p + 192));
		p += 256;
		len -= 256;
	}
	z0 = fold512(z0, k4, z1);
	z0 = fold512(z0, k4, z2);
	z0 = fold512(z0, k4, z3);
	while (len >= 64) {
		z0 = fold512(z0, k4, load512(p));
		p += 64;
		len -= 64;
	}
	return hw_finish(_mm512_extracti32x4_epi32(z0, 0), _mm512_extracti32x4_epi32(z0, 1),
			 _mm512_extracti32x4_epi32(z0, 2), _mm512_extracti32x4_epi32(z0, 3), p,
			 len);
}

static uint32_t hw_update(uint32_t c, const uint8_t *p, size_t len)
{
	if (len < 64)
		return sw_update(c, p, len);
	if (len >= 256 && crc_have_512)
		return hw_fold512(c, p, len);
	return hw_fold(c, p, len);
}

uint32_t wt_util_crc32_hw(uint32_t crc, const void *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return crc;
	crc_init();
	if (!crc_have_hw)
		return ~sw_update(~crc, buf, len);
	return ~hw_update(~crc, buf, len);
}

int wt_util_crc32_hw_available(void)
{
	crc_init();
	return crc_have_hw;
}

uint32_t wt_util_crc32(uint32_t crc, const void *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return crc;
	crc_init();
	if (crc_use_hw)
		return ~hw_update(~crc, buf, len);
	return ~sw_update(~crc, buf, len);
}

#else /* no carry-less multiply on this architecture */

uint32_t wt_util_crc32_hw(uint32_t crc, const void *buf, size_t len)
{
	return wt_util_crc32_portable(crc, buf, len);
}

int wt_util_crc32_hw_available(void)
{
	return 0;
}

uint32_t wt_util_crc32(uint32_t crc, const void *buf, size_t len)
{
	return wt_util_crc32_portable(crc, buf, len);
}

#endif
