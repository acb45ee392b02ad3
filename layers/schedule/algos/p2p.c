/* Point-to-point send and receive as one-step plans (layers/schedule), so that they share
 * the executor, requests, deadlines and cancellation with the collectives. */
#include "layers/schedule/algos/algos.h"

weft_status_t wt_sched_send_direct(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t bytes = wt_sched_args_buf_bytes(a, WT_SCHED_BUF_SEND);

	return wt_sched_send(p, a->peer, WT_SCHED_BUF_SEND, 0, bytes, 0, NULL) < 0
		   ? WEFT_ERR_INVALID_ARG
		   : WEFT_OK;
}

weft_status_t wt_sched_recv_direct(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t bytes = wt_sched_args_buf_bytes(a, WT_SCHED_BUF_RECV);

	return wt_sched_recv(p, a->peer, WT_SCHED_BUF_RECV, 0, bytes, 0, NULL) < 0
		   ? WEFT_ERR_INVALID_ARG
		   : WEFT_OK;
}
