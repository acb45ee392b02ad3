/* Bruck alltoall (layers/schedule) for small blocks: ceil(log2 n) messages per rank instead
 * of n-1. The blocks are rotated into SCRATCH so that index i is bound for rank+i; step k
 * packs the blocks whose index has bit k set, sends them to rank+2^k and unpacks what
 * rank-2^k sent into the same indices; index i then holds the block of rank-i, which the
 * inverse rotation puts in place. The first rotation reads the input once, so in place
 * (SEND == RECV) works unchanged with hazards tracked per RECV block. */
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "layers/schedule/algos/hazard.h"
#include "lib/util/dtype.h"

typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	int n, r, maxpack;
	size_t blk;
	wt_sched_haz_t *tmp, *spack, *rpack, *recv; /* per block */
	int *deps;				    /* room for a whole pack's edges */
} bk_t;

/* SCRATCH layout: n rotated blocks, then the send pack, then the receive pack. */
static size_t bk_tmp_off(const bk_t *g, int i)
{
	return (size_t)i * g->blk;
}

static size_t bk_spack_off(const bk_t *g, int j)
{
	return ((size_t)g->n + (size_t)j) * g->blk;
}

static size_t bk_rpack_off(const bk_t *g, int j)
{
	return ((size_t)g->n + (size_t)g->maxpack + (size_t)j) * g->blk;
}

/* A block copy between tracked regions (src_h NULL: SEND, never written). */
static void bk_copy(bk_t *g, wt_sched_buf_t dst, size_t doff, wt_sched_haz_t *dst_h,
		    wt_sched_buf_t src, size_t soff, wt_sched_haz_t *src_h)
{
	int deps[2 * WT_SCHED_HAZ_MAX_DEPS], nd = 0, v;

	nd = wt_sched_haz_write_deps(dst_h, deps, nd);
	if (src_h)
		nd = wt_sched_haz_read_deps(src_h, deps, nd);
	v = wt_sched_copy(g->p, dst, doff, src, soff, g->blk, nd, deps);
	if (src_h)
		wt_sched_haz_read(g->p, src_h, v);
	wt_sched_haz_write(dst_h, v);
}

static void bk_step(bk_t *g, int pof2)
{
	int to = (g->r + pof2) % g->n, from = (g->r - pof2 + g->n) % g->n, m = 0, nd = 0, v;
	wt_sched_buf_t S = WT_SCHED_BUF_SCRATCH;

	for (int i = 1; i < g->n; i++)
		if (i & pof2) {
			bk_copy(g, S, bk_spack_off(g, m), &g->spack[m], S, bk_tmp_off(g, i),
				&g->tmp[i]);
			m++;
		}
	for (int j = 0; j < m; j++)
		nd = wt_sched_haz_read_deps(&g->spack[j], g->deps, nd);
	v = wt_sched_send(g->p, to, S, bk_spack_off(g, 0), (size_t)m * g->blk, nd, g->deps);
	for (int j = 0; j < m; j++)
		wt_sched_haz_read(g->p, &g->spack[j], v);
	nd = 0;
	for (int j = 0; j < m; j++)
		nd = wt_sched_haz_write_deps(&g->rpack[j], g->deps, nd);
	v = wt_sched_recv(g->p, from, S, bk_rpack_off(g, 0), (size_t)m * g->blk, nd, g->deps);
	for (int j = 0; j < m; j++)
		wt_sched_haz_write(&g->rpack[j], v);
	m = 0;
	for (int i = 1; i < g->n; i++)
		if (i & pof2) {
			bk_copy(g, S, bk_tmp_off(g, i), &g->tmp[i], S, bk_rpack_off(g, m),
				&g->rpack[m]);
			m++;
		}
}

static void bk_build(bk_t *g)
{
	int in_place = g->a->in_place, r = g->r, n = g->n;
	wt_sched_buf_t in = in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;
	wt_sched_buf_t S = WT_SCHED_BUF_SCRATCH, R = WT_SCHED_BUF_RECV;

	/* The own block never travels: it stays where it is in place, else one copy. */
	if (!in_place)
		bk_copy(g, R, (size_t)r * g->blk, &g->recv[r], WT_SCHED_BUF_SEND,
			(size_t)r * g->blk, NULL);
	for (int i = 1; i < n; i++) {
		int j = (r + i) % n;

		bk_copy(g, S, bk_tmp_off(g, i), &g->tmp[i], in, (size_t)j * g->blk,
			in_place ? &g->recv[j] : NULL);
	}
	for (int pof2 = 1; pof2 < n; pof2 *= 2)
		bk_step(g, pof2);
	for (int i = 1; i < n; i++) {
		int j = (r - i + n) % n;

		bk_copy(g, R, (size_t)j * g->blk, &g->recv[j], S, bk_tmp_off(g, i), &g->tmp[i]);
	}
}

static int bk_maxpack(int n)
{
	int best = 0;

	for (int pof2 = 1; pof2 < n; pof2 *= 2) {
		int m = 0;

		for (int i = 1; i < n; i++)
			m += (i & pof2) != 0;
		best = m > best ? m : best;
	}
	return best;
}

weft_status_t wt_sched_alltoall_bruck(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	bk_t g = {.a = a, .p = p, .n = a->size, .r = a->rank};
	size_t elem = wt_util_dtype_size(a->dtype), nh;

	if (!elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "alltoall bruck: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	g.blk = a->count * elem;
	if (g.blk == 0)
		return WEFT_OK;
	if (g.n == 1) {
		if (!a->in_place)
			wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, g.blk, 0,
				      NULL);
		return WEFT_OK;
	}
	g.maxpack = bk_maxpack(g.n);
	nh = 2 * (size_t)g.n + 2 * (size_t)g.maxpack;
	g.tmp = malloc(nh * sizeof(*g.tmp));
	g.deps = malloc((size_t)g.maxpack * WT_SCHED_HAZ_MAX_DEPS * sizeof(*g.deps));
	if (!g.tmp || !g.deps) {
		free(g.tmp);
		free(g.deps);
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "alltoall bruck: out of memory for %d ranks",
			      g.n);
		return WEFT_ERR_NO_MEMORY;
	}
	g.recv = g.tmp + g.n;
	g.spack = g.recv + g.n;
	g.rpack = g.spack + g.maxpack;
	for (size_t i = 0; i < nh; i++)
		wt_sched_haz_init(&g.tmp[i]);
	wt_sched_scratch(p, ((size_t)g.n + 2 * (size_t)g.maxpack) * g.blk);
	bk_build(&g);
	free(g.tmp);
	free(g.deps);
	return WEFT_OK;
}
