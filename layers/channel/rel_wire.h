/* Wire format of the channel's reliability protocol (layers/channel, private): one fixed
 * header in front of every frame on an unreliable link, little-endian, version byte first,
 * packet types from one X-macro list. The channel's own header travels inside the payload.
 *
 *  off len field        meaning
 *    0   1 version      WT_REL_WIRE_VERSION
 *    1   1 type         WT_REL_PKT_TYPES
 *    2   2 flags        WT_REL_FL_* (only those valid for the type)
 *    4   4 hdr_crc      CRC32C of these 72 bytes with this field zero
 *    8   4 payload_crc  CRC32C of the payload (0 when empty)
 *   12   4 len          payload bytes after the header
 *   16   4 src          sender's world rank
 *   20   4 dst          receiver's world rank
 *   24   8 src_epoch    sender's epoch (never 0)
 *   32   8 dst_epoch    receiver's epoch as the sender knows it (0 while unknown)
 *   40   8 seq          DATA: sequence number; HELLO: the sender's ISN; ACK: 0
 *   48   8 ack          next sequence number expected from the receiver (cumulative)
 *   56   8 sack         bit i: frame ack + 1 + i is held out of order
 *   64   4 window       frames the sender can still take beyond ack
 *   68   4 reserved     zero
 * HELLO carries a WT_REL_PROOF_LEN-byte token proof as payload; ACK carries none. */
#ifndef WT_CHAN_REL_WIRE_H
#define WT_CHAN_REL_WIRE_H

#include <stddef.h>
#include <stdint.h>

#define WT_REL_WIRE_VERSION 1
#define WT_REL_HDR_LEN 72
#define WT_REL_PROOF_LEN 32 /* HMAC-SHA256 */

/* name, value, printable name */
#define WT_REL_PKT_TYPES(X)                                                                        \
	X(HELLO, 1, "hello")                                                                       \
	X(DATA, 2, "data")                                                                         \
	X(ACK, 3, "ack")

enum wt_rel_pkt_type {
#define WT_REL_X_ENUM(n, v, s) WT_REL_PKT_##n = v,
	WT_REL_PKT_TYPES(WT_REL_X_ENUM)
#undef WT_REL_X_ENUM
	    WT_REL_PKT_MAX_
};

/* HELLO: the sender does not yet know that the receiver knows its epoch; answer. */
#define WT_REL_FL_WANT_REPLY 0x1u
/* DATA: payload_crc is 0 and not checked: the sender's link verifies frames end to end
 * (WT_LINK_CAP_INTEGRITY), so a second pass over every byte buys nothing. */
#define WT_REL_FL_NO_PCRC 0x2u

typedef struct {
	uint8_t version;
	uint8_t type;
	uint16_t flags;
	uint32_t hdr_crc;
	uint32_t payload_crc;
	uint32_t len;
	uint32_t src, dst;
	uint64_t src_epoch, dst_epoch;
	uint64_t seq, ack, sack;
	uint32_t window;
} wt_rel_hdr_t;

const char *wt_rel_pkt_name(unsigned type);

/* Writes h into out and fills in the header CRC (h->hdr_crc is ignored; h->payload_crc
 * must already be the payload's CRC32C). */
void wt_rel_hdr_encode(const wt_rel_hdr_t *h, uint8_t out[WT_REL_HDR_LEN]);

/* Decodes frame (len bytes: header then payload) into *h and checks everything that
 * needs no connection state: length, version, type, flags, reserved bits, both CRCs,
 * the length field against len, the payload length the type demands and a nonzero
 * source epoch. Returns NULL when the frame is well-formed, else why it is not (*h is
 * then unspecified). Safe on any bytes. */
const char *wt_rel_hdr_decode(const void *frame, size_t len, wt_rel_hdr_t *h);

#endif
