/* RoCEv2 framing for the dpdk driver (drivers/): Ethernet II, IPv4, UDP to port 4791,
 * the InfiniBand Base Transport Header, RETH or AETH, the payload, pad to 4 bytes and
 * the ICRC. Pure byte work without DPDK, so tests and fuzzers use it on any build. */
#ifndef WT_DPDK_ROCE_H
#define WT_DPDK_ROCE_H

#include <stddef.h>
#include <stdint.h>
#include "lib/util/status.h"

#define WT_ROCE_UDP_PORT 4791
#define WT_ROCE_ETH_LEN 14
#define WT_ROCE_IP_LEN 20
#define WT_ROCE_UDP_LEN 8
#define WT_ROCE_BTH_LEN 12
#define WT_ROCE_RETH_LEN 16
#define WT_ROCE_AETH_LEN 4
#define WT_ROCE_ICRC_LEN 4
/* Largest header before the payload: Ethernet + IPv4 + UDP + BTH + RETH. */
#define WT_ROCE_HDR_MAX                                                                            \
	(WT_ROCE_ETH_LEN + WT_ROCE_IP_LEN + WT_ROCE_UDP_LEN + WT_ROCE_BTH_LEN + WT_ROCE_RETH_LEN)
/* Largest trailer after the payload: up to 3 pad bytes and the ICRC. */
#define WT_ROCE_TRAILER_MAX (3 + WT_ROCE_ICRC_LEN)

/* The BTH opcodes weft sends (RC transport). */
enum wt_roce_opcode {
	WT_ROCE_OP_SEND_ONLY = 0x04,
	WT_ROCE_OP_WRITE_FIRST = 0x06, /* RETH */
	WT_ROCE_OP_WRITE_MIDDLE = 0x07,
	WT_ROCE_OP_WRITE_LAST = 0x08,
	WT_ROCE_OP_WRITE_ONLY = 0x0a,  /* RETH */
	WT_ROCE_OP_ACKNOWLEDGE = 0x11, /* AETH */
};

/* The header fields of one packet. Integers in host order; MACs in wire order. Fields an
 * opcode does not carry are not sent by wt_roce_build (though an MSN over 24 bits is
 * refused whatever the opcode) and are zero after wt_roce_parse. */
typedef struct {
	uint8_t dst_mac[6], src_mac[6];
	uint32_t src_ip, dst_ip; /* IPv4 */
	uint16_t src_port;	 /* UDP source port (flow entropy); destination is 4791 */
	uint8_t ttl;		 /* 0 = 64 when building; parse rejects a TTL of 0 */
	uint8_t opcode;		 /* enum wt_roce_opcode */
	uint16_t pkey;		 /* 0 = 0xffff, the default partition (0x8000 is invalid) */
	uint32_t dst_qp;	 /* 24 bits */
	uint32_t psn;		 /* 24 bits */
	int ack_req;		 /* BTH A bit */
	uint32_t ip_id;		 /* IPv4 identification (16 bits used) */
	/* RETH (WRITE_FIRST, WRITE_ONLY) */
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
	/* AETH (ACKNOWLEDGE) */
	/* written as given: 0x1f is an ACK with unlimited credits; bit 7 and the type
	 * 0b10 in bits 6..5 are reserved and rejected */
	uint8_t syndrome;
	uint32_t msn; /* 24 bits */
} wt_roce_hdr_t;

/* Bytes of headers before the payload for opcode: 54 + 16 (RETH) or + 4 (AETH); 0 for an
 * opcode weft does not send. */
size_t wt_roce_hdr_len(uint8_t opcode);

/* Writes the headers of a packet carrying paylen payload bytes into buf (at least
 * WT_ROCE_HDR_MAX bytes): IPv4 (DSCP/ECN 0, DF set) total length and header checksum, UDP
 * length (checksum 0, as RoCEv2 allows), BTH pad count (SE, MigReq, FECN, BECN 0).
 * Returns the header length, or 0 (logged) if the opcode is not one weft sends, a QP, PSN
 * or MSN exceeds 24 bits, the P_Key or AETH syndrome is invalid, an ACKNOWLEDGE would
 * carry a payload, or the packet would exceed IPv4's 64 KiB. *icrc (unless icrc is NULL)
 * receives the ICRC over the masked headers, to be continued with wt_roce_icrc_update over
 * the payload and finished with wt_roce_trailer. */
size_t wt_roce_build(const wt_roce_hdr_t *h, size_t paylen, uint8_t *buf, uint32_t *icrc);

/* Continues an ICRC over payload bytes. */
uint32_t wt_roce_icrc_update(uint32_t icrc, const void *data, size_t len);

/* Writes the pad bytes (zero) and the ICRC after paylen payload bytes into out (at least
 * WT_ROCE_TRAILER_MAX bytes); returns how many bytes it wrote. The ICRC covers the pad and
 * goes on the wire least significant byte first (wt_util_put_le32 of the zlib-style CRC),
 * as Linux rxe and RoCE NICs send it (Wireshark's infiniband.invariant.crc reads those
 * four bytes big-endian, so it shows the CRC byte-swapped). */
size_t wt_roce_trailer(uint32_t icrc, size_t paylen, uint8_t *out);

/* Decodes and checks one received packet: Ethernet type IPv4, IPv4 version 4 with a
 * 20-byte header, a valid header checksum, TTL not 0, no fragmentation, protocol UDP,
 * destination port 4791, lengths consistent with len (Ethernet padding after the IPv4
 * datagram is allowed), BTH transport version 0, a valid P_Key, an opcode weft sends, a
 * pad count that fits, no payload on an ACKNOWLEDGE, a valid AETH syndrome, and (when
 * check_icrc) the ICRC. TOS, the UDP checksum, SE, MigReq, FECN, BECN and reserved bits
 * are not checked (switches may change some of them). On success fills *h and the
 * payload's offset and length (pad and ICRC excluded); on failure leaves them alone.
 * WEFT_ERR_UNSUPPORTED for a packet that is not RoCEv2 at all (another ethertype,
 * protocol or port: somebody else's traffic on a shared port), WEFT_ERR_PROTOCOL for a
 * RoCEv2 packet that does not decode or fails a checksum or the ICRC (logged at debug
 * level: a busy port may see many). Never reads outside pkt[0, len). */
weft_status_t wt_roce_parse(const void *pkt, size_t len, int check_icrc, wt_roce_hdr_t *h,
			    size_t *payload_off, size_t *payload_len);

#endif
