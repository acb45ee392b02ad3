/* The plan cache (layers/schedule): plans keyed by every field of wt_sched_args_t plus
 * the algorithm, hashed, with least-recently-used eviction. Plans are refcounted, so an
 * evicted plan lives on until the last execution using it drops its reference. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "layers/schedule/plan.h"
#include "lib/util/log.h"

typedef struct cache_entry {
	wt_sched_args_t key;
	const wt_sched_algo_t *algo;
	uint64_t hash;
	wt_sched_plan_t *plan;
	struct cache_entry *prev, *next; /* LRU list, most recent at head */
	struct cache_entry *chain;	 /* hash bucket */
} cache_entry_t;

struct wt_sched_cache {
	pthread_mutex_t lock;
	size_t cap, n, nbuckets;
	cache_entry_t **buckets;
	cache_entry_t *head, *tail;
	size_t hits, misses;
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	return h;
}

/* Field by field: the caller's struct may carry padding garbage. */
static uint64_t key_hash(const wt_sched_args_t *a, const wt_sched_algo_t *algo)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = mix(h, (uint64_t)a->coll);
	h = mix(h, (uint64_t)a->count);
	h = mix(h, (uint64_t)a->dtype);
	h = mix(h, (uint64_t)a->op);
	h = mix(h, (uint64_t)(uint32_t)a->root);
	h = mix(h, (uint64_t)(uint32_t)a->rank);
	h = mix(h, (uint64_t)(uint32_t)a->size);
	h = mix(h, (uint64_t)(a->in_place != 0));
	h = mix(h, (uint64_t)a->seg_bytes);
	h = mix(h, (uint64_t)(uint32_t)a->peer);
	h = mix(h, (uint64_t)(uint32_t)a->compress);
	h = mix(h, (uint64_t)a->slot_bytes);
	return mix(h, (uint64_t)(uintptr_t)algo);
}

static int key_equal(const cache_entry_t *e, const wt_sched_args_t *a, const wt_sched_algo_t *algo)
{
	const wt_sched_args_t *k = &e->key;

	return e->algo == algo && k->coll == a->coll && k->count == a->count &&
	       k->dtype == a->dtype && k->op == a->op && k->root == a->root && k->rank == a->rank &&
	       k->size == a->size && !k->in_place == !a->in_place && k->seg_bytes == a->seg_bytes &&
	       k->peer == a->peer && k->compress == a->compress && k->slot_bytes == a->slot_bytes;
}

wt_sched_cache_t *wt_sched_cache_new(size_t cap)
{
	wt_sched_cache_t *c = calloc(1, sizeof(*c));

	if (!c)
		return NULL;
	c->cap = cap;
	c->nbuckets = 16;
	while (c->nbuckets < cap * 2 && c->nbuckets < ((size_t)1 << 20))
		c->nbuckets *= 2;
	c->buckets = calloc(c->nbuckets, sizeof(*c->buckets));
	if (!c->buckets || pthread_mutex_init(&c->lock, NULL)) {
		free(c->buckets);
		free(c);
		return NULL;
	}
	return c;
}

static void lru_unlink(wt_sched_cache_t *c, cache_entry_t *e)
{
	if (e->prev)
		e->prev->next = e->next;
	else
		c->head = e->next;
	if (e->next)
		e->next->prev = e->prev;
	else
		c->tail = e->prev;
	e->prev = e->next = NULL;
}

static void lru_push_front(wt_sched_cache_t *c, cache_entry_t *e)
{
	e->prev = NULL;
	e->next = c->head;
	if (c->head)
		c->head->prev = e;
	c->head = e;
	if (!c->tail)
		c->tail = e;
}

static cache_entry_t **bucket_of(wt_sched_cache_t *c, uint64_t hash)
{
	return &c->buckets[hash & (c->nbuckets - 1)];
}

static void cache_evict(wt_sched_cache_t *c, cache_entry_t *e)
{
	cache_entry_t **pp = bucket_of(c, e->hash);

	while (*pp != e)
		pp = &(*pp)->chain;
	*pp = e->chain;
	lru_unlink(c, e);
	c->n--;
	wt_sched_plan_unref(e->plan);
	free(e);
}

static cache_entry_t *cache_find(wt_sched_cache_t *c, const wt_sched_args_t *a,
				 const wt_sched_algo_t *algo, uint64_t hash)
{
	for (cache_entry_t *e = *bucket_of(c, hash); e; e = e->chain)
		if (e->hash == hash && key_equal(e, a, algo))
			return e;
	return NULL;
}

/* Insert a built plan (taking a reference for the cache); failure to cache is not an
 * error, the caller still gets its plan. */
static void cache_insert(wt_sched_cache_t *c, const wt_sched_args_t *a, const wt_sched_algo_t *algo,
			 uint64_t hash, wt_sched_plan_t *p)
{
	cache_entry_t *e, **b;

	if (!c->cap)
		return;
	e = calloc(1, sizeof(*e));
	if (!e)
		return;
	while (c->n >= c->cap)
		cache_evict(c, c->tail);
	e->key = *a;
	e->algo = algo;
	e->hash = hash;
	e->plan = p;
	wt_sched_plan_ref(p);
	b = bucket_of(c, hash);
	e->chain = *b;
	*b = e;
	lru_push_front(c, e);
	c->n++;
}

weft_status_t wt_sched_cache_get(wt_sched_cache_t *c, const wt_sched_args_t *args,
				 const wt_sched_algo_t *algo, wt_sched_plan_t **out, char *err,
				 size_t errlen)
{
	cache_entry_t *e;
	weft_status_t st;
	uint64_t hash;

	if (!c || !args || !out)
		return WEFT_ERR_INVALID_ARG;
	/* Key on the algorithm actually used so forced and default picks share plans. */
	if (!algo)
		algo = wt_sched_algo_select(args, NULL);
	/* Vector collectives depend on the caller's arrays, which the key cannot hold. */
	if (args->coll == WT_COLL_ALLTOALLV)
		return wt_sched_plan_build(args, algo, out, err, errlen);
	hash = key_hash(args, algo);
	pthread_mutex_lock(&c->lock);
	e = cache_find(c, args, algo, hash);
	if (e) {
		c->hits++;
		lru_unlink(c, e);
		lru_push_front(c, e);
		wt_sched_plan_ref(e->plan);
		*out = e->plan;
		pthread_mutex_unlock(&c->lock);
		return WEFT_OK;
	}
	c->misses++;
	st = wt_sched_plan_build(args, algo, out, err, errlen);
	if (!st)
		cache_insert(c, args, algo, hash, *out);
	pthread_mutex_unlock(&c->lock);
	return st;
}

size_t wt_sched_cache_hits(const wt_sched_cache_t *c)
{
	return c ? c->hits : 0;
}

size_t wt_sched_cache_misses(const wt_sched_cache_t *c)
{
	return c ? c->misses : 0;
}

void wt_sched_cache_free(wt_sched_cache_t *c)
{
	if (!c)
		return;
	while (c->head)
		cache_evict(c, c->head);
	pthread_mutex_destroy(&c->lock);
	free(c->buckets);
	free(c);
}
