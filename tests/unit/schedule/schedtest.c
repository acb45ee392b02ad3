/* Helpers shared by the schedule tests (tests/unit/schedule): see schedtest.h. Test
 * support only; failures go through cmocka. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <cmocka.h>

#include "tests/unit/schedule/schedtest.h"

void st_on_done(void *arg, weft_status_t st, const char *msg)
{
	st_done_t *d = arg;

	assert_non_null(msg);
	d->calls++;
	d->st = st;
	snprintf(d->msg, sizeof(d->msg), "%s", msg);
}

int st_is_unsigned(weft_dtype_t dt)
{
	return dt == WEFT_UINT8 || dt == WEFT_UINT32 || dt == WEFT_UINT64;
}

int st_is_float(weft_dtype_t dt)
{
	return dt == WEFT_FLOAT16 || dt == WEFT_BFLOAT16 || dt == WEFT_FLOAT32 ||
	       dt == WEFT_FLOAT64;
}

void st_store_float(void *p, weft_dtype_t dt, double v)
{
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

void st_store(void *p, weft_dtype_t dt, int64_t v)
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
	default:
		if (!st_is_float(dt))
			fail_msg("dtype %d", (int)dt);
		st_store_float(p, dt, (double)v);
		break;
	}
}

int64_t st_combine(weft_op_t op, int64_t acc, int64_t v)
{
	switch (op) {
	case WEFT_SUM:
	case WEFT_AVG:
		return acc + v;
	case WEFT_PROD:
		return acc * v;
	case WEFT_MIN:
		return v < acc ? v : acc;
	default:
		return v > acc ? v : acc;
	}
}

int64_t st_exact_input(uint64_t h, int r, size_t i, weft_op_t op, weft_dtype_t dt)
{
	int64_t v;

	switch (op) {
	case WEFT_SUM:
	case WEFT_AVG:
		return st_is_unsigned(dt) ? (int64_t)(h % 3) : (int64_t)(h % 5) - 2;
	case WEFT_PROD:
		/* At most one 2 in seven ranks: 2^5 over 33 ranks, exact even in float16. */
		if ((r * 5 + (int)(i % 7) * 3) % 7 == 0)
			return 2;
		return !st_is_unsigned(dt) && (h & 1) ? -1 : 1;
	default:
		v = (int64_t)(h % 201);
		return st_is_unsigned(dt) ? v : v - 100;
	}
}

uint64_t st_hash(uint64_t key, size_t i)
{
	uint64_t h = key * 0x9e3779b97f4a7c15ull ^ (uint64_t)(i + 1) * 0xbf58476d1ce4e5b9ull;

	h ^= h >> 31;
	return h;
}

void st_reduce_ref(st_input_fn_t in, int n, size_t idx, weft_op_t op, weft_dtype_t dt, void *out)
{
	int64_t acc = in(0, idx, op, dt);

	for (int r = 1; r < n; r++)
		acc = st_combine(op, acc, in(r, idx, op, dt));
	if (op == WEFT_AVG && !st_is_float(dt))
		acc /= n; /* C division truncates toward zero, as WEFT_AVG does */
	st_store(out, dt, acc);
	/* Float AVG rounds once in the kernel's own arithmetic; the sum is exact. */
	if (op == WEFT_AVG && st_is_float(dt))
		wt_util_scale_div(out, 1, dt, n);
}

double st_arbitrary(uint64_t h, weft_op_t op)
{
	double v = ((double)(h % 2000001) - 1000000.0) / 997.0;

	if ((op == WEFT_MIN || op == WEFT_MAX) && h % 5 == 0)
		v = (h & 8) ? -(double)NAN : (double)NAN;
	return v;
}

uint64_t st_arbitrary_hash(int r, size_t i)
{
	uint64_t h = ((uint64_t)r + 1) * 0xd1b54a32d192ed03ull ^ (i + 7) * 0x94d049bb133111ebull;

	h ^= h >> 29;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 32;
	return h;
}

void st_fill_input(void *buf, size_t count, weft_dtype_t dt, weft_op_t op, int r,
		   st_input_fn_t exact, st_arbitrary_fn_t arb)
{
	size_t es = wt_util_dtype_size(dt);
	uint8_t *p = buf;

	for (size_t i = 0; i < count; i++)
		if (arb)
			st_store_float(p + i * es, dt, arb(r, i, op));
		else
			st_store(p + i * es, dt, exact(r, i, op, dt));
}

wt_sched_args_t st_args(wt_sched_coll_t coll, size_t count, weft_dtype_t dt, weft_op_t op, int rank,
			int size, int in_place, size_t seg)
{
	return (wt_sched_args_t){.coll = coll,
				 .count = count,
				 .dtype = dt,
				 .op = op,
				 .rank = rank,
				 .size = size,
				 .in_place = in_place,
				 .seg_bytes = seg};
}

void *st_alloc(size_t bytes)
{
	void *p = malloc(bytes);

	assert_non_null(p);
	return p;
}

void st_shuffle(int *order, int n, uint64_t *rng)
{
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(simnet_rand(rng) % (uint64_t)(i + 1)), t = order[i];

		order[i] = order[j];
		order[j] = t;
	}
}

void st_random_order(int *order, int n, uint64_t *rng)
{
	for (int r = 0; r < n; r++)
		order[r] = r;
	st_shuffle(order, n, rng);
}

void st_build(const wt_sched_args_t *a, const wt_sched_algo_t *algo, const char *name,
	      wt_sched_plan_t **plan)
{
	char err[256] = "";

	if (wt_sched_plan_build(a, algo, plan, err, sizeof(err)) != WEFT_OK)
		fail_msg("%s: build rank %d: %s", name, a->rank, err);
	if (algo)
		assert_string_equal(wt_sched_plan_algo(*plan), algo->name);
}

void st_start(st_execs_t *E, int r, uint64_t tag_base, const void *sendbuf, void *recvbuf)
{
	assert_int_equal(wt_sched_exec_start(E->plan[r], simnet_net(E->sim, r), tag_base, sendbuf,
					     recvbuf, st_on_done, &E->done[r], &E->ex[r]),
			 WEFT_OK);
}

void st_check_owing(simnet_t *sim, wt_sched_exec_t *ex, int rank, int n)
{
	int want[ST_MAX_RANKS], got[ST_MAX_RANKS];
	size_t nw = simnet_live_recv_peers(sim, rank, want, ST_MAX_RANKS);
	size_t ng = wt_sched_exec_owing(ex, got, ST_MAX_RANKS);

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

void st_run_checked(st_execs_t *E, uint64_t *rng, size_t every, int grow)
{
	size_t events = 0;

	while (simnet_step(E->sim)) {
		if (++events % every != 0)
			continue;
		if (grow > 0)
			every += every / (size_t)grow;
		int r = (int)(simnet_rand(rng) % (uint64_t)E->n);

		st_check_owing(E->sim, E->ex[r], r, E->n);
	}
}

void st_check_done(const st_execs_t *E, int r, const char *name)
{
	if (E->done[r].calls != 1 || E->done[r].st != WEFT_OK)
		fail_msg("%s: rank %d done %d times, status %d (deadlock?)", name, r,
			 E->done[r].calls, (int)wt_sched_exec_status(E->ex[r]));
	assert_int_equal(wt_sched_exec_status(E->ex[r]), WEFT_OK);
	assert_int_equal(simnet_live_ops(E->sim, r), 0);
}

void st_release(st_execs_t *E, int r, int unref_plan)
{
	wt_sched_exec_free(E->ex[r]);
	E->ex[r] = NULL;
	if (!unref_plan)
		return;
	wt_sched_plan_unref(E->plan[r]);
	E->plan[r] = NULL;
}

void st_check_bytes(const char *name, int r, const char *what, const uint8_t *got,
		    const uint8_t *want, size_t n, size_t es)
{
	for (size_t i = 0; i < n; i++)
		if (got[i] != want[i])
			fail_msg("%s: rank %d %s byte %zu (element %zu) is %#x, want %#x", name, r,
				 what, i, i / es, got[i], want[i]);
}
