/* Plain or streaming stores for large copies into shared memory that another core reads
 * next (the shm rings' frames, the slots' publishes), chosen by timing the copies
 * (lib/util). The choice itself is bookkeeping, no memory access, tested on its own. */
#ifndef WT_UTIL_STORES_H
#define WT_UTIL_STORES_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#include "lib/util/status.h"

/* Copies from this size are timed; smaller ones use plain stores, except as below. */
#define WT_UTIL_STORES_MIN_COPY (32u << 10)
/* Under AUTO, copies from this size up to _MIN_COPY take plain stores while those run fast
 * and streaming ones while they do not (wt_util_stores_pick_mid). */
#define WT_UTIL_STORES_MID_MIN (4u << 10)
/* Plain such copies are timed one in this many; while streaming, one in _MID_TRIAL is a
 * timed plain trial. */
#define WT_UTIL_STORES_MID_EVERY 8u
#define WT_UTIL_STORES_MID_TRIAL 64u
/* A plain such copy slower than this many bytes per ns is slow; two timed ones in a row
 * switch to streaming; at a trial, cores near by either side's view (wt_util_place_near_any)
 * or a fast plain copy switch back. */
#define WT_UTIL_STORES_MID_SLOW 4u
/* Large copies between trials of the other way: from _TRIAL_MIN, doubling after each
 * trial that keeps the way, up to _TRIAL_MAX; a switch starts over. */
#define WT_UTIL_STORES_TRIAL_MIN 4u
#define WT_UTIL_STORES_TRIAL_MAX 256u
/* A trial is compared with the median of this many frames of the way in use before it. */
#define WT_UTIL_STORES_RECENT 8

/* AUTO: plain where the cores are known to be near (lib/util/place.h), streaming where they
 * are known to be far, else timed; TIMED: timed only. */
enum { WT_UTIL_STORES_AUTO = 0, WT_UTIL_STORES_PLAIN, WT_UTIL_STORES_STREAM, WT_UTIL_STORES_TIMED };

typedef struct {
	int forced;				/* WT_UTIL_STORES_*: PLAIN and STREAM fix the way */
	int nt;					/* the way in use: 1 streaming stores, 0 plain */
	uint32_t timed;				/* large frames since the last trial */
	uint32_t trial_every;			/* 0 until the first frame */
	uint32_t recent[WT_UTIL_STORES_RECENT]; /* bytes/us of the last frames of the way in use */
	uint32_t nrecent;			/* frames written into recent, mod its size */
	uint64_t switches;			/* times the way changed */
	uint64_t mid_streamed;			/* copies of MID_MIN.._MIN_COPY streamed */
	uint64_t mid_n;				/* such copies picked */
	int mid_nt;				/* their way: 1 streaming */
	uint32_t mid_slow;			/* slow timed plain ones in a row */
} wt_util_stores_t;

/* The way for the next large copy; *trial says it is a trial of the other way. */
int wt_util_stores_pick(wt_util_stores_t *w, int *trial);
/* The same where the cores' placement is far (1), near (0) or unknown (-1): near means
 * plain stores under AUTO, far streaming ones, with no trial; unknown leaves it to timing. */
int wt_util_stores_pick_placed(wt_util_stores_t *w, int far, int *trial);
/* The way for a copy of len bytes below WT_UTIL_STORES_MIN_COPY (1 streaming), and in
 * *timed whether to time it (then it is plain): only under AUTO and from _MID_MIN, else
 * plain, untimed. */
int wt_util_stores_pick_mid(wt_util_stores_t *w, size_t len, int *timed);
/* A copy that pick_mid said to time took ns to write len bytes. */
void wt_util_stores_mid_done(wt_util_stores_t *w, size_t len, uint64_t ns);
/* The copy picked so (*trial as pick said) took ns to write bytes. */
void wt_util_stores_done(wt_util_stores_t *w, int trial, uint64_t bytes, uint64_t ns);

/* WEFT_SHM_STORES: "auto" (unset) and "timed" choose, "plain" and "stream" fix the way;
 * anything else is WEFT_ERR_INVALID_ARG with a message naming the variable in err. */
weft_status_t wt_util_stores_setting(int *forced, char *err, size_t errlen);

/* Copy the pieces (len bytes in all, no overlap) one after the other to dst, the way w
 * picks (with the process's placement, wt_util_place_far_now), timed, stores ordered before return
 * (so a release store after it publishes them). Below WT_UTIL_STORES_MIN_COPY: the way
 * pick_mid says; with w NULL: plain (wt_util_copy). Returns 1 when w changed its way on
 * this copy (a large one). */
int wt_util_stores_copyv(wt_util_stores_t *w, void *dst, const struct iovec *iov, int iovcnt,
			 size_t len);
/* The same for one buffer. */
void wt_util_stores_copy(wt_util_stores_t *w, void *dst, const void *src, size_t len);

#endif
