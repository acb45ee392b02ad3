/* The channel's reliability protocol (layers/channel): a link that wraps an unreliable
 * link and makes it reliable and ordered per peer (see rel.h; wire format in rel_wire.h).
 * Single-threaded like every link: the owner serialises calls. No timer thread: timers
 * run inside poll(), and timer_ms() tells a sleeping caller when to come back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "layers/channel/rel.h"
#include "layers/channel/rel_wire.h"
#include "lib/util/crc32c.h"
#include "lib/util/log.h"
#include "lib/util/time.h"

/* Default timeouts. The initial RTO (before any sample) covers a loopback or LAN round
 * trip plus a peer that is busy for a moment without firing at the first hiccup. The
 * minimum is what matters on a 2-core box running 8 processes: a peer that is runnable
 * may wait a CFS slice or two (3 ms each) before it reads and acks, and an RTO below that
 * turns every such wait into a spurious retransmission and a halved window; 5 ms still
 * recovers a lost last fragment quickly. The maximum bounds backoff so that a peer that
 * was stalled for seconds is served again within a second; declaring it dead is the
 * channel's heartbeat's job, not this layer's. */
#define REL_RTO_INIT_US 20000u
#define REL_RTO_MIN_US 5000u
#define REL_RTO_MAX_US 1000000u
/* timer_ms() has millisecond resolution, so a timer may fire up to 1 ms late: the RTO
 * keeps that much slack above SRTT (RFC 6298's G). */
#define REL_CLOCK_G_US 1000u
#define REL_MAX_WINDOW 16384u
#define REL_INIT_CWND 32u
#define REL_MIN_CWND 2u
#define REL_DUPTHRESH 3u
#define REL_IOV_INLINE 8 /* header + 7 caller iovs without a heap array */
#define REL_MAX_IOV 1024
#define REL_INNER_BATCH 64
#define REL_CTL_CHUNK 32
#define REL_CTL_MAX 4096
#define REL_BUF_CHUNK 16
/* Reorder buffers, shared by all peers, are made as needed up to this many bytes (at
 * least REL_POOL_MIN buffers); beyond, out-of-order frames are dropped and resent. */
#define REL_POOL_BYTES (32u << 20)
#define REL_POOL_MIN 16
#define REL_HELLO_LABEL "weft-rel-hello-v1"

enum { CK_DATA = 0x52454c44, CK_CTL = 0x52454c43 };

/* What the inner link gets as cookie: tells a data slot from a control buffer. */
struct rel_ck {
	uint32_t kind;
	int peer;
};

/* One frame of the send window. Its header buffer is rewritten for every transmission,
 * so a frame is never sent again while the inner link still holds a transmission. */
struct tx_slot {
	struct rel_ck ck; /* first: the inner cookie points here */
	uint64_t seq;
	void *cookie; /* the caller's */
	struct iovec *iov;
	int iovcnt; /* including iov[0], the header */
	int heap_cap;
	struct iovec *heap;
	size_t len;
	uint64_t tx_ns; /* last transmission */
	uint32_t pcrc;
	uint16_t held; /* transmissions the inner link still holds */
	uint8_t sent, retx, sacked, lost;
	struct iovec inl[REL_IOV_INLINE];
	uint8_t hdr[WT_REL_HDR_LEN];
};

/* A received frame copied out of the inner link (out of order, or no room to hand it
 * over at once). */
struct rel_buf {
	struct rel_buf *next;
	size_t len;
	/* data follows, 16-byte aligned */
};

struct rx_slot {
	struct rel_buf *buf;
	uint64_t seq;
};

struct rel_ctl {
	struct rel_ck ck; /* first */
	struct rel_ctl *next;
	struct iovec iov[2];
	uint8_t buf[WT_REL_HDR_LEN + WT_REL_PROOF_LEN];
};

struct rel_chunk {
	struct rel_chunk *next;
};

struct rel_peer {
	struct tx_slot *tx; /* NULL until connect() or a valid HELLO */
	struct rx_slot *rx;
	uint8_t connected, knows_us, dead, err_pending, hello_due, ack_due, in_work, warned_proof;
	weft_status_t err_st;
	uint64_t peer_epoch, peer_isn, my_isn;
	uint64_t hello_deadline, hello_rto_us;
	/* send side: [snd_rep, snd_una) acked, SEND_DONE not yet reported; [snd_una, snd_tx)
	 * in flight; [snd_tx, snd_nxt) accepted, never sent */
	uint64_t snd_rep, snd_una, snd_tx, snd_nxt;
	uint32_t cwnd, ssthresh, ca_acc, adv;
	uint32_t nsacked, nlost, dupacks;
	uint8_t in_recovery, have_rtt;
	uint64_t recover;
	uint64_t rto_us, srtt_us, rttvar_us, rto_deadline;
	uint64_t tlp_deadline; /* tail loss probe, 0 = none */
	uint8_t tlp_done;      /* one probe per stall */
	/* receive side: [rcv_dlv, rcv_nxt) buffered and in order, not yet handed out;
	 * beyond rcv_nxt, out of order ones; accepted: [rcv_nxt, rcv_dlv + window) */
	uint64_t rcv_nxt, rcv_dlv;
	uint32_t adv_sent;
	uint32_t nooo; /* frames held beyond rcv_nxt (none: no sack to compute) */
	uint64_t retransmits, timeouts, drops, duplicates, corrupt, rejected;
};

struct wt_link {
	wt_link_base_t base; /* first, as every link */
	wt_link_ops_t ops;
	wt_link_t *inner;
	const wt_link_ops_t *iops;
	int rank, size;
	wt_util_key_t key;
	uint64_t epoch;
	uint32_t window, wmask;
	uint64_t rto_init_us, rto_min_us, rto_max_us;
	uint64_t isn_cfg;
	size_t max_payload;
	struct rel_peer *peers;
	int *active, nactive; /* peers with state */
	int *work, nwork;     /* peers that may have something to do in poll */
	uint64_t next_timer;  /* earliest deadline over peers, UINT64_MAX if none */
	weft_status_t inner_err;
	struct rel_buf *buf_free, *buf_release;
	size_t buf_stride, nbufs, max_bufs;
	struct rel_chunk *buf_chunks;
	struct rel_ctl *ctl_free;
	size_t nctl;
	struct rel_chunk *ctl_chunks;
	wt_link_event_t tmp[REL_INNER_BATCH];
};

static int rel_poll(wt_link_t *l, wt_link_event_t *ev, int max);

/* ---- small helpers ---- */

static inline int seq_lt(uint64_t a, uint64_t b)
{
	return (int64_t)(a - b) < 0;
}

static inline int seq_ge(uint64_t a, uint64_t b)
{
	return !seq_lt(a, b);
}

static inline uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

static inline uint8_t *buf_data(struct rel_buf *b)
{
	return (uint8_t *)b + sizeof(struct rel_buf);
}

static inline struct tx_slot *txs(const wt_link_t *l, const struct rel_peer *p, uint64_t seq)
{
	return &p->tx[seq & l->wmask];
}

static inline struct rx_slot *rxs(const wt_link_t *l, const struct rel_peer *p, uint64_t seq)
{
	return &p->rx[seq & l->wmask];
}

static inline int established(const struct rel_peer *p)
{
	return p->tx != NULL && !p->dead && p->peer_epoch != 0 && p->knows_us;
}

/* Frames we may have in flight: our limit, congestion, and the receiver's room (never
 * below one, so a closed window is probed by the retransmission timer). */
static uint32_t eff_window(const wt_link_t *l, const struct rel_peer *p)
{
	uint32_t w = l->window;

	if (p->cwnd < w)
		w = p->cwnd;
	if (p->adv < w)
		w = p->adv > 0 ? p->adv : 1;
	return w;
}

/* What we tell the peer: slots beyond our ack that we can still take. */
static uint32_t adv_now(const wt_link_t *l, const struct rel_peer *p)
{
	return l->window - (uint32_t)(p->rcv_nxt - p->rcv_dlv);
}

static void timer_note(wt_link_t *l, uint64_t deadline)
{
	if (deadline != 0 && deadline < l->next_timer)
		l->next_timer = deadline;
}

static void work_add(wt_link_t *l, int pi)
{
	struct rel_peer *p = &l->peers[pi];

	if (p->in_work)
		return;
	p->in_work = 1;
	l->work[l->nwork++] = pi;
}

/* ---- pools ---- */

static struct rel_ctl *ctl_get(wt_link_t *l)
{
	if (l->ctl_free == NULL && l->nctl < REL_CTL_MAX) {
		struct rel_chunk *c =
		    malloc(sizeof(struct rel_chunk) + REL_CTL_CHUNK * sizeof(struct rel_ctl) + 64);

		if (c == NULL)
			return NULL;
		c->next = l->ctl_chunks;
		l->ctl_chunks = c;
		struct rel_ctl *arr = (struct rel_ctl *)((char *)c + 64);

		for (int i = 0; i < REL_CTL_CHUNK; i++) {
			arr[i].ck.kind = CK_CTL;
			arr[i].next = l->ctl_free;
			l->ctl_free = &arr[i];
		}
		l->nctl += REL_CTL_CHUNK;
	}
	struct rel_ctl *c = l->ctl_free;

	if (c != NULL)
		l->ctl_free = c->next;
	return c;
}

static void ctl_put(wt_link_t *l, struct rel_ctl *c)
{
	c->next = l->ctl_free;
	l->ctl_free = c;
}

static struct rel_buf *buf_get(wt_link_t *l)
{
	if (l->buf_free == NULL && l->nbufs < l->max_bufs) {
		struct rel_chunk *c = malloc(64 + REL_BUF_CHUNK * l->buf_stride);

		if (c == NULL)
			return NULL;
		c->next = l->buf_chunks;
		l->buf_chunks = c;
		for (int i = 0; i < REL_BUF_CHUNK; i++) {
			struct rel_buf *b = (struct rel_buf *)((char *)c + 64 + i * l->buf_stride);

			b->next = l->buf_free;
			l->buf_free = b;
		}
		l->nbufs += REL_BUF_CHUNK;
	}
	struct rel_buf *b = l->buf_free;

	if (b != NULL)
		l->buf_free = b->next;
	return b;
}

static void buf_put(wt_link_t *l, struct rel_buf *b)
{
	b->next = l->buf_free;
	l->buf_free = b;
}

/* Buffers handed out by the last poll are the caller's until this one. */
static void buf_release_all(wt_link_t *l)
{
	while (l->buf_release != NULL) {
		struct rel_buf *b = l->buf_release;

		l->buf_release = b->next;
		buf_put(l, b);
	}
}

static void free_chunks(struct rel_chunk *c)
{
	while (c != NULL) {
		struct rel_chunk *n = c->next;

		free(c);
		c = n;
	}
}

/* ---- peers ---- */

static uint64_t random_nonzero(void)
{
	uint64_t v = 0;

	while (v == 0)
		wt_util_random(&v, sizeof(v));
	return v;
}

static weft_status_t peer_setup(wt_link_t *l, int pi)
{
	struct rel_peer *p = &l->peers[pi];
	size_t n = (size_t)l->wmask + 1;

	if (p->tx != NULL)
		return WEFT_OK;
	p->tx = calloc(n, sizeof(*p->tx));
	p->rx = calloc(n, sizeof(*p->rx));
	if (p->tx == NULL || p->rx == NULL) {
		free(p->tx);
		free(p->rx);
		p->tx = NULL;
		p->rx = NULL;
		WT_ERROR("rel: out of memory for the window of peer rank %d (%zu slots)", pi, n);
		return WEFT_ERR_NO_MEMORY;
	}
	for (size_t i = 0; i < n; i++) {
		p->tx[i].ck.kind = CK_DATA;
		p->tx[i].ck.peer = pi;
	}
	p->my_isn = l->isn_cfg != 0 ? l->isn_cfg : random_nonzero();
	p->snd_rep = p->snd_una = p->snd_tx = p->snd_nxt = p->my_isn;
	p->cwnd = l->window < REL_INIT_CWND ? l->window : REL_INIT_CWND;
	p->ssthresh = l->window;
	p->adv = l->window;
	p->rto_us = l->rto_init_us;
	p->hello_rto_us = l->rto_init_us;
	l->active[l->nactive++] = pi;
	return WEFT_OK;
}

static void drop_rx(wt_link_t *l, struct rel_peer *p)
{
	for (uint32_t i = 0; i <= l->wmask; i++)
		if (p->rx[i].buf != NULL) {
			buf_put(l, p->rx[i].buf);
			p->rx[i].buf = NULL;
		}
	p->rcv_dlv = p->rcv_nxt;
	p->nooo = 0;
}

/* The peer is gone for good: tell the caller once, then hand back its frames. */
static void peer_fail(wt_link_t *l, int pi, weft_status_t st)
{
	struct rel_peer *p = &l->peers[pi];

	if (p->dead)
		return;
	p->dead = 1;
	p->err_st = wt_util_is_err(st) ? st : WEFT_ERR_PEER_FAILED;
	p->err_pending = 1;
	p->hello_deadline = 0;
	p->rto_deadline = 0;
	p->tlp_deadline = 0;
	p->ack_due = 0;
	p->hello_due = 0;
	if (p->rx != NULL)
		drop_rx(l, p);
	work_add(l, pi);
}

/* ---- transmission ---- */

static uint64_t sack_bits(const wt_link_t *l, const struct rel_peer *p)
{
	uint64_t bits = 0;

	if (p->nooo == 0)
		return 0;
	for (int i = 0; i < 64; i++) {
		uint64_t s = p->rcv_nxt + 1 + (uint64_t)i;

		if (s - p->rcv_dlv >= l->window)
			break;
		const struct rx_slot *r = rxs(l, p, s);

		if (r->buf != NULL && r->seq == s)
			bits |= 1ull << i;
	}
	return bits;
}

static void hdr_common(const wt_link_t *l, int pi, const struct rel_peer *p, wt_rel_hdr_t *h,
		       uint8_t type)
{
	memset(h, 0, sizeof(*h));
	h->version = WT_REL_WIRE_VERSION;
	h->type = type;
	h->src = (uint32_t)l->rank;
	h->dst = (uint32_t)pi;
	h->src_epoch = l->epoch;
	h->dst_epoch = p->peer_epoch;
	if (p->peer_epoch != 0) {
		h->ack = p->rcv_nxt;
		h->sack = sack_bits(l, p);
	}
	h->window = adv_now(l, p);
}

static void put_le(uint8_t *p, uint64_t v, int bytes)
{
	for (int i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* The proof covers everything a forged HELLO could change: both ranks, both epochs and
 * the ISN, in a fixed little-endian layout. */
static void proof_msg(uint8_t msg[32], uint32_t src, uint32_t dst, uint64_t src_epoch,
		      uint64_t dst_epoch, uint64_t isn)
{
	put_le(msg, src, 4);
	put_le(msg + 4, dst, 4);
	put_le(msg + 8, src_epoch, 8);
	put_le(msg + 16, dst_epoch, 8);
	put_le(msg + 24, isn, 8);
}

static void hello_proof(const wt_link_t *l, const wt_rel_hdr_t *h, uint8_t mac[WT_UTIL_MAC_LEN])
{
	uint8_t msg[32];

	proof_msg(msg, h->src, h->dst, h->src_epoch, h->dst_epoch, h->seq);
	wt_util_mac(&l->key, REL_HELLO_LABEL, msg, sizeof(msg), NULL, 0, mac);
}

static void ack_sent(wt_link_t *l, struct rel_peer *p)
{
	p->ack_due = 0;
	p->adv_sent = adv_now(l, p);
}

/* Hands one frame to the inner link, telling a driver that maps reliability state onto
 * its own wire headers (send_info) what the frame is: the kind, and seq and ack as the
 * header h carries them (DATA: its sequence number; HELLO: our ISN; ACK: 0). */
static weft_status_t inner_send(wt_link_t *l, int pi, const struct iovec *iov, int iovcnt, void *ck,
				const wt_rel_hdr_t *h, int ack_req)
{
	wt_link_frame_info_t info = {.seq = h->seq, .ack = h->ack, .ack_req = ack_req};

	if (h->type == WT_REL_PKT_DATA)
		info.kind = WT_LINK_FRAME_DATA;
	else if (h->type == WT_REL_PKT_ACK)
		info.kind = WT_LINK_FRAME_ACK;
	else
		info.kind = WT_LINK_FRAME_CTRL;
	return wt_link_send_info(l->inner, pi, iov, iovcnt, ck, &info);
}

/* Sends a HELLO or an ACK. WEFT_OK, WT_AGAIN (try later) or the inner link's error. */
static weft_status_t tx_ctl(wt_link_t *l, int pi, uint8_t type)
{
	struct rel_peer *p = &l->peers[pi];
	struct rel_ctl *c = ctl_get(l);
	wt_rel_hdr_t h;
	int iovcnt = 1;

	if (c == NULL)
		return WT_AGAIN;
	c->ck.peer = pi;
	hdr_common(l, pi, p, &h, type);
	if (type == WT_REL_PKT_HELLO) {
		uint8_t *proof = c->buf + WT_REL_HDR_LEN;

		h.flags = p->knows_us ? 0 : WT_REL_FL_WANT_REPLY;
		h.seq = p->my_isn;
		h.len = WT_REL_PROOF_LEN;
		hello_proof(l, &h, proof);
		h.payload_crc = wt_util_crc32c(0, proof, WT_REL_PROOF_LEN);
		c->iov[1].iov_base = proof;
		c->iov[1].iov_len = WT_REL_PROOF_LEN;
		iovcnt = 2;
	}
	wt_rel_hdr_encode(&h, c->buf);
	c->iov[0].iov_base = c->buf;
	c->iov[0].iov_len = WT_REL_HDR_LEN;
	weft_status_t st =
	    inner_send(l, pi, c->iov, iovcnt, &c->ck, &h, (h.flags & WT_REL_FL_WANT_REPLY) != 0);

	if (st != WEFT_INPROGRESS)
		ctl_put(l, c);
	if (st == WEFT_OK || st == WEFT_INPROGRESS) {
		if (type == WT_REL_PKT_ACK) /* a HELLO's ack fields are not read */
			ack_sent(l, p);
		return WEFT_OK;
	}
	if (st == WT_AGAIN)
		return WT_AGAIN;
	WT_ERROR("rel: link %s could not send a %s to peer rank %d (status %d)", l->iops->name,
		 wt_rel_pkt_name(type), pi, (int)st);
	peer_fail(l, pi, st);
	return wt_util_is_err(st) ? st : WEFT_ERR_SYSTEM;
}

static void send_ack(wt_link_t *l, int pi)
{
	struct rel_peer *p = &l->peers[pi];

	if (!established(p)) {
		return;
	}
	if (tx_ctl(l, pi, WT_REL_PKT_ACK) == WT_AGAIN) {
		p->ack_due = 1;
		work_add(l, pi);
	}
}

static uint32_t payload_crc(const struct tx_slot *s)
{
	uint32_t c = 0;

	for (int i = 1; i < s->iovcnt; i++)
		c = wt_util_crc32c(c, s->iov[i].iov_base, s->iov[i].iov_len);
	return c;
}

/* (Re)starts the retransmission timer, and ahead of it the tail loss probe: after about
 * two round trips without an ack, one frame is sent again so that a lost tail or a lost
 * ack costs a probe instead of an RTO and a halved window (RFC 8985). A spurious probe
 * costs one duplicate frame and nothing else, so its floor is a quarter of the RTO's:
 * a small window after random loss stalls at the end of every flight, and each stall
 * costs this long. */
static void rto_arm(wt_link_t *l, struct rel_peer *p, uint64_t now)
{
	p->rto_deadline = now + p->rto_us * 1000;
	timer_note(l, p->rto_deadline);
	p->tlp_deadline = 0;
	if (p->tlp_done || !p->have_rtt)
		return;
	uint64_t pto = 2 * p->srtt_us + REL_CLOCK_G_US;

	if (pto < l->rto_min_us / 4)
		pto = l->rto_min_us / 4;
	if (pto >= p->rto_us)
		return;
	p->tlp_deadline = now + pto * 1000;
	timer_note(l, p->tlp_deadline);
}

/* Transmits one window slot (first time or again). WEFT_OK, WT_AGAIN, or an error (the
 * peer has then failed). */
static weft_status_t tx_data(wt_link_t *l, int pi, struct tx_slot *s, uint64_t now)
{
	struct rel_peer *p = &l->peers[pi];
	wt_rel_hdr_t h;

	int integrity = (l->iops->caps & WT_LINK_CAP_INTEGRITY) != 0;

	if (!s->sent && !integrity)
		s->pcrc = payload_crc(s); /* once per frame, not per transmission */
	hdr_common(l, pi, p, &h, WT_REL_PKT_DATA);
	if (integrity)
		h.flags |= WT_REL_FL_NO_PCRC;
	else
		h.payload_crc = s->pcrc;
	h.len = (uint32_t)s->len;
	h.seq = s->seq;
	wt_rel_hdr_encode(&h, s->hdr);
	s->iov[0].iov_base = s->hdr;
	s->iov[0].iov_len = WT_REL_HDR_LEN;
	/* The receiver acks every batch it reads anyway; a prompt ack matters most for a
	 * retransmission, the last frame queued and the one that fills the window. */
	int ack_req =
	    s->sent || s->seq + 1 == p->snd_nxt || s->seq + 1 - p->snd_una >= eff_window(l, p);
	weft_status_t st = inner_send(l, pi, s->iov, s->iovcnt, &s->ck, &h, ack_req);

	if (st == WT_AGAIN)
		return WT_AGAIN;
	if (st != WEFT_OK && st != WEFT_INPROGRESS) {
		WT_ERROR("rel: link %s could not send data frame %llu to peer rank %d (status %d)",
			 l->iops->name, (unsigned long long)s->seq, pi, (int)st);
		peer_fail(l, pi, st);
		return wt_util_is_err(st) ? st : WEFT_ERR_SYSTEM;
	}
	if (st == WEFT_INPROGRESS)
		s->held++;
	if (s->sent) {
		s->retx = 1;
		p->retransmits++;
	}
	s->sent = 1;
	s->tx_ns = now;
	ack_sent(l, p);
	if (p->rto_deadline == 0)
		rto_arm(l, p, now);
	return WEFT_OK;
}

/* Frames in flight as far as congestion goes: sent, not acked, sacked or deemed lost. */
static uint32_t pipe_count(const struct rel_peer *p)
{
	return (uint32_t)(p->snd_tx - p->snd_una) - p->nsacked - p->nlost;
}

static void push_lost(wt_link_t *l, int pi, uint64_t now)
{
	struct rel_peer *p = &l->peers[pi];
	uint32_t pipe = pipe_count(p);

	for (uint64_t q = p->snd_una; q != p->snd_tx && p->nlost > 0 && !p->dead; q++) {
		struct tx_slot *s = txs(l, p, q);

		if (!s->lost || s->held)
			continue;
		/* the oldest hole always goes: it is what holds the window back */
		if (pipe >= p->cwnd && q != p->snd_una)
			break;
		if (tx_data(l, pi, s, now) != WEFT_OK)
			break;
		s->lost = 0;
		p->nlost--;
		pipe++;
	}
}

/* Retransmissions first, then new frames, as far as the window allows. */
static void peer_push(wt_link_t *l, int pi, uint64_t now)
{
	struct rel_peer *p = &l->peers[pi];

	if (!established(p))
		return;
	if (p->nlost > 0)
		push_lost(l, pi, now);
	while (!p->dead && p->snd_tx != p->snd_nxt &&
	       (uint32_t)(p->snd_tx - p->snd_una) < eff_window(l, p)) {
		if (tx_data(l, pi, txs(l, p, p->snd_tx), now) != WEFT_OK)
			break;
		p->snd_tx++;
	}
}

/* ---- acknowledgements (sender side) ---- */

static void rtt_sample(wt_link_t *l, struct rel_peer *p, uint64_t rtt_us)
{
	if (!p->have_rtt) {
		p->srtt_us = rtt_us;
		p->rttvar_us = rtt_us / 2;
		p->have_rtt = 1;
	} else {
		uint64_t d = p->srtt_us > rtt_us ? p->srtt_us - rtt_us : rtt_us - p->srtt_us;

		p->rttvar_us = (3 * p->rttvar_us + d) / 4;
		p->srtt_us = (7 * p->srtt_us + rtt_us) / 8;
	}
	uint64_t var = 4 * p->rttvar_us;
	uint64_t rto = p->srtt_us + (var > REL_CLOCK_G_US ? var : REL_CLOCK_G_US);

	if (rto < l->rto_min_us)
		rto = l->rto_min_us;
	p->rto_us = min_u64(rto, l->rto_max_us);
}

/* Marks a frame for retransmission; a frame already sent again is not judged lost again
 * until an RTT has passed since (once per hole per RTT). */
static int mark_lost(struct rel_peer *p, struct tx_slot *s, uint64_t now, int force)
{
	if (s->sacked || s->lost || !s->sent)
		return 0;
	if (!force && s->retx && now - s->tx_ns < p->srtt_us * 1000)
		return 0;
	s->lost = 1;
	p->nlost++;
	return 1;
}

static void enter_recovery(struct rel_peer *p)
{
	uint32_t half = p->cwnd / 2;

	p->ssthresh = half > REL_MIN_CWND ? half : REL_MIN_CWND;
	p->cwnd = p->ssthresh;
	p->ca_acc = 0;
	p->in_recovery = 1;
	p->recover = p->snd_tx;
}

static void cwnd_grow(wt_link_t *l, struct rel_peer *p, uint32_t acked)
{
	if (p->in_recovery)
		return;
	if (p->cwnd < p->ssthresh) {
		p->cwnd += acked;
	} else {
		p->ca_acc += acked;
		while (p->ca_acc >= p->cwnd) {
			p->ca_acc -= p->cwnd;
			p->cwnd++;
		}
	}
	if (p->cwnd > l->window)
		p->cwnd = l->window;
}

/* RFC 6675's IsLost with a bitmap: an unsacked frame with DUPTHRESH sacked ones above. */
static int sack_scan(wt_link_t *l, struct rel_peer *p, uint64_t now)
{
	uint64_t top = p->snd_tx;
	uint32_t above = 0, thresh = REL_DUPTHRESH;
	uint32_t flight = (uint32_t)(p->snd_tx - p->snd_una);
	int marked = 0;

	/* RFC 5827 early retransmit: with fewer than DUPTHRESH + 1 frames in flight and
	 * nothing new to send, three sacks can never come; one fewer than in flight will do.
	 * A small window is common here, since every loss halves it. */
	if (flight <= REL_DUPTHRESH && p->snd_tx == p->snd_nxt)
		thresh = flight > 1 ? flight - 1 : 1;

	if (top - p->snd_una > 65)
		top = p->snd_una + 65;
	for (uint64_t q = top; q != p->snd_una;) {
		struct tx_slot *s = txs(l, p, --q);

		if (s->sacked)
			above++;
		else if (above >= thresh)
			marked += mark_lost(p, s, now, 0);
	}
	return marked;
}

/* Newly acked frames: the send-done reports they enable come from the work list. */
static void ack_advance(wt_link_t *l, struct rel_peer *p, uint64_t a, uint64_t *best_tx)
{
	for (uint64_t q = p->snd_una; q != a; q++) {
		struct tx_slot *s = txs(l, p, q);

		if (s->sacked)
			p->nsacked--;
		if (s->lost) {
			s->lost = 0;
			p->nlost--;
		}
		if (!s->retx && !s->sacked && s->tx_ns > *best_tx)
			*best_tx = s->tx_ns;
	}
	p->snd_una = a;
}

static int sack_apply(wt_link_t *l, struct rel_peer *p, uint64_t sack, uint64_t *best_tx)
{
	int fresh = 0;

	for (int i = 0; i < 64 && sack != 0; i++, sack >>= 1) {
		uint64_t q = p->snd_una + 1 + (uint64_t)i;

		if (!(sack & 1))
			continue;
		if (q - p->snd_una >= p->snd_tx - p->snd_una)
			break; /* never sent: a bogus bit */
		struct tx_slot *s = txs(l, p, q);

		if (s->sacked)
			continue;
		s->sacked = 1;
		p->nsacked++;
		fresh++;
		if (s->lost) {
			s->lost = 0;
			p->nlost--;
		}
		if (!s->retx && s->tx_ns > *best_tx)
			*best_tx = s->tx_ns;
	}
	return fresh;
}

static void on_ack(wt_link_t *l, int pi, const wt_rel_hdr_t *h, int pure, uint64_t now)
{
	struct rel_peer *p = &l->peers[pi];
	uint64_t a = h->ack;
	uint64_t best_tx = 0;

	if (seq_lt(a, p->snd_una))
		return; /* older than one we have seen: reordered, nothing new */
	if (a - p->snd_una > p->snd_tx - p->snd_una) {
		p->rejected++;
		WT_DEBUG("rel: peer rank %d acked %llu, beyond the %llu frames sent", pi,
			 (unsigned long long)a, (unsigned long long)p->snd_tx);
		return;
	}
	uint32_t newly = (uint32_t)(a - p->snd_una);

	if (newly > 0)
		ack_advance(l, p, a, &best_tx);
	int fresh = sack_apply(l, p, h->sack, &best_tx);
	uint32_t adv = h->window < l->window ? h->window : l->window;
	/* RFC 5681: a window update is not a duplicate ack */
	int dup = pure && newly == 0 && adv == p->adv && p->snd_tx != p->snd_una;

	p->adv = adv;
	/* Karn: only frames never sent twice give a sample */
	if (best_tx != 0 && now > best_tx)
		rtt_sample(l, p, (now - best_tx) / 1000);
	int lost = 0;

	if (newly > 0) {
		p->dupacks = 0;
		cwnd_grow(l, p, newly);
		if (p->in_recovery && seq_ge(p->snd_una, p->recover))
			p->in_recovery = 0;
		p->tlp_done = 0;
		if (p->snd_una == p->snd_tx)
			p->rto_deadline = p->tlp_deadline = 0;
		else
			rto_arm(l, p, now);
	} else if (dup && ++p->dupacks >= REL_DUPTHRESH) {
		lost += mark_lost(p, txs(l, p, p->snd_una), now, 0);
		if (lost)
			p->dupacks = 0;
	}
	/* old sacks are scanned again too: a hole whose retransmission was lost shows up
	 * once an RTT has passed since it */
	if (h->sack != 0 && (fresh > 0 || pure))
		lost += sack_scan(l, p, now);
	if (lost > 0 && !p->in_recovery)
		enter_recovery(p);
	work_add(l, pi);
}

/* ---- events to the caller ---- */

static int emit_frame(wt_link_event_t *ev, int pi, const void *data, size_t len)
{
	memset(ev, 0, sizeof(*ev));
	ev->type = WT_LINK_EV_FRAME;
	ev->peer = pi;
	ev->data = data;
	ev->len = len;
	return 1;
}

/* A lost frame that the window lets go and the inner link does not still hold. */
static int lost_sendable(const wt_link_t *l, const struct rel_peer *p)
{
	int pipe_ok = pipe_count(p) < p->cwnd;

	for (uint64_t q = p->snd_una; q != p->snd_tx; q++) {
		const struct tx_slot *s = txs(l, p, q);

		if (s->lost && !s->held)
			return pipe_ok || q == p->snd_una;
	}
	return 0;
}

static int has_work(const wt_link_t *l, const struct rel_peer *p)
{
	if (p->err_pending)
		return 1;
	if (p->rcv_dlv != p->rcv_nxt)
		return 1;
	uint64_t bound = p->dead ? p->snd_nxt : p->snd_una;

	if (p->snd_rep != bound && txs(l, p, p->snd_rep)->held == 0)
		return 1;
	if (p->dead)
		return 0;
	if (p->hello_due && p->connected)
		return 1;
	if (!established(p))
		return 0;
	if (p->ack_due)
		return 1;
	if (p->nlost > 0 && lost_sendable(l, p))
		return 1;
	return p->snd_tx != p->snd_nxt && (uint32_t)(p->snd_tx - p->snd_una) < eff_window(l, p);
}

static void slot_release(struct tx_slot *s)
{
	s->cookie = NULL;
	s->iov = NULL;
	s->iovcnt = 0;
}

/* In order: frames that are ready, the peer's failure, then send completions. */
static int emit_peer(wt_link_t *l, int pi, wt_link_event_t *ev, int n, int limit)
{
	struct rel_peer *p = &l->peers[pi];

	while (p->rcv_dlv != p->rcv_nxt && n < limit) {
		struct rx_slot *r = rxs(l, p, p->rcv_dlv);
		struct rel_buf *b = r->buf;

		n += emit_frame(&ev[n], pi, buf_data(b), b->len);
		r->buf = NULL;
		b->next = l->buf_release;
		l->buf_release = b;
		p->rcv_dlv++;
		/* the window opened up: say so if the peer may be waiting on it */
		if (adv_now(l, p) >= p->adv_sent + l->window / 4)
			p->ack_due = 1;
	}
	if (p->err_pending && n < limit) {
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_PEER_ERROR;
		ev[n].peer = pi;
		ev[n].status = p->err_st;
		n++;
		p->err_pending = 0;
	}
	if (p->err_pending)
		return n;
	uint64_t bound = p->dead ? p->snd_nxt : p->snd_una;

	while (p->snd_rep != bound && n < limit) {
		struct tx_slot *s = txs(l, p, p->snd_rep);

		if (s->held)
			break;
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_SEND_DONE;
		ev[n].peer = pi;
		ev[n].cookie = s->cookie;
		ev[n].status = p->dead ? p->err_st : WEFT_OK;
		n++;
		slot_release(s);
		p->snd_rep++;
	}
	return n;
}

/* ---- receive ---- */

/* Buffered frames right after rcv_nxt are now in order. */
static void rcv_advance(wt_link_t *l, struct rel_peer *p)
{
	for (;;) {
		struct rx_slot *r = rxs(l, p, p->rcv_nxt);

		if (r->buf == NULL || r->seq != p->rcv_nxt || p->rcv_nxt - p->rcv_dlv >= l->window)
			return;
		p->rcv_nxt++;
		p->nooo--;
	}
}

static int on_data(wt_link_t *l, int pi, const wt_rel_hdr_t *h, const uint8_t *payload,
		   wt_link_event_t *ev, int n, int limit)
{
	struct rel_peer *p = &l->peers[pi];
	uint64_t s = h->seq;

	if (seq_lt(s, p->rcv_nxt)) {
		p->duplicates++;
		send_ack(l, pi);
		return n;
	}
	if (s - p->rcv_dlv >= l->window) {
		p->drops++;
		return n;
	}
	work_add(l, pi);
	if (s == p->rcv_nxt && p->rcv_dlv == p->rcv_nxt && n < limit) {
		n += emit_frame(&ev[n], pi, payload, h->len);
		p->rcv_nxt++;
		p->rcv_dlv++;
		rcv_advance(l, p);
		p->ack_due = 1;
		return n;
	}
	struct rx_slot *r = rxs(l, p, s);

	if (r->buf != NULL && r->seq == s) {
		p->duplicates++;
		send_ack(l, pi);
		return n;
	}
	struct rel_buf *b = buf_get(l);

	if (b == NULL) {
		p->drops++;
		return n;
	}
	memcpy(buf_data(b), payload, h->len);
	b->len = h->len;
	r->buf = b;
	r->seq = s;
	p->nooo++;
	if (s == p->rcv_nxt) {
		p->nooo--;
		p->rcv_nxt++;
		rcv_advance(l, p);
		p->ack_due = 1;
	} else {
		send_ack(l, pi); /* a gap: tell the sender at once */
	}
	return n;
}

static int hello_check(wt_link_t *l, int pi, const wt_rel_hdr_t *h, const uint8_t *proof)
{
	uint8_t msg[32];

	proof_msg(msg, h->src, h->dst, h->src_epoch, h->dst_epoch, h->seq);
	if (wt_util_mac_verify(&l->key, REL_HELLO_LABEL, msg, sizeof(msg), NULL, 0, proof))
		return 1;
	struct rel_peer *p = &l->peers[pi];

	p->rejected++;
	if (!p->warned_proof) {
		p->warned_proof = 1;
		WT_WARN("rel: hello from rank %d on link %s has a bad token proof (another job or "
			"a different WEFT token?); dropped",
			pi, l->iops->name);
	}
	return 0;
}

static void on_hello(wt_link_t *l, int pi, const wt_rel_hdr_t *h, const uint8_t *proof)
{
	struct rel_peer *p = &l->peers[pi];

	if (!hello_check(l, pi, h, proof) || peer_setup(l, pi) != WEFT_OK)
		return;
	if (p->dead) {
		p->rejected++;
		return;
	}
	if (p->peer_epoch == 0) {
		p->peer_epoch = h->src_epoch;
		p->peer_isn = h->seq;
		p->rcv_nxt = p->rcv_dlv = h->seq;
		p->adv = h->window < l->window ? h->window : l->window;
		WT_DEBUG("rel: peer rank %d has epoch %016llx", pi,
			 (unsigned long long)h->src_epoch);
	} else if (p->peer_epoch != h->src_epoch) {
		WT_WARN("rel: peer rank %d restarted (epoch %016llx, now %016llx; ours %016llx): "
			"failing it on link %s",
			pi, (unsigned long long)p->peer_epoch, (unsigned long long)h->src_epoch,
			(unsigned long long)l->epoch, l->iops->name);
		peer_fail(l, pi, WEFT_ERR_PEER_FAILED);
		return;
	} else if (h->seq != p->peer_isn) {
		p->rejected++; /* same epoch, different ISN: not from an honest peer */
		return;
	}
	if (h->dst_epoch == l->epoch && !p->knows_us) {
		p->knows_us = 1;
		p->hello_deadline = 0;
	}
	if (h->dst_epoch != l->epoch || (h->flags & WT_REL_FL_WANT_REPLY))
		p->hello_due = 1;
	work_add(l, pi);
}

/* DATA and ACK must come from the peer's current epoch to ours. */
static int epochs_ok(const wt_link_t *l, struct rel_peer *p, const wt_rel_hdr_t *h)
{
	if (p->tx == NULL || p->dead || p->peer_epoch == 0 || h->src_epoch != p->peer_epoch ||
	    h->dst_epoch != l->epoch) {
		p->rejected++;
		return 0;
	}
	return 1;
}

static int on_frame(wt_link_t *l, const wt_link_event_t *e, wt_link_event_t *ev, int n, int limit,
		    uint64_t now)
{
	int pi = e->peer;
	wt_rel_hdr_t h;

	if (pi < 0 || pi >= l->size) {
		WT_DEBUG("rel: link %s reported a frame from rank %d, outside the world",
			 l->iops->name, pi);
		return n;
	}
	struct rel_peer *p = &l->peers[pi];
	const char *why = wt_rel_hdr_decode(e->data, e->len, &h);

	if (why != NULL) {
		p->corrupt++;
		WT_DEBUG("rel: frame from rank %d dropped: %s", pi, why);
		return n;
	}
	if (h.src != (uint32_t)pi || h.dst != (uint32_t)l->rank) {
		p->rejected++;
		WT_DEBUG("rel: frame claims rank %u -> %u but came from rank %d to %d", h.src,
			 h.dst, pi, l->rank);
		return n;
	}
	const uint8_t *payload = (const uint8_t *)e->data + WT_REL_HDR_LEN;

	if (h.type == WT_REL_PKT_HELLO) {
		on_hello(l, pi, &h, payload);
		return n;
	}
	if (!epochs_ok(l, p, &h))
		return n;
	if (h.len > l->max_payload) {
		p->corrupt++;
		return n;
	}
	if (!p->knows_us) {
		p->knows_us = 1; /* it wrote our epoch: it knows it */
		p->hello_deadline = 0;
	}
	on_ack(l, pi, &h, h.type == WT_REL_PKT_ACK, now);
	if (h.type == WT_REL_PKT_DATA)
		n = on_data(l, pi, &h, payload, ev, n, limit);
	/* hand over what became ready now, so later frames of this batch can go direct */
	return emit_peer(l, pi, ev, n, limit);
}

static int emit_all(wt_link_t *l, wt_link_event_t *ev, int n, int max)
{
	for (int i = 0; i < l->nwork && n < max; i++)
		n = emit_peer(l, l->work[i], ev, n, max);
	return n;
}

static int on_inner(wt_link_t *l, const wt_link_event_t *e, wt_link_event_t *ev, int n, int limit,
		    uint64_t now)
{
	if (e->type == WT_LINK_EV_FRAME)
		return on_frame(l, e, ev, n, limit, now);
	if (e->type == WT_LINK_EV_SEND_DONE) {
		const struct rel_ck *ck = e->cookie;

		if (ck == NULL)
			return n;
		if (ck->kind == CK_CTL) {
			ctl_put(l, (struct rel_ctl *)e->cookie);
		} else if (ck->kind == CK_DATA && ck->peer >= 0 && ck->peer < l->size) {
			struct tx_slot *s = (struct tx_slot *)e->cookie;

			if (s->held > 0)
				s->held--;
			work_add(l, ck->peer);
		}
		return n;
	}
	if (e->type != WT_LINK_EV_PEER_ERROR || e->peer < 0 || e->peer >= l->size)
		return n;
	struct rel_peer *p = &l->peers[e->peer];

	if (p->tx != NULL) {
		peer_fail(l, e->peer, e->status);
		return emit_peer(l, e->peer, ev, n, limit);
	}
	ev[n] = *e; /* never set up here: pass it on */
	return n + 1;
}

/* ---- timers ---- */

static void on_rto(wt_link_t *l, int pi, uint64_t now)
{
	struct rel_peer *p = &l->peers[pi];
	uint64_t old_ns = p->rto_us * 1000;

	if (p->snd_una == p->snd_tx) {
		p->rto_deadline = 0;
		return;
	}
	p->timeouts++;
	p->rto_us = min_u64(p->rto_us * 2, l->rto_max_us);
	mark_lost(p, txs(l, p, p->snd_una), now, 1);
	for (uint64_t q = p->snd_una + 1; q != p->snd_tx; q++) {
		struct tx_slot *s = txs(l, p, q);

		if (now - s->tx_ns >= old_ns)
			mark_lost(p, s, now, 1);
	}
	/* Halve rather than collapse to one frame: on a busy host most expiries are a
	 * descheduled peer, not a congested network. */
	enter_recovery(p);
	p->rto_deadline = now + p->rto_us * 1000;
	p->tlp_deadline = 0;
	p->tlp_done = 1; /* the retransmissions are the probes now */
	work_add(l, pi);
}

/* The tail loss probe: the newest frame the peer has not sacked goes again. */
static void on_probe(wt_link_t *l, int pi, uint64_t now)
{
	struct rel_peer *p = &l->peers[pi];

	p->tlp_deadline = 0;
	if (!established(p) || p->snd_una == p->snd_tx)
		return;
	p->tlp_done = 1;
	for (uint64_t q = p->snd_tx; q != p->snd_una;) {
		struct tx_slot *s = txs(l, p, --q);

		if (s->sacked || s->held)
			continue;
		if (tx_data(l, pi, s, now) == WEFT_OK && s->lost) {
			s->lost = 0;
			p->nlost--;
		}
		return;
	}
}

/* Deadlines only ever move later or vanish between runs, so the cached minimum may be
 * early; a caller about to sleep gets the exact one. */
static uint64_t next_deadline(wt_link_t *l)
{
	uint64_t next = UINT64_MAX;

	for (int i = 0; i < l->nactive; i++) {
		const struct rel_peer *p = &l->peers[l->active[i]];

		if (p->hello_deadline != 0 && p->hello_deadline < next)
			next = p->hello_deadline;
		if (p->rto_deadline != 0 && p->rto_deadline < next)
			next = p->rto_deadline;
		if (p->tlp_deadline != 0 && p->tlp_deadline < next)
			next = p->tlp_deadline;
	}
	l->next_timer = next;
	return next;
}

static void run_timers(wt_link_t *l, uint64_t now)
{
	for (int i = 0; i < l->nactive; i++) {
		int pi = l->active[i];
		struct rel_peer *p = &l->peers[pi];

		if (p->dead)
			continue;
		if (p->hello_deadline != 0 && now >= p->hello_deadline) {
			if (tx_ctl(l, pi, WT_REL_PKT_HELLO) == WEFT_OK)
				p->hello_rto_us = min_u64(p->hello_rto_us * 2, l->rto_max_us);
			p->hello_deadline = p->dead ? 0 : now + p->hello_rto_us * 1000;
		}
		if (p->rto_deadline != 0 && now >= p->rto_deadline)
			on_rto(l, pi, now);
		else if (p->tlp_deadline != 0 && now >= p->tlp_deadline)
			on_probe(l, pi, now);
	}
	next_deadline(l);
}

/* ---- poll ---- */

static void peer_service(wt_link_t *l, int pi, uint64_t now)
{
	struct rel_peer *p = &l->peers[pi];

	if (p->dead)
		return;
	if (p->hello_due && p->connected && tx_ctl(l, pi, WT_REL_PKT_HELLO) == WEFT_OK)
		p->hello_due = 0;
	if (!established(p))
		return;
	peer_push(l, pi, now);
	if (p->ack_due && !p->dead)
		send_ack(l, pi);
}

static int flush_work(wt_link_t *l, wt_link_event_t *ev, int n, int max, uint64_t now)
{
	int j = 0;

	for (int i = 0; i < l->nwork; i++) {
		int pi = l->work[i];

		/* handing out buffered frames may open the window: the ack then says so */
		n = emit_peer(l, pi, ev, n, max);
		peer_service(l, pi, now);
		if (has_work(l, &l->peers[pi]))
			l->work[j++] = pi;
		else
			l->peers[pi].in_work = 0;
	}
	l->nwork = j;
	return n;
}

static int rel_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	if (l == NULL || max < 0 || (max > 0 && ev == NULL))
		return WEFT_ERR_INVALID_ARG;
	if (l->inner_err != WEFT_OK)
		return l->inner_err;
	uint64_t now = wt_util_time_ns();
	int n;

	buf_release_all(l);
	n = emit_all(l, ev, 0, max);
	if (n < max) {
		int room = max - n;
		int k = l->iops->poll(l->inner, l->tmp,
				      room < REL_INNER_BATCH ? room : REL_INNER_BATCH);

		if (k < 0) {
			WT_ERROR("rel: link %s failed (status %d)", l->iops->name, k);
			l->inner_err = (weft_status_t)k;
			return n > 0 ? n : k;
		}
		if (k > REL_INNER_BATCH)
			k = REL_INNER_BATCH;
		/* each inner event may hand over one frame that lives in the inner link's
		 * buffer: keep a slot for every one still to come */
		for (int i = 0; i < k; i++)
			n = on_inner(l, &l->tmp[i], ev, n, max - (k - 1 - i), now);
	}
	if (now >= l->next_timer)
		run_timers(l, now);
	return flush_work(l, ev, n, max, now);
}

/* ---- the rest of the ops ---- */

static weft_status_t rel_open(const wt_link_config_t *cfg, wt_link_t **link)
{
	(void)cfg;
	(void)link;
	WT_ERROR("rel: a reliability wrapper is made with wt_rel_wrap, not opened");
	return WEFT_ERR_UNSUPPORTED;
}

static weft_status_t rel_address(wt_link_t *l, void *blob, size_t *len)
{
	if (l == NULL || l->iops->address == NULL)
		return WEFT_ERR_INVALID_ARG;
	return l->iops->address(l->inner, blob, len);
}

static weft_status_t rel_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	if (l == NULL || peer < 0 || peer >= l->size) {
		WT_ERROR("rel: connect to bad peer rank %d", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	weft_status_t st = l->iops->connect(l->inner, peer, blob, len);

	if (wt_util_is_err(st))
		return st;
	st = peer_setup(l, peer);
	if (st != WEFT_OK)
		return st;
	struct rel_peer *p = &l->peers[peer];

	if (p->connected || p->dead)
		return WEFT_OK;
	p->connected = 1;
	if (!p->knows_us) {
		uint64_t now = wt_util_time_ns();

		p->hello_deadline = now; /* the first HELLO goes out at the next poll */
		timer_note(l, now);
		if (tx_ctl(l, peer, WT_REL_PKT_HELLO) == WEFT_OK) {
			p->hello_deadline = now + p->hello_rto_us * 1000;
			timer_note(l, p->hello_deadline);
		}
	}
	work_add(l, peer);
	return WEFT_OK;
}

static weft_status_t iov_check(const wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			       size_t *total)
{
	size_t t = 0;

	if (iovcnt < 0 || iovcnt > REL_MAX_IOV || (iovcnt > 0 && iov == NULL)) {
		WT_ERROR("rel: bad iov (%d entries) for a frame to peer rank %d", iovcnt, peer);
		return WEFT_ERR_INVALID_ARG;
	}
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > l->max_payload - t) {
			WT_ERROR("rel: frame to peer rank %d exceeds %zu bytes", peer,
				 l->max_payload);
			return WEFT_ERR_INVALID_ARG;
		}
		if (iov[i].iov_len > 0 && iov[i].iov_base == NULL) {
			WT_ERROR("rel: NULL iov base for a frame to peer rank %d", peer);
			return WEFT_ERR_INVALID_ARG;
		}
		t += iov[i].iov_len;
	}
	*total = t;
	return WEFT_OK;
}

static weft_status_t slot_fill(struct tx_slot *s, const struct iovec *iov, int iovcnt)
{
	if (iovcnt + 1 <= REL_IOV_INLINE) {
		s->iov = s->inl;
	} else {
		if (s->heap_cap < iovcnt + 1) {
			/* rare (many-piece frames); kept for the slot's next use */
			struct iovec *h = realloc(s->heap, sizeof(*h) * (size_t)(iovcnt + 1));

			if (h == NULL)
				return WEFT_ERR_NO_MEMORY;
			s->heap = h;
			s->heap_cap = iovcnt + 1;
		}
		s->iov = s->heap;
	}
	if (iovcnt > 0)
		memcpy(s->iov + 1, iov, sizeof(*iov) * (size_t)iovcnt);
	s->iovcnt = iovcnt + 1;
	return WEFT_OK;
}

static weft_status_t rel_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			      void *cookie)
{
	size_t total;

	if (l == NULL || peer < 0 || peer >= l->size || !l->peers[peer].connected) {
		WT_ERROR("rel: send to peer rank %d that was never connected", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	struct rel_peer *p = &l->peers[peer];

	if (p->dead)
		return p->err_st;
	weft_status_t st = iov_check(l, peer, iov, iovcnt, &total);

	if (st != WEFT_OK)
		return st;
	if (p->snd_nxt - p->snd_rep > l->wmask ||
	    (uint32_t)(p->snd_nxt - p->snd_una) >= eff_window(l, p))
		return WT_AGAIN;
	struct tx_slot *s = txs(l, p, p->snd_nxt);

	if (slot_fill(s, iov, iovcnt) != WEFT_OK) {
		WT_ERROR("rel: out of memory for a %d-piece frame to peer rank %d", iovcnt, peer);
		return WEFT_ERR_NO_MEMORY;
	}
	s->seq = p->snd_nxt;
	s->cookie = cookie;
	s->len = total;
	s->held = 0;
	s->sent = s->retx = s->sacked = s->lost = 0;
	s->tx_ns = 0;
	p->snd_nxt++;
	if (established(p)) {
		peer_push(l, peer, wt_util_time_ns());
		if (p->dead && !s->sent) {
			p->snd_nxt--; /* refused at once: the caller keeps the frame */
			slot_release(s);
			return p->err_st;
		}
	}
	work_add(l, peer);
	return WEFT_INPROGRESS;
}

static weft_status_t rel_get(wt_link_t *l, int peer, void *local, const wt_link_remote_t *remote,
			     size_t off, size_t len)
{
	if (l == NULL || l->iops->get == NULL)
		return WEFT_ERR_UNSUPPORTED;
	return l->iops->get(l->inner, peer, local, remote, off, len);
}

static int rel_fd(wt_link_t *l)
{
	if (l == NULL || l->iops->fd == NULL)
		return -1;
	return l->iops->fd(l->inner);
}

static int any_work(const wt_link_t *l)
{
	for (int i = 0; i < l->nwork; i++)
		if (has_work(l, &l->peers[l->work[i]]))
			return 1;
	return 0;
}

static int rel_arm(wt_link_t *l)
{
	if (l == NULL || l->inner_err != WEFT_OK)
		return 1;
	if (any_work(l) || wt_util_time_ns() >= next_deadline(l))
		return 1;
	return l->iops->arm != NULL ? l->iops->arm(l->inner) : 0;
}

static void rel_disarm(wt_link_t *l)
{
	if (l != NULL && l->iops->disarm != NULL)
		l->iops->disarm(l->inner);
}

static int rel_timer_ms(wt_link_t *l)
{
	if (l == NULL)
		return -1;
	if (l->inner_err != WEFT_OK || any_work(l))
		return 0;
	int t = -1;
	uint64_t next = next_deadline(l);

	if (next != UINT64_MAX) {
		uint64_t now = wt_util_time_ns();
		uint64_t ms = next > now ? (next - now + 999999) / 1000000 : 0;

		t = ms > INT32_MAX ? INT32_MAX : (int)ms;
	}
	if (l->iops->timer_ms != NULL) {
		int it = l->iops->timer_ms(l->inner);

		if (it >= 0 && (t < 0 || it < t))
			t = it;
	}
	return t;
}

static void rel_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	if (l == NULL || st == NULL || peer < 0 || peer >= l->size)
		return;
	if (l->iops->stats != NULL)
		l->iops->stats(l->inner, peer, st);
	const struct rel_peer *p = &l->peers[peer];

	st->retransmits += p->retransmits;
	st->timeouts += p->timeouts;
	st->drops += p->drops;
	st->duplicates += p->duplicates;
	st->corrupt += p->corrupt;
	st->rejected += p->rejected;
	if (p->tx == NULL)
		return;
	st->rto_us = p->rto_us;
	st->srtt_us = p->srtt_us;
	st->window = eff_window(l, p);
	st->in_flight = (uint32_t)(p->snd_tx - p->snd_una);
}

static void rel_close(wt_link_t *l)
{
	if (l == NULL)
		return;
	for (int i = 0; i < l->nactive; i++) {
		struct rel_peer *p = &l->peers[l->active[i]];

		for (uint32_t k = 0; k <= l->wmask; k++)
			free(p->tx[k].heap);
		free(p->tx);
		free(p->rx);
	}
	free_chunks(l->buf_chunks);
	free_chunks(l->ctl_chunks);
	free(l->peers);
	free(l->active);
	free(l->work);
	free(l);
}

/* ---- construction ---- */

static weft_status_t cfg_times(const wt_rel_config_t *cfg, wt_link_t *l)
{
	double init = cfg->rto_init > 0 ? cfg->rto_init : REL_RTO_INIT_US / 1e6;
	double mn = cfg->rto_min > 0 ? cfg->rto_min : REL_RTO_MIN_US / 1e6;
	double mx = cfg->rto_max > 0 ? cfg->rto_max : REL_RTO_MAX_US / 1e6;

	if (!(cfg->rto_init >= 0 && cfg->rto_min >= 0 && cfg->rto_max >= 0) || mx > 3600 ||
	    mn > mx || init < mn || init > mx || mn < 1e-5) {
		WT_ERROR("rel: bad retransmission timeouts (init %g s, min %g s, max %g s)", init,
			 mn, mx);
		return WEFT_ERR_INVALID_ARG;
	}
	l->rto_init_us = (uint64_t)(init * 1e6);
	l->rto_min_us = (uint64_t)(mn * 1e6);
	l->rto_max_us = (uint64_t)(mx * 1e6);
	return WEFT_OK;
}

static weft_status_t wrap_check(wt_link_t *inner, const wt_rel_config_t *cfg, wt_link_t **out)
{
	if (out == NULL || inner == NULL || cfg == NULL) {
		WT_ERROR("rel: wrap needs an inner link, a config and an output");
		return WEFT_ERR_INVALID_ARG;
	}
	const wt_link_ops_t *iops = wt_link_ops(inner);

	if (iops == NULL || iops->size != sizeof(wt_link_ops_t) || iops->send == NULL ||
	    iops->poll == NULL || iops->connect == NULL) {
		WT_ERROR("rel: inner link has an incompatible ops table");
		return WEFT_ERR_INVALID_ARG;
	}
	if (wt_link_max_frame(inner) <= WT_REL_HDR_LEN) {
		WT_ERROR("rel: link %s frames (%zu bytes) cannot hold the %d-byte header",
			 iops->name, wt_link_max_frame(inner), WT_REL_HDR_LEN);
		return WEFT_ERR_INVALID_ARG;
	}
	if (cfg->size <= 0 || cfg->rank < 0 || cfg->rank >= cfg->size ||
	    cfg->window > REL_MAX_WINDOW) {
		WT_ERROR("rel: bad config (rank %d of %d, window %u, at most %u)", cfg->rank,
			 cfg->size, cfg->window, REL_MAX_WINDOW);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

static void ops_init(wt_link_t *l)
{
	wt_link_ops_t *o = &l->ops;

	memset(o, 0, sizeof(*o));
	o->size = sizeof(*o);
	o->name = l->iops->name;
	o->caps = WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED |
		  (l->iops->caps & (WT_LINK_CAP_GET | WT_LINK_CAP_HAS_FD));
	o->probe = l->iops->probe;
	o->open = rel_open;
	o->address = rel_address;
	o->connect = rel_connect;
	o->send = rel_send;
	o->poll = rel_poll;
	o->get = l->iops->get != NULL ? rel_get : NULL;
	o->fd = rel_fd;
	o->arm = rel_arm;
	o->disarm = rel_disarm;
	o->close = rel_close;
	o->stats = rel_stats;
	o->timer_ms = rel_timer_ms;
}

static uint32_t pow2_at_least(uint32_t v)
{
	uint32_t p = 1;

	while (p < v)
		p <<= 1;
	return p;
}

weft_status_t wt_rel_wrap(wt_link_t *inner, const wt_rel_config_t *cfg, wt_link_t **out)
{
	weft_status_t st = wrap_check(inner, cfg, out);

	if (st != WEFT_OK)
		return st;
	wt_link_t *l = calloc(1, sizeof(*l));

	if (l == NULL)
		goto err_mem;
	if ((st = cfg_times(cfg, l)) != WEFT_OK) {
		free(l);
		return st;
	}
	l->inner = inner;
	l->iops = wt_link_ops(inner);
	l->rank = cfg->rank;
	l->size = cfg->size;
	l->key = cfg->key;
	l->epoch = random_nonzero();
	l->window = cfg->window ? cfg->window : WT_REL_DEFAULT_WINDOW;
	if (l->window < REL_MIN_CWND)
		l->window = REL_MIN_CWND;
	l->wmask = pow2_at_least(l->window) - 1;
	l->isn_cfg = cfg->isn;
	l->max_payload = wt_link_max_frame(inner) - WT_REL_HDR_LEN;
	l->next_timer = UINT64_MAX;
	l->buf_stride = (sizeof(struct rel_buf) + l->max_payload + 63) & ~(size_t)63;
	l->max_bufs = REL_POOL_BYTES / l->buf_stride;
	if (l->max_bufs < REL_POOL_MIN)
		l->max_bufs = REL_POOL_MIN;
	l->peers = calloc((size_t)l->size, sizeof(*l->peers));
	l->active = calloc((size_t)l->size, sizeof(int));
	l->work = calloc((size_t)l->size, sizeof(int));
	if (l->peers == NULL || l->active == NULL || l->work == NULL)
		goto err_free;
	ops_init(l);
	l->base.ops = &l->ops;
	l->base.max_frame = l->max_payload;
	WT_DEBUG("rel: wrapped link %s for rank %d of %d, epoch %016llx, window %u", l->iops->name,
		 l->rank, l->size, (unsigned long long)l->epoch, l->window);
	*out = l;
	return WEFT_OK;
err_free:
	free(l->peers);
	free(l->active);
	free(l->work);
	free(l);
err_mem:
	WT_ERROR("rel: out of memory wrapping a link for %d peers", cfg->size);
	return WEFT_ERR_NO_MEMORY;
}

int wt_rel_is(wt_link_t *link)
{
	return link != NULL && wt_link_ops(link)->poll == rel_poll;
}
