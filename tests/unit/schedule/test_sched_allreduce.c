/* Allreduce algorithms run end to end on the simulated network (tests/unit/schedule):
 * every rank count 1..17, many counts, dtypes, ops and random delivery orders, compared
 * exactly with a reference computed here. */
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

typedef struct {
	int calls;
	weft_status_t st;
} done_t;

static void on_done(void *arg, weft_status_t st, const char *msg)
{
	done_t *d = arg;

	assert_non_null(msg);
	d->calls++;
	d->st = st;
}

static int is_unsigned(weft_dtype_t dt)
{
	return dt == WEFT_UINT8 || dt == WEFT_UINT32 || dt == WEFT_UINT64;
}

/* Inputs whose reduction is exact in every order: small integers for SUM / AVG, +-1
 * and a few 2s for PROD, anything representable for MIN / MAX. */
static int64_t input(int r, size_t i, weft_op_t op, weft_dtype_t dt)
{
	uint64_t h =
	    (uint64_t)r * 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull;
	int64_t v;

	h ^= h >> 31;
	switch (op) {
	case WEFT_SUM:
	case WEFT_AVG:
		return is_unsigned(dt) ? (int64_t)(h % 3) : (int64_t)(h % 5) - 2;
	case WEFT_PROD:
		if ((r * 5 + (int)(i % 7) * 3) % 7 == 0)
			return 2;
		return !is_unsigned(dt) && (h & 1) ? -1 : 1;
	default:
		v = (int64_t)(h % 201);
		return is_unsigned(dt) ? v : v - 100;
	}
}

static void store(void *p, weft_dtype_t dt, int64_t v)
{
	switch (dt) {
	case WEFT_INT8:
		*(int8_t *)p = (int8_t)v;
		break;
	case WEFT_UINT8:
		*(uint8_t *)p = (uint8_t)v;
		break;
	case WEFT_INT32:
		*(int32_t *)p = (int32_t)v;
		break;
	case WEFT_UINT32:
		*(uint32_t *)p = (uint32_t)v;
		break;
	case WEFT_INT64:
		*(int64_t *)p = v;
		break;
	case WEFT_UINT64:
		*(uint64_t *)p = (uint64_t)v;
		break;
	case WEFT_FLOAT16:
		*(uint16_t *)p = wt_util_float_to_half((float)v);
		break;
	case WEFT_BFLOAT16:
		*(uint16_t *)p = wt_util_float_to_bf16((float)v);
		break;
	case WEFT_FLOAT32:
		*(float *)p = (float)v;
		break;
	case WEFT_FLOAT64:
		*(double *)p = (double)v;
		break;
	default:
		fail_msg("dtype %d", (int)dt);
	}
}

/* Arbitrary finite floats with fractions, and for MIN / MAX some NaNs with different
 * payloads: results depend on evaluation order, so only agreement can be checked. */
static void store_arbitrary(void *p, weft_dtype_t dt, int r, size_t i, weft_op_t op)
{
	uint64_t h = ((uint64_t)r + 1) * 0xd1b54a32d192ed03ull ^ (i + 7) * 0x94d049bb133111ebull;
	double v;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	v = ((double)(h % 2000001) - 1000000.0) / 997.0;
	if ((op == WEFT_MIN || op == WEFT_MAX) && h % 5 == 0)
		v = (h & 8) ? -(double)NAN : (double)NAN;
	switch (dt) {
	case WEFT_FLOAT16:
		*(uint16_t *)p = wt_util_float_to_half((float)v);
		break;
	case WEFT_BFLOAT16:
		*(uint16_t *)p = wt_util_float_to_bf16((float)v);
		break;
	case WEFT_FLOAT32:
		*(float *)p = (float)v;
		break;
	default:
		*(double *)p = v;
		break;
	}
}

static void fill_input(const cfg_t *c, uint8_t *buf, int r)
{
	size_t es = wt_util_dtype_size(c->dt);

	for (size_t i = 0; i < c->count; i++)
		if (c->arbitrary)
			store_arbitrary(buf + i * es, c->dt, r, i, c->op);
		else
			store(buf + i * es, c->dt, input(r, i, c->op, c->dt));
}

static int is_float(weft_dtype_t dt)
{
	return dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16 || dt == WEFT_FLOAT32 ||
	       dt == WEFT_FLOAT64;
}

static void reference(const cfg_t *c, uint8_t *out)
{
	size_t es = wt_util_dtype_size(c->dt);

	for (size_t i = 0; i < c->count; i++) {
		int64_t acc = input(0, i, c->op, c->dt);

		for (int r = 1; r < c->n; r++) {
			int64_t v = input(r, i, c->op, c->dt);

			switch (c->op) {
			case WEFT_SUM:
			case WEFT_AVG:
				acc += v;
				break;
			case WEFT_PROD:
				acc *= v;
				break;
			case WEFT_MIN:
				acc = v < acc ? v : acc;
				break;
			default:
				acc = v > acc ? v : acc;
				break;
			}
		}
		if (c->op == WEFT_AVG && !is_float(c->dt))
			acc /= c->n; /* C division truncates toward zero, as WEFT_AVG does */
		store(out + i * es, c->dt, acc);
		/* Float AVG rounds once in the kernel's own arithmetic; the sum is exact. */
		if (c->op == WEFT_AVG && is_float(c->dt))
			wt_util_scale_div(out + i * es, 1, c->dt, c->n);
	}
}

static void cfg_name(const cfg_t *c, char *buf, size_t len)
{
	snprintf(buf, len, "%s n=%d count=%zu %s %s in_place=%d seg=%zu seed=%llu",
		 c->algo ? c->algo : "default", c->n, c->count, wt_util_dtype_name(c->dt),
		 wt_util_op_name(c->op), c->in_place, c->seg, (unsigned long long)c->seed);
}

/* Owing must name exactly the peers of the receives the network still holds. */
static void check_owing(simnet_t *sim, wt_sched_exec_t *ex, int rank, int n)
{
	int want[MAX_RANKS], got[MAX_RANKS];
	size_t nw = simnet_live_recv_peers(sim, rank, want, MAX_RANKS);
	size_t ng = wt_sched_exec_owing(ex, got, MAX_RANKS);

	assert_int_equal(nw, ng);
	for (size_t i = 0; i < ng; i++)
		for (size_t j = i + 1; j < ng; j++)
			if (got[j] < got[i]) {
				int t = got[i];

				got[i] = got[j];
				got[j] = t;
			}
	for (size_t i = 0; i < ng; i++) {
		assert_int_equal(want[i], got[i]);
		assert_true(got[i] >= 0 && got[i] < n && got[i] != rank);
	}
}

typedef struct {
	uint8_t *send[MAX_RANKS], *recv[MAX_RANKS], *orig;
	wt_sched_plan_t *plan[MAX_RANKS];
	wt_sched_exec_t *ex[MAX_RANKS];
	done_t done[MAX_RANKS];
} ranks_t;

static void setup_rank(const cfg_t *c, ranks_t *R, int r, const wt_sched_algo_t *algo)
{
	size_t es = wt_util_dtype_size(c->dt), bytes = c->count * es;
	wt_sched_args_t a = {.coll = WT_COLL_ALLREDUCE,
			     .count = c->count,
			     .dtype = c->dt,
			     .op = c->op,
			     .rank = r,
			     .size = c->n,
			     .in_place = c->in_place,
			     .seg_bytes = c->seg};
	char err[256] = "";

	R->send[r] = malloc(bytes + 1);
	R->recv[r] = malloc(bytes + 1);
	assert_non_null(R->send[r]);
	assert_non_null(R->recv[r]);
	fill_input(c, R->send[r], r);
	if (c->in_place)
		memcpy(R->recv[r], R->send[r], bytes);
	else
		memset(R->recv[r], 0xa5, bytes);
	if (wt_sched_plan_build(&a, algo, &R->plan[r], err, sizeof(err)))
		fail_msg("build rank %d: %s", r, err);
	if (algo)
		assert_string_equal(wt_sched_plan_algo(R->plan[r]), algo->name);
}

static void run_allreduce(const cfg_t *c)
{
	size_t es = wt_util_dtype_size(c->dt), bytes = c->count * es;
	wt_sched_args_t a0 = {.coll = WT_COLL_ALLREDUCE,
			      .count = c->count,
			      .dtype = c->dt,
			      .op = c->op,
			      .size = c->n};
	const wt_sched_algo_t *algo = c->algo ? wt_sched_algo_select(&a0, c->algo) : NULL;
	uint64_t rng = c->seed + 1;
	uint8_t *ref = malloc(bytes + 1);
	simnet_t *sim = simnet_new(c->n, c->seed);
	ranks_t R = {0};
	int order[MAX_RANKS];
	char name[200];
	size_t events = 0;

	cfg_name(c, name, sizeof(name));
	assert_true(c->n <= MAX_RANKS);
	assert_non_null(ref);
	if (c->algo)
		assert_non_null(algo);
	if (!c->arbitrary)
		reference(c, ref);
	for (int r = 0; r < c->n; r++) {
		setup_rank(c, &R, r, algo);
		order[r] = r;
	}
	for (int i = c->n - 1; i > 0; i--) {
		int j = (int)(simnet_rand(&rng) % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
	/* Tag base with high bits set checks that the message index stays in the low bits. */
	for (int k = 0; k < c->n; k++) {
		int r = order[k];
		const void *sb = c->in_place ? R.recv[r] : R.send[r];

		assert_int_equal(wt_sched_exec_start(R.plan[r], simnet_net(sim, r),
						     (uint64_t)0xabc << WT_SCHED_TAG_MSG_BITS, sb,
						     R.recv[r], on_done, &R.done[r], &R.ex[r]),
				 WEFT_OK);
	}
	while (simnet_step(sim)) {
		if (++events % 97 == 0) {
			int r = (int)(simnet_rand(&rng) % (uint64_t)c->n);

			check_owing(sim, R.ex[r], r, c->n);
		}
	}
	if (c->arbitrary)
		memcpy(ref, R.recv[0], bytes); /* every rank must match rank 0 */
	for (int r = 0; r < c->n; r++) {
		if (R.done[r].calls != 1 || R.done[r].st != WEFT_OK)
			fail_msg("%s: rank %d done %d times, status %d (deadlock?)", name, r,
				 R.done[r].calls, (int)wt_sched_exec_status(R.ex[r]));
		assert_int_equal(wt_sched_exec_status(R.ex[r]), WEFT_OK);
		assert_int_equal(simnet_live_ops(sim, r), 0);
		for (size_t i = 0; i < bytes; i++)
			if (R.recv[r][i] != ref[i])
				fail_msg("%s: rank %d byte %zu (element %zu) is %#x, want %#x",
					 name, r, i, i / es, R.recv[r][i], ref[i]);
		if (!c->in_place) {
			uint8_t *orig = malloc(bytes + 1);

			fill_input(c, orig, r);
			if (memcmp(orig, R.send[r], bytes))
				fail_msg("%s: rank %d send buffer modified", name, r);
			free(orig);
		}
		wt_sched_exec_free(R.ex[r]);
		wt_sched_plan_unref(R.plan[r]);
		free(R.send[r]);
		free(R.recv[r]);
	}
	simnet_free(sim);
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
