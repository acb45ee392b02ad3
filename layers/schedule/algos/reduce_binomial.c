/* Binomial-tree reduce (layers/schedule): ranks relative to the root fold their children's
 * partial results into their own and pass the sum to their parent, segment by segment so
 * that large vectors pipeline up the tree. Non-roots accumulate in SCRATCH (they have no
 * RECV); the root accumulates in RECV and divides there for AVG.
 * Combination order: acc = acc op child for children in increasing relative rank, so every
 * operand appears in relative-rank order (v0 op v1) op (v2 op v3) ... whatever the timing. */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	unsigned n, vr, low; /* children of vr are vr + m for powers of two m < low */
} rb_t;

static int rb_peer(const rb_t *g, unsigned v)
{
	return (int)((v + (unsigned)g->a->root) % g->n);
}

static int rb_has_children(const rb_t *g)
{
	return g->low > 1 && g->vr + 1 < g->n;
}

/* One segment: own data into the accumulator, children folded in order, then up. */
static void rb_segment(const rb_t *g, size_t off, size_t len)
{
	wt_sched_buf_t acc = g->vr ? WT_SCHED_BUF_SCRATCH : WT_SCHED_BUF_RECV;
	int last = -1;

	if (g->vr != 0 && !rb_has_children(g)) {
		wt_sched_send(g->p, rb_peer(g, g->vr - g->low), WT_SCHED_BUF_SEND, off, len, 0,
			      NULL);
		return;
	}
	if (g->vr != 0 || !g->a->in_place)
		last = wt_sched_copy(g->p, acc, off, WT_SCHED_BUF_SEND, off, len, 0, NULL);
	for (unsigned m = 1; m < g->low && g->vr + m < g->n; m *= 2)
		last = wt_sched_recv_reduce(g->p, rb_peer(g, g->vr + m), acc, off, len,
					    last >= 0 ? 1 : 0, last >= 0 ? &last : NULL);
	if (g->vr != 0) {
		wt_sched_send(g->p, rb_peer(g, g->vr - g->low), acc, off, len, last >= 0 ? 1 : 0,
			      last >= 0 ? &last : NULL);
		return;
	}
	if (g->a->op == WEFT_AVG && g->n > 1)
		wt_sched_div(g->p, acc, off, len, last >= 0 ? 1 : 0, last >= 0 ? &last : NULL);
}

weft_status_t wt_sched_reduce_binomial(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t elem = wt_util_dtype_size(a->dtype), bytes, seg;
	rb_t g = {.a = a, .p = p};

	if (!elem || a->size < 1 || a->root < 0 || a->root >= a->size) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "reduce binomial: bad dtype, size or root");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->in_place && a->rank != a->root) {
		wt_sched_fail(
		    p, WEFT_ERR_INVALID_ARG,
		    "reduce binomial: in place is the root's form only (rank %d, root %d)", a->rank,
		    a->root);
		return WEFT_ERR_INVALID_ARG;
	}
	g.n = (unsigned)a->size;
	g.vr = ((unsigned)a->rank + g.n - (unsigned)a->root) % g.n;
	g.low = g.vr ? (g.vr & -g.vr) : g.n;
	bytes = a->count * elem;
	if (bytes == 0)
		return WEFT_OK;
	if (g.vr != 0 && rb_has_children(&g))
		wt_sched_scratch(p, bytes);
	seg = a->seg_bytes ? a->seg_bytes : WT_SCHED_DEFAULT_SEG_BYTES;
	seg = seg / elem ? seg / elem * elem : elem;
	for (size_t off = 0; off < bytes; off += seg)
		rb_segment(&g, off, bytes - off < seg ? bytes - off : seg);
	return WEFT_OK;
}
