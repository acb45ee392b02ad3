/* Near or far cores, from stamps on large frames and slots (lib/util/place.h). */
#include <stdint.h>
#include <string.h>

#include "lib/util/place.h"
#include "lib/util/time.h"

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
	atomic_init(&p->busy, 0);
	memset(p->win, 0, sizeof(p->win));
	memset(p->sorted, 0, sizeof(p->sorted));
	p->n = 0;
	p->next = 0;
	atomic_init(&p->est, 0);
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

/* The window takes v, in place of its oldest sample when full (p->busy held): win keeps the
 * arrival order, sorted the same values ascending. Plain loops over at most 32 values: a
 * sample costs 10-20 ns so, where two memmoves made it 60. */
static void window_add(wt_util_place_t *p, uint32_t v)
{
	uint32_t n = p->n, i;

	if (n == WT_UTIL_PLACE_WINDOW) {
		uint32_t old = p->win[p->next];

		for (i = 0; i < n && p->sorted[i] != old; i++)
			;
		if (i == n) {
			/* not there: the window would lose its order, so it starts over */
			n = 0;
			p->next = 0;
		} else {
			for (; i + 1 < n; i++)
				p->sorted[i] = p->sorted[i + 1];
			n--;
		}
	}
	for (i = n; i > 0 && p->sorted[i - 1] > v; i--)
		p->sorted[i] = p->sorted[i - 1];
	p->sorted[i] = v;
	p->n = n + 1;
	p->win[p->next] = v;
	p->next = (p->next + 1) % WT_UTIL_PLACE_WINDOW;
}

void wt_util_place_sample(wt_util_place_t *p, uint64_t ns, uint64_t now)
{
	uint32_t own, pub, med;
	uint64_t last;

	if (ns > WT_UTIL_PLACE_MAX_SAMPLE_NS)
		return;
	/* another thread adding one: this sample is dropped */
	if (atomic_exchange_explicit(&p->busy, 1, memory_order_acquire))
		return;
	/* after a pause longer than the TTL the vCPUs may have moved: start over */
	last = ld64(&p->last_ns);
	if (last != 0 && now > last && now - last > WT_UTIL_PLACE_TTL_NS) {
		p->n = 0;
		p->next = 0;
	}
	window_add(p, (uint32_t)ns);
	med = p->sorted[(p->n - 1) / 2];
	atomic_store_explicit(&p->est,
			      p->n < WT_UTIL_PLACE_MIN_SAMPLES ? 0
			      : med			       ? med
							       : 1,
			      memory_order_relaxed);
	atomic_store_explicit(&p->last_ns, now, memory_order_relaxed);
	atomic_store_explicit(&p->busy, 0, memory_order_release);
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

	if (last == 0 || now - last > WT_UTIL_PLACE_TTL_NS)
		return 0;
	return ld32(&p->est);
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

/* as wt_util_place_init leaves one: all zero */
static wt_util_place_t self;

wt_util_place_t *wt_util_place_self(void)
{
	return &self;
}

void wt_util_place_self_touch(void)
{
	if (atomic_exchange_explicit(&self.busy, 1, memory_order_acquire))
		return;
	if (self.n == 0) {
		memset(self.win, 0, sizeof(self.win));
		memset(self.sorted, 0, sizeof(self.sorted));
	}
	atomic_store_explicit(&self.busy, 0, memory_order_release);
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
