/* A simulated network for schedule tests (tests/unit/schedule). Each send is read from
 * its buffer at a random moment after it was posted (as a rendezvous transfer would),
 * and completions run in random order, only from simnet_step: never inside a post.
 * With slots enabled every rank has a region of shared memory (plain heap here, as all
 * ranks live in this process); a posted wait is checked at a random moment after any rank
 * signals a store (slot_wake), as a sleeper woken by a doorbell would. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "lib/util/dtype.h"
#include "tests/unit/schedule/simnet.h"

enum { K_SEND, K_RECV, K_WAIT };
enum { S_LIVE, S_DONE, S_CANCELLED };
enum { A_READ, A_SEND_DONE, A_DELIVER, A_RECV_DONE, A_CHECK };

#define SIM_BUCKETS 4096

typedef struct simop {
	int kind, state, src, dst;
	uint64_t tag;
	const uint8_t *sbuf;
	uint8_t *rbuf;
	size_t len;
	int reduce;
	const void *left; /* combining: rbuf = left op data (NULL: rbuf op data) */
	weft_dtype_t dtype;
	weft_op_t op;
	wt_sched_net_done_fn_t cb;
	void *arg;
	int read, delivered;
	const _Atomic uint64_t *word; /* K_WAIT: done once *word >= value */
	uint64_t value;
	uint8_t *payload;
	struct simop *match;
	struct simop *chain; /* unmatched ops by key */
} simop_t;

typedef struct {
	simop_t *op;
	int what;
} simact_t;

typedef struct {
	simnet_t *sim;
	int rank;
	wt_sched_net_t net;
	size_t posts, deliveries, callbacks, checks;
	long fail_post_at, fail_recv_at, fail_wait_at;
	weft_status_t fail_post_st, fail_recv_st, fail_wait_st;
	uint64_t slot_seq[WT_SCHED_RINGS]; /* the last slot call this rank started, per ring */
	size_t wakes;
	size_t peer_maps, peer_copies; /* peer buffers reached by mapping / by copy */
	long fail_copy_at;
	weft_status_t fail_copy_st;
} simrank_t;

struct simnet {
	int n;
	uint64_t rng;
	simrank_t *ranks;
	simop_t **ops;
	size_t nops, capops;
	simact_t *acts;
	size_t nacts, capacts;
	simop_t *buckets[SIM_BUCKETS];
	/* slots: one region per rank */
	void **regions;
	size_t region_bytes;
	int peer_mode; /* simnet_enable_peers */
};

uint64_t simnet_rand(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *grow(void *arr, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return arr;
	*cap = *cap ? *cap * 2 : 256;
	arr = realloc(arr, *cap * elem);
	assert_non_null(arr);
	return arr;
}

static void add_act(simnet_t *s, simop_t *op, int what)
{
	s->acts = grow(s->acts, &s->capacts, s->nacts + 1, sizeof(*s->acts));
	s->acts[s->nacts++] = (simact_t){op, what};
}

static size_t key_bucket(int src, int dst, uint64_t tag)
{
	uint64_t h = tag * 0x9e3779b97f4a7c15ull ^ ((uint64_t)src << 32) ^ (uint64_t)dst * 977;

	return (size_t)(h ^ (h >> 29)) % SIM_BUCKETS;
}

static void maybe_deliverable(simnet_t *s, simop_t *send)
{
	simop_t *recv = send->match;

	if (recv && send->read && recv->state == S_LIVE && !recv->delivered)
		add_act(s, recv, A_DELIVER);
}

/* Exact (src, dst, tag) matching; a second unmatched op of the same kind and key would
 * make matching ambiguous, which a correct plan never produces. */
static void sim_match(simnet_t *s, simop_t *op)
{
	simop_t **pp = &s->buckets[key_bucket(op->src, op->dst, op->tag)];

	for (; *pp; pp = &(*pp)->chain) {
		simop_t *o = *pp;

		if (o->src != op->src || o->dst != op->dst || o->tag != op->tag)
			continue;
		if (o->kind == op->kind)
			fail_msg("duplicate %s %d->%d tag %#llx",
				 op->kind == K_SEND ? "send" : "recv", op->src, op->dst,
				 (unsigned long long)op->tag);
		*pp = o->chain;
		o->chain = NULL;
		if (o->len != op->len)
			fail_msg("length mismatch %d->%d tag %#llx: send %zu recv %zu", op->src,
				 op->dst, (unsigned long long)op->tag,
				 op->kind == K_SEND ? op->len : o->len,
				 op->kind == K_SEND ? o->len : op->len);
		o->match = op;
		op->match = o;
		maybe_deliverable(s, op->kind == K_SEND ? op : o);
		return;
	}
	op->chain = s->buckets[key_bucket(op->src, op->dst, op->tag)];
	s->buckets[key_bucket(op->src, op->dst, op->tag)] = op;
}

static simop_t *new_op(simrank_t *r, int kind, int peer, uint64_t tag, size_t len,
		       wt_sched_net_done_fn_t cb, void *arg)
{
	simnet_t *s = r->sim;
	simop_t *op = calloc(1, sizeof(*op));

	assert_non_null(op);
	assert_true(peer >= 0 && peer < s->n && (peer != r->rank || kind == K_WAIT));
	assert_non_null(cb);
	op->kind = kind;
	op->src = kind == K_SEND ? r->rank : peer;
	op->dst = kind == K_SEND ? peer : r->rank;
	op->tag = tag;
	op->len = len;
	op->cb = cb;
	op->arg = arg;
	s->ops = grow(s->ops, &s->capops, s->nops + 1, sizeof(*s->ops));
	s->ops[s->nops++] = op;
	return op;
}

static int post_fails(simrank_t *r, weft_status_t *st)
{
	long nth = (long)r->posts++;

	*st = r->fail_post_st;
	return nth == r->fail_post_at;
}

static weft_status_t sim_post_send(void *ctx, int peer, uint64_t tag, const void *buf, size_t len,
				   wt_sched_net_done_fn_t cb, void *arg, void **handle)
{
	simrank_t *r = ctx;
	weft_status_t st;
	simop_t *op;

	if (post_fails(r, &st))
		return st;
	assert_true(buf || !len);
	op = new_op(r, K_SEND, peer, tag, len, cb, arg);
	op->sbuf = buf;
	*handle = op;
	add_act(r->sim, op, A_READ);
	sim_match(r->sim, op);
	return WEFT_OK;
}

static weft_status_t sim_post_recv(void *ctx, int peer, uint64_t tag, void *buf, size_t len,
				   unsigned flags, weft_dtype_t dtype, weft_op_t wop,
				   const void *left, wt_sched_net_done_fn_t cb, void *arg,
				   void **handle)
{
	simrank_t *r = ctx;
	int reduce = (flags & WT_SCHED_NET_REDUCE) != 0;
	weft_status_t st;
	simop_t *op;

	if (post_fails(r, &st))
		return st;
	assert_true(buf || !len);
	/* streaming is a way of overwriting: never asked of a combining receive */
	assert_false(reduce && (flags & WT_SCHED_NET_STREAM));
	assert_int_equal(flags & ~(WT_SCHED_NET_REDUCE | WT_SCHED_NET_STREAM), 0);
	/* a left operand only for a combining receive, never overlapping its destination */
	assert_true(left == NULL || reduce);
	assert_true(left == NULL || (const uint8_t *)left + len <= (const uint8_t *)buf ||
		    (const uint8_t *)buf + len <= (const uint8_t *)left);
	if (reduce) {
		assert_true(wop != WEFT_AVG && wt_util_op_valid(wop));
		assert_int_equal(len % wt_util_dtype_size(dtype), 0);
	}
	op = new_op(r, K_RECV, peer, tag, len, cb, arg);
	op->rbuf = buf;
	op->reduce = reduce;
	op->left = left;
	op->dtype = dtype;
	op->op = wop;
	*handle = op;
	sim_match(r->sim, op);
	return WEFT_OK;
}

static weft_status_t sim_slots(void *ctx, wt_sched_slots_t *out)
{
	simrank_t *r = ctx;
	simnet_t *s = r->sim;

	assert_non_null(s->regions);
	/* one sequence per ring when the regions have the small ones (exec.h) */
	int ring = wt_sched_slot_small_capacity(s->region_bytes) > 0 ? out->ring : 0;

	assert_true(ring >= 0 && ring < WT_SCHED_RINGS);

	out->seq = r->slot_seq[ring] + 1;
	r->slot_seq[ring] += out->nseq > 1 ? out->nseq : 1;
	out->region = s->regions;
	out->region_bytes = s->region_bytes;
	return WEFT_OK;
}

static weft_status_t sim_post_wait(void *ctx, int peer, const _Atomic uint64_t *word,
				   uint64_t value, wt_sched_net_done_fn_t cb, void *arg,
				   void **handle)
{
	simrank_t *r = ctx;
	weft_status_t st;
	simop_t *op;

	if (post_fails(r, &st))
		return st;
	assert_non_null(word);
	/* The executor posts only what it found unmet, and nothing changed since. */
	assert_true(atomic_load(word) < value);
	op = new_op(r, K_WAIT, peer, 0, 0, cb, arg);
	op->word = word;
	op->value = value;
	*handle = op;
	return WEFT_OK;
}

/* Every live wait gets a check at a random later moment. */
static void sim_slot_wake(void *ctx)
{
	simrank_t *r = ctx;
	simnet_t *s = r->sim;

	r->wakes++;
	for (size_t i = 0; i < s->nops; i++)
		if (s->ops[i]->kind == K_WAIT && s->ops[i]->state == S_LIVE)
			add_act(s, s->ops[i], A_CHECK);
}

static void sim_cancel(void *ctx, void *handle)
{
	simrank_t *r = ctx;
	simop_t *op = handle, **pp;

	assert_non_null(op);
	assert_int_equal(op->kind == K_SEND ? op->src : op->dst, r->rank);
	assert_int_equal(op->state, S_LIVE);
	op->state = S_CANCELLED;
	if (op->match || op->kind == K_WAIT)
		return;
	pp = &r->sim->buckets[key_bucket(op->src, op->dst, op->tag)];
	while (*pp && *pp != op)
		pp = &(*pp)->chain;
	if (*pp)
		*pp = op->chain;
}

simnet_t *simnet_new(int nranks, uint64_t seed)
{
	simnet_t *s = calloc(1, sizeof(*s));

	assert_non_null(s);
	s->n = nranks;
	s->rng = seed * 2654435761u + 0x5bd1e995u;
	if (!s->rng)
		s->rng = 1;
	s->ranks = calloc((size_t)nranks, sizeof(*s->ranks));
	assert_non_null(s->ranks);
	for (int i = 0; i < nranks; i++) {
		simrank_t *r = &s->ranks[i];

		r->sim = s;
		r->rank = i;
		r->fail_post_at = -1;
		r->fail_recv_at = -1;
		r->fail_wait_at = -1;
		r->fail_copy_at = -1;
		r->net = (wt_sched_net_t){r, sim_post_send, sim_post_recv, sim_cancel};
	}
	return s;
}

void simnet_free(simnet_t *s)
{
	if (!s)
		return;
	for (size_t i = 0; i < s->nops; i++) {
		free(s->ops[i]->payload);
		free(s->ops[i]);
	}
	free(s->ops);
	free(s->acts);
	free(s->ranks);
	for (int i = 0; s->regions && i < s->n; i++)
		free(s->regions[i]);
	free(s->regions);
	free(s);
}

const wt_sched_net_t *simnet_net(simnet_t *s, int rank)
{
	return &s->ranks[rank].net;
}

void simnet_enable_slots(simnet_t *s, size_t region_bytes, uint64_t base)
{
	s->regions = calloc((size_t)s->n, sizeof(*s->regions));
	assert_non_null(s->regions);
	s->region_bytes = region_bytes;
	for (int i = 0; i < s->n; i++) {
		simrank_t *r = &s->ranks[i];

		s->regions[i] = aligned_alloc(64, region_bytes);
		assert_non_null(s->regions[i]);
		/* Garbage where the slots are: nothing may read a slot before it is published. */
		memset(s->regions[i], 0xdb, region_bytes);
		wt_sched_slot_reset(s->regions[i], region_bytes, base, 0);
		for (int ring = 0; ring < WT_SCHED_RINGS; ring++)
			r->slot_seq[ring] = base;
		r->net.slots = sim_slots;
		r->net.post_wait = sim_post_wait;
		r->net.slot_wake = sim_slot_wake;
	}
}

/* One process: a peer's buffer is its address. */
static void *sim_peer_map(void *ctx, int peer, const wt_util_umem_desc_t *d)
{
	simrank_t *r = ctx;
	simnet_t *s = r->sim;

	assert_true(peer >= 0 && peer < s->n && peer != r->rank);
	assert_true(d->addr != 0 || d->len == 0);
	if (s->peer_mode == SIMNET_PEERS_COPY ||
	    (s->peer_mode == SIMNET_PEERS_MIXED && simnet_rand(&s->rng) % 2))
		return NULL;
	r->peer_maps++;
	return (void *)(uintptr_t)d->addr;
}

static weft_status_t sim_peer_copy(void *ctx, int peer, void *local, const wt_util_umem_desc_t *d,
				   size_t off, size_t len, int write)
{
	simrank_t *r = ctx;
	uint8_t *remote = (uint8_t *)(uintptr_t)d->addr;

	assert_true(peer >= 0 && peer < r->sim->n && peer != r->rank);
	/* the executor checked the range against what the peer published */
	assert_true(off <= d->len && len <= d->len - off);
	if (r->fail_copy_at >= 0 && (long)r->peer_copies == r->fail_copy_at) {
		r->peer_copies++;
		return r->fail_copy_st;
	}
	r->peer_copies++;
	if (write)
		memcpy(remote + off, local, len);
	else
		memcpy(local, remote + off, len);
	return WEFT_OK;
}

void simnet_enable_peers(simnet_t *s, int mode)
{
	s->peer_mode = mode;
	for (int i = 0; i < s->n; i++) {
		s->ranks[i].net.peer_map = sim_peer_map;
		s->ranks[i].net.peer_copy = sim_peer_copy;
	}
}

size_t simnet_peer_maps(const simnet_t *s, int rank)
{
	return s->ranks[rank].peer_maps;
}

size_t simnet_peer_copies(const simnet_t *s, int rank)
{
	return s->ranks[rank].peer_copies;
}

void simnet_fail_peer_copy(simnet_t *s, int rank, int nth, weft_status_t st)
{
	s->ranks[rank].fail_copy_at = nth;
	s->ranks[rank].fail_copy_st = st;
}

void *simnet_region(simnet_t *s, int rank)
{
	return s->regions ? s->regions[rank] : NULL;
}

size_t simnet_wakes(const simnet_t *s, int rank)
{
	return s->ranks[rank].wakes;
}

void simnet_fail_wait(simnet_t *s, int rank, int nth, weft_status_t st)
{
	s->ranks[rank].fail_wait_at = nth;
	s->ranks[rank].fail_wait_st = st;
}

static int owner(const simop_t *op)
{
	return op->kind == K_SEND ? op->src : op->dst;
}

static void sim_complete(simnet_t *s, simop_t *op, weft_status_t st, const char *msg)
{
	simrank_t *r = &s->ranks[owner(op)];

	op->state = S_DONE;
	r->callbacks++;
	op->cb(op->arg, st, msg);
}

static void sim_read(simnet_t *s, simop_t *op)
{
	if (op->len) {
		op->payload = malloc(op->len);
		assert_non_null(op->payload);
		memcpy(op->payload, op->sbuf, op->len);
	}
	op->read = 1;
	add_act(s, op, A_SEND_DONE);
	maybe_deliverable(s, op);
}

static void sim_deliver(simnet_t *s, simop_t *op)
{
	simrank_t *r = &s->ranks[op->dst];
	const uint8_t *data = op->match->payload;

	if ((long)r->deliveries++ == r->fail_recv_at) {
		sim_complete(s, op, r->fail_recv_st, "simulated receive failure");
		return;
	}
	op->delivered = 1;
	if (op->len && op->reduce && op->left)
		wt_util_reduce3(op->rbuf, op->left, data, op->len / wt_util_dtype_size(op->dtype),
				op->dtype, op->op);
	else if (op->len && op->reduce)
		wt_util_reduce(op->rbuf, data, op->len / wt_util_dtype_size(op->dtype), op->dtype,
			       op->op);
	else if (op->len)
		memcpy(op->rbuf, data, op->len);
	add_act(s, op, A_RECV_DONE);
}

/* A wait whose word has reached its value completes; one the test chose to fail reports
 * the failure instead (its peer died, as far as this rank can tell). */
static void sim_check(simnet_t *s, simop_t *op)
{
	simrank_t *r = &s->ranks[op->dst];

	if ((long)r->checks == r->fail_wait_at) {
		r->checks++;
		sim_complete(s, op, r->fail_wait_st, "simulated peer failure during a slot wait");
		return;
	}
	if (atomic_load(op->word) < op->value)
		return;
	r->checks++;
	sim_complete(s, op, WEFT_OK, NULL);
}

int simnet_step(simnet_t *s)
{
	while (s->nacts) {
		size_t i = (size_t)(simnet_rand(&s->rng) % s->nacts);
		simact_t a = s->acts[i];

		s->acts[i] = s->acts[--s->nacts];
		if (a.op->state != S_LIVE)
			continue;
		switch (a.what) {
		case A_READ:
			sim_read(s, a.op);
			break;
		case A_SEND_DONE:
		case A_RECV_DONE:
			sim_complete(s, a.op, WEFT_OK, NULL);
			break;
		case A_DELIVER:
			sim_deliver(s, a.op);
			break;
		case A_CHECK:
			sim_check(s, a.op);
			break;
		}
		return 1;
	}
	return 0;
}

size_t simnet_run(simnet_t *s)
{
	size_t n = 0;

	while (simnet_step(s))
		n++;
	return n;
}

void simnet_fail_post(simnet_t *s, int rank, int nth, weft_status_t st)
{
	s->ranks[rank].fail_post_at = nth;
	s->ranks[rank].fail_post_st = st;
}

void simnet_fail_recv(simnet_t *s, int rank, int nth, weft_status_t st)
{
	s->ranks[rank].fail_recv_at = nth;
	s->ranks[rank].fail_recv_st = st;
}

size_t simnet_live_ops(const simnet_t *s, int rank)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nops; i++)
		n += owner(s->ops[i]) == rank && s->ops[i]->state == S_LIVE;
	return n;
}

static int cmp_int(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

size_t simnet_live_recv_peers(const simnet_t *s, int rank, int *peers, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < s->nops && n < max; i++) {
		const simop_t *op = s->ops[i];
		size_t k;

		if (op->kind == K_SEND || op->dst != rank || op->src == rank || op->state != S_LIVE)
			continue;
		for (k = 0; k < n && peers[k] != op->src; k++)
			;
		if (k == n)
			peers[n++] = op->src;
	}
	qsort(peers, n, sizeof(*peers), cmp_int);
	return n;
}

size_t simnet_callbacks(const simnet_t *s, int rank)
{
	return s->ranks[rank].callbacks;
}

size_t simnet_posts(const simnet_t *s, int rank)
{
	return s->ranks[rank].posts;
}
