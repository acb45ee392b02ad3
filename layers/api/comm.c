/* Communicators (layers/api): split, create_group and dup over the parent's context, abort,
 * background errors (a peer that failed), and the WEFT_CHECK argument check. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "lib/util/dtype.h"
#include "lib/util/log.h"
#include "lib/util/time.h"
#include "layers/api/api_int.h"

/* Ids are 16 bits of every tag; 0 is never used. */
#define WT_API_COMM_ID_MAX 0xffffu
/* Attempts at agreeing on ids when creations on one context race from several threads. */

enum { WT_API_MAKE_SPLIT = 1, WT_API_MAKE_GROUP = 2 };

/* What each rank of the parent contributes to a creation (exchanged by allgather). */
typedef struct {
	int32_t kind; /* WT_API_MAKE_* */
	int32_t color;
	int32_t key;
	int32_t n;	     /* create_group: length of the list */
	uint32_t valid;	     /* create_group: the list passed the local checks */
	uint64_t hash;	     /* create_group: of n and the list */
	uint64_t slot_offer; /* shared slot regions this rank has free (slots.c) */
} wt_api_make_rec_t;

/* The WEFT_CHECK signature of one collective call. */
typedef struct {
	uint32_t coll;
	uint32_t dtype;
	uint32_t op;
	int32_t root;
	uint32_t in_place;
	uint32_t seq;
	uint64_t count;
	uint32_t mem; /* the buffers are weft_mem (allreduce may then go direct) */
	uint32_t reserved;
} wt_api_sig_t;

/* ---- the context's communicators and each communicator's requests ---- */

static void register_locked(weft_comm_t *comm)
{
	wt_api_ctx_t *ctx = comm->ctx;

	if (comm->registered)
		return;
	comm->cnext = ctx->comms;
	comm->cprev = NULL;
	if (ctx->comms != NULL)
		ctx->comms->cprev = comm;
	ctx->comms = comm;
	comm->registered = 1;
}

void wt_api_comm_register(weft_comm_t *comm)
{
	pthread_mutex_lock(&comm->ctx->lock);
	register_locked(comm);
	pthread_mutex_unlock(&comm->ctx->lock);
}

void wt_api_comm_unregister(weft_comm_t *comm)
{
	wt_api_ctx_t *ctx = comm->ctx;

	pthread_mutex_lock(&ctx->lock);
	if (comm->registered) {
		if (comm->cprev != NULL)
			comm->cprev->cnext = comm->cnext;
		else
			ctx->comms = comm->cnext;
		if (comm->cnext != NULL)
			comm->cnext->cprev = comm->cprev;
		comm->registered = 0;
	}
	/* Requests the caller never finished keep pointing here: they must not unlink from a
	 * freed list later. */
	for (weft_request_t *r = comm->reqs; r != NULL; r = r->lnext)
		r->linked = 0;
	comm->reqs = NULL;
	pthread_mutex_unlock(&ctx->lock);
}

void wt_api_comm_link_req_locked(weft_comm_t *comm, weft_request_t *req)
{
	req->lprev = NULL;
	req->lnext = comm->reqs;
	if (comm->reqs != NULL)
		comm->reqs->lprev = req;
	comm->reqs = req;
	req->linked = 1;
}

void wt_api_comm_unlink_req(weft_request_t *req)
{
	weft_comm_t *comm = req->comm;

	pthread_mutex_lock(&comm->ctx->lock);
	if (req->linked) {
		if (req->lprev != NULL)
			req->lprev->lnext = req->lnext;
		else
			comm->reqs = req->lnext;
		if (req->lnext != NULL)
			req->lnext->lprev = req->lprev;
		req->linked = 0;
	}
	pthread_mutex_unlock(&comm->ctx->lock);
}

/* Completes every unfinished request of comm with st; waiters wake on done_cv. */
static void cancel_pending_locked(weft_comm_t *comm, weft_status_t st, const char *msg)
{
	for (weft_request_t *r = comm->reqs; r != NULL; r = r->lnext) {
		if (!atomic_load(&r->done) && r->exec != NULL)
			wt_sched_exec_cancel(r->exec, st, msg);
	}
}

weft_status_t wt_api_comm_usable_locked(weft_comm_t *comm)
{
	if (!comm->registered)
		register_locked(comm);
	if (comm->aborted) {
		wt_api_set_error(comm,
				 "communicator %u was aborted (weft_comm_abort): only "
				 "weft_comm_destroy is allowed",
				 (unsigned)comm->id);
		return WEFT_ERR_ABORTED;
	}
	if (comm->async_err != WEFT_OK) {
		wt_api_set_error(comm, "%s", comm->fail_msg);
		return comm->async_err;
	}
	return WEFT_OK;
}

static weft_status_t comm_usable(weft_comm_t *comm)
{
	weft_status_t st;

	pthread_mutex_lock(&comm->ctx->lock);
	st = wt_api_comm_usable_locked(comm);
	pthread_mutex_unlock(&comm->ctx->lock);
	return st;
}

static int comm_rank_of(const weft_comm_t *comm, int world_rank)
{
	for (int r = 0; r < comm->size; r++) {
		if (comm->world[r] == world_rank)
			return r;
	}
	return -1;
}

/* The channel declared a world rank failed (inside progress, so ctx->lock is held): every
 * communicator that contains it is broken, and its pending requests fail now, so ranks
 * that were not waiting on the dead one directly do not wait for their deadline. */
void wt_api_on_peer_fail(void *arg, int peer, weft_status_t st, const char *why)
{
	wt_api_ctx_t *ctx = arg;

	/* No communicator left: the last destroy is under way and peers leaving is normal. */
	if (ctx->comms == NULL) {
		WT_DEBUG("rank %d: world rank %d left (%s)", ctx->rank, peer,
			 why != NULL ? why : weft_strerror(st));
		return;
	}
	ctx->broken = 1;
	WT_WARN("rank %d: world rank %d failed (%s: %s); failing its communicators", ctx->rank,
		peer, weft_strerror(st), why != NULL && why[0] != '\0' ? why : "no detail");
	for (weft_comm_t *c = ctx->comms; c != NULL; c = c->cnext) {
		int r = comm_rank_of(c, peer);
		if (r < 0)
			continue;
		if (c->async_err == WEFT_OK) {
			c->async_err = WEFT_ERR_PEER_FAILED;
			snprintf(c->fail_msg, sizeof(c->fail_msg),
				 "rank %d (world rank %d) of communicator %u failed: %s", r, peer,
				 (unsigned)c->id,
				 why != NULL && why[0] != '\0' ? why : weft_strerror(st));
		}
		cancel_pending_locked(c, WEFT_ERR_PEER_FAILED, c->fail_msg);
	}
}

WEFT_API weft_status_t weft_comm_abort(weft_comm_t *comm)
{
	wt_api_ctx_t *ctx;

	if (comm == NULL)
		return WEFT_ERR_INVALID_ARG;
	ctx = comm->ctx;
	pthread_mutex_lock(&ctx->lock);
	register_locked(comm);
	/* The last destroy on this context must not wait for peers at the store barrier. */
	ctx->broken = 1;
	comm->aborted = 1;
	if (comm->async_err == WEFT_OK)
		comm->async_err = WEFT_ERR_ABORTED;
	cancel_pending_locked(comm, WEFT_ERR_ABORTED, "communicator aborted (weft_comm_abort)");
	pthread_mutex_unlock(&ctx->lock);
	wt_api_wake(ctx);
	return WEFT_OK;
}

WEFT_API weft_status_t weft_comm_get_async_error(weft_comm_t *comm, weft_status_t *err)
{
	if (comm == NULL || err == NULL)
		return WEFT_ERR_INVALID_ARG;
	pthread_mutex_lock(&comm->ctx->lock);
	*err = comm->async_err;
	pthread_mutex_unlock(&comm->ctx->lock);
	return WEFT_OK;
}

/* The last destroy of a context that saw an abort or a failed peer: announce this rank at
 * the store barrier (so ranks that destroy normally still meet it) without waiting for
 * anyone. Rank 0, whose store the others read, lingers at most a moment. */
void wt_api_fini_broken(wt_api_ctx_t *ctx)
{
	uint64_t deadline;
	int64_t n = 0;
	weft_status_t st;

	st = wt_boot_store_add(ctx->store, "fini/arrived", 1, &n);
	if (st == WEFT_OK && n == ctx->size)
		st = wt_boot_store_set(ctx->store, "fini/done", "1", 1);
	if (st == WEFT_OK)
		st = wt_boot_store_add(ctx->store, "fini/left", 1, &n);
	deadline = wt_util_deadline_in(1);
	while (st == WEFT_OK && ctx->server != NULL && n < ctx->size &&
	       !wt_util_deadline_passed(deadline)) {
		wt_util_sleep_ns(5000000);
		st = wt_boot_store_add(ctx->store, "fini/left", 0, &n);
	}
	if (st != WEFT_OK)
		WT_DEBUG("rank %d: destroy after a failure: store barrier skipped (%s)", ctx->rank,
			 weft_strerror(st));
}

int wt_api_ctx_broken(wt_api_ctx_t *ctx)
{
	int b;

	pthread_mutex_lock(&ctx->lock);
	b = ctx->broken;
	pthread_mutex_unlock(&ctx->lock);
	return b;
}

/* ---- internal collectives ---- */

/* A blocking allgather of bytes per rank over comm through the ordinary plan machinery
 * (it takes a collective sequence number like any call). */
static weft_status_t comm_allgather(weft_comm_t *comm, const char *what, const void *mine,
				    void *all, size_t bytes)
{
	char msg[WT_API_ERR_LEN];
	wt_sched_args_t args;
	weft_request_t *r = NULL;
	weft_status_t st;

	memset(&args, 0, sizeof(args));
	args.coll = WT_COLL_ALLGATHER;
	args.count = bytes;
	args.dtype = WEFT_UINT8;
	args.op = WEFT_SUM;
	args.rank = comm->rank;
	args.size = comm->size;
	args.seg_bytes = comm->ctx->cfg.seg_bytes;
	args.slot_bytes = comm->slot_bytes;
	st = wt_api_coll_start(comm, &args, mine, all, 0, 0, &r);
	if (st == WEFT_OK)
		st = wt_api_wait_own(&r);
	if (st != WEFT_OK) {
		snprintf(msg, sizeof(msg), "%s", comm->last_error);
		wt_api_set_error(comm, "%s: %s", what, msg);
	}
	return st;
}

/* ---- split / create_group / dup ---- */

static uint64_t list_hash(const int *ranks, int n)
{
	uint64_t h = 0xcbf29ce484222325ull;

	h = (h ^ (uint32_t)n) * 0x100000001b3ull;
	for (int i = 0; i < n; i++)
		h = (h ^ (uint32_t)ranks[i]) * 0x100000001b3ull;
	return h;
}

/* The local checks of a create_group list; a bad list still takes part in the exchange so
 * that no other rank waits for it. */
static int group_list_ok(weft_comm_t *comm, const int *ranks, int n, char *why, size_t len)
{
	char *seen;

	if (ranks == NULL || n < 1 || n > comm->size) {
		snprintf(why, len, "%s with n = %d (must be 1..%d)",
			 ranks == NULL ? "ranks is NULL" : "bad length", n, comm->size);
		return 0;
	}
	seen = calloc((size_t)comm->size, 1);
	if (seen == NULL) {
		snprintf(why, len, "out of memory");
		return 0;
	}
	for (int i = 0; i < n; i++) {
		if (ranks[i] < 0 || ranks[i] >= comm->size) {
			snprintf(why, len, "ranks[%d] = %d is outside the communicator (size %d)",
				 i, ranks[i], comm->size);
			free(seen);
			return 0;
		}
		if (seen[ranks[i]]) {
			snprintf(why, len, "rank %d is listed twice", ranks[i]);
			free(seen);
			return 0;
		}
		seen[ranks[i]] = 1;
	}
	free(seen);
	return 1;
}

/* Every rank reaches the same verdict from the same records. */
static weft_status_t check_recs(weft_comm_t *comm, const char *what, const wt_api_make_rec_t *recs)
{
	static const char *const kind_name[] = {"?", "weft_comm_split", "weft_comm_create_group"};

	for (int r = 1; r < comm->size; r++) {
		const wt_api_make_rec_t *a = &recs[0], *b = &recs[r];
		if (b->kind != a->kind) {
			wt_api_set_error(comm, "%s: rank %d called %s, rank 0 %s", what, r,
					 kind_name[b->kind >= 1 && b->kind <= 2 ? b->kind : 0],
					 kind_name[a->kind >= 1 && a->kind <= 2 ? a->kind : 0]);
			return WEFT_ERR_MISMATCH;
		}
		if (a->kind == WT_API_MAKE_GROUP &&
		    (b->valid != a->valid || b->n != a->n || b->hash != a->hash)) {
			wt_api_set_error(comm,
					 "%s: rank %d passed a different rank list (n = %d%s) than "
					 "rank 0 (n = %d%s)",
					 what, r, (int)b->n, b->valid ? "" : ", invalid", (int)a->n,
					 a->valid ? "" : ", invalid");
			return WEFT_ERR_MISMATCH;
		}
	}
	return WEFT_OK;
}

typedef struct {
	int32_t key;
	int rank;
} wt_api_member_t;

static int member_cmp(const void *pa, const void *pb)
{
	const wt_api_member_t *a = pa, *b = pb;

	if (a->key != b->key)
		return a->key < b->key ? -1 : 1;
	return a->rank < b->rank ? -1 : a->rank > b->rank;
}

static int int_cmp(const void *pa, const void *pb)
{
	int a = *(const int *)pa, b = *(const int *)pb;

	return a < b ? -1 : a > b;
}

/* The new communicator of this rank, not yet registered: members are parent ranks in the
 * new order. NULL when out of memory. */
static weft_comm_t *comm_new(weft_comm_t *parent, const int *members, int n, int myidx)
{
	weft_comm_t *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->world = malloc(sizeof(int) * (size_t)n);
	if (c->world == NULL) {
		free(c);
		return NULL;
	}
	for (int i = 0; i < n; i++)
		c->world[i] = parent->world[members[i]];
	c->ctx = parent->ctx;
	c->rank = myidx;
	c->size = n;
	c->slot_region = -1;
	c->cost = wt_api_comm_cost(c->ctx, c->world, n);
	return c;
}

static void comm_free_unused(weft_comm_t *c)
{
	if (c == NULL)
		return;
	free(c->slot_regions);
	free(c->world);
	free(c);
}

/* Members of this rank's color, ordered by key then parent rank; *myidx its place. For
 * create_group the list itself. Returns the count, 0 when this rank is left out, -1 when
 * out of memory. */
static int members_of(weft_comm_t *parent, const wt_api_make_rec_t *recs, const int *list,
		      int **out, int *myidx)
{
	int mycolor = recs[parent->rank].color, n = 0;
	wt_api_member_t *m;
	int *ids;

	*out = NULL;
	*myidx = -1;
	if (mycolor < 0)
		return 0;
	if (list != NULL) {
		n = recs[parent->rank].n;
		ids = malloc(sizeof(int) * (size_t)n);
		if (ids == NULL)
			return -1;
		for (int i = 0; i < n; i++) {
			ids[i] = list[i];
			if (list[i] == parent->rank)
				*myidx = i;
		}
		*out = ids;
		return n;
	}
	m = malloc(sizeof(*m) * (size_t)parent->size);
	ids = malloc(sizeof(int) * (size_t)parent->size);
	if (m == NULL || ids == NULL) {
		free(m);
		free(ids);
		return -1;
	}
	for (int r = 0; r < parent->size; r++) {
		if (recs[r].color != mycolor)
			continue;
		m[n].key = recs[r].key;
		m[n].rank = r;
		n++;
	}
	qsort(m, (size_t)n, sizeof(*m), member_cmp);
	for (int i = 0; i < n; i++) {
		ids[i] = m[i].rank;
		if (m[i].rank == parent->rank)
			*myidx = i;
	}
	free(m);
	*out = ids;
	return n;
}

/* The number of ids a creation takes (distinct colors) and this rank's offset among them;
 * the ids themselves come from the store (take_ids). */
static weft_status_t pick_ids(weft_comm_t *parent, const wt_api_make_rec_t *recs, int *ncolors,
			      int *myoff)
{
	int *colors = malloc(sizeof(int) * (size_t)parent->size);
	int mycolor = recs[parent->rank].color, n = 0, k = 0;

	if (colors == NULL)
		return WEFT_ERR_NO_MEMORY;
	for (int r = 0; r < parent->size; r++) {
		if (recs[r].color >= 0)
			colors[n++] = recs[r].color;
	}
	qsort(colors, (size_t)n, sizeof(int), int_cmp);
	*myoff = -1;
	for (int i = 0; i < n; i++) {
		if (i > 0 && colors[i] == colors[i - 1])
			continue;
		if (colors[i] == mycolor)
			*myoff = k;
		k++;
	}
	free(colors);
	*ncolors = k;
	return WEFT_OK;
}

enum { WT_API_VOTE_OK = 1, WT_API_VOTE_NOMEM = 2, WT_API_VOTE_NOIDS = 3 };

typedef struct {
	uint32_t first; /* rank 0's: the first id the store handed out */
	uint32_t vote;
	int32_t slot_region; /* the shared slot region this rank can use, -1 none */
	uint32_t pad;
	uint64_t slot_hw; /* that region's highest call number so far */
} wt_api_vote_t;

/* Ids come from one counter in the job's rendezvous store, taken atomically, so
 * creations racing on other threads or other communicators can never get the same id.
 * The world communicator is id 1; the store's counter starts at 0. */
static weft_status_t take_ids(weft_comm_t *parent, const char *what, int k, uint32_t *first)
{
	wt_api_ctx_t *ctx = parent->ctx;
	int64_t next = 0;
	weft_status_t st;

	if (ctx->store == NULL) { /* a world of one: no one to collide with */
		pthread_mutex_lock(&ctx->lock);
		*first = ctx->next_comm_id;
		ctx->next_comm_id = (uint16_t)(*first + (uint32_t)k);
		pthread_mutex_unlock(&ctx->lock);
		return *first + (uint32_t)k > WT_API_COMM_ID_MAX ? WEFT_ERR_UNSUPPORTED : WEFT_OK;
	}
	pthread_mutex_lock(&ctx->store_lock);
	st = wt_boot_store_add(ctx->store, "comm/ids", k, &next);
	pthread_mutex_unlock(&ctx->store_lock);
	if (st != WEFT_OK) {
		wt_api_set_error(parent, "%s: taking %d communicator ids from the store failed: %s",
				 what, k, weft_strerror(st));
		return st;
	}
	*first = (uint32_t)(next - k) + 2;
	if (next < k || *first + (uint32_t)k > WT_API_COMM_ID_MAX) {
		wt_api_set_error(
		    parent,
		    "%s: communicator ids exhausted (%lld handed out; ids are 16 bits and "
		    "never reused)",
		    what, (long long)next);
		return WEFT_ERR_UNSUPPORTED;
	}
	return WEFT_OK;
}

/* The shared slot region the new communicator c could use: the lowest every member offered
 * (members are parent ranks), if all of them are reachable. */
static int slot_candidate(weft_comm_t *c, const wt_api_make_rec_t *recs, const int *members,
			  uint64_t *hw)
{
	uint64_t offers = ~(uint64_t)0;

	for (int i = 0; i < c->size; i++)
		offers &= recs[members[i]].slot_offer;
	return wt_api_slots_candidate(c, offers, hw);
}

/* Slots only if every member can use the same region; calls are numbered above every
 * member's high water mark, so nothing a region held before looks like a new call. */
static void slot_agree(weft_comm_t *c, const wt_api_vote_t *votes, const int *members)
{
	int region = votes[members[0]].slot_region;
	uint64_t hw = 0;

	for (int i = 0; i < c->size && region >= 0; i++) {
		const wt_api_vote_t *v = &votes[members[i]];

		if (v->slot_region != region)
			region = -1;
		hw = v->slot_hw > hw ? v->slot_hw : hw;
	}
	wt_api_slots_attach(c, region, hw + 2);
}

static weft_status_t comm_make(weft_comm_t *parent, const char *what, wt_api_make_rec_t *mine,
			       const int *list, weft_comm_t **out)
{
	wt_api_ctx_t *ctx = parent->ctx;
	wt_api_make_rec_t *recs = calloc((size_t)parent->size, sizeof(*recs));
	wt_api_vote_t *votes = calloc((size_t)parent->size, sizeof(*votes));
	wt_api_vote_t vote = {0, WT_API_VOTE_OK, -1, 0, 0};
	weft_comm_t *c = NULL;
	int *members = NULL, n = 0, myidx = -1, ncolors = 0, myoff = -1;
	weft_status_t st;

	if (recs == NULL || votes == NULL) {
		free(recs);
		free(votes);
		wt_api_set_error(parent, "%s: out of memory for %d records", what, parent->size);
		return WEFT_ERR_NO_MEMORY;
	}
	mine->slot_offer = wt_api_slots_offer(ctx);
	st = comm_allgather(parent, what, mine, recs, sizeof(*mine));
	if (st == WEFT_OK && !mine->valid)
		st = WEFT_ERR_INVALID_ARG; /* the caller names what is wrong */
	if (st == WEFT_OK)
		st = check_recs(parent, what, recs);
	if (st == WEFT_OK)
		st = pick_ids(parent, recs, &ncolors, &myoff);
	if (st != WEFT_OK)
		goto out;
	n = members_of(parent, recs, list, &members, &myidx);
	if (n > 0)
		c = comm_new(parent, members, n, myidx);
	if (n < 0 || (n > 0 && c == NULL))
		vote.vote = WT_API_VOTE_NOMEM;
	if (c != NULL)
		vote.slot_region = slot_candidate(c, recs, members, &vote.slot_hw);
	/* Rank 0 of the parent takes the block for every color; the second exchange hands
	 * its first id to everyone (and tells everyone of any rank that failed). */
	if (parent->rank == 0 && ncolors > 0 &&
	    take_ids(parent, what, ncolors, &vote.first) != WEFT_OK)
		vote.vote = WT_API_VOTE_NOIDS;
	st = comm_allgather(parent, what, &vote, votes, sizeof(vote));
	for (int r = 0; st == WEFT_OK && r < parent->size; r++) {
		if (votes[r].vote == WT_API_VOTE_NOMEM) {
			wt_api_set_error(parent, "%s: rank %d ran out of memory", what, r);
			st = WEFT_ERR_NO_MEMORY;
		} else if (votes[r].vote == WT_API_VOTE_NOIDS) {
			if (parent->rank != r)
				wt_api_set_error(parent,
						 "%s: rank %d could not take communicator ids "
						 "from the store",
						 what, r);
			st = WEFT_ERR_UNSUPPORTED;
		} else if (votes[r].vote != WT_API_VOTE_OK) {
			wt_api_set_error(parent, "%s: rank %d sent a bad vote %u", what, r,
					 (unsigned)votes[r].vote);
			st = WEFT_ERR_PROTOCOL;
		}
	}
	if (st == WEFT_OK && c != NULL) {
		slot_agree(c, votes, members);
		pthread_mutex_lock(&ctx->lock);
		c->id = (uint16_t)(votes[0].first + (uint32_t)myoff);
		ctx->ncomms++;
		register_locked(c);
		pthread_mutex_unlock(&ctx->lock);
		*out = c;
		c = NULL;
	}
out:
	wt_api_slots_unoffer(ctx, mine->slot_offer);
	if (st != WEFT_OK)
		WT_DEBUG("%s on rank %d: %s", what, parent->rank, parent->last_error);
	comm_free_unused(c);
	free(members);
	free(recs);
	free(votes);
	return st;
}

WEFT_API weft_status_t weft_comm_split(weft_comm_t *comm, int color, int key, weft_comm_t **newcomm)
{
	wt_api_make_rec_t mine;
	weft_status_t st;

	if (newcomm != NULL)
		*newcomm = NULL;
	if (comm == NULL || newcomm == NULL)
		return WEFT_ERR_INVALID_ARG;
	st = comm_usable(comm);
	if (st != WEFT_OK)
		return st;
	memset(&mine, 0, sizeof(mine));
	mine.kind = WT_API_MAKE_SPLIT;
	mine.color = color < 0 ? -1 : color;
	mine.key = key;
	mine.valid = 1;
	return comm_make(comm, "weft_comm_split", &mine, NULL, newcomm);
}

WEFT_API weft_status_t weft_comm_dup(weft_comm_t *comm, weft_comm_t **newcomm)
{
	if (comm == NULL)
		return WEFT_ERR_INVALID_ARG;
	return weft_comm_split(comm, 0, comm->rank, newcomm);
}

WEFT_API weft_status_t weft_comm_create_group(weft_comm_t *comm, const int *ranks, int n,
					      weft_comm_t **newcomm)
{
	const char *what = "weft_comm_create_group";
	char why[200] = "";
	wt_api_make_rec_t mine;
	weft_status_t st;

	if (newcomm != NULL)
		*newcomm = NULL;
	if (comm == NULL || newcomm == NULL)
		return WEFT_ERR_INVALID_ARG;
	st = comm_usable(comm);
	if (st != WEFT_OK)
		return st;
	memset(&mine, 0, sizeof(mine));
	mine.kind = WT_API_MAKE_GROUP;
	mine.color = -1;
	mine.valid = (uint32_t)group_list_ok(comm, ranks, n, why, sizeof(why));
	mine.n = mine.valid ? n : -1;
	if (mine.valid) {
		mine.hash = list_hash(ranks, n);
		for (int i = 0; i < n; i++) {
			if (ranks[i] == comm->rank)
				mine.color = 0;
		}
	}
	st = comm_make(comm, what, &mine, mine.valid ? ranks : NULL, newcomm);
	if (st == WEFT_ERR_INVALID_ARG)
		wt_api_set_error(comm, "%s on rank %d: %s", what, comm->rank, why);
	return st;
}

/* ---- WEFT_CHECK ---- */

static void sig_fill(wt_api_sig_t *s, const weft_comm_t *comm, const wt_sched_args_t *args)
{
	memset(s, 0, sizeof(*s));
	s->coll = (uint32_t)args->coll;
	s->dtype = (uint32_t)args->dtype;
	s->op = (uint32_t)args->op;
	s->root = args->root;
	s->in_place = (uint32_t)args->in_place;
	/* The check itself takes comm->seq; the collective the next one. */
	s->seq = comm->seq + 1;
	s->count = args->count;
	s->mem = (uint32_t)(args->mem != 0);
}

static const char *coll_name(uint32_t c)
{
	return c < WT_COLL_COUNT_ ? wt_sched_coll_name((wt_sched_coll_t)c)
				  : "an unknown collective";
}

static const char *dtype_name(uint32_t d)
{
	return d < WEFT_DTYPE_COUNT_ ? wt_util_dtype_name((weft_dtype_t)d) : "unknown";
}

static const char *op_name(uint32_t o)
{
	return o < WEFT_OP_COUNT_ ? wt_util_op_name((weft_op_t)o) : "unknown";
}

/* Describes how b (rank r) differs from a (rank 0); 0 when it does not. The in-place flag
 * is not compared: each rank chooses its own buffers. */
static int sig_diff(const wt_api_sig_t *a, const wt_api_sig_t *b, int r, char *buf, size_t len)
{
	if (b->coll != a->coll)
		snprintf(buf, len, "rank %d called %s, rank 0 %s", r, coll_name(b->coll),
			 coll_name(a->coll));
	else if (b->seq != a->seq)
		snprintf(buf, len, "rank %d is at collective #%u, rank 0 at #%u", r,
			 (unsigned)b->seq, (unsigned)a->seq);
	else if (b->count != a->count)
		snprintf(buf, len, "rank %d passed count %llu, rank 0 count %llu", r,
			 (unsigned long long)b->count, (unsigned long long)a->count);
	else if (b->dtype != a->dtype)
		snprintf(buf, len, "rank %d passed dtype %s, rank 0 %s", r, dtype_name(b->dtype),
			 dtype_name(a->dtype));
	else if (b->op != a->op)
		snprintf(buf, len, "rank %d passed op %s, rank 0 %s", r, op_name(b->op),
			 op_name(a->op));
	else if (b->root != a->root)
		snprintf(buf, len, "rank %d passed root %d, rank 0 root %d", r, (int)b->root,
			 (int)a->root);
	else if (b->mem != a->mem)
		snprintf(buf, len,
			 "rank %d's buffers are %sweft_mem, rank 0's %s (keep a call's buffers in "
			 "weft_mem_alloc memory on every rank or on none)",
			 r, b->mem ? "" : "not ", a->mem ? "are" : "are not");
	else
		return 0;
	return 1;
}

weft_status_t wt_api_check_args(weft_comm_t *comm, const wt_sched_args_t *args)
{
	char diff[WT_API_ERR_LEN / 2];
	wt_api_sig_t mine, *all;
	weft_status_t st;

	if (comm->size == 1)
		return WEFT_OK;
	all = calloc((size_t)comm->size, sizeof(*all));
	if (all == NULL) {
		wt_api_set_error(comm, "WEFT_CHECK: out of memory for %d signatures", comm->size);
		return WEFT_ERR_NO_MEMORY;
	}
	sig_fill(&mine, comm, args);
	st = comm_allgather(comm, "WEFT_CHECK", &mine, all, sizeof(mine));
	for (int r = 1; st == WEFT_OK && r < comm->size; r++) {
		if (!sig_diff(&all[0], &all[r], r, diff, sizeof(diff)))
			continue;
		wt_api_set_error(comm, "%s #%u: %s (WEFT_CHECK)", coll_name(all[0].coll),
				 (unsigned)all[0].seq, diff);
		WT_ERROR("%s", comm->last_error);
		st = WEFT_ERR_MISMATCH;
	}
	free(all);
	return st;
}
