/* Bulk copies (lib/util/copy.h). */
#include <stdint.h>
#include <string.h>

#include "lib/util/copy.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* From this size glibc copies by `rep movsb` (x86_rep_movsb_threshold, 2112 bytes here). */
#define COPY_ALIAS_MIN 2048
/* Below this, the read-for-ownership a plain copy pays is less than the fence. */
#define COPY_STREAM_MIN 4096

#if defined(__x86_64__)
/* The whole 64-byte steps of a forward copy, four 16-byte loads before their stores, by
 * plain or streaming stores; returns the bytes copied. */
static inline size_t copy_steps(uint8_t *d, const uint8_t *s, size_t len, int nt)
{
	size_t done = 0;

	for (; len - done >= 64; done += 64) {
		const __m128i *in = (const __m128i *)(const void *)(s + done);
		__m128i *out = (__m128i *)(void *)(d + done);
		__m128i a = _mm_loadu_si128(in), b = _mm_loadu_si128(in + 1);
		__m128i c = _mm_loadu_si128(in + 2), e = _mm_loadu_si128(in + 3);

		if (nt) {
			_mm_stream_si128(out, a);
			_mm_stream_si128(out + 1, b);
			_mm_stream_si128(out + 2, c);
			_mm_stream_si128(out + 3, e);
		} else {
			_mm_storeu_si128(out, a);
			_mm_storeu_si128(out + 1, b);
			_mm_storeu_si128(out + 2, c);
			_mm_storeu_si128(out + 3, e);
		}
	}
	return done;
}
#endif

void wt_util_copy(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	uint8_t *d = dst;
	const uint8_t *s = src;

	if (len < COPY_ALIAS_MIN || (((uintptr_t)d - (uintptr_t)s) & 4095u) - 1u >= 63u) {
		memcpy(dst, src, len);
		return;
	}
	/* A load may alias a store made a step earlier, which costs a few cycles, not the
	 * string engine's slow path. */
	size_t done = copy_steps(d, s, len, 0);

	memcpy(d + done, s + done, len - done);
#else
	memcpy(dst, src, len);
#endif
}

void wt_util_copy_stream_unfenced(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t head, done;

	if (len < COPY_STREAM_MIN) {
		memcpy(dst, src, len);
		return;
	}
	/* Plain stores up to the destination's first 64-byte line, then whole lines. */
	head = (64 - ((uintptr_t)d & 63)) & 63;
	memcpy(d, s, head);
	done = head + copy_steps(d + head, s + head, len - head, 1);
	memcpy(d + done, s + done, len - done);
#else
	memcpy(dst, src, len);
#endif
}

void wt_util_copy_fence(void)
{
#if defined(__x86_64__)
	_mm_sfence();
#endif
}

void wt_util_copy_stream(void *dst, const void *src, size_t len)
{
	wt_util_copy_stream_unfenced(dst, src, len);
	wt_util_copy_fence();
}
