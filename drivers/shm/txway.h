/* How the shm producer writes large frames into a peer's ring: plain or streaming
 * stores, chosen by timing the frames (drivers/shm). Pure bookkeeping, no memory access,
 * so it is tested on its own. */
#ifndef WT_SHM_TXWAY_H
#define WT_SHM_TXWAY_H

#include <stdint.h>

/* Frames from this size are timed; smaller ones always use plain stores. */
#define WT_SHM_TXWAY_MIN_FRAME (32u << 10)
/* Large frames between trials of the other way: from _TRIAL_MIN, doubling after each
 * trial that keeps the way, up to _TRIAL_MAX; a switch starts over. */
#define WT_SHM_TXWAY_TRIAL_MIN 4u
#define WT_SHM_TXWAY_TRIAL_MAX 256u
/* A trial is compared with the best of this many frames of the way in use before it. */
#define WT_SHM_TXWAY_RECENT 4

enum { WT_SHM_STORES_AUTO = 0, WT_SHM_STORES_PLAIN, WT_SHM_STORES_STREAM };

typedef struct {
	int forced;	      /* WT_SHM_STORES_*: AUTO measures, the others fix the way */
	int nt;		      /* the way in use: 1 streaming stores, 0 plain */
	uint32_t timed;	      /* large frames since the last trial */
	uint32_t trial_every; /* 0 until the first frame */
	uint32_t recent[WT_SHM_TXWAY_RECENT]; /* bytes/us of the last frames of the way in use */
	uint32_t nrecent;		      /* frames written into recent, mod its size */
	uint64_t switches;		      /* times the way changed */
} wt_shm_txway_t;

/* The way for the next large frame; *trial says it is a trial of the other way. */
int wt_shm_txway_pick(wt_shm_txway_t *w, int *trial);
/* The frame picked so took ns to write bytes. */
void wt_shm_txway_done(wt_shm_txway_t *w, int way, int trial, uint64_t bytes, uint64_t ns);

#endif
