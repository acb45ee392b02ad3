/* The executor (layers/schedule): binds a plan to real buffers, keeps per-step
 * pending-dependency counts and a ready list, posts ready steps through a network
 * interface and completes when every step is done. The first error is sticky: nothing
 * new is posted, posted steps drain (or are cancelled), then the done callback runs.
 * The network interface is a table so tests can run plans against a simulation. */
#ifndef WT_SCHED_EXEC_H
#define WT_SCHED_EXEC_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "lib/util/status.h"
#include "lib/util/stores.h"
#include "layers/schedule/plan.h"
#include "lib/util/umem.h"

typedef void (*wt_sched_net_done_fn_t)(void *arg, weft_status_t st, const char *msg);

/* The shared slots one execution of a slot plan uses (see wt_sched_slot_put): every rank of
 * the communicator owns a region of region_bytes in memory all of them map, region[r] being
 * rank r's as mapped here (ours writable). seq numbers the slot calls of the communicator,
 * the same on every rank for the same call: consecutive slot calls get consecutive numbers,
 * starting above the base the regions were reset to (wt_sched_slot_reset). */
typedef struct {
	uint64_t seq;
	void *const *region;
	size_t region_bytes;
	/* Set by the executor before it calls slots: the ring of the call (WT_SCHED_RING_*). A
	 * network whose regions have the small rings (wt_sched_slot_small_capacity > 0)
	 * numbers the calls of each ring in a sequence of its own; otherwise it ignores the
	 * field. */
	int ring;
	/* Set by the executor before it calls slots: how many bytes of a slot the plan touches
	 * (the view's slot_extent), so the network can warm what no call used before. */
	size_t extent;
	/* Set by the executor before it calls slots: how many consecutive slot calls this
	 * execution takes (its plan's slot_parts, at least 1). seq is the first; the network
	 * numbers the next call after the last. */
	unsigned nseq;
	/* How our large publishes are stored (plain or streaming, by timing; see
	 * lib/util/stores.h), kept by the network across calls; NULL: always plain. */
	wt_util_stores_t *stores;
} wt_sched_slots_t;

/* A region (the executor's layout, exec.c) holds up to three rings of slots. The large one
 * has WT_SCHED_SLOT_DEPTH slots filling the region; regions of at least
 * WT_SCHED_SLOT_SMALL_MIN bytes also end in a small one of WT_SCHED_SLOT_SMALL_DEPTH slots
 * of WT_SCHED_SLOT_SMALL_STRIDE bytes and a tiny one of WT_SCHED_SLOT_TINY_DEPTH slots of
 * WT_SCHED_SLOT_TINY_STRIDE bytes, for calls whose plans say so (the view's slot_ring):
 * deep enough that a broadcast root runs that many small calls ahead of its readers. Call
 * seq of a ring uses its slot seq % depth, so that many calls may be in flight, and the
 * words of the protocol are each written only by the region's owner: per slot b the seq
 * last published in it (ready[b], in the cache line that starts its data, so a tiny
 * contribution and its flag cross together), and the last seq of slot b's calls whose peer
 * slots the owner has finished reading (done[b]). Regions must be 64-byte aligned. */
#define WT_SCHED_SLOT_DEPTH 4
/* The region a communicator of one host gets (the API cuts its slot areas into these):
 * 4 MiB + 4 KiB for the large ring, whose slots then hold a 1 MiB call, 259 KiB for the
 * small ring of 32 slots of 8 KiB + 64 and 41 KiB for the tiny ring of 128 slots of 320. */
#define WT_SCHED_SLOT_REGION ((size_t)(4096 + 4 + 259 + 41) * 1024)
/* How much of a large slot a communicator uses on a host with a core per rank (what the
 * slots of 1 MiB + 4 KiB rings held, a 256 KiB call included; weft-sched --slots models
 * it): above it the message algorithms pipeline and the slots do not. With more local ranks
 * than cores the API offers the whole slot (4 ranks on 2 cores, alternating runs: 2 and 4
 * MiB allgather 420-612 / 0.9-1.55 ms by messages, 200-220 / 611-686 us through slots). */
#define WT_SCHED_SLOT_CORE_BYTES ((size_t)263264)
/* Bytes one slot of the large ring of a region of region_bytes holds (0 if too small). */
size_t wt_sched_slot_capacity(size_t region_bytes);
/* Bytes one slot of its small ring holds (0: the region has none). */
size_t wt_sched_slot_small_capacity(size_t region_bytes);
/* Bytes one slot of its tiny ring holds (0: the region has none). */
size_t wt_sched_slot_tiny_capacity(size_t region_bytes);
/* Start a region afresh for a new communicator: its calls will be numbered above base, which
 * must exceed every seq the region was used with before. Only the owner calls it, and only
 * while no peer reads the region. It writes every page of the small rings and of the first
 * `warm` bytes of each large slot, so their first calls take no page faults. */
void wt_sched_slot_reset(void *region, size_t region_bytes, uint64_t base, size_t warm);
/* Read every page of a peer's small rings and of the first `warm` bytes of its large slots
 * once, so that its first calls take no page faults here (returns what it read, for the
 * compiler's sake). */
uint64_t wt_sched_slot_touch(const void *region, size_t region_bytes, size_t warm);
/* Bytes [from, to) of every large slot of a region, page by page: written (zeros; only the
 * owner, and only bytes no call has used since the reset) or read (any rank). The network
 * calls it when a plan's extent first passes what was warmed. */
uint64_t wt_sched_slot_warm(void *region, size_t region_bytes, size_t from, size_t to, int write);
/* The highest seq a region's words hold (what a new base must exceed). */
uint64_t wt_sched_slot_high_water(const void *region, size_t region_bytes);
/* 1 if the owner of peer_region has released everything the owner of own_region published
 * (so own_region may be reset and reused). */
int wt_sched_slot_released(const void *peer_region, const void *own_region, size_t region_bytes);

#define WT_SCHED_NET_REDUCE 1u
#define WT_SCHED_NET_STREAM 2u

/* What the executor needs of a network. peer is a communicator rank. Callbacks must not
 * run inside post_*; cancel withdraws a posted op (its callback will never run). */
typedef struct {
	void *ctx;
	weft_status_t (*post_send)(void *ctx, int peer, uint64_t tag, const void *buf, size_t len,
				   wt_sched_net_done_fn_t cb, void *arg, void **handle);
	/* flags: WT_SCHED_NET_REDUCE (combine into buf with dtype and op, else overwrite),
	 * WT_SCHED_NET_STREAM (overwriting: store around the caches, as the step's hint).
	 * left: combining, buf = left op incoming (len bytes, not overlapping buf); NULL:
	 * buf = buf op incoming. */
	weft_status_t (*post_recv)(void *ctx, int peer, uint64_t tag, void *buf, size_t len,
				   unsigned flags, weft_dtype_t dtype, weft_op_t op,
				   const void *left, wt_sched_net_done_fn_t cb, void *arg,
				   void **handle);
	void (*cancel)(void *ctx, void *handle);
	/* Shared slots; all three NULL when the network has none (a plan with slot steps then
	 * fails to start). slots fills this execution's regions and call number; it is called
	 * once per started slot plan, in start order. */
	weft_status_t (*slots)(void *ctx, wt_sched_slots_t *out);
	/* Complete (cb, never inside this call) once *word >= value, read with acquire order,
	 * or with an error when peer fails; cancel withdraws it like a receive. */
	weft_status_t (*post_wait)(void *ctx, int peer, const _Atomic uint64_t *word,
				   uint64_t value, wt_sched_net_done_fn_t cb, void *arg,
				   void **handle);
	/* We stored (release order) into our region: wake the ranks that may sleep waiting. */
	void (*slot_wake)(void *ctx);
	/* How long the executor may watch an unmet slot flag itself, in nanoseconds, before it
	 * posts the wait (0: post at once). A caller that is about to block on the result and
	 * has a core of its own sets it: the peers' flags usually arrive within a microsecond,
	 * and a wait met here costs a load, not a posted op and its completion. */
	uint32_t spin_ns;
	/* Peers' buffers (plans with peer steps; both NULL when the network cannot reach them:
	 * such a plan then fails to start). peer_map returns the first byte of the buffer desc
	 * describes as mapped here, or NULL when it is not mappable; peer_copy then moves len
	 * bytes between local and that buffer at off (write: local -> peer), synchronously. */
	void *(*peer_map)(void *ctx, int peer, const wt_util_umem_desc_t *desc);
	weft_status_t (*peer_copy)(void *ctx, int peer, void *local,
				   const wt_util_umem_desc_t *desc, size_t off, size_t len,
				   int write);
	/* Optional (NULL: the executor copies after posting the send): a send whose bytes also
	 * land in copy_to as the network takes them (a SEND step with WT_SCHED_SEND_COPY);
	 * flags: WT_SCHED_NET_STREAM to store them around the caches. The copy is complete
	 * when cb reports success. */
	weft_status_t (*post_send_copy)(void *ctx, int peer, uint64_t tag, const void *buf,
					size_t len, void *copy_to, unsigned flags,
					wt_sched_net_done_fn_t cb, void *arg, void **handle);
} wt_sched_net_t;

/* Bits of the tag the executor fills with the per-peer message index. */
#define WT_SCHED_TAG_MSG_BITS 24

typedef struct wt_sched_exec wt_sched_exec_t;
/* Runs when the execution is complete (possibly inside wt_sched_exec_start). */
typedef void (*wt_sched_exec_done_fn_t)(void *arg, weft_status_t st, const char *msg);

/* Start executing p. tag_base's low WT_SCHED_TAG_MSG_BITS bits must be zero. The
 * executor holds a reference on p until freed and copies *net, so net may live on the
 * caller's stack. *ex is set before any step runs: when the plan has no network steps
 * (one rank, zero elements) done runs inside this call and may already free *ex.
 * Notes on behaviour:
 * - done's msg is never NULL ("" on success). It is called exactly once, as the last
 *   thing the executor does with ex, so done may free ex.
 * - Zero-length SEND / RECV steps are posted like any other (the network must handle
 *   0-byte messages); zero-length local steps complete at once. The algorithms in the
 *   table never emit zero-length network steps.
 * - Any post_* return other than WEFT_OK is the execution's error (a network that
 *   applies backpressure must queue instead of returning WT_AGAIN).
 * - Scratch is allocated per execution, so one plan may run many times at once.
 * - Not thread-safe: start, cancel, owing, free and the net callbacks of one execution
 *   must be serialised by the caller. */
weft_status_t wt_sched_exec_start(wt_sched_plan_t *p, const wt_sched_net_t *net, uint64_t tag_base,
				  const void *sendbuf, void *recvbuf, wt_sched_exec_done_fn_t done,
				  void *arg, wt_sched_exec_t **ex);
/* Memory a caller keeps between executions it starts and frees from one thread while it
 * keeps the plan alive itself (a blocking call): such an execution takes no reference on
 * the plan and reuses the kept block, so a loop of calls allocates nothing and performs no
 * atomic operation here. Zero-initialise; wt_sched_exec_keep_free releases the block. */
typedef struct {
	void *blk;
	size_t bytes;
	size_t nsteps;	 /* of the execution that used blk last (its ops are idle) */
	uint64_t serial; /* the view serial of that execution's plan (0: none) */
} wt_sched_exec_keep_t;
weft_status_t wt_sched_exec_start_kept(wt_sched_exec_keep_t *keep, wt_sched_plan_t *p,
				       const wt_sched_net_t *net, uint64_t tag_base,
				       const void *sendbuf, void *recvbuf,
				       wt_sched_exec_done_fn_t done, void *arg,
				       wt_sched_exec_t **ex);
/* As wt_sched_exec_start_kept, for a caller that blocks on the result: a plan that ends
 * well inside this call (its peers were there) returns WEFT_OK with *ex NULL, without
 * calling done and with nothing to free. Otherwise as wt_sched_exec_start_kept: done runs
 * once the execution ends (inside this call too, when it fails at once). */
weft_status_t wt_sched_exec_run_kept(wt_sched_exec_keep_t *keep, wt_sched_plan_t *p,
				     const wt_sched_net_t *net, uint64_t tag_base,
				     const void *sendbuf, void *recvbuf,
				     wt_sched_exec_done_fn_t done, void *arg, wt_sched_exec_t **ex);
void wt_sched_exec_keep_free(wt_sched_exec_keep_t *keep);
/* A blocking caller's rerun of the one-slot plan that ran last from keep (ended, its block
 * kept), when that plan's waits all come before its PUT and DONE (a broadcast's root and
 * readers): its steps run straight from the kept block on the new buffers, with no
 * execution to start, no done and no network call but wake(wake_ctx) at the end (peers
 * that sleep on our flags). seqs are the network's slot sequences, one per ring (as its
 * slots op keeps them); the call takes the next number of its ring. 1: the call ran, its
 * ring's sequence advanced. 0: nothing was stored or numbered, because the plan does not
 * qualify, its block is not kept, or a wait stayed unmet for spin_ns (or a peer published
 * another call there): the caller runs the call the usual way, which waits, or names
 * what differs. Under the same serialisation as wt_sched_exec_start. */
int wt_sched_exec_quick(wt_sched_exec_keep_t *keep, const wt_sched_plan_t *p,
			uint64_t seqs[WT_SCHED_RINGS], const void *sendbuf, void *recvbuf,
			uint32_t spin_ns, void (*wake)(void *), void *wake_ctx);
/* Whether p is a plan wt_sched_exec_quick runs (one tiny slot call, its waits first). */
int wt_sched_exec_quick_plan(const wt_sched_plan_t *p);
/* WEFT_INPROGRESS until done, then the final status. */
weft_status_t wt_sched_exec_status(const wt_sched_exec_t *ex);
/* Stop early: cancels posted ops, completes with st (and msg) if not done already; done
 * runs inside this call. A non-error st becomes WEFT_ERR_ABORTED. If an error happened
 * earlier and the plan was draining, that first error is the one reported. */
void wt_sched_exec_cancel(wt_sched_exec_t *ex, weft_status_t st, const char *msg);
/* Peers (communicator ranks) whose posted receives are still outstanding; returns how
 * many were written (at most max, each once). */
size_t wt_sched_exec_owing(const wt_sched_exec_t *ex, int *peers, size_t max);
/* Free a completed (or cancelled) execution. Freeing one still running cancels its posted
 * ops without calling done. */
void wt_sched_exec_free(wt_sched_exec_t *ex);

#endif
