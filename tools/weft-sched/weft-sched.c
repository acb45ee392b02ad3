/* weft-sched (tools): prints a collective's plan as the schedule layer compiles it (text or
 * Graphviz, one rank or all) and estimates its time by simulating every rank's DAG. */
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>

#include "layers/schedule/exec.h" /* wt_sched_slot_capacity */
#include "layers/schedule/plan.h"
#include "lib/util/dtype.h"

#define MAX_RANKS (1 << 20) /* message keys pack two ranks in 20 bits each */
#define DOT_MAX_RANKS 512
/* --slots without a size: what a communicator of one host with a core per rank gets (with
 * more local ranks than cores the library offers the whole slot of its regions,
 * wt_sched_slot_capacity(WT_SCHED_SLOT_REGION)). */
#define DEFAULT_SLOT_BYTES WT_SCHED_SLOT_CORE_BYTES

typedef struct {
	wt_sched_args_t a;
	const char *algo;
	int has_cost;
	wt_sched_cost_t cost;
	int dot, all_ranks, simulate;
	size_t *vec; /* ALLTOALLV: uniform counts and displacements */
} opts_t;

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "usage: weft-sched COLLECTIVE [options]   (weft-sched --list for names)\n"
	    "  --algo NAME        algorithm (default: the library's automatic choice)\n"
	    "  --ranks N          communicator size (default 8)\n"
	    "  --rank R           rank whose plan is printed (default 0)\n"
	    "  --root R           root of rooted collectives (default 0)\n"
	    "  --peer P           send / recv: the other rank (default rank+1 / rank-1)\n"
	    "  --count N[K|M|G]   elements per rank block, K = 1024 (default 1M)\n"
	    "  --dtype NAME       int8 ... float64 (default float32)\n"
	    "  --op NAME          sum, prod, min, max, avg (default sum)\n"
	    "  --in-place         the collective's in-place form\n"
	    "  --seg-bytes N[K|M] pipeline segment (default %zu)\n"
	    "  --compress FMT     none, bf16, fp16 (float32 allreduce)\n"
	    "  --slots[=BYTES]    the ranks share slots of BYTES (one host, shm; default %zu):\n"
	    "                     the slots algorithms become possible (--algo slots sets it)\n"
	    "  --mem              buffers in weft_mem_alloc memory (with slots: allreduce may\n"
	    "                     go direct; --algo direct sets both)\n"
	    "  --cost A,B,G[,S[,X]]\n"
	    "                     alpha in us, link GB/s, reduce GB/s (and the share of gamma a\n"
	    "                     byte read from a slot costs, default 1; and the KiB from which\n"
	    "                     an exchange's receives go by get, default none): choose by cost\n"
	    "  --dot              Graphviz instead of text\n"
	    "  --all-ranks        every rank's plan (with --dot: clusters and message edges)\n"
	    "  --simulate         estimated time under the alpha-beta-gamma model\n"
	    "  --list             collectives and their algorithms\n"
	    "  -h, --help         this text\n",
	    WT_SCHED_DEFAULT_SEG_BYTES, DEFAULT_SLOT_BYTES);
}

static int bad(const char *fmt, const char *what)
{
	fprintf(stderr, "weft-sched: ");
	fprintf(stderr, fmt, what);
	fprintf(stderr, "\n");
	return 2;
}

/* A size with an optional K / M / G (powers of 1024) suffix. */
static int parse_size(const char *s, size_t *out)
{
	unsigned long long v, mul = 1;
	char *end;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	if (*end) {
		switch (*end) {
		case 'k':
		case 'K':
			mul = 1ull << 10;
			break;
		case 'm':
		case 'M':
			mul = 1ull << 20;
			break;
		case 'g':
		case 'G':
			mul = 1ull << 30;
			break;
		default:
			return -1;
		}
		if (end[1])
			return -1;
	}
	if (v > SIZE_MAX / mul)
		return -1;
	*out = (size_t)(v * mul);
	return 0;
}

static int parse_int(const char *s, int lo, int hi, int *out)
{
	size_t v;

	if (parse_size(s, &v) || v < (size_t)lo || v > (size_t)hi)
		return -1;
	*out = (int)v;
	return 0;
}

/* alpha_us,GBps,reduce_GBps[,slot_read[,xchg_get_KiB]]: slot_read the share of gamma a
 * byte read from a peer's slot costs (the library uses 0.3 with more local ranks than
 * cores); unset, the library's prices with a core per rank (cost_t.slot_read 0: see
 * table.c beta_share). xchg_get_KiB: the size from which an exchange's receives go by get
 * (the library: 128 with more local ranks than cores); unset, none. */
static int parse_cost(const char *s, wt_sched_cost_t *c)
{
	double a, gb, rgb, sr = 0, xk = 0;
	char tail;
	int n = sscanf(s, "%lf,%lf,%lf,%lf,%lf%c", &a, &gb, &rgb, &sr, &xk, &tail);

	if (n < 3 || n > 5 || !(a >= 0) || !(gb > 0) || !(rgb > 0) ||
	    (n >= 4 && !(sr > 0 && sr <= 1)) || (n == 5 && !(xk >= 1 && xk <= 1048576)))
		return -1;
	c->alpha = a * 1e-6;
	c->beta = 1 / (gb * 1e9);
	c->gamma = 1 / (rgb * 1e9);
	c->slot_read = sr;
	c->xchg_get_min = (size_t)(xk * 1024);
	return 0;
}

static int by_name(const char *s, int n, const char *(*name)(int))
{
	for (int i = 0; i < n; i++)
		if (strcasecmp(s, name(i)) == 0)
			return i;
	return -1;
}

static const char *dtype_name(int i)
{
	return wt_util_dtype_name((weft_dtype_t)i);
}

static const char *op_name(int i)
{
	return wt_util_op_name((weft_op_t)i);
}

static void list_all(void)
{
	size_t n;
	const wt_sched_algo_t *t = wt_sched_algo_table(&n);

	for (int c = 0; c < WT_COLL_COUNT_; c++) {
		printf("%-15s", wt_sched_coll_name((wt_sched_coll_t)c));
		for (size_t i = 0; i < n; i++)
			if (t[i].coll == (wt_sched_coll_t)c)
				printf(" %s", t[i].name);
		printf("\n");
	}
}

enum {
	O_ALGO = 256,
	O_RANKS,
	O_RANK,
	O_ROOT,
	O_PEER,
	O_COUNT,
	O_DTYPE,
	O_OP,
	O_INPLACE,
	O_SEG,
	O_COMPRESS,
	O_SLOTS,
	O_MEM,
	O_COST,
	O_DOT,
	O_ALL,
	O_SIM,
	O_LIST,
};

static const struct option long_opts[] = {
    {"algo", required_argument, NULL, O_ALGO},
    {"ranks", required_argument, NULL, O_RANKS},
    {"rank", required_argument, NULL, O_RANK},
    {"root", required_argument, NULL, O_ROOT},
    {"peer", required_argument, NULL, O_PEER},
    {"count", required_argument, NULL, O_COUNT},
    {"dtype", required_argument, NULL, O_DTYPE},
    {"op", required_argument, NULL, O_OP},
    {"in-place", no_argument, NULL, O_INPLACE},
    {"seg-bytes", required_argument, NULL, O_SEG},
    {"compress", required_argument, NULL, O_COMPRESS},
    {"slots", optional_argument, NULL, O_SLOTS},
    {"mem", no_argument, NULL, O_MEM},
    {"cost", required_argument, NULL, O_COST},
    {"dot", no_argument, NULL, O_DOT},
    {"all-ranks", no_argument, NULL, O_ALL},
    {"simulate", no_argument, NULL, O_SIM},
    {"list", no_argument, NULL, O_LIST},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

/* Returns -1 to go on, else the exit status. */
static int parse_opt(opts_t *o, int c, const char *v, int *peer_set)
{
	switch (c) {
	case O_ALGO:
		o->algo = v;
		return -1;
	case O_RANKS:
		return parse_int(v, 1, MAX_RANKS, &o->a.size) ? bad("bad --ranks '%s'", v) : -1;
	case O_RANK:
		return parse_int(v, 0, MAX_RANKS, &o->a.rank) ? bad("bad --rank '%s'", v) : -1;
	case O_ROOT:
		return parse_int(v, 0, MAX_RANKS, &o->a.root) ? bad("bad --root '%s'", v) : -1;
	case O_PEER:
		*peer_set = 1;
		return parse_int(v, 0, MAX_RANKS, &o->a.peer) ? bad("bad --peer '%s'", v) : -1;
	case O_COUNT:
		return parse_size(v, &o->a.count) ? bad("bad --count '%s'", v) : -1;
	case O_SEG:
		return parse_size(v, &o->a.seg_bytes) ? bad("bad --seg-bytes '%s'", v) : -1;
	case O_DTYPE:
		o->a.dtype = (weft_dtype_t)by_name(v, WEFT_DTYPE_COUNT_, dtype_name);
		return (int)o->a.dtype < 0 ? bad("unknown --dtype '%s'", v) : -1;
	case O_OP:
		o->a.op = (weft_op_t)by_name(v, WEFT_OP_COUNT_, op_name);
		return (int)o->a.op < 0 ? bad("unknown --op '%s'", v) : -1;
	case O_COMPRESS:
		o->a.compress = wt_sched_compress_from_name(v);
		return o->a.compress < 0 ? bad("unknown --compress '%s' (none, bf16, fp16)", v)
					 : -1;
	case O_SLOTS:
		o->a.slot_bytes = DEFAULT_SLOT_BYTES;
		return v && (parse_size(v, &o->a.slot_bytes) || !o->a.slot_bytes)
			   ? bad("bad --slots '%s'", v)
			   : -1;
	case O_COST:
		o->has_cost = 1;
		return parse_cost(v, &o->cost)
			   ? bad("bad --cost '%s' "
				 "(alpha_us,GBps,reduce_GBps[,slot_read[,xchg_get_KiB]])",
				 v)
			   : -1;
	case O_INPLACE:
		o->a.in_place = 1;
		return -1;
	case O_MEM:
		o->a.mem = 1;
		return -1;
	case O_DOT:
		o->dot = 1;
		return -1;
	case O_ALL:
		o->all_ranks = 1;
		return -1;
	case O_SIM:
		o->simulate = 1;
		return -1;
	case O_LIST:
		list_all();
		return 0;
	case 'h':
		usage(stdout);
		return 0;
	default:
		usage(stderr);
		return 2;
	}
}

static int parse_args(opts_t *o, int argc, char **argv)
{
	int c, peer_set = 0, coll, rc;
	char err[256];

	o->a.size = 8;
	o->a.count = (size_t)1 << 20;
	o->a.dtype = WEFT_FLOAT32;
	o->a.op = WEFT_SUM;
	o->cost = (wt_sched_cost_t){.alpha = 5e-6, .beta = 1 / 10e9, .gamma = 1 / 20e9};
	while ((c = getopt_long(argc, argv, "h", long_opts, NULL)) != -1) {
		rc = parse_opt(o, c, optarg, &peer_set);
		if (rc >= 0)
			return rc;
	}
	if (optind != argc - 1) {
		usage(stderr);
		return bad("%s",
			   optind < argc ? "one collective name expected" : "no collective named");
	}
	coll = wt_sched_coll_from_name(argv[optind]);
	if (coll < 0)
		return bad("unknown collective '%s' (see --list)", argv[optind]);
	o->a.coll = (wt_sched_coll_t)coll;
	if (o->algo && (strcasecmp(o->algo, "slots") == 0 || strcasecmp(o->algo, "direct") == 0) &&
	    !o->a.slot_bytes)
		o->a.slot_bytes = DEFAULT_SLOT_BYTES;
	if (o->algo && strcasecmp(o->algo, "direct") == 0)
		o->a.mem = 1;
	if (!peer_set)
		o->a.peer = coll == WT_COLL_RECV ? (o->a.rank + o->a.size - 1) % o->a.size
						 : (o->a.rank + 1) % o->a.size;
	if (o->a.rank >= o->a.size || o->a.root >= o->a.size)
		return bad("%s outside --ranks", o->a.rank >= o->a.size ? "--rank" : "--root");
	if (wt_sched_args_check(&o->a, err, sizeof(err)) && coll != WT_COLL_ALLTOALLV)
		return bad("%s", err);
	return -1;
}

/* ALLTOALLV gets uniform vectors: count elements to and from every rank. */
static int set_vectors(opts_t *o)
{
	size_t n = (size_t)o->a.size;

	if (o->a.coll != WT_COLL_ALLTOALLV)
		return 0;
	if (o->a.count && n > SIZE_MAX / o->a.count)
		return -1;
	o->vec = malloc(2 * n * sizeof(*o->vec));
	if (!o->vec)
		return -1;
	for (size_t i = 0; i < n; i++) {
		o->vec[i] = o->a.count;
		o->vec[n + i] = i * o->a.count;
	}
	o->a.sendcounts = o->a.recvcounts = o->vec;
	o->a.sdispls = o->a.rdispls = o->vec + n;
	return 0;
}

static int choose(const opts_t *o, const wt_sched_algo_t **algo)
{
	char spec[128], err[256];

	snprintf(spec, sizeof(spec), "%s:%s", wt_sched_coll_name(o->a.coll),
		 o->algo ? o->algo : "");
	if (wt_sched_algo_choose(&o->a, o->algo ? spec : NULL, o->has_cost ? &o->cost : NULL, algo,
				 err, sizeof(err)) != WEFT_OK)
		return bad("%s", err);
	return -1;
}

static wt_sched_plan_t *build(const opts_t *o, const wt_sched_algo_t *algo, int rank)
{
	wt_sched_args_t a = o->a;
	wt_sched_plan_t *p = NULL;
	char err[320];

	a.rank = rank;
	if (a.coll == WT_COLL_SEND || a.coll == WT_COLL_RECV) {
		/* Every rank of a p2p "collective" talks to its ring neighbour. */
		if (rank != o->a.rank)
			a.peer = a.coll == WT_COLL_RECV ? (rank + a.size - 1) % a.size
							: (rank + 1) % a.size;
	}
	if (wt_sched_plan_build(&a, algo, &p, err, sizeof(err)) != WEFT_OK) {
		fprintf(stderr, "weft-sched: rank %d: %s\n", rank, err);
		return NULL;
	}
	return p;
}

/* ---- message matching: the k-th send a->b pairs with the k-th receive b<-a ---- */

typedef struct {
	uint64_t *keys, *vals;
	size_t cap, used;
} msgmap_t;

static uint64_t msg_key(int src, int dst, uint32_t msg)
{
	return (uint64_t)src << 44 | (uint64_t)dst << 24 | msg;
}

static size_t msg_hash(uint64_t k, size_t cap)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k & (cap - 1);
}

static int map_grow(msgmap_t *m)
{
	msgmap_t n = {.cap = m->cap ? m->cap * 2 : 1024};

	n.keys = calloc(n.cap, sizeof(*n.keys));
	n.vals = malloc(n.cap * sizeof(*n.vals));
	if (!n.keys || !n.vals) {
		free(n.keys);
		free(n.vals);
		return -1;
	}
	for (size_t i = 0; i < m->cap; i++) {
		size_t h;

		if (!m->keys[i])
			continue;
		for (h = msg_hash(m->keys[i], n.cap); n.keys[h]; h = (h + 1) & (n.cap - 1))
			;
		n.keys[h] = m->keys[i];
		n.vals[h] = m->vals[i];
	}
	n.used = m->used;
	free(m->keys);
	free(m->vals);
	*m = n;
	return 0;
}

/* Key 0 cannot occur (a message never goes from rank 0 to itself), so it marks empty. */
static size_t map_find(const msgmap_t *m, uint64_t k)
{
	size_t h;

	if (!m->cap)
		return SIZE_MAX;
	for (h = msg_hash(k, m->cap); m->keys[h]; h = (h + 1) & (m->cap - 1))
		if (m->keys[h] == k)
			return h;
	return SIZE_MAX;
}

static int map_put(msgmap_t *m, uint64_t k, uint64_t v)
{
	size_t h;

	if ((m->used + 1) * 2 > m->cap && map_grow(m))
		return -1;
	for (h = msg_hash(k, m->cap); m->keys[h]; h = (h + 1) & (m->cap - 1))
		;
	m->keys[h] = k;
	m->vals[h] = v;
	m->used++;
	return 0;
}

/* Linear-probing delete: shift later members of the cluster back so lookups still work. */
static void map_del(msgmap_t *m, size_t h)
{
	size_t j = h;

	m->keys[h] = 0;
	m->used--;
	for (;;) {
		size_t home;

		j = (j + 1) & (m->cap - 1);
		if (!m->keys[j])
			return;
		home = msg_hash(m->keys[j], m->cap);
		/* Move j back to h unless its home lies cyclically in (h, j]. */
		if (h <= j ? (h < home && home <= j) : (h < home || home <= j))
			continue;
		m->keys[h] = m->keys[j];
		m->vals[h] = m->vals[j];
		m->keys[j] = 0;
		h = j;
	}
}

static void map_free(msgmap_t *m)
{
	free(m->keys);
	free(m->vals);
}

static int is_recv(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_RECV || s->type == WT_SCHED_RECV_REDUCE;
}

/* ---- Graphviz ---- */

/* Slot steps that only wait or signal: drawn without buffer ranges. */
static int is_slot_sync(const wt_sched_step_t *s)
{
	return s->type == WT_SCHED_SLOT_FREE || s->type == WT_SCHED_SLOT_WAIT ||
	       s->type == WT_SCHED_SLOT_DONE || s->type == WT_SCHED_SLOT_DRAIN;
}

static const char *dot_shape(const wt_sched_step_t *s)
{
	if (s->type == WT_SCHED_SEND || s->type == WT_SCHED_SLOT_PUT)
		return "box";
	if (is_recv(s) || s->type == WT_SCHED_SLOT_WAIT || s->type == WT_SCHED_SLOT_FREE ||
	    s->type == WT_SCHED_SLOT_DRAIN)
		return "ellipse";
	if (s->type == WT_SCHED_NOP || s->type == WT_SCHED_SLOT_DONE)
		return "point";
	return "diamond";
}

static void dot_node(const wt_sched_plan_t *p, size_t i, int rank, const char *indent)
{
	const wt_sched_step_t *s = wt_sched_plan_step(p, i);

	printf("%sr%d_s%zu [shape=%s, label=\"%zu: %s", indent, rank, i, dot_shape(s), i,
	       wt_sched_step_type_name((wt_sched_step_type_t)s->type));
	if (s->type == WT_SCHED_SEND)
		printf("\\nto %d #%u", (int)s->peer, s->msg);
	else if (is_recv(s))
		printf("\\nfrom %d #%u", (int)s->peer, s->msg);
	else if (s->type == WT_SCHED_SLOT_WAIT || s->type == WT_SCHED_SLOT_FREE ||
		 s->type == WT_SCHED_SLOT_DRAIN)
		printf("\\nrank %d", (int)s->peer);
	if (s->type == WT_SCHED_PEER_WRITE)
		printf("\\n%s of %d[%zu+%zu]", wt_sched_buf_name((wt_sched_buf_t)s->buf),
		       (int)s->peer, s->off, s->len);
	else if (s->type == WT_SCHED_PEER_REDUCE_OUT)
		printf("\\n%s of all[%zu+%zu]\\n<- SEND of %d[%zu]",
		       wt_sched_buf_name((wt_sched_buf_t)s->buf), s->off, s->len, (int)s->peer,
		       s->off);
	else if (s->type != WT_SCHED_NOP && !is_slot_sync(s))
		printf("\\n%s[%zu+%zu]", wt_sched_buf_name((wt_sched_buf_t)s->buf), s->off, s->len);
	if (s->type == WT_SCHED_PEER_READ || s->type == WT_SCHED_PEER_REDUCE)
		printf("\\n<- %s of %d[%zu+%zu]", wt_sched_buf_name((wt_sched_buf_t)s->src_buf),
		       (int)s->peer, s->src_off, s->len);
	else if (s->type == WT_SCHED_SLOT_COPY || s->type == WT_SCHED_SLOT_REDUCE)
		printf("\\n<- SLOT of %d[%zu+%zu]", (int)s->peer, s->src_off, s->len);
	else if (s->type != WT_SCHED_NOP && s->type != WT_SCHED_SEND && !is_recv(s) &&
		 s->type != WT_SCHED_DIV && !is_slot_sync(s))
		printf("\\n<- %s[%zu+%zu]", wt_sched_buf_name((wt_sched_buf_t)s->src_buf),
		       s->src_off, wt_sched_step_src_len(p, s));
	printf("\"];\n");
}

/* Shared slots: each rank's PUT to the SLOT_WAITs on it, green. */
static void dot_slot_edges(wt_sched_plan_t **plans, int n)
{
	for (int r = 0; r < n; r++)
		for (size_t i = 0; i < wt_sched_plan_nsteps(plans[r]); i++) {
			const wt_sched_step_t *s = wt_sched_plan_step(plans[r], i);
			const wt_sched_plan_t *q;

			if (s->type != WT_SCHED_SLOT_WAIT)
				continue;
			q = plans[s->peer];
			for (size_t j = 0; j < wt_sched_plan_nsteps(q); j++)
				if (wt_sched_plan_step(q, j)->type == WT_SCHED_SLOT_PUT)
					printf(
					    "  r%d_s%zu -> r%d_s%zu [style=dashed, color=green];\n",
					    (int)s->peer, j, r, i);
		}
}

static void dot_plan(const wt_sched_plan_t *p, int rank, const char *indent)
{
	const uint32_t *deps = wt_sched_plan_deps(p);

	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++)
		dot_node(p, i, rank, indent);
	for (size_t i = 0; i < wt_sched_plan_nsteps(p); i++) {
		const wt_sched_step_t *s = wt_sched_plan_step(p, i);

		for (uint32_t k = 0; k < s->ndeps; k++)
			printf("%sr%d_s%u -> r%d_s%zu;\n", indent, rank, deps[s->dep_start + k],
			       rank, i);
	}
}

static void dot_header(const opts_t *o, const wt_sched_plan_t *p)
{
	printf("digraph weft_sched {\n");
	printf("  label=\"%s %s ranks %d count %zu %s %s%s\";\n", wt_sched_coll_name(o->a.coll),
	       wt_sched_plan_algo(p), o->a.size, o->a.count, wt_util_dtype_name(o->a.dtype),
	       wt_util_op_name(o->a.op), o->a.in_place ? " in-place" : "");
	printf("  rankdir=TB;\n  node [fontsize=10];\n");
}

static int dot_all(const opts_t *o, wt_sched_plan_t **plans)
{
	msgmap_t m = {0};
	int n = o->a.size, rc = 0;

	dot_header(o, plans[0]);
	for (int r = 0; r < n; r++) {
		printf("  subgraph cluster_rank%d {\n    label=\"rank %d\";\n", r, r);
		dot_plan(plans[r], r, "    ");
		printf("  }\n");
	}
	for (int r = 0; r < n && !rc; r++)
		for (size_t i = 0; i < wt_sched_plan_nsteps(plans[r]) && !rc; i++) {
			const wt_sched_step_t *s = wt_sched_plan_step(plans[r], i);

			if (s->type == WT_SCHED_SEND)
				rc = map_put(&m, msg_key(r, (int)s->peer, s->msg), i);
		}
	for (int r = 0; r < n && !rc; r++)
		for (size_t i = 0; i < wt_sched_plan_nsteps(plans[r]); i++) {
			const wt_sched_step_t *s = wt_sched_plan_step(plans[r], i);
			size_t h;

			if (!is_recv(s))
				continue;
			h = map_find(&m, msg_key((int)s->peer, r, s->msg));
			if (h == SIZE_MAX) {
				fprintf(stderr,
					"weft-sched: rank %d step %zu receives message %u "
					"that rank %d never sends\n",
					r, i, s->msg, (int)s->peer);
				continue;
			}
			printf("  r%d_s%llu -> r%d_s%zu [style=dashed, color=blue];\n",
			       (int)s->peer, (unsigned long long)m.vals[h], r, i);
		}
	dot_slot_edges(plans, n);
	printf("}\n");
	map_free(&m);
	return rc ? 1 : 0;
}

/* ---- simulation ----
 * Every rank's plan becomes one step record per (step i, rank r) at global id i * n + r:
 * ranks tend to run the same step index at about the same time, so this keeps the
 * simulation's memory accesses close together (plans shorter than the longest leave
 * empty records). A step's ready time is the latest finish of its dependencies and, for a
 * receive, of the matching send. Sends cost alpha + len * beta and leave a rank one at a
 * time (one port per rank, in ready-time order); the message arrives when the send
 * finishes. Reductions (the reduce of RECV_REDUCE too) cost len * gamma, and so do the
 * other steps that touch memory (COPY, DIV, NARROW, WIDEN); NOP and RECV cost nothing
 * beyond the arrival. Shared slots: a SLOT_PUT costs its copy (len * gamma) and its flag
 * reaches every SLOT_WAIT on that rank and slot call a fraction of alpha later
 * (WT_SCHED_SLOT_ALPHA, as the cost model prices it); slot reads cost len * gamma. Waits and
 * releases cost nothing but what they wait for: a SLOT_DONE's release reaches the SLOT_DRAINs
 * on that rank and call, and the SLOT_FREEs of the call that reuses the slot (the ring's
 * depth of calls later; one call alone, only a call in more parts than the ring is deep
 * reuses its slots); a rank's own turn (the SLOT_FREE on itself) waits for its release of
 * the call before, at once. */

#define SIM_SEND (1u << 31)
#define SIM_DONE (1u << 30) /* scheduled, or an empty record */
#define SIM_SIG (1u << 29)  /* a SLOT_PUT or SLOT_DONE: its finish meets slot waits */
#define SIM_COUNT (SIM_SIG - 1)
#define SIM_INLINE 3
#define SIM_NONE UINT32_MAX

typedef struct {
	double t;		/* ready time, then finish time */
	float dur;		/* seconds */
	uint32_t pend;		/* unmet predecessors | SIM_SEND | SIM_DONE */
	uint32_t e[SIM_INLINE]; /* successors (a send's message edge is e[0]) */
	uint32_t xoff;		/* more successors: xe[xoff] = count, then ids; 0 = none */
} sim_step_t;

/* A slot signal, or a wait on one: step g and the signal's key (sim_sig_key). */
typedef struct {
	uint32_t g;
	uint64_t key;
} sim_sig_t;

enum { SIM_SIG_PUT = 0, SIM_SIG_DONE = 1 };

static uint64_t sim_sig_key(int kind, int rank, unsigned part)
{
	return (uint64_t)kind << 62 | (uint64_t)part << 32 | (uint32_t)rank;
}

typedef struct {
	int n;
	size_t depth, cap; /* records are depth * n, of cap * n allocated */
	sim_step_t *st;
	uint32_t *xe;
	size_t nxe, xcap;
	size_t steps, nmsg, bytes;
	/* shared slots: the signals (SLOT_PUT, SLOT_DONE) sorted by step, and the waits on
	 * them sorted by signal (sim_sig_key) */
	sim_sig_t *sigs, *waits;
	size_t nsigs, sigcap, nwaits, wcap;
	unsigned ring; /* slot calls in flight per rank: the depth of the ring the plans use */
	double flag;   /* seconds from a signal's end to a waiter on another rank */
	size_t nputs;
} sim_t;

static int grow(void **arr, size_t *cap, size_t need, size_t elem)
{
	size_t n = *cap ? *cap : 4096;
	void *p;

	if (need <= *cap)
		return 0;
	while (n < need)
		n *= 2;
	if (n > SIZE_MAX / elem)
		return -1;
	p = realloc(*arr, n * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = n;
	return 0;
}

/* The records are gigabytes at thousands of ranks and the simulation hops between them:
 * huge pages spare it most TLB misses, so they come from mmap rather than malloc. */
static int sim_map(sim_t *s, size_t cap)
{
	size_t bytes = cap * (size_t)s->n * sizeof(sim_step_t);
	size_t old = s->cap * (size_t)s->n * sizeof(sim_step_t);
	void *p;

	if (s->st)
		p = mremap(s->st, old, bytes, MREMAP_MAYMOVE);
	else
		p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return -1;
	madvise(p, bytes, MADV_HUGEPAGE); /* a hint: fine if refused */
	s->st = p;
	s->cap = cap;
	return 0;
}

static int sim_deepen(sim_t *s, size_t depth)
{
	size_t cap = s->cap, n = (size_t)s->n;

	if (depth <= s->depth)
		return 0;
	if (depth > UINT32_MAX / n)
		return -1;
	if (depth > s->cap) {
		cap = s->cap ? s->cap : 16;
		while (cap < depth)
			cap *= 2;
		if (cap > UINT32_MAX / n)
			cap = UINT32_MAX / n;
		if (sim_map(s, cap))
			return -1;
	}
	for (size_t g = s->depth * n; g < depth * n; g++)
		s->st[g] = (sim_step_t){.pend = SIM_DONE, .e = {SIM_NONE, SIM_NONE, SIM_NONE}};
	s->depth = depth;
	return 0;
}

static float step_cost(const wt_sched_step_t *st, const wt_sched_cost_t *c)
{
	switch (st->type) {
	case WT_SCHED_SEND:
		return (float)(c->alpha + (double)st->len * c->beta);
	case WT_SCHED_RECV:
	case WT_SCHED_NOP:
	case WT_SCHED_SLOT_FREE:
	case WT_SCHED_SLOT_WAIT:
	case WT_SCHED_SLOT_DONE:
	case WT_SCHED_SLOT_DRAIN:
		return 0;
	default:
		return (float)((double)st->len * c->gamma);
	}
}

static int sim_add_edge(sim_t *s, sim_step_t *x, uint32_t *k, size_t *need, uint32_t to)
{
	if (*k < SIM_INLINE) {
		x->e[(*k)++] = to;
		return 0;
	}
	if (!x->xoff) {
		if (!s->nxe)
			s->nxe = 1; /* offset 0 means "none" */
		if (grow((void **)&s->xe, &s->xcap, s->nxe + 1 + *need, sizeof(*s->xe)) ||
		    s->nxe >= UINT32_MAX)
			return -1;
		x->xoff = (uint32_t)s->nxe;
		s->xe[s->nxe++] = 0;
		s->nxe += *need;
	}
	s->xe[x->xoff + 1 + s->xe[x->xoff]++] = to;
	return 0;
}

#define SIM_RECV_FLAG (1ull << 63)

/* Pairs a network step with its partner seen before, or leaves it in the map. */
static int sim_match(sim_t *s, msgmap_t *m, const wt_sched_step_t *st, int r, uint32_t g)
{
	int send = st->type == WT_SCHED_SEND;
	uint64_t key =
	    send ? msg_key(r, (int)st->peer, st->msg) : msg_key((int)st->peer, r, st->msg);
	size_t h = map_find(m, key);

	if (h == SIZE_MAX)
		return map_put(m, key, send ? g : (g | SIM_RECV_FLAG));
	if (send)
		s->st[g].e[0] = (uint32_t)(m->vals[h] & ~SIM_RECV_FLAG);
	else
		s->st[m->vals[h]].e[0] = g;
	map_del(m, h);
	return 0;
}

static int sim_sig_add(sim_sig_t **arr, size_t *len, size_t *cap, uint32_t g, uint64_t key)
{
	if (grow((void **)arr, cap, *len + 1, sizeof(**arr)))
		return -1;
	(*arr)[*len].g = g;
	(*arr)[(*len)++].key = key;
	return 0;
}

/* Step g (st, of rank r) as a slot signal or a wait on one, counted into *pend. 1: a
 * signal; 0: neither, or a wait; -1: out of memory. */
static int sim_slot_edge(sim_t *s, const wt_sched_step_t *st, int r, uint32_t g, uint32_t *pend)
{
	uint64_t key;

	switch (st->type) {
	case WT_SCHED_SLOT_PUT:
	case WT_SCHED_SLOT_DONE:
		*pend |= SIM_SIG;
		key = sim_sig_key(st->type == WT_SCHED_SLOT_PUT ? SIM_SIG_PUT : SIM_SIG_DONE, r,
				  st->part);
		return sim_sig_add(&s->sigs, &s->nsigs, &s->sigcap, g, key) ? -1 : 1;
	case WT_SCHED_SLOT_WAIT:
		key = sim_sig_key(SIM_SIG_PUT, st->peer, st->part);
		break;
	case WT_SCHED_SLOT_DRAIN:
		key = sim_sig_key(SIM_SIG_DONE, st->peer, st->part);
		break;
	case WT_SCHED_SLOT_FREE:
		if (st->peer == r && st->part >= 1)
			key = sim_sig_key(SIM_SIG_DONE, r, st->part - 1);
		else if (st->peer != r && st->part >= s->ring)
			key = sim_sig_key(SIM_SIG_DONE, st->peer, st->part - s->ring);
		else
			return 0; /* the slot's earlier use is before the call */
		break;
	default:
		return 0;
	}
	(*pend)++;
	return sim_sig_add(&s->waits, &s->nwaits, &s->wcap, g, key) ? -1 : 0;
}

/* Adds rank r's plan. */
static int sim_add(sim_t *s, msgmap_t *m, const wt_sched_plan_t *p, int r, const wt_sched_cost_t *c)
{
	size_t ns = wt_sched_plan_nsteps(p), n = (size_t)s->n;

	if (sim_deepen(s, ns))
		return -1;
	switch (wt_sched_plan_view(p)->slot_ring) {
	case WT_SCHED_RING_TINY:
		s->ring = WT_SCHED_SLOT_TINY_DEPTH;
		break;
	case WT_SCHED_RING_SMALL:
		s->ring = WT_SCHED_SLOT_SMALL_DEPTH;
		break;
	default:
		s->ring = WT_SCHED_SLOT_DEPTH;
	}
	for (size_t i = 0; i < ns; i++) {
		const wt_sched_step_t *st = wt_sched_plan_step(p, i);
		uint32_t g = (uint32_t)(i * n + (size_t)r), k = 0, nsucc;
		const uint32_t *succ = wt_sched_plan_succ(p, i, &nsucc);
		sim_step_t *x = &s->st[g];
		size_t need;

		x->t = 0;
		x->dur = step_cost(st, c);
		x->pend = st->ndeps + (is_recv(st) ? 1 : 0);
		switch (sim_slot_edge(s, st, r, g, &x->pend)) {
		case -1:
			return -1;
		case 1:
			s->nputs += st->type == WT_SCHED_SLOT_PUT;
			break;
		default:
			break;
		}
		if (st->type == WT_SCHED_SEND) {
			x->pend |= SIM_SEND;
			k = 1; /* e[0]: the message edge, filled by sim_match */
			s->nmsg++;
			s->bytes += st->len;
		}
		need = nsucc + k > SIM_INLINE ? nsucc + k - SIM_INLINE : 0;
		for (uint32_t j = 0; j < nsucc; j++)
			if (sim_add_edge(s, x, &k, &need, (uint32_t)(succ[j] * n + (size_t)r)))
				return -1;
		if ((st->type == WT_SCHED_SEND || is_recv(st)) && sim_match(s, m, st, r, g))
			return -1;
	}
	s->steps += ns;
	return 0;
}

typedef struct {
	double t;
	uint32_t g;
} hent_t;

typedef struct {
	hent_t *h;
	size_t n, cap;
} heap_t;

/* Ties go to the lower id: ranks that send at the same moment then run in memory order. */
static int hent_before(const hent_t *a, const hent_t *b)
{
	return a->t < b->t || (a->t == b->t && a->g < b->g);
}

static int heap_push(heap_t *q, double t, uint32_t g)
{
	hent_t e = {t, g};
	size_t i;

	if (grow((void **)&q->h, &q->cap, q->n + 1, sizeof(*q->h)))
		return -1;
	for (i = q->n++; i > 0 && hent_before(&e, &q->h[(i - 1) / 2]); i = (i - 1) / 2)
		q->h[i] = q->h[(i - 1) / 2];
	q->h[i] = e;
	return 0;
}

static hent_t heap_pop(heap_t *q)
{
	hent_t top = q->h[0], last = q->h[--q->n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= q->n)
			break;
		if (c + 1 < q->n && hent_before(&q->h[c + 1], &q->h[c]))
			c++;
		if (!hent_before(&q->h[c], &last))
			break;
		q->h[i] = q->h[c];
		i = c;
	}
	if (q->n)
		q->h[i] = last;
	return top;
}

typedef struct {
	sim_t *s;
	heap_t q;
	uint32_t *stack;
	size_t sn, scap;
	size_t done;
	double *port; /* per rank: when its link is free */
} run_t;

static int sim_ready(run_t *R, uint32_t g)
{
	sim_step_t *x = &R->s->st[g];

	x->pend |= SIM_DONE;
	if (x->pend & SIM_SEND)
		return heap_push(&R->q, x->t, g);
	if (grow((void **)&R->stack, &R->scap, R->sn + 1, sizeof(*R->stack)))
		return -1;
	R->stack[R->sn++] = g;
	return 0;
}

static int sim_relax(run_t *R, uint32_t to, double fin)
{
	sim_step_t *y;

	if (to == SIM_NONE)
		return 0;
	y = &R->s->st[to];
	if (y->t < fin)
		y->t = fin;
	if ((--y->pend & SIM_COUNT) == 0 && !(y->pend & SIM_DONE))
		return sim_ready(R, to);
	return 0;
}

static int sig_by_step(const void *a, const void *b)
{
	uint32_t x = ((const sim_sig_t *)a)->g, y = ((const sim_sig_t *)b)->g;

	return (x > y) - (x < y);
}

static int sig_by_key(const void *a, const void *b)
{
	uint64_t x = ((const sim_sig_t *)a)->key, y = ((const sim_sig_t *)b)->key;
	uint32_t u = ((const sim_sig_t *)a)->g, v = ((const sim_sig_t *)b)->g;

	return x != y ? (x > y) - (x < y) : (u > v) - (u < v);
}

static int sim_relax(run_t *R, uint32_t to, double fin);

/* Signal step g finished at fin: its waits are met, the flag's way later on other ranks. */
static int sim_signal(run_t *R, uint32_t g, double fin)
{
	const sim_t *s = R->s;
	size_t lo = 0, hi = s->nsigs;
	uint64_t key;

	while (lo < hi) { /* the signal's key: sigs sorted by step */
		size_t mid = lo + (hi - lo) / 2;

		if (s->sigs[mid].g < g)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->nsigs || s->sigs[lo].g != g)
		return 0;
	key = s->sigs[lo].key;
	lo = 0;
	hi = s->nwaits;
	while (lo < hi) { /* the first wait on it: waits sorted by key */
		size_t mid = lo + (hi - lo) / 2;

		if (s->waits[mid].key < key)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < s->nwaits && s->waits[lo].key == key; lo++) {
		uint32_t w = s->waits[lo].g;
		int same = w % (uint32_t)s->n == g % (uint32_t)s->n;

		if (sim_relax(R, w, fin + (same ? 0 : s->flag)))
			return -1;
	}
	return 0;
}

static int sim_finish(run_t *R, uint32_t g, double fin)
{
	sim_step_t *x = &R->s->st[g];

	x->t = fin;
	R->done++;
	if ((x->pend & SIM_SIG) && sim_signal(R, g, fin))
		return -1;
	for (int k = 0; k < SIM_INLINE; k++)
		if (sim_relax(R, x->e[k], fin))
			return -1;
	if (x->xoff) {
		const uint32_t *xe = R->s->xe + x->xoff;

		for (uint32_t k = 0; k < xe[0]; k++)
			if (sim_relax(R, xe[1 + k], fin))
				return -1;
	}
	return 0;
}

static int sim_drain(run_t *R)
{
	while (R->sn) {
		uint32_t g = R->stack[--R->sn];
		const sim_step_t *x = &R->s->st[g];

		if (sim_finish(R, g, x->t + (double)x->dur))
			return -1;
	}
	return 0;
}

static int sim_run(run_t *R)
{
	sim_t *s = R->s;

	if (s->nsigs)
		qsort(s->sigs, s->nsigs, sizeof(*s->sigs), sig_by_step);
	if (s->nwaits)
		qsort(s->waits, s->nwaits, sizeof(*s->waits), sig_by_key);
	for (size_t g = 0; g < s->depth * (size_t)s->n; g++) {
		uint32_t pend = s->st[g].pend & ~SIM_SIG;

		if (pend != 0 && pend != SIM_SEND)
			continue;
		if (sim_ready(R, (uint32_t)g) || sim_drain(R))
			return -1;
	}
	while (R->q.n) {
		hent_t e = heap_pop(&R->q);
		int r = (int)(e.g % (uint32_t)s->n);
		double start = e.t > R->port[r] ? e.t : R->port[r];

		R->port[r] = start + (double)s->st[e.g].dur;
		if (sim_finish(R, e.g, R->port[r]) || sim_drain(R))
			return -1;
	}
	return 0;
}

static void sim_free(sim_t *s)
{
	if (s->st)
		munmap(s->st, s->cap * (size_t)s->n * sizeof(sim_step_t));
	free(s->xe);
	free(s->sigs);
	free(s->waits);
}

static void sim_report(const opts_t *o, const wt_sched_algo_t *algo, sim_t *s, double *fin)
{
	int n = s->n;
	double end = 0, first = -1;

	for (size_t g = 0; g < s->depth * (size_t)n; g++) {
		size_t r = g % (size_t)n;

		fin[r] = s->st[g].t > fin[r] ? s->st[g].t : fin[r];
	}
	for (int r = 0; r < n; r++) {
		end = fin[r] > end ? fin[r] : end;
		first = first < 0 || fin[r] < first ? fin[r] : first;
	}
	printf("%s %s: %d ranks, count %zu %s, %zu steps, %zu messages, %zu bytes sent",
	       wt_sched_coll_name(o->a.coll), algo->name, n, o->a.count,
	       wt_util_dtype_name(o->a.dtype), s->steps, s->nmsg, s->bytes);
	if (s->nputs)
		printf(", %zu slot publications", s->nputs);
	printf("\n");
	printf("model: alpha %.3f us, beta %.3f GB/s, gamma %.3f GB/s\n", o->cost.alpha * 1e6,
	       1e-9 / o->cost.beta, 1e-9 / o->cost.gamma);
	printf("estimated time: %.3f us (first rank done at %.3f us)\n", end * 1e6,
	       (first < 0 ? 0 : first) * 1e6);
	if (algo->cost)
		printf("closed-form estimate: %.3f us\n", algo->cost(&o->a, &o->cost) * 1e6);
}

static int simulate(const opts_t *o, const wt_sched_algo_t *algo)
{
	int n = o->a.size, rc = 1;
	sim_t s = {.n = n, .flag = o->cost.alpha * WT_SCHED_SLOT_ALPHA};
	msgmap_t m = {0};
	run_t R = {.s = &s};

	R.port = calloc((size_t)n, sizeof(*R.port));
	if (!R.port)
		goto nomem;
	for (int r = 0; r < n; r++) {
		wt_sched_plan_t *p = build(o, algo, r);
		int err;

		if (!p)
			goto out;
		err = sim_add(&s, &m, p, r, &o->cost);
		wt_sched_plan_unref(p);
		if (err)
			goto nomem;
	}
	if (m.used) {
		fprintf(stderr, "weft-sched: %zu messages have no matching partner\n", m.used);
		goto out;
	}
	if (sim_run(&R))
		goto nomem;
	if (R.done != s.steps) {
		fprintf(stderr, "weft-sched: the plans deadlock: %zu of %zu steps never run\n",
			s.steps - R.done, s.steps);
		goto out;
	}
	memset(R.port, 0, (size_t)n * sizeof(*R.port));
	sim_report(o, algo, &s, R.port);
	rc = 0;
	goto out;
nomem:
	fprintf(stderr, "weft-sched: out of memory (or over 2^32 steps) simulating %d ranks\n", n);
out:
	free(R.q.h);
	free(R.stack);
	free(R.port);
	map_free(&m);
	sim_free(&s);
	return rc;
}

/* ---- printing ---- */

static int print_all(const opts_t *o, const wt_sched_algo_t *algo)
{
	int n = o->a.size, rc = 0;
	wt_sched_plan_t **plans;

	if (o->dot && n > DOT_MAX_RANKS)
		return bad("--all-ranks --dot draws at most %s ranks", "512");
	plans = calloc((size_t)n, sizeof(*plans));
	if (!plans) {
		fprintf(stderr, "weft-sched: out of memory\n");
		return 1;
	}
	for (int r = 0; r < n && !rc; r++) {
		plans[r] = build(o, algo, r);
		rc = plans[r] ? 0 : 1;
		if (!rc && !o->dot)
			wt_sched_plan_dump(plans[r], stdout);
	}
	if (!rc && o->dot)
		rc = dot_all(o, plans);
	for (int r = 0; r < n; r++)
		wt_sched_plan_unref(plans[r]);
	free(plans);
	return rc;
}

static int print_one(const opts_t *o, const wt_sched_algo_t *algo)
{
	wt_sched_plan_t *p = build(o, algo, o->a.rank);

	if (!p)
		return 1;
	if (o->dot) {
		dot_header(o, p);
		dot_plan(p, o->a.rank, "  ");
		printf("}\n");
	} else {
		wt_sched_plan_dump(p, stdout);
	}
	wt_sched_plan_unref(p);
	return 0;
}

int main(int argc, char **argv)
{
	opts_t o = {0};
	const wt_sched_algo_t *algo = NULL;
	int rc;

	/* Thousands of plans are built and freed in turn: keep their memory in the heap
	 * instead of mapping (and zeroing) fresh pages for every one. */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	rc = parse_args(&o, argc, argv);

	if (rc >= 0)
		return rc;
	if (set_vectors(&o)) {
		fprintf(stderr, "weft-sched: alltoallv vectors: out of memory or overflow\n");
		return 2;
	}
	rc = choose(&o, &algo);
	if (rc < 0) {
		if (o.simulate)
			rc = simulate(&o, algo);
		else if (o.all_ranks)
			rc = print_all(&o, algo);
		else
			rc = print_one(&o, algo);
	}
	free(o.vec);
	return rc;
}
