/* bench/ (outside the library): the MPI side of bench/compare. Times allreduce, allgather,
 * reduce_scatter, broadcast and alltoall exactly as weft-perf does and checks every element.
 * mpirun -n 2 mpi_bench [-b 8] [-e 64M] [-f 2] [-s LIMIT:ITERS:WARMUP,...] [-T S] [-S] COLL... */
#include <errno.h>
#include <getopt.h>
#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tools/weft-perf/budget.h"

enum coll { ALLREDUCE, ALLGATHER, REDUCE_SCATTER, BROADCAST, ALLTOALL, NCOLL };

static const char *const coll_names[NCOLL] = {"allreduce", "allgather", "reduce_scatter",
					      "broadcast", "alltoall"};

#define MAX_BANDS 8

/* Iterations per nominal size (the -b/-e sequence, as bench/compare splits weft-perf's runs):
 * the first band whose limit is >= the size (limit 0: no limit). */
struct band {
	size_t limit;
	int iters, warmup;
};

struct opts {
	size_t min_bytes, max_bytes;
	size_t factor;
	struct band bands[MAX_BANDS];
	int nbands;
	double budget; /* -T: seconds per size, as weft-perf's -T; 0: off */
	bool span;     /* -S: the span of the timed calls on the host's clock, as weft-perf's */
	bool colls[NCOLL];
};

struct run {
	enum coll c;
	int rank, n;
	size_t count; /* elements per block, as weft-perf */
	size_t send_elems, recv_elems;
	float *send, *recv;
};

/* The inputs of weft-perf (tools/weft-perf/data.c) for float32: sums stay small integers,
 * so every summation order gives the exact result. */
static int64_t gen_value(int op_sum, int nranks, int rank, size_t i)
{
	int64_t amp = nranks > 0 ? 64 / nranks : 8;

	amp = amp < 1 ? 1 : amp > 8 ? 8 : amp;
	if (!op_sum)
		return (int64_t)((i * 7 + (size_t)rank * 13 + 5) % 251) - 125;
	return (int64_t)((i * 7 + (size_t)rank * 13) % (size_t)(2 * amp + 1)) - amp;
}

static int64_t reduce_ref(int nranks, size_t i)
{
	int64_t acc = 0;

	for (int r = 0; r < nranks; r++)
		acc += gen_value(1, nranks, r, i);
	return acc;
}

static int64_t expected(const struct run *r, size_t i)
{
	size_t c = r->count, q = c > 0 ? i / c : 0, k = c > 0 ? i % c : 0;

	switch (r->c) {
	case ALLREDUCE:
		return reduce_ref(r->n, i);
	case REDUCE_SCATTER:
		return reduce_ref(r->n, (size_t)r->rank * c + i);
	case ALLGATHER:
		return gen_value(0, r->n, (int)q, k);
	case BROADCAST:
		return gen_value(0, r->n, 0, i);
	default: /* alltoall: block q came from rank q, its block for this rank */
		return gen_value(0, r->n, (int)q, (size_t)r->rank * c + k);
	}
}

static bool parse_size(const char *s, size_t *out)
{
	unsigned long long v;
	char *end;

	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s || *s == '-')
		return false;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end != '\0')
		return false;
	*out = (size_t)v;
	return true;
}

/* "262144:20:5,4194304:10:2,0:4:1" */
static bool parse_bands(const char *s, struct opts *o)
{
	char *copy = strdup(s), *save = NULL, *tok;
	bool ok = copy != NULL;

	o->nbands = 0;
	for (tok = ok ? strtok_r(copy, ",", &save) : NULL; tok != NULL && ok;
	     tok = strtok_r(NULL, ",", &save)) {
		unsigned long long lim;
		int it, wu;

		ok = o->nbands < MAX_BANDS && sscanf(tok, "%llu:%d:%d", &lim, &it, &wu) == 3 &&
		     it >= 1 && wu >= 0;
		if (ok)
			o->bands[o->nbands++] = (struct band){(size_t)lim, it, wu};
	}
	free(copy);
	return ok && o->nbands > 0;
}

static const struct band *band_for(const struct opts *o, size_t bytes)
{
	for (int i = 0; i < o->nbands; i++)
		if (o->bands[i].limit == 0 || bytes <= o->bands[i].limit)
			return &o->bands[i];
	return &o->bands[o->nbands - 1];
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	int c;

	*o = (struct opts){.min_bytes = 8, .max_bytes = 64u << 20, .factor = 2};
	parse_bands("262144:20:5,4194304:10:2,0:4:1", o);
	while ((c = getopt(argc, argv, "b:e:f:s:T:S")) != -1) {
		size_t v;

		switch (c) {
		case 'b':
			if (!parse_size(optarg, &o->min_bytes))
				return -1;
			break;
		case 'e':
			if (!parse_size(optarg, &o->max_bytes))
				return -1;
			break;
		case 'f':
			if (!parse_size(optarg, &v) || v < 2)
				return -1;
			o->factor = v;
			break;
		case 's':
			if (!parse_bands(optarg, o))
				return -1;
			break;
		case 'T':
			if (!budget_parse_seconds(optarg, &o->budget))
				return -1;
			break;
		case 'S':
			o->span = true;
			break;
		default:
			return -1;
		}
	}
	for (int i = optind; i < argc; i++) {
		int k;

		for (k = 0; k < NCOLL && strcmp(argv[i], coll_names[k]) != 0; k++)
			;
		if (k == NCOLL)
			return -1;
		o->colls[k] = true;
	}
	return optind < argc && o->min_bytes > 0 && o->min_bytes <= o->max_bytes ? 0 : -1;
}

static void post(const struct run *r)
{
	int cnt = (int)r->count;

	switch (r->c) {
	case ALLREDUCE:
		MPI_Allreduce(r->send, r->recv, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		break;
	case ALLGATHER:
		MPI_Allgather(r->send, cnt, MPI_FLOAT, r->recv, cnt, MPI_FLOAT, MPI_COMM_WORLD);
		break;
	case REDUCE_SCATTER:
		MPI_Reduce_scatter_block(r->send, r->recv, cnt, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
		break;
	case BROADCAST:
		MPI_Bcast(r->recv, cnt, MPI_FLOAT, 0, MPI_COMM_WORLD);
		break;
	default:
		MPI_Alltoall(r->send, cnt, MPI_FLOAT, r->recv, cnt, MPI_FLOAT, MPI_COMM_WORLD);
		break;
	}
}

/* Sizes as nccl-tests and weft-perf: the whole buffer for allgather, reduce_scatter and
 * alltoall (count = size / 4 / n, so the size is rounded down to a multiple of 4n). */
static size_t shape(struct run *r, size_t nominal)
{
	size_t elems = nominal / sizeof(float);
	bool split = r->c == ALLGATHER || r->c == REDUCE_SCATTER || r->c == ALLTOALL;

	r->count = split ? elems / (size_t)r->n : elems;
	r->send_elems = r->count;
	r->recv_elems = r->count;
	if (r->c == ALLGATHER)
		r->recv_elems = r->count * (size_t)r->n;
	if (r->c == REDUCE_SCATTER)
		r->send_elems = r->count * (size_t)r->n;
	if (r->c == ALLTOALL)
		r->send_elems = r->recv_elems = r->count * (size_t)r->n;
	if (r->c == BROADCAST)
		r->send_elems = 0;
	return split ? r->count * sizeof(float) * (size_t)r->n : elems * sizeof(float);
}

/* Every result element starts as expected + 1, so one the collective never wrote is wrong. */
static int fill(struct run *r)
{
	bool data = r->c != ALLREDUCE && r->c != REDUCE_SCATTER;

	r->send = malloc(r->send_elems * sizeof(float) + 1);
	r->recv = malloc(r->recv_elems * sizeof(float) + 1);
	if (r->send == NULL || r->recv == NULL)
		return -1;
	for (size_t i = 0; i < r->send_elems; i++)
		r->send[i] = (float)gen_value(!data, r->n, r->rank, i);
	for (size_t i = 0; i < r->recv_elems; i++) {
		int64_t v = expected(r, i);
		bool keep = r->c == BROADCAST && r->rank == 0;

		r->recv[i] = (float)(keep ? v : v + 1);
	}
	return 0;
}

static long long count_wrong(const struct run *r)
{
	long long wrong = 0;

	for (size_t i = 0; i < r->recv_elems; i++)
		wrong += (double)r->recv[i] != (double)expected(r, i);
	return wrong;
}

static void post_n(const struct run *r, int calls)
{
	for (int i = 0; i < calls; i++)
		post(r);
}

static double max_over_ranks(double v)
{
	double max = v;

	MPI_Allreduce(&v, &max, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return max;
}

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* weft-perf's time per call: each rank's own loop, the slowest rank's (span 0); or, with
 * -S, from the first rank's first call to the last rank's last call on CLOCK_MONOTONIC,
 * which the ranks of one host share (tools/weft-perf/perf.c: span_time). -1: the ranks'
 * starts lie more than a second apart, so their clocks are not one. */
static double per_call(double t0, double t1, int iters, bool span)
{
	double v[3] = {t0, -t0, t1}, m[3];

	if (!span)
		return max_over_ranks((t1 - t0) / iters);
	MPI_Allreduce(v, m, 3, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
	return budget_span_per_call(m, iters);
}

/* weft-perf's -T rule: one warm-up call timed, a fifth of the budget sets the warm-ups (that
 * call among them), the time per call of those after it (or of it alone) sets the timed
 * calls; times are the slowest rank's, so every rank runs the same counts. Without -T, the
 * band's counts. */
static void warm_up(const struct run *r, double budget, int *warmup, int *iters)
{
	double t0 = MPI_Wtime(), t1, tw;

	if (budget <= 0) {
		post_n(r, *warmup);
		return;
	}
	post(r);
	t1 = MPI_Wtime() - t0;
	*warmup = budget_warmups(*warmup, budget, max_over_ranks(t1));
	t0 = MPI_Wtime();
	post_n(r, *warmup - 1);
	tw = *warmup > 1 ? (MPI_Wtime() - t0) / (*warmup - 1) : t1;
	*iters = budget_iters(*iters, budget, max_over_ranks(tw));
}

static int one(const struct opts *o, enum coll c, int rank, int n, size_t nominal)
{
	struct run r = {.c = c, .rank = rank, .n = n};
	size_t bytes = shape(&r, nominal);
	const struct band *b = band_for(o, nominal);
	double t0, avg;
	long long wrong, total = 0;
	int ok, all = 0, warmup = b->warmup, iters = b->iters;

	ok = fill(&r) == 0;
	MPI_Allreduce(&ok, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
	if (!all) {
		fprintf(stderr, "mpi_bench: rank %d: out of memory at %zu bytes\n", rank, bytes);
		return -1;
	}
	warm_up(&r, o->budget, &warmup, &iters);
	MPI_Barrier(MPI_COMM_WORLD);
	t0 = mono_s();
	post_n(&r, iters);
	avg = per_call(t0, mono_s(), iters, o->span);
	if (avg < 0) {
		if (rank == 0)
			fprintf(stderr, "mpi_bench: -S: the ranks' clocks differ (not one host)\n");
		free(r.send);
		free(r.recv);
		return -1;
	}
	wrong = count_wrong(&r);
	MPI_Allreduce(&wrong, &total, 1, MPI_LONG_LONG, MPI_SUM, MPI_COMM_WORLD);
	if (rank == 0) {
		printf("ROW %s %d %zu %zu %.3f %lld %d\n", coll_names[c], n, bytes, r.count,
		       avg * 1e6, total, iters);
		fflush(stdout);
	}
	free(r.send);
	free(r.recv);
	return total == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct opts o;
	int rank, n, ret = 0;
	char ver[MPI_MAX_LIBRARY_VERSION_STRING];
	int vlen = 0;

	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &n);
	if (parse_args(argc, argv, &o) != 0) {
		if (rank == 0)
			fprintf(stderr,
				"usage: %s [-b MIN] [-e MAX] [-f FACTOR] "
				"[-s LIMIT:ITERS:WARMUP,...] [-T SECONDS] [-S] COLL...\n"
				"COLL: allreduce allgather reduce_scatter broadcast alltoall\n"
				"-T: about SECONDS per size, weft-perf's -T rule (0 = off)\n"
				"-S: time from the first rank's start to the last rank's end "
				"(one host)\n",
				argv[0]);
		MPI_Finalize();
		return 2;
	}
	MPI_Get_library_version(ver, &vlen);
	if (rank == 0)
		printf("LIB %.*s\n", (int)strcspn(ver, "\n,"), ver);
	for (int c = 0; c < NCOLL && ret >= 0; c++) {
		size_t sz = o.min_bytes;

		if (!o.colls[c])
			continue;
		for (;;) {
			int r = one(&o, (enum coll)c, rank, n, sz);

			if (r < 0) {
				ret = -1;
				break;
			}
			ret |= r;
			if (sz > o.max_bytes / o.factor)
				break;
			sz *= o.factor;
		}
	}
	MPI_Finalize();
	return ret < 0 ? 1 : ret;
}
