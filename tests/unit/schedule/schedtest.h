/* Helpers shared by the schedule tests (tests/unit/schedule): exact inputs and their
 * reference reductions, per-dtype stores, and running many ranks' executors on simnet. */
#ifndef WT_TEST_SCHEDTEST_H
#define WT_TEST_SCHEDTEST_H

#include <stddef.h>
#include <stdint.h>

#include "layers/schedule/exec.h"
#include "layers/schedule/plan.h"
#include "lib/util/dtype.h"
#include "tests/unit/schedule/simnet.h"

/* The largest communicator any schedule test simulates. */
#define ST_MAX_RANKS 33

/* What an execution's done callback reported. */
typedef struct {
	int calls;
	weft_status_t st;
	char msg[256];
} st_done_t;

/* wt_sched_exec_done_fn_t recording into an st_done_t; msg must never be NULL. */
void st_on_done(void *arg, weft_status_t st, const char *msg);

int st_is_unsigned(weft_dtype_t dt);
int st_is_float(weft_dtype_t dt);

/* v (an integer exact in dt) stored as one element of dt; fails the test on other dtypes. */
void st_store(void *p, weft_dtype_t dt, int64_t v);
/* v rounded once to the float dtype dt (any non-16/32-bit float dtype is float64). */
void st_store_float(void *p, weft_dtype_t dt, double v);

/* One step of op on 64-bit integers. */
int64_t st_combine(weft_op_t op, int64_t acc, int64_t v);

/* Input element i of rank r whose reduction is exact in every order, chosen by the hash h:
 * small integers for SUM / AVG, +-1 and a few 2s for PROD, anything representable for
 * MIN / MAX. Each test file hashes (r, i) its own way, so its inputs stay as they were. */
int64_t st_exact_input(uint64_t h, int r, size_t i, weft_op_t op, weft_dtype_t dt);
/* The common hash: key * golden ^ (i + 1) * mix, folded once (key is r or r + 1). */
uint64_t st_hash(uint64_t key, size_t i);

typedef int64_t (*st_input_fn_t)(int r, size_t i, weft_op_t op, weft_dtype_t dt);
/* The exact reduction over n ranks of input element idx, stored to out as the library's
 * result: integer AVG truncates, float AVG divides the exact sum with the library's kernel. */
void st_reduce_ref(st_input_fn_t in, int n, size_t idx, weft_op_t op, weft_dtype_t dt, void *out);

/* Arbitrary finite fractions (order-dependent in float sums), and for MIN / MAX a NaN with
 * either sign where h % 5 == 0. */
double st_arbitrary(uint64_t h, weft_op_t op);
/* The hash the allreduce tests feed st_arbitrary for element i of rank r. */
uint64_t st_arbitrary_hash(int r, size_t i);

typedef double (*st_arbitrary_fn_t)(int r, size_t i, weft_op_t op);
/* Elements 0..count of rank r's input: arbitrary floats from arb when it is not NULL,
 * else the exact integers from exact. */
void st_fill_input(void *buf, size_t count, weft_dtype_t dt, weft_op_t op, int r,
		   st_input_fn_t exact, st_arbitrary_fn_t arb);

/* Arguments of a plan (no root, no vectors, no compression). */
wt_sched_args_t st_args(wt_sched_coll_t coll, size_t count, weft_dtype_t dt, weft_op_t op, int rank,
			int size, int in_place, size_t seg);

/* malloc that fails the test instead of returning NULL. */
void *st_alloc(size_t bytes);

/* Fisher-Yates shuffle of order[0..n) driven by simnet_rand. */
void st_shuffle(int *order, int n, uint64_t *rng);
/* order = 0..n-1 in a random order. */
void st_random_order(int *order, int n, uint64_t *rng);

/* Builds rank a->rank's plan with algo (NULL: default selection) or fails the test naming
 * the configuration; with algo, the plan must name it. */
void st_build(const wt_sched_args_t *a, const wt_sched_algo_t *algo, const char *name,
	      wt_sched_plan_t **plan);

/* The executions of one simulated collective, one per rank. */
typedef struct {
	int n;
	simnet_t *sim;
	wt_sched_plan_t *plan[ST_MAX_RANKS];
	wt_sched_exec_t *ex[ST_MAX_RANKS];
	st_done_t done[ST_MAX_RANKS];
} st_execs_t;

/* Starts rank r's plan on the simulated network; start must succeed. */
void st_start(st_execs_t *E, int r, uint64_t tag_base, const void *sendbuf, void *recvbuf);
/* Steps the network until nothing can happen, checking a random rank's owing list every
 * `every` events; grow > 0 stretches the interval by 1/grow each time (long runs). */
void st_run_checked(st_execs_t *E, uint64_t *rng, size_t every, int grow);
/* Owing must name exactly the peers of the receives the network still holds. */
void st_check_owing(simnet_t *sim, wt_sched_exec_t *ex, int rank, int n);
/* Rank r completed exactly once with WEFT_OK and left nothing posted. */
void st_check_done(const st_execs_t *E, int r, const char *name);
/* Frees rank r's execution and, with unref_plan, drops its plan. */
void st_release(st_execs_t *E, int r, int unref_plan);

/* got must equal want byte for byte; names the rank, buffer, byte and element. */
void st_check_bytes(const char *name, int r, const char *what, const uint8_t *got,
		    const uint8_t *want, size_t n, size_t es);

#endif
