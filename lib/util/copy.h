/* Copies for memory that the copier will not read again (lib/util). */
#ifndef WT_UTIL_COPY_H
#define WT_UTIL_COPY_H

#include <stddef.h>

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
