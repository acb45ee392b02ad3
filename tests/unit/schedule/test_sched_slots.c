/* The shared-slot algorithms on the simulated network with slot regions (tests/unit/schedule):
 * every collective they serve at rank counts 1..13 and 33, edge counts, every dtype and op,
 * in place or not, roots, random orders, results exact; consecutive calls in flight at once
 * (the four slots per rank serve calls in turn, and a rank must not overwrite a slot a slow peer
 * still reads); a peer failing during a wait; cancellation; the plan checks that refuse broken slot
 * plans; and selection by the cost model and WEFT_ALGO. */
#include <pthread.h>
#include <sys/mman.h>
#include <unistd.h>
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <cmocka.h>

#include "layers/schedule/exec.h"
#include "layers/schedule/plan.h"
#include "lib/util/dtype.h"
#include "tests/unit/schedule/schedtest.h"
#include "tests/unit/schedule/simnet.h"

#define REGION ((size_t)64 * 1024)
/* Regions as the API's: the large ring and the small one (32 slots of 8 KiB). */
#define BIG_REGION WT_SCHED_SLOT_REGION
#define SEQ_CALLS 12
/* a root two tiny rings ahead, and then some */
#define MAX_CALLS (2 * (int)WT_SCHED_SLOT_TINY_DEPTH + 8)
#define MIX_CALLS 72

/* The region size of the simulated runs (run_one, run_sequence). */
static size_t g_region = REGION;
#define TAG(k) ((uint64_t)(0x300 + (k)) << WT_SCHED_TAG_MSG_BITS)

typedef struct {
	wt_sched_coll_t coll;
	int n;
	size_t count;
	weft_dtype_t dt;
	weft_op_t op;
	int root;
	int in_place;
	uint64_t seed;
	const char *algo; /* "slots" unless a test mixes in a message algorithm */
	int call;	  /* which call of a sequence: inputs differ per call */
} cfg_t;

static const weft_dtype_t dtypes[] = {WEFT_INT8,    WEFT_UINT8,	 WEFT_INT32,   WEFT_UINT32,
				      WEFT_INT64,   WEFT_UINT64, WEFT_FLOAT16, WEFT_BFLOAT16,
				      WEFT_FLOAT32, WEFT_FLOAT64};
static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG};
static const wt_sched_coll_t colls[] = {
    WT_COLL_ALLREDUCE, WT_COLL_ALLGATHER, WT_COLL_REDUCE_SCATTER, WT_COLL_BROADCAST,
    WT_COLL_REDUCE,    WT_COLL_ALLTOALL,  WT_COLL_BARRIER};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

/* The input function of st_reduce_ref has no room for the call number: it is set here. */
static int cur_call;

static int64_t input(int r, size_t i, weft_op_t op, weft_dtype_t dt)
{
	return st_exact_input(st_hash((uint64_t)(r + 1) * 1000003u + (uint64_t)cur_call, i), r, i,
			      op, dt);
}

static int is_reduction(wt_sched_coll_t c)
{
	return c == WT_COLL_ALLREDUCE || c == WT_COLL_REDUCE_SCATTER || c == WT_COLL_REDUCE;
}

static size_t es_of(const cfg_t *c)
{
	return wt_util_dtype_size(c->dt);
}

static size_t in_elems(const cfg_t *c, int r)
{
	switch (c->coll) {
	case WT_COLL_REDUCE_SCATTER:
	case WT_COLL_ALLTOALL:
		return c->count * (size_t)c->n;
	case WT_COLL_BARRIER:
		return 0;
	case WT_COLL_BROADCAST:
		return r == c->root ? c->count : 0;
	default:
		return c->count;
	}
}

static size_t out_elems(const cfg_t *c, int r)
{
	switch (c->coll) {
	case WT_COLL_ALLGATHER:
	case WT_COLL_ALLTOALL:
		return c->count * (size_t)c->n;
	case WT_COLL_BARRIER:
		return 0;
	case WT_COLL_REDUCE:
		return r == c->root ? c->count : 0;
	default:
		return c->count;
	}
}

static void store_input(const cfg_t *c, uint8_t *buf, int r, size_t elems)
{
	for (size_t i = 0; i < elems; i++)
		st_store(buf + i * es_of(c), c->dt, input(r, i, c->op, c->dt));
}

/* Rank r's expected output, call cur_call. */
static void reference(const cfg_t *c, int r, uint8_t *out)
{
	size_t es = es_of(c), n = out_elems(c, r);

	for (size_t i = 0; i < n; i++) {
		uint8_t *o = out + i * es;

		switch (c->coll) {
		case WT_COLL_ALLREDUCE:
		case WT_COLL_REDUCE:
			st_reduce_ref(input, c->n, i, c->op, c->dt, o);
			break;
		case WT_COLL_REDUCE_SCATTER:
			st_reduce_ref(input, c->n, (size_t)r * c->count + i, c->op, c->dt, o);
			break;
		case WT_COLL_ALLGATHER:
			st_store(o, c->dt, input((int)(i / c->count), i % c->count, c->op, c->dt));
			break;
		case WT_COLL_BROADCAST:
			st_store(o, c->dt, input(c->root, i, c->op, c->dt));
			break;
		case WT_COLL_ALLTOALL:
			st_store(o, c->dt,
				 input((int)(i / c->count), (size_t)r * c->count + i % c->count,
				       c->op, c->dt));
			break;
		default:
			break;
		}
	}
}

/* One rank's buffers for one call. In place there is one user buffer: allgather's input is
 * our block of RECV, reduce-scatter's RECV is our block of SEND, broadcast always shares. */
typedef struct {
	uint8_t *user;
	size_t user_bytes;
	uint8_t *send, *recv;
	uint8_t *orig; /* the input as given, to check SEND is kept */
	size_t in_bytes;
} rbuf_t;

static int in_place_of(const cfg_t *c, int r)
{
	if (c->coll == WT_COLL_BROADCAST)
		return 1;
	if (c->coll == WT_COLL_REDUCE)
		return c->in_place && r == c->root;
	if (c->coll == WT_COLL_BARRIER)
		return 0;
	return c->in_place;
}

static void setup(const cfg_t *c, int r, rbuf_t *b)
{
	size_t es = es_of(c), in = in_elems(c, r) * es, out = out_elems(c, r) * es;
	size_t blk = c->count * es;
	int ip = in_place_of(c, r);

	cur_call = c->call;
	b->in_bytes = in;
	b->user_bytes = (ip ? (in > out ? in : out) : in + out) + 1;
	b->user = st_alloc(b->user_bytes);
	memset(b->user, 0xa5, b->user_bytes);
	b->orig = st_alloc(in + 1);
	if (!ip) {
		b->send = b->user;
		b->recv = b->user + in;
	} else if (c->coll == WT_COLL_ALLGATHER) {
		b->recv = b->user;
		b->send = b->user + (size_t)r * blk;
	} else if (c->coll == WT_COLL_REDUCE_SCATTER) {
		b->send = b->user;
		b->recv = b->user + (size_t)r * blk;
	} else {
		b->send = b->recv = b->user;
	}
	if (c->coll == WT_COLL_BROADCAST && r != c->root) {
		b->in_bytes = 0;
	} else if (c->coll == WT_COLL_ALLGATHER && ip) {
		/* the input sits at our block of RECV */
		store_input(c, b->send, r, c->count);
		b->in_bytes = 0;
	} else {
		store_input(c, b->send, r, in_elems(c, r));
	}
	if (b->in_bytes)
		memcpy(b->orig, b->send, b->in_bytes);
	if (c->coll == WT_COLL_REDUCE && r != c->root)
		b->recv = NULL;
	if (c->coll == WT_COLL_BARRIER)
		b->send = b->recv = b->user;
}

static void check_rank(const cfg_t *c, int r, const rbuf_t *b, const char *name)
{
	size_t es = es_of(c), out = out_elems(c, r) * es;
	uint8_t *want = st_alloc(out + 1);

	cur_call = c->call;
	reference(c, r, want);
	if (out)
		st_check_bytes(name, r, "RECV", b->recv, want, out, es);
	if (!in_place_of(c, r) && b->in_bytes)
		st_check_bytes(name, r, "SEND (must be kept)", b->send, b->orig, b->in_bytes, es);
	free(want);
}

static void free_rbuf(rbuf_t *b)
{
	free(b->user);
	free(b->orig);
}

static wt_sched_args_t args_of(const cfg_t *c, int r)
{
	wt_sched_args_t a = st_args(c->coll, c->count, c->dt, c->op, r, c->n, c->in_place, 0);

	a.root = c->root;
	a.slot_bytes = wt_sched_slot_capacity(g_region);
	if (c->coll == WT_COLL_BROADCAST)
		a.in_place = 1;
	if (c->coll == WT_COLL_BARRIER)
		a.in_place = 0;
	if (c->coll == WT_COLL_REDUCE)
		a.in_place = in_place_of(c, r);
	return a;
}

static void cfg_name(const cfg_t *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s n=%d count=%zu %s %s root=%d in_place=%d call=%d seed=%llu",
		 wt_sched_coll_name(c->coll), c->algo ? c->algo : "slots", c->n, c->count,
		 wt_util_dtype_name(c->dt), wt_util_op_name(c->op), c->root, c->in_place, c->call,
		 (unsigned long long)c->seed);
}

static const wt_sched_algo_t *algo_of(const cfg_t *c)
{
	wt_sched_args_t a = args_of(c, 0);
	const wt_sched_algo_t *algo = wt_sched_algo_select(&a, c->algo ? c->algo : "slots");

	assert_non_null(algo);
	return algo;
}

/* One collective on every rank, started in a random order, run to the end. */
static void run_one(const cfg_t *c)
{
	st_execs_t x = {.n = c->n, .sim = simnet_new(c->n, c->seed)};
	const wt_sched_algo_t *algo = algo_of(c);
	rbuf_t b[ST_MAX_RANKS];
	int order[ST_MAX_RANKS];
	uint64_t rng = c->seed * 7 + 3;
	char name[256];

	cfg_name(c, name, sizeof(name));
	simnet_enable_slots(x.sim, g_region, 1000 + c->seed);
	for (int r = 0; r < c->n; r++) {
		wt_sched_args_t a = args_of(c, r);

		setup(c, r, &b[r]);
		st_build(&a, algo, name, &x.plan[r]);
	}
	st_random_order(order, c->n, &rng);
	for (int k = 0; k < c->n; k++) {
		int r = order[k];

		st_start(&x, r, TAG(0), b[r].send, b[r].recv);
		/* let the network run a little between starts */
		for (uint64_t s = simnet_rand(&rng) % 4; s > 0 && simnet_step(x.sim); s--)
			;
	}
	st_run_checked(&x, &rng, 7, 0);
	for (int r = 0; r < c->n; r++) {
		st_check_done(&x, r, name);
		check_rank(c, r, &b[r], name);
		st_release(&x, r, 1);
		free_rbuf(&b[r]);
	}
	simnet_free(x.sim);
}

static int roots_of(int n, int *roots)
{
	int k = 0;

	roots[k++] = 0;
	if (n > 1)
		roots[k++] = n - 1;
	if (n > 2)
		roots[k++] = n / 2;
	return k;
}

/* Every collective, rank counts 1..13 and 33, counts 0, 1, 7, 37, in place or not, each
 * root. */
static void test_colls_ranks_counts(void **state)
{
	static const size_t counts[] = {0, 1, 7, 37};
	static const int ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 33};
	uint64_t seed = 1;

	(void)state;
	for (size_t ci = 0; ci < NCOLLS; ci++)
		for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
			for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
				for (int ip = 0; ip < 2; ip++) {
					int roots[3], nr = roots_of(ns[ni], roots);

					for (int ri = 0; ri < nr; ri++) {
						cfg_t c = {.coll = colls[ci],
							   .n = ns[ni],
							   .count = counts[k],
							   .dt = WEFT_INT32,
							   .op = WEFT_SUM,
							   .root = roots[ri],
							   .in_place = ip,
							   .seed = seed++};

						run_one(&c);
					}
				}
}

/* Every dtype and op of the reductions (and every dtype of the others) at 2, 3, 4, 8. */
static void test_dtypes_ops(void **state)
{
	static const int ns[] = {2, 3, 4, 8};
	uint64_t seed = 5000;

	(void)state;
	for (size_t ci = 0; ci < NCOLLS; ci++)
		for (size_t di = 0; di < sizeof(dtypes) / sizeof(dtypes[0]); di++)
			for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
				for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
					cfg_t c = {.coll = colls[ci],
						   .n = ns[ni],
						   .count = 19,
						   .dt = dtypes[di],
						   .op = ops[oi],
						   .root = (int)(seed % (uint64_t)ns[ni]),
						   .in_place = (int)(seed & 1),
						   .seed = seed++};

					if (!is_reduction(colls[ci]) && oi > 0)
						continue;
					run_one(&c);
				}
}

/* The largest vectors a slot holds. */
static void test_full_slot(void **state)
{
	size_t cap = wt_sched_slot_capacity(REGION);
	uint64_t seed = 9000;

	(void)state;
	for (size_t ci = 0; ci < NCOLLS; ci++)
		for (int n = 2; n <= 4; n++) {
			/* blocks in the fullest slot: an alltoall's first and last ranks
			 * leave their own out, so at 2 ranks each publishes one */
			size_t many = colls[ci] == WT_COLL_REDUCE_SCATTER ? (size_t)n
				      : colls[ci] == WT_COLL_ALLTOALL	  ? (size_t)(n == 2 ? 1 : n)
									  : 1;
			cfg_t c = {.coll = colls[ci],
				   .n = n,
				   .count = cap / 4 / many,
				   .dt = WEFT_FLOAT32,
				   .op = WEFT_SUM,
				   .root = n - 1,
				   .in_place = n & 1,
				   .seed = seed++};

			run_one(&c);
		}
}

/* ---- consecutive calls ---- */

/* Calls 0..ncalls-1 of cfgs[k] on every rank, each rank starting its calls in order but
 * all of them at once and interleaved with the other ranks' starts and the network's
 * events: with only four slots per rank, a call must wait for the peers to release the slot
 * four slot calls back before it publishes. */
/* A run of slot calls at n ranks on one simulated network with slots of g_region bytes:
 * every call's plan
 * and buffers on every rank are made up front; calls_start starts call k on rank r, and
 * calls_finish runs the network dry, checks that every call completed once with the right
 * result and nothing is left posted, and frees it all. */
typedef struct {
	simnet_t *sim;
	const cfg_t *cfgs;
	int ncalls, n;
	wt_sched_plan_t *plan[MAX_CALLS][ST_MAX_RANKS];
	wt_sched_exec_t *ex[MAX_CALLS][ST_MAX_RANKS];
	st_done_t done[MAX_CALLS][ST_MAX_RANKS];
	rbuf_t b[MAX_CALLS][ST_MAX_RANKS];
} calls_t;

static calls_t *calls_new(const cfg_t *cfgs, int ncalls, int n, uint64_t seed)
{
	calls_t *cs = calloc(1, sizeof(*cs));
	char name[256];

	assert_non_null(cs);
	assert_true(ncalls <= MAX_CALLS && n <= ST_MAX_RANKS);
	cs->sim = simnet_new(n, seed);
	cs->cfgs = cfgs;
	cs->ncalls = ncalls;
	cs->n = n;
	simnet_enable_slots(cs->sim, g_region, 77);
	for (int k = 0; k < ncalls; k++)
		for (int r = 0; r < n; r++) {
			wt_sched_args_t a = args_of(&cfgs[k], r);

			cfg_name(&cfgs[k], name, sizeof(name));
			setup(&cfgs[k], r, &cs->b[k][r]);
			st_build(&a, algo_of(&cfgs[k]), name, &cs->plan[k][r]);
		}
	return cs;
}

static void calls_start(calls_t *cs, int k, int r)
{
	assert_int_equal(wt_sched_exec_start(cs->plan[k][r], simnet_net(cs->sim, r), TAG(k),
					     cs->b[k][r].send, cs->b[k][r].recv, st_on_done,
					     &cs->done[k][r], &cs->ex[k][r]),
			 WEFT_OK);
}

static void calls_finish(calls_t *cs)
{
	char name[256];

	simnet_run(cs->sim);
	for (int k = 0; k < cs->ncalls; k++)
		for (int r = 0; r < cs->n; r++) {
			const st_done_t *d = &cs->done[k][r];

			cfg_name(&cs->cfgs[k], name, sizeof(name));
			if (d->calls != 1 || d->st != WEFT_OK)
				fail_msg("%s: rank %d done %d times, status %d (deadlock?) %s",
					 name, r, d->calls,
					 cs->ex[k][r] ? (int)wt_sched_exec_status(cs->ex[k][r])
						      : -1,
					 d->msg);
			check_rank(&cs->cfgs[k], r, &cs->b[k][r], name);
			wt_sched_exec_free(cs->ex[k][r]);
			wt_sched_plan_unref(cs->plan[k][r]);
			free_rbuf(&cs->b[k][r]);
		}
	for (int r = 0; r < cs->n; r++)
		assert_int_equal(simnet_live_ops(cs->sim, r), 0);
	simnet_free(cs->sim);
	free(cs);
}

static void run_sequence(const cfg_t *cfgs, int ncalls, int n, uint64_t seed)
{
	calls_t *cs = calls_new(cfgs, ncalls, n, seed);
	int next[ST_MAX_RANKS] = {0}, left = ncalls * n;
	uint64_t rng = seed * 31 + 1;

	while (left > 0) {
		int r = (int)(simnet_rand(&rng) % (uint64_t)n);

		if (next[r] < ncalls) {
			calls_start(cs, next[r]++, r);
			left--;
		}
		for (uint64_t s = simnet_rand(&rng) % 6; s > 0 && simnet_step(cs->sim); s--)
			;
	}
	calls_finish(cs);
}

/* Call k of a mixed sequence at n ranks: collective (every coll_step-th of the list), op,
 * root and in-place form vary with seed and k; every msg_every-th call, if an allreduce,
 * takes the message path (slot numbering must only count slot calls). */
static cfg_t mixed_call(uint64_t seed, int k, int n, unsigned coll_step, size_t count,
			int msg_every)
{
	cfg_t c = {.coll = colls[(seed + (uint64_t)k * coll_step) % NCOLLS],
		   .n = n,
		   .count = count,
		   .dt = WEFT_INT32,
		   .op = ops[(seed + (uint64_t)k) % 5],
		   .root = (int)((seed + (uint64_t)k) % (uint64_t)n),
		   .in_place = (int)((seed >> 1) + (uint64_t)k) & 1,
		   .seed = seed,
		   .call = k};

	if (k % msg_every == msg_every - 1 && c.coll == WT_COLL_ALLREDUCE)
		c.algo = "recursive_doubling";
	return c;
}

static void test_consecutive_calls(void **state)
{
	uint64_t seed = 20000;

	(void)state;
	for (int n = 2; n <= 9; n++)
		for (int rep = 0; rep < 6; rep++) {
			cfg_t cfgs[SEQ_CALLS];

			for (int k = 0; k < SEQ_CALLS; k++)
				cfgs[k] =
				    mixed_call(seed, k, n, 3, 1 + (seed + (uint64_t)k) % 9, 4);
			run_sequence(cfgs, SEQ_CALLS, n, seed++);
		}
}

/* The same allreduce shape over and over (the common loop), in place and not. */
static void test_same_call_repeated(void **state)
{
	uint64_t seed = 30000;

	(void)state;
	for (int n = 2; n <= 8; n++)
		for (int ip = 0; ip < 2; ip++) {
			cfg_t cfgs[SEQ_CALLS];

			for (int k = 0; k < SEQ_CALLS; k++)
				cfgs[k] = (cfg_t){.coll = WT_COLL_ALLREDUCE,
						  .n = n,
						  .count = 2,
						  .dt = WEFT_FLOAT32,
						  .op = WEFT_SUM,
						  .in_place = ip,
						  .seed = seed,
						  .call = k};
			run_sequence(cfgs, SEQ_CALLS, n, seed++);
		}
}

/* ---- the small ring ---- */

/* With regions as the API's, calls of at most WT_SCHED_SLOT_SMALL_CAP bytes in all (count
 * times the rank count) go through the small ring, those of at most WT_SCHED_SLOT_TINY_CAP
 * through the tiny one from WT_SCHED_SLOT_TINY_RANKS ranks on: every collective, tiny, at
 * each ring's limit and just past it, results exact; then 72 calls in flight at once, tiny
 * and large mixed with message calls, so that the rings wrap while the others are in use. */
static void test_small_ring(void **state)
{
	uint64_t seed = 60000;
	static const int ns[] = {2, 3, 4, 8};

	(void)state;
	assert_int_equal(wt_sched_slot_small_capacity(BIG_REGION), WT_SCHED_SLOT_SMALL_CAP);
	assert_int_equal(wt_sched_slot_small_capacity(REGION), 0);
	assert_int_equal(wt_sched_slot_tiny_capacity(BIG_REGION), WT_SCHED_SLOT_TINY_CAP);
	assert_int_equal(wt_sched_slot_tiny_capacity(REGION), 0);
	assert_true(wt_sched_slot_capacity(BIG_REGION) >= 256 * 1024 + WT_SCHED_PEER_DESC_BYTES);
	g_region = BIG_REGION;
	for (size_t ci = 0; ci < NCOLLS; ci++)
		for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
			int n = ns[ni];
			size_t lim = WT_SCHED_SLOT_SMALL_CAP / 4 / (size_t)n;
			size_t tlim = WT_SCHED_SLOT_TINY_CAP / 4 / (size_t)n;
			size_t counts[] = {1, 7, tlim, tlim + 1, lim, lim + 1};

			for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
				cfg_t c = {.coll = colls[ci],
					   .n = n,
					   .count = counts[k],
					   .dt = WEFT_FLOAT32,
					   .op = WEFT_SUM,
					   .root = (int)(seed % (uint64_t)n),
					   .in_place = (int)(seed & 1),
					   .seed = seed++};
				wt_sched_args_t a = args_of(&c, c.root);
				wt_sched_plan_t *p;

				st_build(&a, algo_of(&c), "small ring", &p);
				assert_int_equal(wt_sched_plan_view(p)->slot_ring,
						 counts[k] > lim ? WT_SCHED_RING_LARGE
						 : counts[k] <= tlim &&
							 n >= WT_SCHED_SLOT_TINY_RANKS
						     ? WT_SCHED_RING_TINY
						     : WT_SCHED_RING_SMALL);
				wt_sched_plan_unref(p);
				run_one(&c);
			}
		}
	for (int n = 2; n <= 5; n++)
		for (int rep = 0; rep < 2; rep++) {
			cfg_t cfgs[MIX_CALLS];

			for (int k = 0; k < MIX_CALLS; k++) {
				size_t big =
				    WT_SCHED_SLOT_SMALL_CAP / 4 / (size_t)n + 1 + (size_t)k;

				cfgs[k] = mixed_call(seed, k, n, 5,
						     k % 3 == 0 ? big : 1 + (size_t)k % 5, 7);
			}
			run_sequence(cfgs, MIX_CALLS, n, seed++);
		}
	g_region = REGION;
}

/* A broadcast root runs ahead of readers that have not started: WT_SCHED_SLOT_TINY_DEPTH
 * tiny calls complete, the next one waits for their releases; of calls too large for the
 * tiny ring WT_SCHED_SLOT_SMALL_DEPTH, of calls too large for the small ring
 * WT_SCHED_SLOT_DEPTH. Then the readers finish calls in runs of
 * different lengths, and after each run the root starts calls until one waits: exactly its
 * calls up to a ring ahead of the readers' last have completed. At the end every call has
 * the root's data. */
static void test_root_runs_ahead(void **state)
{
	enum { N = 3 };
	(void)state;
	g_region = BIG_REGION;
	for (int ring = 0; ring < WT_SCHED_RINGS; ring++) {
		int ahead = ring == WT_SCHED_RING_LARGE	  ? WT_SCHED_SLOT_DEPTH
			    : ring == WT_SCHED_RING_SMALL ? (int)WT_SCHED_SLOT_SMALL_DEPTH
							  : (int)WT_SCHED_SLOT_TINY_DEPTH;
		size_t count = ring == WT_SCHED_RING_LARGE   ? WT_SCHED_SLOT_SMALL_CAP / 4
			       : ring == WT_SCHED_RING_SMALL ? WT_SCHED_SLOT_TINY_CAP / 4 / N + 1
							     : 3;
		int ncalls = 2 * ahead + 4, started = 0, read = 0;
		const int runs[] = {1, ahead / 2 + 1, 2, ahead, 1, ahead + 4};
		cfg_t c[MAX_CALLS];
		calls_t *cs;

		assert_true(ncalls <= MAX_CALLS);
		for (int k = 0; k < ncalls; k++)
			c[k] = (cfg_t){.coll = WT_COLL_BROADCAST,
				       .n = N,
				       .count = count,
				       .dt = WEFT_INT32,
				       .op = WEFT_SUM,
				       .root = 0,
				       .seed = 4242,
				       .call = k};
		cs = calls_new(c, ncalls, N, 4242);
		for (size_t i = 0; read < ncalls; i++) {
			/* The root starts calls until one waits (or none are left). */
			while (started < ncalls) {
				calls_start(cs, started++, 0);
				simnet_run(cs->sim);
				if (cs->done[started - 1][0].calls == 0)
					break;
			}
			for (int k = 0; k < started; k++)
				assert_int_equal(cs->done[k][0].calls, k < read + ahead);
			assert_true(started == ncalls || started == read + ahead + 1);
			/* The readers finish the next run of calls. */
			for (int end = read + runs[i % (sizeof(runs) / sizeof(runs[0]))];
			     read < end && read < ncalls; read++)
				for (int r = 1; r < N; r++)
					calls_start(cs, read, r);
			simnet_run(cs->sim);
			for (int k = 0; k < started; k++)
				assert_int_equal(cs->done[k][0].calls, k < read + ahead);
		}
		calls_finish(cs);
	}
	g_region = REGION;
}

/* Sequences of SEQ_CALLS mixed calls on 2 to 5 ranks, three each, in which shape() turns
 * some calls into the slot calls under test. */
static void mixed_sequences(uint64_t *seed, size_t per,
			    void (*shape)(cfg_t *c, int k, int rep, size_t per))
{
	for (int n = 2; n <= 5; n++)
		for (int rep = 0; rep < 3; rep++) {
			cfg_t cfgs[SEQ_CALLS];

			for (int k = 0; k < SEQ_CALLS; k++) {
				cfgs[k] =
				    mixed_call(*seed, k, n, 3, 1 + (*seed + (uint64_t)k) % 9, 4);
				shape(&cfgs[k], k, rep, per);
			}
			run_sequence(cfgs, SEQ_CALLS, n, (*seed)++);
		}
}

/* every third call a broadcast of one to depth+3 slots, the next an allgather of blocks of
 * several slots, in place and not; at 2 ranks the third an alltoall of blocks of one to
 * depth+2 slots (out of place: in place it keeps to one slot) */
static void shape_parts(cfg_t *c, int k, int rep, size_t per)
{
	if (k % 3 == 2 && c->n == 2) {
		c->coll = WT_COLL_ALLTOALL;
		c->algo = "slots";
		c->in_place = 0;
		c->count = per * (size_t)(1 + (k + rep) % (WT_SCHED_SLOT_DEPTH + 2)) + 3;
	} else if (k % 3 == 0) {
		c->coll = WT_COLL_BROADCAST;
		c->algo = "slots";
		c->count = per * (size_t)(1 + (k + rep) % (WT_SCHED_SLOT_DEPTH + 3)) +
			   (size_t)(rep % 2) * 5;
	} else if (k % 3 == 1) {
		c->coll = WT_COLL_ALLGATHER;
		c->algo = "slots";
		c->count = per * (size_t)(2 + (k + rep) % WT_SCHED_SLOT_DEPTH) + 3;
	}
}

/* every third call a two-shot allreduce of one to four slots */
static void shape_twoshot(cfg_t *c, int k, int rep, size_t per)
{
	if (k % 3 == 0) {
		c->coll = WT_COLL_ALLREDUCE;
		c->algo = "slots_twoshot";
		c->count = per * (size_t)(1 + (k + rep) % 4) + (size_t)(rep % 2) * 5;
	}
}

/* A broadcast or an allgather larger than a slot goes in parts, one slot call each: in
 * sequences with other slot calls and message calls (numbering skips the parts), every
 * root, in place and not, part counts past the ring's depth and a last part that is short; and a
 * root started alone publishes the ring's depth of parts, then waits for its readers before it
 * reuses a slot. */
static void test_broadcast_parts(void **state)
{
	size_t per = wt_sched_slot_capacity(REGION) / 4; /* int32 elements in a slot */
	uint64_t seed = 60000;

	(void)state;
	mixed_sequences(&seed, per, shape_parts);
	{
		enum { N = 3, PARTS = WT_SCHED_SLOT_DEPTH + 2 };
		const cfg_t c = {.coll = WT_COLL_BROADCAST,
				 .n = N,
				 .count = per * PARTS - 1,
				 .dt = WEFT_INT32,
				 .op = WEFT_SUM,
				 .root = 1,
				 .seed = 4343,
				 .algo = "slots"};
		calls_t *cs = calls_new(&c, 1, N, 4343);

		for (int r = 0; r < N; r++)
			assert_int_equal(wt_sched_plan_view(cs->plan[0][r])->slot_parts, PARTS);
		calls_start(cs, 0, 1);
		simnet_run(cs->sim);
		assert_int_equal(cs->done[0][1].calls,
				 0); /* parts past the depth wait for readers */
		for (int r = 0; r < N; r += 2)
			calls_start(cs, 0, r);
		calls_finish(cs);
	}
}

/* Bytes rank r of n reads out of the peers' slots in a two-shot allreduce of count
 * elements of es bytes in pieces of `per` elements: per piece, its share from every peer
 * (the reduce-scatter) and every peer's share (the allgather), the shares split as evenly
 * as they go with the first ones an element longer. */
static size_t twoshot_reads(size_t count, size_t per, size_t es, int n, int r)
{
	size_t total = 0;

	for (size_t off = 0; off < count; off += per) {
		size_t cnt = count - off < per ? count - off : per;
		size_t mine = cnt / (size_t)n + ((size_t)r < cnt % (size_t)n ? 1 : 0);

		total += ((size_t)(n - 1) * mine + (cnt - mine)) * es;
	}
	return total;
}

/* The two-shot allreduce (slots_twoshot): rank counts 1..9, 13 and 33, counts 0, 1, 7, 37
 * (empty shares on some ranks), in place or not; every dtype and op at 2, 3, 4, 8; vectors
 * of several slots (two slot calls a piece, past the ring's depth, a short last piece),
 * alone and in sequences among other slot and message calls; per rank it reads the peers'
 * slots for about twice the vector where the one-shot reads it n - 1 times; the cost model
 * takes it for 1 MiB at 4 ranks on 2 cores, not for 64 KiB (one round of flags is cheaper
 * there) nor for 16 MiB, nor when WEFT_ALGO forbids it. */
static void test_allreduce_twoshot(void **state)
{
	static const size_t counts[] = {0, 1, 7, 37};
	static const int ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 33};
	size_t per = wt_sched_slot_capacity(REGION) / 4; /* int32 elements in a slot */
	uint64_t seed = 70000;

	(void)state;
	g_region = REGION;
	for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
		for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++)
			for (int ip = 0; ip < 2; ip++) {
				cfg_t c = {.coll = WT_COLL_ALLREDUCE,
					   .n = ns[ni],
					   .count = counts[k],
					   .dt = WEFT_INT32,
					   .op = WEFT_SUM,
					   .in_place = ip,
					   .seed = seed++,
					   .algo = "slots_twoshot"};

				run_one(&c);
			}
	for (size_t di = 0; di < sizeof(dtypes) / sizeof(dtypes[0]); di++)
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
			for (int n = 2; n <= 8; n = n == 4 ? 8 : n + 1) {
				cfg_t c = {.coll = WT_COLL_ALLREDUCE,
					   .n = n,
					   .count = 19,
					   .dt = dtypes[di],
					   .op = ops[oi],
					   .in_place = (int)(seed & 1),
					   .seed = seed++,
					   .algo = "slots_twoshot"};

				run_one(&c);
			}
	/* several pieces: 1 to the ring's depth + 2 of them, the last short or whole */
	for (int n = 2; n <= 5; n++)
		for (size_t pieces = 1; pieces <= WT_SCHED_SLOT_DEPTH + 2; pieces++) {
			cfg_t c = {.coll = WT_COLL_ALLREDUCE,
				   .n = n,
				   .count = per * pieces - (pieces % 2) * 3,
				   .dt = pieces % 3 ? WEFT_INT32 : WEFT_FLOAT32,
				   .op = ops[pieces % 5],
				   .in_place = (int)(pieces & 1),
				   .seed = seed++,
				   .algo = "slots_twoshot"};
			wt_sched_plan_t *p;
			wt_sched_args_t a;
			size_t reads = 0;

			run_one(&c);
			for (int r = 0; r < n; r++) {
				a = args_of(&c, r);
				st_build(&a, algo_of(&c), "twoshot reads", &p);
				assert_int_equal(wt_sched_plan_view(p)->slot_parts, 2 * pieces);
				reads = 0;
				for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
					const wt_sched_step_t *st = wt_sched_plan_step(p, i);

					if (st->type == WT_SCHED_SLOT_COPY ||
					    st->type == WT_SCHED_SLOT_REDUCE)
						reads += st->len;
				}
				assert_int_equal(reads, twoshot_reads(c.count, per, 4, n, r));
				assert_true(reads <= 2 * c.count * 4);
				wt_sched_plan_unref(p);
			}
		}
	/* two slot calls a piece: half as many pieces as a plan may have slot calls, no more */
	{
		wt_sched_args_t a = st_args(WT_COLL_ALLREDUCE, per * (WT_SCHED_SLOT_MAX_PARTS / 2),
					    WEFT_INT32, WEFT_SUM, 0, 3, 1, 0);
		wt_sched_plan_t *p = NULL;
		char err[256] = "";

		a.slot_bytes = per * 4;
		st_build(&a, wt_sched_algo_select(&a, "slots_twoshot"), "twoshot limit", &p);
		assert_int_equal(wt_sched_plan_view(p)->slot_parts, WT_SCHED_SLOT_MAX_PARTS);
		wt_sched_plan_unref(p);
		p = NULL;
		a.count++;
		assert_int_equal(wt_sched_plan_build(&a, wt_sched_algo_select(&a, "slots_twoshot"),
						     &p, err, sizeof(err)),
				 WEFT_ERR_UNSUPPORTED);
		assert_non_null(strstr(err, "take more than"));
	}
	/* in sequences with the other slot algorithms and message calls */
	mixed_sequences(&seed, per, shape_twoshot);
	{
		const wt_sched_cost_t over = {9.75e-6, 1 / 6e9, 1 / 8e9, 0.3};
		size_t big = wt_sched_slot_capacity(BIG_REGION);
		static const struct {
			size_t count;
			const char *spec;
			int want;
		} cases[] = {{1 << 18, NULL, 1},
			     {1 << 14, NULL, 0},
			     {1 << 22, NULL, 0},
			     {1 << 18, "allreduce:!slots_twoshot", 0}};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			wt_sched_args_t a = st_args(WT_COLL_ALLREDUCE, cases[i].count, WEFT_FLOAT32,
						    WEFT_SUM, 0, 4, 0, 0);
			const wt_sched_algo_t *algo = NULL;
			char err[200];

			a.slot_bytes = big;
			assert_int_equal(
			    wt_sched_algo_choose(&a, cases[i].spec, &over, &algo, err, sizeof(err)),
			    WEFT_OK);
			assert_int_equal(strcmp(algo->name, "slots_twoshot") == 0, cases[i].want);
		}
	}
}

/* A rank releases a slot call only once it saw every peer's flag of it: rank 0 enters a
 * barrier first, so its peer's flag is not up yet; the peer then runs the barrier and
 * WT_SCHED_SLOT_DEPTH broadcasts as root without anyone stepping between them. The last
 * broadcast reuses the barrier's slot and must wait until rank 0 has seen the barrier's
 * flag there (a release before the wait let it overwrite the flag, and rank 0 then read
 * the broadcast as its barrier: MISMATCH). */
static void test_release_after_waits(void **state)
{
	enum { N = 2, CALLS = WT_SCHED_SLOT_DEPTH + 1 };
	cfg_t c[CALLS];
	calls_t *cs;

	(void)state;
	for (int k = 0; k < CALLS; k++)
		c[k] = (cfg_t){.coll = k ? WT_COLL_BROADCAST : WT_COLL_BARRIER,
			       .n = N,
			       .count = 3,
			       .dt = WEFT_INT32,
			       .op = WEFT_SUM,
			       .root = 1,
			       .seed = 4444,
			       .call = k};
	cs = calls_new(c, CALLS, N, 4444);
	calls_start(cs, 0, 0);
	for (int k = 0; k < CALLS; k++)
		calls_start(cs, k, 1);
	simnet_run(cs->sim);
	for (int k = 1; k < CALLS; k++)
		calls_start(cs, k, 0);
	calls_finish(cs);
}

/* ---- failures ---- */

/* Ranks whose calls differ (counts, dtypes, ops) fail at their first wait with a message
 * naming both calls, instead of reading each other's slots as data: no byte of the peer's
 * lands in RECV (at most our own input, copied there before the wait). */
static void test_calls_differ(void **state)
{
	static const struct {
		size_t count[2];
		weft_dtype_t dt[2];
		weft_op_t op[2];
		const char *want0;
	} cases[] = {
	    {{5, 7},
	     {WEFT_INT32, WEFT_INT32},
	     {WEFT_SUM, WEFT_SUM},
	     "rank 1 called allreduce of 7 int32 (op sum, root 0) as slot call 6, this rank "
	     "allreduce of 5 int32 (op sum, root 0)"},
	    {{6, 6},
	     {WEFT_INT32, WEFT_FLOAT32},
	     {WEFT_SUM, WEFT_SUM},
	     "rank 1 called allreduce of 6 float32 (op sum, root 0) as slot call 6, this rank "
	     "allreduce of 6 int32"},
	    {{6, 6},
	     {WEFT_INT32, WEFT_INT32},
	     {WEFT_SUM, WEFT_MAX},
	     "rank 1 called allreduce of 6 int32 (op max, root 0) as slot call 6"},
	};

	(void)state;
	for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++)
		for (int big = 0; big < 2; big++) {
			st_execs_t x = {.n = 2, .sim = simnet_new(2, 90 + k)};
			uint8_t s[2][64], rv[2][64];
			uint64_t rng = 3;

			simnet_enable_slots(x.sim, big ? BIG_REGION : REGION, 5);
			for (int r = 0; r < 2; r++) {
				cfg_t c = {.coll = WT_COLL_ALLREDUCE,
					   .n = 2,
					   .count = cases[k].count[r],
					   .dt = cases[k].dt[r],
					   .op = cases[k].op[r]};
				wt_sched_args_t a = args_of(&c, r);

				a.slot_bytes = wt_sched_slot_capacity(big ? BIG_REGION : REGION);
				st_build(&a, algo_of(&c), "differ", &x.plan[r]);
				memset(s[r], r + 1, sizeof(s[r]));
				memset(rv[r], 0x5a, sizeof(rv[r]));
			}
			st_start(&x, 0, TAG(0), s[0], rv[0]);
			st_start(&x, 1, TAG(0), s[1], rv[1]);
			st_run_checked(&x, &rng, 3, 0);
			for (int r = 0; r < 2; r++) {
				assert_int_equal(x.done[r].calls, 1);
				assert_int_equal(x.done[r].st, WEFT_ERR_MISMATCH);
				for (size_t i = 0; i < sizeof(rv[r]); i++)
					assert_true(rv[r][i] == 0x5a || rv[r][i] == r + 1);
				assert_int_equal(simnet_live_ops(x.sim, r), 0);
			}
			if (strstr(x.done[0].msg, cases[k].want0) == NULL)
				fail_msg("case %zu: '%s' lacks '%s'", k, x.done[0].msg,
					 cases[k].want0);
			for (int r = 0; r < 2; r++)
				st_release(&x, r, 1);
			simnet_free(x.sim);
		}
}

/* A peer failing while a rank waits for its slot fails that rank's execution with the
 * error, names the wait and leaves nothing posted; the others are cancelled cleanly. */
static void test_wait_failure(void **state)
{
	(void)state;
	for (int n = 2; n <= 5; n++)
		for (int victim = 0; victim < n; victim++) {
			cfg_t c = {.coll = WT_COLL_ALLREDUCE,
				   .n = n,
				   .count = 3,
				   .dt = WEFT_INT32,
				   .op = WEFT_SUM,
				   .seed = (uint64_t)(n * 10 + victim)};
			st_execs_t x = {.n = n, .sim = simnet_new(n, c.seed)};
			const wt_sched_algo_t *algo = algo_of(&c);
			rbuf_t b[ST_MAX_RANKS];
			char name[256];

			cfg_name(&c, name, sizeof(name));
			simnet_enable_slots(x.sim, REGION, 5);
			simnet_fail_wait(x.sim, victim, 0, WEFT_ERR_PEER_FAILED);
			for (int r = 0; r < n; r++) {
				wt_sched_args_t a = args_of(&c, r);

				setup(&c, r, &b[r]);
				st_build(&a, algo, name, &x.plan[r]);
			}
			/* the victim starts first, so it must wait for everyone */
			st_start(&x, victim, TAG(0), b[victim].send, b[victim].recv);
			for (int r = 0; r < n; r++)
				if (r != victim)
					st_start(&x, r, TAG(0), b[r].send, b[r].recv);
			simnet_run(x.sim);
			assert_int_equal(x.done[victim].calls, 1);
			assert_int_equal(x.done[victim].st, WEFT_ERR_PEER_FAILED);
			assert_non_null(strstr(x.done[victim].msg, "SLOT_WAIT for peer"));
			assert_non_null(strstr(x.done[victim].msg, "simulated peer failure"));
			for (int r = 0; r < n; r++) {
				/* the others had everything they needed: the victim published */
				if (r != victim)
					st_check_done(&x, r, name);
				assert_int_equal(simnet_live_ops(x.sim, r), 0);
				st_release(&x, r, 0);
				free_rbuf(&b[r]);
			}
			/* The failed call released its slots: the next call is not held up by it
			 * (the victim's turn) and computes the right thing everywhere. */
			memset(x.done, 0, sizeof(x.done));
			c.call = 1;
			for (int r = 0; r < n; r++)
				setup(&c, r, &b[r]);
			for (int r = 0; r < n; r++)
				st_start(&x, r, TAG(1), b[r].send, b[r].recv);
			simnet_run(x.sim);
			for (int r = 0; r < n; r++) {
				st_check_done(&x, r, name);
				check_rank(&c, r, &b[r], name);
				st_release(&x, r, 1);
				free_rbuf(&b[r]);
			}
			simnet_free(x.sim);
		}
}

/* A rank whose peers never arrive owes nothing but the waits; owing names exactly the
 * peers it waits for, and cancelling withdraws every wait. */
static void test_owing_and_cancel(void **state)
{
	(void)state;
	for (int n = 2; n <= 6; n++) {
		cfg_t c = {.coll = WT_COLL_ALLGATHER, .n = n, .count = 4, .dt = WEFT_UINT8};
		st_execs_t x = {.n = n, .sim = simnet_new(n, 3)};
		rbuf_t b[ST_MAX_RANKS];
		int peers[ST_MAX_RANKS];
		size_t k;
		char name[256];

		cfg_name(&c, name, sizeof(name));
		simnet_enable_slots(x.sim, REGION, 9);
		for (int r = 0; r < n; r++) {
			wt_sched_args_t a = args_of(&c, r);

			setup(&c, r, &b[r]);
			st_build(&a, algo_of(&c), name, &x.plan[r]);
		}
		/* only rank 0 and rank 1 start: rank 0 waits for 2..n-1 */
		st_start(&x, 0, TAG(0), b[0].send, b[0].recv);
		st_start(&x, 1, TAG(0), b[1].send, b[1].recv);
		simnet_run(x.sim);
		k = wt_sched_exec_owing(x.ex[0], peers, ST_MAX_RANKS);
		assert_int_equal(k, (size_t)(n - 2));
		st_check_owing(x.sim, x.ex[0], 0, n);
		assert_int_equal(x.done[0].calls, n == 2 ? 1 : 0);
		wt_sched_exec_cancel(x.ex[0], WEFT_ERR_TIMEOUT, "timed out in the test");
		wt_sched_exec_cancel(x.ex[1], WEFT_ERR_TIMEOUT, "timed out in the test");
		assert_int_equal(simnet_live_ops(x.sim, 0), 0);
		assert_int_equal(simnet_live_ops(x.sim, 1), 0);
		if (n > 2) {
			assert_int_equal(x.done[0].st, WEFT_ERR_TIMEOUT);
			assert_string_equal(x.done[0].msg, "timed out in the test");
		}
		for (int r = 0; r < n; r++) {
			if (x.ex[r])
				st_release(&x, r, 0);
			wt_sched_plan_unref(x.plan[r]);
			free_rbuf(&b[r]);
		}
		simnet_free(x.sim);
	}
}

/* A slot plan on a network without slots, or with regions too small, does not start. */
static void test_start_refused(void **state)
{
	cfg_t c = {.coll = WT_COLL_ALLREDUCE, .n = 2, .count = 4, .dt = WEFT_INT32};
	wt_sched_args_t a = args_of(&c, 0);
	wt_sched_plan_t *p;
	wt_sched_exec_t *ex = NULL;
	simnet_t *sim = simnet_new(2, 1);
	st_done_t d = {0};
	int32_t buf[8] = {0};

	(void)state;
	st_build(&a, algo_of(&c), "refused", &p);
	assert_true(wt_sched_plan_uses_slots(p));
	assert_int_equal(wt_sched_plan_slot_extent(p), 16);
	assert_int_equal(
	    wt_sched_exec_start(p, simnet_net(sim, 0), TAG(0), buf, buf + 4, st_on_done, &d, &ex),
	    WEFT_ERR_UNSUPPORTED);
	simnet_free(sim);
	sim = simnet_new(2, 1);
	simnet_enable_slots(sim, 64 * 5, 0); /* slots of 56 bytes */
	a.count = 15;			     /* 60 bytes */
	wt_sched_plan_unref(p);
	st_build(&a, algo_of(&c), "refused", &p);
	assert_int_equal(
	    wt_sched_exec_start(p, simnet_net(sim, 0), TAG(0), buf, buf, st_on_done, &d, &ex),
	    WEFT_ERR_UNSUPPORTED);
	assert_int_equal(d.calls, 0);
	wt_sched_plan_unref(p);
	simnet_free(sim);
}

/* ---- plan checks ---- */

static wt_sched_plan_t *raw_plan(int rank, int size, size_t slot_bytes)
{
	wt_sched_args_t a = st_args(WT_COLL_ALLREDUCE, 4, WEFT_INT32, WEFT_SUM, rank, size, 0, 0);

	a.slot_bytes = slot_bytes;
	return wt_sched_plan_new(&a);
}

static void expect_rejected(wt_sched_plan_t *p, const char *why)
{
	assert_int_not_equal(wt_sched_plan_finalize(p), WEFT_OK);
	if (!strstr(wt_sched_plan_error(p), why))
		fail_msg("plan error '%s' does not mention '%s'", wt_sched_plan_error(p), why);
	wt_sched_plan_unref(p);
}

static void test_plan_checks(void **state)
{
	wt_sched_plan_t *p;
	int put, w, rd, dep;

	(void)state;
	/* a good one, for contrast */
	p = raw_plan(0, 2, 256);
	put = wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 0, 16, 0, NULL);
	w = wt_sched_slot_wait(p, 1, 0, NULL);
	dep = put;
	rd = wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, 16, 1, &dep);
	wt_sched_slot_reduce(p, WT_SCHED_BUF_RECV, 0, 1, 0, 16, 2, (int[]){w, rd});
	wt_sched_slot_done(p);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
	assert_int_equal(wt_sched_plan_slot_extent(p), 16);
	wt_sched_plan_unref(p);

	/* no slots at all */
	p = raw_plan(0, 2, 0);
	wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 0, 16, 0, NULL);
	wt_sched_slot_done(p);
	expect_rejected(p, "no shared slots");

	/* reading a peer's slot without waiting for it */
	p = raw_plan(0, 2, 256);
	wt_sched_slot_copy(p, WT_SCHED_BUF_RECV, 0, 1, 0, 16, 0, NULL);
	wt_sched_slot_done(p);
	expect_rejected(p, "does not wait for its SLOT_WAIT");

	/* reading our own slot */
	p = raw_plan(1, 2, 256);
	put = wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 0, 16, 0, NULL);
	wt_sched_slot_copy(p, WT_SCHED_BUF_RECV, 0, 1, 0, 16, 1, &put);
	wt_sched_slot_done(p);
	expect_rejected(p, "reads our own slot");

	/* two PUTs */
	p = raw_plan(0, 2, 256);
	wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 0, 8, 0, NULL);
	wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 8, 8, 8, 0, NULL);
	wt_sched_slot_done(p);
	expect_rejected(p, "at most one SLOT_PUT");

	/* no release */
	p = raw_plan(0, 2, 256);
	wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 0, 8, 0, NULL);
	expect_rejected(p, "exactly one SLOT_DONE");

	/* a read after the release */
	p = raw_plan(0, 2, 256);
	w = wt_sched_slot_wait(p, 1, 0, NULL);
	wt_sched_slot_done(p);
	wt_sched_slot_copy(p, WT_SCHED_BUF_RECV, 0, 1, 0, 16, 1, &w);
	expect_rejected(p, "after the SLOT_DONE");

	/* the PUT waits for our turn and every peer's SLOT_FREE, which the builder adds; the
	 * release waits for the PUT and the turn */
	p = raw_plan(2, 4, 256);
	put = wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 0, 16, 0, NULL);
	w = wt_sched_slot_done(p);
	assert_int_equal(put, 4);
	for (int i = 0; i < 4; i++) {
		assert_int_equal(wt_sched_plan_step(p, (size_t)i)->type, WT_SCHED_SLOT_FREE);
		assert_int_equal(wt_sched_plan_step(p, (size_t)i)->peer, (2 + i) % 4);
	}
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
	assert_int_equal(wt_sched_plan_step(p, 4)->ndeps, 4);
	assert_int_equal(wt_sched_plan_step(p, (size_t)w)->ndeps, 2);
	wt_sched_plan_unref(p);

	/* out of the slot */
	p = raw_plan(0, 2, 64);
	wt_sched_slot_put(p, WT_SCHED_BUF_SEND, 0, 56, 16, 0, NULL);
	wt_sched_slot_done(p);
	expect_rejected(p, "SLOT[56+16] exceeds 64");

	/* waiting for ourselves */
	p = raw_plan(0, 2, 64);
	wt_sched_slot_wait(p, 0, 0, NULL);
	wt_sched_slot_done(p);
	expect_rejected(p, "waits on a bad peer");

	/* a plain step naming the SLOT buffer */
	p = raw_plan(0, 2, 64);
	wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SLOT, 0, 16, 0, NULL);
	expect_rejected(p, "only slot steps may");

	/* a reduction of part of an element */
	p = raw_plan(0, 2, 64);
	w = wt_sched_slot_wait(p, 1, 0, NULL);
	wt_sched_slot_reduce(p, WT_SCHED_BUF_RECV, 0, 1, 0, 6, 1, &w);
	wt_sched_slot_done(p);
	expect_rejected(p, "not whole elements");
}

/* What weft-sched prints for a slot plan. */
static void test_dump(void **state)
{
	cfg_t c = {.coll = WT_COLL_ALLREDUCE, .n = 2, .count = 2, .dt = WEFT_FLOAT32};
	wt_sched_args_t a = args_of(&c, 1);
	wt_sched_plan_t *p;
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	(void)state;
	assert_non_null(f);
	st_build(&a, algo_of(&c), "dump", &p);
	wt_sched_plan_dump(p, f);
	fclose(f);
	assert_non_null(strstr(text, "plan slots allreduce count 2"));
	assert_non_null(strstr(text, "SLOT_FREE   peer 0"));
	assert_non_null(strstr(text, "SLOT_PUT    SLOT[0+8] <- SEND[0]"));
	assert_non_null(strstr(text, "SLOT_WAIT   peer 0"));
	assert_non_null(strstr(text, "SLOT_COPY   RECV[0+8] <- SLOT of 0[0]"));
	assert_non_null(strstr(text, "REDUCE      RECV[0+8] <- SEND[0]"));
	assert_non_null(strstr(text, "SLOT_DONE"));
	free(text);
	wt_sched_plan_unref(p);
}

/* ---- selection ---- */

static const char *chosen(wt_sched_coll_t coll, size_t count, int n, size_t slot_bytes,
			  const char *spec)
{
	const wt_sched_cost_t shm = {1.5e-6, 1 / 6e9, 1 / 8e9};
	wt_sched_args_t a = st_args(coll, count, WEFT_FLOAT32, WEFT_SUM, 0, n, 0, 0);
	const wt_sched_algo_t *algo = NULL;
	char err[200];

	a.slot_bytes = slot_bytes;
	if (wt_sched_algo_choose(&a, spec, &shm, &algo, err, sizeof(err)) != WEFT_OK)
		return "(error)";
	return algo->name;
}

/* ---- watching slot flags inline (net.spin_ns), with real threads ---- */

typedef struct {
	void *regions[2];
	size_t region_bytes; /* 0: REGION */
	uint64_t seq;
	_Atomic int posted; /* post_wait calls */
	/* the one wait posted (case B): completed by hand */
	const _Atomic uint64_t *word;
	uint64_t value;
	wt_sched_net_done_fn_t cb;
	void *cb_arg;
	_Atomic int done[2];
	weft_status_t st[2];
} spin_net_t;

typedef struct {
	spin_net_t *sn;
	int rank;
} spin_ctx_t;

static weft_status_t sp_send(void *ctx, int peer, uint64_t tag, const void *buf, size_t len,
			     wt_sched_net_done_fn_t cb, void *arg, void **handle)
{
	(void)ctx, (void)peer, (void)tag, (void)buf, (void)len, (void)cb, (void)arg, (void)handle;
	return WEFT_ERR_UNSUPPORTED; /* a slot plan sends nothing */
}

static weft_status_t sp_recv(void *ctx, int peer, uint64_t tag, void *buf, size_t len,
			     unsigned reduce, weft_dtype_t dtype, weft_op_t op, const void *left,
			     wt_sched_net_done_fn_t cb, void *arg, void **handle)
{
	(void)ctx, (void)peer, (void)tag, (void)buf, (void)len, (void)reduce, (void)dtype;
	(void)op, (void)left, (void)cb, (void)arg, (void)handle;
	return WEFT_ERR_UNSUPPORTED;
}

static void sp_cancel(void *ctx, void *handle)
{
	(void)ctx, (void)handle;
}

static weft_status_t sp_slots(void *ctx, wt_sched_slots_t *out)
{
	spin_ctx_t *c = ctx;

	out->seq = c->sn->seq;
	out->region = c->sn->regions;
	out->region_bytes = c->sn->region_bytes ? c->sn->region_bytes : REGION;
	return WEFT_OK;
}

static weft_status_t sp_post_wait(void *ctx, int peer, const _Atomic uint64_t *word, uint64_t value,
				  wt_sched_net_done_fn_t cb, void *arg, void **handle)
{
	spin_ctx_t *c = ctx;

	(void)peer;
	c->sn->word = word;
	c->sn->value = value;
	c->sn->cb = cb;
	c->sn->cb_arg = arg;
	*handle = c;
	atomic_fetch_add(&c->sn->posted, 1);
	return WEFT_OK;
}

static void sp_wake(void *ctx)
{
	(void)ctx;
}

static void sp_done(void *arg, weft_status_t st, const char *msg)
{
	spin_ctx_t *c = arg;

	(void)msg;
	c->sn->st[c->rank] = st;
	atomic_store(&c->sn->done[c->rank], 1);
}

typedef struct {
	spin_net_t *sn;
	spin_ctx_t ctx;
	wt_sched_plan_t *plan;
	wt_sched_exec_t *ex;
	int32_t send[3], recv[3];
	uint32_t spin_ns;
} spin_rank_t;

static void spin_setup_coll(spin_net_t *sn, spin_rank_t *rk, int r, uint32_t spin_ns,
			    wt_sched_coll_t coll)
{
	cfg_t c = {.coll = coll, .n = 2, .count = 3, .dt = WEFT_INT32, .op = WEFT_SUM};
	wt_sched_args_t a = args_of(&c, r);

	rk->sn = sn;
	rk->ctx = (spin_ctx_t){.sn = sn, .rank = r};
	rk->spin_ns = spin_ns;
	for (int i = 0; i < 3; i++)
		rk->send[i] = (r + 1) * 100 + i;
	memset(rk->recv, 0, sizeof(rk->recv));
	st_build(&a, algo_of(&c), "inline spin", &rk->plan);
}

static void spin_setup(spin_net_t *sn, spin_rank_t *rk, int r, uint32_t spin_ns)
{
	spin_setup_coll(sn, rk, r, spin_ns, WT_COLL_ALLREDUCE);
}

/* Both ranks' slot regions, fresh. */
static void spin_regions(spin_net_t *sn)
{
	size_t bytes = sn->region_bytes ? sn->region_bytes : REGION;

	for (int r = 0; r < 2; r++) {
		sn->regions[r] = st_alloc(bytes);
		wt_sched_slot_reset(sn->regions[r], bytes, 1, 0);
	}
}

/* The test network of a rank. */
static wt_sched_net_t spin_net_of(spin_rank_t *rk)
{
	return (wt_sched_net_t){.ctx = &rk->ctx,
				.post_send = sp_send,
				.post_recv = sp_recv,
				.cancel = sp_cancel,
				.slots = sp_slots,
				.post_wait = sp_post_wait,
				.slot_wake = sp_wake,
				.spin_ns = rk->spin_ns};
}

/* keep: NULL for a plain execution, else a kept one (wt_sched_exec_start_kept). */
static void spin_start_in(spin_rank_t *rk, wt_sched_exec_keep_t *keep)
{
	wt_sched_net_t net = spin_net_of(rk);

	if (keep != NULL)
		assert_int_equal(wt_sched_exec_start_kept(keep, rk->plan, &net, TAG(0), rk->send,
							  rk->recv, sp_done, &rk->ctx, &rk->ex),
				 WEFT_OK);
	else
		assert_int_equal(wt_sched_exec_start(rk->plan, &net, TAG(0), rk->send, rk->recv,
						     sp_done, &rk->ctx, &rk->ex),
				 WEFT_OK);
}

static void spin_start(spin_rank_t *rk)
{
	spin_start_in(rk, NULL);
}

static void *spin_thread(void *arg)
{
	spin_start(arg);
	return NULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void spin_check_free(spin_rank_t *rk)
{
	for (int i = 0; i < 3; i++)
		assert_int_equal(rk->recv[i], 100 + i + 200 + i);
	wt_sched_exec_free(rk->ex);
	wt_sched_plan_unref(rk->plan);
}

/* A blocking caller's execution watches the peer's flag itself: rank 0 starts first (on a
 * thread) and spins inside its start until rank 1, started 50 ms later, publishes; it
 * finishes there without posting a wait. Then the budget: rank 0 alone with 30 ms to spin
 * gives up after 30 ms and posts the wait, which completes once rank 1 comes. */
static void test_inline_spin(void **state)
{
	spin_net_t sn = {.seq = 2};
	spin_rank_t rk[2];
	pthread_t t;
	uint64_t t0;

	(void)state;
	spin_regions(&sn);
	/* A: met while spinning */
	spin_setup(&sn, &rk[0], 0, 4000000000u);
	spin_setup(&sn, &rk[1], 1, 0);
	assert_int_equal(pthread_create(&t, NULL, spin_thread, &rk[0]), 0);
	struct timespec nap = {0, 50000000};
	nanosleep(&nap, NULL);
	assert_int_equal(atomic_load(&sn.done[0]), 0);
	spin_start(&rk[1]);
	assert_int_equal(pthread_join(t, NULL), 0);
	assert_int_equal(atomic_load(&sn.done[0]), 1);
	assert_int_equal(atomic_load(&sn.done[1]), 1);
	assert_int_equal(sn.st[0], WEFT_OK);
	assert_int_equal(sn.st[1], WEFT_OK);
	assert_int_equal(atomic_load(&sn.posted), 0);
	for (int r = 0; r < 2; r++)
		spin_check_free(&rk[r]);

	/* B: the budget runs out, the wait is posted */
	memset(sn.done, 0, sizeof(sn.done));
	sn.seq = 3;
	spin_setup(&sn, &rk[0], 0, 30000000u);
	spin_setup(&sn, &rk[1], 1, 0);
	t0 = mono_ns();
	spin_start(&rk[0]);
	assert_true(mono_ns() - t0 >= 30000000u);
	assert_true(mono_ns() - t0 < 3000000000u);
	assert_int_equal(atomic_load(&sn.posted), 1);
	assert_int_equal(atomic_load(&sn.done[0]), 0);
	spin_start(&rk[1]);
	assert_int_equal(atomic_load(&sn.done[1]), 1);
	assert_true(atomic_load(sn.word) >= sn.value);
	sn.cb(sn.cb_arg, WEFT_OK, NULL);
	assert_int_equal(atomic_load(&sn.done[0]), 1);
	assert_int_equal(sn.st[0], WEFT_OK);
	for (int r = 0; r < 2; r++) {
		spin_check_free(&rk[r]);
		free(sn.regions[r]);
	}
}

/* Kept executions (a blocking caller's): calls in a row reuse one block per rank, also
 * across plans of another shape (a barrier's five steps between allreduces' seven). Rank 0
 * starts first without a spin budget, so its in-order run hands the unmet wait to the queue
 * and posts it; rank 1 then runs straight through, and the posted wait completes rank 0. */
/* Kept executions of plans whose blocks differ in size (message plans with scratch of
 * their count): a block too small for the next plan makes way for a larger one, which the
 * keep then holds; a smaller plan reuses it. Results exact throughout. */
static void test_kept_sizes(void **state)
{
	static const size_t counts[] = {1, 1000, 10, 5000, 3};
	enum { N = 2 };
	wt_sched_exec_keep_t keep[N] = {{0}, {0}};
	void *prev[N] = {NULL, NULL};
	size_t prev_bytes[N] = {0, 0};

	(void)state;
	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		cfg_t c = {.coll = WT_COLL_ALLREDUCE,
			   .n = N,
			   .count = counts[k],
			   .dt = WEFT_INT32,
			   .op = WEFT_SUM,
			   .seed = 70 + k,
			   .algo = "recursive_doubling",
			   .call = (int)k};
		simnet_t *sim = simnet_new(N, 70 + k);
		wt_sched_plan_t *plan[N];
		wt_sched_exec_t *ex[N];
		st_done_t done[N];
		rbuf_t b[N];
		char name[256];

		memset(done, 0, sizeof(done));
		cfg_name(&c, name, sizeof(name));
		for (int r = 0; r < N; r++) {
			wt_sched_args_t a = args_of(&c, r);

			setup(&c, r, &b[r]);
			st_build(&a, algo_of(&c), name, &plan[r]);
			assert_int_equal(wt_sched_exec_start_kept(
					     &keep[r], plan[r], simnet_net(sim, r), TAG(0),
					     b[r].send, b[r].recv, st_on_done, &done[r], &ex[r]),
					 WEFT_OK);
		}
		simnet_run(sim);
		for (int r = 0; r < N; r++) {
			assert_int_equal(done[r].calls, 1);
			assert_int_equal(done[r].st, WEFT_OK);
			check_rank(&c, r, &b[r], name);
			/* a plan larger than any before gets a new block (1000, 5000); the
			 * smaller ones after reuse the kept one */
			if (k == 2 || k == 4)
				assert_ptr_equal(ex[r], prev[r]);
			assert_null(keep[r].blk); /* in use until freed */
			wt_sched_exec_free(ex[r]);
			wt_sched_plan_unref(plan[r]);
			free_rbuf(&b[r]);
			assert_ptr_equal(keep[r].blk, ex[r]);
			assert_true(keep[r].bytes >= prev_bytes[r]);
			if (k == 1 || k == 3)
				assert_true(keep[r].bytes > prev_bytes[r]);
			prev[r] = keep[r].blk;
			prev_bytes[r] = keep[r].bytes;
		}
		simnet_free(sim);
	}
	for (int r = 0; r < N; r++)
		wt_sched_exec_keep_free(&keep[r]);
}

/* A blocking caller's run (wt_sched_exec_run_kept) of the same two plans, call after call:
 * the rank that comes second finds its peer's flags set and ends inside the start, with no
 * execution handed back and done not called; the first hands its unmet wait over to an
 * execution that the posted wait completes. The kept block is re-armed for the same plan
 * (also after a barrier's plan used it in between), and every result is exact. */
static void test_run_kept(void **state)
{
	static const wt_sched_coll_t seq[] = {WT_COLL_ALLREDUCE, WT_COLL_ALLREDUCE, WT_COLL_BARRIER,
					      WT_COLL_ALLREDUCE, WT_COLL_ALLREDUCE};
	spin_net_t sn = {.seq = 2};
	spin_rank_t rk[2], bar[2];
	wt_sched_exec_keep_t keep[2] = {{0}, {0}};
	void *blk[2] = {NULL, NULL};

	(void)state;
	spin_regions(&sn);
	for (int r = 0; r < 2; r++) {
		spin_setup_coll(&sn, &rk[r], r, 0, WT_COLL_ALLREDUCE);
		spin_setup_coll(&sn, &bar[r], r, 0, WT_COLL_BARRIER);
	}
	for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
		int first = (int)(k % 2), second = 1 - first;
		spin_rank_t *x = seq[k] == WT_COLL_BARRIER ? bar : rk;
		wt_sched_net_t net[2];

		memset(sn.done, 0, sizeof(sn.done));
		atomic_store(&sn.posted, 0);
		sn.seq = 2 + k;
		for (int r = 0; r < 2; r++) {
			for (int i = 0; i < 3; i++)
				rk[r].send[i] = (int32_t)((r + 1) * 100 + i + 10 * (int)k);
			memset(rk[r].recv, 0, sizeof(rk[r].recv));
			net[r] = spin_net_of(&x[r]);
		}
		assert_int_equal(wt_sched_exec_run_kept(&keep[first], x[first].plan, &net[first],
							TAG(0), x[first].send, x[first].recv,
							sp_done, &x[first].ctx, &x[first].ex),
				 WEFT_OK);
		assert_non_null(x[first].ex);
		assert_int_equal(atomic_load(&sn.posted), 1);
		assert_int_equal(wt_sched_exec_run_kept(&keep[second], x[second].plan, &net[second],
							TAG(0), x[second].send, x[second].recv,
							sp_done, &x[second].ctx, &x[second].ex),
				 WEFT_OK);
		/* ended inside the start: nothing handed back, done not called, the block
		 * back in the keep */
		assert_null(x[second].ex);
		assert_int_equal(atomic_load(&sn.done[second]), 0);
		assert_non_null(keep[second].blk);
		assert_int_equal(atomic_load(&sn.posted), 1);
		sn.cb(sn.cb_arg, WEFT_OK, NULL);
		assert_int_equal(atomic_load(&sn.done[first]), 1);
		assert_int_equal(sn.st[first], WEFT_OK);
		wt_sched_exec_free(x[first].ex);
		for (int r = 0; r < 2 && seq[k] == WT_COLL_ALLREDUCE; r++)
			for (int i = 0; i < 3; i++)
				assert_int_equal(rk[r].recv[i], 100 + i + 200 + i + 20 * (int)k);
		for (int r = 0; r < 2; r++) {
			/* one block per rank throughout, whichever plan used it last */
			if (k > 0)
				assert_ptr_equal(keep[r].blk, blk[r]);
			blk[r] = keep[r].blk;
		}
	}
	for (int r = 0; r < 2; r++) {
		wt_sched_exec_keep_free(&keep[r]);
		assert_null(keep[r].blk);
		wt_sched_plan_unref(rk[r].plan);
		wt_sched_plan_unref(bar[r].plan);
		free(sn.regions[r]);
	}
}

/* wt_sched_exec_quick's wake-up: counted. */
static void quick_wake_count(void *arg)
{
	(*(int *)arg)++;
}

/* Quick runs (wt_sched_exec_quick) of a 2-rank broadcast after a first run that left its
 * block kept: each call's data arrives exactly, the sequence advances by one a call and
 * the wake-up runs once; a reader whose root has not published, and a root a ring ahead
 * of its reader, get 0 with nothing numbered or stored, and the calls go on where they
 * were; an allreduce plan, a keep of another plan and an empty keep never qualify. */
static void quick_run(size_t region_bytes)
{
	spin_net_t sn = {.seq = 2, .region_bytes = region_bytes};
	spin_rank_t rk[2], ar;
	wt_sched_exec_keep_t keep[2] = {{0}, {0}}, none = {0};
	uint64_t seqs[2][WT_SCHED_RINGS];
	int32_t buf[2][3];
	/* 2 ranks: the large ring in small regions, the small one in the API's */
	int ring =
	    wt_sched_slot_small_capacity(region_bytes) ? WT_SCHED_RING_SMALL : WT_SCHED_RING_LARGE;
	int wakes[2] = {0, 0}, depth = ring == WT_SCHED_RING_SMALL ? (int)WT_SCHED_SLOT_SMALL_DEPTH
								   : WT_SCHED_SLOT_DEPTH;
	int32_t next = 0; /* the next call's data: next, next + 1, next + 2 */

	spin_regions(&sn);
	for (int r = 0; r < 2; r++)
		spin_setup_coll(&sn, &rk[r], r, 0, WT_COLL_BROADCAST);
	spin_setup_coll(&sn, &ar, 0, 0, WT_COLL_ALLREDUCE);
	assert_true(wt_sched_exec_quick_plan(rk[0].plan));
	assert_true(wt_sched_exec_quick_plan(rk[1].plan));
	assert_false(wt_sched_exec_quick_plan(ar.plan));
	assert_false(wt_sched_exec_quick_plan(NULL));
	/* Nothing kept yet. */
	for (int r = 0; r < 2; r++)
		for (int g = 0; g < WT_SCHED_RINGS; g++)
			seqs[r][g] = 2;
	assert_int_equal(wt_sched_exec_quick(&none, rk[0].plan, seqs[0], buf[0], buf[0], 0,
					     quick_wake_count, &wakes[0]),
			 0);
	/* The first call the usual way (slot call 2), root first: both end inside the start. */
	for (int r = 0; r < 2; r++) {
		wt_sched_net_t net = spin_net_of(&rk[r]);

		for (int i = 0; i < 3; i++)
			buf[r][i] = r == 0 ? next + i : -1;
		assert_int_equal(wt_sched_exec_run_kept(&keep[r], rk[r].plan, &net, TAG(0), buf[r],
							buf[r], sp_done, &rk[r].ctx, &rk[r].ex),
				 WEFT_OK);
		assert_null(rk[r].ex);
		assert_non_null(keep[r].blk);
	}
	for (int i = 0; i < 3; i++)
		assert_int_equal(buf[1][i], next + i);
	next += 10;
	/* Quick calls in step. */
	for (int k = 0; k < 3 * depth; k++, next += 10) {
		for (int r = 0; r < 2; r++) {
			for (int i = 0; i < 3; i++)
				buf[r][i] = r == 0 ? next + i : -1;
			assert_int_equal(wt_sched_exec_quick(&keep[r], rk[r].plan, seqs[r], buf[r],
							     buf[r], 0, quick_wake_count,
							     &wakes[r]),
					 1);
			assert_int_equal(seqs[r][ring], 3 + (uint64_t)k);
			assert_int_equal(wakes[r], k + 1);
		}
		for (int i = 0; i < 3; i++)
			assert_int_equal(buf[1][i], next + i);
	}
	/* The reader first: its root has not published. */
	assert_int_equal(wt_sched_exec_quick(&keep[1], rk[1].plan, seqs[1], buf[1], buf[1], 0,
					     quick_wake_count, &wakes[1]),
			 0);
	assert_int_equal(seqs[1][ring], 2 + 3 * (uint64_t)depth);
	/* The root a ring ahead: depth calls, then one that must wait for the reader. */
	for (int k = 0; k < depth; k++) {
		for (int i = 0; i < 3; i++)
			buf[0][i] = next + 10 * k + i;
		assert_int_equal(wt_sched_exec_quick(&keep[0], rk[0].plan, seqs[0], buf[0], buf[0],
						     0, quick_wake_count, &wakes[0]),
				 1);
	}
	assert_int_equal(wt_sched_exec_quick(&keep[0], rk[0].plan, seqs[0], buf[0], buf[0], 0,
					     quick_wake_count, &wakes[0]),
			 0);
	assert_int_equal(seqs[0][ring], 2 + 4 * (uint64_t)depth);
	/* The reader catches up, call by call, with the root's data of each. */
	for (int k = 0; k < depth; k++) {
		memset(buf[1], 0xff, sizeof(buf[1]));
		assert_int_equal(wt_sched_exec_quick(&keep[1], rk[1].plan, seqs[1], buf[1], buf[1],
						     0, quick_wake_count, &wakes[1]),
				 1);
		for (int i = 0; i < 3; i++)
			assert_int_equal(buf[1][i], next + 10 * k + i);
	}
	/* And the root goes on. */
	assert_int_equal(wt_sched_exec_quick(&keep[0], rk[0].plan, seqs[0], buf[0], buf[0], 0,
					     quick_wake_count, &wakes[0]),
			 1);
	/* A keep of the broadcast does not run the allreduce. */
	assert_int_equal(wt_sched_exec_quick(&keep[0], ar.plan, seqs[0], buf[0], buf[0], 0,
					     quick_wake_count, &wakes[0]),
			 0);
	for (int r = 0; r < 2; r++) {
		wt_sched_exec_keep_free(&keep[r]);
		wt_sched_plan_unref(rk[r].plan);
		free(sn.regions[r]);
	}
	wt_sched_plan_unref(ar.plan);
}

static void test_quick_run(void **state)
{
	(void)state;
	quick_run(REGION);
	quick_run(BIG_REGION);
}

static void test_kept(void **state)
{
	static const wt_sched_coll_t seq[] = {WT_COLL_ALLREDUCE, WT_COLL_ALLREDUCE, WT_COLL_BARRIER,
					      WT_COLL_ALLREDUCE};
	spin_net_t sn = {.seq = 2};
	spin_rank_t rk[2];
	wt_sched_exec_keep_t keep[2] = {{0}, {0}};
	void *blk[2] = {NULL, NULL};

	(void)state;
	spin_regions(&sn);
	for (size_t k = 0; k < sizeof(seq) / sizeof(seq[0]); k++) {
		memset(sn.done, 0, sizeof(sn.done));
		atomic_store(&sn.posted, 0);
		sn.seq = 2 + k;
		for (int r = 0; r < 2; r++)
			spin_setup_coll(&sn, &rk[r], r, 0, seq[k]);
		spin_start_in(&rk[0], &keep[0]);
		assert_int_equal(atomic_load(&sn.posted), 1);
		assert_int_equal(atomic_load(&sn.done[0]), 0);
		spin_start_in(&rk[1], &keep[1]);
		assert_int_equal(atomic_load(&sn.done[1]), 1);
		assert_int_equal(atomic_load(&sn.posted), 1);
		sn.cb(sn.cb_arg, WEFT_OK, NULL);
		assert_int_equal(atomic_load(&sn.done[0]), 1);
		for (int r = 0; r < 2; r++) {
			assert_int_equal(sn.st[r], WEFT_OK);
			/* the block of the call before, whatever the plan's shape */
			if (k > 0)
				assert_ptr_equal(rk[r].ex, blk[r]);
			blk[r] = rk[r].ex;
			if (seq[k] == WT_COLL_ALLREDUCE) {
				spin_check_free(&rk[r]);
			} else {
				wt_sched_exec_free(rk[r].ex);
				wt_sched_plan_unref(rk[r].plan);
			}
			assert_ptr_equal(keep[r].blk, blk[r]);
		}
	}
	for (int r = 0; r < 2; r++) {
		wt_sched_exec_keep_free(&keep[r]);
		assert_null(keep[r].blk);
		free(sn.regions[r]);
	}
	/* Slot plans run in id order; plans with messages never do. */
	for (int m = 0; m < 2; m++) {
		cfg_t c = {.coll = WT_COLL_ALLREDUCE,
			   .n = 2,
			   .count = 3,
			   .dt = WEFT_INT32,
			   .op = WEFT_SUM,
			   .algo = m ? "ring" : "slots"};
		wt_sched_args_t a = args_of(&c, 0);
		wt_sched_plan_t *p;

		st_build(&a, algo_of(&c), "in order", &p);
		assert_int_equal(wt_sched_plan_view(p)->in_order, !m);
		wt_sched_plan_unref(p);
	}
}

static void test_selection(void **state)
{
	size_t cap = wt_sched_slot_capacity(REGION);

	(void)state;
	for (size_t ci = 0; ci < NCOLLS; ci++)
		for (int n = 2; n <= 8; n++) {
			/* tiny: slots whenever the communicator has them */
			assert_string_equal(chosen(colls[ci], 2, n, cap, NULL), "slots");
			assert_string_not_equal(chosen(colls[ci], 2, n, 0, NULL), "slots");
			/* WEFT_ALGO forbids them, for one collective or all */
			assert_string_not_equal(chosen(colls[ci], 2, n, cap, "!slots"), "slots");
			assert_string_not_equal(chosen(colls[ci], 2, n, cap,
						       colls[ci] == WT_COLL_BARRIER
							   ? "barrier:!slots"
							   : "allreduce:!slots,!slots"),
						"slots");
			/* large: never (does not fit), but a broadcast or an allgather, which
			 * go in parts of a slot up to WT_SCHED_SLOT_MAX_PARTS of them */
			int parts_ok =
			    colls[ci] == WT_COLL_BROADCAST || colls[ci] == WT_COLL_ALLGATHER;

			if (colls[ci] != WT_COLL_BARRIER && !parts_ok)
				assert_string_not_equal(chosen(colls[ci], 1 << 20, n, cap, NULL),
							"slots");
			if (colls[ci] == WT_COLL_BROADCAST && n > 2)
				assert_string_equal(chosen(colls[ci], cap / 4 * 16, n, cap, NULL),
						    "slots");
			if (parts_ok)
				assert_string_not_equal(
				    chosen(colls[ci], cap / 4 * WT_SCHED_SLOT_MAX_PARTS + 1, n, cap,
					   NULL),
				    "slots");
		}
	/* A broadcast takes the slots whenever it fits them, with the shm cost and slots of
	 * the API's core-per-rank size (priced as one message's bytes without its alpha): 64 KiB
	 * and 256 KiB at 4 and 8 ranks; past a slot it goes in parts, a round of flags each,
	 * priced below the chain's hops. 2 ranks price a byte through the slots at 1.8 of a
	 * message's (table.c beta_share): slots up to blocks of about 10 KiB, the message path
	 * from there; the same for allgather and alltoall. */
	for (int n = 2; n <= 8; n *= 2) {
		size_t most = WT_SCHED_SLOT_CORE_BYTES / 4;

		if (n == 2) {
			static const wt_sched_coll_t two[] = {WT_COLL_BROADCAST, WT_COLL_ALLGATHER,
							      WT_COLL_ALLTOALL};

			for (size_t i = 0; i < 3; i++) {
				assert_string_equal(
				    chosen(two[i], 2048, n, WT_SCHED_SLOT_CORE_BYTES, NULL),
				    "slots");
				assert_string_not_equal(
				    chosen(two[i], 4096, n, WT_SCHED_SLOT_CORE_BYTES, NULL),
				    "slots");
				assert_string_not_equal(
				    chosen(two[i], 16384, n, WT_SCHED_SLOT_CORE_BYTES, NULL),
				    "slots");
			}
			continue;
		}
		assert_string_equal(
		    chosen(WT_COLL_BROADCAST, 16384, n, WT_SCHED_SLOT_CORE_BYTES, NULL), "slots");
		assert_string_equal(
		    chosen(WT_COLL_BROADCAST, most, n, WT_SCHED_SLOT_CORE_BYTES, NULL), "slots");
		assert_string_equal(
		    chosen(WT_COLL_BROADCAST, 1 << 20, n, WT_SCHED_SLOT_CORE_BYTES, NULL), "slots");
	}
	/* With more ranks than cores (the API's cost: alpha 6.5x, slot reads at 0.3 of gamma,
	 * 1 MiB slots) an allgather of 1 and 4 MiB blocks goes through the slots in parts, and a
	 * 2-rank alltoall past a slot too; with a core per rank (shm cost, core-per-rank slots)
	 * 2 ranks take the message path for those (the slots' bytes at 1.8 of a message's).
	 * 3 ranks keep an alltoall to one slot. */
	{
		const wt_sched_cost_t over = {9.75e-6, 1 / 6e9, 1 / 8e9, 0.3};
		size_t big = wt_sched_slot_capacity(BIG_REGION), sc = WT_SCHED_SLOT_CORE_BYTES;
		const struct {
			wt_sched_coll_t coll;
			size_t count;
			int n;
		} over_slots[] = {{WT_COLL_ALLGATHER, 1 << 18, 4},
				  {WT_COLL_ALLGATHER, 1 << 20, 4},
				  {WT_COLL_ALLTOALL, 1 << 20, 2}};

		for (size_t i = 0; i < sizeof(over_slots) / sizeof(over_slots[0]); i++) {
			wt_sched_args_t a =
			    st_args(over_slots[i].coll, over_slots[i].count, WEFT_FLOAT32, WEFT_SUM,
				    0, over_slots[i].n, 0, 0);
			const wt_sched_algo_t *algo = NULL;
			char err[200];

			a.slot_bytes = big;
			assert_int_equal(
			    wt_sched_algo_choose(&a, NULL, &over, &algo, err, sizeof(err)),
			    WEFT_OK);
			assert_string_equal(algo->name, "slots");
		}
		assert_string_not_equal(chosen(WT_COLL_ALLGATHER, sc / 4, 2, sc, NULL), "slots");
		assert_string_not_equal(chosen(WT_COLL_ALLGATHER, 1 << 18, 2, sc, NULL), "slots");
		assert_string_not_equal(chosen(WT_COLL_ALLTOALL, sc / 4, 2, sc, NULL), "slots");
		assert_string_not_equal(chosen(WT_COLL_ALLTOALL, sc, 2, sc, NULL), "slots");
		assert_string_not_equal(chosen(WT_COLL_ALLTOALL, sc / 12 + 1, 3, sc, NULL),
					"slots");
	}
	/* Where an exchange's receives go by get from some size (the API's cost with more
	 * ranks than cores: xchg_get_min 128 KiB), an alltoall leaves the slots for pairwise
	 * from blocks of that size and keeps them below; the other collectives keep theirs. */
	{
		const wt_sched_cost_t over = {9.75e-6, 1 / 6e9, 1 / 8e9, 0.3, 128 << 10};
		const wt_sched_cost_t none = {9.75e-6, 1 / 6e9, 1 / 8e9, 0.3, 0};
		const struct {
			wt_sched_coll_t coll;
			size_t count;
			int n;
			const wt_sched_cost_t *cost;
			const char *algo;
		} cases[] = {
		    {WT_COLL_ALLTOALL, 32 << 10, 4, &over, "pairwise"},
		    {WT_COLL_ALLTOALL, 64 << 10, 4, &over, "pairwise"},
		    {WT_COLL_ALLTOALL, 64 << 10, 8, &over, "pairwise"},
		    {WT_COLL_ALLTOALL, (32 << 10) - 1, 4, &over, "slots"},
		    {WT_COLL_ALLTOALL, 16 << 10, 4, &over, "slots"},
		    {WT_COLL_ALLTOALL, 64 << 10, 4, &none, "slots"},
		    {WT_COLL_ALLGATHER, 64 << 10, 4, &over, "slots"},
		};

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
			wt_sched_args_t a = st_args(cases[i].coll, cases[i].count, WEFT_FLOAT32,
						    WEFT_SUM, 0, cases[i].n, 0, 0);
			const wt_sched_algo_t *algo = NULL;
			char err[200];

			a.slot_bytes = wt_sched_slot_capacity(BIG_REGION);
			assert_int_equal(
			    wt_sched_algo_choose(&a, NULL, cases[i].cost, &algo, err, sizeof(err)),
			    WEFT_OK);
			assert_string_equal(algo->name, cases[i].algo);
		}
	}
	/* forcing without slots is the caller's error, reported by the build */
	{
		wt_sched_args_t a =
		    st_args(WT_COLL_ALLREDUCE, 2, WEFT_FLOAT32, WEFT_SUM, 0, 4, 0, 0);
		wt_sched_plan_t *p = NULL;
		char err[256] = "";

		assert_string_equal(chosen(WT_COLL_ALLREDUCE, 2, 4, 0, "slots"), "slots");
		assert_int_equal(wt_sched_plan_build(&a, wt_sched_algo_select(&a, "slots"), &p, err,
						     sizeof(err)),
				 WEFT_ERR_UNSUPPORTED);
		assert_non_null(strstr(err, "no shared slots"));
	}
	/* "!name" is checked like a name */
	{
		char err[200];

		assert_int_equal(
		    wt_sched_algo_spec_check("!slots,allreduce:!ring", err, sizeof(err)), WEFT_OK);
		assert_int_not_equal(wt_sched_algo_spec_check("!nope", err, sizeof(err)), WEFT_OK);
	}
}

/* Pages of the len bytes at p (page aligned) that are mapped in this process's page tables
 * (/proc/self/pagemap's present bit: per mapping, unlike mincore, which for a shared file
 * says only whether the page cache holds the page). */
static size_t mapped_pages(const void *p, size_t len)
{
	size_t n = (len + 4095) / 4096, in = 0;
	uint64_t *v = calloc(n, sizeof(*v));
	FILE *f = fopen("/proc/self/pagemap", "rb");

	assert_non_null(v);
	assert_non_null(f);
	assert_int_equal(fseek(f, (long)((uintptr_t)p / 4096 * sizeof(uint64_t)), SEEK_SET), 0);
	assert_int_equal(fread(v, sizeof(*v), n, f), n);
	fclose(f);
	for (size_t i = 0; i < n; i++)
		in += (size_t)(v[i] >> 63);
	free(v);
	return in;
}

/* Resetting a region writes every page of its small ring and of the first bytes of each
 * large slot it is told to warm, touching a peer's reads them, and warming more later maps
 * the rest, without writing any byte outside the range (a page may hold bytes in use): on a
 * memfd mapped twice (the owner's mapping and a read-only one, as a peer's), the region
 * starting a few lines into its first page as the API staggers them. */
static void test_region_warm(void **state)
{
	size_t stagger = 3 * 64, len = BIG_REGION + stagger + 4096;
	size_t pages = (len + 4095) / 4096, all = (BIG_REGION + stagger + 4095) / 4096;
	size_t cap = wt_sched_slot_capacity(BIG_REGION), part = WT_SCHED_SLOT_CORE_BYTES;
	int fd = memfd_create("slots-warm", 0);
	uint8_t *own, *peer, *r;
	size_t first, marked = 0;

	(void)state;
	assert_true(cap > part + 8192);
	assert_true(fd >= 0);
	assert_int_equal(ftruncate(fd, (off_t)len), 0);
	own = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	peer = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	assert_true(own != MAP_FAILED && peer != MAP_FAILED);
	r = own + stagger;
	assert_int_equal(mapped_pages(own, len), 0);
	wt_sched_slot_reset(r, BIG_REGION, 2, part);
	/* Part of the region: four slots' worth of pages past `part` are not. */
	first = mapped_pages(own, len);
	assert_true(first <= all - 4 * ((cap - part) / 4096 - 1));
	assert_true(first > 4 * (part / 4096));
	assert_int_equal(mapped_pages(own + (pages - 1) * 4096, 4096), 0);
	(void)wt_sched_slot_touch(peer + stagger, BIG_REGION, part);
	assert_int_equal(mapped_pages(peer, len), first);
	/* Mark every byte the warm-up must not write: all but the slots' bytes from part on. */
	memset(r, 0x5a, BIG_REGION);
	wt_sched_slot_reset(r, BIG_REGION, 2, part); /* the words again */
	(void)wt_sched_slot_warm(r, BIG_REGION, part, cap + 4096, 1);
	assert_int_equal(mapped_pages(own, len), all);
	(void)wt_sched_slot_warm(peer + stagger, BIG_REGION, part, cap, 0);
	assert_int_equal(mapped_pages(peer, len), all);
	/* It wrote zeros at the first byte of the range and at page starts after it: four
	 * slots, each (cap - part) bytes from `part` on, and nothing in between. */
	for (size_t i = 0; i < BIG_REGION; i++)
		marked += r[i] == 0x5a;
	{
		size_t zeros = BIG_REGION - marked, expect_min = 4 * ((cap - part) / 4096);
		size_t reset_zeros = 0;
		uint8_t *copy = aligned_alloc(64, BIG_REGION);

		assert_non_null(copy);
		/* What the reset alone zeroes (its words and page starts), for comparison. */
		memset(copy, 0x5a, BIG_REGION);
		wt_sched_slot_reset(copy, BIG_REGION, 2, part);
		for (size_t i = 0; i < BIG_REGION; i++)
			reset_zeros += copy[i] != 0x5a;
		free(copy);
		assert_true(zeros - reset_zeros >= expect_min);
		assert_true(zeros - reset_zeros <= expect_min + 8);
	}
	/* The words the reset set are as before: calls numbered above 2. */
	assert_int_equal(wt_sched_slot_high_water(peer + stagger, BIG_REGION), 2);
	munmap(own, len);
	munmap(peer, len);
	close(fd);
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_colls_ranks_counts),
	    cmocka_unit_test(test_dtypes_ops),
	    cmocka_unit_test(test_full_slot),
	    cmocka_unit_test(test_consecutive_calls),
	    cmocka_unit_test(test_same_call_repeated),
	    cmocka_unit_test(test_wait_failure),
	    cmocka_unit_test(test_owing_and_cancel),
	    cmocka_unit_test(test_start_refused),
	    cmocka_unit_test(test_plan_checks),
	    cmocka_unit_test(test_dump),
	    cmocka_unit_test(test_selection),
	    cmocka_unit_test(test_inline_spin),
	    cmocka_unit_test(test_kept),
	    cmocka_unit_test(test_run_kept),
	    cmocka_unit_test(test_quick_run),
	    cmocka_unit_test(test_kept_sizes),
	    cmocka_unit_test(test_small_ring),
	    cmocka_unit_test(test_root_runs_ahead),
	    cmocka_unit_test(test_broadcast_parts),
	    cmocka_unit_test(test_allreduce_twoshot),
	    cmocka_unit_test(test_release_after_waits),
	    cmocka_unit_test(test_calls_differ),
	    cmocka_unit_test(test_region_warm),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
