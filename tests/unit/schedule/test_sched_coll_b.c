/* Broadcast, reduce, gather, scatter, alltoall(v) and barrier algorithms run end to end on
 * the simulated network (tests/unit/schedule): every rank count 1..33, roots, edge counts,
 * dtypes and ops, in place, random delivery orders; results compared exactly. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "layers/schedule/exec.h"
#include "layers/schedule/plan.h"
#include "lib/util/dtype.h"
#include "tests/unit/schedule/schedtest.h"
#include "tests/unit/schedule/simnet.h"

#define MAX_RANKS 33

typedef struct {
	wt_sched_coll_t coll;
	const char *algo;
	int n, root;
	size_t count;
	weft_dtype_t dt;
	weft_op_t op;
	int in_place;
	size_t seg;
	uint64_t seed;
	int arbitrary; /* reduce: arbitrary floats, checked against the documented order */
	/* alltoallv: counts[i * n + j] elements go from rank i to rank j; displacements of
	 * rank i's parts are sd[i * n + j] (send) and rd[i * n + j] (receive). */
	const size_t *counts, *sd, *rd;
	int late; /* rank started only after the others ran out of events; -1: none */
} cfg_t;

typedef struct {
	uint8_t *send[MAX_RANKS], *recv[MAX_RANKS];
	size_t send_bytes[MAX_RANKS], recv_bytes[MAX_RANKS];
	size_t sc[MAX_RANKS][MAX_RANKS], sdv[MAX_RANKS][MAX_RANKS];
	size_t rc[MAX_RANKS][MAX_RANKS], rdv[MAX_RANKS][MAX_RANKS];
	st_execs_t x;
} ranks_t;

static uint64_t mix(uint64_t h)
{
	h ^= h >> 31;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 29;
	return h;
}

/* The byte at index i of rank r's input of the data-moving collectives. */
static uint8_t pat(int r, size_t i)
{
	return (uint8_t)mix((uint64_t)(r + 1) * 0x9e3779b97f4a7c15ull ^ (i + 3));
}

/* What a buffer holds before the collective where nothing should land. */
static uint8_t junk(int r, size_t i)
{
	return pat(r + 1000, i);
}

/* Reduce inputs whose result is exact in every order (see st_exact_input). */
static int64_t input(int r, size_t i, weft_op_t op, weft_dtype_t dt)
{
	uint64_t h = mix((uint64_t)r * 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1) * 0x94d049bbull);

	return st_exact_input(h, r, i, op, dt);
}

/* Order-sensitive floats (fractions, huge and tiny magnitudes, NaNs with payloads). */
static double arbitrary(int r, size_t i, weft_op_t op)
{
	return st_arbitrary(
	    mix(((uint64_t)r + 1) * 0xd1b54a32d192ed03ull ^ (i + 7) * 0x94d049bbull), op);
}

static void fill_reduce_input(const cfg_t *c, uint8_t *buf, int r)
{
	st_fill_input(buf, c->count, c->dt, c->op, r, input, c->arbitrary ? arbitrary : NULL);
}

/* Exact reference in 64-bit integers. */
static void reduce_reference(const cfg_t *c, uint8_t *out)
{
	size_t es = wt_util_dtype_size(c->dt);

	for (size_t i = 0; i < c->count; i++)
		st_reduce_ref(input, c->n, i, c->op, c->dt, out + i * es);
}

/* The order each algorithm documents, evaluated with the library's kernel: relative rank
 * v's value is rank (v + root) % n's input. */
static uint8_t *ordered_value(const cfg_t *c, unsigned v)
{
	size_t bytes = c->count * wt_util_dtype_size(c->dt);
	uint8_t *b = malloc(bytes + 1);

	assert_non_null(b);
	fill_reduce_input(c, b, (int)((v + (unsigned)c->root) % (unsigned)c->n));
	return b;
}

static uint8_t *ordered_binomial(const cfg_t *c, unsigned v)
{
	unsigned n = (unsigned)c->n, low = v ? (v & -v) : n;
	uint8_t *acc = ordered_value(c, v);
	weft_op_t op = c->op == WEFT_AVG ? WEFT_SUM : c->op;

	for (unsigned m = 1; m < low && v + m < n; m *= 2) {
		uint8_t *child = ordered_binomial(c, v + m);

		wt_util_reduce(acc, child, c->count, c->dt, op);
		free(child);
	}
	return acc;
}

static uint8_t *ordered_chain(const cfg_t *c)
{
	weft_op_t op = c->op == WEFT_AVG ? WEFT_SUM : c->op;
	uint8_t *acc = ordered_value(c, (unsigned)c->n - 1);

	for (int v = c->n - 2; v >= 0; v--) {
		uint8_t *own = ordered_value(c, (unsigned)v);

		wt_util_reduce(own, acc, c->count, c->dt, op);
		free(acc);
		acc = own;
	}
	return acc;
}

static void ordered_reference(const cfg_t *c, uint8_t *out)
{
	size_t bytes = c->count * wt_util_dtype_size(c->dt);
	uint8_t *r = strcmp(c->algo, "chain") == 0 ? ordered_chain(c) : ordered_binomial(c, 0);

	if (c->op == WEFT_AVG && c->n > 1)
		wt_util_scale_div(r, c->count, c->dt, c->n);
	memcpy(out, r, bytes);
	free(r);
}

static void cfg_name(const cfg_t *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s:%s n=%d root=%d count=%zu %s %s in_place=%d seg=%zu seed=%llu",
		 wt_sched_coll_name(c->coll), c->algo, c->n, c->root, c->count,
		 wt_util_dtype_name(c->dt), wt_util_op_name(c->op), c->in_place, c->seg,
		 (unsigned long long)c->seed);
}

static void args_of(const cfg_t *c, ranks_t *R, int r, wt_sched_args_t *a)
{
	memset(a, 0, sizeof(*a));
	a->coll = c->coll;
	a->count = c->count;
	a->dtype = c->dt;
	a->op = c->op;
	a->root = c->root;
	a->rank = r;
	a->size = c->n;
	a->in_place = c->in_place;
	a->seg_bytes = c->seg;
	if (c->coll != WT_COLL_ALLTOALLV)
		return;
	for (int j = 0; j < c->n; j++) {
		R->sc[r][j] = c->counts[r * c->n + j];
		R->sdv[r][j] = c->sd[r * c->n + j];
		R->rc[r][j] = c->counts[j * c->n + r];
		R->rdv[r][j] = c->rd[r * c->n + j];
	}
	a->sendcounts = R->sc[r];
	a->sdispls = R->sdv[r];
	a->recvcounts = R->rc[r];
	a->rdispls = R->rdv[r];
}

/* In-place forms are per rank: only the root of a rooted collective has one. */
static int rank_in_place(const cfg_t *c, int r)
{
	if (!c->in_place)
		return 0;
	if (c->coll == WT_COLL_REDUCE || c->coll == WT_COLL_GATHER)
		return r == c->root;
	return 1;
}

static uint8_t *alloc_buf(size_t bytes)
{
	uint8_t *b;

	if (!bytes)
		return NULL; /* 0-byte buffers are bound as NULL, as a caller may */
	b = malloc(bytes);
	assert_non_null(b);
	return b;
}

/* The caller's buffers before the call. */
static void fill_rank(const cfg_t *c, ranks_t *R, int r)
{
	size_t es = wt_util_dtype_size(c->dt), blk = c->count * es;

	for (size_t i = 0; i < R->recv_bytes[r]; i++)
		R->recv[r][i] = junk(r, i);
	switch (c->coll) {
	case WT_COLL_BROADCAST:
		if (r == c->root)
			for (size_t i = 0; i < blk; i++)
				R->recv[r][i] = pat(r, i);
		return;
	case WT_COLL_REDUCE:
		fill_reduce_input(c, rank_in_place(c, r) ? R->recv[r] : R->send[r], r);
		return;
	case WT_COLL_GATHER:
		if (rank_in_place(c, r)) {
			for (size_t i = 0; i < blk; i++)
				R->recv[r][(size_t)r * blk + i] = pat(r, i);
			return;
		}
		break;
	case WT_COLL_ALLTOALL:
	case WT_COLL_ALLTOALLV:
		if (c->in_place) {
			for (size_t i = 0; i < R->recv_bytes[r]; i++)
				R->recv[r][i] = pat(r, i);
			return;
		}
		break;
	default:
		break;
	}
	for (size_t i = 0; i < R->send_bytes[r]; i++)
		R->send[r][i] = pat(r, i);
}

static void check_plan_steps(const cfg_t *c, wt_sched_plan_t *p)
{
	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(p, i);
		int net = s->type == WT_SCHED_SEND || s->type == WT_SCHED_RECV ||
			  s->type == WT_SCHED_RECV_REDUCE;

		/* Only the barrier's messages are empty. */
		if (net && c->coll != WT_COLL_BARRIER)
			assert_true(s->len > 0);
		if (s->type != WT_SCHED_SEND && s->type != WT_SCHED_NOP)
			assert_int_not_equal(s->buf, WT_SCHED_BUF_SEND);
	}
}

static void setup_rank(const cfg_t *c, ranks_t *R, int r)
{
	wt_sched_args_t a;
	const wt_sched_algo_t *algo;
	char name[200];

	args_of(c, R, r, &a);
	a.in_place = rank_in_place(c, r);
	R->send_bytes[r] = a.in_place ? 0 : wt_sched_args_buf_bytes(&a, WT_SCHED_BUF_SEND);
	R->recv_bytes[r] = wt_sched_args_buf_bytes(&a, WT_SCHED_BUF_RECV);
	if (c->coll == WT_COLL_BROADCAST)
		R->send_bytes[r] = 0; /* one user buffer */
	R->send[r] = alloc_buf(R->send_bytes[r]);
	R->recv[r] = alloc_buf(R->recv_bytes[r]);
	fill_rank(c, R, r);
	algo = wt_sched_algo_select(&a, c->algo);
	assert_non_null(algo);
	cfg_name(c, name, sizeof(name));
	st_build(&a, algo, name, &R->x.plan[r]);
	check_plan_steps(c, R->x.plan[r]);
}

static const uint8_t no_send_buffer;

static void start_rank(const cfg_t *c, ranks_t *R, int r)
{
	const void *sb = R->send[r];
	void *rb = R->recv[r];

	if (c->coll == WT_COLL_BROADCAST)
		sb = rb;
	else if (rank_in_place(c, r))
		sb = c->coll == WT_COLL_GATHER
			 ? R->recv[r] + (size_t)r * c->count * wt_util_dtype_size(c->dt)
			 : R->recv[r];
	/* The executor wants a send buffer whenever RECV is not empty, even where the plan
	 * reads none (scatter's non-roots, an alltoallv rank that sends nothing). */
	if (!sb && !rank_in_place(c, r) && R->recv_bytes[r])
		sb = &no_send_buffer;
	st_start(&R->x, r, (uint64_t)0x5a << WT_SCHED_TAG_MSG_BITS, sb, rb);
}

/* Expected RECV of rank r for the data-moving collectives. */
static void expect_recv(const cfg_t *c, const ranks_t *R, int r, uint8_t *want)
{
	size_t es = wt_util_dtype_size(c->dt), blk = c->count * es;

	for (size_t i = 0; i < R->recv_bytes[r]; i++)
		want[i] = junk(r, i);
	switch (c->coll) {
	case WT_COLL_BROADCAST:
		for (size_t i = 0; i < blk; i++)
			want[i] = pat(c->root, i);
		break;
	case WT_COLL_GATHER:
		for (size_t j = 0; r == c->root && j < (size_t)c->n; j++)
			for (size_t i = 0; i < blk; i++)
				want[j * blk + i] = pat((int)j, i);
		break;
	case WT_COLL_SCATTER:
		for (size_t i = 0; i < blk; i++)
			want[i] = pat(c->root, (size_t)r * blk + i);
		break;
	case WT_COLL_ALLTOALL:
		for (size_t j = 0; j < (size_t)c->n; j++)
			for (size_t i = 0; i < blk; i++)
				want[j * blk + i] = pat((int)j, (size_t)r * blk + i);
		break;
	case WT_COLL_ALLTOALLV:
		if (c->in_place)
			for (size_t i = 0; i < R->recv_bytes[r]; i++)
				want[i] = pat(r, i);
		for (int j = 0; j < c->n; j++) {
			/* In place, j sent from its receive layout. */
			size_t src = c->in_place ? R->rdv[j][r] : R->sdv[j][r];

			for (size_t i = 0; i < R->rc[r][j] * es; i++)
				want[R->rdv[r][j] * es + i] = pat(j, src * es + i);
		}
		break;
	default:
		break;
	}
}

static void check_rank(const cfg_t *c, const ranks_t *R, int r, const char *name,
		       const uint8_t *ref)
{
	size_t bytes = R->recv_bytes[r], es = wt_util_dtype_size(c->dt);
	uint8_t *want = st_alloc(bytes + R->send_bytes[r] + 1);

	if (c->coll == WT_COLL_REDUCE) {
		if (r == c->root)
			st_check_bytes(name, r, "RECV", R->recv[r], ref, bytes, es);
	} else {
		expect_recv(c, R, r, want);
		st_check_bytes(name, r, "RECV", R->recv[r], want, bytes, es);
	}
	/* SEND is never written. */
	if (c->coll == WT_COLL_REDUCE)
		fill_reduce_input(c, want, r);
	else
		for (size_t i = 0; i < R->send_bytes[r]; i++)
			want[i] = pat(r, i);
	st_check_bytes(name, r, "SEND", R->send[r], want, R->send_bytes[r], es);
	free(want);
}

static void run_coll(const cfg_t *c)
{
	size_t es = wt_util_dtype_size(c->dt);
	uint64_t rng = c->seed * 31 + 7;
	uint8_t *ref = NULL;
	ranks_t *R = calloc(1, sizeof(*R));
	int order[MAX_RANKS], nstart = 0;
	char name[240];

	assert_non_null(R);
	R->x = (st_execs_t){.n = c->n, .sim = simnet_new(c->n, c->seed)};
	assert_true(c->n >= 1 && c->n <= MAX_RANKS);
	cfg_name(c, name, sizeof(name));
	if (c->coll == WT_COLL_REDUCE) {
		ref = st_alloc(c->count * es + 1);
		if (c->arbitrary)
			ordered_reference(c, ref);
		else
			reduce_reference(c, ref);
	}
	for (int r = 0; r < c->n; r++) {
		setup_rank(c, R, r);
		if (r != c->late)
			order[nstart++] = r;
	}
	st_shuffle(order, nstart, &rng);
	/* Ranks join at random moments while earlier ones make progress. */
	for (int k = 0; k < nstart; k++) {
		int steps = (int)(simnet_rand(&rng) % 8);

		start_rank(c, R, order[k]);
		while (steps-- > 0 && simnet_step(R->x.sim))
			;
	}
	if (c->late >= 0) {
		simnet_run(R->x.sim);
		/* Nobody may pass a barrier before the last rank arrived. */
		for (int r = 0; r < c->n; r++)
			if (r != c->late && R->x.done[r].calls)
				fail_msg("%s: rank %d left the barrier before rank %d arrived",
					 name, r, c->late);
		start_rank(c, R, c->late);
	}
	simnet_run(R->x.sim);
	for (int r = 0; r < c->n; r++) {
		st_check_done(&R->x, r, name);
		check_rank(c, R, r, name, ref);
		st_release(&R->x, r, 1);
		free(R->send[r]);
		free(R->recv[r]);
	}
	simnet_free(R->x.sim);
	free(ref);
	free(R);
}

/* Every root for small communicators, a spread of roots for larger ones. */
static int pick_roots(int n, int *roots)
{
	int k = 0;

	if (n <= 9) {
		for (int r = 0; r < n; r++)
			roots[k++] = r;
		return k;
	}
	roots[k++] = 0;
	roots[k++] = 1;
	roots[k++] = n / 2;
	roots[k++] = n - 1;
	roots[k++] = (n * 7 + 3) % n;
	return k;
}

static void sweep(wt_sched_coll_t coll, const char *algo, int with_in_place, weft_dtype_t dt)
{
	uint64_t seed = (uint64_t)coll * 1000003u + (uint64_t)strlen(algo) * 7919u;

	for (int n = 1; n <= MAX_RANKS; n++) {
		int roots[MAX_RANKS] = {0},
		    nroots = coll == WT_COLL_ALLTOALL ? 1 : pick_roots(n, roots);
		/* Edge counts; the large one with segments that split elements' worth of bytes. */
		const struct {
			size_t count, seg;
		} counts[] = {{0, 0},
			      {1, 0},
			      {7, 0},
			      {(size_t)n + 1, 8},
			      {(size_t)3 * n + 2, 0},
			      {n <= 9 ? 2051 : 301, 1001}};

		for (int ri = 0; ri < nroots; ri++)
			for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
				for (int ip = 0; ip <= with_in_place; ip++) {
					cfg_t c = {.coll = coll,
						   .algo = algo,
						   .n = n,
						   .root = roots[ri],
						   .count = counts[ci].count,
						   .dt = dt,
						   .op = WEFT_SUM,
						   .in_place = ip,
						   .seg = counts[ci].seg,
						   .seed = ++seed,
						   .late = -1};

					run_coll(&c);
				}
	}
}

static void test_bcast_binomial(void **state)
{
	(void)state;
	sweep(WT_COLL_BROADCAST, "binomial", 1, WEFT_INT32);
}

static void test_bcast_chain(void **state)
{
	(void)state;
	sweep(WT_COLL_BROADCAST, "chain", 1, WEFT_FLOAT64);
}

static void test_reduce_binomial(void **state)
{
	(void)state;
	sweep(WT_COLL_REDUCE, "binomial", 1, WEFT_INT32);
}

static void test_reduce_chain(void **state)
{
	(void)state;
	sweep(WT_COLL_REDUCE, "chain", 1, WEFT_INT64);
}

static void test_gather_binomial(void **state)
{
	(void)state;
	sweep(WT_COLL_GATHER, "binomial", 1, WEFT_INT32);
	sweep(WT_COLL_GATHER, "binomial", 0, WEFT_UINT8);
}

static void test_scatter_binomial(void **state)
{
	(void)state;
	sweep(WT_COLL_SCATTER, "binomial", 0, WEFT_INT32);
	sweep(WT_COLL_SCATTER, "binomial", 0, WEFT_FLOAT16);
}

static void test_alltoall_pairwise(void **state)
{
	(void)state;
	sweep(WT_COLL_ALLTOALL, "pairwise", 1, WEFT_INT32);
}

static void test_alltoall_bruck(void **state)
{
	(void)state;
	sweep(WT_COLL_ALLTOALL, "bruck", 1, WEFT_INT32);
	sweep(WT_COLL_ALLTOALL, "bruck", 1, WEFT_UINT8);
}

static const weft_dtype_t dtypes[] = {WEFT_INT32,   WEFT_UINT8,	  WEFT_INT64,	WEFT_FLOAT32,
				      WEFT_FLOAT64, WEFT_FLOAT16, WEFT_BFLOAT16};
static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG};
static const char *const reduce_algos[] = {"binomial", "chain"};

/* Many delivery orders of the same shapes: each seed reorders every event. */
static void test_seeds(void **state)
{
	static const struct {
		wt_sched_coll_t coll;
		const char *algo;
		int in_place;
	} algs[] = {
	    {WT_COLL_BROADCAST, "binomial", 0}, {WT_COLL_BROADCAST, "chain", 1},
	    {WT_COLL_REDUCE, "binomial", 1},	{WT_COLL_REDUCE, "chain", 1},
	    {WT_COLL_GATHER, "binomial", 1},	{WT_COLL_SCATTER, "binomial", 0},
	    {WT_COLL_ALLTOALL, "pairwise", 1},	{WT_COLL_ALLTOALL, "bruck", 1},
	};
	static const int ns[] = {5, 12, 32};

	(void)state;
	for (size_t ai = 0; ai < sizeof(algs) / sizeof(algs[0]); ai++)
		for (size_t ni = 0; ni < 3; ni++)
			for (uint64_t seed = 1; seed <= 16; seed++) {
				cfg_t c = {.coll = algs[ai].coll,
					   .algo = algs[ai].algo,
					   .n = ns[ni],
					   .root = (int)(seed % (uint64_t)ns[ni]),
					   .count = 37,
					   .dt = WEFT_INT32,
					   .op = WEFT_SUM,
					   .in_place = algs[ai].in_place && (seed & 1),
					   .seg = 40,
					   .seed = seed * 7777 + ai,
					   .late = -1};

				run_coll(&c);
			}
}

/* Every dtype and op with both reduce algorithms, in place at the root or not. */
static void test_reduce_dtypes_ops(void **state)
{
	static const int ns[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 12, 16, 17, 31, 33};
	uint64_t seed = 4242;

	(void)state;
	for (size_t di = 0; di < sizeof(dtypes) / sizeof(dtypes[0]); di++)
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
			for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
				for (int ai = 0; ai < 2; ai++) {
					size_t counts[] = {1, (size_t)ns[ni] + 2, 301};

					for (size_t ci = 0; ci < 3; ci++) {
						cfg_t c = {.coll = WT_COLL_REDUCE,
							   .algo = reduce_algos[ai],
							   .n = ns[ni],
							   .root = (int)(seed % (uint64_t)ns[ni]),
							   .count = counts[ci],
							   .dt = dtypes[di],
							   .op = ops[oi],
							   .in_place = (int)(seed / 3 % 2),
							   .seg = ci == 2 ? 100 : 0,
							   .seed = seed++,
							   .late = -1};

						run_coll(&c);
					}
				}
}

/* Order-sensitive floats: the root's bits must match the order the algorithm documents,
 * whatever the delivery order. */
static void test_reduce_order(void **state)
{
	static const weft_dtype_t fdt[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_FLOAT16, WEFT_BFLOAT16};
	static const int ns[] = {2, 3, 5, 6, 8, 11, 13, 16, 33};
	uint64_t seed = 77;

	(void)state;
	for (size_t di = 0; di < 4; di++)
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
			for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
				for (int ai = 0; ai < 2; ai++)
					for (int rep = 0; rep < 2; rep++) {
						cfg_t c = {.coll = WT_COLL_REDUCE,
							   .algo = reduce_algos[ai],
							   .n = ns[ni],
							   .root =
							       (int)(seed * 5 % (uint64_t)ns[ni]),
							   .count = 97,
							   .dt = fdt[di],
							   .op = ops[oi],
							   .in_place = rep,
							   .seg = 64,
							   .seed = seed++,
							   .arbitrary = 1,
							   .late = -1};

						run_coll(&c);
					}
}

/* Irregular alltoallv: random counts with zeros (whole zero rows and columns too), parts
 * laid out in a shuffled order with gaps. In place needs symmetric counts and one layout
 * for both directions. */
static void make_vectors(int n, uint64_t *rng, int in_place, size_t *counts, size_t *sd, size_t *rd)
{
	int zero_rank = (int)(simnet_rand(rng) % (uint64_t)(n + 2)) - 1;

	for (int i = 0; i < n; i++)
		for (int j = 0; j < n; j++) {
			uint64_t h = simnet_rand(rng);
			size_t v = h % 3 == 0 ? 0 : (size_t)(h >> 8) % (h % 7 == 1 ? 600 : 9);

			if (i == zero_rank || j == zero_rank)
				v = 0;
			counts[i * n + j] = v;
		}
	if (in_place)
		for (int i = 0; i < n; i++)
			for (int j = 0; j < i; j++)
				counts[i * n + j] = counts[j * n + i];
	for (int dir = 0; dir < 2; dir++)
		for (int i = 0; i < n; i++) {
			size_t *d = dir ? rd : sd, off = (size_t)(simnet_rand(rng) % 5);
			int perm[MAX_RANKS];

			st_random_order(perm, n, rng);
			for (int k = 0; k < n; k++) {
				int j = perm[k];
				/* Send parts of rank i: counts[i][j]; receive parts: counts[j][i].
				 */
				size_t len = dir ? counts[j * n + i] : counts[i * n + j];

				d[i * n + j] = off;
				off += len + (size_t)(simnet_rand(rng) % 4);
			}
		}
	if (in_place)
		memcpy(sd, rd, (size_t)n * (size_t)n * sizeof(*sd));
}

static void test_alltoallv_pairwise(void **state)
{
	static const weft_dtype_t vdt[] = {WEFT_INT32, WEFT_UINT8, WEFT_FLOAT64};
	size_t *counts = malloc(MAX_RANKS * MAX_RANKS * 3 * sizeof(size_t));
	size_t *sd = counts + MAX_RANKS * MAX_RANKS, *rd = sd + MAX_RANKS * MAX_RANKS;
	uint64_t rng = 12345;

	(void)state;
	assert_non_null(counts);
	for (int n = 1; n <= MAX_RANKS; n++)
		for (int rep = 0; rep < 6; rep++) {
			int ip = rep % 2;
			cfg_t c = {.coll = WT_COLL_ALLTOALLV,
				   .algo = "pairwise",
				   .n = n,
				   .dt = vdt[rep % 3],
				   .op = WEFT_SUM,
				   .in_place = ip,
				   .seed = (uint64_t)n * 100 + (uint64_t)rep,
				   .counts = counts,
				   .sd = sd,
				   .rd = rd,
				   .late = -1};

			make_vectors(n, &rng, ip, counts, sd, rd);
			run_coll(&c);
		}
	free(counts);
}

/* Every rank completes, and none before the late rank has started. */
static void test_barrier_dissemination(void **state)
{
	uint64_t seed = 900;

	(void)state;
	for (int n = 1; n <= MAX_RANKS; n++) {
		int lates[MAX_RANKS], nl = pick_roots(n, lates);

		for (int li = 0; li < nl; li++)
			for (int rep = 0; rep < 3; rep++) {
				cfg_t c = {.coll = WT_COLL_BARRIER,
					   .algo = "dissemination",
					   .n = n,
					   .dt = WEFT_INT32,
					   .op = WEFT_SUM,
					   .seed = seed++,
					   .late = n > 1 ? lates[li] : -1};

				run_coll(&c);
				c.late = -1;
				c.seed = seed++;
				run_coll(&c);
			}
	}
}

static int plan_build_status(const wt_sched_args_t *a, const char *name, char *err, size_t len)
{
	const wt_sched_algo_t *algo = wt_sched_algo_select(a, name);
	wt_sched_plan_t *p = NULL;
	weft_status_t st;

	assert_non_null(algo);
	st = wt_sched_plan_build(a, algo, &p, err, len);
	if (st == WEFT_OK)
		wt_sched_plan_unref(p);
	return st;
}

/* Forms the contract has no room for are refused with a reason, never half built. */
static void test_refusals(void **state)
{
	wt_sched_args_t a = {.coll = WT_COLL_SCATTER,
			     .count = 4,
			     .dtype = WEFT_INT32,
			     .op = WEFT_SUM,
			     .root = 1,
			     .rank = 1,
			     .size = 4,
			     .in_place = 1};
	size_t c[2] = {1, 2}, d[2] = {0, 1};
	char err[256] = "";

	(void)state;
	assert_int_equal(plan_build_status(&a, "binomial", err, sizeof(err)), WEFT_ERR_UNSUPPORTED);
	assert_non_null(strstr(err, "in-place"));
	a.coll = WT_COLL_REDUCE;
	a.rank = 2;
	for (int ai = 0; ai < 2; ai++)
		assert_int_equal(plan_build_status(&a, reduce_algos[ai], err, sizeof(err)),
				 WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(err, "root"));
	a.coll = WT_COLL_GATHER;
	assert_int_equal(plan_build_status(&a, "binomial", err, sizeof(err)), WEFT_ERR_INVALID_ARG);
	/* A rank that sends itself a different count than it expects. */
	a = (wt_sched_args_t){.coll = WT_COLL_ALLTOALLV,
			      .dtype = WEFT_INT32,
			      .size = 2,
			      .sendcounts = c,
			      .sdispls = d,
			      .recvcounts = d,
			      .rdispls = d};
	assert_int_equal(plan_build_status(&a, "pairwise", err, sizeof(err)), WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(err, "itself"));
}

/* Plan shapes: message counts the algorithms promise. */
static size_t net_steps(const wt_sched_plan_t *p, int type)
{
	size_t k = 0;

	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++)
		k += wt_sched_plan_step(p, i)->type == type;
	return k;
}

static void test_plan_shapes(void **state)
{
	wt_sched_args_t a = {.count = 1000, .dtype = WEFT_INT32, .op = WEFT_SUM};
	char err[256];

	(void)state;
	for (a.size = 1; a.size <= MAX_RANKS; a.size++) {
		size_t lg = 0, nsend = 0, nrecv = 0;
		wt_sched_plan_t *p;

		while (((size_t)1 << lg) < (size_t)a.size)
			lg++;
		/* Bruck: one message each way per round; barrier likewise. */
		for (a.rank = 0; a.rank < a.size; a.rank++) {
			a.coll = WT_COLL_ALLTOALL;
			assert_int_equal(wt_sched_plan_build(&a, wt_sched_algo_select(&a, "bruck"),
							     &p, err, sizeof(err)),
					 WEFT_OK);
			assert_int_equal(net_steps(p, WT_SCHED_SEND), lg);
			assert_int_equal(net_steps(p, WT_SCHED_RECV), lg);
			wt_sched_plan_unref(p);
			a.coll = WT_COLL_BARRIER;
			assert_int_equal(wt_sched_plan_build(&a, NULL, &p, err, sizeof(err)),
					 WEFT_OK);
			assert_string_equal(wt_sched_plan_algo(p), "dissemination");
			assert_int_equal(net_steps(p, WT_SCHED_SEND), lg);
			assert_int_equal(net_steps(p, WT_SCHED_RECV), lg);
			wt_sched_plan_unref(p);
			/* Binomial broadcast: every rank but the root receives once. */
			a.coll = WT_COLL_BROADCAST;
			a.root = a.size / 2;
			assert_int_equal(wt_sched_plan_build(&a,
							     wt_sched_algo_select(&a, "binomial"),
							     &p, err, sizeof(err)),
					 WEFT_OK);
			nsend += net_steps(p, WT_SCHED_SEND);
			nrecv += net_steps(p, WT_SCHED_RECV);
			assert_int_equal(net_steps(p, WT_SCHED_RECV), a.rank == a.root ? 0 : 1);
			assert_true(net_steps(p, WT_SCHED_SEND) <= lg);
			wt_sched_plan_unref(p);
			a.root = 0;
		}
		assert_int_equal(nsend, (size_t)a.size - 1);
		assert_int_equal(nrecv, (size_t)a.size - 1);
	}
}

/* Steps with the streaming hint, and whether every RECV and the own COPY carry it. */
static size_t hinted(const wt_sched_plan_t *p, int type)
{
	size_t k = 0;

	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(p, i);

		k += s->type == type && s->wire == WT_SCHED_COPY_STREAM;
	}
	return k;
}

/* A pairwise alltoall whose RECV reaches WT_SCHED_STREAM_MIN stores every block around the
 * caches (each lands once and is not read again); one element less, none. Both run end to
 * end with their results checked. */
static void test_alltoall_stream(void **state)
{
	(void)state;
	for (int n = 2; n <= 3; n++) {
		size_t big = (WT_SCHED_STREAM_MIN + 4 * (size_t)n - 1) / (4 * (size_t)n);

		for (size_t count = big - 1; count <= big; count++) {
			int want = count == big;

			for (int r = 0; r < n; r++) {
				wt_sched_args_t a = st_args(WT_COLL_ALLTOALL, count, WEFT_INT32,
							    WEFT_SUM, r, n, 0, 0);
				wt_sched_plan_t *p;

				st_build(&a, wt_sched_algo_select(&a, "pairwise"), "stream", &p);
				assert_int_equal(hinted(p, WT_SCHED_RECV),
						 want ? net_steps(p, WT_SCHED_RECV) : 0);
				assert_int_equal(hinted(p, WT_SCHED_COPY), want ? 1 : 0);
				wt_sched_plan_unref(p);
			}
			cfg_t c = {.coll = WT_COLL_ALLTOALL,
				   .algo = "pairwise",
				   .n = n,
				   .count = count,
				   .dt = WEFT_INT32,
				   .op = WEFT_SUM,
				   .seed = 77 + count,
				   .late = -1};

			run_coll(&c);
		}
	}
}

/* Under a latency-heavy cost model Bruck wins small alltoalls and the chain large
 * broadcasts and reduces; the binomial trees win small ones. */
static void test_cost_choice(void **state)
{
	const wt_sched_cost_t cost = {.alpha = 1e-5, .beta = 1e-9, .gamma = 1e-10};
	wt_sched_args_t a = {.coll = WT_COLL_ALLTOALL, .count = 1, .dtype = WEFT_INT32, .size = 32};
	const wt_sched_algo_t *algo = NULL;
	char err[128];

	(void)state;
	assert_int_equal(wt_sched_algo_choose(&a, NULL, &cost, &algo, err, sizeof(err)), WEFT_OK);
	assert_string_equal(algo->name, "bruck");
	a.count = 1 << 20;
	assert_int_equal(wt_sched_algo_choose(&a, NULL, &cost, &algo, err, sizeof(err)), WEFT_OK);
	assert_string_equal(algo->name, "pairwise");
	for (int coll = WT_COLL_BROADCAST; coll <= WT_COLL_REDUCE; coll++) {
		a.coll = (wt_sched_coll_t)coll;
		a.size = 8;
		a.count = 4 << 20;
		assert_int_equal(wt_sched_algo_choose(&a, NULL, &cost, &algo, err, sizeof(err)),
				 WEFT_OK);
		assert_string_equal(algo->name, "chain");
		a.count = 16;
		assert_int_equal(wt_sched_algo_choose(&a, NULL, &cost, &algo, err, sizeof(err)),
				 WEFT_OK);
		assert_string_equal(algo->name, "binomial");
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_refusals),
	    cmocka_unit_test(test_plan_shapes),
	    cmocka_unit_test(test_cost_choice),
	    cmocka_unit_test(test_seeds),
	    cmocka_unit_test(test_bcast_binomial),
	    cmocka_unit_test(test_bcast_chain),
	    cmocka_unit_test(test_reduce_binomial),
	    cmocka_unit_test(test_reduce_chain),
	    cmocka_unit_test(test_reduce_dtypes_ops),
	    cmocka_unit_test(test_reduce_order),
	    cmocka_unit_test(test_gather_binomial),
	    cmocka_unit_test(test_scatter_binomial),
	    cmocka_unit_test(test_alltoall_pairwise),
	    cmocka_unit_test(test_alltoall_bruck),
	    cmocka_unit_test(test_alltoall_stream),
	    cmocka_unit_test(test_alltoallv_pairwise),
	    cmocka_unit_test(test_barrier_dissemination),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
