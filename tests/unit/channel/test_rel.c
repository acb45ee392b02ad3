/* Unit tests for the channel's reliability protocol (layers/channel/rel.c): two or three
 * wrappers in one process over a fake lossy link written here, whose "wire" drops,
 * duplicates, reorders, corrupts, holds back or forges frames on the test's command. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "drivers/link.h"
#include "layers/channel/rel.h"
#include "layers/channel/rel_wire.h"
#include "lib/util/crc32c.h"
#include "lib/util/crypto.h"
#include "lib/util/time.h"

/* ======================= the fake link ======================= */

#define FK_MAX 3
#define FK_MAX_FRAME 2048
#define FK_PEND 512

enum fk_action { FK_PASS, FK_DROP, FK_DUP, FK_HOLD, FK_CORRUPT };

struct pkt {
	struct pkt *next;
	int src, dst;
	int countdown;	     /* reordered: released after this many later frames... */
	uint64_t release_ns; /* ...or at this time */
	size_t len;
	uint8_t data[];
};

/* One send_info call whose frame the fake took, with the frame's own header. */
struct info_rec {
	int src, dst;
	wt_link_frame_info_t info;
	wt_rel_hdr_t h;
};

#define FK_INFO_MAX 4096

struct net;
typedef enum fk_action (*fk_filter_fn)(struct net *net, int src, int dst, const wt_rel_hdr_t *h,
				       void *arg);

struct net {
	wt_link_t *ep[FK_MAX];
	uint64_t rng;
	double drop, dup, reorder, corrupt, again; /* random rates */
	fk_filter_fn filter;
	void *farg;
	int queue_limit;  /* frames waiting at a receiver; beyond: dropped (0 = none) */
	long corrupt_off; /* FK_CORRUPT flips bit 0 of this byte (from the end if < 0)... */
	int corrupt_set;  /* ...when set by the filter; else a random bit */
	struct pkt *held; /* FK_HOLD: delivered when the test says so */
	/* what the wire did, by [src][dst] */
	uint64_t sent[FK_MAX][FK_MAX], drops[FK_MAX][FK_MAX], dups[FK_MAX][FK_MAX];
	uint64_t reorders[FK_MAX][FK_MAX], corrupts[FK_MAX][FK_MAX], overflows[FK_MAX][FK_MAX];
	uint64_t data_sent[FK_MAX][FK_MAX], acks_sent[FK_MAX][FK_MAX];
	uint64_t plain_sends[FK_MAX]; /* frames handed to send() rather than send_info() */
	struct info_rec *infos;	      /* when set: send_info calls are logged here */
	int ninfo;
};

struct pend {
	struct iovec iov[16];
	int iovcnt, dst;
	void *cookie;
	uint64_t seq;
	int is_data;
};

struct wt_link {
	wt_link_base_t base;
	struct net *net;
	int rank;
	int inprogress; /* sends return WEFT_INPROGRESS; the wire sees them at the next poll */
	weft_status_t send_err; /* sends fail with this (0 = they do not) */
	int poll_err;		/* poll fails with this (0 = it does not) */
	int lose_peer;		/* the next poll reports this peer lost (-1 = none) */
	int connected[FK_MAX];
	struct pkt *qhead, *qtail;
	int qlen;
	struct pkt *delayed; /* reordered frames on their way here */
	struct pkt *delivered;
	struct pend pend[FK_PEND];
	int npend;
	uint64_t frames_rx[FK_MAX], bytes_rx[FK_MAX], bytes_tx[FK_MAX];
};

static const wt_link_ops_t fk_ops;

static uint64_t rnd(struct net *n)
{
	n->rng ^= n->rng << 13;
	n->rng ^= n->rng >> 7;
	n->rng ^= n->rng << 17;
	return n->rng;
}

static int chance(struct net *n, double p)
{
	return p > 0 && (double)(rnd(n) >> 11) / 9007199254740992.0 < p;
}

static struct pkt *pkt_new(int src, int dst, const uint8_t *data, size_t len)
{
	struct pkt *p = malloc(sizeof(*p) + len);

	assert_non_null(p);
	memset(p, 0, sizeof(*p));
	p->src = src;
	p->dst = dst;
	p->len = len;
	memcpy(p->data, data, len);
	return p;
}

static void q_push(wt_link_t *l, struct pkt *p)
{
	p->next = NULL;
	if (l->qtail)
		l->qtail->next = p;
	else
		l->qhead = p;
	l->qtail = p;
	l->qlen++;
}

/* Hands a frame to its receiver's queue, honouring the queue limit; counts reorders. */
static void wire_arrive(struct net *n, struct pkt *p)
{
	wt_link_t *d = n->ep[p->dst];

	if (d == NULL || (n->queue_limit > 0 && d->qlen >= n->queue_limit)) {
		n->overflows[p->src][p->dst]++;
		free(p);
		return;
	}
	q_push(d, p);
	/* frames held back for reordering go after this many later ones */
	struct pkt **pp = &d->delayed;

	while (*pp) {
		struct pkt *x = *pp;

		if (--x->countdown <= 0) {
			*pp = x->next;
			q_push(d, x);
			continue;
		}
		pp = &x->next;
	}
}

static void wire_delay(struct net *n, struct pkt *p)
{
	wt_link_t *d = n->ep[p->dst];

	p->countdown = 1 + (int)(rnd(n) % 4);
	p->release_ns = wt_util_time_ns() + 2000000;
	p->next = d->delayed;
	d->delayed = p;
}

/* The wire: what a frame from src to dst suffers. */
static void wire_send(struct net *n, int src, int dst, const uint8_t *data, size_t len)
{
	wt_rel_hdr_t h;
	int ok = wt_rel_hdr_decode(data, len, &h) == NULL;
	enum fk_action a = FK_PASS;

	n->sent[src][dst]++;
	if (ok && h.type == WT_REL_PKT_DATA)
		n->data_sent[src][dst]++;
	if (ok && h.type == WT_REL_PKT_ACK)
		n->acks_sent[src][dst]++;
	if (n->filter && ok)
		a = n->filter(n, src, dst, &h, n->farg);
	if (a == FK_DROP || (a == FK_PASS && chance(n, n->drop))) {
		n->drops[src][dst]++;
		return;
	}
	struct pkt *p = pkt_new(src, dst, data, len);

	if (a == FK_HOLD) {
		p->next = n->held;
		n->held = p;
		return;
	}
	if (a == FK_CORRUPT && n->corrupt_set) {
		long off = n->corrupt_off < 0 ? (long)len + n->corrupt_off : n->corrupt_off;

		assert_true(off >= 0 && (size_t)off < len);
		p->data[off] ^= 1;
		n->corrupts[src][dst]++;
		n->corrupt_set = 0;
	} else if (a == FK_CORRUPT || (a == FK_PASS && chance(n, n->corrupt))) {
		size_t bit = (size_t)(rnd(n) % (len * 8));

		p->data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		n->corrupts[src][dst]++;
	}
	if (a == FK_DUP || (a == FK_PASS && chance(n, n->dup))) {
		n->dups[src][dst]++;
		wire_arrive(n, pkt_new(src, dst, data, len)); /* a clean copy */
	}
	if (a == FK_PASS && chance(n, n->reorder)) {
		n->reorders[src][dst]++;
		wire_delay(n, p);
		return;
	}
	wire_arrive(n, p);
}

/* Frames the filter held back arrive now, oldest first. */
static int net_release_held(struct net *n)
{
	struct pkt *rev = NULL;
	int count = 0;

	while (n->held) {
		struct pkt *p = n->held;

		n->held = p->next;
		p->next = rev;
		rev = p;
	}
	while (rev) {
		struct pkt *p = rev;

		rev = p->next;
		wire_arrive(n, p);
		count++;
	}
	return count;
}

static void net_inject(struct net *n, int src, int dst, const uint8_t *data, size_t len)
{
	wire_arrive(n, pkt_new(src, dst, data, len));
}

static void free_pkts(struct pkt *p)
{
	while (p) {
		struct pkt *x = p->next;

		free(p);
		p = x;
	}
}

static void net_free(struct net *n)
{
	free_pkts(n->held);
	n->held = NULL;
}

static size_t gather(const struct iovec *iov, int iovcnt, uint8_t *out)
{
	size_t t = 0;

	for (int i = 0; i < iovcnt; i++) {
		memcpy(out + t, iov[i].iov_base, iov[i].iov_len);
		t += iov[i].iov_len;
	}
	return t;
}

static wt_link_t *fk_open(struct net *n, int rank)
{
	wt_link_t *l = calloc(1, sizeof(*l));

	assert_non_null(l);
	l->base.ops = &fk_ops;
	l->base.max_frame = FK_MAX_FRAME;
	l->net = n;
	l->rank = rank;
	l->lose_peer = -1;
	n->ep[rank] = l;
	return l;
}

static weft_status_t fk_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	(void)blob;
	(void)len;
	if (peer < 0 || peer >= FK_MAX)
		return WEFT_ERR_INVALID_ARG;
	l->connected[peer] = 1;
	return WEFT_OK;
}

static weft_status_t fk_xmit(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			     void *cookie)
{
	uint8_t buf[FK_MAX_FRAME];
	size_t total = 0;

	if (peer < 0 || peer >= FK_MAX || !l->connected[peer] || iovcnt > 16)
		return WEFT_ERR_INVALID_ARG;
	for (int i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	if (total > FK_MAX_FRAME)
		return WEFT_ERR_INVALID_ARG;
	if (l->send_err != WEFT_OK)
		return l->send_err;
	if (chance(l->net, l->net->again))
		return WT_AGAIN;
	l->bytes_tx[peer] += total;
	if (!l->inprogress) {
		gather(iov, iovcnt, buf);
		wire_send(l->net, l->rank, peer, buf, total);
		return WEFT_OK;
	}
	if (l->npend == FK_PEND)
		return WT_AGAIN;
	struct pend *p = &l->pend[l->npend++];
	wt_rel_hdr_t h;

	memcpy(p->iov, iov, sizeof(*iov) * (size_t)iovcnt);
	p->iovcnt = iovcnt;
	p->dst = peer;
	p->cookie = cookie;
	gather(iov, iovcnt, buf);
	p->is_data = wt_rel_hdr_decode(buf, total, &h) == NULL && h.type == WT_REL_PKT_DATA;
	p->seq = h.seq;
	return WEFT_INPROGRESS;
}

static weft_status_t fk_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
			     void *cookie)
{
	l->net->plain_sends[l->rank]++;
	return fk_xmit(l, peer, iov, iovcnt, cookie);
}

/* What rel says about a frame must be what the frame's header says: checked on every
 * frame of every test, and logged when the test asks. */
static weft_status_t fk_send_info(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				  void *cookie, const wt_link_frame_info_t *info)
{
	uint8_t buf[FK_MAX_FRAME];
	wt_rel_hdr_t h;
	weft_status_t st = fk_xmit(l, peer, iov, iovcnt, cookie);

	if (st != WEFT_OK && st != WEFT_INPROGRESS)
		return st;
	assert_non_null(info);
	assert_null(wt_rel_hdr_decode(buf, gather(iov, iovcnt, buf), &h));
	assert_int_equal(info->ack, h.ack);
	switch (h.type) {
	case WT_REL_PKT_DATA:
		assert_int_equal(info->kind, WT_LINK_FRAME_DATA);
		assert_int_equal(info->seq, h.seq);
		break;
	case WT_REL_PKT_ACK:
		assert_int_equal(info->kind, WT_LINK_FRAME_ACK);
		assert_int_equal(info->ack_req, 0);
		break;
	default:
		assert_int_equal(h.type, WT_REL_PKT_HELLO);
		assert_int_equal(info->kind, WT_LINK_FRAME_CTRL);
		assert_int_equal(info->seq, h.seq);
		assert_int_equal(info->ack_req, (h.flags & WT_REL_FL_WANT_REPLY) != 0);
	}
	if (l->net->infos != NULL) {
		assert_true(l->net->ninfo < FK_INFO_MAX);
		struct info_rec *r = &l->net->infos[l->net->ninfo++];

		r->src = l->rank;
		r->dst = peer;
		r->info = *info;
		r->h = h;
	}
	return st;
}

/* 1 if the fake still holds a transmission of data frame seq to dst. */
static int fk_holds(const wt_link_t *l, int dst, uint64_t seq)
{
	for (int i = 0; i < l->npend; i++)
		if (l->pend[i].is_data && l->pend[i].dst == dst && l->pend[i].seq == seq)
			return 1;
	return 0;
}

static int fk_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	uint8_t buf[FK_MAX_FRAME];
	int n = 0;

	free_pkts(l->delivered);
	l->delivered = NULL;
	if (l->poll_err)
		return l->poll_err;
	if (l->lose_peer >= 0 && max > 0) {
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_PEER_ERROR;
		ev[n].peer = l->lose_peer;
		ev[n].status = WEFT_ERR_SYSTEM;
		n++;
		l->lose_peer = -1;
	}
	/* held sends reach the wire now, and complete */
	int k = 0;

	for (; k < l->npend && n < max; k++) {
		struct pend *p = &l->pend[k];
		size_t len = gather(p->iov, p->iovcnt, buf);

		wire_send(l->net, l->rank, p->dst, buf, len);
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_SEND_DONE;
		ev[n].cookie = p->cookie;
		n++;
	}
	memmove(l->pend, l->pend + k, sizeof(l->pend[0]) * (size_t)(l->npend - k));
	l->npend -= k;
	uint64_t now = wt_util_time_ns();

	for (struct pkt **pp = &l->delayed; *pp;) {
		struct pkt *x = *pp;

		if (now >= x->release_ns) {
			*pp = x->next;
			q_push(l, x);
			continue;
		}
		pp = &x->next;
	}
	struct pkt *tail = NULL;

	while (n < max && l->qhead) {
		struct pkt *p = l->qhead;

		l->qhead = p->next;
		if (!l->qhead)
			l->qtail = NULL;
		l->qlen--;
		memset(&ev[n], 0, sizeof(ev[n]));
		ev[n].type = WT_LINK_EV_FRAME;
		ev[n].peer = p->src;
		ev[n].data = p->data;
		ev[n].len = p->len;
		n++;
		l->frames_rx[p->src]++;
		l->bytes_rx[p->src] += p->len;
		p->next = NULL;
		if (tail)
			tail->next = p;
		else
			l->delivered = p;
		tail = p;
	}
	return n;
}

static int fk_fd(wt_link_t *l)
{
	(void)l;
	return -1;
}

static int fk_arm(wt_link_t *l)
{
	return l->qhead != NULL || l->npend > 0;
}

static void fk_close(wt_link_t *l)
{
	free_pkts(l->qhead);
	free_pkts(l->delayed);
	free_pkts(l->delivered);
	if (l->net->ep[l->rank] == l)
		l->net->ep[l->rank] = NULL;
	free(l);
}

static void fk_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	struct net *n = l->net;

	st->frames_sent += n->sent[l->rank][peer];
	st->bytes_sent += l->bytes_tx[peer];
	st->frames_received += l->frames_rx[peer];
	st->bytes_received += l->bytes_rx[peer];
	st->fault_drops += n->drops[l->rank][peer] + n->overflows[l->rank][peer];
	st->fault_dups += n->dups[l->rank][peer];
	st->fault_reorders += n->reorders[l->rank][peer];
	st->fault_corrupts += n->corrupts[l->rank][peer];
}

static int fk_timer_ms(wt_link_t *l)
{
	uint64_t now = wt_util_time_ns();
	int best = -1;

	for (struct pkt *x = l->delayed; x; x = x->next) {
		int ms = x->release_ns > now ? (int)((x->release_ns - now + 999999) / 1000000) : 0;

		if (best < 0 || ms < best)
			best = ms;
	}
	return best;
}

static const wt_link_ops_t fk_ops = {
    .size = sizeof(wt_link_ops_t),
    .name = "fake",
    .caps = WT_LINK_CAP_HAS_FD,
    .connect = fk_connect,
    .send = fk_send,
    .send_info = fk_send_info,
    .poll = fk_poll,
    .fd = fk_fd,
    .arm = fk_arm,
    .close = fk_close,
    .stats = fk_stats,
    .timer_ms = fk_timer_ms,
};

/* The same fake without send_info: rel must fall back to send. */
static wt_link_ops_t fk_ops_plain;

static void fk_use_plain(wt_link_t *l)
{
	fk_ops_plain = fk_ops;
	fk_ops_plain.send_info = NULL;
	l->base.ops = &fk_ops_plain;
}

/* ======================= endpoints and traffic ======================= */

#define RING 8192
#define MSG_HDR 16

struct msg {
	uint8_t *buf;
	size_t len;
	uint64_t idx;
	int dst;
};

struct ep {
	wt_link_t *fake, *rel;
	int rank;
	int paused; /* the test does not poll it */
	int rel_broken;
	int max_ev; /* events asked for per poll */
	uint64_t next_tx[FK_MAX], next_done[FK_MAX], next_rx[FK_MAX];
	uint64_t done_err[FK_MAX], peer_errors[FK_MAX];
	weft_status_t peer_err_st[FK_MAX];
	struct msg ring[FK_MAX][RING];
	struct tx_check {
		uint64_t isn; /* known ISN: SEND_DONE checks the fake holds no copy */
		int on;
	} check;
};

struct world {
	struct net net;
	struct ep ep[FK_MAX];
	int n;
	wt_rel_config_t cfg;
	const char *token[FK_MAX];
	uint64_t rng;
};

static uint8_t pattern(uint64_t idx, int src, size_t pos)
{
	return (uint8_t)(idx * 131 + (uint64_t)src * 17 + pos * 7 + (pos >> 8));
}

static weft_status_t rel_open_ep(struct world *w, int r)
{
	struct ep *e = &w->ep[r];
	wt_rel_config_t c = w->cfg;

	c.rank = r;
	c.size = w->n;
	wt_util_key_from_token(&c.key, w->token[r] ? w->token[r] : "job-token");
	return wt_rel_wrap(e->fake, &c, &e->rel);
}

static void world_init(struct world *w, int n, const wt_rel_config_t *cfg, uint64_t seed)
{
	memset(w, 0, sizeof(*w));
	w->n = n;
	w->net.rng = seed | 1;
	w->rng = seed * 7 + 1;
	if (cfg)
		w->cfg = *cfg;
	for (int r = 0; r < n; r++) {
		w->ep[r].rank = r;
		w->ep[r].max_ev = 64;
		w->ep[r].fake = fk_open(&w->net, r);
	}
}

static void world_open(struct world *w)
{
	for (int r = 0; r < w->n; r++)
		assert_int_equal(rel_open_ep(w, r), WEFT_OK);
	for (int r = 0; r < w->n; r++)
		for (int p = 0; p < w->n; p++)
			if (p != r)
				assert_int_equal(
				    wt_link_ops(w->ep[r].rel)->connect(w->ep[r].rel, p, NULL, 0),
				    WEFT_OK);
}

static void world_free(struct world *w)
{
	for (int r = 0; r < w->n; r++) {
		struct ep *e = &w->ep[r];

		if (e->rel)
			wt_link_ops(e->rel)->close(e->rel);
		if (e->fake)
			fk_close(e->fake);
		for (int p = 0; p < FK_MAX; p++)
			for (int i = 0; i < RING; i++)
				free(e->ring[p][i].buf);
	}
	net_free(&w->net);
}

static uint64_t wrand(struct world *w)
{
	w->rng ^= w->rng << 13;
	w->rng ^= w->rng >> 7;
	w->rng ^= w->rng << 17;
	return w->rng;
}

/* Posts message number next_tx[dst] of len bytes, cut into up to three iov pieces on the
 * stack (the wrapper must copy the array). WEFT_INPROGRESS or WT_AGAIN. */
static weft_status_t ep_send(struct world *w, int src, int dst, size_t len)
{
	struct ep *e = &w->ep[src];
	uint64_t idx = e->next_tx[dst];

	if (idx - e->next_done[dst] >= RING)
		return WT_AGAIN;
	if (len < MSG_HDR)
		len = MSG_HDR;
	struct msg *m = &e->ring[dst][idx % RING];
	uint8_t *b = malloc(len);

	assert_non_null(b);
	memcpy(b, &idx, 8);
	uint32_t s32 = (uint32_t)src, l32 = (uint32_t)len;

	memcpy(b + 8, &s32, 4);
	memcpy(b + 12, &l32, 4);
	for (size_t i = MSG_HDR; i < len; i++)
		b[i] = pattern(idx, src, i);
	struct iovec iov[3];
	int cnt = 1;
	size_t c1 = len / 3, c2 = 2 * len / 3;

	if (len >= 48 && (wrand(w) & 1)) {
		iov[0] = (struct iovec){b, c1};
		iov[1] = (struct iovec){b + c1, c2 - c1};
		iov[2] = (struct iovec){b + c2, len - c2};
		cnt = 3;
	} else {
		iov[0] = (struct iovec){b, len};
	}
	weft_status_t st = wt_link_ops(e->rel)->send(e->rel, dst, iov, cnt, m);

	memset(iov, 0xa5, sizeof(iov)); /* the wrapper must not look at our array again */
	if (st != WEFT_INPROGRESS) {
		free(b);
		assert_int_equal(st, WT_AGAIN);
		return st;
	}
	assert_null(m->buf);
	m->buf = b;
	m->len = len;
	m->idx = idx;
	m->dst = dst;
	e->next_tx[dst]++;
	return st;
}

static void check_frame(struct ep *e, const wt_link_event_t *ev)
{
	const uint8_t *d = ev->data;
	uint64_t idx;
	uint32_t src, len;

	assert_true(ev->peer >= 0 && ev->peer < FK_MAX && ev->peer != e->rank);
	assert_true(ev->len >= MSG_HDR);
	memcpy(&idx, d, 8);
	memcpy(&src, d + 8, 4);
	memcpy(&len, d + 12, 4);
	assert_int_equal(src, ev->peer);
	assert_int_equal(len, ev->len);
	if (idx != e->next_rx[ev->peer])
		fail_msg("rank %d got message %llu from %d, expected %llu", e->rank,
			 (unsigned long long)idx, ev->peer,
			 (unsigned long long)e->next_rx[ev->peer]);
	for (size_t i = MSG_HDR; i < ev->len; i++)
		if (d[i] != pattern(idx, (int)src, i))
			fail_msg("message %llu from %d differs at byte %zu",
				 (unsigned long long)idx, ev->peer, i);
	e->next_rx[ev->peer]++;
}

static void on_send_done(struct ep *e, const wt_link_event_t *ev)
{
	struct msg *m = ev->cookie;

	assert_non_null(m);
	assert_true(m->dst >= 0 && m->dst < FK_MAX);
	if (m->idx != e->next_done[m->dst] || m->buf == NULL)
		fail_msg("rank %d: send-done for message %llu to %d, expected %llu", e->rank,
			 (unsigned long long)m->idx, m->dst,
			 (unsigned long long)e->next_done[m->dst]);
	if (e->check.on)
		assert_false(fk_holds(e->fake, m->dst, e->check.isn + m->idx));
	if (ev->status != WEFT_OK)
		e->done_err[m->dst]++;
	free(m->buf);
	m->buf = NULL;
	e->next_done[m->dst]++;
}

static int ep_poll(struct world *w, int r)
{
	struct ep *e = &w->ep[r];
	wt_link_event_t ev[64];
	int max = e->max_ev > 0 && e->max_ev <= 64 ? e->max_ev : 64;

	if (e->paused || e->rel == NULL || e->rel_broken)
		return 0;
	if (max < 0) /* random per poll */
		max = 1 + (int)(wrand(w) % 64);
	int n = wt_link_ops(e->rel)->poll(e->rel, ev, max);

	assert_true(n >= 0 && n <= max);
	for (int i = 0; i < n; i++) {
		switch (ev[i].type) {
		case WT_LINK_EV_FRAME:
			check_frame(e, &ev[i]);
			break;
		case WT_LINK_EV_SEND_DONE:
			on_send_done(e, &ev[i]);
			break;
		case WT_LINK_EV_PEER_ERROR:
			assert_true(ev[i].peer >= 0 && ev[i].peer < FK_MAX);
			e->peer_errors[ev[i].peer]++;
			e->peer_err_st[ev[i].peer] = ev[i].status;
			break;
		default:
			fail_msg("unknown event type %d", ev[i].type);
		}
	}
	return n;
}

static int pump(struct world *w)
{
	int n = 0;

	for (int r = 0; r < w->n; r++)
		n += ep_poll(w, r);
	return n;
}

/* Polls every endpoint for ms milliseconds, resting briefly when nothing happens. */
static void pump_for(struct world *w, int ms)
{
	uint64_t end = wt_util_time_ns() + (uint64_t)ms * 1000000;

	while (wt_util_time_ns() < end)
		if (pump(w) == 0)
			usleep(100);
}

static int all_done(const struct world *w)
{
	for (int a = 0; a < w->n; a++)
		for (int b = 0; b < w->n; b++) {
			if (a == b)
				continue;
			if (w->ep[a].next_done[b] != w->ep[a].next_tx[b] ||
			    w->ep[b].next_rx[a] != w->ep[a].next_tx[b])
				return 0;
		}
	return 1;
}

/* Pumps until every posted message was received and its send completed; 1 on success. */
static int pump_until_done(struct world *w, double seconds)
{
	uint64_t end = wt_util_time_ns() + (uint64_t)(seconds * 1e9);

	while (wt_util_time_ns() < end) {
		if (all_done(w))
			return 1;
		if (pump(w) == 0)
			usleep(100);
	}
	return all_done(w);
}

static wt_link_stats_t stats(struct world *w, int r, int peer)
{
	wt_link_stats_t st;

	memset(&st, 0, sizeof(st));
	wt_link_ops(w->ep[r].rel)->stats(w->ep[r].rel, peer, &st);
	return st;
}

/* Sends count messages of len bytes from a to b, pumping when the window is full. */
static void send_n(struct world *w, int a, int b, int count, size_t len)
{
	for (int i = 0; i < count; i++) {
		uint64_t end = wt_util_time_ns() + 10000000000ull;

		while (ep_send(w, a, b, len) == WT_AGAIN) {
			assert_true(wt_util_time_ns() < end);
			if (pump(w) == 0)
				usleep(50);
		}
	}
}

static wt_rel_config_t fast_cfg(void)
{
	wt_rel_config_t c;

	memset(&c, 0, sizeof(c));
	c.rto_init = 0.01;
	c.rto_min = 0.005;
	c.rto_max = 0.1;
	return c;
}

/* ======================= wire format ======================= */

static size_t make_frame(uint8_t *buf, const wt_rel_hdr_t *in, const void *payload)
{
	wt_rel_hdr_t h = *in;

	h.payload_crc = wt_util_crc32c(0, payload, h.len);
	wt_rel_hdr_encode(&h, buf);
	if (h.len)
		memcpy(buf + WT_REL_HDR_LEN, payload, h.len);
	return WT_REL_HDR_LEN + h.len;
}

static void test_wire(void **state)
{
	uint8_t buf[WT_REL_HDR_LEN + 64], payload[40];
	wt_rel_hdr_t h = {.version = WT_REL_WIRE_VERSION,
			  .type = WT_REL_PKT_DATA,
			  .len = 40,
			  .src = 7,
			  .dst = 3,
			  .src_epoch = 0x1122334455667788ull,
			  .dst_epoch = 0x99aabbccddeeff00ull,
			  .seq = UINT64_MAX - 1,
			  .ack = 42,
			  .sack = 0x8000000000000001ull,
			  .window = 256},
		     d;

	(void)state;
	assert_true(WT_REL_HDR_LEN % 8 == 0 && WT_REL_HDR_LEN <= 80);
	for (int i = 0; i < 40; i++)
		payload[i] = (uint8_t)(i * 3);
	size_t len = make_frame(buf, &h, payload);

	assert_null(wt_rel_hdr_decode(buf, len, &d));
	assert_int_equal(d.type, WT_REL_PKT_DATA);
	assert_int_equal(d.len, 40);
	assert_int_equal(d.src, 7);
	assert_int_equal(d.dst, 3);
	assert_true(d.src_epoch == h.src_epoch && d.dst_epoch == h.dst_epoch);
	assert_true(d.seq == h.seq && d.ack == 42 && d.sack == h.sack);
	assert_int_equal(d.window, 256);
	assert_int_equal(d.payload_crc, wt_util_crc32c(0, payload, 40));
	/* little-endian, version byte first */
	assert_int_equal(buf[0], WT_REL_WIRE_VERSION);
	assert_int_equal(buf[1], WT_REL_PKT_DATA);
	assert_int_equal(buf[16], 7);
	assert_int_equal(buf[24], 0x88);
	assert_int_equal(buf[40], 0xfe);
	assert_string_equal(wt_rel_pkt_name(WT_REL_PKT_ACK), "ack");
	assert_string_equal(wt_rel_pkt_name(99), "unknown");
	/* every single-bit flip anywhere is caught */
	for (size_t bit = 0; bit < len * 8; bit++) {
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_non_null(wt_rel_hdr_decode(buf, len, &d));
		buf[bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	/* lengths */
	for (size_t l = 0; l < len; l++)
		assert_non_null(wt_rel_hdr_decode(buf, l, &d));
	assert_non_null(wt_rel_hdr_decode(NULL, len, &d));
	/* well-formed CRCs around bad contents */
	wt_rel_hdr_t bad = h;

	bad.version = 2;
	len = make_frame(buf, &bad, payload);
	assert_non_null(wt_rel_hdr_decode(buf, len, &d));
	bad = h;
	bad.type = 9;
	len = make_frame(buf, &bad, payload);
	assert_string_equal(wt_rel_hdr_decode(buf, len, &d), "unknown packet type");
	bad = h;
	bad.flags = 1;
	len = make_frame(buf, &bad, payload);
	assert_non_null(wt_rel_hdr_decode(buf, len, &d));
	bad = h;
	bad.type = WT_REL_PKT_ACK;
	len = make_frame(buf, &bad, payload);
	assert_string_equal(wt_rel_hdr_decode(buf, len, &d), "ack with a payload");
	bad = h;
	bad.type = WT_REL_PKT_HELLO;
	len = make_frame(buf, &bad, payload);
	assert_non_null(wt_rel_hdr_decode(buf, len, &d));
	bad.len = WT_REL_PROOF_LEN;
	bad.flags = WT_REL_FL_WANT_REPLY;
	len = make_frame(buf, &bad, payload);
	assert_null(wt_rel_hdr_decode(buf, len, &d));
	bad = h;
	bad.src_epoch = 0;
	len = make_frame(buf, &bad, payload);
	assert_string_equal(wt_rel_hdr_decode(buf, len, &d), "zero source epoch");
	/* length field disagreeing with the frame, CRCs otherwise fine */
	bad = h;
	len = make_frame(buf, &bad, payload);
	assert_string_equal(wt_rel_hdr_decode(buf, len - 1, &d),
			    "length field does not match the frame");
	/* reserved bits, with a recomputed header CRC */
	len = make_frame(buf, &h, payload);
	buf[70] = 1;
	memset(buf + 4, 0, 4);
	uint32_t c = wt_util_crc32c(0, buf, WT_REL_HDR_LEN);

	memcpy(buf + 4, &c, 4);
	assert_string_equal(wt_rel_hdr_decode(buf, len, &d), "reserved header bits set");
	/* an empty DATA frame is fine */
	bad = h;
	bad.len = 0;
	len = make_frame(buf, &bad, payload);
	assert_null(wt_rel_hdr_decode(buf, len, &d));
	assert_int_equal(d.payload_crc, 0);
}

/* Arbitrary bytes, and valid-CRC headers with arbitrary fields, never crash decode. */
static void test_wire_random(void **state)
{
	uint64_t s = 12345;
	uint8_t buf[256];
	wt_rel_hdr_t d;
	int accepted = 0;

	(void)state;
	for (int it = 0; it < 200000; it++) {
		size_t len = (size_t)(s % sizeof(buf));

		for (size_t i = 0; i < len; i++) {
			s ^= s << 13;
			s ^= s >> 7;
			s ^= s << 17;
			buf[i] = (uint8_t)s;
		}
		if (len >= WT_REL_HDR_LEN && (it & 1)) {
			buf[0] = WT_REL_WIRE_VERSION;
			buf[1] = (uint8_t)(1 + s % 3);
			uint32_t pl = (uint32_t)(len - WT_REL_HDR_LEN);

			if (it & 2)
				memcpy(buf + 12, &pl, 4);
			memset(buf + 68, 0, 4);
			uint32_t c = wt_util_crc32c(0, buf + WT_REL_HDR_LEN, pl);

			memcpy(buf + 8, &c, 4);
			memset(buf + 4, 0, 4);
			c = wt_util_crc32c(0, buf, WT_REL_HDR_LEN);
			memcpy(buf + 4, &c, 4);
		}
		if (wt_rel_hdr_decode(buf, len, &d) == NULL) {
			accepted++;
			assert_int_equal(d.len + WT_REL_HDR_LEN, len);
			assert_true(d.type >= 1 && d.type <= 3);
		}
		s = s * 6364136223846793005ull + 1442695040888963407ull;
	}
	assert_true(accepted > 0); /* the valid-CRC half does get through sometimes */
}

/* ======================= protocol ======================= */

static void test_basic(void **state)
{
	struct world w;

	(void)state;
	world_init(&w, 2, NULL, 1);
	world_open(&w);
	wt_link_t *r0 = w.ep[0].rel;
	const wt_link_ops_t *ops = wt_link_ops(r0);

	assert_true(wt_rel_is(r0));
	assert_false(wt_rel_is(w.ep[0].fake));
	assert_string_equal(ops->name, "fake");
	assert_int_equal(ops->caps,
			 WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED | WT_LINK_CAP_HAS_FD);
	assert_int_equal(wt_link_max_frame(r0), FK_MAX_FRAME - WT_REL_HDR_LEN);
	assert_int_equal(ops->fd(r0), -1);
	/* posted before the handshake: wait, then go */
	send_n(&w, 0, 1, 10, 100);
	send_n(&w, 1, 0, 10, 100);
	assert_true(pump_until_done(&w, 5));
	/* both ways at full size and at the smallest */
	for (int i = 0; i < 300; i++) {
		send_n(&w, 0, 1, 1, (size_t)(i % 2 ? wt_link_max_frame(r0) : MSG_HDR));
		send_n(&w, 1, 0, 1, 1000);
	}
	assert_true(pump_until_done(&w, 10));
	assert_int_equal(w.ep[1].next_rx[0], 310);
	assert_int_equal(w.ep[0].next_rx[1], 310);
	/* a lossless wire: nothing sent twice, nothing odd received */
	for (int r = 0; r < 2; r++) {
		wt_link_stats_t st = stats(&w, r, 1 - r);

		assert_int_equal(st.corrupt, 0);
		assert_int_equal(st.rejected, 0);
		assert_int_equal(st.drops, 0);
		assert_int_equal(st.in_flight, 0);
		assert_true(st.duplicates <= stats(&w, 1 - r, r).retransmits);
		assert_true(st.rto_us >= 5000 && st.rto_us <= 100000);
		assert_true(st.window >= 2 && st.window <= WT_REL_DEFAULT_WINDOW);
		assert_true(st.frames_sent >= 310);
	}
	world_free(&w);
}

static void test_bad_args(void **state)
{
	struct world w;
	wt_link_event_t ev[4];
	wt_link_t *out = NULL;
	wt_rel_config_t c;
	uint8_t b[8] = {0};
	struct iovec iov = {b, sizeof(b)};

	(void)state;
	world_init(&w, 3, NULL, 2);
	memset(&c, 0, sizeof(c));
	c.rank = 0;
	c.size = 3;
	assert_int_equal(wt_rel_wrap(NULL, &c, &out), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_rel_wrap(w.ep[0].fake, NULL, &out), WEFT_ERR_INVALID_ARG);
	c.rank = 3;
	assert_int_equal(wt_rel_wrap(w.ep[0].fake, &c, &out), WEFT_ERR_INVALID_ARG);
	c.rank = 0;
	c.rto_min = 2;
	c.rto_max = 1;
	assert_int_equal(wt_rel_wrap(w.ep[0].fake, &c, &out), WEFT_ERR_INVALID_ARG);
	c.rto_min = c.rto_max = 0;
	c.window = 1u << 30;
	assert_int_equal(wt_rel_wrap(w.ep[0].fake, &c, &out), WEFT_ERR_INVALID_ARG);
	assert_null(out);
	world_open(&w);
	wt_link_t *r = w.ep[0].rel;
	const wt_link_ops_t *ops = wt_link_ops(r);

	assert_int_equal(ops->send(r, -1, &iov, 1, NULL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->send(r, 3, &iov, 1, NULL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->send(r, 1, NULL, 1, NULL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->send(r, 1, &iov, -1, NULL), WEFT_ERR_INVALID_ARG);
	iov.iov_len = FK_MAX_FRAME; /* more than max_frame after the header */
	assert_int_equal(ops->send(r, 1, &iov, 1, NULL), WEFT_ERR_INVALID_ARG);
	struct iovec big[2] = {{b, SIZE_MAX}, {b, 2}};

	assert_int_equal(ops->send(r, 1, big, 2, NULL), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->connect(r, 5, NULL, 0), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->poll(r, NULL, 4), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->poll(r, ev, -1), WEFT_ERR_INVALID_ARG);
	assert_int_equal(ops->poll(r, ev, 0), 0);
	assert_int_equal(ops->open(NULL, &out), WEFT_ERR_UNSUPPORTED);
	wt_link_stats_t st;

	memset(&st, 0, sizeof(st));
	ops->stats(r, 99, &st);
	ops->stats(r, -1, &st);
	assert_int_equal(st.frames_sent, 0);
	/* a rank connected on neither side */
	world_free(&w);
}

static void test_wraparound(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	c.isn = UINT64_MAX - 40;
	c.window = 16;
	world_init(&w, 2, &c, 3);
	w.net.drop = 0.03;
	w.net.reorder = 0.03;
	world_open(&w);
	/* many windows of traffic across 2^64 both ways */
	for (int i = 0; i < 50; i++) {
		send_n(&w, 0, 1, 20, 64 + (size_t)i);
		send_n(&w, 1, 0, 20, 64);
	}
	assert_true(pump_until_done(&w, 20));
	assert_int_equal(w.ep[1].next_rx[0], 1000);
	assert_int_equal(w.ep[0].next_rx[1], 1000);
	world_free(&w);
}

/* Drops the first transmission of data frame number `nth` (counted from 0) from 0 to 1. */
struct drop_nth {
	uint64_t first_seq;
	int have_first;
	uint64_t nth;
	int times; /* transmissions to drop */
	int dropped;
};

static enum fk_action drop_nth_filter(struct net *n, int src, int dst, const wt_rel_hdr_t *h,
				      void *arg)
{
	struct drop_nth *d = arg;

	(void)n;
	if (src != 0 || dst != 1 || h->type != WT_REL_PKT_DATA)
		return FK_PASS;
	if (!d->have_first) {
		d->have_first = 1;
		d->first_seq = h->seq;
	}
	if (h->seq - d->first_seq == d->nth && d->dropped < d->times) {
		d->dropped++;
		return FK_DROP;
	}
	return FK_PASS;
}

static void test_last_frame_lost(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct drop_nth d = {.nth = 4, .times = 2};

	(void)state;
	c.isn = 1000;
	world_init(&w, 2, &c, 4);
	w.net.filter = drop_nth_filter;
	w.net.farg = &d;
	world_open(&w);
	pump_for(&w, 5);
	send_n(&w, 0, 1, 5, 200);
	/* nothing follows the lost frame: only the timer can bring it back */
	uint64_t t0 = wt_util_time_ns();

	assert_true(pump_until_done(&w, 5));
	double ms = (double)(wt_util_time_ns() - t0) / 1e6;

	assert_int_equal(d.dropped, 2);
	wt_link_stats_t st = stats(&w, 0, 1);

	/* a tail loss probe (2.5 ms: half the minimum RTO) and then an RTO expiry, or two
	 * expiries: 10 ms, then 20 ms (backed off), far below the max of 100 ms */
	assert_true(st.timeouts >= 1);
	assert_true(st.retransmits >= 2);
	assert_int_equal(st.in_flight, 0);
	assert_true(ms >= 2.5 && ms < 1000);
	print_message("last frame lost twice: recovered in %.1f ms, %llu timeouts\n", ms,
		      (unsigned long long)st.timeouts);
	world_free(&w);
}

/* A hole in the middle with a long RTO: SACK and duplicate acks bring it back fast. */
static void test_fast_retransmit(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct drop_nth d = {.nth = 10, .times = 1};

	(void)state;
	c.rto_init = 1.0;
	c.rto_min = 1.0;
	c.rto_max = 2.0;
	world_init(&w, 2, &c, 5);
	w.net.filter = drop_nth_filter;
	w.net.farg = &d;
	world_open(&w);
	pump_for(&w, 5);
	uint64_t t0 = wt_util_time_ns();

	send_n(&w, 0, 1, 30, 300);
	assert_true(pump_until_done(&w, 5));
	double ms = (double)(wt_util_time_ns() - t0) / 1e6;
	wt_link_stats_t st = stats(&w, 0, 1);

	assert_int_equal(d.dropped, 1);
	assert_int_equal(st.timeouts, 0);
	assert_int_equal(st.retransmits, 1);
	assert_true(ms < 900);
	wt_link_stats_t rs = stats(&w, 1, 0);

	assert_int_equal(rs.duplicates, 0);
	world_free(&w);
}

struct ack_ctl {
	int drop_acks, dup_acks;
	uint64_t dropped;
};

static enum fk_action ack_filter(struct net *n, int src, int dst, const wt_rel_hdr_t *h, void *arg)
{
	struct ack_ctl *a = arg;

	(void)n;
	(void)src;
	(void)dst;
	if (h->type != WT_REL_PKT_ACK)
		return FK_PASS;
	if (a->drop_acks) {
		a->dropped++;
		return FK_DROP;
	}
	return a->dup_acks ? FK_DUP : FK_PASS;
}

/* Every ack lost for a while: the data gets there, nothing completes until acks flow,
 * then everything completes in order. */
static void test_ack_loss(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct ack_ctl a = {0};

	(void)state;
	world_init(&w, 2, &c, 6);
	w.net.filter = ack_filter;
	w.net.farg = &a;
	world_open(&w);
	pump_for(&w, 5);
	a.drop_acks = 1;
	send_n(&w, 0, 1, 20, 500);
	pump_for(&w, 150);
	assert_int_equal(w.ep[1].next_rx[0], 20);  /* delivered */
	assert_int_equal(w.ep[0].next_done[1], 0); /* but not acknowledged */
	wt_link_stats_t st = stats(&w, 0, 1);

	assert_true(st.timeouts >= 1);
	assert_true(st.retransmits >= 1);
	assert_int_equal(st.in_flight, 20);
	assert_true(a.dropped > 0);
	wt_link_stats_t rs = stats(&w, 1, 0);

	assert_int_equal(rs.duplicates, st.retransmits); /* every resend arrived again */
	a.drop_acks = 0;
	assert_true(pump_until_done(&w, 5));
	assert_int_equal(w.ep[0].next_done[1], 20);
	assert_int_equal(w.ep[1].next_rx[0], 20);
	world_free(&w);
}

/* Every ack duplicated: no spurious retransmission, and no reordering of completions. */
static void test_dup_acks(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct ack_ctl a = {.dup_acks = 1};

	(void)state;
	c.rto_init = c.rto_min = 0.5;
	c.rto_max = 1;
	world_init(&w, 2, &c, 7);
	w.net.filter = ack_filter;
	w.net.farg = &a;
	world_open(&w);
	send_n(&w, 0, 1, 200, 700);
	send_n(&w, 1, 0, 50, 100);
	assert_true(pump_until_done(&w, 5));
	for (int r = 0; r < 2; r++) {
		wt_link_stats_t st = stats(&w, r, 1 - r);

		assert_int_equal(st.retransmits, 0);
		assert_int_equal(st.duplicates, 0);
		assert_int_equal(st.timeouts, 0);
	}
	assert_true(w.net.acks_sent[1][0] > 0);
	assert_int_equal(w.net.dups[1][0], w.net.acks_sent[1][0]);
	world_free(&w);
}

/* Holds data frames back and delivers them long after: stale ones are duplicates; a
 * forged one far beyond the window is dropped; neither is delivered. */
struct hold_ctl {
	int hold_data;
	int held;
	uint64_t seqs[64]; /* only a frame's first transmission is held */
};

static enum fk_action hold_filter(struct net *n, int src, int dst, const wt_rel_hdr_t *h, void *arg)
{
	struct hold_ctl *c = arg;

	(void)n;
	if (!c->hold_data || src != 0 || dst != 1 || h->type != WT_REL_PKT_DATA)
		return FK_PASS;
	for (int i = 0; i < c->held; i++)
		if (c->seqs[i] == h->seq)
			return FK_PASS;
	assert_true(c->held < 64);
	c->seqs[c->held++] = h->seq;
	return FK_HOLD;
}

/* Encodes a frame for injection as if from `from`; seq etc. from h. */
static size_t forge(uint8_t *buf, wt_rel_hdr_t h, const void *payload)
{
	h.version = WT_REL_WIRE_VERSION;
	return make_frame(buf, &h, payload);
}

/* Grabs a real header from 0 to 1 by holding one frame. */
static void grab_data_hdr(struct world *w, struct hold_ctl *hc, wt_rel_hdr_t *out)
{
	hc->hold_data = 1;
	send_n(w, 0, 1, 1, 100);
	pump_for(w, 2);
	hc->hold_data = 0;
	assert_non_null(w->net.held);
	assert_null(wt_rel_hdr_decode(w->net.held->data, w->net.held->len, out));
}

static void test_reorder_beyond_window(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct hold_ctl hc = {0};
	wt_rel_hdr_t h;
	uint8_t buf[FK_MAX_FRAME], junk[FK_MAX_FRAME] = {0};

	(void)state;
	c.window = 8;
	world_init(&w, 2, &c, 8);
	w.net.filter = hold_filter;
	w.net.farg = &hc;
	world_open(&w);
	pump_for(&w, 5);
	/* the first transmissions of 5 frames are held; retransmissions get through */
	hc.hold_data = 1;
	send_n(&w, 0, 1, 5, 100);
	pump_for(&w, 2);
	hc.hold_data = 0;
	assert_int_equal(hc.held, 5);
	assert_true(pump_until_done(&w, 5));
	/* then many windows later, the originals arrive */
	send_n(&w, 0, 1, 40, 100);
	assert_true(pump_until_done(&w, 5));
	wt_link_stats_t before = stats(&w, 1, 0);

	assert_int_equal(net_release_held(&w.net), 5);
	pump_for(&w, 20);
	wt_link_stats_t after = stats(&w, 1, 0);

	assert_int_equal(after.duplicates - before.duplicates, 5);
	assert_int_equal(w.ep[1].next_rx[0], 45);
	/* a well-formed frame of the right epochs but past the receive window */
	grab_data_hdr(&w, &hc, &h);
	free_pkts(w.net.held);
	w.net.held = NULL;
	assert_true(pump_until_done(&w, 5));
	before = stats(&w, 1, 0);
	h.seq += 100;
	size_t len = forge(buf, h, junk);

	net_inject(&w.net, 0, 1, buf, len);
	pump_for(&w, 10);
	after = stats(&w, 1, 0);
	assert_int_equal(after.drops - before.drops, 1);
	assert_int_equal(w.ep[1].next_rx[0], 46);
	world_free(&w);
}

/* Data frames from 0 to 1 get one bit flipped in each header field and at several
 * payload offsets, in turn; HELLOs and ACKs at a random bit. */
static const long corrupt_offs[] = {0,
				    1,
				    2,
				    4,
				    8,
				    12,
				    16,
				    20,
				    24,
				    32,
				    40,
				    48,
				    56,
				    64,
				    68,
				    71,
				    WT_REL_HDR_LEN,
				    WT_REL_HDR_LEN + 1,
				    WT_REL_HDR_LEN + 700,
				    -1};
#define NCORRUPT_OFFS ((int)(sizeof(corrupt_offs) / sizeof(corrupt_offs[0])))

struct corrupt_ctl {
	int next_off;
	int kinds[4]; /* frames of each type still to corrupt (random bit) */
};

static enum fk_action corrupt_filter(struct net *n, int src, int dst, const wt_rel_hdr_t *h,
				     void *arg)
{
	struct corrupt_ctl *c = arg;

	if (h->type == WT_REL_PKT_DATA && src == 0 && dst == 1 && c->next_off < NCORRUPT_OFFS) {
		n->corrupt_off = corrupt_offs[c->next_off++];
		n->corrupt_set = 1;
		return FK_CORRUPT;
	}
	if (h->type < 4 && c->kinds[h->type] > 0) {
		c->kinds[h->type]--;
		return FK_CORRUPT;
	}
	return FK_PASS;
}

static void test_corrupt(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct corrupt_ctl cc = {.kinds = {0, 2, 0, 5}};

	(void)state;
	world_init(&w, 2, &c, 9);
	w.net.filter = corrupt_filter;
	w.net.farg = &cc;
	world_open(&w);
	send_n(&w, 0, 1, 30, 1500);
	send_n(&w, 1, 0, 30, 40);
	assert_true(pump_until_done(&w, 5));
	pump_for(&w, 20);
	assert_int_equal(cc.kinds[1] + cc.kinds[3], 0);
	assert_int_equal(cc.next_off, NCORRUPT_OFFS);
	uint64_t corrupt = 0, injected = 0;

	for (int r = 0; r < 2; r++) {
		wt_link_stats_t st = stats(&w, r, 1 - r);
		wt_link_stats_t peer = stats(&w, 1 - r, r);

		/* what one end saw corrupted is what the wire did to the other's frames */
		assert_int_equal(st.corrupt, peer.fault_corrupts);
		corrupt += st.corrupt;
		injected += peer.fault_corrupts;
	}
	assert_int_equal(corrupt, 7 + NCORRUPT_OFFS);
	assert_int_equal(injected, 7 + NCORRUPT_OFFS);
	assert_true(stats(&w, 1, 0).corrupt >= NCORRUPT_OFFS);
	/* and every message arrived intact, once (check_frame compares every byte) */
	assert_int_equal(w.ep[1].next_rx[0], 30);
	assert_int_equal(w.ep[0].next_rx[1], 30);
	world_free(&w);
}

static enum fk_action dup_data_filter(struct net *n, int src, int dst, const wt_rel_hdr_t *h,
				      void *arg)
{
	(void)n;
	(void)src;
	(void)dst;
	(void)arg;
	return h->type == WT_REL_PKT_DATA ? FK_DUP : FK_PASS;
}

static void test_duplicates(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	c.rto_init = c.rto_min = 0.5;
	c.rto_max = 1;
	world_init(&w, 2, &c, 10);
	w.net.filter = dup_data_filter;
	world_open(&w);
	send_n(&w, 0, 1, 100, 200);
	assert_true(pump_until_done(&w, 5));
	wt_link_stats_t rs = stats(&w, 1, 0), ss = stats(&w, 0, 1);

	assert_int_equal(ss.retransmits, 0);
	assert_int_equal(w.net.data_sent[0][1], 100);
	assert_int_equal(rs.duplicates, 100);
	assert_int_equal(ss.fault_dups, 100);
	assert_int_equal(w.ep[1].next_rx[0], 100);
	world_free(&w);
}

/* The window fills while the receiver sleeps; the sender gets WT_AGAIN, then resumes. */
static void test_window_full(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	c.window = 16;
	world_init(&w, 2, &c, 11);
	world_open(&w);
	pump_for(&w, 5);
	w.ep[1].paused = 1;
	int accepted = 0;

	while (ep_send(&w, 0, 1, 100) == WEFT_INPROGRESS)
		accepted++;
	assert_int_equal(accepted, 16);
	pump_for(&w, 30);
	assert_int_equal(ep_send(&w, 0, 1, 100), WT_AGAIN);
	assert_int_equal(w.ep[0].next_done[1], 0);
	wt_link_stats_t st = stats(&w, 0, 1);

	assert_int_equal(st.in_flight, 16);
	assert_true(st.timeouts >= 1); /* the silent receiver looks like loss */
	w.ep[1].paused = 0;
	assert_true(pump_until_done(&w, 5));
	assert_int_equal(ep_send(&w, 0, 1, 100), WEFT_INPROGRESS);
	assert_true(pump_until_done(&w, 5));
	assert_int_equal(w.ep[1].next_rx[0], 17);
	world_free(&w);
}

/* A receiver that stops polling for a while, with a bounded receive queue at the wire
 * (like a socket buffer), loses nothing; the sender only ever sees backpressure. */
static void test_receiver_stalls(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	world_init(&w, 2, &c, 12);
	w.net.queue_limit = 64;
	world_open(&w);
	pump_for(&w, 5);
	uint64_t stall_until = 0;
	int stalls = 0;

	for (int i = 0; i < 3000; i++) {
		if (i % 1000 == 500) {
			w.ep[1].paused = 1;
			stall_until = wt_util_time_ns() + 100000000;
			stalls++;
		}
		if (w.ep[1].paused && wt_util_time_ns() >= stall_until)
			w.ep[1].paused = 0;
		while (ep_send(&w, 0, 1, 100 + (size_t)(i % 900)) == WT_AGAIN) {
			if (w.ep[1].paused && wt_util_time_ns() >= stall_until)
				w.ep[1].paused = 0;
			if (pump(&w) == 0)
				usleep(100);
		}
	}
	w.ep[1].paused = 0;
	assert_true(pump_until_done(&w, 10));
	assert_int_equal(stalls, 3);
	assert_int_equal(w.ep[1].next_rx[0], 3000);
	assert_int_equal(w.ep[0].done_err[1], 0);
	assert_int_equal(w.ep[0].peer_errors[1], 0);
	world_free(&w);
}

/* A wrapper with another job's key: its HELLOs are refused and nothing flows. */
static void test_bad_proof(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	world_init(&w, 2, &c, 13);
	w.token[1] = "another-job";
	world_open(&w);
	send_n(&w, 0, 1, 3, 100);
	send_n(&w, 1, 0, 3, 100);
	pump_for(&w, 100);
	for (int r = 0; r < 2; r++) {
		wt_link_stats_t st = stats(&w, r, 1 - r);

		assert_true(st.rejected >= 2); /* the first HELLO and resends */
		assert_int_equal(st.frames_received, st.rejected);
		assert_int_equal(w.ep[r].next_rx[1 - r], 0);
		assert_int_equal(w.ep[r].next_done[1 - r], 0);
		assert_int_equal(w.ep[r].peer_errors[1 - r], 0);
	}
	world_free(&w);
}

/* Forged and misaddressed frames against an established pair change nothing. */
static void test_forged(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct hold_ctl hc = {0};
	wt_rel_hdr_t h, f;
	uint8_t buf[FK_MAX_FRAME], junk[FK_MAX_FRAME] = {0}, proof[WT_REL_PROOF_LEN] = {1, 2, 3};

	(void)state;
	world_init(&w, 3, &c, 14);
	w.net.filter = hold_filter;
	w.net.farg = &hc;
	world_open(&w);
	pump_for(&w, 10);
	grab_data_hdr(&w, &hc, &h);
	assert_int_equal(net_release_held(&w.net), 1);
	assert_true(pump_until_done(&w, 5));
	wt_link_stats_t before = stats(&w, 1, 0);
	int expect = 0;

	/* a HELLO announcing a "restart" without a valid proof */
	f = h;
	f.type = WT_REL_PKT_HELLO;
	f.flags = WT_REL_FL_WANT_REPLY;
	f.len = WT_REL_PROOF_LEN;
	f.src_epoch = h.src_epoch + 1;
	f.dst_epoch = 0;
	net_inject(&w.net, 0, 1, buf, forge(buf, f, proof));
	expect++;
	/* data from a stale epoch, to a stale epoch, claiming another rank, to another rank */
	f = h;
	f.seq++;
	f.src_epoch ^= 1;
	net_inject(&w.net, 0, 1, buf, forge(buf, f, junk));
	expect++;
	f = h;
	f.seq++;
	f.dst_epoch ^= 1;
	net_inject(&w.net, 0, 1, buf, forge(buf, f, junk));
	expect++;
	f = h;
	f.seq++;
	f.src = 2;
	net_inject(&w.net, 0, 1, buf, forge(buf, f, junk));
	expect++;
	f = h;
	f.seq++;
	f.dst = 2;
	net_inject(&w.net, 0, 1, buf, forge(buf, f, junk));
	expect++;
	/* an ack of frames never sent */
	f = h;
	f.type = WT_REL_PKT_ACK;
	f.len = 0;
	f.src = 1;
	f.dst = 0;
	f.ack = h.seq + 1000;
	/* (its epochs are swapped to look as if 1 sent it) */
	f.src_epoch = h.dst_epoch;
	f.dst_epoch = h.src_epoch;
	net_inject(&w.net, 1, 0, buf, forge(buf, f, junk)); /* len 0: none of it */
	pump_for(&w, 20);
	wt_link_stats_t after = stats(&w, 1, 0);

	assert_int_equal(after.rejected - before.rejected, expect);
	assert_int_equal(stats(&w, 0, 1).rejected, 1);
	for (int r = 0; r < 3; r++)
		for (int p = 0; p < 3; p++)
			assert_int_equal(w.ep[r].peer_errors[p], 0);
	/* and the pair still works */
	send_n(&w, 0, 1, 10, 100);
	send_n(&w, 1, 0, 10, 100);
	assert_true(pump_until_done(&w, 5));
	world_free(&w);
}

/* Rank 1 restarts (new wrapper, new epoch): rank 0 reports it once and drops its
 * traffic; frames of the old session reaching the new one are refused. */
static void test_restart(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	world_init(&w, 2, &c, 15);
	world_open(&w);
	send_n(&w, 0, 1, 20, 100);
	send_n(&w, 1, 0, 20, 100);
	assert_true(pump_until_done(&w, 5));
	/* rank 1 goes quiet with frames on their way to it */
	w.ep[1].paused = 1;
	send_n(&w, 0, 1, 10, 100);
	pump_for(&w, 5);
	wt_link_ops(w.ep[1].rel)->close(w.ep[1].rel);
	assert_int_equal(rel_open_ep(&w, 1), WEFT_OK);
	memset(w.ep[1].next_rx, 0, sizeof(w.ep[1].next_rx));
	w.ep[1].paused = 0;
	assert_int_equal(wt_link_ops(w.ep[1].rel)->connect(w.ep[1].rel, 0, NULL, 0), WEFT_OK);
	pump_for(&w, 200);
	assert_int_equal(w.ep[0].peer_errors[1], 1);
	assert_int_equal(w.ep[0].peer_err_st[1], WEFT_ERR_PEER_FAILED);
	/* the ten frames in flight come back, failed, in order */
	assert_int_equal(w.ep[0].next_done[1], 30);
	assert_int_equal(w.ep[0].done_err[1], 10);
	assert_int_equal(w.ep[1].next_rx[0], 0);
	wt_link_stats_t st0 = stats(&w, 0, 1), st1 = stats(&w, 1, 0);

	assert_true(st0.rejected >= 1);	 /* the new incarnation's HELLO resends */
	assert_true(st1.rejected >= 10); /* old-session frames */
	uint8_t b[16] = {0};
	struct iovec iov = {b, sizeof(b)};

	assert_int_equal(wt_link_ops(w.ep[0].rel)->send(w.ep[0].rel, 1, &iov, 1, NULL),
			 WEFT_ERR_PEER_FAILED);
	pump_for(&w, 50);
	assert_int_equal(w.ep[0].peer_errors[1], 1); /* once */
	world_free(&w);
}

/* timer_ms and arm tell a sleeping caller the truth. */
static void test_timers(void **state)
{
	struct world w;
	wt_link_event_t ev[8];

	(void)state;
	world_init(&w, 2, NULL, 16); /* the default timeouts */
	for (int r = 0; r < 2; r++)
		assert_int_equal(rel_open_ep(&w, r), WEFT_OK);
	wt_link_t *a = w.ep[0].rel;
	const wt_link_ops_t *ops = wt_link_ops(a);

	assert_int_equal(ops->timer_ms(a), -1);
	assert_int_equal(ops->arm(a), 0);
	assert_int_equal(ops->connect(a, 1, NULL, 0), WEFT_OK);
	/* first HELLO sent; the resend is due in the initial RTO (20 ms) */
	int t = ops->timer_ms(a);

	assert_true(t >= 1 && t <= 20);
	wt_util_sleep_ns(25000000);
	assert_int_equal(ops->timer_ms(a), 0);
	assert_int_equal(ops->arm(a), 1);
	assert_true(ops->poll(a, ev, 8) >= 0);
	t = ops->timer_ms(a);
	assert_true(t >= 30 && t <= 40); /* backed off */
	assert_int_equal(w.net.sent[0][1], 2);
	wt_link_stats_t st = stats(&w, 0, 1);

	assert_int_equal(st.rto_us, 20000);
	/* the peer appears: after the handshake everything is idle */
	assert_int_equal(wt_link_ops(w.ep[1].rel)->connect(w.ep[1].rel, 0, NULL, 0), WEFT_OK);
	pump_for(&w, 10);
	assert_int_equal(ops->timer_ms(a), -1);
	assert_int_equal(ops->arm(a), 0);
	/* a frame to a receiver that does not poll: the RTO timer runs */
	w.ep[1].paused = 1;
	send_n(&w, 0, 1, 1, 100);
	t = ops->timer_ms(a);
	assert_true(t >= 1 && t <= 20);
	assert_int_equal(ops->arm(a), 0);
	wt_util_sleep_ns((uint64_t)t * 1000000 + 1000000);
	assert_int_equal(ops->timer_ms(a), 0);
	assert_int_equal(ops->arm(a), 1);
	w.ep[1].paused = 0;
	assert_true(pump_until_done(&w, 5));
	/* acked: nothing pending again; an ack owed is "work" until sent */
	pump_for(&w, 5);
	assert_int_equal(ops->timer_ms(a), -1);
	assert_int_equal(ops->timer_ms(w.ep[1].rel), -1);
	assert_int_equal(ops->arm(w.ep[1].rel), 0);
	st = stats(&w, 0, 1);
	assert_true(st.timeouts >= 1);
	assert_true(st.rto_us >= 5000 && st.rto_us <= 1000000);
	world_free(&w);
}

/* The inner link holds every transmission for a while (WEFT_INPROGRESS): completions
 * wait until it lets go of every copy. */
static void test_inner_inprogress(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	c.isn = 77;
	world_init(&w, 2, &c, 17);
	w.net.drop = 0.05;
	w.net.dup = 0.02;
	w.net.reorder = 0.05;
	for (int r = 0; r < 2; r++) {
		w.ep[r].fake->inprogress = 1;
		w.ep[r].check.on = 1;
		w.ep[r].check.isn = 77;
	}
	world_open(&w);
	for (int i = 0; i < 40; i++) {
		send_n(&w, 0, 1, 25, 50 + (size_t)i * 40);
		send_n(&w, 1, 0, 25, 60);
	}
	assert_true(pump_until_done(&w, 20));
	assert_int_equal(w.ep[1].next_rx[0], 1000);
	assert_int_equal(w.ep[0].next_rx[1], 1000);
	world_free(&w);
}

/* Three peers over one wrapper each, all talking at once over a faulty wire, polled
 * with small event arrays so events carry over between polls. */
static void test_three_peers(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	c.window = 32;
	world_init(&w, 3, &c, 18);
	w.net.drop = 0.05;
	w.net.dup = 0.02;
	w.net.reorder = 0.05;
	w.net.corrupt = 0.01;
	w.net.again = 0.02;
	world_open(&w);
	w.ep[0].max_ev = 1;
	w.ep[1].max_ev = 3;
	w.ep[2].max_ev = -1;
	for (int i = 0; i < 300; i++)
		for (int a = 0; a < 3; a++)
			for (int b = 0; b < 3; b++)
				if (a != b)
					send_n(&w, a, b, 1, 16 + (wrand(&w) % 1900));
	assert_true(pump_until_done(&w, 30));
	pump_for(&w, 20); /* frames still held back for reordering arrive */
	for (int a = 0; a < 3; a++)
		for (int b = 0; b < 3; b++)
			if (a != b) {
				assert_int_equal(w.ep[b].next_rx[a], 300);
				assert_int_equal(stats(&w, a, b).corrupt,
						 stats(&w, b, a).fault_corrupts);
			}
	world_free(&w);
}

static void test_soak(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	const int total = 20000;

	(void)state;
	world_init(&w, 2, &c, 19);
	w.net.drop = 0.05;
	w.net.dup = 0.01;
	w.net.reorder = 0.05;
	w.net.corrupt = 0.001;
	world_open(&w);
	w.ep[1].max_ev = -1;
	uint64_t t0 = wt_util_time_ns();
	size_t maxlen = wt_link_max_frame(w.ep[0].rel);

	for (int i = 0; i < total; i++) {
		send_n(&w, 0, 1, 1, 16 + (size_t)(wrand(&w) % (maxlen - 15)));
		if (i % 4 == 0)
			send_n(&w, 1, 0, 1, 16 + (size_t)(wrand(&w) % 200));
		if (i % 16 == 0)
			pump(&w);
	}
	assert_true(pump_until_done(&w, 120));
	double s = (double)(wt_util_time_ns() - t0) / 1e9;

	pump_for(&w, 20); /* frames still held back for reordering arrive */

	assert_int_equal(w.ep[1].next_rx[0], (uint64_t)total);
	assert_int_equal(w.ep[0].next_rx[1], (uint64_t)total / 4);
	wt_link_stats_t st = stats(&w, 0, 1), rs = stats(&w, 1, 0);

	assert_int_equal(rs.corrupt, st.fault_corrupts);
	assert_int_equal(st.corrupt, rs.fault_corrupts);
	assert_true(st.retransmits >= st.fault_drops / 2);
	assert_true(rs.duplicates > 0);
	print_message("soak: %d frames in %.2f s; wire drops %llu dups %llu reorders %llu "
		      "corrupts %llu; retransmits %llu (timeouts %llu), duplicates %llu, "
		      "srtt %llu us, rto %llu us\n",
		      total, s, (unsigned long long)st.fault_drops,
		      (unsigned long long)st.fault_dups, (unsigned long long)st.fault_reorders,
		      (unsigned long long)st.fault_corrupts, (unsigned long long)st.retransmits,
		      (unsigned long long)st.timeouts, (unsigned long long)rs.duplicates,
		      (unsigned long long)st.srtt_us, (unsigned long long)st.rto_us);
	assert_true(s < 120);
	world_free(&w);
}

/* What the inner link reports goes up once: a lost peer, a refused send, a broken link. */
static void test_inner_errors(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	uint8_t b[32] = {0};
	struct iovec iov = {b, sizeof(b)};

	(void)state;
	world_init(&w, 3, &c, 21);
	world_open(&w);
	send_n(&w, 0, 1, 10, 100);
	send_n(&w, 0, 2, 10, 100);
	assert_true(pump_until_done(&w, 5));
	/* the inner link loses rank 1 with frames outstanding to it */
	w.ep[1].paused = 1;
	send_n(&w, 0, 1, 5, 100);
	w.ep[0].fake->lose_peer = 1;
	pump_for(&w, 30);
	assert_int_equal(w.ep[0].peer_errors[1], 1);
	assert_int_equal(w.ep[0].peer_err_st[1], WEFT_ERR_SYSTEM);
	assert_int_equal(w.ep[0].next_done[1], 15);
	assert_int_equal(w.ep[0].done_err[1], 5);
	wt_link_t *r0 = w.ep[0].rel;

	assert_int_equal(wt_link_ops(r0)->send(r0, 1, &iov, 1, NULL), WEFT_ERR_SYSTEM);
	/* the inner link refuses a send to rank 2: that send fails at once, and the peer */
	w.ep[0].fake->send_err = WEFT_ERR_PEER_FAILED;
	assert_int_equal(wt_link_ops(r0)->send(r0, 2, &iov, 1, NULL), WEFT_ERR_PEER_FAILED);
	w.ep[0].fake->send_err = WEFT_OK;
	pump_for(&w, 10);
	assert_int_equal(w.ep[0].peer_errors[2], 1);
	assert_int_equal(w.ep[0].next_done[2], 10);
	assert_int_equal(w.ep[0].done_err[2], 0);
	/* a broken inner link breaks the wrapper */
	wt_link_event_t ev[4];

	w.ep[2].fake->poll_err = WEFT_ERR_SYSTEM;
	assert_int_equal(wt_link_ops(w.ep[2].rel)->poll(w.ep[2].rel, ev, 4), WEFT_ERR_SYSTEM);
	w.ep[2].fake->poll_err = 0;
	assert_int_equal(wt_link_ops(w.ep[2].rel)->poll(w.ep[2].rel, ev, 4), WEFT_ERR_SYSTEM);
	assert_int_equal(wt_link_ops(w.ep[2].rel)->arm(w.ep[2].rel), 1);
	assert_int_equal(wt_link_ops(w.ep[2].rel)->timer_ms(w.ep[2].rel), 0);
	w.ep[2].rel_broken = 1;
	world_free(&w);
}

/* Closing with frames still in flight and buffered: no events, nothing leaks. */
static void test_close_busy(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	world_init(&w, 2, &c, 20);
	w.net.reorder = 0.3;
	w.net.drop = 0.1;
	for (int r = 0; r < 2; r++)
		w.ep[r].fake->inprogress = 1;
	world_open(&w);
	send_n(&w, 0, 1, 100, 500);
	send_n(&w, 1, 0, 100, 500);
	pump(&w);
	world_free(&w);
}

/* ======================= frame descriptions (send_info) ======================= */

static void info_log_on(struct world *w)
{
	w->net.infos = calloc(FK_INFO_MAX, sizeof(*w->net.infos));
	assert_non_null(w->net.infos);
	w->net.ninfo = 0;
}

/* Logged frames from src to dst of one kind. */
static int info_count(const struct net *n, int src, int dst, int kind)
{
	int c = 0;

	for (int i = 0; i < n->ninfo; i++)
		c += n->infos[i].src == src && n->infos[i].dst == dst &&
		     n->infos[i].info.kind == kind;
	return c;
}

/* Every frame goes through send_info with its kind; data frames carry consecutive
 * sequence numbers from the ISN; acks the receiver's cumulative ack; the handshake is
 * CTRL; the last frame of a burst asks for an ack. */
static void test_info_kinds(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	const uint64_t isn = 1000;

	(void)state;
	c.isn = isn;
	c.rto_init = c.rto_min = 0.5; /* no spurious retransmission on a busy machine */
	c.rto_max = 1;
	world_init(&w, 2, &c, 22);
	info_log_on(&w);
	world_open(&w);
	/* posted before the handshake: each side's frames go out in one burst */
	send_n(&w, 0, 1, 10, 100);
	send_n(&w, 1, 0, 3, 100);
	assert_true(pump_until_done(&w, 5));
	pump_for(&w, 10);
	for (int src = 0; src < 2; src++) {
		int dst = 1 - src;
		uint64_t count = src == 0 ? 10 : 3, received = src == 0 ? 3 : 10;
		uint64_t next = isn, last_ack = isn, last_pure = 0;
		int first = 1;

		assert_int_equal(w.net.plain_sends[src], 0);
		/* every frame on the wire was described, with its kind */
		assert_int_equal(info_count(&w.net, src, dst, WT_LINK_FRAME_DATA),
				 w.net.data_sent[src][dst]);
		assert_int_equal(info_count(&w.net, src, dst, WT_LINK_FRAME_ACK),
				 w.net.acks_sent[src][dst]);
		assert_int_equal(info_count(&w.net, src, dst, WT_LINK_FRAME_CTRL),
				 w.net.sent[src][dst] - w.net.data_sent[src][dst] -
				     w.net.acks_sent[src][dst]);
		for (int i = 0; i < w.net.ninfo; i++) {
			const struct info_rec *r = &w.net.infos[i];

			if (r->src != src)
				continue;
			if (first) { /* the first HELLO: our ISN, and it wants a reply */
				assert_int_equal(r->info.kind, WT_LINK_FRAME_CTRL);
				assert_int_equal(r->h.type, WT_REL_PKT_HELLO);
				assert_int_equal(r->info.seq, isn);
				assert_int_equal(r->info.ack_req, 1);
				first = 0;
			}
			if (r->info.kind == WT_LINK_FRAME_CTRL)
				continue;
			if (r->info.kind == WT_LINK_FRAME_DATA) {
				assert_int_equal(r->info.seq, next);
				assert_int_equal(r->info.ack_req, next == isn + count - 1);
				next++;
			} else {
				last_pure = r->info.ack;
			}
			/* data and acks both carry what arrived in order, never going back */
			assert_true(r->info.ack >= last_ack && r->info.ack <= isn + received);
			last_ack = r->info.ack;
		}
		assert_int_equal(next, isn + count);
		assert_int_equal(last_ack, isn + received);
		/* rank 1 has nothing to send after rank 0's data: a pure ack says it all */
		if (src == 1)
			assert_int_equal(last_pure, isn + received);
	}
	free(w.net.infos);
	world_free(&w);
}

/* Retransmissions carry the sequence number of the original and ask for an ack. */
static void test_info_retransmit(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	struct drop_nth d = {.nth = 1, .times = 2}; /* not the last: only the resend asks */
	const uint64_t isn = 5000;
	int tx[5] = {0}, next_first = 0;
	uint64_t repeats = 0;

	(void)state;
	c.isn = isn;
	world_init(&w, 2, &c, 23);
	w.net.filter = drop_nth_filter;
	w.net.farg = &d;
	world_open(&w);
	pump_for(&w, 5);
	info_log_on(&w);
	send_n(&w, 0, 1, 5, 200);
	assert_true(pump_until_done(&w, 5));
	assert_int_equal(d.dropped, 2);
	assert_int_equal(d.first_seq, isn);
	for (int i = 0; i < w.net.ninfo; i++) {
		const struct info_rec *r = &w.net.infos[i];

		if (r->src != 0 || r->info.kind != WT_LINK_FRAME_DATA)
			continue;
		assert_true(r->info.seq >= isn && r->info.seq < isn + 5);
		int k = (int)(r->info.seq - isn);

		if (tx[k] == 0) { /* first transmissions, in order */
			assert_int_equal(k, next_first);
			next_first++;
		} else { /* a retransmission: the same seq, and it wants an ack */
			assert_int_equal(r->info.ack_req, 1);
			repeats++;
		}
		tx[k]++;
	}
	/* the lost frame went three times (two lost), every transmission described */
	assert_true(tx[1] >= 3);
	assert_int_equal(repeats, stats(&w, 0, 1).retransmits);
	assert_int_equal(info_count(&w.net, 0, 1, WT_LINK_FRAME_DATA), w.net.data_sent[0][1]);
	free(w.net.infos);
	world_free(&w);
}

/* An inner link without send_info gets plain sends, and everything works. */
static void test_info_fallback(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;

	(void)state;
	world_init(&w, 2, &c, 24);
	fk_use_plain(w.ep[1].fake);
	info_log_on(&w);
	world_open(&w);
	send_n(&w, 0, 1, 20, 300);
	send_n(&w, 1, 0, 20, 300);
	assert_true(pump_until_done(&w, 5));
	assert_int_equal(w.net.plain_sends[0], 0);
	assert_true(w.net.plain_sends[1] >= 20);
	for (int i = 0; i < w.net.ninfo; i++)
		assert_int_equal(w.net.infos[i].src, 0);
	assert_true(info_count(&w.net, 0, 1, WT_LINK_FRAME_DATA) >= 20);
	assert_int_equal(w.ep[0].next_rx[1], 20);
	assert_int_equal(w.ep[1].next_rx[0], 20);
	free(w.net.infos);
	world_free(&w);
}

/* Over a link that checks integrity itself (WT_LINK_CAP_INTEGRITY) data frames leave the
 * payload CRC out, say so in a flag, and still arrive intact; the decoder takes the flag
 * only on data, only with a zero CRC field. */
static wt_link_ops_t fk_ops_integrity;

static enum fk_action integrity_filter(struct net *n, int src, int dst, const wt_rel_hdr_t *h,
				       void *arg)
{
	int *seen = arg;

	(void)n;
	(void)src;
	(void)dst;
	if (h->type == WT_REL_PKT_DATA) {
		assert_int_equal(h->flags, WT_REL_FL_NO_PCRC);
		assert_int_equal(h->payload_crc, 0);
		(*seen)++;
	} else {
		assert_int_equal(h->flags & WT_REL_FL_NO_PCRC, 0);
	}
	return FK_PASS;
}

static void test_integrity(void **state)
{
	wt_rel_config_t c = fast_cfg();
	struct world w;
	int seen = 0;

	(void)state;
	world_init(&w, 2, &c, 31);
	fk_ops_integrity = fk_ops;
	fk_ops_integrity.caps |= WT_LINK_CAP_INTEGRITY;
	for (int r = 0; r < 2; r++)
		w.ep[r].fake->base.ops = &fk_ops_integrity;
	w.net.filter = integrity_filter;
	w.net.farg = &seen;
	world_open(&w);
	send_n(&w, 0, 1, 40, 1500);
	send_n(&w, 1, 0, 40, 70);
	assert_true(pump_until_done(&w, 5));
	assert_true(seen >= 80);
	/* check_frame compared every byte of every message */
	assert_int_equal(w.ep[1].next_rx[0], 40);
	assert_int_equal(w.ep[0].next_rx[1], 40);
	world_free(&w);

	uint8_t buf[WT_REL_HDR_LEN + 16], payload[16] = {1, 2, 3};
	wt_rel_hdr_t h = {.version = WT_REL_WIRE_VERSION,
			  .type = WT_REL_PKT_DATA,
			  .flags = WT_REL_FL_NO_PCRC,
			  .len = 16,
			  .src_epoch = 5,
			  .seq = 9},
		     d;

	wt_rel_hdr_encode(&h, buf);
	memcpy(buf + WT_REL_HDR_LEN, payload, 16);
	assert_null(wt_rel_hdr_decode(buf, sizeof(buf), &d));
	assert_int_equal(d.flags, WT_REL_FL_NO_PCRC);
	h.payload_crc = wt_util_crc32c(0, payload, 16); /* the flag says there is none */
	wt_rel_hdr_encode(&h, buf);
	assert_non_null(wt_rel_hdr_decode(buf, sizeof(buf), &d));
	h.payload_crc = 0;
	h.type = WT_REL_PKT_ACK; /* data only */
	h.len = 0;
	wt_rel_hdr_encode(&h, buf);
	assert_non_null(wt_rel_hdr_decode(buf, WT_REL_HDR_LEN, &d));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_wire),
	    cmocka_unit_test(test_wire_random),
	    cmocka_unit_test(test_basic),
	    cmocka_unit_test(test_bad_args),
	    cmocka_unit_test(test_wraparound),
	    cmocka_unit_test(test_last_frame_lost),
	    cmocka_unit_test(test_fast_retransmit),
	    cmocka_unit_test(test_ack_loss),
	    cmocka_unit_test(test_dup_acks),
	    cmocka_unit_test(test_reorder_beyond_window),
	    cmocka_unit_test(test_corrupt),
	    cmocka_unit_test(test_duplicates),
	    cmocka_unit_test(test_window_full),
	    cmocka_unit_test(test_receiver_stalls),
	    cmocka_unit_test(test_bad_proof),
	    cmocka_unit_test(test_forged),
	    cmocka_unit_test(test_restart),
	    cmocka_unit_test(test_timers),
	    cmocka_unit_test(test_inner_inprogress),
	    cmocka_unit_test(test_three_peers),
	    cmocka_unit_test(test_soak),
	    cmocka_unit_test(test_inner_errors),
	    cmocka_unit_test(test_close_busy),
	    cmocka_unit_test(test_info_kinds),
	    cmocka_unit_test(test_info_retransmit),
	    cmocka_unit_test(test_info_fallback),
	    cmocka_unit_test(test_integrity),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
