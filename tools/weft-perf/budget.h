/* weft-perf's time budget per size (-T; bench/mpi_bench -T, and bench/gloo_bench.py's copy
 * in Python): how many calls a size runs when its calls take per_call seconds. One header, so
 * that weft-perf and the MPI program cut their counts by the same rule. */
#ifndef WEFT_BENCH_BUDGET_H
#define WEFT_BENCH_BUDGET_H

/* The budget never cuts below these (nor raises a band's own count): timing 20 calls after 5
 * warm-ups, every size is measured at least as the bands of old measured it. */
#define BUDGET_LEAST_ITERS 20
#define BUDGET_LEAST_WARMUP 5

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

#endif
