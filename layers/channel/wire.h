/* The channel's wire format (layers/channel, private): one fixed header in front of every
 * frame, little-endian, with a version byte and a type from one X-macro list. */
#ifndef WT_CHAN_WIRE_H
#define WT_CHAN_WIRE_H

#include <endian.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "lib/util/bytes.h"

#define WT_CHAN_WIRE_VERSION 1
#define WT_CHAN_HDR_LEN 48
/* Rendezvous DATA payloads are multiples of this, so every fragment boundary falls on an
 * element boundary for every dtype. */
#define WT_CHAN_FRAG_ALIGN 64

/* name, value, what "id" names at the receiver of the frame, whether a payload follows */
#define WT_CHAN_FRAME_TYPES(X)                                                                     \
	X(EAGER, 1, "eager")                                                                       \
	X(RTS, 2, "rts")                                                                           \
	X(CTS, 3, "cts")                                                                           \
	X(DATA, 4, "data")                                                                         \
	X(FIN, 5, "fin")                                                                           \
	X(ABORT, 6, "abort")                                                                       \
	X(HEARTBEAT, 7, "heartbeat")

enum wt_chan_frame_type {
#define WT_CHAN_X_ENUM(n, v, s) WT_CHAN_FR_##n = v,
	WT_CHAN_FRAME_TYPES(WT_CHAN_X_ENUM)
#undef WT_CHAN_X_ENUM
	    WT_CHAN_FR_MAX_
};

/* RTS flags */
#define WT_CHAN_RTS_HAS_ADDR 0x1u /* b holds the sender's buffer address for a GET */
/* FIN flags: how the receiver finished with the message */
#define WT_CHAN_FIN_OK 0     /* received (GET done) */
#define WT_CHAN_FIN_REJECT 1 /* receive too small / wrong size for reduce; a = posted len */
#define WT_CHAN_FIN_CANCEL 2 /* the receive was cancelled before any data moved */
#define WT_CHAN_FIN_GETERR 3 /* the one-sided read failed part-way */
#define WT_CHAN_FIN_MAX_ WT_CHAN_FIN_GETERR

/* Field use by type ("id" always names a slot at the frame's receiver):
 *   EAGER  tag, a = payload length                        payload = message
 *   RTS    tag, id = sender's send slot, a = total length, b = address (HAS_ADDR)
 *   CTS    id = send slot, id2 = receiver's recv slot
 *   DATA   id = recv slot, a = offset                     payload = fragment
 *   FIN    id = send slot, flags = FIN_*, a = posted length on REJECT
 *   ABORT  id = recv slot (the sender cancelled a message it had started)
 *   HEARTBEAT  every field zero; "still alive" when nothing else was sent for a while */
typedef struct {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint32_t reserved;
	uint64_t tag;
	uint64_t id;
	uint64_t id2;
	uint64_t a;
	uint64_t b;
} wt_chan_hdr_t;

static inline const char *wt_chan_frame_name(unsigned type)
{
	switch (type) {
#define WT_CHAN_X_NAME(n, v, s)                                                                    \
	case v:                                                                                    \
		return s;
		WT_CHAN_FRAME_TYPES(WT_CHAN_X_NAME)
#undef WT_CHAN_X_NAME
	default:
		return "unknown";
	}
}

static inline void wt_chan_hdr_encode(const wt_chan_hdr_t *h, uint8_t out[WT_CHAN_HDR_LEN])
{
	out[0] = h->version;
	out[1] = h->type;
	wt_util_put_le16(out + 2, h->flags);
	memset(out + 4, 0, 4);
	wt_util_put_le64(out + 8, h->tag);
	wt_util_put_le64(out + 16, h->id);
	wt_util_put_le64(out + 24, h->id2);
	wt_util_put_le64(out + 32, h->a);
	wt_util_put_le64(out + 40, h->b);
}

/* Decodes and checks what can be checked without channel state. Returns NULL when the
 * header is well-formed, else why it is not. */
const char *wt_chan_hdr_decode(const void *frame, size_t len, wt_chan_hdr_t *h);

#endif
