/* Bruck allgather (layers/schedule): ceil(log2 n) rounds for any n. Scratch holds the
 * blocks in the order r, r+1, ..., r-1; round k sends the first min(2^k, n-2^k) of them
 * to rank r-2^k and appends as many from rank r+2^k; a final local rotation puts every
 * block at its place in RECV. Combination order: none (blocks are only moved). */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

/* The own-block copy and one receive per round of up to 2^31 ranks. */
#define AGB_MAX_WRITES 33

weft_status_t wt_sched_allgather_bruck(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), block = a->count * elem, own, off;
	int n = a->size, r = a->rank, writes[AGB_MAX_WRITES], nw = 0;
	wt_sched_buf_t src = a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;

	if (!elem || n < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "allgather bruck: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	if (!block)
		return WEFT_OK;
	own = (size_t)r * block;
	off = a->in_place ? own : 0;
	if (!a->in_place)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, own, WT_SCHED_BUF_SEND, 0, block, 0, NULL);
	if (n == 1)
		return WEFT_OK;
	wt_sched_scratch(p, (size_t)n * block);
	writes[nw++] = wt_sched_copy(p, WT_SCHED_BUF_SCRATCH, 0, src, off, block, 0, NULL);
	for (int d = 1; d < n; d *= 2) {
		size_t cnt = (size_t)(d < n - d ? d : n - d) * block;
		int to = (r - d + n) % n, from = (r + d) % n;

		/* The blocks sent were written by the own copy and earlier rounds only. */
		wt_sched_send(p, to, WT_SCHED_BUF_SCRATCH, 0, cnt, nw, writes);
		writes[nw++] =
		    wt_sched_recv(p, from, WT_SCHED_BUF_SCRATCH, (size_t)d * block, cnt, 0, NULL);
	}
	/* Scratch block i is rank (r + i) % n's: blocks 1..n-r-1 go after the own block,
	 * n-r..n-1 to the front. The own block is already in place. */
	if (r + 1 < n)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, own + block, WT_SCHED_BUF_SCRATCH, block,
			      (size_t)(n - r - 1) * block, nw, writes);
	if (r > 0)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH,
			      (size_t)(n - r) * block, own, nw, writes);
	return WEFT_OK;
}
