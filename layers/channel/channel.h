/* Reliable, ordered, tagged messages per peer over any link (layers/channel).
 * Eager copy for small messages; rendezvous (RTS, then CMA get where the link can,
 * else CTS + data frames) for large; receive-with-reduce on arrival. Matching is by
 * (peer, tag) in posting order; a message from one peer with one tag is matched by
 * the oldest posted receive for that peer and tag. Single-threaded: the owner
 * serialises every call. Callbacks run only inside wt_chan_progress.
 * Where the link offers shared slot areas (WT_LINK_CAP_SLOTS: shm), the channel also hands
 * them out and waits on words in them, so that the layers above can exchange small data
 * through shared memory with the same completion, failure and sleeping rules as
 * messages. */
#ifndef WT_CHAN_H
#define WT_CHAN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>
#include "lib/util/status.h"
#include "drivers/link.h"

typedef struct wt_chan wt_chan_t;
typedef struct wt_chan_op wt_chan_op_t;

/* st is WEFT_OK or an error; bytes is how many bytes were received (recv) or sent;
 * msg names what failed (peer, sizes) when st is an error, else NULL. */
typedef void (*wt_chan_done_fn_t)(void *arg, weft_status_t st, size_t bytes, const char *msg);

/* How arriving bytes land in dst: combined (enabled) or overwriting it, the latter with
 * streaming stores when the receiver will not read them again soon (stream). */
typedef struct {
	int enabled; /* 0: plain receive (overwrite dst) */
	int stream;  /* plain receive: store around the caches (wt_util_copy_stream) */
	/* Combining: dst = left op incoming (left holds the receive's length and does not
	 * overlap dst), instead of dst = dst op incoming; NULL for the latter. */
	const void *left;
	weft_dtype_t dtype; /* dst = dst op incoming, element-wise */
	weft_op_t op;	    /* never WEFT_AVG (reduce with SUM, divide after) */
} wt_chan_reduce_t;

typedef struct {
	size_t eager_limit; /* messages up to this many bytes go eagerly (0 = default) */
	int rank;	    /* this process's world rank */
	int size;	    /* world size */
	/* Seconds without hearing from a connected peer before it is declared failed; the
	 * channel sends heartbeats to every routed peer often enough. 0 = never. */
	double peer_timeout;
} wt_chan_config_t;

/* Told once per peer, inside wt_chan_progress, when the peer is declared failed (a link
 * error, heartbeat silence, or wt_chan_fail_peer), after its pending ops were failed. */
typedef void (*wt_chan_peer_fail_fn_t)(void *arg, int peer, weft_status_t st, const char *why);
void wt_chan_set_peer_fail_cb(wt_chan_t *ch, wt_chan_peer_fail_fn_t fn, void *arg);
/* With WEFT_RNDV_GET=auto, plain receives (no reduction, not stored around the caches) of
 * at least bytes read the sender's buffer by get where the link can; 0 (the default):
 * automatic rendezvous always streams. Call before traffic starts. */
void wt_chan_set_get_min(wt_chan_t *ch, size_t bytes);
/* With WEFT_RNDV_GET=auto, plain receives of at least bytes from a peer we are sending a
 * rendezvous message to (an exchange) read by get where the link can while the placement
 * says the host's cores are far apart (lib/util/place.h); 0 (the default): never for that
 * reason. Call before traffic starts. */
void wt_chan_set_far_get_min(wt_chan_t *ch, size_t bytes);
/* With WEFT_RNDV_GET=auto or fixed, plain receives of at least bytes from a peer we are
 * sending a rendezvous message to (an exchange) read by get where the link can, wherever
 * the cores are; 0 (the default): never for that reason. Returns the size in force: 0 where
 * WEFT_RNDV_GET=0 forbids gets, bytes otherwise. Call before traffic starts. */
size_t wt_chan_set_xchg_get_min(wt_chan_t *ch, size_t bytes);
/* Where the channel learns the placement: 1 far, 0 near, -1 unknown (NULL, the default:
 * wt_util_place_far_now). For tests. */
void wt_chan_set_far_fn(wt_chan_t *ch, int (*far)(void));
/* Heartbeat frames sent and received so far (tests and diagnostics). */
void wt_chan_heartbeat_counts(const wt_chan_t *ch, uint64_t *sent, uint64_t *received);

weft_status_t wt_chan_create(const wt_chan_config_t *cfg, wt_chan_t **ch);
/* Route traffic for peer over link (the caller keeps the link open until the channel
 * is destroyed). A link may serve many peers. The link must be RELIABLE and ORDERED:
 * wrap an unreliable one (udp, dpdk, anything under WEFT_FAULT) with wt_rel_wrap
 * (rel.h) first. */
weft_status_t wt_chan_set_link(wt_chan_t *ch, int peer, wt_link_t *link);

/* Post a send of the concatenation of iov to peer. The buffers must stay valid until
 * done_cb runs. *op (if op != NULL) is a handle for wt_chan_cancel.
 * An eager send completes WEFT_OK once the link took it. A rendezvous send completes when
 * the receiver has the data, or with WEFT_ERR_MISMATCH (the receive was too small) or
 * WEFT_ERR_ABORTED (the matched receive was cancelled) so the sender never hangs. */
weft_status_t wt_chan_post_send(wt_chan_t *ch, int peer, uint64_t tag, const struct iovec *iov,
				int iovcnt, wt_chan_done_fn_t done_cb, void *arg,
				wt_chan_op_t **op);
/* The same, and the bytes sent also land in copy_to (total bytes, not overlapping the
 * sources): each piece is copied right after the link took it, while it is still in cache,
 * so a caller that needs the data both sent and kept reads it once instead of twice. The
 * copy is complete when done_cb runs with WEFT_OK; after an error it may be partial.
 * copy_flags: WT_CHAN_COPY_STREAM stores around the caches (lib/util/copy.h). */
#define WT_CHAN_COPY_STREAM 1u
weft_status_t wt_chan_post_send_copy(wt_chan_t *ch, int peer, uint64_t tag, const struct iovec *iov,
				     int iovcnt, void *copy_to, unsigned copy_flags,
				     wt_chan_done_fn_t done_cb, void *arg, wt_chan_op_t **op);
/* Post a receive of at most len bytes into dst. A message longer than len fails the
 * receive with WEFT_ERR_MISMATCH naming both sizes. With reduce->enabled, the message
 * must be exactly len bytes and is combined into dst. */
weft_status_t wt_chan_post_recv(wt_chan_t *ch, int peer, uint64_t tag, void *dst, size_t len,
				const wt_chan_reduce_t *reduce, wt_chan_done_fn_t done_cb,
				void *arg, wt_chan_op_t **op);
/* Shared slot areas (links with WT_LINK_CAP_SLOTS; one such link per channel, the first
 * routed). The area of world rank `rank` as mapped here: ours (rank == our rank) writable,
 * a peer's read only; *bytes gets its length, equal for every rank. NULL when the channel
 * has no such link or rank is not reached over it (another host, not connected). */
void *wt_chan_slot_area(wt_chan_t *ch, int rank, size_t *bytes);
/* After storing (release order) into our own area something the listed peers (world ranks)
 * may wait for: wake those that sleep on the channel's fds. */
void wt_chan_slot_wake(wt_chan_t *ch, const int *peers, int npeers);
/* 1 if one of the listed peers (world ranks) may share the CPU the calling thread runs on
 * now: it last ran there, as its link tells (shm), or its link cannot tell (every other
 * link, a peer not connected); 0 if each runs on another CPU. Publishes our CPU to the
 * peers that ask. Ourselves and ranks out of range are skipped. */
int wt_chan_cpu_shared(wt_chan_t *ch, const int *peers, int npeers);
/* Peer memory over the slot link (ranks whose slot areas we read): the buffer desc
 * describes in peer as mapped here, or NULL (not weft_mem memory, or no such link);
 * and a synchronous copy between local and the peer's described buffer at off (write:
 * local -> peer), by cross-memory attach. UNSUPPORTED when the peer is not on that link. */
void *wt_chan_peer_map(wt_chan_t *ch, int peer, const wt_util_umem_desc_t *desc);
weft_status_t wt_chan_peer_copy(wt_chan_t *ch, int peer, void *local,
				const wt_util_umem_desc_t *desc, size_t off, size_t len, int write);
/* Post a wait for peer's word (in its slot area, or anywhere that peer's progress changes)
 * to reach value: done_cb runs inside wt_chan_progress with WEFT_OK once
 * *word >= value (read with acquire order), or with the peer's error when it is declared
 * failed, like a receive from it. peer may be our own rank, for a word our own progress
 * changes (it then never fails). Cancel with wt_chan_cancel. A channel whose caller
 * sleeps on wt_chan_fds checks the posted waits in wt_chan_arm, after the links armed. */
weft_status_t wt_chan_post_wait(wt_chan_t *ch, int peer, const _Atomic uint64_t *word,
				uint64_t value, wt_chan_done_fn_t done_cb, void *arg,
				wt_chan_op_t **op);
/* Withdraw an op whose callback has not run yet: no callback will run for it and the
 * channel will not touch its buffers again. */
void wt_chan_cancel(wt_chan_t *ch, wt_chan_op_t *op);

/* Drive every link once; run callbacks. Returns the number of events handled. */
int wt_chan_progress(wt_chan_t *ch);
/* The pollable fds of the links (at most max); returns how many. */
int wt_chan_fds(wt_chan_t *ch, int *fds, int max);
/* Before sleeping on the fds: 1 if work is pending (do not sleep), else 0. */
int wt_chan_arm(wt_chan_t *ch);
void wt_chan_disarm(wt_chan_t *ch);
/* Milliseconds until wt_chan_progress must run again for the links' timers
 * (retransmissions, delayed frames): 0 if due, -1 if none. A caller about to sleep on the
 * fds sleeps no longer. */
int wt_chan_timer_ms(wt_chan_t *ch);
/* Counters of the traffic with peer through its link stack (see wt_link_stats_t); *name
 * (if not NULL) gets the link's name and *reliable whether the reliability protocol runs
 * on it. WEFT_ERR_INVALID_ARG for a peer without a link (ourselves, or not routed). */
weft_status_t wt_chan_link_stats(wt_chan_t *ch, int peer, wt_link_stats_t *st, const char **name,
				 int *reliable);
/* Declare peer failed: every pending and future op with it fails with st. */
void wt_chan_fail_peer(wt_chan_t *ch, int peer, weft_status_t st, const char *why);
/* Number of ops not yet completed (for leak checks in tests). */
size_t wt_chan_outstanding(const wt_chan_t *ch);
/* Whether frames wait in a peer's queue for its link (held eager sends among them, whose
 * ops have completed): progress must go on for them to leave. */
int wt_chan_backlog(const wt_chan_t *ch);
void wt_chan_destroy(wt_chan_t *ch);

#endif
