/* Multi-process test of communicators (tests/integration): split, create_group, dup and
 * their collectives, create/destroy cycles without leaks, abort from another thread,
 * WEFT_CHECK mismatches, and a rank killed mid-stream (run by comms_killed.sh, not
 * weftrun). One mode per run: --basic, --cycles, --abort, --check, --nocheck, --killed N.
 * Exit 0 only if every check passed. */
#include <dirent.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <weft/weft.h>

#include "tests/integration/common/report.h"

static int g_size;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static void expect_st(weft_status_t got, weft_status_t want, const char *what,
		      const weft_comm_t *comm)
{
	if (got != want)
		fail("%s: got %s (%d), want %s: %s", what, weft_strerror(got), (int)got,
		     weft_strerror(want), comm != NULL ? weft_comm_last_error(comm) : "");
}

/* ---- --basic: 8 ranks, model- and data-parallel groups ---- */

static int64_t val(int world_rank, size_t i)
{
	return (int64_t)(world_rank + 1) * 1000003 + (int64_t)i * 7;
}

/* Sum over the given world ranks of val(r, i), checked against buf. */
static void check_sum(const int64_t *buf, size_t n, const int *wranks, int nr, const char *what)
{
	for (size_t i = 0; i < n; i++) {
		int64_t want = 0;
		for (int k = 0; k < nr; k++)
			want += val(wranks[k], i);
		if (buf[i] != want) {
			fail("%s: element %zu is %lld, want %lld", what, i, (long long)buf[i],
			     (long long)want);
			return;
		}
	}
}

static void fill(int64_t *buf, size_t n)
{
	for (size_t i = 0; i < n; i++)
		buf[i] = val(g_rank, i);
}

static void expect_shape(const weft_comm_t *c, int rank, int size, const char *what)
{
	if (c == NULL) {
		fail("%s: communicator is NULL", what);
		return;
	}
	if (weft_comm_rank(c) != rank || weft_comm_size(c) != size)
		fail("%s: rank/size %d/%d, want %d/%d", what, weft_comm_rank(c), weft_comm_size(c),
		     rank, size);
}

/* Allreduces on four communicators at once (async), each checked exactly. */
static void concurrent_allreduce(weft_comm_t *const *comms, const int (*members)[4],
				 const int *nmembers, int ncomms, size_t n)
{
	int64_t *bufs[4];
	weft_request_t *reqs[4] = {NULL};
	weft_status_t st;

	for (int c = 0; c < ncomms; c++) {
		bufs[c] = malloc(n * sizeof(int64_t));
		fill(bufs[c], n);
		st = weft_allreduce(bufs[c], bufs[c], n, WEFT_INT64, WEFT_SUM, comms[c], &reqs[c]);
		expect_st(st, WEFT_OK, "async allreduce start", comms[c]);
	}
	st = weft_waitall(reqs, (size_t)ncomms);
	expect_st(st, WEFT_OK, "waitall of concurrent allreduces", comms[0]);
	for (int c = 0; c < ncomms; c++) {
		char what[64];
		snprintf(what, sizeof(what), "concurrent allreduce %d (n=%zu)", c, n);
		check_sum(bufs[c], n, members[c], nmembers[c], what);
		free(bufs[c]);
	}
}

static void sub_collectives(weft_comm_t *c, const int *wranks, const char *what)
{
	int size = weft_comm_size(c), rank = weft_comm_rank(c);
	int root = size - 1 > 0 ? size - 1 : 0;
	int32_t mine[3], *all = malloc(sizeof(int32_t) * 3 * (size_t)size), bc[5];
	weft_status_t st;

	for (int k = 0; k < 3; k++)
		mine[k] = g_rank * 100 + k;
	st = weft_allgather(mine, all, 3, WEFT_INT32, c, NULL);
	expect_st(st, WEFT_OK, what, c);
	for (int r = 0; r < size; r++) {
		for (int k = 0; k < 3; k++) {
			if (all[r * 3 + k] != wranks[r] * 100 + k)
				fail("%s allgather: block %d[%d] = %d, want %d", what, r, k,
				     all[r * 3 + k], wranks[r] * 100 + k);
		}
	}
	for (int k = 0; k < 5; k++)
		bc[k] = rank == root ? 7000 + k : -1;
	st = weft_broadcast(bc, 5, WEFT_INT32, root, c, NULL);
	expect_st(st, WEFT_OK, what, c);
	for (int k = 0; k < 5; k++) {
		if (bc[k] != 7000 + k)
			fail("%s broadcast from root %d: [%d] = %d", what, root, k, bc[k]);
	}
	free(all);
}

typedef struct {
	weft_comm_t *comm;
	const int *wranks;
	int n;
} dup_loop_t;

/* Creation on two communicators of one context from two threads at once: ids must still
 * be agreed and distinct. */
static void *dup_loop(void *p)
{
	dup_loop_t *a = p;

	for (int i = 0; i < 10; i++) {
		weft_comm_t *d = NULL;
		int64_t b[100];
		expect_st(weft_comm_dup(a->comm, &d), WEFT_OK, "threaded dup", a->comm);
		if (d == NULL)
			return NULL;
		fill(b, 100);
		expect_st(weft_allreduce(b, b, 100, WEFT_INT64, WEFT_SUM, d, NULL), WEFT_OK,
			  "threaded allreduce", d);
		check_sum(b, 100, a->wranks, a->n, "threaded dup allreduce");
		weft_comm_destroy(d);
	}
	return NULL;
}

static void threaded_dups(weft_comm_t *mp, const int *mpw, weft_comm_t *dp, const int *dpw)
{
	dup_loop_t a = {mp, mpw, 4}, b = {dp, dpw, 2};
	pthread_t ta, tb;

	pthread_create(&ta, NULL, dup_loop, &a);
	pthread_create(&tb, NULL, dup_loop, &b);
	pthread_join(ta, NULL);
	pthread_join(tb, NULL);
}

static void mode_basic(weft_comm_t *world)
{
	weft_comm_t *mp = NULL, *dp = NULL, *gmp = NULL, *gdp = NULL, *half = NULL, *dup = NULL,
		    *even = NULL, *bad = NULL;
	int mpw[4], dpw[4], gdpw[4], halfw[4];
	int mpg = g_rank / 4, dpg = g_rank % 4;
	weft_status_t st;

	if (g_size != 8) {
		fail("--basic needs 8 ranks, have %d", g_size);
		return;
	}
	for (int i = 0; i < 4; i++)
		mpw[i] = mpg * 4 + i;
	dpw[0] = dpg;
	dpw[1] = dpg + 4;
	/* By split. */
	expect_st(weft_comm_split(world, mpg, g_rank, &mp), WEFT_OK, "split mp", world);
	expect_st(weft_comm_split(world, dpg, g_rank, &dp), WEFT_OK, "split dp", world);
	expect_shape(mp, g_rank % 4, 4, "split mp");
	expect_shape(dp, g_rank / 4, 2, "split dp");
	/* By create_group: every rank makes every group; the data-parallel lists reversed so
	 * that comm rank i is ranks[i], not the world order. */
	for (int g = 0; g < 2; g++) {
		int list[4] = {g * 4, g * 4 + 1, g * 4 + 2, g * 4 + 3};
		weft_comm_t *c = NULL;
		st = weft_comm_create_group(world, list, 4, &c);
		expect_st(st, WEFT_OK, "create_group mp", world);
		if ((c != NULL) != (g == mpg))
			fail("create_group mp %d: membership wrong (comm %p)", g, (void *)c);
		if (c != NULL)
			gmp = c;
	}
	for (int g = 0; g < 4; g++) {
		int list[2] = {g + 4, g};
		weft_comm_t *c = NULL;
		st = weft_comm_create_group(world, list, 2, &c);
		expect_st(st, WEFT_OK, "create_group dp", world);
		if ((c != NULL) != (g == dpg))
			fail("create_group dp %d: membership wrong", g);
		if (c != NULL)
			gdp = c;
	}
	gdpw[0] = dpg + 4;
	gdpw[1] = dpg;
	expect_shape(gmp, g_rank % 4, 4, "create_group mp");
	expect_shape(gdp, g_rank < 4 ? 1 : 0, 2, "create_group dp");
	if (g_fail)
		return;
	/* Every group at once, each rank in four communicators with requests on all. */
	{
		weft_comm_t *cs[4] = {mp, dp, gmp, gdp};
		const int mem[4][4] = {{mpw[0], mpw[1], mpw[2], mpw[3]},
				       {dpw[0], dpw[1], 0, 0},
				       {mpw[0], mpw[1], mpw[2], mpw[3]},
				       {gdpw[0], gdpw[1], 0, 0}};
		const int nm[4] = {4, 2, 4, 2};
		concurrent_allreduce(cs, mem, nm, 4, 1000);
		concurrent_allreduce(cs, mem, nm, 4, 70000);
	}
	threaded_dups(mp, mpw, dp, dpw);
	/* A split of a split: halves of mp in reverse key order. */
	expect_st(weft_comm_split(mp, weft_comm_rank(mp) / 2, -weft_comm_rank(mp), &half), WEFT_OK,
		  "nested split", mp);
	{
		int base = mpg * 4 + (weft_comm_rank(mp) / 2) * 2;
		halfw[0] = base + 1;
		halfw[1] = base;
		expect_shape(half, g_rank == base ? 1 : 0, 2, "nested split");
		if (half != NULL) {
			weft_comm_t *cs[1] = {half};
			const int mem[1][4] = {{halfw[0], halfw[1], 0, 0}};
			const int nm[1] = {2};
			concurrent_allreduce(cs, mem, nm, 1, 333);
			sub_collectives(half, halfw, "nested split");
		}
	}
	/* dup, and the other collectives on sub-communicators with a non-zero root. */
	expect_st(weft_comm_dup(gdp, &dup), WEFT_OK, "dup", gdp);
	expect_shape(dup, weft_comm_rank(gdp), 2, "dup");
	if (dup != NULL) {
		weft_comm_t *cs[2] = {dup, gdp};
		const int mem[2][4] = {{gdpw[0], gdpw[1], 0, 0}, {gdpw[0], gdpw[1], 0, 0}};
		const int nm[2] = {2, 2};
		concurrent_allreduce(cs, mem, nm, 2, 4097);
		sub_collectives(dup, gdpw, "dup");
	}
	sub_collectives(gmp, mpw, "create_group mp");
	sub_collectives(mp, mpw, "split mp");
	/* WEFT_UNDEFINED leaves a rank out. */
	st = weft_comm_split(world, g_rank % 2 ? WEFT_UNDEFINED : 5, 0, &even);
	expect_st(st, WEFT_OK, "split with WEFT_UNDEFINED", world);
	if ((even == NULL) != (g_rank % 2 == 1))
		fail("split with WEFT_UNDEFINED: comm %p on rank %d", (void *)even, g_rank);
	if (even != NULL) {
		int ew[4] = {0, 2, 4, 6};
		expect_shape(even, g_rank / 2, 4, "even ranks");
		sub_collectives(even, ew, "even ranks");
	}
	/* A list that is bad on every rank: INVALID_ARG everywhere, no hang. */
	{
		int dupl[3] = {0, 1, 1};
		st = weft_comm_create_group(world, dupl, 3, &bad);
		expect_st(st, WEFT_ERR_INVALID_ARG, "create_group with a duplicate", world);
		if (bad != NULL)
			fail("create_group with a duplicate gave a communicator");
	}
	/* The parent still works after all of that. */
	{
		int64_t b[10];
		int all[8] = {0, 1, 2, 3, 4, 5, 6, 7};
		fill(b, 10);
		expect_st(weft_allreduce(b, b, 10, WEFT_INT64, WEFT_SUM, world, NULL), WEFT_OK,
			  "world allreduce", world);
		check_sum(b, 10, all, 8, "world allreduce after the splits");
	}
	weft_comm_t *all_c[] = {even, dup, half, gdp, gmp, dp, mp};
	for (size_t i = 0; i < sizeof(all_c) / sizeof(all_c[0]); i++) {
		if (all_c[i] != NULL)
			expect_st(weft_comm_destroy(all_c[i]), WEFT_OK, "destroy", NULL);
	}
}

/* ---- --cycles: create and destroy without leaking fds, threads or segments ---- */

typedef struct {
	int fds, threads, segs;
} res_t;

static int count_dir(const char *path)
{
	DIR *d = opendir(path);
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return -1;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] != '.')
			n++;
	}
	closedir(d);
	return n;
}

static res_t resources(void)
{
	res_t r = {0, 0, 0};
	DIR *d = opendir("/proc/self/fd");
	struct dirent *e;

	r.threads = count_dir("/proc/self/task");
	if (d == NULL)
		return r;
	while ((e = readdir(d)) != NULL) {
		char path[300], link[512];
		ssize_t len;
		if (e->d_name[0] == '.')
			continue;
		r.fds++;
		snprintf(path, sizeof(path), "/proc/self/fd/%s", e->d_name);
		len = readlink(path, link, sizeof(link) - 1);
		if (len <= 0)
			continue;
		link[len] = '\0';
		if (strstr(link, "memfd:") != NULL || strncmp(link, "/dev/shm/", 9) == 0)
			r.segs++;
	}
	closedir(d);
	return r;
}

static void mode_cycles(weft_comm_t *world, int cycles)
{
	int list[3] = {0, 1, g_size > 2 ? 2 : 0};
	int nlist = g_size > 2 ? 3 : 1;
	res_t before, after;
	double t0 = now_s();

	/* Warm the plan cache and anything lazily opened before counting. */
	expect_st(weft_barrier(world, NULL), WEFT_OK, "barrier", world);
	before = resources();
	for (int i = 0; i < cycles && !g_fail; i++) {
		weft_comm_t *s = NULL, *d = NULL, *g = NULL;
		int64_t b[4];
		expect_st(weft_comm_split(world, g_rank % 2, g_rank, &s), WEFT_OK, "split", world);
		if (s != NULL)
			expect_st(weft_comm_dup(s, &d), WEFT_OK, "dup", s);
		expect_st(weft_comm_create_group(world, list, nlist, &g), WEFT_OK, "create_group",
			  world);
		if ((g != NULL) != (g_rank < nlist))
			fail("cycle %d: create_group membership wrong", i);
		if (d != NULL) {
			fill(b, 4);
			expect_st(weft_allreduce(b, b, 4, WEFT_INT64, WEFT_SUM, d, NULL), WEFT_OK,
				  "allreduce on dup", d);
		}
		if (g != NULL)
			expect_st(weft_barrier(g, NULL), WEFT_OK, "barrier on group", g);
		if (g != NULL)
			weft_comm_destroy(g);
		if (d != NULL)
			weft_comm_destroy(d);
		if (s != NULL)
			weft_comm_destroy(s);
	}
	expect_st(weft_barrier(world, NULL), WEFT_OK, "barrier", world);
	after = resources();
	if (before.fds != after.fds || before.threads != after.threads || before.segs != after.segs)
		fail("after %d cycles: fds %d -> %d, threads %d -> %d, shared segments %d -> %d",
		     cycles, before.fds, after.fds, before.threads, after.threads, before.segs,
		     after.segs);
	if (g_rank == 0)
		printf("%d create/destroy cycles in %.2f s; fds %d, threads %d, segments %d\n",
		       cycles, now_s() - t0, after.fds, after.threads, after.segs);
}

/* ---- --abort: abort from another thread while a collective waits ---- */

typedef struct {
	weft_comm_t *comm;
	double delay;
	weft_status_t st;
} abort_arg_t;

static void *abort_later(void *p)
{
	abort_arg_t *a = p;

	usleep((useconds_t)(a->delay * 1e6));
	a->st = weft_comm_abort(a->comm);
	return NULL;
}

static void mode_abort(weft_comm_t *world)
{
	weft_comm_t *sub = NULL, *sub2 = NULL, *x = NULL;
	abort_arg_t a;
	pthread_t th;
	weft_status_t st, async;
	int64_t b[64];
	double t0, dt;

	expect_st(weft_comm_dup(world, &sub), WEFT_OK, "dup", world);
	expect_st(weft_comm_dup(world, &sub2), WEFT_OK, "dup", world);
	if (g_fail)
		return;
	if (g_rank == 0) {
		a.comm = sub;
		a.delay = 0.5;
		a.st = WEFT_ERR_SYSTEM;
		pthread_create(&th, NULL, abort_later, &a);
		fill(b, 64);
		t0 = now_s();
		/* Rank 1 never calls this one. */
		st = weft_allreduce(b, b, 64, WEFT_INT64, WEFT_SUM, sub, NULL);
		dt = now_s() - t0;
		pthread_join(th, NULL);
		expect_st(a.st, WEFT_OK, "weft_comm_abort", sub);
		expect_st(st, WEFT_ERR_ABORTED, "allreduce during abort", sub);
		if (dt > 2.0)
			fail("the aborted wait took %.2f s", dt);
		printf("aborted wait returned after %.3f s: %s\n", dt, weft_comm_last_error(sub));
		expect_st(weft_allreduce(b, b, 64, WEFT_INT64, WEFT_SUM, sub, NULL),
			  WEFT_ERR_ABORTED, "allreduce after abort", sub);
		expect_st(weft_barrier(sub, NULL), WEFT_ERR_ABORTED, "barrier after abort", sub);
		expect_st(weft_send(b, 0, WEFT_INT64, 1, 5, sub, NULL), WEFT_ERR_ABORTED,
			  "count-0 send after abort", sub);
		expect_st(weft_comm_split(sub, 0, 0, &x), WEFT_ERR_ABORTED, "split after abort",
			  sub);
		expect_st(weft_comm_get_async_error(sub, &async), WEFT_OK, "get_async_error", sub);
		expect_st(async, WEFT_ERR_ABORTED, "async error after abort", sub);
		/* A call deferred to a group completes with ABORTED too. */
		expect_st(weft_group_start(sub2), WEFT_OK, "group_start", sub2);
		expect_st(weft_allreduce(b, b, 64, WEFT_INT64, WEFT_SUM, sub2, NULL), WEFT_OK,
			  "deferred allreduce", sub2);
		expect_st(weft_comm_abort(sub2), WEFT_OK, "abort sub2", sub2);
		expect_st(weft_group_end(sub2), WEFT_ERR_ABORTED, "group_end after abort", sub2);
	}
	/* The world is untouched by aborting its children. */
	expect_st(weft_comm_get_async_error(world, &async), WEFT_OK, "get_async_error", world);
	expect_st(async, WEFT_OK, "world async error", world);
	{
		int all[2] = {0, 1};
		fill(b, 64);
		expect_st(weft_allreduce(b, b, 64, WEFT_INT64, WEFT_SUM, world, NULL), WEFT_OK,
			  "world allreduce after abort", world);
		check_sum(b, 64, all, 2, "world allreduce after abort");
	}
	t0 = now_s();
	expect_st(weft_comm_destroy(sub), WEFT_OK, "destroy aborted", NULL);
	expect_st(weft_comm_destroy(sub2), WEFT_OK, "destroy aborted", NULL);
	if (now_s() - t0 > 2.0)
		fail("destroying aborted communicators took %.2f s", now_s() - t0);
}

/* ---- --check: WEFT_CHECK=1 finds mismatched arguments ---- */

static void expect_mismatch(weft_comm_t *world, weft_status_t st, const char *what,
			    const char *needle)
{
	expect_st(st, WEFT_ERR_MISMATCH, what, world);
	if (st == WEFT_ERR_MISMATCH && strstr(weft_comm_last_error(world), needle) == NULL)
		fail("%s: message '%s' does not say '%s'", what, weft_comm_last_error(world),
		     needle);
	if (g_rank == 0)
		printf("%s: %s\n", what, weft_comm_last_error(world));
}

static void mode_check(weft_comm_t *world)
{
	int64_t b[200];
	weft_comm_t *g = NULL;
	weft_status_t st;
	int odd = g_size - 1;
	char needle[64];

	fill(b, 200);
	st = weft_allreduce(b, b, g_rank == odd ? 100 : 200, WEFT_INT64, WEFT_SUM, world, NULL);
	snprintf(needle, sizeof(needle), "rank %d passed count 100, rank 0 count 200", odd);
	expect_mismatch(world, st, "count", needle);
	st = weft_allreduce(b, b, 200, WEFT_INT64, g_rank == 1 ? WEFT_MAX : WEFT_SUM, world, NULL);
	expect_mismatch(world, st, "op", "rank 1 passed op");
	if (g_rank == odd)
		st = weft_broadcast(b, 200, WEFT_INT64, 0, world, NULL);
	else
		st = weft_allreduce(b, b, 200, WEFT_INT64, WEFT_SUM, world, NULL);
	snprintf(needle, sizeof(needle), "rank %d called broadcast", odd);
	expect_mismatch(world, st, "collective kind", needle);
	st = weft_broadcast(b, 200, WEFT_INT64, g_rank == 1 ? 1 : 0, world, NULL);
	expect_mismatch(world, st, "root", "rank 1 passed root 1");
	/* Buffers from weft_mem_alloc on one rank only: the ranks could choose different
	 * algorithms (direct needs them on all), so the check refuses the call. */
	{
		int64_t *m = NULL;

		expect_st(weft_mem_alloc((void **)&m, 4096), WEFT_OK, "weft_mem_alloc", world);
		if (m != NULL) {
			fill(m, 200);
			st = weft_allreduce(g_rank == 1 ? m : b, g_rank == 1 ? m : b, 200,
					    WEFT_INT64, WEFT_SUM, world, NULL);
			expect_mismatch(world, st, "weft_mem on one rank",
					"rank 1's buffers are weft_mem, rank 0's are not");
			expect_st(weft_mem_free(m), WEFT_OK, "weft_mem_free", world);
		}
	}
	/* Agreeing calls still work, async too. */
	{
		weft_request_t *r = NULL;
		int all[16];
		for (int i = 0; i < g_size && i < 16; i++)
			all[i] = i;
		fill(b, 200);
		expect_st(weft_allreduce(b, b, 200, WEFT_INT64, WEFT_SUM, world, &r), WEFT_OK,
			  "checked async allreduce", world);
		if (r != NULL)
			expect_st(weft_wait(&r), WEFT_OK, "wait", world);
		check_sum(b, 200, all, g_size, "checked allreduce");
	}
	/* create_group with a list that differs on one rank: every caller learns it. */
	{
		int list[2] = {0, g_rank == odd ? 2 : 1};
		snprintf(needle, sizeof(needle), "rank %d passed a different rank list", odd);
		st = weft_comm_create_group(world, list, 2, &g);
		expect_mismatch(world, st, "create_group list", needle);
		if (g != NULL)
			fail("mismatched create_group gave a communicator");
	}
}

/* ---- --nocheck: WEFT_CHECK=0, one rank passes a larger count ---- */

static void mode_nocheck(weft_comm_t *world)
{
	size_t n = g_rank == 1 ? 300000 : 100000;
	int64_t *b = malloc(n * sizeof(int64_t));
	double t0 = now_s(), dt;
	weft_status_t st;

	fill(b, n);
	st = weft_allreduce(b, b, n, WEFT_INT64, WEFT_SUM, world, NULL);
	dt = now_s() - t0;
	if (st == WEFT_OK)
		fail("mismatched allreduce succeeded");
	if (dt > 15)
		fail("mismatched allreduce took %.1f s", dt);
	printf("rank %d: mismatched allreduce ended in %.2f s: %s: %s\n", g_rank, dt,
	       weft_strerror(st), weft_comm_last_error(world));
	free(b);
}

/* ---- --killed N: world rank N dies during a stream of allreduces ----
 * With COMMS_KILLED_LATE=R, world rank R comes 300 ms late to the call the victim dies in:
 * the other survivors hear of the death, finish and close their links before it looks, so
 * it finds the dead rank and the ranks that left in one look, and must still name the dead
 * one. */

static void mode_killed(weft_comm_t *world, int victim)
{
	weft_comm_t *rev = NULL, *pair = NULL;
	int64_t b[1024];
	weft_status_t st = WEFT_OK, async;
	double t0 = 0;
	char needle[64];
	int it, rv = g_size - 1 - victim;
	const char *late_env = getenv("COMMS_KILLED_LATE");
	int late = late_env != NULL ? atoi(late_env) : -1;

	/* Reversed order, so that the comm rank and the world rank of the victim differ. */
	expect_st(weft_comm_split(world, 0, -g_rank, &rev), WEFT_OK, "split", world);
	expect_st(weft_comm_split(world, g_rank / 2, g_rank, &pair), WEFT_OK, "split", world);
	if (g_fail)
		return;
	for (it = 0; it < 100000; it++) {
		if (g_rank == victim && it == 30)
			raise(SIGKILL);
		if (it == 30 && g_rank == late)
			usleep(300000);
		if (it == 30)
			t0 = now_s();
		fill(b, 1024);
		st = weft_allreduce(b, b, 1024, WEFT_INT64, WEFT_SUM, rev, NULL);
		if (st != WEFT_OK)
			break;
	}
	printf("rank %d: allreduce #%d failed after %.2f s: %s: %s\n", g_rank, it, now_s() - t0,
	       weft_strerror(st), weft_comm_last_error(rev));
	expect_st(st, WEFT_ERR_PEER_FAILED, "allreduce with a dead rank", rev);
	snprintf(needle, sizeof(needle), "rank %d (world rank %d)", rv, victim);
	if (strstr(weft_comm_last_error(rev), needle) == NULL &&
	    strstr(weft_comm_last_error(rev), "rank") == NULL)
		fail("message '%s' names no rank", weft_comm_last_error(rev));
	/* Later calls fail at once and name the dead rank. */
	st = weft_allreduce(b, b, 1024, WEFT_INT64, WEFT_SUM, rev, NULL);
	expect_st(st, WEFT_ERR_PEER_FAILED, "allreduce after the failure", rev);
	if (strstr(weft_comm_last_error(rev), needle) == NULL)
		fail("message '%s' does not say '%s'", weft_comm_last_error(rev), needle);
	weft_comm_get_async_error(rev, &async);
	expect_st(async, WEFT_ERR_PEER_FAILED, "async error", rev);
	/* A communicator without the dead rank carries on. */
	weft_comm_get_async_error(pair, &async);
	if (g_rank / 2 == victim / 2) {
		expect_st(async, WEFT_ERR_PEER_FAILED, "async error of the victim's pair", pair);
	} else {
		int pw[2] = {g_rank / 2 * 2, g_rank / 2 * 2 + 1};
		expect_st(async, WEFT_OK, "async error of a healthy pair", pair);
		fill(b, 1024);
		expect_st(weft_allreduce(b, b, 1024, WEFT_INT64, WEFT_SUM, pair, NULL), WEFT_OK,
			  "allreduce on a healthy pair", pair);
		check_sum(b, 1024, pw, 2, "healthy pair");
	}
	t0 = now_s();
	weft_comm_destroy(pair);
	weft_comm_destroy(rev);
	printf("rank %d: destroyed the communicators in %.2f s\n", g_rank, now_s() - t0);
}

int main(int argc, char **argv)
{
	weft_comm_t *world = NULL;
	const char *mode = argc > 1 ? argv[1] : "--basic";
	weft_status_t st;
	double t0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	st = weft_init(&world);
	if (st != WEFT_OK) {
		fprintf(stderr, "weft_init failed: %s\n", weft_strerror(st));
		return 1;
	}
	g_rank = weft_comm_rank(world);
	g_size = weft_comm_size(world);
	if (strcmp(mode, "--basic") == 0)
		mode_basic(world);
	else if (strcmp(mode, "--cycles") == 0)
		mode_cycles(world, argc > 2 ? atoi(argv[2]) : 100);
	else if (strcmp(mode, "--abort") == 0)
		mode_abort(world);
	else if (strcmp(mode, "--check") == 0)
		mode_check(world);
	else if (strcmp(mode, "--nocheck") == 0)
		mode_nocheck(world);
	else if (strcmp(mode, "--killed") == 0)
		mode_killed(world, argc > 2 ? atoi(argv[2]) : 1);
	else
		fail("unknown mode %s", mode);
	t0 = now_s();
	st = weft_comm_destroy(world);
	if (st != WEFT_OK)
		fail("destroy of the world: %s", weft_strerror(st));
	if (now_s() - t0 > 20)
		fail("destroy of the world took %.1f s", now_s() - t0);
	if (g_fail) {
		fprintf(stderr, "rank %d: %d failures\n", g_rank, g_fail);
		return 1;
	}
	if (g_rank == 0)
		printf("comms %s: all checks passed\n", mode);
	return 0;
}
