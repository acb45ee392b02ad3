/* weft-perf (tools/): collective and datatype tables, and inputs whose reductions are
 * exact in every dtype, so results can be checked bit for bit against a local reference. */
#include <string.h>
#include <strings.h>

#include "perf.h"

static const char *const coll_names[PERF_COLL_COUNT] = {
    "allreduce", "allgather", "reduce_scatter", "broadcast", "reduce",
    "gather",	 "scatter",   "alltoall",	"sendrecv",  "barrier",
};

const char *perf_coll_name(enum perf_coll c)
{
	return c < PERF_COLL_COUNT ? coll_names[c] : "?";
}

bool perf_coll_has_op(enum perf_coll c)
{
	return c == PERF_ALLREDUCE || c == PERF_REDUCE_SCATTER || c == PERF_REDUCE;
}

bool perf_coll_has_root(enum perf_coll c)
{
	return c == PERF_BROADCAST || c == PERF_REDUCE || c == PERF_GATHER || c == PERF_SCATTER;
}

double perf_coll_bus_factor(enum perf_coll c, int n)
{
	switch (c) {
	case PERF_ALLREDUCE:
		return 2.0 * (n - 1) / n;
	case PERF_ALLGATHER:
	case PERF_REDUCE_SCATTER:
	case PERF_ALLTOALL:
	case PERF_GATHER:
	case PERF_SCATTER:
		return (double)(n - 1) / n;
	case PERF_BARRIER:
		return 0;
	default:
		return 1;
	}
}

/* As nccl-tests: for the collectives whose buffer is split into n blocks, the size is the
 * whole buffer and count is the block (size / es / n), so the size printed is rounded down
 * to a multiple of es * n. */
void perf_coll_counts(enum perf_coll c, size_t bytes, size_t es, int n, size_t *count,
		      size_t *real_bytes)
{
	size_t elems = bytes / es;

	switch (c) {
	case PERF_ALLGATHER:
	case PERF_REDUCE_SCATTER:
	case PERF_ALLTOALL:
	case PERF_GATHER:
	case PERF_SCATTER:
		*count = elems / (size_t)n;
		*real_bytes = *count * es * (size_t)n;
		return;
	case PERF_BARRIER:
		*count = 0;
		*real_bytes = 0;
		return;
	default:
		*count = elems;
		*real_bytes = elems * es;
	}
}

struct dtype_info {
	const char *name;     /* nccl-tests' spelling, printed */
	const char *alias[4]; /* weft's and common spellings */
	size_t size;
};

static const struct dtype_info dtypes[WEFT_DTYPE_COUNT_] = {
    [WEFT_INT8] = {"int8", {"char", "i8"}, 1},
    [WEFT_UINT8] = {"uint8", {"u8"}, 1},
    [WEFT_INT32] = {"int32", {"int", "i32"}, 4},
    [WEFT_UINT32] = {"uint32", {"u32"}, 4},
    [WEFT_INT64] = {"int64", {"i64"}, 8},
    [WEFT_UINT64] = {"uint64", {"u64"}, 8},
    [WEFT_FLOAT16] = {"half", {"float16", "fp16", "f16"}, 2},
    [WEFT_BFLOAT16] = {"bfloat16", {"bf16"}, 2},
    [WEFT_FLOAT32] = {"float", {"float32", "fp32", "f32"}, 4},
    [WEFT_FLOAT64] = {"double", {"float64", "fp64", "f64"}, 8},
};

size_t perf_dtype_size(weft_dtype_t t)
{
	return (unsigned)t < WEFT_DTYPE_COUNT_ ? dtypes[t].size : 0;
}

const char *perf_dtype_name(weft_dtype_t t)
{
	return (unsigned)t < WEFT_DTYPE_COUNT_ ? dtypes[t].name : "none";
}

int perf_dtype_parse(const char *s)
{
	for (int t = 0; t < WEFT_DTYPE_COUNT_; t++) {
		if (strcasecmp(s, dtypes[t].name) == 0)
			return t;
		for (int a = 0; a < 4 && dtypes[t].alias[a] != NULL; a++)
			if (strcasecmp(s, dtypes[t].alias[a]) == 0)
				return t;
	}
	return -1;
}

static const char *const op_names[WEFT_OP_COUNT_] = {"sum", "prod", "min", "max", "avg"};

const char *perf_op_name(int op)
{
	return op >= 0 && op < WEFT_OP_COUNT_ ? op_names[op] : "none";
}

int perf_op_parse(const char *s)
{
	for (int op = 0; op < WEFT_OP_COUNT_; op++)
		if (strcasecmp(s, op_names[op]) == 0)
			return op;
	return -1;
}

static bool is_unsigned(weft_dtype_t t)
{
	return t == WEFT_UINT8 || t == WEFT_UINT32 || t == WEFT_UINT64;
}

/* Inputs are small integers. Every partial sum stays within +-256 for up to ~64 ranks
 * (exact in bfloat16's 8-bit significand, whatever order the algorithm combines in);
 * products are at most +-4; AVG inputs sum to exactly n times a base value, so the
 * division is exact in every dtype. Unsigned types get non-negative inputs so that MIN
 * and MAX compare the same values the reference does. */
int64_t perf_gen_value(const struct perf_gen *g, int rank, size_t i)
{
	int64_t amp = g->nranks > 0 ? 64 / g->nranks : 8;
	bool uns = is_unsigned(g->dtype);
	int64_t v;

	amp = amp < 1 ? 1 : amp > 8 ? 8 : amp;
	switch (g->op) {
	case -1:
		/* Data movement: wide spread so misplaced blocks show (fits int8 and bf16). */
		v = (int64_t)((i * 7 + (size_t)rank * 13 + 5) % 251);
		return uns ? v : v - 125;
	case WEFT_PROD:
		v = ((i + (size_t)rank) % 4 == 0 && rank < 8) ? 2 : 1;
		if (!uns && (i * 3 + (size_t)rank) % 5 == 0)
			v = -v;
		return v;
	case WEFT_AVG: {
		int64_t base = (int64_t)((i * 7 + 3) % (size_t)(2 * amp + 1));
		int64_t k = (int64_t)(i % 3);
		int paired = g->nranks - g->nranks % 2;

		base = uns ? base + 2 : base - amp;
		if (rank >= paired)
			return base;
		return rank % 2 == 0 ? base + k : base - k;
	}
	default:
		v = (int64_t)((i * 7 + (size_t)rank * 13) % (size_t)(2 * amp + 1));
		return uns ? v : v - amp;
	}
}

int64_t perf_reduce_ref(const struct perf_gen *g, size_t i)
{
	uint64_t acc = (uint64_t)perf_gen_value(g, 0, i);

	for (int r = 1; r < g->nranks; r++) {
		int64_t v = perf_gen_value(g, r, i);

		switch (g->op) {
		case WEFT_PROD:
			acc *= (uint64_t)v; /* unsigned: integer wrap-around as the library does */
			break;
		case WEFT_MIN:
			acc = v < (int64_t)acc ? (uint64_t)v : acc;
			break;
		case WEFT_MAX:
			acc = v > (int64_t)acc ? (uint64_t)v : acc;
			break;
		default:
			acc += (uint64_t)v;
		}
	}
	if (g->op == WEFT_AVG)
		return (int64_t)acc / g->nranks;
	return (int64_t)acc;
}

/* float32 -> IEEE half for values that are exact in half (all inputs are). */
static uint16_t to_half(float f)
{
	uint32_t b;
	uint16_t sign;
	int32_t exp;

	memcpy(&b, &f, 4);
	sign = (uint16_t)((b >> 16) & 0x8000);
	if ((b & 0x7fffffff) == 0)
		return sign;
	exp = (int32_t)((b >> 23) & 0xff) - 127 + 15;
	return (uint16_t)(sign | (uint16_t)(exp << 10) | (uint16_t)((b >> 13) & 0x3ff));
}

static double from_half(uint16_t h)
{
	int exp = (h >> 10) & 0x1f;
	double mant = h & 0x3ff;
	double v;

	if (exp == 0x1f)
		return mant != 0 ? __builtin_nan("") : (h & 0x8000 ? -1 : 1) * __builtin_inf();
	if (exp == 0)
		v = mant / 1024.0 / 16384.0;
	else
		v = (1.0 + mant / 1024.0) * (double)(1u << exp) / 32768.0;
	return h & 0x8000 ? -v : v;
}

static double from_bf16(uint16_t h)
{
	uint32_t b = (uint32_t)h << 16;
	float f;

	memcpy(&f, &b, 4);
	return f;
}

void perf_store(void *buf, size_t i, weft_dtype_t t, int64_t v)
{
	unsigned char *p = (unsigned char *)buf + i * perf_dtype_size(t);
	uint64_t u = (uint64_t)v;
	float f = (float)v;
	double d = (double)v;
	uint32_t fb;
	uint16_t h;

	switch (t) {
	case WEFT_FLOAT16:
		h = to_half(f);
		memcpy(p, &h, 2);
		return;
	case WEFT_BFLOAT16:
		memcpy(&fb, &f, 4);
		h = (uint16_t)(fb >> 16);
		memcpy(p, &h, 2);
		return;
	case WEFT_FLOAT32:
		memcpy(p, &f, 4);
		return;
	case WEFT_FLOAT64:
		memcpy(p, &d, 8);
		return;
	default: {
		/* Little or big endian alike: narrow through the matching unsigned type. */
		uint8_t u8 = (uint8_t)u;
		uint32_t u32 = (uint32_t)u;

		if (perf_dtype_size(t) == 1)
			memcpy(p, &u8, 1);
		else if (perf_dtype_size(t) == 4)
			memcpy(p, &u32, 4);
		else
			memcpy(p, &u, 8);
	}
	}
}

bool perf_equal(const void *buf, size_t i, weft_dtype_t t, int64_t v)
{
	const unsigned char *p = (const unsigned char *)buf + i * perf_dtype_size(t);
	uint16_t h;
	float f;
	double d;

	switch (t) {
	case WEFT_FLOAT16:
		memcpy(&h, p, 2);
		return from_half(h) == (double)v;
	case WEFT_BFLOAT16:
		memcpy(&h, p, 2);
		return from_bf16(h) == (double)v;
	case WEFT_FLOAT32:
		memcpy(&f, p, 4);
		return (double)f == (double)v;
	case WEFT_FLOAT64:
		memcpy(&d, p, 8);
		return d == (double)v;
	default: {
		uint8_t u8;
		uint32_t u32;
		uint64_t u64;

		if (perf_dtype_size(t) == 1) {
			memcpy(&u8, p, 1);
			return u8 == (uint8_t)(uint64_t)v;
		}
		if (perf_dtype_size(t) == 4) {
			memcpy(&u32, p, 4);
			return u32 == (uint32_t)(uint64_t)v;
		}
		memcpy(&u64, p, 8);
		return u64 == (uint64_t)v;
	}
	}
}
