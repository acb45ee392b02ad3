/* One-shot collectives through shared slots (layers/schedule) for tiny messages among the
 * ranks of one host: each rank copies its contribution into its own slot and raises a
 * flag; every rank waits for the flags it needs and reads (or reduces) the peers' slots
 * directly, then releases them. No message, no copy through a ring: one store and one
 * cache-line transfer per flag. Reductions combine in rank order 0..n-1 from the slots
 * (our own contribution too), so every rank computes the same bits in every arrival order.
 * Serves allreduce, allgather, reduce_scatter, broadcast, reduce, alltoall and barrier when
 * what a rank publishes fits args->slot_bytes; chosen by the cost model (table.c) for tiny
 * sizes, and refused (UNSUPPORTED) without slots, so the message algorithms take over. */
#include <stdint.h>
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"

typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	size_t blk;	  /* count * element size */
	int put;	  /* our SLOT_PUT, -1 if none */
	int scratch_free; /* the step after which SCRATCH may be overwritten, -1 at once */
	int *wait_of;	  /* per rank: its SLOT_WAIT (ours: the PUT) */
} sl_t;

/* Refuse args the slots cannot serve: no slots, or more to publish than a slot holds. */
static weft_status_t sl_fits(const wt_sched_args_t *a, wt_sched_plan_t *p, size_t publish)
{
	if (a->slot_bytes == 0) {
		wt_sched_fail(p, WEFT_ERR_UNSUPPORTED,
			      "slots: the communicator has no shared slots (its ranks are not all "
			      "on one host reached over shm)");
		return WEFT_ERR_UNSUPPORTED;
	}
	if (publish > a->slot_bytes) {
		wt_sched_fail(p, WEFT_ERR_UNSUPPORTED,
			      "slots: %zu bytes to publish exceed the %zu-byte slot", publish,
			      a->slot_bytes);
		return WEFT_ERR_UNSUPPORTED;
	}
	return WEFT_OK;
}

/* One rank or nothing to move: what is left is a local copy (none in place); no slots. */
/* A call whose piece per rank (len bytes) may exceed a slot goes in parts of *part bytes
 * (whole elements), one slot call each (wt_sched_slot_part); refused without slots or
 * beyond WT_SCHED_SLOT_MAX_PARTS parts (the plan's checks grow with its steps). */
size_t wt_sched_slot_nparts(const wt_sched_args_t *a, size_t len, size_t *part)
{
	size_t es = wt_util_dtype_size(a->dtype), n;

	*part = es ? a->slot_bytes / es * es : 0;
	if (*part == 0)
		return 0;
	n = len > *part ? (len + *part - 1) / *part : 1;
	return n > WT_SCHED_SLOT_MAX_PARTS ? 0 : n;
}

/* The parts of a piece of len bytes per rank, each taking `calls` slot calls, or the plan
 * refused with why. */
static weft_status_t sl_parts(const wt_sched_args_t *a, wt_sched_plan_t *p, size_t len,
			      size_t calls, size_t *part, size_t *nparts)
{
	*nparts = wt_sched_slot_nparts(a, len, part);
	if (*part == 0)
		return sl_fits(a, p, len);
	if (*nparts == 0 || *nparts * calls > WT_SCHED_SLOT_MAX_PARTS) {
		wt_sched_fail(p, WEFT_ERR_UNSUPPORTED,
			      "slots: %zu bytes take more than %d slot calls of %zu", len,
			      WT_SCHED_SLOT_MAX_PARTS, *part);
		return WEFT_ERR_UNSUPPORTED;
	}
	return WEFT_OK;
}

static weft_status_t sl_local(const wt_sched_args_t *a, wt_sched_plan_t *p, size_t dst_off,
			      size_t src_off, size_t len)
{
	if (!a->in_place && len)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, dst_off, WT_SCHED_BUF_SEND, src_off, len, 0,
			      NULL);
	return WEFT_OK;
}

static weft_status_t sl_init(sl_t *g, const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	g->a = a;
	g->p = p;
	g->blk = a->count * wt_util_dtype_size(a->dtype);
	g->put = -1;
	g->scratch_free = -1;
	g->wait_of = malloc((size_t)a->size * sizeof(*g->wait_of));
	if (!g->wait_of) {
		wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "slots: out of memory for %d ranks", a->size);
		return WEFT_ERR_NO_MEMORY;
	}
	for (int r = 0; r < a->size; r++)
		g->wait_of[r] = -1;
	return WEFT_OK;
}

/* Publish len bytes of src at the start of our slot. */
static void sl_publish(sl_t *g, wt_sched_buf_t src, size_t src_off, size_t len)
{
	g->put = wt_sched_slot_put(g->p, src, src_off, 0, len, 0, NULL);
}

/* Wait for every peer's slot. */
static void sl_wait_all(sl_t *g)
{
	const wt_sched_args_t *a = g->a;

	for (int i = 1; i < a->size; i++) {
		int q = (a->rank + i) % a->size;

		g->wait_of[q] = wt_sched_slot_wait(g->p, q, 0, NULL);
	}
}

/* dst (len bytes) = term 0 op term 1 op ... in rank order, term k being slot k at off and
 * ours the input at own / own_off. We never read our own slot: a later call of ours may
 * already be overwriting it (only the peers' releases guard a slot). When own is dst (in
 * place), rank 0 starts from it as it is and the others save it to scratch first (after
 * g->scratch_free: a call in pieces reuses the scratch once the piece before has summed it);
 * in place every write to dst waits for the PUT, which reads the input out of it. */
static int sl_reduce_all(sl_t *g, wt_sched_buf_t dst, size_t dst_off, size_t off, size_t len,
			 wt_sched_buf_t own, size_t own_off)
{
	int me = g->a->rank, acc = -1, save = -1;
	int aliased = own == dst && own_off == dst_off;

	if (aliased && me == 0) {
		acc = g->put;
	} else if (aliased) {
		wt_sched_scratch(g->p, len);
		save = wt_sched_copy(g->p, WT_SCHED_BUF_SCRATCH, 0, own, own_off, len,
				     g->scratch_free >= 0 ? 1 : 0, &g->scratch_free);
		g->wait_of[me] = save;
		own = WT_SCHED_BUF_SCRATCH;
		own_off = 0;
	}
	for (int k = acc < 0 ? 0 : 1; k < g->a->size; k++) {
		int deps[3], nd = 0;

		if (g->wait_of[k] >= 0)
			deps[nd++] = g->wait_of[k];
		if (acc >= 0)
			deps[nd++] = acc;
		else if (g->a->in_place)
			deps[nd++] = g->put; /* the PUT reads an in-place input out of dst */
		if (acc < 0 && save >= 0 && k != me)
			deps[nd++] = save;
		if (k == me && acc < 0)
			acc = wt_sched_copy(g->p, dst, dst_off, own, own_off, len, nd, deps);
		else if (k == me)
			acc = wt_sched_reduce(g->p, dst, dst_off, own, own_off, len, nd, deps);
		else if (acc < 0)
			acc = wt_sched_slot_copy(g->p, dst, dst_off, k, off, len, nd, deps);
		else
			acc = wt_sched_slot_reduce(g->p, dst, dst_off, k, off, len, nd, deps);
	}
	return acc;
}

static weft_status_t sl_finish(sl_t *g, int acc, size_t div_len)
{
	if (g->a->op == WEFT_AVG && div_len && acc >= 0)
		wt_sched_div(g->p, WT_SCHED_BUF_RECV, 0, div_len, 1, &acc);
	wt_sched_slot_done(g->p);
	free(g->wait_of);
	return WEFT_OK;
}

weft_status_t wt_sched_allreduce_slots(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	sl_t g;
	size_t bytes = a->count * wt_util_dtype_size(a->dtype);

	if (a->size == 1 || a->count == 0)
		return wt_sched_allreduce_local(a, p);
	if (sl_fits(a, p, bytes))
		return WEFT_ERR_UNSUPPORTED;
	if (sl_init(&g, a, p))
		return WEFT_ERR_NO_MEMORY;
	wt_sched_buf_t in = a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;

	sl_publish(&g, in, 0, bytes);
	sl_wait_all(&g);
	return sl_finish(&g, sl_reduce_all(&g, WT_SCHED_BUF_RECV, 0, 0, bytes, in, 0), bytes);
}

/* Our block goes out of SEND (in place: our block of RECV) and every peer's block comes
 * straight from its slot. */
/* A block larger than a slot goes in parts, one slot call each: every rank publishes
 * piece k of its block and copies piece k of every peer's (4 copies of each byte at 4
 * ranks, where a ring makes 6, and no reader needs its writer running). */
weft_status_t wt_sched_allgather_slots(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	sl_t g;
	size_t blk = a->count * wt_util_dtype_size(a->dtype), mine, part, nparts;

	mine = (size_t)a->rank * blk;
	if (blk == 0 || a->size == 1)
		return sl_local(a, p, mine, 0, blk);
	if (sl_parts(a, p, blk, 1, &part, &nparts))
		return WEFT_ERR_UNSUPPORTED;
	if (sl_init(&g, a, p))
		return WEFT_ERR_NO_MEMORY;
	for (size_t k = 0; k < nparts; k++) {
		size_t off = k * part, len = blk - off < part ? blk - off : part;

		wt_sched_slot_part(p, (unsigned)k);
		sl_publish(&g, a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND,
			   (a->in_place ? mine : 0) + off, len);
		sl_wait_all(&g);
		for (int q = 0; q < a->size; q++) {
			if (q != a->rank)
				wt_sched_slot_copy(p, WT_SCHED_BUF_RECV, (size_t)q * blk + off, q,
						   0, len, 1, &g.wait_of[q]);
			else if (!a->in_place && k == 0)
				wt_sched_copy(p, WT_SCHED_BUF_RECV, mine, WT_SCHED_BUF_SEND, 0, blk,
					      0, NULL);
		}
		if (k + 1 < nparts)
			wt_sched_slot_done(p);
	}
	return sl_finish(&g, -1, 0);
}

/* Every rank publishes its whole input; block r is reduced by rank r from every slot in
 * rank order. In place RECV is our block of SEND, read by the PUT before it is written. */
weft_status_t wt_sched_reduce_scatter_slots(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	sl_t g;
	size_t blk = a->count * wt_util_dtype_size(a->dtype), mine;

	if (blk == 0 || a->size == 1)
		return sl_local(a, p, 0, 0, blk);
	if (sl_fits(a, p, blk * (size_t)a->size))
		return WEFT_ERR_UNSUPPORTED;
	if (sl_init(&g, a, p))
		return WEFT_ERR_NO_MEMORY;
	mine = (size_t)a->rank * blk;
	sl_publish(&g, WT_SCHED_BUF_SEND, 0, blk * (size_t)a->size);
	sl_wait_all(&g);
	/* in place RECV is our block of SEND: the same bytes, named as RECV */
	return sl_finish(&g,
			 sl_reduce_all(&g, WT_SCHED_BUF_RECV, 0, mine, blk,
				       a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND,
				       a->in_place ? 0 : mine),
			 blk);
}

/* The root publishes its buffer; the others copy it out of the root's slot. */
/* A broadcast larger than a slot goes in parts, one slot call each (wt_sched_slot_part): the
 * root publishes the next piece while the readers copy out the ones before, up to the ring's
 * depth ahead. Each byte is copied once in and once out per reader, and no reader needs the
 * root running at the moment it copies (4 ranks on 2 cores, a loop of 1 MiB slot
 * broadcasts against one call by messages: 4 MiB 0.79-0.92 / 1.42-1.59 ms, 16 MiB 3.3-4.1 /
 * 5.7-6.4, 64 MiB 12.9-15.8 / 20.7-24.6). At most WT_SCHED_SLOT_MAX_PARTS parts: the plan's
 * checks grow with its steps. */
weft_status_t wt_sched_bcast_slots(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t bytes = a->count * wt_util_dtype_size(a->dtype), part, nparts;

	if (a->size == 1 || bytes == 0)
		return WEFT_OK;
	if (sl_parts(a, p, bytes, 1, &part, &nparts))
		return WEFT_ERR_UNSUPPORTED;
	for (size_t k = 0; k < nparts; k++) {
		size_t off = k * part, len = bytes - off < part ? bytes - off : part;

		wt_sched_slot_part(p, (unsigned)k);
		if (a->rank == a->root) {
			wt_sched_slot_put(p, WT_SCHED_BUF_SEND, off, 0, len, 0, NULL);
		} else {
			int w = wt_sched_slot_wait(p, a->root, 0, NULL);

			wt_sched_slot_copy(p, WT_SCHED_BUF_RECV, off, a->root, 0, len, 1, &w);
		}
		wt_sched_slot_done(p);
	}
	return WEFT_OK;
}

/* Everyone publishes; the root alone reduces, in rank order. */
weft_status_t wt_sched_reduce_slots(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	sl_t g;
	size_t bytes = a->count * wt_util_dtype_size(a->dtype);
	int acc = -1;

	if (a->size == 1 || bytes == 0)
		return sl_local(a, p, 0, 0, a->size == 1 ? bytes : 0);
	if (sl_fits(a, p, bytes))
		return WEFT_ERR_UNSUPPORTED;
	if (sl_init(&g, a, p))
		return WEFT_ERR_NO_MEMORY;
	/* in place is the root's form only: RECV is 0 bytes elsewhere */
	wt_sched_buf_t in =
	    a->in_place && a->rank == a->root ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;

	sl_publish(&g, in, 0, bytes);
	if (a->rank == a->root) {
		sl_wait_all(&g);
		acc = sl_reduce_all(&g, WT_SCHED_BUF_RECV, 0, 0, bytes, in, 0);
	}
	return sl_finish(&g, acc, a->rank == a->root ? bytes : 0);
}

/* Where rank r's slot starts in its send buffer for an alltoall of blk-byte blocks: the
 * first and the last rank leave out their own block, which no one reads (the others'
 * blocks for the peers lie on both sides of theirs). */
static size_t a2a_lo(int r, size_t blk)
{
	return r == 0 ? blk : 0;
}

static size_t a2a_publish(int r, int size, size_t blk)
{
	return (r == 0 || r == size - 1 ? (size_t)size - 1 : (size_t)size) * blk;
}

/* Bytes of a publish of pub bytes that go in the part starting at off (parts of part). */
static size_t a2a_part_len(size_t pub, size_t off, size_t part)
{
	return off >= pub ? 0 : pub - off < part ? pub - off : part;
}

size_t wt_sched_alltoall_slot_most(int size, size_t blk)
{
	return a2a_publish(size > 2 ? 1 : 0, size, blk);
}

/* Whether an alltoall goes through the slots in parts when its publish exceeds one: only at
 * 2 ranks (each publishes the one block its peer reads, as an allgather does) and out of
 * place (in place a part would publish bytes an earlier part's read overwrote). */
int wt_sched_alltoall_slot_parts_ok(const wt_sched_args_t *a)
{
	return a->size == 2 && !a->in_place;
}

/* Every rank publishes its send buffer but, for the first and last rank, its own block
 * (a2a_lo); block q of ours comes from rank q's slot where our block lies in what q
 * published. In place (SEND == RECV, one slot call) the PUT reads everything before any
 * block is written and our own block stays where it is. */
weft_status_t wt_sched_alltoall_slots(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	sl_t g;
	size_t blk = a->count * wt_util_dtype_size(a->dtype), mine, most, part, nparts, lo, pub;

	mine = (size_t)a->rank * blk;
	if (blk == 0 || a->size == 1)
		return sl_local(a, p, mine, mine, blk);
	/* the most any rank publishes, so that every rank decides alike */
	most = wt_sched_alltoall_slot_most(a->size, blk);
	if (wt_sched_alltoall_slot_parts_ok(a)) {
		if (sl_parts(a, p, most, 1, &part, &nparts))
			return WEFT_ERR_UNSUPPORTED;
	} else {
		if (sl_fits(a, p, most))
			return WEFT_ERR_UNSUPPORTED;
		part = most;
		nparts = 1;
	}
	if (sl_init(&g, a, p))
		return WEFT_ERR_NO_MEMORY;
	lo = a2a_lo(a->rank, blk);
	pub = a2a_publish(a->rank, a->size, blk);
	for (size_t k = 0; k < nparts; k++) {
		size_t off = k * part;

		wt_sched_slot_part(p, (unsigned)k);
		sl_publish(&g, WT_SCHED_BUF_SEND, lo + off, a2a_part_len(pub, off, part));
		sl_wait_all(&g);
		for (int q = 0; q < a->size; q++) {
			/* our block of q's send buffer, within what q publishes in part k */
			size_t s0 = a2a_lo(q, blk) + off;
			size_t s1 = s0 + a2a_part_len(a2a_publish(q, a->size, blk), off, part);
			size_t i0 = mine > s0 ? mine : s0, i1 = mine + blk < s1 ? mine + blk : s1;
			int deps[2] = {g.wait_of[q], g.put};

			if (q != a->rank && i0 < i1)
				wt_sched_slot_copy(p, WT_SCHED_BUF_RECV,
						   (size_t)q * blk + i0 - mine, q, i0 - s0, i1 - i0,
						   2, deps);
			else if (q == a->rank && !a->in_place && k == 0)
				wt_sched_copy(p, WT_SCHED_BUF_RECV, mine, WT_SCHED_BUF_SEND, mine,
					      blk, 0, NULL);
		}
		if (k + 1 < nparts)
			wt_sched_slot_done(p);
	}
	return sl_finish(&g, -1, 0);
}

/* A flag each, nothing else: everyone has arrived once every peer's flag is up. */
weft_status_t wt_sched_barrier_slots(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	sl_t g;

	if (a->size == 1)
		return WEFT_OK;
	if (sl_fits(a, p, 0))
		return WEFT_ERR_UNSUPPORTED;
	if (sl_init(&g, a, p))
		return WEFT_ERR_NO_MEMORY;
	sl_publish(&g, WT_SCHED_BUF_SEND, 0, 0);
	sl_wait_all(&g);
	return sl_finish(&g, -1, 0);
}

/* Bytes before share q of a piece of cnt elements, and its length: the elements split as
 * evenly as they go, the first cnt % n shares one longer. */
static void sl_share(size_t cnt, int n, int q, size_t es, size_t *off, size_t *len)
{
	size_t base = cnt / (size_t)n, extra = cnt % (size_t)n, uq = (size_t)q;

	*off = (uq * base + (uq < extra ? uq : extra)) * es;
	*len = (base + (uq < extra ? 1 : 0)) * es;
}

/* Two-shot: a reduce-scatter and an allgather through the slots, two slot calls per piece of
 * a slot (a vector larger than a slot goes in pieces). In the first every rank publishes the
 * piece and sums its share of it from every slot, in rank order, into RECV; in the second it
 * publishes that share and copies every peer's share out of the peer's slot. Each rank reads
 * the piece once from the slots where the one-shot reads it n times. In place, the reduced
 * shares overwrite RECV only after the first PUT has read the input out of it. */
weft_status_t wt_sched_allreduce_slots_twoshot(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	sl_t g;
	size_t es = wt_util_dtype_size(a->dtype), bytes = a->count * es, part, nparts;
	int n = a->size, r = a->rank;

	if (n == 1 || a->count == 0)
		return wt_sched_allreduce_local(a, p);
	if (sl_parts(a, p, bytes, 2, &part, &nparts))
		return WEFT_ERR_UNSUPPORTED;
	if (sl_init(&g, a, p))
		return WEFT_ERR_NO_MEMORY;
	wt_sched_buf_t in = a->in_place ? WT_SCHED_BUF_RECV : WT_SCHED_BUF_SEND;

	for (size_t k = 0; k < nparts; k++) {
		size_t off = k * part, len = bytes - off < part ? bytes - off : part, so, sl;
		int acc, put_a;

		sl_share(len / es, n, r, es, &so, &sl);
		for (int q = 0; q < n; q++)
			g.wait_of[q] = -1;
		wt_sched_slot_part(p, (unsigned)(2 * k));
		sl_publish(&g, in, off, len);
		put_a = g.put;
		sl_wait_all(&g);
		acc = sl_reduce_all(&g, WT_SCHED_BUF_RECV, off + so, so, sl, in, off + so);
		g.scratch_free = acc; /* the sum read our saved share before it ended */
		if (a->op == WEFT_AVG && sl)
			acc = wt_sched_div(p, WT_SCHED_BUF_RECV, off + so, sl, 1, &acc);
		wt_sched_slot_done(p);
		wt_sched_slot_part(p, (unsigned)(2 * k + 1));
		g.put = wt_sched_slot_put(p, WT_SCHED_BUF_RECV, off + so, 0, sl, acc >= 0 ? 1 : 0,
					  &acc);
		for (int i = 1; i < n; i++) {
			int q = (r + i) % n, deps[2], nd = 0;
			size_t qo, ql;

			sl_share(len / es, n, q, es, &qo, &ql);
			deps[nd++] = wt_sched_slot_wait(p, q, 0, NULL);
			if (a->in_place)
				deps[nd++] = put_a; /* it read our input's share q out of RECV */
			wt_sched_slot_copy(p, WT_SCHED_BUF_RECV, off + qo, q, 0, ql, nd, deps);
		}
		if (k + 1 < nparts)
			wt_sched_slot_done(p);
	}
	return sl_finish(&g, -1, 0);
}
