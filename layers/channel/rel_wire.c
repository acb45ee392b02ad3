/* Encoding and stateless checks of the reliability header (layers/channel). */
#include <string.h>
#include "lib/util/crc32c.h"
#include "layers/channel/rel_wire.h"
#include "layers/channel/wire.h"

const char *wt_rel_pkt_name(unsigned type)
{
	switch (type) {
#define WT_REL_X_NAME(n, v, s)                                                                     \
	case v:                                                                                    \
		return s;
		WT_REL_PKT_TYPES(WT_REL_X_NAME)
#undef WT_REL_X_NAME
	default:
		return "unknown";
	}
}

void wt_rel_hdr_encode(const wt_rel_hdr_t *h, uint8_t out[WT_REL_HDR_LEN])
{
	out[0] = h->version;
	out[1] = h->type;
	wt_util_put_le16(out + 2, h->flags);
	wt_util_put_le32(out + 4, 0);
	wt_util_put_le32(out + 8, h->payload_crc);
	wt_util_put_le32(out + 12, h->len);
	wt_util_put_le32(out + 16, h->src);
	wt_util_put_le32(out + 20, h->dst);
	wt_util_put_le64(out + 24, h->src_epoch);
	wt_util_put_le64(out + 32, h->dst_epoch);
	wt_util_put_le64(out + 40, h->seq);
	wt_util_put_le64(out + 48, h->ack);
	wt_util_put_le64(out + 56, h->sack);
	wt_util_put_le32(out + 64, h->window);
	wt_util_put_le32(out + 68, 0);
	wt_util_put_le32(out + 4, wt_util_crc32c(0, out, WT_REL_HDR_LEN));
}

static uint32_t hdr_crc(const uint8_t *p)
{
	static const uint8_t zero[4];
	uint32_t c = wt_util_crc32c(0, p, 4);

	c = wt_util_crc32c(c, zero, 4);
	return wt_util_crc32c(c, p + 8, WT_REL_HDR_LEN - 8);
}

static const char *check_type(const wt_rel_hdr_t *h)
{
	switch (h->type) {
	case WT_REL_PKT_HELLO:
		if (h->flags & ~WT_REL_FL_WANT_REPLY)
			return "unknown flags on a hello";
		if (h->len != WT_REL_PROOF_LEN)
			return "hello without a token proof of the right length";
		return NULL;
	case WT_REL_PKT_DATA:
		return h->flags & ~WT_REL_FL_NO_PCRC ? "unknown flags on a data frame" : NULL;
	case WT_REL_PKT_ACK:
		if (h->flags)
			return "unknown flags on an ack";
		return h->len ? "ack with a payload" : NULL;
	default:
		return "unknown packet type";
	}
}

const char *wt_rel_hdr_decode(const void *frame, size_t len, wt_rel_hdr_t *h)
{
	const uint8_t *p = frame;

	if (p == NULL || h == NULL)
		return "no frame";
	if (len < WT_REL_HDR_LEN)
		return "frame shorter than the reliability header";
	if (p[0] != WT_REL_WIRE_VERSION)
		return "unknown reliability protocol version";
	h->version = p[0];
	h->type = p[1];
	h->flags = wt_util_get_le16(p + 2);
	h->hdr_crc = wt_util_get_le32(p + 4);
	h->payload_crc = wt_util_get_le32(p + 8);
	h->len = wt_util_get_le32(p + 12);
	h->src = wt_util_get_le32(p + 16);
	h->dst = wt_util_get_le32(p + 20);
	h->src_epoch = wt_util_get_le64(p + 24);
	h->dst_epoch = wt_util_get_le64(p + 32);
	h->seq = wt_util_get_le64(p + 40);
	h->ack = wt_util_get_le64(p + 48);
	h->sack = wt_util_get_le64(p + 56);
	h->window = wt_util_get_le32(p + 64);
	if (hdr_crc(p) != h->hdr_crc)
		return "header CRC mismatch";
	if (wt_util_get_le32(p + 68) != 0)
		return "reserved header bits set";
	if ((uint64_t)h->len != (uint64_t)(len - WT_REL_HDR_LEN))
		return "length field does not match the frame";
	const char *why = check_type(h);

	if (why != NULL)
		return why;
	if (h->src_epoch == 0)
		return "zero source epoch";
	if (h->flags & WT_REL_FL_NO_PCRC)
		return h->payload_crc ? "payload CRC set on a frame that leaves it out" : NULL;
	if (wt_util_crc32c(0, p + WT_REL_HDR_LEN, h->len) != h->payload_crc)
		return "payload CRC mismatch";
	return NULL;
}
