/* Unit tests for lib/util dtype: every reduction kernel for every dtype and op against a
 * plain reference, fp16/bf16 conversions (exhaustive where feasible), scale_div. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "lib/util/dtype.h"

#define N 1037 /* odd, so vector loops have a tail */

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rnd(void)
{
	/* xorshift64*: deterministic, so failures reproduce */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 2685821657736338717ull;
}

static uint32_t fbits(float f)
{
	uint32_t u;

	memcpy(&u, &f, 4);
	return u;
}

static float bitsf(uint32_t u)
{
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* ---- independent references for the half types ---- */

static float ref_h2f(uint16_t h)
{
	_Float16 x;

	memcpy(&x, &h, 2);
	return (float)x;
}

static uint16_t ref_f2h(float f)
{
	_Float16 x = (_Float16)f;
	uint16_t h;

	memcpy(&h, &x, 2);
	return h;
}

static float ref_b2f(uint16_t b)
{
	return bitsf((uint32_t)b << 16);
}

/* Round to nearest, ties to even, by comparing distances to both neighbours in double. */
static uint16_t ref_f2b(float f)
{
	uint32_t x = fbits(f), lo, hi;
	double dlo, dhi, v = fabs((double)f);

	if (isnan(f))
		return 0x7fc0;
	lo = x & 0xffff0000u;
	hi = lo + 0x10000u;
	dlo = fabs((double)bitsf(lo & 0x7fffffffu));
	dhi = (hi & 0x7fffffffu) == 0x7f800000u ? ldexp(1.0, 128)
						: fabs((double)bitsf(hi & 0x7fffffffu));
	if (isinf(f))
		return (uint16_t)(x >> 16);
	if (v - dlo < dhi - v)
		return (uint16_t)(lo >> 16);
	if (v - dlo > dhi - v)
		return (uint16_t)(hi >> 16);
	return (uint16_t)(((lo >> 16) & 1) ? hi >> 16 : lo >> 16);
}

/* ---- conversions ---- */

static void test_half_exhaustive(void **state)
{
	(void)state;
	for (uint32_t h = 0; h < 65536; h++) {
		float f = wt_util_half_to_float((uint16_t)h);
		float r = ref_h2f((uint16_t)h);

		if (isnan(r)) {
			assert_true(isnan(f));
			/* NaN must come back as NaN with the same sign */
			uint16_t back = wt_util_float_to_half(f);
			assert_true((back & 0x7c00) == 0x7c00 && (back & 0x3ff) != 0);
			assert_int_equal(back & 0x8000, h & 0x8000);
			continue;
		}
		assert_int_equal(fbits(f), fbits(r));
		assert_int_equal(wt_util_float_to_half(f), h);
	}
}

static void test_half_rounding(void **state)
{
	static const float cases[] = {
	    1.0f + 0x1p-11f,	 /* tie, even below */
	    1.0f + 3 * 0x1p-11f, /* tie, even above */
	    1.0f + 0x1p-11f + 0x1p-20f,
	    65504.0f,
	    65519.99f,
	    65520.0f,
	    65536.0f,
	    1e10f,
	    -65520.0f,
	    0x1p-24f,
	    0x1p-25f,	  /* tie to zero */
	    3 * 0x1p-25f, /* tie to 2 * 2^-24 */
	    0x1p-25f + 0x1p-40f,
	    0x1p-14f - 0x1p-25f, /* subnormal rounds up into the smallest normal */
	    0x1p-14f,
	    0x1p-26f,
	    1e-30f,
	    0x1p-149f,
	    -0x1p-149f,
	    0.0f,
	    -0.0f,
	    INFINITY,
	    -INFINITY,
	    0.1f,
	    -3.14159f,
	    1000.7f,
	};

	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		assert_int_equal(wt_util_float_to_half(cases[i]), ref_f2h(cases[i]));
	assert_int_equal(wt_util_float_to_half(1.0f + 0x1p-11f), 0x3c00);
	assert_int_equal(wt_util_float_to_half(1.0f + 3 * 0x1p-11f), 0x3c02);
	assert_int_equal(wt_util_float_to_half(65520.0f), 0x7c00);
	assert_int_equal(wt_util_float_to_half(65519.0f), 0x7bff);
	assert_int_equal(wt_util_float_to_half(0x1p-25f), 0x0000);
	assert_int_equal(wt_util_float_to_half(3 * 0x1p-25f), 0x0002);
	assert_int_equal(wt_util_float_to_half(0x1p-14f - 0x1p-25f), 0x0400);
	assert_int_equal(wt_util_float_to_half(-0.0f), 0x8000);
	/* random bit patterns over the whole float range */
	for (int i = 0; i < 2000000; i++) {
		float f = bitsf((uint32_t)rnd());

		if (isnan(f)) {
			uint16_t h = wt_util_float_to_half(f);
			assert_true((h & 0x7c00) == 0x7c00 && (h & 0x3ff) != 0);
			continue;
		}
		assert_int_equal(wt_util_float_to_half(f), ref_f2h(f));
	}
	/* and densely around the half range, where rounding actually matters */
	for (int i = 0; i < 2000000; i++) {
		float f = bitsf(0x33000000u + (uint32_t)(rnd() % (0x47800000u - 0x33000000u)));

		assert_int_equal(wt_util_float_to_half(f), ref_f2h(f));
	}
}

static void test_bf16(void **state)
{
	(void)state;
	for (uint32_t b = 0; b < 65536; b++) {
		float f = wt_util_bf16_to_float((uint16_t)b);

		assert_int_equal(fbits(f), (uint32_t)b << 16);
		if (isnan(f)) {
			uint16_t back = wt_util_float_to_bf16(f);
			assert_true((back & 0x7f80) == 0x7f80 && (back & 0x7f) != 0);
			continue;
		}
		assert_int_equal(wt_util_float_to_bf16(f), b);
	}
	assert_int_equal(wt_util_float_to_bf16(bitsf(0x3f808000u)), 0x3f80); /* tie, even */
	assert_int_equal(wt_util_float_to_bf16(bitsf(0x3f818000u)), 0x3f82); /* tie, up */
	assert_int_equal(wt_util_float_to_bf16(bitsf(0x3f808001u)), 0x3f81);
	assert_int_equal(wt_util_float_to_bf16(bitsf(0x7f7fffffu)), 0x7f80); /* FLT_MAX -> inf */
	assert_int_equal(wt_util_float_to_bf16(bitsf(0x00008000u)), 0x0000); /* subnormal tie */
	assert_int_equal(wt_util_float_to_bf16(bitsf(0x00018000u)), 0x0002);
	assert_true(isnan(wt_util_bf16_to_float(wt_util_float_to_bf16(bitsf(0x7f800001u)))));
	for (int i = 0; i < 2000000; i++) {
		float f = bitsf((uint32_t)rnd());

		if (isnan(f))
			continue;
		assert_int_equal(wt_util_float_to_bf16(f), ref_f2b(f));
	}
}

/* ---- kernels ---- */

typedef union {
	int8_t i8[N];
	uint8_t u8[N];
	int32_t i32[N];
	uint32_t u32[N];
	int64_t i64[N];
	uint64_t u64[N];
	uint16_t h[N];
	float f32[N];
	double f64[N];
} buf_t;

static int64_t wrap_signed(__int128 v, int bits)
{
	unsigned __int128 m = ((unsigned __int128)1 << bits) - 1;
	unsigned __int128 u = (unsigned __int128)v & m;

	if (u >> (bits - 1))
		return (int64_t)(__int128)(u - m - 1);
	return (int64_t)u;
}

static __int128 ref_int(__int128 a, __int128 b, weft_op_t op)
{
	switch (op) {
	case WEFT_SUM:
	case WEFT_AVG:
		return a + b;
	case WEFT_PROD:
		/* |a|,|b| < 2^64, so the product fits only modulo 2^128; fine for wrapping */
		return (__int128)((unsigned __int128)a * (unsigned __int128)b);
	case WEFT_MIN:
		return a < b ? a : b;
	default:
		return a > b ? a : b;
	}
}

static double ref_flt(double a, double b, weft_op_t op)
{
	switch (op) {
	case WEFT_SUM:
	case WEFT_AVG:
		return a + b;
	case WEFT_PROD:
		return a * b;
	case WEFT_MIN:
		return (isnan(a) || isnan(b)) ? NAN : (a < b ? a : b);
	default:
		return (isnan(a) || isnan(b)) ? NAN : (a > b ? a : b);
	}
}

static float ref_fltf(float a, float b, weft_op_t op)
{
	switch (op) {
	case WEFT_SUM:
	case WEFT_AVG:
		return a + b;
	case WEFT_PROD:
		return a * b;
	default:
		return (float)ref_flt(a, b, op);
	}
}

static void fill(buf_t *b, weft_dtype_t dt, int special)
{
	for (int i = 0; i < N; i++) {
		uint64_t r = rnd();

		switch (dt) {
		case WEFT_INT8:
			b->i8[i] = (int8_t)r;
			break;
		case WEFT_UINT8:
			b->u8[i] = (uint8_t)r;
			break;
		case WEFT_INT32:
			b->i32[i] = (i % 5 == 0) ? (int32_t)(r % 2001) - 1000 : (int32_t)r;
			if (special && i % 13 == 0)
				b->i32[i] = (i & 1) ? INT32_MIN : INT32_MAX;
			break;
		case WEFT_UINT32:
			b->u32[i] = (uint32_t)r;
			break;
		case WEFT_INT64:
			b->i64[i] = (i % 5 == 0) ? (int64_t)(r % 2001) - 1000 : (int64_t)r;
			if (special && i % 13 == 0)
				b->i64[i] = (i & 1) ? INT64_MIN : INT64_MAX;
			break;
		case WEFT_UINT64:
			b->u64[i] = r;
			break;
		case WEFT_FLOAT16:
		case WEFT_BFLOAT16:
			b->h[i] = (uint16_t)r;
			break;
		case WEFT_FLOAT32:
			b->f32[i] = (float)((int64_t)(r % 200001) - 100000) / 64.0f;
			if (special && i % 17 == 0)
				b->f32[i] = (i & 1) ? NAN : -INFINITY;
			break;
		case WEFT_FLOAT64:
			b->f64[i] = (double)((int64_t)(r % 2000001) - 1000000) / 1024.0;
			if (special && i % 17 == 0)
				b->f64[i] = (i & 1) ? NAN : INFINITY;
			if (special && i % 19 == 0)
				b->f64[i] = -0.0;
			break;
		default:
			break;
		}
	}
}

static void check_float(double got, double want, weft_dtype_t dt, weft_op_t op, int i)
{
	if (isnan(want)) {
		if (!isnan(got))
			fail_msg("%s %s [%d]: got %g want NaN", wt_util_dtype_name(dt),
				 wt_util_op_name(op), i, got);
		return;
	}
	if (!(got == want))
		fail_msg("%s %s [%d]: got %a want %a", wt_util_dtype_name(dt), wt_util_op_name(op),
			 i, got, want);
}

static void check_half_bits(uint16_t got, uint16_t want, int is_bf, weft_op_t op, int i)
{
	float g = is_bf ? ref_b2f(got) : ref_h2f(got);
	float w = is_bf ? ref_b2f(want) : ref_h2f(want);

	if (isnan(w)) {
		if (!isnan(g))
			fail_msg("%s %s [%d]: got %#x want NaN", is_bf ? "bf16" : "f16",
				 wt_util_op_name(op), i, got);
		return;
	}
	if (got != want && !(g == 0 && w == 0))
		fail_msg("%s %s [%d]: got %#x want %#x", is_bf ? "bf16" : "f16",
			 wt_util_op_name(op), i, got, want);
}

/* Check r[i] == a[i] op b[i] for every element. */
static void check(const buf_t *r, const buf_t *a, const buf_t *b, weft_dtype_t dt, weft_op_t op)
{
	for (int i = 0; i < N; i++) {
		switch (dt) {
		case WEFT_INT8:
			assert_int_equal(r->i8[i], wrap_signed(ref_int(a->i8[i], b->i8[i], op), 8));
			break;
		case WEFT_UINT8:
			assert_int_equal(r->u8[i], (uint8_t)ref_int(a->u8[i], b->u8[i], op));
			break;
		case WEFT_INT32:
			assert_int_equal(r->i32[i],
					 wrap_signed(ref_int(a->i32[i], b->i32[i], op), 32));
			break;
		case WEFT_UINT32:
			assert_int_equal(r->u32[i], (uint32_t)ref_int(a->u32[i], b->u32[i], op));
			break;
		case WEFT_INT64:
			assert_int_equal(r->i64[i],
					 wrap_signed(ref_int(a->i64[i], b->i64[i], op), 64));
			break;
		case WEFT_UINT64:
			assert_int_equal(r->u64[i], (uint64_t)ref_int(a->u64[i], b->u64[i], op));
			break;
		case WEFT_FLOAT16:
			check_half_bits(r->h[i],
					ref_f2h(ref_fltf(ref_h2f(a->h[i]), ref_h2f(b->h[i]), op)),
					0, op, i);
			break;
		case WEFT_BFLOAT16:
			check_half_bits(r->h[i],
					ref_f2b(ref_fltf(ref_b2f(a->h[i]), ref_b2f(b->h[i]), op)),
					1, op, i);
			break;
		case WEFT_FLOAT32:
			check_float(r->f32[i], ref_fltf(a->f32[i], b->f32[i], op), dt, op, i);
			break;
		case WEFT_FLOAT64:
			check_float(r->f64[i], ref_flt(a->f64[i], b->f64[i], op), dt, op, i);
			break;
		default:
			fail();
		}
	}
}

static void run_kernel_case(weft_dtype_t dt, weft_op_t op, int special)
{
	buf_t *a = malloc(sizeof(*a)), *b = malloc(sizeof(*b)), *r = malloc(sizeof(*r));
	buf_t *a0 = malloc(sizeof(*a0));

	assert_non_null(a && b && r && a0);
	fill(a, dt, special);
	fill(b, dt, special);
	*a0 = *a;

	/* three distinct buffers */
	memset(r, 0xa5, sizeof(*r));
	wt_util_reduce3(r, a, b, N, dt, op);
	check(r, a, b, dt, op);

	/* dst == b */
	*r = *b;
	wt_util_reduce3(r, a, r, N, dt, op);
	check(r, a, b, dt, op);

	/* a == b, dst distinct */
	wt_util_reduce3(r, a, a, N, dt, op);
	check(r, a, a, dt, op);

	/* dst == a == b */
	*r = *a;
	wt_util_reduce3(r, r, r, N, dt, op);
	check(r, a, a, dt, op);

	/* in place accumulate: dst == a */
	wt_util_reduce(a, b, N, dt, op);
	check(a, a0, b, dt, op);

	/* count 0 and short counts touch nothing beyond count */
	*r = *a0;
	wt_util_reduce(r, b, 0, dt, op);
	assert_memory_equal(r, a0, sizeof(*r));
	wt_util_reduce(r, b, 3, dt, op);
	assert_memory_equal((char *)r + 3 * wt_util_dtype_size(dt),
			    (char *)a0 + 3 * wt_util_dtype_size(dt),
			    sizeof(*r) - 3 * wt_util_dtype_size(dt));

	free(a);
	free(b);
	free(r);
	free(a0);
}

static void test_kernels_all(void **state)
{
	(void)state;
	for (int dt = 0; dt < WEFT_DTYPE_COUNT_; dt++)
		for (int op = 0; op < WEFT_OP_COUNT_; op++)
			for (int special = 0; special < 2; special++)
				run_kernel_case((weft_dtype_t)dt, (weft_op_t)op, special);
}

static void test_kernels_known_values(void **state)
{
	int8_t a8[3] = {127, -128, -7}, b8[3] = {1, -1, 3};
	int32_t a32[2] = {INT32_MAX, 65536}, b32[2] = {1, 65536};
	int64_t a64[2] = {INT64_MIN, INT64_MAX}, b64[2] = {-1, 2};
	float fa[3] = {NAN, 1.0f, 2.0f}, fb[3] = {1.0f, NAN, -2.0f};
	uint16_t ha[1] = {0x3c00}, hb[1] = {0x3c00}; /* 1.0 + 1.0 */

	(void)state;
	wt_util_reduce(a8, b8, 3, WEFT_INT8, WEFT_SUM);
	assert_int_equal(a8[0], -128);
	assert_int_equal(a8[1], 127);
	assert_int_equal(a8[2], -4);
	wt_util_reduce(a32, b32, 2, WEFT_INT32, WEFT_PROD);
	assert_int_equal(a32[0], INT32_MAX);
	assert_int_equal(a32[1], 0); /* 2^32 wraps to 0 */
	wt_util_reduce(a64, b64, 2, WEFT_INT64, WEFT_PROD);
	assert_true(a64[0] == INT64_MIN); /* INT64_MIN * -1 wraps to itself */
	assert_int_equal(a64[1], -2);
	wt_util_reduce3(fb, fa, fb, 3, WEFT_FLOAT32, WEFT_MIN);
	assert_true(isnan(fb[0]) && isnan(fb[1]));
	assert_true(fb[2] == -2.0f);
	wt_util_reduce(ha, hb, 1, WEFT_FLOAT16, WEFT_AVG); /* AVG reduces as SUM */
	assert_int_equal(ha[0], 0x4000);
}

/* ---- reduce3_fanout ---- */

/* The fan-out equals wt_util_reduce3 bit for bit in every destination, across block edges,
 * streamed or not, with dsts[0] on a and a later destination on b, and writes nothing
 * outside [0, count). */
static void test_reduce3_fanout(void **state)
{
	/* Buffers on 64-byte lines, so a skew of one element puts the streaming path's head
	 * and tail loops to work whatever malloc would have returned. */
	enum { MAXB = 3 * 4096 + 64, PAD = 64, BUF = MAXB + 2 * PAD };
	uint8_t *a = aligned_alloc(64, BUF), *b = aligned_alloc(64, BUF), *want = malloc(MAXB);
	uint8_t *d[3], *a2 = aligned_alloc(64, BUF), *b2 = aligned_alloc(64, BUF);
	uint64_t rng = 12345;

	(void)state;
	assert_non_null(a && b && want && a2 && b2);
	for (int k = 0; k < 3; k++) {
		d[k] = aligned_alloc(64, BUF);
		assert_non_null(d[k]);
	}
	for (size_t i = 0; i < MAXB + 2 * PAD; i++) {
		rng = rng * 6364136223846793005ull + 1442695040888963407ull;
		a[i] = (uint8_t)(rng >> 33);
		b[i] = (uint8_t)(rng >> 45);
	}
	for (int dt = 0; dt < WEFT_DTYPE_COUNT_; dt++) {
		size_t es = wt_util_dtype_size((weft_dtype_t)dt), per = 4096 / es;
		size_t counts[] = {0, 1, per - 1, per, per + 1, 3 * per + 7 / es};

		for (int op = 0; op < WEFT_OP_COUNT_; op++) {
			if (op == WEFT_AVG)
				continue;
			for (size_t c = 0; c < sizeof(counts) / sizeof(counts[0]); c++) {
				size_t n = counts[c], len = n * es;
				/* a destination that starts mid-line: head and tail stored plainly
				 */
				size_t skew = (c % 2) * es;

				wt_util_reduce3(want, a + PAD, b + PAD, n, (weft_dtype_t)dt,
						(weft_op_t)op);
				for (int stream = 0; stream < 2; stream++) {
					/* mixed: each destination a different distance into its
					 * line, which the float32 streaming path declines */
					for (int v = 0; v < 6; v++) {
						int ndst = 1 + v % 3, mixed = v / 3;
						void *dsts[3];
						size_t at[3];

						for (int k = 0; k < 3; k++) {
							at[k] = PAD + skew +
								(mixed ? (size_t)k * es : 0);
							memset(d[k], 0x5c, MAXB + 2 * PAD);
							dsts[k] = d[k] + at[k];
						}
						wt_util_reduce3_fanout(dsts, ndst, a + PAD, b + PAD,
								       n, (weft_dtype_t)dt,
								       (weft_op_t)op, stream);
						for (int k = 0; k < ndst; k++) {
							assert_memory_equal(d[k] + at[k], want,
									    len);
							assert_int_equal(d[k][at[k] - 1], 0x5c);
							assert_int_equal(d[k][at[k] + len], 0x5c);
						}
						for (int k = ndst; k < 3; k++)
							assert_int_equal(d[k][at[k]], 0x5c);
					}
					/* in place on both sides: dsts[0] is a, dsts[1] is b (the
					 * inputs' bytes moved by the skew) */
					memcpy(a2 + skew, a, BUF - skew);
					memcpy(b2 + skew, b, BUF - skew);
					void *io[2] = {a2 + PAD + skew, b2 + PAD + skew};

					wt_util_reduce3_fanout(io, 2, io[0], io[1], n,
							       (weft_dtype_t)dt, (weft_op_t)op,
							       stream);
					assert_memory_equal(a2 + PAD + skew, want, len);
					assert_memory_equal(b2 + PAD + skew, want, len);
					assert_memory_equal(a2 + PAD + skew + len, a + PAD + len,
							    PAD - skew);
				}
			}
		}
	}
	for (int k = 0; k < 3; k++)
		free(d[k]);
	free(a);
	free(b);
	free(a2);
	free(b2);
	free(want);
}

/* ---- scale_div ---- */

static void test_scale_div(void **state)
{
	int8_t i8[4] = {-128, 127, -7, 7};
	uint8_t u8[2] = {255, 4};
	int32_t i32[4] = {INT32_MIN, -7, 7, -1};
	uint32_t u32[1] = {UINT32_MAX};
	int64_t i64[3] = {INT64_MIN, -9, 9};
	uint64_t u64[1] = {UINT64_MAX};
	float f32[2] = {1.0f, -7.5f};
	double f64[2] = {1.0, -7.5};
	uint16_t h[2] = {0x3c00, 0x7c00}, bf[2] = {0x3f80, 0xff80};
	int32_t keep[2] = {5, -5};

	(void)state;
	wt_util_scale_div(i8, 4, WEFT_INT8, 3);
	assert_int_equal(i8[0], -42);
	assert_int_equal(i8[1], 42);
	assert_int_equal(i8[2], -2);
	assert_int_equal(i8[3], 2);
	wt_util_scale_div(u8, 2, WEFT_UINT8, 2);
	assert_int_equal(u8[0], 127);
	assert_int_equal(u8[1], 2);
	wt_util_scale_div(i32, 4, WEFT_INT32, 2);
	assert_int_equal(i32[0], INT32_MIN / 2);
	assert_int_equal(i32[1], -3);
	assert_int_equal(i32[2], 3);
	assert_int_equal(i32[3], 0);
	wt_util_scale_div(u32, 1, WEFT_UINT32, 7);
	assert_int_equal(u32[0], UINT32_MAX / 7);
	wt_util_scale_div(i64, 3, WEFT_INT64, 4);
	assert_true(i64[0] == INT64_MIN / 4);
	assert_int_equal(i64[1], -2);
	assert_int_equal(i64[2], 2);
	wt_util_scale_div(u64, 1, WEFT_UINT64, 3);
	assert_true(u64[0] == UINT64_MAX / 3);
	wt_util_scale_div(f32, 2, WEFT_FLOAT32, 3);
	assert_true(f32[0] == 1.0f / 3.0f);
	assert_true(f32[1] == -2.5f);
	wt_util_scale_div(f64, 2, WEFT_FLOAT64, 3);
	assert_true(f64[0] == 1.0 / 3.0);
	assert_true(f64[1] == -2.5);
	wt_util_scale_div(h, 2, WEFT_FLOAT16, 3);
	assert_int_equal(h[0], ref_f2h(1.0f / 3.0f));
	assert_int_equal(h[1], 0x7c00);
	wt_util_scale_div(bf, 2, WEFT_BFLOAT16, 3);
	assert_int_equal(bf[0], ref_f2b(1.0f / 3.0f));
	assert_int_equal(bf[1], 0xff80);
	/* n <= 0 is refused and leaves the buffer alone; n == 1 is the identity */
	wt_util_scale_div(keep, 2, WEFT_INT32, 0);
	wt_util_scale_div(keep, 2, WEFT_INT32, -1);
	wt_util_scale_div(keep, 2, WEFT_INT32, 1);
	assert_int_equal(keep[0], 5);
	assert_int_equal(keep[1], -5);
}

static void test_names(void **state)
{
	(void)state;
	assert_int_equal(wt_util_dtype_size(WEFT_INT8), 1);
	assert_int_equal(wt_util_dtype_size(WEFT_FLOAT16), 2);
	assert_int_equal(wt_util_dtype_size(WEFT_BFLOAT16), 2);
	assert_int_equal(wt_util_dtype_size(WEFT_UINT32), 4);
	assert_int_equal(wt_util_dtype_size(WEFT_FLOAT64), 8);
	assert_int_equal(wt_util_dtype_size((weft_dtype_t)99), 0);
	assert_int_equal(wt_util_dtype_size((weft_dtype_t)-1), 0);
	assert_string_equal(wt_util_dtype_name(WEFT_BFLOAT16), "bfloat16");
	assert_string_equal(wt_util_op_name(WEFT_AVG), "avg");
	assert_true(wt_util_op_valid(WEFT_MAX));
	assert_false(wt_util_op_valid(WEFT_OP_COUNT_));
	assert_false(wt_util_dtype_valid(WEFT_DTYPE_COUNT_));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_names),
	    cmocka_unit_test(test_half_exhaustive),
	    cmocka_unit_test(test_half_rounding),
	    cmocka_unit_test(test_bf16),
	    cmocka_unit_test(test_kernels_known_values),
	    cmocka_unit_test(test_kernels_all),
	    cmocka_unit_test(test_reduce3_fanout),
	    cmocka_unit_test(test_scale_div),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
