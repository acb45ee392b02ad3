/* The one-shot allreduce on the simulated network (tests/unit/schedule): rank counts 1..33,
 * counts 0, 1, 7 and large, every dtype and op, in place or not, random delivery orders;
 * results exact, and for order-dependent floats bitwise equal to the rank-order sum. */
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

typedef struct {
	int n;
	size_t count;
	weft_dtype_t dt;
	weft_op_t op;
	int in_place;
	uint64_t seed;
	int arbitrary; /* order-dependent floats (and NaNs): compare with the rank-order sum */
} cfg_t;

static int64_t input(int r, size_t i, weft_op_t op, weft_dtype_t dt)
{
	return st_exact_input(st_hash((uint64_t)r + 7, i), r, i, op, dt);
}

static double arbitrary(int r, size_t i, weft_op_t op)
{
	return st_arbitrary(st_arbitrary_hash(r, i), op);
}

static void fill_input(const cfg_t *c, uint8_t *buf, int r)
{
	st_fill_input(buf, c->count, c->dt, c->op, r, input, c->arbitrary ? arbitrary : NULL);
}

/* The exact result, or for arbitrary inputs the library's kernels applied in rank order
 * 0..n-1, which is what the algorithm promises bit for bit. */
static void reference(const cfg_t *c, uint8_t *out)
{
	size_t es = wt_util_dtype_size(c->dt), bytes = c->count * es;
	weft_op_t op = c->op == WEFT_AVG ? WEFT_SUM : c->op;
	uint8_t *v;

	if (!c->arbitrary) {
		for (size_t i = 0; i < c->count; i++)
			st_reduce_ref(input, c->n, i, c->op, c->dt, out + i * es);
		return;
	}
	v = st_alloc(bytes + 1);
	fill_input(c, out, 0);
	for (int r = 1; r < c->n; r++) {
		fill_input(c, v, r);
		wt_util_reduce(out, v, c->count, c->dt, op);
	}
	if (c->op == WEFT_AVG)
		wt_util_scale_div(out, c->count, c->dt, c->n);
	free(v);
}

static void run_oneshot(const cfg_t *c)
{
	size_t es = wt_util_dtype_size(c->dt), bytes = c->count * es;
	wt_sched_args_t a0 = st_args(WT_COLL_ALLREDUCE, c->count, c->dt, c->op, 0, c->n, 0, 0);
	const wt_sched_algo_t *algo = wt_sched_algo_select(&a0, "oneshot");
	uint64_t rng = c->seed + 1;
	uint8_t *ref = st_alloc(bytes + 1), *orig = st_alloc(bytes + 1);
	uint8_t *send[ST_MAX_RANKS], *recv[ST_MAX_RANKS];
	st_execs_t x = {.n = c->n, .sim = simnet_new(c->n, c->seed)};
	int order[ST_MAX_RANKS];
	char name[200];

	snprintf(name, sizeof(name), "oneshot n=%d count=%zu %s %s in_place=%d seed=%llu%s", c->n,
		 c->count, wt_util_dtype_name(c->dt), wt_util_op_name(c->op), c->in_place,
		 (unsigned long long)c->seed, c->arbitrary ? " arbitrary" : "");
	assert_non_null(algo);
	assert_true(c->n <= ST_MAX_RANKS);
	reference(c, ref);
	for (int r = 0; r < c->n; r++) {
		wt_sched_args_t a =
		    st_args(WT_COLL_ALLREDUCE, c->count, c->dt, c->op, r, c->n, c->in_place, 0);

		send[r] = st_alloc(bytes + 1);
		recv[r] = st_alloc(bytes + 1);
		fill_input(c, send[r], r);
		if (c->in_place)
			memcpy(recv[r], send[r], bytes);
		else
			memset(recv[r], 0xa5, bytes);
		st_build(&a, algo, name, &x.plan[r]);
	}
	st_random_order(order, c->n, &rng);
	for (int k = 0; k < c->n; k++) {
		int r = order[k];

		st_start(&x, r, (uint64_t)0x5a5 << WT_SCHED_TAG_MSG_BITS,
			 c->in_place ? recv[r] : send[r], recv[r]);
	}
	st_run_checked(&x, &rng, 31, 0);
	for (int r = 0; r < c->n; r++) {
		st_check_done(&x, r, name);
		st_check_bytes(name, r, "RECV", recv[r], ref, bytes, es);
		if (!c->in_place) {
			fill_input(c, orig, r);
			st_check_bytes(name, r, "SEND (must be kept)", send[r], orig, bytes, es);
		}
		st_release(&x, r, 1);
		free(send[r]);
		free(recv[r]);
	}
	simnet_free(x.sim);
	free(ref);
	free(orig);
}

static const weft_dtype_t dtypes[] = {WEFT_INT8,    WEFT_UINT8,	 WEFT_INT32,   WEFT_UINT32,
				      WEFT_INT64,   WEFT_UINT64, WEFT_FLOAT16, WEFT_BFLOAT16,
				      WEFT_FLOAT32, WEFT_FLOAT64};
static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG};

/* Every rank count up to 33 with the edge counts, in place or not, two seeds each. */
static void test_ranks_counts(void **state)
{
	static const size_t counts[] = {0, 1, 7, 1000};
	uint64_t seed = 1;

	(void)state;
	for (int n = 1; n <= ST_MAX_RANKS; n++)
		for (size_t ci = 0; ci < 4; ci++)
			for (int ip = 0; ip < 2; ip++)
				for (int s = 0; s < 2; s++) {
					cfg_t c = {.n = n,
						   .count = counts[ci],
						   .dt = WEFT_INT32,
						   .op = WEFT_SUM,
						   .in_place = ip,
						   .seed = seed++};

					run_oneshot(&c);
				}
}

static void test_dtypes_ops(void **state)
{
	static const int ns[] = {2, 3, 4, 5, 8, 13};
	uint64_t seed = 100;

	(void)state;
	for (size_t di = 0; di < sizeof(dtypes) / sizeof(dtypes[0]); di++)
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
			for (size_t ni = 0; ni < sizeof(ns) / sizeof(ns[0]); ni++) {
				cfg_t c = {.n = ns[ni],
					   .count = 37,
					   .dt = dtypes[di],
					   .op = ops[oi],
					   .in_place = (int)(seed & 1),
					   .seed = seed++};

				run_oneshot(&c);
			}
}

/* Order-dependent floats and NaN payloads: every rank ends with exactly the rank-order
 * reduction, whatever order the messages arrived in. */
static void test_determinism(void **state)
{
	static const weft_dtype_t fdt[] = {WEFT_FLOAT32, WEFT_FLOAT64, WEFT_FLOAT16, WEFT_BFLOAT16};
	uint64_t seed = 700;

	(void)state;
	for (size_t di = 0; di < 4; di++)
		for (size_t oi = 0; oi < sizeof(ops) / sizeof(ops[0]); oi++)
			for (int n = 2; n <= 9; n++)
				for (int s = 0; s < 2; s++) {
					cfg_t c = {.n = n,
						   .count = 129,
						   .dt = fdt[di],
						   .op = ops[oi],
						   .in_place = s,
						   .seed = seed++,
						   .arbitrary = 1};

					run_oneshot(&c);
				}
}

/* Tiny vectors at a few ranks pick oneshot under the shm costs; large ones or many ranks
 * never do. */
static void test_cost_selection(void **state)
{
	const wt_sched_cost_t shm = {1.5e-6, 1 / 6e9, 1 / 8e9};
	const wt_sched_algo_t *a = NULL;
	char err[160];

	(void)state;
	for (int n = 3; n <= 8; n++) {
		wt_sched_args_t args =
		    st_args(WT_COLL_ALLREDUCE, 2, WEFT_FLOAT32, WEFT_SUM, 0, n, 0, 0);

		assert_int_equal(wt_sched_algo_choose(&args, NULL, &shm, &a, err, sizeof(err)),
				 WEFT_OK);
		assert_string_equal(a->name, "oneshot");
	}
	for (int n = 2; n <= 33; n++) {
		wt_sched_args_t args =
		    st_args(WT_COLL_ALLREDUCE, 1 << 20, WEFT_FLOAT32, WEFT_SUM, 0, n, 0, 0);

		assert_int_equal(wt_sched_algo_choose(&args, NULL, &shm, &a, err, sizeof(err)),
				 WEFT_OK);
		assert_string_not_equal(a->name, "oneshot");
	}
	{
		wt_sched_args_t args =
		    st_args(WT_COLL_ALLREDUCE, 2, WEFT_FLOAT32, WEFT_SUM, 0, 32, 0, 0);

		assert_int_equal(wt_sched_algo_choose(&args, NULL, &shm, &a, err, sizeof(err)),
				 WEFT_OK);
		assert_string_not_equal(a->name, "oneshot");
	}
}

int main(int argc, char **argv)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_ranks_counts),
	    cmocka_unit_test(test_dtypes_ops),
	    cmocka_unit_test(test_determinism),
	    cmocka_unit_test(test_cost_selection),
	};

	if (argc > 1)
		cmocka_set_test_filter(argv[1]);
	return cmocka_run_group_tests(tests, NULL, NULL);
}
