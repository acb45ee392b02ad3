/* Pipelined chain reduce (layers/schedule) for large messages: root-1 -> root-2 -> ... ->
 * root+1 -> root, segment by segment, each rank folding its own data into what arrives
 * and forwarding at once. Middle ranks accumulate in SCRATCH; the root in RECV.
 * Combination order: rank root+i computes v(i) op (what root+i+1 sent), i.e. the fixed
 * right fold v0 op (v1 op (... op v(n-1))) over ranks relative to the root. */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

weft_status_t wt_sched_reduce_chain(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), bytes, seg;
	int n = a->size, vr, from, to;
	wt_sched_buf_t acc;

	if (!elem || n < 1 || a->root < 0 || a->root >= n) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "reduce chain: bad dtype, size or root");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->in_place && a->rank != a->root) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "reduce chain: in place is the root's form only (rank %d, root %d)",
			      a->rank, a->root);
		return WEFT_ERR_INVALID_ARG;
	}
	bytes = a->count * elem;
	if (bytes == 0)
		return WEFT_OK;
	vr = (a->rank - a->root + n) % n;
	from = (a->rank + 1) % n;
	to = (a->rank - 1 + n) % n;
	acc = vr ? WT_SCHED_BUF_SCRATCH : WT_SCHED_BUF_RECV;
	if (vr != 0 && vr != n - 1)
		wt_sched_scratch(p, bytes);
	seg = a->seg_bytes ? a->seg_bytes : WT_SCHED_DEFAULT_SEG_BYTES;
	seg = seg / elem ? seg / elem * elem : elem;
	for (size_t off = 0; off < bytes; off += seg) {
		size_t len = bytes - off < seg ? bytes - off : seg;
		int last = -1;

		if (vr != 0 && vr == n - 1) {
			/* The chain's start sends its input untouched. */
			wt_sched_send(p, to, WT_SCHED_BUF_SEND, off, len, 0, NULL);
			continue;
		}
		if (vr != 0 || !a->in_place)
			last = wt_sched_copy(p, acc, off, WT_SCHED_BUF_SEND, off, len, 0, NULL);
		if (n > 1)
			last = wt_sched_recv_reduce(p, from, acc, off, len, last >= 0 ? 1 : 0,
						    last >= 0 ? &last : NULL);
		if (vr != 0)
			wt_sched_send(p, to, acc, off, len, 1, &last);
		else if (a->op == WEFT_AVG && n > 1)
			wt_sched_div(p, acc, off, len, 1, &last);
	}
	return WEFT_OK;
}
