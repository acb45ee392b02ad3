/* CRC32C (lib/util): slicing-by-8 tables, and on x86 the SSE4.2 crc32 instruction run on
 * three interleaved streams whose results are merged with precomputed shift tables. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/crc32c.h"
#include "lib/util/crc_slice8.h"

#define CRC32C_POLY 0x82f63b78u /* Castagnoli, bit-reflected */

/* Interleaved block sizes: the long one amortises the merge, the short one keeps three
 * streams busy for mid-sized frames (a 4 KiB payload). */
#define CRC_LONG 8192
#define CRC_SHORT 256

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static wt_util_crc_slice8_t crc_table;
/* crc_shift_long[k][b]: the register b << 8k after CRC_LONG zero bytes; same for short. */
static uint32_t crc_shift_long[4][256];
static uint32_t crc_shift_short[4][256];
static int crc_have_hw, crc_use_hw;

/* a * b modulo the polynomial, both bit-reflected (x^0 is bit 31). */
static uint32_t multmodp(uint32_t a, uint32_t b)
{
	uint32_t m = 1u << 31, p = 0;

	for (;;) {
		if (a & m) {
			p ^= b;
			if ((a & (m - 1)) == 0)
				break;
		}
		m >>= 1;
		b = (b & 1) ? (b >> 1) ^ CRC32C_POLY : b >> 1;
	}
	return p;
}

/* x^(8 * n) modulo the polynomial: what n zero bytes multiply the register by. */
static uint32_t xpow8n(size_t n)
{
	uint32_t result = 1u << 31; /* x^0 */
	uint32_t base = 1u << 23;   /* x^8 */

	while (n) {
		if (n & 1)
			result = multmodp(base, result);
		base = multmodp(base, base);
		n >>= 1;
	}
	return result;
}

static void shift_table_init(uint32_t t[4][256], size_t n)
{
	uint32_t xp = xpow8n(n);

	for (int k = 0; k < 4; k++)
		for (uint32_t b = 0; b < 256; b++)
			t[k][b] = multmodp(xp, b << (8 * k));
}

static int hw_detect(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_cpu_init();
	return __builtin_cpu_supports("sse4.2");
#else
	return 0;
#endif
}

static void crc_init_once(void)
{
	wt_util_crc_slice8_init(crc_table, CRC32C_POLY);
	shift_table_init(crc_shift_long, CRC_LONG);
	shift_table_init(crc_shift_short, CRC_SHORT);
	crc_have_hw = hw_detect();
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

uint32_t wt_util_crc32c_portable(uint32_t crc, const void *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return crc;
	crc_init();
	return ~sw_update(~crc, buf, len);
}

#if defined(__x86_64__) || defined(__i386__)
#include <nmmintrin.h>

static inline uint32_t shift(const uint32_t t[4][256], uint32_t c)
{
	return t[0][c & 0xff] ^ t[1][(c >> 8) & 0xff] ^ t[2][(c >> 16) & 0xff] ^ t[3][c >> 24];
}

#if defined(__x86_64__)
__attribute__((target("sse4.2"))) static inline uint32_t hw_word(uint32_t c, const uint8_t *p)
{
	return (uint32_t)_mm_crc32_u64(c, wt_util_get_le64(p));
}
#define HW_WORD 8
#else
__attribute__((target("sse4.2"))) static inline uint32_t hw_word(uint32_t c, const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return _mm_crc32_u32(c, le32toh(v));
}
#define HW_WORD 4
#endif

/* Three streams over consecutive blocks of blk bytes each, merged as
 * c = shift(shift(c0) ^ c1) ^ c2: the instruction has a latency of three cycles and a
 * throughput of one, so three independent chains keep it saturated. */
__attribute__((target("sse4.2"))) static uint32_t
hw_triple(uint32_t c, const uint8_t **pp, size_t *lenp, size_t blk, const uint32_t t[4][256])
{
	const uint8_t *p = *pp;
	size_t len = *lenp;

	while (len >= 3 * blk) {
		uint32_t c1 = 0, c2 = 0;
		const uint8_t *end = p + blk;

		do {
			c = hw_word(c, p);
			c1 = hw_word(c1, p + blk);
			c2 = hw_word(c2, p + 2 * blk);
			p += HW_WORD;
		} while (p < end);
		c = shift(t, c) ^ c1;
		c = shift(t, c) ^ c2;
		p += 2 * blk;
		len -= 3 * blk;
	}
	*pp = p;
	*lenp = len;
	return c;
}

__attribute__((target("sse4.2"))) static uint32_t hw_update(uint32_t c, const uint8_t *p,
							    size_t len)
{
	while (len > 0 && ((uintptr_t)p & (HW_WORD - 1)) != 0) {
		c = _mm_crc32_u8(c, *p++);
		len--;
	}
	c = hw_triple(c, &p, &len, CRC_LONG, crc_shift_long);
	c = hw_triple(c, &p, &len, CRC_SHORT, crc_shift_short);
	while (len >= HW_WORD) {
		c = hw_word(c, p);
		p += HW_WORD;
		len -= HW_WORD;
	}
	while (len-- > 0)
		c = _mm_crc32_u8(c, *p++);
	return c;
}

uint32_t wt_util_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return crc;
	crc_init();
	if (!crc_have_hw)
		return ~sw_update(~crc, buf, len);
	return ~hw_update(~crc, buf, len);
}

int wt_util_crc32c_hw_available(void)
{
	crc_init();
	return crc_have_hw;
}

uint32_t wt_util_crc32c(uint32_t crc, const void *buf, size_t len)
{
	if (buf == NULL || len == 0)
		return crc;
	crc_init();
	if (crc_use_hw)
		return ~hw_update(~crc, buf, len);
	return ~sw_update(~crc, buf, len);
}

#else /* no crc32 instruction on this architecture */

uint32_t wt_util_crc32c_hw(uint32_t crc, const void *buf, size_t len)
{
	return wt_util_crc32c_portable(crc, buf, len);
}

int wt_util_crc32c_hw_available(void)
{
	return 0;
}

uint32_t wt_util_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return wt_util_crc32c_portable(crc, buf, len);
}

#endif
