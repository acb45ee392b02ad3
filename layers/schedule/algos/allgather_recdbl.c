/* allgather by recursive_doubling (layers/schedule). PLACEHOLDER: being written; refuses to build. */
#include "layers/schedule/algos/algos.h"

weft_status_t wt_sched_allgather_recdbl(const wt_sched_args_t *args, wt_sched_plan_t *p)
{
	(void)args;
	wt_sched_fail(p, WEFT_ERR_UNSUPPORTED, "allgather recursive_doubling: not written yet");
	return WEFT_ERR_UNSUPPORTED;
}
