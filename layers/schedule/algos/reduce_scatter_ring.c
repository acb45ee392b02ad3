/* Ring reduce-scatter (layers/schedule): n-1 steps; at each a rank adds its own input to
 * the partial block arriving from the left and passes it right, segmented to pipeline.
 * Combination order: block b = x_b op (x_{b-1} op (... op (x_{b+2} op x_{b+1}))). */
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "layers/schedule/algos/hazard.h"
#include "lib/util/dtype.h"

typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	size_t block, seg; /* bytes */
	int n, r;
	wt_sched_haz_t *haz; /* [slot * nseg + k]: the two scratch accumulators, RECV */
} rsr_t;

static int ring_mod(int x, int n)
{
	return ((x % n) + n) % n;
}

static size_t nseg(const rsr_t *g)
{
	return (g->block + g->seg - 1) / g->seg;
}

static size_t seg_len(const rsr_t *g, size_t k)
{
	size_t left = g->block - k * g->seg;

	return left < g->seg ? left : g->seg;
}

/* Accumulator of step s: scratch slot s % 2 while the block passes on, RECV (slot 2) for
 * the last step, whose block is the rank's own. */
static int acc_slot(const rsr_t *g, int s)
{
	return s == g->n - 2 ? 2 : s % 2;
}

static void acc_loc(const rsr_t *g, int slot, size_t k, wt_sched_buf_t *buf, size_t *off)
{
	*buf = slot == 2 ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SCRATCH;
	*off = (slot == 2 ? 0 : (size_t)slot * g->block) + k * g->seg;
}

static wt_sched_haz_t *haz(const rsr_t *g, int slot, size_t k)
{
	return &g->haz[(size_t)slot * nseg(g) + k];
}

/* Step s sends the accumulator of step s-1 (at step 0 the own input of block r-1). */
static void rsr_send(rsr_t *g, int s, size_t k)
{
	int right = ring_mod(g->r + 1, g->n), deps[WT_SCHED_HAZ_MAX_DEPS], nd, v, slot;
	wt_sched_buf_t buf;
	size_t off;

	if (s == 0) {
		off = (size_t)ring_mod(g->r - 1, g->n) * g->block + k * g->seg;
		wt_sched_send(g->p, right, WT_SCHED_BUF_SEND, off, seg_len(g, k), 0, NULL);
		return;
	}
	slot = acc_slot(g, s - 1);
	acc_loc(g, slot, k, &buf, &off);
	nd = wt_sched_haz_read_deps(haz(g, slot, k), deps, 0);
	v = wt_sched_send(g->p, right, buf, off, seg_len(g, k), nd, deps);
	wt_sched_haz_read(g->p, haz(g, slot, k), v);
}

/* Step s: accumulator = own input of block r-s-2, then fold in the left partial. In place,
 * the last accumulator is RECV, which already holds the own input. */
static void rsr_recv(rsr_t *g, int s, size_t k)
{
	int left = ring_mod(g->r - 1, g->n), slot = acc_slot(g, s),
	    c = ring_mod(g->r - s - 2, g->n);
	int deps[WT_SCHED_HAZ_MAX_DEPS], nd, v;
	wt_sched_haz_t *h = haz(g, slot, k);
	wt_sched_buf_t buf;
	size_t off, len = seg_len(g, k);

	acc_loc(g, slot, k, &buf, &off);
	nd = wt_sched_haz_write_deps(h, deps, 0);
	/* Out of place the input's bytes and the incoming ones combine in one pass; in place
	 * (SEND and RECV overlap) a copy comes first where the accumulator is not the input. */
	if (!g->a->in_place) {
		v = wt_sched_recv_reduce_from(g->p, left, buf, off, WT_SCHED_BUF_SEND,
					      (size_t)c * g->block + k * g->seg, len, nd, deps);
		wt_sched_haz_write(h, v);
		return;
	}
	if (slot != 2) {
		v = wt_sched_copy(g->p, buf, off, WT_SCHED_BUF_SEND,
				  (size_t)c * g->block + k * g->seg, len, nd, deps);
		wt_sched_haz_write(h, v);
		nd = wt_sched_haz_write_deps(h, deps, 0);
	}
	wt_sched_haz_write(h, wt_sched_recv_reduce(g->p, left, buf, off, len, nd, deps));
}

static void rsr_build(rsr_t *g)
{
	size_t ns = nseg(g);

	for (int s = 0; s < g->n - 1; s++) {
		for (size_t k = 0; k < ns; k++)
			rsr_send(g, s, k);
		for (size_t k = 0; k < ns; k++)
			rsr_recv(g, s, k);
	}
	if (g->a->op != WEFT_AVG)
		return;
	for (size_t k = 0; k < ns; k++) {
		int deps[WT_SCHED_HAZ_MAX_DEPS],
		    nd = wt_sched_haz_write_deps(haz(g, 2, k), deps, 0);

		wt_sched_div(g->p, WT_SCHED_BUF_RECV, k * g->seg, seg_len(g, k), nd, deps);
	}
}

/* One rank: the result is the input (AVG divides by 1, which changes nothing). */
static void rsr_single(const wt_sched_args_t *a, wt_sched_plan_t *p, size_t block)
{
	if (!a->in_place)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, block, 0, NULL);
}

weft_status_t wt_sched_reduce_scatter_ring(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	rsr_t g = {.a = a, .p = p, .n = a->size, .r = a->rank};
	size_t elem = wt_util_dtype_size(a->dtype);
	size_t seg = a->seg_bytes ? a->seg_bytes : WT_SCHED_DEFAULT_SEG_BYTES;

	if (!elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "reduce_scatter ring: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	g.block = a->count * elem;
	if (!g.block)
		return WEFT_OK;
	if (g.n == 1) {
		rsr_single(a, p, g.block);
		return WEFT_OK;
	}
	g.seg = seg / elem ? seg / elem * elem : elem;
	g.haz = malloc(3 * nseg(&g) * sizeof(*g.haz));
	if (!g.haz) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY,
			      "reduce_scatter ring: out of memory for %zu "
			      "segments",
			      nseg(&g));
		return WEFT_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < 3 * nseg(&g); i++)
		wt_sched_haz_init(&g.haz[i]);
	if (g.n > 2)
		wt_sched_scratch(p, 2 * g.block);
	rsr_build(&g);
	free(g.haz);
	return WEFT_OK;
}
