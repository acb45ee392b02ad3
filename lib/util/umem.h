/* User memory other processes of the host can map (lib/util): weft_mem_alloc's regions.
 * Each region is a memfd of its own, mapped shared and populated; a buffer inside one is
 * described to peers by (owner's memfd number, region id, offset), and a peer that maps
 * the owner's /proc/<pid>/fd/<fd> reads and writes the owner's pages directly. */
#ifndef WT_UTIL_UMEM_H
#define WT_UTIL_UMEM_H

#include <stddef.h>
#include <stdint.h>
#include "lib/util/status.h"

/* Where a buffer of one call is, as its owner publishes it (fixed layout: it crosses
 * between processes through shared memory; peers validate every field). */
typedef struct {
	uint64_t addr;	     /* the buffer's address in its owner */
	uint64_t len;	     /* its bytes in this call */
	uint64_t region;     /* the owner's region id; 0: not in weft memory */
	uint64_t region_len; /* the region's bytes (its memfd's size) */
	uint64_t off;	     /* the buffer's offset in the region */
	int32_t fd;	     /* the owner's memfd of the region */
	uint32_t reserved;   /* 0 */
} wt_util_umem_desc_t;

/* A region of at least bytes (rounded up to whole pages), zeroed, at *ptr. */
weft_status_t wt_util_umem_alloc(size_t bytes, void **ptr);
/* Unmaps the region that starts at ptr; INVALID_ARG if no region starts there. */
weft_status_t wt_util_umem_free(void *ptr);
/* Describes [buf, buf + len): always addr and len; region, region_len, off and fd when
 * the whole range lies in one region (region 0 otherwise). */
void wt_util_umem_find(const void *buf, size_t len, wt_util_umem_desc_t *out);
/* 1 when [buf, buf + len) lies in one region (len 0: buf inside one), else 0; no lock
 * and no search while the process has no region at all. */
int wt_util_umem_contains(const void *buf, size_t len);
/* The memfd name every region carries (peers check it before mapping). */
#define WT_UTIL_UMEM_NAME "weft-mem"

#endif
