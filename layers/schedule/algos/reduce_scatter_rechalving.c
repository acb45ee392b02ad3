/* Recursive halving reduce-scatter (layers/schedule): log2(p2) rounds, each sending the
 * half of the current block range the partner keeps and folding in the half this rank
 * keeps. With n not a power of two, the first 2*(n - p2) ranks pair up: the even one folds
 * its whole input into the odd one first and gets its block back at the end.
 * Combination order: fold x_{2i} op x_{2i+1}; then per round, from the largest distance
 * down, acc = acc op (partner's partial). */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	size_t block; /* bytes */
	int n, r, rem;
} rsh_t;

static int real_first(int v, int rem)
{
	return v < rem ? 2 * v : v + rem;
}

static void vrange(const rsh_t *g, int v0, int v1, size_t *off, size_t *len)
{
	size_t b0 = (size_t)real_first(v0, g->rem), b1 = (size_t)real_first(v1, g->rem);

	*off = b0 * g->block;
	*len = (b1 - b0) * g->block;
}

static int dep1(int *deps, int v)
{
	deps[0] = v;
	return v >= 0;
}

/* The even rank of a folded pair: all its input goes to the odd partner; its block comes
 * back into RECV, which in place is SEND's own block, so only after that send read it. */
static void rsh_folded(rsh_t *g)
{
	int s =
	    wt_sched_send(g->p, g->r + 1, WT_SCHED_BUF_SEND, 0, (size_t)g->n * g->block, 0, NULL);
	int deps[1], nd = g->a->in_place ? dep1(deps, s) : 0;
	int v = wt_sched_recv(g->p, g->r + 1, WT_SCHED_BUF_RECV, 0, g->block, nd, deps);

	if (g->a->op == WEFT_AVG)
		wt_sched_div(g->p, WT_SCHED_BUF_RECV, 0, g->block, dep1(deps, v), deps);
}

/* Rounds over virtual ranks; acc is scratch laid out like SEND. first: the step that
 * filled the accumulator for the whole input (fold), or -1 when the input is still only
 * in SEND. Returns the last step that wrote the rank's keep range. */
static int rsh_rounds(rsh_t *g, int p2, int v, int first)
{
	int lo = 0, last = first, deps[1];

	for (int mask = p2 / 2; mask >= 1; mask /= 2) {
		int mid = lo + mask, peer_v = v ^ mask, nd = dep1(deps, last);
		int peer = real_first(peer_v, g->rem) + (peer_v < g->rem);
		int keep_lo = v < mid ? lo : mid, send_lo = v < mid ? mid : lo;
		size_t koff, klen, soff, slen;
		wt_sched_buf_t src = last >= 0 ? WT_SCHED_BUF_SCRATCH : WT_SCHED_BUF_SEND;

		vrange(g, keep_lo, keep_lo + mask, &koff, &klen);
		vrange(g, send_lo, send_lo + mask, &soff, &slen);
		wt_sched_send(g->p, peer, src, soff, slen, nd, deps);
		if (last < 0) {
			last = wt_sched_copy(g->p, WT_SCHED_BUF_SCRATCH, koff, WT_SCHED_BUF_SEND,
					     koff, klen, 0, NULL);
			nd = dep1(deps, last);
		}
		last = wt_sched_recv_reduce(g->p, peer, WT_SCHED_BUF_SCRATCH, koff, klen, nd, deps);
		lo = keep_lo;
	}
	return last;
}

static void rsh_build(rsh_t *g)
{
	int p2 = 1, n = g->n, r = g->r, v, first = -1, reduced, last, deps[1];
	size_t all = (size_t)n * g->block, own = (size_t)r * g->block;

	while (p2 <= n / 2)
		p2 *= 2;
	g->rem = n - p2;
	if (r < 2 * g->rem && r % 2 == 0) {
		rsh_folded(g);
		return;
	}
	wt_sched_scratch(g->p, all);
	if (r < 2 * g->rem) {
		first = wt_sched_recv(g->p, r - 1, WT_SCHED_BUF_SCRATCH, 0, all, 0, NULL);
		first = wt_sched_reduce(g->p, WT_SCHED_BUF_SCRATCH, 0, WT_SCHED_BUF_SEND, 0, all, 1,
					&first);
		v = r / 2;
	} else {
		v = r - g->rem;
	}
	reduced = rsh_rounds(g, p2, v, first);
	/* In place RECV is SEND's own block; every read of it (the fold or the first round's
	 * copy of the keep range) is an ancestor of the last round. */
	last = wt_sched_copy(g->p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH, own, g->block,
			     dep1(deps, reduced), deps);
	if (g->a->op == WEFT_AVG)
		wt_sched_div(g->p, WT_SCHED_BUF_RECV, 0, g->block, 1, &last);
	if (r < 2 * g->rem)
		wt_sched_send(g->p, r - 1, WT_SCHED_BUF_SCRATCH, own - g->block, g->block,
			      dep1(deps, reduced), deps);
}

weft_status_t wt_sched_reduce_scatter_rechalving(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	rsh_t g = {.a = a, .p = p, .n = a->size, .r = a->rank};
	size_t elem = wt_util_dtype_size(a->dtype);

	if (!elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG,
			      "reduce_scatter recursive halving: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	g.block = a->count * elem;
	if (!g.block)
		return WEFT_OK;
	if (g.n == 1) {
		if (!a->in_place)
			wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, g.block, 0,
				      NULL);
		return WEFT_OK;
	}
	rsh_build(&g);
	return WEFT_OK;
}
