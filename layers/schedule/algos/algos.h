/* Builders of the algorithm table (layers/schedule): one file per algorithm, all listed
 * in table.c. Each takes the args and an empty plan and adds its steps. */
#ifndef WT_SCHED_ALGOS_H
#define WT_SCHED_ALGOS_H

#include "layers/schedule/plan.h"

weft_status_t wt_sched_allreduce_ring(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allreduce_recdbl(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allreduce_rabenseifner(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allreduce_reduce_bcast(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allreduce_oneshot(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allgather_ring(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allgather_recdbl(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allgather_bruck(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_reduce_scatter_ring(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_reduce_scatter_rechalving(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_reduce_scatter_pairwise(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_bcast_binomial(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_bcast_chain(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_reduce_binomial(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_reduce_chain(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_gather_binomial(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_scatter_binomial(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_alltoall_pairwise(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_alltoall_bruck(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_alltoallv_pairwise(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_barrier_dissemination(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_send_direct(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_recv_direct(const wt_sched_args_t *args, wt_sched_plan_t *p);

/* The plan of an allreduce with nothing to exchange (one rank or zero elements): copy
 * SEND to RECV unless in place. */
weft_status_t wt_sched_allreduce_local(const wt_sched_args_t *args, wt_sched_plan_t *p);

#endif
