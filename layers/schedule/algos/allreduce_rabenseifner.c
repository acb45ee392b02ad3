/* Rabenseifner allreduce (layers/schedule): reduce-scatter by recursive halving, then
 * allgather by recursive doubling, over p2 = the largest power of two <= n virtual ranks;
 * the first 2*(n - p2) ranks pair up, the even one folding its vector into the odd one
 * first and getting the result from it at the end. Each chunk is reduced by one rank only,
 * so every rank ends with the same bits.
 * Combination order: fold x_{2i+1} op x_{2i}; then per halving round, from the largest
 * distance down, acc = acc op (partner's partial). */
#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

#define RAB_MAX_ROUNDS 32

typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	size_t elem;
	int n, r, rem, p2, v;
	wt_sched_buf_t in;		  /* where the rank's input is: SEND, or RECV in place */
	int halving_send[RAB_MAX_ROUNDS]; /* by log2(mask): it read the partner's range */
	int writes[RAB_MAX_ROUNDS + 2];	  /* steps that wrote RECV since the halving */
	int nw;
} rab_t;

static int real_rank(int v, int rem)
{
	return v < rem ? 2 * v + 1 : v + rem;
}

static int ilog2(int x)
{
	int l = 0;

	while (x > 1) {
		x /= 2;
		l++;
	}
	return l;
}

/* Chunks of the vector, one per virtual rank, as even as elements allow. */
static size_t chunk_first(const rab_t *g, int c)
{
	size_t p2 = (size_t)g->p2, q = g->a->count / p2, rm = g->a->count % p2, uc = (size_t)c;

	return q * uc + (uc < rm ? uc : rm);
}

static void crange(const rab_t *g, int c0, int c1, size_t *off, size_t *len)
{
	*off = chunk_first(g, c0) * g->elem;
	*len = chunk_first(g, c1) * g->elem - *off;
}

static int dep_add(int *deps, int nd, int v)
{
	if (v >= 0)
		deps[nd++] = v;
	return nd;
}

/* Steps are skipped where a range is empty (count < p2); both partners see the same
 * sizes, so they skip the same messages. */
static void rab_folded_even(rab_t *g)
{
	size_t bytes = g->a->count * g->elem;
	int s = wt_sched_send(g->p, g->r + 1, g->in, 0, bytes, 0, NULL), deps[1];
	int nd = g->in == WT_SCHED_BUF_RECV ? dep_add(deps, 0, s) : 0;

	wt_sched_recv(g->p, g->r + 1, WT_SCHED_BUF_RECV, 0, bytes, nd, deps);
}

/* Returns the last step that wrote the rank's own chunk (or -1). */
static int rab_halving(rab_t *g, int last)
{
	int lo = 0, init = last >= 0 || g->in == WT_SCHED_BUF_RECV;

	for (int mask = g->p2 / 2; mask >= 1; mask /= 2) {
		int mid = lo + mask, pv = g->v ^ mask, peer = real_rank(pv, g->rem), deps[1], nd;
		int keep = g->v < mid ? lo : mid, away = g->v < mid ? mid : lo, s = -1;
		size_t koff, klen, soff, slen;

		crange(g, keep, keep + mask, &koff, &klen);
		crange(g, away, away + mask, &soff, &slen);
		nd = dep_add(deps, 0, last);
		if (slen)
			s = wt_sched_send(g->p, peer, init ? WT_SCHED_BUF_RECV : g->in, soff, slen,
					  nd, deps);
		g->halving_send[ilog2(mask)] = s;
		/* The first half kept is combined from the input straight into RECV. */
		if (!init && klen)
			last = wt_sched_recv_reduce_from(g->p, peer, WT_SCHED_BUF_RECV, koff, g->in,
							 koff, klen, nd, deps);
		else if (klen)
			last = wt_sched_recv_reduce(g->p, peer, WT_SCHED_BUF_RECV, koff, klen, nd,
						    deps);
		init = 1;
		lo = keep;
	}
	return last;
}

static void rab_doubling(rab_t *g)
{
	for (int mask = 1; mask < g->p2; mask *= 2) {
		int mine = g->v & ~(mask - 1), theirs = (g->v ^ mask) & ~(mask - 1);
		int peer = real_rank(g->v ^ mask, g->rem), deps[1], nd, v;
		size_t moff, mlen, toff, tlen;

		crange(g, mine, mine + mask, &moff, &mlen);
		crange(g, theirs, theirs + mask, &toff, &tlen);
		if (mlen)
			wt_sched_send(g->p, peer, WT_SCHED_BUF_RECV, moff, mlen, g->nw, g->writes);
		if (!tlen)
			continue;
		/* The halving round of this distance sent exactly this range away. */
		nd = dep_add(deps, 0, g->halving_send[ilog2(mask)]);
		v = wt_sched_recv(g->p, peer, WT_SCHED_BUF_RECV, toff, tlen, nd, deps);
		g->nw = dep_add(g->writes, g->nw, v);
	}
}

static void rab_build(rab_t *g)
{
	int n = g->n, r = g->r, last = -1, deps[1];
	size_t bytes = g->a->count * g->elem, off, len;

	g->p2 = 1;
	while (g->p2 <= n / 2)
		g->p2 *= 2;
	g->rem = n - g->p2;
	if (r < 2 * g->rem && r % 2 == 0) {
		rab_folded_even(g);
		return;
	}
	g->v = r < 2 * g->rem ? r / 2 : r - g->rem;
	if (r < 2 * g->rem) {
		if (g->in == WT_SCHED_BUF_SEND)
			last = wt_sched_copy(g->p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0,
					     bytes, 0, NULL);
		last = wt_sched_recv_reduce(g->p, r - 1, WT_SCHED_BUF_RECV, 0, bytes,
					    dep_add(deps, 0, last), deps);
	}
	last = rab_halving(g, last);
	crange(g, g->v, g->v + 1, &off, &len);
	if (g->a->op == WEFT_AVG && len)
		last =
		    wt_sched_div(g->p, WT_SCHED_BUF_RECV, off, len, dep_add(deps, 0, last), deps);
	g->nw = dep_add(g->writes, 0, last);
	rab_doubling(g);
	if (r < 2 * g->rem)
		wt_sched_send(g->p, r - 1, WT_SCHED_BUF_RECV, 0, bytes, g->nw, g->writes);
}

weft_status_t wt_sched_allreduce_rabenseifner(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	rab_t g = {.a = a, .p = p, .n = a->size, .r = a->rank};

	g.elem = wt_util_dtype_size(a->dtype);
	if (!g.elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "rabenseifner: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->size == 1 || a->count == 0)
		return wt_sched_allreduce_local(a, p);
	g.in = a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;
	rab_build(&g);
	return WEFT_OK;
}
