/* The schedule builder (layers/schedule): a plan is a DAG of steps over byte ranges of
 * symbolic buffers (SEND, RECV, SCRATCH), so one compiled plan serves every call of the
 * same shape. Algorithms are compilers from arguments to a plan that use only this API.
 * Every builder call returns the new step's vertex id (>= 0), or -1 after an error; the
 * first error is sticky and reported by wt_sched_plan_finalize. */
#ifndef WT_SCHED_PLAN_H
#define WT_SCHED_PLAN_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "lib/util/status.h"

/* Buffer sizes per collective (es = dtype size, n = size; "root only" is 0 bytes on the
 * other ranks, whose plans must not touch that buffer):
 *   ALLREDUCE       SEND count*es          RECV count*es
 *   ALLGATHER       SEND count*es          RECV n*count*es   (in place: SEND = RECV + rank block)
 *   REDUCE_SCATTER  SEND n*count*es        RECV count*es     (in place: RECV = SEND + rank block)
 *   BROADCAST       SEND count*es          RECV count*es     (always in place: one user buffer)
 *   REDUCE          SEND count*es          RECV count*es root only
 *   GATHER          SEND count*es          RECV n*count*es root only
 *   SCATTER         SEND n*count*es root only  RECV count*es
 *   ALLTOALL        SEND n*count*es        RECV n*count*es   (in place: SEND == RECV)
 *   ALLTOALLV       SEND/RECV: the largest displacement + count of the vectors
 *   BARRIER         nothing
 *   SEND            SEND count*es to args.peer;  RECV  RECV count*es from args.peer
 * In-place plans read their input from RECV where SEND aliases it; they must never write
 * SEND. */
typedef enum {
	WT_COLL_ALLREDUCE = 0,
	WT_COLL_ALLGATHER = 1,
	WT_COLL_REDUCE_SCATTER = 2,
	WT_COLL_BROADCAST = 3,
	WT_COLL_REDUCE = 4,
	WT_COLL_GATHER = 5,
	WT_COLL_SCATTER = 6,
	WT_COLL_ALLTOALL = 7,
	WT_COLL_ALLTOALLV = 8,
	WT_COLL_BARRIER = 9,
	WT_COLL_SEND = 10,
	WT_COLL_RECV = 11,
	WT_COLL_COUNT_ /* one past the last */
} wt_sched_coll_t;

/* Wire compression of float32 reductions (WEFT_COMPRESS): data crosses links as 16-bit
 * floats, every reduction accumulates in float32. */
typedef enum {
	WT_SCHED_COMPRESS_NONE = 0,
	WT_SCHED_COMPRESS_BF16 = 1,
	WT_SCHED_COMPRESS_FP16 = 2,
} wt_sched_compress_t;

typedef enum {
	WT_SCHED_BUF_SEND = 0,	  /* the caller's send buffer (read only) */
	WT_SCHED_BUF_RECV = 1,	  /* the caller's receive buffer */
	WT_SCHED_BUF_SCRATCH = 2, /* plan-owned scratch, wt_sched_scratch bytes */
	/* A rank's shared slot for this call (args.slot_bytes): our own as SLOT_PUT's
	 * destination, the step's peer's as the source of SLOT_COPY / SLOT_REDUCE. */
	WT_SCHED_BUF_SLOT = 3,
} wt_sched_buf_t;

typedef enum {
	WT_SCHED_SEND = 0,
	WT_SCHED_RECV = 1,
	WT_SCHED_RECV_REDUCE = 2,
	WT_SCHED_REDUCE = 3, /* dst = dst op src */
	WT_SCHED_COPY = 4,
	WT_SCHED_DIV = 5, /* dst /= comm size (the finish of WEFT_AVG) */
	WT_SCHED_NOP = 6, /* fence / join */
	/* Wire compression (float32 plans; the step's wire field names the 16-bit format).
	 * len is the destination's bytes; the source spans wt_sched_step_src_len bytes. */
	WT_SCHED_NARROW = 7,	   /* dst (16-bit) = round(src (plan dtype)) */
	WT_SCHED_WIDEN = 8,	   /* dst (plan dtype) = src (16-bit) */
	WT_SCHED_REDUCE_WIDEN = 9, /* dst (plan dtype) = dst op widen(src (16-bit)) */
	/* Shared slots (see wt_sched_slot_put): each rank publishes into its own slot and
	 * reads the others' directly, with no message. */
	WT_SCHED_SLOT_FREE = 10,   /* wait: peer released the previous use of our slot (our
				    * own rank: our previous slot call is released) */
	WT_SCHED_SLOT_PUT = 11,	   /* our slot[off] = src, then publish the slot */
	WT_SCHED_SLOT_WAIT = 12,   /* wait: peer published its slot for this call */
	WT_SCHED_SLOT_COPY = 13,   /* dst = peer's slot[src_off] */
	WT_SCHED_SLOT_REDUCE = 14, /* dst = dst op peer's slot[src_off] */
	WT_SCHED_SLOT_DONE = 15,   /* release: we read every peer slot of this call */
	/* Peers' buffers (see wt_sched_peer_read): a plan reads and writes the buffers of the
	 * other ranks of the host directly, their SEND or RECV named by buf / src_buf and the
	 * step's peer. */
	WT_SCHED_PEER_READ = 16,   /* dst = peer's src_buf[src_off] */
	WT_SCHED_PEER_REDUCE = 17, /* dst = dst op peer's src_buf[src_off] */
	WT_SCHED_PEER_WRITE = 18,  /* peer's buf[off] = our src_buf[src_off] */
	WT_SCHED_SLOT_DRAIN = 19,  /* wait: peer released this call (its SLOT_DONE) */
	/* RECV[off] of every rank of the communicator, ours and the peers' = our
	 * src_buf[src_off] op peer's SEND[off], in one pass (see wt_sched_peer_reduce_out). */
	WT_SCHED_PEER_REDUCE_OUT = 20,
} wt_sched_step_type_t;

/* Everything a plan depends on; two calls with equal args share a plan. */
typedef struct {
	wt_sched_coll_t coll;
	size_t count; /* elements */
	weft_dtype_t dtype;
	weft_op_t op; /* the user's op; AVG plans reduce with SUM then DIV */
	int root;
	int rank;	  /* rank in the communicator */
	int size;	  /* communicator size */
	int in_place;	  /* the collective's in-place form (see the table above) */
	size_t seg_bytes; /* pipeline segment size for chunked algorithms (0 = default) */
	int peer;	  /* SEND / RECV: the other rank */
	int compress;	  /* wt_sched_compress_t; only float32 allreduce honours it */
	/* Bytes each rank may publish per call into a shared slot that the others read
	 * directly: nonzero only when every rank of the communicator is on one host with
	 * shared slot areas (the API sets it); 0 means no slots, and slot algorithms refuse
	 * the args. */
	size_t slot_bytes;
	/* This rank's buffers of the call lie in weft_mem_alloc memory, which peers map and
	 * read or write in place (the API sets it). Only the choice among algorithms looks
	 * at it, never a plan: the cost model offers `direct` only then, since through copies
	 * between processes (CMA) it is slower than the message path. Choices must agree, so
	 * a program keeps a call's buffers in weft_mem on every rank or on none. */
	int mem;
	/* ALLTOALLV only, in elements, size entries each. Plans of ALLTOALLV are built per call
	 * and never cached, so these may point at the caller's arrays. */
	const size_t *sendcounts, *sdispls, *recvcounts, *rdispls;
} wt_sched_args_t;

typedef struct {
	uint8_t type;		   /* wt_sched_step_type_t */
	uint8_t buf;		   /* wt_sched_buf_t: destination (or source for SEND) */
	uint8_t src_buf;	   /* REDUCE / COPY / NARROW / WIDEN / REDUCE_WIDEN source;
				    * RECV_REDUCE from src: its left operand;
				    * SEND with WT_SCHED_SEND_COPY: the copy's destination
				    * (at src_off), which the step writes */
	uint8_t wire;		   /* NARROW / WIDEN / REDUCE_WIDEN: weft_dtype_t, 16-bit;
				    * COPY, PEER_WRITE, PEER_REDUCE_OUT, RECV:
				    * WT_SCHED_COPY_STREAM or 0;
				    * SEND: WT_SCHED_SEND_COPY, with WT_SCHED_COPY_STREAM
				    * or not, or 0;
				    * RECV_REDUCE: WT_SCHED_RECV_FROM_SRC or 0;
				    * PEER_REDUCE: WT_SCHED_PEER_FROM_SEND or 0 */
	int32_t peer;		   /* SEND / RECV* / SLOT_* but PUT, DONE: communicator rank */
	uint32_t msg;		   /* SEND / RECV*: index among messages to/from that peer */
	uint32_t part;		   /* slot steps: the plan's slot call (wt_sched_slot_part) */
	size_t off, src_off, len;  /* bytes */
	uint32_t dep_start, ndeps; /* into plan->deps */
} wt_sched_step_t;

typedef struct wt_sched_plan wt_sched_plan_t;

wt_sched_plan_t *wt_sched_plan_new(const wt_sched_args_t *args);
const wt_sched_args_t *wt_sched_plan_args(const wt_sched_plan_t *p);

int wt_sched_send(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
		  int ndeps, const int *deps);
int wt_sched_recv(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
		  int ndeps, const int *deps);
/* A SEND that also writes its bytes to dst + dst_off (hint WT_SCHED_SEND_COPY; with stream,
 * storing around the caches as WT_SCHED_COPY_STREAM): the network copies each piece right
 * after it took it, so bytes both sent and kept (an allgather's own block) are read once,
 * while in cache, instead of by a COPY and the SEND apart. The copy is done when the step
 * completes. dst must not be SEND and must not overlap the source. */
#define WT_SCHED_SEND_COPY 4
int wt_sched_send_copy(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
		       wt_sched_buf_t dst, size_t dst_off, int stream, int ndeps, const int *deps);

/* A RECV whose bytes this rank does not read again in the call (a final block of a large
 * call): the channel stores them around the caches (WT_SCHED_COPY_STREAM, below). */
int wt_sched_recv_stream(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
			 int ndeps, const int *deps);
/* Receive len bytes from peer and combine into buf+off with the plan's op (SUM for AVG). */
int wt_sched_recv_reduce(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off, size_t len,
			 int ndeps, const int *deps);
/* The same, but buf+off = src_buf's bytes at src_off op the incoming ones (hint
 * WT_SCHED_RECV_FROM_SRC): the first term of a combination taken in the same pass as the
 * receive, instead of a COPY into buf before it. src_buf must not be buf. */
#define WT_SCHED_RECV_FROM_SRC 2
int wt_sched_recv_reduce_from(wt_sched_plan_t *p, int peer, wt_sched_buf_t buf, size_t off,
			      wt_sched_buf_t src_buf, size_t src_off, size_t len, int ndeps,
			      const int *deps);
/* dst = dst op src (SUM for AVG). */
int wt_sched_reduce(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		    size_t src_off, size_t len, int ndeps, const int *deps);
/* A COPY whose destination this rank does not read again soon (a result leaving a piece
 * held in cache, in a call too large for the caches to keep): the executor stores it
 * around the caches (lib/util/copy.h). Below the size of the last-level cache plain
 * stores are faster: the next call finds its buffers still cached. */
#define WT_SCHED_COPY_STREAM 1
/* Calls whose receive buffer holds at least this many bytes store their final results
 * around the caches: beyond the last-level cache (32 MiB here, shared by every rank's
 * buffers) nothing stays cached for the next call anyway, and a plain store pays a
 * read-for-ownership. Measured here, 2 threads each copying 8 MiB: plain 7 GB/s each,
 * streaming 24; 4 MiB: plain 41, streaming 26. */
#define WT_SCHED_STREAM_MIN ((size_t)16 << 20)
int wt_sched_copy_stream(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
			 size_t src_off, size_t len, int ndeps, const int *deps);
int wt_sched_copy(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		  size_t src_off, size_t len, int ndeps, const int *deps);
/* Divide len bytes at buf+off by the communicator size (elements of the plan's dtype). */
int wt_sched_div(wt_sched_plan_t *p, wt_sched_buf_t buf, size_t off, size_t len, int ndeps,
		 const int *deps);
/* Wire compression steps; wire is WEFT_FLOAT16 or WEFT_BFLOAT16 and the plan's dtype must be
 * FLOAT32 (checked by finalize). len is the destination's bytes, as for every step: a NARROW
 * of n elements has len 2n and reads 4n bytes; WIDEN and REDUCE_WIDEN have len 4n and read
 * 2n. Source and destination must not overlap. REDUCE_WIDEN uses the plan's op (SUM for
 * AVG) and accumulates in float32. */
int wt_sched_narrow(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		    size_t src_off, size_t len, weft_dtype_t wire, int ndeps, const int *deps);
int wt_sched_widen(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, wt_sched_buf_t src,
		   size_t src_off, size_t len, weft_dtype_t wire, int ndeps, const int *deps);
int wt_sched_reduce_widen(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off,
			  wt_sched_buf_t src, size_t src_off, size_t len, weft_dtype_t wire,
			  int ndeps, const int *deps);
/* Bytes a step reads from its source (src_buf + src_off, or buf + off for SEND); 0 for
 * steps that read nothing. */
size_t wt_sched_step_src_len(const wt_sched_plan_t *p, const wt_sched_step_t *s);
/* 1 and the 16-bit wire format in *wire if args ask for compression and may have it; 0 when
 * args->compress is NONE or the collective / dtype ignores it (only FLOAT32 ALLREDUCE
 * honours it). */
int wt_sched_compress_wire(const wt_sched_args_t *args, weft_dtype_t *wire);
/* "none", "bf16", "fp16"; and back (-1 if unknown, case-insensitive). */
const char *wt_sched_compress_name(int compress);
int wt_sched_compress_from_name(const char *name);
/* Shared slots (args->slot_bytes > 0). Every call of a slot plan has its own slot per rank
 * (WT_SCHED_SLOT_DEPTH per rank serve consecutive calls in turn); a plan publishes into ours at
 * most once, reads a peer's slot only after waiting for it, and releases what it read with exactly
 * one wt_sched_slot_done, after every read. Offsets and lengths are bytes within a slot of
 * args->slot_bytes. Copy len bytes (may be 0: a pure signal) of src into our slot at slot_off and
 * publish the slot. It first waits, one SLOT_FREE step per peer, until each peer has released the
 * previous call that used this slot, and for our turn (a SLOT_FREE on our own rank: our
 * previous slot call released), so a rank publishes and releases in call order even with
 * several calls in flight; returns the PUT's id. */
int wt_sched_slot_put(wt_sched_plan_t *p, wt_sched_buf_t src, size_t src_off, size_t slot_off,
		      size_t len, int ndeps, const int *deps);
/* Wait until peer has published its slot for this call. */
int wt_sched_slot_wait(wt_sched_plan_t *p, int peer, int ndeps, const int *deps);
/* dst = peer's slot bytes [slot_off, +len). Every read must depend (transitively) on the
 * SLOT_WAIT of its peer. Never our own slot: only the peers' releases guard a slot, so a
 * later call of ours may already be writing it; our contribution comes from the plan's
 * buffers. */
int wt_sched_slot_copy(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
		       size_t slot_off, size_t len, int ndeps, const int *deps);
/* dst = dst op peer's slot bytes (the plan's op, SUM for AVG). */
int wt_sched_slot_reduce(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
			 size_t slot_off, size_t len, int ndeps, const int *deps);
/* Release: depends on every slot read added so far, the PUT and our turn; no slot step may
 * follow. */
int wt_sched_slot_done(wt_sched_plan_t *p);
/* Peers' buffers: a slot plan may read the SEND or RECV buffer of another rank and write
 * its RECV, as if they were its own. Such a plan's SLOT_PUT publishes where our SEND and
 * RECV are (it must carry no data: len 0), every peer step waits for the SLOT_WAIT of its
 * peer, the SLOT_DONE follows every peer step (we are done with the peers' buffers), and
 * after the DONE the plan drains every other rank (wt_sched_slot_drain): a rank leaves
 * the call only once no one reads or writes its buffers any more. Peer ranges are checked
 * against our own buffer of the same name (the collectives served are symmetric) and, at
 * run time, against what the peer published. dst = peer's buffer bytes. */
int wt_sched_peer_read(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
		       wt_sched_buf_t peer_buf, size_t peer_off, size_t len, int ndeps,
		       const int *deps);
/* dst = dst op peer's buffer bytes (the plan's op, SUM for AVG). */
int wt_sched_peer_reduce(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
			 wt_sched_buf_t peer_buf, size_t peer_off, size_t len, int ndeps,
			 const int *deps);
/* dst = our SEND bytes at peer_off op the peer's (hint WT_SCHED_PEER_FROM_SEND): the first
 * term of a sum taken from our own input in the same pass, instead of a copy before it.
 * peer_buf must be SEND. */
#define WT_SCHED_PEER_FROM_SEND 2
int wt_sched_peer_reduce_send(wt_sched_plan_t *p, wt_sched_buf_t dst, size_t dst_off, int peer,
			      size_t peer_off, size_t len, int ndeps, const int *deps);
/* peer's RECV [peer_off, +len) = our src bytes. */
int wt_sched_peer_write(wt_sched_plan_t *p, int peer, size_t peer_off, wt_sched_buf_t src,
			size_t src_off, size_t len, int ndeps, const int *deps);
/* The same, stored around our caches when mapped (WT_SCHED_COPY_STREAM): for calls too
 * large for the caches to keep anyway. */
int wt_sched_peer_write_stream(wt_sched_plan_t *p, int peer, size_t peer_off, wt_sched_buf_t src,
			       size_t src_off, size_t len, int ndeps, const int *deps);
/* The last term of a share every rank receives: RECV [off, +len) of every rank, ours and
 * each peer's, = our src bytes op peer's SEND [off, +len), combined and written out in one
 * pass that keeps the result in L1 between the two (lib/util wt_util_reduce3_fanout), where
 * a sum into the scratch followed by a copy per rank passes over it n + 1 times. stream:
 * the writes go around the caches (WT_SCHED_COPY_STREAM). The plan's op, SUM for AVG. */
int wt_sched_peer_reduce_out(wt_sched_plan_t *p, int peer, size_t off, wt_sched_buf_t src,
			     size_t src_off, size_t len, int stream, int ndeps, const int *deps);
/* Slot steps added after this belong to slot call `part` of the plan (0 until it is
 * called; parts in increasing order). A plan of several parts takes as many consecutive slot
 * calls (the view's slot_parts). Each part is a slot call of its own: at most one SLOT_PUT,
 * exactly one SLOT_DONE, its own turn, and waits and reads that name its own call, so a call
 * larger than a slot goes through the slots in pieces, its publisher running up to the
 * ring's depth of pieces ahead of the readers. Plans with peer steps have one part. */
void wt_sched_slot_part(wt_sched_plan_t *p, unsigned part);
/* The most parts an algorithm splits a call into (larger calls take the message path). */
#define WT_SCHED_SLOT_MAX_PARTS 256
/* The PUT of a plan with peer steps: publishes where our buffers are (and that we entered
 * the call), no data. A rank with no peer step of its own (an empty share) still publishes:
 * its peers use its buffers. */
int wt_sched_slot_put_bufs(wt_sched_plan_t *p, int ndeps, const int *deps);
/* Wait until peer released this call (after our own SLOT_DONE). */
int wt_sched_slot_drain(wt_sched_plan_t *p, int peer, int ndeps, const int *deps);
/* Bytes at the front of a slot where a plan with peer steps publishes its buffers (and
 * marks a call it failed). */
#define WT_SCHED_PEER_DESC_BYTES 128
/* 1 if the plan has slot steps (it needs the network's slots to run). */
int wt_sched_plan_uses_slots(const wt_sched_plan_t *p);
/* The end of the furthest slot range the plan touches (0 without slot steps). */
size_t wt_sched_plan_slot_extent(const wt_sched_plan_t *p);

/* A step that waits for every step added so far; later steps may name it. */
int wt_sched_fence(wt_sched_plan_t *p);
/* Make the scratch buffer at least bytes long. */
void wt_sched_scratch(wt_sched_plan_t *p, size_t bytes);
/* Mark the plan failed with st and a message (for algorithms that refuse args). */
void wt_sched_fail(wt_sched_plan_t *p, weft_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Check and freeze: validates ranges against buffer sizes, numbers messages per peer,
 * builds successor lists. After this the plan is immutable and shareable. */
weft_status_t wt_sched_plan_finalize(wt_sched_plan_t *p);
const char *wt_sched_plan_error(const wt_sched_plan_t *p);

/* The small ring of slot regions (exec.h): regions of at least WT_SCHED_SLOT_SMALL_MIN bytes
 * end in WT_SCHED_SLOT_SMALL_DEPTH slots of WT_SCHED_SLOT_SMALL_STRIDE bytes, each holding
 * WT_SCHED_SLOT_SMALL_CAP bytes of data. The stride is a line more than 8 KiB, so that the
 * slots' first lines spread over the L1 sets instead of sharing one. */
#define WT_SCHED_SLOT_SMALL_DEPTH 32u
#define WT_SCHED_SLOT_SMALL_STRIDE ((size_t)8192 + 64)
#define WT_SCHED_SLOT_SMALL_CAP (WT_SCHED_SLOT_SMALL_STRIDE - WT_SCHED_SLOT_HDR)
/* The tiny ring, after the small one in the same regions: WT_SCHED_SLOT_TINY_DEPTH slots of
 * WT_SCHED_SLOT_TINY_STRIDE bytes (five lines, 40 KiB in all), for the calls of at least
 * WT_SCHED_SLOT_TINY_RANKS ranks that fit WT_SCHED_SLOT_TINY_CAP bytes. A broadcast root
 * runs that many calls ahead of its readers, so where ranks share cores each switch
 * between them serves four times as many calls (4 ranks on 2 cores, 16 B broadcast,
 * alternating: 0.72-0.95 us a call through the small ring, 0.39-0.56 through this one).
 * With 2 ranks the deep ring ran some loops half as fast (0.35-0.45 against 0.22-0.23 us),
 * so their calls keep to the small ring. */
#define WT_SCHED_SLOT_TINY_DEPTH 128u
#define WT_SCHED_SLOT_TINY_STRIDE ((size_t)320)
#define WT_SCHED_SLOT_TINY_CAP (WT_SCHED_SLOT_TINY_STRIDE - WT_SCHED_SLOT_HDR)
#define WT_SCHED_SLOT_TINY_RANKS 3
/* A region's rings (wt_sched_slots_t.ring, the plan view's slot_ring). */
enum {
	WT_SCHED_RING_LARGE = 0,
	WT_SCHED_RING_SMALL = 1,
	WT_SCHED_RING_TINY = 2,
	WT_SCHED_RINGS = 3
};
/* Each slot starts with its ready word and what the call that published it was (the
 * view's slot_sig and the count), so that a peer running another call or another algorithm
 * for it is named at once rather than read as data. */
#define WT_SCHED_SLOT_HDR ((size_t)32)
/* Fields of a plan view's slot_sig (the collective is its low byte; the root 32 bits). */
#define WT_SCHED_SIG_ALGO_SHIFT 8
#define WT_SCHED_SIG_DTYPE_SHIFT 16
#define WT_SCHED_SIG_OP_SHIFT 24
#define WT_SCHED_SIG_ROOT_SHIFT 32
#define WT_SCHED_SLOT_SMALL_MIN ((size_t)1 << 20)

/* Read access for the executor, tools and tests. */
size_t wt_sched_plan_nsteps(const wt_sched_plan_t *p);
const wt_sched_step_t *wt_sched_plan_step(const wt_sched_plan_t *p, size_t i);
const uint32_t *wt_sched_plan_deps(const wt_sched_plan_t *p);
/* Successors of step i (valid after finalize). */
const uint32_t *wt_sched_plan_succ(const wt_sched_plan_t *p, size_t i, uint32_t *n);
size_t wt_sched_plan_scratch_bytes(const wt_sched_plan_t *p);
/* What the executor reads of a plan, as plain arrays (valid while the plan lives); NULL for a
 * plan that is not finalized without error. */
typedef struct {
	const wt_sched_step_t *steps;
	size_t nsteps;
	const uint32_t *succ_start; /* nsteps + 1 offsets into succ */
	const uint32_t *succ;
	const uint32_t *pending0; /* per step: its number of dependencies */
	const uint32_t *sources;  /* the steps without dependencies, in id order */
	size_t nsources;
	const wt_sched_args_t *args;
	size_t elem;		       /* the dtype's size */
	size_t send_bytes, recv_bytes; /* see wt_sched_plan_buf_bytes */
	size_t scratch;
	int uses_slots;
	int uses_peers; /* peer steps: the SLOT_PUT publishes our buffers */
	size_t slot_extent;
	/* No network steps, and every wait comes before any signal (SLOT_PUT / SLOT_DONE)
	 * that does not depend on it: running the steps in id order, each wait watched until
	 * met, never keeps a peer waiting on a signal that could have gone first. */
	int in_order;
	/* The ring (WT_SCHED_RING_*) a slot plan's call takes: TINY for calls of at least
	 * WT_SCHED_SLOT_TINY_RANKS ranks with count * dtype size * ranks <=
	 * WT_SCHED_SLOT_TINY_CAP, else SMALL up to WT_SCHED_SLOT_SMALL_CAP, else LARGE: the same
	 * answer everywhere, whatever algorithm each rank picked. */
	int slot_ring;
	/* What a slot plan's PUT publishes of its call: the collective in the low byte, then a
	 * hash of the algorithm's name, the dtype, the op and the root at the WT_SCHED_SIG_*
	 * shifts (with args.count beside it). */
	uint64_t slot_sig;
	/* Consecutive slot calls the plan takes (wt_sched_slot_part): 1 for most, more for a
	 * call that goes through the slots in pieces. */
	unsigned slot_parts;
	/* Unique among the plans finalized in this process (never 0): an execution block kept
	 * from the same plan's last run keeps what depends on the plan alone. */
	uint64_t serial;
} wt_sched_plan_view_t;
const wt_sched_plan_view_t *wt_sched_plan_view(const wt_sched_plan_t *p);
/* The executor keeps one finished execution's memory on its plan for the next execution
 * (a loop of equal calls allocates nothing): take returns it or NULL; put stores blk and
 * returns NULL, or returns blk (for the caller to free) when one is kept already. The plan
 * frees a kept block with free() when it goes. */
void *wt_sched_plan_spare_take(wt_sched_plan_t *p);
void *wt_sched_plan_spare_put(wt_sched_plan_t *p, void *blk);
/* Bytes the SEND / RECV buffers hold for these args (for range checks and tests). */
size_t wt_sched_plan_buf_bytes(const wt_sched_plan_t *p, wt_sched_buf_t buf);
const char *wt_sched_plan_algo(const wt_sched_plan_t *p);
void wt_sched_plan_set_algo(wt_sched_plan_t *p, const char *name);

void wt_sched_plan_ref(wt_sched_plan_t *p);
void wt_sched_plan_unref(wt_sched_plan_t *p);

/* Algorithms: one file each under algos/, listed in one table (algos/table.c). */
struct wt_sched_cost;
typedef weft_status_t (*wt_sched_algo_fn_t)(const wt_sched_args_t *args, wt_sched_plan_t *p);
typedef struct {
	const char *name;
	wt_sched_coll_t coll;
	wt_sched_algo_fn_t build;
	/* Default selection without a cost model: the message is in [min_bytes, max_bytes];
	 * min 1, max 0 marks one only the cost model or WEFT_ALGO picks. */
	size_t min_bytes, max_bytes;
	/* Estimated seconds under an alpha-beta-gamma model (NULL: not costed). */
	double (*cost)(const wt_sched_args_t *args, const struct wt_sched_cost *c);
} wt_sched_algo_t;

/* One link class in the alpha-beta-gamma model: seconds per message (alpha), per byte
 * moved (beta) and per byte reduced (gamma). Measured or configured by the API layer.
 * Shared slots move no message: a flag costs WT_SCHED_SLOT_ALPHA of the class's alpha (a
 * cache line, not a message), plus WT_SCHED_SLOT_ALPHA_PEER for every further peer. */
#define WT_SCHED_SLOT_ALPHA 0.1
#define WT_SCHED_SLOT_ALPHA_PEER 0.02
typedef struct wt_sched_cost {
	double alpha, beta, gamma;
	/* The share of gamma that a byte read out of a peer's slot costs (0 means 1). The API
	 * lowers it with more local ranks than cores (WT_API_OVERSUB_SLOT_READ): the slots of a
	 * call stay in the shared last-level cache and need no peer to be scheduled, while
	 * every message does (4 ranks on 2 cores, 256 KiB allreduce: 53-55 us through slots,
	 * 74-76 by rabenseifner; 8 ranks: 205-223 against 500-533). With a core per rank the
	 * message path keeps up (2 ranks, 256 KiB: 22-35 us through slots, 18 by the ring). */
	double slot_read;
	/* Receives of an exchange (we send to the peer we receive from) of this many bytes or
	 * more are one copy by get, made by the receiver alone, where the API sets it (more
	 * local ranks than cores, WT_API_OVERSUB_XCHG_GET_MIN; 0: no such rule). An alltoall's
	 * slots, two copies, give way to pairwise from blocks of that size. */
	size_t xchg_get_min;
} wt_sched_cost_t;

/* Choose the algorithm for args. spec is WEFT_ALGO: "" or NULL for automatic, "name" for
 * every collective that has an algorithm of that name, or "coll:name,coll:name" (e.g.
 * "allreduce:ring,allgather:bruck"). Without a forced choice the cheapest algorithm under
 * cost wins (the byte ranges when cost is NULL). A forced algorithm that cannot serve args
 * fails with WEFT_ERR_UNSUPPORTED and err says why; it never silently switches. */
weft_status_t wt_sched_algo_choose(const wt_sched_args_t *args, const char *spec,
				   const wt_sched_cost_t *cost, const wt_sched_algo_t **out,
				   char *err, size_t errlen);
/* Check a WEFT_ALGO spec: every collective and algorithm it names exists. */
weft_status_t wt_sched_algo_spec_check(const char *spec, char *err, size_t errlen);
/* Collective by name ("allreduce", "reduce_scatter", ...); -1 if unknown. */
int wt_sched_coll_from_name(const char *name);
/* Bytes buffer buf holds for args (see the table at wt_sched_coll_t); 0 for a buffer the
 * collective does not use on this rank. Callers check args first (no overflow). */
size_t wt_sched_args_buf_bytes(const wt_sched_args_t *args, wt_sched_buf_t buf);

const wt_sched_algo_t *wt_sched_algo_table(size_t *n);
/* forced: an algorithm name (from WEFT_ALGO, case-insensitive) or NULL (or "") for the
 * default choice. Returns NULL if forced names no algorithm for this collective.
 * Allreduce: "recursive_doubling" below 16 KiB, "ring" from there; both serve every rank count. */
const wt_sched_algo_t *wt_sched_algo_select(const wt_sched_args_t *args, const char *forced);
/* Build and finalize a plan with algo (or the default when NULL). */
weft_status_t wt_sched_plan_build(const wt_sched_args_t *args, const wt_sched_algo_t *algo,
				  wt_sched_plan_t **out, char *err, size_t errlen);

/* Plan cache keyed by (args, algorithm); holds at most cap plans (0: caches nothing),
 * least recently used evicted. Returned plans carry a reference the caller drops with
 * wt_sched_plan_unref. algo NULL keys on the default pick, so it shares entries with the
 * same algorithm forced. Gets are serialised by an internal mutex; the hit / miss
 * counters are read without it. Failed builds are counted as misses and not cached. */
typedef struct wt_sched_cache wt_sched_cache_t;
wt_sched_cache_t *wt_sched_cache_new(size_t cap);
weft_status_t wt_sched_cache_get(wt_sched_cache_t *c, const wt_sched_args_t *args,
				 const wt_sched_algo_t *algo, wt_sched_plan_t **out, char *err,
				 size_t errlen);
size_t wt_sched_cache_hits(const wt_sched_cache_t *c);
size_t wt_sched_cache_misses(const wt_sched_cache_t *c);
void wt_sched_cache_free(wt_sched_cache_t *c);

const char *wt_sched_coll_name(wt_sched_coll_t coll);

/* Additions (schedule owner): names for tools and messages, argument checking shared by
 * wt_sched_plan_build and callers that want to refuse bad args early, and a text dump. */
const char *wt_sched_step_type_name(wt_sched_step_type_t type);
const char *wt_sched_buf_name(wt_sched_buf_t buf);
/* WEFT_OK if args describe a collective a plan can be built for, else
 * WEFT_ERR_INVALID_ARG with the reason in err. */
weft_status_t wt_sched_args_check(const wt_sched_args_t *args, char *err, size_t errlen);
/* One line per step: "id: TYPE peer P msg M BUF[off+len] <- SRC[off] deps a,b". */
/* 1 if p was finalized without error (executable), else 0. */
int wt_sched_plan_ready(const wt_sched_plan_t *p);
void wt_sched_plan_dump(const wt_sched_plan_t *p, FILE *out);
/* Default pipeline segment when args->seg_bytes is 0. */
#define WT_SCHED_DEFAULT_SEG_BYTES ((size_t)256 * 1024)

#endif
