/* Recursive doubling allgather (layers/schedule): log2(n) rounds in which partners swap
 * everything they hold; with n not a power of two, the first 2*(n - p2) ranks pair up, the
 * even one hands its block to the odd one first and gets the whole result at the end.
 * Combination order: none (blocks are only moved, never combined). */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

/* Enough for the own block, the fold and one receive per round of up to 2^30 ranks. */
#define AGD_MAX_WRITES 34

typedef struct {
	wt_sched_plan_t *p;
	size_t block; /* bytes */
	int n, r, in_place, rem;
	int writes[AGD_MAX_WRITES]; /* every step that wrote RECV so far */
	int nw;
} agd_t;

/* Real rank of the first rank that virtual rank v stands for. */
static int real_first(int v, int rem)
{
	return v < rem ? 2 * v : v + rem;
}

static void note_write(agd_t *g, int vid)
{
	if (vid >= 0 && g->nw < AGD_MAX_WRITES)
		g->writes[g->nw++] = vid;
}

/* Blocks of the virtual ranks [v0, v1) are the contiguous real blocks
 * [real_first(v0), real_first(v1)). */
static void vrange(const agd_t *g, int v0, int v1, size_t *off, size_t *len)
{
	size_t b0 = (size_t)real_first(v0, g->rem), b1 = (size_t)real_first(v1, g->rem);

	*off = b0 * g->block;
	*len = (b1 - b0) * g->block;
}

/* Where the rank's own block can be read from without waiting for anything. */
static wt_sched_buf_t own_src(const agd_t *g, size_t *off)
{
	*off = g->in_place ? (size_t)g->r * g->block : 0;
	return g->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;
}

/* An even folded rank: its block goes to the odd partner, the rest comes back later in
 * two pieces around its own block, which is never rewritten. */
static void agd_folded(agd_t *g)
{
	size_t off, own = (size_t)g->r * g->block, total = (size_t)g->n * g->block;
	wt_sched_buf_t src = own_src(g, &off);

	wt_sched_send(g->p, g->r + 1, src, off, g->block, 0, NULL);
	if (own)
		wt_sched_recv(g->p, g->r + 1, WT_SCHED_BUF_RECV, 0, own, 0, NULL);
	if (own + g->block < total)
		wt_sched_recv(g->p, g->r + 1, WT_SCHED_BUF_RECV, own + g->block,
			      total - own - g->block, 0, NULL);
}

static void agd_rounds(agd_t *g, int p2, int v)
{
	for (int mask = 1; mask < p2; mask <<= 1) {
		int base = v & ~(mask - 1), pbase = (v ^ mask) & ~(mask - 1);
		int peer = real_first(v ^ mask, g->rem) + ((v ^ mask) < g->rem);
		size_t soff, slen, roff, rlen;
		int deps[AGD_MAX_WRITES], nd = g->nw;

		for (int i = 0; i < nd; i++)
			deps[i] = g->writes[i];
		vrange(g, base, base + mask, &soff, &slen);
		vrange(g, pbase, pbase + mask, &roff, &rlen);
		wt_sched_send(g->p, peer, WT_SCHED_BUF_RECV, soff, slen, nd, deps);
		note_write(g, wt_sched_recv(g->p, peer, WT_SCHED_BUF_RECV, roff, rlen, 0, NULL));
	}
}

static void agd_build(agd_t *g)
{
	int p2 = 1, n = g->n, r = g->r, v;
	size_t own = (size_t)r * g->block, off, total = (size_t)n * g->block;
	wt_sched_buf_t src = own_src(g, &off);

	while (p2 <= n / 2)
		p2 *= 2;
	g->rem = n - p2;
	if (r < 2 * g->rem && r % 2 == 0) {
		if (!g->in_place)
			wt_sched_copy(g->p, WT_SCHED_BUF_RECV, own, src, off, g->block, 0, NULL);
		agd_folded(g);
		return;
	}
	if (!g->in_place)
		note_write(
		    g, wt_sched_copy(g->p, WT_SCHED_BUF_RECV, own, src, off, g->block, 0, NULL));
	if (r < 2 * g->rem) {
		note_write(g, wt_sched_recv(g->p, r - 1, WT_SCHED_BUF_RECV, own - g->block,
					    g->block, 0, NULL));
		v = r / 2;
	} else {
		v = r - g->rem;
	}
	agd_rounds(g, p2, v);
	if (r >= 2 * g->rem)
		return;
	/* Everything but the partner's own block goes back to it. */
	own -= g->block;
	if (own)
		wt_sched_send(g->p, r - 1, WT_SCHED_BUF_RECV, 0, own, g->nw, g->writes);
	if (own + g->block < total)
		wt_sched_send(g->p, r - 1, WT_SCHED_BUF_RECV, own + g->block,
			      total - own - g->block, g->nw, g->writes);
}

weft_status_t wt_sched_allgather_recdbl(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	agd_t g = {.p = p, .n = a->size, .r = a->rank, .in_place = a->in_place};
	size_t elem = wt_util_dtype_size(a->dtype);

	if (!elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "allgather recdbl: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	g.block = a->count * elem;
	if (!g.block)
		return WEFT_OK;
	if (g.n == 1) {
		if (!g.in_place)
			wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, g.block, 0,
				      NULL);
		return WEFT_OK;
	}
	agd_build(&g);
	return WEFT_OK;
}
