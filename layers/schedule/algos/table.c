/* The algorithm table, default selection and plan building (layers/schedule). Adding an
 * algorithm means one file under algos/ and one line here. */
#include <stdint.h>
#include <stdio.h>
#include <strings.h>

#include "layers/schedule/algos/algos.h"
#include "lib/util/dtype.h"
#include "lib/util/log.h"

/* Recursive doubling sends the whole vector log2(n) times, which only pays below the
 * point where the ring's 2(n-1) latency terms dominate; 16 KiB is where the ring wins
 * on shared memory with a few ranks. */
#define WT_SCHED_RECDBL_MAX_BYTES ((size_t)16 * 1024 - 1)

static const wt_sched_algo_t algo_table[] = {
    {"recursive_doubling", WT_COLL_ALLREDUCE, wt_sched_allreduce_recdbl, 0,
     WT_SCHED_RECDBL_MAX_BYTES},
    {"ring", WT_COLL_ALLREDUCE, wt_sched_allreduce_ring, WT_SCHED_RECDBL_MAX_BYTES + 1, SIZE_MAX},
};

const wt_sched_algo_t *wt_sched_algo_table(size_t *n)
{
	*n = sizeof(algo_table) / sizeof(algo_table[0]);
	return algo_table;
}

/* An empty forced name counts as none, as an empty WEFT_ALGO does. */
const wt_sched_algo_t *wt_sched_algo_select(const wt_sched_args_t *args, const char *forced)
{
	size_t n = sizeof(algo_table) / sizeof(algo_table[0]);
	size_t elem, bytes;

	if (!args)
		return NULL;
	if (forced && forced[0]) {
		for (size_t i = 0; i < n; i++)
			if (algo_table[i].coll == args->coll &&
			    !strcasecmp(algo_table[i].name, forced))
				return &algo_table[i];
		return NULL;
	}
	elem = wt_util_dtype_size(args->dtype);
	bytes = elem && args->count <= SIZE_MAX / elem ? args->count * elem : SIZE_MAX;
	for (size_t i = 0; i < n; i++)
		if (algo_table[i].coll == args->coll && bytes >= algo_table[i].min_bytes &&
		    bytes <= algo_table[i].max_bytes)
			return &algo_table[i];
	return NULL;
}

weft_status_t wt_sched_allreduce_local(const wt_sched_args_t *a, wt_sched_plan_t *p)
{
	size_t bytes = a->count * wt_util_dtype_size(a->dtype);

	if (!a->in_place && bytes)
		wt_sched_copy(p, WT_SCHED_BUF_RECV, 0, WT_SCHED_BUF_SEND, 0, bytes, 0, NULL);
	return WEFT_OK;
}

static weft_status_t build_fail(weft_status_t st, char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
	return st;
}

weft_status_t wt_sched_plan_build(const wt_sched_args_t *args, const wt_sched_algo_t *algo,
				  wt_sched_plan_t **out, char *err, size_t errlen)
{
	char why[160];
	wt_sched_plan_t *p;
	weft_status_t st;

	if (!out)
		return build_fail(WEFT_ERR_INVALID_ARG, err, errlen, "schedule: no output plan");
	st = wt_sched_args_check(args, why, sizeof(why));
	if (st) {
		WT_ERROR("%s", why);
		return build_fail(st, err, errlen, why);
	}
	if (!algo)
		algo = wt_sched_algo_select(args, NULL);
	if (!algo || algo->coll != args->coll || !algo->build) {
		snprintf(why, sizeof(why), "schedule: no %s algorithm %s for %s",
			 algo ? "usable" : "default", algo ? algo->name : "",
			 wt_sched_coll_name(args->coll));
		WT_ERROR("%s", why);
		return build_fail(WEFT_ERR_UNSUPPORTED, err, errlen, why);
	}
	p = wt_sched_plan_new(args);
	if (!p) {
		WT_ERROR("schedule: out of memory for a %s plan", algo->name);
		return build_fail(WEFT_ERR_NO_MEMORY, err, errlen, "schedule: out of memory");
	}
	wt_sched_plan_set_algo(p, algo->name);
	st = algo->build(args, p);
	if (st)
		wt_sched_fail(p, st, "%s: build failed", algo->name);
	st = wt_sched_plan_finalize(p);
	if (st) {
		snprintf(why, sizeof(why), "schedule: %s plan: %s", algo->name,
			 wt_sched_plan_error(p));
		wt_sched_plan_unref(p);
		return build_fail(st, err, errlen, why);
	}
	*out = p;
	return WEFT_OK;
}
