/* Ring allreduce (layers/schedule): reduce-scatter then allgather around the ring, each
 * chunk cut into segments so that steps of different segments pipeline; optionally with
 * float32 data crossing links as bf16 / fp16 (wire compression, see ring_build_wire). */
#include <stdlib.h>

#include "layers/schedule/algos/algos.h"
#include "layers/schedule/algos/hazard.h"
#include "lib/util/dtype.h"

typedef struct {
	const wt_sched_args_t *a;
	wt_sched_plan_t *p;
	size_t elem, seg_elems;
	int n, r;
	size_t *seg_base;    /* per chunk: index of its first segment in haz */
	wt_sched_haz_t *haz; /* per segment of RECV */
	/* Compression: the 16-bit format and, per segment, the hazards of its 16-bit mirror
	 * in SCRATCH (element e at byte 2e). NULL when uncompressed. */
	weft_dtype_t wire;
	wt_sched_haz_t *whaz;
} ring_t;

/* Chunks split count as evenly as possible on element boundaries; the first count % n
 * chunks get one element more. Every rank computes the same layout. */
static size_t chunk_elems(const ring_t *g, int c)
{
	size_t n = (size_t)g->n;

	return g->a->count / n + ((size_t)c < g->a->count % n);
}

static size_t chunk_first(const ring_t *g, int c)
{
	size_t n = (size_t)g->n, rem = g->a->count % n, uc = (size_t)c;

	return g->a->count / n * uc + (uc < rem ? uc : rem);
}

static size_t chunk_nseg(const ring_t *g, int c)
{
	return (chunk_elems(g, c) + g->seg_elems - 1) / g->seg_elems;
}

static void seg_range(const ring_t *g, int c, size_t k, size_t *off, size_t *len)
{
	size_t first = k * g->seg_elems, e = chunk_elems(g, c) - first;

	if (e > g->seg_elems)
		e = g->seg_elems;
	*off = (chunk_first(g, c) + first) * g->elem;
	*len = e * g->elem;
}

static int ring_mod(int x, int n)
{
	return ((x % n) + n) % n;
}

static wt_sched_haz_t *seg_haz(const ring_t *g, int c, size_t k)
{
	return &g->haz[g->seg_base[c] + k];
}

/* Send segment k of chunk c; from SEND (the untouched input) or from RECV. */
static void ring_send(ring_t *g, int c, size_t k, int from_send)
{
	wt_sched_haz_t *h = seg_haz(g, c, k);
	int deps[WT_SCHED_HAZ_MAX_DEPS], nd = 0, peer = ring_mod(g->r + 1, g->n), v;
	size_t off, len;

	seg_range(g, c, k, &off, &len);
	if (from_send) {
		wt_sched_send(g->p, peer, WT_SCHED_BUF_SEND, off, len, 0, NULL);
		return;
	}
	nd = wt_sched_haz_read_deps(h, deps, nd);
	v = wt_sched_send(g->p, peer, WT_SCHED_BUF_RECV, off, len, nd, deps);
	wt_sched_haz_read(g->p, h, v);
}

/* How a segment's receive lands: combined into RECV, combined with SEND's bytes into RECV
 * (the first combination of a segment, with no copy before it), copied, or copied around
 * the caches (a final block of a call too large for them, not forwarded:
 * WT_SCHED_STREAM_MIN). */
enum { RING_COPY, RING_REDUCE, RING_REDUCE_SEND, RING_STREAM };

static void ring_recv(ring_t *g, int c, size_t k, int how)
{
	wt_sched_haz_t *h = seg_haz(g, c, k);
	int deps[WT_SCHED_HAZ_MAX_DEPS], nd = 0, peer = ring_mod(g->r - 1, g->n), v;
	size_t off, len;

	seg_range(g, c, k, &off, &len);
	nd = wt_sched_haz_write_deps(h, deps, nd);
	if (how == RING_REDUCE)
		v = wt_sched_recv_reduce(g->p, peer, WT_SCHED_BUF_RECV, off, len, nd, deps);
	else if (how == RING_REDUCE_SEND)
		v = wt_sched_recv_reduce_from(g->p, peer, WT_SCHED_BUF_RECV, off, WT_SCHED_BUF_SEND,
					      off, len, nd, deps);
	else if (how == RING_STREAM)
		v = wt_sched_recv_stream(g->p, peer, WT_SCHED_BUF_RECV, off, len, nd, deps);
	else
		v = wt_sched_recv(g->p, peer, WT_SCHED_BUF_RECV, off, len, nd, deps);
	wt_sched_haz_write(h, v);
}

/* COPY from SEND (copy != 0) or DIV in place on one RECV segment. */
static void ring_local(ring_t *g, int c, size_t k, int copy)
{
	wt_sched_haz_t *h = seg_haz(g, c, k);
	int deps[WT_SCHED_HAZ_MAX_DEPS], nd = 0, v;
	size_t off, len;

	seg_range(g, c, k, &off, &len);
	nd = wt_sched_haz_write_deps(h, deps, nd);
	if (copy)
		v = wt_sched_copy(g->p, WT_SCHED_BUF_RECV, off, WT_SCHED_BUF_SEND, off, len, nd,
				  deps);
	else
		v = wt_sched_div(g->p, WT_SCHED_BUF_RECV, off, len, nd, deps);
	wt_sched_haz_write(h, v);
}

/* ---- wire compression ----
 * SCRATCH holds a 16-bit mirror of the vector (element e at byte 2e). Every message is a
 * segment of that mirror; RECV stays float32 and every reduction accumulates there. One
 * mirror slot serves all the traffic of its segment: the hazards order a segment's
 * receive, reduce, narrow and send, and the allgather forwards the 16-bit bits it received
 * without rounding again.
 *
 * Error bound (SUM): with u the unit roundoff of the wire format (bf16 keeps 8 significant
 * bits: u = 2^-8; fp16 keeps 11: u = 2^-11), each element's partial sum is rounded to the
 * wire format once per link it crosses in the reduce-scatter (n - 1 times) and the owner
 * rounds the final sum once more before the allgather, with n - 1 float32 additions in
 * between, so
 *   |result - exact| <= ((1 + u)^n * (1 + 2^-24)^(n-1) - 1) * sum_i |x_i|  ~  n * u * sum|x_i|
 * AVG is the same bound divided by n (one more float32 rounding for the division). fp16
 * adds an absolute n * 2^-25 where values fall below 2^-14 (subnormal), and any partial
 * sum reaching 65520 in magnitude becomes +-inf. MIN / MAX give exactly the wire rounding
 * of the true result (rounding is monotonic); PROD is within about 2n * u relative. Every
 * rank ends bit-identical: the result is the owner's 16-bit bits, widened. */

/* Two hazards can name the same step (a reduce is both the segment's writer and its
 * mirror's reader); one edge is enough. */
static int dedup(int *deps, int n)
{
	int m = 0;

	for (int i = 0; i < n; i++) {
		int k = 0;

		while (k < m && deps[k] != deps[i])
			k++;
		if (k == m)
			deps[m++] = deps[i];
	}
	return m;
}

static size_t wire_off(size_t off)
{
	return off / 2; /* float32 byte offset -> 16-bit mirror byte offset */
}

/* NARROW segment (c, k) of buf into its mirror slot. */
static void wire_narrow(ring_t *g, int c, size_t k, wt_sched_buf_t buf)
{
	wt_sched_haz_t *h = seg_haz(g, c, k), *w = &g->whaz[g->seg_base[c] + k];
	int deps[2 * WT_SCHED_HAZ_MAX_DEPS], nd, v;
	size_t off, len;

	seg_range(g, c, k, &off, &len);
	nd = wt_sched_haz_write_deps(w, deps, 0);
	if (buf == WT_SCHED_BUF_RECV)
		nd = wt_sched_haz_read_deps(h, deps, nd);
	v = wt_sched_narrow(g->p, WT_SCHED_BUF_SCRATCH, wire_off(off), buf, off, len / 2, g->wire,
			    dedup(deps, nd), deps);
	if (buf == WT_SCHED_BUF_RECV)
		wt_sched_haz_read(g->p, h, v);
	wt_sched_haz_write(w, v);
}

static void wire_send(ring_t *g, int c, size_t k)
{
	wt_sched_haz_t *w = &g->whaz[g->seg_base[c] + k];
	int deps[WT_SCHED_HAZ_MAX_DEPS], nd = wt_sched_haz_read_deps(w, deps, 0), v;
	size_t off, len;

	seg_range(g, c, k, &off, &len);
	v = wt_sched_send(g->p, ring_mod(g->r + 1, g->n), WT_SCHED_BUF_SCRATCH, wire_off(off),
			  len / 2, nd, deps);
	wt_sched_haz_read(g->p, w, v);
}

/* Receive segment (c, k) into its mirror slot, then reduce (or copy) it into RECV. */
static void wire_recv(ring_t *g, int c, size_t k, int reduce)
{
	wt_sched_haz_t *h = seg_haz(g, c, k), *w = &g->whaz[g->seg_base[c] + k];
	int deps[2 * WT_SCHED_HAZ_MAX_DEPS], nd = wt_sched_haz_write_deps(w, deps, 0), v;
	size_t off, len;

	seg_range(g, c, k, &off, &len);
	v = wt_sched_recv(g->p, ring_mod(g->r - 1, g->n), WT_SCHED_BUF_SCRATCH, wire_off(off),
			  len / 2, nd, deps);
	wt_sched_haz_write(w, v);
	nd = wt_sched_haz_read_deps(w, deps, 0);
	nd = wt_sched_haz_write_deps(h, deps, nd);
	if (reduce)
		v = wt_sched_reduce_widen(g->p, WT_SCHED_BUF_RECV, off, WT_SCHED_BUF_SCRATCH,
					  wire_off(off), len, g->wire, dedup(deps, nd), deps);
	else
		v = wt_sched_widen(g->p, WT_SCHED_BUF_RECV, off, WT_SCHED_BUF_SCRATCH,
				   wire_off(off), len, g->wire, dedup(deps, nd), deps);
	wt_sched_haz_read(g->p, w, v);
	wt_sched_haz_write(h, v);
}

/* The owner rounds its reduced segment through the wire format, keeps the rounded value
 * (so it matches what every other rank will receive) and starts it around the ring. */
static void wire_own(ring_t *g, int c, size_t k)
{
	wt_sched_haz_t *h = seg_haz(g, c, k), *w = &g->whaz[g->seg_base[c] + k];
	int deps[2 * WT_SCHED_HAZ_MAX_DEPS], nd, v;
	size_t off, len;

	wire_narrow(g, c, k, WT_SCHED_BUF_RECV);
	wire_send(g, c, k);
	seg_range(g, c, k, &off, &len);
	nd = wt_sched_haz_read_deps(w, deps, 0);
	nd = wt_sched_haz_write_deps(h, deps, nd);
	v = wt_sched_widen(g->p, WT_SCHED_BUF_RECV, off, WT_SCHED_BUF_SCRATCH, wire_off(off), len,
			   g->wire, dedup(deps, nd), deps);
	wt_sched_haz_read(g->p, w, v);
	wt_sched_haz_write(h, v);
}

/* The same schedule as ring_build with every message in the wire format. */
static void ring_build_wire(ring_t *g)
{
	int n = g->n, r = g->r, in_place = g->a->in_place, own = ring_mod(r + 1, n);

	wt_sched_scratch(g->p, g->a->count * 2);
	if (!in_place)
		for (int c = 0; c < n; c++)
			for (size_t k = 0; c != r && k < chunk_nseg(g, c); k++)
				ring_local(g, c, k, 1);
	for (int s = 0; s < n - 1; s++) {
		int cs = ring_mod(r - s, n), cr = ring_mod(r - s - 1, n);

		for (size_t k = 0; k < chunk_nseg(g, cs); k++) {
			wire_narrow(g, cs, k,
				    s == 0 && !in_place ? WT_SCHED_BUF_SEND : WT_SCHED_BUF_RECV);
			wire_send(g, cs, k);
		}
		for (size_t k = 0; k < chunk_nseg(g, cr); k++)
			wire_recv(g, cr, k, 1);
	}
	if (g->a->op == WEFT_AVG)
		for (size_t k = 0; k < chunk_nseg(g, own); k++)
			ring_local(g, own, k, 0);
	for (int s = 0; s < n - 1; s++) {
		int cs = ring_mod(r + 1 - s, n), cr = ring_mod(r - s, n);

		for (size_t k = 0; k < chunk_nseg(g, cs); k++) {
			if (s == 0)
				wire_own(g, cs, k);
			else
				wire_send(g, cs, k);
		}
		for (size_t k = 0; k < chunk_nseg(g, cr); k++)
			wire_recv(g, cr, k, 0);
	}
}

/* Rank r starts by sending chunk r; at reduce-scatter step s it sends chunk r-s and
 * reduces chunk r-s-1 into RECV, so after n-1 steps it holds chunk r+1 fully reduced.
 * Allgather step s then forwards chunk r+1-s and receives chunk r-s. Each chunk but r is
 * received once in the reduce-scatter, so out of place that receive combines SEND's bytes
 * with the incoming ones straight into RECV: no copy of the input first. */
static void ring_build(ring_t *g)
{
	int n = g->n, r = g->r, in_place = g->a->in_place;
	int big = g->a->count * g->elem >= WT_SCHED_STREAM_MIN;

	for (int s = 0; s < n - 1; s++) {
		int cs = ring_mod(r - s, n), cr = ring_mod(r - s - 1, n);

		for (size_t k = 0; k < chunk_nseg(g, cs); k++)
			ring_send(g, cs, k, s == 0 && !in_place);
		for (size_t k = 0; k < chunk_nseg(g, cr); k++)
			ring_recv(g, cr, k, in_place ? RING_REDUCE : RING_REDUCE_SEND);
	}
	/* Dividing the owned chunk before it is forwarded makes all ranks bit-identical. */
	if (g->a->op == WEFT_AVG)
		for (size_t k = 0; k < chunk_nseg(g, ring_mod(r + 1, n)); k++)
			ring_local(g, ring_mod(r + 1, n), k, 0);
	for (int s = 0; s < n - 1; s++) {
		int cs = ring_mod(r + 1 - s, n), cr = ring_mod(r - s, n);

		for (size_t k = 0; k < chunk_nseg(g, cs); k++)
			ring_send(g, cs, k, 0);
		for (size_t k = 0; k < chunk_nseg(g, cr); k++)
			ring_recv(g, cr, k, big && s == n - 2 ? RING_STREAM : RING_COPY);
	}
}

weft_status_t wt_sched_allreduce_ring(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	ring_t g = {.a = a, .p = p, .n = a->size, .r = a->rank};
	size_t seg = a->seg_bytes ? a->seg_bytes : WT_SCHED_DEFAULT_SEG_BYTES, total = 0;
	int compress;

	g.elem = wt_util_dtype_size(a->dtype);
	if (!g.elem || a->size < 1) {
		wt_sched_fail(p, WEFT_ERR_INVALID_ARG, "ring: bad dtype or size");
		return WEFT_ERR_INVALID_ARG;
	}
	if (a->size == 1 || a->count == 0)
		return wt_sched_allreduce_local(a, p);
	g.seg_elems = seg / g.elem ? seg / g.elem : 1;
	g.seg_base = malloc((size_t)g.n * sizeof(*g.seg_base));
	if (!g.seg_base)
		goto nomem;
	for (int c = 0; c < g.n; c++) {
		g.seg_base[c] = total;
		total += chunk_nseg(&g, c);
	}
	g.haz = malloc((total ? total : 1) * sizeof(*g.haz));
	if (!g.haz)
		goto nomem;
	compress = wt_sched_compress_wire(a, &g.wire);
	g.whaz = compress ? malloc((total ? total : 1) * sizeof(*g.whaz)) : NULL;
	if (compress && !g.whaz)
		goto nomem;
	for (size_t i = 0; i < total; i++) {
		wt_sched_haz_init(&g.haz[i]);
		if (g.whaz)
			wt_sched_haz_init(&g.whaz[i]);
	}
	if (compress)
		ring_build_wire(&g);
	else
		ring_build(&g);
	free(g.whaz);
	free(g.haz);
	free(g.seg_base);
	return WEFT_OK;
nomem:
	free(g.haz);
	free(g.seg_base);
	wt_sched_fail(p, WEFT_ERR_NO_MEMORY, "ring: out of memory for %d chunks", g.n);
	return WEFT_ERR_NO_MEMORY;
}
