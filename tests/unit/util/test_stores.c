/* The choice between plain and streaming stores for large copies into shared memory
 * (lib/util/stores.c), driven with copy timings as a near and a far pair of cores give
 * them, and the timed copy itself. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include "lib/util/place.h"
#include "lib/util/stores.h"
#include "lib/util/time.h"

#define FRAME (256u << 10)

/* ns for one FRAME at gbps GB/s (bytes per ns). */
static uint64_t ns_at(double gbps)
{
	return (uint64_t)((double)FRAME / gbps);
}

/* One frame: the way picked is written at plain_gbps or nt_gbps. Returns the way. */
static int frame(wt_util_stores_t *w, double plain_gbps, double nt_gbps, int *trial)
{
	int way = wt_util_stores_pick(w, trial);

	wt_util_stores_done(w, *trial, FRAME, ns_at(way ? nt_gbps : plain_gbps));
	return way;
}

/* Frames until the next trial; returns how many frames that took (the trial included). */
static unsigned run_round(wt_util_stores_t *w, double plain_gbps, double nt_gbps, int *ways_ok)
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
	wt_util_stores_t w;
	int ok;

	(void)state;
	memset(&w, 0, sizeof(w));
	/* Near cores: plain 28 GB/s, streaming 16. Each round keeps plain and doubles the
	 * wait for the next trial: 4, 8, ... 256, then 256 again. */
	unsigned expect = WT_UTIL_STORES_TRIAL_MIN;

	for (int r = 0; r < 9; r++) {
		assert_int_equal(run_round(&w, 28, 16, &ok), expect);
		assert_true(ok);
		assert_int_equal(w.nt, 0);
		if (expect < WT_UTIL_STORES_TRIAL_MAX)
			expect *= 2;
	}
	assert_int_equal(expect, WT_UTIL_STORES_TRIAL_MAX);
	assert_int_equal(w.switches, 0);
}

static void test_far_switches_to_streaming_and_back(void **state)
{
	const unsigned m = WT_UTIL_STORES_TRIAL_MIN;
	wt_util_stores_t w;
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
	/* Near again: a plain trial at 28 beats 1.5 times streaming's 16: back to plain. */
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
	wt_util_stores_t w;
	int trial, ok;

	(void)state;
	memset(&w, 0, sizeof(w));
	while (w.trial_every < WT_UTIL_STORES_TRIAL_MAX)
		run_round(&w, 28, 16, &ok);
	assert_int_equal(w.nt, 0);
	unsigned n = 0;

	do {
		/* fast for the first half of the round, then far */
		frame(&w, n < WT_UTIL_STORES_TRIAL_MAX / 2 ? 28 : 4, 20, &trial);
		n++;
	} while (!trial);
	assert_int_equal(n, WT_UTIL_STORES_TRIAL_MAX);
	assert_int_equal(w.nt, 1);
}

static void test_margins(void **state)
{
	wt_util_stores_t w;
	int ok;

	(void)state;
	/* Streaming must beat 1.5 times the median plain frame of the round to take over. */
	memset(&w, 0, sizeof(w));
	run_round(&w, 10, 14.5, &ok);
	assert_int_equal(w.nt, 0);
	run_round(&w, 10, 15.5, &ok);
	assert_int_equal(w.nt, 1);
	/* Plain takes back over once it beats 1.5 times streaming's median. */
	run_round(&w, 29.5, 20, &ok);
	assert_int_equal(w.nt, 1);
	run_round(&w, 30.5, 20, &ok);
	assert_int_equal(w.nt, 0);
}

/* Frames of a round in two speeds: three of every four plain frames slow (far), one fast
 * (a 4 MiB broadcast in 4 parts, measured: 5-7 GB/s and 11-31). The median is the slow
 * one, so streaming at 12 takes over; with the best of the round as the bar it never did. */
static void test_bimodal_round_switches(void **state)
{
	wt_util_stores_t w;
	int trial = 0;
	unsigned n = 0;

	(void)state;
	memset(&w, 0, sizeof(w));
	while (!trial) {
		frame(&w, n % 4 == 3 ? 28 : 6, 12, &trial);
		n++;
	}
	assert_int_equal(n, WT_UTIL_STORES_TRIAL_MIN);
	assert_int_equal(w.nt, 1);
	assert_int_equal(w.switches, 1);
	/* Streamed frames at 12 now; a plain trial at 6 keeps streaming. */
	trial = 0;
	while (!trial)
		frame(&w, 6, 12, &trial);
	assert_int_equal(w.nt, 1);
}

static void test_one_slow_frame_does_not_switch(void **state)
{
	wt_util_stores_t w;
	int trial;

	(void)state;
	memset(&w, 0, sizeof(w));
	/* Plain frames at 28 GB/s, one of the last before the trial preempted (0.5 GB/s):
	 * their median is still 28, so a streaming trial at 16 does not take over. */
	for (unsigned i = 0; i + 1 < WT_UTIL_STORES_TRIAL_MIN; i++)
		assert_int_equal(frame(&w, i == 1 ? 0.5 : 28, 16, &trial), 0);
	assert_int_equal(frame(&w, 28, 16, &trial), 1);
	assert_true(trial);
	assert_int_equal(w.nt, 0);
	/* A slow trial (preempted) only keeps the way. */
	memset(&w, 0, sizeof(w));
	w.nt = 1;
	for (unsigned i = 0; i + 1 < WT_UTIL_STORES_TRIAL_MIN; i++)
		frame(&w, 28, 16, &trial);
	frame(&w, 0.5, 16, &trial);
	assert_true(trial);
	assert_int_equal(w.nt, 1);
}

static void test_forced_ways(void **state)
{
	wt_util_stores_t w;
	int trial;

	(void)state;
	for (int f = WT_UTIL_STORES_PLAIN; f <= WT_UTIL_STORES_STREAM; f++) {
		memset(&w, 0, sizeof(w));
		w.forced = f;
		for (int i = 0; i < 3000; i++) {
			/* The other way is always 10x faster: a forced way never tries it. */
			int way = frame(&w, f == WT_UTIL_STORES_PLAIN ? 1 : 10,
					f == WT_UTIL_STORES_PLAIN ? 10 : 1, &trial);

			assert_int_equal(way, f == WT_UTIL_STORES_STREAM);
			assert_false(trial);
		}
		assert_int_equal(w.switches, 0);
	}
}

static void test_zero_time_frame(void **state)
{
	wt_util_stores_t w;
	int trial;

	(void)state;
	/* A coarse clock may read the same value around a frame: the rate saturates, no
	 * division by zero. */
	memset(&w, 0, sizeof(w));
	assert_int_equal(wt_util_stores_pick(&w, &trial), 0);
	wt_util_stores_done(&w, trial, FRAME, 0);
	assert_int_equal(w.recent[0], FRAME * 1000u);
	wt_util_stores_done(&w, trial, (uint64_t)1 << 40, 0);
	assert_int_equal(w.recent[1], UINT32_MAX);
}

/* The timed copy, each way and automatic, around the timed size: exactly the source's
 * bytes, nothing around them, and only copies from WT_UTIL_STORES_MIN_COPY are timed. */
static void test_copy_each_way(void **state)
{
	enum { PAD = 64 };
	const size_t lens[] = {0,
			       1,
			       4095,
			       WT_UTIL_STORES_MIN_COPY - 1,
			       WT_UTIL_STORES_MIN_COPY,
			       WT_UTIL_STORES_MIN_COPY + 13,
			       200000};
	const size_t max = 200000 + 2 * PAD + 64;
	uint8_t *src = malloc(max), *dst = malloc(max);

	(void)state;
	assert_non_null(src);
	assert_non_null(dst);
	for (size_t i = 0; i < max; i++)
		src[i] = (uint8_t)(i * 37 + 11);
	for (int f = WT_UTIL_STORES_AUTO; f <= WT_UTIL_STORES_STREAM; f++) {
		wt_util_stores_t w;
		uint32_t timed = 0;

		memset(&w, 0, sizeof(w));
		w.forced = f;
		for (size_t k = 0; k < sizeof(lens) / sizeof(lens[0]); k++)
			for (size_t off = 0; off < 64; off += 24) {
				size_t len = lens[k];

				memset(dst, 0xee, max);
				wt_util_stores_copy(&w, dst + PAD + off, src + off, len);
				for (size_t i = 0; i < PAD + off; i++)
					assert_int_equal(dst[i], 0xee);
				if (len)
					assert_memory_equal(dst + PAD + off, src + off, len);
				for (size_t i = PAD + off + len; i < max; i++)
					assert_int_equal(dst[i], 0xee);
				timed += len >= WT_UTIL_STORES_MIN_COPY;
			}
		/* Automatic: the 9 large copies were counted: without a switch, copy 4 was the
		 * trial (the next due at 12), so 8 of the way in use and 5 since the trial. Forced
		 * ways time nothing. */
		assert_int_equal(timed, 9);
		if (f == WT_UTIL_STORES_AUTO && w.switches == 0) {
			assert_int_equal(w.nrecent, 8);
			assert_int_equal(w.timed, 5);
		} else if (f == WT_UTIL_STORES_AUTO) {
			assert_true(w.timed < w.trial_every);
		} else {
			assert_int_equal(w.timed + w.nrecent + w.switches, 0);
		}
	}
	free(src);
	free(dst);
}

/* n frames with the placement far (0 near, 1 far) under AUTO: every one the way it means
 * (plain near, streaming far) and none a trial, each timed at gbps. */
static void placed_untimed(wt_util_stores_t *w, int far, unsigned n, double gbps)
{
	int trial;

	for (unsigned i = 0; i < n; i++) {
		assert_int_equal(wt_util_stores_pick_placed(w, far, &trial), far);
		assert_int_equal(trial, 0);
		wt_util_stores_done(w, trial, FRAME, ns_at(gbps));
	}
}

/* Under AUTO near cores mean plain stores and far ones streaming stores, with no trials;
 * unknown ones leave the choice to timing, which TIMED always does. */
static void test_placement(void **state)
{
	wt_util_stores_t w = {0};
	int trial, way;

	(void)state;
	/* timing has gone to streaming (far frames: plain at 3 GB/s, streaming at 20) */
	for (int i = 0; i < 8 && !w.nt; i++)
		frame(&w, 3, 20, &trial);
	assert_int_equal(w.nt, 1);
	/* near now: plain at once, and a hundred frames bring no trial */
	placed_untimed(&w, 0, 100, 30);
	assert_int_equal(w.nt, 0);
	assert_int_equal(w.switches, 2);
	/* unknown: timing again, so a trial of streaming comes within its period */
	int trials = 0;

	for (unsigned i = 0; i < WT_UTIL_STORES_TRIAL_MAX; i++) {
		way = wt_util_stores_pick_placed(&w, -1, &trial);
		trials += trial;
		wt_util_stores_done(&w, trial, FRAME, ns_at(way ? 20 : 30));
	}
	assert_true(trials >= 1);
	assert_int_equal(w.nt, 0);
	assert_int_equal(w.switches, 2);
	/* far: streaming at once, and no trial of plain however fast plain would look */
	placed_untimed(&w, 1, 2 * WT_UTIL_STORES_TRIAL_MAX, 1);
	assert_int_equal(w.nt, 1);
	assert_int_equal(w.switches, 3);
	/* near again: plain at once */
	assert_int_equal(wt_util_stores_pick_placed(&w, 0, &trial), 0);
	assert_int_equal(trial, 0);
	assert_int_equal(w.switches, 4);
	/* TIMED: near cores change nothing, trials come */
	w = (wt_util_stores_t){.forced = WT_UTIL_STORES_TIMED};
	trials = 0;
	for (int i = 0; i < 8; i++) {
		way = wt_util_stores_pick_placed(&w, 0, &trial);
		trials += trial;
		wt_util_stores_done(&w, trial, FRAME, ns_at(way ? 20 : 3));
		if (i == 7)
			assert_true(trials >= 1 && w.nt == 1);
	}
	/* PLAIN and STREAM stay fixed whatever the placement */
	w = (wt_util_stores_t){.forced = WT_UTIL_STORES_STREAM};
	assert_int_equal(wt_util_stores_pick_placed(&w, 0, &trial), 1);
	w = (wt_util_stores_t){.forced = WT_UTIL_STORES_PLAIN};
	assert_int_equal(wt_util_stores_pick_placed(&w, 1, &trial), 0);
}

/* ns for a copy of len bytes at gbps. */
static uint64_t mid_ns(size_t len, double gbps)
{
	return (uint64_t)((double)len / gbps);
}

/* n copies of len bytes through pick_mid, plain ones timed at plain_gbps; returns how
 * many were streamed. */
static unsigned mid_run(wt_util_stores_t *w, size_t len, unsigned n, double plain_gbps)
{
	unsigned nt = 0;
	int timed;

	for (unsigned i = 0; i < n; i++) {
		int way = wt_util_stores_pick_mid(w, len, &timed);

		if (timed) {
			assert_int_equal(way, 0);
			wt_util_stores_mid_done(w, len, mid_ns(len, plain_gbps));
		}
		nt += (unsigned)way;
	}
	return nt;
}

/* Copies of MID_MIN up to MIN_COPY bytes under AUTO: plain while timed plain ones run at
 * MID_SLOW bytes per ns or faster (one in MID_EVERY timed), streaming after two slow ones
 * in a row, back to plain after a fast trial (one in MID_TRIAL); smaller, larger and
 * forced ones are never picked so, and the copy itself lands the bytes. */
static void test_mid_copies(void **state)
{
	enum { MID = 8192 };
	wt_util_stores_t w = {0};
	int timed;

	(void)state;
	/* near: 25 GB/s plain, no streaming, one in MID_EVERY timed */
	assert_int_equal(mid_run(&w, MID, 8 * WT_UTIL_STORES_MID_EVERY, 25), 0);
	assert_int_equal(w.mid_nt, 0);
	/* far: 3 GB/s plain: two timed ones slow, then streaming */
	assert_int_equal(mid_run(&w, MID, 2 * WT_UTIL_STORES_MID_EVERY, 3), 0);
	assert_int_equal(w.mid_nt, 1);
	/* streaming, with a plain trial every MID_TRIAL that stays slow */
	assert_int_equal(mid_run(&w, MID, 4 * WT_UTIL_STORES_MID_TRIAL, 3),
			 4 * (WT_UTIL_STORES_MID_TRIAL - 1));
	assert_int_equal(w.mid_streamed, 4 * (WT_UTIL_STORES_MID_TRIAL - 1));
	/* near again: the next trial is fast, plain from there */
	assert_true(mid_run(&w, MID, WT_UTIL_STORES_MID_TRIAL, 25) < WT_UTIL_STORES_MID_TRIAL);
	assert_int_equal(w.mid_nt, 0);
	assert_int_equal(mid_run(&w, MID, WT_UTIL_STORES_MID_TRIAL, 25), 0);
	/* streaming again, and the cores near by one side's view: streaming ends at the next
	 * trial's turn, whatever the plain copies cost */
	assert_int_equal(mid_run(&w, MID, 2 * WT_UTIL_STORES_MID_EVERY, 3), 0);
	assert_int_equal(w.mid_nt, 1);
	wt_util_place_set_host(wt_util_place_self(), 60, 1, wt_util_time_ns());
	{
		unsigned k = 0;

		while (w.mid_nt && k++ < WT_UTIL_STORES_MID_TRIAL) {
			wt_util_stores_pick_mid(&w, MID, &timed);
			assert_int_equal(timed, 0); /* no trial needed */
		}
		assert_true(k <= WT_UTIL_STORES_MID_TRIAL);
		assert_int_equal(w.mid_nt, 0);
	}
	wt_util_place_init(wt_util_place_self());
	/* one slow copy alone (preempted) does not switch */
	mid_run(&w, MID, WT_UTIL_STORES_MID_EVERY, 3);
	assert_int_equal(mid_run(&w, MID, 4 * WT_UTIL_STORES_MID_EVERY, 25), 0);
	assert_int_equal(w.mid_nt, 0);
	/* sizes outside the band, and forced ways: plain, untimed */
	w.mid_nt = 1;
	for (int i = 0; i < 100; i++) {
		assert_int_equal(wt_util_stores_pick_mid(&w, WT_UTIL_STORES_MID_MIN - 1, &timed),
				 0);
		assert_int_equal(timed, 0);
		assert_int_equal(wt_util_stores_pick_mid(&w, WT_UTIL_STORES_MIN_COPY, &timed), 0);
		assert_int_equal(timed, 0);
	}
	for (int f = WT_UTIL_STORES_PLAIN; f <= WT_UTIL_STORES_TIMED; f++) {
		w = (wt_util_stores_t){.forced = f, .mid_nt = 1};
		for (int i = 0; i < 100; i++) {
			assert_int_equal(wt_util_stores_pick_mid(&w, MID, &timed), 0);
			assert_int_equal(timed, 0);
		}
	}
	/* the copy: streamed or plain, timed or not, the bytes land and nothing else moves */
	{
		uint8_t *src = malloc(MID), *dst = malloc(MID + 64);

		assert_true(src && dst);
		for (int nt = 0; nt < 2; nt++) {
			w = (wt_util_stores_t){.mid_nt = nt};
			for (unsigned i = 0; i < 2 * WT_UTIL_STORES_MID_EVERY; i++) {
				for (size_t j = 0; j < MID; j++)
					src[j] = (uint8_t)(i * 7 + j * 13 + (unsigned)nt);
				memset(dst, 0xee, MID + 64);
				wt_util_stores_copy(&w, dst, src, MID);
				assert_memory_equal(dst, src, MID);
				for (size_t j = MID; j < MID + 64; j++)
					assert_int_equal(dst[j], 0xee);
			}
			assert_int_equal(w.mid_n, 2 * WT_UTIL_STORES_MID_EVERY);
		}
		free(src);
		free(dst);
	}
}

static void test_setting(void **state)
{
	static const char *const bad[] = {"nt", "Stream", "plain ", "auto1", "1"};
	char err[160];
	int f = -1;

	(void)state;
	unsetenv("WEFT_SHM_STORES");
	assert_int_equal(wt_util_stores_setting(&f, err, sizeof(err)), WEFT_OK);
	assert_int_equal(f, WT_UTIL_STORES_AUTO);
	setenv("WEFT_SHM_STORES", "auto", 1);
	assert_int_equal(wt_util_stores_setting(&f, err, sizeof(err)), WEFT_OK);
	assert_int_equal(f, WT_UTIL_STORES_AUTO);
	setenv("WEFT_SHM_STORES", "plain", 1);
	assert_int_equal(wt_util_stores_setting(&f, err, sizeof(err)), WEFT_OK);
	assert_int_equal(f, WT_UTIL_STORES_PLAIN);
	setenv("WEFT_SHM_STORES", "stream", 1);
	assert_int_equal(wt_util_stores_setting(&f, err, sizeof(err)), WEFT_OK);
	assert_int_equal(f, WT_UTIL_STORES_STREAM);
	setenv("WEFT_SHM_STORES", "timed", 1);
	assert_int_equal(wt_util_stores_setting(&f, err, sizeof(err)), WEFT_OK);
	assert_int_equal(f, WT_UTIL_STORES_TIMED);
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		setenv("WEFT_SHM_STORES", bad[i], 1);
		assert_int_equal(wt_util_stores_setting(&f, err, sizeof(err)),
				 WEFT_ERR_INVALID_ARG);
		assert_non_null(strstr(err, "WEFT_SHM_STORES"));
		assert_non_null(strstr(err, bad[i]));
	}
	unsetenv("WEFT_SHM_STORES");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_starts_plain_and_stays_when_near),
	    cmocka_unit_test(test_far_switches_to_streaming_and_back),
	    cmocka_unit_test(test_move_within_a_round),
	    cmocka_unit_test(test_margins),
	    cmocka_unit_test(test_bimodal_round_switches),
	    cmocka_unit_test(test_one_slow_frame_does_not_switch),
	    cmocka_unit_test(test_forced_ways),
	    cmocka_unit_test(test_zero_time_frame),
	    cmocka_unit_test(test_copy_each_way),
	    cmocka_unit_test(test_placement),
	    cmocka_unit_test(test_mid_copies),
	    cmocka_unit_test(test_setting),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
