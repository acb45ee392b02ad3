/* Allreduce straight through the peers' buffers (layers/schedule) for the ranks of one
 * host: rank r owns the r-th share of the vector; it sums every rank's input of that share,
 * reading the peers' buffers where they lie, into its own RECV and writes the result into
 * every peer's RECV. Each byte of input is read once, each byte of output written once, and
 * nothing passes through a ring when the peers' buffers can be mapped (weft_mem_alloc
 * memory); otherwise the executor moves the bytes by cross-memory attach.
 * The share goes in pieces that stay in cache between the sum and the writes. Two flag
 * rounds through the slots frame the call: the PUT says where our buffers are and that we
 * entered the call, the DONE that we finished with everyone's, and a rank leaves once every
 * peer's DONE is up (SLOT_DRAIN). Each share is summed by one rank, own input first, then
 * the peers' in rank order after it, so every rank gets the same bits. The last term of a
 * piece is combined and written to every RECV in the same pass (PEER_REDUCE_OUT, in blocks
 * that stay in L1), by streaming stores in calls larger than the caches, so memory sees
 * each input byte read once and each output byte written once, with no read-for-ownership.
 * 2 ranks, float32 in weft_mem, alternating runs of the two trees: 16 MiB 895-1047 us
 * summing each 64 KiB piece into a scratch and copying it out, against 611-772 fused. */
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

/* A piece of the share: small enough to stay in L2 between the sum and the writes, at most
 * WT_SCHED_DIRECT_MAX_PIECES of them (the plan's checks grow with its steps). */
#define DIRECT_PIECE ((size_t)64 * 1024)
#define DIRECT_MAX_PIECES 256
/* Vectors of at least this many bytes leave the scratch by streaming stores: beyond the
 * last-level cache (32 MiB here, shared by all the ranks' buffers) the buffers would not
 * stay cached for the next call anyway, and streaming saves the read-for-ownership (5% on
 * 64 MiB at 2 ranks); below it plain stores were up to 1.7x faster (1-8 MiB). */
#define DIRECT_STREAM_MIN ((size_t)16 << 20)

static size_t piece_bytes(size_t share, size_t es)
{
	size_t piece = DIRECT_PIECE;

	if (share / piece > DIRECT_MAX_PIECES)
		piece = (share + DIRECT_MAX_PIECES - 1) / DIRECT_MAX_PIECES;
	piece = piece / es * es;
	return piece ? piece : es;
}

/* Calls of at least DIRECT_STREAM_MIN bytes store around the caches. Below it the piece's
 * sum and copies stay in cache, where one long copy per RECV beats 4 KiB ones between the
 * blocks (2 ranks, alternating runs: 512 KiB 16-17 us copying from the scratch against
 * 23-25 us fused, 1 MiB 35-37 against 38-41), so only streaming calls fuse the last term
 * with the writes; AVG divides before it writes, so it never fuses. */
static int direct_stream(const wt_sched_args_t *a)
{
	return a->count * wt_util_dtype_size(a->dtype) >= DIRECT_STREAM_MIN;
}

static int direct_fuses(const wt_sched_args_t *a)
{
	return direct_stream(a) && a->op != WEFT_AVG;
}

/* One piece [off, off + len) of our share. In a call that fuses, the last term is combined
 * and written into every rank's RECV in one pass (PEER_REDUCE_OUT): with 2 ranks that is the whole
 * piece, our input op the peer's; with more, the terms before it are summed in the scratch (own
 * input first, then the peers'), where the piece stays in cache. Otherwise the whole sum
 * goes to the scratch (divided there for AVG) and is copied to every RECV. prev holds the steps
 * that read the scratch for the piece before, which the first write of this one must follow. */
static void direct_piece(const wt_sched_args_t *a, wt_sched_plan_t *p, const int *wait_of,
			 size_t off, size_t len, int *prev, int *nprev)
{
	int acc = -1, n = a->size, stream = direct_stream(a), fuse = direct_fuses(a);

	for (int i = 1; i < n; i++) {
		int q = (a->rank + i) % n;

		if (fuse && i == n - 1) {
			if (i == 1) { /* 2 ranks: no scratch; after the piece before all the same,
				       * as the executor runs them (and weft-sched simulates) */
				prev[(*nprev)++] = wait_of[q];
				int out = wt_sched_peer_reduce_out(p, q, off, WT_SCHED_BUF_SEND,
								   off, len, stream, *nprev, prev);

				*nprev = 0;
				prev[(*nprev)++] = out;
				return;
			}
			int deps[2] = {wait_of[q], acc};

			prev[(*nprev)++] = wt_sched_peer_reduce_out(p, q, off, WT_SCHED_BUF_SCRATCH,
								    0, len, stream, 2, deps);
			return;
		}
		if (i == 1) { /* scratch = our input op the first peer's: no copy first */
			prev[(*nprev)++] = wait_of[q];
			acc = wt_sched_peer_reduce_send(p, WT_SCHED_BUF_SCRATCH, 0, q, off, len,
							*nprev, prev);
			*nprev = 0;
		} else {
			int deps[2] = {wait_of[q], acc};

			acc = wt_sched_peer_reduce(p, WT_SCHED_BUF_SCRATCH, 0, q, WT_SCHED_BUF_SEND,
						   off, len, 2, deps);
		}
	}
	if (a->op == WEFT_AVG)
		acc = wt_sched_div(p, WT_SCHED_BUF_SCRATCH, 0, len, 1, &acc);
	for (int i = 1; i < n; i++)
		prev[(*nprev)++] = (stream ? wt_sched_peer_write_stream : wt_sched_peer_write)(
		    p, (a->rank + i) % n, off, WT_SCHED_BUF_SCRATCH, 0, len, 1, &acc);
	prev[(*nprev)++] = (stream ? wt_sched_copy_stream : wt_sched_copy)(
	    p, WT_SCHED_BUF_RECV, off, WT_SCHED_BUF_SCRATCH, 0, len, 1, &acc);
}

weft_status_t wt_sched_allreduce_direct(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t es = wt_util_dtype_size(a->dtype), lo, hi, piece;
	int *wait_of, done, put, nprev = 0;

	if (a->size == 1 || a->count == 0)
		return wt_sched_allreduce_local(a, p);
	if (a->slot_bytes < WT_SCHED_PEER_DESC_BYTES) {
		wt_sched_fail(p, WEFT_ERR_UNSUPPORTED,
			      "direct: the communicator's ranks cannot reach each other's buffers "
			      "(not all on one host over shm)");
		return WEFT_ERR_UNSUPPORTED;
	}
	/* wait_of, then the previous piece's scratch readers (n of them) and a wait */
	wait_of = malloc(((size_t)a->size * 2 + 1) * sizeof(*wait_of));
	if (!wait_of) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "direct: out of memory for %d ranks", a->size);
		return WEFT_ERR_NO_MEMORY;
	}
	/* We publish before we look at anyone: a rank that finds the peers' buffers wrong
	 * (other counts) fails, but its peers find ours wrong too instead of waiting for it. */
	put = wt_sched_slot_put_bufs(p, 0, NULL);
	for (int q = 0; q < a->size; q++)
		wait_of[q] = q == a->rank ? -1 : wt_sched_slot_wait(p, q, 1, &put);
	lo = a->count * (size_t)a->rank / (size_t)a->size * es;
	hi = a->count * ((size_t)a->rank + 1) / (size_t)a->size * es;
	piece = piece_bytes(hi - lo, es);
	if (a->size > 2 || !direct_fuses(a))
		wt_sched_scratch(p, piece);
	for (size_t off = lo; off < hi; off += piece)
		direct_piece(a, p, wait_of, off, hi - off < piece ? hi - off : piece,
			     wait_of + a->size, &nprev);
	free(wait_of);
	done = wt_sched_slot_done(p);
	for (int q = 0; q < a->size; q++)
		if (q != a->rank)
			wt_sched_slot_drain(p, q, 1, &done);
	return WEFT_OK;
}
