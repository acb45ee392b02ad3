/* Decoding and first-level validation of channel frame headers (layers/channel). Kept
 * apart from channel.c so a fuzz target can drive it alone. */
#include "layers/channel/wire.h"

const char *wt_chan_hdr_decode(const void *frame, size_t len, wt_chan_hdr_t *h)
{
	const uint8_t *p = frame;
	uint32_t rsv;

	if (frame == NULL || len < WT_CHAN_HDR_LEN)
		return "frame shorter than the header";
	h->version = p[0];
	h->type = p[1];
	h->flags = wt_util_get_le16(p + 2);
	memcpy(&rsv, p + 4, 4);
	h->reserved = rsv;
	h->tag = wt_util_get_le64(p + 8);
	h->id = wt_util_get_le64(p + 16);
	h->id2 = wt_util_get_le64(p + 24);
	h->a = wt_util_get_le64(p + 32);
	h->b = wt_util_get_le64(p + 40);
	if (h->version != WT_CHAN_WIRE_VERSION)
		return "unknown protocol version";
	if (h->reserved != 0)
		return "reserved header bits set";
	if (h->type == 0 || h->type >= WT_CHAN_FR_MAX_)
		return "unknown frame type";

	size_t plen = len - WT_CHAN_HDR_LEN;

	switch (h->type) {
	case WT_CHAN_FR_EAGER:
		if (h->flags != 0)
			return "eager frame with flags";
		if (h->a != plen)
			return "eager length does not match the frame";
		return NULL;
	case WT_CHAN_FR_RTS:
		if ((h->flags & ~WT_CHAN_RTS_HAS_ADDR) != 0)
			return "rts with unknown flags";
		if (plen != 0)
			return "rts with a payload";
		if (h->a == 0)
			return "rts for an empty message";
		return NULL;
	case WT_CHAN_FR_DATA:
		if (h->flags != 0)
			return "data frame with flags";
		if (plen == 0)
			return "empty data frame";
		return NULL;
	case WT_CHAN_FR_FIN:
		if (h->flags > WT_CHAN_FIN_MAX_)
			return "fin with unknown flags";
		break;
	case WT_CHAN_FR_HEARTBEAT:
		if (h->flags != 0 || h->tag != 0 || h->id != 0 || h->id2 != 0 || h->a != 0 ||
		    h->b != 0)
			return "heartbeat with fields set";
		break;
	default:
		if (h->flags != 0)
			return "control frame with flags";
		break;
	}
	if (plen != 0)
		return "control frame with a payload";
	return NULL;
}
