/* Near or far cores, from stamps on large frames and slots (lib/util/place.h). */
#include <stdint.h>

#include "lib/util/place.h"
#include "lib/util/time.h"

#define NONE UINT32_MAX

static uint32_t ld32(const _Atomic uint32_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

static uint64_t ld64(const _Atomic uint64_t *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

void wt_util_place_init(wt_util_place_t *p)
{
	atomic_init(&p->cur_min, NONE);
	atomic_init(&p->cur_n, 0);
	atomic_init(&p->prev_min, NONE);
	atomic_init(&p->last_ns, 0);
	atomic_init(&p->host_mean, 0);
	atomic_init(&p->host_n, 0);
	atomic_init(&p->host_ns, 0);
	atomic_init(&p->want, 0);
	atomic_init(&p->pub_own, 0);
}

void wt_util_place_shared(wt_util_place_t *p, uint32_t ns)
{
	atomic_store_explicit(&p->pub_own, ns, memory_order_relaxed);
}

/* Ask for a share (wt_util_place_take_want): a store only on a change, as the line is read
 * on every slot wake-up. */
static void ask_share(wt_util_place_t *p)
{
	if (!ld32(&p->want))
		atomic_store_explicit(&p->want, 1, memory_order_relaxed);
}

/* The peers' estimates are old, or missing for a millisecond: ask for a share. */
static void want_if_stale(wt_util_place_t *p, uint64_t now)
{
	if (now - ld64(&p->host_ns) > (ld32(&p->host_n) ? WT_UTIL_PLACE_SHARE_NS : 1000000u))
		ask_share(p);
}

/* How many fresh peers' estimates there are at time now (0: none, or older than the TTL),
 * their mean in *mean. */
static uint32_t host_fresh(const wt_util_place_t *p, uint64_t now, uint32_t *mean)
{
	uint32_t n = ld32(&p->host_n);

	*mean = ld32(&p->host_mean);
	return n != 0 && now - ld64(&p->host_ns) <= WT_UTIL_PLACE_TTL_NS ? n : 0;
}

int wt_util_place_take_want(wt_util_place_t *p)
{
	return ld32(&p->want) && atomic_exchange_explicit(&p->want, 0, memory_order_relaxed);
}

void wt_util_place_sample(wt_util_place_t *p, uint64_t ns, uint64_t now)
{
	uint32_t n, own, pub;

	if (ns > WT_UTIL_PLACE_MAX_SAMPLE_NS)
		return;
	if ((uint32_t)ns < ld32(&p->cur_min))
		atomic_store_explicit(&p->cur_min, (uint32_t)ns, memory_order_relaxed);
	n = atomic_fetch_add_explicit(&p->cur_n, 1, memory_order_relaxed) + 1;
	if (n >= WT_UTIL_PLACE_EPOCH) {
		atomic_store_explicit(&p->prev_min, ld32(&p->cur_min), memory_order_relaxed);
		atomic_store_explicit(&p->cur_min, NONE, memory_order_relaxed);
		atomic_store_explicit(&p->cur_n, 0, memory_order_relaxed);
	}
	atomic_store_explicit(&p->last_ns, now, memory_order_relaxed);
	/* an estimate of ours that the peers have not seen asks for a share too: a new one, or
	 * one moved by more than a third (the first samples after start-up run high) */
	own = wt_util_place_own(p, now);
	pub = ld32(&p->pub_own);
	if (own != 0 && (pub == 0 || (uint64_t)own * 3 > (uint64_t)pub * 4 ||
			 (uint64_t)own * 4 < (uint64_t)pub * 3))
		ask_share(p);
	else
		want_if_stale(p, now);
}

uint32_t wt_util_place_own(const wt_util_place_t *p, uint64_t now)
{
	uint64_t last = ld64(&p->last_ns);
	uint32_t prev = ld32(&p->prev_min), cur = ld32(&p->cur_min), m;

	if (last == 0 || now - last > WT_UTIL_PLACE_TTL_NS)
		return 0;
	/* the first epoch counts once it has a few samples; later ones with the last */
	if (prev == NONE && ld32(&p->cur_n) < WT_UTIL_PLACE_MIN_SAMPLES)
		return 0;
	m = prev < cur ? prev : cur;
	return m == NONE ? 0 : (m ? m : 1);
}

void wt_util_place_set_host(wt_util_place_t *p, uint32_t mean_ns, uint32_t n, uint64_t now)
{
	atomic_store_explicit(&p->host_mean, mean_ns, memory_order_relaxed);
	atomic_store_explicit(&p->host_n, n, memory_order_relaxed);
	atomic_store_explicit(&p->host_ns, now, memory_order_relaxed);
}

int wt_util_place_far(const wt_util_place_t *p, uint64_t now)
{
	uint32_t mean;
	uint64_t own = wt_util_place_own(p, now), n = host_fresh(p, now, &mean);

	if (own != 0 && n != 0)
		return (own + n * mean) / (n + 1) > WT_UTIL_PLACE_FAR_NS;
	/* one side's view alone: far only beyond any clock offset */
	if (own != 0 || n != 0)
		return (own ? own : mean) > WT_UTIL_PLACE_FAR_ONE_NS ? 1 : -1;
	return -1;
}

int wt_util_place_near_any(const wt_util_place_t *p, uint64_t now)
{
	uint32_t mean, own = wt_util_place_own(p, now), n = host_fresh(p, now, &mean);

	return (own != 0 && own <= WT_UTIL_PLACE_FAR_NS) ||
	       (n != 0 && mean != 0 && mean <= WT_UTIL_PLACE_FAR_NS);
}

uint64_t wt_util_place_word(uint32_t ns, uint64_t now)
{
	return (uint64_t)(uint32_t)(now / 1000000u) << 32 | ns;
}

uint32_t wt_util_place_word_ns(uint64_t word, uint64_t now)
{
	uint32_t age_ms = (uint32_t)(now / 1000000u) - (uint32_t)(word >> 32);

	if ((uint64_t)age_ms * 1000000u > WT_UTIL_PLACE_TTL_NS)
		return 0;
	return (uint32_t)word;
}

/* as wt_util_place_init leaves one */
static wt_util_place_t self = {.cur_min = NONE, .prev_min = NONE};

wt_util_place_t *wt_util_place_self(void)
{
	return &self;
}

int wt_util_place_far_now(void)
{
	uint64_t now = wt_util_time_ns();

	want_if_stale(&self, now);
	return wt_util_place_far(&self, now);
}

int wt_util_place_near_any_now(void)
{
	uint64_t now = wt_util_time_ns();

	want_if_stale(&self, now);
	return wt_util_place_near_any(&self, now);
}
