/* The plan executor (layers/schedule): per-step pending counts and a FIFO ready queue;
 * network steps go to the wt_sched_net_t table, local steps run inline, and slot steps
 * read and write the shared regions directly (a wait that is not met yet goes to the
 * network's post_wait). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layers/schedule/exec.h"
#include "lib/util/copy.h"
#include "lib/util/dtype.h"
#include "lib/util/log.h"
#include "lib/util/place.h"
#include "lib/util/stores.h"
#include "lib/util/time.h"

#define WT_SCHED_EXEC_ERR_LEN 256

enum { OP_IDLE = 0, OP_POSTED, OP_DONE, OP_CANCELLED };

/* The callback argument of one network step; stable for the execution's lifetime. */
#define EXEC_DEFER_MAX 16

_Static_assert(2 * sizeof(wt_util_umem_desc_t) + sizeof(uint64_t) <= WT_SCHED_PEER_DESC_BYTES,
	       "the published buffers must fit the front of a slot");

typedef struct {
	size_t off; /* of the ring in the region */
	unsigned depth;
	size_t hdr;    /* bytes of done words, whole lines */
	size_t stride; /* 0: the region has no such ring */
} slot_ring_t;

typedef struct {
	wt_sched_exec_t *ex;
	uint32_t step;
	uint8_t state;
	void *handle;
} exec_op_t;

/* Peers whose releases a quick run remembers, and how many calls past the one it needs a
 * root with its ring full waits to be released, so that it reads a peer's words once in
 * that many calls instead of every call (see wt_sched_exec_quick). */
#define QUICK_SEEN 16
#define QUICK_AHEAD 8

struct wt_sched_exec {
	wt_sched_plan_t *plan;
	const wt_sched_plan_view_t *v; /* the plan's steps and edges as arrays */
	wt_sched_net_t net;
	uint64_t tag_base;
	uint8_t *bufs[3]; /* by wt_sched_buf_t */
	uint8_t *scratch;
	weft_dtype_t dtype;
	weft_op_t wire_op; /* the plan's op with AVG turned into SUM */
	size_t elem;
	int size;
	int rank;
	/* slot plans: this call's regions and ring, and its first slot call (slots.seq; part p
	 * of the plan is slot call seq + p, in slot (seq + p) % the ring's depth) */
	wt_sched_slots_t slots;
	slot_ring_t ring;
	/* the rings of regions of geom_bytes (0: none yet), kept with the block */
	size_t geom_bytes;
	slot_ring_t geom[WT_SCHED_RINGS];
	int wake_due;	   /* a PUT stored a flag whose sleepers were not woken yet */
	int turn_met;	   /* our turn came: the slot call before our first is released */
	unsigned released; /* parts whose SLOT_DONE ran (in part order: each waits its turn) */
	/* unmet slot waits set aside while other steps run, watched inline (net.spin_ns) once
	 * nothing else is ready; spin_until bounds the watching over the whole execution */
	uint32_t deferred[EXEC_DEFER_MAX];
	int ndeferred;
	uint64_t spin_until;
	/* plans with peer steps: where our SEND and RECV are (published by the PUT), and a
	 * bounce buffer for reductions from a peer we cannot map */
	wt_util_umem_desc_t descs[2];
	int published; /* our PUT published them */
	uint8_t *bounce;
	size_t bounce_len;
	void **fan; /* a PEER_REDUCE_OUT's destinations, size entries (NULL until one runs) */
	wt_util_umem_desc_t *fan_desc; /* their descriptors as read and checked, size entries */

	uint32_t *pending;
	uint32_t *ready;
	size_t rhead, rtail;
	exec_op_t *ops;
	size_t nsteps, ndone, outstanding;
	int running;
	/* Inside wt_sched_exec_run_kept: where a successful end inside the start is noted
	 * instead of calling done (1), or that done ran (2); NULL otherwise. */
	int *quiet;
	/* In order (plans with v->in_order): steps run by id, ndone of them so far, without the
	 * ready queue; the first wait that stays unmet switches to the queue. */
	int in_order;
	int quick; /* the plan may run by wt_sched_exec_quick (quick_plan; kept with the block) */
	/* quick runs: per peer (ranks below QUICK_SEEN) the last call it was seen to release,
	 * kept with the block while it serves one plan */
	uint64_t seen[QUICK_SEEN];
	/* the block: its size, and the caller's keep it goes back to (no plan reference then) */
	size_t blk_bytes;
	wt_sched_exec_keep_t *keep;

	weft_status_t err, status;
	wt_sched_exec_done_fn_t done;
	void *done_arg;
	char errmsg[WT_SCHED_EXEC_ERR_LEN]; /* last: start leaves it uninitialised but [0] */
};

static void exec_set_error(wt_sched_exec_t *ex, weft_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* The first error wins; later ones are consequences and only logged at debug level. */
static void exec_set_error(wt_sched_exec_t *ex, weft_status_t st, const char *fmt, ...)
{
	char buf[WT_SCHED_EXEC_ERR_LEN];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (ex->err) {
		WT_DEBUG("schedule: further error after the first: %s", buf);
		return;
	}
	ex->err = wt_util_is_err(st) ? st : WEFT_ERR_PROTOCOL;
	memcpy(ex->errmsg, buf, sizeof(buf));
}

static void *bind(const wt_sched_exec_t *ex, unsigned buf, size_t off)
{
	uint8_t *base = ex->bufs[buf];

	return base && off ? base + off : base;
}

static void exec_complete_step(wt_sched_exec_t *ex, uint32_t i)
{
	const uint32_t *succ = ex->v->succ;

	ex->ndone++;
	for (uint32_t k = ex->v->succ_start[i], end = ex->v->succ_start[i + 1]; k < end; k++)
		if (--ex->pending[succ[k]] == 0)
			ex->ready[ex->rtail++] = succ[k];
}

/* A COPY or PEER_WRITE: memmove when the ranges overlap, else around the caches when the
 * step says so (WT_SCHED_COPY_STREAM), else wt_util_copy. */
static void copy_hinted(void *dst, const void *src, size_t len, unsigned hint)
{
	const uint8_t *d = dst, *sp = src;

	if (d + len > sp && sp + len > d)
		memmove(dst, src, len);
	else if (hint == WT_SCHED_COPY_STREAM)
		wt_util_copy_stream(dst, src, len);
	else
		wt_util_copy(dst, src, len);
}

static void exec_run_local(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	void *dst = bind(ex, s->buf, s->off);

	if (!s->len)
		return;
	switch (s->type) {
	case WT_SCHED_COPY:
		copy_hinted(dst, bind(ex, s->src_buf, s->src_off), s->len, s->wire);
		break;
	case WT_SCHED_REDUCE:
		wt_util_reduce(dst, bind(ex, s->src_buf, s->src_off), s->len / ex->elem, ex->dtype,
			       ex->wire_op);
		break;
	case WT_SCHED_DIV:
		wt_util_scale_div(dst, s->len / ex->elem, ex->dtype, ex->size);
		break;
	/* Finalize admitted these only for float32 plans with a 16-bit wire format, so the
	 * kernels cannot refuse them. */
	case WT_SCHED_NARROW:
		wt_util_f32_narrow(dst, bind(ex, s->src_buf, s->src_off), s->len / 2,
				   (weft_dtype_t)s->wire);
		break;
	case WT_SCHED_WIDEN:
		wt_util_f32_widen(dst, bind(ex, s->src_buf, s->src_off), s->len / ex->elem,
				  (weft_dtype_t)s->wire);
		break;
	case WT_SCHED_REDUCE_WIDEN:
		wt_util_f32_reduce_widen(dst, bind(ex, s->src_buf, s->src_off), s->len / ex->elem,
					 (weft_dtype_t)s->wire, ex->wire_op);
		break;
	default:
		break;
	}
}

static void exec_net_done(void *arg, weft_status_t st, const char *msg);
static void exec_progress(wt_sched_exec_t *ex);
static void exec_in_order_any(wt_sched_exec_t *ex);
static int quick_plan(const wt_sched_plan_view_t *v);

/* ---- shared slots ---- */

/* Region layout: up to three rings of slots. Each ring starts with its done words, in whole
 * lines; its slot b starts at hdr + b * stride with its ready word, the data following in
 * the same line. The large ring (WT_SCHED_SLOT_DEPTH slots) fills the region up to the
 * small one, which regions of at least WT_SCHED_SLOT_SMALL_MIN bytes have before their end
 * (WT_SCHED_SLOT_SMALL_DEPTH slots of WT_SCHED_SLOT_SMALL_STRIDE bytes), followed by the
 * tiny one (WT_SCHED_SLOT_TINY_DEPTH slots of WT_SCHED_SLOT_TINY_STRIDE bytes). */
#define SLOT_LINE 64u
/* Slot indices are masks of seq. */
_Static_assert((WT_SCHED_SLOT_DEPTH & (WT_SCHED_SLOT_DEPTH - 1)) == 0 &&
		   (WT_SCHED_SLOT_SMALL_DEPTH & (WT_SCHED_SLOT_SMALL_DEPTH - 1)) == 0 &&
		   (WT_SCHED_SLOT_TINY_DEPTH & (WT_SCHED_SLOT_TINY_DEPTH - 1)) == 0,
	       "slot ring depths must be powers of two");
_Static_assert(WT_SCHED_SLOT_SMALL_STRIDE % SLOT_LINE == 0 &&
		   WT_SCHED_SLOT_TINY_STRIDE % SLOT_LINE == 0,
	       "slots start on a line");

static size_t ring_hdr(unsigned depth)
{
	return (depth * sizeof(uint64_t) + SLOT_LINE - 1) / SLOT_LINE * SLOT_LINE;
}

#define RING_BYTES(depth, stride)                                                                  \
	(((depth) * sizeof(uint64_t) + SLOT_LINE - 1) / SLOT_LINE * SLOT_LINE +                    \
	 (size_t)(depth) * (stride))
#define SMALL_RING_BYTES RING_BYTES(WT_SCHED_SLOT_SMALL_DEPTH, WT_SCHED_SLOT_SMALL_STRIDE)
#define TINY_RING_BYTES RING_BYTES(WT_SCHED_SLOT_TINY_DEPTH, WT_SCHED_SLOT_TINY_STRIDE)
/* The small rings, together at the end of the regions that have them. */
#define SMALL_RINGS_BYTES (SMALL_RING_BYTES + TINY_RING_BYTES)

static size_t small_off(size_t region_bytes)
{
	if (region_bytes < WT_SCHED_SLOT_SMALL_MIN)
		return 0;
	return (region_bytes - SMALL_RINGS_BYTES) / SLOT_LINE * SLOT_LINE;
}

/* The geometry of ring `ring` (WT_SCHED_RING_*) of a region of region_bytes. */
static slot_ring_t slot_ring(size_t region_bytes, int ring)
{
	size_t so = small_off(region_bytes);
	size_t big = so ? so : region_bytes;
	slot_ring_t g = {
	    .off = 0, .depth = WT_SCHED_SLOT_DEPTH, .hdr = ring_hdr(WT_SCHED_SLOT_DEPTH)};

	if (ring == WT_SCHED_RING_SMALL || ring == WT_SCHED_RING_TINY) {
		int tiny = ring == WT_SCHED_RING_TINY;

		g.depth = tiny ? WT_SCHED_SLOT_TINY_DEPTH : WT_SCHED_SLOT_SMALL_DEPTH;
		g.hdr = ring_hdr(g.depth);
		g.off = so && tiny ? so + SMALL_RING_BYTES : so;
		g.stride = !so ? 0 : tiny ? WT_SCHED_SLOT_TINY_STRIDE : WT_SCHED_SLOT_SMALL_STRIDE;
		return g;
	}
	g.stride =
	    big < g.hdr + g.depth * SLOT_LINE ? 0 : (big - g.hdr) / g.depth / SLOT_LINE * SLOT_LINE;
	return g;
}

static size_t ring_capacity(const slot_ring_t *g)
{
	return g->stride > WT_SCHED_SLOT_HDR ? g->stride - WT_SCHED_SLOT_HDR : 0;
}

size_t wt_sched_slot_capacity(size_t region_bytes)
{
	slot_ring_t g = slot_ring(region_bytes, 0);

	return ring_capacity(&g);
}

size_t wt_sched_slot_small_capacity(size_t region_bytes)
{
	slot_ring_t g = slot_ring(region_bytes, WT_SCHED_RING_SMALL);

	return ring_capacity(&g);
}

size_t wt_sched_slot_tiny_capacity(size_t region_bytes)
{
	slot_ring_t g = slot_ring(region_bytes, WT_SCHED_RING_TINY);

	return ring_capacity(&g);
}

/* Offsets in a region of slot b's done and ready words. */
static size_t done_off(const slot_ring_t *g, unsigned b)
{
	return g->off + b * sizeof(uint64_t);
}

static size_t ready_off(const slot_ring_t *g, unsigned b)
{
	return g->off + g->hdr + b * g->stride;
}

static _Atomic uint64_t *ring_done(const void *region, const slot_ring_t *g, unsigned b)
{
	return (_Atomic uint64_t *)((uintptr_t)region + done_off(g, b));
}

static _Atomic uint64_t *ready_word(const void *region, const slot_ring_t *g, unsigned b)
{
	return (_Atomic uint64_t *)((uintptr_t)region + ready_off(g, b));
}

/* Touch the pages of [lo, hi) of a region once each, at byte lo and then at each page
 * start after it (never a byte outside the range: its page may hold bytes in use). Pages
 * are the memory's: regions start a few lines into theirs (the API staggers them). */
static uint64_t touch_range(volatile uint8_t *region, size_t lo, size_t hi, int write)
{
	uint64_t sum = 0;
	const uintptr_t base = (uintptr_t)region;

	for (size_t off = lo; off < hi; off = (size_t)(((base + off) | 4095) + 1 - base)) {
		if (write)
			region[off] = 0;
		else
			sum += region[off];
	}
	return sum;
}

uint64_t wt_sched_slot_warm(void *region, size_t region_bytes, size_t from, size_t to, int write)
{
	slot_ring_t g = slot_ring(region_bytes, 0);
	size_t cap = ring_capacity(&g);
	uint64_t sum = 0;

	to = to < cap ? to : cap;
	for (unsigned b = 0; g.stride && from < to && b < g.depth; b++) {
		size_t data = ready_off(&g, b) + WT_SCHED_SLOT_HDR;

		sum += touch_range(region, data + from, data + to, write);
	}
	return sum;
}

/* The small rings and the large ring's words and slot headers: what every call touches. */
static uint64_t touch_fixed(void *region, size_t region_bytes, int write)
{
	slot_ring_t g = slot_ring(region_bytes, WT_SCHED_RING_LARGE);
	slot_ring_t sg = slot_ring(region_bytes, WT_SCHED_RING_SMALL);
	uint64_t sum = touch_range(region, g.off, g.off + g.hdr, write);

	for (unsigned b = 0; g.stride && b < g.depth; b++)
		sum += touch_range(region, ready_off(&g, b), ready_off(&g, b) + WT_SCHED_SLOT_HDR,
				   write);
	if (sg.stride)
		sum += touch_range(region, sg.off, sg.off + SMALL_RINGS_BYTES, write);
	return sum;
}

void wt_sched_slot_reset(void *region, size_t region_bytes, uint64_t base, size_t warm)
{
	/* Pages written once now rather than faulted in by the first laps of the rings: a page
	 * first written costs 11-15 us here (a 4-rank 1 MiB allgather's first four calls took
	 * 3-15 ms each, the later ones 0.05-0.2 ms). No peer reads the region until it is reset
	 * (see the API's quarantine), so the bytes are ours. */
	(void)touch_fixed(region, region_bytes, 1);
	(void)wt_sched_slot_warm(region, region_bytes, 0, warm, 1);
	for (int ring = 0; ring < WT_SCHED_RINGS; ring++) {
		slot_ring_t g = slot_ring(region_bytes, ring);

		for (unsigned b = 0; g.stride && b < g.depth; b++) {
			atomic_store_explicit(ready_word(region, &g, b), base,
					      memory_order_relaxed);
			atomic_store_explicit(ring_done(region, &g, b), base, memory_order_relaxed);
		}
	}
	atomic_thread_fence(memory_order_release);
}

uint64_t wt_sched_slot_touch(const void *region, size_t region_bytes, size_t warm)
{
	void *r = (void *)(uintptr_t)region; /* read only: write is 0 */

	return touch_fixed(r, region_bytes, 0) + wt_sched_slot_warm(r, region_bytes, 0, warm, 0);
}

uint64_t wt_sched_slot_high_water(const void *region, size_t region_bytes)
{
	uint64_t hw = 0;

	for (int ring = 0; ring < WT_SCHED_RINGS; ring++) {
		slot_ring_t g = slot_ring(region_bytes, ring);

		for (unsigned b = 0; g.stride && b < g.depth; b++) {
			uint64_t r =
			    atomic_load_explicit(ready_word(region, &g, b), memory_order_relaxed);
			uint64_t d =
			    atomic_load_explicit(ring_done(region, &g, b), memory_order_relaxed);

			hw = r > hw ? r : hw;
			hw = d > hw ? d : hw;
		}
	}
	return hw;
}

int wt_sched_slot_released(const void *peer_region, const void *own_region, size_t region_bytes)
{
	for (int ring = 0; ring < WT_SCHED_RINGS; ring++) {
		slot_ring_t g = slot_ring(region_bytes, ring);

		for (unsigned b = 0; g.stride && b < g.depth; b++)
			if (atomic_load_explicit(ring_done(peer_region, &g, b),
						 memory_order_acquire) <
			    atomic_load_explicit(ready_word(own_region, &g, b),
						 memory_order_relaxed))
				return 0;
	}
	return 1;
}

/* In a slot's header, after its ready word: the publisher's slot_sig and count. */
#define SLOT_SIG_OFF 8u
#define SLOT_COUNT_OFF 16u
/* and, for a publish of WT_UTIL_STORES_MIN_COPY bytes or more and every 8th of
 * WT_UTIL_STORES_MID_MIN or more, its clock just before the flag (0 otherwise): a sample of the
 * cores' placement for its readers (slot_stamp_seen) */
#define SLOT_STAMP_OFF 24u
_Static_assert(SLOT_STAMP_OFF + sizeof(uint64_t) <= WT_SCHED_SLOT_HDR, "slot header");

/* The word at off in rank's region (off_ready and the like). */
static _Atomic uint64_t *word_at(const wt_sched_exec_t *ex, int rank, size_t off)
{
	return (_Atomic uint64_t *)((uintptr_t)ex->slots.region[rank] + off);
}

/* The slot call of a step's part, and where in a region slot call seq has its words. */
static uint64_t part_seq(const wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	return ex->slots.seq + s->part;
}

static size_t ready_at(const wt_sched_exec_t *ex, uint64_t seq)
{
	return ready_off(&ex->ring, (unsigned)(seq & (ex->ring.depth - 1)));
}

static size_t done_at(const wt_sched_exec_t *ex, uint64_t seq)
{
	return done_off(&ex->ring, (unsigned)(seq & (ex->ring.depth - 1)));
}

static uint8_t *slot_data(const wt_sched_exec_t *ex, uint64_t seq, int rank, size_t off)
{
	return (uint8_t *)ex->slots.region[rank] + ready_at(ex, seq) + WT_SCHED_SLOT_HDR + off;
}

/* What a SLOT_FREE / SLOT_WAIT step waits for: the peer's word and the value it must reach.
 * WAIT: the peer published this call. FREE of a peer: it released the call
 * WT_SCHED_SLOT_DEPTH slot calls back, the previous user of this slot. FREE of our own rank
 * (our turn): we released the previous slot call, so this one publishes and releases after
 * it. */
static const _Atomic uint64_t *slot_word(const wt_sched_exec_t *ex, const wt_sched_step_t *s,
					 uint64_t *value)
{
	uint64_t seq = part_seq(ex, s);

	if (s->type == WT_SCHED_SLOT_DRAIN) {
		*value = seq;
		return word_at(ex, s->peer, done_at(ex, seq));
	}
	if (s->type == WT_SCHED_SLOT_WAIT) {
		*value = seq;
		return word_at(ex, s->peer, ready_at(ex, seq));
	}
	if (s->peer == ex->rank) {
		*value = seq - 1;
		return word_at(ex, s->peer, done_at(ex, seq - 1));
	}
	*value = seq > ex->ring.depth ? seq - ex->ring.depth : 0;
	return word_at(ex, s->peer, done_at(ex, seq));
}

/* Whether peer released slot call seq - depth, the previous user of call seq's slot. A peer
 * that published call seq - 1 had released every call before it (its turn came first), so
 * the line we read its flag from last time usually answers without fetching its done word. */
static int peer_freed(const wt_sched_exec_t *ex, int peer, uint64_t seq)
{
	if (atomic_load_explicit(word_at(ex, peer, ready_at(ex, seq - 1)), memory_order_acquire) >=
	    seq - 1)
		return 1;
	return atomic_load_explicit(word_at(ex, peer, done_at(ex, seq)), memory_order_acquire) >=
	       (seq > ex->ring.depth ? seq - ex->ring.depth : 0);
}

/* Whether a SLOT_FREE / SLOT_WAIT step is met now. */
static int slot_met(const wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	const _Atomic uint64_t *word;
	uint64_t value;

	if (s->type == WT_SCHED_SLOT_FREE && s->peer != ex->rank)
		return peer_freed(ex, s->peer, part_seq(ex, s));
	word = slot_word(ex, s, &value);
	return atomic_load_explicit(word, memory_order_acquire) >= value;
}

/* Where a plan with peer steps marks a call it failed (after its published buffers): a
 * rank that leaves its share unwritten says so before it releases, and the peers' drains
 * find it. */
#define SLOT_FAIL_OFF (2 * sizeof(wt_util_umem_desc_t))

static _Atomic uint64_t *slot_fail_word(const wt_sched_exec_t *ex, int rank)
{
	return (_Atomic uint64_t *)(void *)slot_data(ex, ex->slots.seq, rank, SLOT_FAIL_OFF);
}

/* Plans with peer steps serve symmetric collectives: a peer whose buffers differ in size
 * from ours was called with other counts, and nothing it or we would write could be right. */
static void peer_bufs_check(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	wt_util_umem_desc_t d[2];

	memcpy(d, slot_data(ex, ex->slots.seq, s->peer, 0), sizeof(d));
	for (unsigned b = 0; b < 2 && !ex->err; b++)
		if (d[b].len != ex->descs[b].len)
			exec_set_error(ex, WEFT_ERR_MISMATCH,
				       "rank %d's %s holds %llu bytes in slot call %llu, ours %llu "
				       "(do the ranks' counts differ?)",
				       (int)s->peer, wt_sched_buf_name((wt_sched_buf_t)b),
				       (unsigned long long)d[b].len,
				       (unsigned long long)ex->slots.seq,
				       (unsigned long long)ex->descs[b].len);
}

/* Whether peer's slot of call seq holds our call (the slot_sig and count its PUT stored:
 * slot_publish_words); *sig and *count get what it holds. */
static int peer_sig_matches(const wt_sched_exec_t *ex, int peer, uint64_t seq, uint64_t *sig,
			    uint64_t *count)
{
	size_t ready = ready_at(ex, seq);

	*sig = atomic_load_explicit(word_at(ex, peer, ready + SLOT_SIG_OFF), memory_order_relaxed);
	*count =
	    atomic_load_explicit(word_at(ex, peer, ready + SLOT_COUNT_OFF), memory_order_relaxed);
	return *sig == ex->v->slot_sig && *count == ex->v->args->count;
}

/* A peer published this slot call for another call than ours (other arguments, or another
 * algorithm: its buffers in weft_mem where ours are not, or the reverse): nothing it
 * published can be read as what we expect. */
static void peer_sig_check(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	uint64_t sig, count;
	uint64_t mine = ex->v->slot_sig;
	const uint64_t algo = (uint64_t)0xff << WT_SCHED_SIG_ALGO_SHIFT;
	const wt_sched_args_t *a = ex->v->args;

	if (peer_sig_matches(ex, s->peer, part_seq(ex, s), &sig, &count))
		return;
	if ((sig & ~algo) == (mine & ~algo) && count == a->count) {
		exec_set_error(ex, WEFT_ERR_MISMATCH,
			       "rank %d runs slot call %llu (%s of %llu) with another algorithm "
			       "than this rank's %s: are its buffers in weft_mem where ours are "
			       "not, or the reverse?",
			       (int)s->peer, (unsigned long long)ex->slots.seq,
			       wt_sched_coll_name(a->coll), (unsigned long long)a->count,
			       wt_sched_plan_algo(ex->plan));
		return;
	}
	exec_set_error(ex, WEFT_ERR_MISMATCH,
		       "rank %d called %s of %llu %s (op %s, root %d) as slot call %llu, this "
		       "rank %s of %llu %s (op %s, root %d): do the ranks' calls differ?",
		       (int)s->peer, wt_sched_coll_name((wt_sched_coll_t)(sig & 0xff)),
		       (unsigned long long)count,
		       wt_util_dtype_name((weft_dtype_t)((sig >> WT_SCHED_SIG_DTYPE_SHIFT) & 0xff)),
		       wt_util_op_name((weft_op_t)((sig >> WT_SCHED_SIG_OP_SHIFT) & 0xff)),
		       (int)(uint32_t)(sig >> WT_SCHED_SIG_ROOT_SHIFT),
		       (unsigned long long)ex->slots.seq, wt_sched_coll_name(a->coll),
		       (unsigned long long)a->count, wt_util_dtype_name(a->dtype),
		       wt_util_op_name(a->op), a->root);
}

/* A peer's publish seen by a look at its flag after one that found it down (a spin, or the
 * channel watching a posted wait): a stamped one's stamp is a sample of how far apart its
 * core and ours are (lib/util/place.h). Not where the flag was up at the first look: the
 * time since says nothing. */
static void slot_stamp_seen(const wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	uint64_t stamp, now;

	if (s->type != WT_SCHED_SLOT_WAIT)
		return;
	stamp = atomic_load_explicit(
	    word_at(ex, s->peer, ready_at(ex, part_seq(ex, s)) + SLOT_STAMP_OFF),
	    memory_order_relaxed);
	if (stamp == 0)
		return;
	now = wt_util_time_ns();
	wt_util_place_sample(wt_util_place_self(), now - stamp, now);
}

/* A wait step was met: our turn, a peer that published buffers we check, or a drained peer
 * that failed its share of the call. */
static void slot_wait_met(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	ex->turn_met |= s->type == WT_SCHED_SLOT_FREE && s->peer == ex->rank && s->part == 0;
	if (s->type == WT_SCHED_SLOT_WAIT)
		peer_sig_check(ex, s);
	if (s->type == WT_SCHED_SLOT_WAIT && ex->v->uses_peers && !ex->err)
		peer_bufs_check(ex, s);
	if (s->type == WT_SCHED_SLOT_DRAIN &&
	    atomic_load_explicit(slot_fail_word(ex, s->peer), memory_order_relaxed) ==
		ex->slots.seq)
		exec_set_error(ex, WEFT_ERR_PEER_FAILED,
			       "rank %d failed its share of slot call %llu and left our buffers "
			       "incomplete (its own error says why)",
			       (int)s->peer, (unsigned long long)ex->slots.seq);
}

/* Wake the peers that sleep waiting for a flag we stored (a fence and a look at each one's
 * sleeping flag). */
static void slot_wake_now(wt_sched_exec_t *ex)
{
	ex->wake_due = 0;
	ex->net.slot_wake(ex->net.ctx);
}

/* Publish (PUT) or release (DONE): a release store into our region. A spinning peer sees it
 * at once; one that sleeps needs its doorbell, after a fence. A PUT leaves that to the DONE
 * or, if the execution stops to wait first, to the end of that round of exec_progress:
 * a call that runs through pays one fence, not two, and not while its PUT's store is still
 * on its way to the peer. */
/* A PUT's last stores: what call it is (peer_sig_matches reads them), then its flag. */
static void slot_publish_words(wt_sched_exec_t *ex, uint64_t seq, size_t len)
{
	size_t ready = ready_at(ex, seq);

	atomic_store_explicit(word_at(ex, ex->rank, ready + SLOT_SIG_OFF), ex->v->slot_sig,
			      memory_order_relaxed);
	atomic_store_explicit(word_at(ex, ex->rank, ready + SLOT_COUNT_OFF), ex->v->args->count,
			      memory_order_relaxed);
	/* every large publish, and every 8th of the sizes stores follow the placement for
	 * (a clock read is a tenth of a 4 KiB publish), so slot-only traffic keeps it known */
	atomic_store_explicit(word_at(ex, ex->rank, ready + SLOT_STAMP_OFF),
			      len >= WT_UTIL_STORES_MIN_COPY ||
				      (len >= WT_UTIL_STORES_MID_MIN && seq % 8 == 0)
				  ? wt_util_time_ns()
				  : 0,
			      memory_order_relaxed);
	atomic_store_explicit(word_at(ex, ex->rank, ready), seq, memory_order_release);
}

static void slot_signal(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	uint64_t seq = part_seq(ex, s);

	if (s->type == WT_SCHED_SLOT_PUT) {
		if (ex->v->uses_peers) {
			memcpy(slot_data(ex, seq, ex->rank, 0), ex->descs, sizeof(ex->descs));
			atomic_store_explicit(slot_fail_word(ex, ex->rank), 0,
					      memory_order_relaxed);
			ex->published = 1;
		}
		if (s->len)
			wt_util_stores_copy(ex->slots.stores, slot_data(ex, seq, ex->rank, s->off),
					    bind(ex, s->src_buf, s->src_off), s->len);
		slot_publish_words(ex, seq, s->len);
		ex->wake_due = 1;
		return;
	}
	atomic_store_explicit(word_at(ex, ex->rank, done_at(ex, seq)), seq, memory_order_release);
	ex->released++;
	slot_wake_now(ex);
}

static void slot_read(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	void *dst = bind(ex, s->buf, s->off);
	const uint8_t *src = slot_data(ex, part_seq(ex, s), s->peer, s->src_off);

	if (!s->len)
		return;
	if (s->type == WT_SCHED_SLOT_COPY)
		wt_util_copy(dst, src, s->len);
	else
		wt_util_reduce(dst, src, s->len / ex->elem, ex->dtype, ex->wire_op);
}

static int step_waits(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_SLOT_FREE || s->type == WT_SCHED_SLOT_WAIT ||
	       s->type == WT_SCHED_SLOT_DRAIN;
}

/* ---- peers' buffers ---- */

/* What peer published of its buffer `which` (SEND or RECV), checked to hold [off, +len). */
static weft_status_t peer_desc_of(wt_sched_exec_t *ex, const wt_sched_step_t *s, int peer,
				  unsigned which, size_t off, size_t len, wt_util_umem_desc_t *d)
{
	memcpy(d, slot_data(ex, ex->slots.seq, peer, which * sizeof(*d)), sizeof(*d));
	if (off <= d->len && len <= d->len - off)
		return WEFT_OK;
	exec_set_error(ex, WEFT_ERR_MISMATCH,
		       "%s: rank %d's %s holds %llu bytes in slot call %llu, the plan needs "
		       "[%zu+%zu] (do the ranks' counts differ?)",
		       wt_sched_step_type_name(s->type), peer,
		       wt_sched_buf_name((wt_sched_buf_t)which), (unsigned long long)d->len,
		       (unsigned long long)ex->slots.seq, off, len);
	return ex->err;
}

static weft_status_t peer_desc(wt_sched_exec_t *ex, const wt_sched_step_t *s, unsigned which,
			       size_t off, size_t len, wt_util_umem_desc_t *d)
{
	return peer_desc_of(ex, s, s->peer, which, off, len, d);
}

static uint8_t *bounce_of(wt_sched_exec_t *ex, size_t len)
{
	if (ex->bounce_len < len) {
		uint8_t *b = realloc(ex->bounce, len);

		if (b == NULL)
			return NULL;
		ex->bounce = b;
		ex->bounce_len = len;
	}
	return ex->bounce;
}

/* A PEER_READ / PEER_REDUCE / PEER_WRITE: straight through the peer's mapped buffer, or by
 * a one-sided copy when it cannot be mapped (a reduction then goes through a bounce
 * buffer). */
static void exec_peer(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	int write = s->type == WT_SCHED_PEER_WRITE;
	unsigned which = write ? s->buf : s->src_buf;
	size_t poff = write ? s->off : s->src_off;
	uint8_t *local = write ? bind(ex, s->src_buf, s->src_off) : bind(ex, s->buf, s->off);
	/* The left operand of a reduction: dst itself, or our SEND at the peer's offset. */
	const uint8_t *left =
	    s->wire == WT_SCHED_PEER_FROM_SEND ? bind(ex, WT_SCHED_BUF_SEND, s->src_off) : local;
	wt_util_umem_desc_t d;
	uint8_t *remote, *src;
	weft_status_t st;

	if (!s->len || peer_desc(ex, s, which, poff, s->len, &d))
		return;
	remote = ex->net.peer_map(ex->net.ctx, s->peer, &d);
	if (remote != NULL) {
		if (write)
			copy_hinted(remote + poff, local, s->len, s->wire);
		else if (s->type == WT_SCHED_PEER_READ)
			wt_util_copy(local, remote + poff, s->len);
		else
			wt_util_reduce3(local, left, remote + poff, s->len / ex->elem, ex->dtype,
					ex->wire_op);
		return;
	}
	src = s->type == WT_SCHED_PEER_REDUCE ? bounce_of(ex, s->len) : local;
	if (src == NULL) {
		exec_set_error(ex, WEFT_ERR_NO_MEMORY,
			       "PEER_REDUCE: out of memory for a %zu-byte bounce buffer", s->len);
		return;
	}
	st = ex->net.peer_copy(ex->net.ctx, s->peer, src, &d, poff, s->len, write);
	if (st != WEFT_OK) {
		exec_set_error(ex, st, "%s of %zu bytes %s rank %d's %s[%zu] failed (status %d)",
			       wt_sched_step_type_name(s->type), s->len, write ? "to" : "from",
			       (int)s->peer, wt_sched_buf_name((wt_sched_buf_t)which), poff,
			       (int)st);
		return;
	}
	if (s->type == WT_SCHED_PEER_REDUCE)
		wt_util_reduce3(local, left, src, s->len / ex->elem, ex->dtype, ex->wire_op);
}

/* Where rank q's RECV [s->off, +len) lies in our address space; NULL if it does not map
 * (d then says where it is for a one-sided copy) or its published size is wrong (ex->err). */
static uint8_t *peer_recv_at(wt_sched_exec_t *ex, const wt_sched_step_t *s, int q,
			     wt_util_umem_desc_t *d)
{
	uint8_t *remote;

	if (peer_desc_of(ex, s, q, WT_SCHED_BUF_RECV, s->off, s->len, d))
		return NULL;
	remote = ex->net.peer_map(ex->net.ctx, q, d);
	return remote ? remote + s->off : NULL;
}

/* A PEER_REDUCE_OUT: RECV[off, +len) of every rank = our src op the peer's SEND, written
 * from L1 while it is combined when every buffer maps; else the sum lands in our RECV (the
 * peer's SEND through the bounce buffer when it does not map) and goes on to the peers by
 * copies, one-sided ones where they do not map. */
static void exec_peer_out(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	const uint8_t *left = bind(ex, s->src_buf, s->src_off), *right;
	uint8_t *own = bind(ex, WT_SCHED_BUF_RECV, s->off), *remote;
	int all_mapped = 1, nd = 0;
	size_t count = s->len / ex->elem;
	wt_util_umem_desc_t d;

	if (!s->len || peer_desc(ex, s, WT_SCHED_BUF_SEND, s->off, s->len, &d))
		return;
	if (ex->fan == NULL)
		ex->fan = malloc((size_t)ex->size * sizeof(*ex->fan));
	if (ex->fan_desc == NULL)
		ex->fan_desc = malloc((size_t)ex->size * sizeof(*ex->fan_desc));
	if (ex->fan == NULL || ex->fan_desc == NULL) {
		exec_set_error(ex, WEFT_ERR_NO_MEMORY,
			       "PEER_REDUCE_OUT: out of memory for %d destinations", ex->size);
		return;
	}
	remote = ex->net.peer_map(ex->net.ctx, s->peer, &d);
	if (remote == NULL) {
		uint8_t *b = bounce_of(ex, s->len);
		weft_status_t st =
		    b ? ex->net.peer_copy(ex->net.ctx, s->peer, b, &d, s->off, s->len, 0)
		      : WEFT_ERR_NO_MEMORY;

		if (st != WEFT_OK) {
			exec_set_error(ex, st,
				       "PEER_REDUCE_OUT of %zu bytes from rank %d's SEND[%zu] "
				       "failed (status %d)",
				       s->len, (int)s->peer, s->off, (int)st);
			return;
		}
		right = b;
		all_mapped = 0;
	} else {
		right = remote + s->off;
	}
	/* ours first; a NULL for a peer we must reach by a one-sided write, which then goes
	 * where the descriptor checked here says (a peer's slot is read once per step) */
	ex->fan[nd++] = own;
	for (int q = 0; q < ex->size; q++) {
		if (q == ex->rank)
			continue;
		ex->fan[nd] = peer_recv_at(ex, s, q, &ex->fan_desc[nd]);
		if (ex->err)
			return;
		all_mapped &= ex->fan[nd++] != NULL;
	}
	if (all_mapped) {
		wt_util_reduce3_fanout(ex->fan, nd, left, right, count, ex->dtype, ex->wire_op,
				       s->wire == WT_SCHED_COPY_STREAM);
		return;
	}
	wt_util_reduce3(own, left, right, count, ex->dtype, ex->wire_op);
	for (int q = 0, k = 1; q < ex->size && !ex->err; q++) {
		weft_status_t st;

		if (q == ex->rank)
			continue;
		if (ex->fan[k] != NULL) {
			copy_hinted(ex->fan[k++], own, s->len, s->wire);
			continue;
		}
		st = ex->net.peer_copy(ex->net.ctx, q, own, &ex->fan_desc[k++], s->off, s->len, 1);
		if (st != WEFT_OK)
			exec_set_error(ex, st,
				       "PEER_REDUCE_OUT of %zu bytes to rank %d's RECV[%zu] failed "
				       "(status %d)",
				       s->len, q, s->off, (int)st);
	}
}

static unsigned recv_flags(const wt_sched_step_t *s)
{
	if (s->type == WT_SCHED_RECV_REDUCE)
		return WT_SCHED_NET_REDUCE;
	return s->wire == WT_SCHED_COPY_STREAM ? WT_SCHED_NET_STREAM : 0;
}

/* A SEND that also copies its bytes (WT_SCHED_SEND_COPY): by the network as it takes them,
 * or here, after posting, when the network cannot. */
static weft_status_t post_send_copy(wt_sched_exec_t *ex, const wt_sched_step_t *s, uint64_t tag,
				    exec_op_t *op)
{
	const void *src = bind(ex, s->buf, s->off);
	void *dst = bind(ex, s->src_buf, s->src_off);
	int stream = (s->wire & WT_SCHED_COPY_STREAM) != 0;
	weft_status_t st;

	if (ex->net.post_send_copy != NULL)
		return ex->net.post_send_copy(ex->net.ctx, s->peer, tag, src, s->len, dst,
					      stream ? WT_SCHED_NET_STREAM : 0, exec_net_done, op,
					      &op->handle);
	st = ex->net.post_send(ex->net.ctx, s->peer, tag, src, s->len, exec_net_done, op,
			       &op->handle);
	if (st == WEFT_OK)
		copy_hinted(dst, src, s->len, stream ? WT_SCHED_COPY_STREAM : 0);
	return st;
}

static void exec_post(wt_sched_exec_t *ex, uint32_t i, const wt_sched_step_t *s)
{
	exec_op_t *op = &ex->ops[i];
	uint64_t tag = ex->tag_base | s->msg;
	weft_status_t st;

	op->ex = ex;
	op->step = i;
	op->handle = NULL;
	if (step_waits(s)) {
		uint64_t value;
		const _Atomic uint64_t *word = slot_word(ex, s, &value);

		st = ex->net.post_wait(ex->net.ctx, s->peer, word, value, exec_net_done, op,
				       &op->handle);
	} else if (s->type == WT_SCHED_SEND && (s->wire & WT_SCHED_SEND_COPY))
		st = post_send_copy(ex, s, tag, op);
	else if (s->type == WT_SCHED_SEND)
		st = ex->net.post_send(ex->net.ctx, s->peer, tag, bind(ex, s->buf, s->off), s->len,
				       exec_net_done, op, &op->handle);
	else
		st = ex->net.post_recv(ex->net.ctx, s->peer, tag, bind(ex, s->buf, s->off), s->len,
				       recv_flags(s), ex->dtype, ex->wire_op,
				       s->type == WT_SCHED_RECV_REDUCE &&
					       s->wire == WT_SCHED_RECV_FROM_SRC
					   ? bind(ex, s->src_buf, s->src_off)
					   : NULL,
				       exec_net_done, op, &op->handle);
	if (st != WEFT_OK) {
		/* A post must queue; "try again" from below is not something we can retry. */
		exec_set_error(ex, wt_util_is_err(st) ? st : WEFT_ERR_NO_MEMORY,
			       "posting %s of %zu bytes %s peer %d (msg %u) failed: status %d",
			       wt_sched_step_type_name(s->type), s->len,
			       s->type == WT_SCHED_SEND ? "to" : "from", (int)s->peer,
			       step_waits(s) ? 0 : s->msg, (int)st);
		WT_ERROR("schedule: %s", ex->errmsg);
		return;
	}
	op->state = OP_POSTED;
	ex->outstanding++;
}

static void exec_maybe_finish(wt_sched_exec_t *ex)
{
	wt_sched_exec_done_fn_t done = ex->done;
	void *arg = ex->done_arg;

	if (ex->status != WEFT_INPROGRESS || ex->running)
		return;
	if (ex->err ? ex->outstanding != 0 : ex->ndone != ex->nsteps)
		return;
	/* A failed slot call reads nothing more: release it, so the communicator's later calls
	 * are not held up by it (in call order only: not before the previous call's release). */
	if (ex->err && ex->turn_met && ex->released < ex->v->slot_parts) {
		if (ex->published)
			atomic_store_explicit(slot_fail_word(ex, ex->rank), ex->slots.seq,
					      memory_order_relaxed);
		while (ex->released < ex->v->slot_parts)
			slot_signal(ex, &(wt_sched_step_t){.type = WT_SCHED_SLOT_DONE,
							   .part = ex->released});
	}
	ex->status = ex->err;
	if (ex->quiet != NULL) {
		*ex->quiet = ex->err ? 2 : 1;
		if (!ex->err)
			return;
	}
	/* done may free ex: nothing touches it afterwards. */
	if (done)
		done(arg, ex->status, ex->err ? ex->errmsg : "");
}

/* Nothing else is ready: watch the set-aside slot waits (peers that sleep are woken first:
 * they may be what we wait for) until one is met, which makes more steps ready, or the
 * execution's spin budget is spent; what is still unmet then is posted by the caller. */
/* Before watching: wake peers that sleep (they may be what we wait for), and start the
 * execution's spin budget if this is its first watch. */
static void watch_begin(wt_sched_exec_t *ex)
{
	if (ex->wake_due)
		slot_wake_now(ex);
	if (ex->spin_until == 0)
		ex->spin_until = wt_util_time_ns() + ex->net.spin_ns;
}

static void exec_watch(wt_sched_exec_t *ex)
{
	watch_begin(ex);
	do {
		for (int r = 0; r < 16; r++) {
			for (int k = 0; k < ex->ndeferred; k++) {
				uint32_t i = ex->deferred[k];
				const wt_sched_step_t *s = &ex->v->steps[i];

				if (!slot_met(ex, s))
					continue;
				ex->deferred[k--] = ex->deferred[--ex->ndeferred];
				slot_stamp_seen(ex, s);
				slot_wait_met(ex, s);
				if (ex->err)
					return;
				exec_complete_step(ex, i);
			}
			if (ex->rhead < ex->rtail || ex->ndeferred == 0)
				return;
			wt_util_cpu_relax();
		}
	} while (wt_util_time_ns() < ex->spin_until);
}

/* Run ready step i. 1: it completed; 0: it was posted or set aside, or it failed. */
static int exec_run(wt_sched_exec_t *ex, uint32_t i, const wt_sched_step_t *s)
{
	switch (s->type) {
	case WT_SCHED_SEND:
	case WT_SCHED_RECV:
	case WT_SCHED_RECV_REDUCE:
		exec_post(ex, i, s);
		return 0;
	case WT_SCHED_SLOT_FREE:
	case WT_SCHED_SLOT_WAIT:
	case WT_SCHED_SLOT_DRAIN:
		/* Met already (the usual case when peers run in step): no post at all. */
		if (!slot_met(ex, s)) {
			if (ex->net.spin_ns && ex->ndeferred < EXEC_DEFER_MAX)
				ex->deferred[ex->ndeferred++] = i;
			else
				exec_post(ex, i, s);
			return 0;
		}
		slot_wait_met(ex, s);
		return !ex->err;
	case WT_SCHED_SLOT_PUT:
	case WT_SCHED_SLOT_DONE:
		slot_signal(ex, s);
		return 1;
	case WT_SCHED_SLOT_COPY:
	case WT_SCHED_SLOT_REDUCE:
		slot_read(ex, s);
		return 1;
	case WT_SCHED_PEER_READ:
	case WT_SCHED_PEER_REDUCE:
	case WT_SCHED_PEER_WRITE:
		exec_peer(ex, s);
		return !ex->err;
	case WT_SCHED_PEER_REDUCE_OUT:
		exec_peer_out(ex, s);
		return !ex->err;
	default:
		exec_run_local(ex, s);
		return 1;
	}
}

/* In order: watch one unmet wait inline for what is left of the spin budget (peers that
 * sleep are woken first). 1 once it is met. */
static int exec_watch_one(wt_sched_exec_t *ex, const wt_sched_step_t *s)
{
	if (!ex->net.spin_ns)
		return 0;
	watch_begin(ex);
	do {
		for (int r = 0; r < 16; r++) {
			if (slot_met(ex, s)) {
				slot_stamp_seen(ex, s);
				return 1;
			}
			wt_util_cpu_relax();
		}
	} while (wt_util_time_ns() < ex->spin_until);
	return 0;
}

/* Leave in-order running: the steps before ndone are complete, so the pending counts and
 * the ready queue are what completing them one by one would have left. */
static void exec_to_queue(wt_sched_exec_t *ex)
{
	const wt_sched_plan_view_t *v = ex->v;

	ex->in_order = 0;
	memcpy(ex->pending, v->pending0, ex->nsteps * sizeof(*ex->pending));
	for (size_t d = 0; d < ex->ndone; d++)
		for (uint32_t k = v->succ_start[d]; k < v->succ_start[d + 1]; k++)
			ex->pending[v->succ[k]]--;
	ex->rhead = ex->rtail = 0;
	for (size_t j = ex->ndone; j < ex->nsteps; j++)
		if (ex->pending[j] == 0)
			ex->ready[ex->rtail++] = (uint32_t)j;
}

/* exec_in_order for the common plan of one slot call without peer steps: the waits are
 * looked at directly, with the call's words worked out once; the general helpers serve an
 * unmet wait, a mismatch, and the steps that store or read. */
static void exec_in_order_one(wt_sched_exec_t *ex)
{
	const wt_sched_step_t *steps = ex->v->steps;
	const uint64_t seq = ex->slots.seq, mask = ex->ring.depth - 1;
	const size_t ready = ready_off(&ex->ring, (unsigned)(seq & mask));
	const size_t done_prev = done_off(&ex->ring, (unsigned)((seq - 1) & mask));
	void *const *region = ex->slots.region;

	while (ex->ndone < ex->nsteps) {
		const wt_sched_step_t *s = &steps[ex->ndone];
		int met;

		switch (s->type) {
		case WT_SCHED_SLOT_WAIT:
			met = atomic_load_explicit(
				  (const _Atomic uint64_t *)((uint8_t *)region[s->peer] + ready),
				  memory_order_acquire) >= seq;
			if (!met && !exec_watch_one(ex, s))
				goto to_queue;
			peer_sig_check(ex, s);
			if (ex->err)
				return;
			break;
		case WT_SCHED_SLOT_FREE:
			if (s->peer == ex->rank)
				met = atomic_load_explicit(
					  (const _Atomic uint64_t *)((uint8_t *)region[s->peer] +
								     done_prev),
					  memory_order_acquire) >= seq - 1;
			else
				met = peer_freed(ex, s->peer, seq);
			if (!met && !exec_watch_one(ex, s))
				goto to_queue;
			ex->turn_met |= s->peer == ex->rank;
			break;
		case WT_SCHED_SLOT_PUT:
		case WT_SCHED_SLOT_DONE:
			slot_signal(ex, s);
			break;
		case WT_SCHED_SLOT_COPY:
		case WT_SCHED_SLOT_REDUCE:
			slot_read(ex, s);
			break;
		default:
			if (step_waits(s))
				goto general;
			if (!exec_run(ex, (uint32_t)ex->ndone, s))
				return;
			break;
		}
		ex->ndone++;
	}
	return;
to_queue:
	exec_to_queue(ex);
	return;
general:
	exec_in_order_any(ex);
}

/* Plans with v->in_order: id order is a topological order, so the steps run one after the
 * other with no successor walk. The first wait still unmet after the spin budget (or at
 * once, without one) hands the rest to the queue. */
static void exec_in_order_any(wt_sched_exec_t *ex)
{
	const wt_sched_step_t *steps = ex->v->steps;

	while (!ex->err && ex->ndone < ex->nsteps) {
		uint32_t i = (uint32_t)ex->ndone;
		const wt_sched_step_t *s = &steps[i];

		if (step_waits(s)) {
			if (!slot_met(ex, s) && !exec_watch_one(ex, s)) {
				exec_to_queue(ex);
				return;
			}
			slot_wait_met(ex, s);
			if (ex->err)
				return;
		} else if (!exec_run(ex, i, s)) {
			return; /* failed: nothing else is posted */
		}
		ex->ndone++;
	}
}

/* A loop over a queue, not recursion over successors: plans can be long chains. */
static void exec_progress(wt_sched_exec_t *ex)
{
	if (ex->running)
		return;
	ex->running = 1;
	if (ex->in_order && ex->v->uses_slots && ex->v->slot_parts == 1 && !ex->v->uses_peers &&
	    !ex->err)
		exec_in_order_one(ex);
	else if (ex->in_order)
		exec_in_order_any(ex);
	while (!ex->err && ex->rhead < ex->rtail) {
		uint32_t i = ex->ready[ex->rhead++];

		if (!exec_run(ex, i, &ex->v->steps[i]))
			continue;
		exec_complete_step(ex, i);
		if (ex->rhead == ex->rtail && ex->ndeferred)
			exec_watch(ex);
	}
	for (int k = 0; k < ex->ndeferred && !ex->err; k++)
		exec_post(ex, ex->deferred[k], &ex->v->steps[ex->deferred[k]]);
	ex->ndeferred = 0;
	if (ex->wake_due)
		slot_wake_now(ex);
	ex->running = 0;
	exec_maybe_finish(ex);
}

static void exec_net_done(void *arg, weft_status_t st, const char *msg)
{
	exec_op_t *op = arg;
	wt_sched_exec_t *ex = op->ex;
	const wt_sched_step_t *s = &ex->v->steps[op->step];

	if (op->state != OP_POSTED) {
		WT_ERROR("schedule: completion for step %u that is not outstanding", op->step);
		return;
	}
	op->state = OP_DONE;
	ex->outstanding--;
	if (st != WEFT_OK && step_waits(s)) {
		exec_set_error(ex, st, "%s for peer %d (slot call %llu) failed: %s",
			       wt_sched_step_type_name(s->type), (int)s->peer,
			       (unsigned long long)ex->slots.seq, msg ? msg : "no detail");
	} else if (st != WEFT_OK) {
		exec_set_error(ex, st, "%s %s peer %d (msg %u) failed: %s",
			       wt_sched_step_type_name(s->type),
			       s->type == WT_SCHED_SEND ? "to" : "from", (int)s->peer, s->msg,
			       msg ? msg : "no detail");
	} else {
		/* posted unmet: the channel watched the word since */
		slot_stamp_seen(ex, s);
		slot_wait_met(ex, s);
		if (!ex->err)
			exec_complete_step(ex, op->step);
	}
	exec_progress(ex);
}

static int net_ok(const wt_sched_net_t *net)
{
	return net && net->post_send && net->post_recv && net->cancel;
}

static weft_status_t exec_check(const wt_sched_plan_t *p, const wt_sched_plan_view_t *v,
				const wt_sched_net_t *net, uint64_t tag_base, const void *sendbuf,
				const void *recvbuf)
{
	size_t bytes;

	if (!p || !net_ok(net)) {
		WT_ERROR("schedule: execution without a plan or a complete network table");
		return WEFT_ERR_INVALID_ARG;
	}
	if (!v) {
		WT_ERROR("schedule: plan (%s) is not finalized or failed",
			 wt_sched_plan_algo(p)[0] ? wt_sched_plan_algo(p) : "unnamed");
		return WEFT_ERR_INVALID_ARG;
	}
	if (tag_base & (((uint64_t)1 << WT_SCHED_TAG_MSG_BITS) - 1)) {
		WT_ERROR("schedule: tag base %#llx has message bits set",
			 (unsigned long long)tag_base);
		return WEFT_ERR_INVALID_ARG;
	}
	/* A buffer the plan has no bytes of on this rank (root-only buffers elsewhere) may be
	 * NULL; the plan never names it. */
	bytes = v->recv_bytes;
	if (bytes && !recvbuf) {
		WT_ERROR("schedule: NULL receive buffer for %s of %zu bytes",
			 wt_sched_coll_name(v->args->coll), bytes);
		return WEFT_ERR_INVALID_ARG;
	}
	bytes = v->send_bytes;
	if (bytes && !sendbuf) {
		WT_ERROR("schedule: NULL send buffer for %s of %zu bytes",
			 wt_sched_coll_name(v->args->coll), bytes);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

/* One block per execution (state, per-step arrays, scratch): a small collective costs one
 * malloc, not five, and none at all when the plan kept the block of its last execution.
 * The state is not zeroed beyond what start sets; the ops are zeroed once, when the block
 * is new: an op is filled when its step is posted, and a finished execution leaves none
 * posted behind. */
static size_t align_up(size_t x, size_t a)
{
	return (x + a - 1) / a * a;
}

static void exec_reset(wt_sched_exec_t *ex);

static wt_sched_exec_t *exec_alloc(wt_sched_plan_t *p, wt_sched_exec_keep_t *keep, size_t nsteps,
				   size_t scratch)
{
	size_t n = nsteps ? nsteps : 1;
	size_t off_pending = align_up(sizeof(wt_sched_exec_t), 8);
	size_t off_ready = off_pending + n * sizeof(uint32_t);
	size_t off_ops = align_up(off_ready + n * sizeof(uint32_t), 8);
	size_t off_scratch = align_up(off_ops + n * sizeof(exec_op_t), 64);
	wt_sched_exec_t *ex;
	uint8_t *base = NULL;
	size_t bytes;

	if (n > (SIZE_MAX - 4096) / (2 * sizeof(uint32_t) + sizeof(exec_op_t)) ||
	    scratch > SIZE_MAX - off_scratch)
		return NULL;
	bytes = off_scratch + scratch;
	if (keep != NULL && keep->blk != NULL && keep->bytes >= bytes) {
		base = keep->blk;
		keep->blk = NULL;
		/* The same layout as last time leaves the ops idle; another one may not. */
		if (keep->nsteps != n)
			memset(base + off_ops, 0, n * sizeof(exec_op_t));
		bytes = keep->bytes;
	} else if (keep != NULL && keep->blk != NULL) {
		/* Too small: the larger block replaces it in the keep when this one ends. */
		free(keep->blk);
		keep->blk = NULL;
	} else if (keep == NULL) {
		base = wt_sched_plan_spare_take(p);
	}
	if (!base) {
		base = malloc(bytes);
		if (!base)
			return NULL;
		memset(base + off_ops, 0, n * sizeof(exec_op_t));
		((wt_sched_exec_t *)base)->geom_bytes = 0;
	}
	ex = (wt_sched_exec_t *)base;
	exec_reset(ex);
	ex->blk_bytes = bytes;
	ex->keep = keep;
	ex->pending = (uint32_t *)(base + off_pending);
	ex->ready = (uint32_t *)(base + off_ready);
	ex->ops = (exec_op_t *)(base + off_ops);
	ex->scratch = scratch ? base + off_scratch : NULL;
	return ex;
}

/* The state of one run, as a new block or a kept one starts it (the error message is set
 * when an error happens). */
static void exec_reset(wt_sched_exec_t *ex)
{
	ex->wake_due = ex->turn_met = ex->released = 0;
	ex->ndeferred = 0;
	ex->spin_until = 0;
	ex->published = 0;
	ex->bounce = NULL;
	ex->bounce_len = 0;
	ex->fan = NULL;
	ex->fan_desc = NULL;
	ex->rhead = ex->rtail = 0;
	ex->ndone = ex->outstanding = 0;
	ex->running = 0;
	ex->quiet = NULL;
	ex->err = WEFT_OK;
	ex->errmsg[0] = '\0';
}

/* Back to the caller's keep, or to the plan for the next execution unless it keeps one
 * already. Only a block none of whose ops is still posted may go back (see exec_alloc). */
static void exec_release(wt_sched_exec_t *ex)
{
	wt_sched_plan_t *p = ex->plan;
	wt_sched_exec_keep_t *keep = ex->keep;

	/* Most runs have none of these: no calls into the allocator for them. */
	if (ex->bounce != NULL || ex->fan != NULL || ex->fan_desc != NULL) {
		free(ex->bounce);
		ex->bounce = NULL;
		free(ex->fan);
		ex->fan = NULL;
		free(ex->fan_desc);
		ex->fan_desc = NULL;
	}
	if (keep != NULL) {
		if (ex->outstanding == 0 && keep->blk == NULL) {
			keep->blk = ex;
			keep->bytes = ex->blk_bytes;
			keep->nsteps = ex->nsteps ? ex->nsteps : 1;
			keep->serial = ex->v->serial;
		} else {
			free(ex);
		}
		return;
	}
	if (ex->outstanding == 0)
		free(wt_sched_plan_spare_put(p, ex));
	else
		free(ex);
	wt_sched_plan_unref(p);
}

void wt_sched_exec_keep_free(wt_sched_exec_keep_t *keep)
{
	if (keep == NULL)
		return;
	free(keep->blk);
	keep->blk = NULL;
	keep->bytes = 0;
	keep->serial = 0;
}

/* The ring a call of ex takes: its plan's, except that a region without the small rings
 * serves every call from the large one (and the network numbers them all in one
 * sequence). Needs ex->geom. */
static int bound_ring(const wt_sched_exec_t *ex)
{
	return ex->geom[ex->slots.ring].stride ? ex->slots.ring : WT_SCHED_RING_LARGE;
}
/* A slot plan takes the next slot call of the network and checks that its regions hold
 * what the plan touches. */
static weft_status_t exec_bind_slots(wt_sched_exec_t *ex, const wt_sched_net_t *net,
				     const wt_sched_args_t *a)
{
	size_t need = ex->v->slot_extent;
	weft_status_t st;

	if (!net->slots || !net->post_wait || !net->slot_wake) {
		WT_ERROR("schedule: %s plan needs shared slots, which the network does not offer",
			 wt_sched_plan_algo(ex->plan));
		return WEFT_ERR_UNSUPPORTED;
	}
	ex->slots.ring = ex->v->slot_ring;
	ex->slots.extent = need;
	ex->slots.nseq = ex->v->slot_parts;
	ex->slots.stores = NULL; /* plain stores unless the network keeps a choice */
	st = net->slots(net->ctx, &ex->slots);
	if (st != WEFT_OK)
		return st;
	if (ex->geom_bytes != ex->slots.region_bytes) {
		for (int ring = 0; ring < WT_SCHED_RINGS; ring++)
			ex->geom[ring] = slot_ring(ex->slots.region_bytes, ring);
		ex->geom_bytes = ex->slots.region_bytes;
	}
	ex->ring = ex->geom[bound_ring(ex)];
	if (!ex->slots.region || ring_capacity(&ex->ring) < need) {
		WT_ERROR("schedule: %s plan needs slots of %zu bytes, the regions hold %zu",
			 wt_sched_plan_algo(ex->plan), need, ring_capacity(&ex->ring));
		return WEFT_ERR_UNSUPPORTED;
	}
	for (int r = 0; r < a->size; r++) {
		if (ex->slots.region[r] == NULL) {
			WT_ERROR("schedule: %s plan: no slot region of rank %d",
				 wt_sched_plan_algo(ex->plan), r);
			return WEFT_ERR_UNSUPPORTED;
		}
	}
	if (!ex->v->uses_peers)
		return WEFT_OK;
	if (!net->peer_map || !net->peer_copy) {
		WT_ERROR("schedule: %s plan needs the peers' buffers, which the network cannot "
			 "reach",
			 wt_sched_plan_algo(ex->plan));
		return WEFT_ERR_UNSUPPORTED;
	}
	/* In place our input is in RECV: that is the SEND the peers read. */
	wt_util_umem_find(ex->bufs[WT_SCHED_BUF_RECV], ex->v->recv_bytes,
			  &ex->descs[WT_SCHED_BUF_RECV]);
	if (a->in_place)
		ex->descs[WT_SCHED_BUF_SEND] = ex->descs[WT_SCHED_BUF_RECV];
	else
		wt_util_umem_find(ex->bufs[WT_SCHED_BUF_SEND], ex->v->send_bytes,
				  &ex->descs[WT_SCHED_BUF_SEND]);
	return WEFT_OK;
}

/* quiet: the caller blocks on the result (wt_sched_exec_run_kept). */
static weft_status_t exec_start(wt_sched_exec_keep_t *keep, wt_sched_plan_t *p,
				const wt_sched_net_t *net, uint64_t tag_base, const void *sendbuf,
				void *recvbuf, wt_sched_exec_done_fn_t done, void *arg,
				wt_sched_exec_t **out, int quiet)
{
	int ended = 0;
	const wt_sched_plan_view_t *v = p ? wt_sched_plan_view(p) : NULL;
	const wt_sched_args_t *a;
	wt_sched_exec_t *ex;
	weft_status_t st;

	if (!out)
		return WEFT_ERR_INVALID_ARG;
	st = exec_check(p, v, net, tag_base, sendbuf, recvbuf);
	if (st)
		return st;
	a = v->args;
	if (keep != NULL && keep->blk != NULL && keep->serial == v->serial) {
		/* The kept block of this plan's last run: what depends on the plan alone (its
		 * view, dtype, ranks, layout, slot ring geometry) is still there. */
		ex = keep->blk;
		keep->blk = NULL;
		exec_reset(ex);
	} else {
		ex = exec_alloc(p, keep, v->nsteps, v->scratch);
		if (!ex)
			goto nomem;
		if (!keep)
			wt_sched_plan_ref(p);
		ex->plan = p;
		ex->v = v;
		ex->dtype = a->dtype;
		ex->wire_op = a->op == WEFT_AVG ? WEFT_SUM : a->op;
		ex->elem = v->elem;
		ex->size = a->size;
		ex->rank = a->rank;
		ex->nsteps = ex->v->nsteps;
		ex->bufs[WT_SCHED_BUF_SCRATCH] = ex->scratch;
		ex->quick = quick_plan(v);
		memset(ex->seen, 0, sizeof(ex->seen));
	}
	ex->net = *net;
	ex->tag_base = tag_base;
	ex->bufs[WT_SCHED_BUF_RECV] = recvbuf;
	/* Bound as given: in-place forms alias SEND into RECV (allgather: SEND is the rank's
	 * block of RECV; reduce_scatter: RECV is the rank's block of SEND), and plans never
	 * write SEND. */
	ex->bufs[WT_SCHED_BUF_SEND] = (uint8_t *)(uintptr_t)sendbuf;
	ex->status = WEFT_INPROGRESS;
	ex->done = done;
	ex->done_arg = arg;
	if (v->uses_slots) {
		st = exec_bind_slots(ex, net, a);
		if (st) {
			exec_release(ex);
			return st;
		}
	}
	ex->in_order = v->in_order;
	if (!ex->in_order) {
		memcpy(ex->pending, ex->v->pending0, ex->nsteps * sizeof(*ex->pending));
		memcpy(ex->ready, ex->v->sources, ex->v->nsources * sizeof(*ex->ready));
		ex->rtail = ex->v->nsources;
	}
	*out = ex;
	if (quiet)
		ex->quiet = &ended;
	exec_progress(ex);
	/* done ran (and may have freed ex), or the plan ended well without it: no execution
	 * to hand back. */
	if (ended == 1) {
		exec_release(ex);
		*out = NULL;
	} else if (ended == 0 && quiet) {
		ex->quiet = NULL;
	}
	return WEFT_OK;
nomem:
	WT_ERROR("schedule: out of memory starting a %s plan of %zu steps", wt_sched_plan_algo(p),
		 wt_sched_plan_nsteps(p));
	return WEFT_ERR_NO_MEMORY;
}

weft_status_t wt_sched_exec_start(wt_sched_plan_t *p, const wt_sched_net_t *net, uint64_t tag_base,
				  const void *sendbuf, void *recvbuf, wt_sched_exec_done_fn_t done,
				  void *arg, wt_sched_exec_t **out)
{
	return exec_start(NULL, p, net, tag_base, sendbuf, recvbuf, done, arg, out, 0);
}

weft_status_t wt_sched_exec_start_kept(wt_sched_exec_keep_t *keep, wt_sched_plan_t *p,
				       const wt_sched_net_t *net, uint64_t tag_base,
				       const void *sendbuf, void *recvbuf,
				       wt_sched_exec_done_fn_t done, void *arg,
				       wt_sched_exec_t **out)
{
	if (!keep)
		return WEFT_ERR_INVALID_ARG;
	return exec_start(keep, p, net, tag_base, sendbuf, recvbuf, done, arg, out, 0);
}

weft_status_t wt_sched_exec_run_kept(wt_sched_exec_keep_t *keep, wt_sched_plan_t *p,
				     const wt_sched_net_t *net, uint64_t tag_base,
				     const void *sendbuf, void *recvbuf,
				     wt_sched_exec_done_fn_t done, void *arg, wt_sched_exec_t **out)
{
	if (!keep)
		return WEFT_ERR_INVALID_ARG;
	return exec_start(keep, p, net, tag_base, sendbuf, recvbuf, done, arg, out, 1);
}

/* Whether a one-slot in-order plan may run by wt_sched_exec_quick: only slot steps of its
 * one part, and no PUT or DONE before a wait, so that an unmet wait leaves nothing done;
 * and tiny (what a tiny slot holds): a 2-rank broadcast of 1 KiB ran half the time at
 * 0.65-0.82 us a call by it (then with its lock) against 0.41-0.44 the usual way, which
 * had a run at 0.59 too: not measured again without the lock. */
static int quick_plan(const wt_sched_plan_view_t *v)
{
	int signalled = 0;

	if (!v->in_order || !v->uses_slots || v->slot_parts != 1 || v->uses_peers ||
	    v->slot_extent > WT_SCHED_SLOT_TINY_CAP)
		return 0;
	for (size_t i = 0; i < v->nsteps; i++) {
		const wt_sched_step_t *s = &v->steps[i];

		switch (s->type) {
		case WT_SCHED_SLOT_FREE:
		case WT_SCHED_SLOT_WAIT:
			if (signalled || s->part != 0)
				return 0;
			break;
		case WT_SCHED_SLOT_PUT:
		case WT_SCHED_SLOT_DONE:
			signalled = 1;
			break;
		case WT_SCHED_SLOT_COPY:
		case WT_SCHED_SLOT_REDUCE:
			break;
		default:
			return 0;
		}
	}
	return 1;
}

/* A quick run's FREE of a peer: met if the peer was seen to release the call it needs, or
 * has released QUICK_AHEAD calls more (then remembered); with ahead set only the latter
 * (a root whose ring is full waits for room for a run of calls). */
static int quick_freed(wt_sched_exec_t *ex, int peer, uint64_t seq, int ahead)
{
	uint64_t need = seq > ex->ring.depth ? seq - ex->ring.depth : 0, far = need + QUICK_AHEAD,
		 v;

	if (peer >= QUICK_SEEN || QUICK_AHEAD >= ex->ring.depth)
		return peer_freed(ex, peer, seq);
	if (ex->seen[peer] >= need)
		return 1;
	v = atomic_load_explicit(word_at(ex, peer, done_at(ex, far)), memory_order_acquire);
	if (v >= far) {
		ex->seen[peer] = v;
		return 1;
	}
	return !ahead && peer_freed(ex, peer, seq);
}

/* Whether wait step s of call seq is met now: a FREE (our turn, or a peer's release) or a
 * WAIT whose peer published this very call (another call there is left to the usual path,
 * which names it). */
static int quick_met(wt_sched_exec_t *ex, const wt_sched_step_t *s, uint64_t seq, int ahead)
{
	uint64_t sig, count;

	if (s->type == WT_SCHED_SLOT_FREE)
		return s->peer == ex->rank
			   ? atomic_load_explicit(word_at(ex, ex->rank, done_at(ex, seq - 1)),
						  memory_order_acquire) >= seq - 1
			   : quick_freed(ex, s->peer, seq, ahead);
	return atomic_load_explicit(word_at(ex, s->peer, ready_at(ex, seq)),
				    memory_order_acquire) >= seq &&
	       peer_sig_matches(ex, s->peer, seq, &sig, &count);
}

/* A PUT or DONE of a quick run: slot_signal's stores (a tiny copy, plain: not through
 * the timed stores, which the progress thread may be using for another call), the
 * sleepers woken at the end. */
static void quick_signal(wt_sched_exec_t *ex, const wt_sched_step_t *s, uint64_t seq)
{
	if (s->type == WT_SCHED_SLOT_DONE) {
		atomic_store_explicit(word_at(ex, ex->rank, done_at(ex, seq)), seq,
				      memory_order_release);
		return;
	}
	if (s->len)
		memcpy(slot_data(ex, seq, ex->rank, s->off), bind(ex, s->src_buf, s->src_off),
		       s->len);
	slot_publish_words(ex, seq, 0);
}

int wt_sched_exec_quick_plan(const wt_sched_plan_t *p)
{
	const wt_sched_plan_view_t *v = p ? wt_sched_plan_view(p) : NULL;

	return v != NULL && quick_plan(v);
}

int wt_sched_exec_quick(wt_sched_exec_keep_t *keep, const wt_sched_plan_t *p,
			uint64_t seqs[WT_SCHED_RINGS], const void *sendbuf, void *recvbuf,
			uint32_t spin_ns, void (*wake)(void *), void *wake_ctx)
{
	const wt_sched_plan_view_t *v = p ? wt_sched_plan_view(p) : NULL;
	wt_sched_exec_t *ex;
	uint64_t seq, until = 0;
	int ring, bound = 0;

	if (!keep || !keep->blk || !v || keep->serial != v->serial || !seqs || !wake)
		return 0;
	ex = keep->blk;
	if (!ex->quick)
		return 0;
	ring = bound_ring(ex); /* as the block's last run bound it */
	seq = seqs[ring] + 1;
	for (size_t i = 0; i < ex->nsteps; i++) {
		const wt_sched_step_t *s = &v->steps[i];

		switch (s->type) {
		case WT_SCHED_SLOT_FREE:
		case WT_SCHED_SLOT_WAIT:
			if (quick_met(ex, s, seq, 0))
				break;
			/* Watched for what is left of the spin budget (one for the call, as
			 * exec_watch_one's), a full root waiting for a run of releases; at
			 * its end the wait as it is, else back to the caller. */
			for (;;) {
				uint64_t now;

				if (!spin_ns)
					return 0;
				now = wt_util_time_ns();
				if (until == 0)
					until = now + spin_ns;
				else if (now >= until) {
					if (quick_met(ex, s, seq, 0))
						break;
					return 0;
				}
				for (int r = 0; r < 16; r++) {
					if (quick_met(ex, s, seq, 1))
						goto met;
					wt_util_cpu_relax();
				}
			}
		met:
			break;
		case WT_SCHED_SLOT_COPY:
		case WT_SCHED_SLOT_REDUCE:
		case WT_SCHED_SLOT_PUT:
		case WT_SCHED_SLOT_DONE:
			if (!bound) {
				/* The first step that reads or stores: bind the call. */
				bound = 1;
				ex->slots.seq = seq;
				ex->bufs[WT_SCHED_BUF_RECV] = recvbuf;
				ex->bufs[WT_SCHED_BUF_SEND] = (uint8_t *)(uintptr_t)sendbuf;
			}
			if (s->type == WT_SCHED_SLOT_COPY || s->type == WT_SCHED_SLOT_REDUCE) {
				slot_read(ex, s);
				break;
			}
			quick_signal(ex, s, seq);
			break;
		default:
			return 0;
		}
	}
	seqs[ring] = seq;
	wake(wake_ctx);
	return 1;
}

weft_status_t wt_sched_exec_status(const wt_sched_exec_t *ex)
{
	return ex ? ex->status : WEFT_ERR_INVALID_ARG;
}

static void exec_cancel_outstanding(wt_sched_exec_t *ex)
{
	for (size_t i = 0; i < ex->nsteps && ex->outstanding; i++) {
		exec_op_t *op = &ex->ops[i];

		if (op->state != OP_POSTED)
			continue;
		op->state = OP_CANCELLED;
		ex->outstanding--;
		ex->net.cancel(ex->net.ctx, op->handle);
	}
}

void wt_sched_exec_cancel(wt_sched_exec_t *ex, weft_status_t st, const char *msg)
{
	if (!ex || ex->status != WEFT_INPROGRESS)
		return;
	WT_DEBUG("schedule: cancelling %s plan (status %d): %s", wt_sched_plan_algo(ex->plan),
		 (int)st, msg ? msg : "");
	exec_set_error(ex, wt_util_is_err(st) ? st : WEFT_ERR_ABORTED, "%s",
		       msg ? msg : "cancelled");
	exec_cancel_outstanding(ex);
	exec_maybe_finish(ex);
}

size_t wt_sched_exec_owing(const wt_sched_exec_t *ex, int *peers, size_t max)
{
	size_t n = 0;

	if (!ex)
		return 0;
	for (size_t i = 0; i < ex->nsteps && n < max; i++) {
		const wt_sched_step_t *s;
		size_t k;

		if (ex->ops[i].state != OP_POSTED)
			continue;
		s = &ex->v->steps[i];
		if (s->type == WT_SCHED_SEND || s->peer == ex->rank)
			continue; /* RECV*, and slot waits: what a peer owes us */
		for (k = 0; k < n && peers[k] != s->peer; k++)
			;
		if (k == n)
			peers[n++] = s->peer;
	}
	return n;
}

/* Freeing a running execution withdraws its posted ops without calling done. */
void wt_sched_exec_free(wt_sched_exec_t *ex)
{
	if (!ex)
		return;
	if (ex->status == WEFT_INPROGRESS) {
		WT_DEBUG("schedule: freeing a running %s execution", wt_sched_plan_algo(ex->plan));
		exec_cancel_outstanding(ex);
	}
	exec_release(ex);
}
