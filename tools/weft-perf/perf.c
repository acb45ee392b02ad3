/* weft-perf (tools/): nccl-tests-style bandwidth and latency sweep of every weft collective
 * on the public API: weftrun -n 4 weft-perf allreduce -b 8 -e 64M -f 2 -c 1 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "perf.h"
#include "budget.h"

#define PERF_MAX_ASYNC 1024
#define PERF_TAG 0x7e47

#define PERF_MAX_BANDS 16

struct opts {
	bool colls[PERF_COLL_COUNT];
	size_t min_bytes, max_bytes, step_bytes;
	unsigned long factor;
	int iters, warmup, async, root;
	bool check;
	bool all_dtypes, all_ops;
	weft_dtype_t dtype;
	int op;
	const char *json, *csv, *svg;
	int corrupt_rank;	/* WEFT_PERF_CORRUPT (tests only); -1: none */
	int late_rank, late_ms; /* WEFT_PERF_LATE=R:MS (tests only); late_rank -1: none */
	/* --iters-by-size: sizes up to limit[i] (nominal bytes; 0: any) run iters[i] timed
	 * calls after warmup[i]; nbands 0: -n and -w for every size */
	int nbands;
	size_t band_limit[PERF_MAX_BANDS];
	int band_iters[PERF_MAX_BANDS], band_warmup[PERF_MAX_BANDS];
	bool reg;      /* -R 1: buffers from weft_mem_alloc */
	double budget; /* -T: seconds per size the counts above are cut to; 0: off */
	bool span;     /* -S: time the span of every rank's calls on the host's clock */
};

/* One collective at one size: the buffers of every in-flight slot and how to post it. */
struct run {
	weft_comm_t *comm;
	int rank, n;
	enum perf_coll coll;
	weft_dtype_t dtype;
	int op, root;
	size_t count, es;
	size_t send_elems, recv_elems; /* 0: this rank passes NULL */
	int slots;
	int used; /* result buffers posted to so far at this size (the check reads only these) */
	bool reg; /* buffers from weft_mem_alloc */
	void *send;
	void *recv[PERF_MAX_ASYNC];
	weft_request_t *reqs[2 * PERF_MAX_ASYNC];
	struct perf_gen gen;
};

static void usage(FILE *f, const char *prog)
{
	fprintf(
	    f,
	    "usage: %s COLLECTIVE... [options]\n"
	    "Measures weft collectives as nccl-tests does; start it under weftrun:\n"
	    "  weftrun -n 4 %s allreduce -b 8 -e 64M -f 2 -c 1\n"
	    "COLLECTIVE: allreduce allgather reduce_scatter broadcast reduce gather scatter\n"
	    "            alltoall sendrecv barrier, or all\n"
	    "  -b, --minbytes N       smallest size in bytes, K/M/G suffixes (default 8)\n"
	    "  -e, --maxbytes N       largest size (default 64M)\n"
	    "  -f, --stepfactor F     multiply the size by F each step (default 2)\n"
	    "  -i, --stepbytes N      add N bytes each step instead (with -f 1)\n"
	    "  -n, --iters N          timed iterations per size (default 20)\n"
	    "  -w, --warmup_iters N   untimed iterations first (default 5)\n"
	    "  -N, --iters-by-size L:N:W,...\n"
	    "                         per size instead of -n and -w: sizes up to L bytes (K/M/G\n"
	    "                         suffixes; 0 = any size) run N timed iterations after W\n"
	    "                         untimed ones, the first band that holds the size applies\n"
	    "                         and the last one serves larger sizes (as bench/compare's\n"
	    "                         MPI and gloo runs do, e.g. 256K:20:5,4M:10:2,0:4:1)\n"
	    "  -T, --time-budget S    cut each size's calls to about S seconds (0 = off, the\n"
	    "                         default): one warm-up call is timed, the warm-ups become\n"
	    "                         min(W, max(5, 0.2 S / its time)), then the timed calls\n"
	    "                         min(N, max(20, S / time per warm-up)), from the slowest\n"
	    "                         rank's times (as bench/compare's MPI and gloo runs do)\n"
	    "  -c, --check 0|1        check every element of every rank's result (default 1)\n"
	    "  -d, --datatype T       float half bfloat16 double int8 uint8 int32 uint32 int64\n"
	    "                         uint64 (also float32 float16 float64), or all (default "
	    "float)\n"
	    "  -o, --op OP            sum prod min max avg, or all (default sum)\n"
	    "  -r, --root R           root of broadcast, reduce, gather, scatter (default 0)\n"
	    "  -a, --async N          N operations in flight (posted with requests, then\n"
	    "                         waitall); 0 = blocking calls (default 0)\n"
	    "  -R, --register 0|1     1: buffers from weft_mem_alloc, which the ranks of a\n"
	    "                         host reach directly (default 0: malloc)\n"
	    "  -S, --span             time from the first rank's first timed call to the last\n"
	    "                         rank's last on CLOCK_MONOTONIC, which the ranks of one\n"
	    "                         host share (default: each rank's own loop, the slowest)\n"
	    "      --json FILE        write the rows and run metadata as JSON\n"
	    "      --csv FILE         write the rows as CSV (header line, one line per row)\n"
	    "      --plot FILE.svg    draw busbw and latency against size (SVG)\n"
	    "  -h, --help             this help\n"
	    "Environment: WEFT_PERF_CORRUPT=R (tests only) makes rank R change one element of\n"
	    "its result before each check, so the run must report #wrong > 0 and exit 1;\n"
	    "WEFT_PERF_LATE=R:MS (tests only) makes rank R start each size's timed calls MS\n"
	    "milliseconds after the others.\n"
	    "Size is nccl-tests' size: the whole buffer for allgather, reduce_scatter, alltoall,\n"
	    "gather and scatter (count = size / element / ranks). Time is the largest of the\n"
	    "ranks' average times (with -S, the span over all ranks divided by the calls);\n"
	    "busbw uses nccl-tests' factors.\n",
	    prog, prog);
}

static int bad(const char *prog, const char *fmt, const char *what)
{
	fprintf(stderr, "%s: ", prog);
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n%s: try '%s -h'\n", prog, prog);
	return 2;
}

static bool parse_size(const char *s, size_t *out)
{
	unsigned long long v, mult = 1;
	char *end;

	if (*s == '-' || *s == '\0')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || end == s)
		return false;
	switch (*end) {
	case 'k':
	case 'K':
		mult = 1ull << 10;
		end++;
		break;
	case 'm':
	case 'M':
		mult = 1ull << 20;
		end++;
		break;
	case 'g':
	case 'G':
		mult = 1ull << 30;
		end++;
		break;
	default:
		break;
	}
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end != '\0' || v > SIZE_MAX / mult)
		return false;
	*out = (size_t)(v * mult);
	return true;
}

static bool parse_int(const char *s, long lo, long hi, int *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno != 0 || end == s || *end != '\0' || v < lo || v > hi)
		return false;
	*out = (int)v;
	return true;
}

static bool parse_coll(const char *s, struct opts *o)
{
	if (strcmp(s, "all") == 0) {
		for (int c = 0; c < PERF_COLL_COUNT; c++)
			o->colls[c] = true;
		return true;
	}
	for (int c = 0; c < PERF_COLL_COUNT; c++) {
		if (strcmp(s, perf_coll_name((enum perf_coll)c)) == 0) {
			o->colls[c] = true;
			return true;
		}
	}
	return false;
}

enum { OPT_JSON = 256, OPT_CSV, OPT_PLOT };

static const struct option long_opts[] = {
    {"minbytes", required_argument, NULL, 'b'},
    {"maxbytes", required_argument, NULL, 'e'},
    {"stepfactor", required_argument, NULL, 'f'},
    {"stepbytes", required_argument, NULL, 'i'},
    {"iters", required_argument, NULL, 'n'},
    {"warmup_iters", required_argument, NULL, 'w'},
    {"iters-by-size", required_argument, NULL, 'N'},
    {"time-budget", required_argument, NULL, 'T'},
    {"check", required_argument, NULL, 'c'},
    {"datatype", required_argument, NULL, 'd'},
    {"op", required_argument, NULL, 'o'},
    {"root", required_argument, NULL, 'r'},
    {"async", required_argument, NULL, 'a'},
    {"register", required_argument, NULL, 'R'},
    {"span", no_argument, NULL, 'S'},
    {"json", required_argument, NULL, OPT_JSON},
    {"csv", required_argument, NULL, OPT_CSV},
    {"plot", required_argument, NULL, OPT_PLOT},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* "L:N:W,..." into o's bands; false on anything malformed. */
static bool parse_bands(const char *arg, struct opts *o)
{
	char buf[512], *save = NULL, *tok;

	if (strlen(arg) >= sizeof(buf))
		return false;
	strcpy(buf, arg);
	o->nbands = 0;
	for (tok = strtok_r(buf, ",", &save); tok != NULL; tok = strtok_r(NULL, ",", &save)) {
		char *c1 = strchr(tok, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
		int i = o->nbands;

		if (i == PERF_MAX_BANDS || c1 == NULL || c2 == NULL)
			return false;
		*c1 = *c2 = '\0';
		if (!parse_size(tok, &o->band_limit[i]) ||
		    !parse_int(c1 + 1, 1, 1 << 30, &o->band_iters[i]) ||
		    !parse_int(c2 + 1, 0, 1 << 30, &o->band_warmup[i]))
			return false;
		o->nbands++;
	}
	return o->nbands > 0;
}

/* The timed and untimed iterations for a sweep size (nominal bytes). */
static void iters_for(const struct opts *o, size_t nominal, int *iters, int *warmup)
{
	*iters = o->iters;
	*warmup = o->warmup;
	for (int i = 0; i < o->nbands; i++) {
		*iters = o->band_iters[i];
		*warmup = o->band_warmup[i];
		if (o->band_limit[i] == 0 || nominal <= o->band_limit[i])
			return;
	}
}

/* Returns -1 to go on, or the exit status (0 for -h, 2 for bad flags). */
static int parse_opt(int c, const char *arg, const char *prog, struct opts *o)
{
	int v = 0;

	switch (c) {
	case 'b':
		return parse_size(arg, &o->min_bytes) ? -1 : bad(prog, "bad -b size '%s'", arg);
	case 'e':
		return parse_size(arg, &o->max_bytes) ? -1 : bad(prog, "bad -e size '%s'", arg);
	case 'i':
		return parse_size(arg, &o->step_bytes) ? -1 : bad(prog, "bad -i size '%s'", arg);
	case 'f':
		if (!parse_int(arg, 1, 1 << 20, &v))
			return bad(prog, "bad -f factor '%s' (an integer >= 1)", arg);
		o->factor = (unsigned long)v;
		return -1;
	case 'n':
		return parse_int(arg, 1, 1 << 30, &o->iters) ? -1
							     : bad(prog, "bad -n iters '%s'", arg);
	case 'w':
		return parse_int(arg, 0, 1 << 30, &o->warmup) ? -1
							      : bad(prog, "bad -w iters '%s'", arg);
	case 'N':
		return parse_bands(arg, o)
			   ? -1
			   : bad(prog,
				 "bad --iters-by-size '%s' (LIMIT:ITERS:WARMUP,..., "
				 "ITERS >= 1)",
				 arg);
	case 'T':
		return budget_parse_seconds(arg, &o->budget)
			   ? -1
			   : bad(prog, "bad -T time budget '%s' (seconds >= 0; 0 = off)", arg);
	case 'a':
		return parse_int(arg, 0, PERF_MAX_ASYNC, &o->async)
			   ? -1
			   : bad(prog, "bad -a '%s' (0 to 1024 in flight)", arg);
	case 'r':
		return parse_int(arg, 0, 1 << 30, &o->root) ? -1
							    : bad(prog, "bad -r root '%s'", arg);
	case 'c':
		if (!parse_int(arg, 0, 1, &v))
			return bad(prog, "bad -c '%s' (0 or 1)", arg);
		o->check = v == 1;
		return -1;
	case 'R':
		if (!parse_int(arg, 0, 1, &v))
			return bad(prog, "bad -R '%s' (0 or 1)", arg);
		o->reg = v == 1;
		return -1;
	case 'd':
		o->all_dtypes = strcmp(arg, "all") == 0;
		if (o->all_dtypes)
			return -1;
		v = perf_dtype_parse(arg);
		if (v < 0)
			return bad(prog, "unknown datatype '%s'", arg);
		o->dtype = (weft_dtype_t)v;
		return -1;
	case 'o':
		o->all_ops = strcmp(arg, "all") == 0;
		if (o->all_ops)
			return -1;
		o->op = perf_op_parse(arg);
		return o->op >= 0 ? -1 : bad(prog, "unknown op '%s'", arg);
	case OPT_JSON:
		o->json = arg;
		return -1;
	case OPT_CSV:
		o->csv = arg;
		return -1;
	case OPT_PLOT:
		o->svg = arg;
		return -1;
	case 'S':
		o->span = true;
		return -1;
	case 'h':
		usage(stdout, prog);
		return 0;
	default:
		fprintf(stderr, "%s: try '%s -h'\n", prog, prog);
		return 2;
	}
}

/* The test-only fault hook: a rank number, checked against the world size after start-up. */
static int parse_corrupt(const char *prog, struct opts *o)
{
	const char *v = getenv("WEFT_PERF_CORRUPT");

	o->corrupt_rank = -1;
	if (v == NULL || *v == '\0')
		return -1;
	if (!parse_int(v, 0, 1 << 30, &o->corrupt_rank))
		return bad(prog, "bad WEFT_PERF_CORRUPT '%s' (a rank number)", v);
	return -1;
}

/* The test-only late start: rank R sleeps MS milliseconds (0 to 10000) after the barrier
 * that precedes each size's timed calls, before its clock starts (what a rank waiting for
 * its core does), so -S and the per-rank timing must tell it apart. */
static int parse_late(const char *prog, struct opts *o)
{
	const char *v = getenv("WEFT_PERF_LATE");
	char rank[16];
	const char *colon;

	o->late_rank = -1;
	if (v == NULL || *v == '\0')
		return -1;
	colon = strchr(v, ':');
	if (colon == NULL || (size_t)(colon - v) >= sizeof(rank))
		return bad(prog, "bad WEFT_PERF_LATE '%s' (RANK:MILLISECONDS)", v);
	memcpy(rank, v, (size_t)(colon - v));
	rank[colon - v] = '\0';
	if (!parse_int(rank, 0, 1 << 30, &o->late_rank) ||
	    !parse_int(colon + 1, 0, 10000, &o->late_ms))
		return bad(prog, "bad WEFT_PERF_LATE '%s' (RANK:MILLISECONDS, 0 to 10000)", v);
	return -1;
}

static int parse_args(int argc, char **argv, struct opts *o)
{
	const char *prog = argv[0];
	bool any = false;
	int c, ret;

	*o = (struct opts){.min_bytes = 8,
			   .max_bytes = 64u << 20,
			   .factor = 2,
			   .iters = 20,
			   .warmup = 5,
			   .check = true,
			   .dtype = WEFT_FLOAT32,
			   .op = WEFT_SUM};
	while ((c = getopt_long(argc, argv, "b:e:f:i:n:w:N:T:c:d:o:r:a:R:Sh", long_opts, NULL)) !=
	       -1) {
		ret = parse_opt(c, optarg, prog, o);
		if (ret >= 0)
			return ret;
	}
	for (int i = optind; i < argc; i++) {
		if (!parse_coll(argv[i], o))
			return bad(prog, "unknown collective '%s'", argv[i]);
		any = true;
	}
	if (!any)
		return bad(prog, "%s", "no collective given (a name or 'all')");
	if (o->min_bytes > o->max_bytes)
		return bad(prog, "%s", "-b is larger than -e");
	if (o->factor < 2 && o->step_bytes == 0)
		return bad(prog, "%s", "-f 1 needs -i STEP_BYTES > 0");
	ret = parse_corrupt(prog, o);
	return ret >= 0 ? ret : parse_late(prog, o);
}

static bool next_size(const struct opts *o, size_t *s)
{
	size_t cur = *s;

	if (o->factor >= 2) {
		if (cur == 0)
			cur = 1;
		if (cur > o->max_bytes / o->factor)
			return false;
		*s = cur * o->factor;
		return true;
	}
	if (cur > o->max_bytes - o->step_bytes)
		return false;
	*s = cur + o->step_bytes;
	return true;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---- one collective at one size ---- */

static weft_status_t post(struct run *r, int slot, weft_request_t **req)
{
	void *rb = r->recv[slot];
	weft_comm_t *cm = r->comm;
	weft_dtype_t t = r->dtype;
	weft_op_t op = (weft_op_t)r->op;
	size_t c = r->count;
	int next = (r->rank + 1) % r->n, prev = (r->rank + r->n - 1) % r->n;
	weft_status_t st, st2;

	switch (r->coll) {
	case PERF_ALLREDUCE:
		return weft_allreduce(r->send, rb, c, t, op, cm, req);
	case PERF_ALLGATHER:
		return weft_allgather(r->send, rb, c, t, cm, req);
	case PERF_REDUCE_SCATTER:
		return weft_reduce_scatter(r->send, rb, c, t, op, cm, req);
	case PERF_BROADCAST:
		return weft_broadcast(rb, c, t, r->root, cm, req);
	case PERF_REDUCE:
		return weft_reduce(r->send, rb, c, t, op, r->root, cm, req);
	case PERF_GATHER:
		return weft_gather(r->send, rb, c, t, r->root, cm, req);
	case PERF_SCATTER:
		return weft_scatter(r->send, rb, c, t, r->root, cm, req);
	case PERF_ALLTOALL:
		return weft_alltoall(r->send, rb, c, t, cm, req);
	case PERF_BARRIER:
		return weft_barrier(cm, req);
	default:
		break;
	}
	/* sendrecv: a ring, each rank sends to the next and receives from the previous. A
	 * world of one exchanges with itself, which weft_send refuses: copy instead. */
	if (r->n == 1) {
		memcpy(rb, r->send, c * r->es);
		return WEFT_OK;
	}
	st = weft_group_start(cm);
	if (st != WEFT_OK)
		return st;
	st = weft_send(r->send, c, t, next, PERF_TAG, cm, req);
	if (st == WEFT_OK)
		st = weft_recv(rb, c, t, prev, PERF_TAG, cm, req != NULL ? req + 1 : NULL);
	st2 = weft_group_end(cm);
	return st != WEFT_OK ? st : st2;
}

static weft_status_t run_iters(struct run *r, int iters)
{
	weft_status_t st = WEFT_OK, st2;

	if (r->slots == 0) {
		for (int it = 0; it < iters && st == WEFT_OK; it++)
			st = post(r, 0, NULL);
		if (iters > 0)
			r->used = 1;
		return st;
	}
	for (int it = 0; it < iters && st == WEFT_OK;) {
		int m = iters - it < r->slots ? iters - it : r->slots, s;

		memset(r->reqs, 0, sizeof(r->reqs[0]) * 2 * (size_t)m);
		for (s = 0; s < m && st == WEFT_OK; s++)
			st = post(r, s, &r->reqs[2 * s]);
		if (s > r->used)
			r->used = s;
		st2 = weft_waitall(r->reqs, 2 * (size_t)m);
		if (st == WEFT_OK)
			st = st2;
		it += m;
	}
	return st;
}

/* The exact value element i of this rank's result buffer must hold, if it has one. */
static int64_t expected(const struct run *r, size_t i)
{
	size_t c = r->count;
	int q = c > 0 ? (int)(i / c) : 0;
	size_t k = c > 0 ? i % c : 0;

	switch (r->coll) {
	case PERF_ALLREDUCE:
	case PERF_REDUCE:
		return perf_reduce_ref(&r->gen, i);
	case PERF_REDUCE_SCATTER:
		return perf_reduce_ref(&r->gen, (size_t)r->rank * c + i);
	case PERF_ALLGATHER:
	case PERF_GATHER:
		return perf_gen_value(&r->gen, q, k);
	case PERF_BROADCAST:
		return perf_gen_value(&r->gen, r->root, i);
	case PERF_SCATTER:
		return perf_gen_value(&r->gen, r->root, (size_t)r->rank * c + i);
	case PERF_ALLTOALL:
		return perf_gen_value(&r->gen, q, (size_t)r->rank * c + k);
	default: /* sendrecv */
		return perf_gen_value(&r->gen, (r->rank + r->n - 1) % r->n, i);
	}
}

static void buffer_shapes(struct run *r)
{
	size_t c = r->count, all = c * (size_t)r->n;
	bool root = r->rank == r->root;

	r->send_elems = c;
	r->recv_elems = c;
	switch (r->coll) {
	case PERF_ALLGATHER:
		r->recv_elems = all;
		break;
	case PERF_REDUCE_SCATTER:
		r->send_elems = all;
		break;
	case PERF_BROADCAST:
		r->send_elems = 0;
		break;
	case PERF_REDUCE:
		r->recv_elems = root ? c : 0;
		break;
	case PERF_GATHER:
		r->recv_elems = root ? all : 0;
		break;
	case PERF_SCATTER:
		r->send_elems = root ? all : 0;
		break;
	case PERF_ALLTOALL:
		r->send_elems = r->recv_elems = all;
		break;
	case PERF_BARRIER:
		r->send_elems = r->recv_elems = 0;
		break;
	default:
		break;
	}
}

static void *buf_alloc(const struct run *r, size_t bytes)
{
	void *p = NULL;

	if (!r->reg)
		return malloc(bytes);
	return weft_mem_alloc(&p, bytes) == WEFT_OK ? p : NULL;
}

static void buf_free(const struct run *r, void *p)
{
	if (r->reg)
		weft_mem_free(p);
	else
		free(p);
}

static void free_bufs(struct run *r)
{
	buf_free(r, r->send);
	r->send = NULL;
	for (int s = 0; s < PERF_MAX_ASYNC; s++) {
		buf_free(r, r->recv[s]);
		r->recv[s] = NULL;
	}
}

/* Inputs from perf_gen_value; every result element starts as expected + 1, so an element
 * the collective never wrote counts as wrong. Broadcast's root holds the data itself. With
 * -a N and fewer than N iterations, the buffers no call was given are not checked. */
static int fill_bufs(struct run *r)
{
	int nbuf = r->slots > 0 ? r->slots : 1;
	int src = r->coll == PERF_SCATTER ? r->root : r->rank;

	r->used = 0;
	if (r->send_elems > 0) {
		r->send = buf_alloc(r, r->send_elems * r->es);
		if (r->send == NULL)
			return -1;
		for (size_t i = 0; i < r->send_elems; i++)
			perf_store(r->send, i, r->dtype, perf_gen_value(&r->gen, src, i));
	}
	if (r->recv_elems == 0)
		return 0;
	for (int s = 0; s < nbuf; s++) {
		r->recv[s] = buf_alloc(r, r->recv_elems * r->es);
		if (r->recv[s] == NULL)
			return -1;
		for (size_t i = 0; i < r->recv_elems; i++) {
			int64_t v = expected(r, i);
			bool keep = r->coll == PERF_BROADCAST && r->rank == r->root;

			perf_store(r->recv[s], i, r->dtype, keep ? v : v + 1);
		}
	}
	return 0;
}

static long long count_wrong(const struct run *r)
{
	int nbuf = r->used;
	long long wrong = 0;

	for (int s = 0; s < nbuf && r->recv_elems > 0; s++)
		for (size_t i = 0; i < r->recv_elems; i++)
			wrong += !perf_equal(r->recv[s], i, r->dtype, expected(r, i));
	return wrong;
}

/* WEFT_PERF_CORRUPT: proves in tests that a wrong element is caught. One element in the
 * middle of the first result buffer becomes expected + 1, wrong in every dtype. */
static void corrupt(struct run *r, const struct opts *o)
{
	size_t i = r->recv_elems / 2;

	if (o->corrupt_rank != r->rank || r->recv_elems == 0 || r->recv[0] == NULL)
		return;
	perf_store(r->recv[0], i, r->dtype, expected(r, i) + 1);
}

static int fail(struct run *r, weft_status_t st, const char *what)
{
	fprintf(stderr, "weft-perf: rank %d: %s of %s (%zu x %s) failed: %s: %s\n", r->rank, what,
		perf_coll_name(r->coll), r->count, perf_dtype_name(r->dtype), weft_strerror(st),
		weft_comm_last_error(r->comm));
	return -1;
}

/* Every rank agrees whether all ranks got their buffers, so none is left waiting. */
static int agree(weft_comm_t *comm, int ok)
{
	int32_t mine = ok, all = 0;

	if (weft_allreduce(&mine, &all, 1, WEFT_INT32, WEFT_MIN, comm, NULL) != WEFT_OK)
		return 0;
	return all;
}

/* The largest v over the ranks, so that every rank derives the same counts from it. */
static weft_status_t max_over_ranks(weft_comm_t *comm, double *v)
{
	double mine = *v;

	return weft_allreduce(&mine, v, 1, WEFT_FLOAT64, WEFT_MAX, comm, NULL);
}

/* -T: one warm-up call is timed, a fifth of the budget sets the warm-ups (that call among
 * them), the time per call of the warm-ups after it sets the timed calls (the first call
 * of a size may pay for set-up; alone, it is its own measure). Both times are the slowest
 * rank's, taken outside any timed region, so every rank runs the same counts. A band
 * without warm-ups still ran the first call: it is reported. */
static int warm_up_budget(struct run *r, double budget, struct perf_row *row)
{
	double t0 = now_s(), t1, tw;
	weft_status_t st = run_iters(r, 1);

	t1 = now_s() - t0;
	tw = t1;
	if (st != WEFT_OK)
		return fail(r, st, "warm-up");
	st = max_over_ranks(r->comm, &t1);
	if (st != WEFT_OK)
		return fail(r, st, "allreduce of the first warm-up's time");
	row->warmup = budget_warmups(row->warmup, budget, t1);
	t0 = now_s();
	st = run_iters(r, row->warmup - 1);
	if (row->warmup > 1)
		tw = (now_s() - t0) / (row->warmup - 1);
	if (st != WEFT_OK)
		return fail(r, st, "warm-up");
	st = max_over_ranks(r->comm, &tw);
	if (st != WEFT_OK)
		return fail(r, st, "allreduce of the warm-ups' time");
	row->iters = budget_iters(row->iters, budget, tw);
	return 0;
}

static int warm_up(struct run *r, const struct opts *o, struct perf_row *row)
{
	weft_status_t st;

	if (o->budget > 0)
		return warm_up_budget(r, o->budget, row);
	st = run_iters(r, row->warmup);
	return st == WEFT_OK ? 0 : fail(r, st, "warm-up");
}

/* Seconds per call of a timed loop that ran from t0 to t1 on this rank: the slowest rank's
 * own loop; or, with -S, the span from the first rank's t0 to the last rank's t1. A rank
 * that starts late (waiting for its core while others ran) may find its calls' data there
 * already and time a short loop of its own, though the calls took the span to finish: where
 * ranks outnumber cores only the span measures them. CLOCK_MONOTONIC is one clock for the
 * ranks of one host; starts that lie more than a second apart after a barrier say the
 * ranks' clocks are not one. */
static int span_time(struct run *r, bool span, double t0, double t1, int iters, double *avg)
{
	double v[3] = {t0, -t0, t1}, m[3];
	weft_status_t st;

	*avg = (t1 - t0) / iters;
	if (!span) {
		st = max_over_ranks(r->comm, avg);
		return st == WEFT_OK ? 0 : fail(r, st, "allreduce of times after");
	}
	st = weft_allreduce(v, m, 3, WEFT_FLOAT64, WEFT_MAX, r->comm, NULL);
	if (st != WEFT_OK)
		return fail(r, st, "allreduce of start and end times after");
	*avg = budget_span_per_call(m, iters);
	if (*avg < 0) {
		if (r->rank == 0)
			fprintf(stderr,
				"weft-perf: -S: the ranks' starts lie %.3g s apart: their clocks "
				"are not one host's\n",
				m[0] + m[1]);
		return -1;
	}
	return 0;
}

static int measure(struct run *r, const struct opts *o, struct perf_row *row)
{
	double t0, t1, avg;
	long long wrong = 0, total = 0;
	weft_status_t st;
	int ok = fill_bufs(r) == 0;

	if (!ok)
		fprintf(stderr, "weft-perf: rank %d: out of memory for %s of %zu bytes\n", r->rank,
			perf_coll_name(r->coll), row->bytes);
	if (!agree(r->comm, ok))
		return -1;
	if (warm_up(r, o, row) != 0)
		return -1;
	st = weft_barrier(r->comm, NULL);
	if (st != WEFT_OK)
		return fail(r, st, "barrier before");
	if (o->late_rank == r->rank)
		nanosleep(&(struct timespec){.tv_sec = o->late_ms / 1000,
					     .tv_nsec = (long)(o->late_ms % 1000) * 1000000L},
			  NULL);
	t0 = now_s();
	st = run_iters(r, row->iters);
	t1 = now_s();
	if (st != WEFT_OK)
		return fail(r, st, "timed run");
	if (span_time(r, o->span, t0, t1, row->iters, &avg) != 0)
		return -1;
	row->time_us = avg * 1e6;
	row->algbw = avg > 0 ? (double)row->bytes / avg / 1e9 : 0;
	row->busbw = row->algbw * perf_coll_bus_factor(r->coll, r->n);
	row->wrong = -1;
	if (!o->check)
		return 0;
	corrupt(r, o);
	wrong = count_wrong(r);
	st = weft_allreduce(&wrong, &total, 1, WEFT_INT64, WEFT_SUM, r->comm, NULL);
	if (st != WEFT_OK)
		return fail(r, st, "allreduce of error counts after");
	row->wrong = total;
	return 0;
}

/* ---- the sweep and its text output ---- */

struct sweep {
	const struct opts *o;
	weft_comm_t *comm;
	int rank, n;
	struct perf_row *rows;
	size_t nrows, cap;
	size_t total; /* rows the sweep will print, for the progress line */
	bool tty;
};

static void progress(struct sweep *s, const struct run *r, size_t bytes)
{
	if (!s->tty)
		return;
	fprintf(stderr, "\r\033[K# [%zu/%zu] %s %s %s %zu B ...", s->nrows + 1, s->total,
		perf_coll_name(r->coll), perf_dtype_name(r->dtype), perf_op_name(r->op), bytes);
	fflush(stderr);
}

static void clear_progress(const struct sweep *s)
{
	if (!s->tty)
		return;
	fprintf(stderr, "\r\033[K");
	fflush(stderr);
}

static void print_row(const struct perf_row *w)
{
	char wrong[24] = "N/A";

	if (w->wrong >= 0)
		snprintf(wrong, sizeof(wrong), "%lld", w->wrong);
	printf("%12zu  %12zu  %8s  %6s  %6d  %9.2f  %7.2f  %7.2f  %6s\n", w->bytes, w->count,
	       w->coll == PERF_BARRIER ? "none" : perf_dtype_name(w->dtype), perf_op_name(w->op),
	       w->root, w->time_us, w->algbw, w->busbw, wrong);
	fflush(stdout);
}

static void print_table_head(enum perf_coll c)
{
	printf("#\n# collective: %s\n", perf_coll_name(c));
	printf("# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s\n", "size", "count", "type",
	       "redop", "root", "time", "algbw", "busbw", "#wrong");
	printf("# %10s  %12s  %8s  %6s  %6s  %9s  %7s  %7s  %6s\n", "(B)", "(elements)", "", "", "",
	       "(us)", "(GB/s)", "(GB/s)", "");
}

static int add_row(struct sweep *s, const struct perf_row *w)
{
	if (s->nrows == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 64;
		struct perf_row *p = realloc(s->rows, cap * sizeof(*p));

		if (p == NULL)
			return -1;
		s->rows = p;
		s->cap = cap;
	}
	s->rows[s->nrows++] = *w;
	return 0;
}

static int one(struct sweep *s, enum perf_coll c, weft_dtype_t t, int op, size_t nominal)
{
	struct run *r = calloc(1, sizeof(*r));
	struct perf_row row = {.coll = c, .dtype = t, .op = op, .root = -1};
	int ret;

	if (r == NULL) {
		fprintf(stderr, "weft-perf: rank %d: out of memory\n", s->rank);
		return -1;
	}
	*r = (struct run){.comm = s->comm,
			  .rank = s->rank,
			  .n = s->n,
			  .coll = c,
			  .dtype = t,
			  .op = op,
			  .root = s->o->root,
			  .es = perf_dtype_size(t),
			  .slots = s->o->async,
			  .reg = s->o->reg,
			  .gen = {.dtype = t, .op = op, .nranks = s->n}};
	if (perf_coll_has_root(c))
		row.root = s->o->root;
	perf_coll_counts(c, nominal, r->es, s->n, &r->count, &row.bytes);
	iters_for(s->o, nominal, &row.iters, &row.warmup);
	row.count = r->count;
	buffer_shapes(r);
	if (s->rank == 0)
		progress(s, r, row.bytes);
	ret = measure(r, s->o, &row);
	free_bufs(r);
	free(r);
	if (ret != 0 || s->rank != 0)
		return ret;
	clear_progress(s);
	print_row(&row);
	return add_row(s, &row);
}

static size_t count_sizes(const struct opts *o)
{
	size_t n = 1, sz = o->min_bytes;

	while (next_size(o, &sz))
		n++;
	return n;
}

/* One collective: every dtype and op asked for, each over every size. */
static int sweep_coll(struct sweep *s, enum perf_coll c)
{
	const struct opts *o = s->o;
	int t0 = o->all_dtypes ? 0 : (int)o->dtype, t1 = o->all_dtypes ? WEFT_DTYPE_COUNT_ : t0 + 1;
	int op0 = o->all_ops ? 0 : o->op, op1 = o->all_ops ? WEFT_OP_COUNT_ : op0 + 1;

	if (!perf_coll_has_op(c)) {
		op0 = -1;
		op1 = 0;
	}
	if (c == PERF_BARRIER)
		return one(s, c, WEFT_UINT8, -1, 0);
	for (int t = t0; t < t1; t++) {
		for (int op = op0; op < op1; op++) {
			size_t sz = o->min_bytes;

			do {
				if (one(s, c, (weft_dtype_t)t, op, sz) != 0)
					return -1;
			} while (next_size(o, &sz));
		}
	}
	return 0;
}

static size_t count_rows(const struct opts *o)
{
	size_t sizes = count_sizes(o), total = 0;
	size_t nt = o->all_dtypes ? WEFT_DTYPE_COUNT_ : 1, nop = o->all_ops ? WEFT_OP_COUNT_ : 1;

	for (int c = 0; c < PERF_COLL_COUNT; c++) {
		if (!o->colls[c])
			continue;
		if (c == PERF_BARRIER)
			total += 1;
		else
			total += sizes * nt * (perf_coll_has_op((enum perf_coll)c) ? nop : 1);
	}
	return total;
}

static void fill_meta(struct perf_meta *m, int n, const struct opts *o, int argc, char **argv)
{
	time_t now = time(NULL);
	struct tm tm;
	struct utsname u;
	size_t len = 1;

	*m = (struct perf_meta){.ranks = n,
				.version = weft_version(),
				.iters = o->iters,
				.warmup = o->warmup,
				.async = o->async,
				.check = o->check,
				.nbands = o->nbands,
				.band_limit = o->band_limit,
				.band_iters = o->band_iters,
				.band_warmup = o->band_warmup,
				.time_budget = o->budget,
				.span = o->span};
	gmtime_r(&now, &tm);
	strftime(m->date, sizeof(m->date), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (gethostname(m->host, sizeof(m->host) - 1) != 0)
		strcpy(m->host, "unknown");
	if (uname(&u) == 0)
		snprintf(m->kernel, sizeof(m->kernel), "%.30s %.60s %.30s", u.sysname, u.release,
			 u.machine);
	m->cpus = sysconf(_SC_NPROCESSORS_ONLN);
	for (int i = 0; i < argc; i++)
		len += strlen(argv[i]) + 1;
	m->cmdline = calloc(1, len);
	for (int i = 0; i < argc && m->cmdline != NULL; i++) {
		if (i > 0)
			strcat(m->cmdline, " ");
		strcat(m->cmdline, argv[i]);
	}
}

static void print_head(const struct sweep *s, const struct perf_meta *m)
{
	const struct opts *o = s->o;

	printf("# weft-perf: weft %s, %d ranks, host %s, %s\n", m->version, s->n, m->host, m->date);
	printf("# minBytes %zu maxBytes %zu step: %zu(%s) warmup iters: %d iters: %d "
	       "async: %d validation: %d\n",
	       o->min_bytes, o->max_bytes, o->factor >= 2 ? (size_t)o->factor : o->step_bytes,
	       o->factor >= 2 ? "factor" : "bytes", o->warmup, o->iters, o->async,
	       o->check ? 1 : 0);
	for (int i = 0; i < o->nbands; i++) {
		if (perf_band_last(o->band_limit, o->nbands, i))
			printf("# iterations by size: %s", i ? "larger" : "every size");
		else
			printf("# iterations by size: up to %zu bytes", o->band_limit[i]);
		printf(": warmup iters: %d iters: %d\n", o->band_warmup[i], o->band_iters[i]);
		if (perf_band_last(o->band_limit, o->nbands, i))
			break;
	}
	if (o->budget > 0)
		printf("# time budget per size: %g s (warm-ups within a fifth of it)\n", o->budget);
	if (o->span)
		printf("# time: from the first rank's first timed call to the last rank's last\n");
}

static long long print_tail(const struct sweep *s)
{
	long long wrong = 0;
	double bw = 0;
	size_t nbw = 0;

	for (size_t i = 0; i < s->nrows; i++) {
		wrong += s->rows[i].wrong > 0 ? s->rows[i].wrong : 0;
		if (s->rows[i].bytes > 0) {
			bw += s->rows[i].busbw;
			nbw++;
		}
	}
	printf("#\n# Out of bounds values : %lld %s\n", wrong, wrong == 0 ? "OK" : "FAILED");
	printf("# Avg bus bandwidth    : %g\n#\n", nbw > 0 ? bw / (double)nbw : 0.0);
	return wrong;
}

/* Rank 0 makes sure the report files can be written before a long sweep starts. */
static int probe_outputs(const struct opts *o, int rank, weft_comm_t *comm)
{
	const char *paths[3] = {o->json, o->csv, o->svg};
	int32_t ok = 1;

	for (int i = 0; i < 3 && rank == 0; i++) {
		FILE *f = paths[i] != NULL ? fopen(paths[i], "w") : NULL;

		if (paths[i] == NULL)
			continue;
		if (f == NULL) {
			fprintf(stderr, "weft-perf: cannot write %s: %s\n", paths[i],
				strerror(errno));
			ok = 0;
			continue;
		}
		fclose(f);
	}
	if (weft_broadcast(&ok, 1, WEFT_INT32, 0, comm, NULL) != WEFT_OK)
		return 1;
	return ok ? 0 : 2;
}

static int write_reports(const struct sweep *s, const struct perf_meta *m)
{
	const struct opts *o = s->o;
	int ret = 0;

	if (o->json != NULL && perf_write_json(o->json, m, s->rows, s->nrows) != 0)
		ret = 1;
	if (o->csv != NULL && perf_write_csv(o->csv, m, s->rows, s->nrows) != 0)
		ret = 1;
	if (o->svg != NULL && perf_write_svg(o->svg, m, s->rows, s->nrows) != 0)
		ret = 1;
	return ret;
}

/* 0 done, 1 wrong results or a report not written, -1 a weft call failed. */
static int run_sweep(struct sweep *s, const struct perf_meta *m)
{
	int ret = 0;

	if (s->rank == 0)
		print_head(s, m);
	for (int c = 0; c < PERF_COLL_COUNT && ret == 0; c++) {
		if (!s->o->colls[c])
			continue;
		if (s->rank == 0)
			print_table_head((enum perf_coll)c);
		ret = sweep_coll(s, (enum perf_coll)c);
	}
	if (s->rank == 0)
		clear_progress(s);
	if (ret != 0 || s->rank != 0)
		return ret != 0 ? -1 : 0;
	if (print_tail(s) != 0)
		ret = 1;
	if (write_reports(s, m) != 0)
		ret = 1;
	return ret;
}

int main(int argc, char **argv)
{
	struct opts o;
	struct sweep s = {.o = &o};
	struct perf_meta meta;
	weft_comm_t *comm = NULL;
	weft_status_t st;
	int ret = parse_args(argc, argv, &o);

	if (ret >= 0)
		return ret;
	st = weft_init(&comm);
	if (st != WEFT_OK) {
		fprintf(stderr, "weft-perf: weft_init failed: %s\n", weft_strerror(st));
		return 1;
	}
	s.comm = comm;
	s.rank = weft_comm_rank(comm);
	s.n = weft_comm_size(comm);
	s.total = count_rows(&o);
	s.tty = s.rank == 0 && isatty(STDERR_FILENO);
	if (o.root >= s.n) {
		if (s.rank == 0)
			fprintf(stderr, "weft-perf: root %d is not a rank (world of %d)\n", o.root,
				s.n);
		weft_comm_destroy(comm);
		return 2;
	}
	if (o.corrupt_rank >= s.n || o.late_rank >= s.n) {
		if (s.rank == 0)
			fprintf(stderr, "weft-perf: %s=%d is not a rank (of %d)\n",
				o.corrupt_rank >= s.n ? "WEFT_PERF_CORRUPT" : "WEFT_PERF_LATE",
				o.corrupt_rank >= s.n ? o.corrupt_rank : o.late_rank, s.n);
		weft_comm_destroy(comm);
		return 2;
	}
	ret = probe_outputs(&o, s.rank, comm);
	if (ret == 0) {
		fill_meta(&meta, s.n, &o, argc, argv);
		ret = run_sweep(&s, &meta);
		free(meta.cmdline);
	}
	/* A failed call may leave peers waiting in it: abort rather than meet them. */
	if (ret < 0) {
		weft_comm_abort(comm);
		ret = 1;
	}
	weft_comm_destroy(comm);
	free(s.rows);
	return ret;
}
