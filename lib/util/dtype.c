/* Datatype table, element-wise reduction kernels and fp16/bf16 conversions (lib/util).
 * These are the hot loops of every reducing collective: each kernel is one simple loop
 * over restrict pointers with the (dtype, op) choice made once, outside it, so that the
 * compiler can vectorise. */
/* -O2 in gcc 12 vectorises only loops whose trip count is a known multiple of the vector
 * width; these kernels take any count, so ask for the normal cost model here. Nothing reads
 * the FP exception flags, so the fp16 loops may evaluate both sides of a select. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("vect-cost-model=dynamic", "no-trapping-math")
#endif
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/copy.h"
#include "lib/util/dtype.h"
#include "lib/util/log.h"

static const size_t wt_dtype_sizes[WEFT_DTYPE_COUNT_] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
static const char *const wt_dtype_names[WEFT_DTYPE_COUNT_] = {
    "int8",   "uint8",	 "int32",    "uint32",	"int64",
    "uint64", "float16", "bfloat16", "float32", "float64"};
static const char *const wt_op_names[WEFT_OP_COUNT_] = {"sum", "prod", "min", "max", "avg"};

int wt_util_dtype_valid(weft_dtype_t dt)
{
	return (int)dt >= 0 && dt < WEFT_DTYPE_COUNT_;
}

int wt_util_op_valid(weft_op_t op)
{
	return (int)op >= 0 && op < WEFT_OP_COUNT_;
}

size_t wt_util_dtype_size(weft_dtype_t dt)
{
	return wt_util_dtype_valid(dt) ? wt_dtype_sizes[dt] : 0;
}

const char *wt_util_dtype_name(weft_dtype_t dt)
{
	return wt_util_dtype_valid(dt) ? wt_dtype_names[dt] : "invalid-dtype";
}

const char *wt_util_op_name(weft_op_t op)
{
	return wt_util_op_valid(op) ? wt_op_names[op] : "invalid-op";
}

/* ---- fp16 / bf16 <-> fp32 ---- */

static inline uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof(u));
	return u;
}

static inline float f32_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof(f));
	return f;
}

/* The conversions compute every candidate result and select one, with no branches, so
 * the loops that call them still vectorise. */
static inline float half_to_float(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
	uint32_t body = (uint32_t)(h & 0x7fffu) << 13;
	/* Shifting the half's exponent and mantissa into a float gives value * 2^-112 for
	 * normals and subnormals alike; the multiply by 2^112 is exact. */
	uint32_t finite = f32_bits(f32_from_bits(body) * 0x1p112f);
	uint32_t infnan = 0x7f800000u | body; /* keeps a NaN's payload */

	return f32_from_bits(sign | ((h & 0x7c00u) == 0x7c00u ? infnan : finite));
}

static inline uint16_t float_to_half(float f)
{
	uint32_t x = f32_bits(f);
	uint32_t sign = (x >> 16) & 0x8000u;
	uint32_t ax = x & 0x7fffffffu;
	/* NaN stays NaN (quiet bit set) with what payload fits. */
	uint32_t nan = 0x7e00u | ((ax >> 13) & 0x3ffu);
	/* Below 2^-14 the result is subnormal: adding 0.5 lines the float's unit in the last
	 * place up with 2^-24, so the FPU does the round-to-nearest-even. */
	uint32_t sub = f32_bits(f32_from_bits(ax) + 0.5f) - 0x3f000000u;
	/* Normal: rebias the exponent and round on the 13 dropped bits, ties to even. */
	uint32_t norm = (ax + (uint32_t)(15 - 127) * (1u << 23) + 0xfffu + ((ax >> 13) & 1u)) >> 13;
	uint32_t r;

	/* >= 65520 rounds to infinity (65504 has an odd mantissa, so the tie goes up). */
	r = ax >= 0x477ff000u ? 0x7c00u : norm;
	r = ax < 0x38800000u ? sub : r;
	r = ax > 0x7f800000u ? nan : r;
	return (uint16_t)(sign | r);
}

static inline float bf16_to_float(uint16_t b)
{
	return f32_from_bits((uint32_t)b << 16);
}

static inline uint16_t float_to_bf16(float f)
{
	uint32_t x = f32_bits(f);
	uint32_t nan = (x >> 16) | 0x0040u; /* force the quiet bit so it stays NaN */
	uint32_t rounded = (x + 0x7fffu + ((x >> 16) & 1u)) >> 16;

	return (uint16_t)((x & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

float wt_util_half_to_float(uint16_t h)
{
	return half_to_float(h);
}

uint16_t wt_util_float_to_half(float f)
{
	return float_to_half(f);
}

float wt_util_bf16_to_float(uint16_t b)
{
	return bf16_to_float(b);
}

uint16_t wt_util_float_to_bf16(float f)
{
	return float_to_bf16(f);
}

/* ---- element operations ----
 * Signed integers add and multiply in their unsigned type: wrap-around is defined there,
 * and the conversion back is modular on every compiler we support. Float MIN/MAX return
 * NaN if either input is NaN: (x < y || x != x) picks x when x is NaN, and y otherwise,
 * which is NaN when y is. */
#define WT_OP_SUM_U(UT, x, y) ((UT)(x) + (UT)(y))
#define WT_OP_PROD_U(UT, x, y) ((UT)((UT)(x) * (UT)(y)))
#define WT_OP_MIN(x, y) ((x) < (y) ? (x) : (y))
#define WT_OP_MAX(x, y) ((x) > (y) ? (x) : (y))
#define WT_OP_FMIN(x, y) (((x) < (y) || (x) != (x)) ? (x) : (y))
#define WT_OP_FMAX(x, y) (((x) > (y) || (x) != (x)) ? (x) : (y))

typedef void (*wt_kern3_fn_t)(void *restrict d, const void *restrict a, const void *restrict b,
			      size_t n);
typedef void (*wt_kern2_fn_t)(void *restrict d, const void *restrict s, size_t n);
typedef void (*wt_kerna_fn_t)(void *d, const void *a, const void *b, size_t n);

typedef struct {
	wt_kern3_fn_t k3; /* d = a op b, all distinct (a may equal b: both are read-only) */
	wt_kern2_fn_t k2; /* d = d op s, distinct */
	wt_kerna_fn_t ka; /* any exact aliasing the restrict versions cannot take */
} wt_kernels_t;

/* One kernel family for element type T; EXPR combines x and y (both of type T). */
/* The same loops compiled for AVX2 + F16C (x86-64-v3) as well as the baseline, chosen
 * once at load time by the CPU: twice the vector width, identical results (same code). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__gnu_linux__)
#define WT_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define WT_CLONES
#endif

#define WT_KERNELS(NAME, T, EXPR)                                                                  \
	WT_CLONES static void k3_##NAME(void *restrict d_, const void *restrict a_,                \
					const void *restrict b_, size_t n)                         \
	{                                                                                          \
		T *restrict d = d_;                                                                \
		const T *restrict a = a_;                                                          \
		const T *restrict b = b_;                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			T x = a[i], y = b[i];                                                      \
			d[i] = (T)(EXPR);                                                          \
		}                                                                                  \
	}                                                                                          \
	WT_CLONES static void k2_##NAME(void *restrict d_, const void *restrict s_, size_t n)      \
	{                                                                                          \
		T *restrict d = d_;                                                                \
		const T *restrict s = s_;                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			T x = d[i], y = s[i];                                                      \
			d[i] = (T)(EXPR);                                                          \
		}                                                                                  \
	}                                                                                          \
	static void ka_##NAME(void *d_, const void *a_, const void *b_, size_t n)                  \
	{                                                                                          \
		T *d = d_;                                                                         \
		const T *a = a_;                                                                   \
		const T *b = b_;                                                                   \
		for (size_t i = 0; i < n; i++) {                                                   \
			T x = a[i], y = b[i];                                                      \
			d[i] = (T)(EXPR);                                                          \
		}                                                                                  \
	}

#define WT_INT_KERNELS(NAME, T, UT)                                                                \
	WT_KERNELS(NAME##_sum, T, WT_OP_SUM_U(UT, x, y))                                           \
	WT_KERNELS(NAME##_prod, T, WT_OP_PROD_U(UT, x, y))                                         \
	WT_KERNELS(NAME##_min, T, WT_OP_MIN(x, y))                                                 \
	WT_KERNELS(NAME##_max, T, WT_OP_MAX(x, y))

#define WT_FLT_KERNELS(NAME, T)                                                                    \
	WT_KERNELS(NAME##_sum, T, x + y)                                                           \
	WT_KERNELS(NAME##_prod, T, (x) * (y))                                                      \
	WT_KERNELS(NAME##_min, T, WT_OP_FMIN(x, y))                                                \
	WT_KERNELS(NAME##_max, T, WT_OP_FMAX(x, y))

static inline float fmin_nan(float x, float y)
{
	return WT_OP_FMIN(x, y);
}

static inline float fmax_nan(float x, float y)
{
	return WT_OP_FMAX(x, y);
}

/* Half types: widen both to float, combine, round once. */
#define WT_HALF_KERNELS(NAME, TO_F, FROM_F)                                                        \
	WT_KERNELS(NAME##_sum, uint16_t, FROM_F(TO_F(x) + TO_F(y)))                                \
	WT_KERNELS(NAME##_prod, uint16_t, FROM_F(TO_F(x) * TO_F(y)))                               \
	WT_KERNELS(NAME##_min, uint16_t, FROM_F(fmin_nan(TO_F(x), TO_F(y))))                       \
	WT_KERNELS(NAME##_max, uint16_t, FROM_F(fmax_nan(TO_F(x), TO_F(y))))

/* uint8_t arithmetic promotes to int; 255 * 255 still fits, so no overflow there. */
WT_INT_KERNELS(i8, int8_t, uint8_t)
WT_INT_KERNELS(u8, uint8_t, uint8_t)
WT_INT_KERNELS(i32, int32_t, uint32_t)
WT_INT_KERNELS(u32, uint32_t, uint32_t)
WT_INT_KERNELS(i64, int64_t, uint64_t)
WT_INT_KERNELS(u64, uint64_t, uint64_t)
WT_HALF_KERNELS(f16, half_to_float, float_to_half)
WT_HALF_KERNELS(bf16, bf16_to_float, float_to_bf16)
WT_FLT_KERNELS(f32, float)
WT_FLT_KERNELS(f64, double)

#define WT_K(NAME)                                                                                 \
	{                                                                                          \
		k3_##NAME, k2_##NAME, ka_##NAME                                                    \
	}
#define WT_KROW(NAME)                                                                              \
	{                                                                                          \
		WT_K(NAME##_sum), WT_K(NAME##_prod), WT_K(NAME##_min), WT_K(NAME##_max)            \
	}

/* Indexed [dtype][op] for SUM, PROD, MIN, MAX in enum order. */
static const wt_kernels_t wt_kernels[WEFT_DTYPE_COUNT_][4] = {
    [WEFT_INT8] = WT_KROW(i8),	   [WEFT_UINT8] = WT_KROW(u8),	    [WEFT_INT32] = WT_KROW(i32),
    [WEFT_UINT32] = WT_KROW(u32),  [WEFT_INT64] = WT_KROW(i64),	    [WEFT_UINT64] = WT_KROW(u64),
    [WEFT_FLOAT16] = WT_KROW(f16), [WEFT_BFLOAT16] = WT_KROW(bf16), [WEFT_FLOAT32] = WT_KROW(f32),
    [WEFT_FLOAT64] = WT_KROW(f64),
};

static const wt_kernels_t *find_kernels(weft_dtype_t dt, weft_op_t op)
{
	if (!wt_util_dtype_valid(dt) || !wt_util_op_valid(op)) {
		WT_ERROR("reduce: invalid dtype %d or op %d", (int)dt, (int)op);
		return NULL;
	}
	if (op == WEFT_AVG) /* AVG reduces as SUM; the caller divides at the end */
		op = WEFT_SUM;
	return &wt_kernels[dt][op];
}

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define WT_HAVE_F16C_PATH 1

/* One element and eight lanes of the float32 combine the 16-bit kernels share; the NaN
 * rule is WT_OP_FMIN/FMAX's (a NaN first operand wins, else a NaN second one). */
static inline float op1(float x, float y, weft_op_t op)
{
	switch (op) {
	case WEFT_PROD:
		return x * y;
	case WEFT_MIN:
		return fmin_nan(x, y);
	case WEFT_MAX:
		return fmax_nan(x, y);
	default:
		return x + y;
	}
}

__attribute__((target("avx2"))) static inline __m256 op8(__m256 x, __m256 y, weft_op_t op)
{
	__m256 xnan = _mm256_cmp_ps(x, x, _CMP_UNORD_Q);

	switch (op) {
	case WEFT_PROD:
		return _mm256_mul_ps(x, y);
	case WEFT_MIN:
		return _mm256_blendv_ps(_mm256_min_ps(x, y), x, xnan);
	case WEFT_MAX:
		return _mm256_blendv_ps(_mm256_max_ps(x, y), x, xnan);
	default:
		return _mm256_add_ps(x, y);
	}
}

/* float16 through the CPU's own converters (F16C): the portable bit-twiddling loops
 * above reach only a fifth of memory speed. Same rounding (to nearest even), same NaN
 * rule as WT_OP_FMIN/FMAX (a NaN first operand wins, else a NaN second one), so results
 * are bit-identical to the portable path; the dtype tests check both against one
 * reference. Eight elements per step; d may equal a or b (each block is loaded before it
 * is stored). */
__attribute__((target("avx2,f16c"))) static void
f16c_reduce(uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n, weft_op_t op)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(a + i)));
		__m256 y = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)(b + i)));
		__m256 r = op8(x, y, op);

		_mm_storeu_si128((__m128i *)(d + i),
				 _mm256_cvtps_ph(r, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
	}
	for (; i < n; i++) {
		d[i] = float_to_half(op1(half_to_float(a[i]), half_to_float(b[i]), op));
	}
}

/* bfloat16 with AVX2: widening is a 16-bit shift, narrowing the same round-to-nearest-
 * even and quiet-NaN rule as float_to_bf16, eight lanes at a time. */
__attribute__((target("avx2"))) static inline __m256 bf16x8_widen(const uint16_t *p)
{
	__m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p));

	return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
}

__attribute__((target("avx2"))) static inline void bf16x8_narrow(uint16_t *p, __m256 v)
{
	__m256i x = _mm256_castps_si256(v);
	__m256i lsb = _mm256_and_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(1));
	__m256i rounded = _mm256_srli_epi32(
	    _mm256_add_epi32(_mm256_add_epi32(x, _mm256_set1_epi32(0x7fff)), lsb), 16);
	__m256i nan = _mm256_or_si256(_mm256_srli_epi32(x, 16), _mm256_set1_epi32(0x40));
	__m256i isnan = _mm256_cmpgt_epi32(_mm256_and_si256(x, _mm256_set1_epi32(0x7fffffff)),
					   _mm256_set1_epi32(0x7f800000));
	__m256i r =
	    _mm256_and_si256(_mm256_blendv_epi8(rounded, nan, isnan), _mm256_set1_epi32(0xffff));
	/* Pack the eight 32-bit lanes (each < 2^16) to 16 bits, undoing the lane interleave. */
	__m256i packed = _mm256_packus_epi32(r, r);
	packed = _mm256_permute4x64_epi64(packed, 0x08);
	_mm_storeu_si128((__m128i *)p, _mm256_castsi256_si128(packed));
}

__attribute__((target("avx2"))) static void
bf16_avx2_reduce(uint16_t *d, const uint16_t *a, const uint16_t *b, size_t n, weft_op_t op)
{
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		__m256 x = bf16x8_widen(a + i), y = bf16x8_widen(b + i);
		__m256 r = op8(x, y, op);

		bf16x8_narrow(d + i, r);
	}
	for (; i < n; i++) {
		d[i] = float_to_bf16(op1(bf16_to_float(a[i]), bf16_to_float(b[i]), op));
	}
}

/* float32 fan-out with the result going from the registers to every destination by
 * streaming stores: no block in L1 to write and read back (2 threads, 64 MiB into two
 * buffers each, alternating runs: 3.5-4.9 ms against 6.7-7.3 through a 4 KiB block). The
 * destinations are 32-byte aligned at i (the caller's head loop); op is a constant where
 * this is inlined. a and b are loaded before any store at the same index, so a destination
 * may be a or b. */
__attribute__((target("avx2"), always_inline)) static inline void
f32_fanout_body(void *const *d, int nd, const float *a, const float *b, size_t i, size_t n,
		weft_op_t op)
{
	for (; i + 16 <= n; i += 16) {
		__m256 x0 = op8(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), op);
		__m256 x1 = op8(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), op);

		for (int k = 0; k < nd; k++) {
			_mm256_stream_ps((float *)d[k] + i, x0);
			_mm256_stream_ps((float *)d[k] + i + 8, x1);
		}
	}
}

/* Elements [i, n) one at a time by plain stores: each combined once, before any store, as
 * a destination may be a or b. */
static void f32_fanout_plain(void *const *d, int nd, const float *a, const float *b, size_t i,
			     size_t n, weft_op_t op)
{
	for (; i < n; i++) {
		float v = op1(a[i], b[i], op);

		for (int k = 0; k < nd; k++)
			((float *)d[k])[i] = v;
	}
}

/* Returns 0 (nothing written) unless every destination has the same offset in its 32-byte
 * line, as one whose head elements bring them all to a line together. */
__attribute__((target("avx2"))) static int f32_fanout_stream(void *const *d, int nd, const float *a,
							     const float *b, size_t n, weft_op_t op)
{
	uintptr_t mis = (uintptr_t)d[0] & 31;
	size_t head, body;

	if (mis & 3)
		return 0;
	for (int k = 1; k < nd; k++)
		if (((uintptr_t)d[k] & 31) != mis)
			return 0;
	head = ((32 - mis) & 31) / sizeof(float);
	if (head > n)
		head = n;
	body = head + (n - head) / 16 * 16;
	f32_fanout_plain(d, nd, a, b, 0, head, op);
	switch (op) {
	case WEFT_PROD:
		f32_fanout_body(d, nd, a, b, head, body, WEFT_PROD);
		break;
	case WEFT_MIN:
		f32_fanout_body(d, nd, a, b, head, body, WEFT_MIN);
		break;
	case WEFT_MAX:
		f32_fanout_body(d, nd, a, b, head, body, WEFT_MAX);
		break;
	default:
		f32_fanout_body(d, nd, a, b, head, body, WEFT_SUM);
		break;
	}
	f32_fanout_plain(d, nd, a, b, body, n, op);
	return 1;
}

static int have_x86_v3(void)
{
	static int cached = -1;

	/* Racy first call is harmless: every thread computes the same answer. The variable
	 * lets tests run the portable loops on a machine that has F16C. */
	if (cached < 0)
		cached = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
			 getenv("WT_UTIL_PORTABLE_KERNELS") == NULL;
	return cached;
}
#endif

void wt_util_reduce3(void *dst, const void *a, const void *b, size_t count, weft_dtype_t dt,
		     weft_op_t op)
{
	const wt_kernels_t *k = find_kernels(dt, op);

	if (!k || count == 0)
		return;
#ifdef WT_HAVE_F16C_PATH
	if (dt == WEFT_FLOAT16 && have_x86_v3()) {
		f16c_reduce(dst, a, b, count, op == WEFT_AVG ? WEFT_SUM : op);
		return;
	}
	if (dt == WEFT_BFLOAT16 && have_x86_v3()) {
		bf16_avx2_reduce(dst, a, b, count, op == WEFT_AVG ? WEFT_SUM : op);
		return;
	}
#endif
	if (dst != a && dst != b)
		k->k3(dst, a, b, count);
	else if (dst == a && dst != b)
		k->k2(dst, b, count);
	else
		k->ka(dst, a, b, count);
}

void wt_util_reduce(void *dst, const void *src, size_t count, weft_dtype_t dt, weft_op_t op)
{
	wt_util_reduce3(dst, dst, src, count, dt, op);
}

/* Bytes combined at a time by the fan-out: the block and the operands' lines stay in L1.
 * Interleaving the loads of the next block with the stores of this one keeps reads and
 * writes in flight together (2 threads, 64 MiB float32 into two buffers, streamed: 3.5-3.6
 * ms in 4 KiB blocks against 4.8-5.5 ms summing 64 KiB into a scratch first). */
#define FANOUT_BLOCK 4096

void wt_util_reduce3_fanout(void *const *dsts, int ndst, const void *a, const void *b, size_t count,
			    weft_dtype_t dt, weft_op_t op, int stream)
{
	_Alignas(64) uint8_t tmp[FANOUT_BLOCK];
	size_t es = wt_util_dtype_size(dt), per = es ? FANOUT_BLOCK / es : 0;
	const uint8_t *pa = a, *pb = b;

	if (ndst <= 0 || per == 0 || find_kernels(dt, op) == NULL)
		return;
#ifdef WT_HAVE_F16C_PATH
	if (stream && dt == WEFT_FLOAT32 && have_x86_v3() &&
	    f32_fanout_stream(dsts, ndst, a, b, count, op == WEFT_AVG ? WEFT_SUM : op)) {
		wt_util_copy_fence();
		return;
	}
#endif
	for (size_t i = 0; i < count; i += per) {
		size_t n = count - i < per ? count - i : per, off = i * es;

		if (stream) {
			wt_util_reduce3(tmp, pa + off, pb + off, n, dt, op);
			for (int k = 0; k < ndst; k++)
				wt_util_copy_stream_unfenced((uint8_t *)dsts[k] + off, tmp, n * es);
			continue;
		}
		wt_util_reduce3((uint8_t *)dsts[0] + off, pa + off, pb + off, n, dt, op);
		for (int k = 1; k < ndst; k++)
			wt_util_copy((uint8_t *)dsts[k] + off, (uint8_t *)dsts[0] + off, n * es);
	}
	if (stream)
		wt_util_copy_fence();
}

/* ---- float32 <-> 16-bit wire formats (compression) ---- */

static void narrow_f16(uint16_t *restrict d, const float *restrict s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = float_to_half(s[i]);
}

static void narrow_bf16(uint16_t *restrict d, const float *restrict s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = float_to_bf16(s[i]);
}

static void widen_f16(float *restrict d, const uint16_t *restrict s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = half_to_float(s[i]);
}

static void widen_bf16(float *restrict d, const uint16_t *restrict s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		d[i] = bf16_to_float(s[i]);
}

static int is_half_fmt(weft_dtype_t fmt)
{
	return fmt == WEFT_FLOAT16 || fmt == WEFT_BFLOAT16;
}

int wt_util_f32_narrow(void *dst16, const void *src32, size_t count, weft_dtype_t fmt)
{
	if (!is_half_fmt(fmt))
		return -1;
	if (fmt == WEFT_FLOAT16)
		narrow_f16(dst16, src32, count);
	else
		narrow_bf16(dst16, src32, count);
	return 0;
}

int wt_util_f32_widen(void *dst32, const void *src16, size_t count, weft_dtype_t fmt)
{
	if (!is_half_fmt(fmt))
		return -1;
	if (fmt == WEFT_FLOAT16)
		widen_f16(dst32, src16, count);
	else
		widen_bf16(dst32, src16, count);
	return 0;
}

/* d = d op widen(s): one loop per (format, op) so each vectorises. */
#define WT_WIDEN_KERNEL(NAME, TO_F, EXPR)                                                          \
	static void rw_##NAME(float *restrict d, const uint16_t *restrict s, size_t n)             \
	{                                                                                          \
		for (size_t i = 0; i < n; i++) {                                                   \
			float x = d[i], y = TO_F(s[i]);                                            \
			d[i] = (EXPR);                                                             \
		}                                                                                  \
	}
#define WT_WIDEN_KERNELS(NAME, TO_F)                                                               \
	WT_WIDEN_KERNEL(NAME##_sum, TO_F, x + y)                                                   \
	WT_WIDEN_KERNEL(NAME##_prod, TO_F, (x) * (y))                                              \
	WT_WIDEN_KERNEL(NAME##_min, TO_F, WT_OP_FMIN(x, y))                                        \
	WT_WIDEN_KERNEL(NAME##_max, TO_F, WT_OP_FMAX(x, y))

WT_WIDEN_KERNELS(f16, half_to_float)
WT_WIDEN_KERNELS(bf16, bf16_to_float)

typedef void (*wt_widen_fn_t)(float *restrict d, const uint16_t *restrict s, size_t n);

/* Indexed [fmt is bf16][op] for SUM, PROD, MIN, MAX in enum order. */
static const wt_widen_fn_t wt_widen_kernels[2][4] = {
    {rw_f16_sum, rw_f16_prod, rw_f16_min, rw_f16_max},
    {rw_bf16_sum, rw_bf16_prod, rw_bf16_min, rw_bf16_max},
};

int wt_util_f32_reduce_widen(void *dst32, const void *src16, size_t count, weft_dtype_t fmt,
			     weft_op_t op)
{
	if (!is_half_fmt(fmt) || !wt_util_op_valid(op))
		return -1;
	if (op == WEFT_AVG)
		op = WEFT_SUM;
	wt_widen_kernels[fmt == WEFT_BFLOAT16][op](dst32, src16, count);
	return 0;
}

/* ---- AVG finish ---- */

#define WT_DIV_INT(T, buf, count, n)                                                               \
	do {                                                                                       \
		T *p = (buf);                                                                      \
		for (size_t i = 0; i < (count); i++)                                               \
			p[i] = (T)(p[i] / (n));                                                    \
	} while (0)

#define WT_DIV_HALF(buf, count, n, TO_F, FROM_F)                                                   \
	do {                                                                                       \
		uint16_t *p = (buf);                                                               \
		float fn = (float)(n);                                                             \
		for (size_t i = 0; i < (count); i++)                                               \
			p[i] = FROM_F(TO_F(p[i]) / fn);                                            \
	} while (0)

void wt_util_scale_div(void *buf, size_t count, weft_dtype_t dt, int n)
{
	/* n is a communicator size; n <= 0 cannot happen there and dividing by it would be
	 * undefined (INT_MIN / -1) or meaningless, so the buffer is left untouched. */
	if (n <= 0) {
		WT_ERROR("scale_div: divisor %d is not positive", n);
		return;
	}
	if (n == 1 || count == 0)
		return;
	switch (dt) {
	case WEFT_INT8:
		WT_DIV_INT(int8_t, buf, count, n);
		break;
	case WEFT_UINT8:
		WT_DIV_INT(uint8_t, buf, count, (unsigned)n);
		break;
	case WEFT_INT32:
		WT_DIV_INT(int32_t, buf, count, (int32_t)n);
		break;
	case WEFT_UINT32:
		WT_DIV_INT(uint32_t, buf, count, (uint32_t)n);
		break;
	case WEFT_INT64:
		WT_DIV_INT(int64_t, buf, count, (int64_t)n);
		break;
	case WEFT_UINT64:
		WT_DIV_INT(uint64_t, buf, count, (uint64_t)n);
		break;
	case WEFT_FLOAT16:
		WT_DIV_HALF(buf, count, n, half_to_float, float_to_half);
		break;
	case WEFT_BFLOAT16:
		WT_DIV_HALF(buf, count, n, bf16_to_float, float_to_bf16);
		break;
	case WEFT_FLOAT32:
		WT_DIV_INT(float, buf, count, (float)n);
		break;
	case WEFT_FLOAT64:
		WT_DIV_INT(double, buf, count, (double)n);
		break;
	default:
		WT_ERROR("scale_div: invalid dtype %d", (int)dt);
		break;
	}
}
