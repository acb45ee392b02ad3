/* weft-perf's time budget per size (-T; bench/mpi_bench -T, and bench/gloo_bench.py's copy
 * in Python): how many calls a size runs when its calls take per_call seconds, and the span
 * timing of -S. One header, so that weft-perf and the MPI program cut and time their calls
 * by the same rules. */
#ifndef WEFT_BENCH_BUDGET_H
#define WEFT_BENCH_BUDGET_H

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>

/* The budget never cuts below these (nor raises a band's own count): timing 20 calls after 5
 * warm-ups, every size is measured at least as the bands of old measured it. */
#define BUDGET_LEAST_ITERS 20
#define BUDGET_LEAST_WARMUP 5

/* -T's value: a number of seconds, 0 (off) to 1e9; nan, inf and trailing text refused. */
static inline bool budget_parse_seconds(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno != 0 || end == s || *end != '\0' || !(v >= 0 && v <= 1e9))
		return false;
	*out = v;
	return true;
}

/* min(cap, max(least, floor(share / per_call))), in double so that no int overflows. */
static inline int budget_count(int cap, int least, double share, double per_call)
{
	double k = per_call > 0 ? share / per_call : (double)cap;

	if (least > cap)
		least = cap;
	if (least < 1)
		least = 1;
	if (k >= (double)cap)
		return cap;
	return k < least ? least : (int)k;
}

/* The warm-ups of a band of `band` of them whose first call took t1 seconds (the slowest
 * rank's): within a fifth of the budget, that first call among them, so at least 1 even for
 * a band without warm-ups (the first call ran). */
static inline int budget_warmups(int band, double budget, double t1)
{
	int w = budget_count(band, BUDGET_LEAST_WARMUP, 0.2 * budget, t1);

	return w < 1 ? 1 : w;
}

/* The timed calls of a band of `band` of them at tw seconds a call (the slowest rank's). */
static inline int budget_iters(int band, double budget, double tw)
{
	return budget_count(band, BUDGET_LEAST_ITERS, budget, tw);
}

/* -S (weft-perf, mpi_bench, gloo_bench.py): starts of the timed calls more than this many
 * seconds apart after a barrier say the ranks' clocks are not one host's. */
#define BUDGET_SPAN_CLOCKS_S 1.0

/* -S's seconds per call, from the largest over the ranks of {start, -start, end} of iters
 * timed calls on CLOCK_MONOTONIC: the first start to the last end, over iters; -1 when the
 * starts lie more than BUDGET_SPAN_CLOCKS_S apart. */
static inline double budget_span_per_call(const double max3[3], int iters)
{
	if (max3[0] + max3[1] > BUDGET_SPAN_CLOCKS_S)
		return -1;
	return (max3[2] + max3[1]) / iters;
}

#endif
