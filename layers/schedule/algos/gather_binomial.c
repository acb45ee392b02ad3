/* Binomial-tree gather (layers/schedule): ranks relative to the root collect the blocks of
 * their subtree (a contiguous range of relative ranks) in SCRATCH and pass the range to
 * their parent in one message, so the root receives ceil(log2 n) messages. A range whose
 * blocks wrap past the end of the root's RECV travels as two messages, cut where the
 * absolute block index wraps, so the root receives straight into place. In place (root
 * only): the root's block already sits in RECV. */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

#define GB_MAX_DEPS 72 /* own copy + two pieces per child; 32 children at most */

/* Receive relative range [s, e) from child c: into RECV in place at the root, else into
 * SCRATCH at the block's offset from vr. Appends the receive ids to deps. */
static int gb_recv_range(const wt_sched_btree_t *g, unsigned c, unsigned s, unsigned e, int *deps,
			 int nd)
{
	while (s < e) {
		unsigned cut = wt_sched_btree_cut(g, s, e);
		size_t len = (cut - s) * g->blk;

		if (g->vr == 0)
			deps[nd++] =
			    wt_sched_recv(g->p, wt_sched_btree_peer(g, c), WT_SCHED_BUF_RECV,
					  (size_t)wt_sched_btree_peer(g, s) * g->blk, len, 0, NULL);
		else
			deps[nd++] =
			    wt_sched_recv(g->p, wt_sched_btree_peer(g, c), WT_SCHED_BUF_SCRATCH,
					  (s - g->vr) * g->blk, len, 0, NULL);
		s = cut;
	}
	return nd;
}

static void gb_send_up(const wt_sched_btree_t *g, unsigned sz, const int *deps, int nd)
{
	int parent = wt_sched_btree_peer(g, g->vr - g->low);

	if (sz == 1) {
		wt_sched_send(g->p, parent, WT_SCHED_BUF_SEND, 0, g->blk, 0, NULL);
		return;
	}
	for (unsigned s = g->vr, e = g->vr + sz; s < e;) {
		unsigned cut = wt_sched_btree_cut(g, s, e);

		wt_sched_send(g->p, parent, WT_SCHED_BUF_SCRATCH, (s - g->vr) * g->blk,
			      (cut - s) * g->blk, nd, deps);
		s = cut;
	}
}

weft_status_t wt_sched_gather_binomial(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	wt_sched_btree_t g = {.a = a, .p = p};
	size_t elem = wt_util_dtype_size(a->dtype);
	int deps[GB_MAX_DEPS], nd = 0;
	unsigned sz;

	if (!elem || a->size < 1 || a->root < 0 || a->root >= a->size) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "gather binomial: bad dtype, size or root");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->in_place && a->rank != a->root) {
		wt_sched_fail(
		    p, WEFT_ERR_INVALID_ARG,
		    "gather binomial: in place is the root's form only (rank %d, root %d)", a->rank,
		    a->root);
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->count * elem == 0)
		return WEFT_OK;
	wt_sched_btree_init(&g, a->count * elem);
	sz = wt_sched_btree_size(&g, g.vr);
	if (g.vr == 0 && !a->in_place)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, (size_t)a->rank * g.blk, WT_SCHED_BUF_SEND, 0,
			      g.blk, 0, NULL);
	else if (g.vr != 0 && sz > 1) {
		wt_sched_scratch(p, sz * g.blk);
		deps[nd++] =
		    wt_sched_copy(p, WT_SCHED_BUF_SCRATCH, 0, WT_SCHED_BUF_SEND, 0, g.blk, 0, NULL);
	}
	for (unsigned m = 1; m < g.low && g.vr + m < g.n; m *= 2)
		nd = gb_recv_range(&g, g.vr + m, g.vr + m,
				   g.vr + m + wt_sched_btree_size(&g, g.vr + m), deps, nd);
	if (g.vr != 0)
		gb_send_up(&g, sz, deps, nd);
	return WEFT_OK;
}
