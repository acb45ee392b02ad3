/* Unit tests for the RoCEv2 framing of the dpdk driver (tests/unit/drivers): build/parse
 * round trips of every opcode and payloads of 0..9000 bytes checked against an
 * independent ICRC and IPv4 checksum, single-bit corruption, truncation, other traffic,
 * malformed headers, refused build arguments, and known-answer frames (one built by weft
 * and checked with tshark, one captured from a ConnectX-4 Lx NIC). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/dpdk/roce.h"
#include "lib/util/bytes.h"

#define MAX_PAY 9000
#define MAX_FRAME (WT_ROCE_HDR_MAX + MAX_PAY + WT_ROCE_TRAILER_MAX + 64)

static const uint8_t opcodes[] = {WT_ROCE_OP_SEND_ONLY,	   WT_ROCE_OP_WRITE_FIRST,
				  WT_ROCE_OP_WRITE_MIDDLE, WT_ROCE_OP_WRITE_LAST,
				  WT_ROCE_OP_WRITE_ONLY,   WT_ROCE_OP_ACKNOWLEDGE};
#define N_OPCODES (sizeof(opcodes) / sizeof(opcodes[0]))

static uint64_t rng_state = 0x2545f4914f6cdd1dull;

static uint64_t rng(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return rng_state;
}

/* ---- independent references: bitwise CRC-32 and the annex's masking, written apart
 * from roce.c ---- */

static uint32_t ref_crc(uint32_t c, const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		c ^= p[i];
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0xedb88320u : c >> 1;
	}
	return c;
}

/* The ICRC a frame should carry: masked pseudo-packet from the IPv4 header (at 14) to
 * the end of the datagram minus the ICRC. */
static uint32_t ref_icrc(const uint8_t *f)
{
	size_t ihl = (size_t)(f[14] & 0x0f) * 4, tot = (size_t)f[16] << 8 | f[17];
	uint32_t c = 0xffffffffu;
	static const uint8_t ff = 0xff;

	for (int i = 0; i < 8; i++)
		c = ref_crc(c, &ff, 1);
	for (size_t r = 0; r < tot - 4; r++) {
		uint8_t b = f[14 + r];

		if (r == 1 || r == 8 || r == 10 || r == 11 || r == ihl + 6 || r == ihl + 7 ||
		    r == ihl + 8 + 4)
			b = 0xff;
		c = ref_crc(c, &b, 1);
	}
	return ~c;
}

static int ip_csum_ok(const uint8_t *f)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)f[14 + i] << 8 | f[15 + i];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return s == 0xffff;
}

/* After a test mutates a frame: fix the IPv4 checksum and the ICRC, so that only the
 * mutation itself can make parse fail. */
static void refresh(uint8_t *f)
{
	size_t tot = (size_t)f[16] << 8 | f[17];
	uint32_t s = 0;

	f[24] = f[25] = 0;
	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)f[14 + i] << 8 | f[15 + i];
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	f[24] = (uint8_t)(~s >> 8);
	f[25] = (uint8_t)~s;
	wt_util_put_le32(f + 14 + tot - 4, ref_icrc(f));
}

/* ---- building ---- */

static void rand_hdr(wt_roce_hdr_t *h, uint8_t opcode)
{
	memset(h, 0, sizeof(*h));
	for (int i = 0; i < 6; i++) {
		h->dst_mac[i] = (uint8_t)rng();
		h->src_mac[i] = (uint8_t)rng();
	}
	h->src_ip = (uint32_t)rng();
	h->dst_ip = (uint32_t)rng();
	h->src_port = (uint16_t)rng();
	h->ttl = (uint8_t)rng();
	h->opcode = opcode;
	h->pkey = (uint16_t)(rng() % 3 == 0 ? 0 : (rng() | 1));
	h->dst_qp = (uint32_t)rng() & 0xffffff;
	h->psn = (uint32_t)rng() & 0xffffff;
	h->ack_req = (int)(rng() & 1);
	h->ip_id = (uint32_t)rng() & 0xffff;
	if (opcode == WT_ROCE_OP_WRITE_FIRST || opcode == WT_ROCE_OP_WRITE_ONLY) {
		h->va = rng();
		h->rkey = (uint32_t)rng();
		h->dma_len = (uint32_t)rng();
	}
	if (opcode == WT_ROCE_OP_ACKNOWLEDGE) {
		static const uint8_t syn[] = {0x00, 0x1f, 0x05, 0x20, 0x3f, 0x60, 0x64, 0x7f};

		h->syndrome = syn[rng() % sizeof(syn)];
		h->msn = (uint32_t)rng() & 0xffffff;
	}
}

/* What parse must return for a frame built from h. */
static wt_roce_hdr_t expected(const wt_roce_hdr_t *h)
{
	wt_roce_hdr_t e = *h;

	e.ttl = h->ttl ? h->ttl : 64;
	e.pkey = h->pkey ? h->pkey : 0xffff;
	e.ack_req = h->ack_req != 0;
	e.ip_id = h->ip_id & 0xffff;
	return e;
}

static void assert_hdr_equal(const wt_roce_hdr_t *a, const wt_roce_hdr_t *b)
{
	assert_memory_equal(a->dst_mac, b->dst_mac, 6);
	assert_memory_equal(a->src_mac, b->src_mac, 6);
	assert_int_equal(a->src_ip, b->src_ip);
	assert_int_equal(a->dst_ip, b->dst_ip);
	assert_int_equal(a->src_port, b->src_port);
	assert_int_equal(a->ttl, b->ttl);
	assert_int_equal(a->opcode, b->opcode);
	assert_int_equal(a->pkey, b->pkey);
	assert_int_equal(a->dst_qp, b->dst_qp);
	assert_int_equal(a->psn, b->psn);
	assert_int_equal(a->ack_req, b->ack_req);
	assert_int_equal(a->ip_id, b->ip_id);
	assert_int_equal(a->va, b->va);
	assert_int_equal(a->rkey, b->rkey);
	assert_int_equal(a->dma_len, b->dma_len);
	assert_int_equal(a->syndrome, b->syndrome);
	assert_int_equal(a->msn, b->msn);
}

/* Builds a frame; the payload's ICRC is taken in up to three pieces, as a driver with a
 * scattered payload would. */
static size_t build(const wt_roce_hdr_t *h, const uint8_t *pay, size_t paylen, uint8_t *f)
{
	uint32_t icrc;
	size_t hl = wt_roce_build(h, paylen, f, &icrc);

	assert_int_equal(hl, wt_roce_hdr_len(h->opcode));
	memcpy(f + hl, pay, paylen);
	size_t a = paylen ? (size_t)(rng() % (paylen + 1)) : 0;
	size_t b = a + (paylen - a ? (size_t)(rng() % (paylen - a + 1)) : 0);

	icrc = wt_roce_icrc_update(icrc, f + hl, a);
	icrc = wt_roce_icrc_update(icrc, f + hl + a, b - a);
	icrc = wt_roce_icrc_update(icrc, f + hl + b, paylen - b);
	return hl + paylen + wt_roce_trailer(icrc, paylen, f + hl + paylen);
}

static uint8_t payload[MAX_PAY];
static uint8_t frame[MAX_FRAME];

static int setup(void **state)
{
	(void)state;
	for (size_t i = 0; i < MAX_PAY; i++)
		payload[i] = (uint8_t)rng();
	return 0;
}

static weft_status_t parse(const uint8_t *f, size_t len, int check, wt_roce_hdr_t *h)
{
	size_t off = 0, plen = 0;

	return wt_roce_parse(f, len, check, h, &off, &plen);
}

static void test_hdr_len(void **state)
{
	(void)state;
	assert_int_equal(wt_roce_hdr_len(WT_ROCE_OP_SEND_ONLY), 54);
	assert_int_equal(wt_roce_hdr_len(WT_ROCE_OP_WRITE_FIRST), 70);
	assert_int_equal(wt_roce_hdr_len(WT_ROCE_OP_WRITE_MIDDLE), 54);
	assert_int_equal(wt_roce_hdr_len(WT_ROCE_OP_WRITE_LAST), 54);
	assert_int_equal(wt_roce_hdr_len(WT_ROCE_OP_WRITE_ONLY), 70);
	assert_int_equal(wt_roce_hdr_len(WT_ROCE_OP_ACKNOWLEDGE), 58);
	assert_int_equal(wt_roce_hdr_len(0x00), 0);
	assert_int_equal(wt_roce_hdr_len(0x81), 0);
	assert_int_equal(WT_ROCE_HDR_MAX, 70);
}

/* Every opcode, every payload length 0..9000 (ACKNOWLEDGE carries none). */
static void test_round_trip(void **state)
{
	(void)state;
	for (size_t o = 0; o < N_OPCODES; o++) {
		size_t maxpay = opcodes[o] == WT_ROCE_OP_ACKNOWLEDGE ? 0 : MAX_PAY;

		for (size_t paylen = 0; paylen <= maxpay; paylen++) {
			wt_roce_hdr_t h, got;
			size_t off = 0, plen = 0, pad = (4 - paylen % 4) % 4;

			rand_hdr(&h, opcodes[o]);
			size_t len = build(&h, payload, paylen, frame);
			size_t hl = wt_roce_hdr_len(h.opcode);

			assert_int_equal(len, hl + paylen + pad + 4);
			assert_int_equal(wt_roce_parse(frame, len, 1, &got, &off, &plen), WEFT_OK);
			wt_roce_hdr_t want = expected(&h);

			assert_hdr_equal(&got, &want);
			assert_int_equal(off, hl);
			assert_int_equal(plen, paylen);
			assert_memory_equal(frame + off, payload, paylen);
			/* the wire fields, read back independently */
			assert_int_equal(wt_util_get_be16(frame + 12), 0x0800);
			assert_int_equal(frame[14], 0x45);
			assert_int_equal(wt_util_get_be16(frame + 16), len - 14);
			assert_int_equal(wt_util_get_be16(frame + 20), 0x4000); /* DF */
			assert_int_equal(frame[23], 17);
			assert_true(ip_csum_ok(frame));
			assert_int_equal(wt_util_get_be16(frame + 36), 4791);
			assert_int_equal(wt_util_get_be16(frame + 38), len - 34);
			assert_int_equal(wt_util_get_be16(frame + 40), 0);
			assert_int_equal(frame[43], pad << 4);
			assert_int_equal(frame[46], 0);
			for (size_t k = 0; k < pad; k++)
				assert_int_equal(frame[hl + paylen + k], 0);
			if (paylen <= 300 || paylen % 101 == 0 || paylen >= MAX_PAY - 4)
				assert_int_equal(wt_util_get_le32(frame + len - 4),
						 ref_icrc(frame));
		}
	}
}

/* A flipped bit anywhere is rejected, except where RoCEv2 leaves it unprotected: the MAC
 * addresses (the Ethernet FCS covers them), the UDP checksum (ignored) and the BTH's
 * FECN/BECN byte (switches set it); there the frame still parses. */
static void flip_all(size_t len, size_t nsample)
{
	size_t nbits = len * 8;

	for (size_t s = 0; s < (nsample ? nsample : nbits); s++) {
		size_t bit = nsample ? (size_t)(rng() % nbits) : s, byte = bit / 8;
		wt_roce_hdr_t got;

		frame[byte] ^= (uint8_t)(1u << (bit % 8));
		weft_status_t st = parse(frame, len, 1, &got);
		int unprotected = byte < 12 || byte == 40 || byte == 41 || byte == 46;

		if (unprotected)
			assert_int_equal(st, WEFT_OK);
		else if (st == WEFT_OK)
			fail_msg("bit %zu (byte %zu) of a %zu-byte frame flipped, still accepted",
				 bit, byte, len);
		frame[byte] ^= (uint8_t)(1u << (bit % 8));
	}
}

static void test_bit_flips(void **state)
{
	static const size_t sizes[] = {0, 1, 3, 4, 7, 61, 1000, 4097, 9000};

	(void)state;
	for (size_t o = 0; o < N_OPCODES; o++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			wt_roce_hdr_t h, got;

			if (opcodes[o] == WT_ROCE_OP_ACKNOWLEDGE && sizes[s] != 0)
				continue;
			rand_hdr(&h, opcodes[o]);
			size_t len = build(&h, payload, sizes[s], frame);

			assert_int_equal(parse(frame, len, 1, &got), WEFT_OK);
			flip_all(len, len <= 1100 ? 0 : 3000);
			/* without the ICRC check a payload bit flip goes unnoticed */
			if (sizes[s] > 0) {
				size_t at = wt_roce_hdr_len(h.opcode) + sizes[s] / 2;

				frame[at] ^= 0x10;
				assert_int_equal(parse(frame, len, 0, &got), WEFT_OK);
				assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_PROTOCOL);
				frame[at] ^= 0x10;
			}
			/* nor does a wrong ICRC */
			frame[len - 1] ^= 0x80;
			assert_int_equal(parse(frame, len, 0, &got), WEFT_OK);
			assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_PROTOCOL);
			frame[len - 1] ^= 0x80;
		}
}

/* Every truncation is rejected; bytes after the datagram (Ethernet padding) are not. */
static void test_truncated(void **state)
{
	static const size_t sizes[] = {0, 2, 5, 100};

	(void)state;
	for (size_t o = 0; o < N_OPCODES; o++)
		for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
			wt_roce_hdr_t h, got;
			size_t off, plen;

			if (opcodes[o] == WT_ROCE_OP_ACKNOWLEDGE && sizes[s] != 0)
				continue;
			rand_hdr(&h, opcodes[o]);
			size_t len = build(&h, payload, sizes[s], frame);

			for (size_t cut = 0; cut < len; cut++) {
				/* a private copy, so ASan catches any read past the cut */
				uint8_t *c = malloc(cut ? cut : 1);

				assert_non_null(c);
				memcpy(c, frame, cut);
				assert_int_not_equal(parse(c, cut, 1, &got), WEFT_OK);
				assert_int_not_equal(parse(c, cut, 0, &got), WEFT_OK);
				free(c);
			}
			memset(frame + len, 0xa5, 17);
			assert_int_equal(wt_roce_parse(frame, len + 17, 1, &got, &off, &plen),
					 WEFT_OK);
			assert_int_equal(plen, sizes[s]);
			wt_roce_hdr_t want = expected(&h);

			assert_hdr_equal(&got, &want);
		}
}

/* Somebody else's traffic on a shared port: WEFT_ERR_UNSUPPORTED, not a protocol error. */
static void test_not_roce(void **state)
{
	wt_roce_hdr_t h, got;
	uint8_t arp[42] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0,
			   1,	 0x08, 0x06, 0,	   1,	 0x08, 0,    6, 4, 0, 1};

	(void)state;
	assert_int_equal(parse(arp, sizeof(arp), 1, &got), WEFT_ERR_UNSUPPORTED);

	rand_hdr(&h, WT_ROCE_OP_SEND_ONLY);
	size_t len = build(&h, payload, 32, frame);

	/* the same bytes as IPv6 and behind a VLAN tag */
	wt_util_put_be16(frame + 12, 0x86dd);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_UNSUPPORTED);
	wt_util_put_be16(frame + 12, 0x8100);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_UNSUPPORTED);
	wt_util_put_be16(frame + 12, 0x0800);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_OK);
	/* UDP to another port (DNS, VXLAN, RoCE's neighbour 4790) */
	static const uint16_t ports[] = {53, 4789, 4790, 4792};

	for (size_t i = 0; i < sizeof(ports) / sizeof(ports[0]); i++) {
		wt_util_put_be16(frame + 36, ports[i]);
		refresh(frame);
		assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_UNSUPPORTED);
	}
	wt_util_put_be16(frame + 36, 4791);
	refresh(frame);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_OK);
	/* TCP, ICMP */
	frame[23] = 6;
	refresh(frame);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_UNSUPPORTED);
	frame[23] = 1;
	refresh(frame);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_UNSUPPORTED);
	frame[23] = 17;
	/* a later IPv4 fragment has no UDP header to look at */
	wt_util_put_be16(frame + 20, 0x00b9);
	refresh(frame);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_UNSUPPORTED);
	/* IGMP with a router-alert option (IHL 6) */
	frame[14] = 0x46;
	frame[23] = 2;
	wt_util_put_be16(frame + 20, 0);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_ERR_UNSUPPORTED);
}

/* A frame that claims RoCEv2 but breaks one rule (checksum and ICRC made right again):
 * WEFT_ERR_PROTOCOL, and the parse output untouched. */
static void expect_protocol(uint8_t *f, size_t len, const char *what)
{
	wt_roce_hdr_t got;
	size_t off = 12345, plen = 54321;

	memset(&got, 0x5a, sizeof(got));
	weft_status_t st = wt_roce_parse(f, len, 1, &got, &off, &plen);

	if (st != WEFT_ERR_PROTOCOL)
		fail_msg("%s: status %d, expected WEFT_ERR_PROTOCOL", what, st);
	assert_int_equal(off, 12345);
	assert_int_equal(plen, 54321);
	assert_int_equal(got.psn, 0x5a5a5a5au);
}

static size_t fresh(uint8_t opcode, size_t paylen)
{
	wt_roce_hdr_t h;

	rand_hdr(&h, opcode);
	return build(&h, payload, paylen, frame);
}

static void test_malformed(void **state)
{
	wt_roce_hdr_t got;
	size_t len, off, plen;

	(void)state;
	len = fresh(WT_ROCE_OP_SEND_ONLY, 20);
	frame[14] = 0x65; /* version 6 under ethertype IPv4 */
	refresh(frame);
	expect_protocol(frame, len, "IP version 6");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 20);
	frame[14] = 0x44; /* IHL 4 */
	expect_protocol(frame, len, "IHL 4");

	/* IPv4 options: four NOPs inserted after the header */
	len = fresh(WT_ROCE_OP_SEND_ONLY, 20);
	memmove(frame + 38, frame + 34, len - 34);
	memset(frame + 34, 1, 4);
	frame[14] = 0x46;
	wt_util_put_be16(frame + 16, (uint16_t)(wt_util_get_be16(frame + 16) + 4));
	refresh(frame);
	expect_protocol(frame, len + 4, "IPv4 options");

	len = fresh(WT_ROCE_OP_SEND_ONLY, 20);
	frame[25] ^= 1;
	expect_protocol(frame, len, "IPv4 checksum");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 20);
	wt_util_put_be16(frame + 20, 0x6000); /* DF + MF */
	refresh(frame);
	expect_protocol(frame, len, "more fragments");
	wt_util_put_be16(frame + 20, 0xc000); /* reserved flag */
	refresh(frame);
	expect_protocol(frame, len, "reserved IPv4 flag");
	wt_util_put_be16(frame + 20, 0x4000);
	frame[22] = 0; /* TTL */
	refresh(frame);
	expect_protocol(frame, len, "TTL 0");

	/* IPv4 and UDP lengths that disagree with each other or with the frame */
	len = fresh(WT_ROCE_OP_WRITE_LAST, 40);
	wt_util_put_be16(frame + 38, (uint16_t)(wt_util_get_be16(frame + 38) + 4));
	refresh(frame);
	expect_protocol(frame, len, "UDP length too long");
	len = fresh(WT_ROCE_OP_WRITE_LAST, 40);
	wt_util_put_be16(frame + 38, (uint16_t)(wt_util_get_be16(frame + 38) - 4));
	refresh(frame);
	expect_protocol(frame, len, "UDP length too short");
	len = fresh(WT_ROCE_OP_WRITE_LAST, 40);
	wt_util_put_be16(frame + 16, (uint16_t)(wt_util_get_be16(frame + 16) + 1));
	refresh(frame);
	expect_protocol(frame, len, "IPv4 length past the frame");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 0);
	wt_util_put_be16(frame + 16, 20 + 8 + 12);
	wt_util_put_be16(frame + 38, 8 + 12);
	refresh(frame);
	expect_protocol(frame, 14 + 40, "no room for the ICRC");

	/* BTH: opcodes weft does not use, transport version, P_Key, pad count */
	static const uint8_t other_ops[] = {0x00, 0x01, 0x05, 0x0c, 0x10, 0x64, 0x81, 0xff};

	for (size_t i = 0; i < sizeof(other_ops); i++) {
		len = fresh(WT_ROCE_OP_SEND_ONLY, 24);
		frame[42] = other_ops[i];
		refresh(frame);
		expect_protocol(frame, len, "opcode weft does not use");
	}
	len = fresh(WT_ROCE_OP_SEND_ONLY, 24);
	frame[43] |= 1; /* TVer 1 */
	refresh(frame);
	expect_protocol(frame, len, "transport version 1");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 24);
	wt_util_put_be16(frame + 44, 0x0000);
	refresh(frame);
	expect_protocol(frame, len, "P_Key 0");
	wt_util_put_be16(frame + 44, 0x8000);
	refresh(frame);
	expect_protocol(frame, len, "P_Key 0x8000");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 0);
	frame[43] = 0x30; /* pad 3 with nothing to pad */
	refresh(frame);
	expect_protocol(frame, len, "pad count past the payload");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 2);
	frame[43] = 0x30; /* 2 payload + 2 pad bytes re-read as 1 + 3: consistent */
	refresh(frame);
	assert_int_equal(wt_roce_parse(frame, len, 1, &got, &off, &plen), WEFT_OK);
	assert_int_equal(plen, 1);

	/* extended headers that do not fit or carry reserved values */
	len = fresh(WT_ROCE_OP_SEND_ONLY, 12);
	frame[42] = WT_ROCE_OP_WRITE_ONLY; /* RETH needs 16 bytes, 12 are there */
	refresh(frame);
	expect_protocol(frame, len, "RETH past the end");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 8);
	frame[42] = WT_ROCE_OP_ACKNOWLEDGE; /* AETH + 4 payload bytes */
	refresh(frame);
	expect_protocol(frame, len, "ACKNOWLEDGE with a payload");
	len = fresh(WT_ROCE_OP_SEND_ONLY, 4);
	frame[42] = WT_ROCE_OP_ACKNOWLEDGE; /* exactly an AETH: fine */
	frame[54] = 0x1f;
	refresh(frame);
	assert_int_equal(parse(frame, len, 1, &got), WEFT_OK);
	assert_int_equal(got.syndrome, 0x1f);
	frame[54] = 0x9f;
	refresh(frame);
	expect_protocol(frame, len, "AETH syndrome bit 7");
	frame[54] = 0x41;
	refresh(frame);
	expect_protocol(frame, len, "reserved AETH type");

	/* the NULL arguments */
	len = fresh(WT_ROCE_OP_SEND_ONLY, 4);
	assert_int_equal(wt_roce_parse(NULL, len, 1, &got, &off, &plen), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_roce_parse(frame, len, 1, NULL, &off, &plen), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_roce_parse(frame, len, 1, &got, NULL, &plen), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_roce_parse(frame, len, 1, &got, &off, NULL), WEFT_ERR_INVALID_ARG);
}

static void test_build_rejects(void **state)
{
	wt_roce_hdr_t h;
	uint8_t buf[WT_ROCE_HDR_MAX];
	uint32_t icrc = 0x12345678u;

	(void)state;
	rand_hdr(&h, WT_ROCE_OP_SEND_ONLY);
	assert_int_equal(wt_roce_build(NULL, 0, buf, &icrc), 0);
	assert_int_equal(wt_roce_build(&h, 0, NULL, &icrc), 0);
	assert_int_equal(wt_roce_build(&h, 0, buf, NULL), 54); /* no ICRC wanted: fine */
	h.opcode = 0x00;
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
	h.opcode = 0x81;
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
	h.opcode = WT_ROCE_OP_SEND_ONLY;
	h.psn = 0x1000000;
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
	h.psn = 0xffffff;
	h.dst_qp = 0x1000000;
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
	h.dst_qp = 0xffffff;
	h.msn = 0x1000000; /* checked whatever the opcode: a wrapped counter is a bug */
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
	h.msn = 0;
	h.pkey = 0x8000;
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
	h.pkey = 0;
	/* the largest payload IPv4 allows, and one more byte */
	size_t max = 65535 - 20 - 8 - 12 - 16 - 3 - 4;

	assert_int_equal(wt_roce_build(&h, max, buf, &icrc), 54);
	assert_int_equal(wt_roce_build(&h, max + 1, buf, &icrc), 0);
	h.opcode = WT_ROCE_OP_ACKNOWLEDGE;
	h.syndrome = 0x1f;
	assert_int_equal(wt_roce_build(&h, 4, buf, &icrc), 0);
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 58);
	h.syndrome = 0x80;
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
	h.syndrome = 0x40;
	assert_int_equal(wt_roce_build(&h, 0, buf, &icrc), 0);
}

/* RDMA WRITE Only of "weft!" (pad 3), built by roce.c; tshark 4.0.17 decodes it as RC RDMA
 * WRITE Only, VA 0x7f0000001000, R_Key 0xc0ffee, length 5, QP 0x123, PSN 0xabcd, and shows
 * "Invariant CRC: 0x6940b656" (the wire bytes read big-endian); roce_icrc.lua and zlib
 * (crc32 of the masked frame = 0x56b64069, sent LSB first) agree. */
static const uint8_t known_write[] = {
    0x02, 0x00, 0xc6, 0x12, 0x00, 0x02, 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01, 0x08, 0x00,
    0x45, 0x00, 0x00, 0x44, 0x12, 0x34, 0x40, 0x00, 0x40, 0x11, 0x9c, 0x4d, 0xc6, 0x12,
    0x00, 0x01, 0xc6, 0x12, 0x00, 0x02, 0xc0, 0x00, 0x12, 0xb7, 0x00, 0x30, 0x00, 0x00,
    0x0a, 0x30, 0xff, 0xff, 0x00, 0x00, 0x01, 0x23, 0x80, 0x00, 0xab, 0xcd, 0x00, 0x00,
    0x7f, 0x00, 0x00, 0x00, 0x10, 0x00, 0x00, 0xc0, 0xff, 0xee, 0x00, 0x00, 0x00, 0x05,
    0x77, 0x65, 0x66, 0x74, 0x21, 0x00, 0x00, 0x00, 0x69, 0x40, 0xb6, 0x56};

/* A congestion notification packet (opcode 0x81, BECN set) captured from a Mellanox
 * ConnectX-4 Lx, as published in scapy's RoCE tests: real hardware's ICRC, 82 fd 00 2a
 * on the wire. */
static const uint8_t known_cnp[] = {
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45,
    0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01,
    0x0a, 0x00, 0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff,
    0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a};

static void test_known_answer(void **state)
{
	wt_roce_hdr_t got, h;
	size_t off, plen;
	uint8_t buf[sizeof(known_write)];

	(void)state;
	/* the reference ICRC (and so the masking and byte order) agrees with a real NIC */
	assert_int_equal(sizeof(known_cnp), 74);
	assert_int_equal(ref_icrc(known_cnp), 0x2a00fd82u);
	assert_int_equal(wt_util_get_le32(known_cnp + 70), ref_icrc(known_cnp));
	assert_true(ip_csum_ok(known_cnp));
	/* CNPs are RoCEv2 but not an opcode weft takes */
	assert_int_equal(parse(known_cnp, sizeof(known_cnp), 1, &got), WEFT_ERR_PROTOCOL);

	assert_int_equal(wt_roce_parse(known_write, sizeof(known_write), 1, &got, &off, &plen),
			 WEFT_OK);
	assert_int_equal(got.opcode, WT_ROCE_OP_WRITE_ONLY);
	assert_int_equal(got.src_ip, 0xc6120001u);
	assert_int_equal(got.dst_ip, 0xc6120002u);
	assert_int_equal(got.src_port, 0xc000);
	assert_int_equal(got.ttl, 64);
	assert_int_equal(got.ip_id, 0x1234);
	assert_int_equal(got.pkey, 0xffff);
	assert_int_equal(got.dst_qp, 0x123);
	assert_int_equal(got.psn, 0xabcd);
	assert_int_equal(got.ack_req, 1);
	assert_int_equal(got.va, 0x00007f0000001000ull);
	assert_int_equal(got.rkey, 0x00c0ffeeu);
	assert_int_equal(got.dma_len, 5);
	assert_int_equal(off, 70);
	assert_int_equal(plen, 5);
	assert_memory_equal(known_write + off, "weft!", 5);
	assert_int_equal(wt_util_get_le32(known_write + 78), 0x56b64069u);
	assert_int_equal(ref_icrc(known_write), 0x56b64069u);

	/* and roce.c builds exactly these bytes from that header */
	uint32_t icrc;

	h = got;
	assert_int_equal(wt_roce_build(&h, 5, buf, &icrc), 70);
	memcpy(buf + 70, "weft!", 5);
	icrc = wt_roce_icrc_update(icrc, buf + 70, 5);
	assert_int_equal(wt_roce_trailer(icrc, 5, buf + 75), 7);
	assert_memory_equal(buf, known_write, sizeof(known_write));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_hdr_len),    cmocka_unit_test(test_known_answer),
	    cmocka_unit_test(test_round_trip), cmocka_unit_test(test_bit_flips),
	    cmocka_unit_test(test_truncated),  cmocka_unit_test(test_not_roce),
	    cmocka_unit_test(test_malformed),  cmocka_unit_test(test_build_rejects),
	};
	return cmocka_run_group_tests(tests, setup, NULL);
}
