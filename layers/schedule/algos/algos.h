/* Builders of the algorithm table (layers/schedule): one file per algorithm, all listed
 * in table.c. Each takes the args and an empty plan and adds its steps. */
#ifndef WT_SCHED_ALGOS_H
#define WT_SCHED_ALGOS_H

#include "layers/schedule/plan.h"

weft_status_t wt_sched_allreduce_ring(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allreduce_recdbl(const wt_sched_args_t *args, wt_sched_plan_t *p);

/* The plan of an allreduce with nothing to exchange (one rank or zero elements): copy
 * SEND to RECV unless in place. */
weft_status_t wt_sched_allreduce_local(const wt_sched_args_t *args, wt_sched_plan_t *p);

#endif
