/* Binomial-tree scatter (layers/schedule): the root sends each child the blocks of its
 * subtree (a contiguous range of relative ranks) straight from SEND, largest subtree first;
 * inner ranks keep their range in SCRATCH and pass the children's parts on. A range whose
 * blocks wrap past the end of the root's SEND travels as two messages, cut where the
 * absolute block index wraps. In place is refused: its plan could not address SEND. */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

/* Send child c its range: from SEND at absolute offsets at the root, else from SCRATCH. */
static void sb_send_range(const wt_sched_btree_t *g, unsigned c, int nd, const int *deps)
{
	for (unsigned s = c, e = c + wt_sched_btree_size(g, c); s < e;) {
		unsigned cut = wt_sched_btree_cut(g, s, e);
		size_t len = (cut - s) * g->blk;

		if (g->vr == 0)
			wt_sched_send(g->p, wt_sched_btree_peer(g, c), WT_SCHED_BUF_SEND,
				      (size_t)wt_sched_btree_peer(g, s) * g->blk, len, 0, NULL);
		else
			wt_sched_send(g->p, wt_sched_btree_peer(g, c), WT_SCHED_BUF_SCRATCH,
				      (s - g->vr) * g->blk, len, nd, deps);
		s = cut;
	}
}

static void sb_build(const wt_sched_btree_t *g)
{
	unsigned sz = wt_sched_btree_size(g, g->vr), m = 1;
	int parent = wt_sched_btree_peer(g, g->vr - g->low), deps[2], nd = 0;

	if (g->vr == 0) {
		wt_sched_copy(g->p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND,
			      (size_t)g->a->rank * g->blk, g->blk, 0, NULL);
	} else if (sz == 1) {
		wt_sched_recv(g->p, parent, WT_SCHED_BUF_RECV, 0, g->blk, 0, NULL);
		return;
	} else {
		wt_sched_scratch(g->p, sz * g->blk);
		for (unsigned s = g->vr, e = g->vr + sz; s < e;) {
			unsigned cut = wt_sched_btree_cut(g, s, e);

			deps[nd++] =
			    wt_sched_recv(g->p, parent, WT_SCHED_BUF_SCRATCH, (s - g->vr) * g->blk,
					  (cut - s) * g->blk, 0, NULL);
			s = cut;
		}
		wt_sched_copy(g->p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH, 0, g->blk, nd,
			      deps);
	}
	while (m * 2 < g->low)
		m *= 2;
	for (; m > 0 && m < g->low; m >>= 1)
		if (g->vr + m < g->n)
			sb_send_range(g, g->vr + m, nd, deps);
}

weft_status_t wt_sched_scatter_binomial(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	wt_sched_btree_t g = {.a = a, .p = p};
	size_t elem = wt_util_dtype_size(a->dtype);

	if (!elem || a->size < 1 || a->root < 0 || a->root >= a->size) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "scatter binomial: bad dtype, size or root");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->in_place) {
		wt_sched_fail(p, WEFT_ERR_UNSUPPORTED,
			      "scatter binomial: no in-place form (rank %d, root %d)", a->rank,
			      a->root);
		return WEFT_ERR_UNSUPPORTED;
	}
	if (a->count * elem == 0)
		return WEFT_OK;
	wt_sched_btree_init(&g, a->count * elem);
	sb_build(&g);
	return WEFT_OK;
}
