/* Multi-process allreduce test (tests/integration), run under weftrun: every dtype and
 * op, counts 0..4M, in place and not, blocking and async with computation between post
 * and wait; every element compared exactly with a reference. Also the failure modes:
 * --timeout (a late rank makes the others time out, naming it) and --die-at N (a rank
 * kills itself mid-run; weftrun must end the job). --mem takes the buffers from
 * weft_mem_alloc (--mem-mask M: only on the ranks whose bit is set in M), new ones each
 * call, laid out in two ways; --more-counts adds counts around the rank count and odd ones
 * that span several pieces of a rank's share. Exit 0 only if everything matched. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <weft/weft.h>

#include "tests/integration/common/testvals.h"

static int g_rank, g_size, g_fail;
static int g_mem;	     /* this rank's buffers come from weft_mem_alloc */
static unsigned g_mem_calls; /* picks the layout of the next call's weft_mem buffers */

/* Where one call's buffers are: from malloc, or from weft_mem_alloc, either in two regions
 * of their own or both in one (send 8 bytes in, recv after it), so peers see buffers at
 * offsets inside regions too. */
struct bufs {
	unsigned char *send, *recv;
	void *reg[2]; /* weft_mem regions to free; NULL if none */
};

static int bufs_get(struct bufs *b, size_t bytes)
{
	memset(b, 0, sizeof(*b));
	if (!g_mem) {
		b->send = malloc(bytes + 8);
		b->recv = malloc(bytes + 8);
		return b->send != NULL && b->recv != NULL ? 0 : -1;
	}
	if ((g_mem_calls++ + (unsigned)g_rank) % 2 == 0) {
		if (weft_mem_alloc(&b->reg[0], bytes + 8) != WEFT_OK ||
		    weft_mem_alloc(&b->reg[1], bytes + 8) != WEFT_OK)
			return -1;
		b->send = b->reg[0];
		b->recv = b->reg[1];
		return 0;
	}
	if (weft_mem_alloc(&b->reg[0], 2 * bytes + 24) != WEFT_OK)
		return -1;
	b->send = (unsigned char *)b->reg[0] + 8;
	b->recv = b->send + (bytes + 7) / 8 * 8;
	return 0;
}

static void bufs_put(struct bufs *b)
{
	if (!g_mem) {
		free(b->send);
		free(b->recv);
		return;
	}
	for (int k = 0; k < 2; k++) {
		if (b->reg[k] != NULL && weft_mem_free(b->reg[k]) != WEFT_OK) {
			fprintf(stderr, "rank %d: weft_mem_free failed\n", g_rank);
			g_fail++;
		}
	}
}

static const char *dt_name(weft_dtype_t dt)
{
	static const char *const n[] = {"int8",	  "uint8",   "int32",	 "uint32",  "int64",
					"uint64", "float16", "bfloat16", "float32", "float64"};
	return n[dt];
}

static const char *op_name(weft_op_t op)
{
	static const char *const n[] = {"sum", "prod", "min", "max", "avg"};
	return n[op];
}

/* Inputs chosen so that every order of evaluation is exact. */
static double input(weft_op_t op, weft_dtype_t dt, int rank, size_t i)
{
	if (op == WEFT_AVG && !tv_is_int(dt)) {
		/* Offsets that cancel across ranks keep the mean exact in every type. */
		int d = (g_size % 2 == 1 && rank == g_size - 1) ? 0 : (rank % 2 ? -1 : 1);

		return (double)((int)(i % 7) - 3) + d;
	}
	return tv_exact(op, dt, rank, i, i * 31 + (size_t)rank * 17);
}

static double expected(weft_op_t op, weft_dtype_t dt, size_t i)
{
	double acc = input(op, dt, 0, i);

	for (int r = 1; r < g_size; r++)
		acc = tv_combine(op, acc, input(op, dt, r, i));
	if (op == WEFT_AVG) {
		/* Integers truncate toward zero; float inputs make the mean exact. */
		acc = tv_is_int(dt) ? trunc(acc / g_size) : acc / g_size;
	}
	return acc;
}

/* Integers wrap in their own type; the reference does too. */
static double wrap(weft_dtype_t dt, double v)
{
	char tmp[8];

	tv_put(tmp, dt, 0, v);
	return tv_get(tmp, dt, 0);
}

static volatile double g_sink;

/* Something to do between posting and waiting: proves the call returned at once. */
static void compute(int ms)
{
	struct timespec t0, t;
	double acc = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 10000; i++)
			acc += i * 0.5;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 + (t.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	g_sink = acc;
}

static void one(weft_comm_t *comm, size_t count, weft_dtype_t dt, weft_op_t op, int in_place,
		int async)
{
	size_t es = tv_dt_size(dt);
	struct bufs b;
	unsigned char *send, *recv;
	weft_request_t *req = NULL;
	weft_status_t st;
	size_t bad = 0, first_bad = 0;

	if (bufs_get(&b, count * es) != 0) {
		fprintf(stderr, "rank %d: out of %s memory\n", g_rank, g_mem ? "weft_mem" : "heap");
		g_fail++;
		bufs_put(&b);
		return;
	}
	send = b.send;
	recv = b.recv;
	for (size_t i = 0; i < count; i++) {
		tv_put(send, dt, i, input(op, dt, g_rank, i));
		tv_put(recv, dt, i, 99); /* must be overwritten */
	}
	if (in_place)
		memcpy(recv, send, count * es);
	st = weft_allreduce(in_place ? recv : send, recv, count, dt, op, comm, async ? &req : NULL);
	if (st == WEFT_OK && async) {
		int done = 0;
		compute(2);
		st = weft_test(&req, &done);
		if (!done && st == WEFT_INPROGRESS)
			st = weft_wait(&req);
		else if (req != NULL)
			st = WEFT_ERR_PROTOCOL;
	}
	if (st != WEFT_OK) {
		fprintf(stderr, "rank %d: allreduce %s %s count %zu %s %s%s failed: %s: %s\n",
			g_rank, dt_name(dt), op_name(op), count, in_place ? "in-place" : "out",
			async ? "async" : "blocking", g_mem ? " weft_mem" : "", weft_strerror(st),
			weft_comm_last_error(comm));
		g_fail++;
	} else {
		for (size_t i = 0; i < count; i++) {
			double want = wrap(dt, expected(op, dt, i));
			if (tv_get(recv, dt, i) != want) {
				if (bad++ == 0)
					first_bad = i;
			}
		}
		if (bad > 0) {
			fprintf(
			    stderr,
			    "rank %d: allreduce %s %s count %zu %s %s%s: %zu wrong, first at %zu: "
			    "got %g want %g\n",
			    g_rank, dt_name(dt), op_name(op), count, in_place ? "in-place" : "out",
			    async ? "async" : "blocking", g_mem ? " weft_mem" : "", bad, first_bad,
			    tv_get(recv, dt, first_bad), wrap(dt, expected(op, dt, first_bad)));
			g_fail++;
		}
	}
	bufs_put(&b);
}

static int timeout_mode(weft_comm_t *comm)
{
	float x = 1, y = 0;
	weft_status_t st;
	int rc = 0;

	/* Rank 1 arrives 3 s late; with WEFT_TIMEOUT=1 everyone else must time out and name
	 * rank 1 as owing data. Rank 1 may then find everything it needs already sent
	 * (eager sends left before the others gave up) or time out itself; either is
	 * right. Everyone stays alive until rank 1 is done. */
	if (g_rank == 1)
		sleep(3);
	st = weft_allreduce(&x, &y, 1, WEFT_FLOAT32, WEFT_SUM, comm, NULL);
	printf("rank %d: status %s: %s\n", g_rank, weft_strerror(st), weft_comm_last_error(comm));
	fflush(stdout);
	if (g_rank == 1 && st == WEFT_OK && y == 3.0f) {
		sleep(1);
		return 0;
	}
	if (st != WEFT_ERR_TIMEOUT || strstr(weft_comm_last_error(comm), "owing data") == NULL)
		rc = 1;
	if (g_rank != 1 && strstr(weft_comm_last_error(comm), "owing data: 1") == NULL)
		rc = 1;
	if (strstr(weft_comm_last_error(comm), "allreduce #0") == NULL)
		rc = 1;
	sleep(g_rank == 1 ? 1 : 5);
	return rc;
}

int main(int argc, char **argv)
{
	static const size_t counts[] = {0, 1, 7, 1000};
	/* Fewer elements than ranks (empty shares), odd counts, and shares of several 64 KiB
	 * pieces with a short last one. */
	static const size_t more_counts[] = {2, 3, 5, 13, 16411, 100003};
	size_t all_counts[sizeof(counts) / sizeof(counts[0]) +
			  sizeof(more_counts) / sizeof(more_counts[0])];
	size_t ncounts = 0;
	weft_comm_t *comm = NULL;
	weft_status_t st;
	int die_at = -1, quick = 0, big = 1, more = 0;
	long mem_mask = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--die-at") == 0 && i + 1 < argc)
			die_at = atoi(argv[++i]);
		else if (strcmp(argv[i], "--quick") == 0)
			quick = 1;
		else if (strcmp(argv[i], "--no-big") == 0)
			big = 0;
		else if (strcmp(argv[i], "--more-counts") == 0)
			more = 1;
		else if (strcmp(argv[i], "--mem") == 0)
			mem_mask = -1;
		else if (strcmp(argv[i], "--mem-mask") == 0 && i + 1 < argc)
			mem_mask = strtol(argv[++i], NULL, 0);
		else if (strcmp(argv[i], "--timeout") != 0) {
			fprintf(
			    stderr,
			    "usage: %s [--quick] [--no-big] [--more-counts] [--mem | --mem-mask M] "
			    "[--timeout] [--die-at N]\n",
			    argv[0]);
			return 2;
		}
	}
	for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++)
		all_counts[ncounts++] = counts[c];
	for (size_t c = 0; more && c < sizeof(more_counts) / sizeof(more_counts[0]); c++)
		all_counts[ncounts++] = more_counts[c];
	st = weft_init(&comm);
	if (st != WEFT_OK) {
		fprintf(stderr, "weft_init failed: %s\n", weft_strerror(st));
		return 1;
	}
	g_rank = weft_comm_rank(comm);
	g_size = weft_comm_size(comm);
	g_mem = g_rank < 63 && ((unsigned long)mem_mask >> g_rank & 1);
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--timeout") == 0) {
			int rc = timeout_mode(comm);
			weft_comm_destroy(comm);
			return rc;
		}
	}
	if (die_at >= 0) {
		/* Allreduce in a loop; rank 1 kills itself at iteration die_at. weftrun must
		 * end the survivors, who would otherwise wait for it. */
		float x = 1, y;
		for (int it = 0;; it++) {
			if (g_rank == 1 && it == die_at)
				raise(SIGKILL);
			st = weft_allreduce(&x, &y, 1, WEFT_FLOAT32, WEFT_SUM, comm, NULL);
			if (st != WEFT_OK) {
				fprintf(stderr, "rank %d: allreduce failed: %s\n", g_rank,
					weft_comm_last_error(comm));
				return 1;
			}
		}
	}
	for (int dt = 0; dt < WEFT_DTYPE_COUNT_; dt++) {
		for (int op = 0; op < WEFT_OP_COUNT_; op++) {
			for (size_t c = 0; c < ncounts; c++) {
				for (int mode = 0; mode < 4; mode++) {
					if (quick && mode != (int)((dt + op + c) % 4))
						continue;
					one(comm, all_counts[c], (weft_dtype_t)dt, (weft_op_t)op,
					    mode & 1, mode >> 1);
				}
			}
		}
	}
	if (big) {
		size_t n = (size_t)4 << 20;
		one(comm, n, WEFT_FLOAT32, WEFT_SUM, 0, 0);
		one(comm, n, WEFT_FLOAT32, WEFT_SUM, 1, 1);
		if (!quick) {
			one(comm, n, WEFT_INT32, WEFT_MAX, 0, 1);
			one(comm, n, WEFT_BFLOAT16, WEFT_AVG, 1, 0);
		}
	}
	/* Everyone's verdict, so one rank's failure fails all of them. */
	int64_t mine = g_fail, total = 0;
	st = weft_allreduce(&mine, &total, 1, WEFT_INT64, WEFT_SUM, comm, NULL);
	if (st != WEFT_OK)
		fprintf(stderr, "rank %d: the closing allreduce failed: %s\n", g_rank,
			weft_comm_last_error(comm));
	if (st != WEFT_OK || total != 0) {
		if (g_rank == 0)
			fprintf(stderr, "allreduce_check: %lld failures across ranks (%s)\n",
				(long long)total, weft_strerror(st));
		weft_comm_destroy(comm);
		return 1;
	}
	if (g_rank == 0)
		printf("allreduce_check: %d ranks: all results exact\n", g_size);
	weft_comm_destroy(comm);
	return 0;
}
