/* Pairwise-exchange alltoall (layers/schedule): in step k each rank sends its block for
 * rank+k and receives the block of rank-k, so every link carries one block per step; the
 * own block is a local copy. In place, every outgoing block is first copied to SCRATCH
 * (same layout as RECV) and the receive overwriting a block waits for its copy. */
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

weft_status_t wt_sched_alltoall_pairwise(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), blk;
	int n = a->size, r = a->rank, *saved = NULL, big;
	wt_sched_buf_t src = a->in_place ? WT_SCHED_BUF_SCRATCH : WT_SCHED_BUF_SEND;

	if (!elem || n < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "alltoall pairwise: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	blk = a->count * elem;
	if (blk == 0)
		return WEFT_OK;
	/* Every block lands once in RECV and is not read again by the call. */
	big = blk * (size_t)n >= WT_SCHED_STREAM_MIN;
	if (!a->in_place) {
		(big ? wt_sched_copy_stream : wt_sched_copy)(p, WT_SCHED_BUF_RECV, (size_t)r * blk,
							     WT_SCHED_BUF_SEND, (size_t)r * blk,
							     blk, 0, NULL);
	} else if (n > 1) {
		saved = malloc((size_t)n * sizeof(*saved));
		if (!saved) {
			wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "alltoall pairwise: out of memory");
			return WEFT_ERR_NO_MEMORY;
		}
		wt_sched_scratch(p, (size_t)n * blk);
		/* Saved in send order, so the first exchanges can start first. */
		for (int k = 1; k < n; k++) {
			int j = (r + k) % n;

			saved[j] = wt_sched_copy(p, WT_SCHED_BUF_SCRATCH, (size_t)j * blk,
						 WT_SCHED_BUF_RECV, (size_t)j * blk, blk, 0, NULL);
		}
	}
	for (int k = 1; k < n; k++) {
		int to = (r + k) % n, from = (r - k + n) % n;

		wt_sched_send(p, to, src, (size_t)to * blk, blk, saved ? 1 : 0,
			      saved ? &saved[to] : NULL);
		(big ? wt_sched_recv_stream : wt_sched_recv)(p, from, WT_SCHED_BUF_RECV,
							     (size_t)from * blk, blk, saved ? 1 : 0,
							     saved ? &saved[from] : NULL);
	}
	free(saved);
	return WEFT_OK;
}
