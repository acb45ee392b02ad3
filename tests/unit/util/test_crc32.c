/* Unit tests for lib/util CRC32 (IEEE, zlib semantics): known vectors, the hardware and
 * portable paths against a bit-at-a-time reference and (when the build found it) zlib, at
 * every length and alignment around the folding paths, chaining, and a throughput report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/util/crc32.h"
#include "lib/util/time.h"
#ifdef WT_TEST_HAVE_ZLIB
#include <zlib.h>
#endif

/* The definition, one bit at a time: slow, but obviously right. */
static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t c = ~crc;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return ~c;
}

/* zlib when available, else the reference again: the second opinion. */
static uint32_t other_crc(uint32_t crc, const uint8_t *p, size_t len)
{
#ifdef WT_TEST_HAVE_ZLIB
	uint32_t c = crc;

	while (len > 0) {
		unsigned n = len > (1u << 30) ? (1u << 30) : (unsigned)len;

		c = (uint32_t)crc32(c, p, n);
		p += n;
		len -= n;
	}
	return c;
#else
	return ref_crc(crc, p, len);
#endif
}

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

static void fill_random(uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rng();
}

typedef uint32_t (*crc_fn)(uint32_t, const void *, size_t);

static void check_vectors(crc_fn f)
{
	uint8_t buf[64];

	assert_int_equal(f(0, "123456789", 9), 0xCBF43926u);
	assert_int_equal(f(0, "", 0), 0);
	assert_int_equal(f(0, "a", 1), 0xE8B7BE43u);
	assert_int_equal(f(0, "The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(f(0, buf, 32), 0x190A55ADu);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(f(0, buf, 32), 0xFF6CAB0Bu);
	/* 64 bytes: the smallest input the folding path takes */
	for (int i = 0; i < 64; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(f(0, buf, 64), ref_crc(0, buf, 64));
	/* NULL with no bytes continues unchanged */
	assert_int_equal(f(0x12345678u, NULL, 0), 0x12345678u);
}

static void test_vectors(void **state)
{
	(void)state;
	check_vectors(wt_util_crc32);
	check_vectors(wt_util_crc32_portable);
	check_vectors(wt_util_crc32_hw);
	print_message("crc32: carry-less multiply %s; second opinion: %s\n",
		      wt_util_crc32_hw_available() ? "available" : "not available",
#ifdef WT_TEST_HAVE_ZLIB
		      "zlib"
#else
		      "bitwise reference"
#endif
	);
}

/* Every length up to a few hundred bytes at every alignment within 16 bytes (the folding
 * path starts at 64, folds 64 then 16 at a time and leaves 0..15 bytes to the tables),
 * then long random lengths at random offsets. */
static void test_paths_agree(void **state)
{
	size_t cap = 1 << 18;
	uint8_t *buf = malloc(cap + 64);

	(void)state;
	assert_non_null(buf);
	fill_random(buf, cap + 64);
	for (size_t off = 0; off < 16; off++)
		for (size_t len = 0; len <= 600; len++) {
			uint32_t seed = (uint32_t)rng();
			uint32_t want = ref_crc(seed, buf + off, len);

			assert_int_equal(other_crc(seed, buf + off, len), want);
			assert_int_equal(wt_util_crc32_portable(seed, buf + off, len), want);
			assert_int_equal(wt_util_crc32_hw(seed, buf + off, len), want);
			assert_int_equal(wt_util_crc32(seed, buf + off, len), want);
		}
	for (int i = 0; i < 300; i++) {
		size_t off = (size_t)(rng() % 64), len = (size_t)(rng() % cap);
		uint32_t seed = (i & 1) ? (uint32_t)rng() : 0;
		uint32_t want = other_crc(seed, buf + off, len);

		assert_int_equal(wt_util_crc32_portable(seed, buf + off, len), want);
		assert_int_equal(wt_util_crc32_hw(seed, buf + off, len), want);
		assert_int_equal(wt_util_crc32(seed, buf + off, len), want);
	}
	/* all-ones and all-zero blocks exercise the folds with extreme lanes */
	memset(buf, 0xff, 4096);
	assert_int_equal(wt_util_crc32_hw(0, buf, 4096), ref_crc(0, buf, 4096));
	memset(buf, 0, 4096);
	assert_int_equal(wt_util_crc32_hw(0xffffffffu, buf, 4096), ref_crc(0xffffffffu, buf, 4096));
	free(buf);
}

static void test_chaining(void **state)
{
	uint8_t buf[70000];

	(void)state;
	fill_random(buf, sizeof(buf));
	uint32_t whole = wt_util_crc32(0, buf, sizeof(buf));

	assert_int_equal(whole, ref_crc(0, buf, sizeof(buf)));
	assert_int_equal(whole, other_crc(0, buf, sizeof(buf)));
	for (int i = 0; i < 200; i++) {
		size_t cut = (size_t)(rng() % (sizeof(buf) + 1));
		uint32_t a = wt_util_crc32(0, buf, cut);

		assert_int_equal(wt_util_crc32(a, buf + cut, sizeof(buf) - cut), whole);
		a = wt_util_crc32_portable(0, buf, cut);
		assert_int_equal(wt_util_crc32_hw(a, buf + cut, sizeof(buf) - cut), whole);
		a = wt_util_crc32_hw(0, buf, cut);
		assert_int_equal(wt_util_crc32_portable(a, buf + cut, sizeof(buf) - cut), whole);
	}
	/* a single flipped bit always changes the CRC */
	for (int i = 0; i < 100; i++) {
		size_t bit = (size_t)(rng() % (sizeof(buf) * 8));

		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_not_equal(wt_util_crc32(0, buf, sizeof(buf)), whole);
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

static double rate(crc_fn f, const uint8_t *buf, size_t len, int reps, uint32_t *sink)
{
	uint64_t t0 = wt_util_time_ns();

	for (int i = 0; i < reps; i++)
		*sink ^= f(*sink, buf, len);
	uint64_t dt = wt_util_time_ns() - t0;

	return dt ? (double)len * reps / (double)dt : 0.0; /* bytes per ns = GB/s */
}

/* Reports throughput (not asserted: the machine is shared); checks only that both paths
 * produce the same CRC of the buffer. */
static void test_throughput(void **state)
{
	size_t len = 1 << 20;
	uint8_t *buf = malloc(len);
	uint32_t s1 = 0, s2 = 0;

	(void)state;
	assert_non_null(buf);
	fill_random(buf, len);
	(void)rate(wt_util_crc32_hw, buf, len, 4, &s1); /* warm up */
	double hw = rate(wt_util_crc32_hw, buf, len, 256, &s1);
	double sw = rate(wt_util_crc32_portable, buf, len, 16, &s2);
	double small = rate(wt_util_crc32, buf, 4096, 16384, &s1);
	double frame = rate(wt_util_crc32, buf, 1024, 65536, &s1);

	print_message("crc32: hw %s %.2f GB/s (1 MiB), %.2f GB/s (4 KiB), %.2f GB/s (1 KiB); "
		      "portable %.2f GB/s (1 MiB)\n",
		      wt_util_crc32_hw_available() ? "pclmulqdq" : "(none)", hw, small, frame, sw);
	assert_int_equal(wt_util_crc32_hw(0, buf, len), wt_util_crc32_portable(0, buf, len));
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_vectors),
	    cmocka_unit_test(test_paths_agree),
	    cmocka_unit_test(test_chaining),
	    cmocka_unit_test(test_throughput),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
