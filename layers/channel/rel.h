/* The channel's reliability protocol (layers/channel, private): a wrapper that turns an
 * unreliable link (no WT_LINK_CAP_RELIABLE: udp, dpdk, or any link under WEFT_FAULT) into
 * a reliable, ordered one with the same ops table. Per peer: a handshake carrying both
 * ends' epochs and a proof of the job token; 64-bit sequence numbers; a sliding send
 * window (AIMD, bounded by what the receiver advertises); cumulative + selective acks;
 * retransmission on an RTO measured from acks (SRTT/RTTVAR, exponential backoff up to a
 * maximum) and fast retransmit on gaps; CRC32C over header and payload; duplicates
 * suppressed. Wire format in rel_wire.h. */
#ifndef WT_CHAN_REL_H
#define WT_CHAN_REL_H

#include <stdint.h>
#include "drivers/link.h"
#include "lib/util/crypto.h"
#include "lib/util/status.h"

typedef struct {
	int rank;	   /* this process's world rank */
	int size;	   /* world size */
	wt_util_key_t key; /* job token key: the handshake proves it */
	uint32_t window;   /* most frames in flight per peer; 0 = default (WT_REL_DEFAULT_WINDOW) */
	double rto_init;   /* seconds; 0 = default */
	double rto_min;	   /* seconds; 0 = default */
	double rto_max;	   /* seconds; 0 = default */
	uint64_t isn;	   /* tests only: first sequence number of every peer; 0 = random */
} wt_rel_config_t;

#define WT_REL_DEFAULT_WINDOW 256

/* Defaults for the zero fields of wt_rel_config_t (rel.c says why): RTO initial 20 ms,
 * minimum 5 ms, maximum 1 s. */

/* Wrap inner. *out is a link whose ops are the reliability layer's: caps RELIABLE |
 * ORDERED plus inner's GET and HAS_FD; max_frame = inner's max_frame - WT_REL_HDR_LEN.
 * send() keeps a reference to the iov until the frame is acknowledged and returns
 * WEFT_INPROGRESS; SEND_DONE events follow in send order per peer. connect() connects
 * inner and starts the handshake; frames posted before it completes wait in the window.
 * A peer whose epoch changes (it restarted) is reported as a PEER_ERROR event with
 * WEFT_ERR_PEER_FAILED. Closing the wrapper does not close inner. */
/* More of the contract:
 * - send() returns WT_AGAIN when the peer's window is full (our limit, the congestion
 *   window, or what the receiver advertises); it never drops a frame it took.
 * - After a PEER_ERROR (restart, or one the inner link reported, or an inner send that
 *   failed), every frame still held for that peer comes back as a SEND_DONE whose status
 *   is that error, in send order, once the inner link no longer holds it; later sends to
 *   the peer return the error.
 * - FRAME events point into the inner link's buffer or the wrapper's reorder buffers;
 *   either stays valid until the next poll() on the wrapper.
 * - Timers (retransmission, tail loss probe, HELLO resend) run inside poll(); a caller
 *   that sleeps on fd() must sleep no longer than timer_ms(), and arm() returns 1 while
 *   an ack, a retransmission or an event is due.
 * - The owner polls only the wrapper, never inner directly, and closes inner right after
 *   the wrapper without polling it in between (inner may still hold the wrapper's
 *   buffers, which close() frees; no events are emitted for them). */
weft_status_t wt_rel_wrap(wt_link_t *inner, const wt_rel_config_t *cfg, wt_link_t **out);
/* 1 if link is a reliability wrapper. */
int wt_rel_is(wt_link_t *link);

#endif
