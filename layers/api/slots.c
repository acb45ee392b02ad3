/* Shared slot regions of communicators (layers/api). The channel hands out one slot area per
 * rank (shm); it is cut into regions, and a communicator whose ranks all have areas uses the
 * same region index on every member, agreed at creation: each rank offers the regions it
 * has free, the members take the lowest one all of them offered, and they start numbering
 * slot calls above the highest value any member's region held before (so nothing stale can
 * pass for a new call). A region whose communicator is gone stays out of use until every
 * member has released what we published in it. */
#include <stdlib.h>
#include <string.h>

#include "lib/util/log.h"
#include "layers/api/api_int.h"

struct wt_api_slot_quar {
	int n;
	int world[]; /* the members that may still read our region */
};

static uint8_t *area_of(wt_api_ctx_t *ctx, int world_rank)
{
	size_t bytes = 0;

	if (ctx->chan == NULL)
		return NULL;
	return wt_chan_slot_area(ctx->chan, world_rank, &bytes);
}

static void *region_of(wt_api_ctx_t *ctx, int world_rank, int region)
{
	uint8_t *a = area_of(ctx, world_rank);

	size_t stagger = (size_t)(world_rank % WT_API_SLOT_STAGGER_LINES) * 64;

	return a != NULL ? a + (size_t)region * WT_API_SLOT_SPACING + stagger : NULL;
}

void wt_api_slots_init(wt_api_ctx_t *ctx)
{
	size_t bytes = 0, n;

	ctx->slot_nregions = 0;
	if (ctx->chan == NULL || wt_chan_slot_area(ctx->chan, ctx->rank, &bytes) == NULL)
		return;
	if (wt_sched_slot_capacity(WT_API_SLOT_REGION) == 0)
		return;
	n = bytes / WT_API_SLOT_SPACING;
	ctx->slot_nregions = (int)(n > WT_API_SLOT_MAX_REGIONS ? WT_API_SLOT_MAX_REGIONS : n);
	WT_DEBUG("rank %d: %d shared slot regions of %zu bytes", ctx->rank, ctx->slot_nregions,
		 WT_API_SLOT_REGION);
}

static uint64_t region_bit(int region)
{
	return (uint64_t)1 << region;
}

/* Every world rank of the list has an area we can read (and we have one). */
static int all_reachable(wt_api_ctx_t *ctx, const int *world, int n)
{
	if (ctx->slot_nregions == 0 || n < 2)
		return 0;
	for (int i = 0; i < n; i++)
		if (area_of(ctx, world[i]) == NULL)
			return 0;
	return 1;
}

/* Every member's region `region` as mapped here, into comm->slot_regions; -1 (nothing
 * kept) when out of memory or a member has no area. Nothing can fail after this. */
static int regions_of(weft_comm_t *comm, int region)
{
	void **regions = malloc((size_t)comm->size * sizeof(*regions));

	if (regions == NULL)
		return -1;
	for (int r = 0; r < comm->size; r++) {
		regions[r] = region_of(comm->ctx, comm->world[r], region);
		if (regions[r] == NULL) {
			free(regions);
			return -1;
		}
	}
	comm->slot_regions = regions;
	return region;
}

/* Lock held; comm->slot_regions is set. */
static void attach(weft_comm_t *comm, int region, uint64_t base)
{
	wt_api_ctx_t *ctx = comm->ctx;

	size_t cap = wt_sched_slot_capacity(WT_API_SLOT_REGION);
	size_t core = cap < WT_SCHED_SLOT_CORE_BYTES ? cap : WT_SCHED_SLOT_CORE_BYTES;

	/* With a core per rank the message algorithms pipeline large calls and the slots do
	 * not: the whole slot only where ranks share cores (every rank of the host sees the same
	 * counts, so the members agree). */
	comm->slot_bytes = ctx->oversubscribed ? cap : core;
	/* What calls of up to 256 KiB touch is warmed now, the rest of a slot the first time a
	 * call needs it (net_slots): the rings' first laps would otherwise fault in the pages
	 * of each slot call by call (up to 64 pages per peer and 256 KiB, a few ms in all per
	 * call at 4 ranks). */
	comm->slot_warm = core;
	wt_sched_slot_reset(comm->slot_regions[comm->rank], WT_API_SLOT_REGION, base,
			    comm->slot_warm);
	for (int r = 0; r < comm->size; r++)
		if (r != comm->rank)
			(void)wt_sched_slot_touch(comm->slot_regions[r], WT_API_SLOT_REGION,
						  comm->slot_warm);
	comm->slot_region = region;
	for (int ring = 0; ring < WT_SCHED_RINGS; ring++)
		comm->slot_seq[ring] = base;
	memset(&comm->slot_stores, 0, sizeof(comm->slot_stores));
	comm->slot_stores.forced = ctx->cfg.shm_stores;
	ctx->slot_used |= region_bit(region);
	/* A member that already waits for our first release finds it now. */
	wt_chan_slot_wake(ctx->chan, comm->world, comm->size);
}

weft_status_t wt_api_slots_world(weft_comm_t *world)
{
	wt_api_ctx_t *ctx = world->ctx;

	world->slot_region = -1;
	if (!all_reachable(ctx, world->world, world->size))
		return WEFT_OK;
	/* Every rank decides alone here, so none may fall back on its own: out of memory
	 * fails the world instead. */
	if (regions_of(world, 0) < 0) {
		WT_ERROR("rank %d: out of memory for the world's shared slot regions", ctx->rank);
		return WEFT_ERR_NO_MEMORY;
	}
	/* Fresh segments are zero everywhere: numbering from 2 is above anything in them. */
	pthread_mutex_lock(&ctx->lock);
	attach(world, 0, 2);
	pthread_mutex_unlock(&ctx->lock);
	return WEFT_OK;
}

/* A region whose communicator is gone is free once every listed member has released what
 * we published in it (or reset its own region since, which it does only after it released
 * ours: see the file comment). Lock held. */
static int quarantine_over(wt_api_ctx_t *ctx, int region)
{
	struct wt_api_slot_quar *q = ctx->slot_quar[region];
	void *own = region_of(ctx, ctx->rank, region);

	for (int i = 0; q != NULL && i < q->n; i++) {
		void *peer = region_of(ctx, q->world[i], region);

		if (peer != NULL && own != NULL &&
		    !wt_sched_slot_released(peer, own, WT_API_SLOT_REGION))
			return 0;
	}
	free(q);
	ctx->slot_quar[region] = NULL;
	return 1;
}

uint64_t wt_api_slots_offer(wt_api_ctx_t *ctx)
{
	uint64_t offer = 0;

	pthread_mutex_lock(&ctx->lock);
	for (int k = 0; k < ctx->slot_nregions; k++) {
		uint64_t bit = region_bit(k);

		if ((ctx->slot_used | ctx->slot_offered) & bit)
			continue;
		if (ctx->slot_quar[k] != NULL && !quarantine_over(ctx, k))
			continue;
		offer |= bit;
	}
	ctx->slot_offered |= offer;
	pthread_mutex_unlock(&ctx->lock);
	return offer;
}

int wt_api_slots_candidate(weft_comm_t *comm, uint64_t offers, uint64_t *hw)
{
	wt_api_ctx_t *ctx = comm->ctx;
	int k;

	*hw = 0;
	if (offers == 0 || !all_reachable(ctx, comm->world, comm->size))
		return -1;
	k = __builtin_ctzll(offers);
	if (k >= ctx->slot_nregions || regions_of(comm, k) < 0)
		return -1;
	*hw = wt_sched_slot_high_water(comm->slot_regions[comm->rank], WT_API_SLOT_REGION);
	return k;
}

void wt_api_slots_attach(weft_comm_t *comm, int region, uint64_t base)
{
	wt_api_ctx_t *ctx = comm->ctx;

	if (region < 0 || comm->slot_regions == NULL) {
		free(comm->slot_regions);
		comm->slot_regions = NULL;
		return;
	}
	pthread_mutex_lock(&ctx->lock);
	attach(comm, region, base);
	pthread_mutex_unlock(&ctx->lock);
}

void wt_api_slots_unoffer(wt_api_ctx_t *ctx, uint64_t offer)
{
	pthread_mutex_lock(&ctx->lock);
	ctx->slot_offered &= ~offer;
	pthread_mutex_unlock(&ctx->lock);
}

void wt_api_slots_detach(weft_comm_t *comm)
{
	wt_api_ctx_t *ctx = comm->ctx;
	struct wt_api_slot_quar *q;
	int k = comm->slot_region;

	if (k < 0 || comm->slot_regions == NULL)
		return;
	q = malloc(sizeof(*q) + (size_t)comm->size * sizeof(int));
	pthread_mutex_lock(&ctx->lock);
	ctx->slot_used &= ~region_bit(k);
	if (q != NULL) {
		q->n = 0;
		for (int r = 0; r < comm->size; r++)
			if (r != comm->rank)
				q->world[q->n++] = comm->world[r];
		free(ctx->slot_quar[k]);
		ctx->slot_quar[k] = q;
	} else {
		/* Cannot remember who may still read: never reuse the region. */
		ctx->slot_used |= region_bit(k);
	}
	pthread_mutex_unlock(&ctx->lock);
	free(comm->slot_regions);
	comm->slot_regions = NULL;
	comm->slot_region = -1;
	comm->slot_bytes = 0;
}

void wt_api_slots_release(wt_api_ctx_t *ctx)
{
	for (int k = 0; k < WT_API_SLOT_MAX_REGIONS; k++) {
		free(ctx->slot_quar[k]);
		ctx->slot_quar[k] = NULL;
	}
}
