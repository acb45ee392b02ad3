/* RoCEv2 frames for tshark (tests/unit/drivers), used by roce_tshark.sh.
 *   roce_pcap write FILE  writes a pcap (linktype 1, Ethernet) of frames of every opcode
 *                         weft sends and many payload sizes, built by drivers/dpdk/roce.c;
 *   roce_pcap write-hw FILE  writes one frame captured from a RoCE NIC, to check the
 *                         ICRC checker itself;
 *   roce_pcap check       reads tshark's field lines (the order is FIELDS below, one line
 *                         per frame, tab-separated) on stdin and checks that every frame
 *                         decoded as InfiniBand exactly as it was built, with a good ICRC
 *                         (reported by roce_icrc.lua), a good IPv4 checksum, nothing
 *                         malformed and no expert warning or error.
 * Exit status 0 when all is well, 1 with a message naming the frame and field otherwise. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/dpdk/roce.h"
#include "lib/util/bytes.h"

/* The tshark fields, in the order roce_tshark.sh asks for them. */
enum {
	F_NUMBER,
	F_PROTOCOLS,
	F_IP_CSUM_STATUS,
	F_UDP_DPORT,
	F_OPCODE,
	F_SE,
	F_M,
	F_PADCNT,
	F_TVER,
	F_PKEY,
	F_DESTQP,
	F_ACKREQ,
	F_PSN,
	F_RETH_VA,
	F_RETH_RKEY,
	F_RETH_DMALEN,
	F_AETH_SYNDROME,
	F_AETH_MSN,
	F_PAYLOAD,
	F_ICRC,
	F_ICRC_STATUS,
	F_ICRC_COMPUTED,
	F_MALFORMED,
	F_EXPERT_SEVERITY,
	F_COUNT
};

static const uint8_t opcodes[] = {WT_ROCE_OP_SEND_ONLY,	   WT_ROCE_OP_WRITE_FIRST,
				  WT_ROCE_OP_WRITE_MIDDLE, WT_ROCE_OP_WRITE_LAST,
				  WT_ROCE_OP_WRITE_ONLY,   WT_ROCE_OP_ACKNOWLEDGE};
#define N_OPCODES (sizeof(opcodes) / sizeof(opcodes[0]))
static const size_t sizes[] = {0,  1,	2,    3,    4,	  5,	6,    7,    8,	 63,
			       64, 255, 1024, 1025, 1026, 4096, 4099, 8999, 9000};
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))
static const uint8_t syndromes[] = {0x1f, 0x00, 0x0a, 0x20 | 0x0e, 0x60 | 0x01};
#define N_SYNDROMES (sizeof(syndromes) / sizeof(syndromes[0]))
#define MAX_FRAME (WT_ROCE_HDR_MAX + 9000 + WT_ROCE_TRAILER_MAX)

/* Frame i of the set: its header and payload length; 0 past the end. */
static int frame_spec(size_t i, wt_roce_hdr_t *h, size_t *paylen)
{
	size_t op = i / N_SIZES, sz = i % N_SIZES;

	if (op >= N_OPCODES)
		return 0;
	memset(h, 0, sizeof(*h));
	static const uint8_t dmac[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, 0x02};
	static const uint8_t smac[6] = {0x02, 0x00, 0xc6, 0x12, 0x00, 0x01};

	memcpy(h->dst_mac, dmac, 6);
	memcpy(h->src_mac, smac, 6);
	h->src_ip = 0xc6120001u; /* 198.18.0.1 */
	h->dst_ip = 0xc6120002u; /* 198.18.0.2 */
	h->src_port = (uint16_t)(49152 + 17 * i);
	h->ttl = (uint8_t)(i % 3 == 0 ? 0 : 32 + i % 200);
	h->opcode = opcodes[op];
	h->pkey = i % 4 == 0 ? 0 : (uint16_t)(0x8000 | (0x1234 + i));
	h->dst_qp = (uint32_t)(0x000011 + 0x10101 * i) & 0xffffff;
	h->psn = (uint32_t)(0xfffff0 + 7 * i) & 0xffffff; /* wraps around 2^24 */
	h->ack_req = (int)(i & 1);
	h->ip_id = (uint32_t)(i * 31);
	h->va = 0x00007f0012345000ull + 4096 * i;
	h->rkey = 0xa5a50000u + (uint32_t)i;
	h->dma_len = (uint32_t)(sizes[sz] * 4 + 1);
	h->syndrome = syndromes[i % N_SYNDROMES];
	h->msn = (uint32_t)(0xffff00 + 3 * i) & 0xffffff;
	*paylen = h->opcode == WT_ROCE_OP_ACKNOWLEDGE ? 0 : sizes[sz];
	/* ACKNOWLEDGE carries no payload: one frame of it is enough */
	if (h->opcode == WT_ROCE_OP_ACKNOWLEDGE && sz >= N_SYNDROMES)
		return -1;
	return 1;
}

static uint8_t payload_byte(size_t i, size_t k)
{
	return (uint8_t)(k * 7 + i * 13 + (k >> 8));
}

/* Builds frame i into f; returns its length, 0 at the end of the set, SIZE_MAX to skip. */
static size_t frame_build(size_t i, uint8_t *f, wt_roce_hdr_t *h, size_t *paylen)
{
	uint32_t icrc;
	int r = frame_spec(i, h, paylen);

	if (r == 0)
		return 0;
	if (r < 0)
		return SIZE_MAX;
	size_t hl = wt_roce_build(h, *paylen, f, &icrc);

	if (hl == 0) {
		fprintf(stderr, "frame %zu: wt_roce_build refused it\n", i);
		exit(1);
	}
	for (size_t k = 0; k < *paylen; k++)
		f[hl + k] = payload_byte(i, k);
	icrc = wt_roce_icrc_update(icrc, f + hl, *paylen);
	return hl + *paylen + wt_roce_trailer(icrc, *paylen, f + hl + *paylen);
}

/* A congestion notification packet captured from a Mellanox ConnectX-4 Lx (published in
 * scapy's RoCE tests): real hardware's ICRC, which roce_icrc.lua must call good. */
static const uint8_t hw_cnp[] = {
    0xe4, 0x1d, 0x2d, 0xab, 0x2b, 0xc2, 0x7c, 0xfe, 0x90, 0x64, 0x3b, 0x32, 0x08, 0x00, 0x45,
    0xc2, 0x00, 0x3c, 0x71, 0x8c, 0x40, 0x00, 0x40, 0x11, 0x91, 0x61, 0x0a, 0x00, 0x11, 0x01,
    0x0a, 0x00, 0x12, 0x01, 0x00, 0x00, 0x12, 0xb7, 0x00, 0x28, 0x00, 0x00, 0x81, 0x00, 0xff,
    0xff, 0x40, 0x00, 0x01, 0x18, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
    0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x82, 0xfd, 0x00, 0x2a};

static FILE *pcap_open(const char *path)
{
	uint8_t gh[24];
	FILE *fp = fopen(path, "wb");

	if (fp == NULL) {
		fprintf(stderr, "cannot create %s: %s\n", path, strerror(errno));
		return NULL;
	}
	/* the classic pcap header: magic, version 2.4, GMT offset, accuracy, snaplen, link */
	wt_util_put_le32(gh, 0xa1b2c3d4u);
	wt_util_put_le16(gh + 4, 2);
	wt_util_put_le16(gh + 6, 4);
	wt_util_put_le32(gh + 8, 0);
	wt_util_put_le32(gh + 12, 0);
	wt_util_put_le32(gh + 16, 65535);
	wt_util_put_le32(gh + 20, 1); /* LINKTYPE_ETHERNET */
	fwrite(gh, 1, sizeof(gh), fp);
	return fp;
}

static void pcap_record(FILE *fp, size_t i, const uint8_t *f, size_t len)
{
	uint8_t rh[16];

	wt_util_put_le32(rh, (uint32_t)(1700000000u + i));
	wt_util_put_le32(rh + 4, (uint32_t)(i * 1000 % 1000000));
	wt_util_put_le32(rh + 8, (uint32_t)len);
	wt_util_put_le32(rh + 12, (uint32_t)len);
	fwrite(rh, 1, sizeof(rh), fp);
	fwrite(f, 1, len, fp);
}

static int pcap_close(FILE *fp, const char *path)
{
	if (fclose(fp) != 0) {
		fprintf(stderr, "cannot write %s: %s\n", path, strerror(errno));
		return 1;
	}
	return 0;
}

static int write_hw(const char *path)
{
	FILE *fp = pcap_open(path);

	if (fp == NULL)
		return 1;
	pcap_record(fp, 0, hw_cnp, sizeof(hw_cnp));
	return pcap_close(fp, path);
}

static int write_pcap(const char *path)
{
	static uint8_t f[MAX_FRAME];
	FILE *fp = pcap_open(path);
	size_t n = 0;

	if (fp == NULL)
		return 1;
	for (size_t i = 0;; i++) {
		wt_roce_hdr_t h;
		size_t paylen, len = frame_build(i, f, &h, &paylen);

		if (len == 0)
			break;
		if (len == SIZE_MAX)
			continue;
		pcap_record(fp, i, f, len);
		n++;
	}
	if (pcap_close(fp, path) != 0)
		return 1;
	printf("%zu frames written to %s\n", n, path);
	return 0;
}

/* ---- check ---- */

static size_t cur_frame;
static int failures;

static void fail(const char *field, const char *got, const char *want)
{
	if (failures++ < 20)
		fprintf(stderr, "frame %zu: %s is '%s', expected %s\n", cur_frame, field, got,
			want);
}

/* A tshark number field: decimal or 0x hex; -1 when empty or not a number. */
static long long num(const char *s)
{
	char *end;

	if (*s == '\0')
		return -1;
	errno = 0;
	long long v = strtoll(s, &end, 0);

	return (errno != 0 || *end != '\0') ? -1 : v;
}

static void want_num(char **f, int idx, const char *name, long long want)
{
	char buf[64];

	if (num(f[idx]) != want) {
		snprintf(buf, sizeof(buf), "%lld (0x%llx)", want, want);
		fail(name, f[idx], buf);
	}
}

static void want_empty(char **f, int idx, const char *name)
{
	if (f[idx][0] != '\0')
		fail(name, f[idx], "nothing");
}

/* tshark 4.0 prints booleans as 1/0 in -T fields output; older ones say True/False. */
static void want_bool(char **f, int idx, const char *name, int want)
{
	const char *s = f[idx];
	int v = (strcmp(s, "1") == 0 || strcmp(s, "True") == 0)	   ? 1
		: (strcmp(s, "0") == 0 || strcmp(s, "False") == 0) ? 0
								   : -1;

	if (v != want)
		fail(name, s, want ? "true" : "false");
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Payload bytes as tshark prints them (hex, with or without ':' separators). Wireshark
 * hands payload and pad together to the data dissector: the pad must be zeros. */
static void want_payload(const char *s, size_t i, size_t paylen)
{
	size_t k = 0, pad = (4 - paylen % 4) % 4;

	while (*s != '\0') {
		if (*s == ':') {
			s++;
			continue;
		}
		int hi = hexval(s[0]), lo = s[1] ? hexval(s[1]) : -1;

		if (hi < 0 || lo < 0) {
			fail("data.data", "(not hex)", "payload bytes");
			return;
		}
		uint8_t want = k < paylen ? payload_byte(i, k) : 0;

		if (k >= paylen + pad || (uint8_t)(hi << 4 | lo) != want) {
			char at[64];

			snprintf(at, sizeof(at), "byte %zu", k);
			fail("data.data", at, "the bytes sent, then zero pad");
			return;
		}
		k++;
		s += 2;
	}
	if (k != paylen + pad) {
		char got[32], want[32];

		snprintf(got, sizeof(got), "%zu bytes", k);
		snprintf(want, sizeof(want), "%zu bytes", paylen + pad);
		fail("data.data length", got, want);
	}
}

static void check_line(char **f, size_t i, const wt_roce_hdr_t *h, size_t paylen,
		       const uint8_t *frame, size_t len)
{
	int reth = h->opcode == WT_ROCE_OP_WRITE_FIRST || h->opcode == WT_ROCE_OP_WRITE_ONLY;
	int aeth = h->opcode == WT_ROCE_OP_ACKNOWLEDGE;

	if (strstr(f[F_PROTOCOLS], "eth:ethertype:ip:udp:infiniband") == NULL)
		fail("frame.protocols", f[F_PROTOCOLS], "eth:ethertype:ip:udp:infiniband...");
	want_num(f, F_IP_CSUM_STATUS, "ip.checksum.status", 1); /* 1 = good */
	want_num(f, F_UDP_DPORT, "udp.dstport", WT_ROCE_UDP_PORT);
	want_num(f, F_OPCODE, "infiniband.bth.opcode", h->opcode);
	want_bool(f, F_SE, "infiniband.bth.se", 0);
	want_bool(f, F_M, "infiniband.bth.m", 0);
	want_num(f, F_PADCNT, "infiniband.bth.padcnt", (long long)((4 - paylen % 4) % 4));
	want_num(f, F_TVER, "infiniband.bth.tver", 0);
	want_num(f, F_PKEY, "infiniband.bth.p_key", h->pkey ? h->pkey : 0xffff);
	want_num(f, F_DESTQP, "infiniband.bth.destqp", h->dst_qp);
	want_bool(f, F_ACKREQ, "infiniband.bth.a", h->ack_req != 0);
	want_num(f, F_PSN, "infiniband.bth.psn", h->psn);
	if (reth) {
		want_num(f, F_RETH_VA, "infiniband.reth.va", (long long)h->va);
		want_num(f, F_RETH_RKEY, "infiniband.reth.r_key", h->rkey);
		want_num(f, F_RETH_DMALEN, "infiniband.reth.dmalen", h->dma_len);
	} else {
		want_empty(f, F_RETH_VA, "infiniband.reth.va");
	}
	if (aeth) {
		want_num(f, F_AETH_SYNDROME, "infiniband.aeth.syndrome", h->syndrome);
		want_num(f, F_AETH_MSN, "infiniband.aeth.msn", h->msn);
	} else {
		want_empty(f, F_AETH_SYNDROME, "infiniband.aeth.syndrome");
	}
	want_payload(f[F_PAYLOAD], i, paylen);
	/* Wireshark reads the ICRC field big-endian; weft sends it least significant byte
	 * first, so the number tshark shows is the wire bytes in order. */
	want_num(f, F_ICRC, "infiniband.invariant.crc", wt_util_get_be32(frame + len - 4));
	if (strcmp(f[F_ICRC_STATUS], "good") != 0)
		fail("roce_icrc.status", f[F_ICRC_STATUS], "good");
	want_num(f, F_ICRC_COMPUTED, "roce_icrc.computed", wt_util_get_le32(frame + len - 4));
	want_empty(f, F_MALFORMED, "_ws.malformed");
	want_empty(f, F_EXPERT_SEVERITY, "_ws.expert.severity");
}

static int check(void)
{
	static uint8_t frame[MAX_FRAME];
	static char line[1 << 16];
	size_t i = 0, nlines = 0;

	while (fgets(line, sizeof(line), stdin) != NULL) {
		char *f[F_COUNT], *s = line;
		int n = 0;

		line[strcspn(line, "\r\n")] = '\0';
		for (;;) {
			char *tab = strchr(s, '\t');

			if (n < F_COUNT)
				f[n] = s;
			n++;
			if (tab == NULL)
				break;
			*tab = '\0';
			s = tab + 1;
		}
		nlines++;
		if (n != F_COUNT) {
			fprintf(stderr, "line %zu: %d fields, expected %d\n", nlines, n, F_COUNT);
			return 1;
		}
		/* the frame this line describes: skip the set's holes as the writer did */
		wt_roce_hdr_t h;
		size_t paylen, len;

		while ((len = frame_build(i, frame, &h, &paylen)) == SIZE_MAX)
			i++;
		if (len == 0) {
			fprintf(stderr, "tshark printed more frames than were written\n");
			return 1;
		}
		cur_frame = nlines;
		want_num(f, F_NUMBER, "frame.number", (long long)nlines);
		check_line(f, i, &h, paylen, frame, len);
		i++;
	}
	size_t expect = 0;

	for (size_t k = 0;; k++) {
		wt_roce_hdr_t h;
		size_t paylen;
		int r = frame_spec(k, &h, &paylen);

		if (r == 0)
			break;
		expect += r > 0;
	}
	if (nlines != expect) {
		fprintf(stderr, "tshark printed %zu frames, %zu were written\n", nlines, expect);
		return 1;
	}
	if (failures) {
		fprintf(stderr, "%d mismatches\n", failures);
		return 1;
	}
	printf("%zu frames decoded by tshark as RoCEv2 exactly as built, ICRC good\n", nlines);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && strcmp(argv[1], "write") == 0)
		return write_pcap(argv[2]);
	if (argc == 3 && strcmp(argv[1], "write-hw") == 0)
		return write_hw(argv[2]);
	if (argc == 2 && strcmp(argv[1], "check") == 0)
		return check();
	fprintf(stderr, "usage: %s write FILE | write-hw FILE | check < tshark-fields\n", argv[0]);
	return 2;
}
