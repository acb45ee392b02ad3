/* Multi-process test of every public call (tests/integration), run under weftrun: each
 * collective, send / recv and groups with rank-dependent data that every rank checks
 * exactly, blocking and async, in place where the call has that form, counts 0, 1, odd
 * and ~1M, every root; plus argument checks, same-tag ordering, size mismatch, groups,
 * pipelines, bitwise determinism of float reductions, and runs of one call whose shape
 * changes in one argument at a time (replay). Exit 0 only if all matched.
 * Options: --only NAME (one section), --big (the ~1M cases), --quick,
 * --expect-init-fail (weft_init must fail with WEFT_ERR_INVALID_ARG). */
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/weft.h>

#include "tests/integration/common/report.h"
#include "tests/integration/common/testvals.h"

#define GUARD 64 /* bytes past every buffer that no call may touch */

static weft_comm_t *g_comm;
static int g_size, g_quick, g_big;
static const char *g_only;
static int g_salt;

static int section(const char *name)
{
	return g_only == NULL || strcmp(g_only, name) == 0;
}

static const char *mode_name(int mode)
{
	static const char *const n[] = {"blocking", "async-wait", "async-test"};
	return n[mode % 3];
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void sleep_ms(int ms)
{
	struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};

	nanosleep(&ts, NULL);
}

/* Blocking, or posted then finished by weft_wait, or by polling weft_test. */
static weft_status_t finish(weft_status_t st, weft_request_t **req, int mode)
{
	int done = 0;

	if (mode == 0 || st != WEFT_OK)
		return st;
	if (*req == NULL)
		return WEFT_ERR_PROTOCOL;
	if (mode == 1)
		return weft_wait(req);
	for (;;) {
		st = weft_test(req, &done);
		if (done)
			return *req == NULL ? st : WEFT_ERR_PROTOCOL;
		if (st != WEFT_INPROGRESS)
			return st;
		nanosleep(&(struct timespec){.tv_nsec = 50000}, NULL);
	}
}

static weft_request_t **req_of(weft_request_t **r, int mode)
{
	*r = NULL;
	return mode == 0 ? NULL : r;
}

static int check_st(weft_status_t st, const char *what)
{
	if (st == WEFT_OK)
		return 0;
	fail("%s: %s: %s", what, weft_strerror(st), weft_comm_last_error(g_comm));
	return -1;
}

/* ---- data: bytes for movement, small integers for reductions ---- */

static uint8_t pat(int rank, size_t blk, size_t k)
{
	uint32_t x = (uint32_t)rank * 2654435761u ^ (uint32_t)blk * 40503u ^
		     (uint32_t)k * 2246822519u ^ (uint32_t)g_salt * 3266489917u;

	x ^= x >> 15;
	x *= 2246822519u;
	return (uint8_t)(x ^ (x >> 13));
}

static void fill(uint8_t *buf, size_t bytes, int rank, size_t blk)
{
	for (size_t k = 0; k < bytes; k++)
		buf[k] = pat(rank, blk, k);
}

/* First differing byte or -1. */
static long long diff(const uint8_t *buf, size_t bytes, int rank, size_t blk)
{
	for (size_t k = 0; k < bytes; k++) {
		if (buf[k] != pat(rank, blk, k))
			return (long long)k;
	}
	return -1;
}

static uint8_t *alloc_buf(size_t bytes)
{
	uint8_t *b = malloc(bytes + GUARD);

	if (b == NULL) {
		fprintf(stderr, "rank %d: out of memory for %zu bytes\n", g_rank, bytes);
		exit(1);
	}
	memset(b, 0xee, bytes + GUARD);
	return b;
}

static void check_guard(const uint8_t *b, size_t bytes, const char *what)
{
	for (size_t k = 0; k < GUARD; k++) {
		if (b[bytes + k] != 0xee) {
			fail("%s: wrote past the end of the buffer (%zu bytes)", what, bytes);
			return;
		}
	}
}

/* Inputs whose reduction is exact in every order. */
static double val(weft_op_t op, weft_dtype_t dt, int rank, size_t i)
{
	return tv_exact(op, dt, rank, i, i * 31 + (size_t)rank * 17 + (size_t)g_salt);
}

static double reduced(weft_op_t op, weft_dtype_t dt, size_t i)
{
	double acc = val(op, dt, 0, i);

	for (int r = 1; r < g_size; r++)
		acc = tv_combine(op, acc, val(op, dt, r, i));
	if (op == WEFT_AVG)
		acc = dt == WEFT_FLOAT64 ? acc / g_size : trunc(acc / g_size);
	return acc;
}

/* Reduction dtype / op pairs: integer and float paths, every op. */
static const struct {
	weft_dtype_t dt;
	weft_op_t op;
} red_cases[] = {
    {WEFT_INT32, WEFT_SUM}, {WEFT_FLOAT32, WEFT_SUM}, {WEFT_INT64, WEFT_PROD},
    {WEFT_INT8, WEFT_MIN},  {WEFT_UINT8, WEFT_MAX},   {WEFT_FLOAT64, WEFT_AVG},
    {WEFT_INT32, WEFT_AVG}, {WEFT_FLOAT64, WEFT_MAX}, {WEFT_UINT32, WEFT_SUM},
};
#define NRED (sizeof(red_cases) / sizeof(red_cases[0]))

static int check_reduced(const void *buf, weft_dtype_t dt, weft_op_t op, size_t count, size_t first,
			 const char *what)
{
	for (size_t i = 0; i < count; i++) {
		double want = reduced(op, dt, first + i);
		if (tv_get(buf, dt, i) != want) {
			fail("%s: element %zu is %g, want %g", what, i, tv_get(buf, dt, i), want);
			return -1;
		}
	}
	return 0;
}

/* ---- one call of each collective ---- */

static void t_allreduce(size_t count, weft_dtype_t dt, weft_op_t op, int mode, int inplace)
{
	size_t es = tv_dt_size(dt), bytes = count * es;
	uint8_t *send = alloc_buf(bytes), *recv = alloc_buf(bytes);
	weft_request_t *r;
	char what[160];
	weft_status_t st;

	snprintf(what, sizeof(what), "allreduce count %zu dt %d op %d %s%s", count, (int)dt,
		 (int)op, mode_name(mode), inplace ? " in-place" : "");
	for (size_t i = 0; i < count; i++)
		tv_put(inplace ? recv : send, dt, i, val(op, dt, g_rank, i));
	st = weft_allreduce(inplace ? recv : send, recv, count, dt, op, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0) {
		check_reduced(recv, dt, op, count, 0, what);
		check_guard(recv, bytes, what);
	}
	free(send);
	free(recv);
}

static void t_allgather(size_t count, weft_dtype_t dt, int mode, int inplace)
{
	size_t es = tv_dt_size(dt), blk = count * es, all = blk * (size_t)g_size;
	uint8_t *recv = alloc_buf(all),
		*send = inplace ? recv + (size_t)g_rank * blk : alloc_buf(blk);
	weft_request_t *r;
	char what[160];
	weft_status_t st;

	snprintf(what, sizeof(what), "allgather count %zu dt %d %s%s", count, (int)dt,
		 mode_name(mode), inplace ? " in-place" : "");
	fill(send, blk, g_rank, 0);
	st = weft_allgather(send, recv, count, dt, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0) {
		for (int b = 0; b < g_size; b++) {
			long long k = diff(recv + (size_t)b * blk, blk, b, 0);
			if (k >= 0) {
				fail("%s: block of rank %d differs at byte %lld", what, b, k);
				break;
			}
		}
		check_guard(recv, all, what);
	}
	if (!inplace)
		free(send);
	free(recv);
}

static void t_reduce_scatter(size_t count, weft_dtype_t dt, weft_op_t op, int mode, int inplace)
{
	size_t es = tv_dt_size(dt), n = count * (size_t)g_size;
	uint8_t *send = alloc_buf(n * es);
	uint8_t *recv = inplace ? send + (size_t)g_rank * count * es : alloc_buf(count * es);
	weft_request_t *r;
	char what[160];
	weft_status_t st;

	snprintf(what, sizeof(what), "reduce_scatter count %zu dt %d op %d %s%s", count, (int)dt,
		 (int)op, mode_name(mode), inplace ? " in-place" : "");
	for (size_t i = 0; i < n; i++)
		tv_put(send, dt, i, val(op, dt, g_rank, i));
	st = weft_reduce_scatter(send, recv, count, dt, op, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0) {
		check_reduced(recv, dt, op, count, (size_t)g_rank * count, what);
		check_guard(inplace ? send : recv, inplace ? n * es : count * es, what);
	}
	if (!inplace)
		free(recv);
	free(send);
}

static void t_broadcast(size_t count, weft_dtype_t dt, int root, int mode)
{
	size_t bytes = count * tv_dt_size(dt);
	uint8_t *buf = alloc_buf(bytes);
	weft_request_t *r;
	char what[160];
	weft_status_t st;
	long long k;

	snprintf(what, sizeof(what), "broadcast count %zu dt %d root %d %s", count, (int)dt, root,
		 mode_name(mode));
	if (g_rank == root)
		fill(buf, bytes, root, 7);
	st = weft_broadcast(buf, count, dt, root, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0) {
		k = diff(buf, bytes, root, 7);
		if (k >= 0)
			fail("%s: differs at byte %lld", what, k);
		check_guard(buf, bytes, what);
	}
	free(buf);
}

static void t_reduce(size_t count, weft_dtype_t dt, weft_op_t op, int root, int mode, int inplace)
{
	size_t es = tv_dt_size(dt), bytes = count * es;
	int is_root = g_rank == root;
	uint8_t *recv = is_root ? alloc_buf(bytes) : NULL;
	uint8_t *send = is_root && inplace ? recv : alloc_buf(bytes);
	weft_request_t *r;
	char what[160];
	weft_status_t st;

	snprintf(what, sizeof(what), "reduce count %zu dt %d op %d root %d %s%s", count, (int)dt,
		 (int)op, root, mode_name(mode), inplace ? " in-place" : "");
	for (size_t i = 0; i < count; i++)
		tv_put(send, dt, i, val(op, dt, g_rank, i));
	/* Off the root recvbuf is NULL: the call must not need it. */
	st = weft_reduce(send, recv, count, dt, op, root, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0 && is_root) {
		check_reduced(recv, dt, op, count, 0, what);
		check_guard(recv, bytes, what);
	}
	if (send != recv)
		free(send);
	free(recv);
}

static void t_gather(size_t count, weft_dtype_t dt, int root, int mode)
{
	size_t blk = count * tv_dt_size(dt), all = blk * (size_t)g_size;
	int is_root = g_rank == root;
	uint8_t *send = alloc_buf(blk), *recv = is_root ? alloc_buf(all) : NULL;
	weft_request_t *r;
	char what[160];
	weft_status_t st;

	snprintf(what, sizeof(what), "gather count %zu dt %d root %d %s", count, (int)dt, root,
		 mode_name(mode));
	fill(send, blk, g_rank, 3);
	st = weft_gather(send, recv, count, dt, root, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0 && is_root) {
		for (int b = 0; b < g_size; b++) {
			long long k = diff(recv + (size_t)b * blk, blk, b, 3);
			if (k >= 0) {
				fail("%s: block of rank %d differs at byte %lld", what, b, k);
				break;
			}
		}
		check_guard(recv, all, what);
	}
	free(send);
	free(recv);
}

static void t_scatter(size_t count, weft_dtype_t dt, int root, int mode)
{
	size_t blk = count * tv_dt_size(dt), all = blk * (size_t)g_size;
	int is_root = g_rank == root;
	uint8_t *send = is_root ? alloc_buf(all) : NULL, *recv = alloc_buf(blk);
	weft_request_t *r;
	char what[160];
	weft_status_t st;
	long long k;

	snprintf(what, sizeof(what), "scatter count %zu dt %d root %d %s", count, (int)dt, root,
		 mode_name(mode));
	for (int b = 0; is_root && b < g_size; b++)
		fill(send + (size_t)b * blk, blk, root, (size_t)b + 11);
	st = weft_scatter(send, recv, count, dt, root, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0) {
		k = diff(recv, blk, root, (size_t)g_rank + 11);
		if (k >= 0)
			fail("%s: differs at byte %lld", what, k);
		check_guard(recv, blk, what);
	}
	free(send);
	free(recv);
}

static void t_alltoall(size_t count, weft_dtype_t dt, int mode, int inplace)
{
	size_t blk = count * tv_dt_size(dt), all = blk * (size_t)g_size;
	uint8_t *recv = alloc_buf(all), *send = inplace ? recv : alloc_buf(all);
	weft_request_t *r;
	char what[160];
	weft_status_t st;

	snprintf(what, sizeof(what), "alltoall count %zu dt %d %s%s", count, (int)dt,
		 mode_name(mode), inplace ? " in-place" : "");
	for (int b = 0; b < g_size; b++)
		fill(send + (size_t)b * blk, blk, g_rank, (size_t)b);
	st = weft_alltoall(send, recv, count, dt, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0) {
		for (int b = 0; b < g_size; b++) {
			long long k = diff(recv + (size_t)b * blk, blk, b, (size_t)g_rank);
			if (k >= 0) {
				fail("%s: block from rank %d differs at byte %lld", what, b, k);
				break;
			}
		}
		check_guard(recv, all, what);
	}
	if (!inplace)
		free(send);
	free(recv);
}

/* Elements rank i sends rank j: some zero, uneven, scaled. */
static size_t v_count(int i, int j, size_t scale)
{
	return (size_t)((i * 3 + j * 5 + g_salt) % 4) * scale + (size_t)((i + j) % 2);
}

static void t_alltoallv(weft_dtype_t dt, size_t scale, int mode, int reversed)
{
	size_t es = tv_dt_size(dt), n = (size_t)g_size;
	size_t *sc = calloc(n, sizeof(size_t)), *sd = calloc(n, sizeof(size_t));
	size_t *rc = calloc(n, sizeof(size_t)), *rd = calloc(n, sizeof(size_t));
	size_t stot = 0, rtot = 0;
	uint8_t *send, *recv;
	weft_request_t *r;
	char what[160];
	weft_status_t st;

	if (!sc || !sd || !rc || !rd)
		exit(1);
	/* Gaps of one element between blocks, optionally laid out in reverse rank order. */
	for (size_t k = 0; k < n; k++) {
		size_t j = reversed ? n - 1 - k : k;
		sc[j] = v_count(g_rank, (int)j, scale);
		sd[j] = stot;
		stot += sc[j] + 1;
		rc[j] = v_count((int)j, g_rank, scale);
		rd[j] = rtot;
		rtot += rc[j] + 1;
	}
	snprintf(what, sizeof(what), "alltoallv scale %zu dt %d %s%s", scale, (int)dt,
		 mode_name(mode), reversed ? " reversed" : "");
	send = alloc_buf(stot * es);
	recv = alloc_buf(rtot * es);
	for (size_t j = 0; j < n; j++)
		fill(send + sd[j] * es, sc[j] * es, g_rank, j + 100);
	st = weft_alltoallv(send, sc, sd, recv, rc, rd, dt, g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), what) == 0) {
		for (size_t i = 0; i < n; i++) {
			long long k =
			    diff(recv + rd[i] * es, rc[i] * es, (int)i, (size_t)g_rank + 100);
			if (k >= 0) {
				fail("%s: block from rank %zu differs at byte %lld", what, i, k);
				break;
			}
			for (size_t b = 0; b < es; b++) {
				if (recv[(rd[i] + rc[i]) * es + b] != 0xee) {
					fail("%s: gap after block %zu was written", what, i);
					break;
				}
			}
		}
		check_guard(recv, rtot * es, what);
	}
	free(send);
	free(recv);
	free(sc);
	free(sd);
	free(rc);
	free(rd);
}

/* Lower bound only: no rank may leave before the late one enters. */
static void t_barrier(int mode)
{
	weft_request_t *r;
	double t0;
	weft_status_t st;

	st = weft_barrier(g_comm, req_of(&r, mode));
	check_st(finish(st, &r, mode), "barrier");
	if (g_rank == g_size - 1)
		sleep_ms(400);
	t0 = now_s();
	st = weft_barrier(g_comm, req_of(&r, mode));
	if (check_st(finish(st, &r, mode), "barrier after a late rank") == 0 &&
	    g_rank != g_size - 1 && now_s() - t0 < 0.1)
		fail("barrier (%s) returned %.3f s after entry, before the late rank entered",
		     mode_name(mode), now_s() - t0);
}

/* ---- sections ---- */

static const size_t small_counts[] = {0, 1, 7, 1001};
#define NSMALL (sizeof(small_counts) / sizeof(small_counts[0]))

/* ~1M elements in the largest buffer, not divisible by the rank count. */
static size_t big_block(void)
{
	return ((size_t)1 << 20) / (size_t)g_size + 3;
}

static void s_allreduce(void)
{
	for (size_t c = 0; c < NSMALL; c++)
		for (size_t k = 0; k < NRED; k++)
			if (!g_quick || (c + k) % 2 == 0)
				t_allreduce(small_counts[c], red_cases[k].dt, red_cases[k].op,
					    (int)(c + k) % 3, (int)(c + k / 2) % 2);
	if (g_big) {
		t_allreduce((size_t)1 << 20, WEFT_FLOAT32, WEFT_SUM, 1, 0);
		t_allreduce(((size_t)1 << 20) + 1, WEFT_INT32, WEFT_MAX, 0, 1);
	}
}

static void s_allgather(void)
{
	static const weft_dtype_t dts[] = {WEFT_UINT8, WEFT_INT32, WEFT_FLOAT16, WEFT_FLOAT64};

	for (size_t c = 0; c < NSMALL; c++)
		for (int m = 0; m < 6; m++)
			if (!g_quick || m % 2 == (int)c % 2)
				t_allgather(small_counts[c], dts[(c + (size_t)m) % 4], m % 3,
					    m >= 3);
	if (g_big) {
		t_allgather(big_block(), WEFT_INT32, 1, 0);
		t_allgather(big_block(), WEFT_UINT8, 0, 1);
	}
}

static void s_reduce_scatter(void)
{
	for (size_t c = 0; c < NSMALL; c++)
		for (size_t k = 0; k < NRED; k++)
			if (!g_quick || (c + k) % 2 == 1)
				t_reduce_scatter(small_counts[c], red_cases[k].dt, red_cases[k].op,
						 (int)(c + k) % 3, (int)(c + k) % 2);
	if (g_big) {
		t_reduce_scatter(big_block(), WEFT_FLOAT32, WEFT_SUM, 0, 0);
		t_reduce_scatter(big_block(), WEFT_INT64, WEFT_MIN, 1, 1);
	}
}

static void s_broadcast(void)
{
	for (int root = 0; root < g_size; root++)
		for (size_t c = 0; c < NSMALL; c++)
			if (!g_quick || (c + (size_t)root) % 2 == 0)
				t_broadcast(small_counts[c], c % 2 ? WEFT_INT32 : WEFT_BFLOAT16,
					    root, (int)(c + (size_t)root) % 3);
	if (g_big) {
		t_broadcast((size_t)1 << 20, WEFT_FLOAT32, 0, 1);
		t_broadcast(((size_t)1 << 20) + 5, WEFT_UINT8, g_size - 1, 0);
	}
}

static void s_reduce(void)
{
	for (int root = 0; root < g_size; root++)
		for (size_t c = 0; c < NSMALL; c++) {
			size_t k = ((size_t)root * NSMALL + c) % NRED;
			if (!g_quick || (c + (size_t)root) % 2 == 1)
				t_reduce(small_counts[c], red_cases[k].dt, red_cases[k].op, root,
					 (int)(c + (size_t)root) % 3, (int)c % 2);
		}
	for (size_t k = 0; k < NRED; k++)
		t_reduce(1001, red_cases[k].dt, red_cases[k].op, g_size / 2, (int)k % 3,
			 (int)k % 2);
	if (g_big) {
		t_reduce((size_t)1 << 20, WEFT_FLOAT32, WEFT_SUM, 0, 1, 0);
		t_reduce(((size_t)1 << 20) + 3, WEFT_INT32, WEFT_PROD, g_size - 1, 0, 1);
	}
}

static void s_gather(void)
{
	for (int root = 0; root < g_size; root++)
		for (size_t c = 0; c < NSMALL; c++)
			if (!g_quick || (c + (size_t)root) % 2 == 0)
				t_gather(small_counts[c], c % 2 ? WEFT_INT64 : WEFT_INT8, root,
					 (int)(c + (size_t)root) % 3);
	if (g_big)
		t_gather(big_block(), WEFT_INT32, g_size - 1, 1);
}

static void s_scatter(void)
{
	for (int root = 0; root < g_size; root++)
		for (size_t c = 0; c < NSMALL; c++)
			if (!g_quick || (c + (size_t)root) % 2 == 1)
				t_scatter(small_counts[c], c % 2 ? WEFT_FLOAT32 : WEFT_UINT8, root,
					  (int)(c + (size_t)root) % 3);
	if (g_big)
		t_scatter(big_block(), WEFT_INT32, 0, 0);
}

static void s_alltoall(void)
{
	for (size_t c = 0; c < NSMALL; c++)
		for (int m = 0; m < 4; m++)
			if (!g_quick || m % 2 == (int)c % 2)
				t_alltoall(small_counts[c], m % 2 ? WEFT_INT32 : WEFT_FLOAT16,
					   (int)(c + (size_t)m) % 3, m >= 2);
	if (g_big) {
		t_alltoall(big_block(), WEFT_INT32, 1, 0);
		t_alltoall(big_block(), WEFT_UINT8, 0, 1);
	}
}

static void s_alltoallv(void)
{
	static const size_t scales[] = {0, 1, 5, 333};

	for (size_t s = 0; s < sizeof(scales) / sizeof(scales[0]); s++)
		for (int m = 0; m < 3; m++)
			if (!g_quick || m == (int)s % 3)
				t_alltoallv(s % 2 ? WEFT_INT32 : WEFT_INT8, scales[s], m,
					    (int)(s + (size_t)m) % 2);
	if (g_big)
		t_alltoallv(WEFT_INT32, ((size_t)1 << 20) / (size_t)g_size / 2, 1, 1);
}

static void s_barrier(void)
{
	t_barrier(0);
	t_barrier(1);
	if (!g_quick)
		t_barrier(2);
}

/* ---- runs of one call (a blocking call of the last one's shape replays its plan) ---- */

/* n calls, new data each (g_salt): a call run with another's plan or buffers shows. */
#define RUN(n, call)                                                                               \
	do {                                                                                       \
		for (int i_ = 0; i_ < (n); i_++, g_salt++)                                         \
			call;                                                                      \
	} while (0)

/* allreduce on buffers from weft_mem_alloc (the shared-memory plans may read them). */
static void t_allreduce_mem(size_t count, weft_dtype_t dt, weft_op_t op, int inplace)
{
	size_t bytes = count * tv_dt_size(dt);
	void *send = NULL, *recv = NULL;
	char what[160];

	snprintf(what, sizeof(what), "allreduce count %zu dt %d op %d in weft_mem%s", count,
		 (int)dt, (int)op, inplace ? " in-place" : "");
	if (check_st(weft_mem_alloc(&recv, bytes), what) != 0 ||
	    (!inplace && check_st(weft_mem_alloc(&send, bytes), what) != 0)) {
		weft_mem_free(recv);
		return;
	}
	for (size_t i = 0; i < count; i++)
		tv_put(inplace ? recv : send, dt, i, val(op, dt, g_rank, i));
	if (check_st(weft_allreduce(inplace ? recv : send, recv, count, dt, op, g_comm, NULL),
		     what) == 0)
		check_reduced(recv, dt, op, count, 0, what);
	weft_mem_free(send);
	weft_mem_free(recv);
}

/* A thread that runs broadcasts on the communicator while the main thread waits for it:
 * one communicator from one thread at a time, but not always the same thread. */
static void *bcast_thread(void *arg)
{
	int n = *(const int *)arg;

	RUN(n, t_broadcast(5, WEFT_INT32, 0, 0));
	return NULL;
}

/* Tiny broadcasts of one shape run by the replay's quick path (no request, no lock: see
 * request.c): calls that the root or a reader reaches 20 ms late (the others' inline spin
 * runs out, and they wait the usual way), calls from another thread between the main
 * thread's, and calls between runs of other collectives; every result checked exactly. */
static void replay_quick_runs(void)
{
	pthread_t th;
	int n = 20;

	for (int k = 0; k < 48; k++, g_salt++) {
		if (k % 8 == 3 && g_rank == (k / 8) % g_size)
			sleep_ms(20);
		t_broadcast(5, WEFT_INT32, 0, 0);
	}
	if (pthread_create(&th, NULL, bcast_thread, &n) != 0) {
		fail("pthread_create failed");
		return;
	}
	pthread_join(th, NULL);
	RUN(20, t_broadcast(5, WEFT_INT32, 0, 0));
	RUN(2, t_allreduce(5, WEFT_INT32, WEFT_SUM, 0, 0));
	RUN(20, t_broadcast(5, WEFT_INT32, g_size - 1, 0));
	RUN(2, t_allgather(5, WEFT_INT32, 0, 0));
	RUN(20, t_broadcast(5, WEFT_INT32, g_size - 1, 0));
}

/* Runs of the same blocking call, each followed by a call that differs from it in one
 * argument (root, count, dtype of the same size or another, op, in place or not, buffers
 * in weft_mem or not), all checked exactly; after a run, a NULL buffer and a bad root are
 * still refused, and the same call inside a group does not block. */
static void s_replay(void)
{
	size_t c = 5, es = sizeof(int32_t);
	int32_t *buf = (int32_t *)alloc_buf(c * es * (size_t)g_size), out[5];
	weft_status_t st;

	RUN(3, t_broadcast(c, WEFT_INT32, 0, 0));
	RUN(2, t_broadcast(c, WEFT_INT32, g_size - 1, 0));
	RUN(2, t_broadcast(c + 1, WEFT_INT32, g_size - 1, 0));
	RUN(2, t_broadcast(c + 1, WEFT_FLOAT32, g_size - 1, 0));
	RUN(2, t_broadcast(c + 1, WEFT_UINT8, g_size - 1, 0));
	RUN(3, t_allreduce(c, WEFT_INT32, WEFT_SUM, 0, 0));
	RUN(2, t_allreduce(c, WEFT_INT32, WEFT_MAX, 0, 0));
	RUN(2, t_allreduce(c, WEFT_INT32, WEFT_MAX, 0, 1));
	/* 4 KiB: weft_mem buffers take another algorithm (direct) than malloc's. */
	RUN(2, t_allreduce(1024, WEFT_FLOAT32, WEFT_MAX, 0, 1));
	RUN(2, t_allreduce_mem(1024, WEFT_FLOAT32, WEFT_MAX, 1));
	RUN(2, t_allreduce(1024, WEFT_FLOAT32, WEFT_MAX, 0, 1));
	RUN(2, t_allreduce_mem(1024, WEFT_FLOAT32, WEFT_MAX, 0));
	RUN(2, t_allreduce(1024, WEFT_FLOAT32, WEFT_MAX, 0, 0));
	RUN(3, t_allgather(c, WEFT_INT32, 0, 0));
	RUN(2, t_allgather(c, WEFT_INT32, 0, 1));
	RUN(2, t_allgather(c, WEFT_INT64, 0, 1));
	RUN(3, t_reduce_scatter(c, WEFT_INT32, WEFT_SUM, 0, 0));
	RUN(2, t_reduce_scatter(c, WEFT_INT32, WEFT_SUM, 0, 1));
	RUN(2, t_reduce_scatter(c, WEFT_INT32, WEFT_MIN, 0, 1));
	RUN(3, t_alltoall(c, WEFT_INT32, 0, 0));
	RUN(2, t_alltoall(c, WEFT_INT32, 0, 1));
	RUN(2, t_alltoall(c, WEFT_UINT32, 0, 1));
	RUN(3, check_st(weft_barrier(g_comm, NULL), "barrier in a run"));
	t_barrier(0);
	replay_quick_runs();
	/* Refused after a run of the same shape, and the run goes on afterwards. */
	RUN(2, t_broadcast(c, WEFT_INT32, 0, 0));
	st = weft_broadcast(NULL, c, WEFT_INT32, 0, g_comm, NULL);
	if (st != WEFT_ERR_INVALID_ARG)
		fail("broadcast of a NULL buffer after a run: %s", weft_strerror(st));
	st = weft_broadcast(buf, c, WEFT_INT32, g_size, g_comm, NULL);
	if (st != WEFT_ERR_INVALID_ARG)
		fail("broadcast from root %d of %d ranks after a run: %s", g_size, g_size,
		     weft_strerror(st));
	RUN(2, t_broadcast(c, WEFT_INT32, 0, 0));
	RUN(2, t_allreduce(c, WEFT_INT32, WEFT_SUM, 0, 0));
	st = weft_allreduce(buf, NULL, c, WEFT_INT32, WEFT_SUM, g_comm, NULL);
	if (st != WEFT_ERR_INVALID_ARG)
		fail("allreduce into a NULL buffer after a run: %s", weft_strerror(st));
	/* Inside a group the same call does not block: the last rank comes 0.6 s late, and
	 * the others' call returns at once; the group's end completes it. */
	for (size_t i = 0; i < c; i++)
		buf[i] = (int32_t)(g_rank + 1) * (int32_t)(i + 1);
	if (g_rank == g_size - 1)
		sleep_ms(600);
	st = weft_group_start(g_comm);
	double t0 = now_s();
	if (st == WEFT_OK)
		st = weft_allreduce(buf, out, c, WEFT_INT32, WEFT_SUM, g_comm, NULL);
	if (st == WEFT_OK && g_rank != g_size - 1 && now_s() - t0 > 0.45)
		fail("allreduce in a group after a run blocked %.3f s for the late rank",
		     now_s() - t0);
	if (st == WEFT_OK)
		st = weft_group_end(g_comm);
	if (check_st(st, "allreduce in a group after a run") == 0)
		for (size_t i = 0; i < c; i++)
			if (out[i] != (int32_t)(g_size * (g_size + 1) / 2) * (int32_t)(i + 1)) {
				fail("allreduce in a group after a run: element %zu is %d", i,
				     (int)out[i]);
				break;
			}
	free(buf);
}

/* ---- send / recv ---- */

static int next(int d)
{
	return (g_rank + d + g_size) % g_size;
}

/* Every rank sends to rank+1 and receives from rank-1, blocking-style calls in a group. */
static void p2p_ring(size_t count, int nested)
{
	size_t bytes = count * 4;
	uint8_t *send = alloc_buf(bytes), *recv = alloc_buf(bytes);
	char what[120];
	weft_status_t st, st2 = WEFT_OK, st3 = WEFT_OK;
	long long k;

	snprintf(what, sizeof(what), "ring of send/recv count %zu in a %sgroup", count,
		 nested ? "nested " : "");
	fill(send, bytes, g_rank, 40);
	st = weft_group_start(g_comm);
	if (nested)
		st2 = weft_group_start(g_comm);
	if (st == WEFT_OK)
		st = weft_send(send, count, WEFT_INT32, next(1), 40, g_comm, NULL);
	if (nested)
		st3 = weft_group_end(g_comm); /* inner end: nothing may block yet */
	if (st == WEFT_OK)
		st = weft_recv(recv, count, WEFT_INT32, next(-1), 40, g_comm, NULL);
	if (st == WEFT_OK)
		st = st2 != WEFT_OK ? st2 : st3;
	if (st == WEFT_OK)
		st = weft_group_end(g_comm);
	if (check_st(st, what) == 0) {
		k = diff(recv, bytes, next(-1), 40);
		if (k >= 0)
			fail("%s: differs at byte %lld", what, k);
		check_guard(recv, bytes, what);
	}
	free(send);
	free(recv);
}

/* Rank r receives from r-1, adds r and sends on; several messages in flight, one tag,
 * different sizes (so a reordering would also show as a size mismatch). */
static void p2p_pipeline(void)
{
	enum { K = 6 };
	int32_t *buf[K];
	size_t cnt[K];
	weft_request_t *rr[K] = {NULL}, *sr[K] = {NULL};
	int last = g_size - 1;
	weft_status_t st = WEFT_OK;

	for (int k = 0; k < K; k++) {
		cnt[k] = (size_t)(k % 2 ? 100000 + k : 3 + k);
		buf[k] = (int32_t *)alloc_buf(cnt[k] * 4);
		if (g_rank == 0)
			for (size_t i = 0; i < cnt[k]; i++)
				buf[k][i] = (int32_t)(i * 7 + (size_t)k * 1000);
	}
	for (int k = 0; g_rank > 0 && k < K && st == WEFT_OK; k++)
		st = weft_recv(buf[k], cnt[k], WEFT_INT32, g_rank - 1, -77, g_comm, &rr[k]);
	for (int k = 0; k < K && st == WEFT_OK; k++) {
		if (g_rank > 0) {
			st = weft_wait(&rr[k]);
			for (size_t i = 0; st == WEFT_OK && i < cnt[k]; i++)
				buf[k][i] += g_rank;
		}
		if (st == WEFT_OK && g_rank < last)
			st = weft_send(buf[k], cnt[k], WEFT_INT32, g_rank + 1, -77, g_comm, &sr[k]);
	}
	if (st == WEFT_OK)
		st = weft_waitall(sr, K);
	if (check_st(st, "send/recv pipeline") == 0 && g_rank == last) {
		int32_t add = (int32_t)(last * (last + 1) / 2);
		for (int k = 0; k < K; k++) {
			for (size_t i = 0; i < cnt[k]; i++) {
				if (buf[k][i] != (int32_t)(i * 7 + (size_t)k * 1000) + add) {
					fail("pipeline message %d element %zu is %d", k, i,
					     buf[k][i]);
					break;
				}
			}
		}
	}
	weft_waitall(rr, K);
	weft_waitall(sr, K);
	for (int k = 0; k < K; k++)
		free(buf[k]);
}

/* Rank 0 sends rank 1 several messages on one tag, eager and large mixed: they must
 * arrive in order, blocking receives and posted-ahead receives alike. Distinct tags
 * (negative and extreme ones too) match by tag, not by order. */
static void p2p_order(void)
{
	enum { M = 8 };
	size_t cnt[M];
	int32_t *b[M];
	weft_request_t *rq[M] = {NULL};
	weft_status_t st = WEFT_OK;
	int32_t x1 = 111, x2 = 222, y1 = 0, y2 = 0;

	if (g_rank > 1)
		return;
	for (int k = 0; k < M; k++) {
		cnt[k] = k % 3 == 1 ? 200000 : (size_t)(k + 1);
		b[k] = (int32_t *)alloc_buf(cnt[k] * 4);
		for (size_t i = 0; i < cnt[k]; i++)
			b[k][i] = g_rank == 0 ? (int32_t)(k * 1000003 + (int)i) : -1;
	}
	for (int round = 0; round < 2 && st == WEFT_OK; round++) {
		for (int k = 0; k < M && st == WEFT_OK; k++) {
			if (g_rank == 0)
				st = weft_send(b[k], cnt[k], WEFT_INT32, 1, 5, g_comm, &rq[k]);
			else if (round == 0)
				st = weft_recv(b[k], cnt[k] + 3, WEFT_INT32, 0, 5, g_comm, &rq[k]);
			else /* blocking receives, longer than the messages (allowed) */
				st = weft_recv(b[k], cnt[k] + 1, WEFT_INT32, 0, 5, g_comm, NULL);
		}
		if (st == WEFT_OK)
			st = weft_waitall(rq, M);
		for (int k = 0; g_rank == 1 && st == WEFT_OK && k < M; k++) {
			for (size_t i = 0; i < cnt[k]; i++) {
				if (b[k][i] != (int32_t)(k * 1000003 + (int)i)) {
					fail("same-tag message %d (round %d) element %zu is %d", k,
					     round, i, b[k][i]);
					break;
				}
				b[k][i] = -1;
			}
		}
	}
	check_st(st, "same-tag ordering");
	if (g_rank == 0) {
		st = weft_send(&x1, 1, WEFT_INT32, 1, INT_MIN, g_comm, NULL);
		if (st == WEFT_OK)
			st = weft_send(&x2, 1, WEFT_INT32, 1, INT_MAX, g_comm, NULL);
	} else {
		st = weft_recv(&y2, 1, WEFT_INT32, 0, INT_MAX, g_comm, NULL);
		if (st == WEFT_OK)
			st = weft_recv(&y1, 1, WEFT_INT32, 0, INT_MIN, g_comm, NULL);
		if (st == WEFT_OK && (y1 != 111 || y2 != 222))
			fail("tags INT_MIN / INT_MAX matched wrongly: %d %d", y1, y2);
	}
	check_st(st, "extreme tags");
	for (int k = 0; k < M; k++)
		free(b[k]);
}

/* A receive shorter than the message fails with both sizes named; the pair stays usable. */
static void p2p_mismatch(size_t count)
{
	int32_t *b = (int32_t *)alloc_buf(count * 4);
	char want1[64], want2[64];
	weft_status_t st;
	int32_t ok = 5, got = 0;

	if (g_rank > 1) {
		free(b);
		return;
	}
	if (g_rank == 0) {
		fill((uint8_t *)b, count * 4, 0, 9);
		st = weft_send(b, count, WEFT_INT32, 1, 9, g_comm, NULL);
		/* An eager sender is done before the receiver looks; a rendezvous sender
		 * hears the rejection. */
		if (st != WEFT_OK && st != WEFT_ERR_MISMATCH)
			fail("send of a too-long message: %s: %s", weft_strerror(st),
			     weft_comm_last_error(g_comm));
		st = weft_send(&ok, 1, WEFT_INT32, 1, 9, g_comm, NULL);
		check_st(st, "send after a mismatch");
	} else {
		st = weft_recv(b, count / 2, WEFT_INT32, 0, 9, g_comm, NULL);
		snprintf(want1, sizeof(want1), "%zu", count * 4);
		snprintf(want2, sizeof(want2), "%zu", count / 2 * 4);
		if (st != WEFT_ERR_MISMATCH)
			fail("short receive of %zu elements: got %s, want a mismatch", count,
			     weft_strerror(st));
		else if (!strstr(weft_comm_last_error(g_comm), want1) ||
			 !strstr(weft_comm_last_error(g_comm), want2))
			fail("short receive: error '%s' does not name %s and %s bytes",
			     weft_comm_last_error(g_comm), want1, want2);
		st = weft_recv(&got, 1, WEFT_INT32, 0, 9, g_comm, NULL);
		if (check_st(st, "receive after a mismatch") == 0 && got != 5)
			fail("receive after a mismatch got %d", got);
	}
	free(b);
}

/* A posted receive must not match collective traffic in between. */
static void p2p_vs_collectives(void)
{
	int32_t out = g_rank * 10 + 1, in = -1, x = 1, sum = 0;
	weft_request_t *rq = NULL;
	weft_status_t st;

	st = weft_recv(&in, 1, WEFT_INT32, next(-1), 0, g_comm, &rq);
	if (st == WEFT_OK)
		st = weft_allreduce(&x, &sum, 1, WEFT_INT32, WEFT_SUM, g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_barrier(g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_send(&out, 1, WEFT_INT32, next(1), 0, g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_wait(&rq);
	if (check_st(st, "p2p around collectives") == 0 &&
	    (in != next(-1) * 10 + 1 || sum != g_size))
		fail("p2p around collectives: got %d and sum %d", in, sum);
	if (rq != NULL)
		weft_wait(&rq);
}

static void s_p2p(void)
{
	if (g_size < 2)
		return; /* no peer to talk to */
	p2p_ring(5, 0);
	p2p_ring(300001, 0);
	p2p_ring(1, 1);
	p2p_ring(70000, 1);
	p2p_pipeline();
	p2p_order();
	p2p_mismatch(10);
	p2p_mismatch(400000);
	p2p_vs_collectives();
}

/* ---- groups of collectives, several requests at once ---- */

static void s_group(void)
{
	size_t c = 513, es = 4;
	uint8_t *ag = alloc_buf(c * es * (size_t)g_size), *bc = alloc_buf(c * es);
	int32_t *rs = (int32_t *)alloc_buf(c * es * (size_t)g_size), rsout[513];
	weft_request_t *rq[3] = {NULL};
	weft_status_t st;
	int root = g_size - 1;

	fill(ag + (size_t)g_rank * c * es, c * es, g_rank, 0);
	if (g_rank == root)
		fill(bc, c * es, root, 7);
	for (size_t i = 0; i < c * (size_t)g_size; i++)
		rs[i] = (int32_t)val(WEFT_SUM, WEFT_INT32, g_rank, i);
	/* Blocking-style collectives in a group complete at its end. */
	st = weft_group_start(g_comm);
	if (st == WEFT_OK)
		st = weft_allgather(ag + (size_t)g_rank * c * es, ag, c, WEFT_INT32, g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_broadcast(bc, c, WEFT_INT32, root, g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_reduce_scatter(rs, rsout, c, WEFT_INT32, WEFT_SUM, g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_barrier(g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_group_end(g_comm);
	if (check_st(st, "group of collectives") == 0) {
		for (int b = 0; b < g_size; b++)
			if (diff(ag + (size_t)b * c * es, c * es, b, 0) >= 0)
				fail("group allgather: block %d wrong", b);
		if (diff(bc, c * es, root, 7) >= 0)
			fail("group broadcast wrong");
		check_reduced(rsout, WEFT_INT32, WEFT_SUM, c, (size_t)g_rank * c,
			      "group reduce_scatter");
	}
	/* Several requests in flight at once, completed by waitall. */
	memset(ag, 0xee, c * es * (size_t)g_size);
	memset(bc, 0xee, c * es);
	fill(ag + (size_t)g_rank * c * es, c * es, g_rank, 0);
	if (g_rank == 0)
		fill(bc, c * es, 0, 7);
	st = weft_allgather(ag + (size_t)g_rank * c * es, ag, c, WEFT_INT32, g_comm, &rq[0]);
	if (st == WEFT_OK)
		st = weft_broadcast(bc, c, WEFT_INT32, 0, g_comm, &rq[1]);
	if (st == WEFT_OK)
		st = weft_reduce_scatter(rs, rsout, c, WEFT_INT32, WEFT_SUM, g_comm, &rq[2]);
	if (st == WEFT_OK)
		st = weft_waitall(rq, 3);
	if (check_st(st, "three requests at once") == 0) {
		for (int b = 0; b < g_size; b++)
			if (diff(ag + (size_t)b * c * es, c * es, b, 0) >= 0)
				fail("async allgather: block %d wrong", b);
		if (diff(bc, c * es, 0, 7) >= 0)
			fail("async broadcast wrong");
		check_reduced(rsout, WEFT_INT32, WEFT_SUM, c, (size_t)g_rank * c,
			      "async reduce_scatter");
	}
	weft_waitall(rq, 3);
	free(ag);
	free(bc);
	free(rs);
}

/* ---- determinism: float reductions of arbitrary data give the same bits twice ---- */

static void s_determinism(void)
{
	size_t n = 100003, nrs = 20011;
	float *in = malloc(n * 4), *a = malloc(n * 4), *b = malloc(n * 4);
	float *rsin = malloc(nrs * (size_t)g_size * 4);
	weft_status_t st;

	if (!in || !a || !b || !rsin)
		exit(1);
	for (size_t i = 0; i < n; i++)
		in[i] = (float)(sin((double)i * 0.37 + g_rank) * 1e3 / (1.0 + (double)(i % 97)));
	for (size_t i = 0; i < nrs * (size_t)g_size; i++)
		rsin[i] = (float)(cos((double)i * 1.3 + g_rank * 0.7) / (3.0 + (double)(i % 11)));
	for (int rep = 0; rep < 2; rep++) {
		float *out = rep ? b : a;
		memset(out, 0, n * 4);
		st = weft_allreduce(in, out, n, WEFT_FLOAT32, WEFT_SUM, g_comm, NULL);
		check_st(st, "determinism allreduce");
	}
	if (memcmp(a, b, n * 4) != 0)
		fail("float32 allreduce of the same data differs between two runs");
	for (int rep = 0; rep < 2; rep++) {
		float *out = rep ? b : a;
		memset(out, 0, nrs * 4);
		st = weft_reduce_scatter(rsin, out, nrs, WEFT_FLOAT32, WEFT_SUM, g_comm, NULL);
		check_st(st, "determinism reduce_scatter");
	}
	if (memcmp(a, b, nrs * 4) != 0)
		fail("float32 reduce_scatter of the same data differs between two runs");
	for (int root = 0; root<g_size; root += g_size - 1> 0 ? g_size - 1 : 1) {
		for (int rep = 0; rep < 2; rep++) {
			float *out = rep ? b : a;
			memset(out, 0, n * 4);
			st = weft_reduce(in, out, n, WEFT_FLOAT32, WEFT_SUM, root, g_comm, NULL);
			check_st(st, "determinism reduce");
		}
		if (g_rank == root && memcmp(a, b, n * 4) != 0)
			fail("float32 reduce at root %d differs between two runs", root);
	}
	free(in);
	free(a);
	free(b);
	free(rsin);
}

/* ---- argument checks: local, no traffic ---- */

static void expect_invalid(weft_status_t st, const char *what, const char *word)
{
	if (st != WEFT_ERR_INVALID_ARG)
		fail("%s: got %s, want invalid argument", what, weft_strerror(st));
	else if (word != NULL && strstr(weft_comm_last_error(g_comm), word) == NULL)
		fail("%s: message '%s' does not mention '%s'", what, weft_comm_last_error(g_comm),
		     word);
}

static void s_args(void)
{
	int32_t a[8] = {0}, b[64] = {0};
	size_t v[64] = {0};
	weft_request_t *r = (weft_request_t *)&r;
	int n = g_size;

	expect_invalid(weft_allgather(NULL, b, 4, WEFT_INT32, g_comm, &r), "allgather NULL send",
		       "sendbuf");
	if (r != NULL)
		fail("a failed call left *req set");
	expect_invalid(weft_allgather(a, b, SIZE_MAX / 2, WEFT_INT32, g_comm, NULL),
		       "allgather overflow", "overflow");
	/* the first count whose size * count elements no longer fit */
	expect_invalid(
	    weft_allreduce(a, b, SIZE_MAX / 4 / (size_t)n + 1, WEFT_INT32, WEFT_SUM, g_comm, NULL),
	    "allreduce overflow by one", "overflow");
	expect_invalid(weft_reduce_scatter(a, b, 1, WEFT_INT32, (weft_op_t)17, g_comm, NULL),
		       "reduce_scatter bad op", "op");
	expect_invalid(weft_reduce_scatter(a, NULL, 1, WEFT_INT32, WEFT_SUM, g_comm, NULL),
		       "reduce_scatter NULL recv", "recvbuf");
	expect_invalid(weft_broadcast(a, 1, WEFT_INT32, n, g_comm, NULL), "broadcast root = size",
		       "root");
	expect_invalid(weft_broadcast(NULL, 1, WEFT_INT32, 0, g_comm, NULL), "broadcast NULL",
		       "buf");
	expect_invalid(weft_reduce(a, b, 1, WEFT_INT32, WEFT_SUM, -1, g_comm, NULL),
		       "reduce root -1", "root");
	expect_invalid(weft_reduce(a, NULL, 1, WEFT_INT32, WEFT_SUM, g_rank, g_comm, NULL),
		       "reduce NULL recv at root", "recvbuf");
	expect_invalid(weft_gather(a, NULL, 1, WEFT_INT32, g_rank, g_comm, NULL),
		       "gather NULL recv at root", "recvbuf");
	expect_invalid(weft_scatter(NULL, b, 1, WEFT_INT32, g_rank, g_comm, NULL),
		       "scatter NULL send at root", "sendbuf");
	expect_invalid(weft_scatter(a, b, 1, WEFT_INT32, n + 3, g_comm, NULL), "scatter root",
		       "root");
	expect_invalid(weft_alltoall(a, b, 1, (weft_dtype_t)77, g_comm, NULL), "alltoall dtype",
		       "dtype");
	expect_invalid(weft_alltoallv(a, v, NULL, b, v, v, WEFT_INT32, g_comm, NULL),
		       "alltoallv NULL sdispls", "sdispls");
	expect_invalid(weft_alltoallv(a, NULL, v, b, v, v, WEFT_INT32, g_comm, NULL),
		       "alltoallv NULL sendcounts", "sendcounts");
	expect_invalid(weft_send(a, 1, WEFT_INT32, g_rank, 0, g_comm, NULL), "send to self",
		       "peer");
	expect_invalid(weft_recv(b, 1, WEFT_INT32, n, 0, g_comm, NULL), "recv from size", "peer");
	if (g_size > 1)
		expect_invalid(weft_recv(NULL, 1, WEFT_INT32, next(1), 0, g_comm, NULL),
			       "recv NULL", "buf");
	expect_invalid(weft_group_end(g_comm), "group_end without start", "group");
	if (weft_barrier(NULL, NULL) != WEFT_ERR_INVALID_ARG ||
	    weft_group_start(NULL) != WEFT_ERR_INVALID_ARG)
		fail("NULL communicator accepted");
	/* An error inside a group is also the group's. */
	weft_group_start(g_comm);
	expect_invalid(weft_gather(NULL, b, 1, WEFT_INT32, 0, g_comm, NULL), "gather in group",
		       "sendbuf");
	expect_invalid(weft_group_end(g_comm), "group_end after a failed call", "sendbuf");
	/* Zero counts: valid no-ops with NULL buffers, blocking and async. */
	r = NULL;
	if (weft_allgather(NULL, NULL, 0, WEFT_INT32, g_comm, NULL) != WEFT_OK ||
	    weft_reduce_scatter(NULL, NULL, 0, WEFT_INT32, WEFT_MAX, g_comm, NULL) != WEFT_OK ||
	    weft_broadcast(NULL, 0, WEFT_INT32, 0, g_comm, NULL) != WEFT_OK ||
	    weft_reduce(NULL, NULL, 0, WEFT_INT32, WEFT_SUM, 0, g_comm, NULL) != WEFT_OK ||
	    weft_gather(NULL, NULL, 0, WEFT_INT32, 0, g_comm, NULL) != WEFT_OK ||
	    weft_scatter(NULL, NULL, 0, WEFT_INT32, 0, g_comm, NULL) != WEFT_OK ||
	    weft_alltoall(NULL, NULL, 0, WEFT_INT32, g_comm, NULL) != WEFT_OK ||
	    (g_size > 1 && (weft_send(NULL, 0, WEFT_INT32, next(1), 3, g_comm, NULL) != WEFT_OK ||
			    weft_recv(NULL, 0, WEFT_INT32, next(-1), 3, g_comm, &r) != WEFT_OK ||
			    weft_wait(&r) != WEFT_OK)))
		fail("a zero-count call failed: %s", weft_comm_last_error(g_comm));
}

/* One async allreduce of count int32 on every rank, rank 0 away (computing, not calling
 * weft) for away_s after its start; returns how long this rank waited, or -1 on failure.
 * The result is checked exactly. */
static double progress_round(const int32_t *in, int32_t *out, size_t count, double away_s)
{
	weft_request_t *req = NULL;
	double t;

	if (check_st(weft_barrier(g_comm, NULL), "progress: barrier") != 0)
		return -1;
	t = now_s();
	if (check_st(weft_allreduce(in, out, count, WEFT_INT32, WEFT_SUM, g_comm, &req),
		     "progress: async allreduce") != 0)
		return -1;
	if (g_rank == 0 && away_s > 0)
		sleep_ms((int)(away_s * 1000));
	if (check_st(weft_wait(&req), "progress: wait") != 0)
		return -1;
	t = now_s() - t;
	for (size_t i = 0; i < count; i++) {
		int64_t want = 0;

		for (int r = 0; r < g_size; r++)
			want += (int64_t)((i * 7 + (size_t)r * 13) % 1000);
		if (out[i] != (int32_t)want) {
			fail("progress: element %zu is %d, want %lld", i, out[i], (long long)want);
			return -1;
		}
	}
	return t;
}

/* Async requests progress while their caller is away: every rank starts an allreduce of
 * 1 MiB (a ring: every rank forwards its peers' segments); first all wait at once (tb, the
 * slowest rank's wait), then rank 0 computes for S = max(0.5 s, 4 tb + 0.2 s) without
 * calling weft while the others wait. Its progress thread must forward for it (within
 * WT_API_ASYNC_LAZY_US of the start, or the backed-off look), so their waits end about tb
 * after the start, long before rank 0 is back; they must end within (S + tb) / 2. Without
 * the thread (WEFT_PROGRESS_THREAD=0) they could not. Lossy links (WEFT_FAULT) make tb
 * longer, and S with it; where tb exceeds 0.25 s the away round is skipped. */
static void s_progress(void)
{
	const char *th = getenv("WEFT_PROGRESS_THREAD");
	size_t count = (size_t)1 << 18;
	int32_t *in, *out;
	double tb, tmax = 0, away, t;

	/* With the big cases only: over slow links (DPDK on af_packet under a capture) one
	 * round took seconds. */
	if (!g_big || g_size < 2 || (th != NULL && strcmp(th, "0") == 0))
		return;
	in = malloc(count * sizeof(*in));
	out = malloc(count * sizeof(*out));
	if (in == NULL || out == NULL) {
		fail("progress: out of memory");
		free(in);
		free(out);
		return;
	}
	for (size_t i = 0; i < count; i++)
		in[i] = (int32_t)((i * 7 + (size_t)g_rank * 13) % 1000);
	/* The baseline pays for the plan, the buffers' first touch and the links' warm-up
	 * too, which only makes S longer. */
	tb = progress_round(in, out, count, 0);
	if (tb < 0 || check_st(weft_allreduce(&tb, &tmax, 1, WEFT_FLOAT64, WEFT_MAX, g_comm, NULL),
			       "progress: allreduce of the times") != 0)
		goto out;
	/* Links this slow (DPDK over af_packet under a capture) would make the round long
	 * and say nothing the others do not. */
	if (tmax > 0.25)
		goto out;
	away = 4 * tmax + 0.2 > 0.5 ? 4 * tmax + 0.2 : 0.5;
	t = progress_round(in, out, count, away);
	if (g_rank == 1 && getenv("COLLS_VERBOSE") != NULL)
		fprintf(stderr,
			"progress: baseline %.3f s, rank 0 away %.3f s, rank 1 waited %.3f s\n",
			tmax, away, t);
	if (t >= 0 && g_rank != 0 && t > (away + tmax) / 2)
		fail("progress: rank %d waited %.3f s for an allreduce (%.3f s with everyone "
		     "there) whose rank 0 computed %.3f s: its progress thread did not forward "
		     "for it",
		     g_rank, t, tmax, away);
out:
	free(in);
	free(out);
}

int main(int argc, char **argv)
{
	int expect_init_fail = 0;
	weft_status_t st;
	double t0 = now_s();

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--only") == 0 && i + 1 < argc)
			g_only = argv[++i];
		else if (strcmp(argv[i], "--big") == 0)
			g_big = 1;
		else if (strcmp(argv[i], "--quick") == 0)
			g_quick = 1;
		else if (strcmp(argv[i], "--expect-init-fail") == 0)
			expect_init_fail = 1;
		else {
			fprintf(stderr,
				"usage: %s [--only SECTION] [--big] [--quick] "
				"[--expect-init-fail]\n",
				argv[0]);
			return 2;
		}
	}
	st = weft_init(&g_comm);
	if (expect_init_fail) {
		if (st == WEFT_ERR_INVALID_ARG)
			return 0;
		fprintf(stderr, "weft_init: got %s, want invalid argument\n", weft_strerror(st));
		if (st == WEFT_OK)
			weft_comm_destroy(g_comm);
		return 1;
	}
	if (st != WEFT_OK) {
		fprintf(stderr, "weft_init failed: %s\n", weft_strerror(st));
		return 1;
	}
	g_rank = weft_comm_rank(g_comm);
	g_size = weft_comm_size(g_comm);
	static const struct {
		const char *name;
		void (*fn)(void);
	} sections[] = {
	    {"args", s_args},		{"allreduce", s_allreduce},
	    {"allgather", s_allgather}, {"reduce_scatter", s_reduce_scatter},
	    {"broadcast", s_broadcast}, {"reduce", s_reduce},
	    {"gather", s_gather},	{"scatter", s_scatter},
	    {"alltoall", s_alltoall},	{"alltoallv", s_alltoallv},
	    {"barrier", s_barrier},	{"p2p", s_p2p},
	    {"group", s_group},		{"determinism", s_determinism},
	    {"replay", s_replay},	{"progress", s_progress},
	};
	for (size_t s = 0; s < sizeof(sections) / sizeof(sections[0]); s++) {
		double ts = now_s();
		if (!section(sections[s].name))
			continue;
		g_salt = (int)s;
		sections[s].fn();
		if (g_rank == 0 && getenv("COLLS_VERBOSE") != NULL)
			fprintf(stderr, "%s: %.2f s\n", sections[s].name, now_s() - ts);
	}
	/* Everyone's verdict, so one rank's failure fails all of them. */
	int64_t mine = g_fail, total = 0;
	st = weft_allreduce(&mine, &total, 1, WEFT_INT64, WEFT_SUM, g_comm, NULL);
	if (st != WEFT_OK)
		fprintf(stderr, "rank %d: the closing allreduce failed: %s\n", g_rank,
			weft_comm_last_error(g_comm));
	if (g_rank == 0)
		fprintf(stderr, "colls_check: %d ranks, %lld failures, %.1f s\n", g_size,
			(long long)total, now_s() - t0);
	weft_comm_destroy(g_comm);
	return st == WEFT_OK && total == 0 ? 0 : 1;
}
