/* Datatypes and reduction kernels (lib/util). FLOAT16/BFLOAT16 are computed in float32
 * and rounded to nearest-even once per operation. AVG is not a kernel: callers reduce
 * with SUM and finish with wt_util_scale_div. */
#ifndef WT_UTIL_DTYPE_H
#define WT_UTIL_DTYPE_H

#include <stddef.h>
#include <stdint.h>
#include <weft/weft.h>

/* Element size in bytes; 0 for an unknown dtype. */
size_t wt_util_dtype_size(weft_dtype_t dt);
const char *wt_util_dtype_name(weft_dtype_t dt);
const char *wt_util_op_name(weft_op_t op);
int wt_util_dtype_valid(weft_dtype_t dt);
int wt_util_op_valid(weft_op_t op);

/* dst[i] = dst[i] op src[i] for count elements. op must not be AVG (use SUM).
 * dst and src may not overlap unless equal. */
void wt_util_reduce(void *dst, const void *src, size_t count, weft_dtype_t dt, weft_op_t op);
/* dst[i] = a[i] op b[i]; dst may equal a or b. */
void wt_util_reduce3(void *dst, const void *a, const void *b, size_t count, weft_dtype_t dt,
		     weft_op_t op);
/* Every dsts[k][i] = a[i] op b[i] (k < ndst): one pass over the operands for a result that
 * several buffers need, taken in blocks that stay in L1 between the combine and the writes
 * (streamed float32 with AVX2: from the registers to every destination, when all lie the
 * same distance into a 32-byte line). A destination may equal a or b; none overlaps
 * another, or a or b, otherwise. stream: the writes go around the
 * caches (non-temporal stores, fenced before the return), for results nobody here reads
 * again soon; else plain stores into dsts[0] copied on to the rest. op must not be AVG. */
void wt_util_reduce3_fanout(void *const *dsts, int ndst, const void *a, const void *b, size_t count,
			    weft_dtype_t dt, weft_op_t op, int stream);
/* buf[i] = buf[i] / n (integers truncate toward zero), the finish of AVG. */
void wt_util_scale_div(void *buf, size_t count, weft_dtype_t dt, int n);

/* IEEE half and bfloat16 conversions (round to nearest even, NaN kept NaN). */
float wt_util_half_to_float(uint16_t h);
uint16_t wt_util_float_to_half(float f);
float wt_util_bf16_to_float(uint16_t b);
uint16_t wt_util_float_to_bf16(float f);

/* Bulk float32 <-> 16-bit float conversions for wire compression; fmt is WEFT_FLOAT16 or
 * WEFT_BFLOAT16 (other values return -1 and touch nothing). narrow rounds to nearest
 * even (fp16: beyond 65504 becomes inf). dst and src must not overlap. */
int wt_util_f32_narrow(void *dst16, const void *src32, size_t count, weft_dtype_t fmt);
int wt_util_f32_widen(void *dst32, const void *src16, size_t count, weft_dtype_t fmt);
/* dst32[i] = dst32[i] op widen(src16[i]), accumulated in float32 (AVG reduces as SUM). */
int wt_util_f32_reduce_widen(void *dst32, const void *src16, size_t count, weft_dtype_t fmt,
			     weft_op_t op);

#endif
