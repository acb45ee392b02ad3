/* libFuzzer target (tests/fuzz): the RoCEv2 frame parser of the dpdk driver
 * (drivers/dpdk/roce.c) on hostile frames, with and without the ICRC check, as given and
 * with the IPv4 checksum and ICRC fixed up (so that mutations reach the checks behind
 * them). A frame it accepts must rebuild, from the decoded header and payload, into a
 * frame that parses back to the same header and payload; and the input read as header
 * fields must, when build takes them, make a frame that parses back to them. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/dpdk/roce.h"
#include "lib/util/bytes.h"
#include "lib/util/crc32.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int hdr_equal(const wt_roce_hdr_t *a, const wt_roce_hdr_t *b)
{
	return memcmp(a->dst_mac, b->dst_mac, 6) == 0 && memcmp(a->src_mac, b->src_mac, 6) == 0 &&
	       a->src_ip == b->src_ip && a->dst_ip == b->dst_ip && a->src_port == b->src_port &&
	       a->ttl == b->ttl && a->opcode == b->opcode && a->pkey == b->pkey &&
	       a->dst_qp == b->dst_qp && a->psn == b->psn && a->ack_req == b->ack_req &&
	       a->ip_id == b->ip_id && a->va == b->va && a->rkey == b->rkey &&
	       a->dma_len == b->dma_len && a->syndrome == b->syndrome && a->msn == b->msn;
}

static void round_trip(const uint8_t *data, const wt_roce_hdr_t *h, size_t off, size_t plen)
{
	size_t cap = WT_ROCE_HDR_MAX + plen + WT_ROCE_TRAILER_MAX;
	uint8_t *f = malloc(cap);
	uint32_t icrc;

	if (f == NULL)
		return;
	size_t hl = wt_roce_build(h, plen, f, &icrc);

	if (hl == 0) /* everything parse accepts, build must take */
		__builtin_trap();
	memcpy(f + hl, data + off, plen);
	icrc = wt_roce_icrc_update(icrc, f + hl, plen);
	size_t len = hl + plen + wt_roce_trailer(icrc, plen, f + hl + plen);
	wt_roce_hdr_t again;
	size_t off2, plen2;

	if (len > cap || wt_roce_parse(f, len, 1, &again, &off2, &plen2) != WEFT_OK ||
	    !hdr_equal(h, &again) || off2 != hl || plen2 != plen ||
	    memcmp(f + off2, data + off, plen) != 0)
		__builtin_trap();
	free(f);
}

/* Rewrites the IPv4 header checksum and, where the datagram fits, the ICRC of a frame
 * laid out as weft sends it (20-byte IPv4 header at 14). */
static void fix_up(uint8_t *p, size_t size)
{
	if (size < 14 + 20)
		return;
	uint32_t sum = 0;

	p[24] = p[25] = 0;
	for (int i = 0; i < 20; i += 2)
		sum += wt_util_get_be16(p + 14 + i);
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	wt_util_put_be16(p + 24, (uint16_t)~sum);
	size_t tot = wt_util_get_be16(p + 16);

	if (tot < 20 + 8 + 12 + 4 || 14 + tot > size)
		return;
	uint8_t m[8 + 40];

	memset(m, 0xff, 8);
	memcpy(m + 8, p + 14, 40);
	m[8 + 1] = m[8 + 8] = m[8 + 10] = m[8 + 11] = 0xff;
	m[8 + 20 + 6] = m[8 + 20 + 7] = m[8 + 28 + 4] = 0xff;
	uint32_t c = wt_util_crc32(0, m, sizeof(m));

	c = wt_util_crc32(c, p + 54, 14 + tot - 4 - 54);
	wt_util_put_le32(p + 14 + tot - 4, c);
}

static void parse_and_check(const uint8_t *pkt, size_t size)
{
	wt_roce_hdr_t h;
	size_t off, plen;

	for (int check = 0; check <= 1; check++) {
		weft_status_t st = wt_roce_parse(pkt, size, check, &h, &off, &plen);

		if (st == WEFT_OK) {
			if (off > size || plen > size - off)
				__builtin_trap();
			round_trip(pkt, &h, off, plen);
		} else if (st != WEFT_ERR_PROTOCOL && st != WEFT_ERR_UNSUPPORTED) {
			__builtin_trap();
		}
	}
}

/* The input read as header fields and payload: whatever build accepts must parse back
 * to the same header and payload. */
static void build_from_fields(const uint8_t *d, size_t size)
{
	static const uint8_t ops[] = {WT_ROCE_OP_SEND_ONLY,    WT_ROCE_OP_WRITE_FIRST,
				      WT_ROCE_OP_WRITE_MIDDLE, WT_ROCE_OP_WRITE_LAST,
				      WT_ROCE_OP_WRITE_ONLY,   WT_ROCE_OP_ACKNOWLEDGE};
	wt_roce_hdr_t h;

	if (size < 64)
		return;
	memset(&h, 0, sizeof(h));
	memcpy(h.dst_mac, d, 6);
	memcpy(h.src_mac, d + 6, 6);
	h.src_ip = wt_util_get_be32(d + 12);
	h.dst_ip = wt_util_get_be32(d + 16);
	h.src_port = wt_util_get_be16(d + 20);
	h.ttl = d[22];
	h.opcode = d[23] < 0xf0 ? ops[d[23] % sizeof(ops)] : d[23];
	h.pkey = wt_util_get_be16(d + 24);
	h.dst_qp = wt_util_get_be32(d + 26) >> (d[30] & 8); /* sometimes over 24 bits */
	h.psn = wt_util_get_be32(d + 31) >> (d[30] & 8);
	h.ack_req = d[35] & 1;
	h.ip_id = wt_util_get_be16(d + 36);
	h.va = wt_util_get_be64(d + 38);
	h.rkey = wt_util_get_be32(d + 46);
	h.dma_len = wt_util_get_be32(d + 50);
	h.syndrome = d[54];
	h.msn = wt_util_get_be32(d + 55) >> (d[30] & 8);
	size_t plen = size - 64;
	uint8_t *f = malloc(WT_ROCE_HDR_MAX + plen + WT_ROCE_TRAILER_MAX);
	uint32_t icrc;

	if (f == NULL)
		return;
	size_t hl = wt_roce_build(&h, plen, f, &icrc);

	if (hl != 0) {
		memcpy(f + hl, d + 64, plen);
		icrc = wt_roce_icrc_update(icrc, f + hl, plen);
		size_t len = hl + plen + wt_roce_trailer(icrc, plen, f + hl + plen);
		wt_roce_hdr_t got;
		size_t off, plen2;

		if (wt_roce_parse(f, len, 1, &got, &off, &plen2) != WEFT_OK || off != hl ||
		    plen2 != plen || memcmp(f + off, d + 64, plen) != 0)
			__builtin_trap();
		/* build fills in the defaults; compare after the same normalisation */
		h.ttl = h.ttl ? h.ttl : 64;
		h.pkey = h.pkey ? h.pkey : 0xffff;
		if (h.opcode != WT_ROCE_OP_WRITE_FIRST && h.opcode != WT_ROCE_OP_WRITE_ONLY)
			h.va = h.rkey = h.dma_len = 0;
		if (h.opcode != WT_ROCE_OP_ACKNOWLEDGE) {
			h.syndrome = 0;
			h.msn = 0;
		}
		if (!hdr_equal(&h, &got))
			__builtin_trap();
	}
	free(f);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* a private copy of exactly size bytes: ASan sees any read past the end */
	uint8_t *pkt = malloc(size ? size : 1);

	if (pkt == NULL)
		return 0;
	memcpy(pkt, data, size);
	parse_and_check(pkt, size);
	fix_up(pkt, size);
	parse_and_check(pkt, size);
	build_from_fields(data, size);
	free(pkt);
	return 0;
}
