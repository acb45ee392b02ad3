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
weft_status_t wt_sched_allreduce_slots_twoshot(const wt_sched_args_t *args, wt_sched_plan_t *p);
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
/* Shared slots among the ranks of one host (slots.c): need args->slot_bytes. */
weft_status_t wt_sched_allreduce_slots(const wt_sched_args_t *args, wt_sched_plan_t *p);
/* Through the peers' buffers (allreduce_direct.c): needs args->slot_bytes too. */
weft_status_t wt_sched_allreduce_direct(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_allgather_slots(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_reduce_scatter_slots(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_bcast_slots(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_reduce_slots(const wt_sched_args_t *args, wt_sched_plan_t *p);
weft_status_t wt_sched_alltoall_slots(const wt_sched_args_t *args, wt_sched_plan_t *p);
/* The most bytes a rank publishes in an alltoall through the slots of blk-byte blocks
 * (the first and last rank leave their own block out). */
size_t wt_sched_alltoall_slot_most(int size, size_t blk);
/* Whether it may go in parts, one slot call each, when that exceeds a slot. */
int wt_sched_alltoall_slot_parts_ok(const wt_sched_args_t *a);
weft_status_t wt_sched_barrier_slots(const wt_sched_args_t *args, wt_sched_plan_t *p);
/* Slot calls a piece of len bytes per rank takes when it goes through the slots in parts of
 * *part bytes (a slot's worth of whole elements): 1 when it fits one slot, 0 when the slots
 * cannot take it (none, or more than WT_SCHED_SLOT_MAX_PARTS parts). The plans (slots.c)
 * and the cost model (table.c) both count with it. */
size_t wt_sched_slot_nparts(const wt_sched_args_t *args, size_t len, size_t *part);

/* The plan of an allreduce with nothing to exchange (one rank or zero elements): copy
 * SEND to RECV unless in place. */
weft_status_t wt_sched_allreduce_local(const wt_sched_args_t *args, wt_sched_plan_t *p);

/* The binomial tree over ranks relative to the root that gather and scatter walk (in
 * opposite directions): relative rank v's subtree is the contiguous range of relative
 * ranks [v, v + size(v)), each owning one block of blk bytes. */
typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	unsigned n;   /* ranks */
	unsigned vr;  /* our rank relative to the root */
	unsigned low; /* vr's lowest set bit (n at the root): our subtree's span */
	size_t blk;
} wt_sched_btree_t;

static inline void wt_sched_btree_init(wt_sched_btree_t *t, size_t blk)
{
	t->blk = blk;
	t->n = (unsigned)t->a->size;
	t->vr = ((unsigned)t->a->rank + t->n - (unsigned)t->a->root) % t->n;
	t->low = t->vr ? (t->vr & -t->vr) : t->n;
}

/* The absolute rank of relative rank v. */
static inline int wt_sched_btree_peer(const wt_sched_btree_t *t, unsigned v)
{
	return (int)((v + (unsigned)t->a->root) % t->n);
}

/* Blocks in the subtree of relative rank v. */
static inline unsigned wt_sched_btree_size(const wt_sched_btree_t *t, unsigned v)
{
	unsigned low = v ? (v & -v) : t->n;

	return low < t->n - v ? low : t->n - v;
}

/* End of the first piece of relative range [s, e): where absolute blocks wrap to 0, so a
 * range travels as at most two messages that land in place at the root. */
static inline unsigned wt_sched_btree_cut(const wt_sched_btree_t *t, unsigned s, unsigned e)
{
	unsigned w = t->n - (unsigned)t->a->root;

	return s < w && w < e ? w : e;
}

#endif
