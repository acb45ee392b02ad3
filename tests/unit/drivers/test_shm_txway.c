/* The shm producer's choice between plain and streaming stores for large ring frames
 * (drivers/shm/txway.c), driven with frame timings as a near and a far pair of cores give
 * them. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <string.h>
#include "drivers/shm/txway.h"

#define FRAME (256u << 10)

/* ns for one FRAME at gbps GB/s (bytes per ns). */
static uint64_t ns_at(double gbps)
{
	return (uint64_t)((double)FRAME / gbps);
}

/* One frame: the way picked is written at plain_gbps or nt_gbps. Returns the way. */
static int frame(wt_shm_txway_t *w, double plain_gbps, double nt_gbps, int *trial)
{
	int way = wt_shm_txway_pick(w, trial);

	wt_shm_txway_done(w, way, *trial, FRAME, ns_at(way ? nt_gbps : plain_gbps));
	return way;
}

/* Frames until the next trial; returns how many frames that took (the trial included). */
static unsigned run_round(wt_shm_txway_t *w, double plain_gbps, double nt_gbps, int *ways_ok)
{
	unsigned n = 0;
	int trial = 0, start = w->nt;

	*ways_ok = 1;
	while (!trial) {
		int way = frame(w, plain_gbps, nt_gbps, &trial);

		n++;
		if (way != (trial ? !start : start))
			*ways_ok = 0;
	}
	return n;
}

static void test_starts_plain_and_stays_when_near(void **state)
{
	wt_shm_txway_t w;
	int ok;

	(void)state;
	memset(&w, 0, sizeof(w));
	/* Near cores: plain 28 GB/s, streaming 16. Each round keeps plain and doubles the
	 * wait for the next trial: 4, 8, ... 256, then 256 again. */
	unsigned expect = WT_SHM_TXWAY_TRIAL_MIN;

	for (int r = 0; r < 9; r++) {
		assert_int_equal(run_round(&w, 28, 16, &ok), expect);
		assert_true(ok);
		assert_int_equal(w.nt, 0);
		if (expect < WT_SHM_TXWAY_TRIAL_MAX)
			expect *= 2;
	}
	assert_int_equal(expect, WT_SHM_TXWAY_TRIAL_MAX);
	assert_int_equal(w.switches, 0);
}

static void test_far_switches_to_streaming_and_back(void **state)
{
	const unsigned m = WT_SHM_TXWAY_TRIAL_MIN;
	wt_shm_txway_t w;
	int ok;

	(void)state;
	memset(&w, 0, sizeof(w));
	/* Near long enough for the trials to back off to 4m frames apart. */
	assert_int_equal(run_round(&w, 28, 16, &ok), m);
	assert_int_equal(run_round(&w, 28, 16, &ok), 2 * m);
	/* The cores move apart: plain 4 GB/s, streaming 20. The next trial switches. */
	assert_int_equal(run_round(&w, 4, 20, &ok), 4 * m);
	assert_true(ok);
	assert_int_equal(w.nt, 1);
	assert_int_equal(w.switches, 1);
	/* Streaming now; plain trials stay slow: kept, trials back off again from m. */
	assert_int_equal(run_round(&w, 4, 20, &ok), m);
	assert_true(ok);
	assert_int_equal(w.nt, 1);
	assert_int_equal(run_round(&w, 4, 20, &ok), 2 * m);
	assert_int_equal(w.nt, 1);
	/* Near again: a plain trial at 28 beats half of streaming's 16: back to plain. */
	assert_int_equal(run_round(&w, 28, 16, &ok), 4 * m);
	assert_true(ok);
	assert_int_equal(w.nt, 0);
	assert_int_equal(w.switches, 2);
	assert_int_equal(w.trial_every, m);
}

/* The cores move apart in the middle of a long round: only the frames just before the
 * trial count, so the trial switches although the round began fast. */
static void test_move_within_a_round(void **state)
{
	wt_shm_txway_t w;
	int trial, ok;

	(void)state;
	memset(&w, 0, sizeof(w));
	while (w.trial_every < WT_SHM_TXWAY_TRIAL_MAX)
		run_round(&w, 28, 16, &ok);
	assert_int_equal(w.nt, 0);
	unsigned n = 0;

	do {
		/* fast for the first half of the round, then far */
		frame(&w, n < WT_SHM_TXWAY_TRIAL_MAX / 2 ? 28 : 4, 20, &trial);
		n++;
	} while (!trial);
	assert_int_equal(n, WT_SHM_TXWAY_TRIAL_MAX);
	assert_int_equal(w.nt, 1);
}

static void test_margins_favour_plain(void **state)
{
	wt_shm_txway_t w;
	int ok;

	(void)state;
	/* Streaming must beat twice the best plain frame of the round to take over. */
	memset(&w, 0, sizeof(w));
	run_round(&w, 10, 19.5, &ok);
	assert_int_equal(w.nt, 0);
	run_round(&w, 10, 20.5, &ok);
	assert_int_equal(w.nt, 1);
	/* Plain takes back over once it reaches half of streaming's best. */
	run_round(&w, 9.5, 20, &ok);
	assert_int_equal(w.nt, 1);
	run_round(&w, 10.5, 20, &ok);
	assert_int_equal(w.nt, 0);
}

static void test_one_slow_frame_does_not_switch(void **state)
{
	wt_shm_txway_t w;
	int trial;

	(void)state;
	memset(&w, 0, sizeof(w));
	/* Plain frames at 28 GB/s, one of the last before the trial preempted (0.5 GB/s):
	 * the best of them is still 28, so a streaming trial at 16 does not take over. */
	for (unsigned i = 0; i + 1 < WT_SHM_TXWAY_TRIAL_MIN; i++)
		assert_int_equal(frame(&w, i == 1 ? 0.5 : 28, 16, &trial), 0);
	assert_int_equal(frame(&w, 28, 16, &trial), 1);
	assert_true(trial);
	assert_int_equal(w.nt, 0);
	/* A slow trial (preempted) only keeps the way. */
	memset(&w, 0, sizeof(w));
	w.nt = 1;
	for (unsigned i = 0; i + 1 < WT_SHM_TXWAY_TRIAL_MIN; i++)
		frame(&w, 28, 16, &trial);
	frame(&w, 0.5, 16, &trial);
	assert_true(trial);
	assert_int_equal(w.nt, 1);
}

static void test_forced_ways(void **state)
{
	wt_shm_txway_t w;
	int trial;

	(void)state;
	for (int f = WT_SHM_STORES_PLAIN; f <= WT_SHM_STORES_STREAM; f++) {
		memset(&w, 0, sizeof(w));
		w.forced = f;
		for (int i = 0; i < 3000; i++) {
			/* The other way is always 10x faster: a forced way never tries it. */
			int way = frame(&w, f == WT_SHM_STORES_PLAIN ? 1 : 10,
					f == WT_SHM_STORES_PLAIN ? 10 : 1, &trial);

			assert_int_equal(way, f == WT_SHM_STORES_STREAM);
			assert_false(trial);
		}
		assert_int_equal(w.switches, 0);
	}
}

static void test_zero_time_frame(void **state)
{
	wt_shm_txway_t w;
	int trial;

	(void)state;
	/* A coarse clock may read the same value around a frame: the rate saturates, no
	 * division by zero. */
	memset(&w, 0, sizeof(w));
	int way = wt_shm_txway_pick(&w, &trial);

	wt_shm_txway_done(&w, way, trial, FRAME, 0);
	assert_int_equal(w.recent[0], FRAME * 1000u);
	wt_shm_txway_done(&w, way, trial, (uint64_t)1 << 40, 0);
	assert_int_equal(w.recent[1], UINT32_MAX);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_starts_plain_and_stays_when_near),
	    cmocka_unit_test(test_far_switches_to_streaming_and_back),
	    cmocka_unit_test(test_move_within_a_round),
	    cmocka_unit_test(test_margins_favour_plain),
	    cmocka_unit_test(test_one_slow_frame_does_not_switch),
	    cmocka_unit_test(test_forced_ways),
	    cmocka_unit_test(test_zero_time_frame),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
