/* Streaming copies (lib/util/copy.h). */
#include <stdint.h>
#include <string.h>

#include "lib/util/copy.h"

#if defined(__x86_64__)
#include <emmintrin.h>
#endif

/* Below this, the read-for-ownership a plain copy pays is less than the fence. */
#define COPY_STREAM_MIN 4096

void wt_util_copy_stream_unfenced(void *dst, const void *src, size_t len)
{
#if defined(__x86_64__)
	uint8_t *d = dst;
	const uint8_t *s = src;
	size_t head;

	if (len < COPY_STREAM_MIN) {
		memcpy(dst, src, len);
		return;
	}
	/* Plain stores up to the destination's first 64-byte line, then whole lines. */
	head = (64 - ((uintptr_t)d & 63)) & 63;
	memcpy(d, s, head);
	d += head;
	s += head;
	len -= head;
	for (; len >= 64; len -= 64, d += 64, s += 64) {
		__m128i a = _mm_loadu_si128((const __m128i *)(const void *)s);
		__m128i b = _mm_loadu_si128((const __m128i *)(const void *)(s + 16));
		__m128i c = _mm_loadu_si128((const __m128i *)(const void *)(s + 32));
		__m128i e = _mm_loadu_si128((const __m128i *)(const void *)(s + 48));

		_mm_stream_si128((__m128i *)(void *)d, a);
		_mm_stream_si128((__m128i *)(void *)(d + 16), b);
		_mm_stream_si128((__m128i *)(void *)(d + 32), c);
		_mm_stream_si128((__m128i *)(void *)(d + 48), e);
	}
	memcpy(d, s, len);
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
