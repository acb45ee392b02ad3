/* Whether the cores of this host's ranks are near (sharing a cache) or far apart, measured
 * from the shared memory traffic itself (lib/util).
 *
 * A producer that publishes a large frame or slot stamps it with its clock just before the
 * store that makes it visible; a consumer that was looking at that moment sees it one cache
 * line transfer later, so now - stamp is the one-way latency between the two cores, clock
 * reads included. A consumer that was busy elsewhere sees it later, so samples spread
 * upwards from that: with the vCPUs near their median ran 120-180 ns and their least
 * 30-70, far the median 380-700 and 5% below 170-420. The estimate is the median of the last
 * WT_UTIL_PLACE_WINDOW samples. It used to be their least, which a few low samples in a far
 * period (60-130 ns, in clusters, seen in most far launches) held near for 64-128 samples:
 * replayed on the samples of 47 far and 207 near 2-rank launches (weft-perf sweeps of five
 * collectives and loops with uneven work between calls), the least put the far launches
 * the wrong way 31% of the time (one launch 71%), the median never did, and neither put a
 * near launch far at these thresholds. The median also follows a move within half a window
 * of samples either way. The two cores' clocks differ, though: on this VM, with the vCPUs
 * far apart, one rank saw its peer's stamps 115 ns after they were taken and the peer saw
 * its stamps 236 ns after, where a cache line took 175 ns either way. So each rank
 * publishes its estimate through the shm segment, and the placement is the mean of ours
 * and the peers', in which the offsets of the two directions cancel. Where one side has no
 * estimate (a rank that always comes late to an exchange finds its peer's flag up and takes
 * no sample; a broadcast's root reads no stamped flag), the other side's alone says far when
 * it lies beyond any offset, and nothing otherwise.
 *
 * The bookkeeping is on wt_util_place_t with the time passed in, tested on its own; the
 * process keeps one instance (placement is the host's, not a communicator's). The progress
 * thread and callers feed samples at once: the window is theirs in turn (a sample that finds
 * another being added is dropped), and the rest are relaxed atomics. */
#ifndef WT_UTIL_PLACE_H
#define WT_UTIL_PLACE_H

#include <stdatomic.h>
#include <stdint.h>

/* A mean of estimates above this is far (another core complex). In the replay above the
 * mean of two ranks' medians reached 215 ns near at most, and far lay above 295 99% of the
 * time. */
#define WT_UTIL_PLACE_FAR_NS 240u
/* Where only our estimate or only the peers' is known, it says far beyond this (a rank's own
 * median reached 250 ns near at most; the clock offset between two vCPUs was 60 ns either
 * way), and never near. */
#define WT_UTIL_PLACE_FAR_ONE_NS 300u
/* Samples above this are dropped: the consumer was not looking when the stamp landed. */
#define WT_UTIL_PLACE_MAX_SAMPLE_NS 2000u
/* The estimate is the median of this many last samples. */
#define WT_UTIL_PLACE_WINDOW 32u
/* and known from this many on (after start-up, or after a pause longer than the TTL). */
#define WT_UTIL_PLACE_MIN_SAMPLES 8u
/* An estimate (own or a peer's) older than this is unknown: the vCPUs may have moved. */
#define WT_UTIL_PLACE_TTL_NS 2000000000ull
/* Peers' estimates older than this ask for a share (wt_util_place_take_want). */
#define WT_UTIL_PLACE_SHARE_NS 500000000ull

typedef struct {
	_Atomic uint32_t busy;		       /* a sample is being added to the window */
	uint32_t win[WT_UTIL_PLACE_WINDOW];    /* the last samples, in arrival order (busy) */
	uint32_t sorted[WT_UTIL_PLACE_WINDOW]; /* the same, ascending (busy) */
	uint32_t n;			       /* how many win holds (busy) */
	uint32_t next;			       /* where in win the next one goes (busy) */
	_Atomic uint32_t est;		       /* their median; 0: too few */
	_Atomic uint64_t last_ns;	       /* when the last sample was taken (0: never) */
	_Atomic uint32_t host_mean;	       /* mean of the fresh estimates the peers published */
	_Atomic uint32_t host_n;	       /* how many (0: none) */
	_Atomic uint64_t host_ns;	       /* when they were set */
	_Atomic uint32_t want;		       /* a share is due (wt_util_place_take_want) */
	_Atomic uint32_t pub_own;	       /* our estimate as last shared (0: none) */
} wt_util_place_t;

void wt_util_place_init(wt_util_place_t *p);
/* One sample: a stamp seen ns after it was taken, at time now. */
void wt_util_place_sample(wt_util_place_t *p, uint64_t ns, uint64_t now);
/* Our own estimate in ns at time now; 0 when unknown. */
uint32_t wt_util_place_own(const wt_util_place_t *p, uint64_t now);
/* The mean of the n fresh estimates the peers published, at time now (n 0: none). */
void wt_util_place_set_host(wt_util_place_t *p, uint32_t mean_ns, uint32_t n, uint64_t now);
/* 1 far, 0 near, -1 unknown at time now: by the mean of our estimate and the peers'; with
 * only one of them, 1 beyond WT_UTIL_PLACE_FAR_ONE_NS, else unknown. */
int wt_util_place_far(const wt_util_place_t *p, uint64_t now);

/* Whether a sample or a wt_util_place_far_now since the last call found the peers'
 * estimates older than WT_UTIL_PLACE_SHARE_NS (or none for 1 ms), or a sample moved our
 * own estimate by more than a third from what we shared; clears it. The shm driver shares
 * on its poll, which calls of slots alone never make, and so also where it wakes peers for
 * a slot publish when this says one is due. */
int wt_util_place_take_want(wt_util_place_t *p);

/* Our estimate ns was shared with the peers: a sample that moves it by more than a third
 * from that asks for a share again. */
void wt_util_place_shared(wt_util_place_t *p, uint32_t ns);

/* A published estimate: one 64-bit word, the ns in the low half and the publisher's clock
 * in ms in the high half (so a reader can tell a stale word). */
uint64_t wt_util_place_word(uint32_t ns, uint64_t now);
/* The estimate a published word holds, 0 when none or older than the TTL at time now. */
uint32_t wt_util_place_word_ns(uint64_t word, uint64_t now);

/* 1 where the lesser of our estimate and the peers' (whichever are known and fresh) lies
 * at or below WT_UTIL_PLACE_FAR_NS at time now, else 0: near by either side's view. The
 * clocks' offset can make a far pair look near so, never a near one far, and a rank that
 * samples seldom (one always late to an exchange) can estimate near cores high. */
int wt_util_place_near_any(const wt_util_place_t *p, uint64_t now);

/* The process's instance, on the monotonic clock. */
wt_util_place_t *wt_util_place_self(void);
/* Write the process's instance where a link that feeds it opens, not in the first call that
 * samples: its window may lie in a page nothing else has written, and the first write of a
 * page costs 11-15 us on this VM (2-rank allreduce of 4 KiB, 20 calls after 5 in a new
 * process: 1.28-1.31 us a call with the window first written by a sample, 1.08-1.14 with
 * samples ignored). */
void wt_util_place_self_touch(void);
/* wt_util_place_far(wt_util_place_self(), now). */
int wt_util_place_far_now(void);
/* wt_util_place_near_any(wt_util_place_self(), now). */
int wt_util_place_near_any_now(void);

#endif
