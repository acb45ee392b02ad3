/* Dissemination barrier (layers/schedule): in round k every rank sends an empty message to
 * rank+2^k once it has received every earlier round's message, so after ceil(log2 n)
 * rounds each rank has heard, directly or through others, from every rank. */
#include "layers/schedule/algos/algos.h"

#define BD_MAX_ROUNDS 32

weft_status_t wt_sched_barrier_dissemination(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	int n = a->size, r = a->rank, got[BD_MAX_ROUNDS], k = 0;

	if (n < 1 || r < 0 || r >= n) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "barrier dissemination: bad rank or size");
		return WEFT_ERR_INVALID_ARG;
	}
	/* Receives are posted at once; only sends wait, for all earlier receives, since a
	 * message carries what its sender heard in every round before it. dist < n keeps
	 * one rank's peers distinct; the step avoids int overflow. */
	for (int dist = 1; dist<n; dist = dist> n / 2 ? n : dist * 2, k++) {
		wt_sched_send(p, r >= n - dist ? r - (n - dist) : r + dist, WT_SCHED_BUF_RECV, 0, 0,
			      k, got);
		got[k] = wt_sched_recv(p, r >= dist ? r - dist : r - dist + n, WT_SCHED_BUF_RECV, 0,
				       0, 0, NULL);
	}
	return WEFT_OK;
}
