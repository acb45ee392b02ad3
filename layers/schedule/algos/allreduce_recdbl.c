/* Recursive doubling allreduce (layers/schedule) for small messages: log2(n) rounds of
 * whole-vector exchanges; with n not a power of two, the first 2*(n - p2) ranks pair up
 * and the even one of each pair folds its data into the odd one, which sends the result
 * back at the end. It ignores args->compress (wire compression): it serves small,
 * latency-bound messages where halving the bytes gains nothing, and both partners of an
 * exchange would have to round their own operand too to stay bit-identical. */
#include "layers/schedule/algos/algos.h"
#include "layers/schedule/algos/hazard.h"
#include "lib/util/dtype.h"

typedef struct {
	wt_sched_plan_t *p;
	size_t bytes;
	wt_sched_haz_t haz[3]; /* by wt_sched_buf_t; SEND is only ever read */
} rd_t;

static int rd_send(rd_t *g, int peer, wt_sched_buf_t buf)
{
	int deps[WT_SCHED_HAZ_MAX_DEPS], nd = wt_sched_haz_read_deps(&g->haz[buf], deps, 0);
	int v = wt_sched_send(g->p, peer, buf, 0, g->bytes, nd, deps);

	if (buf != WT_SCHED_BUF_SEND)
		wt_sched_haz_read(g->p, &g->haz[buf], v);
	return v;
}

static void rd_recv(rd_t *g, int peer, wt_sched_buf_t buf)
{
	int deps[WT_SCHED_HAZ_MAX_DEPS], nd = wt_sched_haz_write_deps(&g->haz[buf], deps, 0);

	wt_sched_haz_write(&g->haz[buf], wt_sched_recv(g->p, peer, buf, 0, g->bytes, nd, deps));
}

/* dst = dst op src (copy: dst = src). */
static void rd_local(rd_t *g, int copy, wt_sched_buf_t dst, wt_sched_buf_t src)
{
	int deps[2 * WT_SCHED_HAZ_MAX_DEPS], nd, v;

	nd = wt_sched_haz_write_deps(&g->haz[dst], deps, 0);
	nd = wt_sched_haz_read_deps(&g->haz[src], deps, nd);
	if (copy)
		v = wt_sched_copy(g->p, dst, 0, src, 0, g->bytes, nd, deps);
	else
		v = wt_sched_reduce(g->p, dst, 0, src, 0, g->bytes, nd, deps);
	if (src != WT_SCHED_BUF_SEND)
		wt_sched_haz_read(g->p, &g->haz[src], v);
	wt_sched_haz_write(&g->haz[dst], v);
}

/* Combine the value received into `in` with the current value in `cur`, lower rank's
 * operand first so that both partners compute bit-identical results even where the op
 * is not symmetric in its bits (NaN payloads, signed zeros). Returns the new location. */
static wt_sched_buf_t rd_combine(rd_t *g, wt_sched_buf_t cur, wt_sched_buf_t in, int peer_lower)
{
	if (peer_lower) {
		rd_local(g, 0, in, cur);
		return in;
	}
	rd_local(g, 0, cur, in);
	return cur;
}

static wt_sched_buf_t other_buf(wt_sched_buf_t b)
{
	return b == WT_SCHED_BUF_RECV ? WT_SCHED_BUF_SCRATCH : WT_SCHED_BUF_RECV;
}

static int real_rank(int nr, int rem)
{
	return nr < rem ? 2 * nr + 1 : nr + rem;
}

weft_status_t wt_sched_allreduce_recdbl(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	rd_t g = {.p = p};
	size_t elem = wt_util_dtype_size(a->dtype);
	int n = a->size, r = a->rank, p2 = 1, rem, nr;
	wt_sched_buf_t cur = WT_SCHED_BUF_RECV, first = WT_SCHED_BUF_RECV;

	if (!elem || n < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "recdbl: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	if (n == 1 || a->count == 0)
		return wt_sched_allreduce_local(a, p);
	g.bytes = a->count * elem;
	for (int i = 0; i < 3; i++)
		wt_sched_haz_init(&g.haz[i]);
	while (p2 <= n / 2)
		p2 *= 2;
	rem = n - p2;
	if (r < 2 * rem && r % 2 == 0) {
		rd_send(&g, r + 1, a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND);
		rd_recv(&g, r + 1, WT_SCHED_BUF_RECV);
		return WEFT_OK;
	}
	wt_sched_scratch(p, g.bytes);
	if (!a->in_place) {
		/* The first send can go straight from SEND while the copy runs. */
		first = WT_SCHED_BUF_SEND;
		rd_local(&g, 1, WT_SCHED_BUF_RECV, WT_SCHED_BUF_SEND);
	}
	if (r < 2 * rem) {
		rd_recv(&g, r - 1, WT_SCHED_BUF_SCRATCH);
		cur = rd_combine(&g, cur, WT_SCHED_BUF_SCRATCH, 1);
		first = cur;
		nr = r / 2;
	} else {
		nr = r - rem;
	}
	for (int mask = 1; mask < p2; mask <<= 1) {
		int peer = real_rank(nr ^ mask, rem);
		wt_sched_buf_t in = other_buf(cur);

		rd_send(&g, peer, mask == 1 ? first : cur);
		rd_recv(&g, peer, in);
		cur = rd_combine(&g, cur, in, peer < r);
	}
	if (cur != WT_SCHED_BUF_RECV)
		rd_local(&g, 1, WT_SCHED_BUF_RECV, cur);
	if (a->op == WEFT_AVG) {
		int deps[WT_SCHED_HAZ_MAX_DEPS];
		int nd = wt_sched_haz_write_deps(&g.haz[WT_SCHED_BUF_RECV], deps, 0);

		wt_sched_haz_write(&g.haz[WT_SCHED_BUF_RECV],
				   wt_sched_div(p, WT_SCHED_BUF_RECV, 0, g.bytes, nd, deps));
	}
	if (r < 2 * rem)
		rd_send(&g, r - 1, WT_SCHED_BUF_RECV);
	return WEFT_OK;
}
