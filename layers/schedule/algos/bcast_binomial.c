/* Binomial-tree broadcast (layers/schedule) for small messages: ranks relative to the root
 * receive the whole vector from their parent and forward it to their children, largest
 * subtree first, so the tree is ceil(log2 n) messages deep. Works on RECV only. */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

weft_status_t wt_sched_bcast_binomial(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), bytes;
	unsigned n = (unsigned)a->size, vr, low, mask = 1;
	int got = -1;

	if (!elem || a->size < 1 || a->root < 0 || a->root >= a->size) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "bcast binomial: bad dtype, size or root");
		return WEFT_ERR_INVALID_ARG;
	}
	bytes = a->count * elem;
	if (n == 1 || bytes == 0)
		return WEFT_OK;
	vr = ((unsigned)a->rank + n - (unsigned)a->root) % n;
	/* The parent is vr without its lowest set bit; children add the bits below it. */
	low = vr ? (vr & -vr) : n;
	if (vr != 0)
		got = wt_sched_recv(p, (int)((vr - low + (unsigned)a->root) % n), WT_SCHED_BUF_RECV,
				    0, bytes, 0, NULL);
	while (mask * 2 < low)
		mask *= 2;
	for (; mask > 0 && mask < low; mask >>= 1) {
		if (vr + mask >= n)
			continue;
		wt_sched_send(p, (int)((vr + mask + (unsigned)a->root) % n), WT_SCHED_BUF_RECV, 0,
			      bytes, got >= 0 ? 1 : 0, got >= 0 ? &got : NULL);
	}
	return WEFT_OK;
}
