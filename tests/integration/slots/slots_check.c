/* Tiny collectives through shared slots across processes (tests/integration): every dtype
 * and op of allreduce, reduce_scatter and reduce, every dtype of allgather, broadcast and
 * alltoall, in place or not, checked exactly; several communicators interleaved with calls
 * in flight at once; sub-communicators, and more creations than there are slot regions;
 * tiny and large (message path) calls mixed. --expect slots|messages checks which path the
 * tiny calls took by the frames the links carried; --late checks that ranks waiting for a
 * late peer sleep and time out naming it; --mixed-mem checks that a call whose buffers are
 * weft_mem on rank 0 only fails at once everywhere. Public API only. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <unistd.h>
#include <weft/weft.h>

#include "tests/integration/common/report.h"
#include "tests/integration/common/testvals.h"

static int g_size;
static unsigned long g_checked; /* collective calls whose results were checked */

static const weft_dtype_t dtypes[] = {WEFT_INT8,    WEFT_UINT8,	 WEFT_INT32,   WEFT_UINT32,
				      WEFT_INT64,   WEFT_UINT64, WEFT_FLOAT16, WEFT_BFLOAT16,
				      WEFT_FLOAT32, WEFT_FLOAT64};
#define NDT (sizeof(dtypes) / sizeof(dtypes[0]))
static const weft_op_t ops[] = {WEFT_SUM, WEFT_PROD, WEFT_MIN, WEFT_MAX, WEFT_AVG};
#define NOPS (sizeof(ops) / sizeof(ops[0]))

static const char *dt_name(weft_dtype_t dt)
{
	static const char *const n[] = {"int8",	  "uint8",   "int32",	 "uint32",  "int64",
					"uint64", "float16", "bfloat16", "float32", "float64"};
	return n[dt];
}

/* Rank r's element i of call `salt`: exact in every order (see tv_exact). */
static double val(weft_op_t op, weft_dtype_t dt, int r, size_t i, unsigned salt)
{
	return tv_exact(op, dt, r, i, i * 31 + (size_t)r * 17 + salt);
}

/* The reduction of element i over ranks [0, n), as the library computes it. */
static double reduced(weft_op_t op, weft_dtype_t dt, int n, size_t i, unsigned salt)
{
	double acc = val(op, dt, 0, i, salt);

	for (int r = 1; r < n; r++)
		acc = tv_combine(op, acc, val(op, dt, r, i, salt));
	if (op == WEFT_AVG) {
		acc /= n;
		if (tv_is_int(dt))
			acc = (double)(long long)acc; /* integer AVG truncates toward zero */
	}
	return acc;
}

/* Floats: AVG of small integers is exact only where the quotient is; compare with the
 * tolerance of the dtype's rounding of that one division. */
static int same(double got, double want, weft_dtype_t dt, weft_op_t op)
{
	double tol = 0;

	if (op == WEFT_AVG && !tv_is_int(dt))
		tol = dt == WEFT_FLOAT16 ? 1e-2 : dt == WEFT_BFLOAT16 ? 2e-2 : 1e-6;
	return got == want || (tol > 0 && got - want <= tol * (1 + (want < 0 ? -want : want)) &&
			       want - got <= tol * (1 + (want < 0 ? -want : want)));
}

static void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);

	if (!p) {
		fprintf(stderr, "rank %d: out of memory\n", g_rank);
		exit(2);
	}
	return p;
}

static void check_status(weft_comm_t *comm, weft_status_t st, const char *what)
{
	g_checked++;
	if (st != WEFT_OK)
		fail("%s: %s (%s)", what, weft_strerror(st), weft_comm_last_error(comm));
}

/* ---- one call of each collective, checked ---- */

static void do_allreduce(weft_comm_t *comm, weft_dtype_t dt, weft_op_t op, size_t count,
			 int in_place, unsigned salt)
{
	int me = weft_comm_rank(comm), n = weft_comm_size(comm);
	size_t es = tv_dt_size(dt);
	uint8_t *s = xmalloc(count * es), *d = xmalloc(count * es);
	char what[160];

	for (size_t i = 0; i < count; i++)
		tv_put(s, dt, i, val(op, dt, me, i, salt));
	if (in_place)
		memcpy(d, s, count * es);
	snprintf(what, sizeof(what), "allreduce %s %d count %zu in_place %d", dt_name(dt), op,
		 count, in_place);
	check_status(comm, weft_allreduce(in_place ? d : s, d, count, dt, op, comm, NULL), what);
	for (size_t i = 0; i < count; i++) {
		double want = reduced(op, dt, n, i, salt);

		if (!same(tv_get(d, dt, i), want, dt, op)) {
			fail("%s: element %zu is %g, want %g", what, i, tv_get(d, dt, i), want);
			break;
		}
	}
	free(s);
	free(d);
}

static void do_reduce_scatter(weft_comm_t *comm, weft_dtype_t dt, weft_op_t op, size_t count,
			      int in_place, unsigned salt)
{
	int me = weft_comm_rank(comm), n = weft_comm_size(comm);
	size_t es = tv_dt_size(dt), all = count * (size_t)n;
	uint8_t *s = xmalloc(all * es), *d = xmalloc(count * es), *out;
	char what[160];

	for (size_t i = 0; i < all; i++)
		tv_put(s, dt, i, val(op, dt, me, i, salt));
	snprintf(what, sizeof(what), "reduce_scatter %s %d count %zu in_place %d", dt_name(dt), op,
		 count, in_place);
	out = in_place ? s + (size_t)me * count * es : d;
	check_status(comm, weft_reduce_scatter(s, out, count, dt, op, comm, NULL), what);
	for (size_t i = 0; i < count; i++) {
		double want = reduced(op, dt, n, (size_t)me * count + i, salt);

		if (!same(tv_get(out, dt, i), want, dt, op)) {
			fail("%s: element %zu is %g, want %g", what, i, tv_get(out, dt, i), want);
			break;
		}
	}
	free(s);
	free(d);
}

static void do_reduce(weft_comm_t *comm, weft_dtype_t dt, weft_op_t op, size_t count, int root,
		      int in_place, unsigned salt)
{
	int me = weft_comm_rank(comm), n = weft_comm_size(comm);
	size_t es = tv_dt_size(dt);
	uint8_t *s = xmalloc(count * es), *d = xmalloc(count * es);
	int ip = in_place && me == root;
	char what[160];

	for (size_t i = 0; i < count; i++)
		tv_put(s, dt, i, val(op, dt, me, i, salt));
	if (ip)
		memcpy(d, s, count * es);
	snprintf(what, sizeof(what), "reduce %s %d count %zu root %d in_place %d", dt_name(dt), op,
		 count, root, ip);
	check_status(comm, weft_reduce(ip ? d : s, d, count, dt, op, root, comm, NULL), what);
	for (size_t i = 0; me == root && i < count; i++) {
		double want = reduced(op, dt, n, i, salt);

		if (!same(tv_get(d, dt, i), want, dt, op)) {
			fail("%s: element %zu is %g, want %g", what, i, tv_get(d, dt, i), want);
			break;
		}
	}
	free(s);
	free(d);
}

static void do_allgather(weft_comm_t *comm, weft_dtype_t dt, size_t count, int in_place,
			 unsigned salt)
{
	int me = weft_comm_rank(comm), n = weft_comm_size(comm);
	size_t es = tv_dt_size(dt), all = count * (size_t)n;
	uint8_t *s = xmalloc(count * es), *d = xmalloc(all * es), *in;
	char what[160];

	in = in_place ? d + (size_t)me * count * es : s;
	for (size_t i = 0; i < count; i++)
		tv_put(in, dt, i, val(WEFT_SUM, dt, me, i, salt));
	snprintf(what, sizeof(what), "allgather %s count %zu in_place %d", dt_name(dt), count,
		 in_place);
	check_status(comm, weft_allgather(in, d, count, dt, comm, NULL), what);
	for (size_t i = 0; i < all; i++) {
		double want = val(WEFT_SUM, dt, (int)(i / count), i % count, salt);

		if (tv_get(d, dt, i) != want) {
			fail("%s: element %zu is %g, want %g", what, i, tv_get(d, dt, i), want);
			break;
		}
	}
	free(s);
	free(d);
}

/* overlap: issued as a request, with a tiny allreduce started and finished before it is
 * waited for (the slot calls of both must number alike everywhere). */
static void do_broadcast_ex(weft_comm_t *comm, weft_dtype_t dt, size_t count, int root,
			    unsigned salt, int overlap)
{
	int me = weft_comm_rank(comm);
	size_t es = tv_dt_size(dt);
	uint8_t *b = xmalloc(count * es);
	char what[160];

	memset(b, 0x5a, count * es);
	for (size_t i = 0; me == root && i < count; i++)
		tv_put(b, dt, i, val(WEFT_SUM, dt, root, i, salt));
	snprintf(what, sizeof(what), "broadcast %s count %zu root %d%s", dt_name(dt), count, root,
		 overlap ? " (request)" : "");
	if (overlap) {
		weft_request_t *req = NULL;
		float x = 1, y = 0;

		check_status(comm, weft_broadcast(b, count, dt, root, comm, &req), what);
		check_status(comm, weft_allreduce(&x, &y, 1, WEFT_FLOAT32, WEFT_SUM, comm, NULL),
			     "allreduce beside a broadcast");
		if (y != (float)weft_comm_size(comm))
			fail("allreduce beside a broadcast gave %g", (double)y);
		check_status(comm, weft_wait(&req), what);
	} else {
		check_status(comm, weft_broadcast(b, count, dt, root, comm, NULL), what);
	}
	for (size_t i = 0; i < count; i++) {
		double want = val(WEFT_SUM, dt, root, i, salt);

		if (tv_get(b, dt, i) != want) {
			fail("%s: element %zu is %g, want %g", what, i, tv_get(b, dt, i), want);
			break;
		}
	}
	free(b);
}

static void do_broadcast(weft_comm_t *comm, weft_dtype_t dt, size_t count, int root, unsigned salt)
{
	do_broadcast_ex(comm, dt, count, root, salt, 0);
}

static void do_alltoall(weft_comm_t *comm, weft_dtype_t dt, size_t count, int in_place,
			unsigned salt)
{
	int me = weft_comm_rank(comm), n = weft_comm_size(comm);
	size_t es = tv_dt_size(dt), all = count * (size_t)n;
	uint8_t *s = xmalloc(all * es), *d = xmalloc(all * es), *out;
	char what[160];

	for (size_t i = 0; i < all; i++)
		tv_put(s, dt, i, val(WEFT_SUM, dt, me, i, salt));
	out = in_place ? s : d;
	snprintf(what, sizeof(what), "alltoall %s count %zu in_place %d", dt_name(dt), count,
		 in_place);
	check_status(comm, weft_alltoall(s, out, count, dt, comm, NULL), what);
	for (size_t i = 0; i < all; i++) {
		int from = (int)(i / count);
		double want = val(WEFT_SUM, dt, from, (size_t)me * count + i % count, salt);

		if (tv_get(out, dt, i) != want) {
			fail("%s: element %zu is %g, want %g", what, i, tv_get(out, dt, i), want);
			break;
		}
	}
	free(s);
	free(d);
}

/* ---- sections ---- */

/* Every dtype and op at a few tiny-to-KiB counts, in place and not. */
static void section_dtypes(weft_comm_t *comm, int quick)
{
	static const size_t counts[] = {1, 3, 17, 250};
	unsigned salt = 1;
	int n = weft_comm_size(comm);

	for (size_t di = 0; di < NDT; di++)
		for (size_t ci = 0; ci < sizeof(counts) / sizeof(counts[0]); ci++) {
			size_t c = counts[ci];

			if (quick && ci % 2)
				continue;
			for (size_t oi = 0; oi < NOPS; oi++)
				for (int ip = 0; ip < 2; ip++) {
					do_allreduce(comm, dtypes[di], ops[oi], c, ip, salt++);
					do_reduce_scatter(comm, dtypes[di], ops[oi], c, ip, salt++);
					do_reduce(comm, dtypes[di], ops[oi], c,
						  (int)(salt % (unsigned)n), ip, salt);
					salt++;
				}
			for (int ip = 0; ip < 2; ip++) {
				do_allgather(comm, dtypes[di], c, ip, salt++);
				do_alltoall(comm, dtypes[di], c, ip, salt++);
				do_broadcast(comm, dtypes[di], c, (int)(salt % (unsigned)n), salt);
				salt++;
			}
			check_status(comm, weft_barrier(comm, NULL), "barrier");
		}
}

/* Tiny calls on several communicators, many in flight at once, interleaved with each
 * other and with large calls that take the message path. */
static void section_interleaved(weft_comm_t *world, int with_big)
{
	enum { NC = 4, INFLIGHT = 6, ROUNDS = 40, BIG = 1 << 16 };
	weft_comm_t *c[NC];
	weft_request_t *req[NC * INFLIGHT + 1];
	float *in[NC * INFLIGHT], *out[NC * INFLIGHT];
	float *big = xmalloc(BIG * sizeof(float)), *bigout = xmalloc(BIG * sizeof(float));
	int n = g_size;

	check_status(world, weft_comm_dup(world, &c[0]), "dup");
	check_status(world, weft_comm_dup(world, &c[1]), "dup");
	/* the same members in reverse order */
	check_status(world, weft_comm_split(world, 0, n - g_rank, &c[2]), "split reversed");
	check_status(world, weft_comm_dup(c[0], &c[3]), "dup of a dup");
	if (g_fail)
		return;
	for (int i = 0; i < NC * INFLIGHT; i++) {
		in[i] = xmalloc(3 * sizeof(float));
		out[i] = xmalloc(3 * sizeof(float));
	}
	for (size_t i = 0; i < BIG; i++)
		big[i] = (float)(g_rank + 1);
	for (int round = 0; round < ROUNDS && !g_fail; round++) {
		int k = 0;

		for (int j = 0; j < INFLIGHT; j++)
			for (int ci = 0; ci < NC; ci++, k++) {
				int r = weft_comm_rank(c[ci]);

				for (int e = 0; e < 3; e++)
					in[k][e] = (float)(r * 100 + round * 10 + j + e);
				check_status(c[ci],
					     weft_allreduce(in[k], out[k], 3, WEFT_FLOAT32,
							    WEFT_SUM, c[ci], &req[k]),
					     "async allreduce");
			}
		/* a large one on the world in the middle of it all */
		if (with_big)
			check_status(world,
				     weft_allreduce(big, bigout, BIG, WEFT_FLOAT32, WEFT_SUM, world,
						    &req[k++]),
				     "large allreduce");
		check_status(world, weft_waitall(req, (size_t)k), "waitall");
		k = 0;
		for (int j = 0; j < INFLIGHT; j++)
			for (int ci = 0; ci < NC; ci++, k++)
				for (int e = 0; e < 3; e++) {
					float want = 100.0f * (float)(n * (n - 1) / 2) +
						     (float)n * (float)(round * 10 + j + e);

					if (out[k][e] != want) {
						fail("interleaved round %d comm %d call %d: %g, "
						     "want %g",
						     round, ci, j, out[k][e], want);
						e = 3;
					}
				}
		if (with_big && bigout[BIG - 1] != (float)(n * (n + 1) / 2))
			fail("interleaved round %d: large allreduce gave %g", round,
			     bigout[BIG - 1]);
		/* and blocking ones, alternating between the communicators */
		for (int ci = 0; ci < NC; ci++)
			do_allgather(c[(ci + round) % NC], WEFT_INT32, 2, round & 1,
				     (unsigned)(round * 7 + ci));
	}
	for (int i = 0; i < NC * INFLIGHT; i++) {
		free(in[i]);
		free(out[i]);
	}
	free(big);
	free(bigout);
	for (int ci = 0; ci < NC; ci++)
		weft_comm_destroy(c[ci]);
}

/* Sub-communicators: halves, a group of every other rank, a singleton; then more
 * creations and destructions than there are slot regions. */
static void section_subcomms(weft_comm_t *world)
{
	weft_comm_t *half = NULL, *odd = NULL, *self = NULL;
	int ranks[64], k = 0;

	check_status(world, weft_comm_split(world, g_rank < g_size / 2, g_rank, &half), "split");
	for (int r = 1; r < g_size; r += 2)
		ranks[k++] = r;
	if (k > 0)
		check_status(world, weft_comm_create_group(world, ranks, k, &odd), "create_group");
	check_status(world, weft_comm_split(world, g_rank, 0, &self), "split into singletons");
	if (g_fail)
		return;
	for (int rep = 0; rep < 3; rep++) {
		do_allreduce(half, WEFT_FLOAT32, WEFT_SUM, 5, rep & 1, (unsigned)rep);
		do_alltoall(half, WEFT_INT64, 3, rep & 1, (unsigned)rep);
		if (odd != NULL) {
			do_reduce_scatter(odd, WEFT_INT32, WEFT_MAX, 4, rep & 1, (unsigned)rep);
			do_broadcast(odd, WEFT_FLOAT64, 9, 0, (unsigned)rep);
		}
		do_allreduce(self, WEFT_FLOAT32, WEFT_SUM, 5, rep & 1, (unsigned)rep);
		do_allreduce(world, WEFT_INT8, WEFT_MIN, 7, rep & 1, (unsigned)rep);
	}
	weft_comm_destroy(half);
	if (odd != NULL)
		weft_comm_destroy(odd);
	weft_comm_destroy(self);
	/* regions are reused once every member released them */
	for (int cycle = 0; cycle < 80 && !g_fail; cycle++) {
		weft_comm_t *c = NULL;

		check_status(world, weft_comm_dup(world, &c), "dup cycle");
		if (c == NULL)
			break;
		do_allreduce(c, WEFT_UINT32, WEFT_SUM, 2, cycle & 1, (unsigned)cycle);
		do_allgather(c, WEFT_UINT8, 3, 0, (unsigned)cycle);
		weft_comm_destroy(c);
	}
}

/* Frames sent to every peer of the world so far. */
static uint64_t frames_sent(weft_comm_t *world)
{
	uint64_t total = 0;

	for (int p = 0; p < g_size; p++) {
		weft_link_stats_t st;

		if (p == g_rank)
			continue;
		memset(&st, 0, sizeof(st));
		st.size = sizeof(st);
		if (weft_comm_link_stats(world, p, &st) == WEFT_OK)
			total += st.frames_sent;
	}
	return total;
}

/* Which path tiny allreduces took: through the slots no frame moves (heartbeats aside);
 * through messages every call sends at least one. */
static void section_expect(weft_comm_t *world, const char *expect)
{
	enum { CALLS = 2000 };
	float x = (float)g_rank, y;
	uint64_t before, after;

	check_status(world, weft_barrier(world, NULL), "barrier");
	before = frames_sent(world);
	for (int i = 0; i < CALLS && !g_fail; i++) {
		check_status(world, weft_allreduce(&x, &y, 1, WEFT_FLOAT32, WEFT_SUM, world, NULL),
			     "allreduce");
		if (y != (float)(g_size * (g_size - 1) / 2))
			fail("expect: allreduce gave %g", y);
	}
	after = frames_sent(world);
	if (strcmp(expect, "slots") == 0 && after - before > CALLS / 20)
		fail("%llu frames for %d tiny allreduces: the slot path was not taken",
		     (unsigned long long)(after - before), CALLS);
	if (strcmp(expect, "messages") == 0 && after - before < CALLS)
		fail("only %llu frames for %d tiny allreduces: the message path was not taken",
		     (unsigned long long)(after - before), CALLS);
	printf("rank %d: %d tiny allreduces sent %llu frames (expected the %s path)\n", g_rank,
	       CALLS, (unsigned long long)(after - before), expect);
}

/* Mid sizes, up to a slot's capacity (256 KiB with a core per rank; 1 MiB where the ranks
 * share cores, as here with 4 or more): every collective checked exactly, in place and not,
 * float32 sum and int32 max. When WEFT_ALGO=slots forces them, none of these calls may move
 * a frame. */
static void section_mid(weft_comm_t *world)
{
	const char *algo = getenv("WEFT_ALGO");
	/* elements per rank block; the largest alltoall / allgather fills a 256 KiB slot, and
	 * with more ranks than cores (the library's rule) a 1 MiB one */
	static const size_t counts[] = {1000, 16384, 65000, 260000};
	int n = weft_comm_size(world);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	size_t ncounts = sizeof(counts) / sizeof(counts[0]) - (ncpu > 0 && n > ncpu ? 0 : 1);
	unsigned salt = 7000;
	uint64_t before, after;

	check_status(world, weft_barrier(world, NULL), "barrier");
	before = frames_sent(world);
	for (size_t ci = 0; ci < ncounts && !g_fail; ci++) {
		size_t c = counts[ci], per = c / (size_t)n;

		for (int ip = 0; ip < 2; ip++) {
			do_allreduce(world, WEFT_FLOAT32, WEFT_SUM, c, ip, salt++);
			do_allreduce(world, WEFT_INT32, WEFT_MAX, c, ip, salt++);
			do_reduce_scatter(world, WEFT_FLOAT32, WEFT_SUM, per, ip, salt++);
			do_reduce(world, WEFT_INT32, WEFT_SUM, c, (int)(salt % (unsigned)n), ip,
				  salt);
			salt++;
			do_allgather(world, WEFT_FLOAT32, per, ip, salt++);
			do_alltoall(world, WEFT_INT32, per, ip, salt++);
		}
		do_broadcast(world, WEFT_FLOAT32, c, (int)(salt % (unsigned)n), salt);
		salt++;
	}
	/* Broadcasts and allgathers past a slot go in parts, one slot call each, more of them
	 * than the ring is deep: blocking (allgather in place too) and as a request beside
	 * another call. */
	for (int ip = 0; ip < 2 && !g_fail; ip++)
		do_allgather(world, WEFT_FLOAT32, 2 * 262144 + 5, ip, salt++);
	for (int overlap = 0; overlap < 2 && !g_fail; overlap++) {
		do_broadcast_ex(world, WEFT_INT32, 3 * 262144 + 7, (int)(salt % (unsigned)n), salt,
				overlap);
		salt++;
		do_broadcast_ex(world, WEFT_FLOAT32, 6 * 262144 + 1, (int)(salt % (unsigned)n),
				salt, overlap);
		salt++;
	}
	after = frames_sent(world);
	/* the barriers and heartbeats are all that may move */
	if (algo != NULL && strcmp(algo, "slots") == 0 && after - before > 40)
		fail("%llu frames for mid-size calls forced into the slots",
		     (unsigned long long)(after - before));
	printf("rank %d: mid-size calls of up to %zu elements sent %llu frames\n", g_rank,
	       counts[ncounts - 1], (unsigned long long)(after - before));
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double now(void)
{
	struct timeval tv;

	gettimeofday(&tv, NULL);
	return (double)tv.tv_sec + (double)tv.tv_usec / 1e6;
}

/* The last rank arrives late (run with WEFT_TIMEOUT=2): the others wait in a slot
 * allreduce, asleep rather than spinning, then time out naming it. */
static int late_mode(weft_comm_t *world)
{
	float x = 1, y = 0;
	int late = g_size - 1;
	double t0, c0, wall, cpu;
	weft_status_t st;

	check_status(world, weft_barrier(world, NULL), "barrier");
	if (g_rank == late) {
		sleep(4);
		return g_fail != 0;
	}
	t0 = now();
	c0 = cpu_seconds();
	st = weft_allreduce(&x, &y, 1, WEFT_FLOAT32, WEFT_SUM, world, NULL);
	wall = now() - t0;
	cpu = cpu_seconds() - c0;
	printf("rank %d: %s after %.2f s (%.3f s of CPU): %s\n", g_rank, weft_strerror(st), wall,
	       cpu, weft_comm_last_error(world));
	if (st != WEFT_ERR_TIMEOUT)
		fail("late peer: status %s, want a timeout", weft_strerror(st));
	{
		char want[64];

		snprintf(want, sizeof(want), "owing data: %d", late);
		if (!strstr(weft_comm_last_error(world), want))
			fail("late peer: the error does not name rank %d: %s", late,
			     weft_comm_last_error(world));
	}
	if (wall < 1.5 || wall > 10)
		fail("late peer: timed out after %.2f s with WEFT_TIMEOUT=2", wall);
	if (cpu > 0.5 * wall)
		fail("late peer: %.2f s of CPU in %.2f s of waiting: the wait spins", cpu, wall);
	sleep(3);
	return g_fail != 0;
}

/* --mixed-mem (2 ranks, cost model): rank 0's buffers are weft_mem, rank 1's malloc'd. At
 * counts where rank 0 picks direct and rank 1 slots (small ring and large), both fail the
 * call at once with WEFT_ERR_MISMATCH naming the algorithms, no one reads the other's slot
 * as data, and the next call, malloc'd everywhere, is exact. */
static int mixed_mode(weft_comm_t *world)
{
	static const size_t counts[] = {512, 2048};

	for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]); k++) {
		size_t n = counts[k], bytes = n * sizeof(float);
		float *s = NULL, *r = NULL, *s2 = malloc(bytes), *r2 = malloc(bytes);
		double t0, wall;
		weft_status_t st;

		if (g_rank == 0) {
			check_status(world, weft_mem_alloc((void **)&s, bytes), "weft_mem_alloc");
			check_status(world, weft_mem_alloc((void **)&r, bytes), "weft_mem_alloc");
		} else {
			s = malloc(bytes);
			r = malloc(bytes);
		}
		if (!s || !r || !s2 || !r2) {
			fail("mixed: out of memory");
			return 1;
		}
		for (size_t i = 0; i < n; i++) {
			s[i] = s2[i] = (float)(g_rank + 1);
			r[i] = -1;
		}
		check_status(world, weft_barrier(world, NULL), "barrier");
		t0 = now();
		st = weft_allreduce(s, r, n, WEFT_FLOAT32, WEFT_SUM, world, NULL);
		wall = now() - t0;
		printf("rank %d: mixed allreduce of %zu: %s after %.3f s: %s\n", g_rank, n,
		       weft_strerror(st), wall, weft_comm_last_error(world));
		if (st != WEFT_ERR_MISMATCH)
			fail("mixed %zu: status %s, want a mismatch", n, weft_strerror(st));
		else if (!strstr(weft_comm_last_error(world), "with another algorithm"))
			fail("mixed %zu: the error does not say the algorithms differ: %s", n,
			     weft_comm_last_error(world));
		if (wall > 2)
			fail("mixed %zu: failed after %.2f s, not at once", n, wall);
		for (size_t i = 0; i < n; i++)
			if (r[i] != -1 && r[i] != (float)(g_rank + 1)) {
				fail("mixed %zu: element %zu of RECV is %g: a peer's bytes", n, i,
				     (double)r[i]);
				break;
			}
		check_status(world, weft_allreduce(s2, r2, n, WEFT_FLOAT32, WEFT_SUM, world, NULL),
			     "allreduce after the mismatch");
		for (size_t i = 0; i < n; i++)
			if (r2[i] != 3.0f) {
				fail("after the mismatch: element %zu is %g, want 3", i,
				     (double)r2[i]);
				break;
			}
		if (g_rank == 0) {
			weft_mem_free(s);
			weft_mem_free(r);
		} else {
			free(s);
			free(r);
		}
		free(s2);
		free(r2);
	}
	return g_fail != 0;
}

int main(int argc, char **argv)
{
	weft_comm_t *world = NULL;
	const char *expect = NULL, *only = NULL;
	int quick = 0, late = 0, mixed = 0, big = 1, rc;
	weft_status_t st;

	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--quick") == 0) {
			quick = 1;
		} else if (strcmp(argv[i], "--no-big") == 0) {
			big = 0;
		} else if (strcmp(argv[i], "--late") == 0) {
			late = 1;
		} else if (strcmp(argv[i], "--mixed-mem") == 0) {
			mixed = 1;
		} else if (strcmp(argv[i], "--expect") == 0 && i + 1 < argc) {
			expect = argv[++i];
		} else if (strcmp(argv[i], "--only") == 0 && i + 1 < argc) {
			only = argv[++i];
		} else {
			fprintf(stderr,
				"usage: %s [--quick] [--no-big] [--late] [--mixed-mem] "
				"[--expect slots|messages] "
				"[--only dtypes|interleaved|subcomms|mid]\n",
				argv[0]);
			return 2;
		}
	}
	st = weft_init(&world);
	if (st != WEFT_OK) {
		fprintf(stderr, "weft_init: %s\n", weft_strerror(st));
		return 1;
	}
	g_rank = weft_comm_rank(world);
	g_size = weft_comm_size(world);
	if (late || mixed) {
		rc = late ? late_mode(world) : mixed_mode(world);
		weft_comm_destroy(world);
		return rc;
	}
	if (expect)
		section_expect(world, expect);
	if (!only || strcmp(only, "dtypes") == 0)
		section_dtypes(world, quick);
	if (!g_fail && (!only || strcmp(only, "interleaved") == 0))
		section_interleaved(world, big);
	if (!g_fail && (!only || strcmp(only, "subcomms") == 0))
		section_subcomms(world);
	if (!g_fail && (!only || strcmp(only, "mid") == 0))
		section_mid(world);
	if (!g_fail)
		check_status(world, weft_barrier(world, NULL), "final barrier");
	weft_comm_destroy(world);
	if (g_rank == 0 && !g_fail)
		printf("slots_check: %d ranks OK, %lu calls checked on rank 0\n", g_size,
		       g_checked);
	return g_fail ? 1 : 0;
}
