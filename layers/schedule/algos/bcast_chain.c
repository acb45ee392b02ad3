/* Pipelined chain broadcast (layers/schedule) for large messages: root -> root+1 -> ... ->
 * root-1, the vector cut into segments that each rank forwards as soon as they arrive, so
 * the time approaches one message's transfer plus n-2 segments. Works on RECV only. */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

weft_status_t wt_sched_bcast_chain(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), bytes, seg;
	int n = a->size, vr, prev, next;

	if (!elem || n < 1 || a->root < 0 || a->root >= n) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "bcast chain: bad dtype, size or root");
		return WEFT_ERR_INVALID_ARG;
	}
	bytes = a->count * elem;
	if (n == 1 || bytes == 0)
		return WEFT_OK;
	/* Whole elements per segment keep every rank's cut identical and aligned. */
	seg = a->seg_bytes ? a->seg_bytes : WT_SCHED_DEFAULT_SEG_BYTES;
	seg = seg / elem ? seg / elem * elem : elem;
	vr = (a->rank - a->root + n) % n;
	prev = (a->rank - 1 + n) % n;
	next = (a->rank + 1) % n;
	for (size_t off = 0; off < bytes; off += seg) {
		size_t len = bytes - off < seg ? bytes - off : seg;
		int got = -1;

		if (vr != 0)
			got = wt_sched_recv(p, prev, WT_SCHED_BUF_RECV, off, len, 0, NULL);
		if (vr == n - 1)
			continue;
		wt_sched_send(p, next, WT_SCHED_BUF_RECV, off, len, got >= 0 ? 1 : 0,
			      got >= 0 ? &got : NULL);
	}
	return WEFT_OK;
}
