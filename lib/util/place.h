/* Whether the cores of this host's ranks are near (sharing a cache) or far apart, measured
 * from the shared memory traffic itself (lib/util).
 *
 * A producer that publishes a large frame or slot stamps it with its clock just before the
 * store that makes it visible; a consumer that was looking at that moment sees it one cache
 * line transfer later, so now - stamp is the one-way latency between the two cores, clock
 * reads included. A consumer that was busy elsewhere sees it later, never earlier, so the
 * least of recent samples is the estimate. The two cores' clocks differ, though: on this VM,
 * with the vCPUs far apart, one rank saw its peer's stamps 115 ns after they were taken and
 * the peer saw its stamps 236 ns after, where a cache line took 175 ns either way. So each
 * rank publishes its estimate through the shm segment, and the placement is the mean of
 * ours and the peers', in which the offsets of the two directions cancel. Where one side
 * has no estimate (a rank that always comes late to an exchange finds its peer's flag up
 * and takes no sample; a broadcast's root reads no stamped flag), the other side's alone
 * says far when it lies beyond any offset, and nothing otherwise.
 *
 * The bookkeeping is on wt_util_place_t with the time passed in, tested on its own; the
 * process keeps one instance (placement is the host's, not a communicator's). Fields are
 * relaxed atomics: the progress thread and callers feed samples at once, and a lost update
 * costs at most one sample. */
#ifndef WT_UTIL_PLACE_H
#define WT_UTIL_PLACE_H

#include <stdatomic.h>
#include <stdint.h>

/* Estimates above this are far (another core complex: 170-300 ns on this VM, 30-100 when
 * near, clock reads included). */
#define WT_UTIL_PLACE_FAR_NS 140u
/* Where only our estimate or only the peers' is known, it says far beyond this (the clock
 * offset between two vCPUs was 60 ns either way, near estimates came to 145 at most), and
 * never near. */
#define WT_UTIL_PLACE_FAR_ONE_NS 200u
/* Samples above this are dropped: the consumer was not looking when the stamp landed. */
#define WT_UTIL_PLACE_MAX_SAMPLE_NS 2000u
/* Samples per epoch; the estimate is the least of this epoch's and the last one's. */
#define WT_UTIL_PLACE_EPOCH 64u
/* An epoch needs this many samples before it counts on its own (the first one). */
#define WT_UTIL_PLACE_MIN_SAMPLES 8u
/* An estimate (own or a peer's) older than this is unknown: the vCPUs may have moved. */
#define WT_UTIL_PLACE_TTL_NS 2000000000ull
/* Peers' estimates older than this ask for a share (wt_util_place_take_want). */
#define WT_UTIL_PLACE_SHARE_NS 500000000ull

typedef struct {
	_Atomic uint32_t cur_min;   /* least sample of this epoch (UINT32_MAX: none) */
	_Atomic uint32_t cur_n;	    /* samples in this epoch */
	_Atomic uint32_t prev_min;  /* least sample of the last full epoch (UINT32_MAX: none) */
	_Atomic uint64_t last_ns;   /* when the last sample was taken (0: never) */
	_Atomic uint32_t host_mean; /* mean of the fresh estimates the peers published */
	_Atomic uint32_t host_n;    /* how many (0: none) */
	_Atomic uint64_t host_ns;   /* when they were set */
	_Atomic uint32_t want;	    /* a share is due (wt_util_place_take_want) */
	_Atomic uint32_t pub_own;   /* our estimate as last shared (0: none) */
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

/* 1 where the least of our estimate and the peers' (whichever are known and fresh) lies
 * at or below WT_UTIL_PLACE_FAR_NS at time now, else 0: near by either side's view. The
 * clocks' offset can make a far pair look near so, never a near one far, and a rank that
 * samples seldom (one always late to an exchange) can estimate near cores at 300 ns. */
int wt_util_place_near_any(const wt_util_place_t *p, uint64_t now);

/* The process's instance, on the monotonic clock. */
wt_util_place_t *wt_util_place_self(void);
/* wt_util_place_far(wt_util_place_self(), now). */
int wt_util_place_far_now(void);
/* wt_util_place_near_any(wt_util_place_self(), now). */
int wt_util_place_near_any_now(void);

#endif
