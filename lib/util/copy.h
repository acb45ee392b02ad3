/* Bulk copies (lib/util): around the C library's slow cases, and for memory that the
 * copier will not read again. */
#ifndef WT_UTIL_COPY_H
#define WT_UTIL_COPY_H

#include <stddef.h>

/* memcpy (no overlap), except where the C library's copy is pathologically slow: with the
 * destination 1-63 bytes past the source modulo 4 KiB (the loads then alias the stores
 * just made), glibc's `rep movsb` path, which it takes from 2 KiB to about 1 MiB, ran at
 * 2.4-3.5 GB/s here instead of 46-56 (AMD EPYC); such copies go by a vector loop (44-50). */
void wt_util_copy(void *dst, const void *src, size_t len);

/* Copies len bytes like memcpy (no overlap), storing around the caches where the CPU can
 * (x86-64: non-temporal stores): for a destination that someone else reads next, such as
 * a peer's buffer, so neither a read-for-ownership of every destination line nor the
 * eviction of the copier's own working set is paid. Stores are ordered (sfence) before
 * the call returns, so a release store after it publishes them. Small copies are plain. */
void wt_util_copy_stream(void *dst, const void *src, size_t len);
/* The same without the closing fence, for a run of copies that wt_util_copy_fence ends. */
void wt_util_copy_stream_unfenced(void *dst, const void *src, size_t len);
void wt_util_copy_fence(void);

#endif
