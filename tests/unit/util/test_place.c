/* The estimate of how far apart the ranks' cores are (lib/util/place.c), fed with stamp
 * delays as near and far vCPUs of this VM give them, at times passed in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "lib/util/place.h"

#define MS 1000000ull
#define T0 (5000 * MS)

/* n samples of ns each, one every microsecond from *now */
static void feed(wt_util_place_t *p, uint32_t ns, unsigned n, uint64_t *now)
{
	for (unsigned i = 0; i < n; i++) {
		wt_util_place_sample(p, ns, *now);
		*now += 1000;
	}
}

static void test_unknown_until_samples_and_peers(void **state)
{
	wt_util_place_t p;
	uint64_t now = T0;

	(void)state;
	wt_util_place_init(&p);
	assert_int_equal(wt_util_place_own(&p, now), 0);
	assert_int_equal(wt_util_place_far(&p, now), -1);
	feed(&p, 60, WT_UTIL_PLACE_MIN_SAMPLES - 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 0);
	feed(&p, 60, 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 60);
	/* ours alone is not enough: the clocks' offset is in it */
	assert_int_equal(wt_util_place_far(&p, now), -1);
	/* unless it is far beyond any offset, and then it says far, never near */
	feed(&p, WT_UTIL_PLACE_FAR_ONE_NS + 1, WT_UTIL_PLACE_WINDOW, &now);
	assert_int_equal(wt_util_place_own(&p, now), WT_UTIL_PLACE_FAR_ONE_NS + 1);
	assert_int_equal(wt_util_place_far(&p, now), 1);
	wt_util_place_init(&p);
	feed(&p, 60, WT_UTIL_PLACE_MIN_SAMPLES, &now);
	wt_util_place_set_host(&p, 80, 1, now);
	assert_int_equal(wt_util_place_far(&p, now), 0);
	/* peers' estimates without ours (a broadcast's root): unknown, or far beyond the
	 * offset */
	wt_util_place_init(&p);
	wt_util_place_set_host(&p, 80, 3, now);
	assert_int_equal(wt_util_place_far(&p, now), -1);
	wt_util_place_set_host(&p, WT_UTIL_PLACE_FAR_ONE_NS, 1, now);
	assert_int_equal(wt_util_place_far(&p, now), -1);
	wt_util_place_set_host(&p, WT_UTIL_PLACE_FAR_ONE_NS + 1, 1, now);
	assert_int_equal(wt_util_place_far(&p, now), 1);
	now += WT_UTIL_PLACE_TTL_NS + 1;
	assert_int_equal(wt_util_place_far(&p, now), -1);
}

/* The median of the window's samples (the lower one of an even count), exactly. */
static void test_median_and_dropped_ones(void **state)
{
	wt_util_place_t p;
	uint64_t now = T0;

	(void)state;
	wt_util_place_init(&p);
	/* 8 samples: 10, 20, .., 80 in a scrambled order; the lower median is 40 */
	for (unsigned i = 0; i < 8; i++) {
		wt_util_place_sample(&p, 10 * ((i * 5) % 8 + 1), now);
		now += 1000;
	}
	assert_int_equal(wt_util_place_own(&p, now), 40);
	/* a few low ones among many high (a far period's clusters) do not make it near */
	wt_util_place_init(&p);
	feed(&p, 400, WT_UTIL_PLACE_WINDOW, &now);
	feed(&p, 70, WT_UTIL_PLACE_WINDOW / 2 - 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 400);
	/* half the window does */
	feed(&p, 70, 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 70);
	/* the oldest leave as new ones come: a window of 1..32, then 100..131 pushed in */
	wt_util_place_init(&p);
	for (unsigned i = 1; i <= WT_UTIL_PLACE_WINDOW; i++) {
		wt_util_place_sample(&p, i, now);
		now += 1000;
	}
	assert_int_equal(wt_util_place_own(&p, now), WT_UTIL_PLACE_WINDOW / 2);
	for (unsigned i = 0; i < WT_UTIL_PLACE_WINDOW; i++) {
		wt_util_place_sample(&p, 100 + i, now);
		now += 1000;
		/* 1..i + 1 gone, 100..100 + i in: the lower median moves on */
		assert_int_equal(wt_util_place_own(&p, now),
				 i < WT_UTIL_PLACE_WINDOW / 2 ? WT_UTIL_PLACE_WINDOW / 2 + i + 1
							      : 100 + i - WT_UTIL_PLACE_WINDOW / 2);
	}
	/* beyond the limit: not looking at all, dropped */
	feed(&p, WT_UTIL_PLACE_MAX_SAMPLE_NS + 1, 5 * WT_UTIL_PLACE_WINDOW, &now);
	assert_int_equal(wt_util_place_own(&p, now), 115);
	/* a zero-delay median still counts as known */
	wt_util_place_init(&p);
	feed(&p, 0, WT_UTIL_PLACE_MIN_SAMPLES, &now);
	assert_int_equal(wt_util_place_own(&p, now), 1);
}

/* Two ranks, a and b, that saw each other's stamps na and nb ns old, and shared. */
static void pair(wt_util_place_t *a, wt_util_place_t *b, uint32_t na, uint32_t nb, uint64_t *now)
{
	wt_util_place_init(a);
	wt_util_place_init(b);
	feed(a, na, WT_UTIL_PLACE_WINDOW, now);
	feed(b, nb, WT_UTIL_PLACE_WINDOW, now);
	wt_util_place_set_host(a, wt_util_place_own(b, *now), 1, *now);
	wt_util_place_set_host(b, wt_util_place_own(a, *now), 1, *now);
}

/* The offset of the two cores' clocks cancels in the mean: far vCPUs measured 115 ns one
 * way and 236 the other where a line took 175 either way; medians run higher, the offset
 * as much (here 60 ns either way around far medians of 300). */
static void test_mean_cancels_clock_offset(void **state)
{
	wt_util_place_t a, b;
	uint64_t now = T0;

	(void)state;
	pair(&a, &b, 240, 360, &now);
	assert_int_equal(wt_util_place_far(&a, now), 1);
	assert_int_equal(wt_util_place_far(&b, now), 1);
	/* near: medians of 120 and 180 */
	pair(&a, &b, 120, 180, &now);
	assert_int_equal(wt_util_place_far(&a, now), 0);
	assert_int_equal(wt_util_place_far(&b, now), 0);
	/* the threshold itself is near, one above it far */
	wt_util_place_init(&a);
	feed(&a, WT_UTIL_PLACE_FAR_NS, WT_UTIL_PLACE_WINDOW, &now);
	wt_util_place_set_host(&a, WT_UTIL_PLACE_FAR_NS, 1, now);
	assert_int_equal(wt_util_place_far(&a, now), 0);
	wt_util_place_set_host(&a, WT_UTIL_PLACE_FAR_NS + 2, 1, now);
	assert_int_equal(wt_util_place_far(&a, now), 1);
}

/* The vCPUs move: either way it shows once half the window's samples are of the new place
 * (the least, used before, took 64-128 samples to see far); estimates expire, and samples
 * after a longer pause start a new window. */
static void test_moves_and_expiry(void **state)
{
	wt_util_place_t p;
	uint64_t now = T0;

	(void)state;
	wt_util_place_init(&p);
	feed(&p, 130, WT_UTIL_PLACE_WINDOW, &now);
	feed(&p, 400, WT_UTIL_PLACE_WINDOW / 2 - 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 130);
	feed(&p, 400, 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 130); /* the lower median */
	feed(&p, 400, 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 400);
	feed(&p, 130, WT_UTIL_PLACE_WINDOW / 2, &now);
	assert_int_equal(wt_util_place_own(&p, now), 130);
	/* no sample for longer than the TTL: unknown again */
	now += WT_UTIL_PLACE_TTL_NS + 1;
	assert_int_equal(wt_util_place_own(&p, now), 0);
	/* and the samples from before it no longer count: a new window fills from nothing */
	feed(&p, 400, WT_UTIL_PLACE_MIN_SAMPLES - 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 0);
	feed(&p, 400, 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 400);
	/* peers' view expires too */
	feed(&p, 60, WT_UTIL_PLACE_WINDOW, &now);
	wt_util_place_set_host(&p, 60, 1, now);
	assert_int_equal(wt_util_place_far(&p, now), 0);
	now += WT_UTIL_PLACE_TTL_NS / 2;
	feed(&p, 60, 1, &now);
	now += WT_UTIL_PLACE_TTL_NS / 2 + MS;
	assert_int_equal(wt_util_place_far(&p, now), -1);
}

/* A share is asked for when the peers' estimates are missing (for a millisecond) or old,
 * and when our own estimate is known but not shared, or moved by more than a third from
 * what was; taking the request clears it. */
static void test_want(void **state)
{
	wt_util_place_t p;
	uint64_t now = T0;

	(void)state;
	wt_util_place_init(&p);
	assert_int_equal(wt_util_place_take_want(&p), 0);
	/* no peers' estimates: the first sample asks */
	feed(&p, 60, 1, &now);
	assert_int_equal(wt_util_place_take_want(&p), 1);
	assert_int_equal(wt_util_place_take_want(&p), 0);
	/* the peers shared nothing yet (n 0) a moment ago: asked again after 1 ms */
	wt_util_place_set_host(&p, 0, 0, now);
	feed(&p, 60, 1, &now);
	assert_int_equal(wt_util_place_take_want(&p), 0);
	now += MS;
	feed(&p, 60, 1, &now);
	assert_int_equal(wt_util_place_take_want(&p), 1);
	/* fresh peers' estimates: no request, until ours becomes known */
	wt_util_place_set_host(&p, 80, 1, now);
	feed(&p, 60, WT_UTIL_PLACE_MIN_SAMPLES - 4, &now);
	assert_int_equal(wt_util_place_own(&p, now), 0);
	assert_int_equal(wt_util_place_take_want(&p), 0);
	feed(&p, 60, 1, &now);
	assert_int_equal(wt_util_place_own(&p, now), 60);
	assert_int_equal(wt_util_place_take_want(&p), 1);
	/* until it is shared, every sample asks */
	feed(&p, 60, 1, &now);
	assert_int_equal(wt_util_place_take_want(&p), 1);
	wt_util_place_shared(&p, 60);
	feed(&p, 60, 2, &now);
	assert_int_equal(wt_util_place_take_want(&p), 0);
	/* moved by a third or less: no; by more: shared again */
	feed(&p, 46, WT_UTIL_PLACE_WINDOW, &now);
	assert_int_equal(wt_util_place_own(&p, now), 46);
	assert_int_equal(wt_util_place_take_want(&p), 0);
	feed(&p, 44, WT_UTIL_PLACE_WINDOW, &now);
	assert_int_equal(wt_util_place_own(&p, now), 44);
	assert_int_equal(wt_util_place_take_want(&p), 1);
	wt_util_place_shared(&p, 44);
	/* the peers' estimates grow old: asked again */
	now += WT_UTIL_PLACE_SHARE_NS;
	feed(&p, 60, 1, &now);
	assert_int_equal(wt_util_place_take_want(&p), 1);
}

/* Near by either side's view: the least known fresh estimate at or below the line. */
static void test_near_any(void **state)
{
	wt_util_place_t p;
	uint64_t now = T0;

	(void)state;
	wt_util_place_init(&p);
	assert_int_equal(wt_util_place_near_any(&p, now), 0);
	/* a late rank's high estimate with its peer's near one: near */
	feed(&p, 500, WT_UTIL_PLACE_MIN_SAMPLES, &now);
	assert_int_equal(wt_util_place_near_any(&p, now), 0);
	wt_util_place_set_host(&p, 90, 1, now);
	assert_int_equal(wt_util_place_near_any(&p, now), 1);
	assert_int_equal(wt_util_place_far(&p, now), 1); /* the mean says far */
	/* the peers' view alone, and ours alone */
	wt_util_place_set_host(&p, WT_UTIL_PLACE_FAR_NS + 1, 1, now);
	assert_int_equal(wt_util_place_near_any(&p, now), 0);
	wt_util_place_init(&p);
	feed(&p, WT_UTIL_PLACE_FAR_NS, WT_UTIL_PLACE_MIN_SAMPLES, &now);
	assert_int_equal(wt_util_place_near_any(&p, now), 1);
	/* stale: not near */
	now += WT_UTIL_PLACE_TTL_NS + 1;
	assert_int_equal(wt_util_place_near_any(&p, now), 0);
}

static void test_words(void **state)
{
	uint64_t now = T0, w;

	(void)state;
	w = wt_util_place_word(123, now);
	assert_int_equal(wt_util_place_word_ns(w, now), 123);
	assert_int_equal(wt_util_place_word_ns(w, now + WT_UTIL_PLACE_TTL_NS), 123);
	assert_int_equal(wt_util_place_word_ns(w, now + WT_UTIL_PLACE_TTL_NS + 2 * MS), 0);
	assert_int_equal(wt_util_place_word_ns(0, now), 0);
	/* the ms clock wraps at 2^32 ms: a word from just before still reads */
	now = ((uint64_t)1 << 32) * MS - MS;
	w = wt_util_place_word(77, now);
	assert_int_equal(wt_util_place_word_ns(w, now + 5 * MS), 77);
	/* a word from the future (a hostile or confused peer) is stale */
	assert_int_equal(wt_util_place_word_ns(wt_util_place_word(77, T0 + 10 * MS), T0), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_unknown_until_samples_and_peers),
	    cmocka_unit_test(test_want),
	    cmocka_unit_test(test_near_any),
	    cmocka_unit_test(test_median_and_dropped_ones),
	    cmocka_unit_test(test_mean_cancels_clock_offset),
	    cmocka_unit_test(test_moves_and_expiry),
	    cmocka_unit_test(test_words),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
