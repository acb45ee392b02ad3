/* Tagged per-peer messages over link drivers (layers/channel): matching, eager and
 * rendezvous protocols, receive-with-reduce, per-peer send FIFOs with backpressure,
 * heartbeats and peer-failure reporting; and waits on words in peers' shared slot areas. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "layers/channel/channel.h"
#include "layers/channel/wire.h"
#include "layers/channel/rel.h"
#include "lib/util/copy.h"
#include "lib/util/dtype.h"
#include "lib/util/env.h"
#include "lib/util/log.h"
#include "lib/util/place.h"
#include "lib/util/time.h"

#define WT_CHAN_DEFAULT_EAGER 8192
#define WT_CHAN_EV_BATCH 64
#define WT_CHAN_POLL_ROUNDS 4
#define WT_CHAN_FRAME_IOV 8
#define WT_CHAN_GET_CHUNK (256 * 1024)
#define WT_CHAN_MSG_LEN 192
#define WT_CHAN_SEND_IOV 4
/* Heartbeat bookkeeping runs at most this often, however often progress is called. */
#define WT_CHAN_HB_TICK_NS 10000000ull
/* Before the first frame from a peer its connection may still be coming up: the link's
 * own connect timeout covers that phase, so silence is judged only after this long. */
#define WT_CHAN_CONNECT_GRACE_S 60.0
/* Below this the clock granularity and the 100 ms idle wake-ups make verdicts unreliable. */
#define WT_CHAN_MIN_PEER_TIMEOUT 0.1
#define WT_CHAN_MAX_PEER_TIMEOUT 1e6
/* Progress calls that only look at slot waits (one completed, or nothing but waits is
 * pending) skip the links only this soon after the last call that polled them: a caller
 * spinning on a wait polls the links once per tick of the coarse clock, a caller that
 * sleeps between calls every time it wakes. */
#define WT_CHAN_WAIT_SKIP_NS 1000000ull

enum { L_NONE, L_POSTED, L_START, L_CQ, L_RUN, L_FREE, L_WAIT };
enum { OP_SEND = 1, OP_RECV = 2, OP_WAIT = 3 };
enum { SL_FREE, SL_SEND, SL_ZOMBIE, SL_RECV, SL_DISCARD };
/* RNDV_FIXED: RNDV_AUTO without the placement's part (WEFT_RNDV_GET=fixed) */
enum { RNDV_STREAM = 0, RNDV_GET = 1, RNDV_AUTO = 2, RNDV_FIXED = 3 };

struct wt_chan_op {
	wt_chan_op_t *lprev, *lnext; /* posted queue, start list or completion lists */
	wt_chan_op_t *aprev, *anext; /* every allocated op (fail_peer, destroy) */
	struct mentry *ment;	     /* L_POSTED: the (peer, tag) entry */
	int list;
	int kind;
	int peer;
	int live;     /* the user owns it: no callback yet and not cancelled */
	int finished; /* status decided, waiting in the completion queue */
	int refs;     /* frame records pointing at it */
	uint64_t tag;
	uint64_t slot; /* rendezvous slot id, 0 if none */
	wt_chan_done_fn_t cb;
	void *arg;
	weft_status_t st;
	size_t bytes;
	/* send */
	struct iovec iov_in[WT_CHAN_SEND_IOV];
	struct iovec *iov;
	int iovcnt;
	size_t total;
	/* send with a copy (wt_chan_post_send_copy): the bytes also go to copy_to, up to
	 * `copied` so far, each piece right after the link took it (still in cache) */
	uint8_t *copy_to;
	size_t copied;
	int copy_stream;
	/* recv */
	void *dst;
	size_t len;
	wt_chan_reduce_t red;
	size_t elem;
	uint64_t msg_len;
	uint64_t send_id;
	uint64_t addr;
	int has_addr;
	/* wait: done once *word >= value */
	const _Atomic uint64_t *word;
	uint64_t value;
	char msg[WT_CHAN_MSG_LEN];
};

typedef struct {
	wt_chan_op_t *head, *tail;
} oplist_t;

/* A message that arrived before its receive: eager data copied, or just the RTS. */
struct unexp {
	struct unexp *next;
	int type;
	uint64_t len;
	void *data;
	uint64_t send_id;
	uint64_t addr;
	int has_addr;
};

/* Matching state of one (peer, tag): posted receives and unexpected messages, each in
 * arrival order. Exists only while one of the two queues is non-empty. */
struct mentry {
	struct mentry *hnext;
	int peer;
	uint64_t tag;
	oplist_t recvs;
	struct unexp *uhead, *utail;
};

/* Rendezvous state addressed by id from the peer: (generation << 32) | index. */
struct slot {
	uint32_t gen;
	uint8_t kind;
	int peer;
	wt_chan_op_t *op;
	uint64_t next_off;
	uint64_t total;
	uint32_t next_free;
};

/* One frame waiting in a peer's FIFO or held by a link (WEFT_INPROGRESS). A stream item
 * stands for all DATA frames of a rendezvous send; fragments are cut from it lazily. */
struct frame {
	struct frame *prev, *next;
	wt_chan_op_t *op;
	int stream;
	size_t frag; /* a stream's fragment size (stream_frag) */
	int complete_on_take;
	uint8_t *held; /* an eager frame's own copy of its bytes (frame_hold), or NULL */
	int in_fifo;   /* in its peer's FIFO (not yet handed to the link) */
	uint8_t hdr[WT_CHAN_HDR_LEN];
	struct iovec iov_in[WT_CHAN_FRAME_IOV];
	struct iovec *iov;
	int iovcnt;
	uint8_t type;
	uint64_t recv_id;
	size_t off, end;
};

struct peer {
	wt_link_t *link;
	size_t eager;
	size_t frag;
	int failed;
	weft_status_t fail_st;
	char why[WT_CHAN_MSG_LEN];
	struct frame *qhead, *qtail;
	int in_backlog;
	int bnext;
	uint64_t notify;    /* failed, the peer-fail callback not run yet: the failure's number */
	int heard;	    /* a frame arrived from it: the silence clock runs */
	uint64_t linked_at; /* coarse ns of wt_chan_set_link */
	uint64_t last_rx;   /* coarse ns of its last frame (or grace end - timeout) */
	uint64_t last_tx;   /* coarse ns the link last took a frame for it */
	int posted;	    /* our receives from it waiting for a message */
	int no_get;	    /* a get from it failed before moving data: stream from now on */
};

struct wt_chan {
	int rank;
	int size;
	size_t eager_limit;
	struct peer *peers;
	wt_link_t **links;
	int nlinks;
	struct mentry **buckets;
	size_t nbuckets;
	size_t nentries;
	struct slot *slots;
	uint32_t nslots;
	uint32_t free_slot; /* UINT32_MAX: none */
	wt_chan_op_t *all;
	oplist_t start, cq, run;
	oplist_t waits; /* posted slot waits (L_WAIT) */
	size_t nwaits;
	uint64_t last_poll;   /* coarse ns of the last progress call that polled the links */
	wt_link_t *slot_link; /* the first routed link with slot areas, if any */
	struct frame *inlink;
	int bhead; /* peers with a non-empty FIFO, linked by bnext; -1 ends */
	wt_chan_op_t *free_ops;
	struct frame *free_frames;
	struct mentry *free_ments;
	struct unexp *free_unexp;
	uint8_t *bounce;
	size_t outstanding;
	int in_progress;
	int nnotify;	     /* peers with notify set */
	uint64_t notify_seq; /* numbers the failures, so owners hear of them in order */
	wt_chan_peer_fail_fn_t fail_fn;
	void *fail_arg;
	uint64_t hb_timeout_ns; /* 0: no heartbeats, no silence verdicts */
	uint64_t hb_interval_ns;
	uint64_t now;	     /* coarse clock, refreshed by every progress call */
	uint64_t last_tick;  /* when heartbeat bookkeeping last ran */
	int greet;	     /* a peer was routed: greet it at the next progress call */
	int rndv_get;	     /* WEFT_RNDV_GET: RNDV_AUTO, RNDV_FIXED, or 0 / 1 forced */
	size_t get_min;	     /* RNDV_AUTO: plain receives from this size by get (0: none) */
	size_t far_get_min;  /* RNDV_AUTO: ... and exchanges' from this size while far (0: none) */
	size_t xchg_get_min; /* AUTO and FIXED: ... and exchanges' from this size (0: none) */
	int (*far_fn)(void); /* the placement: 1 far, 0 near, -1 unknown */
	uint64_t hb_sent, hb_recv;
};

/* Every heartbeat is the same header-only frame; being immutable it may stay referenced
 * by a link for as long as the link likes. */
static const uint8_t hb_frame[WT_CHAN_HDR_LEN] = {WT_CHAN_WIRE_VERSION, WT_CHAN_FR_HEARTBEAT};

/* A cheap clock (no syscall, a few ms resolution): progress reads it on every call. */
static uint64_t coarse_ns(void)
{
	struct timespec ts;

	if (clock_gettime(CLOCK_MONOTONIC_COARSE, &ts) != 0)
		return wt_util_time_ns();
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void fail_peer(wt_chan_t *ch, int peer, weft_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void op_finish(wt_chan_t *ch, wt_chan_op_t *op, weft_status_t st, size_t bytes,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/* ---- op lists ---- */

static void olist_push(oplist_t *l, wt_chan_op_t *op, int which)
{
	op->lnext = NULL;
	op->lprev = l->tail;
	if (l->tail != NULL)
		l->tail->lnext = op;
	else
		l->head = op;
	l->tail = op;
	op->list = which;
}

static void olist_remove(oplist_t *l, wt_chan_op_t *op)
{
	if (op->lprev != NULL)
		op->lprev->lnext = op->lnext;
	else
		l->head = op->lnext;
	if (op->lnext != NULL)
		op->lnext->lprev = op->lprev;
	else
		l->tail = op->lprev;
	op->lprev = op->lnext = NULL;
	op->list = L_NONE;
}

/* ---- slot waits ---- */

static int wait_met(const wt_chan_op_t *op)
{
	return atomic_load_explicit(op->word, memory_order_acquire) >= op->value;
}

static void wait_unlist(wt_chan_t *ch, wt_chan_op_t *op)
{
	olist_remove(&ch->waits, op);
	ch->nwaits--;
}

/* ---- matching table ---- */

static size_t ment_hash(const wt_chan_t *ch, int peer, uint64_t tag)
{
	uint64_t x = tag ^ ((uint64_t)(uint32_t)peer * 0x9e3779b97f4a7c15ull);

	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdull;
	x ^= x >> 33;
	return (size_t)x & (ch->nbuckets - 1);
}

static struct mentry *ment_find(wt_chan_t *ch, int peer, uint64_t tag)
{
	struct mentry *e = ch->buckets[ment_hash(ch, peer, tag)];

	while (e != NULL && (e->peer != peer || e->tag != tag))
		e = e->hnext;
	return e;
}

static void ment_grow(wt_chan_t *ch)
{
	size_t nb = ch->nbuckets * 2;
	struct mentry **b = calloc(nb, sizeof(*b));

	if (b == NULL)
		return; /* longer chains, still correct */
	struct mentry **old = ch->buckets;
	size_t ob = ch->nbuckets;

	ch->buckets = b;
	ch->nbuckets = nb;
	for (size_t i = 0; i < ob; i++) {
		struct mentry *e = old[i];

		while (e != NULL) {
			struct mentry *n = e->hnext;
			size_t h = ment_hash(ch, e->peer, e->tag);

			e->hnext = b[h];
			b[h] = e;
			e = n;
		}
	}
	free(old);
}

static struct mentry *ment_get(wt_chan_t *ch, int peer, uint64_t tag)
{
	struct mentry *e = ment_find(ch, peer, tag);

	if (e != NULL)
		return e;
	if (ch->free_ments != NULL) {
		e = ch->free_ments;
		ch->free_ments = e->hnext;
	} else {
		e = malloc(sizeof(*e));
		if (e == NULL)
			return NULL;
	}
	memset(e, 0, sizeof(*e));
	e->peer = peer;
	e->tag = tag;
	size_t h = ment_hash(ch, peer, tag);

	e->hnext = ch->buckets[h];
	ch->buckets[h] = e;
	if (++ch->nentries > ch->nbuckets)
		ment_grow(ch);
	return e;
}

/* Drop the entry once nothing waits on it, so per-call tags do not pile up. */
static void ment_release(wt_chan_t *ch, struct mentry *e)
{
	if (e->recvs.head != NULL || e->uhead != NULL)
		return;
	struct mentry **pp = &ch->buckets[ment_hash(ch, e->peer, e->tag)];

	while (*pp != e)
		pp = &(*pp)->hnext;
	*pp = e->hnext;
	ch->nentries--;
	e->hnext = ch->free_ments;
	ch->free_ments = e;
}

static void unexp_free(wt_chan_t *ch, struct unexp *u)
{
	free(u->data);
	u->data = NULL;
	u->next = ch->free_unexp;
	ch->free_unexp = u;
}

static struct unexp *unexp_alloc(wt_chan_t *ch)
{
	struct unexp *u = ch->free_unexp;

	if (u != NULL)
		ch->free_unexp = u->next;
	else
		u = malloc(sizeof(*u));
	if (u != NULL)
		memset(u, 0, sizeof(*u));
	return u;
}

/* ---- rendezvous slots ---- */

static uint64_t slot_alloc(wt_chan_t *ch, int kind, int peer, wt_chan_op_t *op, uint64_t total)
{
	if (ch->free_slot == UINT32_MAX) {
		uint32_t n = ch->nslots ? ch->nslots * 2 : 64;
		struct slot *s = realloc(ch->slots, (size_t)n * sizeof(*s));

		if (s == NULL)
			return 0;
		for (uint32_t i = ch->nslots; i < n; i++) {
			memset(&s[i], 0, sizeof(s[i]));
			s[i].gen = 1;
			s[i].next_free = i + 1 < n ? i + 1 : UINT32_MAX;
		}
		ch->slots = s;
		ch->free_slot = ch->nslots;
		ch->nslots = n;
	}
	uint32_t i = ch->free_slot;
	struct slot *s = &ch->slots[i];

	ch->free_slot = s->next_free;
	s->kind = (uint8_t)kind;
	s->peer = peer;
	s->op = op;
	s->next_off = 0;
	s->total = total;
	return ((uint64_t)s->gen << 32) | i;
}

static void slot_free(wt_chan_t *ch, uint64_t id)
{
	uint32_t i = (uint32_t)id;
	struct slot *s = &ch->slots[i];

	s->kind = SL_FREE;
	s->op = NULL;
	s->gen = s->gen + 1 ? s->gen + 1 : 1;
	s->next_free = ch->free_slot;
	ch->free_slot = i;
}

/* The slot a peer's frame names, if it is live, belongs to that peer and is of kind a or
 * b; otherwise NULL (the frame is bogus). */
static struct slot *slot_get(wt_chan_t *ch, uint64_t id, int peer, int a, int b)
{
	uint32_t i = (uint32_t)id;

	if (i >= ch->nslots)
		return NULL;
	struct slot *s = &ch->slots[i];

	if (s->gen != (uint32_t)(id >> 32) || s->peer != peer)
		return NULL;
	if (s->kind != a && s->kind != b)
		return NULL;
	return s;
}

/* ---- ops ---- */

static wt_chan_op_t *op_alloc(wt_chan_t *ch, int kind, int peer, uint64_t tag, wt_chan_done_fn_t cb,
			      void *arg)
{
	wt_chan_op_t *op = ch->free_ops;

	if (op != NULL)
		ch->free_ops = op->anext;
	else
		op = malloc(sizeof(*op));
	if (op == NULL)
		return NULL;
	memset(op, 0, offsetof(wt_chan_op_t, msg));
	op->msg[0] = '\0';
	op->kind = kind;
	op->peer = peer;
	op->tag = tag;
	op->cb = cb;
	op->arg = arg;
	op->live = 1;
	op->aprev = NULL;
	op->anext = ch->all;
	if (ch->all != NULL)
		ch->all->aprev = op;
	ch->all = op;
	ch->outstanding++;
	return op;
}

static void op_maybe_free(wt_chan_t *ch, wt_chan_op_t *op)
{
	if (op->live || op->refs > 0 || op->list != L_NONE)
		return;
	if (op->aprev != NULL)
		op->aprev->anext = op->anext;
	else
		ch->all = op->anext;
	if (op->anext != NULL)
		op->anext->aprev = op->aprev;
	if (op->iov != op->iov_in)
		free(op->iov);
	op->iov = NULL;
	op->list = L_FREE; /* a second release is a no-op */
	op->anext = ch->free_ops;
	ch->free_ops = op;
}

/* Decide an op's status; its callback runs at the next completion pass. The caller has
 * already taken it off the posted queue or start list. */
/* A send with a copy: copy its bytes [op->copied, end) to op->copy_to. */
static void send_copy_upto(wt_chan_op_t *op, size_t end)
{
	size_t at = 0;

	if (op->copy_to == NULL || end <= op->copied)
		return;
	for (int i = 0; i < op->iovcnt && op->copied < end; i++) {
		size_t lo = at, hi = at + op->iov[i].iov_len;

		at = hi;
		if (hi <= op->copied)
			continue;
		size_t from = op->copied - lo, n = (hi < end ? hi : end) - op->copied;
		uint8_t *dst = op->copy_to + op->copied;
		const uint8_t *src = (const uint8_t *)op->iov[i].iov_base + from;

		if (op->copy_stream)
			wt_util_copy_stream(dst, src, n);
		else
			wt_util_copy(dst, src, n);
		op->copied += n;
	}
}

static void op_finish(wt_chan_t *ch, wt_chan_op_t *op, weft_status_t st, size_t bytes,
		      const char *fmt, ...)
{
	if (!op->live || op->finished)
		return;
	/* A send's copy is whole when the send is (the pieces a link took are done already;
	 * a get or a link that holds frames leaves the rest for here). */
	if (op->kind == OP_SEND && st == WEFT_OK)
		send_copy_upto(op, op->total);
	op->finished = 1;
	op->st = st;
	op->bytes = bytes;
	op->msg[0] = '\0';
	if (fmt != NULL) {
		va_list ap;

		va_start(ap, fmt);
		vsnprintf(op->msg, sizeof(op->msg), fmt, ap);
		va_end(ap);
	}
	olist_push(&ch->cq, op, L_CQ);
}

/* ---- frames and per-peer FIFOs ---- */

static struct frame *frame_alloc(wt_chan_t *ch, wt_chan_op_t *op)
{
	struct frame *f = ch->free_frames;

	if (f != NULL)
		ch->free_frames = f->next;
	else
		f = malloc(sizeof(*f));
	if (f == NULL)
		return NULL;
	f->prev = f->next = NULL;
	f->op = op;
	f->stream = 0;
	f->complete_on_take = 0;
	f->held = NULL;
	f->in_fifo = 0;
	f->iov = f->iov_in;
	f->iovcnt = 0;
	f->type = 0;
	if (op != NULL)
		op->refs++;
	return f;
}

static void frame_release(wt_chan_t *ch, struct frame *f)
{
	wt_chan_op_t *op = f->op;

	if (f->iov != f->iov_in)
		free(f->iov);
	free(f->held);
	f->held = NULL;
	f->iov = NULL;
	f->op = NULL;
	f->next = ch->free_frames;
	ch->free_frames = f;
	if (op != NULL) {
		op->refs--;
		op_maybe_free(ch, op);
	}
}

static void frame_set_hdr(struct frame *f, const wt_chan_hdr_t *h)
{
	wt_chan_hdr_encode(h, f->hdr);
	f->type = h->type;
	f->iov[0].iov_base = f->hdr;
	f->iov[0].iov_len = WT_CHAN_HDR_LEN;
	f->iovcnt = 1;
}

/* The link took the frame's bytes: a send that was waiting for that completes. */
static void frame_taken(wt_chan_t *ch, struct frame *f)
{
	wt_chan_op_t *op = f->op;

	if (f->complete_on_take && op != NULL)
		op_finish(ch, op, WEFT_OK, op->total, NULL);
	frame_release(ch, f);
}

static void inlink_add(wt_chan_t *ch, struct frame *f)
{
	f->prev = NULL;
	f->next = ch->inlink;
	if (ch->inlink != NULL)
		ch->inlink->prev = f;
	ch->inlink = f;
}

static void inlink_remove(wt_chan_t *ch, struct frame *f)
{
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		ch->inlink = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	f->prev = f->next = NULL;
}

static void fifo_unlink(struct peer *p, struct frame *f)
{
	f->in_fifo = 0;
	if (f->prev != NULL)
		f->prev->next = f->next;
	else
		p->qhead = f->next;
	if (f->next != NULL)
		f->next->prev = f->prev;
	else
		p->qtail = f->prev;
	f->prev = f->next = NULL;
}

static void backlog_add(wt_chan_t *ch, int pi)
{
	struct peer *p = &ch->peers[pi];

	if (p->in_backlog)
		return;
	p->in_backlog = 1;
	p->bnext = ch->bhead;
	ch->bhead = pi;
}

static int link_send(wt_chan_t *ch, int pi, struct frame *f)
{
	struct peer *p = &ch->peers[pi];
	weft_status_t st = wt_link_ops(p->link)->send(p->link, pi, f->iov, f->iovcnt, f);

	if (st == WEFT_OK || st == WEFT_INPROGRESS)
		p->last_tx = ch->now; /* any frame tells the peer we are alive */
	if (st == WEFT_OK || st == WEFT_INPROGRESS || st == WT_AGAIN)
		return st;
	if (!wt_util_is_err(st))
		st = WEFT_ERR_SYSTEM;
	fail_peer(ch, pi, st, "link %s could not send a %s frame (status %d)",
		  wt_link_ops(p->link)->name, wt_chan_frame_name(f->type), (int)st);
	return st;
}

/* Point f's data iov at bytes [off, off + n) of the op's message. */
static int frame_sub_iov(struct frame *f, const wt_chan_op_t *op, size_t off, size_t n)
{
	int first = 0;
	size_t skip = off;

	while (first < op->iovcnt && skip >= op->iov[first].iov_len) {
		skip -= op->iov[first].iov_len;
		first++;
	}
	int cnt = 0;
	size_t left = n, s = skip;

	for (int i = first; i < op->iovcnt && left > 0; i++) {
		size_t take = op->iov[i].iov_len - s;

		left -= take < left ? take : left;
		s = 0;
		cnt++;
	}
	if (cnt + 1 > WT_CHAN_FRAME_IOV) {
		f->iov = malloc(sizeof(struct iovec) * (size_t)(cnt + 1));
		if (f->iov == NULL) {
			f->iov = f->iov_in;
			return -1;
		}
		f->iov[0] = f->iov_in[0];
	}
	left = n;
	s = skip;
	for (int i = first, k = 1; k <= cnt; i++, k++) {
		size_t take = op->iov[i].iov_len - s;

		if (take > left)
			take = left;
		f->iov[k].iov_base = (char *)op->iov[i].iov_base + s;
		f->iov[k].iov_len = take;
		left -= take;
		s = 0;
	}
	f->iovcnt = cnt + 1;
	return 0;
}

/* Hand fragments of a stream item to the link. 1: the stream is done; 0: stop (link
 * full or the peer failed). */
static int stream_push(wt_chan_t *ch, int pi, struct frame *s, int *count)
{
	struct peer *p = &ch->peers[pi];
	wt_chan_op_t *op = s->op;

	while (s->off < s->end) {
		size_t n = s->end - s->off;

		if (n > s->frag)
			n = s->frag;
		struct frame *f = frame_alloc(ch, op);

		if (f == NULL)
			return 0; /* retried at the next progress */
		wt_chan_hdr_t h = {.version = WT_CHAN_WIRE_VERSION,
				   .type = WT_CHAN_FR_DATA,
				   .id = s->recv_id,
				   .a = s->off};

		frame_set_hdr(f, &h);
		if (frame_sub_iov(f, op, s->off, n) != 0) {
			frame_release(ch, f);
			return 0;
		}
		f->complete_on_take = s->off + n == s->end;
		int st = link_send(ch, pi, f);

		if (st == WT_AGAIN || wt_util_is_err(st)) {
			frame_release(ch, f);
			return 0;
		}
		s->off += n;
		send_copy_upto(op, s->off);
		(*count)++;
		if (st == WEFT_INPROGRESS)
			inlink_add(ch, f);
		else
			frame_taken(ch, f);
	}
	fifo_unlink(p, s);
	frame_release(ch, s);
	return 1;
}

/* Push a peer's FIFO into its link until it is empty or the link is full. */
static int peer_flush(wt_chan_t *ch, int pi)
{
	struct peer *p = &ch->peers[pi];
	int count = 0;
	struct frame *f;

	while (!p->failed && (f = p->qhead) != NULL) {
		if (f->stream) {
			if (!stream_push(ch, pi, f, &count))
				break;
			continue;
		}
		int st = link_send(ch, pi, f);

		if (st == WT_AGAIN || wt_util_is_err(st))
			break;
		fifo_unlink(p, f);
		count++;
		if (st == WEFT_INPROGRESS)
			inlink_add(ch, f);
		else
			frame_taken(ch, f);
	}
	if (p->qhead != NULL)
		backlog_add(ch, pi);
	return count;
}

static void fifo_push(wt_chan_t *ch, int pi, struct frame *f)
{
	struct peer *p = &ch->peers[pi];

	f->next = NULL;
	f->prev = p->qtail;
	f->in_fifo = 1;
	if (p->qtail != NULL)
		p->qtail->next = f;
	else
		p->qhead = f;
	p->qtail = f;
	if (p->qhead == f)
		peer_flush(ch, pi);
	else
		backlog_add(ch, pi);
}

/* Queue a header-only control frame. Control frames are tiny and rare; if memory runs
 * out the peer cannot be served any more, so it is failed. */
static void ctrl_send(wt_chan_t *ch, int pi, int type, uint16_t flags, uint64_t id, uint64_t id2,
		      uint64_t a)
{
	if (ch->peers[pi].failed)
		return;
	struct frame *f = frame_alloc(ch, NULL);

	if (f == NULL) {
		fail_peer(ch, pi, WEFT_ERR_NO_MEMORY, "out of memory queueing a %s frame",
			  wt_chan_frame_name((unsigned)type));
		return;
	}
	wt_chan_hdr_t h = {.version = WT_CHAN_WIRE_VERSION,
			   .type = (uint8_t)type,
			   .flags = flags,
			   .id = id,
			   .id2 = id2,
			   .a = a};

	frame_set_hdr(f, &h);
	fifo_push(ch, pi, f);
}

/* Remove an op's frames that the link has not taken yet. Reports whether its RTS was
 * among them and, for a stream cut short, which receive slot is left waiting. */
static void fifo_purge_op(wt_chan_t *ch, wt_chan_op_t *op, int *rts_removed, uint64_t *abort_id)
{
	struct peer *p = &ch->peers[op->peer];
	struct frame *f = p->qhead;

	*rts_removed = 0;
	*abort_id = 0;
	while (f != NULL) {
		struct frame *n = f->next;

		if (f->op == op) {
			if (f->type == WT_CHAN_FR_RTS)
				*rts_removed = 1;
			if (f->stream && f->off < f->end)
				*abort_id = f->recv_id;
			fifo_unlink(p, f);
			frame_release(ch, f);
		}
		f = n;
	}
}

/* ---- failure ---- */

static int peer_has_ops(const wt_chan_t *ch, int pi)
{
	for (const wt_chan_op_t *op = ch->all; op != NULL; op = op->anext) {
		if (op->peer == pi && op->live && !op->finished)
			return 1;
	}
	return 0;
}

static void fail_peer_ops(wt_chan_t *ch, int pi)
{
	struct peer *p = &ch->peers[pi];

	for (uint32_t i = 0; i < ch->nslots; i++) {
		struct slot *s = &ch->slots[i];

		if (s->kind == SL_FREE || s->peer != pi)
			continue;
		if (s->op != NULL)
			s->op->slot = 0;
		slot_free(ch, ((uint64_t)s->gen << 32) | i);
	}
	for (wt_chan_op_t *op = ch->all; op != NULL; op = op->anext) {
		if (op->peer != pi || !op->live || op->finished)
			continue;
		if (op->list == L_POSTED) {
			struct mentry *e = op->ment;

			olist_remove(&e->recvs, op);
			ch->peers[op->peer].posted--;
			ment_release(ch, e);
		} else if (op->list == L_START) {
			olist_remove(&ch->start, op);
		} else if (op->list == L_WAIT) {
			wait_unlist(ch, op);
		}
		op->slot = 0;
		op_finish(ch, op, p->fail_st, 0, "%s", p->why);
	}
	for (size_t b = 0; b < ch->nbuckets; b++) {
		struct mentry *e = ch->buckets[b];

		while (e != NULL) {
			struct mentry *n = e->hnext;

			if (e->peer == pi) {
				while (e->uhead != NULL) {
					struct unexp *u = e->uhead;

					e->uhead = u->next;
					unexp_free(ch, u);
				}
				e->utail = NULL;
				ment_release(ch, e);
			}
			e = n;
		}
	}
}

/* loud: the cause is abnormal even when nothing is pending (silence, not a clean close). */
static void vfail_peer(wt_chan_t *ch, int pi, weft_status_t st, int loud, const char *fmt,
		       va_list ap)
{
	struct peer *p = &ch->peers[pi];

	if (p->failed)
		return;
	char why[WT_CHAN_MSG_LEN - 32]; /* room for the rank prefix */

	vsnprintf(why, sizeof(why), fmt, ap);
	p->failed = 1;
	p->fail_st = wt_util_is_err(st) ? st : WEFT_ERR_PEER_FAILED;
	snprintf(p->why, sizeof(p->why), "rank %d: %s", pi, why);
	/* A peer that leaves while nothing is pending with it (the end of a job) is news,
	 * not an error; the ops it fails are reported to their owners anyway. */
	if (peer_has_ops(ch, pi))
		WT_ERROR("channel: peer %s", p->why);
	else if (loud)
		WT_WARN("channel: peer %s", p->why);
	else
		WT_INFO("channel: peer %s", p->why);
	/* the owner hears of it from progress, never from inside a post */
	p->notify = ++ch->notify_seq;
	ch->nnotify++;
	while (p->qhead != NULL) {
		struct frame *f = p->qhead;

		fifo_unlink(p, f);
		frame_release(ch, f);
	}
	fail_peer_ops(ch, pi);
}

static void fail_peer(wt_chan_t *ch, int pi, weft_status_t st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail_peer(ch, pi, st, 0, fmt, ap);
	va_end(ap);
}

static void fail_peer_loud(wt_chan_t *ch, int pi, weft_status_t st, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

static void fail_peer_loud(wt_chan_t *ch, int pi, weft_status_t st, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfail_peer(ch, pi, st, 1, fmt, ap);
	va_end(ap);
}

/* ---- receive side ---- */

/* n bytes (whole, aligned elements) of incoming data at src into dst + off. */
static void combine(const wt_chan_op_t *op, size_t off, const void *src, size_t n)
{
	char *d = (char *)op->dst + off;

	if (op->red.left != NULL)
		wt_util_reduce3(d, (const char *)op->red.left + off, src, n / op->elem,
				op->red.dtype, op->red.op);
	else
		wt_util_reduce(d, src, n / op->elem, op->red.dtype, op->red.op);
}

static void copy_in(wt_chan_op_t *op, size_t off, const void *src, size_t n)
{
	if (n == 0)
		return;
	if (!op->red.enabled) {
		if (op->red.stream)
			wt_util_copy_stream((char *)op->dst + off, src, n);
		else
			wt_util_copy((char *)op->dst + off, src, n);
		return;
	}
	if ((uintptr_t)src % op->elem == 0) {
		combine(op, off, src, n);
		return;
	}
	/* A stream link (tcp) may hand over a frame at any byte offset; the kernels load
	 * whole elements, so stage misaligned data through an aligned block. */
	while (n > 0) {
		_Alignas(64) unsigned char tmp[4096];
		size_t k = n < sizeof(tmp) ? n : sizeof(tmp) - sizeof(tmp) % op->elem;

		memcpy(tmp, src, k);
		combine(op, off, tmp, k);
		src = (const char *)src + k;
		off += k;
		n -= k;
	}
}

/* 0 if a message of mlen bytes fits the receive; else fails the op and returns -1. */
static int recv_check_size(wt_chan_t *ch, wt_chan_op_t *op, uint64_t mlen)
{
	if (op->red.enabled ? mlen == op->len : mlen <= op->len)
		return 0;
	WT_ERROR("channel: message from rank %d is %llu bytes, receive%s posted for %zu bytes",
		 op->peer, (unsigned long long)mlen, op->red.enabled ? "-with-reduce" : "",
		 op->len);
	op_finish(ch, op, WEFT_ERR_MISMATCH, 0,
		  "message from rank %d is %llu bytes, receive%s posted for %zu bytes", op->peer,
		  (unsigned long long)mlen, op->red.enabled ? "-with-reduce" : "", op->len);
	return -1;
}

static void recv_eager(wt_chan_t *ch, wt_chan_op_t *op, const void *data, size_t n)
{
	if (recv_check_size(ch, op, n) != 0)
		return;
	copy_in(op, 0, data, n);
	op_finish(ch, op, WEFT_OK, n, NULL);
}

/* Read the whole message with one-sided gets. Returns WEFT_OK, or an error with
 * *committed telling whether dst was already changed (reduce) so no retry is possible. */
static weft_status_t rndv_get(wt_chan_t *ch, wt_chan_op_t *op, int *committed)
{
	struct peer *p = &ch->peers[op->peer];
	const wt_link_ops_t *ops = wt_link_ops(p->link);
	wt_link_remote_t rem = {.addr = op->addr, .len = op->msg_len};

	*committed = 0;
	if (!op->red.enabled)
		return ops->get(p->link, op->peer, op->dst, &rem, 0, op->msg_len);
	if (ch->bounce == NULL) {
		ch->bounce = malloc(WT_CHAN_GET_CHUNK);
		if (ch->bounce == NULL)
			return WEFT_ERR_NO_MEMORY;
	}
	for (size_t off = 0; off < op->msg_len;) {
		size_t n = op->msg_len - off;

		if (n > WT_CHAN_GET_CHUNK)
			n = WT_CHAN_GET_CHUNK;
		weft_status_t st = ops->get(p->link, op->peer, ch->bounce, &rem, off, n);

		if (st != WEFT_OK)
			return st;
		copy_in(op, off, ch->bounce, n);
		*committed = 1;
		off += n;
	}
	return WEFT_OK;
}

/* Whether an op of kind (OP_SEND, OP_RECV) of more than the eager limit, with peer (-1:
 * any), is under way (posted, not finished): a receive of ours while we send makes an
 * exchange of a rendezvous (rndv_use_get), and so does a send while we receive (stream_frag). */
static int big_op_pending(const wt_chan_t *ch, int kind, int peer)
{
	for (const wt_chan_op_t *op = ch->all; op != NULL; op = op->anext) {
		if (op->kind == kind && (peer < 0 || op->peer == peer) && op->live &&
		    !op->finished && (kind == OP_SEND ? op->total : op->len) > ch->eager_limit)
			return 1;
	}
	return 0;
}

/* Get or stream? A get (CMA) is one copy, but the kernel pins the sender's pages one by one
 * and copies at a third to a half of memcpy speed. Streaming costs two user-space copies (into
 * the ring, out of it or reduced straight from it), done by sender and receiver at once and
 * through cache, so it moves large messages 2-3 times faster while every local rank has a
 * core. With more local ranks than cores the get, which needs nobody else running, used to
 * win for messages of a few hundred KiB; since the rings are populated at their first large
 * frame it no longer does (4 ranks on 2 cores, alternating runs: allreduce 1 MiB 260-460 us
 * streamed against 500-650 by get, 4 MiB 1.3-1.7 ms against 2.3-3.5, broadcast 2 MiB
 * 160-204 us against 469-790; 8 ranks: allreduce 4 MiB 3.8-4.0 ms against 5.7-6.2). Those
 * are reductions (a get lands in a bounce block first) and 256 KiB pipeline segments. A
 * plain receive of a large message is another matter where ranks share cores: streaming
 * needs sender and receiver running at once for the whole message, a get only the
 * receiver. 4 ranks on 2 cores, alltoall (messages of a quarter), alternating: 2 MiB
 * 649-985 us streamed against 396-453 by get (Open MPI 684-870), 4 MiB 1.61-2.43 ms against
 * 1.46-1.98, 8 MiB 4.5-6.3 against 4.0-5.2; 1 MiB 165-591 us against 179-384. Past 16 MiB
 * a receive is stored around the caches (op->red.stream), which the kernel's copy does not
 * do, and streaming wins again (16 MiB: 5.3-7.0 against 7.6-8.7 ms). So the automatic
 * rendezvous gets plain receives of get_min bytes or more (wt_chan_set_get_min; the API
 * sets it where local ranks outnumber cores) that are not stored around the caches.
 *
 * So do those of far_get_min bytes or more (wt_chan_set_far_get_min; the API sets 64 KiB
 * where every local rank has a core) that are half of an exchange (a rendezvous send of
 * ours to the same peer is under way) while the placement says the cores are far apart
 * (lib/util/place.h: a cache line 170-200 ns from one vCPU to the other instead of 30-50).
 * In an exchange each side streaming copies its message into the ring and its peer's out
 * of it, and with the vCPUs far every line of both crosses between them; by get each side
 * makes one copy. 2-rank alltoall, one launch each way in turn whenever the vCPUs were far
 * (medians of 31): 256 KiB 19.4 us this way against 23.6 streamed, 1 MiB 69.5 against 72.3
 * (forced gets: 19.9 and 68.1); in an earlier such run, 59 of each, without the exchange
 * test: 25.3 against 26.9 and 76.4 against 86.8 (Open MPI 21.0 and 74.5 in a far period
 * before). A one-way stream gains nothing so (2-rank broadcast far, 32 of each: 256 KiB
 * 28.2 against 31.8, 1 MiB 102.7 against 92.7), nor does anything with the vCPUs near
 * (alltoall of 1 MiB by get 66-70 us against 45-50 streamed).
 *
 * Where ranks share cores the same holds for the receives of an exchange from xchg_get_min
 * (wt_chan_set_xchg_get_min; the API sets 128 KiB where local ranks outnumber cores),
 * wherever the vCPUs are: streaming, both sides of a pair must run at once and each copies
 * twice; by get each receiver copies once, alone. The API's cost model then moves an
 * alltoall of such blocks from the slots (two copies) to pairwise (4 ranks on 2 cores,
 * alltoall of 1 MiB, calls 3-12 of a fresh process, medians of 8 launches in turn: 263 us
 * against 383 through the slots, Open MPI 274; 512 KiB 157 against 169; 8 ranks, 2 MiB 2.17
 * against 2.68 ms). WEFT_RNDV_GET=1 or 0 forces either way, =fixed leaves the placement out
 * (not this rule). */
static int rndv_use_get(const wt_chan_t *ch, const wt_chan_op_t *op, const wt_link_ops_t *ops)
{
	if (!op->has_addr || !(ops->caps & WT_LINK_CAP_GET) || ops->get == NULL ||
	    ch->peers[op->peer].no_get)
		return 0;
	if (ch->rndv_get == RNDV_GET || ch->rndv_get == RNDV_STREAM)
		return ch->rndv_get == RNDV_GET;
	if (op->red.enabled || op->red.stream)
		return 0;
	if (ch->get_min > 0 && op->msg_len >= ch->get_min)
		return 1;
	/* the rest are halves of an exchange: from xchg_get_min, or from far_get_min while far */
	int xchg = ch->xchg_get_min > 0 && op->msg_len >= ch->xchg_get_min;

	if (!xchg && !(ch->rndv_get == RNDV_AUTO && ch->far_get_min > 0 &&
		       op->msg_len >= ch->far_get_min && ch->far_fn() == 1))
		return 0;
	return big_op_pending(ch, OP_SEND, op->peer);
}

/* A receive matched an RTS: fetch the data with a get where that is faster (see above),
 * else ask the sender to stream it. */
static void rndv_start(wt_chan_t *ch, wt_chan_op_t *op)
{
	int pi = op->peer;
	struct peer *p = &ch->peers[pi];
	const wt_link_ops_t *ops = wt_link_ops(p->link);

	if (rndv_use_get(ch, op, ops)) {
		int committed;
		weft_status_t st = rndv_get(ch, op, &committed);

		if (st == WEFT_OK) {
			ctrl_send(ch, pi, WT_CHAN_FR_FIN, WT_CHAN_FIN_OK, op->send_id, 0, 0);
			op_finish(ch, op, WEFT_OK, op->msg_len, NULL);
			return;
		}
		if (committed) {
			WT_ERROR("channel: get of %llu bytes from rank %d failed (status %d)",
				 (unsigned long long)op->msg_len, pi, (int)st);
			ctrl_send(ch, pi, WT_CHAN_FR_FIN, WT_CHAN_FIN_GETERR, op->send_id, 0, 0);
			op_finish(ch, op, st, 0, "one-sided read of %llu bytes from rank %d failed",
				  (unsigned long long)op->msg_len, pi);
			return;
		}
		/* Nothing moved. A get that fails so (CMA refused: Yama's ptrace_scope 1 or a
		 * seccomp policy say EPERM) would fail again: once per peer, then stream. */
		WT_WARN("channel: get of %llu bytes from rank %d failed (%s); messages from it "
			"go through the link from now on",
			(unsigned long long)op->msg_len, pi, weft_strerror(st));
		p->no_get = 1;
	}
	uint64_t id = slot_alloc(ch, SL_RECV, pi, op, op->msg_len);

	if (id == 0) {
		WT_ERROR("channel: out of memory for a rendezvous receive from rank %d", pi);
		ctrl_send(ch, pi, WT_CHAN_FR_FIN, WT_CHAN_FIN_CANCEL, op->send_id, 0, 0);
		op_finish(ch, op, WEFT_ERR_NO_MEMORY, 0,
			  "out of memory for a rendezvous receive from rank %d", pi);
		return;
	}
	op->slot = id;
	ctrl_send(ch, pi, WT_CHAN_FR_CTS, 0, op->send_id, id, 0);
}

/* Match a receive against an RTS: check sizes, then start now or from progress. */
static void recv_rts(wt_chan_t *ch, wt_chan_op_t *op, uint64_t send_id, uint64_t mlen, int has_addr,
		     uint64_t addr, int defer)
{
	if (recv_check_size(ch, op, mlen) != 0) {
		ctrl_send(ch, op->peer, WT_CHAN_FR_FIN, WT_CHAN_FIN_REJECT, send_id, 0, op->len);
		return;
	}
	op->send_id = send_id;
	op->msg_len = mlen;
	op->has_addr = has_addr;
	op->addr = addr;
	if (defer)
		olist_push(&ch->start, op, L_START);
	else
		rndv_start(ch, op);
}

static void bad_frame(wt_chan_t *ch, int pi, const wt_chan_hdr_t *h, const char *why)
{
	fail_peer(ch, pi, WEFT_ERR_PROTOCOL, "bad %s frame: %s", wt_chan_frame_name(h->type), why);
}

static void on_arrival(wt_chan_t *ch, int pi, const wt_chan_hdr_t *h, const void *data, size_t n)
{
	struct mentry *e = ment_find(ch, pi, h->tag);

	if (e != NULL && e->recvs.head != NULL) {
		wt_chan_op_t *op = e->recvs.head;

		olist_remove(&e->recvs, op);
		ch->peers[op->peer].posted--;
		ment_release(ch, e);
		if (h->type == WT_CHAN_FR_EAGER)
			recv_eager(ch, op, data, n);
		else
			recv_rts(ch, op, h->id, h->a, !!(h->flags & WT_CHAN_RTS_HAS_ADDR), h->b, 0);
		return;
	}
	struct unexp *u = unexp_alloc(ch);

	if (u != NULL && n > 0) {
		u->data = malloc(n);
		if (u->data == NULL) {
			unexp_free(ch, u);
			u = NULL;
		}
	}
	e = u != NULL ? ment_get(ch, pi, h->tag) : NULL;
	if (e == NULL) {
		if (u != NULL)
			unexp_free(ch, u);
		fail_peer(ch, pi, WEFT_ERR_NO_MEMORY,
			  "out of memory queueing an unexpected message");
		return;
	}
	u->type = h->type;
	u->len = h->type == WT_CHAN_FR_EAGER ? n : h->a;
	if (n > 0)
		wt_util_copy(u->data, data, n);
	u->send_id = h->id;
	u->has_addr = !!(h->flags & WT_CHAN_RTS_HAS_ADDR);
	u->addr = h->b;
	u->next = NULL;
	if (e->utail != NULL)
		e->utail->next = u;
	else
		e->uhead = u;
	e->utail = u;
}

/* The fragment size of a stream of total bytes to p: a quarter of it, at least the link's
 * pipe_min, for a one-way stream where the link asks for that (link.h), else the largest. The
 * ops are scanned only where the answer matters (a message of less than four frames). */
static size_t stream_frag(const wt_chan_t *ch, const struct peer *p, size_t total)
{
	size_t min = wt_link_ops(p->link)->pipe_min, q;

	if (min == 0 || total / 4 >= p->frag || big_op_pending(ch, OP_RECV, -1))
		return p->frag;
	q = (total / 4 + WT_CHAN_FRAG_ALIGN - 1) / WT_CHAN_FRAG_ALIGN * WT_CHAN_FRAG_ALIGN;
	if (q < min)
		q = min;
	return q < p->frag ? q : p->frag;
}

static void on_cts(wt_chan_t *ch, int pi, const wt_chan_hdr_t *h)
{
	struct slot *s = slot_get(ch, h->id, pi, SL_SEND, SL_ZOMBIE);

	if (s == NULL || h->id2 == 0) {
		bad_frame(ch, pi, h, "names no message waiting for it");
		return;
	}
	wt_chan_op_t *op = s->op;

	slot_free(ch, h->id);
	if (op == NULL) {
		/* the send was cancelled after its RTS left: tell the receiver */
		ctrl_send(ch, pi, WT_CHAN_FR_ABORT, 0, h->id2, 0, 0);
		return;
	}
	op->slot = 0;
	struct frame *f = frame_alloc(ch, op);

	if (f == NULL) {
		fail_peer(ch, pi, WEFT_ERR_NO_MEMORY, "out of memory starting a data stream");
		return;
	}
	f->stream = 1;
	f->frag = stream_frag(ch, &ch->peers[pi], op->total);
	f->type = WT_CHAN_FR_DATA;
	f->recv_id = h->id2;
	f->off = 0;
	f->end = op->total;
	fifo_push(ch, pi, f);
}

static void on_data(wt_chan_t *ch, int pi, const wt_chan_hdr_t *h, const void *data, size_t n)
{
	struct slot *s = slot_get(ch, h->id, pi, SL_RECV, SL_DISCARD);

	if (s == NULL) {
		bad_frame(ch, pi, h, "names no receive waiting for data");
		return;
	}
	if (h->a != s->next_off || n > s->total - s->next_off ||
	    (n % WT_CHAN_FRAG_ALIGN != 0 && h->a + n != s->total)) {
		bad_frame(ch, pi, h, "fragment out of place");
		return;
	}
	if (s->op != NULL)
		copy_in(s->op, (size_t)h->a, data, n);
	s->next_off += n;
	if (s->next_off < s->total)
		return;
	wt_chan_op_t *op = s->op;

	slot_free(ch, h->id);
	if (op != NULL) {
		op->slot = 0;
		op_finish(ch, op, WEFT_OK, (size_t)op->msg_len, NULL);
	}
}

static void on_fin(wt_chan_t *ch, int pi, const wt_chan_hdr_t *h)
{
	struct slot *s = slot_get(ch, h->id, pi, SL_SEND, SL_ZOMBIE);

	if (s == NULL) {
		bad_frame(ch, pi, h, "names no message waiting for it");
		return;
	}
	wt_chan_op_t *op = s->op;

	slot_free(ch, h->id);
	if (op == NULL)
		return;
	op->slot = 0;
	switch (h->flags) {
	case WT_CHAN_FIN_OK:
		op_finish(ch, op, WEFT_OK, op->total, NULL);
		break;
	case WT_CHAN_FIN_REJECT:
		op_finish(ch, op, WEFT_ERR_MISMATCH, 0,
			  "rank %d rejected the %zu-byte message: receive posted for %llu bytes",
			  pi, op->total, (unsigned long long)h->a);
		break;
	case WT_CHAN_FIN_CANCEL:
		op_finish(ch, op, WEFT_ERR_ABORTED, 0, "rank %d cancelled the receive", pi);
		break;
	default:
		op_finish(ch, op, WEFT_ERR_SYSTEM, 0, "rank %d failed to read the message", pi);
		break;
	}
}

static void on_abort(wt_chan_t *ch, int pi, const wt_chan_hdr_t *h)
{
	struct slot *s = slot_get(ch, h->id, pi, SL_RECV, SL_DISCARD);

	if (s == NULL) {
		bad_frame(ch, pi, h, "names no receive");
		return;
	}
	wt_chan_op_t *op = s->op;

	slot_free(ch, h->id);
	if (op == NULL)
		return;
	op->slot = 0;
	op_finish(ch, op, WEFT_ERR_ABORTED, 0, "rank %d cancelled the message", pi);
}

static void on_frame(wt_chan_t *ch, int pi, const void *frame, size_t len)
{
	wt_chan_hdr_t h;
	const char *why = wt_chan_hdr_decode(frame, len, &h);

	if (why != NULL) {
		fail_peer(ch, pi, WEFT_ERR_PROTOCOL, "bad frame of %zu bytes: %s", len, why);
		return;
	}
	const uint8_t *data = (const uint8_t *)frame + WT_CHAN_HDR_LEN;
	size_t n = len - WT_CHAN_HDR_LEN;

	switch (h.type) {
	case WT_CHAN_FR_EAGER:
	case WT_CHAN_FR_RTS:
		on_arrival(ch, pi, &h, data, n);
		break;
	case WT_CHAN_FR_CTS:
		on_cts(ch, pi, &h);
		break;
	case WT_CHAN_FR_DATA:
		on_data(ch, pi, &h, data, n);
		break;
	case WT_CHAN_FR_FIN:
		on_fin(ch, pi, &h);
		break;
	case WT_CHAN_FR_ABORT:
		on_abort(ch, pi, &h);
		break;
	case WT_CHAN_FR_HEARTBEAT:
		ch->hb_recv++; /* arriving at all was its whole message */
		break;
	default:
		break;
	}
}

/* ---- progress ---- */

static void fail_link_peers(wt_chan_t *ch, wt_link_t *link, weft_status_t st)
{
	for (int i = 0; i < ch->size; i++) {
		if (ch->peers[i].link == link)
			fail_peer(ch, i, st, "link %s failed (status %d)", wt_link_ops(link)->name,
				  (int)st);
	}
}

static int is_heartbeat(const void *data, size_t len)
{
	return len == WT_CHAN_HDR_LEN && data != NULL &&
	       ((const uint8_t *)data)[1] == WT_CHAN_FR_HEARTBEAT;
}

/* Handle one link event; returns 1 if it was work, 0 if it was only heartbeat traffic
 * (which must not keep an idle progress loop from sleeping). */
static int on_event(wt_chan_t *ch, wt_link_t *link, const wt_link_event_t *ev)
{
	if (ev->type == WT_LINK_EV_SEND_DONE) {
		struct frame *f = ev->cookie;

		if (f == NULL)
			return 0; /* a heartbeat */
		inlink_remove(ch, f);
		frame_taken(ch, f);
		return 1;
	}
	if (ev->peer < 0 || ev->peer >= ch->size || ch->peers[ev->peer].link != link) {
		WT_WARN("channel: link %s reported an event for unknown peer %d",
			wt_link_ops(link)->name, ev->peer);
		return 1;
	}
	struct peer *p = &ch->peers[ev->peer];

	if (ev->type == WT_LINK_EV_PEER_ERROR) {
		fail_peer(ch, ev->peer, ev->status, "link %s lost the peer (status %d)",
			  wt_link_ops(link)->name, (int)ev->status);
		return 1;
	}
	if (ev->type != WT_LINK_EV_FRAME || p->failed)
		return 1;
	if (!p->heard)
		WT_DEBUG("channel: first frame from rank %d", ev->peer);
	p->heard = 1;
	p->last_rx = ch->now;
	int work = !is_heartbeat(ev->data, ev->len);

	on_frame(ch, ev->peer, ev->data, ev->len);
	return work;
}

/* A link whose poll itself failed is broken for every peer on it: they fail, and the link
 * leaves the channel's list, so progress, sleeping and timers no longer touch it (polling
 * it again would only fail again, and its arm would keep the caller from sleeping). *
 * dead tells the caller. */
static int poll_link(wt_chan_t *ch, wt_link_t *link, int *dead)
{
	wt_link_event_t ev[WT_CHAN_EV_BATCH];
	int total = 0;

	for (int round = 0; round < WT_CHAN_POLL_ROUNDS; round++) {
		int n = wt_link_ops(link)->poll(link, ev, WT_CHAN_EV_BATCH);

		if (n < 0) {
			WT_ERROR("channel: rank %d: link %s failed to poll (status %d); its peers "
				 "fail and the link is no longer polled",
				 ch->rank, wt_link_ops(link)->name, n);
			fail_link_peers(ch, link, (weft_status_t)n);
			*dead = 1;
			return total;
		}
		if (n > WT_CHAN_EV_BATCH)
			n = WT_CHAN_EV_BATCH;
		for (int i = 0; i < n; i++)
			total += on_event(ch, link, &ev[i]);
		if (n < WT_CHAN_EV_BATCH)
			break;
	}
	return total;
}

static int flush_backlog(wt_chan_t *ch)
{
	int pi = ch->bhead;
	int n = 0;

	ch->bhead = -1;
	while (pi >= 0) {
		struct peer *p = &ch->peers[pi];
		int next = p->bnext;

		p->in_backlog = 0;
		if (!p->failed)
			n += peer_flush(ch, pi); /* re-adds itself if still blocked */
		pi = next;
	}
	return n;
}

static int run_starts(wt_chan_t *ch)
{
	int n = 0;
	wt_chan_op_t *op;

	while ((op = ch->start.head) != NULL) {
		olist_remove(&ch->start, op);
		rndv_start(ch, op);
		n++;
	}
	return n;
}

static int run_completions(wt_chan_t *ch)
{
	int n = 0;
	wt_chan_op_t *op;

	/* Callbacks may post (into cq, run next time) or cancel ops still in run. */
	ch->run = ch->cq;
	ch->cq.head = ch->cq.tail = NULL;
	for (op = ch->run.head; op != NULL; op = op->lnext)
		op->list = L_RUN;
	while ((op = ch->run.head) != NULL) {
		olist_remove(&ch->run, op);
		op->live = 0;
		ch->outstanding--;
		if (op->cb != NULL)
			op->cb(op->arg, op->st, op->bytes, op->st == WEFT_OK ? NULL : op->msg);
		op_maybe_free(ch, op);
		n++;
	}
	return n;
}

/* ---- heartbeats and failure reports ---- */

/* Heartbeats bypass the FIFO and are sent only when it is empty, so they never overtake
 * or delay data; a full link means traffic is queued, which says "alive" just as well. */
static void hb_send(wt_chan_t *ch, int pi)
{
	struct peer *p = &ch->peers[pi];
	struct iovec iov = {.iov_base = (void *)hb_frame, .iov_len = sizeof(hb_frame)};
	weft_status_t st = wt_link_ops(p->link)->send(p->link, pi, &iov, 1, NULL);

	if (st == WEFT_OK || st == WEFT_INPROGRESS) {
		p->last_tx = ch->now;
		ch->hb_sent++;
		return;
	}
	if (st == WT_AGAIN)
		return;
	fail_peer(ch, pi, wt_util_is_err(st) ? st : WEFT_ERR_SYSTEM,
		  "link %s could not send a heartbeat (status %d)", wt_link_ops(p->link)->name,
		  (int)st);
}

static void hb_check_peer(wt_chan_t *ch, int pi)
{
	struct peer *p = &ch->peers[pi];
	uint64_t now = ch->now;

	if (now > p->last_rx + ch->hb_timeout_ns) {
		uint64_t since = p->heard ? p->last_rx : p->linked_at;

		fail_peer_loud(
		    ch, pi, WEFT_ERR_PEER_FAILED, "no heartbeat for %.1f s%s (WEFT_PEER_TIMEOUT)",
		    (double)(now - since) / 1e9, p->heard ? "" : " since its link was set up");
		return;
	}
	if (p->qhead == NULL && now - p->last_tx >= ch->hb_interval_ns)
		hb_send(ch, pi);
}

static void hb_tick(wt_chan_t *ch)
{
	uint64_t now = ch->now;

	if (ch->hb_timeout_ns == 0 || (now - ch->last_tick < WT_CHAN_HB_TICK_NS && !ch->greet))
		return;
	/* We ourselves did not progress for a long while (stopped, starved, a caller that
	 * does not drive progress): the peers' frames may be unread in the links, so their
	 * silence proves nothing. Give every peer a fresh period. */
	int stalled = now - ch->last_tick > ch->hb_timeout_ns / 2;

	/* A new peer hears from us at once, not a tick later: a job can get through init
	 * in less than a tick, and until its first frame arrives a peer is judged only
	 * after the long connect grace. */
	ch->greet = 0;

	if (stalled)
		WT_DEBUG("channel: no progress for %.1f s; peers get a fresh heartbeat period",
			 (double)(now - ch->last_tick) / 1e9);
	ch->last_tick = now;
	for (int i = 0; i < ch->size; i++) {
		struct peer *p = &ch->peers[i];

		if (p->link == NULL || p->failed)
			continue;
		if (stalled && p->last_rx < now)
			p->last_rx = now;
		hb_check_peer(ch, i);
	}
}

/* Tell the owner about newly failed peers, in the order they failed (a communicator names
 * the first member it lost: a rank that died, not one that left after hearing of it); a
 * callback may fail further peers. */
static int run_notifies(wt_chan_t *ch)
{
	int n = 0;

	while (ch->nnotify > 0) {
		int first = -1;

		for (int i = 0; i < ch->size; i++)
			if (ch->peers[i].notify &&
			    (first < 0 || ch->peers[i].notify < ch->peers[first].notify))
				first = i;
		if (first < 0)
			break;
		ch->peers[first].notify = 0;
		ch->nnotify--;
		if (ch->fail_fn == NULL)
			continue;
		ch->fail_fn(ch->fail_arg, first, ch->peers[first].fail_st, ch->peers[first].why);
		n++;
	}
	return n;
}

/* Slot waits whose word reached its value complete (their callbacks run at the next
 * completion pass). */
static int run_waits(wt_chan_t *ch)
{
	wt_chan_op_t *op = ch->waits.head;
	int n = 0;

	while (op != NULL) {
		wt_chan_op_t *next = op->lnext;

		if (wait_met(op)) {
			wait_unlist(ch, op);
			op_finish(ch, op, WEFT_OK, 0, NULL);
			n++;
		}
		op = next;
	}
	return n;
}

int wt_chan_progress(wt_chan_t *ch)
{
	if (ch == NULL || ch->in_progress)
		return 0;
	ch->in_progress = 1;
	ch->now = coarse_ns();
	int n = 0;

	/* A slot wait is what a waiting caller spins for. When one completed, its callback
	 * runs at once and the links wait for the next call; when nothing but waits is pending,
	 * the links have nothing this caller needs either. Either way not for long (heartbeats
	 * in both directions, a failed peer, frames of later operations). */
	if (ch->waits.head != NULL && ch->now - ch->last_poll < WT_CHAN_WAIT_SKIP_NS) {
		int met = run_waits(ch);

		if (met > 0 || ch->outstanding == ch->nwaits) {
			n = run_completions(ch);
			ch->in_progress = 0;
			return n;
		}
	}
	ch->last_poll = ch->now;
	n = run_starts(ch);

	for (int i = 0; i < ch->nlinks; i++) {
		int dead = 0;

		n += poll_link(ch, ch->links[i], &dead);
		if (dead) {
			memmove(&ch->links[i], &ch->links[i + 1],
				sizeof(*ch->links) * (size_t)(ch->nlinks - i - 1));
			ch->nlinks--;
			i--;
			n++; /* failed ops are work for the caller */
		}
	}
	n += flush_backlog(ch);
	hb_tick(ch);
	/* ops first, so the owner sees a failed peer's ops done before it hears of the peer */
	n += run_completions(ch);
	n += run_notifies(ch);
	ch->in_progress = 0;
	return n;
}

void wt_chan_set_get_min(wt_chan_t *ch, size_t bytes)
{
	if (ch != NULL)
		ch->get_min = bytes;
}

void wt_chan_set_far_get_min(wt_chan_t *ch, size_t bytes)
{
	if (ch != NULL)
		ch->far_get_min = bytes;
}

size_t wt_chan_set_xchg_get_min(wt_chan_t *ch, size_t bytes)
{
	if (ch == NULL || ch->rndv_get == RNDV_STREAM)
		return 0;
	ch->xchg_get_min = bytes;
	return bytes;
}

void wt_chan_set_far_fn(wt_chan_t *ch, int (*far)(void))
{
	if (ch != NULL)
		ch->far_fn = far != NULL ? far : wt_util_place_far_now;
}

void wt_chan_set_peer_fail_cb(wt_chan_t *ch, wt_chan_peer_fail_fn_t fn, void *arg)
{
	if (ch == NULL)
		return;
	ch->fail_fn = fn;
	ch->fail_arg = arg;
}

void wt_chan_heartbeat_counts(const wt_chan_t *ch, uint64_t *sent, uint64_t *received)
{
	if (sent != NULL)
		*sent = ch != NULL ? ch->hb_sent : 0;
	if (received != NULL)
		*received = ch != NULL ? ch->hb_recv : 0;
}

/* ---- posting ---- */

static int post_check(wt_chan_t *ch, int peer, const char *what)
{
	if (ch == NULL)
		return -1;
	if (peer < 0 || peer >= ch->size || ch->peers[peer].link == NULL) {
		WT_ERROR("channel: %s to rank %d: no such peer or no link to it", what, peer);
		return -1;
	}
	return 0;
}

static weft_status_t send_copy_iov(wt_chan_op_t *op, const struct iovec *iov, int iovcnt)
{
	int n = 0;

	for (int i = 0; i < iovcnt; i++)
		n += iov[i].iov_len > 0;
	op->iov = op->iov_in;
	if (n > WT_CHAN_SEND_IOV) {
		op->iov = malloc(sizeof(*iov) * (size_t)n);
		if (op->iov == NULL)
			return WEFT_ERR_NO_MEMORY;
	}
	op->iovcnt = 0;
	op->total = 0;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len == 0)
			continue;
		op->iov[op->iovcnt++] = iov[i];
		op->total += iov[i].iov_len;
	}
	return WEFT_OK;
}

static void op_discard_new(wt_chan_t *ch, wt_chan_op_t *op)
{
	op->live = 0;
	ch->outstanding--;
	op_maybe_free(ch, op);
}

/* An eager frame left in its peer's FIFO (the link full, or frames queued before it): its
 * bytes are copied out so that the send completes now, as a buffered send, whatever the
 * receiver does; a blocking send of an eager-sized message so never waits for its receive,
 * however little the link buffers. Without memory it completes on take, as before. (A
 * frame a link holds, WEFT_INPROGRESS, may still be read from where it points: it
 * completes when the link is done with it.) */
static void frame_hold(wt_chan_t *ch, struct frame *f)
{
	size_t len = 0, at = 0;
	uint8_t *b;

	for (int i = 1; i < f->iovcnt; i++)
		len += f->iov[i].iov_len;
	b = malloc(len ? len : 1);
	if (b == NULL)
		return;
	for (int i = 1; i < f->iovcnt; i++) {
		memcpy(b + at, f->iov[i].iov_base, f->iov[i].iov_len);
		at += f->iov[i].iov_len;
	}
	if (f->iov != f->iov_in) {
		f->iov_in[0] = f->iov[0];
		free(f->iov);
		f->iov = f->iov_in;
	}
	f->iov_in[1] = (struct iovec){.iov_base = b, .iov_len = len};
	f->iovcnt = 2;
	f->held = b;
	f->complete_on_take = 0;
	op_finish(ch, f->op, WEFT_OK, f->op->total, NULL);
}

static weft_status_t post_eager(wt_chan_t *ch, wt_chan_op_t *op)
{
	struct frame *f = frame_alloc(ch, op);

	if (f == NULL)
		return WEFT_ERR_NO_MEMORY;
	wt_chan_hdr_t h = {.version = WT_CHAN_WIRE_VERSION,
			   .type = WT_CHAN_FR_EAGER,
			   .tag = op->tag,
			   .a = op->total};

	frame_set_hdr(f, &h);
	if (frame_sub_iov(f, op, 0, op->total) != 0) {
		frame_release(ch, f);
		return WEFT_ERR_NO_MEMORY;
	}
	f->complete_on_take = 1;
	fifo_push(ch, op->peer, f);
	/* Not taken (that would have finished the op), nor failed with its peer. */
	if (!op->finished && f->in_fifo)
		frame_hold(ch, f);
	return WEFT_OK;
}

static weft_status_t post_rts(wt_chan_t *ch, wt_chan_op_t *op)
{
	struct peer *p = &ch->peers[op->peer];
	const wt_link_ops_t *ops = wt_link_ops(p->link);
	struct frame *f = frame_alloc(ch, op);
	uint64_t id = f != NULL ? slot_alloc(ch, SL_SEND, op->peer, op, op->total) : 0;

	if (id == 0) {
		if (f != NULL)
			frame_release(ch, f);
		return WEFT_ERR_NO_MEMORY;
	}
	op->slot = id;
	/* a get needs one contiguous region; several pieces go by CTS and data frames */
	int get = (ops->caps & WT_LINK_CAP_GET) && ops->get != NULL && op->iovcnt == 1;
	wt_chan_hdr_t h = {.version = WT_CHAN_WIRE_VERSION,
			   .type = WT_CHAN_FR_RTS,
			   .flags = get ? WT_CHAN_RTS_HAS_ADDR : 0,
			   .tag = op->tag,
			   .id = id,
			   .a = op->total,
			   .b = get ? (uint64_t)(uintptr_t)op->iov[0].iov_base : 0};

	frame_set_hdr(f, &h);
	fifo_push(ch, op->peer, f);
	/* A receiver that will read it by get (from get_min on, as it decides; channel-wide)
	 * needs nothing more from us until its FIN: the copy is made now, while it reads, not
	 * after (a 2-rank ring allgather of 1 MiB blocks would copy its own block only once
	 * the exchange is over). A receiver that streams after all finds it made already. */
	if (get && ch->get_min > 0 && op->total >= ch->get_min && ch->rndv_get != RNDV_STREAM)
		send_copy_upto(op, op->total);
	return WEFT_OK;
}

weft_status_t wt_chan_post_send_copy(wt_chan_t *ch, int peer, uint64_t tag, const struct iovec *iov,
				     int iovcnt, void *copy_to, unsigned copy_flags,
				     wt_chan_done_fn_t done_cb, void *arg, wt_chan_op_t **opp)
{
	if (post_check(ch, peer, "send") != 0 || iovcnt < 0 || (iovcnt > 0 && iov == NULL))
		return WEFT_ERR_INVALID_ARG;
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len > 0 && iov[i].iov_base == NULL) {
			WT_ERROR("channel: send to rank %d: NULL buffer in piece %d", peer, i);
			return WEFT_ERR_INVALID_ARG;
		}
	}
	wt_chan_op_t *op = op_alloc(ch, OP_SEND, peer, tag, done_cb, arg);

	if (op == NULL)
		return WEFT_ERR_NO_MEMORY;
	weft_status_t st = send_copy_iov(op, iov, iovcnt);
	struct peer *p = &ch->peers[peer];

	op->copy_to = copy_to;
	op->copied = 0;
	op->copy_stream = !!(copy_flags & WT_CHAN_COPY_STREAM);

	if (st == WEFT_OK) {
		if (p->failed)
			op_finish(ch, op, p->fail_st, 0, "%s", p->why);
		else if (op->total <= p->eager)
			st = post_eager(ch, op);
		else
			st = post_rts(ch, op);
	}
	if (st != WEFT_OK) {
		WT_ERROR("channel: out of memory posting a send to rank %d", peer);
		op_discard_new(ch, op);
		return st;
	}
	if (opp != NULL)
		*opp = op;
	return WEFT_OK;
}

weft_status_t wt_chan_post_send(wt_chan_t *ch, int peer, uint64_t tag, const struct iovec *iov,
				int iovcnt, wt_chan_done_fn_t done_cb, void *arg,
				wt_chan_op_t **opp)
{
	return wt_chan_post_send_copy(ch, peer, tag, iov, iovcnt, NULL, 0, done_cb, arg, opp);
}

static int reduce_check(const wt_chan_reduce_t *r, int peer, size_t len, size_t *elem)
{
	*elem = 1;
	if (r == NULL)
		return 0;
	/* streaming stores are a way of overwriting; a left operand is one of combining */
	if ((r->enabled && r->stream) || (!r->enabled && r->left != NULL)) {
		WT_ERROR("channel: receive from rank %d: %s", peer,
			 r->enabled ? "streaming stores asked of a combining receive"
				    : "a left operand for a receive that does not combine");
		return -1;
	}
	if (!r->enabled)
		return 0;
	if (!wt_util_dtype_valid(r->dtype) || !wt_util_op_valid(r->op) || r->op == WEFT_AVG) {
		WT_ERROR("channel: receive-with-reduce from rank %d: bad dtype %d or op %d", peer,
			 (int)r->dtype, (int)r->op);
		return -1;
	}
	*elem = wt_util_dtype_size(r->dtype);
	if (*elem == 0 || len % *elem != 0) {
		WT_ERROR("channel: receive-with-reduce from rank %d: %zu bytes is not a whole "
			 "number of %s elements",
			 peer, len, wt_util_dtype_name(r->dtype));
		return -1;
	}
	return 0;
}

static void recv_match_unexp(wt_chan_t *ch, wt_chan_op_t *op, struct mentry *e)
{
	struct unexp *u = e->uhead;

	e->uhead = u->next;
	if (e->uhead == NULL)
		e->utail = NULL;
	if (u->type == WT_CHAN_FR_EAGER)
		recv_eager(ch, op, u->data, (size_t)u->len);
	else
		recv_rts(ch, op, u->send_id, u->len, u->has_addr, u->addr, 1);
	unexp_free(ch, u);
	ment_release(ch, e);
}

weft_status_t wt_chan_post_recv(wt_chan_t *ch, int peer, uint64_t tag, void *dst, size_t len,
				const wt_chan_reduce_t *reduce, wt_chan_done_fn_t done_cb,
				void *arg, wt_chan_op_t **opp)
{
	size_t elem;

	if (post_check(ch, peer, "receive") != 0 || (len > 0 && dst == NULL) ||
	    reduce_check(reduce, peer, len, &elem) != 0)
		return WEFT_ERR_INVALID_ARG;
	wt_chan_op_t *op = op_alloc(ch, OP_RECV, peer, tag, done_cb, arg);

	if (op == NULL)
		return WEFT_ERR_NO_MEMORY;
	op->dst = dst;
	op->len = len;
	op->elem = elem;
	if (reduce != NULL)
		op->red = *reduce;
	struct peer *p = &ch->peers[peer];

	if (p->failed) {
		op_finish(ch, op, p->fail_st, 0, "%s", p->why);
	} else {
		struct mentry *e = ment_get(ch, peer, tag);

		if (e == NULL) {
			WT_ERROR("channel: out of memory posting a receive from rank %d", peer);
			op_discard_new(ch, op);
			return WEFT_ERR_NO_MEMORY;
		}
		if (e->uhead != NULL) {
			recv_match_unexp(ch, op, e);
		} else {
			op->ment = e;
			olist_push(&e->recvs, op, L_POSTED);
			ch->peers[op->peer].posted++;
		}
	}
	if (opp != NULL)
		*opp = op;
	return WEFT_OK;
}

weft_status_t wt_chan_post_wait(wt_chan_t *ch, int peer, const _Atomic uint64_t *word,
				uint64_t value, wt_chan_done_fn_t done_cb, void *arg,
				wt_chan_op_t **opp)
{
	/* A wait on our own word (peer == our rank) is met by our own progress: no link. */
	if (ch == NULL || word == NULL || (peer != ch->rank && post_check(ch, peer, "wait") != 0))
		return WEFT_ERR_INVALID_ARG;
	wt_chan_op_t *op = op_alloc(ch, OP_WAIT, peer, 0, done_cb, arg);

	if (op == NULL)
		return WEFT_ERR_NO_MEMORY;
	op->word = word;
	op->value = value;
	struct peer *p = &ch->peers[peer];

	if (p->failed)
		op_finish(ch, op, p->fail_st, 0, "%s", p->why);
	else if (wait_met(op))
		op_finish(ch, op, WEFT_OK, 0, NULL);
	else {
		olist_push(&ch->waits, op, L_WAIT);
		ch->nwaits++;
	}
	if (opp != NULL)
		*opp = op;
	return WEFT_OK;
}

void *wt_chan_slot_area(wt_chan_t *ch, int rank, size_t *bytes)
{
	if (ch == NULL || ch->slot_link == NULL || rank < 0 || rank >= ch->size)
		return NULL;
	/* A peer routed over another link (another host) has no area we can read. */
	if (rank != ch->rank && ch->peers[rank].link != ch->slot_link)
		return NULL;
	return wt_link_ops(ch->slot_link)->slot_area(ch->slot_link, rank, bytes);
}

void wt_chan_slot_wake(wt_chan_t *ch, const int *peers, int npeers)
{
	if (ch == NULL || ch->slot_link == NULL)
		return;
	wt_link_ops(ch->slot_link)->slot_wake(ch->slot_link, peers, npeers);
}

int wt_chan_cpu_shared(wt_chan_t *ch, const int *peers, int npeers)
{
	if (ch == NULL || peers == NULL)
		return 1;
	for (int i = 0; i < npeers; i++) {
		int p = peers[i];
		wt_link_t *link;

		if (p < 0 || p >= ch->size || p == ch->rank)
			continue;
		link = ch->peers[p].link;
		if (link == NULL || wt_link_ops(link)->cpu_shared == NULL ||
		    wt_link_ops(link)->cpu_shared(link, &p, 1))
			return 1;
	}
	return 0;
}

/* The slot link if peer is reached over it (not ourselves), else NULL. */
static wt_link_t *peer_slot_link(wt_chan_t *ch, int peer)
{
	if (ch == NULL || ch->slot_link == NULL || peer < 0 || peer >= ch->size ||
	    peer == ch->rank || ch->peers[peer].link != ch->slot_link)
		return NULL;
	return ch->slot_link;
}

void *wt_chan_peer_map(wt_chan_t *ch, int peer, const wt_util_umem_desc_t *desc)
{
	wt_link_t *link = peer_slot_link(ch, peer);

	if (link == NULL || wt_link_ops(link)->mem_map == NULL)
		return NULL;
	return wt_link_ops(link)->mem_map(link, peer, desc);
}

weft_status_t wt_chan_peer_copy(wt_chan_t *ch, int peer, void *local,
				const wt_util_umem_desc_t *desc, size_t off, size_t len, int write)
{
	wt_link_t *link = peer_slot_link(ch, peer);
	wt_link_remote_t r;

	if (link == NULL || wt_link_ops(link)->get == NULL || wt_link_ops(link)->put == NULL) {
		WT_ERROR("channel: no one-sided path to peer rank %d for %zu bytes", peer, len);
		return WEFT_ERR_UNSUPPORTED;
	}
	r.addr = desc->addr;
	r.len = desc->len;
	if (write)
		return wt_link_ops(link)->put(link, peer, local, &r, off, len);
	return wt_link_ops(link)->get(link, peer, local, &r, off, len);
}

void wt_chan_cancel(wt_chan_t *ch, wt_chan_op_t *op)
{
	if (ch == NULL || op == NULL || !op->live || op->list == L_FREE)
		return;
	op->live = 0;
	ch->outstanding--;
	op->refs++; /* purging its frames must not free it under us */
	switch (op->list) {
	case L_POSTED: {
		struct mentry *e = op->ment;

		olist_remove(&e->recvs, op);
		ch->peers[op->peer].posted--;
		ment_release(ch, e);
		break;
	}
	case L_START:
		/* matched but nothing moved yet: release the sender */
		olist_remove(&ch->start, op);
		ctrl_send(ch, op->peer, WT_CHAN_FR_FIN, WT_CHAN_FIN_CANCEL, op->send_id, 0, 0);
		break;
	case L_CQ:
		olist_remove(&ch->cq, op);
		break;
	case L_RUN:
		olist_remove(&ch->run, op);
		break;
	case L_WAIT:
		wait_unlist(ch, op);
		break;
	default:
		break;
	}
	if (op->kind == OP_RECV && op->slot != 0) {
		/* the sender keeps streaming: swallow the rest */
		struct slot *s = &ch->slots[(uint32_t)op->slot];

		s->kind = SL_DISCARD;
		s->op = NULL;
	} else if (op->kind == OP_SEND && !op->finished) {
		int rts_removed;
		uint64_t abort_id;

		fifo_purge_op(ch, op, &rts_removed, &abort_id);
		if (op->slot != 0) {
			if (rts_removed) {
				slot_free(ch, op->slot);
			} else {
				struct slot *s = &ch->slots[(uint32_t)op->slot];

				s->kind = SL_ZOMBIE;
				s->op = NULL;
			}
		}
		if (abort_id != 0)
			ctrl_send(ch, op->peer, WT_CHAN_FR_ABORT, 0, abort_id, 0, 0);
	}
	op->slot = 0;
	op->refs--;
	op_maybe_free(ch, op);
}

/* ---- setup, sleeping, teardown ---- */

/* WEFT_RNDV_GET: "auto" (unset), or a boolean forcing one-sided reads on or off. */
static weft_status_t rndv_policy(int *out)
{
	const char *v = wt_util_env_str("WEFT_RNDV_GET");
	char err[160];
	int b;

	*out = RNDV_AUTO;
	if (v == NULL || strcmp(v, "auto") == 0)
		return WEFT_OK;
	if (strcmp(v, "fixed") == 0) {
		*out = RNDV_FIXED;
		return WEFT_OK;
	}
	if (wt_util_env_bool("WEFT_RNDV_GET", 0, &b, err, sizeof(err)) != WEFT_OK) {
		WT_ERROR("channel: %s (WEFT_RNDV_GET is auto, fixed, 1 or 0)", err);
		return WEFT_ERR_INVALID_ARG;
	}
	*out = b ? RNDV_GET : RNDV_STREAM;
	return WEFT_OK;
}

weft_status_t wt_chan_create(const wt_chan_config_t *cfg, wt_chan_t **out)
{
	if (cfg == NULL || out == NULL || cfg->size <= 0 || cfg->rank < 0 ||
	    cfg->rank >= cfg->size) {
		WT_ERROR("channel: bad configuration (rank %d, size %d)", cfg ? cfg->rank : -1,
			 cfg ? cfg->size : -1);
		return WEFT_ERR_INVALID_ARG;
	}
	double pt = cfg->peer_timeout;

	if (!(pt >= 0) || pt > WT_CHAN_MAX_PEER_TIMEOUT ||
	    (pt > 0 && pt < WT_CHAN_MIN_PEER_TIMEOUT)) {
		WT_ERROR("channel: peer timeout %g s is outside 0 (off) or [%g, %g] s "
			 "(WEFT_PEER_TIMEOUT)",
			 pt, WT_CHAN_MIN_PEER_TIMEOUT, WT_CHAN_MAX_PEER_TIMEOUT);
		return WEFT_ERR_INVALID_ARG;
	}
	int rndv_get;

	if (rndv_policy(&rndv_get) != WEFT_OK)
		return WEFT_ERR_INVALID_ARG;
	wt_chan_t *ch = calloc(1, sizeof(*ch));

	if (ch == NULL)
		goto err_nomem;
	ch->rndv_get = rndv_get;
	ch->far_fn = wt_util_place_far_now;
	ch->hb_timeout_ns = (uint64_t)(pt * 1e9 + 0.5);
	ch->hb_interval_ns = ch->hb_timeout_ns / 4;
	ch->now = coarse_ns();
	ch->last_tick = ch->now;
	ch->rank = cfg->rank;
	ch->size = cfg->size;
	ch->eager_limit = cfg->eager_limit ? cfg->eager_limit : WT_CHAN_DEFAULT_EAGER;
	ch->bhead = -1;
	ch->free_slot = UINT32_MAX;
	ch->nbuckets = 64;
	ch->peers = calloc((size_t)cfg->size, sizeof(*ch->peers));
	ch->buckets = calloc(ch->nbuckets, sizeof(*ch->buckets));
	if (ch->peers == NULL || ch->buckets == NULL)
		goto err_free;
	*out = ch;
	return WEFT_OK;
err_free:
	free(ch->peers);
	free(ch->buckets);
	free(ch);
err_nomem:
	WT_ERROR("channel: out of memory creating a channel for %d ranks", cfg->size);
	return WEFT_ERR_NO_MEMORY;
}

weft_status_t wt_chan_set_link(wt_chan_t *ch, int peer, wt_link_t *link)
{
	if (ch == NULL || link == NULL || wt_link_ops(link) == NULL || peer < 0 ||
	    peer >= ch->size) {
		WT_ERROR("channel: cannot route rank %d: bad peer or link", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	size_t mf = wt_link_max_frame(link);
	uint32_t need = WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED;

	if ((wt_link_ops(link)->caps & need) != need) {
		WT_ERROR("channel: link %s for rank %d is not reliable and ordered; it needs the "
			 "reliability layer (wt_rel_wrap)",
			 wt_link_ops(link)->name, peer);
		return WEFT_ERR_INVALID_ARG;
	}
	if (mf < WT_CHAN_HDR_LEN + WT_CHAN_FRAG_ALIGN) {
		WT_ERROR("channel: link %s frames of %zu bytes are too small (need %d)",
			 wt_link_ops(link)->name, mf, WT_CHAN_HDR_LEN + WT_CHAN_FRAG_ALIGN);
		return WEFT_ERR_INVALID_ARG;
	}
	struct peer *p = &ch->peers[peer];

	if (p->link != NULL && p->link != link && (p->qhead != NULL || ch->outstanding > 0)) {
		WT_ERROR("channel: rank %d changes link while traffic is pending", peer);
		return WEFT_ERR_INVALID_ARG;
	}
	int known = 0;

	for (int i = 0; i < ch->nlinks; i++)
		known |= ch->links[i] == link;
	if (!known) {
		wt_link_t **l = realloc(ch->links, sizeof(*l) * (size_t)(ch->nlinks + 1));

		if (l == NULL) {
			WT_ERROR("channel: out of memory adding a link for rank %d", peer);
			return WEFT_ERR_NO_MEMORY;
		}
		ch->links = l;
		ch->links[ch->nlinks++] = link;
	}
	if (p->link == NULL) {
		uint64_t grace = (uint64_t)(WT_CHAN_CONNECT_GRACE_S * 1e9);

		if (grace < ch->hb_timeout_ns)
			grace = ch->hb_timeout_ns;
		ch->now = coarse_ns();
		p->linked_at = ch->now;
		/* silence before the first frame counts from the end of the connect grace */
		p->last_rx = ch->now + grace - ch->hb_timeout_ns;
		p->last_tx = 0; /* greet the peer at the next progress call */
		ch->greet = 1;
	}
	if (ch->slot_link == NULL && (wt_link_ops(link)->caps & WT_LINK_CAP_SLOTS) &&
	    wt_link_ops(link)->slot_area != NULL && wt_link_ops(link)->slot_wake != NULL)
		ch->slot_link = link;
	p->link = link;
	p->eager = ch->eager_limit;
	if (p->eager > mf - WT_CHAN_HDR_LEN)
		p->eager = mf - WT_CHAN_HDR_LEN;
	p->frag = (mf - WT_CHAN_HDR_LEN) / WT_CHAN_FRAG_ALIGN * WT_CHAN_FRAG_ALIGN;
	return WEFT_OK;
}

int wt_chan_fds(wt_chan_t *ch, int *fds, int max)
{
	int n = 0;

	if (ch == NULL || fds == NULL)
		return 0;
	for (int i = 0; i < ch->nlinks && n < max; i++) {
		int fd = wt_link_ops(ch->links[i])->fd ? wt_link_ops(ch->links[i])->fd(ch->links[i])
						       : -1;
		int dup = 0;

		for (int k = 0; k < n; k++)
			dup |= fds[k] == fd;
		if (fd >= 0 && !dup)
			fds[n++] = fd;
	}
	return n;
}

int wt_chan_arm(wt_chan_t *ch)
{
	if (ch == NULL)
		return 0;
	if (ch->cq.head != NULL || ch->start.head != NULL || ch->nnotify > 0)
		return 1;
	/* frames the link refused earlier may fit now */
	if (ch->bhead >= 0 && flush_backlog(ch) > 0)
		return 1;
	for (int i = 0; i < ch->nlinks; i++) {
		const wt_link_ops_t *ops = wt_link_ops(ch->links[i]);

		if (ops->arm == NULL || ops->arm(ch->links[i]) == 0)
			continue;
		/* not sleeping after all: undo the ones already armed */
		for (int k = 0; k < i; k++) {
			const wt_link_ops_t *o = wt_link_ops(ch->links[k]);

			if (o->disarm != NULL)
				o->disarm(ch->links[k]);
		}
		return 1;
	}
	/* After the links armed (a link that offers slot areas has raised its sleeping flag
	 * and fenced), so a peer storing a word we wait for either is seen here or sees the
	 * flag and wakes us. */
	for (wt_chan_op_t *op = ch->waits.head; op != NULL; op = op->lnext) {
		if (wait_met(op)) {
			wt_chan_disarm(ch);
			return 1;
		}
	}
	return ch->cq.head != NULL;
}

void wt_chan_disarm(wt_chan_t *ch)
{
	if (ch == NULL)
		return;
	for (int i = 0; i < ch->nlinks; i++) {
		const wt_link_ops_t *ops = wt_link_ops(ch->links[i]);

		if (ops->disarm != NULL)
			ops->disarm(ch->links[i]);
	}
}

int wt_chan_timer_ms(wt_chan_t *ch)
{
	int best = -1;

	if (ch == NULL)
		return -1;
	for (int i = 0; i < ch->nlinks; i++) {
		const wt_link_ops_t *ops = wt_link_ops(ch->links[i]);
		int t = ops->timer_ms != NULL ? ops->timer_ms(ch->links[i]) : -1;

		if (t >= 0 && (best < 0 || t < best))
			best = t;
	}
	return best;
}

weft_status_t wt_chan_link_stats(wt_chan_t *ch, int peer, wt_link_stats_t *st, const char **name,
				 int *reliable)
{
	if (ch == NULL || st == NULL || peer < 0 || peer >= ch->size ||
	    ch->peers[peer].link == NULL)
		return WEFT_ERR_INVALID_ARG;
	wt_link_t *link = ch->peers[peer].link;
	const wt_link_ops_t *ops = wt_link_ops(link);

	memset(st, 0, sizeof(*st));
	if (ops->stats != NULL)
		ops->stats(link, peer, st);
	if (name != NULL)
		*name = ops->name;
	if (reliable != NULL)
		*reliable = wt_rel_is(link);
	return WEFT_OK;
}

void wt_chan_fail_peer(wt_chan_t *ch, int peer, weft_status_t st, const char *why)
{
	if (ch == NULL || peer < 0 || peer >= ch->size)
		return;
	fail_peer(ch, peer, st, "%s", why != NULL ? why : "failed");
}

size_t wt_chan_outstanding(const wt_chan_t *ch)
{
	return ch != NULL ? ch->outstanding : 0;
}

int wt_chan_backlog(const wt_chan_t *ch)
{
	return ch != NULL && ch->bhead >= 0;
}

static void free_frames(struct frame *f)
{
	while (f != NULL) {
		struct frame *n = f->next;

		if (f->iov != f->iov_in)
			free(f->iov);
		free(f->held);
		free(f);
		f = n;
	}
}

void wt_chan_destroy(wt_chan_t *ch)
{
	if (ch == NULL)
		return;
	for (int i = 0; i < ch->size; i++)
		free_frames(ch->peers[i].qhead);
	free_frames(ch->inlink);
	free_frames(ch->free_frames);
	for (wt_chan_op_t *op = ch->all; op != NULL;) {
		wt_chan_op_t *n = op->anext;

		if (op->iov != op->iov_in)
			free(op->iov);
		free(op);
		op = n;
	}
	for (wt_chan_op_t *op = ch->free_ops; op != NULL;) {
		wt_chan_op_t *n = op->anext;

		free(op);
		op = n;
	}
	for (size_t b = 0; b < ch->nbuckets; b++) {
		for (struct mentry *e = ch->buckets[b]; e != NULL;) {
			struct mentry *n = e->hnext;

			for (struct unexp *u = e->uhead; u != NULL;) {
				struct unexp *un = u->next;

				free(u->data);
				free(u);
				u = un;
			}
			free(e);
			e = n;
		}
	}
	for (struct mentry *e = ch->free_ments; e != NULL;) {
		struct mentry *n = e->hnext;

		free(e);
		e = n;
	}
	for (struct unexp *u = ch->free_unexp; u != NULL;) {
		struct unexp *n = u->next;

		free(u);
		u = n;
	}
	free(ch->buckets);
	free(ch->slots);
	free(ch->peers);
	free(ch->links);
	free(ch->bounce);
	free(ch);
}
