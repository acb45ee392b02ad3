/* Pairwise reduce-scatter (layers/schedule): at step s every rank sends block r+s of its
 * input straight to rank r+s and folds what rank r-s sent into its own block. The folds
 * are chained so the result does not depend on which message arrives first.
 * Combination order: block r = (((x_r op x_{r-1}) op x_{r-2}) ... op x_{r+1}). */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

weft_status_t wt_sched_reduce_scatter_pairwise(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), block = a->count * elem;
	int n = a->size, r = a->rank, last = -1;

	if (!elem || n < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "reduce_scatter pairwise: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	if (!block)
		return WEFT_OK;
	/* In place RECV is the own input block already; no step below reads that block of
	 * SEND, so writing RECV needs no edge to the sends. Out of place the first receive
	 * combines the own block of SEND with the incoming one straight into RECV. */
	if (!a->in_place && n == 1)
		last = wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, (size_t)r * block,
				     block, 0, NULL);
	for (int s = 1; s < n; s++) {
		int to = (r + s) % n, from = (r - s + n) % n, prev = last;

		wt_sched_send(p, to, WT_SCHED_BUF_SEND, (size_t)to * block, block, 0, NULL);
		if (s == 1 && !a->in_place)
			last = wt_sched_recv_reduce_from(p, from, WT_SCHED_BUF_RECV, 0,
							 WT_SCHED_BUF_SEND, (size_t)r * block,
							 block, 0, NULL);
		else
			last = wt_sched_recv_reduce(p, from, WT_SCHED_BUF_RECV, 0, block, prev >= 0,
						    &prev);
	}
	if (a->op == WEFT_AVG && n > 1)
		wt_sched_div(p, WT_SCHED_BUF_RECV, 0, block, last >= 0, &last);
	return WEFT_OK;
}
