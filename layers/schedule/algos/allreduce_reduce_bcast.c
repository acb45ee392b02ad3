/* Reduce-then-broadcast allreduce (layers/schedule): a binomial tree reduces the vector
 * into rank 0, which finishes AVG and sends the result back down the same tree. The folds
 * of a rank's children are chained so arrival order cannot change the result.
 * Combination order: at each rank, acc = ((x_r op child r+1) op child r+2) op child r+4 ...
 * (every child's value being its own subtree's result). */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

static int dep_add(int *deps, int nd, int v)
{
	if (v >= 0)
		deps[nd++] = v;
	return nd;
}

/* Children are r + mask for every mask below r's lowest set bit (all masks for rank 0). */
static int low_bit(int r, int n)
{
	int m = 1;

	if (r == 0) {
		while (m < n)
			m *= 2;
		return m;
	}
	while (!(r & m))
		m *= 2;
	return m;
}

weft_status_t wt_sched_allreduce_reduce_bcast(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), bytes = a->count * elem;
	int n = a->size, r = a->rank, top, last = -1, up = -1, deps[1];
	wt_sched_buf_t in = a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;

	if (!elem || n < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "reduce_bcast: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	if (n == 1 || !bytes)
		return wt_sched_allreduce_local(a, p);
	top = low_bit(r, n);
	/* A leaf sends its input as it is; an inner rank accumulates in RECV. */
	if (top > 1 && r + 1 < n && in == WT_SCHED_BUF_SEND)
		last = wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, bytes, 0, NULL);
	for (int m = 1; m < top && r + m < n; m *= 2)
		last = wt_sched_recv_reduce(p, r + m, WT_SCHED_BUF_RECV, 0, bytes,
					    dep_add(deps, 0, last), deps);
	if (r) {
		wt_sched_buf_t src = last >= 0 ? WT_SCHED_BUF_RECV : in;

		up = wt_sched_send(p, r - top, src, 0, bytes, dep_add(deps, 0, last), deps);
		/* The result overwrites RECV, which that send may still be reading. */
		last = wt_sched_recv(p, r - top, WT_SCHED_BUF_RECV, 0, bytes,
				     src == WT_SCHED_BUF_RECV ? dep_add(deps, 0, up) : 0, deps);
	} else if (a->op == WEFT_AVG) {
		last = wt_sched_div(p, WT_SCHED_BUF_RECV, 0, bytes, dep_add(deps, 0, last), deps);
	}
	/* Largest subtree first: it has the longest way to go. */
	for (int m = top / 2; m >= 1; m /= 2)
		if (r + m < n)
			wt_sched_send(p, r + m, WT_SCHED_BUF_RECV, 0, bytes, dep_add(deps, 0, last),
				      deps);
	return WEFT_OK;
}
