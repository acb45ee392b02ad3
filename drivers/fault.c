/* Fault injection at the link boundary (drivers/): the WEFT_FAULT parser and a link that
 * wraps any driver's link and disturbs the frames this process sends, per destination. */
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "drivers/fault.h"
#include "lib/util/log.h"
#include "lib/util/time.h"

#define FAULT_SPEC_MAX 1024
#define FAULT_DELAY_MAX_US 10000000u
#define FAULT_MAX_PEERS (1 << 20)
#define FAULT_REORDER_MIN_US 1000u
#define FAULT_QUEUE_MAX (16u << 20) /* bytes held per peer before send says WT_AGAIN */
#define FAULT_RETRY_NS 1000000ull   /* inner out of room: no reason to wake sooner */
#define FAULT_POLL_ROUNDS 4
#define FAULT_MSG_MAX 256

/* A copy of one frame owned by the wrapper; its address is the inner send's cookie. */
struct fault_frame {
	struct fault_frame *next;
	uint64_t due; /* monotonic ns: not handed to the inner link before this */
	int has_info; /* sent with send_info: info goes with every copy to the inner link */
	wt_link_frame_info_t info;
	size_t len;
	uint8_t data[];
};

struct fault_list {
	struct fault_frame *head, *tail;
};

struct fault_peer {
	uint64_t rng[4];
	struct fault_list q; /* copies waiting for the inner link, in send order */
	size_t q_bytes;
	struct fault_list held; /* reorder: waits for the next frame to this peer */
	uint64_t held_due;
	uint64_t retry_at; /* inner said WT_AGAIN: not due again before this */
	int active;	   /* listed in link->active */
	uint64_t drops, dups, reorders, delays, corrupts;
};

struct wt_link {
	wt_link_base_t base;
	wt_link_ops_t ops; /* this instance's table: the inner driver's name, fewer caps */
	wt_link_t *inner;
	const wt_link_ops_t *iops;
	wt_fault_config_t cfg;
	int rank;
	struct fault_peer *peers; /* grown on demand: the world size is not known here */
	int npeers;
	int *active; /* peers holding frames; capacity npeers */
	int nactive;
	struct fault_list inflight; /* copies the inner link answered WEFT_INPROGRESS for */
};

/* ---- PRNG: splitmix64 seeds xoshiro256** ---- */

static uint64_t mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static uint64_t splitmix64(uint64_t *x)
{
	*x += 0x9e3779b97f4a7c15ull;
	return mix64(*x);
}

static uint64_t rotl(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static uint64_t rng_next(uint64_t s[4])
{
	uint64_t r = rotl(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl(s[3], 45);
	return r;
}

static void rng_seed(uint64_t s[4], uint64_t seed, int rank, int peer)
{
	uint64_t who = ((uint64_t)(uint32_t)rank << 32) | (uint32_t)peer;
	uint64_t x = mix64(seed) ^ mix64(who + 0x9e3779b97f4a7c15ull);

	for (int i = 0; i < 4; i++)
		s[i] = splitmix64(&x);
}

static double rng_unit(uint64_t s[4])
{
	return (double)(rng_next(s) >> 11) * 0x1.0p-53;
}

/* ---- WEFT_FAULT parsing ---- */

enum fault_key { K_DROP, K_DUP, K_REORDER, K_CORRUPT, K_DELAY, K_SEED, K_PEER, K_COUNT };

static const char *const fault_keys[K_COUNT] = {"drop",	    "dup",  "reorder", "corrupt",
						"delay_us", "seed", "peer"};

static weft_status_t parse_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static weft_status_t parse_fail(char *err, size_t errlen, const char *fmt, ...)
{
	char msg[FAULT_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	WT_ERROR("%s", msg);
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return WEFT_ERR_INVALID_ARG;
}

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

/* Whole-token decimal unsigned integer no larger than max; 0 on success. */
static int parse_u64(const char *v, size_t n, uint64_t max, uint64_t *out)
{
	uint64_t x = 0;

	if (n == 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		unsigned d = (unsigned)(v[i] - '0');

		if (!is_digit(v[i]) || x > (max - d) / 10)
			return -1;
		x = x * 10 + d;
	}
	*out = x;
	return 0;
}

static double pow10_exact(int e)
{
	double p = 1.0;

	/* Exact up to 1e22, so one division rounds "0.05" correctly. */
	while (e-- > 0)
		p *= 10.0;
	return p;
}

/* Whole-token decimal number (digits, optional fraction, optional exponent) in [0,1].
 * Hand-written because strtod follows the host program's locale. */
static int parse_prob(const char *v, size_t n, double *out)
{
	uint64_t mant = 0;
	long exp10 = 0, e = 0;
	size_t i = 0;
	int digits = 0, eneg = 0;
	double x;

	for (; i < n && is_digit(v[i]); i++, digits++) {
		if (mant < 100000000000000000ull)
			mant = mant * 10 + (uint64_t)(v[i] - '0');
		else
			exp10++;
	}
	if (i < n && v[i] == '.') {
		for (i++; i < n && is_digit(v[i]); i++, digits++) {
			if (mant < 100000000000000000ull) {
				mant = mant * 10 + (uint64_t)(v[i] - '0');
				exp10--;
			}
		}
	}
	if (digits == 0)
		return -1;
	if (i < n && (v[i] == 'e' || v[i] == 'E')) {
		i++;
		if (i < n && (v[i] == '+' || v[i] == '-'))
			eneg = v[i++] == '-';
		if (i == n)
			return -1;
		for (; i < n && is_digit(v[i]); i++) {
			if (e < 100000)
				e = e * 10 + (v[i] - '0');
		}
	}
	if (i != n)
		return -1;
	exp10 += eneg ? -e : e;
	if (mant == 0) {
		*out = 0.0;
		return 0;
	}
	if (exp10 > 0)
		return -1; /* mant >= 1, so the value exceeds 1 */
	x = (double)mant;
	for (; exp10 < -22; exp10 += 22)
		x /= 1e22;
	x /= pow10_exact((int)-exp10);
	if (!(x >= 0.0 && x <= 1.0))
		return -1;
	*out = x;
	return 0;
}

static int key_find(const char *k, size_t n)
{
	for (int i = 0; i < K_COUNT; i++) {
		if (strlen(fault_keys[i]) == n && memcmp(fault_keys[i], k, n) == 0)
			return i;
	}
	return -1;
}

static int value_set(wt_fault_config_t *c, int key, const char *v, size_t n)
{
	uint64_t u = 0;

	switch (key) {
	case K_DROP:
		return parse_prob(v, n, &c->drop);
	case K_DUP:
		return parse_prob(v, n, &c->dup);
	case K_REORDER:
		return parse_prob(v, n, &c->reorder);
	case K_CORRUPT:
		return parse_prob(v, n, &c->corrupt);
	case K_DELAY:
		if (parse_u64(v, n, FAULT_DELAY_MAX_US, &u) != 0)
			return -1;
		c->delay_us = (uint32_t)u;
		return 0;
	case K_SEED:
		return parse_u64(v, n, UINT64_MAX, &c->seed);
	default:
		if (parse_u64(v, n, FAULT_MAX_PEERS - 1, &u) != 0)
			return -1;
		c->peer = (int)u;
		return 0;
	}
}

static const char *value_expect(int key)
{
	switch (key) {
	case K_DELAY:
		return "an integer number of microseconds in [0, 10000000]";
	case K_SEED:
		return "a decimal integer in [0, 2^64-1]";
	case K_PEER:
		return "a world rank in [0, 1048575]";
	default:
		return "a probability in [0, 1]";
	}
}

/* One key=value item [s, s+n) at offset off of the spec. */
static weft_status_t item_parse(wt_fault_config_t *c, unsigned *seen, const char *s, size_t n,
				size_t off, char *err, size_t errlen)
{
	const char *eq = memchr(s, '=', n);
	size_t kn;
	int key;

	if (n == 0)
		return parse_fail(err, errlen,
				  "WEFT_FAULT: empty item at offset %zu (stray or trailing comma)",
				  off);
	if (eq == NULL)
		return parse_fail(err, errlen, "WEFT_FAULT: '%.*s' at offset %zu is not key=value",
				  (int)(n > 64 ? 64 : n), s, off);
	kn = (size_t)(eq - s);
	key = key_find(s, kn);
	if (key < 0)
		return parse_fail(err, errlen,
				  "WEFT_FAULT: unknown key '%.*s' at offset %zu (known: drop, dup, "
				  "reorder, corrupt, delay_us, seed, peer)",
				  (int)(kn > 64 ? 64 : kn), s, off);
	if (*seen & (1u << key))
		return parse_fail(err, errlen, "WEFT_FAULT: key '%s' given twice", fault_keys[key]);
	*seen |= 1u << key;
	if (value_set(c, key, eq + 1, n - kn - 1) != 0)
		return parse_fail(err, errlen, "WEFT_FAULT: bad value '%.*s' for %s: expected %s",
				  (int)(n - kn - 1 > 64 ? 64 : n - kn - 1), eq + 1, fault_keys[key],
				  value_expect(key));
	return WEFT_OK;
}

weft_status_t wt_fault_parse(const char *spec, wt_fault_config_t *cfg, char *err, size_t errlen)
{
	wt_fault_config_t c = {.peer = -1};
	unsigned seen = 0;
	const char *p = spec;
	size_t len;

	if (err && errlen)
		err[0] = '\0';
	if (cfg == NULL)
		return parse_fail(err, errlen, "WEFT_FAULT: no config to parse into");
	len = spec ? strnlen(spec, FAULT_SPEC_MAX + 1) : 0;
	if (len > FAULT_SPEC_MAX)
		return parse_fail(err, errlen, "WEFT_FAULT: longer than %d characters",
				  FAULT_SPEC_MAX);
	if (len > 0) {
		for (;;) {
			const char *end = memchr(p, ',', len - (size_t)(p - spec));
			weft_status_t st;

			if (end == NULL)
				end = spec + len;
			st = item_parse(&c, &seen, p, (size_t)(end - p), (size_t)(p - spec), err,
					errlen);
			if (st != WEFT_OK)
				return st;
			if (end == spec + len)
				break;
			p = end + 1;
		}
		c.enabled = 1;
	}
	*cfg = c;
	return WEFT_OK;
}

/* ---- frame lists ---- */

static void list_push(struct fault_list *l, struct fault_frame *f)
{
	f->next = NULL;
	if (l->tail)
		l->tail->next = f;
	else
		l->head = f;
	l->tail = f;
}

static struct fault_frame *list_pop(struct fault_list *l)
{
	struct fault_frame *f = l->head;

	if (f == NULL)
		return NULL;
	l->head = f->next;
	if (l->head == NULL)
		l->tail = NULL;
	f->next = NULL;
	return f;
}

static void list_free(struct fault_list *l)
{
	struct fault_frame *f;

	while ((f = list_pop(l)) != NULL)
		free(f);
}

/* Removes and frees the frame whose address is cookie; 0 if it is not in the list. */
static int list_take(struct fault_list *l, const void *cookie)
{
	struct fault_frame *prev = NULL;

	for (struct fault_frame *f = l->head; f; prev = f, f = f->next) {
		if ((const void *)f != cookie)
			continue;
		if (prev)
			prev->next = f->next;
		else
			l->head = f->next;
		if (l->tail == f)
			l->tail = prev;
		free(f);
		return 1;
	}
	return 0;
}

static struct fault_frame *frame_new(size_t len)
{
	struct fault_frame *f = malloc(sizeof(*f) + len);

	if (f == NULL)
		return NULL;
	f->next = NULL;
	f->due = 0;
	f->has_info = 0;
	f->len = len;
	return f;
}

static struct fault_frame *frame_from_iov(const struct iovec *iov, int iovcnt, size_t total,
					  const wt_link_frame_info_t *info)
{
	struct fault_frame *f = frame_new(total);
	size_t off = 0;

	if (f == NULL)
		return NULL;
	if (info != NULL) {
		f->has_info = 1;
		f->info = *info;
	}
	for (int i = 0; i < iovcnt; i++) {
		if (iov[i].iov_len == 0)
			continue;
		memcpy(f->data + off, iov[i].iov_base, iov[i].iov_len);
		off += iov[i].iov_len;
	}
	return f;
}

static struct fault_frame *frame_clone(const struct fault_frame *src)
{
	struct fault_frame *f = frame_new(src->len);

	if (f) {
		memcpy(f->data, src->data, src->len);
		f->has_info = src->has_info;
		f->info = src->info;
	}
	return f;
}

/* ---- per-peer queues ---- */

static struct fault_peer *peer_get(wt_link_t *l, int peer)
{
	struct fault_peer *np;
	int *na;
	int n;

	if (peer < l->npeers)
		return &l->peers[peer];
	n = l->npeers ? l->npeers : 8;
	while (n <= peer)
		n = n > FAULT_MAX_PEERS / 2 ? FAULT_MAX_PEERS : n * 2;
	np = realloc(l->peers, (size_t)n * sizeof(*np));
	if (np == NULL)
		return NULL;
	l->peers = np;
	na = realloc(l->active, (size_t)n * sizeof(*na));
	if (na == NULL)
		return NULL;
	l->active = na;
	memset(np + l->npeers, 0, (size_t)(n - l->npeers) * sizeof(*np));
	for (int i = l->npeers; i < n; i++)
		rng_seed(np[i].rng, l->cfg.seed, l->rank, i);
	l->npeers = n;
	return &l->peers[peer];
}

static void peer_activate(wt_link_t *l, int peer)
{
	struct fault_peer *p = &l->peers[peer];

	if (p->active)
		return;
	p->active = 1;
	l->active[l->nactive++] = peer;
}

/* Appends f to the delay queue; due times never decrease so the queue stays in order. */
static void q_append(struct fault_peer *p, struct fault_frame *f, uint64_t due)
{
	if (p->q.tail && p->q.tail->due > due)
		due = p->q.tail->due;
	f->due = due;
	list_push(&p->q, f);
	p->q_bytes += f->len;
}

static void held_release(struct fault_peer *p, uint64_t due)
{
	struct fault_frame *f;

	while ((f = list_pop(&p->held)) != NULL)
		q_append(p, f, due);
}

/* Hands the due copies to the inner link in order, stopping when it is out of room. */
static void q_flush(wt_link_t *l, int peer, uint64_t now)
{
	struct fault_peer *p = &l->peers[peer];

	while (p->q.head && p->q.head->due <= now) {
		struct fault_frame *f = p->q.head;
		struct iovec iov = {f->data, f->len};
		weft_status_t st =
		    wt_link_send_info(l->inner, peer, &iov, 1, f, f->has_info ? &f->info : NULL);

		if (st == WT_AGAIN) {
			p->retry_at = now + FAULT_RETRY_NS;
			return;
		}
		list_pop(&p->q);
		p->q_bytes -= f->len;
		if (st == WEFT_INPROGRESS) {
			list_push(&l->inflight, f); /* inner reads it until SEND_DONE */
			continue;
		}
		/* The inner link logged the error and reports the peer through poll(). */
		if (st != WEFT_OK)
			WT_DEBUG("fault: %s: held frame to peer rank %d discarded (status %d)",
				 l->ops.name, peer, (int)st);
		free(f);
	}
	p->retry_at = 0;
}

static uint64_t peer_next_due(const struct fault_peer *p)
{
	uint64_t t = UINT64_MAX;

	if (p->held.head)
		t = p->held_due;
	if (p->q.head) {
		uint64_t q = p->q.head->due > p->retry_at ? p->q.head->due : p->retry_at;

		t = q < t ? q : t;
	}
	return t;
}

static uint64_t next_due(wt_link_t *l)
{
	uint64_t t = UINT64_MAX;

	for (int i = 0; i < l->nactive; i++) {
		uint64_t d = peer_next_due(&l->peers[l->active[i]]);

		t = d < t ? d : t;
	}
	return t;
}

static void release_due(wt_link_t *l, uint64_t now)
{
	int k = 0;

	for (int i = 0; i < l->nactive; i++) {
		int peer = l->active[i];
		struct fault_peer *p = &l->peers[peer];

		if (p->held.head && now >= p->held_due)
			held_release(p, now);
		q_flush(l, peer, now);
		if (p->held.head || p->q.head)
			l->active[k++] = peer;
		else
			p->active = 0;
	}
	l->nactive = k;
}

/* ---- the link ops ---- */

static int fault_applies(wt_link_t *l, int peer)
{
	if (!l->cfg.enabled || peer < 0 || peer >= FAULT_MAX_PEERS)
		return 0;
	return l->cfg.peer < 0 || l->cfg.peer == peer;
}

struct fault_draw {
	int dup, corrupt, hold;
	uint64_t bit;
};

/* Takes a copy of the frame (or two, or a corrupted one) into the peer's queues. */
static weft_status_t send_copied(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				 size_t total, const wt_link_frame_info_t *info,
				 const struct fault_draw *d, uint64_t now)
{
	struct fault_peer *p = &l->peers[peer];
	struct fault_frame *f = frame_from_iov(iov, iovcnt, total, info);
	struct fault_frame *g = NULL;
	uint64_t due = now + (uint64_t)l->cfg.delay_us * 1000;

	if (f && d->dup)
		g = frame_clone(f);
	if (f == NULL || (d->dup && g == NULL)) {
		free(f);
		WT_ERROR("fault: %s: out of memory copying a %zu-byte frame to peer rank %d",
			 l->ops.name, total, peer);
		return WEFT_ERR_NO_MEMORY;
	}
	if (d->corrupt) {
		uint64_t bit = d->bit % ((uint64_t)total * 8);

		f->data[bit / 8] ^= (uint8_t)(1u << (bit % 8));
		p->corrupts++;
	}
	p->dups += g != NULL;
	p->delays += l->cfg.delay_us > 0;
	peer_activate(l, peer);
	if (d->hold) {
		uint32_t us =
		    l->cfg.delay_us > FAULT_REORDER_MIN_US ? l->cfg.delay_us : FAULT_REORDER_MIN_US;

		list_push(&p->held, f);
		if (g)
			list_push(&p->held, g);
		p->held_due = now + (uint64_t)us * 1000;
		p->reorders++;
		return WEFT_OK;
	}
	q_append(p, f, due);
	if (g)
		q_append(p, g, due);
	held_release(p, due);
	q_flush(l, peer, now);
	return WEFT_OK;
}

/* send and send_info: info (NULL = none) travels with the frame and all its copies. */
static weft_status_t fault_xmit(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				void *cookie, const wt_link_frame_info_t *info)
{
	const wt_fault_config_t *c;
	struct fault_peer *p;
	struct fault_draw d;
	uint64_t saved[4], now;
	size_t total;
	weft_status_t st;
	double u_drop, u_dup, u_corrupt, u_reorder;

	if (l == NULL)
		return WEFT_ERR_INVALID_ARG;
	c = &l->cfg;
	/* Invalid sends go to the inner link unchanged: it reports them in its own words. */
	if (!fault_applies(l, peer) ||
	    wt_link_iov_total(iov, iovcnt, l->base.max_frame, &total) != WEFT_OK)
		return wt_link_send_info(l->inner, peer, iov, iovcnt, cookie, info);
	p = peer_get(l, peer);
	if (p == NULL) {
		WT_ERROR("fault: %s: out of memory for the state of peer rank %d", l->ops.name,
			 peer);
		return WEFT_ERR_NO_MEMORY;
	}
	now = wt_util_time_ns();
	if (p->q.head) {
		q_flush(l, peer, now);
		/* Without a delay the queue only holds what the inner link refused. */
		if ((p->q.head && c->delay_us == 0) || p->q_bytes + total > FAULT_QUEUE_MAX)
			return WT_AGAIN;
	}
	/* Every frame draws the same numbers, so one fault's pattern does not depend on the
	 * other rates; a frame not taken gives its draws back. */
	memcpy(saved, p->rng, sizeof(saved));
	u_drop = rng_unit(p->rng);
	u_dup = rng_unit(p->rng);
	u_corrupt = rng_unit(p->rng);
	u_reorder = rng_unit(p->rng);
	d.bit = rng_next(p->rng);
	if (u_drop < c->drop) {
		p->drops++;
		return WEFT_OK;
	}
	d.dup = u_dup < c->dup;
	d.corrupt = u_corrupt < c->corrupt && total > 0;
	d.hold = u_reorder < c->reorder && p->held.head == NULL;
	if (d.dup || d.corrupt || d.hold || c->delay_us > 0) {
		st = send_copied(l, peer, iov, iovcnt, total, info, &d, now);
		if (st != WEFT_OK)
			memcpy(p->rng, saved, sizeof(saved));
		return st;
	}
	st = wt_link_send_info(l->inner, peer, iov, iovcnt, cookie, info);
	if (st == WT_AGAIN || wt_util_is_err(st)) {
		memcpy(p->rng, saved, sizeof(saved));
		return st;
	}
	if (p->held.head) {
		held_release(p, now);
		q_flush(l, peer, now);
	}
	return st;
}

static weft_status_t fault_send(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				void *cookie)
{
	return fault_xmit(l, peer, iov, iovcnt, cookie, NULL);
}

static weft_status_t fault_send_info(wt_link_t *l, int peer, const struct iovec *iov, int iovcnt,
				     void *cookie, const wt_link_frame_info_t *info)
{
	return fault_xmit(l, peer, iov, iovcnt, cookie, info);
}

/* Drops the SEND_DONE events of the wrapper's own copies; returns the events left. */
static int swallow_done(wt_link_t *l, wt_link_event_t *ev, int n)
{
	int k = 0;

	for (int i = 0; i < n; i++) {
		if (ev[i].type == WT_LINK_EV_SEND_DONE && list_take(&l->inflight, ev[i].cookie))
			continue;
		if (k != i)
			ev[k] = ev[i];
		k++;
	}
	return k;
}

static int fault_poll(wt_link_t *l, wt_link_event_t *ev, int max)
{
	if (l == NULL || max < 0 || (max > 0 && ev == NULL))
		return WEFT_ERR_INVALID_ARG;
	if (l->nactive > 0)
		release_due(l, wt_util_time_ns());
	/* Another round only when every event was one of ours: no frame is outstanding. */
	for (int round = 0; round < FAULT_POLL_ROUNDS; round++) {
		int n = l->iops->poll(l->inner, ev, max);
		int k;

		if (n <= 0 || l->inflight.head == NULL)
			return n;
		k = swallow_done(l, ev, n);
		if (k > 0 || n < max)
			return k;
	}
	return 0;
}

static int fault_timer_ms(wt_link_t *l)
{
	uint64_t next, now;
	int mine = -1, theirs;

	if (l == NULL)
		return -1;
	next = next_due(l);
	if (next != UINT64_MAX) {
		now = wt_util_time_ns();
		if (next <= now)
			mine = 0;
		else if ((next - now + 999999) / 1000000 > INT_MAX)
			mine = INT_MAX;
		else
			mine = (int)((next - now + 999999) / 1000000);
	}
	theirs = l->iops->timer_ms ? l->iops->timer_ms(l->inner) : -1;
	if (mine < 0)
		return theirs;
	if (theirs < 0)
		return mine;
	return mine < theirs ? mine : theirs;
}

static int fault_arm(wt_link_t *l)
{
	if (l == NULL)
		return 1;
	if (l->nactive > 0 && next_due(l) <= wt_util_time_ns())
		return 1;
	return l->iops->arm ? l->iops->arm(l->inner) : 0;
}

static void fault_disarm(wt_link_t *l)
{
	if (l && l->iops->disarm)
		l->iops->disarm(l->inner);
}

static int fault_fd(wt_link_t *l)
{
	if (l == NULL || l->iops->fd == NULL)
		return -1;
	return l->iops->fd(l->inner);
}

static weft_status_t fault_address(wt_link_t *l, void *blob, size_t *len)
{
	if (l == NULL)
		return WEFT_ERR_INVALID_ARG;
	return l->iops->address(l->inner, blob, len);
}

static weft_status_t fault_connect(wt_link_t *l, int peer, const void *blob, size_t len)
{
	if (l == NULL)
		return WEFT_ERR_INVALID_ARG;
	return l->iops->connect(l->inner, peer, blob, len);
}

static weft_status_t fault_get(wt_link_t *l, int peer, void *local, const wt_link_remote_t *remote,
			       size_t off, size_t len)
{
	if (l == NULL)
		return WEFT_ERR_INVALID_ARG;
	return l->iops->get(l->inner, peer, local, remote, off, len);
}

static void fault_stats(wt_link_t *l, int peer, wt_link_stats_t *st)
{
	const struct fault_peer *p;

	if (l == NULL || st == NULL)
		return;
	if (l->iops->stats)
		l->iops->stats(l->inner, peer, st);
	if (peer < 0 || peer >= l->npeers)
		return;
	p = &l->peers[peer];
	st->fault_drops += p->drops;
	st->fault_dups += p->dups;
	st->fault_reorders += p->reorders;
	st->fault_delays += p->delays;
	st->fault_corrupts += p->corrupts;
}

static void fault_close(wt_link_t *l)
{
	if (l == NULL)
		return;
	for (int i = 0; i < l->npeers; i++) {
		list_free(&l->peers[i].q);
		list_free(&l->peers[i].held);
	}
	list_free(&l->inflight);
	free(l->peers);
	free(l->active);
	free(l);
}

static int prob_ok(double p)
{
	return p >= 0.0 && p <= 1.0; /* false for NaN */
}

static weft_status_t wrap_check(wt_link_t *inner, const wt_fault_config_t *cfg, int rank,
				wt_link_t **out)
{
	const wt_link_ops_t *o;

	if (inner == NULL || cfg == NULL || out == NULL || rank < 0) {
		WT_ERROR("fault: wrap needs a link, a config, an output and a rank >= 0 (rank %d)",
			 rank);
		return WEFT_ERR_INVALID_ARG;
	}
	o = wt_link_ops(inner);
	if (o == NULL || o->size != sizeof(wt_link_ops_t) || o->send == NULL || o->poll == NULL ||
	    o->address == NULL || o->connect == NULL || o->close == NULL) {
		WT_ERROR("fault: link to wrap has an incomplete or foreign ops table");
		return WEFT_ERR_INVALID_ARG;
	}
	if (!prob_ok(cfg->drop) || !prob_ok(cfg->dup) || !prob_ok(cfg->reorder) ||
	    !prob_ok(cfg->corrupt) || cfg->delay_us > FAULT_DELAY_MAX_US || cfg->peer < -1 ||
	    cfg->peer >= FAULT_MAX_PEERS) {
		WT_ERROR("fault: bad config for the %s link of rank %d (rates must be in [0,1], "
			 "delay_us <= %u, peer -1..%d)",
			 o->name, rank, FAULT_DELAY_MAX_US, FAULT_MAX_PEERS - 1);
		return WEFT_ERR_INVALID_ARG;
	}
	return WEFT_OK;
}

weft_status_t wt_fault_wrap(wt_link_t *inner, const wt_fault_config_t *cfg, int rank,
			    wt_link_t **out)
{
	wt_link_t *l;
	weft_status_t st = wrap_check(inner, cfg, rank, out);

	if (st != WEFT_OK)
		return st;
	l = calloc(1, sizeof(*l));
	if (l == NULL) {
		WT_ERROR("fault: out of memory wrapping the %s link of rank %d",
			 wt_link_ops(inner)->name, rank);
		return WEFT_ERR_NO_MEMORY;
	}
	l->inner = inner;
	l->iops = wt_link_ops(inner);
	l->cfg = *cfg;
	l->rank = rank;
	l->ops = *l->iops;
	l->ops.caps &= ~(WT_LINK_CAP_RELIABLE | WT_LINK_CAP_ORDERED | WT_LINK_CAP_INTEGRITY);
	l->ops.address = fault_address;
	l->ops.connect = fault_connect;
	l->ops.send = fault_send;
	l->ops.poll = fault_poll;
	l->ops.get = l->iops->get ? fault_get : NULL;
	l->ops.fd = fault_fd;
	l->ops.arm = fault_arm;
	l->ops.disarm = fault_disarm;
	l->ops.close = fault_close;
	l->ops.stats = fault_stats;
	l->ops.timer_ms = fault_timer_ms;
	l->ops.send_info = fault_send_info; /* never the inner one: it takes the inner link */
	/* Slots bypass frames, and so would bypass the faults: not offered through here. */
	l->ops.caps &= ~WT_LINK_CAP_SLOTS;
	l->ops.slot_area = NULL;
	l->ops.slot_wake = NULL;
	l->ops.cpu_shared = NULL; /* the inner one takes the inner link */
	l->base.ops = &l->ops;
	l->base.max_frame = wt_link_max_frame(inner);
	WT_INFO("fault: rank %d %s link: drop=%g dup=%g reorder=%g corrupt=%g delay_us=%u "
		"seed=%llu peer=%d",
		rank, l->ops.name, cfg->drop, cfg->dup, cfg->reorder, cfg->corrupt, cfg->delay_us,
		(unsigned long long)cfg->seed, cfg->peer);
	*out = l;
	return WEFT_OK;
}

int wt_fault_is(wt_link_t *link)
{
	return link != NULL && wt_link_ops(link) != NULL && wt_link_ops(link)->send == fault_send;
}
