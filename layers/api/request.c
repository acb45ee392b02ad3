/* Requests (layers/api): start a collective as a plan execution, and wait / test with
 * deadlines. Waiters drive progress themselves: spin, then yield, then sleep on the fds. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <time.h>
#include "lib/util/log.h"
#include "lib/util/time.h"
#include "layers/api/api_int.h"

void wt_api_set_error(weft_comm_t *comm, const char *fmt, ...)
{
	va_list ap;

	if (comm == NULL)
		return;
	va_start(ap, fmt);
	vsnprintf(comm->last_error, sizeof(comm->last_error), fmt, ap);
	va_end(ap);
}

/* The channel reports (arg, status, bytes, msg); the executor wants (arg, status, msg)
 * and a handle to cancel by. One small record per network op bridges the two. */
typedef struct wt_api_netop {
	wt_sched_net_done_fn_t cb;
	void *arg;
	wt_chan_op_t *op;
	wt_chan_t *chan;
	wt_api_ctx_t *ctx;
	struct wt_api_netop *next; /* in ctx->netop_free */
} wt_api_netop_t;

/* Records go back to the context's free list (under ctx->lock, as every net op runs):
 * a small collective's steps cost no malloc. */
static void netop_put(wt_api_netop_t *o)
{
	o->next = o->ctx->netop_free;
	o->ctx->netop_free = o;
}

static void netop_done(void *arg, weft_status_t st, size_t bytes, const char *msg)
{
	wt_api_netop_t *o = arg;
	wt_sched_net_done_fn_t cb = o->cb;
	void *cb_arg = o->arg;

	(void)bytes;
	netop_put(o);
	cb(cb_arg, st, msg);
}

/* The tag on the wire. Collectives: comm id (16 bits) | 0 | seq (23 bits) | message index
 * (24 bits), as the executor composes it. Send / recv: comm id (16) | 1 | user tag as an
 * unsigned 32-bit value at bits 8..39 | message index (8 bits; one-step plans use 0).
 * Bit 47 keeps the two spaces apart, so a message never matches across them. */
static weft_status_t wire_tag(const weft_request_t *req, uint64_t tag, uint64_t *out)
{
	uint64_t msg = tag & ((UINT64_C(1) << WT_SCHED_TAG_MSG_BITS) - 1);

	if (!req->p2p) {
		*out = tag;
		return WEFT_OK;
	}
	if (msg > 0xff) {
		WT_ERROR("%s: plan uses message index %llu, beyond the 8 bits p2p tags carry",
			 req->what, (unsigned long long)msg);
		return WEFT_ERR_UNSUPPORTED;
	}
	*out = req->p2p_tag | msg;
	return WEFT_OK;
}

static wt_api_netop_t *netop_new(weft_comm_t *comm, wt_sched_net_done_fn_t cb, void *arg)
{
	wt_api_ctx_t *ctx = comm->ctx;
	wt_api_netop_t *o = ctx->netop_free;

	if (o != NULL)
		ctx->netop_free = o->next;
	else
		o = malloc(sizeof(*o));
	if (o == NULL)
		return NULL;
	o->ctx = ctx;
	o->cb = cb;
	o->arg = arg;
	o->op = NULL;
	o->chan = comm->ctx->chan;
	return o;
}

static weft_status_t net_post_send_copy(void *nctx, int peer, uint64_t tag, const void *buf,
					size_t len, void *copy_to, unsigned flags,
					wt_sched_net_done_fn_t cb, void *arg, void **handle)
{
	weft_request_t *req = nctx;
	weft_comm_t *comm = req->comm;
	wt_api_netop_t *o;
	struct iovec iov = {.iov_base = (void *)buf, .iov_len = len};
	weft_status_t st;

	st = wire_tag(req, tag, &tag);
	if (st != WEFT_OK)
		return st;
	o = netop_new(comm, cb, arg);
	if (o == NULL)
		return WEFT_ERR_NO_MEMORY;
	st = wt_chan_post_send_copy(o->chan, comm->world[peer], tag, &iov, 1, copy_to,
				    flags & WT_SCHED_NET_STREAM ? WT_CHAN_COPY_STREAM : 0,
				    netop_done, o, &o->op);
	if (st != WEFT_OK) {
		netop_put(o);
		return st;
	}
	*handle = o;
	return WEFT_OK;
}

static weft_status_t net_post_send(void *nctx, int peer, uint64_t tag, const void *buf, size_t len,
				   wt_sched_net_done_fn_t cb, void *arg, void **handle)
{
	return net_post_send_copy(nctx, peer, tag, buf, len, NULL, 0, cb, arg, handle);
}

static weft_status_t net_post_recv(void *nctx, int peer, uint64_t tag, void *buf, size_t len,
				   unsigned flags, weft_dtype_t dtype, weft_op_t op,
				   const void *left, wt_sched_net_done_fn_t cb, void *arg,
				   void **handle)
{
	weft_request_t *req = nctx;
	weft_comm_t *comm = req->comm;
	wt_api_netop_t *o;
	wt_chan_reduce_t red = {.enabled = (flags & WT_SCHED_NET_REDUCE) != 0,
				.stream = (flags & WT_SCHED_NET_STREAM) != 0,
				.dtype = dtype,
				.op = op,
				.left = left};
	weft_status_t st;

	st = wire_tag(req, tag, &tag);
	if (st != WEFT_OK)
		return st;
	o = netop_new(comm, cb, arg);
	if (o == NULL)
		return WEFT_ERR_NO_MEMORY;
	st = wt_chan_post_recv(o->chan, comm->world[peer], tag, buf, len, &red, netop_done, o,
			       &o->op);
	if (st != WEFT_OK) {
		netop_put(o);
		return st;
	}
	*handle = o;
	return WEFT_OK;
}

/* Shared slots: the communicator's regions and its next slot call (exec_start runs under
 * ctx->lock, in the order calls start, which every member shares). */
static weft_status_t net_slots(void *nctx, wt_sched_slots_t *out)
{
	weft_request_t *req = nctx;
	weft_comm_t *comm = req->comm;

	if (comm->slot_regions == NULL) {
		WT_ERROR("%s #%u: communicator %u has no shared slots", req->what,
			 (unsigned)req->seq, (unsigned)comm->id);
		return WEFT_ERR_UNSUPPORTED;
	}
	if (out->ring < 0 || out->ring >= WT_SCHED_RINGS) {
		WT_ERROR("%s #%u: no slot ring %d", req->what, (unsigned)req->seq, out->ring);
		return WEFT_ERR_INVALID_ARG;
	}
	out->seq = comm->slot_seq[out->ring] + 1;
	comm->slot_seq[out->ring] += out->nseq > 1 ? out->nseq : 1;
	out->region = comm->slot_regions;
	out->region_bytes = WT_API_SLOT_REGION;
	out->stores = &comm->slot_stores;
	/* The first call that reaches further into the large slots than any before warms the
	 * rest of ours (no call of this communicator has written there, and none runs now: we
	 * hold the lock every slot plan starts and progresses under) and reads the peers'
	 * once, as the creation did for the first 256 KiB. */
	if (out->ring == WT_SCHED_RING_LARGE && out->extent > comm->slot_warm) {
		for (int r = 0; r < comm->size; r++)
			(void)wt_sched_slot_warm(comm->slot_regions[r], WT_API_SLOT_REGION,
						 comm->slot_warm, out->extent, r == comm->rank);
		comm->slot_warm = out->extent;
	}
	return WEFT_OK;
}

/* Peers' buffers, over the channel's slot link (comm ranks to world ranks). */
static void *net_peer_map(void *nctx, int peer, const wt_util_umem_desc_t *desc)
{
	weft_request_t *req = nctx;

	return wt_chan_peer_map(req->comm->ctx->chan, req->comm->world[peer], desc);
}

static weft_status_t net_peer_copy(void *nctx, int peer, void *local,
				   const wt_util_umem_desc_t *desc, size_t off, size_t len,
				   int write)
{
	weft_request_t *req = nctx;

	return wt_chan_peer_copy(req->comm->ctx->chan, req->comm->world[peer], local, desc, off,
				 len, write);
}

static weft_status_t net_post_wait(void *nctx, int peer, const _Atomic uint64_t *word,
				   uint64_t value, wt_sched_net_done_fn_t cb, void *arg,
				   void **handle)
{
	weft_request_t *req = nctx;
	weft_comm_t *comm = req->comm;
	wt_api_netop_t *o = netop_new(comm, cb, arg);
	weft_status_t st;

	if (o == NULL)
		return WEFT_ERR_NO_MEMORY;
	st = wt_chan_post_wait(o->chan, comm->world[peer], word, value, netop_done, o, &o->op);
	if (st != WEFT_OK) {
		netop_put(o);
		return st;
	}
	*handle = o;
	return WEFT_OK;
}

static void net_slot_wake(void *nctx)
{
	weft_request_t *req = nctx;
	weft_comm_t *comm = req->comm;

	wt_chan_slot_wake(comm->ctx->chan, comm->world, comm->size);
}

static void net_cancel(void *nctx, void *handle)
{
	wt_api_netop_t *o = handle;

	(void)nctx;
	wt_chan_cancel(o->chan, o->op);
	netop_put(o);
}

void wt_api_req_ctx_release(wt_api_ctx_t *ctx)
{
	wt_api_netop_t *o = ctx->netop_free;

	while (o != NULL) {
		wt_api_netop_t *next = o->next;
		free(o);
		o = next;
	}
	ctx->netop_free = NULL;
	free(atomic_exchange(&ctx->spare_req, NULL));
}

void wt_api_comm_memo_drop(weft_comm_t *comm)
{
	for (unsigned i = 0; i < WT_API_MEMO; i++) {
		if (comm->memo_plan[i] != NULL)
			wt_sched_plan_unref(comm->memo_plan[i]);
		comm->memo_plan[i] = NULL;
	}
	comm->replay.plan = NULL;
	wt_sched_exec_keep_free(&comm->exec_keep);
}

const wt_sched_net_t wt_api_net_template = {
    .ctx = NULL,
    .post_send = net_post_send,
    .post_recv = net_post_recv,
    .cancel = net_cancel,
    .slots = net_slots,
    .post_wait = net_post_wait,
    .slot_wake = net_slot_wake,
    .peer_map = net_peer_map,
    .peer_copy = net_peer_copy,
    .post_send_copy = net_post_send_copy,
};

static void unlink_locked(weft_request_t *req)
{
	weft_comm_t *comm = req->comm;

	if (!req->linked)
		return;
	if (req->lprev != NULL)
		req->lprev->lnext = req->lnext;
	else
		comm->reqs = req->lnext;
	if (req->lnext != NULL)
		req->lnext->lprev = req->lprev;
	req->linked = 0;
}

/* Runs under ctx->lock (inside progress, or inside exec_start). A finished request leaves
 * its communicator's list at once (abort and peer failures only look for unfinished ones),
 * so freeing it later needs no lock. */
/* Requests in flight: changed only under ctx->lock, read as a hint without it (so no
 * locked read-modify-write on every call). */
static void active_add(wt_api_ctx_t *ctx, int d)
{
	atomic_store_explicit(&ctx->active,
			      atomic_load_explicit(&ctx->active, memory_order_relaxed) + d,
			      memory_order_relaxed);
}

static void req_done(void *arg, weft_status_t st, const char *msg)
{
	weft_request_t *req = arg;
	wt_api_ctx_t *ctx = req->comm->ctx;

	unlink_locked(req);
	req->status = st;
	if (st != WEFT_OK)
		snprintf(req->msg, sizeof(req->msg), "%s #%u on rank %d: %s", req->what,
			 (unsigned)req->seq, req->comm->rank,
			 msg != NULL && msg[0] != '\0' ? msg : weft_strerror(st));
	atomic_store_explicit(&req->done, 1, memory_order_release);
	active_add(ctx, -1);
	pthread_cond_broadcast(&ctx->done_cv);
}

static uint64_t make_tag(const weft_comm_t *comm, uint32_t seq)
{
	/* comm id (16 bits) | 0 | collective sequence (23 bits) | per-peer message index. */
	return ((uint64_t)comm->id << 48) | ((uint64_t)(seq & 0x7fffffu) << WT_SCHED_TAG_MSG_BITS);
}

static uint64_t make_p2p_tag(const weft_comm_t *comm, int tag)
{
	return ((uint64_t)comm->id << 48) | (UINT64_C(1) << 47) | ((uint64_t)(uint32_t)tag << 8);
}

static int is_p2p(wt_sched_coll_t coll)
{
	return coll == WT_COLL_SEND || coll == WT_COLL_RECV;
}

static int same_args(const wt_sched_args_t *a, const wt_sched_args_t *b)
{
	return a->coll == b->coll && a->count == b->count && a->dtype == b->dtype &&
	       a->op == b->op && a->root == b->root && a->rank == b->rank && a->size == b->size &&
	       a->in_place == b->in_place && a->seg_bytes == b->seg_bytes && a->peer == b->peer &&
	       a->compress == b->compress && a->slot_bytes == b->slot_bytes && a->mem == b->mem;
}

/* The plan of a recent call of the same shape on the same communicator, else NULL.
 * Borrowed: the memo keeps it alive until the communicator replaces the entry, which only
 * this thread does (the execution takes its own reference, unless it is a blocking call's,
 * which ends first). */
static wt_sched_plan_t *memo_get(weft_comm_t *comm, const wt_sched_args_t *args)
{
	unsigned i = comm->memo_last;

	if (comm->memo_plan[i] != NULL && same_args(&comm->memo_args[i], args))
		return comm->memo_plan[i];
	for (i = 0; i < WT_API_MEMO; i++) {
		if (comm->memo_plan[i] != NULL && same_args(&comm->memo_args[i], args)) {
			comm->memo_last = i;
			return comm->memo_plan[i];
		}
	}
	return NULL;
}

/* The memo takes over the caller's reference to p, in place of its oldest entry. */
static void memo_put(weft_comm_t *comm, const wt_sched_args_t *args, wt_sched_plan_t *p)
{
	unsigned i = comm->memo_next;

	if (comm->memo_plan[i] != NULL) {
		if (comm->replay.plan == comm->memo_plan[i])
			comm->replay.plan = NULL;
		wt_sched_plan_unref(comm->memo_plan[i]);
	}
	comm->memo_plan[i] = p;
	comm->memo_args[i] = *args;
	comm->memo_last = i;
	comm->memo_next = (i + 1) % WT_API_MEMO;
}

static weft_status_t pick_plan_slow(weft_comm_t *comm, weft_request_t *req,
				    const wt_sched_args_t *args, wt_sched_plan_t **plan);

/* WEFT_ALGO or the cost model, memoised for a run of same-shaped calls. *owned: the caller
 * holds a reference to *plan (calls that are not memoised), else it is borrowed. */
static weft_status_t pick_plan(weft_comm_t *comm, weft_request_t *req, const wt_sched_args_t *args,
			       wt_sched_plan_t **plan, int *owned)
{
	weft_status_t st;

	*owned = 0;
	*plan = memo_get(comm, args);
	if (*plan != NULL)
		return WEFT_OK;
	st = pick_plan_slow(comm, req, args, plan);
	if (st != WEFT_OK)
		return st;
	if (args->coll == WT_COLL_ALLTOALLV)
		*owned = 1; /* its counts are not in the args: never memoised */
	else
		memo_put(comm, args, *plan);
	return WEFT_OK;
}

/* A forced algorithm never changes silently; an automatic pick that refuses the args
 * (UNSUPPORTED) yields to the size-range default. */
static weft_status_t pick_plan_slow(weft_comm_t *comm, weft_request_t *req,
				    const wt_sched_args_t *args, wt_sched_plan_t **plan)
{
	wt_api_ctx_t *ctx = comm->ctx;
	const char *spec = ctx->cfg.algo;
	const wt_sched_algo_t *algo = NULL, *fallback = NULL;
	char err[256] = "", why[256] = "";
	weft_status_t st;

	st = wt_sched_algo_choose(args, spec, &comm->cost, &algo, err, sizeof(err));
	if (st != WEFT_OK) {
		wt_api_set_error(comm, "%s #%u: %s", req->what, (unsigned)req->seq, err);
		return st;
	}
	/* The cache locks itself: building a plan must not stall the progress thread. */
	st = wt_sched_cache_get(ctx->cache, args, algo, plan, err, sizeof(err));
	/* Without a forced choice, choose without costs gives the size-range default. */
	if (st == WEFT_ERR_UNSUPPORTED &&
	    wt_sched_algo_choose(args, spec, NULL, &fallback, why, sizeof(why)) == WEFT_OK &&
	    fallback != algo) {
		WT_DEBUG("%s: %s refused the args (%s), using %s", req->what, algo->name, err,
			 fallback->name);
		algo = fallback;
		st = wt_sched_cache_get(ctx->cache, args, algo, plan, err, sizeof(err));
	}
	if (st != WEFT_OK)
		wt_api_set_error(comm, "%s #%u: building the %s plan failed: %s", req->what,
				 (unsigned)req->seq, algo->name, err);
	return st;
}

static void req_init(weft_request_t *req, weft_comm_t *comm, wt_sched_coll_t coll, int on_stack)
{
	req->exec = NULL;
	req->p2p_tag = 0;
	atomic_init(&req->done, 0);
	req->on_stack = on_stack;
	req->status = WEFT_INPROGRESS;
	req->msg[0] = '\0';
	req->lnext = req->lprev = NULL;
	req->linked = 0;
	req->comm = comm;
	req->what = wt_sched_coll_name(coll);
	req->p2p = is_p2p(coll);
	/* Sends and receives are not collective: only collectives advance the sequence that
	 * every rank must agree on. */
	req->seq = req->p2p ? comm->p2p_seq++ : comm->seq++;
	req->deadline = 0;
}

static weft_request_t *req_new(weft_comm_t *comm, wt_sched_coll_t coll)
{
	wt_api_ctx_t *ctx = comm->ctx;
	/* Not calloc: the message buffer alone is half a kilobyte nobody reads on success. */
	weft_request_t *req = atomic_load_explicit(&ctx->spare_req, memory_order_relaxed)
				  ? atomic_exchange(&ctx->spare_req, NULL)
				  : NULL;

	if (req == NULL)
		req = malloc(sizeof(*req));

	if (req == NULL) {
		wt_api_set_error(comm, "%s: out of memory for a request", wt_sched_coll_name(coll));
		return NULL;
	}
	req_init(req, comm, coll, 0);
	return req;
}

/* A request from the heap that the context did not keep. Not inlined: GCC's -O3 would see a
 * blocking caller's request (on its stack, which req_release never frees) reach free() and
 * refuse a release build (-Werror=free-nonheap-object). */
__attribute__((noinline)) static void req_free_heap(weft_request_t *req)
{
	free(req);
}

/* The request's memory goes back to the context for the next call, or is freed (a blocking
 * call's lives on its caller's stack). */
static void req_release(weft_request_t *req)
{
	weft_request_t *none = NULL;
	wt_api_ctx_t *ctx = req->comm->ctx;

	if (req->on_stack)
		return;
	if (!atomic_compare_exchange_strong(&ctx->spare_req, &none, req))
		req_free_heap(req);
}

/* The deadline runs from the start of an async call, and from the first wait of a
 * blocking one (which starts and waits at once): no clock read when it never waits. */
static uint64_t req_deadline(weft_request_t *req)
{
	if (req->deadline == 0)
		req->deadline = wt_util_deadline_in(req->comm->ctx->cfg.timeout);
	return req->deadline;
}

weft_status_t wt_api_req_done_now(weft_comm_t *comm, wt_sched_coll_t coll, weft_request_t **out)
{
	weft_request_t *req;
	weft_status_t st;

	pthread_mutex_lock(&comm->ctx->lock);
	st = wt_api_comm_usable_locked(comm);
	pthread_mutex_unlock(&comm->ctx->lock);
	if (st != WEFT_OK)
		return st;
	req = req_new(comm, coll);
	if (req == NULL)
		return WEFT_ERR_NO_MEMORY;
	req->status = WEFT_OK;
	atomic_store_explicit(&req->done, 1, memory_order_release);
	*out = req;
	return WEFT_OK;
}

/* How long a caller about to block, with a core of its own, watches the peers' slot flags
 * itself before it waits the usual way (capped: coll_launch holds the lock meanwhile); 0
 * where ranks share cores. */
static uint32_t inline_spin_ns(const wt_api_ctx_t *ctx)
{
	if (ctx->oversubscribed)
		return 0;
	return (uint32_t)(ctx->cfg.spin_us < WT_API_INLINE_SPIN_US ? ctx->cfg.spin_us
								   : WT_API_INLINE_SPIN_US) *
	       1000u;
}

/* Start req (initialised; on its caller's stack if the caller blocks on it) on plan
 * (owned: the caller's reference, dropped here), waking the progress thread for it if
 * wake. On failure req is released. */
static weft_status_t coll_launch(weft_comm_t *comm, wt_sched_plan_t *plan, int owned,
				 const void *sendbuf, void *recvbuf, weft_request_t *req, int wake)
{
	wt_api_ctx_t *ctx = comm->ctx;
	int will_wait = req->on_stack;
	wt_sched_net_t net = wt_api_net_template;
	weft_status_t st;

	net.ctx = req;
	if (will_wait)
		net.spin_ns = inline_spin_ns(ctx);
	pthread_mutex_lock(&ctx->lock);
	/* Under the lock, so that an abort or a failed peer either sees this request or
	 * stops it here. */
	st = wt_api_comm_usable_locked(comm);
	if (st == WEFT_OK) {
		active_add(ctx, 1);
		uint64_t tag_base = req->p2p ? 0 : make_tag(comm, req->seq);

		/* A blocking call's memoised plan outlives its execution (only this thread
		 * replaces the memo, after we return): no reference, and the communicator's
		 * kept memory. Other executions take their own reference. */
		if (will_wait && !owned) {
			st = wt_sched_exec_run_kept(&comm->exec_keep, plan, &net, tag_base, sendbuf,
						    recvbuf, req_done, req, &req->exec);
			/* Ended well inside the start, without its done (the usual tiny call
			 * whose peers were there): what req_done would have settled. */
			if (st == WEFT_OK && req->exec == NULL) {
				active_add(ctx, -1);
				req->status = WEFT_OK;
				atomic_store_explicit(&req->done, 1, memory_order_relaxed);
			}
		} else
			st = wt_sched_exec_start(plan, &net, tag_base, sendbuf, recvbuf, req_done,
						 req, &req->exec);
		if (st != WEFT_OK) {
			if (!atomic_load(&req->done))
				active_add(ctx, -1);
			if (req->exec != NULL)
				wt_sched_exec_free(req->exec);
			req->exec = NULL;
			wt_api_set_error(comm, "%s #%u: starting the plan failed: %s", req->what,
					 (unsigned)req->seq, weft_strerror(st));
		}
	}
	if (owned)
		wt_sched_plan_unref(plan);
	if (st != WEFT_OK) {
		pthread_mutex_unlock(&ctx->lock);
		req_release(req);
		return st;
	}
	/* Finished inside the start already (its peers had published): nothing to link. */
	if (!atomic_load(&req->done))
		wt_api_comm_link_req_locked(comm, req);
	pthread_mutex_unlock(&ctx->lock);
	if (wake && !will_wait && !atomic_load(&req->done))
		wt_api_async_started(ctx);
	return WEFT_OK;
}

/* req: the blocking caller's request on its stack, or NULL for a new one. */
static weft_status_t coll_start(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
				void *recvbuf, int tag, weft_request_t *req, int wake,
				weft_request_t **out)
{
	int will_wait = req != NULL;
	wt_sched_plan_t *plan;
	int owned;
	weft_status_t st;

	if (req != NULL)
		req_init(req, comm, args->coll, 1);
	else
		req = req_new(comm, args->coll);
	if (req == NULL)
		return WEFT_ERR_NO_MEMORY;
	if (req->p2p)
		req->p2p_tag = make_p2p_tag(comm, tag);
	if (!will_wait)
		req_deadline(req);
	st = pick_plan(comm, req, args, &plan, &owned);
	if (st != WEFT_OK) {
		req_release(req);
		return st;
	}
	st = coll_launch(comm, plan, owned, sendbuf, recvbuf, req, wake);
	if (st != WEFT_OK)
		return st;
	/* A blocking collective from the memo: the next call of its shape may replay it. */
	if (will_wait && !owned && !req->p2p && !comm->ctx->cfg.check)
		comm->replay = (wt_api_replay_t){.plan = plan,
						 .quick = wt_sched_exec_quick_plan(plan),
						 .count = args->count,
						 .coll = args->coll,
						 .dtype = args->dtype,
						 .op = args->op,
						 .root = args->root,
						 .in_place = args->in_place,
						 .mem = args->mem};
	*out = req;
	return WEFT_OK;
}

weft_status_t wt_api_coll_start(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
				void *recvbuf, int tag, int wake, weft_request_t **out)
{
	return coll_start(comm, args, sendbuf, recvbuf, tag, NULL, wake, out);
}

/* The end of a blocking call whose start succeeded. */
static weft_status_t coll_finish(weft_request_t *req)
{
	/* Ended inside the start: nothing to wait for or to free. */
	if (req->exec == NULL && atomic_load_explicit(&req->done, memory_order_relaxed) &&
	    req->status == WEFT_OK)
		return WEFT_OK;
	return wt_api_wait_own(&req);
}

weft_status_t wt_api_coll_run(weft_comm_t *comm, const wt_sched_args_t *args, const void *sendbuf,
			      void *recvbuf, int tag)
{
	weft_request_t own, *req;
	weft_status_t st = coll_start(comm, args, sendbuf, recvbuf, tag, &own, 0, &req);

	return st != WEFT_OK ? st : coll_finish(req);
}

/* wt_sched_exec_quick's wake-up: the members that sleep on our flags. */
static void quick_wake(void *arg)
{
	weft_comm_t *comm = arg;

	wt_chan_slot_wake(comm->ctx->chan, comm->world, comm->size);
}

/* A replayed call of a plan that wt_sched_exec_quick runs (one tiny slot call whose waits
 * come first: a tiny broadcast), straight from the kept block: no request, no execution to
 * arm, no completion, and no lock. What it touches is the communicator's thread's alone
 * (the kept block, the slot sequences, the replay), or read only (the members' regions,
 * mapped for the links' life; the channel's slot link to wake sleepers): the progress
 * thread never starts a call. A lock (or any locked instruction) here would wait for the
 * slot's cache line to come back from the reader polling it, 100-200 ns a call on this VM
 * (2 ranks, 16 B broadcast, alternating: 0.07-0.10 us a call without, 0.18-0.37 with).
 * 1 if it ran; 0 leaves the call to coll_launch (a wait unmet for the inline spin, another
 * plan kept, a broken communicator, which coll_launch reports). */
static int replay_quick(weft_comm_t *comm, const void *sendbuf, void *recvbuf)
{
	/* Written under the lock by weft_comm_abort (any thread) and the progress thread: a
	 * stale answer runs one more call, as if it had started just before. */
	if (__atomic_load_n(&comm->aborted, __ATOMIC_RELAXED) ||
	    __atomic_load_n(&comm->async_err, __ATOMIC_RELAXED) != WEFT_OK || !comm->registered)
		return 0;
	if (!wt_sched_exec_quick(&comm->exec_keep, comm->replay.plan, comm->slot_seq, sendbuf,
				 recvbuf, inline_spin_ns(comm->ctx), quick_wake, comm))
		return 0;
	/* as req_init: every rank numbers the call, whichever way it ran */
	comm->seq++;
	return 1;
}

weft_status_t wt_api_replay(weft_comm_t *comm, const void *sendbuf, void *recvbuf)
{
	weft_request_t own;
	weft_status_t st;

	if (comm->replay.quick && replay_quick(comm, sendbuf, recvbuf))
		return WEFT_OK;

	req_init(&own, comm, comm->replay.coll, 1);
	st = coll_launch(comm, comm->replay.plan, 0, sendbuf, recvbuf, &own, 0);
	return st != WEFT_OK ? st : coll_finish(&own);
}

/* recycle: the communicator (and so its context) is known to be alive, so the memory may
 * go back to the context; a request the user frees may outlive both. */
static void req_free_ex(weft_request_t *req, int recycle)
{
	if (req->linked)
		wt_api_comm_unlink_req(req);
	if (req->exec != NULL)
		wt_sched_exec_free(req->exec);
	if (recycle || req->on_stack)
		req_release(req);
	else
		free(req);
}

static void req_free(weft_request_t *req)
{
	req_free_ex(req, 0);
}

void wt_api_req_abandon(weft_request_t *req)
{
	wt_api_ctx_t *ctx = req->comm->ctx;

	pthread_mutex_lock(&ctx->lock);
	if (!atomic_load(&req->done) && req->exec != NULL)
		wt_sched_exec_cancel(req->exec, WEFT_ERR_ABORTED, "communicator destroyed");
	pthread_mutex_unlock(&ctx->lock);
	req_free(req);
}

/* Give up on a request past its deadline: name what is owed, cancel what is posted. */
static void req_timeout_locked(weft_request_t *req)
{
	weft_comm_t *comm = req->comm;
	int peers[16];
	size_t n = wt_sched_exec_owing(req->exec, peers, 16);
	char who[160] = "";
	size_t used = 0;
	char msg[WT_API_ERR_LEN];

	for (size_t i = 0; i < n && used < sizeof(who) - 12; i++)
		used += (size_t)snprintf(who + used, sizeof(who) - used, "%s%d", i ? ", " : "",
					 peers[i]);
	snprintf(msg, sizeof(msg),
		 "timed out after %.3g s (WEFT_TIMEOUT); ranks still owing data: %s",
		 comm->ctx->cfg.timeout, n > 0 ? who : "none (local steps pending)");
	wt_sched_exec_cancel(req->exec, WEFT_ERR_TIMEOUT, msg);
}

static weft_status_t req_finish(weft_request_t **reqp, int recycle)
{
	weft_request_t *req = *reqp;
	weft_status_t st = req->status;

	if (st != WEFT_OK) {
		snprintf(req->comm->last_error, sizeof(req->comm->last_error), "%s", req->msg);
		WT_DEBUG("%s", req->msg);
	}
	req_free_ex(req, recycle);
	*reqp = NULL;
	return st;
}

/* Under lock, req not done: may a rank that owes req data share our CPU? Then yielding
 * lets it run; else (each runs on another CPU) it answers as soon as it gets there.
 * Unknown counts as yes: nothing owed (a send waiting on its reader), many owing, another
 * host. */
static int owed_by_our_cpu(weft_request_t *req)
{
	weft_comm_t *comm = req->comm;
	int peers[16];
	size_t n = wt_sched_exec_owing(req->exec, peers, 16);

	if (n == 0 || n == 16) /* nothing owed, or more than we looked at */
		return 1;
	for (size_t i = 0; i < n; i++) {
		if (peers[i] < 0 || peers[i] >= comm->size)
			return 1;
		peers[i] = comm->world[peers[i]];
	}
	return wt_chan_cpu_shared(comm->ctx->chan, peers, (int)n);
}

/* One attempt to make progress from the calling thread. Returns 1 if a yield would help
 * (see owed_by_our_cpu; asked only if ask), 0 if not. */
static int caller_progress(wt_api_ctx_t *ctx, weft_request_t *req, int ask)
{
	int yield = 1;

	if (pthread_mutex_trylock(&ctx->lock) != 0)
		return 1;
	if (!atomic_load(&req->done)) {
		wt_api_progress_locked(ctx);
		if (ask && !atomic_load(&req->done))
			yield = owed_by_our_cpu(req);
	}
	pthread_mutex_unlock(&ctx->lock);
	return yield;
}

/* Poll for budget_us, between polls either spinning or giving the core away: with more
 * ranks than cores the partner we wait for may be the one that needs our core, and a
 * yield lets it answer without either of us paying a sleep and a wake-up. But when every
 * rank that owes us runs on another CPU, a yield only hands the core to a neighbour that
 * may be waiting as we are, at a context switch each way (5-6 us on a VM): we spin up to
 * WEFT_XCORE_SPIN_US first. */
static void wait_poll(weft_request_t *req, int budget_us, int yield)
{
	wt_api_ctx_t *ctx = req->comm->ctx;
	uint64_t xspin = yield ? (uint64_t)ctx->cfg.xcore_spin_us * 1000 : 0;
	uint64_t until, spin_from = 0;

	if (budget_us <= 0 || atomic_load(&req->done))
		return;
	until = wt_util_time_ns();
	if (req->deadline == 0) {
		double ns = ctx->cfg.timeout * 1e9;

		/* as wt_util_deadline_in, from the clock read we have */
		req->deadline =
		    ns >= (double)(UINT64_MAX - until - 1) ? UINT64_MAX : until + (uint64_t)ns;
	}
	until += (uint64_t)budget_us * 1000;
	for (;;) {
		int help = caller_progress(ctx, req, xspin != 0);
		uint64_t now = wt_util_time_ns();

		if (atomic_load(&req->done) || now >= until)
			return;
		if (!yield)
			continue;
		if (!help) {
			if (spin_from == 0)
				spin_from = now;
			if (now - spin_from < xspin) {
				wt_util_cpu_relax();
				continue;
			}
		}
		spin_from = 0;
		sched_yield();
	}
}

static void done_cv_wait(wt_api_ctx_t *ctx, uint64_t step_ns)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(step_ns / 1000000000ull);
	ts.tv_nsec += (long)(step_ns % 1000000000ull);
	if (ts.tv_nsec >= 1000000000L) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000L;
	}
	pthread_cond_timedwait(&ctx->done_cv, &ctx->lock, &ts);
}

/* Sleep until the request is done. One waiter at a time drives the channel and sleeps on
 * the links' fds itself; the others sleep on done_cv, which every completion broadcasts,
 * and one of them takes over when the driver leaves. Every sleep is bounded, so the
 * deadline is checked even if no one signals. */
static void wait_slow(weft_request_t *req)
{
	wt_api_ctx_t *ctx = req->comm->ctx;
	int drove = 0;

	pthread_mutex_lock(&ctx->lock);
	while (!atomic_load(&req->done)) {
		uint64_t now = wt_util_time_ns();
		uint64_t step = req_deadline(req) > now ? req->deadline - now : 0;

		if (step == 0) {
			req_timeout_locked(req);
			continue;
		}
		if (step > 100000000ull)
			step = 100000000ull;
		if (ctx->driver) {
			done_cv_wait(ctx, step);
			continue;
		}
		ctx->driver = 1;
		drove = 1;
		if (wt_api_progress_locked(ctx) == 0 && !atomic_load(&req->done))
			wt_api_sleep_fds_locked(ctx, (int)((step + 999999) / 1000000));
		ctx->driver = 0;
	}
	/* Hand the channel to another waiter, if there is one. */
	if (drove && atomic_load(&ctx->waiters) > 1)
		pthread_cond_broadcast(&ctx->done_cv);
	pthread_mutex_unlock(&ctx->lock);
}

static weft_status_t wait_one(weft_request_t **reqp, int recycle)
{
	weft_request_t *req = *reqp;
	wt_api_ctx_t *ctx = req->comm->ctx;

	if (!atomic_load(&req->done)) {
		wt_api_waiter_enter(ctx);
		if (!ctx->oversubscribed)
			wait_poll(req, ctx->cfg.spin_us, 0);
		wait_poll(req, ctx->cfg.yield_us, 1);
		if (!atomic_load(&req->done))
			wait_slow(req);
		wt_api_waiter_exit(ctx);
	}
	return req_finish(reqp, recycle);
}

weft_status_t wt_api_wait_one(weft_request_t **reqp)
{
	return wait_one(reqp, 0);
}

weft_status_t wt_api_wait_own(weft_request_t **reqp)
{
	return wait_one(reqp, 1);
}

weft_status_t wt_api_test_one(weft_request_t **reqp, int *done)
{
	weft_request_t *req = *reqp;
	wt_api_ctx_t *ctx = req->comm->ctx;

	if (!atomic_load(&req->done)) {
		pthread_mutex_lock(&ctx->lock);
		if (!atomic_load(&req->done))
			wt_api_progress_locked(ctx);
		if (!atomic_load(&req->done) && wt_util_time_ns() >= req_deadline(req))
			req_timeout_locked(req);
		pthread_mutex_unlock(&ctx->lock);
	}
	if (!atomic_load(&req->done)) {
		*done = 0;
		return WEFT_INPROGRESS;
	}
	*done = 1;
	return req_finish(reqp, 0);
}
