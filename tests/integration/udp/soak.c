/* Soak of mixed collectives over whatever links the environment picks, meant for udp
 * under WEFT_FAULT (tests/integration): thousands of calls of every kind, sizes from
 * empty to 16 MiB, blocking and several in flight at once, every result checked exactly
 * against values computed locally. Ends with weft_comm_link_stats checks. Exit 0 only if
 * every result matched.
 * Options: --calls N (10000), --max-bytes B (16 MiB), --seed S,
 * --expect-faults (the links must report injected faults and retransmissions),
 * --expect-link NAME (every peer's link must be this driver). */
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <weft/weft.h>

#include "tests/integration/common/report.h"

static weft_comm_t *g_comm;
static int g_size;
static uint64_t g_rng;

/* Same sequence on every rank: every rank makes the same calls in the same order. */
static uint64_t rnd(void)
{
	uint64_t z = (g_rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* Element j of rank r's contribution in call i: small, so sums of any rank count are
 * exact in int32. */
static int32_t val(uint64_t i, int r, size_t j)
{
	return (int32_t)((i * 131 + (uint64_t)r * 17 + j * 7) % 1000) - 500;
}

static int32_t combine(int32_t a, int32_t b, weft_op_t op)
{
	if (op == WEFT_MAX)
		return a > b ? a : b;
	if (op == WEFT_MIN)
		return a < b ? a : b;
	return a + b;
}

static int32_t reduced(uint64_t i, size_t j, weft_op_t op)
{
	int32_t acc = val(i, 0, j);

	for (int r = 1; r < g_size; r++)
		acc = combine(acc, val(i, r, j), op);
	return acc;
}

static void fill(int32_t *b, size_t n, uint64_t i, int r, size_t base)
{
	for (size_t j = 0; j < n; j++)
		b[j] = val(i, r, base + j);
}

static int32_t *alloc_i32(size_t n)
{
	int32_t *p = calloc(n ? n : 1, sizeof(int32_t));

	if (p == NULL) {
		fprintf(stderr, "rank %d: out of memory for %zu elements\n", g_rank, n);
		exit(2);
	}
	return p;
}

static int check_st(weft_status_t st, const char *what, uint64_t i, size_t n)
{
	if (st == WEFT_OK)
		return 0;
	fail("call %" PRIu64 " %s count %zu: %s (%s)", i, what, n, weft_strerror(st),
	     weft_comm_last_error(g_comm));
	return 1;
}

/* Reports the first wrong element only. */
static void expect(const int32_t *got, size_t n, uint64_t i, const char *what,
		   int32_t (*want)(uint64_t, size_t, const void *), const void *ctx)
{
	for (size_t j = 0; j < n; j++) {
		int32_t w = want(i, j, ctx);

		if (got[j] != w) {
			fail("call %" PRIu64 " %s count %zu: element %zu is %d, want %d", i, what,
			     n, j, got[j], w);
			return;
		}
	}
}

struct red_ctx {
	weft_op_t op;
	size_t base;
};

static int32_t want_red(uint64_t i, size_t j, const void *c)
{
	const struct red_ctx *rc = c;
	return reduced(i, rc->base + j, rc->op);
}

/* allgather / gather: block r holds rank r's elements 0..n-1 */
static int32_t want_gathered(uint64_t i, size_t j, const void *c)
{
	size_t n = *(const size_t *)c;
	return val(i, (int)(j / n), j % n);
}

/* broadcast / scatter from root: root's element at base + j */
struct root_ctx {
	int root;
	size_t base;
};

static int32_t want_root(uint64_t i, size_t j, const void *c)
{
	const struct root_ctx *rc = c;
	return val(i, rc->root, rc->base + j);
}

/* alltoall: block s of rank r's output is block r of rank s's input */
static int32_t want_a2a(uint64_t i, size_t j, const void *c)
{
	size_t n = *(const size_t *)c;
	return val(i, (int)(j / n), (size_t)g_rank * n + j % n);
}

static const weft_op_t ops[] = {WEFT_SUM, WEFT_MAX, WEFT_MIN};

static void c_allreduce(uint64_t i, size_t n)
{
	int32_t *s = alloc_i32(n), *d = alloc_i32(n);
	struct red_ctx rc = {ops[rnd() % 3], 0};
	int inplace = rnd() % 2;

	fill(s, n, i, g_rank, 0);
	if (inplace)
		memcpy(d, s, n * sizeof(int32_t));
	if (!check_st(weft_allreduce(inplace ? d : s, d, n, WEFT_INT32, rc.op, g_comm, NULL),
		      "allreduce", i, n))
		expect(d, n, i, "allreduce", want_red, &rc);
	free(s);
	free(d);
}

static void c_allgather(uint64_t i, size_t n)
{
	int32_t *s = alloc_i32(n), *d = alloc_i32(n * (size_t)g_size);

	fill(s, n, i, g_rank, 0);
	if (!check_st(weft_allgather(s, d, n, WEFT_INT32, g_comm, NULL), "allgather", i, n))
		expect(d, n * (size_t)g_size, i, "allgather", want_gathered, &n);
	free(s);
	free(d);
}

static void c_reduce_scatter(uint64_t i, size_t n)
{
	int32_t *s = alloc_i32(n * (size_t)g_size), *d = alloc_i32(n);
	struct red_ctx rc = {ops[rnd() % 3], (size_t)g_rank * n};

	fill(s, n * (size_t)g_size, i, g_rank, 0);
	if (!check_st(weft_reduce_scatter(s, d, n, WEFT_INT32, rc.op, g_comm, NULL),
		      "reduce_scatter", i, n))
		expect(d, n, i, "reduce_scatter", want_red, &rc);
	free(s);
	free(d);
}

static void c_broadcast(uint64_t i, size_t n)
{
	int32_t *b = alloc_i32(n);
	struct root_ctx rc = {(int)(rnd() % (uint64_t)g_size), 0};

	if (g_rank == rc.root)
		fill(b, n, i, g_rank, 0);
	else
		memset(b, 0xa5, n * sizeof(int32_t));
	if (!check_st(weft_broadcast(b, n, WEFT_INT32, rc.root, g_comm, NULL), "broadcast", i, n))
		expect(b, n, i, "broadcast", want_root, &rc);
	free(b);
}

static void c_reduce(uint64_t i, size_t n)
{
	int32_t *s = alloc_i32(n), *d = alloc_i32(n);
	struct red_ctx rc = {ops[rnd() % 3], 0};
	int root = (int)(rnd() % (uint64_t)g_size);

	fill(s, n, i, g_rank, 0);
	if (!check_st(weft_reduce(s, d, n, WEFT_INT32, rc.op, root, g_comm, NULL), "reduce", i,
		      n) &&
	    g_rank == root)
		expect(d, n, i, "reduce", want_red, &rc);
	free(s);
	free(d);
}

static void c_alltoall(uint64_t i, size_t n)
{
	size_t tot = n * (size_t)g_size;
	int32_t *s = alloc_i32(tot), *d = alloc_i32(tot);

	fill(s, tot, i, g_rank, 0);
	if (!check_st(weft_alltoall(s, d, n, WEFT_INT32, g_comm, NULL), "alltoall", i, n))
		expect(d, tot, i, "alltoall", want_a2a, &n);
	free(s);
	free(d);
}

static void c_gather(uint64_t i, size_t n)
{
	int root = (int)(rnd() % (uint64_t)g_size);
	int32_t *s = alloc_i32(n), *d = alloc_i32(n * (size_t)g_size);

	fill(s, n, i, g_rank, 0);
	if (!check_st(weft_gather(s, d, n, WEFT_INT32, root, g_comm, NULL), "gather", i, n) &&
	    g_rank == root)
		expect(d, n * (size_t)g_size, i, "gather", want_gathered, &n);
	free(s);
	free(d);
}

static void c_scatter(uint64_t i, size_t n)
{
	struct root_ctx rc = {(int)(rnd() % (uint64_t)g_size), (size_t)g_rank * n};
	int32_t *s = alloc_i32(n * (size_t)g_size), *d = alloc_i32(n);

	fill(s, n * (size_t)g_size, i, g_rank, 0);
	if (!check_st(weft_scatter(s, d, n, WEFT_INT32, rc.root, g_comm, NULL), "scatter", i, n))
		expect(d, n, i, "scatter", want_root, &rc);
	free(s);
	free(d);
}

static void c_barrier(uint64_t i, size_t n)
{
	check_st(weft_barrier(g_comm, NULL), "barrier", i, n);
}

/* A ring of sends and receives in one group. */
static void c_sendrecv(uint64_t i, size_t n)
{
	int32_t *s = alloc_i32(n), *d = alloc_i32(n);
	int to = (g_rank + 1) % g_size, from = (g_rank + g_size - 1) % g_size;
	struct root_ctx rc = {from, 0};
	weft_status_t st;

	fill(s, n, i, g_rank, 0);
	st = weft_group_start(g_comm);
	if (st == WEFT_OK)
		st = weft_send(s, n, WEFT_INT32, to, 7, g_comm, NULL);
	if (st == WEFT_OK)
		st = weft_recv(d, n, WEFT_INT32, from, 7, g_comm, NULL);
	weft_status_t st2 = weft_group_end(g_comm);

	if (st == WEFT_OK)
		st = st2;
	if (!check_st(st, "sendrecv", i, n))
		expect(d, n, i, "sendrecv", want_root, &rc);
	free(s);
	free(d);
}

/* Three calls in flight at once on separate buffers, then waitall. */
static void c_async(uint64_t i, size_t n)
{
	int32_t *a = alloc_i32(n), *b = alloc_i32(n), *g = alloc_i32(n * (size_t)g_size);
	int32_t *x = alloc_i32(n);
	struct red_ctx rc = {WEFT_SUM, 0};
	struct root_ctx bc = {(int)(i % (uint64_t)g_size), 0};
	weft_request_t *req[3] = {NULL, NULL, NULL};
	weft_status_t st;

	fill(a, n, i, g_rank, 0);
	fill(b, n, i, g_rank, 0);
	if (g_rank == bc.root)
		fill(x, n, i, g_rank, 0);
	st = weft_allreduce(a, a, n, WEFT_INT32, WEFT_SUM, g_comm, &req[0]);
	if (st == WEFT_OK)
		st = weft_allgather(b, g, n, WEFT_INT32, g_comm, &req[1]);
	if (st == WEFT_OK)
		st = weft_broadcast(x, n, WEFT_INT32, bc.root, g_comm, &req[2]);
	weft_status_t st2 = weft_waitall(req, 3);

	if (st == WEFT_OK)
		st = st2;
	if (!check_st(st, "async trio", i, n)) {
		expect(a, n, i, "async allreduce", want_red, &rc);
		expect(g, n * (size_t)g_size, i, "async allgather", want_gathered, &n);
		expect(x, n, i, "async broadcast", want_root, &bc);
	}
	free(a);
	free(b);
	free(g);
	free(x);
}

typedef void (*coll_fn)(uint64_t, size_t);
static const struct {
	const char *name;
	coll_fn fn;
	int blocks; /* the largest buffer holds this many blocks of n (0: size blocks) */
} colls[] = {
    {"allreduce", c_allreduce, 1},
    {"allgather", c_allgather, 0},
    {"reduce_scatter", c_reduce_scatter, 0},
    {"broadcast", c_broadcast, 1},
    {"reduce", c_reduce, 1},
    {"alltoall", c_alltoall, 0},
    {"gather", c_gather, 0},
    {"scatter", c_scatter, 0},
    {"barrier", c_barrier, 1},
    {"sendrecv", c_sendrecv, 1},
    {"async", c_async, 0},
};
#define NCOLLS (sizeof(colls) / sizeof(colls[0]))

/* Mostly small calls, some medium, a few up to max_bytes in the largest buffer. */
static size_t pick_count(size_t max_bytes, int blocks)
{
	uint64_t u = rnd() % 1000;
	size_t cap = max_bytes / sizeof(int32_t) / (size_t)(blocks ? blocks : g_size);
	size_t n;

	if (u < 600)
		n = rnd() % 65;
	else if (u < 950)
		n = 65 + rnd() % 16320;
	else if (u < 997)
		n = 16385 + rnd() % 250000;
	else
		n = cap;
	return n < cap ? n : cap;
}

static void check_stats(int expect_faults, const char *expect_link)
{
	uint64_t injected = 0, retrans = 0, sent = 0, received = 0;

	for (int p = 0; p < g_size; p++) {
		weft_link_stats_t s;

		if (p == g_rank)
			continue;
		memset(&s, 0, sizeof(s));
		s.size = sizeof(s);
		if (weft_comm_link_stats(g_comm, p, &s) != WEFT_OK) {
			fail("weft_comm_link_stats(%d): %s", p, weft_comm_last_error(g_comm));
			continue;
		}
		if (expect_link != NULL && strcmp(s.link, expect_link) != 0)
			fail("link to rank %d is '%s', want '%s'", p, s.link, expect_link);
		injected += s.fault_drops + s.fault_dups + s.fault_reorders + s.fault_corrupts;
		retrans += s.retransmits;
		sent += s.frames_sent;
		received += s.frames_received;
		if (expect_faults && !s.reliability)
			fail("link to rank %d runs without the reliability layer under faults", p);
	}
	if (g_size > 1 && (sent == 0 || received == 0))
		fail("link stats count no traffic (sent %" PRIu64 ", received %" PRIu64 ")", sent,
		     received);
	if (expect_faults && (injected == 0 || retrans == 0))
		fail("expected injected faults and retransmissions, got %" PRIu64 " and %" PRIu64,
		     injected, retrans);
	if (g_size > 1) {
		/* An older, shorter struct gets only what fits; the rest stays untouched. */
		weft_link_stats_t s;

		memset(&s, 0x5a, sizeof(s));
		s.size = offsetof(weft_link_stats_t, bytes_sent);
		if (weft_comm_link_stats(g_comm, (g_rank + 1) % g_size, &s) != WEFT_OK ||
		    s.size != offsetof(weft_link_stats_t, bytes_sent) ||
		    s.bytes_sent != 0x5a5a5a5a5a5a5a5aull)
			fail("a short weft_link_stats_t was not respected");
		s.size = sizeof(s);
		if (weft_comm_link_stats(g_comm, g_rank, &s) != WEFT_ERR_INVALID_ARG)
			fail("weft_comm_link_stats accepted our own rank");
		printf("rank %d: %" PRIu64 " frames sent, %" PRIu64 " received, %" PRIu64
		       " retransmits, %" PRIu64 " faults injected\n",
		       g_rank, sent, received, retrans, injected);
	}
}

int main(int argc, char **argv)
{
	uint64_t calls = 10000, seed = 1;
	size_t max_bytes = (size_t)16 << 20;
	int expect_faults = 0;
	const char *expect_link = NULL;
	weft_status_t st;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--calls") == 0 && i + 1 < argc)
			calls = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--max-bytes") == 0 && i + 1 < argc)
			max_bytes = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc)
			seed = strtoull(argv[++i], NULL, 10);
		else if (strcmp(argv[i], "--expect-faults") == 0)
			expect_faults = 1;
		else if (strcmp(argv[i], "--expect-link") == 0 && i + 1 < argc)
			expect_link = argv[++i];
		else {
			fprintf(stderr,
				"usage: %s [--calls N] [--max-bytes B] [--seed S] "
				"[--expect-faults] [--expect-link NAME]\n",
				argv[0]);
			return 2;
		}
	}
	st = weft_init(&g_comm);
	if (st != WEFT_OK) {
		fprintf(stderr, "weft_init: %s\n", weft_strerror(st));
		return 1;
	}
	g_rank = weft_comm_rank(g_comm);
	g_size = weft_comm_size(g_comm);
	g_rng = seed;
	struct timespec t0, t1;
	unsigned long per[NCOLLS] = {0};

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (uint64_t i = 0; i < calls && g_fail < 10; i++) {
		size_t k = rnd() % NCOLLS;
		size_t n = pick_count(max_bytes, colls[k].blocks);

		colls[k].fn(i, n);
		per[k]++;
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	check_stats(expect_faults, expect_link);
	if (g_rank == 0) {
		printf("%" PRIu64 " calls in %.1f s:", calls,
		       (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) * 1e-9);
		for (size_t k = 0; k < NCOLLS; k++)
			printf(" %s %lu", colls[k].name, per[k]);
		printf("\n");
	}
	weft_comm_destroy(g_comm);
	if (g_fail)
		fprintf(stderr, "rank %d: %d failures\n", g_rank, g_fail);
	return g_fail ? 1 : 0;
}
