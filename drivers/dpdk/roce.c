/* RoCEv2 framing for the dpdk driver (drivers/): builds and checks Ethernet / IPv4 / UDP
 * 4791 / BTH [/ RETH | AETH] / payload / pad / ICRC frames. No DPDK here. */
#include <stdio.h>
#include <string.h>
#include "drivers/dpdk/roce.h"
#include "lib/util/bytes.h"
#include "lib/util/crc32.h"
#include "lib/util/log.h"

#define ETHERTYPE_IPV4 0x0800
#define IP_PROTO_UDP 17
#define IP_FLAG_RESERVED 0x8000
#define IP_FLAG_DF 0x4000
#define IP_FLAG_MF 0x2000
#define IP_FRAG_OFFSET 0x1fff
#define ROCE_TTL_DEFAULT 64
#define ROCE_PKEY_DEFAULT 0xffff
#define ROCE_PKEY_NUMBER 0x7fff /* a P_Key whose 15-bit number is 0 is invalid */
#define ROCE_24BIT 0xffffffu
/* AETH syndrome: bit 7 reserved, bits 6..5 the type (00 ACK, 01 RNR NAK, 10 reserved,
 * 11 NAK), bits 4..0 credits or timer or NAK code. */
#define AETH_RESERVED_BIT 0x80
#define AETH_TYPE_MASK 0x60
#define AETH_TYPE_RESERVED 0x40

/* Offsets from the start of the frame. */
#define OFF_IP WT_ROCE_ETH_LEN
#define OFF_UDP (OFF_IP + WT_ROCE_IP_LEN)
#define OFF_BTH (OFF_UDP + WT_ROCE_UDP_LEN)
#define OFF_EXT (OFF_BTH + WT_ROCE_BTH_LEN)
#define BASE_HDR_LEN OFF_EXT /* 54 */

/* The ICRC covers 8 bytes of 0xff standing in for the LRH, then the IP, UDP and BTH
 * headers with their variant fields (IP TOS, TTL and checksum, UDP checksum, the BTH
 * FECN/BECN/reserved byte) replaced by 0xff bytes, then everything after the BTH up to
 * the ICRC itself. */
#define LRH_STANDIN 8
#define ICRC_MASKED_LEN (LRH_STANDIN + WT_ROCE_IP_LEN + WT_ROCE_UDP_LEN + WT_ROCE_BTH_LEN)

/* The largest payload: IPv4's total length is 16 bits. */
#define ROCE_MAX_PAYLOAD                                                                           \
	(0xffffu - WT_ROCE_IP_LEN - WT_ROCE_UDP_LEN - WT_ROCE_BTH_LEN - WT_ROCE_RETH_LEN - 3u -    \
	 WT_ROCE_ICRC_LEN)

static size_t ext_len(uint8_t opcode)
{
	switch (opcode) {
	case WT_ROCE_OP_SEND_ONLY:
	case WT_ROCE_OP_WRITE_MIDDLE:
	case WT_ROCE_OP_WRITE_LAST:
		return 0;
	case WT_ROCE_OP_WRITE_FIRST:
	case WT_ROCE_OP_WRITE_ONLY:
		return WT_ROCE_RETH_LEN;
	case WT_ROCE_OP_ACKNOWLEDGE:
		return WT_ROCE_AETH_LEN;
	default:
		return SIZE_MAX;
	}
}

size_t wt_roce_hdr_len(uint8_t opcode)
{
	size_t ext = ext_len(opcode);

	return ext == SIZE_MAX ? 0 : BASE_HDR_LEN + ext;
}

static size_t pad_len(size_t paylen)
{
	return (4 - (paylen & 3)) & 3;
}

static int syndrome_ok(uint8_t s)
{
	return (s & AETH_RESERVED_BIT) == 0 && (s & AETH_TYPE_MASK) != AETH_TYPE_RESERVED;
}

/* One's-complement sum of the IPv4 header, folded: 0xffff over a header whose checksum
 * field is right (or 0 when the field is left 0 while computing it). */
static uint16_t ip_sum(const uint8_t *ip)
{
	uint32_t sum = 0;

	for (int i = 0; i < WT_ROCE_IP_LEN; i += 2)
		sum += wt_util_get_be16(ip + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* ICRC over the masked IP/UDP/BTH of the frame at pkt, then the hdr_rest bytes of
 * extended header that follow the BTH; continues over payload and pad from there. */
static uint32_t icrc_headers(const uint8_t *pkt, size_t hdr_rest)
{
	uint8_t m[ICRC_MASKED_LEN];
	uint8_t *ip = m + LRH_STANDIN, *udp = ip + WT_ROCE_IP_LEN, *bth = udp + WT_ROCE_UDP_LEN;

	memset(m, 0xff, LRH_STANDIN);
	memcpy(ip, pkt + OFF_IP, WT_ROCE_IP_LEN + WT_ROCE_UDP_LEN + WT_ROCE_BTH_LEN);
	ip[1] = 0xff;		  /* TOS: DSCP and ECN */
	ip[8] = 0xff;		  /* TTL */
	memset(ip + 10, 0xff, 2); /* header checksum */
	memset(udp + 6, 0xff, 2); /* UDP checksum */
	bth[4] = 0xff;		  /* FECN, BECN, reserved */
	uint32_t crc = wt_util_crc32(0, m, sizeof(m));

	return wt_util_crc32(crc, pkt + OFF_EXT, hdr_rest);
}

static const char *op_name(uint8_t opcode)
{
	switch (opcode) {
	case WT_ROCE_OP_SEND_ONLY:
		return "SEND_ONLY";
	case WT_ROCE_OP_WRITE_FIRST:
		return "RDMA_WRITE_FIRST";
	case WT_ROCE_OP_WRITE_MIDDLE:
		return "RDMA_WRITE_MIDDLE";
	case WT_ROCE_OP_WRITE_LAST:
		return "RDMA_WRITE_LAST";
	case WT_ROCE_OP_WRITE_ONLY:
		return "RDMA_WRITE_ONLY";
	case WT_ROCE_OP_ACKNOWLEDGE:
		return "ACKNOWLEDGE";
	default:
		return "unknown";
	}
}

size_t wt_roce_build(const wt_roce_hdr_t *h, size_t paylen, uint8_t *buf, uint32_t *icrc)
{
	if (h == NULL || buf == NULL) {
		WT_ERROR("roce build: NULL %s", h == NULL ? "header" : "buffer");
		return 0;
	}
	size_t ext = ext_len(h->opcode);

	if (ext == SIZE_MAX) {
		WT_ERROR("roce build: opcode 0x%02x is not one weft sends", h->opcode);
		return 0;
	}
	if (paylen > ROCE_MAX_PAYLOAD || (h->opcode == WT_ROCE_OP_ACKNOWLEDGE && paylen != 0)) {
		WT_ERROR("roce build: %s cannot carry %zu payload bytes", op_name(h->opcode),
			 paylen);
		return 0;
	}
	if (h->dst_qp > ROCE_24BIT || h->psn > ROCE_24BIT || h->msn > ROCE_24BIT) {
		WT_ERROR("roce build: QP 0x%x, PSN 0x%x or MSN 0x%x exceeds 24 bits", h->dst_qp,
			 h->psn, h->msn);
		return 0;
	}
	if (h->pkey != 0 && (h->pkey & ROCE_PKEY_NUMBER) == 0) {
		WT_ERROR("roce build: P_Key 0x%04x is invalid", h->pkey);
		return 0;
	}
	if (h->opcode == WT_ROCE_OP_ACKNOWLEDGE && !syndrome_ok(h->syndrome)) {
		WT_ERROR("roce build: AETH syndrome 0x%02x is reserved", h->syndrome);
		return 0;
	}
	size_t pad = pad_len(paylen);
	size_t bth_on = WT_ROCE_BTH_LEN + ext + paylen + pad + WT_ROCE_ICRC_LEN;
	uint8_t *ip = buf + OFF_IP, *udp = buf + OFF_UDP, *bth = buf + OFF_BTH;

	memcpy(buf, h->dst_mac, 6);
	memcpy(buf + 6, h->src_mac, 6);
	wt_util_put_be16(buf + 12, ETHERTYPE_IPV4);

	ip[0] = 0x45; /* version 4, 5 words */
	ip[1] = 0;    /* DSCP 0, not ECN-capable */
	wt_util_put_be16(ip + 2, (uint16_t)(WT_ROCE_IP_LEN + WT_ROCE_UDP_LEN + bth_on));
	wt_util_put_be16(ip + 4, (uint16_t)h->ip_id);
	wt_util_put_be16(ip + 6, IP_FLAG_DF);
	ip[8] = h->ttl ? h->ttl : ROCE_TTL_DEFAULT;
	ip[9] = IP_PROTO_UDP;
	wt_util_put_be16(ip + 10, 0);
	wt_util_put_be32(ip + 12, h->src_ip);
	wt_util_put_be32(ip + 16, h->dst_ip);
	wt_util_put_be16(ip + 10, (uint16_t)~ip_sum(ip));

	wt_util_put_be16(udp, h->src_port);
	wt_util_put_be16(udp + 2, WT_ROCE_UDP_PORT);
	wt_util_put_be16(udp + 4, (uint16_t)(WT_ROCE_UDP_LEN + bth_on));
	wt_util_put_be16(udp + 6, 0); /* no checksum: the ICRC covers the datagram */

	bth[0] = h->opcode;
	bth[1] = (uint8_t)(pad << 4); /* SE 0, MigReq 0, PadCnt, TVer 0 */
	wt_util_put_be16(bth + 2, h->pkey ? h->pkey : ROCE_PKEY_DEFAULT);
	wt_util_put_be32(bth + 4, h->dst_qp); /* FECN, BECN, reserved: 0 */
	wt_util_put_be32(bth + 8, h->psn | (h->ack_req ? 1u << 31 : 0));

	uint8_t *x = buf + OFF_EXT;

	if (ext == WT_ROCE_RETH_LEN) {
		wt_util_put_be64(x, h->va);
		wt_util_put_be32(x + 8, h->rkey);
		wt_util_put_be32(x + 12, h->dma_len);
	} else if (ext == WT_ROCE_AETH_LEN) {
		wt_util_put_be32(x, ((uint32_t)h->syndrome << 24) | h->msn);
	}
	if (icrc != NULL)
		*icrc = icrc_headers(buf, ext);
	return BASE_HDR_LEN + ext;
}

uint32_t wt_roce_icrc_update(uint32_t icrc, const void *data, size_t len)
{
	return wt_util_crc32(icrc, data, len);
}

size_t wt_roce_trailer(uint32_t icrc, size_t paylen, uint8_t *out)
{
	static const uint8_t zero[3];
	size_t pad = pad_len(paylen);

	memset(out, 0, pad);
	icrc = wt_util_crc32(icrc, zero, pad);
	/* Least significant byte first, like the Ethernet FCS: what Linux rxe and RoCE NICs
	 * put on the wire. */
	wt_util_put_le32(out + pad, icrc);
	return pad + WT_ROCE_ICRC_LEN;
}

static void ip_str(uint32_t a, char *s, size_t n)
{
	snprintf(s, n, "%u.%u.%u.%u", a >> 24, (a >> 16) & 0xff, (a >> 8) & 0xff, a & 0xff);
}

/* Rejects a RoCEv2 frame from src: logged at debug level, since a busy port may see many
 * and the caller counts them. */
static weft_status_t bad(const uint8_t *p, const char *what)
{
	char src[16];

	ip_str(wt_util_get_be32(p + OFF_IP + 12), src, sizeof(src));
	WT_DEBUG("roce parse: frame from %s rejected: %s", src, what);
	return WEFT_ERR_PROTOCOL;
}

/* Sorts other traffic out: WEFT_OK for a frame that claims to be RoCEv2 over IPv4
 * (whether or not it decodes), WEFT_ERR_UNSUPPORTED for somebody else's, WEFT_ERR_PROTOCOL
 * for one too broken to tell. */
static weft_status_t classify(const uint8_t *p, size_t len)
{
	if (len < WT_ROCE_ETH_LEN) {
		WT_DEBUG("roce parse: %zu-byte frame is shorter than an Ethernet header", len);
		return WEFT_ERR_PROTOCOL;
	}
	if (wt_util_get_be16(p + 12) != ETHERTYPE_IPV4) {
		WT_TRACE("roce parse: ethertype 0x%04x is not IPv4", wt_util_get_be16(p + 12));
		return WEFT_ERR_UNSUPPORTED;
	}
	if (len < OFF_IP + WT_ROCE_IP_LEN) {
		WT_DEBUG("roce parse: %zu-byte frame truncates its IPv4 header", len);
		return WEFT_ERR_PROTOCOL;
	}
	const uint8_t *ip = p + OFF_IP;
	size_t ihl = (size_t)(ip[0] & 0x0f) * 4;

	if ((ip[0] >> 4) != 4 || ihl < WT_ROCE_IP_LEN) {
		WT_DEBUG("roce parse: IPv4 frame with version/IHL byte 0x%02x", ip[0]);
		return WEFT_ERR_PROTOCOL;
	}
	if (ip[9] != IP_PROTO_UDP || (wt_util_get_be16(ip + 6) & IP_FRAG_OFFSET) != 0) {
		WT_TRACE("roce parse: IPv4 protocol %u (or a later fragment), not UDP", ip[9]);
		return WEFT_ERR_UNSUPPORTED;
	}
	if (len < OFF_IP + ihl + WT_ROCE_UDP_LEN) {
		WT_DEBUG("roce parse: %zu-byte frame truncates its UDP header", len);
		return WEFT_ERR_PROTOCOL;
	}
	uint16_t dport = wt_util_get_be16(ip + ihl + 2);

	if (dport != WT_ROCE_UDP_PORT) {
		WT_TRACE("roce parse: UDP port %u is not RoCEv2's", dport);
		return WEFT_ERR_UNSUPPORTED;
	}
	return WEFT_OK;
}

weft_status_t wt_roce_parse(const void *pkt, size_t len, int check_icrc, wt_roce_hdr_t *h,
			    size_t *payload_off, size_t *payload_len)
{
	const uint8_t *p = pkt;

	if (pkt == NULL || h == NULL || payload_off == NULL || payload_len == NULL) {
		WT_ERROR("roce parse: NULL argument");
		return WEFT_ERR_INVALID_ARG;
	}
	weft_status_t st = classify(p, len);

	if (st != WEFT_OK)
		return st;
	const uint8_t *ip = p + OFF_IP, *udp = p + OFF_UDP, *bth = p + OFF_BTH;

	/* From here the frame claims to be RoCEv2: every flaw is a protocol error. */
	if ((ip[0] & 0x0f) != 5)
		return bad(p, "IPv4 options");
	if (ip_sum(ip) != 0xffff)
		return bad(p, "IPv4 header checksum");
	if (ip[8] == 0)
		return bad(p, "IPv4 TTL 0");
	if ((wt_util_get_be16(ip + 6) & (IP_FLAG_RESERVED | IP_FLAG_MF)) != 0)
		return bad(p, "IPv4 fragment or reserved flag");
	size_t ip_len = wt_util_get_be16(ip + 2);

	if (ip_len > len - OFF_IP)
		return bad(p, "IPv4 total length beyond the frame");
	if (ip_len < WT_ROCE_IP_LEN + WT_ROCE_UDP_LEN + WT_ROCE_BTH_LEN + WT_ROCE_ICRC_LEN)
		return bad(p, "IPv4 total length too short for a BTH and ICRC");
	if (wt_util_get_be16(udp + 4) != ip_len - WT_ROCE_IP_LEN)
		return bad(p, "UDP length disagrees with IPv4");
	uint8_t opcode = bth[0];
	size_t ext = ext_len(opcode);

	if (ext == SIZE_MAX)
		return bad(p, "BTH opcode weft does not use");
	if ((bth[1] & 0x0f) != 0)
		return bad(p, "BTH transport version");
	if ((wt_util_get_be16(bth + 2) & ROCE_PKEY_NUMBER) == 0)
		return bad(p, "invalid P_Key");
	size_t end = OFF_IP + ip_len; /* the ICRC ends here; Ethernet padding may follow */
	size_t pad = (bth[1] >> 4) & 3;

	if (end < OFF_EXT + ext + WT_ROCE_ICRC_LEN)
		return bad(p, "frame too short for its extended header");
	size_t body = end - WT_ROCE_ICRC_LEN - OFF_EXT - ext; /* payload and pad */

	if (pad > body)
		return bad(p, "pad count larger than the payload");
	if (opcode == WT_ROCE_OP_ACKNOWLEDGE && body != 0)
		return bad(p, "ACKNOWLEDGE with a payload");
	const uint8_t *x = p + OFF_EXT;

	if (opcode == WT_ROCE_OP_ACKNOWLEDGE && !syndrome_ok(x[0]))
		return bad(p, "reserved AETH syndrome");
	if (check_icrc) {
		uint32_t crc = icrc_headers(p, ext);

		crc = wt_util_crc32(crc, x + ext, body);
		if (crc != wt_util_get_le32(p + end - WT_ROCE_ICRC_LEN))
			return bad(p, "ICRC mismatch");
	}

	memset(h, 0, sizeof(*h));
	memcpy(h->dst_mac, p, 6);
	memcpy(h->src_mac, p + 6, 6);
	h->ip_id = wt_util_get_be16(ip + 4);
	h->ttl = ip[8];
	h->src_ip = wt_util_get_be32(ip + 12);
	h->dst_ip = wt_util_get_be32(ip + 16);
	h->src_port = wt_util_get_be16(udp);
	h->opcode = opcode;
	h->pkey = wt_util_get_be16(bth + 2);
	h->dst_qp = wt_util_get_be32(bth + 4) & ROCE_24BIT;
	uint32_t apsn = wt_util_get_be32(bth + 8);

	h->ack_req = (int)(apsn >> 31);
	h->psn = apsn & ROCE_24BIT;
	if (ext == WT_ROCE_RETH_LEN) {
		h->va = wt_util_get_be64(x);
		h->rkey = wt_util_get_be32(x + 8);
		h->dma_len = wt_util_get_be32(x + 12);
	} else if (ext == WT_ROCE_AETH_LEN) {
		uint32_t aeth = wt_util_get_be32(x);

		h->syndrome = (uint8_t)(aeth >> 24);
		h->msn = aeth & ROCE_24BIT;
	}
	*payload_off = OFF_EXT + ext;
	*payload_len = body - pad;
	return WEFT_OK;
}
