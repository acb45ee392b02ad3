/* Ring allgather (layers/schedule): n-1 steps, each forwarding to the right neighbour the
 * block received from the left one, every block cut into segments so steps pipeline.
 * Combination order: none (blocks are only moved, never combined). */
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

/* Up to this block size the own block is copied into RECV as its sends go out, each piece
 * while still in cache, instead of by a COPY first. Beyond it, the copies a sender makes
 * ahead of its peer (a whole shm ring's window) push the ring's lines out of cache before
 * the peer reads them. 2 ranks, weft-perf, alternating runs: allgather 2 MiB (1 MiB
 * blocks) 86-92 us against 94-101 with the COPY, 4 MiB 207-224 against 213-229, but 8 MiB
 * 479-536 against 450-474. */
#define AGR_TEE_MAX ((size_t)2 << 20)

typedef struct {
	wt_sched_plan_t *p;
	size_t block, seg; /* bytes */
	int n, r, in_place;
	int big; /* RECV >= WT_SCHED_STREAM_MIN: blocks not forwarded are streamed in */
	int tee; /* the own block reaches RECV with its sends (WT_SCHED_SEND_COPY) */
} agr_t;

static int ring_mod(int x, int n)
{
	return ((x % n) + n) % n;
}

static size_t nseg(const agr_t *g)
{
	return (g->block + g->seg - 1) / g->seg;
}

static size_t seg_len(const agr_t *g, size_t k)
{
	size_t left = g->block - k * g->seg;

	return left < g->seg ? left : g->seg;
}

/* Every RECV region is written exactly once, so the only edges needed are "forward a
 * segment after it arrived"; recv[b * nseg + k] holds the step that wrote block b seg k. */
static void agr_build(agr_t *g, int *recv)
{
	int n = g->n, r = g->r, right = ring_mod(r + 1, n), left = ring_mod(r - 1, n);
	size_t ns = nseg(g), own = (size_t)r * g->block;

	if (!g->in_place && !g->tee)
		(g->big ? wt_sched_copy_stream : wt_sched_copy)(
		    g->p, WT_SCHED_BUF_RECV, own, WT_SCHED_BUF_SEND, 0, g->block, 0, NULL);

	for (int s = 0; s < n - 1; s++) {
		/* The last step's blocks are not forwarded: nothing reads them again. */
		int (*recv_fn)(wt_sched_plan_t *, int, wt_sched_buf_t, size_t, size_t, int,
			       const int *) =
		    g->big && s == n - 2 ? wt_sched_recv_stream : wt_sched_recv;
		int bs = ring_mod(r - s, n), br = ring_mod(r - s - 1, n);

		for (size_t k = 0; k < ns; k++) {
			size_t off = k * g->seg, len = seg_len(g, k);
			int dep = recv[(size_t)bs * ns + k];

			/* The own block goes straight from the caller's buffer, and into ours
			 * as it goes out (read once, while in cache). */
			if (s == 0 && !g->in_place && g->tee)
				wt_sched_send_copy(g->p, right, WT_SCHED_BUF_SEND, off, len,
						   WT_SCHED_BUF_RECV, own + off, g->big, 0, NULL);
			else if (s == 0 && !g->in_place)
				wt_sched_send(g->p, right, WT_SCHED_BUF_SEND, off, len, 0, NULL);
			else if (s == 0)
				wt_sched_send(g->p, right, WT_SCHED_BUF_RECV, own + off, len, 0,
					      NULL);
			else
				wt_sched_send(g->p, right, WT_SCHED_BUF_RECV,
					      (size_t)bs * g->block + off, len, 1, &dep);
		}
		for (size_t k = 0; k < ns; k++)
			recv[(size_t)br * ns + k] =
			    recv_fn(g->p, left, WT_SCHED_BUF_RECV,
				    (size_t)br * g->block + k * g->seg, seg_len(g, k), 0, NULL);
	}
}

weft_status_t wt_sched_allgather_ring(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	agr_t g = {.p = p, .n = a->size, .r = a->rank, .in_place = a->in_place};
	size_t elem = wt_util_dtype_size(a->dtype);
	size_t seg = a->seg_bytes ? a->seg_bytes : WT_SCHED_DEFAULT_SEG_BYTES;
	int *recv;

	if (!elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "allgather ring: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	g.block = a->count * elem;
	if (!g.block)
		return WEFT_OK;
	g.big = g.block * (size_t)g.n >= WT_SCHED_STREAM_MIN;
	g.tee = g.block <= AGR_TEE_MAX;
	/* Segments stay whole elements so a message never splits one. */
	g.seg = seg / elem ? seg / elem * elem : elem;
	if (g.n == 1) {
		if (!g.in_place)
			wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, g.block, 0,
				      NULL);
		return WEFT_OK;
	}
	recv = calloc((size_t)g.n * nseg(&g), sizeof(*recv));
	if (!recv) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY,
			      "allgather ring: out of memory for %zu segments",
			      (size_t)g.n * nseg(&g));
		return WEFT_ERR_NO_MEMORY;
	}
	agr_build(&g, recv);
	free(recv);
	return WEFT_OK;
}
