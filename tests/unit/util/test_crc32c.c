/* Unit tests for lib/util CRC32C: known vectors, the hardware and portable paths against
 * each other and a bit-at-a-time reference, chaining, and a throughput report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/util/crc32c.h"
#include "lib/util/time.h"

/* The definition, one bit at a time: slow, but obviously right. */
static uint32_t ref_crc(uint32_t crc, const uint8_t *p, size_t len)
{
	uint32_t c = ~crc;

	for (size_t i = 0; i < len; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
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
	uint8_t buf[32];

	assert_int_equal(f(0, "123456789", 9), 0xE3069283u);
	assert_int_equal(f(0, "", 0), 0);
	assert_int_equal(f(0, "a", 1), 0xC1D04330u);
	/* RFC 3720 (iSCSI) appendix B.4 */
	memset(buf, 0, sizeof(buf));
	assert_int_equal(f(0, buf, 32), 0x8A9136AAu);
	memset(buf, 0xff, sizeof(buf));
	assert_int_equal(f(0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)i;
	assert_int_equal(f(0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf[i] = (uint8_t)(31 - i);
	assert_int_equal(f(0, buf, 32), 0x113FDB5Cu);
	/* NULL with no bytes continues unchanged */
	assert_int_equal(f(0x12345678u, NULL, 0), 0x12345678u);
}

static void test_vectors(void **state)
{
	(void)state;
	check_vectors(wt_util_crc32c);
	check_vectors(wt_util_crc32c_portable);
	check_vectors(wt_util_crc32c_hw);
}

/* Every length up to a few hundred bytes at every alignment, then lengths around the
 * interleaved block sizes (3 * 256, 3 * 8192) where the merge logic kicks in. */
static void test_paths_agree(void **state)
{
	size_t cap = 3 * 8192 * 3 + 64;
	uint8_t *buf = malloc(cap);

	(void)state;
	assert_non_null(buf);
	fill_random(buf, cap);
	for (size_t off = 0; off < 8; off++)
		for (size_t len = 0; len <= 800; len++) {
			uint32_t want = ref_crc(0, buf + off, len);

			assert_int_equal(wt_util_crc32c_portable(0, buf + off, len), want);
			assert_int_equal(wt_util_crc32c_hw(0, buf + off, len), want);
			assert_int_equal(wt_util_crc32c(0, buf + off, len), want);
		}
	static const size_t lens[] = {3 * 256 - 1, 3 * 256,	 3 * 256 + 1,	 3 * 8192 - 8,
				      3 * 8192,	   3 * 8192 + 7, 6 * 8192 + 800, 3 * 8192 * 3};
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t off = 0; off < 3; off++) {
			uint32_t want = ref_crc(0xdeadbeefu, buf + off, lens[i]);

			assert_int_equal(wt_util_crc32c_portable(0xdeadbeefu, buf + off, lens[i]),
					 want);
			assert_int_equal(wt_util_crc32c_hw(0xdeadbeefu, buf + off, lens[i]), want);
		}
	free(buf);
}

static void test_chaining(void **state)
{
	uint8_t buf[70000];

	(void)state;
	fill_random(buf, sizeof(buf));
	uint32_t whole = wt_util_crc32c(0, buf, sizeof(buf));

	assert_int_equal(whole, ref_crc(0, buf, sizeof(buf)));
	for (int i = 0; i < 200; i++) {
		size_t cut = (size_t)(rng() % (sizeof(buf) + 1));
		uint32_t a = wt_util_crc32c(0, buf, cut);

		assert_int_equal(wt_util_crc32c(a, buf + cut, sizeof(buf) - cut), whole);
		a = wt_util_crc32c_portable(0, buf, cut);
		assert_int_equal(wt_util_crc32c_hw(a, buf + cut, sizeof(buf) - cut), whole);
	}
	/* a single flipped bit always changes the CRC */
	for (int i = 0; i < 100; i++) {
		size_t bit = (size_t)(rng() % (sizeof(buf) * 8));

		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_not_equal(wt_util_crc32c(0, buf, sizeof(buf)), whole);
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

/* Reports throughput; checks only that both paths produce the same CRC of the buffer. */
static void test_throughput(void **state)
{
	size_t len = 1 << 20;
	uint8_t *buf = malloc(len);
	uint32_t s1 = 0, s2 = 0;

	(void)state;
	assert_non_null(buf);
	fill_random(buf, len);
	double hw = rate(wt_util_crc32c_hw, buf, len, 64, &s1);
	double sw = rate(wt_util_crc32c_portable, buf, len, 16, &s2);
	double small = rate(wt_util_crc32c, buf, 4096, 4096, &s1);

	print_message("crc32c: hw %s %.2f GB/s (1 MiB), %.2f GB/s (4 KiB); portable %.2f GB/s\n",
		      wt_util_crc32c_hw_available() ? "sse4.2" : "(none)", hw, small, sw);
	assert_int_equal(wt_util_crc32c_hw(0, buf, len), wt_util_crc32c_portable(0, buf, len));
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
