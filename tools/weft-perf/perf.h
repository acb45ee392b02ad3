/* weft-perf (tools/): shared types of the benchmark's parts (sweep, data, report, plot).
 * Everything here sits on the public API only. */
#ifndef WT_PERF_PERF_H
#define WT_PERF_PERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <weft/weft.h>

enum perf_coll {
	PERF_ALLREDUCE,
	PERF_ALLGATHER,
	PERF_REDUCE_SCATTER,
	PERF_BROADCAST,
	PERF_REDUCE,
	PERF_GATHER,
	PERF_SCATTER,
	PERF_ALLTOALL,
	PERF_SENDRECV,
	PERF_BARRIER,
	PERF_COLL_COUNT
};

/* One printed row; time is the max over ranks of the per-rank average. */
struct perf_row {
	enum perf_coll coll;
	size_t bytes;
	size_t count;
	weft_dtype_t dtype;
	int op;	  /* weft_op_t, or -1 for collectives without one */
	int root; /* -1 for collectives without one */
	double time_us;
	double algbw;	 /* GB/s */
	double busbw;	 /* GB/s */
	long long wrong; /* -1: not checked */
	int iters;	 /* timed calls, and the untimed ones before them */
	int warmup;
};

/* What the run was, for the JSON/CSV metadata and the plot title. */
struct perf_meta {
	int ranks;
	const char *version;
	char date[32]; /* ISO 8601, UTC */
	char host[256];
	char kernel[128];
	long cpus;
	int iters;
	int warmup;
	int async;
	bool check;
	char *cmdline;
	/* --iters-by-size, as parsed: sizes up to band_limit[i] (0: any) ran band_iters[i]
	 * timed calls after band_warmup[i]; nbands 0: iters and warmup held for every size */
	int nbands;
	const size_t *band_limit;
	const int *band_iters, *band_warmup;
	double time_budget; /* -T seconds per size; 0: off */
	bool span;	    /* -S: times are spans over all ranks */
};

/* Band i of nbands of --iters-by-size serves every size the bands before it left: it has
 * no limit (0) or is the last. */
static inline bool perf_band_last(const size_t *limit, int nbands, int i)
{
	return limit[i] == 0 || i == nbands - 1;
}

/* Collective properties (data.c). */
const char *perf_coll_name(enum perf_coll c);
bool perf_coll_has_op(enum perf_coll c);
bool perf_coll_has_root(enum perf_coll c);
/* nccl-tests' bus bandwidth factor for n ranks. */
double perf_coll_bus_factor(enum perf_coll c, int n);
/* Counts per collective from the nominal size as nccl-tests defines them. */
void perf_coll_counts(enum perf_coll c, size_t bytes, size_t es, int n, size_t *count,
		      size_t *real_bytes);

/* Datatypes (data.c): names as nccl-tests prints them. */
size_t perf_dtype_size(weft_dtype_t t);
const char *perf_dtype_name(weft_dtype_t t);
int perf_dtype_parse(const char *s); /* -1: unknown */
const char *perf_op_name(int op);    /* "none" for -1 */
int perf_op_parse(const char *s);    /* -1: unknown */

/* Exact-by-construction inputs and references (data.c). */
struct perf_gen {
	weft_dtype_t dtype;
	int op; /* -1: data movement only */
	int nranks;
};
int64_t perf_gen_value(const struct perf_gen *g, int rank, size_t i);
void perf_store(void *buf, size_t i, weft_dtype_t t, int64_t v);
/* 1 if buf[i] equals the exact value v (after the dtype's integer wrap-around). */
bool perf_equal(const void *buf, size_t i, weft_dtype_t t, int64_t v);
/* The reduction of every rank's perf_gen_value at index i, exact. */
int64_t perf_reduce_ref(const struct perf_gen *g, size_t i);

/* Report files on rank 0 (report.c). */
int perf_write_json(const char *path, const struct perf_meta *m, const struct perf_row *rows,
		    size_t n);
int perf_write_csv(const char *path, const struct perf_meta *m, const struct perf_row *rows,
		   size_t n);
/* plot.c */
int perf_write_svg(const char *path, const struct perf_meta *m, const struct perf_row *rows,
		   size_t n);

#endif /* WT_PERF_PERF_H */
