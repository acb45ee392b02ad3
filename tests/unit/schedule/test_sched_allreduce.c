/* Allreduce algorithms run end to end on the simulated network (tests/unit/schedule):
 * every rank count 1..17, many counts, dtypes, ops and random delivery orders, compared
 * exactly with a reference computed here. */
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

#define MAX_RANKS 17

typedef struct {
	int n;
	size_t count;
	weft_dtype_t dt;
	weft_op_t op;
	int in_place;
	size_t seg;
	const char *algo; /* NULL: default selection */
	uint64_t seed;
	int arbitrary; /* arbitrary floats (and NaNs): check only that ranks agree bitwise */
} cfg_t;

/* Inputs whose reduction is exact in every order (see st_exact_input). */
static int64_t input(int r, size_t i, weft_op_t op, weft_dtype_t dt)
{
	return st_exact_input(st_hash((uint64_t)r, i), r, i, op, dt);
}

/* Arbitrary finite floats with fractions, and for MIN / MAX some NaNs with different
 * payloads: results depend on evaluation order, so only agreement can be checked. */
static double arbitrary(int r, size_t i, weft_op_t op)
{
	return st_arbitrary(st_arbitrary_hash(r, i), op);
}

static void fill_input(const cfg_t *c, uint8_t *buf, int r)
{
	st_fill_input(buf, c->count, c->dt, c->op, r, input, c->arbitrary ? arbitrary : NULL);
}

static void reference(const cfg_t *c, uint8_t *out)
{
	size_t es = wt_util_dtype_size(c->dt);

	for (size_t i = 0; i < c->count; i++)
		st_reduce_ref(input, c->n, i, c->op, c->dt, out + i * es);
}

static void cfg_name(const cfg_t *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s n=%d count=%zu %s %s in_place=%d seg=%zu seed=%llu",
		 c->algo ? c->algo : "default", c->n, c->count, wt_util_dtype_name(c->dt),
		 wt_util_op_name(c->op), c->in_place, c->seg, (unsigned long long)c->seed);
}

typedef struct {
	uint8_t *send[MAX_RANKS], *recv[MAX_RANKS];
	st_execs_t x;
} ranks_t;

static void setup_rank(const cfg_t *c, ranks_t *R, int r, const wt_sched_algo_t *algo,
		       const char *name)
{
	size_t es = wt_util_dtype_size(c->dt), bytes = c->count * es;
	wt_sched_args_t a =
	    st_args(WT_COLL_ALLREDUCE, c->count, c->dt, c->op, r, c->n, c->in_place, c->seg);

	R->send[r] = st_alloc(bytes + 1);
	R->recv[r] = st_alloc(bytes + 1);
	fill_input(c, R->send[r], r);
	if (c->in_place)
		memcpy(R->recv[r], R->send[r], bytes);
	else
		memset(R->recv[r], 0xa5, bytes);
	st_build(&a, algo, name, &R->x.plan[r]);
}

/* Out of place, SEND must still hold the input. */
static void check_send_kept(const cfg_t *c, const ranks_t *R, int r, const char *name)
{
	size_t bytes = c->count * wt_util_dtype_size(c->dt);
	uint8_t *orig;

	if (c->in_place)
		return;
	orig = st_alloc(bytes + 1);
	fill_input(c, orig, r);
	if (memcmp(orig, R->send[r], bytes))
		fail_msg("%s: rank %d send buffer modified", name, r);
	free(orig);
}

static void run_allreduce(const cfg_t *c)
{
	size_t es = wt_util_dtype_size(c->dt), bytes = c->count * es;
	wt_sched_args_t a0 = st_args(WT_COLL_ALLREDUCE, c->count, c->dt, c->op, 0, c->n, 0, 0);
	const wt_sched_algo_t *algo = c->algo ? wt_sched_algo_select(&a0, c->algo) : NULL;
	uint64_t rng = c->seed + 1;
	uint8_t *ref = st_alloc(bytes + 1);
	ranks_t R = {.x = {.n = c->n, .sim = simnet_new(c->n, c->seed)}};
	int order[MAX_RANKS];
	char name[200];

	cfg_name(c, name, sizeof(name));
	assert_true(c->n <= MAX_RANKS);
	if (c->algo)
		assert_non_null(algo);
	if (!c->arbitrary)
		reference(c, ref);
	for (int r = 0; r < c->n; r++)
		setup_rank(c, &R, r, algo, name);
	st_random_order(order, c->n, &rng);
	/* Tag base with high bits set checks that the message index stays in the low bits. */
	for (int k = 0; k < c->n; k++) {
		int r = order[k];

		st_start(&R.x, r, (uint64_t)0xabc << WT_SCHED_TAG_MSG_BITS,
			 c->in_place ? R.recv[r] : R.send[r], R.recv[r]);
	}
	st_run_checked(&R.x, &rng, 97, 0);
	if (c->arbitrary)
		memcpy(ref, R.recv[0], bytes); /* every rank must match rank 0 */
	for (int r = 0; r < c->n; r++) {
		st_check_done(&R.x, r, name);
		st_check_bytes(name, r, "RECV", R.recv[r], ref, bytes, es);
		check_send_kept(c, &R, r, name);
		st_release(&R.x, r, 1);
		free(R.send[r]);
		free(R.recv[r]);
	}
	simnet_free(R.x.sim);
	free(ref);
}

static const char *const algos[] = {"recursive_doubling", "ring"};

/* Every rank count, both algorithms, the edge counts, in place or not, many seeds. */
static void test_ranks_counts_seeds(void **state)
{
	(void)state;
	for (int n = 1; n <= MAX_RANKS; n++) {
		size_t counts[] = {0, 1, 2, (size_t)n - 1, (size_t)n, 7, 1000};

		for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++)
			for (int ai = 0; ai < 2; ai++)
				for (int ip = 0; ip < 2; ip++)
					for (uint64_t seed = 1; seed <= 24; seed++) {
						cfg_t c = {n,	       counts[ci],
							   WEFT_INT32, WEFT_SUM,
							   ip,	       0,
							   algos[ai],  seed * 1000 + (uint64_t)n};

						run_allreduce(&c);
					}
	}
}

static const weft_dtype_t dtypes[] = {WEFT_INT32,   WEFT_INT64,	  WEFT_UINT8,	WEFT_FLOAT32,
				      WEFT_FLOAT64, WEFT_FLOAT16, WEFT_BFLOAT16};
static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG};

/* Every dtype and op; the rank counts and counts vary with the combination. */
static void test_dtypes_ops(void **state)
{
	uint64_t seed = 7;

	(void)state;
	for (size_t di = 0; di < sizeof(dtypes) / sizeof(dtypes[0]); di++)
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
			for (int n = 1; n <= MAX_RANKS; n++) {
				size_t counts[] = {1, (size_t)n, 7, 1000};

				for (size_t ci = 0; ci < 4; ci++)
					for (int ai = 0; ai < 2; ai++) {
						cfg_t c = {n,	      counts[ci],      dtypes[di],
							   ops[oi],   (int)(seed & 1), 0,
							   algos[ai], seed++};

						run_allreduce(&c);
					}
			}
}

/* Large counts with small segments: many pipelined steps per chunk, segment sizes that
 * are not multiples of the element size, and the default selection. */
static void test_segments(void **state)
{
	static const int ns[] = {2, 3, 5, 8, 16};
	static const struct {
		size_t count, seg;
		weft_dtype_t dt;
		weft_op_t op;
	} shapes[] = {
	    {30000, 4096, WEFT_INT32, WEFT_SUM}, {10001, 1000, WEFT_FLOAT64, WEFT_AVG},
	    {1201, 3, WEFT_BFLOAT16, WEFT_MAX},	 {20000, 777, WEFT_FLOAT16, WEFT_SUM},
	    {30001, 256, WEFT_UINT8, WEFT_PROD}, {50000, 0, WEFT_FLOAT32, WEFT_MIN},
	};
	uint64_t seed = 99;

	(void)state;
	for (size_t si = 0; si < sizeof(shapes) / sizeof(shapes[0]); si++)
		for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++)
			for (int ip = 0; ip < 2; ip++) {
				cfg_t c = {ns[ni], shapes[si].count, shapes[si].dt, shapes[si].op,
					   ip,	   shapes[si].seg,   "ring",	    seed++};

				run_allreduce(&c);
				c.algo = NULL;
				c.seed = seed++;
				run_allreduce(&c);
			}
}

/* Order-dependent inputs: every rank must still end with the same bits. */
static void test_bitwise_agreement(void **state)
{
	static const weft_dtype_t fdt[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_FLOAT16, WEFT_BFLOAT16};
	uint64_t seed = 500;

	(void)state;
	for (size_t di = 0; di < 4; di++)
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
			for (int n = 2; n <= MAX_RANKS; n++)
				for (int ai = 0; ai < 2; ai++) {
					cfg_t c = {.n = n,
						   .count = 300,
						   .dt = fdt[di],
						   .op = ops[oi],
						   .in_place = (int)(seed & 1),
						   .seg = 64,
						   .algo = algos[ai],
						   .seed = seed++,
						   .arbitrary = 1};

					run_allreduce(&c);
				}
}

static void test_selection(void **state)
{
	wt_sched_args_t a = {
	    .coll = WT_COLL_ALLREDUCE, .dtype = WEFT_FLOAT32, .op = WEFT_SUM, .size = 4};
	size_t n = 0;
	const wt_sched_algo_t *t = wt_sched_algo_table(&n);

	(void)state;
	assert_true(n >= 2);
	for (size_t i = 0; i < n; i++) {
		assert_non_null(t[i].name);
		assert_non_null(t[i].build);
		/* min > max marks an algorithm only a cost model or WEFT_ALGO picks. */
		assert_true(t[i].min_bytes <= t[i].max_bytes || t[i].max_bytes == 0);
	}
	a.count = 16;
	assert_string_equal(wt_sched_algo_select(&a, NULL)->name, "recursive_doubling");
	a.count = 1 << 20;
	assert_string_equal(wt_sched_algo_select(&a, NULL)->name, "ring");
	assert_string_equal(wt_sched_algo_select(&a, "recursive_doubling")->name,
			    "recursive_doubling");
	assert_string_equal(wt_sched_algo_select(&a, "RING")->name, "ring");
	assert_string_equal(wt_sched_algo_select(&a, "")->name, "ring");
	assert_null(wt_sched_algo_select(&a, "bruck"));
	a.count = 0;
	assert_non_null(wt_sched_algo_select(&a, NULL));
	/* Every size lands in exactly one default range. */
	for (size_t bytes = 0; bytes < (1u << 22); bytes = bytes * 2 + 1) {
		int hits = 0;

		for (size_t i = 0; i < n; i++)
			hits += t[i].coll == WT_COLL_ALLREDUCE && bytes >= t[i].min_bytes &&
				bytes <= t[i].max_bytes;
		assert_int_equal(hits, 1);
	}
	assert_string_equal(wt_sched_coll_name(WT_COLL_ALLREDUCE), "allreduce");
}

/* Plans in place never name SEND; size 1 is a copy or nothing. */
static void test_plan_shapes(void **state)
{
	wt_sched_args_t a = {.coll = WT_COLL_ALLREDUCE,
			     .count = 100,
			     .dtype = WEFT_INT32,
			     .op = WEFT_SUM,
			     .size = 1};
	wt_sched_plan_t *p;
	char err[128];

	(void)state;
	for (int ai = 0; ai < 2; ai++) {
		const wt_sched_algo_t *algo = wt_sched_algo_select(&a, algos[ai]);

		a.size = 1;
		a.rank = 0;
		a.in_place = 0;
		assert_int_equal(wt_sched_plan_build(&a, algo, &p, err, sizeof(err)), WEFT_OK);
		assert_int_equal(wt_sched_plan_nsteps(p), 1);
		assert_int_equal(wt_sched_plan_step(p, 0)->type, WT_SCHED_COPY);
		wt_sched_plan_unref(p);
		a.in_place = 1;
		assert_int_equal(wt_sched_plan_build(&a, algo, &p, err, sizeof(err)), WEFT_OK);
		assert_int_equal(wt_sched_plan_nsteps(p), 0);
		wt_sched_plan_unref(p);
		for (a.size = 2; a.size <= 9; a.size++)
			for (a.rank = 0; a.rank < a.size; a.rank++) {
				assert_int_equal(
				    wt_sched_plan_build(&a, algo, &p, err, sizeof(err)), WEFT_OK);
				for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
					const wt_sched_step_t *s = wt_sched_plan_step(p, i);

					assert_int_not_equal(s->buf, WT_SCHED_BUF_SEND);
					if (s->type == WT_SCHED_REDUCE || s->type == WT_SCHED_COPY)
						assert_int_not_equal(s->src_buf, WT_SCHED_BUF_SEND);
				}
				wt_sched_plan_unref(p);
			}
	}
}

/* argv[1], if given, runs only the tests it names (a cmocka pattern), so meson can run
 * the groups as separate tests in parallel. */
int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_selection),	       cmocka_unit_test(test_plan_shapes),
	    cmocka_unit_test(test_ranks_counts_seeds), cmocka_unit_test(test_dtypes_ops),
	    cmocka_unit_test(test_segments),	       cmocka_unit_test(test_bitwise_agreement),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
