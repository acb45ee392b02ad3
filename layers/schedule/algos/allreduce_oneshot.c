/* One-shot allreduce (layers/schedule) for tiny vectors: every rank sends its whole
 * vector to every other rank and reduces all n contributions locally, in rank order
 * 0..n-1, so the result is bitwise the same on every rank and in every arrival order. One
 * message hop instead of log2(n) rounds, at the price of n-1 sends of the whole vector and
 * n-1 reductions per rank: it wins only for small vectors at small rank counts, which is
 * where the cost model (table.c) picks it. */
#include <stdint.h>
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

typedef struct {
	wt_sched_plan_t *p;
	const wt_sched_args_t *a;
	size_t bytes;
	int acc;   /* last step that wrote the accumulator in RECV; -1 before the first */
	int guard; /* in place: the fence after the sends that read RECV; -1 otherwise */
} os_t;

static size_t slot(const os_t *g, int k)
{
	return (size_t)k * g->bytes;
}

/* acc = contribution k (the first one) or acc op contribution k, after step dep. */
static void accumulate(os_t *g, wt_sched_buf_t buf, size_t off, int dep)
{
	int deps[3], nd = 0;

	if (dep >= 0)
		deps[nd++] = dep;
	if (g->acc >= 0)
		deps[nd++] = g->acc;
	else if (g->guard >= 0)
		deps[nd++] = g->guard;
	if (g->acc < 0)
		g->acc = wt_sched_copy(g->p, WT_SCHED_BUF_RECV, 0, buf, off, g->bytes, nd, deps);
	else
		g->acc = wt_sched_reduce(g->p, WT_SCHED_BUF_RECV, 0, buf, off, g->bytes, nd, deps);
}

/* In place, the own vector is in RECV, which the sum overwrites: rank 0 starts its sum
 * there (no copy), the others save it to their scratch slot first. */
static int post_sends(os_t *g, int *own_dep)
{
	const wt_sched_args_t *a = g->a;
	wt_sched_buf_t src = a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;

	*own_dep = -1;
	if (a->in_place && a->rank != 0) {
		*own_dep = wt_sched_copy(g->p, WT_SCHED_BUF_SCRATCH, slot(g, a->rank),
					 WT_SCHED_BUF_RECV, 0, g->bytes, 0, NULL);
		if (*own_dep < 0)
			return -1;
	}
	for (int i = 1; i < a->size; i++) {
		int peer = (a->rank + i) % a->size;

		if (wt_sched_send(g->p, peer, src, 0, g->bytes, 0, NULL) < 0)
			return -1;
	}
	if (a->in_place)
		g->guard = wt_sched_fence(g->p);
	return 0;
}

/* Every receive is posted before any reduction, so all n-1 messages fly at once; then
 * the sum runs in rank order, each term after its message. */
static void recv_and_reduce(os_t *g, int own_dep, int *recv_of)
{
	const wt_sched_args_t *a = g->a;

	for (int k = 0; k < a->size; k++)
		recv_of[k] = k == a->rank ? own_dep
					  : wt_sched_recv(g->p, k, WT_SCHED_BUF_SCRATCH, slot(g, k),
							  g->bytes, 0, NULL);
	for (int k = 0; k < a->size; k++) {
		if (k != a->rank)
			accumulate(g, WT_SCHED_BUF_SCRATCH, slot(g, k), recv_of[k]);
		else if (!a->in_place)
			accumulate(g, WT_SCHED_BUF_SEND, 0, -1);
		else if (k != 0)
			accumulate(g, WT_SCHED_BUF_SCRATCH, slot(g, k), own_dep);
		else
			g->acc = g->guard; /* rank 0 in place: RECV holds contribution 0 */
	}
}

weft_status_t wt_sched_allreduce_oneshot(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	os_t g = {.p = p, .a = a, .acc = -1, .guard = -1};
	size_t elem = wt_util_dtype_size(a->dtype);
	int *recv_of;
	int own_dep;

	if (!elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "oneshot: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->size == 1 || a->count == 0)
		return wt_sched_allreduce_local(a, p);
	g.bytes = a->count * elem;
	if (g.bytes > SIZE_MAX / (size_t)a->size) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "oneshot: %d copies of %zu bytes overflow",
			      a->size, g.bytes);
		return WEFT_ERR_INVALID_ARG;
	}
	recv_of = malloc((size_t)a->size * sizeof(*recv_of));
	if (recv_of == NULL) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "oneshot: out of memory for %d ranks",
			      a->size);
		return WEFT_ERR_NO_MEMORY;
	}
	wt_sched_scratch(p, slot(&g, a->size));
	/* A failed builder call is sticky: finalize reports it. */
	if (post_sends(&g, &own_dep) == 0)
		recv_and_reduce(&g, own_dep, recv_of);
	free(recv_of);
	if (a->op == WEFT_AVG)
		wt_sched_div(p, WT_SCHED_BUF_RECV, 0, g.bytes, 1, &g.acc);
	return WEFT_OK;
}
