/* Element helpers shared by the multi-process checkers (tests/integration): dtype sizes,
 * exact half / bfloat16 encodings of small integers, and reading and writing one element
 * of any dtype as a double. Public API only; header-only. */
#ifndef WT_TEST_TESTVALS_H
#define WT_TEST_TESTVALS_H

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <weft/weft.h>

static inline size_t tv_dt_size(weft_dtype_t dt)
{
	static const size_t s[] = {1, 1, 4, 4, 8, 8, 2, 2, 4, 8};
	return s[dt];
}

static inline int tv_is_unsigned(weft_dtype_t dt)
{
	return dt == WEFT_UINT8 || dt == WEFT_UINT32 || dt == WEFT_UINT64;
}

static inline int tv_is_int(weft_dtype_t dt)
{
	return dt <= WEFT_UINT64;
}

/* Exact half encoding: only integers with |v| < 2048 (exact in half) are ever encoded. */
static inline uint16_t tv_half_of(double v)
{
	uint16_t sign = v < 0 ? 0x8000 : 0;
	double a = fabs(v);
	int e = 0;

	if (a == 0)
		return sign;
	while (a >= 2.0) {
		a /= 2.0;
		e++;
	}
	while (a < 1.0) {
		a *= 2.0;
		e--;
	}
	return (uint16_t)(sign | (uint16_t)((e + 15) << 10) |
			  (uint16_t)llround((a - 1.0) * 1024.0));
}

static inline double tv_half_val(uint16_t h)
{
	int e = (h >> 10) & 0x1f;
	double m = (double)(h & 0x3ff);
	double v;

	if (e == 0)
		v = ldexp(m, -24);
	else
		v = ldexp(1.0 + m / 1024.0, e - 15);
	return (h & 0x8000) ? -v : v;
}

static inline uint16_t tv_bf16_of(double v)
{
	float f = (float)v;
	uint32_t u;

	memcpy(&u, &f, 4);
	return (uint16_t)(u >> 16); /* small integers are exact: no rounding needed */
}

static inline double tv_bf16_val(uint16_t b)
{
	uint32_t u = (uint32_t)b << 16;
	float f;

	memcpy(&f, &u, 4);
	return f;
}

/* Element i of buf, of type dt, set to v (converted as C converts; halves exact only for
 * small integers). */
static inline void tv_put(void *buf, weft_dtype_t dt, size_t i, double v)
{
	switch (dt) {
	case WEFT_INT8:
		((int8_t *)buf)[i] = (int8_t)v;
		break;
	case WEFT_UINT8:
		((uint8_t *)buf)[i] = (uint8_t)v;
		break;
	case WEFT_INT32:
		((int32_t *)buf)[i] = (int32_t)v;
		break;
	case WEFT_UINT32:
		((uint32_t *)buf)[i] = (uint32_t)v;
		break;
	case WEFT_INT64:
		((int64_t *)buf)[i] = (int64_t)v;
		break;
	case WEFT_UINT64:
		((uint64_t *)buf)[i] = (uint64_t)v;
		break;
	case WEFT_FLOAT16:
		((uint16_t *)buf)[i] = tv_half_of(v);
		break;
	case WEFT_BFLOAT16:
		((uint16_t *)buf)[i] = tv_bf16_of(v);
		break;
	case WEFT_FLOAT32:
		((float *)buf)[i] = (float)v;
		break;
	default:
		((double *)buf)[i] = v;
		break;
	}
}

static inline double tv_get(const void *buf, weft_dtype_t dt, size_t i)
{
	switch (dt) {
	case WEFT_INT8:
		return ((const int8_t *)buf)[i];
	case WEFT_UINT8:
		return ((const uint8_t *)buf)[i];
	case WEFT_INT32:
		return ((const int32_t *)buf)[i];
	case WEFT_UINT32:
		return ((const uint32_t *)buf)[i];
	case WEFT_INT64:
		return (double)((const int64_t *)buf)[i];
	case WEFT_UINT64:
		return (double)((const uint64_t *)buf)[i];
	case WEFT_FLOAT16:
		return tv_half_val(((const uint16_t *)buf)[i]);
	case WEFT_BFLOAT16:
		return tv_bf16_val(((const uint16_t *)buf)[i]);
	case WEFT_FLOAT32:
		return ((const float *)buf)[i];
	default:
		return ((const double *)buf)[i];
	}
}

/* Rank's input element i with k = i * 31 + rank * 17 (+ a salt): exact in every order of
 * evaluation. PROD: +-1 and a 2 every fifth; MIN / MAX: two-digit values; otherwise small
 * integers around 0. */
static inline double tv_exact(weft_op_t op, weft_dtype_t dt, int rank, size_t i, size_t k)
{
	int uns = tv_is_unsigned(dt);

	switch (op) {
	case WEFT_PROD:
		if ((i + (size_t)rank) % 5 == 0)
			return 2;
		return (!uns && k % 3 == 0) ? -1 : 1;
	case WEFT_MIN:
	case WEFT_MAX:
		return uns ? (double)(k % 100) : (double)((int)(k % 200) - 100);
	default:
		return uns ? (double)(k % 7) : (double)((int)(k % 7) - 3);
	}
}

/* One step of op in double arithmetic (AVG sums; the caller divides). */
static inline double tv_combine(weft_op_t op, double acc, double v)
{
	switch (op) {
	case WEFT_PROD:
		return acc * v;
	case WEFT_MIN:
		return v < acc ? v : acc;
	case WEFT_MAX:
		return v > acc ? v : acc;
	default:
		return acc + v;
	}
}

#endif
