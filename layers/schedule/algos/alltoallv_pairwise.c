/* Pairwise-exchange alltoallv (layers/schedule): in step k each rank sends its part for
 * rank+k and receives the part of rank-k, at the byte offsets the count and displacement
 * vectors give (read only while building). Empty parts have no message: sender and
 * receiver agree because the user's vectors must match across ranks. In place (as MPI's
 * MPI_IN_PLACE) the recv vectors describe both directions: outgoing parts are first
 * copied to SCRATCH and every receive waits until all of them are saved. */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

static void av_plain(const wt_sched_args_t *a, wt_sched_plan_t *p, size_t es)
{
	int n = a->size, r = a->rank;

	if (a->sendcounts[r])
		wt_sched_copy(p, WT_SCHED_BUF_RECV, a->rdispls[r] * es, WT_SCHED_BUF_SEND,
			      a->sdispls[r] * es, a->sendcounts[r] * es, 0, NULL);
	for (int k = 1; k < n; k++) {
		int to = (r + k) % n, from = (r - k + n) % n;

		if (a->sendcounts[to])
			wt_sched_send(p, to, WT_SCHED_BUF_SEND, a->sdispls[to] * es,
				      a->sendcounts[to] * es, 0, NULL);
		if (a->recvcounts[from])
			wt_sched_recv(p, from, WT_SCHED_BUF_RECV, a->rdispls[from] * es,
				      a->recvcounts[from] * es, 0, NULL);
	}
}

/* Bytes of SCRATCH the outgoing parts need in place; SIZE_MAX on overflow. */
static size_t av_saved_bytes(const wt_sched_args_t *a, size_t es)
{
	size_t total = 0;

	for (int q = 0; q < a->size; q++) {
		if (q == a->rank)
			continue;
		if (a->recvcounts[q] > (SIZE_MAX - total) / es)
			return SIZE_MAX;
		total += a->recvcounts[q] * es;
	}
	return total;
}

static weft_status_t av_in_place(const wt_sched_args_t *a, wt_sched_plan_t *p, size_t es)
{
	size_t total = av_saved_bytes(a, es), off = 0;
	int n = a->size, r = a->rank, fence;

	if (total == SIZE_MAX) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "alltoallv pairwise: counts overflow");
		return WEFT_ERR_INVALID_ARG;
	}
	wt_sched_scratch(p, total);
	/* Saved in send order, so each send waits only for its own copy. */
	for (int k = 1; k < n; k++) {
		int to = (r + k) % n, v;
		size_t len = a->recvcounts[to] * es;

		if (!len)
			continue;
		v = wt_sched_copy(p, WT_SCHED_BUF_SCRATCH, off, WT_SCHED_BUF_RECV,
				  a->rdispls[to] * es, len, 0, NULL);
		wt_sched_send(p, to, WT_SCHED_BUF_SCRATCH, off, len, 1, &v);
		off += len;
	}
	/* Parts may overlap in the user's layout; receiving after every save is safe. */
	fence = wt_sched_fence(p);
	for (int k = 1; k < n; k++) {
		int from = (r - k + n) % n;

		if (a->recvcounts[from])
			wt_sched_recv(p, from, WT_SCHED_BUF_RECV, a->rdispls[from] * es,
				      a->recvcounts[from] * es, 1, &fence);
	}
	return WEFT_OK;
}

weft_status_t wt_sched_alltoallv_pairwise(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t es = wt_util_dtype_size(a->dtype);

	if (!es || a->size < 1 || !a->sendcounts || !a->sdispls || !a->recvcounts || !a->rdispls) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "alltoallv pairwise: bad dtype or size, or missing vectors");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->in_place)
		return av_in_place(a, p, es);
	if (a->sendcounts[a->rank] != a->recvcounts[a->rank]) {
		wt_sched_fail(
		    p, WEFT_ERR_INVALID_ARG,
		    "alltoallv pairwise: rank %d sends itself %zu elements but expects %zu",
		    a->rank, a->sendcounts[a->rank], a->recvcounts[a->rank]);
		return WEFT_ERR_INVALID_ARG;
	}
	av_plain(a, p, es);
	return WEFT_OK;
}
