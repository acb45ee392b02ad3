/* Wire compression of float32 allreduce (tests/unit/schedule): ring plans that move bf16 /
 * fp16 over the simulated network, checked exactly where the inputs allow it, against the
 * documented error bound otherwise, and for bit-identical results on every rank. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "layers/schedule/exec.h"
#include "layers/schedule/plan.h"
#include "lib/util/dtype.h"
#include "tests/unit/schedule/schedtest.h"
#include "tests/unit/schedule/simnet.h"

#define MAX_RANKS 17

typedef enum { IN_SMALL_INT, IN_ARBITRARY, IN_HUGE } input_t;

typedef struct {
	int n;
	size_t count;
	weft_dtype_t dt;
	weft_op_t op;
	int compress;
	int in_place;
	size_t seg;
	const char *algo;
	uint64_t seed;
	input_t in;
} cfg_t;

static uint64_t mix(int r, size_t i, uint64_t seed)
{
	uint64_t h = ((uint64_t)r + 1) * 0x9e3779b97f4a7c15ull ^ (i + 3) * 0xbf58476d1ce4e5b9ull ^
		     seed * 0x94d049bb133111ebull;

	h ^= h >> 31;
	h *= 0xd6e8feb86659fd93ull;
	h ^= h >> 32;
	return h;
}

/* Small integers whose every partial result is exact in bf16 (8 bits) and fp16. */
static double small_int(int r, size_t i, weft_op_t op)
{
	uint64_t h = mix(r, i, 0);

	switch (op) {
	case WEFT_SUM:
	case WEFT_AVG:
		return (double)(int)(h % 5) - 2;
	case WEFT_PROD:
		if (h % 9 == 0)
			return 2; /* at most 17 factors of 2: 2^17 is exact in both formats */
		return (h & 16) ? -1 : 1;
	default:
		return (double)(int)(h % 201) - 100;
	}
}

/* Fractions over a wide range of magnitudes, some tiny (fp16 subnormals). */
static double arbitrary(int r, size_t i, uint64_t seed)
{
	uint64_t h = mix(r, i, seed);
	double v = ((double)(h % 2000001) - 1000000.0) / 997.0;

	if (h % 7 == 0)
		v *= 1e-6;
	return v;
}

static float input(const cfg_t *c, int r, size_t i)
{
	switch (c->in) {
	case IN_SMALL_INT:
		return (float)small_int(r, i, c->op);
	case IN_HUGE:
		return 40000.0f;
	default:
		return (float)arbitrary(r, i, c->seed);
	}
}

/* The wire format's rounding of v, back in float32. */
static float round_wire(float v, int compress)
{
	uint16_t h;
	float out;

	if (compress == WT_SCHED_COMPRESS_NONE)
		return v;
	assert_int_equal(
	    wt_util_f32_narrow(&h, &v, 1,
			       compress == WT_SCHED_COMPRESS_FP16 ? WEFT_FLOAT16 : WEFT_BFLOAT16),
	    0);
	assert_int_equal(
	    wt_util_f32_widen(&out, &h, 1,
			      compress == WT_SCHED_COMPRESS_FP16 ? WEFT_FLOAT16 : WEFT_BFLOAT16),
	    0);
	return out;
}

static void cfg_name(const cfg_t *c, char *buf, size_t len)
{
	snprintf(buf, len,
		 "%s n=%d count=%zu %s %s compress=%s in_place=%d seg=%zu seed=%llu in=%d", c->algo,
		 c->n, c->count, wt_util_dtype_name(c->dt), wt_util_op_name(c->op),
		 wt_sched_compress_name(c->compress), c->in_place, c->seg,
		 (unsigned long long)c->seed, (int)c->in);
}

/* The exact result of element i (float64), and the bound on |result - exact|. */
static void exact(const cfg_t *c, size_t i, double *val, double *bound)
{
	double u = c->compress == WT_SCHED_COMPRESS_FP16 ? 0x1p-11 : 0x1p-8;
	double acc = input(c, 0, i), abs_sum = fabs(acc), g;

	for (int r = 1; r < c->n; r++) {
		double v = input(c, r, i);

		abs_sum += fabs(v);
		if (c->op == WEFT_SUM || c->op == WEFT_AVG)
			acc += v;
		else if (c->op == WEFT_PROD)
			acc *= v;
		else if (c->op == WEFT_MIN)
			acc = v < acc ? v : acc;
		else
			acc = v > acc ? v : acc;
	}
	/* The bound documented in allreduce_ring.c, plus fp16's subnormal absolute term. */
	g = pow(1 + u, c->n) * pow(1 + 0x1p-24, c->n) - 1;
	*bound = g * abs_sum;
	if (c->compress == WT_SCHED_COMPRESS_FP16)
		*bound += c->n * 0x1p-25;
	if (c->op == WEFT_AVG) {
		acc /= c->n;
		*bound /= c->n;
	}
	*val = acc;
}

/* What exact inputs must give, bit for bit: integers are exact all the way, AVG divides
 * in float32 before the owner's single rounding, MIN / MAX are the wire rounding. */
static float exact_result(const cfg_t *c, size_t i)
{
	double v, b;

	exact(c, i, &v, &b);
	if (c->op == WEFT_AVG) {
		exact(&(cfg_t){.n = c->n, .op = WEFT_SUM, .in = c->in, .seed = c->seed}, i, &v, &b);
		return round_wire((float)v / (float)c->n, c->compress);
	}
	return round_wire((float)v, c->compress);
}

typedef struct {
	float *send[MAX_RANKS], *recv[MAX_RANKS];
	st_execs_t x;
} ranks_t;

static wt_sched_args_t cfg_args(const cfg_t *c, int r)
{
	wt_sched_args_t a =
	    st_args(WT_COLL_ALLREDUCE, c->count, c->dt, c->op, r, c->n, c->in_place, c->seg);

	a.compress = c->compress;
	return a;
}

static void setup_rank(const cfg_t *c, ranks_t *R, int r, const wt_sched_algo_t *algo,
		       const char *name)
{
	wt_sched_args_t a = cfg_args(c, r);
	size_t bytes = c->count * sizeof(float);

	R->send[r] = st_alloc(bytes + sizeof(float));
	R->recv[r] = st_alloc(bytes + sizeof(float));
	for (size_t i = 0; i < c->count; i++)
		R->send[r][i] = input(c, r, i);
	if (c->in_place)
		memcpy(R->recv[r], R->send[r], bytes);
	else
		memset(R->recv[r], 0xa5, bytes);
	st_build(&a, algo, name, &R->x.plan[r]);
}

static void check_results(const cfg_t *c, ranks_t *R, const char *name)
{
	for (size_t i = 0; i < c->count; i++) {
		double want, bound;
		float got0 = R->recv[0][i];

		for (int r = 1; r < c->n; r++)
			if (memcmp(&R->recv[r][i], &got0, sizeof(float)))
				fail_msg("%s: element %zu differs between rank 0 (%a) and rank %d "
					 "(%a)",
					 name, i, (double)got0, r, (double)R->recv[r][i]);
		if (c->in == IN_HUGE) {
			if (!(isinf(got0) && got0 > 0))
				fail_msg("%s: element %zu is %g, want +inf", name, i, (double)got0);
			continue;
		}
		if (c->in == IN_SMALL_INT || c->op == WEFT_MIN || c->op == WEFT_MAX) {
			float e = c->n == 1 ? input(c, 0, i) : exact_result(c, i);

			if (memcmp(&e, &got0, sizeof(float)))
				fail_msg("%s: element %zu is %a, want exactly %a", name, i,
					 (double)got0, (double)e);
			continue;
		}
		exact(c, i, &want, &bound);
		if (fabs((double)got0 - want) > bound)
			fail_msg("%s: element %zu is %.9g, exact %.9g, error %.3g > bound %.3g",
				 name, i, (double)got0, want, fabs((double)got0 - want), bound);
	}
}

static void free_ranks(ranks_t *R)
{
	for (int r = 0; r < R->x.n; r++) {
		st_release(&R->x, r, 1);
		free(R->send[r]);
		free(R->recv[r]);
	}
	simnet_free(R->x.sim);
}

static void run(const cfg_t *c)
{
	wt_sched_args_t a0 = cfg_args(c, 0);
	const wt_sched_algo_t *algo = wt_sched_algo_select(&a0, c->algo);
	uint64_t rng = c->seed + 11;
	ranks_t R = {.x = {.n = c->n, .sim = simnet_new(c->n, c->seed)}};
	int order[MAX_RANKS];
	char name[256];

	cfg_name(c, name, sizeof(name));
	assert_true(c->n <= MAX_RANKS);
	assert_non_null(algo);
	assert_non_null(R.x.sim);
	for (int r = 0; r < c->n; r++)
		setup_rank(c, &R, r, algo, name);
	st_random_order(order, c->n, &rng);
	for (int k = 0; k < c->n; k++) {
		int r = order[k];

		st_start(&R.x, r, (uint64_t)0x5c << WT_SCHED_TAG_MSG_BITS,
			 c->in_place ? R.recv[r] : R.send[r], R.recv[r]);
	}
	simnet_run(R.x.sim);
	for (int r = 0; r < c->n; r++) {
		st_check_done(&R.x, r, name);
		if (!c->in_place)
			for (size_t i = 0; i < c->count; i++)
				if (memcmp(&R.send[r][i], &(float){input(c, r, i)}, sizeof(float)))
					fail_msg("%s: rank %d send buffer modified", name, r);
	}
	check_results(c, &R, name);
	free_ranks(&R);
}

static const int formats[] = {WT_SCHED_COMPRESS_BF16, WT_SCHED_COMPRESS_FP16};

/* (a) Small integers: exact results for every op, every rank count 1..17. */
static void test_exact_small_ints(void **state)
{
	static const size_t counts[] = {0, 1, 5, 16, 17, 33, 1000};
	static const weft_op_t ops[] = {WEFT_SUM, WEFT_AVG, WEFT_PROD, WEFT_MIN, WEFT_MAX};

	(void)state;
	for (int n = 1; n <= MAX_RANKS; n++)
		for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
			for (int f = 0; f < 2; f++) {
				cfg_t c = {.n = n,
					   .count = counts[ci],
					   .dt = WEFT_FLOAT32,
					   .op = ops[(n + ci) % 5],
					   .compress = formats[f],
					   .in_place = (int)((n + ci + (size_t)f) % 2),
					   .seg = ci % 2 ? 64 : 0,
					   .algo = "ring",
					   .seed = (uint64_t)n * 31 + ci,
					   .in = IN_SMALL_INT};

				run(&c);
			}
}

/* Every op at a few rank counts, both formats, in place and not. */
static void test_exact_ops(void **state)
{
	static const weft_op_t ops[] = {WEFT_SUM, WEFT_AVG, WEFT_PROD, WEFT_MIN, WEFT_MAX};
	static const int ns[] = {2, 3, 8, 13};

	(void)state;
	for (size_t ni = 0; ni < 4; ni++)
		for (int o = 0; o < 5; o++)
			for (int f = 0; f < 2; f++)
				for (int ip = 0; ip < 2; ip++) {
					cfg_t c = {.n = ns[ni],
						   .count = 257,
						   .dt = WEFT_FLOAT32,
						   .op = ops[o],
						   .compress = formats[f],
						   .in_place = ip,
						   .seg = 40,
						   .algo = "ring",
						   .seed = ni * 7 + (size_t)o,
						   .in = IN_SMALL_INT};

					run(&c);
				}
}

/* (b) Arbitrary floats: bit-identical across ranks, within the bound of the exact sum. */
static void test_arbitrary_bound(void **state)
{
	static const size_t counts[] = {1, 7, 100, 1001};
	static const weft_op_t ops[] = {WEFT_SUM, WEFT_AVG, WEFT_MIN, WEFT_MAX};

	(void)state;
	for (int n = 1; n <= MAX_RANKS; n++)
		for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
			for (int f = 0; f < 2; f++) {
				cfg_t c = {.n = n,
					   .count = counts[ci],
					   .dt = WEFT_FLOAT32,
					   .op = ops[(n + ci + (size_t)f) % 4],
					   .compress = formats[f],
					   .in_place = (int)(ci % 2),
					   .seg = ci == 3 ? 256 : 0,
					   .algo = "ring",
					   .seed = (uint64_t)n * 101 + ci * 3 + (size_t)f,
					   .in = IN_ARBITRARY};

				run(&c);
			}
}

/* Large vectors cut into many small segments. */
static void test_large_segments(void **state)
{
	static const int ns[] = {2, 5, 16, 17};

	(void)state;
	for (size_t ni = 0; ni < 4; ni++)
		for (int f = 0; f < 2; f++) {
			cfg_t c = {.n = ns[ni],
				   .count = 60013,
				   .dt = WEFT_FLOAT32,
				   .op = WEFT_SUM,
				   .compress = formats[f],
				   .in_place = f,
				   .seg = 4096,
				   .algo = "ring",
				   .seed = ni + 5,
				   .in = ni % 2 ? IN_ARBITRARY : IN_SMALL_INT};

			run(&c);
		}
}

/* fp16 overflow: partial sums past 65504 become inf on every rank. */
static void test_fp16_overflow(void **state)
{
	cfg_t c = {.n = 3,
		   .count = 10,
		   .dt = WEFT_FLOAT32,
		   .op = WEFT_SUM,
		   .compress = WT_SCHED_COMPRESS_FP16,
		   .algo = "ring",
		   .in = IN_HUGE};

	(void)state;
	run(&c);
}

static size_t plan_bytes(const wt_sched_plan_t *p, wt_sched_step_type_t type, size_t *nconv)
{
	size_t total = 0;

	*nconv = 0;
	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(p, i);

		if (s->type == type)
			total += s->len;
		if (s->type == WT_SCHED_NARROW || s->type == WT_SCHED_WIDEN ||
		    s->type == WT_SCHED_REDUCE_WIDEN)
			(*nconv)++;
	}
	return total;
}

/* The compressed plan moves exactly half the bytes, from SCRATCH; compress is ignored
 * (an identical plan) for other dtypes and for recursive doubling. */
static void test_plan_shape(void **state)
{
	wt_sched_args_t a = {.coll = WT_COLL_ALLREDUCE,
			     .count = 1003,
			     .dtype = WEFT_FLOAT32,
			     .op = WEFT_SUM,
			     .rank = 2,
			     .size = 5};
	const wt_sched_algo_t *ring = wt_sched_algo_select(&a, "ring");
	const wt_sched_algo_t *rd = wt_sched_algo_select(&a, "recursive_doubling");
	wt_sched_plan_t *p, *q;
	size_t nc, nc2;
	char err[256];

	(void)state;
	assert_int_equal(wt_sched_plan_build(&a, ring, &p, err, sizeof(err)), WEFT_OK);
	a.compress = WT_SCHED_COMPRESS_BF16;
	assert_int_equal(wt_sched_plan_build(&a, ring, &q, err, sizeof(err)), WEFT_OK);
	assert_int_equal(plan_bytes(q, WT_SCHED_SEND, &nc) * 2, plan_bytes(p, WT_SCHED_SEND, &nc2));
	assert_int_equal(plan_bytes(q, WT_SCHED_RECV, &nc) * 2,
			 plan_bytes(p, WT_SCHED_RECV, &nc2) +
			     plan_bytes(p, WT_SCHED_RECV_REDUCE, &nc2));
	assert_true(nc > 0);
	assert_int_equal(nc2, 0);
	assert_int_equal(wt_sched_plan_scratch_bytes(q), 1003 * 2);
	for (size_t i = 0; i < wt_sched_plan_nsteps(q); i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(q, i);

		assert_int_not_equal(s->type, WT_SCHED_RECV_REDUCE);
		if (s->type == WT_SCHED_SEND || s->type == WT_SCHED_RECV)
			assert_int_equal(s->buf, WT_SCHED_BUF_SCRATCH);
	}
	wt_sched_plan_unref(q);
	/* Another dtype: the same plan as without compression. */
	a.dtype = WEFT_FLOAT64;
	assert_int_equal(wt_sched_plan_build(&a, ring, &q, err, sizeof(err)), WEFT_OK);
	plan_bytes(q, WT_SCHED_SEND, &nc);
	assert_int_equal(nc, 0);
	assert_int_equal(wt_sched_plan_nsteps(q), wt_sched_plan_nsteps(p));
	wt_sched_plan_unref(q);
	a.dtype = WEFT_FLOAT32;
	a.compress = WT_SCHED_COMPRESS_FP16;
	assert_int_equal(wt_sched_plan_build(&a, rd, &q, err, sizeof(err)), WEFT_OK);
	plan_bytes(q, WT_SCHED_SEND, &nc);
	assert_int_equal(nc, 0);
	wt_sched_plan_unref(q);
	wt_sched_plan_unref(p);
	/* An unknown compression value is refused. */
	a.compress = 3;
	assert_int_equal(wt_sched_args_check(&a, err, sizeof(err)), WEFT_ERR_INVALID_ARG);
	assert_int_equal(wt_sched_compress_from_name("BF16"), WT_SCHED_COMPRESS_BF16);
	assert_int_equal(wt_sched_compress_from_name("fp16"), WT_SCHED_COMPRESS_FP16);
	assert_int_equal(wt_sched_compress_from_name("none"), WT_SCHED_COMPRESS_NONE);
	assert_int_equal(wt_sched_compress_from_name("fp8"), -1);
}

/* Uncompressed float32 and compression ignored (int32, recursive doubling) stay exact. */
static void test_ignored_exact(void **state)
{
	cfg_t c = {.n = 6,
		   .count = 300,
		   .dt = WEFT_FLOAT32,
		   .op = WEFT_SUM,
		   .compress = WT_SCHED_COMPRESS_BF16,
		   .algo = "recursive_doubling",
		   .in = IN_ARBITRARY};

	(void)state;
	/* Arbitrary fractions would lose bits in bf16: exactness proves no compression ran.
	 * Run and compare against a plain float32 recursive doubling run. */
	run(&(cfg_t){.n = 6,
		     .count = 300,
		     .dt = WEFT_FLOAT32,
		     .op = WEFT_MIN,
		     .compress = WT_SCHED_COMPRESS_NONE,
		     .algo = "ring",
		     .in = IN_SMALL_INT});
	{
		wt_sched_args_t a = cfg_args(&c, 0);
		const wt_sched_algo_t *rd = wt_sched_algo_select(&a, c.algo);
		ranks_t R = {.x = {.n = c.n, .sim = simnet_new(c.n, 3)}};

		for (int r = 0; r < c.n; r++)
			setup_rank(&c, &R, r, rd, "ignored compression");
		for (int r = 0; r < c.n; r++)
			st_start(&R.x, r, 0, R.send[r], R.recv[r]);
		simnet_run(R.x.sim);
		for (int r = 0; r < c.n; r++) {
			assert_int_equal(R.x.done[r].st, WEFT_OK);
			for (size_t i = 0; i < c.count; i++) {
				double acc = 0, abs_sum = 0;

				/* Float32 rounding only (6 ranks: well under 2^-20 of sum|x|);
				 * bf16 on the wire would be off by about 2^-9 of it. */
				for (int k = 0; k < c.n; k++) {
					acc += input(&c, k, i);
					abs_sum += fabs(input(&c, k, i));
				}
				assert_true(fabs(R.recv[r][i] - acc) <= 0x1p-20 * abs_sum);
				assert_memory_equal(&R.recv[r][i], &R.recv[0][i], sizeof(float));
			}
		}
		free_ranks(&R);
	}
}

/* Finalize refuses malformed conversion steps, naming the step. */
static void test_validation(void **state)
{
	wt_sched_args_t a = {.coll = WT_COLL_ALLREDUCE,
			     .count = 16,
			     .dtype = WEFT_FLOAT32,
			     .op = WEFT_SUM,
			     .rank = 0,
			     .size = 2};
	wt_sched_plan_t *p;

	(void)state;
	/* A good one: narrow 16 floats into 32 bytes of scratch and widen back. */
	p = wt_sched_plan_new(&a);
	wt_sched_scratch(p, 32);
	assert_true(wt_sched_narrow(p, WT_SCHED_BUF_SCRATCH, 0, WT_SCHED_BUF_SEND, 0, 32,
				    WEFT_BFLOAT16, 0, NULL) >= 0);
	assert_true(wt_sched_widen(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH, 0, 64,
				   WEFT_BFLOAT16, 1, (int[]){0}) >= 0);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_OK);
	assert_int_equal(wt_sched_step_src_len(p, wt_sched_plan_step(p, 0)), 64);
	assert_int_equal(wt_sched_step_src_len(p, wt_sched_plan_step(p, 1)), 32);
	wt_sched_plan_unref(p);
	/* Source beyond the scratch. */
	p = wt_sched_plan_new(&a);
	wt_sched_scratch(p, 30);
	wt_sched_reduce_widen(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH, 0, 64, WEFT_FLOAT16, 0,
			      NULL);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_ERR_INVALID_ARG);
	assert_non_null(strstr(wt_sched_plan_error(p), "step 0"));
	wt_sched_plan_unref(p);
	/* Not a 16-bit format. */
	p = wt_sched_plan_new(&a);
	wt_sched_scratch(p, 64);
	wt_sched_narrow(p, WT_SCHED_BUF_SCRATCH, 0, WT_SCHED_BUF_SEND, 0, 32, WEFT_INT32, 0, NULL);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_ERR_INVALID_ARG);
	wt_sched_plan_unref(p);
	/* Overlapping operands in one buffer. */
	p = wt_sched_plan_new(&a);
	wt_sched_widen(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_RECV, 16, 32, WEFT_FLOAT16, 0, NULL);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_ERR_INVALID_ARG);
	wt_sched_plan_unref(p);
	/* Partial elements. */
	p = wt_sched_plan_new(&a);
	wt_sched_scratch(p, 64);
	wt_sched_widen(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH, 0, 6, WEFT_FLOAT16, 0, NULL);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_ERR_INVALID_ARG);
	wt_sched_plan_unref(p);
	/* Writing SEND. */
	p = wt_sched_plan_new(&a);
	wt_sched_scratch(p, 64);
	wt_sched_widen(p, WT_SCHED_BUF_SEND, 0, WT_SCHED_BUF_SCRATCH, 0, 8, WEFT_FLOAT16, 0, NULL);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_ERR_INVALID_ARG);
	wt_sched_plan_unref(p);
	/* Not a float32 plan. */
	a.dtype = WEFT_FLOAT64;
	p = wt_sched_plan_new(&a);
	wt_sched_scratch(p, 64);
	wt_sched_widen(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SCRATCH, 0, 8, WEFT_FLOAT16, 0, NULL);
	assert_int_equal(wt_sched_plan_finalize(p), WEFT_ERR_INVALID_ARG);
	wt_sched_plan_unref(p);
}

/* The bulk kernels against the scalar conversions, including NaN, inf and rounding. */
static void test_kernels(void **state)
{
	float src[64], wide[64], acc[64];
	uint16_t h[64];

	(void)state;
	for (int i = 0; i < 64; i++)
		src[i] = (float)arbitrary(i, (size_t)i, 9) * (i % 3 ? 1.0f : 97.0f);
	src[1] = NAN;
	src[2] = INFINITY;
	src[3] = 70000.0f;
	src[4] = -0.0f;
	for (int f = 0; f < 2; f++) {
		weft_dtype_t fmt = f ? WEFT_FLOAT16 : WEFT_BFLOAT16;

		assert_int_equal(wt_util_f32_narrow(h, src, 64, fmt), 0);
		assert_int_equal(wt_util_f32_widen(wide, h, 64, fmt), 0);
		for (int i = 0; i < 64; i++) {
			uint16_t want =
			    f ? wt_util_float_to_half(src[i]) : wt_util_float_to_bf16(src[i]);
			float w = f ? wt_util_half_to_float(want) : wt_util_bf16_to_float(want);

			assert_int_equal(h[i], want);
			assert_memory_equal(&wide[i], &w, sizeof(float));
			acc[i] = 1.5f;
		}
		assert_int_equal(wt_util_f32_reduce_widen(acc, h, 64, fmt, WEFT_AVG), 0);
		for (int i = 5; i < 64; i++)
			assert_true(acc[i] == 1.5f + wide[i]);
		assert_true(isnan(acc[1]));
		assert_int_equal(wt_util_f32_reduce_widen(acc, h, 64, fmt, WEFT_MIN), 0);
		assert_true(isnan(acc[1]));
		assert_int_equal(wt_util_f32_narrow(h, src, 4, WEFT_FLOAT32), -1);
	}
	assert_true(isinf(wt_util_half_to_float(wt_util_float_to_half(70000.0f))));
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_kernels),	   cmocka_unit_test(test_validation),
	    cmocka_unit_test(test_plan_shape),	   cmocka_unit_test(test_ignored_exact),
	    cmocka_unit_test(test_fp16_overflow),  cmocka_unit_test(test_exact_small_ints),
	    cmocka_unit_test(test_exact_ops),	   cmocka_unit_test(test_arbitrary_bound),
	    cmocka_unit_test(test_large_segments),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
