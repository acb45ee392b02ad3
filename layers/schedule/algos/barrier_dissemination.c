/* barrier by dissemination (layers/schedule). PLACEHOLDER: being written; refuses to build. */
#include "layers/schedule/algos/algos.h"

weft_status_t wt_sched_barrier_dissemination(const wt_sched_args_t *args, wt_sched_plan_t *p)
{
	(void)args;
	wt_sched_fail(p, WEFT_ERR_UNSUPPORTED, "barrier dissemination: not written yet");
	return WEFT_ERR_UNSUPPORTED;
}
