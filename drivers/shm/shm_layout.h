/* Private layout of the shm driver's shared segment and address blob (drivers/shm):
 * a header page, one ring per sender rank, then the slot area;
 * shared with its unit tests, which corrupt rings on purpose. */
#ifndef WT_SHM_LAYOUT_H
#define WT_SHM_LAYOUT_H

#include <stdatomic.h>
#include <stdint.h>
#include "lib/util/crypto.h"

#define WT_SHM_RING_CAP (4u << 20)		/* bytes per direction; a power of two */
#define WT_SHM_MAX_FRAME ((256u << 10) + 4096u) /* a 256 KiB segment plus its header */
#define WT_SHM_ALIGN 65536u			/* mmap offsets: a multiple of any page size */
#define WT_SHM_RING_OFF WT_SHM_ALIGN		/* header page, then one ring per sender rank */
#define WT_SHM_RING_STRIDE ((uint64_t)WT_SHM_ALIGN + WT_SHM_RING_CAP)
#define WT_SHM_REC_HDR 8u	/* u32 length, u32 stamp (shm.c rx_stamp); records 8-aligned */
#define WT_SHM_WRAP 0xffffffffu /* length that means "continue at ring start" */
/* Where a producer goes back to the start of a ring that has carried only small frames
 * while its consumer keeps up (see shm.c); not part of the layout peers rely on. */
#define WT_SHM_SMALL_WINDOW (64u << 10)
/* After the rings: the slot area (WT_LINK_CAP_SLOTS) peers map read only. Pages are only
 * backed once written, so the size costs address space, not memory. */
#define WT_SHM_SLOT_BYTES (276u << 20) /* 64 regions of the API's (4404 KiB apart) */
#define WT_SHM_MAGIC "WEFTSHM1"
#define WT_SHM_VERSION 4u
#define WT_SHM_BLOB_MAGIC 0x4d485357u /* "WSHM" */
#define WT_SHM_MAC_LABEL "weft-shm-segment-v1"
#define WT_SHM_JOB_ID_MAX 64
#define WT_SHM_BELL_NAME_MAX 96 /* doorbell name with its NUL; fits sun_path */

/* At offset 0 of every rank's segment; written once by its owner before publishing. */
struct wt_shm_seg_hdr {
	char magic[8];
	uint32_t version;
	uint32_t rank;
	uint32_t size;
	uint32_t ring_cap;
	uint64_t ring_off;
	uint64_t ring_stride;
	uint64_t seg_size;
	uint64_t slot_off; /* the slot area: after the last ring */
	uint64_t slot_bytes;
	uint8_t nonce[WT_UTIL_NONCE_LEN];
	uint8_t mac[WT_UTIL_MAC_LEN];
	/* Set by the owner before it sleeps; the sender that clears it rings the doorbell. */
	_Alignas(64) _Atomic uint32_t sleeping;
	/* Set by the owner's close(): peers report it failed without waiting for exit. */
	_Atomic uint32_t closed;
	/* Set by an owner that, between raising `sleeping` and its last look at its rings and
	 * slots, runs membarrier(MEMBARRIER_CMD_GLOBAL_EXPEDITED): a sender whose process
	 * registered for it needs no fence between its store and its look at `sleeping`. */
	_Atomic uint32_t asym;
	/* The CPU the owner ran on at creation, then when it last looked (shm_cpu_shared): where
	 * ranks share cores, a waiter yields to the ranks it waits for only if they share
	 * its CPU. A hint: any value is harmless. */
	_Atomic int32_t cpu;
	/* The owner's estimate of how far apart the cores are (wt_util_place_word), for peers
	 * choosing their stores (drivers/shm place_share); 0 = none. A hint. */
	_Alignas(64) _Atomic uint64_t place;
};

/* At the start of each ring slot; the data follows at WT_SHM_ALIGN. Counters run
 * free (never wrap in practice) and are on their own cache lines. */
struct wt_shm_ring_ctl {
	_Alignas(64) _Atomic uint64_t head;	    /* producer: bytes published */
	_Alignas(64) _Atomic uint64_t tail;	    /* consumer: bytes released */
	_Alignas(64) _Atomic uint32_t prod_waiting; /* producer found the ring full */
};

/* The address blob, published through the authenticated store. */
struct wt_shm_blob {
	uint32_t magic;
	uint32_t version;
	uint32_t rank;
	uint32_t size;
	int32_t pid;
	int32_t memfd;
	uint8_t nonce[WT_UTIL_NONCE_LEN];
	uint32_t name_len;
	char name[WT_SHM_BELL_NAME_MAX];
};

#endif
